/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests (test-datapath*.c): the shared fixture.
 *
 * The tests check vhost_dequeue_burst() and vhost_enqueue_burst() on split
 * virtqueues, against the model guest driver in test-frontend.h, and the
 * engine's contract (include/ovs-vhost/vhost.h, "Data path") and VIRTIO
 * 1.2 §2.7 and §5.1.6: packet bytes, lengths and offload metadata in both
 * directions, used ring entries, per-vring statistics and drop reasons,
 * notifications, the dirty log, and that nothing leaks.
 *
 * Every test brings up one port with two queue pairs (so that a test can
 * show that a guest's misbehaviour on one queue leaves the others alone)
 * over this guest memory:
 *
 *     region 0   GPA  0 MB ..  8 MB   memfd offset 0
 *     (gap)      GPA  8 MB .. 16 MB
 *     region 1   GPA 16 MB .. 24 MB   memfd offset 64 kB
 *     region 2   GPA 24 MB .. 25 MB   memfd offset 4 kB   (adjacent to 1)
 *     region 3   GPA 25 MB .. 26 MB   memfd offset 0      (adjacent to 2)
 *
 * Regions 1-2 and 2-3 are contiguous in guest physical memory but are
 * separate memfds, so a buffer or indirect table placed across 24 MB or
 * 25 MB forces the engine's cross-region (cold) path.  Vring i lives in
 * region i; buffers come from arenas in regions 0 (receive rings) and 1
 * (transmit rings).
 *
 * The tests, by file:
 *   test-datapath-queues.c    every feature combination, queue sizes other
 *                             than 256, queue pair and vring numbers the
 *                             port lacks, guest memory replaced under traffic
 *   test-datapath-validate.c  hostile chains and rings on both directions
 *   test-datapath-cold.c      the cold paths and the dirty log
 *   test-datapath-notify.c    notifications and bounded work
 *   test-datapath-buffers.c   the embedder's buffers, receive buffers too
 *                             small, offload metadata
 */

#ifndef OVS_VHOST_TEST_DATAPATH_H
#define OVS_VHOST_TEST_DATAPATH_H 1

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

#define MB (UINT64_C(1) << 20)
#define PAGE 4096
#define DIV_ROUND_UP(X, Y) (((X) + (Y) - 1) / (Y))

/* Guest memory layout (see above). */
#define DP_REGION_SIZE (8 * MB)
#define DP_GPA1 (16 * MB)
#define DP_SMALL_REGION_SIZE MB
#define DP_GAP_GPA (12 * MB)            /* In no region. */
#define DP_FAR_GPA (UINT64_C(1) << 30)  /* Beyond every region. */
#define DP_ARENA_SIZE (2 * MB)
#define DP_LOG_SIZE 4096                /* Covers 128 MB of guest memory. */

#define F(BIT) FEATURE_BIT(BIT)

/* What the port offers: everything the contract names. */
#define DP_OFFERED                                                      \
    (F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF) | F(VIRTIO_NET_F_MQ) \
     | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX)      \
     | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM)                \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT) | F(VHOST_F_LOG_ALL)                      \
     | F(VIRTIO_NET_F_GUEST_ANNOUNCE) | F(VIRTIO_NET_F_MTU))

/* What every test acks, and what most ack on top. */
#define DP_BASE                                                         \
    (F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT))
#define DP_FULL                                                         \
    (DP_BASE | F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF)        \
     | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX))

#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)
#define REASON(X) (1u << VHOST_DROP_##X)

/* The embedder's buffers: malloc()ed, 'handle' is the block. */
struct dalloc {
    unsigned int n_alloc;       /* Successful alloc() calls. */
    unsigned int n_failed;      /* alloc() calls refused. */
    unsigned int n_free;        /* free() calls. */
    uint32_t max_len;           /* Largest 'len' asked for. */
    int fail_after;             /* Refuse after this many more (-1: no). */
    void *freed[VHOST_MAX_BURST]; /* Handles free() was given. */
};

struct dp_cfg {
    uint64_t features;          /* Acked (DP_OFFERED & this). */
    unsigned int queue_size;    /* 0: 256. */
    bool log_used;              /* VHOST_VRING_F_LOG on every vring. */
    uint64_t used_align;        /* 0: 64. */
    bool packed;                /* Packed rings (offered and acked). */
    uint64_t iova_offset;       /* Nonzero: a vIOMMU (VIRTIO_F_ACCESS_
                                 * PLATFORM offered and acked) whose IOVAs
                                 * are GPAs plus this: the device comes up
                                 * once the rings' misses are answered by
                                 * mapping all of guest memory (test-
                                 * frontend.h, 'iova_offset'). */
};

