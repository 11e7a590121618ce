#!/bin/sh
# fusion.sh BUILD: fused convolution epilogues and prepared weights change
# no bit of any result.
#
# Each model is compiled twice as a check program (ampc --emit=check):
# as ampc compiles it (conv -> batch_norm -> add -> relu fused into one
# amp_conv_ex call, fuse.c) and with --no-fuse (one call per op).  Both
# are run on the same inputs and parameters (the harness's fixed-seed
# fill) with --dump, and the two dumps - inputs, parameters, the model's
# outputs and the f64 reference's - must be byte-identical.  Each check
# program also runs <prefix>_forward_prepared on weights from
# <prefix>_prepare and fails unless its outputs equal <prefix>_forward's
# bit for bit.  The test first makes sure the fused compile really fuses
# (its C calls amp_conv_ex with a post-op block).
#
# Then the training step: the digits MLP compiled as ampc compiles it
# (its cross_entropy loss computed by its gradient's call,
# amp_cross_entropy_with_grad) and with --no-fuse (the two calls), each
# trained for one epoch (23 steps) by examples/digits/train.c: the printed losses,
# accuracies and parameter checksum and the saved parameters must be
# identical.
#
# Prints one ok/FAIL line per model and target and a last line
# "fusion: P passed, F failed"; exits 1 on any failure.
set -u
BUILD=${1:-build}
AMPC=$BUILD/ampc
OUT=$BUILD/e2e/fusion
mkdir -p "$OUT"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# model path, its dims; resnet18 at batch 1 (its check's f64 evaluation
# runs the reference kernels), skipped when E2E_SKIP_HEAVY is set
for entry in "tests/golden/conv_fusion.amp B=3" "examples/resnet18.amp B=1"; do
    path=${entry%% *}
    dims=${entry#* }
    name=$(basename "$path" .amp)
    [ "$name" = resnet18 ] && [ -n "${E2E_SKIP_HEAVY:-}" ] && continue
    for target in cpu gpu; do
        for mode in fused plain; do
            flags=
            [ "$mode" = plain ] && flags=--no-fuse
            src=$OUT/${name}_${target}_$mode.c
            # shellcheck disable=SC2086
            if ! "$AMPC" "$path" -I examples -t "$target" --emit=check $flags -o "$src"; then
                bad "$name/$target: ampc --emit=check $flags"
                continue 2
            fi
            # shellcheck disable=SC2086
            if ! cc -std=c99 -O2 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include \
                    -o "$OUT/${name}_${target}_$mode" "$src" "$BUILD/libamprt.a" -lm -lpthread; then
                bad "$name/$target: the $mode check program builds warning-free"
                continue 2
            fi
            # shellcheck disable=SC2086
            if ! "$OUT/${name}_${target}_$mode" $dims --dump="$OUT/${name}_${target}_$mode.safetensors" \
                    > "$OUT/${name}_${target}_$mode.log" 2>&1; then
                cat "$OUT/${name}_${target}_$mode.log"
                bad "$name/$target: the $mode model within tolerance, prepared forward bit-identical"
                continue 2
            fi
        done
        fused=$(grep -c 'amp_conv_ex_[a-z0-9]*(&d, .*&post' "$OUT/${name}_${target}_fused.c")
        plain=$(grep -c 'amp_conv_ex_[a-z0-9]*(&d, .*&post' "$OUT/${name}_${target}_plain.c")
        if [ "$fused" -eq 0 ] || [ "$plain" -ne 0 ]; then
            bad "$name/$target: $fused fused calls with fusion, $plain with --no-fuse"
        elif cmp -s "$OUT/${name}_${target}_fused.safetensors" "$OUT/${name}_${target}_plain.safetensors"; then
            ok "$name/$target: $fused fused convolutions, outputs identical to --no-fuse; prepared forward identical"
        else
            bad "$name/$target: fused and --no-fuse outputs differ"
        fi
    done
done
for target in cpu gpu; do
    for mode in fused plain; do
        flags=
        [ "$mode" = plain ] && flags=--no-fuse
        dir=$OUT/digits_${target}_$mode
        mkdir -p "$dir"
        # shellcheck disable=SC2086
        if ! "$AMPC" examples/digits/mlp.amp -t "$target" --prefix=digits $flags -o "$dir/digits.c"; then
            bad "digits/$target: ampc $flags"
            continue 2
        fi
        # shellcheck disable=SC2086
        if ! cc -std=c99 -O2 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$dir" \
                -o "$dir/train" examples/digits/train.c "$dir/digits.c" "$BUILD/libamprt.a" -lm -lpthread; then
            bad "digits/$target: the $mode training program builds warning-free"
            continue 2
        fi
        # one epoch; no accuracy required (the log is compared)
        if ! "$dir/train" --steps=40 --checksum examples/digits/digits.bin "$dir/trained.safetensors" 1 0 \
                > "$dir/log" 2>&1; then
            cat "$dir/log"
            bad "digits/$target: the $mode training run"
            continue 2
        fi
        grep -v '^saved ' "$dir/log" > "$dir/log.cmp"
    done
    fused=$(grep -c 'amp_cross_entropy_with_grad_' "$OUT/digits_${target}_fused/digits.c")
    plain=$(grep -c 'amp_cross_entropy_with_grad_' "$OUT/digits_${target}_plain/digits.c")
    if [ "$fused" -ne 1 ] || [ "$plain" -ne 0 ]; then
        bad "digits/$target: $fused loss-with-gradient calls with fusion, $plain with --no-fuse"
    elif cmp -s "$OUT/digits_${target}_fused/log.cmp" "$OUT/digits_${target}_plain/log.cmp" &&
            cmp -s "$OUT/digits_${target}_fused/trained.safetensors" "$OUT/digits_${target}_plain/trained.safetensors"; then
        ok "digits/$target: loss with its gradient in one call; an epoch of training identical to --no-fuse"
    else
        diff "$OUT/digits_${target}_fused/log.cmp" "$OUT/digits_${target}_plain/log.cmp"
        bad "digits/$target: fused and --no-fuse training differ"
    fi
done
echo "fusion: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
