/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers shared by the engine's files: compile-time checks, array
 * sizes, branch hints and overflow-safe range tests.
 */

#ifndef OVS_VHOST_UTIL_H
#define OVS_VHOST_UTIL_H 1

#include <stdbool.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#define BUILD_ASSERT_DECL(EXPR) _Static_assert(EXPR, #EXPR)
#define ARRAY_SIZE(ARRAY) (sizeof (ARRAY) / sizeof (ARRAY)[0])
#define OVS_LIKELY(COND) __builtin_expect(!!(COND), 1)
#define OVS_UNLIKELY(COND) __builtin_expect(!!(COND), 0)
#define OVS_COLD __attribute__((cold, noinline))
/* For a function whose constant arguments make the specialised copies
 * (the burst functions): without it the compiler may keep one generic
 * copy and test those arguments at run time. */
#define OVS_ALWAYS_INLINE inline __attribute__((always_inline))
#define OVS_PRINTF_FORMAT(FMT, ARG0) __attribute__((format(printf, FMT, ARG0)))
#define MIN(A, B) ((A) < (B) ? (A) : (B))
#define MAX(A, B) ((A) > (B) ? (A) : (B))

/* Returns true if [addr, addr + len) does not wrap around 2**64.  Every
 * range check in the engine uses this one idiom. */
static inline bool
range_fits(uint64_t addr, uint64_t len)
{
    return len <= UINT64_MAX - addr;
}

/* Returns true if [addr, addr + len) lies inside [start, start + size).
 * 'start + size' must not wrap (callers check it when they accept a
 * region). */
static inline bool
range_within(uint64_t addr, uint64_t len, uint64_t start, uint64_t size)
{
    return addr >= start && range_fits(addr, len)
           && addr - start <= size && len <= size - (addr - start);
}

/* A hint to the CPU inside a spin-wait loop. */
static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline bool
is_pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

/* Closes 'fd' if it is valid (not negative), keeping errno. */
static inline void
close_fd_quietly(int fd)
{
    if (fd >= 0) {
        int save_errno = errno;
        close(fd);
        errno = save_errno;
    }
}

/* A minimal intrusive doubly linked list, circular with a head node. */
struct ovs_list {
    struct ovs_list *prev, *next;
};

#define OVS_LIST_INITIALIZER(LIST) { LIST, LIST }

static inline void
ovs_list_init(struct ovs_list *list)
{
    list->prev = list->next = list;
}

static inline bool
ovs_list_is_empty(const struct ovs_list *list)
{
    return list->next == list;
}

/* Inserts 'elem' at the back of 'list'. */
static inline void
ovs_list_push_back(struct ovs_list *list, struct ovs_list *elem)
{
    elem->prev = list->prev;
    elem->next = list;
    list->prev->next = elem;
    list->prev = elem;
}

static inline void
ovs_list_remove(struct ovs_list *elem)
{
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
    elem->prev = elem->next = elem;
}

#define CONTAINER_OF(POINTER, STRUCT, MEMBER) \
    ((STRUCT *) (void *) ((char *) (POINTER) - offsetof(STRUCT, MEMBER)))

#endif /* util.h */
