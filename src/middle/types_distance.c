/* types_distance.c: the type rules of the distances.
 *
 * cdist, cosine_similarity, dist, pdist and linalg_vecdot: the distance
 * or similarity between rows (or whole tensors) of two operands, reduced
 * over the vector dim.
 */

#include "types.h"

#include <string.h>

bool infer_cdist(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *xs[2] = {arg(call, 0), arg(call, 1)};
    for (int i = 0; i < 2; i++) {
        if (xs[i]->type.shape.ndim < 2) {
            error_at(c, xs[i]->loc, "cdist only supports at least 2D tensors, X%d got: %dD", i + 1,
                     xs[i]->type.shape.ndim);
            return false;
        }
        if (!dtype_is_float(xs[i]->type.dtype)) {
            error_at(c, xs[i]->loc, "cdist only supports floating-point dtypes, X%d got: %s", i + 1,
                     dtype_name(xs[i]->type.dtype));
            return false;
        }
    }
    if (!same_dtype(c, call, xs[0], xs[1]))
        return false;
    const Shape *a = &xs[0]->type.shape, *b = &xs[1]->type.shape;
    if (!dims_match(a->dims[a->ndim - 1], b->dims[b->ndim - 1])) {
        error_at(c, call->loc, "X1 and X2 must have the same number of columns. X1: %s X2: %s",
                 dim_str(c, a->dims[a->ndim - 1]), dim_str(c, b->dims[b->ndim - 1]));
        return false;
    }
    double p;
    const char *mode;
    if (!float_param(c, call, "p", 2.0, &p) || !str_param(c, call, "compute_mode", "", &mode))
        return false;
    if (p < 0) {
        error_at(c, named(call, "p")->loc, "cdist only supports non-negative p values");
        return false;
    }
    if (*mode && strcmp(mode, "use_mm_for_euclid_dist_if_necessary") != 0 && strcmp(mode, "use_mm_for_euclid_dist") != 0 &&
        strcmp(mode, "donot_use_mm_for_euclid_dist") != 0) {
        error_at(c, named(call, "compute_mode")->loc, "%s is not a valid value for compute_mode", mode);
        return false;
    }
    Shape ba = leading(a, 2), bb = leading(b, 2), out;
    if (!broadcast(c, call, &ba, &bb, &out))
        return false;
    out.dims[out.ndim++] = a->dims[a->ndim - 2];
    out.dims[out.ndim++] = b->dims[b->ndim - 2];
    call->type.dtype = xs[0]->type.dtype;
    call->type.shape = out;
    return true;
}

/* cosine_similarity, dist, pdist, linalg_vecdot. */
bool infer_distance(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    OpId id = call->op->id;
    Expr *a = arg(call, 0);
    const Shape *as = &a->type.shape;
    if (id == OP_PDIST) {
        int64_t n;
        if (as->ndim != 2) {
            error_at(c, a->loc, "pdist only supports 2D tensors, got: %dD", as->ndim);
            return false;
        }
        if (!dtype_is_float(a->type.dtype)) {
            error_at(c, a->loc, "pdist only supports floating-point dtypes");
            return false;
        }
        if (!const_dim(as->dims[0], &n)) {
            error_at(c, a->loc, "pdist(): the number of rows %s must be known: the result has N*(N-1)/2 entries",
                     dim_str(c, as->dims[0]));
            return false;
        }
        call->type.dtype = a->type.dtype;
        call->type.shape.ndim = 1;
        call->type.shape.dims[0] = poly_const(c, n * (n - 1) / 2);
        return true;
    }
    if (!require_tensor(c, call, 1))
        return false;
    Expr *b = arg(call, 1);
    Shape s;
    if (!broadcast(c, call, as, &b->type.shape, &s))
        return false;
    DType t = promote_tensors(&a->type, &b->type);
    if (id == OP_LINALG_VECDOT) {
        if (a->type.dtype != b->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, call->loc, "linalg.vecdot: Expected x and y to have the same dtype, but found x of type %s and "
                     "y of type %s instead", dtype_name(a->type.dtype), dtype_name(b->type.dtype));
            return false;
        }
        if (!dtype_is_float(a->type.dtype)) {
            error_at(c, a->loc, "linalg.vecdot: Expected a floating point or complex tensor as input. Got %s",
                     dtype_name(a->type.dtype));
            return false;
        }
        t = a->type.dtype;
    } else if (id == OP_DIST && (a->type.dtype == DT_BOOL || b->type.dtype == DT_BOOL)) {
        error_at(c, call->loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                 "to invert a mask, use the `~` or `logical_not()` operator instead.");
        return false;
    } else if (!dtype_is_float(t)) {
        error_at(c, call->loc, id == OP_DIST ? "norm(): input dtype should be either floating point or complex. Got %s instead."
                               : "expected common dtype to be floating point, yet common dtype is %s", dtype_name(t));
        return false;
    }
    if (id == OP_DIST) {
        s.ndim = 0;
    } else {
        int64_t dim = id == OP_COSINE_SIMILARITY ? 1 : -1;
        Expr *de = named(call, "dim");
        if (de && !normalise_dim(c, de, s.ndim, &dim))
            return false;
        if (!de && dim < 0)
            dim += s.ndim;
        if (!de && (dim < 0 || dim >= (s.ndim ? s.ndim : 1))) {
            error_at(c, call->loc, "Dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                     -(s.ndim ? s.ndim : 1), (s.ndim ? s.ndim : 1) - 1, (long long)(id == OP_COSINE_SIMILARITY ? 1 : -1));
            return false;
        }
        s = s.ndim == 0 ? s : reduced(c, &s, dim, false);
    }
    call->type.dtype = t;
    call->type.shape = s;
    return true;
}
