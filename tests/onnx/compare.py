"""tests/onnx/compare.py BUILD [MODEL...]: torchvision models through ONNX.

Each model (tests/torch/models.py's: random weights, seed 0, random
BatchNorm statistics, eval mode) is exported by
torch.onnx.export at opset 13 and 17 with a dynamic batch, converted by
tools/onnx2amp, compiled by BUILD/ampc for -t cpu, tpu and gpu, built with
tests/torch/driver.c and BUILD/libamprt.a, and run on a batch of 2.  Its
output is compared with the module's own in float64 by the relative
Frobenius error ||y - ref|| / ||ref||, judged against tests/torch's bound
4 * sqrt(N) * u (N: the converted model's statements, u: the unit roundoff
of the target's low dtype; tests/torch/compare.py explains it).  Then the
ONNX node tests that onnx's own package generates (onnx.backend.test.case)
for the ops onnx2amp maps are run by tests/onnx/node_tests.py.

Prints ok/FAIL per model, opset and target, and "onnx: P passed, F failed";
exits 1 on a failure.
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
TARGETS = ("cpu", "tpu", "gpu")
UNIT = {"cpu": 2.0 ** -8, "tpu": 2.0 ** -8, "gpu": 2.0 ** -11}
MODELS = {"resnet18": [2, 3, 64, 64], "mobilenet_v2": [2, 3, 64, 64], "squeezenet1_1": [2, 3, 64, 64]}
OPSETS = (13, 17)


def run(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def tail(log, n=8):
    return "\n    ".join(log.strip().splitlines()[-n:])


def main(argv):
    build = argv[0]
    names = argv[1:] or list(MODELS)
    ampc = os.path.join(build, "ampc")
    lib = os.path.join(build, "libamprt.a")
    cc = os.environ.get("CC", "cc")
    passed = failed = 0
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory(prefix="ampc-onnx-") as d:
        for name in names:
            torch.manual_seed(0)
            m = getattr(models, name)().eval()
            x = torch.randn(MODELS[name])
            with torch.no_grad():
                ref = m.double()(x.double())
            m.float()
            x_bin = os.path.join(d, "x.bin")
            x.numpy().astype("<f4").tofile(x_bin)
            for opset in OPSETS:
                onnx_path = os.path.join(d, "%s_%d.onnx" % (name, opset))
                torch.onnx.export(m, x, onnx_path, opset_version=opset, input_names=["x"], output_names=["y"],
                                  dynamic_axes={"x": {0: "B"}, "y": {0: "B"}})
                amp = os.path.join(d, "%s_%d.amp" % (name, opset))
                wts = os.path.join(d, "%s_%d.safetensors" % (name, opset))
                rc, log = run([sys.executable, os.path.join(ROOT, "tools", "onnx2amp"), onnx_path, "-o", amp,
                               "--weights", wts])
                if rc != 0:
                    print("FAIL %s opset %d: onnx2amp: %s" % (name, opset, tail(log)))
                    failed += 1
                    continue
                with open(amp) as f:
                    n_ops = sum(1 for line in f if line.startswith("    ") and " = " in line)
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
                        rc, log = run([exe, wts, x_bin, str(MODELS[name][0]), out_bin])
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
                    passed += ok
                    failed += not ok
    print("onnx models: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
