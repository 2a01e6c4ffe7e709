/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Postcopy live migration (lib/vhost-postcopy.h), against the model
 * frontend speaking as QEMU's destination does: POSTCOPY_ADVISE hands us
 * the engine's userfaultfd, LISTEN, the memory table answered with the
 * engine's mappings, then a page taken away (a hole punched in the memfd,
 * as a page not yet received is) that the data path touches: the engine's
 * thread blocks in the fault until this test, in QEMU's place, copies the
 * page in through the userfaultfd.  And the steps out of order.
 */

#include <config.h>

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include "test-datapath.h"

struct pc {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    int fds0;
    int threads0;
};

static void
pc_start(struct pc *pc, const char *name, bool pagefault)
{
    struct vhost_port_options opts;
    struct tfe_setup setup;

    memset(pc, 0, sizeof *pc);
    pc->fds0 = tu_count_fds();
    pc->threads0 = tu_thread_baseline();
    tu_events_init(&pc->ev);
    pc->path = tu_path(name);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = pc->path;
    opts.mode = VHOST_PORT_SERVER;
    opts.max_queue_pairs = 1;
    if (pagefault) {
        opts.protocol_features
            |= FEATURE_BIT(VHOST_USER_PROTOCOL_F_PAGEFAULT);
    }
    opts.cb = &tu_callbacks;
    opts.aux = &pc->ev;
    TU_CHECK_OK(vhost_engine_create(&pc->engine));
    TU_CHECK_OK(vhost_engine_start(pc->engine));
    TU_CHECK_OK(vhost_port_create(pc->engine, &opts, &pc->port));

    pc->fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(pc->fe, pc->path));
    memset(&setup, 0, sizeof setup);
    TU_CHECK_OK(tfe_negotiate(pc->fe, &setup));
    TU_CHECK_EQ(!!(pc->fe->protocol_features
                   & FEATURE_BIT(VHOST_USER_PROTOCOL_F_PAGEFAULT)),
                pagefault);
}

static void
pc_finish(struct pc *pc)
{
    tfe_destroy(pc->fe);
    vhost_port_destroy(pc->port);
    vhost_engine_destroy(pc->engine);
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), pc->fds0);
    TU_CHECK_EQ(tu_threads_settle(pc->threads0), pc->threads0);
    tu_events_destroy(&pc->ev);
    free(pc->path);
}

/* True if 'fd' is a userfaultfd. */
static bool
pc_is_userfaultfd(int fd)
{
    char link[64], target[128];
    ssize_t n;

    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof target - 1);
    if (n < 0) {
        return false;
    }
    target[n] = '\0';
    return strstr(target, "userfaultfd") != NULL;
}

/* The part of QEMU that serves the faults until 'stop': the page at
 * 'page' (the engine's address of it) is copied in from 'src'; any other
 * (guest memory the frontend never wrote, which a new memfd does not
 * have either) as a page of zeros. */
struct pc_server {
    int ufd;
    uint64_t page;
    const uint8_t *src;
    atomic_bool stop;
    atomic_uint faults;         /* On 'page'. */
    atomic_uint others;         /* Elsewhere. */
};

static void *
pc_server_main(void *server_)
{
    static const uint8_t zeros[PAGE];
    struct pc_server *s = server_;
    struct pollfd pfd = { .fd = s->ufd, .events = POLLIN };

    while (!atomic_load(&s->stop)) {
        struct uffd_msg msg;

        if (poll(&pfd, 1, 10) != 1
            || read(s->ufd, &msg, sizeof msg) != sizeof msg
            || msg.event != UFFD_EVENT_PAGEFAULT) {
            continue;
        }
        uint64_t page = msg.arg.pagefault.address & ~(uint64_t) (PAGE - 1);
        struct uffdio_copy copy = {
            .dst = page, .src = (uintptr_t) (page == s->page ? s->src : zeros),
            .len = PAGE,
        };
        if (ioctl(s->ufd, UFFDIO_COPY, &copy) && errno == EEXIST) {
            struct uffdio_range range = { .start = page, .len = PAGE };
            ioctl(s->ufd, UFFDIO_WAKE, &range);
        }
        atomic_fetch_add(page == s->page ? &s->faults : &s->others, 1);
    }
    return NULL;
}

