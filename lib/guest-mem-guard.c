/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guarded mappings: see guest-mem-guard.h.
 */

#include <config.h>
#include "guest-mem-guard.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "util.h"
#include "vhost-log.h"

/* The handler uses these from any thread, interrupting anything: they must
 * be plain loads, stores and read-modify-writes, never a hidden lock. */
BUILD_ASSERT_DECL(ATOMIC_INT_LOCK_FREE == 2);
BUILD_ASSERT_DECL(ATOMIC_LONG_LOCK_FREE == 2);
BUILD_ASSERT_DECL(ATOMIC_POINTER_LOCK_FREE == 2);
BUILD_ASSERT_DECL(ATOMIC_BOOL_LOCK_FREE == 2);

enum guest_mem_guard_state {
    GUARD_FREE,                 /* Unused; may be claimed. */
    GUARD_BUSY,                 /* Being filled in or torn down. */
    GUARD_LIVE,                 /* Handler may match it. */
};

/* One guarded mapping.  'start', 'len' and 'page' are written only while
 * the slot is GUARD_BUSY and by the thread that made it so, and read by
 * the handler only after it saw GUARD_LIVE (acquire). */
struct guest_mem_guard_slot {
    atomic_int state;                   /* enum guest_mem_guard_state. */
    atomic_uintptr_t start;             /* What mmap() returned. */
    atomic_uintptr_t len;               /* Rounded up to 'page'. */
    atomic_uintptr_t page;              /* Granule of a zero mapping. */
    _Atomic(struct guest_mem_guard_owner *) owner;  /* NULL until set. */
    atomic_uint faults;                 /* Guarded faults here. */
    atomic_uintptr_t first_fault;       /* Address of the first, or 0. */
};

static struct guest_mem_guard_slot slots[GUEST_MEM_GUARD_MAX_SLOTS];
static atomic_uint n_slots_used;        /* 1 + highest slot ever claimed. */
static atomic_uint handlers_running;    /* Handlers between lookup and
                                         * done, on every thread. */
static atomic_uint fault_seq;           /* Bumped per guarded fault. */

/* The SIGBUS action that was there before ours, set once by
 * guest_mem_guard_install__() before ours goes in. */
static struct sigaction old_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static bool installed;

static void guest_mem_guard_handler__(int, siginfo_t *, void *);

void
guest_mem_guard_owner_init(struct guest_mem_guard_owner *owner, int wake_fd)
{
    atomic_init(&owner->faulted, false);
    atomic_init(&owner->faults, 0);
    owner->wake_fd = wake_fd;
}

/* Returns the number of guarded faults in 'owner''s mappings since the last
 * call, and starts counting again from zero.  'faulted' stays set. */
unsigned int
guest_mem_guard_owner_collect(struct guest_mem_guard_owner *owner)
{
    return atomic_exchange(&owner->faults, 0);
}

/* Clears 'owner''s fault flag.  For when the owner holds no mapping any
 * more (its device was reset), so that no new fault can set it. */
void
guest_mem_guard_owner_clear(struct guest_mem_guard_owner *owner)
{
    atomic_store(&owner->faulted, false);
}

/* Returns a counter that moves on with every guarded fault anywhere in the
 * process, for the engine loop to notice there is something to look at. */
unsigned int
guest_mem_guard_seq(void)
{
    return atomic_load(&fault_seq);
}

/* Handler side. */

/* If 'addr' lies in a live slot, maps a zero page over the page that holds
 * it, counts the fault and tells the slot's owner.  Returns false if
 * 'addr' is in no slot or the zero page cannot be mapped: the fault is
 * then someone else's, or fatal.  Async-signal-safe. */
static bool
guest_mem_guard_fix__(uintptr_t addr)
{
    unsigned int n = atomic_load(&n_slots_used);

    for (unsigned int i = 0; i < n && i < GUEST_MEM_GUARD_MAX_SLOTS; i++) {
        struct guest_mem_guard_slot *s = &slots[i];

        /* Pairs with the release in guest_mem_guard_add(): the range is
         * visible once the state is.  seq_cst, to pair with the store in
         * guest_mem_guard_remove() (see there). */
        if (atomic_load(&s->state) != GUARD_LIVE) {
            continue;
        }
        uintptr_t start = atomic_load_explicit(&s->start,
                                               memory_order_relaxed);
        uintptr_t len = atomic_load_explicit(&s->len, memory_order_relaxed);
        if (addr - start >= len) {
            continue;
        }

        uintptr_t page = atomic_load_explicit(&s->page, memory_order_relaxed);
        void *base = (void *) (addr & ~(page - 1));
        if (mmap(base, page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                 -1, 0) == MAP_FAILED) {
            return false;
        }

        uintptr_t none = 0;
        atomic_fetch_add(&s->faults, 1);
        atomic_compare_exchange_strong(&s->first_fault, &none, addr);
        struct guest_mem_guard_owner *owner = atomic_load(&s->owner);
        if (owner) {
            atomic_fetch_add(&owner->faults, 1);
            atomic_store(&owner->faulted, true);
        }
        /* Before the wake-up, so that the loop it wakes sees it. */
        atomic_fetch_add(&fault_seq, 1);
        if (owner && owner->wake_fd >= 0) {
            uint64_t one = 1;
            if (write(owner->wake_fd, &one, sizeof one) < 0) {
                /* Saturated: the loop is awake anyway. */
            }
        }
        return true;
    }
    return false;
}

