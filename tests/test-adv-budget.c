/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The work budget of a burst (lib/virtq-segs.h): a guest alone must not
 * make a burst cost milliseconds (issue 19, finding 3).
 *
 * Hostile rings, as the model frontend builds them:
 *
 *   - split: every avail entry names the same chain, one that runs
 *     through the whole descriptor table (the chains share descriptors);
 *   - packed: every ring slot is an indirect descriptor for the same
 *     table of a whole ring of entries.
 *
 * On receive the chains hold one byte: no packet fits.  On transmit they
 * hold a good packet followed by empty descriptors.  The tests assert on
 * the descriptors a burst reads ('desc_visits' of the queue's statistics),
 * never on time: a burst of 32 packets reads at most virtq_budget(32),
 * and a chain too small for a packet is walked once per burst, not once
 * per packet.  Before the budget, one receive burst read 32 times the ring
 * (64 times that with mergeable buffers), and one transmit burst 32 times.
 *
 * "adv-budget-bench" (`make bench-hostile`) times the same hostile
 * bursts against ordinary ones, side by side.  It asserts nothing on
 * time and is not part of the testsuite.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "virtio.h"
#include "virtq-segs.h"

#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)
#define BUDGET_BURST 32
#define BUDGET_PKT_LEN 64
#define BUDGET_ARENA (384u << 10)

struct budget {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq vq[4];
    bool packed;
    bool mrg;
    unsigned int size;
    uint8_t pkt[BUDGET_PKT_LEN];
};

static bool
budget_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
budget_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

static const struct vhost_pkt_alloc budget_alloc = {
    .alloc = budget_alloc__,
    .free = budget_free__,
};

/* Starts an engine with one port and brings its device up with two queue
 * pairs of 'size' on ring layout 'packed', with or without 'mrg'. */
static void
budget_start(struct budget *b, bool packed, unsigned int size, bool mrg)
{
    struct vhost_port_options opts;
    char name[64];

    memset(b, 0, sizeof *b);
    b->packed = packed;
    b->mrg = mrg;
    b->size = size;
    for (size_t i = 0; i < sizeof b->pkt; i++) {
        b->pkt[i] = i;
    }
    snprintf(name, sizeof name, "budget-%s-%u%s", packed ? "p" : "s", size,
             mrg ? "-mrg" : "");
    TU_CHECK_OK(vhost_engine_create(&b->engine));
    TU_CHECK_OK(vhost_engine_start(b->engine));
    b->path = tu_path(name);
    tu_events_init(&b->ev);
    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = b->path;
    opts.max_queue_pairs = 2;
    opts.features |= FEATURE_BIT(VIRTIO_F_RING_PACKED);
    opts.cb = &tu_callbacks;
    opts.aux = &b->ev;
    TU_CHECK_OK(vhost_port_create(b->engine, &opts, &b->port));

    struct tfe_setup setup = {
        .queue_size = size, .packed = packed,
        .features_mask = mrg ? 0 : ~(TFE_DEFAULT_FEATURES_EXCLUDED
                                     | FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF)),
    };
    b->fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(b->fe, b->path));
    TU_CHECK(tu_wait_port(b->port, tu_port_connected, NULL, TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_setup_device(b->fe, 2, &setup));
    TU_CHECK(tu_port_info(b->port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&b->vq[q], b->fe, q, q % 2, BUDGET_ARENA));
        TU_CHECK_EQ(b->vq[q].packed, packed);
        TU_CHECK_EQ(b->vq[q].mrg, mrg);
    }
}

static void
budget_finish(struct budget *b)
{
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_destroy(&b->vq[q]);
    }
    tfe_destroy(b->fe);
    vhost_port_destroy(b->port);
    vhost_engine_destroy(b->engine);
    tu_events_destroy(&b->ev);
    free(b->path);
}

static struct vhost_queue_stats
budget_stats(struct budget *b, unsigned int vring)
{
    struct vhost_queue_stats st;

    TU_CHECK_OK(vhost_port_get_queue_stats(b->port, vring, &st));
    return st;
}

/* Makes the hostile ring on 'vq': 'len' descriptors each chain, the first
 * of 'first_len' bytes (at 'first_gpa') and the rest empty, all of them
 * device-writable if 'write'.  Split: one chain through descriptors
 * 0..len-1, named by 'size' avail entries.  Packed: 'size' ring slots,
 * each an indirect descriptor for one table of 'len' entries. */
