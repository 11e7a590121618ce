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
#include "call_args.h"

#include <gmp.h>
#include <stdlib.h>
#include <string.h>

const char *type_to_string(Ctx *c, const Type *t)
{
    if (t->dtype == DT_NONE)
        return "a non-tensor value";
    return arena_printf(c->arena, "%s%s", dtype_name(t->dtype), shape_to_string(c, &t->shape, c->sym_names));
}

/* ---- literals and dims ------------------------------------------------ */

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
                error_at(c, e->loc, "this dimension overflows 64-bit integers or has more than %d terms", MAX_TERMS);
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
    if (scalar_is_float && dtype_category(t) < CAT_FLOAT) /* a complex tensor stays complex */
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
        /* a complex 0-dim tensor keeps a floating one's width: f64[N] with
         * c64 is c128, f32[N] with c128 is c64 (f16[N] gives PyTorch's
         * complex32, which ampc lacks: c64) */
        if (dtype_is_complex(zero->dtype) && dtype_is_float(dimensioned->dtype))
            return dtype_to_complex(dimensioned->dtype);
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
    error_at(c, call->loc, "%s() expects both operands to have the same dtype, got %s and %s %s", call->op->name,
             dtype_name(a->type.dtype), dtype_name(b->type.dtype),
             call->autocast_on ? "(autocast does not convert them here: cast one operand)"
                               : "(use autocast, or cast one operand)");
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
    if (dtype_is_complex(d->dtype)) {
        error_at(c, d->loc, "%s() has no complex form in ampc: dtype=%s is not available", call->op->name,
                 dtype_name(d->dtype));
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

/* ---- the ops of issue 4 --------------------------------------------------
 *
 * Each rule checks what PyTorch checks before it runs (shapes, dtypes,
 * argument ranges), with PyTorch's words where they are clear, and gives
 * the result type.  Dtype mismatches that autocast may still resolve are
 * left to it inside an enabled region (same_dtype and mixed_ok), as for
 * linear.  Integer arguments are literals (a block's int parameters arrive
 * as literals from expand.c); int[] arguments take one int for all their
 * entries, until the language has list literals. */

static Expr *named(Expr *call, const char *name)
{
    int k = op_param_index(call->op, name);
    ASSERT(k >= 0);
    return call->bound[k];
}

static bool int_param(Ctx *c, Expr *call, const char *name, int64_t dflt, int64_t *out)
{
    Expr *e = named(call, name);
    *out = dflt;
    return !e || int_arg(c, e, out);
}

static bool bool_param(Ctx *c, Expr *call, const char *name, bool dflt, bool *out)
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
static bool number_value(Ctx *c, Expr *e, double *out)
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

static bool float_param(Ctx *c, Expr *call, const char *name, double dflt, double *out)
{
    Expr *e = named(call, name);
    *out = dflt;
    return !e || number_value(c, e, out);
}

static bool number_is_float(Expr *e)
{
    Expr *lit = e->kind == E_NUMBER ? e : VEC_AT(e->list, 0);
    return lit->is_float;
}

static bool str_param(Ctx *c, Expr *call, const char *name, const char *dflt, const char **out)
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

/* reduction=: "mean" (the default), "sum", "none"; kl_div adds "batchmean"
 * (code 3, a 0-dim result like mean). */
static bool reduction_param(Ctx *c, Expr *call, bool batchmean)
{
    const char *s;
    if (!str_param(c, call, "reduction", "mean", &s))
        return false;
    int code = batchmean && strcmp(s, "batchmean") == 0 ? 3 : reduction_code(s);
    if (code < 0) {
        error_at(c, named(call, "reduction")->loc, "%s is not a valid value for reduction: it takes \"none\", "
                 "\"mean\"%s or \"sum\"", s, batchmean ? ", \"batchmean\"" : "");
        return false;
    }
    call->reduction = code;
    return true;
}

/* The loss's result: the elementwise shape for reduction="none", else 0-dim. */
static void loss_result(Expr *call, DType t, const Shape *elementwise)
{
    call->type.dtype = t;
    call->type.shape.ndim = 0;
    if (call->reduction == 0)
        call->type.shape = *elementwise;
}

static bool const_dim(const Poly *p, int64_t *v) { return poly_is_const(p, v); }

static const char *shape_str(Ctx *c, const Shape *s) { return shape_to_string(c, s, c->sym_names); }

static bool tensor_arg(Ctx *c, Expr *call, const char *name, Expr **out)
{
    int k = op_param_index(call->op, name);
    *out = call->bound[k];
    return !*out || require_tensor(c, call, k);
}

static bool not_bool(Ctx *c, Expr *call, Expr *x)
{
    if (x->type.dtype != DT_BOOL)
        return true;
    error_at(c, call->loc, "%s() is not defined for bool tensors", call->op->name);
    return false;
}

/* A parameter of a normalisation or a weight that may stay f32 under a
 * bf16/f16 input (PyTorch's mixed-type kernels), or match it. */
static bool mixed_ok(Ctx *c, Expr *call, Expr *x, Expr *p)
{
    DType a = x->type.dtype, b = p->type.dtype;
    if (a == b || (b == DT_F32 && (a == DT_BF16 || a == DT_F16)))
        return true;
    if (call->autocast_on && !c->autocast_ran)
        return true;
    error_at(c, p->loc, "%s(): expected %s to be %s%s, like the input, but it is %s", call->op->name,
             p->kind == E_NAME ? p->text : "this parameter", dtype_name(a),
             a == DT_BF16 || a == DT_F16 ? " or f32" : "", dtype_name(b));
    return false;
}

/* A 1-D parameter with one entry per channel. */
static bool per_channel(Ctx *c, Expr *call, Expr *p, const Poly *channels)
{
    if (p->type.shape.ndim == 1 && dims_match(p->type.shape.dims[0], channels))
        return true;
    error_at(c, p->loc, "%s(): %s should have %s elements, one per channel, but it is %s", call->op->name,
             p->kind == E_NAME ? p->text : "this parameter", dim_str(c, channels), type_to_string(c, &p->type));
    return false;
}

/* exp, log, sqrt, rsqrt, reciprocal, sigmoid, tanh: integer and bool
 * inputs compute in the default float type (PyTorch's int-to-float unary
 * ops). */
bool infer_float_unary(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    call->type = x->type;
    if (!dtype_is_float(x->type.dtype))
        call->type.dtype = DT_F32;
    return true;
}

/* gelu, silu, softplus: PyTorch has them for floating types only. */
bool infer_activation(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
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
    if (call->op->id == OP_SOFTPLUS) {
        double beta, threshold;
        if (!float_param(c, call, "beta", 1, &beta) || !float_param(c, call, "threshold", 20, &threshold))
            return false;
    }
    call->type = x->type;
    return true;
}

bool infer_prelu(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *w = arg(call, 1);
    if (!require_float(c, call, x) || !same_dtype(c, call, x, w))
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
    Expr *x = arg(call, 0), *lo = named(call, "min"), *hi = named(call, "max");
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
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0), *e = arg(call, 1);
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

/* ---- reductions ---------------------------------------------------------- */

/* Drop (or keep as 1) dim d of s; d < 0: every dim. */
static Shape reduced(Ctx *c, const Shape *s, int64_t d, bool keepdim)
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
    else
        t = dtype_is_float(in) ? in : DT_I64; /* sum, prod, cumsum of integers and bools */
    if (id == OP_MEAN && !dtype_is_float(t)) {
        error_at(c, arg(call, kd)->loc, "mean(): could not infer output dtype. Optional dtype must be either a "
                 "floating point or complex dtype. Got: %s", dtype_name(t));
        return false;
    }

    int64_t dim = -1;
    Expr *d = named(call, "dim");
    if (d && !normalise_dim(c, d, xs->ndim, &dim))
        return false;
    bool keepdim = false;
    bool cumulative = id == OP_CUMSUM || id == OP_CUMPROD;
    if (!cumulative && !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    call->dim = dim;
    call->type.dtype = t;
    if (cumulative)
        call->type.shape = *xs;
    else
        call->type.shape = xs->ndim == 0 ? *xs : reduced(c, xs, dim, keepdim);
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

/* ---- normalisation -------------------------------------------------------- */

bool infer_norm(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0), *w, *b;
    if (!require_float(c, call, x) || !tensor_arg(c, call, "weight", &w) || !tensor_arg(c, call, "bias", &b))
        return false;
    const Shape *xs = &x->type.shape;
    OpId id = call->op->id;
    const Poly *channels;
    if (id == OP_LAYER_NORM) {
        int64_t n, last;
        if (!int_arg(c, named(call, "normalized_shape"), &n))
            return false;
        if (xs->ndim < 1 || !const_dim(xs->dims[xs->ndim - 1], &last) || last != n) {
            error_at(c, call->loc, "Given normalized_shape=[%lld], expected input with shape [*, %lld], but got "
                     "input of size %s", (long long)n, (long long)n, shape_str(c, xs));
            return false;
        }
        channels = xs->dims[xs->ndim - 1];
    } else {
        if (xs->ndim < 2) {
            error_at(c, x->loc, "%s(): expected at least 2 dimensions for input tensor (N, C, ...) but received %d",
                     call->op->name, xs->ndim);
            return false;
        }
        channels = xs->dims[1];
    }
    if (id == OP_GROUP_NORM) {
        int64_t g, ch;
        if (!int_arg(c, named(call, "num_groups"), &g))
            return false;
        if (g <= 0 || (const_dim(channels, &ch) && ch % g != 0)) {
            error_at(c, named(call, "num_groups")->loc, "Expected number of channels in input to be divisible by "
                     "num_groups, but got input of shape %s and num_groups=%lld", shape_str(c, xs), (long long)g);
            return false;
        }
    }
    if (id == OP_BATCH_NORM) {
        bool training;
        double momentum, eps;
        if (!bool_param(c, call, "training", false, &training) || !float_param(c, call, "momentum", 0.1, &momentum) ||
            !float_param(c, call, "eps", 1e-5, &eps))
            return false;
        const char *stats[2] = {"running_mean", "running_var"};
        for (int i = 0; i < 2; i++) {
            Expr *s;
            if (!tensor_arg(c, call, stats[i], &s))
                return false;
            if (!s && !training) {
                error_at(c, call->loc, "batch_norm(): %s must be defined in evaluation mode (training=false)",
                         stats[i]);
                return false;
            }
            if (s && (!per_channel(c, call, s, channels) || !mixed_ok(c, call, x, s)))
                return false;
        }
    }
    Expr *wb[2] = {w, b};
    for (int i = 0; i < 2; i++)
        if (wb[i] && (!per_channel(c, call, wb[i], channels) || !mixed_ok(c, call, x, wb[i])))
            return false;
    call->type = x->type;
    return true;
}

bool infer_embedding(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *idx = arg(call, 0), *w = arg(call, 1);
    if (idx->type.dtype != DT_I64 && idx->type.dtype != DT_I32) {
        error_at(c, idx->loc, "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                 "i64, i32; but got %s instead", type_to_string(c, &idx->type));
        return false;
    }
    if (w->type.shape.ndim != 2) {
        error_at(c, w->loc, "embedding(): 'weight' must be 2-D, but it is %s", type_to_string(c, &w->type));
        return false;
    }
    int64_t pad, rows;
    Expr *p = named(call, "padding_idx");
    if (p && int_arg(c, p, &pad) && const_dim(w->type.shape.dims[0], &rows) && (pad >= rows || pad < -rows)) {
        error_at(c, p->loc, "Padding_idx must be within num_embeddings (%lld)", (long long)rows);
        return false;
    }
    if (idx->type.shape.ndim + 1 > MAX_DIMS) {
        error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
        return false;
    }
    call->type.dtype = w->type.dtype;
    call->type.shape = idx->type.shape;
    call->type.shape.dims[call->type.shape.ndim++] = w->type.shape.dims[1];
    return true;
}

/* ---- matrix products ------------------------------------------------------ */

/* e broadcasts to exactly `to` (an operand expanded to a result's shape). */
static bool broadcasts_to(Ctx *c, Expr *call, Expr *e, const Shape *to, const char *what)
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

static bool rank_is(Ctx *c, Expr *call, Expr *e, int ndim, const char *what)
{
    if (e->type.shape.ndim == ndim)
        return true;
    error_at(c, e->loc, "%s(): %s must be a %d-D tensor, but it is %s", call->op->name, what, ndim,
             type_to_string(c, &e->type));
    return false;
}

static bool inner_match(Ctx *c, Expr *call, const Poly *k1, const Poly *k2, Expr *a, Expr *b)
{
    if (dims_match(k1, k2))
        return true;
    error_at(c, call->loc, "%s(): shapes %s and %s cannot be multiplied (%s != %s)", call->op->name,
             shape_str(c, &a->type.shape), shape_str(c, &b->type.shape), dim_str(c, k1), dim_str(c, k2));
    return false;
}

/* mm, bmm, addmm, baddbmm, addbmm, addmv, addr.  The add* forms take
 * `input` broadcastable to the product's shape. */
bool infer_mm(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool has_input = id != OP_MM && id != OP_BMM && id != OP_MV;
    int a_i = has_input ? 1 : 0;
    for (int i = 0; i <= a_i + 1; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *in = has_input ? arg(call, 0) : NULL, *a = arg(call, a_i), *b = arg(call, a_i + 1);
    if (!not_bool(c, call, a) || !same_dtype(c, call, a, b) || (in && !same_dtype(c, call, a, in)))
        return false;
    const char *an = call->op->params[a_i].name, *bn = call->op->params[a_i + 1].name;
    const Shape *as = &a->type.shape, *bs = &b->type.shape;
    Shape out = {0};
    switch (id) {
    case OP_MM:
    case OP_ADDMM:
        if (!rank_is(c, call, a, 2, an) || !rank_is(c, call, b, 2, bn) ||
            !inner_match(c, call, as->dims[1], bs->dims[0], a, b))
            return false;
        out.ndim = 2;
        out.dims[0] = as->dims[0];
        out.dims[1] = bs->dims[1];
        break;
    case OP_BMM:
    case OP_BADDBMM:
    case OP_ADDBMM:
        if (!rank_is(c, call, a, 3, an) || !rank_is(c, call, b, 3, bn))
            return false;
        if (!dims_match(as->dims[0], bs->dims[0])) {
            error_at(c, call->loc, "%s(): %s and %s must have the same batch size, got %s and %s", call->op->name,
                     an, bn, dim_str(c, as->dims[0]), dim_str(c, bs->dims[0]));
            return false;
        }
        if (!inner_match(c, call, as->dims[2], bs->dims[1], a, b))
            return false;
        if (id != OP_ADDBMM)
            out.dims[out.ndim++] = as->dims[0];
        out.dims[out.ndim++] = as->dims[1];
        out.dims[out.ndim++] = bs->dims[2];
        break;
    case OP_MV:
    case OP_ADDMV:
        if (!rank_is(c, call, a, 2, an) || !rank_is(c, call, b, 1, bn) ||
            !inner_match(c, call, as->dims[1], bs->dims[0], a, b))
            return false;
        out.ndim = 1;
        out.dims[0] = as->dims[0];
        break;
    case OP_ADDR:
        if (!rank_is(c, call, a, 1, an) || !rank_is(c, call, b, 1, bn))
            return false;
        out.ndim = 2;
        out.dims[0] = as->dims[0];
        out.dims[1] = bs->dims[0];
        break;
    default:
        ICE("infer_mm on %s", call->op->name);
    }
    if (in && !broadcasts_to(c, call, in, &out, "input"))
        return false;
    call->type.dtype = a->type.dtype;
    call->type.shape = out;
    return true;
}

/* einsum: subscripts are letters; every label's size agrees (or is 1 and
 * broadcasts); the implicit output is the labels seen once, in PyTorch's
 * order (A-Z before a-z).  "..." is not supported yet. */
bool infer_einsum(Ctx *c, Expr *call)
{
    Expr *eq = arg(call, 0);
    if (eq->kind != E_STRING) {
        error_at(c, eq->loc, "einsum(): the equation must be a string such as \"ij,jk->ik\"");
        return false;
    }
    Expr *ops[8];
    int nops = 0;
    for (int i = 1; i < call->op->nparams; i++) {
        Expr *o = arg(call, i);
        if (!o)
            continue;
        if (!require_tensor(c, call, i))
            return false;
        if (nops && !same_dtype(c, call, ops[0], o))
            return false;
        ops[nops++] = o;
    }
    Poly *size[52] = {0};
    int count[52] = {0};
    const char *p = eq->text;
    int k = 0;
    for (;; p++) {
        const Shape *s = k < nops ? &ops[k]->type.shape : NULL;
        int n = 0;
        for (; *p && *p != ',' && *p != '-'; p++) {
            if (*p == ' ')
                continue;
            if (*p == '.') {
                error_at(c, eq->loc, "einsum(): '...' (broadcast dimensions) is not supported yet");
                return false;
            }
            int l = *p >= 'A' && *p <= 'Z' ? *p - 'A' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 26 : -1;
            if (l < 0) {
                error_at(c, eq->loc, "einsum(): invalid subscript given at index %d in the equation string, "
                         "subscripts must be in [a-zA-Z]", (int)(p - eq->text));
                return false;
            }
            if (s && n < s->ndim) {
                Poly *d = s->dims[n];
                int64_t one;
                if (!size[l] || (const_dim(size[l], &one) && one == 1))
                    size[l] = d;
                else if (!dims_match(size[l], d) && !(const_dim(d, &one) && one == 1)) {
                    error_at(c, call->loc, "einsum(): subscript %c has size %s for operand %d which does not "
                             "broadcast with previously seen size %s", *p, dim_str(c, d), k, dim_str(c, size[l]));
                    return false;
                }
            }
            count[l]++;
            n++;
        }
        if (k >= nops) {
            error_at(c, call->loc, "einsum(): fewer operands were provided than specified in the equation");
            return false;
        }
        if (n != s->ndim) {
            error_at(c, ops[k]->loc, "einsum(): the number of subscripts in the equation (%d) does not match the "
                     "number of dimensions (%d) for operand %d and no ellipsis was given", n, s->ndim, k);
            return false;
        }
        k++;
        if (*p != ',')
            break;
    }
    if (k != nops) {
        error_at(c, call->loc, "einsum(): more operands were provided than specified in the equation");
        return false;
    }
    Shape out = {0};
    if (*p == '-') {
        if (p[1] != '>') {
            error_at(c, eq->loc, "einsum(): found '-' in the equation but not followed by '>'");
            return false;
        }
        bool seen[52] = {0};
        for (p += 2; *p; p++) {
            if (*p == ' ')
                continue;
            int l = *p >= 'A' && *p <= 'Z' ? *p - 'A' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 26 : -1;
            if (l < 0 || !count[l] || seen[l]) {
                error_at(c, eq->loc, l < 0 ? "einsum(): invalid subscript '%c' in the output"
                                   : !count[l] ? "einsum(): output subscript %c does not appear in the equation for any input operand"
                                               : "einsum(): output subscript %c appears more than once in the output", *p);
                return false;
            }
            seen[l] = true;
            if (out.ndim == MAX_DIMS) {
                error_at(c, eq->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
                return false;
            }
            out.dims[out.ndim++] = size[l];
        }
    } else {
        for (int l = 0; l < 52; l++) {
            if (count[l] != 1)
                continue;
            if (out.ndim == MAX_DIMS) {
                error_at(c, eq->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
                return false;
            }
            out.dims[out.ndim++] = size[l];
        }
    }
    call->type.dtype = ops[0]->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- convolution and pooling ----------------------------------------------- */

/* PyTorch's output size of a sliding window:
 *   floor((in + 2*pad - dil*(k-1) - 1 [+ stride-1 with ceil_mode]) / stride) + 1,
 * and with ceil_mode one less if the last window would start in the padding.
 * A symbolic size works with stride 1, where it stays a polynomial. */
static Poly *window_out(Ctx *c, Expr *call, const Poly *in, int64_t k, int64_t stride, int64_t pad, int64_t dil,
                        bool ceil_mode)
{
    int64_t n;
    if (const_dim(in, &n)) {
        int64_t span = n + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
        int64_t out = (span < 0 ? -((-span + stride - 1) / stride) : span / stride) + 1;
        if (ceil_mode && (out - 1) * stride >= n + pad)
            out--;
        if (out < 1) {
            error_at(c, call->loc, "%s(): given input size %lld, kernel size %lld, stride %lld, padding %lld and "
                     "dilation %lld, the calculated output size %lld is too small", call->op->name, (long long)n,
                     (long long)k, (long long)stride, (long long)pad, (long long)dil, (long long)out);
            return NULL;
        }
        return poly_const(c, out);
    }
    if (stride == 1) {
        Poly *r = poly_add(c, in, poly_const(c, 2 * pad - dil * (k - 1)));
        if (!r)
            error_at(c, call->loc, "this dimension overflows 64-bit integers");
        return r;
    }
    error_at(c, call->loc, "%s() with stride %lld over the symbolic dimension %s is not supported: its output "
             "size is not a polynomial in the model's dimensions", call->op->name, (long long)stride,
             dim_str(c, in));
    return NULL;
}

static Poly *affine(Ctx *c, Expr *call, const Poly *a, int64_t k, int64_t off);
static bool size_at_least(Ctx *c, Expr *call, const Poly *p, int64_t min, const char *what);

/* conv1d/2d/3d and conv_transpose1d/2d/3d.  A transposed convolution's
 * weight is [in_channels, out_channels/groups, kernel...] and its output
 * (in - 1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1. */
bool infer_conv(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool transposed = id == OP_CONV_TRANSPOSE1D || id == OP_CONV_TRANSPOSE2D || id == OP_CONV_TRANSPOSE3D;
    int spatial = id == OP_CONV1D || id == OP_CONV_TRANSPOSE1D ? 1 : id == OP_CONV3D || id == OP_CONV_TRANSPOSE3D ? 3 : 2;
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *w = arg(call, 1), *b;
    if (!tensor_arg(c, call, "bias", &b) || !not_bool(c, call, x))
        return false;
    if (!same_dtype(c, call, x, w) || (b && !same_dtype(c, call, x, b)))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape;
    if (id == OP_CONVOLUTION) {
        /* aten's convolution: the weight's rank says the spatial dims; batched input only */
        if (!bool_param(c, call, "transposed", false, &transposed))
            return false;
        if (ws->ndim < 3 || ws->ndim > 5) {
            error_at(c, w->loc, "convolution(): expected a 3-D, 4-D or 5-D weight, got %s", type_to_string(c, &w->type));
            return false;
        }
        spatial = ws->ndim - 2;
        if (xs->ndim != ws->ndim) {
            error_at(c, x->loc, "Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional "
                     "input of size %s instead", ws->ndim, ws->ndim, shape_str(c, ws), xs->ndim, shape_str(c, xs));
            return false;
        }
        Expr *pe = named(call, "padding");
        if (pe && pe->kind == E_STRING) {
            error_at(c, pe->loc, "convolution() takes an int padding; padding='%s' is conv1d/2d/3d's", pe->text);
            return false;
        }
    }
    if (xs->ndim != spatial + 1 && xs->ndim != spatial + 2) {
        error_at(c, x->loc, "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                 spatial + 1, spatial + 2, call->op->name, shape_str(c, xs));
        return false;
    }
    if (ws->ndim != spatial + 2) {
        error_at(c, w->loc, transposed ? "%s(): expected a %d-D weight [in_channels, out_channels/groups, kernel...], got %s"
                                       : "%s(): expected a %d-D weight [out_channels, in_channels/groups, kernel...], got %s",
                 call->op->name, spatial + 2, type_to_string(c, &w->type));
        return false;
    }
    int64_t groups, stride, dil, pad = 0, outpad = 0;
    if (!int_param(c, call, "groups", 1, &groups) || !int_param(c, call, "stride", 1, &stride) ||
        !int_param(c, call, "dilation", 1, &dil) || (transposed && !int_param(c, call, "output_padding", 0, &outpad)))
        return false;
    Expr *pe = named(call, "padding");
    bool same = false;
    if (pe && pe->kind == E_STRING && !transposed) {
        same = strcmp(pe->text, "same") == 0;
        if (!same && strcmp(pe->text, "valid") != 0) {
            error_at(c, pe->loc, "Invalid padding string '%s': it takes \"valid\", \"same\" or an int", pe->text);
            return false;
        }
    } else if (pe && !int_arg(c, pe, &pad)) {
        return false;
    }
    if (groups <= 0 || stride <= 0 || dil <= 0 || pad < 0 || outpad < 0) {
        error_at(c, call->loc, "%s(): %s", call->op->name,
                 groups <= 0 ? "non-positive groups is not supported" : stride <= 0 ? "non-positive stride is not supported"
                 : dil <= 0 ? "dilation should be greater than zero" : outpad < 0 ? "negative output_padding is not supported"
                 : "negative padding is not supported");
        return false;
    }
    if (same && stride != 1) {
        error_at(c, pe->loc, "padding='same' is not supported for strided convolutions");
        return false;
    }
    if (transposed && outpad >= stride && outpad >= dil) {
        error_at(c, named(call, "output_padding")->loc, "output padding must be smaller than either stride or dilation, "
                 "but got output_padding: %lld, stride: %lld and dilation: %lld", (long long)outpad, (long long)stride,
                 (long long)dil);
        return false;
    }
    int cdim = xs->ndim - spatial - 1;
    const Poly *cin = xs->dims[cdim], *cout;
    int64_t co;
    if (transposed) {
        Poly *out_ch = poly_mul(c, ws->dims[1], poly_const(c, groups));
        if (!dims_match(cin, ws->dims[0]) || !out_ch) {
            error_at(c, call->loc, "Given transposed=1, weight of size %s, expected input%s to have %s channels, but "
                     "got %s channels instead", shape_str(c, ws), shape_str(c, xs), dim_str(c, ws->dims[0]),
                     dim_str(c, cin));
            return false;
        }
        if (const_dim(ws->dims[0], &co) && co % groups != 0) {
            error_at(c, w->loc, "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                     "weight of size %s instead", (long long)groups, (long long)groups, shape_str(c, ws));
            return false;
        }
        cout = out_ch;
    } else {
        Poly *expect = poly_mul(c, ws->dims[1], poly_const(c, groups));
        if (!expect || !dims_match(cin, expect)) {
            error_at(c, call->loc, "Given groups=%lld, weight of size %s, expected input%s to have %s channels, but got %s "
                     "channels instead", (long long)groups, shape_str(c, ws), shape_str(c, xs),
                     expect ? dim_str(c, expect) : "?", dim_str(c, cin));
            return false;
        }
        cout = ws->dims[0];
        if (const_dim(cout, &co) && co % groups != 0) {
            error_at(c, w->loc, "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                     "weight of size %s instead", (long long)groups, (long long)groups, shape_str(c, ws));
            return false;
        }
    }
    if (b && (b->type.shape.ndim != 1 || !dims_match(b->type.shape.dims[0], cout))) {
        error_at(c, b->loc, "Given %sweight of size %s, expected bias to be 1-dimensional with %s elements, but got "
                 "bias of size %s instead", transposed ? "transposed=1, " : "", shape_str(c, ws), dim_str(c, cout),
                 shape_str(c, &b->type.shape));
        return false;
    }
    Shape out = *xs;
    out.dims[cdim] = (Poly *)cout;
    for (int i = 0; i < spatial; i++) {
        int64_t k;
        if (!const_dim(ws->dims[2 + i], &k)) {
            error_at(c, w->loc, "%s(): the kernel size must be a number, not %s", call->op->name,
                     dim_str(c, ws->dims[2 + i]));
            return false;
        }
        Poly *in = xs->dims[cdim + 1 + i], *o;
        if (transposed) {
            o = affine(c, call, in, stride, -stride - 2 * pad + dil * (k - 1) + outpad + 1);
            if (o && !size_at_least(c, call, o, 1, "output"))
                return false;
        } else {
            int64_t p = same ? dil * (k - 1) / 2 : pad;
            o = same ? in : window_out(c, call, in, k, stride, p, dil, false);
        }
        if (!o)
            return false;
        out.dims[cdim + 1 + i] = o;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_pool(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    OpId id = call->op->id;
    bool is_max = id == OP_MAX_POOL2D || id == OP_MAX_POOL3D;
    bool adaptive = id == OP_ADAPTIVE_AVG_POOL2D || id == OP_ADAPTIVE_AVG_POOL3D;
    int spatial = id == OP_MAX_POOL3D || id == OP_AVG_POOL3D || id == OP_ADAPTIVE_AVG_POOL3D ? 3 : 2;
    const Shape *xs = &x->type.shape;
    if (xs->ndim != spatial + 1 && xs->ndim != spatial + 2) {
        error_at(c, x->loc, "%s(): non-empty %dD or %dD (batch mode) tensor expected for input, but got %s",
                 call->op->name, spatial + 1, spatial + 2, type_to_string(c, &x->type));
        return false;
    }
    if (!not_bool(c, call, x) || (adaptive && !require_float(c, call, x)))
        return false;
    Shape out = *xs;
    if (adaptive) {
        int64_t o;
        if (!int_arg(c, named(call, "output_size"), &o))
            return false;
        if (o < 0) {
            error_at(c, named(call, "output_size")->loc, "%s: elements of output_size must be "
                     "greater than or equal to 0 but received %lld", call->op->name, (long long)o);
            return false;
        }
        for (int i = out.ndim - spatial; i < out.ndim; i++)
            out.dims[i] = poly_const(c, o);
        call->type.dtype = x->type.dtype;
        call->type.shape = out;
        return true;
    }
    int64_t k, stride, pad, dil = 1;
    bool ceil_mode;
    if (!int_arg(c, named(call, "kernel_size"), &k) || !int_param(c, call, "stride", k, &stride) ||
        !int_param(c, call, "padding", 0, &pad) || !bool_param(c, call, "ceil_mode", false, &ceil_mode) ||
        (is_max && !int_param(c, call, "dilation", 1, &dil)))
        return false;
    if (k <= 0 || stride <= 0 || dil <= 0 || pad < 0) {
        error_at(c, call->loc, "%s(): %s", call->op->name,
                 k <= 0 ? "kernel_size must be greater than zero" : stride <= 0 ? "stride should be greater than zero"
                 : dil <= 0 ? "dilation should be greater than zero" : "pad must be non-negative");
        return false;
    }
    if (is_max) {
        bool indices;
        if (!bool_param(c, call, "return_indices", false, &indices))
            return false;
        if (indices) {
            error_at(c, named(call, "return_indices")->loc, "%s(return_indices=true) returns two tensors, "
                     "which ampc cannot assign yet", call->op->name);
            return false;
        }
        if (pad > ((k - 1) * dil + 1) / 2) {
            error_at(c, call->loc, "pad should be at most half of effective kernel size, but got pad=%lld, "
                     "kernel_size=%lld and dilation=%lld", (long long)pad, (long long)k, (long long)dil);
            return false;
        }
    } else {
        int64_t div;
        if (!int_param(c, call, "divisor_override", 1, &div))
            return false;
        if (div == 0) {
            error_at(c, named(call, "divisor_override")->loc, "divisor must be not zero");
            return false;
        }
        if (pad > k / 2) {
            error_at(c, call->loc, "pad should be smaller than or equal to half of kernel size, but got pad = %lld, "
                     "kernel_size = %lld", (long long)pad, (long long)k);
            return false;
        }
    }
    for (int i = out.ndim - spatial; i < out.ndim; i++) {
        Poly *o = window_out(c, call, xs->dims[i], k, stride, pad, dil, ceil_mode);
        if (!o)
            return false;
        out.dims[i] = o;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- shapes ------------------------------------------------------------------ */

bool infer_flatten(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    int64_t start = 0, end = -1;
    Expr *s = named(call, "start_dim"), *e = named(call, "end_dim");
    if ((s && !normalise_dim(c, s, xs->ndim, &start)) || (e && !normalise_dim(c, e, xs->ndim, &end)))
        return false;
    if (!e)
        end = xs->ndim ? xs->ndim - 1 : 0;
    if (start > end) {
        error_at(c, call->loc, "flatten() has invalid args: start_dim cannot come after end_dim");
        return false;
    }
    Shape out = {0};
    if (xs->ndim == 0) {
        out.ndim = 1;
        out.dims[0] = poly_const(c, 1);
    } else {
        for (int i = 0; i < start; i++)
            out.dims[out.ndim++] = xs->dims[i];
        Shape mid = {0};
        for (int64_t i = start; i <= end; i++)
            mid.dims[mid.ndim++] = xs->dims[i];
        Poly *n = shape_numel(c, &mid);
        if (!n) {
            error_at(c, call->loc, "this dimension overflows 64-bit integers");
            return false;
        }
        out.dims[out.ndim++] = n;
        for (int i = (int)end + 1; i < xs->ndim; i++)
            out.dims[out.ndim++] = xs->dims[i];
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* The int varargs of a call (reshape's shape, permute's dims), in order. */
static int int_varargs(Ctx *c, Expr *call, const char *name, int64_t *out, Expr **where, bool *ok)
{
    int n = 0;
    *ok = true;
    for (int i = 0; i < call->op->nparams; i++) {
        if (strcmp(call->op->params[i].name, name) != 0 || !arg(call, i))
            continue;
        where[n] = arg(call, i);
        if (!int_arg(c, arg(call, i), &out[n]))
            *ok = false;
        n++;
    }
    return n;
}

/* p / k when k divides every coefficient, else NULL. */
static Poly *poly_div_exact(Ctx *c, const Poly *p, int64_t k)
{
    Poly *r = arena_alloc(c->arena, sizeof *r);
    r->nterms = p->nterms;
    r->terms = arena_alloc(c->arena, (size_t)(p->nterms + 1) * sizeof *r->terms);
    for (int i = 0; i < p->nterms; i++) {
        if (p->terms[i].coef % k != 0)
            return NULL;
        r->terms[i] = p->terms[i];
        r->terms[i].coef /= k;
    }
    return r;
}

bool infer_reshape(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t v[MAX_DIMS];
    Expr *where[MAX_DIMS];
    bool ok;
    int n = int_varargs(c, call, "shape", v, where, &ok);
    if (!ok)
        return false;
    int infer = -1;
    int64_t known = 1;
    Buf text;
    buf_init(&text, c->arena);
    for (int i = 0; i < n; i++) {
        buf_printf(&text, "%s%lld", i ? ", " : "", (long long)v[i]);
        if (v[i] == -1 && infer < 0) {
            infer = i;
        } else if (v[i] == -1) {
            error_at(c, where[i]->loc, "only one dimension can be inferred");
            return false;
        } else if (v[i] < 0) {
            error_at(c, where[i]->loc, "invalid shape dimension %lld", (long long)v[i]);
            return false;
        } else if (__builtin_mul_overflow(known, v[i], &known)) {
            error_at(c, where[i]->loc, "this shape overflows 64-bit integers");
            return false;
        }
    }
    Poly *numel = shape_numel(c, &x->type.shape);
    Shape out = {.ndim = n};
    for (int i = 0; i < n; i++)
        out.dims[i] = poly_const(c, v[i]);
    int64_t cn;
    bool bad;
    if (infer >= 0) {
        Poly *q = known ? poly_div_exact(c, numel, known) : NULL;
        bad = !q;
        if (known == 0) {
            error_at(c, where[infer]->loc, "cannot reshape tensor of 0 elements into shape [%s] because the "
                     "unspecified dimension size -1 can be any value and is ambiguous", text.data);
            return false;
        }
        out.dims[infer] = q;
    } else {
        bad = !(const_dim(numel, &cn) && cn == known);
    }
    if (bad) {
        error_at(c, call->loc, "shape '[%s]' is invalid for input of size %s%s", text.data, dim_str(c, numel),
                 infer < 0 && !const_dim(numel, &cn) ? " (a symbolic size needs a -1 where it goes)" : "");
        return false;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_permute(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Shape out = *xs;
    if (call->op->id == OP_TRANSPOSE) {
        int64_t d0, d1;
        if (!normalise_dim(c, arg(call, 1), xs->ndim, &d0) || !normalise_dim(c, arg(call, 2), xs->ndim, &d1))
            return false;
        if (xs->ndim) {
            out.dims[d0] = xs->dims[d1];
            out.dims[d1] = xs->dims[d0];
        }
    } else {
        int64_t v[MAX_DIMS];
        Expr *where[MAX_DIMS];
        bool ok, seen[MAX_DIMS] = {0};
        int n = int_varargs(c, call, "dims", v, where, &ok);
        if (!ok)
            return false;
        if (n != xs->ndim) {
            error_at(c, call->loc, "permute(): number of dims don't match: the input has %d, but %d were given",
                     xs->ndim, n);
            return false;
        }
        for (int i = 0; i < n; i++) {
            int64_t d;
            if (!normalise_dim(c, where[i], xs->ndim, &d))
                return false;
            if (seen[d]) {
                error_at(c, where[i]->loc, "permute(): duplicate dims are not allowed.");
                return false;
            }
            seen[d] = true;
            out.dims[i] = xs->dims[d];
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_squeeze(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Shape out = {0};
    if (call->op->id == OP_UNSQUEEZE) {
        int64_t d;
        if (!normalise_dim(c, arg(call, 1), xs->ndim + 1, &d))
            return false;
        if (xs->ndim == MAX_DIMS) {
            error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
            return false;
        }
        for (int i = 0; i <= xs->ndim; i++)
            out.dims[out.ndim++] = i == d ? poly_const(c, 1) : xs->dims[i < d ? i : i - 1];
    } else {
        /* a symbolic dim counts as not 1: PyTorch decides at run time, ampc
         * at compile time, so a dim that may be 1 is kept */
        int64_t d = -1, one;
        Expr *de = named(call, "dim");
        if (de && !normalise_dim(c, de, xs->ndim, &d))
            return false;
        for (int i = 0; i < xs->ndim; i++) {
            bool unit = const_dim(xs->dims[i], &one) && one == 1;
            if (!(unit && (d < 0 || i == d)))
                out.dims[out.ndim++] = xs->dims[i];
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* cat and stack: the tensors, then dim=; result type over all of them. */
bool infer_cat(Ctx *c, Expr *call)
{
    bool stack = call->op->id == OP_STACK;
    Expr *ts[8];
    int n = 0;
    for (int i = 0; i < call->op->nparams; i++) {
        if (strcmp(call->op->params[i].name, "tensors") != 0 || !arg(call, i))
            continue;
        Expr *t = arg(call, i);
        if (!is_tensor(t)) {
            error_at(c, t->loc, "%s() takes the tensors as its positional arguments and the dimension by keyword: "
                     "%s(a, b, dim=1)", call->op->name, call->op->name);
            return false;
        }
        ts[n++] = t;
    }
    const Shape *s0 = &ts[0]->type.shape;
    int64_t dim = 0;
    Expr *de = named(call, "dim");
    if (de && !normalise_dim(c, de, s0->ndim + stack, &dim))
        return false;
    if (!stack && s0->ndim == 0) {
        error_at(c, ts[0]->loc, "zero-dimensional tensor (at position 0) cannot be concatenated");
        return false;
    }
    Type t = ts[0]->type;
    Poly *total = s0->ndim ? s0->dims[stack ? 0 : dim] : NULL;
    for (int k = 1; k < n; k++) {
        const Shape *s = &ts[k]->type.shape;
        if (stack ? !shape_equal(s, s0) : s->ndim != s0->ndim) {
            error_at(c, ts[k]->loc, stack ? "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d"
                                          : "Tensors must have same number of dimensions: got %s and %s (tensor %d)",
                     shape_str(c, s0), shape_str(c, s), k);
            return false;
        }
        for (int i = 0; !stack && i < s->ndim; i++) {
            if (i != dim && !dims_match(s->dims[i], s0->dims[i])) {
                error_at(c, ts[k]->loc, "Sizes of tensors must match except in dimension %lld. Expected size %s but got "
                         "size %s for tensor number %d in the list.", (long long)dim, dim_str(c, s0->dims[i]),
                         dim_str(c, s->dims[i]), k);
                return false;
            }
        }
        if (!stack && !(total = poly_add(c, total, s->dims[dim]))) {
            error_at(c, call->loc, "this dimension overflows 64-bit integers");
            return false;
        }
        t.dtype = promote_tensors(&t, &ts[k]->type);
    }
    Shape out = {0};
    if (stack) {
        if (s0->ndim == MAX_DIMS) {
            error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
            return false;
        }
        for (int i = 0; i <= s0->ndim; i++)
            out.dims[out.ndim++] = i == dim ? poly_const(c, n) : s0->dims[i < dim ? i : i - 1];
    } else {
        out = *s0;
        out.dims[dim] = total;
    }
    call->type.dtype = t.dtype;
    call->type.shape = out;
    return true;
}

bool infer_index_copy(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 2) || !require_tensor(c, call, 3))
        return false;
    Expr *x = arg(call, 0), *idx = arg(call, 2), *src = arg(call, 3);
    int64_t dim;
    if (!normalise_dim(c, arg(call, 1), x->type.shape.ndim, &dim))
        return false;
    if (idx->type.dtype != DT_I64 || idx->type.shape.ndim > 1) {
        error_at(c, idx->loc, "index_copy(): expected a 1-D i64 tensor for index, but got %s",
                 type_to_string(c, &idx->type));
        return false;
    }
    if (!same_dtype(c, call, x, src))
        return false;
    const Shape *xs = &x->type.shape, *ss = &src->type.shape;
    bool ok = ss->ndim == xs->ndim;
    for (int i = 0; ok && i < xs->ndim; i++)
        ok = i == dim ? (idx->type.shape.ndim == 0 || dims_match(ss->dims[i], idx->type.shape.dims[0]))
                      : dims_match(ss->dims[i], xs->dims[i]);
    if (!ok) {
        error_at(c, src->loc, "index_copy(): source %s does not fit input %s with %s indices along dim %lld",
                 shape_str(c, ss), shape_str(c, xs), shape_str(c, &idx->type.shape), (long long)dim);
        return false;
    }
    call->dim = dim;
    call->type = x->type;
    return true;
}

/* ---- losses --------------------------------------------------------------------- */

bool infer_cross_entropy(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *target = arg(call, 1), *w;
    if (!require_float(c, call, x) || !tensor_arg(c, call, "weight", &w) || !reduction_param(c, call, false))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    if (xs->ndim == 0) {
        error_at(c, x->loc, "cross_entropy(): the input must be [C] or [N, C, ...], not 0-dim");
        return false;
    }
    int cdim = xs->ndim == 1 ? 0 : 1;
    Shape per_sample = {0};
    for (int i = 0; i < xs->ndim; i++)
        if (i != cdim)
            per_sample.dims[per_sample.ndim++] = xs->dims[i];
    double smoothing;
    int64_t ignore;
    if (!float_param(c, call, "label_smoothing", 0.0, &smoothing) ||
        !int_param(c, call, "ignore_index", -100, &ignore))
        return false;
    call->ignore_index = ignore;
    if (smoothing < 0 || smoothing > 1) {
        error_at(c, named(call, "label_smoothing")->loc, "label_smoothing must be between 0.0 and 1.0. Got: %s",
                 loc_text(c, named(call, "label_smoothing")->loc));
        return false;
    }
    if (dtype_is_float(target->type.dtype)) {
        /* class probabilities, one per class like the input */
        if (!shape_equal(ts, xs)) {
            error_at(c, target->loc, "cross_entropy(): class-probability targets must have the input's shape %s, "
                     "got %s", shape_str(c, xs), shape_str(c, ts));
            return false;
        }
        if (named(call, "ignore_index")) {
            error_at(c, named(call, "ignore_index")->loc, "ignore_index is not supported for floating point target");
            return false;
        }
        if (!same_dtype(c, call, x, target))
            return false;
    } else if (target->type.dtype != DT_I64) {
        error_at(c, target->loc, "cross_entropy(): class indices must be i64 (expected scalar type Long), got %s",
                 type_to_string(c, &target->type));
        return false;
    } else if (!shape_equal(ts, &per_sample)) {
        error_at(c, target->loc, "cross_entropy(): class-index targets must be %s to match input %s, got %s",
                 shape_str(c, &per_sample), shape_str(c, xs), shape_str(c, ts));
        return false;
    }
    if (w && (!per_channel(c, call, w, xs->dims[cdim]) || !same_dtype(c, call, x, w)))
        return false;
    loss_result(call, x->type.dtype, &per_sample);
    return true;
}

/* mse_loss, l1_loss, smooth_l1_loss, kl_div: elementwise with broadcasting
 * (PyTorch warns when the sizes differ); binary_cross_entropy[_with_logits]:
 * the target's size must be the input's. */
static bool elementwise_loss(Ctx *c, Expr *call);

bool infer_pointwise_loss(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    OpId id = call->op->id;
    if (id == OP_HUBER_LOSS || id == OP_POISSON_NLL_LOSS || id == OP_SOFT_MARGIN_LOSS || id == OP_HINGE_EMBEDDING_LOSS)
        return reduction_param(c, call, false) && elementwise_loss(c, call);
    Expr *x = arg(call, 0), *target = arg(call, 1);
    if (!reduction_param(c, call, id == OP_KL_DIV))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    bool bce = id == OP_BINARY_CROSS_ENTROPY || id == OP_BINARY_CROSS_ENTROPY_WITH_LOGITS;
    Shape s;
    if (bce) {
        if (!shape_equal(xs, ts)) {
            error_at(c, target->loc, id == OP_BINARY_CROSS_ENTROPY
                     ? "Using a target size (%s) that is different to the input size (%s) is deprecated. Please ensure they have the same size."
                     : "Target size (%s) must be the same as input size (%s)", shape_str(c, ts), shape_str(c, xs));
            return false;
        }
        s = *xs;
    } else {
        if (!broadcast(c, call, xs, ts, &s))
            return false;
        /* once: autocast runs this rule again on the same shapes */
        if (!shape_equal(xs, ts) && id != OP_KL_DIV && !c->autocast_ran)
            warning_class_at(c, target->loc, "loss-broadcast", "Using a target size (%s) that is different to the "
                             "input size (%s). This will likely lead to incorrect results due to broadcasting. "
                             "Please ensure they have the same size.", shape_str(c, ts), shape_str(c, xs));
    }
    DType t = promote_tensors(&x->type, &target->type);
    if (id == OP_BINARY_CROSS_ENTROPY_WITH_LOGITS) {
        /* (1 - target).mul_(input)...: computed in place in the target's dtype */
        if (!require_float(c, call, x) || !require_float(c, call, target))
            return false;
        t = target->type.dtype;
    }
    if (t == DT_BOOL) {
        error_at(c, call->loc, "%s(): subtraction of bool tensors is not defined", call->op->name);
        return false;
    }
    if (!dtype_is_float(t) && id != OP_L1_LOSS) {
        error_at(c, call->loc, "%s() needs floating-point tensors, but the input is %s and the target %s",
                 call->op->name, dtype_name(x->type.dtype), dtype_name(target->type.dtype));
        return false;
    }
    if (id == OP_BINARY_CROSS_ENTROPY && !same_dtype(c, call, x, target))
        return false;
    if (id == OP_SMOOTH_L1_LOSS) {
        double beta;
        if (!float_param(c, call, "beta", 1.0, &beta))
            return false;
        if (beta < 0) {
            error_at(c, named(call, "beta")->loc, "smooth_l1_loss does not support negative values for beta.");
            return false;
        }
    }
    if (id == OP_KL_DIV) {
        bool log_target;
        if (!bool_param(c, call, "log_target", false, &log_target))
            return false;
    }
    if (bce) {
        const char *extra[2] = {"weight", id == OP_BINARY_CROSS_ENTROPY_WITH_LOGITS ? "pos_weight" : NULL};
        for (int i = 0; i < 2 && extra[i]; i++) {
            Expr *w;
            if (!tensor_arg(c, call, extra[i], &w))
                return false;
            if (w && !broadcasts_to(c, call, w, xs, extra[i]))
                return false;
        }
    }
    loss_result(call, t, &s);
    return true;
}

/* ---- the ops typed after the first pass of issue 4 ---------------------------- */

/* The n results after the first of a call (values, indices = sort(x)). */
static void more_results(Ctx *c, Expr *call, int n, const Type *types)
{
    call->more_types = arena_alloc(c->arena, (size_t)n * sizeof(Type));
    for (int i = 0; i < n; i++)
        call->more_types[i] = types[i];
    call->nmore = n;
}

static bool push_dim(Ctx *c, Expr *call, Shape *s, Poly *d)
{
    if (s->ndim == MAX_DIMS) {
        error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
        return false;
    }
    s->dims[s->ndim++] = d;
    return true;
}

/* The leading (batch) dims of s, all but the last k. */
static Shape leading(const Shape *s, int k)
{
    Shape r = {0};
    for (int i = 0; i + k < s->ndim; i++)
        r.dims[r.ndim++] = s->dims[i];
    return r;
}

/* a + b*k + off, for output sizes of windows and pads; NULL (reported) on overflow. */
static Poly *affine(Ctx *c, Expr *call, const Poly *a, int64_t k, int64_t off)
{
    Poly *r = poly_mul(c, a, poly_const(c, k));
    if (r)
        r = poly_add(c, r, poly_const(c, off));
    if (!r)
        error_at(c, call->loc, "this dimension overflows 64-bit integers");
    return r;
}

/* A size that must be at least `min` when known. */
static bool size_at_least(Ctx *c, Expr *call, const Poly *p, int64_t min, const char *what)
{
    int64_t v;
    if (!const_dim(p, &v) || v >= min)
        return true;
    error_at(c, call->loc, "%s(): the calculated %s size %lld is too small", call->op->name, what, (long long)v);
    return false;
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

/* dot, vdot, cross, tensordot: both operands in one dtype. */
bool infer_dot(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *a = arg(call, 0), *b = arg(call, 1);
    OpId id = call->op->id;
    if (!not_bool(c, call, a) || !same_dtype(c, call, a, b))
        return false;
    const Shape *as = &a->type.shape, *bs = &b->type.shape;
    Shape out = {0};
    if (id == OP_DOT || id == OP_VDOT) {
        if (as->ndim != 1 || bs->ndim != 1) {
            error_at(c, call->loc, "1D tensors expected, but got %dD and %dD tensors", as->ndim, bs->ndim);
            return false;
        }
        if (!dims_match(as->dims[0], bs->dims[0])) {
            error_at(c, call->loc, "inconsistent tensor size, expected tensor %s and src %s to have the same number "
                     "of elements, but got %s and %s elements respectively", shape_str(c, as), shape_str(c, bs),
                     dim_str(c, as->dims[0]), dim_str(c, bs->dims[0]));
            return false;
        }
    } else if (id == OP_CROSS) {
        if (as->ndim != bs->ndim) {
            error_at(c, call->loc, "linalg.cross: inputs must have the same number of dimensions, got %d and %d",
                     as->ndim, bs->ndim);
            return false;
        }
        if (!broadcast(c, call, as, bs, &out))
            return false;
        int64_t dim = -1, three;
        Expr *de = named(call, "dim");
        if (de && !normalise_dim(c, de, out.ndim, &dim))
            return false;
        for (int i = 0; !de && i < as->ndim && dim < 0; i++)
            if (const_dim(as->dims[i], &three) && three == 3)
                dim = i;
        if (dim < 0) {
            error_at(c, call->loc, "no dimension of size 3 in input %s", shape_str(c, as));
            return false;
        }
        if (!const_dim(out.dims[dim], &three) || three != 3 || as->ndim == 0) {
            error_at(c, call->loc, "linalg.cross: inputs dimension %lld must have length 3. Got %s and %s",
                     (long long)dim, dim_str(c, as->dims[dim]), dim_str(c, bs->dims[dim]));
            return false;
        }
    } else {
        int64_t n;
        if (!int_param(c, call, "dims", 2, &n))
            return false;
        if (n < 0) {
            error_at(c, named(call, "dims")->loc, "tensordot expects dims >= 0, but got dims=%lld", (long long)n);
            return false;
        }
        if (n > as->ndim || n > bs->ndim) {
            error_at(c, call->loc, "tensordot expects dims < ndim_a or ndim_b, but got dims=%lld", (long long)n);
            return false;
        }
        for (int i = 0; i < n; i++) {
            int da = as->ndim - (int)n + i;
            if (!dims_match(as->dims[da], bs->dims[i])) {
                error_at(c, call->loc, "contracted dimensions need to match, but first has size %s in dim %d and "
                         "second has size %s in dim %d", dim_str(c, as->dims[da]), da, dim_str(c, bs->dims[i]), i);
                return false;
            }
        }
        for (int i = 0; i < as->ndim - n; i++)
            out.dims[out.ndim++] = as->dims[i];
        for (int i = (int)n; i < bs->ndim; i++)
            if (!push_dim(c, call, &out, bs->dims[i]))
                return false;
    }
    call->type.dtype = a->type.dtype;
    call->type.shape = out;
    return true;
}

/* F.bilinear: input1 [..., in1], input2 [..., in2], weight [out, in1, in2], bias [out] -> [..., out]. */
bool infer_bilinear(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x1 = arg(call, 0), *x2 = arg(call, 1), *w = arg(call, 2), *b;
    if (!tensor_arg(c, call, "bias", &b) || !require_float(c, call, x1) || !same_dtype(c, call, x1, x2) ||
        !same_dtype(c, call, x1, w) || (b && !same_dtype(c, call, x1, b)))
        return false;
    const Shape *s1 = &x1->type.shape, *s2 = &x2->type.shape, *ws = &w->type.shape;
    if (s1->ndim != s2->ndim || s1->ndim < 1) {
        error_at(c, call->loc, "bilinear(): input dimensions do not match: got %d and %d", s1->ndim, s2->ndim);
        return false;
    }
    for (int i = 0; i + 1 < s1->ndim; i++) {
        if (!dims_match(s1->dims[i], s2->dims[i])) {
            error_at(c, call->loc, "bilinear(): input batch dimensions do not match at dim %d: got %s and %s", i,
                     dim_str(c, s1->dims[i]), dim_str(c, s2->dims[i]));
            return false;
        }
    }
    if (!rank_is(c, call, w, 3, "weight"))
        return false;
    for (int k = 0; k < 2; k++) {
        const Shape *s = k ? s2 : s1;
        if (!dims_match(s->dims[s->ndim - 1], ws->dims[1 + k])) {
            error_at(c, call->loc, "bilinear(): input%d size does not match weight size: got %s but expected %s",
                     k + 1, dim_str(c, s->dims[s->ndim - 1]), dim_str(c, ws->dims[1 + k]));
            return false;
        }
    }
    if (b && (b->type.shape.ndim != 1 || !dims_match(b->type.shape.dims[0], ws->dims[0]))) {
        error_at(c, b->loc, "bilinear(): bias size does not match weight size: got %s but expected %s",
                 shape_str(c, &b->type.shape), dim_str(c, ws->dims[0]));
        return false;
    }
    call->type.dtype = x1->type.dtype;
    call->type.shape = *s1;
    call->type.shape.dims[s1->ndim - 1] = ws->dims[0];
    return true;
}

/* F.scaled_dot_product_attention (PyTorch 2.0): softmax(q k^T * scale + mask) v. */
bool infer_sdpa(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *q = arg(call, 0), *k = arg(call, 1), *v = arg(call, 2), *mask;
    if (!tensor_arg(c, call, "attn_mask", &mask) || !require_float(c, call, q))
        return false;
    if ((q->type.dtype != k->type.dtype || q->type.dtype != v->type.dtype) && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, call->loc, "Expected query, key, and value to have the same dtype, but got query.dtype: %s "
                 "key.dtype: %s and value.dtype: %s instead.", dtype_name(q->type.dtype), dtype_name(k->type.dtype),
                 dtype_name(v->type.dtype));
        return false;
    }
    const Shape *qs = &q->type.shape, *ks = &k->type.shape, *vs = &v->type.shape;
    if (qs->ndim < 2 || ks->ndim < 2 || vs->ndim < 2) {
        error_at(c, call->loc, "scaled_dot_product_attention(): query, key and value must have at least 2 "
                 "dimensions, got %s, %s and %s", shape_str(c, qs), shape_str(c, ks), shape_str(c, vs));
        return false;
    }
    Poly *L = qs->dims[qs->ndim - 2], *E = qs->dims[qs->ndim - 1], *S = ks->dims[ks->ndim - 2];
    if (!dims_match(E, ks->dims[ks->ndim - 1])) {
        error_at(c, call->loc, "scaled_dot_product_attention(): query %s and key %s must have the same embedding "
                 "size (%s != %s)", shape_str(c, qs), shape_str(c, ks), dim_str(c, E), dim_str(c, ks->dims[ks->ndim - 1]));
        return false;
    }
    if (!dims_match(S, vs->dims[vs->ndim - 2])) {
        error_at(c, call->loc, "scaled_dot_product_attention(): key %s and value %s must have the same sequence "
                 "length (%s != %s)", shape_str(c, ks), shape_str(c, vs), dim_str(c, S), dim_str(c, vs->dims[vs->ndim - 2]));
        return false;
    }
    Shape bq = leading(qs, 2), bk = leading(ks, 2), bv = leading(vs, 2), batch;
    if (!broadcast(c, call, &bq, &bk, &batch) || !broadcast(c, call, &batch, &bv, &batch))
        return false;
    Shape out = batch;
    out.dims[out.ndim++] = L;
    out.dims[out.ndim++] = vs->dims[vs->ndim - 1];
    bool causal;
    double p;
    if (!bool_param(c, call, "is_causal", false, &causal) || !float_param(c, call, "dropout_p", 0.0, &p))
        return false;
    if (p < 0 || p > 1) {
        error_at(c, named(call, "dropout_p")->loc, "dropout probability has to be between 0 and 1, but got %s",
                 loc_text(c, named(call, "dropout_p")->loc));
        return false;
    }
    if (mask) {
        if (causal) {
            error_at(c, mask->loc, "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                     "is_causal=True");
            return false;
        }
        if (mask->type.dtype != DT_BOOL && mask->type.dtype != q->type.dtype &&
            !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, mask->loc, "Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: "
                     "%s and query.dtype: %s instead.", dtype_name(mask->type.dtype), dtype_name(q->type.dtype));
            return false;
        }
        Shape scores = batch;
        scores.dims[scores.ndim++] = L;
        scores.dims[scores.ndim++] = S;
        if (!broadcasts_to(c, call, mask, &scores, "attn_mask"))
            return false;
    }
    call->type.dtype = q->type.dtype;
    call->type.shape = out;
    return true;
}

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

/* ---- linear algebra ------------------------------------------------------------- */

static const char *linalg_name(OpId id)
{
    switch (id) {
    case OP_INVERSE:
    case OP_LINALG_INV_EX:
        return "linalg.inv";
    case OP_QR:
        return "linalg.qr";
    case OP_SVD:
    case OP_LINALG_SVD:
        return "linalg.svd";
    case OP_CHOLESKY:
        return "cholesky";
    case OP_CHOLESKY_INVERSE:
        return "cholesky_inverse";
    case OP_CHOLESKY_SOLVE:
        return "cholesky_solve";
    case OP_LINALG_CHOLESKY:
    case OP_LINALG_CHOLESKY_EX:
        return "linalg.cholesky";
    case OP_LINALG_QR:
        return "linalg.qr";
    case OP_LINALG_SVDVALS:
        return "linalg.svdvals";
    case OP_LINALG_SOLVE:
        return "linalg.solve";
    case OP_LINALG_EIGH:
        return "linalg.eigh";
    case OP_LINALG_EIGVALSH:
        return "linalg.eigvalsh";
    case OP_LINALG_LU_FACTOR:
        return "linalg.lu_factor";
    case OP_PINVERSE:
        return "linalg.pinv";
    default:
        return "torch.triangular_solve";
    }
}

/* f32 or f64: LAPACK and cuSOLVER have no f16/bf16 (autocast may still cast them). */
static bool linalg_dtype(Ctx *c, Expr *call, Expr *x)
{
    DType t = x->type.dtype;
    if (t == DT_F32 || t == DT_F64 || (dtype_is_float(t) && call->autocast_on && !c->autocast_ran))
        return true;
    error_at(c, x->loc, dtype_is_float(t) ? "%s: Low precision dtypes not supported. Got %s"
                                          : "%s: Expected a floating point or complex tensor as input. Got %s",
             linalg_name(call->op->id), dtype_name(t));
    return false;
}

static bool matrices(Ctx *c, Expr *call, Expr *x, const char *what, bool square)
{
    const Shape *s = &x->type.shape;
    if (s->ndim < 2) {
        error_at(c, x->loc, "%s: The input tensor %s must have at least 2 dimensions.", linalg_name(call->op->id), what);
        return false;
    }
    if (square && !dims_match(s->dims[s->ndim - 2], s->dims[s->ndim - 1])) {
        error_at(c, x->loc, "%s: %s must be batches of square matrices, but they are %s by %s matrices",
                 linalg_name(call->op->id), what, dim_str(c, s->dims[s->ndim - 2]), dim_str(c, s->dims[s->ndim - 1]));
        return false;
    }
    return true;
}

/* min(m, n) when known at compile time. */
static Poly *min_dim(Ctx *c, Expr *call, Poly *m, Poly *n)
{
    int64_t a, b;
    if (dims_match(m, n))
        return m;
    if (const_dim(m, &a) && const_dim(n, &b))
        return a < b ? m : n;
    error_at(c, call->loc, "%s(): the smaller of %s and %s is not known at compile time", call->op->name,
             dim_str(c, m), dim_str(c, n));
    return NULL;
}

static Type matrix_type(DType t, const Shape *batch, Poly *rows, Poly *cols)
{
    Type r = {.dtype = t, .shape = *batch};
    if (rows)
        r.shape.dims[r.shape.ndim++] = rows;
    if (cols)
        r.shape.dims[r.shape.ndim++] = cols;
    return r;
}

bool infer_linalg(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0);
    if (!linalg_dtype(c, call, x))
        return false;
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    bool square = id == OP_INVERSE || id == OP_LINALG_INV_EX || id == OP_CHOLESKY || id == OP_CHOLESKY_INVERSE ||
                  id == OP_LINALG_CHOLESKY || id == OP_LINALG_CHOLESKY_EX || id == OP_LINALG_EIGH ||
                  id == OP_LINALG_EIGVALSH;
    if (id == OP_LINALG_SOLVE) {
        /* A [..., n, n], B [..., n, k], or B [n] / [..., n] a vector when its batch is A's */
        if (!require_tensor(c, call, 1))
            return false;
        Expr *b = arg(call, 1);
        if (!matrices(c, call, x, "A", true))
            return false;
        if (x->type.dtype != b->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, call->loc, "linalg.solve: Expected A and B to have the same dtype, but found A of type %s and B "
                     "of type %s instead", dtype_name(x->type.dtype), dtype_name(b->type.dtype));
            return false;
        }
        bool left;
        if (!bool_param(c, call, "left", true, &left))
            return false;
        const Shape *bs = &b->type.shape;
        Poly *n = xs->dims[xs->ndim - 1];
        Shape ba = leading(xs, 2);
        if (!left) {
            /* X A = B: B [..., k, n], X of B's shape */
            if (bs->ndim < 2 || !dims_match(bs->dims[bs->ndim - 1], n)) {
                error_at(c, call->loc, "linalg.solve: Incompatible shapes of A and B for the equation XA = B (%s and %s)",
                         shape_str(c, xs), shape_str(c, bs));
                return false;
            }
            Shape bb = leading(bs, 2), batch;
            if (!broadcast(c, call, &ba, &bb, &batch))
                return false;
            call->type = matrix_type(t, &batch, bs->dims[bs->ndim - 2], n);
            return true;
        }
        Shape a_rows = leading(xs, 1);
        bool vector = bs->ndim == 1 || (bs->ndim == xs->ndim - 1 && shape_equal(bs, &a_rows));
        Poly *rows = vector ? bs->dims[bs->ndim - 1] : bs->ndim >= 2 ? bs->dims[bs->ndim - 2] : NULL;
        if (bs->ndim == 0 || !left || !rows || !dims_match(rows, n)) {
            error_at(c, call->loc, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (%s and %s)",
                     shape_str(c, xs), shape_str(c, bs));
            return false;
        }
        Shape bb = leading(bs, vector ? 1 : 2), batch;
        if (!broadcast(c, call, &ba, &bb, &batch))
            return false;
        call->type = matrix_type(t, &batch, n, vector ? NULL : bs->dims[bs->ndim - 1]);
        return true;
    }
    if (id == OP_CHOLESKY_SOLVE || id == OP_TRIANGULAR_SOLVE) {
        /* input is b [..., m, k]; the coefficients A [..., m, m] */
        if (!require_tensor(c, call, 1))
            return false;
        Expr *a = arg(call, 1);
        if (id == OP_TRIANGULAR_SOLVE) {
            Expr *both[2] = {x, a};
            for (int i = 0; i < 2; i++)
                if (both[i]->type.shape.ndim < 2) {
                    error_at(c, both[i]->loc, "torch.triangular_solve: Expected %s to have at least 2 dimensions, "
                             "but it has %d dimensions instead", i ? "A" : "b", both[i]->type.shape.ndim);
                    return false;
                }
        }
        if (!matrices(c, call, x, "b", false) || !matrices(c, call, a, "A", true))
            return false;
        if (x->type.dtype != a->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, call->loc, "Expected b and A to have the same dtype, but found b of type %s and A of type %s "
                     "instead.", dtype_name(x->type.dtype), dtype_name(a->type.dtype));
            return false;
        }
        const Shape *as = &a->type.shape;
        Poly *m = as->dims[as->ndim - 1];
        if (!dims_match(m, xs->dims[xs->ndim - 2])) {
            error_at(c, call->loc, "Incompatible matrix sizes for %s: each A matrix is %s by %s but each b matrix is "
                     "%s by %s", id == OP_CHOLESKY_SOLVE ? "cholesky_solve" : "triangular_solve", dim_str(c, m),
                     dim_str(c, m), dim_str(c, xs->dims[xs->ndim - 2]), dim_str(c, xs->dims[xs->ndim - 1]));
            return false;
        }
        Shape bx = leading(xs, 2), ba = leading(as, 2), batch;
        if (!broadcast(c, call, &bx, &ba, &batch))
            return false;
        call->type = matrix_type(t, &batch, m, xs->dims[xs->ndim - 1]);
        if (id == OP_TRIANGULAR_SOLVE) {
            Type coeff = matrix_type(t, &batch, m, m);
            more_results(c, call, 1, &coeff);
        }
        bool upper;
        return bool_param(c, call, "upper", id == OP_TRIANGULAR_SOLVE, &upper);
    }
    if (!matrices(c, call, x, "A", square))
        return false;
    Shape batch = leading(xs, 2);
    Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1];
    switch (id) {
    case OP_INVERSE:
    case OP_CHOLESKY:
    case OP_CHOLESKY_INVERSE:
    case OP_LINALG_CHOLESKY:
        call->type = x->type;
        return true;
    case OP_PINVERSE:
        call->type = matrix_type(t, &batch, n, m);
        return true;
    case OP_LINALG_CHOLESKY_EX: {
        call->type = x->type;
        Type info = {.dtype = DT_I32, .shape = batch};
        more_results(c, call, 1, &info);
        return true;
    }
    case OP_LINALG_EIGH:
    case OP_LINALG_EIGVALSH: {
        const char *uplo;
        if (!str_param(c, call, "UPLO", "L", &uplo))
            return false;
        if (strcmp(uplo, "L") != 0 && strcmp(uplo, "U") != 0) {
            error_at(c, named(call, "UPLO")->loc, "Expected UPLO argument to be 'L' or 'U', but got %s", uplo);
            return false;
        }
        call->type = matrix_type(t, &batch, n, NULL);
        if (id == OP_LINALG_EIGH) {
            Type vectors = x->type;
            more_results(c, call, 1, &vectors);
        }
        return true;
    }
    case OP_LINALG_SVDVALS: {
        Poly *k = min_dim(c, call, m, n);
        if (!k)
            return false;
        call->type = matrix_type(t, &batch, k, NULL);
        return true;
    }
    case OP_LINALG_LU_FACTOR: {
        bool pivot;
        Poly *k = min_dim(c, call, m, n);
        if (!k || !bool_param(c, call, "pivot", true, &pivot))
            return false;
        call->type = x->type;
        Type pivots = matrix_type(DT_I32, &batch, k, NULL);
        more_results(c, call, 1, &pivots);
        return true;
    }
    case OP_LINALG_QR: {
        const char *mode;
        if (!str_param(c, call, "mode", "reduced", &mode))
            return false;
        bool complete = strcmp(mode, "complete") == 0, r_only = strcmp(mode, "r") == 0;
        if (!complete && !r_only && strcmp(mode, "reduced") != 0) {
            error_at(c, named(call, "mode")->loc, "qr received unrecognized mode '%s' but expected one of 'reduced' "
                     "(default), 'r', or 'complete'", mode);
            return false;
        }
        Poly *k = complete ? m : min_dim(c, call, m, n);
        if (!k)
            return false;
        Shape empty = {.ndim = 1, .dims = {poly_const(c, 0)}};
        call->type = r_only ? (Type){.dtype = t, .shape = empty} : matrix_type(t, &batch, m, k);
        Type r = matrix_type(t, &batch, k, n);
        more_results(c, call, 1, &r);
        return true;
    }
    case OP_LINALG_INV_EX: {
        call->type = x->type;
        Type info = {.dtype = DT_I32, .shape = batch};
        more_results(c, call, 1, &info);
        return true;
    }
    case OP_QR: {
        bool some;
        if (!bool_param(c, call, "some", true, &some))
            return false;
        Poly *k = some ? min_dim(c, call, m, n) : m;
        if (!k)
            return false;
        call->type = matrix_type(t, &batch, m, k);
        Type r = matrix_type(t, &batch, k, n);
        more_results(c, call, 1, &r);
        return true;
    }
    case OP_SVD:
    case OP_LINALG_SVD: {
        bool reduced, uv = true;
        if (id == OP_SVD ? !bool_param(c, call, "some", true, &reduced) || !bool_param(c, call, "compute_uv", true, &uv)
                         : !bool_param(c, call, "full_matrices", true, &reduced))
            return false;
        if (id == OP_LINALG_SVD)
            reduced = !reduced;
        Poly *k = min_dim(c, call, m, n);
        if (!k)
            return false;
        bool full = !reduced || !uv; /* torch.svd(compute_uv=False): zero-filled [m, m] and [n, n] */
        call->type = matrix_type(t, &batch, m, full ? m : k);
        Type rest[2] = {matrix_type(t, &batch, k, NULL),
                        id == OP_SVD ? matrix_type(t, &batch, n, full ? n : k) : matrix_type(t, &batch, full ? n : k, n)};
        more_results(c, call, 2, rest);
        return true;
    }
    default:
        ICE("infer_linalg on %s", call->op->name);
    }
}

/* ---- upsampling, padding, shapes and indexing ------------------------------------ */

static int op_spatial(OpId id)
{
    switch (id) {
    case OP_UPSAMPLE_NEAREST1D:
    case OP_UPSAMPLE_LINEAR1D:
    case OP_REFLECTION_PAD1D:
    case OP_REPLICATION_PAD1D:
        return 1;
    case OP_UPSAMPLE_NEAREST3D:
    case OP_UPSAMPLE_TRILINEAR3D:
    case OP_REPLICATION_PAD3D:
        return 3;
    default:
        return 2;
    }
}

bool infer_upsample(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0), *size = named(call, "output_size"), *scale = named(call, "scale_factors");
    int spatial = op_spatial(call->op->id);
    const Shape *xs = &x->type.shape;
    if (xs->ndim != spatial + 2) {
        error_at(c, x->loc, "%s(): Non-empty %dD data tensor expected but got a tensor with sizes %s", call->op->name,
                 spatial + 2, shape_str(c, xs));
        return false;
    }
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, x->loc, "\"%s\" not implemented for '%s': upsampling takes floating-point tensors",
                 call->op->name, dtype_name(x->type.dtype));
        return false;
    }
    if (!size == !scale) {
        error_at(c, call->loc, "Must specify exactly one of output_size and scale_factors");
        return false;
    }
    int ac = op_param_index(call->op, "align_corners");
    bool align;
    if (ac >= 0 && !bool_param(c, call, "align_corners", false, &align))
        return false;
    Shape out = *xs;
    int64_t o;
    double f;
    if (size ? !int_arg(c, size, &o) : !number_value(c, scale, &f))
        return false;
    if (size ? o <= 0 : f <= 0) {
        error_at(c, size ? size->loc : scale->loc, "%s(): Input and output sizes should be greater than 0",
                 call->op->name);
        return false;
    }
    for (int i = 2; i < out.ndim; i++) {
        int64_t n;
        if (size)
            out.dims[i] = poly_const(c, o);
        else if (const_dim(xs->dims[i], &n))
            out.dims[i] = poly_const(c, (int64_t)((double)n * f));
        else if (f == (double)(int64_t)f) {
            if (!(out.dims[i] = affine(c, call, xs->dims[i], (int64_t)f, 0)))
                return false;
        } else {
            error_at(c, scale->loc, "%s(): a scale factor of %s over the symbolic dimension %s is not supported: "
                     "its output size is not a polynomial", call->op->name, loc_text(c, scale->loc),
                     dim_str(c, xs->dims[i]));
            return false;
        }
        if (!size_at_least(c, call, out.dims[i], 1, "output"))
            return false;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* F.pad (constant mode) and aten's reflection_pad* / replication_pad*. */
bool infer_pad(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Shape out = *xs;
    if (call->op->id == OP_PAD) {
        int64_t v[MAX_DIMS];
        Expr *where[MAX_DIMS];
        bool ok;
        int n = int_varargs(c, call, "pad", v, where, &ok);
        const char *mode;
        if (!ok || !str_param(c, call, "mode", "constant", &mode))
            return false;
        if (strcmp(mode, "constant") != 0) {
            error_at(c, named(call, "mode")->loc, "pad() takes mode=\"constant\" only; the other modes are the ops "
                     "reflection_pad1d/2d and replication_pad1d/2d/3d");
            return false;
        }
        Expr *value = named(call, "value");
        if (value && !is_number(value)) {
            error_at(c, value->loc, "value= of pad() takes a number");
            return false;
        }
        if (n % 2 != 0) {
            error_at(c, call->loc, "Padding length must be divisible by 2");
            return false;
        }
        if (n / 2 > xs->ndim) {
            error_at(c, call->loc, "Padding length too large");
            return false;
        }
        for (int i = 0; i < n / 2; i++) {
            int d = xs->ndim - 1 - i;
            int64_t size;
            if (!(out.dims[d] = affine(c, call, xs->dims[d], 1, v[2 * i] + v[2 * i + 1])))
                return false;
            if (const_dim(out.dims[d], &size) && size < 0) {
                error_at(c, call->loc, "The input size %s, plus negative padding %lld and %lld resulted in a negative "
                         "output size, which is invalid. Check dimension %d of your input.", dim_str(c, xs->dims[d]),
                         (long long)v[2 * i], (long long)v[2 * i + 1], d);
                return false;
            }
        }
        call->type.dtype = x->type.dtype;
        call->type.shape = out;
        return true;
    }
    int spatial = op_spatial(call->op->id);
    bool reflect = call->op->id == OP_REFLECTION_PAD1D || call->op->id == OP_REFLECTION_PAD2D;
    if (xs->ndim != spatial + 1 && xs->ndim != spatial + 2) {
        error_at(c, x->loc, "%s(): Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other "
                 "non-zero dimensions for input, but got: %s", call->op->name, spatial + 1, spatial + 2,
                 shape_str(c, xs));
        return false;
    }
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, x->loc, "\"%s\" not implemented for '%s': padding by %s takes floating-point tensors",
                 call->op->name, dtype_name(x->type.dtype), reflect ? "reflection" : "replication");
        return false;
    }
    int64_t p;
    if (!int_arg(c, named(call, "padding"), &p))
        return false;
    for (int d = xs->ndim - spatial; d < xs->ndim; d++) {
        int64_t size;
        if (reflect && const_dim(xs->dims[d], &size) && (p >= size || -p >= size)) {
            error_at(c, call->loc, "Argument #4: Padding size should be less than the corresponding input dimension, "
                     "but got: padding (%lld, %lld) at dimension %d of input %s", (long long)p, (long long)p, d,
                     shape_str(c, xs));
            return false;
        }
        if (!(out.dims[d] = affine(c, call, xs->dims[d], 1, 2 * p)) || !size_at_least(c, call, out.dims[d], 1, "output"))
            return false;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_expand(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    int64_t v[MAX_DIMS];
    Expr *where[MAX_DIMS];
    bool ok;
    int n = int_varargs(c, call, "size", v, where, &ok);
    if (!ok)
        return false;
    Buf text;
    buf_init(&text, c->arena);
    for (int i = 0; i < n; i++)
        buf_printf(&text, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (n < xs->ndim) {
        error_at(c, call->loc, "expand(%s, size=[%s]): the number of sizes provided (%d) must be greater or equal to "
                 "the number of dimensions in the tensor (%d)", type_to_string(c, &x->type), text.data, n, xs->ndim);
        return false;
    }
    Shape out = {.ndim = n};
    for (int i = 0; i < n; i++) {
        int j = i - (n - xs->ndim);
        int64_t have;
        if (j < 0) {
            if (v[i] < 0) {
                error_at(c, where[i]->loc, "The expanded size of the tensor (%lld) isn't allowed in a leading, "
                         "non-existing dimension %d", (long long)v[i], i);
                return false;
            }
            out.dims[i] = poly_const(c, v[i]);
        } else if (v[i] == -1) {
            out.dims[i] = xs->dims[j];
        } else if (v[i] < 0) {
            error_at(c, where[i]->loc, "invalid shape dimension %lld", (long long)v[i]);
            return false;
        } else if (const_dim(xs->dims[j], &have) && (have == v[i] || have == 1)) {
            out.dims[i] = poly_const(c, v[i]);
        } else {
            error_at(c, where[i]->loc, "The expanded size of the tensor (%lld) must match the existing size (%s) at "
                     "non-singleton dimension %d.  Target sizes: [%s].  Tensor sizes: %s", (long long)v[i],
                     dim_str(c, xs->dims[j]), i, text.data, shape_str(c, xs));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* torch.narrow(x, dim, start, length) and aten's slice(x, dim, start, end, step). */
bool infer_narrow(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    bool narrow = call->op->id == OP_NARROW;
    if (xs->ndim == 0) {
        error_at(c, call->loc, "%s() cannot be applied to a 0-dim tensor.", call->op->name);
        return false;
    }
    int64_t dim = 0, start = 0, n;
    Expr *de = named(call, "dim");
    if (de && !normalise_dim(c, de, xs->ndim, &dim))
        return false;
    if (!int_param(c, call, "start", 0, &start))
        return false;
    Poly *size = xs->dims[dim];
    bool known = const_dim(size, &n);
    Shape out = *xs;
    if (narrow) {
        int64_t length;
        if (!int_param(c, call, "length", 0, &length))
            return false;
        if (length < 0) {
            error_at(c, named(call, "length")->loc, "narrow(): length must be non-negative.");
            return false;
        }
        if (known && (start < -n || start > n)) {
            error_at(c, named(call, "start")->loc, "start out of range (expected to be in range of [%lld, %lld], but "
                     "got %lld)", (long long)-n, (long long)n, (long long)start);
            return false;
        }
        if (!known && start < 0) {
            error_at(c, named(call, "start")->loc, "narrow(): a negative start over the symbolic dimension %s is not "
                     "supported", dim_str(c, size));
            return false;
        }
        if (start < 0)
            start += n;
        if (known && start + length > n) {
            error_at(c, call->loc, "start (%lld) + length (%lld) exceeds dimension size (%lld).", (long long)start,
                     (long long)length, (long long)n);
            return false;
        }
        out.dims[dim] = poly_const(c, length);
    } else {
        int64_t step, end = INT64_MAX;
        Expr *ee = named(call, "end");
        if (!int_param(c, call, "step", 1, &step) || (ee && !int_arg(c, ee, &end)))
            return false;
        if (step <= 0) {
            error_at(c, named(call, "step")->loc, "slice step must be positive");
            return false;
        }
        if (known) {
            if (start < 0)
                start += n;
            if (end < 0)
                end += n;
            start = start < 0 ? 0 : start > n ? n : start;
            end = end < start ? start : end > n ? n : end;
            out.dims[dim] = poly_const(c, (end - start + step - 1) / step);
        } else if (start >= 0 && !ee && step == 1) {
            if (!(out.dims[dim] = affine(c, call, size, 1, -start)))
                return false;
        } else {
            error_at(c, call->loc, "slice() of the symbolic dimension %s is supported with start >= 0, no end and "
                     "step 1 only: otherwise its size depends on the value of %s", dim_str(c, size), dim_str(c, size));
            return false;
        }
    }
    call->dim = dim;
    call->start = start;
    call->step = narrow ? 1 : arg_int(c, call, "step", 1);
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* index[d] <= of[d] for every d (but `except`), as far as known at compile time. */
static bool index_fits(const Shape *idx, const Shape *of, int64_t except)
{
    for (int d = 0; d < idx->ndim; d++) {
        int64_t a, b;
        if (d == except || dims_match(idx->dims[d], of->dims[d]))
            continue;
        if (!(const_dim(idx->dims[d], &a) && const_dim(of->dims[d], &b) && a <= b))
            return false;
    }
    return true;
}

/* gather, scatter_add and index_select. */
bool infer_gather(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 2))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0), *idx = arg(call, 2);
    const Shape *xs = &x->type.shape, *is = &idx->type.shape;
    int64_t dim;
    if (!normalise_dim(c, arg(call, 1), xs->ndim, &dim))
        return false;
    call->dim = dim;
    if (id == OP_INDEX_SELECT) {
        if (idx->type.dtype != DT_I64 && idx->type.dtype != DT_I32) {
            error_at(c, idx->loc, "index_select(): Expected dtype int32 or int64 for index");
            return false;
        }
        if (is->ndim > 1) {
            error_at(c, idx->loc, "index_select(): Index is supposed to be a vector");
            return false;
        }
        call->type = x->type;
        if (xs->ndim)
            call->type.shape.dims[dim] = is->ndim ? is->dims[0] : poly_const(c, 1);
        return true;
    }
    if (idx->type.dtype != DT_I64) {
        error_at(c, idx->loc, "%s(): Expected dtype int64 for index", id == OP_GATHER ? "gather" : "scatter");
        return false;
    }
    int nx = xs->ndim ? xs->ndim : 1, ni = is->ndim ? is->ndim : 1;
    if (ni != nx) {
        error_at(c, idx->loc, "Index tensor must have the same number of dimensions as %s tensor",
                 id == OP_GATHER ? "input" : "self");
        return false;
    }
    if (id == OP_GATHER) {
        if (xs->ndim && is->ndim && !index_fits(is, xs, dim)) {
            error_at(c, idx->loc, "Size does not match at dimension %d expected index %s to be smaller than self %s "
                     "apart from dimension %lld", 0, shape_str(c, is), shape_str(c, xs), (long long)dim);
            return false;
        }
        bool sparse;
        if (!bool_param(c, call, "sparse_grad", false, &sparse))
            return false;
        call->type.dtype = x->type.dtype;
        call->type.shape = *is;
        return true;
    }
    if (!require_tensor(c, call, 3))
        return false;
    Expr *src = arg(call, 3);
    const Shape *ss = &src->type.shape;
    if (x->type.dtype != src->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, src->loc, "scatter(): Expected self.dtype to be equal to src.dtype (self is %s, src %s)",
                 dtype_name(x->type.dtype), dtype_name(src->type.dtype));
        return false;
    }
    if ((ss->ndim ? ss->ndim : 1) != ni) {
        error_at(c, idx->loc, "Index tensor must have the same number of dimensions as src tensor");
        return false;
    }
    if (xs->ndim && is->ndim && (!index_fits(is, xs, dim) || !index_fits(is, ss, -1))) {
        error_at(c, idx->loc, "Expected index %s to be smaller than self %s apart from dimension %lld and to be "
                 "smaller size than src %s", shape_str(c, is), shape_str(c, xs), (long long)dim, shape_str(c, ss));
        return false;
    }
    call->type = x->type;
    return true;
}

/* ---- conv_tbc ---------------------------------------------------------------------- */

bool infer_conv_tbc(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0), *w = arg(call, 1), *b = arg(call, 2);
    if (!not_bool(c, call, x) || !same_dtype(c, call, x, w) || !same_dtype(c, call, x, b))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape, *bs = &b->type.shape;
    const char *msg = xs->ndim != 3 ? "Input must have 3 dims: time, batch, in_channel"
                      : ws->ndim != 3 ? "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."
                      : bs->ndim != 1 ? "Bias must be 1-D"
                      : !dims_match(xs->dims[2], ws->dims[1]) ? "Input dim 2 (input channels) is not == dim 1 in the weight tensor"
                      : !dims_match(bs->dims[0], ws->dims[2]) ? "Bias size must equal dim 2 in the weight tensor (output channels)."
                      : NULL;
    if (msg) {
        error_at(c, call->loc, "%s (input %s, weight %s, bias %s)", msg, shape_str(c, xs), shape_str(c, ws),
                 shape_str(c, bs));
        return false;
    }
    int64_t pad, k;
    if (!int_param(c, call, "pad", 0, &pad))
        return false;
    if (!const_dim(ws->dims[0], &k)) {
        error_at(c, w->loc, "conv_tbc(): the kernel width must be a number, not %s", dim_str(c, ws->dims[0]));
        return false;
    }
    Shape out = *xs;
    if (!(out.dims[0] = affine(c, call, xs->dims[0], 1, 2 * pad - k + 1)) || !size_at_least(c, call, out.dims[0], 1, "output"))
        return false;
    out.dims[2] = ws->dims[2];
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- more losses -------------------------------------------------------------------- */

/* huber_loss, poisson_nll_loss, soft_margin_loss, hinge_embedding_loss. */
static bool elementwise_loss(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    Expr *x = arg(call, 0), *target = arg(call, 1);
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    Shape s;
    if (id == OP_SOFT_MARGIN_LOSS) {
        /* computed in place in a tensor like the input */
        if (!broadcasts_to(c, call, target, xs, "target"))
            return false;
        s = *xs;
    } else if (!broadcast(c, call, xs, ts, &s)) {
        return false;
    }
    if (id == OP_HUBER_LOSS && !shape_equal(xs, ts) && !c->autocast_ran)
        warning_class_at(c, target->loc, "loss-broadcast", "Using a target size (%s) that is different to the "
                         "input size (%s). This will likely lead to incorrect results due to broadcasting. "
                         "Please ensure they have the same size.", shape_str(c, ts), shape_str(c, xs));
    DType t = x->type.dtype;
    if (id == OP_POISSON_NLL_LOSS) {
        t = promote_tensors(&x->type, &target->type);
        if (!dtype_is_float(t))
            t = DT_F32;
        bool log_input, full;
        double eps;
        if (!bool_param(c, call, "log_input", true, &log_input) || !bool_param(c, call, "full", false, &full) ||
            !float_param(c, call, "eps", 1e-8, &eps))
            return false;
    } else if (!require_float(c, call, x)) {
        return false;
    }
    if (id == OP_HUBER_LOSS) {
        double delta;
        if (!float_param(c, call, "delta", 1.0, &delta))
            return false;
        if (delta <= 0) {
            error_at(c, named(call, "delta")->loc, "huber_loss does not support non-positive values for delta.");
            return false;
        }
    }
    if (id == OP_HINGE_EMBEDDING_LOSS) {
        double margin;
        if (!float_param(c, call, "margin", 1.0, &margin))
            return false;
    }
    loss_result(call, t, &s);
    return true;
}

/* nll_loss2d, multilabel_margin_loss, multi_margin_loss: class-index targets. */
bool infer_class_loss(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0), *target = arg(call, 1), *w = NULL;
    if (!require_float(c, call, x) || !reduction_param(c, call, false))
        return false;
    if (op_param_index(call->op, "weight") >= 0 && !tensor_arg(c, call, "weight", &w))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    if (target->type.dtype != DT_I64) {
        error_at(c, target->loc, "%s(): expected scalar type Long (i64) for the target, but got %s", call->op->name,
                 type_to_string(c, &target->type));
        return false;
    }
    Shape per_sample = {0};
    const Poly *classes;
    if (id == OP_NLL_LOSS2D) {
        if (xs->ndim != 4) {
            error_at(c, x->loc, "only batches of spatial inputs supported (4D tensors), but got input of dimension: %d",
                     xs->ndim);
            return false;
        }
        if (ts->ndim != 3) {
            error_at(c, target->loc, "only batches of spatial targets supported (3D tensors) but got targets of "
                     "dimension: %d", ts->ndim);
            return false;
        }
        per_sample.ndim = 3;
        per_sample.dims[0] = xs->dims[0];
        per_sample.dims[1] = xs->dims[2];
        per_sample.dims[2] = xs->dims[3];
        if (!shape_equal(ts, &per_sample)) {
            error_at(c, target->loc, "input and target batch or spatial sizes don't match: target %s, input %s",
                     shape_str(c, ts), shape_str(c, xs));
            return false;
        }
        classes = xs->dims[1];
        int64_t ignore;
        if (!int_param(c, call, "ignore_index", -100, &ignore))
            return false;
        call->ignore_index = ignore;
    } else {
        if (xs->ndim > 2) {
            error_at(c, x->loc, "%s(): Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s",
                     call->op->name, shape_str(c, xs));
            return false;
        }
        if (xs->ndim == 2)
            per_sample.dims[per_sample.ndim++] = xs->dims[0];
        classes = xs->ndim ? xs->dims[xs->ndim - 1] : poly_const(c, 1);
        bool ok = id == OP_MULTILABEL_MARGIN_LOSS ? shape_equal(ts, xs) || (xs->ndim == 0 && ts->ndim <= 1)
                                                   : shape_equal(ts, &per_sample);
        if (!ok) {
            error_at(c, target->loc, id == OP_MULTILABEL_MARGIN_LOSS ? "inconsistent target size: %s for input of size: %s"
                                                                     : "inconsistent target size, got %s for input of size %s",
                     shape_str(c, ts), shape_str(c, xs));
            return false;
        }
        if (id == OP_MULTI_MARGIN_LOSS) {
            int64_t p;
            double margin;
            if (!int_param(c, call, "p", 1, &p) || !float_param(c, call, "margin", 1.0, &margin))
                return false;
            if (p != 1 && p != 2) {
                error_at(c, named(call, "p")->loc, "only p == 1 and p == 2 supported");
                return false;
            }
        }
    }
    if (w && (!per_channel(c, call, w, classes) || !same_dtype(c, call, x, w)))
        return false;
    loss_result(call, x->type.dtype, &per_sample);
    return true;
}

/* cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss. */
bool infer_pair_loss(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    OpId id = call->op->id;
    Expr *a = arg(call, 0), *b = arg(call, 1), *t = arg(call, 2);
    const Shape *as = &a->type.shape, *bs = &b->type.shape, *ts = &t->type.shape;
    if (!reduction_param(c, call, false))
        return false;
    double margin;
    if (!float_param(c, call, "margin", id == OP_TRIPLET_MARGIN_LOSS ? 1.0 : 0.0, &margin))
        return false;
    Type ab = a->type;
    ab.dtype = promote_tensors(&a->type, &b->type);
    if (bs->ndim)
        ab.shape = *bs;
    DType dt = ab.dtype;
    Shape s;
    if (id == OP_COSINE_EMBEDDING_LOSS) {
        if (ts->ndim > 1) {
            error_at(c, t->loc, "1D target tensor expected, multi-target not supported");
            return false;
        }
        if (as->ndim != ts->ndim + 1 || bs->ndim != ts->ndim + 1) {
            error_at(c, call->loc, "%dD target tensor expects %dD input tensors, but found inputs with sizes %s and %s.",
                     ts->ndim, ts->ndim + 1, shape_str(c, as), shape_str(c, bs));
            return false;
        }
        Shape ra = leading(as, 1), rb = leading(bs, 1);
        if (!broadcast(c, call, as, bs, &s) || !broadcast(c, call, &ra, &rb, &s) || !broadcast(c, call, &s, ts, &s))
            return false;
    } else {
        if (as->ndim != bs->ndim || as->ndim != ts->ndim) {
            if (id == OP_MARGIN_RANKING_LOSS)
                error_at(c, call->loc, "margin_ranking_loss : All input tensors should have same dimension but got "
                         "sizes: input1: %s, input2: %s, target: %s ", shape_str(c, as), shape_str(c, bs), shape_str(c, ts));
            else
                error_at(c, call->loc, "All inputs should have same dimension but got %dD, %dD and %dD inputs.",
                         as->ndim, bs->ndim, ts->ndim);
            return false;
        }
        if (a->type.dtype == DT_BOOL || b->type.dtype == DT_BOOL) {
            error_at(c, call->loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                     "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
            return false;
        }
        if (!broadcast(c, call, as, bs, &s) || !broadcast(c, call, &s, ts, &s))
            return false;
        dt = promote_tensors(&ab, &t->type);
        if (id == OP_TRIPLET_MARGIN_LOSS) {
            if (as->ndim != 1 && as->ndim != 2) {
                error_at(c, call->loc, "triplet_margin_loss(): expected 1D or 2D inputs, got %dD", as->ndim);
                return false;
            }
            double p, eps;
            bool swap;
            if (!float_param(c, call, "p", 2.0, &p) || !float_param(c, call, "eps", 1e-6, &eps) ||
                !bool_param(c, call, "swap", false, &swap))
                return false;
            if (!dtype_is_float(dt)) {
                error_at(c, call->loc, "triplet_margin_loss() needs floating-point tensors, got %s, %s and %s",
                         dtype_name(a->type.dtype), dtype_name(b->type.dtype), dtype_name(t->type.dtype));
                return false;
            }
            s = leading(&s, 1);
        } else if (t->type.dtype == DT_BOOL) {
            error_at(c, t->loc, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                     "invert a mask, use the `~` or `logical_not()` operator instead.");
            return false;
        }
    }
    if (!dtype_is_float(dt))
        dt = DT_F32; /* the float margin or epsilon */
    loss_result(call, dt, &s);
    return true;
}


/* ---- norms and distances ---------------------------------------------------------- */

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
        if (d && !normalise_dim(c, d, xs->ndim, &dim))
            return false;
        if (id == OP_FROBENIUS_NORM && !d)
            return false;
        int kp = op_param_index(call->op, id == OP_LINALG_VECTOR_NORM ? "ord" : "p");
        double p;
        if (kp >= 0 && !float_param(c, call, call->op->params[kp].name, 2, &p))
            return false;
        out = xs->ndim == 0 ? *xs : reduced(c, xs, dim, keepdim);
        call->dim = dim; /* -1: every dim */
    }
    call->type.dtype = want != DT_NONE ? want : x->type.dtype;
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

/* chain_matmul(a, b, c) and linalg_multi_dot(a, b, c): the first and last of
 * multi_dot may be vectors. */
bool infer_multi_dot(Ctx *c, Expr *call)
{
    Expr *ts[8];
    int n = 0;
    for (int i = 0; i < call->op->nparams; i++) {
        if (!arg(call, i))
            continue;
        if (!require_tensor(c, call, i))
            return false;
        ts[n++] = arg(call, i);
    }
    bool multi = call->op->id == OP_LINALG_MULTI_DOT;
    if (n < (multi ? 2 : 1)) {
        error_at(c, call->loc, multi ? "multi_dot(): expected at least 2 tensors but got %d"
                                     : "chain_matmul(): Expected one or more matrices", n);
        return false;
    }
    Shape out = {0};
    Poly *k = NULL;
    for (int i = 0; i < n; i++) {
        const Shape *s = &ts[i]->type.shape;
        if (i && !same_dtype(c, call, ts[0], ts[i]))
            return false;
        bool vec_ok = multi && (i == 0 || i == n - 1);
        if (s->ndim != 2 && !(vec_ok && s->ndim == 1)) {
            error_at(c, ts[i]->loc, "%s(): tensor %d must be 2D%s but got %dD", call->op->name, i,
                     vec_ok ? " or 1D" : "", s->ndim);
            return false;
        }
        /* a 1-D first operand is a row, a 1-D last one a column, both dropped from the result */
        Poly *rows = s->ndim == 2 ? s->dims[0] : i == 0 ? NULL : s->dims[0];
        Poly *cols = s->ndim == 2 ? s->dims[1] : i == 0 ? s->dims[0] : NULL;
        if (i && !dims_match(k, rows)) {
            error_at(c, call->loc, "%s(): tensors %d and %d with shapes %s and %s cannot be multiplied", call->op->name,
                     i - 1, i, shape_str(c, &ts[i - 1]->type.shape), shape_str(c, s));
            return false;
        }
        if (i == 0 && rows)
            out.dims[out.ndim++] = rows;
        k = cols;
    }
    if (k)
        out.dims[out.ndim++] = k;
    if (!not_bool(c, call, ts[0]))
        return false;
    call->type.dtype = ts[0]->type.dtype;
    call->type.shape = out;
    return true;
}


/* index_put with one index tensor, and grid_sampler. */
bool infer_index_put(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    if (call->op->id == OP_GRID_SAMPLER) {
        Expr *g = arg(call, 1);
        const Shape *gs = &g->type.shape;
        if (!require_float(c, call, x))
            return false;
        if (x->type.dtype != g->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, call->loc, "grid_sampler(): expected input and grid to have same dtype, but input has %s and "
                     "grid has %s", dtype_name(x->type.dtype), dtype_name(g->type.dtype));
            return false;
        }
        int64_t last;
        if ((xs->ndim != 4 && xs->ndim != 5) || gs->ndim != xs->ndim) {
            error_at(c, call->loc, "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
                     "but got input with sizes %s and grid with sizes %s", shape_str(c, xs), shape_str(c, gs));
            return false;
        }
        if (!dims_match(xs->dims[0], gs->dims[0])) {
            error_at(c, call->loc, "grid_sampler(): expected grid and input to have same batch size, but got input with "
                     "sizes %s and grid with sizes %s", shape_str(c, xs), shape_str(c, gs));
            return false;
        }
        if (!const_dim(gs->dims[gs->ndim - 1], &last) || last != xs->ndim - 2) {
            error_at(c, g->loc, "grid_sampler(): expected grid to have size %d in last dimension, but got grid with "
                     "sizes %s", xs->ndim - 2, shape_str(c, gs));
            return false;
        }
        int64_t mode, pad;
        bool align;
        if (!int_param(c, call, "interpolation_mode", 0, &mode) || !int_param(c, call, "padding_mode", 0, &pad) ||
            !bool_param(c, call, "align_corners", false, &align))
            return false;
        if (mode < 0 || mode > 2 || pad < 0 || pad > 2 || (mode == 2 && xs->ndim == 5)) {
            error_at(c, call->loc, "grid_sampler(): interpolation_mode is 0 (bilinear), 1 (nearest) or 2 (bicubic, "
                     "4-D only) and padding_mode 0 (zeros), 1 (border) or 2 (reflection)");
            return false;
        }
        /* [N, C, grid's spatial dims...] */
        Shape out = *gs;
        for (int i = gs->ndim - 1; i >= 2; i--)
            out.dims[i] = gs->dims[i - 1];
        out.dims[1] = xs->dims[1];
        call->type.dtype = x->type.dtype;
        call->type.shape = out;
        return true;
    }
    if (!require_tensor(c, call, 2))
        return false;
    Expr *idx = arg(call, 1), *v = arg(call, 2);
    const Shape *is = &idx->type.shape;
    bool mask = idx->type.dtype == DT_BOOL;
    if (idx->type.dtype != DT_I64 && !mask) {
        error_at(c, idx->loc, "tensors used as indices must be long, byte or bool tensors (this is %s)",
                 dtype_name(idx->type.dtype));
        return false;
    }
    if (xs->ndim == 0 || (mask && is->ndim > xs->ndim)) {
        error_at(c, idx->loc, "too many indices for tensor of dimension %d", xs->ndim);
        return false;
    }
    /* the indexed shape: the index's shape (a mask: its count of true entries) then the rest */
    Shape res = {0};
    int used = mask ? is->ndim : 1;
    if (mask) {
        for (int i = 0; i < is->ndim; i++)
            if (!dims_match(is->dims[i], xs->dims[i])) {
                error_at(c, idx->loc, "The shape of the mask %s at index %d does not match the shape of the indexed "
                         "tensor %s at index %d", shape_str(c, is), i, shape_str(c, xs), i);
                return false;
            }
    } else {
        res = *is;
    }
    for (int i = used; i < xs->ndim; i++)
        if (!push_dim(c, call, &res, xs->dims[i]))
            return false;
    /* a mask selects a number of rows known only at run time: values must
     * broadcast to any number (a leading dim of 1, or none) */
    const Shape *vs = &v->type.shape;
    Shape to = res;
    bool ok = true;
    if (mask) {
        to = (Shape){0};
        for (int i = used; i < xs->ndim; i++)
            to.dims[to.ndim++] = xs->dims[i];
        int64_t one;
        if (vs->ndim == to.ndim + 1)
            ok = const_dim(vs->dims[0], &one) && one == 1;
    }
    ok = ok && vs->ndim <= to.ndim + (mask ? 1 : 0);
    for (int i = 1; ok && i <= vs->ndim && i <= to.ndim; i++) {
        int64_t one;
        const Poly *d = vs->dims[vs->ndim - i];
        ok = (const_dim(d, &one) && one == 1) || dims_match(d, to.dims[to.ndim - i]);
    }
    if (!ok) {
        error_at(c, v->loc, "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape "
                 "%s%s", shape_str(c, vs), mask ? "[*] + " : "", shape_str(c, &to));
        return false;
    }
    if (x->type.dtype != v->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, v->loc, "Index put requires the source and destination dtypes match, got %s for the destination "
                 "and %s for the source.", dtype_name(x->type.dtype), dtype_name(v->type.dtype));
        return false;
    }
    bool acc;
    if (!bool_param(c, call, "accumulate", false, &acc))
        return false;
    call->type = x->type;
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

/* Each op's type rule, from the infer column of its ops.def row. */
typedef bool (*TypeRule)(Ctx *c, Expr *call);
static const TypeRule type_rules[OP_COUNT] = {
#define OP(ID, name, sig, infer, form, flags) [OP_##ID] = infer,
#include "ops.def"
#undef OP
};

bool infer_call(Ctx *c, Expr *call)
{
    /* complex operands reach only the ops of complex.c */
    return complex_operands_ok(c, call) && type_rules[call->op->id](c, call) && type_fits(c, &call->type, call->loc);
}

bool broadcast_shapes(Ctx *c, Expr *call, const Shape *a, const Shape *b, Shape *out)
{
    return broadcast(c, call, a, b, out);
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
            else if (st->sym && st->kind != S_INPUT && dtype_is_complex(st->type->dtype))
                error_at(c, st->type->loc, "buffers are read from safetensors files, which ampc reads in real "
                         "dtypes only; declare the real and imaginary parts as an f32 or f64 [..., 2] buffer "
                         "and use view_as_complex()");
            break;
        case S_ASSIGN:
            if (!check_expr(c, st->value))
                break;
            if (st->value->type.dtype == DT_NONE) {
                error_at(c, st->value->loc, "only tensors can be assigned to names");
                break;
            }
            int nresults = 1 + (st->value->kind == E_CALL ? st->value->nmore : 0);
            if (st->targets->len != nresults) {
                error_at(c, st->loc, "%s() returns %d tensor%s, but %d name%s assigned",
                         st->value->kind == E_CALL ? st->value->op->name : "this expression", nresults,
                         nresults == 1 ? "" : "s", st->targets->len, st->targets->len == 1 ? " is" : "s are");
                break;
            }
            ((Expr *)VEC_AT(st->targets, 0))->sym->type = st->value->type;
            for (int k = 1; k < nresults; k++)
                ((Expr *)VEC_AT(st->targets, k))->sym->type = st->value->more_types[k - 1];
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
        case S_TRAIN:
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

/* ---- reading a typechecked call's arguments (the code generator) -------
 * Typecheck validated every argument, so these only read: the value given,
 * or the default when the argument was left out. */

Expr *arg_named(Expr *call, const char *name) { return named(call, name); }

int64_t arg_int(Ctx *c, Expr *call, const char *name, int64_t dflt)
{
    int64_t v;
    return int_param(c, call, name, dflt, &v) ? v : dflt;
}

bool arg_bool(Ctx *c, Expr *call, const char *name, bool dflt)
{
    bool v;
    return bool_param(c, call, name, dflt, &v) ? v : dflt;
}

const char *arg_str(Ctx *c, Expr *call, const char *name, const char *dflt)
{
    const char *v;
    return str_param(c, call, name, dflt, &v) ? v : dflt;
}

/* A number argument rounded once, exactly, to dtype t (the dtype the
 * kernel computes in); `dflt` is the default's literal text. */
double arg_number(Ctx *c, Expr *call, const char *name, const char *dflt, DType t)
{
    (void)c;
    Expr *e = named(call, name);
    const char *text = dflt;
    bool neg = false;
    if (e) {
        Expr *lit = e;
        if (lit->kind == E_CALL && lit->op && lit->op->id == OP_NEG && !is_tensor(lit)) {
            neg = true;
            lit = VEC_AT(lit->list, 0);
        }
        ASSERT(lit->kind == E_NUMBER);
        text = lit->text;
    }
    if (text[0] == '-') {
        neg = !neg;
        text++;
    }
    double v;
    literal_to_dtype(text, t, &v);
    return neg ? -v : v;
}

/* The int varargs of a call (reshape's shape, pad's pads), in order. */
int arg_int_list(Ctx *c, Expr *call, const char *name, int64_t *out)
{
    Expr *where[MAX_DIMS * 2 + 2];
    bool ok;
    return int_varargs(c, call, name, out, where, &ok);
}

/* ---- recurrent cells, max_unpool, quantile (amprt/more.h) ------------------------ */

/* The gates of a cell: 4 (lstm), 3 (gru), 1 (the plain rnn cells). */
int rnn_cell_gates(OpId id) { return id == OP_LSTM_CELL ? 4 : id == OP_GRU_CELL ? 3 : 1; }

/* lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell: PyTorch's checks
 * (check_rnn_cell_forward_input/hidden) and the gates' row count. */
bool infer_rnn_cell(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int g = rnn_cell_gates(id);
    int nt = lstm ? 5 : 4;
    for (int i = 0; i < nt; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0), *h = arg(call, 1), *cx = lstm ? arg(call, 2) : NULL;
    Expr *wih = arg(call, nt - 2), *whh = arg(call, nt - 1), *bih, *bhh;
    if (!tensor_arg(c, call, "b_ih", &bih) || !tensor_arg(c, call, "b_hh", &bhh) || !require_float(c, call, x))
        return false;
    Expr *all[7] = {h, cx, wih, whh, bih, bhh, NULL};
    for (int i = 0; i < 6; i++)
        if (all[i] && !same_dtype(c, call, x, all[i]))
            return false;
    const Shape *xs = &x->type.shape, *hs = &h->type.shape, *wi = &wih->type.shape, *wh = &whh->type.shape;
    if (xs->ndim != 1 && xs->ndim != 2) {
        error_at(c, x->loc, "%s: Expected input to be 1D or 2D, got %dD instead", call->op->name, xs->ndim);
        return false;
    }
    if (wi->ndim != 2 || wh->ndim != 2) {
        Expr *bad = wi->ndim != 2 ? wih : whh;
        error_at(c, bad->loc, "%s(): expected a 2-D weight [%d*hidden_size, %s_size], got %s", call->op->name, g,
                 bad == wih ? "input" : "hidden", type_to_string(c, &bad->type));
        return false;
    }
    bool batched = xs->ndim == 2;
    Poly *in = xs->dims[xs->ndim - 1], *hidden = wh->dims[1];
    if (!dims_match(in, wi->dims[1])) {
        error_at(c, x->loc, "input has inconsistent input_size: got %s expected %s", dim_str(c, in),
                 dim_str(c, wi->dims[1]));
        return false;
    }
    Expr *hid[2] = {h, cx};
    for (int k = 0; k < (lstm ? 2 : 1); k++) {
        const Shape *s = &hid[k]->type.shape;
        if (s->ndim != xs->ndim) {
            error_at(c, hid[k]->loc, "%s: Expected hidden%s to be %dD, like the input, but got %dD", call->op->name,
                     k ? "[1]" : lstm ? "[0]" : "", xs->ndim, s->ndim);
            return false;
        }
        if (batched && !dims_match(s->dims[0], xs->dims[0])) {
            error_at(c, hid[k]->loc, "Input batch size %s doesn't match hidden%d batch size %s", dim_str(c, xs->dims[0]),
                     k, dim_str(c, s->dims[0]));
            return false;
        }
        if (!dims_match(s->dims[s->ndim - 1], hidden)) {
            error_at(c, hid[k]->loc, "hidden%d has inconsistent hidden_size: got %s, expected %s", k,
                     dim_str(c, s->dims[s->ndim - 1]), dim_str(c, hidden));
            return false;
        }
    }
    Poly *rows = poly_mul(c, hidden, poly_const(c, g));
    Expr *wts[4] = {wih, whh, bih, bhh};
    for (int k = 0; k < 4; k++) {
        Expr *w = wts[k];
        if (!w)
            continue;
        const Shape *s = &w->type.shape;
        if (!rows || (k < 2 ? !dims_match(s->dims[0], rows) : s->ndim != 1 || !dims_match(s->dims[0], rows))) {
            error_at(c, w->loc, "%s(): %s should have %d*hidden_size = %s %s, but it is %s", call->op->name,
                     k == 0 ? "w_ih" : k == 1 ? "w_hh" : k == 2 ? "b_ih" : "b_hh", g, rows ? dim_str(c, rows) : "?",
                     k < 2 ? "rows" : "elements", type_to_string(c, &w->type));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = *hs;
    if (lstm)
        more_results(c, call, 1, &call->type);
    return true;
}

/* max_unpool2d/3d: input [N, C, spatial] or [C, spatial], indices i64 of
 * the same shape; the output's spatial dims are output_size. */
bool infer_max_unpool(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    bool three = call->op->id == OP_MAX_UNPOOL3D;
    int ns = three ? 3 : 2;
    Expr *x = arg(call, 0), *idx = arg(call, 1);
    const Shape *xs = &x->type.shape;
    if (xs->ndim != ns + 1 && xs->ndim != ns + 2) {
        error_at(c, x->loc, "Input to max_unpooling%dd should be a %dd or %dd Tensor, but got a tensor with %d "
                 "dimensions.", ns, ns + 1, ns + 2, xs->ndim);
        return false;
    }
    if (idx->type.dtype != DT_I64) {
        error_at(c, idx->loc, "elements in indices should be type int64 but got: %s", dtype_name(idx->type.dtype));
        return false;
    }
    if (!shape_equal(&idx->type.shape, xs)) {
        error_at(c, idx->loc, "Expected shape of indices to be same as that of the input tensor (%s) but got indices "
                 "tensor with shape: %s", shape_str(c, xs), shape_str(c, &idx->type.shape));
        return false;
    }
    if (!require_float(c, call, x))
        return false;
    int64_t o;
    if (!int_arg(c, named(call, "output_size"), &o))
        return false;
    if (three) {
        int64_t stride, pad;
        if (!int_arg(c, named(call, "stride"), &stride) || !int_arg(c, named(call, "padding"), &pad))
            return false;
        if (stride <= 0) {
            error_at(c, named(call, "stride")->loc, "strides should be greater than zero, but got stride: %lld",
                     (long long)stride);
            return false;
        }
    }
    if (o <= 0) {
        error_at(c, named(call, "output_size")->loc, "%s(): output_size should be greater than zero, but got %lld",
                 call->op->name, (long long)o);
        return false;
    }
    Shape out = *xs;
    for (int i = out.ndim - ns; i < out.ndim; i++)
        out.dims[i] = poly_const(c, o);
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
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

/* ---- lu_solve, lstsq, matrix_exp, householder_product/orgqr, ormqr,
 * tensorinv, tensorsolve (amprt/more.h) --------------------------------------------- */

static const char *linalg_more_name(OpId id)
{
    switch (id) {
    case OP_LU_SOLVE: return "linalg.lu_solve";
    case OP_LINALG_LSTSQ: return "torch.linalg.lstsq";
    case OP_LINALG_MATRIX_EXP: return "linalg.matrix_exp";
    case OP_ORMQR: return "torch.ormqr";
    case OP_LINALG_TENSORINV: return "linalg.tensorinv";
    case OP_LINALG_TENSORSOLVE: return "linalg.tensorsolve";
    default: return "torch.linalg.householder_product";
    }
}

static bool more_dtype(Ctx *c, Expr *call, Expr *x)
{
    DType t = x->type.dtype;
    if (t == DT_F32 || t == DT_F64 || (dtype_is_float(t) && call->autocast_on && !c->autocast_ran))
        return true;
    error_at(c, x->loc, dtype_is_float(t) ? "%s: Low precision dtypes not supported. Got %s"
                                          : "%s: Expected a floating point or complex tensor as input. Got %s",
             linalg_more_name(call->op->id), dtype_name(t));
    return false;
}

static bool more_same_dtype(Ctx *c, Expr *call, Expr *a, Expr *b, const char *an, const char *bn)
{
    if (a->type.dtype == b->type.dtype || (call->autocast_on && !c->autocast_ran))
        return true;
    error_at(c, call->loc, "%s: Expected %s and %s to have the same dtype, but found %s of type %s and %s of type %s "
             "instead", linalg_more_name(call->op->id), an, bn, an, dtype_name(a->type.dtype), bn,
             dtype_name(b->type.dtype));
    return false;
}

static bool more_matrix(Ctx *c, Expr *call, Expr *x, const char *what, bool square)
{
    const Shape *s = &x->type.shape;
    if (s->ndim < 2) {
        error_at(c, x->loc, "%s: The input tensor %s must have at least 2 dimensions.", linalg_more_name(call->op->id),
                 what);
        return false;
    }
    if (square && !dims_match(s->dims[s->ndim - 2], s->dims[s->ndim - 1])) {
        error_at(c, x->loc, "%s: %s must be batches of square matrices, but they are %s by %s matrices",
                 linalg_more_name(call->op->id), what, dim_str(c, s->dims[s->ndim - 2]), dim_str(c, s->dims[s->ndim - 1]));
        return false;
    }
    return true;
}

/* The product of s's dims [from, to) when all are known; -1 otherwise. */
static int64_t const_numel(const Shape *s, int from, int to)
{
    int64_t n = 1, v;
    for (int i = from; i < to; i++) {
        if (!const_dim(s->dims[i], &v))
            return -1;
        n *= v;
    }
    return n;
}

static bool known_le(const Poly *a, const Poly *b)
{
    int64_t x, y;
    return dims_match(a, b) || (const_dim(a, &x) && const_dim(b, &y) && x <= y);
}

bool infer_linalg_more(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    const char *name = linalg_more_name(id);
    int ntensors = id == OP_LU_SOLVE || id == OP_ORMQR ? 3 : id == OP_LINALG_MATRIX_EXP || id == OP_LINALG_TENSORINV ? 1 : 2;
    for (int i = 0; i < ntensors; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0);
    if (!more_dtype(c, call, x))
        return false;
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    switch (id) {
    case OP_LU_SOLVE: {
        /* torch.lu_solve(b, LU, pivots): b [..., m, k], LU [..., m, m], pivots i32 [..., m] */
        Expr *lu = arg(call, 1), *piv = arg(call, 2);
        if (!more_matrix(c, call, lu, "A", true) || !more_matrix(c, call, x, "B", false))
            return false;
        if (piv->type.dtype != DT_I32) {
            error_at(c, piv->loc, "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
            return false;
        }
        if (!more_same_dtype(c, call, lu, x, "LU", "B"))
            return false;
        const Shape *ls = &lu->type.shape, *ps = &piv->type.shape;
        Poly *m = ls->dims[ls->ndim - 1];
        if (!dims_match(xs->dims[xs->ndim - 2], m)) {
            error_at(c, call->loc, "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (%sx%s and "
                     "%sx%s)", dim_str(c, m), dim_str(c, m), dim_str(c, xs->dims[xs->ndim - 2]),
                     dim_str(c, xs->dims[xs->ndim - 1]));
            return false;
        }
        Shape lb = leading(ls, 2), pb = leading(ps, 1);
        if (ps->ndim < 1 || !dims_match(ps->dims[ps->ndim - 1], m) || !shape_equal(&lb, &pb)) {
            error_at(c, piv->loc, "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                     "pivots with shape %s instead", shape_str(c, ps));
            return false;
        }
        Shape bb = leading(xs, 2), batch;
        if (!broadcast(c, call, &bb, &lb, &batch))
            return false;
        call->type = matrix_type(t, &batch, m, xs->dims[xs->ndim - 1]);
        return true;
    }
    case OP_LINALG_LSTSQ: {
        Expr *b = arg(call, 1);
        if (!more_matrix(c, call, x, "A", false) || !more_same_dtype(c, call, x, b, "A", "B"))
            return false;
        double rcond;
        if (!float_param(c, call, "rcond", 0, &rcond))
            return false;
        const Shape *bs = &b->type.shape;
        Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1];
        bool vector = bs->ndim == xs->ndim - 1;
        if (bs->ndim < 1 || !dims_match(bs->dims[bs->ndim - (vector ? 1 : 2)], m) || (!vector && bs->ndim < 2)) {
            error_at(c, call->loc, "torch.linalg.lstsq: input.size(-2) should match other.size(-%d)", vector ? 1 : 2);
            return false;
        }
        Shape ab = leading(xs, 2), bb = leading(bs, vector ? 1 : 2), batch;
        if (!broadcast(c, call, &ab, &bb, &batch))
            return false;
        call->type = matrix_type(t, &batch, n, vector ? NULL : bs->dims[bs->ndim - 1]);
        return true;
    }
    case OP_LINALG_MATRIX_EXP:
        if (!more_matrix(c, call, x, "A", true))
            return false;
        call->type = x->type;
        return true;
    case OP_LINALG_HOUSEHOLDER_PRODUCT:
    case OP_ORGQR:
    case OP_ORMQR: {
        Expr *tau = arg(call, 1);
        const Shape *ts = &tau->type.shape;
        if (xs->ndim < 2 || ts->ndim < 1) {
            error_at(c, (xs->ndim < 2 ? x : tau)->loc, "%s: %s must have at least %d dimensions.", name,
                     xs->ndim < 2 ? "input" : "tau", xs->ndim < 2 ? 2 : 1);
            return false;
        }
        if (!more_same_dtype(c, call, x, tau, "input", "tau"))
            return false;
        Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1], *k = ts->dims[ts->ndim - 1];
        Shape xb = leading(xs, 2), tb = leading(ts, 1);
        if (!shape_equal(&xb, &tb)) {
            error_at(c, tau->loc, "%s: Expected batch dimensions of tau to be equal to input.shape[:-2], but got %s",
                     name, shape_str(c, &tb));
            return false;
        }
        if (id != OP_ORMQR) {
            if (!known_le(n, m)) {
                error_at(c, x->loc, "%s: input.shape[-2] must be greater than or equal to input.shape[-1]", name);
                return false;
            }
            if (!known_le(k, n)) {
                error_at(c, tau->loc, "%s: input.shape[-1] must be greater than or equal to tau.shape[-1]", name);
                return false;
            }
            call->type = x->type;
            return true;
        }
        Expr *o = arg(call, 2);
        const Shape *os = &o->type.shape;
        bool left, trans;
        if (!bool_param(c, call, "left", true, &left) || !bool_param(c, call, "transpose", false, &trans) ||
            !more_same_dtype(c, call, x, o, "input", "other"))
            return false;
        if (os->ndim != xs->ndim) {
            error_at(c, o->loc, "torch.ormqr: other.dim() must be equal to input.dim()");
            return false;
        }
        Poly *rows = os->dims[os->ndim - (left ? 2 : 1)];
        if (!dims_match(rows, m)) {
            error_at(c, o->loc, "torch.ormqr: other.shape[%d] must be equal to input.shape[-2]", left ? -2 : -1);
            return false;
        }
        if (!known_le(k, n) || !known_le(k, m)) {
            error_at(c, tau->loc, "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-%d]",
                     known_le(k, n) ? 2 : 1);
            return false;
        }
        Shape ob = leading(os, 2);
        if (!shape_equal(&ob, &xb)) {
            error_at(c, o->loc, "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but "
                     "got %s", shape_str(c, &ob));
            return false;
        }
        call->type = o->type;
        return true;
    }
    case OP_LINALG_TENSORINV: {
        int64_t ind;
        if (!int_param(c, call, "ind", 2, &ind))
            return false;
        if (ind <= 0) {
            error_at(c, named(call, "ind") ? named(call, "ind")->loc : call->loc, "Expected a strictly positive "
                     "integer for 'ind', but got %lld", (long long)ind);
            return false;
        }
        if (ind > xs->ndim) {
            error_at(c, call->loc, "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                     "prod(self.shape[:ind]), but ind %lld exceeds the %d dimensions", (long long)ind, xs->ndim);
            return false;
        }
        int64_t front = const_numel(xs, 0, (int)ind), back = const_numel(xs, (int)ind, xs->ndim);
        if (front < 0 || back < 0) {
            error_at(c, x->loc, "linalg_tensorinv(): the dims of %s must be known at compile time",
                     shape_str(c, xs));
            return false;
        }
        if (front != back) {
            error_at(c, call->loc, "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                     "prod(self.shape[:ind]), but got %lld != %lld", (long long)back, (long long)front);
            return false;
        }
        Shape out = {0};
        for (int i = (int)ind; i < xs->ndim; i++)
            out.dims[out.ndim++] = xs->dims[i];
        for (int i = 0; i < ind; i++)
            out.dims[out.ndim++] = xs->dims[i];
        call->type = (Type){.dtype = t, .shape = out};
        return true;
    }
    case OP_LINALG_TENSORSOLVE: {
        Expr *b = arg(call, 1);
        const Shape *bs = &b->type.shape;
        if (!more_same_dtype(c, call, x, b, "A", "B"))
            return false;
        if (bs->ndim > xs->ndim) {
            error_at(c, call->loc, "linalg.tensorsolve: B has more dimensions (%d) than A (%d)", bs->ndim, xs->ndim);
            return false;
        }
        int64_t front = const_numel(xs, 0, bs->ndim), back = const_numel(xs, bs->ndim, xs->ndim);
        if (front < 0 || back < 0) {
            error_at(c, x->loc, "linalg_tensorsolve(): the dims of %s must be known at compile time", shape_str(c, xs));
            return false;
        }
        if (front != back) {
            error_at(c, call->loc, "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                     "prod(self.shape[:other.ndim]), but got %lld != %lld", (long long)back, (long long)front);
            return false;
        }
        Shape lead = {0};
        for (int i = 0; i < bs->ndim; i++)
            lead.dims[lead.ndim++] = xs->dims[i];
        if (!shape_equal(&lead, bs)) {
            error_at(c, call->loc, "linalg.tensorsolve: Incompatible shapes of A and B for the equation AX = B (%s and "
                     "%s)", shape_str(c, xs), shape_str(c, bs));
            return false;
        }
        Shape out = {0};
        for (int i = bs->ndim; i < xs->ndim; i++)
            out.dims[out.ndim++] = xs->dims[i];
        call->type = (Type){.dtype = t, .shape = out};
        return true;
    }
    default:
        ICE("infer_linalg_more on %s", call->op->name);
    }
}

/* ---- ctc_loss (amprt/more.h) ------------------------------------------------------ */

bool infer_ctc_loss(Ctx *c, Expr *call)
{
    for (int i = 0; i < 4; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *lp = arg(call, 0), *tg = arg(call, 1), *il = arg(call, 2), *tl = arg(call, 3);
    DType t = lp->type.dtype;
    if (t != DT_F32 && t != DT_F64 && !(dtype_is_float(t) && call->autocast_on && !c->autocast_ran)) {
        error_at(c, lp->loc, "\"ctc_loss_cpu\" not implemented for '%s': log_probs must be f32 or f64",
                 dtype_name(t));
        return false;
    }
    Expr *ints[3] = {tg, il, tl};
    static const char *const what[3] = {"targets", "input_lengths", "target_lengths"};
    for (int i = 0; i < 3; i++)
        if (ints[i]->type.dtype != DT_I64) {
            error_at(c, ints[i]->loc, "ctc_loss(): %s must be an i64 tensor, but it is %s", what[i],
                     type_to_string(c, &ints[i]->type));
            return false;
        }
    const Shape *ls = &lp->type.shape, *ts = &tg->type.shape;
    if (ls->ndim != 2 && ls->ndim != 3) {
        error_at(c, lp->loc, "ctc_loss(): log_probs must be [T, N, C] or [T, C], but it is %s",
                 type_to_string(c, &lp->type));
        return false;
    }
    bool batched = ls->ndim == 3;
    if (ts->ndim != (batched ? 2 : 1) || (batched && !dims_match(ts->dims[0], ls->dims[1]))) {
        error_at(c, tg->loc, batched ? "Expected tensor to have size %s at dimension 0, but got size %s for argument "
                                       "#2 'targets' (while checking arguments for ctc_loss_cpu)"
                                     : "ctc_loss(): unbatched log_probs [T, C] take targets [S], but got %s%s",
                 batched ? dim_str(c, ls->dims[1]) : "", batched ? (ts->ndim ? dim_str(c, ts->dims[0]) : "?")
                                                              : shape_str(c, ts));
        return false;
    }
    for (int i = 1; i < 3; i++) {
        const Shape *s = &ints[i]->type.shape;
        int64_t one;
        bool ok = batched ? s->ndim == 1 && dims_match(s->dims[0], ls->dims[1])
                          : s->ndim == 0 || (s->ndim == 1 && const_dim(s->dims[0], &one) && one == 1);
        if (!ok) {
            error_at(c, ints[i]->loc, "%s must be of size batch_size", what[i]);
            return false;
        }
    }
    int64_t blank, C;
    if (!int_param(c, call, "blank", 0, &blank) || !reduction_param(c, call, false))
        return false;
    bool zi;
    if (!bool_param(c, call, "zero_infinity", false, &zi))
        return false;
    if (const_dim(ls->dims[ls->ndim - 1], &C) && (blank < 0 || blank >= C)) {
        error_at(c, named(call, "blank")->loc, "blank must be in label range");
        return false;
    }
    Shape none = {0};
    if (batched)
        none.dims[none.ndim++] = ls->dims[1];
    loss_result(call, t, &none);
    return true;
}
