/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: sequences of vhost-user messages against a live data path.
 *
 * The other targets see one message, or one ring, at a time.  An attacker
 * sends sequences, and races them against the bursts that polling threads
 * run all the time.  Here an engine with one server port runs in this
 * thread; each input is one frontend connection that sends a sequence of
 * well-formed-enough messages (real memfd-backed guest memory, eventfds,
 * ring addresses placed anywhere in or near the regions, relative to
 * either end), while one or two threads run enqueue and dequeue bursts on
 * queue pair 0 without pause, and a model guest driver makes buffers
 * available on the rings as the frontend last described them.
 *
 * What counts as a finding, besides any sanitizer report:
 *
 *   - an access outside guest memory.  The engine's own mappings of the
 *     frontend's fds are placed with a PROT_NONE guard of one page before
 *     and FUZZ_LIVE_GUARD_AFTER bytes after each (mmap() and munmap() are
 *     wrapped with the linker's --wrap, for this program only), so that a
 *     ring or buffer access past a region's end faults, instead of landing
 *     silently in whatever is mapped next;
 *   - a stall: the engine must see the connection close;
 *   - a leak: after each input the process holds the same fds and no
 *     mapping of the engine's.
 *
 * Input: one byte of configuration (bit 0: one burst thread doing both
 * directions, else two), then operations, each an opcode byte (modulo the
 * number of operations) and its fixed-size arguments:
 *
 *     0 SET_FEATURES    u8 bits: 0 RING_PACKED, 1 MRG_RXBUF, 2 EVENT_IDX,
 *                       3 INDIRECT_DESC, 4 LOG_ALL, 5 IN_ORDER
 *     1 SET_MEM_TABLE   u8: bit 0 region 1 as well as region 0
 *     2 SET_VRING_NUM   u8 vring, u16 num
 *     3 SET_VRING_ADDR  u8 vring, then for desc, avail and used: u8 where
 *                       (bit 0 back from the region's end, bit 1 region
 *                       1) and u16 offset in units of the part's
 *                       alignment (16, 2, 4); u8 flags (bit 0 LOG)
 *     4 SET_VRING_BASE  u8 vring, u32 num; the guest's ring is put there
 *     5 start vring     u8 vring: SET_VRING_KICK and _CALL with eventfds,
 *                       SET_VRING_ENABLE 1
 *     6 GET_VRING_BASE  u8 vring (stops it)
 *     7 SET_VRING_ENABLE u8 vring, u8 value
 *     8 dirty log       u8 pages: SET_LOG_BASE with a memfd, SET_LOG_FD
 *     9 ADD/REM_MEM_REG u8: bit 0 remove; region 1
 *    10 guest posts     u8 vring, u8 count, u8 buffer-id offset (packed),
 *                       u8 length
 *    11 let bursts run  u8: each burst thread makes that many (% 8 + 1)
 *                       more calls; statistics read meanwhile
 *    12 RESET_OWNER     (then SET_OWNER and the protocol features again)
 *
 * With FUZZ_LIVE_VERBOSE set in the environment, the engine's log goes to
 * stderr and each input ends with what the bursts did on each vring (for
 * writing seeds).
 *
 * Thread-safety: the burst threads only call the data path API and read
 * their own state; everything else is this thread's.
 */

#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "fuzz-input.h"
#include "ovs-vhost/vhost.h"
#include "util.h"
#include "vhost-user-msg.h"
#include "virtio.h"
#include "virtio-ring.h"
#include "virtio-ring-packed.h"

#define FUZZ_LIVE_MEMFD_NAME "fuzz-live-guest"
#define FUZZ_LIVE_REGION_SIZE 0x10000u
#define FUZZ_LIVE_N_REGIONS 2
#define FUZZ_LIVE_UVA0 UINT64_C(0x7e0000000000)
#define FUZZ_LIVE_UVA_STEP UINT64_C(0x10000000)
#define FUZZ_LIVE_GPA1 UINT64_C(0x100000)
#define FUZZ_LIVE_BUF_OFFSET 0x8000u    /* Buffers: region 0's top half. */
#define FUZZ_LIVE_BUF_SIZE 2048u
#define FUZZ_LIVE_MAX_OPS 4096
#define FUZZ_LIVE_N_VRINGS 2
#define FUZZ_LIVE_BURST 8

/* Guarded mappings
 * ================
 *
 * A split ring of 32768 entries has a used ring of 256 KiB and a
 * descriptor table of 512 KiB, all of which a burst may reach from the
 * start of a part: the guard after a mapping covers that. */
#define FUZZ_LIVE_PAGE 4096u
#define FUZZ_LIVE_GUARD_AFTER (1u << 20)
#define FUZZ_LIVE_MAX_GUARDED 64

void *__real_mmap(void *, size_t, int, int, int, off_t);
int __real_munmap(void *, size_t);
void *__wrap_mmap(void *, size_t, int, int, int, off_t);
int __wrap_munmap(void *, size_t);

static struct fuzz_live_guarded {
    void *addr;                 /* What the caller got. */
    void *base;                 /* The reservation, guards included. */
    size_t total;
} fuzz_live_guarded[FUZZ_LIVE_MAX_GUARDED];
static pthread_mutex_t fuzz_live_guard_mutex = PTHREAD_MUTEX_INITIALIZER;

/* mmap() for everything linked into this program.  A shared mapping of an
 * fd at an address of the kernel's choosing (what guest_mem_map_fd() asks
 * for) is placed inside a PROT_NONE reservation, one page in; anything
 * else goes straight through. */
void *
__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (addr || fd < 0 || !(flags & MAP_SHARED) || !len
        || len > SIZE_MAX / 2) {
        return __real_mmap(addr, len, prot, flags, fd, off);
    }

    size_t rlen = (len + FUZZ_LIVE_PAGE - 1) & ~(size_t) (FUZZ_LIVE_PAGE - 1);
    size_t total = FUZZ_LIVE_PAGE + rlen + FUZZ_LIVE_GUARD_AFTER;
    uint8_t *base = __real_mmap(NULL, total, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                                -1, 0);
    if (base == MAP_FAILED) {
        return MAP_FAILED;
    }
    void *p = __real_mmap(base + FUZZ_LIVE_PAGE, len, prot, flags | MAP_FIXED,
                          fd, off);
    if (p == MAP_FAILED) {
        int error = errno;

        __real_munmap(base, total);
        errno = error;
        return MAP_FAILED;
    }

    pthread_mutex_lock(&fuzz_live_guard_mutex);
    for (size_t i = 0; i < FUZZ_LIVE_MAX_GUARDED; i++) {
        if (!fuzz_live_guarded[i].addr) {
            fuzz_live_guarded[i] = (struct fuzz_live_guarded) {
                p, base, total,
            };
            pthread_mutex_unlock(&fuzz_live_guard_mutex);
            return p;
        }
    }
    pthread_mutex_unlock(&fuzz_live_guard_mutex);
    /* More live mappings than any input makes: a leak. */
    FUZZ_CHECK(!"too many guarded mappings");
    return MAP_FAILED;
}

