#!/bin/sh
# tests/install/deploy.sh PREFIX: from a trained checkpoint to a deployed
# program with installed pieces only (docs/training.md, "Deploying"), in a
# fresh directory: PREFIX/bin/ampc compiles examples/digits/mlp.amp (copied
# there with train.c, deploy.c, digits_data.h and digits.bin, as a user's
# own files), train.c is built against PREFIX's libamprt (pkg-config) and
# trains 3 epochs, saving its checkpoint and, with --weights, the weights
# alone; then the checkpoint and the weights file are each deployed twice,
# compiled in (ampc --embed-weights, deploy.c -DEMBEDDED) and read at run
# time (digits_load_weights_ex), and every deployed program's test
# accuracy must equal the trained model's own.  Last, the checkpoint given
# to another model (cnn.amp) is refused by ampc --embed-weights and by the
# loader, each naming the tensors.  Prints ok/FAIL lines and
# "deploy-install: P passed, F failed"; exits 1 on a failure.  About 5 s.
set -u
prefix=${1:?usage: tests/install/deploy.sh PREFIX}
root=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-cc}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() {
    fail=$((fail + 1))
    echo "FAIL $1"
    [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" | sed 's/^/     | /'
}
work=$(mktemp -d "${TMPDIR:-/tmp}/ampc-deploy-install.XXXXXX") || exit 2
[ "${KEEP:-}" = 1 ] && echo "(keeping $work)" || trap 'rm -rf "$work"' EXIT
for f in mlp.amp cnn.amp train.c deploy.c digits_data.h digits.bin; do
    cp "$root/examples/digits/$f" "$work/" || exit 2
done
cd "$work" || exit 2
# only the installed ampc and libamprt: the clone is not on any path
PATH=$prefix/bin:/usr/bin:/bin
PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PATH PKG_CONFIG_PATH
cflags=$(pkg-config --cflags amprt) || exit 2
libs="$(pkg-config --libs amprt) -Wl,-rpath,$prefix/lib -lm -lpthread"

# build OUT-DIR SOURCE [CFLAGS...]: SOURCE and OUT-DIR/digits.c into OUT-DIR/prog
build() {
    out=$1
    src=$2
    shift 2
    # shellcheck disable=SC2086
    $CC -std=c99 -O2 -Wall -Wextra -pedantic -Werror "$@" $cflags -I"$out" -I. -o "$out/prog" "$src" "$out/digits.c" \
        $libs
}

mkdir train
if ampc mlp.amp -t cpu --prefix=digits -o train/digits.c > train.log 2>&1 && build train train.c >> train.log 2>&1 &&
    train/prog --weights=weights.safetensors digits.bin checkpoint.safetensors 3 0 >> train.log 2>&1 &&
    [ -s checkpoint.safetensors ] && [ -s weights.safetensors ]; then
    trained=$(sed -n 's/^final test accuracy \([0-9.]*\).*/\1/p' train.log)
    ok "trained digits for 3 epochs with the installed ampc and libamprt (test accuracy $trained), saved the checkpoint and the weights alone"
else
    bad "trained digits with the installed ampc and libamprt" train.log
    echo "deploy-install: $pass passed, $fail failed"
    exit 1
fi
# a weights-only file holds the parameters alone: smaller than the checkpoint
if [ "$(wc -c < weights.safetensors)" -lt "$(wc -c < checkpoint.safetensors)" ]; then
    ok "the weights file is smaller than the checkpoint ($(wc -c < weights.safetensors) vs $(wc -c < checkpoint.safetensors) bytes)"
else
    bad "the weights file is smaller than the checkpoint"
fi

for file in checkpoint weights; do
    d=embed-$file
    mkdir "$d"
    if ampc mlp.amp -t cpu --prefix=digits --embed-weights="$file.safetensors" -o "$d/digits.c" > "$d.log" 2>&1 &&
        build "$d" deploy.c -DEMBEDDED >> "$d.log" 2>&1 && (cd "$d" && ./prog ../digits.bin) >> "$d.log" 2>&1 &&
        got=$(sed -n 's/^test accuracy \([0-9.]*\).*/\1/p' "$d.log") && [ "$got" = "$trained" ]; then
        ok "the $file through --embed-weights: a program with no weights file, test accuracy $got, the trained model's"
    else
        bad "the $file through --embed-weights: test accuracy the trained model's ($trained)" "$d.log"
    fi
    d=load-$file
    mkdir "$d"
    cp train/digits.c train/digits.h "$d/"
    if build "$d" deploy.c > "$d.log" 2>&1 && "$d/prog" "$file.safetensors" digits.bin >> "$d.log" 2>&1 &&
        got=$(sed -n 's/^test accuracy \([0-9.]*\).*/\1/p' "$d.log") && [ "$got" = "$trained" ]; then
        ok "the $file through digits_load_weights_ex: test accuracy $got, the trained model's"
    else
        bad "the $file through digits_load_weights_ex: test accuracy the trained model's ($trained)" "$d.log"
    fi
done

# another model's checkpoint: refused, each bad tensor named
mkdir cnn
if ampc cnn.amp -t cpu --prefix=digits --embed-weights=checkpoint.safetensors -o cnn/digits.c > cnn-embed.log 2>&1; then
    bad "--embed-weights of the mlp's checkpoint into cnn.amp fails" cnn-embed.log
elif grep -q "no tensor 'conv1.weight' in the file (the model's f32\[16, 1, 3, 3\])" cnn-embed.log &&
    grep -q "tensor 'fc1.weight' is not a parameter or buffer of the model" cnn-embed.log &&
    ! grep -q "'grad\.\|'optimizer\." cnn-embed.log && [ ! -e cnn/digits.c ]; then
    ok "--embed-weights of the mlp's checkpoint into cnn.amp: refused, the missing and unexpected tensors named, its training state not"
else
    bad "--embed-weights of the mlp's checkpoint into cnn.amp: the missing and unexpected tensors named" cnn-embed.log
fi
if ampc cnn.amp -t cpu --prefix=digits -o cnn/digits.c > cnn-load.log 2>&1 && build cnn deploy.c >> cnn-load.log 2>&1; then
    cnn/prog checkpoint.safetensors digits.bin >> cnn-load.log 2>&1
    rc=$?
    if [ "$rc" = 3 ] && grep -q "deploy: checkpoint.safetensors: no tensor 'conv1.weight' in the file" cnn-load.log &&
        grep -q "^tensor 'fc2.bias' is not a parameter or buffer of the model" cnn-load.log; then
        ok "digits_load_weights_ex of the mlp's checkpoint into cnn.amp: exit 3, each tensor named"
    else
        bad "digits_load_weights_ex of the mlp's checkpoint into cnn.amp: exit 3 (got $rc), each tensor named" cnn-load.log
    fi
else
    bad "cnn.amp builds with the installed pieces" cnn-load.log
fi

echo "deploy-install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
