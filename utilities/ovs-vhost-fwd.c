/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ovs-vhost-fwd: a packet forwarder built on the ovs-vhost engine.
 *
 * It serves one or more vhost-user ports, in server or client mode, prints
 * each port's device state as it changes, and moves packets between the
 * ports' guest rings, the way DPDK's testpmd does between its ports:
 *
 *   io       p0 <-> p1, p2 <-> p3, ...; a port without a partner (the last
 *            of an odd number) sends back out of itself.
 *   macswap  swaps source and destination MAC and sends the packet back out
 *            of the port it came from.
 *   rxonly   counts received packets and frees them.
 *   txonly   generates UDP/IPv4 packets on every ready queue; packets it
 *            receives are counted, checked (--verify) and freed.
 *
 * It is also the example of how to embed the engine.
 *
 * Threads
 * =======
 *
 * The main thread runs the engine's control plane from its own poll() loop
 * (vhost_engine_get_fd(), vhost_engine_run()) and prints statistics.  One
 * forwarding thread (the "PMD", optionally pinned with --cpu) busy-polls
 * every ready queue pair of every port with vhost_dequeue_burst() and
 * vhost_enqueue_burst().  Being the only data-path thread, it is the only
 * caller for every vring, as the engine requires.
 *
 * The engine's callbacks (main thread) publish which queues are usable in
 * 'fwd_port.ready'; the PMD reads it to skip queues that are not.  That is
 * an optimisation only: a burst call on a queue that is not ready returns 0.
 *
 * Counters are written by the PMD alone (load + store, no read-modify-write
 * atomics) and read by the main thread with relaxed loads.
 *
 * Buffers
 * =======
 *
 * The PMD owns a pool of fixed 2 KiB buffers; a packet that does not fit in
 * one (a jumbo frame) gets a malloc()ed buffer from the same alloc callback.
 * Every packet is freed before the PMD polls the next queue, so the pool
 * never runs dry in practice; if it does, dequeue leaves packets in the
 * guest's ring for the next poll.
 *
 * Cycles
 * ======
 *
 * The PMD reads the TSC (rdtsc on x86, CLOCK_MONOTONIC nanoseconds
 * elsewhere) around every poll that moved packets, as testpmd's
 * --record-core-cycles does: "cycles per packet" is busy cycles divided by
 * packets received (plus packets generated, in txonly); polls that find
 * nothing are idle time and not counted.
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include "ovs-vhost/vhost.h"

#define FWD_MAX_PORTS 64

/* Buffer pool. */
#define FWD_BUF_SIZE 2048               /* Bytes per pool buffer... */
#define FWD_HEADROOM 64                 /* ...of which headroom. */
#define FWD_BUF_ROOM (FWD_BUF_SIZE - FWD_HEADROOM)
/* Buffers are one cache line more than 2 KiB apart: at a power-of-two
 * stride every buffer's frame would start in the same two L1 sets (the
 * set index repeats every 4 KiB), and a burst of 32 frames would evict
 * its own lines there. */
#define FWD_BUF_STRIDE (FWD_BUF_SIZE + 64)
#define FWD_POOL_ALIGN ((size_t) 2 << 20) /* A huge page on x86 and arm64. */
#define FWD_POOL_SIZE FWD_POOL_ALIGN    /* The pool: one huge page... */
#define FWD_POOL_BUFS (FWD_POOL_SIZE / FWD_BUF_STRIDE) /* ...992 buffers. */

/* Generated packets (txonly). */
#define FWD_ETH_LEN 14
#define FWD_IP_LEN 20
#define FWD_UDP_LEN 8
#define FWD_HDRS_LEN (FWD_ETH_LEN + FWD_IP_LEN + FWD_UDP_LEN)
#define FWD_MAGIC 0x4f564657            /* "OVFW", first payload word. */
#define FWD_MIN_TXPKT_LEN (FWD_HDRS_LEN + 8)    /* Headers, magic, seq. */
#define FWD_MAX_TXPKT_LEN 9216
#define FWD_MAX_TXPKT_LENS 8            /* Lengths in --txpkt-len's list. */

enum fwd_mode {
    FWD_MODE_IO,
    FWD_MODE_MACSWAP,
    FWD_MODE_RXONLY,
    FWD_MODE_TXONLY,
};

static const char *const fwd_mode_names[] = {
    [FWD_MODE_IO] = "io",
    [FWD_MODE_MACSWAP] = "macswap",
    [FWD_MODE_RXONLY] = "rxonly",
    [FWD_MODE_TXONLY] = "txonly",
};

/* Packet counters of one port, written by the PMD only. */
struct fwd_counters {
    atomic_uint_least64_t rx;           /* Dequeued from the guest. */
    atomic_uint_least64_t rx_bytes;
    atomic_uint_least64_t tx;           /* Enqueued to the guest. */
    atomic_uint_least64_t tx_bytes;
    atomic_uint_least64_t generated;    /* txonly: packets built. */
    atomic_uint_least64_t drop;         /* Not enqueued after retries. */
    atomic_uint_least64_t tx_retries;   /* Extra enqueue calls. */
    atomic_uint_least64_t verify_errors;    /* --verify failures. */
    atomic_uint_least64_t cycles;       /* Busy cycles on its queues. */
};

/* Values of 'struct fwd_counters' at one time, for rates. */
struct fwd_snapshot {
    uint64_t rx, rx_bytes, tx, tx_bytes, generated, drop, tx_retries;
    uint64_t verify_errors, cycles;
};

struct fwd_port {
    /* Set up by main() before the PMD starts; constant afterwards. */
    struct vhost_port *port;
    char name[16];
    struct fwd_port *peer;              /* io: where received packets go. */

    /* Written by the engine's callbacks (main thread), read by the PMD:
     * vring 'i' is usable. */
    atomic_bool ready[VHOST_MAX_QUEUES];

    /* Written by the PMD, read by the main thread. */
    struct fwd_counters c;

