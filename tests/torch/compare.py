#!/usr/bin/python3
"""tests/torch/compare.py: export models with tools/torch2amp, compile them
with ampc for each target, run them, and compare with PyTorch.

    /usr/bin/python3 tests/torch/compare.py BUILD [MODEL...]

run.sh calls this (after checking torch and torchvision import).  For every
model of MODELS below:

  1. tools/torch2amp tests/torch/models.py:FACTORY -> model.amp + weights;
  2. the PyTorch references, from a fresh module loaded with the weights
     file torch2amp wrote (so both sides use the same bits):
       - torch.autocast("cpu", dtype=torch.bfloat16), PyTorch 1.13's CPU
         autocast (the reference of -t cpu);
       - the module in float64 (the reference of every target);
  3. for each target: BUILD/ampc -t TARGET --prefix=model, cc with
     tests/torch/driver.c and BUILD/libamprt.a, run on the batch, and
     compare.

The error is normwise relative, ||y - ref||_2 / ||ref||_2, over the whole
output batch.  The tolerance is derived from the unit roundoff u of the
target's low dtype (2^-8 for bf16, 2^-11 for f16) and N, the number of
statements torch2amp wrote (the ops on the output's path):

    tol = 4 * sqrt(N) * u

Each op rounds its result once to the low dtype (or less often, in f32);
independent roundings of relative size <= u add in quadrature, giving
sqrt(N) * u for one computation; 4 covers the growth through the layers
and, for -t cpu, the second computation on the PyTorch side (both sides
round, differently).  Order-one errors (a wrong kernel, argument, weight or
layout) miss it by two orders of magnitude.  -t cpu must meet it against
both PyTorch's bf16 autocast and the f64 forward; -t tpu (bf16) and -t gpu
(f16) against the f64 forward.  Top-1 agreement over the batch (argmax of
the logits) with the reference is reported, not judged: random weights make
near-ties likely.

Prints "ok"/"FAIL" per model and target and the last line
"torch: P passed, F failed"; exits 1 when anything failed.
"""
import ctypes
import math
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import models  # noqa: E402

# name: (factory, input shape with the batch, input dtype)
BATCH = 2
MODELS = {
    "resnet18": ("resnet18", [BATCH, 3, 64, 64], "f32"),
    "mobilenet_v2": ("mobilenet_v2", [BATCH, 3, 64, 64], "f32"),
    "squeezenet1_1": ("squeezenet1_1", [BATCH, 3, 64, 64], "f32"),
    "alexnet": ("alexnet", [BATCH, 3, 64, 64], "f32"),
    "transformer": ("tiny_encoder", [BATCH, 16], "i64"),
}
TARGETS = ["cpu", "tpu", "gpu"]
UNIT = {"cpu": 2.0 ** -8, "tpu": 2.0 ** -8, "gpu": 2.0 ** -11}

_DT = {"F64": torch.float64, "F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
       "I64": torch.int64, "I32": torch.int32, "BOOL": torch.bool}


def read_safetensors(path):
    import json
    import struct
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        dt = _DT[info["dtype"]]
        if hi == lo:
            out[key] = torch.empty(info["shape"], dtype=dt)
        else:
            out[key] = torch.frombuffer(bytearray(data[lo:hi]), dtype=dt).clone().reshape(info["shape"])
    return out


def rel(y, ref):
    d = (y - ref).norm().item()
    r = ref.norm().item()
    return d / r if r else d


def limit_memory():
    # 4 GB of address space for the C compiler: an emitted file that makes it
    # blow up (see the arena note in docs/pytorch.md) fails in seconds, not minutes
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def run(cmd, timeout=300, **kw):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return 1, "%s: timed out after %ds" % (os.path.basename(cmd[0]), timeout)
    return p.returncode, p.stdout


def tail(log, n=12):
    lines = log.strip().splitlines()
    return "\n".join(lines[-n:]) if len(lines) > n else "\n".join(lines)


def io_names(amp_path):
    inp = out = None
    for line in open(amp_path):
        s = line.strip()
        if s.startswith("input ") and inp is None:
            inp = s.split()[1].rstrip(":")
        elif s.startswith("output "):
            out = s.split()[1]
    return inp, out


def count_statements(amp_path):
    n, inside = 0, False
    for line in open(amp_path):
        s = line.strip()
        if s == "autocast {":
            inside = True
        elif s == "}" and inside:
            inside = False
        elif inside and "=" in s:
            n += 1
    return n


