/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Adversarial tests: a connection that holds a server port without being
 * a working frontend (issue 19, finding 7).
 *
 * A server port serves one frontend at a time.  A connection that stalls
 * in the middle of a message, or sends nothing at all, used to keep the
 * port's real frontend out until 'msg_timeout_ms' ran out (or for good).
 * Now a frontend that connects while the current connection has not sent
 * SET_OWNER, or has stalled mid-message, is served within a second
 * (lib/vhost-port.c, "Takeover"); a ready frontend, an owner waiting for
 * its guest, and a frontend in the middle of its setup are never
 * displaced.
 *
 * Every test runs an engine with port A, whose connections misbehave,
 * with a 'msg_timeout_ms' of STALL_MSG_TIMEOUT_MS, so that a good frontend
 * served only once the stalled one times out is far too late; and port B,
 * whose frontend is well-behaved and must go on being served.  Each checks
 * the counters and the log line, and that no fd, thread or mapping is left
 * behind.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

/* Port A's message timeout: twice the longest a test takes. */
#define STALL_MSG_TIMEOUT_MS 10000

/* How soon a good frontend must be served (issue 19). */
#define STALL_SERVED_MS 1000

/* The engine's grace (VHOST_PORT_TAKEOVER_MS in lib/vhost-port.c). */
#define STALL_GRACE_MS 250

struct stall {
    struct vhost_engine *engine;
    struct vhost_port *port, *port_b;
    struct tu_events ev, ev_b;
    char *path, *path_b;
    struct tfe *fe_b;
    int fds0, threads0;
};

/* Log lines that say a connection was displaced or a newcomer refused,
 * counted from the engine's thread.  Every line still goes to stderr. */
static atomic_uint stall_n_displaced_logs;
static atomic_uint stall_n_refused_logs;

static void
stall_log_handler__(enum vhost_log_level level, const char *msg, void *aux)
{
    if (level == VHOST_LOG_WARN
        && strstr(msg, "replacing it with the one that connected after it")) {
        atomic_fetch_add(&stall_n_displaced_logs, 1);
    }
    if (level == VHOST_LOG_WARN && strstr(msg, "refusing a second frontend")) {
        atomic_fetch_add(&stall_n_refused_logs, 1);
    }
    fprintf(stderr, "ovs-vhost|%s|%s\n", vhost_log_level_to_string(level),
            msg);
}

static struct vhost_port *
stall_port__(struct stall *s, const char *name, char **pathp,
             struct tu_events *ev, unsigned int msg_timeout_ms)
{
    struct vhost_port_options opts;
    struct vhost_port *port;

    *pathp = tu_path(name);
    tu_events_init(ev);
    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = *pathp;
    opts.features |= FEATURE_BIT(VIRTIO_F_RING_PACKED);
    opts.msg_timeout_ms = msg_timeout_ms;
    opts.cb = &tu_callbacks;
    opts.aux = ev;
    TU_CHECK_OK(vhost_port_create(s->engine, &opts, &port));
    return port;
}

/* Starts an engine with port A (nothing connected) and port B (its device
 * up). */
static void
stall_start(struct stall *s, const char *name)
{
    char name_b[64];

    memset(s, 0, sizeof *s);
    s->fds0 = tu_count_fds();
    s->threads0 = tu_count_threads();
    atomic_store(&stall_n_displaced_logs, 0);
    atomic_store(&stall_n_refused_logs, 0);
    vhost_log_set_handler(stall_log_handler__, NULL);
    TU_CHECK_OK(vhost_engine_create(&s->engine));
    TU_CHECK_OK(vhost_engine_start(s->engine));
    s->port = stall_port__(s, name, &s->path, &s->ev, STALL_MSG_TIMEOUT_MS);
    snprintf(name_b, sizeof name_b, "%s-b", name);
    s->port_b = stall_port__(s, name_b, &s->path_b, &s->ev_b, 0);

    s->fe_b = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(s->fe_b, s->path_b));
    TU_CHECK_OK(tfe_setup_device(s->fe_b, 1, NULL));
    TU_CHECK(tu_port_info(s->port_b).ready);
}

/* Port B answers, and its device is still up. */
static void
stall_check_b(struct stall *s)
{
    TU_CHECK_OK(tfe_sync(s->fe_b));
    TU_CHECK(tu_port_info(s->port_b).ready);
    TU_CHECK_EQ(tu_port_info(s->port_b).counters.msgs_rejected, 0);
    TU_CHECK_EQ(tu_port_info(s->port_b).counters.frontends_displaced, 0);
}

