/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Adversarial tests of the control plane (issue 19): message sequences
 * that change a ring under the data path, and fds that are not eventfds.
 * tests/adversarial.at runs them by class.
 *
 *   - A ring layout change after the ring addresses were checked for the
 *     other layout (SET_FEATURES without RING_PACKED after SET_VRING_ADDR
 *     checked the ring as packed), and one while a ring is started.
 *   - SET_VRING_NUM and SET_VRING_BASE on a started ring.
 *   - SET_LOG_FD while a burst that will write the log call fd runs.
 *   - Kick, call, err and log call fds that are pipes or sockets.
 *
 * Like tests/test-adversarial.c, each test runs an engine with port A,
 * whose frontend misbehaves, and port B, whose frontend does not, and
 * checks that the bad message is rejected and counted, that A still works
 * on the terms it had, that B is unaffected, and that no fd, thread or
 * mapping is left.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

#define CTL_QUEUE_SIZE 256
#define CTL_ARENA_SIZE (256u << 10)
#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)

struct ctl {
    struct vhost_engine *engine;
    struct vhost_port *port, *port_b;
    struct tu_events ev, ev_b;
    char *path, *path_b;
    struct tfe *fe, *fe_b;
    struct tfe_vq vq[2];        /* Port A's pair 0, once it is up. */
    bool packed;
    int fds0, threads0;
};

static bool
ctl_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
ctl_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

static const struct vhost_pkt_alloc ctl_alloc = {
    .alloc = ctl_alloc__,
    .free = ctl_free__,
};

static struct vhost_port *
ctl_port__(struct ctl *c, const char *name, char **pathp,
           struct tu_events *ev)
{
    struct vhost_port_options opts;
    struct vhost_port *port;

    *pathp = tu_path(name);
    tu_events_init(ev);
    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = *pathp;
    opts.max_queue_pairs = 1;
    opts.features |= FEATURE_BIT(VIRTIO_F_RING_PACKED);
    opts.cb = &tu_callbacks;
    opts.aux = ev;
    TU_CHECK_OK(vhost_port_create(c->engine, &opts, &port));
    return port;
}

/* Starts an engine with ports A and B.  B's frontend brings its device up
 * (split ring).  A's frontend connects and does nothing more. */
static void
ctl_start(struct ctl *c, const char *name, bool packed)
{
    char name_b[64];

    memset(c, 0, sizeof *c);
    c->fds0 = tu_count_fds();
    c->threads0 = tu_count_threads();
    c->packed = packed;
    TU_CHECK_OK(vhost_engine_create(&c->engine));
    TU_CHECK_OK(vhost_engine_start(c->engine));
    c->port = ctl_port__(c, name, &c->path, &c->ev);
    snprintf(name_b, sizeof name_b, "%s-b", name);
    c->port_b = ctl_port__(c, name_b, &c->path_b, &c->ev_b);

    c->fe_b = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(c->fe_b, c->path_b));
    TU_CHECK_OK(tfe_setup_device(c->fe_b, 1, NULL));
    TU_CHECK(tu_port_info(c->port_b).ready);

    c->fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(c->fe, c->path));
    TU_CHECK(tu_wait_port(c->port, tu_port_connected, NULL, TU_TIMEOUT_MS));
}

/* The test's driver for A's pair 0, once its rings are up as laid out. */
static void
ctl_vqs_init(struct ctl *c)
{
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_vq_init(&c->vq[q], c->fe, q, q % 2, CTL_ARENA_SIZE));
        TU_CHECK_EQ(c->vq[q].packed, c->packed);
    }
}

/* Brings A's device up on its ring layout, 'setup' (may be null) adding
 * to the defaults. */
static void
ctl_up(struct ctl *c, const struct tfe_setup *setup)
{
    struct tfe_setup s = setup ? *setup : (struct tfe_setup) { 0 };

    s.queue_size = CTL_QUEUE_SIZE;
    s.packed = c->packed;
    TU_CHECK_OK(tfe_setup_device(c->fe, 1, &s));
    TU_CHECK(tu_port_info(c->port).ready);
    ctl_vqs_init(c);
}

