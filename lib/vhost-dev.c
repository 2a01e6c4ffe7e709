/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device behind a vhost-user port: see vhost-dev.h.
 */

#include <config.h>
#include "vhost-dev.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "guest-mem.h"
#include "util.h"
#include "vhost-user-msg.h"
#include "virtio.h"
#include "virtq-iommu.h"
#include "virtq-poslog.h"
#include "virtq.h"

void
vhost_dev_init(struct vhost_dev *dev, struct vhost_port *port,
               const struct vhost_port_options *opts)
{
    memset(dev, 0, sizeof *dev);
    dev->name = opts->name;
    dev->port = port;
    dev->cb = opts->cb;
    dev->aux = opts->aux;
    dev->offered_features = opts->features
                            | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
    dev->offered_protocol_features = opts->protocol_features
                                     & vhost_supported_protocol_features();
    dev->max_queue_pairs = opts->max_queue_pairs;
    dev->log_call_fd = -1;
    dev->backend_req_fd = -1;
    pthread_mutex_init(&dev->backend_mutex, NULL);
    dev->postcopy_ufd = -1;
    dev->iotlb = malloc(sizeof *dev->iotlb);
    if (!dev->iotlb) {
        abort();
    }
    vhost_iotlb_init(dev->iotlb, VHOST_IOTLB_MAX_ENTRIES);
    guest_mem_guard_owner_init(&dev->guard, -1);
    dev->rl = (struct vhost_ratelimit) VHOST_RATELIMIT_INIT(60, 20);
    if (opts->state_path) {
        int error = virtq_poslog_open(opts->state_path, dev->name,
                                      &dev->poslog);
        if (error) {
            VLOG_WARN("%s: cannot open the ring position log %s (%s): "
                      "packed rings will not survive a restart of this "
                      "process", dev->name, opts->state_path,
                      strerror(error));
        }
    }
}

bool
vhost_dev_has_feature(const struct vhost_dev *dev, unsigned int bit)
{
    return (dev->features & FEATURE_BIT(bit)) != 0;
}

bool
vhost_dev_has_protocol_feature(const struct vhost_dev *dev, unsigned int bit)
{
    return (dev->protocol_features & FEATURE_BIT(bit)) != 0;
}

/* Returns queue 'index' of 'dev', allocating it the first time, or NULL if
 * 'index' is beyond the queues this port offers.  'index' is the full
 * 32-bit value the frontend sent: it is bounded before any truncation
 * (CVE-2020-10723 truncated first). */
struct virtq *
vhost_dev_get_vq(struct vhost_dev *dev, uint32_t index)
{
    if (index >= 2 * dev->max_queue_pairs) {
        return NULL;
    }
    if (!dev->vqs[index]) {
        struct virtq *vq = malloc(sizeof *vq);
        if (!vq) {
            return NULL;
        }
        virtq_init(vq, index);
        if (dev->name) {
            vq->name = dev->name;
        }
        vq->poslog_slot = virtq_poslog_slot(dev->poslog, index);
        virtq_configure(vq, dev->features, dev->mem, dev->iotlb);
        /* Published for the data path, which reads 'vqs' without a lock. */
        __atomic_store_n(&dev->vqs[index], vq, __ATOMIC_RELEASE);
    }
    if (index >= dev->n_vqs) {
        dev->n_vqs = index + 1;
    }
    return dev->vqs[index];
}

/* Sets 'dev''s negotiated features to 'features' and reconfigures every
 * queue's data path for them, under the queues' access locks: a queue
 * whose ring layout changes is translated again for the new layout in the
 * same critical section, and stops if it no longer fits
 * (virtq_configure()). */
void
vhost_dev_set_features(struct vhost_dev *dev, uint64_t features)
{
    vhost_dev_lock_queues(dev);
    dev->features = features;
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        if (dev->vqs[i]) {
            virtq_configure(dev->vqs[i], features, dev->mem, dev->iotlb);
        }
    }
    vhost_dev_unlock_queues(dev);
}

