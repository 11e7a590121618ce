/* emit_elementwise.c: the kernel calls of the elementwise ops.
 *
 * Unary math and activations (one amp_<op> kernel, or amp_unary with the
 * op's parameters), binary ops on two tensors (or a tensor and a number:
 * fmod, remainder), where, addcmul/addcdiv,
 * prelu, pow, and dropout (a mask drawn in the training step, the
 * identity otherwise).  Operands broadcast to the result's shape through
 * their strides.
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

const char *unary_kernel_name(Node *n)
{
    if (n->op->id == OP_GELU && strcmp(attr_str(n, "approximate", "none"), "tanh") == 0)
        return "gelu_tanh";
    return n->op->name;
}

void emit_unary(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, unary_kernel_name(n), t),
               numel_c(e, out_shape(n)), in_c(e, n, 0), y);
}

/* The kernel name and scalar parameters (y = f(x; p0, p1)) of softplus,
 * clamp, clamp_min, clamp_max, pow(x, number), relu6, hardtanh,
 * leaky_relu, elu, celu, and fmod and remainder by a number. */
const char *unary_params(Node *n, double *p0_out, double *p1_out)
{
    DType ct = compute_dtype(n->out->type.dtype);
    const char *name = n->op->name;
    double p0 = 0, p1 = 0;
    switch (n->op->id) {
    case OP_SOFTPLUS:
        p0 = attr_number(n, "beta", "1", ct);
        p1 = attr_number(n, "threshold", "20", ct);
        break;
    case OP_CLAMP: {
        p0 = attr_given(n, "min") ? attr_number(n, "min", "0", ct) : -INFINITY;
        p1 = attr_given(n, "max") ? attr_number(n, "max", "0", ct) : INFINITY;
        break;
    }
    case OP_POW: /* x ** number, or number ** x (the tensor in slot 1) */
        name = n->in[0] ? "pow_scalar" : "rpow_scalar";
        p0 = n->in[0] ? attr_number(n, "exponent", "1", ct) : attr_number(n, "input", "1", ct);
        break;
    case OP_RELU6: /* PyTorch's relu6 is hardtanh(x, 0, 6) */
        name = "hardtanh";
        p1 = 6;
        break;
    case OP_HARDTANH:
        p0 = attr_number(n, "min_val", "-1", ct);
        p1 = attr_number(n, "max_val", "1", ct);
        break;
    case OP_LEAKY_RELU:
        p0 = attr_number(n, "negative_slope", "0.01", ct);
        break;
    case OP_ELU:
        p0 = attr_number(n, "alpha", "1", ct);
        p1 = 1;
        break;
    case OP_CLAMP_MIN: /* clamp with one bound */
        name = "clamp";
        p0 = attr_number(n, "min", "0", ct);
        p1 = INFINITY;
        break;
    case OP_CLAMP_MAX:
        name = "clamp";
        p0 = -INFINITY;
        p1 = attr_number(n, "max", "0", ct);
        break;
    case OP_FMOD: /* a number divisor */
    case OP_REMAINDER:
        name = n->op->id == OP_FMOD ? "fmod_scalar" : "remainder_scalar";
        p0 = attr_number(n, "other", "1", ct);
        break;
    case OP_CELU: /* elu(x, alpha, scale=1, input_scale=1/alpha), 1/alpha in double as PyTorch */
        name = "elu";
        p0 = attr_number(n, "alpha", "1", ct);
        p1 = 1.0 / attr_number(n, "alpha", "1", DT_F64);
        if (ct == DT_F32)
            p1 = (float)p1; /* the parameters hold numbers of the compute type */
        break;
    default:
        ICE("no parameters known for %s", name);
    }
    *p0_out = p0;
    *p1_out = p1;
    return name;
}

void emit_unary_param(Emitter *e, Node *n, const char *y)
{
    double p0, p1;
    const char *name = unary_params(n, &p0, &p1);
    int k = n->in[0] ? 0 : 1; /* pow(number, x): the tensor is the exponent */
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s);\n", kernel(e, name, n->out->type.dtype),
               numel_c(e, out_shape(n)), in_c(e, n, k), double_c(e, p0), double_c(e, p1), y);
}

