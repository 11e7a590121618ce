/* expand.c: blocks, module instances and compile-time loops, inlined.
 *
 * Requires: the parsed model and the blocks of every file (parse.c).
 * Produces: c->model->body as one flat program of the statements resolve
 * knows (declarations, assignments, autocast regions and switches, output,
 * minimize): no S_MODULE, S_FOR or S_RETURN, no block calls, no `{i}`
 * templates.
 *
 * The naming is PyTorch's.  `module layer1.0 = BasicBlock(64, 64)` makes an
 * instance whose params and buffers are declared at once as
 * `layer1.0.conv1.weight` and so on, the state_dict keys of the same
 * module tree in PyTorch.  Each call `layer1.0(x)` inlines the block's
 * body: its int parameters become literals, its locals are renamed
 * `layer1.0:out` (a ':' no user name can contain, so they never clash),
 * and its `return` value becomes a fresh local the call is replaced by.
 * Two calls of one instance share its parameters, as in PyTorch.
 *
 * Blocks see only their own parameters: a block is a function, not a
 * closure.  Inlined statements keep their source locations, so errors
 * point into the block's body.
 */
#include "front.h"

#include <string.h>

enum {
    MAX_INTS = 64,
    MAX_NESTING = 64,          /* blocks within blocks: catches self-instantiation */
    MAX_STATEMENTS = 200000,   /* what one model may expand to */
    /* loop iterations one model may unroll, empty bodies included: the
     * statement limit alone let `for i in 0..2^62 { }` spin for ever */
    MAX_ITERATIONS = 200000,
};

/* An int[] parameter's value: widths = [64, 128]. */
typedef struct IntList {
    const char *name;
    const int64_t *values;
    int len;
} IntList;

typedef struct Instance {
    const char *path;   /* layer1.0 */
    Block *block;
    const char *int_names[MAX_INTS];
    int64_t int_values[MAX_INTS];
    int nints;
    IntList *lists; /* its int[] parameters (NULL when the block has none: instances are many) */
    int nlists;
    Vec *state_names;   /* its params and buffers, relative: conv1.weight */
    int calls;
    Loc model_loc;      /* the model's `module` statement it descends from (layer2.0's for layer2.0.conv1) */
    const char *root;   /* the path that statement declares (layer2.0) */
} Instance;

typedef struct Env {
    const char *prefix; /* NULL at model level */
    Instance *inst;     /* NULL at model level */
    const char *int_names[MAX_INTS];
    int64_t int_values[MAX_INTS];
    int nints;
    const IntList *lists; /* the instance's int[] parameters */
    int nlists;
} Env;

typedef struct Expander {
    Ctx *c;
    Vec *instances;
    StrMap *instance_by_path; /* path -> Instance: a loop may declare thousands */
    int nesting;
    int statements;
    int64_t iterations[2]; /* unrolled so far by the declaration and the code pass */
    int results; /* numbers the results of calls */
    bool too_big_reported;
} Expander;

static Expr *clone_expr(Expander *x, const Env *env, Expr *e, Vec *out);
static void expand_code(Expander *x, const Env *env, Vec *in, Vec *out, bool in_block);

static bool env_int(const Env *env, const char *name, int64_t *v)
{
    for (int i = env->nints - 1; i >= 0; i--) {
        if (strcmp(env->int_names[i], name) == 0) {
            *v = env->int_values[i];
            return true;
        }
    }
    return false;
}

static const IntList *env_list(const Env *env, const char *name)
{
    for (int i = env->nlists - 1; i >= 0; i--)
        if (strcmp(env->lists[i].name, name) == 0)
            return &env->lists[i];
    return NULL;
}

static bool env_push(Expander *x, Env *env, const char *name, int64_t v, Loc loc)
{
    if (env->nints == MAX_INTS) {
        error_at(x->c, loc, "more than %d compile-time integers in one scope", MAX_INTS);
        return false;
    }
    env->int_names[env->nints] = name;
    env->int_values[env->nints++] = v;
    return true;
}

