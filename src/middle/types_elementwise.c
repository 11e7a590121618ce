/* types_elementwise.c: the type rules of the elementwise ops.
 *
 * Unary and binary arithmetic, the activations (gelu, silu, softplus,
 * the hard, exponential and sigmoid-like units, prelu), clamp (and clamp_min/max), pow,
 * maximum/minimum/atan2, fmod/remainder, where, dropout, addcmul/addcdiv, and
 * the casts.  The result has the broadcast shape of the tensor operands;
 * its dtype is PyTorch's torch.result_type (promote_tensors and
 * promote_with_scalar in typecheck.c), and a Python number raises the
 * category, never the width.  Ops that compute in floating point take
 * integer inputs into the default float type, f32.
 */

#include "types.h"

#include <string.h>

/* ---- casts, unary and binary arithmetic --------------------------------- */

bool infer_cast(Ctx *c, Expr *call)
{
    (void)c;
    (void)call;
    ICE("casts are E_CAST expressions, never calls");
}

bool infer_unary(Ctx *c, Expr *call)
{
    Expr *x = arg(call, 0);
    if (!is_tensor(x)) {
        if (call->op->id == OP_NEG && is_number(x)) {
            call->type.dtype = DT_NONE; /* -2.5 stays a literal */
            return true;
        }
        return require_tensor(c, call, 0);
    }
    if (x->type.dtype == DT_BOOL) {
        error_at(c, call->loc, "%s() is not defined for bool tensors", call->op->name);
        return false;
    }
    call->type = x->type;
    return true;
}

bool infer_binary(Ctx *c, Expr *call)
{
    Expr *a = arg(call, 0), *b = arg(call, 1);
    bool ta = is_tensor(a), tb = is_tensor(b);
    if (!ta && !tb) {
        error_at(c, call->loc, "%s() of two numbers: at least one operand must be a tensor", call->op->name);
        return false;
    }
    if (!ta) {
        /* 2 - x: only the operator form can put the number first */
        if (!call->is_operator || !is_number(a))
            return require_tensor(c, call, 0);
    }
    if (!tb && !is_number(b)) {
        error_at(c, b->loc, "the other operand of %s() must be a tensor or a number", call->op->name);
        return false;
    }
    DType t;
    if (ta && tb) {
        if (!broadcast(c, call, &a->type.shape, &b->type.shape, &call->type.shape))
            return false;
        t = promote_tensors(&a->type, &b->type);
    } else {
        Expr *tensor = ta ? a : b, *num = ta ? b : a;
        Expr *lit = num->kind == E_NUMBER ? num : VEC_AT(num->list, 0);
        call->type.shape = tensor->type.shape;
        t = promote_with_scalar(tensor->type.dtype, lit->is_float);
    }
    /* true division: integers divide into the default float */
    if (call->op->id == OP_DIV && !dtype_is_float(t))
        t = DT_F32;
    if (t == DT_BOOL && call->op->id == OP_SUB) {
        error_at(c, call->loc, "subtraction of bool tensors is not defined; use logical ops");
        return false;
    }
    call->type.dtype = t;
    return true;
}

/* exp, log, sqrt, rsqrt, reciprocal, sigmoid, tanh: integer and bool
 * inputs compute in the default float type (PyTorch's int-to-float unary
 * ops). */
bool infer_float_unary(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    if (call->op->id == OP_SOFTSIGN && x->type.dtype == DT_BOOL) {
        /* PyTorch's x / (x.abs() + 1) fails in abs */
        error_at(c, call->loc, "softsign() is not defined for bool tensors (abs of a bool tensor is not)");
        return false;
    }
    call->type = x->type;
    if (!dtype_is_float(x->type.dtype))
        call->type.dtype = DT_F32;
    return true;
}

/* sign, floor, ceil, round, trunc, frac: the input's dtype.  PyTorch keeps
 * an integer dtype (sign a bool one too; frac refuses both), which the
 * runtime has no kernel for: an error at the call, not a silent f32. */
