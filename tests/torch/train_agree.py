#!/usr/bin/python3
"""tests/torch/train_agree.py: 50 training steps of the digits MLP in ampc
and in PyTorch, from the same initial weights on the same mini-batches,
with SGD(lr=0.1, momentum=0.9), must give the same loss curve.

    /usr/bin/python3 tests/torch/train_agree.py BUILD

Three runs:
  - f32: examples/digits/mlp.amp compiled with autocast off
    (--autocast-op linear=none) against PyTorch in float32: the same
    arithmetic up to summation order, so the losses agree to ~1e-5;
  - bf16: -t cpu (bf16 linear, f32 loss) against
    torch.autocast("cpu", dtype=torch.bfloat16) with the loss computed on
    the logits converted to float32, as ampc's cpu policy does.  Both round
    the same values to bf16 (measured: losses within 1e-6 with the
    reference kernels); the tolerance, 5e-3 of the loss, leaves room for a
    different summation order (the optimized kernels) compounding over 50
    SGD steps, and a wrong gradient or optimizer step misses it at once;
  - f16 with a dynamic loss scale: -t gpu, the model's train section given
    `scaler = dynamic(init_scale=2^24, growth_interval=8)`, against PyTorch
    with the f16 ops emulated (PyTorch 1.13 has no CPU f16 autocast, and
    its GradScaler needs CUDA; see f16_run below) and GradScaler's algorithm
    written out.  2^24 overflows f16 in the first backward passes, so steps
    are really skipped; the skipped steps and the scale after every step
    must be the same, and the losses agree within 5e-3 (about 10 f16 unit
    roundoffs; measured 9e-5).
Prints ok/FAIL lines and "train-agree: P passed, F failed".
"""
import os
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS, BATCH = 50, 64


def write_safetensors(path, tensors):
    import json
    header, blobs, off = {}, [], 0
    for key, t in tensors:
        t = t.detach().contiguous()
        b = t.numpy().tobytes()
        header[key] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    out = os.path.join(build, "torch", "train-agree")
    os.makedirs(out, exist_ok=True)
    data = open(os.path.join(ROOT, "examples/digits/digits.bin"), "rb").read()
    count, n_train = struct.unpack("<II", data[8:16])
    rec = data[16:]
    xs = torch.tensor([list(rec[65 * i:65 * i + 64]) for i in range(n_train)], dtype=torch.float32) / 16
    ys = torch.tensor([rec[65 * i + 64] for i in range(n_train)], dtype=torch.int64)

    g = torch.Generator().manual_seed(7)
    order = torch.cat([torch.randperm(n_train, generator=g) for _ in range(3)])[:STEPS * BATCH]
    with open(os.path.join(out, "order.bin"), "wb") as f:
        f.write(struct.pack("<%di" % len(order), *order.tolist()))

    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 10)
    init = [("fc1.weight", fc1.weight), ("fc1.bias", fc1.bias), ("fc2.weight", fc2.weight), ("fc2.bias", fc2.bias)]
    write_safetensors(os.path.join(out, "init.safetensors"), init)

    passed = failed = 0
    mlp = os.path.join(ROOT, "examples/digits/mlp.amp")
    for name, flags, autocast in (("f32", ["-t", "cpu", "--autocast-op", "linear=none"], False),
                                  ("bf16", ["-t", "cpu"], True)):
        ampc_run = run_ampc(build, os.path.join(out, name), mlp, flags, out)
        w1, b1 = fc1.weight.detach().clone().requires_grad_(), fc1.bias.detach().clone().requires_grad_()
        w2, b2 = fc2.weight.detach().clone().requires_grad_(), fc2.bias.detach().clone().requires_grad_()
        opt = torch.optim.SGD([w1, b1, w2, b2], lr=0.1, momentum=0.9)
        torch_losses = []
        for k in range(STEPS):
            idx = order[k * BATCH:(k + 1) * BATCH]
            x, y = xs[idx], ys[idx]
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                logits = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
            loss = F.cross_entropy(logits.float(), y)
            loss.backward()
            opt.step()
            torch_losses.append(loss.item())
        ok = judge(name, [r[0] for r in ampc_run], torch_losses, 1e-4 if name == "f32" else 5e-3)
        passed += ok
        failed += not ok

    ok = f16_run(build, out, xs, ys, order, fc1, fc2)
    passed += ok
    failed += not ok
    print("train-agree: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def run_ampc(build, d, amp, flags, out):
    """compile AMP with FLAGS, build train_driver.c with it, run STEPS steps;
    returns [(loss, scale, skipped_steps)] per step"""
    os.makedirs(d, exist_ok=True)
    subprocess.run([os.path.join(build, "ampc"), amp, "--prefix=digits", "-o", os.path.join(d, "digits.c")] + flags,
                   check=True)
    subprocess.run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror",
                    "-I" + os.path.join(ROOT, "runtime/include"), "-I" + d, "-o", os.path.join(d, "driver"),
                    os.path.join(ROOT, "tests/torch/train_driver.c"), os.path.join(d, "digits.c"),
                    os.path.join(build, "libamprt.a"), "-lm", "-lpthread"], check=True)
    run = subprocess.run([os.path.join(d, "driver"), os.path.join(out, "init.safetensors"),
                          os.path.join(ROOT, "examples/digits/digits.bin"), os.path.join(out, "order.bin"),
                          str(STEPS), str(BATCH)], check=True, stdout=subprocess.PIPE, universal_newlines=True)
    rows = []
    for line in run.stdout.splitlines():
        k, loss, scale, skipped = line.split()
        rows.append((float(loss), float(scale), int(skipped)))
    return rows


