/* typecheck.c: shapes and dtypes, as PyTorch infers them.
 *
 * Requires: resolved AST.  Produces: a Type on every tensor expression and
 * symbol; dims as polynomials over the model's symbolic dims; errors where
 * PyTorch would raise at run time (mismatched shapes, a float op on
 * integers, mismatched dtypes in linear/matmul).
 *
 * The infer_* rules are also called again by autocast.c after it wraps
 * arguments in casts, so they look only at their arguments' current types.
 * Literals are read with GMP: integers exactly (a dim that does not fit
 * int64 is an error, not a wrap-around).
 */
#include "ampc.h"

#include <gmp.h>
#include <string.h>

const char *type_to_string(Ctx *c, const Type *t)
{
    if (t->dtype == DT_NONE)
        return "a non-tensor value";
    return arena_printf(c->arena, "%s%s", dtype_name(t->dtype), shape_to_string(c, &t->shape, c->sym_names));
}

/* ---- literals and dims ------------------------------------------------ */

static bool int_literal(Ctx *c, Expr *e, int64_t *out)
{
    mpz_t z;
    mpz_init(z);
    bool ok = mpz_set_str(z, e->text, 10) == 0 && mpz_fits_slong_p(z);
    if (ok)
        *out = mpz_get_si(z);
    mpz_clear(z);
    if (!ok)
        error_at(c, e->loc, "integer %s is too large (the limit is 2^63 - 1)", e->text);
    return ok;
}

/* An int argument: a literal, possibly negated (dim=-1). */
static bool int_arg(Ctx *c, Expr *e, int64_t *out)
{
    if (e->kind == E_CALL && e->is_operator && e->op && e->op->id == OP_NEG && e->list->len == 1) {
        Expr *inner = VEC_AT(e->list, 0);
        if (inner->kind == E_NUMBER && !inner->is_float && int_literal(c, inner, out)) {
            *out = -*out;
            return true;
        }
    }
    if (e->kind == E_NUMBER && !e->is_float)
        return int_literal(c, e, out);
    error_at(c, e->loc, "expected an integer literal here");
    return false;
}

static Poly *dim_expr(Ctx *c, Expr *e)
{
    switch (e->kind) {
    case E_NUMBER: {
        int64_t v;
        if (e->is_float) {
            error_at(c, e->loc, "a dimension must be an integer, not %s", e->text);
            return NULL;
        }
        return int_literal(c, e, &v) ? poly_const(c, v) : NULL;
    }
    case E_NAME:
        return e->sym ? poly_sym(c, e->sym->index) : NULL;
    case E_CALL:
        if (e->is_operator && e->list->len == 2) {
            Poly *a = dim_expr(c, VEC_AT(e->list, 0));
            Poly *b = dim_expr(c, VEC_AT(e->list, 1));
            if (!a || !b)
                return NULL;
            Poly *r = NULL;
            if (strcmp(e->callee, "add") == 0)
                r = poly_add(c, a, b);
            else if (strcmp(e->callee, "sub") == 0)
                r = poly_sub(c, a, b);
            else if (strcmp(e->callee, "mul") == 0)
                r = poly_mul(c, a, b);
            else {
                error_at(c, e->name_loc, "dimensions can be combined with +, - and * only");
                return NULL;
            }
            if (!r)
                error_at(c, e->loc, "this dimension overflows 64-bit integers");
            return r;
        }
        break;
    default:
        break;
    }
    error_at(c, e->loc, "a dimension is an integer, a dimension name, or +, -, * of those");
    return NULL;
}

