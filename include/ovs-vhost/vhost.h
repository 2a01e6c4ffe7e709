/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ovs-vhost: an embeddable vhost-user backend engine.
 *
 * Usage
 * =====
 *
 * An embedder creates one engine and any number of ports on it.  A port is
 * one vhost-user socket, in server mode (the engine listens at 'path' and
 * accepts a frontend, again and again) or in client mode (the engine
 * connects to 'path' and reconnects with backoff).  Behind each port is one
 * virtio-net device with up to VHOST_MAX_QUEUE_PAIRS queue pairs.
 *
 *     struct vhost_engine *engine;
 *     struct vhost_port *port;
 *     struct vhost_port_options opts;
 *
 *     vhost_engine_create(&engine);
 *     vhost_port_options_init(&opts);
 *     opts.name = "vhu0";
 *     opts.path = "/run/vhu0.sock";
 *     opts.mode = VHOST_PORT_SERVER;
 *     opts.cb = &my_callbacks;
 *     vhost_port_create(engine, &opts, &port);
 *
 * The engine's control plane is an event loop over non-blocking sockets.  No
 * thread is created per port.  The embedder either
 *
 *   - calls vhost_engine_start() to run the loop in a thread of the
 *     engine's own, or
 *
 *   - drives it from its own main loop: wait until vhost_engine_get_fd() is
 *     readable or vhost_engine_next_timeout() milliseconds have passed, then
 *     call vhost_engine_run(engine, 0).
 *
 * Thread-safety
 * =============
 *
 * Every function here may be called from any thread.  The engine serialises
 * its control plane with one recursive mutex; callbacks run with that mutex
 * held, on the thread that runs the loop, and may call the functions here
 * (but not vhost_engine_destroy() or vhost_engine_stop()).
 *
 * The data path (burst enqueue and dequeue, later) runs on the embedder's
 * polling threads.  Each queue has an access lock that the data path takes
 * around a burst; the control plane takes it before it changes anything the
 * data path reads (the guest memory table, ring addresses, the queue's
 * state), so the data path never touches an unmapped region.
 *
 * Trust model
 * ===========
 *
 * The frontend (QEMU, DPDK virtio-user) and the guest behind it are not
 * trusted.  Every message is checked against a dispatch table (payload size,
 * number of fds) and then by its handler; a bad message is logged at a
 * limited rate, counted, and answered with an error (when the frontend asked
 * for an acknowledgement) or ends that frontend's connection.  Nothing a
 * frontend sends can crash the process, leak an fd or a mapping, or affect
 * another port.
 */

#ifndef OVS_VHOST_VHOST_H
#define OVS_VHOST_VHOST_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits. */
#define VHOST_MAX_QUEUE_PAIRS 128
#define VHOST_MAX_QUEUES (2 * VHOST_MAX_QUEUE_PAIRS)
#define VHOST_MAX_MEM_REGIONS 32    /* Answer to GET_MAX_MEM_SLOTS. */

/* Logging.
 *
 * The engine logs through one process-wide handler.  The default handler
 * writes to stderr.  Messages caused by a peer's misbehaviour are rate
 * limited before they reach the handler. */
enum vhost_log_level {
    VHOST_LOG_ERR,
    VHOST_LOG_WARN,
    VHOST_LOG_INFO,
    VHOST_LOG_DBG,
};

typedef void vhost_log_handler(enum vhost_log_level, const char *msg,
                               void *aux);

void vhost_log_set_handler(vhost_log_handler *, void *aux);
void vhost_log_set_level(enum vhost_log_level max_level);
const char *vhost_log_level_to_string(enum vhost_log_level);

/* Engine: the control-plane event loop and the ports on it. */
struct vhost_engine;

int vhost_engine_create(struct vhost_engine **enginep);
void vhost_engine_destroy(struct vhost_engine *);

int vhost_engine_start(struct vhost_engine *);
void vhost_engine_stop(struct vhost_engine *);

