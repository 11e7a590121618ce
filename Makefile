# ampc: build, test, install.
#
#   make            the compiler (build/ampc) and runtime (build/libamprt.{a,so})
#   make check      the fast loop (a few minutes): unit and structure, golden,
#                   hostile inputs, end-to-end without the heaviest models
#   make test       every test: unit, runtime, golden, end-to-end (gcc and
#                   clang), ops against PyTorch, gradients, training, install,
#                   the sanitizer build, and fuzz smoke runs
#   make example    compile examples/mlp.amp for tpu, build it, run it
#   make digits     train examples/digits (MLP and CNN) on tpu, gpu and cpu
#   make MPI=1      the runtime's collectives on MPI, in build/mpi
#                   (docs/distributed.md)
#   make BARE=1     the runtime alone, without threads and without stdio or
#                   files, for bare metal, in build/bare
#   make REF_ONLY=1 the runtime alone, its reference kernels without the
#                   optimized sets, in build/ref (both: build/bare-ref;
#                   NO_AVX512=1: the avx2 set alone; docs/runtime.md,
#                   "Small binaries"; make bench-size)
#
# Everything is built out of tree, in $(BUILD) (default build/, and
# build/mpi with MPI=1).  A second tree with sanitizers:
# make BUILD=build/asan SANITIZE=1.

#   make CROSS=aarch64-linux-gnu-    the runtime and its tests for aarch64,
#                   in build/aarch64 (mk/aarch64.mk; make test-aarch64 runs
#                   them, and the examples' emitted C, under qemu-aarch64)

MPI      ?=
# CROSS: a cross toolchain's prefix; then only the runtime and its tests
# are built (the compiler runs on the host), in a tree of their own.
CROSS    ?=
ifneq ($(CROSS),)
BUILD    ?= build/$(firstword $(subst -, ,$(CROSS)))
ifeq ($(origin CC),default)
CC       := $(CROSS)gcc
endif
ifeq ($(origin AR),default)
AR       := $(CROSS)ar
endif
endif
# BARE=1: AMPRT_NO_THREADS (frame/serial.c instead of the thread pool) and
# AMPRT_NO_STDIO (no warnings on stderr, no amp_st_open or amp_st_write),
# and no unwind tables (.eh_frame: a C runtime without exceptions needs
# none, and they were 4 KB of the small MLP program), and functions not
# padded to 16 bytes (256 bytes of the every-set MLP program; loops keep
# their alignment);
# REF_ONLY=1: AMPRT_REF_ONLY (no kernel set but the reference);
# NO_AVX512=1: AMPRT_NO_AVX512 (on x86, the avx2 set alone).  Any of them
# builds the runtime only, in a tree of its own named for them
# (build/bare, build/bare-ref, build/bare-noavx512, ...).
BARE      ?=
REF_ONLY  ?=
NO_AVX512 ?=
empty :=
space := $(empty) $(empty)
RUNTIME_VARIANT := $(subst $(space),-,$(strip $(if $(filter 1,$(BARE)),bare) $(if $(filter 1,$(REF_ONLY)),ref) \
                                              $(if $(filter 1,$(NO_AVX512)),noavx512)))
RUNTIME_DEFS    := $(if $(filter 1,$(BARE)),-DAMPRT_NO_THREADS -DAMPRT_NO_STDIO -fno-asynchronous-unwind-tables -fno-unwind-tables \
                                             -falign-functions=1) \
                   $(if $(filter 1,$(REF_ONLY)),-DAMPRT_REF_ONLY) \
                   $(if $(filter 1,$(NO_AVX512)),-DAMPRT_NO_AVX512)
ifneq ($(RUNTIME_VARIANT),)
BUILD    ?= build/$(RUNTIME_VARIANT)
endif
BUILD    ?= $(if $(filter 1,$(MPI)),build/mpi,build)
CC       ?= cc
SANITIZE ?=
OPT      ?= -O2