/* add, sub, mul and div: of two tensors of one shape, broadcast (strides
 * in elements, 0 along a broadcast dim), or of a tensor and a number
 * (Node.scalar; rsub and rdiv when the number comes first). */
void emit_arith(Emitter *e, Node *n, const char *y)
{
    Buf *o = e->out;
    DType t = n->out->type.dtype;
    const char *op = n->op->name;
    const char *count = numel_c(e, &n->out->type.shape);
    if (n->nin == 1) {
        const char *kname = op;
        if (n->scalar_first && n->op->id == OP_SUB)
            kname = "rsub";
        else if (n->scalar_first && n->op->id == OP_DIV)
            kname = "rdiv";
        buf_printf(o, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, arena_printf(e->c->arena, "%s_scalar", kname), t),
                   count, e->cname[n->in[0]->id], scalar_c(e, n), y);
        return;
    }
    const Shape *sa = &n->in[0]->type.shape, *sb = &n->in[1]->type.shape, *so = &n->out->type.shape;
    if (shape_equal(sa, so) && shape_equal(sb, so)) {
        buf_printf(o, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, op, t), count, e->cname[n->in[0]->id],
                   e->cname[n->in[1]->id], y);
        return;
    }
    Buf shape, st[2];
    buf_init(&shape, e->c->arena);
    const Shape *ins[2] = {sa, sb};
    for (int k = 0; k < 2; k++)
        buf_init(&st[k], e->c->arena);
    for (int i = 0; i < so->ndim; i++) {
        buf_printf(&shape, "%s%s", i ? ", " : "", poly_c(e, so->dims[i]));
        for (int k = 0; k < 2; k++) {
            const Shape *s = ins[k];
            int j = s->ndim - so->ndim + i;
            int64_t one;
            const char *stride = "0";
            if (j >= 0 && !(poly_is_const(s->dims[j], &one) && one == 1))
                stride = dims_product(e, s, j + 1, s->ndim);
            buf_printf(&st[k], "%s%s", i ? ", " : "", stride);
        }
    }
    buf_printf(o, "    {\n        const int64_t shape[] = {%s};\n", shape.data);
    buf_printf(o, "        const int64_t a_stride[] = {%s};\n", st[0].data);
    buf_printf(o, "        const int64_t b_stride[] = {%s};\n", st[1].data);
    buf_printf(o, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s);\n    }\n",
               kernel(e, arena_printf(e->c->arena, "%s_bcast", op), t), so->ndim, e->cname[n->in[0]->id],
               e->cname[n->in[1]->id], y);
}

/* maximum, minimum, atan2, pow, fmod, remainder of two tensors: same
 * shape, or broadcast. */
void emit_binary_tensors(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *so = out_shape(n);
    if (shape_equal(in_shape(n, 0), so) && shape_equal(in_shape(n, 1), so)) {
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, n->op->name, t), numel_c(e, so),
                   in_c(e, n, 0), in_c(e, n, 1), y);
        return;
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, in_shape(n, 0), so));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, in_shape(n, 1), so));
    buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s);\n",
               kernel(e, arena_printf(e->c->arena, "%s_bcast", n->op->name), t), so->ndim, in_c(e, n, 0),
               in_c(e, n, 1), y);
    close_block(e);
}

/* A sum of two gradients taken on through the relu whose result is the
 * third operand (fuse.c): the sum rounded as add rounds it, then masked as
 * relu_backward masks. */
void emit_add_relu_backward(Emitter *e, Node *n, const char *y)
{
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s);\n", kernel(e, "add_relu_backward", n->out->type.dtype),
               numel_c(e, out_shape(n)), in_c(e, n, 2), in_c(e, n, 0), in_c(e, n, 1), y);
}

