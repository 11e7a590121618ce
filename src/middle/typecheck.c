/* typecheck.c: shapes and dtypes, as PyTorch infers them.
 *
 * Requires: resolved AST.  Produces: a Type on every tensor expression and
 * symbol; dims as polynomials over the model's symbolic dims; errors where
 * PyTorch would raise at run time (mismatched shapes, a float op on
 * integers, mismatched dtypes in linear/matmul).
 *
 * This file holds the pass: the walk over statements, infer_call and its
 * table of rules (the infer column of ops.def), declared dims and
 * literals, PyTorch's promotion and broadcasting, and the reading of a
 * typechecked call's arguments for the code generator.  The rules
 * themselves live in one file per op family, types_<family>.c, and share
 * types.h; autocast.c calls them again, through infer_call, after it
 * wraps arguments in casts, so they look only at their arguments' current
 * types.  Literals are read with GMP: integers exactly (a dim that does
 * not fit int64 is an error, not a wrap-around).
 *
 * Subscripts, x.size(d), t and the statements giving several names
 * (chunk, split, unbind, topk, kthvalue) are rewritten here into the op
 * calls and statements they mean (types_index.c), and an operator of
 * integers that only became known here (x.size(1) // 2) is folded.
 */
#include "call_args.h"
#include "types.h"

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
bool int_arg(Ctx *c, Expr *e, int64_t *out)
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
    if (e->kind == E_NAME && e->sym && e->sym->kind == SYM_DIM)
        error_at(c, e->loc, "'%s' is a dimension of the model: only sizes (expand's, the constructors') take one; "
                 "this argument takes an integer literal", e->text);
    else if (e->kind == E_LIST)
        error_at(c, e->loc, "expected one integer here, not a list");
    else
        error_at(c, e->loc, "expected an integer literal here");
    return false;
}

