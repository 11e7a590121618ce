/* emit_spatial.c: the kernel calls of the spatial ops.
 *
 * Convolution (conv1d-3d, the transposed ones, aten's convolution and
 * conv_tbc) through one amp_conv_desc (emit_conv_desc), with weights packed
 * once by <prefix>_prepare where they can be and the fused epilogues of
 * fuse.c; pooling (emit_pool_desc), max_unpool, upsampling, the pads and
 * grid_sampler.  Inputs are [N, C, spatial...] or unbatched [C,
 * spatial...]; the descriptors are shared with the gradient rules
 * (grad_spatial.c).
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

#include <math.h>
#include <string.h>

/* The padding of pad, reflection_pad* and replication_pad* before and
 * after each of nd dims: pad's (left, right) pairs from the last dim
 * back, as PyTorch lists them; the others' padding one int for every
 * side of their spatial dims, or such pairs (reflection_pad2d(x, (1, 2,
 * 0, 3))).  Returns the mode: 0 constant, 1 reflect, 2 replicate. */
int pad_sides(const Node *f, int nd, int64_t *before, int64_t *after)
{
    OpId id = f->op->id;
    int64_t v[MAX_DIMS * 2 + 2];
    for (int i = 0; i < nd; i++)
        before[i] = after[i] = 0;
    int k = attr_int_list(f, id == OP_PAD ? "pad" : "padding", v);
    if (id != OP_PAD && k == 1) {
        int spatial = id == OP_REFLECTION_PAD1D || id == OP_REPLICATION_PAD1D ? 1 : id == OP_REPLICATION_PAD3D ? 3 : 2;
        for (k = 1; k < 2 * spatial; k++)
            v[k] = v[0];
    }
    for (int i = 0; i < k / 2; i++) {
        before[nd - 1 - i] = v[2 * i];
        after[nd - 1 - i] = v[2 * i + 1];
    }
    return id == OP_PAD ? 0 : id == OP_REFLECTION_PAD1D || id == OP_REFLECTION_PAD2D ? 1 : 2;
}