/* Returns true if any of 'dev''s queues is started (virtq_started()). */
bool
vhost_dev_any_started(const struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < dev->n_vqs; i++) {
        if (dev->vqs[i] && virtq_started(dev->vqs[i])) {
            return true;
        }
    }
    return false;
}

/* Returns the index of one of 'dev''s queues whose access lock the data
 * path has held for 'max_us' microseconds (virtq_lock_bounded()), or -1 if
 * none.  A message handler takes queue locks and spins for them; the
 * engine asks this first, so that a PMD thread blocked in a fault (which
 * holds its queue's lock until the frontend serves the page) holds back
 * that device's messages rather than the loop that serves every port. */
int
vhost_dev_held_queue(struct vhost_dev *dev, unsigned int max_us)
{
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        struct virtq *vq = dev->vqs[i];

        if (vq) {
            if (!virtq_lock_bounded(vq, max_us)) {
                return i;
            }
            virtq_unlock(vq);
        }
    }
    return -1;
}

/* Takes every allocated queue's access lock, in index order (the only lock
 * order: the data path holds one queue lock at a time). */
void
vhost_dev_lock_queues(struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        if (dev->vqs[i]) {
            virtq_lock(dev->vqs[i]);
        }
    }
}

void
vhost_dev_unlock_queues(struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        if (dev->vqs[i]) {
            virtq_unlock(dev->vqs[i]);
        }
    }
}

/* Installs 'mem' (which may be NULL) as 'dev''s guest memory table and
 * frees the old one.  Every queue is remapped through the new table while
 * all access locks are held, so no burst can run on old ring addresses or
 * old mappings; a queue whose ring no longer translates stops.  The old
 * table is unmapped only after the locks are released, when no data path
 * can hold a pointer into it.  Guarded regions (fds that can shrink)
 * become 'dev''s before any burst can touch them. */
void
vhost_dev_set_mem(struct vhost_dev *dev, struct guest_mem *mem)
{
    struct guest_mem *old = dev->mem;

    for (unsigned int i = 0; mem && i < mem->n_regions; i++) {
        if (guest_mem_guard_set_owner(mem->regions[i].hva, &dev->guard)) {
            dev->counters.guarded_fds++;
        }
    }
    vhost_dev_lock_queues(dev);
    dev->mem = mem;
    for (unsigned int i = 0; i < dev->n_vqs; i++) {
        struct virtq *vq = dev->vqs[i];

        if (vq) {
            virtq_map(vq, mem);
            vq->ready = vq->ready && virtq_can_run(vq);
        }
    }
    vhost_dev_unlock_queues(dev);

    guest_mem_destroy(old);
    vhost_dev_update_ready(dev);
}

/* virtq_can_run() for the readiness checks below, which run outside the
 * queue's access lock: a packed ring's positions, which it reads, are the
 * data path's to write while the queue runs (ThreadSanitizer saw the
 * race). */
static void vhost_dev_ask_rings__(struct vhost_dev *);

static bool
vhost_dev_vq_can_run__(struct virtq *vq)
{
    virtq_lock(vq);
    bool run = virtq_can_run(vq);
    virtq_unlock(vq);
    return run;
}

/* Pair 0 (the guest's first RX and TX rings) is what makes a device
 * usable at all. */
static bool
vhost_dev_pair0_can_run__(const struct vhost_dev *dev)
{
    /* Queues are allocated as the frontend names them, in any order. */
    return dev->vqs[0] && dev->vqs[1]
           && vhost_dev_vq_can_run__(dev->vqs[0])
           && vhost_dev_vq_can_run__(dev->vqs[1]);
}

static bool
vhost_dev_all_enabled_can_run__(const struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < dev->n_vqs; i++) {
        struct virtq *vq = dev->vqs[i];

        if (vq && vq->enabled && !vhost_dev_vq_can_run__(vq)) {
            return false;
        }
    }
    return true;
}

