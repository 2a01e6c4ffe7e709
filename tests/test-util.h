/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the C test drivers: check macros that report file:line
 * with expected and actual values, process-wide resource counts (fds,
 * mappings, threads) for leak checks, polling with a deadline, a recorder
 * for the engine's port callbacks, and the test registry.
 *
 * Usage
 * =====
 *
 * Each test is a function with no arguments registered in a table of
 * struct tu_test ('tests/test-engine.c' collects the tables).  A test prints
 * what it checks with tu_log() and calls the TU_CHECK* macros; the first
 * failed check prints "file:line: ..." to stderr and exits the process with
 * status 1, so a test that returns has passed.
 *
 * Thread-safety
 * =============
 *
 * The check macros may be used from any thread (a failure exits the whole
 * process).  struct tu_events is written by the engine's loop thread through
 * tu_callbacks and read by the test thread; it has its own mutex, and no
 * engine function is called with that mutex held, so there is no lock-order
 * problem with the engine's mutex.
 */

#ifndef OVS_VHOST_TEST_UTIL_H
#define OVS_VHOST_TEST_UTIL_H 1

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include "util.h"

/* Test registry. */
struct tu_test {
    const char *name;           /* argv[1] of test-engine. */
    void (*run)(void);
    const char *doc;            /* One line, for "test-engine --list". */
};

extern const struct tu_test tu_guest_mem_tests[];
extern const size_t tu_n_guest_mem_tests;
extern const struct tu_test tu_vhost_user_tests[];
extern const size_t tu_n_vhost_user_tests;

/* Logging and failing. */
void tu_log(const char *format, ...) OVS_PRINTF_FORMAT(1, 2);
_Noreturn void tu_fail(const char *file, int line, const char *format, ...)
    OVS_PRINTF_FORMAT(3, 4);

