/* types_spatial.c: the type rules of the spatial ops.
 *
 * Convolution (conv1d/2d/3d, the transposed ones, convolution, conv_tbc),
 * pooling (max, average, adaptive; max_unpool), upsampling, and the
 * reflection and replication pads.  Inputs are [N, C, spatial...] or
 * unbatched [C, spatial...]; output sizes follow PyTorch's formulas
 * (window_out), exactly when a size is a number and as a polynomial over
 * the model's dims when the stride is 1.  grid_sampler's rule is here too,
 * reached through infer_index_put, which its ops.def row names.
 */

#include "types.h"

#include <string.h>

/* ---- convolution -------------------------------------------------------- */

/* PyTorch's output size of a sliding window:
 *   floor((in + 2*pad - dil*(k-1) - 1 [+ stride-1 with ceil_mode]) / stride) + 1,
 * and with ceil_mode one less if the last window would start in the padding.
 * A symbolic size works with stride 1, where it stays a polynomial. */
static Poly *window_out(Ctx *c, Expr *call, const Poly *in, int64_t k, int64_t stride, int64_t pad, int64_t dil,
                        bool ceil_mode)
{
    int64_t n;
    if (const_dim(in, &n)) {
        int64_t span = n + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
        int64_t out = (span < 0 ? -((-span + stride - 1) / stride) : span / stride) + 1;
        if (ceil_mode && (out - 1) * stride >= n + pad)
            out--;
        if (out < 1) {
            error_at(c, call->loc, "%s(): given input size %lld, kernel size %lld, stride %lld, padding %lld and "
                     "dilation %lld, the calculated output size %lld is too small", call->op->name, (long long)n,
                     (long long)k, (long long)stride, (long long)pad, (long long)dil, (long long)out);
            return NULL;
        }
        return poly_const(c, out);
    }
    if (stride == 1) {
        Poly *r = poly_add(c, in, poly_const(c, 2 * pad - dil * (k - 1)));
        if (!r)
            error_at(c, call->loc, "this dimension overflows 64-bit integers");
        return r;
    }
    error_at(c, call->loc, "%s() with stride %lld over the symbolic dimension %s is not supported: its output "
             "size is not a polynomial in the model's dimensions", call->op->name, (long long)stride,
             dim_str(c, in));
    return NULL;
}

/* A size that must be at least `min` when known. */
static bool size_at_least(Ctx *c, Expr *call, const Poly *p, int64_t min, const char *what)
{
    int64_t v;
    if (!const_dim(p, &v) || v >= min)
        return true;
    error_at(c, call->loc, "%s(): the calculated %s size %lld is too small", call->op->name, what, (long long)v);
    return false;
}

/* conv1d/2d/3d and conv_transpose1d/2d/3d.  A transposed convolution's
 * weight is [in_channels, out_channels/groups, kernel...] and its output
 * (in - 1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1. */
