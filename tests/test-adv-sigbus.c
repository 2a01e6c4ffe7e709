/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Adversarial tests: a frontend that shrinks an fd it shared after the
 * engine mapped it (issue 19, finding 4), run from tests/adversarial.at.
 *
 * The frontend ftruncate()s a guest memory memfd after SET_MEM_TABLE, or
 * the dirty log's after SET_LOG_BASE, and the next burst touches the lost
 * pages.  Without the guard of lib/guest-mem-guard.c the process dies of
 * SIGBUS.  With it, each test checks that the process lives on, that port
 * A's device breaks (no more bursts, device_gone, the frontend
 * disconnected), that the faults are counted and logged naming the port
 * and the region, that port B keeps working, that a new frontend on port
 * A gets a working device, and that no fd or mapping is left (the zero
 * pages go with the guarded mapping).  A sealed memfd is taken as it is,
 * and cannot be shrunk.  A SIGBUS that is not in a guarded mapping still
 * reaches the handler that was there before, or the default action.
 *
 * The data path runs on the test's own thread, so the SIGBUS is raised
 * there, as it would be on an OVS PMD thread.  The frontend model's own
 * mappings are not guarded: after a truncation the test never touches the
 * lost pages from the frontend side.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "guest-mem.h"
#include "guest-mem-guard.h"
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "virtio.h"

#define SB_QUEUE_SIZE 256
#define SB_ARENA_SIZE (256u << 10)
#define SB_LOG_SIZE 4096        /* Covers 128 MiB of guest memory. */
#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)

/* Engine log lines about guarded faults, captured from any thread. */
static pthread_mutex_t sb_log_mutex = PTHREAD_MUTEX_INITIALIZER;
static char sb_log_last[512];
static unsigned int sb_log_n;

static void
sb_log_handler(enum vhost_log_level level, const char *msg, void *aux)
{
    fprintf(stderr, "ovs-vhost|%s|%s\n", vhost_log_level_to_string(level),
            msg);
    if (strstr(msg, "shrank its fd")) {
        pthread_mutex_lock(&sb_log_mutex);
        snprintf(sb_log_last, sizeof sb_log_last, "%s", msg);
        sb_log_n++;
        pthread_mutex_unlock(&sb_log_mutex);
    }
}

/* Checks that a guarded-fault line was logged, and that it names
 * 'port' and contains 'what'. */
static void
sb_check_log(const char *port, const char *what)
{
    pthread_mutex_lock(&sb_log_mutex);
    unsigned int n = sb_log_n;
    char line[sizeof sb_log_last];
    memcpy(line, sb_log_last, sizeof line);
    sb_log_n = 0;
    pthread_mutex_unlock(&sb_log_mutex);

    tu_log("logged: %s", line);
    TU_CHECK_EQ(n, 1);
    TU_CHECK(!strncmp(line, port, strlen(port)) && line[strlen(port)] == ':');
    TU_CHECK(strstr(line, what) != NULL);
}

struct sb {
    struct vhost_engine *engine;
    struct vhost_port *port, *port_b;
    struct tu_events ev, ev_b;
    char *name;
    char *path, *path_b;
    struct tfe *fe, *fe_b;
    struct tfe_vq vq[2], vq_b[2];   /* RX0 and TX0 of A and of B. */
    bool packed;
    bool log;
    int fds0, threads0;
};

static bool
sb_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
sb_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
}

static const struct vhost_pkt_alloc sb_alloc = {
    .alloc = sb_alloc__,
    .free = sb_free__,
};

static struct vhost_port *
sb_port__(struct sb *s, const char *name, char **pathp, struct tu_events *ev)
{
    struct vhost_port_options opts;
    struct vhost_port *port;

    *pathp = tu_path(name);
    tu_events_init(ev);
    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = *pathp;
    opts.features |= FEATURE_BIT(VIRTIO_F_RING_PACKED);
    opts.cb = &tu_callbacks;
    opts.aux = ev;
    TU_CHECK_OK(vhost_port_create(s->engine, &opts, &port));
    return port;
}

