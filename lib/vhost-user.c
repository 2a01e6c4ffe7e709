/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vhost-user request handlers and the dispatch table: see vhost-user.h.
 *
 * Every handler has the same shape: validate (everything the frontend sent
 * is checked before anything changes), then commit.  A handler returns 0,
 * or a positive errno value after logging why through
 * vhost_user_reject__(); on success it may fill in a reply.
 */

#include <config.h>
#include "vhost-user.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "guest-mem.h"
#include "util.h"
#include "vhost-dev.h"
#include "vhost-log.h"
#include "vhost-user-msg.h"
#include "virtio.h"
#include "virtq-poslog.h"
#include "virtq.h"
#include "virtq-iommu.h"

typedef int vhost_user_handler(struct vhost_dev *, struct vhost_user_msg *,
                               struct vhost_user_reply *);

/* How a request is answered. */
enum vhost_user_reply_kind {
    VHOST_USER_NO_REPLY,        /* Only an ack, if the frontend asks. */
    VHOST_USER_REPLY_DATA,      /* A reply carrying data (the GET_*s). */
    VHOST_USER_REPLY_EMPTY,     /* A reply without payload on success,
                                 * which QEMU waits for (SET_LOG_BASE); an
                                 * ack, if asked, on failure. */
};

/* One row of the dispatch table. */
struct vhost_user_req_def {
    vhost_user_handler *handler;    /* NULL: not implemented. */
    uint16_t min_size, max_size;    /* Payload bytes accepted. */
    uint8_t min_fds, max_fds;       /* Attached fds accepted. */
    enum vhost_user_reply_kind reply;
    int8_t protocol_feature;        /* Needed protocol feature, or -1. */
};

/* Logs that 'msg' is rejected for the reason in 'format', at a rate
 * limited per device, and returns EINVAL for the handler to return. */
static int OVS_PRINTF_FORMAT(3, 4)
vhost_user_reject__(struct vhost_dev *dev, const struct vhost_user_msg *msg,
                    const char *format, ...)
{
    char reason[256];
    va_list args;

    va_start(args, format);
    vsnprintf(reason, sizeof reason, format, args);
    va_end(args);
    VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: %s rejected: %s", dev->name,
                     vhost_user_request_to_string(msg->hdr.request), reason);
    return EINVAL;
}

/* Returns the queue that 'msg' names with 'index', or NULL after logging,
 * if there is no such queue. */
static struct virtq *
vhost_user_get_vq__(struct vhost_dev *dev, const struct vhost_user_msg *msg,
                    uint32_t index)
{
    /* Frontend-controlled: 'index', bounded here before any use. */
    struct virtq *vq = vhost_dev_get_vq(dev, index);

    if (!vq) {
        vhost_user_reject__(dev, msg, "vring index %"PRIu32" out of range "
                            "(%u queues)", index, 2 * dev->max_queue_pairs);
    }
    return vq;
}

static void
vhost_user_reply_u64__(struct vhost_user_reply *reply, uint64_t value)
{
    reply->hdr.size = sizeof reply->payload.u64;
    reply->payload.u64 = value;
}

/* Features and ownership. */

static int
vhost_user_get_features(struct vhost_dev *dev, struct vhost_user_msg *msg,
                        struct vhost_user_reply *reply)
{
    vhost_user_reply_u64__(reply, dev->offered_features);
    return 0;
}

static int
vhost_user_set_features(struct vhost_dev *dev, struct vhost_user_msg *msg,
                        struct vhost_user_reply *reply)
{
    uint64_t features = msg->payload.u64;

    if (features & ~dev->offered_features) {
        return vhost_user_reject__(dev, msg, "features %#"PRIx64" were not "
                                   "offered", features & ~dev->offered_features);
    }
    if ((features ^ dev->features) & FEATURE_BIT(VIRTIO_F_RING_PACKED)
        && vhost_dev_any_started(dev)) {
        /* See "Messages for stopped rings" below. */
        dev->counters.msgs_ring_started++;
        return vhost_user_reject__(dev, msg, "ring layout changed to %s "
                                   "while a vring is started",
                                   features & FEATURE_BIT(VIRTIO_F_RING_PACKED)
                                   ? "packed" : "split");
    }

    /* Negotiated again during migration (to add VHOST_F_LOG_ALL), so this
     * may arrive while queues run: the queues switch burst functions under
     * their access locks, and a queue whose layout changes (only a stopped
     * one, by the check above) is translated again in the same critical
     * section. */
    vhost_dev_set_features(dev, features);
    VLOG_DBG("%s: negotiated features %#"PRIx64, dev->name, features);
    return 0;
}

static int
vhost_user_get_protocol_features(struct vhost_dev *dev,
                                 struct vhost_user_msg *msg,
                                 struct vhost_user_reply *reply)
{
    vhost_user_reply_u64__(reply, dev->offered_protocol_features);
    return 0;
}

static int
vhost_user_set_protocol_features(struct vhost_dev *dev,
                                 struct vhost_user_msg *msg,
                                 struct vhost_user_reply *reply)
{
    uint64_t features = msg->payload.u64;

    if (features & ~dev->offered_protocol_features) {
        return vhost_user_reject__(dev, msg, "protocol features %#"PRIx64
                                   " were not offered",
                                   features & ~dev->offered_protocol_features);
    }
    dev->protocol_features = features;
    return 0;
}

static int
vhost_user_set_owner(struct vhost_dev *dev, struct vhost_user_msg *msg,
                     struct vhost_user_reply *reply)
{
    dev->owned = true;
    return 0;
}

/* RESET_OWNER: the specification deprecates it, but QEMU still sends it to
 * reset a device when RESET_DEVICE is not negotiated.  Everything the
 * frontend set up goes, as on a disconnect. */
static int
vhost_user_reset_owner(struct vhost_dev *dev, struct vhost_user_msg *msg,
                       struct vhost_user_reply *reply)
{
    vhost_dev_release_poslog(dev);
    vhost_dev_reset(dev);
    return 0;
}

/* Memory. */

/* Postcopy (vhost-postcopy.h). */

/* While postcopy listens, registers the region that 'r' (a copy of one
 * the frontend just sent, in the reply) names in 'mem', the table about to
 * be published, with the userfaultfd, and puts in its 'userspace_addr'
 * where we mapped it, as vhost-user.rst asks of the reply to SET_MEM_TABLE
 * (and QEMU of ADD_MEM_REG's).  Before the table is published: a burst
 * that touched a page not received yet of a region not registered yet
 * would fill it with zeros in the shared file, and the page the source
 * then sends could not be placed (UFFDIO_COPY: EEXIST). */
static int
vhost_user_postcopy_region__(struct vhost_dev *dev,
                             const struct vhost_user_msg *msg,
                             const struct guest_mem *mem,
                             struct vhost_user_mem_region *r)
{
    const struct guest_mem_region *gr
        = guest_mem_find_gpa(mem, r->guest_phys_addr);
    const char *reason;

