/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed ring position log: see virtq-poslog.h.
 */

#include <config.h>
#include "virtq-poslog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "guest-mem.h"
#include "vhost-log.h"
#include "virtio-ring.h"
#include "virtio-ring-packed.h"
#include "virtq.h"

#define VIRTQ_POSLOG_MAGIC "ovsvhpl2"

/* The file: a header line's worth, then a slot per queue. */
struct virtq_poslog_file {
    char magic[8];
    uint32_t n_slots;
    uint8_t pad[52];
    struct virtq_poslog_slot slots[VHOST_MAX_QUEUES];
};
BUILD_ASSERT_DECL(sizeof(struct virtq_poslog_file)
                  == 64 + 64 * VHOST_MAX_QUEUES);

struct virtq_poslog {
    struct virtq_poslog_file *file;
    char *path;
    int fd;                     /* Open, with an exclusive flock. */
};

/* Opens the position log at 'path' for the port named 'name', creating it
 * if need be, and stores it in '*logp'.  A file that is not a log of this
 * layout (another version, a short write) is started afresh: it then
 * recovers nothing, which is what a missing log does too.  Returns 0 or a
 * positive errno value (EBUSY: another process has it open). */
int
virtq_poslog_open(const char *path, const char *name,
                  struct virtq_poslog **logp)
{
    struct virtq_poslog *log = calloc(1, sizeof *log);
    int error = 0;

    *logp = NULL;
    if (!log || !(log->path = strdup(path))) {
        free(log);
        return ENOMEM;
    }
    log->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log->fd < 0) {
        error = errno;
        goto fail;
    }
    if (flock(log->fd, LOCK_EX | LOCK_NB)) {
        error = errno == EWOULDBLOCK ? EBUSY : errno;
        goto fail;
    }

    struct stat st;
    if (fstat(log->fd, &st)) {
        error = errno;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        error = EINVAL;
        goto fail;
    }
    bool fresh = st.st_size != sizeof *log->file;
    if (fresh && (ftruncate(log->fd, 0)
                  || ftruncate(log->fd, sizeof *log->file))) {
        error = errno;
        goto fail;
    }
    void *map = mmap(NULL, sizeof *log->file, PROT_READ | PROT_WRITE,
                     MAP_SHARED, log->fd, 0);
    if (map == MAP_FAILED) {
        error = errno;
        goto fail;
    }
    log->file = map;
    if (fresh || memcmp(log->file->magic, VIRTQ_POSLOG_MAGIC, 8)
        || log->file->n_slots != VHOST_MAX_QUEUES) {
        if (!fresh) {
            VLOG_INFO("%s: ring position log %s is of another layout; "
                      "starting it afresh", name, path);
        }
        memset(log->file, 0, sizeof *log->file);
        log->file->n_slots = VHOST_MAX_QUEUES;
        memcpy(log->file->magic, VIRTQ_POSLOG_MAGIC, 8);
    }
    *logp = log;
    return 0;

fail:
    if (log->fd >= 0) {
        close(log->fd);
    }
    free(log->path);
    free(log);
    return error;
}

/* Closes 'log'.  The file stays while a slot in it is claimed, since a
 * frontend that never stopped its ring may meet this port's successor;
 * otherwise it is removed. */
void
virtq_poslog_close(struct virtq_poslog *log)
{
    if (!log) {
        return;
    }

    bool claimed = false;
    for (unsigned int i = 0; i < VHOST_MAX_QUEUES; i++) {
        claimed |= log->file->slots[i].started != 0;
    }
    if (!claimed) {
        unlink(log->path);
    }
    munmap(log->file, sizeof *log->file);
    close(log->fd);
    free(log->path);
    free(log);
}

/* Returns queue 'qid''s slot in 'log' (NULL if 'log' is NULL). */
struct virtq_poslog_slot *
virtq_poslog_slot(struct virtq_poslog *log, unsigned int qid)
{
    return log && qid < VHOST_MAX_QUEUES ? &log->file->slots[qid] : NULL;
}

/* Fills 'id' with the identity of 'vq''s ring in 'mem' (its 'pos' and
 * 'started' left zero).  Returns false if the ring is not mapped. */
static bool
virtq_poslog_identity__(const struct virtq *vq, const struct guest_mem *mem,
                        struct virtq_poslog_slot *id)
{
    const struct guest_mem_region *r = mem && vq->desc
                                       ? guest_mem_find_uva(mem, vq->desc_uva)
                                       : NULL;