static void
stall_finish(struct stall *s)
{
    stall_check_b(s);
    tfe_destroy(s->fe_b);
    vhost_port_destroy(s->port);
    vhost_port_destroy(s->port_b);
    vhost_engine_destroy(s->engine);
    vhost_log_set_handler(NULL, NULL);
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), s->fds0);
    TU_CHECK_EQ(tu_threads_settle(s->threads0), s->threads0);
    tu_events_destroy(&s->ev);
    tu_events_destroy(&s->ev_b);
    free(s->path);
    free(s->path_b);
}

static bool
stall_connects__(const struct vhost_port_info *info, void *aux)
{
    return info->connected && info->counters.connects >= *(uint64_t *) aux;
}

/* Connects 'fe' to port A, and waits until the engine serves it as the
 * port's 'n'th connection. */
static void
stall_connect(struct stall *s, struct tfe *fe, uint64_t n)
{
    TU_CHECK_OK(tfe_connect(fe, s->path));
    TU_CHECK(tu_wait_port(s->port, stall_connects__, &n, TU_TIMEOUT_MS));
}

/* A good frontend connects to port A while its current connection
 * misbehaves, and brings its device up, one queue pair on the ring layout
 * 'packed'.  Checks that it took less than STALL_SERVED_MS, and returns
 * that time. */
static long long
stall_serve_good(struct stall *s, struct tfe *good, bool packed)
{
    struct tfe_setup setup = { .packed = packed };
    long long t0 = tu_now_ms(), ms;

    TU_CHECK_OK(tfe_connect(good, s->path));
    TU_CHECK_OK(tfe_setup_device(good, 1, &setup));
    TU_CHECK(tu_wait_port(s->port, tu_port_ready, NULL, TU_TIMEOUT_MS));
    ms = tu_now_ms() - t0;
    tu_log("  the good frontend's device was ready %lld ms after it "
           "connected", ms);
    TU_CHECK_CMP(ms, <, STALL_SERVED_MS);
    return ms;
}

static bool
stall_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
stall_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

/* One packet from the guest behind 'tx' (TX vring 1 of port A) to the
 * engine, checked byte for byte. */
static void
stall_roundtrip(struct stall *s, struct tfe_vq *tx)
{
    static const struct vhost_pkt_alloc alloc = {
        .alloc = stall_alloc__,
        .free = stall_free__,
    };
    uint8_t hdr[12] = { 0 };
    uint8_t pkt[100];
    struct vhost_pkt out[VHOST_MAX_BURST];
    struct tfe_used_elem e;

    for (size_t i = 0; i < sizeof pkt; i++) {
        pkt[i] = i * 13 + 1;
    }
    TU_CHECK_CMP(tfe_vq_post_tx(tx, hdr, tx->hdr_len, pkt, sizeof pkt, NULL),
                 >=, 0);
    memset(out, 0, sizeof out);
    TU_CHECK_EQ(vhost_dequeue_burst(s->port, 0, out, VHOST_MAX_BURST,
                                    &alloc), 1);
    TU_CHECK_EQ(out[0].len, sizeof pkt);
    TU_CHECK(!memcmp(out[0].data, pkt, sizeof pkt));
    for (unsigned int i = 0; i < VHOST_MAX_BURST; i++) {
        free(out[i].handle);
    }
    TU_CHECK_OK(tfe_vq_get_used(tx, &e));
}

/* The counters of port A. */
static struct vhost_port_counters
stall_counters(struct stall *s)
{
    return tu_port_info(s->port).counters;
}

/* The connection of 'fe' was closed by the engine. */
static void
stall_check_closed(struct tfe *fe)
{
    TU_CHECK(tfe_wait_closed(fe, TU_TIMEOUT_MS));
}

/* A connection that stalls in the middle of a message, before or after
 * SET_OWNER, with an fd in flight: the next frontend is served within a
 * second, the staller is dropped (its fd closed, nothing mapped), counted
 * and logged. */