# The compiler's layers, each in its folder, each header including the one
# below it: core <- front <- middle <- back <- ampc.h (docs/architecture.md).
COMPILER_DIRS := src src/core src/front src/middle src/back

WARN     := -Wall -Wextra -pedantic -Werror
SAN_LIST  := address,undefined
SAN_FLAGS := $(if $(SANITIZE),-fsanitize=$(SAN_LIST) -fno-omit-frame-pointer -fno-sanitize-recover=all)
# The compiler uses C11 (_Noreturn, _Alignas) and POSIX; the runtime and the
# code ampc emits are C99.  The runtime never contracts a * b + c into one
# fused multiply-add behind the source's back: its vector kernels are bit for
# bit the reference only when both round where the source says.  GCC in
# -std=c99 already does not contract, but Clang does by default.
CFLAGS_COMPILER := -std=c11 -D_GNU_SOURCE $(OPT) -g $(WARN) $(SAN_FLAGS) $(addprefix -I,$(COMPILER_DIRS)) -Iruntime/include -I$(BUILD)/gen
CFLAGS_RUNTIME  := -std=c99 -ffp-contract=off -D_POSIX_C_SOURCE=200809L $(OPT) -g $(WARN) $(SAN_FLAGS) -fPIC -ffunction-sections -fdata-sections -Iruntime/include $(RUNTIME_DEFS)
LDFLAGS  += $(SAN_FLAGS)
# Each object records the headers it included (-MMD), so an edit to any
# header rebuilds exactly what read it; -MP keeps a deleted header from
# breaking the build.  The .d files are read at the end of this Makefile.
DEPFLAGS := -MMD -MP

