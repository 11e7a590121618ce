/* memplan.c: one static arena, with buffers reused by liveness.
 *
 * Requires: an optimized graph in schedule order.  Produces: a slot for
 * every temporary that is not an output (outputs live in the caller's
 * buffers); g->nslots slots, each as large as the largest buffer it ever
 * holds.  Sizes are symbolic (polynomials in the model's dims), so a slot's
 * size is the max of a list of polynomials, printed by emit_c.c as C.
 *
 * A buffer's slot is free again after the node that reads it last, so a
 * kernel never writes a slot it is still reading: no kernel needs to
 * support aliasing.  First fit, preferring a free slot that already holds a
 * buffer of exactly this size (the common case: same-shape activations).
 *
 * A view of a temporary (OPF_VIEW: reshape, flatten, ...; a dropout that
 * draws no mask; a view's gradient, dy reshaped back) takes its operand's
 * slot instead, kept until the later of the two's last reads: its
 * elements are the operand's as they lie, and no kernel writes a value it
 * reads, so the two share one buffer and the view copies nothing
 * (emit_shape.c's emit_copy, grad_shape.c's grad_view).
 */
#include "middle.h"

Poly *value_bytes(Ctx *c, const Value *v)
{
    Poly *n = shape_numel(c, &v->type.shape);
    ASSERT(n);
    Poly *b = poly_mul(c, n, poly_const(c, dtype_size(v->type.dtype)));
    ASSERT(b);
    return b;
}

/* a >= b for every value of the dims (which are never negative): every
 * coefficient of a - b is non-negative. */
static bool dominates(Ctx *c, const Poly *a, const Poly *b)
{
    Poly *d = poly_sub(c, a, b);
    if (!d)
        return false;
    for (int i = 0; i < d->nterms; i++)
        if (d->terms[i].coef < 0)
            return false;
    return true;
}

/* Give the value defined by node i a slot that is free by then. */
static void place(Ctx *c, Graph *g, Vec *slot_free_after, Value *v, int i)
{
    if (v->is_output)
        return;
    Poly *bytes = value_bytes(c, v);
    int pick = -1;
    for (int s = 0; s < g->nslots; s++) {
        if ((intptr_t)VEC_AT(slot_free_after, s) >= i)
            continue;
        Vec *sizes = VEC_AT(g->slot_sizes, s);
        bool same = false;
        for (int k = 0; k < sizes->len; k++)
            same |= poly_equal(VEC_AT(sizes, k), bytes);
        if (same) {
            pick = s;
            break;
        }
        if (pick < 0)
            pick = s;
    }
    if (pick < 0) {
        pick = g->nslots++;
        vec_push(c, g->slot_sizes, vec_new(c));
        vec_push(c, slot_free_after, (void *)(intptr_t)-1);
    }
    /* a slot is as large as the largest of its buffers: keep only the sizes
     * no other one bounds, so the emitted max() stays short (a deep model's
     * nested max of hundreds of sizes is too much for a C preprocessor) */
    Vec *sizes = VEC_AT(g->slot_sizes, pick);
    bool covered = false;
    for (int k = 0; k < sizes->len && !covered; k++)
        covered = dominates(c, VEC_AT(sizes, k), bytes);
    if (!covered) {
        int kept = 0;
        for (int k = 0; k < sizes->len; k++)
            if (!dominates(c, bytes, VEC_AT(sizes, k)))
                sizes->items[kept++] = sizes->items[k];
        sizes->len = kept;
        vec_push(c, sizes, bytes);
    }
    v->slot = pick;
    /* an unread temporary is dead at once, but still needs its slot while
     * its own node runs */
    int until = v->last_use > i ? v->last_use : i;
    slot_free_after->items[pick] = (void *)(intptr_t)until;
}

/* Whether node n's result is operand 0's elements as they lie: a view
 * (OPF_VIEW), a dropout that draws no mask (p = 0, training=False, or
 * outside the training step, whose graph alone has gradients), which the
 * emitter writes as a copy, or a view's gradient (GRAD, in[0] dy: the
 * view's operand's gradient is dy's elements in the operand's shape). */
static bool is_view(const Graph *g, const Node *n)
{
    if (n->op->flags & OPF_VIEW)
        return true;
    if (n->op->id == OP_GRAD)
        return n->fwd && (n->fwd->op->flags & OPF_VIEW) && n->in[0] && n->nmore == 0;
    return n->op->id == OP_DROPOUT && !(g->grads && dropout_draws(n));
}

/* The view node i's result in its operand's slot (true), when the operand
 * is a temporary of the same dtype and size and the result is not an
 * output (written to the caller's buffer). */
static bool share_operand_slot(Ctx *c, Vec *slot_free_after, Node *n, int i)
{
    Value *v = n->out, *u = n->nin > 0 ? n->in[0] : NULL;
    if (!is_view(c->graph, n) || v->is_output || !u || u->slot < 0 || u->type.dtype != v->type.dtype ||
        !poly_equal(value_bytes(c, u), value_bytes(c, v)))
        return false;
    v->slot = u->slot;
    intptr_t until = (intptr_t)VEC_AT(slot_free_after, u->slot);
    if (v->last_use > until)
        until = v->last_use;
    if (i > until)
        until = i;
    slot_free_after->items[u->slot] = (void *)until;
    return true;
}

bool memplan(Ctx *c)
{
    Graph *g = c->graph;
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        v->slot = -1;
        v->last_use = -1;
    }
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < node_nreads(n); k++)
            if (node_read(n, k))
                node_read(n, k)->last_use = i;
    }

    /* the training step reads the gradients after the last node */
    for (int i = 0; g->grads && i < g->grads->len; i++) {
        Value *gr = ((Value *)VEC_AT(g->grads, i))->grad;
        gr->last_use = g->nodes->len;
    }

    g->slot_sizes = vec_new(c);
    Vec *slot_free_after = vec_new(c); /* per slot: schedule index after which it is free */
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (!share_operand_slot(c, slot_free_after, n, i))
            place(c, g, slot_free_after, n->out, i);
        for (int r = 0; r < n->nmore; r++)
            place(c, g, slot_free_after, n->more_out[r], i);
        if (n->scratch) /* read by its own node only */
            place(c, g, slot_free_after, n->scratch, i);
    }
    return ir_verify(c, "memplan");
}
