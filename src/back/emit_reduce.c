/* emit_reduce.c: the kernel calls of the reductions.
 *
 * sum, mean, prod, logsumexp, amax/amin, max()/min(), var, std and the
 * norms read as reductions over a mask (the nuclear norm through the SVD,
 * emit_linalg.c), argmax/argmin along an axis, all/any of any dtype, the
 * scans (cumsum,
 * cumprod), sort, quantile and nanquantile, trace and renorm.  A reduction
 * over one dim splits the input around it (axis_split: outer, length,
 * inner); one over several dims (sum(x, (1, 2))) reads them as a mask
 * (attr_reduces).
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

#include <amprt.h>
#include <string.h>

/* var and std's correction: correction=, else unbiased= as 1 or 0. */
double variance_correction(Node *n)
{
    if (attr_given(n, "correction"))
        return attr_number(n, "correction", "1", DT_F64);
    return attr_bool(n, "unbiased", true) ? 1 : 0;
}

void emit_reduce(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *sx = in_shape(n, 0);
    int nd = sx->ndim;
    int64_t mask[MAX_DIMS];
    OpId id = n->op->id;
    int64_t dim = attr_int(n, "axis", 0);
    for (int i = 0; i < nd; i++)
        mask[i] = attr_reduces(n, i);
    if (id == OP_LINALG_MATRIX_NORM || (id == OP_FROBENIUS_NORM && !attr_find(n, "axes"))) {
        for (int i = 0; i < nd; i++)
            mask[i] = id == OP_FROBENIUS_NORM && dim >= 0 ? dim == i : i >= nd - 2;
    }
    const char *name = n->op->name;
    double p = 2;
    bool is_norm = false, is_variance = false;
    switch (id) {
    case OP_MAX: /* of the whole tensor: amax over every dim */
        name = "amax";
        break;
    case OP_MIN:
        name = "amin";
        break;
    case OP_VAR:
    case OP_STD:
        p = variance_correction(n);
        is_variance = true;
        break;
    case OP_NORM:
        p = attr_number(n, "p", "2", DT_F64);
        is_norm = true;
        break;
    case OP_LINALG_VECTOR_NORM:
        p = attr_number(n, "ord", "2", DT_F64);
        is_norm = true;
        break;
    case OP_FROBENIUS_NORM:
        is_norm = true;
        break;
    case OP_LINALG_MATRIX_NORM:
        if (is_nuclear_norm(n)) {
            emit_svd_op(e, n, y);
            return;
        }
        is_norm = true;
        break;
    default:
        break;
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    const char *items[MAX_DIMS];
    for (int i = 0; i < nd; i++)
        items[i] = mask[i] ? "1" : "0";
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    if (is_norm || is_variance)
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s);\n", kernel(e, is_norm ? "norm" : name, t), nd,
                   double_c(e, p), in_c(e, n, 0), y);
    else
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s);\n", kernel(e, name, t), nd, in_c(e, n, 0), y);
    close_block(e);
}

/* argmax and argmin along one axis (the flattened tensor for dim=None),
 * all and any over a reduce mask; their results are i64 and bool, so the
 * operand check is the input's own (emit_op). */
void emit_index_reduce(Emitter *e, Node *n, const char *y)
{
    const Shape *sx = in_shape(n, 0);
    int nd = sx->ndim;
    int64_t dim = attr_int(n, "axis", 0);
    OpId id = n->op->id;
    DType t = in_dtype(n, 0);
    if (id == OP_ARGMAX || id == OP_ARGMIN) {
        const char *outer = "1", *len, *inner = "1";
        if (dim < 0 || nd == 0)
            len = numel_c(e, sx);
        else
            axis_split(e, sx, dim, &outer, &len, &inner);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, n->op->name, t), outer, len, inner,
                   in_c(e, n, 0), y);
        return;
    }
    const char *items[MAX_DIMS];
    for (int i = 0; i < nd; i++)
        items[i] = dim < 0 || dim == i ? "1" : "0";
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, sx));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    buf_printf(e->out, "        amp_%s(%s, %d, shape, reduce, %s, %s);\n", n->op->name, dtype_amp_enum(t), nd,
               in_c(e, n, 0), y);
    close_block(e);
}

void emit_scan(Emitter *e, Node *n, const char *y)
{
    const char *outer, *len, *inner;
    axis_split(e, in_shape(n, 0), attr_int(n, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, n->op->name, n->out->type.dtype), outer, len, inner,
               in_c(e, n, 0), y);
}

void emit_sort(Emitter *e, Node *n, const char *y)
{
    const Shape *s = in_shape(n, 0);
    int64_t d = attr_int(n, "dim", -1);
    if (s->ndim && d < 0)
        d += s->ndim;
    const char *outer, *len, *inner;
    axis_split(e, s, d, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s);\n", kernel(e, "sort", n->out->type.dtype), outer, len, inner,
               attr_bool(n, "descending", false), in_c(e, n, 0), y, e->cname[n->more_out[0]->id]);
}

void emit_trace(Emitter *e, Node *n, const char *y)
{
    const Shape *s = in_shape(n, 0);
    buf_printf(e->out, "    %s(%s, %s, %s, %s);\n", kernel(e, "trace", n->out->type.dtype), poly_c(e, s->dims[0]),
               poly_c(e, s->dims[1]), in_c(e, n, 0), y);
}

void emit_renorm(Emitter *e, Node *n, const char *y)
{
    const Shape *s = in_shape(n, 0);
    const char *outer, *len, *inner;
    int64_t d = s->ndim ? norm_dim(attr_int(n, "dim", 0), s->ndim) : 0;
    axis_split(e, s, d, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "renorm", n->out->type.dtype), outer, len,
               inner, double_c(e, attr_number(n, "p", "2", DT_F64)),
               double_c(e, attr_number(n, "maxnorm", "0", DT_F64)), in_c(e, n, 0), y);
}

static int quantile_code(const char *s)
{
    return strcmp(s, "lower") == 0 ? AMP_QUANTILE_LOWER : strcmp(s, "higher") == 0 ? AMP_QUANTILE_HIGHER
           : strcmp(s, "midpoint") == 0 ? AMP_QUANTILE_MIDPOINT : strcmp(s, "nearest") == 0 ? AMP_QUANTILE_NEAREST
           : AMP_QUANTILE_LINEAR;
}

void emit_quantile(Emitter *e, Node *n, const char *y)
{
    const Shape *sx = in_shape(n, 0);
    const char *outer = "1", *len, *inner = "1";
    if (attr_int(n, "axis", 0) < 0 || sx->ndim == 0)
        len = numel_c(e, sx);
    else
        axis_split(e, sx, attr_int(n, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %d, %d, %s, %s, %s);\n", kernel(e, "quantile", n->out->type.dtype), outer,
               len, inner, double_c(e, attr_number(n, "q", "0", DT_F64)),
               quantile_code(attr_str(n, "interpolation", "linear")), n->op->id == OP_NANQUANTILE, in_c(e, n, 0),
               double_scratch(e, n), y);
}

/* softmax and log_softmax along one dim: the kernel sees [outer, dim, inner]. */
void emit_softmax(Emitter *e, Node *n, const char *y)
{
    const Shape *s0 = &n->in[0]->type.shape;
    int d = (int)attr_int(n, "axis", 0);
    int nd = s0->ndim;
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, n->op->name, n->out->type.dtype),
               dims_product(e, s0, 0, nd ? d : 0), nd ? poly_c(e, s0->dims[d]) : "1", dims_product(e, s0, nd ? d + 1 : 0, nd),
               e->cname[n->in[0]->id], y);
}
