/* lower.c: AST -> graph IR.
 *
 * Requires: an AST after autocast (every call decided, every conversion an
 * explicit E_CAST).  Produces: c->graph, nodes in source order, one per
 * call and per cast, each carrying its source location and the reason for
 * its dtype; the model's outputs, and the minimize target as the output
 * named after it.
 *
 * Each node owns its call's non-tensor arguments as attributes (Attr), in
 * parameter order, and the facts typecheck normalised from them, under
 * names no parameter has (axis, axes, scale_factor.0, axis_start, axis_step, reduction_code,
 * fft_dims, fft_lens, frame_hop, frame_len).  Lowering is the
 * last pass that reads the syntax tree: it also copies what --explain and
 * --emit=dot show of a call (name_loc, the policy row, every call's
 * CallSite) onto the IR.
 *
 * Numbers stay literal text in the IR (Scalar, Attr): the code generator
 * rounds each one once, into the dtype of the op that uses it.
 */
#include "call_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static Value *lower_expr(Ctx *c, Expr *e);

/* A written non-tensor argument as an attribute; false for a form no
 * reader takes.  Integers are parsed quietly: typecheck reported those
 * out of range where an int was expected, and a number elsewhere keeps
 * its text. */
static bool attr_of(Expr *a, const char *name, Attr *out)
{
    *out = (Attr){.name = name, .loc = a->loc};
    Expr *lit = a;
    if (a->kind == E_CALL && a->op && a->op->id == OP_NEG && a->list && a->list->len == 1 &&
        ((Expr *)VEC_AT(a->list, 0))->kind == E_NUMBER) {
        out->negate = true;
        lit = VEC_AT(a->list, 0);
    }
    switch (lit->kind) {
    case E_NUMBER: {
        out->kind = ATTR_NUMBER;
        out->text = lit->text;
        out->is_float = lit->is_float;
        if (!lit->is_float) {
            char *end;
            errno = 0;
            long long v = strtoll(lit->text, &end, 10);
            if (errno == 0 && end != lit->text && *end == '\0') {
                out->kind = ATTR_INT;
                out->i = out->negate ? -v : v;
            }
        }
        return true;
    }
    case E_BOOL: out->kind = ATTR_BOOL; out->i = lit->boolean; return true;
    case E_STRING: out->kind = ATTR_STR; out->text = lit->text; return true;
    case E_DTYPE: out->kind = ATTR_DTYPE; out->dtype = lit->dtype; return true;
    case E_NAME: out->kind = ATTR_NONE; return true; /* None */
    default: return false;
    }
}

static Attr *push_attr(Ctx *c, Node *n, int cap, const char *name, bool derived)
{
    ASSERT(n->nattrs < cap);
    Attr *a = &n->attrs[n->nattrs++];
    (void)c;
    *a = (Attr){.name = name, .derived = derived};
    return a;
}

