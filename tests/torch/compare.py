#!/usr/bin/python3
"""tests/torch/compare.py: export models with tools/torch2amp, compile them
with ampc for each target, run them, and compare with PyTorch.

    /usr/bin/python3 tests/torch/compare.py BUILD [MODEL...]

run.sh calls this (after checking torch and torchvision import).  For every
model of MODELS below:

  1. tools/torch2amp tests/torch/models.py:FACTORY -> model.amp + weights
     + op-map.json (which .amp lines each fx node became);
  2. the PyTorch references, from a fresh module loaded with the weights
     file torch2amp wrote (so both sides use the same bits):
       - torch.autocast("cpu", dtype=torch.bfloat16), PyTorch 1.13's CPU
         autocast (the reference of -t cpu);
       - the module in float64 (the reference of every target);
  3. for each target: BUILD/ampc -t TARGET --prefix=model, cc with
     tests/torch/driver.c and BUILD/libamprt.a, run on the batch, and
     compare;
  4. for each target, the per-op emulation (emulate.py): the fx graph run
     with the dtypes `ampc --explain=json --no-fuse -t TARGET` gives each op
     (one entry per op: a fused group's calls compute what its ops would,
     bit for bit, which tests/e2e/fusion.sh checks), inputs
     rounded to them, computed in f32, each result rounded once, as ampc's
     kernels do.  Without rounding, in f64, it must reproduce the module's
     f64 forward to 1e-10 (so the interpreter is the module's function);
  5. the probe: the same .amp with every statement's value made an output
     too (ampc's ops and dtypes must stay the same), compiled and run once,
     so that every statement of ampc (one op, or an op wrapped in views,
     but for the encoder's layer_norm(x + a)) is compared with the
     emulation of it fed ampc's own inputs (judge_local).

Three judgements per model and target (all must pass):

  per op (judge_local), the tight one: both sides round the same real
  result once, so in a low dtype an element of ampc's result either
  equals the emulation's or is its neighbour (one ulp, plus 2^-16 of the
  tensor's largest value where cancellation made an element much smaller
  than its terms: float32 noise), and few elements differ at all: the two
  float32 results differ by summation order, about sqrt(K) * 2^-24
  relative for K terms, which moves a rounding to the neighbour with
  probability ~ sqrt(K) * 2^-24 / ulp: 0.07% (bf16) and 0.6% (f16) for
  the largest K here (9216, alexnet's classifier), measured 0.06% and
  0.71%.  LOCAL_FRACTION, 5%, is 7 times that; truncating instead of
  rounding to nearest, a missing or a double rounding, or a wrong dtype
  make 50-100% of the elements differ, or by more than one ulp.  f32
  results: within 2^-16 of the largest value.

  end to end against the emulation: the error is normwise relative,
  ||y - ref||_2 / ||ref||_2, over the whole output batch, tolerance

      tol_emu = sqrt(N) * u

  with u the unit roundoff of the target's low dtype (2^-8 bf16, 2^-11 f16)
  and N the number of statements torch2amp wrote.  It is not much smaller
  than the error against f64: in a deep network the rare neighbour
  roundings above feed the next layers, whose results then round
  differently more often, and the two computations drift apart layer by
  layer (resnet18 -t tpu: 3e-4 after layer1, 2e-3 after layer2, 5e-3 at
  the logits), so end to end the emulation is about one rounding history
  away from ampc, like f64 is.  sqrt(N) * u is that distance without the
  factor 4 below; measured at most 0.21 of it.

  against PyTorch proper, the loose one kept from before:

      tol = 4 * sqrt(N) * u

  Each op rounds its result once to the low dtype (or less often, in f32);
  independent roundings of relative size <= u add in quadrature, giving
  sqrt(N) * u for one computation; 4 covers the growth through the layers
  and, for -t cpu, the second computation on the PyTorch side (both sides
  round, differently).  -t cpu must meet it against both PyTorch's bf16
  autocast and the f64 forward; -t tpu (bf16) and -t gpu (f16) against the
  f64 forward.

Top-1 agreement over the batch (argmax of the logits) with the emulation,
PyTorch's autocast (cpu) and f64 is reported, not judged: random weights
make near-ties likely.

Prints "ok"/"FAIL" per model and target and the last line
"torch: P passed, F failed"; exits 1 when anything failed.
"""
import collections
import ctypes
import json
import math
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import emulate  # noqa: E402
import models  # noqa: E402

