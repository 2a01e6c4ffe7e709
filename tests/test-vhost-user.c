/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the vhost-user message reader and writer
 * (lib/vhost-user-msg.[ch]) over a socketpair, without an engine.  The
 * sending side uses the test frontend's own sendmsg code.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-user-msg.h"

static int
fcntl_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    return flags < 0 ? flags : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* A connected socketpair: [0] is the sender's end, [1] the non-blocking
 * reader's. */
static void
make_pair(int sv[2])
{
    TU_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
    TU_SYS(fcntl_nonblock(sv[1]));
}

static void
send_bytes(int sock, const void *buf, size_t len, const int *fds,
           size_t n_fds)
{
    int error = tfe_sock_send(sock, buf, len, fds, n_fds, TU_TIMEOUT_MS);

    if (error) {
        TU_FAIL("sending %zu bytes with %zu fds: %s", len, n_fds,
                tu_strerror(error));
    }
}

/* Builds a message with 'request', 'size' payload bytes of a pattern
 * derived from 'seed', into 'buf'.  Returns its length. */
static size_t
build_msg(uint8_t *buf, uint32_t request, uint32_t size, uint8_t seed)
{
    struct vhost_user_hdr hdr = {
        .request = request, .flags = VHOST_USER_VERSION, .size = size,
    };

    memcpy(buf, &hdr, sizeof hdr);
    for (uint32_t i = 0; i < size; i++) {
        buf[sizeof hdr + i] = (uint8_t) (seed + i);
    }
    return sizeof hdr + size;
}

static int
new_eventfd(void)
{
    return TU_SYS(eventfd(0, EFD_CLOEXEC));
}

/* Checks that fd 'a' (received) refers to the same file as 'b' (sent). */
static void
check_same_file(int a, int b)
{
    struct stat sa, sb;

    TU_CHECK_CMP(a, >=, 0);
    TU_SYS(fstat(a, &sa));
    TU_SYS(fstat(b, &sb));
    TU_CHECK_EQ(sa.st_ino, sb.st_ino);
    TU_CHECK_EQ(sa.st_dev, sb.st_dev);
    TU_CHECK(a != b);
}

static void
check_payload(const struct vhost_user_msg *msg, uint32_t request,
              uint32_t size, uint8_t seed)
{
    TU_CHECK_EQ(msg->hdr.request, request);
    TU_CHECK_EQ(msg->hdr.flags, VHOST_USER_VERSION);
    TU_CHECK_EQ(msg->hdr.size, size);
    for (uint32_t i = 0; i < size; i++) {
        if (msg->payload.bytes[i] != (uint8_t) (seed + i)) {
            TU_FAIL("payload byte %"PRIu32": expected %u, got %u", i,
                    (uint8_t) (seed + i), msg->payload.bytes[i]);
        }
    }
}

static const char *
read_status_to_string(enum vhost_user_read_status s)
{
    switch (s) {
    case VHOST_USER_READ_MORE: return "MORE";
    case VHOST_USER_READ_MSG: return "MSG";
    case VHOST_USER_READ_EOF: return "EOF";
    case VHOST_USER_READ_ERROR: return "ERROR";
    case VHOST_USER_READ_BAD: return "BAD";
    }
    return "?";
}

#define CHECK_READ(FD, READER, EXPECTED)                                \
    do {                                                                \
        int error_;                                                     \
        enum vhost_user_read_status s_                                  \
            = vhost_user_msg_read(FD, READER, &error_);                 \
        if (s_ != (EXPECTED)) {                                         \
            TU_FAIL("vhost_user_msg_read: expected %s, got %s (%s)",    \
                    read_status_to_string(EXPECTED),                    \
                    read_status_to_string(s_), tu_strerror(error_));    \
        }                                                               \
    } while (0)

/* A message written one byte at a time, its fds with the first byte,
 * arrives whole and with its fds. */
