#!/usr/bin/python3
"""tests/ops/torch_ref.py: the ops of tests/ops/*.amp recomputed by PyTorch.

    /usr/bin/python3 tests/ops/torch_ref.py MODEL=DUMP [MODEL=DUMP ...]

Each DUMP is the safetensors file an `ampc --emit=check` program writes with
--dump=FILE: input.NAME, param.NAME (in their declared dtypes),
output.NAME (the model's results) and reference.NAME (the same model
evaluated entirely in f64).  For every MODEL (the stem of tests/ops/MODEL.amp)
one function below maps the inputs and parameters, converted to float64
(integers and bools keep their dtype), to the model's outputs, written
as the PyTorch expression each .amp line stands for.  Every reference.NAME
is compared with it:

  * floating outputs: normwise relative error ||ref - torch|| / ||torch||
    (the 2-norm over all elements; the absolute error when ||torch|| is 0)
    at most RTOL = 1e-10.  Both sides compute in f64 from the same
    inputs, so they differ by roundings of order 1e-16 times the
    condition of the op; 1e-10 leaves room for the condition numbers of the
    well-conditioned linear algebra here, while a wrong kernel, argument or
    shape misses it by many orders of magnitude.  NaN and inf must sit at
    the same places on both sides.
  * integer and bool outputs (indices, pivots, info): exactly.
  * shapes: exactly.
  * every reference.NAME needs its torch expression, and vice versa.

Outputs only defined up to sign (singular and eigen vectors) are compared
after fixing each vector's sign (see `fix_sign`).

Prints one line per dump: "ok MODEL" or "FAIL MODEL" followed by what
differs; exits 1 when any dump fails.  No safetensors package is needed:
the format (an 8-byte little-endian header length, a JSON header, raw
little-endian data) is read with struct and json.
"""
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

RTOL = 1e-10

_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
    "I64": torch.int64, "I32": torch.int32, "BOOL": torch.bool, "U8": torch.uint8,
}