    /* PMD only. */
    uint32_t tx_seq[VHOST_MAX_QUEUE_PAIRS];     /* txonly: next sequence. */
    /* txonly: headers, one set per length in 'txpkt_lens'. */
    uint8_t tx_template[FWD_MAX_TXPKT_LENS][FWD_HDRS_LEN];

    /* Main thread only: counters at the last periodic print. */
    struct fwd_snapshot last;
};

static struct fwd_port ports[FWD_MAX_PORTS];
static int n_ports;

/* Configuration, set by main() before the PMD starts. */
static enum fwd_mode mode = FWD_MODE_IO;
static unsigned int burst = 32;
static unsigned int n_queue_pairs = 1;
static unsigned int txpkt_lens[FWD_MAX_TXPKT_LENS] = { 64 };
static unsigned int n_txpkt_lens = 1;
static unsigned int tx_retries_max = 8;
static bool verify;
static int pmd_cpu = -1;
static uint64_t tsc_hz;                 /* Ticks per second of fwd_now(). */

/* Main thread <-> PMD. */
static atomic_bool pmd_exit;
static atomic_bool pmd_tx_paused;       /* txonly: stop generating. */
static atomic_bool pmd_tx_paused_seen;  /* PMD: 'pmd_tx_paused' as of the
                                         * start of its current loop. */
static atomic_uint_least64_t pmd_busy_cycles;
static atomic_uint_least64_t pmd_idle_cycles;

static volatile sig_atomic_t exiting;
static volatile sig_atomic_t dump_requested;
static volatile sig_atomic_t pause_requested;

static void
fwd_usage(void)
{
    printf("\
ovs-vhost-fwd: forward packets between vhost-user ports with the ovs-vhost\n\
engine\n\
usage: ovs-vhost-fwd [OPTIONS] (--server PATH | --client PATH)...\n\
\n\
Ports (one per option, named p0, p1, ... in order):\n\
  -s, --server=PATH      listen for a frontend at PATH\n\
  -c, --client=PATH      connect to a frontend listening at PATH\n\
\n\
Options:\n\
  -q, --queues=N         offer N queue pairs (default 1, at most %d)\n\
  -f, --features=HEX     offer these virtio features (default %#"PRIx64");\n\
                         the default has ring_packed (bit 34), so the\n\
                         frontend picks the ring layout, and in_order\n\
                         (bit 35); +HEX offers these on top of the default\n\
      --reconnect-ms=MIN[,MAX]  client reconnect backoff (default 100,2000)\n\
  -m, --mode=MODE        io (default: p0<->p1, p2<->p3, ...), macswap,\n\
                         rxonly or txonly\n\
  -b, --burst=N          packets per burst (default 32, at most %d)\n\
  -l, --txpkt-len=N[,N]...  txonly: frame length in bytes (default 64,\n\
                         %d..%d); generated packets cycle through a list\n\
      --paused           txonly: start with generation paused (SIGUSR2)\n\
      --tx-retries=N     enqueue retries before dropping (default 8)\n\
      --verify           check every received packet: IPv4 header checksum\n\
                         and lengths, UDP length and, for packets of\n\
                         --mode=txonly, the payload pattern\n\
      --cpu=N            pin the forwarding thread to CPU N\n\
  -i, --stats-interval=S print packet statistics every S seconds\n\
  -v, --verbose          log engine debug messages\n\
  -h, --help             show this help\n\
\n\
SIGUSR1 prints every port's state and statistics; SIGUSR2 pauses or\n\
resumes txonly generation; SIGINT or SIGTERM exits after printing totals\n\
(lines \"total PORT rx=N tx=N drop=N ...\").\n",
           VHOST_MAX_QUEUE_PAIRS, vhost_default_features(), VHOST_MAX_BURST,
           FWD_MIN_TXPKT_LEN, FWD_MAX_TXPKT_LEN);
}

/* Time stamps. */

/* Returns a cycle count: the TSC on x86, nanoseconds elsewhere. */
static inline uint64_t
fwd_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

static long long int
fwd_time_msec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long int) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Measures how fast fwd_now() ticks, over 100 ms. */
static uint64_t
fwd_calibrate_hz(void)
{
#if defined(__x86_64__) || defined(__i386__)
    struct timespec t0, t1, nap = { .tv_nsec = 100 * 1000 * 1000 };
    uint64_t c0, c1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    c0 = fwd_now();
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    c1 = fwd_now();

    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    return secs > 0 ? (uint64_t) ((c1 - c0) / secs) : 1000000000;
#else
    return 1000000000;
#endif
}

/* Counters. */