    if (!gr) {
        return vhost_user_reject__(dev, msg, "postcopy: region at guest "
                                   "%#"PRIx64" not mapped",
                                   r->guest_phys_addr);
    }
    int error = vhost_postcopy_register(dev, gr, &reason);
    if (error) {
        dev->counters.postcopy_rejected++;
        return vhost_user_reject__(dev, msg, "postcopy: region at guest "
                                   "%#"PRIx64": %s (%s)", r->guest_phys_addr,
                                   reason, strerror(error));
    }
    dev->counters.postcopy_regions++;
    r->userspace_addr = (uint64_t) (uintptr_t) gr->hva;
    return 0;
}

/* The frontend's acknowledgement of a postcopy memory table reply: the
 * request it answered, with an 8-byte payload of 0 (QEMU's
 * vhost_user_set_mem_table_postcopy(), vhost_user_add_remove_regions()),
 * which it sends when it can wake our faults.  Returns true if 'msg' is
 * one, taken (no reply); a nonzero value is logged. */
static bool
vhost_user_postcopy_ack__(struct vhost_dev *dev,
                          const struct vhost_user_msg *msg)
{
    uint32_t r = msg->hdr.request;

    if (dev->postcopy_state != VHOST_POSTCOPY_LISTENING
        || msg->hdr.size != sizeof msg->payload.u64 || msg->n_fds
        || (r != VHOST_USER_SET_MEM_TABLE && r != VHOST_USER_ADD_MEM_REG
            && r != VHOST_USER_REM_MEM_REG)) {
        return false;
    }
    if (msg->payload.u64) {
        VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: postcopy: the frontend "
                         "could not register our memory table (%"PRIu64"): "
                         "faults will not be served", dev->name,
                         msg->payload.u64);
    } else {
        VLOG_DBG("%s: postcopy: the frontend registered our memory table",
                 dev->name);
    }
    return true;
}

static int
vhost_user_postcopy_advise(struct vhost_dev *dev, struct vhost_user_msg *msg,
                           struct vhost_user_reply *reply)
{
    const char *reason;
    int error = vhost_postcopy_advise(dev, &reply->fd, &reason);

    if (error) {
        dev->counters.postcopy_rejected++;
        return vhost_user_reject__(dev, msg, "postcopy: %s (%s)", reason,
                                   strerror(error));
    }
    /* vhost-user.rst: the reply carries the fd, and no payload. */
    reply->hdr.size = 0;
    return 0;
}

static int
vhost_user_postcopy_listen(struct vhost_dev *dev, struct vhost_user_msg *msg,
                           struct vhost_user_reply *reply)
{
    const char *reason;

    if (vhost_postcopy_listen(dev, &reason)) {
        dev->counters.postcopy_rejected++;
        return vhost_user_reject__(dev, msg, "postcopy: %s", reason);
    }
    dev->counters.postcopy_listens++;
    return 0;
}

static int
vhost_user_postcopy_end(struct vhost_dev *dev, struct vhost_user_msg *msg,
                        struct vhost_user_reply *reply)
{
    const char *reason;

    if (vhost_postcopy_end(dev, &reason)) {
        dev->counters.postcopy_rejected++;
        return vhost_user_reject__(dev, msg, "postcopy: %s", reason);
    }
    return 0;
}

static int
vhost_user_set_mem_table(struct vhost_dev *dev, struct vhost_user_msg *msg,
                         struct vhost_user_reply *reply)
{
    const struct vhost_user_mem_table *t = &msg->payload.mem;
    /* Frontend-controlled: 'nregions', checked against the payload size and
     * the fds actually attached before it indexes anything. */
    uint32_t n = t->nregions;

    if (n < 1 || n > VHOST_USER_MAX_FDS) {
        return vhost_user_reject__(dev, msg, "%"PRIu32" memory regions "
                                   "(must be 1 to %d)", n, VHOST_USER_MAX_FDS);
    }
    if (msg->hdr.size != VHOST_USER_MEM_TABLE_HDR_SIZE + n * sizeof t->regions[0]) {
        return vhost_user_reject__(dev, msg, "payload of %"PRIu32" bytes for "
                                   "%"PRIu32" regions", msg->hdr.size, n);
    }
    if (msg->n_fds != n) {
        return vhost_user_reject__(dev, msg, "%zu fds for %"PRIu32" regions",
                                   msg->n_fds, n);
    }

    struct guest_mem *mem = guest_mem_create();
    if (!mem) {
        return ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct vhost_user_mem_region *r = &t->regions[i];
        const char *reason;
        int error = guest_mem_add(mem, r->guest_phys_addr, r->memory_size,
                                  r->userspace_addr, r->mmap_offset,
                                  msg->fds[i], &reason);
        if (error) {
            guest_mem_destroy(mem);
            return vhost_user_reject__(dev, msg, "region %"PRIu32" (guest "
                                       "%#"PRIx64", size %#"PRIx64"): %s",
                                       i, r->guest_phys_addr, r->memory_size,
                                       reason);
        }
    }

    if (dev->postcopy_state == VHOST_POSTCOPY_LISTENING) {
        /* The same table back, each region at its address here. */
        reply->payload.mem = *t;
        for (uint32_t i = 0; i < n; i++) {
            int error = vhost_user_postcopy_region__(
                dev, msg, mem, &reply->payload.mem.regions[i]);
            if (error) {
                guest_mem_destroy(mem);
                return error;
            }
        }
        reply->hdr.size = msg->hdr.size;
    }
    vhost_dev_set_mem(dev, mem);
    dev->counters.mem_table_updates++;
    VLOG_INFO("%s: guest memory: %"PRIu32" regions, %"PRIu64" bytes",
              dev->name, n, guest_mem_total_size(mem));
    return 0;
}

static int
vhost_user_get_max_mem_slots(struct vhost_dev *dev,
                             struct vhost_user_msg *msg,
                             struct vhost_user_reply *reply)
{
    vhost_user_reply_u64__(reply, VHOST_MAX_MEM_REGIONS);
    return 0;
}

static int
vhost_user_add_mem_reg(struct vhost_dev *dev, struct vhost_user_msg *msg,
                       struct vhost_user_reply *reply)
{
    const struct vhost_user_mem_region *r = &msg->payload.mem_reg.region;
    struct guest_mem *mem = guest_mem_clone(dev->mem);
    const char *reason;

