/* emit_grad.c: the kernel calls of autodiff's GRAD nodes.
 *
 * Requires: a planned graph whose GRAD nodes carry their forward node
 * (fwd), the gradient dy of its result (in[0]), its inputs (in[1..6]) and
 * result (in[7]), and one result per input that needs a gradient
 * (grad_input says which).  Produces: C computing those gradients in the
 * forward's dtype, from forward kernels where the gradient is one (a
 * linear's gradients are two gemms and a sum, a conv's input gradient a
 * transposed conv, a sum's an expand) and from amprt/backward.h otherwise.
 *
 * Shapes: a gradient has its input's shape; where the forward broadcast
 * an operand, its gradient is summed back over the broadcast dims
 * (sum_to), as autograd does.
 */
#include "emit.h"

#include <string.h>

/* ---- the pieces of a GRAD node ----------------------------------------------- */

/* The gradient of forward input k, or NULL when it needs none. */
const char *grad_of(Emitter *e, Node *b, int k)
{
    for (int r = 0; r <= b->nmore; r++)
        if (b->grad_input[r] == k)
            return e->cname[(r == 0 ? b->out : b->more_out[r - 1])->id];
    return NULL;
}

/* The value grad_of names, or NULL. */
static const Value *grad_value(Node *b, int k)
{
    for (int r = 0; r <= b->nmore; r++)
        if (b->grad_input[r] == k)
            return r == 0 ? b->out : b->more_out[r - 1];
    return NULL;
}

/* "NULL" when no gradient reaches the first result (only the ops whose
 * rules take one, autodiff.c's more_result_differentiable, get there) */
const char *dy_of(Emitter *e, Node *b) { return b->in[0] ? e->cname[b->in[0]->id] : "NULL"; }
const char *x_of(Emitter *e, Node *b, int k) { return b->fwd->in[k] ? e->cname[b->fwd->in[k]->id] : "NULL"; }
const char *y_of(Emitter *e, Node *b) { return e->cname[b->fwd->out->id]; }
const Shape *xs_of(Node *b, int k) { return &b->fwd->in[k]->type.shape; }
const Shape *ys_of(Node *b) { return &b->fwd->out->type.shape; }

void grad_copy(Emitter *e, const char *dst, const char *src, const Shape *s)
{
    buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", dst, src, numel_c(e, s), dst);
}

/* dst (shape `to`) = src (shape `from`, which `to` broadcasts to) summed
 * over the broadcast dims. */
void sum_to(Emitter *e, DType t, const char *src, const Shape *from, const char *dst, const Shape *to)
{
    if (shape_equal(from, to)) {
        if (strcmp(src, dst) != 0)
            grad_copy(e, dst, src, to);
        return;
    }
    const char *items[MAX_DIMS];
    int nd = from->ndim;
    for (int i = 0; i < nd; i++) {
        int j = to->ndim - nd + i;
        int64_t one;
        bool reduced = j < 0 || (poly_is_const(to->dims[j], &one) && one == 1 &&
                                 !(poly_is_const(from->dims[i], &one) && one == 1));
        items[i] = reduced ? "1" : "0";
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, from));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s);\n", kernel(e, "sum", t), nd, src, dst);
    close_block(e);
}

/* A buffer of the forward output's shape, in dtype t, from the scratch
 * (scratch.c's op_scratch_type reserves as many as the rule uses). */
const char *scratch_buffer(Emitter *e, Node *b, DType t, int index)
{
    return arena_printf(e->c->arena, "((%s *)(void *)%s + %d * (%s))", dtype_c_type(t), e->cname[b->scratch->id], index,
                        numel_c(e, ys_of(b)));
}

/* ---- one emitter per kind of op ------------------------------------------------ */

static void grad_seed(Emitter *e, Node *b)
{
    DType t = b->out->type.dtype;
    const char *y = e->cname[b->out->id];
    switch (t) {
    case DT_F64: buf_printf(e->out, "    %s[0] = grad_seed;\n", y); break;
    case DT_F32: buf_printf(e->out, "    %s[0] = (float)grad_seed;\n", y); break;
    default: buf_printf(e->out, "    %s[0] = amp_f32_to_%s((float)grad_seed);\n", y, dtype_name(t)); break;
    }
}

/* add, sub, mul, div (tensor or number operands), neg */
static void grad_arith(Emitter *e, Node *b)
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

static void grad_unary(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const char *n = numel_c(e, ys_of(b));
    OpId id = f->op->id;
    if (id == OP_SOFTPLUS || id == OP_CLAMP || (id == OP_POW && !f->in[1])) {
        double p0, p1;
        const char *name = unary_params(f, &p0, &p1);
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s, %s, %s);\n",
                   kernel(e, arena_printf(e->c->arena, "%s_backward", name), t), n, x_of(e, b, 0), y_of(e, b),
                   dy_of(e, b), double_c(e, p0), double_c(e, p1), grad_of(e, b, 0));
        return;
    }
    /* relu's gradient node does not keep x (autodiff.c): its kernel tests
     * x <= 0, which y <= 0 answers identically, so y stands in for x */
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s);\n",
               kernel(e, arena_printf(e->c->arena, "%s_backward", unary_kernel_name(f)), t), n,
               id == OP_RELU ? y_of(e, b) : x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
}

/* maximum, atan2, pow of two tensors: both gradients over the output
 * shape, then summed down to each operand's. */
static void grad_binary_kernel(Emitter *e, Node *b)
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

/* where(cond, a, b): dy where the condition picked the operand, else 0. */
static void grad_where(Emitter *e, Node *b)
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

/* A gemm call from C text: y = op(A) op(B), strides in elements. */
void gemm(Emitter *e, DType t, const char *batch, const char *M, const char *N, const char *K, const char *A,
                 const char *a0, const char *a1, const char *a2, const char *B, const char *b0, const char *b1,
                 const char *b2, bool sum_batch, const char *y)
{
    Gemm g = {.batch = batch, .M = M, .N = N, .K = K, .A = A, .B = B, .alpha = 1, .beta = 0, .sum_batch = sum_batch};
    g.a[0] = a0, g.a[1] = a1, g.a[2] = a2;
    g.b[0] = b0, g.b[1] = b1, g.b[2] = b2;
    emit_gemm_call(e, t, &g, y);
}

