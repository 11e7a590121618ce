/* fuse.c: convolution epilogues, a linear's relu, and a training step's
 * loss with its gradient.
 *
 * Requires: an optimized graph in schedule order.  Produces: groups of a
 * convolution and what follows it, run as one kernel call
 * (amp_conv_ex_<T>):
 *
 *     conv -> batch_norm (running statistics) [-> add(., residual)] [-> relu]
 *
 * where each intermediate result has exactly one reader, the next op of
 * the group, and is not an output; in the training graph the convolution's
 * result may also be read by gradient nodes (batch_norm's reads it; the
 * other rules read no result of the group but its last): the call then
 * writes it too (amp_conv_post.raw, Node.fused_raw), and it keeps its
 * buffer.  The group's last node gets
 * fused[] = {conv, batch_norm, add, relu} and the others absorbed_by =
 * that node: emit_c.c writes the call where the last node stands (every
 * operand of the group is computed by then), and the absorbed nodes only
 * as comments.  memplan.c gives absorbed results no buffer and keeps the
 * group's operands alive until the call, so its output never shares a
 * slot with the convolution's input.
 *
 * The runtime applies the fused ops to each output tile with the separate
 * kernels' arithmetic, rounding to the storage dtype after every op as
 * they do, so fusing changes no bit of any result; it saves the three
 * passes over memory (and the buffers) the separate calls cost.
 *
 * A linear whose one reader is a relu (of its dtype; the linear's result
 * not an output) runs as one amp_linear_relu_<T> call where the relu
 * stands (relu->fused_linear; the linear absorbed_by it): the relu applied
 * to each tile of the product, after its one rounding, as the relu kernel
 * would.  In the training graph the relu's gradient reads y, not x, and
 * the linear's reads x and w, not y (autodiff.c), so the product needs no
 * buffer there either.
 *
 * In the training graph, a linear's gradient node whose input gradient is
 * read only by the gradient of the relu that made that input masks its
 * product by the relu's output (amp_gemm_relu_backward_<T>: +0 where
 * y <= 0, as relu_backward) and writes the relu gradient's result itself
 * (linear GRAD ->relu_grad; the relu's GRAD absorbed_by it); the input
 * gradient itself then needs no buffer.  A max_pool's gradient does the
 * same (amp_max_pool_relu_backward_<T>: the mask as each plane's sums are
 * stored), saving a pass over the largest activations of a network whose
 * stem pools a relu (resnet's); and so does the add summing two gradients
 * of a relu's output (a residual block's input, read by both its paths),
 * amp_add_relu_backward_<T>: the sum, rounded as add rounds it, masked.
 *
 * In the training graph, a cross_entropy with class targets whose result
 * (an output: the loss) nothing reads before its gradient node runs is
 * computed by that node's call, amp_cross_entropy_with_grad_<T>: the loss
 * and the gradient of the logits in one pass over them (the two kernels'
 * results, bit for bit).  The gradient node gets with_forward = the
 * cross_entropy, which is absorbed_by it; the gradient node already reads
 * everything the forward does, so their buffers live until the call.
 *
 * May break: nothing; nodes and values stay where they are.
 */
#include "middle.h"

#include <string.h>

static bool fusable_dtype(DType t) { return t == DT_F32 || t == DT_BF16 || t == DT_F16 || t == DT_F64; }

static bool is_forward_conv(const Node *n)
{
    switch (n->op->id) {
    case OP_CONV1D: case OP_CONV2D: case OP_CONV3D:
        return true;
    case OP_CONVOLUTION:
        return !attr_bool(n, "transposed", false);
    default:
        return false;
    }
}

/* The cross_entropy of class targets that gradient node b (at schedule
 * index at) can compute with its own call, or NULL: its only gradient is
 * the logits', its result is an output (no buffer of its own to keep),
 * and no node between the two reads that result. */
static Node *loss_with_grad(const Graph *g, const Node *b, int at)
{
    Node *f = b->fwd;
    if (b->op->id != OP_GRAD || !f || f->op->id != OP_CROSS_ENTROPY || f->absorbed_by ||
        !f->in[1] || f->in[1]->type.dtype != DT_I64 || !fusable_dtype(f->out->type.dtype) || !f->out->is_output ||
        b->nmore != 0 || b->grad_input[0] != 0 || !b->in[0])
        return NULL;
    for (int i = at - 1; i >= 0; i--) {
        Node *n = VEC_AT(g->nodes, i);
        if (n == f)
            return f;
        for (int k = 0; k < node_nreads(n); k++)
            if (node_read(n, k) == f->out)
                return NULL;
    }
    return NULL;
}

/* The one node reading v, or NULL when v is an output, has another
 * number of readers (or one node reads it twice), or its reader is in a
 * group already (an add of two batch_norms joins the first's group). */
static Node *sole_reader(Value *v, int *nreads, Node **reader)
{
    if (v->is_output || nreads[v->id] != 1)
        return NULL;
    Node *n = reader[v->id];
    return n->absorbed_by || n->fused[0] ? NULL : n;
}

