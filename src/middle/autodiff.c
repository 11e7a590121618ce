/* autodiff.c: reverse-mode differentiation of the graph (training only).
 *
 * Requires: a lowered graph and c->train (a model without a train section
 * passes through untouched).  Produces: after the forward nodes, the
 * backward nodes, in reverse order of the forward ones:
 *   - the seed: d(loss) = scale / accumulate (a GRAD node with no forward
 *     op), so the backward pass computes the scaled gradients GradScaler's
 *     scale(loss).backward() would;
 *   - for a Cast, a Cast of the gradient back to the source dtype (PyTorch's
 *     ToCopyBackward): a parameter's gradient reaches it in the parameter's
 *     dtype, f32, however low the ops using it ran;
 *   - for every other op, one GRAD node computing the gradients of all its
 *     inputs that need one, in the dtype the op ran in (autograd runs each
 *     backward in its forward's dtype); emit_grad.c writes its kernel calls;
 *     it reads the gradients of the op's other results too (dy_more: R of
 *     qr, S and Vh (V) of the SVDs, eigh's eigenvectors), and runs when only
 *     those have one (its dy is then NULL, a zero gradient);
 *   - an add where a value feeds several ops and so receives several
 *     gradients.
 * g->grads lists each trainable parameter with its gradient value.  An op
 * on the path from a parameter to the loss with no gradient rule is a
 * compile-time error at that op.
 */
#include "middle.h"

#include <string.h>

/* Which inputs of n are data a gradient flows into: floating tensors that
 * are not index operands (targets, indices, conditions). */
static bool differentiable_input(const Node *n, int k)
{
    const Value *v = n->in[k];
    if (!v || !(dtype_is_float(v->type.dtype) || dtype_is_complex(v->type.dtype)))
        return false;
    /* index operands, and class-probability targets, get no gradient */
    return !op_index_arg(n->op, k);
}

/* Whether the GRAD rule of n takes the gradient of its result more_out[r]
 * (the backward kernels take every result's gradient, NULL for none). */
static bool more_result_differentiable(const Node *n, int r)
{
    switch (n->op->id) {
    case OP_QR: case OP_LINALG_QR: /* R */
    case OP_LINALG_EIGH:           /* the eigenvectors */
        return r == 0;
    case OP_LINALG_SVD: case OP_SVD: /* S, and Vh (torch.svd's V, transposed by the rule) */
        return r <= 1;
    case OP_LSTM_CELL: /* the cell state, which an unrolled lstm's next step reads */
        return r == 0;
    default:
        return false;
    }
}

static Value *new_temp(Ctx *c, Node *def, Type t)
{
    Value *v = ir_new_value(c, V_TEMP, t, NULL);
    v->def = def;
    return v;
}

/* grad[v] += g: the first gradient is taken as is, later ones added. */
static void accumulate(Ctx *c, Value **grad, Value *v, Value *g, Loc loc)
{
    if (!grad[v->id]) {
        grad[v->id] = g;
        return;
    }
    Node *add = ir_new_node(c, op_info(c, OP_ADD), loc);
    add->in[0] = grad[v->id];
    add->in[1] = g;
    add->nin = 2;
    add->out = new_temp(c, add, v->type);
    add->why = arena_printf(c->arena, "gradient: sum over the %s's uses", v->name ? v->name : "value");
    grad[v->id] = add->out;
}

/* Which values need a gradient (requires_grad): the floating parameters,
 * and forward what an operand that needs one flows into.  Reports a
 * trained parameter of a run-time shape. */
