#!/bin/sh
# run-isas.sh BUILD: every runtime test binary ($BUILD/tests/test_* built
# from tests/runtime/) under each AMPRT_ISA value this CPU supports: ref,
# then whichever of avx2, avx512 and avx512bf16 the runtime reports as
# supported (a forced set the CPU lacks would only fall back).  The
# automatic choice is the run without AMPRT_ISA, make test-runtime's first
# loop.  Under a forced set, the per-set tests check that set alone
# (tests/runtime/isa_under_test.h).
# Prints one line per (set, test) and a summary; fails if any run fails.
# CC and PROBE_CFLAGS (e.g. sanitizer flags matching the library's build)
# build the small program that asks the runtime which sets it supports.
# With test names after BUILD (test_kernels test_gemm ...), runs only those:
# make test-runtime runs the ones whose kernels a set overrides.
set -u
BUILD=${1:-build}
shift
tests=""
names=$*
[ -n "$names" ] || names=$(for src in tests/runtime/test_*.c; do basename "$src" .c; done)
for name in $names; do
    src=tests/runtime/$name.c
    t=$BUILD/tests/$(basename "$src" .c)
    if [ ! -x "$t" ]; then
        echo "missing $t (build it with make BUILD=$BUILD test-runtime)"
        exit 1
    fi
    tests="$tests $t"
done
# The supported sets, as the runtime itself detects them: a forced set it
# supports is honoured silently, so AMPRT_ISA=<set> amp_isa_name() == <set>.
probe=$BUILD/tests/isa-probe
mkdir -p "$BUILD/tests"
cat > "$probe.c" <<'EOC'
#include <stdio.h>
#include "amprt.h"
int main(void) { puts(amp_isa_name()); return 0; }
EOC
# shellcheck disable=SC2086
${CC:-cc} -std=c99 ${PROBE_CFLAGS:-} -Iruntime/include -o "$probe" "$probe.c" "$BUILD/libamprt.a" -lm -lpthread || exit 1
isas=ref
for isa in avx2 avx512 avx512bf16 neon neonfp16 neonbf16; do
    [ "$(AMPRT_ISA=$isa "$probe" 2>/dev/null)" = "$isa" ] && isas="$isas $isa"
done
echo "kernel sets: $isas"
pass=0
fail=0
for isa in $isas; do
    for t in $tests; do
        if AMPRT_ISA=$isa "$t" > "$t.$isa.log" 2>&1; then
            pass=$((pass + 1))
            echo "ok   AMPRT_ISA=$isa $t"
        else
            fail=$((fail + 1))
            tail -n 20 "$t.$isa.log"
            echo "FAIL AMPRT_ISA=$isa $t (log: $t.$isa.log)"
        fi
    done
done
echo "run-isas: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