/* layer{i}.{j} -> layer1.0 */
static const char *subst(Expander *x, const Env *env, const char *text, Loc loc)
{
    if (!strchr(text, '{'))
        return text;
    Buf b;
    buf_init(&b, x->c->arena);
    for (const char *s = text; *s;) {
        if (*s != '{') {
            char ch[2] = {*s++, 0};
            buf_puts(&b, ch);
            continue;
        }
        const char *close = strchr(s, '}');
        char *name = arena_strndup(x->c->arena, s + 1, (size_t)(close - s - 1));
        int64_t v;
        if (!env_int(env, name, &v)) {
            error_at(x->c, loc, "'{%s}' names no loop variable or int parameter here", name);
            return text;
        }
        buf_printf(&b, "%lld", (long long)v);
        s = close + 1;
    }
    return b.data;
}

static Expr *copy_expr(Expander *x, const Expr *e)
{
    Expr *n = arena_alloc(x->c->arena, sizeof *n);
    *n = *e;
    return n;
}

static Expr *number_expr(Expander *x, int64_t v, Loc loc)
{
    Expr *n = arena_alloc(x->c->arena, sizeof *n);
    n->kind = E_NUMBER;
    n->loc = loc;
    if (v >= 0) {
        n->text = arena_printf(x->c->arena, "%lld", (long long)v);
        return n;
    }
    /* -5 is neg(5), as the parser builds it */
    n->text = arena_printf(x->c->arena, "%llu", 0 - (unsigned long long)v);
    Expr *neg = arena_alloc(x->c->arena, sizeof *neg);
    neg->kind = E_CALL;
    neg->loc = loc;
    neg->name_loc = loc;
    neg->callee = "neg";
    neg->is_operator = true;
    neg->list = vec_push(x->c, vec_new(x->c), n);
    return neg;
}

static bool eval_int(Expander *x, const Env *env, Expr *e, int64_t *out);

/* widths[i] and len(widths) of an int[] parameter; false (not reported)
 * when e is neither, true with *ok false when it is one and is wrong. */
static bool list_int(Expander *x, const Env *env, Expr *e, int64_t *out, bool *ok)
{
    *ok = true;
    if (e->kind == E_SUBSCRIPT && e->operand->kind == E_NAME && env_list(env, e->operand->text)) {
        const IntList *l = env_list(env, e->operand->text);
        int64_t i;
        if (e->list->len != 1 || ((Expr *)VEC_AT(e->list, 0))->kind == E_SLICE) {
            error_at(x->c, e->loc, "a list of ints takes one index, as %s[0]", l->name);
            *ok = false;
        } else if (!eval_int(x, env, VEC_AT(e->list, 0), &i)) {
            *ok = false;
        } else if (i < -l->len || i >= l->len) {
            error_at(x->c, e->loc, "index %lld is out of range for '%s', a list of %d ints", (long long)i, l->name,
                     l->len);
            *ok = false;
        } else {
            *out = l->values[i < 0 ? i + l->len : i];
        }
        return true;
    }
    if (e->kind == E_CALL && !e->is_method && !e->is_operator && strcmp(e->callee, "len") == 0 &&
        e->list->len == 1 && ((Expr *)VEC_AT(e->list, 0))->kind == E_NAME &&
        env_list(env, ((Expr *)VEC_AT(e->list, 0))->text)) {
        *out = env_list(env, ((Expr *)VEC_AT(e->list, 0))->text)->len;
        return true;
    }
    return false;
}

/* A list of compile-time ints: a list literal of them, or an int[] parameter. */
static bool eval_int_list(Expander *x, const Env *env, Expr *e, const char *name, IntList *out)
{
    out->name = name;
    if (e->kind == E_NAME && env_list(env, e->text)) {
        *out = *env_list(env, e->text);
        out->name = name;
        return true;
    }
    if (e->kind != E_LIST) {
        error_at(x->c, e->loc, "'%s' takes a list of ints, as [64, 128]", name);
        return false;
    }
    int64_t *v = arena_alloc(x->c->arena, (size_t)(e->list->len + 1) * sizeof *v);
    for (int i = 0; i < e->list->len; i++)
        if (!eval_int(x, env, VEC_AT(e->list, i), &v[i]))
            return false;
    out->values = v;
    out->len = e->list->len;
    return true;
}