static void
sb_seal(int fd)
{
    TU_SYS(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
}

/* Brings up 'fe' on 'port' with one queue pair on ring layout 's->packed',
 * with dirty logging if 's->log' (the log sealed if 'sealed'), and
 * initialises 'vq' (RX0 with its arena in region 0, TX0 in region 1). */
static void
sb_bring_up(struct sb *s, struct tfe *fe, struct vhost_port *port,
            struct tfe_vq vq[2], bool sealed)
{
    struct tfe_setup setup = {
        .queue_size = SB_QUEUE_SIZE, .packed = s->packed,
        .features_mask = s->log ? ~TFE_DEFAULT_FEATURES_EXCLUDED
                                  | FEATURE_BIT(VHOST_F_LOG_ALL) : 0,
    };

    TU_CHECK(tu_wait_port(port, tu_port_connected, NULL, TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_setup_device(fe, 1, &setup));
    TU_CHECK(tu_port_info(port).ready);
    if (s->log) {
        TU_CHECK_OK(tfe_log_create(fe, SB_LOG_SIZE));
        if (sealed) {
            sb_seal(fe->log_fd);
        }
        TU_CHECK_OK(tfe_set_log_base(fe, SB_LOG_SIZE, 0, fe->log_fd, false));
        TU_CHECK_OK(tfe_set_log_fd(fe));
        TU_CHECK(tu_port_info(port).log_mapped);
    }
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_vq_init(&vq[q], fe, q, q, SB_ARENA_SIZE));
        TU_CHECK_EQ(vq[q].packed, s->packed);
    }
}

/* Starts an engine with ports A and B, each brought up by its own
 * frontend.  A's guest memory (and log) memfds are sealed against
 * shrinking if 'sealed'; B's are not. */
static void
sb_start(struct sb *s, const char *name, bool packed, bool log, bool sealed)
{
    char name_b[64];

    memset(s, 0, sizeof *s);
    vhost_log_set_handler(sb_log_handler, NULL);
    s->fds0 = tu_count_fds();
    s->threads0 = tu_count_threads();
    s->packed = packed;
    s->log = log;
    s->name = strdup(name);
    TU_CHECK_OK(vhost_engine_create(&s->engine));
    TU_CHECK_OK(vhost_engine_start(s->engine));
    s->port = sb_port__(s, name, &s->path, &s->ev);
    snprintf(name_b, sizeof name_b, "%s-b", name);
    s->port_b = sb_port__(s, name_b, &s->path_b, &s->ev_b);

    s->fe_b = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(s->fe_b, s->path_b));
    sb_bring_up(s, s->fe_b, s->port_b, s->vq_b, false);

    struct tfe_mem *mem = tfe_mem_create_default();
    if (sealed) {
        for (size_t i = 0; i < mem->n_regions; i++) {
            sb_seal(mem->regions[i].fd);
        }
    }
    s->fe = tfe_create(mem);
    TU_CHECK_OK(tfe_connect(s->fe, s->path));
    sb_bring_up(s, s->fe, s->port, s->vq, sealed);
}

/* One packet of 'len' bytes from the guest through 'port''s TX0, checked
 * byte for byte. */
static void
sb_tx(struct vhost_port *port, struct tfe_vq vq[2], uint32_t len)
{
    uint8_t hdr[12] = { 0 }, pkt[2048];
    struct vhost_pkt out[VHOST_MAX_BURST];
    struct tfe_used_elem e;

    for (uint32_t i = 0; i < len; i++) {
        pkt[i] = i * 13 + 1;
    }
    TU_CHECK_CMP(tfe_vq_post_tx(&vq[1], hdr, vq[1].hdr_len, pkt, len, NULL),
                 >=, 0);
    memset(out, 0, sizeof out);
    TU_CHECK_EQ(vhost_dequeue_burst(port, 0, out, VHOST_MAX_BURST,
                                    &sb_alloc), 1);
    TU_CHECK_EQ(out[0].len, len);
    TU_CHECK(!memcmp(out[0].data, pkt, len));
    for (unsigned int i = 0; i < VHOST_MAX_BURST; i++) {
        free(out[i].handle);
    }
    TU_CHECK_OK(tfe_vq_get_used(&vq[1], &e));
}

/* One packet of 'len' bytes to the guest through 'port''s RX0, checked
 * byte for byte. */