# name: (factory, input shape with the batch, input dtype)
BATCH = 2
MODELS = {
    "resnet18": ("resnet18", [BATCH, 3, 64, 64], "f32"),
    "mobilenet_v2": ("mobilenet_v2", [BATCH, 3, 64, 64], "f32"),
    "squeezenet1_1": ("squeezenet1_1", [BATCH, 3, 64, 64], "f32"),
    "alexnet": ("alexnet", [BATCH, 3, 64, 64], "f32"),
    "transformer": ("tiny_encoder", [BATCH, 16], "i64"),
    "small_shufflenet": ("small_shufflenet", [BATCH, 3, 64, 64], "f32"),
    "small_densenet": ("small_densenet", [BATCH, 3, 64, 64], "f32"),
    "small_convnext": ("small_convnext", [BATCH, 3, 64, 64], "f32"),
    "small_regnet": ("small_regnet", [BATCH, 3, 64, 64], "f32"),
    "small_efficientnet": ("small_efficientnet", [BATCH, 3, 64, 64], "f32"),
    "small_mobilenet_v3": ("small_mobilenet_v3", [BATCH, 3, 32, 32], "f32"),
    "small_mnasnet": ("small_mnasnet", [BATCH, 3, 32, 32], "f32"),
    "small_googlenet": ("small_googlenet", [BATCH, 3, 32, 32], "f32"),
    "small_resnext": ("small_resnext", [BATCH, 3, 32, 32], "f32"),
    "gated_mlp": ("gated_mlp", [BATCH, 12], "f32"),
    "lstm": ("lstm", [BATCH, 6, 8], "f32"),
    "lstm_classifier": ("lstm_classifier", [BATCH, 6, 8], "f32"),
    "gru_classifier": ("gru_classifier", [BATCH, 7, 8], "f32"),
    "small_vit": ("small_vit", [BATCH, 3, 32, 32], "f32"),
    "small_bert": ("small_bert", [BATCH, 16], "i64"),
}
# checked end to end only: ampc unrolls a recurrent layer into many nodes
# (a cell per step), which the per-op emulation has no rule for
END_TO_END_ONLY = {"lstm", "lstm_classifier", "gru_classifier"}
# make test-zoo: the full-size torchvision models at 224 x 224 (compare.py --zoo)
ZOO = {"zoo_" + n: ("zoo_" + n, [BATCH, 3, 224, 224], "f32") for n in models.ZOO}
ZOO["zoo_bert"] = ("zoo_bert", [BATCH, 128], "i64")
TARGETS = ["cpu", "tpu", "gpu"]
UNIT = {"cpu": 2.0 ** -8, "tpu": 2.0 ** -8, "gpu": 2.0 ** -11}
# end to end against the emulation: TOL_EMU_FACTOR * sqrt(N) * u (see above)
TOL_EMU_FACTOR = 1.0
# per op: the largest share of a node's low-dtype elements that may be one
# ulp from the emulation, and the float32-noise allowance, relative to the
# node's largest value (judge_local)
LOCAL_FRACTION = 0.05
LOCAL_F32 = 2.0 ** -16
# seconds a compiled model may run on the batch (two threads), and any other step
# (an export, ampc, the C compiler) may take
RUN_TIMEOUT = 120
STEP_TIMEOUT = 300

_DT = {"F64": torch.float64, "F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
       "I64": torch.int64, "I32": torch.int32, "BOOL": torch.bool}


def read_safetensors(path):
    import json
    import struct
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        dt = _DT[info["dtype"]]
        if hi == lo:
            out[key] = torch.empty(info["shape"], dtype=dt)
        else:
            out[key] = torch.frombuffer(bytearray(data[lo:hi]), dtype=dt).clone().reshape(info["shape"])
    return out


class NotEmulated(Exception):
    pass


def load_weights(m, path):
    """the weights file torch2amp wrote, into m: its keys are the state_dict's
    as the .amp language spells them (torch2amp's amp_spellings)"""
    own = m.state_dict()
    spell = emulate.torch2amp().amp_spellings(list(own.keys()))
    sd = read_safetensors(path)
    state = collections.OrderedDict((k, sd[a]) for k, a in spell.items())
    # the modules' versions: MNASNet's loader refuses a state_dict without its own
    state._metadata = getattr(own, "_metadata", None)
    m.load_state_dict(state)


