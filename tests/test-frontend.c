/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tfe: a test model of a vhost-user frontend.  See test-frontend.h.
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

/* Guest memory. */

struct tfe_mem *
tfe_mem_create(void)
{
    struct tfe_mem *mem = calloc(1, sizeof *mem);

    if (!mem) {
        abort();
    }
    return mem;
}

/* Creates the default guest memory: TFE_DEFAULT_REGION_SIZE bytes at
 * TFE_DEFAULT_GPA0, offset 0 in its memfd, and as many at TFE_DEFAULT_GPA1
 * (leaving a gap) at offset TFE_DEFAULT_OFFSET1 in its memfd.  Aborts on
 * failure, which only lack of memory can cause. */
struct tfe_mem *
tfe_mem_create_default(void)
{
    struct tfe_mem *mem = tfe_mem_create();

    if (tfe_mem_add(mem, TFE_DEFAULT_GPA0, TFE_DEFAULT_REGION_SIZE, 0) < 0
        || tfe_mem_add(mem, TFE_DEFAULT_GPA1, TFE_DEFAULT_REGION_SIZE,
                       TFE_DEFAULT_OFFSET1) < 0) {
        fprintf(stderr, "tfe_mem_create_default: %s\n", strerror(errno));
        abort();
    }
    return mem;
}

void
tfe_mem_destroy(struct tfe_mem *mem)
{
    if (!mem) {
        return;
    }
    for (size_t i = 0; i < mem->n_regions; i++) {
        struct tfe_region *r = &mem->regions[i];
        munmap(r->map, r->mmap_offset + r->size);
        close(r->fd);
    }
    free(mem);
}

/* Adds to 'mem' a region of 'size' bytes at guest physical address 'gpa',
 * backed by a new memfd of 'mmap_offset' + 'size' bytes of which the region
 * is the tail.  The frontend maps all of the memfd.  Returns the region's
 * index, or a negative errno value.  Does not check for overlaps: tests
 * want to build bad tables too. */
int
tfe_mem_add(struct tfe_mem *mem, uint64_t gpa, uint64_t size,
            uint64_t mmap_offset)
{
    struct tfe_region *r;
    uint64_t total = mmap_offset + size;
    int fd;
    void *map;

    if (mem->n_regions >= TFE_MAX_REGIONS || !size || total < size) {
        return -EINVAL;
    }
    /* Sealing allowed, not done: a test may seal (tests/test-adv-sigbus.c). */
    fd = memfd_create(TFE_MEM_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -errno;
    }
    if (ftruncate(fd, total) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int error = errno;
        close(fd);
        return -error;
    }

    r = &mem->regions[mem->n_regions];
    r->gpa = gpa;
    r->size = size;
    r->mmap_offset = mmap_offset;
    r->fd = fd;
    r->map = map;
    r->va = r->map + mmap_offset;
    r->alloc_next = 0;
    r->alloc_end = size;
    return mem->n_regions++;
}

/* Returns the frontend's address of the 'len' bytes at guest physical
 * address 'gpa', or NULL if they are not all inside one region. */
void *
tfe_mem_gpa_to_va(const struct tfe_mem *mem, uint64_t gpa, uint64_t len)
{
    for (size_t i = 0; i < mem->n_regions; i++) {
        const struct tfe_region *r = &mem->regions[i];
        if (gpa >= r->gpa && gpa - r->gpa < r->size
            && len <= r->size - (gpa - r->gpa)) {
            return r->va + (gpa - r->gpa);
        }
    }
    return NULL;
}

/* Returns the guest physical address of frontend address 'va', or
 * TFE_BAD_GPA if it is in no region. */
uint64_t
tfe_mem_va_to_gpa(const struct tfe_mem *mem, const void *va)
{
    const uint8_t *p = va;

    for (size_t i = 0; i < mem->n_regions; i++) {
        const struct tfe_region *r = &mem->regions[i];
        if (p >= r->va && (uint64_t) (p - r->va) < r->size) {
            return r->gpa + (uint64_t) (p - r->va);
        }
    }
    return TFE_BAD_GPA;
}

/* Allocates 'size' bytes aligned to 'align' (a power of two) in region
 * 'region' of 'mem'.  Returns the frontend address, or NULL if the region
 * is full.  Memory is never freed; it comes zeroed from the memfd. */
void *
tfe_mem_alloc(struct tfe_mem *mem, size_t region, uint64_t size,
              uint64_t align)
{
    struct tfe_region *r;
    uint64_t off;

    if (region >= mem->n_regions) {
        return NULL;
    }
    r = &mem->regions[region];
    off = (r->alloc_next + align - 1) & ~(align - 1);
    if (off > r->alloc_end || size > r->alloc_end - off) {
        return NULL;
    }
    r->alloc_next = off + size;
    return r->va + off;
}

/* Fills in the wire description of region 'region' of 'mem'. */
void
tfe_mem_region_desc(const struct tfe_mem *mem, size_t region,
                    struct vhost_user_mem_region *desc)
{
    const struct tfe_region *r = &mem->regions[region];

    desc->guest_phys_addr = r->gpa;
    desc->memory_size = r->size;
    desc->userspace_addr = tfe_va_to_uva(r->va);
    desc->mmap_offset = r->mmap_offset;
}

/* Adds to 'mem' a region of 'size' bytes that starts in guest physical
 * memory where the last region ends, backed by a memfd of its own at
 * 'mmap_offset'.  Reserves TFE_BOUNDARY_RESERVE bytes on each side of the
 * boundary (the top of the last region, the bottom of the new one) from
 * tfe_mem_alloc().  Returns the new region's index or a negative errno
 * value (-EINVAL if there is no last region or it has no room left to
 * reserve). */
