"""tests/onnx/node_tests.py BUILD [SUBSTRING]: ONNX's own node tests for the ops
tools/onnx2amp maps.

python3-onnx ships the generators of ONNX's backend node tests
(onnx.backend.test.case.node: a one-node model, its inputs and the outputs
ONNX's reference computes) though not their data files; this collects the
cases of every op in onnx2amp's table, converts each model with onnx2amp
--no-autocast (every op in its inputs' dtype, as the graph says), compiles
it with BUILD/ampc -t cpu --emit=main, runs that program on the case's
inputs (each file in its input's declared dtype), and compares with the
expected outputs (the case's rtol and atol, as onnx's backend runner does;
rtol at least 1e-5 for f32's summation order).  An input that a mapping
needs as a constant (a shape, Clip's bounds, Slice's starts) is given as
an initializer when the first attempt says so, as are Gather's indices
when some are negative (the compiled lookups take [0, n); onnx2amp wraps
constant ones as ONNX does).  A case onnx2amp refuses (an attribute ampc
cannot express, a dtype it lacks) is counted as not mapped, with its
message; a case it converts must compile, run and match.

With SUBSTRING, only the cases whose name holds it.  Prints ok/FAIL per
case, the not-mapped ones and "onnx nodes: P passed, F failed, N not
mapped"; exits 1 on a failure.
"""
import importlib.machinery
import os
import subprocess
import sys
import tempfile

import numpy as np

# onnx 1.12's case generators use aliases numpy 1.24 removed
for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object), ("complex", complex)):
    if _alias not in np.__dict__:
        setattr(np, _alias, _type)
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import onnx.backend.test.case.node as node_cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
o2a = importlib.machinery.SourceFileLoader("onnx2amp", os.path.join(ROOT, "tools", "onnx2amp")).load_module()


# each input file holds its declared dtype's raw little-endian elements
STORED = {"f32": "<f4", "f64": "<f8", "f16": "<f2", "i64": "<i8", "i32": "<i4", "bool": "u1"}


def run(cmd, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def as_constants(model, inputs, keep):
    """the model with every graph input but the first `keep` made an
    initializer holding its case's value"""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    moved = list(g.input)[keep:]
    for vi, arr in zip(moved, inputs[keep:]):
        g.initializer.append(numpy_helper.from_array(np.asarray(arr), vi.name))
    del g.input[keep:]
    return m, inputs[:keep]


def negative_indices(model, inputs):
    """whether an index input of Gather holds a negative index: the
    compiled lookups take indices in [0, n) (the runtime has no integer
    arithmetic to wrap them), so such a case gives its indices as
    constants, which onnx2amp counts from the end as ONNX does"""
    names = [vi.name for vi in model.graph.input]
    for n in model.graph.node:
        if n.op_type == "Gather" and n.input[1] in names:
            idx = np.asarray(inputs[names.index(n.input[1])])
            if idx.dtype.kind in "iu" and np.any(idx < 0):
                return True
    return False


def convert(model, inputs):
    """(converter, outputs, model inputs) after trying the inputs as inputs,
    then, when a mapping needs constants, all but the first as constants;
    raises the last attempt's ConvertError"""
    if len(inputs) > 1 and negative_indices(model, inputs):
        m, ins = as_constants(model, inputs, 1)
        cv = o2a.Converter(m, "Node")
        return cv, cv.run(), ins
    try:
        cv = o2a.Converter(model, "Node")
        return cv, cv.run(), inputs
    except o2a.ConvertError as e:
        if "must be a constant" not in str(e) or len(inputs) < 2:
            raise
    m, ins = as_constants(model, inputs, 1)
    cv = o2a.Converter(m, "Node")
    return cv, cv.run(), ins


def main(argv):
    build = argv[0]
    ampc = os.path.join(build, "ampc")
    lib = os.path.join(build, "libamprt.a")
    cc = os.environ.get("CC", "cc")
    cases = node_cases.collect_testcases("")
    mapped = set(o2a.OPS)
    passed = failed = unmapped = 0
    reasons = {}
    with tempfile.TemporaryDirectory(prefix="ampc-onnx-node-") as d:
        for case in sorted(cases, key=lambda c: c.name):
            ops = {n.op_type for n in case.model.graph.node}
            if not ops <= mapped or case.name.endswith("_expanded") or \
                    (argv[1:] and argv[1] not in case.name):
                continue
            inputs, expected = case.data_sets[0]
            try:
                cv, outs, ins = convert(case.model, list(inputs))
                text = cv.text(outs, case.name, autocast=False)
            except o2a.ConvertError as e:
                unmapped += 1
                reasons[case.name] = str(e)
                continue
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            amp = os.path.join(d, "node.amp")
            with open(amp, "w") as f:
                f.write(text)
            o2a.write_safetensors(os.path.join(d, "w.safetensors"), [(a, arr) for a, k, arr in cv.params])
            for i, (arr, (_, _, dt)) in enumerate(zip(ins, cv.inputs)):
                np.asarray(arr).astype(STORED[dt]).tofile(os.path.join(d, "in%d.bin" % i))
            # ampc --emit=main: the model and a main() reading each input from
            # a file and writing each output (floating ones as f32)
            rc, log = run([ampc, amp, "-t", "cpu", "--emit=main", "-o", os.path.join(d, "run.c")])
            if rc == 0:
                rc, log = run([cc, "-std=c99", "-O1", "-I" + os.path.join(ROOT, "runtime", "include"),
                               os.path.join(d, "run.c"), lib, "-lm", "-lpthread", "-o", os.path.join(d, "run")])
            if rc == 0:
                args = (["w.safetensors"] if cv.params else []) + ["in%d.bin" % i for i in range(len(ins))] + \
                    ["out%d.bin" % i for i in range(len(outs))] + ["B=1"]
                p = subprocess.run([os.path.join(d, "run")] + args, cwd=d, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=60)
                rc, log = p.returncode, p.stdout.decode("utf-8", "replace")
            if rc != 0:
                print("FAIL %s: %s" % (case.name, "\n    ".join(log.strip().splitlines()[-6:])))
                failed += 1
                continue
            ok, worst = True, ""
            for i, want in enumerate(expected):
                kind = np.asarray(want).dtype
                stored = "<f4" if kind.kind == "f" else "u1" if kind == np.bool_ else kind.newbyteorder("<")
                got = np.fromfile(os.path.join(d, "out%d.bin" % i), dtype=stored).astype(np.float64)
                want = np.asarray(want, dtype=np.float64).reshape(-1)
                rtol = max(case.rtol, 1e-5)
                good = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=case.atol, equal_nan=True)
                if not good:
                    ok = False
                    worst = "output %d: max |diff| %.3g" % (i, np.max(np.abs(got - want)) if got.shape == want.shape
                                                              else float("nan"))
            print("%s %s%s" % ("ok  " if ok else "FAIL", case.name, "" if ok else ": " + worst))
            passed += ok
            failed += not ok
    for name in sorted(reasons):
        print("not mapped %s: %s" % (name, reasons[name]))
    print("onnx nodes: %d passed, %d failed, %d not mapped" % (passed, failed, unmapped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
