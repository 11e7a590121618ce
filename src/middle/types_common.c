/* types_common.c: what the type rules of every family share.
 *
 * Reading a call's arguments (named, the *_param readers, int_varargs,
 * normalise_dim), checking its operands (require_tensor, same_dtype, ...)
 * and building result shapes (reduced, leading, push_dim, affine,
 * more_results).  The conventions these carry are those of types.h: an
 * argument left out reads as its default, and a check that fails reports
 * one error at the argument and returns false.
 */

#include "types.h"

#include <stdlib.h>
#include <string.h>

/* ---- reading arguments -------------------------------------------------- */

Expr *named(Expr *call, const char *name)
{
    int k = op_param_index(call->op, name);
    ASSERT(k >= 0);
    return call->bound[k];
}

bool int_param(Ctx *c, Expr *call, const char *name, int64_t dflt, int64_t *out)
{
    Expr *e = named(call, name);
    *out = dflt;
    return !e || int_arg(c, e, out);
}

bool spatial_param(Ctx *c, Expr *call, const char *name, const int64_t *dflt, int ns, int64_t *out)
{
    Expr *e = named(call, name);
    for (int i = 0; i < ns; i++)
        out[i] = dflt[i];
    if (!e)
        return true;
    if (e->kind != E_LIST) {
        int64_t v;
        if (!int_arg(c, e, &v))
            return false;
        for (int i = 0; i < ns; i++)
            out[i] = v;
        return true;
    }
    if (e->list->len != ns) {
        error_at(c, e->loc, "%s(): '%s' takes one int or %d of them, one per spatial dimension, but %d were given",
                 call->op->name, name, ns, e->list->len);
        return false;
    }
    for (int i = 0; i < ns; i++)
        if (!int_arg(c, VEC_AT(e->list, i), &out[i]))
            return false;
    return true;
}

bool bool_param(Ctx *c, Expr *call, const char *name, bool dflt, bool *out)
{
    Expr *e = named(call, name);
    *out = dflt;
    if (!e)
        return true;
    if (e->kind != E_BOOL) {
        error_at(c, e->loc, "%s= takes true or false", name);
        return false;
    }
    *out = e->boolean;
    return true;
}

/* A number argument (2, 0.5, -1e-3), as a double for range checks only:
 * values that reach a kernel stay exact literals. */
bool number_value(Ctx *c, Expr *e, double *out)
{
    bool neg = false;
    Expr *lit = e;
    if (lit->kind == E_CALL && lit->op && lit->op->id == OP_NEG && !is_tensor(lit)) {
        neg = true;
        lit = VEC_AT(lit->list, 0);
    }
    if (lit->kind != E_NUMBER) {
        error_at(c, e->loc, "expected a number here");
        return false;
    }
    *out = strtod(lit->text, NULL);
    if (neg)
        *out = -*out;
    return true;
}

bool float_param(Ctx *c, Expr *call, const char *name, double dflt, double *out)
{
    Expr *e = named(call, name);
    *out = dflt;
    return !e || number_value(c, e, out);
}

bool str_param(Ctx *c, Expr *call, const char *name, const char *dflt, const char **out)
{
    Expr *e = named(call, name);
    *out = dflt;
    if (!e)
        return true;
    if (e->kind != E_STRING) {
        error_at(c, e->loc, "%s= takes a string", name);
        return false;
    }
    *out = e->text;
    return true;
}

/* The int varargs of a call (reshape's shape, permute's dims), in order;
 * or the entries of an int[] parameter (roll's shifts=(1, 2)). */
int int_varargs(Ctx *c, Expr *call, const char *name, int64_t *out, Expr **where, bool *ok)
{
    int n = 0;
    *ok = true;
    for (int i = 0; i < call->op->nparams; i++) {
        if (strcmp(call->op->params[i].name, name) != 0 || !arg(call, i))
            continue;
        Expr *a = arg(call, i);
        int count = a->kind == E_LIST ? a->list->len : 1;
        if (a->kind == E_LIST && n + count > MAX_DIMS) {
            error_at(c, a->loc, "%s(): '%s' takes at most %d entries", call->op->name, name, MAX_DIMS);
            *ok = false;
            return n;
        }
        for (int m = 0; m < count; m++) {
            where[n] = a->kind == E_LIST ? VEC_AT(a->list, m) : a;
            if (!int_arg(c, where[n], &out[n]))
                *ok = false;
            n++;
        }
    }
    return n;
}