bool infer_conv(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool transposed = id == OP_CONV_TRANSPOSE1D || id == OP_CONV_TRANSPOSE2D || id == OP_CONV_TRANSPOSE3D;
    int spatial = id == OP_CONV1D || id == OP_CONV_TRANSPOSE1D ? 1 : id == OP_CONV3D || id == OP_CONV_TRANSPOSE3D ? 3 : 2;
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *w = arg(call, 1), *b;
    if (!tensor_arg(c, call, "bias", &b) || !not_bool(c, call, x))
        return false;
    if (!same_dtype(c, call, x, w) || (b && !same_dtype(c, call, x, b)))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape;
    if (id == OP_CONVOLUTION) {
        /* aten's convolution: the weight's rank says the spatial dims; batched input only */
        if (!bool_param(c, call, "transposed", false, &transposed))
            return false;
        if (ws->ndim < 3 || ws->ndim > 5) {
            error_at(c, w->loc, "convolution(): expected a 3-D, 4-D or 5-D weight, got %s", type_to_string(c, &w->type));
            return false;
        }
        spatial = ws->ndim - 2;
        if (xs->ndim != ws->ndim) {
            error_at(c, x->loc, "Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional "
                     "input of size %s instead", ws->ndim, ws->ndim, shape_str(c, ws), xs->ndim, shape_str(c, xs));
            return false;
        }
        Expr *pe = named(call, "padding");
        if (pe && pe->kind == E_STRING) {
            error_at(c, pe->loc, "convolution() takes an int padding; padding='%s' is conv1d/2d/3d's", pe->text);
            return false;
        }
    }
    if (xs->ndim != spatial + 1 && xs->ndim != spatial + 2) {
        error_at(c, x->loc, "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                 spatial + 1, spatial + 2, call->op->name, shape_str(c, xs));
        return false;
    }
    if (ws->ndim != spatial + 2) {
        error_at(c, w->loc, transposed ? "%s(): expected a %d-D weight [in_channels, out_channels/groups, kernel...], got %s"
                                       : "%s(): expected a %d-D weight [out_channels, in_channels/groups, kernel...], got %s",
                 call->op->name, spatial + 2, type_to_string(c, &w->type));
        return false;
    }
    /* stride, padding, dilation, output_padding: one per spatial dim */
    static const int64_t ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
    int64_t groups, stride[3], dil[3], pad[3] = {0, 0, 0}, outpad[3] = {0, 0, 0};
    if (!int_param(c, call, "groups", 1, &groups) || !spatial_param(c, call, "stride", ones, spatial, stride) ||
        !spatial_param(c, call, "dilation", ones, spatial, dil) ||
        (transposed && !spatial_param(c, call, "output_padding", zeros, spatial, outpad)))
        return false;
    Expr *pe = named(call, "padding");
    bool same = false;
    if (pe && pe->kind == E_STRING && !transposed) {
        same = strcmp(pe->text, "same") == 0;
        if (!same && strcmp(pe->text, "valid") != 0) {
            error_at(c, pe->loc, "Invalid padding string '%s': it takes \"valid\", \"same\" or an int", pe->text);
            return false;
        }
    } else if (!spatial_param(c, call, "padding", zeros, spatial, pad)) {
        return false;
    }
    for (int i = 0; i < spatial; i++) {
        if (groups <= 0 || stride[i] <= 0 || dil[i] <= 0 || pad[i] < 0 || outpad[i] < 0) {
            error_at(c, call->loc, "%s(): %s", call->op->name,
                     groups <= 0 ? "non-positive groups is not supported" : stride[i] <= 0 ? "non-positive stride is not supported"
                     : dil[i] <= 0 ? "dilation should be greater than zero" : outpad[i] < 0 ? "negative output_padding is not supported"
                     : "negative padding is not supported");
            return false;
        }
        if (same && stride[i] != 1) {
            error_at(c, pe->loc, "padding='same' is not supported for strided convolutions");
            return false;
        }
        if (transposed && outpad[i] >= stride[i] && outpad[i] >= dil[i]) {
            error_at(c, named(call, "output_padding")->loc, "output padding must be smaller than either stride or "
                     "dilation, but got output_padding: %lld, stride: %lld and dilation: %lld", (long long)outpad[i],
                     (long long)stride[i], (long long)dil[i]);
            return false;
        }
    }
    int cdim = xs->ndim - spatial - 1;
    const Poly *cin = xs->dims[cdim], *cout;
    int64_t co;
    if (transposed) {
        Poly *out_ch = poly_mul(c, ws->dims[1], poly_const(c, groups));
        if (!dims_match(cin, ws->dims[0]) || !out_ch) {
            error_at(c, call->loc, "Given transposed=1, weight of size %s, expected input%s to have %s channels, but "
                     "got %s channels instead", shape_str(c, ws), shape_str(c, xs), dim_str(c, ws->dims[0]),
                     dim_str(c, cin));
            return false;
        }
        if (const_dim(ws->dims[0], &co) && co % groups != 0) {
            error_at(c, w->loc, "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                     "weight of size %s instead", (long long)groups, (long long)groups, shape_str(c, ws));
            return false;
        }
        cout = out_ch;
    } else {
        Poly *expect = poly_mul(c, ws->dims[1], poly_const(c, groups));
        if (!expect || !dims_match(cin, expect)) {
            error_at(c, call->loc, "Given groups=%lld, weight of size %s, expected input%s to have %s channels, but got %s "
                     "channels instead", (long long)groups, shape_str(c, ws), shape_str(c, xs),
                     expect ? dim_str(c, expect) : "?", dim_str(c, cin));
            return false;
        }
        cout = ws->dims[0];
        if (const_dim(cout, &co) && co % groups != 0) {
            error_at(c, w->loc, "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                     "weight of size %s instead", (long long)groups, (long long)groups, shape_str(c, ws));
            return false;
        }
    }
    if (b && (b->type.shape.ndim != 1 || !dims_match(b->type.shape.dims[0], cout))) {
        error_at(c, b->loc, "Given %sweight of size %s, expected bias to be 1-dimensional with %s elements, but got "
                 "bias of size %s instead", transposed ? "transposed=1, " : "", shape_str(c, ws), dim_str(c, cout),
                 shape_str(c, &b->type.shape));
        return false;
    }
    Shape out = *xs;
    out.dims[cdim] = (Poly *)cout;
    for (int i = 0; i < spatial; i++) {
        int64_t k;
        if (!const_dim(ws->dims[2 + i], &k)) {
            error_at(c, w->loc, "%s(): the kernel size must be a number, not %s", call->op->name,
                     dim_str(c, ws->dims[2 + i]));
            return false;
        }
        Poly *in = xs->dims[cdim + 1 + i], *o;
        if (transposed) {
            o = affine(c, call, in, stride[i], -stride[i] - 2 * pad[i] + dil[i] * (k - 1) + outpad[i] + 1);
            if (o && !size_at_least(c, call, o, 1, "output"))
                return false;
        } else {
            int64_t p = same ? dil[i] * (k - 1) / 2 : pad[i];
            o = same ? in : window_out(c, call, in, k, stride[i], p, dil[i], false);
        }
        if (!o)
            return false;
        out.dims[cdim + 1 + i] = o;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* conv_tbc: input [time, batch, in_channels], weight [width, in_channels,
 * out_channels], bias [out_channels]; pad= pads the time dim on both sides. */

bool infer_conv_tbc(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0), *w = arg(call, 1), *b = arg(call, 2);
    if (!not_bool(c, call, x) || !same_dtype(c, call, x, w) || !same_dtype(c, call, x, b))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape, *bs = &b->type.shape;
    const char *msg = xs->ndim != 3 ? "Input must have 3 dims: time, batch, in_channel"
                      : ws->ndim != 3 ? "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."
                      : bs->ndim != 1 ? "Bias must be 1-D"
                      : !dims_match(xs->dims[2], ws->dims[1]) ? "Input dim 2 (input channels) is not == dim 1 in the weight tensor"
                      : !dims_match(bs->dims[0], ws->dims[2]) ? "Bias size must equal dim 2 in the weight tensor (output channels)."
                      : NULL;
    if (msg) {
        error_at(c, call->loc, "%s (input %s, weight %s, bias %s)", msg, shape_str(c, xs), shape_str(c, ws),
                 shape_str(c, bs));
        return false;
    }
    int64_t pad, k;
    if (!int_param(c, call, "pad", 0, &pad))
        return false;
    if (!const_dim(ws->dims[0], &k)) {
        error_at(c, w->loc, "conv_tbc(): the kernel width must be a number, not %s", dim_str(c, ws->dims[0]));
        return false;
    }
    Shape out = *xs;
    if (!(out.dims[0] = affine(c, call, xs->dims[0], 1, 2 * pad - k + 1)) || !size_at_least(c, call, out.dims[0], 1, "output"))
        return false;
    out.dims[2] = ws->dims[2];
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- pooling ------------------------------------------------------------ */

bool infer_pool(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    OpId id = call->op->id;
    bool is_max = id == OP_MAX_POOL1D || id == OP_MAX_POOL2D || id == OP_MAX_POOL3D;
    bool adaptive_max = id == OP_ADAPTIVE_MAX_POOL1D || id == OP_ADAPTIVE_MAX_POOL2D;
    bool adaptive = adaptive_max || id == OP_ADAPTIVE_AVG_POOL1D || id == OP_ADAPTIVE_AVG_POOL2D ||
                    id == OP_ADAPTIVE_AVG_POOL3D;
    int spatial = id == OP_MAX_POOL3D || id == OP_AVG_POOL3D || id == OP_ADAPTIVE_AVG_POOL3D ? 3
                  : id == OP_MAX_POOL1D || id == OP_AVG_POOL1D || id == OP_ADAPTIVE_AVG_POOL1D ||
                    id == OP_ADAPTIVE_MAX_POOL1D ? 1 : 2;
    const Shape *xs = &x->type.shape;
    if (xs->ndim != spatial + 1 && xs->ndim != spatial + 2) {
        error_at(c, x->loc, "%s(): non-empty %dD or %dD (batch mode) tensor expected for input, but got %s",
                 call->op->name, spatial + 1, spatial + 2, type_to_string(c, &x->type));
        return false;
    }
    if (!not_bool(c, call, x) || (adaptive && !require_float(c, call, x)))
        return false;
    Shape out = *xs;
    if (adaptive) {
        static const int64_t none[3] = {0, 0, 0};
        int64_t o[3];
        if (!spatial_param(c, call, "output_size", none, spatial, o))
            return false;
        for (int i = 0; i < spatial; i++) {
            if (o[i] < 0) {
                error_at(c, named(call, "output_size")->loc, "%s: elements of output_size must be "
                         "greater than or equal to 0 but received %lld", call->op->name, (long long)o[i]);
                return false;
            }
        }
        bool indices;
        if (adaptive_max && !bool_param(c, call, "return_indices", false, &indices))
            return false;
        if (adaptive_max && indices) {
            error_at(c, named(call, "return_indices")->loc, "%s(return_indices=true) returns two tensors, "
                     "which ampc cannot assign yet", call->op->name);
            return false;
        }
        for (int i = 0; i < spatial; i++)
            out.dims[out.ndim - spatial + i] = poly_const(c, o[i]);
        call->type.dtype = x->type.dtype;
        call->type.shape = out;
        return true;
    }
    /* kernel_size, stride (kernel_size's by default), padding, dilation: one per spatial dim */
    static const int64_t ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
    int64_t k[3], stride[3], pad[3], dil[3] = {1, 1, 1};
    bool ceil_mode;
    if (!spatial_param(c, call, "kernel_size", ones, spatial, k) || !spatial_param(c, call, "stride", k, spatial, stride) ||
        !spatial_param(c, call, "padding", zeros, spatial, pad) || !bool_param(c, call, "ceil_mode", false, &ceil_mode) ||
        (is_max && !spatial_param(c, call, "dilation", ones, spatial, dil)))
        return false;
    if (is_max) {
        bool indices;
        if (!bool_param(c, call, "return_indices", false, &indices))
            return false;
        if (indices) {
            error_at(c, named(call, "return_indices")->loc, "%s(return_indices=true) returns two tensors, "
                     "which ampc cannot assign yet", call->op->name);
            return false;
        }
    }
    int64_t div = 1; /* avg_pool1d has no divisor_override */
    if (!is_max && op_param_index(call->op, "divisor_override") >= 0 && !int_param(c, call, "divisor_override", 1, &div))
        return false;
    if (div == 0) {
        error_at(c, named(call, "divisor_override")->loc, "divisor must be not zero");
        return false;
    }
    for (int i = 0; i < spatial; i++) {
        if (k[i] <= 0 || stride[i] <= 0 || dil[i] <= 0 || pad[i] < 0) {
            error_at(c, call->loc, "%s(): %s", call->op->name,
                     k[i] <= 0 ? "kernel_size must be greater than zero" : stride[i] <= 0 ? "stride should be greater than zero"
                     : dil[i] <= 0 ? "dilation should be greater than zero" : "pad must be non-negative");
            return false;
        }
        if (is_max && pad[i] > ((k[i] - 1) * dil[i] + 1) / 2) {
            error_at(c, call->loc, "pad should be at most half of effective kernel size, but got pad=%lld, "
                     "kernel_size=%lld and dilation=%lld", (long long)pad[i], (long long)k[i], (long long)dil[i]);
            return false;
        }
        if (!is_max && pad[i] > k[i] / 2) {
            error_at(c, call->loc, "pad should be smaller than or equal to half of kernel size, but got pad = %lld, "
                     "kernel_size = %lld", (long long)pad[i], (long long)k[i]);
            return false;
        }
        int d = out.ndim - spatial + i;
        Poly *o = window_out(c, call, xs->dims[d], k[i], stride[i], pad[i], dil[i], ceil_mode);
        if (!o)
            return false;
        out.dims[d] = o;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* max_unpool2d/3d: input [N, C, spatial] or [C, spatial], indices i64 of
 * the same shape; the output's spatial dims are output_size. */
bool infer_max_unpool(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    bool three = call->op->id == OP_MAX_UNPOOL3D;
    int ns = three ? 3 : 2;
    Expr *x = arg(call, 0), *idx = arg(call, 1);
    const Shape *xs = &x->type.shape;
    if (xs->ndim != ns + 1 && xs->ndim != ns + 2) {
        error_at(c, x->loc, "Input to max_unpooling%dd should be a %dd or %dd Tensor, but got a tensor with %d "
                 "dimensions.", ns, ns + 1, ns + 2, xs->ndim);
        return false;
    }
    if (idx->type.dtype != DT_I64) {
        error_at(c, idx->loc, "elements in indices should be type int64 but got: %s", dtype_name(idx->type.dtype));
        return false;
    }
    if (!shape_equal(&idx->type.shape, xs)) {
        error_at(c, idx->loc, "Expected shape of indices to be same as that of the input tensor (%s) but got indices "
                 "tensor with shape: %s", shape_str(c, xs), shape_str(c, &idx->type.shape));
        return false;
    }
    if (!require_float(c, call, x))
        return false;
    /* output_size (and max_unpool3d's stride and padding, checked only):
     * one int for every spatial dim, or one per dim */
    static const int64_t zero[3] = {0, 0, 0};
    int64_t o[3], stride[3], pad[3];
    if (!spatial_param(c, call, "output_size", zero, ns, o))
        return false;
    if (three && (!spatial_param(c, call, "stride", zero, ns, stride) ||
                  !spatial_param(c, call, "padding", zero, ns, pad)))
        return false;
    for (int i = 0; i < ns; i++) {
        if (three && stride[i] <= 0) {
            error_at(c, named(call, "stride")->loc, "strides should be greater than zero, but got stride: %lld",
                     (long long)stride[i]);
            return false;
        }
        if (o[i] <= 0) {
            error_at(c, named(call, "output_size")->loc, "%s(): output_size should be greater than zero, but got %lld",
                     call->op->name, (long long)o[i]);
            return false;
        }
    }
    Shape out = *xs;
    for (int i = 0; i < ns; i++)
        out.dims[out.ndim - ns + i] = poly_const(c, o[i]);
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- upsampling and padding --------------------------------------------- */

static int op_spatial(OpId id)
{
    switch (id) {
    case OP_UPSAMPLE_NEAREST1D:
    case OP_UPSAMPLE_LINEAR1D:
    case OP_REFLECTION_PAD1D:
    case OP_REPLICATION_PAD1D:
        return 1;
    case OP_UPSAMPLE_NEAREST3D:
    case OP_UPSAMPLE_TRILINEAR3D:
    case OP_REPLICATION_PAD3D:
        return 3;
    default:
        return 2;
    }
}

/* interpolate's mode: PyTorch's names, each with the input ranks it takes */
static bool interpolate_mode(Ctx *c, Expr *call, int ndim)
{
    static const struct {
        const char *name;
        int lo, hi; /* input ranks */
        bool interpolating; /* takes align_corners */
    } modes[] = {{"nearest", 3, 5, false}, {"linear", 3, 3, true}, {"bilinear", 4, 4, true},
                 {"bicubic", 4, 4, true}, {"trilinear", 5, 5, true}};
    Expr *m = named(call, "mode");
    const char *mode = m && m->kind == E_STRING ? m->text : "nearest";
    if (m && m->kind != E_STRING) {
        error_at(c, m->loc, "interpolate(): mode= takes a string such as \"bilinear\"");
        return false;
    }
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(modes[i].name, mode) != 0)
            continue;
        if (ndim < modes[i].lo || ndim > modes[i].hi) {
            error_at(c, arg(call, 0)->loc, "interpolate(): mode \"%s\" takes a %dD input%s, but got a %dD input",
                     mode, modes[i].lo, modes[i].lo == modes[i].hi ? "" : " or more", ndim);
            return false;
        }
        if (!modes[i].interpolating && named(call, "align_corners")) {
            error_at(c, named(call, "align_corners")->loc, "align_corners option can only be set with the "
                     "interpolating modes: linear | bilinear | bicubic | trilinear");
            return false;
        }
        return true;
    }
    error_at(c, m->loc, "interpolate(): mode \"%s\" is not one of nearest, linear, bilinear, bicubic, trilinear "
             "(area and nearest-exact have no runtime kernel yet)", mode);
    return false;
}

/* The output sizes (or scale factors) of an upsample, one per spatial
 * dim: one value for every dim, or a list of one per dim
 * (interpolate(x, size=(5, 7)), scale_factor=(2, 1.5)). */
static bool upsample_sizes(Ctx *c, Expr *call, Expr *a, int spatial, int64_t *sizes, double *factors)
{
    bool size = a == named(call, call->op->id == OP_INTERPOLATE ? "size" : "output_size");
    int count = a->kind == E_LIST ? a->list->len : 1;
    if (count != 1 && count != spatial) {
        error_at(c, a->loc, "%s(): '%s' takes one value or %d of them, one per spatial dimension, but %d were given",
                 call->op->name, size ? "size" : "scale_factor", spatial, count);
        return false;
    }
    for (int i = 0; i < spatial; i++) {
        Expr *e = a->kind == E_LIST ? VEC_AT(a->list, count == 1 ? 0 : i) : a;
        if (size ? !int_arg(c, e, &sizes[i]) : !number_value(c, e, &factors[i]))
            return false;
        if (size ? sizes[i] <= 0 : factors[i] <= 0) {
            error_at(c, e->loc, "%s(): Input and output sizes should be greater than 0", call->op->name);
            return false;
        }
    }
    return true;
}

bool infer_upsample(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    bool interp = call->op->id == OP_INTERPOLATE;
    Expr *x = arg(call, 0), *size = named(call, interp ? "size" : "output_size");
    Expr *scale = named(call, interp ? "scale_factor" : "scale_factors");
    const Shape *xs = &x->type.shape;
    int spatial = interp ? xs->ndim - 2 : op_spatial(call->op->id);
    if (interp) {
        bool antialias, recompute;
        if (!interpolate_mode(c, call, xs->ndim) || !bool_param(c, call, "antialias", false, &antialias) ||
            !bool_param(c, call, "recompute_scale_factor", false, &recompute))
            return false;
        if (antialias) {
            error_at(c, named(call, "antialias")->loc, "interpolate(): antialias=true has no runtime kernel yet");
            return false;
        }
    }
    if (xs->ndim != spatial + 2) {
        error_at(c, x->loc, "%s(): Non-empty %dD data tensor expected but got a tensor with sizes %s", call->op->name,
                 spatial + 2, shape_str(c, xs));
        return false;
    }
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, x->loc, "\"%s\" not implemented for '%s': upsampling takes floating-point tensors",
                 call->op->name, dtype_name(x->type.dtype));
        return false;
    }
    if (!size == !scale) {
        error_at(c, call->loc, interp ? (size ? "only one of size or scale_factor should be defined"
                                              : "either size or scale_factor should be defined")
                                      : "Must specify exactly one of output_size and scale_factors");
        return false;
    }
    int ac = op_param_index(call->op, "align_corners");
    bool align;
    if (ac >= 0 && !bool_param(c, call, "align_corners", false, &align))
        return false;
    Shape out = *xs;
    int64_t sizes[MAX_DIMS];
    double factors[MAX_DIMS];
    if (!upsample_sizes(c, call, size ? size : scale, spatial, sizes, factors))
        return false;
    for (int i = 2; i < out.ndim; i++) {
        int64_t n, o = sizes[i - 2];
        double f = factors[i - 2];
        if (size)
            out.dims[i] = poly_const(c, o);
        else if (const_dim(xs->dims[i], &n))
            out.dims[i] = poly_const(c, (int64_t)((double)n * f));
        else if (f == (double)(int64_t)f) {
            if (!(out.dims[i] = affine(c, call, xs->dims[i], (int64_t)f, 0)))
                return false;
        } else {
            error_at(c, scale->loc, "%s(): a scale factor of %s over the symbolic dimension %s is not supported: "
                     "its output size is not a polynomial", call->op->name, loc_text(c, scale->loc),
                     dim_str(c, xs->dims[i]));
            return false;
        }
        if (!size_at_least(c, call, out.dims[i], 1, "output"))
            return false;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* F.pad (constant mode) and aten's reflection_pad* / replication_pad*. */
bool infer_pad(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Shape out = *xs;
    if (call->op->id == OP_PAD) {
        int64_t v[MAX_DIMS];
        Expr *where[MAX_DIMS];
        bool ok;
        int n = int_varargs(c, call, "pad", v, where, &ok);
        const char *mode;
        if (!ok || !str_param(c, call, "mode", "constant", &mode))
            return false;
        if (strcmp(mode, "constant") != 0) {
            error_at(c, named(call, "mode")->loc, "pad() takes mode=\"constant\" only; the other modes are the ops "
                     "reflection_pad1d/2d and replication_pad1d/2d/3d");
            return false;
        }
        Expr *value = named(call, "value");
        if (value && !is_number(value)) {
            error_at(c, value->loc, "value= of pad() takes a number");
            return false;
        }
        if (n % 2 != 0) {
            error_at(c, call->loc, "Padding length must be divisible by 2");
            return false;
        }
        if (n / 2 > xs->ndim) {
            error_at(c, call->loc, "Padding length too large");
            return false;
        }
        for (int i = 0; i < n / 2; i++) {
            int d = xs->ndim - 1 - i;
            int64_t size;
            if (!(out.dims[d] = affine(c, call, xs->dims[d], 1, v[2 * i] + v[2 * i + 1])))
                return false;
            if (const_dim(out.dims[d], &size) && size < 0) {
                error_at(c, call->loc, "The input size %s, plus negative padding %lld and %lld resulted in a negative "
                         "output size, which is invalid. Check dimension %d of your input.", dim_str(c, xs->dims[d]),
                         (long long)v[2 * i], (long long)v[2 * i + 1], d);
                return false;
            }
        }
        call->type.dtype = x->type.dtype;
        call->type.shape = out;
        return true;
    }
    int spatial = op_spatial(call->op->id);
    bool reflect = call->op->id == OP_REFLECTION_PAD1D || call->op->id == OP_REFLECTION_PAD2D;
    if (xs->ndim != spatial + 1 && xs->ndim != spatial + 2) {
        error_at(c, x->loc, "%s(): Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other "
                 "non-zero dimensions for input, but got: %s", call->op->name, spatial + 1, spatial + 2,
                 shape_str(c, xs));
        return false;
    }
    if (!dtype_is_float(x->type.dtype)) {
        error_at(c, x->loc, "\"%s\" not implemented for '%s': padding by %s takes floating-point tensors",
                 call->op->name, dtype_name(x->type.dtype), reflect ? "reflection" : "replication");
        return false;
    }
    /* one int for every side, or (left, right, top, bottom, front, back)
     * from the last dim back, as PyTorch's padding */
    int64_t v[6];
    int k = int_list_param(c, call, "padding", v, 6);
    if (k < 0)
        return false;
    if (k != 1 && k != 2 * spatial) {
        error_at(c, named(call, "padding")->loc, "%s(): padding size is expected to be %d, but got: %d",
                 call->op->name, 2 * spatial, k);
        return false;
    }
    for (int i = 1; k == 1 && i < 2 * spatial; i++)
        v[i] = v[0];
    for (int i = 0; i < spatial; i++) {
        int d = xs->ndim - 1 - i;
        int64_t size, lo = v[2 * i], hi = v[2 * i + 1];
        if (reflect && const_dim(xs->dims[d], &size) && (lo >= size || -lo >= size || hi >= size || -hi >= size)) {
            error_at(c, call->loc, "Argument #4: Padding size should be less than the corresponding input dimension, "
                     "but got: padding (%lld, %lld) at dimension %d of input %s", (long long)lo, (long long)hi, d,
                     shape_str(c, xs));
            return false;
        }
        if (!(out.dims[d] = affine(c, call, xs->dims[d], 1, lo + hi)) || !size_at_least(c, call, out.dims[d], 1, "output"))
            return false;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- grid sampling ---------------------------------------------------- */

/* grid_sampler: input [N, C, H, W] (or [N, C, D, H, W]) sampled at grid
 * [N, H', W', 2] (or [N, D', H', W', 3]), giving [N, C, H', W'] (or
 * [N, C, D', H', W']).  Reached through infer_index_put, which has checked
 * that input and grid are tensors. */
bool infer_grid_sampler(Ctx *c, Expr *call)
{
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Expr *g = arg(call, 1);
    const Shape *gs = &g->type.shape;
    if (!require_float(c, call, x))
        return false;
    if (x->type.dtype != g->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, call->loc, "grid_sampler(): expected input and grid to have same dtype, but input has %s and "
                 "grid has %s", dtype_name(x->type.dtype), dtype_name(g->type.dtype));
        return false;
    }
    int64_t last;
    if ((xs->ndim != 4 && xs->ndim != 5) || gs->ndim != xs->ndim) {
        error_at(c, call->loc, "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
                 "but got input with sizes %s and grid with sizes %s", shape_str(c, xs), shape_str(c, gs));
        return false;
    }
    if (!dims_match(xs->dims[0], gs->dims[0])) {
        error_at(c, call->loc, "grid_sampler(): expected grid and input to have same batch size, but got input with "
                 "sizes %s and grid with sizes %s", shape_str(c, xs), shape_str(c, gs));
        return false;
    }
    if (!const_dim(gs->dims[gs->ndim - 1], &last) || last != xs->ndim - 2) {
        error_at(c, g->loc, "grid_sampler(): expected grid to have size %d in last dimension, but got grid with "
                 "sizes %s", xs->ndim - 2, shape_str(c, gs));
        return false;
    }
    int64_t mode, pad;
    bool align;
    if (!int_param(c, call, "interpolation_mode", 0, &mode) || !int_param(c, call, "padding_mode", 0, &pad) ||
        !bool_param(c, call, "align_corners", false, &align))
        return false;
    if (mode < 0 || mode > 2 || pad < 0 || pad > 2 || (mode == 2 && xs->ndim == 5)) {
        error_at(c, call->loc, "grid_sampler(): interpolation_mode is 0 (bilinear), 1 (nearest) or 2 (bicubic, "
                 "4-D only) and padding_mode 0 (zeros), 1 (border) or 2 (reflection)");
        return false;
    }
    /* [N, C, grid's spatial dims...] */
    Shape out = *gs;
    for (int i = gs->ndim - 1; i >= 2; i--)
        out.dims[i] = gs->dims[i - 1];
    out.dims[1] = xs->dims[1];
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}
