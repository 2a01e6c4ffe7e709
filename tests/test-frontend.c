/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tfe: a test model of a vhost-user frontend.  See test-frontend.h.
 *
 * This file holds the frontend itself: the struct tfe and the fds it
 * keeps, the connection (either side), socket I/O and the message layer,
 * a typed helper for every request, and QEMU-like bring-up of vrings and
 * devices.  Guest memory is in test-frontend-mem.c; the guest driver of
 * the virtqueues, split and packed, in test-frontend-vq.c.
 *
 * The socket code here is deliberately independent of the engine's
 * lib/vhost-user-msg.c (only the wire structs are shared), so a bug in the
 * engine's reader or writer cannot hide itself by being on both ends.
 */

#include <config.h>
#include "test-frontend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The most fds tfe_sock_send() attaches to one message. */
#define TFE_SEND_MAX_FDS 64

/* The most fds recv_full() accepts with one read (extras are closed by the
 * kernel, which is fine: replies carry none). */
#define TFE_RECV_MAX_FDS 16

static void
close_if_open(int *fdp)
{
    if (*fdp >= 0) {
        close(*fdp);
        *fdp = -1;
    }
}

static int
new_eventfd(void)
{
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

    return fd >= 0 ? fd : -errno;
}

/* Frontend. */

struct tfe *
tfe_create(struct tfe_mem *mem)
{
    struct tfe *fe = calloc(1, sizeof *fe);

    if (!fe) {
        abort();
    }
    fe->sock = -1;
    fe->listen_fd = -1;
    fe->timeout_ms = TFE_TIMEOUT_MS;
    fe->mem = mem;
    for (size_t i = 0; i < TFE_MAX_QUEUES; i++) {
        struct tfe_vring *vr = &fe->vrings[i];
        vr->kick_fd = vr->call_fd = vr->err_fd = -1;
    }
    fe->log_fd = -1;
    fe->log_call_fd = -1;
    fe->backend_req_fd = -1;
    fe->reply_fd = -1;
    return fe;
}

void
tfe_destroy(struct tfe *fe)
{
    if (!fe) {
        return;
    }
    tfe_disconnect(fe);
    tfe_stop_listening(fe);
    for (size_t i = 0; i < TFE_MAX_QUEUES; i++) {
        struct tfe_vring *vr = &fe->vrings[i];
        close_if_open(&vr->kick_fd);
        close_if_open(&vr->call_fd);
        close_if_open(&vr->err_fd);
    }
    close_if_open(&fe->log_fd);
    close_if_open(&fe->log_call_fd);
    close_if_open(&fe->backend_req_fd);
    tfe_mem_destroy(fe->mem);
    free(fe);
}

/* Returns the number of fds 'fe' holds (so a test can tell the engine's
 * fds from the frontend's in /proc/self/fd). */
int
tfe_count_fds(const struct tfe *fe)
{
    int n = 0;

    if (!fe) {
        return 0;
    }
    n += (fe->sock >= 0) + (fe->listen_fd >= 0) + (fe->log_fd >= 0)
         + (fe->log_call_fd >= 0) + (fe->backend_req_fd >= 0);
    for (size_t i = 0; i < TFE_MAX_QUEUES; i++) {
        const struct tfe_vring *vr = &fe->vrings[i];
        n += (vr->kick_fd >= 0) + (vr->call_fd >= 0) + (vr->err_fd >= 0);
    }
    return n + (fe->mem ? (int) fe->mem->n_regions : 0);
}

/* Returns the number of TFE_MEM_NAME mappings 'fe' holds itself: one per
 * region of its guest memory. */
int
tfe_count_maps(const struct tfe *fe)
{
    return fe && fe->mem ? (int) fe->mem->n_regions : 0;
}

static int
make_sockaddr(const char *path, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof *sun);
    sun->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sun->sun_path) {
        return -ENAMETOOLONG;
    }
    strcpy(sun->sun_path, path);
    return 0;
}

static int
set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return -errno;
    }
    return 0;
}

/* Connects to the engine listening at 'path' (a server-mode port), once.
 * Returns 0 or a negative errno value. */
int
tfe_connect(struct tfe *fe, const char *path)
{
    struct sockaddr_un sun;
    int error, fd;

    tfe_disconnect(fe);
    error = make_sockaddr(path, &sun);
    if (error) {
        return error;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    if (connect(fd, (struct sockaddr *) &sun, sizeof sun) < 0) {
        error = -errno;
        close(fd);
        return error;
    }
    error = set_nonblocking(fd);
    if (error) {
        close(fd);
        return error;
    }
    fe->sock = fd;
    return 0;
}

/* As tfe_connect(), retrying for up to 'timeout_ms' while nothing listens
 * at 'path'. */
int
tfe_connect_retry(struct tfe *fe, const char *path, int timeout_ms)
{
    int waited = 0;

    for (;;) {
        int error = tfe_connect(fe, path);
        if ((error != -ENOENT && error != -ECONNREFUSED)
            || waited >= timeout_ms) {
            return error;
        }
        usleep(5000);
        waited += 5;
    }
}

/* Listens at 'path' (replacing any file there), for an engine in client
 * mode.  Returns 0 or a negative errno value. */
int
tfe_listen(struct tfe *fe, const char *path)
{
    struct sockaddr_un sun;
    int error, fd;

    tfe_stop_listening(fe);
    error = make_sockaddr(path, &sun);
    if (error) {
        return error;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -errno;
    }
    unlink(path);
    if (bind(fd, (struct sockaddr *) &sun, sizeof sun) < 0
        || listen(fd, 8) < 0) {
        error = -errno;
        close(fd);
        return error;
    }
    fe->listen_fd = fd;
    fe->listen_path = strdup(path);
    return 0;
}

/* Waits up to 'timeout_ms' for the engine to connect to our tfe_listen()
 * socket, and accepts it.  Returns 0 or a negative errno value. */
int
tfe_accept(struct tfe *fe, int timeout_ms)
{
    struct pollfd pfd = { .fd = fe->listen_fd, .events = POLLIN };
    int n, fd;

    if (fe->listen_fd < 0) {
        return -EINVAL;
    }
    n = poll(&pfd, 1, timeout_ms);
    if (n < 0) {
        return -errno;
    } else if (!n) {
        return -ETIMEDOUT;
    }
    fd = accept4(fe->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        return -errno;
    }
    tfe_disconnect(fe);
    fe->sock = fd;
    return 0;
}

/* Closes the connection to the engine, if any, and forgets what was
 * negotiated on it.  Guest memory, rings and their eventfds stay, as they
 * do in QEMU across a backend reconnect. */
void
tfe_disconnect(struct tfe *fe)
{
    close_if_open(&fe->sock);
    fe->offered_features = 0;
    fe->features = 0;
    fe->offered_protocol_features = 0;
    fe->protocol_features = 0;
    fe->reply_ack = false;
}

/* Stops listening and removes the socket file. */
void
tfe_stop_listening(struct tfe *fe)
{
    if (fe->listen_fd >= 0) {
        close_if_open(&fe->listen_fd);
        unlink(fe->listen_path);
    }
    free(fe->listen_path);
    fe->listen_path = NULL;
}

/* Low-level I/O. */

static long long
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = events };
        long long left = deadline - now_ms();
        int n;

        if (left < 0) {
            left = 0;
        }
        n = poll(&pfd, 1, (int) left);
        if (n > 0) {
            return 0;
        } else if (!n) {
            return -ETIMEDOUT;
        } else if (errno != EINTR) {
            return -errno;
        }
    }
}