static void
test_read_split(void)
{
    uint8_t buf[VHOST_USER_HDR_SIZE + 72];
    struct vhost_user_msg_reader r;
    int sv[2], fds[2];
    size_t len;
    int baseline;

    make_pair(sv);
    fds[0] = new_eventfd();
    fds[1] = new_eventfd();
    baseline = tu_count_fds();
    vhost_user_msg_reader_init(&r);

    len = build_msg(buf, VHOST_USER_SET_MEM_TABLE, 72, 3);
    tu_log("sending a %zu-byte message with 2 fds one byte at a time", len);
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MORE);
    for (size_t i = 0; i < len; i++) {
        send_bytes(sv[0], &buf[i], 1, fds, i == 0 ? 2 : 0);
        CHECK_READ(sv[1], &r,
                   i + 1 < len ? VHOST_USER_READ_MORE : VHOST_USER_READ_MSG);
    }
    check_payload(&r.msg, VHOST_USER_SET_MEM_TABLE, 72, 3);
    TU_CHECK_EQ(r.msg.n_fds, 2);
    TU_CHECK(!r.msg.fds_truncated);
    check_same_file(r.msg.fds[0], fds[0]);
    check_same_file(r.msg.fds[1], fds[1]);
    TU_CHECK_EQ(tu_count_fds(), baseline + 2);

    tu_log("release closes both received fds");
    TU_CHECK_EQ(vhost_user_msg_release(&r), 2);
    TU_CHECK_EQ(tu_count_fds(), baseline);

    tu_log("a header split in two with the payload, no fds");
    len = build_msg(buf, VHOST_USER_SET_FEATURES, 8, 9);
    send_bytes(sv[0], buf, 5, NULL, 0);
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MORE);
    send_bytes(sv[0], buf + 5, len - 5, NULL, 0);
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_SET_FEATURES, 8, 9);
    TU_CHECK_EQ(r.msg.n_fds, 0);
    TU_CHECK_EQ(vhost_user_msg_release(&r), 0);

    close(fds[0]);
    close(fds[1]);
    close(sv[0]);
    close(sv[1]);
}

/* Messages sent back to back, each with its own fds, are read one at a
 * time with the right fds. */
static void
test_read_back_to_back(void)
{
    uint8_t buf[VHOST_USER_HDR_SIZE + 256];
    struct vhost_user_msg_reader r;
    int sv[2], a, b[3], c;
    size_t len;
    int baseline;

    make_pair(sv);
    a = new_eventfd();
    for (size_t i = 0; i < 3; i++) {
        b[i] = new_eventfd();
    }
    c = new_eventfd();
    baseline = tu_count_fds();
    vhost_user_msg_reader_init(&r);

    tu_log("four messages queued: 8 bytes + 1 fd, header only, "
           "40 bytes + 3 fds, header only + 1 fd");
    len = build_msg(buf, VHOST_USER_SET_VRING_KICK, 8, 1);
    send_bytes(sv[0], buf, len, &a, 1);
    len = build_msg(buf, VHOST_USER_SET_OWNER, 0, 0);
    send_bytes(sv[0], buf, len, NULL, 0);
    len = build_msg(buf, VHOST_USER_ADD_MEM_REG, 40, 2);
    send_bytes(sv[0], buf, len, b, 3);
    len = build_msg(buf, VHOST_USER_SET_LOG_FD, 0, 0);
    send_bytes(sv[0], buf, len, &c, 1);

    tu_log("message 1 has exactly its fd");
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_SET_VRING_KICK, 8, 1);
    TU_CHECK_EQ(r.msg.n_fds, 1);
    check_same_file(r.msg.fds[0], a);
    tu_log("a handler takes the fd: release does not close it");
    {
        int fd = vhost_user_msg_take_fd(&r.msg, 0);
        TU_CHECK_CMP(fd, >=, 0);
        TU_CHECK_EQ(vhost_user_msg_take_fd(&r.msg, 0), -1);
        TU_CHECK_EQ(vhost_user_msg_take_fd(&r.msg, 1), -1);
        TU_CHECK_EQ(vhost_user_msg_release(&r), 0);
        TU_CHECK_EQ(tu_count_fds(), baseline + 1);
        close(fd);
    }

    tu_log("message 2 has no fds");
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_SET_OWNER, 0, 0);
    TU_CHECK_EQ(r.msg.n_fds, 0);
    TU_CHECK_EQ(vhost_user_msg_release(&r), 0);

    tu_log("message 3 has its three fds, in order");
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_ADD_MEM_REG, 40, 2);
    TU_CHECK_EQ(r.msg.n_fds, 3);
    for (size_t i = 0; i < 3; i++) {
        check_same_file(r.msg.fds[i], b[i]);
    }
    TU_CHECK_EQ(vhost_user_msg_release(&r), 3);

    tu_log("message 4, header only, has its fd");
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_SET_LOG_FD, 0, 0);
    TU_CHECK_EQ(r.msg.n_fds, 1);
    check_same_file(r.msg.fds[0], c);
    TU_CHECK_EQ(vhost_user_msg_release(&r), 1);

    tu_log("then nothing, then end of file");
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MORE);
    TU_CHECK_EQ(tu_count_fds(), baseline);
    close(sv[0]);
    CHECK_READ(sv[1], &r, VHOST_USER_READ_EOF);
    vhost_user_msg_release(&r);

    close(a);
    for (size_t i = 0; i < 3; i++) {
        close(b[i]);
    }
    close(c);
    close(sv[1]);
}

