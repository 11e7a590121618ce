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
 * eligible type from the region's low dtype and rejects another half type,
 * ignoring f64, as PyTorch's prioritize does.  The same parameter cast
 * for several ops becomes one cast later (optimize.c, the weight cache).
 *
 * Before deciding, the command line's overrides are applied to the policy
 * (--autocast-dtype, --autocast-op); after it, --force-dtype maps every
 * f32 and f64 type to the forced dtype.  docs/autocast.md tells the rules
 * in words; --explain (explain.c) prints each Decision.
 */
#include "middle.h"

#include <string.h>

/* Complex tensors are never eligible: PyTorch's autocast casts a tensor
 * only when is_floating_point() holds (is_eligible in
 * aten/src/ATen/autocast_mode.h), and that is false for complex64 and
 * complex128, which dtype_is_float leaves out (dtype.c). */
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

/* Ops the language names as torch.nn.functional does, whose autocast
 * registration (and so their policy row) uses another name: the aten
 * name, or the family name the TPU list gives (reflection_pad covers the
 * 1d, 2d and 3d ops). */
static const struct {
    const char *op, *aten;
} aten_names[] = {
    {"cross_entropy", "cross_entropy_loss"},
    {"reflection_pad1d", "reflection_pad"},
    {"reflection_pad2d", "reflection_pad"},
    {"replication_pad1d", "replication_pad"},
    {"replication_pad2d", "replication_pad"},
    {"replication_pad3d", "replication_pad"},
};

const PolicyRow *policy_row_for(Ctx *c, const Expr *call)
{
    const PolicyRow *row = NULL;
    if (call->layer) /* a cell of lstm(): autocast decides for the whole layer, as PyTorch does */
        return policy_find(c->policy, call->layer->name);
    if (call->is_operator && call->op->id == OP_MATMUL)
        row = policy_find(c->policy, "__matmul__"); /* a @ b */
    if (!row)
        row = policy_find(c->policy, call->op->name);
    for (size_t i = 0; !row && i < sizeof aten_names / sizeof aten_names[0]; i++)
        if (strcmp(call->op->name, aten_names[i].op) == 0)
            row = policy_find(c->policy, aten_names[i].aten);
    return row;
}

/* Apply the policy row to the call's arguments; returns the rule text.
 * `via` says how the row reaches an unlisted composite op (below). */
