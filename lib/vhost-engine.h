/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's event loop, as seen by the ports: fd watches on one epoll
 * set, one-shot timers, the engine mutex, and the list of ports.
 *
 * Usage
 * =====
 *
 * A port embeds a struct vhost_engine_watch per fd and a struct
 * vhost_engine_timer, and registers them here.  vhost_engine_run() waits on
 * the epoll set (without the mutex), then takes the mutex and calls the
 * callbacks of the watches that fired and the timers that expired.
 *
 * A port destroyed while a run may hold a stale event for one of its
 * watches (another thread destroyed it while the loop thread sat in
 * epoll_wait()) is not freed at once: vhost_engine_defer_free() parks it,
 * and the loop frees it after it has handled that batch of events.
 *
 * Thread-safety
 * =============
 *
 * Everything here is called with the engine mutex held, except
 * vhost_engine_lock() itself.  Only one thread may run the loop at a time.
 */

#ifndef OVS_VHOST_VHOST_ENGINE_H
#define OVS_VHOST_VHOST_ENGINE_H 1

#include <stdbool.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include "util.h"

struct vhost_engine_watch {
    int fd;                     /* -1 when not registered. */
    bool dead;                  /* Removed: ignore stale events. */
    void (*cb)(struct vhost_engine_watch *, uint32_t events);
};

struct vhost_engine_timer {
    struct ovs_list node;       /* In the engine's timer list, if armed. */
    bool armed;
    long long int when;         /* Monotonic ms. */
    void (*cb)(struct vhost_engine_timer *);
};

/* Something freed later: see vhost_engine_defer_free(). */
struct vhost_engine_zombie {
    struct ovs_list node;
    void (*free)(struct vhost_engine_zombie *);
};

void vhost_engine_lock(struct vhost_engine *);
void vhost_engine_unlock(struct vhost_engine *);

int vhost_engine_watch_add(struct vhost_engine *, struct vhost_engine_watch *,
                           int fd,
                           void (*cb)(struct vhost_engine_watch *, uint32_t));
void vhost_engine_watch_del(struct vhost_engine *,
                            struct vhost_engine_watch *);
int vhost_engine_watch_set_output(struct vhost_engine *,
                                  struct vhost_engine_watch *, bool output);
int vhost_engine_watch_hold(struct vhost_engine *,
                            struct vhost_engine_watch *, bool hold);

void vhost_engine_timer_init(struct vhost_engine_timer *,
                             void (*cb)(struct vhost_engine_timer *));
void vhost_engine_timer_arm(struct vhost_engine *, struct vhost_engine_timer *,
                            unsigned int delay_ms);
void vhost_engine_timer_cancel(struct vhost_engine_timer *);

void vhost_engine_add_port(struct vhost_engine *, struct ovs_list *node);
int vhost_engine_wake_fd(const struct vhost_engine *);
const struct ovs_list *vhost_engine_ports(const struct vhost_engine *);
void vhost_engine_defer_free(struct vhost_engine *,
                             struct vhost_engine_zombie *);

#endif /* vhost-engine.h */
