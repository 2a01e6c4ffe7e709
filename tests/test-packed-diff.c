/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: limits, the differential and the cold paths
 * (fixture in test-packed.h).
 *
 * Bounded work (at most VHOST_MAX_BURST chains per call, bad chains
 * included); receive rings that cannot take a packet; a split ring and a
 * packed ring given the same stream produce the same packets and
 * statistics; buffers, headers and indirect tables across the boundary of
 * adjacent regions.
 */

#include <config.h>

#include "test-packed.h"

/* Bounded work: at most VHOST_MAX_BURST chains per call. */

/* Reads every used element of 'vq'; returns how many. */
static unsigned int
drain_used(struct tfe_vq *vq)
{
    struct tfe_used_elem u;
    unsigned int n = 0;
    int error;

    while ((error = pk_get_used(vq, &u, "drain")) != -EAGAIN) {
        n++;
    }
    return n;
}

static void
test_bounded(void)
{
    struct pk_cfg cfg = pk_cfg_features(PK_FULL & ~PK_IND);
    struct vhost_pkt out[100];
    uint8_t *pkts[256];
    struct pk pk;
    struct tfe_vq *tx;

    pk_start(&pk, "bounded", &cfg);
    tx = &pk.vq[TX(0)];
    tu_log("256 packets fill a 256-entry ring; bursts of 32 take 32");
    for (int i = 0; i < 256; i++) {
        pkts[i] = pk_new_pkt(&pk, 64, MAC_UNICAST);
        pk_tx_post(&pk, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(tx->n_free, 0);
    pk_roundtrip(&pk, 1, "while pair 0 is full");
    for (int call = 0; call < 8; call++) {
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 32), 32);
        for (int i = 0; i < 32; i++) {
            pk_check_pkt(&out[i], pkts[call * 32 + i], 64, "bounded burst");
        }
        pk_release_pkts(out, 32);
        TU_CHECK_EQ(drain_used(tx), 32);
    }
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 32), 0);
    for (int i = 0; i < 256; i++) {
        free(pkts[i]);
    }

    tu_log("n = 100 takes VHOST_MAX_BURST (%d)", VHOST_MAX_BURST);
    for (int i = 0; i < 100; i++) {
        pkts[i] = pk_new_pkt(&pk, 64, MAC_UNICAST);
        pk_tx_post(&pk, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 100), VHOST_MAX_BURST);
    pk_release_pkts(out, 100);
    TU_CHECK_EQ(drain_used(tx), VHOST_MAX_BURST);
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 100), 100 - VHOST_MAX_BURST);
    for (int i = 0; i < 100 - VHOST_MAX_BURST; i++) {
        pk_check_pkt(&out[i], pkts[VHOST_MAX_BURST + i], 64, "second burst");
    }
    pk_release_pkts(out, 100);
    TU_CHECK_EQ(drain_used(tx), 100 - VHOST_MAX_BURST);
    for (int i = 0; i < 100; i++) {
        free(pkts[i]);
    }

    tu_log("a ring of bad chains is drained %d per call", VHOST_MAX_BURST);
    for (int i = 0; i < 200; i++) {
        pk_post_one(tx, pk_arena_buf(tx, 100), 100, TFE_DESC_F_WRITE,
                    pk_free_id(tx));
    }
    for (int call = 0; call < 4; call++) {
        unsigned int used;

        TU_CHECK_EQ(pk_dq(&pk, 0, out, 64), 0);
        pk_release_pkts(out, 64);
        used = drain_used(tx);
        TU_CHECK_EQ(used, call < 3 ? 64 : 200 - 3 * 64);
    }
    TU_CHECK_EQ(pk_get_stats(&pk, TX(0)).drops[VHOST_DROP_BAD_DIRECTION], 200);

    tu_log("receive: 256 read-only chains, %d dropped per call",
           VHOST_MAX_BURST);
    {
        struct tfe_vq *rx = &pk.vq[RX(0)];
        uint8_t *a = pk_new_pkt(&pk, 100, MAC_UNICAST);

        for (int i = 0; i < 256; i++) {
            pk_post_one(rx, pk_arena_buf(rx, 200), 200, 0, pk_free_id(rx));
        }
        for (int call = 0; call < 4; call++) {
            TU_CHECK_EQ(pk_enq1(&pk, 0, a, 100, NULL), 0);
            TU_CHECK_EQ(drain_used(rx), VHOST_MAX_BURST);
        }
        TU_CHECK_EQ(pk_get_stats(&pk, RX(0)).drops[VHOST_DROP_BAD_DIRECTION],
                    256);
        free(a);
    }
    pk_roundtrip(&pk, 0, "after the floods");
    pk_finish(&pk);
}

