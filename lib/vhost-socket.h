/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix stream sockets for vhost-user: listening with stale-socket
 * replacement, accepting and connecting, all non-blocking and
 * close-on-exec.
 *
 * Thread-safety: the functions keep no state; they may run on any thread.
 */

#ifndef OVS_VHOST_VHOST_SOCKET_H
#define OVS_VHOST_VHOST_SOCKET_H 1

#include <stdbool.h>
#include <sys/types.h>

int vhost_socket_listen(const char *path, int *fdp, ino_t *inodep);
int vhost_socket_accept(int listen_fd, int *fdp);
int vhost_socket_connect(const char *path, int *fdp);
void vhost_socket_unlink(const char *path, ino_t inode);
bool vhost_socket_peer_gone(int fd);

#endif /* vhost-socket.h */