int
tfe_mem_add_adjacent(struct tfe_mem *mem, uint64_t size,
                     uint64_t mmap_offset)
{
    struct tfe_region *prev;
    int idx;

    if (!mem->n_regions || size < 2 * TFE_BOUNDARY_RESERVE) {
        return -EINVAL;
    }
    prev = &mem->regions[mem->n_regions - 1];
    if (prev->alloc_end < TFE_BOUNDARY_RESERVE
        || prev->alloc_next > prev->alloc_end - TFE_BOUNDARY_RESERVE) {
        return -EINVAL;
    }
    idx = tfe_mem_add(mem, prev->gpa + prev->size, size, mmap_offset);
    if (idx >= 0) {
        prev->alloc_end -= TFE_BOUNDARY_RESERVE;
        mem->regions[idx].alloc_next = TFE_BOUNDARY_RESERVE;
    }
    return idx;
}

/* Returns the guest physical address just past region 'region': the
 * boundary with the region tfe_mem_add_adjacent() put after it. */
uint64_t
tfe_mem_boundary(const struct tfe_mem *mem, size_t region)
{
    return mem->regions[region].gpa + mem->regions[region].size;
}

/* Returns the region holding 'gpa', or NULL. */
static const struct tfe_region *
mem_find__(const struct tfe_mem *mem, uint64_t gpa)
{
    for (size_t i = 0; i < mem->n_regions; i++) {
        const struct tfe_region *r = &mem->regions[i];
        if (gpa >= r->gpa && gpa - r->gpa < r->size) {
            return r;
        }
    }
    return NULL;
}

/* Copies 'len' bytes from 'data' to guest physical address 'gpa', across
 * as many regions as it takes.  Returns false (having copied a prefix) if
 * some byte is in no region. */
bool
tfe_mem_write(const struct tfe_mem *mem, uint64_t gpa, const void *data,
              size_t len)
{
    const uint8_t *p = data;

    while (len) {
        const struct tfe_region *r = mem_find__(mem, gpa);
        uint64_t n;

        if (!r) {
            return false;
        }
        n = MIN(len, r->size - (gpa - r->gpa));
        memcpy(r->va + (gpa - r->gpa), p, n);
        p += n;
        gpa += n;
        len -= n;
    }
    return true;
}

/* Copies 'len' bytes at guest physical address 'gpa' into 'data', across
 * regions.  Returns false if some byte is in no region. */
bool
tfe_mem_read(const struct tfe_mem *mem, uint64_t gpa, void *data,
             size_t len)
{
    uint8_t *p = data;

    while (len) {
        const struct tfe_region *r = mem_find__(mem, gpa);
        uint64_t n;

        if (!r) {
            return false;
        }
        n = MIN(len, r->size - (gpa - r->gpa));
        memcpy(p, r->va + (gpa - r->gpa), n);
        p += n;
        gpa += n;
        len -= n;
    }
    return true;
}

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

/* The guest driver of a split virtqueue. */

