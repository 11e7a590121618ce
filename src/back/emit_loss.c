/* emit_loss.c: the kernel calls of the losses.
 *
 * The pointwise losses (loss_params reads their scalar parameters and
 * weight), the class losses (cross_entropy, nll_loss2d: [N, C, inner...]
 * split by class_split), the margin losses over rows of broadcast operands,
 * and ctc_loss.  reduction= reaches the kernels as reduction_enum[code]
 * (kl_div's batchmean as a sum, then a division by the batch).
 *
 * Requires: a planned graph whose every node's operands are in the dtype
 * its kernel takes (autocast made every conversion an explicit Cast node).
 * Each emitter here is named in the emit column of its ops' ops.def rows
 * (declared in emit_rules.h) and called by emit_op (emit_ops.c), which has
 * already checked the operands' dtypes; it writes the C statements
 * computing node n into y (and n's other results), read from the node's
 * shapes and attributes.  Arrays of sizes and strides are local constants
 * in a block of their own, so a call reads like its kernel's documentation
 * in runtime/include/amprt/.
 */
#include "emit.h"

const char *const reduction_enum[] = {"AMP_REDUCTION_NONE", "AMP_REDUCTION_MEAN", "AMP_REDUCTION_SUM"};

/* A pointwise loss's scalar parameters and weight operand (-1: none);
 * false, with an error, for a form without a kernel. */
bool loss_params(Emitter *e, Node *n, double *p, int *kweight)
{
    double p0 = 0, p1 = 0, p2 = 0;
    if (!shape_equal(in_shape(n, 0), in_shape(n, 1))) {
        unsupported(e, n, "input and target must have the same shape (broadcasting a target is deprecated in PyTorch)");
        return false;
    }
    int kw = op_param_index(n->op, "weight");
    if (kw >= 0 && n->in[kw] && !shape_equal(in_shape(n, kw), in_shape(n, 0))) {
        unsupported(e, n, "a weight of another shape than the input has no runtime kernel yet");
        return false;
    }
    int kp = op_param_index(n->op, "pos_weight");
    if (kp >= 0 && n->in[kp]) {
        unsupported(e, n, "pos_weight has no runtime kernel yet");
        return false;
    }
    switch (n->op->id) {
    case OP_SMOOTH_L1_LOSS: p0 = attr_number(n, "beta", "1.0", DT_F64); break;
    case OP_HUBER_LOSS: p0 = attr_number(n, "delta", "1.0", DT_F64); break;
    case OP_KL_DIV: p0 = attr_bool(n, "log_target", false); break;
    case OP_HINGE_EMBEDDING_LOSS: p0 = attr_number(n, "margin", "1.0", DT_F64); break;
    case OP_POISSON_NLL_LOSS:
        p0 = attr_bool(n, "log_input", true);
        p1 = attr_bool(n, "full", false);
        p2 = attr_number(n, "eps", "1e-08", DT_F64);
        break;
    default: break;
    }
    p[0] = p0;
    p[1] = p1;
    p[2] = p2;
    *kweight = kw;
    return true;
}

/* kl_div's reduction="batchmean": the kernel's sum, then divided by the
 * batch (the input's first dim; no division for a 0-dim input), as
 * PyTorch's two steps.  The batch as C, NULL for the other reductions. */
const char *batchmean_divisor(Emitter *e, Node *n)
{
    const Shape *s = in_shape(n, 0);
    if (attr_int(n, "reduction_code", 0) != 3 || s->ndim == 0)
        return NULL;
    return poly_c(e, s->dims[0]);
}

/* The kernel's reduction: batchmean sums (batchmean_divisor divides). */
const char *loss_reduction_c(Node *n)
{
    int64_t code = attr_int(n, "reduction_code", 0);
    return reduction_enum[code == 3 ? 2 : code];
}

void emit_pointwise_loss(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    double p[3];
    int kw;
    if (!loss_params(e, n, p, &kw))
        return;
    double p0 = p[0], p1 = p[1], p2 = p[2];
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, n->op->name, t),
               numel_c(e, in_shape(n, 0)), in_c(e, n, 0), in_c(e, n, 1), kw >= 0 ? in_c(e, n, kw) : "NULL",
               double_c(e, p0), double_c(e, p1), double_c(e, p2), loss_reduction_c(n), y);
    const char *batch = batchmean_divisor(e, n);
    if (batch)
        buf_printf(e->out, "    %s(1, %s, (double)(%s), %s);\n", kernel(e, "div_scalar", t), y, batch, y);
}