/* Hands a SIGBUS that is not ours to the action that was there before us.
 * The default action (or "ignore", which the kernel overrides for a
 * fault) is put back: for a fault, returning runs the faulting access
 * again and the kernel ends the process as if we had never been here; a
 * SIGBUS that was sent to us is sent again, and arrives when we return.
 * Async-signal-safe. */
static void
guest_mem_guard_chain__(int sig, siginfo_t *info, void *uctx)
{
    bool sent = !info || info->si_code <= 0;

    if (old_action.sa_flags & SA_SIGINFO) {
        if (old_action.sa_sigaction) {
            old_action.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (old_action.sa_handler != SIG_DFL
               && old_action.sa_handler != SIG_IGN) {
        old_action.sa_handler(sig);
        return;
    } else if (old_action.sa_handler == SIG_IGN && sent) {
        return;
    }

    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, NULL);
    if (sent) {
        raise(sig);
    }
}

/* The SIGBUS handler.  Only a SIGBUS the kernel raised for an access
 * (si_code > 0: BUS_ADRERR for a page beyond the end of a file) carries a
 * meaningful address; one sent with kill() or raise() is never ours. */
static void
guest_mem_guard_handler__(int sig, siginfo_t *info, void *uctx)
{
    int save_errno = errno;
    bool handled = false;

    if (info && info->si_code > 0) {
        /* Makes guest_mem_guard_remove() wait until we are done. */
        atomic_fetch_add(&handlers_running, 1);
        handled = guest_mem_guard_fix__((uintptr_t) info->si_addr);
        atomic_fetch_sub(&handlers_running, 1);
    }
    errno = save_errno;
    if (!handled) {
        guest_mem_guard_chain__(sig, info, uctx);
    }
}

/* Control side. */

/* Installs the handler, once per process, keeping the previous action to
 * chain to.  OVS's fatal-signal.c (3.1) installs handlers for SIGTERM,
 * SIGINT, SIGHUP, SIGALRM and SIGSEGV, not SIGBUS, so in ovs-vswitchd the
 * previous action is the default; under a sanitizer it is the sanitizer's
 * (ASan lets us install with its default allow_user_segv_handler=1). */
static void
guest_mem_guard_install__(void)
{
    struct sigaction sa;

    /* Read the old action before ours goes in: a SIGBUS that arrives in
     * between finds it already in place. */
    if (sigaction(SIGBUS, NULL, &old_action)) {
        VLOG_ERR("guest memory guard: cannot read the SIGBUS action (%s)",
                 strerror(errno));
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guest_mem_guard_handler__;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, NULL)) {
        VLOG_ERR("guest memory guard: cannot install a SIGBUS handler (%s)",
                 strerror(errno));
        return;
    }
    installed = true;
}

/* Returns true if our handler is installed and still in place.  An
 * embedder or library that installed its own SIGBUS handler after ours
 * has taken the guard away, so every later fd that can shrink is refused;
 * said once. */
static bool
guest_mem_guard_ready__(void)
{
    static atomic_bool warned;
    struct sigaction cur;

    pthread_once(&install_once, guest_mem_guard_install__);
    if (installed && !sigaction(SIGBUS, NULL, &cur)
        && cur.sa_flags & SA_SIGINFO
        && cur.sa_sigaction == guest_mem_guard_handler__) {
        return true;
    }
    if (installed && !atomic_exchange(&warned, true)) {
        VLOG_ERR("guest memory guard: the SIGBUS handler is not ours "
                 "(replaced since, or refused as ASan's handle_sigbus=2 "
                 "does); memory and log fds that can shrink will be "
                 "refused");
    }
    return false;
}

/* Returns the live slot whose range holds 'addr' (or, if 'exact', starts
 * at 'addr'), or NULL. */
