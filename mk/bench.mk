# make bench: GEMM GFLOP/s of the runtime (bench/gemm_bench.c: square
# N = 256, 512, 1024, bf16/f16/f32, 1 and 2 threads, median of 9) and
# PyTorch's torch.matmul in f32 and bf16 (2 threads), alternating,
# BENCH_ROUNDS rounds (bench/torch_bench.py runs both).
# Then the models (bench/model_bench.c + bench/torch_models.py): inference
# of mlp, lenet5 and resnet18 at batch 1 and 8 and training steps of
# resnet18 (batch 8) and the digits MLP (batch 64), ampc (-t cpu, bf16
# autocast) against PyTorch f32 and PyTorch autocast bf16, 2 threads,
# alternating, on the same weights; each ratio is against the faster
# PyTorch.  PyTorch must call OpenBLAS (bench/require-openblas.sh installs
# Debian's libopenblas0-pthread when missing and root); every command
# runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, so OpenBLAS
# picks its own kernels.  BENCH_ISA=avx2 times the AVX2 machine on a
# larger one: ampc's avx2 kernel set (AMPRT_ISA=avx2) against PyTorch held
# to AVX2 as well (ATen's and oneDNN's kernels, OpenBLAS's Haswell ones,
# what it takes on Zen 3).  docs/benchmarks.md records runs.  BENCH_SIZES
# overrides the GEMM sizes, BENCH_ROUNDS the model rounds; `make
# bench-models` runs the model part alone.  Both also write the model
# results as CSV to BENCH_CSV, which scripts/plot-bench.sh draws; `make
# bench` writes the GEMM table to BENCH_GEMM_CSV too.

BENCH_SIZES ?= 256 512 1024
BENCH_CSV ?= $(BUILD)/bench/models.csv
BENCH_GEMM_CSV ?= $(BUILD)/bench/gemm.csv
BENCH_PYTHON ?= /usr/bin/python3

.PHONY: bench bench-models bench-kernels bench-compile bench-size bench-zoo

# make bench-kernels: the kernels between the products (element-wise,
# casts, batch_norm, pooling, sums, cross_entropy, gradients, sgd) of
# BENCH_KERNEL_SET (avx2 by default; on an AVX-512 machine it still runs
# the AVX2 set) against the reference, per storage dtype, one thread
# (bench/kernel_bench.c): which storage wins per op.
BENCH_KERNEL_SET ?= avx2
$(BUILD)/bench/kernel_bench: bench/kernel_bench.c $(BUILD)/libamprt.a
	@mkdir -p $(BUILD)/bench
	$(CC) $(CFLAGS_RUNTIME) -Iruntime/src -o $@ $< $(BUILD)/libamprt.a -lm -lpthread

bench-kernels: $(BUILD)/bench/kernel_bench
	@echo "== machine: $$(nproc) CPUs, $$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $$(cut -d' ' -f1-3 /proc/loadavg)"
	$(BUILD)/bench/kernel_bench $(BENCH_KERNEL_SET)

# make bench-size: what the MLP example adds to an empty static, stripped
# program, on the runtime built BARE=1 NO_AVX512=1 (the avx2 set), BARE=1
# (every set) and BARE=1 REF_ONLY=1 (the reference kernels alone), and on
# the default runtime
# (bench/binary_size.sh; docs/runtime.md, "Small binaries").  Fails over
# 64 KB (the avx2 set, every set) and 16 KB (the reference), and when a
# program on the BARE=1 runtime, linked without --gc-sections, asks for
# stdio.  `make bench` runs it last.
bench-size: $(BUILD)/ampc $(BUILD)/libamprt.a
	$(MAKE) BARE=1 BUILD=$(BUILD)/bare
	$(MAKE) BARE=1 NO_AVX512=1 BUILD=$(BUILD)/bare-noavx512
	$(MAKE) BARE=1 REF_ONLY=1 BUILD=$(BUILD)/bare-ref
	CC="$(CC)" sh bench/binary_size.sh $(BUILD)

# The compiler's own speed: time and memory of 1k, 10k and 100k-op models
# (bench/compile_speed.sh; needs /usr/bin/time, Debian's `time`).
bench-compile: $(BUILD)/ampc
	@echo "== machine: $$(nproc) CPUs, $$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $$(cut -d' ' -f1-3 /proc/loadavg)"
	sh bench/compile_speed.sh $(BUILD)/ampc

BENCH_ROUNDS ?= 3
BENCH_ISA ?=
# the environment of every benchmark command (OpenBLAS's kernel choice
# its own; with BENCH_ISA=avx2 both sides held to AVX2, with
# BENCH_ISA=avx512 to AVX-512 without BF16 or VNNI: an AVX-512 CPU of the
# kind without bf16 instructions, Skylake-SP to Ice Lake)
BENCH_ENV := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
ifeq ($(BENCH_ISA),avx2)
BENCH_ENV += AMPRT_ISA=avx2 ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
else ifeq ($(BENCH_ISA),avx512)
BENCH_ENV += AMPRT_ISA=avx512 ATEN_CPU_CAPABILITY=avx512 DNNL_MAX_CPU_ISA=AVX512_CORE OPENBLAS_CORETYPE=SkylakeX
else ifneq ($(BENCH_ISA),)
BENCH_ENV += AMPRT_ISA=$(BENCH_ISA)
endif
# name:source of every benchmarked model (model_bench's directory: name)
BENCH_MODELS := mlp:examples/mlp.amp lenet5:examples/lenet5.amp resnet18:examples/resnet18.amp \
                resnet18_train:bench/resnet18_train.amp digits_mlp:examples/digits/mlp.amp
