/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vhost-user protocol handling: the dispatch table and one handler per
 * request (QEMU docs/interop/vhost-user.rst, "Front-end message types").
 *
 * Usage
 * =====
 *
 * vhost-port.c reads a whole message and hands it to vhost_user_dispatch(),
 * which checks it against the table, runs the handler, builds the reply or
 * acknowledgement, and tells the caller whether to send it and whether the
 * connection may go on.  The caller then releases the message, closing
 * every fd no handler took, and sends the reply without blocking.
 *
 * Thread-safety
 * =============
 *
 * Runs on the engine loop's thread, under the engine mutex.
 *
 * Trust model
 * ===========
 *
 * The message is the frontend's.  The table bounds its payload size and
 * fd count before any handler looks at it; handlers check the values.
 * A rejected message is logged at a limited rate, counted, and either
 * acknowledged with an error (REPLY_ACK negotiated and NEED_REPLY set) or
 * answered by closing the connection.
 */

#ifndef OVS_VHOST_VHOST_USER_H
#define OVS_VHOST_VHOST_USER_H 1

#include <stdbool.h>
#include "vhost-user-msg.h"

struct vhost_dev;

/* A reply from the back-end: a header and at most a vring state. */
struct vhost_user_reply {
    struct vhost_user_hdr hdr;
    union {
        uint64_t u64;
        struct vhost_user_vring_state state;
        struct vhost_user_config config;
        struct vhost_user_mem_table mem;        /* Postcopy. */
        struct vhost_user_mem_reg mem_reg;      /* Postcopy. */
    } payload;
    int fd;                     /* Sent with the reply and then closed by
                                 * the sender, or -1. */
};

/* What the connection should do after a message. */
enum vhost_user_verdict {
    VHOST_USER_CONTINUE,        /* Keep reading. */
    VHOST_USER_REPLY,           /* Send the reply, then keep reading. */
    VHOST_USER_DISCONNECT,      /* Close this frontend's connection. */
};

enum vhost_user_verdict vhost_user_dispatch(struct vhost_dev *,
                                            struct vhost_user_msg *,
                                            struct vhost_user_reply *);

#endif /* vhost-user.h */