static inline uint64_t
fwd_get(atomic_uint_least64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Adds 'n' to 'c'.  PMD only: one writer, so no atomic read-modify-write
 * is needed, only a store the main thread can read untorn. */
static inline void
fwd_add(atomic_uint_least64_t *c, uint64_t n)
{
    atomic_store_explicit(c, fwd_get(c) + n, memory_order_relaxed);
}

static void
fwd_snapshot(struct fwd_port *p, struct fwd_snapshot *s)
{
    s->rx = fwd_get(&p->c.rx);
    s->rx_bytes = fwd_get(&p->c.rx_bytes);
    s->tx = fwd_get(&p->c.tx);
    s->tx_bytes = fwd_get(&p->c.tx_bytes);
    s->generated = fwd_get(&p->c.generated);
    s->drop = fwd_get(&p->c.drop);
    s->tx_retries = fwd_get(&p->c.tx_retries);
    s->verify_errors = fwd_get(&p->c.verify_errors);
    s->cycles = fwd_get(&p->c.cycles);
}

static double
fwd_per_pkt(uint64_t cycles, uint64_t pkts)
{
    return pkts ? (double) cycles / pkts : 0.0;
}

/* The buffer pool: a LIFO stack of fixed-size buffers, so the buffers used
 * last, still in cache, are reused first.  PMD only. */
struct fwd_pool {
    uint8_t *mem;                       /* FWD_POOL_SIZE bytes. */
    uint8_t *free[FWD_POOL_BUFS];
    unsigned int n_free;
    uint64_t n_mallocs;                 /* Buffers too big for the pool. */
};

static bool
fwd_pool_init(struct fwd_pool *pool)
{
    /* One 2 MiB-aligned block, offered to the kernel as a transparent huge
     * page (Debian's default THP mode is "madvise"): the pool then costs
     * one TLB entry instead of 512, where the kernel has a huge page to
     * give.  Touched here, so that the page faults happen before the
     * first packet, not in the PMD's loop. */
    if (posix_memalign((void **) &pool->mem, FWD_POOL_ALIGN, FWD_POOL_SIZE)) {
        return false;
    }
#ifdef MADV_HUGEPAGE
    madvise(pool->mem, FWD_POOL_SIZE, MADV_HUGEPAGE);
#endif
    memset(pool->mem, 0, FWD_POOL_SIZE);
    for (unsigned int i = 0; i < FWD_POOL_BUFS; i++) {
        pool->free[i] = pool->mem + (size_t) (FWD_POOL_BUFS - 1 - i)
                                    * FWD_BUF_STRIDE;
    }
    pool->n_free = FWD_POOL_BUFS;
    pool->n_mallocs = 0;
    return true;
}

static bool
fwd_pool_owns(const struct fwd_pool *pool, const void *buf)
{
    const uint8_t *b = buf;

    return b >= pool->mem && b < pool->mem + FWD_POOL_SIZE;
}

/* 'struct vhost_pkt_alloc' callback: gives 'pkt' a buffer with room for
 * 'len' bytes after FWD_HEADROOM.  A pool buffer if 'len' fits in one,
 * otherwise (jumbo frames only) malloc(). */
static bool
fwd_pool_alloc(void *pool_, struct vhost_pkt *pkt, uint32_t len)
{
    struct fwd_pool *pool = pool_;
    uint8_t *buf;

    if (len <= FWD_BUF_ROOM) {
        if (!pool->n_free) {
            return false;
        }
        buf = pool->free[--pool->n_free];
        pkt->size = FWD_BUF_ROOM;
    } else {
        buf = malloc((size_t) FWD_HEADROOM + len);
        if (!buf) {
            return false;
        }
        pool->n_mallocs++;
        pkt->size = len;
    }
    pkt->handle = buf;
    pkt->data = buf + FWD_HEADROOM;
    pkt->len = 0;
    return true;
}

/* 'struct vhost_pkt_alloc' callback: returns 'pkt''s buffer. */
static void
fwd_pool_free(void *pool_, struct vhost_pkt *pkt)
{
    struct fwd_pool *pool = pool_;

    if (fwd_pool_owns(pool, pkt->handle)) {
        pool->free[pool->n_free++] = pkt->handle;
    } else {
        free(pkt->handle);
    }
    pkt->handle = NULL;
    pkt->data = NULL;
    pkt->size = 0;
}

static void
fwd_pool_free_burst(struct fwd_pool *pool, struct vhost_pkt *pkts,
                    unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        fwd_pool_free(pool, &pkts[i]);
    }
}

/* Packet contents. */

static inline uint16_t
fwd_get_be16(const uint8_t *p)
{
    return (uint16_t) (p[0] << 8 | p[1]);
}

static inline uint32_t
fwd_get_be32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16
           | (uint32_t) p[2] << 8 | p[3];
}

static inline void
fwd_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static inline void
fwd_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

/* Returns the Internet checksum's one's-complement sum of the 'n' bytes
 * at 'p' ('n' even), folded to 16 bits. */
static uint16_t
fwd_csum_fold(const uint8_t *p, size_t n)
{
    uint32_t sum = 0;

    for (size_t i = 0; i < n; i += 2) {
        sum += fwd_get_be16(p + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

/* The payload pattern of generated packets: after the magic word and the
 * sequence number, byte 'i' is the low byte of 'seq + i', so a byte that
 * lands in the wrong place or the wrong packet shows. */
static inline void
fwd_fill_pattern(uint8_t *p, size_t n, uint32_t seq)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t) (seq + i);
    }
}

/* Builds 'p''s txonly header template number 'k': Ethernet
 * 02:00:00:00:00:01 from 02:00:00:00:01:<port>, IPv4 198.18.0.1 ->
 * 198.18.0.2 (RFC 2544's benchmarking range, like testpmd's txonly), UDP
 * 9 -> 9 without a checksum, all for frames of txpkt_lens[k] bytes. */
static void
fwd_build_template(struct fwd_port *p, int port_no, unsigned int k)
{
    static const uint8_t dst[6] = { 0x02, 0, 0, 0, 0, 0x01 };
    uint8_t *eth = p->tx_template[k];
    uint8_t *ip = eth + FWD_ETH_LEN;
    uint8_t *udp = ip + FWD_IP_LEN;
    uint16_t ip_len = txpkt_lens[k] - FWD_ETH_LEN;

    memset(eth, 0, FWD_HDRS_LEN);
    memcpy(eth, dst, 6);
    eth[6] = 0x02;
    eth[10] = 0x01;
    eth[11] = port_no;
    fwd_put_be16(eth + 12, 0x0800);

    ip[0] = 0x45;                       /* Version 4, 5 words of header. */
    fwd_put_be16(ip + 2, ip_len);
    ip[8] = 64;                         /* TTL. */
    ip[9] = 17;                         /* UDP. */
    fwd_put_be32(ip + 12, 0xc6120001);
    fwd_put_be32(ip + 16, 0xc6120002);
    fwd_put_be16(ip + 10, ~fwd_csum_fold(ip, FWD_IP_LEN));

    fwd_put_be16(udp, 9);
    fwd_put_be16(udp + 2, 9);
    fwd_put_be16(udp + 4, ip_len - FWD_IP_LEN);
}

/* Checks one received packet: Ethernet + IPv4 + UDP with a valid IPv4
 * header checksum, an IPv4 total length that accounts for the whole frame
 * and a UDP length that matches it.  That is what testpmd's txonly
 * guarantees (it leaves the payload uninitialised).  Packets generated by
 * our txonly, recognised by the magic word, must also carry the payload
 * pattern for their sequence number.  Returns true if all is well. */