/* A compile-time integer: literals, loop variables, int parameters, an
 * entry or the length of an int[] parameter, and + - * / // % ** of those. */
static bool eval_int(Expander *x, const Env *env, Expr *e, int64_t *out)
{
    bool ok;
    if (e->kind == E_NUMBER && !e->is_float)
        return int_literal(x->c, e, out);
    if (e->kind == E_NAME && env_int(env, e->text, out))
        return true;
    if (list_int(x, env, e, out, &ok))
        return ok;
    if (e->kind == E_CALL && e->is_operator) {
        int64_t a, b = 0;
        if (!eval_int(x, env, VEC_AT(e->list, 0), &a) ||
            (e->list->len == 2 && !eval_int(x, env, VEC_AT(e->list, 1), &b)))
            return false;
        return int_operator(x->c, e, a, b, out);
    }
    error_at(x->c, e->loc, "expected a compile-time integer: a literal, a loop variable or an int parameter");
    return false;
}

/* An integer literal or its negation, as the parser and number_expr write them. */
static bool int_constant(const Expr *e)
{
    if (e->kind == E_CALL && e->is_operator && strcmp(e->callee, "neg") == 0 && e->list->len == 1)
        e = VEC_AT(e->list, 0);
    return e->kind == E_NUMBER && !e->is_float;
}

/* An operator whose operands are integer constants is folded into one, so
 * every later pass sees `padding=k // 2` as the literal it is. */
static Expr *fold_int(Expander *x, const Env *env, Expr *n)
{
    static const char *const arithmetic[] = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "neg"};
    if (n->kind != E_CALL || !n->is_operator)
        return n;
    bool known = false;
    for (size_t i = 0; i < sizeof arithmetic / sizeof arithmetic[0]; i++)
        known |= strcmp(n->callee, arithmetic[i]) == 0;
    if (!known)
        return n; /* 2 < 3, 1 & 2: typecheck says they need a tensor */
    for (int i = 0; i < n->list->len; i++)
        if (!int_constant(VEC_AT(n->list, i)))
            return n;
    if (strcmp(n->callee, "neg") == 0 && ((Expr *)VEC_AT(n->list, 0))->kind == E_NUMBER)
        return n; /* -5 is already in the form number_expr writes */
    int64_t v;
    if (!eval_int(x, env, n, &v))
        return n; /* reported */
    return number_expr(x, v, n->loc);
}

static bool is_state_name(const Env *env, const char *name)
{
    Vec *v = env->inst->state_names;
    for (int i = 0; i < v->len; i++)
        if (strcmp(VEC_AT(v, i), name) == 0)
            return true;
    return false;
}

/* What a name in a block's body becomes in the flat program. */
static const char *local_name(Expander *x, const Env *env, const char *name)
{
    if (!env->inst)
        return name;
    if (is_state_name(env, name))
        return arena_printf(x->c->arena, "%s.%s", env->prefix, name);
    size_t n = strlen(name);
    if (n > 2 && strcmp(name + n - 2, ".T") == 0) { /* weight.T: the parameter, transposed (resolve.c) */
        const char *stem = local_name(x, env, arena_strndup(x->c->arena, name, n - 2));
        return arena_printf(x->c->arena, "%s.T", stem);
    }
    return arena_printf(x->c->arena, "%s:%s", env->prefix, name);
}

static Instance *find_instance(Expander *x, const char *path)
{
    return strmap_get(x->instance_by_path, path);
}

static Block *find_block(Expander *x, Expr *name)
{
    Vec *blocks = x->c->blocks;
    for (int i = 0; i < blocks->len; i++) {
        Block *b = VEC_AT(blocks, i);
        if (strcmp(b->name->text, name->text) == 0)
            return b;
    }
    if (blocks->len == 0)
        error_at(x->c, name->loc, "no block named '%s'; define it with 'block %s(...) { ... }' or import the file that does",
                 name->text, name->text);
    else
        error_at(x->c, name->loc, "no block named '%s'%s", name->text,
                 blocks->len == 1 ? arena_printf(x->c->arena, "; the block defined is '%s'",
                                                 ((Block *)VEC_AT(blocks, 0))->name->text)
                                  : "");
    return NULL;
}

