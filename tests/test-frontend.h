/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tfe: a test model of the other side of a vhost-user connection, the
 * virtio driver and its vhost-user frontend (what QEMU or DPDK virtio-user
 * is to a real backend), for the engine's tests.
 *
 * Usage
 * =====
 *
 * Guest memory is a struct tfe_mem: memfd-backed regions (named
 * TFE_MEM_NAME, so tests can count their mappings in /proc/self/maps), each
 * with a guest physical address, a size, an offset inside its memfd and the
 * frontend's own mapping of the memfd.  The frontend's virtual address of a
 * region (what SET_MEM_TABLE calls userspace_addr and SET_VRING_ADDR uses)
 * is simply the address of that mapping in this process.
 *
 *     struct tfe *fe = tfe_create(tfe_mem_create_default());
 *     tfe_connect(fe, path);                   (engine in server mode)
 *     tfe_setup_device(fe, 1, NULL);           (QEMU-like bring-up)
 *     ...
 *     tfe_destroy(fe);
 *
 * With the engine in client mode, tfe_listen() and tfe_accept() instead.
 *
 * Every request has a typed helper.  The SET helpers that have no reply of
 * their own set NEED_REPLY when 'reply_ack' is true (tfe_set_protocol_
 * features() sets it when REPLY_ACK is negotiated; a test may clear it) and
 * then return the acknowledgement:
 *
 *     0          success (acknowledged with 0, or no ack was asked for),
 *     TFE_NACK   the engine answered with a nonzero ack ('last_ack'),
 *     -errno     transport failure: -ECONNRESET when the engine closed the
 *                connection, -ETIMEDOUT after 'timeout_ms', -EPROTO for a
 *                malformed reply.
 *
 * The GET helpers return 0 or -errno.  tfe_send() and friends send anything
 * at all, for bad-input tests.
 *
 * Nothing blocks for longer than 'timeout_ms' (default TFE_TIMEOUT_MS): all
 * socket I/O is non-blocking behind poll().
 *
 * The code is in three files: test-frontend.c (the frontend: connection,
 * messages, typed requests, bring-up), test-frontend-mem.c (guest memory)
 * and test-frontend-vq.c (the guest driver, split and packed rings).
 *
 * Thread-safety
 * =============
 *
 * A struct tfe and its struct tfe_mem belong to one thread at a time.
 *
 * Trust model
 * ===========
 *
 * None: this is test code, and it trusts the engine only as far as the
 * reply checks in tfe_recv_reply() go.
 */

#ifndef OVS_VHOST_TEST_FRONTEND_H
#define OVS_VHOST_TEST_FRONTEND_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include "vhost-user-msg.h"
#include "virtio.h"

#define TFE_MEM_NAME "tfe-guest"    /* memfd name of guest memory. */
#define TFE_LOG_NAME "tfe-log"      /* memfd name of dirty logs. */
#define TFE_MAX_REGIONS VHOST_MAX_MEM_REGIONS
#define TFE_MAX_QUEUES VHOST_MAX_QUEUES
#define TFE_TIMEOUT_MS 5000
#define TFE_NACK 1                  /* Nonzero ack; see 'last_ack'. */
#define TFE_BAD_GPA UINT64_MAX

/* Guest memory. */

struct tfe_region {
    uint64_t gpa;               /* Guest physical address of byte 0. */
    uint64_t size;              /* Bytes. */
    uint64_t mmap_offset;       /* Offset of byte 0 in 'fd'. */
    int fd;                     /* memfd, 'mmap_offset' + 'size' bytes. */
    uint8_t *map;               /* Our mapping of all of 'fd'. */
    uint8_t *va;                /* 'map' + 'mmap_offset': byte 0. */
    uint64_t alloc_next;        /* tfe_mem_alloc() bump pointer. */
    uint64_t alloc_end;         /* ...and its limit ('size' unless the top
                                 * is reserved by tfe_mem_add_adjacent()). */
};

struct tfe_mem {
    size_t n_regions;
    struct tfe_region regions[TFE_MAX_REGIONS];
};

struct tfe_mem *tfe_mem_create(void);
struct tfe_mem *tfe_mem_create_default(void);
void tfe_mem_destroy(struct tfe_mem *);
int tfe_mem_add(struct tfe_mem *, uint64_t gpa, uint64_t size,
                uint64_t mmap_offset);

