/* emit_grad_nn.c: gradient rules of the convolutions outside conv1d-3d, indexing writes, sampling, unpooling, recurrent cells and CTC.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 *
 * Recurrent cells: one amp_rnn_cell_backward call (amprt/backward_nn.h)
 * writes every wanted gradient, recomputing the gates from the forward's
 * inputs; its double work array is the GRAD node's scratch.  The cell
 * state's result of lstm_cell gets no gradient (autodiff.c refuses one).
 *
 * aten's convolution: emit_grad.c's conv or conv_transpose rule by its
 * `transposed` flag (the descriptor is the forward's).  conv_tbc: one
 * amp_conv_tbc_backward call for all three gradients.
 *
 * index_copy and scatter_add: forward kernels (index_copy of zeros,
 * index_select, gather) on dy.  index_put: a forward kernel zeroes dinput's
 * written positions, amp_index_put_backward sums dvalues.  max_unpool:
 * a gather of dy at the indices.  grid_sampler: one
 * amp_grid_sampler_backward call for the input's and the grid's gradients.
 * ctc_loss: amp_ctc_loss_backward, PyTorch's formula (the gradient with
 * respect to the logits of the log_softmax that feeds it; see
 * amprt/backward_nn.h).
 */
#include "emit.h"
#include <amprt.h>

static const char *or_null(const char *s)
{
    return s ? s : "NULL";
}

void grad_rnn_cell(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    OpId id = f->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int w = lstm ? 3 : 2; /* w_ih's operand */
    const Shape *sx = xs_of(b, 0), *sh = xs_of(b, 1);
    int kind = lstm ? AMP_RNN_LSTM : id == OP_GRU_CELL ? AMP_RNN_GRU : id == OP_RNN_TANH_CELL ? AMP_RNN_TANH
                                                                                            : AMP_RNN_RELU;
    const char *B = sx->ndim == 2 ? poly_c(e, sx->dims[0]) : "1", *H = poly_c(e, sh->dims[sh->ndim - 1]);
    const char *b_hh = x_of(e, b, w + 3);
    if (lstm && lstm_b_hh_recast(f)) {
        /* after the work doubles */
        const Value *src = lstm_b_hh_source(f);
        DType t = f->out->type.dtype;
        b_hh = arena_printf(e->c->arena, "((%s *)(void *)((double *)(void *)%s + AMP_RNN_CELL_BACKWARD_WORK_ELEMS(%s, %s)))",
                            dtype_c_type(t), e->cname[b->scratch->id], B, H);
        buf_printf(e->out, "    amp_cast_%s_%s((size_t)(%s), %s, %s); /* b_hh, as the forward's cast */\n",
                   dtype_name(src->type.dtype), dtype_name(t), numel_c(e, &src->type.shape), e->cname[src->id], b_hh);
    }
    buf_printf(e->out,
               "    %s(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, (double *)(void *)%s, %s, %s, %s, %s, "
               "%s, %s, %s);\n",
               kernel(e, "rnn_cell_backward", f->out->type.dtype), kind, B, poly_c(e, sx->dims[sx->ndim - 1]), H,
               x_of(e, b, 0), x_of(e, b, 1), lstm ? x_of(e, b, 2) : "NULL",
               x_of(e, b, w), x_of(e, b, w + 1), x_of(e, b, w + 2), b_hh, dy_of(e, b),
               lstm && b->dy_more[0] ? e->cname[b->dy_more[0]->id] : "NULL", e->cname[b->scratch->id], or_null(grad_of(e, b, 0)), or_null(grad_of(e, b, 1)),
               lstm ? or_null(grad_of(e, b, 2)) : "NULL", or_null(grad_of(e, b, w)), or_null(grad_of(e, b, w + 1)),
               or_null(grad_of(e, b, w + 2)), or_null(grad_of(e, b, w + 3)));
}

/* conv_tbc: x [time, batch, in], w [kernel, in, out], bias [out] */
void grad_conv_tbc(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sx = xs_of(b, 0), *sw = xs_of(b, 1);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
               kernel(e, "conv_tbc_backward", f->out->type.dtype), poly_c(e, sx->dims[0]), poly_c(e, sx->dims[1]),
               poly_c(e, sx->dims[2]), poly_c(e, sw->dims[0]), poly_c(e, sw->dims[2]),
               i64_c(e, attr_int(f, "pad", 0)), x_of(e, b, 0), x_of(e, b, 1), dy_of(e, b),
               or_null(grad_of(e, b, 0)), or_null(grad_of(e, b, 1)), or_null(grad_of(e, b, 2)));
}