static void
test_stall_mid_message(void)
{
    struct vhost_user_hdr hdr = { VHOST_USER_SET_MEM_TABLE,
                                  VHOST_USER_VERSION, 40 };
    uint8_t buf[sizeof hdr + 20];
    struct tfe *bad;
    struct tfe *good;
    struct vhost_port_counters c;
    struct stall s;

    stall_start(&s, "stall-mid");
    bad = tfe_create(NULL);
    good = tfe_create(tfe_mem_create_default());
    memcpy(buf, &hdr, sizeof hdr);
    memset(buf + sizeof hdr, 0, sizeof buf - sizeof hdr);

    for (int owned = 0; owned < 2; owned++) {
        uint64_t features;
        int fd = eventfd(0, EFD_CLOEXEC);

        tu_log("%s: 32 of SET_MEM_TABLE's 52 bytes and an fd, then nothing",
               owned ? "after SET_OWNER" : "before SET_OWNER");
        stall_connect(&s, bad, 2 * owned + 1);
        if (owned) {
            TU_CHECK_OK(tfe_get_features(bad, &features));
            TU_CHECK_OK(tfe_set_owner(bad));
            TU_CHECK_OK(tfe_sync(bad));
            TU_CHECK(tu_port_info(s.port).owned);
        }
        TU_CHECK(fd >= 0);
        TU_CHECK_OK(tfe_sock_send(bad->sock, buf, sizeof buf, &fd, 1,
                                  TU_TIMEOUT_MS));
        close(fd);

        tu_log("a good frontend connects at once and is served");
        stall_serve_good(&s, good, false);
        c = stall_counters(&s);
        TU_CHECK_EQ(c.frontends_displaced, owned + 1);
        TU_CHECK_EQ(c.msg_timeouts, 0);
        TU_CHECK_EQ(c.extra_conns_refused, 0);
        TU_CHECK_EQ(c.connects, 2 * owned + 2);
        TU_CHECK_CMP(c.fds_closed, >=, owned + 1);
        TU_CHECK_EQ(atomic_load(&stall_n_displaced_logs), owned + 1);
        stall_check_closed(bad);
        tfe_disconnect(bad);
        TU_CHECK_CMP(tu_port_info(s.port).n_mem_regions, >, 0);
        stall_check_b(&s);

        tfe_disconnect(good);
        TU_CHECK(tu_wait_port(s.port, tu_port_disconnected, NULL,
                              TU_TIMEOUT_MS));
        TU_CHECK_EQ(tu_port_info(s.port).n_mem_regions, 0);
    }
    tfe_destroy(bad);
    tfe_destroy(good);
    stall_finish(&s);
}

/* A connection that sends nothing at all (the old code never timed it
 * out), and one that trickles whole messages but never SET_OWNER: the
 * next frontend is served within a second. */
static void
test_stall_silent(void)
{
    struct tfe *bad;
    struct tfe *good;
    struct vhost_port_counters c;
    struct stall s;
    uint64_t features;

    stall_start(&s, "stall-silent");
    bad = tfe_create(NULL);
    good = tfe_create(tfe_mem_create_default());

    tu_log("a connection that sends nothing, for longer than the grace");
    stall_connect(&s, bad, 1);
    tu_sleep_ms(STALL_GRACE_MS + 100);
    stall_serve_good(&s, good, false);
    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 1);
    TU_CHECK_EQ(c.msg_timeouts, 0);
    TU_CHECK_EQ(atomic_load(&stall_n_displaced_logs), 1);
    stall_check_closed(bad);
    tfe_disconnect(bad);
    tfe_disconnect(good);
    TU_CHECK(tu_wait_port(s.port, tu_port_disconnected, NULL, TU_TIMEOUT_MS));

    tu_log("a connection that has just connected and sends nothing");
    stall_connect(&s, bad, 3);
    stall_serve_good(&s, good, true);
    stall_check_closed(bad);
    tfe_disconnect(bad);
    tfe_disconnect(good);
    TU_CHECK(tu_wait_port(s.port, tu_port_disconnected, NULL, TU_TIMEOUT_MS));

    tu_log("a connection that sends GET_FEATURES every 50 ms, never "
           "SET_OWNER, until it is dropped");
    stall_connect(&s, bad, 5);
    long long t0 = tu_now_ms();
    int n_answered = 0;
    TU_CHECK_OK(tfe_connect(good, s.path));
    while (tu_now_ms() - t0 < STALL_SERVED_MS
           && !tfe_get_features(bad, &features)) {
        n_answered++;
        tu_sleep_ms(50);
    }
    tu_log("  %d of its messages answered", n_answered);
    TU_CHECK_CMP(n_answered, >, 0);
    TU_CHECK_OK(tfe_setup_device(good, 1, NULL));
    TU_CHECK(tu_port_info(s.port).ready);
    tu_log("  the good frontend's device was ready %lld ms after it "
           "connected", tu_now_ms() - t0);
    TU_CHECK_CMP(tu_now_ms() - t0, <, STALL_SERVED_MS);
    stall_check_closed(bad);
    tfe_disconnect(bad);

    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 3);
    TU_CHECK_EQ(c.extra_conns_refused, 0);
    TU_CHECK_EQ(c.msg_timeouts, 0);
    TU_CHECK_EQ(c.connects, 6);
    TU_CHECK_EQ(atomic_load(&stall_n_displaced_logs), 3);
    TU_CHECK_EQ(tu_events_count(&s.ev, TU_EV_CONNECTED), 6);
    TU_CHECK_EQ(tu_events_count(&s.ev, TU_EV_DISCONNECTED), 5);
    tfe_destroy(bad);
    tfe_destroy(good);
    stall_finish(&s);
}