static bool
fwd_verify_pkt(const struct vhost_pkt *pkt)
{
    const uint8_t *eth = pkt->data;
    const uint8_t *ip = eth + FWD_ETH_LEN;
    const uint8_t *udp = ip + FWD_IP_LEN;
    const uint8_t *payload = udp + FWD_UDP_LEN;

    if (pkt->len < FWD_HDRS_LEN
        || fwd_get_be16(eth + 12) != 0x0800
        || ip[0] != 0x45
        || ip[9] != 17
        || fwd_get_be16(ip + 2) != pkt->len - FWD_ETH_LEN
        || fwd_csum_fold(ip, FWD_IP_LEN) != 0xffff
        || fwd_get_be16(udp + 4) != pkt->len - FWD_ETH_LEN - FWD_IP_LEN) {
        return false;
    }

    size_t n = pkt->len - FWD_HDRS_LEN;
    if (n >= 8 && fwd_get_be32(payload) == FWD_MAGIC) {
        uint32_t seq = fwd_get_be32(payload + 4);

        for (size_t i = 8; i < n; i++) {
            if (payload[i] != (uint8_t) (seq + (i - 8))) {
                return false;
            }
        }
    }
    return true;
}

/* The forwarding thread. */

struct fwd_pmd {
    struct fwd_pool pool;
    struct vhost_pkt_alloc alloc;
    struct vhost_pkt pkts[VHOST_MAX_BURST];
};

static inline bool
fwd_ready(struct fwd_port *p, unsigned int vring)
{
    return atomic_load_explicit(&p->ready[vring], memory_order_relaxed);
}

/* Sends the 'n' packets in 'pkts' to the guest RX ring of queue pair 'qp'
 * of 'p', retrying up to --tx-retries times for those the ring has no room
 * for, then drops the rest.  Frees every packet.  Counts 'p''s tx, drop and
 * tx_retries. */
static void
fwd_send(struct fwd_pmd *pmd, struct fwd_port *p, unsigned int qp,
         struct vhost_pkt *pkts, unsigned int n)
{
    unsigned int sent = 0, retries = 0;
    uint64_t bytes = 0;

    if (fwd_ready(p, 2 * qp)) {
        for (;;) {
            sent += vhost_enqueue_burst(p->port, qp, pkts + sent, n - sent);
            if (sent >= n || retries >= tx_retries_max) {
                break;
            }
            retries++;
        }
    }
    for (unsigned int i = 0; i < sent; i++) {
        bytes += pkts[i].len;
    }
    fwd_add(&p->c.tx, sent);
    fwd_add(&p->c.tx_bytes, bytes);
    if (retries) {
        fwd_add(&p->c.tx_retries, retries);
    }
    if (sent < n) {
        fwd_add(&p->c.drop, n - sent);
    }
    fwd_pool_free_burst(&pmd->pool, pkts, n);
}

/* Receives up to one burst from the guest TX ring of queue pair 'qp' of
 * 'p' into 'pmd->pkts', counts (and with --verify checks) it.  Returns the
 * number of packets received. */
static unsigned int
fwd_recv(struct fwd_pmd *pmd, struct fwd_port *p, unsigned int qp)
{
    struct vhost_pkt *pkts = pmd->pkts;
    unsigned int n;
    uint64_t bytes = 0;

    /* Every entry of 'pkts' is empty here (fwd_pool_free() empties what
     * it frees), so the engine calls fwd_pool_alloc() for each packet. */
    n = vhost_dequeue_burst(p->port, qp, pkts, burst, &pmd->alloc);
    if (!n) {
        return 0;
    }

    unsigned int errors = 0;
    for (unsigned int i = 0; i < n; i++) {
        bytes += pkts[i].len;
        if (verify && !fwd_verify_pkt(&pkts[i])) {
            errors++;
        }
    }
    fwd_add(&p->c.rx, n);
    fwd_add(&p->c.rx_bytes, bytes);
    if (errors) {
        fwd_add(&p->c.verify_errors, errors);
    }
    return n;
}

/* Swaps the source and destination MAC addresses of the 'n' packets in
 * 'pkts'. */
static void
fwd_macswap(struct vhost_pkt *pkts, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        uint8_t *eth = pkts[i].data;
        uint8_t tmp[6];

        if (pkts[i].len >= 12) {
            memcpy(tmp, eth, 6);
            memcpy(eth, eth + 6, 6);
            memcpy(eth + 6, tmp, 6);
        }
    }
}

/* Generates one burst of txonly packets for queue pair 'qp' of 'p' and
 * sends it.  Packet number 'seq' is txpkt_lens[seq % n_txpkt_lens] bytes
 * long.  Returns the number of packets generated. */
static unsigned int
fwd_generate(struct fwd_pmd *pmd, struct fwd_port *p, unsigned int qp)
{
    struct vhost_pkt *pkts = pmd->pkts;
    uint32_t seq = p->tx_seq[qp];
    unsigned int n;

    for (n = 0; n < burst; n++) {
        struct vhost_pkt *pkt = &pkts[n];
        unsigned int k = n_txpkt_lens > 1 ? seq % n_txpkt_lens : 0;
        unsigned int len = txpkt_lens[k];

        if (!fwd_pool_alloc(&pmd->pool, pkt, len)) {
            break;
        }
        memset(&pkt->ol, 0, sizeof pkt->ol);
        memcpy(pkt->data, p->tx_template[k], FWD_HDRS_LEN);
        fwd_put_be32(pkt->data + FWD_HDRS_LEN, FWD_MAGIC);
        fwd_put_be32(pkt->data + FWD_HDRS_LEN + 4, seq);
        fwd_fill_pattern(pkt->data + FWD_HDRS_LEN + 8,
                         len - FWD_HDRS_LEN - 8, seq);
        pkt->len = len;
        seq++;
    }
    p->tx_seq[qp] = seq;
    if (n) {
        fwd_add(&p->c.generated, n);
        fwd_send(pmd, p, qp, pkts, n);
    }
    return n;
}