static void
budget_hostile(struct budget *b, struct tfe_vq *vq, unsigned int len,
               bool write, uint64_t first_gpa, uint32_t first_len)
{
    uint16_t wflag = write ? TFE_DESC_F_WRITE : 0;

    if (!b->packed) {
        for (unsigned int i = 0; i < len; i++) {
            *tfe_vq_desc(vq, i) = (struct tfe_desc) {
                .addr = first_gpa, .len = i ? 0 : first_len,
                .flags = wflag | (i + 1 < len ? TFE_DESC_F_NEXT : 0),
                .next = i + 1 < len ? i + 1 : 0,
            };
        }
        for (unsigned int k = 0; k < vq->size; k++) {
            tfe_vq_push_avail(vq, 0);
        }
        return;
    }

    uint64_t table = tfe_vq_alloc(vq, (uint64_t) len * 16, 16);
    struct tfe_pdesc *t = tfe_mem_gpa_to_va(vq->mem, table, len * 16);
    TU_CHECK(t != NULL);
    for (unsigned int i = 0; i < len; i++) {
        t[i] = (struct tfe_pdesc) {
            .addr = first_gpa, .len = i ? 0 : first_len, .flags = wflag,
        };
    }
    for (unsigned int k = 0; k < vq->size; k++) {
        tfe_vq_pwrite(vq, 0, table, len * 16, k,
                      tfe_vq_pavail(vq, 0) | TFE_DESC_F_INDIRECT);
        tfe_vq_pclaim(vq, k, 1);
    }
}

/* One receive burst of BUDGET_BURST packets on queue pair 'qp'; returns
 * the packets taken and stores the descriptors read in '*visitsp'. */
static unsigned int
budget_rx_burst(struct budget *b, unsigned int qp, uint64_t *visitsp)
{
    struct vhost_pkt in[BUDGET_BURST];
    uint64_t v0 = budget_stats(b, RX(qp)).desc_visits;

    for (int i = 0; i < BUDGET_BURST; i++) {
        in[i] = (struct vhost_pkt) { .data = b->pkt, .len = sizeof b->pkt };
    }
    unsigned int n = vhost_enqueue_burst(b->port, qp, in, BUDGET_BURST);
    *visitsp = budget_stats(b, RX(qp)).desc_visits - v0;
    return n;
}

/* Receive: chains that can never hold the packet are walked once per
 * burst, and a burst reads at most its budget. */
static void
budget_rx(bool packed)
{
    static const unsigned int sizes[] = { 256, 1024 };

    for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
        for (int mrg = 0; mrg < 2; mrg++) {
            struct budget b;
            uint64_t visits;

            budget_start(&b, packed, sizes[s], mrg);
            struct tfe_vq *vq = &b.vq[RX(0)];
            tu_log("%s %u, mergeable %s: every chain the whole ring, one "
                   "byte; a burst of %d packets", packed ? "packed" : "split",
                   sizes[s], mrg ? "on" : "off", BUDGET_BURST);
            budget_hostile(&b, vq, sizes[s], true,
                           tfe_vq_alloc(vq, 64, 64), 1);
            for (int burst = 0; burst < 3; burst++) {
                TU_CHECK_EQ(budget_rx_burst(&b, 0, &visits), 0);
                tu_log("  burst %d: %"PRIu64" descriptors read (budget %"
                       PRIu32")", burst, visits, virtq_budget(BUDGET_BURST));
                TU_CHECK_CMP(visits, <=, virtq_budget(BUDGET_BURST));
                TU_CHECK_CMP(visits, >, 0);
            }
            struct vhost_queue_stats st = budget_stats(&b, RX(0));
            TU_CHECK_EQ(st.packets, 0);
            /* Each burst stops at a chain it cannot use, or drops tables
             * too long without reading them (packed 1024). */
            TU_CHECK_CMP(st.small_buf_stops + st.budget_stops
                         + st.drops[VHOST_DROP_TOO_LONG], >=, 3);
            if (sizes[s] > VIRTQ_CHAIN_VISITS_MAX) {
                TU_CHECK_CMP(st.drops[VHOST_DROP_TOO_LONG], >, 0);
            }

            tu_log("  the other queue pair works, at its usual cost");
            TU_CHECK_CMP(tfe_vq_post_rx(&b.vq[RX(1)], 2048, NULL), >=, 0);
            TU_CHECK_EQ(budget_rx_burst(&b, 1, &visits), 1);
            TU_CHECK_EQ(visits, 1);
            budget_finish(&b);
        }
    }
}