/* One packet each way through A's pair 0, checked byte for byte. */
static void
ctl_roundtrip(struct ctl *c, uint32_t len)
{
    struct tfe_vq *tx = &c->vq[1], *rx = &c->vq[0];
    uint8_t hdr[12] = { 0 };
    uint8_t *pkt = malloc(len);
    uint8_t *buf = malloc(len + 12);
    struct vhost_pkt out[VHOST_MAX_BURST];
    struct tfe_used_elem e;
    unsigned int n_bufs;
    size_t got;

    for (uint32_t i = 0; i < len; i++) {
        pkt[i] = i * 13 + 1;
    }
    TU_CHECK_CMP(tfe_vq_post_tx(tx, hdr, tx->hdr_len, pkt, len, NULL), >=,
                 0);
    memset(out, 0, sizeof out);
    TU_CHECK_EQ(vhost_dequeue_burst(c->port, 0, out, VHOST_MAX_BURST,
                                    &ctl_alloc), 1);
    TU_CHECK_EQ(out[0].len, len);
    TU_CHECK(!memcmp(out[0].data, pkt, len));
    TU_CHECK_OK(tfe_vq_get_used(tx, &e));

    TU_CHECK_CMP(tfe_vq_post_rx(rx, len + 12, NULL), >=, 0);
    TU_CHECK_EQ(vhost_enqueue_burst(c->port, 0, out, 1), 1);
    TU_CHECK_OK(tfe_vq_recv(rx, buf, len + 12, &got, &n_bufs));
    TU_CHECK_EQ(got, rx->hdr_len + len);
    TU_CHECK(!memcmp(buf + rx->hdr_len, pkt, len));
    for (unsigned int i = 0; i < VHOST_MAX_BURST; i++) {
        free(out[i].handle);
    }
    free(buf);
    free(pkt);
}

/* Port B answers, its device is still up, and it rejected nothing. */
static void
ctl_check_b(struct ctl *c)
{
    TU_CHECK_OK(tfe_sync(c->fe_b));
    TU_CHECK(tu_port_info(c->port_b).ready);
    TU_CHECK_EQ(tu_port_info(c->port_b).counters.msgs_rejected, 0);
}

/* Tears down 'c' and checks the process is back where it started. */
static void
ctl_finish(struct ctl *c)
{
    for (unsigned int q = 0; q < 2; q++) {
        if (c->vq[q].size) {
            tfe_vq_destroy(&c->vq[q]);
        }
    }
    tfe_destroy(c->fe);
    tfe_destroy(c->fe_b);
    vhost_port_destroy(c->port);
    vhost_port_destroy(c->port_b);
    vhost_engine_destroy(c->engine);
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), c->fds0);
    TU_CHECK_EQ(tu_threads_settle(c->threads0), c->threads0);
    tu_events_destroy(&c->ev);
    tu_events_destroy(&c->ev_b);
    free(c->path);
    free(c->path_b);
}

/* Issue 19, finding 1: SET_FEATURES with RING_PACKED; SET_MEM_TABLE and
 * SET_VRING_NUM 256; SET_VRING_ADDR with the driver and device areas 4
 * bytes before the end of a region, enough for a packed ring's event
 * suppression structures; SET_FEATURES without RING_PACKED, while no
 * ring has started; then SET_VRING_BASE, KICK, CALL and ENABLE.  A split
 * ring of 256 needs 518 and 2054 bytes there: the rings must not come up
 * (the engine used to bring them up on addresses checked for 4 bytes, and
 * every burst wrote used entries past the region's end).  A
 * SET_VRING_ADDR that fits the split layout then brings them up. */