/* Sends 'len' bytes from 'buf' on 'sock', with the 'n_fds' fds in 'fds'
 * attached to the first byte.  Waits up to 'timeout_ms' for room in the
 * socket.  Returns 0 or a negative errno value (-EPIPE or -ECONNRESET if
 * the peer is gone). */
int
tfe_sock_send(int sock, const void *buf, size_t len,
              const int *fds, size_t n_fds, int timeout_ms)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * TFE_SEND_MAX_FDS)];
        struct cmsghdr align;
    } cmsg;
    long long deadline = now_ms() + timeout_ms;
    const uint8_t *p = buf;
    size_t sent = 0;

    if (n_fds > TFE_SEND_MAX_FDS) {
        return -EINVAL;
    }
    do {
        struct iovec iov = {
            .iov_base = (void *) (p + sent),
            .iov_len = len - sent,
        };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (!sent && n_fds) {
            struct cmsghdr *c;

            memset(&cmsg, 0, sizeof cmsg);
            msg.msg_control = cmsg.buf;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
            c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
            memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int error = wait_fd(sock, POLLOUT, deadline);
            if (error) {
                return error;
            }
        } else if (n < 0 && errno != EINTR) {
            return -errno;
        }
    } while (sent < len);
    return 0;
}

/* Receives exactly 'len' bytes into 'buf' from the engine, waiting until
 * 'deadline'.  fds that come along are closed and counted in '*n_fds'.
 * Returns 0 or a negative errno value (-ECONNRESET on end of file). */
