/* resolve.c: names -> symbols, calls -> ops, arguments -> parameters.
 *
 * Requires: the AST of one model (parse).
 * Produces: every E_NAME has its Symbol; every E_CALL its OpInfo, its
 * flags (method, in-place) and `bound`, one argument per op parameter in
 * the order of the op's signature; every call knows whether an autocast
 * region encloses it.  Declarations get Symbols (types come later).
 *
 * Methods that are no op of their own become what they mean here:
 * x.float() and the other dtype methods an explicit E_CAST, x.contiguous()
 * x, x.size(d) an E_DIM_OF, x.T a call of t.  A list literal given to a
 * Tensor... or int... parameter is spread over it (bind_args).
 *
 * Scoping is Python's: an assignment makes a new symbol that shadows the
 * old one from the next statement on, and autocast blocks do not open a
 * scope (like `with`).  Dims of the model header are symbols too, usable
 * only inside shapes.
 */
#include "front.h"

#include <string.h>

typedef struct Scope {
    Vec *symbols;   /* visible symbols, later ones shadow earlier ones */
    StrMap *latest; /* name -> the symbol it names now */
} Scope;

/* The autocast state at a point of the program. */
typedef struct Region {
    bool enabled;
    DType low; /* DT_NONE: the target's low dtype */
} Region;

static Symbol *lookup(Scope *s, const char *name)
{
    return strmap_get(s->latest, name);
}

/* A name, or a name followed by .T (any number of times). */
static bool name_resolves(Ctx *c, Scope *s, const char *text)
{
    size_t n = strlen(text);
    if (lookup(s, text))
        return true;
    return n > 2 && strcmp(text + n - 2, ".T") == 0 && name_resolves(c, s, arena_strndup(c->arena, text, n - 2));
}

static void error_unknown_name(Ctx *c, Scope *s, Expr *e)
{
    /* the most recent names are the likeliest typos; looking at a bounded
     * number keeps a model full of errors from taking quadratic time */
    int n = s->symbols->len < 1000 ? s->symbols->len : 1000;
    const char **names = arena_alloc(c->arena, (size_t)(n + 1) * sizeof *names);
    for (int i = 0; i < n; i++)
        names[i] = ((Symbol *)VEC_AT(s->symbols, s->symbols->len - 1 - i))->name;
    const char *hint = closest_name(e->text, names, n);
    /* a block's local is renamed layer1.0:h when inlined: say h, as written */
    const char *colon = strrchr(e->text, ':'), *text = colon ? colon + 1 : e->text;
    if (hint && strrchr(hint, ':'))
        hint = strrchr(hint, ':') + 1;
    if (hint)
        error_at(c, e->loc, "'%s' is not defined; did you mean '%s'?", text, hint);
    else
        error_at(c, e->loc, "'%s' is not defined", text);
}

static void error_unknown_op(Ctx *c, Expr *call, const char *name)
{
    const char *names[OP_COUNT];
    int n = 0;
    for (int i = 0; i < OP_COUNT; i++)
        if (!(c->ops[i].flags & OPF_INTERNAL))
            names[n++] = c->ops[i].name;
    const char *hint = closest_name(name, names, n);
    if (hint)
        error_at(c, call->name_loc, "unknown op '%s'; did you mean '%s'?", name, hint);
    else
        error_at(c, call->name_loc, "unknown op '%s'", name);
}

static Symbol *new_symbol(Ctx *c, Scope *s, SymbolKind kind, const char *name, Loc loc)
{
    Symbol *sym = arena_alloc(c->arena, sizeof *sym);
    sym->kind = kind;
    sym->name = name;
    sym->loc = loc;
    vec_push(c, s->symbols, sym);
    vec_push(c, c->symbols, sym);
    strmap_put(s->latest, name, sym);
    return sym;
}

static void resolve_expr(Ctx *c, Scope *s, Region r, Expr *e);

/* Module prefixes a PyTorch user may write out of habit: torch.relu(x),
 * F.relu(x), torch.nn.functional.relu(x) all mean relu(x). */