/* A number operand of where(): a one-element array read with stride 0. */
static const char *number_operand(Emitter *e, Node *n, const char *param, DType t, const char *local)
{
    double v = attr_number(n, param, "0", t == DT_F64 ? DT_F64 : t);
    const char *init;
    switch (t) {
    case DT_BF16: init = arena_printf(e->c->arena, "{0x%04x}", half_bits(v, DT_BF16)); break;
    case DT_F16: init = arena_printf(e->c->arena, "{0x%04x}", half_bits(v, DT_F16)); break;
    default: init = double_c(e, v); break;
    }
    /* double_c comments a value it writes in hex itself; a half's bits get
     * the value beside them */
    buf_printf(e->out, "        static const %s %s[1] = {%s};%s\n", dtype_c_type(t), local, init,
               t == DT_BF16 || t == DT_F16 ? arena_printf(e->c->arena, " /* %.9g */", v) : "");
    return local;
}

void emit_where(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *so = out_shape(n);
    Shape scalar = {0};
    open_block(e);
    const char *a = n->in[1] ? in_c(e, n, 1) : number_operand(e, n, "input", t, "a_number");
    const char *b = n->in[2] ? in_c(e, n, 2) : number_operand(e, n, "other", t, "b_number");
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t cond_stride[] = %s;\n", bcast_array(e, in_shape(n, 0), so));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, n->in[1] ? in_shape(n, 1) : &scalar, so));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, n->in[2] ? in_shape(n, 2) : &scalar, so));
    buf_printf(e->out, "        %s(%d, shape, %s, cond_stride, %s, a_stride, %s, b_stride, %s);\n", kernel(e, "where", t),
               so->ndim, in_c(e, n, 0), a, b, y);
    close_block(e);
}

/* masked_fill: where(mask, value, input) over the broadcast shape. */
void emit_masked_fill(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *so = out_shape(n);
    Shape scalar = {0};
    open_block(e);
    const char *v = number_operand(e, n, "value", t, "value");
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t mask_stride[] = %s;\n", bcast_array(e, in_shape(n, 1), so));
    buf_printf(e->out, "        const int64_t value_stride[] = %s;\n", bcast_array(e, &scalar, so));
    buf_printf(e->out, "        const int64_t x_stride[] = %s;\n", bcast_array(e, in_shape(n, 0), so));
    buf_printf(e->out, "        %s(%d, shape, %s, mask_stride, %s, value_stride, %s, x_stride, %s);\n",
               kernel(e, "where", t), so->ndim, in_c(e, n, 1), v, in_c(e, n, 0), y);
    close_block(e);
}

/* triu, tril: the matrices of the last two dims, the other side zeroed. */
void emit_tri(Emitter *e, Node *n, const char *y)
{
    const Shape *s = out_shape(n);
    buf_printf(e->out, "    amp_tri(sizeof *%s, %s, %s, %s, %s, %d, %s, %s);\n", y, dims_product(e, s, 0, s->ndim - 2),
               poly_c(e, s->dims[s->ndim - 2]), poly_c(e, s->dims[s->ndim - 1]), i64_c(e, attr_int(n, "diagonal", 0)),
               n->op->id == OP_TRIU, in_c(e, n, 0), y);
}

void emit_addc(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *so = out_shape(n);
    double value = attr_number(n, "value", "1", compute_dtype(t));
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    for (int k = 0; k < 3; k++)
        buf_printf(e->out, "        const int64_t stride%d[] = %s;\n", k, bcast_array(e, in_shape(n, k), so));
    buf_printf(e->out, "        %s(%d, shape, %s, stride0, %s, stride1, %s, stride2, %s, %s);\n",
               kernel(e, n->op->name, t), so->ndim, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2), double_c(e, value), y);
    close_block(e);
}