COMPILER_SRCS := $(filter-out src/main.c,$(wildcard $(addsuffix /*.c,$(COMPILER_DIRS))))
COMPILER_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(COMPILER_SRCS)) \
                 $(BUILD)/obj/parser.o $(BUILD)/obj/lexer.o $(BUILD)/obj/policies.o
# MPI=1: the collectives of data-parallel training on MPI (collective_mpi.c,
# docs/distributed.md) instead of the one-process ones; the library's names,
# and so the emitted C, are the same either way.  Link programs with MPI_LIBS.
ifeq ($(MPI),1)
ifeq ($(shell command -v mpicc),)
$(error MPI=1 needs mpicc (Debian: libopenmpi-dev openmpi-bin))
endif
MPI_CFLAGS := $(shell mpicc --showme:compile)
MPI_LIBS   := $(shell mpicc --showme:link)
RUNTIME_SRCS  := $(filter-out runtime/src/collective_single.c,$(wildcard runtime/src/*.c runtime/src/*/*.c))
else
MPI_LIBS   :=
RUNTIME_SRCS  := $(filter-out runtime/src/collective_mpi.c,$(wildcard runtime/src/*.c runtime/src/*/*.c))
endif
# REF_ONLY=1: no architecture's kernel-set folder (dispatch.c has no rows
# for them and answers amp_cpu_features itself).
ifeq ($(REF_ONLY),1)
RUNTIME_SRCS  := $(filter-out runtime/src/x86/% runtime/src/arm/%,$(RUNTIME_SRCS))
endif
ifeq ($(NO_AVX512),1)
RUNTIME_SRCS  := $(filter-out runtime/src/x86/avx512%,$(RUNTIME_SRCS))
endif
RUNTIME_OBJS  := $(RUNTIME_SRCS:runtime/src/%.c=$(BUILD)/rtobj/%.o)
# The MPI setting $(BUILD)'s runtime was built with, as a file whose name
# says it: building a tree with the other setting relinks the library
# rather than keeping (or mixing in) the other backend.
RUNTIME_CONFIG := $(BUILD)/runtime-mpi$(if $(filter 1,$(MPI)),1,0).stamp
POLICIES      := $(wildcard policies/*.policy)

UNIT_TESTS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
RUNTIME_TESTS := $(patsubst tests/runtime/%.c,$(BUILD)/tests/%,$(wildcard tests/runtime/test_*.c))

.PHONY: digits all check test test-unit test-runtime test-golden test-hostile test-e2e test-sanitize test-fuzz fuzz-long test-ops test-grad test-train test-torch test-zoo test-onnx test-onnx-zoo test-mpi example clean
.DELETE_ON_ERROR:

ifneq ($(RUNTIME_VARIANT),)
all: $(BUILD)/libamprt.a
else ifeq ($(CROSS),)
all: $(BUILD)/ampc $(BUILD)/libamprt.a $(BUILD)/libamprt.so
else
all: $(BUILD)/libamprt.a $(BUILD)/libamprt.so $(RUNTIME_TESTS)
endif

# ---- the compiler -----------------------------------------------------------

$(BUILD)/gen/parser.c $(BUILD)/gen/parser.h: grammar/parser.y
	@mkdir -p $(BUILD)/gen
	bison -Wall -Werror --defines=$(BUILD)/gen/parser.h -o $(BUILD)/gen/parser.c $<

$(BUILD)/gen/lexer.c $(BUILD)/gen/lexer.h: grammar/lexer.l
	@mkdir -p $(BUILD)/gen
	flex --header-file=$(BUILD)/gen/lexer.h -o $(BUILD)/gen/lexer.c $<

# The policy files become C strings, so an installed ampc needs no data dir.
$(BUILD)/gen/policies.c: $(POLICIES) scripts/embed-policies.sh
	@mkdir -p $(BUILD)/gen
	sh scripts/embed-policies.sh $(POLICIES) > $@

$(BUILD)/obj/%.o: src/%.c src/core/ops.def $(BUILD)/gen/parser.h $(BUILD)/gen/lexer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMPILER) $(DEPFLAGS) -c -o $@ $<

# Generated code is not ours to make warning-free: flex's output trips -Wextra,
# and clang's -Wmisleading-indentation on its state buffer code.
$(BUILD)/obj/%.o: $(BUILD)/gen/%.c $(BUILD)/gen/parser.h $(BUILD)/gen/lexer.h
	@mkdir -p $(BUILD)/obj
	$(CC) $(CFLAGS_COMPILER) -Wno-unused-function -Wno-sign-compare -Wno-unused-parameter -Wno-overlength-strings -Wno-misleading-indentation -c -o $@ $<

$(BUILD)/libampc.a: $(COMPILER_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

# --embed-weights reads safetensors with the runtime's reader, the one
# the fuzzer exercises, and checks a weights file against the model with the
# loader the emitted code calls (st_params.c), so the compiler links those
# runtime objects.
AMPC_RT_OBJS := $(BUILD)/rtobj/safetensors.o $(BUILD)/rtobj/st_params.o $(BUILD)/rtobj/dtype.o $(BUILD)/rtobj/status.o

$(BUILD)/ampc: $(BUILD)/obj/main.o $(BUILD)/libampc.a $(AMPC_RT_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ -lgmp -lm

# ---- the runtime ------------------------------------------------------------

# runtime/src holds the core (dispatch, dtypes, I/O, collectives), ref/ the
# reference kernels, frame/ the portable drivers, and one folder per
# architecture for its kernel sets (x86/), which compile to nothing elsewhere.
# Sources name each other's headers from runtime/src (docs/runtime.md).
$(BUILD)/rtobj/%.o: runtime/src/%.c runtime/include/amprt.h $(wildcard runtime/include/amprt/*.h runtime/src/*.h runtime/src/*/*.h runtime/src/*/*.inc)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_RUNTIME) -Iruntime/src $(DEPFLAGS) -c -o $@ $<

$(BUILD)/rtobj/collective_mpi.o: CFLAGS_RUNTIME += $(MPI_CFLAGS)

$(RUNTIME_CONFIG):
	@mkdir -p $(dir $@) && rm -f $(BUILD)/runtime-mpi*.stamp && touch $@

$(BUILD)/libamprt.a: $(RUNTIME_OBJS) $(RUNTIME_CONFIG)
	rm -f $@ && $(AR) rcs $@ $(RUNTIME_OBJS)

$(BUILD)/libamprt.so: $(RUNTIME_OBJS) $(RUNTIME_CONFIG)
	$(CC) $(LDFLAGS) -shared -o $@ $(RUNTIME_OBJS) -lm -lpthread $(MPI_LIBS)

# the header dependencies of the runtime's subfolders' objects (DEPFLAGS)
-include $(wildcard $(BUILD)/rtobj/*/*.d)

# ---- tests ------------------------------------------------------------------

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libampc.a $(AMPC_RT_OBJS)
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS_COMPILER) $(DEPFLAGS) -o $@ $< $(BUILD)/libampc.a $(AMPC_RT_OBJS) $(LDFLAGS) -lcmocka -lgmp -lm