static void
sb_rx(struct vhost_port *port, struct tfe_vq vq[2], uint32_t len)
{
    uint8_t pkt[2048], buf[4096];
    size_t got;
    unsigned int n_bufs;

    for (uint32_t i = 0; i < len; i++) {
        pkt[i] = i * 5 + 3;
    }
    TU_CHECK_CMP(tfe_vq_post_rx(&vq[0], 2048, NULL), >=, 0);
    struct vhost_pkt p = { .data = pkt, .len = len, .size = len };
    TU_CHECK_EQ(vhost_enqueue_burst(port, 0, &p, 1), 1);
    TU_CHECK_OK(tfe_vq_recv(&vq[0], buf, sizeof buf, &got, &n_bufs));
    TU_CHECK_EQ(got, vq[0].hdr_len + len);
    TU_CHECK(!memcmp(buf + vq[0].hdr_len, pkt, len));
}

/* The engine's own mapping of 'fd' (the frontend's is at 'fe_map'), from
 * /proc/self/maps: its range in '*startp' and '*endp'. */
static void
sb_engine_map(int fd, const void *fe_map, uintptr_t *startp, uintptr_t *endp)
{
    struct stat st;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];

    TU_SYS(fstat(fd, &st));
    TU_CHECK_NONNULL(f);
    *startp = *endp = 0;
    while (fgets(line, sizeof line, f)) {
        uintptr_t start, end;
        unsigned long long ino;

        if (sscanf(line, "%"SCNxPTR"-%"SCNxPTR" %*s %*s %*s %llu", &start,
                   &end, &ino) == 3
            && ino == st.st_ino && start != (uintptr_t) fe_map) {
            *startp = start;
            *endp = end;
        }
    }
    fclose(f);
    TU_CHECK(*startp != 0);
}

/* Checks that nothing is mapped in [start, end), neither the guarded
 * mapping nor a zero page the guard put in it, except mappings whose
 * /proc/self/maps line contains 'other' (if nonnull): another thread's,
 * made since. */
static void
sb_check_unmapped(uintptr_t start, uintptr_t end, const char *other)
{
    /* Read without stdio: a malloc() here could itself map memory into
     * the range just freed (ASan's allocator does). */
    static char buf[1 << 20];
    size_t n = 0;
    ssize_t r;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    TU_SYS(fd);
    while (n < sizeof buf - 1
           && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) {
        n += r;
    }
    close(fd);
    buf[n] = '\0';

    for (char *line = buf, *next; line && *line; line = next) {
        uintptr_t s, e;

        next = strchr(line, '\n');
        if (next) {
            *next++ = '\0';
        }
        if (sscanf(line, "%"SCNxPTR"-%"SCNxPTR, &s, &e) == 2
            && s < end && start < e && !(other && strstr(line, other))) {
            TU_FAIL("still mapped where the guarded mapping was: %s", line);
        }
    }
}

/* Port A's device broke after a guarded fault in what the log line names
 * 'what': the frontend is disconnected, the embedder was told, the faults
 * are counted, A's data path does nothing, and the guarded mapping
 * [start, end) is gone with its zero pages (unless 'start' is 0).  Then
 * port B still works, and a new frontend on A gets a working device. */
