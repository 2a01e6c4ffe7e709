/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests (test-packed*.c): the shared fixture.
 *
 * The tests check vhost_dequeue_burst() and vhost_enqueue_burst() when
 * VIRTIO_F_RING_PACKED is negotiated, against the model packed-ring driver
 * in test-frontend.h ("The guest driver of a packed virtqueue"), and the
 * contract of the packed data path (lib/virtq-packed.h,
 * include/ovs-vhost/vhost.h "Data path").
 *
 * The fixture (struct pk, test-packed-fixture.c) is the split ring tests'
 * (test-datapath.h) again: one port with two queue pairs over four
 * regions, two of them adjacent in guest physical memory to force the
 * cross-region (cold) paths:
 *
 *     region 0   GPA  0 MB ..  8 MB   memfd offset 0
 *     (gap)      GPA  8 MB .. 16 MB
 *     region 1   GPA 16 MB .. 24 MB   memfd offset 64 kB
 *     region 2   GPA 24 MB .. 25 MB   memfd offset 4 kB   (adjacent to 1)
 *     region 3   GPA 25 MB .. 26 MB   memfd offset 0      (adjacent to 2)
 *
 * Vring i lives in region i; buffers come from arenas in regions 0 (receive
 * rings) and 1 (transmit rings).
 *
 * The tests, by file:
 *   test-packed-ring.c      packet bytes both ways for every feature
 *                           combination, wrap counters over many laps, the
 *                           four-at-a-time batch and the one-at-a-time path
 *   test-packed-validate.c  every validation rule with its drop counter,
 *                           chains that do not end, buffer ids in flight
 *   test-packed-order.c     VIRTIO_F_IN_ORDER on both layouts
 *   test-packed-notify.c    notifications and event suppression
 *   test-packed-state.c     SET/GET_VRING_BASE, reconnection, backend
 *                           restarts (ring position log), the dirty log
 *   test-packed-diff.c      bounded work, full receive rings, the split /
 *                           packed differential, the cold paths
 */

#ifndef OVS_VHOST_TEST_PACKED_H
#define OVS_VHOST_TEST_PACKED_H 1

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
#define PK_REGION_SIZE (8 * MB)
#define PK_GPA1 (16 * MB)
#define PK_SMALL_REGION_SIZE MB
#define PK_GAP_GPA (12 * MB)            /* In no region. */
#define PK_FAR_GPA (UINT64_C(1) << 30)  /* Beyond every region. */
#define PK_ARENA_SIZE (2 * MB)
#define PK_LOG_SIZE 4096                /* Covers 128 MB of guest memory. */

#define F(BIT) FEATURE_BIT(BIT)

/* What the port offers: everything the contract names, the packed ring
 * (which vhost_default_features() offers too) and the offloads. */
#define PK_OFFERED                                                      \
    (F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF) | F(VIRTIO_NET_F_MQ) \
     | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX)      \
     | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM)                \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT) | F(VHOST_F_LOG_ALL)                      \
     | F(VIRTIO_NET_F_GUEST_ANNOUNCE) | F(VIRTIO_NET_F_MTU)             \
     | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_F_IN_ORDER))

/* What every test acks (the packed ring is a VIRTIO 1.x feature), and the
 * options most ack on top. */
#define PK_BASE                                                         \
    (F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT) | F(VIRTIO_F_VERSION_1)                   \
     | F(VIRTIO_F_RING_PACKED))
#define PK_MRG F(VIRTIO_NET_F_MRG_RXBUF)
#define PK_IND F(VIRTIO_RING_F_INDIRECT_DESC)
#define PK_EVT F(VIRTIO_RING_F_EVENT_IDX)
#define PK_FULL (PK_BASE | PK_MRG | PK_IND | PK_EVT)
#define PK_INO F(VIRTIO_F_IN_ORDER)

#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)
#define REASON(X) (1u << VHOST_DROP_##X)

/* The used descriptor flags §2.8.1 asks for in a lap with wrap counter
 * 'W': AVAIL and USED both equal to it; WRITE with a nonzero length. */
#define USED_FLAGS(W, LEN)                                              \
    ((uint16_t) (((W) ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0)       \
                 | ((LEN) ? TFE_DESC_F_WRITE : 0)))

/* The embedder's buffers: malloc()ed, 'handle' is the block. */
struct palloc {
    unsigned int n_alloc;
    unsigned int n_failed;
    unsigned int n_free;
    int fail_after;             /* Refuse after this many more (-1: no). */
};

struct pk_cfg {
    uint64_t features;          /* Acked (PK_OFFERED & this). */
    unsigned int queue_size;    /* 0: 256. */
    bool log_used;              /* VHOST_VRING_F_LOG on every vring. */
    uint64_t used_align;        /* 0: 64. */
    bool has_base;              /* SET_VRING_BASE 'base' on every vring,
                                 * not the initial TFE_PACKED_BASE_INIT. */
    uint32_t base;
    const char *state_path;     /* The port's ring position log, or NULL. */
};