/* Bad chains count against the bound too: two dropped two-descriptor
 * chains put the batch path out of step with the chain count, and a call
 * with n = 64 must still use at most 64 chains.  (The packed dequeue loop
 * checks the bound before a batch of four, so it can take 3 more.) */
static void
test_bounded_mixed(void)
{
    struct pk_cfg cfg = pk_cfg_features(PK_FULL);
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[80];
    struct pk pk;
    struct tfe_vq *tx;
    unsigned int got, used;

    pk_start(&pk, "bounded-mixed", &cfg);
    tx = &pk.vq[TX(0)];
    tu_log("two bad two-descriptor chains, then 80 simple packets");
    for (int i = 0; i < 2; i++) {
        pk_post_two(tx, pk_arena_buf(tx, 12), 12, 0,
                    pk_arena_buf(tx, 100), 100, TFE_DESC_F_WRITE,
                    pk_free_id(tx));
    }
    for (int i = 0; i < 80; i++) {
        pkts[i] = pk_new_pkt(&pk, 64, MAC_UNICAST);
        pk_tx_post(&pk, 0, NULL, pkts[i], 64, NULL);
    }
    got = pk_dq(&pk, 0, out, VHOST_MAX_BURST);
    used = drain_used(tx);
    tu_log("a call with n = %d returned %u packets and used %u chains",
           VHOST_MAX_BURST, got, used);
    for (unsigned int i = 0; i < got; i++) {
        pk_check_pkt(&out[i], pkts[i], 64, "mixed burst");
    }
    pk_release_pkts(out, VHOST_MAX_BURST);
    TU_CHECK_EQ(used, got + 2);
    if (used > VHOST_MAX_BURST) {
        TU_FAIL("one call used %u chains, more than VHOST_MAX_BURST (%d)",
                used, VHOST_MAX_BURST);
    }
    while ((got = pk_dq(&pk, 0, out, VHOST_MAX_BURST)) > 0) {
        pk_release_pkts(out, VHOST_MAX_BURST);
    }
    for (int i = 0; i < 80; i++) {
        free(pkts[i]);
    }
    pk_finish(&pk);
}