    if (!mem) {
        return ENOMEM;
    }
    int error = guest_mem_add(mem, r->guest_phys_addr, r->memory_size,
                              r->userspace_addr, r->mmap_offset, msg->fds[0],
                              &reason);
    if (error) {
        guest_mem_destroy(mem);
        return vhost_user_reject__(dev, msg, "region (guest %#"PRIx64", size "
                                   "%#"PRIx64"): %s", r->guest_phys_addr,
                                   r->memory_size, reason);
    }
    if (dev->postcopy_state == VHOST_POSTCOPY_LISTENING) {
        reply->payload.mem_reg = msg->payload.mem_reg;
        error = vhost_user_postcopy_region__(dev, msg, mem,
                                             &reply->payload.mem_reg.region);
        if (error) {
            guest_mem_destroy(mem);
            return error;
        }
        reply->hdr.size = sizeof reply->payload.mem_reg;
    }
    vhost_dev_set_mem(dev, mem);
    dev->counters.mem_table_updates++;
    return 0;
}

static int
vhost_user_rem_mem_reg(struct vhost_dev *dev, struct vhost_user_msg *msg,
                       struct vhost_user_reply *reply)
{
    const struct vhost_user_mem_region *r = &msg->payload.mem_reg.region;
    struct guest_mem *mem = guest_mem_clone(dev->mem);

    if (!mem) {
        return ENOMEM;
    }
    if (guest_mem_remove(mem, r->guest_phys_addr, r->memory_size,
                         r->userspace_addr)) {
        guest_mem_destroy(mem);
        return vhost_user_reject__(dev, msg, "no region at guest %#"PRIx64
                                   " with size %#"PRIx64, r->guest_phys_addr,
                                   r->memory_size);
    }
    vhost_dev_set_mem(dev, mem);
    dev->counters.mem_table_updates++;
    return 0;
}

/* Dirty log. */

/* SET_LOG_BASE with LOG_SHMFD: map the log the fd carries.  QEMU waits for
 * a reply without payload before it goes on. */
static int
vhost_user_set_log_base(struct vhost_dev *dev, struct vhost_user_msg *msg,
                        struct vhost_user_reply *reply)
{
    /* Frontend-controlled: 'size' and 'offset' (CVE-2020-10722 mapped an
     * overflowing size); guest_mem_map_fd() checks both against the fd. */
    uint64_t size = msg->payload.log.mmap_size;
    uint64_t offset = msg->payload.log.mmap_offset;
    const char *reason;
    void *map;
    size_t map_len;
    uint8_t *base;

    int error = guest_mem_map_fd(msg->fds[0], offset, size, &map, &map_len,
                                 &base, &reason);
    if (error) {
        return vhost_user_reject__(dev, msg, "log of %#"PRIx64" bytes at "
                                   "offset %#"PRIx64": %s", size, offset,
                                   reason);
    }
    vhost_dev_set_log(dev, map, map_len, base, size);
    reply->hdr.size = 0;
    return 0;
}

/* The fds the data path write()s to, and the kick fd beside them, must be
 * eventfds: a write() to a pipe or socket whose buffer the frontend lets
 * fill would hold a PMD thread for good, while an eventfd write() blocks
 * only at a count of 2^64 - 2.  (Polling them for writability, or setting
 * O_NONBLOCK on a file description the frontend shares, would cost every
 * notification or change the frontend's own fd.)  Linux names each
 * eventfd "anon_inode:[eventfd]" in /proc/self/fd (fs/eventfd.c): exact,
 * and one readlink() per message.  Without /proc the fd must at least live
 * on the anonymous inode an eventfd of our own lives on, which it shares
 * only with fds that take no write() at all (signalfd, timerfd, epoll).
 * Returns true for an eventfd; otherwise false, with what 'fd' is in
 * 'kind' for the log. */
static bool
vhost_user_fd_is_eventfd__(int fd, char *kind, size_t kind_size)
{
    static const char eventfd_name[] = "anon_inode:[eventfd]";
    char path[64], link[128];

    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n >= 0) {
        link[n] = '\0';
        snprintf(kind, kind_size, "%s", link);
        return !strcmp(link, eventfd_name);
    }

    struct stat st, ref;
    int ref_fd = eventfd(0, EFD_CLOEXEC);
    bool same = ref_fd >= 0 && !fstat(fd, &st) && !fstat(ref_fd, &ref)
                && st.st_dev == ref.st_dev && st.st_ino == ref.st_ino;
    close_fd_quietly(ref_fd);
    snprintf(kind, kind_size, "%s (no /proc/self/fd)",
             same ? "an anonymous inode" : "not an anonymous inode");
    return same;
}

/* Takes fd 'i' of 'msg' for the caller if it is an eventfd
 * (vhost_user_fd_is_eventfd__()), storing it in '*fdp'.  Otherwise
 * leaves it in 'msg' for the reader to close, and logs and counts why,
 * naming the fd 'what', and returns EINVAL. */
static int
vhost_user_take_eventfd__(struct vhost_dev *dev, struct vhost_user_msg *msg,
                          size_t i, const char *what, int *fdp)
{
    char kind[160];

    if (!vhost_user_fd_is_eventfd__(msg->fds[i], kind, sizeof kind)) {
        dev->counters.fds_not_eventfd++;
        *fdp = -1;
        return vhost_user_reject__(dev, msg, "%s is not an eventfd (%s): a "
                                   "write() to it could block", what, kind);
    }
    *fdp = vhost_user_msg_take_fd(msg, i);
    return 0;
}

static int
vhost_user_set_log_fd(struct vhost_dev *dev, struct vhost_user_msg *msg,
                      struct vhost_user_reply *reply)
{
    int fd;
    int error = vhost_user_take_eventfd__(dev, msg, 0, "the log call fd", &fd);

    if (!error) {
        vhost_dev_set_log_call_fd(dev, fd);
    }
    return error;
}

/* Vrings. */

/* Messages for stopped rings
 * --------------------------
 *
 * vhost-user.rst sends SET_VRING_NUM, SET_VRING_BASE and SET_VRING_ADDR
 * to a ring before it starts, and a ring layout (VIRTIO_F_RING_PACKED)
 * is negotiated before any ring starts; a ring is started by
 * SET_VRING_KICK and stopped by GET_VRING_BASE (virtq_started()).  QEMU
 * (hw/virtio/vhost.c, vhost_virtqueue_start()) and DPDK's virtio-user
 * (virtio_user_kick_queue()) send NUM, BASE and ADDR, then KICK, to rings
 * that are new or that GET_VRING_BASE stopped (vhost_virtqueue_stop(),
 * virtio_user_stop_device(); a reconnect is a new connection here).  But
 * QEMU does send two of them to running rings: when migration starts and
 * ends, vhost_dev_set_log() sends SET_FEATURES with or without
 * VHOST_F_LOG_ALL, then SET_VRING_ADDR with or without VHOST_VRING_F_LOG,
 * and with several queue pairs each pair's vhost_dev_start() sends
 * SET_FEATURES again while the pairs before it run.  Hence:
 *
 *   - SET_VRING_NUM and SET_VRING_BASE are refused on a started ring.  A
 *     new size or position under a ring the data path walks has no
 *     meaning, no frontend sends one, and refusing is simpler to get
 *     right than re-validating every index and buffer id in flight.
 *
 *   - SET_VRING_ADDR is applied under the queue's access lock, in one
 *     critical section that translates the ring for its size and layout
 *     and keeps the old addresses if the new ones do not translate.
 *
 *   - SET_FEATURES is applied under every queue's access lock; a layout
 *     change is refused while any ring is started, and on stopped rings
 *     is applied with the rings translated again for the new layout in
 *     the same critical section (vhost_dev_set_features()).
 *
 * Every path that changes a ring's size, layout or addresses thus
 * translates it again before its lock is released.  Refusals are logged
 * and counted ('msgs_ring_started'). */

