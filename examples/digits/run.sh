#!/bin/sh
# run.sh BUILD TARGET MODEL [EPOCHS] [MIN_ACCURACY]: trains a digits model.
# Compiles examples/digits/MODEL.amp (mlp or cnn) for TARGET (tpu, gpu,
# cpu) with BUILD/ampc, builds train.c with the emitted C and
# BUILD/libamprt.a, and runs it: EPOCHS epochs (default 10) on digits.bin,
# saving the trained state to BUILD/digits/TARGET/MODEL/MODEL.safetensors
# and the weights alone to BUILD/digits/TARGET/MODEL/MODEL-weights.safetensors
# (either deploys: docs/training.md, "Deploying a trained model"),
# failing (exit 1) if the final test accuracy is below MIN_ACCURACY
# (default 0.95), and writing the per-step metrics to
# BUILD/digits/TARGET/MODEL/metrics.csv (scripts/plot-training.sh draws
# them).  BUILD is relative to the current directory; CC may be set in the
# environment (default cc).
set -eu
if [ $# -lt 3 ] || [ $# -gt 5 ]; then
    echo "usage: $0 BUILD TARGET MODEL [EPOCHS] [MIN_ACCURACY]  (MODEL: mlp or cnn)" >&2
    exit 2
fi
BUILD=$1
TARGET=$2
MODEL=$3
EPOCHS=${4:-10}
MIN_ACCURACY=${5:-0.95}
case $MODEL in
    mlp|cnn) ;;
    *) echo "$0: MODEL must be mlp or cnn, not '$MODEL'" >&2; exit 2 ;;
esac
DIR=$(dirname "$0")
ROOT=$DIR/../..
CC=${CC:-cc}
OUT=$BUILD/digits/$TARGET/$MODEL
mkdir -p "$OUT"
set -x
# --prefix=digits: train.c calls digits_train_step etc. for either model.
"$BUILD/ampc" "$DIR/$MODEL.amp" -t "$TARGET" --prefix=digits -o "$OUT/digits.c"
$CC -std=c99 -O2 -Wall -Wextra -pedantic -Werror -I"$ROOT/runtime/include" -I"$OUT" \
    -o "$OUT/train" "$DIR/train.c" "$OUT/digits.c" "$BUILD/libamprt.a" -lm -lpthread
"$OUT/train" --metrics="$OUT/metrics.csv" --weights="$OUT/$MODEL-weights.safetensors" "$DIR/digits.bin" "$OUT/$MODEL.safetensors" "$EPOCHS" "$MIN_ACCURACY"
