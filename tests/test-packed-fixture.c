/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: the fixture shared by test-packed-*.c (see
 * test-packed.h): the embedder's buffers, a port with two queue pairs,
 * packets, the guest side of both directions, statistics, round trips and a
 * small deterministic generator.
 */

#include <config.h>

#include "test-packed.h"

bool
pk_palloc_alloc(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    struct palloc *pa = aux;

    if (!pa->fail_after) {
        pa->n_failed++;
        return false;
    }
    if (pa->fail_after > 0) {
        pa->fail_after--;
    }
    pa->n_alloc++;
    pkt->data = malloc(len ? len : 1);
    if (!pkt->data) {
        abort();
    }
    pkt->size = len;
    pkt->handle = pkt->data;
    return true;
}

void
pk_palloc_free(void *aux, struct vhost_pkt *pkt)
{
    struct palloc *pa = aux;

    pa->n_free++;
    free(pkt->handle);
}

/* Fixture. */

struct tfe_mem *
pk_mem_create(void)
{
    struct tfe_mem *mem = tfe_mem_create();

    TU_CHECK_EQ(tfe_mem_add(mem, 0, PK_REGION_SIZE, 0), 0);
    TU_CHECK_EQ(tfe_mem_add(mem, PK_GPA1, PK_REGION_SIZE, 64 << 10), 1);
    TU_CHECK_EQ(tfe_mem_add_adjacent(mem, PK_SMALL_REGION_SIZE, 4096), 2);
    TU_CHECK_EQ(tfe_mem_add_adjacent(mem, PK_SMALL_REGION_SIZE, 0), 3);
    return mem;
}

/* Boundaries between adjacent regions: 1|2 (transmit buffers) and 2|3
 * (receive buffers). */
uint64_t
pk_boundary_tx(const struct pk *pk)
{
    return tfe_mem_boundary(pk->fe->mem, 1);
}

uint64_t
pk_boundary_rx(const struct pk *pk)
{
    return tfe_mem_boundary(pk->fe->mem, 2);
}

uint64_t
pk_mem_end(const struct pk *pk)
{
    return tfe_mem_boundary(pk->fe->mem, 3);
}

/* Starts an engine with one server port of two queue pairs offering
 * PK_OFFERED, connects a frontend and brings the device up with 'cfg'. */
void
pk_start(struct pk *pk, const char *name, const struct pk_cfg *cfg)
{
    struct vhost_port_options opts;
    struct tfe_setup setup;
    char features[512];

    memset(pk, 0, sizeof *pk);
    pk->fds0 = tu_count_fds();
    pk->threads0 = tu_count_threads();
    tu_events_init(&pk->ev);
    pk->path = tu_path(name);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = pk->path;
    opts.mode = VHOST_PORT_SERVER;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk->ev;
    opts.state_path = cfg->state_path;
    TU_CHECK_OK(vhost_engine_create(&pk->engine));
    TU_CHECK_OK(vhost_engine_start(pk->engine));
    TU_CHECK_OK(vhost_port_create(pk->engine, &opts, &pk->port));

    pk->fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk->fe, pk->path));
    TU_CHECK(tu_wait_port(pk->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));

    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features & ~F(VIRTIO_F_RING_PACKED);
    setup.packed = (cfg->features & F(VIRTIO_F_RING_PACKED)) != 0;
    setup.queue_size = cfg->queue_size;
    setup.log_used = cfg->log_used;
    setup.used_align = cfg->used_align;
    for (unsigned int q = 0; q < 4; q++) {
        pk->fe->vrings[q].has_base = cfg->has_base;
        pk->fe->vrings[q].base = cfg->base;
    }
    TU_CHECK_OK(tfe_setup_device(pk->fe, 2, &setup));
    TU_CHECK_EQ(pk->fe->features
                & ~FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES),
                cfg->features & PK_OFFERED);
    TU_CHECK(tu_port_info(pk->port).ready);
    tu_log("device up, features: %s",
           vhost_features_to_string(pk->fe->features, features,
                                    sizeof features));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(pk->port, q).ready);
        TU_CHECK_OK(tfe_vq_init(&pk->vq[q], pk->fe, q, q % 2,
                                PK_ARENA_SIZE));
        if (cfg->has_base && pk->vq[q].packed) {
            tfe_vq_pset_position(&pk->vq[q], cfg->base);
        }
    }
    pk->hdr_len = pk->vq[0].hdr_len;
    pk->mrg = pk->vq[0].mrg;
    pk->packed = pk->vq[0].packed;
    TU_CHECK_EQ(pk->packed, (cfg->features & F(VIRTIO_F_RING_PACKED)) != 0);
    pk->pa.fail_after = -1;
    pk->alloc = (struct vhost_pkt_alloc) {
        .alloc = pk_palloc_alloc, .free = pk_palloc_free, .aux = &pk->pa,
    };
}

/* Tears 'pk' down and checks that no fd, thread or mapping leaked.
 * Fixtures started one inside another must finish in reverse order. */
void
pk_finish(struct pk *pk)
{
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_destroy(&pk->vq[q]);
    }
    tfe_destroy(pk->fe);
    vhost_port_destroy(pk->port);
    vhost_engine_destroy(pk->engine);
    TU_CHECK_EQ(tu_count_fds(), pk->fds0);
    TU_CHECK_EQ(tu_threads_settle(pk->threads0), pk->threads0);
    tu_events_destroy(&pk->ev);
    free(pk->path);
}

