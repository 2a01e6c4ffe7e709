# SPDX-License-Identifier: Apache-2.0
# Fuzzing: libFuzzer targets for the message stream, both ring layouts,
# the virtio-net header parser, split against packed, and message
# sequences against a live data path (tests/fuzz/*.c, README "Security").
#
# Two builds of each target:
#
#   - tests/fuzz/fuzz-TARGET-replay, a check program built like the rest
#     (gcc -Werror, or clang with ASan+UBSan) with a main() that replays
#     inputs: tests/fuzz.at runs the committed corpus and every past
#     finding (tests/fuzz/regress/TARGET/) through it in `make check`.
#
#   - tests/fuzz/bin/fuzz-TARGET, built by `make fuzz` with clang and
#     -fsanitize=fuzzer,address,undefined (engine included, for coverage),
#     and run for FUZZ_TIME seconds each (default 60) by
#     tests/fuzz/run-fuzz.sh.  A finding fails `make fuzz` and is saved in
#     tests/fuzz/findings/ in the build tree; copy it into
#     tests/fuzz/regress/TARGET/ with the fix.
#
#     make fuzz [FUZZ_TIME=seconds] [FUZZ_TARGETS='split packed'] [FUZZ_CC=clang]
#     make fuzz-seeds        rewrites tests/fuzz/corpus/*/seed-* from the
#                            seeds each target's fuzz_target_seeds() makes

FUZZ_ALL_TARGETS = vhost-user split packed net-hdr diff live
FUZZ_TARGETS = $(FUZZ_ALL_TARGETS)
FUZZ_TIME = 60
FUZZ_CC = clang
FUZZ_SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer $(FUZZ_SANITIZE) \
	$(OVS_VHOST_STD_CFLAGS)
FUZZ_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/lib \
	-I$(top_srcdir)/tests/fuzz -I$(top_builddir)

FUZZ_HARNESS = \
	tests/fuzz/fuzz-input.h \
	tests/fuzz/fuzz-mem.c \
	tests/fuzz/fuzz-mem.h \
	tests/fuzz/fuzz-ring.c \
	tests/fuzz/fuzz-ring.h

check_PROGRAMS += \
	tests/fuzz/fuzz-vhost-user-replay \
	tests/fuzz/fuzz-split-replay \
	tests/fuzz/fuzz-packed-replay \
	tests/fuzz/fuzz-net-hdr-replay \
	tests/fuzz/fuzz-diff-replay \
	tests/fuzz/fuzz-live-replay
tests_fuzz_fuzz_vhost_user_replay_SOURCES = tests/fuzz/fuzz-vhost-user.c \
	tests/fuzz/fuzz-main.c $(FUZZ_HARNESS)
tests_fuzz_fuzz_vhost_user_replay_LDADD = lib/libovs-vhost-core.la
tests_fuzz_fuzz_split_replay_SOURCES = tests/fuzz/fuzz-split.c \
	tests/fuzz/fuzz-main.c $(FUZZ_HARNESS)
tests_fuzz_fuzz_split_replay_LDADD = lib/libovs-vhost-core.la
tests_fuzz_fuzz_packed_replay_SOURCES = tests/fuzz/fuzz-packed.c \
	tests/fuzz/fuzz-main.c $(FUZZ_HARNESS)
tests_fuzz_fuzz_packed_replay_LDADD = lib/libovs-vhost-core.la
tests_fuzz_fuzz_net_hdr_replay_SOURCES = tests/fuzz/fuzz-net-hdr.c \
	tests/fuzz/fuzz-main.c $(FUZZ_HARNESS)
tests_fuzz_fuzz_net_hdr_replay_LDADD = lib/libovs-vhost-core.la
tests_fuzz_fuzz_diff_replay_SOURCES = tests/fuzz/fuzz-diff.c \
	tests/fuzz/fuzz-main.c $(FUZZ_HARNESS)