static void
vhost_dev_set_vq_ready__(struct virtq *vq, bool ready)
{
    if (vq->ready != ready) {
        virtq_lock(vq);
        vq->ready = ready;
        /* The ring may be new: write kick suppression again. */
        vq->avail_event_set = false;
        if (ready) {
            /* Set up again by the frontend (a guest driver reset stops
             * and restarts its rings): a broken ring gets a new start. */
            vq->broken = false;
            vq->stats.broken = false;
        }
        virtq_unlock(vq);
    }
}

/* Stops every queue and tells the embedder the device is gone, if it was
 * ready. */
static void
vhost_dev_gone__(struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < dev->n_vqs; i++) {
        if (dev->vqs[i]) {
            vhost_dev_set_vq_ready__(dev->vqs[i], false);
        }
        dev->vq_reported[i] = false;
    }
    if (dev->ready) {
        dev->ready = false;
        VLOG_INFO("%s: device is no longer ready", dev->name);
        if (dev->cb && dev->cb->device_gone) {
            dev->cb->device_gone(dev->port, dev->aux);
        }
    }
}

/* Compares what 'dev' can do now with what the embedder was last told,
 * and tells it the difference:
 *
 *   - Not ready -> ready when pair 0 and every enabled queue can run
 *     (enabled, sized, addressed, mapped, kicked).  device_ready is then
 *     followed by queue_state(qid, true) for each queue that can run.
 *
 *   - Ready -> gone when pair 0 can no longer run.
 *
 *   - While ready, queue_state() for each queue whose usability changed.
 *     A queue enabled but not yet set up does not take the device down:
 *     frontends enable before they kick.
 */
void
vhost_dev_update_ready(struct vhost_dev *dev)
{
    vhost_dev_ask_rings__(dev);
    if (!dev->ready) {
        if (!vhost_dev_pair0_can_run__(dev)
            || !vhost_dev_all_enabled_can_run__(dev)) {
            return;
        }
        dev->ready = true;
        /* Queues are usable before the embedder hears of the device, so
         * that it finds them ready when it looks from its callback. */
        for (unsigned int i = 0; i < dev->n_vqs; i++) {
            if (dev->vqs[i]) {
                vhost_dev_set_vq_ready__(dev->vqs[i],
                                         vhost_dev_vq_can_run__(dev->vqs[i]));
            }
        }
        VLOG_INFO("%s: device is ready with %u queues, features %#"PRIx64,
                  dev->name, dev->n_vqs, dev->features);
        if (dev->has_rarp) {
            /* Back after a reconnect: announce the guest's MAC again. */
            __atomic_store_n(&dev->rarp_pending, true, __ATOMIC_RELEASE);
        }
        if (dev->cb && dev->cb->device_ready) {
            dev->cb->device_ready(dev->port, dev->aux);
        }
    } else if (!vhost_dev_pair0_can_run__(dev)) {
        vhost_dev_gone__(dev);
        return;
    }

    for (unsigned int i = 0; i < dev->n_vqs && dev->ready; i++) {
        struct virtq *vq = dev->vqs[i];
        bool run = vq && vhost_dev_vq_can_run__(vq);

        if (vq) {
            vhost_dev_set_vq_ready__(vq, run);
        }
        if (run != dev->vq_reported[i]) {
            dev->vq_reported[i] = run;
            VLOG_INFO("%s: queue %u %s", dev->name, i,
                      run ? "enabled" : "disabled");
            if (dev->cb && dev->cb->queue_state) {
                dev->cb->queue_state(dev->port, i, run, dev->aux);
            }
        }
    }
}

/* IOTLB (VIRTIO_F_IOMMU_PLATFORM). */

/* Replaces 'dev''s backend request channel with 'fd' (or -1), closing the
 * old one, under 'backend_mutex': the data path may be writing a miss. */