const char *mul_c(Emitter *e, const char *a, const char *b)
{
    return arena_printf(e->c->arena, "(%s) * (%s)", a, b);
}

/* linear: y [M, N] = x [M, K] w^T + b. */
static void grad_linear(Emitter *e, Node *b)
{
    DType t = b->fwd->out->type.dtype;
    const Shape *sx = xs_of(b, 0), *sw = xs_of(b, 1);
    const char *M = dims_product(e, sx, 0, sx->ndim - 1), *N = poly_c(e, sw->dims[0]), *K = poly_c(e, sw->dims[1]);
    const char *dy = dy_of(e, b);
    if (grad_of(e, b, 0) && b->relu_grad) {
        /* fuse.c: dx through the relu that made x, in the product's epilogue
         * (into the relu gradient's buffer: its node is absorbed) */
        Gemm g = {.batch = "1", .M = M, .N = K, .K = N, .A = dy, .B = x_of(e, b, 1), .alpha = 1, .beta = 0,
                  .relu_y = x_of(e, b, 0)};
        g.a[0] = "0", g.a[1] = N, g.a[2] = "1";
        g.b[0] = "0", g.b[1] = K, g.b[2] = "1";
        emit_gemm_call(e, t, &g, grad_of(e, b, 0));
    } else if (grad_of(e, b, 0)) { /* dx [M, K] = dy [M, N] w [N, K] */
        gemm(e, t, "1", M, K, N, dy, "0", N, "1", x_of(e, b, 1), "0", K, "1", false, grad_of(e, b, 0));
    }
    if (grad_of(e, b, 1)) /* dw [N, K] = dy^T [N, M] x [M, K] */
        gemm(e, t, "1", N, K, M, dy, "0", "1", N, x_of(e, b, 0), "0", K, "1", false, grad_of(e, b, 1));
    if (grad_of(e, b, 2)) { /* db [N] = the rows of dy summed */
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = {%s, %s};\n        const uint8_t reduce[] = {1, 0};\n", M, N);
        buf_printf(e->out, "        %s(2, shape, reduce, %s, %s);\n", kernel(e, "sum", t), dy, grad_of(e, b, 2));
        close_block(e);
    }
}

/* matmul, mm, bmm: y [batch, M, N] = a [batch?, M, K] b [batch?, K, N]
 * (addmm and the other products with an added input: grad_gemm). */
static void grad_matmul(Emitter *e, Node *bn)
{
    Node *f = bn->fwd;
    DType t = f->out->type.dtype;
    int ka = 0, kb = 1;
    const Shape *sa = xs_of(bn, ka), *sb = xs_of(bn, kb);
    if (sa->ndim > 3 || sb->ndim > 3 || (sa->ndim == 3 && sb->ndim == 3 && !shape_equal(sa, sb) &&
                                         !poly_equal(sa->dims[0], sb->dims[0]))) {
        unsupported(e, f, "the gradient of a matmul with more than one batch dim or broadcast batches is not supported yet");
        return;
    }
    const char *M = sa->ndim >= 2 ? poly_c(e, sa->dims[sa->ndim - 2]) : "1";
    const char *K = poly_c(e, sa->dims[sa->ndim - 1]);
    const char *N = sb->ndim >= 2 ? poly_c(e, sb->dims[sb->ndim - 1]) : "1";
    bool abatch = sa->ndim == 3, bbatch = sb->ndim == 3;
    const char *batch = abatch ? poly_c(e, sa->dims[0]) : bbatch ? poly_c(e, sb->dims[0]) : "1";
    const char *as = abatch ? mul_c(e, M, K) : "0", *bs = bbatch ? mul_c(e, K, N) : "0";
    const char *ys = abatch || bbatch ? mul_c(e, M, N) : "0";
    const char *dy = dy_of(e, bn);
    /* da [M, K] = dy [M, N] b^T: b^T[n][k] = b[k N + n]; summed over the batch if a is shared */
    if (grad_of(e, bn, ka))
        gemm(e, t, batch, M, K, N, dy, ys, N, "1", x_of(e, bn, kb), bs, "1", N, !abatch && bbatch, grad_of(e, bn, ka));
    /* db [K, N] = a^T dy: a^T[k][m] = a[m K + k] */
    if (grad_of(e, bn, kb))
        gemm(e, t, batch, K, N, M, x_of(e, bn, ka), as, "1", K, dy, ys, N, "1", !bbatch && abatch, grad_of(e, bn, kb));
}

static void grad_softmax(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *s = xs_of(b, 0);
    int64_t d = attr_int(f, "axis", 0);
    const char *outer, *len, *inner;
    axis_split(e, s, d, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s);\n",
               kernel(e, f->op->id == OP_SOFTMAX ? "softmax_backward" : "log_softmax_backward", f->out->type.dtype),
               outer, len, inner, y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
}

static void grad_class_loss(Emitter *e, Node *b)
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
        else if (b->with_forward)
            /* fuse.c: the loss itself in the same call (its status checked as the forward's) */
            emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                                                 kernel(e, "cross_entropy_with_grad", t), N, C, inner, x_of(e, b, 0),
                                                 x_of(e, b, 1), x_of(e, b, 2), i64_c(e, ignore),
                                                 double_c(e, smoothing), reduction_enum[reduction], dy_of(e, b),
                                                 y_of(e, b), grad_of(e, b, 0)));
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

static void grad_pointwise_loss(Emitter *e, Node *b)
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
        buf_puts(e->out, "        amp_conv_desc dt = d;\n");
        buf_puts(e->out, "        dt.in_channels = d.out_channels;\n        dt.out_channels = d.in_channels;\n");
        for (int i = 0; transposed && i < 3; i++)
            buf_printf(e->out, "        dt.output_padding[%d] = 0;\n", i);
        for (int i = 0; i < ns; i++)
            buf_printf(e->out, "        dt.in_size[%d] = d.out_size[%d];\n        dt.out_size[%d] = d.in_size[%d];\n", i,
                       i, i, i);
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