/* [N, C, d...] -> N, C, inner; [C] (one sample) -> 1, C, 1. */
void class_split(Emitter *e, const Shape *s, const char **N, const char **C, const char **inner)
{
    if (s->ndim == 1) {
        *N = "1";
        *C = poly_c(e, s->dims[0]);
        *inner = "1";
        return;
    }
    *N = poly_c(e, s->dims[0]);
    *C = poly_c(e, s->dims[1]);
    *inner = dims_product(e, s, 2, s->ndim);
}

void emit_class_loss(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const char *N, *C, *inner;
    class_split(e, in_shape(n, 0), &N, &C, &inner);
    int64_t ignore = attr_int(n, "ignore_index", -100);
    const char *weight = in_c(e, n, 2);
    if (n->op->id == OP_CROSS_ENTROPY) {
        double smoothing = attr_number(n, "label_smoothing", "0.0", DT_F64);
        if (in_dtype(n, 1) != DT_I64) {
            buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "cross_entropy_prob", t), N,
                       C, inner, in_c(e, n, 0), in_c(e, n, 1), weight, double_c(e, smoothing),
                       reduction_enum[attr_int(n, "reduction_code", 0)], y);
            return;
        }
        emit_checked(e, "    ", arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                                             kernel(e, "cross_entropy", t), N, C, inner, in_c(e, n, 0), in_c(e, n, 1),
                                             weight, i64_c(e, ignore), double_c(e, smoothing),
                                             reduction_enum[attr_int(n, "reduction_code", 0)], y));
        return;
    }
    /* nll_loss over [N, C, d...], and nll_loss2d */
    emit_checked(e, "    ", arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s)", kernel(e, "nll_loss_nd", t),
                                         N, C, inner, in_c(e, n, 0), in_c(e, n, 1), weight, i64_c(e, ignore),
                                         reduction_enum[attr_int(n, "reduction_code", 0)], y));
}

/* cross_entropy of class targets and its logits' gradient (fuse.c): the
 * loss into y, the gradient into the second result, in one pass over the
 * logits; the status checked as the forward's. */
void emit_cross_entropy_with_grad(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const char *N, *C, *inner;
    class_split(e, in_shape(n, 0), &N, &C, &inner);
    emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                                         kernel(e, "cross_entropy_with_grad", t), N, C, inner, in_c(e, n, 0),
                                         in_c(e, n, 1), in_c(e, n, 2), i64_c(e, attr_int(n, "ignore_index", -100)),
                                         double_c(e, attr_number(n, "label_smoothing", "0.0", DT_F64)),
                                         reduction_enum[attr_int(n, "reduction_code", 0)], in_c(e, n, 3), y,
                                         e->cname[n->more_out[0]->id]));
}

/* {row stride, element stride} of operand s broadcast to `full`, a [N, D]
 * or [D] shape. */
static const char *row_strides(Emitter *e, const Shape *s, const Shape *full)
{
    const char *st[MAX_DIMS], *items[2] = {"0", "0"};
    broadcast_strides(e, s, full, st);
    if (full->ndim == 2) {
        items[0] = st[0];
        items[1] = st[1];
    } else if (full->ndim == 1) {
        items[1] = st[0];
    }
    return c_array(e, items, 2);
}

