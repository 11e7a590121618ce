#!/bin/sh
# check-tolerance.sh BUILD: --emit=check's tolerance grows with the ops
# whose error compounds (docs/check.md).  tests/e2e/compounding.amp, in
# bf16 and f16 (--force-dtype) on every target, must be judged within
# tolerance by its own check program (prod over 128 bf16 values and
# x ** 7 fail a tolerance of one rounding per op), and the tolerance of
# the product over every element must be an expression of the batch B
# (the count is B * 16): it differs between B=8 and B=2.
#
# Prints one ok/FAIL line per run and a last line "tolerance: P passed, F
# failed"; exits 1 on any failure.  Built with the first of E2E_COMPILERS
# and E2E_CFLAGS, as run.sh.
set -u
BUILD=${1:-build}
OUT=$BUILD/e2e/tolerance
mkdir -p "$OUT"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

cc=${E2E_COMPILERS:-gcc}
cc=${cc%% *}
for dtype in bf16 f16; do
    for target in tpu gpu cpu; do
        base=$OUT/compounding_${dtype}_$target
        if ! "$BUILD/ampc" tests/e2e/compounding.amp -t "$target" --force-dtype "$dtype" --emit=check \
                -o "$base.c" > "$base.log" 2>&1; then
            bad "$dtype/$target: ampc --emit=check"
            continue
        fi
        # shellcheck disable=SC2086  # E2E_CFLAGS is a list of flags
        if ! "$cc" -std=c99 -O1 -w ${E2E_CFLAGS:-} -Iruntime/include -o "$base.exe" "$base.c" "$BUILD/libamprt.a" \
                -lm -lpthread >> "$base.log" 2>&1; then
            bad "$dtype/$target: the check program does not build"
            continue
        fi
        if "$base.exe" B=8 > "$base.out8" 2>&1 && "$base.exe" B=2 > "$base.out2" 2>&1; then
            t8=$(awk '$1 == "p_all" {print $6}' "$base.out8")
            t2=$(awk '$1 == "p_all" {print $6}' "$base.out2")
            if [ -n "$t8" ] && [ "$t8" != "$t2" ]; then
                ok "$dtype/$target"
            else
                bad "$dtype/$target: prod's tolerance does not follow the batch ($t8 at B=8, $t2 at B=2)"
            fi
        else
            cat "$base.out8" "$base.out2" 2>/dev/null
            bad "$dtype/$target: an output out of tolerance"
        fi
    done
done
echo "tolerance: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