static void
test_layout_after_addr(void)
{
    struct tfe_setup setup = { .packed = true };
    struct ctl c;

    ctl_start(&c, "ctl-layout-addr", false);
    struct tfe *fe = c.fe;

    tu_log("SET_FEATURES with RING_PACKED, SET_MEM_TABLE, SET_VRING_NUM");
    TU_CHECK_OK(tfe_negotiate(fe, &setup));
    TU_CHECK(fe->features & FEATURE_BIT(VIRTIO_F_RING_PACKED));
    TU_CHECK_OK(tfe_set_mem_table(fe));
    for (unsigned int q = 0; q < 2; q++) {
        const struct tfe_region *r = &fe->mem->regions[q % 2];
        uint64_t tail = tfe_va_to_uva(r->va + r->size - 4);
        struct vhost_user_vring_addr addr = { .index = q };

        TU_CHECK_OK(tfe_vring_alloc(fe, q, CTL_QUEUE_SIZE));
        TU_CHECK_OK(tfe_set_vring_num(fe, q, CTL_QUEUE_SIZE));
        addr.desc_user_addr = tfe_va_to_uva(fe->vrings[q].desc);
        addr.avail_user_addr = addr.used_user_addr = tail;
        tu_log("vring %u: SET_VRING_ADDR with both areas at the last 4 "
               "bytes of region %u: accepted for a packed ring", q, q % 2);
        TU_CHECK_OK(tfe_set_vring_addr_raw(fe, &addr));
    }

    tu_log("SET_FEATURES without RING_PACKED: accepted, no ring started");
    TU_CHECK_OK(tfe_set_features(fe, fe->features
                                     & ~FEATURE_BIT(VIRTIO_F_RING_PACKED)));
    tu_log("SET_VRING_BASE 100, KICK, CALL, ENABLE");
    for (unsigned int q = 0; q < 2; q++) {
        struct tfe_vring *vr = &fe->vrings[q];

        vr->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        vr->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        TU_CHECK_OK(tfe_set_vring_base(fe, q, 100));
        TU_CHECK_OK(tfe_set_vring_kick(fe, q, vr->kick_fd));
        TU_CHECK_OK(tfe_set_vring_call(fe, q, vr->call_fd));
        TU_CHECK_OK(tfe_set_vring_enable(fe, q, true));
    }
    TU_CHECK_OK(tfe_sync(fe));
    tu_log("the split rings do not fit where they are: not ready");
    TU_CHECK(!tu_port_info(c.port).ready);
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK(!tu_queue_info(c.port, q).ready);
    }
    struct vhost_pkt out[4];
    memset(out, 0, sizeof out);
    TU_CHECK_EQ(vhost_dequeue_burst(c.port, 0, out, 4, &ctl_alloc), 0);
    TU_CHECK_EQ(vhost_enqueue_burst(c.port, 0, out, 0), 0);

    tu_log("SET_VRING_ADDR that fits the split layout: the rings come up");
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_set_vring_addr(fe, q));
    }
    TU_CHECK(tu_wait_port(c.port, tu_port_ready, NULL, TU_TIMEOUT_MS));
    ctl_vqs_init(&c);
    ctl_roundtrip(&c, 100);
    TU_CHECK_EQ(tu_port_info(c.port).counters.msgs_rejected, 0);
    ctl_check_b(&c);
    ctl_finish(&c);
}

/* A ring layout change while a ring is started, but not enabled, so the
 * device is not ready (the engine used to refuse a change only on a ready
 * device): refused and counted.  The rings then come up on the layout
 * they were set up for. */
static void
ctl_layout_started(bool packed)
{
    struct tfe_setup setup = { .packed = packed };
    struct ctl c;

    ctl_start(&c, packed ? "ctl-layout-st-p" : "ctl-layout-st-s", packed);
    struct tfe *fe = c.fe;

    TU_CHECK_OK(tfe_negotiate(fe, &setup));
    TU_CHECK_OK(tfe_set_mem_table(fe));
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_vring_setup(fe, q, CTL_QUEUE_SIZE));
    }
    TU_CHECK(!tu_port_info(c.port).ready);

    uint64_t features = fe->features;
    tu_log("rings kicked, not enabled: SET_FEATURES %s RING_PACKED",
           packed ? "without" : "with");
    TU_CHECK_EQ(tfe_set_features(fe, features
                                     ^ FEATURE_BIT(VIRTIO_F_RING_PACKED)),
                TFE_NACK);
    fe->features = features;
    struct vhost_port_info info = tu_port_info(c.port);
    TU_CHECK_EQ(info.counters.msgs_ring_started, 1);
    TU_CHECK_EQ(info.counters.msgs_rejected, 1);
    TU_CHECK_EQ(info.features, features);

    tu_log("the same features again: accepted");
    TU_CHECK_OK(tfe_set_features(fe, features));
    tu_log("enabled: up on the %s layout", packed ? "packed" : "split");
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_set_vring_enable(fe, q, true));
    }
    TU_CHECK(tu_wait_port(c.port, tu_port_ready, NULL, TU_TIMEOUT_MS));
    ctl_vqs_init(&c);
    ctl_roundtrip(&c, 200);
    TU_CHECK_EQ(tu_port_info(c.port).counters.msgs_rejected, 1);
    ctl_check_b(&c);
    ctl_finish(&c);
}

static void
test_layout_started_split(void)
{
    ctl_layout_started(false);
}

static void
test_layout_started_packed(void)
{
    ctl_layout_started(true);
}

