/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Concurrency tests: the control plane and the data path at the same
 * time, for ThreadSanitizer (tests/concurrency.at; tests/check-all.sh
 * runs them in a -fsanitize=thread build, README "Testing").
 *
 * The engine runs its loop in a thread of its own.  The test thread is
 * the frontend and its guest: it sends control messages that a frontend
 * sends while the rings run (a new call fd, a ring disabled and enabled,
 * a ring stopped and restarted, a memory table sent again, a region
 * hot-plugged, a dirty log and LOG_ALL for migration, a RARP), and
 * between them posts and reaps buffers; and it reads the port's
 * statistics and state as an embedder's main thread does.  Two more
 * threads run bursts without pause: one enqueues on the guest's RX ring,
 * the other dequeues from its TX ring.  On both ring layouts.
 *
 * Outside TSan the tests check that traffic went through and nothing was
 * dropped as malformed; under TSan, any data race between those threads
 * is a report, and a report fails the test (exit status 66).
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "virtio.h"

#define CC_QUEUE_SIZE 256
#define CC_ARENA_SIZE (512u << 10)
#define CC_ROUNDS 3000

struct cc {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq rx, tx;       /* Vrings 0 and 1. */
    bool packed;
    bool extra_region;          /* A hot-plugged region is in the table. */
    int fds0, threads0;

    pthread_t threads[2];
    atomic_bool stop;
    atomic_ullong enqueued, dequeued;
    uint64_t received, sent;
};

static bool
cc_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
cc_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

static const struct vhost_pkt_alloc cc_alloc = {
    .alloc = cc_alloc__,
    .free = cc_free__,
};

/* The enqueue thread: the guest's RX ring, 8 packets at a time. */
static void *
cc_enqueue_main__(void *c_)
{
    static uint8_t frame[1514];
    struct cc *c = c_;

    memset(frame, 0xab, sizeof frame);
    while (!atomic_load(&c->stop)) {
        static const uint32_t lens[8] = { 60, 64, 1514, 128, 600, 72, 90, 1 };
        struct vhost_pkt pkts[8];

        memset(pkts, 0, sizeof pkts);
        for (int i = 0; i < 8; i++) {
            pkts[i].data = frame;
            pkts[i].len = lens[i] < 60 ? 60 : lens[i];
            pkts[i].size = sizeof frame;
        }
        unsigned int n = vhost_enqueue_burst(c->port, 0, pkts, 8);
        atomic_fetch_add(&c->enqueued, n);
        if (!n) {
            sched_yield();
        }
    }
    return NULL;
}

/* The dequeue thread: the guest's TX ring, and the queue-fill metric. */
static void *
cc_dequeue_main__(void *c_)
{
    struct cc *c = c_;

    while (!atomic_load(&c->stop)) {
        struct vhost_pkt pkts[VHOST_MAX_BURST];

        memset(pkts, 0, sizeof pkts);
        vhost_dequeue_pending(c->port, 0);
        unsigned int n = vhost_dequeue_burst(c->port, 0, pkts,
                                             VHOST_MAX_BURST, &cc_alloc);
        for (unsigned int i = 0; i < VHOST_MAX_BURST; i++) {
            free(pkts[i].handle);
        }
        atomic_fetch_add(&c->dequeued, n);
        if (!n) {
            sched_yield();
        }
    }
    return NULL;
}

static void
cc_start(struct cc *c, const char *name, bool packed)
{
    struct vhost_port_options opts;
    struct tfe_setup setup = {
        .queue_size = CC_QUEUE_SIZE, .packed = packed,
    };

    memset(c, 0, sizeof *c);
    c->threads0 = tu_thread_baseline();
    c->fds0 = tu_count_fds();
    c->packed = packed;
    TU_CHECK_OK(vhost_engine_create(&c->engine));
    TU_CHECK_OK(vhost_engine_start(c->engine));

    c->path = tu_path(name);
    tu_events_init(&c->ev);
    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = c->path;
    opts.cb = &tu_callbacks;
    opts.aux = &c->ev;
    TU_CHECK_OK(vhost_port_create(c->engine, &opts, &c->port));

    c->fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(c->fe, c->path));
    TU_CHECK_OK(tfe_setup_device(c->fe, 1, &setup));
    TU_CHECK(tu_port_info(c->port).ready);
    TU_CHECK_OK(tfe_vq_init(&c->rx, c->fe, 0, 0, CC_ARENA_SIZE));
    TU_CHECK_OK(tfe_vq_init(&c->tx, c->fe, 1, 1, CC_ARENA_SIZE));
    TU_CHECK_EQ(c->rx.packed, packed);

    TU_CHECK_OK(pthread_create(&c->threads[0], NULL, cc_enqueue_main__, c));
    TU_CHECK_OK(pthread_create(&c->threads[1], NULL, cc_dequeue_main__, c));
}

