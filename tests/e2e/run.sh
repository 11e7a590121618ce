#!/bin/sh
# run.sh BUILD: end-to-end tests.  For every target and for gcc and clang:
# compile examples/mlp.amp with ampc, build the emitted C with the runtime
# at -std=c99 -Wall -Wextra -pedantic -Werror, run it against an
# independent double-precision evaluation (tests/e2e/mlp_check.c), and
# check that the targets really emit different code.
#
# E2E_COMPILERS (default "gcc clang") and E2E_CFLAGS (extra flags, e.g.
# sanitizers matching the runtime's build) adjust the C build.
set -u
BUILD=${1:-build}
AMPC=$BUILD/ampc
OUT=$BUILD/e2e
mkdir -p "$OUT"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

for target in tpu gpu cpu; do
    dir=$OUT/$target
    mkdir -p "$dir"
    if ! "$AMPC" examples/mlp.amp -t "$target" -o "$dir/mlp.c"; then
        bad "ampc mlp.amp -t $target"
        continue
    fi
    for cc in ${E2E_COMPILERS:-gcc clang}; do
        if ! command -v "$cc" >/dev/null 2>&1; then
            bad "$cc is not installed"
            continue
        fi
        exe=$dir/check-$cc
        # shellcheck disable=SC2086
        if ! $cc -std=c99 -O2 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$dir" \
                -o "$exe" tests/e2e/mlp_check.c "$dir/mlp.c" "$BUILD/libamprt.a" -lm -lpthread; then
            bad "$target: $cc builds the emitted C warning-free"
            continue
        fi
        # run where it may write its weights files: once on the reference
        # kernels (f32 sums in index order, the order mlp_check's tolerance
        # analysis assumes), and once on the best kernel set (AMPRT_ISA=auto:
        # blocked GEMM, another f32 summation order), which must stay within
        # the same dtype-derived tolerance (one low-dtype ulp per logit plus
        # the hidden-unit flips).
        for isa in ref auto; do
            if (cd "$dir" && AMPRT_ISA=$isa "./check-$cc") > "$exe.$isa.log" 2>&1; then
                ok "$target/$cc/AMPRT_ISA=$isa: $(grep '^logits' "$exe.$isa.log")"
            else
                cat "$exe.$isa.log"
                bad "$target/$cc/AMPRT_ISA=$isa: outputs match the double-precision reference"
            fi
        done
    done
done

# A prepared block carries its model's magic, which differs per target (and
# model, and prefix): one target's block is refused by another's forward.
magics=$(for target in tpu gpu cpu; do sed -n 's/^#define MLP_PREPARED_MAGIC //p' "$OUT/$target/mlp.c"; done | sort -u | wc -l)
if [ "$magics" -eq 3 ]; then ok "each target's prepared block has its own magic"; else bad "each target's prepared block has its own magic ($magics distinct of 3)"; fi

# The targets' rules differ, so must their code.
if cmp -s "$OUT/tpu/mlp.c" "$OUT/gpu/mlp.c"; then bad "tpu and gpu emit different C"; else ok "tpu and gpu emit different C"; fi
grep -q 'amp_linear_ex_bf16' "$OUT/tpu/mlp.c" && grep -q 'amp_linear_ex_f16' "$OUT/gpu/mlp.c" &&
    grep -q 'amp_log_softmax_f32' "$OUT/tpu/mlp.c" && grep -q 'amp_log_softmax_f32' "$OUT/gpu/mlp.c" &&
    grep -q 'amp_nll_loss_f32' "$OUT/cpu/mlp.c" &&
    ok "linear in bf16 on tpu, f16 on gpu; log_softmax and nll_loss in f32" ||
    bad "linear in bf16 on tpu, f16 on gpu; log_softmax and nll_loss in f32"

