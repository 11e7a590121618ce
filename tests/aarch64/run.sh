#!/bin/sh
# run.sh HOST_BUILD CROSS_BUILD ci|sets|full: the aarch64 runtime and the
# examples' emitted C under qemu-aarch64, on each CPU model of
# AARCH64_CPUS (default "max cortex-a53": every feature, FEAT_BF16
# included, and a baseline ARMv8.0 core, so both the neonbf16 paths and
# the neon fallbacks run).  CROSS_BUILD holds the runtime and its tests
# built with `make CROSS=aarch64-linux-gnu-` (make test-aarch64 builds
# it); HOST_BUILD the host's ampc, which writes the C.
#
# ci (make test-aarch64, in make test: 145 s of CPU, plus about 85 s
# for a cold cross build): the tests of the kernels the NEON sets
# replace, on those sets only, each forced by AMPRT_ISA (the reference
# set is the same C as natively, and slow under emulation).  With FEAT_FP16
# and FEAT_BF16 (-cpu max): test_fastgemm on neonbf16 (its bf16 products
# on BFDOT, f32 and f16 on neon's micro-kernel, which the examples also
# run on cortex-a53), test_linear_ex on neonbf16 (a linear on weights
# packed once, bit for bit linear; its f32 and f16 rows are neon's
# kernels, so it does not run again on cortex-a53), test_fasteltwise on
# neonbf16 (the BFCVTN roundings,
# and neonfp16's f16 arithmetic, which it keeps), test_fastloss on neon
# (the sums and cross_entropy, one code in every set), test_fastconv on
# neonbf16 (its convolutions are the slowest test, about 95 s of CPU per
# set under emulation; neon runs the same micro-kernel and packing, and
# differs only in the bf16 rounding test_fasteltwise compares;
# test_conv_ex, the same drivers with the sets' fused post-ops
# (amp_neon_conv_post), runs in full only); on a CPU without
# them (-cpu cortex-a53): test_fasteltwise (relu, add, casts, batch_norm
# and batch_norm_train, clamp, the pools; every kernel the avx2 set
# replaces, replaced) and test_fastbackward (the gradients, clamp's,
# batch_norm_backward in both forms, sgd, the pools' backwards) and
# test_fastscalar_arith (add, sub, mul, div by a scalar; about 15 s) and
# test_fastwinograd (the Winograd convolutions' baseline build, which no
# x86 set runs) on neon, and the examples below run its products and
# convolutions there, without any instruction beyond ARMv8.0; on both,
# test_dispatch (AMPRT_ISA, the fallback warning) and the check programs
# of mlp, lenet5, transformer and the digits MLP on every target (linear,
# conv, relu, add and casts in each dtype, through the public entry
# points on the best set), against their f64 evaluation.
# sets (make test-aarch64-sets): the tests that test-runtime reruns under
# each x86 set natively (ISA_TESTS, the Makefile's RUNTIME_ISA_TESTS),
# each under every NEON set the CPU model supports, forced, and the ci
# examples: the NEON sets checked by the same tests as the x86 ones.
# full: every runtime test under every NEON set the CPU model supports
# (as tests/runtime/run-isas.sh does natively; not under ref or auto, see
# below), and every example, resnet18 and the digits CNN included (long
# under emulation: results in tests/aarch64/results/).
#
# Prints one "ok"/"FAIL" line per run and a last line "aarch64: P passed,
# F failed"; exits 1 on any failure.
set -u
HOST=${1:-build}
CROSS_BUILD=${2:-build/aarch64}
MODE=${3:-ci}
CROSS=${CROSS:-aarch64-linux-gnu-}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
CPUS=${AARCH64_CPUS:-max cortex-a53}
OUT=$CROSS_BUILD/qemu
mkdir -p "$OUT"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

for tool in "$QEMU" "${CROSS}gcc"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "aarch64: $tool is not installed (sh scripts/install-deps.sh --test)"
        exit 1
    fi
done

# The examples; the runtime tests are picked per CPU model below.
case $MODE in
ci|sets)
    examples="mlp:B=8 lenet5:B=4 transformer:B=3 digits/mlp:B=8"
    ;;
full)
    examples="mlp:B=8 lenet5:B=4 transformer:B=3 resnet18:B=1 digits/mlp:B=8 digits/cnn:B=4"
    ;;
*)
    echo "usage: run.sh HOST_BUILD CROSS_BUILD ci|sets|full"
    exit 2
    ;;
esac

