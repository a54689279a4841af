# amxk - build, test, demo and benchmark targets (GNU make).
#
#   make test         unit tests (gcc; each tests/test_*.c twice: native tiers, and with the AMX tile
#                     emulator) + compile tests; ends with one `N passed, N failed` line
#   make demo         build examples/, run build/linear (or build/hello until linear.c exists)
#   make bench-bin    build build/amxk_bench (and build/onednn_peer when oneDNN is installed)
#   make bench        run the benchmark suite, write bench/results.md
#   make sanitize     unit tests under ASan + UBSan
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
TEST_BINS := $(foreach t,$(TEST_NAMES),$(BUILD)/$(t) $(BUILD)/$(t)_emu)

# Examples: every examples/*.c; openmp.c needs -fopenmp (built with gcc only).
EXAMPLE_SRCS := $(sort $(wildcard examples/*.c))
EXAMPLE_BINS := $(patsubst examples/%.c,build/%,$(EXAMPLE_SRCS))
DEMO_MAIN := $(if $(wildcard examples/linear.c),build/linear,build/hello)

# oneDNN peer program: built when dnnl.h is installed (libdnnl-dev).
HAVE_DNNL := $(wildcard /usr/include/dnnl.h /usr/local/include/dnnl.h)
BENCH_BINS := build/amxk_bench $(if $(HAVE_DNNL),build/onednn_peer)

.PHONY: all test tests unit-tests compile-tests demo examples bench bench-bin sanitize clang aarch64 clean
.DELETE_ON_ERROR:

all: tests examples bench-bin

# ---- tests ------------------------------------------------------------------------------------

tests: $(TEST_BINS)

$(BUILD)/%_emu: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DAMXK_AMX_EMULATE $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

$(BUILD)/test_%: tests/test_%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

# The unit tests and the compile tests, summed by tests/run_tests.sh (last line: N passed, N failed).
test: $(TEST_BINS)
	@bash tests/run_tests.sh $(TEST_BINS) tests/compile/run.sh

# Unit tests only (used by the sanitize/clang/aarch64 targets).
unit-tests: $(TEST_BINS)
	@bash tests/run_tests.sh $(TEST_BINS)

compile-tests:
	@bash tests/run_tests.sh tests/compile/run.sh

sanitize:
	$(MAKE) --no-print-directory unit-tests BUILD=build/sanitize CC=$(if $(shell command -v clang),clang,gcc) \
	    CFLAGS="-O1 -g -fno-omit-frame-pointer -Wall -Wextra -Wpedantic -Werror" \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all"

clang:
	$(MAKE) --no-print-directory unit-tests BUILD=build/clang CC=clang

AARCH64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64-static
aarch64:
	@command -v $(AARCH64_CC) >/dev/null || { echo "$(AARCH64_CC) not found (apt-get install gcc-aarch64-linux-gnu)"; exit 1; }
	@command -v $(QEMU_AARCH64) >/dev/null || { echo "$(QEMU_AARCH64) not found (apt-get install qemu-user-static)"; exit 1; }
	$(MAKE) --no-print-directory unit-tests BUILD=build/aarch64 CC=$(AARCH64_CC) EXTRA_LDFLAGS=-static \
	    AMXK_RUN_PREFIX=$(QEMU_AARCH64)

# ---- examples ---------------------------------------------------------------------------------

examples: $(EXAMPLE_BINS)

build/openmp: examples/openmp.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fopenmp $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

build/%: examples/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

demo: $(EXAMPLE_BINS)
	./$(DEMO_MAIN)

# ---- benchmarks -------------------------------------------------------------------------------

bench-bin: $(BENCH_BINS)

build/amxk_bench: bench/amxk_bench.c $(wildcard bench/*.h) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

build/onednn_peer: bench/onednn_peer.c bench/bench_util.h amxk.h
	@mkdir -p $(@D)
	$(CC) $(STD) $(CFLAGS) -fopenmp $< -o $@ -ldnnl $(LDLIBS)

bench: $(BENCH_BINS)
	bash bench/run_bench.sh

clean:
	rm -rf build
