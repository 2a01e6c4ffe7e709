/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's event loop: see vhost-engine.h and the public vhost.h.
 */

#include <config.h>
#include "vhost-engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "guest-mem-guard.h"
#include "vhost-log.h"
#include "vhost-port.h"

/* Events handled per epoll_wait(); more wait for the next round. */
#define VHOST_ENGINE_MAX_EVENTS 64

struct vhost_engine {
    pthread_mutex_t mutex;          /* Recursive: callbacks may re-enter. */
    int epoll_fd;
    int wake_fd;                    /* eventfd: wakes the loop. */
    struct vhost_engine_watch wake_watch;

    struct ovs_list ports;          /* Every port, by its 'node'. */
    struct ovs_list timers;         /* Armed timers, unsorted. */
    struct ovs_list zombies;        /* Freed after the current batch. */

    /* guest_mem_guard_seq() when the ports last looked for guarded
     * faults. */
    unsigned int guard_seq;

    /* The engine's own thread, if vhost_engine_start() made one. */
    pthread_t thread;
    bool has_thread;
    atomic_bool stop;
};

void
vhost_engine_lock(struct vhost_engine *engine)
{
    pthread_mutex_lock(&engine->mutex);
}

void
vhost_engine_unlock(struct vhost_engine *engine)
{
    pthread_mutex_unlock(&engine->mutex);
}

/* Wakes a thread sleeping in vhost_engine_run(), so that it recomputes its
 * timeout or notices 'stop'. */
static void
vhost_engine_wake__(struct vhost_engine *engine)
{
    uint64_t one = 1;

    if (write(engine->wake_fd, &one, sizeof one) < 0) {
        /* The counter is saturated: the loop is awake anyway. */
    }
}

static void
vhost_engine_wake_cb__(struct vhost_engine_watch *watch, uint32_t events)
{
    uint64_t count;
    struct vhost_engine_watch *w = watch;

    if (read(w->fd, &count, sizeof count) < 0) {
        /* EAGAIN: someone else drained it. */
    }
}

/* Creates an engine with no ports and stores it in '*enginep'.  Returns 0
 * or a positive errno value. */
int
vhost_engine_create(struct vhost_engine **enginep)
{
    struct vhost_engine *engine = calloc(1, sizeof *engine);
    pthread_mutexattr_t attr;
    int error;

    *enginep = NULL;
    if (!engine) {
        return ENOMEM;
    }
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&engine->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    ovs_list_init(&engine->ports);
    ovs_list_init(&engine->timers);
    ovs_list_init(&engine->zombies);
    atomic_init(&engine->stop, false);
    engine->wake_watch.fd = -1;
    engine->guard_seq = guest_mem_guard_seq();

    engine->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    engine->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (engine->epoll_fd < 0 || engine->wake_fd < 0) {
        error = errno;
        goto error;
    }
    error = vhost_engine_watch_add(engine, &engine->wake_watch,
                                   engine->wake_fd, vhost_engine_wake_cb__);
    if (error) {
        goto error;
    }
    *enginep = engine;
    return 0;

error:
    close_fd_quietly(engine->epoll_fd);
    close_fd_quietly(engine->wake_fd);
    pthread_mutex_destroy(&engine->mutex);
    free(engine);
    return error;
}

static void
vhost_engine_free_zombies__(struct vhost_engine *engine)
{
    while (!ovs_list_is_empty(&engine->zombies)) {
        struct vhost_engine_zombie *z
            = CONTAINER_OF(engine->zombies.next, struct vhost_engine_zombie,
                           node);
        ovs_list_remove(&z->node);
        z->free(z);
    }
}

/* Stops the engine's thread, if any, destroys every port still on it, and
 * frees it.  Must not be called from a callback. */
void
vhost_engine_destroy(struct vhost_engine *engine)
{
    if (!engine) {
        return;
    }
    vhost_engine_stop(engine);

    vhost_engine_lock(engine);
    while (!ovs_list_is_empty(&engine->ports)) {
        vhost_port_destroy(vhost_port_from_node(engine->ports.next));
    }
    vhost_engine_free_zombies__(engine);
    vhost_engine_unlock(engine);

    close(engine->epoll_fd);
    close(engine->wake_fd);
    pthread_mutex_destroy(&engine->mutex);
    free(engine);
}