static const char *apply_policy(Ctx *c, Expr *call, const PolicyRow *row, DType low, const char *via)
{
    const OpInfo *op = call->op;
    const char *target = c->policy->target;
    if (row->low != DT_NONE)
        low = row->low; /* --autocast-op NAME=bf16|f16 names the dtype itself */
    const char *rule = arena_printf(c->arena, "%s%s on %s (%s)", policy_class_name(row->cls),
                                    row->low != DT_NONE ? arena_printf(c->arena, " (%s)", dtype_name(low)) : "",
                                    target, row->source);
    if (via)
        rule = arena_printf(c->arena, "not in any %s list, but %s %s", target, via, rule);
    const char *why = arena_printf(c->arena, "for %s: %s", call->layer ? call->layer->name : op->name, rule);
    int neligible = 0;
    for (int i = 0; i < op->nparams; i++)
        neligible += eligible(call->bound[i]);
    if (neligible == 0 && row->cls != POL_BANNED)
        rule = arena_printf(c->arena, "%s, but no argument is eligible (f64, complex, integer and bool tensors are "
                            "never cast): follows its inputs", rule);
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
        /* at::autocast::prioritize, argument by argument from the region's
         * low dtype: f32 wins over it, f64 is ignored (and left uncast),
         * and any other half type is an error, unless an f32 came first */
        DType widest = low;
        bool from_operand = false;
        for (int i = 0; i < op->nparams; i++) {
            Expr *a = call->bound[i];
            if (!a || !dtype_is_float(a->type.dtype) || a->type.dtype == DT_F64)
                continue;
            DType t = a->type.dtype;
            if (widest == DT_F32 || t == DT_F32) {
                widest = DT_F32;
            } else if (t != widest) {
                error_at(c, call->loc, "%s() under autocast mixes %s%s with %s; PyTorch rejects this "
                         "(\"Unexpected floating ScalarType in at::autocast::prioritize\"): cast the operands to one dtype",
                         op->name, from_operand ? "" : "the autocast dtype ", dtype_name(widest), dtype_name(t));
                return rule;
            }
            from_operand = true;
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
    if (t == DT_BOOL)
        return; /* a comparison's operands are cast to the dtype it compares in by its type rule */
    if (op->flags & OPF_INDEX_RESULT)
        return; /* argmax, all: the input is read in its own dtype */
    for (int i = 0; i < op->nparams; i++) {
        Expr *a = call->bound[i];
        /* t itself, except for the complex ops, whose real and complex
         * operands each take t's precision (types_complex.c) */
        DType want = a ? complex_operand_dtype(call, i, t) : t;
        if (!a || a->type.dtype == DT_NONE || a->type.dtype == want)
            continue;
        if (op_index_arg(op, i) && !dtype_is_float(a->type.dtype))
            continue; /* indices and conditions keep their dtype */
        if ((op->flags & OPF_MIXED_PARAMS) && i > 0 && a->type.dtype == DT_F32 && (t == DT_BF16 || t == DT_F16))
            continue; /* f32 parameters of a half input: PyTorch's mixed-type kernels */
        if (!why) {
            bool explicit_dtype = has_explicit_dtype(call);
            why = explicit_dtype ? arena_printf(c->arena, "for %s: explicit dtype=%s", op->name, dtype_name(t))
                                 : arena_printf(c->arena, "type promotion: %s computes in %s", op->name, dtype_name(t));
        }
        cast_arg(c, call, i, want, why);
    }
}

/* Ops PyTorch builds from other ops (CompositeImplicitAutograd): when the
 * composite itself has no row, the autocast dispatch key still sees the
 * ops it is made of, so the one that decides its dtype decides the whole.
 * cross_entropy calls log_softmax with the input's own dtype (so that one
 * is not autocast) and then nll_loss; einsum contracts with bmm;
 * tensordot, linalg_multi_dot and chain_matmul multiply with mm; the
 * rnn_tanh/relu cells take tanh or relu of two linears' sum (so their result
 * is in linear's dtype, as torch 1.13's CPU autocast gives);
 * F.interpolate runs the upsample op of its mode.  ampc
 * keeps the composite as one op and applies the inner op's row to it:
 * exact for the result's dtype, and for cross_entropy on gpu one step more
 * precise than PyTorch, whose log_softmax stays in the input's dtype.
 * A step of an rnn_tanh/relu layer on no list is such a cell too.
 * gru_cell, lstm_cell and bilinear, whose inner ops' results PyTorch mixes
 * with other operands in their own dtype, are written as those ops by
 * typecheck instead (types_composite.c), each decided here as "part of"
 * the composite. */
static const struct {
    const char *op, *inner, *via;
} composites[] = {
    {"cross_entropy", "nll_loss", "PyTorch builds it from log_softmax (given the input's dtype, so not autocast) "
                                  "and nll_loss, which sets its dtype:"},
    {"cross_entropy", "sum", "with class probabilities PyTorch builds it from log_softmax (given the input's "
                             "dtype, so not autocast), mul and sum, which sets its dtype:"},
    {"einsum", "bmm", "PyTorch contracts its operands with bmm:"},
    {"tensordot", "mm", "PyTorch contracts its operands with mm:"},
    {"linalg_multi_dot", "mm", "PyTorch multiplies the chain with mm:"},
    {"chain_matmul", "mm", "PyTorch multiplies the chain with mm:"},
    {"rnn_tanh_cell", "linear", "PyTorch takes tanh of the sum of two linears (input, hx), in linear's dtype:"},
    {"rnn_relu_cell", "linear", "PyTorch takes relu of the sum of two linears (input, hx), in linear's dtype:"},
    /* F.interpolate: the upsample op its mode and rank choose */
    {"interpolate", "upsample_nearest1d", "F.interpolate runs upsample_nearest1d:"},
    {"interpolate", "upsample_nearest2d", "F.interpolate runs upsample_nearest2d:"},
    {"interpolate", "upsample_nearest3d", "F.interpolate runs upsample_nearest3d:"},
    {"interpolate", "upsample_linear1d", "F.interpolate runs upsample_linear1d:"},
    {"interpolate", "upsample_bilinear2d", "F.interpolate runs upsample_bilinear2d:"},
    {"interpolate", "upsample_bicubic2d", "F.interpolate runs upsample_bicubic2d:"},
    {"interpolate", "upsample_trilinear3d", "F.interpolate runs upsample_trilinear3d:"},
};

/* The upsample op interpolate's mode and input rank choose. */
static const char *interpolate_kernel(Ctx *c, const Expr *call)
{
    int k = op_param_index(call->op, "mode");
    const Expr *m = call->bound[k];
    const char *mode = m && m->kind == E_STRING ? m->text : "nearest";
    int ns = call->bound[0]->type.shape.ndim - 2;
    if (strcmp(mode, "nearest") == 0)
        return arena_printf(c->arena, "upsample_nearest%dd", ns);
    if (strcmp(mode, "linear") == 0)
        return "upsample_linear1d";
    if (strcmp(mode, "bilinear") == 0)
        return "upsample_bilinear2d";
    return strcmp(mode, "bicubic") == 0 ? "upsample_bicubic2d" : "upsample_trilinear3d";
}

/* einsum uses bmm only to contract a label that two operands share and the
 * output drops (sumproduct_pair); a permutation or an outer product does not. */
static bool einsum_contracts(const char *eq)
{
    const char *arrow = strstr(eq, "->");
    int terms[52] = {0};
    int term = 0;
    bool seen[52] = {0};
    for (const char *p = eq; *p && p != arrow; p++) {
        if (*p == ',') {
            term++;
            memset(seen, 0, sizeof seen);
            continue;
        }
        int l = *p >= 'A' && *p <= 'Z' ? *p - 'A' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 26 : -1;
        if (l >= 0 && !seen[l]) {
            seen[l] = true;
            terms[l]++;
        }
    }
    for (int l = 0; l < 52; l++) {
        char ch = (char)(l < 26 ? 'A' + l : 'a' + l - 26);
        bool kept = arrow ? strchr(arrow, ch) != NULL : terms[l] == 1;
        if (terms[l] >= 2 && !kept)
            return true;
    }
    (void)term;
    return false;
}

static const PolicyRow *composite_row(Ctx *c, const Expr *call, const char **via)
{
    for (size_t i = 0; i < sizeof composites / sizeof composites[0]; i++) {
        if (strcmp(call->op->name, composites[i].op) != 0)
            continue;
        if (call->op->id == OP_EINSUM && !einsum_contracts(call->bound[0]->text))
            return NULL;
        if (call->op->id == OP_INTERPOLATE && strcmp(composites[i].inner, interpolate_kernel(c, call)) != 0)
            continue;
        bool probabilities = call->op->id == OP_CROSS_ENTROPY && dtype_is_float(call->bound[1]->type.dtype);
        if (call->op->id == OP_CROSS_ENTROPY && probabilities != (strcmp(composites[i].inner, "sum") == 0))
            continue;
        const PolicyRow *row = policy_find(c->policy, composites[i].inner);
        if (!row || (row->cls != POL_LOWER && row->cls != POL_FP32 && row->cls != POL_FP32_SET_OPT_DTYPE))
            return NULL;
        *via = composites[i].via;
        return row;
    }
    return NULL;
}

static void autocast_expr(Ctx *c, Expr *e);

/* A constructor's (zeros(3), arange(5)): autocast has nothing to follow. */
static bool has_tensor_operand(const Expr *call)
{
    for (int i = 0; i < call->op->nparams; i++)
        if (call->bound[i] && call->bound[i]->type.dtype != DT_NONE)
            return true;
    return false;
}

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
    const PolicyRow *row = policy_row_for(c, call), *inner;
    const char *via = NULL;
    DType low = call->autocast_low != DT_NONE ? call->autocast_low : c->policy->low;
    if (!call->autocast_on)
        rule = "autocast is off here: follows its inputs";
    else if (call->is_inplace)
        rule = "not eligible: in-place variant";
    else if (call->out_arg)
        rule = "not eligible: out= given";
    else if (has_explicit_dtype(call))
        rule = "not eligible: explicit dtype=";
    else if (!row && (inner = composite_row(c, call, &via))) {
        rule = apply_policy(c, call, inner, low, via);
        call->decision.row = inner;
    }
    else if (!row && !has_tensor_operand(call))
        rule = arena_printf(c->arena, "not in any %s list: no tensor operand, PyTorch's default dtype",
                            c->policy->target);
    else if (!row)
        rule = arena_printf(c->arena, "not in any %s list: follows its inputs", c->policy->target);
    else if (row->cls == POL_NONE)
        rule = arena_printf(c->arena, "taken off the %s lists (%s): follows its inputs", c->policy->target,
                            row->source);
    else {
        rule = apply_policy(c, call, row, low, NULL);
        call->decision.row = row;
    }

    if (call->layer && row)
        rule = arena_printf(c->arena, "a step of %s, which autocast decides as a whole: %s", call->layer->name, rule);
    else if (call->layer) /* on no list: PyTorch runs its cells, whose inner ops autocast sees */
        rule = arena_printf(c->arena, "a step of %s, on no %s list, run as its cells: %s", call->layer->name,
                            c->policy->target, rule);
    if (call->part_of)
        rule = arena_printf(c->arena, "part of %s, which PyTorch builds from these ops: %s", call->part_of, rule);
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

static void bind_result_types(Stmt *st);

static void autocast_stmts(Ctx *c, Vec *stmts)
{
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        c->instance = st->instance;
        switch (st->kind) {
        case S_ASSIGN:
            autocast_expr(c, st->value);
            bind_result_types(st);
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
        case S_EXPR: {
            if (!st->targets)
                break;
            /* in-place/out=: the result is copied into the destination's dtype */
            autocast_expr(c, st->value);
            DType dest = st->name->sym->type.dtype;
            if (st->value->type.dtype != dest && st->value->type.dtype != DT_NONE)
                st->value = new_cast(c, st->value, dest,
                                     arena_printf(c->arena, "stored into '%s', the %s destination of %s", st->name->text,
                                                  dtype_name(dest), st->value->callee));
            ((Expr *)VEC_AT(st->targets, 0))->sym->type = st->name->sym->type;
            break;
        }
        case S_INPUT:
        case S_PARAM:
        case S_BUFFER:
        case S_MODULE:
        case S_RETURN:
        case S_FOR:
        case S_TRAIN:
            break;
        }
    }
}