struct pk_cfg
pk_cfg_features(uint64_t features)
{
    return (struct pk_cfg) { .features = features };
}

struct pk_cfg
pk_cfg_sized(uint64_t features, unsigned int queue_size)
{
    return (struct pk_cfg) { .features = features, .queue_size = queue_size };
}

/* Packets. */

/* Returns a new packet of 'len' bytes (at least 18): an Ethernet header to
 * a 'kind' destination, the packet's sequence number, then a pattern that
 * depends on both. */
uint8_t *
pk_new_pkt(struct pk *pk, size_t len, enum mac_kind kind)
{
    static const uint8_t dsts[][6] = {
        [MAC_UNICAST] = { 0x02, 0, 0, 0, 0, 0x01 },
        [MAC_MULTICAST] = { 0x01, 0x00, 0x5e, 0, 0, 0x01 },
        [MAC_BROADCAST] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
    };
    static const uint8_t src[6] = { 0x02, 0, 0, 0, 0, 0x02 };
    uint8_t *p = malloc(len);
    uint32_t seq = pk->seq++;

    if (!p || len < 18) {
        abort();
    }
    memcpy(p, dsts[kind], 6);
    memcpy(p + 6, src, 6);
    p[12] = 0x08;
    p[13] = 0x00;
    memcpy(p + 14, &seq, sizeof seq);
    for (size_t i = 18; i < len; i++) {
        p[i] = (uint8_t) (seq * 131 + i * 7 + (i >> 8));
    }
    return p;
}

void
pk_check_bytes(const uint8_t *got, const uint8_t *exp, size_t len,
               const char *what)
{
    for (size_t i = 0; i < len; i++) {
        if (got[i] != exp[i]) {
            TU_FAIL("%s: byte %zu of %zu is %#x, expected %#x", what, i,
                    len, got[i], exp[i]);
        }
    }
}

void
pk_check_pkt(const struct vhost_pkt *got, const uint8_t *exp, size_t len,
             const char *what)
{
    if (got->len != len) {
        TU_FAIL("%s: length %"PRIu32", expected %zu", what, got->len, len);
    }
    if (len && !got->data) {
        TU_FAIL("%s: no data", what);
    }
    if (got->size < got->len) {
        TU_FAIL("%s: length %"PRIu32" in a buffer of %"PRIu32, what,
                got->len, got->size);
    }
    pk_check_bytes(got->data, exp, len, what);
}

void
pk_check_ol(const struct vhost_offload *got, const struct vhost_offload *exp,
            const char *what)
{
    static const struct vhost_offload zero;

    exp = exp ? exp : &zero;
    if (got->flags != exp->flags || got->gso_type != exp->gso_type
        || got->hdr_len != exp->hdr_len || got->gso_size != exp->gso_size
        || got->csum_start != exp->csum_start
        || got->csum_offset != exp->csum_offset) {
        TU_FAIL("%s: offload {flags %#x gso_type %#x hdr_len %u gso_size %u "
                "csum_start %u csum_offset %u}, expected {%#x %#x %u %u %u "
                "%u}", what, got->flags, got->gso_type, got->hdr_len,
                got->gso_size, got->csum_start, got->csum_offset,
                exp->flags, exp->gso_type, exp->hdr_len, exp->gso_size,
                exp->csum_start, exp->csum_offset);
    }
}

/* Frees the buffers in 'pkts[0..n)': every entry whose 'data' is not NULL
 * is the caller's again after a dequeue, packet or not. */
void
pk_release_pkts(struct vhost_pkt *pkts, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i].handle);
        pkts[i].handle = pkts[i].data = NULL;
    }
}

/* Guest side. */

int
pk_tx_post(struct pk *pk, unsigned int qp, const struct tfe_net_hdr *hdr,
           const uint8_t *pkt, size_t len, const struct tfe_buf_opts *opts)
{
    static const struct tfe_net_hdr zero;
    int id = tfe_vq_post_tx(&pk->vq[TX(qp)], hdr ? hdr : &zero,
                            pk->hdr_len, pkt, len, opts);

    if (id < 0) {
        TU_FAIL("posting a %zu-byte packet on vring %u: %s", len, TX(qp),
                tu_strerror(id));
    }
    return id;
}

int
pk_rx_post(struct pk *pk, unsigned int qp, uint32_t len,
           const struct tfe_buf_opts *opts)
{
    int id = tfe_vq_post_rx(&pk->vq[RX(qp)], len, opts);

    if (id < 0) {
        TU_FAIL("posting a %"PRIu32"-byte buffer on vring %u: %s", len,
                RX(qp), tu_strerror(id));
    }
    return id;
}

/* Dequeues up to 'n' packets from queue pair 'qp' into 'pkts' (emptied
 * first, so the engine allocates every buffer). */
unsigned int
pk_dq(struct pk *pk, unsigned int qp, struct vhost_pkt *pkts, unsigned int n)
{
    memset(pkts, 0, n * sizeof *pkts);
    return vhost_dequeue_burst(pk->port, qp, pkts, n, &pk->alloc);
}

unsigned int
pk_enq1(struct pk *pk, unsigned int qp, const uint8_t *pkt, size_t len,
        const struct vhost_offload *ol)
{
    struct vhost_pkt p = { .data = (uint8_t *) pkt, .len = len,
                           .size = len };

    if (ol) {
        p.ol = *ol;
    }
    return vhost_enqueue_burst(pk->port, qp, &p, 1);
}