static void grad_pool(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    OpId id = f->op->id;
    int ns = spatial_dims_of(id);
    if (id == OP_ADAPTIVE_AVG_POOL2D || id == OP_ADAPTIVE_AVG_POOL3D) {
        open_block(e);
        buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, xs_of(b, 0), ns));
        buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, ys_of(b), ns));
        buf_printf(e->out, "        %s(%d, %s, in_size, out_size, %s, %s);\n", kernel(e, "adaptive_avg_pool_backward", t),
                   ns, planes_of(e, xs_of(b, 0), ns), dy_of(e, b), grad_of(e, b, 0));
        close_block(e);
        return;
    }
    emit_pool_desc(e, f);
    if (id == OP_MAX_POOL2D || id == OP_MAX_POOL3D)
        /* fuse.c: with relu_grad, on through the relu whose output x is
         * (into the relu gradient's buffer: its node is absorbed) */
        buf_printf(e->out, "        %s(&d, %s, %s, %s);\n",
                   kernel(e, b->relu_grad ? "max_pool_relu_backward" : "max_pool_backward", t), x_of(e, b, 0),
                   dy_of(e, b), grad_of(e, b, 0));
    else
        buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "avg_pool_backward", t), dy_of(e, b), grad_of(e, b, 0));
    close_block(e);
}

static const char *param_dtype_of(Node *f, int first, int last)
{
    for (int k = first; k <= last; k++)
        if (f->in[k])
            return dtype_amp_enum(f->in[k]->type.dtype);
    return dtype_amp_enum(f->out->type.dtype);
}

static void grad_norm(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int nd = s->ndim;
    double eps = attr_number(f, "eps", "1e-05", DT_F64);
    const char *dx = grad_of(e, b, 0) ? grad_of(e, b, 0) : scratch_buffer(e, b, t, 0);
    const char *g = grad_of(e, b, f->op->id == OP_BATCH_NORM ? 3 : 2);
    const char *gb = grad_of(e, b, f->op->id == OP_BATCH_NORM ? 4 : 3);
    switch (f->op->id) {
    case OP_LAYER_NORM:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "layer_norm_backward", t),
                   dims_product(e, s, 0, nd - 1), poly_c(e, s->dims[nd - 1]), x_of(e, b, 0), param_dtype_of(f, 2, 3),
                   x_of(e, b, 2), double_c(e, eps), dy_of(e, b), dx, g ? g : "NULL", gb ? gb : "NULL");
        break;
    case OP_GROUP_NORM:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "group_norm_backward", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd),
                   i64_c(e, attr_int(f, "num_groups", 1)), x_of(e, b, 0), param_dtype_of(f, 2, 3),
                   x_of(e, b, 2), double_c(e, eps), dy_of(e, b), dx, g ? g : "NULL", gb ? gb : "NULL");
        break;
    default: /* batch_norm */
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %d, %s, %s, %s, %s, %s);\n",
                   kernel(e, "batch_norm_backward", t), poly_c(e, s->dims[0]), poly_c(e, s->dims[1]),
                   dims_product(e, s, 2, nd), x_of(e, b, 0), param_dtype_of(f, 1, 4), x_of(e, b, 1), x_of(e, b, 2),
                   x_of(e, b, 3), attr_bool(f, "training", false), double_c(e, eps), dy_of(e, b), dx,
                   g ? g : "NULL", gb ? gb : "NULL");
        break;
    }
}

static void grad_embedding(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sw = xs_of(b, 1);
    int64_t padding_idx = -1;
    if (attr_given(f, "padding_idx")) {
        padding_idx = attr_int(f, "padding_idx", -1);
        int64_t rows;
        if (padding_idx < 0 && poly_is_const(sw->dims[0], &rows))
            padding_idx += rows;
    }
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "embedding_backward", f->out->type.dtype),
               numel_c(e, xs_of(b, 0)), poly_c(e, sw->dims[0]), poly_c(e, sw->dims[1]), x_of(e, b, 0),
               i64_c(e, padding_idx), dy_of(e, b), grad_of(e, b, 1));
}

/* The element strides of dy, read as a tensor of x's dims, for permute and
 * transpose: dx[..i_d..] = dy[..i_perm[j]..]. */
static void grad_permute(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sx = xs_of(b, 0), *so = ys_of(b);
    int nd = sx->ndim;
    int perm[MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    if (f->op->id == OP_TRANSPOSE) {
        int64_t a = attr_int(f, "dim0", 0), c = attr_int(f, "dim1", 0);
        if (nd) {
            a = a < 0 ? a + nd : a;
            c = c < 0 ? c + nd : c;
            perm[a] = (int)c;
            perm[c] = (int)a;
        }
    } else {
        int64_t dims[MAX_DIMS * 2];
        int k = attr_int_list(f, "dims", dims);
        for (int i = 0; i < k && i < nd; i++)
            perm[i] = (int)(dims[i] < 0 ? dims[i] + nd : dims[i]);
    }
    const char *ys[MAX_DIMS], *rd[MAX_DIMS], *xs[MAX_DIMS];
    contiguous_strides(e, so, ys);
    for (int j = 0; j < nd; j++)
        rd[perm[j]] = ys[j];
    contiguous_strides(e, sx, xs);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, rd, nd));
    buf_printf(e->out, "        const int64_t dx_stride[] = %s;\n", c_array(e, xs, nd));
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s, dy_stride, %s, dx_stride);\n",
               grad_of(e, b, 0), nd, dy_of(e, b), grad_of(e, b, 0));
    close_block(e);
}

void zero_fill(Emitter *e, DType t, const char *dst, const Shape *s)
{
    buf_printf(e->out, "    %s((size_t)(%s), 0.0, %s);\n", kernel(e, "fill", t), numel_c(e, s), dst);
}

/* narrow, slice: dx is zero but for the slice, which is dy. */
static void grad_slice(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0), *so = ys_of(b);
    const char *g = grad_of(e, b, 0);
    zero_fill(e, t, g, sx);
    const char *xs[MAX_DIMS], *ys[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    contiguous_strides(e, so, ys);
    int d = (int)attr_int(f, "axis", 0);
    const char *offset = arena_printf(e->c->arena, "%s * (%s)", i64_c(e, attr_int(f, "axis_start", 0)), xs[d]);
    if (attr_int(f, "axis_step", 0) != 1)
        xs[d] = arena_printf(e->c->arena, "%s * (%s)", i64_c(e, attr_int(f, "axis_step", 0)), xs[d]);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, ys, so->ndim));
    buf_printf(e->out, "        const int64_t dx_stride[] = %s;\n", c_array(e, xs, so->ndim));
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s, dy_stride, %s + %s, dx_stride);\n", g,
               so->ndim, dy_of(e, b), g, offset);
    close_block(e);
}