static uint16_t
load_acquire16(const uint16_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void
store_release16(uint16_t *p, uint16_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Forgets every chain: the driver state of a fresh ring (packed: at
 * position 0 with wrap counters 1, §2.8.1). */
static void
vq_reset_state__(struct tfe_vq *vq)
{
    vq->next_avail = 0;
    vq->next_used = 0;
    vq->avail_wrap = vq->used_wrap = true;
    vq->n_free_ids = vq->size;
    /* Ids start at the top, so that they do not follow positions. */
    vq->id_cursor = vq->size - 1;
    vq->n_extra = 0;
    vq->last_used_flags = 0;
    vq->order_head = vq->order_n = 0;
    vq->batch_left = 0;
    vq->last_batch = 0;
    vq->n_unordered = 0;
    for (unsigned int i = 0; i < vq->size; i++) {
        vq->free_next[i] = i + 1;
    }
    vq->free_head = 0;
    vq->n_free = vq->size;
    memset(vq->chains, 0, vq->size * sizeof *vq->chains);
    vq->arena_next = 0;
    vq->arena_inflight = 0;
    vq->arena_held = 0;
}

/* Zeroes the ring (including the event fields and used->flags) and forgets
 * every chain: the state to pair with SET_VRING_BASE 0 (packed:
 * TFE_PACKED_BASE_INIT) when a test sets the vring up again, which
 * tfe_vring_setup() then sends (the vring's 'has_base' is cleared). */
void
tfe_vq_reset(struct tfe_vq *vq)
{
    vq->fe->vrings[vq->index].has_base = false;
    memset(vq->desc, 0, tfe_vring_desc_size(vq->size));
    memset(vq->avail_flags, 0, tfe_vring_avail_size(vq->size));
    memset(vq->used_flags, 0, tfe_vring_used_size(vq->size));
    vq_reset_state__(vq);
}

/* Sets up 'vq' to drive vring 'index' of 'fe', which tfe_vring_alloc()
 * must have laid out, with an arena of 'arena_size' bytes of buffer space
 * in region 'arena_region'.  The header layout follows 'fe->features' as
 * sent with SET_FEATURES.  Leaves the ring itself alone: it is fresh (and
 * zeroed) guest memory, and the engine may have written used->flags
 * already.  Returns 0 or a negative errno value. */
int
tfe_vq_init(struct tfe_vq *vq, struct tfe *fe, uint32_t index,
            size_t arena_region, uint64_t arena_size)
{
    const struct tfe_vring *vr;
    void *arena;

    memset(vq, 0, sizeof *vq);
    if (index >= TFE_MAX_QUEUES || !fe->vrings[index].size || !fe->mem) {
        return -EINVAL;
    }
    vr = &fe->vrings[index];
    arena = tfe_mem_alloc(fe->mem, arena_region, arena_size, 4096);
    if (!arena) {
        return -ENOMEM;
    }
    vq->fe = fe;
    vq->mem = fe->mem;
    vq->index = index;
    vq->size = vr->size;
    vq->desc = vr->desc;
    vq->avail_flags = vr->avail;
    vq->avail_idx = vq->avail_flags + 1;
    vq->avail_ring = vq->avail_flags + 2;
    vq->used_flags = vr->used;
    vq->used_idx = vq->used_flags + 1;
    vq->used_ring = (struct tfe_used_elem *) (vq->used_flags + 2);
    vq->free_next = calloc(vq->size, sizeof *vq->free_next);
    vq->chains = calloc(vq->size, sizeof *vq->chains);
    vq->order = calloc(vq->size, sizeof *vq->order);
    if (!vq->free_next || !vq->chains || !vq->order) {
        abort();
    }
    vq->arena_gpa = tfe_mem_va_to_gpa(fe->mem, arena);
    vq->iova_offset = fe->iova_offset;
    vq->arena_size = arena_size;
    vq->mrg = (fe->features & FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF)) != 0;
    vq->packed = (fe->features & FEATURE_BIT(VIRTIO_F_RING_PACKED)) != 0;
    vq->in_order = (fe->features & FEATURE_BIT(VIRTIO_F_IN_ORDER)) != 0;
    vq->pdesc = vr->desc;
    vq->driver_event = vr->avail;
    vq->device_event = vr->used;
    vq->hdr_len = (vq->mrg || fe->features & FEATURE_BIT(VIRTIO_F_VERSION_1)
                   ? 12 : 10);
    vq_reset_state__(vq);
    return 0;
}

/* Frees what tfe_vq_init() allocated outside guest memory. */
void
tfe_vq_destroy(struct tfe_vq *vq)
{
    free(vq->free_next);
    free(vq->chains);
    free(vq->order);
    vq->free_next = NULL;
    vq->chains = NULL;
    vq->order = NULL;
}

/* Returns the guest physical address of 'size' bytes aligned to 'align'
 * in 'vq''s arena.  The arena is reused circularly; the bytes count as in
 * flight, and are charged to the next chain added or claimed.  Aborts if
 * the arena is too small for what is in flight: a test bug. */
uint64_t
tfe_vq_alloc(struct tfe_vq *vq, uint64_t size, uint64_t align)
{
    uint64_t off = (vq->arena_next + align - 1) & ~(align - 1);
    /* Bytes skipped (alignment, or the tail when wrapping) count as in
     * flight with the allocation: chains complete in the order they took
     * arena space, so what is in flight is then one circular stretch, and
     * "in flight + wanted <= size" really means the new bytes are free.
     * (Counting only the bytes handed out let a larger allocation after a
     * wrap overlap the oldest buffer still in flight.) */
    uint64_t skipped = off - vq->arena_next;

    if (off > vq->arena_size || size > vq->arena_size - off) {
        skipped = vq->arena_size - vq->arena_next;
        off = 0;
    }
    if (size > vq->arena_size
        || vq->arena_inflight + skipped + size > vq->arena_size) {
        fprintf(stderr, "tfe: vring %"PRIu32" arena of %"PRIu64" bytes is "
                "full (%"PRIu64" in flight, %"PRIu64" wanted)\n", vq->index,
                vq->arena_size, vq->arena_inflight, skipped + size);
        abort();
    }
    vq->arena_next = off + size;
    vq->arena_inflight += skipped + size;
    return vq->arena_gpa + off;
}

/* Returns the arena bytes allocated since the last chain took its share,
 * which the caller charges to a chain. */
static uint64_t
take_arena_pending__(struct tfe_vq *vq)
{
    uint64_t pending = vq->arena_inflight - vq->arena_held;

    vq->arena_held += pending;
    return pending;
}

struct tfe_desc *
tfe_vq_desc(struct tfe_vq *vq, unsigned int i)
{
    return &vq->desc[i % vq->size];
}

/* Takes a descriptor off the free list.  Returns its index or -ENOSPC. */
int
tfe_vq_take_desc(struct tfe_vq *vq)
{
    unsigned int id = vq->free_head;

    if (!vq->n_free) {
        return -ENOSPC;
    }
    vq->free_head = vq->free_next[id];
    vq->n_free--;
    return id;
}

static void
put_desc__(struct tfe_vq *vq, uint16_t id)
{
    vq->free_next[id] = vq->free_head;
    vq->free_head = id;
    vq->n_free++;
}

/* In order: remembers that 'id' was made available, after the others. */
static void
order_push__(struct tfe_vq *vq, uint16_t id)
{
    if (vq->in_order && vq->order_n < vq->size) {
        vq->order[(vq->order_head + vq->order_n++) % vq->size] = id;
    }
}

/* In order: returns how far from the oldest chain in flight 'id' is, or
 * -1 if it is none in flight. */
static int
order_find__(const struct tfe_vq *vq, uint16_t id)
{
    for (unsigned int k = 0; k < vq->order_n; k++) {
        if (vq->order[(vq->order_head + k) % vq->size] == id) {
            return k;
        }
    }
    return -1;
}

/* In order: the oldest chain in flight, taken. */
static uint16_t
order_pop__(struct tfe_vq *vq)
{
    uint16_t id = vq->order[vq->order_head];

    vq->order_head = (vq->order_head + 1) % vq->size;
    vq->order_n--;
    return id;
}

/* Records that the chain at 'head' holds descriptors 'ids' (returned to
 * the free list when the engine uses 'head') and the arena bytes
 * allocated since the last chain.  A 'head' >= the queue size records
 * nothing. */
void
tfe_vq_claim(struct tfe_vq *vq, uint16_t head, const uint16_t *ids,
             size_t n)
{
    struct tfe_vq_chain *c;

    if (head >= vq->size || n > TFE_VQ_MAX_SEGS) {
        return;
    }
    c = &vq->chains[head];
    c->arena_bytes = take_arena_pending__(vq);
    c->in_use = true;
    c->n_ids = n;
    memcpy(c->ids, ids, n * sizeof *ids);
    c->n_segs = 0;
}

/* Makes 'head' available: avail->ring[avail->idx % size] = head, then
 * avail->idx + 1. */
void
tfe_vq_push_avail(struct tfe_vq *vq, uint16_t head)
{
    order_push__(vq, head);
    vq->avail_ring[vq->next_avail % vq->size] = head;
    vq->next_avail++;
    /* Pairs with the engine's acquire of avail->idx: the ring entry and
     * the descriptors are visible before the new index. */
    store_release16(vq->avail_idx, vq->next_avail);
}

/* Writes 'idx' into avail->idx without touching our own idea of it. */
void
tfe_vq_set_avail_idx(struct tfe_vq *vq, uint16_t idx)
{
    store_release16(vq->avail_idx, idx);
}

void
tfe_vq_set_avail_flags(struct tfe_vq *vq, uint16_t flags)
{
    store_release16(vq->avail_flags, flags);
}

/* used_event: the avail ring entry after the last (VIRTIO 1.2 §2.7.10). */
void
tfe_vq_set_used_event(struct tfe_vq *vq, uint16_t v)
{
    store_release16(&vq->avail_ring[vq->size], v);
}

uint16_t
tfe_vq_used_flags(const struct tfe_vq *vq)
{
    return load_acquire16(vq->used_flags);
}

/* avail_event: the used ring entry after the last (VIRTIO 1.2 §2.7.10). */
uint16_t
tfe_vq_avail_event(const struct tfe_vq *vq)
{
    return load_acquire16((const uint16_t *) &vq->used_ring[vq->size]);
}

uint16_t
tfe_vq_used_idx(const struct tfe_vq *vq)
{
    return load_acquire16(vq->used_idx);
}

uint64_t
tfe_vq_used_gpa(const struct tfe_vq *vq)
{
    return tfe_mem_va_to_gpa(vq->mem, vq->used_flags);
}

/* Reads and clears the vring's call eventfd: returns how many times the
 * engine signalled it since the last call (0 if never). */
uint64_t
tfe_vq_calls(const struct tfe_vq *vq)
{
    int fd = vq->fe->vrings[vq->index].call_fd;
    uint64_t n = 0;

    if (fd < 0 || read(fd, &n, sizeof n) != sizeof n) {
        return 0;
    }
    return n;
}

/* The guest driver of a packed virtqueue (VIRTIO 1.2 §2.8). */

/* Advances ring position '*pos' with wrap counter '*wrap' by 'n' slots,
 * flipping the counter at the end of the ring (§2.8.1). */
static void
padvance__(const struct tfe_vq *vq, uint16_t *pos, bool *wrap,
           unsigned int n)
{
    unsigned int p = *pos + n % vq->size;

    if (n >= vq->size) {
        /* Whole laps flip the counter once each. */
        *wrap ^= (n / vq->size) & 1;
    }
    if (p >= vq->size) {
        p -= vq->size;
        *wrap = !*wrap;
    }
    *pos = p;
}

/* Returns the ring position 'k' slots past the driver's, and its wrap
 * counter in '*wrapp'. */
static uint16_t
pslot__(const struct tfe_vq *vq, unsigned int k, bool *wrapp)
{
    uint16_t pos = vq->next_avail;
    bool wrap = vq->avail_wrap;

    padvance__(vq, &pos, &wrap, k);
    *wrapp = wrap;
    return pos;
}

/* The AVAIL and USED bits that make a descriptor available in a lap with
 * wrap counter 'wrap' (§2.8.1: AVAIL equal to it, USED not). */
static uint16_t
pavail_bits__(bool wrap)
{
    return wrap ? TFE_PDESC_F_AVAIL : TFE_PDESC_F_USED;
}

/* True if 'flags' mark a descriptor used in a lap with wrap counter
 * 'wrap' (§2.8.1: AVAIL and USED both equal to it). */
static bool
pis_used__(uint16_t flags, bool wrap)
{
    return !!(flags & TFE_PDESC_F_AVAIL) == wrap
           && !!(flags & TFE_PDESC_F_USED) == wrap;
}

/* Returns the descriptor 'k' slots past the driver's position. */
struct tfe_pdesc *
tfe_vq_pdesc(struct tfe_vq *vq, unsigned int k)
{
    bool wrap;

    return &vq->pdesc[pslot__(vq, k, &wrap)];
}

/* Returns the AVAIL/USED flag bits that make the descriptor 'k' slots past
 * the driver's position available. */
uint16_t
tfe_vq_pavail(const struct tfe_vq *vq, unsigned int k)
{
    bool wrap;

    pslot__(vq, k, &wrap);
    return pavail_bits__(wrap);
}

/* Writes the descriptor 'k' slots past the driver's position: 'addr',
 * 'len' and 'id', then 'flags' exactly as given (OR in tfe_vq_pavail() to
 * make it available) with a release store, so that the fields are visible
 * before the flags (§2.8.21). */
void
tfe_vq_pwrite(struct tfe_vq *vq, unsigned int k, uint64_t addr,
              uint32_t len, uint16_t id, uint16_t flags)
{
    struct tfe_pdesc *d = tfe_vq_pdesc(vq, k);

    d->addr = addr;
    d->len = len;
    d->id = id;
    __atomic_store_n(&d->flags, flags, __ATOMIC_RELEASE);
}

/* Takes buffer id 'id' for a chain of 'n_slots' ring slots at the driver's
 * position, charging it the arena bytes allocated since the last chain,
 * and moves the driver's position past it.  An id at or above the queue
 * size, or one already in flight, is kept aside so that its used
 * descriptor can still be matched (tfe_vq_get_used() returns -EPROTO for
 * it). */
void
tfe_vq_pclaim(struct tfe_vq *vq, uint16_t id, unsigned int n_slots)
{
    uint64_t bytes = take_arena_pending__(vq);

    if (id < vq->size && !vq->chains[id].in_use) {
        struct tfe_vq_chain *c = &vq->chains[id];

        order_push__(vq, id);
        c->in_use = true;
        c->n_ids = n_slots;
        c->n_segs = 0;
        c->arena_bytes = bytes;
        vq->n_free_ids--;
    } else if (vq->n_extra < ARRAY_SIZE(vq->extra)) {
        vq->extra[vq->n_extra++] = (struct tfe_vq_extra) {
            .id = id, .n_slots = n_slots, .arena_bytes = bytes,
        };
    } else {
        fprintf(stderr, "tfe: too many odd buffer ids in flight\n");
        abort();
    }
    padvance__(vq, &vq->next_avail, &vq->avail_wrap, n_slots);
    vq->n_free -= MIN(n_slots, vq->n_free);
}

/* Sets the driver's positions, on a ring with nothing in flight, to what
 * SET_VRING_BASE value 'base' says: position in bits 0..14, wrap counter
 * in bit 15.  Rewrites every descriptor's flags as a ring that got there
 * would have them: used in this lap before the position, used in the
 * previous lap from it on.  (A zeroed ring is that for position 0 with
 * wrap counter 1, but not for others: in a lap with wrap counter 0, zero
 * flags mean used.) */
void
tfe_vq_pset_position(struct tfe_vq *vq, uint32_t base)
{
    uint16_t pos = (base & 0x7fff) % vq->size;
    bool wrap = (base >> 15) & 1;

    vq->next_avail = vq->next_used = pos;
    vq->avail_wrap = vq->used_wrap = wrap;
    for (unsigned int i = 0; i < vq->size; i++) {
        bool w = i < pos ? wrap : !wrap;

        __atomic_store_n(&vq->pdesc[i].flags,
                         w ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0,
                         __ATOMIC_RELEASE);
    }
}

/* Returns the driver's positions as QEMU encodes them for SET_VRING_BASE:
 * the next avail one in bits 0..15, the next used one in bits 16..31, each
 * an index with its wrap counter in the top bit. */
uint32_t
tfe_vq_pbase(const struct tfe_vq *vq)
{
    return (vq->next_avail | ((uint32_t) vq->avail_wrap << 15))
           | (vq->next_used | ((uint32_t) vq->used_wrap << 15)) << 16;
}

/* Writes the driver event suppression area (§2.8.10): 'off_wrap', then
 * 'flags' (TFE_PEVENT_*). */
void
tfe_vq_pset_event(struct tfe_vq *vq, uint16_t flags, uint16_t off_wrap)
{
    __atomic_store_n(&vq->driver_event->off_wrap, off_wrap,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&vq->driver_event->flags, flags, __ATOMIC_RELEASE);
    /* Pairs with the device's barrier between writing used descriptors
     * and reading these fields. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Returns the flags of the device event suppression area: what the
 * engine asks of our kicks. */
uint16_t
tfe_vq_pdevice_flags(const struct tfe_vq *vq)
{
    return __atomic_load_n(&vq->device_event->flags, __ATOMIC_ACQUIRE);
}

/* Returns the guest physical address of the descriptor table (the packed
 * ring). */
uint64_t
tfe_vq_ring_gpa(const struct tfe_vq *vq)
{
    return tfe_mem_va_to_gpa(vq->mem, vq->desc);
}

/* Takes a buffer id not in flight, or returns -ENOSPC. */
static int
ptake_id__(struct tfe_vq *vq)
{
    for (unsigned int i = 0; i < vq->size; i++) {
        unsigned int id = (vq->id_cursor + i) % vq->size;

        if (!vq->chains[id].in_use) {
            /* Step on by more than one, so ids keep shuffling against
             * ring positions. */
            vq->id_cursor = (id + 3) % vq->size;
            return id;
        }
    }
    return -ENOSPC;
}

/* tfe_vq_add_chain() for a packed ring. */
static int
add_chain_packed__(struct tfe_vq *vq, const struct tfe_seg *segs, size_t n,
                   bool writable, const struct tfe_chain_opts *opts)
{
    uint16_t flags = writable ? TFE_DESC_F_WRITE : 0;
    size_t n_slots = opts->indirect ? 1 : n;
    struct tfe_vq_chain *c;
    int id;

    if (vq->n_free < n_slots || !vq->n_free_ids) {
        return -ENOSPC;
    }
    id = ptake_id__(vq);
    if (id < 0) {
        return id;
    }
    if (opts->indirect) {
        /* §2.8.19: a table of descriptors used in order; no NEXT. */
        struct tfe_pdesc table[TFE_VQ_MAX_SEGS];
        uint64_t table_gpa = (opts->indirect_gpa ? opts->indirect_gpa
                              : tfe_vq_alloc(vq, sizeof table[0] * n, 16));

        for (size_t i = 0; i < n; i++) {
            table[i] = (struct tfe_pdesc) {
                .addr = segs[i].gpa + vq->iova_offset, .len = segs[i].len,
                .flags = flags,
            };
        }
        if (!tfe_mem_write(vq->mem, table_gpa, table, sizeof table[0] * n)) {
            return -EFAULT;
        }
        tfe_vq_pwrite(vq, 0, table_gpa + vq->iova_offset,
                      sizeof table[0] * n, id,
                      TFE_DESC_F_INDIRECT | tfe_vq_pavail(vq, 0));
    } else {
        /* Every descriptor but the head first, then the head, whose flags
         * make the whole chain available at once (§2.8.21). */
        for (size_t i = n; i-- > 0;) {
            uint16_t f = flags | (i + 1 < n ? TFE_DESC_F_NEXT : 0);
            uint16_t d_id = (i + 1 == n || vq->same_ids
                             ? id : TFE_PACKED_ID_POISON);

            tfe_vq_pwrite(vq, i, segs[i].gpa + vq->iova_offset,
                          segs[i].len, d_id, f | tfe_vq_pavail(vq, i));
        }
    }
    tfe_vq_pclaim(vq, id, n_slots);
    c = &vq->chains[id];
    c->n_segs = n;
    memcpy(c->segs, segs, n * sizeof *segs);
    return id;
}

/* Returns how many ring slots the chain with buffer id 'id' took, and
 * whether it is an extra (odd id).  Returns 0 if no chain has that id. */
static unsigned int
pchain_slots__(const struct tfe_vq *vq, uint16_t id, size_t *extrap)
{
    *extrap = SIZE_MAX;
    if (id < vq->size && vq->chains[id].in_use) {
        return vq->chains[id].n_ids;
    }
    for (size_t i = 0; i < vq->n_extra; i++) {
        if (vq->extra[i].id == id) {
            *extrap = i;
            return vq->extra[i].n_slots;
        }
    }
    return 0;
}

static unsigned int
n_used_packed__(const struct tfe_vq *vq)
{
    uint16_t pos = vq->next_used;
    bool wrap = vq->used_wrap;
    unsigned int n = 0;

    for (unsigned int seen = 0; seen < vq->size; n++) {
        const struct tfe_pdesc *d = &vq->pdesc[pos];
        size_t extra;
        unsigned int slots;

        if (!pis_used__(__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE),
                        wrap)) {
            break;
        }
        slots = pchain_slots__(vq, d->id, &extra);
        slots = slots ? slots : 1;
        seen += slots;
        padvance__(vq, &pos, &wrap, slots);
    }
    return n;
}

static int
peek_used_packed__(const struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    const struct tfe_pdesc *d = &vq->pdesc[vq->next_used];

    /* The flags with acquire: the id and length after them. */
    if (!pis_used__(__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE),
                    vq->used_wrap)) {
        return -EAGAIN;
    }
    elem->id = d->id;
    elem->len = d->len;
    return 0;
}