/* More than VHOST_USER_MAX_FDS fds: flagged, and none leaks. */
static void
test_read_too_many_fds(void)
{
    enum { N = VHOST_USER_MAX_FDS + 4 };
    uint8_t buf[VHOST_USER_HDR_SIZE + 8];
    struct vhost_user_msg_reader r;
    int sv[2], fds[N];
    size_t len;
    int baseline;

    make_pair(sv);
    baseline = tu_count_fds();
    for (size_t i = 0; i < N; i++) {
        fds[i] = new_eventfd();
    }
    vhost_user_msg_reader_init(&r);

    tu_log("a message with %d fds", N);
    len = build_msg(buf, VHOST_USER_SET_VRING_CALL, 8, 4);
    send_bytes(sv[0], buf, len, fds, N);
    tu_log("the sender closes its copies");
    for (size_t i = 0; i < N; i++) {
        close(fds[i]);
    }
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_SET_VRING_CALL, 8, 4);
    TU_CHECK(r.msg.fds_truncated);
    TU_CHECK_CMP(r.msg.n_fds, <=, VHOST_USER_MAX_FDS);
    tu_log("received %zu fds, flagged truncated", r.msg.n_fds);
    vhost_user_msg_release(&r);
    TU_CHECK(!r.msg.fds_truncated);
    TU_CHECK_EQ(r.msg.n_fds, 0);
    TU_CHECK_EQ(tu_count_fds(), baseline);

    tu_log("the next message reads normally");
    fds[0] = new_eventfd();
    len = build_msg(buf, VHOST_USER_SET_VRING_CALL, 8, 5);
    send_bytes(sv[0], buf, len, fds, 1);
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    check_payload(&r.msg, VHOST_USER_SET_VRING_CALL, 8, 5);
    TU_CHECK(!r.msg.fds_truncated);
    TU_CHECK_EQ(r.msg.n_fds, 1);
    TU_CHECK_EQ(vhost_user_msg_release(&r), 1);
    close(fds[0]);
    TU_CHECK_EQ(tu_count_fds(), baseline);

    close(sv[0]);
    close(sv[1]);
}