/* index_copy(input, dim, index, source): dinput = dy with the indexed rows
 * zeroed (PyTorch's index_fill), dsource = dy's indexed rows (index_select;
 * a repeated index gives each of its source rows the row's gradient, as
 * PyTorch).  The forward checked the indices, so the statuses are AMP_OK. */
void grad_index_copy(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const char *outer, *len, *inner;
    axis_split(e, xs_of(b, 0), attr_int(f, "axis", 0), &outer, &len, &inner);
    const char *n_index = numel_c(e, xs_of(b, 2)), *g0 = grad_of(e, b, 0), *g3 = grad_of(e, b, 3);
    if (g0) {
        const char *zeros = arena_printf(e->c->arena, "((%s *)(void *)%s)", dtype_c_type(t), e->cname[b->scratch->id]);
        zero_fill(e, t, zeros, xs_of(b, 3));
        grad_copy(e, g0, dy_of(e, b), xs_of(b, 0));
        buf_printf(e->out, "    (void)%s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "index_copy", t), outer, len, inner,
                   n_index, x_of(e, b, 2), zeros, g0);
    }
    if (g3)
        buf_printf(e->out, "    (void)%s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "index_select", t), outer, len,
                   inner, n_index, dy_of(e, b), x_of(e, b, 2), g3);
}

/* scatter_add(input, dim, index, src): dinput = dy, dsrc = dy gathered
 * along dim (src has index's shape: the forward refuses a larger one). */
void grad_scatter_add(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0), *si = xs_of(b, 2);
    if (grad_of(e, b, 0))
        grad_copy(e, grad_of(e, b, 0), dy_of(e, b), sx);
    if (!grad_of(e, b, 3))
        return;
    open_block(e);
    buf_printf(e->out, "        const int64_t index_shape[] = %s;\n", shape_array(e, si));
    buf_printf(e->out, "        const int64_t x_shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        (void)%s(%d, index_shape, %d, %s, x_shape, %s, %s);\n", kernel(e, "gather", t), sx->ndim,
               (int)attr_int(f, "axis", 0), dy_of(e, b), x_of(e, b, 2), grad_of(e, b, 3));
    close_block(e);
}

/* index_put(input, indices, values, accumulate): dinput = dy, with the
 * written positions zeroed (amp_index_put of a broadcast zero) unless
 * accumulate; dvalues from amp_index_put_backward, read with the forward's
 * value strides (as emit_ops.c's emit_index_put computes them). */
void grad_index_put(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0), *si = xs_of(b, 1), *sv = xs_of(b, 2);
    bool acc = attr_bool(f, "accumulate", false);
    const char *g0 = grad_of(e, b, 0), *g2 = grad_of(e, b, 2);
    const char *work = b->scratch ? arena_printf(e->c->arena, "(double *)(void *)%s", e->cname[b->scratch->id]) : "NULL";
    const char *zs[MAX_DIMS];
    for (int i = 0; i < MAX_DIMS; i++)
        zs[i] = "0";
    if (g0)
        grad_copy(e, g0, dy_of(e, b), sx);
    bool zero_rows = g0 && !acc;
    open_block(e);
    if (zero_rows)
        buf_printf(e->out, "        static const %s zero[1] = {%s};\n", dtype_c_type(t),
                   t == DT_BF16 || t == DT_F16 ? "{0}" : "0");
    if (f->in[1]->type.dtype == DT_BOOL) {
        Shape to = {0}, vs = *sv;
        for (int i = si->ndim; i < sx->ndim; i++)
            to.dims[to.ndim++] = sx->dims[i];
        if (vs.ndim == to.ndim + 1) { /* a leading 1 */
            for (int i = 0; i + 1 < vs.ndim; i++)
                vs.dims[i] = vs.dims[i + 1];
            vs.ndim--;
        }
        const char *st[MAX_DIMS], *items[MAX_DIMS];
        broadcast_strides(e, &vs, &to, st);
        for (int i = 0; i < sx->ndim; i++)
            items[i] = i < si->ndim ? "0" : st[i - si->ndim];
        buf_printf(e->out, "        const int64_t x_shape[] = %s;\n", shape_array(e, sx));
        if (g2)
            buf_printf(e->out, "        const int64_t v_stride[] = %s;\n", c_array(e, items, sx->ndim));
        if (zero_rows) {
            buf_printf(e->out, "        const int64_t zero_stride[] = %s;\n", c_array(e, zs, sx->ndim));
            buf_printf(e->out, "        %s(%d, x_shape, %d, (const uint8_t *)%s, zero, zero_stride, 0, %s);\n",
                       kernel(e, "index_put_mask", t), sx->ndim, si->ndim, x_of(e, b, 1), g0);
        }
        if (g2)
            buf_printf(e->out, "        %s(%d, x_shape, %d, (const uint8_t *)%s, %s, v_stride, %s, %s, %s);\n",
                       kernel(e, "index_put_mask_backward", t), sx->ndim, si->ndim, x_of(e, b, 1), dy_of(e, b),
                       numel_c(e, sv), work, g2);
    } else {
        Shape res = *si;
        for (int i = 1; i < sx->ndim; i++)
            res.dims[res.ndim++] = sx->dims[i];
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &res));
        if (g2)
            buf_printf(e->out, "        const int64_t v_stride[] = %s;\n", bcast_array(e, sv, &res));
        if (zero_rows) { /* the forward checked the indices: AMP_OK */
            buf_printf(e->out, "        const int64_t zero_stride[] = %s;\n", c_array(e, zs, res.ndim));
            buf_printf(e->out, "        (void)%s(%d, shape, %d, %s, %s, zero, zero_stride, 0, %s);\n",
                       kernel(e, "index_put", t), res.ndim, si->ndim, x_of(e, b, 1), poly_c(e, sx->dims[0]), g0);
        }
        if (g2)
            buf_printf(e->out, "        %s(%d, shape, %d, %s, %s, %s, v_stride, %s, %s, %s);\n",
                       kernel(e, "index_put_backward", t), res.ndim, si->ndim, x_of(e, b, 1), poly_c(e, sx->dims[0]),
                       dy_of(e, b), numel_c(e, sv), work, g2);
    }
    close_block(e);
}