void emit_pad(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *sx = in_shape(n, 0);
    int nd = sx->ndim;
    int64_t before[MAX_DIMS], after[MAX_DIMS];
    int mode = pad_sides(n, nd, before, after);
    double value = 0;
    if (n->op->id == OP_PAD) {
        if (attr_given(n, "value"))
            value = attr_number(n, "value", "0", compute_dtype(t));
    } else {
        OpId id = n->op->id;
        int spatial = id == OP_REFLECTION_PAD1D || id == OP_REPLICATION_PAD1D ? 1
                      : id == OP_REPLICATION_PAD3D ? 3 : 2;
        for (int i = nd - spatial; i < nd; i++) {
            int64_t size;
            if (!poly_is_const(sx->dims[i], &size)) {
                unsupported(e, n, "reflection and replication padding need fixed spatial sizes");
                return;
            }
            if (mode == 1 && (before[i] >= size || after[i] >= size)) {
                error_at(e->c, n->loc, "Padding size should be less than the corresponding input dimension, but got: "
                         "padding (%lld, %lld) at dimension %d of input %s", (long long)before[i], (long long)after[i],
                         i, type_comment(e, &n->in[0]->type));
                return;
            }
            if (mode == 2 && size == 0) {
                unsupported(e, n, "replication padding of an empty dimension");
                return;
            }
        }
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t in_shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const int64_t before[] = %s;\n", i64_array(e, before, nd));
    buf_printf(e->out, "        const int64_t after[] = %s;\n", i64_array(e, after, nd));
    static const char *const modes[] = {"AMP_PAD_CONSTANT", "AMP_PAD_REFLECT", "AMP_PAD_REPLICATE"};
    buf_printf(e->out, "        %s(%d, in_shape, before, after, %s, %s, %s, %s);\n", kernel(e, "pad", t), nd, modes[mode],
               double_c(e, value), in_c(e, n, 0), y);
    close_block(e);
}

int spatial_dims_of(OpId id)
{
    switch (id) {
    case OP_CONV1D: case OP_CONV_TRANSPOSE1D: case OP_UPSAMPLE_NEAREST1D: case OP_UPSAMPLE_LINEAR1D:
    case OP_MAX_POOL1D: case OP_AVG_POOL1D: case OP_ADAPTIVE_AVG_POOL1D: case OP_ADAPTIVE_MAX_POOL1D:
        return 1;
    case OP_CONV3D: case OP_CONV_TRANSPOSE3D: case OP_MAX_POOL3D: case OP_AVG_POOL3D: case OP_ADAPTIVE_AVG_POOL3D:
    case OP_UPSAMPLE_NEAREST3D: case OP_UPSAMPLE_TRILINEAR3D:
        return 3;
    default:
        return 2;
    }
}

/* One int per spatial dim, as C: "{3, 3}" from one int argument. */
static const char *repeat3(Emitter *e, int64_t v, int ns)
{
    int64_t a[3] = {v, v, v};
    for (int i = ns; i < 3; i++)
        a[i] = 0;
    return i64_array(e, a, 3);
}

/* The last ns dims of s, padded to three entries. */
const char *spatial_array(Emitter *e, const Shape *s, int ns)
{
    const char *items[3] = {"0", "0", "0"};
    for (int i = 0; i < ns; i++)
        items[i] = poly_c(e, s->dims[s->ndim - ns + i]);
    return c_array(e, items, 3);
}

/* Batch size: 1 for PyTorch's unbatched form [C, spatial...]. */
const char *batch_of(Emitter *e, const Shape *s, int ns)
{
    return s->ndim == ns + 2 ? poly_c(e, s->dims[0]) : "1";
}

/* A transposed convolution: conv_transpose1d-3d, or aten's convolution(transposed=true). */
static bool conv_is_transposed(Node *n)
{
    OpId id = n->op->id;
    if (id == OP_CONVOLUTION)
        return attr_bool(n, "transposed", false);
    return id == OP_CONV_TRANSPOSE1D || id == OP_CONV_TRANSPOSE2D || id == OP_CONV_TRANSPOSE3D;
}

/* An amp_conv_desc's fields as C expressions. */
typedef struct ConvFields {
    int ns;
    const char *batch, *in_channels, *out_channels, *groups;
    const char *in_size, *out_size, *kernel, *stride, *padding, *dilation, *output_padding;
} ConvFields;

/* The descriptor of conv node n; false (and an error) if the padding has
 * no kernel. */
static bool conv_fields(Emitter *e, Node *n, ConvFields *cf)
{
    OpId id = n->op->id;
    bool transposed = conv_is_transposed(n);
    const Shape *sx = in_shape(n, 0), *sw = in_shape(n, 1), *so = out_shape(n);
    int ns = id == OP_CONVOLUTION || id == OP_CONV_EPILOGUE ? sw->ndim - 2 : spatial_dims_of(id);
    static const int64_t ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
    int64_t stride[3] = {0, 0, 0}, dil[3] = {0, 0, 0}, outpad[3] = {0, 0, 0}, pad[3] = {0, 0, 0};
    attr_ints(n, "stride", ones, ns, stride);
    attr_ints(n, "dilation", ones, ns, dil);
    if (transposed)
        attr_ints(n, "output_padding", zeros, ns, outpad);
    if (attr_kind(n, "padding", ATTR_NONE) == ATTR_STR) {
        if (strcmp(attr_str(n, "padding", ""), "same") == 0) {
            /* PyTorch pads total = dilation * (k - 1), the extra one on the
             * right; the kernel pads symmetrically, so odd totals need work */
            for (int i = 0; i < ns; i++) {
                int64_t k;
                if (!poly_is_const(sw->dims[sw->ndim - ns + i], &k) || (dil[i] * (k - 1)) % 2)
                    return unsupported(e, n, "padding=\"same\" with an even effective kernel size has no runtime kernel yet");
                pad[i] = dil[i] * (k - 1) / 2;
            }
        }
    } else {
        attr_ints(n, "padding", zeros, ns, pad);
    }
    *cf = (ConvFields){
        .ns = ns,
        .batch = batch_of(e, sx, ns),
        .in_channels = poly_c(e, sx->dims[sx->ndim - ns - 1]),
        .out_channels = poly_c(e, so->dims[so->ndim - ns - 1]),
        .groups = i64_c(e, attr_int(n, "groups", 1)),
        .in_size = spatial_array(e, sx, ns),
        .out_size = spatial_array(e, so, ns),
        .kernel = spatial_array(e, sw, ns),
        .stride = i64_array(e, stride, 3),
        .padding = i64_array(e, pad, 3),
        .dilation = i64_array(e, dil, 3),
        .output_padding = i64_array(e, outpad, 3),
    };
    return true;
}

static void print_conv_desc(Emitter *e, const char *name, const ConvFields *cf)
{
    buf_printf(e->out, "        const amp_conv_desc %s = {\n", name);
    buf_printf(e->out, "            .batch = %s, .in_channels = %s, .out_channels = %s,\n", cf->batch,
               cf->in_channels, cf->out_channels);
    buf_printf(e->out, "            .nspatial = %d, .groups = %s,\n", cf->ns, cf->groups);
    buf_printf(e->out, "            .in_size = %s, .out_size = %s,\n", cf->in_size, cf->out_size);
    buf_printf(e->out, "            .kernel = %s, .stride = %s, .padding = %s,\n", cf->kernel, cf->stride,
               cf->padding);
    buf_printf(e->out, "            .dilation = %s, .output_padding = %s,\n        };\n", cf->dilation,
               cf->output_padding);
}

/* Opens a block declaring `amp_conv_desc d` for conv node n; false (and an
 * error) if the padding has no kernel. */
bool emit_conv_desc(Emitter *e, Node *n)
{
    ConvFields cf;
    if (!conv_fields(e, n, &cf))
        return false;
    open_block(e);
    print_conv_desc(e, "d", &cf);
    return true;
}

/* Inside emit_conv_desc's block: `amp_conv_desc dt`, the adjoint of conv
 * node n (in and out swapped; no output_padding), one initializer. */
void emit_conv_adjoint_desc(Emitter *e, Node *n)
{
    ConvFields cf;
    if (!conv_fields(e, n, &cf))
        return;
    ConvFields t = cf;
    t.in_channels = cf.out_channels;
    t.out_channels = cf.in_channels;
    t.in_size = cf.out_size;
    t.out_size = cf.in_size;
    t.output_padding = repeat3(e, 0, cf.ns);
    print_conv_desc(e, "dt", &t);
}

bool conv_weights_preparable(const Node *n, Value **src)
{
    DType t = n->out->type.dtype;
    OpId id = n->op->id;
    if (!(id == OP_CONV1D || id == OP_CONV2D || id == OP_CONV3D || id == OP_CONVOLUTION || id == OP_CONV_EPILOGUE) ||
        conv_is_transposed((Node *)n) || !(t == DT_F32 || t == DT_BF16 || t == DT_F16) || !n->in[1])
        return false;
    Value *w = preparable_weight_source(n);
    if (!w)
        return false;
    const Shape *sx = in_shape((Node *)n, 0), *sw = &w->type.shape;
    int ns = id == OP_CONVOLUTION || id == OP_CONV_EPILOGUE ? sw->ndim - 2 : spatial_dims_of(id);
    int64_t k;
    if (sx->ndim < ns + 1 || !poly_is_const(sx->dims[sx->ndim - ns - 1], &k))
        return false;
    for (int i = 0; i < sw->ndim; i++)
        if (!poly_is_const(sw->dims[i], &k))
            return false;
    *src = w;
    return true;
}

void emit_conv_weight_desc(Emitter *e, const Node *n)
{
    Node *m = (Node *)n;
    const Shape *sx = in_shape(m, 0), *sw = in_shape(m, 1);
    OpId id = n->op->id;
    int ns = id == OP_CONVOLUTION || id == OP_CONV_EPILOGUE ? sw->ndim - 2 : spatial_dims_of(id);
    buf_printf(e->out, "        const amp_conv_desc d = {\n");
    buf_printf(e->out, "            .nspatial = %d, .groups = %s, .kernel = %s,\n", ns,
               i64_c(e, attr_int(n, "groups", 1)), spatial_array(e, sw, ns));
    buf_printf(e->out, "            .in_channels = %s, .out_channels = %s,\n        };\n",
               poly_c(e, sx->dims[sx->ndim - ns - 1]), poly_c(e, sw->dims[0]));
}

void emit_conv(Emitter *e, Node *n, const char *y)
{
    bool transposed = conv_is_transposed(n);
    if (!emit_conv_desc(e, n))
        return;
    if (!transposed && e->prep_packed && e->prep_packed[n->out->id] >= 0)
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s, NULL, %s);\n", kernel(e, "conv_ex", n->out->type.dtype),
                   in_c(e, n, 0), in_c(e, n, 1), prepared_weights_c(e, n), in_c(e, n, 2), y);
    else
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s);\n",
                   kernel(e, transposed ? "conv_transpose" : "conv", n->out->type.dtype), in_c(e, n, 0),
                   in_c(e, n, 1), in_c(e, n, 2), y);
    close_block(e);
}

