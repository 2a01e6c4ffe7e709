/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A device's life across its frontend's and guest's events, as QEMU runs
 * them (tests/qemu-lifecycle.at runs the real thing): a guest reboot,
 * memory hotplug under running rings, a frontend that reconnects with the
 * rings it kept.  They pin down when the engine may read a split ring's
 * used index to resume from it (virtq_resync_used()):
 *
 *   - only when the ring starts (SET_VRING_KICK), with the addresses and
 *     the base the frontend means it to run with;
 *   - never at SET_VRING_NUM after GET_VRING_BASE, whose ring addresses
 *     are still those of before the stop: after a guest reboot QEMU sends
 *     SET_VRING_NUM before SET_VRING_ADDR, and the old ring's memory is
 *     the new kernel's by then;
 *   - never on a memory table change (ADD_MEM_REG) under a running ring,
 *     whose used index the guest can write anything to.
 *
 * The engine used to resume from the used index whenever it translated a
 * ring, and said so: "used index N differs from the base M".  Every
 * message must also name its port: a vring reset on disconnection used to
 * forget the name ("?: vring 0: ...").
 */

#include <config.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

#define LC_QUEUE_SIZE 256
#define LC_ARENA_SIZE (256u << 10)
#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)

struct lc {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq vq[2];        /* Pair 0, once it is up. */
    int fds0, threads0;
};

/* Engine messages saying a ring resumed from its used index, and
 * messages that do not name their port (a vring's name was "?" after a
 * reconnection). */
static atomic_int lc_n_resyncs;
static atomic_int lc_n_unnamed;

static void
lc_log_handler__(enum vhost_log_level level, const char *msg, void *aux)
{
    if (level == VHOST_LOG_WARN && strstr(msg, "differs from the base")) {
        atomic_fetch_add(&lc_n_resyncs, 1);
    }
    if (strncmp(msg, "lc-", 3)) {
        atomic_fetch_add(&lc_n_unnamed, 1);
    }
    fprintf(stderr, "ovs-vhost|%s|%s\n", vhost_log_level_to_string(level),
            msg);
}

static bool
lc_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
lc_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

static const struct vhost_pkt_alloc lc_alloc = {
    .alloc = lc_alloc__,
    .free = lc_free__,
};

/* Starts an engine with one port, and a frontend that brings its device
 * up: one queue pair, split rings. */
static void
lc_start(struct lc *c, const char *name)
{
    struct vhost_port_options opts;
    struct tfe_setup setup = { .queue_size = LC_QUEUE_SIZE };

    memset(c, 0, sizeof *c);
    c->fds0 = tu_count_fds();
    c->threads0 = tu_count_threads();
    atomic_store(&lc_n_resyncs, 0);
    atomic_store(&lc_n_unnamed, 0);
    vhost_log_set_handler(lc_log_handler__, NULL);
    TU_CHECK_OK(vhost_engine_create(&c->engine));
    TU_CHECK_OK(vhost_engine_start(c->engine));

    c->path = tu_path(name);
    tu_events_init(&c->ev);
    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = c->path;
    opts.max_queue_pairs = 1;
    opts.cb = &tu_callbacks;
    opts.aux = &c->ev;
    TU_CHECK_OK(vhost_port_create(c->engine, &opts, &c->port));

    c->fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(c->fe, c->path));
    TU_CHECK_OK(tfe_setup_device(c->fe, 1, &setup));
    TU_CHECK(tu_port_info(c->port).ready);
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_vq_init(&c->vq[q], c->fe, q, q % 2, LC_ARENA_SIZE));
    }
}

