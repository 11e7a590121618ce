/* ast.c: AST constructors, one per grammar action.
 *
 * The grammar stays thin by calling exactly one of these per rule.  They
 * build nodes and normalise surface syntax (an operator, a method call and
 * a function call all become E_CALL), but check nothing that needs names or
 * types: that is resolve's and typecheck's job.
 */
#include "front.h"

#include <gmp.h>
#include <stdint.h>
#include <string.h>

/* Give e the depth of its deepest child plus one; refuse it past the cap. */
static Expr *nest(Parser *p, Expr *e, Expr *child)
{
    if (child && child->depth + 1 > e->depth)
        e->depth = child->depth + 1;
    if (e->depth > MAX_EXPR_DEPTH && !p->too_deep_reported) {
        error_at(p->ctx, e->loc, "this expression is nested more than %d levels deep; split it with assignments",
                 MAX_EXPR_DEPTH);
        p->too_deep_reported = true;
    }
    return e;
}

static Expr *new_expr(Parser *p, ExprKind kind, Loc loc)
{
    Expr *e = arena_alloc(p->ctx->arena, sizeof *e);
    e->kind = kind;
    e->loc = loc;
    return e;
}

Expr *new_name(Parser *p, const char *text, Loc loc)
{
    Expr *e = new_expr(p, E_NAME, loc);
    e->text = text;
    return e;
}

Expr *dotted_append(Parser *p, Expr *head, Expr *tail, Loc loc)
{
    Expr *e = new_expr(p, E_NAME, loc);
    e->text = arena_printf(p->ctx->arena, "%s.%s", head->text, tail->text);
    return e;
}

Expr *new_number(Parser *p, const char *text, bool is_float, Loc loc)
{
    Expr *e = new_expr(p, E_NUMBER, loc);
    e->text = text;
    e->is_float = is_float;
    return e;
}

Expr *new_string(Parser *p, const char *text, Loc loc)
{
    Expr *e = new_expr(p, E_STRING, loc);
    e->text = text;
    return e;
}

Expr *new_bool(Parser *p, bool value, Loc loc)
{
    Expr *e = new_expr(p, E_BOOL, loc);
    e->boolean = value;
    return e;
}

Expr *new_dtype_lit(Parser *p, DType t, Loc loc)
{
    Expr *e = new_expr(p, E_DTYPE, loc);
    e->dtype = t;
    return e;
}

Expr *new_type(Parser *p, DType t, Vec *dims, Loc loc)
{
    Expr *e = new_expr(p, E_TYPE, loc);
    e->dtype = t;
    e->list = dims ? dims : vec_new(p->ctx); /* a bare dtype is a 0-dim tensor */
    return e;
}

Expr *new_call(Parser *p, Expr *callee, Vec *args, Loc loc)
{
    Expr *e = new_expr(p, E_CALL, loc);
    e->callee = callee->text;
    e->name_loc = callee->loc;
    e->list = args;
    for (int i = 0; i < args->len; i++)
        nest(p, e, VEC_AT(args, i));
    return e;
}

/* a.addmm(b, c) is addmm(a, b, c) with is_method set; torch.relu(x) and
 * F.relu(x) are resolved as plain calls by resolve.c. */
Expr *new_method_call(Parser *p, Expr *receiver, Expr *method, Vec *args, Loc loc)
{
    Expr *e = new_expr(p, E_CALL, loc);
    e->callee = method->text;
    e->name_loc = method->loc;
    e->is_method = true;
    e->list = vec_new(p->ctx);
    vec_push(p->ctx, e->list, receiver);
    for (int i = 0; i < args->len; i++)
        vec_push(p->ctx, e->list, VEC_AT(args, i));
    for (int i = 0; i < e->list->len; i++)
        nest(p, e, VEC_AT(e->list, i));
    return e;
}

/* fc1.weight: attribute access only ever names something, so it folds into
 * one dotted name.  On anything but a name it is an error here, since no
 * later pass could give it a meaning. */
