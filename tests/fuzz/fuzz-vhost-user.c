/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the vhost-user message stream, through the real reader
 * (lib/vhost-user-msg.c), dispatch table and handlers (lib/vhost-user.c)
 * and connection code (lib/vhost-port.c).  An engine with one server port
 * runs in this thread; each input is one frontend connection that sends
 * fuzzed bytes in fuzzed pieces, each piece with a fuzzed number and kind
 * of fds attached, and reads whatever the engine answers.
 *
 * After each input the connection is closed and the engine must notice
 * (a stall is a finding), and the process must hold exactly the fds and no
 * more guest-memory mappings than before it: a leak is a finding, as is
 * any sanitizer report.
 *
 * Input: records of
 *
 *     u8   control: bits 0-3 the number of fds to attach (0..15: more
 *          than the 8 the protocol allows, too), bits 4-5 their kind
 *          (0 a 64 KiB memfd, 1 an eventfd, 2 an empty memfd, 3 a socket),
 *          bit 6 let the engine run before this piece is sent (so that
 *          messages arrive in parts), bit 7 end the input here
 *     u16  piece length (at most what is left)
 *     ...  the bytes
 */

#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "fuzz-input.h"
#include "fuzz-mem.h"
#include "ovs-vhost/vhost.h"
#include "util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

#define FUZZ_VU_MEM_SIZE 0x10000
#define FUZZ_VU_MAX_PIECES 64

static struct vhost_engine *fuzz_vu_engine;
static struct vhost_port *fuzz_vu_port;
static char fuzz_vu_path[108];
static int fuzz_vu_fds0;

static void
fuzz_vu_log__(enum vhost_log_level level, const char *msg, void *aux)
{
    /* Quiet: the engine logs every rejected message. */
}

/* Counts this process's fds, but not pipes: libFuzzer and the sanitizers
 * start a symbolizer behind a pair of pipes when they first print a
 * function name, which is not the engine's doing. */
static int
fuzz_vu_count_fds__(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;

    if (!d) {
        abort();
    }
    while ((de = readdir(d))) {
        char target[64];
        ssize_t len = readlinkat(dirfd(d), de->d_name, target,
                                 sizeof target - 1);

        if (len >= 0) {
            target[len] = '\0';
            if (!strncmp(target, "pipe:", 5)) {
                continue;
            }
        }
        n++;
    }
    closedir(d);
    return n;
}

static void
fuzz_vu_init__(void)
{
    struct vhost_port_options opts;

    if (fuzz_vu_engine) {
        return;
    }
    vhost_log_set_handler(fuzz_vu_log__, NULL);
    snprintf(fuzz_vu_path, sizeof fuzz_vu_path, "/tmp/fuzz-vu-%ld.sock",
             (long) getpid());
    if (vhost_engine_create(&fuzz_vu_engine)) {
        abort();
    }
    vhost_port_options_init(&opts);
    opts.name = "fuzz";
    opts.path = fuzz_vu_path;
    opts.mode = VHOST_PORT_SERVER;
    opts.max_queue_pairs = 4;
    opts.features |= FEATURE_BIT(VIRTIO_F_RING_PACKED)
                     | FEATURE_BIT(VHOST_F_LOG_ALL);
    if (vhost_port_create(fuzz_vu_engine, &opts, &fuzz_vu_port)) {
        abort();
    }
    fuzz_vu_fds0 = fuzz_vu_count_fds__();
}

static int
fuzz_vu_make_fd__(unsigned int kind)
{
    switch (kind) {
    case 0:
    case 2: {
        int fd = memfd_create("fuzz-vu", MFD_CLOEXEC);
        if (fd >= 0 && kind == 0 && ftruncate(fd, FUZZ_VU_MEM_SIZE)) {
            abort();
        }
        return fd;
    }
    case 1:
        return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    default: {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
            return -1;
        }
        close(sv[1]);
        return sv[0];
    }
    }
}

