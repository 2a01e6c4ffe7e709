/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: notifications and bounded work (fixture in
 * test-datapath.h).
 *
 * When the engine signals the guest, by the driver's flags and with
 * EVENT_IDX (VIRTIO 1.2 §2.7.7, §2.7.10), the guest announcement (RARP),
 * and at most VHOST_MAX_BURST chains per call.
 */

#include <config.h>

#include "test-datapath.h"

/* Notifications. */

/* Checks that the last dp_burst on 'vring' did ('notified') or did not
 * signal the guest, and the counters so far. */
static void
check_notify(struct dp *dp, unsigned int vring, bool notified,
             uint64_t n_notified, uint64_t n_suppressed, const char *what)
{
    struct vhost_queue_stats s = dp_get_stats(dp, vring);
    uint64_t calls = tfe_vq_calls(&dp->vq[vring]);

    if (notified != (calls > 0)) {
        TU_FAIL("%s: vring %u call eventfd %s", what, vring,
                notified ? "not written" : "written");
    }
    if (s.guest_notifications != n_notified
        || s.notifications_suppressed != n_suppressed) {
        TU_FAIL("%s: vring %u guest_notifications %"PRIu64
                " (expected %"PRIu64"), notifications_suppressed %"PRIu64
                " (expected %"PRIu64")", what, vring, s.guest_notifications,
                n_notified, s.notifications_suppressed, n_suppressed);
    }
}

static void
test_notify_flags(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL & ~F(VIRTIO_RING_F_EVENT_IDX));
    struct dp dp;

    dp_start(&dp, "notify", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &dp.vq[vring];

        tu_log("%s: a burst signals the guest", tx ? "dequeue" : "enqueue");
        dp_burst(&dp, tx, 1);
        check_notify(&dp, vring, true, 1, 0, "first burst");
        tu_log("  and the engine sets VRING_USED_F_NO_NOTIFY: it polls");
        dp_check_no_kicks(vq, false);

        tu_log("  VRING_AVAIL_F_NO_INTERRUPT suppresses it");
        tfe_vq_set_avail_flags(vq, TFE_AVAIL_F_NO_INTERRUPT);
        dp_burst(&dp, tx, 3);
        check_notify(&dp, vring, false, 1, 1, "NO_INTERRUPT");

        tu_log("  an empty burst does neither");
        dp_burst(&dp, tx, 0);
        check_notify(&dp, vring, false, 1, 1, "empty burst");

        tu_log("  clearing the flag brings signals back");
        tfe_vq_set_avail_flags(vq, 0);
        dp_burst(&dp, tx, 2);
        check_notify(&dp, vring, true, 2, 1, "flag cleared");
    }
    dp_finish(&dp);
}

static void
run_notify_event_idx(struct dp *dp, bool tx, uint16_t start)
{
    unsigned int vring = tx ? TX(0) : RX(0);
    struct tfe_vq *vq = &dp->vq[vring];
    uint64_t n0 = dp_get_stats(dp, vring).guest_notifications;
    uint64_t s0 = dp_get_stats(dp, vring).notifications_suppressed;
    static const struct {
        uint16_t used_event;    /* Relative to 'start'. */
        unsigned int n;         /* Packets in the dp_burst. */
        bool notify;
    } steps[] = {
        { 0, 1, true },         /* [0, 1) holds 0. */
        { 5, 2, false },        /* [1, 3) lacks 5. */
        { 5, 3, true },         /* [3, 6) holds 5. */
        { 5, 1, false },        /* [6, 7) lacks 5. */
        { 7, 1, true },         /* [7, 8) holds 7. */
        { 6, 4, false },        /* [8, 12) lacks 6 (behind). */
        { 15, 4, true },        /* [12, 16) holds 15, the last. */
        { 16, 0, false },       /* Nothing used: no signal. */
    };

    for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
        uint16_t ev = start + steps[i].used_event;
        char what[80];

        snprintf(what, sizeof what, "used_event %u, used %u..%u", ev,
                 vq->next_used, (uint16_t) (vq->next_used + steps[i].n));
        tu_log("  %s: %s", what, steps[i].notify ? "signal" : "no signal");
        tfe_vq_set_used_event(vq, ev);
        dp_burst(dp, tx, steps[i].n);
        n0 += steps[i].notify;
        s0 += !steps[i].notify && steps[i].n;
        check_notify(dp, vring, steps[i].notify, n0, s0, what);
        if (tx || steps[i].n) {
            dp_check_no_kicks(vq, true);
        }
    }
}