def judge(name, ampc_losses, torch_losses, tol, extra=""):
    """the loss curves agree within TOL of the loss (relative to max(1, loss))"""
    diffs = [abs(a - b) for a, b in zip(ampc_losses, torch_losses)]
    worst = max(range(len(diffs)), key=lambda i: diffs[i] / max(1.0, torch_losses[i]))
    rel = diffs[worst] / max(1.0, torch_losses[worst])
    ok = len(ampc_losses) == STEPS and rel <= tol
    print("%s %s: %d steps, loss %.4f -> %.4f (PyTorch %.4f -> %.4f), largest difference %.2e at step %d "
          "(tolerance %.0e of the loss)%s" % ("ok  " if ok else "FAIL", name, len(ampc_losses), ampc_losses[0],
                                               ampc_losses[-1], torch_losses[0], torch_losses[-1], diffs[worst],
                                               worst, tol, extra))
    return ok


# ---- f16 with a dynamic loss scale (-t gpu) ---------------------------------
#
# PyTorch 1.13 has no f16 autocast on the CPU and its GradScaler needs CUDA,
# so the PyTorch side is written out: the ops ampc -t gpu runs in f16
# (`ampc --explain examples/digits/mlp.amp -t gpu`: both linears, and relu,
# which follows them) take inputs rounded to f16, compute in f32 and round
# their result to f16, forward and backward (backward ops run in the dtype
# of their forward op); cross_entropy runs in f32 on the logits converted to
# f32, and that conversion's backward rounds the loss gradient to f16,
# where a too large scale overflows to inf, as it would on a GPU.

def to_f16(t):
    return t.to(torch.float16).to(torch.float32)


class Cast16(torch.autograd.Function):
    """x.to(float16): forward rounds; backward is the f16 -> f32 conversion
    of the incoming f16 gradient, exact"""
    @staticmethod
    def forward(ctx, x):
        return to_f16(x)

    @staticmethod
    def backward(ctx, g):
        return g


class Cast32(torch.autograd.Function):
    """an f16 value converted to float32 (exact); its backward converts the
    f32 gradient to f16: rounds, and overflows to inf beyond 65504"""
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return to_f16(g)


class Linear16(torch.autograd.Function):
    """linear on f16 operands: f32 arithmetic, each result (forward: y;
    backward: dx, dW, db) rounded once to f16"""
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return to_f16(F.linear(x, w, b))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return to_f16(g @ w), to_f16(g.t() @ x), to_f16(g.sum(0))


