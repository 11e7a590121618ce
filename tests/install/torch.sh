#!/bin/sh
# tests/install/torch.sh PREFIX: docs/pytorch.md's workflow with installed
# pieces only, in a fresh directory: PREFIX/bin/torch2amp exports a small
# torchvision resnet18 (32 x 32 input, so it is quick) and a model of its own
# whose top-level nn.Sequential has 0.weight-style keys, PREFIX/bin/ampc
# compiles each with --emit=main, cc builds it against PREFIX's libamprt, it
# runs on an input file written by numpy, and its output matches PyTorch's
# (bf16 autocast on cpu: within 5% relative, the same top-1).  Then a model
# importing "nn.amp" compiles with no -I (PREFIX/share/ampc is searched).
# Prints ok/FAIL lines and "torch-install: P passed, F failed"; exits 1 on a
# failure.  Skipped (exit 0) when /usr/bin/python3 cannot import torch and
# torchvision.  About 40 s.
set -u
prefix=${1:?usage: tests/install/torch.sh PREFIX}
PY=/usr/bin/python3
if ! "$PY" -c 'import torch, torchvision' > /dev/null 2>&1; then
    echo "torch-install: skipped: $PY cannot import torch and torchvision"
    exit 0
fi
CC=${CC:-cc}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() {
    fail=$((fail + 1))
    echo "FAIL $1"
    [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" | sed 's/^/     | /'
}
work=$(mktemp -d "${TMPDIR:-/tmp}/ampc-torch-install.XXXXXX") || exit 2
[ "${KEEP:-}" = 1 ] && echo "(keeping $work)" || trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
# only the installed ampc, torch2amp and libamprt: the clone is not on any path
PATH=$prefix/bin:/usr/bin:/bin
export PATH

cat > mlp.py <<'PYEOF'
import torch.nn as nn
def mlp():
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 5)).eval()
PYEOF

# workflow MODEL SPEC SHAPE: export, compile, build, run, compare with PyTorch
workflow() {
    name=$1 spec=$2 shape=$3
    if ! "$PY" "$prefix/bin/torch2amp" "$spec" -o "$name.amp" --weights "$name.safetensors" \
            --input-shape "$shape" > "$name.log" 2>&1; then
        bad "$name: torch2amp" "$name.log"; return
    fi
    if ! ampc "$name.amp" -t cpu --emit=main -o "$name.c" >> "$name.log" 2>&1 ||
       ! $CC -std=c99 -O2 -I"$prefix/include" "$name.c" -L"$prefix/lib" -Wl,-Bstatic -lamprt -Wl,-Bdynamic \
            -lm -lpthread -o "$name" >> "$name.log" 2>&1; then
        bad "$name: ampc --emit=main and cc against the installed libamprt" "$name.log"; return
    fi
    "$PY" - "$spec" "$shape" > /dev/null 2>> "$name.log" <<'PYEOF'
import sys, torch
torch.manual_seed(3)
shape = [3] + [int(s) for s in sys.argv[2].split(",")[1:]]
torch.randn(shape).numpy().tofile("input.bin")
PYEOF
    if ! ./"$name" "$name.safetensors" input.bin output.bin >> "$name.log" 2>&1; then
        bad "$name: the runner (weights, input.bin -> output.bin)" "$name.log"; return
    fi
    if "$PY" - "$spec" "$shape" "$name.safetensors" >> "$name.log" 2>&1 <<'PYEOF'
import importlib, json, struct, sys, numpy as np, torch
spec, shape, wts = sys.argv[1], sys.argv[2], sys.argv[3]
mod, fn = spec.split(":")
if mod.endswith(".py"):
    sys.path.insert(0, "."); mod = mod[:-3]
torch.manual_seed(0)
m = getattr(importlib.import_module(mod), fn)().eval()
# the weights file, read back: the same bits on both sides
blob = open(wts, "rb").read(); n = struct.unpack("<Q", blob[:8])[0]
head = json.loads(blob[8:8 + n]); sd = m.state_dict()
for k, info in head.items():
    lo, hi = info["data_offsets"]
    want = k[1:] if k.startswith("_") and k[1:] in sd else k   # 0.weight is spelled _0.weight
    t = sd[want]
    t.copy_(torch.frombuffer(bytearray(blob[8 + n + lo:8 + n + hi]), dtype=t.dtype).reshape(t.shape))
shp = [3] + [int(s) for s in shape.split(",")[1:]]
x = torch.from_numpy(np.fromfile("input.bin", dtype=np.float32).reshape(shp))
with torch.no_grad():
    ref = m(x)
y = torch.from_numpy(np.fromfile("output.bin", dtype=np.float32).reshape(ref.shape))
err = ((y - ref).norm() / ref.norm()).item()
top = (y.argmax(-1) == ref.argmax(-1)).float().mean().item()
print("relative error %.2e, top-1 agreement %.2f" % (err, top))
sys.exit(0 if err < 0.05 and top == 1.0 else 1)
PYEOF
    then ok "$name: installed torch2amp, ampc --emit=main, libamprt: matches PyTorch ($(tail -n 1 "$name.log"))"
    else bad "$name: the output matches PyTorch" "$name.log"; fi
}

workflow resnet18 torchvision.models:resnet18 1,3,32,32
workflow mlp mlp.py:mlp 1,12

cat > uses_nn.amp <<'AMPEOF'
import "nn.amp"
model Tiny(B) {
  input x: f32[B, 3, 8, 8]
  param c.weight: f32[4, 3, 3, 3]
  autocast {
    y = relu(conv2d(x, c.weight, padding=1))
  }
  output y
}
AMPEOF
if ampc uses_nn.amp -t cpu -o uses_nn.c > nn.log 2>&1; then
    ok "import \"nn.amp\" is found in PREFIX/share/ampc with no -I"
else
    bad "import \"nn.amp\" is found in PREFIX/share/ampc with no -I" nn.log
fi

echo "torch-install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