static bool declared_type(Ctx *c, Expr *te, Type *out)
{
    out->dtype = te->dtype;
    out->shape.ndim = 0;
    if (te->list->len > MAX_DIMS) {
        error_at(c, te->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < te->list->len; i++) {
        Expr *d = VEC_AT(te->list, i);
        Poly *p = dim_expr(c, d);
        int64_t v;
        if (p && poly_is_const(p, &v) && v < 0) {
            error_at(c, d->loc, "dimension %lld is negative", (long long)v);
            p = NULL;
        }
        if (!p) {
            ok = false;
            p = poly_const(c, 1);
        }
        out->shape.dims[out->shape.ndim++] = p;
    }
    if (ok) {
        Poly *bytes = shape_numel(c, &out->shape);
        if (bytes)
            bytes = poly_mul(c, bytes, poly_const(c, dtype_size(out->dtype)));
        int64_t v;
        if (!bytes || (poly_is_const(bytes, &v) && v < 0)) {
            error_at(c, te->loc, "tensor of type %s is larger than 2^63 bytes", type_to_string(c, out));
            ok = false;
        }
    }
    return ok;
}

/* ---- op rules --------------------------------------------------------- */

static Expr *arg(Expr *call, int i) { return call->bound[i]; }

static bool is_tensor(Expr *e) { return e && e->type.dtype != DT_NONE; }

static bool is_number(Expr *e)
{
    if (e->kind == E_NUMBER)
        return true;
    /* -2.5 arrives as neg(2.5) */
    return e->kind == E_CALL && e->op && e->op->id == OP_NEG && !is_tensor(e) &&
           ((Expr *)VEC_AT(e->list, 0))->kind == E_NUMBER;
}

static bool require_tensor(Ctx *c, Expr *call, int i)
{
    Expr *a = arg(call, i);
    if (is_tensor(a))
        return true;
    error_at(c, a->loc, "argument '%s' of %s() must be a tensor", call->op->params[i].name, call->op->name);
    return false;
}

static bool require_float(Ctx *c, Expr *call, Expr *a)
{
    if (dtype_is_float(a->type.dtype))
        return true;
    error_at(c, a->loc, "%s() needs a floating-point tensor, but this is %s", call->op->name,
             type_to_string(c, &a->type));
    return false;
}

static bool dims_match(const Poly *a, const Poly *b) { return poly_equal(a, b); }

static const char *dim_str(Ctx *c, const Poly *p) { return poly_to_c(c, p, c->sym_names); }

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

/* PyTorch's result_type for a tensor and a Python number: the number only
 * raises the category (int tensor * 2.5 is the default float, f32), never
 * the width (f16 tensor * 2.5 stays f16). */
static DType promote_with_scalar(DType t, bool scalar_is_float)
{
    if (scalar_is_float && !dtype_is_float(t))
        return DT_F32;
    if (t == DT_BOOL)
        return DT_I64;
    return t;
}

/* Broadcast two shapes, numpy style; NULL message on success. */
static bool broadcast(Ctx *c, Expr *call, const Shape *a, const Shape *b, Shape *out)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = n;
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        Poly *da = ia >= 0 ? a->dims[ia] : NULL, *db = ib >= 0 ? b->dims[ib] : NULL;
        int64_t va = 0, vb = 0;
        bool a1 = !da || (poly_is_const(da, &va) && va == 1);
        bool b1 = !db || (poly_is_const(db, &vb) && vb == 1);
        if (a1)
            out->dims[i] = db ? db : poly_const(c, 1);
        else if (b1 || dims_match(da, db))
            out->dims[i] = da;
        else {
            error_at(c, call->loc, "shapes %s and %s cannot be broadcast together: dimension %d is %s in one and %s in the other",
                     shape_to_string(c, a, c->sym_names), shape_to_string(c, b, c->sym_names), i, dim_str(c, da),
                     dim_str(c, db));
            return false;
        }
    }
    return true;
}

