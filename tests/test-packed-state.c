/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: ring state across stops (fixture in
 * test-packed.h).
 *
 * SET_VRING_BASE / GET_VRING_BASE and reconnection; backend restarts
 * recovered from the ring position log (lib/virtq-poslog.h); bases sent at
 * odd times; the dirty log of a packed ring (vhost-user.rst, "Migration").
 */

#include <config.h>

#include "test-packed.h"

/* SET_VRING_BASE / GET_VRING_BASE and reconnection. */

/* Traffic for the reconnect test: packets posted on the guest's TX ring
 * and buffers on its RX ring, some consumed, some left pending. */
struct flow {
    struct pending tx[64];      /* Posted, not yet dequeued. */
    unsigned int n_tx;
    uint32_t rx[64];            /* Buffers posted, not yet used. */
    unsigned int n_rx;
    uint32_t next_rx_seq;       /* Next enqueued packet to expect. */
    struct rng rng;
    uint64_t tx_done, rx_done;
};

/* Posts up to 'k' packets and 'k' receive buffers on queue pair 0. */
static void
flow_post(struct pk *pk, struct flow *f, unsigned int k)
{
    struct tfe_vq *tx = &pk->vq[TX(0)], *rx = &pk->vq[RX(0)];

    for (unsigned int i = 0; i < k && f->n_tx < ARRAY_SIZE(f->tx); i++) {
        struct tfe_buf_opts o = {
            .n_descs = pk_rng_range(&f->rng, 1, 3),
            .indirect = !pk_rng_range(&f->rng, 0, 4),
        };
        size_t len = pk_rng_range(&f->rng, 60, 1500);

        if (tx->n_free < (o.indirect ? 1 : o.n_descs)) {
            break;
        }
        f->tx[f->n_tx].pkt = pk_new_pkt(pk, len, MAC_UNICAST);
        f->tx[f->n_tx].len = len;
        f->tx[f->n_tx].id = pk_tx_post(pk, 0, NULL, f->tx[f->n_tx].pkt, len,
                                       &o);
        f->n_tx++;
    }
    for (unsigned int i = 0; i < k && f->n_rx < ARRAY_SIZE(f->rx); i++) {
        struct tfe_buf_opts o = { .n_descs = pk_rng_range(&f->rng, 1, 2) };

        if (rx->n_free < o.n_descs) {
            break;
        }
        pk_rx_post(pk, 0, 2048, &o);
        f->rx[f->n_rx++] = 2048;
    }
}

/* Dequeues up to 'n' and enqueues up to 'n' packets on queue pair 0,
 * checking that every pending packet comes out once, in order. */
static void
flow_move(struct pk *pk, struct flow *f, unsigned int n)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    unsigned int got = pk_dq(pk, 0, out, n);

    TU_CHECK_EQ(got, MIN(n, f->n_tx));
    for (unsigned int i = 0; i < got; i++) {
        pk_check_pkt(&out[i], f->tx[i].pkt, f->tx[i].len, "flow dequeue");
        pk_expect_used(&pk->vq[TX(0)], f->tx[i].id, 0);
    }
    pk_expect_no_used(&pk->vq[TX(0)]);
    pk_release_pkts(out, n);

    /* The dequeued packets go straight back to the guest. */
    {
        struct vhost_pkt in[VHOST_MAX_BURST];
        unsigned int m = MIN(got, f->n_rx), done;

        for (unsigned int i = 0; i < got; i++) {
            in[i] = (struct vhost_pkt) { .data = f->tx[i].pkt,
                                         .len = f->tx[i].len };
        }
        done = vhost_enqueue_burst(pk->port, 0, in, got);
        TU_CHECK_EQ(done, m);
        for (unsigned int i = 0; i < done; i++) {
            pk_rx_expect(pk, 0, f->tx[i].pkt, f->tx[i].len, NULL, 1,
                         "flow enqueue");
        }
        pk_expect_no_used(&pk->vq[RX(0)]);
        memmove(f->rx, f->rx + done, (f->n_rx - done) * sizeof *f->rx);
        f->n_rx -= done;
        f->rx_done += done;
    }
    for (unsigned int i = 0; i < got; i++) {
        free(f->tx[i].pkt);
    }
    memmove(f->tx, f->tx + got, (f->n_tx - got) * sizeof *f->tx);
    f->n_tx -= got;
    f->tx_done += got;
}

static void
flow_free(struct flow *f)
{
    for (unsigned int i = 0; i < f->n_tx; i++) {
        free(f->tx[i].pkt);
    }
    f->n_tx = 0;
}

/* Stops every vring with GET_VRING_BASE, checks the bases against the
 * driver's used positions, disconnects, reconnects and sets the device up
 * again from those bases. */