#define TU_FAIL(...) tu_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Checks that COND holds. */
#define TU_CHECK(COND)                                                  \
    do {                                                                \
        if (!(COND)) {                                                  \
            TU_FAIL("check failed: %s", #COND);                         \
        }                                                               \
    } while (0)

/* Checks that unsigned integers GOT == EXPECTED, printing both. */
#define TU_CHECK_EQ(GOT, EXPECTED)                                      \
    do {                                                                \
        uint64_t tu_got_ = (uint64_t) (GOT);                            \
        uint64_t tu_exp_ = (uint64_t) (EXPECTED);                       \
        if (tu_got_ != tu_exp_) {                                       \
            TU_FAIL("%s == %s: expected %"PRIu64" (0x%"PRIx64"), "      \
                    "got %"PRIu64" (0x%"PRIx64")", #GOT, #EXPECTED,     \
                    tu_exp_, tu_exp_, tu_got_, tu_got_);                \
        }                                                               \
    } while (0)

/* Checks that unsigned integer GOT satisfies GOT OP BOUND. */
#define TU_CHECK_CMP(GOT, OP, BOUND)                                    \
    do {                                                                \
        uint64_t tu_got_ = (uint64_t) (GOT);                            \
        uint64_t tu_bound_ = (uint64_t) (BOUND);                        \
        if (!(tu_got_ OP tu_bound_)) {                                  \
            TU_FAIL("%s %s %s: got %"PRIu64" vs %"PRIu64,               \
                    #GOT, #OP, #BOUND, tu_got_, tu_bound_);             \
        }                                                               \
    } while (0)

/* Checks that EXPR, a function returning 0 or an error code, returned 0. */
#define TU_CHECK_OK(EXPR)                                               \
    do {                                                                \
        long long tu_r_ = (EXPR);                                       \
        if (tu_r_) {                                                    \
            TU_FAIL("%s: expected 0, got %lld (%s)", #EXPR, tu_r_,      \
                    tu_strerror(tu_r_));                                \
        }                                                               \
    } while (0)

/* Checks that pointer EXPR is non-null. */
#define TU_CHECK_NONNULL(EXPR)                                          \
    do {                                                                \
        if (!(EXPR)) {                                                  \
            TU_FAIL("%s: unexpected NULL", #EXPR);                      \
        }                                                               \
    } while (0)

/* Fails if a libc call EXPR returns a negative value, printing errno. */
#define TU_SYS(EXPR)                                                    \
    tu_sys__((long long) (EXPR), #EXPR, __FILE__, __LINE__)

long long tu_sys__(long long r, const char *expr, const char *file, int line);
const char *tu_strerror(long long error);

/* Process resource counts, for leak checks. */
int tu_count_fds(void);                 /* Entries in /proc/self/fd. */
int tu_count_maps(const char *substr);  /* Lines of /proc/self/maps. */
int tu_count_threads(void);             /* Entries in /proc/self/task. */
int tu_threads_settle(int expected);    /* The same, once it is 'expected'. */
int tu_thread_baseline(void);           /* The count, for tests that start
                                         * threads of their own. */
void tu_dump_fds(void);

/* Polling. */
long long tu_now_ms(void);
void tu_sleep_ms(int ms);
bool tu_wait_until(bool (*cond)(void *aux), void *aux, int timeout_ms);

/* The default timeout for anything the tests wait for. */
#define TU_TIMEOUT_MS 5000

/* A private directory for sockets, removed (with what is left in it) at
 * exit.  Returns its path; tu_path() formats a path inside it. */
const char *tu_tmpdir(void);
char *tu_path(const char *name);        /* Caller frees. */

/* Recorder for struct vhost_port_callbacks.  Pass &tu_callbacks as
 * options.cb and a struct tu_events as options.aux. */
enum tu_event_type {
    TU_EV_CONNECTED,
    TU_EV_READY,
    TU_EV_QUEUE_STATE,
    TU_EV_GONE,
    TU_EV_DISCONNECTED,
    TU_N_EV_TYPES
};

struct tu_event {
    enum tu_event_type type;
    unsigned int qid;           /* TU_EV_QUEUE_STATE only. */
    bool enabled;               /* TU_EV_QUEUE_STATE only. */
};

#define TU_MAX_EVENTS 1024

struct tu_events {
    pthread_mutex_t mutex;
    pthread_cond_t cond;

    /* If true, each callback also reads the port's info (calling back into
     * the engine, as an embedder may) and records what it saw. */
    bool query;
    bool info_ok;               /* Every query succeeded. */
    bool ready_at_ready;        /* info.ready inside device_ready. */
    bool queue0_ready_at_ready; /* Queue 0 ready inside device_ready. */
    bool ready_at_gone;         /* info.ready inside device_gone. */

    unsigned int counts[TU_N_EV_TYPES];
    size_t n_log;               /* Events recorded in 'log' (bounded). */
    struct tu_event log[TU_MAX_EVENTS];
};

extern const struct vhost_port_callbacks tu_callbacks;

void tu_events_init(struct tu_events *);
void tu_events_destroy(struct tu_events *);
void tu_events_clear(struct tu_events *);
unsigned int tu_events_count(struct tu_events *, enum tu_event_type);
bool tu_events_wait(struct tu_events *, enum tu_event_type,
                    unsigned int count, int timeout_ms);
bool tu_events_wait_queue(struct tu_events *, unsigned int qid, bool enabled,
                          int timeout_ms);
size_t tu_events_snapshot(struct tu_events *, struct tu_event *, size_t max);
const char *tu_event_type_to_string(enum tu_event_type);

/* Port state snapshots that fail the test if the engine refuses. */
struct vhost_port_info tu_port_info(struct vhost_port *);
struct vhost_queue_info tu_queue_info(struct vhost_port *, unsigned int qid);

/* Waits until the port's info satisfies 'cond'.  Returns true on success. */
bool tu_wait_port(struct vhost_port *,
                  bool (*cond)(const struct vhost_port_info *, void *aux),
                  void *aux, int timeout_ms);
bool tu_port_connected(const struct vhost_port_info *, void *aux);
bool tu_port_disconnected(const struct vhost_port_info *, void *aux);
bool tu_port_ready(const struct vhost_port_info *, void *aux);

#endif /* test-util.h */
