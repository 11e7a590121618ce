/* fuse.c: convolution epilogues, a linear's relu, and a training step's
 * gradients through a relu and loss with its gradient.
 *
 * Requires: an optimized graph in schedule order (the training step's
 * after autodiff, so the fused ops are never differentiated).  Produces:
 * each forward group replaced by one node of an internal fused op
 * (ops.def), standing where the group's last node stood (every operand of
 * the group is computed by then), the group's nodes out of the schedule:
 *
 *   _conv_epilogue  conv -> batch_norm (running statistics)
 *                   [-> add(., residual)] [-> relu or a clamp: relu6,
 *                   hardtanh, clamp, clamp_min, clamp_max], one
 *                   amp_conv_ex_<T> call.  Operands: the convolution's
 *                   three, batch_norm's four parameters, the residual
 *                   (NULL: no add); attributes: the convolution's,
 *                   batch_norm's eps, relu, or clamp with its bounds
 *                   clamp_min and clamp_max (an absent one: unbounded).
 *   _linear_relu    linear -> relu, one amp_linear_relu_<T> call: the relu
 *                   applied to each tile of the product after its one
 *                   rounding, as the relu kernel would.  Operands: the
 *                   linear's.
 *
 * A group's intermediate results each have exactly one reader, the next op
 * of the group, and are not outputs.  In the training graph a
 * convolution's result may also be read by gradient nodes (batch_norm's
 * reads it; the other rules read no result of the group but its last): the
 * fused node then has it as its second result (amp_conv_post.raw).  The
 * fused node's first result is the group's last (the same Value, so every
 * reader finds it); it takes the convolution's (the linear's) id, location
 * and dtype decision, and a derived attribute `parts` naming the ops it
 * stands for ("conv2d + batch_norm + relu", node_op_name), which
 * --explain, --emit=dot and the emitted comments show.  The CallSites of
 * the group's calls point at it.  Gradient nodes keep their `fwd`: the
 * absorbed node, out of the schedule but with its op, attributes and
 * operands, which is all a gradient rule reads of it.
 *
 * The runtime applies the fused ops to each output tile with the separate
 * kernels' arithmetic, rounding to the storage dtype after every op as
 * they do, so fusing changes no bit of any result; it saves the passes
 * over memory (and the buffers) the separate calls cost.
 *
 * In the training graph, the gradient groups:
 *
 * A linear's gradient node whose input gradient is read only by the
 * gradient of the relu that made that input masks its product by the
 * relu's output (amp_gemm_relu_backward_<T>: +0 where y <= 0, as
 * relu_backward): its first result becomes the relu gradient's (the
 * relu's gradient node leaves the schedule), and the derived attribute
 * through_relu says so; the input gradient itself then needs no buffer.
 * A max_pool's gradient does the same (amp_max_pool_relu_backward_<T>:
 * the mask as each plane's sums are stored), saving a pass over the
 * largest activations of a network whose stem pools a relu (resnet's).
 *   _add_relu_backward  autodiff's add summing two gradients of a relu's
 *                   output (a residual block's input, read by both its
 *                   paths) and that relu's gradient: the sum, rounded as
 *                   add rounds it, masked (amp_add_relu_backward_<T>).
 *                   Operands: the two gradients, the relu's result.
 *   _cross_entropy_with_grad  a cross_entropy of class targets whose
 *                   result (an output: the loss) nothing reads before its
 *                   gradient node runs, and that node: the loss and the
 *                   logits' gradient in one pass (the two kernels'
 *                   results, bit for bit), where the gradient node stood.
 *                   Operands: the cross_entropy's three and the loss's
 *                   gradient; results: the loss, the logits' gradient;
 *                   attributes: the cross_entropy's.
 *
 * May break: nothing; the values stay (but for a fused gradient's own
 * input gradient, which nothing reads), and so do the nodes that are not
 * in a group.
 */
#include "middle.h"

