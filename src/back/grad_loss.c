/* grad_loss.c: the gradient rules of the losses.
 *
 * The rules, PyTorch's (derivatives.yaml):
 *   nll_loss, cross_entropy, nll_loss2d  the class losses' backward kernels
 *   the pointwise losses  amp_pointwise_loss_backward with the forward's
 *              parameters (loss_params)
 *   multi_margin_loss, multilabel_margin_loss  their amp_*_backward kernels
 *   margin_ranking_loss, cosine_embedding_loss, triplet_margin_loss  their
 *              amp_*_backward kernels, which write each operand's gradient
 *              over the broadcast shape (into the scratch where the operand
 *              is smaller), summed down after (full_grad, full_grads_down)
 *   ctc_loss   amp_ctc_loss_backward, PyTorch's formula (the gradient with
 *              respect to the logits of the log_softmax that feeds it; see
 *              amprt/backward_nn.h)
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

void grad_class_loss(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const char *N, *C, *inner;
    class_split(e, xs_of(b, 0), &N, &C, &inner);
    int64_t ignore = attr_int(f, "ignore_index", -100);
    int reduction = (int)attr_int(f, "reduction_code", 0);
    if (f->op->id == OP_CROSS_ENTROPY) {
        double smoothing = attr_number(f, "label_smoothing", "0.0", DT_F64);
        bool probs = f->in[1]->type.dtype != DT_I64;
        if (probs)
            buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
                       kernel(e, "cross_entropy_prob_backward", t), N, C, inner, x_of(e, b, 0), x_of(e, b, 1),
                       x_of(e, b, 2), double_c(e, smoothing), reduction_enum[reduction], dy_of(e, b), grad_of(e, b, 0));
        else
            buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
                       kernel(e, "cross_entropy_backward", t), N, C, inner, x_of(e, b, 0), x_of(e, b, 1),
                       x_of(e, b, 2), i64_c(e, ignore), double_c(e, smoothing), reduction_enum[reduction],
                       dy_of(e, b), grad_of(e, b, 0));
        return;
    }
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "nll_loss_backward", t), N, C, inner,
               x_of(e, b, 1), x_of(e, b, 2), i64_c(e, ignore), reduction_enum[reduction], dy_of(e, b),
               grad_of(e, b, 0));
}

void grad_pointwise_loss(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    double p[3];
    int kw;
    if (!loss_params(e, f, p, &kw))
        return;
    DType t = f->out->type.dtype;
    /* a loss of input - target: dtarget = -dinput (grad_input_missing
     * refuses the target's gradient of the others) */
    const char *dx = grad_of(e, b, 0), *dt = grad_of(e, b, 1);
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
               kernel(e, arena_printf(e->c->arena, "%s_backward", f->op->name), t),
               numel_c(e, xs_of(b, 0)), x_of(e, b, 0), x_of(e, b, 1), kw >= 0 && f->in[kw] ? x_of(e, b, kw) : "NULL",
               double_c(e, p[0]), double_c(e, p[1]), double_c(e, p[2]), reduction_enum[attr_int(f, "reduction_code", 0)], dy_of(e, b),
               dx ? dx : dt);
    if (dt)
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "neg", t), numel_c(e, xs_of(b, 1)), dx ? dx : dt,
                   dt);
}

void grad_margin_ranking(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    Shape full = grad_full_shape(e->c, f, 3);
    const char *g[3];
    for (int k = 0; k < 3; k++)
        g[k] = full_grad(e, b, k, &full, "0");
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &full));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, xs_of(b, 0), &full));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), &full));
    buf_printf(e->out, "        const int64_t t_stride[] = %s;\n", bcast_array(e, xs_of(b, 2), &full));
    buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s, t_stride, %s, %s, %s, %s, %s, %s);\n",
               kernel(e, "margin_ranking_loss_backward", t), full.ndim, x_of(e, b, 0), x_of(e, b, 1), x_of(e, b, 2),
               double_c(e, attr_number(f, "margin", "0.0", DT_F64)), reduction_enum[attr_int(f, "reduction_code", 0)],
               dy_of(e, b), g[0] ? g[0] : "NULL", g[1] ? g[1] : "NULL", g[2] ? g[2] : "NULL");
    close_block(e);
    full_grads_down(e, b, 3, &full, "0");
}

/* An operand's [N, D] row strides over the full shape (emit_loss.c's). */
static const char *rows_of(Emitter *e, const Shape *s, const Shape *full)
{
    const char *st[MAX_DIMS], *items[2] = {"0", "0"};
    broadcast_strides(e, s, full, st);
    if (full->ndim == 2)
        items[0] = st[0], items[1] = st[1];
    else if (full->ndim == 1)
        items[1] = st[0];
    return c_array(e, items, 2);
}