/* Logs, at debug level, where 'vq' stands as it starts or stops ('what'):
 * the evidence for a ring handed from one backend to another (live
 * migration: GET_VRING_BASE on the source, SET_VRING_KICK on the
 * destination), with a split ring's used index as guest memory has it.
 * The caller holds the access lock. */
static void
vhost_user_log_position__(const char *what, const struct virtq *vq)
{
    if (!vhost_log_enabled(VHOST_LOG_DBG)) {
        return;
    }
    if (vq->packed) {
        VLOG_DBG("%s: vring %u %s: avail %u wrap %d, used %u wrap %d",
                 vq->name, vq->index, what, vq->last_avail_idx,
                 vq->avail_wrap_counter, vq->last_used_idx,
                 vq->used_wrap_counter);
    } else if (vq->used && vq->avail) {
        /* Guest-controlled: only logged. */
        VLOG_DBG("%s: vring %u %s: avail %u, used %u; in guest memory avail "
                 "index %u, used index %u", vq->name, vq->index, what,
                 vq->last_avail_idx, vq->last_used_idx,
                 __atomic_load_n(&((uint16_t *) vq->avail)[1],
                                 __ATOMIC_RELAXED),
                 __atomic_load_n(&((uint16_t *) vq->used)[1],
                                 __ATOMIC_RELAXED));
    } else {
        VLOG_DBG("%s: vring %u %s: avail %u, used %u (not mapped)", vq->name,
                 vq->index, what, vq->last_avail_idx, vq->last_used_idx);
    }
}

/* Rejects 'msg', meant for a stopped ring, if 'vq' is started. */
static int
vhost_user_check_stopped__(struct vhost_dev *dev,
                           const struct vhost_user_msg *msg,
                           const struct virtq *vq)
{
    if (virtq_started(vq)) {
        dev->counters.msgs_ring_started++;
        return vhost_user_reject__(dev, msg, "vring %u is started: stop it "
                                   "with GET_VRING_BASE first", vq->index);
    }
    return 0;
}

static int
vhost_user_set_vring_num(struct vhost_dev *dev, struct vhost_user_msg *msg,
                         struct vhost_user_reply *reply)
{
    struct virtq *vq = vhost_user_get_vq__(dev, msg, msg->payload.state.index);
    uint32_t num = msg->payload.state.num;

    if (!vq) {
        return EINVAL;
    }
    /* VIRTIO 1.2 §2.7: "Queue Size value is always a power of 2" for split
     * rings; §2.8 lifts that for packed.  §2.6: at most 32768. */
    if (!num || num > VIRTQ_MAX_SIZE || (!vq->packed && !is_pow2(num))) {
        return vhost_user_reject__(dev, msg, "vring %u size %"PRIu32" is not "
                                   "%s 1 and %d", vq->index, num,
                                   vq->packed ? "between" : "a power of 2 between",
                                   VIRTQ_MAX_SIZE);
    }
    int error = vhost_user_check_stopped__(dev, msg, vq);
    if (error) {
        return error;
    }
    virtq_lock(vq);
    virtq_set_size(vq, num, dev->mem);
    virtq_unlock(vq);
    return 0;
}

/* SET_VRING_ADDR, which QEMU sends to running rings too (to turn
 * VHOST_VRING_F_LOG on and off): see "Messages for stopped rings". */
static int
vhost_user_set_vring_addr(struct vhost_dev *dev, struct vhost_user_msg *msg,
                          struct vhost_user_reply *reply)
{
    const struct vhost_user_vring_addr *a = &msg->payload.addr;
    struct virtq *vq = vhost_user_get_vq__(dev, msg, a->index);

    if (!vq) {
        return EINVAL;
    }
    if (a->flags & ~(uint32_t) (1u << VHOST_VRING_F_LOG)) {
        return vhost_user_reject__(dev, msg, "unknown flags %#"PRIx32,
                                   a->flags);
    }
    /* VIRTIO 1.2 §2.7, table "Virtqueue Part Alignment". */
    if (a->desc_user_addr % VRING_DESC_ALIGN
        || a->avail_user_addr % VRING_AVAIL_ALIGN
        || a->used_user_addr % VRING_USED_ALIGN) {
        return vhost_user_reject__(dev, msg, "vring %u addresses are not "
                                   "aligned", vq->index);
    }

    struct virtq old = *vq;
    virtq_lock(vq);
    /* The data path walks it: SET_VRING_ADDR only toggles logging. */
    bool running = virtq_started(vq) && vq->used;
    vq->desc_uva = a->desc_user_addr;
    vq->avail_uva = a->avail_user_addr;
    vq->used_uva = a->used_user_addr;
    vq->log_gpa = a->log_guest_addr;
    vq->log_used = a->flags & (1u << VHOST_VRING_F_LOG);
    vq->has_addr = true;
    bool mapped = virtq_map(vq, dev->mem);
    if (dev->mem && vq->size && !mapped && !vq->ring_miss) {
        /* Keep what worked before. */
        vq->desc_uva = old.desc_uva;
        vq->avail_uva = old.avail_uva;
        vq->used_uva = old.used_uva;
        vq->log_gpa = old.log_gpa;
        vq->log_used = old.log_used;
        vq->has_addr = old.has_addr;
        virtq_map(vq, dev->mem);
    } else if (mapped && !running
               && dev->postcopy_state != VHOST_POSTCOPY_LISTENING) {
        /* Not while postcopy listens: the used index may be on a page not
         * received yet, and the engine loop would wait for it. */
        virtq_resync_used(vq);
    }
    vq->ready = vq->ready && virtq_can_run(vq);
    /* Behind an IOMMU, ring addresses the IOTLB has no entry for yet are
     * not wrong: the ring waits, and a miss asks for them
     * (vhost_dev_update_ready()). */
    bool waits = vq->ring_miss;
    virtq_unlock(vq);

    if (dev->mem && vq->size && !mapped && !waits) {
        return vhost_user_reject__(dev, msg, "vring %u (desc %#"PRIx64", "
                                   "avail %#"PRIx64", used %#"PRIx64") is "
                                   "not inside guest memory, or lands "
                                   "unaligned there", vq->index,
                                   a->desc_user_addr, a->avail_user_addr,
                                   a->used_user_addr);
    }
    return 0;
}

