# make bench: GEMM GFLOP/s of the runtime (bench/gemm_bench.c: square
# N = 256, 512, 1024, bf16/f16/f32, 1 and 2 threads, median of 9) next to
# PyTorch's torch.matmul in the same run (bench/torch_bench.py, 2 threads),
# then the f32 comparison again with OpenBLAS free to pick its own kernels
# (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for that command only).
# docs/benchmarks.md records a run.  BENCH_SIZES overrides the sizes.

BENCH_SIZES ?= 256 512 1024
BENCH_PYTHON ?= /usr/bin/python3

.PHONY: bench

$(BUILD)/bench/gemm_bench: bench/gemm_bench.c $(BUILD)/libamprt.a
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c99 $(OPT) $(WARN) -Iruntime/include -o $@ $< $(BUILD)/libamprt.a -lm -lpthread

bench: $(BUILD)/bench/gemm_bench
	@echo "== machine: $$(nproc) CPUs, $$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $$(cut -d' ' -f1-3 /proc/loadavg)"
	$(BUILD)/bench/gemm_bench $(BENCH_SIZES) | tee $(BUILD)/bench/ampc.txt
	@echo "== side by side (PyTorch as its environment runs it)"
	$(BENCH_PYTHON) bench/torch_bench.py $(BUILD)/bench/ampc.txt
	@echo "== f32 against OpenBLAS's own kernel choice (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE unset)"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BENCH_PYTHON) bench/torch_bench.py $(BUILD)/bench/ampc.txt \
	    --f32-only --label "PyTorch/OpenBLAS-auto"