bool size_arg(Ctx *c, Expr *e, Poly **out)
{
    if (e->kind == E_NAME && e->sym && e->sym->kind == SYM_DIM) {
        *out = poly_sym(c, e->sym->index);
        return true;
    }
    int64_t v;
    if (!int_arg(c, e, &v))
        return false;
    *out = poly_const(c, v);
    return true;
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
        if (e->is_operator && e->list->len == 1 && strcmp(e->callee, "neg") == 0) {
            Poly *a = dim_expr(c, VEC_AT(e->list, 0)); /* 2 - 3, folded by expand.c */
            return a ? poly_sub(c, poly_const(c, 0), a) : NULL;
        }
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

/* ---- promotion and broadcasting ------------------------------------- */

/* PyTorch's result_type for a tensor and a Python number: the number only
 * raises the category (int tensor * 2.5 is the default float, f32), never
 * the width (f16 tensor * 2.5 stays f16). */
DType promote_with_scalar(DType t, bool scalar_is_float)
{
    if (scalar_is_float && dtype_category(t) < CAT_FLOAT) /* a complex tensor stays complex */
        return DT_F32;
    if (t == DT_BOOL)
        return DT_I64;
    return t;
}

/* Broadcast two shapes, numpy style; NULL message on success. */
bool broadcast(Ctx *c, Expr *call, const Shape *a, const Shape *b, Shape *out)
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
DType promote_tensors(const Type *a, const Type *b)
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

/* ---- the walk --------------------------------------------------------- */

static bool check_expr(Ctx *c, Expr *e);

/* An operator whose operands are integers once x.size(d) and x.shape[d]
 * are known (x.size(1) // 2) is folded into one; expand.c already folded
 * those of literals.  Returns 1 when folded, 0 on an error, -1 when the
 * operands are not all integers (the call is an op call). */
static bool has_dim_of(const Expr *e)
{
    if (e->kind == E_DIM_OF)
        return true;
    if (e->kind != E_CALL || !e->is_operator)
        return false;
    if (!e->op)
        return true; /* // or % */
    for (int i = 0; i < e->list->len; i++)
        if (has_dim_of(VEC_AT(e->list, i)))
            return true;
    return false;
}

static int fold_operator(Ctx *c, Expr *e)
{
    int64_t v[2] = {0, 0};
    bool ints = true, any_dim = false;
    for (int i = 0; i < e->list->len && i < 2; i++) {
        Expr *a = VEC_AT(e->list, i);
        any_dim |= has_dim_of(a);
    }
    if (e->op && !any_dim)
        return -1; /* checked once, as an op call: checking twice would be exponential in the nesting */
    for (int i = 0; i < e->list->len && i < 2; i++) {
        Expr *a = VEC_AT(e->list, i);
        if (!check_expr(c, a))
            return 0;
        if (is_tensor(a) || !(a->kind == E_NUMBER || (a->kind == E_CALL && a->op && a->op->id == OP_NEG)))
            ints = false;
    }
    if (!e->op && !ints) {
        error_at(c, e->name_loc, "'%s' is supported on compile-time integers only, not on tensors",
                 strcmp(e->callee, "floor_divide") == 0 ? "//" : "%");
        return 0;
    }
    if (!ints)
        return -1;
    for (int i = 0; i < e->list->len && i < 2; i++) {
        Expr *a = VEC_AT(e->list, i);
        if (a->kind == E_NUMBER && a->is_float) {
            error_at(c, a->loc, "this arithmetic needs integers; %s is not one", a->text);
            return 0;
        }
        if (!int_arg(c, a, &v[i]))
            return 0;
    }
    int64_t r;
    if (!int_operator(c, e, v[0], v[1], &r))
        return 0;
    set_int_literal(c, e, r);
    return 1;
}

static bool check_expr(Ctx *c, Expr *e)
{
    switch (e->kind) {
    case E_NAME:
        if (!e->sym)
            return false;
        if (e->sym->kind == SYM_DIM) { /* a size argument (size_arg) */
            e->type.dtype = DT_NONE;
            return true;
        }
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
        if (e->operand->type.dtype == DT_NONE) { /* 70000.half(), B.float() */
            error_at(c, e->loc, "this cast to %s needs a tensor, but its operand is a number or a size, which has no "
                     "dtype to convert (a number takes the dtype of the tensor it meets)", dtype_name(e->dtype));
            return false;
        }
        e->type = e->operand->type;
        e->type.dtype = e->dtype;
        return true;
    case E_CALL: {
        if (e->is_operator) {
            int folded = fold_operator(c, e);
            if (folded >= 0)
                return folded;
        }
        if (!e->op)
            return false;
        bool ok = true;
        for (int i = 0; i < e->op->nparams; i++)
            if (e->bound[i] && !check_expr(c, e->bound[i]))
                ok = false;
        return ok && infer_call(c, e);
    }
    case E_LIST:
        /* an int[] argument's entries (sum's dims, full's shape, split's
         * sections), read by the op's type rule; their arithmetic folds */
        e->type.dtype = DT_NONE;
        for (int i = 0; i < e->list->len; i++)
            if (!check_expr(c, VEC_AT(e->list, i)))
                return false;
        return true;
    case E_SUBSCRIPT:
        if (!check_expr(c, e->operand))
            return false;
        for (int i = 0; i < e->list->len; i++) {
            Expr *sub = VEC_AT(e->list, i);
            if (sub->kind != E_SLICE && !(sub->kind == E_NAME && !sub->sym) && !check_expr(c, sub))
                return false;
        }
        return subscript(c, e);
    case E_DIM_OF:
        if (!check_expr(c, e->operand))
            return false;
        return dim_of(c, e);
    case E_SLICE:
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
#define OP(ID, name, sig, infer, emit, grad, flags) [OP_##ID] = infer,
#include "ops.def"
#undef OP
};

bool infer_call(Ctx *c, Expr *call)
{
    /* complex operands reach only the ops of types_complex.c */
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
        c->instance = st->instance;
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
            if (hoist_composite(c, stmts, i)) {
                i--; /* the composite's own statement, checked next */
                break;
            }
            if (composite_expands(c, st->value)) {
                /* written as the ops PyTorch builds it from (types_composite.c) */
                bool ok = true;
                for (int k = 0; k < st->value->op->nparams; k++)
                    if (arg(st->value, k) && !check_expr(c, arg(st->value, k)))
                        ok = false;
                if (ok && composite_assign(c, stmts, i))
                    i--;
                break;
            }
            if (st->value->kind == E_CALL && st->value->op &&
                (st->value->op->id == OP_CHUNK || st->value->op->id == OP_SPLIT || st->value->op->id == OP_UNBIND ||
                 st->value->op->id == OP_TOPK || st->value->op->id == OP_KTHVALUE ||
                 st->value->op->id == OP_VAR_MEAN || st->value->op->id == OP_STD_MEAN ||
                 ((st->value->op->id == OP_MAX || st->value->op->id == OP_MIN) && named(st->value, "dim")) ||
                 is_rnn_layer(st->value->op->id))) {
                /* replaced by one statement per name, checked next; a
                 * recurrent layer reads every tensor operand */
                bool ok = true;
                int n = is_rnn_layer(st->value->op->id) ? st->value->op->nparams : 1;
                for (int k = 0; k < n; k++)
                    if (arg(st->value, k) && !check_expr(c, arg(st->value, k)))
                        ok = false;
                if (ok && split_assign(c, stmts, i))
                    i--;
                break;
            }
            if (!check_expr(c, st->value))
                break;
            if (st->value->type.dtype == DT_NONE && st->value->kind == E_CALL && st->value->is_operator) {
                error_at(c, st->value->loc, "this is the number -%s, not a tensor; only tensors can be assigned to names",
                         ((Expr *)VEC_AT(st->value->list, 0))->text);
                break;
            }
            if (st->value->type.dtype == DT_NONE && st->value->kind == E_NUMBER) {
                error_at(c, st->value->loc, "this is the number %s, not a tensor; only tensors can be assigned to names",
                         st->value->text);
                break;
            }
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
            if (hoist_composite(c, stmts, i)) {
                i--;
                break;
            }
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
    c->instance = NULL;
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