/* Polls queue pair 'qp' of 'p' once, in the configured mode.  Returns the
 * number of packets handled (received plus generated). */
static unsigned int
fwd_poll(struct fwd_pmd *pmd, struct fwd_port *p, unsigned int qp,
         bool tx_paused)
{
    unsigned int n = 0;

    if (fwd_ready(p, 2 * qp + 1)) {
        n = fwd_recv(pmd, p, qp);
    }
    switch (mode) {
    case FWD_MODE_IO:
        if (n) {
            struct fwd_port *out = p->peer;
            unsigned int out_qp = fwd_ready(out, 2 * qp) ? qp : 0;

            fwd_send(pmd, out, out_qp, pmd->pkts, n);
        }
        break;

    case FWD_MODE_MACSWAP:
        if (n) {
            fwd_macswap(pmd->pkts, n);
            fwd_send(pmd, p, qp, pmd->pkts, n);
        }
        break;

    case FWD_MODE_RXONLY:
        fwd_pool_free_burst(&pmd->pool, pmd->pkts, n);
        break;

    case FWD_MODE_TXONLY:
        fwd_pool_free_burst(&pmd->pool, pmd->pkts, n);
        if (!tx_paused && fwd_ready(p, 2 * qp)) {
            n += fwd_generate(pmd, p, qp);
        }
        break;
    }
    return n;
}

static void *
fwd_pmd_main(void *aux)
{
    struct fwd_pmd *pmd = aux;
    uint64_t busy = 0, idle = 0;
    unsigned int loops = 0;
    bool tx_paused_seen = false;

    while (!atomic_load_explicit(&pmd_exit, memory_order_relaxed)) {
        bool tx_paused = atomic_load_explicit(&pmd_tx_paused,
                                              memory_order_acquire);
        bool any_ready = false;
        uint64_t start = fwd_now(), now = start;

        if (tx_paused != tx_paused_seen) {
            /* Once the main thread sees this, the previous loop is over:
             * no packet generated before a pause is still on its way. */
            atomic_store_explicit(&pmd_tx_paused_seen, tx_paused,
                                  memory_order_release);
            tx_paused_seen = tx_paused;
        }

        for (int i = 0; i < n_ports; i++) {
            struct fwd_port *p = &ports[i];
            uint64_t port_cycles = 0;

            for (unsigned int qp = 0; qp < n_queue_pairs; qp++) {
                if (!fwd_ready(p, 2 * qp) && !fwd_ready(p, 2 * qp + 1)) {
                    continue;
                }
                any_ready = true;
                if (fwd_poll(pmd, p, qp, tx_paused)) {
                    uint64_t end = fwd_now();

                    port_cycles += end - now;
                    now = end;
                } else {
                    now = fwd_now();
                }
            }
            if (port_cycles) {
                fwd_add(&p->c.cycles, port_cycles);
                busy += port_cycles;
            }
        }
        idle += fwd_now() - start;

        /* Publish the totals now and then, not on every loop. */
        if (!(++loops & 0xff)) {
            idle -= busy < idle ? busy : idle;
            fwd_add(&pmd_busy_cycles, busy);
            fwd_add(&pmd_idle_cycles, idle);
            busy = idle = 0;
        }
        if (!any_ready) {
            /* Nothing to poll: nap instead of burning a CPU while no
             * frontend is there. */
            struct timespec nap = { .tv_nsec = 1000 * 1000 };

            nanosleep(&nap, NULL);
        }
    }
    idle -= busy < idle ? busy : idle;
    fwd_add(&pmd_busy_cycles, busy);
    fwd_add(&pmd_idle_cycles, idle);
    return NULL;
}

static int
fwd_pmd_start(pthread_t *thread, struct fwd_pmd *pmd)
{
    pthread_attr_t attr;
    sigset_t all, old;
    int error;

    if (!fwd_pool_init(&pmd->pool)) {
        return ENOMEM;
    }
    pmd->alloc.alloc = fwd_pool_alloc;
    pmd->alloc.free = fwd_pool_free;
    pmd->alloc.aux = &pmd->pool;

    pthread_attr_init(&attr);
    if (pmd_cpu >= 0) {
        cpu_set_t cpus;

        CPU_ZERO(&cpus);
        CPU_SET(pmd_cpu, &cpus);
        error = pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus);
        if (error) {
            pthread_attr_destroy(&attr);
            return error;
        }
    }

    /* Signals go to the main thread, whose poll() they interrupt. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    error = pthread_create(thread, &attr, fwd_pmd_main, pmd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return error;
}

/* Printing. */

static const char *
fwd_name(struct vhost_port *port)
{
    return vhost_port_get_name(port);
}

static void
fwd_print_state(struct vhost_port *port)
{
    struct vhost_port_info info;
    char features[512];

    vhost_port_get_info(port, &info);
    vhost_features_to_string(info.features, features, sizeof features);
    printf("%s: state connected=%s ready=%s features=%#"PRIx64" (%s) "
           "protocol_features=%#"PRIx64" queues=%u enabled_queues=%u "
           "mem_regions=%u mem_size=%"PRIu64" mtu=%u "
           "msgs=%"PRIu64" rejected=%"PRIu64" connects=%"PRIu64
           " disconnects=%"PRIu64"\n",
           fwd_name(port), info.connected ? "yes" : "no",
           info.ready ? "yes" : "no", info.features, features,
           info.protocol_features, info.n_queues, info.n_enabled_queues,
           info.n_mem_regions, info.mem_size, info.mtu,
           info.counters.msgs, info.counters.msgs_rejected,
           info.counters.connects, info.counters.disconnects);
    for (unsigned int q = 0; q < info.n_queues; q++) {
        struct vhost_queue_info qi;

        if (!vhost_port_get_queue_info(port, q, &qi) && qi.size) {
            printf("%s:   queue %u size=%u enabled=%s ready=%s\n",
                   fwd_name(port), q, qi.size, qi.enabled ? "yes" : "no",
                   qi.ready ? "yes" : "no");
        }
    }
}