void *tfe_mem_gpa_to_va(const struct tfe_mem *, uint64_t gpa, uint64_t len);
uint64_t tfe_mem_va_to_gpa(const struct tfe_mem *, const void *va);
void *tfe_mem_alloc(struct tfe_mem *, size_t region, uint64_t size,
                    uint64_t align);
void tfe_mem_region_desc(const struct tfe_mem *, size_t region,
                         struct vhost_user_mem_region *);

/* Regions adjacent in guest physical memory (the second starts where the
 * first ends) but backed by separate memfds, so that a buffer or an
 * indirect table can straddle the two and force the engine's cold path.
 * tfe_mem_add_adjacent() reserves TFE_BOUNDARY_RESERVE bytes on each side
 * of the boundary, out of tfe_mem_alloc()'s reach, for tests to place such
 * buffers with tfe_mem_boundary(). */
#define TFE_BOUNDARY_RESERVE (64u << 10)
int tfe_mem_add_adjacent(struct tfe_mem *, uint64_t size,
                         uint64_t mmap_offset);
uint64_t tfe_mem_boundary(const struct tfe_mem *, size_t region);

/* Copies between guest physical memory and the caller, piecewise across
 * regions.  Return false if any byte is outside every region. */
bool tfe_mem_write(const struct tfe_mem *, uint64_t gpa, const void *,
                   size_t len);
bool tfe_mem_read(const struct tfe_mem *, uint64_t gpa, void *, size_t len);

/* The default layout, from tfe_mem_create_default(): two regions with a gap
 * between them, the second at a nonzero offset in its memfd. */
#define TFE_DEFAULT_REGION_SIZE (2u << 20)
#define TFE_DEFAULT_GPA0 0
#define TFE_DEFAULT_GPA1 (4u << 20)
#define TFE_DEFAULT_OFFSET1 (64u << 10)

static inline uint64_t
tfe_va_to_uva(const void *va)
{
    return (uint64_t) (uintptr_t) va;
}

/* Split virtqueue, as the driver lays it out (VIRTIO 1.2 §2.7).  A packed
 * ring (§2.8) uses the same allocation: 'desc' is its descriptor ring,
 * 'avail' the driver event suppression area and 'used' the device's. */
struct tfe_vring {
    unsigned int size;          /* 0 if not allocated. */
    void *desc;                 /* Frontend addresses of the three parts. */
    void *avail;
    void *used;
    int kick_fd;                /* eventfds we keep, -1 if none. */
    int call_fd;
    int err_fd;
    bool log_used;              /* Send VHOST_VRING_F_LOG and the used
                                 * ring's guest address for logging (the
                                 * descriptor ring's, if packed). */
    bool has_base;              /* tfe_vring_setup() sends 'base' with
                                 * SET_VRING_BASE, not the initial value
                                 * (0, or TFE_PACKED_BASE_INIT if packed). */
    uint32_t base;
};

size_t tfe_vring_desc_size(unsigned int size);
size_t tfe_vring_avail_size(unsigned int size);
size_t tfe_vring_used_size(unsigned int size);

/* A frontend. */
struct tfe {
    int sock;                   /* Connection to the engine, or -1. */
    int listen_fd;              /* tfe_listen() socket, or -1. */
    char *listen_path;
    int timeout_ms;

    struct tfe_mem *mem;        /* Owned; may be null. */

    uint64_t offered_features;  /* From GET_FEATURES. */
    uint64_t features;          /* Sent with SET_FEATURES. */
    uint64_t offered_protocol_features;
    uint64_t protocol_features; /* Sent with SET_PROTOCOL_FEATURES. */
    bool reply_ack;             /* Set NEED_REPLY on typed SET requests. */
    uint64_t last_ack;          /* Last ack value received. */

    struct tfe_vring vrings[TFE_MAX_QUEUES];
    uint64_t used_align;        /* Used ring alignment (0: 64). */

    int log_fd;                 /* tfe_log_create() memfd, or -1. */
    uint64_t log_size;
    int log_call_fd;            /* SET_LOG_FD eventfd we keep, or -1. */
    int backend_req_fd;         /* Our end of the backend channel, or -1. */