/* Reads and discards what the engine sent, closing any fds. */
static void
fuzz_vu_drain__(int sock)
{
    for (;;) {
        char buf[4096];
        union {
            char buf[CMSG_SPACE(16 * sizeof(int))];
            struct cmsghdr align;
        } control;
        struct iovec iov = { buf, sizeof buf };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = control.buf, .msg_controllen = sizeof control.buf,
        };

        ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n <= 0) {
            return;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
             c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_type == SCM_RIGHTS) {
                FUZZ_CHECK(!"the engine never sends fds");
            }
        }
    }
}

static void
fuzz_vu_run_engine__(int sock, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        vhost_engine_run(fuzz_vu_engine, 0);
        fuzz_vu_drain__(sock);
    }
}

/* Sends 'len' bytes of 'data' with 'n_fds' fds of 'kind'.  Returns false
 * if the engine closed the connection. */
static bool
fuzz_vu_send__(int sock, const uint8_t *data, size_t len, unsigned int n_fds,
               unsigned int kind)
{
    union {
        char buf[CMSG_SPACE(16 * sizeof(int))];
        struct cmsghdr align;
    } control;
    int fds[16];
    size_t sent = 0;
    bool ok = true;

    for (unsigned int i = 0; i < n_fds; i++) {
        fds[i] = fuzz_vu_make_fd__(kind);
        FUZZ_CHECK(fds[i] >= 0);
    }
    /* fds travel with the first byte; a piece of no bytes sends none. */
    while (ok && sent < len) {
        struct iovec iov = {
            .iov_base = (void *) (data + sent),
            .iov_len = len - sent,
        };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (!sent && n_fds) {
            memset(&control, 0, sizeof control);
            mh.msg_control = control.buf;
            mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
            memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        }
        ssize_t n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            sent += n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            fuzz_vu_run_engine__(sock, 1);
        } else {
            ok = false;
        }
    }
    for (unsigned int i = 0; i < n_fds; i++) {
        close(fds[i]);
    }
    return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct vhost_port_info info;
    int sock;

    fuzz_vu_init__();
    vhost_port_get_info(fuzz_vu_port, &info);
    uint64_t disconnects0 = info.counters.disconnects;

    sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memcpy(sun.sun_path, fuzz_vu_path, strlen(fuzz_vu_path));
    FUZZ_CHECK(sock >= 0 && !connect(sock, (struct sockaddr *) &sun,
                                     sizeof sun));
    fuzz_vu_run_engine__(sock, 1);

    for (int i = 0; i < FUZZ_VU_MAX_PIECES && in.n; i++) {
        uint8_t ctl = fuzz_input_u8(&in);
        size_t len = fuzz_input_u16(&in);

        len = MIN(len, in.n);
        const uint8_t *piece = in.p;

        in.p += len;
        in.n -= len;
        if (ctl & 0x40) {
            fuzz_vu_run_engine__(sock, 1);
        }
        if (!fuzz_vu_send__(sock, piece, len, ctl & 0xf, (ctl >> 4) & 3)
            || (ctl & 0x80)) {
            break;
        }
    }

    /* The frontend goes; the engine must see it and let go of
     * everything. */
    shutdown(sock, SHUT_WR);
    for (int i = 0; i < 10000; i++) {
        fuzz_vu_run_engine__(sock, 1);
        vhost_port_get_info(fuzz_vu_port, &info);
        if (info.counters.disconnects > disconnects0) {
            break;
        }
    }
    FUZZ_CHECK(info.counters.disconnects > disconnects0);
    FUZZ_CHECK(!info.connected && !info.n_mem_regions && !info.log_mapped);
    close(sock);
    FUZZ_CHECK(fuzz_vu_count_fds__() == fuzz_vu_fds0);
    FUZZ_CHECK(fuzz_mem_count_maps() == 0);
    return 0;
}

/* Seeds. */

