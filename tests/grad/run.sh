#!/bin/sh
# tests/grad/run.sh BUILD [MODEL...]: every gradient rule of src/back/grad_*.c,
# proved (every model, or the MODELs named).
#
# For every tests/grad/MODEL.amp (a small training model routing its
# parameters through the ops with a gradient rule) and every target (tpu,
# gpu, cpu: autocast differs): ampc --emit=check, build with gcc, run with
# small dims (a "# run: B=3 ..." line in the model, else B=3).  The check
# program compares each parameter's gradient with the f64 evaluation's and
# the f64 gradients with central finite differences of the f64 loss
# (docs/check.md); its exit status is the verdict.
#
# Prints ok/FAIL per model/target and a last line "grad: P passed, F
# failed"; exits 1 on a failure.  GRAD_KEEP=1 keeps the work directory
# (the generated C and each run's log) and prints its path.
set -u
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CC=${CC:-gcc}
TARGETS="tpu gpu cpu"
JOBS=$(nproc 2>/dev/null || echo 2)
for f in "$BUILD/ampc" "$BUILD/libamprt.a"; do
    if [ ! -f "$f" ]; then
        echo "grad: $f is missing (make -j2 all)"
        exit 1
    fi
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampc-grad.XXXXXX")
if [ "${GRAD_KEEP:-0}" = 1 ]; then
    echo "grad: work directory $WORK"
else
    trap 'rm -rf "$WORK"' EXIT INT TERM
fi

# one MODEL TARGET: writes $WORK/MODEL.TARGET.{c,log,status}
one() {
    m=$1 t=$2
    base=$WORK/$m.$t
    dims=$(sed -n 's/^ *# run: *//p' "$HERE/$m.amp" | head -1)
    [ -n "$dims" ] || dims="B=3"
    if ! "$BUILD/ampc" "$HERE/$m.amp" -t "$t" --emit=check -o "$base.c" > "$base.log" 2>&1; then
        echo "ampc --emit=check" > "$base.status"
    elif ! $CC -std=c99 -O1 -Wall -Wno-unused -I"$ROOT/runtime/include" -o "$base.exe" "$base.c" \
            "$BUILD/libamprt.a" -lm -lpthread >> "$base.log" 2>&1; then
        echo "$CC builds the check program" > "$base.status"
    else
        # shellcheck disable=SC2086
        "$base.exe" $dims >> "$base.log" 2>&1
        rc=$?
        case $rc in
        0) echo ok > "$base.status" ;;
        1) echo "a gradient (or output) out of tolerance: $(grep -E 'FAIL$' "$base.log" | awk '{print $1 " " $2}' | sort -u | tr '\n' ' ')" > "$base.status" ;;
        *) echo "the check program failed (exit $rc)" > "$base.status" ;;
        esac
    fi
}

MODELS=$(cd "$HERE" && ls ./*.amp | sed 's|^\./||; s|\.amp$||')
# models named after BUILD: only those
if [ $# -gt 1 ]; then
    shift
    MODELS="$*"
fi
# the runs, JOBS at a time: each a background job, a new one started as
# soon as the oldest finishes
set --
for m in $MODELS; do
    for t in $TARGETS; do
        one "$m" "$t" &
        set -- "$@" $!
        if [ $# -ge "$JOBS" ]; then
            wait "$1"
            shift
        fi
    done
done
wait

pass=0
fail=0
for m in $MODELS; do
    for t in $TARGETS; do
        s=$(cat "$WORK/$m.$t.status" 2>/dev/null || echo "no result")
        if [ "$s" = ok ]; then
            pass=$((pass + 1))
            echo "ok   $m/$t"
        else
            fail=$((fail + 1))
            echo "FAIL $m/$t: $s"
            sed 's/^/     | /' "$WORK/$m.$t.log" | grep -E 'error|FAIL|warning|check:' | head -20
        fi
    done
done
echo "grad: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
