/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vhost-user message framing and socket I/O: see vhost-user-msg.h.
 */

#include <config.h>
#include "vhost-user-msg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

void
vhost_user_msg_reader_init(struct vhost_user_msg_reader *r)
{
    r->have = 0;
    r->msg.n_fds = 0;
    r->msg.fds_truncated = false;
    for (size_t i = 0; i < VHOST_USER_MAX_FDS; i++) {
        r->msg.fds[i] = -1;
    }
}

/* Appends the fds carried in 'mh''s control data to 'msg'.  Any beyond
 * VHOST_USER_MAX_FDS are closed and flagged. */
static void
vhost_user_msg_collect_fds__(struct vhost_user_msg *msg,
                             const struct msghdr *mh)
{
    if (mh->msg_flags & MSG_CTRUNC) {
        /* The kernel closed the fds that did not fit. */
        msg->fds_truncated = true;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c;
         c = CMSG_NXTHDR((struct msghdr *) mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const unsigned char *data = CMSG_DATA(c);
        for (size_t i = 0; i < n; i++) {
            int fd;

            memcpy(&fd, data + i * sizeof fd, sizeof fd);
            if (msg->n_fds < VHOST_USER_MAX_FDS) {
                msg->fds[msg->n_fds++] = fd;
            } else {
                msg->fds_truncated = true;
                close(fd);
            }
        }
    }
}

/* Reads from non-blocking socket 'fd' into 'r' as much of the current
 * message as is available, without reading past its end.
 *
 * Returns VHOST_USER_READ_MSG when 'r->msg' holds a whole message (header,
 * 'hdr.size' payload bytes and every fd sent with it).  The caller then
 * handles it and calls vhost_user_msg_release() before the next read.
 * Returns VHOST_USER_READ_MORE when the socket has no more data yet,
 * VHOST_USER_READ_EOF when the peer closed it, VHOST_USER_READ_ERROR with
 * '*error' set on a socket error, and VHOST_USER_READ_BAD when the header
 * has a bad version or a payload size over VHOST_USER_MAX_PAYLOAD: the
 * stream cannot be resynchronised and the connection must be closed. */
enum vhost_user_read_status
vhost_user_msg_read(int fd, struct vhost_user_msg_reader *r, int *error)
{
    struct vhost_user_msg *msg = &r->msg;

    *error = 0;
    for (;;) {
        size_t want;
        char *base;

        if (r->have < VHOST_USER_HDR_SIZE) {
            want = VHOST_USER_HDR_SIZE - r->have;
            base = (char *) &msg->hdr + r->have;
        } else {
            /* Framing: the only checks made before dispatch. */
            if ((msg->hdr.flags & VHOST_USER_VERSION_MASK)
                != VHOST_USER_VERSION
                || msg->hdr.size > VHOST_USER_MAX_PAYLOAD) {
                return VHOST_USER_READ_BAD;
            }
            want = VHOST_USER_HDR_SIZE + msg->hdr.size - r->have;
            if (!want) {
                return VHOST_USER_READ_MSG;
            }
            base = (char *) &msg->payload + (r->have - VHOST_USER_HDR_SIZE);
        }

        union {
            char buf[CMSG_SPACE(VHOST_USER_MAX_FDS * sizeof(int))];
            struct cmsghdr align;
        } control;
        struct iovec iov = {
            .iov_base = base,
            .iov_len = want,
        };
        struct msghdr mh = {
            .msg_iov = &iov,
            .msg_iovlen = 1,
            .msg_control = control.buf,
            .msg_controllen = sizeof control.buf,
        };

        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return VHOST_USER_READ_MORE;
            }
            *error = errno;
            return VHOST_USER_READ_ERROR;
        }
        vhost_user_msg_collect_fds__(msg, &mh);
        if (n == 0) {
            return VHOST_USER_READ_EOF;
        }
        r->have += n;
    }
}

/* Takes fd number 'i' out of 'msg', so that vhost_user_msg_release() will
 * not close it.  Returns the fd, or -1 if there is none. */
int
vhost_user_msg_take_fd(struct vhost_user_msg *msg, size_t i)
{
    if (i >= msg->n_fds) {
        return -1;
    }
    int fd = msg->fds[i];
    msg->fds[i] = -1;
    return fd;
}

/* Ends the current message in 'r': closes every fd that was received with
 * it and not taken, and makes 'r' ready for the next message.  Returns the
 * number of fds closed. */
size_t
vhost_user_msg_release(struct vhost_user_msg_reader *r)
{
    size_t closed = 0;

    for (size_t i = 0; i < r->msg.n_fds; i++) {
        if (r->msg.fds[i] >= 0) {
            close(r->msg.fds[i]);
            closed++;
        }
    }
    vhost_user_msg_reader_init(r);
    return closed;
}

/* Sends the message with header 'hdr', 'hdr->size' bytes of 'payload' and
 * 'n_fds' fds from 'fds' on non-blocking socket 'fd', starting at byte
 * '*sentp' of the message (0 for a new message: the fds go with the first
 * byte), and adds what was sent to '*sentp'.
 *
 * Returns 0 once the whole message is sent; EAGAIN if the socket is full
 * (call again with the same arguments when it is writable); or another
 * positive errno value. */