def rel(y, ref):
    d = (y - ref).norm().item()
    r = ref.norm().item()
    return d / r if r else d


def limit_memory():
    # 4 GB of address space for the C compiler: an emitted file that makes it
    # blow up (see the arena note in docs/pytorch.md) fails in seconds, not minutes
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


# per step of the model being checked: [(step, seconds, peak RSS in MB or None)], printed after its targets
STEPS = []
# GNU time measures a step's peak memory: a child forked from this process
# would report this process's own resident size (the kernel keeps the
# high-water mark across fork and exec)
GNU_TIME = "/usr/bin/time"


def run(cmd, timeout=None, step=None, **kw):
    """cmd's status and output; with step, its wall time and, with GNU time
    present, its peak resident memory (children included) go to STEPS"""
    timeout = timeout or STEP_TIMEOUT
    name, rss_file = os.path.basename(cmd[0]), None
    if step is not None and os.access(GNU_TIME, os.X_OK):
        fd, rss_file = tempfile.mkstemp(prefix="rss")
        os.close(fd)
        cmd = [GNU_TIME, "-f", "%M", "-o", rss_file] + list(cmd)
    t0 = time.time()
    # its own process group, so that a timeout ends the command and not only GNU time
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         start_new_session=True, **kw)
    try:
        out = p.communicate(timeout=timeout)[0]
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        rc, out = 1, "%s: timed out after %ds" % (name, timeout)
    if step is not None:
        rss = None
        if rss_file:
            with open(rss_file) as f:
                last = (f.read().split() or ["?"])[-1]
            os.unlink(rss_file)
            rss = int(last) / 1024.0 if last.isdigit() else None
        STEPS.append((step, time.time() - t0, rss))
    return rc, out


def tail(log, n=12):
    lines = log.strip().splitlines()
    return "\n".join(lines[-n:]) if len(lines) > n else "\n".join(lines)


def io_names(amp_path):
    inp = out = None
    for line in open(amp_path):
        s = line.strip()
        if s.startswith("input ") and inp is None:
            inp = s.split()[1].rstrip(":")
        elif s.startswith("output "):
            out = s.split()[1]
    return inp, out


def count_statements(amp_path):
    n, inside = 0, False
    for line in open(amp_path):
        s = line.strip()
        if s == "autocast {":
            inside = True
        elif s == "}" and inside:
            inside = False
        elif inside and "=" in s:
            n += 1
    return n


def probe_check(ampc, cc, lib, d, target, probe, outs, names, in_name, explain, op_map, module, x, wts, env):
    """every op of ampc against the emulation fed ampc's own inputs.  Returns
    (ok, message); judge_local gives the criterion"""
    pd = os.path.join(d, "probe_" + target)
    os.makedirs(pd, exist_ok=True)
    c_path, exe, out_bin = os.path.join(pd, "model.c"), os.path.join(pd, "probe"), os.path.join(pd, "values.bin")
    rc, log = run([ampc, "--explain=json", "--no-fuse", probe, "-t", target])
    if rc != 0:
        raise emulate.EmulationError("probe: ampc --explain=json: " + tail(log))
    pex = json.loads(log)
    key = lambda o: (o["line"], o["col"], o["op"], tuple(o["inputs"]), o["output"])  # noqa: E731
    if [key(o) for o in pex["ops"]] != [key(o) for o in explain["ops"]]:
        raise emulate.EmulationError("making every node an output changed ampc's ops or dtypes")
    probe_driver(os.path.join(pd, "driver.c"), in_name, names)
    for cmd, kw in (([ampc, probe, "-t", target, "--prefix=model", "-o", c_path,
                      "--header=" + os.path.join(pd, "model.h")], {}),
                    ([cc, "-std=c99", "-O2", "-I" + os.path.join(ROOT, "runtime", "include"), "-I" + pd,
                      os.path.join(pd, "driver.c"), c_path, lib, "-lm", "-lpthread", "-o", exe],
                     {"preexec_fn": limit_memory}),
                    ([exe, wts, os.path.join(d, "input.bin"), str(BATCH), out_bin], {"env": env, "timeout": RUN_TIMEOUT})):
        rc, log = run(cmd, **kw)
        if rc != 0:
            raise emulate.EmulationError("probe: %s: %s" % (os.path.basename(cmd[0]), tail(log)))
    with open(out_bin, "rb") as f:
        blob = f.read()
    by_out, off = {}, 0
    for v in names:
        (n,) = struct.unpack("<q", blob[off:off + 8])
        by_out[v] = torch.frombuffer(bytearray(blob[off + 8:off + 8 + 4 * n]), dtype=torch.float32)
        off += 8 + 4 * n
    if off != len(blob):
        raise emulate.EmulationError("probe: %d bytes read, %d written" % (off, len(blob)))
    forced = {line: by_out[v] for line, v in outs.items()}
    fe = emulate.Forced(emulate.trace(module, x), op_map, pex, forced)
    with torch.no_grad():
        fe.run(x)
    return judge_local(fe, forced)


