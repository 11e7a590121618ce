#!/usr/bin/python3
"""tests/ops/torch_ref.py: the ops of tests/ops/*.amp recomputed by PyTorch.

    /usr/bin/python3 tests/ops/torch_ref.py MODEL[:TARGET[:autocast]]=DUMP ...

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
  * the model's own floating outputs (output.NAME) loosely: OUTPUT_RTOL.
  * several dumps of one model (MODEL:cpu, MODEL:tpu, ...): the references
    must be the same bits in each, the f64 evaluation not depending on the
    target the model is compiled for.

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

import warnings

import torch
import torch.nn.functional as F

RTOL = 1e-10

# The model's own outputs (output.NAME) are compared too, at a tolerance
# that only catches gross errors (a wrong kernel gives errors of order one):
# the low-precision runs (label MODEL:TARGET:autocast) in bf16/f16 at 5e-2,
# else by the output's dtype.  Finer judgement of the model's rounding is
# the check program's own job.
OUTPUT_RTOL = {"autocast": 5e-2, torch.float64: 1e-12, torch.float32: 1e-4,
               torch.bfloat16: 5e-2, torch.float16: 1e-2}

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
        o_hardswish=F.hardswish(x * 5),
        o_softplus=F.softplus(x * 3), o_softplus_bt=F.softplus(x * 30, beta=2, threshold=5),
        o_clamp=torch.clamp(x, -0.5, 0.3), o_clamp_min=torch.clamp(x, min=0), o_clamp_max=x.clamp(max=0.1),
        o_pow_s=torch.pow(q, 2.5), o_pow_i=torch.pow(x, 3), o_pow_t=torch.pow(q, x), o_pow_neg=q.pow(-0.5),
        o_neg=torch.neg(x), o_uminus=-x, o_relu=F.relu(x), o_relu_m=x.relu(),
        o_dropout=F.dropout(x, p=0.3, training=False),
        o_exp64=torch.exp(h), o_tanh64=torch.tanh(h),
    )


@model
def activations(t):
    x, h = t["x"], t["h"]
    return dict(
        o_relu6=F.relu6(x * 8), o_hardsigmoid=F.hardsigmoid(x * 5), o_hardtanh=F.hardtanh(x * 2),
        o_hardtanh_mm=F.hardtanh(x * 8, min_val=-2, max_val=5), o_hardtanh_pos=F.hardtanh(x, -0.25, 0.5),
        o_leaky_relu=F.leaky_relu(x), o_leaky_relu_s=F.leaky_relu(x, negative_slope=0.2),
        o_leaky_relu_neg=F.leaky_relu(x, -0.5),
        o_elu=F.elu(x * 5), o_elu_a=F.elu(x * 5, alpha=1.5), o_selu=F.selu(x * 5), o_celu=F.celu(x * 5),
        o_celu_a=F.celu(x * 5, alpha=0.3), o_mish=F.mish(x * 5), o_softsign=F.softsign(x * 5),
        o_logsigmoid=F.logsigmoid(x * 20), o_selu64=F.selu(h * 5), o_celu64=F.celu(h * 5, alpha=3),
    )


@model
def math_(t):
    x, n, h = t["x"], t["n"], t["h"]
    return dict(
        o_sin=torch.sin(x * 4), o_cos=torch.cos(x * 4), o_atan=torch.atan(x * 4), o_erf=torch.erf(x * 2),
        o_erfc=torch.erfc(x * 3), o_sign=torch.sign(x), o_floor=torch.floor(x * 4.5), o_ceil=torch.ceil(x * 4.5),
        o_round=torch.round(x * 4.5), o_round_half=torch.round(torch.floor(x * 8) * 0.5),
        o_trunc=torch.trunc(x * 4.5), o_frac=torch.frac(x * 4.5), o_sin_m=x.sin(),
        o_sin_int=torch.sin(n.double()), o_erf_int=torch.erf(n.double()), o_cos64=torch.cos(h * 4), o_round64=torch.round(h * 4.5),
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
def statistics(t):
    x, h, c, n = t["x"], t["h"], t["c"].bool(), t["n"]
    f = torch.floor(x * 2)
    two = dict(o_maxd=torch.max(x, 1), o_mind=x.min(dim=-1, keepdim=True), o_maxt=torch.max(f, 2), o_mint=f.min(0),
               o_vm=torch.var_mean(x, 1), o_vm_c=torch.var_mean(x, dim=2, correction=0, keepdim=True),
               o_sm=torch.std_mean(h, 1, unbiased=False), o_sm_all=torch.std_mean(x))
    names = dict(o_maxd=("v", "i"), o_mind=("v", "i"), o_maxt=("v", "i"), o_mint=("v", "i"),
                 o_vm=("v", "m"), o_vm_c=("v", "m"), o_sm=("s", "m"), o_sm_all=("s", "m"))
    pairs = {f"{k}_{names[k][j]}": r[j] for k, r in two.items() for j in range(2)}
    return dict(
        **pairs,
        o_amax=torch.amax(x), o_amax_d1=torch.amax(x, 1), o_amin_keep=torch.amin(x, dim=-1, keepdim=True),
        o_amax_ties=torch.amax(f, 2), o_max=torch.max(x), o_min=x.min(), o_max64=torch.max(h),
        o_argmax=torch.argmax(x), o_argmax_d2=torch.argmax(x, 2), o_argmin_keep=torch.argmin(x, dim=1, keepdim=True),
        o_argmax_all_keep=torch.argmax(x, keepdim=True), o_argmin_ties=torch.argmin(f, -1),
        o_var=torch.var(x), o_var_d1=torch.var(x, 1), o_var_biased=torch.var(x, dim=2, unbiased=False, keepdim=True),
        o_var_c=torch.var(x, 0, correction=2), o_std=torch.std(x), o_std_d=x.std(-1),
        o_std_c0=torch.std(h, dim=1, correction=0),
        o_all=torch.all(c), o_any_d=torch.any(c, 1), o_all_x=torch.all(f, dim=2, keepdim=True),
        o_any_n=torch.any(n, 0), o_all_n=n.all(),
    )


@model
def binary_math(t):
    x, y, r, h = t["x"], t["y"], t["r"], t["h"]
    return dict(
        o_minimum=torch.minimum(x, y), o_minimum_b=torch.minimum(r, x),
        o_fmod=torch.fmod(x * 5, y + 2), o_fmod_neg=torch.fmod(x * 5, y - 2), o_fmod_s=torch.fmod(x * 5, 1.5),
        o_fmod_m=(x * 5).fmod(-0.75),
        o_rem=torch.remainder(x * 5, y + 2), o_rem_neg=torch.remainder(x * 5, y - 2),
        o_rem_b=torch.remainder(x * 5, r + 2), o_rem_s=torch.remainder(x * 5, 1.5),
        o_rem_sneg=torch.remainder(x * 5, -0.75), o_rem64=torch.remainder(h * 5, 0.75),
        o_clamp_min=torch.clamp_min(x, 0.25), o_clamp_max=x.clamp_max(-0.125),
        o_lerp=torch.lerp(x, y, 0.25), o_lerp_hi=x.lerp(y, 0.75), o_lerp_t=torch.lerp(x, y, r),
        o_lerp64=torch.lerp(h, h * h, 1.5), o_glu=F.glu(x), o_glu_d0=F.glu(r, 0),
        o_rpow=torch.pow(2, x * 3), o_rpow_f=torch.pow(0.5, y),
    )


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


@model
def syntax(t):
    x, y, i, m, w, bias = t["x"], t["y"], t["i"], t["m"], t["0.weight"], t["stem-1.bias"]
    a, b = x.chunk(2, dim=1)
    p, q, r = torch.split(y, [1, 2, 3], dim=2)
    s0, s1 = x.split(3, dim=-1)
    u0, u1, u2, u3 = (x + 1).unbind(1)
    tv, ti = x.topk(3, dim=1)
    sv, si = torch.topk(y, 2, largest=False)
    kv, ki = x.kthvalue(2, dim=-1)
    kkv, kki = torch.kthvalue(y, 4, dim=1, keepdim=True)
    return dict(
        o_topk_v=tv, o_topk_i=ti, o_topk_sv=sv, o_topk_si=si, o_kth_v=kv, o_kth_i=ki, o_kth_kv=kkv, o_kth_ki=kki,
        o_gt=x > 0.25, o_le=x <= y, o_lt_rev=0 < x, o_eq_int=i == 2, o_ne=x != y, o_ge_int=i >= 1,
        o_logic=(x > 0) & m | ~(y < 0), o_masked=torch.where(x > y, x, y),
        o_pow=x ** 2 - 2 ** 3 * y, o_neg_pow=-x ** 2,
        o_index=x[:, 1], o_index_neg=x[:, -1, 2:5], o_ellipsis=x[..., 1:3], o_step=x[:, ::2],
        o_step_range=x[:, :, 1::2], o_new_axis=x[:, None, 0], o_new_last=x[..., None],
        o_cat=torch.cat([x, y], dim=1), o_stack=torch.stack((x, y, x), dim=-1),
        o_pool=F.adaptive_avg_pool2d(x, (2, 2)), o_reshape=x.reshape((4 // 2, -1)),
        o_chunk_a=a, o_chunk_b=b, o_split_q=q, o_split_r=r, o_split_int=s1 * 2, o_unbind=u2,
        o_t=w.t(), o_rev=x.permute(2, 1, 0), o_linear=F.linear(x, w, bias), o_matmul_T=x @ w.T,
        o_size=x.reshape(-1, x.size(1) * x.shape[2] // 2, 2), o_contiguous=x.contiguous(),
    )


@model
def index(t):
    x, src, w = t["x"], t["src"], t["emb.weight"]
    return dict(
        o_emb=F.embedding(t["tok"], w), o_emb_pad=F.embedding(t["tok2"], w, padding_idx=1),
        o_isel1=torch.index_select(x, 1, t["sel1"]), o_isel0=x.index_select(0, t["sel0"]),
        o_isel2=torch.index_select(x, 2, t["sel2"]),
        o_gather1=torch.gather(x, 1, t["g1"]), o_gather2=torch.gather(x, 2, t["g2"]), o_gather0=torch.gather(x, 0, t["g0"]),
        o_gather_neg=torch.gather(x, -1, t["gn"]), o_isel_neg=torch.index_select(x, -2, t["seln"]),
        o_scatter1=torch.scatter_add(x, 1, t["s1"], t["src1"]), o_scatter2=x.scatter_add(2, t["s2"], t["src2"]),
        o_icopy0=torch.index_copy(x, 0, t["c0"], src.narrow(0, 0, 1)),
        o_icopy1=torch.index_copy(x, 1, t["c1"], src.narrow(1, 0, 1)),
    )


@model
def conv(t):
    x1, x2, x3, t1 = t["x1"], t["x2"], t["x3"], t["t1"]
    w = lambda n: t[n + ".weight"]
    b = lambda n: t[n + ".bias"]
    return dict(
        o_c1=F.conv1d(x1, w("c1"), b("c1")), o_c1_s=F.conv1d(x1, w("c1"), b("c1"), stride=2, padding=1),
        o_c1_d=F.conv1d(x1, w("c1"), None, 1, 2, 2), o_c1_g=F.conv1d(x1, w("c1g"), groups=2, padding=1),
        o_c2=F.conv2d(x2, w("c2"), b("c2")), o_c2_s=F.conv2d(x2, w("c2"), b("c2"), stride=2, padding=1),
        o_c2_d=F.conv2d(x2, w("c2"), dilation=2, padding=2), o_c2_g=F.conv2d(x2, w("c2g"), stride=2, groups=2),
        o_c2_dw=F.conv2d(x2, w("c2dw"), groups=4, padding=1),
        o_c2_same=F.conv2d(x2, w("c2s"), padding="same"), o_c2_same_d=F.conv2d(x2, w("c2s"), padding="same", dilation=2),
        o_c2_valid=F.conv2d(x2, w("c2s"), padding="valid"),
        o_c1_same=F.conv1d(x1, w("c1"), b("c1"), padding="same", dilation=3),
        o_c3=F.conv3d(x3, w("c3"), b("c3")), o_c3_s=F.conv3d(x3, w("c3"), b("c3"), stride=2, padding=1),
        o_c3_d=F.conv3d(x3, w("c3"), dilation=2, padding=1),
        o_ct1=F.conv_transpose1d(x1, w("ct1"), b("ct1")),
        o_ct1_s=F.conv_transpose1d(x1, w("ct1"), b("ct1"), stride=2, padding=1, output_padding=1),
        o_ct1_g=F.conv_transpose1d(x1, w("ct1g"), groups=2, dilation=2),
        o_ct2=F.conv_transpose2d(x2, w("ct2"), b("ct2")),
        o_ct2_s=F.conv_transpose2d(x2, w("ct2"), b("ct2"), stride=2, padding=1, output_padding=1),
        o_ct2_g=F.conv_transpose2d(x2, w("ct2g"), stride=3, groups=4, dilation=2, output_padding=2),
        o_ct3=F.conv_transpose3d(x3, w("ct3"), b("ct3")),
        o_ct3_s=F.conv_transpose3d(x3, w("ct3"), b("ct3"), stride=2, padding=1, output_padding=1),
        o_tbc=torch.conv_tbc(t1, w("tbc"), b("tbc")), o_tbc_p=torch.conv_tbc(t1, w("tbc"), b("tbc"), 1),
        o_c2_pd=F.conv2d(x2, w("c2s"), stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
        o_c3_pd=F.conv3d(x3, w("c3"), b("c3"), stride=(1, 2, 1), padding=[1, 0, 2], dilation=(2, 1, 1)),
        o_ct2_pd=F.conv_transpose2d(x2, w("ct2"), b("ct2"), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2)),
        o_ct3_pd=F.conv_transpose3d(x3, w("ct3"), stride=(1, 2, 2), padding=(0, 1, 0), output_padding=(0, 1, 0)),
    )


@model
def pool(t):
    x, z = t["x"], t["z"]
    return dict(
        o_mp=F.max_pool2d(x, 2), o_mp_s=F.max_pool2d(x, 3, stride=2, padding=1), o_mp_d=F.max_pool2d(x, 3, 1, 1, 2),
        o_mp_c=F.max_pool2d(x, 2, stride=2, ceil_mode=True), o_mp_cp=F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        o_ap=F.avg_pool2d(x, 2), o_ap_s=F.avg_pool2d(x, 3, stride=2, padding=1),
        o_ap_nopad=F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
        o_ap_c=F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        o_ap_cn=F.avg_pool2d(x, 2, stride=3, padding=1, ceil_mode=True, count_include_pad=False),
        o_ap_div=F.avg_pool2d(x, 2, divisor_override=3),
        o_aap=F.adaptive_avg_pool2d(x, 3), o_aap1=F.adaptive_avg_pool2d(x, 1), o_aap_up=F.adaptive_avg_pool2d(x, 9),
        o_mp3=F.max_pool3d(z, 2), o_mp3_s=F.max_pool3d(z, 3, stride=2, padding=1, ceil_mode=True),
        o_mp3_d=F.max_pool3d(z, 2, stride=1, dilation=2),
        o_ap3=F.avg_pool3d(z, 2), o_ap3_s=F.avg_pool3d(z, 3, stride=2, padding=1, count_include_pad=False),
        o_ap3_c=F.avg_pool3d(z, 2, ceil_mode=True, divisor_override=5),
        o_aap3=F.adaptive_avg_pool3d(z, 2), o_aap3_4=F.adaptive_avg_pool3d(z, 4),
        o_mp_pd=F.max_pool2d(x, kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(1, 2)),
        o_ap_pd=F.avg_pool2d(x, (2, 3), stride=(2, 1), padding=(1, 1), ceil_mode=True),
        o_mp3_pd=F.max_pool3d(z, (2, 1, 3), padding=(1, 0, 1)),
        o_ap3_pd=F.avg_pool3d(z, (3, 2, 2), stride=(1, 2, 3), count_include_pad=False),
        o_aap_pd=F.adaptive_avg_pool2d(x, (4, 2)), o_aap3_pd=F.adaptive_avg_pool3d(z, (2, 3, 1)),
    )


@model
def upsample(t):
    x1, x2, x3 = t["x1"], t["x2"], t["x3"]
    nn = torch._C._nn  # aten's .vec forms: (input, output_size, [align_corners,] scale_factors)
    return dict(
        o_n1=nn.upsample_nearest1d(x1, [8], None), o_n1_s=nn.upsample_nearest1d(x1, None, [2.5]),
        o_n1_down=nn.upsample_nearest1d(x1, [3], None),
        o_n2=nn.upsample_nearest2d(x2, [7, 7], None), o_n2_s=nn.upsample_nearest2d(x2, None, [1.5, 1.5]),
        o_n3=nn.upsample_nearest3d(x3, [5] * 3, None), o_n3_s=nn.upsample_nearest3d(x3, None, [2.0] * 3),
        o_l1=nn.upsample_linear1d(x1, [9], False, None), o_l1_ac=nn.upsample_linear1d(x1, [9], True, None),
        o_l1_s=nn.upsample_linear1d(x1, None, False, [1.75]), o_l1_down=nn.upsample_linear1d(x1, [3], True, None),
        o_b2=nn.upsample_bilinear2d(x2, [7, 7], False, None), o_b2_ac=nn.upsample_bilinear2d(x2, [6, 6], True, None),
        o_b2_s=nn.upsample_bilinear2d(x2, None, False, [2.0, 2.0]), o_b2_down=nn.upsample_bilinear2d(x2, [3, 3], False, None),
        o_c2=nn.upsample_bicubic2d(x2, [7, 7], False, None), o_c2_ac=nn.upsample_bicubic2d(x2, [8, 8], True, None),
        o_c2_s=nn.upsample_bicubic2d(x2, None, False, [1.5, 1.5]),
        o_t3=nn.upsample_trilinear3d(x3, [5] * 3, False, None), o_t3_ac=nn.upsample_trilinear3d(x3, [4] * 3, True, None),
        o_t3_s=nn.upsample_trilinear3d(x3, None, False, [2.0] * 3),
    )


@model
def resample(t):
    y, x, z = t["y"], t["x"], t["z"]
    i = F.interpolate
    return dict(
        o_mp1=F.max_pool1d(y, 2), o_mp1_s=F.max_pool1d(y, 3, stride=2, padding=1, ceil_mode=True),
        o_mp1_d=F.max_pool1d(y, 2, 1, 0, 3),
        o_ap1=F.avg_pool1d(y, 3), o_ap1_s=F.avg_pool1d(y, 3, 2, 1, count_include_pad=False),
        o_ap1_c=F.avg_pool1d(y, 2, stride=2, padding=1, ceil_mode=True),
        o_aap1=F.adaptive_avg_pool1d(y, 4), o_aap1_up=F.adaptive_avg_pool1d(y, 11),
        o_amp1=F.adaptive_max_pool1d(y, 4), o_amp1_up=F.adaptive_max_pool1d(y, 11),
        o_amp2=F.adaptive_max_pool2d(x, 3), o_amp2_1=F.adaptive_max_pool2d(x, 1),
        o_i_n1=i(y, size=13), o_i_n1_s=i(y, scale_factor=1.5),
        o_i_l1=i(y, size=7, mode="linear"), o_i_l1_ac=i(y, scale_factor=2.0, mode="linear", align_corners=True),
        o_i_n2=i(x, scale_factor=2.0), o_i_n2_sz=i(x, 7, mode="nearest"),
        o_i_b2=i(x, size=7, mode="bilinear"), o_i_b2_ac=i(x, scale_factor=1.5, mode="bilinear", align_corners=True),
        o_i_b2_rs=i(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        o_i_c2=i(x, size=6, mode="bicubic"), o_i_c2_s=i(x, scale_factor=2.0, mode="bicubic", align_corners=False),
        o_i_n3=i(z, size=5), o_i_t3=i(z, scale_factor=2.0, mode="trilinear"),
        o_i_t3_ac=i(z, size=4, mode="trilinear", align_corners=True),
    )


@model
def rearrange(t):
    x, c, p, v = t["x"], t["c"], t["p"], t["v"]
    return dict(
        o_select=torch.select(x, 1, 2), o_select_neg=x.select(-1, -2), o_select_v=torch.select(v, 0, 3),
        o_flip=torch.flip(x, (1, -1)), o_flip_b=x.flip(0),
        o_roll=torch.roll(x, 2, 3), o_roll_neg=torch.roll(x, -1, dims=1), o_roll_big=x.roll(7, 2),
        o_roll_flat=torch.roll(v, 2),
        o_repeat=x.repeat(1, 2, 1, 3), o_repeat_new=v.repeat(2, 3), o_repeat_front=x.repeat(2, 1, 1, 1, 1),
        o_tile=torch.tile(x, (2, 1)), o_tile_v=v.tile(3),
        o_pshuf=F.pixel_shuffle(c, 2), o_punshuf=F.pixel_unshuffle(p, 2), o_cshuf=F.channel_shuffle(c, 4),
        o_cat10=torch.cat([v] * 10), o_cat9=torch.cat([x] * 9, dim=2), o_stack9=torch.stack([v] * 9, dim=1),
    )


@model
def masks(t):
    x, m, r, c = t["x"], t["m"], t["r"], t["c"]
    return dict(
        o_fill=torch.masked_fill(x, m, 0.5), o_fill_neg=x.masked_fill(r, -1e4), o_fill_int=torch.masked_fill(x, m, 3),
        o_fill_bcast=torch.masked_fill(x, c, 2.25),
    )


@model
def int_lists(t):
    x, g, w, b = t["x"], t["g"], t["w"], t["bias"]
    B = x.shape[0]
    i = F.interpolate
    v_var, v_mean = torch.var_mean(x, (1, 2), keepdim=True)
    return dict(
        o_sum=torch.sum(x, dim=(1, 3)), o_sum_keep=x.sum((-1, 1), keepdim=True), o_mean=torch.mean(x, (1, 2)),
        o_mean_keep=torch.mean(x, dim=[0, 2, 3], keepdim=True), o_amax=torch.amax(x, dim=(1, 2)),
        o_amin=torch.amin(x, (0, -1), keepdim=True), o_var=torch.var(x, (1, 3)),
        o_std=torch.std(x, dim=(2, 3), correction=0), o_lse=torch.logsumexp(x, (1, 2)),
        o_norm=torch.norm(x, 1, (1, 3)), o_vnorm=torch.linalg.vector_norm(x, ord=3, dim=(0, 2)),
        o_fro=torch.frobenius_norm(x, (2, 3)), v_var=v_var, v_mean=v_mean,
        o_i_size=i(g, size=(5, 7)), o_i_scale=i(g, scale_factor=(2, 3)),
        o_i_bil=i(g, size=(6, 8), mode="bilinear", align_corners=True),
        o_i_bil_s=i(g, scale_factor=(1.5, 2.5), mode="bilinear"),
        o_i_bic=i(g, scale_factor=(2.0, 1.5), mode="bicubic"),
        o_up=torch._C._nn.upsample_nearest2d(g, [3, 9], None),
        o_roll=torch.roll(x, (1, -2), (1, 3)), o_roll_kw=torch.roll(g, shifts=(2, 1, 3), dims=(0, 2, 3)),
        o_flip=torch.flip(x, dims=(0, 2)), o_perm=x.permute(dims=(0, 3, 1, 2)), o_rep=x.repeat((1, 2, 1, 3)),
        o_tile=torch.tile(g, (2, 1, 3)), o_pad=F.pad(x, pad=(1, 2, 0, 3)),
        o_rpad=torch._C._nn.reflection_pad2d(g, (1, 2, 0, 3)), o_rpad1=torch._C._nn.reflection_pad1d(w, (3, 1)),
        o_ppad=torch._C._nn.replication_pad2d(g, [2, 0, 1, 3]),
        o_ln=F.layer_norm(x, (4, 5), w, b), o_ln3=F.layer_norm(x, [3, 4, 5], eps=0.001),
        o_unpool=torch.ops.aten.max_unpool2d(t["u"], torch.sort(t["key"], dim=2)[1][:, :, :8].reshape(2, 3, 2, 4), [3, 5]),
        o_full=torch.full([B, 2], 1.5), o_full_i=torch.full((2, B), 7), o_zeros=torch.zeros([B, 3]),
        o_ones=torch.ones((B, 2, 2), dtype=torch.float64), o_full_like=torch.full_like(x, -0.5),
    )


@model
def instance_norm(t):
    y, x, z, w, b = t["y"], t["x"], t["z"], t["w"], t["b"]
    return dict(
        o_in1=F.instance_norm(y), o_in2=F.instance_norm(x, weight=w, bias=b),
        o_in2_eps=F.instance_norm(x, weight=w, eps=0.1), o_in3=F.instance_norm(z),
        o_in_stats=F.instance_norm(x, t["mean"], t["var"], w, b, use_input_stats=False),
    )


@model
def construct(t):
    x, i, k = t["x"], t["i"], t["k"]
    B = x.shape[0]
    return dict(
        o_zeros=torch.zeros(B, 4), o_ones=torch.ones(2, 3, dtype=torch.float64),
        o_ones_h=torch.ones(5, dtype=torch.bfloat16), o_full=torch.full((5,), 2.5), o_full_i=torch.full((4,), 7),
        o_full_b=torch.full((3,), True), o_zeros_like=torch.zeros_like(x),
        o_full_2d=torch.full((3, 3), 0.25), o_full_b2=torch.full((2, 5), -2),
        o_ones_like=torch.ones_like(x, dtype=torch.float16), o_full_like=torch.full_like(x, -1.5),
        o_full_like_i=torch.full_like(k, 3),
        o_arange=torch.arange(5), o_arange2=torch.arange(2, 11, 3), o_arange_f=torch.arange(1.0, 2.0, 0.125),
        o_arange_neg=torch.arange(1.5, -2, -0.75),
        o_linspace=torch.linspace(0.0, 1.0, 7), o_linspace_neg=torch.linspace(3, -2.5, 10, dtype=torch.float64),
        o_linspace_h=torch.linspace(-1.0, 1.0, 9, dtype=torch.float16),
        o_linspace_i=torch.linspace(0, 10, 4, dtype=torch.int64),
        o_eye=torch.eye(3), o_eye_rect=torch.eye(B, 4, dtype=torch.float64), o_one_hot=F.one_hot(i, 5),
        o_triu=torch.triu(x), o_triu_d=x.triu(1), o_tril=torch.tril(x, -1), o_tril_i=torch.tril(k, 2),
    )


@model
def norm(t):
    x, x4, h = t["x"], t["x4"], t["h"]
    rm, rv = t["bn.running_mean"], t["bn.running_var"]
    return dict(
        o_ln=F.layer_norm(x, [6], t["ln.weight"], t["ln.bias"]), o_ln_plain=F.layer_norm(x, [6]),
        o_ln_eps=F.layer_norm(x * 0.0625, [6], t["ln.weight"], eps=0.001),
        o_gn=F.group_norm(x4, 2, t["gn.weight"], t["gn.bias"]), o_gn1=F.group_norm(x4, 1),
        o_gn4=F.group_norm(x, 4, t["gn.weight"], t["gn.bias"], eps=0.1),
        o_bn=F.batch_norm(x4, rm, rv, t["bn.weight"], t["bn.bias"]), o_bn_plain=F.batch_norm(x, rm, rv, eps=0.5),
        o_sm=F.softmax(x, dim=1), o_sm_neg=F.softmax(x * 4, -1), o_sm0=F.softmax(x, 0), o_sm64=F.softmax(x, dim=2),
        o_lsm=F.log_softmax(x, dim=1), o_lsm_neg=F.log_softmax(h * 30, -1), o_lsm64=F.log_softmax(x, 2),
        o_lrn=F.local_response_norm(x4, 2), o_lrn3=F.local_response_norm(x * 3, 3, alpha=0.5, beta=0.6, k=2.0),
        o_lrn5=F.local_response_norm(t["x5"], 4, alpha=0.01),
        o_lrn64=F.local_response_norm(h.unsqueeze(1).expand(-1, 3, -1), 5, beta=1.5),
    )


@model
def loss(t):
    x, x4, pr, a, b, w, bw = t["x"], t["x4"], t["pr"], t["a"], t["b"], t["w"], t["bw"]
    tt, t2, t3, t4, t5, t7, tk, t6 = t["t"], t["t2"], t["t3"], t["t4"], t["t5"], t["t7"], t["tk"], t["t6"]
    xk = t["xk"]
    lp = F.log_softmax(x, 1)
    p = F.softmax(pr, 1)
    sig = torch.sigmoid
    return dict(
        o_nll=F.nll_loss(lp, tt), o_nll_sum=F.nll_loss(lp, tt, reduction="sum"),
        o_nll_none=F.nll_loss(lp, tt, reduction="none"), o_nll_w=F.nll_loss(lp, tt, w),
        o_nll_ign=F.nll_loss(lp, tt, ignore_index=1),
        o_nll_w_ign_sum=F.nll_loss(lp, tt, weight=w, ignore_index=2, reduction="sum"),
        o_nll2d=F.nll_loss(x4, t4), o_nll2d_w=F.nll_loss(x4, t4, w, ignore_index=0, reduction="sum"),
        o_nll2d_none=F.nll_loss(x4, t4, reduction="none"),
        o_ce=F.cross_entropy(x, t2), o_ce_sum=F.cross_entropy(x, t2, reduction="sum"),
        o_ce_none=F.cross_entropy(x, t2, reduction="none"), o_ce_w=F.cross_entropy(x, t2, w),
        o_ce_ign=F.cross_entropy(x, t2, ignore_index=0), o_ce_ls=F.cross_entropy(x, t2, label_smoothing=0.25),
        o_ce_ls_w=F.cross_entropy(x, t2, w, label_smoothing=0.125, ignore_index=2),
        o_ce_ls_none=F.cross_entropy(x, t2, reduction="none", label_smoothing=0.5),
        o_ce_k=F.cross_entropy(xk, t6, w), o_ce_4=F.cross_entropy(x4, t7, reduction="none"),
        o_ce_prob=F.cross_entropy(x, p), o_ce_prob_w=F.cross_entropy(x, p, w, reduction="sum", label_smoothing=0.25),
        o_ce_prob_none=F.cross_entropy(x, p, reduction="none"),
        o_nll_t3=F.nll_loss(lp, t3, reduction="none", ignore_index=0),
        o_ce_t5=F.cross_entropy(x, t5, w, reduction="none", ignore_index=1),
        o_mse=F.mse_loss(a, b), o_mse_sum=F.mse_loss(a, b, reduction="sum"), o_mse_none=F.mse_loss(a, b, reduction="none"),
        o_l1=F.l1_loss(a, b), o_l1_none=F.l1_loss(a, b, reduction="none"),
        o_sl1=F.smooth_l1_loss(a, b), o_sl1_b=F.smooth_l1_loss(a * 2, b, beta=0.5, reduction="none"),
        o_huber=F.huber_loss(a * 2, b), o_huber_d=F.huber_loss(a * 2, b, delta=0.5, reduction="sum"),
        o_kl=F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1)),
        o_kl_sum=F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), reduction="sum"),
        o_kl_log=F.kl_div(a, b, reduction="none", log_target=True),
        o_kl_bm=F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), reduction="batchmean"),
        o_bce=F.binary_cross_entropy(sig(a), sig(b * 3)),
        o_bce_w=F.binary_cross_entropy(sig(a), sig(b), bw, reduction="none"),
        o_bce_sum=F.binary_cross_entropy(sig(a), sig(b), reduction="sum"),
        o_bcel=F.binary_cross_entropy_with_logits(a * 4, sig(b)),
        o_bcel_w=F.binary_cross_entropy_with_logits(a * 4, sig(b), bw, reduction="none"),
        o_pois=F.poisson_nll_loss(a, torch.exp(b)),
        o_pois_lin=F.poisson_nll_loss(torch.exp(a), torch.exp(b) * 3, False, True, reduction="none"),
        o_pois_full=F.poisson_nll_loss(a, torch.exp(b) * 3, full=True, reduction="sum"),
        o_pois_eps=F.poisson_nll_loss(a * a, b * b, log_input=False, eps=0.01),
        o_soft=F.soft_margin_loss(a, b), o_soft_none=F.soft_margin_loss(a * 3, b, reduction="none"),
        o_hinge=F.hinge_embedding_loss(a, b), o_hinge_m=F.hinge_embedding_loss(a, b, margin=0.5, reduction="none"),
    )


@model
def matmul(t):
    g = t.__getitem__
    x, x2, m34, m45, m56, m62 = g("x"), g("x2"), g("m34"), g("m45"), g("m56"), g("m62")
    v4, v5, v3, b45, b53, b1, b2 = g("v4"), g("v5"), g("v3"), g("b45"), g("b53"), g("b1"), g("b2")
    c35, c5, bb, t3, t4, y1, y2 = g("c35"), g("c5"), g("bb"), g("t3"), g("t4"), g("y1"), g("y2")
    fw, fb, bw, bb_ = g("fc.weight"), g("fc.bias"), g("bl.weight"), g("bl.bias")
    return dict(
        o_linear=F.linear(x, fw, fb), o_linear_nb=F.linear(x2, fw), o_linear_1d=F.linear(v4, fw, fb),
        o_mat_vv=torch.matmul(v4, v4), o_mat_vm=torch.matmul(v4, m45), o_mat_mv=m34 @ v4, o_mat_mm=m34 @ m45,
        o_mat_bm=x @ m45, o_mat_bb=torch.matmul(b1, b2), o_mat_bv=torch.matmul(x, v4), o_mat_vb=torch.matmul(v4, b45),
        o_mm=torch.mm(m34, m45), o_bmm=torch.bmm(b45, b53), o_addmm=torch.addmm(c35, m34, m45),
        o_addmm_ab=torch.addmm(c5, m34, m45, beta=0.5, alpha=2),
        o_baddbmm=torch.baddbmm(bb, b45, b53, beta=-1, alpha=0.25), o_baddbmm1=torch.baddbmm(v3, b45, b53),
        o_addbmm=torch.addbmm(m34.t(), x.transpose(1, 2), b53, alpha=3),
        o_addbmm1=torch.addbmm(v3, b45.transpose(1, 2), bb),
        o_addmv=torch.addmv(v3, m34, v4, beta=2, alpha=-1), o_addmv1=torch.addmv(v3, m34, v4),
        o_addr=torch.addr(m45, v4, v5, beta=0.5, alpha=1.5), o_addr1=torch.addr(v5, v4, v5),
        o_mv=torch.mv(m34, v4), o_dot=torch.dot(v4, v4 * 2), o_vdot=torch.vdot(v5, c5),
        o_chain=torch.linalg.multi_dot([m34, m45, m56, m62]), o_chain2=m34 @ m45,
        o_multi=torch.linalg.multi_dot([v4, m45, m56]), o_multi_v=torch.linalg.multi_dot([m34, m45, v5]),
        o_multi_vv=torch.linalg.multi_dot([v3, m34, m45, v5]),
        o_td=torch.tensordot(t3, t4), o_td1=torch.tensordot(t3, m56, dims=1), o_td0=torch.tensordot(v3, m34, 0),
        o_bil=F.bilinear(y1, y2, bw, bb_), o_bil_nb=F.bilinear(y1, y2, bw),
    )


@model
def einsum(t):
    a, b, sq, v, w, p, q, h1, h2, d3, one = (t[k] for k in "a b sq v w p q h1 h2 d3 one".split())
    e = torch.einsum
    return dict(
        o_mm=e("ij,jk->ik", a, b), o_t=e("ij->ji", a), o_sum=e("ij->", a), o_rows=e("ij->i", a),
        o_diag=e("ii->i", sq), o_trace=e("ii", sq), o_diag3=e("iij->ji", d3), o_outer=e("i,j->ij", w, v),
        o_dot=e("i,i->", v, v), o_mv=e("ij,j->i", a, v), o_bmm=e("bij,bjk->bik", p, q),
        o_attn=e("bhld,bhmd->bhlm", h1, h2), o_implicit=e("ij,jk", a, b), o_implicit_t=e("ba", a),
        o_had=e("ij,ij->ij", a, a), o_three=e("ij,jk,k->i", a, b, e("kj->k", b.t())),
        o_bcast=e("ij,kj->ik", one, a), o_spaces=e("bij,bjk->bki", p, q),
    )


def sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """F.scaled_dot_product_attention of PyTorch 2 (this torch may predate it)."""
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if mask is not None:
        s = s + mask
    return torch.softmax(s, -1) @ v


@model
def attention(t):
    q, k, v, k5, v5, mask, q3, k3, v3 = (t[n] for n in "q k v k5 v5 mask q3 k3 v3".split())
    return dict(
        o_sdpa=sdpa(q, k, v), o_sdpa_mask=sdpa(q, k, v, mask), o_sdpa_causal=sdpa(q, k5, v5, is_causal=True),
        o_sdpa_causal_ls=sdpa(q, k, v, is_causal=True), o_sdpa_scale=sdpa(q, k, v, mask * 3, scale=0.25),
        o_sdpa_3d=sdpa(q3 * 4, k3, v3),
    )


@model
def distance(t):
    x1, x2, m1, m2, a, b = (t[n] for n in "x1 x2 m1 m2 a b".split())
    return dict(
        o_cdist=torch.cdist(x1, x2), o_cdist_p1=torch.cdist(x1, x2, p=1.0), o_cdist_p3=torch.cdist(m1, m2, 3.0),
        o_cdist_p0=torch.cdist(m1, m2, p=0.0), o_cdist_p05=torch.cdist(x1, x2, p=0.5),
        o_pdist=F.pdist(m1), o_pdist_p1=F.pdist(m2, p=1), o_pdist_p3=F.pdist(m2, 3),
        o_dist=torch.dist(a, b), o_dist_p1=torch.dist(a, b, p=1), o_dist_p3=torch.dist(m1, m1 * 0.5, 3),
        o_dist_p0=torch.dist(a, b, 0),
        o_vecdot=torch.linalg.vecdot(a, b), o_vecdot_d=torch.linalg.vecdot(a, b, dim=1),
        o_vecdot_0=torch.linalg.vecdot(x1, a, dim=-3),
    )


@model
def linalg(t):
    a, ab, e, rhs, rhsb, r = (t[n] for n in "a ab e rhs rhsb r".split())
    s = a @ a.t()
    sb = ab @ ab.transpose(-2, -1)
    g = s + e
    L = torch.linalg.cholesky(s)
    return dict(
        o_s=s, o_inverse=torch.inverse(g), o_inverse_b=torch.inverse(sb),
        o_chol=torch.cholesky(s), o_chol_up=torch.cholesky(s, upper=True), o_chol_b=torch.cholesky(sb),
        o_lchol=L, o_lchol_up=torch.linalg.cholesky(sb, upper=True),
        o_chol_inv=torch.cholesky_inverse(L), o_chol_inv_up=torch.cholesky_inverse(L.t(), upper=True),
        o_chol_solve=torch.cholesky_solve(rhs, L), o_chol_solve_up=torch.cholesky_solve(rhs, L.t(), True),
        o_svdvals=torch.linalg.svdvals(r), o_svdvals_b=torch.linalg.svdvals(ab),
        o_solve=torch.linalg.solve(g, rhs), o_solve_sq=torch.linalg.solve(g, e), o_solve_b=torch.linalg.solve(sb, rhsb),
        o_eigvalsh=torch.linalg.eigvalsh(sb), o_pinv=torch.pinverse(r), o_pinv_sq=torch.pinverse(g),
    )


@model
def linalg_left(t):
    a, ab, e, rhs, rhsb = t["a"], t["ab"], t["e"], t["rhs"], t["rhsb"]
    g = a @ a.t() + e
    return dict(o_solve_r=torch.linalg.solve(g, rhs, left=False),
                o_solve_rb=torch.linalg.solve(ab @ ab.transpose(1, 2) + e, rhsb, left=False))


def linalg_multi_outputs(t, full):
    """linalg_multi (f64, every op) and linalg_multi32 (f32, a few)."""
    a, rhs, r = t["a"], t["rhs"], t["r"]
    s = a @ a.t()
    L = torch.linalg.cholesky(s)
    cols = lambda v: (v, fix_sign)            # singular/eigen vectors: columns up to sign
    rows = lambda v: (v, lambda m: fix_sign(m, -1))
    out = {}
    out["o_q"], out["o_r"] = torch.linalg.qr(r)
    u, sv, vh = torch.linalg.svd(r, full_matrices=False)
    out.update(o_u=cols(u), o_sv=sv, o_vh=rows(vh))
    ew, ev = torch.linalg.eigh(s)
    out.update(o_ew=ew, o_ev=cols(ev))
    out["o_tri"], out["o_tri_a"] = torch.triangular_solve(rhs, L, upper=False)
    if not full:
        return out
    e, ab = t["e"], t["ab"]
    g = s + e
    out["o_lchol_ex"], out["o_lchol_info"] = torch.linalg.cholesky_ex(s)
    out["o_lchol_ex_up"], out["o_lchol_info_up"] = torch.linalg.cholesky_ex(s, upper=True)
    out["o_inv_ex"], out["o_inv_info"] = torch.linalg.inv_ex(g)
    out["o_fq"], out["o_fr"] = torch.qr(r, some=False)
    out["o_lq"], out["o_lr"] = torch.linalg.qr(r)
    out["o_cq"], out["o_cr"] = torch.linalg.qr(r, mode="complete")
    out["o_rq"], out["o_rr"] = torch.linalg.qr(g, mode="r")
    out["o_bq"], out["o_br"] = torch.linalg.qr(ab)
    fu, fsv, fvh = torch.linalg.svd(r)
    # full U: the last m-k columns are any orthonormal basis of the complement:
    # compare the first k columns up to sign, and the complement's projector
    k = fsv.shape[-1]
    out["o_fu"] = (fu, lambda m: torch.cat((fix_sign(m[:, :k]), (m[:, k:] @ m[:, k:].t())), 1))
    out.update(o_fsv=fsv, o_fvh=rows(fvh))
    ewu, evu = torch.linalg.eigh(s, UPLO="U")
    out.update(o_ewu=ewu, o_evu=cols(evu))
    out["o_lu"], out["o_piv"] = torch.linalg.lu_factor(g)
    out["o_tri_up"], out["o_tri_up_a"] = torch.triangular_solve(rhs, L.t())
    out["o_tri_t"], out["o_tri_t_a"] = torch.triangular_solve(rhs, L, False, True)
    out["o_tri_unit"], out["o_tri_unit_a"] = torch.triangular_solve(rhs, L, upper=False, unitriangular=True)
    return out


@model
def linalg_multi(t):
    return linalg_multi_outputs(t, True)


@model
def linalg_multi32(t):
    return linalg_multi_outputs(t, False)



@model
def dtypes(t):
    xb, xh, xf, wb = t["xb"], t["xh"], t["xf"], t["fc.weight"]
    return dict(
        o_exp_b=torch.exp(xb), o_add_bh=xb + xh, o_add_bf=xb + xf, o_mul_h=xh * xh,
        o_linear_b=F.linear(xb, wb), o_sum_h=torch.sum(xh, 1), o_softmax_b=F.softmax(xb, -1),
        o_cast_f=xf * 1, o_relu_h=F.relu(xh),
    )


@model
def prelu_index_put_margin(t):
    x, w4, v, u, u1, c1, c2 = t["x"], t["w4"], t["v"], t["u"], t["u1"], t["c1"], t["c2"]
    xi, key, val, vrow, m, m2 = t["xi"], t["key"], t["val"], t["vrow"], t["m"], t["m2"]
    img, grid, vol, grid3 = t["img"], t["grid"], t["vol"], t["grid3"]
    s, sk, cw, tl, y, a, p, n = t["s"], t["sk"], t["cw"], t["tl"], t["y"], t["a"], t["p"], t["n"]
    a1, p1, n1 = t["a1"], t["p1"], t["n1"]
    kv, perm = torch.sort(key, dim=0)
    si = torch.sort(sk, dim=1)[1]
    tm = si.narrow(1, 0, 1).squeeze(1)
    pm = torch.where(m, 1.0, -1.0).double()
    gs = torch.grid_sampler
    return dict(
        o_prelu=F.prelu(x, w4), o_prelu1=F.prelu(x, w4 * 0 + 0.25),
        o_renorm=torch.renorm(x, 2, 1, 1.0), o_renorm_p1=torch.renorm(x * 3, 1.0, 0, 2.5),
        o_renorm_inf=torch.renorm(x, p=3.5, dim=2, maxnorm=0.5),
        o_cos=F.cosine_similarity(x, x * x - 0.3), o_cos_b=F.cosine_similarity(c1, c2, dim=1),
        o_cos_eps=F.cosine_similarity(c1 * 1e-5, c2, dim=-1, eps=0.5),
        o_cross=torch.cross(v, u, dim=1), o_cross_d=torch.cross(v, u + u1, dim=1),
        o_ip=torch.index_put(xi, (perm,), val), o_ip_2=torch.index_put(xi * 2, (perm,), val * 2),
        o_ip_acc=torch.index_put(xi, (perm.narrow(0, 0, 2),), vrow, accumulate=True),
        o_ip_row=torch.index_put(xi, (perm,), vrow), o_ip_m=torch.index_put(xi, (m,), vrow),
        o_ip_m_acc=torch.index_put(xi, (m,), vrow * 3, True), o_ip_m2=torch.index_put(xi, (m2,), kv.narrow(0, 0, 1)),
        o_gs=gs(img, grid * 1.3, 0, 0, False), o_gs_ac=gs(img, grid * 1.3, 0, 1, True),
        o_gs_ref=gs(img, grid * 2.5, 0, 2, False), o_gs_ref_ac=gs(img, grid * 2.5, 0, 2, True),
        o_gs_near=gs(img, grid * 1.2, 1, 0, False), o_gs_near_b=gs(img, grid * 1.7, 1, 1, True),
        o_gs3=gs(vol, grid3 * 1.3, 0, 0, False), o_gs3_ref=gs(vol, grid3 * 2.2, 0, 2, True),
        o_gs3_near=gs(vol, grid3, 1, 1, False),
        o_gl=torch.gather(s, 1, tl), o_mlm=F.multilabel_margin_loss(s, tl),
        o_mlm_none=F.multilabel_margin_loss(s * 2, tl, reduction="none"),
        o_mlm_all=F.multilabel_margin_loss(s * 3, si, reduction="sum"),
        o_mm=F.multi_margin_loss(s, tm), o_mm_p2=F.multi_margin_loss(s, tm, p=2, margin=0.7, reduction="none"),
        o_mm_w=F.multi_margin_loss(s, tm, 1, 1.5, cw, reduction="sum"),
        o_cel=F.cosine_embedding_loss(a, p, pm), o_cel_m=F.cosine_embedding_loss(a, p * p, pm, margin=0.2, reduction="none"),
        o_cel_1=F.cosine_embedding_loss(a1, p1, pm.sum() * 0 - 1, margin=-0.5, reduction="sum"),
        o_mrl=F.margin_ranking_loss(y, key, pm), o_mrl_m=F.margin_ranking_loss(y, key, pm, margin=0.3, reduction="none"),
        o_mrl_2=F.margin_ranking_loss(a, p, n, 0.1, reduction="sum"),
        o_tml=F.triplet_margin_loss(a, p, n), o_tml_p1=F.triplet_margin_loss(a, p, n, margin=2.0, p=1, reduction="none"),
        o_tml_swap=F.triplet_margin_loss(a, p * 0.5, n, swap=True, reduction="sum"),
        o_tml_p3=F.triplet_margin_loss(a, p, n, 1.5, 3.0, 1e-3, True, reduction="none"),
        o_tml_1=F.triplet_margin_loss(a1, p1, n1, p=2),
    )


@model
def linalg_svd(t):
    a, w, ab = t["a"], t["w"], t["ab"]
    cols = lambda v: (v, fix_sign)
    u, s, v = torch.svd(a)
    ub, sb, vb = torch.svd(ab)
    uw, sw, vw = torch.svd(w, some=True)
    uf, sf, vf = torch.svd(a, some=False)
    un, sn, vn = torch.svd(ab, compute_uv=False)
    return dict(
        o_u=cols(u), o_s=s, o_v=cols(v), o_ub=cols(ub), o_sb=sb, o_vb=cols(vb), o_uw=cols(uw), o_sw=sw, o_vw=cols(vw),
        o_uf=cols(uf.narrow(1, 0, 3)), o_sf=sf, o_vf=cols(vf), o_un=un, o_sn=sn, o_vn=vn,
        o_nuc=torch.nuclear_norm(a), o_nuc_k=torch.nuclear_norm(w, keepdim=True),
        o_mnuc=torch.linalg.matrix_norm(ab, ord="nuc"), o_mnuc_k=torch.linalg.matrix_norm(w, ord="nuc", keepdim=True),
    )


@model
def cells_unpool_quantile(t):
    x, x1, h, h1, c0 = t["x"], t["x1"], t["h"], t["h1"], t["c0"]
    wi4, wh4, bi4, bh4 = t["wi4"], t["wh4"], t["bi4"], t["bh4"]
    wi3, wh3, bi3, bh3 = t["wi3"], t["wh3"], t["bi3"], t["bh3"]
    wi1, wh1, bi1, bh1 = t["wi1"], t["wh1"], t["bi1"], t["bh1"]
    key, u, key3, u3 = t["key"], t["u"], t["key3"], t["u3"]
    img, cw, cb, cg, ct, seq, cw1, vol, cw3 = (t[k] for k in ("img", "cw", "cb", "cg", "ct", "seq", "cw1", "vol", "cw3"))
    z = t["z"]
    B = x.shape[0]
    # torch.lstm_cell and friends take 2-D input: the 1-D forms as nn.LSTMCell, batched by one
    def one(f, *a):
        r = f(*a)
        return tuple(v.squeeze(0) for v in r) if isinstance(r, tuple) else r.squeeze(0)
    lh, lc = torch.lstm_cell(x, (h, c0), wi4, wh4, bi4, bh4)
    nh, nc = torch.lstm_cell(x, (h, c0 * 2), wi4, wh4)
    l1h, l1c = one(lambda a, b, c: torch.lstm_cell(a, (b, c), wi4, wh4, bi4, bh4), x1[None], h1[None], (h1 * 0.5)[None])
    perm = torch.sort(key, dim=2)[1]
    perm3 = torch.sort(key3, dim=2)[1]
    unpool = torch.ops.aten.max_unpool2d
    lz = torch.log(z)
    lp = F.log_softmax(t["lp0"], 2)
    ks, kl = t["ks"], t["kl"]
    tgt = torch.sort(ks, dim=1)[1]
    big = kl[:, :1] * 0 + 100
    first = lambda k: torch.sort(k, dim=1, descending=True)[1][:, 0]
    il5, il4, il1 = first(torch.cat((kl, big), 1)), first(torch.cat((kl[:, :4], big), 1)), first(torch.cat((kl[:, :1], big), 1))
    tl3, tl2 = first(torch.cat((ks, big), 1)), first(torch.cat((ks[:, :2], big), 1))
    ctc = F.ctc_loss
    return dict(
        o_ctc=ctc(lp, tgt, il5, tl3, blank=5), o_ctc_none=ctc(lp, tgt, il4, tl2, blank=5, reduction="none"),
        o_ctc_sum=ctc(lp, tgt, il5, tl2, blank=5, reduction="sum"),
        o_ctc_inf=ctc(lp, tgt, il1, tl3, blank=5, reduction="none"),
        o_ctc_zero=ctc(lp, tgt, il1, tl3, blank=5, zero_infinity=True),
        o_lstm_h=lh, o_lstm_c=lc, o_lstm_nb_h=nh, o_lstm_nb_c=nc, o_lstm1_h=l1h, o_lstm1_c=l1c,
        o_gru=torch.gru_cell(x, h, wi3, wh3, bi3, bh3), o_gru_nb=torch.gru_cell(x, h * 3, wi3, wh3),
        o_gru1=one(lambda a, b: torch.gru_cell(a, b, wi3, wh3, None, bh3), x1[None], h1[None]),
        o_tanh=torch.rnn_tanh_cell(x, h, wi1, wh1, bi1, bh1), o_relu=torch.rnn_relu_cell(x, h, wi1, wh1, bi1, bh1),
        o_relu1=one(lambda a, b: torch.rnn_relu_cell(a, b, wi1, wh1, bi1, None), (x1 * 2)[None], h1[None]),
        o_unpool=unpool(u, perm.narrow(2, 0, 8).reshape(B, 2, 2, 4), [4, 4]),
        o_unpool_big=unpool(u * 2, perm.narrow(2, 8, 8).reshape(B, 2, 2, 4), [4, 4]),
        o_unpool3=torch.ops.aten.max_unpool3d(u3, perm3.narrow(2, 0, 8).reshape(B, 2, 2, 2, 2), [3, 3, 3], [1, 1, 1], [0, 0, 0]),
        o_conv=torch.convolution(img, cw, cb, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        o_conv_s=torch.convolution(img, cw, None, [2, 2], [0, 0], [2, 2], False, [0, 0], 1),
        o_conv_g=torch.convolution(torch.cat((img, img.narrow(1, 0, 1)), dim=1), cg, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 4),
        o_conv_t=torch.convolution(img, ct, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
        o_conv1=torch.convolution(seq, cw1, None, [1], [1], [1], False, [0], 1),
        o_conv3=torch.convolution(vol, cw3, None, [2, 2, 2], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1),
        o_q=torch.quantile(z, 0.3, dim=1), o_q_all=torch.quantile(z, 0.75), o_q_keep=torch.quantile(z, 0.5, -1, True),
        o_q_lower=torch.quantile(z, 0.3, dim=2, interpolation="lower"),
        o_q_higher=torch.quantile(z, 0.3, dim=2, interpolation="higher"),
        o_q_mid=torch.quantile(z, 0.3, dim=0, interpolation="midpoint"),
        o_q_near=torch.quantile(z, 0.4, dim=2, interpolation="nearest"),
        o_q_nan=torch.quantile(lz, 0.3, dim=2), o_nq=torch.nanquantile(lz, 0.3, dim=2),
        o_nq_all=torch.nanquantile(lz, 1.0), o_nq_mid=torch.nanquantile(lz, 0.6, dim=1, interpolation="midpoint"),
    )


@model
def rnn_layers(t):
    # the aten layer ops themselves, with the flat parameter lists nn.LSTM
    # passes them (its _flat_weights: per layer, per direction)
    def flat(prefix, layers, dirs, bias):
        kinds = ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if bias else ())
        return [t["%s.%s_l%d%s" % (prefix, k, l, sfx)] for l in range(layers)
                for sfx in ("", "_reverse")[:dirs] for k in kinds]
    x, xb = t["x"], t["xb"]
    h4, c4, h2, h1, c1 = t["h4"], t["c4"], t["h2"], t["h1"], t["c1"]
    lo, lh, lc = torch.lstm(x, (h4, c4), flat("lstm", 2, 2, True), True, 2, 0.0, False, True, False)
    bo, bh, bc = torch.lstm(xb, (h1, c1 * 2), flat("lstmb", 1, 1, False), False, 1, 0.0, False, False, True)
    go, gh = torch.gru(xb, h4, flat("gru", 2, 2, True), True, 2, 0.0, False, True, True)
    g2o, g2h = torch.gru(xb * 0.5, gh, flat("gru", 2, 2, True), True, 2, 0.0, False, True, True)
    to, th = torch.rnn_tanh(x * 2, h2, flat("tanh", 2, 1, True), True, 2, 0.0, False, False, False)
    ro, rh = torch.rnn_relu(xb, h4 * 0.5, flat("relu", 2, 2, False), False, 2, 0.0, False, True, True)
    return dict(o_lstm=lo, o_lstm_hn=lh, o_lstm_cn=lc, o_lstmb=bo, o_lstmb_hn=bh, o_lstmb_cn=bc,
                o_gru=go, o_gru_hn=gh, o_gru2=g2o, o_gru2_hn=g2h, o_tanh=to, o_tanh_hn=th, o_relu=ro, o_relu_hn=rh)


@model
def linalg_solve(t):
    a, ab, e, rhs, rhsb, r, tau, c5, c25, rhs3, v5, wb, wrhs, m4, t6, tb = (
        t[n] for n in "a ab e rhs rhsb r tau c5 c25 rhs3 v5 wb wrhs m4 t6 tb".split())
    s = a @ a.t()
    g = s + e
    sb = ab @ ab.transpose(1, 2)
    lu, piv = torch.linalg.lu_factor(g)
    lub, pivb = torch.linalg.lu_factor(sb + 1.5)
    lstsq = lambda A, b: torch.linalg.lstsq(A, b).solution
    return dict(
        o_lus=torch.lu_solve(rhs, lu, piv), o_lus_b=torch.lu_solve(rhsb, lub, pivb),
        o_lstsq=lstsq(r, c5), o_lstsq_v=lstsq(r, v5), o_lstsq_w=lstsq(r.t(), rhs3), o_lstsq_b=lstsq(wb, wrhs),
        o_exp=torch.linalg.matrix_exp(g * 0.01), o_exp_big=torch.linalg.matrix_exp(e * 3),
        o_exp_b=torch.linalg.matrix_exp(m4),
        o_hh=torch.linalg.householder_product(r, tau), o_hh2=torch.linalg.householder_product(r * 0.5, tau[:2]),
        o_orgqr=torch.orgqr(r, tau * 0.5), o_ormqr=torch.ormqr(r, tau, c5),
        o_ormqr_t=torch.ormqr(r, tau, c5, transpose=True), o_ormqr_r=torch.ormqr(r, tau, c25, left=False),
        o_ormqr_rt=torch.ormqr(r, tau[:2], c25, False, True),
        o_tinv=torch.linalg.tensorinv(g.reshape(2, 2, 4)), o_tinv1=torch.linalg.tensorinv(g.reshape(4, 2, 2), ind=1),
        o_tinv6=torch.linalg.tensorinv(t6), o_tsolve=torch.linalg.tensorsolve(g.reshape(2, 2, 4), e[:2, 1:3]),
        o_tsolve6=torch.linalg.tensorsolve(t6, tb),
    )


# ---- the comparison --------------------------------------------------------

def compare(name, ref, want, rtol=RTOL, what="relative error"):
    """None when ref (the dump's reference.NAME) matches want within rtol,
    else why not."""
    if isinstance(want, tuple):  # (value, canonical form of both sides)
        want, canon = want
        if tuple(ref.shape) == tuple(want.shape):
            ref, want = canon(ref.to(want.dtype) if want.is_floating_point() else ref), canon(want)
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
    if not rel <= rtol:
        return "%s: %s %.3e > %.0e (max |diff| %.3e)" % (
            name, what, rel, rtol, (r[fin] - w[fin]).abs().max().item())
    return None


FIRST_REFS = {}  # model -> (label, {name: reference}) of its first dump


def check(model_name, path, label=None):
    st = read_safetensors(path)
    t = {}
    for key, v in st.items():
        kind, _, name = key.partition(".")
        if kind in ("input", "param"):
            t[name] = as_f64(v)
    refs = {k.partition(".")[2]: v for k, v in st.items() if k.startswith("reference.")}
    errors = []
    # the f64 reference is one function of the inputs whatever the target:
    # the same bits from every dump of the model
    if model_name in FIRST_REFS:
        first_label, first = FIRST_REFS[model_name]
        for name, v in refs.items():
            w = first.get(name)
            if w is None or w.dtype != v.dtype or w.shape != v.shape or not torch.equal(
                    w.view(-1).view(torch.uint8) if w.numel() else w, v.view(-1).view(torch.uint8) if v.numel() else v):
                errors.append("%s: the reference differs from %s's" % (name, first_label))
    else:
        FIRST_REFS[model_name] = (label or model_name, refs)
    fn = MODELS.get(model_name)
    if fn is None:
        return errors + ["no function %s in torch_ref.py" % model_name]
    with torch.no_grad():
        want = fn(t)
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
            continue
        # the compiled model's own output, in its (autocast) dtypes: loosely
        out = st.get("output." + name)
        if out is not None and out.is_floating_point():
            tol = OUTPUT_RTOL["autocast" if label and label.endswith(":autocast") else out.dtype]
            e = compare(name, out, want[name], tol, "the model's output: relative error")
            if e:
                errors.append(e)
    return errors


def main(argv):
    torch.set_default_dtype(torch.float64)
    warnings.simplefilter("ignore")  # deprecations of the torch.* forms the .amp ops name
    failed = 0
    for arg in argv:
        label, _, path = arg.partition("=")
        model_name = label.split(":")[0]
        try:
            errors = check(model_name, path, label)
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