def read_safetensors(path):
    """{key: tensor} from a safetensors file, in the stored dtypes."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        dt = _DTYPES[info["dtype"]]
        lo, hi = info["data_offsets"]
        shape = info["shape"]
        raw = bytearray(data[lo:hi])
        if hi == lo:
            t = torch.empty(shape, dtype=dt)
        else:
            # bf16 and f16 bits are reinterpreted as they are, not converted
            t = torch.frombuffer(raw, dtype=dt).clone().reshape(shape)
        out[key] = t
    return out


def as_f64(t):
    return t.to(torch.float64) if t.is_floating_point() else t


def fix_sign(v, dim=-2):
    """v with each vector along `dim` (a column for dim=-2) multiplied by the
    sign of its entry of largest magnitude: singular and eigen vectors are
    unique only up to sign."""
    idx = v.abs().argmax(dim=dim, keepdim=True)
    s = torch.sign(torch.gather(v, dim, idx))
    s[s == 0] = 1
    return v * s


MODELS = {}


def model(fn):
    MODELS[fn.__name__.rstrip("_")] = fn  # bool_ is model bool
    return fn


# ---- the models ------------------------------------------------------------

@model
def unary(t):
    x, h = t["x"], t["h"]
    q = x * x + 0.25
    return dict(
        o_exp=torch.exp(x), o_log=torch.log(q), o_sqrt=torch.sqrt(q), o_rsqrt=torch.rsqrt(q),
        o_reciprocal=torch.reciprocal(q), o_sigmoid=torch.sigmoid(x), o_tanh=torch.tanh(x),
        o_acos=torch.acos(x * 0.875), o_asin=torch.asin(x * 0.875), o_cosh=torch.cosh(x), o_sinh=torch.sinh(x),
        o_tan=torch.tan(x), o_erfinv=torch.erfinv(x * 0.875), o_expm1=torch.expm1(x), o_log10=torch.log10(q),
        o_log2=torch.log2(q), o_log1p=torch.log1p(x * 0.5),
        o_gelu=F.gelu(x * 3), o_gelu_tanh=F.gelu(x * 3, approximate="tanh"), o_silu=F.silu(x * 3),
        o_softplus=F.softplus(x * 3), o_softplus_bt=F.softplus(x * 30, beta=2, threshold=5),
        o_clamp=torch.clamp(x, -0.5, 0.3), o_clamp_min=torch.clamp(x, min=0), o_clamp_max=x.clamp(max=0.1),
        o_pow_s=torch.pow(q, 2.5), o_pow_i=torch.pow(x, 3), o_pow_t=torch.pow(q, x), o_pow_neg=q.pow(-0.5),
        o_neg=torch.neg(x), o_uminus=-x, o_relu=F.relu(x), o_relu_m=x.relu(),
        o_dropout=F.dropout(x, p=0.3, training=False),
        o_exp64=torch.exp(h), o_tanh64=torch.tanh(h),
    )


@model
def binary(t):
    x, y, r, col, s, h, k = t["x"], t["y"], t["r"], t["col"], t["s"], t["h"], t["k"]
    q = y * y + 0.5
    return dict(
        o_add=x + y, o_sub=x - y, o_mul=x * y, o_div=x / q,
        o_add_call=torch.add(x, r), o_sub_call=torch.sub(col, r), o_mul_call=x.mul(col), o_div_call=torch.div(r, q),
        o_add_s=x + 2, o_rsub_s=2 - x, o_mul_s=x * 0.25, o_rdiv_s=1.5 / q, o_div_s=x / 4,
        o_add_0d=x + s, o_mul_0d=s * y, o_prom64=x + h, o_prom_int=k + x, o_int_div=k / 2,
        o_lit64=h * 0.1, o_lit64_add=h + 0.3, o_chain=(x - y) * (x + 1.5) / (q + r * r),
        o_max=torch.maximum(x, y), o_max_b=torch.maximum(col, r),
        o_atan2=torch.atan2(x, y), o_atan2_b=torch.atan2(r, col),
        o_addcmul=torch.addcmul(x, y, r, value=0.5), o_addcmul1=torch.addcmul(x, col, r),
        o_addcdiv=torch.addcdiv(x, y, q, value=-2), o_addcdiv1=torch.addcdiv(r, col, q),
    )


@model
def bool_(t):
    c, x, y, r = t["c"], t["x"], t["y"], t["r"]
    return dict(
        o_where=torch.where(c, x, y), o_where_b=torch.where(c, r, y),
        o_where_s1=torch.where(c, x, torch.tensor(0.5)), o_where_s2=torch.where(c, torch.tensor(-1.0), y),
        o_sigmoid=torch.sigmoid(c.double()), o_exp=torch.exp(c.double()), o_add=c + x,
    )


@model
def reduce(t):
    x, m, h = t["x"], t["m"], t["h"]
    out = dict(
        o_sum=torch.sum(x), o_sum_d1=torch.sum(x, 1), o_sum_neg_keep=torch.sum(x, dim=-1, keepdim=True),
        o_sum_d0=x.sum(0), o_sum_f64=torch.sum(x, dim=2, dtype=torch.float64),
        o_mean=torch.mean(x), o_mean_d2=torch.mean(x, 2), o_mean_keep=torch.mean(x, dim=0, keepdim=True),
        o_mean_f64=torch.mean(x, dtype=torch.float64),
        o_prod=torch.prod(x + 1.5), o_prod_d1=torch.prod(x, 1), o_prod_keep=torch.prod(x, dim=-1, keepdim=True),
        o_cumsum=torch.cumsum(x, 1), o_cumsum_neg=torch.cumsum(x, dim=-1), o_cumsum_f64=torch.cumsum(x, dim=0),
        o_cumprod=torch.cumprod(x, 2), o_cumprod_0=torch.cumprod(x + 1, dim=0),
        o_lse=torch.logsumexp(x * 5, 2), o_lse_keep=torch.logsumexp(x, dim=0, keepdim=True),
        o_lse_neg=torch.logsumexp(h * 40, -1), o_trace=torch.trace(m),
        o_norm=torch.norm(x), o_norm_p1=torch.norm(x, p=1, dim=1), o_norm_p3=torch.norm(x, 3, -1, True),
        o_norm_p05=torch.norm(x, p=0.5, dim=2),
        o_vnorm=torch.linalg.vector_norm(x), o_vnorm_d=torch.linalg.vector_norm(x, ord=1.5, dim=1, keepdim=True),
        o_vnorm_0=torch.linalg.vector_norm(x, ord=0, dim=-1), o_vnorm_f64=torch.linalg.vector_norm(x, dim=0),
        o_mnorm=torch.linalg.matrix_norm(x), o_mnorm_keep=torch.linalg.matrix_norm(m, keepdim=True),
        o_fro=torch.linalg.vector_norm(x, 2, dim=1), o_fro_keep=torch.linalg.vector_norm(x, 2, dim=-1, keepdim=True),
    )
    for name, (v, i) in dict(s=torch.sort(x, dim=1), sd=torch.sort(x, dim=0, descending=True), sl=x.sort(),
                             sn=torch.sort(h, -1, True)).items():
        out[name + "_v"], out[name + "_i"] = v, i
    return out


@model
def shape(t):
    x, u, v, a, w, z = t["x"], t["u"], t["v"], t["a"], t["w"], t["z"]
    return dict(
        o_flatten=torch.flatten(x), o_flatten1=torch.flatten(x, 1), o_flatten_r=torch.flatten(u, start_dim=1, end_dim=-2),
        o_reshape=x.reshape(-1, 6), o_reshape2=x.reshape(4, -1, 3), o_view=x.view(-1),
        o_permute=x.permute(2, 0, 1), o_permute_neg=x.permute(-1, 1, 0),
        o_transpose=x.transpose(0, -1), o_transpose12=x.transpose(1, 2),
        o_squeeze=u.squeeze(), o_squeeze1=u.squeeze(1), o_squeeze_neg=u.squeeze(-1), o_squeeze_noop=x.squeeze(1),
        o_unsqueeze=x.unsqueeze(0), o_unsqueeze_neg=x.unsqueeze(-1), o_unsqueeze2=x.unsqueeze(2),
        o_expand=v.expand(2, 3, 4), o_expand_keep=u.expand(-1, 5, -1, 2),
        o_narrow=x.narrow(2, 1, 2), o_narrow_neg=x.narrow(-2, 0, 2),
        o_slice=x[:, :, 1:4:2], o_slice_kw=x[:, -2:], o_slice_end=x[..., :3:2], o_slice_big=x[:, :, 1:100],
        o_cat=torch.cat((x, a), dim=1), o_cat3=torch.cat((x, x, x)), o_cat_neg=torch.cat((x, x), dim=-1),
        o_stack=torch.stack((x, x)), o_stack_neg=torch.stack((x, x, x), dim=-1), o_stack1=torch.stack((a, a), dim=1),
        o_pad=F.pad(x, (1, 2)), o_pad4=F.pad(x, (1, 0, 2, 1), value=0.5), o_pad6=F.pad(x, (1, 1, 0, 1, 2, 0)),
        o_pad_neg=F.pad(x, (-1, 2)),
        o_refl1=torch._C._nn.reflection_pad1d(x, [2, 2]), o_refl2=torch._C._nn.reflection_pad2d(w, [2] * 4),
        o_repl1=torch._C._nn.replication_pad1d(x, [3, 3]), o_repl2=torch._C._nn.replication_pad2d(w, [1] * 4),
        o_repl3=torch._C._nn.replication_pad3d(z, [2] * 6),
    )


# ---- the comparison --------------------------------------------------------

def compare(name, ref, want):
    """None when ref (the dump's reference.NAME) matches want, else why not."""
    if not isinstance(want, torch.Tensor):
        want = torch.tensor(want)
    if tuple(ref.shape) != tuple(want.shape):
        return "%s: shape %s, torch %s" % (name, list(ref.shape), list(want.shape))
    if not ref.is_floating_point() or not want.is_floating_point():
        if ref.is_floating_point() != want.is_floating_point():
            return "%s: dtype %s, torch %s" % (name, ref.dtype, want.dtype)
        differ = int((ref.to(torch.int64) != want.to(torch.int64)).sum())
        if differ:
            return "%s: %d of %d values differ (first: %s vs torch %s)" % (
                name, differ, ref.numel(), ref.flatten()[:8].tolist(), want.flatten()[:8].tolist())
        return None
    r = ref.to(torch.float64)
    w = want.detach().to(torch.float64)
    bad = (torch.isnan(r) != torch.isnan(w)) | (torch.isinf(r) & (r != w)) | (torch.isinf(w) & (r != w))
    if bool(bad.any()):
        return "%s: %d non-finite values differ" % (name, int(bad.sum()))
    fin = torch.isfinite(w)
    d = (r[fin] - w[fin]).norm().item()
    nw = w[fin].norm().item()
    rel = d / nw if nw > 0 else d
    if not rel <= RTOL:
        return "%s: relative error %.3e > %.0e (max |diff| %.3e)" % (
            name, rel, RTOL, (r[fin] - w[fin]).abs().max().item())
    return None


def check(model_name, path):
    st = read_safetensors(path)
    t = {}
    for key, v in st.items():
        kind, _, name = key.partition(".")
        if kind in ("input", "param"):
            t[name] = as_f64(v)
    refs = {k.partition(".")[2]: v for k, v in st.items() if k.startswith("reference.")}
    fn = MODELS.get(model_name)
    if fn is None:
        return ["no function %s in torch_ref.py" % model_name]
    with torch.no_grad():
        want = fn(t)
    errors = []
    for name in refs:
        if name not in want:
            errors.append("%s: no torch expression" % name)
    for name in want:
        if name not in refs:
            errors.append("%s: not an output of the model" % name)
            continue
        e = compare(name, refs[name], want[name])
        if e:
            errors.append(e)
    return errors


def main(argv):
    torch.set_default_dtype(torch.float64)
    failed = 0
    for arg in argv:
        label, _, path = arg.partition("=")
        model_name = label.split(":")[0]
        try:
            errors = check(model_name, path)
        except Exception as ex:  # a torch expression that does not run is a failure too
            errors = ["%s: %s" % (type(ex).__name__, ex)]
        if errors:
            failed += 1
            print("FAIL %s" % label)
            for e in errors:
                print("    " + e)
        else:
            print("ok   %s" % label)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