static void
reconnect(struct pk *pk, const struct pk_cfg *cfg)
{
    struct tfe_setup setup;
    uint32_t base[4];

    for (unsigned int q = 0; q < 4; q++) {
        const struct tfe_vq *vq = &pk->vq[q];

        TU_CHECK_OK(tfe_get_vring_base(pk->fe, q, &base[q]));
        tu_log("  vring %u: GET_VRING_BASE %#"PRIx32" (driver: avail %u "
               "wrap %d, used %u wrap %d)", q, base[q], vq->next_avail,
               vq->avail_wrap, vq->next_used, vq->used_wrap);
        TU_CHECK_EQ(base[q], pk_stopped_base(vq));
    }
    tfe_disconnect(pk->fe);
    TU_CHECK(tu_wait_port(pk->port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_connect(pk->fe, pk->path));
    TU_CHECK(tu_wait_port(pk->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        pk->fe->vrings[q].has_base = true;
        pk->fe->vrings[q].base = base[q];
    }
    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features & ~F(VIRTIO_F_RING_PACKED);
    setup.packed = true;
    setup.queue_size = cfg->queue_size;
    TU_CHECK_OK(tfe_setup_device(pk->fe, 2, &setup));
    TU_CHECK(tu_port_info(pk->port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(pk->port, q).ready);
    }
}

static void
test_reconnect(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    struct flow f;
    struct pk pk;

    pk_start(&pk, "reconnect", &cfg);
    memset(&f, 0, sizeof f);
    f.rng.s = 0x1234567;
    for (int round = 0; round < 4; round++) {
        struct tfe_vq *tx = &pk.vq[TX(0)];
        bool want_wrap = round % 2;

        tu_log("round %d: traffic until the transmit wrap counter is %d, "
               "with packets and buffers left pending", round, want_wrap);
        do {
            flow_post(&pk, &f, pk_rng_range(&f.rng, 1, 12));
            flow_move(&pk, &f, pk_rng_range(&f.rng, 1, 8));
        } while (tx->used_wrap != want_wrap || tx->next_used < 10);
        flow_post(&pk, &f, 10);
        TU_CHECK(f.n_tx > 0);
        tu_log("  %u packets and %u buffers pending; reconnect", f.n_tx,
               f.n_rx);
        reconnect(&pk, &cfg);
        tu_log("  traffic resumes: every pending packet once, in order");
        while (f.n_tx) {
            flow_move(&pk, &f, pk_rng_range(&f.rng, 1, 8));
        }
        pk_roundtrip(&pk, 1, "after the reconnect");
    }
    tu_log("%"PRIu64" packets out and %"PRIu64" back in", f.tx_done,
           f.rx_done);
    {
        struct vhost_queue_stats s0 = pk_get_stats(&pk, TX(0));
        struct vhost_queue_stats s1 = pk_get_stats(&pk, RX(0));
        TU_CHECK_EQ(s0.packets, f.tx_done);
        TU_CHECK_EQ(s1.packets, f.rx_done);
        TU_CHECK_EQ(pk_total_drops(&s0) + pk_total_drops(&s1), 0);
    }
    flow_free(&f);
    pk_finish(&pk);
}

/* Backend restarts: the ring position log (lib/virtq-poslog.h). */

/* The backend dies and a new one takes its place, as a killed
 * ovs-vswitchd's successor does: the port and engine go without a
 * GET_VRING_BASE, a new engine and port open the same socket and position
 * log, and the frontend, which keeps its rings and guest memory, sets the
 * device up again from the stale bases QEMU sends a packed ring's new
 * backend (the initial ones), or from 'base' if 'known'.  Returns how
 * many rings the new port recovered from the log. */
static uint64_t
backend_restart(struct pk *pk, const char *name, const struct pk_cfg *cfg,
                const uint32_t known[4])
{
    struct vhost_port_options opts;
    struct tfe_setup setup;

    vhost_port_destroy(pk->port);
    vhost_engine_destroy(pk->engine);
    TU_CHECK(tfe_wait_closed(pk->fe, TU_TIMEOUT_MS));
    tfe_disconnect(pk->fe);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = pk->path;
    opts.mode = VHOST_PORT_SERVER;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk->ev;
    opts.state_path = cfg->state_path;
    TU_CHECK_OK(vhost_engine_create(&pk->engine));
    TU_CHECK_OK(vhost_engine_start(pk->engine));
    TU_CHECK_OK(vhost_port_create(pk->engine, &opts, &pk->port));
    TU_CHECK_OK(tfe_connect(pk->fe, pk->path));
    TU_CHECK(tu_wait_port(pk->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        pk->fe->vrings[q].has_base = known != NULL;
        pk->fe->vrings[q].base = known ? known[q] : 0;
    }
    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features & ~F(VIRTIO_F_RING_PACKED);
    setup.packed = true;
    setup.queue_size = cfg->queue_size;
    TU_CHECK_OK(tfe_setup_device(pk->fe, 2, &setup));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(pk->port, q).ready);
    }
    return tu_port_info(pk->port).counters.rings_recovered;
}

/* Traffic, with packets and buffers pending and every chain length,
 * direct and indirect; then the backend dies and its successor is handed
 * the stale bases.  It resumes every ring where it stood: every pending
 * packet comes out once, in order, over laps with both wrap counters. */
static void
run_restart(const char *name, uint64_t features)
{
    struct pk_cfg cfg = pk_cfg_sized(features, 33);
    char *state = tu_path("restart.rings");
    struct flow f;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, name, &cfg);
    memset(&f, 0, sizeof f);
    f.rng.s = 0x7654321;
    for (int round = 0; round < 4; round++) {
        struct tfe_vq *tx = &pk.vq[TX(0)];
        bool want_wrap = round % 2;

        tu_log("round %d: traffic until the transmit wrap counter is %d",
               round, want_wrap);
        do {
            flow_post(&pk, &f, pk_rng_range(&f.rng, 1, 12));
            flow_move(&pk, &f, pk_rng_range(&f.rng, 1, 8));
        } while (tx->used_wrap != want_wrap || tx->next_used < 10);
        pk_roundtrip(&pk, 1, "before the restart");
        flow_post(&pk, &f, 10);
        TU_CHECK(f.n_tx > 0);
        tu_log("  %u packets and %u buffers pending; the backend dies",
               f.n_tx, f.n_rx);
        /* Every ring not back at its very first position (all have
         * moved, by the traffic or the round trips) is recovered. */
        unsigned int moved = 0;
        for (unsigned int q = 0; q < 4; q++) {
            moved += pk_stopped_base(&pk.vq[q]) != TFE_PACKED_BASE_INIT2;
        }
        TU_CHECK(moved >= 3);
        uint64_t n = backend_restart(&pk, name, &cfg, NULL);
        tu_log("  its successor recovered %"PRIu64" rings of %u", n, moved);
        TU_CHECK_EQ(n, moved);
        while (f.n_tx) {
            flow_move(&pk, &f, pk_rng_range(&f.rng, 1, 8));
        }
        pk_roundtrip(&pk, 1, "after the restart");
    }
    {
        struct vhost_queue_stats s0 = pk_get_stats(&pk, TX(0));
        TU_CHECK_EQ(pk_total_drops(&s0), 0);
    }
    flow_free(&f);
    pk_finish(&pk);
    tu_log("the frontend went without stopping its rings: the log stays");
    TU_CHECK_OK(access(state, F_OK));
    unlink(state);
    free(state);
}

static void
test_restart(void)
{
    run_restart("restart", PK_FULL);
}

