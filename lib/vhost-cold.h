/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cold paths of the data path, out of line so that the burst loops stay
 * small in the instruction cache.  The hot code keeps an inline test for
 * each rare condition and calls here:
 *
 *   - a buffer that crosses a guest memory region boundary, translated
 *     piece by piece (vhost_cold_add_segs);
 *   - an indirect table that is not contiguous in our address space,
 *     copied before it is walked (vhost_cold_copy_indirect);
 *   - a virtio-net header spread over several descriptors, gathered or
 *     scattered (vhost_cold_gather, vhost_cold_scatter);
 *   - the RARP announced once after a migration or a reconnect
 *     (vhost_cold_make_rarp);
 *   - a burst that ends early, its work budget used up or the guest's RX
 *     buffers too small for the next packet (vhost_cold_budget_stop,
 *     vhost_cold_small_buf_stop).
 *
 * Dirty-page logging is the fourth cold path; it has a file of its own
 * (vhost-dirty-log.c).
 *
 * Trust model: as virtq-split.h.  Every address is translated with its
 * length; nothing here trusts a value it has not checked.
 */

#ifndef OVS_VHOST_VHOST_COLD_H
#define OVS_VHOST_VHOST_COLD_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util.h"

struct guest_mem;
struct vhost_pkt;
struct vhost_pkt_alloc;
struct virtq;
struct virtq_segs;

bool vhost_cold_add_segs(const struct guest_mem *, uint64_t gpa, uint32_t len,
                         struct virtq_segs *) OVS_COLD;
void *vhost_cold_copy_indirect(const struct guest_mem *, uint64_t gpa,
                               uint32_t len) OVS_COLD;
size_t vhost_cold_gather(const struct virtq_segs *, unsigned int *segp,
                         uint32_t *offp, void *dst, size_t len) OVS_COLD;
bool vhost_cold_make_rarp(struct vhost_pkt *, const uint8_t mac[6],
                          const struct vhost_pkt_alloc *) OVS_COLD;
size_t vhost_cold_scatter(const struct virtq_segs *, unsigned int *segp,
                          uint32_t *offp, const void *src, size_t len)
    OVS_COLD;
void vhost_cold_budget_stop(struct virtq *, uint32_t budget) OVS_COLD;
void vhost_cold_walk_stop(struct virtq *, int reason, uint32_t budget)
    OVS_COLD;
void vhost_cold_small_buf_stop(struct virtq *, uint32_t need, uint64_t have)
    OVS_COLD;

#endif /* vhost-cold.h */