/* ADVISE, LISTEN, the memory table (by SET_MEM_TABLE, or with
 * 'mem_slots' by ADD_MEM_REG, each region twice as QEMU 7.2 sends it for
 * two queue pairs), rings, then a TX packet in a page that has not
 * arrived: the dequeue waits in the fault until the page is copied in,
 * and takes the packet intact.  END closes the userfaultfd. */
static void
pc_flow(bool mem_slots)
{
    uint64_t bases[TFE_MAX_REGIONS];
    struct pc pc;
    int ufd;

    tu_log("%s", mem_slots ? "ADD_MEM_REG" : "SET_MEM_TABLE");
    pc_start(&pc, "pc-flow", true);
    TU_CHECK_OK(tfe_postcopy_advise(pc.fe, &ufd));
    TU_CHECK(pc_is_userfaultfd(ufd));
    TU_CHECK_OK(tfe_postcopy_listen(pc.fe));

    /* A marker in each region, present (not punched): read back through
     * the base the engine reports, it shows that base is its mapping. */
    for (size_t i = 0; i < pc.fe->mem->n_regions; i++) {
        pc.fe->mem->regions[i].va[0] = 0xa0 + i;
    }
    if (mem_slots) {
        for (size_t i = 0; i < pc.fe->mem->n_regions; i++) {
            uint64_t again;

            TU_CHECK_OK(tfe_postcopy_add_mem_reg(pc.fe, i, &bases[i]));
            TU_CHECK_OK(tfe_postcopy_add_mem_reg(pc.fe, i, &again));
            TU_CHECK_EQ(again, bases[i]);
        }
    } else {
        TU_CHECK_OK(tfe_postcopy_set_mem_table(pc.fe, bases));
    }
    for (size_t i = 0; i < pc.fe->mem->n_regions; i++) {
        tu_log("  region %zu: ours at %p, the engine's at %#"PRIx64, i,
               (void *) pc.fe->mem->regions[i].va, bases[i]);
        TU_CHECK(bases[i] != tfe_va_to_uva(pc.fe->mem->regions[i].va));
        TU_CHECK_EQ(*(const uint8_t *) (uintptr_t) bases[i], 0xa0 + i);
    }
    TU_CHECK_EQ(tu_port_info(pc.port).counters.postcopy_regions,
                mem_slots ? 4 : 2);

    /* QEMU's fault thread, from here on: the page is set below. */
    uint8_t page[PAGE];
    struct pc_server server = { .ufd = ufd, .page = 1, .src = page };
    atomic_init(&server.stop, false);
    atomic_init(&server.faults, 0);
    atomic_init(&server.others, 0);
    pthread_t thread;
    TU_CHECK_OK(pthread_create(&thread, NULL, pc_server_main, &server));

    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_vring_setup(pc.fe, q, 256));
        TU_CHECK_OK(tfe_set_vring_enable(pc.fe, q, true));
    }
    TU_CHECK(tu_wait_port(pc.port, tu_port_ready, NULL, TU_TIMEOUT_MS));

    struct tfe_vq tx;
    TU_CHECK_OK(tfe_vq_init(&tx, pc.fe, 1, 1, 1 << 20));
    const struct tfe_region *r1 = &pc.fe->mem->regions[1];
    uint64_t off = 1 << 20;     /* Beyond the rings and the arena. */
    uint8_t pkt[200];
    for (size_t i = 0; i < sizeof pkt; i++) {
        pkt[i] = i * 7;
    }
    struct tfe_buf_opts at = { .gpa = r1->gpa + off };
    static const struct tfe_net_hdr zero;
    TU_CHECK_CMP(tfe_vq_post_tx(&tx, &zero, 12, pkt, sizeof pkt, &at), >=, 0);

    tu_log("the packet's page has not arrived: punched out of the memfd");
    memcpy(page, r1->va + off, PAGE);
    TU_CHECK_OK(fallocate(r1->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                          r1->mmap_offset + off, PAGE));
    server.page = bases[1] + off;

    struct vhost_pkt out = { .data = NULL };
    struct dalloc da = { .fail_after = -1 };
    struct vhost_pkt_alloc alloc = {
        .alloc = dp_dalloc_alloc, .free = dp_dalloc_free, .aux = &da,
    };
    TU_CHECK_EQ(vhost_dequeue_burst(pc.port, 0, &out, 1, &alloc), 1);
    atomic_store(&server.stop, true);
    pthread_join(thread, NULL);
    tu_log("  the engine faulted %u time(s) on it, and got it (%u faults "
           "on untouched memory)", atomic_load(&server.faults),
           atomic_load(&server.others));
    TU_CHECK_EQ(atomic_load(&server.faults), 1);
    dp_check_pkt(&out, pkt, sizeof pkt, "after the page arrived");
    dp_release_pkts(&out, 1);

    tu_log("POSTCOPY_END");
    TU_CHECK_OK(tfe_postcopy_end(pc.fe));
    TU_CHECK_EQ(tu_port_info(pc.port).counters.postcopy_listens, 1);
    TU_CHECK_EQ(tu_port_info(pc.port).counters.postcopy_rejected, 0);
    close(ufd);
    tfe_vq_destroy(&tx);
    pc_finish(&pc);
}

