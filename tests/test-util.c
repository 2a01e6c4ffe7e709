/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the C test drivers.  See test-util.h.
 */

#include <config.h>
#include "test-util.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void
tu_log(const char *format, ...)
{
    va_list args;

    va_start(args, format);
    fputs("test: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

void
tu_fail(const char *file, int line, const char *format, ...)
{
    va_list args;

    va_start(args, format);
    fprintf(stderr, "%s:%d: FAIL: ", file, line);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    tu_dump_fds();
    fflush(stderr);
    exit(1);
}

/* Prints every open fd and what it refers to, for a failure report. */
void
tu_dump_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;

    if (!dir) {
        return;
    }
    fprintf(stderr, "open fds:\n");
    while ((de = readdir(dir)) != NULL) {
        char link[300], target[256];
        ssize_t n;

        if (de->d_name[0] == '.') {
            continue;
        }
        snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
        n = readlink(link, target, sizeof target - 1);
        target[n < 0 ? 0 : n] = '\0';
        fprintf(stderr, "  %s -> %s\n", de->d_name, target);
    }
    closedir(dir);
}

/* Returns 'r', after failing the test at 'file':'line' if it is negative
 * (a libc call that failed and set errno). */
long long
tu_sys__(long long r, const char *expr, const char *file, int line)
{
    if (r < 0) {
        tu_fail(file, line, "%s: %s", expr, strerror(errno));
    }
    return r;
}

/* Returns a description of 'error', which may be a positive errno value, a
 * negative one, or some other nonzero number. */
const char *
tu_strerror(long long error)
{
    long long e = error < 0 ? -error : error;

    return e > 0 && e < 4096 ? strerror((int) e) : "not an errno value";
}

/* Returns the number of entries in directory 'path' other than "." and
 * "..", failing the test if it cannot be read. */
static int
count_dir_entries(const char *path)
{
    DIR *dir = opendir(path);
    struct dirent *de;
    int n = 0;

    if (!dir) {
        TU_FAIL("opendir(%s): %s", path, strerror(errno));
    }
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            n++;
        }
    }
    closedir(dir);
    return n;
}

/* Returns the number of open fds in this process.  The fd that opendir()
 * uses to read /proc/self/fd is counted too, consistently, so only
 * differences between two counts mean anything. */
int
tu_count_fds(void)
{
    return count_dir_entries("/proc/self/fd");
}

/* Returns the number of threads in this process. */
int
tu_count_threads(void)
{
    return count_dir_entries("/proc/self/task");
}

/* Returns the number of threads once it is 'expected', or after 2 s.  A
 * joined thread can still be listed in /proc/self/task for a moment (the
 * kernel wakes the joiner before it reaps the task), so a check right
 * after pthread_join() would be flaky under load. */

/* Records its thread id in '*tid_'. */
static void *
tu_nothing__(void *tid_)
{
    *(pid_t *) tid_ = syscall(SYS_gettid);
    return NULL;
}

static bool
tu_task_gone__(void *path)
{
    return access(path, F_OK) != 0;
}

/* Returns the number of this process's threads, counted after a thread
 * was created and reaped: ThreadSanitizer starts a thread of its own with
 * the first thread a process creates, and a test that starts threads
 * would otherwise find one more at its end than at its start.  The wait
 * for the reaping (up to 2 s) is because the kernel wakes the joiner
 * before it reaps the task, and a count taken in between is one too
 * high. */
int
tu_thread_baseline(void)
{
    char path[64];
    pthread_t t;
    pid_t tid = 0;

    TU_CHECK_OK(pthread_create(&t, NULL, tu_nothing__, &tid));
    TU_CHECK_OK(pthread_join(t, NULL));
    snprintf(path, sizeof path, "/proc/self/task/%ld", (long) tid);
    tu_wait_until(tu_task_gone__, path, 2000);
    return tu_count_threads();
}

int
tu_threads_settle(int expected)
{
    int n = tu_count_threads();

    for (int i = 0; n != expected && i < 400; i++) {
        tu_sleep_ms(5);
        n = tu_count_threads();
    }
    return n;
}

/* Returns the number of lines in /proc/self/maps that contain 'substr'.  A
 * memfd mapping's line names the memfd ("/memfd:tfe-guest (deleted)"). */
int
tu_count_maps(const char *substr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;

    if (!f) {
        TU_FAIL("/proc/self/maps: %s", strerror(errno));
    }
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, substr)) {
            n++;
        }
    }
    fclose(f);
    return n;
}

long long
tu_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
tu_sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = ms / 1000,
                           .tv_nsec = (long) (ms % 1000) * 1000000 };

    while (nanosleep(&ts, &ts) && errno == EINTR) {
        continue;
    }
}

/* Calls 'cond'('aux') every few milliseconds until it returns true or
 * 'timeout_ms' have passed.  Returns true if 'cond' became true.  'cond' is
 * always called at least once, and once more after the deadline. */
