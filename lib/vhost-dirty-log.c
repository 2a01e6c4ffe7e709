/*
 * Dirty-page logging: see vhost-dirty-log.h.
 */

#include <config.h>
#include "vhost-dirty-log.h"

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

        if (byte >= log->size) {
            log->out_of_range++;
            continue;
        }
        __atomic_fetch_or(&log->base[byte], (uint8_t) (1u << (page % 8)),
                          __ATOMIC_RELAXED);
        log->dirtied = true;
    }
}