bool infer_rounding(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const char *name = call->op->name;
    if (call->op->id == OP_ROUND) {
        int64_t decimals;
        if (!int_param(c, call, "decimals", 0, &decimals))
            return false;
        if (decimals != 0) {
            error_at(c, named(call, "decimals")->loc, "round(decimals=%lld) has no runtime kernel yet; only "
                     "decimals=0 is supported", (long long)decimals);
            return false;
        }
    }
    if (!dtype_is_float(x->type.dtype)) {
        if (call->op->id == OP_FRAC || (x->type.dtype == DT_BOOL && call->op->id != OP_SIGN))
            error_at(c, call->loc, "%s() is not defined for %s tensors in PyTorch", name, dtype_name(x->type.dtype));
        else
            error_at(c, call->loc, "%s() of %s keeps that dtype in PyTorch, but ampc's runtime has %s kernels for "
                     "floating-point tensors only; convert the input first (x.float())", name,
                     type_to_string(c, &x->type), name);
        return false;
    }
    call->type = x->type;
    return true;
}

/* ---- activations -------------------------------------------------------- */

/* The scalar parameters of the activations that have them. */
static bool activation_params(Ctx *c, Expr *call)
{
    double a, b;
    switch (call->op->id) {
    case OP_SOFTPLUS: return float_param(c, call, "beta", 1, &a) && float_param(c, call, "threshold", 20, &b);
    case OP_HARDTANH: return float_param(c, call, "min_val", -1, &a) && float_param(c, call, "max_val", 1, &b);
    case OP_LEAKY_RELU: return float_param(c, call, "negative_slope", 0.01, &a);
    case OP_ELU: return float_param(c, call, "alpha", 1, &a);
    case OP_CELU:
        if (!float_param(c, call, "alpha", 1, &a))
            return false;
        if (a == 0) {
            error_at(c, named(call, "alpha")->loc, "alpha cannot be 0 for CELU");
            return false;
        }
        return true;
    default: return true;
    }
}

/* gelu, silu, softplus, the hard and exponential units: PyTorch has them
 * for floating types only, but for relu6 and hardtanh, which keep an
 * integer dtype there (clamp); the runtime has no integer kernel for them. */
bool infer_activation(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    OpId id = call->op->id;
    if ((id == OP_RELU6 || id == OP_HARDTANH) && !dtype_is_float(x->type.dtype)) {
        error_at(c, call->loc, "%s() of %s keeps that dtype in PyTorch, but ampc's runtime has %s kernels for "
                 "floating-point tensors only; convert the input first (x.float())", call->op->name,
                 type_to_string(c, &x->type), call->op->name);
        return false;
    }
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, call->loc, "%s() is defined for floating-point tensors only, but this is %s", call->op->name,
                 type_to_string(c, &x->type));
        return false;
    }
    if (call->op->id == OP_GELU) {
        const char *a;
        if (!str_param(c, call, "approximate", "none", &a))
            return false;
        if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0) {
            error_at(c, named(call, "approximate")->loc, "approximate argument must be either none or tanh");
            return false;
        }
    }
    if (!activation_params(c, call))
        return false;
    call->type = x->type;
    return true;
}

bool infer_prelu(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *w = arg(call, 1);
    /* an f32 weight of a half input: PyTorch's kernel reads it in the
     * input's dtype (autocast then casts it, a Cast node) */
    bool half_input = (x->type.dtype == DT_BF16 || x->type.dtype == DT_F16) && w->type.dtype == DT_F32;
    if (!require_float(c, call, x) || (!half_input && !same_dtype(c, call, x, w)))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape;
    int64_t n;
    bool one = ws->ndim == 1 && const_dim(ws->dims[0], &n) && n == 1;
    bool per_ch = ws->ndim == 1 && xs->ndim >= 2 && dims_match(ws->dims[0], xs->dims[1]);
    if (!(ws->ndim == 0 || one || per_ch)) {
        error_at(c, w->loc, "prelu(): the weight has one entry, or one per channel (%s), but it is %s",
                 xs->ndim >= 2 ? dim_str(c, xs->dims[1]) : "1", type_to_string(c, &w->type));
        return false;
    }
    call->type = x->type;
    return true;
}

/* ---- clamp, pow, maximum, fmod/remainder, where, addcmul/addcdiv -------- */

static bool number_is_float(Expr *e)
{
    Expr *lit = e->kind == E_NUMBER ? e : VEC_AT(e->list, 0);
    return lit->is_float;
}

/* The result dtype of a tensor meeting a tensor or a number (torch.result_type). */
static DType meet(DType t, const Type *tt, Expr *other)
{
    if (is_tensor(other))
        return promote_tensors(tt, &other->type);
    return promote_with_scalar(t, number_is_float(other));
}

static bool tensor_or_number(Ctx *c, Expr *call, Expr *e, const char *what)
{
    if (!e || is_tensor(e) || is_number(e))
        return true;
    error_at(c, e->loc, "%s of %s() must be a tensor or a number", what, call->op->name);
    return false;
}