static void
test_budget_rx_split(void)
{
    budget_rx(false);
}

static void
test_budget_rx_packed(void)
{
    budget_rx(true);
}

/* Transmit: chains with a good packet and then a ring of empty
 * descriptors.  A burst reads at most its budget; what it could not
 * afford stays for the next one. */
static void
budget_tx(bool packed)
{
    static const unsigned int sizes[] = { 256, 1024 };

    for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
        struct budget b;

        budget_start(&b, packed, sizes[s], true);
        struct tfe_vq *vq = &b.vq[TX(0)];
        uint64_t buf = tfe_vq_alloc(vq, 12 + BUDGET_PKT_LEN, 64);
        uint8_t *va = tfe_mem_gpa_to_va(vq->mem, buf, 12 + BUDGET_PKT_LEN);

        memset(va, 0, 12);
        memcpy(va + 12, b.pkt, BUDGET_PKT_LEN);
        tu_log("%s %u: every chain a packet and then the whole ring of "
               "empty descriptors", packed ? "packed" : "split", sizes[s]);
        budget_hostile(&b, vq, sizes[s], false, buf, 12 + BUDGET_PKT_LEN);
        for (int burst = 0; burst < 3; burst++) {
            struct vhost_pkt out[BUDGET_BURST];
            uint64_t v0 = budget_stats(&b, TX(0)).desc_visits;

            memset(out, 0, sizeof out);
            unsigned int n = vhost_dequeue_burst(b.port, 0, out, BUDGET_BURST,
                                                 &budget_alloc);
            uint64_t visits = budget_stats(&b, TX(0)).desc_visits - v0;
            tu_log("  burst %d: %u packets, %"PRIu64" descriptors read "
                   "(budget %"PRIu32")", burst, n, visits,
                   virtq_budget(BUDGET_BURST));
            TU_CHECK_CMP(visits, <=, virtq_budget(BUDGET_BURST));
            for (unsigned int i = 0; i < n; i++) {
                TU_CHECK_EQ(out[i].len, BUDGET_PKT_LEN);
                TU_CHECK(!memcmp(out[i].data, b.pkt, BUDGET_PKT_LEN));
            }
            for (unsigned int i = 0; i < BUDGET_BURST; i++) {
                free(out[i].handle);
            }
        }
        struct vhost_queue_stats st = budget_stats(&b, TX(0));
        TU_CHECK_CMP(st.budget_stops + st.drops[VHOST_DROP_TOO_LONG], >=, 3);
        if (sizes[s] > VIRTQ_CHAIN_VISITS_MAX) {
            TU_CHECK_CMP(st.drops[VHOST_DROP_TOO_LONG], >, 0);
        } else {
            TU_CHECK_CMP(st.packets, >, 0);
        }
        budget_finish(&b);
    }
}

static void
test_budget_tx_split(void)
{
    budget_tx(false);
}

static void
test_budget_tx_packed(void)
{
    budget_tx(true);
}

/* The benchmark. */

static uint64_t
budget_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
budget_cmp_u64(const void *a_, const void *b_)
{
    uint64_t a = *(const uint64_t *) a_, b = *(const uint64_t *) b_;

    return a < b ? -1 : a > b;
}

#define BUDGET_BENCH_REPS 2000

/* Median nanoseconds of one receive burst of BUDGET_BURST 64-byte packets
 * on queue pair 'qp', 'hostile' or with a fresh buffer for each packet. */