    /* A model vIOMMU (VIRTIO_F_ACCESS_PLATFORM): the driver's I/O virtual
     * addresses are its guest physical ones plus this, in the ring
     * addresses it sends and in every descriptor a struct tfe_vq writes;
     * the test hands the engine the translations (tfe_iotlb_*()).  0: no
     * IOMMU, addresses as without one. */
    uint64_t iova_offset;

    /* Set by the caller of a request whose reply carries an fd
     * (POSTCOPY_ADVISE): the first fd of the next reply is kept here
     * rather than closed. */
    bool keep_reply_fd;
    int reply_fd;
};

struct tfe *tfe_create(struct tfe_mem *);
void tfe_destroy(struct tfe *);
int tfe_count_fds(const struct tfe *);
int tfe_count_maps(const struct tfe *);

/* Connection. */
int tfe_connect(struct tfe *, const char *path);
int tfe_connect_retry(struct tfe *, const char *path, int timeout_ms);
int tfe_listen(struct tfe *, const char *path);
int tfe_accept(struct tfe *, int timeout_ms);
void tfe_disconnect(struct tfe *);
void tfe_stop_listening(struct tfe *);
bool tfe_wait_closed(struct tfe *, int timeout_ms);

/* Raw messages. */
int tfe_sock_send(int sock, const void *buf, size_t len,
                  const int *fds, size_t n_fds, int timeout_ms);
int tfe_send(struct tfe *, uint32_t request, uint32_t flags,
             const void *payload, size_t size, const int *fds, size_t n_fds);
int tfe_send_hdr(struct tfe *, uint32_t request, uint32_t flags,
                 uint32_t hdr_size, const void *payload, size_t size,
                 const int *fds, size_t n_fds);

struct tfe_reply {
    struct vhost_user_hdr hdr;
    union {
        uint64_t u64;
        struct vhost_user_vring_state state;
        uint8_t bytes[VHOST_USER_MAX_PAYLOAD];
    } payload;
    size_t n_fds;               /* fds that came with it (all closed). */
};

int tfe_recv_reply(struct tfe *, uint32_t request, struct tfe_reply *,
                   int timeout_ms);
int tfe_recv_u64(struct tfe *, uint32_t request, uint64_t *);
int tfe_wait_ack(struct tfe *, uint32_t request);
int tfe_request(struct tfe *, uint32_t request, bool need_reply,
                const void *payload, size_t size,
                const int *fds, size_t n_fds);
int tfe_sync(struct tfe *);

/* Typed requests, in request-number order. */
int tfe_get_features(struct tfe *, uint64_t *features);
int tfe_set_features(struct tfe *, uint64_t features);
int tfe_set_owner(struct tfe *);
int tfe_reset_owner(struct tfe *);
int tfe_set_mem_table(struct tfe *);
int tfe_set_mem_table_raw(struct tfe *, const struct vhost_user_mem_region *,
                          uint32_t n_regions, const int *fds, size_t n_fds);
int tfe_log_create(struct tfe *, uint64_t size);
int tfe_set_log_base(struct tfe *, uint64_t mmap_size, uint64_t mmap_offset,
                     int fd, bool need_reply);
int tfe_set_log_fd(struct tfe *);
int tfe_set_vring_num(struct tfe *, uint32_t index, uint32_t num);
int tfe_set_vring_addr(struct tfe *, uint32_t index);
int tfe_set_vring_addr_raw(struct tfe *, const struct vhost_user_vring_addr *);
int tfe_set_vring_base(struct tfe *, uint32_t index, uint32_t num);
int tfe_get_vring_base(struct tfe *, uint32_t index, uint32_t *base);
int tfe_set_vring_kick(struct tfe *, uint32_t index, int fd);
int tfe_set_vring_call(struct tfe *, uint32_t index, int fd);
int tfe_set_vring_err(struct tfe *, uint32_t index, int fd);
int tfe_set_vring_fd_raw(struct tfe *, uint32_t request, uint64_t u64,
                         const int *fds, size_t n_fds);
int tfe_get_protocol_features(struct tfe *, uint64_t *features);
int tfe_set_protocol_features(struct tfe *, uint64_t features);
int tfe_get_queue_num(struct tfe *, uint64_t *n);
int tfe_set_vring_enable(struct tfe *, uint32_t index, bool enable);
int tfe_send_rarp(struct tfe *, const uint8_t mac[6]);
int tfe_net_set_mtu(struct tfe *, uint64_t mtu);
int tfe_set_backend_req_fd(struct tfe *);
int tfe_get_max_mem_slots(struct tfe *, uint64_t *n);
int tfe_add_mem_reg(struct tfe *, const struct vhost_user_mem_region *,
                    int fd);