/* Prints one line per port, "stats PORT rx=N tx=N ...", with the counters
 * so far and the rates since the previous call ('secs' ago), then "stats
 * done", for scripts that wait for a complete set. */
static void
fwd_print_stats(double secs)
{
    for (int i = 0; i < n_ports; i++) {
        struct fwd_port *p = &ports[i];
        struct fwd_snapshot s, *l = &p->last;

        fwd_snapshot(p, &s);
        uint64_t pkts = (s.rx - l->rx) + (s.generated - l->generated);
        printf("stats %s rx=%"PRIu64" tx=%"PRIu64" drop=%"PRIu64
               " verify_errors=%"PRIu64" generated=%"PRIu64" cycles=%"PRIu64
               " rx_pps=%.0f tx_pps=%.0f drop_pps=%.0f cycles_per_pkt=%.1f\n",
               p->name, s.rx, s.tx, s.drop, s.verify_errors, s.generated,
               s.cycles,
               secs > 0 ? (s.rx - l->rx) / secs : 0.0,
               secs > 0 ? (s.tx - l->tx) / secs : 0.0,
               secs > 0 ? (s.drop - l->drop) / secs : 0.0,
               fwd_per_pkt(s.cycles - l->cycles, pkts));
        *l = s;
    }
    printf("stats done\n");
}

/* Prints the engine's per-vring counters of 'p' that are not zero. */
static void
fwd_print_engine_stats(struct fwd_port *p, const char *prefix)
{
    for (unsigned int vring = 0; vring < 2 * n_queue_pairs; vring++) {
        struct vhost_queue_stats qs;
        char drops[512];
        size_t len = 0;

        if (vhost_port_get_queue_stats(p->port, vring, &qs)
            || (!qs.packets && !qs.broken)) {
            continue;
        }
        drops[0] = '\0';
        for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
            if (qs.drops[r] && len < sizeof drops) {
                size_t start = len + 6;     /* After " drop_". */

                len += snprintf(drops + len, sizeof drops - len,
                                " drop_%s=%"PRIu64,
                                vhost_drop_reason_to_string(r), qs.drops[r]);
                /* One word per counter, for scripts. */
                for (size_t j = start; j < len && j < sizeof drops; j++) {
                    if (drops[j] == ' ') {
                        drops[j] = '_';
                    }
                }
            }
        }
        printf("%s %s vring=%u packets=%"PRIu64" bytes=%"PRIu64
               " guest_notifications=%"PRIu64
               " notifications_suppressed=%"PRIu64"%s broken=%s\n",
               prefix, p->name, vring, qs.packets, qs.bytes,
               qs.guest_notifications, qs.notifications_suppressed, drops,
               qs.broken ? "yes" : "no");
    }
}

/* Prints the totals, one "total PORT ..." line per port, one for the
 * forwarding thread and the engine's counters, for scripts to parse. */
static void
fwd_print_totals(struct fwd_pool *pool)
{
    uint64_t busy = fwd_get(&pmd_busy_cycles);
    uint64_t idle = fwd_get(&pmd_idle_cycles);
    uint64_t all_pkts = 0;

    for (int i = 0; i < n_ports; i++) {
        struct fwd_port *p = &ports[i];
        struct fwd_snapshot s;

        fwd_snapshot(p, &s);
        all_pkts += s.rx + s.generated;
        printf("total %s rx=%"PRIu64" tx=%"PRIu64" drop=%"PRIu64
               " verify_errors=%"PRIu64" rx_bytes=%"PRIu64" tx_bytes=%"PRIu64
               " generated=%"PRIu64" tx_retries=%"PRIu64" cycles=%"PRIu64
               " cycles_per_pkt=%.1f\n",
               p->name, s.rx, s.tx, s.drop, s.verify_errors, s.rx_bytes,
               s.tx_bytes, s.generated, s.tx_retries, s.cycles,
               fwd_per_pkt(s.cycles, s.rx + s.generated));
    }
    printf("total pmd mode=%s burst=%u packets=%"PRIu64" busy_cycles=%"PRIu64
           " idle_cycles=%"PRIu64" cycles_per_pkt=%.1f tsc_hz=%"PRIu64
           " clock=%s big_buffers=%"PRIu64"\n",
           fwd_mode_names[mode], burst, all_pkts, busy, idle,
           fwd_per_pkt(busy, all_pkts), tsc_hz,
#if defined(__x86_64__) || defined(__i386__)
           "rdtsc",
#else
           "clock_gettime",
#endif
           pool->n_mallocs);
    for (int i = 0; i < n_ports; i++) {
        fwd_print_engine_stats(&ports[i], "total engine");
    }
}

/* Engine callbacks (main thread, engine mutex held). */

static struct fwd_port *
fwd_port_from_aux(void *aux)
{
    return aux;
}

static void
fwd_set_ready(struct fwd_port *p, unsigned int qid, bool ready)
{
    if (qid < VHOST_MAX_QUEUES) {
        atomic_store_explicit(&p->ready[qid], ready, memory_order_relaxed);
    }
}

static void
fwd_connected(struct vhost_port *port, void *aux)
{
    printf("%s: connected\n", fwd_name(port));
}

static void
fwd_device_ready(struct vhost_port *port, void *aux)
{
    struct fwd_port *p = fwd_port_from_aux(aux);
    struct vhost_port_info info;

    vhost_port_get_info(port, &info);
    printf("%s: device ready features=%#"PRIx64" queue_pairs=%u\n",
           fwd_name(port), info.features, info.n_enabled_queues / 2);
    for (unsigned int q = 0; q < info.n_queues; q++) {
        struct vhost_queue_info qi;

        if (!vhost_port_get_queue_info(port, q, &qi)) {
            fwd_set_ready(p, q, qi.ready);
        }
    }
    fwd_print_state(port);
}

