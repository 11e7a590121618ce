#!/usr/bin/python3
"""torch_bench.py GEMM_BENCH [--rounds R] [--sizes N...] [--f32-only] [--label LABEL] [--csv FILE]

GEMM side by side: runs ampc's GEMM_BENCH (bench/gemm_bench.c: amp_matmul
for bf16, f16 and f32 on 1 and 2 threads, each figure a median of 9 calls)
and torch.matmul (square N x N x N, bf16 and f32, torch.set_num_threads(2),
median of 9 timed runs after a warm-up), alternating, R rounds (default 3):
each round times every size on both sides, so a change in the machine's
state between rounds reaches both.  Prints, per case, the median over the
rounds of each side's GFLOP/s and the median of the rounds' ratios
(ampc / PyTorch; f16 storage against ampc's own f32 of the same round),
and, on 2 threads, ampc's figure over the faster of PyTorch's f32 and
bf16 ("vs best": the anchor where PyTorch has no fast bf16).  The header
names the CPU, PyTorch's BLAS (it must be OpenBLAS: bench/torch_env.py)
and ISA limits, and ampc's kernel set.  With --csv, also writes the table
to FILE: cpu,kernel_set,dtype,n,threads,ampc_gflops,torch_gflops,ratio
(torch_gflops and ratio empty where there is no PyTorch figure; f16's
ratio is against ampc's own f32, as printed).
Run with /usr/bin/python3 (python3-torch)."""
import csv
import statistics
import subprocess
import sys
import time

import torch

import torch_env

RUNS = 9
PAUSE = 0.5  # seconds


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


def gflops_or_none(n, dtype, threads):
    """gflops, or None where PyTorch cannot run the dtype: oneDNN held to
    AVX2 (DNNL_MAX_CPU_ISA) has no bf16 primitives, while PyTorch, seeing
    an AVX-512 CPU, still asks it for them."""
    try:
        return gflops(n, dtype, threads)
    except RuntimeError:
        return None


def ampc_round(gemm_bench, sizes):
    """{(dtype, N, threads): GFLOP/s} of one gemm_bench run, and its kernel set."""
    out = subprocess.run([gemm_bench] + [str(n) for n in sizes], check=True, capture_output=True,
                         text=True).stdout
    figures, isa = {}, "?"
    for line in out.splitlines():
        w = line.split()
        if line.startswith("# isa"):
            isa = w[2]
        elif w and w[0] == "ampc":
            figures[(w[1], int(w[2]), int(w[3]))] = float(w[4])
    return figures, isa


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    gemm_bench = args[0]
    f32_only = "--f32-only" in args
    label = args[args.index("--label") + 1] if "--label" in args else "PyTorch"
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
    csv_path = args[args.index("--csv") + 1] if "--csv" in args else None
    sizes = [256, 512, 1024]
    if "--sizes" in args:
        i = args.index("--sizes") + 1
        sizes = []
        while i < len(args) and not args[i].startswith("-"):
            sizes.append(int(args[i]))
            i += 1
    dtypes = ["f32"] if f32_only else ["bf16", "f16", "f32"]
    mine, theirs, isa = [], [], "?"
    for _ in range(rounds):
        # a pause before each side: the other's idle threads may still spin
        # for a while after its last call, on the CPUs the next one times
        time.sleep(PAUSE)
        figures, isa = ampc_round(gemm_bench, sizes)
        mine.append(figures)
        time.sleep(PAUSE)
        theirs.append({(dt, n): gflops_or_none(n, torch.bfloat16 if dt == "bf16" else torch.float32, 2)
                       for n in sizes for dt in dtypes if dt != "f16"})
    print(torch_env.describe())
    print(f"2 threads; ampc kernel set {isa}; {rounds} alternating rounds: "
          "medians over them, ratio = median of the rounds' ratios")
    print(f"{'dtype':6} {'N':>5} {'thr':>3} {'ampc GF/s':>10} {label + ' GF/s':>22} {'ratio':>6}   notes")
    rows = []
    cpu = torch_env.cpu_name().replace(",", " ")
    for n in sizes:
        for dt in dtypes:
            for thr in (1, 2):
                if (dt, n, thr) not in mine[0]:
                    continue
                m = statistics.median(r[(dt, n, thr)] for r in mine)
                if dt == "f16":
                    ref = statistics.median(r[("f32", n, thr)] for r in mine)
                    ratio = statistics.median(r[(dt, n, thr)] / r[("f32", n, thr)] for r in mine)
                    print(f"{dt:6} {n:5} {thr:3} {m:10.1f} {'(ampc f32) ' + format(ref, '.1f'):>22} "
                          f"{ratio:6.2f}   vs ampc's own f32")
                    rows.append([cpu, isa, dt, n, thr, f"{m:.1f}", "", f"{ratio:.3f}"])
                elif thr != 2:
                    print(f"{dt:6} {n:5} {thr:3} {m:10.1f} {'':>22} {'':>6}")
                    rows.append([cpu, isa, dt, n, thr, f"{m:.1f}", "", ""])
                else:
                    note = ""
                    if not f32_only:
                        def best_of(b):
                            return max(v for v in (b[("f32", n)], b[("bf16", n)]) if v is not None)
                        best = statistics.median(best_of(b) for b in theirs)
                        fast = statistics.median(a[(dt, n, thr)] / best_of(b) for a, b in zip(mine, theirs))
                        note = f"vs best PyTorch ({best:.1f}): {fast:.2f}"
                    if any(r[(dt, n)] is None for r in theirs):
                        print(f"{dt:6} {n:5} {thr:3} {m:10.1f} {'(not available)':>22} {'-':>6}   {note}")
                        rows.append([cpu, isa, dt, n, thr, f"{m:.1f}", "", ""])
                        continue
                    t = statistics.median(r[(dt, n)] for r in theirs)
                    ratio = statistics.median(a[(dt, n, thr)] / b[(dt, n)] for a, b in zip(mine, theirs))
                    print(f"{dt:6} {n:5} {thr:3} {m:10.1f} {t:22.1f} {ratio:6.2f}   {note}")
                    rows.append([cpu, isa, dt, n, thr, f"{m:.1f}", f"{t:.1f}", f"{ratio:.3f}"])
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["cpu", "kernel_set", "dtype", "n", "threads", "ampc_gflops", "torch_gflops", "ratio"])
            w.writerows(rows)
        print(f"results as CSV: {csv_path}")


if __name__ == "__main__":
    main()