static void
sb_check_broken(struct sb *s, const char *what, uintptr_t start,
                uintptr_t end)
{
    TU_CHECK(tu_wait_port(s->port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK(tu_events_wait(&s->ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&s->ev, TU_EV_GONE), 1);
    struct vhost_port_info info = tu_port_info(s->port);
    tu_log("%"PRIu64" guarded fault(s)", info.counters.guarded_faults);
    TU_CHECK_EQ(info.counters.guarded_fds, s->log ? 3 : 2);
    TU_CHECK_CMP(info.counters.guarded_faults, >=, 1);
    TU_CHECK_EQ(info.counters.disconnects, 1);
    sb_check_log(s->name, what);

    struct vhost_pkt p[4];
    uint8_t pkt[64] = { 5 };
    memset(p, 0, sizeof p);
    TU_CHECK_EQ(vhost_dequeue_burst(s->port, 0, p, 4, &sb_alloc), 0);
    p[0] = (struct vhost_pkt) { .data = pkt, .len = sizeof pkt,
                                .size = sizeof pkt };
    TU_CHECK_EQ(vhost_enqueue_burst(s->port, 0, p, 1), 0);
    if (start) {
        tu_log("the guarded mapping and its zero pages are gone");
        sb_check_unmapped(start, end, NULL);
    }

    tu_log("port B is unaffected");
    sb_tx(s->port_b, s->vq_b, 200);
    sb_rx(s->port_b, s->vq_b, 300);
    TU_CHECK(tu_port_info(s->port_b).ready);
    TU_CHECK_EQ(tu_port_info(s->port_b).counters.guarded_faults, 0);
    TU_CHECK_EQ(tu_port_info(s->port_b).counters.disconnects, 0);

    tu_log("a new frontend on port A gets a working device");
    for (unsigned int q = 0; q < 2; q++) {
        tfe_vq_destroy(&s->vq[q]);
    }
    tfe_destroy(s->fe);
    s->fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(s->fe, s->path));
    sb_bring_up(s, s->fe, s->port, s->vq, false);
    sb_tx(s->port, s->vq, 100);
    sb_rx(s->port, s->vq, 100);
    TU_CHECK_EQ(tu_port_info(s->port).counters.guarded_faults,
                info.counters.guarded_faults);
}

/* Tears down 's' and checks the process is back where it started. */
static void
sb_finish(struct sb *s)
{
    for (unsigned int q = 0; q < 2; q++) {
        tfe_vq_destroy(&s->vq[q]);
        tfe_vq_destroy(&s->vq_b[q]);
    }
    tfe_destroy(s->fe);
    tfe_destroy(s->fe_b);
    vhost_port_destroy(s->port);
    vhost_port_destroy(s->port_b);
    vhost_engine_destroy(s->engine);
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), s->fds0);
    TU_CHECK_EQ(tu_threads_settle(s->threads0), s->threads0);
    tu_events_destroy(&s->ev);
    tu_events_destroy(&s->ev_b);
    free(s->name);
    free(s->path);
    free(s->path_b);
    vhost_log_set_handler(NULL, NULL);
}

/* Guest memory: the frontend truncates region 'region' to nothing after
 * SET_MEM_TABLE, and the next burst on the ring that lives there (region
 * 0: RX0, region 1: TX0) touches it. */
static void
sb_mem(bool packed, size_t region)
{
    struct sb s;
    char name[32];

    snprintf(name, sizeof name, "sb-mem%zu-%s", region, packed ? "p" : "s");
    sb_start(&s, name, packed, false, false);
    sb_tx(s.port, s.vq, 64);
    sb_rx(s.port, s.vq, 64);

    const struct tfe_region *r = &s.fe->mem->regions[region];
    uintptr_t start, end;
    sb_engine_map(r->fd, r->map, &start, &end);

    tu_log("the frontend truncates region %zu, then a %s burst", region,
           region ? "dequeue" : "enqueue");
    if (region) {
        uint8_t hdr[12] = { 0 }, pkt[64] = { 1 };
        TU_CHECK_CMP(tfe_vq_post_tx(&s.vq[1], hdr, s.vq[1].hdr_len, pkt,
                                    sizeof pkt, NULL), >=, 0);
        TU_SYS(ftruncate(r->fd, 0));
        struct vhost_pkt out[VHOST_MAX_BURST];
        memset(out, 0, sizeof out);
        vhost_dequeue_burst(s.port, 0, out, VHOST_MAX_BURST, &sb_alloc);
        for (unsigned int i = 0; i < VHOST_MAX_BURST; i++) {
            free(out[i].handle);
        }
    } else {
        uint8_t pkt[64] = { 2 };
        TU_CHECK_CMP(tfe_vq_post_rx(&s.vq[0], 2048, NULL), >=, 0);
        TU_SYS(ftruncate(r->fd, 0));
        struct vhost_pkt p = { .data = pkt, .len = sizeof pkt,
                               .size = sizeof pkt };
        vhost_enqueue_burst(s.port, 0, &p, 1);
    }
    tu_log("still alive");

    char what[32];
    snprintf(what, sizeof what, "memory region %zu ", region);
    sb_check_broken(&s, what, start, end);
    sb_finish(&s);
}

static void
test_mem_rx_split(void)
{
    sb_mem(false, 0);
}

static void
test_mem_tx_split(void)
{
    sb_mem(false, 1);
}

static void
test_mem_rx_packed(void)
{
    sb_mem(true, 0);
}

