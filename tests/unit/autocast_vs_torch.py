"""autocast_vs_torch.py AMPC: the built-in cpu-torch1.13 policy against
PyTorch 1.13's CPU autocast.

For each case, a one-op model is compiled with
`AMPC -t cpu --policy=cpu-torch1.13 --autocast --explain=json -` and the
op's result dtype (or the fact that it is an error) is compared with what
the same call gives inside torch.autocast("cpu", dtype=torch.bfloat16).
Composite ops (tensordot, linalg_multi_dot, chain_matmul, the recurrent
cells, bilinear, einsum, matmul) are among the cases: PyTorch decides them
by their inner ops.  Run by tests/unit/test_autocast_torch.c; exits 77
(skip) when torch cannot be imported or is not 1.13, whose rules the
policy holds.  KNOWN lists the differences that are ampc's choice.
"""
import json
import subprocess
import sys
import warnings

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("autocast_vs_torch.py: SKIP: torch is not installed")
    sys.exit(77)
if not torch.__version__.startswith("1.13"):
    print(f"autocast_vs_torch.py: SKIP: torch {torch.__version__}, not 1.13")
    sys.exit(77)

A = sys.argv[1]
warnings.filterwarnings("ignore")  # chain_matmul's deprecation note
# ampc computes where PyTorch 1.13 raises: its mixed-dtype norm kernels
KNOWN = {
    ("layer_norm(x, 4, w, b)", "bf16"): "ampc runs a bf16 input with f32 weight and bias in bf16 (PyTorch 2.x's "
                                        "mixed-type kernel); 1.13's CPU kernel raises",
    ("group_norm(x, 2, w, b)", "bf16"): "the same for group_norm",
    ("linalg_multi_dot(x, y, z)", "bf16"): "ampc casts every operand to bf16, as the mm calls would; 1.13's "
                                           "multi_dot checks that the dtypes agree first and raises",
    ("chain_matmul(x, y, z)", "bf16"): "the same (chain_matmul is multi_dot in 1.13)",
}
TD = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64, "i64": torch.int64}
RT = {v: k for k, v in TD.items()}


def mk(dt, shape):
    if dt == "i64":
        return torch.randint(0, 3, shape, dtype=TD[dt])
    return torch.rand(shape, dtype=TD[dt]) + 0.5


cases = []


def case(expr, fn, **inputs):
    cases.append((expr, fn, inputs))