int tfe_add_mem_region(struct tfe *, size_t region);
int tfe_rem_mem_reg(struct tfe *, const struct vhost_user_mem_region *,
                    int fd);
int tfe_set_status(struct tfe *, uint64_t status);
int tfe_get_status(struct tfe *, uint64_t *status);
int tfe_get_config(struct tfe *, uint32_t offset, uint32_t size,
                   uint32_t payload_size, struct tfe_reply *);

/* vIOMMU: IOTLB_MSG updates and invalidations, the model's map of each
 * region (IOVA = GPA + 'iova_offset', 'perm' VHOST_ACCESS_*), and the
 * next IOTLB miss the engine sent on the backend channel (0, -EAGAIN
 * after 'timeout_ms', -EPROTO for anything else on the channel). */
int tfe_iotlb_msg(struct tfe *, uint8_t type, uint64_t iova, uint64_t size,
                  uint64_t uaddr, uint8_t perm);
int tfe_iotlb_map_mem(struct tfe *, uint8_t perm);
int tfe_iotlb_map(struct tfe *, uint64_t gpa, uint64_t size, uint8_t perm);
int tfe_iotlb_recv_miss(struct tfe *, uint64_t *iova, uint8_t *perm,
                        int timeout_ms);

/* Postcopy, as QEMU's destination speaks it: ADVISE (the reply's
 * userfaultfd in '*ufdp', the caller's to close), LISTEN and END (acked
 * with REPLY_ACK), and the memory table while listening: SET_MEM_TABLE
 * or, region by region, ADD_MEM_REG, each answered with where the backend
 * mapped the regions ('bases', by region) and then acknowledged by us
 * with the same request and a u64 of 0. */
int tfe_postcopy_advise(struct tfe *, int *ufdp);
int tfe_postcopy_listen(struct tfe *);
int tfe_postcopy_end(struct tfe *);
int tfe_postcopy_set_mem_table(struct tfe *, uint64_t *bases);
int tfe_postcopy_add_mem_reg(struct tfe *, size_t region, uint64_t *base);

/* Rings and bring-up. */
int tfe_vring_alloc(struct tfe *, uint32_t index, unsigned int size);
int tfe_vring_setup(struct tfe *, uint32_t index, unsigned int size);

struct tfe_setup {
    uint64_t features_mask;     /* Ack offered & mask (0: default mask). */
    uint64_t protocol_mask;     /* Ack offered & mask (0: all offered). */
    bool legacy;                /* Don't negotiate PROTOCOL_FEATURES. */
    unsigned int queue_size;    /* 0: 256. */
    unsigned int n_enabled_pairs; /* Pairs to enable (0: all). */
    bool log_used;              /* Every vring: VHOST_VRING_F_LOG. */
    uint64_t used_align;        /* Used ring alignment (0: 64), e.g. 4096
                                 * to give it pages of its own. */
    bool packed;                /* Also ack VIRTIO_F_RING_PACKED. */
};

/* Features a default tfe_setup_device() does not ack: the tests that want
 * the packed ring, dirty logging or IN_ORDER ask for them. */
#define TFE_DEFAULT_FEATURES_EXCLUDED                                   \
    (FEATURE_BIT(VIRTIO_F_RING_PACKED) | FEATURE_BIT(VHOST_F_LOG_ALL)    \
     | FEATURE_BIT(VIRTIO_F_ACCESS_PLATFORM) | FEATURE_BIT(VIRTIO_F_IN_ORDER))

int tfe_negotiate(struct tfe *, const struct tfe_setup *);
int tfe_setup_device(struct tfe *, unsigned int n_queue_pairs,
                     const struct tfe_setup *);