/* ---- the command line's say: --autocast-dtype, --autocast-op ----------- */

static const char *allowed_dtypes(Ctx *c)
{
    bool bf = c->policy->allowed & (1u << DT_BF16), f16 = c->policy->allowed & (1u << DT_F16);
    return bf && f16 ? "bf16 and f16" : bf ? "bf16 only" : "f16 only";
}

static bool known_policy_key(Ctx *c, const char *name)
{
    if (op_lookup(c, name) || strcmp(name, "__matmul__") == 0 || policy_find(c->policy, name))
        return true;
    for (size_t i = 0; i < sizeof aten_names / sizeof aten_names[0]; i++)
        if (strcmp(name, aten_names[i].aten) == 0)
            return true;
    return false;
}

/* main.c has checked the syntax (NAME=bf16|f16|f32|promote|none); here the
 * values meet the policy: a low dtype must be one its `allow` line names,
 * as for autocast(dtype=...). */
static void apply_overrides(Ctx *c)
{
    const Options *o = c->opts;
    Policy *pol = c->policy;
    if (o->autocast_dtype != DT_NONE) {
        if (!(pol->allowed & (1u << o->autocast_dtype)))
            error_plain(c, "--autocast-dtype %s: autocast on %s supports %s (the policy's 'allow' line)",
                        dtype_name(o->autocast_dtype), pol->target, allowed_dtypes(c));
        else
            pol->low = o->autocast_dtype;
    }
    for (int i = 0; i < o->nautocast_ops; i++) {
        const char *arg = o->autocast_ops[i], *eq = strchr(arg, '=');
        ASSERT(eq);
        const char *name = arena_strndup(c->arena, arg, (size_t)(eq - arg)), *value = eq + 1;
        PolicyRow *row = arena_alloc(c->arena, sizeof *row);
        row->op = name;
        row->source = arena_printf(c->arena, "command line: --autocast-op %s", arg);
        DType t = dtype_from_name(value);
        if (t == DT_BF16 || t == DT_F16) {
            row->cls = POL_LOWER;
            row->low = t;
            if (!(pol->allowed & (1u << t))) {
                error_plain(c, "--autocast-op %s: autocast on %s supports %s (the policy's 'allow' line)", arg,
                            pol->target, allowed_dtypes(c));
                continue;
            }
        } else if (t == DT_F32) {
            row->cls = POL_FP32;
        } else if (strcmp(value, "promote") == 0) {
            row->cls = POL_PROMOTE;
        } else if (strcmp(value, "none") == 0) {
            row->cls = POL_NONE;
        } else {
            ICE("--autocast-op value '%s' passed main.c's check", value);
        }
        if (!known_policy_key(c, name)) {
            error_plain(c, "--autocast-op %s: '%s' is not an op ampc knows, nor a row of the %s policy", arg, name,
                        pol->target);
            continue;
        }
        /* the last word wins, as with repeated options elsewhere */
        policy_put(c, pol, row);
    }
}