/* The guest's turn: reap and refill both rings. */
static void
cc_guest(struct cc *c, unsigned int round)
{
    static uint8_t buf[12 + 9000];
    uint8_t hdr[12] = { 0 }, pkt[256];
    struct tfe_used_elem e;

    while (!tfe_vq_get_used(&c->tx, &e)) {
        continue;
    }
    for (;;) {
        unsigned int n_bufs;
        size_t len;
        int error = tfe_vq_recv(&c->rx, buf, sizeof buf, &len, &n_bufs);

        if (error == -EAGAIN) {
            break;
        }
        TU_CHECK_OK(error);
        c->received++;
    }
    for (int i = 0; i < 8; i++) {
        if (c->rx.arena_inflight + 4 * 4096 > CC_ARENA_SIZE
            || tfe_vq_post_rx(&c->rx, 2048, NULL) < 0) {
            break;
        }
    }
    memset(pkt, round, sizeof pkt);
    for (int i = 0; i < 4; i++) {
        if (c->tx.arena_inflight + 4 * 4096 > CC_ARENA_SIZE
            || tfe_vq_post_tx(&c->tx, hdr, c->tx.hdr_len, pkt,
                              60 + (round + i) % 190, NULL) < 0) {
            break;
        }
        c->sent++;
    }
}

/* What an embedder's main thread reads while the bursts run. */
static void
cc_read_state(struct cc *c)
{
    struct vhost_queue_stats st;
    struct vhost_queue_info qi;
    struct vhost_port_info info;

    for (unsigned int v = 0; v < 2; v++) {
        TU_CHECK_OK(vhost_port_get_queue_stats(c->port, v, &st));
        TU_CHECK_OK(vhost_port_get_queue_info(c->port, v, &qi));
    }
    TU_CHECK_OK(vhost_port_get_info(c->port, &info));
}

/* Stops vring 'v' (GET_VRING_BASE) and starts it again where it stood,
 * as QEMU does around a guest driver's queue reset. */
static void
cc_restart_vring(struct cc *c, unsigned int v)
{
    uint32_t base;

    TU_CHECK_OK(tfe_get_vring_base(c->fe, v, &base));
    TU_CHECK_OK(tfe_set_vring_base(c->fe, v, base));
    TU_CHECK_OK(tfe_set_vring_kick(c->fe, v, c->fe->vrings[v].kick_fd));
}

/* A new call eventfd for vring 'v' while it runs. */
static void
cc_new_call(struct cc *c, unsigned int v)
{
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

    TU_CHECK(fd >= 0);
    TU_CHECK_OK(tfe_set_vring_call(c->fe, v, fd));
    if (c->fe->vrings[v].call_fd >= 0) {
        close(c->fe->vrings[v].call_fd);
    }
    c->fe->vrings[v].call_fd = fd;
}

/* Migration starts: a dirty log, then LOG_ALL (QEMU's order), and if
 * 'log_fd' a log call fd, sent once logging runs.  Ends with LOG_ALL
 * cleared. */
static void
cc_migrate(struct cc *c, bool start, bool log_fd)
{
    uint64_t features = c->fe->features;

    if (start) {
        TU_CHECK_OK(tfe_log_create(c->fe, 1u << 16));
        TU_CHECK_OK(tfe_set_log_base(c->fe, 1u << 16, 0, c->fe->log_fd,
                                     false));
        features |= FEATURE_BIT(VHOST_F_LOG_ALL);
    } else {
        features &= ~FEATURE_BIT(VHOST_F_LOG_ALL);
    }
    TU_CHECK_OK(tfe_set_features(c->fe, features));
    if (start && log_fd) {
        TU_CHECK_OK(tfe_set_log_fd(c->fe));
    }
}

/* Memory hot-plug: a region, away from the rings and buffers, added
 * (CONFIGURE_MEM_SLOTS) or removed; after a removal the whole table is
 * sent again, as QEMU does without memory slots, and the region is back. */
