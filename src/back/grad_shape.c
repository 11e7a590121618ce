/* grad_shape.c: the gradient rules of the shape and indexing ops.
 *
 * The views pass dy through (a copy, or a strided copy for permute and
 * transpose); expand sums it back; narrow, slice and cat write it into
 * zeros or split it.  embedding, index_select and gather have their
 * backward kernels;
 * index_copy and scatter_add use forward kernels (index_copy of zeros,
 * index_select, gather) on dy; index_put zeroes dinput's written positions
 * with a forward kernel and sums dvalues with amp_index_put_backward.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

void grad_embedding(Emitter *e, Node *b)
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
void grad_permute(Emitter *e, Node *b)
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

/* narrow, slice: dx is zero but for the slice, which is dy. */
void grad_slice(Emitter *e, Node *b)
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
void grad_cat(Emitter *e, Node *b)
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
    for (int k = 0; k < f->nin; k++) {
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

/* index_select: dy added back to the selected rows of a zeroed dx. */
void grad_index_select(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *outer, *len, *inner;
    axis_split(e, xs_of(b, 0), attr_int(f, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "index_select_backward", f->out->type.dtype),
               outer, len, inner, numel_c(e, xs_of(b, 2)), x_of(e, b, 2), dy_of(e, b), grad_of(e, b, 0));
}

/* gather: dx = zeros scattered-added with dy along the forward's dim (the
 * forward checked the indices, so the status is AMP_OK). */
void grad_gather(Emitter *e, Node *b)
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

/* reshape, view, flatten, squeeze, unsqueeze: the same elements; nothing
 * to do where the gradient shares dy's slot (memplan.c) */
void grad_view(Emitter *e, Node *b)
{
    if (b->out->slot >= 0 && b->out->slot == b->in[0]->slot) {
        buf_printf(e->out, "    (void)%s; /* %s's buffer as it lies: nothing to copy */\n", grad_of(e, b, 0),
                   dy_of(e, b));
        return;
    }
    grad_copy(e, grad_of(e, b, 0), dy_of(e, b), xs_of(b, 0));
}

/* expand: summed over the broadcast dims */
void grad_expand(Emitter *e, Node *b)
{
    sum_to(e, b->fwd->out->type.dtype, dy_of(e, b), ys_of(b), grad_of(e, b, 0), xs_of(b, 0));
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
 * value strides (as emit_shape.c's emit_index_put computes them). */
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
