/* autocast.c: the dtype every op runs in, per target, and why.
 *
 * Requires: a typechecked AST and the target's policy (policy.c).
 * Produces: every call has a Decision (its compute dtype and the rule that
 * chose it); every argument whose dtype differs from what its kernel
 * computes in is wrapped in an explicit E_CAST carrying its reason, so no
 * later pass sees an implicit conversion.  Types downstream are
 * recomputed, since an autocast op changes what unlisted ops after it see.
 *
 * The rules are PyTorch's (docs/policies.md): only out-of-place calls
 * inside an enabled region are eligible; an explicit dtype= wins; only
 * floating tensors other than f64 are ever cast; promote picks the widest
 * eligible type and rejects f16 mixed with bf16 and f64, as PyTorch's
 * prioritize does.  The same parameter cast for several ops becomes one
 * cast later (optimize.c, the weight cache).
 */
#include "ampc.h"

#include <string.h>

static bool eligible(const Expr *a)
{
    return a && dtype_is_float(a->type.dtype) && a->type.dtype != DT_F64;
}

static void cast_arg(Ctx *c, Expr *call, int i, DType to, const char *reason)
{
    Expr *a = call->bound[i];
    if (a->type.dtype == to)
        return;
    call->bound[i] = new_cast(c, a, to, reason);
    type_fits(c, &call->bound[i]->type, a->loc);
}

static bool has_explicit_dtype(const Expr *call)
{
    int k = op_param_index(call->op, "dtype");
    return k >= 0 && call->bound[k];
}

static const PolicyRow *find_row(Ctx *c, const Expr *call)
{
    const PolicyRow *row = NULL;
    if (call->is_operator && call->op->id == OP_MATMUL)
        row = policy_find(c->policy, "__matmul__"); /* a @ b */
    return row ? row : policy_find(c->policy, call->op->name);
}

/* Apply the policy row to the call's arguments; returns the rule text. */
static const char *apply_policy(Ctx *c, Expr *call, const PolicyRow *row, DType low)
{
    const OpInfo *op = call->op;
    const char *target = c->policy->target;
    const char *rule = arena_printf(c->arena, "%s on %s (%s)", policy_class_name(row->cls), target, row->source);
    const char *why = arena_printf(c->arena, "for %s: %s", op->name, rule);
    switch (row->cls) {
    case POL_LOWER:
        for (int i = 0; i < op->nparams; i++)
            if (eligible(call->bound[i]))
                cast_arg(c, call, i, low, why);
        break;
    case POL_FP32:
        for (int i = 0; i < op->nparams; i++)
            if (eligible(call->bound[i]))
                cast_arg(c, call, i, DT_F32, why);
        break;
    case POL_FP32_SET_OPT_DTYPE:
    case POL_FP32_APPEND_DTYPE:
        /* run as if dtype=f32 had been passed: the input is converted first */
        if (eligible(call->bound[0]))
            cast_arg(c, call, 0, DT_F32, why);
        break;
    case POL_PROMOTE: {
        DType widest = DT_NONE;
        for (int i = 0; i < op->nparams; i++) {
            Expr *a = call->bound[i];
            if (!a || !dtype_is_float(a->type.dtype))
                continue;
            DType t = a->type.dtype;
            if (t == DT_F64 || (widest == DT_BF16 && t == DT_F16) || (widest == DT_F16 && t == DT_BF16)) {
                error_at(c, call->loc, "%s() under autocast mixes %s with %s; PyTorch rejects this "
                         "(\"Unexpected floating ScalarType in at::autocast::prioritize\"): cast the operands to one dtype",
                         op->name, widest == DT_NONE ? "another type" : dtype_name(widest), dtype_name(t));
                return rule;
            }
            if (widest == DT_NONE || t == DT_F32)
                widest = t;
        }
        for (int i = 0; i < op->nparams; i++)
            if (eligible(call->bound[i]))
                cast_arg(c, call, i, widest, why);
        break;
    }
    case POL_BANNED:
        error_at(c, call->name_loc, "%s() is unsafe to autocast on %s: many models apply a sigmoid right before it; "
                 "combine the two with binary_cross_entropy_with_logits, which is safe to autocast (%s)",
                 op->name, target, row->source);
        break;
    case POL_NONE:
        ICE("policy row without a class");
    }
    return rule;
}