/* A ready frontend is never displaced, not even while it stalls in the
 * middle of a message: newcomers are refused, and its traffic goes on. */
static void
stall_ready_kept(bool packed)
{
    struct vhost_user_hdr get = { VHOST_USER_GET_FEATURES,
                                  VHOST_USER_VERSION, 0 };
    struct tfe *fe;
    struct tfe *newcomer;
    struct tfe_setup setup = { .packed = packed };
    struct vhost_port_counters c;
    struct tfe_vq tx;
    struct stall s;
    uint64_t features;

    stall_start(&s, packed ? "stall-ready-pk" : "stall-ready");
    fe = tfe_create(tfe_mem_create_default());
    newcomer = tfe_create(NULL);
    stall_connect(&s, fe, 1);
    TU_CHECK_OK(tfe_setup_device(fe, 1, &setup));
    TU_CHECK(tu_port_info(s.port).ready);
    TU_CHECK_OK(tfe_vq_init(&tx, fe, 1, 1, 64 << 10));
    TU_CHECK_EQ(tx.packed, packed);
    stall_roundtrip(&s, &tx);

    tu_log("newcomers while the ready frontend is idle: refused at once");
    for (int i = 0; i < 3; i++) {
        long long t0 = tu_now_ms();

        TU_CHECK_OK(tfe_connect(newcomer, s.path));
        TU_CHECK(tfe_get_features(newcomer, &features) < 0);
        stall_check_closed(newcomer);
        TU_CHECK_CMP(tu_now_ms() - t0, <, STALL_GRACE_MS);
        tfe_disconnect(newcomer);
        stall_roundtrip(&s, &tx);
    }

    tu_log("newcomers while the ready frontend stalls mid-message: refused");
    TU_CHECK_OK(tfe_sock_send(fe->sock, &get, 5, NULL, 0, TU_TIMEOUT_MS));
    tu_sleep_ms(STALL_GRACE_MS + 100);
    for (int i = 0; i < 2; i++) {
        TU_CHECK_OK(tfe_connect(newcomer, s.path));
        TU_CHECK(tfe_get_features(newcomer, &features) < 0);
        stall_check_closed(newcomer);
        tfe_disconnect(newcomer);
    }
    stall_roundtrip(&s, &tx);

    tu_log("the ready frontend finishes its message and is answered");
    TU_CHECK_OK(tfe_sock_send(fe->sock, (uint8_t *) &get + 5, 7, NULL, 0,
                              TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_recv_u64(fe, VHOST_USER_GET_FEATURES, &features));
    TU_CHECK_OK(tfe_sync(fe));
    TU_CHECK(tu_port_info(s.port).ready);
    stall_roundtrip(&s, &tx);

    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 0);
    TU_CHECK_EQ(c.extra_conns_refused, 5);
    TU_CHECK_EQ(c.connects, 1);
    TU_CHECK_EQ(c.disconnects, 0);
    TU_CHECK_EQ(atomic_load(&stall_n_displaced_logs), 0);
    TU_CHECK_CMP(atomic_load(&stall_n_refused_logs), >=, 1);
    TU_CHECK_EQ(tu_events_count(&s.ev, TU_EV_GONE), 0);
    tfe_vq_destroy(&tx);
    tfe_destroy(fe);
    tfe_destroy(newcomer);
    stall_finish(&s);
}

static void
test_stall_ready_kept_split(void)
{
    stall_ready_kept(false);
}