# The sets the runtime supports on a CPU model, as it detects them there.
probe=$OUT/isa-probe
cat > "$probe.c" <<'EOC'
#include <stdio.h>
#include "amprt.h"
int main(void) { puts(amp_isa_name()); return 0; }
EOC
"${CROSS}gcc" -std=c99 -Iruntime/include -o "$probe" "$probe.c" "$CROSS_BUILD/libamprt.a" -lm -lpthread || exit 1
sets_on() {
    sets=ref
    for isa in neon neonfp16 neonbf16; do
        [ "$(AMPRT_ISA=$isa "$QEMU" -cpu "$1" "$probe" 2>/dev/null)" = "$isa" ] && sets="$sets $isa"
    done
    echo "$sets"
}

# The examples' check programs, written by the host ampc, built once.
for entry in $examples; do
    path=${entry%%:*}
    model=$(echo "$path" | tr / _)
    for target in tpu gpu cpu; do
        src=$OUT/${model}_$target.c
        if ! "$HOST/ampc" "examples/$path.amp" -I examples -t "$target" --emit=check -o "$src"; then
            bad "$model/$target: ampc --emit=check"
        elif ! "${CROSS}gcc" -std=c99 -O2 -Wall -Wextra -pedantic -Werror -Iruntime/include -o "$OUT/${model}_$target" \
                "$src" "$CROSS_BUILD/libamprt.a" -lm -lpthread; then
            bad "$model/$target: ${CROSS}gcc builds the check program warning-free"
        fi
    done
done

for cpu in $CPUS; do
    sets=$(sets_on "$cpu")
    echo "qemu-aarch64 -cpu $cpu: kernel sets $sets"
    case $sets in
    *neon*) ok "-cpu $cpu: the runtime finds its sets ($sets)" ;;
    *) bad "-cpu $cpu: the runtime finds no NEON set" ;;
    esac
    # ci: name:sets, each set forced in a run of its own (under a forced
    # AMPRT_ISA the per-set tests check that set alone,
    # tests/runtime/isa_under_test.h); full: every test under each NEON
    # set the CPU model has, forced, best set first.
    # Not under ref or auto: auto is the best set, run forced; the
    # reference's C runs in every forced run, for each kernel a set does
    # not replace and as what the per-set tests compare with.
    if [ "$MODE" = ci ]; then
        case $sets in
        *neonbf16*) tests="test_fastgemm:neonbf16 test_linear_ex:neonbf16 test_fastconv:neonbf16
                           test_fasteltwise:neonbf16 test_fastloss:neon test_dispatch:auto" ;;
        *) tests="test_fasteltwise:neon test_fastbackward:neon test_fastscalar_arith:neon test_fastwinograd:neon
                  test_dispatch:auto" ;;
        esac
    else
        # best set first, each set through the suite in turn
        if [ "$MODE" = sets ]; then
            names=${ISA_TESTS:?sets: ISA_TESTS names the tests (make test-aarch64-sets sets it)}
        else
            names=$(for src in tests/runtime/test_*.c; do basename "$src" .c; done)
        fi
        tests=$(for isa in neonbf16 neonfp16 neon; do
                    case " $sets " in *" $isa "*) ;; *) continue ;; esac
                    for name in $names; do echo "$name:$isa"; done
                done)
    fi
    for entry in $tests; do
        name=${entry%%:*}
        t=$CROSS_BUILD/tests/$name
        if [ ! -x "$t" ]; then
            bad "$t is missing (make CROSS=$CROSS BUILD=$CROSS_BUILD)"
            continue
        fi
        for isa in $(echo "${entry#*:}" | tr , ' '); do
            log=$t.$cpu.$isa.log
            start=$(date +%s)
            if AMPRT_ISA=$isa "$QEMU" -cpu "$cpu" "$t" > "$log" 2>&1; then
                ok "-cpu $cpu AMPRT_ISA=$isa $name ($(( $(date +%s) - start )) s)"
            else
                tail -n 20 "$log"
                bad "-cpu $cpu AMPRT_ISA=$isa $name (log: $log)"
            fi
        done
    done
    for entry in $examples; do
        path=${entry%%:*}
        dims=${entry#*:}
        model=$(echo "$path" | tr / _)
        for target in tpu gpu cpu; do
            exe=$OUT/${model}_$target
            [ -x "$exe" ] || continue
            log=$exe.$cpu.log
            # shellcheck disable=SC2086
            if "$QEMU" -cpu "$cpu" "$exe" $dims > "$log" 2>&1; then
                ok "-cpu $cpu $model/$target: every output within tolerance of the f64 evaluation"
            else
                tail -n 20 "$log"
                bad "-cpu $cpu $model/$target: every output within tolerance of the f64 evaluation (log: $log)"
            fi
        done
    done
done
echo "aarch64: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