static int
recv_full(struct tfe *fe, void *buf, size_t len, size_t *n_fds,
          long long deadline)
{
    uint8_t *p = buf;
    size_t got = 0;

    if (fe->sock < 0) {
        return -ENOTCONN;
    }
    while (got < len) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * TFE_RECV_MAX_FDS)];
            struct cmsghdr align;
        } cmsg;
        struct iovec iov = { .iov_base = p + got, .iov_len = len - got };
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = cmsg.buf, .msg_controllen = sizeof cmsg.buf,
        };
        ssize_t n = recvmsg(fe->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

        if (n > 0) {
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c;
                 c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level == SOL_SOCKET
                    && c->cmsg_type == SCM_RIGHTS) {
                    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                    for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
                        if (fe->keep_reply_fd && fe->reply_fd < 0) {
                            fe->reply_fd = fd;
                        } else {
                            close(fd);
                        }
                    }
                    *n_fds += k;
                }
            }
            got += n;
        } else if (!n) {
            return -ECONNRESET;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int error = wait_fd(fe->sock, POLLIN, deadline);
            if (error) {
                return error;
            }
        } else if (errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

/* Messages. */

/* Sends a message with header 'request', 'flags' (sent as given: include
 * VHOST_USER_VERSION for a well-formed message) and size 'size', then the
 * 'size' bytes of 'payload', with 'fds' attached.  Returns 0 or a negative
 * errno value. */
int
tfe_send(struct tfe *fe, uint32_t request, uint32_t flags,
         const void *payload, size_t size, const int *fds, size_t n_fds)
{
    return tfe_send_hdr(fe, request, flags, size, payload, size, fds, n_fds);
}

/* As tfe_send(), but the header claims 'hdr_size' bytes of payload whatever
 * 'size' (what is actually sent) is. */
int
tfe_send_hdr(struct tfe *fe, uint32_t request, uint32_t flags,
             uint32_t hdr_size, const void *payload, size_t size,
             const int *fds, size_t n_fds)
{
    struct vhost_user_hdr hdr = {
        .request = request, .flags = flags, .size = hdr_size,
    };
    uint8_t *buf;
    int error;

    if (fe->sock < 0) {
        return -ENOTCONN;
    }
    buf = malloc(sizeof hdr + size);
    if (!buf) {
        abort();
    }
    memcpy(buf, &hdr, sizeof hdr);
    if (size) {
        memcpy(buf + sizeof hdr, payload, size);
    }
    error = tfe_sock_send(fe->sock, buf, sizeof hdr + size, fds, n_fds,
                          fe->timeout_ms);
    free(buf);
    return error;
}

/* Receives one reply, which must be a well-formed reply to 'request' (any
 * request if 'request' is VHOST_USER_NONE), into 'reply'.  Waits up to
 * 'timeout_ms'.  Returns 0 or a negative errno value: -ECONNRESET if the
 * engine closed the connection, -ETIMEDOUT, -EPROTO for a bad reply. */
int
tfe_recv_reply(struct tfe *fe, uint32_t request, struct tfe_reply *reply,
               int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    int error;

    memset(&reply->hdr, 0, sizeof reply->hdr);
    reply->n_fds = 0;
    error = recv_full(fe, &reply->hdr, sizeof reply->hdr, &reply->n_fds,
                      deadline);
    if (error) {
        return error;
    }
    if ((reply->hdr.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION
        || !(reply->hdr.flags & VHOST_USER_REPLY_MASK)
        || reply->hdr.size > VHOST_USER_MAX_PAYLOAD
        || (request != VHOST_USER_NONE && reply->hdr.request != request)) {
        fprintf(stderr, "tfe: bad reply to request %"PRIu32": request "
                "%"PRIu32", flags %#"PRIx32", size %"PRIu32"\n", request,
                reply->hdr.request, reply->hdr.flags, reply->hdr.size);
        return -EPROTO;
    }
    error = recv_full(fe, reply->payload.bytes, reply->hdr.size,
                      &reply->n_fds, deadline);
    if (!error && reply->n_fds && !fe->keep_reply_fd) {
        fprintf(stderr, "tfe: reply to request %"PRIu32" carried %zu fds\n",
                request, reply->n_fds);
        return -EPROTO;
    }
    return error;
}

/* Receives a reply to 'request' with a u64 payload into '*value'.  Returns
 * 0 or a negative errno value. */
int
tfe_recv_u64(struct tfe *fe, uint32_t request, uint64_t *value)
{
    struct tfe_reply reply;
    int error = tfe_recv_reply(fe, request, &reply, fe->timeout_ms);

    if (error) {
        return error;
    }
    if (reply.hdr.size != sizeof(uint64_t)) {
        fprintf(stderr, "tfe: reply to request %"PRIu32" has size %"PRIu32
                ", expected 8\n", request, reply.hdr.size);
        return -EPROTO;
    }
    *value = reply.payload.u64;
    return 0;
}

/* Waits for the REPLY_ACK acknowledgement of 'request'.  Returns 0 if it
 * is zero, TFE_NACK if not (the value is in 'last_ack'), or a negative
 * errno value. */
int
tfe_wait_ack(struct tfe *fe, uint32_t request)
{
    int error = tfe_recv_u64(fe, request, &fe->last_ack);

    if (error) {
        return error;
    }
    return fe->last_ack ? TFE_NACK : 0;
}

/* Sends a well-formed request, with NEED_REPLY if 'need_reply', and if so
 * waits for its acknowledgement.  Returns 0, TFE_NACK or a negative errno
 * value, as described in test-frontend.h. */
int
tfe_request(struct tfe *fe, uint32_t request, bool need_reply,
            const void *payload, size_t size, const int *fds, size_t n_fds)
{
    uint32_t flags = VHOST_USER_VERSION
                     | (need_reply ? VHOST_USER_NEED_REPLY_MASK : 0);
    int error = tfe_send(fe, request, flags, payload, size, fds, n_fds);

    if (error || !need_reply) {
        return error;
    }
    return tfe_wait_ack(fe, request);
}

/* A barrier: the engine handles a connection's messages in order, so once
 * the reply to GET_FEATURES arrives, everything sent before it has been
 * handled.  Returns 0 or a negative errno value. */
int
tfe_sync(struct tfe *fe)
{
    uint64_t features;

    return tfe_get_features(fe, &features);
}

/* Waits up to 'timeout_ms' for the engine to close the connection,
 * discarding whatever it sends meanwhile.  Returns true if it closed. */
bool
tfe_wait_closed(struct tfe *fe, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;

    if (fe->sock < 0) {
        return true;
    }
    for (;;) {
        uint8_t buf[256];
        size_t n_fds = 0;
        int error;

        /* recv_full() wants exactly this many bytes; ask for one at a
         * time so that it returns as soon as anything arrives. */
        error = recv_full(fe, buf, 1, &n_fds, deadline);
        if (error == -ECONNRESET || error == -EPIPE) {
            return true;
        } else if (error) {
            return false;
        }
    }
}

/* Typed requests. */

static int
request_u64(struct tfe *fe, uint32_t request, uint64_t value)
{
    return tfe_request(fe, request, fe->reply_ack, &value, sizeof value,
                       NULL, 0);
}

static int
request_state(struct tfe *fe, uint32_t request, uint32_t index, uint32_t num)
{
    struct vhost_user_vring_state state = { .index = index, .num = num };

    return tfe_request(fe, request, fe->reply_ack, &state, sizeof state,
                       NULL, 0);
}

static int
get_u64(struct tfe *fe, uint32_t request, uint64_t *value)
{
    int error = tfe_send(fe, request, VHOST_USER_VERSION, NULL, 0, NULL, 0);

    return error ? error : tfe_recv_u64(fe, request, value);
}

int
tfe_get_features(struct tfe *fe, uint64_t *features)
{
    int error = get_u64(fe, VHOST_USER_GET_FEATURES, features);

    if (!error) {
        fe->offered_features = *features;
    }
    return error;
}

int
tfe_set_features(struct tfe *fe, uint64_t features)
{
    fe->features = features;
    return request_u64(fe, VHOST_USER_SET_FEATURES, features);
}

int
tfe_set_owner(struct tfe *fe)
{
    return tfe_request(fe, VHOST_USER_SET_OWNER, fe->reply_ack, NULL, 0,
                       NULL, 0);
}

int
tfe_reset_owner(struct tfe *fe)
{
    return tfe_request(fe, VHOST_USER_RESET_OWNER, fe->reply_ack, NULL, 0,
                       NULL, 0);
}

/* Sends SET_MEM_TABLE with every region of 'fe->mem' (at most
 * VHOST_USER_MAX_FDS). */
int
tfe_set_mem_table(struct tfe *fe)
{
    struct vhost_user_mem_region regions[VHOST_USER_MAX_FDS];
    int fds[VHOST_USER_MAX_FDS];
    size_t n;

    if (!fe->mem || fe->mem->n_regions > VHOST_USER_MAX_FDS) {
        return -EINVAL;
    }
    n = fe->mem->n_regions;
    for (size_t i = 0; i < n; i++) {
        tfe_mem_region_desc(fe->mem, i, &regions[i]);
        fds[i] = fe->mem->regions[i].fd;
    }
    return tfe_set_mem_table_raw(fe, regions, n, fds, n);
}

/* Sends SET_MEM_TABLE with 'n_regions' in the header and that many of
 * 'regions' (up to VHOST_USER_MAX_FDS; a larger 'n_regions' sends only the
 * header's count), with 'fds' attached. */
int
tfe_set_mem_table_raw(struct tfe *fe,
                      const struct vhost_user_mem_region *regions,
                      uint32_t n_regions, const int *fds, size_t n_fds)
{
    struct vhost_user_mem_table table;
    size_t n = MIN(n_regions, VHOST_USER_MAX_FDS);

    memset(&table, 0, sizeof table);
    table.nregions = n_regions;
    memcpy(table.regions, regions, n * sizeof *regions);
    return tfe_request(fe, VHOST_USER_SET_MEM_TABLE, fe->reply_ack, &table,
                       VHOST_USER_MEM_TABLE_HDR_SIZE + n * sizeof *regions,
                       fds, n_fds);
}

/* Creates a new dirty log memfd of 'size' bytes in 'fe->log_fd' (closing
 * the previous one).  Returns 0 or a negative errno value. */
int
tfe_log_create(struct tfe *fe, uint64_t size)
{
    int fd = memfd_create(TFE_LOG_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0) {
        return -errno;
    }
    if (ftruncate(fd, size) < 0) {
        int error = -errno;
        close(fd);
        return error;
    }
    close_if_open(&fe->log_fd);
    fe->log_fd = fd;
    fe->log_size = size;
    return 0;
}

/* Sends SET_LOG_BASE with 'fd' (none if negative), with NEED_REPLY if
 * 'need_reply', and reads the reply: the engine answers SET_LOG_BASE with a
 * header-only reply on success (vhost-user.rst, as QEMU expects it), or a
 * u64 ack when NEED_REPLY asked for one.  Returns 0, TFE_NACK or a negative
 * errno value. */
int
tfe_set_log_base(struct tfe *fe, uint64_t mmap_size, uint64_t mmap_offset,
                 int fd, bool need_reply)
{
    struct vhost_user_log log = {
        .mmap_size = mmap_size, .mmap_offset = mmap_offset,
    };
    uint32_t flags = VHOST_USER_VERSION
                     | (need_reply ? VHOST_USER_NEED_REPLY_MASK : 0);
    struct tfe_reply reply;
    int error;

    error = tfe_send(fe, VHOST_USER_SET_LOG_BASE, flags, &log, sizeof log,
                     &fd, fd >= 0 ? 1 : 0);
    if (!error) {
        error = tfe_recv_reply(fe, VHOST_USER_SET_LOG_BASE, &reply,
                               fe->timeout_ms);
    }
    if (error) {
        return error;
    }
    if (!reply.hdr.size) {
        return 0;
    } else if (reply.hdr.size == sizeof(uint64_t)) {
        fe->last_ack = reply.payload.u64;
        return fe->last_ack ? TFE_NACK : 0;
    }
    return -EPROTO;
}

/* Sends SET_LOG_FD with a new eventfd, kept in 'fe->log_call_fd'. */
int
tfe_set_log_fd(struct tfe *fe)
{
    int fd = new_eventfd();

    if (fd < 0) {
        return fd;
    }
    close_if_open(&fe->log_call_fd);
    fe->log_call_fd = fd;
    return tfe_request(fe, VHOST_USER_SET_LOG_FD, fe->reply_ack, NULL, 0,
                       &fd, 1);
}

int
tfe_set_vring_num(struct tfe *fe, uint32_t index, uint32_t num)
{
    return request_state(fe, VHOST_USER_SET_VRING_NUM, index, num);
}

/* Sends SET_VRING_ADDR for vring 'index' as tfe_vring_alloc() laid it out,
 * with frontend virtual addresses, and with VHOST_VRING_F_LOG and the used
 * ring's guest physical address if the vring's 'log_used' is set.  With
 * VIRTIO_F_RING_PACKED in 'fe->features' the log address is the descriptor
 * ring's, where the device writes used descriptors. */
int
tfe_set_vring_addr(struct tfe *fe, uint32_t index)
{
    const struct tfe_vring *vr;
    struct vhost_user_vring_addr addr;

    if (index >= TFE_MAX_QUEUES || !fe->vrings[index].size) {
        return -EINVAL;
    }
    vr = &fe->vrings[index];
    memset(&addr, 0, sizeof addr);
    addr.index = index;
    if (fe->iova_offset) {
        /* Behind an IOMMU QEMU sends I/O virtual addresses, the log's
         * too. */
        addr.desc_user_addr = tfe_mem_va_to_gpa(fe->mem, vr->desc)
                              + fe->iova_offset;
        addr.avail_user_addr = tfe_mem_va_to_gpa(fe->mem, vr->avail)
                               + fe->iova_offset;
        addr.used_user_addr = tfe_mem_va_to_gpa(fe->mem, vr->used)
                              + fe->iova_offset;
    } else {
        addr.desc_user_addr = tfe_va_to_uva(vr->desc);
        addr.avail_user_addr = tfe_va_to_uva(vr->avail);
        addr.used_user_addr = tfe_va_to_uva(vr->used);
    }
    if (vr->log_used) {
        /* As QEMU sends it: its "used" address, which for a packed ring
         * is the device event area, not the descriptor ring the device
         * writes back into. */
        addr.flags = 1u << VHOST_VRING_F_LOG;
        addr.log_guest_addr = tfe_mem_va_to_gpa(fe->mem, vr->used)
                              + fe->iova_offset;
    }
    return tfe_set_vring_addr_raw(fe, &addr);
}

int
tfe_set_vring_addr_raw(struct tfe *fe,
                       const struct vhost_user_vring_addr *addr)
{
    return tfe_request(fe, VHOST_USER_SET_VRING_ADDR, fe->reply_ack, addr,
                       sizeof *addr, NULL, 0);
}

int
tfe_set_vring_base(struct tfe *fe, uint32_t index, uint32_t num)
{
    return request_state(fe, VHOST_USER_SET_VRING_BASE, index, num);
}

/* Sends GET_VRING_BASE for vring 'index' and stores the base it answers
 * in '*base'.  Returns 0 or a negative errno value (-EPROTO if the reply
 * names another vring). */
int
tfe_get_vring_base(struct tfe *fe, uint32_t index, uint32_t *base)
{
    struct vhost_user_vring_state state = { .index = index };
    struct tfe_reply reply;
    int error;

    error = tfe_send(fe, VHOST_USER_GET_VRING_BASE, VHOST_USER_VERSION,
                     &state, sizeof state, NULL, 0);
    if (!error) {
        error = tfe_recv_reply(fe, VHOST_USER_GET_VRING_BASE, &reply,
                               fe->timeout_ms);
    }
    if (error) {
        return error;
    }
    if (reply.hdr.size != sizeof state
        || reply.payload.state.index != index) {
        fprintf(stderr, "tfe: bad GET_VRING_BASE reply (size %"PRIu32")\n",
                reply.hdr.size);
        return -EPROTO;
    }
    *base = reply.payload.state.num;
    return 0;
}

/* SET_VRING_KICK, _CALL, _ERR: vring 'index' in bits 0..7 and, if 'fd' is
 * negative, the no-fd bit instead of an fd. */
static int
set_vring_fd(struct tfe *fe, uint32_t request, uint32_t index, int fd)
{
    uint64_t u64 = (index & VHOST_USER_VRING_IDX_MASK)
                   | (fd < 0 ? VHOST_USER_VRING_NOFD_MASK : 0);

    return tfe_set_vring_fd_raw(fe, request, u64, &fd, fd < 0 ? 0 : 1);
}

int
tfe_set_vring_kick(struct tfe *fe, uint32_t index, int fd)
{
    return set_vring_fd(fe, VHOST_USER_SET_VRING_KICK, index, fd);
}

int
tfe_set_vring_call(struct tfe *fe, uint32_t index, int fd)
{
    return set_vring_fd(fe, VHOST_USER_SET_VRING_CALL, index, fd);
}

int
tfe_set_vring_err(struct tfe *fe, uint32_t index, int fd)
{
    return set_vring_fd(fe, VHOST_USER_SET_VRING_ERR, index, fd);
}

/* Sends 'request' (SET_VRING_KICK, _CALL or _ERR) with payload 'u64' as
 * given and 'fds' attached. */
int
tfe_set_vring_fd_raw(struct tfe *fe, uint32_t request, uint64_t u64,
                     const int *fds, size_t n_fds)
{
    return tfe_request(fe, request, fe->reply_ack, &u64, sizeof u64,
                       fds, n_fds);
}

int
tfe_get_protocol_features(struct tfe *fe, uint64_t *features)
{
    int error = get_u64(fe, VHOST_USER_GET_PROTOCOL_FEATURES, features);

    if (!error) {
        fe->offered_protocol_features = *features;
    }
    return error;
}

/* Sends SET_PROTOCOL_FEATURES (without NEED_REPLY, as QEMU does) and, if
 * 'features' includes REPLY_ACK, sets 'fe->reply_ack' for what follows. */
int
tfe_set_protocol_features(struct tfe *fe, uint64_t features)
{
    int error;

    fe->protocol_features = features;
    error = tfe_request(fe, VHOST_USER_SET_PROTOCOL_FEATURES, false,
                        &features, sizeof features, NULL, 0);
    if (!error) {
        fe->reply_ack = (features
                         & FEATURE_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)) != 0;
    }
    return error;
}

int
tfe_get_queue_num(struct tfe *fe, uint64_t *n)
{
    return get_u64(fe, VHOST_USER_GET_QUEUE_NUM, n);
}

int
tfe_set_vring_enable(struct tfe *fe, uint32_t index, bool enable)
{
    return request_state(fe, VHOST_USER_SET_VRING_ENABLE, index, enable);
}

/* Sends SEND_RARP: the MAC in the first 6 bytes of the u64, as QEMU does. */
int
tfe_send_rarp(struct tfe *fe, const uint8_t mac[6])
{
    uint64_t u64 = 0;

    memcpy(&u64, mac, 6);
    return request_u64(fe, VHOST_USER_SEND_RARP, u64);
}

int
tfe_net_set_mtu(struct tfe *fe, uint64_t mtu)
{
    return request_u64(fe, VHOST_USER_NET_SET_MTU, mtu);
}

/* Sends SET_BACKEND_REQ_FD with one end of a new socketpair, keeping the
 * other in 'fe->backend_req_fd'. */
int
tfe_set_backend_req_fd(struct tfe *fe)
{
    int sv[2];
    int error;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        return -errno;
    }
    close_if_open(&fe->backend_req_fd);
    fe->backend_req_fd = sv[0];
    error = tfe_request(fe, VHOST_USER_SET_BACKEND_REQ_FD, fe->reply_ack,
                        NULL, 0, &sv[1], 1);
    close(sv[1]);
    return error;
}