def judge_local(fe, forced):
    """per node, ampc's value a against the emulation's e computed from
    ampc's own inputs.  In a low dtype (bf16, f16) both round the same real
    result once; their float32 intermediates may differ in the last bits
    (summation order), which can move the rounding to the neighbouring
    value and nothing more: every element must be equal or one ulp of the
    dtype apart, |a - e| <= ulp(max(|a|, |e|)) + LOCAL_F32 * max|e| (the
    second term: float32 noise where cancellation made an element much
    smaller than the terms summed), and at most LOCAL_FRACTION of them may
    differ, counted over elements and over distinct (emulation, ampc) value
    pairs, whichever is less: equal elements are one rounding repeated,
    which counting pairs discounts, while in a large tensor (224 x 224) the
    pairs that differ are nearly all distinct and those that agree are at
    most the dtype's few thousand values, which counting elements keeps
    in proportion.  A systematic error (truncation, a wrong dtype) makes
    both counts high.  In f32 every element may differ in its last bits:
    |a - e| <= LOCAL_F32 * max|e| elementwise.  Non-finite values must be
    the same on both sides."""
    worst_frac, worst_node, n_nodes, n_diff = 0.0, None, 0, 0
    for name, (e, dt) in fe.local.items():
        if dt is None:          # views only: nothing computed
            continue
        a = forced[int(name.rsplit(":", 1)[1])].reshape(e.shape).double()
        e = e.double()
        n_nodes += 1
        fin = torch.isfinite(e)
        if not torch.equal(fin, torch.isfinite(a)) or not torch.equal(a[~fin].nan_to_num(), e[~fin].nan_to_num()):
            return False, "statement %s (%s): non-finite values differ" % (name, dt)
        a, e = a[fin], e[fin]
        diff = (a - e).abs()
        scale = e.abs().max().item() if e.numel() else 0.0
        if dt in ("bf16", "f16"):
            bad = diff > ulp(torch.maximum(a.abs(), e.abs()), dt) + LOCAL_F32 * scale
            if bad.any():
                i = int(bad.nonzero()[0])
                return False, "statement %s (%s): ampc %r vs emulation %r, more than one ulp apart" % (
                    name, dt, a[i].item(), e[i].item())
            # only a low dtype's roundings make differences rare; in f32 the
            # last bits of almost every element differ
            # over distinct (emulation, ampc) pairs: a value repeated is one rounding repeated (a
            # channel constant after a dead ReLU, through a conv and batch_norm, is dozens of equal
            # elements rounding alike), not independent roundings; over elements: squeezenet1_1's
            # first conv at 224 x 224 in f16 has 0.06% of its 1.6M elements one ulp off, which are
            # 3.6% of its distinct pairs
            frac = min(distinct_pairs_differing(e, a), (a != e).double().mean().item()) if diff.numel() else 0.0
            n_diff += frac > 0
            if frac > worst_frac:
                worst_frac, worst_node = frac, name
        elif (diff > LOCAL_F32 * scale).any():
            return False, "statement %s (%s): max difference %.2e of max|value| %.2e > %.0e" % (
                name, dt, diff.max().item(), scale, LOCAL_F32)
    if n_nodes == 0:
        return False, "no statement was compared"
    ok = worst_frac <= LOCAL_FRACTION
    msg = "%d statements, %d with differences, at most %.2f%% of elements (%s)" % (
        n_nodes, n_diff, 100 * worst_frac, worst_node or "-")
    if not ok:
        msg += " > %.0f%%" % (100 * LOCAL_FRACTION)
    return ok, msg