void
vhost_dev_set_backend_req_fd(struct vhost_dev *dev, int fd)
{
    pthread_mutex_lock(&dev->backend_mutex);
    close_fd_quietly(dev->backend_req_fd);
    dev->backend_req_fd = fd;
    pthread_mutex_unlock(&dev->backend_mutex);
}

/* Asks the frontend for the translation of I/O virtual address 'iova' for
 * access 'perm' (VHOST_ACCESS_*): an IOTLB_MSG of type MISS on the backend
 * channel (vhost-user.rst, "Back-end message types"), with no reply
 * wanted.  The data path calls it with 'wait' false, and then does not
 * wait for the channel if the engine loop is writing to it.  Returns 0,
 * ENOTCONN without a channel, EBUSY, or the errno of the write, which
 * never blocks: a frontend that does not read its channel gets no more
 * misses until it does. */
int
vhost_dev_send_iotlb_miss(struct vhost_dev *dev, uint64_t iova, uint8_t perm,
                          bool wait)
{
    struct {
        struct vhost_user_hdr hdr;
        struct vhost_iotlb_msg iotlb;
    } __attribute__((packed)) m;
    int error = 0;

    memset(&m, 0, sizeof m);
    m.hdr.request = VHOST_USER_BACKEND_IOTLB_MSG;
    m.hdr.flags = VHOST_USER_VERSION;
    m.hdr.size = sizeof m.iotlb;
    m.iotlb.iova = iova;
    m.iotlb.perm = perm;
    m.iotlb.type = VHOST_IOTLB_MISS;

    if (wait) {
        pthread_mutex_lock(&dev->backend_mutex);
    } else if (pthread_mutex_trylock(&dev->backend_mutex)) {
        return EBUSY;
    }
    if (dev->backend_req_fd < 0) {
        error = ENOTCONN;
    } else if (send(dev->backend_req_fd, &m, sizeof m,
                    MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t) sizeof m) {
        error = errno ? errno : EIO;
    }
    pthread_mutex_unlock(&dev->backend_mutex);

    if (error && error != EBUSY && wait) {
        /* The engine loop's; the data path logs its own (the device's
         * rate limit is the engine loop's to update). */
        VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: cannot send an IOTLB "
                         "miss for IOVA %#"PRIx64" to the frontend (%s)",
                         dev->name, iova, error == ENOTCONN
                         ? "no backend channel: SET_BACKEND_REQ_FD"
                         : strerror(error));
    }
    return error;
}

/* Sends a miss for each ring that waits for a translation and has not
 * asked for that translation yet (virtq_map()), or could not: without a
 * backend channel it waits for SET_BACKEND_REQ_FD.  The engine loop, after
 * each message: a ring misses when its addresses come, when
 * the memory table or the features change, or after an invalidation. */
static void
vhost_dev_ask_rings__(struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES && dev->backend_req_fd >= 0;
         i++) {
        struct virtq *vq = dev->vqs[i];

        if (!vq) {
            continue;
        }
        /* Under the lock: the data path translates a ring that lost its
         * translation again, and writes these fields (virtq_map()). */
        virtq_lock(vq);
        uint64_t iova = vq->ring_miss_iova;
        uint8_t perm = vq->ring_miss_perm;
        /* A part of a ring asked for ahead, after an invalidation took
         * the whole ring (virtq_iommu_look_ahead()): its answer is on its
         * way. */
        bool ask = vq->ring_miss && !vq->ring_miss_asked
                   && !virtq_iommu_asked_ahead(vq, iova, perm,
                                               vhost_time_msec());
        virtq_unlock(vq);

        if (ask && !vhost_dev_send_iotlb_miss(dev, iova, perm, true)) {
            dev->counters.iotlb_ring_misses++;
            virtq_lock(vq);
            if (vq->ring_miss && vq->ring_miss_iova == iova) {
                vq->ring_miss_asked = true;
            }
            /* So that the bursts of a ring that lost its translation do
             * not ask for it again (virtq_iommu_should_ask()). */
            virtq_iommu_note_asked(vq, iova, perm, vhost_time_msec());
            virtq_unlock(vq);
        }
    }
}