int size_varargs(Ctx *c, Expr *call, const char *name, Poly **out, Expr **where, bool *ok)
{
    int n = 0;
    *ok = true;
    for (int i = 0; i < call->op->nparams; i++) {
        if (strcmp(call->op->params[i].name, name) != 0 || !arg(call, i))
            continue;
        Expr *a = arg(call, i);
        if (a->kind == E_LIST) {
            /* full((2, B), v): the list is the shape */
            for (int m = 0; m < a->list->len && n < MAX_DIMS; m++, n++) {
                where[n] = VEC_AT(a->list, m);
                if (!size_arg(c, where[n], &out[n]))
                    *ok = false;
            }
            if (a->list->len > MAX_DIMS) {
                error_at(c, a->loc, "%s(): at most %d sizes", call->op->name, MAX_DIMS);
                *ok = false;
            }
            continue;
        }
        where[n] = a;
        if (!size_arg(c, a, &out[n]))
            *ok = false;
        n++;
    }
    return n;
}

/* An int[] argument: one int (count 1) or a list of them, each at most
 * max; 0 when not written, -1 when reported. */
int int_list_param(Ctx *c, Expr *call, const char *name, int64_t *out, int max)
{
    Expr *e = named(call, name);
    if (!e)
        return 0;
    if (e->kind != E_LIST)
        return int_arg(c, e, &out[0]) ? 1 : -1;
    if (e->list->len > max) {
        error_at(c, e->loc, "%s(): '%s' takes at most %d entries, but %d were given", call->op->name, name, max,
                 e->list->len);
        return -1;
    }
    for (int i = 0; i < e->list->len; i++)
        if (!int_arg(c, VEC_AT(e->list, i), &out[i]))
            return -1;
    return e->list->len;
}

/* A reduction's dim=: one dim (*dim, normalised), or a list of them
 * (sum(x, dim=(1, 2))), which sets call->dims_mask and *dim = -1; a dim
 * listed twice is an error, as in PyTorch. */
bool reduce_dims(Ctx *c, Expr *call, Expr *d, int ndim, int64_t *dim)
{
    call->dims_mask = 0;
    if (d->kind != E_LIST)
        return normalise_dim(c, d, ndim, dim);
    unsigned mask = 0;
    for (int i = 0; i < d->list->len; i++) {
        Expr *item = VEC_AT(d->list, i);
        int64_t k;
        if (!normalise_dim(c, item, ndim, &k))
            return false;
        if (mask & (1u << k)) {
            error_at(c, item->loc, "dim %lld appears multiple times in the list of dims", (long long)k);
            return false;
        }
        mask |= 1u << k;
    }
    call->dims_mask = ndim == 0 ? 0 : mask;
    *dim = -1;
    return true;
}

/* The result shape of a reduction over dim (every dim for -1), or over
 * call->dims_mask when set. */
Shape reduction_shape(Ctx *c, Expr *call, const Shape *s, int64_t dim, bool keepdim)
{
    if (!call->dims_mask)
        return s->ndim == 0 ? *s : reduced(c, s, dim, keepdim);
    Shape r = {0};
    for (int i = 0; i < s->ndim; i++) {
        if (call->dims_mask & (1u << i)) {
            if (keepdim)
                r.dims[r.ndim++] = poly_const(c, 1);
        } else {
            r.dims[r.ndim++] = s->dims[i];
        }
    }
    return r;
}

/* dim in [-ndim, ndim), like PyTorch (a 0-dim tensor accepts 0 and -1). */
bool normalise_dim(Ctx *c, Expr *e, int ndim, int64_t *dim)
{
    if (!int_arg(c, e, dim))
        return false;
    int64_t n = ndim == 0 ? 1 : ndim;
    if (*dim < -n || *dim >= n) {
        error_at(c, e->loc, "dim %lld is out of range for a tensor of %d dimension%s (expected %lld to %lld)",
                 (long long)*dim, ndim, ndim == 1 ? "" : "s", (long long)-n, (long long)(n - 1));
        return false;
    }
    if (*dim < 0)
        *dim += n;
    return true;
}

/* ---- checking operands -------------------------------------------------- */

bool is_number(Expr *e)
{
    if (e->kind == E_NUMBER)
        return true;
    /* -2.5 arrives as neg(2.5) */
    return e->kind == E_CALL && e->op && e->op->id == OP_NEG && !is_tensor(e) &&
           ((Expr *)VEC_AT(e->list, 0))->kind == E_NUMBER;
}

