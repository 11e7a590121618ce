#!/usr/bin/python3
"""zoo_bench.py: `make bench-zoo`, the seed's TorchDynamo model table
(bench/zoo_models.py) through ampc against the best PyTorch on the machine.

    zoo_bench.py BUILD [--rounds N] [--csv FILE] [NAME...]

For each model (all of zoo_models.ZOO, or the NAMEs), in BUILD/bench-zoo/NAME:

  1. tools/torch2amp exports it with its training step (`--train
     bench/zoo_models.py:sgd_momentum`: cross-entropy, SGD with momentum)
     to model.amp and its weights to model.safetensors;
  2. BUILD/ampc -t cpu --prefix=bench, and cc with bench/model_bench.c and
     BUILD/libamprt.a (its input, target and output names as -D macros),
     to model_bench;

each step redone only when its inputs are newer than its result.  A model
that fails to export, compile or run is reported with the message and the
command that reproduces it, and the others go on.

Then three cases per model: inference at batch 1 and 8 (ampc's
bench_forward_prepared, evaluation mode; PyTorch under torch.no_grad() in
eval mode) and a training step at batch 8 (ampc's bench_train_step;
PyTorch's zero_grad, forward and cross-entropy, backward, SGD step, in
train mode: batch statistics and dropout on both sides).  Each case runs
ROUNDS alternating rounds of bench/torch_models.py (ampc's model_bench, then
PyTorch f32 and PyTorch autocast bf16, 2 threads each, medians of a few
calls after warm-up), and is judged against the faster PyTorch
configuration.  PyTorch computes on the weights file torch2amp wrote,
loaded again at the start of each of its rounds, as ampc's model_bench
loads it in each process.  Inputs: uniform in [-1, 1] (images), token ids
uniform in [1, vocabulary), labels i mod 10 (mod 2 for BERT's two classes).
ampc's forward also computes the loss on the target (its model has one
for training): a cross-entropy over [B, 1000], microseconds.

Prints a row per case (medians over the rounds, the faster configuration,
ratio = ampc / best PyTorch time, speedup = its inverse, the ratio of the
best rounds, the vCPU round trips), then the geometric mean of the
speedups over the inference cases and over the training cases, as the
seed's table gives Dynamo's over lazy tensors, against the targets
(GEOMEAN_TARGETS), and the cases where ampc was slower than the best
PyTorch; --csv writes the rows in bench/torch_models.py's CSV format.
"""
import math
import os
import shlex
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
import compare  # noqa: E402  (load_weights: the weights file's keys back to the state_dict's)
import models  # noqa: E402
import torch_env  # noqa: E402
import torch_models  # noqa: E402
import zoo_models  # noqa: E402

# (mode, batch, calls per timing)
CASES = [("infer", 1, 5), ("infer", 8, 3), ("train", 8, 3)]
# issue 29's targets per kernel set: geomean speedup over the best PyTorch,
# inference and training; and no case slower than it.  (2.0, 1.3) where
# the CPU has AVX-512 BF16 (PyTorch's bf16 autocast is fast there); (1.3,
# 1.1) where it has not (AVX2, or AVX-512 without BF16: PyTorch's f32 is
# the anchor), and for any other set
GEOMEAN_TARGETS = {"avx512bf16": (2.0, 1.3)}
GEOMEAN_TARGETS_NO_BF16 = (1.3, 1.1)
EXPORT_TIMEOUT = 1200
COMPILE_TIMEOUT = 1800


class Failed(Exception):
    """a step that failed: its message and the command that reproduces it"""

    def __init__(self, step, message, cmd):
        super().__init__(step)
        self.step, self.message, self.cmd = step, message, cmd


def stale(target, sources):
    """whether target is missing or older than one of sources"""
    if not os.path.exists(target):
        return True
    t = os.path.getmtime(target)
    return any(os.path.getmtime(s) > t for s in sources)


def run(step, cmd, timeout, cwd=None):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failed(step, f"timed out after {timeout} s", cmd)
    if p.returncode != 0:
        lines = p.stdout.strip().splitlines()
        raise Failed(step, "\n".join(lines[-12:]) or f"exit status {p.returncode}", cmd)
    print(f"  {step}: {time.time() - t0:.1f} s", flush=True)


def io_names(amp):
    """the .amp's first input (the model's), and its output"""
    inp = out = None
    for line in open(amp):
        w = line.split()
        if w[:1] == ["input"] and inp is None:
            inp = w[1].rstrip(":")
        elif w[:1] == ["output"]:
            out = w[1]
    return inp, out


def vocabulary(m):
    emb = [e for e in m.modules() if isinstance(e, torch.nn.Embedding)]
    return emb[0].num_embeddings if emb else 0


