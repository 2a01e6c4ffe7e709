/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-engine: the C test driver.  "test-engine NAME" runs one test;
 * "test-engine --list" lists them; "test-engine --all" runs each in a child
 * process and summarises.  The autotest files (guest-mem.at,
 * vhost-user.at, engine.at, datapath.at, packed.at, ...) run one test each
 * through ENGINE_TEST.
 *
 * This file holds the driver and the registry of every test table; the
 * tests live in the files that register them (the engine's own tests in
 * test-engine-*.c, fixture in test-engine.h).
 */

#include <config.h>

#include "test-engine.h"

/* Driver. */

struct test_table {
    const struct tu_test *tests;
    size_t n;
};

/* The engine's own tests live in test-engine-*.c. */
extern const struct tu_test tu_engine_proto_tests[];
extern const size_t tu_n_engine_proto_tests;
extern const struct tu_test tu_engine_mem_tests[];
extern const size_t tu_n_engine_mem_tests;
extern const struct tu_test tu_engine_vring_tests[];
extern const size_t tu_n_engine_vring_tests;
extern const struct tu_test tu_engine_device_tests[];
extern const size_t tu_n_engine_device_tests;
extern const struct tu_test tu_engine_socket_tests[];
extern const size_t tu_n_engine_socket_tests;

/* The data path tests live in test-datapath-*.c (split rings) and
 * test-packed-*.c (packed rings). */
extern const struct tu_test tu_datapath_queue_tests[];
extern const size_t tu_n_datapath_queue_tests;
extern const struct tu_test tu_datapath_validate_tests[];
extern const size_t tu_n_datapath_validate_tests;
extern const struct tu_test tu_datapath_cold_tests[];
extern const size_t tu_n_datapath_cold_tests;
extern const struct tu_test tu_datapath_notify_tests[];
extern const size_t tu_n_datapath_notify_tests;
extern const struct tu_test tu_datapath_buffer_tests[];
extern const size_t tu_n_datapath_buffer_tests;
extern const struct tu_test tu_packed_ring_tests[];
extern const size_t tu_n_packed_ring_tests;
extern const struct tu_test tu_packed_validate_tests[];
extern const size_t tu_n_packed_validate_tests;
extern const struct tu_test tu_packed_order_tests[];
extern const size_t tu_n_packed_order_tests;
extern const struct tu_test tu_packed_notify_tests[];
extern const size_t tu_n_packed_notify_tests;
extern const struct tu_test tu_packed_state_tests[];
extern const size_t tu_n_packed_state_tests;
extern const struct tu_test tu_packed_diff_tests[];
extern const size_t tu_n_packed_diff_tests;
extern const struct tu_test tu_adversarial_tests[];
extern const size_t tu_n_adversarial_tests;
extern const struct tu_test tu_adv_ctrl_tests[];
extern const size_t tu_n_adv_ctrl_tests;
extern const struct tu_test tu_adv_stall_tests[];
extern const size_t tu_n_adv_stall_tests;
extern const struct tu_test tu_sigbus_tests[];
extern const size_t tu_n_sigbus_tests;
extern const struct tu_test tu_concurrency_tests[];
extern const size_t tu_n_concurrency_tests;
extern const struct tu_test tu_adv_budget_tests[];
extern const size_t tu_n_adv_budget_tests;
extern const struct tu_test tu_dirty_log_tests[];
extern const size_t tu_n_dirty_log_tests;
extern const struct tu_test tu_lifecycle_tests[];
extern const size_t tu_n_lifecycle_tests;
extern const struct tu_test tu_iotlb_tests[];
extern const size_t tu_n_iotlb_tests;
extern const struct tu_test tu_iommu_tests[];
extern const size_t tu_n_iommu_tests;
extern const struct tu_test tu_postcopy_tests[];
extern const size_t tu_n_postcopy_tests;

/* Room for every table below; unused entries stay empty. */
#define N_TEST_TABLES 48