$(BUILD)/tests/test_%: tests/runtime/test_%.c $(BUILD)/libamprt.a
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS_RUNTIME) $(DEPFLAGS) -Iruntime/src -o $@ $< $(BUILD)/libamprt.a $(LDFLAGS) -lcmocka -lm -lpthread $(MPI_LIBS)

# The cmocka tests of each compiler module, then the structure check: the
# layers depend one way, and no file or function outgrows its limit.
test-unit: $(UNIT_TESTS) $(BUILD)/ampc
	@for t in $(UNIT_TESTS); do echo "== $$t"; CC="$(CC)" AMPRT_LINK_CFLAGS="$(SAN_FLAGS)" $$t || exit 1; done
	sh tests/unit/structure.sh $(BUILD)
	sh tests/unit/options.sh $(BUILD)

# Every runtime test, then those whose kernels the optimized sets override
# again under each AMPRT_ISA this CPU supports (RUNTIME_ISA_RERUN= skips
# the second part: test-sanitize does, its first part having run every
# set's kernels already).
RUNTIME_ISA_RERUN ?= yes
# The tests of the kernels the optimized sets override, rerun under each
# set (here by run-isas.sh, under emulation by make test-aarch64-sets).
RUNTIME_ISA_TESTS := test_kernels test_gemm test_fastgemm test_linear_ex test_fastconv test_fastwinograd test_fastdepthwise test_conv_ex \
                     test_fasteltwise test_fastattention test_fastbackward test_fastloss test_fastrows_backward \
                     test_fastattention_backward test_fastscalar_arith test_dispatch test_backward_unary
test-runtime: $(RUNTIME_TESTS)
	@for t in $^; do echo "== $$t"; $$t || exit 1; done
	$(if $(RUNTIME_ISA_RERUN),CC="$(CC)" PROBE_CFLAGS="$(SAN_FLAGS)" sh tests/runtime/run-isas.sh $(BUILD) \
	    $(RUNTIME_ISA_TESTS),\
	    @echo "test-runtime: the per-AMPRT_ISA reruns skipped (RUNTIME_ISA_RERUN is empty)")

test-golden: $(BUILD)/ampc
	sh tests/golden/run.sh $(BUILD)/ampc

# Hostile inputs under time and memory bounds: documented exit codes and
# messages, no file lost (tests/hostile/run.sh).
test-hostile: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/hostile/run.sh $(BUILD)

test-e2e: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/e2e/run.sh $(BUILD)

# The same suites again under ASan and UBSan, in a tree of their own.  The
# runtime tests run once: their plain run checks every kernel set this CPU
# has through amp_kernel_table_for, so the per-AMPRT_ISA reruns (which
# test the dispatch, unchanged by sanitizers) would repeat those kernels.
test-sanitize:
	$(MAKE) BUILD=$(BUILD)/asan SANITIZE=1 CC=clang OPT=-O1 RUNTIME_ISA_RERUN= \
	    test-unit test-runtime test-golden
	E2E_COMPILERS=clang E2E_SKIP_HEAVY=1 E2E_CFLAGS="-fsanitize=$(SAN_LIST) -fno-sanitize-recover=all" \
	    $(MAKE) BUILD=$(BUILD)/asan SANITIZE=1 CC=clang OPT=-O1 test-e2e