static Stmt *new_stmt(Expander *x, StmtKind kind, Loc loc)
{
    Stmt *s = arena_alloc(x->c->arena, sizeof *s);
    s->kind = kind;
    s->loc = loc;
    return s;
}

static void emit(Expander *x, Vec *out, Stmt *s)
{
    if (++x->statements > MAX_STATEMENTS) {
        if (!x->too_big_reported)
            error_at(x->c, s->loc, "the model expands to more than %d statements", MAX_STATEMENTS);
        x->too_big_reported = true;
        return;
    }
    vec_push(x->c, out, s);
}

static Expr *name_expr(Expander *x, const char *text, Loc loc)
{
    Expr *n = arena_alloc(x->c->arena, sizeof *n);
    n->kind = E_NAME;
    n->loc = loc;
    n->text = text;
    return n;
}

/* Which of block b's parameters argument a binds: the int ones (given by
 * `module`) or the tensor ones (given at each call), by keyword or by
 * position (*pos counts the positional ones so far).  Reports and returns
 * -1 when none; *value is the argument's value expression. */
static int bind_block_arg(Expander *x, Block *b, Expr *a, bool want_int, int *pos, Expr **value, const char *too_many)
{
    *value = a;
    if (a->kind == E_KWARG) {
        *value = a->operand;
        for (int j = 0; j < b->params->len; j++) {
            BlockParam *bp = VEC_AT(b->params, j);
            if (strcmp(bp->name->text, a->text) == 0 && bp->is_int == want_int)
                return j;
        }
        error_at(x->c, a->name_loc, "block '%s' has no %s parameter '%s'", b->name->text, want_int ? "int" : "tensor",
                 a->text);
        return -1;
    }
    for (int j = 0, seen = 0; j < b->params->len; j++) {
        if (((BlockParam *)VEC_AT(b->params, j))->is_int != want_int)
            continue;
        if (seen++ == *pos) {
            (*pos)++;
            return j;
        }
    }
    (*pos)++;
    error_at(x->c, a->loc, "%s", too_many);
    return -1;
}

/* Inline one call of an instance; returns the name its result is bound to,
 * or NULL when the block returns nothing. */