static void
fuzz_vu_put_msg__(struct fuzz_input_buf *b, uint8_t ctl, uint32_t request,
                  uint32_t flags, const void *payload, uint32_t size)
{
    struct vhost_user_hdr hdr = { request, VHOST_USER_VERSION | flags, size };

    fuzz_input_put_u8(b, ctl);
    fuzz_input_put_u16(b, VHOST_USER_HDR_SIZE + size);
    fuzz_input_put(b, &hdr, sizeof hdr);
    fuzz_input_put(b, payload, size);
}

static void
fuzz_vu_put_u64__(struct fuzz_input_buf *b, uint8_t ctl, uint32_t request,
                  uint64_t v)
{
    fuzz_vu_put_msg__(b, ctl, request, VHOST_USER_NEED_REPLY_MASK, &v,
                      sizeof v);
}

static void
fuzz_vu_put_state__(struct fuzz_input_buf *b, uint32_t request,
                    uint32_t index, uint32_t num)
{
    struct vhost_user_vring_state s = { index, num };

    fuzz_vu_put_msg__(b, 0, request, VHOST_USER_NEED_REPLY_MASK, &s,
                      sizeof s);
}

/* A QEMU-like bring-up of one queue pair, with a memory table and a
 * dirty log, then a region added and removed, and the ring stopped. */
static void
fuzz_vu_bringup__(struct fuzz_input_buf *b, bool packed)
{
    const uint64_t uva = UINT64_C(0x7f0000000000);
    uint64_t features = FEATURE_BIT(VIRTIO_F_VERSION_1)
                        | FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF)
                        | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES)
                        | (packed ? FEATURE_BIT(VIRTIO_F_RING_PACKED) : 0);
    struct vhost_user_mem_table mt = { .nregions = 1 };
    struct vhost_user_mem_reg reg = { 0 };
    struct vhost_user_log log = { 0x1000, 0 };

    mt.regions[0] = (struct vhost_user_mem_region) {
        0, FUZZ_VU_MEM_SIZE, uva, 0,
    };
    reg.region = (struct vhost_user_mem_region) {
        0x100000, FUZZ_VU_MEM_SIZE, uva + 0x100000, 0,
    };

    fuzz_vu_put_msg__(b, 0, VHOST_USER_GET_FEATURES, 0, NULL, 0);
    fuzz_vu_put_u64__(b, 0, VHOST_USER_SET_FEATURES, features);
    fuzz_vu_put_msg__(b, 0, VHOST_USER_GET_PROTOCOL_FEATURES, 0, NULL, 0);
    fuzz_vu_put_u64__(b, 0, VHOST_USER_SET_PROTOCOL_FEATURES,
                      vhost_supported_protocol_features());
    fuzz_vu_put_msg__(b, 0, VHOST_USER_SET_OWNER, 0, NULL, 0);
    fuzz_vu_put_msg__(b, 1, VHOST_USER_SET_MEM_TABLE,
                      VHOST_USER_NEED_REPLY_MASK, &mt,
                      VHOST_USER_MEM_TABLE_HDR_SIZE + sizeof mt.regions[0]);
    for (uint32_t q = 0; q < 2; q++) {
        struct vhost_user_vring_addr a = {
            q, 0, uva + q * 0x4000, uva + q * 0x4000 + 0x2000,
            uva + q * 0x4000 + 0x1000, 0,
        };

        fuzz_vu_put_state__(b, VHOST_USER_SET_VRING_NUM, q, 64);
        fuzz_vu_put_state__(b, VHOST_USER_SET_VRING_BASE, q,
                            packed ? 0x8000 : 0);
        fuzz_vu_put_msg__(b, 0, VHOST_USER_SET_VRING_ADDR,
                          VHOST_USER_NEED_REPLY_MASK, &a, sizeof a);
        fuzz_vu_put_u64__(b, 0x11, VHOST_USER_SET_VRING_KICK, q);
        fuzz_vu_put_u64__(b, 0x11, VHOST_USER_SET_VRING_CALL, q);
        fuzz_vu_put_u64__(b, 0, VHOST_USER_SET_VRING_ERR,
                          q | VHOST_USER_VRING_NOFD_MASK);
        fuzz_vu_put_state__(b, VHOST_USER_SET_VRING_ENABLE, q, 1);
    }
    fuzz_vu_put_msg__(b, 1, VHOST_USER_SET_LOG_BASE, 0, &log, sizeof log);
    fuzz_vu_put_msg__(b, 0x11, VHOST_USER_SET_LOG_FD, 0, NULL, 0);
    fuzz_vu_put_msg__(b, 0x31, VHOST_USER_SET_BACKEND_REQ_FD, 0, NULL, 0);
    fuzz_vu_put_u64__(b, 0, VHOST_USER_NET_SET_MTU, 1500);
    fuzz_vu_put_u64__(b, 0, VHOST_USER_SEND_RARP, 0x563412005452);
    fuzz_vu_put_u64__(b, 0, VHOST_USER_SET_STATUS, 0xf);
    fuzz_vu_put_msg__(b, 0, VHOST_USER_GET_STATUS, 0, NULL, 0);
    fuzz_vu_put_msg__(b, 0, VHOST_USER_GET_MAX_MEM_SLOTS, 0, NULL, 0);
    fuzz_vu_put_msg__(b, 1, VHOST_USER_ADD_MEM_REG,
                      VHOST_USER_NEED_REPLY_MASK, &reg, sizeof reg);
    fuzz_vu_put_msg__(b, 0, VHOST_USER_REM_MEM_REG,
                      VHOST_USER_NEED_REPLY_MASK, &reg, sizeof reg);
    fuzz_vu_put_state__(b, VHOST_USER_GET_VRING_BASE, 1, 0);
    fuzz_vu_put_msg__(b, 0, VHOST_USER_GET_QUEUE_NUM, 0, NULL, 0);
}

