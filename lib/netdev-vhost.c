/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The netdev classes "dpdkvhostuser" and "dpdkvhostuserclient", served by
 * the ovs-vhost engine instead of DPDK's vhost library: the classes, their
 * construction and configuration, the engine's callbacks, policing and
 * QoS settings.  The data path and the statistics are in files of their
 * own (netdev-vhost-private.h lists them).  See netdev-vhost.h for the
 * design note (threads, lock order, trust).
 *
 * Queue naming follows OVS: a port's rxq N is what OVS receives, the
 * guest's TX ring of queue pair N (vring 2N + 1); its txq maps onto the
 * guest's RX ring of an enabled queue pair (vring 2M).
 */

#include <config.h>
#include "netdev-vhost-private.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connectivity.h"
#include "coverage.h"
#include "dirs.h"
#include "dp-packet.h"
#include "dpif-netdev.h"
#include "fatal-signal.h"
#include "netdev-provider.h"
#include "openvswitch/dynamic-string.h"
#include "openvswitch/list.h"
#include "openvswitch/token-bucket.h"
#include "openvswitch/vlog.h"
#include "ovs-atomic.h"
#include "ovs-rcu.h"
#include "ovs-thread.h"
#include "packets.h"
#include "seq.h"
#include "openvswitch/shash.h"
#include "openvswitch/poll-loop.h"
#include "smap.h"
#include "sset.h"
#include "timeval.h"
#include "userspace-tso.h"
#include "lib/util.h"          /* OVS's, not ours. */
#include "lib/netdev-vhost-compat.h"
#include "ovs-vhost/vhost.h"

VLOG_DEFINE_THIS_MODULE(netdev_vhost);

COVERAGE_DEFINE(vhost_connect);
COVERAGE_DEFINE(vhost_disconnect);
COVERAGE_DEFINE(vhost_device_ready);
COVERAGE_DEFINE(vhost_queue_state);

static struct vlog_rate_limit rl = VLOG_RATE_LIMIT_INIT(5, 20);

/* Process-wide state, under 'vhost_mutex'. */
static struct ovs_mutex vhost_mutex = OVS_MUTEX_INITIALIZER;
static struct ovs_list vhost_ports OVS_GUARDED_BY(vhost_mutex)
    = OVS_LIST_INITIALIZER(&vhost_ports);
static char *vhost_sock_dir OVS_GUARDED_BY(vhost_mutex);
static uid_t vhost_sock_uid = (uid_t) -1;       /* -1: leave as created. */
static gid_t vhost_sock_gid = (gid_t) -1;
static int vhost_sock_mode = -1;                /* -1: leave as created. */
/* other_config:vhost-iommu-support, read once at the first pass, as
 * OVS-DPDK reads it at dpdk init: a change needs a restart. */
static bool vhost_iommu_enabled OVS_GUARDED_BY(vhost_mutex);
/* other_config:vhost-postcopy-support, the same way; false if every page
 * of the process is locked (--mlockall on OVS before 3.4). */
static bool vhost_postcopy_enabled OVS_GUARDED_BY(vhost_mutex);

static const struct netdev_class netdev_vhost_class;
static const struct netdev_class netdev_vhost_client_class;

static bool
is_vhost_class(const struct netdev_class *class)
{
    return class == &netdev_vhost_class
           || class == &netdev_vhost_client_class;
}

bool
netdev_vhost_is_vhost(const struct netdev *netdev)
{
    return is_vhost_class(netdev_get_class(netdev));
}

/* Adds every vhost-user netdev to 'devices', name to netdev, each with a
 * reference the caller releases with netdev_close(). */
void
netdev_vhost_get_devices(struct shash *devices)
{
    netdev_get_devices(&netdev_vhost_class, devices);
    netdev_get_devices(&netdev_vhost_client_class, devices);
}

/* The engine runs from the main loop, through the classes' run and wait
 * hooks (netdev-vhost-engine.c). */

/* Set by a PMD thread whose poll released a device's carrier hold
 * (netdev_vhost_learn_hold__()). */
static atomic_bool carrier_changed = false;

/* Called from any thread when a device's carrier may have changed without
 * a callback: wakes the main thread, whose netdev_vhost_run() then bumps
 * every device's change sequence, as the callbacks do, so that the bridge
 * reads the carrier again (ofproto on the connectivity seq alone; the
 * Interface's link_state only on a new change sequence, which a PMD
 * thread must not bump: it is not atomic). */
void
netdev_vhost_carrier_changed(void)
{
    atomic_store_relaxed(&carrier_changed, true);
    seq_change(connectivity_seq_get());
}

static void
netdev_vhost_run(const struct netdev_class *class OVS_UNUSED)
{
    netdev_vhost_engine_run();
    if (OVS_UNLIKELY(atomic_exchange(&carrier_changed, false))) {
        struct shash devices = SHASH_INITIALIZER(&devices);
        struct shash_node *node;

        netdev_vhost_get_devices(&devices);
        SHASH_FOR_EACH (node, &devices) {
            struct netdev_vhost *dev = netdev_vhost_cast(node->data);

            ovs_mutex_lock(&dev->mutex);
            netdev_change_seq_changed(&dev->up);
            ovs_mutex_unlock(&dev->mutex);
            netdev_close(node->data);
        }
        shash_destroy(&devices);
    }
}

static void
netdev_vhost_wait(const struct netdev_class *class OVS_UNUSED)
{
    netdev_vhost_engine_wait();
}