for dt in ["f32", "bf16"]:
    # the lower_precision_fp list, and ops built from it
    case("conv1d(x, w)", lambda x, w: F.conv1d(x, w), x=(dt, [1, 2, 5]), w=("f32", [3, 2, 2]))
    case("conv2d(x, w)", lambda x, w: F.conv2d(x, w), x=(dt, [1, 2, 5, 5]), w=("f32", [3, 2, 2, 2]))
    case("conv3d(x, w)", lambda x, w: F.conv3d(x, w), x=(dt, [1, 2, 4, 4, 4]), w=("f32", [3, 2, 2, 2, 2]))
    case("linear(x, w, b)", lambda x, w, b: F.linear(x, w, b), x=(dt, [2, 3]), w=("f32", [4, 3]), b=("f32", [4]))
    case("matmul(x, y)", lambda x, y: torch.matmul(x, y), x=(dt, [2, 3]), y=("f32", [3, 4]))
    case("mm(x, y)", lambda x, y: torch.mm(x, y), x=(dt, [2, 3]), y=("f32", [3, 4]))
    case("bmm(x, y)", lambda x, y: torch.bmm(x, y), x=(dt, [2, 2, 3]), y=("f32", [2, 3, 4]))
    case("addmm(b, x, y)", lambda b, x, y: torch.addmm(b, x, y), b=("f32", [2, 4]), x=(dt, [2, 3]), y=("f32", [3, 4]))
    case("baddbmm(b, x, y)", lambda b, x, y: torch.baddbmm(b, x, y), b=("f32", [2, 4]), x=(dt, [5, 2, 3]), y=("f32", [5, 3, 4]))
    case("addbmm(b, x, y)", lambda b, x, y: torch.addbmm(b, x, y), b=("f32", [2, 4]), x=(dt, [5, 2, 3]), y=("f32", [5, 3, 4]))
    case("einsum(\"ij,jk->ik\", x, y)", lambda x, y: torch.einsum("ij,jk->ik", x, y), x=(dt, [2, 3]), y=("f32", [3, 4]))
    case("tensordot(x, y, 1)", lambda x, y: torch.tensordot(x, y, 1), x=(dt, [2, 3]), y=("f32", [3, 4]))
    case("tensordot(x, y)", lambda x, y: torch.tensordot(x, y), x=(dt, [2, 3, 4]), y=("f32", [3, 4, 5]))
    case("linalg_multi_dot(x, y, z)", lambda x, y, z: torch.linalg.multi_dot([x, y, z]), x=(dt, [2, 3]), y=("f32", [3, 4]), z=("f32", [4, 2]))
    case("chain_matmul(x, y, z)", lambda x, y, z: torch.chain_matmul(x, y, z), x=(dt, [2, 3]), y=("f32", [3, 4]), z=("f32", [4, 2]))
    case("rnn_tanh_cell(x, h0, wi, wh, bi, bh)", lambda x, h0, wi, wh, bi, bh: torch.rnn_tanh_cell(x, h0, wi, wh, bi, bh),
         x=(dt, [3, 4]), h0=("f32", [3, 5]), wi=("f32", [5, 4]), wh=("f32", [5, 5]), bi=("f32", [5]), bh=("f32", [5]))
    case("rnn_relu_cell(x, h0, wi, wh)", lambda x, h0, wi, wh: torch.rnn_relu_cell(x, h0, wi, wh),
         x=(dt, [3, 4]), h0=("f32", [3, 5]), wi=("f32", [5, 4]), wh=("f32", [5, 5]))
    case("gru_cell(x, h0, wi, wh)", lambda x, h0, wi, wh: torch.gru_cell(x, h0, wi, wh),
         x=(dt, [3, 4]), h0=("f32", [3, 5]), wi=("f32", [15, 4]), wh=("f32", [15, 5]))
    case("h, c = lstm_cell(x, h0, c0, wi, wh)", lambda x, h0, c0, wi, wh: torch.lstm_cell(x, (h0, c0), wi, wh)[0],
         x=(dt, [3, 4]), h0=("f32", [3, 5]), c0=("f32", [3, 5]), wi=("f32", [20, 4]), wh=("f32", [20, 5]))
    case("bilinear(x, y, w, b)", lambda x, y, w, b: F.bilinear(x, y, w, b), x=(dt, [2, 3]), y=("f32", [2, 4]), w=("f32", [5, 3, 4]), b=("f32", [5]))
    # 1.13's fp32 list: conv_transpose among it, unlike 2.x
    case("conv_transpose1d(x, w)", lambda x, w: F.conv_transpose1d(x, w), x=(dt, [1, 2, 5]), w=("f32", [2, 3, 2]))
    case("conv_transpose2d(x, w)", lambda x, w: F.conv_transpose2d(x, w), x=(dt, [1, 2, 5, 5]), w=("f32", [2, 3, 2, 2]))
    case("conv_transpose3d(x, w)", lambda x, w: F.conv_transpose3d(x, w), x=(dt, [1, 2, 3, 3, 3]), w=("f32", [2, 3, 2, 2, 2]))
    case("avg_pool3d(x, 2)", lambda x: F.avg_pool3d(x, 2), x=(dt, [1, 2, 4, 4, 4]))
    case("max_pool3d(x, 2)", lambda x: F.max_pool3d(x, 2), x=(dt, [1, 2, 4, 4, 4]))
    case("adaptive_avg_pool3d(x, 2)", lambda x: F.adaptive_avg_pool3d(x, 2), x=(dt, [1, 2, 4, 4, 4]))
    case("reflection_pad1d(x, 2)", lambda x: torch._C._nn.reflection_pad1d(x, [2, 2]), x=(dt, [2, 3, 4]))
    case("prod(x)", lambda x: torch.prod(x), x=(dt, [2, 3]))
    case("cdist(x, y)", lambda x, y: torch.cdist(x, y), x=(dt, [2, 3]), y=("f32", [4, 3]))
    case("trace(x)", lambda x: torch.trace(x), x=(dt, [3, 3]))
    case("inverse(x)", lambda x: torch.inverse(x), x=(dt, [3, 3]))
    case("mse_loss(x, y)", lambda x, y: F.mse_loss(x, y), x=(dt, [2, 3]), y=("f32", [2, 3]))
    case("l1_loss(x, y)", lambda x, y: F.l1_loss(x, y), x=(dt, [2, 3]), y=("f32", [2, 3]))
    case("kl_div(x, y)", lambda x, y: F.kl_div(x, y), x=(dt, [2, 3]), y=("f32", [2, 3]))
    case("nll_loss(x, t)", lambda x, t: F.nll_loss(x, t), x=(dt, [2, 3]), t=("i64", [2]))
    case("cross_entropy(x, t)", lambda x, t: F.cross_entropy(x, t), x=(dt, [2, 3]), t=("i64", [2]))
    case("binary_cross_entropy_with_logits(x, y)", lambda x, y: F.binary_cross_entropy_with_logits(x, y), x=(dt, [2, 3]), y=("f32", [2, 3]))
    case("quantile(x, 0.3, 1)", lambda x: torch.quantile(x, 0.3, 1), x=(dt, [2, 3]))
    # the promote list
    case("cat(x, y, dim=1)", lambda x, y: torch.cat((x, y), 1), x=(dt, [2, 3]), y=("bf16", [2, 1]))
    case("stack(x, y)", lambda x, y: torch.stack((x, y)), x=(dt, [2, 3]), y=("bf16", [2, 3]))
    # not listed: they follow their inputs
    case("prelu(x, w)", lambda x, w: F.prelu(x, w), x=(dt, [2, 3]), w=("f32", [3]))
    case("linalg_vecdot(x, y)", lambda x, y: torch.linalg.vecdot(x, y), x=(dt, [2, 3]), y=(dt, [2, 3]))
    case("relu(x)", lambda x: F.relu(x), x=(dt, [2, 3]))
    case("softmax(x, 1)", lambda x: F.softmax(x, 1), x=(dt, [2, 3]))
    case("log_softmax(x, 1)", lambda x: F.log_softmax(x, 1), x=(dt, [2, 3]))
    case("gelu(x)", lambda x: F.gelu(x), x=(dt, [2, 3]))
    case("sum(x)", lambda x: torch.sum(x), x=(dt, [2, 3]))
    case("add(x, y)", lambda x, y: torch.add(x, y), x=(dt, [2, 3]), y=("bf16", [2, 3]))
    case("max_pool2d(x, 2)", lambda x: F.max_pool2d(x, 2), x=(dt, [1, 2, 4, 4]))
    case("avg_pool2d(x, 2)", lambda x: F.avg_pool2d(x, 2), x=(dt, [1, 2, 4, 4]))
    case("local_response_norm(x, 3)", lambda x: F.local_response_norm(x, 3), x=(dt, [2, 4, 5]))
    case("local_response_norm(x, 2)", lambda x: F.local_response_norm(x, 2), x=(dt, [2, 4, 3, 3]))
    case("v, i = max(x, 1)", lambda x: torch.max(x, 1)[0], x=(dt, [2, 3]))
    case("v, m = var_mean(x, 1)", lambda x: torch.var_mean(x, 1)[0], x=(dt, [2, 3]))
    case("layer_norm(x, 4, w, b)", lambda x, w, b: F.layer_norm(x, [4], w, b), x=(dt, [2, 4]), w=("f32", [4]), b=("f32", [4]))
    case("group_norm(x, 2, w, b)", lambda x, w, b: F.group_norm(x, 2, w, b), x=(dt, [2, 4, 3]), w=("f32", [4]), b=("f32", [4]))