/* cat, stack: each input's gradient is its part of dy. */
static void grad_cat(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *so = ys_of(b);
    bool stack = f->op->id == OP_STACK;
    int nd = so->ndim;
    int64_t dim = attr_int(f, "dim", 0);
    if (dim < 0)
        dim += nd;
    const char *ys[MAX_DIMS];
    contiguous_strides(e, so, ys);
    Poly *offset = poly_const(e->c, 0);
    for (int k = 0; k < f->nin && k < 6; k++) {
        if (!f->in[k])
            continue;
        Shape part = *so;
        part.dims[dim] = stack ? poly_const(e->c, 1) : xs_of(b, k)->dims[dim];
        const char *g = grad_of(e, b, k);
        if (g) {
            const char *xs[MAX_DIMS];
            contiguous_strides(e, &part, xs);
            open_block(e);
            buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &part));
            buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, ys, nd));
            buf_printf(e->out, "        const int64_t dx_stride[] = %s;\n", c_array(e, xs, nd));
            buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s + (%s) * (%s), dy_stride, %s, dx_stride);\n",
                       g, nd, dy_of(e, b), poly_c(e, offset), ys[dim], g);
            close_block(e);
        }
        offset = poly_add(e->c, offset, part.dims[dim]);
    }
}

/* sum and mean: dy spread back over the reduced dims (and divided by
 * their size for mean). */
static void grad_reduce(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0);
    int nd = sx->ndim;
    int64_t dim = attr_int(f, "axis", 0);
    const char *xs[MAX_DIMS], *st[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    /* dy's layout: x's dims without the reduced ones */
    Shape kept = {0};
    for (int i = 0; i < nd; i++)
        if (!(dim < 0 || dim == i))
            kept.dims[kept.ndim++] = sx->dims[i];
    const char *ks[MAX_DIMS];
    contiguous_strides(e, &kept, ks);
    Shape reduced = {0};
    for (int i = 0, j = 0; i < nd; i++) {
        if (dim < 0 || dim == i) {
            st[i] = "0";
            reduced.dims[reduced.ndim++] = sx->dims[i];
        } else {
            st[i] = ks[j++];
        }
    }
    const char *g = grad_of(e, b, 0);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const int64_t dy_stride[] = %s;\n", c_array(e, st, nd));
    buf_printf(e->out, "        const int64_t dx_stride[] = %s;\n", c_array(e, xs, nd));
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s, dy_stride, %s, dx_stride);\n", g, nd,
               dy_of(e, b), g);
    close_block(e);
    if (f->op->id == OP_MEAN)
        buf_printf(e->out, "    %s((size_t)(%s), %s, 1.0 / (double)(%s), %s);\n", kernel(e, "mul_scalar", t),
                   numel_c(e, sx), g, numel_c(e, &reduced), g);
}

static void grad_sdpa(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    if (f->in[3]) {
        unsupported(e, f, "the gradient of scaled_dot_product_attention with an attn_mask is not supported yet");
        return;
    }
    const Shape *sq = xs_of(b, 0), *sk = xs_of(b, 1), *sv = xs_of(b, 2);
    int nq = sq->ndim;
    /* the same batch dims for q, k and v (L may differ from S, Ev from E) */
    bool same_batch = sk->ndim == nq && sv->ndim == nq;
    for (int i = 0; same_batch && i < nq - 2; i++)
        same_batch = poly_equal(sq->dims[i], sk->dims[i]) && poly_equal(sq->dims[i], sv->dims[i]);
    if (!same_batch) {
        unsupported(e, f, "the gradient of attention with differently batched q, k, v is not supported yet");
        return;
    }
    open_block(e);
    buf_printf(e->out, "        amp_sdpa_desc d = {0};\n");
    buf_printf(e->out, "        d.batch = %s;\n        d.L = %s;\n        d.S = %s;\n        d.E = %s;\n        d.Ev = %s;\n",
               dims_product(e, sq, 0, nq - 2), poly_c(e, sq->dims[nq - 2]), poly_c(e, sk->dims[nq - 2]),
               poly_c(e, sq->dims[nq - 1]), poly_c(e, sv->dims[nq - 1]));
    buf_printf(e->out, "        d.q_batch_stride = %s;\n        d.k_batch_stride = %s;\n        d.v_batch_stride = %s;\n",
               dims_product(e, sq, nq - 2, nq), dims_product(e, sk, nq - 2, nq), dims_product(e, sv, nq - 2, nq));
    if (attr_given(f, "scale"))
        buf_printf(e->out, "        d.scale = %s;\n", double_c(e, attr_number(f, "scale", "1", DT_F64)));
    else
        buf_puts(e->out, "        d.scale = 1.0 / sqrt((double)d.E);\n");
    buf_printf(e->out, "        d.is_causal = %d;\n", attr_bool(f, "is_causal", false));
    /* the kernel writes all three; those not needed go to scratch */
    const char *dq = grad_of(e, b, 0), *dk = grad_of(e, b, 1), *dv = grad_of(e, b, 2);
    if (!dq || !dk || !dv) {
        unsupported(e, f, "the gradient of attention needs all of q, k and v to need gradients");
        close_block(e);
        return;
    }
    buf_printf(e->out, "        %s(&d, %s, %s, %s, NULL, NULL, %s, %s, %s, %s);\n", kernel(e, "sdpa_backward", t),
               x_of(e, b, 0), x_of(e, b, 1), x_of(e, b, 2), dy_of(e, b), dq, dk, dv);
    close_block(e);
}

/* upsample: the adjoint of the forward's interpolation (the same
 * descriptor as emit_ops.c's). */