bool fuse(Ctx *c)
{
    Graph *g = c->graph;
    int nv = g->values->len;
    int *nreads = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *nreads);
    int *nfwd = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *nfwd); /* reads by forward nodes */
    Node **reader = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *reader);
    Node **fwd_reader = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *fwd_reader);
    memset(nreads, 0, (size_t)(nv + 1) * sizeof *nreads);
    memset(nfwd, 0, (size_t)(nv + 1) * sizeof *nfwd);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        n->fused[0] = n->fused[1] = n->fused[2] = n->fused[3] = NULL;
        n->absorbed_by = NULL;
        n->fused_raw = false;
        n->with_forward = NULL;
        n->fused_linear = NULL;
        n->relu_grad = NULL;
        for (int k = 0; k < node_nreads(n); k++) {
            Value *v = node_read(n, k);
            if (v) {
                nreads[v->id]++;
                reader[v->id] = n;
                if (n->op->id != OP_GRAD) {
                    nfwd[v->id]++;
                    fwd_reader[v->id] = n;
                }
            }
        }
    }
    /* the training step's batch_norm(training=true) uses batch statistics */
    bool training_graph = g->grads != NULL;
    if (c->opts->no_fuse)
        return ir_verify(c, "fuse");

    for (int i = 0; i < g->nodes->len; i++) {
        Node *conv = VEC_AT(g->nodes, i);
        DType t = conv->out->type.dtype;
        if (!is_forward_conv(conv) || !fusable_dtype(t) || conv->absorbed_by)
            continue;
        /* in the training graph the convolution's result may also be read
         * by gradient nodes (batch_norm's): the call then keeps it too */
        Node *bn = sole_reader(conv->out, nreads, reader);
        bool raw = false;
        if (!bn && training_graph && !conv->out->is_output && nfwd[conv->out->id] == 1 &&
            !fwd_reader[conv->out->id]->absorbed_by && !fwd_reader[conv->out->id]->fused[0]) {
            bn = fwd_reader[conv->out->id];
            raw = true;
        }
        if (!bn || bn->op->id != OP_BATCH_NORM || bn->in[0] != conv->out || bn->out->type.dtype != t ||
            !bn->in[1] || !bn->in[2] ||
            (training_graph && attr_bool(bn, "training", false)))
            continue;
        Node *last = bn, *add = NULL, *relu = NULL;
        Node *next = sole_reader(bn->out, nreads, reader);
        if (next && next->op->id == OP_ADD && next->nin == 2 && next->out->type.dtype == t &&
            next->in[0] != next->in[1] && shape_equal(&next->in[0]->type.shape, &next->out->type.shape) &&
            shape_equal(&next->in[1]->type.shape, &next->out->type.shape) &&
            next->in[0]->type.dtype == t && next->in[1]->type.dtype == t) {
            add = last = next;
            next = sole_reader(add->out, nreads, reader);
        }
        if (next && next->op->id == OP_RELU && next->out->type.dtype == t) {
            relu = last = next;
        }
        last->fused[0] = conv;
        last->fused[1] = bn;
        last->fused_raw = raw;
        last->fused[2] = add;
        last->fused[3] = relu;
        Node *group[4] = {conv, bn, add, relu};
        for (int k = 0; k < 4; k++)
            if (group[k] && group[k] != last)
                group[k]->absorbed_by = last;
    }

    /* linear -> relu: one amp_linear_relu_<T> call where the relu stands */
    for (int i = 0; i < g->nodes->len; i++) {
        Node *lin = VEC_AT(g->nodes, i);
        if (lin->op->id != OP_LINEAR || lin->absorbed_by || !fusable_dtype(lin->out->type.dtype))
            continue;
        Node *relu = sole_reader(lin->out, nreads, reader);
        if (!relu || relu->op->id != OP_RELU || relu->in[0] != lin->out ||
            relu->out->type.dtype != lin->out->type.dtype)
            continue;
        relu->fused_linear = lin;
        lin->absorbed_by = relu;
    }

    /* a linear's or a max_pool's input gradient, or a sum of two gradients,
     * straight through the relu before it */
    Node **definer = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *definer);
    memset(definer, 0, (size_t)(nv + 1) * sizeof *definer);
    for (int i = 0; training_graph && i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        definer[n->out->id] = n;
    }
    for (int i = 0; training_graph && i < g->nodes->len; i++) {
        Node *br = VEC_AT(g->nodes, i);
        if (br->op->id != OP_GRAD || !br->fwd || br->fwd->op->id != OP_RELU || !br->in[0] || br->absorbed_by)
            continue;
        Value *dy = br->in[0];
        Node *bl = definer[dy->id];
        if (!bl || bl->out != dy || bl->absorbed_by || bl->relu_grad || dy->is_output || nreads[dy->id] != 1 ||
            dy->type.dtype != br->out->type.dtype || !fusable_dtype(dy->type.dtype))
            continue;
        bool grad_of_input = bl->op->id == OP_GRAD && bl->fwd &&
                             (bl->fwd->op->id == OP_LINEAR || bl->fwd->op->id == OP_MAX_POOL2D ||
                              bl->fwd->op->id == OP_MAX_POOL3D) &&
                             bl->grad_input[0] == 0 && bl->fwd->in[0] == br->fwd->out;
        /* autodiff.c's sum of two gradients of the relu's output */
        bool sum = bl->op->id == OP_ADD && bl->nin == 2 && bl->in[0] && bl->in[1] &&
                   shape_equal(&bl->in[0]->type.shape, &dy->type.shape) &&
                   shape_equal(&bl->in[1]->type.shape, &dy->type.shape) &&
                   bl->in[0]->type.dtype == dy->type.dtype && bl->in[1]->type.dtype == dy->type.dtype;
        if (!grad_of_input && !sum)
            continue;
        bl->relu_grad = br;
        br->absorbed_by = bl;
    }

    for (int i = 0; training_graph && i < g->nodes->len; i++) {
        Node *b = VEC_AT(g->nodes, i);
        Node *f = loss_with_grad(g, b, i);
        if (f) {
            b->with_forward = f;
            f->absorbed_by = b;
        }
    }
    return ir_verify(c, "fuse");
}

/* The residual operand of a fused group's add (the one that is not the
 * batch_norm's result), or NULL without an add. */
Value *fused_residual(const Node *last)
{
    const Node *add = last->fused[2];
    if (!add)
        return NULL;
    return add->in[0] == last->fused[1]->out ? add->in[1] : add->in[0];
}
