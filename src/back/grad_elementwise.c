/* grad_elementwise.c: the gradient rules of the elementwise ops.
 *
 * Arithmetic (add, sub, mul, div, neg: forward kernels on dy, summed back
 * over broadcast dims), the unary ops and activations (amp_unary_backward),
 * maximum/minimum/atan2/fmod/remainder, where, addcmul/addcdiv, pow, dropout (the mask again) and
 * prelu (amp_prelu_backward: dx and the weight's sum).
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

#include <string.h>

/* add, sub, mul, div (tensor or number operands), neg */
void grad_arith(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    OpId id = f->op->id;
    const char *dy = dy_of(e, b);
    const Shape *so = ys_of(b);
    const char *n = numel_c(e, so);
    if (id == OP_NEG) {
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "neg", t), n, dy, grad_of(e, b, 0));
        return;
    }
    if (f->nin == 1) { /* one operand is a number */
        const char *g = grad_of(e, b, 0);
        bool first = f->scalar_first;
        if (id == OP_ADD || (id == OP_SUB && !first))
            grad_copy(e, g, dy, so);
        else if (id == OP_SUB)
            buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "neg", t), n, dy, g);
        else if (id == OP_MUL || (id == OP_DIV && !first))
            buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n",
                       kernel(e, id == OP_MUL ? "mul_scalar" : "div_scalar", t), n, dy, scalar_c(e, f), g);
        else { /* s / a: -dy * y / a */
            const char *tmp = scratch_buffer(e, b, t, 0);
            buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "mul", t), n, dy, y_of(e, b), tmp);
            buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "div", t), n, tmp, x_of(e, b, 0), tmp);
            buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "neg", t), n, tmp, g);
        }
        return;
    }
    for (int k = 0; k < 2; k++) {
        const char *g = grad_of(e, b, k);
        if (!g)
            continue;
        const Shape *sk = xs_of(b, k);
        if (id == OP_ADD || id == OP_SUB) {
            sum_to(e, t, dy, so, g, sk);
            if (id == OP_SUB && k == 1)
                buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "neg", t), numel_c(e, sk), g, g);
            continue;
        }
        /* the product with the other operand (mul), or the quotient rule (div) */
        const char *full = shape_equal(sk, so) ? g : scratch_buffer(e, b, t, 0);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        const char *ys[MAX_DIMS];
        contiguous_strides(e, so, ys);
        buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, ys, so->ndim));
        if (id == OP_MUL) {
            buf_printf(e->out, "        const int64_t other_stride[] = %s;\n", bcast_array(e, xs_of(b, 1 - k), so));
            buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, other_stride, %s);\n",
                       kernel(e, "mul_bcast", t), so->ndim, dy, x_of(e, b, 1 - k), full);
        } else if (k == 0) { /* d(a / b)/da = 1 / b */
            buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), so));
            buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, b_stride, %s);\n",
                       kernel(e, "div_bcast", t), so->ndim, dy, x_of(e, b, 1), full);
        } else { /* d(a / b)/db = -y / b */
            const char *tmp = scratch_buffer(e, b, t, 0);
            buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), so));
            buf_printf(e->out, "        %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "mul", t), n, dy, y_of(e, b), tmp);
            buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, b_stride, %s);\n",
                       kernel(e, "div_bcast", t), so->ndim, tmp, x_of(e, b, 1), tmp);
            buf_printf(e->out, "        %s((size_t)(%s), %s, %s);\n", kernel(e, "neg", t), n, tmp, tmp);
            full = tmp;
        }
        close_block(e);
        sum_to(e, t, full, so, g, sk);
    }
}

void grad_unary(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const char *n = numel_c(e, ys_of(b));
    OpId id = f->op->id;
    bool number_operand = (id == OP_POW || id == OP_FMOD || id == OP_REMAINDER) && !(f->in[0] && f->in[1]);
    if (strcmp(f->op->emit_rule, "emit_unary_param") == 0 || number_operand) {
        double p0, p1;
        const char *name = unary_params(f, &p0, &p1);
        int k = f->in[0] ? 0 : 1; /* pow(number, x): the tensor is the exponent */
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s, %s, %s);\n",
                   kernel(e, arena_printf(e->c->arena, "%s_backward", name), t), n, x_of(e, b, k), y_of(e, b),
                   dy_of(e, b), double_c(e, p0), double_c(e, p1), grad_of(e, b, k));
        return;
    }
    /* relu's gradient node does not keep x (autodiff.c): its kernel tests
     * x <= 0, which y <= 0 answers identically, so y stands in for x */
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s);\n",
               kernel(e, arena_printf(e->c->arena, "%s_backward", unary_kernel_name(f)), t), n,
               id == OP_RELU ? y_of(e, b) : x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
}

/* maximum, minimum, atan2, pow, fmod, remainder of two tensors: both
 * gradients over the output
 * shape, then summed down to each operand's. */