    memset(id, 0, sizeof *id);
    if (!r) {
        return false;
    }
    id->size = vq->size;
    id->desc_gpa = vq->desc_gpa;
    id->driver_gpa = guest_mem_uva_to_gpa(mem, vq->avail_uva);
    id->device_gpa = vq->used_gpa;
    guest_mem_region_file(r, &id->mem_dev, &id->mem_ino);
    return true;
}

static bool
virtq_poslog_same_ring__(const struct virtq_poslog_slot *a,
                         const struct virtq_poslog_slot *b)
{
    return a->size == b->size && a->desc_gpa == b->desc_gpa
           && a->driver_gpa == b->driver_gpa
           && a->device_gpa == b->device_gpa
           && a->mem_dev == b->mem_dev && a->mem_ino == b->mem_ino;
}

/* True if packed descriptor flags 'flags' read as used in the lap with
 * wrap counter 'wrap' (§2.8.1: AVAIL and USED both equal to it). */
static bool
virtq_poslog_used_in__(uint16_t flags, bool wrap)
{
    return !!(flags & VRING_PACKED_DESC_F_AVAIL) == wrap
           && !!(flags & VRING_PACKED_DESC_F_USED) == wrap;
}

/* Finishes the burst that 'vq''s slot position 'pos' records, if the
 * backend died before handing it over (see "Exactness" in
 * virtq-poslog.h), and returns where the ring stands: the end of that
 * burst.  'head' is the logged head used descriptor (its id and length).
 * Guest-controlled: the head descriptor's flags, read once; whatever
 * they say, only the logged head goes back into the guest's ring. */
static uint32_t
virtq_poslog_finish__(struct virtq *vq, uint64_t pos, uint64_t head)
{
    uint32_t before = pos, after = pos >> 32;
    uint16_t used = before >> 16;
    uint16_t idx = used & 0x7fff;
    bool wrap = used >> 15;

    if (before == after || idx >= vq->size) {
        return after;
    }
    struct vring_packed_desc *ring = vq->desc;
    uint16_t flags = __atomic_load_n(&ring[idx].flags, __ATOMIC_ACQUIRE);
    /* The device sets USED to its wrap counter; the driver, making the
     * slot available in this lap, set it to the opposite, and making it
     * available again in the next lap sets it as the device did. */
    if (!!(flags & VRING_PACKED_DESC_F_USED) != wrap) {
        uint32_t len = head >> 32;
        uint16_t hflags = vring_packed_used_flags(wrap, len);

        /* Its id and length, logged with the positions, may or may not
         * be in the ring yet: hand it over as the dead burst would have. */
        ring[idx].id = (uint16_t) head;
        ring[idx].len = len;
        __atomic_store_n(&ring[idx].flags, hflags, __ATOMIC_RELEASE);
        vhost_log_rl(&vq->rl, VHOST_LOG_INFO,
                     "%s: vring %u: the last burst's used descriptors were "
                     "written but not handed over; handing them over",
                     vq->name, vq->index);
    }
    return after;
}

/* Looks for used descriptors ahead of 'vq''s used position, in the lap it
 * has not reached yet: a backend killed in a burst before the burst
 * logged its positions leaves them, and the ring then cannot be resumed
 * exactly.  Returns how many there are.  Guest-controlled: the flags,
 * which only decide what is logged. */
static unsigned int
virtq_poslog_strays__(const struct virtq *vq)
{
    const struct vring_packed_desc *ring = vq->desc;
    unsigned int n = 0;
    bool wrap = vq->used_wrap_counter;

    for (unsigned int i = 0, idx = vq->last_used_idx; i < vq->size; i++) {
        uint16_t flags = __atomic_load_n(&ring[idx].flags,
                                         __ATOMIC_RELAXED);
        n += virtq_poslog_used_in__(flags, wrap);
        if (++idx == vq->size) {
            idx = 0;
            wrap = !wrap;
        }
    }
    return n;
}

/* True if a backend ran 'vq' since its driver set it up: the first burst
 * after every start writes VRING_PACKED_EVENT_FLAG_DISABLE into the
 * device event area (virtq-packed.c), which only the device writes
 * (§2.8.10) and a driver setting a ring up zeroes.  A guest that resets
 * the device while no backend runs (a reboot, a driver reload) may put
 * its new rings at the old addresses in the same memory file, so the
 * log's identity matches a ring that is not the logged one. */
static bool
virtq_poslog_ran__(const struct virtq *vq)
{
    const struct vring_packed_event *device = vq->used;

    return device && __atomic_load_n(&device->flags, __ATOMIC_RELAXED)
                     == VRING_PACKED_EVENT_FLAG_DISABLE;
}

