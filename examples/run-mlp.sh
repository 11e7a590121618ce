#!/bin/sh
# run-mlp.sh BUILD TARGET: the main job.  Compiles examples/mlp.amp for
# TARGET with ampc, builds the emitted C with the runtime and the example
# driver, and runs it on fixed inputs.
set -eu
BUILD=${1:-build}
TARGET=${2:-tpu}
CC=${CC:-cc}
OUT=$BUILD/example/$TARGET
mkdir -p "$OUT"
set -x
"$BUILD/ampc" examples/mlp.amp -t "$TARGET" -o "$OUT/mlp.c"
$CC -std=c99 -O2 -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$OUT" \
    -o "$OUT/mlp" examples/mlp_main.c "$OUT/mlp.c" "$BUILD/libamprt.a" -lm -lpthread
"$OUT/mlp" 4