static void grad_upsample(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    OpId id = f->op->id;
    int ns = spatial_dims_of(id);
    const Shape *sx = xs_of(b, 0), *so = ys_of(b);
    bool nearest = id == OP_UPSAMPLE_NEAREST1D || id == OP_UPSAMPLE_NEAREST2D || id == OP_UPSAMPLE_NEAREST3D;
    const char *mode = nearest ? "AMP_UPSAMPLE_NEAREST" : id == OP_UPSAMPLE_BICUBIC2D ? "AMP_UPSAMPLE_CUBIC"
                                                                                       : "AMP_UPSAMPLE_LINEAR";
    double scale = 0;
    if (attr_given(f, "scale_factors"))
        scale = attr_number(f, "scale_factors", "0", DT_F64);
    open_block(e);
    buf_printf(e->out, "        amp_upsample_desc d = {0};\n        d.nspatial = %d;\n        d.planes = %s;\n", ns,
               planes_of(e, sx, ns));
    buf_printf(e->out, "        d.mode = %s;\n        d.align_corners = %d;\n", mode,
               nearest ? 0 : attr_bool(f, "align_corners", false));
    for (int i = 0; i < ns; i++) {
        buf_printf(e->out, "        d.in_size[%d] = %s;\n", i, poly_c(e, sx->dims[sx->ndim - ns + i]));
        buf_printf(e->out, "        d.out_size[%d] = %s;\n", i, poly_c(e, so->dims[so->ndim - ns + i]));
        buf_printf(e->out, "        d.scale[%d] = %s;\n", i, double_c(e, scale));
    }
    buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "upsample_backward", f->out->type.dtype), dy_of(e, b),
               grad_of(e, b, 0));
    close_block(e);
}

/* pad, reflection_pad*, replication_pad*: the adjoint, from the forward's
 * before/after (as emit_ops.c reads them; it has checked the sizes). */
static void grad_pad(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sx = xs_of(b, 0);
    int nd = sx->ndim;
    int64_t before[MAX_DIMS] = {0}, after[MAX_DIMS] = {0};
    int mode = 0;
    if (f->op->id == OP_PAD) {
        int64_t v[MAX_DIMS * 2 + 2];
        int k = attr_int_list(f, "pad", v);
        for (int i = 0; i < k / 2; i++) {
            before[nd - 1 - i] = v[2 * i];
            after[nd - 1 - i] = v[2 * i + 1];
        }
        /* constant: typecheck.c refuses pad's other modes (they are the aten ops) */
    } else {
        OpId id = f->op->id;
        int spatial = id == OP_REFLECTION_PAD1D || id == OP_REPLICATION_PAD1D ? 1 : id == OP_REPLICATION_PAD3D ? 3 : 2;
        int64_t p = attr_int(f, "padding", 0);
        for (int i = 0; i < spatial; i++)
            before[nd - 1 - i] = after[nd - 1 - i] = p;
        mode = id == OP_REFLECTION_PAD1D || id == OP_REFLECTION_PAD2D ? 1 : 2;
    }
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

/* index_select: dy added back to the selected rows of a zeroed dx. */
static void grad_index_select(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *outer, *len, *inner;
    axis_split(e, xs_of(b, 0), attr_int(f, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "index_select_backward", f->out->type.dtype),
               outer, len, inner, numel_c(e, xs_of(b, 2)), x_of(e, b, 2), dy_of(e, b), grad_of(e, b, 0));
}

/* gather: dx = zeros scattered-added with dy along the forward's dim (the
 * forward checked the indices, so the status is AMP_OK). */
static void grad_gather(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0), *si = xs_of(b, 2);
    zero_fill(e, t, grad_of(e, b, 0), sx);
    open_block(e);
    buf_printf(e->out, "        const int64_t index_shape[] = %s;\n", shape_array(e, si));
    buf_printf(e->out, "        const int64_t x_shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        (void)%s(%d, index_shape, %d, %s, %s, x_shape, %s);\n", kernel(e, "scatter_add", t),
               sx->ndim, (int)attr_int(f, "axis", 0), x_of(e, b, 2), dy_of(e, b), grad_of(e, b, 0));
    close_block(e);
}

/* logsumexp, norm, linalg_vector_norm: the backward kernels over x's
 * shape with the forward's reduce mask. */
static void grad_reduction_kernel(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0);
    int nd = sx->ndim;
    int64_t dim = attr_int(f, "axis", 0);
    const char *items[MAX_DIMS];
    OpId id = f->op->id;
    for (int i = 0; i < nd; i++) {
        bool r = dim < 0 || dim == i;
        if (id == OP_LINALG_MATRIX_NORM || id == OP_FROBENIUS_NORM) /* as emit_ops.c's emit_reduce */
            r = id == OP_FROBENIUS_NORM && dim >= 0 ? dim == i : i >= nd - 2;
        items[i] = r ? "1" : "0";
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    if (f->op->id == OP_LOGSUMEXP) {
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s, %s);\n", kernel(e, "logsumexp_backward", t), nd,
                   x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
    } else {
        double p = id == OP_NORM                ? attr_number(f, "p", "2", DT_F64)
                   : id == OP_LINALG_VECTOR_NORM ? attr_number(f, "ord", "2", DT_F64)
                                                 : 2; /* frobenius_norm, linalg_matrix_norm(ord="fro") */
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s, %s, %s);\n", kernel(e, "norm_backward", t), nd,
                   double_c(e, p), x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
    }
    close_block(e);
}

/* cumsum: dx = the reverse cumulative sum of dy along the dim. */
static void grad_cumsum(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *outer, *len, *inner;
    axis_split(e, xs_of(b, 0), attr_int(f, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "reverse_cumsum", f->out->type.dtype), outer, len,
               inner, dy_of(e, b), grad_of(e, b, 0));
}

/* ---- the gemm family: mv, dot, vdot, addmm, addmv, addr, baddbmm, addbmm -------- */

/* The forward gemm of a matrix-product node (as emit_ops.c's emit_mm):
 * y[b][m][n] = alpha sum_k A[b][m][k] B[b][k][n] + beta C. */
