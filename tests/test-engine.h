/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests (test-engine-*.c): the shared fixture.
 *
 * The engine runs in-process (in its own thread, or driven from this thread
 * in the embedder-loop test) and the test plays the frontend with tfe
 * (test-frontend.h).  Every test ends with the same leak check: the fds,
 * threads and guest mappings of the process are back where they were before
 * the engine was created.
 *
 * Counting fds: the test process holds both ends of everything.  The
 * engine's share is what /proc/self/fd holds minus what the frontends hold
 * (tfe_count_fds()), so a test takes that figure before sending a message
 * with fds, closes the frontend's copies afterwards, and compares.
 *
 * The tests, by file:
 *   test-engine-proto.c   lifecycle, features, REPLY_ACK, the rejection
 *                         policy, payload sizes, fds, unknown requests,
 *                         framing, ownership and reset
 *   test-engine-mem.c     memory tables and memory slots
 *   test-engine-vring.c   vring messages, out-of-range indices, readiness,
 *                         callbacks around a disconnect, kick/call without
 *                         an fd
 *   test-engine-device.c  device configuration, the dirty log, the log call
 *                         fd and the backend channel
 *   test-engine-socket.c  sockets in server and client mode, many ports,
 *                         isolation, slow frontends, the embedder's loop, a
 *                         sweep of every request with junk
 */

#ifndef OVS_VHOST_TEST_ENGINE_H
#define OVS_VHOST_TEST_ENGINE_H 1

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-dirty-log.h"
#include "vhost-user-msg.h"
#include "virtio.h"

/* The protocol features the engine implements (the contract). */
#define SUPPORTED_PROTOCOL_FEATURES                                     \
    (FEATURE_BIT(VHOST_USER_PROTOCOL_F_MQ)                              \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_LOG_SHMFD)                     \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_RARP)                          \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)                     \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_NET_MTU)                       \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ)                   \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)           \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_STATUS)                        \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_PAGEFAULT)                     \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIG))

#define PF(NAME) FEATURE_BIT(VHOST_USER_PROTOCOL_F_##NAME)

/* Fixture: one engine in its own thread, one port, one frontend. */
struct fx {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct vhost_port_options opts;
    struct tu_events ev;
    char *path;
    struct tfe *fe;

    /* Process baseline, taken before the engine exists. */
    int fds0;
    int threads0;
};

/* Checks that EXPR, a typed tfe request with NEED_REPLY, was rejected with
 * a nonzero ack, that msgs_rejected grew by one, and that the connection
 * is still up. */
#define CHECK_NACK(FX, EXPR)                                            \
    do {                                                                \
        uint64_t rej_ = fx_counters(FX).msgs_rejected;                     \
        int r_ = (EXPR);                                                \
        if (r_ != TFE_NACK) {                                           \
            TU_FAIL("%s: expected a nonzero ack, got %s", #EXPR,        \
                    fx_result_to_string(r_));                              \
        }                                                               \
        TU_CHECK_EQ(fx_counters(FX).msgs_rejected, rej_ + 1);              \
    } while (0)

/* Checks that EXPR, a typed tfe request, was accepted (ack 0). */
#define CHECK_ACK(EXPR)                                                 \
    do {                                                                \
        int r_ = (EXPR);                                                \
        if (r_) {                                                       \
            TU_FAIL("%s: expected success, got %s", #EXPR,              \
                    fx_result_to_string(r_));                              \
        }                                                               \
    } while (0)

/* Shared by the engine test files: see test-engine-fixture.c. */
void fx_init(struct fx *fx, const char *name);
struct vhost_engine *fx_start_engine(void);
void fx_create_port(struct fx *fx);
void fx_wait_connected(struct fx *fx);
void fx_wait_disconnected(struct fx *fx);
void fx_connect_fe(struct fx *fx, struct tfe *fe);
void fx_start(struct fx *fx);
void fx_finish(struct fx *fx);
struct vhost_port_counters fx_counters(struct fx *fx);
int fx_engine_fds(const struct fx *fx);
int fx_engine_maps(const struct fx *fx);
int fx_temp_eventfd(void);
const char *fx_result_to_string(int r);
void fx_expect_disconnect(struct fx *fx, struct tfe *fe, const char *why);
void fx_negotiate(struct tfe *fe);
void fx_reconnect(struct fx *fx);
void fx_setup_ready(struct fx *fx, unsigned int n_pairs);

#endif /* OVS_VHOST_TEST_ENGINE_H */