Expr *new_member(Parser *p, Expr *object, Expr *member, Loc loc)
{
    if (object->kind == E_NUMBER && !object->is_float)
        object = new_name(p, object->text, object->loc); /* 0.weight: an nn.Sequential's key */
    if (object->kind != E_NAME && strcmp(member->text, "T") == 0) {
        /* (a @ b).T: the dims reversed, a call of t marked as .T (resolve.c
         * does the same for a name's .T) */
        Expr *e = new_method_call(p, object, new_name(p, "t", member->loc), vec_new(p->ctx), loc);
        e->text = "T";
        return e;
    }
    if (object->kind != E_NAME) {
        error_at(p->ctx, member->loc, "'%s' is not an attribute of this expression; "
                 "only dotted names like fc1.weight have attributes", member->text);
        return object;
    }
    return dotted_append(p, object, member, loc);
}

Expr *new_binary(Parser *p, const char *op, Expr *lhs, Expr *rhs, Loc op_loc, Loc loc)
{
    Expr *e = new_expr(p, E_CALL, loc);
    e->callee = op;
    e->name_loc = op_loc;
    e->is_operator = true;
    e->list = vec_new(p->ctx);
    vec_push(p->ctx, e->list, lhs);
    vec_push(p->ctx, e->list, rhs);
    nest(p, e, lhs);
    return nest(p, e, rhs);
}

Expr *new_unary(Parser *p, const char *op, Expr *operand, Loc op_loc, Loc loc)
{
    Expr *e = new_expr(p, E_CALL, loc);
    e->callee = op;
    e->name_loc = op_loc;
    e->is_operator = true;
    e->list = vec_new(p->ctx);
    vec_push(p->ctx, e->list, operand);
    return nest(p, e, operand);
}

Expr *new_keyword_arg(Parser *p, Expr *name, Expr *value, Loc loc)
{
    Expr *e = new_expr(p, E_KWARG, loc);
    e->text = name->text;
    e->name_loc = name->loc;
    e->operand = value;
    return nest(p, e, value);
}

Expr *new_list(Parser *p, Vec *items, Loc loc)
{
    Expr *e = new_expr(p, E_LIST, loc);
    e->list = items;
    for (int i = 0; i < items->len; i++)
        nest(p, e, VEC_AT(items, i));
    return e;
}

/* x.shape[d] is a dimension, as x.size(d); any other subscript is indexing
 * or slicing, which typecheck turns into calls once x's shape is known. */
Expr *new_subscript(Parser *p, Expr *object, Vec *subscripts, Loc loc)
{
    size_t n = object->kind == E_NAME ? strlen(object->text) : 0;
    bool shape = n > 6 && strcmp(object->text + n - 6, ".shape") == 0;
    Expr *e = new_expr(p, shape ? E_DIM_OF : E_SUBSCRIPT, loc);
    e->operand = shape ? new_name(p, arena_strndup(p->ctx->arena, object->text, n - 6), object->loc) : object;
    e->list = subscripts;
    nest(p, e, object);
    for (int i = 0; i < subscripts->len; i++)
        nest(p, e, VEC_AT(subscripts, i));
    if (shape && subscripts->len != 1)
        error_at(p->ctx, loc, "shape[] takes one index, the dimension");
    return e;
}

Expr *new_slice(Parser *p, Expr *start, Expr *stop, Expr *step, bool ellipsis, Loc loc)
{
    Expr *e = new_expr(p, E_SLICE, loc);
    e->boolean = ellipsis;
    e->list = vec_new(p->ctx);
    Expr *parts[3] = {start, stop, step};
    for (int i = 0; i < 3; i++) {
        vec_push(p->ctx, e->list, parts[i]);
        if (parts[i])
            nest(p, e, parts[i]);
    }
    return e;
}

Vec *vec_push_front(Parser *p, Vec *v, void *item)
{
    vec_push(p->ctx, v, item);
    for (int i = v->len - 1; i > 0; i--)
        v->items[i] = v->items[i - 1];
    v->items[0] = item;
    return v;
}

Expr *new_cast(Ctx *c, Expr *operand, DType to, const char *reason)
{
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->kind = E_CAST;
    e->loc = operand->loc;
    e->operand = operand;
    e->dtype = to;
    e->reason = reason;
    e->type = operand->type;
    e->type.dtype = to;
    e->depth = operand->depth + 1;
    return e;
}

static Stmt *new_stmt(Parser *p, StmtKind kind, Loc loc)
{
    Stmt *s = arena_alloc(p->ctx->arena, sizeof *s);
    s->kind = kind;
    s->loc = loc;
    return s;
}