bool infer_clamp(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    /* clamp_min and clamp_max have one of the two */
    Expr *x = arg(call, 0), *lo = op_param_index(call->op, "min") >= 0 ? named(call, "min") : NULL,
         *hi = op_param_index(call->op, "max") >= 0 ? named(call, "max") : NULL;
    if (!tensor_or_number(c, call, lo, "min=") || !tensor_or_number(c, call, hi, "max="))
        return false;
    if (!lo && !hi) {
        error_at(c, call->loc, "torch.clamp: At least one of 'min' or 'max' must not be None");
        return false;
    }
    Type t = x->type;
    Expr *bounds[2] = {lo, hi};
    for (int i = 0; i < 2; i++) {
        Expr *b = bounds[i];
        if (!b)
            continue;
        if (is_tensor(b) && !broadcast(c, call, &t.shape, &b->type.shape, &t.shape))
            return false;
        t.dtype = meet(t.dtype, &t, b);
    }
    call->type = t;
    return true;
}

bool infer_pow(Ctx *c, Expr *call)
{
    Expr *x = arg(call, 0), *e = arg(call, 1);
    if (x && is_number(x) && e && is_tensor(e)) {
        /* torch.pow(Scalar self, Tensor exponent): the exponent's shape,
         * its dtype meeting the number (torch.result_type) */
        call->type = e->type;
        call->type.dtype = promote_with_scalar(e->type.dtype, number_is_float(x));
        return true;
    }
    if (!require_tensor(c, call, 0))
        return false;
    if (!tensor_or_number(c, call, e, "the exponent"))
        return false;
    call->type = x->type;
    if (is_tensor(e)) {
        if (!broadcast(c, call, &x->type.shape, &e->type.shape, &call->type.shape))
            return false;
        call->type.dtype = promote_tensors(&x->type, &e->type);
        return true;
    }
    double v;
    if (!number_value(c, e, &v))
        return false;
    if (!dtype_is_float(x->type.dtype) && !number_is_float(e) && v < 0) {
        error_at(c, e->loc, "Integers to negative integer powers are not allowed (the tensor is %s)",
                 dtype_name(x->type.dtype));
        return false;
    }
    call->type.dtype = promote_with_scalar(x->type.dtype, number_is_float(e));
    return true;
}

bool infer_maximum(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *a = arg(call, 0), *b = arg(call, 1);
    if (!broadcast(c, call, &a->type.shape, &b->type.shape, &call->type.shape))
        return false;
    call->type.dtype = promote_tensors(&a->type, &b->type);
    if (call->op->id == OP_ATAN2 && !dtype_is_float(call->type.dtype))
        call->type.dtype = DT_F32; /* integers compute in the default float */
    return true;
}

/* fmod, remainder: a tensor divisor broadcasts and promotes, a number
 * promotes as a scalar does (torch.result_type). */
bool infer_remainder(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0), *o = arg(call, 1);
    if (!tensor_or_number(c, call, o, "the divisor"))
        return false;
    call->type = x->type;
    if (is_tensor(o) && !broadcast(c, call, &x->type.shape, &o->type.shape, &call->type.shape))
        return false;
    call->type.dtype = meet(x->type.dtype, &x->type, o);
    return true;
}

/* glu: floating inputs; dim's size even and known, halved. */
bool infer_glu(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    if (!require_float(c, call, x))
        return false;
    if (xs->ndim == 0) {
        error_at(c, x->loc, "glu does not support scalars because halving size must be even");
        return false;
    }
    int64_t dim = xs->ndim - 1, size;
    Expr *d = named(call, "dim");
    if (d && !normalise_dim(c, d, xs->ndim, &dim))
        return false;
    if (!const_dim(xs->dims[dim], &size)) {
        error_at(c, x->loc, "glu(): the size of dim %lld is %s; ampc halves a fixed size only", (long long)dim,
                 dim_str(c, xs->dims[dim]));
        return false;
    }
    if (size % 2 != 0) {
        error_at(c, x->loc, "Halving dimension must be even, but dimension %lld is size %lld", (long long)dim,
                 (long long)size);
        return false;
    }
    call->dim = dim;
    call->type = x->type;
    call->type.shape.dims[dim] = poly_const(c, size / 2);
    return true;
}

/* lerp: input, end and a tensor weight in one floating dtype (PyTorch's
 * check), broadcast; a number weight any. */