static void
test_mem_tx_packed(void)
{
    sb_mem(true, 1);
}

/* The dirty log: the frontend truncates it after SET_LOG_BASE, while
 * logging, and the next enqueue marks a page in it. */
static void
sb_log(bool packed)
{
    struct sb s;

    sb_start(&s, packed ? "sb-log-p" : "sb-log-s", packed, true, false);
    sb_rx(s.port, s.vq, 64);
    uintptr_t start, end;
    void *fe_log = mmap(NULL, SB_LOG_SIZE, PROT_READ, MAP_SHARED,
                        s.fe->log_fd, 0);
    TU_CHECK(fe_log != MAP_FAILED);
    bool marked = false;
    for (size_t i = 0; i < SB_LOG_SIZE; i++) {
        marked |= ((const uint8_t *) fe_log)[i] != 0;
    }
    TU_CHECK(marked);
    sb_engine_map(s.fe->log_fd, fe_log, &start, &end);
    munmap(fe_log, SB_LOG_SIZE);

    tu_log("the frontend truncates the log, then an enqueue");
    uint8_t pkt[64] = { 3 };
    TU_CHECK_CMP(tfe_vq_post_rx(&s.vq[0], 2048, NULL), >=, 0);
    TU_SYS(ftruncate(s.fe->log_fd, 0));
    struct vhost_pkt p = { .data = pkt, .len = sizeof pkt,
                           .size = sizeof pkt };
    vhost_enqueue_burst(s.port, 0, &p, 1);
    tu_log("still alive");

    sb_check_broken(&s, "dirty log", start, end);
    sb_finish(&s);
}

static void
test_log_split(void)
{
    sb_log(false);
}

static void
test_log_packed(void)
{
    sb_log(true);
}

/* Memfds sealed with F_SEAL_SHRINK are mapped unguarded: the frontend
 * cannot shrink them (ftruncate() fails with EPERM), and traffic flows. */
static void
sb_sealed(bool packed)
{
    struct sb s;

    sb_start(&s, packed ? "sb-sealed-p" : "sb-sealed-s", packed, true, true);
    tu_log("sealed memory and log fds are taken as they are");
    TU_CHECK_EQ(tu_port_info(s.port).counters.guarded_fds, 0);
    TU_CHECK_EQ(tu_port_info(s.port_b).counters.guarded_fds, 3);

    for (size_t i = 0; i < s.fe->mem->n_regions; i++) {
        errno = 0;
        TU_CHECK(ftruncate(s.fe->mem->regions[i].fd, 0) < 0);
        TU_CHECK_EQ(errno, EPERM);
    }
    errno = 0;
    TU_CHECK(ftruncate(s.fe->log_fd, 0) < 0);
    TU_CHECK_EQ(errno, EPERM);

    for (int i = 0; i < 8; i++) {
        sb_tx(s.port, s.vq, 60 + i);
        sb_rx(s.port, s.vq, 60 + i);
    }
    struct vhost_port_info info = tu_port_info(s.port);
    TU_CHECK(info.ready);
    TU_CHECK_EQ(info.counters.guarded_faults, 0);
    TU_CHECK_EQ(info.counters.disconnects, 0);
    sb_finish(&s);
}

static void
test_sealed_split(void)
{
    sb_sealed(false);
}

static void
test_sealed_packed(void)
{
    sb_sealed(true);
}

/* The embedder's SIGBUS handler, installed before the engine's: it counts
 * what reaches it and, for a fault, maps a page so that the access can
 * complete. */
static atomic_uint sb_embedder_calls;

static void
sb_embedder_handler(int sig, siginfo_t *info, void *uctx)
{
    atomic_fetch_add(&sb_embedder_calls, 1);
    if (info->si_code > 0) {
        void *page = (void *) ((uintptr_t) info->si_addr
                               & ~(uintptr_t) (getpagesize() - 1));
        if (mmap(page, getpagesize(), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
            == MAP_FAILED) {
            _exit(3);
        }
    }
}

/* Truncates a memfd mapped by the test alone (no guard) and touches it. */
static void
sb_unguarded_fault(void)
{
    size_t page = getpagesize();
    int fd = memfd_create("sb-unguarded", MFD_CLOEXEC);

    TU_SYS(fd);
    TU_SYS(ftruncate(fd, 2 * page));
    volatile uint8_t *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
                               MAP_SHARED, fd, 0);
    TU_CHECK(p != MAP_FAILED);
    p[page] = 1;
    TU_SYS(ftruncate(fd, page));
    p[page] = 2;                /* SIGBUS. */
    munmap((void *) p, 2 * page);
    close(fd);
}