/* munmap() to match: a guarded mapping goes with its guards. */
int
__wrap_munmap(void *addr, size_t len)
{
    pthread_mutex_lock(&fuzz_live_guard_mutex);
    for (size_t i = 0; i < FUZZ_LIVE_MAX_GUARDED; i++) {
        struct fuzz_live_guarded *g = &fuzz_live_guarded[i];

        if (g->addr && g->addr == addr) {
            void *base = g->base;
            size_t total = g->total;

            g->addr = NULL;
            pthread_mutex_unlock(&fuzz_live_guard_mutex);
            return __real_munmap(base, total);
        }
    }
    pthread_mutex_unlock(&fuzz_live_guard_mutex);
    return __real_munmap(addr, len);
}

static size_t
fuzz_live_n_guarded__(void)
{
    size_t n = 0;

    pthread_mutex_lock(&fuzz_live_guard_mutex);
    for (size_t i = 0; i < FUZZ_LIVE_MAX_GUARDED; i++) {
        n += fuzz_live_guarded[i].addr != NULL;
    }
    pthread_mutex_unlock(&fuzz_live_guard_mutex);
    return n;
}

/* The engine, and guest memory as the frontend's side sees it. */

static struct vhost_engine *fuzz_live_engine;
static struct vhost_port *fuzz_live_port;
static char fuzz_live_path[108];
static uint64_t fuzz_live_offered;
static int fuzz_live_fds0;
static size_t fuzz_live_guarded0;
static int fuzz_live_memfds[FUZZ_LIVE_N_REGIONS];
static uint8_t *fuzz_live_mem[FUZZ_LIVE_N_REGIONS];   /* Our mappings. */

static void
fuzz_live_log__(enum vhost_log_level level, const char *msg, void *aux)
{
    /* Quiet: the engine logs every rejected message. */
    if (aux) {
        fprintf(stderr, "%s\n", msg);
    }
}

/* Counts this process's fds, but not pipes (the sanitizers' symbolizer). */
static int
fuzz_live_count_fds__(void)
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
fuzz_live_init__(void)
{
    struct vhost_port_options opts;

    if (fuzz_live_engine) {
        return;
    }
    vhost_log_set_handler(fuzz_live_log__,
                          getenv("FUZZ_LIVE_VERBOSE") ? "" : NULL);
    for (size_t i = 0; i < FUZZ_LIVE_N_REGIONS; i++) {
        int fd = memfd_create(FUZZ_LIVE_MEMFD_NAME, MFD_CLOEXEC);

        if (fd < 0 || ftruncate(fd, FUZZ_LIVE_REGION_SIZE)) {
            abort();
        }
        fuzz_live_mem[i] = mmap(NULL, FUZZ_LIVE_REGION_SIZE,
                                PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fuzz_live_mem[i] == MAP_FAILED) {
            abort();
        }
        fuzz_live_memfds[i] = fd;
    }
    snprintf(fuzz_live_path, sizeof fuzz_live_path, "/tmp/fuzz-live-%ld.sock",
             (long) getpid());
    if (vhost_engine_create(&fuzz_live_engine)) {
        abort();
    }
    vhost_port_options_init(&opts);
    opts.name = "fuzz-live";
    opts.path = fuzz_live_path;
    opts.mode = VHOST_PORT_SERVER;
    opts.max_queue_pairs = 1;
    if (vhost_port_create(fuzz_live_engine, &opts, &fuzz_live_port)) {
        abort();
    }
    fuzz_live_offered = opts.features
                        | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
    fuzz_live_fds0 = fuzz_live_count_fds__();
    fuzz_live_guarded0 = fuzz_live_n_guarded__();
}

/* The model guest driver
 * ======================
 *
 * It follows what the frontend last told the backend, as a real guest
 * would have set it up: the ring layout from SET_FEATURES, the size from
 * SET_VRING_NUM, the parts from SET_VRING_ADDR, the position from
 * SET_VRING_BASE.  It writes only inside the regions of the table the
 * frontend last sent (a guest has no other memory), through our own
 * mappings. */
struct fuzz_live_vring {
    uint16_t size;
    uint64_t desc, avail, used;     /* Frontend virtual addresses. */
    bool has_addr;
    uint16_t pos;                   /* Packed: the driver's position... */
    bool wrap;                      /* ...and its wrap counter. */
    uint16_t n_posted;              /* For buffer placement. */
};

struct fuzz_live {
    int sock;
    bool up;                        /* The connection is open. */
    bool packed;
    bool region1;                   /* In the table last sent. */
    struct fuzz_live_vring vr[FUZZ_LIVE_N_VRINGS];
    uint8_t rbuf[VHOST_USER_HDR_SIZE + VHOST_USER_MAX_PAYLOAD];
};