static void
test_restart_in_order(void)
{
    run_restart("restart-ino", PK_FULL | PK_INO);
}

/* The backend dies after a pk_burst logged its positions but before the
 * store that hands its used descriptors to the driver (the head's flags,
 * put back here as the driver left them), for chains of three
 * descriptors.  Its successor makes that store and resumes at the pk_burst's
 * end: the driver gets every chain back once, and nothing comes out
 * twice. */
static void
test_restart_unseen(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    char *state = tu_path("unseen.rings");
    struct tfe_vq *tx;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-unseen", &cfg);
    tx = &pk.vq[TX(0)];
    for (int round = 0; round < 12; round++) {
        struct tfe_buf_opts o = { .n_descs = 3 };
        struct vhost_pkt out[8];
        uint8_t *pkts[3];
        int ids[3];

        for (int i = 0; i < 3; i++) {
            pkts[i] = pk_new_pkt(&pk, 200 + i, MAC_UNICAST);
            ids[i] = pk_tx_post(&pk, 0, NULL, pkts[i], 200 + i, &o);
        }
        unsigned int head = tx->next_used;
        uint16_t flags = tx->pdesc[head].flags;
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 8), 3);
        pk_release_pkts(out, 8);
        if (round % 3 == 2) {
            tu_log("round %d: the burst's head flags at %u put back: the "
                   "driver saw nothing", round, head);
            tx->pdesc[head].flags = flags;
            pk_expect_no_used(tx);
            TU_CHECK_EQ(backend_restart(&pk, "restart-unseen", &cfg, NULL),
                        1);
            TU_CHECK_EQ(pk_dq(&pk, 0, out, 8), 0);
            TU_CHECK_EQ(tu_port_info(pk.port)
                        .counters.rings_recovered_inexact, 0);
        }
        for (int i = 0; i < 3; i++) {
            pk_expect_used(tx, ids[i], 0);
            free(pkts[i]);
        }
        pk_expect_no_used(tx);
    }
    pk_roundtrip(&pk, 0, "after the restarts");
    pk_finish(&pk);
    unlink(state);
    free(state);
}

/* A backend killed after a pk_burst wrote some used descriptors back and
 * before it logged (here: one written by hand, ahead of the logged
 * position, as such a pk_burst leaves it) cannot be resumed exactly: its
 * successor says so and counts it. */
static void
test_restart_stray(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    char *state = tu_path("stray.rings");
    struct tfe_vq *tx;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-stray", &cfg);
    tx = &pk.vq[TX(0)];
    for (int i = 0; i < 5; i++) {
        pk_roundtrip(&pk, 0, "traffic");
    }
    unsigned int ahead = (tx->next_used + 4) % tx->size;
    bool wrap = tx->used_wrap ^ (ahead < tx->next_used);
    tx->pdesc[ahead].flags = wrap ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0;
    TU_CHECK_EQ(backend_restart(&pk, "restart-stray", &cfg, NULL), 2);
    TU_CHECK_EQ(tu_port_info(pk.port).counters.rings_recovered_inexact, 1);
    pk_finish(&pk);
    unlink(state);
    free(state);
}

/* A frontend that stopped its rings with GET_VRING_BASE knows where they
 * stand: its next backend takes the bases it sends, recovers nothing, and
 * once no ring is started the port's log is removed. */
static void
test_restart_clean(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    char *state = tu_path("clean.rings");
    uint32_t base[4];
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-clean", &cfg);
    for (int i = 0; i < 40; i++) {
        pk_roundtrip(&pk, i % 2, "traffic");
    }
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, q, &base[q]));
        TU_CHECK_EQ(base[q], pk_stopped_base(&pk.vq[q]));
    }
    TU_CHECK_EQ(backend_restart(&pk, "restart-clean", &cfg, base), 0);
    pk_roundtrip(&pk, 0, "after the restart");
    pk_roundtrip(&pk, 1, "after the restart");
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, q, &base[q]));
    }
    vhost_port_destroy(pk.port);
    pk.port = NULL;
    tu_log("every ring stopped: the port's log went with it");
    TU_CHECK(access(state, F_OK) && errno == ENOENT);
    pk_finish(&pk);
    free(state);
}

/* The backend dies and, while it is down, the guest resets the device
 * (a reboot, a driver reload): QEMU keeps the same memory file and the
 * driver allocates its rings at the same addresses, so the log's identity
 * still matches, but the rings are fresh (zeroed, QEMU's base the initial
 * one).  The successor must not move them to the old rings' positions:
 * the device would wait at a slot the new driver has not reached and the
 * queue would stall. */
static void
test_restart_guest_reset(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    char *state = tu_path("greset.rings");
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-greset", &cfg);
    for (int i = 0; i < 40; i++) {
        pk_roundtrip(&pk, i % 2, "traffic");
    }
    tu_log("the backend dies; the guest resets its rings meanwhile");
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_reset(&pk.vq[q]);
    }
    TU_CHECK_EQ(backend_restart(&pk, "restart-greset", &cfg, NULL), 0);
    pk_roundtrip(&pk, 0, "after the restart");
    pk_roundtrip(&pk, 1, "after the restart");
    pk_finish(&pk);
    unlink(state);
    free(state);
}

/* The backend dies in a one-chain pk_burst after logging it and before
 * writing anything of its used descriptor into the head slot, which then
 * reads as the driver made it available: buffer length and all.  Its
 * successor hands it over as the dead pk_burst would have, with the logged
 * id and length (0: a transmit chain), and the packet does not come out
 * twice.  (Before the head's id and length went after the log, a kill
 * between them and the log left a head slot the successor walked again
 * with the used length, 0, as its buffer length: the packet was lost and
 * the guest blamed, "chain shorter than the header".) */
