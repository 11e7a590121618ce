# aarch64 under emulation (docs/runtime.md, "ARM"): the runtime and its
# tests cross-built with $(AARCH64_CROSS)gcc into $(BUILD)/aarch64 (the
# same rules as `make CROSS=aarch64-linux-gnu-`), run with qemu-aarch64 on
# a CPU with every feature (-cpu max: the neonbf16 set) and on a baseline
# ARMv8.0 core (-cpu cortex-a53: neon only), with the examples' emitted C
# (written by the host's ampc) checked against its f64 evaluation.
#
#   make test-aarch64        the CI subset (tests/aarch64/run.sh ci): the
#                            tests of the kernels the NEON sets override and
#                            the light examples, on both CPU models
#   make test-aarch64-sets   the tests test-runtime reruns per set natively
#                            (RUNTIME_ISA_TESTS) under every NEON set each
#                            CPU model has, and the light examples (18
#                            minutes on cortex-a53, 46 on max; not in CI)
#   make test-aarch64-full   every runtime test under every NEON set, every
#                            example (long under emulation; not in CI)

AARCH64_CROSS ?= aarch64-linux-gnu-
AARCH64_BUILD := $(BUILD)/aarch64
# what the CI subset runs (tests/aarch64/run.sh says why these)
AARCH64_CI_TESTS := test_fastgemm test_linear_ex test_fastconv test_fastwinograd test_fasteltwise test_fastbackward test_fastloss test_fastscalar_arith test_dispatch

.PHONY: test-aarch64 test-aarch64-sets test-aarch64-full

# The cross build is a make of its own, with the toolchain's compiler and
# archiver and none of the host's sanitizer or MPI settings.
AARCH64_MAKE = $(MAKE) --no-print-directory CROSS=$(AARCH64_CROSS) CC=$(AARCH64_CROSS)gcc AR=$(AARCH64_CROSS)ar \
               SANITIZE= MPI= BUILD=$(AARCH64_BUILD)

test-aarch64: $(BUILD)/ampc
	$(AARCH64_MAKE) $(AARCH64_BUILD)/libamprt.a $(addprefix $(AARCH64_BUILD)/tests/,$(AARCH64_CI_TESTS))
	CROSS=$(AARCH64_CROSS) sh tests/aarch64/run.sh $(BUILD) $(AARCH64_BUILD) ci

test-aarch64-sets: $(BUILD)/ampc
	$(AARCH64_MAKE) $(AARCH64_BUILD)/libamprt.a $(addprefix $(AARCH64_BUILD)/tests/,$(RUNTIME_ISA_TESTS))
	CROSS=$(AARCH64_CROSS) ISA_TESTS="$(RUNTIME_ISA_TESTS)" sh tests/aarch64/run.sh $(BUILD) $(AARCH64_BUILD) sets

test-aarch64-full: $(BUILD)/ampc
	$(AARCH64_MAKE) all
	CROSS=$(AARCH64_CROSS) sh tests/aarch64/run.sh $(BUILD) $(AARCH64_BUILD) full
