#!/bin/sh
# run.sh BUILD: training end to end.
#  - examples/digits: the MLP and the CNN train to >= 95% held-out accuracy
#    on tpu (bf16), gpu (f16, dynamic loss scaling) and cpu (bf16);
#  - loss scaling: with its loss shrunk by 2^-24, the f16 MLP's gradients
#    underflow without a scaler and it does not learn; with one it does;
#  - a checkpoint saved and loaded continues training bit-exactly (dropout's
#    generator and batch_norm's running statistics included);
#  - an update consumes the gradients and the next backward stores its own;
#  - batch_norm(training=true) trains as PyTorch's does.
# The MLP trains 10 epochs and the CNN 6 (~30 s each with the reference kernels).
set -u
BUILD=${1:-build}
OUT=$BUILD/train-tests
mkdir -p "$OUT"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

for model in mlp cnn; do
    epochs=10
    [ "$model" = cnn ] && epochs=6
    for target in tpu gpu cpu; do
        log=$OUT/digits-$model-$target.log
        if sh examples/digits/run.sh "$BUILD" "$target" "$model" "$epochs" 0.95 > "$log" 2>&1; then
            # the last epoch's row: epoch, loss, accuracies, scale, skipped
            last=$(awk 'NF == 6 && $1 ~ /^[0-9]+$/ && $6 ~ /^[0-9]+$/ { row = $0 } END { print row }' "$log")
            ok "digits $model on $target: $(grep 'final test accuracy' "$log"), scale $(echo "$last" | awk '{print $5 ", skipped " $6}')"
            # --metrics: a row per step, the epochs' test accuracies as printed
            csv=$BUILD/digits/$target/$model/metrics.csv
            if awk -F, -v epochs="$epochs" -v last="$last" '
                NR == 1 { ok = $0 == "step,epoch,loss,accuracy,test_accuracy,loss_scale,skipped_steps"; next }
                { ok = ok && $1 == NR - 1 && $3 + 0 > 0 && $4 >= 0 && $4 <= 1; if ($5 != "") { n++; acc = $5; ep = $2 } }
                END { split(last, f, " "); exit !(ok && n == epochs && ep == epochs && sprintf("%.4f", acc) == f[4]) }' "$csv"; then
                ok "digits $model on $target: --metrics wrote a row per step and each epoch's test accuracy"
            else
                bad "digits $model on $target: --metrics rows (see $csv)"
            fi
        else
            tail -n 20 "$log"
            bad "digits $model on $target reaches 95% held-out accuracy"
        fi
    done
done

# Loss scaling, on the gpu target: f16 gradients of a tiny loss.
for mode in none dynamic; do
    dir=$OUT/underflow-$mode
    mkdir -p "$dir"
    if "$BUILD/ampc" "tests/train/underflow_$mode.amp" -t gpu --prefix=digits -o "$dir/digits.c" &&
        cc -std=c99 -O2 -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$dir" -o "$dir/train" \
            examples/digits/train.c "$dir/digits.c" "$BUILD/libamprt.a" -lm -lpthread &&
        "$dir/train" examples/digits/digits.bin "$dir/out.safetensors" 5 0 > "$dir/log" 2>&1; then
        acc=$(sed -n 's/final test accuracy \([0-9.]*\).*/\1/p' "$dir/log")
        eval "acc_$mode=$acc"
    else
        cat "$dir/log" 2>/dev/null
        bad "underflow model ($mode) builds and runs"
        eval "acc_$mode=0"
    fi
done
if awk -v n="${acc_none:-1}" -v d="${acc_dynamic:-0}" 'BEGIN { exit !(n < 0.5 && d >= 0.9) }'; then
    ok "f16 gradients of a loss shrunk by 2^-24: accuracy ${acc_none} without loss scaling, ${acc_dynamic} with it"
else
    bad "f16 gradients underflow without loss scaling (accuracy ${acc_none:-?} should be < 0.5) and train with it (${acc_dynamic:-?} should be >= 0.9)"
fi

# A checkpoint continues training bit-exactly.
dir=$OUT/resume
mkdir -p "$dir"
if "$BUILD/ampc" tests/train/resume.amp -t gpu -o "$dir/resume.c" &&
    cc -std=c99 -O2 -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$dir" -o "$dir/resume" \
        tests/train/resume.c "$dir/resume.c" "$BUILD/libamprt.a" -lm -lpthread &&
    (cd "$dir" && ./resume) > "$dir/log" 2>&1; then
    ok "checkpoints: $(tr '\n' ';' < "$dir/log")"
else
    cat "$dir/log" 2>/dev/null
    bad "a checkpoint saved and loaded continues training bit-exactly"
fi

# What s->grad holds across _backward and _update (grad_live): the MLP's
# gradients pass the sink; the CNN's convolutions write theirs into s->grad.
for model in mlp cnn; do
    dir=$OUT/grad_live-$model
    mkdir -p "$dir"
    define=
    [ "$model" = cnn ] && define=-DDIGITS_CNN
    if "$BUILD/ampc" examples/digits/$model.amp -t cpu --prefix=digits -o "$dir/digits.c" &&
        cc -std=c99 -O2 -Wall -Wextra -pedantic -Werror $define -Iruntime/include -I"$dir" -o "$dir/grad_live" \
            tests/train/grad_live.c "$dir/digits.c" "$BUILD/libamprt.a" -lm -lpthread &&
        (cd "$dir" && ./grad_live) > "$dir/log" 2>&1; then
        ok "$model: $(cat "$dir/log")"
    else
        cat "$dir/log" 2>/dev/null
        bad "$model: s->grad across backward and update (grad_live)"
    fi
done

# batch_norm(training=true) in the training step, against PyTorch.
dir=$OUT/bn_torch
mkdir -p "$dir"
if "$BUILD/ampc" tests/train/bn_torch.amp -t cpu -o "$dir/bn_torch.c" &&
    cc -std=c99 -O2 -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$dir" -o "$dir/bn_torch" \
        tests/train/bn_torch.c "$dir/bn_torch.c" "$BUILD/libamprt.a" -lm -lpthread &&
    "$dir/bn_torch" > "$dir/log" 2>&1; then
    ok "$(cat "$dir/log")"
else
    cat "$dir/log" 2>/dev/null
    bad "batch_norm(training=true) trains as PyTorch's does"
fi

# ... whose running statistics must be buffers: an error with a caret.
"$BUILD/ampc" tests/train/bn_input_stats.amp -t tpu -o "$dir/bad.c" > "$dir/bad.log" 2>&1
status=$?
if [ "$status" -eq 1 ] && [ ! -e "$dir/bad.c" ] &&
    grep -q 'bn_input_stats.amp:9:7: error: batch_norm: in training mode the running statistics are updated in place' "$dir/bad.log" &&
    grep -q '^ *| *\^~' "$dir/bad.log"; then
    ok "batch_norm(training=true) with inputs as running statistics: a located error"
else
    cat "$dir/bad.log"
    bad "batch_norm(training=true) with inputs as running statistics is an error (exit $status)"
fi

echo "train: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