int
tfe_iotlb_msg(struct tfe *fe, uint8_t type, uint64_t iova, uint64_t size,
              uint64_t uaddr, uint8_t perm)
{
    struct vhost_iotlb_msg m = {
        .iova = iova, .size = size, .uaddr = uaddr, .perm = perm,
        .type = type,
    };

    return tfe_request(fe, VHOST_USER_IOTLB_MSG, fe->reply_ack, &m,
                       sizeof m, NULL, 0);
}

/* Maps the 'size' bytes of guest memory at 'gpa', inside one region, at
 * IOVA 'gpa' + 'iova_offset'. */
int
tfe_iotlb_map(struct tfe *fe, uint64_t gpa, uint64_t size, uint8_t perm)
{
    void *va = tfe_mem_gpa_to_va(fe->mem, gpa, size);

    if (!va) {
        return -EINVAL;
    }
    return tfe_iotlb_msg(fe, VHOST_IOTLB_UPDATE, gpa + fe->iova_offset, size,
                         tfe_va_to_uva(va), perm);
}

int
tfe_iotlb_map_mem(struct tfe *fe, uint8_t perm)
{
    for (size_t i = 0; i < fe->mem->n_regions; i++) {
        const struct tfe_region *r = &fe->mem->regions[i];
        int error = tfe_iotlb_map(fe, r->gpa, r->size, perm);

        if (error) {
            return error;
        }
    }
    return 0;
}

