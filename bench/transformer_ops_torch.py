"""transformer_ops_torch.py: PyTorch's CPU time, one thread, for the ops
bench/transformer_ops_bench.c times (BERT's forward at batch 8), in bf16
and f32: F.linear, torch.bmm, divide, on contiguous operands.  Fastest
call of about 1.5 s of CPU after two untimed ones, and its GFLOP/s.

    OMP_NUM_THREADS=1 /usr/bin/python3 bench/transformer_ops_torch.py
"""
import time

import torch
import torch.nn.functional as F


def timed(label, flops, fn):
    fn()
    fn()
    best, n, t0 = 1e30, 0, time.process_time()
    while time.process_time() - t0 < 1.5 or n < 3:
        a = time.process_time()
        fn()
        best = min(best, time.process_time() - a)
        n += 1
    print(f"{label:44s} {best * 1e3:8.3f} ms fastest  {flops / best / 1e9:6.1f} GFLOP/s", flush=True)


def main():
    torch.set_num_threads(1)
    for dt, name in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
        x, x4 = torch.randn(1024, 768, dtype=dt), torch.randn(1024, 3072, dtype=dt)
        w, wu, wd = (torch.randn(768, 768, dtype=dt), torch.randn(3072, 768, dtype=dt),
                     torch.randn(768, 3072, dtype=dt))
        b, b4 = torch.randn(768, dtype=dt), torch.randn(3072, dtype=dt)
        timed(f"{name} linear [1024,768]x[768,768]^T", 2 * 1024 * 768 * 768, lambda: F.linear(x, w, b))
        timed(f"{name} linear [1024,768]x[3072,768]^T", 2 * 1024 * 768 * 3072, lambda: F.linear(x, wu, b4))
        timed(f"{name} linear [1024,3072]x[768,3072]^T", 2 * 1024 * 768 * 3072, lambda: F.linear(x4, wd, b))
        q, k = torch.randn(96, 128, 64, dtype=dt), torch.randn(96, 64, 128, dtype=dt)
        s = torch.randn(96, 128, 128, dtype=dt)
        timed(f"{name} bmm [96] [128,64]x[64,128]", 2 * 96 * 128 * 128 * 64, lambda: torch.bmm(q, k))
        timed(f"{name} bmm [96] [128,128]x[128,64]", 2 * 96 * 128 * 128 * 64, lambda: torch.bmm(s, q))
        timed(f"{name} div [1572864]", 1572864, lambda: s / 8.0)


if __name__ == "__main__":
    main()
