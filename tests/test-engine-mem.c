/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests: guest memory messages (fixture in test-engine.h).
 *
 * SET_MEM_TABLE, GET_MAX_MEM_SLOTS, ADD_MEM_REG and REM_MEM_REG: tables the
 * engine takes, tables it refuses (and keeps the old one), and the
 * mappings it holds.
 */

#include <config.h>

#include "test-engine.h"

/* Memory tables. */

static void
test_mem_table(void)
{
    struct fx fx;
    struct vhost_port_info info;
    struct tfe_mem *other;
    struct vhost_user_mem_region regions[3];
    int fds[3], e0;

    fx_init(&fx, "mem");
    fx_start(&fx);
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);

    tu_log("SET_MEM_TABLE with two regions, a gap and a nonzero offset");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    info = tu_port_info(fx.port);
    TU_CHECK_EQ(info.n_mem_regions, 2);
    TU_CHECK_EQ(info.mem_size, 2 * TFE_DEFAULT_REGION_SIZE);
    TU_CHECK_EQ(info.counters.mem_table_updates, 1);
    TU_CHECK_EQ(fx_engine_maps(&fx), 2);
    tu_log("the engine keeps mappings, not fds");
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

    tu_log("replacing it with three other regions unmaps the old ones");
    other = tfe_mem_create();
    TU_CHECK_EQ(tfe_mem_add(other, 0, 1u << 20, 0), 0);
    TU_CHECK_EQ(tfe_mem_add(other, 16u << 20, 1u << 20, 8192), 1);
    TU_CHECK_EQ(tfe_mem_add(other, 64u << 20, 4096, 0), 2);
    for (size_t i = 0; i < 3; i++) {
        tfe_mem_region_desc(other, i, &regions[i]);
        fds[i] = other->regions[i].fd;
    }
    CHECK_ACK(tfe_set_mem_table_raw(fx.fe, regions, 3, fds, 3));
    info = tu_port_info(fx.port);
    TU_CHECK_EQ(info.n_mem_regions, 3);
    TU_CHECK_EQ(info.mem_size, (2u << 20) + 4096);
    TU_CHECK_EQ(fx_engine_maps(&fx) - (int) other->n_regions, 3);

    tu_log("50 replacements leak neither fds nor mappings");
    for (int i = 0; i < 50; i++) {
        CHECK_ACK(i % 2 ? tfe_set_mem_table(fx.fe)
                        : tfe_set_mem_table_raw(fx.fe, regions, 3, fds, 3));
    }
    TU_CHECK_EQ(fx_engine_maps(&fx) - (int) other->n_regions, 2);
    TU_CHECK_EQ(fx_engine_fds(&fx) - (int) other->n_regions, e0);
    TU_CHECK_EQ(fx_counters(&fx).mem_table_updates, 52);
    tfe_mem_destroy(other);

    tu_log("eight regions, the most SET_MEM_TABLE carries");
    other = tfe_mem_create();
    {
        struct vhost_user_mem_region r8[8];
        int f8[8];
        for (int i = 0; i < 8; i++) {
            TU_CHECK_EQ(tfe_mem_add(other, (uint64_t) i << 24, 65536,
                                    i * 4096), i);
            tfe_mem_region_desc(other, i, &r8[i]);
            f8[i] = other->regions[i].fd;
        }
        CHECK_ACK(tfe_set_mem_table_raw(fx.fe, r8, 8, f8, 8));
        TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 8);
        TU_CHECK_EQ(fx_engine_maps(&fx) - 8, 8);
    }
    tfe_mem_destroy(other);
    tu_log("the engine's mappings outlive the frontend's");
    TU_CHECK_EQ(fx_engine_maps(&fx), 8);

    tu_log("disconnecting unmaps guest memory");
    tfe_disconnect(fx.fe);
    fx_wait_disconnected(&fx);
    TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    fx_finish(&fx);
}

