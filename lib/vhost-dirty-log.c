/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dirty-page logging: see vhost-dirty-log.h.
 */

#include <config.h>
#include "vhost-dirty-log.h"
#include "ovs-vhost/vhost.h"
#ifdef VHOST_DIRTY_LOG_AUDIT
#include <inttypes.h>
#include "guest-mem.h"
#include "vhost-log.h"

static void vhost_dirty_log_audit_mark__(uint64_t page);
#endif

/* Marks every page in [gpa, gpa + len) as dirty in 'log'.  No reason for
 * this code to be inline: it runs only during migration. */
void
vhost_dirty_log_write(struct vhost_dirty_log *log, uint64_t gpa,
                      uint64_t len)
{
    if (!len || !range_fits(gpa, len - 1)) {
        return;
    }

    uint64_t first = gpa / VHOST_DIRTY_LOG_PAGE;
    uint64_t last = (gpa + len - 1) / VHOST_DIRTY_LOG_PAGE;
    for (uint64_t page = first; page <= last; page++) {
        uint64_t byte = page / 8;

#ifdef VHOST_DIRTY_LOG_AUDIT
        /* Beyond a log the frontend made too small, the engine marks what
         * it can: the audit checks the engine, not the frontend. */
        vhost_dirty_log_audit_mark__(page);
#endif
        if (byte >= log->size) {
            log->out_of_range++;
            continue;
        }
        __atomic_fetch_or(&log->base[byte], (uint8_t) (1u << (page % 8)),
                          __ATOMIC_RELAXED);
        log->dirtied = true;
    }
}

#ifdef VHOST_DIRTY_LOG_AUDIT
/* Pages one burst may touch: 32 packets of 64 KiB plus rings, with room. */
#define VHOST_DIRTY_LOG_AUDIT_MAX 2048

struct vhost_dirty_log_audit {
    const struct guest_mem *mem;    /* NULL outside a logged burst. */
    unsigned int n_written, n_marked;
    bool overflow;
    uint64_t written[VHOST_DIRTY_LOG_AUDIT_MAX];
    uint64_t marked[VHOST_DIRTY_LOG_AUDIT_MAX];
};

static __thread struct vhost_dirty_log_audit audit;
static uint64_t audit_violations;
static uint64_t audit_pages;

/* Adds 'page' to 'pages', which holds 'n' entries, unless it is the last
 * one (writes come in runs). */
static void
vhost_dirty_log_audit_add__(uint64_t *pages, unsigned int *n, uint64_t page)
{
    if (*n && pages[*n - 1] == page) {
        return;
    }
    if (*n >= VHOST_DIRTY_LOG_AUDIT_MAX) {
        audit.overflow = true;
        return;
    }
    pages[(*n)++] = page;
}

static void
vhost_dirty_log_audit_mark__(uint64_t page)
{
    if (audit.mem) {
        vhost_dirty_log_audit_add__(audit.marked, &audit.n_marked, page);
    }
}

/* Starts recording a logged burst over memory table 'mem'. */
void
vhost_dirty_log_audit_begin(const struct guest_mem *mem)
{
    audit.mem = mem;
    audit.n_written = audit.n_marked = 0;
    audit.overflow = false;
}

/* Records the guest pages of the 'len' bytes the data path wrote at host
 * address 'hva', found from the regions' host mappings: independent of
 * the guest address the writer logged. */
void
vhost_dirty_log_audit_write(const void *hva, uint64_t len)
{
    const uint8_t *p = hva;

    if (!audit.mem || !len) {
        return;
    }
    for (unsigned int i = 0; i < audit.mem->n_regions; i++) {
        const struct guest_mem_region *r = &audit.mem->regions[i];
        uint64_t off = (uint64_t) (uintptr_t) p - (uint64_t) (uintptr_t) r->hva;

        if (off < r->size) {
            uint64_t first = (r->gpa + off) / VHOST_DIRTY_LOG_PAGE;
            uint64_t last = (r->gpa + off + len - 1) / VHOST_DIRTY_LOG_PAGE;

            for (uint64_t page = first; page <= last; page++) {
                vhost_dirty_log_audit_add__(audit.written, &audit.n_written,
                                            page);
            }
            return;
        }
    }
    VLOG_ERR("dirty-log audit: write at %p outside guest memory", hva);
    __atomic_fetch_add(&audit_violations, 1, __ATOMIC_RELAXED);
}

/* Ends the burst of vring 'vring' of port 'name': counts and logs each
 * page written but not marked, and returns how many there were. */
uint64_t
vhost_dirty_log_audit_end(const char *name, unsigned int vring)
{
    uint64_t bad = 0;

    if (!audit.mem) {
        return 0;
    }
    if (audit.overflow) {
        VLOG_ERR("%s: vring %u: dirty-log audit: more than %d pages in a "
                 "burst", name, vring, VHOST_DIRTY_LOG_AUDIT_MAX);
        bad++;
    }
    for (unsigned int i = 0; i < audit.n_written; i++) {
        uint64_t page = audit.written[i];
        bool found = false;

        for (unsigned int j = 0; j < audit.n_marked && !found; j++) {
            found = audit.marked[j] == page;
        }
        if (!found) {
            VLOG_ERR("%s: vring %u: dirty-log audit: page %#"PRIx64" "
                     "written but not marked", name, vring,
                     page * VHOST_DIRTY_LOG_PAGE);
            bad++;
        }
    }
    __atomic_fetch_add(&audit_pages, audit.n_written, __ATOMIC_RELAXED);
    __atomic_fetch_add(&audit_violations, bad, __ATOMIC_RELAXED);
    audit.mem = NULL;
    return bad;
}

/* Violations since the process started. */
uint64_t
vhost_dirty_log_audit_violations(void)
{
    return __atomic_load_n(&audit_violations, __ATOMIC_RELAXED);
}

/* Pages audited (written while logging) since the process started: a test
 * checks it moved, so that an audit that saw nothing cannot pass. */
uint64_t
vhost_dirty_log_audit_pages(void)
{
    return __atomic_load_n(&audit_pages, __ATOMIC_RELAXED);
}
/* Clears both counts (for the audit's own test). */
void
vhost_dirty_log_audit_reset(void)
{
    __atomic_store_n(&audit_violations, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&audit_pages, 0, __ATOMIC_RELAXED);
}
#endif /* VHOST_DIRTY_LOG_AUDIT */

bool
vhost_dirty_log_audit_get(uint64_t *pages, uint64_t *violations)
{
#ifdef VHOST_DIRTY_LOG_AUDIT
    *pages = vhost_dirty_log_audit_pages();
    *violations = vhost_dirty_log_audit_violations();
    return true;
#else
    *pages = *violations = 0;
    return false;
#endif
}
