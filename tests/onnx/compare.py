"""tests/onnx/compare.py BUILD [--zoo] [MODEL...]: torchvision models through ONNX.

Each model (random weights, seed 0; the torchvision ones with
tests/torch/models.py's random BatchNorm statistics; eval mode) is
exported by torch.onnx.export at each of its opsets with a dynamic batch,
converted by tools/onnx2amp, compiled by BUILD/ampc for -t cpu, tpu and
gpu, built with tests/torch/driver.c and BUILD/libamprt.a, and run on a
batch of 2.  Its output is compared with the module's own in float64 by
the relative Frobenius error ||y - ref|| / ||ref||, judged against
tests/torch's bound 4 * sqrt(N) * u (N: the converted model's statements,
u: the unit roundoff of the target's low dtype; tests/torch/compare.py
explains it).

MODELS (make test-onnx, in CI) are issue 13's architectures at sizes that
keep CI short: resnet18 and mobilenet_v2 at 64 x 64, one opset each;
squeezenet1_1 at both; a reduced resnext (one bottleneck block per stage,
32 groups) and mnasnet0_5 at 32 x 32; a reduced vit_b_16 (32 x 32, patch
8, two layers) and a BERT-style nn.TransformerEncoder (tests/torch/models.py
tiny_encoder) at both opsets, since opset 17 exports LayerNormalization
where 13 exports its ReduceMean/Sub/Pow/Sqrt/Div chain.  --zoo runs ZOO,
issue 13's table at full size (224 x 224) and both opsets (make
test-onnx-zoo: long, not in CI).

Prints ok/FAIL per model, opset and target, and "onnx models: P passed,
F failed"; exits 1 on a failure.
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
import models  # noqa: E402  tests/torch/models.py
import torchvision  # noqa: E402
from torchvision.models import resnet, vision_transformer  # noqa: E402
TARGETS = ("cpu", "tpu", "gpu")
UNIT = {"cpu": 2.0 ** -8, "tpu": 2.0 ** -8, "gpu": 2.0 ** -11}
IMAGE = "image"


def small_resnext():
    """resnext50_32x4d's bottleneck with 32 groups, one block per stage"""
    return models._perturb(resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], groups=32, width_per_group=4,
                                         num_classes=10))


def mnasnet0_5():
    return models._perturb(torchvision.models.mnasnet0_5(num_classes=10))


def vit_random(m):
    """torchvision initialises the class token and the head to zeros, which
    would make the output the head's bias: random ones instead"""
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        m.class_token.copy_(torch.randn(m.class_token.shape, generator=g))
        m.heads.head.weight.copy_(0.1 * torch.randn(m.heads.head.weight.shape, generator=g))
    return m.eval()


def small_vit():
    """vit_b_16's architecture: patch embedding, class token, two encoder
    layers, at 32 x 32 with 8 x 8 patches and width 32"""
    return vit_random(vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                           hidden_dim=32, mlp_dim=64, num_classes=10))


def bert():
    """a BERT-base-sized encoder: 4 layers of width 256, 4 heads, GELU"""
    return models.TinyEncoder(vocab=1000, d_model=256, nhead=4, ff=1024, layers=4).eval()


def zoo(name):
    if name == "vit_b_16":
        return lambda: vit_random(torchvision.models.vit_b_16())
    return lambda: models._perturb(getattr(torchvision.models, name)())


# name: (factory, input (an image's shape, or ("tokens", vocab, length)), opsets)
MODELS = {
    "resnet18": (models.resnet18, [2, 3, 64, 64], (17,)),
    "mobilenet_v2": (models.mobilenet_v2, [2, 3, 64, 64], (13,)),
    "squeezenet1_1": (models.squeezenet1_1, [2, 3, 64, 64], (13, 17)),
    "small_resnext": (small_resnext, [2, 3, 32, 32], (13,)),
    "mnasnet0_5": (mnasnet0_5, [2, 3, 32, 32], (17,)),
    "small_vit": (small_vit, [2, 3, 32, 32], (13, 17)),
    "tiny_encoder": (models.tiny_encoder, ("tokens", 100, 16), (13, 17)),
}
ZOO = {n: (zoo(n), [2, 3, 224, 224], (13, 17)) for n in
       ("resnet18", "resnet50", "resnext50_32x4d", "alexnet", "mobilenet_v2", "mnasnet1_0", "vgg16",
        "squeezenet1_1", "vit_b_16")}