static void
test_restart_head_unwritten(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    char *state = tu_path("unwritten.rings");
    struct tfe_buf_opts o = { .n_descs = 1 };
    struct vhost_pkt out[8];
    struct tfe_vq *tx;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-unwritten", &cfg);
    tx = &pk.vq[TX(0)];
    for (int i = 0; i < 5; i++) {
        pk_roundtrip(&pk, 0, "traffic");
    }
    uint8_t *pkt = pk_new_pkt(&pk, 300, MAC_UNICAST);
    int id = pk_tx_post(&pk, 0, NULL, pkt, 300, &o);
    unsigned int head = tx->next_used;
    struct tfe_pdesc avail = tx->pdesc[head];
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 8), 1);
    pk_release_pkts(out, 8);
    tu_log("the head slot %u put back as the driver made it available "
           "(length %u)", head, avail.len);
    tx->pdesc[head] = avail;
    pk_expect_no_used(tx);
    TU_CHECK(backend_restart(&pk, "restart-unwritten", &cfg, NULL) >= 1);
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 8), 0);
    pk_expect_used(tx, id, 0);
    pk_expect_no_used(tx);
    pk_roundtrip(&pk, 0, "after the restart");
    free(pkt);
    pk_finish(&pk);
    unlink(state);
    free(state);
}

#define CHECK_ACK(EXPR) TU_CHECK_EQ((EXPR), 0)
#define CHECK_NACK(EXPR) TU_CHECK_EQ((EXPR), TFE_NACK)

/* Sets vring 'q' up again from SET_VRING_BASE 'base' on a zeroed ring. */
static void
resetup_vring(struct pk *pk, unsigned int q, uint32_t base)
{
    uint32_t old;

    TU_CHECK_OK(tfe_get_vring_base(pk->fe, q, &old));
    tfe_vq_reset(&pk->vq[q]);
    pk->fe->vrings[q].has_base = true;
    pk->fe->vrings[q].base = base;
    TU_CHECK_OK(tfe_vring_setup(pk->fe, q, pk->vq[q].size));
    tfe_vq_pset_position(&pk->vq[q], base);
    TU_CHECK(tu_queue_info(pk->port, q).ready);
}

static void
test_vring_base(void)
{
    /* Positions past the ring (in either half), and a used position
     * ahead of the avail one: 0x10000 is avail 0 in the second lap with
     * used 1 in the same lap, 0x80058000 avail 0 and used 5 both in the
     * first lap. */
    static const uint32_t bad[] = {
        0x10000, UINT32_MAX, 33, 0x8021, 0x7fff, 0xffff, 0x8000 | 40,
        0x80058000, 0x00218000, 0x80218000, 0x80008021, 0x80010000 | 0x1f,
    };
    /* The avail half alone (DPDK's virtio-user), both halves equal
     * (QEMU on a stopped ring), and used behind avail: 0x18000 is avail
     * 0 in the third lap, used 1 in the second (32 descriptors in
     * flight); 0x1001f avail 31 and used 1 in the second lap; 0x208005
     * avail 5 in the third lap, used 32 in the second. */
    static const uint32_t good[] = {
        0, 32, 0x8000, 0x8020, 17, 0x8011, 0x80008000, 0x80118011,
        0x00200020, 0x18000, 0x1001f, 0x208005,
    };
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 33);
    struct pk pk;
    uint32_t base;

    pk_start(&pk, "vring-base", &cfg);
    TU_CHECK(pk.fe->reply_ack);
    tu_log("a fresh ring: GET_VRING_BASE gives position 0, wrap counter 1");
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(1), &base));
    TU_CHECK_EQ(base, TFE_PACKED_BASE_INIT2);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("SET_VRING_BASE %#"PRIx32" on a ring of 33 is rejected",
               bad[i]);
        CHECK_NACK(tfe_set_vring_base(pk.fe, TX(1), bad[i]));
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(1), &base));
        TU_CHECK_EQ(base, TFE_PACKED_BASE_INIT2);
    }
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        tu_log("SET_VRING_BASE %#"PRIx32" is taken and given back",
               good[i]);
        CHECK_ACK(tfe_set_vring_base(pk.fe, TX(1), good[i]));
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(1), &base));
        TU_CHECK_EQ(base, good[i] >> 16 ? good[i] : good[i] | good[i] << 16);
    }
    CHECK_ACK(tfe_set_vring_base(pk.fe, TX(1), TFE_PACKED_BASE_INIT));
    TU_CHECK_OK(tfe_vring_setup(pk.fe, TX(1), 33));

    tu_log("traffic from position 31 wrap 1, 5 wrap 0 and 32 wrap 0 on "
           "every vring");
    {
        static const uint32_t starts[] = { 0x8000 | 31, 5, 32 };

        for (size_t i = 0; i < ARRAY_SIZE(starts); i++) {
            for (unsigned int q = 0; q < 4; q++) {
                resetup_vring(&pk, q, starts[i]);
            }
            TU_CHECK(tu_port_info(pk.port).ready);
            for (int k = 0; k < 20; k++) {
                pk_roundtrip(&pk, k % 2, "from a SET_VRING_BASE position");
            }
            for (unsigned int q = 0; q < 4; q++) {
                TU_CHECK_OK(tfe_get_vring_base(pk.fe, q, &base));
                TU_CHECK_EQ(base, tfe_vq_pbase(&pk.vq[q]));
                /* 10 round trips of 2 packets on each vring. */
                uint32_t pos = (((starts[i] & 0x7fff) + 20) % 33)
                               | ((uint32_t) (!!(starts[i] & 0x8000)
                                              ^ (((starts[i] & 0x7fff) + 20)
                                                 / 33 % 2)) << 15);
                TU_CHECK_EQ(base, pos | pos << 16);
            }
            for (unsigned int q = 0; q < 4; q++) {
                TU_CHECK_OK(tfe_vring_setup(pk.fe, q, 33));
            }
        }
    }
    pk_finish(&pk);
}