static int
get_used_packed__(struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    const struct tfe_pdesc *d = &vq->pdesc[vq->next_used];
    unsigned int slots;
    size_t extra;

    if (vq->batch_left) {
        /* The next chain of a batch: its slots hold no used descriptor. */
        elem->id = order_pop__(vq);
        elem->len = --vq->batch_left ? 0 : vq->batch_len;
    } else if (peek_used_packed__(vq, elem)) {
        return -EAGAIN;
    } else {
        vq->last_used_flags = d->flags;
        if (vq->in_order) {
            int k = order_find__(vq, elem->id);

            vq->last_batch = k < 0 ? 1 : k + 1;
            if (k < 0) {
                vq->n_unordered++;
            } else {
                /* The batch's chains, oldest first. */
                vq->batch_len = elem->len;
                vq->batch_left = k;
                elem->id = order_pop__(vq);
                elem->len = k ? 0 : elem->len;
            }
        }
    }
    slots = pchain_slots__(vq, elem->id, &extra);
    if (!slots) {
        fprintf(stderr, "tfe: vring %"PRIu32" used buffer id %"PRIu32
                " is not in flight\n", vq->index, elem->id);
        return -EPROTO;
    }
    padvance__(vq, &vq->next_used, &vq->used_wrap, slots);
    vq->n_free += slots;
    if (extra != SIZE_MAX) {
        vq->arena_inflight -= vq->extra[extra].arena_bytes;
        vq->arena_held -= vq->extra[extra].arena_bytes;
        vq->extra[extra] = vq->extra[--vq->n_extra];
        return -EPROTO;
    }

    struct tfe_vq_chain *c = &vq->chains[elem->id];
    c->in_use = false;
    vq->n_free_ids++;
    vq->arena_inflight -= c->arena_bytes;
    vq->arena_held -= c->arena_bytes;
    c->arena_bytes = 0;
    return 0;
}

