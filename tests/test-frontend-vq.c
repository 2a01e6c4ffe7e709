/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tfe_vq: the model guest driver of the test frontend (test-frontend.h,
 * "The guest driver of a split virtqueue" and "The guest driver of a
 * packed virtqueue").  A struct tfe_vq drives one vring that
 * tfe_vring_alloc() laid out in guest memory: it builds descriptor chains,
 * makes them available and reaps what the engine used, on a split ring
 * (VIRTIO 1.2 §2.7) or, with VIRTIO_F_RING_PACKED, a packed one (§2.8).
 *
 * The file runs: the driver state and the split ring's raw access; the
 * packed ring's raw access and its halves of adding chains and reading
 * used descriptors; then the API both layouts share, from
 * tfe_vq_add_chain() on, in which tfe_vq_add_chain(), tfe_vq_n_used(),
 * tfe_vq_get_used() and tfe_vq_peek_used() dispatch on 'vq->packed'.
 *
 * The driver reaches the engine only through guest memory and the vring's
 * eventfds; the messages that set the vring up are test-frontend.c's.
 */

#include <config.h>
#include "test-frontend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The guest driver of a split virtqueue. */

static uint16_t
load_acquire16(const uint16_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void
store_release16(uint16_t *p, uint16_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Forgets every chain: the driver state of a fresh ring (packed: at
 * position 0 with wrap counters 1, §2.8.1). */
static void
vq_reset_state__(struct tfe_vq *vq)
{
    vq->next_avail = 0;
    vq->next_used = 0;
    vq->avail_wrap = vq->used_wrap = true;
    vq->n_free_ids = vq->size;
    /* Ids start at the top, so that they do not follow positions. */
    vq->id_cursor = vq->size - 1;
    vq->n_extra = 0;
    vq->last_used_flags = 0;
    vq->order_head = vq->order_n = 0;
    vq->batch_left = 0;
    vq->last_batch = 0;
    vq->n_unordered = 0;
    for (unsigned int i = 0; i < vq->size; i++) {
        vq->free_next[i] = i + 1;
    }
    vq->free_head = 0;
    vq->n_free = vq->size;
    memset(vq->chains, 0, vq->size * sizeof *vq->chains);
    vq->arena_next = 0;
    vq->arena_inflight = 0;
    vq->arena_held = 0;
}

/* Zeroes the ring (including the event fields and used->flags) and forgets
 * every chain: the state to pair with SET_VRING_BASE 0 (packed:
 * TFE_PACKED_BASE_INIT) when a test sets the vring up again, which
 * tfe_vring_setup() then sends (the vring's 'has_base' is cleared). */
void
tfe_vq_reset(struct tfe_vq *vq)
{
    vq->fe->vrings[vq->index].has_base = false;
    memset(vq->desc, 0, tfe_vring_desc_size(vq->size));
    memset(vq->avail_flags, 0, tfe_vring_avail_size(vq->size));
    memset(vq->used_flags, 0, tfe_vring_used_size(vq->size));
    vq_reset_state__(vq);
}

/* Sets up 'vq' to drive vring 'index' of 'fe', which tfe_vring_alloc()
 * must have laid out, with an arena of 'arena_size' bytes of buffer space
 * in region 'arena_region'.  The header layout follows 'fe->features' as
 * sent with SET_FEATURES.  Leaves the ring itself alone: it is fresh (and
 * zeroed) guest memory, and the engine may have written used->flags
 * already.  Returns 0 or a negative errno value. */
int
tfe_vq_init(struct tfe_vq *vq, struct tfe *fe, uint32_t index,
            size_t arena_region, uint64_t arena_size)
{
    const struct tfe_vring *vr;
    void *arena;

    memset(vq, 0, sizeof *vq);
    if (index >= TFE_MAX_QUEUES || !fe->vrings[index].size || !fe->mem) {
        return -EINVAL;
    }
    vr = &fe->vrings[index];
    arena = tfe_mem_alloc(fe->mem, arena_region, arena_size, 4096);
    if (!arena) {
        return -ENOMEM;
    }
    vq->fe = fe;
    vq->mem = fe->mem;
    vq->index = index;
    vq->size = vr->size;
    vq->desc = vr->desc;
    vq->avail_flags = vr->avail;
    vq->avail_idx = vq->avail_flags + 1;
    vq->avail_ring = vq->avail_flags + 2;
    vq->used_flags = vr->used;
    vq->used_idx = vq->used_flags + 1;
    vq->used_ring = (struct tfe_used_elem *) (vq->used_flags + 2);
    vq->free_next = calloc(vq->size, sizeof *vq->free_next);
    vq->chains = calloc(vq->size, sizeof *vq->chains);
    vq->order = calloc(vq->size, sizeof *vq->order);
    if (!vq->free_next || !vq->chains || !vq->order) {
        abort();
    }
    vq->arena_gpa = tfe_mem_va_to_gpa(fe->mem, arena);
    vq->iova_offset = fe->iova_offset;
    vq->arena_size = arena_size;
    vq->mrg = (fe->features & FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF)) != 0;
    vq->packed = (fe->features & FEATURE_BIT(VIRTIO_F_RING_PACKED)) != 0;
    vq->in_order = (fe->features & FEATURE_BIT(VIRTIO_F_IN_ORDER)) != 0;
    vq->pdesc = vr->desc;
    vq->driver_event = vr->avail;
    vq->device_event = vr->used;
    vq->hdr_len = (vq->mrg || fe->features & FEATURE_BIT(VIRTIO_F_VERSION_1)
                   ? 12 : 10);
    vq_reset_state__(vq);
    return 0;
}

/* Frees what tfe_vq_init() allocated outside guest memory. */
void
tfe_vq_destroy(struct tfe_vq *vq)
{
    free(vq->free_next);
    free(vq->chains);
    free(vq->order);
    vq->free_next = NULL;
    vq->chains = NULL;
    vq->order = NULL;
}

/* Returns the guest physical address of 'size' bytes aligned to 'align'
 * in 'vq''s arena.  The arena is reused circularly; the bytes count as in
 * flight, and are charged to the next chain added or claimed.  Aborts if
 * the arena is too small for what is in flight: a test bug. */
uint64_t
tfe_vq_alloc(struct tfe_vq *vq, uint64_t size, uint64_t align)
{
    uint64_t off = (vq->arena_next + align - 1) & ~(align - 1);
    /* Bytes skipped (alignment, or the tail when wrapping) count as in
     * flight with the allocation: chains complete in the order they took
     * arena space, so what is in flight is then one circular stretch, and
     * "in flight + wanted <= size" really means the new bytes are free.
     * (Counting only the bytes handed out let a larger allocation after a
     * wrap overlap the oldest buffer still in flight.) */
    uint64_t skipped = off - vq->arena_next;

    if (off > vq->arena_size || size > vq->arena_size - off) {
        skipped = vq->arena_size - vq->arena_next;
        off = 0;
    }
    if (size > vq->arena_size
        || vq->arena_inflight + skipped + size > vq->arena_size) {
        fprintf(stderr, "tfe: vring %"PRIu32" arena of %"PRIu64" bytes is "
                "full (%"PRIu64" in flight, %"PRIu64" wanted)\n", vq->index,
                vq->arena_size, vq->arena_inflight, skipped + size);
        abort();
    }
    vq->arena_next = off + size;
    vq->arena_inflight += skipped + size;
    return vq->arena_gpa + off;
}

/* Returns the arena bytes allocated since the last chain took its share,
 * which the caller charges to a chain. */
static uint64_t
take_arena_pending__(struct tfe_vq *vq)
{
    uint64_t pending = vq->arena_inflight - vq->arena_held;

    vq->arena_held += pending;
    return pending;
}

struct tfe_desc *
tfe_vq_desc(struct tfe_vq *vq, unsigned int i)
{
    return &vq->desc[i % vq->size];
}

/* Takes a descriptor off the free list.  Returns its index or -ENOSPC. */
int
tfe_vq_take_desc(struct tfe_vq *vq)
{
    unsigned int id = vq->free_head;

    if (!vq->n_free) {
        return -ENOSPC;
    }
    vq->free_head = vq->free_next[id];
    vq->n_free--;
    return id;
}

static void
put_desc__(struct tfe_vq *vq, uint16_t id)
{
    vq->free_next[id] = vq->free_head;
    vq->free_head = id;
    vq->n_free++;
}

/* In order: remembers that 'id' was made available, after the others. */
static void
order_push__(struct tfe_vq *vq, uint16_t id)
{
    if (vq->in_order && vq->order_n < vq->size) {
        vq->order[(vq->order_head + vq->order_n++) % vq->size] = id;
    }
}

/* In order: returns how far from the oldest chain in flight 'id' is, or
 * -1 if it is none in flight. */
static int
order_find__(const struct tfe_vq *vq, uint16_t id)
{
    for (unsigned int k = 0; k < vq->order_n; k++) {
        if (vq->order[(vq->order_head + k) % vq->size] == id) {
            return k;
        }
    }
    return -1;
}

/* In order: the oldest chain in flight, taken. */
static uint16_t
order_pop__(struct tfe_vq *vq)
{
    uint16_t id = vq->order[vq->order_head];

    vq->order_head = (vq->order_head + 1) % vq->size;
    vq->order_n--;
    return id;
}

/* Records that the chain at 'head' holds descriptors 'ids' (returned to
 * the free list when the engine uses 'head') and the arena bytes
 * allocated since the last chain.  A 'head' >= the queue size records
 * nothing. */
void
tfe_vq_claim(struct tfe_vq *vq, uint16_t head, const uint16_t *ids,
             size_t n)
{
    struct tfe_vq_chain *c;

    if (head >= vq->size || n > TFE_VQ_MAX_SEGS) {
        return;
    }
    c = &vq->chains[head];
    c->arena_bytes = take_arena_pending__(vq);
    c->in_use = true;
    c->n_ids = n;
    memcpy(c->ids, ids, n * sizeof *ids);
    c->n_segs = 0;
}

/* Makes 'head' available: avail->ring[avail->idx % size] = head, then
 * avail->idx + 1. */
void
tfe_vq_push_avail(struct tfe_vq *vq, uint16_t head)
{
    order_push__(vq, head);
    vq->avail_ring[vq->next_avail % vq->size] = head;
    vq->next_avail++;
    /* Pairs with the engine's acquire of avail->idx: the ring entry and
     * the descriptors are visible before the new index. */
    store_release16(vq->avail_idx, vq->next_avail);
}

/* Writes 'idx' into avail->idx without touching our own idea of it. */
void
tfe_vq_set_avail_idx(struct tfe_vq *vq, uint16_t idx)
{
    store_release16(vq->avail_idx, idx);
}

void
tfe_vq_set_avail_flags(struct tfe_vq *vq, uint16_t flags)
{
    store_release16(vq->avail_flags, flags);
}

/* used_event: the avail ring entry after the last (VIRTIO 1.2 §2.7.10). */
void
tfe_vq_set_used_event(struct tfe_vq *vq, uint16_t v)
{
    store_release16(&vq->avail_ring[vq->size], v);
}

uint16_t
tfe_vq_used_flags(const struct tfe_vq *vq)
{
    return load_acquire16(vq->used_flags);
}

/* avail_event: the used ring entry after the last (VIRTIO 1.2 §2.7.10). */
uint16_t
tfe_vq_avail_event(const struct tfe_vq *vq)
{
    return load_acquire16((const uint16_t *) &vq->used_ring[vq->size]);
}

uint16_t
tfe_vq_used_idx(const struct tfe_vq *vq)
{
    return load_acquire16(vq->used_idx);
}

uint64_t
tfe_vq_used_gpa(const struct tfe_vq *vq)
{
    return tfe_mem_va_to_gpa(vq->mem, vq->used_flags);
}

/* Reads and clears the vring's call eventfd: returns how many times the
 * engine signalled it since the last call (0 if never). */
uint64_t
tfe_vq_calls(const struct tfe_vq *vq)
{
    int fd = vq->fe->vrings[vq->index].call_fd;
    uint64_t n = 0;

    if (fd < 0 || read(fd, &n, sizeof n) != sizeof n) {
        return 0;
    }
    return n;
}

/* The guest driver of a packed virtqueue (VIRTIO 1.2 §2.8). */

/* Advances ring position '*pos' with wrap counter '*wrap' by 'n' slots,
 * flipping the counter at the end of the ring (§2.8.1). */
static void
padvance__(const struct tfe_vq *vq, uint16_t *pos, bool *wrap,
           unsigned int n)
{
    unsigned int p = *pos + n % vq->size;

    if (n >= vq->size) {
        /* Whole laps flip the counter once each. */
        *wrap ^= (n / vq->size) & 1;
    }
    if (p >= vq->size) {
        p -= vq->size;
        *wrap = !*wrap;
    }
    *pos = p;
}

/* Returns the ring position 'k' slots past the driver's, and its wrap
 * counter in '*wrapp'. */
static uint16_t
pslot__(const struct tfe_vq *vq, unsigned int k, bool *wrapp)
{
    uint16_t pos = vq->next_avail;
    bool wrap = vq->avail_wrap;

    padvance__(vq, &pos, &wrap, k);
    *wrapp = wrap;
    return pos;
}

/* The AVAIL and USED bits that make a descriptor available in a lap with
 * wrap counter 'wrap' (§2.8.1: AVAIL equal to it, USED not). */
static uint16_t
pavail_bits__(bool wrap)
{
    return wrap ? TFE_PDESC_F_AVAIL : TFE_PDESC_F_USED;
}

/* True if 'flags' mark a descriptor used in a lap with wrap counter
 * 'wrap' (§2.8.1: AVAIL and USED both equal to it). */
static bool
pis_used__(uint16_t flags, bool wrap)
{
    return !!(flags & TFE_PDESC_F_AVAIL) == wrap
           && !!(flags & TFE_PDESC_F_USED) == wrap;
}

/* Returns the descriptor 'k' slots past the driver's position. */
struct tfe_pdesc *
tfe_vq_pdesc(struct tfe_vq *vq, unsigned int k)
{
    bool wrap;

    return &vq->pdesc[pslot__(vq, k, &wrap)];
}

/* Returns the AVAIL/USED flag bits that make the descriptor 'k' slots past
 * the driver's position available. */
uint16_t
tfe_vq_pavail(const struct tfe_vq *vq, unsigned int k)
{
    bool wrap;

    pslot__(vq, k, &wrap);
    return pavail_bits__(wrap);
}

/* Writes the descriptor 'k' slots past the driver's position: 'addr',
 * 'len' and 'id', then 'flags' exactly as given (OR in tfe_vq_pavail() to
 * make it available) with a release store, so that the fields are visible
 * before the flags (§2.8.21). */
void
tfe_vq_pwrite(struct tfe_vq *vq, unsigned int k, uint64_t addr,
              uint32_t len, uint16_t id, uint16_t flags)
{
    struct tfe_pdesc *d = tfe_vq_pdesc(vq, k);

    d->addr = addr;
    d->len = len;
    d->id = id;
    __atomic_store_n(&d->flags, flags, __ATOMIC_RELEASE);
}

/* Takes buffer id 'id' for a chain of 'n_slots' ring slots at the driver's
 * position, charging it the arena bytes allocated since the last chain,
 * and moves the driver's position past it.  An id at or above the queue
 * size, or one already in flight, is kept aside so that its used
 * descriptor can still be matched (tfe_vq_get_used() returns -EPROTO for
 * it). */
void
tfe_vq_pclaim(struct tfe_vq *vq, uint16_t id, unsigned int n_slots)
{
    uint64_t bytes = take_arena_pending__(vq);

    if (id < vq->size && !vq->chains[id].in_use) {
        struct tfe_vq_chain *c = &vq->chains[id];

        order_push__(vq, id);
        c->in_use = true;
        c->n_ids = n_slots;
        c->n_segs = 0;
        c->arena_bytes = bytes;
        vq->n_free_ids--;
    } else if (vq->n_extra < ARRAY_SIZE(vq->extra)) {
        vq->extra[vq->n_extra++] = (struct tfe_vq_extra) {
            .id = id, .n_slots = n_slots, .arena_bytes = bytes,
        };
    } else {
        fprintf(stderr, "tfe: too many odd buffer ids in flight\n");
        abort();
    }
    padvance__(vq, &vq->next_avail, &vq->avail_wrap, n_slots);
    vq->n_free -= MIN(n_slots, vq->n_free);
}

/* Sets the driver's positions, on a ring with nothing in flight, to what
 * SET_VRING_BASE value 'base' says: position in bits 0..14, wrap counter
 * in bit 15.  Rewrites every descriptor's flags as a ring that got there
 * would have them: used in this lap before the position, used in the
 * previous lap from it on.  (A zeroed ring is that for position 0 with
 * wrap counter 1, but not for others: in a lap with wrap counter 0, zero
 * flags mean used.) */
void
tfe_vq_pset_position(struct tfe_vq *vq, uint32_t base)
{
    uint16_t pos = (base & 0x7fff) % vq->size;
    bool wrap = (base >> 15) & 1;

    vq->next_avail = vq->next_used = pos;
    vq->avail_wrap = vq->used_wrap = wrap;
    for (unsigned int i = 0; i < vq->size; i++) {
        bool w = i < pos ? wrap : !wrap;

        __atomic_store_n(&vq->pdesc[i].flags,
                         w ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0,
                         __ATOMIC_RELEASE);
    }
}

/* Returns the driver's positions as QEMU encodes them for SET_VRING_BASE:
 * the next avail one in bits 0..15, the next used one in bits 16..31, each
 * an index with its wrap counter in the top bit. */
uint32_t
tfe_vq_pbase(const struct tfe_vq *vq)
{
    return (vq->next_avail | ((uint32_t) vq->avail_wrap << 15))
           | (vq->next_used | ((uint32_t) vq->used_wrap << 15)) << 16;
}

/* Writes the driver event suppression area (§2.8.10): 'off_wrap', then
 * 'flags' (TFE_PEVENT_*). */
void
tfe_vq_pset_event(struct tfe_vq *vq, uint16_t flags, uint16_t off_wrap)
{
    __atomic_store_n(&vq->driver_event->off_wrap, off_wrap,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&vq->driver_event->flags, flags, __ATOMIC_RELEASE);
    /* Pairs with the device's barrier between writing used descriptors
     * and reading these fields. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Returns the flags of the device event suppression area: what the
 * engine asks of our kicks. */
uint16_t
tfe_vq_pdevice_flags(const struct tfe_vq *vq)
{
    return __atomic_load_n(&vq->device_event->flags, __ATOMIC_ACQUIRE);
}

/* Returns the guest physical address of the descriptor table (the packed
 * ring). */
uint64_t
tfe_vq_ring_gpa(const struct tfe_vq *vq)
{
    return tfe_mem_va_to_gpa(vq->mem, vq->desc);
}

/* Takes a buffer id not in flight, or returns -ENOSPC. */
static int
ptake_id__(struct tfe_vq *vq)
{
    for (unsigned int i = 0; i < vq->size; i++) {
        unsigned int id = (vq->id_cursor + i) % vq->size;

        if (!vq->chains[id].in_use) {
            /* Step on by more than one, so ids keep shuffling against
             * ring positions. */
            vq->id_cursor = (id + 3) % vq->size;
            return id;
        }
    }
    return -ENOSPC;
}

/* tfe_vq_add_chain() for a packed ring. */
static int
add_chain_packed__(struct tfe_vq *vq, const struct tfe_seg *segs, size_t n,
                   bool writable, const struct tfe_chain_opts *opts)
{
    uint16_t flags = writable ? TFE_DESC_F_WRITE : 0;
    size_t n_slots = opts->indirect ? 1 : n;
    struct tfe_vq_chain *c;
    int id;

    if (vq->n_free < n_slots || !vq->n_free_ids) {
        return -ENOSPC;
    }
    id = ptake_id__(vq);
    if (id < 0) {
        return id;
    }
    if (opts->indirect) {
        /* §2.8.19: a table of descriptors used in order; no NEXT. */
        struct tfe_pdesc table[TFE_VQ_MAX_SEGS];
        uint64_t table_gpa = (opts->indirect_gpa ? opts->indirect_gpa
                              : tfe_vq_alloc(vq, sizeof table[0] * n, 16));

        for (size_t i = 0; i < n; i++) {
            table[i] = (struct tfe_pdesc) {
                .addr = segs[i].gpa + vq->iova_offset, .len = segs[i].len,
                .flags = flags,
            };
        }
        if (!tfe_mem_write(vq->mem, table_gpa, table, sizeof table[0] * n)) {
            return -EFAULT;
        }
        tfe_vq_pwrite(vq, 0, table_gpa + vq->iova_offset,
                      sizeof table[0] * n, id,
                      TFE_DESC_F_INDIRECT | tfe_vq_pavail(vq, 0));
    } else {
        /* Every descriptor but the head first, then the head, whose flags
         * make the whole chain available at once (§2.8.21). */
        for (size_t i = n; i-- > 0;) {
            uint16_t f = flags | (i + 1 < n ? TFE_DESC_F_NEXT : 0);
            uint16_t d_id = (i + 1 == n || vq->same_ids
                             ? id : TFE_PACKED_ID_POISON);

            tfe_vq_pwrite(vq, i, segs[i].gpa + vq->iova_offset,
                          segs[i].len, d_id, f | tfe_vq_pavail(vq, i));
        }
    }
    tfe_vq_pclaim(vq, id, n_slots);
    c = &vq->chains[id];
    c->n_segs = n;
    memcpy(c->segs, segs, n * sizeof *segs);
    return id;
}

/* Returns how many ring slots the chain with buffer id 'id' took, and
 * whether it is an extra (odd id).  Returns 0 if no chain has that id. */
static unsigned int
pchain_slots__(const struct tfe_vq *vq, uint16_t id, size_t *extrap)
{
    *extrap = SIZE_MAX;
    if (id < vq->size && vq->chains[id].in_use) {
        return vq->chains[id].n_ids;
    }
    for (size_t i = 0; i < vq->n_extra; i++) {
        if (vq->extra[i].id == id) {
            *extrap = i;
            return vq->extra[i].n_slots;
        }
    }
    return 0;
}

/* tfe_vq_n_used() for a packed ring: counts the used descriptors from the
 * driver's next used position on, without taking them, stepping past as
 * many ring slots for each as its buffer id's chain took (one for an id
 * not in flight), and looking at most one ring's worth of slots ahead. */
static unsigned int
n_used_packed__(const struct tfe_vq *vq)
{
    uint16_t pos = vq->next_used;
    bool wrap = vq->used_wrap;
    unsigned int n = 0;

    for (unsigned int seen = 0; seen < vq->size; n++) {
        const struct tfe_pdesc *d = &vq->pdesc[pos];
        size_t extra;
        unsigned int slots;

        if (!pis_used__(__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE),
                        wrap)) {
            break;
        }
        slots = pchain_slots__(vq, d->id, &extra);
        slots = slots ? slots : 1;
        seen += slots;
        padvance__(vq, &pos, &wrap, slots);
    }
    return n;
}

/* tfe_vq_peek_used() for a packed ring, outside an in-order batch: if
 * the descriptor at the driver's next used position is used in this lap,
 * stores its buffer id and length in '*elem' and returns 0, else returns
 * -EAGAIN.  Takes nothing. */
static int
peek_used_packed__(const struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    const struct tfe_pdesc *d = &vq->pdesc[vq->next_used];

    /* The flags with acquire: the id and length after them. */
    if (!pis_used__(__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE),
                    vq->used_wrap)) {
        return -EAGAIN;
    }
    elem->id = d->id;
    elem->len = d->len;
    return 0;
}

/* tfe_vq_get_used() for a packed ring: takes the next used descriptor
 * (with IN_ORDER, the next chain of its batch) into '*elem', moves the
 * driver's used position past the ring slots its chain took and frees
 * them, its buffer id and its arena bytes.  Returns 0, -EAGAIN if nothing
 * is used, or -EPROTO if the id is not in flight (nothing is taken) or
 * was claimed as an odd one by tfe_vq_pclaim() (taken all the same). */
static int
get_used_packed__(struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    const struct tfe_pdesc *d = &vq->pdesc[vq->next_used];
    unsigned int slots;
    size_t extra;

    if (vq->batch_left) {
        /* The next chain of a batch: its slots hold no used descriptor. */
        elem->id = order_pop__(vq);
        elem->len = --vq->batch_left ? 0 : vq->batch_len;
    } else if (peek_used_packed__(vq, elem)) {
        return -EAGAIN;
    } else {
        vq->last_used_flags = d->flags;
        if (vq->in_order) {
            int k = order_find__(vq, elem->id);

            vq->last_batch = k < 0 ? 1 : k + 1;
            if (k < 0) {
                vq->n_unordered++;
            } else {
                /* The batch's chains, oldest first. */
                vq->batch_len = elem->len;
                vq->batch_left = k;
                elem->id = order_pop__(vq);
                elem->len = k ? 0 : elem->len;
            }
        }
    }
    slots = pchain_slots__(vq, elem->id, &extra);
    if (!slots) {
        fprintf(stderr, "tfe: vring %"PRIu32" used buffer id %"PRIu32
                " is not in flight\n", vq->index, elem->id);
        return -EPROTO;
    }
    padvance__(vq, &vq->next_used, &vq->used_wrap, slots);
    vq->n_free += slots;
    if (extra != SIZE_MAX) {
        vq->arena_inflight -= vq->extra[extra].arena_bytes;
        vq->arena_held -= vq->extra[extra].arena_bytes;
        vq->extra[extra] = vq->extra[--vq->n_extra];
        return -EPROTO;
    }

    struct tfe_vq_chain *c = &vq->chains[elem->id];
    c->in_use = false;
    vq->n_free_ids++;
    vq->arena_inflight -= c->arena_bytes;
    vq->arena_held -= c->arena_bytes;
    c->arena_bytes = 0;
    return 0;
}

/* Makes available a chain of the 'n' buffers in 'segs', device-writable if
 * 'writable', as direct descriptors or, if 'opts->indirect', through an
 * indirect table of 'n' entries at 'opts->indirect_gpa' (or in the arena).
 * 'opts' may be null.  Returns the head or a negative errno value
 * (-ENOSPC: not enough free descriptors). */
int
tfe_vq_add_chain(struct tfe_vq *vq, const struct tfe_seg *segs, size_t n,
                 bool writable, const struct tfe_chain_opts *opts)
{
    static const struct tfe_chain_opts defaults;
    uint16_t flags = writable ? TFE_DESC_F_WRITE : 0;
    uint16_t ids[TFE_VQ_MAX_SEGS];
    size_t n_ids = 0;
    struct tfe_vq_chain *c;

    opts = opts ? opts : &defaults;
    if (!n || n > TFE_VQ_MAX_SEGS) {
        return -EINVAL;
    }
    if (vq->packed) {
        return add_chain_packed__(vq, segs, n, writable, opts);
    }
    if (vq->n_free < (opts->indirect ? 1 : n)) {
        return -ENOSPC;
    }
    if (opts->indirect) {
        struct tfe_desc table[TFE_VQ_MAX_SEGS];
        uint64_t table_gpa = (opts->indirect_gpa ? opts->indirect_gpa
                              : tfe_vq_alloc(vq, sizeof table[0] * n, 16));

        for (size_t i = 0; i < n; i++) {
            table[i] = (struct tfe_desc) {
                .addr = segs[i].gpa + vq->iova_offset, .len = segs[i].len,
                .flags = flags | (i + 1 < n ? TFE_DESC_F_NEXT : 0),
                .next = i + 1 < n ? i + 1 : 0,
            };
        }
        if (!tfe_mem_write(vq->mem, table_gpa, table, sizeof table[0] * n)) {
            return -EFAULT;
        }
        ids[n_ids++] = tfe_vq_take_desc(vq);
        vq->desc[ids[0]] = (struct tfe_desc) {
            .addr = table_gpa + vq->iova_offset, .len = sizeof table[0] * n,
            .flags = TFE_DESC_F_INDIRECT,
        };
    } else {
        for (size_t i = 0; i < n; i++) {
            ids[n_ids++] = tfe_vq_take_desc(vq);
        }
        for (size_t i = 0; i < n; i++) {
            vq->desc[ids[i]] = (struct tfe_desc) {
                .addr = segs[i].gpa + vq->iova_offset, .len = segs[i].len,
                .flags = flags | (i + 1 < n ? TFE_DESC_F_NEXT : 0),
                .next = i + 1 < n ? ids[i + 1] : 0,
            };
        }
    }
    tfe_vq_claim(vq, ids[0], ids, n_ids);
    c = &vq->chains[ids[0]];
    c->n_segs = n;
    memcpy(c->segs, segs, n * sizeof *segs);
    tfe_vq_push_avail(vq, ids[0]);
    return ids[0];
}

/* Splits 'total' bytes into pieces as 'opts' says and places them: all
 * contiguous from 'opts->gpa', or each apart in the arena.  Fills 'segs'
 * and returns how many. */
static size_t
place_buf__(struct tfe_vq *vq, size_t total, const struct tfe_buf_opts *opts,
            struct tfe_seg segs[TFE_VQ_MAX_SEGS])
{
    size_t n = opts->n_descs ? opts->n_descs : 1;
    size_t left = total;
    uint64_t gpa = opts->gpa;

    if (n > TFE_VQ_MAX_SEGS) {
        fprintf(stderr, "tfe: %zu descriptors are too many\n", n);
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;

        if (i + 1 == n) {
            len = left;
        } else if (opts->split) {
            len = MIN(opts->split[i], left);
        } else {
            len = total / n;
        }
        left -= len;
        segs[i].len = len;
        if (opts->gpa) {
            segs[i].gpa = gpa;
            gpa += len;
        } else {
            /* A few bytes apart, so that an engine that assumes pieces
             * are contiguous reads or writes the wrong bytes. */
            segs[i].gpa = tfe_vq_alloc(vq, len + 8, 64);
        }
    }
    return n;
}

/* Makes available a transmit chain holding the 'hdr_len' bytes of 'hdr'
 * followed by the 'len' bytes of 'pkt', laid out as 'opts' says ('opts'
 * may be null: one descriptor in the arena).  Returns the head or a
 * negative errno value. */
int
tfe_vq_post_tx(struct tfe_vq *vq, const void *hdr, size_t hdr_len,
               const void *pkt, size_t len, const struct tfe_buf_opts *opts)
{
    static const struct tfe_buf_opts defaults;
    struct tfe_seg segs[TFE_VQ_MAX_SEGS];
    struct tfe_chain_opts copts;
    uint8_t *bytes = malloc(hdr_len + len + 1);
    size_t n, off = 0;
    int head;

    opts = opts ? opts : &defaults;
    if (!bytes) {
        abort();
    }
    memcpy(bytes, hdr, hdr_len);
    memcpy(bytes + hdr_len, pkt, len);
    n = place_buf__(vq, hdr_len + len, opts, segs);
    for (size_t i = 0; i < n; i++) {
        if (!tfe_mem_write(vq->mem, segs[i].gpa, bytes + off, segs[i].len)) {
            free(bytes);
            return -EFAULT;
        }
        off += segs[i].len;
    }
    free(bytes);
    copts = (struct tfe_chain_opts) {
        .indirect = opts->indirect, .indirect_gpa = opts->indirect_gpa,
    };
    head = tfe_vq_add_chain(vq, segs, n, false, &copts);
    return head;
}

/* Makes available a receive chain of 'len' writable bytes laid out as
 * 'opts' says ('opts' may be null), filled with 0xa5 so that a test can
 * tell what the engine wrote.  Returns the head or a negative errno
 * value. */
int
tfe_vq_post_rx(struct tfe_vq *vq, uint32_t len,
               const struct tfe_buf_opts *opts)
{
    static const struct tfe_buf_opts defaults;
    struct tfe_seg segs[TFE_VQ_MAX_SEGS];
    struct tfe_chain_opts copts;
    size_t n;

    opts = opts ? opts : &defaults;
    n = place_buf__(vq, len, opts, segs);
    for (size_t i = 0; i < n; i++) {
        uint8_t *poison = malloc(segs[i].len + 1);

        if (!poison) {
            abort();
        }
        memset(poison, 0xa5, segs[i].len);
        if (!tfe_mem_write(vq->mem, segs[i].gpa, poison, segs[i].len)) {
            free(poison);
            return -EFAULT;
        }
        free(poison);
    }
    copts = (struct tfe_chain_opts) {
        .indirect = opts->indirect, .indirect_gpa = opts->indirect_gpa,
    };
    return tfe_vq_add_chain(vq, segs, n, true, &copts);
}

/* Returns how many used entries the engine has published that we have
 * not read. */
unsigned int
tfe_vq_n_used(const struct tfe_vq *vq)
{
    if (vq->packed) {
        return n_used_packed__(vq);
    }
    return (uint16_t) (tfe_vq_used_idx(vq) - vq->next_used);
}

/* Reads the next used entry into '*elem' and returns its chain's
 * descriptors to the free list.  Returns 0, -EAGAIN if there is none, or
 * -EPROTO (with '*elem' filled in) if its id is not the head of a chain in
 * flight. */
int
tfe_vq_get_used(struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    struct tfe_vq_chain *c;

    if (vq->packed) {
        return get_used_packed__(vq, elem);
    }
    /* tfe_vq_n_used() acquires used->idx: the entry is read after it. */
    if (!tfe_vq_n_used(vq)) {
        return -EAGAIN;
    }
    if (vq->batch_left) {
        /* The next chain of a batch: its used entry was not written. */
        elem->id = order_pop__(vq);
        elem->len = --vq->batch_left ? 0 : vq->batch_len;
    } else {
        *elem = vq->used_ring[vq->next_used % vq->size];
        if (vq->in_order) {
            int k = order_find__(vq, elem->id);

            vq->last_batch = k < 0 ? 1 : k + 1;
            if (k < 0 || (unsigned int) k >= tfe_vq_n_used(vq)) {
                /* Unknown, or a batch longer than the used index says. */
                vq->n_unordered++;
            } else {
                vq->batch_len = elem->len;
                vq->batch_left = k;
                elem->id = order_pop__(vq);
                elem->len = k ? 0 : elem->len;
            }
        }
    }
    vq->next_used++;
    if (elem->id >= vq->size || !vq->chains[elem->id].in_use) {
        return -EPROTO;
    }
    c = &vq->chains[elem->id];
    for (size_t i = 0; i < c->n_ids; i++) {
        put_desc__(vq, c->ids[i]);
    }
    c->in_use = false;
    vq->arena_inflight -= c->arena_bytes;
    vq->arena_held -= c->arena_bytes;
    c->arena_bytes = 0;
    return 0;
}

/* Stores in '*elem' the next used entry without taking it.  Returns 0 or
 * -EAGAIN if there is none. */
int
tfe_vq_peek_used(const struct tfe_vq *vq, struct tfe_used_elem *elem)
{
    if (vq->batch_left) {
        elem->id = vq->order[vq->order_head];
        elem->len = vq->batch_left == 1 ? vq->batch_len : 0;
        return 0;
    }
    if (vq->packed) {
        return peek_used_packed__(vq, elem);
    }
    if (!tfe_vq_n_used(vq)) {
        return -EAGAIN;
    }
    *elem = vq->used_ring[vq->next_used % vq->size];
    return 0;
}

/* Copies up to 'len' bytes of the buffers of the chain at 'head' (as last
 * built by tfe_vq_add_chain(); still readable just after the chain is
 * used) into 'buf'.  Returns how many bytes were copied. */
size_t
tfe_vq_read_chain(const struct tfe_vq *vq, uint16_t head, size_t len,
                  uint8_t *buf)
{
    const struct tfe_vq_chain *c = &vq->chains[head % vq->size];
    size_t done = 0;

    for (size_t i = 0; i < c->n_segs && done < len; i++) {
        size_t n = MIN(len - done, c->segs[i].len);

        if (!tfe_mem_read(vq->mem, c->segs[i].gpa, buf + done, n)) {
            break;
        }
        done += n;
    }
    return done;
}

/* Receives one packet from a receive vring: the next used entry and, with
 * MRG_RXBUF, as many more as the num_buffers in its header says.  Copies
 * the header and packet, up to 'size' bytes, into 'buf' and stores the
 * length the engine reported in '*lenp' and the buffers used in
 * '*n_bufsp'.  Returns 0, -EAGAIN if nothing was used, or -EPROTO for a
 * malformed result (a bad id, a short first buffer, num_buffers of 0 or
 * more than were used). */
int
tfe_vq_recv(struct tfe_vq *vq, uint8_t *buf, size_t size, size_t *lenp,
            unsigned int *n_bufsp)
{
    struct tfe_used_elem elem;
    unsigned int n_bufs = 1;
    size_t total = 0;
    int error;

    *lenp = 0;
    *n_bufsp = 0;
    for (unsigned int i = 0; i < n_bufs; i++) {
        error = tfe_vq_get_used(vq, &elem);
        if (error == -EAGAIN && i) {
            fprintf(stderr, "tfe: num_buffers %u but only %u used\n",
                    n_bufs, i);
            return -EPROTO;
        } else if (error) {
            return error;
        }
        if (total < size) {
            tfe_vq_read_chain(vq, elem.id, MIN(elem.len, size - total),
                              buf + total);
        }
        total += elem.len;
        if (!i && vq->mrg) {
            uint16_t nb;

            if (elem.len < 12 || size < 12) {
                fprintf(stderr, "tfe: first buffer of %"PRIu32" bytes\n",
                        elem.len);
                return -EPROTO;
            }
            memcpy(&nb, buf + 10, sizeof nb);
            if (!nb) {
                fprintf(stderr, "tfe: num_buffers is 0\n");
                return -EPROTO;
            }
            n_bufs = nb;
        }
    }
    *lenp = total;
    *n_bufsp = n_bufs;
    return 0;
}