/* Open_vSwitch other_config
 * =========================
 *
 * bridge.c hands other_config to dpdk_init() on every main-loop pass;
 * vswitchd/ routes that call here.  Keys, as OVS-DPDK reads them:
 *
 *   vhost-sock-dir: directory of dpdkvhostuser sockets, under the OVS run
 *     directory.  Read once, at the first pass, as OVS-DPDK does.
 *   vhost-iommu-support: vhost-user-client ports offer
 *     VIRTIO_F_ACCESS_PLATFORM (a guest's vIOMMU) when true.  Read once,
 *     at the first pass, and logged either way, as OVS-DPDK does; a later
 *     change is logged as needing a restart.  As in OVS-DPDK, server
 *     (dpdkvhostuser) ports never offer it.
 *   vhost-postcopy-support: vhost-user-client ports offer
 *     VHOST_USER_PROTOCOL_F_PAGEFAULT (postcopy live migration) when true.
 *     Read once, logged and, after a change, logged as needing a restart,
 *     as vhost-iommu-support.  Refused, as OVS-DPDK refuses it, when
 *     --mlockall locked every page (netdev_vhost_compat_memory_all_locked():
 *     always on OVS 3.1, only without MCL_ONFAULT from OVS 3.4 on).
 *   userspace-tso-enable: read by OVS itself (userspace-tso.c).
 *   vhost-sock-owner, vhost-sock-group, vhost-sock-mode: ours, owner
 *     (user name or uid), group (name or gid) and octal permissions of
 *     dpdkvhostuser sockets, applied to existing and new sockets.
 *   dpdk-init and the other dpdk-* keys: there is no DPDK here; said once.
 */

static void netdev_vhost_apply_sock_perms(const char *path);

static bool
parse_owner(const char *s, uid_t *uidp)
{
    struct passwd *pw = getpwnam(s);
    char *end;
    unsigned long v;

    if (pw) {
        *uidp = pw->pw_uid;
        return true;
    }
    v = strtoul(s, &end, 10);
    if (*s && !*end) {
        *uidp = v;
        return true;
    }
    return false;
}

static bool
parse_group(const char *s, gid_t *gidp)
{
    struct group *gr = getgrnam(s);
    char *end;
    unsigned long v;

    if (gr) {
        *gidp = gr->gr_gid;
        return true;
    }
    v = strtoul(s, &end, 10);
    if (*s && !*end) {
        *gidp = v;
        return true;
    }
    return false;
}

void
netdev_vhost_set_other_config(const struct smap *cfg)
{
    static bool sock_dir_done;
    static bool said_dpdk;
    static bool iommu_seen;     /* vhost-iommu-support as last logged. */
    static bool postcopy_seen;  /* vhost-postcopy-support, the same. */

    ovs_mutex_lock(&vhost_mutex);
    if (!sock_dir_done) {
        const char *sub = smap_get(cfg, "vhost-sock-dir");

        sock_dir_done = true;
        /* Before any port exists: bridge.c calls us before it reconfigures
         * the bridges, so every port sees the value read here. */
        vhost_iommu_enabled = smap_get_bool(cfg, "vhost-iommu-support",
                                            false);
        iommu_seen = vhost_iommu_enabled;
        VLOG_INFO("IOMMU support for vhost-user-client %s.",
                  vhost_iommu_enabled ? "enabled" : "disabled");
        /* OVS-DPDK's words (netdev-dpdk.c): memory locked page by page as
         * it is mapped is at odds with pages that arrive later. */
        vhost_postcopy_enabled = smap_get_bool(cfg, "vhost-postcopy-support",
                                               false);
        postcopy_seen = vhost_postcopy_enabled;
        if (vhost_postcopy_enabled
            && netdev_vhost_compat_memory_all_locked()) {
            VLOG_WARN("vhost-postcopy-support and mlockall are not "
                      "compatible.");
            vhost_postcopy_enabled = false;
        }
        VLOG_INFO("POSTCOPY support for vhost-user-client %s.",
                  vhost_postcopy_enabled ? "enabled" : "disabled");
        if (sub && strstr(sub, "..")) {
            VLOG_ERR("ignoring vhost-sock-dir=%s: it may not contain '..'",
                     sub);
            sub = NULL;
        }
        vhost_sock_dir = sub ? xasprintf("%s/%s", ovs_rundir(), sub)
                             : xstrdup(ovs_rundir());
        if (sub && mkdir(vhost_sock_dir, 0755) && errno != EEXIST) {
            VLOG_ERR("vhost-sock-dir %s: cannot create it (%s)",
                     vhost_sock_dir, ovs_strerror(errno));
        }
        VLOG_INFO("vhost-user sockets in %s", vhost_sock_dir);
    }

    bool iommu = smap_get_bool(cfg, "vhost-iommu-support", false);
    if (iommu != iommu_seen) {
        iommu_seen = iommu;
        VLOG_INFO("vhost-iommu-support changed to %s: IOMMU support for "
                  "vhost-user-client stays %s until ovs-vswitchd restarts",
                  iommu ? "true" : "false",
                  vhost_iommu_enabled ? "enabled" : "disabled");
    }
    bool postcopy = smap_get_bool(cfg, "vhost-postcopy-support", false);
    if (postcopy != postcopy_seen) {
        postcopy_seen = postcopy;
        VLOG_INFO("vhost-postcopy-support changed to %s: POSTCOPY support "
                  "for vhost-user-client stays %s until ovs-vswitchd "
                  "restarts", postcopy ? "true" : "false",
                  vhost_postcopy_enabled ? "enabled" : "disabled");
    }
    if (smap_get_bool(cfg, "dpdk-init", false) && !said_dpdk) {
        said_dpdk = true;
        VLOG_INFO("dpdk-init=true ignored: this ovs-vswitchd serves "
                  "vhost-user ports with ovs-vhost, without DPDK; the "
                  "dpdk-* keys have no effect");
    }

    uid_t uid = (uid_t) -1;
    gid_t gid = (gid_t) -1;
    int mode = -1;
    const char *s;

    s = smap_get(cfg, "vhost-sock-owner");
    if (s && !parse_owner(s, &uid)) {
        VLOG_WARN_RL(&rl, "vhost-sock-owner=%s: no such user", s);
    }
    s = smap_get(cfg, "vhost-sock-group");
    if (s && !parse_group(s, &gid)) {
        VLOG_WARN_RL(&rl, "vhost-sock-group=%s: no such group", s);
    }
    s = smap_get(cfg, "vhost-sock-mode");
    if (s) {
        char *end;
        long v = strtol(s, &end, 8);
        if (*s && !*end && v >= 0 && v <= 07777) {
            mode = v;
        } else {
            VLOG_WARN_RL(&rl, "vhost-sock-mode=%s: not an octal mode", s);
        }
    }

    if (uid != vhost_sock_uid || gid != vhost_sock_gid
        || mode != vhost_sock_mode) {
        struct netdev_vhost *dev;

        vhost_sock_uid = uid;
        vhost_sock_gid = gid;
        vhost_sock_mode = mode;
        LIST_FOR_EACH (dev, list_node, &vhost_ports) {
            if (!dev->client) {
                ovs_mutex_lock(&dev->mutex);
                if (dev->port_path) {
                    netdev_vhost_apply_sock_perms(dev->port_path);
                }
                ovs_mutex_unlock(&dev->mutex);
            }
        }
    }
    ovs_mutex_unlock(&vhost_mutex);
}