static void derived_int(Ctx *c, Node *n, int cap, const char *name, int64_t v)
{
    Attr *a = push_attr(c, n, cap, name, true);
    a->kind = ATTR_INT;
    a->i = v;
    a->negate = v < 0;
    a->text = arena_printf(c->arena, "%llu", v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
}

static void derived_list(Ctx *c, Node *n, int cap, const char *name, const int64_t *v, int count)
{
    Attr *a = push_attr(c, n, cap, name, true);
    a->kind = ATTR_INT_LIST;
    a->list = arena_alloc(c->arena, (size_t)(count + 1) * sizeof *a->list);
    for (int i = 0; i < count; i++)
        a->list[i] = v[i];
    a->nlist = count;
}

static bool is_fft(OpId id)
{
    switch (id) {
    case OP_FFT_FFT: case OP_FFT_IFFT: case OP_FFT_FFT2: case OP_FFT_IFFT2: case OP_FFT_FFTN: case OP_FFT_IFFTN:
    case OP_FFT_RFFT: case OP_FFT_IRFFT: case OP_FFT_RFFT2: case OP_FFT_IRFFT2: case OP_FFT_RFFTN:
    case OP_FFT_IRFFTN: case OP_FFT_HFFT: case OP_FFT_IHFFT:
        return true;
    default:
        return false;
    }
}

/* The facts typecheck worked out from the call: stored when they differ
 * from the zero they start as, which is also each reader's default. */
static void derived_attrs(Ctx *c, Node *n, int cap, Expr *e)
{
    if (e->dim)
        derived_int(c, n, cap, "axis", e->dim);
    if (e->dims_mask) {
        int64_t axes[MAX_DIMS];
        int count = 0;
        for (int i = 0; i < MAX_DIMS; i++)
            if (e->dims_mask & (1u << i))
                axes[count++] = i;
        derived_list(c, n, cap, "axes", axes, count);
    }
    if (e->start)
        derived_int(c, n, cap, "axis_start", e->start);
    if (e->step)
        derived_int(c, n, cap, "axis_step", e->step);
    if (e->reduction)
        derived_int(c, n, cap, "reduction_code", e->reduction);
    if (is_fft(e->op->id)) {
        int dims[MAX_DIMS];
        int64_t lens[MAX_DIMS], d[MAX_DIMS];
        int count = fft_plan_dims(c, e, e->bound[0]->type.shape.ndim, dims, lens);
        ASSERT(count >= 0); /* typecheck made the same plan */
        for (int i = 0; i < count; i++)
            d[i] = dims[i];
        derived_list(c, n, cap, "fft_dims", d, count);
        derived_list(c, n, cap, "fft_lens", lens, count);
    }
    if (e->op->id == OP_STFT) {
        int64_t n_fft, hop, win, padded;
        bool onesided;
        bool ok = stft_params(c, e, &n_fft, &hop, &win, &padded, &onesided);
        ASSERT(ok);
        derived_int(c, n, cap, "frame_hop", hop);
        derived_int(c, n, cap, "frame_len", win);
    }
}

/* The call's written non-tensor arguments, in parameter order; the
 * entries of an int... vararg (a name repeated in the signature) become
 * one ATTR_INT_LIST. */
static void lower_attrs(Ctx *c, Node *n, Expr *e)
{
    const OpInfo *op = e->op;
    int cap = op->nparams + 8;
    n->attrs = arena_alloc(c->arena, (size_t)cap * sizeof *n->attrs);
    for (int i = 0; i < op->nparams; i++) {
        Expr *a = e->bound[i];
        const char *name = op->params[i].name;
        if (!a || a->type.dtype != DT_NONE)
            continue; /* defaulted, or a tensor: an operand */
        if ((op->flags & OPF_SCALAR_OPERAND) && op->params[i].kind != ARG_SCALAR)
            continue; /* 2 - x: the number operand is Node.scalar */
        if (a->kind == E_LIST && op->params[i].kind != ARG_INT_LIST) {
            /* a number per dim (interpolate's scale_factor=(2, 1.5)): one
             * attribute per entry, named scale_factor.0, scale_factor.1 */
            for (int m = 0; m < a->list->len && n->nattrs < cap; m++) {
                Attr item;
                const char *key = arena_printf(c->arena, "%s.%d", name, m);
                if (attr_of(VEC_AT(a->list, m), key, &item)) {
                    item.derived = true; /* named for its parameter, not one itself */
                    *push_attr(c, n, cap, key, true) = item;
                }
            }
            continue;
        }
        if (a->kind == E_LIST) {
            /* an int[] parameter's entries (resolve.c kept the list) */
            int64_t v[MAX_DIMS];
            int count = a->list->len < MAX_DIMS ? a->list->len : MAX_DIMS;
            for (int m = 0; m < count; m++) {
                Attr item;
                v[m] = attr_of(VEC_AT(a->list, m), name, &item) && item.kind == ATTR_INT ? item.i : 0;
            }
            derived_list(c, n, cap, name, v, count);
            n->attrs[n->nattrs - 1].derived = false;
            n->attrs[n->nattrs - 1].loc = a->loc;
            continue;
        }
        Attr at;
        if (!attr_of(a, name, &at))
            continue;
        bool vararg = op_param_index(op, name) != i || (i + 1 < op->nparams && !strcmp(op->params[i + 1].name, name));
        if (!vararg) {
            *push_attr(c, n, cap, name, false) = at;
            continue;
        }
        Attr *list = (Attr *)attr_find(n, name);
        if (!list) {
            list = push_attr(c, n, cap, name, false);
            *list = (Attr){.name = name, .kind = ATTR_INT_LIST, .loc = a->loc};
            list->list = arena_alloc(c->arena, (size_t)(op->nparams + 1) * sizeof *list->list);
        }
        if (at.kind == ATTR_INT)
            list->list[list->nlist++] = at.i;
    }
    derived_attrs(c, n, cap, e);
}

static Node *new_node(Ctx *c, const OpInfo *op, Expr *e, const char *why)
{
    Node *n = ir_new_node(c, op, e->loc);
    n->out = ir_new_value(c, V_TEMP, e->type, NULL);
    n->out->def = n;
    for (int k = 0; e->kind == E_CALL && k < e->nmore && k < 3; k++) {
        n->more_out[k] = ir_new_value(c, V_TEMP, e->more_types[k], NULL);
        n->more_out[k]->def = n;
        n->nmore = k + 1;
    }
    n->why = why;
    if (e->kind == E_CALL) {
        n->name_loc = e->name_loc;
        n->row = e->decision.row;
        n->forced_from = e->decision.before_force;
        n->autocast_on = e->autocast_on;
        lower_attrs(c, n, e);
        CallSite *site = arena_alloc(c->arena, sizeof *site);
        *site = (CallSite){.op = e->op, .name_loc = e->name_loc, .type = e->type, .rule = e->decision.rule, .node = n};
        vec_push(c, c->graph->calls, site);
    } else if (e->kind == E_CAST) {
        n->operand_loc = e->operand->loc;
    }
    return n;
}

/* A number operand, possibly negated: 2.5 or neg(2.5). */
static Scalar scalar_of(Expr *e)
{
    Scalar s = {.loc = e->loc};
    while (e->kind == E_CALL) {
        s.negate = !s.negate;
        e = VEC_AT(e->list, 0);
    }
    s.text = e->text;
    return s;
}

/* The op's data operands in the dtype its kernel computes in, which is its
 * result's: an integer operand of an op with a float result (exp of an
 * i64 tensor computes in f32, as PyTorch's promotion says), or the input
 * of a reduction given dtype= ("the input is converted first"), gets an
 * explicit Cast.  Index operands, and the f32 parameters of the norms
 * under a narrower input, keep their dtype. */
static void convert_operands(Ctx *c, Node *n, Expr *e)
{
    DType t = n->out->type.dtype;
    unsigned f = n->op->flags;
    if (!dtype_is_float(t))
        return;
    for (int k = 0; k < n->nin; k++) {
        Value *v = n->in[k];
        if (!v || v->type.dtype == t)
            continue;
        bool index = op_index_arg(n->op, k);
        if (index || (k > 0 && (f & OPF_MIXED_PARAMS)))
            continue;
        if (dtype_is_complex(v->type.dtype))
            continue; /* real(), abs(), irfft...: a complex operand of a real result, by design */
        /* only widenings of integers, and dtype= on reductions */
        if (dtype_is_float(v->type.dtype) && op_param_index(n->op, "dtype") < 0)
            continue;
        Node *cast = ir_new_node(c, op_info(c, OP_CAST), e->loc);
        cast->out = ir_new_value(c, V_TEMP, (Type){.dtype = t, .shape = v->type.shape}, NULL);
        cast->out->def = cast;
        cast->in[0] = v;
        cast->nin = 1;
        cast->why = dtype_is_float(v->type.dtype)
                        ? arena_printf(c->arena, "dtype=%s: %s converts its input first", dtype_name(t), n->op->name)
                        : arena_printf(c->arena, "%s computes %s operands in %s, its result dtype", n->op->name,
                                       dtype_name(v->type.dtype), dtype_name(t));
        n->in[k] = cast->out;
        /* the cast runs first: swap it before n, the node just scheduled */
        Vec *nodes = c->graph->nodes;
        nodes->items[nodes->len - 1] = n;
        nodes->items[nodes->len - 2] = cast;
        int id = n->id;
        n->id = cast->id;
        cast->id = id;
    }
}

static Value *lower_call(Ctx *c, Expr *e)
{
    const OpInfo *op = e->op;
    Value **in = arena_alloc(c->arena, (size_t)(op->nparams > 8 ? op->nparams : 8) * sizeof *in);
    for (int i = 0; i < op->nparams; i++) {
        Expr *a = e->bound[i];
        if (a && a->type.dtype != DT_NONE) {
            /* every tensor parameter is an operand; only a `Tensor...`
             * parameter's copies (op_for_call) reach past the first 8 */
            in[i] = lower_expr(c, a);
        }
    }
    Node *n = new_node(c, op, e, e->decision.rule);
    if ((op->flags & OPF_SCALAR_OPERAND) && (!in[0] || !in[1])) {
        Expr *num = in[0] ? e->bound[1] : e->bound[0];
        n->scalar = scalar_of(num);
        n->scalar_first = !in[0];
        n->in[0] = in[0] ? in[0] : in[1];
        n->nin = 1;
    } else {
        for (int i = 0; i < op->nparams; i++)
            n->in[i] = in[i];
        n->nin = op->nparams;
    }
    convert_operands(c, n, e);
    Type st = op_scratch_type(c, n);
    if (st.dtype != DT_NONE) {
        n->scratch = ir_new_value(c, V_TEMP, st, NULL);
        n->scratch->def = n;
    }
    return n->out;
}

static Value *lower_expr(Ctx *c, Expr *e)
{
    switch (e->kind) {
    case E_NAME:
        ASSERT(e->sym && e->sym->ir);
        return e->sym->ir;
    case E_CAST: {
        Value *v = lower_expr(c, e->operand);
        if (v->type.dtype == e->dtype)
            return v; /* x.float() of an f32 x is x, as in PyTorch (autocast's casts always convert) */
        Node *n = new_node(c, op_info(c, OP_CAST), e, e->reason);
        n->in[0] = v;
        n->nin = 1;
        return n->out;
    }
    case E_CALL:
        return lower_call(c, e);
    default:
        ICE("cannot lower expression kind %d", e->kind);
    }
}

/* Outputs are written to the caller's buffers.  A value that is already
 * caller memory (an input) or is already an output gets a copy; with
 * --f32-outputs, a bf16 or f16 value gets a widening to f32 instead (exact:
 * every bf16 and f16 value is an f32). */
static void add_output(Ctx *c, Value *v, const char *name, Loc loc)
{
    Graph *g = c->graph;
    for (int i = 0; i < g->outputs->len; i++) {
        Value *o = VEC_AT(g->outputs, i);
        if (strcmp(o->output_name, name) == 0)
            return; /* `output loss` and `minimize loss` name one output */
    }
    bool widen = c->opts->f32_outputs && (v->type.dtype == DT_BF16 || v->type.dtype == DT_F16);
    if (v->kind != V_TEMP || v->is_output || widen) {
        Node *n = ir_new_node(c, op_info(c, OP_CAST), loc);
        Type t = v->type;
        if (widen)
            t.dtype = DT_F32;
        n->out = ir_new_value(c, V_TEMP, t, NULL);
        n->out->def = n;
        n->in[0] = v;
        n->nin = 1;
        n->why = widen ? "--f32-outputs: the output returned in f32" : "copy into the output buffer";
        v = n->out;
    }
    v->is_output = true;
    v->output_name = name;
    vec_push(c, g->outputs, v);
}

/* The calls of an expression statement nothing reads: never lowered,
 * listed as not computed.  Arguments first, as lowering visits them. */
static void unlowered_calls(Ctx *c, Expr *e)
{
    if (!e)
        return;
    if (e->kind == E_CAST) {
        unlowered_calls(c, e->operand);
        return;
    }
    if (e->kind != E_CALL || !e->op || !e->bound)
        return;
    for (int i = 0; i < e->op->nparams; i++)
        unlowered_calls(c, e->bound[i]);
    CallSite *site = arena_alloc(c->arena, sizeof *site);
    *site = (CallSite){.op = e->op, .name_loc = e->name_loc, .type = e->type, .rule = e->decision.rule};
    vec_push(c, c->graph->calls, site);
}

/* The nodes from index first on, lowered from statement st, belong to its
 * module instance (those of a nested region have theirs already). */
static void mark_instance(Ctx *c, int first, const Stmt *st)
{
    for (int k = first; st->instance && k < c->graph->nodes->len; k++) {
        Node *n = VEC_AT(c->graph->nodes, k);
        if (!n->instance) {
            n->instance = st->instance;
            n->instance_loc = st->instance_loc;
            n->instance_root = st->instance_root;
        }
    }
}

static void lower_stmts(Ctx *c, Vec *stmts)
{
    Graph *g = c->graph;
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        int first = g->nodes->len;
        switch (st->kind) {
        case S_INPUT:
        case S_PARAM:
        case S_BUFFER: {
            ValueKind k = st->kind == S_INPUT ? V_INPUT : st->kind == S_PARAM ? V_PARAM : V_BUFFER;
            Value *v = ir_new_value(c, k, st->sym->type, st->sym->name);
            st->sym->ir = v;
            vec_push(c, k == V_INPUT ? g->inputs : g->params, v);
            break;
        }
        case S_ASSIGN: {
            Expr *t = VEC_AT(st->targets, 0);
            Value *v = lower_expr(c, st->value);
            if (v->kind == V_TEMP && !v->name)
                v->name = t->sym->name;
            t->sym->ir = v;
            /* values, indices = sort(x): the other results, in order */
            for (int k = 1; k < st->targets->len && v->def; k++) {
                Expr *tk = VEC_AT(st->targets, k);
                Value *vk = v->def->more_out[k - 1];
                ASSERT(vk);
                vk->name = tk->sym->name;
                tk->sym->ir = vk;
            }
            break;
        }
        case S_OUTPUT:
            for (int k = 0; k < st->exprs->len; k++) {
                Expr *e = VEC_AT(st->exprs, k);
                add_output(c, e->sym->ir, e->sym->name, e->loc);
            }
            break;
        case S_MINIMIZE:
            g->loss = st->value->sym->ir;
            add_output(c, g->loss, st->value->sym->name, st->value->loc);
            break;
        case S_AUTOCAST:
            lower_stmts(c, st->body);
            break;
        case S_EXPR:
            if (st->targets) {
                /* in-place/out=: the destination's name now names the result */
                Expr *t = VEC_AT(st->targets, 0);
                t->sym->ir = lower_expr(c, st->value);
            } else {
                unlowered_calls(c, st->value);
            }
            break;
        case S_AUTOCAST_SWITCH:
        case S_MODULE:
        case S_RETURN:
        case S_FOR:
        case S_TRAIN:
            break;
        }
        mark_instance(c, first, st);
    }
}

bool lower(Ctx *c)
{
    Graph *g = arena_alloc(c->arena, sizeof *g);
    g->values = vec_new(c);
    g->nodes = vec_new(c);
    g->inputs = vec_new(c);
    g->params = vec_new(c);
    g->outputs = vec_new(c);
    g->calls = vec_new(c);
    g->name = c->model->name->text;
    g->name_loc = c->model->name->loc;
    Vec *dims = c->model->dims;
    g->dim_locs = arena_alloc(c->arena, (size_t)((dims ? dims->len : 0) + 1) * sizeof *g->dim_locs);
    for (int i = 0; dims && i < dims->len; i++)
        g->dim_locs[i] = ((Expr *)VEC_AT(dims, i))->loc;
    c->graph = g;
    lower_stmts(c, c->model->body);
    if (g->outputs->len == 0) {
        error_at(c, c->model->name->loc, "model '%s' has no output; add 'output NAME' or 'minimize NAME'",
                 c->model->name->text);
        return false;
    }
    return ir_verify(c, "lower");
}