static int
vhost_user_set_vring_base(struct vhost_dev *dev, struct vhost_user_msg *msg,
                          struct vhost_user_reply *reply)
{
    struct virtq *vq = vhost_user_get_vq__(dev, msg, msg->payload.state.index);
    uint32_t num = msg->payload.state.num;

    if (!vq) {
        return EINVAL;
    }
    if (!vq->packed && num > UINT16_MAX) {
        return vhost_user_reject__(dev, msg, "vring %u base %#"PRIx32" does "
                                   "not fit a split ring index", vq->index,
                                   num);
    }
    /* Packed: the avail position in bits 0..15 and the used one in bits
     * 16..31, each an index below the ring size and its wrap counter;
     * the used one at most a ring behind (virtq_set_base()). */
    if (vq->packed && !virtq_packed_base_ok(num, vq->size)) {
        return vhost_user_reject__(dev, msg, "vring %u packed base %#"PRIx32
                                   " is not two positions in a ring of %u, "
                                   "used at most a ring behind avail",
                                   vq->index, num, vq->size);
    }
    int error = vhost_user_check_stopped__(dev, msg, vq);
    if (error) {
        return error;
    }
    virtq_lock(vq);
    virtq_set_base(vq, num);
    virtq_unlock(vq);
    return 0;
}

/* GET_VRING_BASE stops the ring and returns where it stands
 * (vhost-user.rst: "Get the available vring base offset"; the back-end
 * stops the ring).  It starts again with a new SET_VRING_KICK. */
static int
vhost_user_get_vring_base(struct vhost_dev *dev, struct vhost_user_msg *msg,
                          struct vhost_user_reply *reply)
{
    struct virtq *vq = vhost_user_get_vq__(dev, msg, msg->payload.state.index);

    if (!vq) {
        return EINVAL;
    }
    virtq_lock(vq);
    vhost_user_log_position__("stops", vq);
    vq->ready = false;
    vq->has_kick = false;
    virtq_poslog_stop(vq);
    /* Packets held for a translation were for this ring, not the next. */
    virtq_iommu_free_held(vq);
    if (!vhost_dev_has_feature(dev, VHOST_USER_F_PROTOCOL_FEATURES)) {
        vq->enabled = false;
    }
    close_fd_quietly(vq->kick_fd);
    vq->kick_fd = -1;
    reply->hdr.size = sizeof reply->payload.state;
    reply->payload.state.index = vq->index;
    reply->payload.state.num = virtq_get_base(vq);
    virtq_unlock(vq);
    return 0;
}

/* SET_VRING_KICK, _CALL and _ERR share a payload: the vring index in bits
 * 0..7 and VHOST_USER_VRING_NOFD_MASK when no fd comes with it.  Returns
 * the queue, with '*fdp' the fd taken from 'msg' (an eventfd:
 * vhost_user_take_eventfd__()) or -1, or NULL after logging why. */
static struct virtq *
vhost_user_vring_fd__(struct vhost_dev *dev, struct vhost_user_msg *msg,
                      int *fdp)
{
    /* Frontend-controlled: the whole u64, checked for stray bits before
     * the index is taken from it. */
    uint64_t u64 = msg->payload.u64;
    bool nofd = u64 & VHOST_USER_VRING_NOFD_MASK;

    *fdp = -1;
    if (u64 & ~(uint64_t) (VHOST_USER_VRING_IDX_MASK
                           | VHOST_USER_VRING_NOFD_MASK)) {
        vhost_user_reject__(dev, msg, "bad vring fd payload %#"PRIx64, u64);
        return NULL;
    }
    if (nofd != !msg->n_fds) {
        vhost_user_reject__(dev, msg, "%zu fds with the no-fd flag %s",
                            msg->n_fds, nofd ? "set" : "clear");
        return NULL;
    }

    struct virtq *vq = vhost_user_get_vq__(dev, msg,
                                           u64 & VHOST_USER_VRING_IDX_MASK);
    if (vq && !nofd) {
        char what[64];

        snprintf(what, sizeof what, "vring %u %s fd", vq->index,
                 msg->hdr.request == VHOST_USER_SET_VRING_KICK ? "kick"
                 : msg->hdr.request == VHOST_USER_SET_VRING_CALL ? "call"
                 : "err");
        if (vhost_user_take_eventfd__(dev, msg, 0, what, fdp)) {
            return NULL;
        }
    }
    return vq;
}

static int
vhost_user_set_vring_kick(struct vhost_dev *dev, struct vhost_user_msg *msg,
                          struct vhost_user_reply *reply)
{
    int fd;
    struct virtq *vq = vhost_user_vring_fd__(dev, msg, &fd);

    if (!vq) {
        return EINVAL;
    }
    virtq_lock(vq);
    close_fd_quietly(vq->kick_fd);
    vq->kick_fd = fd;
    if (!vq->has_kick) {
        /* No recovery while postcopy listens: it reads the ring in guest
         * memory, maybe on a page not received yet, and the engine loop
         * would wait for it.  A ring started then is a migration's
         * destination, its base the source's GET_VRING_BASE. */
        switch (virtq_poslog_start(vq, dev->mem, dev->postcopy_state
                                                 != VHOST_POSTCOPY_LISTENING)) {
        case VIRTQ_POSLOG_INEXACT:
            dev->counters.rings_recovered_inexact++;
            /* Fall through. */
        case VIRTQ_POSLOG_RECOVERED:
            dev->counters.rings_recovered++;
            break;
        case VIRTQ_POSLOG_NONE:
            break;
        }
    }
    vq->has_kick = true;
    vhost_user_log_position__("starts", vq);
    /* vhost-user.rst, "Ring states": without
     * VHOST_USER_F_PROTOCOL_FEATURES a ring starts enabled once kicked. */
    if (!vhost_dev_has_feature(dev, VHOST_USER_F_PROTOCOL_FEATURES)) {
        vq->enabled = true;
    }
    virtq_unlock(vq);
    return 0;
}

static int
vhost_user_set_vring_call(struct vhost_dev *dev, struct vhost_user_msg *msg,
                          struct vhost_user_reply *reply)
{
    int fd;
    struct virtq *vq = vhost_user_vring_fd__(dev, msg, &fd);

    if (!vq) {
        return EINVAL;
    }
    virtq_lock(vq);
    close_fd_quietly(vq->call_fd);
    vq->call_fd = fd;
    virtq_unlock(vq);
    return 0;
}

static int
vhost_user_set_vring_err(struct vhost_dev *dev, struct vhost_user_msg *msg,
                         struct vhost_user_reply *reply)
{
    int fd;
    struct virtq *vq = vhost_user_vring_fd__(dev, msg, &fd);

