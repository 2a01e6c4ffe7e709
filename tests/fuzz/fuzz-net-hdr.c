/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the virtio-net header and offload parser (VIRTIO 1.2
 * §5.1.6, lib/virtio-net-hdr.h).  A header from the guest is parsed into
 * offload metadata for a packet of a fuzzed length: whatever it says, an
 * accepted checksum request lies inside the packet (CVE-2024-11614), the
 * metadata reproduces the header, and building a header from it and
 * parsing that again gives the same metadata.
 */

#include <config.h>

#include <string.h>
#include "fuzz-input.h"
#include "virtio-net-hdr.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
    struct virtio_net_hdr hdr, hdr2;
    struct vhost_offload ol, ol2;

    while (in.n) {
        uint32_t pkt_len = fuzz_input_u32(&in);
        uint16_t num_buffers = fuzz_input_u16(&in);

        fuzz_input_bytes(&in, &hdr, sizeof hdr);
        bool ok = virtio_net_hdr_parse(&hdr, pkt_len, &ol);

        FUZZ_CHECK(!(ol.flags & ~(VHOST_OL_NEEDS_CSUM | VHOST_OL_DATA_VALID)));
        FUZZ_CHECK(ol.gso_type == hdr.gso_type);
        FUZZ_CHECK(ol.hdr_len == hdr.hdr_len);
        FUZZ_CHECK(ol.gso_size == hdr.gso_size);
        if (ok && (ol.flags & VHOST_OL_NEEDS_CSUM)) {
            FUZZ_CHECK((uint64_t) ol.csum_start + ol.csum_offset + 2
                       <= pkt_len);
        }
        if (!ok) {
            FUZZ_CHECK(hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
            continue;
        }

        virtio_net_hdr_build(&hdr2, &ol, num_buffers);
        FUZZ_CHECK(hdr2.num_buffers == num_buffers);
        FUZZ_CHECK(virtio_net_hdr_parse(&hdr2, pkt_len, &ol2));
        FUZZ_CHECK(!memcmp(&ol, &ol2, sizeof ol));
    }
    return 0;
}

static void
fuzz_net_hdr_put__(struct fuzz_input_buf *b, uint32_t pkt_len,
                   const struct virtio_net_hdr *hdr)
{
    fuzz_input_put(b, &pkt_len, sizeof pkt_len);
    fuzz_input_put_u16(b, 1);
    fuzz_input_put(b, hdr, sizeof *hdr);
}

void
fuzz_target_seeds(fuzz_emit_fn *emit)
{
    static struct fuzz_input_buf b;

    b.n = 0;
    fuzz_net_hdr_put__(&b, 1514, &(struct virtio_net_hdr) { 0 });
    fuzz_net_hdr_put__(&b, 1514, &(struct virtio_net_hdr) {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 34,
        .csum_offset = 16,
    });
    fuzz_net_hdr_put__(&b, 64000, &(struct virtio_net_hdr) {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
        .hdr_len = 54, .gso_size = 1448, .csum_start = 34, .csum_offset = 16,
    });
    emit(b.data, b.n, "valid");

    b.n = 0;
    fuzz_net_hdr_put__(&b, 40, &(struct virtio_net_hdr) {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 0xffff,
        .csum_offset = 0xffff,
    });
    fuzz_net_hdr_put__(&b, 50, &(struct virtio_net_hdr) {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 34,
        .csum_offset = 16,
    });
    emit(b.data, b.n, "csum-beyond");
}