# Byte-identical output run to run.
"$AMPC" examples/mlp.amp -t tpu -o "$OUT/again.c" --header "$OUT/tpu/again.h" &&
    sed 's/again\.h/mlp.h/' "$OUT/again.c" | cmp -s - "$OUT/tpu/mlp.c" && ok "output is deterministic" ||
    bad "output is deterministic"

# Reproducible for build caches: the same inputs give the same bytes
# whatever the working directory, absolute or relative paths, or flag order.
top=$(pwd)
mkdir -p "$OUT/repro/a" "$OUT/repro/b/deeper"
"$AMPC" -t gpu examples/mlp.amp -o "$OUT/repro/a/mlp.c" --prefix net
(cd "$OUT/repro/b/deeper" && "$top/$AMPC" --prefix=net "$top/examples/mlp.amp" -o mlp.c --target gpu)
if cmp -s "$OUT/repro/a/mlp.c" "$OUT/repro/b/deeper/mlp.c" && cmp -s "$OUT/repro/a/mlp.h" "$OUT/repro/b/deeper/mlp.h"; then
    ok "identical output from another directory, an absolute path and other flag order"
else
    diff "$OUT/repro/a/mlp.c" "$OUT/repro/b/deeper/mlp.c" | head -5
    bad "identical output from another directory, an absolute path and other flag order"
fi

# Outputs get the usual mode under the umask, not mkstemp's 0600.
(umask 022 && "$AMPC" -t tpu examples/mlp.amp -o "$OUT/mode.c")
if [ "$(stat -c %a "$OUT/mode.c")" = 644 ] && [ "$(stat -c %a "$OUT/mode.h")" = 644 ]; then
    ok "outputs are created with the umask's mode (644 under umask 022)"
else
    bad "outputs are created with the umask's mode (644 under umask 022)"
fi

# examples/resnet18.amp declares exactly torchvision's resnet18 state_dict
# keys, in order (the list below was printed by torchvision; with
# python3-torch installed it is checked live too).
"$AMPC" examples/resnet18.amp -t tpu --dump=lower -o "$OUT/resnet18.c" 2>/dev/null |
    sed -n -E 's/^(param|buffer) %[0-9]+\(([^)]*)\).*/\2/p' > "$OUT/resnet18.keys"
if cmp -s "$OUT/resnet18.keys" tests/e2e/resnet18.state_dict_keys; then
    ok "resnet18.amp's parameter names are torchvision's state_dict keys"
else
    diff tests/e2e/resnet18.state_dict_keys "$OUT/resnet18.keys" | head -5
    bad "resnet18.amp's parameter names are torchvision's state_dict keys"
fi
if /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
    /usr/bin/python3 -c 'import torchvision; print("\n".join(torchvision.models.resnet18().state_dict().keys()))' > "$OUT/tv.keys"
    if cmp -s "$OUT/tv.keys" "$OUT/resnet18.keys"; then ok "... and match the installed torchvision"; else bad "... and match the installed torchvision"; fi
else
    echo "skip resnet18 names against a live torchvision: python3-torchvision is not installed"
fi

# -o onto something that is not a regular file writes into it, and never
# replaces it with a file (as root, renaming over /dev/null would).
rm -f "$OUT/fifo" "$OUT/fifo.out" "$OUT/fifo.h"
mkfifo "$OUT/fifo"
cat "$OUT/fifo" > "$OUT/fifo.out" &
reader=$!
"$AMPC" -t tpu examples/mlp.amp -o "$OUT/fifo"
wait "$reader"
if [ -p "$OUT/fifo" ] && grep -q mlp_forward "$OUT/fifo.out" && [ ! -e "$OUT/fifo.h" ]; then
    ok "-o onto a fifo writes through it, and derives no header from it"
else
    bad "-o onto a fifo writes through it, and derives no header from it"
fi