test-fuzz:
	sh tests/fuzz/run.sh $(BUILD)

# Not in CI: each fuzzer for FUZZ_SECONDS (an hour by default), then a
# summary table (tests/fuzz/long.sh; recorded runs in tests/fuzz/results/).
FUZZ_SECONDS ?= 3600
fuzz-long:
	sh tests/fuzz/long.sh $(BUILD) $(FUZZ_SECONDS)

# Every op's emitted C against PyTorch in float64 (skips without torch);
# the complex ops through their own driver (no check harness for complex).
test-ops: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/ops/run.sh $(BUILD)
	sh tests/ops/complex/run.sh $(BUILD)

# Every gradient rule against the f64 evaluation and finite differences.
test-grad: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/grad/run.sh $(BUILD)

# ONNX models through tools/onnx2amp: torchvision exports against PyTorch,
# and ONNX's own node tests of the mapped ops (skips without python3-onnx).
test-onnx: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/onnx/run.sh $(BUILD)

# Issue 13's models at full size (224 x 224) through ONNX at opsets 13 and
# 17 on every target (tests/onnx/compare.py --zoo): long (vgg16 and
# alexnet export hundreds of MB), so not part of make test.
# ONNX_ZOO=name... for some.
test-onnx-zoo: $(BUILD)/ampc $(BUILD)/libamprt.a
	/usr/bin/python3 tests/onnx/compare.py $(BUILD) --zoo $(ONNX_ZOO)

# torchvision models through tools/torch2amp against PyTorch (skips without torch).
test-torch: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/torch/run.sh $(BUILD)

# The full-size torchvision zoo (tests/torch/models.py ZOO, 224 x 224) and
# BERT_pytorch's shape through tools/torch2amp against PyTorch, as test-torch
# checks its small models, and every training run of train_models.py: long
# (tens of minutes on 2 cores), so not part of make test.  ZOO=name... for some.
test-zoo: $(BUILD)/ampc $(BUILD)/libamprt.a
	/usr/bin/python3 tests/torch/compare.py $(BUILD) --zoo $(addprefix zoo_,$(ZOO))
	/usr/bin/python3 tests/torch/train_models.py --all $(BUILD)

# Training end to end: the digits examples, loss scaling, checkpoints.
test-train: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/train/run.sh $(BUILD)

# Data-parallel training under mpirun -np 2 (skips without MPI); builds its
# own MPI=1 runtime in $(BUILD)/mpi.
test-mpi: $(BUILD)/ampc $(BUILD)/libamprt.a
	sh tests/mpi/run.sh $(BUILD)

test: all
	sh tests/run-all.sh $(BUILD)

# The inner loop: what a compiler change breaks first, in a few minutes.
check: all
	$(MAKE) --no-print-directory BUILD=$(BUILD) test-unit test-golden test-hostile
	E2E_SKIP_HEAVY=1 $(MAKE) --no-print-directory BUILD=$(BUILD) test-e2e

# ---- the main job -------------------------------------------------------------

example: all
	sh examples/run-mlp.sh $(BUILD) tpu

# Training: the digits MLP and CNN, 10 epochs each, on every target; each
# run fails unless it reaches 95% held-out accuracy.
digits: all
	for model in mlp cnn; do for target in tpu gpu cpu; do \
	    sh examples/digits/run.sh $(BUILD) $$target $$model 10 0.95 || exit 1; done; done

clean:
	rm -rf $(BUILD)

include mk/install.mk
include mk/aarch64.mk
-include mk/bench.mk

# the header dependencies the compiles above recorded (DEPFLAGS)
-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/obj/*/*.d $(BUILD)/rtobj/*.d $(BUILD)/tests/*.d)