def distinct_pairs_differing(e, a):
    """the share of distinct (e, a) value pairs whose two values differ.
    Both hold float32 values: each pair is one int64 of their bit patterns
    (zeros made +0.0 first, so that -0.0 and 0.0 are one value), which a
    one-dimensional unique sorts far faster than rows of two"""
    def bits(t):
        return (t.float() + 0.0).view(torch.int32).long() & 0xFFFFFFFF
    keys = torch.unique((bits(e) << 32) | bits(a))
    return (((keys >> 32) & 0xFFFFFFFF) != (keys & 0xFFFFFFFF)).double().mean().item()


def statement_names(amp_path):
    """{line number: the name a statement at that line defines}"""
    out = {}
    for i, line in enumerate(open(amp_path), 1):
        s = line.strip()
        if "=" in s and not s.startswith("#"):
            lhs = s.split("=", 1)[0].strip()
            if lhs.isidentifier():
                out[i] = lhs
    return out


def probe_amp(amp_path, op_map, probe_path):
    """the model with every statement torch2amp wrote made an output too, so
    that one run gives ampc's value of every statement; returns {line:
    output name}"""
    names = statement_names(amp_path)
    outs = {}
    for e in op_map["nodes"]:
        for line in e["lines"]:
            outs[line] = names[line]
    text = open(amp_path).read().splitlines()
    for i, line in enumerate(text):
        if line.startswith("  output "):
            have = [x.strip() for x in line[len("  output "):].split(",")]
            extra = [v for v in dict.fromkeys(outs.values()) if v not in have]
            text[i] = "  output " + ", ".join(have + extra)
            break
    else:
        raise RuntimeError("%s: no output line" % amp_path)
    with open(probe_path, "w") as f:
        f.write("\n".join(text) + "\n")
    return outs


def probe_driver(path, in_name, out_names):
    """a C driver for the probe model: like driver.c, with every output
    written to OUTPUT.bin in turn: its element count (int64), then its
    elements converted to f32"""
    up = lambda v: v.upper()  # noqa: E731
    c = ["/* generated by tests/torch/compare.py: the probe model's driver (see driver.c) */",
         "#include <stdio.h>", "#include <stdlib.h>", '#include "model.h"',
         "static void *grab(size_t n) { void *p = malloc(n ? n : 1); if (!p) { fprintf(stderr, \"out of memory\\n\"); exit(1); } return p; }",
         "int main(int argc, char **argv)", "{",
         "    if (argc != 5) { fprintf(stderr, \"usage: %s WEIGHTS INPUT BATCH OUTPUT\\n\", argv[0]); return 2; }",
         "    model_dims dims = {.B = strtol(argv[3], NULL, 10)};",
         "    void *storage = grab(MODEL_WEIGHTS_BYTES);",
         "    model_params params;",
         "    int rc = model_load_weights(argv[1], storage, MODEL_WEIGHTS_BYTES, &params);",
         "    if (rc != AMP_OK) { fprintf(stderr, \"%s\\n\", model_strerror(rc)); return 1; }",
         "    size_t in_bytes = MODEL_%s_NUMEL(dims.B) * amp_dtype_size(MODEL_%s_DTYPE);" % (up(in_name), up(in_name)),
         "    void *in = grab(in_bytes);",
         "    FILE *f = fopen(argv[2], \"rb\");",
         "    if (!f || fread(in, 1, in_bytes, f) != in_bytes) { fprintf(stderr, \"cannot read the input\\n\"); return 1; }",
         "    fclose(f);",
         "    model_inputs inputs = {.%s = in};" % in_name,
         "    model_outputs outputs;"]
    for v in out_names:
        c.append("    outputs.%s = grab(MODEL_%s_NUMEL(dims.B) * amp_dtype_size(MODEL_%s_DTYPE));" % (v, up(v), up(v)))
    c += ["    size_t arena_bytes = model_arena_bytes(&dims);",
          "    void *arena = grab(arena_bytes);",
          "    rc = model_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);",
          "    if (rc != AMP_OK) { fprintf(stderr, \"model_forward: %s\\n\", model_strerror(rc)); return 1; }",
          "    f = fopen(argv[4], \"wb\");",
          "    if (!f) return 1;"]
    for v in out_names:
        c += ["    {",
              "        int64_t n = (int64_t)MODEL_%s_NUMEL(dims.B);" % up(v),
              "        if (fwrite(&n, sizeof n, 1, f) != 1) return 1;",
              "    }",
              "    for (size_t i = 0; i < MODEL_%s_NUMEL(dims.B); i++) {" % up(v),
              "        float y = amp_load_as_f32(MODEL_%s_DTYPE, outputs.%s, i);" % (up(v), v),
              "        if (fwrite(&y, sizeof y, 1, f) != 1) return 1;",
              "    }"]
    c += ["    return fclose(f) != 0;", "}"]
    with open(path, "w") as f:
        f.write("\n".join(c) + "\n")