int
tfe_iotlb_recv_miss(struct tfe *fe, uint64_t *iova, uint8_t *perm,
                    int timeout_ms)
{
    struct {
        struct vhost_user_hdr hdr;
        struct vhost_iotlb_msg iotlb;
    } __attribute__((packed)) m;
    struct pollfd pfd = { .fd = fe->backend_req_fd, .events = POLLIN };

    if (fe->backend_req_fd < 0) {
        return -ENOTCONN;
    }
    if (poll(&pfd, 1, timeout_ms) <= 0) {
        return -EAGAIN;
    }
    /* Messages are small and written whole: one read is one message. */
    if (recv(fe->backend_req_fd, &m, sizeof m, MSG_DONTWAIT)
        != (ssize_t) sizeof m
        || m.hdr.request != VHOST_USER_BACKEND_IOTLB_MSG
        || m.hdr.flags != VHOST_USER_VERSION
        || m.hdr.size != sizeof m.iotlb
        || m.iotlb.type != VHOST_IOTLB_MISS) {
        return -EPROTO;
    }
    *iova = m.iotlb.iova;
    *perm = m.iotlb.perm;
    return 0;
}

int
tfe_postcopy_advise(struct tfe *fe, int *ufdp)
{
    struct tfe_reply reply;
    int error = tfe_send(fe, VHOST_USER_POSTCOPY_ADVISE, VHOST_USER_VERSION,
                         NULL, 0, NULL, 0);

    *ufdp = -1;
    if (error) {
        return error;
    }
    fe->keep_reply_fd = true;
    fe->reply_fd = -1;
    error = tfe_recv_reply(fe, VHOST_USER_POSTCOPY_ADVISE, &reply,
                           fe->timeout_ms);
    fe->keep_reply_fd = false;
    if (!error && (reply.hdr.size || fe->reply_fd < 0)) {
        /* An ack (a refusal, with REPLY_ACK) carries 8 bytes and no fd. */
        error = reply.hdr.size == 8 && reply.payload.u64 ? TFE_NACK : -EPROTO;
    }
    if (error) {
        if (fe->reply_fd >= 0) {
            close(fe->reply_fd);
        }
    } else {
        *ufdp = fe->reply_fd;
    }
    fe->reply_fd = -1;
    return error;
}