static void
test_mem_table_reject(void)
{
    struct fx fx;
    struct vhost_user_mem_region good[2], r[9];
    int fds[9], e0, maps0;
    const struct tfe_region *t0;

    fx_init(&fx, "memrej");
    fx_start(&fx);
    fx_negotiate(fx.fe);
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    t0 = &fx.fe->mem->regions[0];
    tfe_mem_region_desc(fx.fe->mem, 0, &good[0]);
    tfe_mem_region_desc(fx.fe->mem, 1, &good[1]);
    fds[0] = fx.fe->mem->regions[0].fd;
    fds[1] = fx.fe->mem->regions[1].fd;
    e0 = fx_engine_fds(&fx);
    maps0 = fx_engine_maps(&fx);
    TU_CHECK_EQ(maps0, 2);

#define CHECK_TABLE_KEPT()                                              \
    do {                                                                \
        struct vhost_port_info i_ = tu_port_info(fx.port);              \
        TU_CHECK_EQ(i_.n_mem_regions, 2);                               \
        TU_CHECK_EQ(i_.mem_size, 2 * TFE_DEFAULT_REGION_SIZE);          \
        TU_CHECK_EQ(fx_engine_maps(&fx), maps0);                           \
        TU_CHECK_EQ(fx_engine_fds(&fx), e0);                               \
    } while (0)

    tu_log("zero regions");
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 0, NULL, 0));
    CHECK_TABLE_KEPT();
    tu_log("zero regions in the header, one region's payload and fd");
    {
        struct vhost_user_mem_table t = { .nregions = 0 };
        t.regions[0] = good[0];
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_MEM_TABLE, true,
                                    &t, 40, fds, 1));
    }
    CHECK_TABLE_KEPT();
    tu_log("two regions, one fd");
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 2, fds, 1));
    CHECK_TABLE_KEPT();
    tu_log("one region, two fds");
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 1, fds, 2));
    CHECK_TABLE_KEPT();
    tu_log("nine regions in the header (eight sent, eight fds)");
    for (int i = 0; i < 8; i++) {
        r[i] = good[0];
        r[i].guest_phys_addr = (uint64_t) i << 30;
        fds[i] = t0->fd;
    }
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, r, 9, fds, 8));
    CHECK_TABLE_KEPT();
    fds[1] = fx.fe->mem->regions[1].fd;
    tu_log("payload size not 8 + 32 * nregions");
    {
        struct vhost_user_mem_table t = { .nregions = 1 };
        t.regions[0] = good[0];
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_MEM_TABLE, true,
                                    &t, 44, fds, 1));
        t.nregions = 2;
        t.regions[1] = good[1];
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_MEM_TABLE, true,
                                    &t, 40, fds, 2));
    }
    CHECK_TABLE_KEPT();

#define BAD_PAIR(WHAT, STMT)                                            \
    do {                                                                \
        r[0] = good[0];                                                 \
        r[1] = good[1];                                                 \
        STMT;                                                           \
        tu_log("%s", WHAT);                                             \
        CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, r, 2, fds, 2));    \
        CHECK_TABLE_KEPT();                                             \
    } while (0)

    BAD_PAIR("overlapping guest physical ranges",
             r[1].guest_phys_addr = r[0].guest_phys_addr + 4096);
    BAD_PAIR("overlapping frontend virtual ranges",
             r[1].userspace_addr = r[0].userspace_addr + 4096);
    BAD_PAIR("a zero-sized region", r[1].memory_size = 0);
    BAD_PAIR("gpa + size overflows",
             r[1].guest_phys_addr = UINT64_MAX - 4095);
    BAD_PAIR("uva + size overflows",
             r[1].userspace_addr = UINT64_MAX - 4095);
    BAD_PAIR("mmap_offset + size overflows",
             r[1].mmap_offset = UINT64_MAX - 4095);
    BAD_PAIR("mmap_offset + size beyond the memfd",
             r[1].mmap_offset += 4096);
    BAD_PAIR("size beyond the memfd", r[0].memory_size += 4096);
    BAD_PAIR("size 2^64 - 1", r[0].memory_size = UINT64_MAX);
