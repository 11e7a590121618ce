"""PyTorch's CPU time per inference call (or training step), one thread, for models of the
seed's table (bench/zoo_models.py) on the weights tools/torch2amp wrote
for `make bench-zoo` (BUILD/bench-zoo/NAME/model.safetensors), in f32 and
under autocast bf16: the PyTorch side of a CPU-time comparison with
model_bench's BENCH_CPU_TIME=1 AMPRT_THREADS=1 (docs/benchmarks.md).  CPU
time, not wall time: on a machine loaded beyond its CPUs it is what the
work costs, while wall times measure the queue.

    OMP_NUM_THREADS=1 /usr/bin/python3 bench/zoo_torch_cpu_time.py BUILD NAME BATCH CALLS [train]

With `train`, a training step as zoo_bench.py times it (train mode,
zero_grad, forward and cross-entropy under the configuration, backward,
SGD with momentum), from the file's weights for each configuration.

Prints, per configuration, the median and the fastest of CALLS calls
after two untimed ones:  torch <f32|bf16> NAME BATCH <median ms> <min ms>
(or the error, for a configuration PyTorch refuses).
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo_bench  # noqa: E402
import torch_models  # noqa: E402
import zoo_models  # noqa: E402


def main(argv):
    if len(argv) not in (4, 5) or argv[4:] not in ([], ["train"]):
        sys.exit(__doc__)
    build, name, batch, calls = argv[0], argv[1], int(argv[2]), int(argv[3])
    train = argv[4:] == ["train"]
    torch_models.THREADS = 1
    torch.set_num_threads(1)
    side = zoo_bench.TorchSide(name, os.path.join(build, "bench-zoo", name))
    torch.set_num_threads(1)
    side.restore()
    side.model.eval()
    x, y = side.inputs(batch)
    for label, dtype in (("f32", None), ("bf16", torch.bfloat16)):
        def step():
            with torch.no_grad(), torch_models.autocast(dtype):
                side.model(x)

        if train:
            side.restore()
            side.model.train()
            _, opt = zoo_models.sgd_momentum(side.model)

            def step():  # noqa: F811  (the training step replaces inference)
                opt.zero_grad(set_to_none=True)
                with torch_models.autocast(dtype):
                    loss = F.cross_entropy(side.model(x), y)
                loss.backward()
                opt.step()
        try:
            for _ in range(2):
                step()
        except RuntimeError as e:  # PyTorch 1.13's ViT fast path has no bf16
            print(f"torch {label} {name} {batch} raises: {str(e).splitlines()[0]}", flush=True)
            continue
        ts = []
        for _ in range(calls):
            t0 = time.process_time()
            step()
            ts.append((time.process_time() - t0) * 1e3)
        print(f"torch {label} {name} {'train ' if train else ''}{batch} {statistics.median(ts):.1f} {min(ts):.1f}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
