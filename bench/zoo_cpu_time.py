#!/usr/bin/python3
"""zoo_cpu_time.py: per-call CPU time on one thread of a model of the zoo
table (bench/zoo_models.py) for two builds of ampc's runtime, side by
side, and PyTorch f32 on the same weights, alternating rounds: the figure
bench/resnet18_cpu_time.py gives for resnet18, for any zoo model.

    zoo_cpu_time.py DIR BEFORE_LIB AFTER_LIB [--rounds N] [--isa SET]... CASE...

DIR is a model's bench-zoo directory (bench/zoo_bench.py's build: model.amp,
model.safetensors, bench.o); BEFORE_LIB and AFTER_LIB two libamprt.a, each
linked here with bench.o and bench/model_bench.c into DIR/model_bench.before
and .after.  A CASE is MODE:BATCH (infer:1, infer:8, train:8).  --isa (may
repeat; default auto and avx2) sets AMPRT_ISA for ampc's runs.

ampc's figure is model_bench's median (and fastest) call under
BENCH_CPU_TIME=1 (process CPU time, two untimed calls first) with AMPRT_THREADS=1;
PyTorch's, time.process_time around each call, after warm-up.  CPU time,
not wall time: on a machine loaded beyond its CPUs it is what the work
costs, while wall times measure the queue.  Prints each round, then per
case the median and fastest of each side and the ratios to PyTorch.
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import torch  # noqa: E402
import torch_models  # noqa: E402
import zoo_bench  # noqa: E402

CALLS = {("infer", 1): 10, ("infer", 8): 4, ("train", 8): 3}


def link(d, lib, suffix):
    exe = os.path.join(d, "model_bench." + suffix)
    inp, out = zoo_bench.io_names(os.path.join(d, "model.amp"))
    subprocess.run(["cc", "-std=c99", "-O2", "-I" + os.path.join(ROOT, "runtime", "include"), "-I" + d,
                    f"-DBENCH_IN={inp}", f"-DBENCH_IN_UP={inp.upper()}", "-DBENCH_TARGET=target",
                    "-DBENCH_TARGET_UP=TARGET", f"-DBENCH_OUT={out}", f"-DBENCH_OUT_UP={out.upper()}", "-o", exe,
                    os.path.join(HERE, "model_bench.c"), os.path.join(d, "bench.o"), lib, "-lm", "-lpthread"],
                   check=True)
    return exe


def ampc_cpu(exe, weights, isa, mode, batch):
    """(median, fastest) CPU ms per call: model_bench under BENCH_CPU_TIME=1"""
    env = dict(os.environ, AMPRT_THREADS="1", AMPRT_ISA=isa, BENCH_CPU_TIME="1")
    out = subprocess.run([exe, weights, mode, str(batch), str(CALLS[(mode, batch)])], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[3]), float(out[4])


def torch_cpu(side, mode, batch):
    """median ms of process time per call, PyTorch f32, one thread"""
    side.restore()
    x, y = side.inputs(batch)
    m = side.model
    if mode == "infer":
        m.eval()

        def step():
            with torch.no_grad():
                m(x)
    else:
        m.train()
        _, opt = zoo_bench.zoo_models.sgd_momentum(m)

        def step():
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
    for _ in range(2):
        step()
    ts = []
    for _ in range(CALLS[(mode, batch)]):
        t0 = time.process_time()
        step()
        ts.append((time.process_time() - t0) * 1e3)
    return statistics.median(ts)


def main(argv):
    args, isas, rounds = [], [], 3
    i = 0
    while i < len(argv):
        if argv[i] == "--rounds":
            rounds = int(argv[i + 1])
            i += 2
        elif argv[i] == "--isa":
            isas.append(argv[i + 1])
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) < 4:
        sys.exit(__doc__)
    d, before, after, cases = args[0], args[1], args[2], args[3:]
    isas = isas or ["auto", "avx2"]
    torch.set_num_threads(1)
    torch_models.THREADS = 1
    name = os.path.basename(os.path.normpath(d))
    exes = {"before": link(d, before, "before"), "after": link(d, after, "after")}
    weights = os.path.join(d, "model.safetensors")
    side = zoo_bench.TorchSide(name, d)
    print(f"== {name}: CPU ms per call, one thread; load {open('/proc/loadavg').read().strip()}", flush=True)
    for case in cases:
        mode, batch = case.split(":")[0], int(case.split(":")[1])
        res = {(isa, s): [] for isa in isas for s in exes}
        res["torch"] = []
        for r in range(rounds):
            for isa in isas:
                for s, exe in exes.items():
                    res[(isa, s)].append(ampc_cpu(exe, weights, isa, mode, batch)[0])
            res["torch"].append(torch_cpu(side, mode, batch))
            print(f"  {mode} {batch} round {r}: " +
                  "  ".join(f"{k if isinstance(k, str) else '/'.join(k)} {v[-1]:.2f}" for k, v in res.items()),
                  flush=True)
        tm = statistics.median(res["torch"])
        for isa in isas:
            b, a = res[(isa, "before")], res[(isa, "after")]
            print(f"{name} {mode} {batch} {isa}: before median {statistics.median(b):.2f} fastest {min(b):.2f} | "
                  f"after median {statistics.median(a):.2f} fastest {min(a):.2f} | torch f32 median {tm:.2f} "
                  f"fastest {min(res['torch']):.2f} | after/before {statistics.median(a) / statistics.median(b):.3f} "
                  f"| ampc/torch before {statistics.median(b) / tm:.3f} after {statistics.median(a) / tm:.3f}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