void
fuzz_target_seeds(fuzz_emit_fn *emit)
{
    static struct fuzz_input_buf b;

    b.n = 0;
    fuzz_vu_bringup__(&b, false);
    emit(b.data, b.n, "bringup-split");

    b.n = 0;
    fuzz_vu_bringup__(&b, true);
    fuzz_vu_put_msg__(&b, 0, VHOST_USER_RESET_OWNER, 0, NULL, 0);
    emit(b.data, b.n, "bringup-packed-reset");

    /* Too many fds, an unknown request, a bad index, a message in two
     * pieces, and one cut short. */
    b.n = 0;
    fuzz_vu_put_msg__(&b, 0x0c, VHOST_USER_GET_FEATURES, 0, NULL, 0);
    fuzz_vu_put_u64__(&b, 0x03, VHOST_USER_SET_FEATURES, 0);
    fuzz_vu_put_u64__(&b, 0, 99, 0);
    fuzz_vu_put_state__(&b, VHOST_USER_SET_VRING_NUM, 0x10000, 64);
    fuzz_vu_put_state__(&b, VHOST_USER_SET_VRING_NUM, 0xffffffff, 64);
    struct vhost_user_hdr hdr = { VHOST_USER_GET_FEATURES,
                                  VHOST_USER_VERSION, 0 };
    fuzz_input_put_u8(&b, 0);
    fuzz_input_put_u16(&b, 5);
    fuzz_input_put(&b, &hdr, 5);
    fuzz_input_put_u8(&b, 0x40);
    fuzz_input_put_u16(&b, 7);
    fuzz_input_put(&b, (uint8_t *) &hdr + 5, 7);
    fuzz_input_put_u8(&b, 0);
    fuzz_input_put_u16(&b, 9);
    fuzz_input_put(&b, &hdr, 9);
    emit(b.data, b.n, "bad-mix");
}
