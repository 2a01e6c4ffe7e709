/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-net device behind a vhost-user port: negotiated features, the
 * guest memory table, the queues, the dirty log and device attributes, and
 * the readiness that the embedder sees through callbacks.
 *
 * Usage
 * =====
 *
 * vhost-port.c owns one device per port and resets it when a frontend
 * goes away.  The message handlers in vhost-user.c change it through the
 * functions here, which keep the data path safe: a new memory table, new
 * ring addresses or a stopped queue are applied with the queues' access
 * locks held, and old mappings are released only after that.  After each
 * message the handlers call vhost_dev_update_ready(), which compares what
 * the device can do now with what the embedder was last told and fires
 * device_ready, queue_state and device_gone accordingly.
 *
 * Thread-safety
 * =============
 *
 * Everything here runs on the engine loop's thread under the engine mutex.
 * The data path reads 'mem' and the queues under a queue's access lock.
 *
 * Trust model
 * ===========
 *
 * The frontend controls every value stored here; the handlers check them
 * first.  It also controls the size of the fds behind guest memory and the
 * dirty log: a shrunk one breaks the device (vhost_dev_check_guard()).  A queue index is used to index 'vqs' only after
 * vhost_dev_get_vq() has bounded it by the queues offered.
 */

#ifndef OVS_VHOST_VHOST_DEV_H
#define OVS_VHOST_VHOST_DEV_H 1

#include <stdbool.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include <pthread.h>
#include "guest-mem-guard.h"
#include "vhost-iotlb.h"
#include "vhost-log.h"
#include "vhost-postcopy.h"

struct guest_mem;
struct virtq;
struct virtq_poslog;

struct vhost_dev {
    /* Set at creation, constant. */
    const char *name;               /* The port's name, for logs. */
    struct vhost_port *port;        /* For callbacks. */
    const struct vhost_port_callbacks *cb;
    void *aux;
    uint64_t offered_features;
    uint64_t offered_protocol_features;
    unsigned int max_queue_pairs;

    /* Negotiated, reset with the connection. */
    uint64_t features;
    uint64_t protocol_features;
    bool owned;                     /* SET_OWNER. */

    /* Guest memory: replaced only through vhost_dev_set_mem(). */
    struct guest_mem *mem;

    /* Owner of the guarded mappings of 'mem' and the dirty log: the SIGBUS
     * handler flags it, the data path stops on the flag, and the engine
     * loop disconnects the frontend (vhost_dev_check_guard()).  Next to
     * 'mem', which the data path reads with it. */
    struct guest_mem_guard_owner guard;

    /* Queues, allocated as the frontend first names them. */
    struct virtq *vqs[VHOST_MAX_QUEUES];
    unsigned int n_vqs;             /* 1 + highest index allocated. */

    /* Device attributes. */
    uint16_t config_mtu;            /* The embedder's, for GET_CONFIG. */
    uint16_t mtu;
    bool has_rarp;                  /* SEND_RARP gave 'rarp_mac'; kept
                                     * across reconnects. */
    uint8_t rarp_mac[6];
    bool rarp_pending;              /* Data path: inject a RARP for
                                     * 'rarp_mac' (atomic). */
    uint8_t status;

    /* Dirty log (SET_LOG_BASE) and its eventfd (SET_LOG_FD), both replaced
     * only with every queue's access lock held: bursts use them. */
    void *log_map;                  /* mmap()ed region, or NULL. */
    size_t log_map_len;
    uint8_t *log_base;              /* Start of the bitmap in 'log_map'. */
    uint64_t log_size;
    int log_call_fd;

    /* Backend request channel (SET_BACKEND_REQ_FD): IOTLB misses go to
     * the frontend over it, from the engine loop (ring addresses) and
     * from the data path (buffers).  'backend_mutex' guards the fd and
     * every message written to it; the data path only tries it. */
    int backend_req_fd;
    pthread_mutex_t backend_mutex;

    /* The IOTLB (VIRTIO_F_IOMMU_PLATFORM; vhost-iotlb.h): replaced by a
     * changed copy at each IOTLB message, queue by queue
     * (vhost_dev_iotlb_msg()), never changed in place while a queue may
     * read it. */
    struct vhost_iotlb *iotlb;

    /* Postcopy live migration (vhost-postcopy.h): the userfaultfd from
     * POSTCOPY_ADVISE (or -1) and where the steps stand. */
    int postcopy_ufd;
    enum vhost_postcopy_state postcopy_state;

    /* What the embedder was last told. */
    bool ready;
    bool vq_reported[VHOST_MAX_QUEUES];

    /* Peer-caused messages for this device. */
    struct vhost_ratelimit rl;

    /* Packed ring position log (virtq-poslog.h), NULL without one: open
     * for the port's lifetime. */
    struct virtq_poslog *poslog;

    /* Lifetime counters, kept across connections. */
    struct vhost_port_counters counters;
};

void vhost_dev_init(struct vhost_dev *, struct vhost_port *,
                    const struct vhost_port_options *);
void vhost_dev_reset(struct vhost_dev *);
void vhost_dev_destroy(struct vhost_dev *);
void vhost_dev_release_poslog(struct vhost_dev *);
void vhost_dev_close_poslog(struct vhost_dev *);

bool vhost_dev_has_feature(const struct vhost_dev *, unsigned int bit);
bool vhost_dev_has_protocol_feature(const struct vhost_dev *,
                                    unsigned int bit);

struct virtq *vhost_dev_get_vq(struct vhost_dev *, uint32_t index);
void vhost_dev_set_features(struct vhost_dev *, uint64_t features);
void vhost_dev_set_mem(struct vhost_dev *, struct guest_mem *);
void vhost_dev_lock_queues(struct vhost_dev *);
void vhost_dev_unlock_queues(struct vhost_dev *);
bool vhost_dev_any_started(const struct vhost_dev *);
int vhost_dev_held_queue(struct vhost_dev *, unsigned int max_us);
void vhost_dev_update_ready(struct vhost_dev *);
void vhost_dev_set_log(struct vhost_dev *, void *map, size_t map_len,
                       uint8_t *base, uint64_t size);
void vhost_dev_set_log_call_fd(struct vhost_dev *, int fd);
void vhost_dev_set_backend_req_fd(struct vhost_dev *, int fd);
int vhost_dev_iotlb_msg(struct vhost_dev *, const struct vhost_iotlb_msg *);
int vhost_dev_send_iotlb_miss(struct vhost_dev *, uint64_t iova,
                              uint8_t perm, bool wait);

bool vhost_dev_check_guard(struct vhost_dev *);

void vhost_dev_get_info(const struct vhost_dev *, struct vhost_port_info *);

#define VHOST_DEV_LOG_RL(DEV, LEVEL, ...) \
    vhost_log_rl(&(DEV)->rl, LEVEL, __VA_ARGS__)

#endif /* vhost-dev.h */