int
tfe_postcopy_listen(struct tfe *fe)
{
    return tfe_request(fe, VHOST_USER_POSTCOPY_LISTEN, fe->reply_ack, NULL,
                       0, NULL, 0);
}

int
tfe_postcopy_end(struct tfe *fe)
{
    return tfe_request(fe, VHOST_USER_POSTCOPY_END, fe->reply_ack, NULL, 0,
                       NULL, 0);
}

/* Sends 'request' with the 8-byte payload of 0 that says the backend's
 * postcopy memory table reply was taken. */
static int
postcopy_ack__(struct tfe *fe, uint32_t request)
{
    uint64_t zero = 0;

    return tfe_send(fe, request, VHOST_USER_VERSION, &zero, sizeof zero,
                    NULL, 0);
}

int
tfe_postcopy_set_mem_table(struct tfe *fe, uint64_t *bases)
{
    struct vhost_user_mem_table table;
    int fds[VHOST_USER_MAX_FDS];
    struct tfe_reply reply;
    size_t n = fe->mem->n_regions;

    memset(&table, 0, sizeof table);
    table.nregions = n;
    for (size_t i = 0; i < n; i++) {
        tfe_mem_region_desc(fe->mem, i, &table.regions[i]);
        fds[i] = fe->mem->regions[i].fd;
    }
    size_t size = VHOST_USER_MEM_TABLE_HDR_SIZE + n * sizeof table.regions[0];
    int error = tfe_send(fe, VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION,
                         &table, size, fds, n);
    if (!error) {
        error = tfe_recv_reply(fe, VHOST_USER_SET_MEM_TABLE, &reply,
                               fe->timeout_ms);
    }
    if (error) {
        return error;
    }
    if (reply.hdr.size != size) {
        return reply.hdr.size == 8 && reply.payload.u64 ? TFE_NACK : -EPROTO;
    }
    const struct vhost_user_mem_table *got = (const void *) reply.payload.bytes;
    for (size_t i = 0; i < n; i++) {
        if (got->regions[i].guest_phys_addr
            != table.regions[i].guest_phys_addr) {
            return -EPROTO;
        }
        bases[i] = got->regions[i].userspace_addr;
    }
    return postcopy_ack__(fe, VHOST_USER_SET_MEM_TABLE);
}

