/* SPDX-License-Identifier: Apache-2.0 */
/* qemu-guest-tool -- what the test guest's busybox cannot do.
 *
 * Built statically by tests/qemu-guest.sh and put in the guest's
 * initramfs as /bin/ovsvhost-tool, so it runs on the Debian guest kernel
 * with nothing else in the image.  Each subcommand prints one result line
 * on stdout and exits 0 on success, 1 with a message on stderr otherwise.
 *
 *   channels IFACE N        sets IFACE's combined channels to N (what
 *                           `ethtool -L IFACE combined N` does): the
 *                           guest kernel starts with min(cpus, queues)
 *                           queue pairs, one with -smp 1.
 *   offloads IFACE          prints "tx-checksum=B tso=B" (ethtool -k).
 *   udp DST PORT0 N         sends one datagram to each of ports PORT0 ..
 *                           PORT0 + N - 1 of DST, each from a socket of
 *                           its own (a new source port): N flows, which
 *                           the kernel hashes over the TX queues.
 *   tcp-send DST PORT BYTES connects, sends BYTES bytes in 64 KiB writes,
 *                           shuts down its side and waits for the peer to
 *                           close; prints "sent BYTES".
 *   tcp-recv PORT [SECS]    listens on PORT, takes one connection, counts
 *                           what arrives until EOF; prints "received N".
 *                           Gives up after SECS seconds (default 60).
 *   udp-send DST PORT FLOWS COUNT SIZE [PPS]
 *                           sends COUNT datagrams of SIZE bytes to DST
 *                           PORT, in turn from FLOWS sockets (FLOWS
 *                           source ports, hashed over the TX queues),
 *                           at most PPS a second if given (in bursts of
 *                           16); prints "sent COUNT".  Datagram number
 *                           N carries udp_pattern(N) (below), so that
 *                           the receiver can tell a datagram that went
 *                           through a wrong address translation.
 *   udp-recv PORT COUNT SECS
 *                           receives datagrams on PORT until COUNT
 *                           arrived, SECS passed, or nothing came for
 *                           3 s after the first; prints "received N bad
 *                           B" (B: datagrams whose bytes are not
 *                           udp_pattern()).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int
fail(const char *what)
{
    fprintf(stderr, "ovsvhost-tool: %s: %s\n", what, strerror(errno));
    return 1;
}

/* ethtool_ioctl: runs ethtool command 'data' on interface 'ifname'.
 * Returns 0 or -1 with errno set. */
static int
ethtool_ioctl(const char *ifname, void *data)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int ret;

    if (fd < 0) {
        return -1;
    }
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    ifr.ifr_data = data;
    ret = ioctl(fd, SIOCETHTOOL, &ifr);
    close(fd);
    return ret;
}

static int
cmd_channels(const char *ifname, unsigned int n)
{
    struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };

    if (ethtool_ioctl(ifname, &ch)) {
        return fail("ETHTOOL_GCHANNELS");
    }
    ch.cmd = ETHTOOL_SCHANNELS;
    ch.combined_count = n;
    if (ethtool_ioctl(ifname, &ch)) {
        return fail("ETHTOOL_SCHANNELS");
    }
    printf("combined %u of %u\n", n, ch.max_combined);
    return 0;
}

static int
cmd_offloads(const char *ifname)
{
    struct ethtool_value csum = { .cmd = ETHTOOL_GTXCSUM };
    struct ethtool_value tso = { .cmd = ETHTOOL_GTSO };

    if (ethtool_ioctl(ifname, &csum) || ethtool_ioctl(ifname, &tso)) {
        return fail("ETHTOOL_GTXCSUM/GTSO");
    }
    printf("tx-checksum=%u tso=%u\n", csum.data, tso.data);
    return 0;
}

static int
parse_addr(const char *ip, unsigned int port, struct sockaddr_in *sin)
{
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &sin->sin_addr) != 1) {
        fprintf(stderr, "ovsvhost-tool: bad address %s\n", ip);
        return -1;
    }
    return 0;
}