const char *autocast_options_text(Ctx *c)
{
    const Options *o = c->opts;
    Buf b;
    buf_init(&b, c->arena);
    buf_puts(&b, "");
    if (o->autocast_dtype != DT_NONE)
        buf_printf(&b, " --autocast-dtype %s", dtype_name(o->autocast_dtype));
    for (int i = 0; i < o->nautocast_ops; i++)
        buf_printf(&b, " --autocast-op %s", o->autocast_ops[i]);
    if (o->force_dtype != DT_NONE)
        buf_printf(&b, " --force-dtype %s", dtype_name(o->force_dtype));
    return b.data;
}

/* ---- --force-dtype: torch_xla's XLA_USE_BF16 / XLA_USE_FP16 ------------
 *
 * After autocast has decided, every f32 and f64 tensor becomes the forced
 * dtype: inputs, parameters and buffers are converted once on entry (the
 * caller still passes them as declared), every op and cast that produced
 * f32 or f64 now produces the forced dtype, and casts that became no-ops
 * disappear.  Every op's float operands were already in its compute dtype,
 * so mapping all dtypes the same way keeps that true. */

/* The dtype every float becomes: --force-dtype's, or f64 for the
 * reference evaluation of --emit=check (which maps bf16 and f16 too). */
static DType forced_to(Ctx *c) { return c->opts->reference_f64 ? DT_F64 : c->opts->force_dtype; }