/* Gives server socket 'path' the configured owner, group and mode. */
static void
netdev_vhost_apply_sock_perms(const char *path)
    OVS_REQUIRES(vhost_mutex)
{
    if ((vhost_sock_uid != (uid_t) -1 || vhost_sock_gid != (gid_t) -1)
        && chown(path, vhost_sock_uid, vhost_sock_gid)) {
        VLOG_WARN_RL(&rl, "%s: chown failed (%s)", path, ovs_strerror(errno));
    }
    if (vhost_sock_mode >= 0 && chmod(path, vhost_sock_mode)) {
        VLOG_WARN_RL(&rl, "%s: chmod failed (%s)", path, ovs_strerror(errno));
    }
}

static char *
netdev_vhost_sock_path(const char *name)
{
    char *path;

    ovs_mutex_lock(&vhost_mutex);
    path = xasprintf("%s/%s", vhost_sock_dir ? vhost_sock_dir : ovs_rundir(),
                     name);
    ovs_mutex_unlock(&vhost_mutex);
    return path;
}

/* Engine callbacks
 * ================
 *
 * On the main thread, with the engine lock held. */

/* Maps every OVS txq onto an enabled guest queue pair: a txq whose number
 * is an enabled queue keeps it, the others share the enabled ones in turn.
 * With none enabled, txqs map to queue 0, whose enqueue then does nothing
 * until the guest enables it. */
static void
netdev_vhost_remap_txqs(struct netdev_vhost *dev)
    OVS_REQUIRES(dev->mutex)
{
    int enabled[VHOST_MAX_QUEUE_PAIRS];
    int n_enabled = 0, n_txq = MAX(dev->up.n_txq, 1);

    for (int q = 0; q < MIN(dev->guest_n_qp, VHOST_MAX_QUEUE_PAIRS); q++) {
        if (dev->guest_rx_enabled[q]) {
            enabled[n_enabled++] = q;
        }
    }
    if (!n_enabled) {
        enabled[n_enabled++] = 0;
    }

    for (int i = 0, k = 0; i < MIN(n_txq, NETDEV_VHOST_MAX_TXQ); i++) {
        int q;
        if (i < VHOST_MAX_QUEUE_PAIRS && i < dev->guest_n_qp
            && dev->guest_rx_enabled[i]) {
            q = i;
        } else {
            q = enabled[k];
            k = (k + 1) % n_enabled;
        }
        atomic_store_relaxed(&dev->tx_map[i], q);
    }
}

/* Recomputes 'running' from the guest, the configuration and the admin
 * state; bumps the change sequence (PMDs re-read rxq_enabled, the bridge
 * re-reads carrier) if anything changed. */
static void
netdev_vhost_update_running(struct netdev_vhost *dev)
    OVS_REQUIRES(dev->mutex)
{
    bool running = dev->device_ready && (dev->flags & NETDEV_UP)
                   && dev->up.n_rxq == MAX(dev->guest_n_qp, 1);
    bool old;

    atomic_read_relaxed(&dev->running, &old);
    if (running != old) {
        atomic_store_relaxed(&dev->running, running);
    }
    netdev_change_seq_changed(&dev->up);
}

