/* grad_spatial.c: the gradient rules of the spatial ops.
 *
 * Convolution: the input's gradient is the transposed convolution of dy
 * (and the transposed one's the convolution), the weight's a
 * conv_backward_weight call, written widened into the training state where
 * conv_weight_grad_to_f32 allows, the bias's a sum; aten's convolution
 * takes one of the two by its `transposed` flag, conv_tbc one
 * amp_conv_tbc_backward call.  Pooling, upsampling and the pads have their
 * backward kernels; max_unpool is a gather of dy at the indices;
 * grid_sampler one amp_grid_sampler_backward call for the input's and the
 * grid's gradients.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

/* The value grad_of names, or NULL. */
static const Value *grad_value(Node *b, int k)
{
    for (int r = 0; r <= b->nmore; r++)
        if (b->grad_input[r] == k)
            return r == 0 ? b->out : b->more_out[r - 1];
    return NULL;
}

/* A convolution's (or transposed one's) bias gradient: dy summed over the
 * batch and the ns spatial positions, channels kept. */
static void conv_bias_grad(Emitter *e, Node *b, int ns)
{
    if (!grad_of(e, b, 2))
        return;
    const Shape *so = ys_of(b);
    const char *items[MAX_DIMS];
    for (int i = 0; i < so->ndim; i++)
        items[i] = i == so->ndim - ns - 1 ? "0" : "1";
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, so->ndim));
    buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s);\n", kernel(e, "sum", b->fwd->out->type.dtype), so->ndim,
               dy_of(e, b), grad_of(e, b, 2));
    close_block(e);
}

/* conv and conv_transpose, the one the other's adjoint: dx is the other op
 * on dy with in and out swapped and the same weight (for conv_transpose's
 * dx, a plain conv: no output_padding), dw the forward's own backward
 * kernel, db dy summed over the batch and the positions. */
static void grad_conv_pair(Emitter *e, Node *b, bool transposed)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    int ns = f->op->id == OP_CONVOLUTION ? xs_of(b, 1)->ndim - 2 : spatial_dims_of(f->op->id);
    if (!emit_conv_desc(e, f))
        return;
    if (grad_of(e, b, 0)) {
        emit_conv_adjoint_desc(e, f);
        buf_printf(e->out, "        %s(&dt, %s, %s, NULL, %s);\n", kernel(e, transposed ? "conv" : "conv_transpose", t),
                   dy_of(e, b), x_of(e, b, 1), grad_of(e, b, 0));
    }
    const Value *dw = grad_value(b, 1);
    if (dw && e->grad_in_state && e->grad_in_state[dw->id]) {
        /* emit_train.c: only widened into the state's gradient, so
         * written there straight from the tiles */
        buf_printf(e->out, "        %s(&d, %s, %s, %s, s->grad_live);\n", kernel(e, "conv_backward_weight_to_f32", t),
                   x_of(e, b, 0), dy_of(e, b), e->grad_state_member[dw->id]);
    } else if (dw) {
        buf_printf(e->out, "        %s(&d, %s, %s, %s);\n",
                   kernel(e, transposed ? "conv_transpose_backward_weight" : "conv_backward_weight", t), x_of(e, b, 0),
                   dy_of(e, b), grad_of(e, b, 1));
    }
    close_block(e);
    conv_bias_grad(e, b, ns);
}

void grad_conv(Emitter *e, Node *b) { grad_conv_pair(e, b, false); }

/* Whether v is a (not transposed) convolution's bf16/f16 weight gradient,
 * which grad_conv_pair can write widened into an f32 buffer. */
bool conv_weight_grad_to_f32(const Value *v)
{
    Node *b = v->def, *f = b ? b->fwd : NULL;
    if (!f || b->op->id != OP_GRAD || grad_value(b, 1) != v ||
        (v->type.dtype != DT_BF16 && v->type.dtype != DT_F16))
        return false;
    switch (f->op->id) {
    case OP_CONV1D: case OP_CONV2D: case OP_CONV3D:
        return true;
    case OP_CONVOLUTION:
        return !attr_bool(f, "transposed", false);
    default:
        return false;
    }
}