/* Returns an fd that becomes readable when the engine has work: the
 * embedder polls it for POLLIN, then calls vhost_engine_run(engine, 0). */
int
vhost_engine_get_fd(const struct vhost_engine *engine)
{
    return engine->epoll_fd;
}

/* Returns how many milliseconds the embedder may wait before it must call
 * vhost_engine_run() even if the fd stays quiet (a reconnect is due), or
 * -1 if no timer is armed. */
int
vhost_engine_next_timeout(struct vhost_engine *engine)
{
    long long int now = vhost_time_msec();
    long long int next = -1;

    vhost_engine_lock(engine);
    for (struct ovs_list *n = engine->timers.next; n != &engine->timers;
         n = n->next) {
        struct vhost_engine_timer *t
            = CONTAINER_OF(n, struct vhost_engine_timer, node);
        long long int left = t->when > now ? t->when - now : 0;

        if (next < 0 || left < next) {
            next = left;
        }
    }
    vhost_engine_unlock(engine);
    return next > INT32_MAX ? INT32_MAX : next;
}

static void
vhost_engine_run_timers__(struct vhost_engine *engine)
{
    long long int now = vhost_time_msec();
    struct ovs_list *n = engine->timers.next;

    /* A callback may arm or cancel any timer, so restart the scan after
     * each one. */
    while (n != &engine->timers) {
        struct vhost_engine_timer *t
            = CONTAINER_OF(n, struct vhost_engine_timer, node);

        if (t->when <= now) {
            vhost_engine_timer_cancel(t);
            t->cb(t);
            n = engine->timers.next;
        } else {
            n = n->next;
        }
    }
}

/* After a guarded SIGBUS anywhere in the process (the handler moved the
 * sequence number, then wrote the owner's engine's wake fd), lets each
 * port see whether it was its own. */
static void
vhost_engine_run_guard__(struct vhost_engine *engine)
{
    unsigned int seq = guest_mem_guard_seq();

    if (OVS_UNLIKELY(seq != engine->guard_seq)) {
        engine->guard_seq = seq;
        for (struct ovs_list *n = engine->ports.next; n != &engine->ports;
             n = n->next) {
            vhost_port_run_guard(vhost_port_from_node(n));
        }
    }
}

/* Waits up to 'timeout_ms' milliseconds (0: not at all; negative: until
 * something happens) for socket activity or a due timer, and handles what
 * there is.  Returns 0 or a positive errno value from epoll_wait(). */
int
vhost_engine_run(struct vhost_engine *engine, int timeout_ms)
{
    struct epoll_event events[VHOST_ENGINE_MAX_EVENTS];
    int next = vhost_engine_next_timeout(engine);

    if (next >= 0 && (timeout_ms < 0 || next < timeout_ms)) {
        timeout_ms = next;
    }

    /* Wait without the mutex, so that the embedder's threads can call in;
     * a watch removed meanwhile is marked dead and its owner parked. */
    int n = epoll_wait(engine->epoll_fd, events, VHOST_ENGINE_MAX_EVENTS,
                       timeout_ms);
    if (n < 0) {
        return errno == EINTR ? 0 : errno;
    }

    vhost_engine_lock(engine);
    for (int i = 0; i < n; i++) {
        struct vhost_engine_watch *w = events[i].data.ptr;

        if (!w->dead) {
            w->cb(w, events[i].events);
        }
    }
    vhost_engine_run_guard__(engine);
    vhost_engine_run_timers__(engine);
    vhost_engine_free_zombies__(engine);
    vhost_engine_unlock(engine);
    return 0;
}

static void *
vhost_engine_thread__(void *engine_)
{
    struct vhost_engine *engine = engine_;

    while (!atomic_load(&engine->stop)) {
        int error = vhost_engine_run(engine, -1);
        if (error) {
            VLOG_ERR("engine loop: epoll_wait failed (%s)", strerror(error));
            usleep(100 * 1000);
        }
    }
    return NULL;
}

/* Starts a thread that runs the engine's loop until vhost_engine_stop().
 * Returns 0, EALREADY if one runs, or a positive errno value. */
int
vhost_engine_start(struct vhost_engine *engine)
{
    if (engine->has_thread) {
        return EALREADY;
    }
    atomic_store(&engine->stop, false);
    int error = pthread_create(&engine->thread, NULL, vhost_engine_thread__,
                               engine);
    if (!error) {
        engine->has_thread = true;
    }
    return error;
}

