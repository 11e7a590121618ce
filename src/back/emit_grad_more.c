/* emit_grad_more.c: gradient rules of the other ops: activations, reductions, distances and margin losses.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 *
 * The rules, PyTorch's (derivatives.yaml):
 *   prelu      amp_prelu_backward (dx and the weight's sum)
 *   prod       amp_prod_backward: the product of the others, zeros included
 *   cumprod    amp_cumprod_backward, the same care for zeros
 *   sort       dy scattered back through the permutation; the permutation
 *              is recomputed by sorting x again (a stable sort of the same
 *              values gives the forward's indices), since the forward's
 *              indices are not an input of the GRAD node and memplan may
 *              have reused their buffer by the backward pass
 *   quantile, nanquantile  amp_quantile_backward: dy to the two order
 *              statistics, weighted as the interpolation weighted them
 *   dist       norm_backward of the difference (x - y for x, y - x for y)
 *   cross      cross(y, dy) for x, cross(dy, x) for y, over the broadcast
 *              shape, then summed down to each operand's shape
 *   renorm, cdist, pdist, multi_margin_loss, multilabel_margin_loss
 *              their amp_*_backward kernels
 *   cosine_similarity, margin_ranking_loss, cosine_embedding_loss,
 *   triplet_margin_loss  their amp_*_backward kernels, which write each
 *              operand's gradient over the broadcast shape (into the
 *              scratch where the operand is smaller), summed down after
 */
#include "emit.h"

#include <amprt.h> /* AMP_QUANTILE_* */
#include <string.h>

/* ---- the rules ------------------------------------------------------------------- */

static const char *scratch_as(Emitter *e, Node *b, const char *ctype, const char *byte_offset)
{
    return arena_printf(e->c->arena, "((%s *)(void *)((unsigned char *)%s + (%s)))", ctype, e->cname[b->scratch->id],
                        byte_offset);
}

/* prelu: x [outer, channels, inner] as emit_ops.c's emit_prelu. */
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

/* prod: the forward's reduce mask (emit_ops.c's emit_reduce). */
void grad_prod(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sx = xs_of(b, 0);
    int nd = sx->ndim;
    int64_t dim = attr_int(f, "axis", 0);
    if (nd == 0) { /* the product of one element: dx = dy */
        grad_copy(e, grad_of(e, b, 0), dy_of(e, b), sx);
        return;
    }
    const char *items[MAX_DIMS];
    for (int i = 0; i < nd; i++)
        items[i] = dim < 0 || dim == i ? "1" : "0";
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s);\n", kernel(e, "prod_backward", f->out->type.dtype), nd,
               x_of(e, b, 0), dy_of(e, b), grad_of(e, b, 0));
    close_block(e);
}

/* The (outer, len, inner) split of a scan or quantile's input. */
static void slices_of(Emitter *e, Node *b, const char **outer, const char **len, const char **inner)
{
    const Shape *sx = xs_of(b, 0);
    int64_t d = attr_int(b->fwd, "axis", 0);
    *outer = *inner = "1";
    if (sx->ndim == 0 || d < 0)
        *len = numel_c(e, sx);
    else
        axis_split(e, sx, d, outer, len, inner);
}

void grad_cumprod(Emitter *e, Node *b)
{
    const char *outer, *len, *inner;
    slices_of(e, b, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "cumprod_backward", b->fwd->out->type.dtype),
               outer, len, inner, x_of(e, b, 0), dy_of(e, b), grad_of(e, b, 0), scratch_as(e, b, "double", "0"));
}

static int quantile_interpolation(const char *s)
{
    return strcmp(s, "lower") == 0      ? AMP_QUANTILE_LOWER
           : strcmp(s, "higher") == 0   ? AMP_QUANTILE_HIGHER
           : strcmp(s, "midpoint") == 0 ? AMP_QUANTILE_MIDPOINT
           : strcmp(s, "nearest") == 0  ? AMP_QUANTILE_NEAREST
                                        : AMP_QUANTILE_LINEAR;
}

void grad_quantile(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *outer, *len, *inner;
    slices_of(e, b, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %d, %d, %s, %s, %s, %s);\n",
               kernel(e, "quantile_backward", f->out->type.dtype), outer, len, inner,
               double_c(e, attr_number(f, "q", "0", DT_F64)),
               quantile_interpolation(attr_str(f, "interpolation", "linear")), f->op->id == OP_NANQUANTILE,
               x_of(e, b, 0), dy_of(e, b), grad_of(e, b, 0), scratch_as(e, b, "double", "0"));
}