/* Returns our address of the 'len' bytes at frontend address 'uva' if they
 * lie in one region of the current table, else NULL. */
static uint8_t *
fuzz_live_va__(const struct fuzz_live *fl, uint64_t uva, uint64_t len)
{
    for (size_t i = 0; i < FUZZ_LIVE_N_REGIONS; i++) {
        uint64_t start = FUZZ_LIVE_UVA0 + i * FUZZ_LIVE_UVA_STEP;

        if ((i == 0 || fl->region1) && uva - start < FUZZ_LIVE_REGION_SIZE
            && len <= FUZZ_LIVE_REGION_SIZE - (uva - start)) {
            return fuzz_live_mem[i] + (uva - start);
        }
    }
    return NULL;
}

static void
fuzz_live_store16__(uint8_t *p, uint16_t v)
{
    /* Pairs with the engine's acquire loads of the index and flags. */
    __atomic_store_n((uint16_t *) p, v, __ATOMIC_RELEASE);
}

static uint16_t
fuzz_live_load16__(const uint8_t *p)
{
    return __atomic_load_n((const uint16_t *) p, __ATOMIC_ACQUIRE);
}

/* SET_VRING_BASE 'base' as the guest's own state: a split ring with that
 * many buffers made available and used, a packed ring at that position. */
static void
fuzz_live_guest_base__(struct fuzz_live *fl, unsigned int v, uint32_t base)
{
    struct fuzz_live_vring *vr = &fl->vr[v];

    if (fl->packed) {
        vr->pos = base & 0x7fff;
        vr->wrap = (base >> 15) & 1;
        return;
    }
    uint8_t *avail = vr->has_addr ? fuzz_live_va__(fl, vr->avail, 4) : NULL;
    uint8_t *used = vr->has_addr ? fuzz_live_va__(fl, vr->used, 4) : NULL;
    if (avail) {
        fuzz_live_store16__(avail + 2, base);
    }
    if (used) {
        fuzz_live_store16__(used + 2, base);
    }
}

/* Makes up to 'count' one-descriptor chains available on vring 'v':
 * writable buffers on the guest's RX ring (even vrings), packets of
 * 'len' bytes after the header on its TX ring. */
static void
fuzz_live_guest_post__(struct fuzz_live *fl, unsigned int v,
                       unsigned int count, uint16_t id_off, uint32_t len)
{
    struct fuzz_live_vring *vr = &fl->vr[v];
    bool rx = !(v & 1);
    uint16_t size = vr->size;

    if (!vr->has_addr || !size) {
        return;
    }
    for (unsigned int i = 0; i < count; i++) {
        uint64_t buf = FUZZ_LIVE_BUF_OFFSET
                       + (vr->n_posted++ % 16) * FUZZ_LIVE_BUF_SIZE;
        uint32_t blen = rx ? FUZZ_LIVE_BUF_SIZE : len;

        if (fl->packed) {
            uint8_t *d = fuzz_live_va__(fl, vr->desc + 16 * vr->pos, 16);
            if (!d) {
                return;
            }
            struct vring_packed_desc desc;
            memcpy(&desc, d, sizeof desc);
            /* Still in flight from the last lap: the ring is full. */
            if (vring_packed_desc_is_avail(desc.flags, !vr->wrap)) {
                return;
            }
            desc.addr = buf;
            desc.len = blen;
            desc.id = (vr->pos + id_off) & 0x7fff;
            memcpy(d, &desc, 14);        /* All but the flags. */
            fuzz_live_store16__(d + 14,
                                (vr->wrap ? VRING_PACKED_DESC_F_AVAIL
                                          : VRING_PACKED_DESC_F_USED)
                                | (rx ? VRING_DESC_F_WRITE : 0));
            if (++vr->pos >= size) {
                vr->pos = 0;
                vr->wrap = !vr->wrap;
            }
            continue;
        }

        uint8_t *avail = fuzz_live_va__(fl, vr->avail, 4);
        uint8_t *used = fuzz_live_va__(fl, vr->used, 4);
        if (!avail) {
            return;
        }
        uint16_t idx = fuzz_live_load16__(avail + 2);
        if (used && (uint16_t) (idx - fuzz_live_load16__(used + 2)) >= size) {
            return;
        }
        uint16_t head = idx & (size - 1);
        uint8_t *d = fuzz_live_va__(fl, vr->desc + 16 * (uint64_t) head, 16);
        if (d) {
            struct vring_desc desc = {
                .addr = buf, .len = blen,
                .flags = rx ? VRING_DESC_F_WRITE : 0,
            };
            memcpy(d, &desc, sizeof desc);
        }
        uint8_t *slot = fuzz_live_va__(fl, vr->avail + 4 + 2 * (uint64_t) head,
                                       2);
        if (slot) {
            memcpy(slot, &head, 2);
        }
        fuzz_live_store16__(avail + 2, idx + 1);
    }
}

/* The burst threads
 * =================
 *
 * Each runs bursts on queue pair 0 until told to stop, counting its
 * calls so that "let bursts run" can wait for a few of them. */
enum fuzz_live_role {
    FUZZ_LIVE_BOTH,             /* One thread, both directions. */
    FUZZ_LIVE_ENQUEUE,
    FUZZ_LIVE_DEQUEUE,
};

struct fuzz_live_thread {
    pthread_t thread;
    enum fuzz_live_role role;
    atomic_bool stop;
    atomic_ulong calls;
};

static struct fuzz_live_thread fuzz_live_threads[2];
static size_t fuzz_live_n_threads;      /* Running now. */

static bool
fuzz_live_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
fuzz_live_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

static const struct vhost_pkt_alloc fuzz_live_pkt_alloc = {
    .alloc = fuzz_live_alloc__,
    .free = fuzz_live_free__,
};