static uint64_t
budget_bench_rx(struct budget *b, unsigned int qp, bool hostile)
{
    static uint64_t ns[BUDGET_BENCH_REPS];
    struct tfe_vq *vq = &b->vq[RX(qp)];
    struct vhost_pkt in[BUDGET_BURST];

    for (int i = 0; i < BUDGET_BURST; i++) {
        in[i] = (struct vhost_pkt) { .data = b->pkt, .len = sizeof b->pkt };
    }
    for (int r = 0; r < BUDGET_BENCH_REPS; r++) {
        if (!hostile) {
            for (int i = 0; i < BUDGET_BURST; i++) {
                TU_CHECK_CMP(tfe_vq_post_rx(vq, 2048, NULL), >=, 0);
            }
        }
        uint64_t t0 = budget_now_ns();
        unsigned int n = vhost_enqueue_burst(b->port, qp, in, BUDGET_BURST);
        ns[r] = budget_now_ns() - t0;
        if (hostile) {
            TU_CHECK_EQ(n, 0);
        } else {
            struct tfe_used_elem e;

            TU_CHECK_EQ(n, BUDGET_BURST);
            for (int i = 0; i < BUDGET_BURST; i++) {
                TU_CHECK_OK(tfe_vq_get_used(vq, &e));
            }
        }
    }
    qsort(ns, BUDGET_BENCH_REPS, sizeof ns[0], budget_cmp_u64);
    return ns[BUDGET_BENCH_REPS / 2];
}

/* Prints, for both ring layouts, queue sizes 256 and 1024 and mergeable
 * buffers on and off, the median time of a receive burst of 32 packets
 * into a hostile ring and into an ordinary one, and their ratio.  The
 * hostile ring is the costliest this engine lets a guest build: chains of
 * VIRTQ_CHAIN_VISITS_MAX - 1 descriptors (longer ones are dropped, and
 * cost less), that never hold the packet and so are never consumed. */
static void
test_budget_bench(void)
{
    static const unsigned int sizes[] = { 256, 1024 };
    double worst = 0;

    printf("%-7s %5s %4s %12s %12s %7s %14s\n", "ring", "size", "mrg",
           "normal ns", "hostile ns", "ratio", "hostile visits");
    for (int packed = 0; packed < 2; packed++) {
        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
            for (int mrg = 1; mrg >= 0; mrg--) {
                struct budget b;
                unsigned int len = MIN(sizes[s], VIRTQ_CHAIN_VISITS_MAX - 1);

                budget_start(&b, packed, sizes[s], mrg);
                budget_hostile(&b, &b.vq[RX(0)], len, true,
                               tfe_vq_alloc(&b.vq[RX(0)], 64, 64), 1);
                /* Warm both up, then alternate: the machine is shared. */
                budget_bench_rx(&b, 1, false);
                budget_bench_rx(&b, 0, true);
                uint64_t normal = budget_bench_rx(&b, 1, false);
                uint64_t v0 = budget_stats(&b, RX(0)).desc_visits;
                uint64_t hostile = budget_bench_rx(&b, 0, true);
                uint64_t visits = (budget_stats(&b, RX(0)).desc_visits - v0)
                                  / BUDGET_BENCH_REPS;
                normal = MIN(normal, budget_bench_rx(&b, 1, false));
                hostile = MIN(hostile, budget_bench_rx(&b, 0, true));
                double ratio = (double) hostile / normal;
                worst = ratio > worst ? ratio : worst;
                printf("%-7s %5u %4s %12"PRIu64" %12"PRIu64" %7.2f %14"PRIu64
                       "\n", packed ? "packed" : "split", sizes[s],
                       mrg ? "on" : "off", normal, hostile, ratio, visits);
                fflush(stdout);
                budget_finish(&b);
            }
        }
    }
    printf("worst hostile/normal ratio: %.2f (target <= 2)\n", worst);
}

const struct tu_test tu_adv_budget_tests[] = {
    { "adv-budget-rx-split", test_budget_rx_split,
      "split RX: shared chains too small, a burst reads its budget" },
    { "adv-budget-rx-packed", test_budget_rx_packed,
      "packed RX: a shared indirect table, a burst reads its budget" },
    { "adv-budget-tx-split", test_budget_tx_split,
      "split TX: shared chains of empty descriptors, bounded bursts" },
    { "adv-budget-tx-packed", test_budget_tx_packed,
      "packed TX: a shared indirect table, bounded bursts" },
    { "adv-budget-bench", test_budget_bench,
      "benchmark: hostile vs normal RX burst, ns (make bench-hostile)" },
};
const size_t tu_n_adv_budget_tests = ARRAY_SIZE(tu_adv_budget_tests);
