/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guarded mappings: what keeps a frontend that shrinks a file it shared
 * with us (ftruncate() of a guest memory memfd after SET_MEM_TABLE or
 * ADD_MEM_REG, or of the dirty log after SET_LOG_BASE) from killing the
 * process with SIGBUS on the next access to the lost pages.
 *
 * Policy
 * ======
 *
 * guest_mem_map_fd() maps an fd as it is only if its size can never
 * shrink: a memfd sealed with F_SEAL_SHRINK (QEMU's memory-backend-memfd
 * and its dirty log seal so by default), not on hugetlbfs (a hugetlbfs
 * page can also fail to fault in when the pool runs dry, sealed or not).
 * Every other mapping is registered here before it is used.  A SIGBUS
 * raised by the kernel at an address inside a registered mapping is then
 * survived: the handler maps an anonymous zero page (MAP_FIXED) over the
 * faulting page, so that the access completes, and flags the mapping's
 * owner, whose device stops and whose frontend is disconnected from the
 * engine loop.  Any other SIGBUS goes to the handler that was installed
 * before ours (or to the default action, which ends the process).  If our
 * handler cannot be installed, or something has since replaced it, an fd
 * that can shrink is refused.
 *
 * Usage
 * =====
 *
 *     guest_mem_map_fd() -> guest_mem_guard_add(addr, len, page)
 *     installing the map  -> guest_mem_guard_set_owner(addr, &dev->guard)
 *     data path           -> guest_mem_guard_faulted(&dev->guard)
 *     engine loop         -> guest_mem_guard_seq() moved: look at owners
 *     unmapping           -> guest_mem_unmap() -> guest_mem_guard_remove()
 *
 * Thread-safety
 * =============
 *
 * The registry is a fixed array of slots, each [start, start + len) and an
 * owner, read by the signal handler on any thread without a lock.  Slots
 * are claimed and released with atomics, so adds and removes may come from
 * any thread (engines are independent).  guest_mem_guard_remove() first
 * hides the slot from new lookups, then waits until no handler is running
 * anywhere: a handler that found the slot has finished its MAP_FIXED before
 * the caller munmap()s the range, so a zero page can never land on whatever
 * is mapped at that address next.  munmap() of the whole range also
 * removes any zero pages the handler put inside it.
 *
 * The handler does only async-signal-safe work: atomics (lock-free, checked
 * at build time), mmap() (not on POSIX's list, but a plain system call),
 * write() to the owner's eventfd, sigaction() and the previous handler.
 *
 * Trust model
 * ===========
 *
 * The frontend controls the size of every fd it sends, at any time, unless
 * sealed.  Nothing read from a zero page is trusted any more than guest
 * memory is; the device is broken from the fault on.
 */

#ifndef OVS_VHOST_GUEST_MEM_GUARD_H
#define OVS_VHOST_GUEST_MEM_GUARD_H 1

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Guarded mappings, process-wide.  Each device holds at most
 * VHOST_MAX_MEM_REGIONS + 1 (memory and the log), and only for fds that
 * can shrink. */
#define GUEST_MEM_GUARD_MAX_SLOTS 4096

/* Whoever uses a set of guarded mappings: a device.  The handler writes it
 * from any thread; it must outlive the owner's mappings. */
struct guest_mem_guard_owner {
    atomic_bool faulted;        /* A guarded fault hit one of its maps. */
    atomic_uint faults;         /* Guarded faults not yet collected. */
    int wake_fd;                /* eventfd the handler writes, or -1. */
};

void guest_mem_guard_owner_init(struct guest_mem_guard_owner *, int wake_fd);
unsigned int guest_mem_guard_owner_collect(struct guest_mem_guard_owner *);
void guest_mem_guard_owner_clear(struct guest_mem_guard_owner *);

int guest_mem_guard_add(void *addr, size_t len, size_t page,
                        const char **reason);
void guest_mem_guard_remove(const void *addr);
bool guest_mem_guard_set_owner(const void *addr,
                               struct guest_mem_guard_owner *);
unsigned int guest_mem_guard_query(const void *addr, uintptr_t *first_fault);
unsigned int guest_mem_guard_seq(void);

/* Returns true if a guarded fault has hit one of 'owner''s mappings since
 * it was last cleared.  For the data path, once per burst. */
static inline bool
guest_mem_guard_faulted(struct guest_mem_guard_owner *owner)
{
    return atomic_load_explicit(&owner->faulted, memory_order_relaxed);
}

#endif /* guest-mem-guard.h */