/* Carries out IOTLB_MSG 'msg' from the frontend (vhost-iotlb.h) on a copy
 * of the IOTLB, which each queue then takes under its own lock, one queue
 * at a time: bursts on other queues go on meanwhile, and a burst toward
 * the guest that waits for a lock waits for one queue's few stores, not
 * for the whole message.  The old table is freed once every queue has the
 * new one, so no burst runs on a translation the message removed.  Each
 * ring is translated again as it takes the new table (an update may
 * replace or evict the entry a running ring used); a ring that lost its
 * translation stays ready, its bursts doing nothing until an update brings
 * it back (virtq-iommu.h).  An update that answers a queue's miss lets its
 * bursts go on.  Returns 0, or EINVAL (or ENOMEM) with the IOTLB unchanged
 * for a message the "Trust model" of vhost-iotlb.h refuses. */
int
vhost_dev_iotlb_msg(struct vhost_dev *dev, const struct vhost_iotlb_msg *msg)
{
    struct vhost_iotlb *old = dev->iotlb;
    struct vhost_iotlb *new = malloc(sizeof *new);

    if (!new || vhost_iotlb_clone(new, old)) {
        free(new);
        return ENOMEM;
    }
    int error = vhost_iotlb_apply(new, msg);
    if (error) {
        old->n_rejected = new->n_rejected;
        vhost_iotlb_destroy(new);
        free(new);
        return error;
    }

    dev->iotlb = new;
    /* Every queue allocated, not only the first 'n_vqs': a reset leaves
     * queues allocated (and a later SET_FEATURES configures them all),
     * and none may keep the table freed below. */
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        struct virtq *vq = dev->vqs[i];

        if (!vq) {
            continue;
        }
        virtq_lock(vq);
        if (vq->iotlb) {
            __atomic_store_n(&vq->iotlb, new, __ATOMIC_RELAXED);
            if (msg->type == VHOST_IOTLB_UPDATE) {
                virtq_iommu_answered(vq, msg);
            }
            virtq_iommu_remap(vq, dev->mem);
            vq->ready = vq->ready && virtq_can_run(vq);
        }
        virtq_unlock(vq);
    }
    /* Queues not allocated yet, or not behind the IOMMU, take the table
     * when the features say so (virtq_configure()). */
    vhost_iotlb_destroy(old);
    free(old);
    return 0;
}

/* Replaces 'dev''s dirty log with 'map' (of 'map_len' bytes, from
 * guest_mem_map_fd(), or NULL), whose bitmap of 'size' bytes starts at
 * 'base'.  The old log is unmapped after the swap, under the queues' access
 * locks: the data path writes the log during a burst.  A guarded log
 * becomes 'dev''s before any burst can write it. */
void
vhost_dev_set_log(struct vhost_dev *dev, void *map, size_t map_len,
                  uint8_t *base, uint64_t size)
{
    void *old_map = dev->log_map;
    size_t old_len = dev->log_map_len;

    if (map && guest_mem_guard_set_owner(map, &dev->guard)) {
        dev->counters.guarded_fds++;
    }
    vhost_dev_lock_queues(dev);
    dev->log_map = map;
    dev->log_map_len = map_len;
    dev->log_base = base;
    dev->log_size = size;
    vhost_dev_unlock_queues(dev);

    if (old_map) {
        guest_mem_unmap(old_map, old_len);
    }
}

/* Replaces 'dev''s log call eventfd (SET_LOG_FD) with 'fd', or with none
 * if 'fd' is -1.  A burst that dirtied the log write()s to this fd before
 * it lets go of its queue's access lock (vhost-datapath.c), so the swap is
 * made with every queue lock held, and the old fd is closed after it: no
 * burst can then still hold the old number, which the kernel may give to
 * the next file opened. */
