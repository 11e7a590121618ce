#!/bin/sh
# tests/ops/complex/run.sh BUILD: the complex ops against PyTorch.
#
# The --emit=check harness of tests/ops/run.sh has no complex tensors, so
# this model runs through the emitted C itself: ampc compiles cx.amp for
# the cpu target (f64 and c128, no autocast), and its f32 / c64 copy,
# driver.c runs each on fixed inputs, built with gcc and with clang at
# -std=c99 -Wall -Wextra -pedantic -Werror, and ref.py recomputes every
# output with PyTorch in float64 (to 1e-12 for f64, 1e-6 for f32).
# Prints ref.py's report and "complex ops: ok" or "FAIL"; exits 1 on a
# failure, 0 (skipped) when /usr/bin/python3 has no torch.
set -u
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=/usr/bin/python3

if ! "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "complex ops: skipped: $PY cannot import torch"
    exit 0
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampc-complex.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

status=0
for prec in f64 f32; do
    mkdir -p "$WORK/$prec"
    if [ $prec = f64 ]; then
        cp "$HERE/cx.amp" "$WORK/$prec/cx.amp"
        def="" flag=""
    else
        sed 's/f64/f32/g; s/c128/c64/g' "$HERE/cx.amp" >"$WORK/$prec/cx.amp"
        def="-DCX_F32" flag="--f32"
    fi
    "$BUILD/ampc" "$WORK/$prec/cx.amp" -t cpu -o "$WORK/$prec/cx.c" || { echo "complex ops: FAIL (ampc, $prec)"; exit 1; }
    for cc in gcc clang; do
        command -v $cc >/dev/null 2>&1 || continue
        bin=$WORK/$prec/cx.$cc
        # shellcheck disable=SC2086  # $def is one word or none
        if ! $cc -std=c99 -Wall -Wextra -pedantic -Werror $def -I"$ROOT/runtime/include" -I"$WORK/$prec" \
            "$HERE/driver.c" "$WORK/$prec/cx.c" "$BUILD/libamprt.a" -lm -lpthread -o "$bin"; then
            echo "complex ops: FAIL ($cc could not build the emitted C, $prec)"
            status=1
            continue
        fi
        echo "== $prec, $cc"
        "$bin" >"$bin.dump" || { echo "complex ops: FAIL (the $prec model returned an error)"; status=1; continue; }
        # shellcheck disable=SC2086
        "$PY" "$HERE/ref.py" $flag <"$bin.dump" >"$bin.ref" 2>&1
        rc=$?
        grep -v Warning "$bin.ref"
        [ $rc -eq 0 ] || status=1
    done
done
[ $status -eq 0 ] && echo "complex ops: ok" || echo "complex ops: FAIL"
exit $status