    if (!vq) {
        return EINVAL;
    }
    virtq_lock(vq);
    close_fd_quietly(vq->err_fd);
    vq->err_fd = fd;
    virtq_unlock(vq);
    return 0;
}

static int
vhost_user_set_vring_enable(struct vhost_dev *dev, struct vhost_user_msg *msg,
                            struct vhost_user_reply *reply)
{
    struct virtq *vq = vhost_user_get_vq__(dev, msg, msg->payload.state.index);
    uint32_t num = msg->payload.state.num;

    if (!vq) {
        return EINVAL;
    }
    if (num > 1) {
        return vhost_user_reject__(dev, msg, "vring %u enable value %"PRIu32
                                   " is not 0 or 1", vq->index, num);
    }
    virtq_lock(vq);
    vq->enabled = num;
    vq->ready = vq->ready && virtq_can_run(vq);
    virtq_unlock(vq);
    return 0;
}

static int
vhost_user_get_queue_num(struct vhost_dev *dev, struct vhost_user_msg *msg,
                         struct vhost_user_reply *reply)
{
    vhost_user_reply_u64__(reply, dev->max_queue_pairs);
    return 0;
}

/* Device. */

static int
vhost_user_send_rarp(struct vhost_dev *dev, struct vhost_user_msg *msg,
                     struct vhost_user_reply *reply)
{
    /* The MAC is the first 6 bytes of the payload.  A dequeue burst may
     * be copying the last one into its RARP: it reads 'rarp_mac' under
     * its queue's access lock (ThreadSanitizer saw a torn MAC). */
    vhost_dev_lock_queues(dev);
    memcpy(dev->rarp_mac, msg->payload.bytes, sizeof dev->rarp_mac);
    vhost_dev_unlock_queues(dev);
    dev->has_rarp = true;
    /* The next dequeue on queue pair 0 injects one RARP for it, so that
     * switches learn where the guest went after migration. */
    __atomic_store_n(&dev->rarp_pending, true, __ATOMIC_RELEASE);
    return 0;
}

static int
vhost_user_net_set_mtu(struct vhost_dev *dev, struct vhost_user_msg *msg,
                       struct vhost_user_reply *reply)
{
    uint64_t mtu = msg->payload.u64;

    /* VIRTIO 1.2 §5.1.4: "mtu ... at least 68". */
    if (mtu < 68 || mtu > UINT16_MAX) {
        return vhost_user_reject__(dev, msg, "MTU %"PRIu64" is not between "
                                   "68 and 65535", mtu);
    }
    dev->mtu = mtu;
    return 0;
}

/* The virtio-net configuration space the frontend reads through GET_CONFIG:
 * the link is up, and 'mtu' is the embedder's (VIRTIO_NET_F_MTU says the
 * driver should use it).  No MAC: VIRTIO_NET_F_MAC is not offered, so the
 * guest keeps its own. */
static void
vhost_user_net_config__(const struct vhost_dev *dev,
                        struct virtio_net_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->status = VIRTIO_NET_S_LINK_UP;
    cfg->max_virtqueue_pairs = dev->max_queue_pairs;
    cfg->mtu = dev->config_mtu;
    cfg->speed = VIRTIO_NET_SPEED_UNKNOWN;
    cfg->duplex = VIRTIO_NET_DUPLEX_UNKNOWN;
}

static int
vhost_user_get_config(struct vhost_dev *dev, struct vhost_user_msg *msg,
                      struct vhost_user_reply *reply)
{
    const struct vhost_user_config *req = &msg->payload.config;
    struct vhost_user_config *out = &reply->payload.config;

    out->offset = req->offset;
    out->flags = req->flags;
    if (req->size > VHOST_USER_MAX_CONFIG_SIZE
        || req->offset > VHOST_USER_MAX_CONFIG_SIZE - req->size
        || msg->hdr.size != VHOST_USER_CONFIG_HDR_SIZE + req->size) {
        /* The specification's error reply: no config bytes at all.  The
         * frontend learns of it, so the connection stays up. */
        dev->counters.msgs_rejected++;
        VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: GET_CONFIG of %"PRIu32
                         " bytes at offset %"PRIu32" in a %"PRIu32"-byte "
                         "payload refused: the space is %d bytes", dev->name,
                         req->size, req->offset, msg->hdr.size,
                         VHOST_USER_MAX_CONFIG_SIZE);
        out->size = 0;
        reply->hdr.size = VHOST_USER_CONFIG_HDR_SIZE;
        return 0;
    }

    /* Past the fields we know, the space reads as zero. */
    struct virtio_net_config cfg;
    uint8_t space[VHOST_USER_MAX_CONFIG_SIZE] = { 0 };
    vhost_user_net_config__(dev, &cfg);
    memcpy(space, &cfg, sizeof cfg);
    out->size = req->size;
    memcpy(out->region, space + req->offset, req->size);
    reply->hdr.size = VHOST_USER_CONFIG_HDR_SIZE + req->size;
    return 0;
}

static int
vhost_user_set_config(struct vhost_dev *dev, struct vhost_user_msg *msg,
                      struct vhost_user_reply *reply)
{
    /* VIRTIO 1.2 §5.1.4: "The driver MUST NOT write to any of the device
     * configuration fields" (the legacy MAC write needs VIRTIO_NET_F_MAC,
     * which is not offered). */
    return vhost_user_reject__(dev, msg, "the virtio-net configuration "
                               "space is read-only (%"PRIu32" bytes at "
                               "offset %"PRIu32")", msg->payload.config.size,
                               msg->payload.config.offset);
}

static int
vhost_user_set_backend_req_fd(struct vhost_dev *dev,
                              struct vhost_user_msg *msg,
                              struct vhost_user_reply *reply)
{
    vhost_dev_set_backend_req_fd(dev, vhost_user_msg_take_fd(msg, 0));
    return 0;
}

/* IOTLB_MSG: a translation from the frontend's vIOMMU (vhost-user.rst,
 * "IOTLB message"), meaningful only with VIRTIO_F_IOMMU_PLATFORM
 * negotiated.  The frontend wants it acknowledged (REPLY_ACK, which QEMU
 * requires with an IOMMU), as vhost_user_dispatch() does. */
static int
vhost_user_iotlb_msg(struct vhost_dev *dev, struct vhost_user_msg *msg,
                     struct vhost_user_reply *reply)
{
    const struct vhost_iotlb_msg *m = &msg->payload.iotlb;