#include <stdlib.h>
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
    if (b->op->id != OP_GRAD || !f || f->op->id != OP_CROSS_ENTROPY ||
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

/* What the pass knows of the graph: each value's readers, and each node's
 * fused node (by node id: `into` for every node of a group, `stands_in`
 * for the group's last, where the fused node goes). */
typedef struct Fuse {
    Ctx *c;
    Graph *g;
    int *nreads, *nfwd;        /* reads of each value; by forward nodes */
    Node **reader, **fwd_reader;
    Node **into, **stands_in;
    int maxid;
} Fuse;

/* The one node reading v, or NULL when v is an output, has another
 * number of readers (or one node reads it twice), or its reader is in a
 * group already (an add of two batch_norms joins the first's group). */
static Node *sole_reader(const Fuse *u, Value *v)
{
    if (v->is_output || u->nreads[v->id] != 1)
        return NULL;
    Node *n = u->reader[v->id];
    return u->into[n->id] ? NULL : n;
}

static void add_attr(Node *f, const Attr *a)
{
    if (a)
        f->attrs[f->nattrs++] = *a;
}

/* A node of fused op id for the group parts[0..nparts) (the head first,
 * the last last, NULL entries skipped), with the head's id, location and
 * decision and room for its attributes; out of the schedule until
 * reschedule() puts it where the last stood. */
static Node *fused_node(Fuse *u, OpId id, Node *const *parts, int nparts)
{
    Ctx *c = u->c;
    Node *head = parts[0], *last = NULL, *f = arena_alloc(c->arena, sizeof *f);
    f->id = head->id;
    f->op = op_info(c, id);
    f->in = arena_alloc(c->arena, (size_t)(f->op->nparams > 8 ? f->op->nparams : 8) * sizeof *f->in);
    f->loc = head->loc;
    f->name_loc = head->name_loc;
    f->instance = head->instance;
    f->instance_loc = head->instance_loc;
    f->instance_root = head->instance_root;
    f->why = head->why;
    f->row = head->row;
    f->forced_from = head->forced_from;
    f->autocast_on = head->autocast_on;
    f->attrs = arena_alloc(c->arena, (size_t)(head->nattrs + 4) * sizeof *f->attrs);
    const char *names = NULL;
    for (int k = 0; k < nparts; k++) {
        if (!parts[k])
            continue;
        last = parts[k];
        u->into[last->id] = f;
        names = names ? arena_printf(c->arena, "%s + %s", names, last->op->name) : last->op->name;
    }
    u->stands_in[last->id] = f;
    f->out = last->out;
    f->out->def = f;
    Attr parts_attr = {.name = "parts", .kind = ATTR_STR, .derived = true, .text = names, .loc = head->loc};
    add_attr(f, &parts_attr);
    return f;
}

/* The ops that are amp_clamp_T's values (the bounds aside): relu6,
 * hardtanh, clamp, clamp_min, clamp_max. */
static bool is_clamp(const Node *n)
{
    switch (n->op->id) {
    case OP_RELU6: case OP_HARDTANH: case OP_CLAMP: case OP_CLAMP_MIN: case OP_CLAMP_MAX:
        return true;
    default:
        return false;
    }
}

/* The bound named name of the fused node f, as the clamp-like op c wrote
 * it (its attribute from, or the literal dflt where c's is absent or has
 * none: relu6's 0 and 6, hardtanh's defaults); no attribute when the bound
 * is absent (clamp's None). */
static void add_bound(Node *f, const Node *c, const char *name, const char *from, const char *dflt)
{
    const Attr *a = from ? attr_find(c, from) : NULL;
    Attr b;
    if (a && a->kind != ATTR_NONE) {
        b = *a;
    } else if (dflt) {
        b = (Attr){.kind = ATTR_INT, .text = dflt, .i = dflt[0] == '-' ? -atoll(dflt + 1) : atoll(dflt), .loc = c->loc};
    } else {
        return;
    }
    b.name = name;
    b.derived = false; /* an attribute of _conv_epilogue's own (ops.def) */
    add_attr(f, &b);
}

/* The clamp step's attributes: clamp (true) and its bounds clamp_min and
 * clamp_max (each absent: unbounded on that side), the numbers the
 * op's own kernel call would take (emit_elementwise.c's unary_params). */
static void add_clamp_bounds(Node *f, const Node *c)
{
    Attr on = {.name = "clamp", .kind = ATTR_BOOL, .i = 1, .text = "True", .loc = c->loc};
    add_attr(f, &on);
    switch (c->op->id) {
    case OP_RELU6: add_bound(f, c, "clamp_min", NULL, "0"); add_bound(f, c, "clamp_max", NULL, "6"); break;
    case OP_HARDTANH:
        add_bound(f, c, "clamp_min", "min_val", "-1");
        add_bound(f, c, "clamp_max", "max_val", "1");
        break;
    case OP_CLAMP: add_bound(f, c, "clamp_min", "min", NULL); add_bound(f, c, "clamp_max", "max", NULL); break;
    case OP_CLAMP_MIN: add_bound(f, c, "clamp_min", "min", NULL); break;
    default: add_bound(f, c, "clamp_max", "max", NULL); break;
    }
}

/* conv -> batch_norm [-> add] [-> relu] from the convolution conv, or
 * nothing when its result does not go on into an eval batch_norm. */
static void fuse_conv(Fuse *u, Node *conv, bool training_graph)
{
    DType t = conv->out->type.dtype;
    if (!is_forward_conv(conv) || !fusable_dtype(t) || u->into[conv->id])
        return;
    /* in the training graph the convolution's result may also be read
     * by gradient nodes (batch_norm's): the call then keeps it too */
    Node *bn = sole_reader(u, conv->out);
    bool raw = false;
    Node *fr = u->fwd_reader[conv->out->id];
    if (!bn && training_graph && !conv->out->is_output && u->nfwd[conv->out->id] == 1 && !u->into[fr->id]) {
        bn = fr;
        raw = true;
    }
    if (!bn || bn->op->id != OP_BATCH_NORM || bn->in[0] != conv->out || bn->out->type.dtype != t || !bn->in[1] ||
        !bn->in[2] || (training_graph && attr_bool(bn, "training", false)))
        return;
    Node *add = NULL, *relu = NULL;
    Node *next = sole_reader(u, bn->out);
    if (next && next->op->id == OP_ADD && next->nin == 2 && next->out->type.dtype == t &&
        next->in[0] != next->in[1] && shape_equal(&next->in[0]->type.shape, &next->out->type.shape) &&
        shape_equal(&next->in[1]->type.shape, &next->out->type.shape) && next->in[0]->type.dtype == t &&
        next->in[1]->type.dtype == t) {
        add = next;
        next = sole_reader(u, add->out);
    }
    if (next && (next->op->id == OP_RELU || is_clamp(next)) && next->out->type.dtype == t)
        relu = next;
    Node *parts[4] = {conv, bn, add, relu};
    Node *f = fused_node(u, OP_CONV_EPILOGUE, parts, 4);
    for (int k = 0; k < 3; k++)
        f->in[k] = conv->in[k];
    for (int k = 0; k < 4; k++)
        f->in[3 + k] = bn->in[1 + k];
    f->in[7] = add ? (add->in[0] == bn->out ? add->in[1] : add->in[0]) : NULL;
    f->nin = 8;
    if (raw) {
        f->more_out[f->nmore++] = conv->out;
        conv->out->def = f;
    }
    for (int k = 0; k < conv->nattrs; k++)
        add_attr(f, &conv->attrs[k]);
    add_attr(f, attr_find(bn, "eps"));
    if (relu && relu->op->id == OP_RELU) {
        Attr on = {.name = "relu", .kind = ATTR_BOOL, .i = 1, .text = "True", .loc = relu->loc};
        add_attr(f, &on);
    } else if (relu) {
        add_clamp_bounds(f, relu);
    }
}

/* linear -> relu: one amp_linear_relu_<T> call where the relu stood. */
static void fuse_linear(Fuse *u, Node *lin)
{
    if (lin->op->id != OP_LINEAR || u->into[lin->id] || !fusable_dtype(lin->out->type.dtype))
        return;
    Node *relu = sole_reader(u, lin->out);
    if (!relu || relu->op->id != OP_RELU || relu->in[0] != lin->out ||
        relu->out->type.dtype != lin->out->type.dtype)
        return;
    Node *parts[2] = {lin, relu};
    Node *f = fused_node(u, OP_LINEAR_RELU, parts, 2);
    for (int k = 0; k < lin->nin && k < 3; k++)
        f->in[k] = lin->in[k];
    f->nin = 3;
}

/* The schedule with each group's fused node where its last node stood
 * and the group's other nodes gone; the calls lowered into a group name
 * its fused node (--explain: computed, as that node). */
static void reschedule(Fuse *u)
{
    Graph *g = u->g;
    int kept = 0;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (u->stands_in[n->id])
            g->nodes->items[kept++] = u->stands_in[n->id];
        else if (!u->into[n->id])
            g->nodes->items[kept++] = n;
    }
    g->nodes->len = kept;
    for (int i = 0; g->calls && i < g->calls->len; i++) {
        CallSite *s = VEC_AT(g->calls, i);
        if (s->node && s->node->id <= u->maxid && u->into[s->node->id])
            s->node = u->into[s->node->id];
    }
}