struct pk {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq vq[4];        /* By vring: RX(0), TX(0), RX(1), TX(1). */
    unsigned int hdr_len;
    bool mrg;
    bool packed;
    struct palloc pa;
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

/* A tiny deterministic generator (xorshift64*). */
struct rng {
    uint64_t s;
};

#define WRAP_MAX_PENDING 200

struct pending {
    uint8_t *pkt;
    size_t len;
    int id;
};

enum item_kind {
    IT_GOOD,                    /* One descriptor, 100..400 bytes. */
    IT_STRADDLE,                /* One descriptor across regions 1|2. */
    IT_OFFLOAD,                 /* One descriptor, NEEDS_CSUM header. */
    IT_HDR_ONLY,                /* One descriptor of just the header. */
    IT_CHAIN2,                  /* Two descriptors. */
    IT_INDIRECT,                /* An indirect table of two. */
    IT_BAD_CSUM,                /* csum_start + csum_offset past the end. */
    IT_BAD_ID,                  /* Buffer id = queue size. */
    IT_BAD_WRITE,               /* Device-writable. */
    IT_SHORT,                   /* 5 bytes: shorter than the header. */
    IT_TOO_BIG,                 /* 70000 bytes of packet. */
};

struct item {
    enum item_kind kind;
    uint8_t *pkt;               /* Good: the packet. */
    size_t len;
    struct vhost_offload ol;
    int id;
    int reason;                 /* -1 for a good packet. */
};

/* Shared by the packed ring test files: see test-packed-fixture.c. */
bool pk_palloc_alloc(void *aux, struct vhost_pkt *pkt, uint32_t len);
void pk_palloc_free(void *aux, struct vhost_pkt *pkt);
struct tfe_mem *pk_mem_create(void);
uint64_t pk_boundary_tx(const struct pk *pk);
uint64_t pk_boundary_rx(const struct pk *pk);
uint64_t pk_mem_end(const struct pk *pk);
void pk_start(struct pk *pk, const char *name, const struct pk_cfg *cfg);
void pk_finish(struct pk *pk);
struct pk_cfg pk_cfg_features(uint64_t features);
struct pk_cfg pk_cfg_sized(uint64_t features, unsigned int queue_size);
uint8_t *pk_new_pkt(struct pk *pk, size_t len, enum mac_kind kind);
void pk_check_bytes(const uint8_t *got, const uint8_t *exp, size_t len,
                    const char *what);
void pk_check_pkt(const struct vhost_pkt *got, const uint8_t *exp, size_t len,
                  const char *what);
void
pk_check_ol(const struct vhost_offload *got, const struct vhost_offload *exp,
            const char *what);
void pk_release_pkts(struct vhost_pkt *pkts, unsigned int n);
int
pk_tx_post(struct pk *pk, unsigned int qp, const struct tfe_net_hdr *hdr,
           const uint8_t *pkt, size_t len, const struct tfe_buf_opts *opts);
int pk_rx_post(struct pk *pk, unsigned int qp, uint32_t len,
               const struct tfe_buf_opts *opts);
unsigned int
pk_dq(struct pk *pk, unsigned int qp, struct vhost_pkt *pkts, unsigned int n);
unsigned int
pk_enq1(struct pk *pk, unsigned int qp, const uint8_t *pkt, size_t len,
        const struct vhost_offload *ol);
int pk_get_used(struct tfe_vq *vq, struct tfe_used_elem *e, const char *what);
void pk_expect_used(struct tfe_vq *vq, unsigned int id, uint32_t len);
void pk_expect_no_used(struct tfe_vq *vq);
void pk_build_hdr(uint8_t hdr[12], const struct vhost_offload *ol,
                  uint16_t num_buffers);
size_t pk_recv_pkt(struct tfe_vq *vq, uint8_t *buf, size_t size,
                   unsigned int *n_bufsp, uint16_t *firstp, const char *what);
void
pk_rx_expect(struct pk *pk, unsigned int qp, const uint8_t *pkt, size_t len,
             const struct vhost_offload *ol, unsigned int n_bufs,
             const char *what);
struct vhost_queue_stats pk_get_stats(struct pk *pk, unsigned int vring);
void pk_stats_add(struct vhost_queue_stats *e, const uint8_t *pkt, size_t len);
void pk_compare_stats(unsigned int vring, const struct vhost_queue_stats *s,
                      const struct vhost_queue_stats *e, bool notifications);
void pk_check_stats(struct pk *pk, unsigned int vring,
                    const struct vhost_queue_stats *e);
uint64_t pk_total_drops(const struct vhost_queue_stats *s);
void pk_check_no_kicks(const struct tfe_vq *vq);
void pk_dump_vring(struct pk *pk, unsigned int vring);
uint32_t pk_stopped_base(const struct tfe_vq *vq);
void pk_roundtrip(struct pk *pk, unsigned int qp, const char *why);
uint64_t pk_arena_buf(struct tfe_vq *vq, uint32_t len);
uint32_t pk_rng_next(struct rng *r);
uint32_t pk_rng_range(struct rng *r, uint32_t lo, uint32_t hi);
void pk_run_wrap(const char *name, unsigned int size, uint64_t features,
                 unsigned int laps);
extern const struct tfe_net_hdr pk_offload_hdr;
void pk_post_item(struct pk *pk, unsigned int qp, struct item *it);
void pk_check_items(struct pk *pk, struct item *items, size_t n_items,
                    unsigned int n_dq, unsigned int expect, const char *what);
void pk_tx_advance_to(struct pk *pk, unsigned int pos);
uint16_t pk_free_id(const struct tfe_vq *vq);
uint16_t pk_post_raw(struct tfe_vq *vq, size_t n, const uint64_t *addr,
                     const uint32_t *len, const uint16_t *flags, uint16_t id);
uint16_t
pk_post_one(struct tfe_vq *vq, uint64_t addr, uint32_t len, uint16_t flags,
            uint16_t id);
uint16_t pk_post_two(struct tfe_vq *vq, uint64_t a0, uint32_t l0, uint16_t f0,
                     uint64_t a1, uint32_t l1, uint16_t f1, uint16_t id);
unsigned int
pk_burst(struct pk *pk, bool tx, unsigned int n, unsigned int descs);

#endif /* OVS_VHOST_TEST_PACKED_H */