void grad_binary_kernel(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b);
    const char *da = scratch_buffer(e, b, t, 0), *db = scratch_buffer(e, b, t, 1);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, xs_of(b, 0), so));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), so));
    buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s, %s, %s);\n",
               kernel(e, arena_printf(e->c->arena, "%s_backward", f->op->name), t), so->ndim, x_of(e, b, 0),
               x_of(e, b, 1), dy_of(e, b), da, db);
    close_block(e);
    for (int k = 0; k < 2; k++)
        if (grad_of(e, b, k))
            sum_to(e, t, k ? db : da, so, grad_of(e, b, k), xs_of(b, k));
}

/* fmod, remainder: by a tensor, both gradients (grad_binary_kernel); by a
 * number, the unary rule (dx = dy). */
void grad_binary_or_number(Emitter *e, Node *b)
{
    if (b->fwd->in[1])
        grad_binary_kernel(e, b);
    else
        grad_unary(e, b);
}

/* glu: amp_glu_backward, the input's gradient in one call */
void grad_glu(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *outer, *len, *inner;
    axis_split(e, xs_of(b, 0), attr_int(f, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s);\n", kernel(e, "glu_backward", f->out->type.dtype), outer, len,
               inner, x_of(e, b, 0), dy_of(e, b), grad_of(e, b, 0));
}

/* lerp: each operand's gradient over the output shape (amp_lerp_backward,
 * NULL for those not wanted), then summed down to the operand's shape. */
void grad_lerp(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b);
    bool tensor_weight = f->in[2] != NULL;
    double w = tensor_weight ? 0 : attr_number(f, "weight", "0", compute_dtype(t));
    const char *full[3];
    for (int k = 0; k < 3; k++)
        full[k] = grad_of(e, b, k) ? scratch_buffer(e, b, t, k) : "NULL";
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    for (int k = 0; k < 3; k++) {
        Shape none = {0};
        buf_printf(e->out, "        const int64_t stride%d[] = %s;\n", k,
                   bcast_array(e, k < 2 || tensor_weight ? xs_of(b, k) : &none, so));
    }
    buf_printf(e->out, "        %s(%d, shape, %s, stride0, %s, stride1, %s, stride2, %s, %s, %s, %s, %s);\n",
               kernel(e, "lerp_backward", t), so->ndim, x_of(e, b, 0), x_of(e, b, 1),
               tensor_weight ? x_of(e, b, 2) : "NULL", double_c(e, w), dy_of(e, b), full[0], full[1], full[2]);
    close_block(e);
    for (int k = 0; k < 3; k++)
        if (grad_of(e, b, k))
            sum_to(e, t, full[k], so, grad_of(e, b, k), xs_of(b, k));
}

/* where(cond, a, b): dy where the condition picked the operand, else 0. */
void grad_where(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b);
    const char *tmp = scratch_buffer(e, b, t, 0);
    for (int k = 1; k <= 2; k++) {
        const char *g = grad_of(e, b, k);
        if (!g)
            continue;
        open_block(e);
        buf_printf(e->out, "        static const %s zero[1] = {%s};\n", dtype_c_type(t),
                   t == DT_BF16 || t == DT_F16 ? "{0}" : "0");
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        buf_printf(e->out, "        const int64_t cond_stride[] = %s;\n", bcast_array(e, xs_of(b, 0), so));
        const char *ys[MAX_DIMS], *zs[MAX_DIMS];
        contiguous_strides(e, so, ys);
        for (int i = 0; i < so->ndim; i++)
            zs[i] = "0";
        buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, ys, so->ndim));
        buf_printf(e->out, "        const int64_t zero_stride[] = %s;\n", c_array(e, zs, so->ndim));
        buf_printf(e->out, "        %s(%d, shape, %s, cond_stride, %s, %s, %s, %s, %s);\n", kernel(e, "where", t),
                   so->ndim, x_of(e, b, 0), k == 1 ? dy_of(e, b) : "zero", k == 1 ? "dy_stride" : "zero_stride",
                   k == 1 ? "zero" : dy_of(e, b), k == 1 ? "zero_stride" : "dy_stride", tmp);
        close_block(e);
        sum_to(e, t, tmp, so, g, xs_of(b, k));
    }
}

/* masked_fill: dinput = dy where the mask is false, summed down to
 * input's shape. */
void grad_masked_fill(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b);
    const char *g = grad_of(e, b, 0);
    const char *full = shape_equal(xs_of(b, 0), so) ? g : scratch_buffer(e, b, t, 0);
    const char *ys[MAX_DIMS], *zs[MAX_DIMS];
    contiguous_strides(e, so, ys);
    for (int i = 0; i < so->ndim; i++)
        zs[i] = "0";
    open_block(e);
    buf_printf(e->out, "        static const %s zero[1] = {%s};\n", dtype_c_type(t),
               t == DT_BF16 || t == DT_F16 ? "{0}" : "0");
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t mask_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), so));
    buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, ys, so->ndim));
    buf_printf(e->out, "        const int64_t zero_stride[] = %s;\n", c_array(e, zs, so->ndim));
    buf_printf(e->out, "        %s(%d, shape, %s, mask_stride, zero, zero_stride, %s, dy_stride, %s);\n",
               kernel(e, "where", t), so->ndim, x_of(e, b, 1), dy_of(e, b), full);
    close_block(e);
    sum_to(e, t, full, so, g, xs_of(b, 0));
}