/* The guest driver of a split virtqueue (VIRTIO 1.2 §2.7)
 * =========================================================
 *
 * A struct tfe_vq drives one vring that tfe_vring_alloc() laid out: it
 * keeps the free descriptor list, builds descriptor chains (direct or
 * through an indirect table), makes them available, and reaps the used
 * ring.  Buffers come from an arena of guest memory that the vq owns (a
 * circular bump allocator: chains are expected back in about the order
 * they went out), or from wherever a test places them.
 *
 *     struct tfe_vq tx;
 *     tfe_vq_init(&tx, fe, 1, 1, 1 << 20);      (vring 1, arena in region 1)
 *     tfe_vq_post_tx(&tx, &hdr, sizeof hdr, pkt, len, NULL);
 *     ... vhost_dequeue_burst() ...
 *     tfe_vq_get_used(&tx, &elem);
 *
 * Hostile chains are built by hand: tfe_vq_take_desc() a few descriptors,
 * write anything at all through tfe_vq_desc(), tfe_vq_claim() the chain so
 * that its descriptors return to the free list when the engine hands the
 * head back, and tfe_vq_push_avail() any head, valid or not.
 *
 * The ring is little-endian; so is every host these tests run on. */

/* Ring layout (VIRTIO 1.2 §2.7.5, §2.7.6, §2.7.8). */
struct tfe_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};

#define TFE_DESC_F_NEXT 1
#define TFE_DESC_F_WRITE 2
#define TFE_DESC_F_INDIRECT 4
#define TFE_AVAIL_F_NO_INTERRUPT 1
#define TFE_USED_F_NO_NOTIFY 1

struct tfe_used_elem {
    uint32_t id;
    uint32_t len;
};

/* The virtio-net header (VIRTIO 1.2 §5.1.6): 12 bytes with VERSION_1 or
 * MRG_RXBUF, else the first 10. */
struct tfe_net_hdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;
    uint16_t gso_size;
    uint16_t csum_start;
    uint16_t csum_offset;
    uint16_t num_buffers;
};

#define TFE_NET_HDR_F_NEEDS_CSUM 1
#define TFE_NET_HDR_F_DATA_VALID 2

/* 'len' bytes at guest physical address 'gpa'. */
struct tfe_seg {
    uint64_t gpa;
    uint32_t len;
};

#define TFE_VQ_MAX_SEGS 64      /* Descriptors in one chain we build. */

/* What the driver remembers about a chain, by head (split) or buffer id
 * (packed). */
struct tfe_vq_chain {
    bool in_use;                /* Made available, not yet used. */
    uint16_t n_ids;             /* Ring descriptors it holds: split, these
                                 * 'ids'; packed, this many ring slots from
                                 * where it was made available. */
    uint16_t ids[TFE_VQ_MAX_SEGS];
    size_t n_segs;              /* Its buffers, in chain order. */
    struct tfe_seg segs[TFE_VQ_MAX_SEGS];
    uint64_t arena_bytes;       /* Arena bytes it holds. */
};

struct tfe_vq {
    struct tfe *fe;
    struct tfe_mem *mem;
    uint32_t index;             /* Vring index. */
    unsigned int size;          /* Queue size. */
    uint64_t iova_offset;       /* The frontend's, added to every buffer
                                 * and table address it writes. */

    /* The ring, as the frontend maps it. */
    struct tfe_desc *desc;
    uint16_t *avail_flags;
    uint16_t *avail_idx;
    uint16_t *avail_ring;       /* 'size' entries, then used_event. */
    uint16_t *used_flags;
    uint16_t *used_idx;
    struct tfe_used_elem *used_ring; /* 'size' entries, then avail_event. */

    /* Driver state. */
    uint16_t next_avail;        /* Our avail->idx. */
    uint16_t next_used;         /* Next used entry to read. */
    uint16_t *free_next;        /* Free list links, by descriptor. */
    unsigned int free_head;     /* 'size' when empty. */
    unsigned int n_free;
    struct tfe_vq_chain *chains; /* By head. */

    /* Buffer arena. */
    uint64_t arena_gpa;
    uint64_t arena_size;
    uint64_t arena_next;        /* Offset of the next allocation. */
    uint64_t arena_inflight;    /* Bytes held by chains in flight... */
    uint64_t arena_held;        /* ...of which charged to a chain. */

    /* From the negotiated features. */
    unsigned int hdr_len;       /* 10 or 12. */
    bool mrg;                   /* MRG_RXBUF: num_buffers is meaningful. */

