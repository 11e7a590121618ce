/* types_composite.c: gru_cell, lstm_cell and bilinear under autocast,
 * written as the ops PyTorch builds them from.
 *
 * The three are CompositeImplicitAutograd in PyTorch: where no autocast
 * list names them (CPU and XLA; CUDA lists the cells and bilinear, which
 * then decide whole), autocast sees their inner ops.  The cells' two
 * linears (RNN.cpp's GRUCell and LSTMCell) and bilinear's contractions
 * (_trilinear, through bmm) run in the low dtype, and the rest mixes those
 * results with the f32 state in PyTorch's promotion: a gru_cell's gates are
 * bf16 and its result f32.  ampc does the same by writing each such call,
 * where autocast will see it (composite_expands), as those ops, which
 * autocast then decides one by one and --explain lists as "part of
 * gru_cell".  The whole recurrent layers unrolled into cells
 * (types_rnn.c) follow, where the layer has no row of its own.  Outside
 * autocast, or decided whole, the op keeps its fused kernel.
 *
 *   gru_cell   gi = linear(x, w_ih, b_ih), gh = linear(hx, w_hh, b_hh)
 *              r = sigmoid(gh_r + gi_r), z = sigmoid(gh_z + gi_z)
 *              n = tanh(gi_n + gh_n * r), hy = (hx - n) * z + n
 *   lstm_cell  g = linear(hx, w_hh, b_hh) + linear(x, w_ih, b_ih)
 *              cy = sigmoid(g_f) * cx + sigmoid(g_i) * tanh(g_g)
 *              hy = sigmoid(g_o) * tanh(cy)
 *   bilinear   y[:, o] = (x1 W[o]) x2 by two matmuls (each a contraction
 *              PyTorch runs with bmm), in input1's dtype, + bias
 *
 * The gate slices are narrows of the last dim (the gates' order is
 * PyTorch's: r, z, n and i, f, g, o).  Typecheck calls composite_assign
 * for a statement whose value is such a call and hoist_composite for one
 * nested in a statement's value.
 */

#include "types.h"

#include <string.h>

static bool is_composite(OpId id) { return id == OP_GRU_CELL || id == OP_LSTM_CELL || id == OP_BILINEAR; }

bool composite_expands(Ctx *c, const Expr *call)
{
    if (call->kind != E_CALL || !call->op || !is_composite(call->op->id) || !call->autocast_on || call->is_inplace ||
        call->out_arg || !c->policy || c->opts->reference_f64)
        return false; /* the f64 reference evaluation keeps the fused op: one function on every target */
    if (policy_row_for(c, call))
        return false; /* its own row (or its layer's) decides it whole */
    const PolicyRow *inner = policy_find(c->policy, call->op->id == OP_BILINEAR ? "bmm" : "linear");
    return inner && inner->cls == POL_LOWER;
}

/* What a part of `from` is part of, for --explain. */
static const char *part_name(Ctx *c, const Expr *from)
{
    if (!from->layer)
        return from->op->name;
    return arena_printf(c->arena, "%s, a step of %s", from->op->name, from->layer->name);
}

/* A call of op on the given operands, in parameter order (NULL: left
 * out), made for `from` and marked as its part; typed at once. */
static Expr *part(Ctx *c, OpId id, Expr *from, int n, Expr **args)
{
    const OpInfo *op = op_info(c, id);
    Expr *e = call_skeleton(c, op, from, from->name_loc, args[0]);
    for (int k = 1; k < n; k++) {
        if (!args[k])
            continue;
        e->bound[k] = args[k];
        vec_push(c, e->list, args[k]);
    }
    e->is_operator = id == OP_ADD || id == OP_SUB || id == OP_MUL;
    e->part_of = part_name(c, from);
    return infer_call(c, e) ? e : NULL;
}

static Expr *part1(Ctx *c, OpId id, Expr *from, Expr *a) { return a ? part(c, id, from, 1, (Expr *[]){a}) : NULL; }