void emit_margin_loss(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const char *red = reduction_enum[attr_int(n, "reduction_code", 0)];
    bool one = n->op->id == OP_TRIPLET_MARGIN_LOSS || n->op->id == OP_MULTI_MARGIN_LOSS;
    double margin = n->op->id == OP_MULTILABEL_MARGIN_LOSS ? 1 : attr_number(n, "margin", one ? "1.0" : "0.0", DT_F64);
    switch (n->op->id) {
    case OP_MULTILABEL_MARGIN_LOSS:
    case OP_MULTI_MARGIN_LOSS: {
        const Shape *s = in_shape(n, 0);
        const char *N = s->ndim == 2 ? poly_c(e, s->dims[0]) : "1";
        const char *C = s->ndim ? poly_c(e, s->dims[s->ndim - 1]) : "1";
        const char *call_c;
        if (n->op->id == OP_MULTILABEL_MARGIN_LOSS)
            call_c = arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s)", kernel(e, "multilabel_margin_loss", t), N, C,
                                  in_c(e, n, 0), in_c(e, n, 1), red, y);
        else
            call_c = arena_printf(c->arena, "%s(%s, %s, %s, %s, %d, %s, %s, %s, %s)", kernel(e, "multi_margin_loss", t),
                                  N, C, in_c(e, n, 0), in_c(e, n, 1), (int)attr_int(n, "p", 1),
                                  double_c(e, margin), in_c(e, n, 4), red, y);
        emit_checked(e, "    ", call_c);
        return;
    }
    case OP_MARGIN_RANKING_LOSS: {
        const Shape *ops[3] = {in_shape(n, 0), in_shape(n, 1), in_shape(n, 2)};
        Shape full = bcast_full(e, ops, 3);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &full));
        buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, ops[0], &full));
        buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, ops[1], &full));
        buf_printf(e->out, "        const int64_t t_stride[] = %s;\n", bcast_array(e, ops[2], &full));
        buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s, t_stride, %s, %s, %s);\n",
                   kernel(e, "margin_ranking_loss", t), full.ndim, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                   double_c(e, margin), red, y);
        close_block(e);
        return;
    }
    case OP_COSINE_EMBEDDING_LOSS:
    case OP_TRIPLET_MARGIN_LOSS: {
        bool triplet = n->op->id == OP_TRIPLET_MARGIN_LOSS;
        const Shape *ops[3] = {in_shape(n, 0), in_shape(n, 1), in_shape(n, 2)};
        Shape full = bcast_full(e, ops, triplet ? 3 : 2);
        if (!triplet && full.ndim == 2 && ops[2]->ndim == 1) { /* the target broadcasts the rows too */
            Shape rows = {.ndim = 1, .dims = {full.dims[0]}};
            const Shape *r2[2] = {&rows, ops[2]};
            full.dims[0] = bcast_full(e, r2, 2).dims[0];
        }
        const char *N = full.ndim == 2 ? poly_c(e, full.dims[0]) : "1";
        const char *D = full.ndim ? poly_c(e, full.dims[full.ndim - 1]) : "1";
        open_block(e);
        buf_printf(e->out, "        const int64_t s0[] = %s;\n", row_strides(e, ops[0], &full));
        buf_printf(e->out, "        const int64_t s1[] = %s;\n", row_strides(e, ops[1], &full));
        if (triplet) {
            buf_printf(e->out, "        const int64_t s2[] = %s;\n", row_strides(e, ops[2], &full));
            buf_printf(e->out, "        %s(%s, %s, %s, s0, %s, s1, %s, s2, %s, %s, %s, %d, %s, %s);\n",
                       kernel(e, "triplet_margin_loss", t), N, D, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                       double_c(e, margin), double_c(e, attr_number(n, "p", "2.0", DT_F64)),
                       double_c(e, attr_number(n, "eps", "1e-06", DT_F64)), attr_bool(n, "swap", false),
                       red, y);
        } else {
            int64_t v1;
            bool tb = ops[2]->ndim == 0 || (poly_is_const(ops[2]->dims[0], &v1) && v1 == 1);
            buf_printf(e->out, "        %s(%s, %s, %s, s0, %s, s1, %s, %s, %s, %s, %s);\n",
                       kernel(e, "cosine_embedding_loss", t), N, D, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                       tb ? "0" : "1", double_c(e, margin), red, y);
        }
        close_block(e);
        return;
    }
    default:
        ICE("not a margin loss: %s", n->op->name);
    }
}

/* ctc_loss: its lengths and targets stay i64 (index operands). */
void emit_ctc_loss(Emitter *e, Node *n, const char *y)
{
    const Shape *sl = in_shape(n, 0), *st = in_shape(n, 1);
    bool batched = sl->ndim == 3;
    const char *tl = in_c(e, n, 3);
    emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %d, %s, %s)",
                                         kernel(e, "ctc_loss", n->out->type.dtype), poly_c(e, sl->dims[0]),
                                         batched ? poly_c(e, sl->dims[1]) : "1", poly_c(e, sl->dims[sl->ndim - 1]),
                                         poly_c(e, st->dims[st->ndim - 1]), in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                                         tl, i64_c(e, attr_int(n, "blank", 0)),
                                         reduction_code(attr_str(n, "reduction", "mean")),
                                         attr_bool(n, "zero_infinity", false), double_scratch(e, n), y));
}

/* nll_loss of [C] or [N, C] log-probabilities and class indices; the
 * kernel reports an index out of range. */
void emit_nll_loss(Emitter *e, Node *n, const char *y)
{
    static const char *const reductions[] = {"AMP_REDUCTION_NONE", "AMP_REDUCTION_MEAN", "AMP_REDUCTION_SUM"};
    Buf *o = e->out;
    const Shape *s0 = &n->in[0]->type.shape;
    const char *N = s0->ndim == 2 ? poly_c(e, s0->dims[0]) : "1";
    buf_printf(o, "    rc = %s(%s, %s, %s, %s, %s, %lld, %s, %s);\n", kernel(e, "nll_loss", n->out->type.dtype), N,
               poly_c(e, s0->dims[s0->ndim - 1]), e->cname[n->in[0]->id], e->cname[n->in[1]->id],
               n->in[2] ? e->cname[n->in[2]->id] : "NULL", (long long)attr_int(n, "ignore_index", -100),
               reductions[attr_int(n, "reduction_code", 0)], y);
    buf_puts(o, "    if (rc != AMP_OK)\n        return rc;\n");
}