int vhost_engine_get_fd(const struct vhost_engine *);
int vhost_engine_next_timeout(struct vhost_engine *);
int vhost_engine_run(struct vhost_engine *, int timeout_ms);

/* Ports. */
struct vhost_port;

enum vhost_port_mode {
    VHOST_PORT_SERVER,          /* Listen at 'path', accept a frontend. */
    VHOST_PORT_CLIENT,          /* Connect to 'path', reconnect. */
};

/* Callbacks to the embedder.  Each may be null.  They run on the thread that
 * runs the engine's loop, with the engine's mutex held. */
struct vhost_port_callbacks {
    /* A frontend connected (server: accepted; client: connected). */
    void (*connected)(struct vhost_port *, void *aux);

    /* The device became ready: queue pair 0 and every enabled queue have
     * their ring addresses, a kick fd and guest memory. */
    void (*device_ready)(struct vhost_port *, void *aux);

    /* After device_ready, queue 'qid' became usable (enabled and set up) or
     * stopped being usable.  Queue 2n is the guest's RX ring of pair n and
     * queue 2n + 1 its TX ring. */
    void (*queue_state)(struct vhost_port *, unsigned int qid, bool enabled,
                        void *aux);

    /* The device stopped being ready: the frontend disconnected, reset the
     * device, or stopped a queue the device needs.  Guest memory may be
     * unmapped as soon as this returns. */
    void (*device_gone)(struct vhost_port *, void *aux);

    /* The frontend disconnected. */
    void (*disconnected)(struct vhost_port *, void *aux);
};

struct vhost_port_options {
    const char *name;           /* For log messages; defaults to 'path'. */
    const char *path;           /* Unix socket path.  Required. */
    enum vhost_port_mode mode;

    /* Virtio feature bits offered to the frontend (VIRTIO_NET_F_*,
     * VIRTIO_F_*, VIRTIO_RING_F_*); VHOST_USER_F_PROTOCOL_FEATURES is
     * always added.  Initialised to vhost_default_features(). */
    uint64_t features;

    /* vhost-user protocol feature bits offered.  Initialised to
     * vhost_default_protocol_features(), which leaves out CONFIG: add
     * VHOST_USER_PROTOCOL_F_CONFIG (bit 9) to serve GET_CONFIG to a
     * frontend that reads the config space; and PAGEFAULT: add
     * VHOST_USER_PROTOCOL_F_PAGEFAULT (bit 8) for postcopy live migration
     * (not in a process whose memory is locked with MCL_FUTURE).  Bits outside
     * vhost_supported_protocol_features() are ignored. */
    uint64_t protocol_features;

    /* Queue pairs offered (GET_QUEUE_NUM), 1..VHOST_MAX_QUEUE_PAIRS. */
    unsigned int max_queue_pairs;

    /* Client mode: delay before the first reconnect attempt, doubled after
     * each failure up to the maximum. */
    unsigned int reconnect_min_ms;
    unsigned int reconnect_max_ms;

    /* A frontend that starts a message and does not finish it, or does
     * not read a reply, within this many milliseconds is disconnected
     * (0: VHOST_PORT_MSG_TIMEOUT_MS).  Its connection alone waits
     * meanwhile; nothing else does.  On a server port, a frontend that
     * connects meanwhile takes its place after 250 ms unless its device
     * is ready (lib/vhost-port.c, "Takeover"). */
    unsigned int msg_timeout_ms;

    /* A file where the port logs its packed rings' positions (NULL: none,
     * the default), so that a successor of this process, given the same
     * path, resumes a packed ring where it stands when the frontend
     * reconnects with a stale base (QEMU does, for packed rings, after its
     * backend died).  Created if missing; removed when the port goes with
     * no ring started; kept otherwise.  Put it where the embedder keeps
     * its sockets: lib/virtq-poslog.h. */
    const char *state_path;

    const struct vhost_port_callbacks *cb;
    void *aux;
};

uint64_t vhost_default_features(void);
uint64_t vhost_offload_features(void);
uint64_t vhost_supported_protocol_features(void);
uint64_t vhost_default_protocol_features(void);
void vhost_port_options_init(struct vhost_port_options *);