/* A SIGBUS outside every guarded mapping goes to the handler that was there
 * before the engine's: a fault in the test's own mapping, and one sent with
 * raise().  A guarded one does not. */
static void
test_chain(void)
{
    struct sigaction sa;
    struct sb s;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sb_embedder_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    TU_SYS(sigaction(SIGBUS, &sa, NULL));

    sb_start(&s, "sb-chain", false, false, false);
    tu_log("a fault in a mapping the engine does not guard");
    sb_unguarded_fault();
    TU_CHECK_EQ(atomic_load(&sb_embedder_calls), 1);
    tu_log("a SIGBUS sent with raise()");
    TU_SYS(raise(SIGBUS));
    TU_CHECK_EQ(atomic_load(&sb_embedder_calls), 2);
    TU_CHECK_EQ(tu_port_info(s.port).counters.guarded_faults, 0);
    TU_CHECK(tu_port_info(s.port).ready);

    tu_log("a fault in guest memory is the engine's");
    const struct tfe_region *r = &s.fe->mem->regions[0];
    TU_CHECK_CMP(tfe_vq_post_rx(&s.vq[0], 2048, NULL), >=, 0);
    TU_SYS(ftruncate(r->fd, 0));
    uint8_t pkt[64] = { 4 };
    struct vhost_pkt p = { .data = pkt, .len = sizeof pkt,
                           .size = sizeof pkt };
    vhost_enqueue_burst(s.port, 0, &p, 1);
    TU_CHECK_EQ(atomic_load(&sb_embedder_calls), 2);
    sb_check_broken(&s, "memory region 0 ", 0, 0);
    sb_finish(&s);
}

/* With the default action before the engine's, a child survives a fault
 * in guest memory that its frontend truncated, says so through a pipe,
 * and then still dies of SIGBUS on a fault outside every guarded
 * mapping. */
static void
test_default(void)
{
    int status, pipefd[2];
    char c = 0;

    tu_tmpdir();                /* The parent's, removed at its exit. */
    TU_SYS(pipe(pipefd));
    pid_t pid = fork();
    TU_SYS(pid);
    if (!pid) {
        struct sb s;

        close(pipefd[0]);
        signal(SIGBUS, SIG_DFL);    /* Even under a sanitizer. */
        sb_start(&s, "sb-default", false, false, false);
        TU_CHECK_CMP(tfe_vq_post_rx(&s.vq[0], 2048, NULL), >=, 0);
        TU_SYS(ftruncate(s.fe->mem->regions[0].fd, 0));
        uint8_t pkt[64] = { 6 };
        struct vhost_pkt p = { .data = pkt, .len = sizeof pkt,
                               .size = sizeof pkt };
        vhost_enqueue_burst(s.port, 0, &p, 1);
        TU_CHECK(tu_wait_port(s.port, tu_port_disconnected, NULL,
                              TU_TIMEOUT_MS));
        TU_SYS(write(pipefd[1], "s", 1));
        sb_unguarded_fault();
        _exit(0);                   /* Not reached. */
    }
    close(pipefd[1]);
    TU_CHECK_EQ(read(pipefd[0], &c, 1), 1);
    TU_CHECK_EQ(c, 's');
    close(pipefd[0]);
    TU_SYS(waitpid(pid, &status, 0));
    tu_log("child status %#x", status);
    TU_CHECK(WIFSIGNALED(status));
    TU_CHECK_EQ(WTERMSIG(status), SIGBUS);
}

/* The registry itself, below any device: a thread keeps adding and
 * removing guarded mappings while this one truncates others and faults on
 * every page of them.  Every fault lands in the right slot, reads zeros,
 * and every mapping and zero page goes at guest_mem_unmap(). */
static atomic_bool sb_churn_stop;