/* max_unpool2d/3d: dx[p, i] = dy[p, indices[p, i]] (PyTorch's
 * max_pool_double_backward), a gather over each plane; the forward
 * checked the indices. */
void grad_max_unpool(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    int ns = f->op->id == OP_MAX_UNPOOL3D ? 3 : 2;
    const Shape *sx = xs_of(b, 0), *so = ys_of(b);
    const char *planes = planes_of(e, sx, ns);
    open_block(e);
    buf_printf(e->out, "        const int64_t index_shape[] = {%s, %s};\n", planes,
               dims_product(e, sx, sx->ndim - ns, sx->ndim));
    buf_printf(e->out, "        const int64_t y_shape[] = {%s, %s};\n", planes,
               dims_product(e, so, so->ndim - ns, so->ndim));
    buf_printf(e->out, "        (void)%s(2, index_shape, 1, %s, y_shape, %s, %s);\n",
               kernel(e, "gather", f->out->type.dtype), dy_of(e, b), x_of(e, b, 1), grad_of(e, b, 0));
    close_block(e);
}

/* grid_sampler: both gradients from one amp_grid_sampler_backward call,
 * with the forward's arguments (emit_ops.c's emit_grid_sampler). */
void grad_grid_sampler(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sx = xs_of(b, 0), *so = ys_of(b);
    int ns = sx->ndim - 2;
    open_block(e);
    buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, sx, ns));
    buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, so, ns));
    buf_printf(e->out, "        %s(%d, %s, %s, in_size, out_size, %d, %d, %d, %s, %s, %s, (double *)(void *)%s, %s, %s);\n",
               kernel(e, "grid_sampler_backward", f->out->type.dtype), ns, poly_c(e, sx->dims[0]),
               poly_c(e, sx->dims[1]), (int)attr_int(f, "interpolation_mode", 0),
               (int)attr_int(f, "padding_mode", 0), attr_bool(f, "align_corners", false),
               x_of(e, b, 0), x_of(e, b, 1), dy_of(e, b), b->scratch ? e->cname[b->scratch->id] : "NULL",
               or_null(grad_of(e, b, 0)),
               or_null(grad_of(e, b, 1)));
    close_block(e);
}

/* ctc_loss: dlog_probs from amp_ctc_loss_backward, with the forward's
 * arguments (emit_ops.c's emit_ctc_loss; it checked the lengths and
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

/* aten's convolution: transposed or not, by its flag */
void grad_convolution(Emitter *e, Node *b)
{
    if (attr_bool(b->fwd, "transposed", false))
        grad_conv_transpose(e, b);
    else
        grad_conv(e, b);
}