/* Called as packed ring 'vq' starts (SET_VRING_KICK), with its access lock
 * held, its base set and its addresses mapped through 'mem': claims
 * 'vq''s slot for this ring.  If the slot holds a started ring of the
 * same identity, the backend that wrote it died without a GET_VRING_BASE,
 * and the frontend's base is stale: the ring is moved to the logged
 * position, with a log line; unless not 'recover', when nothing of the
 * ring in guest memory may be read.  Returns VIRTQ_POSLOG_RECOVERED if that
 * changed it, VIRTQ_POSLOG_INEXACT if the log cannot be exact (see
 * virtq_poslog_strays__()), else VIRTQ_POSLOG_NONE (also for a split
 * ring or without a log). */
enum virtq_poslog_result
virtq_poslog_start(struct virtq *vq, const struct guest_mem *mem,
                   bool recover)
{
    struct virtq_poslog_slot *slot = vq->poslog_slot;
    struct virtq_poslog_slot id;
    enum virtq_poslog_result result = VIRTQ_POSLOG_NONE;

    vq->poslog = NULL;
    if (!slot || !vq->packed || !virtq_poslog_identity__(vq, mem, &id)) {
        return VIRTQ_POSLOG_NONE;
    }

    uint32_t base = virtq_get_base(vq);
    if (!recover) {
        /* Claimed without a look at the ring. */
    } else if (slot->started && virtq_poslog_same_ring__(slot, &id)
               && !virtq_poslog_ran__(vq)) {
        vhost_log_rl(&vq->rl, VHOST_LOG_INFO,
                     "%s: vring %u: the logged ring's device area was never "
                     "written: the driver set the ring up afresh (a reset "
                     "while no backend ran); keeping the frontend's base %#"
                     PRIx32, vq->name, vq->index, base);
    } else if (slot->started && virtq_poslog_same_ring__(slot, &id)) {
        uint32_t pos = virtq_poslog_finish__(vq, slot->pos, slot->head);
        uint16_t avail = pos, used = pos >> 16;

        if (pos == base) {
            /* The frontend knows: nothing to recover. */
        } else if (!virtq_packed_positions_ok(avail, used, vq->size)) {
            vhost_log_rl(&vq->rl, VHOST_LOG_WARN,
                         "%s: vring %u: logged position %#"PRIx32" does not "
                         "fit a ring of %u; keeping the frontend's base %#"
                         PRIx32, vq->name, vq->index, pos, vq->size, base);
        } else {
            vq->last_avail_idx = avail & 0x7fff;
            vq->avail_wrap_counter = avail >> 15;
            vq->last_used_idx = used & 0x7fff;
            vq->used_wrap_counter = used >> 15;
            vhost_log_rl(&vq->rl, VHOST_LOG_INFO,
                         "%s: vring %u: resuming at the logged position "
                         "(avail %u wrap %u, used %u wrap %u), not the "
                         "frontend's base %#"PRIx32": its backend stopped "
                         "without "
                         "GET_VRING_BASE", vq->name, vq->index,
                         vq->last_avail_idx, vq->avail_wrap_counter,
                         vq->last_used_idx, vq->used_wrap_counter, base);
            base = pos;
            result = VIRTQ_POSLOG_RECOVERED;
        }
        unsigned int strays = virtq_poslog_strays__(vq);
        if (strays) {
            vhost_log_rl(&vq->rl, VHOST_LOG_WARN,
                         "%s: vring %u: %u descriptors ahead of the logged "
                         "position read as used: the backend was killed "
                         "mid-burst, before it logged the burst, and the "
                         "ring's true position cannot be recovered exactly; "
                         "the guest's queue may stall until its driver "
                         "resets the device", vq->name, vq->index, strays);
            result = VIRTQ_POSLOG_INEXACT;
        }
    }

    /* Identity first, 'started' last: a kill in between leaves a slot
     * that claims nothing. */
    slot->started = 0;
    id.pos = (uint64_t) base << 32 | base;
    id.started = 0;
    *slot = id;
    __atomic_store_n(&slot->started, 1, __ATOMIC_RELEASE);
    vq->poslog_last = base;
    vq->poslog = slot;
    return result;
}

/* Releases 'vq''s slot: the frontend has learnt where the ring stands
 * (GET_VRING_BASE) or starts it afresh (a device reset).  The caller holds
 * the access lock. */
void
virtq_poslog_stop(struct virtq *vq)
{
    if (vq->poslog_slot) {
        __atomic_store_n(&vq->poslog_slot->started, 0, __ATOMIC_RELEASE);
    }
    vq->poslog = NULL;
}