bool
tu_wait_until(bool (*cond)(void *aux), void *aux, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;

    for (;;) {
        if (cond(aux)) {
            return true;
        }
        if (tu_now_ms() >= deadline) {
            return cond(aux);
        }
        tu_sleep_ms(2);
    }
}

/* Private temporary directory. */

static char *tmpdir;

static void
remove_tmpdir(void)
{
    DIR *dir;
    struct dirent *de;

    if (!tmpdir) {
        return;
    }
    dir = opendir(tmpdir);
    if (dir) {
        while ((de = readdir(dir)) != NULL) {
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                char *p = tu_path(de->d_name);
                unlink(p);
                free(p);
            }
        }
        closedir(dir);
    }
    rmdir(tmpdir);
}

const char *
tu_tmpdir(void)
{
    if (!tmpdir) {
        /* Unix socket paths are limited to 108 bytes: stay short. */
        const char *base = getenv("TMPDIR");
        char *template;

        if (!base || strlen(base) > 40) {
            base = "/tmp";
        }
        if (asprintf(&template, "%s/tvh.XXXXXX", base) < 0
            || !mkdtemp(template)) {
            TU_FAIL("mkdtemp: %s", strerror(errno));
        }
        tmpdir = template;
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

char *
tu_path(const char *name)
{
    char *path;

    if (asprintf(&path, "%s/%s", tu_tmpdir(), name) < 0) {
        TU_FAIL("out of memory");
    }
    return path;
}

/* Callback recorder. */

static void
record(void *aux, enum tu_event_type type, unsigned int qid, bool enabled)
{
    struct tu_events *ev = aux;

    if (!ev) {
        return;
    }
    pthread_mutex_lock(&ev->mutex);
    ev->counts[type]++;
    if (ev->n_log < TU_MAX_EVENTS) {
        ev->log[ev->n_log++] = (struct tu_event) {
            .type = type, .qid = qid, .enabled = enabled,
        };
    }
    pthread_cond_broadcast(&ev->cond);
    pthread_mutex_unlock(&ev->mutex);
}

/* If 'aux' asks for it, reads 'port''s info from inside a callback and
 * records what 'type' saw. */
static void
query(struct vhost_port *port, void *aux, enum tu_event_type type)
{
    struct tu_events *ev = aux;
    struct vhost_port_info info;
    struct vhost_queue_info qinfo;
    bool ok;

    if (!ev || !ev->query) {
        return;
    }
    memset(&info, 0, sizeof info);
    memset(&qinfo, 0, sizeof qinfo);
    ok = !vhost_port_get_info(port, &info)
         && !vhost_port_get_queue_info(port, 0, &qinfo)
         && vhost_port_get_name(port) != NULL;

    pthread_mutex_lock(&ev->mutex);
    ev->info_ok = ev->info_ok && ok;
    if (type == TU_EV_READY) {
        ev->ready_at_ready = info.ready;
        ev->queue0_ready_at_ready = qinfo.ready;
    } else if (type == TU_EV_GONE) {
        ev->ready_at_gone = info.ready;
    }
    pthread_mutex_unlock(&ev->mutex);
}

static void
cb_connected(struct vhost_port *port, void *aux)
{
    query(port, aux, TU_EV_CONNECTED);
    record(aux, TU_EV_CONNECTED, 0, false);
}

static void
cb_device_ready(struct vhost_port *port, void *aux)
{
    query(port, aux, TU_EV_READY);
    record(aux, TU_EV_READY, 0, false);
}

static void
cb_queue_state(struct vhost_port *port, unsigned int qid, bool enabled,
               void *aux)
{
    query(port, aux, TU_EV_QUEUE_STATE);
    record(aux, TU_EV_QUEUE_STATE, qid, enabled);
}

static void
cb_device_gone(struct vhost_port *port, void *aux)
{
    query(port, aux, TU_EV_GONE);
    record(aux, TU_EV_GONE, 0, false);
}

static void
cb_disconnected(struct vhost_port *port, void *aux)
{
    query(port, aux, TU_EV_DISCONNECTED);
    record(aux, TU_EV_DISCONNECTED, 0, false);
}

const struct vhost_port_callbacks tu_callbacks = {
    .connected = cb_connected,
    .device_ready = cb_device_ready,
    .queue_state = cb_queue_state,
    .device_gone = cb_device_gone,
    .disconnected = cb_disconnected,
};

void
tu_events_init(struct tu_events *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->info_ok = true;
    pthread_mutex_init(&ev->mutex, NULL);
    pthread_cond_init(&ev->cond, NULL);
}

void
tu_events_destroy(struct tu_events *ev)
{
    pthread_mutex_destroy(&ev->mutex);
    pthread_cond_destroy(&ev->cond);
}

void
tu_events_clear(struct tu_events *ev)
{
    pthread_mutex_lock(&ev->mutex);
    memset(ev->counts, 0, sizeof ev->counts);
    ev->n_log = 0;
    pthread_mutex_unlock(&ev->mutex);
}

unsigned int
tu_events_count(struct tu_events *ev, enum tu_event_type type)
{
    unsigned int n;

    pthread_mutex_lock(&ev->mutex);
    n = ev->counts[type];
    pthread_mutex_unlock(&ev->mutex);
    return n;
}

static void
deadline_to_timespec(long long timeout_ms, struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (timeout_ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

/* Waits until at least 'count' events of 'type' have been recorded since
 * the last tu_events_clear().  Returns true on success, false on timeout. */
bool
tu_events_wait(struct tu_events *ev, enum tu_event_type type,
               unsigned int count, int timeout_ms)
{
    struct timespec deadline;
    bool ok;

    deadline_to_timespec(timeout_ms, &deadline);
    pthread_mutex_lock(&ev->mutex);
    while (ev->counts[type] < count) {
        if (pthread_cond_timedwait(&ev->cond, &ev->mutex, &deadline)
            == ETIMEDOUT) {
            break;
        }
    }
    ok = ev->counts[type] >= count;
    pthread_mutex_unlock(&ev->mutex);
    return ok;
}

static bool
has_queue_event__(const struct tu_events *ev, unsigned int qid, bool enabled)
{
    for (size_t i = 0; i < ev->n_log; i++) {
        const struct tu_event *e = &ev->log[i];
        if (e->type == TU_EV_QUEUE_STATE && e->qid == qid
            && e->enabled == enabled) {
            return true;
        }
    }
    return false;
}

/* Waits until a queue_state('qid', 'enabled') event has been recorded since
 * the last tu_events_clear().  Returns true on success, false on timeout. */
bool
tu_events_wait_queue(struct tu_events *ev, unsigned int qid, bool enabled,
                     int timeout_ms)
{
    struct timespec deadline;
    bool ok;

    deadline_to_timespec(timeout_ms, &deadline);
    pthread_mutex_lock(&ev->mutex);
    while (!has_queue_event__(ev, qid, enabled)) {
        if (pthread_cond_timedwait(&ev->cond, &ev->mutex, &deadline)
            == ETIMEDOUT) {
            break;
        }
    }
    ok = has_queue_event__(ev, qid, enabled);
    pthread_mutex_unlock(&ev->mutex);
    return ok;
}

/* Copies up to 'max' recorded events into 'out'.  Returns how many. */
size_t
tu_events_snapshot(struct tu_events *ev, struct tu_event *out, size_t max)
{
    size_t n;

    pthread_mutex_lock(&ev->mutex);
    n = MIN(ev->n_log, max);
    memcpy(out, ev->log, n * sizeof *out);
    pthread_mutex_unlock(&ev->mutex);
    return n;
}

const char *
tu_event_type_to_string(enum tu_event_type type)
{
    switch (type) {
    case TU_EV_CONNECTED: return "connected";
    case TU_EV_READY: return "device_ready";
    case TU_EV_QUEUE_STATE: return "queue_state";
    case TU_EV_GONE: return "device_gone";
    case TU_EV_DISCONNECTED: return "disconnected";
    case TU_N_EV_TYPES: break;
    }
    return "<unknown>";
}

/* Port state. */

struct vhost_port_info
tu_port_info(struct vhost_port *port)
{
    struct vhost_port_info info;
    int error;

    memset(&info, 0, sizeof info);
    error = vhost_port_get_info(port, &info);
    if (error) {
        TU_FAIL("vhost_port_get_info: %s", tu_strerror(error));
    }
    return info;
}

struct vhost_queue_info
tu_queue_info(struct vhost_port *port, unsigned int qid)
{
    struct vhost_queue_info info;
    int error;

    memset(&info, 0, sizeof info);
    error = vhost_port_get_queue_info(port, qid, &info);
    if (error) {
        TU_FAIL("vhost_port_get_queue_info(%u): %s", qid,
                tu_strerror(error));
    }
    return info;
}

bool
tu_wait_port(struct vhost_port *port,
             bool (*cond)(const struct vhost_port_info *, void *aux),
             void *aux, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;

    for (;;) {
        struct vhost_port_info info = tu_port_info(port);
        if (cond(&info, aux)) {
            return true;
        }
        if (tu_now_ms() >= deadline) {
            return false;
        }
        tu_sleep_ms(2);
    }
}

bool
tu_port_connected(const struct vhost_port_info *info, void *aux)
{
    return info->connected;
}

bool
tu_port_disconnected(const struct vhost_port_info *info, void *aux)
{
    return !info->connected;
}

bool
tu_port_ready(const struct vhost_port_info *info, void *aux)
{
    return info->ready;
}
