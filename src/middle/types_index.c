/* types_index.c: the forms that mean other ops once their operand's shape
 * is known, rewritten in place by typecheck.
 *
 *   x[:, 0]   x[..., 1:3]   x[:, ::2]   x[:, -1]   x[:, None]
 *             narrow + squeeze for an integer index, slice for a
 *             start:stop:step, unsqueeze for None, `...` for the dims
 *             nobody names (PyTorch's basic indexing, which gives views;
 *             ampc's values are copies, so the result is the same)
 *   x.size(d), x.shape[d]    the number, when the dim is not symbolic
 *   t(x), x.T                transpose(x, 0, 1) of a matrix; x itself for
 *                            fewer dims; x.T reverses every dim (permute)
 *   a, b = x.chunk(2, dim=1)  and split and unbind: one narrow (unbind:
 *             narrow and squeeze) per result, each assigned to its name
 *             by the statement rewrite typecheck.c asks of split_assign
 *   v, i = x.topk(k, dim)     and kthvalue: a stable sort assigned to two
 *             fresh names, then a narrow of each (split_assign too)
 *   v, i = x.max(dim, keepdim) and min: argmax (argmin) with keepdim, the
 *             values a gather of x at those indices, so the gradient
 *             reaches the chosen element only, as PyTorch's max.dim
 *   v, m = var_mean(x, dim, ...)  and std_mean: var (std) and mean of x
 *             with the same dim and keepdim
 *
 * The calls made here are resolved by hand (op, bound) and typed with
 * infer_call, so the passes after typecheck see ordinary narrow, slice,
 * squeeze, unsqueeze, transpose, permute and sort calls, with their kernels and
 * gradients, and errors are reported at the subscript that caused them.
 */
#include "call_args.h"
#include "types.h"

#include <string.h>

/* e becomes the integer literal v: E_NUMBER, or neg(E_NUMBER) for v < 0,
 * the form the parser gives -5. */