def build(build_dir, name):
    """exports and compiles one model; returns its directory"""
    factory, shape, dtype, _ = zoo_models.ZOO[name]
    d = os.path.join(build_dir, "bench-zoo", name)
    os.makedirs(d, exist_ok=True)
    amp, wts = os.path.join(d, "model.amp"), os.path.join(d, "model.safetensors")
    spec = os.path.join(ROOT, "tests", "torch", "models.py")
    tool = os.path.join(ROOT, "tools", "torch2amp")
    if stale(amp, [tool, spec, os.path.join(HERE, "zoo_models.py")]):
        run("torch2amp", [sys.executable, tool, f"{spec}:{factory}", "--train",
                          os.path.join(HERE, "zoo_models.py") + ":sgd_momentum", "-o", amp, "--weights", wts,
                          "--name", "Zoo", "--output-names", "logits", "--input-shape",
                          ",".join(str(s) for s in (1,) + shape), "--input-dtype", dtype], EXPORT_TIMEOUT)
    ampc, lib = os.path.join(build_dir, "ampc"), os.path.join(build_dir, "libamprt.a")
    c = os.path.join(d, "bench.c")
    if stale(c, [amp, ampc]):
        run("ampc -t cpu", [ampc, amp, "-t", "cpu", "--prefix=bench", "-o", c], EXPORT_TIMEOUT)
    exe, obj, driver = os.path.join(d, "model_bench"), os.path.join(d, "bench.o"), os.path.join(HERE, "model_bench.c")
    cc = shlex.split(os.environ.get("CC", "cc")) + ["-std=c99"] + shlex.split(os.environ.get("OPT", "-O2"))
    inc = ["-I" + os.path.join(ROOT, "runtime", "include")]
    if stale(obj, [c]):
        run("cc bench.c", cc + inc + ["-c", "-o", obj, c], COMPILE_TIMEOUT)
    if stale(exe, [obj, driver, lib]):
        inp, out = io_names(amp)
        names = [f"-DBENCH_IN={inp}", f"-DBENCH_IN_UP={inp.upper()}", "-DBENCH_TARGET=target",
                 "-DBENCH_TARGET_UP=TARGET", f"-DBENCH_OUT={out}", f"-DBENCH_OUT_UP={out.upper()}"]
        if dtype == "i64":
            names.append(f"-DBENCH_VOCAB={vocabulary(getattr(models, factory)())}")
        run("cc model_bench", cc + inc + ["-I" + d] + names + ["-o", exe, driver, obj, lib, "-lm", "-lpthread"],
            COMPILE_TIMEOUT)
    return d


class TorchSide:
    """one model in PyTorch on the weights torch2amp wrote: each timing
    starts from them again, with a fresh optimizer"""

    def __init__(self, name, d):
        factory, self.shape, self.dtype, self.classes = zoo_models.ZOO[name]
        torch.set_num_threads(torch_models.THREADS)
        self.model = getattr(models, factory)()
        # by state_dict key through torch2amp's spellings (as compare.load_weights),
        # copied in place: load_state_dict of a plain dict fails for mnasnet,
        # whose loader wants the state_dict's version metadata
        state = self.model.state_dict()
        spell = compare.emulate.torch2amp().amp_spellings(list(state))
        sd = compare.read_safetensors(os.path.join(d, "model.safetensors"))
        self.initial = {k: sd[spell[k]] for k in state}
        self.vocab = vocabulary(self.model)

    def restore(self):
        """the weights and buffers back to the file's"""
        with torch.no_grad():
            for k, v in self.model.state_dict().items():
                v.copy_(self.initial[k])

    def inputs(self, batch):
        g = torch.Generator().manual_seed(1)
        if self.dtype == "i64":
            x = torch.randint(1, self.vocab, (batch,) + self.shape, generator=g)
        else:
            x = torch.rand((batch,) + self.shape, generator=g) * 2 - 1
        return x, torch.arange(batch) % min(10, self.classes)

    def time(self, mode, batch, calls, dtype):
        m = self.model
        self.restore()
        x, y = self.inputs(batch)
        if mode == "infer":
            m.eval()

            def step():
                with torch.no_grad(), torch_models.autocast(dtype):
                    m(x)
        else:
            m.train()
            _, opt = zoo_models.sgd_momentum(m)

            def step():
                opt.zero_grad(set_to_none=True)
                with torch_models.autocast(dtype):
                    loss = F.cross_entropy(m(x), y)
                loss.backward()
                opt.step()
        return torch_models.time_calls(step, calls)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summary(isa, speedups, slower):
    """the closing lines: the geomean speedups against the targets of the
    kernel set's family, and the cases where ampc was slower"""
    inf, tr = speedups.get("infer", []), speedups.get("train", [])
    want_inf, want_tr = GEOMEAN_TARGETS.get(isa, GEOMEAN_TARGETS_NO_BF16)
    g_inf, g_tr = geomean(inf), geomean(tr)
    return (f"== geomean speedup over the best PyTorch (kernel set {isa}): inference {g_inf:.2f}x "
            f"({len(inf)} cases; batch 1 {geomean(speedups.get(('infer', 1), [])):.2f}x, "
            f"batch 8 {geomean(speedups.get(('infer', 8), [])):.2f}x; target >= {want_inf}x: "
            f"{'met' if g_inf >= want_inf else 'NOT met'}), training {g_tr:.2f}x ({len(tr)} cases; target >= "
            f"{want_tr}x: {'met' if g_tr >= want_tr else 'NOT met'})\n"
            f"== slower than the best PyTorch: {', '.join(slower) if slower else 'no case'}")