static Expr *part2(Ctx *c, OpId id, Expr *from, Expr *a, Expr *b)
{
    return a && b ? part(c, id, from, 2, (Expr *[]){a, b}) : NULL;
}

/* A call of op on x with int arguments, marked as from's part. */
static Expr *int_part(Ctx *c, OpId id, Expr *from, Expr *x, int n, const char *const *names, const int64_t *v)
{
    Expr *e = x ? make_call(c, id, from, from->name_loc, x, n, names, v) : NULL;
    if (e)
        e->part_of = part_name(c, from);
    return e;
}

/* Gate k of `hidden` rows each: narrow(g, -1, k * hidden, hidden). */
static Expr *gate(Ctx *c, Expr *from, Expr *g, int64_t k, int64_t hidden)
{
    static const char *const names[] = {"dim", "start", "length"};
    return int_part(c, OP_NARROW, from, g, 3, names, (int64_t[]){-1, k * hidden, hidden});
}

/* The statement `name = value`, appended to out; a reference to the name. */
static Expr *bind(Ctx *c, Vec *out, Stmt *st, const char *name, Expr *value)
{
    if (!value)
        return NULL;
    Expr *t = local_name(c, name, value->loc, &value->type);
    vec_push(c, out, assign_stmt(c, t, value, st->loc));
    return ref_of(c, t);
}

/* The expansion of call into statements appended to out, its results
 * assigned to targets (as many as it gives); false when reported. */
static bool expand_cell(Ctx *c, Stmt *st, Expr *call, Vec *targets, Vec *out)
{
    bool lstm = call->op->id == OP_LSTM_CELL;
    int nt = lstm ? 5 : 4;
    Expr *x = arg(call, 0), *wih = arg(call, nt - 2), *whh = arg(call, nt - 1);
    Expr *bih = named(call, "b_ih"), *bhh = named(call, "b_hh");
    const char *base = arena_printf(c->arena, "%s", ((Expr *)VEC_AT(targets, 0))->text);
    int64_t hidden;
    if (!poly_is_const(whh->type.shape.dims[1], &hidden)) {
        error_at(c, whh->loc, "%s() under autocast is PyTorch's composite of two linears and its gates, which ampc "
                 "slices at compile time: the hidden size must be known, but it is %s", call->op->name,
                 dim_str(c, whh->type.shape.dims[1]));
        return false;
    }
    /* hx (and cx) read twice: bound to names unless they are names */
    Expr *hx = arg(call, 1), *cx = lstm ? arg(call, 2) : NULL;
    if (hx->kind != E_NAME)
        hx = bind(c, out, st, arena_printf(c->arena, "%s_hx", base), hx);
    if (lstm) {
        Expr *g = part2(c, OP_ADD, call, part(c, OP_LINEAR, call, 3, (Expr *[]){hx, whh, bhh}),
                        part(c, OP_LINEAR, call, 3, (Expr *[]){x, wih, bih}));
        g = bind(c, out, st, arena_printf(c->arena, "%s_gates", base), g);
        Expr *in = part1(c, OP_SIGMOID, call, gate(c, call, g, 0, hidden));
        Expr *forget = part1(c, OP_SIGMOID, call, gate(c, call, g, 1, hidden));
        Expr *cell = part1(c, OP_TANH, call, gate(c, call, g, 2, hidden));
        Expr *o = part1(c, OP_SIGMOID, call, gate(c, call, g, 3, hidden));
        Expr *cy = part2(c, OP_ADD, call, part2(c, OP_MUL, call, forget, cx), part2(c, OP_MUL, call, in, cell));
        if (!cy)
            return false;
        Expr *ct = VEC_AT(targets, 1);
        vec_push(c, out, assign_stmt(c, ct, cy, st->loc));
        ct->sym->type = cy->type;
        Expr *hy = part2(c, OP_MUL, call, o, part1(c, OP_TANH, call, ref_of(c, ct)));
        if (!hy)
            return false;
        vec_push(c, out, assign_stmt(c, VEC_AT(targets, 0), hy, st->loc));
        return true;
    }
    Expr *gi = bind(c, out, st, arena_printf(c->arena, "%s_igates", base),
                    part(c, OP_LINEAR, call, 3, (Expr *[]){x, wih, bih}));
    Expr *gh = bind(c, out, st, arena_printf(c->arena, "%s_hgates", base),
                    hx ? part(c, OP_LINEAR, call, 3, (Expr *[]){hx, whh, bhh}) : NULL);
    if (!gi || !gh)
        return false;
    Expr *r = part1(c, OP_SIGMOID, call, part2(c, OP_ADD, call, gate(c, call, gh, 0, hidden), gate(c, call, gi, 0, hidden)));
    Expr *z = bind(c, out, st, arena_printf(c->arena, "%s_update", base),
                   part1(c, OP_SIGMOID, call,
                         part2(c, OP_ADD, call, gate(c, call, gh, 1, hidden), gate(c, call, gi, 1, hidden))));
    Expr *n = bind(c, out, st, arena_printf(c->arena, "%s_new", base),
                   part1(c, OP_TANH, call, part2(c, OP_ADD, call, gate(c, call, gi, 2, hidden),
                                                 part2(c, OP_MUL, call, gate(c, call, gh, 2, hidden), r))));
    if (!z || !n)
        return false;
    Expr *hy = part2(c, OP_ADD, call, part2(c, OP_MUL, call, part2(c, OP_SUB, call, ref_of(c, hx), n), z),
                     ref_of(c, n));
    if (!hy)
        return false;
    vec_push(c, out, assign_stmt(c, VEC_AT(targets, 0), hy, st->loc));
    return true;
}