void set_int_literal(Ctx *c, Expr *e, int64_t v)
{
    Expr *num = arena_alloc(c->arena, sizeof *num);
    num->kind = E_NUMBER;
    num->loc = e->loc;
    num->text = arena_printf(c->arena, "%llu", v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
    Loc loc = e->loc;
    if (v >= 0) {
        *e = *num;
        return;
    }
    memset(e, 0, sizeof *e);
    e->kind = E_CALL;
    e->loc = e->name_loc = loc;
    e->callee = "neg";
    e->is_operator = true;
    e->op = op_info(c, OP_NEG);
    e->list = vec_push(c, vec_new(c), num);
    e->bound = arena_alloc(c->arena, 2 * sizeof *e->bound);
    e->bound[0] = num;
}

Expr *int_expr(Ctx *c, int64_t v, Loc loc)
{
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->loc = loc;
    set_int_literal(c, e, v);
    return e;
}

/* A call of op on input, made for `from` (its location and autocast
 * region), its other arguments not yet bound; not typed. */
Expr *call_skeleton(Ctx *c, const OpInfo *op, const Expr *from, Loc name_loc, Expr *input)
{
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->kind = E_CALL;
    e->loc = from->loc;
    e->name_loc = name_loc;
    e->callee = op->name;
    e->op = op;
    e->autocast_on = from->autocast_on;
    e->autocast_low = from->autocast_low;
    e->list = vec_push(c, vec_new(c), input);
    e->bound = arena_alloc(c->arena, (size_t)(op->nparams + 1) * sizeof *e->bound);
    e->bound[0] = input;
    return e;
}

/* A call of op on x with integer arguments named in the signature, typed
 * at once; NULL (reported) when its type rule refuses it.  `from` is the
 * expression it is made for: its location and autocast region. */
Expr *make_call(Ctx *c, OpId id, Expr *from, Loc name_loc, Expr *x, int n, const char *const *names,
                const int64_t *values)
{
    const OpInfo *op = op_info(c, id);
    Expr *e = call_skeleton(c, op, from, name_loc, x);
    e->depth = x->depth + 1;
    for (int i = 0; i < n; i++) {
        int k = op_param_index(op, names[i]);
        while (k > 0 && k < op->nparams && e->bound[k]) /* the next entry of an int... group */
            k++;
        ASSERT(k > 0 && k < op->nparams && !strcmp(op->params[k].name, names[i]));
        e->bound[k] = int_expr(c, values[i], name_loc);
        vec_push(c, e->list, e->bound[k]);
    }
    return infer_call(c, e) ? e : NULL;
}

Expr *call1(Ctx *c, OpId id, Expr *from, Loc at, Expr *x, const char *name, int64_t v)
{
    return make_call(c, id, from, at, x, 1, &name, &v);
}

/* x[i] along dim d of cur: narrow to one entry, then drop the dim. */
static Expr *select_index(Ctx *c, Expr *from, Expr *sub, Expr *cur, int d)
{
    int64_t i, n;
    if (!int_arg(c, sub, &i))
        return NULL;
    const Poly *size = cur->type.shape.dims[d];
    if (poly_is_const(size, &n)) {
        if (i < -n || i >= n) {
            error_at(c, sub->loc, "index %lld is out of bounds for dimension %d with size %lld", (long long)i, d,
                     (long long)n);
            return NULL;
        }
        if (i < 0)
            i += n;
    } else if (i < 0) {
        error_at(c, sub->loc, "a negative index into the symbolic dimension %s is not supported: its size is known "
                 "only at run time", dim_str(c, size));
        return NULL;
    }
    static const char *const names[] = {"dim", "start", "length"};
    int64_t v[] = {d, i, 1};
    Expr *one = make_call(c, OP_NARROW, from, sub->loc, cur, 3, names, v);
    return one ? call1(c, OP_SQUEEZE, from, sub->loc, one, "dim", d) : NULL;
}

/* x[start:stop:step] along dim d; NULL parts are PyTorch's defaults. */
static Expr *slice_range(Ctx *c, Expr *from, Expr *sub, Expr *cur, int d, bool *ok)
{
    const char *names[4] = {"dim"};
    int64_t v[4] = {d};
    int n = 1;
    static const char *const parts[] = {"start", "end", "step"};
    for (int k = 0; k < 3; k++) {
        Expr *p = VEC_AT(sub->list, k);
        if (!p)
            continue;
        if (is_tensor(p)) {
            error_at(c, p->loc, "slice indices must be integers");
            *ok = false;
            return NULL;
        }
        if (!int_arg(c, p, &v[n])) {
            *ok = false;
            return NULL;
        }
        if (k == 2 && v[n] <= 0) {
            error_at(c, p->loc, "step must be greater than zero");
            *ok = false;
            return NULL;
        }
        if (k == 2 && v[n] == 1)
            continue;
        names[n++] = parts[k];
    }
    if (n == 1)
        return cur; /* `:`: the whole dim */
    Expr *r = make_call(c, OP_SLICE, from, sub->loc, cur, n, names, v);
    *ok = r != NULL;
    return r;
}

static bool is_new_axis(const Expr *sub) { return sub->kind == E_NAME && !sub->sym && !strcmp(sub->text, "None"); }
static bool is_ellipsis(const Expr *sub) { return sub->kind == E_SLICE && sub->boolean; }

bool subscript(Ctx *c, Expr *e)
{
    Expr *x = e->operand;
    int ndim = x->type.shape.ndim, named = 0, ellipses = 0;
    for (int i = 0; i < e->list->len; i++) {
        Expr *sub = VEC_AT(e->list, i);
        if (is_ellipsis(sub) && ++ellipses > 1) {
            error_at(c, sub->loc, "an index can only have a single ellipsis ('...')");
            return false;
        }
        named += !is_ellipsis(sub) && !is_new_axis(sub);
    }
    if (named > ndim) {
        error_at(c, e->loc, "too many indices for tensor of dimension %d", ndim);
        return false;
    }
    Expr *cur = x;
    int d = 0;
    for (int i = 0; i < e->list->len && cur; i++) {
        Expr *sub = VEC_AT(e->list, i);
        bool ok = true;
        if (is_new_axis(sub)) {
            cur = call1(c, OP_UNSQUEEZE, e, sub->loc, cur, "dim", d++);
        } else if (is_ellipsis(sub)) {
            d += ndim - named;
        } else if (sub->kind == E_SLICE) {
            cur = slice_range(c, e, sub, cur, d++, &ok);
        } else if (is_tensor(sub)) {
            error_at(c, sub->loc, "indexing with a tensor is not supported; use index_select(x, dim, index), "
                     "gather or where");
            return false;
        } else if (sub->kind == E_NUMBER && sub->is_float) {
            error_at(c, sub->loc, "only integers, slices (':'), ellipsis ('...') and None are valid indices");
            return false;
        } else {
            cur = select_index(c, e, sub, cur, d);
        }
        if (!ok)
            return false;
    }
    if (!cur)
        return false;
    Loc loc = e->loc;
    *e = *cur;
    e->loc = loc;
    return true;
}

bool dim_of(Ctx *c, Expr *e)
{
    Expr *x = e->operand;
    int64_t d, n;
    if (!is_tensor(x)) {
        error_at(c, x->loc, "size() and shape[] need a tensor");
        return false;
    }
    if (!normalise_dim(c, VEC_AT(e->list, 0), x->type.shape.ndim, &d))
        return false;
    if (x->type.shape.ndim == 0) {
        error_at(c, e->loc, "a 0-dim tensor has no dimensions");
        return false;
    }
    const Poly *size = x->type.shape.dims[d];
    if (!poly_is_const(size, &n)) {
        error_at(c, e->loc, "dimension %lld is the symbolic %s, known only at run time; an argument needs a "
                 "compile-time integer (reshape takes -1 where it goes)", (long long)d, dim_str(c, size));
        return false;
    }
    set_int_literal(c, e, n);
    e->type.dtype = DT_NONE;
    return true;
}

/* t(x): the matrix transposed; x.T (callee text "T"): every dim reversed. */
bool infer_t(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int ndim = x->type.shape.ndim;
    bool all = call->text && strcmp(call->text, "T") == 0;
    if (!all && ndim > 2) {
        error_at(c, call->loc, "t() expects a tensor with <= 2 dimensions, but self is %dD", ndim);
        return false;
    }
    if (ndim < 2) {
        Loc loc = call->loc;
        *call = *x;
        call->loc = loc;
        return true;
    }
    const char *names[MAX_DIMS];
    int64_t v[MAX_DIMS];
    OpId id = ndim == 2 ? OP_TRANSPOSE : OP_PERMUTE;
    static const char *const pair[] = {"dim0", "dim1"};
    for (int i = 0; i < ndim; i++) {
        v[i] = ndim - 1 - i;
        names[i] = ndim == 2 ? pair[i] : "dims";
    }
    if (ndim == 2) {
        v[0] = 0;
        v[1] = 1;
    }
    Expr *r = make_call(c, id, call, call->name_loc, x, ndim, names, v);
    if (!r)
        return false;
    Loc loc = call->loc;
    *call = *r;
    call->loc = loc;
    return true;
}

/* ---- ops giving several tensors ----------------------------------------- */

enum { MAX_PIECES = 4096 };

bool infer_pieces(Ctx *c, Expr *call)
{
    error_at(c, call->loc, "%s() gives several tensors: assign them to names, as a, b = x.%s(...)", call->op->name,
             call->op->name);
    return false;
}

/* The sizes of the pieces along dim (of size n), as PyTorch cuts them;
 * their count, or -1 (reported). */
static int piece_sizes(Ctx *c, Expr *call, int64_t n, int64_t *sizes)
{
    int count = 0;
    if (call->op->id == OP_UNBIND) {
        if (n > MAX_PIECES)
            goto too_many;
        for (int64_t i = 0; i < n; i++)
            sizes[count++] = 1;
        return count;
    }
    Expr *a = arg(call, 1);
    if (a->kind == E_LIST) {
        int64_t sum = 0;
        Buf text;
        buf_init(&text, c->arena);
        for (int i = 0; i < a->list->len; i++) {
            Expr *item = VEC_AT(a->list, i);
            int64_t v;
            if (item->kind != E_NUMBER || item->is_float || !int_literal(c, item, &v)) {
                if (item->kind != E_NUMBER || item->is_float)
                    error_at(c, item->loc, "split sizes are non-negative integers");
                return -1;
            }
            if (i >= MAX_PIECES)
                goto too_many;
            sizes[count++] = v;
            sum += v;
            buf_printf(&text, "%s%lld", i ? ", " : "", (long long)v);
        }
        if (sum != n) {
            error_at(c, a->loc, "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at "
                     "dimension %lld), but got split_sizes=[%s]", (long long)n, (long long)call->dim, text.data);
            return -1;
        }
        return count;
    }
    int64_t k;
    if (!int_arg(c, a, &k))
        return -1;
    int64_t size = k;
    if (call->op->id == OP_CHUNK) {
        if (k <= 0) {
            error_at(c, a->loc, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)k);
            return -1;
        }
        size = n / k + (n % k != 0);
    } else if (k < 0) {
        error_at(c, a->loc, "split expects split_size be non-negative, but got split_size=%lld", (long long)k);
        return -1;
    }
    if (size == 0) {
        if (n != 0) {
            error_at(c, a->loc, "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                     (long long)n);
            return -1;
        }
        sizes[0] = 0;
        return 1;
    }
    for (int64_t start = 0; start < n; start += size) {
        if (count == MAX_PIECES)
            goto too_many;
        sizes[count++] = n - start < size ? n - start : size;
    }
    if (count == 0)
        sizes[count++] = 0;
    return count;
too_many:
    error_at(c, call->loc, "%s() would give more than %d tensors", call->op->name, MAX_PIECES);
    return -1;
}

Stmt *assign_stmt(Ctx *c, Expr *target, Expr *value, Loc loc)
{
    Stmt *st = arena_alloc(c->arena, sizeof *st);
    st->kind = S_ASSIGN;
    st->loc = loc;
    st->instance = c->instance;
    st->targets = vec_push(c, vec_new(c), target);
    st->value = value;
    target->sym->value = value;
    return st;
}

/* stmts[i] is `a, b = x.chunk(...)` (or split, unbind) with x typed: it is
 * replaced by one assignment per name, of a narrow of x (after x's own
 * assignment to a fresh name, unless x is a name already, so x is
 * computed once).  Typecheck then checks the new statements as any other. */
/* Replace stmts[i] by the statements of out, in order. */
void splice(Ctx *c, Vec *stmts, int i, Vec *out)
{
    int extra = out->len - 1;
    for (int k = 0; k < extra; k++)
        vec_push(c, stmts, NULL);
    for (int k = stmts->len - 1; k > i + extra; k--)
        stmts->items[k] = stmts->items[k - extra];
    for (int k = 0; k < out->len; k++)
        stmts->items[i + k] = VEC_AT(out, k);
}

Expr *local_name(Ctx *c, const char *text, Loc loc, const Type *t)
{
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->kind = E_NAME;
    e->loc = loc;
    e->text = text;
    e->sym = arena_alloc(c->arena, sizeof *e->sym);
    e->sym->kind = SYM_LOCAL;
    e->sym->name = text;
    e->sym->loc = loc;
    if (t)
        e->sym->type = *t;
    e->type = e->sym->type;
    return e;
}

Expr *ref_of(Ctx *c, Expr *name)
{
    Expr *r = arena_alloc(c->arena, sizeof *r);
    *r = *name;
    r->type = name->sym->type;
    (void)c;
    return r;
}

/* values, indices = topk(x, k, dim, largest) or kthvalue(x, k, dim,
 * keepdim): sort(x, dim, descending) assigned to two fresh names, then a
 * narrow of each (kthvalue: the k-th smallest, its dim dropped unless
 * keepdim). */
static bool sorted_assign(Ctx *c, Vec *stmts, int i)
{
    Stmt *st = VEC_AT(stmts, i);
    Expr *call = st->value, *x = arg(call, 0);
    const char *name = call->op->name;
    bool topk = call->op->id == OP_TOPK;
    if (!require_tensor(c, call, 0))
        return false;
    int ndim = x->type.shape.ndim;
    int64_t d = -1, n, k;
    bool largest = true, keepdim = false;
    if (ndim == 0) {
        error_at(c, x->loc, "%s() needs a tensor with at least one dimension here", name);
        return false;
    }
    if ((named(call, "dim") && !normalise_dim(c, named(call, "dim"), ndim, &d)) || !int_param(c, call, "k", 0, &k) ||
        (topk && !bool_param(c, call, "largest", true, &largest)) ||
        (!topk && !bool_param(c, call, "keepdim", false, &keepdim)))
        return false;
    if (d < 0)
        d += ndim;
    if (!poly_is_const(x->type.shape.dims[d], &n)) {
        error_at(c, call->loc, "%s() along the symbolic dimension %s is not supported", name,
                 dim_str(c, x->type.shape.dims[d]));
        return false;
    }
    if (topk ? (k < 0 || k > n) : (k < 1 || k > n)) {
        error_at(c, named(call, "k")->loc, topk ? "selected index k out of range" :
                 "kthvalue(): selected number k out of range for dimension %lld", (long long)d);
        return false;
    }
    if (st->targets->len != 2) {
        error_at(c, st->loc, "%s() gives 2 tensors (values, indices), but %d name%s assigned", name, st->targets->len,
                 st->targets->len == 1 ? " is" : "s are");
        return false;
    }
    /* sort(x, dim, descending): typed when typecheck checks the statement */
    const OpInfo *sort = op_info(c, OP_SORT);
    Expr *s = call_skeleton(c, sort, call, call->name_loc, x);
    s->bound[1] = int_expr(c, d, call->name_loc);
    Expr *desc = arena_alloc(c->arena, sizeof *desc);
    desc->kind = E_BOOL;
    desc->loc = call->name_loc;
    desc->boolean = topk && largest;
    s->bound[2] = desc;
    if (!infer_call(c, s))
        return false;
    Expr *sv = local_name(c, arena_printf(c->arena, "%s_sorted", name), call->loc, &s->type);
    Expr *si = local_name(c, arena_printf(c->arena, "%s_order", name), call->loc, &s->more_types[0]);
    Stmt *first = assign_stmt(c, sv, s, st->loc);
    vec_push(c, first->targets, si);
    si->sym->value = s;
    Vec *out = vec_push(c, vec_new(c), first);
    for (int r = 0; r < 2; r++) {
        static const char *const names[] = {"dim", "start", "length"};
        int64_t v[] = {d, topk ? 0 : k - 1, topk ? k : 1};
        Expr *part = make_call(c, OP_NARROW, call, call->name_loc, ref_of(c, r ? si : sv), 3, names, v);
        if (part && !topk && !keepdim)
            part = call1(c, OP_SQUEEZE, call, call->name_loc, part, "dim", d);
        if (!part)
            return false;
        vec_push(c, out, assign_stmt(c, VEC_AT(st->targets, r), part, st->loc));
    }
    splice(c, stmts, i, out);
    return true;
}

/* x as a name: x itself, or a fresh name (NAME_input) assigned x by a
 * statement pushed to out, so x is computed once however often it is read. */
static Symbol *shared_input(Ctx *c, Stmt *st, Expr *x, const char *name, Vec *out)
{
    if (x->kind == E_NAME)
        return x->sym;
    Expr *t = local_name(c, arena_printf(c->arena, "%s_input", name), x->loc, &x->type);
    vec_push(c, out, assign_stmt(c, t, x, st->loc));
    return t->sym;
}

static Expr *sym_ref(Ctx *c, Symbol *s, Loc loc)
{
    Expr *r = arena_alloc(c->arena, sizeof *r);
    r->kind = E_NAME;
    r->loc = loc;
    r->text = s->name;
    r->sym = s;
    r->type = s->type;
    (void)c;
    return r;
}

/* A call of op like `from`, its arguments taken by parameter name from
 * from's (those op has), input replaced; keep_dim: keepdim=True instead.
 * Typed at once, NULL if refused. */
static Expr *call_like(Ctx *c, OpId id, Expr *from, Expr *input, bool keep_dim)
{
    const OpInfo *op = op_info(c, id);
    Expr *e = call_skeleton(c, op, from, from->name_loc, input);
    for (int k = 1; k < op->nparams; k++) {
        Expr *a = op_param_index(from->op, op->params[k].name) >= 0 ? named(from, op->params[k].name) : NULL;
        if (a) {
            e->bound[k] = a;
            vec_push(c, e->list, a);
        }
    }
    int k = op_param_index(op, "keepdim");
    if (keep_dim && k > 0) {
        Expr *t = arena_alloc(c->arena, sizeof *t);
        t->kind = E_BOOL;
        t->loc = from->name_loc;
        t->boolean = true;
        e->bound[k] = t;
    }
    return infer_call(c, e) ? e : NULL;
}

/* v, i = max(x, dim, keepdim) (min): i = argmax(x, dim, keepdim=True),
 * v = gather(x, dim, i), both squeezed at dim unless keepdim.
 * v, m = var_mean(x, ...) (std_mean): var(x, ...), mean(x, dim, keepdim). */
static bool paired_assign(Ctx *c, Vec *stmts, int i)
{
    Stmt *st = VEC_AT(stmts, i);
    Expr *call = st->value, *x = arg(call, 0);
    OpId id = call->op->id;
    bool extremum = id == OP_MAX || id == OP_MIN;
    const char *name = call->op->name;
    if (!require_tensor(c, call, 0))
        return false;
    if (st->targets->len != 2) {
        error_at(c, st->loc, "%s() gives 2 tensors (%s), but %d name%s assigned", name,
                 extremum ? "values, indices" : id == OP_VAR_MEAN ? "var, mean" : "std, mean", st->targets->len,
                 st->targets->len == 1 ? " is" : "s are");
        return false;
    }
    Vec *out = vec_new(c);
    Symbol *src = shared_input(c, st, x, name, out);
    Expr *first, *second;
    if (!extremum) {
        first = call_like(c, id == OP_VAR_MEAN ? OP_VAR : OP_STD, call, sym_ref(c, src, x->loc), false);
        second = first ? call_like(c, OP_MEAN, call, sym_ref(c, src, x->loc), false) : NULL;
        if (!second)
            return false;
        vec_push(c, out, assign_stmt(c, VEC_AT(st->targets, 0), first, st->loc));
        vec_push(c, out, assign_stmt(c, VEC_AT(st->targets, 1), second, st->loc));
        splice(c, stmts, i, out);
        return true;
    }
    int ndim = x->type.shape.ndim;
    int64_t d;
    bool keepdim;
    if (!normalise_dim(c, named(call, "dim"), ndim, &d) || !bool_param(c, call, "keepdim", false, &keepdim))
        return false;
    if (d < 0)
        d += ndim;
    if (dtype_is_complex(x->type.dtype) || x->type.dtype == DT_BOOL) {
        error_at(c, x->loc, "%s() with dim has no %s form in ampc", name, dtype_name(x->type.dtype));
        return false;
    }
    /* the indices, with dim kept: argmax(x, dim, keepdim=True) */
    Expr *idx = call_like(c, id == OP_MAX ? OP_ARGMAX : OP_ARGMIN, call, sym_ref(c, src, x->loc), true);
    if (!idx)
        return false;
    Expr *order = keepdim || ndim == 0 ? VEC_AT(st->targets, 1)
                                       : local_name(c, arena_printf(c->arena, "%s_index", name), call->loc, &idx->type);
    order->sym->type = idx->type; /* read below, before typecheck reaches the statement */
    vec_push(c, out, assign_stmt(c, order, idx, st->loc));
    /* the values: gather(x, dim, indices) */
    const OpInfo *g = op_info(c, OP_GATHER);
    Expr *ge = arena_alloc(c->arena, sizeof *ge);
    ge->kind = E_CALL;
    ge->loc = call->loc;
    ge->name_loc = call->name_loc;
    ge->callee = g->name;
    ge->op = g;
    ge->autocast_on = call->autocast_on;
    ge->autocast_low = call->autocast_low;
    ge->bound = arena_alloc(c->arena, (size_t)(g->nparams + 1) * sizeof *ge->bound);
    ge->bound[0] = sym_ref(c, src, x->loc);
    ge->bound[1] = int_expr(c, ndim ? d : 0, call->name_loc);
    ge->bound[2] = sym_ref(c, order->sym, call->loc);
    ge->list = vec_push(c, vec_push(c, vec_push(c, vec_new(c), ge->bound[0]), ge->bound[1]), ge->bound[2]);
    Expr *vals = infer_call(c, ge) ? ge : NULL;
    if (vals && !keepdim && ndim)
        vals = call1(c, OP_SQUEEZE, call, call->name_loc, vals, "dim", d);
    if (!vals)
        return false;
    vec_push(c, out, assign_stmt(c, VEC_AT(st->targets, 0), vals, st->loc));
    if (!keepdim && ndim) {
        Expr *ix = call1(c, OP_SQUEEZE, call, call->name_loc, sym_ref(c, order->sym, call->loc), "dim", d);
        if (!ix)
            return false;
        vec_push(c, out, assign_stmt(c, VEC_AT(st->targets, 1), ix, st->loc));
    }
    splice(c, stmts, i, out);
    return true;
}

bool split_assign(Ctx *c, Vec *stmts, int i)
{
    Stmt *st = VEC_AT(stmts, i);
    Expr *call = st->value, *x = arg(call, 0);
    if (is_rnn_layer(call->op->id))
        return rnn_layer_assign(c, stmts, i);
    if (call->op->id == OP_TOPK || call->op->id == OP_KTHVALUE)
        return sorted_assign(c, stmts, i);
    if (call->op->id == OP_MAX || call->op->id == OP_MIN || call->op->id == OP_VAR_MEAN ||
        call->op->id == OP_STD_MEAN)
        return paired_assign(c, stmts, i);
    if (!require_tensor(c, call, 0))
        return false;
    int64_t d = 0, n;
    Expr *de = named(call, "dim");
    if (x->type.shape.ndim == 0) {
        error_at(c, x->loc, "%s() needs a tensor with at least one dimension", call->op->name);
        return false;
    }
    if (de && !normalise_dim(c, de, x->type.shape.ndim, &d))
        return false;
    call->dim = d;
    if (!poly_is_const(x->type.shape.dims[d], &n)) {
        error_at(c, call->loc, "%s() along the symbolic dimension %s: the number of tensors it gives would be known "
                 "only at run time", call->op->name, dim_str(c, x->type.shape.dims[d]));
        return false;
    }
    int64_t *sizes = arena_alloc(c->arena, MAX_PIECES * sizeof *sizes);
    int count = piece_sizes(c, call, n, sizes);
    if (count < 0)
        return false;
    if (count != st->targets->len) {
        error_at(c, st->loc, "%s() gives %d tensor%s here, but %d name%s assigned", call->op->name, count,
                 count == 1 ? "" : "s", st->targets->len, st->targets->len == 1 ? " is" : "s are");
        return false;
    }
    Vec *out = vec_new(c);
    Symbol *src = x->kind == E_NAME ? x->sym : NULL;
    if (!src) {
        Expr *t = arena_alloc(c->arena, sizeof *t);
        t->kind = E_NAME;
        t->loc = x->loc;
        t->text = arena_printf(c->arena, "%s_input", call->op->name);
        src = arena_alloc(c->arena, sizeof *src);
        src->kind = SYM_LOCAL;
        src->name = t->text;
        src->loc = x->loc;
        src->type = x->type;
        t->sym = src;
        vec_push(c, out, assign_stmt(c, t, x, st->loc));
    }
    int64_t start = 0;
    for (int k = 0; k < count; k++) {
        Expr *ref = arena_alloc(c->arena, sizeof *ref);
        ref->kind = E_NAME;
        ref->loc = x->loc;
        ref->text = src->name;
        ref->sym = src;
        ref->type = src->type;
        static const char *const names[] = {"dim", "start", "length"};
        int64_t v[] = {d, start, sizes[k]};
        Expr *piece = make_call(c, OP_NARROW, call, call->name_loc, ref, 3, names, v);
        if (piece && call->op->id == OP_UNBIND)
            piece = call1(c, OP_SQUEEZE, call, call->name_loc, piece, "dim", d);
        if (!piece)
            return false;
        start += sizes[k];
        vec_push(c, out, assign_stmt(c, VEC_AT(st->targets, k), piece, st->loc));
    }
    splice(c, stmts, i, out); /* stmts[i] becomes out[0], and the rest follow it */
    return true;
}