/* Issue 19, finding 2: SET_VRING_NUM on a running ring (the engine stored
 * the size and remapped in two critical sections: a burst in between ran
 * the new size on the old translation, past the split used ring or the
 * packed id table), and a live packed ring grown with SET_VRING_NUM and
 * SET_VRING_BASE without a new SET_VRING_ADDR.  Both are refused on a
 * started ring, counted, and the ring runs on as it was.  Once
 * GET_VRING_BASE stops the ring, the same messages resize it. */
static void
ctl_vring_num_started(bool packed)
{
    struct ctl c;

    ctl_start(&c, packed ? "ctl-num-p" : "ctl-num-s", packed);
    ctl_up(&c, NULL);
    ctl_roundtrip(&c, 64);

    uint64_t rejected = 0;
    for (unsigned int q = 0; q < 2; q++) {
        uint32_t base = packed ? TFE_PACKED_BASE_INIT : 0;

        tu_log("vring %u running: SET_VRING_NUM 1024, SET_VRING_BASE %#"
               PRIx32, q, base);
        TU_CHECK_EQ(tfe_set_vring_num(c.fe, q, 1024), TFE_NACK);
        TU_CHECK_EQ(tfe_set_vring_base(c.fe, q, base), TFE_NACK);
        rejected += 2;
        TU_CHECK_EQ(tu_queue_info(c.port, q).size, CTL_QUEUE_SIZE);
        TU_CHECK(tu_queue_info(c.port, q).ready);
    }
    struct vhost_port_info info = tu_port_info(c.port);
    TU_CHECK_EQ(info.counters.msgs_ring_started, rejected);
    TU_CHECK_EQ(info.counters.msgs_rejected, rejected);
    TU_CHECK(info.ready);
    for (int i = 0; i < 3 * CTL_QUEUE_SIZE; i++) {
        ctl_roundtrip(&c, 60 + i % 200);
    }

    tu_log("vring 1 stopped with GET_VRING_BASE: SET_VRING_NUM 512 and "
           "SET_VRING_BASE accepted, the ring translated for 512");
    uint32_t base;
    TU_CHECK_OK(tfe_get_vring_base(c.fe, 1, &base));
    TU_CHECK_OK(tfe_set_vring_num(c.fe, 1, 512));
    TU_CHECK_OK(tfe_set_vring_base(c.fe, 1, base));
    TU_CHECK_EQ(tu_queue_info(c.port, 1).size, 512);
    TU_CHECK(!tu_queue_info(c.port, 1).ready);
    TU_CHECK_EQ(tu_port_info(c.port).counters.msgs_rejected, rejected);
    ctl_check_b(&c);
    ctl_finish(&c);
}

static void
test_vring_num_started_split(void)
{
    ctl_vring_num_started(false);
}

static void
test_vring_num_started_packed(void)
{
    ctl_vring_num_started(true);
}

/* Issue 19, finding 5: SET_LOG_FD while a burst runs.  A burst that
 * dirties the log write()s the log call fd before it lets go of its
 * queue; the engine used to close and replace the fd without the queue
 * locks, so the burst could write to a number the kernel had given to
 * another file.  Here a dequeue burst is held inside the embedder's
 * allocator (under the queue's access lock) while SET_LOG_FD arrives: the
 * engine waits for the burst, which notifies the fd it started with. */
struct ctl_hold {
    struct ctl *c;
    atomic_int state;           /* 0 idle, 1 in the allocator, 2 go on. */
    unsigned int n;
};

static bool
ctl_hold_alloc__(void *h_, struct vhost_pkt *pkt, uint32_t len)
{
    struct ctl_hold *h = h_;
    int idle = 0;

    if (atomic_compare_exchange_strong(&h->state, &idle, 1)) {
        while (atomic_load(&h->state) != 2) {
            tu_sleep_ms(1);
        }
    }
    return ctl_alloc__(NULL, pkt, len);
}

static void *
ctl_hold_burst__(void *h_)
{
    struct ctl_hold *h = h_;
    struct vhost_pkt_alloc alloc = {
        .alloc = ctl_hold_alloc__, .free = ctl_free__, .aux = h,
    };
    struct vhost_pkt out[4];

    memset(out, 0, sizeof out);
    h->n = vhost_dequeue_burst(h->c->port, 0, out, 4, &alloc);
    for (unsigned int i = 0; i < 4; i++) {
        free(out[i].handle);
    }
    return NULL;
}

