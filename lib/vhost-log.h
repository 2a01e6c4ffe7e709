/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging for the engine: one process-wide handler (set by the embedder
 * through vhost_log_set_handler()), a level filter, and token-bucket rate
 * limiters for messages a peer can provoke at will.
 *
 * Usage
 * =====
 *
 *     static struct vhost_ratelimit rl = VHOST_RATELIMIT_INIT(5, 20);
 *     VHOST_LOG_RL(&rl, VHOST_LOG_WARN, "%s: bad index %u", name, idx);
 *
 * Each device carries its own limiter, so one misbehaving frontend cannot
 * silence the messages about another.
 *
 * Thread-safety
 * =============
 *
 * vhost_log() may be called from any thread.  A rate limiter must be used
 * by one thread at a time (the device's, under the engine mutex).
 */

#ifndef OVS_VHOST_VHOST_LOG_H
#define OVS_VHOST_VHOST_LOG_H 1

#include <stdbool.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include "util.h"

/* A token bucket: 'rate' messages a minute on average, bursts of up to
 * 'burst'.  Messages over the limit are counted in 'dropped' and reported
 * with the next message that gets through. */
struct vhost_ratelimit {
    unsigned int rate;          /* Tokens per minute. */
    unsigned int burst;         /* Bucket size. */
    unsigned int tokens;        /* In thousandths, for smooth refill. */
    long long int last_fill;    /* Monotonic ms. */
    unsigned int dropped;       /* Suppressed since the last one shown. */
    bool started;
};

#define VHOST_RATELIMIT_INIT(RATE, BURST) \
    { .rate = (RATE), .burst = (BURST) }

void vhost_log(enum vhost_log_level, const char *format, ...)
    OVS_PRINTF_FORMAT(2, 3);
bool vhost_log_enabled(enum vhost_log_level);
bool vhost_ratelimit_allow(struct vhost_ratelimit *);
void vhost_log_rl(struct vhost_ratelimit *, enum vhost_log_level,
                  const char *format, ...) OVS_PRINTF_FORMAT(3, 4);

long long int vhost_time_msec(void);

#define VLOG_ERR(...) vhost_log(VHOST_LOG_ERR, __VA_ARGS__)
#define VLOG_WARN(...) vhost_log(VHOST_LOG_WARN, __VA_ARGS__)
#define VLOG_INFO(...) vhost_log(VHOST_LOG_INFO, __VA_ARGS__)
#define VLOG_DBG(...)                                           \
    do {                                                        \
        if (vhost_log_enabled(VHOST_LOG_DBG)) {                 \
            vhost_log(VHOST_LOG_DBG, __VA_ARGS__);              \
        }                                                       \
    } while (0)

#endif /* vhost-log.h */