/* Without SET_VRING_BASE, both wrap counters start at 1 (§2.8.1). */
static void
test_no_vring_base(void)
{
    struct vhost_port_options opts;
    struct tfe_setup setup = {
        .features_mask = PK_FULL & ~F(VIRTIO_F_RING_PACKED), .packed = true,
    };
    struct pk pk;
    uint32_t base;

    memset(&pk, 0, sizeof pk);
    pk.fds0 = tu_count_fds();
    pk.threads0 = tu_count_threads();
    tu_events_init(&pk.ev);
    pk.path = tu_path("no-base");
    vhost_port_options_init(&opts);
    opts.name = "no-base";
    opts.path = pk.path;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk.ev;
    TU_CHECK_OK(vhost_engine_create(&pk.engine));
    TU_CHECK_OK(vhost_engine_start(pk.engine));
    TU_CHECK_OK(vhost_port_create(pk.engine, &opts, &pk.port));
    pk.fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk.fe, pk.path));

    tu_log("bring-up with SET_VRING_NUM, ADDR, KICK, CALL and ENABLE but no "
           "SET_VRING_BASE");
    TU_CHECK_OK(tfe_negotiate(pk.fe, &setup));
    TU_CHECK(pk.fe->features & F(VIRTIO_F_RING_PACKED));
    TU_CHECK_OK(tfe_set_mem_table(pk.fe));
    for (unsigned int q = 0; q < 4; q++) {
        struct tfe_vring *vr = &pk.fe->vrings[q];

        TU_CHECK_OK(tfe_vring_alloc(pk.fe, q, 7));
        vr->kick_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        vr->call_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        TU_CHECK_OK(tfe_set_vring_num(pk.fe, q, 7));
        TU_CHECK_OK(tfe_set_vring_addr(pk.fe, q));
        TU_CHECK_OK(tfe_set_vring_kick(pk.fe, q, vr->kick_fd));
        TU_CHECK_OK(tfe_set_vring_call(pk.fe, q, vr->call_fd));
        TU_CHECK_OK(tfe_set_vring_enable(pk.fe, q, true));
    }
    TU_CHECK(tu_port_info(pk.port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&pk.vq[q], pk.fe, q, q % 2, PK_ARENA_SIZE));
    }
    pk.hdr_len = 12;
    pk.mrg = true;
    pk.packed = true;
    pk.pa.fail_after = -1;
    pk.alloc = (struct vhost_pkt_alloc) {
        .alloc = pk_palloc_alloc, .free = pk_palloc_free, .aux = &pk.pa,
    };
    for (int k = 0; k < 9; k++) {
        pk_roundtrip(&pk, k % 2, "from position 0, wrap counter 1");
    }
    tu_log("after 10 packets each way on a ring of 7: position 3, wrap 0");
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
    TU_CHECK_EQ(base, 0x00030003);
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, RX(0), &base));
    TU_CHECK_EQ(base, 0x00030003);
    pk_finish(&pk);
}

/* A frontend that sends SET_VRING_BASE while the split layout is still
 * negotiated, then negotiates the packed ring.  0x8003 is a valid split
 * base (an index); for the packed ring it means position 3, wrap counter
 * 1.  The engine may refuse either message, or read the base as packed
 * once the ring is packed; it must not run the ring from a position
 * outside it.  A descriptor planted where position 0x8003 would be (past
 * the 32-entry ring, still in guest memory) shows whether it does. */
static void
test_base_before_features(void)
{
    struct vhost_port_options opts;
    struct vhost_pkt out[4];
    uint64_t offered, protocol;
    struct pk pk;
    int error;

    memset(&pk, 0, sizeof pk);
    pk.fds0 = tu_count_fds();
    pk.threads0 = tu_count_threads();
    tu_events_init(&pk.ev);
    pk.path = tu_path("base-order");
    vhost_port_options_init(&opts);
    opts.name = "base-order";
    opts.path = pk.path;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk.ev;
    TU_CHECK_OK(vhost_engine_create(&pk.engine));
    TU_CHECK_OK(vhost_engine_start(pk.engine));
    TU_CHECK_OK(vhost_port_create(pk.engine, &opts, &pk.port));
    pk.fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk.fe, pk.path));

    TU_CHECK_OK(tfe_get_features(pk.fe, &offered));
    TU_CHECK_OK(tfe_get_protocol_features(pk.fe, &protocol));
    TU_CHECK_OK(tfe_set_protocol_features(pk.fe, protocol));
    TU_CHECK_OK(tfe_set_owner(pk.fe));
    TU_CHECK_OK(tfe_set_mem_table(pk.fe));
    tu_log("SET_VRING_NUM 32 and SET_VRING_BASE 0x8003 before "
           "SET_FEATURES");
    error = 0;
    for (unsigned int q = 0; q < 4 && !error; q++) {
        TU_CHECK_OK(tfe_vring_alloc(pk.fe, q, 32));
        TU_CHECK_OK(tfe_set_vring_num(pk.fe, q, 32));
        error = tfe_set_vring_base(pk.fe, q, 0x8003);
    }
    if (!error) {
        tu_log("SET_FEATURES with RING_PACKED");
        error = tfe_set_features(pk.fe, (PK_FULL & offered)
                                 | F(VHOST_USER_F_PROTOCOL_FEATURES));
    }
    if (error) {
        TU_CHECK_EQ(error, TFE_NACK);
        tu_log("the engine refused the sequence: fine");
        tfe_destroy(pk.fe);
        vhost_port_destroy(pk.port);
        vhost_engine_destroy(pk.engine);
        tu_events_destroy(&pk.ev);
        free(pk.path);
        return;
    }
    for (unsigned int q = 0; q < 4; q++) {
        struct tfe_vring *vr = &pk.fe->vrings[q];

        vr->kick_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        vr->call_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        TU_CHECK_OK(tfe_set_vring_addr(pk.fe, q));
        TU_CHECK_OK(tfe_set_vring_kick(pk.fe, q, vr->kick_fd));
        TU_CHECK_OK(tfe_set_vring_call(pk.fe, q, vr->call_fd));
        TU_CHECK_OK(tfe_set_vring_enable(pk.fe, q, true));
    }
    TU_CHECK(tu_port_info(pk.port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&pk.vq[q], pk.fe, q, q % 2, PK_ARENA_SIZE));
        tfe_vq_pset_position(&pk.vq[q], 0x8003);
    }
    pk.hdr_len = 12;
    pk.mrg = true;
    pk.packed = true;
    pk.pa.fail_after = -1;
    pk.alloc = (struct vhost_pkt_alloc) {
        .alloc = pk_palloc_alloc, .free = pk_palloc_free, .aux = &pk.pa,
    };

    {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        uint64_t planted = tfe_vq_ring_gpa(vq) + 16 * 0x8003;
        uint8_t *a = pk_new_pkt(&pk, 100, MAC_UNICAST);
        uint8_t *b = pk_new_pkt(&pk, 200, MAC_UNICAST);
        uint64_t buf = pk_arena_buf(vq, 212);
        struct tfe_pdesc d = {
            .addr = buf, .len = 212, .id = 7, .flags = TFE_PDESC_F_USED,
        };
        struct tfe_pdesc after;
        unsigned int n;

        TU_CHECK(tfe_mem_write(vq->mem, buf + 12, b, 200));
        TU_CHECK(tfe_mem_gpa_to_va(vq->mem, planted, 16) != NULL);
        TU_CHECK(tfe_mem_write(vq->mem, planted, &d, sizeof d));
        tu_log("a packet at position 3 (wrap 1), and one planted %#"PRIx64
               " bytes past the start of the ring (available with wrap 0)",
               (uint64_t) 16 * 0x8003);
        pk_tx_post(&pk, 0, NULL, a, 100, NULL);
        n = pk_dq(&pk, 0, out, 4);
        TU_CHECK(tfe_mem_read(vq->mem, planted, &after, sizeof after));
        if (n && out[0].len == 200) {
            TU_FAIL("the engine ran the 32-entry ring from position 0x8003 "
                    "(wrap 0): it dequeued the descriptor planted past the "
                    "ring and wrote {id %u, len %"PRIu32", flags %#x} there",
                    after.id, after.len, after.flags);
        }
        TU_CHECK_EQ(after.flags, d.flags);
        TU_CHECK_EQ(n, 1);
        pk_check_pkt(&out[0], a, 100, "from position 3");
        pk_release_pkts(out, 4);
        free(a);
        free(b);
    }
    pk_finish(&pk);
}