/* triu, tril: dy through the same mask. */
void grad_tri(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *s = ys_of(b);
    const char *g = grad_of(e, b, 0);
    buf_printf(e->out, "    amp_tri(sizeof *%s, %s, %s, %s, %s, %d, %s, %s);\n", g, dims_product(e, s, 0, s->ndim - 2),
               poly_c(e, s->dims[s->ndim - 2]), poly_c(e, s->dims[s->ndim - 1]), i64_c(e, attr_int(f, "diagonal", 0)),
               f->op->id == OP_TRIU, dy_of(e, b), g);
}

/* addcmul: y = input + value t1 t2; addcdiv: y = input + value t1 / t2.
 * Each tensor operand's gradient is formed over the output shape in the
 * scratch, then summed down to the operand's shape. */
void grad_addc(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b);
    const char *dy = dy_of(e, b), *n = numel_c(e, so);
    double value = attr_number(f, "value", "1", compute_dtype(t));
    bool div = f->op->id == OP_ADDCDIV;
    if (grad_of(e, b, 0))
        sum_to(e, t, dy, so, grad_of(e, b, 0), xs_of(b, 0));
    const char *ys[MAX_DIMS];
    contiguous_strides(e, so, ys);
    for (int k = 1; k <= 2; k++) {
        const char *g = grad_of(e, b, k);
        if (!g)
            continue;
        const char *tmp = scratch_buffer(e, b, t, 0);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, ys, so->ndim));
        buf_printf(e->out, "        const int64_t t1_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), so));
        buf_printf(e->out, "        const int64_t t2_stride[] = %s;\n", bcast_array(e, xs_of(b, 2), so));
        double scale = value;
        if (!div) { /* value dy t_other */
            buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, %s, %s);\n", kernel(e, "mul_bcast", t), so->ndim,
                       dy, x_of(e, b, 3 - k), k == 1 ? "t2_stride" : "t1_stride", tmp);
        } else if (k == 1) { /* value dy / t2 */
            buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, t2_stride, %s);\n", kernel(e, "div_bcast", t),
                       so->ndim, dy, x_of(e, b, 2), tmp);
        } else { /* -value dy t1 / t2^2 */
            buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, t1_stride, %s);\n", kernel(e, "mul_bcast", t),
                       so->ndim, dy, x_of(e, b, 1), tmp);
            for (int r = 0; r < 2; r++)
                buf_printf(e->out, "        %s(%d, shape, %s, dy_stride, %s, t2_stride, %s);\n",
                           kernel(e, "div_bcast", t), so->ndim, tmp, x_of(e, b, 2), tmp);
            scale = -value;
        }
        if (scale != 1)
            buf_printf(e->out, "        %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "mul_scalar", t), n, tmp,
                       double_c(e, scale), tmp);
        close_block(e);
        sum_to(e, t, tmp, so, g, xs_of(b, k));
    }
}

/* pow: a tensor exponent has the binary rule, a number the unary one */
void grad_pow(Emitter *e, Node *b)
{
    if (b->fwd->in[0] && b->fwd->in[1])
        grad_binary_kernel(e, b);
    else
        grad_unary(e, b);
}

/* dropout: dx = dy * mask / (1 - p), the forward's kernel on dy, with the
 * mask regenerated from the same counter rather than stored (no arena
 * bytes, and Philox costs a few multiplies per element); the identity in
 * evaluation mode */
void grad_dropout(Emitter *e, Node *b)
{
    if (!emit_dropout_draw(e, b->fwd, dy_of(e, b), grad_of(e, b, 0)))
        grad_copy(e, grad_of(e, b, 0), dy_of(e, b), xs_of(b, 0));
}

/* prelu: x [outer, channels, inner] as emit_elementwise.c's emit_prelu. */
void grad_prelu(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *s = xs_of(b, 0), *sw = xs_of(b, 1);
    int64_t nw = 1;
    bool per_channel = sw->ndim == 1 && !(poly_is_const(sw->dims[0], &nw) && nw == 1);
    const char *outer = "1", *channels = "1", *inner = numel_c(e, s);
    if (s->ndim >= 2) {
        outer = poly_c(e, s->dims[0]);
        channels = poly_c(e, s->dims[1]);
        inner = dims_product(e, s, 2, s->ndim);
    }
    const char *dx = grad_of(e, b, 0), *dw = grad_of(e, b, 1);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "prelu_backward", f->out->type.dtype),
               outer, channels, inner, per_channel ? channels : "1", x_of(e, b, 0), x_of(e, b, 1), dy_of(e, b),
               dx ? dx : "NULL", dw ? dw : "NULL");
}