/* Reads the next used element of 'vq' into '*e' and, on a packed ring,
 * checks its flags exactly (USED_FLAGS).  Returns tfe_vq_get_used()'s
 * result. */
int
pk_get_used(struct tfe_vq *vq, struct tfe_used_elem *e, const char *what)
{
    bool wrap = vq->used_wrap;
    bool in_batch = vq->batch_left > 0;     /* No descriptor of its own. */
    int error = tfe_vq_get_used(vq, e);

    if (vq->packed && error != -EAGAIN && !in_batch
        && vq->last_used_flags != USED_FLAGS(wrap, e->len)) {
        TU_FAIL("%s: vring %"PRIu32": used descriptor {id %"PRIu32", len "
                "%"PRIu32"} has flags %#x, expected %#x", what, vq->index,
                e->id, e->len, vq->last_used_flags,
                USED_FLAGS(wrap, e->len));
    }
    return error;
}

/* Checks that the next used element of 'vq' is 'id' with 'len'.  An 'id'
 * the driver cannot know (at or above the queue size, or in flight twice)
 * is accepted with -EPROTO. */
void
pk_expect_used(struct tfe_vq *vq, unsigned int id, uint32_t len)
{
    struct tfe_used_elem e;
    int error = pk_get_used(vq, &e, "expect_used");

    if (error == -EAGAIN) {
        TU_FAIL("vring %"PRIu32": no used element, expected id %u",
                vq->index, id);
    }
    if (e.id != id || e.len != len) {
        TU_FAIL("vring %"PRIu32": used element {id %"PRIu32", len %"PRIu32
                "}, expected {id %u, len %"PRIu32"}", vq->index, e.id,
                e.len, id, len);
    }
    if (id < vq->size && error && error != -EPROTO) {
        TU_FAIL("vring %"PRIu32": used element %u: %s", vq->index, id,
                tu_strerror(error));
    }
}

void
pk_expect_no_used(struct tfe_vq *vq)
{
    struct tfe_used_elem e;

    if (!tfe_vq_peek_used(vq, &e)) {
        if (vq->packed) {
            tu_log("driver: used %u wrap %d, avail %u wrap %d; flags %#x",
                   vq->next_used, vq->used_wrap, vq->next_avail,
                   vq->avail_wrap, vq->pdesc[vq->next_used].flags);
        }
        TU_FAIL("vring %"PRIu32": unexpected used element {id %"PRIu32
                ", len %"PRIu32"}", vq->index, e.id, e.len);
    }
}

/* The header the engine should write for 'ol' and 'num_buffers'. */
void
pk_build_hdr(uint8_t hdr[12], const struct vhost_offload *ol,
             uint16_t num_buffers)
{
    struct tfe_net_hdr h = {
        .flags = ol ? ol->flags : 0,
        .gso_type = ol ? ol->gso_type : 0,
        .hdr_len = ol ? ol->hdr_len : 0,
        .gso_size = ol ? ol->gso_size : 0,
        .csum_start = ol ? ol->csum_start : 0,
        .csum_offset = ol ? ol->csum_offset : 0,
        .num_buffers = num_buffers,
    };

    BUILD_ASSERT_DECL(sizeof h == 12);
    memcpy(hdr, &h, 12);
}

/* Receives the next packet on 'vq': its used elements (checked one by one,
 * flags included), with MRG_RXBUF as many as num_buffers says.  Copies up
 * to 'size' bytes of header and packet into 'buf'; returns the total used
 * length and stores the buffers taken in '*n_bufsp' and the first id in
 * '*firstp'. */
size_t
pk_recv_pkt(struct tfe_vq *vq, uint8_t *buf, size_t size,
            unsigned int *n_bufsp, uint16_t *firstp, const char *what)
{
    unsigned int n_bufs = 1;
    size_t total = 0;

    for (unsigned int i = 0; i < n_bufs; i++) {
        struct tfe_used_elem e;
        int error = pk_get_used(vq, &e, what);

        if (error) {
            TU_FAIL("%s: vring %"PRIu32": buffer %u of %u: %s", what,
                    vq->index, i + 1, n_bufs, tu_strerror(error));
        }
        if (!i) {
            *firstp = e.id;
        }
        if (total < size) {
            tfe_vq_read_chain(vq, e.id, MIN(e.len, size - total),
                              buf + total);
        }
        total += e.len;
        if (!i && vq->mrg) {
            uint16_t nb;

            if (e.len < 12 || size < 12) {
                TU_FAIL("%s: first buffer of %"PRIu32" bytes", what, e.len);
            }
            memcpy(&nb, buf + 10, sizeof nb);
            if (!nb) {
                TU_FAIL("%s: num_buffers is 0", what);
            }
            n_bufs = nb;
        }
    }
    *n_bufsp = n_bufs;
    return total;
}

/* Receives the next packet on queue pair 'qp' and checks it: header from
 * 'ol' (zero if null) with num_buffers, used lengths, the 'len' bytes of
 * 'pkt', and 'n_bufs' buffers if nonzero.  Without MRG_RXBUF, also checks
 * that the engine wrote nothing past the packet in its buffer. */