/* sort: dx = 0, then dx[indices[j]] += dy[j] along the dim. */
void grad_sort(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int64_t d = attr_int(f, "dim", -1);
    if (s->ndim && d < 0)
        d += s->ndim;
    const char *outer, *len, *inner, *g = grad_of(e, b, 0);
    axis_split(e, s, d, &outer, &len, &inner);
    const char *n = numel_c(e, s);
    const char *idx = scratch_as(e, b, "int64_t", "0");
    const char *vals = scratch_as(e, b, dtype_c_type(t), arena_printf(e->c->arena, "(size_t)(%s) * 8", n));
    zero_fill(e, t, g, s);
    open_block(e);
    buf_printf(e->out, "        const int64_t lines[] = {%s, %s, %s};\n", outer, len, inner);
    buf_printf(e->out, "        %s(%s, %s, %s, %d, %s, %s, %s);\n", kernel(e, "sort", t), outer, len, inner,
               attr_bool(f, "descending", false), x_of(e, b, 0), vals, idx);
    /* a permutation of each line: every index is in range, so AMP_OK */
    buf_printf(e->out, "        (void)%s(3, lines, 1, %s, %s, lines, %s);\n", kernel(e, "scatter_add", t), idx,
               dy_of(e, b), g);
    close_block(e);
}

/* dist(x, y, p) = ||x - y||_p: dx = norm_backward(x - y), dy = norm_backward(y - x). */
void grad_dist(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    if (!shape_equal(s, xs_of(b, 1))) {
        unsupported(e, f, "the gradient of dist of broadcasting operands is not supported yet");
        return;
    }
    const char *n = numel_c(e, s), *diff = scratch_as(e, b, dtype_c_type(t), "0");
    double p = attr_number(f, "p", "2", DT_F64);
    for (int k = 0; k < 2; k++) {
        const char *g = grad_of(e, b, k);
        if (!g)
            continue;
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "sub", t), n, x_of(e, b, k),
                   x_of(e, b, 1 - k), diff);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = {%s};\n", n);
        buf_puts(e->out, "        const uint8_t reduce[] = {1};\n");
        buf_printf(e->out, "        %s(1, shape, reduce, %s, %s, %s, %s, %s);\n", kernel(e, "norm_backward", t),
                   double_c(e, p), diff, y_of(e, b), dy_of(e, b), g);
        close_block(e);
    }
}

/* cross: the dim as emit_ops.c's emit_pair_dim chooses it. */
void grad_cross(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b), *sa = xs_of(b, 0);
    int nd = so->ndim;
    int64_t dim = -1;
    if (attr_given(f, "dim")) {
        dim = attr_int(f, "dim", 0);
        if (dim < 0)
            dim += nd;
    } else {
        for (int i = 0; i < sa->ndim && dim < 0; i++) {
            int64_t three;
            if (poly_is_const(sa->dims[i], &three) && three == 3)
                dim = i;
        }
    }
    const char *ys[MAX_DIMS];
    contiguous_strides(e, so, ys);
    for (int k = 0; k < 2; k++) {
        const char *g = grad_of(e, b, k);
        if (!g)
            continue;
        const Shape *sk = xs_of(b, k);
        const char *full = shape_equal(sk, so) ? g : scratch_as(e, b, dtype_c_type(t), "0");
        /* d/dx (x cross y) . dy = y cross dy; d/dy = dy cross x */
        const char *a = k == 0 ? x_of(e, b, 1) : dy_of(e, b), *c = k == 0 ? dy_of(e, b) : x_of(e, b, 0);
        const char *as = k == 0 ? bcast_array(e, xs_of(b, 1), so) : c_array(e, ys, nd);
        const char *cs = k == 0 ? c_array(e, ys, nd) : bcast_array(e, xs_of(b, 0), so);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", as);
        buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", cs);
        buf_printf(e->out, "        %s(%d, shape, %d, %s, a_stride, %s, b_stride, %s);\n", kernel(e, "cross", t), nd,
                   (int)dim, a, c, full);
        close_block(e);
        sum_to(e, t, full, so, g, sk);
    }
}

/* Where operand k's gradient over the full shape goes: straight into its
 * gradient when it has the full shape, else full-shape buffer k of the
 * scratch (after `work`); NULL when it needs none. */