/* Makes available a chain of the 'n' buffers in 'segs', device-writable if
 * 'writable', as direct descriptors or, if 'opts->indirect', through an
 * indirect table of 'n' entries at 'opts->indirect_gpa' (or in the arena).
 * 'opts' may be null.  Returns the head or a negative errno value
 * (-ENOSPC: not enough free descriptors). */
int
tfe_vq_add_chain(struct tfe_vq *vq, const struct tfe_seg *segs, size_t n,
                 bool writable, const struct tfe_chain_opts *opts)
{
    static const struct tfe_chain_opts defaults;
    uint16_t flags = writable ? TFE_DESC_F_WRITE : 0;
    uint16_t ids[TFE_VQ_MAX_SEGS];
    size_t n_ids = 0;
    struct tfe_vq_chain *c;

    opts = opts ? opts : &defaults;
    if (!n || n > TFE_VQ_MAX_SEGS) {
        return -EINVAL;
    }
    if (vq->packed) {
        return add_chain_packed__(vq, segs, n, writable, opts);
    }
    if (vq->n_free < (opts->indirect ? 1 : n)) {
        return -ENOSPC;
    }
    if (opts->indirect) {
        struct tfe_desc table[TFE_VQ_MAX_SEGS];
        uint64_t table_gpa = (opts->indirect_gpa ? opts->indirect_gpa
                              : tfe_vq_alloc(vq, sizeof table[0] * n, 16));

        for (size_t i = 0; i < n; i++) {
            table[i] = (struct tfe_desc) {
                .addr = segs[i].gpa + vq->iova_offset, .len = segs[i].len,
                .flags = flags | (i + 1 < n ? TFE_DESC_F_NEXT : 0),
                .next = i + 1 < n ? i + 1 : 0,
            };
        }
        if (!tfe_mem_write(vq->mem, table_gpa, table, sizeof table[0] * n)) {
            return -EFAULT;
        }
        ids[n_ids++] = tfe_vq_take_desc(vq);
        vq->desc[ids[0]] = (struct tfe_desc) {
            .addr = table_gpa + vq->iova_offset, .len = sizeof table[0] * n,
            .flags = TFE_DESC_F_INDIRECT,
        };
    } else {
        for (size_t i = 0; i < n; i++) {
            ids[n_ids++] = tfe_vq_take_desc(vq);
        }
        for (size_t i = 0; i < n; i++) {
            vq->desc[ids[i]] = (struct tfe_desc) {
                .addr = segs[i].gpa + vq->iova_offset, .len = segs[i].len,
                .flags = flags | (i + 1 < n ? TFE_DESC_F_NEXT : 0),
                .next = i + 1 < n ? ids[i + 1] : 0,
            };
        }
    }
    tfe_vq_claim(vq, ids[0], ids, n_ids);
    c = &vq->chains[ids[0]];
    c->n_segs = n;
    memcpy(c->segs, segs, n * sizeof *segs);
    tfe_vq_push_avail(vq, ids[0]);
    return ids[0];
}