void
pk_rx_expect(struct pk *pk, unsigned int qp, const uint8_t *pkt, size_t len,
             const struct vhost_offload *ol, unsigned int n_bufs,
             const char *what)
{
    struct tfe_vq *vq = &pk->vq[RX(qp)];
    size_t cap = pk->hdr_len + len + 64, got_len;
    uint8_t *buf = malloc(cap);
    uint8_t hdr[12];
    unsigned int got_bufs;
    uint16_t first;

    if (!buf) {
        abort();
    }
    got_len = pk_recv_pkt(vq, buf, cap, &got_bufs, &first, what);
    if (got_len != pk->hdr_len + len) {
        TU_FAIL("%s: used length %zu, expected %u + %zu", what, got_len,
                pk->hdr_len, len);
    }
    if (n_bufs && got_bufs != n_bufs) {
        TU_FAIL("%s: took %u buffers, expected %u", what, got_bufs, n_bufs);
    }
    pk_build_hdr(hdr, ol, pk->mrg ? got_bufs : 1);
    pk_check_bytes(buf, hdr, pk->hdr_len, what);
    pk_check_bytes(buf + pk->hdr_len, pkt, len, what);

    if (!pk->mrg) {
        const struct tfe_vq_chain *c = &vq->chains[first];
        size_t total = 0, tail;
        uint8_t *all;

        for (size_t i = 0; i < c->n_segs; i++) {
            total += c->segs[i].len;
        }
        tail = MIN(total - got_len, 64);
        all = malloc(got_len + tail + 1);
        if (!all) {
            abort();
        }
        tfe_vq_read_chain(vq, first, got_len + tail, all);
        for (size_t i = got_len; i < got_len + tail; i++) {
            if (all[i] != 0xa5) {
                TU_FAIL("%s: the engine wrote byte %zu of the buffer, past "
                        "the %zu it reported", what, i, got_len);
            }
        }
        free(all);
    }
    free(buf);
}

/* Statistics. */

struct vhost_queue_stats
pk_get_stats(struct pk *pk, unsigned int vring)
{
    struct vhost_queue_stats s;

    memset(&s, 0, sizeof s);
    TU_CHECK_OK(vhost_port_get_queue_stats(pk->port, vring, &s));
    return s;
}

/* Adds a 'len'-byte packet to the expected statistics 'e'. */
void
pk_stats_add(struct vhost_queue_stats *e, const uint8_t *pkt, size_t len)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    e->packets++;
    e->bytes += len;
    if (len >= 6 && !memcmp(pkt, bcast, 6)) {
        e->broadcast++;
    } else if (len >= 6 && pkt[0] & 1) {
        e->multicast++;
    }
    if (len < 64) {
        e->undersize++;
    } else if (len == 64) {
        e->size_64++;
    } else if (len <= 127) {
        e->size_65_127++;
    } else if (len <= 255) {
        e->size_128_255++;
    } else if (len <= 511) {
        e->size_256_511++;
    } else if (len <= 1023) {
        e->size_512_1023++;
    } else if (len <= 1518) {
        e->size_1024_1518++;
    } else {
        e->size_1519_max++;
    }
}

/* Checks the packet counters, drops and 'broken' of 'got' against 'e'. */
void
pk_compare_stats(unsigned int vring, const struct vhost_queue_stats *s,
                 const struct vhost_queue_stats *e, bool notifications)
{
    CHECK_STAT(vring, s, e, packets);
    CHECK_STAT(vring, s, e, bytes);
    CHECK_STAT(vring, s, e, multicast);
    CHECK_STAT(vring, s, e, broadcast);
    CHECK_STAT(vring, s, e, undersize);
    CHECK_STAT(vring, s, e, size_64);
    CHECK_STAT(vring, s, e, size_65_127);
    CHECK_STAT(vring, s, e, size_128_255);
    CHECK_STAT(vring, s, e, size_256_511);
    CHECK_STAT(vring, s, e, size_512_1023);
    CHECK_STAT(vring, s, e, size_1024_1518);
    CHECK_STAT(vring, s, e, size_1519_max);
    CHECK_STAT(vring, s, e, rarps_injected);
    if (notifications) {
        CHECK_STAT(vring, s, e, guest_notifications);
        CHECK_STAT(vring, s, e, notifications_suppressed);
    }
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s->drops[r] != e->drops[r]) {
            TU_FAIL("vring %u stats: drops[%s] is %"PRIu64", expected "
                    "%"PRIu64, vring, vhost_drop_reason_to_string(r),
                    s->drops[r], e->drops[r]);
        }
    }
    if (s->broken != e->broken) {
        TU_FAIL("vring %u stats: broken is %d, expected %d", vring,
                s->broken, e->broken);
    }
}

void
pk_check_stats(struct pk *pk, unsigned int vring,
               const struct vhost_queue_stats *e)
{
    struct vhost_queue_stats s = pk_get_stats(pk, vring);

    pk_compare_stats(vring, &s, e, false);
}

uint64_t
pk_total_drops(const struct vhost_queue_stats *s)
{
    uint64_t n = 0;

    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        n += s->drops[r];
    }
    return n;
}

/* The engine polls, so it asks the driver not to kick it: device event
 * suppression flags DISABLE (§2.8.10). */
void
pk_check_no_kicks(const struct tfe_vq *vq)
{
    uint16_t flags = tfe_vq_pdevice_flags(vq);

    if (flags != TFE_PEVENT_DISABLE) {
        TU_FAIL("vring %"PRIu32": device event suppression flags %#x, "
                "expected DISABLE (1)", vq->index, flags);
    }
}

/* Logs what the engine has put in vring 'vring' beyond what the driver has
 * read, and its drop counters, to explain a failure. */