static uint64_t
ctl_read_eventfd(int fd)
{
    uint64_t n = 0;

    return read(fd, &n, sizeof n) == sizeof n ? n : 0;
}

static void
ctl_log_fd_burst(bool packed)
{
    struct tfe_setup setup = {
        .features_mask = ~TFE_DEFAULT_FEATURES_EXCLUDED
                         | FEATURE_BIT(VHOST_F_LOG_ALL),
        .log_used = true,
    };
    struct ctl c;

    ctl_start(&c, packed ? "ctl-logfd-p" : "ctl-logfd-s", packed);
    ctl_up(&c, &setup);
    TU_CHECK(c.fe->features & FEATURE_BIT(VHOST_F_LOG_ALL));
    TU_CHECK_OK(tfe_log_create(c.fe, 4096));
    TU_CHECK_OK(tfe_set_log_base(c.fe, 4096, 0, c.fe->log_fd, true));
    int fd1 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int fd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    TU_CHECK(fd1 >= 0 && fd2 >= 0);
    TU_CHECK_OK(tfe_request(c.fe, VHOST_USER_SET_LOG_FD, true, NULL, 0,
                            &fd1, 1));
    ctl_roundtrip(&c, 100);
    TU_CHECK_CMP(ctl_read_eventfd(fd1), >, 0);
    int fds_engine = tu_count_fds();

    tu_log("a dequeue burst held in the embedder's allocator");
    uint8_t hdr[12] = { 0 }, pkt[80];
    memset(pkt, 0x3c, sizeof pkt);
    TU_CHECK_CMP(tfe_vq_post_tx(&c.vq[1], hdr, c.vq[1].hdr_len, pkt,
                                sizeof pkt, NULL), >=, 0);
    struct ctl_hold h = { .c = &c };
    pthread_t thread;
    TU_CHECK_OK(pthread_create(&thread, NULL, ctl_hold_burst__, &h));
    while (atomic_load(&h.state) != 1) {
        tu_sleep_ms(1);
    }

    tu_log("SET_LOG_FD meanwhile: not done while the burst runs");
    TU_CHECK_OK(tfe_send(c.fe, VHOST_USER_SET_LOG_FD,
                         VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                         NULL, 0, &fd2, 1));
    int timeout_ms = c.fe->timeout_ms;
    c.fe->timeout_ms = 300;
    TU_CHECK_EQ(tfe_wait_ack(c.fe, VHOST_USER_SET_LOG_FD), -ETIMEDOUT);
    c.fe->timeout_ms = timeout_ms;

    tu_log("the burst ends: it notified the fd it began with, then the "
           "new one is in place");
    atomic_store(&h.state, 2);
    pthread_join(thread, NULL);
    TU_CHECK_EQ(h.n, 1);
    TU_CHECK_OK(tfe_wait_ack(c.fe, VHOST_USER_SET_LOG_FD));
    TU_CHECK_CMP(ctl_read_eventfd(fd1), >, 0);
    TU_CHECK_EQ(ctl_read_eventfd(fd2), 0);
    /* The engine's copy of fd1 closed, its copy of fd2 kept. */
    TU_CHECK_EQ(tu_count_fds(), fds_engine);
    struct tfe_used_elem e;
    TU_CHECK_OK(tfe_vq_get_used(&c.vq[1], &e));

    ctl_roundtrip(&c, 100);
    TU_CHECK_EQ(ctl_read_eventfd(fd1), 0);
    TU_CHECK_CMP(ctl_read_eventfd(fd2), >, 0);
    close(fd1);
    close(fd2);
    ctl_check_b(&c);
    ctl_finish(&c);
}

static void
test_log_fd_burst_split(void)
{
    ctl_log_fd_burst(false);
}

static void
test_log_fd_burst_packed(void)
{
    ctl_log_fd_burst(true);
}

/* Issue 19, finding 6: a call fd that is a pipe, whose buffer the
 * frontend lets fill, held the data path in write() for good.  Kick,
 * call, err and log call fds that are not eventfds (a pipe, a socket, a
 * memfd) are refused and counted, their fd closed; the ring keeps the
 * eventfds it had and goes on notifying them. */