def usage():
    sys.exit(__doc__)


def parse(argv):
    rounds, csv_path, names = 3, None, []
    i = 0
    while i < len(argv):
        if argv[i] in ("--rounds", "--csv") and i + 1 < len(argv):
            if argv[i] == "--rounds":
                rounds = int(argv[i + 1])
            else:
                csv_path = argv[i + 1]
            i += 2
        elif argv[i].startswith("-"):
            usage()
        else:
            names.append(argv[i])
            i += 1
    return rounds, csv_path, names


def main(argv):
    if not argv:
        usage()
    build_dir = os.path.abspath(argv[0])
    rounds, csv_path, names = parse(argv[1:])
    names = names or list(zoo_models.ZOO)
    unknown = [n for n in names if n not in zoo_models.ZOO]
    if unknown or rounds < 1:
        sys.exit(f"zoo_bench: unknown model {', '.join(unknown)} (known: {', '.join(zoo_models.ZOO)})"
                 if unknown else "zoo_bench: --rounds must be at least 1")
    print(torch_env.describe(), flush=True)
    failures, built = {}, {}
    for name in names:
        print(f"== {name}: export and compile", flush=True)
        try:
            built[name] = build(build_dir, name)
        except Failed as e:
            failures[name] = e
            print(f"  {name}: {e.step} failed:\n    " + e.message.replace("\n", "\n    "), flush=True)
    t = torch_models.THREADS
    print(f"== {t} threads each; PyTorch f32 and autocast cpu bf16, ampc -t cpu AMPRT_THREADS={t}; median of "
          f"{rounds} alternating rounds (each a median of up to N calls); ratio = ampc / best PyTorch time, "
          "speedup = best PyTorch / ampc; training step: batch 8, SGD momentum 0.9, cross-entropy, train mode",
          flush=True)
    header = (f"{'model':16} {'case':5} {'N':>2} {'ampc ms':>9} {'f32 ms':>9} {'bf16 ms':>9} {'best':>4} "
              f"{'ratio':>6} {'speedup':>7}  {'best rounds':>11}  {'vCPU round trip ns':18}")
    isa, rows, speedups, slower = None, [], {}, []

    def announce(ran):
        nonlocal isa
        if isa is None:
            isa = ran
            print(f"ampc kernel set: {isa}")
            print(header, flush=True)

    for name, d in built.items():
        side = TorchSide(name, d)
        exe, wts = os.path.join(d, "model_bench"), os.path.join(d, "model.safetensors")
        for mode, batch, calls in CASES:
            # a configuration that raises is left out of this case only
            # (mobilenet_v2's bf16 backward: ReLU6's hardtanh_backward has no
            # bf16 kernel in PyTorch 1.13)
            unavailable = {}
            try:
                mine, theirs, trips = torch_models.alternate(
                    os.path.join(build_dir, "bench"), rounds,
                    lambda: torch_models.run_model_bench(exe, wts, mode, batch, calls),
                    lambda dtype: side.time(mode, batch, calls, dtype), unavailable, announce)
            except subprocess.CalledProcessError as e:
                msg = (e.stderr or "").strip() or f"exit status {e.returncode}"
                failures[name] = Failed(f"model_bench {mode} {batch}", msg, e.cmd)
                print(f"{name:16} {mode:5} {batch:2} failed: {msg}", flush=True)
                break
            a, med, best, ratio = torch_models.summarize(mine, theirs)
            shown = {cfg: f"{m:9.4g}" if m != float("inf") else f"{'-':>9}" for cfg, m in med.items()}
            trip = f"{min(trips):.0f}-{max(trips):.0f}" if trips else "-"
            print(f"{name:16} {mode:5} {batch:2} {a:9.4g} {shown['f32']} {shown['bf16']} {best:>4} {ratio:6.3f} "
                  f"{1 / ratio:7.2f}  {min(mine) / min(theirs[best]):11.3f}  {trip:18}", flush=True)
            if ratio > 1:
                slower.append(f"{name} {mode} {batch}")
            speedups.setdefault(mode, []).append(1 / ratio)
            speedups.setdefault((mode, batch), []).append(1 / ratio)
            rows.append(torch_models.csv_row(isa, name, mode, batch, a, med, best, ratio))
            if csv_path:
                # after every case: a long run stopped part-way keeps what it measured
                torch_models.write_csv(csv_path, rows, quiet=True)
        del side
    print(summary(isa, speedups, slower))
    if csv_path:
        print(f"results as CSV: {csv_path}")
    for name, e in failures.items():
        print(f"== {name}: {e.step} failed:\n    " + e.message.replace("\n", "\n    ") +
              "\n  reproduce: " + " ".join(shlex.quote(str(w)) for w in e.cmd))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