    if (!vhost_dev_has_feature(dev, VIRTIO_F_ACCESS_PLATFORM)) {
        dev->counters.iotlb_rejected++;
        return vhost_user_reject__(dev, msg, "IOTLB message without "
                                   "VIRTIO_F_IOMMU_PLATFORM negotiated");
    }
    /* Frontend-controlled: every field, checked by vhost_iotlb_apply(). */
    if (vhost_dev_iotlb_msg(dev, m)) {
        dev->counters.iotlb_rejected++;
        return vhost_user_reject__(dev, msg, "IOTLB message type %u (IOVA "
                                   "%#"PRIx64", size %#"PRIx64", perm %#x) "
                                   "refused", m->type, m->iova, m->size,
                                   m->perm);
    }
    if (m->type == VHOST_IOTLB_UPDATE) {
        dev->counters.iotlb_updates++;
    } else {
        dev->counters.iotlb_invalidations++;
    }
    dev->counters.iotlb_evicted = dev->iotlb->n_evicted;
    return 0;
}

static int
vhost_user_set_status(struct vhost_dev *dev, struct vhost_user_msg *msg,
                      struct vhost_user_reply *reply)
{
    uint64_t status = msg->payload.u64;

    if (status > UINT8_MAX) {
        return vhost_user_reject__(dev, msg, "device status %#"PRIx64" does "
                                   "not fit 8 bits", status);
    }
    dev->status = status;
    return 0;
}

static int
vhost_user_get_status(struct vhost_dev *dev, struct vhost_user_msg *msg,
                      struct vhost_user_reply *reply)
{
    vhost_user_reply_u64__(reply, dev->status);
    return 0;
}

/* The dispatch table: the only place that says what each request may
 * carry.  SIZE(MIN, MAX) bounds the payload in bytes and FDS(MIN, MAX) the
 * attached fds.  Requests that take no input accept an 8-byte payload as
 * well as none, since some frontends send a zero u64. */
#define SIZE(MIN, MAX) (MIN), (MAX)
#define FDS(MIN, MAX) (MIN), (MAX)
#define NONE SIZE(0, 8)
#define U64 SIZE(8, 8)
#define STATE SIZE(sizeof(struct vhost_user_vring_state), \
                   sizeof(struct vhost_user_vring_state))