/* Exits with autotest's "skipped" if this kernel gives no userfaultfd. */
static void
pc_need_userfaultfd(void)
{
    int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        printf("SKIP: no userfaultfd here (%s)\n", strerror(errno));
        exit(77);
    }
    close(fd);
}

static void
test_postcopy_flow(void)
{
    pc_need_userfaultfd();
    pc_flow(false);
    pc_flow(true);
}

static bool
pc_fds_are__(void *n)
{
    return tu_count_fds() == *(int *) n;
}

/* The steps out of order, and without PAGEFAULT: each refused and
 * counted, the connection and the process unharmed, no fd left. */
/* While listening, ADD_MEM_REG of a region that the userfaultfd cannot
 * take (a file on disk: UFFDIO_REGISTER's missing mode wants anonymous,
 * shmem or hugetlbfs memory) is refused, counted, and the table in use
 * is the one before it: a region is registered before the data path can
 * touch it. */
static void
pc_unregistrable_region(struct pc *pc)
{
    char path[] = "/var/tmp/ovs-vhost-pc-XXXXXX";
    int fd = mkstemp(path);
    uint64_t size = 1 << 20;

    TU_CHECK_CMP(fd, >=, 0);
    unlink(path);
    TU_CHECK_OK(ftruncate(fd, size));

    struct vhost_port_info before = tu_port_info(pc->port);
    const struct tfe_region *last
        = &pc->fe->mem->regions[pc->fe->mem->n_regions - 1];
    struct vhost_user_mem_region r = {
        .guest_phys_addr = last->gpa + last->size + (1 << 20),
        .memory_size = size,
        .userspace_addr = 0x7e0000000000ull,
        .mmap_offset = 0,
    };
    tu_log("a region on a file on disk: refused, the table unchanged");
    TU_CHECK_EQ(tfe_add_mem_reg(pc->fe, &r, fd), TFE_NACK);
    close(fd);

    struct vhost_port_info after = tu_port_info(pc->port);
    TU_CHECK_EQ(after.n_mem_regions, before.n_mem_regions);
    TU_CHECK_EQ(after.mem_size, before.mem_size);
    TU_CHECK_EQ(after.counters.postcopy_rejected,
                before.counters.postcopy_rejected + 1);
    TU_CHECK_EQ(after.counters.postcopy_regions,
                before.counters.postcopy_regions);
}