def ulp(x, dt):
    """the spacing of dtype dt at |x| (its subnormal spacing near zero)"""
    p, tiny = {"bf16": (8, -133), "f16": (11, -24), "f32": (24, -149)}[dt]
    _, e = torch.frexp(x.abs().float())
    return torch.pow(2.0, torch.clamp(e.double() - p, min=tiny))


def blocks_check(ampc, cc, lib, d, factory, shape, idt, in_name, out_name, wts, inp_bin, env):
    """torch2amp without --op-map writes repeated modules as blocks: that
    model, compiled for -t cpu, must give the flat model's output bit for bit
    (a block is inlined, so the ops are the same).  None when it has no block."""
    amp = os.path.join(d, "model_blocks.amp")
    rc, log = run([sys.executable, os.path.join(ROOT, "tools", "torch2amp"),
                   "%s:%s" % (os.path.join(HERE, "models.py"), factory), "-o", amp, "--name", "M",
                   "--input-shape", ",".join(str(s) for s in [1] + shape[1:]), "--input-dtype", idt])
    if rc != 0:
        return False, "export: " + tail(log)
    text = open(amp).read()
    blocks = [l.split()[1].split("(")[0] for l in text.splitlines() if l.startswith("block ")]
    if not blocks:
        return None
    instances = text.count("\n  module ")
    # its own directory: model.c includes "model.h", found beside it first
    bd = os.path.join(d, "blocks")
    os.makedirs(bd, exist_ok=True)
    c_path, exe, out_bin = os.path.join(bd, "model.c"), os.path.join(bd, "driver"), os.path.join(bd, "output.bin")
    rc, log = run([ampc, amp, "-t", "cpu", "--prefix=model", "-o", c_path,
                   "--header=" + os.path.join(d, "blocks", "model.h")])
    if rc == 0:
        rc, log = run([cc, "-std=c99", "-O2", "-I" + os.path.join(ROOT, "runtime", "include"),
                       "-I" + os.path.join(d, "blocks"), "-DIN=" + in_name, "-DIN_UP=" + in_name.upper(),
                       "-DOUT=" + out_name, "-DOUT_UP=" + out_name.upper(), os.path.join(HERE, "driver.c"),
                       c_path, lib, "-lm", "-lpthread", "-o", exe], preexec_fn=limit_memory)
    if rc == 0:
        rc, log = run([exe, wts, inp_bin, str(BATCH), out_bin], timeout=RUN_TIMEOUT, env=env)
    if rc != 0:
        return False, tail(log)
    with open(out_bin, "rb") as f, open(os.path.join(d, "output_cpu.bin"), "rb") as g:
        same = f.read() == g.read()
    return same, "%s (%d instances), -t cpu output %s the flat model's" % (
        ", ".join(blocks), instances, "bit-identical to" if same else "DIFFERENT from")


def report_steps(name, t0):
    """one line of the model's steps (STEPS), this process's peak memory so
    far (the references and the emulation) and the model's wall time"""
    import resource
    steps = "; ".join("%s %.1fs%s" % (n, t, " %.0fMB" % m if m is not None else "") for n, t, m in STEPS)
    print("     %-14s steps: %s; python peak %.0fMB; total %.0fs" % (
        name, steps, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, time.time() - t0))
    sys.stdout.flush()
    del STEPS[:]


