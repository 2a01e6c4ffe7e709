/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Postcopy live migration (VHOST_USER_PROTOCOL_F_PAGEFAULT): guest memory
 * that arrives after the guest runs on the destination.
 *
 * Usage
 * =====
 *
 * vhost-user.rst, "Migrating back-ends" and the POSTCOPY_* requests.  On
 * the destination, before the guest runs:
 *
 *   1. POSTCOPY_ADVISE: vhost_postcopy_advise() opens a userfaultfd and
 *      hands a copy to the frontend in the reply.
 *   2. POSTCOPY_LISTEN: vhost_postcopy_listen(); from here on, the memory
 *      table the frontend sends is registered with the userfaultfd
 *      (vhost_postcopy_register()), and the handlers reply to
 *      SET_MEM_TABLE and ADD_MEM_REG with where each region is mapped
 *      here, which the frontend needs to wake a thread that faulted on a
 *      page it placed.  The frontend then acknowledges with the same
 *      request and an 8-byte payload of 0 (vhost_user_dispatch() takes it).
 *   3. The guest runs; a page not yet received blocks the thread that
 *      touches it, PMD threads included, until the frontend (which reads
 *      the userfaultfd) has copied it in from the source and woken us.
 *   4. POSTCOPY_END: vhost_postcopy_end() unregisters the regions and
 *      closes the userfaultfd.
 *
 * Nothing in the data path changes: its faults are the kernel's to hold.
 *
 * Thread-safety
 * =============
 *
 * The engine loop only, like the rest of the control plane.
 *
 * Trust model
 * ===========
 *
 * The frontend decides when each step comes; a step out of order (LISTEN
 * before ADVISE, LISTEN with memory already mapped, END without LISTEN)
 * is refused.  The frontend also holds the userfaultfd: one that never
 * answers a fault stalls the threads that touch that memory, as it
 * could by never sending the page over a precopy migration's channel.
 */

#ifndef OVS_VHOST_VHOST_POSTCOPY_H
#define OVS_VHOST_VHOST_POSTCOPY_H 1

#include <stdbool.h>
#include <stdint.h>

struct guest_mem_region;
struct vhost_dev;

enum vhost_postcopy_state {
    VHOST_POSTCOPY_OFF,         /* No postcopy, or after POSTCOPY_END. */
    VHOST_POSTCOPY_ADVISED,     /* A userfaultfd is open. */
    VHOST_POSTCOPY_LISTENING,   /* Memory mapped from now on registers. */
};

int vhost_postcopy_advise(struct vhost_dev *, int *fdp, const char **reason);
int vhost_postcopy_listen(struct vhost_dev *, const char **reason);
int vhost_postcopy_register(struct vhost_dev *,
                            const struct guest_mem_region *,
                            const char **reason);
int vhost_postcopy_end(struct vhost_dev *, const char **reason);
void vhost_postcopy_reset(struct vhost_dev *);

#endif /* vhost-postcopy.h */