static bool forced_away(Ctx *c, DType t)
{
    if (c->opts->reference_f64)
        return t == DT_F32 || t == DT_BF16 || t == DT_F16;
    return c->opts->force_dtype != DT_NONE && (t == DT_F32 || t == DT_F64);
}

static const char *force_flag(Ctx *c)
{
    return c->opts->reference_f64 ? "f64 reference" : c->opts->force_dtype == DT_BF16 ? "XLA_USE_BF16" : "XLA_USE_FP16";
}

static Expr *force_expr(Ctx *c, Expr *e)
{
    DType f = forced_to(c);
    switch (e->kind) {
    case E_NAME:
        if (e->sym && e->sym->kind != SYM_LOCAL && forced_away(c, e->type.dtype))
            return new_cast(c, e, f, arena_printf(c->arena, "--force-dtype %s (the %s analogue): %s tensors run in %s",
                                                  dtype_name(f), force_flag(c), dtype_name(e->type.dtype),
                                                  dtype_name(f)));
        if (e->sym && e->sym->kind == SYM_LOCAL)
            e->type = e->sym->type;
        return e;
    case E_CAST:
        e->operand = force_expr(c, e->operand);
        if (forced_away(c, e->dtype)) {
            e->dtype = f;
            e->type.dtype = f;
        }
        return e->operand->type.dtype == e->dtype ? e->operand : e;
    case E_CALL:
        if (!e->op || !e->bound)
            return e;
        bool real_part_op = e->op->id == OP_ABS || e->op->id == OP_ANGLE || e->op->id == OP_REAL ||
                            e->op->id == OP_CONJ || e->op->id == OP_IMAG;
        bool of_real = real_part_op && e->bound[0] && !dtype_is_complex(e->bound[0]->type.dtype);
        if (op_takes_complex(e->op->id) && !of_real && !c->opts->reference_f64) {
            /* complex kernels have f32 and f64 forms only, as PyTorch's
             * (abs and angle of a real tensor have every float form) */
            error_at(c, e->name_loc, "--force-dtype %s: %s() works with complex tensors, whose kernels compute in "
                     "f32 or f64 only (as PyTorch's); compile this model without --force-dtype",
                     dtype_name(f), e->op->name);
            return e;
        }
        for (int i = 0; i < e->op->nparams; i++)
            if (e->bound[i])
                e->bound[i] = force_expr(c, e->bound[i]);
        for (int k = 0; k < e->nmore; k++) /* q, r = qr(a): every result */
            if (forced_away(c, e->more_types[k].dtype))
                e->more_types[k].dtype = f;
        if (forced_away(c, e->type.dtype)) {
            e->decision.before_force = e->type.dtype;
            e->decision.rule = arena_printf(c->arena, "--force-dtype %s (the %s analogue), instead of %s: %s",
                                            dtype_name(f), force_flag(c), dtype_name(e->type.dtype),
                                            e->decision.rule ? e->decision.rule : "follows its inputs");
            e->type.dtype = f;
            e->decision.compute = f;
        }
        return e;
    default:
        return e;
    }
}