static const char *full_grad(Emitter *e, Node *b, int k, const Shape *full, const char *work)
{
    const char *g = grad_of(e, b, k);
    if (!g || shape_equal(xs_of(b, k), full))
        return g;
    DType t = b->fwd->out->type.dtype;
    return scratch_as(e, b, dtype_c_type(t),
                      arena_printf(e->c->arena, "%s + (size_t)%d * (%s) * sizeof(%s)", work, k, numel_c(e, full),
                                   dtype_c_type(t)));
}

/* Each operand's gradient from its full-shape one. */
static void full_grads_down(Emitter *e, Node *b, int nops, const Shape *full, const char *work)
{
    for (int k = 0; k < nops; k++) {
        const char *g = grad_of(e, b, k);
        if (g && !shape_equal(xs_of(b, k), full))
            sum_to(e, b->fwd->out->type.dtype, full_grad(e, b, k, full, work), full, g, xs_of(b, k));
    }
}

/* cosine_similarity: the dim as emit_ops.c's emit_pair_dim chooses it. */
void grad_cosine_similarity(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    Shape full = grad_full_shape(e->c, f, 2);
    int nd = full.ndim;
    int64_t dim = nd ? 1 : 0;
    if (attr_given(f, "dim"))
        dim = attr_int(f, "dim", 1);
    if (nd && dim < 0)
        dim += nd;
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &full));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, xs_of(b, 0), &full));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, xs_of(b, 1), &full));
    const char *da = full_grad(e, b, 0, &full, "0"), *db = full_grad(e, b, 1, &full, "0");
    buf_printf(e->out, "        %s(%d, shape, %d, %s, a_stride, %s, b_stride, %s, %s, %s, %s);\n",
               kernel(e, "cosine_similarity_backward", t), nd, (int)dim, x_of(e, b, 0), x_of(e, b, 1),
               double_c(e, attr_number(f, "eps", "1e-08", DT_F64)), dy_of(e, b), da ? da : "NULL",
               db ? db : "NULL");
    close_block(e);
    full_grads_down(e, b, 2, &full, "0");
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

/* An operand's [N, D] row strides over the full shape (emit_ops.c's). */
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

/* renorm: x [outer, len, inner] around the dim (emit_ops.c's emit_renorm). */
void grad_renorm(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *s = xs_of(b, 0);
    int64_t d = s->ndim ? attr_int(f, "dim", 0) : 0;
    if (d < 0)
        d += s->ndim;
    const char *outer, *len, *inner;
    axis_split(e, s, d, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "renorm_backward", f->out->type.dtype),
               outer, len, inner, double_c(e, attr_number(f, "p", "2", DT_F64)),
               double_c(e, attr_number(f, "maxnorm", "0", DT_F64)), x_of(e, b, 0), dy_of(e, b),
               grad_of(e, b, 0));
}

/* cdist x1 [batch..., P, M], x2 [batch..., R, M]; pdist x [N, M]. */
void grad_distance(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    double p = attr_number(f, "p", "2", DT_F64);
    const Shape *s1 = xs_of(b, 0);
    int nd = s1->ndim;
    const char *work = scratch_as(e, b, "double", "0");
    if (f->op->id == OP_PDIST) {
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "pdist_backward", t),
                   poly_c(e, s1->dims[0]), poly_c(e, s1->dims[1]), double_c(e, p), x_of(e, b, 0), dy_of(e, b),
                   grad_of(e, b, 0), work);
        return;
    }
    const Shape *s2 = xs_of(b, 1);
    bool same_batch = s2->ndim == nd;
    for (int i = 0; same_batch && i < nd - 2; i++)
        same_batch = poly_equal(s1->dims[i], s2->dims[i]);
    if (!same_batch) { /* the forward kernel reads x2 with x1's batch */
        unsupported(e, f, "the gradient of cdist with broadcast batch dims is not supported yet");
        return;
    }
    const char *d1 = grad_of(e, b, 0), *d2 = grad_of(e, b, 1);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "cdist_backward", t),
               dims_product(e, s1, 0, nd - 2), poly_c(e, s1->dims[nd - 2]), poly_c(e, s2->dims[nd - 2]),
               poly_c(e, s1->dims[nd - 1]), double_c(e, p), x_of(e, b, 0), x_of(e, b, 1), dy_of(e, b),
               d1 ? d1 : "NULL", d2 ? d2 : "NULL", work);
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