void
pk_dump_vring(struct pk *pk, unsigned int vring)
{
    const struct tfe_vq *vq = &pk->vq[vring];
    struct vhost_queue_stats s = pk_get_stats(pk, vring);

    tu_log("vring %u: driver avail position %u wrap %d, used position %u "
           "wrap %d, %u used elements unread", vring, vq->next_avail,
           vq->avail_wrap, vq->next_used, vq->used_wrap,
           tfe_vq_n_used(vq));
    for (unsigned int i = 0; i < vq->size && i < 16; i++) {
        const struct tfe_pdesc *d = &vq->pdesc[(vq->next_used + i)
                                               % vq->size];
        tu_log("  ring[%u] = {addr %#"PRIx64", len %"PRIu32", id %u, "
               "flags %#x}", (vq->next_used + i) % vq->size, d->addr,
               d->len, d->id, d->flags);
    }
    tu_log("  packets %"PRIu64", broken %d", s.packets, s.broken);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s.drops[r]) {
            tu_log("  drops[%s] = %"PRIu64, vhost_drop_reason_to_string(r),
                   s.drops[r]);
        }
    }
}

/* What GET_VRING_BASE gives for 'vq' once the device has written back all
 * it took and the driver has seen it: the driver's used position, as both
 * the avail and the used half. */
uint32_t
pk_stopped_base(const struct tfe_vq *vq)
{
    uint32_t pos = vq->next_used | (uint32_t) vq->used_wrap << 15;

    return pos | pos << 16;
}

/* Shows that queue pair 'qp' works: two packets each way, one at a time
 * (the ring may have a single slot), checked. */
void
pk_roundtrip(struct pk *pk, unsigned int qp, const char *why)
{
    tu_log("  queue pair %u still works (%s)", qp, why);
    for (int i = 0; i < 2; i++) {
        struct vhost_pkt out[4];
        size_t len = 100 + 50 * i;
        uint8_t *pkt = pk_new_pkt(pk, len, MAC_UNICAST);
        int id = pk_tx_post(pk, qp, NULL, pkt, len, NULL);

        TU_CHECK_EQ(pk_dq(pk, qp, out, 4), 1);
        pk_check_pkt(&out[0], pkt, len, "round trip, dequeue");
        pk_expect_used(&pk->vq[TX(qp)], id, 0);
        pk_expect_no_used(&pk->vq[TX(qp)]);
        pk_release_pkts(out, 4);

        pk_rx_post(pk, qp, 2048, NULL);
        TU_CHECK_EQ(pk_enq1(pk, qp, pkt, len, NULL), 1);
        pk_rx_expect(pk, qp, pkt, len, NULL, 1, "round trip, enqueue");
        pk_expect_no_used(&pk->vq[RX(qp)]);
        free(pkt);
    }
}

/* A buffer in the arena holding 'len' zero bytes (a zero header and some
 * packet). */
uint64_t
pk_arena_buf(struct tfe_vq *vq, uint32_t len)
{
    uint64_t gpa = tfe_vq_alloc(vq, len, 64);
    uint8_t *zero = calloc(1, len + 1);

    TU_CHECK(zero != NULL);
    TU_CHECK(tfe_mem_write(vq->mem, gpa, zero, len));
    free(zero);
    return gpa;
}

uint32_t
pk_rng_next(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (r->s * UINT64_C(2685821657736338717)) >> 32;
}

uint32_t
pk_rng_range(struct rng *r, uint32_t lo, uint32_t hi)
{
    return lo + pk_rng_next(r) % (hi - lo + 1);
}