int
vhost_user_msg_send(int fd, const struct vhost_user_hdr *hdr,
                    const void *payload, const int *fds, size_t n_fds,
                    size_t *sentp)
{
    union {
        char buf[CMSG_SPACE(VHOST_USER_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    size_t total = VHOST_USER_HDR_SIZE + hdr->size;

    if (n_fds > VHOST_USER_MAX_FDS || hdr->size > VHOST_USER_MAX_PAYLOAD
        || (hdr->size && !payload)) {
        return EINVAL;
    }
    while (*sentp < total) {
        size_t sent = *sentp;
        struct iovec iov[2];
        struct msghdr mh = { .msg_iov = iov };

        if (sent < VHOST_USER_HDR_SIZE) {
            iov[mh.msg_iovlen].iov_base = (char *) hdr + sent;
            iov[mh.msg_iovlen++].iov_len = VHOST_USER_HDR_SIZE - sent;
            sent = VHOST_USER_HDR_SIZE;
        }
        if (hdr->size) {
            iov[mh.msg_iovlen].iov_base
                = (char *) payload + (sent - VHOST_USER_HDR_SIZE);
            iov[mh.msg_iovlen++].iov_len = total - sent;
        }
        if (!*sentp && n_fds) {
            memset(&control, 0, sizeof control);
            mh.msg_control = control.buf;
            mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
            memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        }

        ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EWOULDBLOCK ? EAGAIN : errno;
        }
        *sentp += n;
    }
    return 0;
}

const char *
vhost_user_request_to_string(uint32_t request)
{
    static const char *const names[VHOST_USER_N_REQUESTS] = {
#define VHOST_USER_REQ_NAME(NAME) [VHOST_USER_##NAME] = #NAME
        VHOST_USER_REQ_NAME(NONE),
        VHOST_USER_REQ_NAME(GET_FEATURES),
        VHOST_USER_REQ_NAME(SET_FEATURES),
        VHOST_USER_REQ_NAME(SET_OWNER),
        VHOST_USER_REQ_NAME(RESET_OWNER),
        VHOST_USER_REQ_NAME(SET_MEM_TABLE),
        VHOST_USER_REQ_NAME(SET_LOG_BASE),
        VHOST_USER_REQ_NAME(SET_LOG_FD),
        VHOST_USER_REQ_NAME(SET_VRING_NUM),
        VHOST_USER_REQ_NAME(SET_VRING_ADDR),
        VHOST_USER_REQ_NAME(SET_VRING_BASE),
        VHOST_USER_REQ_NAME(GET_VRING_BASE),
        VHOST_USER_REQ_NAME(SET_VRING_KICK),
        VHOST_USER_REQ_NAME(SET_VRING_CALL),
        VHOST_USER_REQ_NAME(SET_VRING_ERR),
        VHOST_USER_REQ_NAME(GET_PROTOCOL_FEATURES),
        VHOST_USER_REQ_NAME(SET_PROTOCOL_FEATURES),
        VHOST_USER_REQ_NAME(GET_QUEUE_NUM),
        VHOST_USER_REQ_NAME(SET_VRING_ENABLE),
        VHOST_USER_REQ_NAME(SEND_RARP),
        VHOST_USER_REQ_NAME(NET_SET_MTU),
        VHOST_USER_REQ_NAME(SET_BACKEND_REQ_FD),
        VHOST_USER_REQ_NAME(IOTLB_MSG),
        VHOST_USER_REQ_NAME(SET_VRING_ENDIAN),
        VHOST_USER_REQ_NAME(GET_CONFIG),
        VHOST_USER_REQ_NAME(SET_CONFIG),
        VHOST_USER_REQ_NAME(CREATE_CRYPTO_SESSION),
        VHOST_USER_REQ_NAME(CLOSE_CRYPTO_SESSION),
        VHOST_USER_REQ_NAME(POSTCOPY_ADVISE),
        VHOST_USER_REQ_NAME(POSTCOPY_LISTEN),
        VHOST_USER_REQ_NAME(POSTCOPY_END),
        VHOST_USER_REQ_NAME(GET_INFLIGHT_FD),
        VHOST_USER_REQ_NAME(SET_INFLIGHT_FD),
        VHOST_USER_REQ_NAME(GPU_SET_SOCKET),
        VHOST_USER_REQ_NAME(RESET_DEVICE),
        VHOST_USER_REQ_NAME(VRING_KICK),
        VHOST_USER_REQ_NAME(GET_MAX_MEM_SLOTS),
        VHOST_USER_REQ_NAME(ADD_MEM_REG),
        VHOST_USER_REQ_NAME(REM_MEM_REG),
        VHOST_USER_REQ_NAME(SET_STATUS),
        VHOST_USER_REQ_NAME(GET_STATUS),
#undef VHOST_USER_REQ_NAME
    };

    return request < VHOST_USER_N_REQUESTS && names[request]
           ? names[request] : "UNKNOWN";
}