static void
collect_tables(struct test_table tables[N_TEST_TABLES])
{
    size_t n = 0;

    memset(tables, 0, N_TEST_TABLES * sizeof *tables);
    tables[n++] = (struct test_table) { tu_guest_mem_tests,
                                        tu_n_guest_mem_tests };
    tables[n++] = (struct test_table) { tu_vhost_user_tests,
                                        tu_n_vhost_user_tests };
    tables[n++] = (struct test_table) { tu_engine_proto_tests,
                                        tu_n_engine_proto_tests };
    tables[n++] = (struct test_table) { tu_engine_mem_tests,
                                        tu_n_engine_mem_tests };
    tables[n++] = (struct test_table) { tu_engine_vring_tests,
                                        tu_n_engine_vring_tests };
    tables[n++] = (struct test_table) { tu_engine_device_tests,
                                        tu_n_engine_device_tests };
    tables[n++] = (struct test_table) { tu_engine_socket_tests,
                                        tu_n_engine_socket_tests };
    tables[n++] = (struct test_table) { tu_datapath_queue_tests,
                                        tu_n_datapath_queue_tests };
    tables[n++] = (struct test_table) { tu_datapath_validate_tests,
                                        tu_n_datapath_validate_tests };
    tables[n++] = (struct test_table) { tu_datapath_cold_tests,
                                        tu_n_datapath_cold_tests };
    tables[n++] = (struct test_table) { tu_datapath_notify_tests,
                                        tu_n_datapath_notify_tests };
    tables[n++] = (struct test_table) { tu_datapath_buffer_tests,
                                        tu_n_datapath_buffer_tests };
    tables[n++] = (struct test_table) { tu_packed_ring_tests,
                                        tu_n_packed_ring_tests };
    tables[n++] = (struct test_table) { tu_packed_validate_tests,
                                        tu_n_packed_validate_tests };
    tables[n++] = (struct test_table) { tu_packed_order_tests,
                                        tu_n_packed_order_tests };
    tables[n++] = (struct test_table) { tu_packed_notify_tests,
                                        tu_n_packed_notify_tests };
    tables[n++] = (struct test_table) { tu_packed_state_tests,
                                        tu_n_packed_state_tests };
    tables[n++] = (struct test_table) { tu_packed_diff_tests,
                                        tu_n_packed_diff_tests };
    tables[n++] = (struct test_table) { tu_adversarial_tests,
                                        tu_n_adversarial_tests };
    tables[n++] = (struct test_table) { tu_adv_ctrl_tests,
                                        tu_n_adv_ctrl_tests };
    tables[n++] = (struct test_table) { tu_adv_stall_tests,
                                        tu_n_adv_stall_tests };
    tables[n++] = (struct test_table) { tu_sigbus_tests, tu_n_sigbus_tests };
    tables[n++] = (struct test_table) { tu_concurrency_tests, tu_n_concurrency_tests };
    tables[n++] = (struct test_table) { tu_adv_budget_tests, tu_n_adv_budget_tests };
    tables[n++] = (struct test_table) { tu_dirty_log_tests,
                                        tu_n_dirty_log_tests };
    tables[n++] = (struct test_table) { tu_lifecycle_tests,
                                        tu_n_lifecycle_tests };
    tables[n++] = (struct test_table) { tu_iotlb_tests, tu_n_iotlb_tests };
    tables[n++] = (struct test_table) { tu_iommu_tests, tu_n_iommu_tests };
    tables[n++] = (struct test_table) { tu_postcopy_tests,
                                        tu_n_postcopy_tests };
}

/* Every test of an audit build is audited: returns false, after saying
 * so, if any page a logged burst wrote was not marked in the dirty log
 * (lib/vhost-dirty-log.h).  Always true in other builds. */
static bool
audit_ok(const struct tu_test *test)
{
#ifdef VHOST_DIRTY_LOG_AUDIT
    uint64_t bad = vhost_dirty_log_audit_violations();

    tu_log("dirty-log audit: %"PRIu64" pages written while logging, "
           "%"PRIu64" not marked", vhost_dirty_log_audit_pages(), bad);
    if (bad) {
        tu_log("%s: FAILED: the dirty log missed pages", test->name);
        return false;
    }
#endif
    (void) test;
    return true;
}