#undef BAD_PAIR

    tu_log("a pipe instead of a memfd");
    {
        int p[2];
        TU_SYS(pipe(p));
        r[0] = good[0];
        CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, r, 1, &p[0], 1));
        close(p[0]);
        close(p[1]);
    }
    CHECK_TABLE_KEPT();
    tu_log("an eventfd instead of a memfd");
    {
        int efd = fx_temp_eventfd();
        CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 1, &efd, 1));
        close(efd);
    }
    CHECK_TABLE_KEPT();

    tu_log("a good table is still accepted after all that");
    fds[0] = fx.fe->mem->regions[0].fd;
    CHECK_ACK(tfe_set_mem_table_raw(fx.fe, good, 1, fds, 1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
    TU_CHECK_EQ(fx_engine_maps(&fx), 1);
    TU_CHECK_EQ(fx_counters(&fx).disconnects, 0);
#undef CHECK_TABLE_KEPT
    fx_finish(&fx);
}

/* GET_MAX_MEM_SLOTS, ADD_MEM_REG, REM_MEM_REG. */
static void
test_mem_slots(void)
{
    struct fx fx;
    struct tfe_mem *mem, *extra;
    struct vhost_user_mem_region desc;
    uint64_t n;
    int e0;
    const uint64_t rsize = 65536;

    fx_init(&fx, "slots");
    fx.engine = fx_start_engine();
    fx_create_port(&fx);
    mem = tfe_mem_create();
    for (int i = 0; i < VHOST_MAX_MEM_REGIONS; i++) {
        TU_CHECK_EQ(tfe_mem_add(mem, (uint64_t) i * 2 * rsize, rsize,
                                i % 3 ? 4096 * i : 0), i);
    }
    extra = tfe_mem_create();
    TU_CHECK_EQ(tfe_mem_add(extra, (uint64_t) VHOST_MAX_MEM_REGIONS * 2
                                   * rsize, rsize, 0), 0);
    fx.fe = tfe_create(mem);
    fx_connect_fe(&fx, fx.fe);
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);

    tu_log("GET_MAX_MEM_SLOTS is %d", VHOST_MAX_MEM_REGIONS);
    TU_CHECK_OK(tfe_get_max_mem_slots(fx.fe, &n));
    TU_CHECK_EQ(n, VHOST_MAX_MEM_REGIONS);

    tu_log("ADD_MEM_REG %d regions one at a time", VHOST_MAX_MEM_REGIONS);
    for (int i = 0; i < VHOST_MAX_MEM_REGIONS; i++) {
        CHECK_ACK(tfe_add_mem_region(fx.fe, i));
        TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, i + 1);
        if (i == 0) {
            tu_log("an overlapping region is rejected");
            tfe_mem_region_desc(mem, 0, &desc);
            desc.guest_phys_addr += 4096;
            desc.userspace_addr = tfe_va_to_uva(extra->regions[0].va);
            desc.mmap_offset = 0;
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            extra->regions[0].fd));
            tu_log("the same region again is accepted, as QEMU 7.2 sends "
                   "it once per queue pair, and mapped once");
            int maps0 = fx_engine_maps(&fx);
            CHECK_ACK(tfe_add_mem_region(fx.fe, 0));
            CHECK_ACK(tfe_add_mem_region(fx.fe, 0));
            TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
            TU_CHECK_EQ(tu_port_info(fx.port).mem_size, rsize);
            TU_CHECK_EQ(fx_engine_maps(&fx), maps0);
            tu_log("REM_MEM_REG of one instance keeps it mapped while "
                   "another holds it");
            tfe_mem_region_desc(mem, 0, &desc);
            CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
            CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
            TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
            TU_CHECK_EQ(fx_engine_maps(&fx), maps0);
            tu_log("an identical region from another file is refused");
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            extra->regions[0].fd));
            tu_log("a region identical but for its offset overlaps: "
                   "refused");
            desc.mmap_offset += 4096;
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            mem->regions[0].fd));
            TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
            tu_log("a region beyond its memfd is rejected");
            tfe_mem_region_desc(extra, 0, &desc);
            desc.memory_size += 1;
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            extra->regions[0].fd));
        }
    }
    TU_CHECK_EQ(tu_port_info(fx.port).mem_size,
                VHOST_MAX_MEM_REGIONS * rsize);
    TU_CHECK_EQ(fx_engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

    tu_log("region %d is one too many", VHOST_MAX_MEM_REGIONS + 1);
    tfe_mem_region_desc(extra, 0, &desc);
    CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc, extra->regions[0].fd));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, VHOST_MAX_MEM_REGIONS);

    tu_log("region 5 added twice: the first REM_MEM_REG keeps it");
    CHECK_ACK(tfe_add_mem_region(fx.fe, 5));
    tfe_mem_region_desc(mem, 5, &desc);
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, VHOST_MAX_MEM_REGIONS);
    TU_CHECK_EQ(fx_engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS);
    tu_log("REM_MEM_REG without an fd removes and unmaps region 5");
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions,
                VHOST_MAX_MEM_REGIONS - 1);
    TU_CHECK_EQ(fx_engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS - 1);
    tu_log("REM_MEM_REG with the region's fd removes region 6");
    tfe_mem_region_desc(mem, 6, &desc);
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, mem->regions[6].fd));
    TU_CHECK_EQ(fx_engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS - 2);
    TU_CHECK_EQ(tu_port_info(fx.port).mem_size,
                (VHOST_MAX_MEM_REGIONS - 2) * rsize);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

    tu_log("removing it again, or a region that does not match, fails");
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    tfe_mem_region_desc(mem, 7, &desc);
    desc.memory_size -= 4096;
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    tfe_mem_region_desc(mem, 7, &desc);
    desc.userspace_addr += 4096;
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    tfe_mem_region_desc(mem, 7, &desc);
    desc.guest_phys_addr += 4096;
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions,
                VHOST_MAX_MEM_REGIONS - 2);

    tu_log("now the extra region fits");
    tfe_mem_region_desc(extra, 0, &desc);
    CHECK_ACK(tfe_add_mem_reg(fx.fe, &desc, extra->regions[0].fd));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions,
                VHOST_MAX_MEM_REGIONS - 1);

    tu_log("SET_MEM_TABLE replaces all of them");
    {
        struct vhost_user_mem_region r0;
        tfe_mem_region_desc(mem, 0, &r0);
        CHECK_ACK(tfe_set_mem_table_raw(fx.fe, &r0, 1, &mem->regions[0].fd,
                                        1));
    }
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
    TU_CHECK_EQ(fx_engine_maps(&fx) - 1, 1);
    tfe_mem_destroy(extra);
    TU_CHECK_EQ(fx_engine_maps(&fx), 1);
    fx_finish(&fx);
}

const struct tu_test tu_engine_mem_tests[] = {
    { "mem-table", test_mem_table, "SET_MEM_TABLE and its replacement" },
    { "mem-table-reject", test_mem_table_reject,
      "bad memory tables leave the old one" },
    { "mem-slots", test_mem_slots,
      "GET_MAX_MEM_SLOTS, ADD_MEM_REG, REM_MEM_REG" },
};

const size_t tu_n_engine_mem_tests = ARRAY_SIZE(tu_engine_mem_tests);