Stmt *new_decl(Parser *p, StmtKind kind, Expr *name, Expr *type, Loc loc)
{
    Stmt *s = new_stmt(p, kind, loc);
    s->name = name;
    s->type = type;
    return s;
}

Stmt *new_assign(Parser *p, Vec *targets, Expr *value, Loc loc)
{
    Stmt *s = new_stmt(p, S_ASSIGN, loc);
    s->targets = targets;
    s->value = value;
    return s;
}

Stmt *new_expr_stmt(Parser *p, Expr *value, Loc loc)
{
    Stmt *s = new_stmt(p, S_EXPR, loc);
    s->value = value;
    return s;
}

Stmt *new_output(Parser *p, Vec *exprs, Loc loc)
{
    Stmt *s = new_stmt(p, S_OUTPUT, loc);
    s->exprs = exprs;
    return s;
}

Stmt *new_minimize(Parser *p, Expr *value, Loc loc)
{
    Stmt *s = new_stmt(p, S_MINIMIZE, loc);
    s->value = value;
    return s;
}

Stmt *new_train(Parser *p, Vec *body, Loc loc, Loc keyword_loc)
{
    Stmt *s = new_stmt(p, S_TRAIN, loc);
    s->body = body;
    s->keyword_loc = keyword_loc;
    return s;
}

Stmt *new_autocast(Parser *p, Vec *options, Vec *body, Loc loc, Loc keyword_loc)
{
    Stmt *s = new_stmt(p, S_AUTOCAST, loc);
    s->options = options;
    s->body = body;
    s->keyword_loc = keyword_loc;
    return s;
}

Model *new_model(Parser *p, Expr *name, Vec *dims, Vec *body, Loc loc)
{
    Model *m = arena_alloc(p->ctx->arena, sizeof *m);
    m->name = name;
    m->dims = dims;
    m->body = body;
    m->loc = loc;
    return m;
}

void parser_add_model(Parser *p, Model *m, Vec *decorators)
{
    m->decorators = decorators;
    vec_push(p->ctx, p->models, m);
}

Block *new_block(Parser *p, Expr *name, Vec *params, Vec *body, Loc loc)
{
    Block *b = arena_alloc(p->ctx->arena, sizeof *b);
    b->name = name;
    b->params = params;
    b->body = body;
    b->loc = loc;
    return b;
}

BlockParam *new_block_param(Parser *p, Expr *name, Expr *type, Expr *default_value)
{
    BlockParam *bp = arena_alloc(p->ctx->arena, sizeof *bp);
    bp->name = name;
    bp->default_value = default_value;
    if (type) {
        if (strcmp(type->text, "int") == 0)
            bp->is_int = true;
        else if (strcmp(type->text, "Tensor") != 0)
            error_at(p->ctx, type->loc, "a block parameter is a tensor or an 'int', not '%s'", type->text);
    }
    if (default_value && !bp->is_int)
        error_at(p->ctx, default_value->loc, "only int parameters can have default values");
    return bp;
}

BlockParam *new_block_list_param(Parser *p, Expr *name, Expr *type, Expr *default_value)
{
    BlockParam *bp = arena_alloc(p->ctx->arena, sizeof *bp);
    bp->name = name;
    bp->default_value = default_value;
    bp->is_int = bp->is_list = true;
    if (strcmp(type->text, "int") != 0)
        error_at(p->ctx, type->loc, "a block's list parameter is a list of ints, 'int[]', not '%s[]'", type->text);
    return bp;
}

/* layer1.{i}: a name component filled in by expand.c from a loop variable
 * or an int parameter. */
Expr *new_template(Parser *p, Expr *name, Loc loc)
{
    return new_name(p, arena_printf(p->ctx->arena, "{%s}", name->text), loc);
}

Vec *add_decorator(Parser *p, Vec *decorators, Vec *options, Loc loc)
{
    Decorator *d = arena_alloc(p->ctx->arena, sizeof *d);
    d->options = options;
    d->loc = loc;
    return vec_push(p->ctx, decorators ? decorators : vec_new(p->ctx), d);
}