def main(argv):
    build = os.path.abspath(argv[0])
    wanted = argv[1:] or list(MODELS)
    ampc = os.path.join(build, "ampc")
    lib = os.path.join(build, "libamprt.a")
    cc = os.environ.get("CC", "cc")
    for f in (ampc, lib):
        if not os.path.exists(f):
            print("torch: %s is missing (build first)" % f)
            return 1
    work = os.path.join(build, "torch-tests")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    # One thread by default: libamprt's thread pool can deadlock on the first
    # parallel run (a worker created for a run misses that run's wake-up);
    # set AMPRT_THREADS to override.
    env = dict(os.environ)
    env.setdefault("AMPRT_THREADS", "1")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in wanted:
        factory, shape, idt = MODELS[name]
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        amp, wts = os.path.join(d, "model.amp"), os.path.join(d, "model.safetensors")
        t0 = time.time()
        rc, log = run([sys.executable, os.path.join(ROOT, "tools", "torch2amp"),
                       "%s:%s" % (os.path.join(HERE, "models.py"), factory), "-o", amp, "--weights", wts,
                       "--input-shape", ",".join(str(s) for s in [1] + shape[1:]), "--input-dtype", idt,
                       "--name", "M"])
        if rc != 0:
            print("FAIL %-14s export: %s" % (name, tail(log)))
            failed += len(TARGETS)
            continue

        # the references, on the weights torch2amp wrote
        m = getattr(models, factory)()
        m.load_state_dict(read_safetensors(wts))
        m.eval()
        g = torch.Generator().manual_seed(2024)
        if idt == "f32":
            x = torch.randn(shape, generator=g)
        else:
            x = torch.randint(0, m.embed.num_embeddings, shape, generator=g)
        inp_bin = os.path.join(d, "input.bin")
        with open(inp_bin, "wb") as f:
            x = x.contiguous()
            f.write(ctypes.string_at(x.data_ptr(), x.numel() * x.element_size()))
        # grad stays enabled: PyTorch 1.13's TransformerEncoder would otherwise take its fused
        # fast path, which runs in f32 whatever CPU autocast says
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ref_bf16 = m(x).detach().double()
        m64 = getattr(models, factory)()
        m64.load_state_dict(read_safetensors(wts))
        m64 = m64.double().eval()
        ref64 = m64(x.double() if idt == "f32" else x).detach()
        n_ops = count_statements(amp)
        in_name, out_name = io_names(amp)
        t_ref = time.time() - t0

        for target in TARGETS:
            t1 = time.time()
            c_path = os.path.join(d, "model_%s.c" % target)
            exe = os.path.join(d, "driver_%s" % target)
            out_bin = os.path.join(d, "output_%s.bin" % target)
            rc, log = run([ampc, amp, "-t", target, "--prefix=model", "-o", c_path,
                           "--header=" + os.path.join(d, "model.h")])
            if rc == 0:
                rc, log = run([cc, "-std=c99", "-O2", "-I" + os.path.join(ROOT, "runtime", "include"), "-I" + d,
                               "-DIN=" + in_name, "-DIN_UP=" + in_name.upper(),
                               "-DOUT=" + out_name, "-DOUT_UP=" + out_name.upper(),
                               os.path.join(HERE, "driver.c"), c_path, lib, "-lm", "-lpthread", "-o", exe],
                              preexec_fn=limit_memory)
                if rc != 0 and "out of memory" in log:
                    log += ("\n(the C compiler ran out of memory: ampc's arena size nests <P>_MAX_(a, b) "
                            "macros that repeat their arguments, exponential in the nesting depth)")
            if rc == 0:
                rc, log = run([exe, wts, inp_bin, str(BATCH), out_bin], timeout=120, env=env)
            if rc != 0:
                print("FAIL %-14s %s: %s" % (name, target, tail(log)))
                failed += 1
                continue
            with open(out_bin, "rb") as f:
                y = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).double().reshape(ref64.shape)
            tol = 4 * math.sqrt(n_ops) * UNIT[target]
            e64 = rel(y, ref64)
            ok = math.isfinite(e64) and e64 <= tol
            top64 = (y.argmax(-1) == ref64.argmax(-1)).sum().item()
            msg = "vs torch f64 %.2e" % e64
            if target == "cpu":
                eb = rel(y, ref_bf16)
                ok = ok and math.isfinite(eb) and eb <= tol
                topb = (y.argmax(-1) == ref_bf16.argmax(-1)).sum().item()
                msg = "vs torch autocast bf16 %.2e (torch bf16 vs f64 %.2e), %s" % (eb, rel(ref_bf16, ref64), msg)
                msg += ", tol %.2e; top-1 %d/%d with torch bf16, %d/%d with f64" % (tol, topb, BATCH, top64, BATCH)
            else:
                msg += ", tol %.2e; top-1 %d/%d with f64" % (tol, top64, BATCH)
            print("%s %-14s %s: %s (N=%d, %.1fs)" % ("ok  " if ok else "FAIL", name, target, msg, n_ops,
                                                   time.time() - t1 + (t_ref if target == "cpu" else 0)))
            sys.stdout.flush()
            if ok:
                passed += 1
            else:
                failed += 1
    print("torch: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