static void
fwd_queue_state(struct vhost_port *port, unsigned int qid, bool enabled,
                void *aux)
{
    fwd_set_ready(fwd_port_from_aux(aux), qid, enabled);
    printf("%s: queue %u %s\n", fwd_name(port), qid,
           enabled ? "enabled" : "disabled");
}

static void
fwd_device_gone(struct vhost_port *port, void *aux)
{
    struct fwd_port *p = fwd_port_from_aux(aux);

    for (unsigned int q = 0; q < VHOST_MAX_QUEUES; q++) {
        fwd_set_ready(p, q, false);
    }
    printf("%s: device gone\n", fwd_name(port));
}

static void
fwd_disconnected(struct vhost_port *port, void *aux)
{
    printf("%s: disconnected\n", fwd_name(port));
}

static const struct vhost_port_callbacks fwd_callbacks = {
    .connected = fwd_connected,
    .device_ready = fwd_device_ready,
    .queue_state = fwd_queue_state,
    .device_gone = fwd_device_gone,
    .disconnected = fwd_disconnected,
};

static void
fwd_log(enum vhost_log_level level, const char *msg, void *aux)
{
    fprintf(stderr, "ovs-vhost-fwd|%s|%s\n", vhost_log_level_to_string(level),
            msg);
}

static void
fwd_signal(int sig)
{
    if (sig == SIGUSR1) {
        dump_requested = 1;
    } else if (sig == SIGUSR2) {
        pause_requested = 1;
    } else {
        exiting = 1;
    }
}

static unsigned long
fwd_parse_ulong(const char *s, const char *what, unsigned long max)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 0);
    if (errno || end == s || *end || v > max) {
        fprintf(stderr, "ovs-vhost-fwd: bad %s \"%s\"\n", what, s);
        exit(EXIT_FAILURE);
    }
    return v;
}

static enum fwd_mode
fwd_parse_mode(const char *s)
{
    for (size_t i = 0; i < sizeof fwd_mode_names / sizeof *fwd_mode_names;
         i++) {
        if (!strcmp(s, fwd_mode_names[i])) {
            return i;
        }
    }
    fprintf(stderr, "ovs-vhost-fwd: unknown mode \"%s\" (io, macswap, "
            "rxonly or txonly)\n", s);
    exit(EXIT_FAILURE);
}

enum {
    OPT_RECONNECT_MS = 256,
    OPT_TX_RETRIES,
    OPT_VERIFY,
    OPT_CPU,
    OPT_PAUSED,
};