/* A frontend that shrinks a packed ring below its base: SET_VRING_BASE
 * 200 on a ring of 256, then SET_VRING_NUM 33.  The engine may refuse the
 * size (or the base, or starting the ring), but must not run a 33-entry
 * ring from position 200. */
static void
test_num_after_base(void)
{
    struct pk_cfg cfg = pk_cfg_features(PK_FULL);
    struct vhost_pkt out[4];
    struct tfe_vring *vr;
    uint32_t base;
    int error;
    struct pk pk;

    pk_start(&pk, "num-after-base", &cfg);
    vr = &pk.fe->vrings[TX(0)];
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
    CHECK_ACK(tfe_set_vring_base(pk.fe, TX(0), 0x8000 | 200));
    tu_log("SET_VRING_BASE 0x80c8 on a ring of 256, then SET_VRING_NUM 33");
    error = tfe_set_vring_num(pk.fe, TX(0), 33);
    if (!error) {
        error = tfe_set_vring_addr(pk.fe, TX(0));
    }
    if (!error) {
        error = tfe_set_vring_kick(pk.fe, TX(0), vr->kick_fd);
    }
    if (error) {
        TU_CHECK_EQ(error, TFE_NACK);
        tu_log("the engine refused: fine");
    } else if (tu_queue_info(pk.port, TX(0)).ready) {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        struct tfe_pdesc *slot = &vq->pdesc[200];
        uint64_t buf = pk_arena_buf(vq, 212);
        struct tfe_pdesc planted = {
            .addr = buf, .len = 212, .id = 3, .flags = TFE_PDESC_F_AVAIL,
        };
        unsigned int n;

        tu_log("the ring runs: plant an available descriptor in slot 200, "
               "past the 33 entries");
        *slot = planted;
        n = pk_dq(&pk, 0, out, 4);
        pk_release_pkts(out, 4);
        if (n || slot->flags != planted.flags) {
            TU_FAIL("the engine ran a 33-entry ring from position 200: it "
                    "dequeued %u packets from slot 200, which now holds "
                    "{id %u, len %"PRIu32", flags %#x}", n, slot->id,
                    slot->len, slot->flags);
        }
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
        tu_log("GET_VRING_BASE now gives %#"PRIx32, base);
        TU_CHECK((base & 0x7fff) < 33);
        TU_CHECK((base >> 16 & 0x7fff) < 33);
    } else {
        tu_log("the engine did not start the ring: fine");
    }
    pk_finish(&pk);
}

/* VIRTIO_F_RING_PACKED without VIRTIO_F_VERSION_1 (nor MRG_RXBUF): the
 * packed ring is a VIRTIO 1.x feature.  The engine may refuse the
 * features; if it takes them, it must use one header layout for them, and
 * the one §5.1.6 gives without VERSION_1 and MRG_RXBUF is 10 bytes (as it
 * does on a split ring). */
static void
test_no_version1(void)
{
    struct vhost_port_options opts;
    struct tfe_setup setup = {
        .features_mask = PK_BASE & ~F(VIRTIO_F_VERSION_1)
                         & ~F(VIRTIO_F_RING_PACKED),
        .packed = true,
    };
    struct pk pk;
    int error;

    memset(&pk, 0, sizeof pk);
    pk.fds0 = tu_count_fds();
    pk.threads0 = tu_count_threads();
    tu_events_init(&pk.ev);
    pk.path = tu_path("no-v1");
    vhost_port_options_init(&opts);
    opts.name = "no-v1";
    opts.path = pk.path;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk.ev;
    TU_CHECK_OK(vhost_engine_create(&pk.engine));
    TU_CHECK_OK(vhost_engine_start(pk.engine));
    TU_CHECK_OK(vhost_port_create(pk.engine, &opts, &pk.port));
    pk.fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk.fe, pk.path));
    tu_log("SET_FEATURES with RING_PACKED but not VERSION_1");
    error = tfe_setup_device(pk.fe, 2, &setup);
    if (error) {
        TU_CHECK_EQ(error, TFE_NACK);
        tu_log("the engine refused: fine");
        tfe_destroy(pk.fe);
        vhost_port_destroy(pk.port);
        vhost_engine_destroy(pk.engine);
        tu_events_destroy(&pk.ev);
        free(pk.path);
        return;
    }
    TU_CHECK(tu_port_info(pk.port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&pk.vq[q], pk.fe, q, q % 2, PK_ARENA_SIZE));
    }
    pk.hdr_len = pk.vq[0].hdr_len;
    pk.mrg = false;
    pk.packed = true;
    TU_CHECK_EQ(pk.hdr_len, 10);
    pk.pa.fail_after = -1;
    pk.alloc = (struct vhost_pkt_alloc) {
        .alloc = pk_palloc_alloc, .free = pk_palloc_free, .aux = &pk.pa,
    };
    tu_log("the engine took them: packets with a 10-byte header");
    pk_roundtrip(&pk, 0, "10-byte header");
    pk_finish(&pk);
}

