/* resolve.c: names -> symbols, calls -> ops, arguments -> parameters.
 *
 * Requires: the AST of one model (parse).
 * Produces: every E_NAME has its Symbol; every E_CALL its OpInfo, its
 * flags (method, in-place) and `bound`, one argument per op parameter in
 * the order of the op's signature; every call knows whether an autocast
 * region encloses it.  Declarations get Symbols (types come later).
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

static void error_unknown_name(Ctx *c, Scope *s, Expr *e)
{
    /* the most recent names are the likeliest typos; looking at a bounded
     * number keeps a model full of errors from taking quadratic time */
    int n = s->symbols->len < 1000 ? s->symbols->len : 1000;
    const char **names = arena_alloc(c->arena, (size_t)(n + 1) * sizeof *names);
    for (int i = 0; i < n; i++)
        names[i] = ((Symbol *)VEC_AT(s->symbols, s->symbols->len - 1 - i))->name;
    const char *hint = closest_name(e->text, names, n);
    if (hint)
        error_at(c, e->loc, "'%s' is not defined; did you mean '%s'?", e->text, hint);
    else
        error_at(c, e->loc, "'%s' is not defined", e->text);
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

/* Bind positional and keyword arguments to the op's parameters, as Python
 * binds them to a signature. */
static void bind_args(Ctx *c, Expr *call)
{
    int npositional = 0;
    for (int i = 0; i < call->list->len; i++)
        npositional += ((Expr *)VEC_AT(call->list, i))->kind != E_KWARG;
    call->op = op_for_call(c, call->op, npositional);
    const OpInfo *op = call->op;
    call->bound = arena_alloc(c->arena, (size_t)(op->nparams + 1) * sizeof(Expr *));
    int npos = 0;
    bool seen_keyword = false;
    for (int i = 0; i < call->list->len; i++) {
        Expr *a = VEC_AT(call->list, i);
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

static void resolve_call(Ctx *c, Scope *s, Region r, Expr *call)
{
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
         * zeros(B, 4)): the type rules that take sizes accept it */
        if (!call->is_operator && !(i == 0 && call->is_method) && v->kind == E_NAME &&
            (v->sym = lookup(s, v->text)) && v->sym->kind == SYM_DIM)
            continue;
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
    case E_NAME:
        e->sym = lookup(s, e->text);
        if (!e->sym)
            error_unknown_name(c, s, e);
        else if (e->sym->kind == SYM_DIM)
            error_at(c, e->loc, "'%s' is a dimension of the model, not a tensor; dims can only appear in shapes", e->text);
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
    return c->nerrors == 0;
}
