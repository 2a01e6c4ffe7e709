/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Postcopy live migration: see vhost-postcopy.h.
 */

#include <config.h>
#include "vhost-postcopy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/userfaultfd.h>
#endif
#include "guest-mem.h"
#include "util.h"
#include "vhost-dev.h"
#include "vhost-log.h"

/* The page-aligned range that holds region 'r', for UFFDIO_(UN)REGISTER:
 * its mapping starts on a page and covers the region. */
static void
vhost_postcopy_range__(const struct guest_mem_region *r, uint64_t *startp,
                       uint64_t *lenp)
{
    uint64_t page = sysconf(_SC_PAGESIZE);
    uint64_t start = (uint64_t) (uintptr_t) r->hva & ~(page - 1);
    uint64_t end = ((uint64_t) (uintptr_t) r->hva + r->size + page - 1)
                   & ~(page - 1);

    *startp = start;
    *lenp = end - start;
}

/* POSTCOPY_ADVISE: opens a userfaultfd for 'dev' (closing one an earlier
 * ADVISE opened) and stores in '*fdp' a copy for the frontend, which the
 * reply carries.  Returns 0 or a positive errno value with '*reason'. */
int
vhost_postcopy_advise(struct vhost_dev *dev, int *fdp, const char **reason)
{
#ifdef __NR_userfaultfd
    if (dev->postcopy_state == VHOST_POSTCOPY_LISTENING) {
        *reason = "postcopy is listening already";
        return EINVAL;
    }
    vhost_postcopy_reset(dev);

    int ufd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (ufd < 0) {
        *reason = "userfaultfd() failed (a kernel without it, or "
                  "vm.unprivileged_userfaultfd=0 without CAP_SYS_PTRACE)";
        return errno;
    }
    struct uffdio_api api = { .api = UFFD_API };
    if (ioctl(ufd, UFFDIO_API, &api)) {
        int error = errno;
        close(ufd);
        *reason = "UFFDIO_API failed";
        return error;
    }
    int copy = fcntl(ufd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) {
        int error = errno;
        close(ufd);
        *reason = "out of fds";
        return error;
    }
    dev->postcopy_ufd = ufd;
    dev->postcopy_state = VHOST_POSTCOPY_ADVISED;
    *fdp = copy;
    VLOG_INFO("%s: postcopy advised: userfaultfd handed to the frontend",
              dev->name);
    return 0;
#else
    *reason = "no userfaultfd on this system";
    return ENOSYS;
#endif
}

/* POSTCOPY_LISTEN: guest memory mapped from now on is registered with the
 * userfaultfd.  libvhost-user refuses it with memory mapped already, as
 * we do: those pages would be touched without the frontend knowing where
 * to wake us. */
int
vhost_postcopy_listen(struct vhost_dev *dev, const char **reason)
{
    if (dev->postcopy_state != VHOST_POSTCOPY_ADVISED) {
        *reason = dev->postcopy_state == VHOST_POSTCOPY_OFF
                  ? "no POSTCOPY_ADVISE came first" : "listening already";
        return EINVAL;
    }
    if (dev->mem && dev->mem->n_regions) {
        *reason = "guest memory is mapped already";
        return EINVAL;
    }
    dev->postcopy_state = VHOST_POSTCOPY_LISTENING;
    VLOG_INFO("%s: postcopy listening: guest memory will fault in from the "
              "source", dev->name);
    return 0;
}

/* Registers region 'r', just mapped, with the userfaultfd: a page the
 * destination has not received blocks the thread that touches it until
 * the frontend copies it in.  Called only while listening. */
int
vhost_postcopy_register(struct vhost_dev *dev,
                        const struct guest_mem_region *r, const char **reason)
{
#ifdef __NR_userfaultfd
    struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
    uint64_t start, len;

    vhost_postcopy_range__(r, &start, &len);
    reg.range.start = start;
    reg.range.len = len;
    if (ioctl(dev->postcopy_ufd, UFFDIO_REGISTER, &reg)) {
        *reason = "UFFDIO_REGISTER failed (memory the kernel cannot fault "
                  "in through userfaultfd)";
        return errno;
    }
    return 0;
#else
    *reason = "no userfaultfd on this system";
    return ENOSYS;
#endif
}

/* POSTCOPY_END: every page has arrived.  Unregisters the regions and
 * closes the userfaultfd. */
int
vhost_postcopy_end(struct vhost_dev *dev, const char **reason)
{
    if (dev->postcopy_state != VHOST_POSTCOPY_LISTENING) {
        *reason = "postcopy is not listening";
        return EINVAL;
    }
    vhost_postcopy_reset(dev);
    VLOG_INFO("%s: postcopy ended", dev->name);
    return 0;
}

/* Forgets any postcopy state of 'dev': as at POSTCOPY_END, a disconnect or
 * a second ADVISE. */
void
vhost_postcopy_reset(struct vhost_dev *dev)
{
#ifdef __NR_userfaultfd
    if (dev->postcopy_state == VHOST_POSTCOPY_LISTENING && dev->mem) {
        for (unsigned int i = 0; i < dev->mem->n_regions; i++) {
            uint64_t start, len;

            vhost_postcopy_range__(&dev->mem->regions[i], &start, &len);
            struct uffdio_range range = { .start = start, .len = len };
            /* Closing the fd unregisters too; this says so early. */
            ioctl(dev->postcopy_ufd, UFFDIO_UNREGISTER, &range);
        }
    }
#endif
    if (dev->postcopy_ufd >= 0) {
        close(dev->postcopy_ufd);
        dev->postcopy_ufd = -1;
    }
    dev->postcopy_state = VHOST_POSTCOPY_OFF;
}