static bool mark_requires_grad(Ctx *c, Graph *g, bool *req)
{
    for (int i = 0; i < g->params->len; i++) {
        Value *p = VEC_AT(g->params, i);
        req[p->id] = p->kind == V_PARAM && dtype_is_float(p->type.dtype);
        int64_t size;
        for (int d = 0; req[p->id] && d < p->type.shape.ndim; d++)
            if (!poly_is_const(p->type.shape.dims[d], &size)) {
                /* the training state holds parameters at a fixed layout */
                error_at(c, c->train->loc, "a trained parameter needs a fixed shape, but %s is %s", p->name,
                         type_to_string(c, &p->type));
                return false;
            }
    }

    int nforward = g->nodes->len;
    for (int i = 0; i < nforward; i++) {
        Node *n = VEC_AT(g->nodes, i);
        bool any = false;
        for (int k = 0; k < n->nin; k++)
            any |= n->in[k] && req[n->in[k]->id] && differentiable_input(n, k);
        /* complex values carry the dependence too (abs(fft_rfft(w * x))), so
         * the op without a gradient rule is the one reported */
        if (any && (dtype_is_float(n->out->type.dtype) || dtype_is_complex(n->out->type.dtype)))
            req[n->out->id] = true;
        for (int r = 0; any && r < n->nmore; r++) /* q, r = qr(a): both depend on a */
            if (dtype_is_float(n->more_out[r]->type.dtype) || dtype_is_complex(n->more_out[r]->type.dtype))
                req[n->more_out[r]->id] = true;
    }
    return true;
}

/* A Cast's gradient goes back to the source dtype: PyTorch's ToCopyBackward. */
static void differentiate_cast(Ctx *c, Node *n, Value *dy, const bool *req, Value **grad)
{
    Value *src = n->in[0];
    if (!dy || !req[src->id])
        return;
    Node *back = ir_new_node(c, op_info(c, OP_CAST), n->loc);
    back->instance = n->instance;
    back->instance_loc = n->instance_loc;
    back->instance_root = n->instance_root;
    back->in[0] = dy;
    back->nin = 1;
    back->out = new_temp(c, back, src->type);
    back->why = arena_printf(c->arena, "gradient of the cast %s -> %s: back to %s",
                             dtype_name(src->type.dtype), dtype_name(n->out->type.dtype),
                             dtype_name(src->type.dtype));
    accumulate(c, grad, src, back->out, n->loc);
}

/* The operands of n that get a gradient: each checked against the rule
 * (an operand it gives none is an error, not a gradient left unwritten).
 * Returns how many; *ok becomes false after reporting. */
static int wanted_operands(Ctx *c, Node *n, int nslots, const bool *req, bool *ok)
{
    int wanted = 0;
    for (int k = 0; k < nslots; k++) {
        /* a float operand in an index position (cross_entropy's class
         * probabilities) that depends on a parameter: PyTorch would
         * differentiate it, ampc does not yet, so it must not be silent */
        if (n->in[k] && req[n->in[k]->id] && !differentiable_input(n, k) && dtype_is_float(n->in[k]->type.dtype)) {
            error_at(c, n->loc, "%s: operand %d depends on a parameter, and its gradient is not supported yet",
                     n->op->name, k + 1);
            *ok = false;
            continue;
        }
        if (!(n->in[k] && req[n->in[k]->id] && differentiable_input(n, k)))
            continue;
        const char *no = grad_input_missing(c, n, k);
        if (no) {
            error_at(c, n->loc, "%s", no);
            *ok = false;
            continue;
        }
        wanted++;
    }
    for (int k = nslots; k < n->nin; k++)
        if (n->in[k] && req[n->in[k]->id] && differentiable_input(n, k)) {
            /* a gradient node holds six operands (docs/ir.md); cat and
             * stack, whose rules read none, take any number */
            error_at(c, n->loc, "%s: a gradient for operand %d is not supported: a training step differentiates "
                     "an op's first %d operands", n->op->name, k + 1, nslots);
            *ok = false;
            break;
        }
    return wanted;
}

/* A GRAD node of forward node n, reading dy, n's first six operands and
 * its result (no gradient written yet). */