static void *
sb_churn__(void *aux)
{
    unsigned int *rounds = aux;
    int fd = memfd_create("sb-churn", MFD_CLOEXEC);

    TU_SYS(fd);
    TU_SYS(ftruncate(fd, 1 << 20));
    while (!atomic_load(&sb_churn_stop)) {
        void *maps[8];
        size_t lens[8];

        for (int i = 0; i < 8; i++) {
            const char *reason;
            uint8_t *hva;

            TU_CHECK_OK(guest_mem_map_fd(fd, 0, 64 << 10, &maps[i], &lens[i],
                                         &hva, &reason));
        }
        for (int i = 0; i < 8; i++) {
            guest_mem_unmap(maps[i], lens[i]);
        }
        (*rounds)++;
    }
    close(fd);
    return NULL;
}

static void
test_guard_churn(void)
{
    size_t page = getpagesize();
    unsigned int churn_rounds = 0, rounds = 0;
    pthread_t thread;

    atomic_store(&sb_churn_stop, false);
    TU_CHECK_OK(pthread_create(&thread, NULL, sb_churn__, &churn_rounds));
    long long deadline = tu_now_ms() + 1000;
    while (tu_now_ms() < deadline) {
        const size_t n_pages = 16;
        int fd = memfd_create("sb-fault", MFD_CLOEXEC);
        const char *reason;
        uint8_t *hva;
        void *map;
        size_t len;
        uintptr_t first;

        TU_SYS(fd);
        TU_SYS(ftruncate(fd, n_pages * page));
        TU_CHECK_OK(guest_mem_map_fd(fd, 0, n_pages * page, &map, &len, &hva,
                                     &reason));
        memset(hva, 0xa5, n_pages * page);
        TU_SYS(ftruncate(fd, 0));
        for (size_t i = 0; i < n_pages; i++) {
            volatile uint8_t *b = hva + i * page + (i * 8) % page;

            TU_CHECK_EQ(*b, 0);
            *b = 1;
        }
        TU_CHECK_EQ(guest_mem_guard_query(hva, &first), n_pages);
        TU_CHECK_EQ(first, (uintptr_t) hva);
        guest_mem_unmap(map, len);
        sb_check_unmapped((uintptr_t) map, (uintptr_t) map + len,
                          "sb-churn");
        close(fd);
        rounds++;
    }
    atomic_store(&sb_churn_stop, true);
    TU_CHECK_OK(pthread_join(thread, NULL));
    tu_log("%u fault rounds against %u churn rounds", rounds, churn_rounds);
    TU_CHECK_CMP(rounds, >, 0);
    TU_CHECK_CMP(churn_rounds, >, 0);
    TU_CHECK_EQ(tu_count_maps("sb-churn"), 0);
    TU_CHECK_EQ(tu_count_maps("sb-fault"), 0);
}

const struct tu_test tu_sigbus_tests[] = {
    { "sigbus-mem-rx-split", test_mem_rx_split,
      "truncated memory region (RX ring), split: device broken, alive" },
    { "sigbus-mem-tx-split", test_mem_tx_split,
      "truncated memory region (TX ring), split: device broken, alive" },
    { "sigbus-mem-rx-packed", test_mem_rx_packed,
      "truncated memory region (RX ring), packed: device broken, alive" },
    { "sigbus-mem-tx-packed", test_mem_tx_packed,
      "truncated memory region (TX ring), packed: device broken, alive" },
    { "sigbus-log-split", test_log_split,
      "truncated dirty log while logging, split: device broken, alive" },
    { "sigbus-log-packed", test_log_packed,
      "truncated dirty log while logging, packed: device broken, alive" },
    { "sigbus-sealed-split", test_sealed_split,
      "F_SEAL_SHRINK memfds taken unguarded; ftruncate fails, split" },
    { "sigbus-sealed-packed", test_sealed_packed,
      "F_SEAL_SHRINK memfds taken unguarded; ftruncate fails, packed" },
    { "sigbus-chain", test_chain,
      "a SIGBUS outside guest memory reaches the earlier handler" },
    { "sigbus-default", test_default,
      "a SIGBUS outside guest memory still kills with the default action" },
    { "sigbus-guard-churn", test_guard_churn,
      "guard registry: faults while other mappings come and go" },
};

const size_t tu_n_sigbus_tests = ARRAY_SIZE(tu_sigbus_tests);