static void
test_stall_ready_kept_packed(void)
{
    stall_ready_kept(true);
}

/* A real frontend in the middle of its setup (QEMU's order: GET_FEATURES,
 * GET/SET_PROTOCOL_FEATURES, SET_OWNER, ...) is not displaced by a stream
 * of connections, each arriving before it has sent SET_OWNER; and an owner
 * that waits for its guest (SET_OWNER, nothing more) is not displaced by
 * one either, however long it waits. */
static void
test_stall_setup_kept(void)
{
    struct tfe *fe;
    struct tfe *others[3];
    struct vhost_port_counters c;
    struct stall s;
    uint64_t features, protocol;

    stall_start(&s, "stall-setup");
    fe = tfe_create(tfe_mem_create_default());
    for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
        others[i] = tfe_create(NULL);
    }

    tu_log("a connection arrives before each of the first messages");
    stall_connect(&s, fe, 1);
    TU_CHECK_OK(tfe_connect(others[0], s.path));
    TU_CHECK_OK(tfe_get_features(fe, &features));
    TU_CHECK_OK(tfe_connect(others[1], s.path));
    TU_CHECK_OK(tfe_get_protocol_features(fe, &protocol));
    TU_CHECK_OK(tfe_set_protocol_features(fe, protocol));
    TU_CHECK_OK(tfe_connect(others[2], s.path));
    TU_CHECK_OK(tfe_set_owner(fe));
    TU_CHECK_OK(tfe_sync(fe));
    for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
        stall_check_closed(others[i]);
        tfe_disconnect(others[i]);
    }
    c = stall_counters(&s);
    TU_CHECK_EQ(c.extra_conns_refused, 3);
    TU_CHECK_EQ(c.frontends_displaced, 0);

    tu_log("the owner waits for its guest; a connection arrives meanwhile");
    tu_sleep_ms(STALL_GRACE_MS + 100);
    TU_CHECK_OK(tfe_connect(others[0], s.path));
    TU_CHECK(tfe_get_features(others[0], &features) < 0);
    stall_check_closed(others[0]);
    tfe_disconnect(others[0]);

    tu_log("the owner sets the device up");
    TU_CHECK_OK(tfe_setup_device(fe, 1, NULL));
    TU_CHECK(tu_port_info(s.port).ready);

    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 0);
    TU_CHECK_EQ(c.extra_conns_refused, 4);
    TU_CHECK_EQ(c.connects, 1);
    TU_CHECK_EQ(c.disconnects, 0);
    TU_CHECK_EQ(atomic_load(&stall_n_displaced_logs), 0);
    TU_CHECK_EQ(atomic_load(&stall_n_refused_logs), 4);
    for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
        tfe_destroy(others[i]);
    }
    tfe_destroy(fe);
    stall_finish(&s);
}

/* A newcomer that itself stalls does not keep out a third: while it waits
 * behind a silent connection, the third replaces it; once it is served,
 * it is judged like any other and the third takes its place. */
static void
test_stall_newcomer_stalls(void)
{
    struct vhost_user_hdr get = { VHOST_USER_GET_FEATURES,
                                  VHOST_USER_VERSION, 0 };
    struct tfe *silent;
    struct tfe *staller;
    struct tfe *good;
    struct vhost_port_counters c;
    struct stall s;

    stall_start(&s, "stall-third");
    silent = tfe_create(NULL);
    staller = tfe_create(NULL);
    good = tfe_create(tfe_mem_create_default());

    tu_log("a silent connection; a staller waits behind it; a third comes");
    stall_connect(&s, silent, 1);
    TU_CHECK_OK(tfe_connect(staller, s.path));
    TU_CHECK_OK(tfe_sock_send(staller->sock, &get, 5, NULL, 0,
                              TU_TIMEOUT_MS));
    stall_serve_good(&s, good, false);
    stall_check_closed(silent);
    stall_check_closed(staller);
    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 1);
    TU_CHECK_EQ(c.extra_conns_refused, 1);
    TU_CHECK_EQ(c.connects, 2);
    tfe_disconnect(silent);
    tfe_disconnect(staller);
    tfe_disconnect(good);
    TU_CHECK(tu_wait_port(s.port, tu_port_disconnected, NULL, TU_TIMEOUT_MS));

    tu_log("a silent connection; a staller takes its place, then stalls; "
           "a third comes");
    stall_connect(&s, silent, 3);
    TU_CHECK_OK(tfe_connect(staller, s.path));
    TU_CHECK_OK(tfe_sock_send(staller->sock, &get, 5, NULL, 0,
                              TU_TIMEOUT_MS));
    stall_check_closed(silent);
    TU_CHECK(tu_wait_port(s.port, stall_connects__, &(uint64_t) { 4 },
                          TU_TIMEOUT_MS));
    stall_serve_good(&s, good, true);
    stall_check_closed(staller);
    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 3);
    TU_CHECK_EQ(c.extra_conns_refused, 1);
    TU_CHECK_EQ(c.connects, 5);
    TU_CHECK_EQ(c.msg_timeouts, 0);
    TU_CHECK_EQ(atomic_load(&stall_n_displaced_logs), 3);

    tfe_destroy(silent);
    tfe_destroy(staller);
    tfe_destroy(good);
    stall_finish(&s);
}