def main(argv):
    global RUN_TIMEOUT, STEP_TIMEOUT
    table = dict(MODELS)
    if argv[1:2] == ["--zoo"]:
        table = ZOO
        RUN_TIMEOUT = 900            # vit_b_16 and BERT on a loaded machine
        STEP_TIMEOUT = 1800          # the C compiler on vgg16's or BERT's file, under load
        argv = argv[:1] + argv[2:]
    build = os.path.abspath(argv[0])
    wanted = argv[1:] or list(table)
    unknown = [w for w in wanted if w not in table and w not in ZOO]
    if unknown:
        print("torch: unknown model %s (known: %s)" % (", ".join(unknown), ", ".join(list(MODELS) + list(ZOO))))
        return 2
    table.update(ZOO)
    ampc = os.path.join(build, "ampc")
    lib = os.path.join(build, "libamprt.a")
    cc = os.environ.get("CC", "cc")
    for f in (ampc, lib):
        if not os.path.exists(f):
            print("torch: %s is missing (build first)" % f)
            return 1
    work = os.path.join(build, "torch-tests")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    # Two threads by default, so the drivers run the runtime's parallel
    # kernels and thread pool as a deployed model does; set AMPRT_THREADS
    # to override.
    env = dict(os.environ)
    env.setdefault("AMPRT_THREADS", "2")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in wanted:
        factory, shape, idt = table[name]
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        amp, wts = os.path.join(d, "model.amp"), os.path.join(d, "model.safetensors")
        t0 = time.time()
        rc, log = run([sys.executable, os.path.join(ROOT, "tools", "torch2amp"),
                       "%s:%s" % (os.path.join(HERE, "models.py"), factory), "-o", amp, "--weights", wts,
                       "--input-shape", ",".join(str(s) for s in [1] + shape[1:]), "--input-dtype", idt,
                       "--name", "M", "--op-map", os.path.join(d, "op-map.json")], step="export")
        if rc != 0:
            print("FAIL %-14s export: %s" % (name, tail(log)))
            failed += len(TARGETS)
            report_steps(name, t0)
            continue

        # the references, on the weights torch2amp wrote
        m = getattr(models, factory)()
        load_weights(m, wts)
        m.eval()
        g = torch.Generator().manual_seed(2024)
        if idt == "f32":
            x = torch.randn(shape, generator=g)
        else:
            emb = next(e for e in m.modules() if isinstance(e, torch.nn.Embedding))
            x = torch.randint(0, emb.num_embeddings, shape, generator=g)
        inp_bin = os.path.join(d, "input.bin")
        with open(inp_bin, "wb") as f:
            x = x.contiguous()
            f.write(ctypes.string_at(x.data_ptr(), x.numel() * x.element_size()))
        # grad stays enabled: PyTorch 1.13's TransformerEncoder would otherwise take its fused
        # fast path, which runs in f32 whatever CPU autocast says
        # PyTorch 1.13's CPU autocast cannot run every model (F.layer_norm of a bf16 input with f32
        # weights, as convnext's LayerNorm2d does, raises): -t cpu is then checked against f64 and the
        # emulation only, and says why
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                ref_bf16 = m(x).detach().double()
            bf16_error = None
        except RuntimeError as e:
            ref_bf16, bf16_error = None, str(e).splitlines()[0]
        m64 = getattr(models, factory)()
        load_weights(m64, wts)
        m64 = m64.double().eval()
        ref64 = m64(x.double() if idt == "f32" else x).detach()
        n_ops = count_statements(amp)
        in_name, out_name = io_names(amp)
        with open(os.path.join(d, "op-map.json")) as f:
            op_map = json.load(f)
        probe = os.path.join(d, "probe.amp")
        if name not in END_TO_END_ONLY:
            probe_outs = probe_amp(amp, op_map, probe)
            probe_names = list(dict.fromkeys(probe_outs.values()))
        exact_checked = False
        t_ref = time.time() - t0

        for target in TARGETS:
            t1 = time.time()
            c_path = os.path.join(d, "model_%s.c" % target)
            exe = os.path.join(d, "driver_%s" % target)
            out_bin = os.path.join(d, "output_%s.bin" % target)
            rc, log = run([ampc, amp, "-t", target, "--prefix=model", "-o", c_path,
                           "--header=" + os.path.join(d, "model.h")], step=target + " ampc")
            if rc == 0:
                rc, log = run([cc, "-std=c99", "-O2", "-I" + os.path.join(ROOT, "runtime", "include"), "-I" + d,
                               "-DIN=" + in_name, "-DIN_UP=" + in_name.upper(),
                               "-DOUT=" + out_name, "-DOUT_UP=" + out_name.upper(),
                               os.path.join(HERE, "driver.c"), c_path, lib, "-lm", "-lpthread", "-o", exe],
                              preexec_fn=limit_memory, step=target + " cc")
                if rc != 0 and "out of memory" in log:
                    log += ("\n(the C compiler ran out of memory: ampc's arena size nests <P>_MAX_(a, b) "
                            "macros that repeat their arguments, exponential in the nesting depth)")
            if rc == 0:
                rc, log = run([exe, wts, inp_bin, str(BATCH), out_bin], timeout=RUN_TIMEOUT, env=env,
                              step=target + " run")
            if rc != 0:
                print("FAIL %-14s %s: %s" % (name, target, tail(log)))
                failed += 1
                continue
            with open(out_bin, "rb") as f:
                y = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).double().reshape(ref64.shape)
            # the per-op emulation (emulate.py) with ampc's decisions for this target
            try:
                if name in END_TO_END_ONLY:
                    raise NotEmulated()
                rc, log = run([ampc, "--explain=json", "--no-fuse", amp, "-t", target])
                if rc != 0:
                    raise emulate.EmulationError("ampc --explain=json: " + tail(log))
                explain = json.loads(log)
                if not exact_checked:
                    # the interpreter, unrounded in f64, must be the module's function
                    y_ex, _ = emulate.emulate(m64, op_map, explain, x, exact=True)
                    e_ex = rel(y_ex.double(), ref64)
                    if not e_ex <= 1e-10:
                        raise emulate.EmulationError("the emulation without rounding differs from the module's "
                                                     "f64 forward by %.2e" % e_ex)
                    exact_checked = True
                y_emu, _ = emulate.emulate(m, op_map, explain, x)
                y_emu = y_emu.double()
                local_ok, local_msg = probe_check(ampc, cc, lib, d, target, probe, probe_outs, probe_names, in_name,
                                                  explain, op_map, m, x, wts, env)
            except emulate.EmulationError as e:
                print("FAIL %-14s %s: emulation: %s" % (name, target, e))
                failed += 1
                continue
            except NotEmulated:
                y_emu, local_ok, local_msg = y, True, "not emulated (end to end only)"
            tol = 4 * math.sqrt(n_ops) * UNIT[target]
            e64 = rel(y, ref64)
            ok = math.isfinite(e64) and e64 <= tol
            top64 = (y.argmax(-1) == ref64.argmax(-1)).sum().item()
            msg = "vs torch f64 %.2e" % e64
            e_emu = rel(y, y_emu)
            tol_emu = TOL_EMU_FACTOR * math.sqrt(n_ops) * UNIT[target]
            ok = ok and local_ok and math.isfinite(e_emu) and e_emu <= tol_emu
            top_emu = (y.argmax(-1) == y_emu.argmax(-1)).sum().item()
            msg = "per-op %s; vs emulation %.2e (tol %.2e), top-1 %d/%d; %s" % (
                local_msg, e_emu, tol_emu, top_emu, BATCH, msg)
            if target == "cpu" and ref_bf16 is None:
                msg = "no torch autocast bf16 reference (PyTorch 1.13 raises: %s), %s, tol %.2e; top-1 %d/%d with f64" % (
                    bf16_error, msg, tol, top64, BATCH)
            elif target == "cpu":
                eb = rel(y, ref_bf16)
                ok = ok and math.isfinite(eb) and eb <= tol
                topb = (y.argmax(-1) == ref_bf16.argmax(-1)).sum().item()
                msg = "vs torch autocast bf16 %.2e (torch bf16 vs f64 %.2e), %s" % (eb, rel(ref_bf16, ref64), msg)
                msg += ", tol %.2e; top-1 %d/%d with torch bf16, %d/%d with f64" % (tol, topb, BATCH, top64, BATCH)
            else:
                msg += ", tol %.2e; top-1 %d/%d with f64" % (tol, top64, BATCH)
            print("%s %-14s %s: %s (N=%d, %.1fs)" % ("ok  " if ok else "FAIL", name, target, msg, n_ops,
                                                   time.time() - t1 + (t_ref if target == "cpu" else 0)))
            sys.stdout.flush()
            if ok:
                passed += 1
            else:
                failed += 1
        r = blocks_check(ampc, cc, lib, d, factory, shape, idt, in_name, out_name, wts, inp_bin, env)
        if r is not None:
            print("%s %-14s blocks: %s" % ("ok  " if r[0] else "FAIL", name, r[1]))
            passed += r[0]
            failed += not r[0]
        report_steps(name, t0)
    print("torch: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