static Expr *expand_call(Expander *x, const Env *env, Instance *inst, Expr *call, Vec *out)
{
    Block *b = inst->block;
    if (x->nesting >= MAX_NESTING) {
        error_at(x->c, call->loc, "calls nest more than %d deep: does block '%s' call itself?", MAX_NESTING,
                 b->name->text);
        return NULL;
    }
    Env inner = {.prefix = inst->path, .inst = inst};
    for (int i = 0; i < inst->nints; i++)
        env_push(x, &inner, inst->int_names[i], inst->int_values[i], call->loc);
    inner.lists = inst->lists;
    inner.nlists = inst->nlists;

    /* tensor arguments, bound by position or keyword to the tensor parameters */
    int first = call->is_method ? 1 : 0; /* layer1.0(x): argument 0 is the receiver name */
    int ntensor = 0;
    for (int i = 0; i < b->params->len; i++)
        ntensor += !((BlockParam *)VEC_AT(b->params, i))->is_int;
    Expr **bound = arena_alloc(x->c->arena, (size_t)(b->params->len + 1) * sizeof *bound);
    int pos = 0;
    for (int i = first; i < call->list->len; i++) {
        Expr *a;
        int k = bind_block_arg(x, b, VEC_AT(call->list, i), false, &pos, &a,
                               arena_printf(x->c->arena, "%s(...) takes %d tensor argument%s; its int parameters were given by 'module'",
                                            inst->path, ntensor, ntensor == 1 ? "" : "s"));
        if (k < 0)
            continue;
        if (bound[k]) {
            error_at(x->c, a->loc, "tensor parameter '%s' of block '%s' is given twice",
                     ((BlockParam *)VEC_AT(b->params, k))->name->text, b->name->text);
            continue;
        }
        bound[k] = clone_expr(x, env, a, out);
    }
    for (int j = 0; j < b->params->len; j++) {
        BlockParam *bp = VEC_AT(b->params, j);
        if (bp->is_int)
            continue;
        if (!bound[j]) {
            error_at(x->c, call->loc, "%s(...) is missing tensor argument '%s' of block '%s'", inst->path,
                     bp->name->text, b->name->text);
            return NULL;
        }
        Stmt *s = new_stmt(x, S_ASSIGN, call->loc);
        s->targets = vec_push(x->c, vec_new(x->c), name_expr(x, local_name(x, &inner, bp->name->text), bp->name->loc));
        s->value = bound[j];
        emit(x, out, s);
    }

    /* the body, under the block's decorators */
    Vec *body = vec_new(x->c);
    x->nesting++;
    inst->calls++;
    int result_id = ++x->results;
    Env call_env = inner;
    expand_code(x, &call_env, b->body, body, true);
    x->nesting--;
    Expr *result = NULL;
    for (int i = 0; i < body->len; i++) {
        Stmt *s = VEC_AT(body, i);
        if (s->kind == S_RETURN) {
            result = name_expr(x, arena_printf(x->c->arena, "%s:result%d", inst->path, result_id), s->loc);
            s->kind = S_ASSIGN;
            s->targets = vec_push(x->c, vec_new(x->c), result);
        }
    }
    if (b->decorators) {
        for (int i = b->decorators->len - 1; i >= 0; i--) {
            Decorator *d = VEC_AT(b->decorators, i);
            Stmt *region = new_stmt(x, S_AUTOCAST, d->loc);
            region->options = d->options;
            region->keyword_loc = d->loc;
            region->body = body;
            body = vec_push(x->c, vec_new(x->c), region);
        }
    }
    for (int i = 0; i < body->len; i++)
        emit(x, out, VEC_AT(body, i));
    return result ? name_expr(x, result->text, call->loc) : NULL;
}

/* The instance a call names, if it names one: conv1(x), layer1.0(x), layer1.{i}(x). */
static Instance *called_instance(Expander *x, const Env *env, Expr *call)
{
    if (call->kind != E_CALL || call->is_operator)
        return NULL;
    const char *path;
    if (call->is_method) {
        Expr *recv = VEC_AT(call->list, 0);
        if (recv->kind != E_NAME)
            return NULL;
        path = arena_printf(x->c->arena, "%s.%s", subst(x, env, recv->text, recv->loc),
                            subst(x, env, call->callee, call->name_loc));
    } else {
        path = call->callee;
    }
    if (env->prefix)
        path = arena_printf(x->c->arena, "%s.%s", env->prefix, path);
    return find_instance(x, path);
}