class Scaler:
    """GradScaler's algorithm (/work/shared/autocast-facts.md): scale the
    loss; unscale by 1/scale (computed in double, rounded to float) with the
    inf/NaN check; skip the step on inf; back off, or grow after
    growth_interval good steps"""

    def __init__(self, init_scale, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = torch.tensor(init_scale, dtype=torch.float32)
        self.growth_factor, self.backoff_factor, self.growth_interval = growth_factor, backoff_factor, growth_interval
        self.tracker = 0

    def unscale(self, grads):
        inv = torch.tensor(1.0 / float(self.scale), dtype=torch.float64).to(torch.float32)
        found_inf = False
        for g in grads:
            g.mul_(inv)
            found_inf = found_inf or not bool(torch.isfinite(g).all())
        return found_inf

    def update(self, found_inf):
        if found_inf:
            self.scale = self.scale * self.backoff_factor
            self.tracker = 0
        else:
            self.tracker += 1
            if self.tracker == self.growth_interval:
                new = self.scale * self.growth_factor
                if torch.isfinite(new):
                    self.scale = new
                self.tracker = 0


# 2^24: the first steps' loss gradients, up to scale/BATCH = 2^18, overflow
# f16 (65504), so the run starts with skipped steps and backs off; a short
# growth interval then makes the scale grow back into overflow now and then
INIT_SCALE, GROWTH_INTERVAL = 2.0 ** 24, 8


def f16_run(build, out, xs, ys, order, fc1, fc2):
    d = os.path.join(out, "f16")
    os.makedirs(d, exist_ok=True)
    amp = os.path.join(d, "mlp_scaled.amp")
    src = open(os.path.join(ROOT, "examples/digits/mlp.amp")).read()
    line = "    optimizer = sgd(lr=0.1, momentum=0.9)"
    if line not in src:
        print("FAIL f16: examples/digits/mlp.amp has no line %r to add the scaler to" % line.strip())
        return False
    with open(amp, "w") as f:
        f.write(src.replace(line, line + "\n    scaler = dynamic(init_scale=%.1f, growth_interval=%d)"
                            % (INIT_SCALE, GROWTH_INTERVAL)))
    ampc_run = run_ampc(build, d, amp, ["-t", "gpu"], out)

    w1, b1 = fc1.weight.detach().clone().requires_grad_(), fc1.bias.detach().clone().requires_grad_()
    w2, b2 = fc2.weight.detach().clone().requires_grad_(), fc2.bias.detach().clone().requires_grad_()
    params = [w1, b1, w2, b2]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    scaler = Scaler(INIT_SCALE, growth_interval=GROWTH_INTERVAL)
    losses, scales, skipped, n_skipped = [], [], [], 0
    for k in range(STEPS):
        idx = order[k * BATCH:(k + 1) * BATCH]
        x, y = xs[idx], ys[idx]
        opt.zero_grad()
        h = torch.relu(Linear16.apply(Cast16.apply(x), Cast16.apply(w1), Cast16.apply(b1)))
        logits = Linear16.apply(h, Cast16.apply(w2), Cast16.apply(b2))
        loss = F.cross_entropy(Cast32.apply(logits), y)
        (loss * scaler.scale).backward()
        found_inf = scaler.unscale([p.grad for p in params])
        if not found_inf:
            opt.step()
        n_skipped += found_inf
        scaler.update(found_inf)
        losses.append(loss.item())
        scales.append(float(scaler.scale))
        skipped.append(n_skipped)

    a_skipped = [r[2] for r in ampc_run]
    a_scales = [r[1] for r in ampc_run]
    steps_a = [k for k in range(len(a_skipped)) if a_skipped[k] > (a_skipped[k - 1] if k else 0)]
    steps_t = [k for k in range(STEPS) if skipped[k] > (skipped[k - 1] if k else 0)]
    same = steps_a == steps_t and a_scales == scales
    extra = "; skipped steps %s (PyTorch %s)%s" % (steps_a, steps_t, "" if same else ", DIFFERENT")
    if same and not steps_t:
        extra += ": no step was skipped, so the scaler went unchecked"
    ok = judge("f16 + loss scaling", [r[0] for r in ampc_run], losses, 5e-3, extra)
    return ok and same and bool(steps_t)


if __name__ == "__main__":
    sys.exit(main())