/* Dirty logging (vhost-user.rst, "Migration"): buffers written and, for
 * rings with VHOST_VRING_F_LOG, each used descriptor at log_guest_addr +
 * 16 * position (the descriptor ring's address). */

static void
mark_pages(uint8_t *bitmap, uint64_t gpa, uint64_t len)
{
    for (uint64_t page = gpa / PAGE; len && page <= (gpa + len - 1) / PAGE;
         page++) {
        bitmap[page / 8] |= 1u << (page % 8);
    }
}

struct dlog {
    uint8_t *log;
    uint8_t exp[PK_LOG_SIZE];
};

static uint64_t
read_eventfd(int fd)
{
    uint64_t n = 0;

    if (fd < 0 || read(fd, &n, sizeof n) != sizeof n) {
        return 0;
    }
    return n;
}

static void
dlog_start(struct pk *pk, struct dlog *dl)
{
    TU_CHECK_OK(tfe_log_create(pk->fe, PK_LOG_SIZE));
    TU_CHECK_OK(tfe_set_log_base(pk->fe, PK_LOG_SIZE, 0, pk->fe->log_fd,
                                 false));
    TU_CHECK_OK(tfe_set_log_fd(pk->fe));
    TU_CHECK(tu_port_info(pk->port).log_mapped);
    dl->log = mmap(NULL, PK_LOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                   pk->fe->log_fd, 0);
    TU_CHECK(dl->log != MAP_FAILED);
    memset(dl->exp, 0, sizeof dl->exp);
}

/* Checks that the log marks exactly the pages expected, and that the log
 * eventfd was written if any was; then clears both. */
static void
dlog_check(struct pk *pk, struct dlog *dl, const char *what)
{
    bool any = false;

    for (uint64_t page = 0; page < PK_LOG_SIZE * 8; page++) {
        bool got = dl->log[page / 8] & (1u << (page % 8));
        bool want = dl->exp[page / 8] & (1u << (page % 8));

        if (got != want) {
            TU_FAIL("%s: page %#"PRIx64" (GPA %#"PRIx64") is %s the dirty "
                    "log", what, page, page * PAGE,
                    got ? "wrongly in" : "missing from");
        }
        any |= want;
    }
    if (any) {
        TU_CHECK(read_eventfd(pk->fe->log_call_fd) > 0);
    } else {
        TU_CHECK_EQ(read_eventfd(pk->fe->log_call_fd), 0);
    }
    memset(dl->log, 0, PK_LOG_SIZE);
    memset(dl->exp, 0, sizeof dl->exp);
}

/* The page of the used descriptor at driver position 'pos' of 'vq'. */
static void
mark_used(struct dlog *dl, const struct tfe_vq *vq, unsigned int pos)
{
    mark_pages(dl->exp, tfe_vq_ring_gpa(vq) + 16 * pos, 16);
}