static void
test_postcopy_order(void)
{
    struct pc pc;
    int ufd;

    pc_need_userfaultfd();
    tu_log("without PAGEFAULT: POSTCOPY_ADVISE refused");
    pc_start(&pc, "pc-order", false);
    TU_CHECK_EQ(tfe_request(pc.fe, VHOST_USER_POSTCOPY_ADVISE, true, NULL, 0,
                            NULL, 0), TFE_NACK);
    pc_finish(&pc);

    pc_start(&pc, "pc-order", true);
    tu_log("LISTEN and END before ADVISE: refused");
    TU_CHECK_EQ(tfe_postcopy_listen(pc.fe), TFE_NACK);
    TU_CHECK_EQ(tfe_postcopy_end(pc.fe), TFE_NACK);

    tu_log("ADVISE twice: the first userfaultfd is closed");
    int fds = tu_count_fds();
    TU_CHECK_OK(tfe_postcopy_advise(pc.fe, &ufd));
    close(ufd);
    TU_CHECK_OK(tfe_postcopy_advise(pc.fe, &ufd));
    close(ufd);
    /* The engine's one: its copy for the reply is closed once sent,
     * which may come just after we have the reply. */
    int want = fds + 1;
    TU_CHECK(tu_wait_until(pc_fds_are__, &want, TU_TIMEOUT_MS));

    tu_log("END before LISTEN: refused");
    TU_CHECK_EQ(tfe_postcopy_end(pc.fe), TFE_NACK);

    tu_log("an acknowledgement when none is owed: a bad SET_MEM_TABLE");
    uint64_t zero = 0;
    TU_CHECK_EQ(tfe_request(pc.fe, VHOST_USER_SET_MEM_TABLE, true, &zero,
                            sizeof zero, NULL, 0), TFE_NACK);

    tu_log("LISTEN with memory mapped already: refused");
    TU_CHECK_OK(tfe_set_mem_table(pc.fe));
    TU_CHECK_EQ(tfe_postcopy_listen(pc.fe), TFE_NACK);
    TU_CHECK_EQ(tu_port_info(pc.port).counters.postcopy_rejected, 4);

    tu_log("a frontend gone while listening leaves nothing behind");
    pc_finish(&pc);
    pc_start(&pc, "pc-order", true);
    TU_CHECK_OK(tfe_postcopy_advise(pc.fe, &ufd));
    close(ufd);
    TU_CHECK_OK(tfe_postcopy_listen(pc.fe));
    uint64_t base;
    TU_CHECK_OK(tfe_postcopy_add_mem_reg(pc.fe, 0, &base));
    pc_unregistrable_region(&pc);
    tfe_disconnect(pc.fe);
    TU_CHECK(tu_wait_port(pc.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    pc_finish(&pc);
    pc_start(&pc, "pc-order", true);
    TU_CHECK_OK(tfe_postcopy_advise(pc.fe, &ufd));
    close(ufd);
    TU_CHECK_OK(tfe_postcopy_listen(pc.fe));
    uint64_t bases[TFE_MAX_REGIONS];
    TU_CHECK_OK(tfe_postcopy_set_mem_table(pc.fe, bases));
    tfe_disconnect(pc.fe);
    TU_CHECK(tu_wait_port(pc.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    pc_finish(&pc);
}

/* A burst on another thread, as a PMD thread's. */
struct pc_burst {
    struct pc *pc;
    atomic_int done;            /* -1 until the burst returns. */
};

static void *
pc_burst_main(void *burst_)
{
    struct pc_burst *b = burst_;
    struct vhost_pkt out = { .data = NULL };
    struct dalloc da = { .fail_after = -1 };
    struct vhost_pkt_alloc alloc = {
        .alloc = dp_dalloc_alloc, .free = dp_dalloc_free, .aux = &da,
    };
    unsigned int n = vhost_dequeue_burst(b->pc->port, 0, &out, 1, &alloc);

    dp_release_pkts(&out, n);
    atomic_store(&b->done, n);
    return NULL;
}

static bool
pc_burst_done__(void *burst_)
{
    struct pc_burst *b = burst_;

    return atomic_load(&b->done) >= 0;
}

/* Where in region 1 pc_start_faulting()'s packet lies. */
#define PC_FAULT_OFF (1 << 20)

/* Starts port 'name' listening for postcopy (its userfaultfd, the
 * frontend's copy, in '*ufdp'; the engine's region bases in 'bases'), two
 * vrings, and a TX packet ('tx') in a page that has not arrived; then a
 * burst on another thread ('burst', 'thread'), which sleeps in the fault
 * on that page, holding vring 1's lock, until the page comes or the
 * userfaultfd goes. */
static void
pc_start_faulting(struct pc *pc, const char *name, int *ufdp,
                  uint64_t bases[TFE_MAX_REGIONS], struct tfe_vq *tx,
                  struct pc_burst *burst, pthread_t *thread)
{
    pc_start(pc, name, true);
    TU_CHECK_OK(tfe_postcopy_advise(pc->fe, ufdp));
    TU_CHECK_OK(tfe_postcopy_listen(pc->fe));
    /* Every page the rings and the packet use, written before they are
     * registered: present, so only the punched page faults. */
    const struct tfe_region *r1 = &pc->fe->mem->regions[1];
    memset(pc->fe->mem->regions[0].va, 0, 64 << 10);
    memset(r1->va, 0, 2 << 20);
    TU_CHECK_OK(tfe_postcopy_set_mem_table(pc->fe, bases));
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_vring_setup(pc->fe, q, 256));
        TU_CHECK_OK(tfe_set_vring_enable(pc->fe, q, true));
    }
    TU_CHECK(tu_wait_port(pc->port, tu_port_ready, NULL, TU_TIMEOUT_MS));

    static const struct tfe_net_hdr zero;
    uint8_t pkt[100] = { 1 };
    TU_CHECK_OK(tfe_vq_init(tx, pc->fe, 1, 1, 1 << 20));
    struct tfe_buf_opts at = { .gpa = r1->gpa + PC_FAULT_OFF };
    TU_CHECK_CMP(tfe_vq_post_tx(tx, &zero, 12, pkt, sizeof pkt, &at), >=, 0);
    TU_CHECK_OK(fallocate(r1->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                          r1->mmap_offset + PC_FAULT_OFF, PAGE));

    burst->pc = pc;
    atomic_init(&burst->done, -1);
    TU_CHECK_OK(pthread_create(thread, NULL, pc_burst_main, burst));
    tu_sleep_ms(100);
    TU_CHECK(!pc_burst_done__(burst));
}

/* The frontend of 'pc' goes, closing its copy 'ufd' of the userfaultfd,
 * while 'burst' sleeps in a fault: the port disconnects, and the burst on
 * 'thread' wakes and returns. */
static void
pc_frontend_goes(struct pc *pc, int ufd, struct pc_burst *burst,
                 pthread_t thread)
{
    close(ufd);
    tfe_disconnect(pc->fe);
    TU_CHECK(tu_wait_port(pc->port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK(tu_wait_until(pc_burst_done__, burst, TU_TIMEOUT_MS));
    pthread_join(thread, NULL);
}

/* The frontend goes while a burst waits in a fault on a page it never
 * sent, holding its queue's lock: the engine's reset closes the
 * userfaultfd before it takes any queue lock, which wakes the burst,
 * rather than waiting for the lock for ever. */
static void
test_postcopy_gone(void)
{
    uint64_t bases[TFE_MAX_REGIONS];
    struct pc_burst burst;
    pthread_t thread;
    struct tfe_vq tx;
    struct pc pc;
    int ufd;

    pc_need_userfaultfd();
    pc_start_faulting(&pc, "pc-gone", &ufd, bases, &tx, &burst, &thread);
    tu_log("the burst waits in the fault; the frontend goes");
    pc_frontend_goes(&pc, ufd, &burst, thread);
    tu_log("  the burst returned %d", atomic_load(&burst.done));
    tfe_vq_destroy(&tx);
    pc_finish(&pc);
}

/* The engine's loop, timed from this thread: a port's info (which takes
 * the engine mutex) and a queue's statistics and state (which try its
 * lock for at most 200 ms) must come back, in well under two seconds on
 * a loaded machine, while a burst sleeps in a fault holding that queue. */
static void
pc_check_responsive(struct pc *pc, const char *when)
{
    struct vhost_queue_stats st;
    struct vhost_queue_info qi;
    long long int t0 = tu_now_ms();

    (void) tu_port_info(pc->port);
    TU_CHECK_OK(vhost_port_get_queue_stats(pc->port, 1, &st));
    TU_CHECK_OK(vhost_port_get_queue_info(pc->port, 1, &qi));
    long long int ms = tu_now_ms() - t0;
    tu_log("  %s: info, statistics and state in %lld ms", when, ms);
    TU_CHECK_CMP(ms, <, 1500);
    TU_CHECK(qi.enabled);
}

/* True once 'pc''s port counts a message held back. */
static bool
pc_deferred__(void *pc_)
{
    struct pc *pc = pc_;

    return tu_port_info(pc->port).counters.msgs_deferred > 0;
}

/* A burst sleeps in a fault that the frontend, alive, does not serve (its
 * migration paused), holding its queue's lock; the frontend then sends
 * GET_VRING_BASE for that queue.  The message waits, counted, and the
 * engine's loop goes on serving: statistics, state and a second port's
 * frontend are answered.  Then either the page comes, the burst returns,
 * the message is handled and its reply arrives; or ('gone') the frontend
 * goes, and the disconnect wakes the burst.  Without the wait, the loop
 * spun on the queue's lock for as long as the fault lasted. */
static void
pc_held(bool gone)
{
    uint64_t bases[TFE_MAX_REGIONS];
    struct pc_burst burst;
    pthread_t thread;
    struct tfe_vq tx;
    struct pc pc;
    int ufd;

    tu_log("%s", gone ? "the frontend goes" : "the page comes");
    pc_start_faulting(&pc, "pc-held", &ufd, bases, &tx, &burst, &thread);
    pc_check_responsive(&pc, "the burst waits in the fault");

    tu_log("GET_VRING_BASE for the held vring");
    struct vhost_user_vring_state state = { .index = 1 };
    TU_CHECK_OK(tfe_send(pc.fe, VHOST_USER_GET_VRING_BASE,
                         VHOST_USER_VERSION, &state, sizeof state, NULL, 0));
    TU_CHECK(tu_wait_until(pc_deferred__, &pc, TU_TIMEOUT_MS));
    pc_check_responsive(&pc, "the message waits");

    tu_log("a second port's frontend is served meanwhile");
    struct vhost_port_options opts;
    struct vhost_port *port_b;
    char *path_b = tu_path("pc-held-b");
    vhost_port_options_init(&opts);
    opts.name = "pc-held-b";
    opts.path = path_b;
    opts.mode = VHOST_PORT_SERVER;
    opts.max_queue_pairs = 1;
    TU_CHECK_OK(vhost_port_create(pc.engine, &opts, &port_b));
    struct tfe *fe_b = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_connect(fe_b, path_b));
    TU_CHECK_OK(tfe_setup_device(fe_b, 1, NULL));
    TU_CHECK(tu_wait_port(port_b, tu_port_ready, NULL, TU_TIMEOUT_MS));

    tu_sleep_ms(200);
    TU_CHECK(!pc_burst_done__(&burst));
    TU_CHECK_EQ(tu_port_info(pc.port).counters.msgs_deferred, 1);

    if (gone) {
        tu_log("the frontend goes: the burst wakes, nothing is handled");
        pc_frontend_goes(&pc, ufd, &burst, thread);
        ufd = -1;
    } else {
        tu_log("the page comes: the burst returns, then the message is "
               "handled");
        static const uint8_t zeros[PAGE];
        struct uffdio_copy copy = {
            .dst = bases[1] + PC_FAULT_OFF, .src = (uintptr_t) zeros, .len = PAGE,
        };
        TU_CHECK_OK(ioctl(ufd, UFFDIO_COPY, &copy));
        TU_CHECK(tu_wait_until(pc_burst_done__, &burst, TU_TIMEOUT_MS));
        pthread_join(thread, NULL);
        TU_CHECK_EQ(atomic_load(&burst.done), 1);
        struct tfe_reply reply;
        TU_CHECK_OK(tfe_recv_reply(pc.fe, VHOST_USER_GET_VRING_BASE, &reply,
                                   TU_TIMEOUT_MS));
        tu_log("  GET_VRING_BASE answered: vring %"PRIu32" at %"PRIu32,
               reply.payload.state.index, reply.payload.state.num);
        TU_CHECK_EQ(reply.payload.state.index, 1);
        TU_CHECK_EQ(reply.payload.state.num, 1);
        TU_CHECK_EQ(tu_port_info(pc.port).counters.msgs_rejected, 0);
    }
    TU_CHECK_EQ(tu_port_info(pc.port).counters.msgs_deferred, 1);

    tfe_destroy(fe_b);
    vhost_port_destroy(port_b);
    free(path_b);
    if (ufd >= 0) {
        close(ufd);
    }
    tfe_vq_destroy(&tx);
    pc_finish(&pc);
}

static void
test_postcopy_held(void)
{
    pc_need_userfaultfd();
    pc_held(false);
    pc_held(true);
}

const struct tu_test tu_postcopy_tests[] = {
    { "postcopy-flow", test_postcopy_flow,
      "postcopy: advise, listen, memory table, a fault served, end" },
    { "postcopy-order", test_postcopy_order,
      "postcopy: steps out of order refused, nothing leaked" },
    { "postcopy-gone", test_postcopy_gone,
      "postcopy: the frontend gone while a burst waits in a fault" },
    { "postcopy-held", test_postcopy_held,
      "postcopy: a message for a vring a fault holds waits; others go on" },
};

const size_t tu_n_postcopy_tests = ARRAY_SIZE(tu_postcopy_tests);