/* Framing errors: a bad version or an oversized payload. */
static void
test_read_bad_header(void)
{
    static const struct {
        uint32_t flags, size;
        const char *what;
    } cases[] = {
        { 0, 0, "version 0" },
        { 2, 0, "version 2" },
        { 3, 8, "version 3" },
        { VHOST_USER_VERSION, VHOST_USER_MAX_PAYLOAD + 1, "size 4097" },
        { VHOST_USER_VERSION, UINT32_MAX, "size 2^32 - 1" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct vhost_user_hdr hdr = {
            .request = VHOST_USER_SET_FEATURES,
            .flags = cases[i].flags, .size = cases[i].size,
        };
        struct vhost_user_msg_reader r;
        int sv[2], fd, baseline;

        tu_log("%s: a framing error", cases[i].what);
        make_pair(sv);
        fd = new_eventfd();
        baseline = tu_count_fds();
        vhost_user_msg_reader_init(&r);
        send_bytes(sv[0], &hdr, sizeof hdr, &fd, 1);
        close(fd);
        CHECK_READ(sv[1], &r, VHOST_USER_READ_BAD);
        vhost_user_msg_release(&r);
        close(sv[0]);
        close(sv[1]);
        TU_CHECK_EQ(tu_count_fds(), baseline - 3);
    }

    tu_log("the largest payload allowed is read");
    {
        static uint8_t buf[VHOST_USER_HDR_SIZE + VHOST_USER_MAX_PAYLOAD];
        struct vhost_user_msg_reader r;
        int sv[2];
        size_t len = build_msg(buf, VHOST_USER_SET_CONFIG,
                               VHOST_USER_MAX_PAYLOAD, 7);

        make_pair(sv);
        vhost_user_msg_reader_init(&r);
        send_bytes(sv[0], buf, len, NULL, 0);
        CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
        check_payload(&r.msg, VHOST_USER_SET_CONFIG, VHOST_USER_MAX_PAYLOAD,
                      7);
        vhost_user_msg_release(&r);
        close(sv[0]);
        close(sv[1]);
    }

    tu_log("end of file in the middle of a message");
    {
        uint8_t buf[VHOST_USER_HDR_SIZE + 8];
        struct vhost_user_msg_reader r;
        int sv[2];
        size_t len = build_msg(buf, VHOST_USER_SET_FEATURES, 8, 0);

        make_pair(sv);
        vhost_user_msg_reader_init(&r);
        send_bytes(sv[0], buf, len - 3, NULL, 0);
        CHECK_READ(sv[1], &r, VHOST_USER_READ_MORE);
        close(sv[0]);
        CHECK_READ(sv[1], &r, VHOST_USER_READ_EOF);
        vhost_user_msg_release(&r);
        close(sv[1]);
    }
}

/* vhost_user_msg_send() and the reader agree, fds included. */
static void
test_send_roundtrip(void)
{
    struct vhost_user_msg_reader r;
    struct vhost_user_hdr hdr = {
        .request = VHOST_USER_GET_VRING_BASE,
        .flags = VHOST_USER_VERSION | VHOST_USER_REPLY_MASK,
        .size = sizeof(struct vhost_user_vring_state),
    };
    struct vhost_user_vring_state state = { .index = 3, .num = 0x1234 };
    int sv[2], fds[2];
    int baseline;
    size_t sent;

    make_pair(sv);
    fds[0] = new_eventfd();
    fds[1] = new_eventfd();
    baseline = tu_count_fds();
    vhost_user_msg_reader_init(&r);

    tu_log("a reply with a payload and 2 fds");
    sent = 0;
    TU_CHECK_OK(vhost_user_msg_send(sv[0], &hdr, &state, fds, 2, &sent));
    TU_CHECK_EQ(sent, VHOST_USER_HDR_SIZE + sizeof state);
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    TU_CHECK_EQ(r.msg.hdr.request, VHOST_USER_GET_VRING_BASE);
    TU_CHECK_EQ(r.msg.hdr.flags, VHOST_USER_VERSION | VHOST_USER_REPLY_MASK);
    TU_CHECK_EQ(r.msg.hdr.size, sizeof state);
    TU_CHECK_EQ(r.msg.payload.state.index, 3);
    TU_CHECK_EQ(r.msg.payload.state.num, 0x1234);
    TU_CHECK_EQ(r.msg.n_fds, 2);
    check_same_file(r.msg.fds[0], fds[0]);
    check_same_file(r.msg.fds[1], fds[1]);
    TU_CHECK_EQ(vhost_user_msg_release(&r), 2);

    tu_log("a header-only reply");
    hdr.request = VHOST_USER_SET_LOG_BASE;
    hdr.size = 0;
    sent = 0;
    TU_CHECK_OK(vhost_user_msg_send(sv[0], &hdr, NULL, NULL, 0, &sent));
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MSG);
    TU_CHECK_EQ(r.msg.hdr.request, VHOST_USER_SET_LOG_BASE);
    TU_CHECK_EQ(r.msg.hdr.size, 0);
    TU_CHECK_EQ(vhost_user_msg_release(&r), 0);

    tu_log("more than VHOST_USER_MAX_FDS fds are refused");
    {
        int many[VHOST_USER_MAX_FDS + 1];
        for (size_t i = 0; i < ARRAY_SIZE(many); i++) {
            many[i] = fds[0];
        }
        sent = 0;
        TU_CHECK(vhost_user_msg_send(sv[0], &hdr, NULL, many,
                                     ARRAY_SIZE(many), &sent) != 0);
    }
    CHECK_READ(sv[1], &r, VHOST_USER_READ_MORE);

    tu_log("a full socket: EAGAIN, then the rest once the peer reads");
    {
        /* Fill the socket until it takes no more. */
        static char junk[4096];
        while (send(sv[0], junk, sizeof junk, MSG_DONTWAIT) > 0) {
            continue;
        }
        hdr.request = VHOST_USER_GET_VRING_BASE;
        hdr.size = sizeof state;
        sent = 0;
        TU_CHECK_EQ(vhost_user_msg_send(sv[0], &hdr, &state, NULL, 0, &sent),
                    EAGAIN);
        /* Drain the junk; the reply then goes out where it stopped. */
        size_t total = VHOST_USER_HDR_SIZE + sizeof state;
        size_t junk_left = 0;
        for (;;) {
            ssize_t n = recv(sv[1], junk, sizeof junk, MSG_DONTWAIT);
            if (n <= 0) {
                break;
            }
            junk_left += n;
        }
        TU_CHECK(junk_left > 0);
        TU_CHECK_OK(vhost_user_msg_send(sv[0], &hdr, &state, NULL, 0,
                                        &sent));
        TU_CHECK_EQ(sent, total);
        /* Whatever part went out with the junk was drained with it: read
         * the remainder and check it is the tail of the message. */
        char tail[64];
        ssize_t n = recv(sv[1], tail, sizeof tail, MSG_DONTWAIT);
        char whole[64];
        memcpy(whole, &hdr, VHOST_USER_HDR_SIZE);
        memcpy(whole + VHOST_USER_HDR_SIZE, &state, sizeof state);
        TU_CHECK(n > 0 && (size_t) n <= total);
        TU_CHECK(!memcmp(tail, whole + total - n, n));
    }

    tu_log("sending to a closed peer fails without SIGPIPE");
    close(sv[1]);
    sent = 0;
    TU_CHECK(vhost_user_msg_send(sv[0], &hdr, &state, NULL, 0, &sent) != 0);
    close(sv[0]);

    TU_CHECK_EQ(tu_count_fds(), baseline - 2);
    close(fds[0]);
    close(fds[1]);
}