/* One packet each way through pair 0, checked byte for byte. */
static void
lc_roundtrip(struct lc *c)
{
    struct tfe_vq *tx = &c->vq[1], *rx = &c->vq[0];
    uint8_t hdr[12] = { 0 };
    uint8_t pkt[100], buf[sizeof pkt + 12];
    struct vhost_pkt out[VHOST_MAX_BURST];
    struct tfe_used_elem e;
    unsigned int n_bufs;
    size_t got;

    for (size_t i = 0; i < sizeof pkt; i++) {
        pkt[i] = i * 7 + 3;
    }
    TU_CHECK_CMP(tfe_vq_post_tx(tx, hdr, tx->hdr_len, pkt, sizeof pkt,
                                NULL), >=, 0);
    memset(out, 0, sizeof out);
    TU_CHECK_EQ(vhost_dequeue_burst(c->port, 0, out, VHOST_MAX_BURST,
                                    &lc_alloc), 1);
    TU_CHECK_EQ(out[0].len, sizeof pkt);
    TU_CHECK(!memcmp(out[0].data, pkt, sizeof pkt));
    TU_CHECK_OK(tfe_vq_get_used(tx, &e));

    TU_CHECK_CMP(tfe_vq_post_rx(rx, sizeof buf, NULL), >=, 0);
    TU_CHECK_EQ(vhost_enqueue_burst(c->port, 0, out, 1), 1);
    TU_CHECK_OK(tfe_vq_recv(rx, buf, sizeof buf, &got, &n_bufs));
    TU_CHECK_EQ(got, rx->hdr_len + sizeof pkt);
    TU_CHECK(!memcmp(buf + rx->hdr_len, pkt, sizeof pkt));
    for (unsigned int i = 0; i < VHOST_MAX_BURST; i++) {
        free(out[i].handle);
    }
}

/* Stops both rings of pair 0 (GET_VRING_BASE) and checks that each stood
 * at 'pos'. */
static void
lc_stop(struct lc *c, uint32_t pos)
{
    for (unsigned int q = 0; q < 2; q++) {
        uint32_t base;

        TU_CHECK_OK(tfe_get_vring_base(c->fe, q, &base));
        TU_CHECK_EQ(base, pos);
    }
}

static void
lc_finish(struct lc *c)
{
    TU_CHECK_EQ(tu_port_info(c->port).counters.msgs_rejected, 0);
    TU_CHECK_EQ(atomic_load(&lc_n_unnamed), 0);
    for (unsigned int q = 0; q < 2; q++) {
        tfe_vq_destroy(&c->vq[q]);
    }
    tfe_destroy(c->fe);
    vhost_port_destroy(c->port);
    vhost_engine_destroy(c->engine);
    vhost_log_set_handler(NULL, NULL);
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), c->fds0);
    TU_CHECK_EQ(tu_threads_settle(c->threads0), c->threads0);
    tu_events_destroy(&c->ev);
    free(c->path);
}

/* A guest reboot as QEMU 7.2 drives it: GET_VRING_BASE stops both rings
 * (at 3), the new kernel's driver sets its rings up again, and QEMU sends
 * SET_VRING_NUM while the engine still has the old ring addresses, whose
 * memory the new kernel has reused (here: a used index of 0xbeef).  The
 * engine must not read it: no resync, no message.  Then SET_VRING_BASE 0,
 * SET_VRING_ADDR and SET_VRING_KICK for the fresh rings, and traffic from
 * index 0. */
static void
test_reboot_stale_ring(void)
{
    struct lc c;

    lc_start(&c, "lc-reboot");
    for (int i = 0; i < 3; i++) {
        lc_roundtrip(&c);
    }
    tu_log("GET_VRING_BASE stops both rings at 3");
    lc_stop(&c, 3);
    TU_CHECK(!tu_port_info(c.port).ready);

    tu_log("the old rings' memory is reused; SET_VRING_NUM reads none of it");
    for (unsigned int q = 0; q < 2; q++) {
        *c.vq[q].used_idx = 0xbeef;
        TU_CHECK_OK(tfe_set_vring_num(c.fe, q, LC_QUEUE_SIZE));
    }
    TU_CHECK_OK(tfe_sync(c.fe));
    TU_CHECK_EQ(atomic_load(&lc_n_resyncs), 0);

    tu_log("the new driver's rings: base 0, addresses, kick; traffic flows");
    for (unsigned int q = 0; q < 2; q++) {
        tfe_vq_reset(&c.vq[q]);
        TU_CHECK_OK(tfe_vring_setup(c.fe, q, LC_QUEUE_SIZE));
    }
    TU_CHECK_OK(tfe_sync(c.fe));
    TU_CHECK(tu_port_info(c.port).ready);
    lc_roundtrip(&c);
    TU_CHECK_EQ(atomic_load(&lc_n_resyncs), 0);
    lc_stop(&c, 1);
    lc_finish(&c);
}