    /* Packed ring (VIRTIO_F_RING_PACKED negotiated): see "The guest driver
     * of a packed virtqueue" below.  'next_avail' and 'next_used' are then
     * ring positions below 'size', each with its wrap counter; 'n_free'
     * counts free ring slots; 'chains' is indexed by buffer id. */
    bool packed;
    struct tfe_pdesc *pdesc;    /* The descriptor ring. */
    struct tfe_pevent *driver_event; /* Driver area: we write it. */
    struct tfe_pevent *device_event; /* Device area: the engine writes it. */
    bool avail_wrap;            /* Driver ring wrap counter. */
    bool used_wrap;             /* Wrap counter of 'next_used'. */
    unsigned int n_free_ids;    /* Buffer ids not in flight. */
    unsigned int id_cursor;     /* Where the search for a free id starts. */
    bool same_ids;              /* Write the buffer id into every
                                 * descriptor of a chain, not only the
                                 * last (which is all §2.8.6 asks for; the
                                 * others get TFE_PACKED_ID_POISON). */
    uint16_t last_used_flags;   /* Flags of the last used descriptor read. */
    size_t n_extra;             /* Chains claimed with an id >= 'size' or */
    struct tfe_vq_extra {       /* one already in flight. */
        uint16_t id;
        uint16_t n_slots;
        uint64_t arena_bytes;
    } extra[16];
    /* VIRTIO_F_IN_ORDER negotiated (§2.7.9, §2.8.8): the device uses
     * buffers in the order they were made available, and may return a
     * batch of them with one used element, that of the last one, where
     * the batch's first would go.  The driver keeps the order itself:
     * 'order' holds the heads (split) or buffer ids (packed) made
     * available and not yet used, oldest first ('order_head', 'order_n';
     * 'size' entries).  tfe_vq_get_used() hands out the chains of a
     * batch one at a time, oldest first, the ones before the last with
     * length 0; 'batch_left' of the current batch are still to come.
     * 'last_batch' is how many chains the last used element that was
     * read stood for (1 when the device wrote one per chain), and
     * 'n_unordered' counts used elements whose id was none the driver
     * had in flight (out of order or unknown). */
    bool in_order;
    uint16_t *order;
    unsigned int order_head;
    unsigned int order_n;
    unsigned int batch_left;
    uint32_t batch_len;
    unsigned int last_batch;
    unsigned int n_unordered;
};

int tfe_vq_init(struct tfe_vq *, struct tfe *, uint32_t index,
                size_t arena_region, uint64_t arena_size);
void tfe_vq_destroy(struct tfe_vq *);
void tfe_vq_reset(struct tfe_vq *);
uint64_t tfe_vq_alloc(struct tfe_vq *, uint64_t size, uint64_t align);

/* Building chains. */
struct tfe_chain_opts {
    bool indirect;              /* Through an indirect table. */
    uint64_t indirect_gpa;      /* Put the table there (0: in the arena). */
};

int tfe_vq_add_chain(struct tfe_vq *, const struct tfe_seg *, size_t n,
                     bool writable, const struct tfe_chain_opts *);

/* Packets. */
struct tfe_buf_opts {
    bool indirect;              /* Through an indirect table... */
    uint64_t indirect_gpa;      /* ...put there (0: in the arena). */
    unsigned int n_descs;       /* Split over this many (0: 1)... */
    const uint32_t *split;      /* ...of these lengths (the last one takes
                                 * what is left), or evenly. */
    uint64_t gpa;               /* All bytes contiguous from here (0: each
                                 * piece apart, in the arena). */
};

int tfe_vq_post_tx(struct tfe_vq *, const void *hdr, size_t hdr_len,
                   const void *pkt, size_t len, const struct tfe_buf_opts *);
int tfe_vq_post_rx(struct tfe_vq *, uint32_t len,
                   const struct tfe_buf_opts *);

/* The used ring. */
unsigned int tfe_vq_n_used(const struct tfe_vq *);
int tfe_vq_get_used(struct tfe_vq *, struct tfe_used_elem *);
size_t tfe_vq_read_chain(const struct tfe_vq *, uint16_t head, size_t len,
                         uint8_t *buf);
int tfe_vq_recv(struct tfe_vq *, uint8_t *buf, size_t size, size_t *lenp,
                unsigned int *n_bufsp);

/* Raw access, for hostile chains and event fields. */
struct tfe_desc *tfe_vq_desc(struct tfe_vq *, unsigned int i);
int tfe_vq_take_desc(struct tfe_vq *);
void tfe_vq_claim(struct tfe_vq *, uint16_t head, const uint16_t *ids,
                  size_t n);