static void
test_notify_event_idx(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct dp dp;

    dp_start(&dp, "notify-evt", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &dp.vq[vring];

        tu_log("%s, from index 0", tx ? "dequeue" : "enqueue");
        dp_poison_avail_event(vq);
        run_notify_event_idx(&dp, tx, 0);

        tu_log("%s, across the 16-bit wrap (base 65530)",
               tx ? "dequeue" : "enqueue");
        {
            uint32_t base;
            TU_CHECK_OK(tfe_get_vring_base(dp.fe, vring, &base));
            TU_CHECK_EQ(base, vq->next_avail);
        }
        tfe_vq_reset(vq);
        /* The ring as a driver leaves it: the used index in guest memory
         * agrees with the base (the engine resumes from the used index
         * when they differ, as after a backend restart). */
        vq->next_avail = vq->next_used = 65530;
        *vq->avail_idx = 65530;
        *vq->used_idx = 65530;
        TU_CHECK_OK(tfe_set_vring_num(dp.fe, vring, vq->size));
        TU_CHECK_OK(tfe_set_vring_base(dp.fe, vring, 65530));
        TU_CHECK_OK(tfe_set_vring_addr(dp.fe, vring));
        TU_CHECK_OK(tfe_set_vring_kick(dp.fe, vring,
                                       dp.fe->vrings[vring].kick_fd));
        TU_CHECK(tu_queue_info(dp.port, vring).ready);
        run_notify_event_idx(&dp, tx, 65530);
    }
    dp_finish(&dp);
}

/* SEND_RARP: the next dequeue on queue pair 0 starts with one RARP request
 * for the MAC, then the guest's packets; once only, and again after the
 * frontend reconnects with the MAC still stored. */
static void
check_rarp(const struct vhost_pkt *p, const uint8_t mac[6])
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    TU_CHECK_EQ(p->len, 60);
    TU_CHECK(!memcmp(p->data, bcast, 6));
    TU_CHECK(!memcmp(p->data + 6, mac, 6));
    TU_CHECK_EQ(p->data[12], 0x80);             /* ETH_TYPE_RARP */
    TU_CHECK_EQ(p->data[13], 0x35);
    TU_CHECK_EQ(p->data[21], 3);                /* Reverse request. */
    TU_CHECK(!memcmp(p->data + 22, mac, 6));
    TU_CHECK(!memcmp(p->data + 32, mac, 6));
}