# -g: #line directives, so the debug info points into the .amp file.
"$AMPC" -g -t tpu examples/mlp.amp -o "$OUT/lines.c"
if grep -q '^#line 13 "examples/mlp.amp"$' "$OUT/lines.c" &&
    cc -std=c99 -g -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$OUT" -c "$OUT/lines.c" -o "$OUT/lines.o" &&
    readelf --debug-dump=line "$OUT/lines.o" 2>/dev/null | grep -q 'mlp.amp'; then
    ok "-g: #line directives put the .amp file in the debug info"
else
    bad "-g: #line directives put the .amp file in the debug info"
fi

# Depfiles, as gcc writes them.
mkdir -p "$OUT/dep"
"$AMPC" -t tpu examples/mlp.amp -o "$OUT/dep/mlp.c" -MD -MP
expected="$OUT/dep/mlp.c $OUT/dep/mlp.h: \\
 examples/mlp.amp

examples/mlp.amp:"
if [ "$(cat "$OUT/dep/mlp.d")" = "$expected" ]; then ok "-MD -MP writes the depfile beside the output"; else cat "$OUT/dep/mlp.d"; bad "-MD -MP writes the depfile beside the output"; fi
if [ "$("$AMPC" -M examples/mlp.amp -MT 'obj dir/x.o')" = "obj\\ dir/x.o: \\
 examples/mlp.amp" ]; then ok "-M prints the rule with -MT's target, escaped"; else bad "-M prints the rule with -MT's target, escaped"; fi

# --emit=main: the model and a main() on files.  The tpu check's weights
# file, inputs written here (x: 3 rows of f32, y: class indices as i64),
# the batch found from x's size; logits (and the loss, the model's second
# output) written, the logits against a double-precision evaluation of the
# MLP from the same files (bf16: 2e-2 of the largest logit).  A wrong-sized input, and a bad command line, are errors.
mkdir -p "$OUT/main"
dir=$OUT/tpu
cc1=${E2E_COMPILERS:-cc}
cc1=${cc1%% *}
# shellcheck disable=SC2086
if [ -f "$dir/mlp-weights.safetensors" ] && command -v python3 > /dev/null 2>&1 &&
    "$AMPC" examples/mlp.amp -t tpu --emit=main -o "$OUT/main/run.c" &&
    $cc1 -std=c99 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include -o "$OUT/main/run" \
        "$OUT/main/run.c" "$BUILD/libamprt.a" -lm -lpthread; then
    python3 - "$OUT/main" <<'PYEOF'
import os, random, struct, sys
d = sys.argv[1]
random.seed(5)
x = [[random.uniform(-1, 1) for _ in range(64)] for _ in range(3)]
with open(os.path.join(d, "x.bin"), "wb") as f:
    f.write(struct.pack("<192f", *[v for row in x for v in row]))
with open(os.path.join(d, "y.bin"), "wb") as f:
    f.write(struct.pack("<3q", 1, 2, 3))
with open(os.path.join(d, "short.bin"), "wb") as f:
    f.write(struct.pack("<10f", *range(10)))
PYEOF
    if "$OUT/main/run" "$dir/mlp-weights.safetensors" "$OUT/main/x.bin" "$OUT/main/y.bin" "$OUT/main/logits.bin" \
            "$OUT/main/loss.bin" > "$OUT/main/log" 2>&1 && [ "$(wc -c < "$OUT/main/loss.bin")" -eq 4 ] &&
        python3 - "$dir/mlp-weights.safetensors" "$OUT/main" >> "$OUT/main/log" 2>&1 <<'PYEOF'
import json, math, os, struct, sys
blob = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
head = json.loads(blob[8:8 + n])
def t(k):
    lo, hi = head[k]["data_offsets"]
    return struct.unpack("<%df" % ((hi - lo) // 4), blob[8 + n + lo:8 + n + hi])
w1, b1, w2, b2 = t("fc1.weight"), t("fc1.bias"), t("fc2.weight"), t("fc2.bias")
d = sys.argv[2]
x = struct.unpack("<192f", open(os.path.join(d, "x.bin"), "rb").read())
got = open(os.path.join(d, "logits.bin"), "rb").read()
assert len(got) == 30 * 4, "logits.bin has %d bytes, not 3 x 10 f32" % len(got)
got = struct.unpack("<30f", got)
ref = []
for r in range(3):
    h = [max(0.0, b1[j] + sum(w1[j * 64 + i] * x[r * 64 + i] for i in range(64))) for j in range(128)]
    ref += [b2[k] + sum(w2[k * 128 + j] * h[j] for j in range(128)) for k in range(10)]
err = max(abs(a - b) for a, b in zip(got, ref)) / max(abs(v) for v in ref)
print("logits within %.1e of the largest (bf16 tolerance 2e-2)" % err)
sys.exit(0 if err < 2e-2 else 1)
PYEOF
    then
        ok "--emit=main: weights, x.bin and y.bin in, B from x.bin's size, $(tail -n 1 "$OUT/main/log")"
    else
        cat "$OUT/main/log"
        bad "--emit=main: the program's logits match a double-precision evaluation"
    fi
    "$OUT/main/run" "$dir/mlp-weights.safetensors" > "$OUT/main/usage" 2>&1
    usage_rc=$?
    if "$OUT/main/run" "$dir/mlp-weights.safetensors" "$OUT/main/short.bin" "$OUT/main/y.bin" "$OUT/main/o.bin" \
            "$OUT/main/l.bin" B=3 > "$OUT/main/err" 2>&1; then
        bad "--emit=main: an input file of the wrong size is an error"
    elif grep -q "short.bin: cannot read 768 bytes" "$OUT/main/err" && [ "$usage_rc" -eq 2 ] &&
        grep -q "usage: .* WEIGHTS.safetensors x.bin y.bin logits.bin loss.bin \[B=N\]" "$OUT/main/usage"; then
        ok "--emit=main: a wrong-sized input is reported by name; a short command line prints the usage"
    else
        cat "$OUT/main/err" "$OUT/main/usage"
        bad "--emit=main: a wrong-sized input is reported by name; a short command line prints the usage"
    fi
    # a weights file without fc2.bias (mlp_check wrote it): the tensor named
    if "$OUT/main/run" "$dir/mlp-missing.safetensors" "$OUT/main/x.bin" "$OUT/main/y.bin" "$OUT/main/o.bin" \
            "$OUT/main/l.bin" > "$OUT/main/err" 2>&1; then
        bad "--emit=main: a weights file missing a tensor is an error"
    elif grep -q "mlp-missing.safetensors: no tensor 'fc2.bias' in the file (the model's f32\[10\])" "$OUT/main/err"; then
        ok "--emit=main: a weights file missing a tensor is refused with the tensor named"
    else
        cat "$OUT/main/err"
        bad "--emit=main: a weights file missing a tensor is refused with the tensor named"
    fi
else
    bad "--emit=main: ampc writes the program and $cc1 builds it warning-free (needs python3)"
fi

# --embed-weights: the weights file the tpu check wrote, as const arrays.
dir=$OUT/tpu
mkdir -p "$OUT/embed"
if [ -f "$dir/mlp-weights.safetensors" ] &&
    "$AMPC" examples/mlp.amp -t tpu --embed-weights "$dir/mlp-weights.safetensors" -o "$OUT/embed/mlp.c"; then
    cc1=${E2E_COMPILERS:-cc}
    cc1=${cc1%% *}
    # shellcheck disable=SC2086
    if $cc1 -std=c99 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include -I"$OUT/embed" -o "$OUT/embed/check" \
            tests/e2e/embed_check.c "$OUT/embed/mlp.c" "$BUILD/libamprt.a" -lm -lpthread &&
        (cd "$dir" && "../embed/check") > "$OUT/embed/log" 2>&1; then
        ok "--embed-weights: $(cat "$OUT/embed/log")"
    else
        cat "$OUT/embed/log" 2>/dev/null
        bad "--embed-weights: the embedded weights are the file's"
    fi
else
    bad "ampc --embed-weights"
fi
# a weights file that does not fit the model: an error, and no output
rm -f "$OUT/embed/lenet5.c"
if "$AMPC" examples/lenet5.amp --embed-weights "$dir/mlp-weights.safetensors" -o "$OUT/embed/lenet5.c" \
        > "$OUT/embed/err" 2>&1; then
    bad "--embed-weights with another model's weights fails"
elif grep -q "no tensor 'conv1.weight'" "$OUT/embed/err" && grep -q "fc1.weight' is f32\[128, 64\] in the file" "$OUT/embed/err" &&
    [ ! -e "$OUT/embed/lenet5.c" ]; then
    ok "--embed-weights with another model's weights: each mismatch reported, no output written"
else
    cat "$OUT/embed/err"
    bad "--embed-weights with another model's weights: each mismatch reported, no output written"
fi
# the same weights as f64 and as a training checkpoint would hold them
# (with grad.* and optimizer.* beside them): embedded, the same arrays,
# converted back to the parameters' f32 exactly
if [ -f "$dir/mlp-weights.safetensors" ] && command -v python3 > /dev/null 2>&1 &&
    python3 - "$dir/mlp-weights.safetensors" "$OUT/embed/f64.safetensors" <<'PYEOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header.pop("__metadata__", None)
out, data = {}, b""
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    b, e = t["data_offsets"]
    vals = struct.unpack("<%df" % ((e - b) // 4), raw[8 + n + b:8 + n + e])
    for key, fmt, size in ((name, "d", 8), ("grad." + name, "f", 4), ("optimizer.%s.momentum_buffer" % name, "f", 4)):
        blob = struct.pack("<%d%s" % (len(vals), fmt), *vals)
        out[key] = {"dtype": "F64" if fmt == "d" else "F32", "shape": t["shape"],
                    "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
blob = struct.pack("<d", 0.1)
out["optimizer.lr"] = {"dtype": "F64", "shape": [], "data_offsets": [len(data), len(data) + 8]}
data += blob
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + data)
PYEOF
then
    mkdir -p "$OUT/embed/f64"
    if "$AMPC" examples/mlp.amp -t tpu --embed-weights "$OUT/embed/f64.safetensors" -o "$OUT/embed/f64/mlp.c" &&
        grep -v -e safetensors -e INTERFACE_HASH "$OUT/embed/mlp.c" > "$OUT/embed/mlp.arrays" &&
        grep -v -e safetensors -e INTERFACE_HASH "$OUT/embed/f64/mlp.c" > "$OUT/embed/mlp64.arrays" &&
        cmp -s "$OUT/embed/mlp.arrays" "$OUT/embed/mlp64.arrays"; then
        ok "--embed-weights of an f64 checkpoint-like file: its weights converted to f32 exactly, its training state skipped"
    else
        bad "--embed-weights of an f64 checkpoint-like file: the arrays of the f32 file"
    fi
else
    bad "--embed-weights: writing the f64 file (needs python3)"
fi

# The memory plan on resnet18: the arena (slots reused by liveness) against
# the sum of every temporary buffer, both read from the emitted header.
if "$AMPC" examples/resnet18.amp -I examples -t tpu -o "$OUT/resnet18.c"; then
    sum=$(sed -n 's/.*without reuse: \(.*\) bytes).*/\1/p' "$OUT/resnet18.h")
    cat > "$OUT/arena.c" <<EOC
#include <stdio.h>
#include "resnet18.h"
int main(void)
{
    for (long long B = 1; B <= 8; B *= 8) {
        long long plan = (long long)RESNET18_ARENA_BYTES(B), all = (long long)($sum);
        printf("B=%lld: arena %lld bytes, all buffers %lld bytes, %.1f%%\\n", B, plan, all, 100.0 * plan / all);
        if (plan * 4 > all)
            return 1;
    }
    return 0;
}
EOC
    if cc -std=c99 -Iruntime/include -I"$OUT" -o "$OUT/arena" "$OUT/arena.c" && "$OUT/arena" > "$OUT/arena.log"; then
        ok "resnet18 memory plan under a quarter of all buffers: $(tr '\n' ';' < "$OUT/arena.log")"
    else
        cat "$OUT/arena.log" 2>/dev/null
        bad "resnet18 memory plan under a quarter of all buffers"
    fi
else
    bad "ampc resnet18.amp"
fi

# Every example on every target against its f64 evaluation (--emit=check).
if sh tests/e2e/check-examples.sh "$BUILD" > "$OUT/check.log" 2>&1; then
    ok "$(tail -n 1 "$OUT/check.log"): every example on every target within tolerance of f64"
else
    grep -v '^ok ' "$OUT/check.log"
    bad "every example on every target within tolerance of f64 (see $OUT/check.log)"
fi
grep '^ok ' "$OUT/check.log" | sed 's/^ok   /     /'

# The check's tolerance grows with ops whose error compounds (prod, pow).
if sh tests/e2e/check-tolerance.sh "$BUILD" > "$OUT/tolerance.log" 2>&1; then
    ok "$(tail -n 1 "$OUT/tolerance.log"): prod, cumprod and pow in bf16 and f16 within a tolerance that grows with them"
else
    grep -v '^ok ' "$OUT/tolerance.log"
    bad "prod, cumprod and pow within a tolerance that grows with them (see $OUT/tolerance.log)"
fi

# Fused convolution epilogues and prepared weights change no bit.
if sh tests/e2e/fusion.sh "$BUILD" > "$OUT/fusion.log" 2>&1; then
    ok "$(tail -n 1 "$OUT/fusion.log"): fused and prepared forwards bit-identical to one call per op"
else
    grep -v '^ok ' "$OUT/fusion.log"
    bad "fused and prepared forwards bit-identical to one call per op (see $OUT/fusion.log)"
fi
grep '^ok ' "$OUT/fusion.log" | sed 's/^ok   /     /'

# --f32-outputs widens the outputs exactly: each output's error against
# the f64 evaluation is the same number as without the flag, in f32.
f32o_ok=1
E2E_COMPILERS=${E2E_COMPILERS:-cc}
for t in tpu gpu; do
    for flag in "" --f32-outputs; do
        name=f32o-$t${flag:+-f32}
        if "$BUILD/ampc" examples/mlp.amp -t "$t" $flag --emit=check -o "$OUT/$name.c" &&
            ${E2E_COMPILERS%% *} -std=c99 -O1 ${E2E_CFLAGS:-} -Wall -Wextra -pedantic -Werror -Iruntime/include \
                "$OUT/$name.c" "$BUILD/libamprt.a" -lm -lpthread -o "$OUT/$name" &&
            "$OUT/$name" > "$OUT/$name.log"; then
            :
        else
            f32o_ok=0
        fi
    done
    a=$(awk '$1 == "logits" { print $2, $4 }' "$OUT/f32o-$t.log" 2>/dev/null)
    b=$(awk '$1 == "logits" { print $2, $4 }' "$OUT/f32o-$t-f32.log" 2>/dev/null)
    [ "${a#* }" = "${b#* }" ] && [ "${b% *}" = f32 ] && [ "${a% *}" != f32 ] || f32o_ok=0
done
if [ "$f32o_ok" = 1 ]; then
    ok "--f32-outputs: mlp's logits in f32 on tpu and gpu, the same error against f64 as in bf16/f16"
else
    bad "--f32-outputs: mlp's logits in f32 with the same error against f64 (see $OUT/f32o-*.log)"
fi

echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