/* Stops and joins the thread vhost_engine_start() started, if any.  Must
 * not be called from a callback. */
void
vhost_engine_stop(struct vhost_engine *engine)
{
    if (engine->has_thread) {
        atomic_store(&engine->stop, true);
        vhost_engine_wake__(engine);
        pthread_join(engine->thread, NULL);
        engine->has_thread = false;
    }
}

/* Starts watching 'fd' for input with 'watch', which calls 'cb'.  Returns 0
 * or a positive errno value. */
int
vhost_engine_watch_add(struct vhost_engine *engine,
                       struct vhost_engine_watch *watch, int fd,
                       void (*cb)(struct vhost_engine_watch *, uint32_t))
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = watch };

    watch->fd = fd;
    watch->dead = false;
    watch->cb = cb;
    if (epoll_ctl(engine->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
        watch->fd = -1;
        return errno;
    }
    return 0;
}

/* Stops 'watch'.  Its fd stays open: the caller closes it after this. */
void
vhost_engine_watch_del(struct vhost_engine *engine,
                       struct vhost_engine_watch *watch)
{
    if (watch->fd >= 0) {
        epoll_ctl(engine->epoll_fd, EPOLL_CTL_DEL, watch->fd, NULL);
        watch->fd = -1;
        watch->dead = true;
    }
}

/* Makes 'watch' wait for its fd to become writable ('output' true) instead
 * of readable, or back.  Returns 0 or a positive errno value. */
int
vhost_engine_watch_set_output(struct vhost_engine *engine,
                              struct vhost_engine_watch *watch, bool output)
{
    struct epoll_event ev = {
        .events = output ? EPOLLOUT : EPOLLIN,
        .data.ptr = watch,
    };

    return epoll_ctl(engine->epoll_fd, EPOLL_CTL_MOD, watch->fd, &ev)
           ? errno : 0;
}

/* Makes 'watch' report only a hang-up or an error of its fd ('hold' true),
 * or readability again.  For a connection that must read nothing for a
 * while, without the loop spinning on its pending input.  Returns 0 or a
 * positive errno value. */
int
vhost_engine_watch_hold(struct vhost_engine *engine,
                        struct vhost_engine_watch *watch, bool hold)
{
    struct epoll_event ev = {
        .events = hold ? 0 : EPOLLIN,
        .data.ptr = watch,
    };

    return epoll_ctl(engine->epoll_fd, EPOLL_CTL_MOD, watch->fd, &ev)
           ? errno : 0;
}

void
vhost_engine_timer_init(struct vhost_engine_timer *timer,
                        void (*cb)(struct vhost_engine_timer *))
{
    ovs_list_init(&timer->node);
    timer->armed = false;
    timer->cb = cb;
}

/* Arms 'timer' to fire 'delay_ms' from now, replacing any earlier time. */
void
vhost_engine_timer_arm(struct vhost_engine *engine,
                       struct vhost_engine_timer *timer, unsigned int delay_ms)
{
    vhost_engine_timer_cancel(timer);
    timer->when = vhost_time_msec() + delay_ms;
    timer->armed = true;
    ovs_list_push_back(&engine->timers, &timer->node);
    vhost_engine_wake__(engine);
}

void
vhost_engine_timer_cancel(struct vhost_engine_timer *timer)
{
    if (timer->armed) {
        ovs_list_remove(&timer->node);
        timer->armed = false;
    }
}

void
vhost_engine_add_port(struct vhost_engine *engine, struct ovs_list *node)
{
    ovs_list_push_back(&engine->ports, node);
}

/* Returns the eventfd that wakes the loop: written by the SIGBUS guard
 * (guest-mem-guard.h), which may not take the mutex. */
int
vhost_engine_wake_fd(const struct vhost_engine *engine)
{
    return engine->wake_fd;
}

const struct ovs_list *
vhost_engine_ports(const struct vhost_engine *engine)
{
    return &engine->ports;
}

/* Parks 'z', to be freed when the loop has finished with its current batch
 * of events (or when the engine is destroyed). */
void
vhost_engine_defer_free(struct vhost_engine *engine,
                        struct vhost_engine_zombie *z)
{
    ovs_list_push_back(&engine->zombies, &z->node);
}
