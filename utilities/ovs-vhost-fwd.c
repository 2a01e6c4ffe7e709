/*
 * ovs-vhost-fwd: a standalone program that embeds the ovs-vhost engine.
 *
 * It serves one or more vhost-user ports, in server or client mode, and
 * prints each port's device state as it changes: connection, negotiated
 * features, queues, guest memory.  It drives the engine from its own
 * poll() loop, through vhost_engine_get_fd() and vhost_engine_run(), the
 * way an embedder with a main loop of its own does.
 *
 * It is the example of how to embed the engine; the data path will make it
 * a packet forwarder.
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"

#define FWD_MAX_PORTS 64

struct fwd_port {
    struct vhost_port *port;
    char name[16];
};

static struct fwd_port ports[FWD_MAX_PORTS];
static int n_ports;
static volatile sig_atomic_t exiting;
static volatile sig_atomic_t dump_requested;

static void
fwd_usage(void)
{
    printf("\
ovs-vhost-fwd: serve vhost-user ports with the ovs-vhost engine\n\
usage: ovs-vhost-fwd [OPTIONS] (--server PATH | --client PATH)...\n\
\n\
Ports (one per option, named p0, p1, ... in order):\n\
  -s, --server=PATH      listen for a frontend at PATH\n\
  -c, --client=PATH      connect to a frontend listening at PATH\n\
\n\
Options:\n\
  -q, --queues=N         offer N queue pairs (default 1, at most %d)\n\
  -f, --features=HEX     offer these virtio features (default %#"PRIx64")\n\
      --reconnect-ms=MIN[,MAX]  client reconnect backoff (default 100,2000)\n\
  -i, --stats-interval=S also print every port's state every S seconds\n\
  -v, --verbose          log engine debug messages\n\
  -h, --help             show this help\n\
\n\
SIGUSR1 prints every port's state; SIGINT or SIGTERM exits.\n",
           VHOST_MAX_QUEUE_PAIRS, vhost_default_features());
}

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

static void
fwd_connected(struct vhost_port *port, void *aux)
{
    printf("%s: connected\n", fwd_name(port));
}

static void
fwd_device_ready(struct vhost_port *port, void *aux)
{
    struct vhost_port_info info;

    vhost_port_get_info(port, &info);
    printf("%s: device ready features=%#"PRIx64" queue_pairs=%u\n",
           fwd_name(port), info.features, info.n_enabled_queues / 2);
    fwd_print_state(port);
}

static void
fwd_queue_state(struct vhost_port *port, unsigned int qid, bool enabled,
                void *aux)
{
    printf("%s: queue %u %s\n", fwd_name(port), qid,
           enabled ? "enabled" : "disabled");
}

static void
fwd_device_gone(struct vhost_port *port, void *aux)
{
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

int
main(int argc, char *argv[])
{
    static const struct option long_options[] = {
        { "server", required_argument, NULL, 's' },
        { "client", required_argument, NULL, 'c' },
        { "queues", required_argument, NULL, 'q' },
        { "features", required_argument, NULL, 'f' },
        { "reconnect-ms", required_argument, NULL, 'r' },
        { "stats-interval", required_argument, NULL, 'i' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct {
        const char *path;
        enum vhost_port_mode mode;
    } specs[FWD_MAX_PORTS];
    struct vhost_port_options opts;
    struct vhost_engine *engine;
    unsigned long stats_interval = 0;
    int n_specs = 0;
    int c;

    setvbuf(stdout, NULL, _IOLBF, 0);
    vhost_port_options_init(&opts);
    while ((c = getopt_long(argc, argv, "s:c:q:f:i:vh", long_options,
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
            opts.features = strtoull(optarg, NULL, 16);
            break;
        case 'r': {
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

    vhost_log_set_handler(fwd_log, NULL);
    signal(SIGINT, fwd_signal);
    signal(SIGTERM, fwd_signal);
    signal(SIGUSR1, fwd_signal);
    signal(SIGPIPE, SIG_IGN);

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
        opts.name = p->name;
        opts.path = specs[i].path;
        opts.mode = specs[i].mode;
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

    /* The embedder's main loop: poll the engine's fd with its timeout. */
    long long int next_stats = stats_interval ? (long long) stats_interval
                                                * 1000 : -1;
    long long int waited = 0;
    while (!exiting) {
        struct pollfd pfd = {
            .fd = vhost_engine_get_fd(engine),
            .events = POLLIN,
        };
        int timeout = vhost_engine_next_timeout(engine);
        if (timeout < 0 || timeout > 1000) {
            timeout = 1000;
        }
        if (poll(&pfd, 1, timeout) < 0 && errno != EINTR) {
            perror("poll");
            break;
        }
        vhost_engine_run(engine, 0);

        waited += timeout;
        if (dump_requested || (next_stats > 0 && waited >= next_stats)) {
            dump_requested = 0;
            waited = 0;
            for (int i = 0; i < n_ports; i++) {
                fwd_print_state(ports[i].port);
            }
        }
    }

    printf("exiting\n");
    vhost_engine_destroy(engine);
    return EXIT_SUCCESS;
}