/* reshape(x, v[0], ..., v[n-1]), marked as from's part. */
static Expr *reshaped(Ctx *c, Expr *from, Expr *x, int n, const int64_t *v)
{
    static const char *const shape[MAX_DIMS] = {"shape", "shape", "shape", "shape",
                                                "shape", "shape", "shape", "shape"};
    return int_part(c, OP_RESHAPE, from, x, n, shape, v);
}

/* bilinear(x1, x2, W, bias), as _trilinear contracts: t = x1 @ W laid out
 * [in1, out * in2] (each entry x1 . W[o, :, j], one contraction rounded
 * once), viewed [N, out, in2]; y = t @ x2[..., None], [N, out, 1],
 * squeezed; in input1's dtype, plus the bias.  Inputs of other than two
 * dims are flattened to [N, in] first and the result given their leading
 * dims back (at most one of them symbolic, the -1 of the reshape). */
static bool expand_bilinear(Ctx *c, Stmt *st, Expr *call, Vec *targets, Vec *out)
{
    Expr *x1 = arg(call, 0), *x2 = arg(call, 1), *w = arg(call, 2), *bias = named(call, "bias");
    const Shape *s1 = &x1->type.shape, *sw = &w->type.shape;
    int64_t o, in1, in2, lead[MAX_DIMS];
    int nlead = s1->ndim - 1, unknown = 0;
    for (int i = 0; i < nlead; i++)
        if (!poly_is_const(s1->dims[i], &lead[i])) {
            lead[i] = -1;
            unknown++;
        }
    if (!poly_is_const(sw->dims[0], &o) || !poly_is_const(sw->dims[1], &in1) || !poly_is_const(sw->dims[2], &in2) ||
        unknown > 1) {
        error_at(c, call->loc, "bilinear() under autocast is PyTorch's _trilinear of two contractions, which ampc "
                 "lays out at compile time: the weight's sizes must be known, and at most one of the inputs' "
                 "leading dims symbolic");
        return false;
    }
    if (s1->ndim != 2) {
        x1 = reshaped(c, call, x1, 2, (int64_t[]){-1, in1});
        x2 = reshaped(c, call, x2, 2, (int64_t[]){-1, in2});
    }
    static const char *const perm[] = {"dims", "dims", "dims"};
    Expr *wt = reshaped(c, call, int_part(c, OP_PERMUTE, call, w, 3, perm, (int64_t[]){1, 0, 2}), 2,
                        (int64_t[]){in1, o * in2});
    Expr *t = reshaped(c, call, part2(c, OP_MATMUL, call, x1, wt), 3, (int64_t[]){-1, o, in2});
    const char *dim = "dim";
    Expr *y = part2(c, OP_MATMUL, call, t, int_part(c, OP_UNSQUEEZE, call, x2, 1, &dim, (int64_t[]){-1}));
    y = int_part(c, OP_SQUEEZE, call, y, 1, &dim, (int64_t[]){-1});
    if (y && s1->ndim != 2) {
        lead[nlead] = o;
        y = reshaped(c, call, y, nlead + 1, lead);
    }
    if (!y)
        return false;
    /* PyTorch's _trilinear adds each contraction into zeros of input1's
     * dtype: the result is in it whatever dtype the matmuls ran in */
    Expr *cast = new_cast(c, y, arg(call, 0)->type.dtype,
                          arena_printf(c->arena, "%s: bilinear's result is in input1's dtype, as PyTorch's "
                                       "_trilinear gives it", loc_text(c, call->loc)));
    cast->type = y->type;
    cast->type.dtype = arg(call, 0)->type.dtype;
    y = cast;
    if (bias && !(y = part2(c, OP_ADD, call, y, bias)))
        return false;
    vec_push(c, out, assign_stmt(c, VEC_AT(targets, 0), y, st->loc));
    return true;
}