static void
test_dirty_log(void)
{
    struct pk_cfg cfg = {
        .features = PK_FULL | F(VHOST_F_LOG_ALL), .log_used = true,
        .queue_size = 1024, .has_base = true, .base = 0x8000 | 300,
    };
    struct vhost_pkt out[4];
    struct dlog dl;
    struct pk pk;
    uint8_t *a;

    pk_start(&pk, "dirty-log", &cfg);
    dlog_start(&pk, &dl);

    tu_log("enqueue at position 300 into two buffers on different pages "
           "marks the bytes written and the ring's second page");
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];
        uint64_t base = tfe_vq_alloc(vq, 16 * PAGE, PAGE);
        struct tfe_seg segs[2] = {
            { base + 3 * PAGE - 100, 100 },
            { base + 10 * PAGE, 8192 },
        };

        TU_CHECK(tfe_vq_add_chain(vq, segs, 2, true, NULL) >= 0);
        a = pk_new_pkt(&pk, 500, MAC_UNICAST);
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 500, NULL), 1);
        mark_pages(dl.exp, segs[0].gpa, 100);
        mark_pages(dl.exp, segs[1].gpa, pk.hdr_len + 500 - 100);
        mark_used(&dl, vq, 300);
        /* The queue's first pk_burst asks the driver not to kick: a write
         * to the device event area, logged at its own address. */
        mark_pages(dl.exp, tfe_vq_used_gpa(vq), 2);
        TU_CHECK_EQ((tfe_vq_ring_gpa(vq) + 16 * 300) / PAGE,
                    tfe_vq_ring_gpa(vq) / PAGE + 1);
        dlog_check(&pk, &dl, "enqueue");
        pk_rx_expect(&pk, 0, a, 500, NULL, 1, "logged enqueue");
        free(a);
    }

    tu_log("dequeue at position 300 marks the ring's second page only");
    a = pk_new_pkt(&pk, 300, MAC_UNICAST);
    pk_tx_post(&pk, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
    pk_release_pkts(out, 4);
    mark_used(&dl, &pk.vq[TX(0)], 300);
    mark_pages(dl.exp, tfe_vq_used_gpa(&pk.vq[TX(0)]), 2);
    dlog_check(&pk, &dl, "dequeue");
    TU_CHECK_OK(pk_get_used(&pk.vq[TX(0)], &(struct tfe_used_elem) { 0 },
                            "dequeue"));

    tu_log("a bad chain's used descriptor is logged too");
    {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        unsigned int pos = vq->next_avail;
        uint16_t id = pk_post_one(vq, PK_GAP_GPA, 100, 0, pk_free_id(vq));

        TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 0);
        pk_release_pkts(out, 4);
        mark_used(&dl, vq, pos);
        dlog_check(&pk, &dl, "dropped chain");
        pk_expect_used(vq, id, 0);
    }

    tu_log("empty bursts mark nothing and do not signal");
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 0);
    TU_CHECK_EQ(pk_enq1(&pk, 0, a, 300, NULL), 0);
    dlog_check(&pk, &dl, "empty bursts");
    free(a);

    tu_log("a chain over positions 303..1 across the end of ring ... is "
           "logged where its used descriptor goes");
    {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        struct tfe_buf_opts o = { .n_descs = 3 };

        /* To position 1022: whole bursts of 64. */
        while (vq->next_avail != 1022) {
            unsigned int n = MIN(64u, (1022 + 1024 - vq->next_avail)
                                      % 1024);
            for (unsigned int i = 0; i < n; i++) {
                uint8_t *p = pk_new_pkt(&pk, 60, MAC_UNICAST);
                pk_tx_post(&pk, 0, NULL, p, 60, NULL);
                free(p);
            }
            TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), MIN(4, n));
            pk_release_pkts(out, 4);
            while (pk_dq(&pk, 0, out, 4)) {
                pk_release_pkts(out, 4);
            }
            while (!pk_get_used(vq, &(struct tfe_used_elem) { 0 }, "fill")) {
                continue;
            }
        }
        memset(dl.log, 0, PK_LOG_SIZE);
        read_eventfd(pk.fe->log_call_fd);
        a = pk_new_pkt(&pk, 300, MAC_UNICAST);
        pk_tx_post(&pk, 0, NULL, a, 300, &o);
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
        pk_check_pkt(&out[0], a, 300, "across the end of the ring");
        pk_release_pkts(out, 4);
        mark_used(&dl, vq, 1022);
        dlog_check(&pk, &dl, "chain across the end of the ring");
        TU_CHECK_OK(pk_get_used(vq, &(struct tfe_used_elem) { 0 }, "wrap"));
        TU_CHECK_EQ(vq->next_used, 1);
        free(a);
    }

    tu_log("a mergeable packet over a buffer across regions 2|3 and one "
           "8 kB buffer");
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];
        struct tfe_buf_opts o = { .gpa = pk_boundary_rx(&pk) - 2000 };
        uint64_t b2 = tfe_vq_alloc(vq, 8192, PAGE);
        struct tfe_seg seg = { b2, 8192 };
        unsigned int pos = vq->next_avail;

        pk_rx_post(&pk, 0, 4000, &o);
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, true, NULL) >= 0);
        a = pk_new_pkt(&pk, 5000, MAC_UNICAST);
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 5000, NULL), 1);
        mark_pages(dl.exp, pk_boundary_rx(&pk) - 2000, 4000);
        mark_pages(dl.exp, b2, pk.hdr_len + 5000 - 4000);
        mark_used(&dl, vq, pos);
        mark_used(&dl, vq, pos + 1);
        dlog_check(&pk, &dl, "mergeable enqueue across regions");
        pk_rx_expect(&pk, 0, a, 5000, NULL, 2, "logged mergeable enqueue");
        free(a);
    }

    tu_log("a vring without VHOST_VRING_F_LOG: buffers only, not its ring");
    pk.fe->vrings[RX(1)].log_used = false;
    TU_CHECK_OK(tfe_set_vring_addr(pk.fe, RX(1)));
    TU_CHECK(!tu_queue_info(pk.port, RX(1)).log_used);
    {
        struct tfe_buf_opts o = { .gpa = pk_boundary_rx(&pk) + 8 * PAGE };

        pk_rx_post(&pk, 1, 2048, &o);
        a = pk_new_pkt(&pk, 1000, MAC_UNICAST);
        TU_CHECK_EQ(pk_enq1(&pk, 1, a, 1000, NULL), 1);
        mark_pages(dl.exp, o.gpa, pk.hdr_len + 1000);
        dlog_check(&pk, &dl, "enqueue on a vring without F_LOG");
        pk_rx_expect(&pk, 1, a, 1000, NULL, 1, "enqueue without F_LOG");
        free(a);
    }

    munmap(dl.log, PK_LOG_SIZE);
    pk_finish(&pk);
}

const struct tu_test tu_packed_state_tests[] = {
    { "pk-reconnect", test_reconnect,
      "reconnect mid-traffic from GET_VRING_BASE: no loss, no duplicate" },
    { "pk-restart", test_restart,
      "backend killed: its successor resumes from the position log" },
    { "pk-restart-in-order", test_restart_in_order,
      "backend killed, IN_ORDER: resumes from the position log" },
    { "pk-restart-unseen", test_restart_unseen,
      "backend killed mid-write-back: resumes where the burst began" },
    { "pk-restart-stray", test_restart_stray,
      "backend killed before logging a write-back: said and counted" },
    { "pk-restart-clean", test_restart_clean,
      "after GET_VRING_BASE nothing is recovered; the log is removed" },
    { "pk-restart-guest-reset", test_restart_guest_reset,
      "guest resets while the backend is down: nothing is recovered" },
    { "pk-restart-head-unwritten", test_restart_head_unwritten,
      "killed after the log, before the head's id/len: handed over" },
    { "pk-vring-base", test_vring_base,
      "SET_VRING_BASE: bad values rejected, good ones start traffic" },
    { "pk-no-vring-base", test_no_vring_base,
      "without SET_VRING_BASE the wrap counters start at 1" },
    { "pk-base-before-features", test_base_before_features,
      "SET_VRING_BASE sent before SET_FEATURES(RING_PACKED)" },
    { "pk-num-after-base", test_num_after_base,
      "SET_VRING_NUM shrinking the ring below its base" },
    { "pk-no-version1", test_no_version1,
      "RING_PACKED without VERSION_1: one header layout" },
    { "pk-dirty-log", test_dirty_log,
      "dirty log: buffers and used descriptors, exactly" },
};

const size_t tu_n_packed_state_tests = ARRAY_SIZE(tu_packed_state_tests);