/* Splits 'total' bytes into pieces as 'opts' says and places them: all
 * contiguous from 'opts->gpa', or each apart in the arena.  Fills 'segs'
 * and returns how many. */
static size_t
place_buf__(struct tfe_vq *vq, size_t total, const struct tfe_buf_opts *opts,
            struct tfe_seg segs[TFE_VQ_MAX_SEGS])
{
    size_t n = opts->n_descs ? opts->n_descs : 1;
    size_t left = total;
    uint64_t gpa = opts->gpa;

    if (n > TFE_VQ_MAX_SEGS) {
        fprintf(stderr, "tfe: %zu descriptors are too many\n", n);
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;

        if (i + 1 == n) {
            len = left;
        } else if (opts->split) {
            len = MIN(opts->split[i], left);
        } else {
            len = total / n;
        }
        left -= len;
        segs[i].len = len;
        if (opts->gpa) {
            segs[i].gpa = gpa;
            gpa += len;
        } else {
            /* A few bytes apart, so that an engine that assumes pieces
             * are contiguous reads or writes the wrong bytes. */
            segs[i].gpa = tfe_vq_alloc(vq, len + 8, 64);
        }
    }
    return n;
}

/* Makes available a transmit chain holding the 'hdr_len' bytes of 'hdr'
 * followed by the 'len' bytes of 'pkt', laid out as 'opts' says ('opts'
 * may be null: one descriptor in the arena).  Returns the head or a
 * negative errno value. */
