#!/usr/bin/python3
"""torch_models.py: the model benchmarks of `make bench`, PyTorch's side and
the side-by-side driver.

  torch_models.py weights DIR
      Writes DIR/<model>.safetensors, the state_dict of each benchmarked
      model (fixed seed), which ampc's model_bench loads too, so both sides
      compute on identical parameters.
  torch_models.py compare DIR [ROUNDS] [--csv FILE]
      For each case, ROUNDS times (default 3) in alternation: runs ampc's
      DIR/<model>/model_bench (AMPRT_THREADS=2), then times the same model
      in PyTorch f32 and in PyTorch under torch.autocast('cpu',
      dtype=torch.bfloat16) (torch.set_num_threads(2)); each a median of
      several calls after warm-up.  Alternating keeps all three under the
      same machine load.  Prints, per case, the median over the rounds of
      each side's median, which PyTorch configuration was faster ("best":
      where PyTorch has no fast bf16, as on AVX2, f32 wins), the ratio
      ampc / best PyTorch (time: lower is better for ampc) and the target
      for the kernel set ampc ran; then the best round of ampc and of the
      best configuration and their ratio (on a shared machine a side whose
      second thread is descheduled loses a whole round: the best rounds
      show each side unhindered), and the range of the cross-CPU round
      trips DIR/vcpu_probe measured as ampc's rounds started (long ones
      mark a machine whose two vCPUs are far apart; see
      docs/benchmarks.md).  The header names the CPU, PyTorch's BLAS (it
      must be OpenBLAS) and ISA limits, and ampc's kernel set.  A PyTorch
      configuration slower than 1 s a call is timed with fewer calls
      (bf16 autocast on AVX2 takes tens of seconds a training step).
      With --csv, also writes the results to FILE, one row per case:
      cpu,kernel_set,case,mode,batch,ampc_ms,torch_f32_ms,torch_bf16_ms,
      best,ratio (an unavailable configuration's time left empty), for
      scripts/plot-bench.sh.

The models are the ones ampc compiles (examples/mlp.amp, examples/lenet5.amp,
examples/resnet18.amp, bench/resnet18_train.amp, examples/digits/mlp.amp),
written here as PyTorch modules with the same state_dict keys.  Batch norm
in the ResNet-18 training step uses running statistics (module in eval
mode), as nn.amp's BatchNorm2d does.  Run with /usr/bin/python3
(python3-torch, python3-torchvision)."""
import csv
import json
import os
import statistics
import struct
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import torch_env

THREADS = 2
PAUSE = 0.5  # seconds between the sides' rounds


class Mlp(nn.Module):
    """examples/mlp.amp (nll_loss of log_softmax) and examples/digits/mlp.amp
    (cross_entropy): the same two layers."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        h = torch.flatten(h, 1)
        h = F.relu(self.fc1(h))
        h = F.relu(self.fc2(h))
        return self.fc3(h)


def make_model(name):
    torch.manual_seed(0)
    if name in ("mlp", "digits_mlp"):
        return Mlp()
    if name == "lenet5":
        return LeNet5()
    return torchvision.models.resnet18()


# model file name, ampc binary dir, input shape per sample
MODELS = {
    "mlp": ("mlp", (64,)),
    "lenet5": ("lenet5", (1, 32, 32)),
    "resnet18": ("resnet18", (3, 224, 224)),
    "resnet18_train": ("resnet18", (3, 224, 224)),
    "digits_mlp": ("digits_mlp", (64,)),
}

# (binary, mode, batch, calls per timing)
CASES = [
    ("mlp", "infer", 1, 200),
    ("mlp", "infer", 8, 200),
    ("lenet5", "infer", 1, 100),
    ("lenet5", "infer", 8, 100),
    ("resnet18", "infer", 1, 7),
    ("resnet18", "infer", 8, 5),
    ("resnet18_train", "train", 8, 3),
    ("digits_mlp", "train", 64, 200),
]

# The targets (issue 29) per kernel-set family, against the best PyTorch:
# (binary, mode, batch) -> ("ratio", bound on ampc / PyTorch time) or
# ("ms", bound on ampc's own time).
TARGETS = {
    "avx512": {
        ("resnet18", "infer", 1): ("ratio", 0.7),
        ("resnet18", "infer", 8): ("ratio", 0.7),
        ("resnet18_train", "train", 8): ("ratio", 0.8),
        ("digits_mlp", "train", 64): ("ratio", 0.05),
    },
    "avx2": {
        ("resnet18", "infer", 1): ("ratio", 0.8),
        ("resnet18", "infer", 8): ("ratio", 0.8),
        ("resnet18_train", "train", 8): ("ratio", 0.9),
        ("digits_mlp", "train", 64): ("ms", 0.020),
    },
}

# PyTorch's configurations: name -> autocast dtype (None: plain f32)
TORCH_CONFIGS = [("f32", None), ("bf16", torch.bfloat16)]
SLOW_MS = 1000.0  # a configuration slower than this per call gets fewer calls


def write_safetensors(path, state):
    """The safetensors format: an 8-byte little-endian header length, a JSON
    header naming each tensor's dtype, shape and byte range, the data."""
    header, blobs, offset = {}, [], 0
    names = {torch.float32: "F32", torch.int64: "I64"}
    for key, t in state.items():
        t = t.detach().contiguous().cpu()
        data = t.numpy().tobytes()
        header[key] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text.encode())
        for b in blobs:
            f.write(b)