static Node *new_grad_node(Ctx *c, Node *n, Value *dy, Value **grad)
{
    Node *b = ir_new_node(c, op_info(c, OP_GRAD), n->loc);
    int nin = n->nin < 6 ? n->nin : 6;
    b->fwd = n;
    b->instance = n->instance;
    b->instance_loc = n->instance_loc;
    b->instance_root = n->instance_root;
    b->in[0] = dy;
    for (int k = 0; k < nin; k++)
        b->in[1 + k] = n->in[k];
    b->in[7] = n->out;
    b->nin = 8;
    /* what the rule never reads need not stay alive for it (and leaves
     * the forward free to fuse: fuse.c's linear -> relu and conv ->
     * batch_norm -> add -> relu): the gradients of a linear, a
     * convolution and batch_norm use their inputs, not y; relu's uses
     * y (y <= 0 exactly where x <= 0, NaN passing in both), not x */
    if (n->op->id == OP_LINEAR || n->op->id == OP_CONV1D || n->op->id == OP_CONV2D ||
        n->op->id == OP_CONV3D || n->op->id == OP_BATCH_NORM)
        b->in[7] = NULL; /* their rules read the inputs, never y */
    if (n->op->id == OP_RELU)
        b->in[1] = NULL;
    /* NULL where no gradient reaches a result, and dy (in[0]) NULL
     * when only the other results have one: the rule takes it as 0 */
    for (int r = 0; r < n->nmore; r++)
        b->dy_more[r] = grad[n->more_out[r]->id];
    b->why = arena_printf(c->arena, "gradient of %s, in %s as its forward", n->op->name,
                          dtype_name(n->out->type.dtype));
    return b;
}

/* b's results written: its scratch, and each gradient accumulated into
 * its operand's. */
static void finish_grad_node(Ctx *c, Node *n, Node *b, int nout, Value **grad)
{
    b->nmore = nout > 0 ? nout - 1 : 0;
    Type st = op_scratch_type(c, b);
    if (st.dtype != DT_NONE)
        b->scratch = new_temp(c, b, st);
    for (int r = 0; r < nout; r++) {
        Value *gk = r == 0 ? b->out : b->more_out[r - 1];
        accumulate(c, grad, n->in[b->grad_input[r]], gk, n->loc);
    }
}

/* The GRAD node of forward node n: it reads dy, n's operands and result,
 * and writes one gradient per operand that needs one, each accumulated
 * into that operand's gradient.  cat and stack, whose rule reads no
 * operand's data, take any number of operands: one GRAD node per
 * MAX_NODE_GRADS of them that need a gradient.  Returns false after
 * reporting. */
static bool differentiate_node(Ctx *c, Node *n, Value *dy, const bool *req, Value **grad)
{
    /* a GRAD node reads the forward's first six operands (in[1..6]);
     * lstm_cell's seventh, b_hh, gets a gradient too: its rule reads
     * b_hh from the forward node */
    bool any = n->op->id == OP_CAT || n->op->id == OP_STACK;
    int nin = n->nin < 6 ? n->nin : 6;
    int nslots = any ? n->nin : n->op->id == OP_LSTM_CELL && n->nin > 6 ? 7 : nin;
    bool ok = true;
    if (wanted_operands(c, n, nslots, req, &ok) == 0)
        return ok;
    Node *b = new_grad_node(c, n, dy, grad);
    int nout = 0;
    for (int k = 0; k < nslots; k++) {
        if (!n->in[k] || !req[n->in[k]->id] || !differentiable_input(n, k) || grad_input_missing(c, n, k))
            continue;
        /* the same value twice (x * x): one gradient per operand slot */
        if (nout == MAX_NODE_GRADS && any) {
            finish_grad_node(c, n, b, nout, grad);
            b = new_grad_node(c, n, dy, grad);
            nout = 0;
        } else if (nout == MAX_NODE_GRADS) {
            error_at(c, n->loc, "%s: more than %d operands need a gradient", n->op->name, MAX_NODE_GRADS);
            ok = false;
            break;
        }
        Value *gk = new_temp(c, b, n->in[k]->type);
        b->grad_input[nout] = k;
        if (nout == 0)
            b->out = gk;
        else
            b->more_out[nout - 1] = gk;
        nout++;
    }
    if (nout == 0)
        return ok; /* only after an error above */
    finish_grad_node(c, n, b, nout, grad);
    return ok;
}