static void
netdev_vhost_cb_connected(struct vhost_port *port OVS_UNUSED, void *dev_)
{
    struct netdev_vhost *dev = dev_;

    COVERAGE_INC(vhost_connect);
    ovs_mutex_lock(&dev->mutex);
    dev->connected = true;
    VLOG_INFO("vHost User device '%s': frontend connected on %s",
              netdev_get_name(&dev->up), dev->port_path);
    netdev_change_seq_changed(&dev->up);
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_device_ready(struct vhost_port *port, void *dev_)
{
    struct netdev_vhost *dev = dev_;
    struct vhost_port_info info;

    COVERAGE_INC(vhost_device_ready);
    vhost_port_get_info(port, &info);

    ovs_mutex_lock(&dev->mutex);
    int n_qp = MIN(MAX((info.n_queues + 1) / 2, 1), VHOST_MAX_QUEUE_PAIRS);
    dev->device_ready = true;
    /* The carrier waits for the first burst: netdev_vhost_learn_hold__(). */
    atomic_store_relaxed(&dev->learn_hold_end,
                         time_msec() + NETDEV_VHOST_LEARN_HOLD_MS);
    atomic_store_relaxed(&dev->learn_hold, 1);
    dev->guest_features = info.features;
    dev->guest_n_qp = n_qp;
    if (dev->requested_n_rxq != n_qp) {
        dev->requested_n_rxq = n_qp;
    }
    /* Queue states and offloads may have moved: reconfigure() applies
     * them with the PMDs off this port. */
    netdev_request_reconfigure(&dev->up);
    dev->carrier_resets++;
    VLOG_INFO("vHost User device '%s' has been added on numa node %d: "
              "%d queue pair%s, %s ring",
              netdev_get_name(&dev->up), info.numa_node, n_qp,
              n_qp == 1 ? "" : "s",
              info.features & (UINT64_C(1) << 34) ? "packed" : "split");
    if (info.mtu && info.mtu != dev->requested_mtu) {
        VLOG_INFO("vHost User device '%s': the guest's MTU is %u",
                  netdev_get_name(&dev->up), info.mtu);
    }
    netdev_vhost_update_running(dev);
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_queue_state(struct vhost_port *port OVS_UNUSED,
                            unsigned int qid, bool enabled, void *dev_)
{
    struct netdev_vhost *dev = dev_;
    unsigned int qp = qid / 2;

    if (qp >= VHOST_MAX_QUEUE_PAIRS) {
        return;
    }
    COVERAGE_INC(vhost_queue_state);
    ovs_mutex_lock(&dev->mutex);
    if (qid & 1) {
        /* Guest TX ring: our rxq 'qp'. */
        atomic_store_relaxed(&dev->rxq_enabled[qp], enabled);
    } else {
        dev->guest_rx_enabled[qp] = enabled;
        netdev_vhost_remap_txqs(dev);
    }
    if ((int) qp >= dev->guest_n_qp && enabled) {
        dev->guest_n_qp = qp + 1;
        dev->requested_n_rxq = qp + 1;
        netdev_request_reconfigure(&dev->up);
    }
    VLOG_INFO("State of queue %u ( %s_qid %u ) of vhost device '%s' "
              "changed to '%s'", qid, qid & 1 ? "rx" : "tx", qp,
              netdev_get_name(&dev->up), enabled ? "enabled" : "disabled");
    netdev_change_seq_changed(&dev->up);
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_device_gone(struct vhost_port *port OVS_UNUSED, void *dev_)
{
    struct netdev_vhost *dev = dev_;

    ovs_mutex_lock(&dev->mutex);
    dev->device_ready = false;
    for (int q = 0; q < VHOST_MAX_QUEUE_PAIRS; q++) {
        atomic_store_relaxed(&dev->rxq_enabled[q], false);
        dev->guest_rx_enabled[q] = false;
    }
    netdev_vhost_remap_txqs(dev);
    netdev_vhost_update_running(dev);
    dev->carrier_resets++;
    VLOG_INFO("vHost User device '%s' has been removed",
              netdev_get_name(&dev->up));
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_disconnected(struct vhost_port *port OVS_UNUSED, void *dev_)
{
    struct netdev_vhost *dev = dev_;

    COVERAGE_INC(vhost_disconnect);
    ovs_mutex_lock(&dev->mutex);
    dev->connected = false;
    VLOG_INFO("vHost User device '%s': frontend disconnected%s",
              netdev_get_name(&dev->up),
              dev->client ? ", reconnecting" : "");
    netdev_change_seq_changed(&dev->up);
    ovs_mutex_unlock(&dev->mutex);
}

static const struct vhost_port_callbacks netdev_vhost_callbacks = {
    .connected = netdev_vhost_cb_connected,
    .device_ready = netdev_vhost_cb_device_ready,
    .queue_state = netdev_vhost_cb_queue_state,
    .device_gone = netdev_vhost_cb_device_gone,
    .disconnected = netdev_vhost_cb_disconnected,
};

/* Construction and configuration
 * ==============================
 *
 * The engine port is (re)created by reconfigure(), on the main thread,
 * when the socket path or the offered features change. */

static struct netdev *
netdev_vhost_alloc(void)
{
    struct netdev_vhost *dev = xzalloc_cacheline(sizeof *dev);
    return &dev->up;
}

static void
netdev_vhost_dealloc(struct netdev *netdev)
{
    free_cacheline(netdev_vhost_cast(netdev));
}


static int
netdev_vhost_common_construct(struct netdev *netdev, bool client)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    netdev_vhost_cache_init();
    ovs_mutex_init(&dev->mutex);
    dev->client = client;
    dev->requested_n_rxq = 1;
    dev->requested_n_txq = 1;
    dev->requested_mtu = ETH_PAYLOAD_MAX;
    dev->flags = NETDEV_UP | NETDEV_PROMISC;
    dev->hwaddr = eth_addr_zero;
    netdev->n_rxq = 1;
    netdev->n_txq = 1;
    atomic_init(&dev->running, false);
    atomic_init(&dev->max_frame, ETH_PAYLOAD_MAX + ETH_HEADER_LEN
                                 + VLAN_HEADER_LEN);
    atomic_init(&dev->tx_retries_max, NETDEV_VHOST_TX_RETRIES_DEF);
    atomic_init(&dev->tx_offloads, false);
    for (int q = 0; q < VHOST_MAX_QUEUE_PAIRS; q++) {
        atomic_init(&dev->rxq_enabled[q], false);
        atomic_flag_clear(&dev->txlocks[q].busy);
    }
    for (int i = 0; i < NETDEV_VHOST_MAX_TXQ; i++) {
        atomic_init(&dev->tx_map[i], 0);
    }

    ovs_mutex_lock(&vhost_mutex);
    ovs_list_push_back(&vhost_ports, &dev->list_node);
    ovs_mutex_unlock(&vhost_mutex);

    netdev_request_reconfigure(netdev);
    return 0;
}

/* Returns the path of the ring position log of the port named 'name', in
 * the run directory, for the caller to free.  A client port's name may
 * hold any character, as OVS-DPDK allows: all but [A-Za-z0-9._-] are
 * written as %XX, so that no name leaves the directory or names another
 * port's file. */
static char *
netdev_vhost_state_path(const char *name)
{
    struct ds path = DS_EMPTY_INITIALIZER;

    ds_put_format(&path, "%s/ovs-vhost-", ovs_rundir());
    for (const char *p = name; *p; p++) {
        unsigned char c = *p;

        if (isalnum(c) || c == '.' || c == '_' || c == '-') {
            ds_put_char(&path, c);
        } else {
            ds_put_format(&path, "%%%02X", c);
        }
    }
    ds_put_cstr(&path, ".rings");
    return ds_steal_cstr(&path);
}

static int
netdev_vhost_construct(struct netdev *netdev)
{
    const char *name = netdev_get_name(netdev);

    /* The name becomes a file name in vhost-sock-dir: '/' or '\' would
     * leave the directory. */
    if (strchr(name, '/') || strchr(name, '\\')) {
        VLOG_ERR("\"%s\" is not a valid name for a vhost-user port. "
                 "A valid name must not include '/' or '\\'", name);
        return EINVAL;
    }

    netdev_vhost_common_construct(netdev, false);

    /* Lock order: vhost_mutex (in netdev_vhost_sock_path()), then a port's
     * mutex, never the other way. */
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    char *path = netdev_vhost_sock_path(name);
    ovs_mutex_lock(&dev->mutex);
    dev->path = path;
    ovs_mutex_unlock(&dev->mutex);
    VLOG_WARN_ONCE("dpdkvhostuser ports are considered deprecated;  "
                   "please migrate to dpdkvhostuserclient ports.");
    return 0;
}

static int
netdev_vhost_client_construct(struct netdev *netdev)
{
    return netdev_vhost_common_construct(netdev, true);
}

/* Destroys 'dev''s engine port, if any.  Main thread, 'dev->mutex' not
 * held: the engine may call back while the port goes. */
static void
netdev_vhost_destroy_port(struct netdev_vhost *dev)
    OVS_EXCLUDED(dev->mutex)
{
    struct vhost_port *port = dev->port;
    char *path;

    if (!port) {
        return;
    }
    vhost_port_destroy(port);

    ovs_mutex_lock(&dev->mutex);
    dev->port = NULL;
    path = dev->port_path;
    dev->port_path = NULL;
    dev->connected = false;
    dev->device_ready = false;
    for (int q = 0; q < VHOST_MAX_QUEUE_PAIRS; q++) {
        atomic_store_relaxed(&dev->rxq_enabled[q], false);
        dev->guest_rx_enabled[q] = false;
    }
    netdev_vhost_update_running(dev);
    ovs_mutex_unlock(&dev->mutex);

    if (path && !dev->client) {
        fatal_signal_remove_file_to_unlink(path);
    }
    free(path);
}

static void
netdev_vhost_destruct(struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    netdev_vhost_destroy_port(dev);

    ovs_mutex_lock(&vhost_mutex);
    ovs_list_remove(&dev->list_node);
    ovs_mutex_unlock(&vhost_mutex);

    ovs_mutex_lock(&dev->mutex);
    free(dev->path);
    dev->path = NULL;
    ovsrcu_postpone(free, ovsrcu_get_protected(struct netdev_vhost_policer *,
                                               &dev->ingress_policer));
    ovsrcu_postpone(free, ovsrcu_get_protected(struct netdev_vhost_policer *,
                                               &dev->egress_policer));
    ovs_mutex_unlock(&dev->mutex);
    ovs_mutex_destroy(&dev->mutex);
}

static int
netdev_vhost_get_config(const struct netdev *netdev, struct smap *args)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    int retries;

    ovs_mutex_lock(&dev->mutex);
    if (dev->client && dev->path) {
        smap_add(args, "vhost-server-path", dev->path);
    }
    atomic_read_relaxed(&dev->tx_retries_max, &retries);
    if (retries != NETDEV_VHOST_TX_RETRIES_DEF) {
        smap_add_format(args, "tx-retries-max", "%d", retries);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_set_config(struct netdev *netdev, const struct smap *args,
                        char **errp OVS_UNUSED)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    int retries, cur;

    ovs_mutex_lock(&dev->mutex);
    if (dev->client) {
        const char *path = smap_get(args, "vhost-server-path");

        if (!nullable_string_is_equal(path, dev->path)) {
            free(dev->path);
            dev->path = nullable_xstrdup(path);
            netdev_request_reconfigure(netdev);
        }
    }

    retries = smap_get_int(args, "tx-retries-max",
                           NETDEV_VHOST_TX_RETRIES_DEF);
    if (retries < NETDEV_VHOST_TX_RETRIES_MIN
        || retries > NETDEV_VHOST_TX_RETRIES_MAX) {
        VLOG_WARN("%s: tx-retries-max=%d out of range %d..%d, using %d",
                  netdev_get_name(netdev), retries,
                  NETDEV_VHOST_TX_RETRIES_MIN, NETDEV_VHOST_TX_RETRIES_MAX,
                  NETDEV_VHOST_TX_RETRIES_DEF);
        retries = NETDEV_VHOST_TX_RETRIES_DEF;
    }
    atomic_read_relaxed(&dev->tx_retries_max, &cur);
    if (retries != cur) {
        atomic_store_relaxed(&dev->tx_retries_max, retries);
        VLOG_INFO("Max Tx retries for vhost device '%s' set to %d",
                  netdev_get_name(netdev), retries);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

/* The virtio features to offer: the engine's defaults, plus checksum and
 * segmentation offloads when userspace TSO is on (OVS 3.1's userspace
 * datapath cannot take partial checksums otherwise), plus
 * VIRTIO_F_ACCESS_PLATFORM when 'iommu' (vhost-iommu-support, client
 * ports only, as in OVS-DPDK). */
static uint64_t
netdev_vhost_features(bool tso, bool iommu)
{
    /* The engine's defaults include the packed ring, for frontends that
     * ask for it (QEMU's packed=on, virtio-user's packed_vq=1), and
     * VIRTIO_F_IN_ORDER, as DPDK's vhost library offers them. */
    uint64_t features = vhost_default_features();

    if (tso) {
        features |= vhost_offload_features();
    }
    if (iommu) {
        /* VIRTIO_F_ACCESS_PLATFORM, VIRTIO_F_IOMMU_PLATFORM before VIRTIO
         * 1.1 (lib/virtio.h is the engine's): the frontend then sends the
         * guest's IOVA translations (IOTLB_MSG) and the engine asks for
         * the ones it misses over the backend channel.  Without it QEMU
         * refuses a NIC with iommu_platform=on. */
        features |= UINT64_C(1) << 33;
    }
    return features;
}

/* Creates the engine port for 'dev->path', if it has none or its path or
 * features changed.  Main thread. */
static int
netdev_vhost_setup_port(struct netdev_vhost *dev)
    OVS_EXCLUDED(dev->mutex)
{
    bool tso = userspace_tso_enabled();
    bool iommu, postcopy;
    char *path;

    ovs_mutex_lock(&vhost_mutex);
    iommu = dev->client && vhost_iommu_enabled;
    postcopy = dev->client && vhost_postcopy_enabled;
    ovs_mutex_unlock(&vhost_mutex);

    ovs_mutex_lock(&dev->mutex);
    bool same = dev->port && nullable_string_is_equal(dev->path,
                                                      dev->port_path)
                && dev->tso_offered == tso;
    path = nullable_xstrdup(dev->path);
    ovs_mutex_unlock(&dev->mutex);
    if (same) {
        free(path);
        return 0;
    }

    netdev_vhost_destroy_port(dev);
    if (!path) {
        return 0;               /* Client without vhost-server-path yet. */
    }

    struct vhost_port_options opts;
    struct vhost_port *port;

    vhost_port_options_init(&opts);
    opts.name = netdev_get_name(&dev->up);
    opts.path = path;
    opts.mode = dev->client ? VHOST_PORT_CLIENT : VHOST_PORT_SERVER;
    opts.features = netdev_vhost_features(tso, iommu);
    if (postcopy) {
        /* VHOST_USER_PROTOCOL_F_PAGEFAULT (bit 8), as OVS-DPDK's
         * RTE_VHOST_USER_POSTCOPY_SUPPORT offers it, client ports only:
         * the engine then takes POSTCOPY_ADVISE, _LISTEN and _END, and
         * a migration's destination may run the guest before its memory
         * has arrived (lib/vhost-postcopy.h).  Without it QEMU refuses
         * postcopy-ram ("vhost-user backend not capable of postcopy"). */
        opts.protocol_features |= UINT64_C(1) << 8;
    }
    opts.max_queue_pairs = VHOST_MAX_QUEUE_PAIRS;
    opts.cb = &netdev_vhost_callbacks;
    opts.aux = dev;
    /* Packed rings' positions, for the next ovs-vswitchd after a crash:
     * QEMU does not keep them (lib/virtq-poslog.h). */
    char *state_path = netdev_vhost_state_path(netdev_get_name(&dev->up));
    opts.state_path = state_path;

    ovs_mutex_lock(&dev->mutex);
    dev->port_path = path;
    dev->tso_offered = tso;
    ovs_mutex_unlock(&dev->mutex);

    int error = vhost_port_create(netdev_vhost_engine_get(), &opts, &port);
    free(state_path);
    if (error) {
        VLOG_ERR("vhost-user %s setup failure for %s: %s",
                 dev->client ? "client" : "socket", path,
                 ovs_strerror(error));
        ovs_mutex_lock(&dev->mutex);
        dev->port_path = NULL;
        ovs_mutex_unlock(&dev->mutex);
        free(path);
        return error;
    }
    dev->port = port;
    /* No config space (the engine's default protocol features leave out
     * CONFIG), as OVS-DPDK's vhost ports have none: QEMU warns of a
     * backend that offers one to virtio-net, and gives the guest its own
     * host_mtu.  So mtu_request bounds what goes to the guest, and the
     * guest learns no MTU from us. */

    if (!dev->client) {
        fatal_signal_add_file_to_unlink(path);
        ovs_mutex_lock(&vhost_mutex);
        netdev_vhost_apply_sock_perms(path);
        ovs_mutex_unlock(&vhost_mutex);
        VLOG_INFO("Socket %s created for vhost-user port %s",
                  path, netdev_get_name(&dev->up));
    } else {
        VLOG_INFO("vHost User client port %s connecting to %s",
                  netdev_get_name(&dev->up), path);
    }
    return 0;
}

static int
netdev_vhost_reconfigure(struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    int error = netdev_vhost_setup_port(dev);

    ovs_mutex_lock(&dev->mutex);
    /* As many txqs as OVS's threads want, and at least one per guest queue
     * pair, as OVS-DPDK's vhost ports have: with tx-steering=hash, OVS
     * spreads flows over all of a port's txqs, so that a 4-queue guest
     * behind 1 PMD thread gets traffic on all 4 of its RX queues, not on
     * 2.  (More txqs than threads is OVS's static mode: one txq each.) */
    netdev->n_txq = MIN(MAX(MAX(dev->requested_n_txq, dev->guest_n_qp), 1),
                        NETDEV_VHOST_MAX_TXQ);
    netdev->n_rxq = MAX(dev->requested_n_rxq, 1);
    atomic_store_relaxed(&dev->max_frame, dev->requested_mtu + ETH_HEADER_LEN
                                          + VLAN_HEADER_LEN);

    /* Offloads the guest can take on its RX ring. */
    uint64_t f = dev->guest_features;
    bool csum = dev->device_ready && dev->tso_offered
                && (f & (UINT64_C(1) << 1));            /* GUEST_CSUM */
    bool tso = csum && (f & (UINT64_C(1) << 7))         /* GUEST_TSO4 */
               && (f & (UINT64_C(1) << 8));             /* GUEST_TSO6 */
    netdev->ol_flags = 0;
    if (csum) {
        netdev->ol_flags |= NETDEV_TX_OFFLOAD_TCP_CKSUM
                            | NETDEV_TX_OFFLOAD_UDP_CKSUM;
    }
    if (tso) {
        netdev->ol_flags |= NETDEV_TX_OFFLOAD_TCP_TSO;
    }
    atomic_store_relaxed(&dev->tx_offloads, csum);

    netdev_vhost_remap_txqs(dev);
    netdev_vhost_update_running(dev);
    ovs_mutex_unlock(&dev->mutex);
    return error;
}

static int
netdev_vhost_set_tx_multiq(struct netdev *netdev, unsigned int n_txq)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (dev->requested_n_txq != (int) n_txq) {
        dev->requested_n_txq = n_txq;
        netdev_request_reconfigure(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_numa_id(const struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    struct vhost_port_info info;

    if (dev->port && !vhost_port_get_info(dev->port, &info)
        && info.numa_node >= 0) {
        return info.numa_node;
    }
    return 0;
}

static int
netdev_vhost_set_etheraddr(struct netdev *netdev, const struct eth_addr mac)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (!eth_addr_equals(dev->hwaddr, mac)) {
        dev->hwaddr = mac;
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_etheraddr(const struct netdev *netdev, struct eth_addr *mac)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *mac = dev->hwaddr;
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_mtu(const struct netdev *netdev, int *mtup)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *mtup = dev->requested_mtu;
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_set_mtu(struct netdev *netdev, int mtu)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    if (mtu < NETDEV_VHOST_MTU_MIN || mtu > NETDEV_VHOST_MTU_MAX) {
        VLOG_WARN("%s: unsupported MTU %d: must be in %d..%d",
                  netdev_get_name(netdev), mtu, NETDEV_VHOST_MTU_MIN,
                  NETDEV_VHOST_MTU_MAX);
        return EINVAL;
    }
    ovs_mutex_lock(&dev->mutex);
    bool changed = dev->requested_mtu != mtu;
    if (changed) {
        dev->requested_mtu = mtu;
        atomic_store_relaxed(&dev->max_frame,
                             mtu + ETH_HEADER_LEN + VLAN_HEADER_LEN);
        netdev_change_seq_changed(netdev);
        VLOG_INFO("%s: MTU set to %d", netdev_get_name(netdev), mtu);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_carrier(const struct netdev *netdev, bool *carrier)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    int hold;
    long long int end;

    ovs_mutex_lock(&dev->mutex);
    atomic_read_relaxed(&dev->learn_hold, &hold);
    atomic_read_relaxed(&dev->learn_hold_end, &end);
    /* Down until the first burst has crossed the datapath
     * (netdev_vhost_learn_hold__()), or the hold has run out. */
    *carrier = dev->device_ready && (!hold || time_msec() >= end);
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static long long int
netdev_vhost_get_carrier_resets(const struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    long long int n;

    ovs_mutex_lock(&dev->mutex);
    n = dev->carrier_resets;
    ovs_mutex_unlock(&dev->mutex);
    return n;
}

static int
netdev_vhost_update_flags(struct netdev *netdev, enum netdev_flags off,
                          enum netdev_flags on, enum netdev_flags *old_flagsp)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    if ((off | on) & ~(NETDEV_UP | NETDEV_PROMISC)) {
        return EINVAL;
    }
    ovs_mutex_lock(&dev->mutex);
    *old_flagsp = dev->flags;
    dev->flags = (dev->flags & ~off) | on;
    if (dev->flags != *old_flagsp) {
        netdev_vhost_update_running(dev);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

/* Policing and QoS
 * ================
 *
 * As OVS-DPDK: ingress policing on what the guest sends, and one QoS type,
 * "egress-policer", on what it receives.  Dropped packets are counted in
 * ovs_rx_qos_drops and ovs_tx_qos_drops. */

static struct netdev_vhost_policer *
netdev_vhost_policer_create(uint64_t bits_per_ms, uint64_t burst_bits)
{
    struct netdev_vhost_policer *p = xzalloc(sizeof *p);

    atomic_flag_clear(&p->busy);
    token_bucket_init(&p->tb, MIN(bits_per_ms, UINT_MAX),
                      MIN(burst_bits, UINT_MAX));
    return p;
}

static int
netdev_vhost_set_policing(struct netdev *netdev, uint32_t rate,
                          uint32_t burst, uint32_t kpkts_rate,
                          uint32_t kpkts_burst OVS_UNUSED)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    if (kpkts_rate) {
        VLOG_WARN_RL(&rl, "%s: packet-rate ingress policing is not "
                     "supported", netdev_get_name(netdev));
        return EOPNOTSUPP;
    }
    /* OVS-DPDK's defaults: no rate, no policing; no burst, 8000 kbit. */
    burst = !rate ? 0 : !burst ? 8000 : burst;

    ovs_mutex_lock(&dev->mutex);
    if (dev->policer_rate != rate || dev->policer_burst != burst) {
        struct netdev_vhost_policer *old
            = ovsrcu_get_protected(struct netdev_vhost_policer *,
                                   &dev->ingress_policer);
        ovsrcu_set(&dev->ingress_policer,
                   rate ? netdev_vhost_policer_create(rate,
                                                      (uint64_t) burst * 1000)
                        : NULL);
        ovsrcu_postpone(free, old);
        dev->policer_rate = rate;
        dev->policer_burst = burst;
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_qos_types(const struct netdev *netdev OVS_UNUSED,
                           struct sset *types)
{
    sset_add(types, "egress-policer");
    return 0;
}

static int
netdev_vhost_get_qos(const struct netdev *netdev, const char **typep,
                     struct smap *details)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (dev->qos_cir) {
        *typep = "egress-policer";
        smap_add_format(details, "cir", "%"PRIu64, dev->qos_cir);
        smap_add_format(details, "cbs", "%"PRIu64, dev->qos_cbs);
    } else {
        *typep = "";
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_set_qos(struct netdev *netdev, const char *type,
                     const struct smap *details)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    uint64_t cir = 0, cbs = 0;

    if (type && type[0]) {
        if (strcmp(type, "egress-policer")) {
            VLOG_WARN_RL(&rl, "%s: QoS type %s is not supported (only "
                         "egress-policer)", netdev_get_name(netdev), type);
            return EOPNOTSUPP;
        }
        cir = smap_get_ullong(details, "cir", 0);
        cbs = smap_get_ullong(details, "cbs", 0);
        if (!cir || !cbs) {
            VLOG_WARN_RL(&rl, "%s: egress-policer needs cir and cbs",
                         netdev_get_name(netdev));
            return EINVAL;
        }
    }

    ovs_mutex_lock(&dev->mutex);
    if (dev->qos_cir != cir || dev->qos_cbs != cbs) {
        struct netdev_vhost_policer *old
            = ovsrcu_get_protected(struct netdev_vhost_policer *,
                                   &dev->egress_policer);
        /* cir bytes/s is cir * 8 / 1000 bits per ms. */
        ovsrcu_set(&dev->egress_policer,
                   cir ? netdev_vhost_policer_create(cir * 8 / 1000,
                                                     cbs * 8)
                       : NULL);
        ovsrcu_postpone(free, old);
        dev->qos_cir = cir;
        dev->qos_cbs = cbs;
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

/* The classes
 * ===========
 *
 * Type names as OVS-DPDK's, so that Neutron, OVN and ovs-vsctl scripts see
 * the types they know in iface_types. */

#define NETDEV_VHOST_CLASS_COMMON                       \
    .is_pmd = true,                                     \
    .alloc = netdev_vhost_alloc,                        \
    .destruct = netdev_vhost_destruct,                  \
    .dealloc = netdev_vhost_dealloc,                    \
    .get_config = netdev_vhost_get_config,              \
    .set_config = netdev_vhost_set_config,              \
    .get_numa_id = netdev_vhost_get_numa_id,            \
    .set_tx_multiq = netdev_vhost_set_tx_multiq,        \
    .send = netdev_vhost_send,                          \
    .set_etheraddr = netdev_vhost_set_etheraddr,        \
    .get_etheraddr = netdev_vhost_get_etheraddr,        \
    .get_mtu = netdev_vhost_get_mtu,                    \
    .set_mtu = netdev_vhost_set_mtu,                    \
    .get_carrier = netdev_vhost_get_carrier,            \
    .get_carrier_resets = netdev_vhost_get_carrier_resets, \
    .get_stats = netdev_vhost_get_stats,                \
    .get_custom_stats = netdev_vhost_get_custom_stats,  \
    .get_status = netdev_vhost_get_status,              \
    .update_flags = netdev_vhost_update_flags,          \
    .set_policing = netdev_vhost_set_policing,          \
    .get_qos_types = netdev_vhost_get_qos_types,        \
    .get_qos = netdev_vhost_get_qos,                    \
    .set_qos = netdev_vhost_set_qos,                    \
    .reconfigure = netdev_vhost_reconfigure,            \
    .rxq_alloc = netdev_vhost_rxq_alloc,                \
    .rxq_construct = netdev_vhost_rxq_construct,        \
    .rxq_destruct = netdev_vhost_rxq_destruct,          \
    .rxq_dealloc = netdev_vhost_rxq_dealloc,            \
    .rxq_enabled = netdev_vhost_rxq_enabled,            \
    .rxq_recv = netdev_vhost_rxq_recv

/* One engine serves both classes: only this one drives it (netdev_run()
 * calls every registered class's hook, so two would poll it twice). */
static const struct netdev_class netdev_vhost_class = {
    .type = "dpdkvhostuser",
    .run = netdev_vhost_run,
    .wait = netdev_vhost_wait,
    .construct = netdev_vhost_construct,
    NETDEV_VHOST_CLASS_COMMON,
};

static const struct netdev_class netdev_vhost_client_class = {
    .type = "dpdkvhostuserclient",
    .construct = netdev_vhost_client_construct,
    NETDEV_VHOST_CLASS_COMMON,
};

/* Registers both classes before main().  netdev_register_provider() works
 * on static state only (OVS 3.1), and nothing here starts a thread or opens
 * a file: the engine is created by the first port, after daemonizing. */
OVS_CONSTRUCTOR(netdev_vhost_register)
{
    netdev_register_provider(&netdev_vhost_class);
    netdev_register_provider(&netdev_vhost_client_class);
    netdev_vhost_appctl_register();
}