tests_fuzz_fuzz_diff_replay_LDADD = lib/libovs-vhost-core.la
# fuzz-live places the engine's mappings between guard pages, and lets the
# bursts run where a handler calls into the device: its own mmap(),
# munmap() and yield points stand in for the real ones, in this program
# only (tests/fuzz/fuzz-live.c).
FUZZ_LIVE_WRAP = -Wl,--wrap=mmap -Wl,--wrap=munmap \
	-Wl,--wrap=vhost_dev_remap_queue -Wl,--wrap=vhost_dev_update_ready
tests_fuzz_fuzz_live_replay_SOURCES = tests/fuzz/fuzz-live.c \
	tests/fuzz/fuzz-main.c tests/fuzz/fuzz-input.h
tests_fuzz_fuzz_live_replay_LDADD = lib/libovs-vhost-core.la -lpthread
tests_fuzz_fuzz_live_replay_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_LIVE_WRAP)

EXTRA_DIST += \
	tests/fuzz/run-fuzz.sh \
	tests/fuzz/corpus \
	tests/fuzz/regress

# The libFuzzer build: every object compiled again with FUZZ_CC and
# coverage instrumentation, out of the way of the regular objects.
FUZZ_LIB_OBJS = $(patsubst %.c,tests/fuzz/obj/%.o, \
	$(filter %.c,$(lib_libovs_vhost_core_la_SOURCES)))
FUZZ_HARNESS_OBJS = tests/fuzz/obj/tests/fuzz/fuzz-mem.o \
	tests/fuzz/obj/tests/fuzz/fuzz-ring.o

tests/fuzz/obj/%.o: $(srcdir)/%.c config.h
	@mkdir -p $(@D)
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) \
	  -fsanitize=fuzzer-no-link -c -o $@ $<

# The pattern rule knows only the .c file: a target built against an old
# fuzz-ring.h reads a struct fuzz_ring of the old size.
$(patsubst %,tests/fuzz/obj/tests/fuzz/fuzz-%.o,$(FUZZ_ALL_TARGETS)) \
$(FUZZ_HARNESS_OBJS): $(addprefix $(srcdir)/,$(filter %.h,$(FUZZ_HARNESS)))

tests/fuzz/bin/fuzz-%: tests/fuzz/obj/tests/fuzz/fuzz-%.o \
		$(FUZZ_HARNESS_OBJS) $(FUZZ_LIB_OBJS)
	@mkdir -p $(@D)
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ \
	  -lpthread

tests/fuzz/bin/fuzz-live: tests/fuzz/obj/tests/fuzz/fuzz-live.o \
		$(FUZZ_LIB_OBJS)
	@mkdir -p $(@D)
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_LIVE_WRAP) \
	  -o $@ $^ -lpthread

# Keep the objects: they are intermediate files of the pattern rules.
.PRECIOUS: tests/fuzz/obj/%.o tests/fuzz/bin/fuzz-%

fuzz: $(patsubst %,tests/fuzz/bin/fuzz-%,$(FUZZ_TARGETS))
	$(SHELL) '$(srcdir)/tests/fuzz/run-fuzz.sh' \
	  --bin tests/fuzz/bin --srcdir '$(srcdir)/tests/fuzz' \
	  --out tests/fuzz --time '$(FUZZ_TIME)' $(FUZZ_TARGETS)

fuzz-seeds: $(patsubst %,tests/fuzz/fuzz-%-replay,$(FUZZ_ALL_TARGETS))
	for t in $(FUZZ_ALL_TARGETS); do \
	  mkdir -p '$(srcdir)/tests/fuzz/corpus/'$$t && \
	  tests/fuzz/fuzz-$$t-replay --seeds '$(srcdir)/tests/fuzz/corpus/'$$t \
	  || exit 1; \
	done

clean-local: fuzz-clean
fuzz-clean:
	rm -rf tests/fuzz/obj tests/fuzz/bin tests/fuzz/work \
	  tests/fuzz/findings tests/fuzz/*.log
.PHONY: fuzz fuzz-seeds fuzz-clean
