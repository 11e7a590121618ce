#!/bin/sh
# check-examples.sh BUILD: every example model, and tests/e2e/pytorch_ops.amp
# (every op and form of PyTorch's spellings in one model), on every target,
# built with every compiler, run against its own f64 evaluation (ampc
# --emit=check): each output must be within the tolerance the dtypes on its
# path allow.
#
# Prints one "ok"/"FAIL" line per run and a last line "check: P passed, F
# failed"; exits 1 on any failure.  E2E_COMPILERS and E2E_CFLAGS as run.sh.
set -u
BUILD=${1:-build}
AMPC=$BUILD/ampc
OUT=$BUILD/e2e/check
mkdir -p "$OUT"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# model (under examples/), dims for the run (resnet18 at batch 1: 224x224
# images are large).  The digits models train: their checks also compare
# gradients with the f64 evaluation's and those with finite differences.
# resnet18 and the digits CNN (its finite differences run the f64 model
# dozens of times) are slow with the reference kernels: they are built with
# the first compiler only, and skipped when E2E_SKIP_HEAVY is set (the
# sanitizer run).
for entry in "mlp B=8" "lenet5 B=4" "transformer B=3" "pytorch_syntax B=2" "resnet18 B=1" "digits/mlp B=8" "digits/cnn B=4" \
        "../tests/e2e/pytorch_ops B=2"; do
    path=${entry%% *}
    heavy=0
    case $path in resnet18|digits/cnn) heavy=1 ;; esac
    [ "$heavy" = 1 ] && [ -n "${E2E_SKIP_HEAVY:-}" ] && continue
    model=$(echo "${path#../tests/e2e/}" | tr / _)
    dims=${entry#* }
    for target in tpu gpu cpu; do
        src=$OUT/${model}_$target.c
        if ! "$AMPC" "examples/$path.amp" -I examples -t "$target" --emit=check -o "$src"; then
            bad "$model/$target: ampc --emit=check"
            continue
        fi
        compilers=${E2E_COMPILERS:-gcc clang}
        [ "$heavy" = 1 ] && compilers=${compilers%% *}
        for cc in $compilers; do
            exe=$OUT/${model}_$target-$cc
            # shellcheck disable=SC2086
            if ! $cc -std=c99 -O2 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include \
                    -o "$exe" "$src" "$BUILD/libamprt.a" -lm -lpthread; then
                bad "$model/$target: $cc builds the check program warning-free"
                continue
            fi
            # shellcheck disable=SC2086
            if "$exe" $dims > "$exe.log" 2>&1; then
                ok "$model/$target/$cc: $(grep -v '^output\|^check:\|dir [0-9]' "$exe.log" | awk '{printf "%s%s%s rel %s (tol %s)", sep, $1 == "d" ? "d " : "", $1 == "d" ? $2 : $1, $1 == "d" ? $6 : $5, $1 == "d" ? $7 : $6; sep="; "}')$(grep -c 'dir [0-9].*ok$' "$exe.log" | sed 's/^0$//; s/^[1-9][0-9]*$/; & finite-difference checks ok/')"
            else
                cat "$exe.log"
                bad "$model/$target/$cc: every output within tolerance of the f64 evaluation"
            fi
        done
    done
done
echo "check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