/* A derived attribute on node n, which has room for it or gets it. */
static void add_derived_bool(Ctx *c, Node *n, const char *name, Loc loc)
{
    Attr *attrs = arena_alloc(c->arena, (size_t)(n->nattrs + 1) * sizeof *attrs);
    if (n->nattrs)
        memcpy(attrs, n->attrs, (size_t)n->nattrs * sizeof *attrs);
    attrs[n->nattrs] = (Attr){.name = name, .kind = ATTR_BOOL, .derived = true, .i = 1, .text = "True", .loc = loc};
    n->attrs = attrs;
    n->nattrs++;
}

/* The relu gradient br taken into the node bl computing its dy: a
 * linear's or max_pool's gradient node (its first result becomes br's,
 * through_relu) or autodiff's sum of two gradients (replaced by an
 * _add_relu_backward node where br stood). */
static void fuse_relu_grad(Fuse *u, Node *bl, Node *br)
{
    if (bl->op->id == OP_GRAD) {
        u->into[br->id] = bl;
        bl->out = br->out;
        bl->out->def = bl;
        add_derived_bool(u->c, bl, "through_relu", br->loc);
        return;
    }
    Node *parts[2] = {bl, br};
    Node *f = fused_node(u, OP_ADD_RELU_BACKWARD, parts, 2);
    f->in[0] = bl->in[0];
    f->in[1] = bl->in[1];
    f->in[2] = br->fwd->out;
    f->nin = 3;
    f->attrs[0].text = "add + relu's gradient";
}

