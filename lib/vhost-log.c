/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine logging: see vhost-log.h.
 */

#include <config.h>
#include "vhost-log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"

static void vhost_log_default__(enum vhost_log_level, const char *msg,
                                void *aux);

static vhost_log_handler *log_handler = vhost_log_default__;
static void *log_aux;
static enum vhost_log_level log_max_level = VHOST_LOG_INFO;

static void
vhost_log_default__(enum vhost_log_level level, const char *msg, void *aux)
{
    fprintf(stderr, "ovs-vhost|%s|%s\n", vhost_log_level_to_string(level),
            msg);
}

/* Sets the function that receives every log message to 'handler' (or back
 * to the stderr default if it is null), called with 'aux'.  Call it before
 * the engine runs: the handler is read without a lock. */
void
vhost_log_set_handler(vhost_log_handler *handler, void *aux)
{
    log_handler = handler ? handler : vhost_log_default__;
    log_aux = aux;
}

/* Messages less severe than 'max_level' are dropped before formatting. */
void
vhost_log_set_level(enum vhost_log_level max_level)
{
    log_max_level = max_level;
}

const char *
vhost_log_level_to_string(enum vhost_log_level level)
{
    switch (level) {
    case VHOST_LOG_ERR: return "ERR";
    case VHOST_LOG_WARN: return "WARN";
    case VHOST_LOG_INFO: return "INFO";
    case VHOST_LOG_DBG: return "DBG";
    }
    return "?";
}

bool
vhost_log_enabled(enum vhost_log_level level)
{
    return level <= log_max_level;
}

static void OVS_PRINTF_FORMAT(3, 0)
vhost_log_valist__(enum vhost_log_level level, unsigned int dropped,
                   const char *format, va_list args)
{
    char buf[1024];
    int n = vsnprintf(buf, sizeof buf, format, args);

    if (dropped && n >= 0 && (size_t) n < sizeof buf) {
        snprintf(buf + n, sizeof buf - n,
                 " (%u similar messages suppressed)", dropped);
    }
    log_handler(level, buf, log_aux);
}

void
vhost_log(enum vhost_log_level level, const char *format, ...)
{
    if (!vhost_log_enabled(level)) {
        return;
    }

    int save_errno = errno;
    va_list args;
    va_start(args, format);
    vhost_log_valist__(level, 0, format, args);
    va_end(args);
    errno = save_errno;
}

/* Returns the monotonic time in milliseconds. */
long long int
vhost_time_msec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long int) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns true if 'rl' lets one more message through now, consuming a
 * token; otherwise counts the message as dropped. */
bool
vhost_ratelimit_allow(struct vhost_ratelimit *rl)
{
    long long int now = vhost_time_msec();

    if (!rl->started) {
        rl->started = true;
        rl->tokens = rl->burst * 1000;
        rl->last_fill = now;
    } else if (now > rl->last_fill) {
        /* 'rate' tokens a minute is 'rate' thousandths of a token per
         * 60 ms. */
        unsigned long long add = (unsigned long long) (now - rl->last_fill)
                                 * rl->rate / 60;
        unsigned long long max = (unsigned long long) rl->burst * 1000;
        unsigned long long t = rl->tokens + add;

        rl->tokens = t > max ? max : t;
        rl->last_fill = now;
    }

    if (rl->tokens >= 1000) {
        rl->tokens -= 1000;
        return true;
    }
    rl->dropped++;
    return false;
}

/* Logs like vhost_log(), if 'rl' allows it. */
void
vhost_log_rl(struct vhost_ratelimit *rl, enum vhost_log_level level,
             const char *format, ...)
{
    if (!vhost_log_enabled(level) || !vhost_ratelimit_allow(rl)) {
        return;
    }

    int save_errno = errno;
    unsigned int dropped = rl->dropped;
    va_list args;

    rl->dropped = 0;
    va_start(args, format);
    vhost_log_valist__(level, dropped, format, args);
    va_end(args);
    errno = save_errno;
}