static void
ctl_not_eventfd(bool packed)
{
    static const uint32_t reqs[] = {
        VHOST_USER_SET_VRING_KICK, VHOST_USER_SET_VRING_CALL,
        VHOST_USER_SET_VRING_ERR, VHOST_USER_SET_LOG_FD,
    };
    struct ctl c;

    ctl_start(&c, packed ? "ctl-noefd-p" : "ctl-noefd-s", packed);
    ctl_up(&c, NULL);
    int fds = tu_count_fds();

    uint64_t refused = 0;
    for (int kind = 0; kind < 3; kind++) {
        int fd[2];
        const char *what;

        if (kind == 0) {
            what = "the write end of a pipe, its buffer full";
            TU_SYS(pipe2(fd, O_CLOEXEC | O_NONBLOCK));
            char junk[4096] = { 0 };
            while (write(fd[1], junk, sizeof junk) > 0) {
                continue;
            }
            close(fd[0]);
            fd[0] = fd[1];
        } else if (kind == 1) {
            what = "a socket";
            TU_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd));
            close(fd[1]);
        } else {
            what = "a memfd";
            fd[0] = TU_SYS(memfd_create("ctl-not-eventfd", MFD_CLOEXEC));
        }
        for (size_t i = 0; i < ARRAY_SIZE(reqs); i++) {
            uint64_t u64 = 1;   /* Vring 1, with an fd. */
            bool log = reqs[i] == VHOST_USER_SET_LOG_FD;

            tu_log("%s with %s", vhost_user_request_to_string(reqs[i]),
                   what);
            TU_CHECK_EQ(tfe_request(c.fe, reqs[i], true, log ? NULL : &u64,
                                    log ? 0 : sizeof u64, fd, 1), TFE_NACK);
            refused++;
        }
        close(fd[0]);
    }
    struct vhost_port_info info = tu_port_info(c.port);
    TU_CHECK_EQ(info.counters.fds_not_eventfd, refused);
    TU_CHECK_EQ(info.counters.msgs_rejected, refused);
    TU_CHECK(!info.has_log_call);
    TU_CHECK(info.ready);
    TU_CHECK(tu_queue_info(c.port, 1).has_call);
    TU_CHECK_EQ(tu_count_fds(), fds);

    tu_log("vring 1 still notifies its call eventfd");
    ctl_read_eventfd(c.fe->vrings[1].call_fd);
    ctl_roundtrip(&c, 100);
    TU_CHECK_CMP(ctl_read_eventfd(c.fe->vrings[1].call_fd), >, 0);

    tu_log("an eventfd is still taken");
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    uint64_t u64 = 1;
    TU_CHECK_OK(tfe_request(c.fe, VHOST_USER_SET_VRING_CALL, true, &u64,
                            sizeof u64, &efd, 1));
    TU_CHECK(tu_queue_info(c.port, 1).has_call);
    TU_CHECK_EQ(tu_port_info(c.port).counters.msgs_rejected, refused);
    ctl_roundtrip(&c, 100);
    close(efd);
    ctl_check_b(&c);
    ctl_finish(&c);
}

static void
test_not_eventfd_split(void)
{
    ctl_not_eventfd(false);
}

static void
test_not_eventfd_packed(void)
{
    ctl_not_eventfd(true);
}

const struct tu_test tu_adv_ctrl_tests[] = {
    { "adv-ctrl-layout-after-addr", test_layout_after_addr,
      "packed-checked ring addresses, then a split layout: not started" },
    { "adv-ctrl-layout-started-split", test_layout_started_split,
      "split: a layout change while a ring is started is refused" },
    { "adv-ctrl-layout-started-packed", test_layout_started_packed,
      "packed: a layout change while a ring is started is refused" },
    { "adv-ctrl-vring-num-started-split", test_vring_num_started_split,
      "split: SET_VRING_NUM/BASE on a started ring are refused" },
    { "adv-ctrl-vring-num-started-packed", test_vring_num_started_packed,
      "packed: SET_VRING_NUM/BASE on a started ring are refused" },
    { "adv-ctrl-log-fd-burst-split", test_log_fd_burst_split,
      "split: SET_LOG_FD waits for the burst that writes the log fd" },
    { "adv-ctrl-log-fd-burst-packed", test_log_fd_burst_packed,
      "packed: SET_LOG_FD waits for the burst that writes the log fd" },
    { "adv-ctrl-not-eventfd-split", test_not_eventfd_split,
      "split: kick/call/err/log fds that are not eventfds are refused" },
    { "adv-ctrl-not-eventfd-packed", test_not_eventfd_packed,
      "packed: kick/call/err/log fds that are not eventfds are refused" },
};
const size_t tu_n_adv_ctrl_tests = ARRAY_SIZE(tu_adv_ctrl_tests);
