#!/bin/sh
# tests/ops/run.sh BUILD [MODEL...]: the op-by-op differential test against
# PyTorch (every model, or the MODELs named).
#
# For every tests/ops/MODEL.amp and every target (cpu, tpu, gpu):
#   ampc MODEL.amp -t TARGET [--autocast] --emit=check  ->  one C program
#   cc ... -lamprt                                        ->  its binary
#   ./binary DIM=3 ... --dump=FILE                        ->  inputs, params,
#        the model's outputs and its f64 reference evaluation
# then torch_ref.py recomputes every output with PyTorch in float64 from the
# dumped inputs and compares it with the reference (normwise relative error
# <= 1e-10, indices exactly), checks that the reference is the same, bit
# for bit, on the three targets, and compares the model's own outputs
# loosely (5e-2 under autocast: gross errors only).  The model runs under
# --autocast (each target's low precision), so the three programs differ
# while their f64 references must not; the models PyTorch itself refuses
# to autocast (linear algebra in bf16/f16, binary_cross_entropy on CUDA)
# run without.
#
# The check program's own verdict (model vs reference within its tolerance)
# is reported, not judged: its tolerance counts one rounding per op, which
# accumulating kernels (sums, convolutions, pools) exceed in f32.
#
# Prints ok/FAIL per model and a last line "ops: P passed, F failed";
# exits 1 on a failure.  Skips (exit 0) when /usr/bin/python3 has no torch.
set -u
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=/usr/bin/python3
CC=${CC:-gcc}
TARGETS="cpu tpu gpu"
JOBS=$(nproc 2>/dev/null || echo 2)

if ! "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "ops: skipped: $PY cannot import torch (the differential test needs PyTorch)"
    exit 0
fi
for f in "$BUILD/ampc" "$BUILD/libamprt.a"; do
    if [ ! -f "$f" ]; then
        echo "ops: $f is missing (make -j2 all)"
        exit 1
    fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampc-ops.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

# autocast flag of a model on a target
autocast_flag() {
    case "$1:$2" in
    linalg*:*) ;;     # LAPACK ops: f32/f64 only, as PyTorch's
    loss:gpu) ;;      # binary_cross_entropy is banned under CUDA autocast
    *) printf %s --autocast ;;
    esac
}

# build_one MODEL TARGET: compile, build, run; writes $WORK/MODEL.TARGET.{st,log,status}
build_one() {
    m=$1
    t=$2
    base=$WORK/$m.$t
    amp=$HERE/$m.amp
    dims=$(sed -n 's/^model [A-Za-z0-9_]*(\([^)]*\)).*/\1/p' "$amp" | tr ',' ' ')
    args=""
    for d in $dims; do args="$args $d=3"; done
    # shellcheck disable=SC2046  # the flag is one word or none
    if ! "$BUILD/ampc" "$amp" -t "$t" $(autocast_flag "$m" "$t") --emit=check -o "$base.c" >"$base.log" 2>&1; then
        echo "ampc failed" >"$base.status"
        return
    fi
    if ! $CC -std=c99 -w -I"$ROOT/runtime/include" "$base.c" "$BUILD/libamprt.a" -lm -lpthread -o "$base.bin" >>"$base.log" 2>&1; then
        echo "the C compiler failed" >"$base.status"
        return
    fi
    # shellcheck disable=SC2086  # NAME=VALUE words
    "$base.bin" $args --dump="$base.st" >>"$base.log" 2>&1
    rc=$?
    case $rc in
    0) echo ok >"$base.status" ;;
    1) echo "ok check-tolerance" >"$base.status" ;;
    *) echo "the check program exited with $rc" >"$base.status" ;;
    esac
}

start=$(date +%s)
MODELS=""
for amp in "$HERE"/*.amp; do
    MODELS="$MODELS $(basename "$amp" .amp)"
done
# models named after BUILD: only those
if [ $# -gt 1 ]; then
    shift
    MODELS="$*"
fi

# build and run every (model, target), JOBS at a time
n=0
for m in $MODELS; do
    for t in $TARGETS; do
        build_one "$m" "$t" &
        n=$((n + 1))
        if [ $((n % JOBS)) -eq 0 ]; then
            wait
        fi
    done
done
wait

# compare with PyTorch: one python run for every dump
pyargs=""
for m in $MODELS; do
    for t in $TARGETS; do
        if [ -f "$WORK/$m.$t.st" ]; then
            ac=""
            [ -n "$(autocast_flag "$m" "$t")" ] && ac=":autocast"
            pyargs="$pyargs $m:$t$ac=$WORK/$m.$t.st"
        fi
    done
done
# shellcheck disable=SC2086  # one word per dump
"$PY" "$HERE/torch_ref.py" $pyargs >"$WORK/torch.log" 2>&1
pyrc=$?

# what went wrong for MODEL on TARGET (empty when nothing did)
problems() {
    m=$1
    t=$2
    st=$(cat "$WORK/$m.$t.status" 2>/dev/null || echo "not run")
    case $st in
    ok | "ok check-tolerance") ;;
    *)
        echo "$st:"
        grep -v '^ *[0-9]* |\|^ *|\|note:\|In function\|In file included\|warning:' "$WORK/$m.$t.log" | head -6 |
            sed -e "s|$WORK/||g" -e "s|${m}[.]${t}[.]|$m.|g"
        return
        ;;
    esac
    # torch_ref.py's reasons: the indented lines after "FAIL m:t"
    awk -v key="$m:$t" '
        /^(ok  |FAIL) / { sub(/:autocast$/, "", $2); cur = ($2 == key); next }
        /^ / { if (cur) print; next }
        { cur = 0 }' "$WORK/torch.log"
    if ! grep -q "^\(ok  \|FAIL\) $m:$t\(:autocast\)\{0,1\}\$" "$WORK/torch.log"; then
        echo "no comparison with PyTorch ran"
    fi
}

passed=0
failed=0
for m in $MODELS; do
    report=""
    notes=""
    prev=""
    same=""
    for t in $TARGETS; do
        p=$(problems "$m" "$t")
        if grep -q "check-tolerance" "$WORK/$m.$t.status" 2>/dev/null; then
            notes="$notes $t"
        fi
        [ -z "$p" ] && continue
        # a target failing like the one before it is only named
        if [ "$p" = "$prev" ]; then
            same="$same $t"
            continue
        fi
        [ -n "$same" ] && report="$report
  (the same on:$same)"
        same=""
        prev=$p
        report="$report
  $t:
$(echo "$p" | sed -e 's/^ *//' -e 's/^/    /')"
    done
    [ -n "$same" ] && report="$report
  (the same on:$same)"
    if [ -z "$report" ]; then
        passed=$((passed + 1))
        if [ -n "$notes" ]; then
            echo "ok   $m  (the check program's own tolerance exceeded on:$notes)"
        else
            echo "ok   $m"
        fi
    else
        failed=$((failed + 1))
        echo "FAIL $m$report"
    fi
done
# lines of torch.log that belong to no model (a crash of the script itself)
if [ "$pyrc" -ne 0 ] && ! grep -q "^FAIL " "$WORK/torch.log"; then
    echo "torch_ref.py failed:"
    tail -5 "$WORK/torch.log" | sed 's/^/    /'
    failed=$((failed + 1))
fi
end=$(date +%s)
echo "(${JOBS} jobs, $((end - start)) s)"
echo "ops: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