int
tfe_postcopy_add_mem_reg(struct tfe *fe, size_t region, uint64_t *base)
{
    struct vhost_user_mem_reg reg;
    struct tfe_reply reply;
    int fd = fe->mem->regions[region].fd;

    memset(&reg, 0, sizeof reg);
    tfe_mem_region_desc(fe->mem, region, &reg.region);
    int error = tfe_send(fe, VHOST_USER_ADD_MEM_REG, VHOST_USER_VERSION,
                         &reg, sizeof reg, &fd, 1);
    if (!error) {
        error = tfe_recv_reply(fe, VHOST_USER_ADD_MEM_REG, &reply,
                               fe->timeout_ms);
    }
    if (error) {
        return error;
    }
    if (reply.hdr.size != sizeof reg) {
        return reply.hdr.size == 8 && reply.payload.u64 ? TFE_NACK : -EPROTO;
    }
    const struct vhost_user_mem_reg *got = (const void *) reply.payload.bytes;
    if (got->region.guest_phys_addr != reg.region.guest_phys_addr) {
        return -EPROTO;
    }
    *base = got->region.userspace_addr;
    return postcopy_ack__(fe, VHOST_USER_ADD_MEM_REG);
}

int
tfe_get_max_mem_slots(struct tfe *fe, uint64_t *n)
{
    return get_u64(fe, VHOST_USER_GET_MAX_MEM_SLOTS, n);
}

/* Sends ADD_MEM_REG for 'region' with 'fd' (none if negative). */
int
tfe_add_mem_reg(struct tfe *fe, const struct vhost_user_mem_region *region,
                int fd)
{
    struct vhost_user_mem_reg reg = { .region = *region };

    return tfe_request(fe, VHOST_USER_ADD_MEM_REG, fe->reply_ack, &reg,
                       sizeof reg, &fd, fd >= 0 ? 1 : 0);
}

/* Sends ADD_MEM_REG for region 'region' of 'fe->mem'. */
int
tfe_add_mem_region(struct tfe *fe, size_t region)
{
    struct vhost_user_mem_region desc;

    if (!fe->mem || region >= fe->mem->n_regions) {
        return -EINVAL;
    }
    tfe_mem_region_desc(fe->mem, region, &desc);
    return tfe_add_mem_reg(fe, &desc, fe->mem->regions[region].fd);
}

/* Sends REM_MEM_REG for 'region', with 'fd' (none if negative: the spec
 * lets the frontend send the region's fd or not). */
int
tfe_rem_mem_reg(struct tfe *fe, const struct vhost_user_mem_region *region,
                int fd)
{
    struct vhost_user_mem_reg reg = { .region = *region };

    return tfe_request(fe, VHOST_USER_REM_MEM_REG, fe->reply_ack, &reg,
                       sizeof reg, &fd, fd >= 0 ? 1 : 0);
}

int
tfe_set_status(struct tfe *fe, uint64_t status)
{
    return request_u64(fe, VHOST_USER_SET_STATUS, status);
}

int
tfe_get_status(struct tfe *fe, uint64_t *status)
{
    return get_u64(fe, VHOST_USER_GET_STATUS, status);
}

/* Sends GET_CONFIG for 'size' bytes at 'offset' in a payload of
 * 'payload_size' bytes (12 + 'size' for a well-formed request; at most
 * VHOST_USER_MAX_PAYLOAD) and stores the reply in '*reply'. */
int
tfe_get_config(struct tfe *fe, uint32_t offset, uint32_t size,
               uint32_t payload_size, struct tfe_reply *reply)
{
    static uint8_t buf[VHOST_USER_MAX_PAYLOAD];
    struct vhost_user_config *cfg = (struct vhost_user_config *) buf;
    int error;

    if (payload_size > sizeof buf
        || payload_size < VHOST_USER_CONFIG_HDR_SIZE) {
        return -EINVAL;
    }
    memset(buf, 0xa5, sizeof buf);
    cfg->offset = offset;
    cfg->size = size;
    cfg->flags = 0;
    error = tfe_send(fe, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, buf,
                     payload_size, NULL, 0);
    return error ? error : tfe_recv_reply(fe, VHOST_USER_GET_CONFIG, reply,
                                          fe->timeout_ms);
}

/* Rings and bring-up. */

/* Split ring part sizes, VIRTIO 1.2 §2.7 (with the event fields). */
size_t
tfe_vring_desc_size(unsigned int size)
{
    return (size_t) VRING_DESC_SIZE * size;
}

size_t
tfe_vring_avail_size(unsigned int size)
{
    return 6 + 2 * (size_t) size;
}

size_t
tfe_vring_used_size(unsigned int size)
{
    return 6 + (size_t) VRING_USED_ELEM_SIZE * size;
}

/* Lays out split vring 'index' of 'size' entries in guest memory (region
 * 'index' modulo the number of regions, so that rings land in more than
 * one region), unless it already has that size.  The used ring is aligned
 * to 'fe->used_align' (64 if 0). */
int
tfe_vring_alloc(struct tfe *fe, uint32_t index, unsigned int size)
{
    struct tfe_vring *vr;
    size_t region;

    if (!fe->mem || !fe->mem->n_regions || index >= TFE_MAX_QUEUES
        || !size) {
        return -EINVAL;
    }
    vr = &fe->vrings[index];
    if (vr->size == size) {
        return 0;
    }
    region = index % fe->mem->n_regions;
    vr->desc = tfe_mem_alloc(fe->mem, region, tfe_vring_desc_size(size),
                             4096);
    vr->avail = tfe_mem_alloc(fe->mem, region, tfe_vring_avail_size(size),
                              64);
    vr->used = tfe_mem_alloc(fe->mem, region, tfe_vring_used_size(size),
                             fe->used_align ? fe->used_align : 64);
    if (!vr->desc || !vr->avail || !vr->used) {
        vr->size = 0;
        return -ENOMEM;
    }
    vr->size = size;
    return 0;
}