bad = 0
for expr, fn, inputs in cases:
    decls = "".join(f"  input {n}: {d}[{', '.join(map(str, s))}]\n" for n, (d, s) in inputs.items())
    head, _, rest = expr.partition(" = ")
    multi = "," in head and "(" not in head and rest
    first = head.split(",")[0].strip() if multi else "out"
    body = expr if multi else f"out = {expr}"
    src = f"model M() {{\n{decls}  {body}\n  output {first}\n}}\n"
    p = subprocess.run([A, "-t", "cpu", "--policy=cpu-torch1.13", "--autocast", "--explain=json", "-"],
                       input=src, capture_output=True, text=True)
    torch.manual_seed(0)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want = RT[fn(**{n: mk(d, s) for n, (d, s) in inputs.items()}).dtype]
    except Exception as e:
        want = "error: " + str(e).splitlines()[0][:100]
    if p.returncode == 0:
        got = json.loads(p.stdout)["ops"][-1]["output"]
    else:
        got = "error: " + (p.stderr.splitlines() or [f"exit status {p.returncode}"])[0][:140]
    x_dt = next(iter(inputs.values()))[0]
    ok = got == want or (got.startswith("error") and want.startswith("error"))
    if not ok and (expr, x_dt) in KNOWN:
        continue
    if not ok:
        bad += 1
        print(f"MISMATCH {expr} with {inputs}:\n   ampc  {got}\n   torch {want}")
print(f"autocast_vs_torch.py: {len(cases)} cases against torch {torch.__version__} CPU autocast, {bad} mismatches")
sys.exit(1 if bad else 0)