/* After the policy, the kernel still needs every tensor operand in its
 * compute dtype (PyTorch converts inside the op; we make it explicit). */
static void promotion_casts(Ctx *c, Expr *call)
{
    const OpInfo *op = call->op;
    DType t = call->type.dtype;
    const char *why = NULL;
    for (int i = 0; i < op->nparams; i++) {
        Expr *a = call->bound[i];
        if (!a || a->type.dtype == DT_NONE || a->type.dtype == t)
            continue;
        if (op->id == OP_NLL_LOSS && i == 1)
            continue; /* class indices stay i64 */
        if (!why) {
            bool explicit_dtype = has_explicit_dtype(call);
            why = explicit_dtype ? arena_printf(c->arena, "for %s: explicit dtype=%s", op->name, dtype_name(t))
                                 : arena_printf(c->arena, "type promotion: %s computes in %s", op->name, dtype_name(t));
        }
        cast_arg(c, call, i, t, why);
    }
}

static void autocast_expr(Ctx *c, Expr *e);

static void decide(Ctx *c, Expr *call)
{
    const OpInfo *op = call->op;
    for (int i = 0; i < op->nparams; i++)
        if (call->bound[i])
            autocast_expr(c, call->bound[i]);
    if (call->type.dtype == DT_NONE && !infer_call(c, call))
        return; /* a literal like -2.5 */
    if (call->type.dtype == DT_NONE)
        return;

    const char *rule;
    const PolicyRow *row = find_row(c, call);
    DType low = call->autocast_low != DT_NONE ? call->autocast_low : c->policy->low;
    if (!call->autocast_on)
        rule = "autocast is off here: follows its inputs";
    else if (call->is_inplace)
        rule = "not eligible: in-place variant";
    else if (has_explicit_dtype(call))
        rule = "not eligible: explicit dtype=";
    else if (!row)
        rule = arena_printf(c->arena, "not in any %s list: follows its inputs", c->policy->target);
    else
        rule = apply_policy(c, call, row, low);

    if (!infer_call(c, call))
        return;
    promotion_casts(c, call);
    call->decision.compute = call->type.dtype;
    call->decision.rule = rule;
}

static void autocast_expr(Ctx *c, Expr *e)
{
    switch (e->kind) {
    case E_NAME:
        e->type = e->sym->type;
        return;
    case E_CALL:
        decide(c, e);
        return;
    case E_CAST:
        autocast_expr(c, e->operand);
        return;
    default:
        return;
    }
}

static void check_region(Ctx *c, Stmt *st)
{
    for (int i = 0; st->options && i < st->options->len; i++) {
        Expr *o = VEC_AT(st->options, i);
        if (o->kind == E_KWARG && strcmp(o->text, "dtype") == 0 && o->operand->kind == E_DTYPE &&
            !(c->policy->allowed & (1u << o->operand->dtype)))
            error_at(c, o->operand->loc, "autocast on %s supports dtype=%s only", c->policy->target,
                     dtype_name(c->policy->low));
    }
}

static void autocast_stmts(Ctx *c, Vec *stmts)
{
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        switch (st->kind) {
        case S_ASSIGN:
            autocast_expr(c, st->value);
            ((Expr *)VEC_AT(st->targets, 0))->sym->type = st->value->type;
            break;
        case S_OUTPUT:
            for (int k = 0; k < st->exprs->len; k++)
                autocast_expr(c, VEC_AT(st->exprs, k));
            break;
        case S_MINIMIZE:
            autocast_expr(c, st->value);
            break;
        case S_AUTOCAST:
            check_region(c, st);
            autocast_stmts(c, st->body);
            break;
        case S_AUTOCAST_SWITCH:
            check_region(c, st);
            break;
        case S_INPUT:
        case S_PARAM:
        case S_BUFFER:
        case S_EXPR:
        case S_MODULE:
        case S_RETURN:
        case S_FOR:
            break;
        }
    }
}

bool autocast(Ctx *c)
{
    c->autocast_ran = true;
    autocast_stmts(c, c->model->body);
    return c->nerrors == 0;
}