/* Receive rings that cannot take a packet. */
static void
test_rx_no_room(void)
{
    struct pk_cfg cfg = pk_cfg_features(PK_FULL & ~PK_MRG);
    struct vhost_queue_stats e;
    struct pk pk;

    pk_start(&pk, "rx-no-room", &cfg);
    memset(&e, 0, sizeof e);
    tu_log("without MRG_RXBUF: a 500-byte packet and a 100-byte chain: the "
           "burst stops at the packet, the chain stays for the next "
           "packet");
    {
        uint8_t *big = pk_new_pkt(&pk, 500, MAC_UNICAST);
        uint8_t *small = pk_new_pkt(&pk, 50, MAC_UNICAST);
        struct vhost_pkt in[2] = {
            { .data = big, .len = 500 }, { .data = small, .len = 50 },
        };

        pk_rx_post(&pk, 0, 100, NULL);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
        pk_expect_no_used(&pk.vq[RX(0)]);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in + 1, 1), 1);
        pk_rx_expect(&pk, 0, small, 50, NULL, 1, "the small packet");
        pk_expect_no_used(&pk.vq[RX(0)]);
        pk_stats_add(&e, small, 50);
        pk_check_stats(&pk, RX(0), &e);
        TU_CHECK_EQ(pk_get_stats(&pk, RX(0)).small_buf_stops, 1);

        tu_log("  and an empty ring takes nothing and counts nothing");
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
        pk_check_stats(&pk, RX(0), &e);
        free(big);
        free(small);
    }
    pk_finish(&pk);

    cfg = pk_cfg_features(PK_FULL);
    pk_start(&pk, "rx-no-room-mrg", &cfg);
    memset(&e, 0, sizeof e);
    tu_log("with MRG_RXBUF: a 5000-byte packet and three 1000-byte buffers: "
           "nothing is taken until there are enough");
    {
        uint8_t *a = pk_new_pkt(&pk, 5000, MAC_UNICAST);
        uint8_t *b = pk_new_pkt(&pk, 9000, MAC_UNICAST);
        uint8_t *c = pk_new_pkt(&pk, 1000, MAC_UNICAST);

        for (int i = 0; i < 3; i++) {
            pk_rx_post(&pk, 0, 1000, NULL);
        }
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 5000, NULL), 0);
        pk_expect_no_used(&pk.vq[RX(0)]);
        pk_check_stats(&pk, RX(0), &e);
        for (int i = 0; i < 3; i++) {
            pk_rx_post(&pk, 0, 1000, NULL);
        }
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 5000, NULL), 1);
        pk_rx_expect(&pk, 0, a, 5000, NULL, 6, "six buffers");
        pk_stats_add(&e, a, 5000);

        tu_log("  a 9000-byte packet over 100-byte buffers needs more than "
               "%d: the burst stops there; the buffers stay", 64);
        for (int i = 0; i < 100; i++) {
            pk_rx_post(&pk, 0, 100, NULL);
        }
        {
            struct vhost_pkt in[2] = {
                { .data = b, .len = 9000 }, { .data = c, .len = 1000 },
            };
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
            pk_expect_no_used(&pk.vq[RX(0)]);
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in + 1, 1), 1);
        }
        pk_rx_expect(&pk, 0, c, 1000, NULL, 11, "after the too-big one");
        pk_stats_add(&e, c, 1000);
        pk_check_stats(&pk, RX(0), &e);
        TU_CHECK_EQ(pk_get_stats(&pk, RX(0)).small_buf_stops, 1);
        free(a);
        free(b);
        free(c);
    }
    pk_finish(&pk);
}

/* Differential: a split ring and a packed ring given the same stream. */

/* One packet as a guest or the embedder saw it. */
struct seen {
    uint8_t *bytes;             /* Header (receive) and packet. */
    size_t len;
    struct vhost_offload ol;    /* Dequeue only. */
};

struct seen_list {
    struct seen *v;
    size_t n, cap;
};

static void
seen_add(struct seen_list *l, const uint8_t *bytes, size_t len,
         const struct vhost_offload *ol)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        TU_CHECK(l->v != NULL);
    }
    l->v[l->n].bytes = malloc(len + 1);
    TU_CHECK(l->v[l->n].bytes != NULL);
    memcpy(l->v[l->n].bytes, bytes, len);
    l->v[l->n].len = len;
    memset(&l->v[l->n].ol, 0, sizeof l->v[l->n].ol);
    if (ol) {
        l->v[l->n].ol = *ol;
    }
    l->n++;
}

static void
seen_compare(const struct seen_list *a, const struct seen_list *b,
             const char *what)
{
    if (a->n != b->n) {
        TU_FAIL("%s: split saw %zu packets, packed %zu", what, a->n, b->n);
    }
    for (size_t i = 0; i < a->n; i++) {
        char w[96];

        snprintf(w, sizeof w, "%s, packet %zu", what, i);
        if (a->v[i].len != b->v[i].len) {
            TU_FAIL("%s: split length %zu, packed %zu", w, a->v[i].len,
                    b->v[i].len);
        }
        pk_check_bytes(b->v[i].bytes, a->v[i].bytes, a->v[i].len, w);
        pk_check_ol(&b->v[i].ol, &a->v[i].ol, w);
    }
}