void
pk_run_wrap(const char *name, unsigned int size, uint64_t features,
            unsigned int laps)
{
    struct pk_cfg cfg = pk_cfg_sized(features, size);
    struct pending *txp = calloc(WRAP_MAX_PENDING, sizeof *txp);
    uint32_t *rxb = calloc(WRAP_MAX_PENDING, sizeof *rxb);
    unsigned int n_txp = 0, n_rxb = 0;
    struct rng rng = { UINT64_C(0x9e3779b97f4a7c15) ^ size ^ features };
    uint64_t tx_slots = 0, rx_slots = 0;
    unsigned int tx_straddles = 0, rx_straddles = 0, rx_multi = 0;
    struct vhost_queue_stats e_tx, e_rx;
    struct vhost_pkt out[VHOST_MAX_BURST];
    bool indirect = features & PK_IND;
    unsigned int rounds = 0;
    struct tfe_vq *tx, *rx;
    struct pk pk;

    TU_CHECK(txp && rxb);
    pk_start(&pk, name, &cfg);
    tx = &pk.vq[TX(0)];
    rx = &pk.vq[RX(0)];
    /* Odd sizes: the buffer id in every descriptor of a chain, as Linux
     * writes it; others: only in the last, as §2.8.6 asks. */
    tx->same_ids = rx->same_ids = size % 2;
    memset(&e_tx, 0, sizeof e_tx);
    memset(&e_rx, 0, sizeof e_rx);
    tu_log("queue size %u: %u laps each way with chains of 1-%u "
           "descriptors%s", size, laps, MIN(4, size),
           indirect ? ", some indirect" : "");

    while (tx_slots < (uint64_t) laps * size
           || rx_slots < (uint64_t) laps * size) {
        unsigned int k, n, got;

        rounds++;
        /* Transmit: post some chains, dequeue a random pk_burst. */
        k = pk_rng_range(&rng, 0, MIN(size, 64));
        for (unsigned int i = 0; i < k && n_txp < WRAP_MAX_PENDING; i++) {
            struct tfe_buf_opts o = {
                .n_descs = pk_rng_range(&rng, 1, MIN(4, size)),
                .indirect = indirect && !pk_rng_range(&rng, 0, 3),
            };
            unsigned int slots = o.indirect ? 1 : o.n_descs;
            size_t len = pk_rng_range(&rng, 18, 1500);

            if (tx->n_free < slots || !tx->n_free_ids) {
                break;
            }
            tx_straddles += tx->next_avail + slots > size;
            txp[n_txp].pkt = pk_new_pkt(&pk, len, pk_rng_range(&rng, 0, 2));
            txp[n_txp].len = len;
            txp[n_txp].id = pk_tx_post(&pk, 0, NULL, txp[n_txp].pkt, len, &o);
            pk_stats_add(&e_tx, txp[n_txp].pkt, len);
            n_txp++;
            tx_slots += slots;
        }
        n = pk_rng_range(&rng, 1, VHOST_MAX_BURST);
        got = pk_dq(&pk, 0, out, n);
        if (got != MIN(n, n_txp)) {
            pk_dump_vring(&pk, TX(0));
            TU_FAIL("round %u: dequeue of %u returned %u, %u pending",
                    rounds, n, got, n_txp);
        }
        for (unsigned int i = 0; i < got; i++) {
            pk_check_pkt(&out[i], txp[i].pkt, txp[i].len, "wrap dequeue");
            pk_expect_used(tx, txp[i].id, 0);
            free(txp[i].pkt);
        }
        pk_expect_no_used(tx);
        pk_release_pkts(out, n);
        memmove(txp, txp + got, (n_txp - got) * sizeof *txp);
        n_txp -= got;

        /* Receive: post some buffers, enqueue a random pk_burst. */
        k = pk_rng_range(&rng, 0, MIN(size, 32));
        for (unsigned int i = 0; i < k && n_rxb < WRAP_MAX_PENDING; i++) {
            struct tfe_buf_opts o = {
                .n_descs = pk_rng_range(&rng, 1, MIN(3, size)),
                .indirect = indirect && !pk_rng_range(&rng, 0, 3),
            };
            unsigned int slots = o.indirect ? 1 : o.n_descs;
            uint32_t len = (pk.mrg && size >= 7
                            ? pk_rng_range(&rng, 100, 2048)
                            : pk_rng_range(&rng, 1600, 2048));

            if (rx->n_free < slots || !rx->n_free_ids) {
                break;
            }
            rx_straddles += rx->next_avail + slots > size;
            pk_rx_post(&pk, 0, len, &o);
            rxb[n_rxb++] = len;
            rx_slots += slots;
        }
        k = pk_rng_range(&rng, 1, 16);
        {
            struct vhost_pkt in[16];
            unsigned int bufs[16];
            unsigned int expect = 0, b = 0;

            for (unsigned int i = 0; i < k; i++) {
                size_t len = pk_rng_range(&rng, 18, 1500);
                uint64_t have = 0;
                unsigned int first = b;

                in[i] = (struct vhost_pkt) {
                    .data = pk_new_pkt(&pk, len, MAC_MULTICAST), .len = len,
                };
                /* What the engine should do: fill buffers in order. */
                if (expect == i) {
                    while (b < n_rxb && have < pk.hdr_len + len
                           && (pk.mrg || b == first)) {
                        have += rxb[b++];
                    }
                    if (have >= pk.hdr_len + len) {
                        bufs[i] = b - first;
                        expect++;
                    } else {
                        b = first;
                    }
                }
            }
            got = vhost_enqueue_burst(pk.port, 0, in, k);
            if (got != expect) {
                pk_dump_vring(&pk, RX(0));
                TU_FAIL("round %u: enqueue of %u returned %u, expected %u "
                        "(%u buffers posted)", rounds, k, got, expect,
                        n_rxb);
            }
            for (unsigned int i = 0; i < got; i++) {
                pk_rx_expect(&pk, 0, in[i].data, in[i].len, NULL, bufs[i],
                             "wrap enqueue");
                pk_stats_add(&e_rx, in[i].data, in[i].len);
                rx_multi += bufs[i] > 1;
            }
            pk_expect_no_used(rx);
            memmove(rxb, rxb + b, (n_rxb - b) * sizeof *rxb);
            n_rxb -= b;
            for (unsigned int i = 0; i < k; i++) {
                free(in[i].data);
            }
        }
    }
    tu_log("%u rounds: %"PRIu64" transmit and %"PRIu64" receive ring slots "
           "(%"PRIu64" and %"PRIu64" laps), %u and %u chains across the "
           "end of the ring, %u packets over several buffers", rounds,
           tx_slots, rx_slots, tx_slots / size, rx_slots / size,
           tx_straddles, rx_straddles, rx_multi);
    if (size > 1 && size <= 256) {
        TU_CHECK(tx_straddles > 0);
        TU_CHECK(rx_straddles > 0);
    }

    /* Drain what is left on transmit. */
    while (n_txp) {
        unsigned int got = pk_dq(&pk, 0, out, VHOST_MAX_BURST);

        TU_CHECK(got > 0);
        for (unsigned int i = 0; i < got; i++) {
            pk_check_pkt(&out[i], txp[i].pkt, txp[i].len, "wrap drain");
            pk_expect_used(tx, txp[i].id, 0);
            free(txp[i].pkt);
        }
        pk_release_pkts(out, VHOST_MAX_BURST);
        memmove(txp, txp + got, (n_txp - got) * sizeof *txp);
        n_txp -= got;
    }
    pk_check_stats(&pk, TX(0), &e_tx);
    pk_check_stats(&pk, RX(0), &e_rx);

    pk_roundtrip(&pk, 1, "after the laps");
    tu_log("GET_VRING_BASE gives the driver's used position and wrap "
           "counter on both rings");
    {
        uint32_t base;

        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
        TU_CHECK_EQ(base, pk_stopped_base(tx));
        TU_CHECK_EQ(base, tfe_vq_pbase(tx));
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, RX(0), &base));
        TU_CHECK_EQ(base, pk_stopped_base(rx));
    }
    /* With IN_ORDER, every used descriptor named a chain in flight, in
     * order, and receive never batched. */
    TU_CHECK_EQ(tx->n_unordered, 0);
    TU_CHECK_EQ(rx->n_unordered, 0);
    free(txp);
    free(rxb);
    pk_finish(&pk);
}