/* _conv_epilogue (fuse.c): the convolution with batch_norm, the residual's
 * add and the relu or clamp applied to each output tile (amp_conv_post), and in a
 * training step its own result too (more_out[0]: post.raw). */
void emit_conv_epilogue(Emitter *e, Node *n, const char *y)
{
    if (!emit_conv_desc(e, n))
        return;
    buf_printf(e->out, "        const amp_conv_post post = {\n");
    buf_printf(e->out, "            .bn_mean = %s, .bn_var = %s,\n", in_c(e, n, 3), in_c(e, n, 4));
    buf_printf(e->out, "            .bn_weight = %s, .bn_bias = %s,\n", in_c(e, n, 5), in_c(e, n, 6));
    buf_printf(e->out, "            .bn_dtype = %s, .bn_eps = %s,\n", param_dtype_c(n, 3, 6),
               double_c(e, attr_number(n, "eps", "1e-05", DT_F64)));
    buf_printf(e->out, "            .residual = %s, .relu = %d,\n", in_c(e, n, 7), attr_bool(n, "relu", false));
    if (attr_bool(n, "clamp", false)) { /* the bounds as the clamp's own call would take them */
        DType ct = compute_dtype(n->out->type.dtype);
        double lo = attr_given(n, "clamp_min") ? attr_number(n, "clamp_min", "0", ct) : -INFINITY;
        double hi = attr_given(n, "clamp_max") ? attr_number(n, "clamp_max", "0", ct) : INFINITY;
        buf_printf(e->out, "            .clamp = 1, .clamp_lo = %s, .clamp_hi = %s,\n", double_c(e, lo),
                   double_c(e, hi));
    }
    if (n->nmore) /* the convolution's own result too, for the gradients */
        buf_printf(e->out, "            .raw = %s,\n", more_out_c(e, n, 0));
    buf_printf(e->out, "        };\n");
    buf_printf(e->out, "        %s(&d, %s, %s, %s, %s, &post, %s);\n", kernel(e, "conv_ex", n->out->type.dtype),
               in_c(e, n, 0), in_c(e, n, 1), prepared_weights_c(e, n), in_c(e, n, 2), y);
    close_block(e);
}