static int
cmd_udp(const char *ip, unsigned int port0, unsigned int n)
{
    struct sockaddr_in sin;
    unsigned int i;

    if (parse_addr(ip, 0, &sin)) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_DGRAM, 0);

        if (fd < 0) {
            return fail("socket");
        }
        sin.sin_port = htons(port0 + i);
        if (sendto(fd, "ovsvhost", 8, 0, (struct sockaddr *) &sin,
                   sizeof sin) != 8) {
            close(fd);
            return fail("sendto");
        }
        close(fd);
    }
    printf("sent %u flows\n", n);
    return 0;
}

/* Fills 'buf' ('size' >= 4 bytes) with datagram 'seq': its number, big
 * endian, then bytes (seq + i) & 0xff.  tests/qemu-iommu.at's sender and
 * receiver in the namespace write and check the same. */
static void
udp_pattern(unsigned char *buf, size_t size, uint32_t seq)
{
    buf[0] = seq >> 24;
    buf[1] = seq >> 16;
    buf[2] = seq >> 8;
    buf[3] = seq;
    for (size_t i = 4; i < size; i++) {
        buf[i] = (seq + i) & 0xff;
    }
}

static void
sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

    nanosleep(&ts, NULL);
}

static long long
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

#define UDP_MAX_FLOWS 256
#define UDP_MAX_SIZE 65507

static int
cmd_udp_send(const char *ip, unsigned int port, unsigned int flows,
             unsigned int count, unsigned int size, unsigned int pps)
{
    static unsigned char buf[UDP_MAX_SIZE];
    int fds[UDP_MAX_FLOWS];
    struct sockaddr_in sin;
    long long t0 = now_us();

    if (parse_addr(ip, port, &sin)) {
        return 1;
    }
    if (!flows || flows > UDP_MAX_FLOWS || size < 4 || size > UDP_MAX_SIZE) {
        fprintf(stderr, "ovsvhost-tool: 1..%d flows, 4..%d bytes\n",
                UDP_MAX_FLOWS, UDP_MAX_SIZE);
        return 1;
    }
    for (unsigned int f = 0; f < flows; f++) {
        int one = 1;

        fds[f] = socket(AF_INET, SOCK_DGRAM, 0);
        if (fds[f] < 0) {
            return fail("socket");
        }
        /* Without IP_RECVERR a datagram the qdisc drops (the NIC's ring
         * full: a backend slower than the sender) is reported as sent, and
         * lost without a word but SndbufErrors in /proc/net/snmp. */
        setsockopt(fds[f], IPPROTO_IP, IP_RECVERR, &one, sizeof one);
    }
    for (unsigned int i = 0; i < count; i++) {
        if (pps && i && i % 16 == 0) {
            long long due = t0 + i * 1000000LL / pps;
            long long now = now_us();

            if (due > now) {
                sleep_us(due - now);
            }
        }
        udp_pattern(buf, size, i);
        /* A full qdisc says ENOBUFS (IP_RECVERR): the datagram never
         * left, so wait for the ring to drain and send it again. */
        while (sendto(fds[i % flows], buf, size, 0, (struct sockaddr *) &sin,
                      sizeof sin) != (ssize_t) size) {
            if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
                return fail("sendto");
            }
            sleep_us(1000);
        }
    }
    for (unsigned int f = 0; f < flows; f++) {
        close(fds[f]);
    }
    printf("sent %u\n", count);
    return 0;
}

static int
cmd_udp_recv(unsigned int port, unsigned int count, unsigned int secs)
{
    static unsigned char buf[UDP_MAX_SIZE], want[UDP_MAX_SIZE];
    unsigned int got = 0, bad = 0;
    struct sockaddr_in sin;
    int big = 8 << 20;
    long long end = now_us() + secs * 1000000LL;
    int fd;

    if (parse_addr("0.0.0.0", port, &sin)) {
        return 1;
    }
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        return fail("socket");
    }
    /* Root's SO_RCVBUFFORCE: a TCG guest may not run the receiver for a
     * while, and what overflows the socket is lost in the guest, not at
     * the backend this counts for. */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    if (bind(fd, (struct sockaddr *) &sin, sizeof sin)) {
        return fail("bind");
    }
    printf("listening\n");
    fflush(stdout);
    while (got < count) {
        long long left = end - now_us();
        struct timeval tv;

        if (left <= 0) {
            break;
        }
        if (got && left > 3000000) {
            left = 3000000;
        }
        tv.tv_sec = left / 1000000;
        tv.tv_usec = left % 1000000;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (got) {
                    break;
                }
                continue;
            }
            return fail("recv");
        }
        got++;
        if (n < 4) {
            bad++;
            continue;
        }
        udp_pattern(want, n, (uint32_t) buf[0] << 24 | buf[1] << 16
                             | buf[2] << 8 | buf[3]);
        if (memcmp(buf, want, n)) {
            bad++;
        }
    }
    close(fd);
    printf("received %u bad %u\n", got, bad);
    return 0;
}