bool infer_lerp(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *end = arg(call, 1), *w = arg(call, 2);
    if (!tensor_or_number(c, call, w, "weight") || !require_float(c, call, x) || !same_dtype(c, call, x, end) ||
        (is_tensor(w) && !same_dtype(c, call, x, w)))
        return false;
    Shape s;
    if (!broadcast(c, call, &x->type.shape, &end->type.shape, &s) ||
        (is_tensor(w) && !broadcast(c, call, &s, &w->type.shape, &s)))
        return false;
    call->type.dtype = x->type.dtype;
    call->type.shape = s;
    return true;
}

bool infer_where(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *cond = arg(call, 0), *a = arg(call, 1), *b = arg(call, 2);
    if (cond->type.dtype != DT_BOOL) {
        error_at(c, cond->loc, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                 dtype_name(cond->type.dtype));
        return false;
    }
    if (!tensor_or_number(c, call, a, "input") || !tensor_or_number(c, call, b, "other"))
        return false;
    Shape s = cond->type.shape;
    if ((is_tensor(a) && !broadcast(c, call, &s, &a->type.shape, &s)) ||
        (is_tensor(b) && !broadcast(c, call, &s, &b->type.shape, &s)))
        return false;
    DType t;
    if (is_tensor(a))
        t = meet(a->type.dtype, &a->type, b);
    else if (is_tensor(b))
        t = meet(b->type.dtype, &b->type, a);
    else
        t = number_is_float(a) || number_is_float(b) ? DT_F32 : DT_I64;
    call->type.dtype = t;
    call->type.shape = s;
    return true;
}

/* masked_fill(input, mask, value): input and a bool mask broadcast
 * together (the out-of-place form); input's dtype, value a number rounded
 * into it. */
bool infer_masked_fill(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *mask = arg(call, 1), *value = named(call, "value");
    if (mask->type.dtype != DT_BOOL) {
        error_at(c, mask->loc, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                 dtype_name(mask->type.dtype));
        return false;
    }
    if (!is_number(value)) {
        error_at(c, value->loc, "masked_fill(): value takes a number (a 0-dim tensor value has no kernel yet)");
        return false;
    }
    if (!dtype_is_float(x->type.dtype) && number_is_float(value)) {
        error_at(c, value->loc, "masked_fill(): a floating value cannot fill a %s tensor without truncation; "
                 "the runtime's where kernel has no integer form", dtype_name(x->type.dtype));
        return false;
    }
    Shape s;
    if (!broadcast(c, call, &x->type.shape, &mask->type.shape, &s))
        return false;
    call->type.dtype = x->type.dtype;
    call->type.shape = s;
    return true;
}

/* addcmul, addcdiv: input + value * tensor1 (*|/) tensor2, broadcast, torch.result_type of the three. */
bool infer_addc(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0), *t1 = arg(call, 1), *t2 = arg(call, 2), *value = named(call, "value");
    Shape s;
    if (!broadcast(c, call, &x->type.shape, &t1->type.shape, &s) || !broadcast(c, call, &s, &t2->type.shape, &s))
        return false;
    if (call->op->id == OP_ADDCDIV && !dtype_is_float(t1->type.dtype) && !dtype_is_float(t2->type.dtype)) {
        error_at(c, call->loc, "Integer division with addcdiv is no longer supported, and in a future release "
                 "addcdiv will perform a true division of tensor1 and tensor2. (tensor1 is %s, tensor2 %s)",
                 dtype_name(t1->type.dtype), dtype_name(t2->type.dtype));
        return false;
    }
    if (value && !is_number(value)) {
        error_at(c, value->loc, "value= of %s() takes a number", call->op->name);
        return false;
    }
    Type t = x->type;
    t.dtype = promote_tensors(&x->type, &t1->type);
    if (t1->type.shape.ndim)
        t.shape = t1->type.shape;
    t.dtype = promote_tensors(&t, &t2->type);
    call->type.dtype = t.dtype;
    call->type.shape = s;
    return true;
}

/* ---- dropout ------------------------------------------------------------ */

bool infer_dropout(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    double p;
    bool training, inplace;
    if (!float_param(c, call, "p", 0.5, &p) || !bool_param(c, call, "training", true, &training) ||
        !bool_param(c, call, "inplace", false, &inplace))
        return false;
    if (p < 0 || p > 1) {
        error_at(c, named(call, "p")->loc, "dropout probability has to be between 0 and 1, but got %s",
                 loc_text(c, named(call, "p")->loc));
        return false;
    }
    call->type = arg(call, 0)->type;
    return true;
}