/* The cross_entropy f and its gradient node b as one
 * _cross_entropy_with_grad node where b stood: the loss its first result,
 * the logits' gradient its second. */
static void fuse_loss_grad(Fuse *u, Node *f, Node *b)
{
    Node *parts[2] = {f, b};
    Node *n = fused_node(u, OP_CROSS_ENTROPY_WITH_GRAD, parts, 2);
    for (int k = 0; k < 3; k++)
        n->in[k] = f->in[k];
    n->in[3] = b->in[0];
    n->nin = 4;
    n->out = f->out;
    n->out->def = n;
    n->more_out[n->nmore++] = b->out;
    b->out->def = n;
    n->attrs[0].text = "cross_entropy + its gradient";
    for (int k = 0; k < f->nattrs; k++)
        add_attr(n, &f->attrs[k]);
}

/* The gradient groups of the training graph: a linear's or a max_pool's
 * input gradient, or a sum of two gradients, straight through the relu
 * before it; a cross_entropy computed by its gradient's call. */
static void fuse_grads(Ctx *c, Fuse *u)
{
    Graph *g = u->g;
    int nv = g->values->len;
    Node **definer = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *definer);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        definer[n->out->id] = n;
    }
    for (int i = 0; i < g->nodes->len; i++) {
        Node *br = VEC_AT(g->nodes, i);
        if (br->op->id != OP_GRAD || !br->fwd || br->fwd->op->id != OP_RELU || !br->in[0] || u->into[br->id])
            continue;
        Value *dy = br->in[0];
        Node *bl = definer[dy->id];
        if (!bl || bl->out != dy || u->into[bl->id] || attr_bool(bl, "through_relu", false) || dy->is_output ||
            u->nreads[dy->id] != 1 || dy->type.dtype != br->out->type.dtype || !fusable_dtype(dy->type.dtype))
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
        if (grad_of_input || sum)
            fuse_relu_grad(u, bl, br);
    }
    for (int i = 0; i < g->nodes->len; i++) {
        Node *b = VEC_AT(g->nodes, i);
        Node *f = u->into[b->id] ? NULL : loss_with_grad(g, b, i);
        if (f && !u->into[f->id])
            fuse_loss_grad(u, f, b);
    }
}

static void *zalloc(Ctx *c, int n, size_t size) { return arena_alloc(c->arena, (size_t)(n + 1) * size); }

bool fuse(Ctx *c)
{
    Graph *g = c->graph;
    int nv = g->values->len;
    Fuse fu = {.c = c, .g = g}, *u = &fu;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        u->maxid = n->id > u->maxid ? n->id : u->maxid;
    }
    u->nreads = zalloc(c, nv, sizeof *u->nreads);
    u->nfwd = zalloc(c, nv, sizeof *u->nfwd);
    u->reader = zalloc(c, nv, sizeof *u->reader);
    u->fwd_reader = zalloc(c, nv, sizeof *u->fwd_reader);
    u->into = zalloc(c, u->maxid, sizeof *u->into);
    u->stands_in = zalloc(c, u->maxid, sizeof *u->stands_in);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < node_nreads(n); k++) {
            Value *v = node_read(n, k);
            if (v) {
                u->nreads[v->id]++;
                u->reader[v->id] = n;
                if (n->op->id != OP_GRAD) {
                    u->nfwd[v->id]++;
                    u->fwd_reader[v->id] = n;
                }
            }
        }
    }
    /* the training step's batch_norm(training=true) uses batch statistics */
    bool training_graph = g->grads != NULL;
    if (c->opts->no_fuse)
        return ir_verify(c, "fuse");

    for (int i = 0; i < g->nodes->len; i++)
        fuse_conv(u, VEC_AT(g->nodes, i), training_graph);
    for (int i = 0; i < g->nodes->len; i++)
        fuse_linear(u, VEC_AT(g->nodes, i));
    if (training_graph)
        fuse_grads(c, u);
    reschedule(u);
    return ir_verify(c, "fuse");
}