static void
cc_hotplug(struct cc *c, bool add)
{
    struct tfe_mem *mem = c->fe->mem;
    struct vhost_user_mem_region r;

    if (mem->n_regions < 3) {
        TU_CHECK_EQ(tfe_mem_add(mem, 64u << 20, 1u << 20, 0), 2);
    }
    tfe_mem_region_desc(mem, 2, &r);
    if (c->extra_region) {
        TU_CHECK_OK(tfe_rem_mem_reg(c->fe, &r, -1));
    }
    if (add) {
        TU_CHECK_OK(tfe_add_mem_region(c->fe, 2));
    } else {
        TU_CHECK_OK(tfe_set_mem_table(c->fe));
    }
    c->extra_region = true;
}

static void
cc_finish(struct cc *c)
{
    atomic_store(&c->stop, true);
    pthread_join(c->threads[0], NULL);
    pthread_join(c->threads[1], NULL);

    unsigned long long enq = atomic_load(&c->enqueued);
    unsigned long long deq = atomic_load(&c->dequeued);
    tu_log("%s ring: %llu enqueued, %llu dequeued; guest sent %"PRIu64
           ", received %"PRIu64, c->packed ? "packed" : "split", enq, deq,
           c->sent, c->received);
    TU_CHECK_CMP(enq, >, 0);
    TU_CHECK_CMP(deq, >, 0);
    TU_CHECK_CMP(c->received, >, 0);
    /* A well-behaved guest: nothing dropped as malformed, nothing broken. */
    for (unsigned int v = 0; v < 2; v++) {
        struct vhost_queue_stats st;

        TU_CHECK_OK(vhost_port_get_queue_stats(c->port, v, &st));
        TU_CHECK(!st.broken);
        for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
            if (r != VHOST_DROP_NO_BUFS) {
                TU_CHECK_EQ(st.drops[r], 0);
            }
        }
    }

    tfe_vq_destroy(&c->rx);
    tfe_vq_destroy(&c->tx);
    tfe_destroy(c->fe);
    TU_CHECK(tu_wait_port(c->port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    vhost_port_destroy(c->port);
    vhost_engine_destroy(c->engine);
    tu_events_destroy(&c->ev);
    free(c->path);
    TU_CHECK_EQ(tu_threads_settle(c->threads0), c->threads0);
    TU_CHECK_EQ(tu_count_fds(), c->fds0);
}

/* The rounds: the guest's turn every round, a control message every few,
 * cycling through what a frontend sends to running rings. */
static void
cc_run(bool packed, bool log_fd)
{
    struct cc c;

    cc_start(&c, packed ? "cc-packed" : "cc-split", packed);
    for (unsigned int round = 0; round < CC_ROUNDS; round++) {
        cc_guest(&c, round);
        cc_read_state(&c);
        if (round % 4) {
            continue;
        }
        switch ((round / 4) % 10) {
        case 0: cc_new_call(&c, 0); break;
        case 1: cc_new_call(&c, 1); break;
        case 2: cc_migrate(&c, true, log_fd); break;
        case 3:
        case 4:
            /* While the dirty log is on. */
            cc_hotplug(&c, (round / 4) % 10 == 3);
            if (log_fd) {
                TU_CHECK_OK(tfe_set_log_fd(c.fe));
            }
            break;
        case 5: cc_migrate(&c, false, log_fd); break;
        case 6: cc_restart_vring(&c, 1); break;
        case 7:
            TU_CHECK_OK(tfe_set_vring_enable(c.fe, 1, false));
            TU_CHECK_OK(tfe_set_vring_enable(c.fe, 1, true));
            break;
        case 8: {
            static const uint8_t mac[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 };
            TU_CHECK_OK(tfe_send_rarp(c.fe, mac));
            break;
        }
        case 9: cc_restart_vring(&c, 0); break;
        }
    }
    cc_finish(&c);
}

static void
test_concurrency_split(void)
{
    cc_run(false, false);
}

static void
test_concurrency_packed(void)
{
    cc_run(true, false);
}

/* The same with SET_LOG_FD at each migration start: its handler replaces
 * the log call fd that bursts write to (issue 19, finding 5). */
static void
test_concurrency_log_fd(void)
{
    cc_run(false, true);
}

const struct tu_test tu_concurrency_tests[] = {
    { "concurrency-split", test_concurrency_split,
      "control messages against bursts on two threads, split ring" },
    { "concurrency-packed", test_concurrency_packed,
      "control messages against bursts on two threads, packed ring" },
    { "concurrency-log-fd", test_concurrency_log_fd,
      "SET_LOG_FD while bursts write the dirty log" },
};
const size_t tu_n_concurrency_tests = ARRAY_SIZE(tu_concurrency_tests);
