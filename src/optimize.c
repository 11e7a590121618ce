/* optimize.c: cast CSE (the autocast weight cache) and dead-code removal.
 *
 * Requires: a verified graph.  Produces: at most one cast of a value to a
 * given dtype per run (so a parameter used by three bf16 ops is cast once
 * per step, as PyTorch's autocast weight cache does); no node whose result
 * reaches no output; use counts on every value.
 * May break: node ids are no longer dense (schedule order is kept).
 */
#include "ampc.h"

#include <string.h>

static void replace_uses(Graph *g, Value *from, Value *to)
{
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == from)
                n->in[k] = to;
    }
}

static void cast_cse(Ctx *c)
{
    Graph *g = c->graph;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *a = VEC_AT(g->nodes, i);
        if (a->dead || a->op->id != OP_CAST || a->out->is_output)
            continue;
        for (int j = i + 1; j < g->nodes->len; j++) {
            Node *b = VEC_AT(g->nodes, j);
            if (b->dead || b->op->id != OP_CAST || b->out->is_output || b->in[0] != a->in[0] ||
                b->out->type.dtype != a->out->type.dtype)
                continue;
            replace_uses(g, b->out, a->out);
            b->dead = true;
            if (a->in[0]->kind == V_PARAM && !strstr(a->why, "(weight cache)"))
                a->why = arena_printf(c->arena, "%s; cast once and reused (weight cache)", a->why);
        }
    }
}

static void mark_live(Value *v)
{
    if (v->kind != V_TEMP || !v->def || v->def->dead == false)
        return;
    v->def->dead = false;
    for (int k = 0; k < v->def->nin; k++)
        if (v->def->in[k])
            mark_live(v->def->in[k]);
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
        mark_live(VEC_AT(g->outputs, i));
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
        for (int k = 0; k < n->nin; k++)
            if (n->in[k])
                n->in[k]->nuses++;
    }
}

bool optimize(Ctx *c)
{
    cast_cse(c);
    dead_code(c);
    return ir_verify(c, "optimize");
}