static void mm_forward_gemm(Emitter *e, Node *f, Gemm *g)
{
    OpId id = f->op->id;
    DType ct = compute_dtype(f->out->type.dtype);
    bool added = id == OP_ADDMM || id == OP_BADDBMM || id == OP_ADDBMM || id == OP_ADDMV || id == OP_ADDR;
    int a = added ? 1 : 0, b = a + 1;
    const Shape *sa = &f->in[a]->type.shape, *sb = &f->in[b]->type.shape;
    *g = (Gemm){.batch = "1", .alpha = 1, .beta = 0};
    if (added) {
        g->alpha = attr_number(f, "alpha", "1", ct);
        g->beta = attr_number(f, "beta", "1", ct);
    }
    switch (id) {
    case OP_ADDMM:
        g->M = poly_c(e, sa->dims[0]), g->K = poly_c(e, sa->dims[1]), g->N = poly_c(e, sb->dims[1]);
        g->a[0] = "0", g->a[1] = g->K, g->a[2] = "1";
        g->b[0] = "0", g->b[1] = g->N, g->b[2] = "1";
        break;
    case OP_BADDBMM: case OP_ADDBMM:
        g->batch = poly_c(e, sa->dims[0]);
        g->M = poly_c(e, sa->dims[1]), g->K = poly_c(e, sa->dims[2]), g->N = poly_c(e, sb->dims[2]);
        g->a[0] = mul_c(e, g->M, g->K), g->a[1] = g->K, g->a[2] = "1";
        g->b[0] = mul_c(e, g->K, g->N), g->b[1] = g->N, g->b[2] = "1";
        g->sum_batch = id == OP_ADDBMM;
        break;
    case OP_MV: case OP_ADDMV:
        g->M = poly_c(e, sa->dims[0]), g->K = poly_c(e, sa->dims[1]), g->N = "1";
        g->a[0] = "0", g->a[1] = g->K, g->a[2] = "1";
        g->b[0] = "0", g->b[1] = "1", g->b[2] = "0";
        break;
    case OP_ADDR:
        g->M = poly_c(e, sa->dims[0]), g->N = poly_c(e, sb->dims[0]), g->K = "1";
        g->a[0] = "0", g->a[1] = "1", g->a[2] = "0";
        g->b[0] = "0", g->b[1] = "0", g->b[2] = "1";
        break;
    default: /* dot, vdot */
        g->M = g->N = "1";
        g->K = poly_c(e, sa->dims[0]);
        g->a[0] = "0", g->a[1] = "0", g->a[2] = "1";
        g->b[0] = "0", g->b[1] = "1", g->b[2] = "0";
        break;
    }
}

/* dA [b][m][k] = alpha dy B^T, dB [b][k][n] = alpha A^T dy (each written
 * contiguous, which is its operand's layout; summed over the batch where
 * the operand is shared), d(input) = beta sum_to(dy). */
static void grad_gemm(Emitter *e, Node *bn)
{
    Node *f = bn->fwd;
    DType t = f->out->type.dtype;
    OpId id = f->op->id;
    bool added = id == OP_ADDMM || id == OP_BADDBMM || id == OP_ADDBMM || id == OP_ADDMV || id == OP_ADDR;
    int ka = added ? 1 : 0, kb = ka + 1;
    Gemm fg;
    mm_forward_gemm(e, f, &fg);
    bool batched = strcmp(fg.batch, "1") != 0;
    const char *dys[3] = {batched && !fg.sum_batch ? mul_c(e, fg.M, fg.N) : "0", fg.N, "1"};
    const char *dy = dy_of(e, bn);
    if (grad_of(e, bn, ka)) {
        Gemm g = {.batch = fg.batch, .M = fg.M, .N = fg.K, .K = fg.N, .A = dy, .B = x_of(e, bn, kb), .alpha = fg.alpha};
        g.a[0] = dys[0], g.a[1] = dys[1], g.a[2] = dys[2];
        g.b[0] = fg.b[0], g.b[1] = fg.b[2], g.b[2] = fg.b[1];
        g.sum_batch = batched && strcmp(fg.a[0], "0") == 0;
        emit_gemm_call(e, t, &g, grad_of(e, bn, ka));
    }
    if (grad_of(e, bn, kb)) {
        Gemm g = {.batch = fg.batch, .M = fg.K, .N = fg.N, .K = fg.M, .A = x_of(e, bn, ka), .B = dy, .alpha = fg.alpha};
        g.a[0] = fg.a[0], g.a[1] = fg.a[2], g.a[2] = fg.a[1];
        g.b[0] = dys[0], g.b[1] = dys[1], g.b[2] = dys[2];
        g.sum_batch = batched && strcmp(fg.b[0], "0") == 0;
        emit_gemm_call(e, t, &g, grad_of(e, bn, kb));
    }
    if (added && grad_of(e, bn, 0)) {
        const char *g0 = grad_of(e, bn, 0);
        if (fg.beta == 0) {
            zero_fill(e, t, g0, xs_of(bn, 0));
        } else {
            sum_to(e, t, dy, ys_of(bn), g0, xs_of(bn, 0));
            if (fg.beta != 1)
                buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "mul_scalar", t),
                           numel_c(e, xs_of(bn, 0)), g0, double_c(e, fg.beta), g0);
        }
    }
}

/* trace: dx = dy on the diagonal, 0 elsewhere. */
static void grad_trace(Emitter *e, Node *b)
{
    DType t = b->fwd->out->type.dtype;
    const Shape *sx = xs_of(b, 0);
    const char *g = grad_of(e, b, 0), *R = poly_c(e, sx->dims[0]), *C = poly_c(e, sx->dims[1]);
    zero_fill(e, t, g, sx);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = {(%s) < (%s) ? (%s) : (%s)};\n", R, C, R, C);
    buf_puts(e->out, "        const int64_t dy_stride[] = {0};\n");
    buf_printf(e->out, "        const int64_t dx_stride[] = {(%s) + 1};\n", C);
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, 1, shape, %s, dy_stride, %s, dx_stride);\n", g, dy_of(e, b), g);
    close_block(e);
}

void grad_conv_transpose(Emitter *e, Node *b) { grad_conv_pair(e, b, true); }

/* addcmul: y = input + value t1 t2; addcdiv: y = input + value t1 / t2.
 * Each tensor operand's gradient is formed over the output shape in the
 * scratch, then summed down to the operand's shape. */
static void grad_addc(Emitter *e, Node *b)
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

/* ---- contractions: einsum, tensordot, linalg_vecdot, bilinear ------------------ */

/* A forward contraction as index lists: y (contiguous over indices
 * 0..n_out-1) = the sum over the others of the product of the operands;
 * operand o (forward input input[o]) is contiguous over its dims, dim d
 * walking index idx[o][d] with dsize[o][d] elements (a repeated index
 * walks a diagonal). */
