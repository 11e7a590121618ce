"""resnet18 per-call CPU time, one thread each, alternating rounds: two
builds of ampc (BEFORE and AFTER: directories holding the infer and train
model_bench binaries, copies of build/bench/resnet18/model_bench and
build/bench/resnet18_train/model_bench) on the avx2 set, and PyTorch f32.
ampc's figure is the task-clock (perf stat) of model_bench with R2 calls
less that with R1, over R2 - R1; PyTorch's, time.process_time around each
call.  CPU time, not wall time: on a machine loaded far beyond its CPUs
it is what the work costs, while wall times measure the queue.  Run it
under the AVX2 limits (docs/benchmarks.md) and OMP_NUM_THREADS=1:

    env ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=1 \
        /usr/bin/python3 bench/resnet18_cpu_time.py BEFORE AFTER [ROUNDS] [WEIGHTS]
"""
import os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models as tm
import torch
torch.set_num_threads(1)
tm.THREADS = 1
if len(sys.argv) not in (3, 4, 5):
    sys.exit(__doc__)
DIRS = {"before": sys.argv[1], "after": sys.argv[2]}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
W = sys.argv[4] if len(sys.argv) > 4 else "build/bench/resnet18.safetensors"
cases = [("infer", 1, 2, 10), ("infer", 8, 1, 5), ("train", 8, 1, 3)]
TC = f"/tmp/resnet18_cpu_time.{os.getpid()}.txt"


def task_clock(binary, mode, batch, runs):
    # (exact call counts: under load a training step's wall time passes
    # model_bench's 1 s rule, which would time one call of either run)
    env = dict(os.environ, AMPRT_THREADS="1", AMPRT_ISA="avx2", BENCH_EXACT_CALLS="1")
    subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-o", TC, binary, W, mode,
                    str(batch), str(runs)], env=env, check=True, capture_output=True)
    for line in open(TC):
        if "task-clock" in line:
            return float(line.split(",")[0])
def ampc_cpu(binary, mode, batch, r1, r2):
    return (task_clock(binary, mode, batch, r2) - task_clock(binary, mode, batch, r1)) / (r2 - r1)
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
for mode, batch, r1, r2 in cases:
    res = {"before": [], "after": [], "torch": []}
    for r in range(rounds):
        for side in ("before", "after"):
            res[side].append(ampc_cpu(os.path.join(DIRS[side], mode), mode, batch, r1, r2))
        res["torch"].append(torch_cpu(mode, batch, r2 - r1)[0])
        print(f"  {mode} {batch} round {r}: " + "  ".join(f"{k} {v[-1]:.1f}" for k, v in res.items()), flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    fast = {k: min(v) for k, v in res.items()}
    print(f"{mode} batch {batch} CPU ms/call: median before {med['before']:.1f} after {med['after']:.1f} torch {med['torch']:.1f} "
          f"| ratio before {med['before']/med['torch']:.3f} after {med['after']/med['torch']:.3f} "
          f"| fastest before {fast['before']:.1f} after {fast['after']:.1f} torch {fast['torch']:.1f}", flush=True)
print("load", open("/proc/loadavg").read().strip(), flush=True)