BENCH_MODEL_BINS := $(foreach m,$(BENCH_MODELS),$(BUILD)/bench/$(firstword $(subst :, ,$(m)))/model_bench)

define bench_model_rule
$(BUILD)/bench/$(1)/bench.c: $(2) $(BUILD)/ampc
	@mkdir -p $(BUILD)/bench/$(1)
	$(BUILD)/ampc $(2) -t cpu --prefix=bench -o $$@
# The emitted C is held to the same warnings as the project's own code.
$(BUILD)/bench/$(1)/model_bench: bench/model_bench.c $(BUILD)/bench/$(1)/bench.c $(BUILD)/libamprt.a
	$(CC) -std=c99 $(OPT) $(WARN) -Iruntime/include -c -o $(BUILD)/bench/$(1)/bench.o $(BUILD)/bench/$(1)/bench.c
	$(CC) -std=c99 $(OPT) $(WARN) -Iruntime/include -I$(BUILD)/bench/$(1) -o $$@ bench/model_bench.c \
	    $(BUILD)/bench/$(1)/bench.o $(BUILD)/libamprt.a -lm -lpthread
endef
$(foreach m,$(BENCH_MODELS),$(eval $(call bench_model_rule,$(firstword $(subst :, ,$(m))),$(lastword $(subst :, ,$(m))))))

$(BUILD)/bench/weights.stamp: bench/torch_models.py
	@mkdir -p $(BUILD)/bench
	$(BENCH_PYTHON) bench/torch_models.py weights $(BUILD)/bench
	touch $@

# The cross-CPU round trip printed beside each case (bench/vcpu_probe.c).
$(BUILD)/bench/vcpu_probe: bench/vcpu_probe.c
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c99 $(OPT) $(WARN) -o $@ $< -lpthread

bench-models: $(BENCH_MODEL_BINS) $(BUILD)/bench/weights.stamp $(BUILD)/bench/vcpu_probe
	sh bench/require-openblas.sh
	@echo "== machine: $$(nproc) CPUs, $$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $$(cut -d' ' -f1-3 /proc/loadavg)"
	$(BENCH_ENV) $(BENCH_PYTHON) bench/torch_models.py compare $(BUILD)/bench $(BENCH_ROUNDS) --csv $(BENCH_CSV)
	@echo "== the compiler: 1k, 10k and 100k ops"
	sh bench/compile_speed.sh $(BUILD)/ampc

$(BUILD)/bench/gemm_bench: bench/gemm_bench.c $(BUILD)/libamprt.a
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c99 $(OPT) $(WARN) -Iruntime/include -o $@ $< $(BUILD)/libamprt.a -lm -lpthread

bench: $(BUILD)/bench/gemm_bench $(BENCH_MODEL_BINS) $(BUILD)/bench/weights.stamp $(BUILD)/bench/vcpu_probe
	sh bench/require-openblas.sh
	@echo "== machine: $$(nproc) CPUs, $$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $$(cut -d' ' -f1-3 /proc/loadavg)"
	@echo "== GEMM side by side, alternating"
	$(BENCH_ENV) $(BENCH_PYTHON) bench/torch_bench.py $(BUILD)/bench/gemm_bench --rounds $(BENCH_ROUNDS) --sizes $(BENCH_SIZES) \
	    --csv $(BENCH_GEMM_CSV)
	@echo "== models: ampc (-t cpu) against the faster of PyTorch f32 and autocast bf16, 2 threads"
	$(BENCH_ENV) $(BENCH_PYTHON) bench/torch_models.py compare $(BUILD)/bench $(BENCH_ROUNDS) --csv $(BENCH_CSV)
	@echo "== binary size: the MLP example, static and stripped"
	$(MAKE) BUILD=$(BUILD) bench-size

# make bench-zoo: the seed's TorchDynamo table (bench/zoo_models.py:
# resnet18, resnet50, resnext50_32x4d, alexnet, mobilenet_v2, mnasnet1_0,
# vgg16, BERT, squeezenet1_1, vit_b_16 for the ViT), each exported with
# tools/torch2amp (--train: cross-entropy, SGD with momentum), compiled with
# ampc -t cpu and timed by bench/zoo_bench.py: inference at batch 1 and 8
# and a training step at batch 8, against the faster of PyTorch f32 and
# autocast bf16, alternating, on the same weights; then the geomean
# speedups.  Long (the whole table takes an hour or more on 2 cores; its
# first run also exports and compiles ten models into $(BUILD)/bench-zoo):
# not part of make test.  BENCH_ZOO="resnet18 squeezenet1_1" for a subset,
# BENCH_ROUNDS, BENCH_ISA=avx2 as for make bench, BENCH_ZOO_CSV.
BENCH_ZOO ?=
BENCH_ZOO_CSV ?= $(BUILD)/bench/zoo.csv
bench-zoo: $(BUILD)/ampc $(BUILD)/libamprt.a $(BUILD)/bench/vcpu_probe
	sh bench/require-openblas.sh
	@echo "== machine: $$(nproc) CPUs, $$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $$(cut -d' ' -f1-3 /proc/loadavg)"
	$(BENCH_ENV) CC="$(CC)" OPT="$(OPT)" $(BENCH_PYTHON) bench/zoo_bench.py $(BUILD) --rounds $(BENCH_ROUNDS) \
	    --csv $(BENCH_ZOO_CSV) $(BENCH_ZOO)
	@echo "== machine after: load $$(cut -d' ' -f1-3 /proc/loadavg)"