int
tfe_vq_post_tx(struct tfe_vq *vq, const void *hdr, size_t hdr_len,
               const void *pkt, size_t len, const struct tfe_buf_opts *opts)
{
    static const struct tfe_buf_opts defaults;
    struct tfe_seg segs[TFE_VQ_MAX_SEGS];
    struct tfe_chain_opts copts;
    uint8_t *bytes = malloc(hdr_len + len + 1);
    size_t n, off = 0;
    int head;

    opts = opts ? opts : &defaults;
    if (!bytes) {
        abort();
    }
    memcpy(bytes, hdr, hdr_len);
    memcpy(bytes + hdr_len, pkt, len);
    n = place_buf__(vq, hdr_len + len, opts, segs);
    for (size_t i = 0; i < n; i++) {
        if (!tfe_mem_write(vq->mem, segs[i].gpa, bytes + off, segs[i].len)) {
            free(bytes);
            return -EFAULT;
        }
        off += segs[i].len;
    }
    free(bytes);
    copts = (struct tfe_chain_opts) {
        .indirect = opts->indirect, .indirect_gpa = opts->indirect_gpa,
    };
    head = tfe_vq_add_chain(vq, segs, n, false, &copts);
    return head;
}

/* Makes available a receive chain of 'len' writable bytes laid out as
 * 'opts' says ('opts' may be null), filled with 0xa5 so that a test can
 * tell what the engine wrote.  Returns the head or a negative errno
 * value. */
int
tfe_vq_post_rx(struct tfe_vq *vq, uint32_t len,
               const struct tfe_buf_opts *opts)
{
    static const struct tfe_buf_opts defaults;
    struct tfe_seg segs[TFE_VQ_MAX_SEGS];
    struct tfe_chain_opts copts;
    size_t n;

    opts = opts ? opts : &defaults;
    n = place_buf__(vq, len, opts, segs);
    for (size_t i = 0; i < n; i++) {
        uint8_t *poison = malloc(segs[i].len + 1);

        if (!poison) {
            abort();
        }
        memset(poison, 0xa5, segs[i].len);
        if (!tfe_mem_write(vq->mem, segs[i].gpa, poison, segs[i].len)) {
            free(poison);
            return -EFAULT;
        }
        free(poison);
    }
    copts = (struct tfe_chain_opts) {
        .indirect = opts->indirect, .indirect_gpa = opts->indirect_gpa,
    };
    return tfe_vq_add_chain(vq, segs, n, true, &copts);
}

