/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix sockets for vhost-user: see vhost-socket.h.
 */

#include <config.h>
#include "vhost-socket.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "util.h"
#include "vhost-log.h"

static int
vhost_socket_make_addr__(const char *path, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof *sun);
    sun->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sun->sun_path) {
        return ENAMETOOLONG;
    }
    strcpy(sun->sun_path, path);
    return 0;
}

static int
vhost_socket_new__(int *fdp)
{
    *fdp = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    return *fdp < 0 ? errno : 0;
}

/* Returns true if something listens at 'sun'.  Never blocks: a listener
 * whose backlog is full (EAGAIN) is live too. */
static bool
vhost_socket_is_live__(const struct sockaddr_un *sun)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    bool live = fd >= 0
                && (!connect(fd, (const struct sockaddr *) sun, sizeof *sun)
                    || errno == EAGAIN);

    close_fd_quietly(fd);
    return live;
}

/* Creates a listening socket at 'path' and stores it in '*fdp' and the
 * socket file's inode in '*inodep'.  A socket file left at 'path' by a
 * process that is gone is replaced; a live listener is not (EADDRINUSE),
 * nor is anything that is not a socket (EEXIST).
 *
 * Returns 0 or a positive errno value. */
int
vhost_socket_listen(const char *path, int *fdp, ino_t *inodep)
{
    struct sockaddr_un sun;
    struct stat st;
    int error = vhost_socket_make_addr__(path, &sun);

    *fdp = -1;
    if (error) {
        return error;
    }
    if (!lstat(path, &st)) {
        if (!S_ISSOCK(st.st_mode)) {
            VLOG_ERR("%s: exists and is not a socket; not replacing it", path);
            return EEXIST;
        }
        if (vhost_socket_is_live__(&sun)) {
            VLOG_ERR("%s: another process is listening on this socket", path);
            return EADDRINUSE;
        }
        VLOG_INFO("%s: replacing stale socket file", path);
        if (unlink(path) && errno != ENOENT) {
            return errno;
        }
    }

    int fd;
    error = vhost_socket_new__(&fd);
    if (error) {
        return error;
    }
    if (bind(fd, (struct sockaddr *) &sun, sizeof sun)
        || listen(fd, 16)
        || stat(path, &st)) {
        error = errno;
        close(fd);
        return error;
    }
    *fdp = fd;
    *inodep = st.st_ino;
    return 0;
}

/* Accepts a connection on 'listen_fd' into '*fdp'.  Returns 0, EAGAIN if
 * none is pending, or another positive errno value. */
int
vhost_socket_accept(int listen_fd, int *fdp)
{
    *fdp = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    return *fdp < 0 ? (errno == EWOULDBLOCK ? EAGAIN : errno) : 0;
}

/* Connects to the listener at 'path' and stores the socket in '*fdp'.
 * Returns 0 or a positive errno value (ENOENT or ECONNREFUSED while the
 * frontend is not there; EAGAIN if its backlog is full). */
int
vhost_socket_connect(const char *path, int *fdp)
{
    struct sockaddr_un sun;
    int error = vhost_socket_make_addr__(path, &sun);
    int fd;

    *fdp = -1;
    if (error || (error = vhost_socket_new__(&fd))) {
        return error;
    }
    /* A non-blocking connect() on a Unix socket completes at once or fails
     * at once: there is no EINPROGRESS to wait for. */
    if (connect(fd, (struct sockaddr *) &sun, sizeof sun)) {
        error = errno;
        close(fd);
        return error;
    }
    *fdp = fd;
    return 0;
}

/* Removes the socket file at 'path' if it is still the one with 'inode'
 * (another process may have replaced it since). */
void
vhost_socket_unlink(const char *path, ino_t inode)
{
    struct stat st;

    if (!lstat(path, &st) && S_ISSOCK(st.st_mode) && st.st_ino == inode) {
        unlink(path);
    }
}

/* Returns true if the peer of connected socket 'fd' has closed or shut
 * down its end, even if it left unread input behind; does not wait. */
bool
vhost_socket_peer_gone(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };

    return poll(&pfd, 1, 0) > 0
           && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}