#define VHOST_PORT_MSG_TIMEOUT_MS 5000

int vhost_port_create(struct vhost_engine *, const struct vhost_port_options *,
                      struct vhost_port **portp);
void vhost_port_destroy(struct vhost_port *);
const char *vhost_port_get_name(const struct vhost_port *);

/* The MTU in the port's virtio-net configuration space, which a frontend
 * reads with GET_CONFIG (VHOST_USER_PROTOCOL_F_CONFIG) and a driver that
 * negotiates VIRTIO_NET_F_MTU adopts: 0 (the default) for none, else at
 * least 68.  A driver reads it as it negotiates, so one already running
 * keeps the MTU it has.  Returns 0 or EINVAL. */
int vhost_port_set_mtu(struct vhost_port *, uint16_t mtu);

/* Counters kept per port, over its lifetime. */
struct vhost_port_counters {
    uint64_t connects;          /* Frontends accepted or connected. */
    uint64_t disconnects;       /* Connections ended, for any reason. */
    uint64_t connect_failures;  /* Client mode: failed connect attempts. */
    uint64_t extra_conns_refused; /* Server mode: a second frontend. */
    uint64_t accept_failures;   /* Server mode: accept() failed (no fds). */
    uint64_t msgs;              /* Messages received and dispatched. */
    uint64_t msgs_rejected;     /* Messages refused, for any reason. */
    uint64_t msgs_unknown;      /* ...of which unknown requests. */
    uint64_t msgs_bad_size;     /* ...of which a payload size out of range. */
    uint64_t msgs_bad_fds;      /* ...of which a wrong number of fds. */
    uint64_t msgs_bad_header;   /* Bad version or oversized: disconnects. */
    uint64_t fds_closed;        /* Received fds closed, not kept. */
    uint64_t mem_table_updates; /* Memory tables installed. */
    uint64_t msg_timeouts;      /* Disconnects: a message left half-written
                                 * or a reply unread (msg_timeout_ms). */
    uint64_t msgs_ring_started; /* Rejected: SET_VRING_NUM or _BASE for a
                                 * started vring, or a ring layout change
                                 * while one is started. */
    uint64_t fds_not_eventfd;   /* Rejected: a kick, call, err or log call
                                 * fd that is not an eventfd. */
    uint64_t frontends_displaced; /* Server mode: a connection with no
                                 * SET_OWNER, or stalled mid-message, for
                                 * 250 ms, dropped for a newcomer. */
    uint64_t guarded_fds;       /* Memory and log fds that can shrink (no
                                 * F_SEAL_SHRINK), mapped with a SIGBUS
                                 * guard. */
    uint64_t guarded_faults;    /* Accesses to those that faulted: the
                                 * frontend shrank the fd.  Each got a zero
                                 * page; the frontend is disconnected. */
    uint64_t rings_recovered;   /* Packed rings started at the position
                                 * the port logged (state_path) rather
                                 * than the frontend's stale base. */
    uint64_t rings_recovered_inexact; /* ...of which the log could not
                                 * place exactly: the backend was killed
                                 * mid-burst (lib/virtq-poslog.h). */

    /* vIOMMU (VIRTIO_F_IOMMU_PLATFORM), for the port's lifetime. */
    uint64_t iotlb_updates;     /* IOTLB_MSG updates applied. */
    uint64_t iotlb_invalidations; /* IOTLB_MSG invalidations applied. */
    uint64_t iotlb_rejected;    /* IOTLB_MSG messages refused: a range
                                 * that wraps, a bad permission or type,
                                 * or no IOMMU_PLATFORM negotiated. */
    uint64_t iotlb_evicted;     /* Entries dropped to make room. */
    uint64_t iotlb_ring_misses; /* Misses sent for ring addresses. */