/* cosine_embedding_loss, triplet_margin_loss: rows n < N of length D. */
void grad_row_loss(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    bool triplet = f->op->id == OP_TRIPLET_MARGIN_LOSS;
    Poly *work_bytes;
    grad_full_operands(f, &work_bytes, e->c);
    const char *work = work_bytes ? poly_c(e, work_bytes) : "0";
    Shape full = grad_full_shape(e->c, f, triplet ? 3 : 2);
    const char *N = full.ndim == 2 ? poly_c(e, full.dims[0]) : "1";
    const char *D = full.ndim ? poly_c(e, full.dims[full.ndim - 1]) : "1";
    const char *g[3];
    for (int k = 0; k < 3; k++)
        g[k] = triplet || k < 2 ? full_grad(e, b, k, &full, work) : NULL;
    const char *red = reduction_enum[attr_int(f, "reduction_code", 0)];
    open_block(e);
    buf_printf(e->out, "        const int64_t s0[] = %s;\n", rows_of(e, xs_of(b, 0), &full));
    buf_printf(e->out, "        const int64_t s1[] = %s;\n", rows_of(e, xs_of(b, 1), &full));
    if (triplet) {
        buf_printf(e->out, "        const int64_t s2[] = %s;\n", rows_of(e, xs_of(b, 2), &full));
        buf_printf(e->out, "        %s(%s, %s, %s, s0, %s, s1, %s, s2, %s, %s, %s, %d, %s, %s, %s, %s, %s, %s);\n",
                   kernel(e, "triplet_margin_loss_backward", t), N, D, x_of(e, b, 0), x_of(e, b, 1), x_of(e, b, 2),
                   double_c(e, attr_number(f, "margin", "1.0", DT_F64)),
                   double_c(e, attr_number(f, "p", "2.0", DT_F64)),
                   double_c(e, attr_number(f, "eps", "1e-06", DT_F64)),
                   attr_bool(f, "swap", false), red, dy_of(e, b), g[0] ? g[0] : "NULL",
                   g[1] ? g[1] : "NULL", g[2] ? g[2] : "NULL", scratch_as(e, b, "double", "0"));
    } else {
        const Shape *ts = xs_of(b, 2);
        int64_t v1;
        bool tb = ts->ndim == 0 || (poly_is_const(ts->dims[0], &v1) && v1 == 1);
        buf_printf(e->out, "        %s(%s, %s, %s, s0, %s, s1, %s, %s, %s, %s, %s, %s, %s);\n",
                   kernel(e, "cosine_embedding_loss_backward", t), N, D, x_of(e, b, 0), x_of(e, b, 1), x_of(e, b, 2),
                   tb ? "0" : "1", double_c(e, attr_number(f, "margin", "0.0", DT_F64)), red, dy_of(e, b),
                   g[0] ? g[0] : "NULL", g[1] ? g[1] : "NULL");
    }
    close_block(e);
    full_grads_down(e, b, triplet ? 3 : 2, &full, work);
    if (!triplet && grad_of(e, b, 2)) /* the target only selects: PyTorch's gradient is none, so zero */
        zero_fill(e, t, grad_of(e, b, 2), xs_of(b, 2));
}

/* multi_margin_loss, multilabel_margin_loss: x [N, C] or [C] (N = 1). */
void grad_class_margin(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    const char *N = s->ndim == 2 ? poly_c(e, s->dims[0]) : "1";
    const char *C = s->ndim ? poly_c(e, s->dims[s->ndim - 1]) : "1";
    const char *red = reduction_enum[attr_int(f, "reduction_code", 0)];
    if (f->op->id == OP_MULTILABEL_MARGIN_LOSS)
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "multilabel_margin_loss_backward", t),
                   N, C, x_of(e, b, 0), x_of(e, b, 1), red, dy_of(e, b), grad_of(e, b, 0),
                   scratch_as(e, b, "double", "0"));
    else
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %d, %s, %s, %s, %s, %s);\n",
                   kernel(e, "multi_margin_loss_backward", t), N, C, x_of(e, b, 0), x_of(e, b, 1),
                   (int)attr_int(f, "p", 1), double_c(e, attr_number(f, "margin", "1.0", DT_F64)),
                   x_of(e, b, 4), red, dy_of(e, b), grad_of(e, b, 0));
}

/* ctc_loss: dlog_probs from amp_ctc_loss_backward, with the forward's
 * arguments (emit_loss.c's emit_ctc_loss; it checked the lengths and
 * labels). */
void grad_ctc_loss(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sl = xs_of(b, 0), *st = xs_of(b, 1);
    bool batched = sl->ndim == 3;
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %d, %s, (double *)(void *)%s, %s);\n",
               kernel(e, "ctc_loss_backward", f->out->type.dtype), poly_c(e, sl->dims[0]),
               batched ? poly_c(e, sl->dims[1]) : "1", poly_c(e, sl->dims[sl->ndim - 1]),
               poly_c(e, st->dims[st->ndim - 1]), x_of(e, b, 0), x_of(e, b, 1), x_of(e, b, 2), x_of(e, b, 3),
               i64_c(e, attr_int(f, "blank", 0)), reduction_code(attr_str(f, "reduction", "mean")),
               attr_bool(f, "zero_infinity", false), dy_of(e, b), e->cname[b->scratch->id],
               grad_of(e, b, 0));
}