ZOO["bert"] = (bert, ("tokens", 1000, 64), (13, 17))

def run(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def tail(log, n=8):
    return "\n    ".join(log.strip().splitlines()[-n:])


def check(ampc, lib, cc, d, name, opset, amp, wts, x_bin, batch, ref):
    """compile amp for each target, run it on x_bin and compare with ref:
    (passed, failed)"""
    with open(amp) as f:
        n_ops = sum(1 for line in f if line.startswith("    ") and " = " in line)
    passed = failed = 0
    for target in TARGETS:
        c_path = os.path.join(d, "model.c")
        exe = os.path.join(d, "driver")
        out_bin = os.path.join(d, "y.bin")
        rc, log = run([ampc, amp, "-t", target, "--prefix=model", "-o", c_path])
        if rc == 0:
            rc, log = run([cc, "-std=c99", "-O2", "-I" + os.path.join(ROOT, "runtime", "include"),
                           "-I" + d, "-DIN=x", "-DIN_UP=X", "-DOUT=y", "-DOUT_UP=Y",
                           os.path.join(ROOT, "tests", "torch", "driver.c"), c_path, lib, "-lm",
                           "-lpthread", "-o", exe])
        if rc == 0:
            rc, log = run([exe, wts, x_bin, str(batch), out_bin], timeout=1800)
        if rc != 0:
            print("FAIL %s opset %d -t %s: %s" % (name, opset, target, tail(log)))
            failed += 1
            continue
        y = torch.from_numpy(np.fromfile(out_bin, dtype="<f4").astype(np.float64)).reshape(ref.shape)
        err = (y - ref).norm().item() / ref.norm().item()
        tol = 4 * math.sqrt(n_ops) * UNIT[target]
        top = (y.argmax(-1) == ref.argmax(-1)).sum().item()
        ok = math.isfinite(err) and err <= tol
        print("%s %s opset %d -t %s: %d ops, error vs PyTorch f64 %.2e (tol %.2e), top-1 %d/%d"
              % ("ok  " if ok else "FAIL", name, opset, target, n_ops, err, tol, top, ref.shape[0]))
        sys.stdout.flush()
        passed += ok
        failed += not ok
    return passed, failed


def main(argv):
    build = argv[0]
    table = MODELS
    if argv[1:2] == ["--zoo"]:
        table, argv = ZOO, argv[1:]
    names = argv[1:] or list(table)
    for name in names:
        if name not in table:
            sys.stderr.write("compare.py: no model %r (have: %s)\n" % (name, " ".join(table)))
            return 2
    ampc = os.path.join(build, "ampc")
    lib = os.path.join(build, "libamprt.a")
    cc = os.environ.get("CC", "cc")
    passed = failed = 0
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory(prefix="ampc-onnx-") as d:
        for name in names:
            factory, shape, opsets = table[name]
            torch.manual_seed(0)
            m = factory().eval()
            if shape[0] == "tokens":
                x = torch.randint(0, shape[1], (2, shape[2]))
                batch, stored = 2, "<i8"
            else:
                x = torch.randn(shape)
                batch, stored = shape[0], "<f4"
            with torch.no_grad():
                ref = m.double()(x if shape[0] == "tokens" else x.double())
            m.float()
            x_bin = os.path.join(d, "x.bin")
            x.numpy().astype(stored).tofile(x_bin)
            for opset in opsets:
                onnx_path = os.path.join(d, "%s_%d.onnx" % (name, opset))
                torch.onnx.export(m, x, onnx_path, opset_version=opset, input_names=["x"], output_names=["y"],
                                  dynamic_axes={"x": {0: "B"}, "y": {0: "B"}})
                amp = os.path.join(d, "%s_%d.amp" % (name, opset))
                wts = os.path.join(d, "%s_%d.safetensors" % (name, opset))
                rc, log = run([sys.executable, os.path.join(ROOT, "tools", "onnx2amp"), onnx_path, "-o", amp,
                               "--weights", wts])
                os.unlink(onnx_path)
                if rc != 0:
                    print("FAIL %s opset %d: onnx2amp: %s" % (name, opset, tail(log)))
                    failed += 1
                    continue
                p, f = check(ampc, lib, cc, d, name, opset, amp, wts, x_bin, batch, ref)
                passed, failed = passed + p, failed + f
                os.unlink(wts)
    print("onnx models: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