struct dp {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq vq[4];        /* By vring: RX(0), TX(0), RX(1), TX(1). */
    unsigned int hdr_len;       /* 10 or 12. */
    bool mrg;
    struct dalloc da;
    struct vhost_pkt_alloc alloc;
    uint32_t seq;               /* Next packet's sequence number. */
    int fds0;
    int threads0;
};

enum mac_kind { MAC_UNICAST, MAC_MULTICAST, MAC_BROADCAST };

#define CHECK_STAT(VRING, GOT, EXP, FIELD)                              \
    do {                                                                \
        if ((GOT)->FIELD != (EXP)->FIELD) {                             \
            TU_FAIL("vring %u stats: %s is %"PRIu64", expected %"PRIu64, \
                    VRING, #FIELD, (uint64_t) (GOT)->FIELD,             \
                    (uint64_t) (EXP)->FIELD);                           \
        }                                                               \
    } while (0)

/* Shared by the data path test files: see test-datapath-fixture.c. */
bool dp_dalloc_alloc(void *aux, struct vhost_pkt *pkt, uint32_t len);
void dp_dalloc_free(void *aux, struct vhost_pkt *pkt);
struct tfe_mem *dp_mem_create(void);
uint64_t dp_boundary_tx(const struct dp *dp);
uint64_t dp_boundary_rx(const struct dp *dp);
uint64_t dp_mem_end(const struct dp *dp);
void dp_start(struct dp *dp, const char *name, const struct dp_cfg *cfg);
void dp_finish(struct dp *dp);
struct dp_cfg dp_cfg_features(uint64_t features);
uint8_t *dp_new_pkt(struct dp *dp, size_t len, enum mac_kind kind);
void dp_check_bytes(const uint8_t *got, const uint8_t *exp, size_t len,
                    const char *what);
void dp_check_pkt(const struct vhost_pkt *got, const uint8_t *exp, size_t len,
                  const char *what);
void dp_check_ol_zero(const struct vhost_pkt *pkt, const char *what);
void dp_release_pkts(struct vhost_pkt *pkts, unsigned int n);
int
dp_tx_post(struct dp *dp, unsigned int qp, const struct tfe_net_hdr *hdr,
           const uint8_t *pkt, size_t len, const struct tfe_buf_opts *opts);
int dp_rx_post(struct dp *dp, unsigned int qp, uint32_t len,
               const struct tfe_buf_opts *opts);
unsigned int
dp_dq(struct dp *dp, unsigned int qp, struct vhost_pkt *pkts, unsigned int n);
unsigned int
dp_enq1(struct dp *dp, unsigned int qp, const uint8_t *pkt, size_t len,
        const struct vhost_offload *ol);
void dp_expect_used(struct tfe_vq *vq, unsigned int head, uint32_t len);
void dp_expect_no_used(struct tfe_vq *vq);
void dp_build_hdr(uint8_t hdr[12], const struct vhost_offload *ol,
                  uint16_t num_buffers);
void
dp_rx_expect(struct dp *dp, unsigned int qp, const uint8_t *pkt, size_t len,
             const struct vhost_offload *ol, unsigned int n_bufs,
             const char *what);
struct vhost_queue_stats dp_get_stats(struct dp *dp, unsigned int vring);
void dp_stats_add(struct vhost_queue_stats *e, const uint8_t *pkt, size_t len);
void dp_check_stats(struct dp *dp, unsigned int vring,
                    const struct vhost_queue_stats *e);
uint64_t dp_total_drops(const struct vhost_queue_stats *s);
void dp_check_no_kicks(const struct tfe_vq *vq, bool event_idx);
void dp_poison_avail_event(struct tfe_vq *vq);
void dp_roundtrip(struct dp *dp, unsigned int qp, const char *why);
uint16_t dp_take_chain(struct tfe_vq *vq, uint16_t *ids, size_t n);
void dp_set_desc(struct tfe_vq *vq, uint16_t i, uint64_t addr, uint32_t len,
                 uint16_t flags, uint16_t next);
uint16_t
dp_post_one(struct tfe_vq *vq, uint64_t addr, uint32_t len, uint16_t flags);
uint16_t dp_post_two(struct tfe_vq *vq, uint64_t a0, uint32_t l0, uint16_t f0,
                     uint64_t a1, uint32_t l1, uint16_t f1);
void dp_write_table(struct tfe_vq *vq, uint64_t gpa, const struct tfe_desc *t,
                    size_t n);
uint16_t dp_post_indirect(struct tfe_vq *vq, uint64_t table, uint32_t len);
uint64_t dp_arena_buf(struct tfe_vq *vq, uint32_t len);
void dp_dump_vring(struct dp *dp, unsigned int vring);
void dp_burst(struct dp *dp, bool tx, unsigned int n);

#endif /* OVS_VHOST_TEST_DATAPATH_H */