/* Returns how many used entries the engine has published that we have
 * not read. */
unsigned int
tfe_vq_n_used(const struct tfe_vq *vq)
{
    if (vq->packed) {
        return n_used_packed__(vq);
    }
    return (uint16_t) (tfe_vq_used_idx(vq) - vq->next_used);
}

/* Reads the next used entry into '*elem' and returns its chain's
 * descriptors to the free list.  Returns 0, -EAGAIN if there is none, or
 * -EPROTO (with '*elem' filled in) if its id is not the head of a chain in
 * flight. */
int
tfe_vq_get_used(struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    struct tfe_vq_chain *c;

    if (vq->packed) {
        return get_used_packed__(vq, elem);
    }
    /* tfe_vq_n_used() acquires used->idx: the entry is read after it. */
    if (!tfe_vq_n_used(vq)) {
        return -EAGAIN;
    }
    if (vq->batch_left) {
        /* The next chain of a batch: its used entry was not written. */
        elem->id = order_pop__(vq);
        elem->len = --vq->batch_left ? 0 : vq->batch_len;
    } else {
        *elem = vq->used_ring[vq->next_used % vq->size];
        if (vq->in_order) {
            int k = order_find__(vq, elem->id);

            vq->last_batch = k < 0 ? 1 : k + 1;
            if (k < 0 || (unsigned int) k >= tfe_vq_n_used(vq)) {
                /* Unknown, or a batch longer than the used index says. */
                vq->n_unordered++;
            } else {
                vq->batch_len = elem->len;
                vq->batch_left = k;
                elem->id = order_pop__(vq);
                elem->len = k ? 0 : elem->len;
            }
        }
    }
    vq->next_used++;
    if (elem->id >= vq->size || !vq->chains[elem->id].in_use) {
        return -EPROTO;
    }
    c = &vq->chains[elem->id];
    for (size_t i = 0; i < c->n_ids; i++) {
        put_desc__(vq, c->ids[i]);
    }
    c->in_use = false;
    vq->arena_inflight -= c->arena_bytes;
    vq->arena_held -= c->arena_bytes;
    c->arena_bytes = 0;
    return 0;
}

/* Stores in '*elem' the next used entry without taking it.  Returns 0 or
 * -EAGAIN if there is none. */
int
tfe_vq_peek_used(const struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    if (vq->batch_left) {
        elem->id = vq->order[vq->order_head];
        elem->len = vq->batch_left == 1 ? vq->batch_len : 0;
        return 0;
    }
    if (vq->packed) {
        return peek_used_packed__(vq, elem);
    }
    if (!tfe_vq_n_used(vq)) {
        return -EAGAIN;
    }
    *elem = vq->used_ring[vq->next_used % vq->size];
    return 0;
}

/* Copies up to 'len' bytes of the buffers of the chain at 'head' (as last
 * built by tfe_vq_add_chain(); still readable just after the chain is
 * used) into 'buf'.  Returns how many bytes were copied. */
size_t
tfe_vq_read_chain(const struct tfe_vq *vq, uint16_t head, size_t len,
                  uint8_t *buf)
{
    const struct tfe_vq_chain *c = &vq->chains[head % vq->size];
    size_t done = 0;

    for (size_t i = 0; i < c->n_segs && done < len; i++) {
        size_t n = MIN(len - done, c->segs[i].len);

        if (!tfe_mem_read(vq->mem, c->segs[i].gpa, buf + done, n)) {
            break;
        }
        done += n;
    }
    return done;
}

/* Receives one packet from a receive vring: the next used entry and, with
 * MRG_RXBUF, as many more as the num_buffers in its header says.  Copies
 * the header and packet, up to 'size' bytes, into 'buf' and stores the
 * length the engine reported in '*lenp' and the buffers used in
 * '*n_bufsp'.  Returns 0, -EAGAIN if nothing was used, or -EPROTO for a
 * malformed result (a bad id, a short first buffer, num_buffers of 0 or
 * more than were used). */
int
tfe_vq_recv(struct tfe_vq *vq, uint8_t *buf, size_t size, size_t *lenp,
            unsigned int *n_bufsp)
{
    struct tfe_used_elem elem;
    unsigned int n_bufs = 1;
    size_t total = 0;
    int error;

    *lenp = 0;
    *n_bufsp = 0;
    for (unsigned int i = 0; i < n_bufs; i++) {
        error = tfe_vq_get_used(vq, &elem);
        if (error == -EAGAIN && i) {
            fprintf(stderr, "tfe: num_buffers %u but only %u used\n",
                    n_bufs, i);
            return -EPROTO;
        } else if (error) {
            return error;
        }
        if (total < size) {
            tfe_vq_read_chain(vq, elem.id, MIN(elem.len, size - total),
                              buf + total);
        }
        total += elem.len;
        if (!i && vq->mrg) {
            uint16_t nb;

            if (elem.len < 12 || size < 12) {
                fprintf(stderr, "tfe: first buffer of %"PRIu32" bytes\n",
                        elem.len);
                return -EPROTO;
            }
            memcpy(&nb, buf + 10, sizeof nb);
            if (!nb) {
                fprintf(stderr, "tfe: num_buffers is 0\n");
                return -EPROTO;
            }
            n_bufs = nb;
        }
    }
    *lenp = total;
    *n_bufsp = n_bufs;
    return 0;
}