static struct guest_mem_guard_slot *
guest_mem_guard_find__(const void *addr_, bool exact)
{
    uintptr_t addr = (uintptr_t) addr_;
    unsigned int n = atomic_load(&n_slots_used);

    for (unsigned int i = 0; i < n; i++) {
        struct guest_mem_guard_slot *s = &slots[i];

        if (atomic_load(&s->state) == GUARD_LIVE) {
            uintptr_t start = atomic_load(&s->start);

            if (exact ? addr == start : addr - start < atomic_load(&s->len)) {
                return s;
            }
        }
    }
    return NULL;
}

/* Guards the 'len' bytes that mmap() mapped at 'addr' from an fd that can
 * shrink.  'page' is the granule of that mapping (the huge page size on
 * hugetlbfs, otherwise the base page size), a power of two.  Installs the
 * SIGBUS handler the first time.  The mapping has no owner until
 * guest_mem_guard_set_owner().
 *
 * Returns 0, or a positive errno value with '*reason' pointing to a static
 * description: EPERM if the handler is not in place, ENOSPC if every slot
 * is taken.  The mapping must then not be used: the caller unmaps it. */
int
guest_mem_guard_add(void *addr, size_t len, size_t page, const char **reason)
{
    if (!guest_mem_guard_ready__()) {
        *reason = "fd can shrink (no F_SEAL_SHRINK) and no SIGBUS guard is "
                  "in place";
        return EPERM;
    }

    for (unsigned int i = 0; i < GUEST_MEM_GUARD_MAX_SLOTS; i++) {
        struct guest_mem_guard_slot *s = &slots[i];
        int expected = GUARD_FREE;

        if (!atomic_compare_exchange_strong(&s->state, &expected,
                                            GUARD_BUSY)) {
            continue;
        }
        atomic_store_explicit(&s->start, (uintptr_t) addr,
                              memory_order_relaxed);
        atomic_store_explicit(&s->len, (len + page - 1) & ~(page - 1),
                              memory_order_relaxed);
        atomic_store_explicit(&s->page, page, memory_order_relaxed);
        atomic_store(&s->owner, NULL);
        atomic_store(&s->faults, 0);
        atomic_store(&s->first_fault, 0);

        unsigned int n = atomic_load(&n_slots_used);
        while (n < i + 1
               && !atomic_compare_exchange_weak(&n_slots_used, &n, i + 1)) {
            continue;
        }
        /* Publishes the range (pairs with the handler's load). */
        atomic_store(&s->state, GUARD_LIVE);
        return 0;
    }
    *reason = "fd can shrink (no F_SEAL_SHRINK) and every SIGBUS guard slot "
              "is taken";
    return ENOSPC;
}

/* Stops guarding the mapping that starts at 'addr', if it is guarded, so
 * that the caller may munmap() it.  Returns once no handler that may have
 * found it is still running.
 *
 * The handler increments 'handlers_running' and then loads a slot's
 * state; this stores the state and then loads 'handlers_running', each
 * seq_cst: either the handler sees GUARD_BUSY and leaves the slot alone,
 * or this sees the handler and waits for its MAP_FIXED to be done. */
void
guest_mem_guard_remove(const void *addr)
{
    struct guest_mem_guard_slot *s = guest_mem_guard_find__(addr, true);
    int expected = GUARD_LIVE;

    if (!s || !atomic_compare_exchange_strong(&s->state, &expected,
                                              GUARD_BUSY)) {
        return;
    }
    while (atomic_load(&handlers_running)) {
        sched_yield();
    }
    atomic_store(&s->owner, NULL);
    atomic_store(&s->state, GUARD_FREE);
}

/* Makes 'owner' the owner of the guarded mapping that holds 'addr', so
 * that a fault there flags it.  Returns true if the mapping is guarded and
 * had no owner before (the first time its device installs it), false if
 * it is not guarded or already had one.  Faults before that are passed
 * on to 'owner'. */
bool
guest_mem_guard_set_owner(const void *addr,
                          struct guest_mem_guard_owner *owner)
{
    struct guest_mem_guard_slot *s = guest_mem_guard_find__(addr, false);

    if (!s) {
        return false;
    }
    struct guest_mem_guard_owner *old = atomic_exchange(&s->owner, owner);
    unsigned int early = atomic_load(&s->faults);
    if (!old && early) {
        atomic_fetch_add(&owner->faults, early);
        atomic_store(&owner->faulted, true);
        atomic_fetch_add(&fault_seq, 1);
    }
    return !old;
}

/* Returns the number of guarded faults in the mapping that holds 'addr',
 * and stores the address of the first in '*first_fault' (0 if none or not
 * guarded). */
unsigned int
guest_mem_guard_query(const void *addr, uintptr_t *first_fault)
{
    struct guest_mem_guard_slot *s = guest_mem_guard_find__(addr, false);

    *first_fault = s ? atomic_load(&s->first_fault) : 0;
    return s ? atomic_load(&s->faults) : 0;
}