#define GRAD_CONTRACT_MAX 16
typedef struct GradContract {
    int n_index, n_out, n_ops;
    const char *size[GRAD_CONTRACT_MAX];
    int input[4], nd[4];
    int idx[4][MAX_DIMS];
    const char *dsize[4][MAX_DIMS];
} GradContract;

static int contract_index(GradContract *k, const char *size)
{
    if (k->n_index >= GRAD_CONTRACT_MAX)
        return -1;
    k->size[k->n_index] = size;
    return k->n_index++;
}

static void contract_dim(GradContract *k, int o, int index, const char *size)
{
    k->idx[o][k->nd[o]] = index;
    k->dsize[o][k->nd[o]++] = size;
}

/* Operand o's stride along each index, as C text ("0" where it lacks it). */
static void contract_strides(Emitter *e, const GradContract *k, int o, const char **st)
{
    for (int i = 0; i < k->n_index; i++)
        st[i] = "0";
    const char *inner = "1";
    for (int d = k->nd[o] - 1; d >= 0; d--) {
        int i = k->idx[o][d];
        st[i] = strcmp(st[i], "0") == 0 ? inner : arena_printf(e->c->arena, "%s + %s", st[i], inner);
        inner = mul_c(e, inner, k->dsize[o][d]);
    }
}

/* The gradient of each operand needing one: the contraction of dy with the
 * other operands whose output indices are that operand's dims. */
static void grad_contraction(Emitter *e, Node *b, GradContract *k)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    if (k->n_index < 0 || k->n_index > GRAD_CONTRACT_MAX) {
        unsupported(e, f, "the gradient of a contraction over more than 16 indices is not supported yet");
        return;
    }
    const char *ys[GRAD_CONTRACT_MAX];
    const char *inner = "1";
    for (int i = k->n_out - 1; i >= 0; i--) {
        ys[i] = inner;
        inner = mul_c(e, inner, k->size[i]);
    }
    for (int o = 0; o < k->n_ops; o++) {
        const char *g = grad_of(e, b, k->input[o]);
        if (!g)
            continue;
        /* the output: operand o's dims, each a distinct index of its full size */
        int newi[GRAD_CONTRACT_MAX];
        for (int i = 0; i < k->n_index; i++)
            newi[i] = -1;
        int n = 0;
        for (int d = 0; d < k->nd[o]; d++) {
            int i = k->idx[o][d];
            if (newi[i] >= 0) {
                unsupported(e, f, "the gradient of an operand with a repeated index (a diagonal) is not supported yet");
                return;
            }
            if (strcmp(k->dsize[o][d], k->size[i]) != 0) {
                unsupported(e, f, "the gradient of an operand broadcast along an index is not supported yet");
                return;
            }
            newi[i] = n++;
        }
        int n_out = n;
        for (int i = 0; i < k->n_index; i++)
            if (newi[i] < 0)
                newi[i] = n++;
        open_block(e);
        buf_printf(e->out, "        amp_contract_desc d = {0};\n");
        buf_printf(e->out, "        const %s *operands[%d];\n", dtype_c_type(t), k->n_ops);
        buf_printf(e->out, "        d.n_index = %d;\n        d.n_out = %d;\n        d.n_operands = %d;\n", k->n_index,
                   n_out, k->n_ops);
        for (int i = 0; i < k->n_index; i++)
            buf_printf(e->out, "        d.size[%d] = %s;\n", newi[i], k->size[i]);
        /* operand 0: dy; then the others */
        buf_printf(e->out, "        operands[0] = %s;\n", dy_of(e, b));
        for (int i = 0; i < k->n_out; i++)
            buf_printf(e->out, "        d.stride[0][%d] = %s;\n", newi[i], ys[i]);
        for (int p = 0, slot = 1; p < k->n_ops; p++) {
            if (p == o)
                continue;
            const char *st[GRAD_CONTRACT_MAX];
            contract_strides(e, k, p, st);
            buf_printf(e->out, "        operands[%d] = %s;\n", slot, x_of(e, b, k->input[p]));
            for (int i = 0; i < k->n_index; i++)
                if (strcmp(st[i], "0") != 0)
                    buf_printf(e->out, "        d.stride[%d][%d] = %s;\n", slot, newi[i], st[i]);
            slot++;
        }
        buf_printf(e->out, "        %s(&d, operands, %s);\n", kernel(e, "contract", t), g);
        close_block(e);
    }
}

static void grad_einsum(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *s = attr_str(f, "equation", "");
    if (strchr(s, '.')) {
        unsupported(e, f, "the gradient of an equation with ... is not supported yet");
        return;
    }
    GradContract k = {0};
    const char *arrow = strstr(s, "->");
    const char *subs[4];
    int nops = 0;
    for (const char *p = s; nops < 4;) {
        subs[nops++] = p;
        while (*p && *p != ',' && *p != '-')
            p++;
        if (*p != ',')
            break;
        p++;
    }
    char outl[64];
    int nout = 0;
    if (arrow) {
        for (const char *q = arrow + 2; *q && nout < 64; q++)
            if (*q != ' ')
                outl[nout++] = *q;
    } else {
        int count[128] = {0};
        for (const char *q = s; *q; q++)
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
                count[(int)*q]++;
        for (int ch = 'A'; ch <= 'z' && nout < 64; ch++)
            if (count[ch] == 1)
                outl[nout++] = (char)ch;
    }
    const char *letter_size[128] = {0};
    int letter_index[128];
    for (int i = 0; i < 128; i++)
        letter_index[i] = -1;
    for (int o = 0; o < nops; o++) {
        const Shape *so = xs_of(b, o + 1);
        int d = 0;
        for (const char *q = subs[o]; d < so->ndim && *q && *q != ',' && *q != '-'; q++)
            if (*q != ' ')
                letter_size[(int)*q & 127] = poly_c(e, so->dims[d++]);
    }
    for (int i = 0; i < nout; i++)
        letter_index[(int)outl[i] & 127] = contract_index(&k, letter_size[(int)outl[i] & 127]);
    k.n_out = k.n_index;
    k.n_ops = nops;
    for (int o = 0; o < nops; o++) {
        const Shape *so = xs_of(b, o + 1);
        k.input[o] = o + 1;
        int d = 0;
        for (const char *q = subs[o]; *q && *q != ',' && *q != '-'; q++) {
            if (*q == ' ')
                continue;
            int c = (int)*q & 127;
            if (letter_index[c] < 0)
                letter_index[c] = contract_index(&k, letter_size[c]);
            if (letter_index[c] < 0 || d >= so->ndim) {
                k.n_index = -1;
                break;
            }
            contract_dim(&k, o, letter_index[c], poly_c(e, so->dims[d++]));
        }
    }
    grad_contraction(e, b, &k);
}