void
vhost_dev_set_log_call_fd(struct vhost_dev *dev, int fd)
{
    int old = dev->log_call_fd;

    vhost_dev_lock_queues(dev);
    dev->log_call_fd = fd;
    vhost_dev_unlock_queues(dev);
    close_fd_quietly(old);
}

/* Called from the engine loop when a guarded fault may have happened.  If
 * one hit 'dev''s guest memory or dirty log (the frontend shrank an fd it
 * shared after we mapped it, and the SIGBUS handler put a zero page over
 * the page it lost), counts the faults, logs which region, and returns
 * true: the device is broken, its queues already stopped (the data path
 * tests the flag), and the caller must end the connection as after any
 * fatal frontend error.  Returns false otherwise. */
bool
vhost_dev_check_guard(struct vhost_dev *dev)
{
    if (!guest_mem_guard_faulted(&dev->guard)) {
        return false;
    }
    dev->counters.guarded_faults
        += guest_mem_guard_owner_collect(&dev->guard);

    for (unsigned int i = 0; dev->mem && i < dev->mem->n_regions; i++) {
        const struct guest_mem_region *r = &dev->mem->regions[i];
        uintptr_t first;
        unsigned int n = guest_mem_guard_query(r->hva, &first);

        if (n) {
            VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: memory region %u "
                             "(guest %#"PRIx64", size %#"PRIx64"): the "
                             "frontend shrank its fd; %u access(es) from "
                             "guest %#"PRIx64" on hit a zero page instead of "
                             "SIGBUS; device broken, disconnecting",
                             dev->name, i, r->gpa, r->size, n,
                             r->gpa + (first - (uintptr_t) r->hva));
        }
    }
    if (dev->log_map) {
        uintptr_t first;
        unsigned int n = guest_mem_guard_query(dev->log_map, &first);

        if (n) {
            VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: dirty log (%#"PRIx64
                             " bytes): the frontend shrank its fd; %u "
                             "access(es) from log byte %#"PRIx64" on hit a "
                             "zero page instead of SIGBUS; device broken, "
                             "disconnecting", dev->name, dev->log_size, n,
                             (uint64_t) (first - (uintptr_t) dev->log_base));
        }
    }
    return true;
}

/* Returns 'dev' to the state of a device no frontend has talked to: the
 * embedder is told the device is gone (if it was ready), every queue is
 * stopped and reset, guest memory and the dirty log are unmapped and every
 * fd is closed.  Used on disconnect and RESET_OWNER. */
void
vhost_dev_reset(struct vhost_dev *dev)
{
    /* First, before any queue lock: a PMD thread may hold one while it
     * waits in a postcopy fault that a frontend gone will never serve;
     * closing our userfaultfd (the frontend's copy went with it) wakes
     * it. */
    vhost_postcopy_reset(dev);
    vhost_dev_gone__(dev);

    vhost_dev_lock_queues(dev);
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        if (dev->vqs[i]) {
            virtq_reset(dev->vqs[i]);
        }
    }
    vhost_dev_unlock_queues(dev);
    dev->n_vqs = 0;

    vhost_dev_set_features(dev, 0);
    vhost_dev_set_mem(dev, NULL);
    vhost_dev_set_log(dev, NULL, 0, NULL, 0);
    vhost_dev_set_log_call_fd(dev, -1);
    /* Nothing is guarded for 'dev' any more: a fault can no longer flag
     * it, and the next frontend starts with a working device. */
    dev->counters.guarded_faults
        += guest_mem_guard_owner_collect(&dev->guard);
    guest_mem_guard_owner_clear(&dev->guard);
    vhost_dev_set_backend_req_fd(dev, -1);
    /* No queue uses the IOTLB now: the features are reset. */
    vhost_iotlb_flush(dev->iotlb);

    dev->protocol_features = 0;
    dev->owned = false;
    dev->mtu = 0;
    /* 'rarp_mac' stays: after a reconnect the switch learns the guest's
     * MAC again from one more RARP (vhost_dev_update_ready()). */
    __atomic_store_n(&dev->rarp_pending, false, __ATOMIC_RELAXED);
    dev->status = 0;
}