static int
cmd_tcp_send(const char *ip, unsigned int port, unsigned long long bytes)
{
    static char buf[65536];
    unsigned long long left = bytes;
    struct sockaddr_in sin;
    int fd;

    if (parse_addr(ip, port, &sin)) {
        return 1;
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &sin, sizeof sin)) {
        return fail("connect");
    }
    memset(buf, 'x', sizeof buf);
    while (left) {
        size_t chunk = left < sizeof buf ? left : sizeof buf;
        ssize_t n = write(fd, buf, chunk);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return fail("write");
        }
        left -= n;
    }
    if (shutdown(fd, SHUT_WR)) {
        return fail("shutdown");
    }
    /* The peer closes once it has counted everything. */
    while (read(fd, buf, sizeof buf) > 0) {
        continue;
    }
    close(fd);
    printf("sent %llu\n", bytes);
    return 0;
}

static int
cmd_tcp_recv(unsigned int port, unsigned int secs)
{
    static char buf[65536];
    unsigned long long total = 0;
    struct sockaddr_in sin;
    int one = 1;
    int lfd, fd;
    ssize_t n;

    alarm(secs);
    if (parse_addr("0.0.0.0", port, &sin)) {
        return 1;
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0) {
        return fail("socket");
    }
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *) &sin, sizeof sin) || listen(lfd, 1)) {
        return fail("bind/listen");
    }
    fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
        return fail("accept");
    }
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        total += n;
    }
    if (n < 0) {
        return fail("read");
    }
    close(fd);
    close(lfd);
    printf("received %llu\n", total);
    return 0;
}

int
main(int argc, char *argv[])
{
    const char *cmd = argc > 1 ? argv[1] : "";

    if (!strcmp(cmd, "channels") && argc == 4) {
        return cmd_channels(argv[2], strtoul(argv[3], NULL, 10));
    } else if (!strcmp(cmd, "offloads") && argc == 3) {
        return cmd_offloads(argv[2]);
    } else if (!strcmp(cmd, "udp") && argc == 5) {
        return cmd_udp(argv[2], strtoul(argv[3], NULL, 10),
                       strtoul(argv[4], NULL, 10));
    } else if (!strcmp(cmd, "tcp-send") && argc == 5) {
        return cmd_tcp_send(argv[2], strtoul(argv[3], NULL, 10),
                            strtoull(argv[4], NULL, 10));
    } else if (!strcmp(cmd, "tcp-recv") && (argc == 3 || argc == 4)) {
        return cmd_tcp_recv(strtoul(argv[2], NULL, 10),
                            argc == 4 ? strtoul(argv[3], NULL, 10) : 60);
    } else if (!strcmp(cmd, "udp-send") && (argc == 7 || argc == 8)) {
        return cmd_udp_send(argv[2], strtoul(argv[3], NULL, 10),
                            strtoul(argv[4], NULL, 10),
                            strtoul(argv[5], NULL, 10),
                            strtoul(argv[6], NULL, 10),
                            argc == 8 ? strtoul(argv[7], NULL, 10) : 0);
    } else if (!strcmp(cmd, "udp-recv") && argc == 5) {
        return cmd_udp_recv(strtoul(argv[2], NULL, 10),
                            strtoul(argv[3], NULL, 10),
                            strtoul(argv[4], NULL, 10));
    }
    fprintf(stderr, "usage: ovsvhost-tool channels IFACE N | offloads IFACE"
            " | udp DST PORT0 N | tcp-send DST PORT BYTES"
            " | tcp-recv PORT [SECS]"
            " | udp-send DST PORT FLOWS COUNT SIZE [PPS]"
            " | udp-recv PORT COUNT SECS\n");
    return 2;
}