/* Memory hotplug under running rings: the guest has written 0x4321 to the
 * TX ring's used index (it may write anything there) when the frontend
 * adds a region (ADD_MEM_REG).  The engine translates the rings again for
 * the new table, but the used index is its own to keep: no resync, and
 * the ring goes on from where the engine left it. */
static void
test_hotplug_running_ring(void)
{
    struct lc c;

    lc_start(&c, "lc-hotplug");
    lc_roundtrip(&c);
    lc_roundtrip(&c);

    tu_log("the guest scribbles on the used index; a region is added");
    uint16_t used = *c.vq[1].used_idx;
    TU_CHECK_EQ(used, 2);
    *c.vq[1].used_idx = 0x4321;
    unsigned int n_regions = tu_port_info(c.port).n_mem_regions;
    int region = tfe_mem_add(c.fe->mem, 16u << 20, 1u << 20, 0);
    TU_CHECK_CMP(region, >=, 0);
    TU_CHECK_OK(tfe_add_mem_region(c.fe, region));
    TU_CHECK_OK(tfe_sync(c.fe));
    TU_CHECK_EQ(tu_port_info(c.port).n_mem_regions, n_regions + 1);
    TU_CHECK_EQ(atomic_load(&lc_n_resyncs), 0);

    tu_log("the ring goes on from 2");
    *c.vq[1].used_idx = used;
    lc_roundtrip(&c);
    TU_CHECK(tu_port_info(c.port).ready);
    TU_CHECK_EQ(atomic_load(&lc_n_resyncs), 0);
    lc_stop(&c, 3);
    lc_finish(&c);
}

/* A frontend that keeps its rings across a reconnection and sends
 * SET_VRING_BASE 0 (DPDK's virtio-user in server mode): when the ring
 * starts, the engine resumes from the used index (3) and says so, once
 * per ring, naming the port: the vrings are reset on the disconnection,
 * and keep their port's name. */
static void
test_reconnect_kept_ring(void)
{
    struct tfe_setup setup = { .queue_size = LC_QUEUE_SIZE };
    struct lc c;

    lc_start(&c, "lc-kept");
    for (int i = 0; i < 3; i++) {
        lc_roundtrip(&c);
    }
    tu_log("the frontend reconnects with its rings as they stand");
    tfe_disconnect(c.fe);
    TU_CHECK(tu_wait_port(c.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_connect(c.fe, c.path));
    TU_CHECK_OK(tfe_setup_device(c.fe, 1, &setup));
    TU_CHECK(tu_port_info(c.port).ready);
    TU_CHECK_EQ(atomic_load(&lc_n_resyncs), 2);

    tu_log("traffic goes on from 3");
    lc_roundtrip(&c);
    lc_stop(&c, 4);
    lc_finish(&c);
}

const struct tu_test tu_lifecycle_tests[] = {
    { "lifecycle-reboot-stale-ring", test_reboot_stale_ring,
      "guest reboot: SET_VRING_NUM after GET_VRING_BASE reads no old ring" },
    { "lifecycle-hotplug-running-ring", test_hotplug_running_ring,
      "ADD_MEM_REG under a running ring keeps the engine's used index" },
    { "lifecycle-reconnect-kept-ring", test_reconnect_kept_ring,
      "reconnect with kept rings and base 0: resume from the used index" },
};
const size_t tu_n_lifecycle_tests = ARRAY_SIZE(tu_lifecycle_tests);