/* Frees 'dev''s queues.  'dev' must have been reset. */
void
vhost_dev_destroy(struct vhost_dev *dev)
{
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        free(dev->vqs[i]);
        dev->vqs[i] = NULL;
    }
    vhost_dev_close_poslog(dev);
    vhost_iotlb_destroy(dev->iotlb);
    free(dev->iotlb);
    dev->iotlb = NULL;
    pthread_mutex_destroy(&dev->backend_mutex);
}

/* Closes 'dev''s ring position log, if it has one, and takes every queue's
 * slot away from it.  Called as the port goes, after its frontend: a
 * successor port may open the same file at once. */
void
vhost_dev_close_poslog(struct vhost_dev *dev)
{
    if (!dev->poslog) {
        return;
    }
    vhost_dev_lock_queues(dev);
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        if (dev->vqs[i]) {
            dev->vqs[i]->poslog = dev->vqs[i]->poslog_slot = NULL;
        }
    }
    vhost_dev_unlock_queues(dev);
    virtq_poslog_close(dev->poslog);
    dev->poslog = NULL;
}

/* Releases every queue's slot in the ring position log: the frontend
 * resets the device, so no ring's position is owed to it any more. */
void
vhost_dev_release_poslog(struct vhost_dev *dev)
{
    vhost_dev_lock_queues(dev);
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        if (dev->vqs[i]) {
            virtq_poslog_stop(dev->vqs[i]);
        }
    }
    vhost_dev_unlock_queues(dev);
}

/* Returns the NUMA node that holds guest memory (its first region), or -1
 * if there is none or the kernel cannot say.  Asked of the kernel with
 * get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR), which needs no libnuma, and
 * faults the page in: not while postcopy listens, when a page not yet
 * received would hold the caller (the embedder's status query) until the
 * frontend sends it, or for ever if it never does. */
static int
vhost_dev_numa_node__(const struct vhost_dev *dev)
{
#ifdef SYS_get_mempolicy
    enum { MPOL_F_NODE_ = 1 << 0, MPOL_F_ADDR_ = 1 << 1 };
    int node = -1;

    if (!dev->mem || !dev->mem->n_regions
        || dev->postcopy_state == VHOST_POSTCOPY_LISTENING) {
        return -1;
    }
    if (syscall(SYS_get_mempolicy, &node, NULL, 0UL,
                (void *) dev->mem->regions[0].hva,
                (unsigned long) (MPOL_F_NODE_ | MPOL_F_ADDR_)) == 0) {
        return node;
    }
#endif
    return -1;
}

void
vhost_dev_get_info(const struct vhost_dev *dev, struct vhost_port_info *info)
{
    info->ready = dev->ready;
    info->owned = dev->owned;
    info->features = dev->features;
    info->protocol_features = dev->protocol_features;
    info->n_queues = dev->n_vqs;
    info->n_enabled_queues = 0;
    for (unsigned int i = 0; i < dev->n_vqs; i++) {
        if (dev->vqs[i] && dev->vqs[i]->enabled) {
            info->n_enabled_queues++;
        }
    }
    info->n_mem_regions = dev->mem ? dev->mem->n_regions : 0;
    info->mem_size = guest_mem_total_size(dev->mem);
    info->mtu = dev->mtu;
    info->has_rarp = dev->has_rarp;
    info->rarp_pending = __atomic_load_n(&dev->rarp_pending,
                                         __ATOMIC_RELAXED);
    memcpy(info->rarp_mac, dev->rarp_mac, sizeof info->rarp_mac);
    info->status = dev->status;
    info->log_mapped = dev->log_map != NULL;
    info->log_size = dev->log_size;
    info->has_log_call = dev->log_call_fd >= 0;
    info->has_backend_req = dev->backend_req_fd >= 0;
    info->numa_node = vhost_dev_numa_node__(dev);
}