bool require_tensor(Ctx *c, Expr *call, int i)
{
    Expr *a = arg(call, i);
    if (is_tensor(a))
        return true;
    error_at(c, a->loc, "argument '%s' of %s() must be a tensor", call->op->params[i].name, call->op->name);
    return false;
}

bool tensor_arg(Ctx *c, Expr *call, const char *name, Expr **out)
{
    int k = op_param_index(call->op, name);
    *out = call->bound[k];
    return !*out || require_tensor(c, call, k);
}

bool require_float(Ctx *c, Expr *call, Expr *a)
{
    if (dtype_is_float(a->type.dtype))
        return true;
    error_at(c, a->loc, "%s() needs a floating-point tensor, but this is %s", call->op->name,
             type_to_string(c, &a->type));
    return false;
}

bool not_bool(Ctx *c, Expr *call, Expr *x)
{
    if (x->type.dtype != DT_BOOL)
        return true;
    error_at(c, call->loc, "%s() is not defined for bool tensors", call->op->name);
    return false;
}

bool same_dtype(Ctx *c, Expr *call, Expr *a, Expr *b)
{
    if (a->type.dtype == b->type.dtype)
        return true;
    /* inside autocast the casts may still unify them: autocast re-runs this
     * rule after casting and reports what remains */
    if (call->autocast_on && !c->autocast_ran)
        return true;
    error_at(c, call->loc, "%s() expects both operands to have the same dtype, got %s and %s %s", call->op->name,
             dtype_name(a->type.dtype), dtype_name(b->type.dtype),
             call->autocast_on ? "(autocast does not convert them here: cast one operand)"
                               : "(use autocast, or cast one operand)");
    return false;
}

/* A 1-D parameter with one entry per channel. */
bool per_channel(Ctx *c, Expr *call, Expr *p, const Poly *channels)
{
    if (p->type.shape.ndim == 1 && dims_match(p->type.shape.dims[0], channels))
        return true;
    error_at(c, p->loc, "%s(): %s should have %s elements, one per channel, but it is %s", call->op->name,
             p->kind == E_NAME ? p->text : "this parameter", dim_str(c, channels), type_to_string(c, &p->type));
    return false;
}

/* e broadcasts to exactly `to` (an operand expanded to a result's shape). */
bool broadcasts_to(Ctx *c, Expr *call, Expr *e, const Shape *to, const char *what)
{
    Shape bc;
    if (!broadcast(c, call, &e->type.shape, to, &bc))
        return false;
    if (shape_equal(&bc, to))
        return true;
    error_at(c, e->loc, "%s(): %s of shape %s cannot be broadcast to the result's shape %s", call->op->name, what,
             shape_str(c, &e->type.shape), shape_str(c, to));
    return false;
}

/* ---- result shapes ------------------------------------------------------ */

/* Drop (or keep as 1) dim d of s; d < 0: every dim. */
Shape reduced(Ctx *c, const Shape *s, int64_t d, bool keepdim)
{
    Shape r = {0};
    for (int i = 0; i < s->ndim; i++) {
        if (d < 0 || i == d) {
            if (keepdim)
                r.dims[r.ndim++] = poly_const(c, 1);
        } else {
            r.dims[r.ndim++] = s->dims[i];
        }
    }
    return r;
}

/* The leading (batch) dims of s, all but the last k. */
Shape leading(const Shape *s, int k)
{
    Shape r = {0};
    for (int i = 0; i + k < s->ndim; i++)
        r.dims[r.ndim++] = s->dims[i];
    return r;
}

bool push_dim(Ctx *c, Expr *call, Shape *s, Poly *d)
{
    if (s->ndim == MAX_DIMS) {
        error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
        return false;
    }
    s->dims[s->ndim++] = d;
    return true;
}

/* a + b*k + off, for output sizes of windows and pads; NULL (reported) on overflow. */
Poly *affine(Ctx *c, Expr *call, const Poly *a, int64_t k, int64_t off)
{
    Poly *r = poly_mul(c, a, poly_const(c, k));
    if (r)
        r = poly_add(c, r, poly_const(c, off));
    if (!r)
        error_at(c, call->loc, "this dimension overflows 64-bit integers");
    return r;
}

/* The n results after the first of a call (values, indices = sort(x)). */
void more_results(Ctx *c, Expr *call, int n, const Type *types)
{
    call->more_types = arena_alloc(c->arena, (size_t)n * sizeof(Type));
    for (int i = 0; i < n; i++)
        call->more_types[i] = types[i];
    call->nmore = n;
}