static Expr *clone_expr(Expander *x, const Env *env, Expr *e, Vec *out)
{
    Expr *n = copy_expr(x, e);
    switch (e->kind) {
    case E_NAME: {
        n->text = subst(x, env, e->text, e->loc);
        int64_t v;
        if (env_int(env, n->text, &v))
            return number_expr(x, v, e->loc);
        const IntList *l = env_list(env, n->text);
        if (l) { /* the whole list: an argument, as reshape(x, sizes) */
            n->kind = E_LIST;
            n->list = vec_new(x->c);
            for (int i = 0; i < l->len; i++)
                vec_push(x->c, n->list, number_expr(x, l->values[i], e->loc));
            return n;
        }
        if (env->inst && !is_torch_namespace(n->text))
            n->text = local_name(x, env, n->text);
        return n;
    }
    case E_CALL: {
        int64_t v;
        bool ok;
        if (list_int(x, env, e, &v, &ok)) /* len(widths) */
            return ok ? number_expr(x, v, e->loc) : n;
        Instance *inst = called_instance(x, env, e);
        if (inst) {
            Expr *r = expand_call(x, env, inst, e, out);
            if (!r) {
                if (x->c->nerrors == 0)
                    error_at(x->c, e->loc, "block '%s' returns nothing, so its call has no value",
                             inst->block->name->text);
                return name_expr(x, "<error>", e->loc);
            }
            return r;
        }
        if (strchr(e->callee, '{')) {
            error_at(x->c, e->name_loc, "'%s' names no module instance", subst(x, env, e->callee, e->name_loc));
            return n;
        }
        n->list = vec_new(x->c);
        for (int i = 0; i < e->list->len; i++)
            vec_push(x->c, n->list, clone_expr(x, env, VEC_AT(e->list, i), out));
        return fold_int(x, env, n);
    }
    case E_SUBSCRIPT: {
        int64_t v;
        bool ok;
        if (list_int(x, env, e, &v, &ok)) /* widths[0] */
            return ok ? number_expr(x, v, e->loc) : n;
    }
        __attribute__((fallthrough));
    case E_DIM_OF:
        n->operand = clone_expr(x, env, e->operand, out);
        __attribute__((fallthrough)); /* and the subscripts */
    case E_LIST:
    case E_SLICE:
        n->list = vec_new(x->c);
        for (int i = 0; i < e->list->len; i++) {
            Expr *item = VEC_AT(e->list, i);
            vec_push(x->c, n->list, item ? clone_expr(x, env, item, out) : NULL);
        }
        return n;
    case E_KWARG:
        n->operand = clone_expr(x, env, e->operand, out);
        return n;
    case E_TYPE:
        n->list = vec_new(x->c);
        for (int i = 0; i < e->list->len; i++)
            vec_push(x->c, n->list, clone_expr(x, env, VEC_AT(e->list, i), out));
        return n;
    default:
        return n;
    }
}

static Vec *clone_list(Expander *x, const Env *env, Vec *v, Vec *out)
{
    if (!v)
        return NULL;
    Vec *r = vec_new(x->c);
    for (int i = 0; i < v->len; i++)
        vec_push(x->c, r, clone_expr(x, env, VEC_AT(v, i), out));
    return r;
}

static void expand_decls(Expander *x, const Env *env, Vec *in, Vec *out);

/* for i in lo..hi { body }: the body once per i, with i bound, for its
 * declarations (when a module is declared) or its code. */
static void unroll(Expander *x, const Env *env, Stmt *st, Vec *out, bool decls, bool in_block)
{
    int64_t lo, hi;
    if (!eval_int(x, env, st->lo, &lo) || !eval_int(x, env, st->hi, &hi))
        return;
    /* counted before unrolling, so a huge range fails at once; the two
     * passes each unroll every loop, so each has its own count */
    int64_t *used = &x->iterations[decls];
    if (hi > lo) {
        uint64_t n = (uint64_t)hi - (uint64_t)lo;
        if (n > (uint64_t)(MAX_ITERATIONS - *used)) {
            if (!x->too_big_reported)
                error_at(x->c, loc_merge(st->lo->loc, st->hi->loc),
                         "this loop runs %llu times, which takes the model past %d unrolled loop iterations",
                         (unsigned long long)n, MAX_ITERATIONS);
            x->too_big_reported = true;
            return;
        }
        *used += (int64_t)n;
    }
    for (int64_t k = lo; k < hi && !x->too_big_reported; k++) {
        Env inner = *env;
        if (!env_push(x, &inner, st->name->text, k, st->name->loc))
            return;
        if (decls)
            expand_decls(x, &inner, st->body, out);
        else
            expand_code(x, &inner, st->body, out, in_block);
    }
}