#define EXACT(TYPE) SIZE(sizeof(TYPE), sizeof(TYPE))
#define REPLY VHOST_USER_REPLY_DATA
#define NO_REPLY VHOST_USER_NO_REPLY
#define EMPTY_REPLY VHOST_USER_REPLY_EMPTY
#define PF(NAME) VHOST_USER_PROTOCOL_F_##NAME
#define NO_PF -1
static const struct vhost_user_req_def vhost_user_reqs[VHOST_USER_N_REQUESTS] = {
#define REQ(NAME, HANDLER, SIZES, FDS_, REPLY_, PF_) \
    [VHOST_USER_##NAME] = { HANDLER, SIZES, FDS_, REPLY_, PF_ }
    /* Features and ownership. */
    REQ(GET_FEATURES, vhost_user_get_features, NONE, FDS(0, 0), REPLY,
        NO_PF),
    REQ(SET_FEATURES, vhost_user_set_features, U64, FDS(0, 0), NO_REPLY,
        NO_PF),
    REQ(GET_PROTOCOL_FEATURES, vhost_user_get_protocol_features, NONE,
        FDS(0, 0), REPLY, NO_PF),
    REQ(SET_PROTOCOL_FEATURES, vhost_user_set_protocol_features, U64,
        FDS(0, 0), NO_REPLY, NO_PF),
    REQ(SET_OWNER, vhost_user_set_owner, NONE, FDS(0, 0), NO_REPLY, NO_PF),
    REQ(RESET_OWNER, vhost_user_reset_owner, NONE, FDS(0, 0), NO_REPLY,
        NO_PF),

    /* Memory. */
    REQ(SET_MEM_TABLE, vhost_user_set_mem_table,
        SIZE(VHOST_USER_MEM_TABLE_HDR_SIZE
             + sizeof(struct vhost_user_mem_region),
             sizeof(struct vhost_user_mem_table)),
        FDS(1, VHOST_USER_MAX_FDS), NO_REPLY, NO_PF),
    REQ(GET_MAX_MEM_SLOTS, vhost_user_get_max_mem_slots, NONE, FDS(0, 0),
        REPLY, PF(CONFIGURE_MEM_SLOTS)),
    REQ(ADD_MEM_REG, vhost_user_add_mem_reg, EXACT(struct vhost_user_mem_reg),
        FDS(1, 1), NO_REPLY, PF(CONFIGURE_MEM_SLOTS)),
    REQ(REM_MEM_REG, vhost_user_rem_mem_reg, EXACT(struct vhost_user_mem_reg),
        FDS(0, 1), NO_REPLY, PF(CONFIGURE_MEM_SLOTS)),

    /* Vrings. */
    REQ(SET_VRING_NUM, vhost_user_set_vring_num, STATE, FDS(0, 0), NO_REPLY,
        NO_PF),
    REQ(SET_VRING_ADDR, vhost_user_set_vring_addr,
        EXACT(struct vhost_user_vring_addr), FDS(0, 0), NO_REPLY, NO_PF),
    REQ(SET_VRING_BASE, vhost_user_set_vring_base, STATE, FDS(0, 0),
        NO_REPLY, NO_PF),
    REQ(GET_VRING_BASE, vhost_user_get_vring_base, STATE, FDS(0, 0), REPLY,
        NO_PF),
    REQ(SET_VRING_KICK, vhost_user_set_vring_kick, U64, FDS(0, 1), NO_REPLY,
        NO_PF),
    REQ(SET_VRING_CALL, vhost_user_set_vring_call, U64, FDS(0, 1), NO_REPLY,
        NO_PF),
    REQ(SET_VRING_ERR, vhost_user_set_vring_err, U64, FDS(0, 1), NO_REPLY,
        NO_PF),
    REQ(SET_VRING_ENABLE, vhost_user_set_vring_enable, STATE, FDS(0, 0),
        NO_REPLY, NO_PF),
    REQ(GET_QUEUE_NUM, vhost_user_get_queue_num, NONE, FDS(0, 0), REPLY,
        PF(MQ)),

    /* Device. */
    REQ(NET_SET_MTU, vhost_user_net_set_mtu, U64, FDS(0, 0), NO_REPLY,
        PF(NET_MTU)),
    REQ(SEND_RARP, vhost_user_send_rarp, U64, FDS(0, 0), NO_REPLY, PF(RARP)),
    REQ(GET_CONFIG, vhost_user_get_config,
        SIZE(VHOST_USER_CONFIG_HDR_SIZE,
             VHOST_USER_CONFIG_HDR_SIZE + VHOST_USER_MAX_CONFIG_SIZE),
        FDS(0, 0), REPLY, PF(CONFIG)),
    REQ(SET_CONFIG, vhost_user_set_config,
        SIZE(VHOST_USER_CONFIG_HDR_SIZE,
             VHOST_USER_CONFIG_HDR_SIZE + VHOST_USER_MAX_CONFIG_SIZE),
        FDS(0, 0), NO_REPLY, PF(CONFIG)),
    REQ(SET_STATUS, vhost_user_set_status, U64, FDS(0, 0), NO_REPLY,
        PF(STATUS)),
    REQ(GET_STATUS, vhost_user_get_status, NONE, FDS(0, 0), REPLY,
        PF(STATUS)),

    /* Kept for later work: the dirty log and the backend channel. */
    REQ(SET_LOG_BASE, vhost_user_set_log_base, EXACT(struct vhost_user_log),
        FDS(1, 1), EMPTY_REPLY, PF(LOG_SHMFD)),
    REQ(SET_LOG_FD, vhost_user_set_log_fd, NONE, FDS(1, 1), NO_REPLY,
        PF(LOG_SHMFD)),
    REQ(SET_BACKEND_REQ_FD, vhost_user_set_backend_req_fd, NONE, FDS(1, 1),
        NO_REPLY, PF(BACKEND_REQ)),
    REQ(IOTLB_MSG, vhost_user_iotlb_msg, EXACT(struct vhost_iotlb_msg),
        FDS(0, 0), NO_REPLY, NO_PF),

    /* Postcopy migration (vhost-postcopy.h).  ADVISE's reply is the
     * userfaultfd alone; LISTEN and END are acknowledged (REPLY_ACK). */
    REQ(POSTCOPY_ADVISE, vhost_user_postcopy_advise, NONE, FDS(0, 0),
        EMPTY_REPLY, PF(PAGEFAULT)),
    REQ(POSTCOPY_LISTEN, vhost_user_postcopy_listen, NONE, FDS(0, 0),
        NO_REPLY, PF(PAGEFAULT)),
    REQ(POSTCOPY_END, vhost_user_postcopy_end, NONE, FDS(0, 0), NO_REPLY,
        PF(PAGEFAULT)),
#undef REQ
};
#undef SIZE
#undef FDS
#undef NONE
#undef U64
#undef STATE
#undef EXACT
#undef REPLY
#undef NO_REPLY
#undef EMPTY_REPLY
#undef PF
#undef NO_PF

/* Checks 'msg' against its row of the table.  Returns 0 or EINVAL, after
 * logging and counting. */
static int
vhost_user_check__(struct vhost_dev *dev, const struct vhost_user_msg *msg,
                   const struct vhost_user_req_def *def)
{
    if (msg->hdr.size < def->min_size || msg->hdr.size > def->max_size) {
        dev->counters.msgs_bad_size++;
        return vhost_user_reject__(dev, msg, "payload of %"PRIu32" bytes "
                                   "(expected %u to %u)", msg->hdr.size,
                                   def->min_size, def->max_size);
    }
    if (msg->fds_truncated
        || msg->n_fds < def->min_fds || msg->n_fds > def->max_fds) {
        dev->counters.msgs_bad_fds++;
        return vhost_user_reject__(dev, msg, "%s%zu fds (expected %u to %u)",
                                   msg->fds_truncated ? "more than " : "",
                                   msg->n_fds, def->min_fds, def->max_fds);
    }
    if (def->protocol_feature >= 0
        && !vhost_dev_has_protocol_feature(dev, def->protocol_feature)) {
        return vhost_user_reject__(dev, msg, "protocol feature %d not "
                                   "negotiated", def->protocol_feature);
    }
    return 0;
}

/* Handles 'msg', received for 'dev': checks it against the dispatch
 * table, runs its handler and updates readiness.  Returns
 * VHOST_USER_REPLY with '*reply' filled in when the frontend is owed a
 * reply or acknowledgement, VHOST_USER_CONTINUE when it is not, and
 * VHOST_USER_DISCONNECT when the connection must end.  Fds in 'msg' that
 * the handler did not take are left for the caller to close. */
enum vhost_user_verdict
vhost_user_dispatch(struct vhost_dev *dev, struct vhost_user_msg *msg,
                    struct vhost_user_reply *reply)
{
    uint32_t request = msg->hdr.request;
    const struct vhost_user_req_def *def
        = request < VHOST_USER_N_REQUESTS ? &vhost_user_reqs[request] : NULL;
    /* Decided before the handler runs: RESET_OWNER forgets the protocol
     * features. */
    bool want_ack = (msg->hdr.flags & VHOST_USER_NEED_REPLY_MASK)
                    && vhost_dev_has_protocol_feature(
                           dev, VHOST_USER_PROTOCOL_F_REPLY_ACK);
    int error;

    memset(reply, 0, sizeof *reply);
    reply->fd = -1;
    reply->hdr.request = request;
    reply->hdr.flags = VHOST_USER_VERSION | VHOST_USER_REPLY_MASK;

    dev->counters.msgs++;
    VLOG_DBG("%s: received %s (%"PRIu32"), %"PRIu32" bytes, %zu fds",
             dev->name, vhost_user_request_to_string(request), request,
             msg->hdr.size, msg->n_fds);

    /* Handlers read at most the payload's declared size; zero the rest so
     * that a short payload can never show a previous message's bytes. */
    memset(msg->payload.bytes + msg->hdr.size, 0,
           sizeof msg->payload - msg->hdr.size);

    if (vhost_user_postcopy_ack__(dev, msg)) {
        return VHOST_USER_CONTINUE;
    }
    if (!def || !def->handler) {
        dev->counters.msgs_unknown++;
        dev->counters.msgs_rejected++;
        VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: unsupported request %s "
                         "(%"PRIu32") ignored", dev->name,
                         vhost_user_request_to_string(request), request);
        if (want_ack) {
            vhost_user_reply_u64__(reply, ENOSYS);
            return VHOST_USER_REPLY;
        }
        return VHOST_USER_CONTINUE;
    }

    error = vhost_user_check__(dev, msg, def);
    if (!error) {
        error = def->handler(dev, msg, reply);
    }
    vhost_dev_update_ready(dev);

    if (error) {
        dev->counters.msgs_rejected++;
        close_fd_quietly(reply->fd);
        reply->fd = -1;
        reply->hdr.size = 0;
        if (want_ack && def->reply != VHOST_USER_REPLY_DATA) {
            vhost_user_reply_u64__(reply, error);
            return VHOST_USER_REPLY;
        }
        /* The frontend cannot learn of the failure any other way, and its
         * idea of the device would differ from ours. */
        VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: disconnecting the "
                         "frontend after a rejected %s", dev->name,
                         vhost_user_request_to_string(request));
        return VHOST_USER_DISCONNECT;
    }

    /* A reply without a want of one is postcopy's memory table answer. */
    if (def->reply != VHOST_USER_NO_REPLY || reply->hdr.size) {
        return VHOST_USER_REPLY;
    }
    if (want_ack) {
        vhost_user_reply_u64__(reply, 0);
        return VHOST_USER_REPLY;
    }
    return VHOST_USER_CONTINUE;
}