void tfe_vq_push_avail(struct tfe_vq *, uint16_t head);
void tfe_vq_set_avail_idx(struct tfe_vq *, uint16_t idx);
void tfe_vq_set_avail_flags(struct tfe_vq *, uint16_t flags);
void tfe_vq_set_used_event(struct tfe_vq *, uint16_t);
uint16_t tfe_vq_used_flags(const struct tfe_vq *);
uint16_t tfe_vq_avail_event(const struct tfe_vq *);
uint16_t tfe_vq_used_idx(const struct tfe_vq *);
uint64_t tfe_vq_used_gpa(const struct tfe_vq *);
uint64_t tfe_vq_calls(const struct tfe_vq *);
int tfe_vq_peek_used(const struct tfe_vq *, struct tfe_used_elem *);

/* The guest driver of a packed virtqueue (VIRTIO 1.2 §2.8)
 * ========================================================
 *
 * When VIRTIO_F_RING_PACKED was negotiated, tfe_vq_init() makes the vq
 * drive the vring as a packed ring: the descriptor table becomes the ring
 * of struct tfe_pdesc, the avail and used parts that tfe_vring_alloc()
 * laid out become the driver and device event suppression areas.  The
 * API above works the same way: tfe_vq_add_chain(), tfe_vq_post_tx() and
 * tfe_vq_post_rx() write a chain's descriptors at the driver's position,
 * the head's flags last with a release store (§2.8.21); chains straddle
 * the end of the ring, their descriptors past it marked with the flipped
 * wrap counter; a chain is known by its buffer id (an id not in flight,
 * picked so that ids do not follow ring positions), written into its last
 * descriptor.  tfe_vq_get_used() reads used descriptors in order and
 * frees as many ring slots as the chain with that id took.  A used
 * element's 'id' is the buffer id.
 *
 * Hostile chains are written by hand: tfe_vq_pdesc() the slot 'k' places
 * past the driver's position, tfe_vq_pwrite() anything at all there (with
 * tfe_vq_pavail() for the flag bits that make that slot available), then
 * tfe_vq_pclaim() the chain: it records the buffer id and the number of
 * ring slots the device is expected to consume, and moves the driver's
 * position past them. */

/* Ring layout (§2.8.13, §2.8.14). */
struct tfe_pdesc {
    uint64_t addr;
    uint32_t len;
    uint16_t id;
    uint16_t flags;
};

struct tfe_pevent {
    uint16_t off_wrap;          /* Position in bits 0..14, wrap in 15. */
    uint16_t flags;             /* TFE_PEVENT_*. */
};

#define TFE_PDESC_F_AVAIL (1u << 7)
#define TFE_PDESC_F_USED (1u << 15)
#define TFE_PEVENT_ENABLE 0
#define TFE_PEVENT_DISABLE 1
#define TFE_PEVENT_DESC 2

/* SET_VRING_BASE of a fresh packed ring: position 0, wrap counter 1, as
 * DPDK's virtio-user sends it (the avail half only); GET_VRING_BASE gives
 * both halves, as QEMU sends them. */
#define TFE_PACKED_BASE_INIT 0x8000u
#define TFE_PACKED_BASE_INIT2 0x80008000u
#define TFE_PACKED_ID_POISON 0xffffu

struct tfe_pdesc *tfe_vq_pdesc(struct tfe_vq *, unsigned int k);
uint16_t tfe_vq_pavail(const struct tfe_vq *, unsigned int k);
void tfe_vq_pwrite(struct tfe_vq *, unsigned int k, uint64_t addr,
                   uint32_t len, uint16_t id, uint16_t flags);
void tfe_vq_pclaim(struct tfe_vq *, uint16_t id, unsigned int n_slots);
void tfe_vq_pset_position(struct tfe_vq *, uint32_t base);
uint32_t tfe_vq_pbase(const struct tfe_vq *);
void tfe_vq_pset_event(struct tfe_vq *, uint16_t flags, uint16_t off_wrap);
uint16_t tfe_vq_pdevice_flags(const struct tfe_vq *);
uint64_t tfe_vq_ring_gpa(const struct tfe_vq *);

#endif /* test-frontend.h */