Stmt *new_autocast_switch(Parser *p, Vec *options, Loc loc)
{
    Stmt *s = new_stmt(p, S_AUTOCAST_SWITCH, loc);
    s->options = options;
    s->keyword_loc = loc;
    return s;
}

Stmt *new_module_decl(Parser *p, Expr *name, Expr *block_name, Vec *args, Loc loc)
{
    Stmt *s = new_stmt(p, S_MODULE, loc);
    s->name = name;
    s->block_name = block_name;
    s->options = args;
    return s;
}

Stmt *new_return(Parser *p, Expr *value, Loc loc)
{
    Stmt *s = new_stmt(p, S_RETURN, loc);
    s->value = value;
    return s;
}

Stmt *new_for(Parser *p, Expr *var, Expr *lo, Expr *hi, Vec *body, Loc loc)
{
    Stmt *s = new_stmt(p, S_FOR, loc);
    s->name = var;
    s->lo = lo;
    s->hi = hi;
    s->body = body;
    return s;
}

void parser_add_block(Parser *p, Block *b, Vec *decorators)
{
    b->decorators = decorators;
    vec_push(p->ctx, p->blocks, b);
}

void parser_add_import(Parser *p, const char *path, Loc loc)
{
    vec_push(p->ctx, p->imports, new_string(p, path, loc));
}

/* a op b on compile-time integers, as Python computes it on ints: // and %
 * round toward negative infinity, and / must be exact (Python would give
 * a float; a shape or an argument needs an int, so an inexact quotient is
 * an error rather than a rounding). */
bool int_operator(Ctx *c, Expr *e, int64_t a, int64_t b, int64_t *out)
{
    const char *op = e->callee;
    bool overflow = false;
    if (strcmp(op, "neg") == 0)
        overflow = __builtin_sub_overflow((int64_t)0, a, out);
    else if (strcmp(op, "add") == 0)
        overflow = __builtin_add_overflow(a, b, out);
    else if (strcmp(op, "sub") == 0)
        overflow = __builtin_sub_overflow(a, b, out);
    else if (strcmp(op, "mul") == 0)
        overflow = __builtin_mul_overflow(a, b, out);
    else if (strcmp(op, "pow") == 0) {
        if (b < 0) {
            error_at(c, e->name_loc, "%lld ** %lld is not an integer (a negative exponent)", (long long)a, (long long)b);
            return false;
        }
        *out = 1;
        for (int64_t k = 0; k < b && !overflow; k++) {
            overflow = __builtin_mul_overflow(*out, a, out);
            if (*out == 0 || *out == 1)
                break; /* stays there: 0 ** 1e18 ends at once */
            if (*out == -1 && a == -1) {
                *out = (b % 2) ? -1 : 1;
                break;
            }
        }
    } else if (strcmp(op, "floor_divide") == 0 || strcmp(op, "remainder") == 0 || strcmp(op, "div") == 0) {
        if (b == 0) {
            error_at(c, e->name_loc, "integer division by zero");
            return false;
        }
        if (a == INT64_MIN && b == -1) {
            overflow = true;
        } else {
            int64_t q = a / b, r = a % b;
            if (r != 0 && (r < 0) != (b < 0)) {
                q--;
                r += b;
            }
            if (op[0] == 'd' && r != 0) {
                error_at(c, e->name_loc, "%lld / %lld is not an integer; use // to round down", (long long)a,
                         (long long)b);
                return false;
            }
            *out = op[0] == 'r' ? r : q;
        }
    } else {
        error_at(c, e->name_loc, "compile-time integers combine with +, -, *, /, //, %% and ** only");
        return false;
    }
    if (overflow)
        error_at(c, e->loc, "this compile-time integer overflows 64 bits");
    return !overflow;
}

/* An integer literal's exact value, read with GMP: a literal past
 * 2^63 - 1 is an error, never a wrap-around. */
bool int_literal(Ctx *c, Expr *e, int64_t *out)
{
    mpz_t z;
    mpz_init(z);
    bool ok = mpz_set_str(z, e->text, 10) == 0 && mpz_fits_slong_p(z);
    if (ok)
        *out = mpz_get_si(z);
    mpz_clear(z);
    if (!ok)
        error_at(c, e->loc, "integer %s is too large (the limit is 2^63 - 1)", e->text);
    return ok;
}