    /* Postcopy live migration (VHOST_USER_PROTOCOL_F_PAGEFAULT). */
    uint64_t postcopy_listens;  /* Migrations that reached POSTCOPY_LISTEN. */
    uint64_t postcopy_regions;  /* Regions registered with the
                                 * userfaultfd. */
    uint64_t postcopy_rejected; /* POSTCOPY_* messages refused: out of
                                 * order, or a userfaultfd the kernel
                                 * would not give. */
    uint64_t msgs_deferred;     /* Messages held back while the data path
                                 * held a vring's lock for milliseconds (a
                                 * PMD thread in a postcopy fault the
                                 * frontend did not serve), then handled
                                 * once it let go. */
};

/* A snapshot of a port's device, for status displays and tests. */
struct vhost_port_info {
    bool connected;             /* A frontend is connected. */
    bool ready;                 /* device_ready fired, device_gone did not. */
    bool owned;                 /* SET_OWNER received. */
    uint64_t features;          /* Negotiated virtio features. */
    uint64_t protocol_features; /* Negotiated protocol features. */
    unsigned int n_queues;      /* 1 + the highest queue index set up. */
    unsigned int n_enabled_queues;
    unsigned int n_mem_regions;
    uint64_t mem_size;          /* Sum of region sizes, in bytes. */
    uint16_t mtu;               /* From NET_SET_MTU, 0 if none. */
    bool has_rarp;              /* A MAC from SEND_RARP is stored. */
    bool rarp_pending;          /* Its RARP is yet to be injected. */
    uint8_t rarp_mac[6];
    uint8_t status;             /* Virtio device status (SET_STATUS). */
    bool log_mapped;            /* SET_LOG_BASE mapped a dirty log. */
    uint64_t log_size;          /* Its size in bytes. */
    bool has_log_call;          /* SET_LOG_FD gave an eventfd. */
    bool has_backend_req;       /* SET_BACKEND_REQ_FD gave a socket. */
    int numa_node;              /* NUMA node of guest memory, -1 unknown. */
    struct vhost_port_counters counters;
};

int vhost_port_get_info(struct vhost_port *, struct vhost_port_info *);

/* One queue's state. */
struct vhost_queue_info {
    bool enabled;               /* SET_VRING_ENABLE (or implicit). */
    bool ready;                 /* Enabled, addressed, kicked, mapped. */
    uint16_t size;              /* SET_VRING_NUM. */
    uint32_t base;              /* SET_VRING_BASE, or the current index. */
    bool has_addr;              /* SET_VRING_ADDR received. */
    bool has_kick;              /* SET_VRING_KICK received (fd or poll). */
    bool has_call;              /* SET_VRING_CALL gave an eventfd. */
    bool has_err;               /* SET_VRING_ERR gave an eventfd. */
    bool log_used;              /* VHOST_VRING_F_LOG set in the address. */
};

int vhost_port_get_queue_info(struct vhost_port *, unsigned int qid,
                              struct vhost_queue_info *);

/* Data path
 * =========
 *
 * Packets move in bursts between a queue pair's guest rings and the
 * embedder's buffers, with one copy and no bounce buffer: dequeue copies
 * from the guest's TX ring (vring 2 * qp + 1) straight into the embedder's
 * buffers; enqueue copies the embedder's packets straight into the guest's
 * RX ring (vring 2 * qp).
 *
 * Call them from the embedder's polling threads, any number of them, but
 * one thread at a time per vring (a vring's access lock makes a second
 * caller, or a control-plane change in progress, return 0 at once).  They
 * return 0 when the queue is not ready.
 *
 * The virtio-net header is parsed into, or built from, 'struct
 * vhost_offload'; the embedder never sees it. */

/* Offload metadata (the virtio-net header, VIRTIO 1.2 §5.1.6). */
#define VHOST_OL_NEEDS_CSUM 1   /* Checksum from csum_start is to be done. */
#define VHOST_OL_DATA_VALID 2   /* Checksum already verified. */

#define VHOST_GSO_NONE 0
#define VHOST_GSO_TCPV4 1
#define VHOST_GSO_UDP 3
#define VHOST_GSO_TCPV6 4
#define VHOST_GSO_ECN 0x80