bool is_torch_namespace(const char *name)
{
    static const char *const spaces[] = {"torch", "F", "torch.nn.functional", "nn.functional"};
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
        if (strcmp(name, spaces[i]) == 0)
            return true;
    return false;
}

/* A receiver that is such a prefix, and not a name of the model's. */
static bool is_namespace(Scope *s, Expr *e)
{
    return e->kind == E_NAME && !lookup(s, e->text) && is_torch_namespace(e->text);
}

/* Whether parameter k of op is one of a Tensor... or int... group: the
 * signature parser repeats its name. */
static bool is_vararg(const OpInfo *op, int k)
{
    return op_param_index(op, op->params[k].name) != k ||
           (k + 1 < op->nparams && strcmp(op->params[k + 1].name, op->params[k].name) == 0);
}

/* A list literal as an argument.  Given to a Tensor... or int... group it
 * is the group's entries (cat([a, b]), reshape(x, (2, -1))): they are
 * spread over its parameters, in order, and the list is replaced by its
 * items in call->list.  Given to an int[] parameter it stays a list, read
 * entry by entry by the op's type rule (sum's dims, roll's shifts, a pad's
 * sides, interpolate's sizes); one entry is that integer, and so is a
 * list of equal integers given to a parameter that reads one integer as
 * that value for every entry (the window parameters kernel_size, stride,
 * padding, dilation, output_padding, output_size, and interpolate's size). */