static void
seen_free(struct seen_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].bytes);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Dequeues everything on queue pair 0 in calls of 'n', recording the
 * packets and the calls' results. */
static void
diff_dequeue_all(struct pk *pk, struct rng *rng, struct seen_list *l,
                 unsigned int *calls, unsigned int *results)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    unsigned int got;

    *calls = 0;
    do {
        unsigned int n = pk_rng_range(rng, 1, VHOST_MAX_BURST);

        got = pk_dq(pk, 0, out, n);
        for (unsigned int i = 0; i < got; i++) {
            seen_add(l, out[i].data, out[i].len, &out[i].ol);
        }
        pk_release_pkts(out, n);
        results[(*calls)++] = got;
    } while (got || *calls < 2);
    drain_used(&pk->vq[TX(0)]);
}

/* Receives everything used on the receive ring of queue pair 0: elements
 * of length 0 (dropped chains) are skipped, the others gathered into
 * packets by num_buffers. */
static void
diff_receive_all(struct pk *pk, struct seen_list *l, unsigned int *zero)
{
    struct tfe_vq *vq = &pk->vq[RX(0)];
    uint8_t *buf = malloc(128 * 1024);
    struct tfe_used_elem u;

    TU_CHECK(buf != NULL);
    while (!tfe_vq_peek_used(vq, &u)) {
        unsigned int n_bufs = 1;
        size_t total = 0;

        if (!u.len) {
            TU_CHECK_OK(pk_get_used(vq, &u, "dropped chain"));
            (*zero)++;
            continue;
        }
        for (unsigned int i = 0; i < n_bufs; i++) {
            int error = pk_get_used(vq, &u, "diff receive");

            if (error) {
                TU_FAIL("%s ring: buffer %u of %u (%zu bytes so far): %s",
                        pk->packed ? "packed" : "split", i + 1, n_bufs,
                        total, tu_strerror(error));
            }
            tfe_vq_read_chain(vq, u.id, u.len, buf + total);
            total += u.len;
            if (!i && vq->mrg) {
                uint16_t nb;
                memcpy(&nb, buf + 10, 2);
                n_bufs = nb;
            }
        }
        seen_add(l, buf, total, NULL);
    }
    free(buf);
}

/* Posts one transmit chain of kind 'k' with parameters from 'r' on the
 * transmit ring of both fixtures. */
static void
diff_post_tx(struct pk *pk, uint32_t k, uint32_t len, uint32_t n_descs,
             bool indirect, bool offload, bool straddle, const uint8_t *pkt)
{
    struct tfe_vq *vq = &pk->vq[TX(0)];
    struct tfe_buf_opts o = {
        .n_descs = n_descs, .indirect = indirect,
        .gpa = straddle ? pk_boundary_tx(pk) - len / 2 : 0,
    };

    switch (k) {
    case 0: {
        TU_CHECK(tfe_vq_post_tx(vq, offload ? &pk_offload_hdr
                                : &(struct tfe_net_hdr) { 0 }, 12, pkt,
                                len, &o) >= 0);
        break;
    }
    case 1: {
        struct tfe_seg seg = { pk_arena_buf(vq, 5), 5 };
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, false, NULL) >= 0);
        break;
    }
    case 2: {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .csum_start = len,
            .csum_offset = 0,
        };
        TU_CHECK(tfe_vq_post_tx(vq, &h, 12, pkt, len, &o) >= 0);
        break;
    }
    case 3: {
        struct tfe_seg seg = { pk_arena_buf(vq, 100), 100 };
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, true, NULL) >= 0);
        break;
    }
    default: {
        struct tfe_seg segs[2] = {
            { pk_arena_buf(vq, 12), 12 }, { PK_GAP_GPA, 100 },
        };
        TU_CHECK(tfe_vq_add_chain(vq, segs, 2, false, NULL) >= 0);
        break;
    }
    }
}