struct vhost_offload {
    uint8_t flags;              /* VHOST_OL_*. */
    uint8_t gso_type;           /* VHOST_GSO_*. */
    uint16_t hdr_len;           /* Length of the headers to replicate. */
    uint16_t gso_size;          /* Segment payload size. */
    uint16_t csum_start;        /* Checksum from here to the end... */
    uint16_t csum_offset;       /* ...stored at csum_start + csum_offset. */
};

/* One packet buffer of the embedder's. */
struct vhost_pkt {
    uint8_t *data;              /* First byte of the packet. */
    uint32_t len;               /* Bytes of packet at 'data'. */
    uint32_t size;              /* Bytes that fit at 'data' (dequeue). */
    struct vhost_offload ol;
    void *handle;               /* The embedder's (mbuf, dp_packet, ...). */
};

/* Buffers on dequeue.  The caller may pre-fill 'pkts' with buffers (data,
 * size, handle); the engine keeps one that is big enough, frees one that is
 * too small with 'free', and gets a new one with 'alloc'.  On return
 * pkts[0..ret) hold packets, and every entry whose 'data' is not NULL holds
 * a buffer that is the caller's again, packet or not.
 *
 * How dequeue gets buffers.  'alloc' fills in 'pkt->data', 'pkt->size' and
 * 'pkt->handle' for a buffer with room for at least 'len' bytes of packet
 * after whatever headroom the embedder keeps, or returns false if it has
 * none (the packet then stays in the guest's ring for the next call).
 * 'max_len', if not 0, is the longest packet the embedder can ever hold
 * (OVS's dp_packet: 65535 bytes); a longer one is dropped as
 * VHOST_DROP_TOO_BIG, as it would otherwise block the ring for good. */
struct vhost_pkt_alloc {
    bool (*alloc)(void *aux, struct vhost_pkt *pkt, uint32_t len);
    void (*free)(void *aux, struct vhost_pkt *pkt);
    void *aux;
    uint32_t max_len;           /* 0: the engine's own limit. */
};

#define VHOST_MAX_BURST 64      /* Most packets handled per call. */

unsigned int vhost_dequeue_burst(struct vhost_port *, unsigned int qp,
                                 struct vhost_pkt *pkts, unsigned int n,
                                 const struct vhost_pkt_alloc *);
unsigned int vhost_enqueue_burst(struct vhost_port *, unsigned int qp,
                                 const struct vhost_pkt *pkts,
                                 unsigned int n);
/* How many descriptor chains the guest has made available on queue pair
 * 'qp''s TX ring and dequeue has not taken yet, as far as can be told
 * without walking chains (at most the ring size).  0 if the queue is not
 * ready or busy.  For queue-fill metrics, such as dpif-netdev's: on a
 * packed ring it looks at no more than 128 descriptors. */
unsigned int vhost_dequeue_pending(struct vhost_port *, unsigned int qp);

/* vhost_enqueue_burst() returns how many of 'pkts', in order, it has
 * copied into the guest.  The rest did not fit for now: retry or drop
 * them.  The guest's RX ring is full, or the buffers at its head are too
 * small for the next packet (as DPDK's vhost library, the burst stops
 * there: 'small_buf_stops'), or the burst used up its work budget
 * ('budget_stops'; dequeue too).  A burst does a bounded amount of work,
 * in descriptors read, whatever the guest's rings hold.  Dequeue drops packets
 * longer than 64 KiB plus Ethernet and VLAN headers, or than the
 * allocator's 'max_len' (VHOST_DROP_TOO_BIG), before asking the allocator
 * for a buffer. */

