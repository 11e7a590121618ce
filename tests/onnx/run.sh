#!/bin/sh
# tests/onnx/run.sh BUILD [MODEL...]: ONNX models through tools/onnx2amp.
# Bad input and refused ops first; then compare.py exports issue 13's
# architectures at CI sizes (its MODELS: torchvision CNNs, a reduced ViT, a
# transformer encoder) at opset 13 or 17 or both, converts, compiles them
# for -t cpu, tpu and gpu and compares each with PyTorch; with no MODEL
# given, node_tests.py then runs ONNX's own node tests of every op onnx2amp
# maps.  make test-onnx-zoo runs the full-size set (compare.py --zoo).  Skipped (exit 0) when /usr/bin/python3 cannot import
# onnx, torch and torchvision (Debian: python3-onnx python3-torch
# python3-torchvision).
set -u
BUILD=${1:?usage: tests/onnx/run.sh BUILD [MODEL...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import onnx, torch, torchvision' >/dev/null 2>&1; then
    echo "onnx: skipped: $PY cannot import onnx, torch and torchvision (Debian: python3-onnx python3-torch python3-torchvision)"
    exit 0
fi
status=0
# bad input: a file that is not ONNX exits 1, a missing one 3, no argument
# 2, and none writes an output
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "not a protobuf" > "$tmp/bad.onnx"
for case in "1 $tmp/bad.onnx" "3 $tmp/missing.onnx" "2"; do
    want=${case%% *}
    file=${case#"$want"}
    # shellcheck disable=SC2086 # file is one word or none
    "$PY" "$HERE/../../tools/onnx2amp" $file -o "$tmp/out.amp" > "$tmp/log" 2>&1
    got=$?
    if [ "$got" = "$want" ] && ! [ -e "$tmp/out.amp" ] && grep -q "onnx2amp" "$tmp/log"; then
        echo "ok   onnx2amp ${file:-(no argument)}: exit $got, a message, no output"
    else
        echo "FAIL onnx2amp ${file:-(no argument)}: exit $got (want $want)"
        cat "$tmp/log"
        status=1
    fi
done
# an op with no mapping, and a mapped op with an attribute it refuses:
# exit 1, one message naming the op and the node, nothing written
"$PY" - "$tmp" <<'PYEOF'
import sys
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
for name, node in (("nonzero", helper.make_node("NonZero", ["x"], ["y"], name="/NonZero")),
                   ("split", helper.make_node("Split", ["x"], ["y", "z"], name="/Split", axis=0))):
    g = helper.make_graph([node], name, [x], [y])
    with open("%s/%s.onnx" % (sys.argv[1], name), "wb") as f:
        f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
PYEOF
for case in "nonzero:node '/NonZero': ONNX op NonZero has no ampc mapping" \
            "split:node '/Split' (Split): Split along the batch dimension"; do
    name=${case%%:*}
    want=${case#*:}
    "$PY" "$HERE/../../tools/onnx2amp" "$tmp/$name.onnx" -o "$tmp/$name.amp" > "$tmp/log" 2>&1
    got=$?
    if [ "$got" = 1 ] && ! [ -e "$tmp/$name.amp" ] && [ "$(wc -l < "$tmp/log")" = 1 ] &&
        grep -qF "$want" "$tmp/log"; then
        echo "ok   onnx2amp $name.onnx: exit 1, one message naming the op and the node"
    else
        echo "FAIL onnx2amp $name.onnx: exit $got, want 1 and \"$want\""
        cat "$tmp/log"
        status=1
    fi
done
"$PY" "$HERE/compare.py" "$BUILD" "$@" || status=1
if [ $# -eq 0 ]; then
    "$PY" "$HERE/node_tests.py" "$BUILD" || status=1
fi
exit $status