static void
diff_post_rx(struct pk *pk, uint32_t k, uint32_t len, uint32_t n_descs,
             bool indirect, bool straddle)
{
    struct tfe_vq *vq = &pk->vq[RX(0)];
    struct tfe_buf_opts o = {
        .n_descs = n_descs, .indirect = indirect,
        .gpa = straddle ? pk_boundary_rx(pk) - len / 2 : 0,
    };

    if (k == 0) {
        TU_CHECK(tfe_vq_post_rx(vq, len, &o) >= 0);
    } else {
        struct tfe_seg seg = { k == 1 ? pk_arena_buf(vq, len) : PK_GAP_GPA,
                               len };
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, k != 1, NULL) >= 0);
    }
}

static void
run_diff(const char *name, uint64_t features, unsigned int size,
         unsigned int rounds, uint64_t seed)
{
    struct pk_cfg cs = pk_cfg_sized(features & ~F(VIRTIO_F_RING_PACKED), size);
    struct pk_cfg ck = pk_cfg_sized(features | F(VIRTIO_F_RING_PACKED), size);
    struct seen_list tx_s = { 0 }, tx_k = { 0 }, rx_s = { 0 }, rx_k = { 0 };
    unsigned int zero_s = 0, zero_k = 0, call_diffs = 0;
    bool indirect = features & PK_IND;
    struct rng rng = { seed };
    struct pk ps, pk;
    char nk[64];

    snprintf(nk, sizeof nk, "%s-p", name);
    pk_start(&ps, name, &cs);
    pk_start(&pk, nk, &ck);
    TU_CHECK(!ps.packed && pk.packed);
    TU_CHECK_EQ(ps.hdr_len, pk.hdr_len);
    tu_log("%u rounds over a split and a packed ring of %u", rounds, size);

    for (unsigned int round = 0; round < rounds; round++) {
        unsigned int k = pk_rng_range(&rng, 0, size);
        bool straddled = false;

        /* Transmit: the same chains on both, as long as both have room. */
        for (unsigned int i = 0; i < k; i++) {
            uint32_t kind = pk_rng_range(&rng, 0, 19);
            uint32_t len = (pk_rng_range(&rng, 0, 3)
                            ? pk_rng_range(&rng, 18, 1600)
                            : pk_rng_range(&rng, 18, 9000));
            uint32_t n_descs = pk_rng_range(&rng, 1, 4);
            bool ind = indirect && !pk_rng_range(&rng, 0, 2);
            bool offload = !pk_rng_range(&rng, 0, 3);
            bool straddle = !straddled && !pk_rng_range(&rng, 0, 15);
            unsigned int slots = ind ? 1 : n_descs;
            uint8_t *p;

            kind = kind < 16 ? 0 : kind - 15;
            if (kind == 4) {
                slots = 2;
            } else if (kind == 1 || kind == 3) {
                slots = 1;
            }
            if (ps.vq[TX(0)].n_free < slots || pk.vq[TX(0)].n_free < slots
                || !pk.vq[TX(0)].n_free_ids) {
                break;
            }
            straddled |= straddle;
            p = pk_new_pkt(&pk, len, pk_rng_range(&rng, 0, 2));
            diff_post_tx(&ps, kind, len, n_descs, ind, offload, straddle, p);
            diff_post_tx(&pk, kind, len, n_descs, ind, offload, straddle, p);
            free(p);
        }
        {
            unsigned int calls_s, calls_k;
            unsigned int res_s[300], res_k[300];
            uint64_t s = rng.s;

            diff_dequeue_all(&ps, &rng, &tx_s, &calls_s, res_s);
            rng.s = s;
            diff_dequeue_all(&pk, &rng, &tx_k, &calls_k, res_k);
            if (calls_s != calls_k
                || memcmp(res_s, res_k, calls_s * sizeof *res_s)) {
                call_diffs++;
            }
        }
        seen_compare(&tx_s, &tx_k, "dequeue");

        /* Receive: the same buffers on both, then the same packets. */
        k = pk_rng_range(&rng, 0, size / 2);
        /* One buffer across regions at a time: only into an empty ring. */
        straddled = pk.vq[RX(0)].n_free != size
                    || ps.vq[RX(0)].n_free != size;
        for (unsigned int i = 0; i < k; i++) {
            uint32_t kind = pk_rng_range(&rng, 0, 15);
            uint32_t n_descs = pk_rng_range(&rng, 1, 3);
            bool ind = indirect && !pk_rng_range(&rng, 0, 2);
            bool straddle = !straddled && !pk_rng_range(&rng, 0, 15);
            uint32_t len = (pk.mrg ? pk_rng_range(&rng, 64, 2048)
                            : pk_rng_range(&rng, 0, 5) ? 9200
                            : pk_rng_range(&rng, 64, 600));
            unsigned int slots = ind ? 1 : n_descs;

            kind = kind < 14 ? 0 : kind - 13;
            if (kind) {
                slots = 1;
            }
            if (ps.vq[RX(0)].n_free < slots || pk.vq[RX(0)].n_free < slots
                || !pk.vq[RX(0)].n_free_ids) {
                break;
            }
            straddled |= straddle && !kind;
            diff_post_rx(&ps, kind, len, n_descs, ind, straddle && !kind);
            diff_post_rx(&pk, kind, len, n_descs, ind, straddle && !kind);
        }
        {
            struct vhost_pkt in[32];
            unsigned int m = pk_rng_range(&rng, 0, 32), ds, dk;

            for (unsigned int i = 0; i < m; i++) {
                uint32_t len = (pk_rng_range(&rng, 0, 3)
                                ? pk_rng_range(&rng, 18, 1600)
                                : pk_rng_range(&rng, 18, 9000));
                in[i] = (struct vhost_pkt) {
                    .data = pk_new_pkt(&pk, len, pk_rng_range(&rng, 0, 2)),
                    .len = len,
                    .ol = {
                        .flags = pk_rng_range(&rng, 0, 3),
                        .gso_type = pk_rng_range(&rng, 0, 1) ? VHOST_GSO_TCPV4
                                                          : 0,
                        .hdr_len = pk_rng_range(&rng, 0, 100),
                        .gso_size = pk_rng_range(&rng, 0, 1500),
                        .csum_start = pk_rng_range(&rng, 0, 50),
                        .csum_offset = pk_rng_range(&rng, 0, 20),
                    },
                };
            }
            ds = vhost_enqueue_burst(ps.port, 0, in, m);
            dk = vhost_enqueue_burst(pk.port, 0, in, m);
            if (ds != dk) {
                TU_FAIL("round %u: enqueue of %u: split took %u, packed %u",
                        round, m, ds, dk);
            }
            for (unsigned int i = 0; i < m; i++) {
                free(in[i].data);
            }
        }
        diff_receive_all(&ps, &rx_s, &zero_s);
        diff_receive_all(&pk, &rx_k, &zero_k);
        TU_CHECK_EQ(zero_s, zero_k);
        seen_compare(&rx_s, &rx_k, "enqueue");
    }

    tu_log("%zu packets out, %zu in, %u dropped receive chains; %u rounds "
           "where the calls of a dequeue returned different counts",
           tx_s.n, rx_s.n, zero_s, call_diffs);
    {
        /* Notification counts match only where the rings were asked the
         * same (no EVENT_IDX: the split used_event and the packed off_wrap
         * say different things) and the calls matched one for one. */
        bool same_events = !(features & PK_EVT);

        for (unsigned int q = 0; q < 2; q++) {
            struct vhost_queue_stats a = pk_get_stats(&ps, q);
            struct vhost_queue_stats b = pk_get_stats(&pk, q);

            tu_log("vring %u: %"PRIu64" packets, %"PRIu64" drops; split "
                   "%"PRIu64"/%"PRIu64" and packed %"PRIu64"/%"PRIu64
                   " notified/suppressed", q, a.packets, pk_total_drops(&a),
                   a.guest_notifications, a.notifications_suppressed,
                   b.guest_notifications, b.notifications_suppressed);
            pk_compare_stats(q, &b, &a,
                             same_events && (q == RX(0) || !call_diffs));
        }
    }
    seen_free(&tx_s);
    seen_free(&tx_k);
    seen_free(&rx_s);
    seen_free(&rx_k);
    pk_finish(&pk);
    pk_finish(&ps);
}

