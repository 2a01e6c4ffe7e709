/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: notifications and event suppression (§2.8.10;
 * fixture in test-packed.h).
 *
 * The driver event flags, and random bursts against random driver event
 * offsets and wrap counters with EVENT_IDX.
 */

#include <config.h>

#include "test-packed.h"

/* Notifications and event suppression (§2.8.10). */

/* Checks that the last pk_burst on 'vring' did ('notified') or did not
 * signal the guest, and the counters so far. */
static void
check_notify(struct pk *pk, unsigned int vring, bool notified,
             uint64_t n_notified, uint64_t n_suppressed, const char *what)
{
    struct vhost_queue_stats s = pk_get_stats(pk, vring);
    uint64_t calls = tfe_vq_calls(&pk->vq[vring]);

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
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL & ~PK_EVT, 16);
    struct pk pk;

    pk_start(&pk, "notify", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &pk.vq[vring];

        tu_log("%s: an empty first burst signals nothing but writes "
               "DISABLE into the device event suppression flags",
               tx ? "dequeue" : "enqueue");
        pk_burst(&pk, tx, 0, 1);
        check_notify(&pk, vring, false, 0, 0, "empty first burst");
        pk_check_no_kicks(vq);

        tu_log("  a burst signals the guest (flags ENABLE)");
        pk_burst(&pk, tx, 1, 1);
        check_notify(&pk, vring, true, 1, 0, "first burst");

        tu_log("  flags DISABLE suppress it");
        tfe_vq_pset_event(vq, TFE_PEVENT_DISABLE, 0);
        pk_burst(&pk, tx, 3, 2);
        check_notify(&pk, vring, false, 1, 1, "DISABLE");

        tu_log("  an empty burst does neither");
        pk_burst(&pk, tx, 0, 1);
        check_notify(&pk, vring, false, 1, 1, "empty burst");

        tu_log("  ENABLE brings signals back, across the end of the ring");
        tfe_vq_pset_event(vq, TFE_PEVENT_ENABLE, 0);
        for (int i = 0; i < 6; i++) {
            pk_burst(&pk, tx, 3, 1 + i % 3);
            check_notify(&pk, vring, true, 2 + i, 1, "ENABLE");
        }
        tu_log("  DESC without EVENT_IDX negotiated is not DISABLE: the "
               "engine signals");
        tfe_vq_pset_event(vq, TFE_PEVENT_DESC,
                          (vq->next_used + 8) % vq->size);
        pk_burst(&pk, tx, 1, 1);
        check_notify(&pk, vring, true, 8, 1, "DESC without EVENT_IDX");
        pk_check_no_kicks(vq);
    }
    pk_finish(&pk);
}

/* Random bursts on ring 'tx' of queue pair 0 with random driver event
 * suppression, checked against a model that knows nothing of wrap
 * counters: positions are absolute (laps * size + position), the event
 * is a position near the pk_burst, and with DESC the guest is signalled iff
 * the pk_burst used the slot at the event (old <= event < new, §2.8.10). */