/* Brings vring 'index' up as QEMU's vhost_virtqueue_start() does: rings
 * laid out in guest memory, then SET_VRING_NUM, SET_VRING_BASE (the
 * vring's 'base' if it has one, else 0, or TFE_PACKED_BASE_INIT when
 * VIRTIO_F_RING_PACKED is in 'fe->features'), SET_VRING_ADDR,
 * SET_VRING_KICK and SET_VRING_CALL (with eventfds created on first use
 * and kept).  Does not enable it.  Returns 0, TFE_NACK or a negative errno
 * value. */
int
tfe_vring_setup(struct tfe *fe, uint32_t index, unsigned int size)
{
    struct tfe_vring *vr;
    int error;

    error = tfe_vring_alloc(fe, index, size);
    if (error) {
        return error;
    }
    vr = &fe->vrings[index];
    if (vr->kick_fd < 0) {
        vr->kick_fd = new_eventfd();
    }
    if (vr->call_fd < 0) {
        vr->call_fd = new_eventfd();
    }
    if (vr->kick_fd < 0 || vr->call_fd < 0) {
        return -EMFILE;
    }
    error = tfe_set_vring_num(fe, index, size);
    if (!error) {
        uint32_t base = (vr->has_base ? vr->base
                         : fe->features & FEATURE_BIT(VIRTIO_F_RING_PACKED)
                         ? TFE_PACKED_BASE_INIT : 0);
        error = tfe_set_vring_base(fe, index, base);
    }
    if (!error) {
        error = tfe_set_vring_addr(fe, index);
    }
    if (!error) {
        error = tfe_set_vring_kick(fe, index, vr->kick_fd);
    }
    if (!error) {
        error = tfe_set_vring_call(fe, index, vr->call_fd);
    }
    return error;
}

/* Negotiates features as QEMU does on connection: GET_FEATURES, then (if
 * offered and not 'opts->legacy') GET/SET_PROTOCOL_FEATURES, SET_OWNER and
 * SET_FEATURES (with VIRTIO_F_RING_PACKED, if offered, when
 * 'opts->packed').  'opts' may be null for the defaults.  Returns 0,
 * TFE_NACK or a negative errno value. */
int
tfe_negotiate(struct tfe *fe, const struct tfe_setup *opts)
{
    static const struct tfe_setup defaults;
    uint64_t offered, features, mask;
    int error;

    opts = opts ? opts : &defaults;
    error = tfe_get_features(fe, &offered);
    if (error) {
        return error;
    }
    mask = opts->features_mask ? opts->features_mask
                               : ~TFE_DEFAULT_FEATURES_EXCLUDED;
    if (opts->packed) {
        mask |= FEATURE_BIT(VIRTIO_F_RING_PACKED);
    }
    features = offered & mask & ~FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES);

    if (!opts->legacy
        && offered & FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES)) {
        uint64_t protocol;

        features |= FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
        error = tfe_get_protocol_features(fe, &protocol);
        if (!error) {
            protocol &= opts->protocol_mask ? opts->protocol_mask
                                            : UINT64_MAX;
            error = tfe_set_protocol_features(fe, protocol);
        }
        if (error) {
            return error;
        }
    }

    error = tfe_set_owner(fe);
    return error ? error : tfe_set_features(fe, features);
}

/* Brings a device with 'n_queue_pairs' queue pairs to ready, as QEMU does:
 * tfe_negotiate(), GET_QUEUE_NUM (with MQ), SET_MEM_TABLE (creating the
 * default guest memory if 'fe->mem' is null), tfe_vring_setup() for every
 * vring (each of 'opts->queue_size' entries, with the used ring aligned to
 * 'opts->used_align' and VHOST_VRING_F_LOG if 'opts->log_used'), and
 * SET_VRING_ENABLE for the first 'opts->n_enabled_pairs' pairs (all by
 * default) when PROTOCOL_FEATURES was negotiated.  Returns 0,
 * TFE_NACK or a negative errno value (-ENOSPC if the engine offers fewer
 * queue pairs). */
int
tfe_setup_device(struct tfe *fe, unsigned int n_queue_pairs,
                 const struct tfe_setup *opts)
{
    static const struct tfe_setup defaults;
    unsigned int size, n_enabled;
    int error;

    opts = opts ? opts : &defaults;
    if (!n_queue_pairs || 2 * n_queue_pairs > TFE_MAX_QUEUES) {
        return -EINVAL;
    }
    if (!fe->mem) {
        fe->mem = tfe_mem_create_default();
    }
    size = opts->queue_size ? opts->queue_size : 256;
    n_enabled = opts->n_enabled_pairs ? opts->n_enabled_pairs
                                      : n_queue_pairs;

    error = tfe_negotiate(fe, opts);
    if (error) {
        return error;
    }
    fe->used_align = opts->used_align;
    for (unsigned int q = 0; q < 2 * n_queue_pairs; q++) {
        fe->vrings[q].log_used = opts->log_used;
    }
    if (fe->protocol_features & FEATURE_BIT(VHOST_USER_PROTOCOL_F_MQ)) {
        uint64_t n;

        error = tfe_get_queue_num(fe, &n);
        if (error) {
            return error;
        }
        if (n < n_queue_pairs) {
            return -ENOSPC;
        }
    } else if (n_queue_pairs > 1) {
        return -ENOSPC;
    }

    error = tfe_set_mem_table(fe);
    for (unsigned int q = 0; !error && q < 2 * n_queue_pairs; q++) {
        error = tfe_vring_setup(fe, q, size);
    }
    if (fe->features & FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES)) {
        for (unsigned int q = 0; !error && q < 2 * n_enabled; q++) {
            error = tfe_set_vring_enable(fe, q, true);
        }
    }
    return error;
}