static void
test_diff_full(void)
{
    run_diff("diff-full", PK_FULL & ~PK_EVT, 64, 150, 0x5eed0001);
}

static void
test_diff_nomrg(void)
{
    run_diff("diff-nomrg", PK_BASE | PK_IND, 128, 100, 0x5eed0002);
}

static void
test_diff_direct_evt(void)
{
    run_diff("diff-evt", PK_BASE | PK_MRG | PK_EVT, 256, 60, 0x5eed0003);
}

/* Cold paths: buffers, headers and indirect tables across the boundary of
 * two regions adjacent in guest memory, and headers over several
 * descriptors. */
static void
test_straddle(void)
{
    static const struct {
        int64_t offset;         /* From the boundary. */
        unsigned int n_descs;
        bool indirect;
        const char *what;
    } cases[] = {
        { -300, 1, false, "1000 bytes, 300 before the boundary" },
        { -5, 1, false, "the header across the boundary (5 + 7)" },
        { -11, 1, false, "num_buffers across the boundary" },
        { -1, 1, false, "1 byte before the boundary" },
        { -500, 3, false, "the middle of three descriptors" },
        { -300, 2, true, "in an indirect table" },
    };
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 16);
    struct vhost_pkt out[4];
    struct pk pk;

    pk_start(&pk, "straddle", &cfg);
    for (int lap = 0; lap < 2; lap++) {
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
            struct tfe_buf_opts o = {
                .gpa = pk_boundary_tx(&pk) + cases[i].offset,
                .n_descs = cases[i].n_descs, .indirect = cases[i].indirect,
            };
            struct vhost_offload ol = {
                .flags = VHOST_OL_DATA_VALID, .csum_start = 0x1234,
                .csum_offset = 0x5678, .hdr_len = 0x9abc,
                .gso_size = 0xdef0, .gso_type = VHOST_GSO_TCPV6,
            };
            uint8_t *a = pk_new_pkt(&pk, 1000, MAC_UNICAST);
            int id;

            tu_log("lap %d: across regions: %s", lap, cases[i].what);
            id = pk_tx_post(&pk, 0, &pk_offload_hdr, a, 1000, &o);
            TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
            pk_check_pkt(&out[0], a, 1000, cases[i].what);
            TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
            TU_CHECK_EQ(out[0].ol.csum_start, 34);
            pk_release_pkts(out, 4);
            pk_expect_used(&pk.vq[TX(0)], id, 0);

            o.gpa = pk_boundary_rx(&pk) + cases[i].offset;
            pk_rx_post(&pk, 0, 2000, &o);
            TU_CHECK_EQ(pk_enq1(&pk, 0, a, 1000, &ol), 1);
            pk_rx_expect(&pk, 0, a, 1000, &ol, 1, cases[i].what);
            free(a);
        }
        for (int off = -64; off <= 0; off += 8) {
            struct tfe_buf_opts o = {
                .n_descs = 4, .indirect = true,
                .indirect_gpa = pk_boundary_tx(&pk) + off,
            };
            uint8_t *a = pk_new_pkt(&pk, 700, MAC_UNICAST);
            int id;

            tu_log("lap %d: a 4-entry indirect table %d bytes from the "
                   "boundary", lap, off);
            id = pk_tx_post(&pk, 0, NULL, a, 700, &o);
            TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
            pk_check_pkt(&out[0], a, 700, "indirect table across regions");
            pk_release_pkts(out, 4);
            pk_expect_used(&pk.vq[TX(0)], id, 0);
            o.indirect_gpa = pk_boundary_rx(&pk) + off;
            pk_rx_post(&pk, 0, 2048, &o);
            TU_CHECK_EQ(pk_enq1(&pk, 0, a, 700, NULL), 1);
            pk_rx_expect(&pk, 0, a, 700, NULL, 1, "indirect across regions");
            free(a);
        }
    }
    {
        struct vhost_queue_stats s0 = pk_get_stats(&pk, RX(0));
        struct vhost_queue_stats s1 = pk_get_stats(&pk, TX(0));
        TU_CHECK_EQ(pk_total_drops(&s0) + pk_total_drops(&s1), 0);
        TU_CHECK_EQ(s0.packets, 2 * (ARRAY_SIZE(cases) + 9));
        TU_CHECK_EQ(s1.packets, 2 * (ARRAY_SIZE(cases) + 9));
    }
    pk_finish(&pk);
}