/* The current connection ends while a newcomer waits: the newcomer is
 * served at once, not after the grace.  The port is destroyed while a
 * newcomer waits: its connection is closed. */
static void
test_stall_pending_next(void)
{
    struct vhost_user_hdr get = { VHOST_USER_GET_FEATURES,
                                  VHOST_USER_VERSION, 0 };
    struct tfe *first;
    struct tfe *good;
    struct vhost_port_counters c;
    struct stall s;
    uint64_t features;
    long long t0;

    stall_start(&s, "stall-next");
    first = tfe_create(NULL);
    good = tfe_create(tfe_mem_create_default());
    stall_connect(&s, first, 1);
    TU_CHECK_OK(tfe_get_features(first, &features));
    TU_CHECK_OK(tfe_set_owner(first));
    TU_CHECK_OK(tfe_sync(first));
    tu_log("an owner starts a message; a newcomer waits; the owner hangs up");
    t0 = tu_now_ms();
    TU_CHECK_OK(tfe_sock_send(first->sock, &get, 5, NULL, 0, TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_connect(good, s.path));
    tfe_disconnect(first);
    TU_CHECK_OK(tfe_get_features(good, &features));
    tu_log("  answered %lld ms after the message started", tu_now_ms() - t0);
    TU_CHECK_CMP(tu_now_ms() - t0, <, STALL_GRACE_MS / 2);
    TU_CHECK_OK(tfe_setup_device(good, 1, NULL));
    TU_CHECK(tu_port_info(s.port).ready);
    c = stall_counters(&s);
    TU_CHECK_EQ(c.frontends_displaced, 0);
    TU_CHECK_EQ(c.extra_conns_refused, 0);
    TU_CHECK_EQ(c.connects, 2);
    TU_CHECK_EQ(c.disconnects, 1);

    tu_log("the port is destroyed while a newcomer waits: its fd is closed");
    TU_CHECK_OK(tfe_connect(first, s.path));
    TU_CHECK(tfe_get_features(first, &features) < 0);
    tfe_disconnect(good);
    TU_CHECK(tu_wait_port(s.port, tu_port_disconnected, NULL, TU_TIMEOUT_MS));
    stall_connect(&s, good, 3);
    TU_CHECK_OK(tfe_connect(first, s.path));
    tu_sleep_ms(50);
    vhost_port_destroy(s.port);
    s.port = NULL;
    stall_check_closed(first);
    stall_check_closed(good);
    tfe_destroy(first);
    tfe_destroy(good);
    stall_finish(&s);
}

const struct tu_test tu_adv_stall_tests[] = {
    { "adv-stall-mid-message", test_stall_mid_message,
      "a frontend stalled mid-message is displaced by the next" },
    { "adv-stall-silent", test_stall_silent,
      "a connection that sends nothing or no SET_OWNER is displaced" },
    { "adv-stall-ready-kept-split", test_stall_ready_kept_split,
      "split: a ready frontend is never displaced" },
    { "adv-stall-ready-kept-packed", test_stall_ready_kept_packed,
      "packed: a ready frontend is never displaced" },
    { "adv-stall-setup-kept", test_stall_setup_kept,
      "a frontend mid-setup, or an idle owner, is not displaced" },
    { "adv-stall-newcomer-stalls", test_stall_newcomer_stalls,
      "a newcomer that stalls does not keep out a third" },
    { "adv-stall-pending-next", test_stall_pending_next,
      "a waiting newcomer is served as soon as the current one goes" },
};
const size_t tu_n_adv_stall_tests = ARRAY_SIZE(tu_adv_stall_tests);