/* module layer1.0 = BasicBlock(64, 64, stride=2) */
static void declare_instance(Expander *x, const Env *env, Stmt *st, Vec *out)
{
    const char *rel = subst(x, env, st->name->text, st->name->loc);
    const char *path = env->prefix ? arena_printf(x->c->arena, "%s.%s", env->prefix, rel) : rel;
    Instance *old = find_instance(x, path);
    if (old) {
        error_at(x->c, st->name->loc, "module '%s' is already declared", path);
        return;
    }
    Block *b = find_block(x, st->block_name);
    if (!b)
        return;
    if (x->nesting >= MAX_NESTING) {
        x->c->instance = NULL; /* the instance path is the 64-deep chain itself */
        error_at(x->c, st->loc, "modules nest more than %d deep: does block '%s' contain itself?", MAX_NESTING,
                 b->name->text);
        return;
    }
    Instance *inst = arena_alloc(x->c->arena, sizeof *inst);
    inst->path = path;
    inst->block = b;
    inst->model_loc = env->inst ? env->inst->model_loc : st->loc;
    inst->root = env->inst ? env->inst->root : path;
    inst->state_names = vec_new(x->c);
    for (int j = 0; j < b->params->len; j++)
        if (((BlockParam *)VEC_AT(b->params, j))->is_list && !inst->lists)
            inst->lists = arena_alloc(x->c->arena, (size_t)b->params->len * sizeof *inst->lists);

    /* int arguments, by position or keyword, evaluated where the module is declared */
    int64_t values[MAX_INTS];
    bool given[MAX_INTS] = {0};
    int pos = 0;
    for (int i = 0; i < st->options->len; i++) {
        Expr *a;
        int k = bind_block_arg(x, b, VEC_AT(st->options, i), true, &pos, &a,
                               arena_printf(x->c->arena, "too many arguments for block '%s'; tensors are passed when the module is called",
                                            b->name->text));
        if (k < 0)
            continue;
        if (k >= MAX_INTS)
            continue;
        BlockParam *bp = VEC_AT(b->params, k);
        if (given[k])
            error_at(x->c, a->loc, "int parameter '%s' is given twice", bp->name->text);
        if (bp->is_list && eval_int_list(x, env, a, bp->name->text, &inst->lists[inst->nlists])) {
            given[k] = true;
            inst->nlists++;
        } else if (!bp->is_list) {
            given[k] = eval_int(x, env, a, &values[k]);
        }
    }
    Env inner = {.prefix = path, .inst = inst};
    for (int j = 0; j < b->params->len && j < MAX_INTS; j++) {
        BlockParam *bp = VEC_AT(b->params, j);
        if (!bp->is_int)
            continue;
        if (!given[j]) {
            Env empty = {0};
            if (!bp->default_value) {
                error_at(x->c, st->loc, "module '%s' needs int parameter '%s' of block '%s'", path, bp->name->text,
                         b->name->text);
                continue;
            }
            if (bp->is_list) {
                if (eval_int_list(x, &empty, bp->default_value, bp->name->text, &inst->lists[inst->nlists]))
                    inst->nlists++;
                continue;
            }
            if (!eval_int(x, &empty, bp->default_value, &values[j]))
                continue;
        }
        if (bp->is_list)
            continue; /* in inst->lists already */
        inst->int_names[inst->nints] = bp->name->text;
        inst->int_values[inst->nints++] = values[j];
        env_push(x, &inner, bp->name->text, values[j], st->loc);
    }
    inner.lists = inst->lists;
    inner.nlists = inst->nlists;
    vec_push(x->c, x->instances, inst);
    strmap_put(x->instance_by_path, inst->path, inst);
    x->nesting++;
    expand_decls(x, &inner, b->body, out);
    x->nesting--;
}

/* The declarations of a block body: params, buffers, nested modules, also
 * inside loops. */
static void expand_decls(Expander *x, const Env *env, Vec *in, Vec *out)
{
    const char *outer = x->c->instance;
    for (int i = 0; i < in->len && !x->too_big_reported; i++) {
        Stmt *st = VEC_AT(in, i);
        x->c->instance = env->prefix;
        switch (st->kind) {
        case S_PARAM:
        case S_BUFFER: {
            Stmt *s = new_stmt(x, st->kind, st->loc);
            const char *rel = subst(x, env, st->name->text, st->name->loc);
            vec_push(x->c, env->inst->state_names, (void *)rel);
            s->name = name_expr(x, arena_printf(x->c->arena, "%s.%s", env->prefix, rel), st->name->loc);
            s->type = clone_expr(x, env, st->type, out);
            s->instance = env->prefix;
            emit(x, out, s);
            break;
        }
        case S_MODULE:
            declare_instance(x, env, st, out);
            break;
        case S_AUTOCAST:
            expand_decls(x, env, st->body, out);
            break;
        case S_FOR:
            unroll(x, env, st, out, true, true);
            break;
        default:
            break;
        }
    }
    x->c->instance = outer;
}