bool autodiff(Ctx *c)
{
    if (!c->train)
        return true;
    Graph *g = c->graph;
    Value *loss = g->loss;
    int nvalues = g->values->len;
    bool *req = arena_alloc(c->arena, (size_t)nvalues + 1);
    Value **grad = arena_alloc(c->arena, ((size_t)nvalues + 1) * sizeof *grad);
    memset(req, 0, (size_t)nvalues + 1);
    if (!mark_requires_grad(c, g, req))
        return false;
    int nforward = g->nodes->len;
    if (!req[loss->id]) {
        error_at(c, c->train->loss_loc, "the loss does not depend on any parameter: there is nothing to train");
        return false;
    }

    /* the seed */
    Node *seed = ir_new_node(c, op_info(c, OP_GRAD), c->train->loss_loc);
    seed->out = new_temp(c, seed, loss->type);
    seed->why = "the seed: d(loss) = loss scale / micro-batches per update";
    grad[loss->id] = seed->out;

    bool ok = true;
    for (int i = nforward - 1; i >= 0; i--) {
        Node *n = VEC_AT(g->nodes, i);
        Value *dy = req[n->out->id] ? grad[n->out->id] : NULL;
        bool through_more = false;
        for (int r = 0; r < n->nmore; r++)
            through_more |= grad[n->more_out[r]->id] != NULL;
        if ((!dy || !req[n->out->id]) && !through_more)
            continue;
        if (through_more && n->op->id != OP_CAST && grad_rule_missing(c, n)) {
            error_at(c, n->loc, "%s", grad_rule_missing(c, n));
            ok = false;
            continue;
        }
        bool more_ok = true;
        for (int r = 0; r < n->nmore; r++) {
            if (grad[n->more_out[r]->id] && !more_result_differentiable(n, r)) {
                error_at(c, n->loc, "the gradient through result %d of %s%s is not supported yet", r + 2, n->op->name,
                         n->op->id == OP_LSTM_CELL ? " (its cell state)" : "");
                more_ok = ok = false;
            }
        }
        if (!more_ok)
            continue;
        if (n->op->id == OP_CAST) {
            differentiate_cast(c, n, dy, req, grad);
            continue;
        }
        const char *why_not = grad_rule_missing(c, n);
        if (why_not) {
            error_at(c, n->loc, "%s", why_not);
            ok = false;
            continue;
        }
        /* a + b of the result's shape and dtype (a residual connection):
         * each operand's gradient is dy itself, shared, not a copy per
         * operand (x + x still sums dy with itself, in accumulate) */
        if (n->op->id == OP_ADD && n->nin == 2 && dy && n->in[0] && n->in[1] &&
            shape_equal(&n->in[0]->type.shape, &n->out->type.shape) &&
            shape_equal(&n->in[1]->type.shape, &n->out->type.shape) &&
            n->in[0]->type.dtype == n->out->type.dtype && n->in[1]->type.dtype == n->out->type.dtype) {
            for (int k = 0; k < 2; k++)
                if (req[n->in[k]->id] && differentiable_input(n, k))
                    accumulate(c, grad, n->in[k], dy, n->loc);
            continue;
        }
        if (!differentiate_node(c, n, dy, req, grad))
            ok = false;
    }
    if (!ok)
        return false;

    g->grads = vec_new(c);
    for (int i = 0; i < g->params->len; i++) {
        Value *p = VEC_AT(g->params, i);
        if (p->kind == V_PARAM && dtype_is_float(p->type.dtype)) {
            p->grad = grad[p->id];
            if (p->grad)
                vec_push(c, g->grads, p);
        }
    }
    return ir_verify(c, "autodiff");
}
