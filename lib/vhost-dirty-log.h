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

#endif /* vhost-dirty-log.h */
