"""resnet18 per-call CPU time, one thread each, alternating rounds: two
builds of ampc (BEFORE and AFTER: directories holding the infer and train
model_bench binaries, copies of build/bench/resnet18/model_bench and
build/bench/resnet18_train/model_bench) on the avx2 set, and PyTorch f32.
Both sides time each call in the process's CPU time: ampc's model_bench
with BENCH_CPU_TIME=1 (CLOCK_PROCESS_CPUTIME_ID around each call, exactly
two untimed calls first), PyTorch's time.process_time around each call;
each side's figure per round is the median of its calls.  CPU time, not
wall time: on a machine loaded far beyond its CPUs it is what the work
costs, while wall times measure the queue.  (The first form of this
script subtracted perf's task-clock of two whole runs of model_bench,
whose training runs under load made one timed call each: noise.)  Run it
under the AVX2 limits (docs/benchmarks.md) and OMP_NUM_THREADS=1:

    env ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=1 \
        /usr/bin/python3 bench/resnet18_cpu_time.py BEFORE AFTER [ROUNDS] [WEIGHTS] [CASES]

CASES: a comma-separated subset of infer1,infer8,train8 (all by default).
"""
import os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models as tm
import torch
torch.set_num_threads(1)
tm.THREADS = 1
if len(sys.argv) not in (3, 4, 5, 6):
    sys.exit(__doc__)
DIRS = {"before": sys.argv[1], "after": sys.argv[2]}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
W = sys.argv[4] if len(sys.argv) > 4 else "build/bench/resnet18.safetensors"
# (mode, batch, calls per side and round)
cases = [("infer", 1, 10), ("infer", 8, 5), ("train", 8, 4)]
if len(sys.argv) > 5:
    cases = [c for c in cases if f"{c[0]}{c[1]}" in sys.argv[5].split(",")]


def ampc_cpu(binary, mode, batch, calls):
    env = dict(os.environ, AMPRT_THREADS="1", AMPRT_ISA="avx2", BENCH_CPU_TIME="1")
    out = subprocess.run([binary, W, mode, str(batch), str(calls)], env=env, check=True, capture_output=True,
                         text=True).stdout.split()
    assert out[0] == "ampc" and out[5] == "avx2", out
    return float(out[3])
def torch_cpu(mode, batch, calls):
    name = "resnet18_train" if mode == "train" else "resnet18"
    model = tm.make_model(name); model.eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if mode == "train" else None
    x, y = tm.inputs(name, batch)
    for _ in range(2):
        tm.torch_step(name, mode, model, opt, x, y, None)
    ts = []
    for _ in range(calls):
        t0 = time.process_time(); tm.torch_step(name, mode, model, opt, x, y, None); ts.append((time.process_time() - t0) * 1e3)
    return statistics.median(ts), min(ts)
print("load", open("/proc/loadavg").read().strip(), flush=True)
for mode, batch, calls in cases:
    res = {"before": [], "after": [], "torch": []}
    for r in range(rounds):
        for side in ("before", "after"):
            res[side].append(ampc_cpu(os.path.join(DIRS[side], mode), mode, batch, calls))
        res["torch"].append(torch_cpu(mode, batch, calls)[0])
        print(f"  {mode} {batch} round {r}: " + "  ".join(f"{k} {v[-1]:.1f}" for k, v in res.items()), flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    fast = {k: min(v) for k, v in res.items()}
    print(f"{mode} batch {batch} CPU ms/call: median before {med['before']:.1f} after {med['after']:.1f} torch {med['torch']:.1f} "
          f"| ratio before {med['before']/med['torch']:.3f} after {med['after']/med['torch']:.3f} "
          f"| fastest before {fast['before']:.1f} after {fast['after']:.1f} torch {fast['torch']:.1f}", flush=True)
print("load", open("/proc/loadavg").read().strip(), flush=True)