bool emit_dropout_draw(Emitter *e, Node *f, const char *x, const char *y)
{
    if (!in_train_step(e) || !dropout_draws(f))
        return false;
    if (!is_kernel_float(f->out->type.dtype)) {
        unsupported(e, f, arena_printf(e->c->arena, "training mode scales by 1 / (1 - p), which %s tensors cannot "
                                                   "hold (PyTorch refuses it too)", dtype_name(f->out->type.dtype)));
        return true;
    }
    /* the stream: this dropout's rank among the graph's random ops, the
     * same in the model and in its f64 reference (casts are not counted),
     * and for the forward and its gradient */
    int stream = 0;
    for (int i = 0; i < e->g->nodes->len; i++) {
        Node *m = VEC_AT(e->g->nodes, i);
        if (m == f)
            break;
        stream += dropout_draws(m);
    }
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, (uint64_t)s->rng_seed, %d, (uint64_t)s->rng_offset, %s);\n",
               kernel(e, "dropout", f->out->type.dtype), numel_c(e, &f->out->type.shape), x,
               double_c(e, attr_number(f, "p", "0.5", DT_F64)), stream, y);
    return true;
}

void emit_prelu(Emitter *e, Node *n, const char *y)
{
    const Shape *s = in_shape(n, 0), *sw = in_shape(n, 1);
    int64_t nw = 1;
    bool per_channel = sw->ndim == 1 && !(poly_is_const(sw->dims[0], &nw) && nw == 1);
    const char *outer = "1", *channels = "1", *inner = numel_c(e, s);
    if (s->ndim >= 2) {
        outer = poly_c(e, s->dims[0]);
        channels = poly_c(e, s->dims[1]);
        inner = dims_product(e, s, 2, s->ndim);
    }
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "prelu", n->out->type.dtype), outer, channels,
               inner, per_channel ? channels : "1", in_c(e, n, 0), in_c(e, n, 1), y);
}

/* pow: two tensors take the binary kernel, a number base or exponent the
 * unary one (rpow_scalar, pow_scalar) */
void emit_pow(Emitter *e, Node *n, const char *y)
{
    if (n->in[0] && n->in[1])
        emit_binary_tensors(e, n, y);
    else
        emit_unary_param(e, n, y);
}

/* fmod, remainder: a tensor divisor takes the binary kernel, a number the
 * unary one */
void emit_binary_or_number(Emitter *e, Node *n, const char *y)
{
    if (n->in[1])
        emit_binary_tensors(e, n, y);
    else
        emit_unary_param(e, n, y);
}

/* glu along dim: (outer, the whole dim, inner) of the input */
void emit_glu(Emitter *e, Node *n, const char *y)
{
    const char *outer, *len, *inner;
    axis_split(e, in_shape(n, 0), attr_int(n, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "glu", n->out->type.dtype), outer, len, inner,
               in_c(e, n, 0), y);
}

/* lerp: the operands broadcast through their strides; a number weight
 * as the kernel's scalar, rounded to the compute type (PyTorch's opmath) */
void emit_lerp(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *so = out_shape(n);
    bool tensor_weight = n->in[2] != NULL;
    double w = tensor_weight ? 0 : attr_number(n, "weight", "0", compute_dtype(t));
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    for (int k = 0; k < 3; k++) {
        Shape none = {0};
        buf_printf(e->out, "        const int64_t stride%d[] = %s;\n", k,
                   bcast_array(e, k < 2 || tensor_weight ? in_shape(n, k) : &none, so));
    }
    buf_printf(e->out, "        %s(%d, shape, %s, stride0, %s, stride1, %s, stride2, %s, %s);\n", kernel(e, "lerp", t),
               so->ndim, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2), double_c(e, w), y);
    close_block(e);
}

/* dropout: training mode draws a mask; evaluation mode is the identity.
 * An explicit training=true in a model without a train section is refused,
 * as batch_norm's is: the model would compute something else than asked;
 * left at its default, dropout is the inference forward's identity. */
void emit_dropout(Emitter *e, Node *n, const char *y)
{
    if (!e->c->train && attr_given(n, "training") && dropout_draws(n)) {
        unsupported(e, n, "training=true draws a random mask and scales by 1 / (1 - p), which a model without a "
                          "train section does not do; pass training=false");
        return;
    }
    if (!emit_dropout_draw(e, n, in_c(e, n, 0), y))
        emit_copy(e, n, y);
}