const struct tfe_net_hdr pk_offload_hdr = {
    .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_UDP,
    .hdr_len = 42, .gso_size = 1000, .csum_start = 34, .csum_offset = 6,
};

/* Makes 'it' available on transmit ring 'qp' as its kind says. */
void
pk_post_item(struct pk *pk, unsigned int qp, struct item *it)
{
    struct tfe_vq *vq = &pk->vq[TX(qp)];
    static uint8_t zero18[18];

    it->pkt = NULL;
    it->reason = -1;
    memset(&it->ol, 0, sizeof it->ol);
    it->len = 100 + (pk->seq * 37) % 300;
    switch (it->kind) {
    case IT_GOOD:
    case IT_CHAIN2:
    case IT_INDIRECT: {
        struct tfe_buf_opts o = {
            .n_descs = it->kind == IT_GOOD ? 1 : 2,
            .indirect = it->kind == IT_INDIRECT,
        };
        it->pkt = pk_new_pkt(pk, it->len, MAC_UNICAST);
        it->id = pk_tx_post(pk, qp, NULL, it->pkt, it->len, &o);
        break;
    }
    case IT_STRADDLE: {
        struct tfe_buf_opts o = { .gpa = pk_boundary_tx(pk) - 50 };
        it->pkt = pk_new_pkt(pk, it->len, MAC_BROADCAST);
        it->id = pk_tx_post(pk, qp, NULL, it->pkt, it->len, &o);
        break;
    }
    case IT_OFFLOAD:
        it->pkt = pk_new_pkt(pk, it->len, MAC_MULTICAST);
        it->id = pk_tx_post(pk, qp, &pk_offload_hdr, it->pkt, it->len, NULL);
        it->ol = (struct vhost_offload) {
            .flags = VHOST_OL_NEEDS_CSUM, .gso_type = VHOST_GSO_UDP,
            .hdr_len = 42, .gso_size = 1000, .csum_start = 34,
            .csum_offset = 6,
        };
        break;
    case IT_HDR_ONLY:
        it->len = 0;
        it->pkt = malloc(1);
        it->id = pk_tx_post(pk, qp, NULL, zero18, 0, NULL);
        break;
    case IT_BAD_CSUM: {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .csum_start = 90,
            .csum_offset = 16,
        };
        uint8_t *p = pk_new_pkt(pk, 100, MAC_UNICAST);
        it->id = pk_tx_post(pk, qp, &h, p, 100, NULL);
        it->reason = VHOST_DROP_BAD_CSUM;
        free(p);
        break;
    }
    case IT_BAD_ID:
        it->id = vq->size;
        tfe_vq_pwrite(vq, 0, pk_arena_buf(vq, 100), 100, vq->size,
                      tfe_vq_pavail(vq, 0));
        tfe_vq_pclaim(vq, vq->size, 1);
        it->reason = VHOST_DROP_BAD_INDEX;
        break;
    case IT_BAD_WRITE: {
        struct tfe_seg seg = { pk_arena_buf(vq, 100), 100 };
        it->id = tfe_vq_add_chain(vq, &seg, 1, true, NULL);
        it->reason = VHOST_DROP_BAD_DIRECTION;
        break;
    }
    case IT_SHORT: {
        struct tfe_seg seg = { pk_arena_buf(vq, 5), 5 };
        it->id = tfe_vq_add_chain(vq, &seg, 1, false, NULL);
        it->reason = VHOST_DROP_SHORT_HDR;
        break;
    }
    case IT_TOO_BIG: {
        uint8_t *p = pk_new_pkt(pk, 70000, MAC_UNICAST);
        it->id = pk_tx_post(pk, qp, NULL, p, 70000, NULL);
        it->reason = VHOST_DROP_TOO_BIG;
        free(p);
        break;
    }
    }
    TU_CHECK(it->id >= 0);
}

/* Dequeues 'n_dq' from queue pair 0 and checks that the good items among
 * 'items' come out in order (the first 'expect' of them), that each item
 * is used in order with length 0, and the drop counters. */