void emit_conv_tbc(Emitter *e, Node *n, const char *y)
{
    const Shape *sx = in_shape(n, 0), *sw = in_shape(n, 1);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "conv_tbc", n->out->type.dtype),
               poly_c(e, sx->dims[0]), poly_c(e, sx->dims[1]), poly_c(e, sx->dims[2]), poly_c(e, sw->dims[0]),
               poly_c(e, sw->dims[2]), i64_c(e, attr_int(n, "pad", 0)), in_c(e, n, 0), in_c(e, n, 1),
               in_c(e, n, 2), y);
}

const char *planes_of(Emitter *e, const Shape *s, int ns)
{
    return dims_product(e, s, 0, s->ndim - ns);
}

/* Opens a block declaring `const amp_pool_desc d`, one initializer, for max/avg pool node n. */
void emit_pool_desc(Emitter *e, Node *n)
{
    OpId id = n->op->id;
    int ns = spatial_dims_of(id);
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    bool is_max = id == OP_MAX_POOL1D || id == OP_MAX_POOL2D || id == OP_MAX_POOL3D;
    static const int64_t ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
    int64_t k[3] = {0, 0, 0}, stride[3] = {0, 0, 0}, pad[3] = {0, 0, 0}, dil[3] = {0, 0, 0};
    attr_ints(n, "kernel_size", ones, ns, k);
    attr_ints(n, "stride", k, ns, stride);
    attr_ints(n, "padding", zeros, ns, pad);
    attr_ints(n, "dilation", ones, is_max ? ns : 0, dil);
    for (int i = is_max ? ns : 0; i < ns; i++)
        dil[i] = 1;
    open_block(e);
    buf_printf(e->out, "        const amp_pool_desc d = {\n");
    buf_printf(e->out, "            .nspatial = %d, .planes = %s,\n", ns, planes_of(e, sx, ns));
    buf_printf(e->out, "            .in_size = %s, .out_size = %s,\n", spatial_array(e, sx, ns), spatial_array(e, so, ns));
    buf_printf(e->out, "            .kernel = %s, .stride = %s,\n", i64_array(e, k, 3), i64_array(e, stride, 3));
    buf_printf(e->out, "            .padding = %s, .dilation = %s,\n", i64_array(e, pad, 3), i64_array(e, dil, 3));
    if (!is_max) {
        int64_t div = 0;
        if (attr_given(n, "divisor_override"))
            div = attr_int(n, "divisor_override", 0);
        buf_printf(e->out, "            .count_include_pad = %d, .divisor_override = %s,\n",
                   attr_bool(n, "count_include_pad", true), i64_c(e, div));
    }
    buf_puts(e->out, "        };\n");
}