static void
run_notify_desc(struct pk *pk, bool tx, unsigned int steps, uint64_t seed)
{
    unsigned int vring = tx ? TX(0) : RX(0);
    struct tfe_vq *vq = &pk->vq[vring];
    unsigned int size = vq->size;
    struct vhost_queue_stats s0 = pk_get_stats(pk, vring);
    uint64_t n_notified = s0.guest_notifications;
    uint64_t n_suppressed = s0.notifications_suppressed;
    struct rng rng = { seed };
    /* Absolute coordinates: R = lap * size + position, with the lap's
     * parity tied to the wrap counter (R / size even <=> wrap 1). */
    uint64_t r = (vq->used_wrap ? 0 : size) + vq->next_used + 2 * size;
    unsigned int laps = 0;

    for (unsigned int i = 0; i < steps; i++) {
        unsigned int descs = pk_rng_range(&rng, 1, MIN(3, size / 4 + 1));
        unsigned int n = pk_rng_range(&rng, 0, MIN(VHOST_MAX_BURST,
                                                   (size - 1) / descs));
        unsigned int slots = n * descs;
        uint64_t old = r, new = r + slots;
        uint64_t lap = new / size * size;
        int64_t cand[8] = {
            -2, -1, 0, 1, (int64_t) slots - 1, slots, slots + 1,
            -(int64_t) size + 1,
        };
        int64_t d;
        uint64_t e;
        uint16_t off_wrap, flags = TFE_PEVENT_DESC;
        bool notify;
        char what[128];

        /* An event the ring can name from where it will be: within a lap
         * either side of the lap 'new' is in. */
        do {
            d = cand[pk_rng_range(&rng, 0, 7)];
            e = old + d;
        } while (e + size < lap || e >= lap + size);
        off_wrap = (e % size) | (((e / size) % 2 == 0) << 15);
        notify = slots && e >= old && e < new;
        switch (pk_rng_range(&rng, 0, 9)) {
        case 0:
            flags = TFE_PEVENT_ENABLE;
            notify = slots > 0;
            break;
        case 1:
            flags = TFE_PEVENT_DISABLE;
            notify = false;
            break;
        }
        snprintf(what, sizeof what, "step %u: flags %u, event at %u wrap %u "
                 "(used %"PRIu64"+%u), %u chains of %u", i, flags,
                 off_wrap & 0x7fff, off_wrap >> 15, old % size, slots, n,
                 descs);
        tfe_vq_pset_event(vq, flags, off_wrap);
        TU_CHECK_EQ(pk_burst(pk, tx, n, descs), slots);
        n_notified += notify;
        n_suppressed += !notify && slots;
        check_notify(pk, vring, notify, n_notified, n_suppressed, what);
        TU_CHECK_EQ(vq->next_used, new % size);
        TU_CHECK_EQ(vq->used_wrap, (new / size) % 2 == 0);
        laps += new / size != old / size;
        r = new;
    }
    tu_log("  %u steps over %u laps", steps, laps);
    tfe_vq_pset_event(vq, TFE_PEVENT_ENABLE, 0);
}

static void
run_notify_event_idx(const char *name, unsigned int size, bool has_base,
                     uint32_t base)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, size);
    struct pk pk;

    cfg.has_base = has_base;
    cfg.base = base;
    pk_start(&pk, name, &cfg);
    for (int tx = 0; tx < 2; tx++) {
        tu_log("%s, queue size %u, from position %u wrap %d",
               tx ? "dequeue" : "enqueue", size,
               pk.vq[tx ? TX(0) : RX(0)].next_used,
               pk.vq[tx ? TX(0) : RX(0)].used_wrap);
        run_notify_desc(&pk, tx, 300, size * 7919 + tx);
        pk_check_no_kicks(&pk.vq[tx ? TX(0) : RX(0)]);
    }
    pk_finish(&pk);
}

static void
test_notify_event_idx_7(void)
{
    run_notify_event_idx("notify-evt-7", 7, false, 0);
}

static void
test_notify_event_idx_33(void)
{
    run_notify_event_idx("notify-evt-33", 33, true, 20);
}

static void
test_notify_event_idx_256(void)
{
    run_notify_event_idx("notify-evt-256", 256, true, 0x8000 | 250);
}

const struct tu_test tu_packed_notify_tests[] = {
    { "pk-notify", test_notify_flags,
      "call eventfd and the driver event suppression flags" },
    { "pk-notify-event-idx-7", test_notify_event_idx_7,
      "EVENT_IDX: DESC off_wrap over many laps, queue size 7" },
    { "pk-notify-event-idx-33", test_notify_event_idx_33,
      "EVENT_IDX: DESC off_wrap, queue size 33, from wrap counter 0" },
    { "pk-notify-event-idx-256", test_notify_event_idx_256,
      "EVENT_IDX: DESC off_wrap, queue size 256, near the end" },
};

const size_t tu_n_packed_notify_tests = ARRAY_SIZE(tu_packed_notify_tests);
