/* grad_reduce.c: the gradient rules of the reductions.
 *
 * The rules, PyTorch's (derivatives.yaml):
 *   softmax, log_softmax  their backward kernels, from the forward's result
 *   sum, mean  dy copied back over the reduced dims (a strided copy),
 *              scaled for mean
 *   logsumexp and the norms  their backward kernels, from x and y (the
 *              nuclear norm through grad_linalg)
 *   amax, amin  dy split among the elements equal to y (scale_grad_by_count)
 *   max, min   of the whole tensor: evenly_distribute_backward
 *   var, std   var_backward (std's through dy / (2 y))
 *   cumsum     the reverse cumulative sum of dy; trace: dy on the diagonal
 *   prod       amp_prod_backward: the product of the others, zeros included
 *   cumprod    amp_cumprod_backward, the same care for zeros
 *   sort       dy scattered back through the permutation; the permutation
 *              is recomputed by sorting x again (a stable sort of the same
 *              values gives the forward's indices), since the forward's
 *              indices are not an input of the GRAD node and memplan may
 *              have reused their buffer by the backward pass
 *   quantile, nanquantile  amp_quantile_backward: dy to the two order
 *              statistics, weighted as the interpolation weighted them
 *   renorm     amp_renorm_backward
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

#include <amprt.h>
#include <string.h>

void grad_softmax(Emitter *e, Node *b)
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

/* sum and mean: dy spread back over the reduced dims (and divided by
 * their size for mean). */
void grad_reduce(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sx = xs_of(b, 0);
    int nd = sx->ndim;
    const char *xs[MAX_DIMS], *st[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    /* dy's layout: x's dims without the reduced ones */
    Shape kept = {0};
    for (int i = 0; i < nd; i++)
        if (!attr_reduces(f, i))
            kept.dims[kept.ndim++] = sx->dims[i];
    const char *ks[MAX_DIMS];
    contiguous_strides(e, &kept, ks);
    Shape reduced = {0};
    for (int i = 0, j = 0; i < nd; i++) {
        if (attr_reduces(f, i)) {
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

/* logsumexp, the norms, amax/amin, max()/min(), var and std: the
 * backward kernels over x's shape with the forward's reduce mask. */
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
        bool r = attr_reduces(f, i);
        if (id == OP_LINALG_MATRIX_NORM || (id == OP_FROBENIUS_NORM && !attr_find(f, "axes"))) /* as emit_reduce */
            r = id == OP_FROBENIUS_NORM && dim >= 0 ? dim == i : i >= nd - 2;
        items[i] = r ? "1" : "0";
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    if (id == OP_LOGSUMEXP || id == OP_AMAX || id == OP_AMIN || id == OP_MAX || id == OP_MIN) {
        const char *name = id == OP_LOGSUMEXP ? "logsumexp_backward"
                           : id == OP_AMAX || id == OP_AMIN ? "amax_backward" : "max_backward";
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s, %s);\n", kernel(e, name, t), nd,
                   x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
    } else if (id == OP_VAR || id == OP_STD) {
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s, %s, %s);\n",
                   kernel(e, id == OP_VAR ? "var_backward" : "std_backward", t), nd,
                   double_c(e, variance_correction(f)), x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
    } else {
        double p = id == OP_NORM                ? attr_number(f, "p", "2", DT_F64)
                   : id == OP_LINALG_VECTOR_NORM ? attr_number(f, "ord", "2", DT_F64)
                                                 : 2; /* frobenius_norm, linalg_matrix_norm(ord="fro") */
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s, %s, %s);\n", kernel(e, "norm_backward", t), nd,
                   double_c(e, p), x_of(e, b, 0), y_of(e, b), dy_of(e, b), grad_of(e, b, 0));
    }
    close_block(e);
}

/* amax/amin and max()/min(): dy shared among the elements equal to the
 * result (amax_backward, max_backward) */
void grad_extremum(Emitter *e, Node *b)
{
    grad_reduction_kernel(e, b);
}

/* cumsum: dx = the reverse cumulative sum of dy along the dim. */
void grad_cumsum(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *outer, *len, *inner;
    axis_split(e, xs_of(b, 0), attr_int(f, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "reverse_cumsum", f->out->type.dtype), outer, len,
               inner, dy_of(e, b), grad_of(e, b, 0));
}

/* trace: dx = dy on the diagonal, 0 elsewhere. */
void grad_trace(Emitter *e, Node *b)
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

/* logsumexp and the norms: their reduction kernel's backward, but the
 * nuclear norm's, which goes through the SVD */
void grad_norm_reduce(Emitter *e, Node *b)
{
    if (is_nuclear_norm(b->fwd))
        grad_linalg(e, b);
    else
        grad_reduction_kernel(e, b);
}

/* prod: the forward's reduce mask (emit_reduce.c's emit_reduce). */
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

/* renorm: x [outer, len, inner] around the dim (emit_reduce.c's emit_renorm). */
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