void
pk_check_items(struct pk *pk, struct item *items, size_t n_items,
               unsigned int n_dq, unsigned int expect, const char *what)
{
    struct vhost_queue_stats s0 = pk_get_stats(pk, TX(0)), s1;
    struct vhost_pkt out[VHOST_MAX_BURST];
    unsigned int got, k = 0;
    uint64_t drops[VHOST_N_DROP_REASONS] = { 0 };

    got = pk_dq(pk, 0, out, n_dq);
    if (got != expect) {
        pk_dump_vring(pk, TX(0));
        TU_FAIL("%s: dequeue of %u returned %u, expected %u", what, n_dq,
                got, expect);
    }
    for (size_t i = 0; i < n_items; i++) {
        struct item *it = &items[i];

        if (it->reason >= 0) {
            drops[it->reason]++;
        } else if (k < got) {
            pk_check_pkt(&out[k], it->pkt, it->len, what);
            pk_check_ol(&out[k].ol, &it->ol, what);
            k++;
        }
        pk_expect_used(&pk->vq[TX(0)], it->id, 0);
        free(it->pkt);
        it->pkt = NULL;
    }
    pk_expect_no_used(&pk->vq[TX(0)]);
    pk_release_pkts(out, n_dq);
    s1 = pk_get_stats(pk, TX(0));
    TU_CHECK_EQ(s1.packets - s0.packets, got);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s1.drops[r] - s0.drops[r] != drops[r]) {
            TU_FAIL("%s: %"PRIu64" drops[%s], expected %"PRIu64, what,
                    s1.drops[r] - s0.drops[r],
                    vhost_drop_reason_to_string(r), drops[r]);
        }
    }
}

/* Moves the transmit ring of queue pair 0 to position 'pos' with simple
 * packets, dequeued and checked. */
void
pk_tx_advance_to(struct pk *pk, unsigned int pos)
{
    struct tfe_vq *vq = &pk->vq[TX(0)];

    while (vq->next_avail != pos) {
        struct item it = { .kind = IT_GOOD };

        pk_post_item(pk, 0, &it);
        pk_check_items(pk, &it, 1, 1, 1, "filler");
    }
}

/* Returns a buffer id not in flight on 'vq', from the top down. */
uint16_t
pk_free_id(const struct tfe_vq *vq)
{
    for (unsigned int id = vq->size; id-- > 0;) {
        if (!vq->chains[id].in_use) {
            return id;
        }
    }
    TU_FAIL("vring %"PRIu32": no free buffer id", vq->index);
}

/* Writes and claims a chain of 'n' descriptors, each {addr[i], len[i]}
 * with flags 'flags[i]' (NEXT is added to all but the last, and the bits
 * that make each available), buffer id 'id' in the last and the poison
 * in the others.  Returns 'id'. */
uint16_t
pk_post_raw(struct tfe_vq *vq, size_t n, const uint64_t *addr,
            const uint32_t *len, const uint16_t *flags, uint16_t id)
{
    for (size_t i = n; i-- > 0;) {
        uint16_t f = flags[i] | (i + 1 < n ? TFE_DESC_F_NEXT : 0);

        tfe_vq_pwrite(vq, i, addr[i], len[i],
                      i + 1 < n ? TFE_PACKED_ID_POISON : id,
                      f | tfe_vq_pavail(vq, i));
    }
    tfe_vq_pclaim(vq, id, n);
    return id;
}

uint16_t
pk_post_one(struct tfe_vq *vq, uint64_t addr, uint32_t len, uint16_t flags,
            uint16_t id)
{
    return pk_post_raw(vq, 1, &addr, &len, &flags, id);
}

uint16_t
pk_post_two(struct tfe_vq *vq, uint64_t a0, uint32_t l0, uint16_t f0,
            uint64_t a1, uint32_t l1, uint16_t f1, uint16_t id)
{
    uint64_t addr[2] = { a0, a1 };
    uint32_t len[2] = { l0, l1 };
    uint16_t flags[2] = { f0, f1 };

    return pk_post_raw(vq, 2, addr, len, flags, id);
}

/* Moves 'n' packets, each in a chain of 'descs' descriptors, through
 * queue pair 0 in direction 'tx' (dequeue) or not (enqueue), and checks
 * them.  Returns the ring slots used. */
unsigned int
pk_burst(struct pk *pk, bool tx, unsigned int n, unsigned int descs)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[VHOST_MAX_BURST];
    struct tfe_buf_opts o = { .n_descs = descs };
    unsigned int slots = 0;

    TU_CHECK(n <= VHOST_MAX_BURST);
    memset(out, 0, sizeof out);
    for (unsigned int i = 0; i < n; i++) {
        pkts[i] = pk_new_pkt(pk, 64 + i, MAC_UNICAST);
        if (tx) {
            pk_tx_post(pk, 0, NULL, pkts[i], 64 + i, &o);
        } else {
            pk_rx_post(pk, 0, 2048, &o);
        }
        slots += descs;
    }
    if (tx) {
        TU_CHECK_EQ(pk_dq(pk, 0, out, VHOST_MAX_BURST), n);
        for (unsigned int i = 0; i < n; i++) {
            struct tfe_used_elem u;
            pk_check_pkt(&out[i], pkts[i], 64 + i, "dequeue");
            TU_CHECK_OK(pk_get_used(&pk->vq[TX(0)], &u, "dequeue"));
        }
        pk_release_pkts(out, VHOST_MAX_BURST);
    } else {
        for (unsigned int i = 0; i < n; i++) {
            out[i] = (struct vhost_pkt) { .data = pkts[i], .len = 64 + i };
        }
        TU_CHECK_EQ(vhost_enqueue_burst(pk->port, 0, out, n), n);
        for (unsigned int i = 0; i < n; i++) {
            pk_rx_expect(pk, 0, pkts[i], 64 + i, NULL, 1, "enqueue");
        }
    }
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i]);
    }
    return slots;
}