static void
test_rarp(void)
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct tfe_setup setup = { .features_mask = DP_FULL };
    struct vhost_pkt out[4];
    struct vhost_queue_stats st;
    struct dp dp;

    dp_start(&dp, "rarp", &cfg);
    tu_log("no RARP before SEND_RARP");
    uint8_t *pkt = dp_new_pkt(&dp, 64, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_check_pkt(&out[0], pkt, 64, "before SEND_RARP");
    dp_release_pkts(out, 4);
    free(pkt);

    tu_log("SEND_RARP: one RARP ahead of the guest's packet, on pair 0");
    TU_CHECK_OK(tfe_send_rarp(dp.fe, mac));
    TU_CHECK(tu_port_info(dp.port).rarp_pending);
    TU_CHECK_EQ(dp_dq(&dp, 1, out, 4), 0);         /* Not on pair 1. */
    dp_release_pkts(out, 4);
    pkt = dp_new_pkt(&dp, 64, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 2);
    check_rarp(&out[0], mac);
    dp_check_pkt(&out[1], pkt, 64, "after the RARP");
    dp_release_pkts(out, 4);
    free(pkt);
    TU_CHECK(!tu_port_info(dp.port).rarp_pending);
    TU_CHECK_OK(vhost_port_get_queue_stats(dp.port, TX(0), &st));
    TU_CHECK_EQ(st.rarps_injected, 1);

    tu_log("once only");
    pkt = dp_new_pkt(&dp, 64, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_check_pkt(&out[0], pkt, 64, "second burst");
    dp_release_pkts(out, 4);
    free(pkt);

    tu_log("a burst of 1 carries just the RARP; the packet waits");
    TU_CHECK_OK(tfe_send_rarp(dp.fe, mac));
    pkt = dp_new_pkt(&dp, 64, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 1);
    check_rarp(&out[0], mac);
    dp_release_pkts(out, 1);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 1);
    dp_check_pkt(&out[0], pkt, 64, "after a RARP-only burst");
    dp_release_pkts(out, 1);
    free(pkt);

    tu_log("the MAC survives a reconnect, and is announced again");
    TU_CHECK(tu_port_info(dp.port).has_rarp);
    tfe_disconnect(dp.fe);
    TU_CHECK(tu_wait_port(dp.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK(!tu_port_info(dp.port).rarp_pending);
    TU_CHECK_OK(tfe_connect(dp.fe, dp.path));
    TU_CHECK(tu_wait_port(dp.port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_reset(&dp.vq[q]);
    }
    TU_CHECK_OK(tfe_setup_device(dp.fe, 2, &setup));
    TU_CHECK(tu_port_info(dp.port).ready);
    TU_CHECK(tu_port_info(dp.port).rarp_pending);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    check_rarp(&out[0], mac);
    dp_release_pkts(out, 4);
    TU_CHECK_OK(vhost_port_get_queue_stats(dp.port, TX(0), &st));
    TU_CHECK_EQ(st.rarps_injected, 3);
    dp_finish(&dp);
}

/* Bounded work. */

static void
test_bounded(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL
                                        & ~F(VIRTIO_RING_F_INDIRECT_DESC));
    struct vhost_pkt out[100];
    uint8_t *pkts[256];
    struct dp dp;
    unsigned int got = 0;

    dp_start(&dp, "bounded", &cfg);
    tu_log("256 chains available on a 256-entry ring (avail->idx exactly "
           "the size ahead); bursts of 32 take exactly 32");
    for (int i = 0; i < 256; i++) {
        pkts[i] = dp_new_pkt(&dp, 64, MAC_UNICAST);
        dp_tx_post(&dp, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(dp.vq[TX(0)].n_free, 0);

    tu_log("queue pair 1 is not held up by the flood on pair 0");
    dp_roundtrip(&dp, 1, "while pair 0 is flooded");

    for (int call = 0; call < 8; call++) {
        uint16_t used0 = tfe_vq_used_idx(&dp.vq[TX(0)]);

        TU_CHECK_EQ(dp_dq(&dp, 0, out, 32), 32);
        TU_CHECK_EQ((uint16_t) (tfe_vq_used_idx(&dp.vq[TX(0)]) - used0), 32);
        for (int i = 0; i < 32; i++) {
            dp_check_pkt(&out[i], pkts[got + i], 64, "bounded burst");
        }
        dp_release_pkts(out, 32);
        got += 32;
        if (call == 3) {
            dp_roundtrip(&dp, 1, "halfway through the flood");
        }
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 32), 0);
    for (int i = 0; i < 256; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        free(pkts[i]);
    }

    tu_log("n = 100 takes at most VHOST_MAX_BURST (%d)", VHOST_MAX_BURST);
    for (int i = 0; i < 100; i++) {
        pkts[i] = dp_new_pkt(&dp, 64, MAC_UNICAST);
        dp_tx_post(&dp, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 100), VHOST_MAX_BURST);
    dp_release_pkts(out, 100);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 100), 100 - VHOST_MAX_BURST);
    for (int i = 0; i < 100 - VHOST_MAX_BURST; i++) {
        dp_check_pkt(&out[i], pkts[VHOST_MAX_BURST + i], 64, "second burst");
    }
    dp_release_pkts(out, 100);
    for (int i = 0; i < 100; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
    }

    tu_log("enqueue: 100 packets into 200 buffers, n = 100, takes %d; "
           "n = 10 takes 10", VHOST_MAX_BURST);
    for (int i = 0; i < 200; i++) {
        dp_rx_post(&dp, 0, 2048, NULL);
    }
    for (int i = 0; i < 100; i++) {
        out[i] = (struct vhost_pkt) { .data = pkts[i], .len = 64 };
    }
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, out, 100), VHOST_MAX_BURST);
    TU_CHECK_EQ(tfe_vq_n_used(&dp.vq[RX(0)]), VHOST_MAX_BURST);
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, out, 10), 10);
    for (int i = 0; i < VHOST_MAX_BURST; i++) {
        dp_rx_expect(&dp, 0, pkts[i], 64, NULL, 1, "bounded enqueue");
    }
    for (int i = 0; i < 10; i++) {
        dp_rx_expect(&dp, 0, pkts[i], 64, NULL, 1, "bounded enqueue");
    }
    for (int i = 0; i < 100; i++) {
        free(pkts[i]);
    }
    dp_finish(&dp);
}

const struct tu_test tu_datapath_notify_tests[] = {
    { "dp-notify", test_notify_flags,
      "call eventfd and VRING_AVAIL_F_NO_INTERRUPT" },
    { "dp-rarp", test_rarp,
      "SEND_RARP: one RARP on queue pair 0, once, and again after a "
      "reconnect" },
    { "dp-notify-event-idx", test_notify_event_idx,
      "call eventfd with EVENT_IDX, across the index wrap" },
    { "dp-bounded", test_bounded, "bursts take at most n, at most 64" },
};

const size_t tu_n_datapath_notify_tests = ARRAY_SIZE(tu_datapath_notify_tests);
