#!/bin/sh
# tests/torch/run.sh BUILD [MODEL...]: export torchvision's resnet18,
# mobilenet_v2, squeezenet1_1, alexnet, reduced shufflenet, densenet,
# convnext, regnet, efficientnet, mobilenet_v3_small, mnasnet, googlenet
# and resnext, a small transformer encoder, a reduced
# VisionTransformer (vit_b_16's class), a 2-layer BERT_pytorch, a
# top-level Sequential with chunk unpacking, an LSTM, an LSTM and a GRU
# classifier (tests/torch/models.py,
# compare.py's MODELS) with tools/torch2amp,
# compile each with BUILD/ampc for -t cpu, tpu and gpu, run it with
# tests/torch/driver.c against BUILD/libamprt.a on a fixed batch, and compare
# with PyTorch and, op by op, with PyTorch emulating ampc's per-op dtypes
# (tests/torch/compare.py and emulate.py say how); then 50 training steps of
# the digits MLP against PyTorch's, in f32, bf16 and f16 with loss scaling
# (train_agree.py), and of resnet18 and a small BERT exported with
# torch2amp --train (train_models.py); and torch2amp's messages for
# models it cannot convert (errors.py).  Prints ok/FAIL per model and target and
# "torch: P passed, F failed"; exits 1 on a failure.
# Skipped (exit 0) when /usr/bin/python3 cannot import torch and torchvision.
set -u
BUILD=${1:?usage: tests/torch/run.sh BUILD}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import torch, torchvision' >/dev/null 2>&1; then
    echo "torch: skipped: $PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision)"
    exit 0
fi
status=0
"$PY" "$HERE/compare.py" "$BUILD" "$@" || status=1
# training: 50 steps of the digits MLP against torch.optim (train_agree.py)
if [ $# -eq 0 ]; then
    "$PY" "$HERE/train_agree.py" "$BUILD" || status=1
    # models exported with torch2amp --train: resnet18 and a small BERT, 50 steps against torch.optim
    "$PY" "$HERE/train_models.py" "$BUILD" || status=1
    "$PY" "$HERE/errors.py" || status=1
fi
exit $status