def inputs(name, batch):
    g = torch.Generator().manual_seed(1)
    x = torch.rand((batch,) + MODELS[name][1], generator=g) * 2 - 1
    y = torch.arange(batch) % 10
    return x, y


def autocast(dtype):
    """torch.autocast on the CPU to dtype, or nothing (f32) for None."""
    if dtype is None:
        return torch.autocast("cpu", enabled=False)
    return torch.autocast("cpu", dtype=dtype)


def torch_step(name, mode, model, opt, x, y, dtype):
    if mode == "infer":
        with torch.no_grad(), autocast(dtype):
            logits = model(x)
            if name == "mlp":  # examples/mlp.amp computes its loss too
                F.nll_loss(F.log_softmax(logits, dim=1), y)
        return
    opt.zero_grad(set_to_none=True)
    with autocast(dtype):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def time_calls(step, calls):
    """The median ms of `calls` timed calls of step(), after untimed ones: at
    least 2 calls and 20 ms of them, as bench/model_bench.c warms up; after
    a call slower than SLOW_MS, no more warm-up, and only the calls that fit
    in 3 s are timed (at least one), as model_bench.c does too."""
    start, warm = time.perf_counter(), 0
    while warm < 2 or time.perf_counter() - start < 0.020:
        t0 = time.perf_counter()
        step()
        warm += 1
        first = (time.perf_counter() - t0) * 1e3
        if first > SLOW_MS:
            calls = max(1, min(calls, int(3000.0 / first)))
            break
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_time(name, mode, batch, calls, dtype):
    torch.set_num_threads(THREADS)
    model = make_model(name)
    model.eval()  # batch norm on running statistics in every case (see the docstring)
    opt = None
    if mode == "train":
        lr = 0.1 if name == "digits_mlp" else 0.01
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    x, y = inputs(name, batch)
    return time_calls(lambda: torch_step(name, mode, model, opt, x, y, dtype), calls)


def run_model_bench(exe, weights, mode, batch, calls):
    """(median ms, kernel set) of one run of a model_bench binary, on
    THREADS threads."""
    env = dict(os.environ, AMPRT_THREADS=str(THREADS))
    out = subprocess.run([exe, weights, mode, str(batch), str(calls)], env=env, check=True, capture_output=True,
                         text=True).stdout
    w = out.split()
    return float(w[3]), w[5]


def ampc_time(d, name, mode, batch, calls):
    """(median ms, kernel set) of one model_bench run."""
    return run_model_bench(os.path.join(d, name, "model_bench"), os.path.join(d, MODELS[name][0] + ".safetensors"),
                           mode, batch, calls)


def vcpu_round_trip(d):
    """The cross-CPU cache-line round trip in ns (bench/vcpu_probe.c), or
    None where the probe is not built."""
    probe = os.path.join(d, "vcpu_probe")
    if not os.path.exists(probe):
        return None
    out = subprocess.run([probe], check=True, capture_output=True, text=True).stdout
    return float(out.split()[1])


def alternate(d, rounds, ampc_run, torch_run, unavailable, announce):
    """ROUNDS alternating rounds of one case: ampc_run() -> (ms, kernel set),
    then torch_run(dtype) -> ms for each of TORCH_CONFIGS but those in
    `unavailable` (a configuration that raises RuntimeError joins it, with
    its message); announce(kernel set) after each ampc run.  Returns ampc's
    times, {configuration: times} and the vCPU round trips (ns)."""
    mine, trips = [], []
    theirs = {cfg: [] for cfg, _ in TORCH_CONFIGS}
    for _ in range(rounds):
        # a pause before each side: PyTorch's idle threads may still
        # spin for a while after its last call, on the CPUs ampc's
        # threads then need (the digits step, 200 calls of 12 us, fits
        # in that window)
        time.sleep(PAUSE)
        # how far apart the CPUs are as the round starts: on a shared
        # virtual machine, spells of 600 ns and more are those in which
        # two-thread kernels slow down (docs/benchmarks.md)
        rt = vcpu_round_trip(d)
        if rt is not None:
            trips.append(rt)
        ms, ran = ampc_run()
        mine.append(ms)
        announce(ran)
        for cfg, dtype in TORCH_CONFIGS:
            if cfg in unavailable:
                continue
            time.sleep(PAUSE)
            try:
                theirs[cfg].append(torch_run(dtype))
            except RuntimeError as e:
                # oneDNN held to AVX2 (DNNL_MAX_CPU_ISA) has no bf16
                # primitives, while PyTorch, seeing an AVX-512 CPU,
                # still asks it for them; on a real AVX2 CPU PyTorch
                # takes its own slow bf16 path instead
                unavailable[cfg] = str(e).splitlines()[0]
                print(f"PyTorch {cfg}: not available here ({unavailable[cfg]}); left out", flush=True)
    return mine, theirs, trips


