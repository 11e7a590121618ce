/* optimize.c: cast CSE (the autocast weight cache) and dead-code removal.
 *
 * Requires: a verified graph.  Produces: at most one cast of a value to a
 * given dtype per run (so a parameter used by three bf16 ops is cast once
 * per step, as PyTorch's autocast weight cache does); no node whose result
 * reaches no output; use counts on every value.
 * May break: node ids are no longer dense (schedule order is kept).
 */
#include "middle.h"

#include <string.h>

/* Merge casts of one value to one dtype into the first of them: each cast
 * is looked up by (value, dtype) in a map, and the uses of the merged ones
 * are redirected in one sweep, so this stays linear in the graph. */
static void cast_cse(Ctx *c)
{
    Graph *g = c->graph;
    StrMap *first = strmap_new(c->arena);
    Value **replace = arena_alloc(c->arena, (size_t)(g->values->len + 1) * sizeof *replace);
    bool any = false;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *b = VEC_AT(g->nodes, i);
        if (b->dead || b->op->id != OP_CAST || b->out->is_output)
            continue;
        Value *src = replace[b->in[0]->id] ? replace[b->in[0]->id] : b->in[0];
        const char *key = arena_printf(c->arena, "%d:%d", src->id, (int)b->out->type.dtype);
        Node *a = strmap_get(first, key);
        if (!a) {
            strmap_put(first, key, b);
            continue;
        }
        replace[b->out->id] = a->out;
        b->dead = true;
        any = true;
        if (a->in[0]->kind == V_PARAM && !strstr(a->why, "(weight cache)"))
            a->why = arena_printf(c->arena, "%s; cast once and reused (weight cache)", a->why);
    }
    if (!any)
        return;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] && replace[n->in[k]->id])
                n->in[k] = replace[n->in[k]->id];
        for (int r = 0; r < 3; r++)
            if (n->dy_more[r] && replace[n->dy_more[r]->id])
                n->dy_more[r] = replace[n->dy_more[r]->id];
    }
}

/* Mark everything an output depends on, with an explicit stack: a chain of
 * a hundred thousand ops must not become as many C stack frames. */
static void mark_live(Ctx *c, Value *root)
{
    Vec *stack = vec_new(c);
    vec_push(c, stack, root);
    while (stack->len) {
        Value *v = stack->items[--stack->len];
        if (v->kind != V_TEMP || !v->def || !v->def->dead)
            continue;
        v->def->dead = false;
        for (int k = 0; k < node_nreads(v->def); k++)
            if (node_read(v->def, k))
                vec_push(c, stack, node_read(v->def, k));
    }
}

static void dead_code(Ctx *c)
{
    Graph *g = c->graph;
    bool *was_dead = arena_alloc(c->arena, (size_t)g->nodes->len + 1);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        was_dead[i] = n->dead;
        n->dead = true;
    }
    for (int i = 0; i < g->outputs->len; i++)
        mark_live(c, VEC_AT(g->outputs, i));
    for (int i = 0; g->grads && i < g->grads->len; i++)
        mark_live(c, ((Value *)VEC_AT(g->grads, i))->grad);
    Vec *kept = vec_new(c);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (!n->dead && !was_dead[i])
            vec_push(c, kept, n);
    }
    g->nodes = kept;
    for (int i = 0; i < g->values->len; i++)
        ((Value *)VEC_AT(g->values, i))->nuses = 0;
    for (int i = 0; i < kept->len; i++) {
        Node *n = VEC_AT(kept, i);
        for (int k = 0; k < node_nreads(n); k++)
            if (node_read(n, k))
                node_read(n, k)->nuses++;
    }
}

bool optimize(Ctx *c)
{
    cast_cse(c);
    dead_code(c);
    return ir_verify(c, "optimize");
}