static void grad_tensordot(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sa = xs_of(b, 0), *sb = xs_of(b, 1);
    int nd = (int)attr_int(f, "dims", 2);
    GradContract k = {.n_ops = 2, .input = {0, 1}};
    int ia[MAX_DIMS], ib[MAX_DIMS];
    for (int d = 0; d < sa->ndim - nd; d++)
        ia[d] = contract_index(&k, poly_c(e, sa->dims[d]));
    for (int d = nd; d < sb->ndim; d++)
        ib[d] = contract_index(&k, poly_c(e, sb->dims[d]));
    k.n_out = k.n_index;
    for (int j = 0; j < nd; j++)
        ia[sa->ndim - nd + j] = ib[j] = contract_index(&k, poly_c(e, sb->dims[j]));
    for (int d = 0; d < sa->ndim; d++)
        contract_dim(&k, 0, ia[d], poly_c(e, sa->dims[d]));
    for (int d = 0; d < sb->ndim; d++)
        contract_dim(&k, 1, ib[d], poly_c(e, sb->dims[d]));
    grad_contraction(e, b, &k);
}

static void grad_vecdot(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sa = xs_of(b, 0), *sb = xs_of(b, 1);
    if (!shape_equal(sa, sb)) {
        unsupported(e, f, "the gradient of linalg_vecdot of broadcasting operands is not supported yet");
        return;
    }
    int nd = sa->ndim;
    int64_t dim = attr_int(f, "dim", -1);
    if (dim < 0)
        dim += nd;
    GradContract k = {.n_ops = 2, .input = {0, 1}};
    int idx[MAX_DIMS];
    for (int d = 0; d < nd; d++)
        if (d != dim)
            idx[d] = contract_index(&k, poly_c(e, sa->dims[d]));
    k.n_out = k.n_index;
    idx[dim] = contract_index(&k, poly_c(e, sa->dims[dim]));
    for (int o = 0; o < 2; o++)
        for (int d = 0; d < nd; d++)
            contract_dim(&k, o, idx[d], poly_c(e, sa->dims[d]));
    grad_contraction(e, b, &k);
}

/* bilinear: y[b, o] = sum_ij x1[b, i] x2[b, j] w[o, i, j] + bias[o] */
static void grad_bilinear(Emitter *e, Node *b)
{
    const Shape *s1 = xs_of(b, 0), *sw = xs_of(b, 2);
    GradContract k = {.n_ops = 3, .input = {0, 1, 2}};
    int bi = contract_index(&k, dims_product(e, s1, 0, s1->ndim - 1));
    int oi = contract_index(&k, poly_c(e, sw->dims[0]));
    k.n_out = 2;
    int ii = contract_index(&k, poly_c(e, sw->dims[1])), ji = contract_index(&k, poly_c(e, sw->dims[2]));
    contract_dim(&k, 0, bi, k.size[bi]), contract_dim(&k, 0, ii, k.size[ii]);
    contract_dim(&k, 1, bi, k.size[bi]), contract_dim(&k, 1, ji, k.size[ji]);
    contract_dim(&k, 2, oi, k.size[oi]), contract_dim(&k, 2, ii, k.size[ii]), contract_dim(&k, 2, ji, k.size[ji]);
    grad_contraction(e, b, &k);
    if (grad_of(e, b, 3))
        sum_to(e, b->fwd->out->type.dtype, dy_of(e, b), ys_of(b), grad_of(e, b, 3), xs_of(b, 3));
}

/* pow: a tensor exponent has the binary rule, a number the unary one */
static void grad_pow(Emitter *e, Node *b)
{
    if (b->fwd->in[1])
        grad_binary_kernel(e, b);
    else
        grad_unary(e, b);
}

/* dropout: dx = dy * mask / (1 - p), the forward's kernel on dy, with the
 * mask regenerated from the same counter rather than stored (no arena
 * bytes, and Philox costs a few multiplies per element); the identity in
 * evaluation mode */
static void grad_dropout(Emitter *e, Node *b)
{
    if (!emit_dropout_draw(e, b->fwd, dy_of(e, b), grad_of(e, b, 0)))
        grad_copy(e, grad_of(e, b, 0), dy_of(e, b), xs_of(b, 0));
}

/* reshape, view, flatten, squeeze, unsqueeze: the same elements */
static void grad_view(Emitter *e, Node *b) { grad_copy(e, grad_of(e, b, 0), dy_of(e, b), xs_of(b, 0)); }

/* expand: summed over the broadcast dims */
static void grad_expand(Emitter *e, Node *b)
{
    sum_to(e, b->fwd->out->type.dtype, dy_of(e, b), ys_of(b), grad_of(e, b, 0), xs_of(b, 0));
}

/* logsumexp and the norms: their reduction kernel's backward, but the
 * nuclear norm's, which goes through the SVD */
static void grad_norm_reduce(Emitter *e, Node *b)
{
    if (is_nuclear_norm(b->fwd))
        grad_linalg(e, b);
    else
        grad_reduction_kernel(e, b);
}

/* Each op's gradient rule, from the grad column of its ops.def row. */
typedef void (*GradRule)(Emitter *e, Node *b);
static const GradRule grad_rules[OP_COUNT] = {
#define GRAD(fn) fn
#define NO_GRAD NULL
#define OP(ID, name, sig, infer, form, emit, grad, flags) [OP_##ID] = grad,
#include "ops.def"
#undef OP
#undef GRAD
#undef NO_GRAD
};

void emit_grad(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    if (!f) {
        grad_seed(e, b);
        return;
    }
    GradRule rule = grad_rules[f->op->id];
    if (!rule) {
        unsupported(e, f, "has no gradient yet");
        return;
    }
    rule(e, b);
}