/* Why a descriptor chain was dropped or a queue marked broken. */
enum vhost_drop_reason {
    VHOST_DROP_BAD_INDEX,       /* Head or next index >= queue size. */
    VHOST_DROP_LOOP,            /* Chain longer than the queue size. */
    VHOST_DROP_AVAIL_IDX,       /* Avail idx more than size ahead. */
    VHOST_DROP_BAD_ADDR,        /* Buffer outside guest memory, or wraps. */
    VHOST_DROP_BAD_DIRECTION,   /* Writable on TX, read-only on RX. */
    VHOST_DROP_BAD_INDIRECT,    /* Bad or nested indirect table. */
    VHOST_DROP_SHORT_HDR,       /* Chain shorter than the net header. */
    VHOST_DROP_BAD_CSUM,        /* csum_start/offset beyond the packet. */
    VHOST_DROP_TOO_BIG,         /* Larger than the embedder can take. */
    VHOST_DROP_NO_BUFS,         /* Guest RX ring full (enqueue). */
    VHOST_DROP_ID_IN_FLIGHT,    /* Packed: buffer id already in flight. */
    VHOST_DROP_TOO_LONG,        /* Chain of more than 257 descriptors. */
    VHOST_N_DROP_REASONS
};

const char *vhost_drop_reason_to_string(enum vhost_drop_reason);
/* A short identifier for 'reason' ("bad_index"), for counter names. */
const char *vhost_drop_reason_name(enum vhost_drop_reason);

/* Per-vring statistics, the set DPDK's vhost PMD exposes plus ours. */
struct vhost_queue_stats {
    uint64_t packets;           /* good_packets */
    uint64_t bytes;             /* good_bytes */
    uint64_t multicast;
    uint64_t broadcast;
    uint64_t undersize;         /* Under 64 bytes. */
    uint64_t size_64;
    uint64_t size_65_127;
    uint64_t size_128_255;
    uint64_t size_256_511;
    uint64_t size_512_1023;
    uint64_t size_1024_1518;
    uint64_t size_1519_max;
    uint64_t guest_notifications;   /* Call eventfd written. */
    uint64_t notifications_suppressed; /* Not needed by the guest. */
    uint64_t rarps_injected;    /* RARPs announced after migration. */
    uint64_t drops[VHOST_N_DROP_REASONS];
    bool broken;                /* Queue stopped after a guest error. */
    uint64_t desc_visits;       /* Descriptors read by bursts, indirect
                                 * entries included. */
    uint64_t budget_stops;      /* Bursts ended by their work budget. */
    uint64_t small_buf_stops;   /* Enqueue bursts stopped at guest buffers
                                 * too small for the next packet. */

    /* With a vIOMMU (VIRTIO_F_IOMMU_PLATFORM): every guest address is an
     * I/O virtual address, translated through the device's IOTLB. */
    uint64_t iotlb_hits;        /* Buffer translations the IOTLB had. */
    uint64_t iotlb_misses;      /* IOTLB misses sent to the frontend. */
    uint64_t iotlb_waits;       /* Bursts that stopped at a chain whose
                                 * translation is still missing: the chain
                                 * stays available until it arrives. */
    uint64_t iotlb_denied;      /* Chains dropped: the IOTLB entry lacks
                                 * the access the buffer needs. */
    uint64_t iotlb_held;        /* Guest RX: packets held while a miss
                                 * was answered, rather than refused. */
    uint64_t iotlb_misses_ahead;    /* IOTLB misses sent for the chains
                                     * after one that missed, so that one
                                     * round trip answers a batch. */
};

int vhost_port_get_queue_stats(struct vhost_port *, unsigned int vring,
                               struct vhost_queue_stats *);

/* Writes a text description of 'features' (virtio feature names separated
 * by spaces) into 'buf' of 'size' bytes.  Returns 'buf'. */
char *vhost_features_to_string(uint64_t features, char *buf, size_t size);

/* In a build configured with --enable-dirty-log-audit (test builds),
 * stores the guest pages written while logging in '*pages' and those of
 * them the dirty log missed in '*violations', since the process started,
 * and returns true.  Returns false in a normal build. */
bool vhost_dirty_log_audit_get(uint64_t *pages, uint64_t *violations);

#ifdef __cplusplus
}
#endif

#endif /* ovs-vhost/vhost.h */
