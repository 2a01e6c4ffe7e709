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

/* Split virtqueue, as the driver lays it out (VIRTIO 1.2 §2.7). */
struct tfe_vring {
    unsigned int size;          /* 0 if not allocated. */
    void *desc;                 /* Frontend addresses of the three parts. */
    void *avail;
    void *used;
    int kick_fd;                /* eventfds we keep, -1 if none. */
    int call_fd;
    int err_fd;
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

    int log_fd;                 /* tfe_log_create() memfd, or -1. */
    uint64_t log_size;
    int log_call_fd;            /* SET_LOG_FD eventfd we keep, or -1. */
    int backend_req_fd;         /* Our end of the backend channel, or -1. */
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

/* Rings and bring-up. */
int tfe_vring_alloc(struct tfe *, uint32_t index, unsigned int size);
int tfe_vring_setup(struct tfe *, uint32_t index, unsigned int size);

struct tfe_setup {
    uint64_t features_mask;     /* Ack offered & mask (0: default mask). */
    uint64_t protocol_mask;     /* Ack offered & mask (0: all offered). */
    bool legacy;                /* Don't negotiate PROTOCOL_FEATURES. */
    unsigned int queue_size;    /* 0: 256. */
    unsigned int n_enabled_pairs; /* Pairs to enable (0: all). */
};

/* Features a default tfe_setup_device() does not ack. */
#define TFE_DEFAULT_FEATURES_EXCLUDED                                   \
    (FEATURE_BIT(VIRTIO_F_RING_PACKED) | FEATURE_BIT(VHOST_F_LOG_ALL)    \
     | FEATURE_BIT(VIRTIO_F_ACCESS_PLATFORM))

int tfe_negotiate(struct tfe *, const struct tfe_setup *);
int tfe_setup_device(struct tfe *, unsigned int n_queue_pairs,
                     const struct tfe_setup *);

#endif /* test-frontend.h */