void grad_pool(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    OpId id = f->op->id;
    int ns = spatial_dims_of(id);
    if (id == OP_ADAPTIVE_AVG_POOL1D || id == OP_ADAPTIVE_AVG_POOL2D || id == OP_ADAPTIVE_AVG_POOL3D) {
        open_block(e);
        buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, xs_of(b, 0), ns));
        buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, ys_of(b), ns));
        buf_printf(e->out, "        %s(%d, %s, in_size, out_size, %s, %s);\n", kernel(e, "adaptive_avg_pool_backward", t),
                   ns, planes_of(e, xs_of(b, 0), ns), dy_of(e, b), grad_of(e, b, 0));
        close_block(e);
        return;
    }
    if (id == OP_ADAPTIVE_MAX_POOL1D || id == OP_ADAPTIVE_MAX_POOL2D) {
        open_block(e);
        buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, xs_of(b, 0), ns));
        buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, ys_of(b), ns));
        buf_printf(e->out, "        %s(%d, %s, in_size, out_size, %s, %s, %s);\n",
                   kernel(e, "adaptive_max_pool_backward", t), ns, planes_of(e, xs_of(b, 0), ns), x_of(e, b, 0),
                   dy_of(e, b), grad_of(e, b, 0));
        close_block(e);
        return;
    }
    emit_pool_desc(e, f);
    if (id == OP_MAX_POOL1D || id == OP_MAX_POOL2D || id == OP_MAX_POOL3D)
        /* fuse.c: through_relu, on through the relu whose output x is
         * (the node's first result is the relu input's gradient) */
        buf_printf(e->out, "        %s(&d, %s, %s, %s);\n",
                   kernel(e, attr_bool(b, "through_relu", false) ? "max_pool_relu_backward" : "max_pool_backward", t), x_of(e, b, 0),
                   dy_of(e, b), grad_of(e, b, 0));
    else
        buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "avg_pool_backward", t), dy_of(e, b), grad_of(e, b, 0));
    close_block(e);
}

/* upsample: the adjoint of the forward's interpolation (the same
 * descriptor as emit_spatial.c's). */
void grad_upsample(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    emit_upsample_desc(e, f, xs_of(b, 0), ys_of(b));
    buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "upsample_backward", f->out->type.dtype), dy_of(e, b),
               grad_of(e, b, 0));
    close_block(e);
}

/* pad, reflection_pad*, replication_pad*: the adjoint, from the forward's
 * before/after (as emit_spatial.c reads them; it has checked the sizes). */
void grad_pad(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sx = xs_of(b, 0);
    int nd = sx->ndim;
    int64_t before[MAX_DIMS], after[MAX_DIMS];
    int mode = pad_sides(f, nd, before, after);
    static const char *const modes[] = {"AMP_PAD_CONSTANT", "AMP_PAD_REFLECT", "AMP_PAD_REPLICATE"};
    const char *bi[MAX_DIMS], *ai[MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        bi[i] = i64_c(e, before[i]);
        ai[i] = i64_c(e, after[i]);
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t in_shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const int64_t before[] = %s;\n", c_array(e, bi, nd));
    buf_printf(e->out, "        const int64_t after[] = %s;\n", c_array(e, ai, nd));
    buf_printf(e->out, "        %s(%d, in_shape, before, after, %s, %s, %s);\n", kernel(e, "pad_backward", f->out->type.dtype),
               nd, modes[mode], dy_of(e, b), grad_of(e, b, 0));
    close_block(e);
}

void grad_conv_transpose(Emitter *e, Node *b) { grad_conv_pair(e, b, true); }

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
 * with the forward's arguments (emit_spatial.c's emit_grid_sampler). */
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

/* aten's convolution: transposed or not, by its flag */
void grad_convolution(Emitter *e, Node *b)
{
    if (attr_bool(b->fwd, "transposed", false))
        grad_conv_transpose(e, b);
    else
        grad_conv(e, b);
}