void emit_pool(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    OpId id = n->op->id;
    int ns = spatial_dims_of(id);
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    if (id == OP_ADAPTIVE_AVG_POOL1D || id == OP_ADAPTIVE_AVG_POOL2D || id == OP_ADAPTIVE_AVG_POOL3D) {
        open_block(e);
        buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, sx, ns));
        buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, so, ns));
        buf_printf(e->out, "        %s(%d, %s, in_size, out_size, %s, %s);\n", kernel(e, "adaptive_avg_pool", t), ns,
                   planes_of(e, sx, ns), in_c(e, n, 0), y);
        close_block(e);
        return;
    }
    if (id == OP_ADAPTIVE_MAX_POOL1D || id == OP_ADAPTIVE_MAX_POOL2D) {
        open_block(e);
        buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, sx, ns));
        buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, so, ns));
        buf_printf(e->out, "        %s(%d, %s, in_size, out_size, %s, %s, NULL);\n", kernel(e, "adaptive_max_pool", t),
                   ns, planes_of(e, sx, ns), in_c(e, n, 0), y);
        close_block(e);
        return;
    }
    bool is_max = id == OP_MAX_POOL1D || id == OP_MAX_POOL2D || id == OP_MAX_POOL3D;
    emit_pool_desc(e, n);
    if (is_max)
        buf_printf(e->out, "        %s(&d, %s, %s, %s);\n", kernel(e, "max_pool", t), in_c(e, n, 0), y,
                   n->nmore ? e->cname[n->more_out[0]->id] : "NULL");
    else
        buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "avg_pool", t), in_c(e, n, 0), y);
    close_block(e);
}