/* A dimensioned tensor outranks a 0-dim one within a category (torch.result_type). */
static DType promote_tensors(const Type *a, const Type *b)
{
    bool a0 = a->shape.ndim == 0, b0 = b->shape.ndim == 0;
    if (a0 != b0) {
        const Type *dimensioned = a0 ? b : a, *zero = a0 ? a : b;
        if (dtype_category(zero->dtype) <= dtype_category(dimensioned->dtype))
            return dimensioned->dtype;
        return zero->dtype; /* i64[N] + f64 0-dim tensor is f64 */
    }
    return dtype_promote(a->dtype, b->dtype);
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

static bool same_dtype(Ctx *c, Expr *call, Expr *a, Expr *b)
{
    if (a->type.dtype == b->type.dtype)
        return true;
    /* inside autocast the casts may still unify them: autocast re-runs this
     * rule after casting and reports what remains */
    if (call->autocast_on && !c->autocast_ran)
        return true;
    error_at(c, call->loc, "%s() expects both operands to have the same dtype, got %s and %s "
             "(use autocast, or cast one operand)", call->op->name, dtype_name(a->type.dtype), dtype_name(b->type.dtype));
    return false;
}

bool infer_linear(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *w = arg(call, 1), *bias = arg(call, 2);
    if (!require_float(c, call, x) || !same_dtype(c, call, x, w))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape;
    if (ws->ndim != 2 || xs->ndim < 1) {
        error_at(c, call->loc, "linear() takes input [..., in_features] and weight [out_features, in_features]; got %s and %s",
                 type_to_string(c, &x->type), type_to_string(c, &w->type));
        return false;
    }
    if (!dims_match(xs->dims[xs->ndim - 1], ws->dims[1])) {
        error_at(c, call->loc, "linear(): input has %s features but weight expects %s (input %s, weight %s)",
                 dim_str(c, xs->dims[xs->ndim - 1]), dim_str(c, ws->dims[1]), type_to_string(c, &x->type),
                 type_to_string(c, &w->type));
        return false;
    }
    if (bias) {
        if (!require_tensor(c, call, 2) || !same_dtype(c, call, x, bias))
            return false;
        if (bias->type.shape.ndim != 1 || !dims_match(bias->type.shape.dims[0], ws->dims[0])) {
            error_at(c, bias->loc, "linear(): bias must be [%s] to match the weight, got %s", dim_str(c, ws->dims[0]),
                     type_to_string(c, &bias->type));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = *xs;
    call->type.shape.dims[xs->ndim - 1] = ws->dims[0];
    return true;
}

/* torch.matmul: 1-D operands are promoted to matrices and the added dim
 * removed afterwards; batch dims broadcast. */
bool infer_matmul(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *a = arg(call, 0), *b = arg(call, 1);
    if (!require_float(c, call, a) || !same_dtype(c, call, a, b))
        return false;
    const Shape *as = &a->type.shape, *bs = &b->type.shape;
    if (as->ndim == 0 || bs->ndim == 0) {
        error_at(c, call->loc, "matmul() needs tensors of at least 1 dimension, got %s and %s",
                 type_to_string(c, &a->type), type_to_string(c, &b->type));
        return false;
    }
    Poly *k_a = as->dims[as->ndim - 1];
    Poly *k_b = bs->ndim == 1 ? bs->dims[0] : bs->dims[bs->ndim - 2];
    if (!dims_match(k_a, k_b)) {
        error_at(c, call->loc, "matmul(): shapes %s and %s cannot be multiplied (%s != %s)",
                 shape_to_string(c, as, c->sym_names), shape_to_string(c, bs, c->sym_names), dim_str(c, k_a),
                 dim_str(c, k_b));
        return false;
    }
    Shape batch_a = {0}, batch_b = {0}, batch;
    for (int i = 0; i + 2 < as->ndim; i++)
        batch_a.dims[batch_a.ndim++] = as->dims[i];
    for (int i = 0; i + 2 < bs->ndim; i++)
        batch_b.dims[batch_b.ndim++] = bs->dims[i];
    if (!broadcast(c, call, &batch_a, &batch_b, &batch))
        return false;
    Shape out = batch;
    if (as->ndim >= 2)
        out.dims[out.ndim++] = as->dims[as->ndim - 2];
    if (bs->ndim >= 2)
        out.dims[out.ndim++] = bs->dims[bs->ndim - 1];
    call->type.dtype = a->type.dtype;
    call->type.shape = out;
    return true;
}

/* dim in [-ndim, ndim), like PyTorch (a 0-dim tensor accepts 0 and -1). */
static bool normalise_dim(Ctx *c, Expr *e, int ndim, int64_t *dim)
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
    return d->dtype;
}

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

int reduction_code(const char *s)
{
    if (strcmp(s, "none") == 0)
        return 0;
    if (strcmp(s, "mean") == 0)
        return 1;
    if (strcmp(s, "sum") == 0)
        return 2;
    return -1;
}

bool infer_nll_loss(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *target = arg(call, 1), *weight = arg(call, 2), *red = arg(call, 4);
    if (!require_float(c, call, x))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    if (xs->ndim != 2 && xs->ndim != 1) {
        error_at(c, x->loc, "nll_loss() takes input [N, C] or [C], got %s", type_to_string(c, &x->type));
        return false;
    }
    if (target->type.dtype != DT_I64) {
        error_at(c, target->loc, "nll_loss() takes class indices as an i64 target, got %s",
                 type_to_string(c, &target->type));
        return false;
    }
    bool batched = xs->ndim == 2;
    if (ts->ndim != (batched ? 1 : 0) || (batched && !dims_match(ts->dims[0], xs->dims[0]))) {
        error_at(c, target->loc, "nll_loss(): target must be %s to match input %s, got %s",
                 batched ? arena_printf(c->arena, "i64[%s]", dim_str(c, xs->dims[0])) : "i64[]",
                 type_to_string(c, &x->type), type_to_string(c, &target->type));
        return false;
    }
    Poly *classes = xs->dims[xs->ndim - 1];
    if (weight) {
        if (!require_tensor(c, call, 2) || !same_dtype(c, call, x, weight))
            return false;
        if (weight->type.shape.ndim != 1 || !dims_match(weight->type.shape.dims[0], classes)) {
            error_at(c, weight->loc, "nll_loss(): weight must have one entry per class, [%s], got %s",
                     dim_str(c, classes), type_to_string(c, &weight->type));
            return false;
        }
    }
    int64_t ignore = -100;
    if (arg(call, 3) && !int_arg(c, arg(call, 3), &ignore))
        return false;
    call->ignore_index = ignore;
    int code = 1;
    if (red) {
        code = red->kind == E_STRING ? reduction_code(red->text) : -1;
        if (code < 0) {
            error_at(c, red->loc, "reduction= takes \"none\", \"mean\" or \"sum\"");
            return false;
        }
    }
    call->reduction = code;
    call->type.dtype = x->type.dtype;
    call->type.shape.ndim = 0;
    if (code == 0 && batched) {
        call->type.shape.ndim = 1;
        call->type.shape.dims[0] = xs->dims[0];
    }
    return true;
}

/* ---- the walk --------------------------------------------------------- */

static bool check_expr(Ctx *c, Expr *e)
{
    switch (e->kind) {
    case E_NAME:
        if (!e->sym)
            return false;
        e->type = e->sym->type;
        return e->type.dtype != DT_NONE;
    case E_NUMBER:
    case E_STRING:
    case E_BOOL:
    case E_DTYPE:
        e->type.dtype = DT_NONE;
        return true;
    case E_CAST:
        if (!check_expr(c, e->operand))
            return false;
        e->type = e->operand->type;
        e->type.dtype = e->dtype;
        return true;
    case E_CALL: {
        if (!e->op)
            return false;
        bool ok = true;
        for (int i = 0; i < e->op->nparams; i++)
            if (e->bound[i] && !check_expr(c, e->bound[i]))
                ok = false;
        return ok && infer_call(c, e);
    }
    case E_KWARG:
    case E_TYPE:
        break;
    }
    ICE("unexpected expression kind %d in typecheck", e->kind);
}

/* Every tensor must fit in 2^63 bytes, computed ones too (a broadcast or
 * a widening dtype= can grow a declared tensor past the limit). */
bool type_fits(Ctx *c, const Type *t, Loc loc)
{
    if (t->dtype == DT_NONE)
        return true;
    Poly *bytes = shape_numel(c, &t->shape);
    if (bytes)
        bytes = poly_mul(c, bytes, poly_const(c, dtype_size(t->dtype)));
    int64_t v;
    if (bytes && !(poly_is_const(bytes, &v) && v < 0))
        return true;
    error_at(c, loc, "this %s tensor is larger than 2^63 bytes", type_to_string(c, t));
    return false;
}

bool infer_call(Ctx *c, Expr *call)
{
    return call->op->infer(c, call) && type_fits(c, &call->type, call->loc);
}

static void check_stmts(Ctx *c, Vec *stmts)
{
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        switch (st->kind) {
        case S_INPUT:
        case S_PARAM:
        case S_BUFFER:
            if (st->sym && declared_type(c, st->type, &st->sym->type) && st->kind == S_PARAM &&
                !dtype_is_float(st->type->dtype))
                error_at(c, st->type->loc, "parameters are trained, so they must be floating point; "
                         "declare integer state as a buffer");
            break;
        case S_ASSIGN:
            if (!check_expr(c, st->value))
                break;
            if (st->value->type.dtype == DT_NONE) {
                error_at(c, st->value->loc, "only tensors can be assigned to names");
                break;
            }
            if (st->targets->len != 1) {
                error_at(c, st->loc, "%s() returns one tensor, but %d names are assigned",
                         st->value->kind == E_CALL ? st->value->op->name : "this expression", st->targets->len);
                break;
            }
            ((Expr *)VEC_AT(st->targets, 0))->sym->type = st->value->type;
            break;
        case S_EXPR: {
            /* in-place and out=: the result is stored into the destination,
             * which must hold its shape and be able to take its dtype
             * (PyTorch's can_cast: no float into int, no int into bool) */
            if (!st->targets || !check_expr(c, st->value))
                break;
            const Type *dest = &st->name->sym->type, *res = &st->value->type;
            if (!shape_equal(&res->shape, &dest->shape)) {
                error_at(c, st->value->loc, "output with shape %s doesn't match the broadcast shape %s",
                         shape_to_string(c, &dest->shape, c->sym_names), shape_to_string(c, &res->shape, c->sym_names));
                break;
            }
            if (dtype_category(res->dtype) > dtype_category(dest->dtype)) {
                error_at(c, st->value->loc, "result type %s can't be cast to the desired output type %s of '%s'",
                         dtype_name(res->dtype), dtype_name(dest->dtype), st->name->text);
                break;
            }
            ((Expr *)VEC_AT(st->targets, 0))->sym->type = *dest;
            break;
        }
        case S_AUTOCAST_SWITCH:
        case S_MODULE:
        case S_RETURN:
        case S_FOR:
            break;
        case S_OUTPUT:
            for (int k = 0; k < st->exprs->len; k++)
                check_expr(c, VEC_AT(st->exprs, k));
            break;
        case S_MINIMIZE:
            if (check_expr(c, st->value) && st->value->type.shape.ndim != 0)
                error_at(c, st->value->loc, "the loss to minimize must be a scalar (0-dim), but '%s' is %s",
                         st->value->text, type_to_string(c, &st->value->type));
            else if (st->value->type.dtype != DT_NONE && !dtype_is_float(st->value->type.dtype))
                error_at(c, st->value->loc, "the loss to minimize must be floating point");
            break;
        case S_AUTOCAST:
            check_stmts(c, st->body);
            break;
        }
    }
}

bool typecheck(Ctx *c)
{
    check_stmts(c, c->model->body);
    return c->nerrors == 0;
}