/* Statements that compute: assignments, regions, loops, calls. In a block,
 * declarations were emitted by declare_instance and are skipped here. */
static void expand_code(Expander *x, const Env *env, Vec *in, Vec *out, bool in_block)
{
    const char *outer = x->c->instance;
    for (int i = 0; i < in->len && !x->too_big_reported; i++) {
        Stmt *st = VEC_AT(in, i);
        Stmt *s = new_stmt(x, st->kind, st->loc);
        *s = *st;
        x->c->instance = s->instance = env->prefix;
        if (env->inst) {
            s->instance_loc = env->inst->model_loc;
            s->instance_root = env->inst->root;
        }
        switch (st->kind) {
        case S_INPUT:
        case S_OUTPUT:
        case S_MINIMIZE:
            if (in_block) {
                error_at(x->c, st->loc, "'%s' belongs to the model; a block takes tensors as parameters and gives one back with 'return'",
                         st->kind == S_INPUT ? "input" : st->kind == S_OUTPUT ? "output" : "minimize");
                break;
            }
            if (st->kind == S_INPUT) {
                s->type = clone_expr(x, env, st->type, out);
            } else if (st->kind == S_OUTPUT) {
                s->exprs = clone_list(x, env, st->exprs, out);
            } else {
                s->value = clone_expr(x, env, st->value, out);
            }
            emit(x, out, s);
            break;
        case S_PARAM:
        case S_BUFFER:
            if (in_block)
                break;
            s->name = name_expr(x, subst(x, env, st->name->text, st->name->loc), st->name->loc);
            s->type = clone_expr(x, env, st->type, out);
            emit(x, out, s);
            break;
        case S_MODULE:
            if (!in_block)
                declare_instance(x, env, st, out);
            break;
        case S_ASSIGN:
            s->value = clone_expr(x, env, st->value, out);
            s->targets = clone_list(x, env, st->targets, out);
            emit(x, out, s);
            break;
        case S_EXPR: {
            Instance *inst = called_instance(x, env, st->value);
            if (inst) {
                expand_call(x, env, inst, st->value, out); /* a call for its effects only */
                break;
            }
            s->value = clone_expr(x, env, st->value, out);
            emit(x, out, s);
            break;
        }
        case S_RETURN:
            if (!in_block) {
                error_at(x->c, st->loc, "'return' belongs in a block; a model names its results with 'output'");
                break;
            }
            if (i != in->len - 1)
                error_at(x->c, st->loc, "'return' must be the last statement of the block");
            s->value = clone_expr(x, env, st->value, out);
            emit(x, out, s);
            break;
        case S_AUTOCAST:
            s->body = vec_new(x->c);
            expand_code(x, env, st->body, s->body, in_block);
            emit(x, out, s);
            break;
        case S_AUTOCAST_SWITCH:
            emit(x, out, s);
            break;
        case S_TRAIN:
            /* settings, not code: train.c reads them as written */
            if (in_block)
                error_at(x->c, st->loc, "'train' belongs to the model, after its 'minimize'");
            else
                emit(x, out, s);
            break;
        case S_FOR:
            unroll(x, env, st, out, false, in_block);
            break;
        }
    }
    x->c->instance = outer;
}

bool expand(Ctx *c)
{
    Expander x = {.c = c, .instances = vec_new(c), .instance_by_path = strmap_new(c->arena)};
    Env top = {0};
    Vec *body = vec_new(c);
    expand_code(&x, &top, c->model->body, body, false);
    if (c->model->decorators) {
        for (int i = c->model->decorators->len - 1; i >= 0; i--) {
            Decorator *d = VEC_AT(c->model->decorators, i);
            Stmt *region = new_stmt(&x, S_AUTOCAST, d->loc);
            region->options = d->options;
            region->keyword_loc = d->loc;
            region->body = body;
            body = vec_push(c, vec_new(c), region);
        }
    }
    c->model->body = body;
    return c->nerrors == 0;
}