/* The 12-byte header over several descriptors, both ways. */
static void
test_hdr_split(void)
{
    static const uint32_t splits[][13] = {
        { 5, 7 }, { 4, 6 }, { 3, 3, 4 }, { 7, 100 }, { 11, 1 }, { 2, 10 },
        { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, { 12 }, { 10 },
    };
    static const unsigned int n_splits[] = { 3, 3, 4, 3, 3, 3, 13, 2, 2 };
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 13);
    struct vhost_pkt out[4];
    struct pk pk;

    pk_start(&pk, "hdr-split", &cfg);
    for (int lap = 0; lap < 3; lap++) {
        for (size_t i = 0; i < ARRAY_SIZE(splits); i++) {
            struct tfe_buf_opts o = { .n_descs = n_splits[i],
                                      .split = splits[i],
                                      .indirect = n_splits[i] > 4 };
            struct vhost_offload ol = {
                .flags = VHOST_OL_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
                .hdr_len = 66, .gso_size = 1448, .csum_start = 34,
                .csum_offset = 16,
            };
            uint8_t *a = pk_new_pkt(&pk, 500, MAC_BROADCAST);
            int id;

            id = pk_tx_post(&pk, 0, &pk_offload_hdr, a, 500, &o);
            TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
            pk_check_pkt(&out[0], a, 500, "header over several descriptors");
            TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
            TU_CHECK_EQ(out[0].ol.gso_type, VHOST_GSO_UDP);
            TU_CHECK_EQ(out[0].ol.gso_size, 1000);
            pk_release_pkts(out, 4);
            pk_expect_used(&pk.vq[TX(0)], id, 0);

            pk_rx_post(&pk, 0, 600, &o);
            TU_CHECK_EQ(pk_enq1(&pk, 0, a, 500, &ol), 1);
            pk_rx_expect(&pk, 0, a, 500, &ol, 1,
                         "header over several buffers");
            free(a);
        }
    }
    pk_finish(&pk);
}

const struct tu_test tu_packed_diff_tests[] = {
    { "pk-bounded", test_bounded, "bursts take at most n, at most 64" },
    { "pk-bounded-mixed", test_bounded_mixed,
      "at most 64 chains per call with bad chains and batches" },
    { "pk-rx-no-room", test_rx_no_room,
      "RX: chains too small, not enough buffers" },
    { "pk-diff-full", test_diff_full,
      "differential split vs packed: MRG, indirect" },
    { "pk-diff-nomrg", test_diff_nomrg,
      "differential split vs packed: no MRG, indirect" },
    { "pk-diff-evt", test_diff_direct_evt,
      "differential split vs packed: MRG, direct, EVENT_IDX" },
    { "pk-straddle", test_straddle,
      "buffers, headers and indirect tables across regions" },
    { "pk-hdr-split", test_hdr_split,
      "the header over several descriptors, across the ring end" },
};

const size_t tu_n_packed_diff_tests = ARRAY_SIZE(tu_packed_diff_tests);