static bool one_for_every(const char *name)
{
    static const char *const names[] = {"kernel_size", "stride", "padding", "dilation", "output_padding",
                                        "output_size", "size"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* An integer literal, or the negation of one (-2 arrives as neg(2)). */
static bool literal_int(Ctx *c, Expr *e, int64_t *v)
{
    bool neg = e->kind == E_CALL && e->is_operator && e->callee && strcmp(e->callee, "neg") == 0 && e->list &&
               e->list->len == 1;
    Expr *lit = neg ? VEC_AT(e->list, 0) : e;
    if (lit->kind != E_NUMBER || lit->is_float || !int_literal(c, lit, v))
        return false;
    if (neg)
        *v = -*v;
    return true;
}

static Expr *list_arg(Ctx *c, Expr *call, Expr *a, int k, int *i)
{
    const OpInfo *op = call->op;
    Expr *list = a->kind == E_KWARG ? a->operand : a;
    if (list->kind != E_LIST)
        return a;
    const OpParam *prm = &op->params[k];
    if (is_vararg(op, k)) {
        int room = 0;
        while (k + room < op->nparams && strcmp(op->params[k + room].name, prm->name) == 0)
            room++;
        if (list->list->len > room) {
            error_at(c, list->loc, "%s() takes at most %d entries in '%s', but %d were given", op->name, room,
                     prm->name, list->list->len);
            return NULL;
        }
        if (list->list->len == 0) {
            error_at(c, list->loc, "%s() needs at least one entry in '%s'", op->name, prm->name);
            return NULL;
        }
        if (a->kind == E_KWARG) {
            /* flip(x, dims=(0, 2)), pad(x, pad=[1, 1]): the entries bound
             * to the group's parameters, as if written in place */
            for (int m = 0; m < list->list->len; m++) {
                if (call->bound[k + m]) {
                    error_at(c, a->name_loc, "%s() got '%s' twice", op->name, prm->name);
                    return NULL;
                }
                call->bound[k + m] = VEC_AT(list->list, m);
            }
            return a;
        }
        /* splice the items in place of the list, so binding goes on as if
         * they were written one by one */
        Vec *args = vec_new(c);
        for (int j = 0; j < call->list->len; j++) {
            Expr *item = VEC_AT(call->list, j);
            if (j != *i) {
                vec_push(c, args, item);
                continue;
            }
            for (int m = 0; m < list->list->len; m++)
                vec_push(c, args, VEC_AT(list->list, m));
        }
        call->list = args;
        return VEC_AT(call->list, *i);
    }
    if (prm->kind != ARG_INT_LIST || op->id == OP_SPLIT || op->id == OP_FULL)
        return a; /* split and full (its shape) read their lists themselves; any other kind: an error in typecheck */
    if (list->list->len == 0) {
        error_at(c, list->loc, "'%s' needs at least one entry", prm->name);
        return NULL;
    }
    int64_t first = 0;
    bool equal = true;
    for (int m = 0; m < list->list->len; m++) {
        Expr *item = VEC_AT(list->list, m);
        if (item->kind == E_NUMBER && item->is_float) {
            error_at(c, item->loc, "'%s' takes integers", prm->name);
            return NULL;
        }
        int64_t v;
        if (!literal_int(c, item, &v)) {
            equal = false; /* arithmetic or a size: typecheck folds it */
            continue;
        }
        if (m == 0)
            first = v;
        else if (v != first)
            equal = false;
    }
    if (list->list->len > 1 && !(equal && one_for_every(prm->name)))
        return a; /* typecheck reads it entry by entry */
    Expr *one = VEC_AT(list->list, 0);
    if (a->kind == E_KWARG) {
        a->operand = one;
        return a;
    }
    return one;
}

/* Bind positional and keyword arguments to the op's parameters, as Python
 * binds them to a signature. */
static void bind_args(Ctx *c, Expr *call)
{
    /* a positional list counts its entries: spread over a Tensor... group
     * (lstm's params) it may need a wider OpInfo; anywhere else the extra
     * copies only default to None */
    int npositional = 0;
    for (int i = 0; i < call->list->len; i++) {
        Expr *a = VEC_AT(call->list, i);
        npositional += a->kind == E_LIST ? (a->list->len > 1 ? a->list->len : 1) : a->kind != E_KWARG;
    }
    call->op = op_for_call(c, call->op, npositional);
    const OpInfo *op = call->op;
    call->bound = arena_alloc(c->arena, (size_t)(op->nparams + 1) * sizeof(Expr *));
    int npos = 0;
    bool seen_keyword = false;
    for (int i = 0; i < call->list->len; i++) {
        Expr *a = VEC_AT(call->list, i);
        Expr *list = a->kind == E_KWARG ? a->operand : a;
        if (list->kind == E_LIST) {
            int k = a->kind == E_KWARG ? op_param_index(op, a->text) : npos;
            if (k >= 0 && k < op->nparams && !(a->kind != E_KWARG && op->params[k].keyword_only)) {
                Expr *r = list_arg(c, call, a, k, &i);
                if (a->kind == E_KWARG && is_vararg(op, k)) {
                    if (!r && !call->bound[k])
                        call->bound[k] = list; /* reported; bound, so it is not reported missing */
                    seen_keyword = true; /* its entries are bound */
                    continue;
                }
                a = r ? r : a; /* reported; bound as written, so nothing is reported missing */
            }
        }
        if (a->kind == E_KWARG) {
            seen_keyword = true;
            int k = op_param_index(op, a->text);
            if (k < 0 && strcmp(a->text, "out") == 0) {
                /* out=d: PyTorch's destination argument, on every op */
                if (a->operand->kind != E_NAME)
                    error_at(c, a->operand->loc, "out= takes the name of the tensor to write into");
                call->out_arg = a->operand;
                continue;
            }
            if (k < 0) {
                error_at(c, a->name_loc, "%s() has no parameter '%s'; its signature is %s(%s)",
                         op->name, a->text, op->name, op->signature);
            } else if (call->bound[k]) {
                error_at(c, a->name_loc, "%s() got '%s' twice", op->name, a->text);
            } else if (k == 0 && call->is_method) {
                error_at(c, a->name_loc, "'%s' is the tensor the method is called on", a->text);
            } else {
                call->bound[k] = a->operand;
            }
            continue;
        }
        if (seen_keyword) {
            error_at(c, a->loc, "positional argument after a keyword argument");
            continue;
        }
        if (npos >= op->nparams || op->params[npos].keyword_only) {
            error_at(c, a->loc, "%s() takes %d positional argument%s but more were given; its signature is %s(%s)",
                     op->name, npos, npos == 1 ? "" : "s", op->name, op->signature);
            npos++;
            continue;
        }
        call->bound[npos++] = a;
    }
    for (int k = 0; k < op->nparams; k++) {
        if (!call->bound[k] && !op->params[k].default_text)
            error_at(c, call->loc, "%s() is missing its argument '%s'; its signature is %s(%s)",
                     op->name, op->params[k].name, op->name, op->signature);
    }
}

/* Methods that are no op of their own: x.float(), x.half(),
 * x.bfloat16(), x.double() and x.to(dtype) become an explicit cast (kept
 * even where x already has the dtype, since autocast may change x's);
 * x.contiguous() is x (every tensor of ampc is contiguous); x.size(d) is a
 * dimension, like x.shape[d].  Returns false when the call is none of these. */
static bool method_sugar(Ctx *c, Scope *s, Region r, Expr *call)
{
    static const struct {
        const char *name;
        DType to;
    } casts[] = {{"float", DT_F32}, {"half", DT_F16}, {"bfloat16", DT_BF16}, {"double", DT_F64}, {"to", DT_NONE}};
    if (!call->is_method || is_namespace(s, VEC_AT(call->list, 0)))
        return false;
    Expr *x = VEC_AT(call->list, 0);
    int nargs = call->list->len - 1;
    Expr *a1 = nargs >= 1 ? VEC_AT(call->list, 1) : NULL;
    if (strcmp(call->callee, "contiguous") == 0 || strcmp(call->callee, "size") == 0) {
        resolve_expr(c, s, r, x);
        bool size = call->callee[0] == 's';
        if (size && (nargs != 1 || (a1->kind == E_KWARG && strcmp(a1->text, "dim") != 0))) {
            error_at(c, call->loc, "size() takes one dimension here, as x.size(1); the whole size is a tuple, "
                     "which the language has no value for");
            return true;
        }
        if (!size && nargs != 0) {
            error_at(c, call->loc, "contiguous() takes no arguments here");
            return true;
        }
        if (!size) {
            Loc loc = call->loc;
            *call = *x; /* the tensor itself */
            call->loc = loc;
            return true;
        }
        call->kind = E_DIM_OF;
        call->operand = x;
        call->list = vec_push(c, vec_new(c), a1->kind == E_KWARG ? a1->operand : a1);
        resolve_expr(c, s, r, VEC_AT(call->list, 0));
        return true;
    }
    for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++) {
        if (strcmp(call->callee, casts[i].name) != 0)
            continue;
        DType to = casts[i].to;
        if (to == DT_NONE) {
            Expr *d = nargs == 1 ? (a1->kind == E_KWARG && strcmp(a1->text, "dtype") == 0 ? a1->operand : a1) : NULL;
            if (!d || d->kind != E_DTYPE) {
                error_at(c, call->loc, "to() takes a dtype here, as x.to(f32) or x.to(dtype=bf16)");
                return true;
            }
            to = d->dtype;
        } else if (nargs != 0) {
            error_at(c, call->loc, "%s() takes no arguments", call->callee);
            return true;
        }
        resolve_expr(c, s, r, x);
        const char *reason = arena_printf(c->arena, "%s: the model's explicit cast", loc_text(c, call->loc));
        Loc loc = call->loc;
        *call = *new_cast(c, x, to, reason);
        call->loc = loc;
        call->type = (Type){0};
        return true;
    }
    return false;
}

/* A name of one of the model's dimensions, bound to it. */
static bool is_dim_name(Scope *s, Expr *v)
{
    return v->kind == E_NAME && (v->sym = lookup(s, v->text)) && v->sym->kind == SYM_DIM;
}

static void resolve_call(Ctx *c, Scope *s, Region r, Expr *call)
{
    if (method_sugar(c, s, r, call))
        return;
    if (call->is_method && is_namespace(s, VEC_AT(call->list, 0))) {
        /* torch.relu(x): drop the module, keep a plain call */
        Vec *args = vec_new(c);
        for (int i = 1; i < call->list->len; i++)
            vec_push(c, args, VEC_AT(call->list, i));
        call->list = args;
        call->is_method = false;
    }
    for (int i = 0; i < call->list->len; i++) {
        Expr *a = VEC_AT(call->list, i);
        Expr *v = a->kind == E_KWARG ? a->operand : a;
        /* a dimension of the model as a size argument (x.expand(B, -1),
         * zeros(B, 4)), alone or in a list (full([B, 2], v),
         * x.view((B, -1))): the type rules that take sizes accept it */
        if (!call->is_operator && !(i == 0 && call->is_method) && is_dim_name(s, v))
            continue;
        if (!call->is_operator && v->kind == E_LIST) {
            for (int m = 0; m < v->list->len; m++)
                if (!is_dim_name(s, VEC_AT(v->list, m)))
                    resolve_expr(c, s, r, VEC_AT(v->list, m));
            continue;
        }
        resolve_expr(c, s, r, v);
    }

    const char *name = call->callee;
    const OpInfo *op = op_lookup(c, name);
    size_t len = strlen(name);
    if (!op && len > 1 && name[len - 1] == '_') {
        /* a.add_(b): the in-place variant of add */
        const char *base = arena_strndup(c->arena, name, len - 1);
        op = op_lookup(c, base);
        if (op) {
            call->is_inplace = true;
            name = base;
        }
    }
    if (!op && call->is_operator && (strcmp(name, "floor_divide") == 0 || strcmp(name, "remainder") == 0)) {
        /* // and % of compile-time integers, such as x.size(1) // 2,
         * fold in typecheck; of tensors they are an error there */
        return;
    }
    if (!op) {
        error_unknown_op(c, call, name);
        return;
    }
    call->op = op;
    call->autocast_on = r.enabled;
    call->autocast_low = r.low;
    bind_args(c, call);
}

static void resolve_expr(Ctx *c, Scope *s, Region r, Expr *e)
{
    switch (e->kind) {
    case E_NAME: {
        e->sym = lookup(s, e->text);
        size_t n = strlen(e->text);
        if (!e->sym && n > 2 && strcmp(e->text + n - 2, ".T") == 0 &&
            name_resolves(c, s, arena_strndup(c->arena, e->text, n - 2))) {
            /* x.T: the dims reversed (t() for a matrix), a call of t */
            Expr *x = arena_alloc(c->arena, sizeof *x);
            *x = *e;
            x->text = arena_strndup(c->arena, e->text, n - 2);
            x->loc.end -= 2;
            e->kind = E_CALL;
            e->callee = "t";
            e->text = "T";
            e->is_method = true;
            e->name_loc = e->loc;
            e->name_loc.begin = e->loc.end - 1;
            e->list = vec_push(c, vec_new(c), x);
            resolve_call(c, s, r, e);
            return;
        }
        if (!e->sym)
            error_unknown_name(c, s, e);
        else if (e->sym->kind == SYM_DIM)
            error_at(c, e->loc, "'%s' is a dimension of the model, not a tensor; dims can only appear in shapes", e->text);
        return;
    }
    case E_LIST:
        for (int i = 0; i < e->list->len; i++)
            resolve_expr(c, s, r, VEC_AT(e->list, i));
        return;
    case E_SLICE:
        if (!e->boolean)
            error_at(c, e->loc, "a slice start:stop:step is only a subscript, as in x[:, 1:3]");
        else
            error_at(c, e->loc, "'...' is only a subscript, as in x[..., 0]");
        return;
    case E_SUBSCRIPT:
        resolve_expr(c, s, r, e->operand);
        e->autocast_on = r.enabled;
        e->autocast_low = r.low;
        for (int i = 0; i < e->list->len; i++) {
            Expr *sub = VEC_AT(e->list, i);
            if (sub->kind == E_NAME && strcmp(sub->text, "None") == 0 && !lookup(s, "None"))
                continue; /* a new axis */
            if (sub->kind != E_SLICE) {
                resolve_expr(c, s, r, sub);
                continue;
            }
            for (int k = 0; k < 3; k++)
                if (VEC_AT(sub->list, k))
                    resolve_expr(c, s, r, VEC_AT(sub->list, k));
        }
        return;
    case E_DIM_OF:
        resolve_expr(c, s, r, e->operand);
        resolve_expr(c, s, r, VEC_AT(e->list, 0));
        return;
    case E_CALL:
        resolve_call(c, s, r, e);
        return;
    case E_KWARG:
        error_at(c, e->name_loc, "keyword argument '%s=' outside a call", e->text);
        return;
    case E_NUMBER:
    case E_STRING:
    case E_BOOL:
    case E_DTYPE:
        return;
    case E_CAST:
    case E_TYPE:
        ICE("unexpected expression kind %d in resolve", e->kind);
    }
}

/* Shape expressions may name the model's dims and nothing else. */
static void resolve_dim_expr(Ctx *c, Scope *s, Expr *e)
{
    if (e->kind == E_NAME) {
        e->sym = lookup(s, e->text);
        if (!e->sym || e->sym->kind != SYM_DIM) {
            error_at(c, e->loc, "'%s' is not a dimension of the model; declare it in the model's header, as in 'model M(%s)'",
                     e->text, e->text);
            e->sym = NULL;
        }
    } else if (e->kind == E_CALL && e->is_operator) {
        for (int i = 0; i < e->list->len; i++)
            resolve_dim_expr(c, s, VEC_AT(e->list, i));
    }
}

static void resolve_autocast_options(Ctx *c, Stmt *st, Region *r)
{
    r->enabled = true;
    if (!st->options)
        return;
    for (int i = 0; i < st->options->len; i++) {
        Expr *o = VEC_AT(st->options, i);
        if (o->kind != E_KWARG) {
            error_at(c, o->loc, "autocast options are written as enabled=true|false and dtype=bf16|f16");
            continue;
        }
        if (strcmp(o->text, "enabled") == 0) {
            if (o->operand->kind != E_BOOL)
                error_at(c, o->operand->loc, "enabled= takes true or false");
            else
                r->enabled = o->operand->boolean;
        } else if (strcmp(o->text, "dtype") == 0) {
            Expr *v = o->operand;
            if (v->kind != E_DTYPE || (v->dtype != DT_BF16 && v->dtype != DT_F16))
                error_at(c, v->loc, "autocast dtype= takes bf16 or f16");
            else
                r->low = v->dtype;
        } else {
            error_at(c, o->name_loc, "autocast has no option '%s'; it takes enabled= and dtype=", o->text);
        }
    }
}

static void resolve_stmts(Ctx *c, Scope *s, Region r, Vec *stmts)
{
    for (int i = 0; i < stmts->len; i++) {
        Stmt *st = VEC_AT(stmts, i);
        c->instance = st->instance;
        switch (st->kind) {
        case S_INPUT:
        case S_PARAM:
        case S_BUFFER: {
            Symbol *old = lookup(s, st->name->text);
            if (old) {
                error_at(c, st->name->loc, "'%s' is already declared", st->name->text);
                note_at(c, old->loc, "'%s' was declared here", old->name);
                break;
            }
            for (int d = 0; d < st->type->list->len; d++)
                resolve_dim_expr(c, s, VEC_AT(st->type->list, d));
            SymbolKind k = st->kind == S_INPUT ? SYM_INPUT : st->kind == S_PARAM ? SYM_PARAM : SYM_BUFFER;
            st->sym = new_symbol(c, s, k, st->name->text, st->name->loc);
            st->sym->decl = st;
            break;
        }
        case S_ASSIGN:
            resolve_expr(c, s, r, st->value);
            if (st->value->kind == E_CALL && st->value->out_arg)
                error_at(c, st->value->out_arg->loc, "out= writes into its destination; write the call as a statement, "
                         "without '=': %s(..., out=%s)", st->value->callee, st->value->out_arg->text);
            if (st->value->kind == E_CALL && st->value->is_inplace)
                error_at(c, st->value->name_loc, "'%s_' writes into '%s' in place; write it as a statement, without '='",
                         st->value->op ? st->value->op->name : st->value->callee,
                         ((Expr *)VEC_AT(st->value->list, 0))->text);
            for (int t = 0; t < st->targets->len; t++) {
                Expr *target = VEC_AT(st->targets, t);
                Symbol *old = lookup(s, target->text);
                if (old && old->kind != SYM_LOCAL) {
                    error_at(c, target->loc, "cannot assign to %s '%s'", old->kind == SYM_DIM ? "dimension" :
                             old->kind == SYM_INPUT ? "input" : old->kind == SYM_PARAM ? "parameter" : "buffer",
                             target->text);
                    note_at(c, old->loc, "'%s' was declared here", old->name);
                    continue;
                }
                target->sym = new_symbol(c, s, SYM_LOCAL, target->text, target->loc);
                target->sym->value = st->value;
            }
            break;
        case S_EXPR: {
            int errors = c->nerrors;
            resolve_expr(c, s, r, st->value);
            Expr *call = st->value;
            if (c->nerrors != errors)
                break;
            Expr *dest = call->kind != E_CALL ? NULL
                       : call->is_inplace     ? VEC_AT(call->list, 0)
                                              : call->out_arg;
            if (!dest) {
                error_at(c, call->loc, call->kind == E_CALL ? "the result of '%s' is not used; assign it to a name"
                                                           : "this expression does nothing; assign it to a name",
                         call->callee);
                break;
            }
            /* a.add_(b) and add(a, b, out=d) write their destination: in
             * SSA terms they bind its name to a new value (stored in the
             * destination's dtype, checked by typecheck) */
            if (dest->kind != E_NAME || !dest->sym) {
                error_at(c, dest->loc, "an in-place op needs a named tensor to write into");
                break;
            }
            if (dest->sym->kind == SYM_PARAM || dest->sym->kind == SYM_BUFFER) {
                error_at(c, dest->loc, "'%s' is a %s: the model cannot modify its state in place", dest->text,
                         dest->sym->kind == SYM_PARAM ? "parameter" : "buffer");
                note_at(c, dest->sym->loc, "'%s' was declared here", dest->sym->name);
                break;
            }
            st->name = dest;
            Expr *target = arena_alloc(c->arena, sizeof *target);
            *target = *dest;
            target->sym = new_symbol(c, s, SYM_LOCAL, dest->sym->name, dest->loc);
            target->sym->value = call;
            st->targets = vec_push(c, vec_new(c), target);
            break;
        }
        case S_OUTPUT:
            for (int k = 0; k < st->exprs->len; k++) {
                Expr *e = VEC_AT(st->exprs, k);
                if (e->kind != E_NAME) {
                    error_at(c, e->loc, "output takes names; assign the expression to a name first");
                    continue;
                }
                resolve_expr(c, s, r, e);
            }
            break;
        case S_MINIMIZE:
            if (st->value->kind != E_NAME) {
                error_at(c, st->value->loc, "minimize takes the name of the loss; assign the expression to a name first");
                break;
            }
            resolve_expr(c, s, r, st->value);
            break;
        case S_AUTOCAST: {
            Region inner = r;
            resolve_autocast_options(c, st, &inner);
            resolve_stmts(c, s, inner, st->body);
            break;
        }
        case S_AUTOCAST_SWITCH:
            /* MegEngine's amp.enabled: in force for the rest of this
             * statement list (and what it contains), until switched again */
            resolve_autocast_options(c, st, &r);
            break;
        case S_TRAIN:
            break; /* settings, read by train.c */
        case S_MODULE:
        case S_RETURN:
        case S_FOR:
            ICE("statement kind %d survived expand", st->kind);
        }
    }
}

bool resolve(Ctx *c)
{
    Model *m = c->model;
    Scope s = {.symbols = vec_new(c), .latest = strmap_new(c->arena)};
    c->symbols = vec_new(c);
    for (int i = 0; i < m->dims->len; i++) {
        Expr *d = VEC_AT(m->dims, i);
        if (lookup(&s, d->text)) {
            error_at(c, d->loc, "dimension '%s' is listed twice", d->text);
            continue;
        }
        if (c->nsyms == MAX_SYMS) {
            error_at(c, d->loc, "a model can have at most %d symbolic dimensions", MAX_SYMS);
            break;
        }
        Symbol *sym = new_symbol(c, &s, SYM_DIM, d->text, d->loc);
        sym->index = c->nsyms;
        c->sym_names[c->nsyms++] = d->text;
    }
    Region top = {.enabled = c->opts->autocast_all, .low = DT_NONE};
    resolve_stmts(c, &s, top, m->body);
    c->instance = NULL;
    return c->nerrors == 0;
}