int
main(int argc, char *argv[])
{
    static const struct option long_options[] = {
        { "server", required_argument, NULL, 's' },
        { "client", required_argument, NULL, 'c' },
        { "queues", required_argument, NULL, 'q' },
        { "features", required_argument, NULL, 'f' },
        { "reconnect-ms", required_argument, NULL, OPT_RECONNECT_MS },
        { "mode", required_argument, NULL, 'm' },
        { "burst", required_argument, NULL, 'b' },
        { "txpkt-len", required_argument, NULL, 'l' },
        { "tx-retries", required_argument, NULL, OPT_TX_RETRIES },
        { "verify", no_argument, NULL, OPT_VERIFY },
        { "cpu", required_argument, NULL, OPT_CPU },
        { "paused", no_argument, NULL, OPT_PAUSED },
        { "stats-interval", required_argument, NULL, 'i' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct {
        const char *path;
        enum vhost_port_mode mode;
    } specs[FWD_MAX_PORTS];
    static struct fwd_pmd pmd;
    struct vhost_port_options opts;
    struct vhost_engine *engine;
    unsigned long stats_interval = 0;
    pthread_t pmd_thread;
    int n_specs = 0;
    int c;

    setvbuf(stdout, NULL, _IOLBF, 0);
    vhost_port_options_init(&opts);
    while ((c = getopt_long(argc, argv, "s:c:q:f:m:b:l:i:vh", long_options,
                            NULL)) != -1) {
        switch (c) {
        case 's':
        case 'c':
            if (n_specs >= FWD_MAX_PORTS) {
                fprintf(stderr, "ovs-vhost-fwd: at most %d ports\n",
                        FWD_MAX_PORTS);
                return EXIT_FAILURE;
            }
            specs[n_specs].path = optarg;
            specs[n_specs].mode = c == 's' ? VHOST_PORT_SERVER
                                           : VHOST_PORT_CLIENT;
            n_specs++;
            break;
        case 'q':
            opts.max_queue_pairs = fwd_parse_ulong(optarg, "queue count",
                                                   VHOST_MAX_QUEUE_PAIRS);
            if (!opts.max_queue_pairs) {
                fprintf(stderr, "ovs-vhost-fwd: need at least 1 queue\n");
                return EXIT_FAILURE;
            }
            break;
        case 'f':
            if (optarg[0] == '+') {
                opts.features |= strtoull(optarg + 1, NULL, 16);
            } else {
                opts.features = strtoull(optarg, NULL, 16);
            }
            break;
        case OPT_RECONNECT_MS: {
            char *comma = strchr(optarg, ',');
            if (comma) {
                *comma = '\0';
                opts.reconnect_max_ms = fwd_parse_ulong(comma + 1,
                                                        "reconnect max",
                                                        3600000);
            }
            opts.reconnect_min_ms = fwd_parse_ulong(optarg, "reconnect min",
                                                    3600000);
            break;
        }
        case 'm':
            mode = fwd_parse_mode(optarg);
            break;
        case 'b':
            burst = fwd_parse_ulong(optarg, "burst", VHOST_MAX_BURST);
            if (!burst) {
                fprintf(stderr, "ovs-vhost-fwd: burst must be at least 1\n");
                return EXIT_FAILURE;
            }
            break;
        case 'l':
            n_txpkt_lens = 0;
            for (char *save = NULL, *tok = strtok_r(optarg, ",", &save);
                 tok; tok = strtok_r(NULL, ",", &save)) {
                unsigned int len = fwd_parse_ulong(tok, "txpkt length",
                                                   FWD_MAX_TXPKT_LEN);
                if (len < FWD_MIN_TXPKT_LEN
                    || n_txpkt_lens >= FWD_MAX_TXPKT_LENS) {
                    fprintf(stderr, "ovs-vhost-fwd: txpkt lengths: at most "
                            "%d, each at least %d\n", FWD_MAX_TXPKT_LENS,
                            FWD_MIN_TXPKT_LEN);
                    return EXIT_FAILURE;
                }
                txpkt_lens[n_txpkt_lens++] = len;
            }
            if (!n_txpkt_lens) {
                fwd_usage();
                return EXIT_FAILURE;
            }
            break;
        case OPT_PAUSED:
            atomic_store(&pmd_tx_paused, true);
            break;
        case OPT_TX_RETRIES:
            tx_retries_max = fwd_parse_ulong(optarg, "tx retries", 1000);
            break;
        case OPT_VERIFY:
            verify = true;
            break;
        case OPT_CPU:
            pmd_cpu = fwd_parse_ulong(optarg, "cpu", CPU_SETSIZE - 1);
            break;
        case 'i':
            stats_interval = fwd_parse_ulong(optarg, "stats interval", 86400);
            break;
        case 'v':
            vhost_log_set_level(VHOST_LOG_DBG);
            break;
        case 'h':
            fwd_usage();
            return EXIT_SUCCESS;
        default:
            fwd_usage();
            return EXIT_FAILURE;
        }
    }
    if (optind != argc || !n_specs) {
        fwd_usage();
        return EXIT_FAILURE;
    }
    n_queue_pairs = opts.max_queue_pairs;

    vhost_log_set_handler(fwd_log, NULL);
    signal(SIGINT, fwd_signal);
    signal(SIGTERM, fwd_signal);
    signal(SIGUSR1, fwd_signal);
    signal(SIGUSR2, fwd_signal);
    signal(SIGPIPE, SIG_IGN);

    tsc_hz = fwd_calibrate_hz();

    int error = vhost_engine_create(&engine);
    if (error) {
        fprintf(stderr, "ovs-vhost-fwd: cannot create engine (%s)\n",
                strerror(error));
        return EXIT_FAILURE;
    }
    opts.cb = &fwd_callbacks;
    for (int i = 0; i < n_specs; i++) {
        struct fwd_port *p = &ports[n_ports];

        snprintf(p->name, sizeof p->name, "p%d", i);
        for (unsigned int k = 0; k < n_txpkt_lens; k++) {
            fwd_build_template(p, i, k);
        }
        opts.name = p->name;
        opts.path = specs[i].path;
        opts.mode = specs[i].mode;
        opts.aux = p;
        error = vhost_port_create(engine, &opts, &p->port);
        if (error) {
            fprintf(stderr, "ovs-vhost-fwd: %s: cannot create port on %s "
                    "(%s)\n", p->name, specs[i].path, strerror(error));
            vhost_engine_destroy(engine);
            return EXIT_FAILURE;
        }
        printf("%s: %s %s, %u queue pairs\n", p->name,
               specs[i].mode == VHOST_PORT_SERVER ? "listening at"
                                                  : "connecting to",
               specs[i].path, opts.max_queue_pairs);
        n_ports++;
    }
    for (int i = 0; i < n_ports; i++) {
        ports[i].peer = &ports[(i ^ 1) < n_ports ? i ^ 1 : i];
    }

    error = fwd_pmd_start(&pmd_thread, &pmd);
    if (error) {
        fprintf(stderr, "ovs-vhost-fwd: cannot start forwarding thread "
                "(%s)\n", strerror(error));
        vhost_engine_destroy(engine);
        return EXIT_FAILURE;
    }
    printf("pmd: mode=%s burst=%u queue_pairs=%u verify=%s cpu=%d "
           "tsc_hz=%"PRIu64"\n", fwd_mode_names[mode], burst, n_queue_pairs,
           verify ? "yes" : "no", pmd_cpu, tsc_hz);

    /* The embedder's main loop: poll the engine's fd with its timeout. */
    long long int last_stats = fwd_time_msec();
    long long int stats_ms = stats_interval * 1000;
    while (!exiting) {
        struct pollfd pfd = {
            .fd = vhost_engine_get_fd(engine),
            .events = POLLIN,
        };
        int timeout = vhost_engine_next_timeout(engine);
        if (timeout < 0 || timeout > 1000) {
            timeout = 1000;
        }
        if (stats_ms) {
            long long int left = last_stats + stats_ms - fwd_time_msec();
            if (left < timeout) {
                timeout = left < 0 ? 0 : left;
            }
        }
        if (poll(&pfd, 1, timeout) < 0 && errno != EINTR) {
            perror("poll");
            break;
        }
        vhost_engine_run(engine, 0);

        if (pause_requested) {
            bool paused = !atomic_load(&pmd_tx_paused);

            pause_requested = 0;
            atomic_store(&pmd_tx_paused, paused);
            while (atomic_load(&pmd_tx_paused_seen) != paused) {
                struct timespec nap = { .tv_nsec = 100 * 1000 };

                nanosleep(&nap, NULL);
            }
            printf("pmd: txonly %s\n", paused ? "paused" : "resumed");
        }

        long long int now = fwd_time_msec();
        bool periodic = stats_ms && now - last_stats >= stats_ms;
        if (dump_requested || periodic) {
            if (dump_requested) {
                for (int i = 0; i < n_ports; i++) {
                    fwd_print_state(ports[i].port);
                }
            }
            dump_requested = 0;
            fwd_print_stats((now - last_stats) / 1000.0);
            last_stats = now;
        }
    }

    atomic_store(&pmd_exit, true);
    pthread_join(pmd_thread, NULL);
    fwd_print_totals(&pmd.pool);
    printf("exiting\n");
    vhost_engine_destroy(engine);
    free(pmd.pool.mem);
    return EXIT_SUCCESS;
}
