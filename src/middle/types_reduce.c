/* types_reduce.c: the type rules of the reductions.
 *
 * sum, mean, prod, logsumexp, amax/amin and max()/min(), and the scans
 * (cumsum, cumprod); argmax/argmin and all/any; var and std; softmax and
 * log_softmax; sort and quantile; trace; the norms read as reductions
 * (norm, linalg_vector_norm, linalg_matrix_norm, frobenius_norm,
 * nuclear_norm, renorm).  dim= is normalised to [0, ndim) on the call
 * (normalise_dim); keepdim= keeps reduced dims as 1; dtype= is the dtype
 * the op computes and returns in.
 */

#include "types.h"

#include <string.h>

/* The dtype= argument of a call, DT_NONE when absent or None. */
static DType dtype_arg(Ctx *c, Expr *call, int i)
{
    Expr *d = arg(call, i);
    if (!d)
        return DT_NONE;
    if (d->kind != E_DTYPE) {
        error_at(c, d->loc, "dtype= takes a dtype such as f32");
        return DT_NONE;
    }
    if (dtype_is_complex(d->dtype)) {
        error_at(c, d->loc, "%s() has no complex form in ampc: dtype=%s is not available", call->op->name,
                 dtype_name(d->dtype));
        return DT_NONE;
    }
    return d->dtype;
}

/* ---- sum, mean, prod, logsumexp and the scans --------------------------- */

static bool cumulative_op(OpId id)
{
    return id == OP_CUMSUM || id == OP_CUMPROD;
}