static const struct tu_test *
find_test(const char *name)
{
    struct test_table tables[N_TEST_TABLES];

    collect_tables(tables);
    for (size_t t = 0; t < N_TEST_TABLES; t++) {
        for (size_t i = 0; i < tables[t].n; i++) {
            if (!strcmp(tables[t].tests[i].name, name)) {
                return &tables[t].tests[i];
            }
        }
    }
    return NULL;
}

static int
run_all(void)
{
    struct test_table tables[N_TEST_TABLES];
    int n_failed = 0, n = 0;

    collect_tables(tables);
    for (size_t t = 0; t < N_TEST_TABLES; t++) {
        for (size_t i = 0; i < tables[t].n; i++) {
            const struct tu_test *test = &tables[t].tests[i];
            pid_t pid = fork();
            int status;

            if (pid < 0) {
                perror("fork");
                return 1;
            } else if (!pid) {
                alarm(120);
                test->run();
                exit(audit_ok(test) ? 0 : 1);
            }
            waitpid(pid, &status, 0);
            n++;
            if (WIFEXITED(status) && !WEXITSTATUS(status)) {
                printf("%-28s ok\n", test->name);
            } else {
                printf("%-28s FAILED\n", test->name);
                n_failed++;
            }
            fflush(stdout);
        }
    }
    printf("%d tests, %d failed\n", n, n_failed);
    return n_failed != 0;
}

/* "get-config SOCKET": for tests of an embedder (the OVS provider).  As
 * a frontend on the server socket SOCKET, negotiates
 * VHOST_USER_PROTOCOL_F_CONFIG, reads the virtio-net configuration space
 * and prints its fields; exits 1 if any step fails. */
static int
get_config_main(const char *path)
{
    struct tfe *fe = tfe_create(tfe_mem_create_default());
    struct virtio_net_config cfg;
    struct tfe_reply r;
    uint64_t pf;

    if (tfe_connect_retry(fe, path, 5000)
        || tfe_get_protocol_features(fe, &pf)
        || !(pf & PF(CONFIG))
        || tfe_set_protocol_features(fe, PF(CONFIG))
        || tfe_get_config(fe, 0, sizeof cfg, 12 + sizeof cfg, &r)
        || r.hdr.size != 12 + sizeof cfg) {
        fprintf(stderr, "get-config: %s: no config space\n", path);
        return 1;
    }
    memcpy(&cfg, r.payload.bytes + 12, sizeof cfg);
    printf("status=%u max_virtqueue_pairs=%u mtu=%u\n", cfg.status,
           cfg.max_virtqueue_pairs, cfg.mtu);
    tfe_disconnect(fe);
    return 0;
}

int
main(int argc, char *argv[])
{
    const struct tu_test *test;
    const char *level = getenv("TEST_ENGINE_LOG");

    if (level && !strcmp(level, "dbg")) {
        vhost_log_set_level(VHOST_LOG_DBG);
    }
    if (argc == 3 && !strcmp(argv[1], "get-config")) {
        return get_config_main(argv[2]);
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s TEST | --list | --all | get-config SOCKET"
                "\n", argv[0]);
        return 2;
    }
    if (!strcmp(argv[1], "--list")) {
        struct test_table tables[N_TEST_TABLES];
        collect_tables(tables);
        for (size_t t = 0; t < N_TEST_TABLES; t++) {
            for (size_t i = 0; i < tables[t].n; i++) {
                printf("%-28s %s\n", tables[t].tests[i].name,
                       tables[t].tests[i].doc);
            }
        }
        return 0;
    }
    if (!strcmp(argv[1], "--all")) {
        return run_all();
    }
    test = find_test(argv[1]);
    if (!test) {
        fprintf(stderr, "%s: no test named %s (try --list)\n", argv[0],
                argv[1]);
        return 2;
    }
    /* A hung test fails rather than stalling the testsuite. */
    alarm(120);
    tu_log("%s: %s", test->name, test->doc);
    test->run();
    if (!audit_ok(test)) {
        return 1;
    }
    tu_log("%s: passed", test->name);
    return 0;
}