bool composite_assign(Ctx *c, Vec *stmts, int i)
{
    Stmt *st = VEC_AT(stmts, i);
    Expr *call = st->value;
    if (!infer_call(c, call))
        return false; /* PyTorch's checks, on the call as written */
    int nresults = call->op->id == OP_LSTM_CELL ? 2 : 1;
    if (st->targets->len != nresults) {
        error_at(c, st->loc, "%s() returns %d tensor%s, but %d name%s assigned", call->op->name, nresults,
                 nresults == 1 ? "" : "s", st->targets->len, st->targets->len == 1 ? " is" : "s are");
        return false;
    }
    Vec *out = vec_new(c);
    bool ok = call->op->id == OP_BILINEAR ? expand_bilinear(c, st, call, st->targets, out)
                                          : expand_cell(c, st, call, st->targets, out);
    if (!ok)
        return false;
    splice(c, stmts, i, out);
    return true;
}

/* The first call in e's operands (not e itself) that composite_expands,
 * or NULL. */
static Expr *nested_composite(Ctx *c, Expr *e)
{
    if (e->kind != E_CALL || !e->op)
        return NULL;
    for (int k = 0; k < e->op->nparams; k++) {
        Expr *a = e->bound[k];
        if (!a)
            continue;
        if (composite_expands(c, a) && a->op->id != OP_LSTM_CELL)
            return a;
        Expr *inner = nested_composite(c, a);
        if (inner)
            return inner;
    }
    return NULL;
}

bool hoist_composite(Ctx *c, Vec *stmts, int i)
{
    Stmt *st = VEC_AT(stmts, i);
    Expr *call = st->value ? nested_composite(c, st->value) : NULL;
    if (!call)
        return false;
    /* `name = call` before the statement, which then reads the name */
    Expr *copy = arena_alloc(c->arena, sizeof *copy);
    *copy = *call;
    Expr *t = local_name(c, arena_printf(c->arena, "%s_%d", call->op->name, i), call->loc, NULL);
    Vec *out = vec_new(c);
    vec_push(c, out, assign_stmt(c, t, copy, st->loc));
    vec_push(c, out, st);
    Expr *ref = ref_of(c, t);
    *call = *ref;
    splice(c, stmts, i, out);
    return true;
}