/* The names a statement binds take its results' types: the first result,
 * then (for values, indices = sort(x)) the call's other results, whose
 * dtypes autocast and --force-dtype leave as they are (indices stay i64). */
static void bind_result_types(Stmt *st)
{
    const Expr *call = st->value;
    while (call->kind == E_CAST)
        call = call->operand;
    for (int k = 0; k < st->targets->len; k++) {
        Expr *t = VEC_AT(st->targets, k);
        if (k == 0)
            t->sym->type = st->value->type;
        else if (call->kind == E_CALL && k - 1 < call->nmore)
            t->sym->type = call->more_types[k - 1];
    }
}

static void force_stmts(Ctx *c, Vec *stmts)
{
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        switch (st->kind) {
        case S_ASSIGN:
            st->value = force_expr(c, st->value);
            bind_result_types(st);
            break;
        case S_EXPR:
            if (st->value)
                st->value = force_expr(c, st->value);
            if (st->value && st->targets)
                bind_result_types(st);
            break;
        case S_AUTOCAST:
            force_stmts(c, st->body);
            break;
        default:
            break; /* output and minimize name symbols: nothing to convert */
        }
    }
}

/* The seed's advice: do not combine XLA_USE_FP16 (or _BF16) with AMP, since
 * it overrides the per-operator precision autocast chooses. */
static Expr *first_autocast_call(Expr *e)
{
    if (!e || e->kind != E_CALL || !e->op || !e->bound)
        return e && e->kind == E_CAST ? first_autocast_call(e->operand) : NULL;
    for (int i = 0; i < e->op->nparams; i++) {
        Expr *inner = first_autocast_call(e->bound[i]);
        if (inner)
            return inner;
    }
    return e->autocast_on && e->type.dtype != DT_NONE ? e : NULL;
}

static Expr *first_autocast_op(Vec *stmts)
{
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        Expr *e = st->kind == S_AUTOCAST ? first_autocast_op(st->body)
                  : st->kind == S_ASSIGN || st->kind == S_EXPR ? first_autocast_call(st->value)
                                                                : NULL;
        if (e)
            return e;
    }
    return NULL;
}

static void force_dtype(Ctx *c)
{
    DType f = forced_to(c);
    Expr *ac = c->opts->reference_f64 ? NULL : first_autocast_op(c->model->body);
    if (ac)
        warning_class_at(c, ac->loc, "force-dtype", "--force-dtype %s overrides the per-op precision of autocast, used here first: "
                   "every op runs in %s (the PyTorch/XLA AMP guide: do not set %s when using autocast)",
                   dtype_name(f), dtype_name(f), force_flag(c));
    force_stmts(c, c->model->body);
}

bool autocast(Ctx *c)
{
    c->autocast_ran = true;
    apply_overrides(c);
    if (c->nerrors)
        return false;
    autocast_stmts(c, c->model->body);
    c->instance = NULL;
    if (c->nerrors == 0 && forced_to(c) != DT_NONE)
        force_dtype(c);
    return c->nerrors == 0;
}