static unsigned int
fuzz_live_enqueue__(void)
{
    static const uint8_t frame[1514] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const uint32_t lens[FUZZ_LIVE_BURST] = {
        60, 64, 1514, 128, 600, 14, 1514, 1000,
    };
    struct vhost_pkt pkts[FUZZ_LIVE_BURST];

    memset(pkts, 0, sizeof pkts);
    for (size_t i = 0; i < FUZZ_LIVE_BURST; i++) {
        pkts[i].data = (uint8_t *) frame;
        pkts[i].len = lens[i];
        pkts[i].size = sizeof frame;
    }
    return vhost_enqueue_burst(fuzz_live_port, 0, pkts, FUZZ_LIVE_BURST);
}

static unsigned int
fuzz_live_dequeue__(void)
{
    struct vhost_pkt pkts[FUZZ_LIVE_BURST];

    memset(pkts, 0, sizeof pkts);
    unsigned int n = vhost_dequeue_burst(fuzz_live_port, 0, pkts,
                                         FUZZ_LIVE_BURST,
                                         &fuzz_live_pkt_alloc);
    for (size_t i = 0; i < FUZZ_LIVE_BURST; i++) {
        free(pkts[i].handle);
    }
    return n + vhost_dequeue_pending(fuzz_live_port, 0);
}

static void *
fuzz_live_thread_main__(void *t_)
{
    struct fuzz_live_thread *t = t_;

    while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        unsigned int n = 0;

        if (t->role != FUZZ_LIVE_DEQUEUE) {
            n += fuzz_live_enqueue__();
        }
        if (t->role != FUZZ_LIVE_ENQUEUE) {
            n += fuzz_live_dequeue__();
        }
        atomic_fetch_add_explicit(&t->calls, 1, memory_order_release);
        if (!n) {
            /* Nothing to do: leave the CPU to the control thread, which
             * the yield points below wait on anyway. */
            sched_yield();
        }
    }
    return NULL;
}

