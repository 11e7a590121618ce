#!/bin/sh
# tests/onnx/run.sh BUILD [MODEL...]: ONNX models through tools/onnx2amp.
# compare.py exports torchvision's resnet18, mobilenet_v2 and squeezenet1_1
# (tests/torch/models.py's weights) at opsets 13 and 17, converts, compiles
# them for -t cpu, tpu and gpu and compares each with PyTorch; with no
# MODEL given, node_tests.py then runs ONNX's own node tests of every op
# onnx2amp maps.  Skipped (exit 0) when /usr/bin/python3 cannot import
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
"$PY" "$HERE/compare.py" "$BUILD" "$@" || status=1
if [ $# -eq 0 ]; then
    "$PY" "$HERE/node_tests.py" "$BUILD" || status=1
fi
exit $status