/* Names of the requests, for log messages. */
static void
test_request_names(void)
{
    TU_CHECK(!strcmp(vhost_user_request_to_string(VHOST_USER_GET_FEATURES),
                     "GET_FEATURES"));
    TU_CHECK(!strcmp(vhost_user_request_to_string(VHOST_USER_GET_STATUS),
                     "GET_STATUS"));
    TU_CHECK_NONNULL(vhost_user_request_to_string(VHOST_USER_N_REQUESTS));
    TU_CHECK_NONNULL(vhost_user_request_to_string(UINT32_MAX));
}

const struct tu_test tu_vhost_user_tests[] = {
    { "msg-read-split", test_read_split,
      "a message written a byte at a time arrives whole with its fds" },
    { "msg-read-back-to-back", test_read_back_to_back,
      "queued messages are read one at a time with their own fds" },
    { "msg-read-too-many-fds", test_read_too_many_fds,
      "more than 8 fds: flagged truncated, nothing leaks" },
    { "msg-read-bad-header", test_read_bad_header,
      "bad version and oversized payloads are framing errors" },
    { "msg-send-roundtrip", test_send_roundtrip,
      "vhost_user_msg_send() and the reader agree" },
    { "msg-request-names", test_request_names,
      "request names for log messages" },
};
const size_t tu_n_vhost_user_tests = ARRAY_SIZE(tu_vhost_user_tests);