/* The kernel's mode of upsample_* or interpolate node f. */
static const char *upsample_mode(Node *f)
{
    OpId id = f->op->id;
    if (id == OP_INTERPOLATE) {
        const char *m = attr_str(f, "mode", "nearest");
        return !strcmp(m, "nearest") ? "AMP_UPSAMPLE_NEAREST" : !strcmp(m, "bicubic") ? "AMP_UPSAMPLE_CUBIC"
                                                                                    : "AMP_UPSAMPLE_LINEAR";
    }
    bool nearest = id == OP_UPSAMPLE_NEAREST1D || id == OP_UPSAMPLE_NEAREST2D || id == OP_UPSAMPLE_NEAREST3D;
    return nearest ? "AMP_UPSAMPLE_NEAREST" : id == OP_UPSAMPLE_BICUBIC2D ? "AMP_UPSAMPLE_CUBIC" : "AMP_UPSAMPLE_LINEAR";
}

void emit_upsample_desc(Emitter *e, Node *f, const Shape *sx, const Shape *so)
{
    bool interp = f->op->id == OP_INTERPOLATE;
    int ns = interp ? sx->ndim - 2 : spatial_dims_of(f->op->id);
    const char *mode = upsample_mode(f);
    const char *scale_name = interp ? "scale_factor" : "scale_factors";
    /* PyTorch passes the user's scale on to the kernel, which then maps
     * output to input positions by it rather than by the sizes' ratio;
     * recompute_scale_factor=true passes none */
    bool pass = !(interp && attr_bool(f, "recompute_scale_factor", false));
    const char *scales[3] = {"0", "0", "0"};
    for (int i = 0; i < ns; i++) {
        /* one factor for every dim, or one per dim (lower.c names them
         * scale_factor.0, ...) */
        const char *one = arena_printf(e->c->arena, "%s.%d", scale_name, i);
        double scale = 0;
        if (pass && attr_given(f, one))
            scale = attr_number(f, one, "0", DT_F64);
        else if (pass && attr_given(f, scale_name))
            scale = attr_number(f, scale_name, "0", DT_F64);
        scales[i] = double_c(e, scale);
    }
    open_block(e);
    buf_printf(e->out, "        const amp_upsample_desc d = {\n");
    buf_printf(e->out, "            .nspatial = %d, .planes = %s,\n", ns, planes_of(e, sx, ns));
    buf_printf(e->out, "            .in_size = %s, .out_size = %s,\n", spatial_array(e, sx, ns), spatial_array(e, so, ns));
    buf_printf(e->out, "            .scale = %s,\n", c_array(e, scales, 3));
    buf_printf(e->out, "            .mode = %s, .align_corners = %d,\n        };\n", mode,
               strcmp(mode, "AMP_UPSAMPLE_NEAREST") ? attr_bool(f, "align_corners", false) : 0);
}

void emit_upsample(Emitter *e, Node *n, const char *y)
{
    emit_upsample_desc(e, n, in_shape(n, 0), out_shape(n));
    buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "upsample", n->out->type.dtype), in_c(e, n, 0), y);
    close_block(e);
}

void emit_grid_sampler(Emitter *e, Node *n, const char *y)
{
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    int ns = sx->ndim - 2;
    int64_t mode = attr_int(n, "interpolation_mode", 0);
    if (mode == 2) {
        unsupported(e, n, "interpolation_mode 2 (bicubic) has no runtime kernel yet");
        return;
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, sx, ns));
    buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, so, ns));
    buf_printf(e->out, "        %s(%d, %s, %s, in_size, out_size, %d, %d, %d, %s, %s, %s);\n",
               kernel(e, "grid_sampler", n->out->type.dtype), ns, poly_c(e, sx->dims[0]), poly_c(e, sx->dims[1]),
               (int)mode, (int)attr_int(n, "padding_mode", 0), attr_bool(n, "align_corners", false),
               in_c(e, n, 0), in_c(e, n, 1), y);
    close_block(e);
}

void emit_max_unpool(Emitter *e, Node *n, const char *y)
{
    int ns = n->op->id == OP_MAX_UNPOOL3D ? 3 : 2;
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s)", kernel(e, "max_unpool", n->out->type.dtype),
                                         planes_of(e, sx, ns), dims_product(e, sx, sx->ndim - ns, sx->ndim),
                                         dims_product(e, so, so->ndim - ns, so->ndim), in_c(e, n, 0), in_c(e, n, 1), y));
}