static long long
fuzz_live_now_us__(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Waits until each burst thread made 'calls' more calls, or 'max_us'
 * microseconds have passed (a loaded machine), reading statistics
 * meanwhile if 'stats', as an embedder's main thread does. */
static void
fuzz_live_let_run__(unsigned int calls, long long max_us, bool stats)
{
    struct fuzz_live_thread *t = fuzz_live_threads;
    unsigned long start[2];
    long long deadline = fuzz_live_now_us__() + max_us;

    for (size_t i = 0; i < fuzz_live_n_threads; i++) {
        start[i] = atomic_load(&t[i].calls);
    }
    for (size_t i = 0; i < fuzz_live_n_threads; i++) {
        while (atomic_load(&t[i].calls) - start[i] < calls
               && fuzz_live_now_us__() < deadline) {
            if (stats) {
                struct vhost_queue_stats st;

                vhost_port_get_queue_stats(fuzz_live_port, i & 1, &st);
            }
            sched_yield();
        }
    }
}

/* Yield points
 * ============
 *
 * A handler that drops a queue's lock in the middle of a change leaves a
 * window of a few instructions in which a burst can see half of it, too
 * short for the bursts to hit by chance.  The message handlers'
 * (vhost-user.c) calls into the device (vhost-dev.c) after they change a
 * queue are wrapped (the linker's --wrap, as for mmap()) to let the burst
 * threads make a call before the real function runs.  The real functions
 * are weak references, so that this program still links if the engine
 * stops calling them. */
struct vhost_dev;
struct virtq;
void __real_vhost_dev_remap_queue(struct vhost_dev *, struct virtq *)
    __attribute__((weak));
void __wrap_vhost_dev_remap_queue(struct vhost_dev *, struct virtq *);
void __real_vhost_dev_update_ready(struct vhost_dev *) __attribute__((weak));
void __wrap_vhost_dev_update_ready(struct vhost_dev *);

void
__wrap_vhost_dev_remap_queue(struct vhost_dev *dev, struct virtq *vq)
{
    fuzz_live_let_run__(1, 300, false);
    __real_vhost_dev_remap_queue(dev, vq);
}

void
__wrap_vhost_dev_update_ready(struct vhost_dev *dev)
{
    fuzz_live_let_run__(1, 300, false);
    __real_vhost_dev_update_ready(dev);
}

/* The frontend
 * ============ */

/* Reads and discards what the engine sent. */
static void
fuzz_live_drain__(struct fuzz_live *fl)
{
    for (;;) {
        union {
            char buf[CMSG_SPACE(8 * sizeof(int))];
            struct cmsghdr align;
        } control;
        struct iovec iov = { fl->rbuf, sizeof fl->rbuf };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = control.buf, .msg_controllen = sizeof control.buf,
        };
        ssize_t n = recvmsg(fl->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

        if (n == 0) {
            fl->up = false;
        }
        if (n <= 0) {
            return;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
             c = CMSG_NXTHDR(&mh, c)) {
            FUZZ_CHECK(c->cmsg_type != SCM_RIGHTS);
        }
    }
}

/* Sends one message with 'n_fds' fds and runs the engine until it has
 * dispatched it (or dropped the connection). */
static void
fuzz_live_send__(struct fuzz_live *fl, uint32_t request, const void *payload,
                 uint32_t size, const int *fds, size_t n_fds)
{
    struct vhost_user_hdr hdr = {
        request, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK, size,
    };
    uint8_t buf[VHOST_USER_HDR_SIZE + VHOST_USER_MAX_PAYLOAD];
    union {
        char buf[CMSG_SPACE(8 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct vhost_port_info info;

    if (!fl->up) {
        return;
    }
    memcpy(buf, &hdr, VHOST_USER_HDR_SIZE);
    if (size) {
        memcpy(buf + VHOST_USER_HDR_SIZE, payload, size);
    }

    struct iovec iov = { buf, VHOST_USER_HDR_SIZE + size };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (n_fds) {
        memset(&control, 0, sizeof control);
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
    }

    vhost_port_get_info(fuzz_live_port, &info);
    uint64_t msgs0 = info.counters.msgs;
    uint64_t disconnects0 = info.counters.disconnects;
    if (sendmsg(fl->sock, &mh, MSG_NOSIGNAL) != (ssize_t) iov.iov_len) {
        fl->up = false;
        return;
    }
    for (int i = 0; i < 1000; i++) {
        vhost_engine_run(fuzz_live_engine, 0);
        fuzz_live_drain__(fl);
        vhost_port_get_info(fuzz_live_port, &info);
        if (info.counters.msgs > msgs0
            || info.counters.disconnects > disconnects0) {
            break;
        }
    }
    if (info.counters.disconnects > disconnects0) {
        fl->up = false;
    }
}

static void
fuzz_live_send_u64__(struct fuzz_live *fl, uint32_t request, uint64_t v,
                     int fd)
{
    fuzz_live_send__(fl, request, &v, sizeof v, &fd, fd >= 0);
}

static void
fuzz_live_send_state__(struct fuzz_live *fl, uint32_t request,
                       uint32_t index, uint32_t num)
{
    struct vhost_user_vring_state s = { index, num };

    fuzz_live_send__(fl, request, &s, sizeof s, NULL, 0);
}

static void
fuzz_live_hello__(struct fuzz_live *fl)
{
    fuzz_live_send__(fl, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
    fuzz_live_send_u64__(fl, VHOST_USER_SET_PROTOCOL_FEATURES,
                         FEATURE_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)
                         | FEATURE_BIT(VHOST_USER_PROTOCOL_F_MQ)
                         | FEATURE_BIT(VHOST_USER_PROTOCOL_F_LOG_SHMFD)
                         | FEATURE_BIT(
                               VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS),
                         -1);
}

static void
fuzz_live_region__(unsigned int i, struct vhost_user_mem_region *r)
{
    r->guest_phys_addr = i ? FUZZ_LIVE_GPA1 : 0;
    r->memory_size = FUZZ_LIVE_REGION_SIZE;
    r->userspace_addr = FUZZ_LIVE_UVA0 + i * FUZZ_LIVE_UVA_STEP;
    r->mmap_offset = 0;
}

/* A ring part's address: 'where' bit 0 counts back from the region's end,
 * bit 1 picks region 1; 'off' is in units of 'align'. */
static uint64_t
fuzz_live_part__(uint8_t where, uint16_t off, unsigned int align)
{
    uint64_t start = FUZZ_LIVE_UVA0 + ((where >> 1) & 1) * FUZZ_LIVE_UVA_STEP;
    uint64_t o = (uint64_t) off * align % (2 * FUZZ_LIVE_REGION_SIZE);

    return where & 1 ? start + FUZZ_LIVE_REGION_SIZE - o : start + o;
}

/* The guest physical address of frontend address 'uva', for the dirty
 * log's used-ring address (nonsense outside the regions, as a frontend may
 * send it). */
static uint64_t
fuzz_live_gpa__(uint64_t uva)
{
    uint64_t off = uva - FUZZ_LIVE_UVA0;

    return off >= FUZZ_LIVE_UVA_STEP ? FUZZ_LIVE_GPA1 + off - FUZZ_LIVE_UVA_STEP
                                     : off;
}

static void
fuzz_live_op__(struct fuzz_live *fl, struct fuzz_input *in)
{
    enum {
        OP_FEATURES, OP_MEM_TABLE, OP_NUM, OP_ADDR, OP_BASE, OP_START,
        OP_GET_BASE, OP_ENABLE, OP_LOG, OP_MEM_REG, OP_POST, OP_RUN,
        OP_RESET, N_OPS
    };
    uint8_t op = fuzz_input_u8(in) % N_OPS;

    switch (op) {
    case OP_FEATURES: {
        uint8_t bits = fuzz_input_u8(in);
        uint64_t f = FEATURE_BIT(VIRTIO_F_VERSION_1)
                     | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES);

        f |= bits & 1 ? FEATURE_BIT(VIRTIO_F_RING_PACKED) : 0;
        f |= bits & 2 ? FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF) : 0;
        f |= bits & 4 ? FEATURE_BIT(VIRTIO_RING_F_EVENT_IDX) : 0;
        f |= bits & 8 ? FEATURE_BIT(VIRTIO_RING_F_INDIRECT_DESC) : 0;
        f |= bits & 16 ? FEATURE_BIT(VHOST_F_LOG_ALL) : 0;
        f |= bits & 32 ? FEATURE_BIT(VIRTIO_F_IN_ORDER) : 0;
        f &= fuzz_live_offered;
        fl->packed = f & FEATURE_BIT(VIRTIO_F_RING_PACKED);
        fuzz_live_send_u64__(fl, VHOST_USER_SET_FEATURES, f, -1);
        break;
    }
    case OP_MEM_TABLE: {
        struct vhost_user_mem_table mt = { .nregions = 1 };

        fl->region1 = fuzz_input_u8(in) & 1;
        mt.nregions += fl->region1;
        for (unsigned int i = 0; i < mt.nregions; i++) {
            fuzz_live_region__(i, &mt.regions[i]);
        }
        fuzz_live_send__(fl, VHOST_USER_SET_MEM_TABLE, &mt,
                         VHOST_USER_MEM_TABLE_HDR_SIZE
                         + mt.nregions * sizeof mt.regions[0],
                         fuzz_live_memfds, mt.nregions);
        break;
    }
    case OP_NUM: {
        uint8_t v = fuzz_input_u8(in) % (FUZZ_LIVE_N_VRINGS + 1);
        uint16_t num = fuzz_input_u16(in);

        if (v < FUZZ_LIVE_N_VRINGS) {
            fl->vr[v].size = num;
        }
        fuzz_live_send_state__(fl, VHOST_USER_SET_VRING_NUM, v, num);
        break;
    }
    case OP_ADDR: {
        uint8_t v = fuzz_input_u8(in) % (FUZZ_LIVE_N_VRINGS + 1);
        static const unsigned int align[3] = { 16, 2, 4 };
        uint64_t uva[3];

        for (int p = 0; p < 3; p++) {
            uint8_t where = fuzz_input_u8(in);
            uva[p] = fuzz_live_part__(where, fuzz_input_u16(in), align[p]);
        }
        struct vhost_user_vring_addr a = {
            .index = v,
            .flags = fuzz_input_u8(in) & 1 ? 1u << VHOST_VRING_F_LOG : 0,
            .desc_user_addr = uva[0],
            .used_user_addr = uva[2],
            .avail_user_addr = uva[1],
            .log_guest_addr = fuzz_live_gpa__(uva[2]),
        };
        if (v < FUZZ_LIVE_N_VRINGS) {
            fl->vr[v].desc = uva[0];
            fl->vr[v].avail = uva[1];
            fl->vr[v].used = uva[2];
            fl->vr[v].has_addr = true;
        }
        fuzz_live_send__(fl, VHOST_USER_SET_VRING_ADDR, &a, sizeof a, NULL, 0);
        break;
    }
    case OP_BASE: {
        uint8_t v = fuzz_input_u8(in) % (FUZZ_LIVE_N_VRINGS + 1);
        uint32_t num = fuzz_input_u32(in);

        if (v < FUZZ_LIVE_N_VRINGS) {
            fuzz_live_guest_base__(fl, v, num);
        }
        fuzz_live_send_state__(fl, VHOST_USER_SET_VRING_BASE, v, num);
        break;
    }
    case OP_START: {
        uint8_t v = fuzz_input_u8(in) % (FUZZ_LIVE_N_VRINGS + 1);
        int kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        int call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

        FUZZ_CHECK(kick >= 0 && call >= 0);
        fuzz_live_send_u64__(fl, VHOST_USER_SET_VRING_KICK, v, kick);
        fuzz_live_send_u64__(fl, VHOST_USER_SET_VRING_CALL, v, call);
        fuzz_live_send_state__(fl, VHOST_USER_SET_VRING_ENABLE, v, 1);
        close(kick);
        close(call);
        break;
    }
    case OP_GET_BASE:
        fuzz_live_send_state__(fl, VHOST_USER_GET_VRING_BASE,
                               fuzz_input_u8(in) % (FUZZ_LIVE_N_VRINGS + 1),
                               0);
        break;
    case OP_ENABLE: {
        uint8_t v = fuzz_input_u8(in) % (FUZZ_LIVE_N_VRINGS + 1);

        fuzz_live_send_state__(fl, VHOST_USER_SET_VRING_ENABLE, v,
                               fuzz_input_u8(in) & 1);
        break;
    }
    case OP_LOG: {
        uint64_t pages = fuzz_input_u8(in) % 4 + 1;
        struct vhost_user_log log = { pages * FUZZ_LIVE_PAGE, 0 };
        int fd = memfd_create("fuzz-live-log", MFD_CLOEXEC);
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

        FUZZ_CHECK(fd >= 0 && efd >= 0 && !ftruncate(fd, log.mmap_size));
        fuzz_live_send__(fl, VHOST_USER_SET_LOG_BASE, &log, sizeof log,
                         &fd, 1);
        fuzz_live_send__(fl, VHOST_USER_SET_LOG_FD, NULL, 0, &efd, 1);
        close(fd);
        close(efd);
        break;
    }
    case OP_MEM_REG: {
        struct vhost_user_mem_reg reg = { 0 };
        bool rem = fuzz_input_u8(in) & 1;

        fuzz_live_region__(1, &reg.region);
        fuzz_live_send__(fl, rem ? VHOST_USER_REM_MEM_REG
                                 : VHOST_USER_ADD_MEM_REG,
                         &reg, sizeof reg, &fuzz_live_memfds[1], 1);
        fl->region1 = !rem;
        break;
    }
    case OP_POST: {
        uint8_t v = fuzz_input_u8(in) % FUZZ_LIVE_N_VRINGS;
        unsigned int count = fuzz_input_u8(in) % 64 + 1;
        uint16_t id_off = fuzz_input_u8(in);
        /* A 12-byte virtio-net header and at least an Ethernet header. */
        uint32_t len = 12 + 14 + fuzz_input_u8(in) * 6;

        fuzz_live_guest_post__(fl, v, count, id_off, len);
        break;
    }
    case OP_RUN:
        fuzz_live_let_run__(fuzz_input_u8(in) % 8 + 1, 5000, true);
        break;
    case OP_RESET:
        fuzz_live_send__(fl, VHOST_USER_RESET_OWNER, NULL, 0, NULL, 0);
        fuzz_live_hello__(fl);
        break;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct fuzz_live_thread *t = fuzz_live_threads;
    struct vhost_port_info info;
    static struct fuzz_live fl;

    fuzz_live_init__();
    memset(&fl, 0, sizeof fl);
    for (size_t i = 0; i < FUZZ_LIVE_N_REGIONS; i++) {
        memset(fuzz_live_mem[i], 0, FUZZ_LIVE_REGION_SIZE);
    }
    vhost_port_get_info(fuzz_live_port, &info);
    uint64_t disconnects0 = info.counters.disconnects;

    fl.sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memcpy(sun.sun_path, fuzz_live_path, strlen(fuzz_live_path));
    FUZZ_CHECK(fl.sock >= 0 && !connect(fl.sock, (struct sockaddr *) &sun,
                                        sizeof sun));
    fl.up = true;
    vhost_engine_run(fuzz_live_engine, 0);

    size_t n_threads = fuzz_input_u8(&in) & 1 ? 1 : 2;
    memset(fuzz_live_threads, 0, sizeof fuzz_live_threads);
    for (size_t i = 0; i < n_threads; i++) {
        t[i].role = n_threads == 1 ? FUZZ_LIVE_BOTH
                    : i ? FUZZ_LIVE_DEQUEUE : FUZZ_LIVE_ENQUEUE;
        FUZZ_CHECK(!pthread_create(&t[i].thread, NULL,
                                   fuzz_live_thread_main__, &t[i]));
    }
    fuzz_live_n_threads = n_threads;

    fuzz_live_hello__(&fl);
    for (int i = 0; i < FUZZ_LIVE_MAX_OPS && in.n && fl.up; i++) {
        fuzz_live_op__(&fl, &in);
    }
    /* Whatever the guest made available last is taken now. */
    fuzz_live_let_run__(4, 5000, true);
    if (getenv("FUZZ_LIVE_VERBOSE")) {
        /* For writing seeds: what the bursts did. */
        for (unsigned int v = 0; v < FUZZ_LIVE_N_VRINGS; v++) {
            struct vhost_queue_stats st;
            uint64_t drops = 0;

            vhost_port_get_queue_stats(fuzz_live_port, v, &st);
            for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
                drops += st.drops[r];
                if (st.drops[r]) {
                    fprintf(stderr, "vring %u: %"PRIu64" %s\n", v,
                            st.drops[r], vhost_drop_reason_name(r));
                }
            }
            struct vhost_queue_info qi;
            vhost_port_get_queue_info(fuzz_live_port, v, &qi);
            fprintf(stderr, "vring %u: %"PRIu64" packets, %"PRIu64" "
                    "dropped%s; %s, size %u, base %"PRIu32"\n", v,
                    st.packets, drops, st.broken ? ", broken" : "",
                    qi.ready ? "ready" : "stopped", qi.size, qi.base);
        }
    }

    /* The frontend goes; the engine must see it and let go of everything,
     * with the bursts still running. */
    shutdown(fl.sock, SHUT_WR);
    for (int i = 0; i < 10000; i++) {
        vhost_engine_run(fuzz_live_engine, 0);
        fuzz_live_drain__(&fl);
        vhost_port_get_info(fuzz_live_port, &info);
        if (info.counters.disconnects > disconnects0) {
            break;
        }
    }
    fuzz_live_n_threads = 0;
    for (size_t i = 0; i < n_threads; i++) {
        atomic_store(&t[i].stop, true);
        pthread_join(t[i].thread, NULL);
    }
    FUZZ_CHECK(info.counters.disconnects > disconnects0);
    FUZZ_CHECK(!info.connected && !info.n_mem_regions && !info.log_mapped);
    close(fl.sock);
    FUZZ_CHECK(fuzz_live_count_fds__() == fuzz_live_fds0);
    FUZZ_CHECK(fuzz_live_n_guarded__() == fuzz_live_guarded0);
    return 0;
}

/* Seeds
 * =====
 *
 * Bring-ups as QEMU and DPDK's virtio-user do them, with traffic, on both
 * layouts; and near misses of the sequences that the rules for stopped
 * rings are about (vhost-user.rst, "Ring states"): rings placed at a
 * region's end for the layout negotiated, a feature renegotiation after
 * the rings are placed (migration adds LOG_ALL), and a resize done the
 * legal way, with the ring stopped first. */

static void
fuzz_live_put_op__(struct fuzz_input_buf *b, uint8_t op, const void *args,
                   size_t n)
{
    fuzz_input_put_u8(b, op);
    if (n) {
        fuzz_input_put(b, args, n);
    }
}

static void
fuzz_live_put_features__(struct fuzz_input_buf *b, uint8_t bits)
{
    fuzz_live_put_op__(b, 0, &bits, 1);
}

static void
fuzz_live_put_num__(struct fuzz_input_buf *b, uint8_t v, uint16_t num)
{
    uint8_t a[3] = { v, num & 0xff, num >> 8 };

    fuzz_live_put_op__(b, 2, a, sizeof a);
}

/* Ring parts as (where, offset in bytes) pairs. */
static void
fuzz_live_put_addr__(struct fuzz_input_buf *b, uint8_t v,
                     uint8_t dw, uint16_t dbytes, uint8_t aw, uint16_t abytes,
                     uint8_t uw, uint16_t ubytes)
{
    uint16_t d = dbytes / 16, a = abytes / 2, u = ubytes / 4;
    uint8_t args[11] = {
        v, dw, d & 0xff, d >> 8, aw, a & 0xff, a >> 8, uw, u & 0xff, u >> 8,
        0,
    };

    fuzz_live_put_op__(b, 3, args, sizeof args);
}

static void
fuzz_live_put_base__(struct fuzz_input_buf *b, uint8_t v, uint32_t base)
{
    uint8_t a[5] = { v };

    memcpy(a + 1, &base, 4);
    fuzz_live_put_op__(b, 4, a, sizeof a);
}

static void
fuzz_live_put_v__(struct fuzz_input_buf *b, uint8_t op, uint8_t v)
{
    fuzz_live_put_op__(b, op, &v, 1);
}

static void
fuzz_live_put_post__(struct fuzz_input_buf *b, uint8_t v, uint8_t count,
                     uint8_t id_off)
{
    uint8_t a[4] = { v, count - 1, id_off, 100 };

    fuzz_live_put_op__(b, 10, a, sizeof a);
}

static void
fuzz_live_put_run__(struct fuzz_input_buf *b, uint8_t calls)
{
    fuzz_live_put_v__(b, 11, calls - 1);
}

/* Traffic on both vrings, then a pause for the bursts. */
static void
fuzz_live_put_traffic__(struct fuzz_input_buf *b, uint8_t id_off)
{
    fuzz_live_put_post__(b, 0, 16, id_off);
    fuzz_live_put_post__(b, 1, 16, id_off);
    fuzz_live_put_run__(b, 4);
}

/* A bring-up of both vrings of pair 0 with features 'bits', size 'num'
 * and base 'base': the rings of vring v at region 0 offsets v * 0x3000
 * (desc, avail + 0x1000, used + 0x1800), or, if 'at_end', in region v,
 * desc at the start and avail and used in the last bytes the layout
 * needs. */
static void
fuzz_live_put_bringup__(struct fuzz_input_buf *b, uint8_t bits, uint16_t num,
                        bool at_end, uint32_t base)
{
    bool packed = bits & 1;

    fuzz_live_put_features__(b, bits);
    fuzz_live_put_v__(b, 1, 1);
    for (uint8_t v = 0; v < 2; v++) {
        uint16_t o = v * 0x3000;

        fuzz_live_put_num__(b, v, num);
        if (!at_end) {
            fuzz_live_put_addr__(b, v, 0, o, 0, o + 0x1000, 0, o + 0x1800);
        } else if (packed) {
            /* Event areas of 4 bytes each, the last 8 of region v. */
            fuzz_live_put_addr__(b, v, 2 * v, 0, 2 * v | 1, 8, 2 * v | 1, 4);
        } else {
            /* Used ring: 6 + 8 * num bytes, at the very end; the avail
             * ring (6 + 2 * num) before it. */
            uint16_t used = (6 + 8 * num + 3) & ~3;
            uint16_t avail = used + ((6 + 2 * num + 3) & ~3);

            fuzz_live_put_addr__(b, v, 2 * v, 0, 2 * v | 1, avail,
                                 2 * v | 1, used);
        }
        fuzz_live_put_base__(b, v, base);
        fuzz_live_put_v__(b, 5, v);
    }
}

void
fuzz_target_seeds(fuzz_emit_fn *emit)
{
    static struct fuzz_input_buf b;
    const uint8_t two_threads = 0, one_thread = 1;

    /* Split and packed at work, both thread arrangements. */
    b.n = 0;
    fuzz_input_put_u8(&b, two_threads);
    fuzz_live_put_bringup__(&b, 0x06, 256, false, 0);
    fuzz_live_put_traffic__(&b, 0);
    fuzz_live_put_traffic__(&b, 0);
    fuzz_live_put_v__(&b, 6, 0);
    fuzz_live_put_v__(&b, 6, 1);
    emit(b.data, b.n, "split-traffic");

    b.n = 0;
    fuzz_input_put_u8(&b, one_thread);
    fuzz_live_put_bringup__(&b, 0x07, 256, false, 0x8000);
    fuzz_live_put_traffic__(&b, 3);
    fuzz_live_put_traffic__(&b, 3);
    fuzz_live_put_v__(&b, 6, 0);
    fuzz_live_put_v__(&b, 6, 1);
    emit(b.data, b.n, "packed-traffic");

    /* Migration: a dirty log, LOG_ALL renegotiated while running, a
     * region added and removed. */
    b.n = 0;
    fuzz_input_put_u8(&b, two_threads);
    fuzz_live_put_bringup__(&b, 0x05, 64, false, 0x8000);
    fuzz_live_put_traffic__(&b, 0);
    fuzz_live_put_v__(&b, 8, 1);
    fuzz_live_put_features__(&b, 0x15);
    fuzz_live_put_traffic__(&b, 0);
    fuzz_live_put_v__(&b, 9, 0);
    fuzz_live_put_traffic__(&b, 0);
    fuzz_live_put_v__(&b, 9, 1);
    fuzz_live_put_op__(&b, 12, NULL, 0);
    emit(b.data, b.n, "packed-migration-reset");

    /* Packed rings in the last bytes of the regions, features
     * renegotiated (with LOG_ALL) once the rings are placed, before the
     * start.  Legal as it stands; with the layout bit cleared in the
     * second SET_FEATURES, it is the layout switch. */
    b.n = 0;
    fuzz_input_put_u8(&b, two_threads);
    fuzz_live_put_features__(&b, 0x05);
    fuzz_live_put_v__(&b, 1, 1);
    for (uint8_t v = 0; v < 2; v++) {
        fuzz_live_put_num__(&b, v, 256);
        fuzz_live_put_addr__(&b, v, 2 * v, 0, 2 * v | 1, 8, 2 * v | 1, 4);
    }
    fuzz_live_put_features__(&b, 0x15);
    for (uint8_t v = 0; v < 2; v++) {
        fuzz_live_put_base__(&b, v, 0x8000);
        fuzz_live_put_v__(&b, 5, v);
    }
    fuzz_live_put_traffic__(&b, 0);
    emit(b.data, b.n, "packed-rings-at-end-renegotiated");

    /* Split rings that end where the regions end, for 64 entries, then
     * resized to 256 the legal way: stopped first, placed again, started.
     * Without the GET_VRING_BASE, it is a resize of a running ring. */
    b.n = 0;
    fuzz_input_put_u8(&b, two_threads);
    fuzz_live_put_bringup__(&b, 0x04, 64, true, 100);
    fuzz_live_put_traffic__(&b, 0);
    for (uint8_t v = 0; v < 2; v++) {
        uint16_t o = v * 0x3000;

        fuzz_live_put_post__(&b, v, 32, 0);
        fuzz_live_put_v__(&b, 6, v);
        fuzz_live_put_num__(&b, v, 256);
        fuzz_live_put_addr__(&b, v, 0, o, 0, o + 0x1000, 0, o + 0x1800);
        fuzz_live_put_base__(&b, v, 100);
        fuzz_live_put_v__(&b, 5, v);
    }
    fuzz_live_put_traffic__(&b, 0);
    emit(b.data, b.n, "split-resize-stopped");
}