bool infer_reduce(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    OpId id = call->op->id;
    const Shape *xs = &x->type.shape;
    DType in = x->type.dtype;
    int kd = op_param_index(call->op, "dtype");
    DType want = kd >= 0 ? dtype_arg(c, call, kd) : DT_NONE;
    if (kd >= 0 && arg(call, kd) && want == DT_NONE)
        return false;

    DType t;
    if (want != DT_NONE)
        t = want; /* the input is converted first, as PyTorch does */
    else if (id == OP_MEAN && !dtype_is_float(in)) {
        error_at(c, call->loc, "mean(): could not infer output dtype. Input dtype must be either a floating point "
                 "or complex dtype. Got: %s", dtype_name(in));
        return false;
    } else if (id == OP_LOGSUMEXP)
        t = dtype_is_float(in) ? in : DT_F32;
    else if (id == OP_AMAX || id == OP_AMIN || id == OP_MAX || id == OP_MIN)
        t = in; /* the elements themselves: any dtype keeps its own */
    else
        t = dtype_is_float(in) ? in : DT_I64; /* sum, prod, cumsum of integers and bools */
    if (id == OP_MEAN && !dtype_is_float(t)) {
        error_at(c, arg(call, kd)->loc, "mean(): could not infer output dtype. Optional dtype must be either a "
                 "floating point or complex dtype. Got: %s", dtype_name(t));
        return false;
    }

    int64_t dim = -1;
    Expr *d = op_param_index(call->op, "dim") >= 0 ? named(call, "dim") : NULL;
    if (d && (id == OP_MAX || id == OP_MIN)) {
        error_at(c, call->loc, "%s() with dim gives 2 tensors (values, indices): assign them to names, as "
                 "v, i = x.%s(%s)", call->op->name, call->op->name, loc_text(c, d->loc));
        return false;
    }
    if (d && (cumulative_op(id) ? !normalise_dim(c, d, xs->ndim, &dim) : !reduce_dims(c, call, d, xs->ndim, &dim)))
        return false;
    bool keepdim = false;
    bool cumulative = id == OP_CUMSUM || id == OP_CUMPROD;
    if (!cumulative && op_param_index(call->op, "keepdim") >= 0 && !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    call->dim = dim;
    call->type.dtype = t;
    if (cumulative)
        call->type.shape = *xs;
    else
        call->type.shape = reduction_shape(c, call, xs, dim, keepdim);
    return true;
}

/* argmax, argmin (i64), all, any (bool): over dim, or every dim when
 * dim=None (argmax's index then counts in the flattened tensor; keepdim
 * keeps every dim as 1, as PyTorch). */
bool infer_index_reduce(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    OpId id = call->op->id;
    const Shape *xs = &x->type.shape;
    if (dtype_is_complex(x->type.dtype)) {
        error_at(c, x->loc, "%s() has no complex form in ampc (the input is %s)", call->op->name,
                 dtype_name(x->type.dtype));
        return false;
    }
    bool is_arg = id == OP_ARGMAX || id == OP_ARGMIN;
    if (is_arg && !not_bool(c, call, x)) /* PyTorch has no bool argmax kernel */
        return false;
    int64_t dim = -1;
    Expr *d = named(call, "dim");
    bool keepdim;
    if ((d && !normalise_dim(c, d, xs->ndim, &dim)) || !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    call->dim = dim;
    call->type.dtype = is_arg ? DT_I64 : DT_BOOL;
    call->type.shape = xs->ndim == 0 ? *xs : reduced(c, xs, dim, keepdim);
    return true;
}

/* var, std: floating inputs; correction= (a number) or unbiased= (the
 * correction 1 or 0), not both, as PyTorch. */
bool infer_variance(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, x->loc, "std and var only support floating point and complex dtypes (the input is %s)",
                 dtype_name(x->type.dtype));
        return false;
    }
    Expr *corr = named(call, "correction"), *unb = named(call, "unbiased");
    if (corr && unb) {
        error_at(c, corr->loc, "%s(): give correction= or unbiased=, not both", call->op->name);
        return false;
    }
    double v;
    bool unbiased;
    if ((corr && !number_value(c, corr, &v)) || !bool_param(c, call, "unbiased", true, &unbiased))
        return false;
    if (corr && v < 0) {
        error_at(c, corr->loc, "%s(): the correction must be at least 0, but it is %s", call->op->name,
                 loc_text(c, corr->loc));
        return false;
    }
    int64_t dim = -1;
    Expr *d = named(call, "dim");
    bool keepdim;
    if ((d && !reduce_dims(c, call, d, xs->ndim, &dim)) || !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    call->dim = dim;
    call->type.dtype = x->type.dtype;
    call->type.shape = reduction_shape(c, call, xs, dim, keepdim);
    return true;
}

bool infer_trace(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    if (x->type.shape.ndim != 2) {
        error_at(c, x->loc, "trace: expected a matrix, but got tensor with dim %d", x->type.shape.ndim);
        return false;
    }
    if (!not_bool(c, call, x))
        return false;
    call->type.dtype = dtype_is_float(x->type.dtype) ? x->type.dtype : DT_I64;
    call->type.shape.ndim = 0;
    return true;
}

/* ---- softmax and log_softmax -------------------------------------------- */

bool infer_softmax(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t dim;
    if (!normalise_dim(c, arg(call, 1), x->type.shape.ndim, &dim))
        return false;
    call->dim = dim;
    DType want = dtype_arg(c, call, 2);
    if (want != DT_NONE && !dtype_is_float(want)) {
        error_at(c, arg(call, 2)->loc, "%s() computes in floating point; dtype=%s is not a floating type",
                 call->op->name, dtype_name(want));
        return false;
    }
    DType t = want != DT_NONE ? want : x->type.dtype;
    if (!dtype_is_float(t)) {
        error_at(c, call->loc, "%s() needs a floating-point tensor, but this is %s", call->op->name,
                 type_to_string(c, &x->type));
        return false;
    }
    call->type.dtype = t;
    call->type.shape = x->type.shape;
    return true;
}

/* ---- sort and quantile -------------------------------------------------- */

/* torch.sort: (values, indices), values in the input's dtype, indices i64,
 * both of the input's shape. */
bool infer_sort(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t dim = -1;
    if (arg(call, 1) && !normalise_dim(c, arg(call, 1), x->type.shape.ndim, &dim))
        return false;
    call->dim = dim < 0 ? dim + (x->type.shape.ndim ? x->type.shape.ndim : 1) : dim;
    call->type = x->type;
    call->more_types = arena_alloc(c->arena, sizeof(Type));
    call->more_types[0] = x->type;
    call->more_types[0].dtype = DT_I64;
    call->nmore = 1;
    return true;
}

/* quantile/nanquantile with a number q: the reduction of dim (all dims
 * for dim=None), f32 or f64 input as PyTorch's. */
bool infer_quantile(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    DType t = x->type.dtype;
    if (t != DT_F32 && t != DT_F64 && !(dtype_is_float(t) && call->autocast_on && !c->autocast_ran)) {
        error_at(c, x->loc, "%s() input tensor must be either float or double dtype", call->op->name);
        return false;
    }
    double q;
    Expr *qe = named(call, "q");
    if (!number_value(c, qe, &q))
        return false;
    if (!(q >= 0 && q <= 1)) {
        error_at(c, qe->loc, "%s() q must be in the range [0, 1] but got %g", call->op->name, q);
        return false;
    }
    const char *interp;
    if (!str_param(c, call, "interpolation", "linear", &interp))
        return false;
    if (strcmp(interp, "linear") && strcmp(interp, "lower") && strcmp(interp, "higher") && strcmp(interp, "midpoint") &&
        strcmp(interp, "nearest")) {
        error_at(c, named(call, "interpolation")->loc, "%s() interpolation must be one of linear, lower, higher, "
                 "midpoint or nearest, but got %s", call->op->name, interp);
        return false;
    }
    const Shape *xs = &x->type.shape;
    int64_t dim = -1;
    Expr *d = named(call, "dim");
    bool keepdim;
    if ((d && !normalise_dim(c, d, xs->ndim, &dim)) || !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    call->dim = dim;
    call->type.dtype = t;
    call->type.shape = xs->ndim == 0 ? *xs : reduced(c, xs, dim, keepdim);
    return true;
}

/* ---- norms as reductions ------------------------------------------------ */

/* norm, linalg_vector_norm, linalg_matrix_norm, frobenius_norm, nuclear_norm, renorm. */
bool infer_norm_reduce(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, x->loc, id == OP_LINALG_VECTOR_NORM || id == OP_RENORM
                 ? "linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s"
                 : "norm(): input dtype should be either floating point or complex. Got %s instead.",
                 dtype_name(x->type.dtype));
        return false;
    }
    int kd = op_param_index(call->op, "dtype");
    DType want = kd >= 0 ? dtype_arg(c, call, kd) : DT_NONE;
    if (kd >= 0 && arg(call, kd) && want == DT_NONE)
        return false;
    if (want != DT_NONE && !dtype_is_float(want)) {
        error_at(c, arg(call, kd)->loc, "%s(): dtype=%s is not a floating type", call->op->name, dtype_name(want));
        return false;
    }
    if (want != DT_NONE && dtype_promote(x->type.dtype, want) != want) {
        error_at(c, arg(call, kd)->loc, "linalg.vector_norm: the dtype of the input (%s) should be convertible without "
                 "narrowing to the specified dtype (%s)", dtype_name(x->type.dtype), dtype_name(want));
        return false;
    }
    bool keepdim = false;
    if (op_param_index(call->op, "keepdim") >= 0 && !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    Shape out = *xs;
    if (id == OP_RENORM) {
        int64_t dim;
        double p, maxnorm;
        if (!normalise_dim(c, named(call, "dim"), xs->ndim, &dim) || !float_param(c, call, "p", 2, &p) ||
            !float_param(c, call, "maxnorm", 0, &maxnorm))
            return false;
        if (p <= 0 || maxnorm < 0) {
            error_at(c, call->loc, p <= 0 ? "renorm: non-positive-norm not supported" : "renorm: expected maxnorm to be >= 0");
            return false;
        }
    } else if (id == OP_LINALG_MATRIX_NORM || id == OP_NUCLEAR_NORM) {
        if (id == OP_NUCLEAR_NORM ? xs->ndim != 2 : xs->ndim < 2) {
            error_at(c, x->loc, id == OP_NUCLEAR_NORM ? "Expected a tensor with 2 dimensions, but got a tensor with %d "
                     "dimensions instead." : "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.",
                     xs->ndim);
            return false;
        }
        const char *ord = "fro";
        if (id == OP_LINALG_MATRIX_NORM && !str_param(c, call, "ord", "fro", &ord))
            return false;
        if (strcmp(ord, "fro") != 0 && strcmp(ord, "nuc") != 0) {
            error_at(c, named(call, "ord")->loc, "linalg.matrix_norm: Order %s not supported.", ord);
            return false;
        }
        out = leading(xs, 2);
        if (keepdim) {
            out.dims[out.ndim++] = poly_const(c, 1);
            out.dims[out.ndim++] = poly_const(c, 1);
        }
    } else {
        int64_t dim = -1;
        Expr *d = named(call, "dim");
        if (d && !reduce_dims(c, call, d, xs->ndim, &dim))
            return false;
        if (id == OP_FROBENIUS_NORM && !d)
            return false;
        int kp = op_param_index(call->op, id == OP_LINALG_VECTOR_NORM ? "ord" : "p");
        double p;
        if (kp >= 0 && !float_param(c, call, call->op->params[kp].name, 2, &p))
            return false;
        out = reduction_shape(c, call, xs, dim, keepdim);
        call->dim = dim; /* -1: every dim (or those of call->dims_mask) */
    }
    call->type.dtype = want != DT_NONE ? want : x->type.dtype;
    call->type.shape = out;
    return true;
}