def summarize(mine, theirs):
    """(ampc's median over the rounds, {configuration: median, inf where it
    never ran}, the faster configuration, ampc / its median)"""
    a = statistics.median(mine)
    med = {cfg: statistics.median(v) if v else float("inf") for cfg, v in theirs.items()}
    best = min(med, key=med.get)
    return a, med, best, a / med[best]


CSV_HEADER = ["cpu", "kernel_set", "case", "mode", "batch", "ampc_ms", "torch_f32_ms", "torch_bf16_ms", "best", "ratio"]


def csv_row(isa, name, mode, batch, a, med, best, ratio):
    """one case as a CSV_HEADER row (an unavailable configuration's time empty)"""
    csv_ms = {cfg: f"{m:.6g}" if m != float("inf") else "" for cfg, m in med.items()}
    return [torch_env.cpu_name().replace(",", " "), isa, name, mode, batch, f"{a:.6g}", csv_ms["f32"], csv_ms["bf16"],
            best, f"{ratio:.4f}"]


def write_csv(path, rows, quiet=False):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_HEADER)
        w.writerows(rows)
    if not quiet:
        print(f"results as CSV: {path}")


def main():
    args = sys.argv[1:]
    csv_path = None
    if "--csv" in args:
        k = args.index("--csv")
        if k + 1 >= len(args):
            sys.exit(__doc__)
        csv_path = args[k + 1]
        del args[k:k + 2]
    if len(args) == 2 and args[0] == "weights":
        os.makedirs(args[1], exist_ok=True)
        for name in ("mlp", "lenet5", "resnet18", "digits_mlp"):
            write_safetensors(os.path.join(args[1], name + ".safetensors"), make_model(name).state_dict())
        return
    if len(args) not in (2, 3) or args[0] != "compare":
        sys.exit(__doc__)
    d = args[1]
    rounds = int(args[2]) if len(args) == 3 else 3
    print(torch_env.describe())
    print(f"{THREADS} threads each; PyTorch f32 and autocast cpu bf16, ampc AMPRT_THREADS={THREADS}; "
          f"median of {rounds} alternating rounds (each a median of N calls); ratio = ampc / best PyTorch")
    header = (f"{'case':24} {'N':>4} {'ampc ms':>9} {'f32 ms':>9} {'bf16 ms':>9} {'best':>4} {'ratio':>6}  "
              f"{'target':14} {'met':4} {'best ampc':>9} {'best PT':>9} {'ratio':>6}  {'vCPU round trip ns':18}")
    isa, unavailable = None, {}
    rows = []

    def announce(ran):
        nonlocal isa
        if isa is None:
            isa = ran
            print(f"ampc kernel set: {isa}")
            print(header)

    for name, mode, batch, calls in CASES:
        mine, theirs, trips = alternate(d, rounds, lambda: ampc_time(d, name, mode, batch, calls),
                                        lambda dtype: torch_time(name, mode, batch, calls, dtype), unavailable,
                                        announce)
        a, med, best, ratio = summarize(mine, theirs)
        family = "avx2" if isa == "avx2" else "avx512"
        kind, bound = TARGETS[family].get((name, mode, batch), (None, None))
        if kind == "ratio":
            text, met = f"<= {bound:.2f}", "yes" if ratio <= bound else "NO"
        elif kind == "ms":
            text, met = f"<= {bound * 1e3:.0f} us", "yes" if a <= bound else "NO"
        else:
            text, met = "", ""
        label = f"{name} {mode}"
        # the best round of ampc and of the best configuration
        ba, bt = min(mine), min(theirs[best])
        # four significant digits: the digits step is about 0.013 ms
        trip = f"{min(trips):.0f}-{max(trips):.0f}" if trips else "-"
        shown = {cfg: f"{m:9.4g}" if m != float("inf") else f"{'-':>9}" for cfg, m in med.items()}
        print(f"{label:24} {batch:4} {a:9.4g} {shown['f32']} {shown['bf16']} {best:>4} {ratio:6.3f}  "
              f"{text:14} {met:4} {ba:9.4g} {bt:9.4g} {ba / bt:6.3f}  {trip:18}", flush=True)
        rows.append(csv_row(isa, name, mode, batch, a, med, best, ratio))
    if csv_path:
        write_csv(csv_path, rows)


if __name__ == "__main__":
    main()
