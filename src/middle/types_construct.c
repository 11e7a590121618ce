/* types_construct.c: the type rules of the constructors and of the
 * triangular masks.
 *
 * zeros, ones, full, arange, linspace and eye make a tensor from numbers:
 * sizes are integer literals or dimensions of the model (size_arg), so
 * zeros(B, 4) has the symbolic batch; the *_like forms take a tensor's
 * shape and dtype; one_hot makes i64 from i64 class indices with a
 * compile-time num_classes.  The dtype is dtype= where given, else
 * PyTorch's default: f32 (the default float), i64 for arange of integers
 * and for full with an integer fill_value, bool for full with a bool one.
 * triu and tril keep their input's type.  Every dtype is allowed: the
 * kernels take the dtype as an argument (amprt/elementwise.h).
 */

#include "types.h"

#include <math.h>
#include <string.h>

static DType dtype_or(Ctx *c, Expr *call, DType dflt, bool *ok)
{
    Expr *d = named(call, "dtype");
    *ok = true;
    if (!d)
        return dflt;
    if (d->kind != E_DTYPE || dtype_is_complex(d->dtype)) {
        error_at(c, d->loc, "%s(): dtype= takes one of f64, f32, bf16, f16, i64, i32 and bool", call->op->name);
        *ok = false;
        return DT_NONE;
    }
    return d->dtype;
}

/* A number argument: its value, and whether it was written as a float. */
static bool number_of(Ctx *c, Expr *e, double *v, bool *is_float)
{
    if (e->kind == E_BOOL) {
        *v = e->boolean;
        *is_float = false;
        return true;
    }
    Expr *lit = e->kind == E_CALL && e->list && e->list->len == 1 ? VEC_AT(e->list, 0) : e;
    *is_float = lit->kind == E_NUMBER && lit->is_float;
    return number_value(c, e, v);
}

static bool sizes_of(Ctx *c, Expr *call, const char *name, Shape *out)
{
    Poly *v[MAX_DIMS + 1];
    Expr *where[MAX_DIMS + 1];
    bool ok;
    int n = size_varargs(c, call, name, v, where, &ok);
    if (!ok)
        return false;
    out->ndim = n;
    for (int i = 0; i < n; i++) {
        int64_t k;
        if (const_dim(v[i], &k) && k < 0) {
            error_at(c, where[i]->loc, "Trying to create tensor with negative dimension %lld: [%s]", (long long)k,
                     loc_text(c, where[i]->loc));
            return false;
        }
        out->dims[i] = v[i];
    }
    return true;
}

bool infer_construct(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool like = id == OP_ZEROS_LIKE || id == OP_ONES_LIKE || id == OP_FULL_LIKE;
    bool full = id == OP_FULL || id == OP_FULL_LIKE;
    Type t = {.dtype = DT_F32};
    if (like) {
        if (!require_tensor(c, call, 0))
            return false;
        t = arg(call, 0)->type;
    } else if (!sizes_of(c, call, "size", &t.shape))
        return false;
    if (full) {
        double v;
        bool is_float;
        Expr *fv = named(call, "fill_value");
        if (is_tensor(fv)) {
            error_at(c, fv->loc, "%s(): fill_value takes a number", call->op->name);
            return false;
        }
        if (!number_of(c, fv, &v, &is_float))
            return false;
        if (id == OP_FULL)
            t.dtype = fv->kind == E_BOOL ? DT_BOOL : is_float ? DT_F32 : DT_I64;
    }
    bool ok;
    t.dtype = dtype_or(c, call, t.dtype, &ok);
    if (!ok)
        return false;
    call->type = t;
    return true;
}

/* arange(end), arange(start, end, step=1): ceil((end - start) / step)
 * values; i64 when every number is an integer. */
bool infer_arange(Ctx *c, Expr *call)
{
    Expr *a = named(call, "start"), *b = named(call, "end"), *s = named(call, "step");
    double start = 0, end, step = 1;
    bool f0 = false, f1 = false, f2 = false;
    if (!number_of(c, a, b ? &start : &end, b ? &f0 : &f1) || (b && !number_of(c, b, &end, &f1)) ||
        (s && !number_of(c, s, &step, &f2)))
        return false;
    if (step == 0) {
        error_at(c, s->loc, "step must be nonzero");
        return false;
    }
    if ((step > 0 && end < start) || (step < 0 && end > start)) {
        error_at(c, call->loc, "upper bound and larger bound inconsistent with step sign");
        return false;
    }
    bool ok;
    DType t = dtype_or(c, call, f0 || f1 || f2 ? DT_F32 : DT_I64, &ok);
    if (!ok)
        return false;
    double n = ceil((end - start) / step);
    if (!(n < 1e15)) {
        error_at(c, call->loc, "arange(): %g elements is too many for a compiled tensor", n);
        return false;
    }
    call->type.dtype = t;
    call->type.shape = (Shape){.ndim = 1, .dims = {poly_const(c, (int64_t)n)}};
    return true;
}

/* linspace(start, end, steps), f32 by default; eye(n, m=n). */
bool infer_linspace(Ctx *c, Expr *call)
{
    bool ok, is_float;
    DType t = dtype_or(c, call, DT_F32, &ok);
    if (!ok)
        return false;
    Shape s = {0};
    if (call->op->id == OP_LINSPACE) {
        double v;
        int64_t steps;
        if (!number_of(c, named(call, "start"), &v, &is_float) || !number_of(c, named(call, "end"), &v, &is_float) ||
            !int_arg(c, named(call, "steps"), &steps))
            return false;
        if (steps < 0) {
            error_at(c, named(call, "steps")->loc, "number of steps must be non-negative");
            return false;
        }
        s = (Shape){.ndim = 1, .dims = {poly_const(c, steps)}};
    } else {
        Poly *n, *m;
        Expr *me = named(call, "m");
        if (!size_arg(c, named(call, "n"), &n) || (me && !size_arg(c, me, &m)))
            return false;
        int64_t k;
        if ((const_dim(n, &k) && k < 0) || (me && const_dim(m, &k) && k < 0)) {
            error_at(c, call->loc, "eye(): n and m must be greater or equal to 0");
            return false;
        }
        s = (Shape){.ndim = 2, .dims = {n, me ? m : n}};
    }
    call->type.dtype = t;
    call->type.shape = s;
    return true;
}

/* one_hot(input i64, num_classes): [..., num_classes] i64. */
bool infer_one_hot(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t k;
    if (x->type.dtype != DT_I64) {
        error_at(c, x->loc, "one_hot is only applicable to index tensor (i64), got %s", dtype_name(x->type.dtype));
        return false;
    }
    if (!int_param(c, call, "num_classes", -1, &k))
        return false;
    if (k < 0) {
        error_at(c, named(call, "num_classes") ? named(call, "num_classes")->loc : call->loc,
                 "one_hot(): num_classes=-1 takes the largest index plus one, which is known only at run time; "
                 "give num_classes");
        return false;
    }
    Shape s = x->type.shape;
    if (!push_dim(c, call, &s, poly_const(c, k)))
        return false;
    call->type.dtype = DT_I64;
    call->type.shape = s;
    return true;
}

/* triu, tril: at least 2 dims, the input's type. */
bool infer_tri(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t d;
    if (!int_param(c, call, "diagonal", 0, &d))
        return false;
    if (x->type.shape.ndim < 2) {
        error_at(c, x->loc, "%s: input tensor must have at least 2 dimensions", call->op->name);
        return false;
    }
    call->type = x->type;
    return true;
}
