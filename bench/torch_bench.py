#!/usr/bin/python3
"""torch_bench.py AMPC_RESULTS [--f32-only] [--label LABEL]

Times torch.matmul (square N x N x N, bf16 and f32; f32 only with
--f32-only) on torch.set_num_threads(2), median of 9 timed runs after a
warm-up, at the sizes found in AMPC_RESULTS (the output of gemm_bench),
then prints a side-by-side table with ampc's figures and the ratios.
Run with /usr/bin/python3 (python3-torch)."""
import statistics
import sys
import time

import torch

RUNS = 9


def gflops(n, dtype, threads):
    torch.set_num_threads(threads)
    a = torch.rand(n, n, dtype=torch.float32).sub_(0.5).to(dtype)
    b = torch.rand(n, n, dtype=torch.float32).sub_(0.5).to(dtype)
    reps = 20 if n <= 256 else 4 if n <= 512 else 1
    torch.matmul(a, b)
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.matmul(a, b)
        times.append((time.perf_counter() - t0) / reps)
    return 2.0 * n ** 3 / statistics.median(times) * 1e-9


def main():
    args = sys.argv[1:]
    f32_only = "--f32-only" in args
    label = "PyTorch"
    if "--label" in args:
        label = args[args.index("--label") + 1]
    path = args[0]
    ampc = {}
    isa = "?"
    with open(path) as f:
        for line in f:
            w = line.split()
            if line.startswith("# isa"):
                isa = w[2]
            elif w and w[0] == "ampc":
                ampc[(w[1], int(w[2]), int(w[3]))] = float(w[4])
    sizes = sorted({k[1] for k in ampc})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads max; ampc kernel set {isa}")
    print(f"{'dtype':6} {'N':>5} {'thr':>3} {'ampc GF/s':>10} {label + ' GF/s':>22} {'ratio':>6}   notes")
    dtypes = ["f32"] if f32_only else ["bf16", "f16", "f32"]
    for n in sizes:
        for dt in dtypes:
            for thr in (1, 2):
                mine = ampc.get((dt, n, thr))
                if mine is None:
                    continue
                if dt == "f16":
                    ref = ampc.get(("f32", n, thr))
                    print(f"{dt:6} {n:5} {thr:3} {mine:10.1f} {'(ampc f32) ' + format(ref, '.1f'):>22} "
                          f"{mine / ref:6.2f}   vs ampc's own f32")
                    continue
                if thr != 2:
                    print(f"{dt:6} {n:5} {thr:3} {mine:10.1f} {'':>22} {'':>6}")
                    continue
                tdt = torch.bfloat16 if dt == "bf16" else torch.float32
                theirs = gflops(n, tdt, 2)
                print(f"{dt:6} {n:5} {thr:3} {mine:10.1f} {theirs:22.1f} {mine / theirs:6.2f}")


if __name__ == "__main__":
    main()
