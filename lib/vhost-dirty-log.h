/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dirty-page logging for live migration (vhost-user.rst, "Migration"):
 * with VHOST_F_LOG_ALL negotiated and a log shared by SET_LOG_BASE, every
 * guest page the back-end writes is marked in a bitmap, one bit per
 * 4 KiB page of guest physical memory.
 *
 * Usage: the data path calls vhost_dirty_log_write() for each range it
 * wrote, only when logging is on; the call is out of line, so the hot
 * loops keep just the test.
 *
 * Thread-safety: several polling threads and QEMU mark and clear bits in
 * the same bytes, so each bit is set with an atomic OR.
 *
 * Trust model: the log's size comes from the frontend; a page beyond it is
 * not marked (Linux CVE-2019-14835 wrote past the log) but counted.
 */

#ifndef OVS_VHOST_VHOST_DIRTY_LOG_H
#define OVS_VHOST_VHOST_DIRTY_LOG_H 1

#include <stdbool.h>
#include <stdint.h>
#include "util.h"

#define VHOST_DIRTY_LOG_PAGE 4096

struct vhost_dirty_log {
    uint8_t *base;              /* The bitmap. */
    uint64_t size;              /* Its size in bytes. */
    bool dirtied;               /* Set when a bit was set in this burst. */
    uint64_t out_of_range;      /* Pages beyond the bitmap. */
};

void vhost_dirty_log_write(struct vhost_dirty_log *, uint64_t gpa,
                           uint64_t len) OVS_COLD;

/* The audit (configure --enable-dirty-log-audit, which defines
 * VHOST_DIRTY_LOG_AUDIT; test builds only).  Every guest write of the
 * data path names its host address with VHOST_DIRTY_LOG_AUDIT_WRITE();
 * the audit translates it to guest pages through the memory table, on its
 * own, and records them beside the pages vhost_dirty_log_write() marks.
 * At the end of a burst, a page written but not marked is a violation:
 * counted (vhost_dirty_log_audit_violations(), shown by vhost/show) and
 * logged as "dirty-log audit: page %#x written but not marked".  The
 * comparison is between what the burst wrote and what it marked, never
 * the bitmap, whose bits QEMU clears as it reads them.
 *
 * Thread-safety: the records are per thread (a burst runs on one); the
 * counter is atomic.  In a normal build the macro is empty and the rest
 * is not compiled. */
#ifdef VHOST_DIRTY_LOG_AUDIT
struct guest_mem;
void vhost_dirty_log_audit_begin(const struct guest_mem *);
void vhost_dirty_log_audit_write(const void *hva, uint64_t len);
uint64_t vhost_dirty_log_audit_end(const char *name, unsigned int vring);
uint64_t vhost_dirty_log_audit_violations(void);
uint64_t vhost_dirty_log_audit_pages(void);
void vhost_dirty_log_audit_reset(void);
#define VHOST_DIRTY_LOG_AUDIT_WRITE(LOG, HVA, LEN)              \
    do {                                                        \
        if (LOG) {                                              \
            vhost_dirty_log_audit_write(HVA, LEN);              \
        }                                                       \
    } while (0)
#else
#define VHOST_DIRTY_LOG_AUDIT_WRITE(LOG, HVA, LEN) ((void) 0)
#endif

#endif /* vhost-dirty-log.h */
