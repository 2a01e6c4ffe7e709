/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vhost-user wire format (QEMU docs/interop/vhost-user.rst, "Message
 * specification") and non-blocking message I/O over a Unix socket.
 *
 * Usage
 * =====
 *
 * A connection owns one struct vhost_user_msg_reader.  Each time its socket
 * is readable, vhost_user_msg_read() pulls what is there; once it returns a
 * complete message, the caller dispatches it and then calls
 * vhost_user_msg_release(), which closes every fd the handler did not take
 * (handlers take an fd by setting its slot to -1).
 *
 * Messages are written with vhost_user_msg_send(), which never blocks: it
 * sends what the socket takes and reports how far it got, so that a
 * frontend that does not read its replies stalls only its own connection.
 *
 * Trust model
 * ===========
 *
 * The header, the payload and the fds come from the frontend.  The reader
 * checks only framing: the version bits and that 'size' is at most
 * VHOST_USER_MAX_PAYLOAD.  Everything else is the dispatch table's and the
 * handlers' job.
 */

#ifndef OVS_VHOST_VHOST_USER_MSG_H
#define OVS_VHOST_VHOST_USER_MSG_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util.h"
#include "vhost-iotlb.h"

/* Requests, front-end to back-end. */
enum vhost_user_request {
    VHOST_USER_NONE = 0,
    VHOST_USER_GET_FEATURES = 1,
    VHOST_USER_SET_FEATURES = 2,
    VHOST_USER_SET_OWNER = 3,
    VHOST_USER_RESET_OWNER = 4,
    VHOST_USER_SET_MEM_TABLE = 5,
    VHOST_USER_SET_LOG_BASE = 6,
    VHOST_USER_SET_LOG_FD = 7,
    VHOST_USER_SET_VRING_NUM = 8,
    VHOST_USER_SET_VRING_ADDR = 9,
    VHOST_USER_SET_VRING_BASE = 10,
    VHOST_USER_GET_VRING_BASE = 11,
    VHOST_USER_SET_VRING_KICK = 12,
    VHOST_USER_SET_VRING_CALL = 13,
    VHOST_USER_SET_VRING_ERR = 14,
    VHOST_USER_GET_PROTOCOL_FEATURES = 15,
    VHOST_USER_SET_PROTOCOL_FEATURES = 16,
    VHOST_USER_GET_QUEUE_NUM = 17,
    VHOST_USER_SET_VRING_ENABLE = 18,
    VHOST_USER_SEND_RARP = 19,
    VHOST_USER_NET_SET_MTU = 20,
    VHOST_USER_SET_BACKEND_REQ_FD = 21,
    VHOST_USER_IOTLB_MSG = 22,
    VHOST_USER_SET_VRING_ENDIAN = 23,
    VHOST_USER_GET_CONFIG = 24,
    VHOST_USER_SET_CONFIG = 25,
    VHOST_USER_CREATE_CRYPTO_SESSION = 26,
    VHOST_USER_CLOSE_CRYPTO_SESSION = 27,
    VHOST_USER_POSTCOPY_ADVISE = 28,
    VHOST_USER_POSTCOPY_LISTEN = 29,
    VHOST_USER_POSTCOPY_END = 30,
    VHOST_USER_GET_INFLIGHT_FD = 31,
    VHOST_USER_SET_INFLIGHT_FD = 32,
    VHOST_USER_GPU_SET_SOCKET = 33,
    VHOST_USER_RESET_DEVICE = 34,
    VHOST_USER_VRING_KICK = 35,
    VHOST_USER_GET_MAX_MEM_SLOTS = 36,
    VHOST_USER_ADD_MEM_REG = 37,
    VHOST_USER_REM_MEM_REG = 38,
    VHOST_USER_SET_STATUS = 39,
    VHOST_USER_GET_STATUS = 40,
    VHOST_USER_N_REQUESTS
};

/* Protocol feature bits ("Protocol features"). */
#define VHOST_USER_PROTOCOL_F_MQ                    0
#define VHOST_USER_PROTOCOL_F_LOG_SHMFD             1
#define VHOST_USER_PROTOCOL_F_RARP                  2
#define VHOST_USER_PROTOCOL_F_REPLY_ACK             3
#define VHOST_USER_PROTOCOL_F_NET_MTU               4
#define VHOST_USER_PROTOCOL_F_BACKEND_REQ           5
#define VHOST_USER_PROTOCOL_F_CROSS_ENDIAN          6
#define VHOST_USER_PROTOCOL_F_CRYPTO_SESSION        7
#define VHOST_USER_PROTOCOL_F_PAGEFAULT             8
#define VHOST_USER_PROTOCOL_F_CONFIG                9
#define VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD       10
#define VHOST_USER_PROTOCOL_F_HOST_NOTIFIER         11
#define VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD        12
#define VHOST_USER_PROTOCOL_F_RESET_DEVICE          13
#define VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS  14
#define VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS   15
#define VHOST_USER_PROTOCOL_F_STATUS                16

/* Header flags. */
#define VHOST_USER_VERSION_MASK     0x3
#define VHOST_USER_VERSION          0x1
#define VHOST_USER_REPLY_MASK       (1u << 2)
#define VHOST_USER_NEED_REPLY_MASK  (1u << 3)

/* SET_VRING_KICK/CALL/ERR payload: the vring index in bits 0..7, and bit 8
 * set when no fd is passed (the ring is polled). */
#define VHOST_USER_VRING_IDX_MASK   0xffu
#define VHOST_USER_VRING_NOFD_MASK  (1u << 8)

/* SET_VRING_ADDR flags: log used-ring writes. */
#define VHOST_VRING_F_LOG           0

/* The most fds one message carries (VHOST_MEMORY_BASELINE_NREGIONS). */
#define VHOST_USER_MAX_FDS          8

/* The largest payload we accept.  The largest request we implement is
 * SET_MEM_TABLE with VHOST_USER_MAX_FDS regions (264 bytes); GET/SET_CONFIG
 * can carry 256 bytes of config space after a 12-byte header. */
#define VHOST_USER_MAX_PAYLOAD      4096

struct vhost_user_hdr {
    uint32_t request;
    uint32_t flags;
    uint32_t size;              /* Payload bytes that follow the header. */
};
#define VHOST_USER_HDR_SIZE 12
BUILD_ASSERT_DECL(sizeof(struct vhost_user_hdr) == VHOST_USER_HDR_SIZE);

/* "A vring state description". */
struct vhost_user_vring_state {
    uint32_t index;
    uint32_t num;
};

/* "A vring address description". */
struct vhost_user_vring_addr {
    uint32_t index;
    uint32_t flags;
    uint64_t desc_user_addr;
    uint64_t used_user_addr;
    uint64_t avail_user_addr;
    uint64_t log_guest_addr;
};
BUILD_ASSERT_DECL(sizeof(struct vhost_user_vring_addr) == 40);

/* "Memory region description". */
struct vhost_user_mem_region {
    uint64_t guest_phys_addr;
    uint64_t memory_size;
    uint64_t userspace_addr;
    uint64_t mmap_offset;
};
BUILD_ASSERT_DECL(sizeof(struct vhost_user_mem_region) == 32);

/* "Multiple Memory regions description" (SET_MEM_TABLE). */
struct vhost_user_mem_table {
    uint32_t nregions;
    uint32_t padding;
    struct vhost_user_mem_region regions[VHOST_USER_MAX_FDS];
};
#define VHOST_USER_MEM_TABLE_HDR_SIZE 8

/* "Single memory region description" (ADD_MEM_REG, REM_MEM_REG). */
struct vhost_user_mem_reg {
    uint64_t padding;
    struct vhost_user_mem_region region;
};
BUILD_ASSERT_DECL(sizeof(struct vhost_user_mem_reg) == 40);

/* "Log description" (SET_LOG_BASE). */
struct vhost_user_log {
    uint64_t mmap_size;
    uint64_t mmap_offset;
};
BUILD_ASSERT_DECL(sizeof(struct vhost_user_log) == 16);

/* "Virtio device config space" (GET_CONFIG, SET_CONFIG): a window of
 * 'size' bytes at 'offset' of the device's configuration space. */
#define VHOST_USER_MAX_CONFIG_SIZE 256
struct vhost_user_config {
    uint32_t offset;
    uint32_t size;
    uint32_t flags;
    uint8_t region[VHOST_USER_MAX_CONFIG_SIZE];
};
#define VHOST_USER_CONFIG_HDR_SIZE 12

/* Back-end message types (requests on the backend channel,
 * SET_BACKEND_REQ_FD): only the IOTLB miss is sent here.  Its payload is
 * a struct vhost_iotlb_msg (vhost-iotlb.h). */
#define VHOST_USER_BACKEND_IOTLB_MSG 1

/* A whole message, as read off the socket. */
struct vhost_user_msg {
    struct vhost_user_hdr hdr;
    union {
        uint64_t u64;
        struct vhost_user_vring_state state;
        struct vhost_user_vring_addr addr;
        struct vhost_user_mem_table mem;
        struct vhost_user_mem_reg mem_reg;
        struct vhost_user_log log;
        struct vhost_user_config config;
        struct vhost_iotlb_msg iotlb;
        uint8_t bytes[VHOST_USER_MAX_PAYLOAD];
    } payload;

    int fds[VHOST_USER_MAX_FDS];    /* -1 where none or taken. */
    size_t n_fds;
    bool fds_truncated;             /* More fds were sent than fit. */
};

/* Incremental reader: header first, then exactly 'size' payload bytes, so a
 * read never runs into the next message (and its fds). */
struct vhost_user_msg_reader {
    size_t have;                    /* Bytes of 'msg' read so far. */
    struct vhost_user_msg msg;
};

enum vhost_user_read_status {
    VHOST_USER_READ_MORE,           /* Nothing complete yet; wait. */
    VHOST_USER_READ_MSG,            /* 'reader->msg' is complete. */
    VHOST_USER_READ_EOF,            /* The peer closed the connection. */
    VHOST_USER_READ_ERROR,          /* Socket error; errno-style code out. */
    VHOST_USER_READ_BAD,            /* Framing error: bad version, size. */
};

void vhost_user_msg_reader_init(struct vhost_user_msg_reader *);
enum vhost_user_read_status vhost_user_msg_read(
    int fd, struct vhost_user_msg_reader *, int *error);
size_t vhost_user_msg_release(struct vhost_user_msg_reader *);

int vhost_user_msg_send(int fd, const struct vhost_user_hdr *,
                        const void *payload, const int *fds, size_t n_fds,
                        size_t *sentp);
int vhost_user_msg_take_fd(struct vhost_user_msg *, size_t i);

const char *vhost_user_request_to_string(uint32_t request);

#endif /* vhost-user-msg.h */
