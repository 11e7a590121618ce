/* emit_ops.c: one libamprt call per IR node.
 *
 * Requires: a planned graph whose every node's operands are in the dtype
 * its kernel takes (autocast and lower.c made every conversion an explicit
 * Cast node).  Produces: for node n, the C statements computing n's
 * results into y (and into n's other results, for ops with several), read
 * back from the op's proven shapes and its arguments.
 *
 * The kernels' contracts are the comments of the part headers in
 * runtime/include/amprt/;
 * each function here fills one kernel's arguments from the graph.  Arrays
 * of sizes and strides are emitted as local constants in a block of their
 * own, so the call reads like the kernel's documentation.
 */
#include "emit.h"

#include <amprt.h>
#include <math.h>
#include <string.h>

/* amp_contract_desc's limits (amprt/linalg.h) */
#define MAX_CONTRACT_INDEX 16

/* ---- small pieces of C ---------------------------------------------------- */

const char *in_c(Emitter *e, Node *n, int k) { return n->in[k] ? e->cname[n->in[k]->id] : "NULL"; }
const Shape *in_shape(Node *n, int k) { return &n->in[k]->type.shape; }
DType in_dtype(Node *n, int k) { return n->in[k]->type.dtype; }
const Shape *out_shape(Node *n) { return &n->out->type.shape; }

/* The dtype a kernel for storage t computes in: PyTorch's opmath. */
DType compute_dtype(DType t) { return t == DT_F64 ? DT_F64 : DT_F32; }

/* A double, exactly, as C: hex float, or INFINITY. */
const char *double_c(Emitter *e, double v)
{
    if (isinf(v))
        return v > 0 ? "INFINITY" : "-INFINITY";
    if (isnan(v))
        return "NAN";
    return arena_printf(e->c->arena, "%a", v);
}

/* An int64 literal that is valid C for every value. */
const char *i64_c(Emitter *e, int64_t v)
{
    if (v == INT64_MIN)
        return "INT64_MIN";
    return arena_printf(e->c->arena, "%lld", (long long)v);
}

/* "{a, b, c}" from C expressions; "{0}" for none, since C99 has no empty
 * initialiser (the kernels read no element of a 0-length array). */
const char *c_array(Emitter *e, const char *const *items, int n)
{
    if (n == 0)
        return "{0}";
    Buf b;
    buf_init(&b, e->c->arena);
    buf_puts(&b, "{");
    for (int i = 0; i < n; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", items[i]);
    buf_puts(&b, "}");
    return b.data;
}

const char *shape_array(Emitter *e, const Shape *s)
{
    const char *items[MAX_DIMS];
    for (int i = 0; i < s->ndim; i++)
        items[i] = poly_c(e, s->dims[i]);
    return c_array(e, items, s->ndim);
}

const char *i64_array(Emitter *e, const int64_t *v, int n)
{
    const char *items[MAX_DIMS * 2];
    for (int i = 0; i < n; i++)
        items[i] = i64_c(e, v[i]);
    return c_array(e, items, n);
}

/* Element strides of a contiguous shape, as C. */
void contiguous_strides(Emitter *e, const Shape *s, const char **out)
{
    for (int i = 0; i < s->ndim; i++)
        out[i] = dims_product(e, s, i + 1, s->ndim);
}

/* Strides reading operand shape `in` broadcast to `out` (numpy rules): 0
 * along dims the operand lacks or has as 1. */
void broadcast_strides(Emitter *e, const Shape *in, const Shape *out, const char **st)
{
    for (int i = 0; i < out->ndim; i++) {
        int j = in->ndim - out->ndim + i;
        int64_t one;
        st[i] = "0";
        if (j >= 0 && !(poly_is_const(in->dims[j], &one) && one == 1))
            st[i] = dims_product(e, in, j + 1, in->ndim);
    }
}

const char *bcast_array(Emitter *e, const Shape *in, const Shape *out)
{
    const char *st[MAX_DIMS];
    broadcast_strides(e, in, out, st);
    return c_array(e, st, out->ndim);
}

static bool shape_is(const Shape *s, int64_t numel)
{
    int64_t v;
    for (int i = 0; i < s->ndim; i++)
        if (!poly_is_const(s->dims[i], &v))
            return false;
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) {
        poly_is_const(s->dims[i], &v);
        n *= v;
    }
    return n == numel;
}

void open_block(Emitter *e) { buf_puts(e->out, "    {\n"); }
void close_block(Emitter *e) { buf_puts(e->out, "    }\n"); }

/* `rc = call; if (rc != AMP_OK) return rc;` for kernels that check data. */
void emit_checked(Emitter *e, const char *indent, const char *call)
{
    buf_printf(e->out, "%src = %s;\n%sif (rc != AMP_OK)\n%s    return rc;\n", indent, call, indent, indent);
}

bool unsupported(Emitter *e, Node *n, const char *why)
{
    error_at(e->c, n->loc, "%s: %s", n->op->name, why);
    return false;
}

static bool is_kernel_float(DType t) { return t == DT_F64 || t == DT_F32 || t == DT_BF16 || t == DT_F16; }

/* Every tensor operand in dtype t but the index operands (which must be
 * i64) and, for the norms, parameters that may stay f32. */
bool operands_ok(Emitter *e, Node *n, DType t)
{
    if (!is_kernel_float(t)) {
        error_at(e->c, n->loc, "%s producing %s has no runtime kernel (the runtime computes in f64, f32, bf16 and f16)",
                 n->op->name, dtype_name(t));
        return false;
    }
    unsigned f = n->op->flags;
    for (int k = 0; k < n->nin; k++) {
        if (!n->in[k])
            continue;
        DType d = in_dtype(n, k);
        bool index = op_index_arg(n->op, k);
        if (index && (d == DT_I64 || ((n->op->id == OP_WHERE || n->op->id == OP_INDEX_PUT) && d == DT_BOOL)))
            continue;
        if (index && d == DT_I32 && n->op->id == OP_LU_SOLVE)
            continue; /* linalg_lu_factor's pivots */
        if (index && d != DT_I64 && dtype_is_float(d) && (n->op->id == OP_CROSS_ENTROPY))
            continue; /* class probabilities */
        if (k > 0 && (f & OPF_MIXED_PARAMS) && (d == t || d == DT_F32))
            continue;
        if (d != t) {
            error_at(e->c, n->loc, "%s: operand %d is %s where the kernel computes in %s (no runtime kernel for the mix)",
                     n->op->name, k + 1, dtype_name(d), dtype_name(t));
            return false;
        }
    }
    return true;
}

/* ---- elementwise ------------------------------------------------------------ */

const char *unary_kernel_name(Node *n)
{
    if (n->op->id == OP_GELU && strcmp(attr_str(n, "approximate", "none"), "tanh") == 0)
        return "gelu_tanh";
    return n->op->name;
}

static void emit_unary(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, unary_kernel_name(n), t),
               numel_c(e, out_shape(n)), in_c(e, n, 0), y);
}

/* softplus, clamp and pow with a number exponent: y = f(x; p0, p1). */
/* The kernel name and scalar parameters of softplus, clamp, pow(x, number). */
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
    case OP_POW:
        name = "pow_scalar";
        p0 = attr_number(n, "exponent", "1", ct);
        break;
    default:
        ICE("no parameters known for %s", name);
    }
    *p0_out = p0;
    *p1_out = p1;
    return name;
}

static void emit_unary_param(Emitter *e, Node *n, const char *y)
{
    double p0, p1;
    const char *name = unary_params(n, &p0, &p1);
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s);\n", kernel(e, name, n->out->type.dtype),
               numel_c(e, out_shape(n)), in_c(e, n, 0), double_c(e, p0), double_c(e, p1), y);
}

/* maximum, atan2, pow of two tensors: same shape, or broadcast. */
static void emit_binary_tensors(Emitter *e, Node *n, const char *y)
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
    buf_printf(e->out, "        static const %s %s[1] = {%s}; /* %s */\n", dtype_c_type(t), local, init,
               double_c(e, v));
    return local;
}

static void emit_where(Emitter *e, Node *n, const char *y)
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

static void emit_addc(Emitter *e, Node *n, const char *y)
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

/* ---- data movement ------------------------------------------------------------- */

/* y = x viewed with `strides` (in elements) from element `offset`. */
static void emit_strided_copy(Emitter *e, Node *n, const char *y, const char *offset, const char *const *strides)
{
    const Shape *so = out_shape(n);
    const char *ys[MAX_DIMS];
    contiguous_strides(e, so, ys);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t x_stride[] = %s;\n", c_array(e, strides, so->ndim));
    buf_printf(e->out, "        const int64_t y_stride[] = %s;\n", c_array(e, ys, so->ndim));
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s%s%s, x_stride, %s, y_stride);\n", y, so->ndim,
               in_c(e, n, 0), offset ? " + " : "", offset ? offset : "", y);
    close_block(e);
}

static void emit_permute(Emitter *e, Node *n, const char *y)
{
    const Shape *sx = in_shape(n, 0);
    int nd = sx->ndim;
    const char *xs[MAX_DIMS], *st[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    int perm[MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    if (n->op->id == OP_TRANSPOSE) {
        int64_t a = attr_int(n, "dim0", 0), b = attr_int(n, "dim1", 0);
        if (nd) {
            a = a < 0 ? a + nd : a;
            b = b < 0 ? b + nd : b;
            perm[a] = (int)b;
            perm[b] = (int)a;
        }
    } else {
        int64_t dims[MAX_DIMS * 2];
        int k = attr_int_list(n, "dims", dims);
        for (int i = 0; i < k && i < nd; i++)
            perm[i] = (int)(dims[i] < 0 ? dims[i] + nd : dims[i]);
    }
    for (int i = 0; i < nd; i++)
        st[i] = xs[perm[i]];
    emit_strided_copy(e, n, y, NULL, st);
}

static void emit_expand(Emitter *e, Node *n, const char *y)
{
    const char *st[MAX_DIMS];
    broadcast_strides(e, in_shape(n, 0), out_shape(n), st);
    emit_strided_copy(e, n, y, NULL, st);
}

static void emit_slice(Emitter *e, Node *n, const char *y)
{
    const Shape *sx = in_shape(n, 0);
    const char *xs[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    int d = (int)attr_int(n, "axis", 0);
    const char *offset = arena_printf(e->c->arena, "%s * (%s)", i64_c(e, attr_int(n, "axis_start", 0)), xs[d]);
    if (attr_int(n, "axis_step", 0) != 1)
        xs[d] = arena_printf(e->c->arena, "%s * (%s)", i64_c(e, attr_int(n, "axis_step", 0)), xs[d]);
    emit_strided_copy(e, n, y, offset, xs);
}

/* cat and stack: each input copied into its place in y. */
static void emit_cat(Emitter *e, Node *n, const char *y)
{
    const Shape *so = out_shape(n);
    bool stack = n->op->id == OP_STACK;
    int64_t dim = attr_int(n, "dim", 0);
    int nd = so->ndim;
    if (dim < 0)
        dim += nd;
    const char *ys[MAX_DIMS];
    contiguous_strides(e, so, ys);
    Poly *offset = poly_const(e->c, 0);
    for (int k = 0; k < n->nin; k++) {
        if (!n->in[k])
            continue;
        const Shape *sx = in_shape(n, k);
        if (shape_is(sx, 0) && sx->ndim == 1 && !stack && nd != 1)
            continue; /* PyTorch skips legacy empty 1-D inputs of cat */
        Shape part = *so;
        if (stack)
            part.dims[dim] = poly_const(e->c, 1);
        else
            part.dims[dim] = sx->dims[dim];
        const char *xs[MAX_DIMS];
        contiguous_strides(e, &part, xs);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &part));
        buf_printf(e->out, "        const int64_t x_stride[] = %s;\n", c_array(e, xs, nd));
        buf_printf(e->out, "        const int64_t y_stride[] = %s;\n", c_array(e, ys, nd));
        buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s, x_stride, %s + (%s) * (%s), y_stride);\n",
                   y, nd, in_c(e, n, k), y, poly_c(e, offset), ys[dim]);
        close_block(e);
        offset = poly_add(e->c, offset, part.dims[dim]);
    }
}

static void emit_pad(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *sx = in_shape(n, 0);
    int nd = sx->ndim;
    int64_t before[MAX_DIMS] = {0}, after[MAX_DIMS] = {0};
    int mode = 0;
    double value = 0;
    if (n->op->id == OP_PAD) {
        int64_t v[MAX_DIMS * 2 + 2];
        int k = attr_int_list(n, "pad", v);
        for (int i = 0; i < k / 2; i++) {
            before[nd - 1 - i] = v[2 * i];
            after[nd - 1 - i] = v[2 * i + 1];
        }
        if (attr_given(n, "value"))
            value = attr_number(n, "value", "0", compute_dtype(t));
    } else {
        OpId id = n->op->id;
        int spatial = id == OP_REFLECTION_PAD1D || id == OP_REPLICATION_PAD1D ? 1
                      : id == OP_REPLICATION_PAD3D ? 3 : 2;
        int64_t p = attr_int(n, "padding", 0);
        for (int i = 0; i < spatial; i++)
            before[nd - 1 - i] = after[nd - 1 - i] = p;
        mode = id == OP_REFLECTION_PAD1D || id == OP_REFLECTION_PAD2D ? 1 : 2;
        for (int i = nd - spatial; i < nd; i++) {
            int64_t size;
            if (!poly_is_const(sx->dims[i], &size)) {
                unsupported(e, n, "reflection and replication padding need fixed spatial sizes");
                return;
            }
            if (mode == 1 && p >= size) {
                error_at(e->c, n->loc, "Padding size should be less than the corresponding input dimension, but got: "
                         "padding (%lld, %lld) at dimension %d of input %s", (long long)p, (long long)p, i,
                         type_comment(e, &n->in[0]->type));
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

/* ---- reductions and normalisation ---------------------------------------------- */

static void emit_svd_op(Emitter *e, Node *n, const char *y);

static void emit_reduce(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    const Shape *sx = in_shape(n, 0);
    int nd = sx->ndim;
    int64_t mask[MAX_DIMS];
    OpId id = n->op->id;
    int64_t dim = attr_int(n, "axis", 0);
    for (int i = 0; i < nd; i++)
        mask[i] = dim < 0 || dim == i;
    if (id == OP_LINALG_MATRIX_NORM || id == OP_FROBENIUS_NORM) {
        for (int i = 0; i < nd; i++)
            mask[i] = id == OP_FROBENIUS_NORM && dim >= 0 ? dim == i : i >= nd - 2;
    }
    const char *name = n->op->name;
    double p = 2;
    bool is_norm = false;
    switch (id) {
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
    if (is_norm)
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s, %s);\n", kernel(e, "norm", t), nd, double_c(e, p),
                   in_c(e, n, 0), y);
    else
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s);\n", kernel(e, name, t), nd, in_c(e, n, 0), y);
    close_block(e);
}

/* Softmax-like: along one dim, as (outer, dim, inner). */
void axis_split(Emitter *e, const Shape *s, int64_t d, const char **outer, const char **len, const char **inner)
{
    int nd = s->ndim;
    if (nd == 0) {
        *outer = *len = *inner = "1";
        return;
    }
    *outer = dims_product(e, s, 0, (int)d);
    *len = poly_c(e, s->dims[d]);
    *inner = dims_product(e, s, (int)d + 1, nd);
}

static void emit_scan(Emitter *e, Node *n, const char *y)
{
    const char *outer, *len, *inner;
    axis_split(e, in_shape(n, 0), attr_int(n, "axis", 0), &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, n->op->name, n->out->type.dtype), outer, len, inner,
               in_c(e, n, 0), y);
}

static void emit_sort(Emitter *e, Node *n, const char *y)
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

static const char *param_dtype_c(Node *n, int first, int last)
{
    for (int k = first; k <= last; k++)
        if (n->in[k])
            return dtype_amp_enum(n->in[k]->type.dtype);
    return dtype_amp_enum(n->out->type.dtype);
}

/* ---- training mode: dropout and batch_norm in the training step ------------- */

/* Whether e writes the training step (<prefix>_backward), where dropout
 * and batch_norm run in training mode; the inference forward is
 * evaluation mode (docs/training.md). */
static bool in_train_step(Emitter *e) { return e->c->train_graph && e->g == e->c->train_graph; }

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

/* batch_norm(training=true) in the training step: batch statistics, and the
 * running ones (buffers the training state owns) updated in place. */
static bool emit_batch_norm_train(Emitter *e, Node *n, const char *y, double eps)
{
    if (!in_train_step(e))
        return false;
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    const char *stats[2];
    Value *cast_back[2] = {NULL, NULL};
    for (int k = 1; k <= 2; k++) {
        Value *v = n->in[k];
        /* a buffer converted for the op (the f64 reference's casts, or a
         * promotion): the converted copy is updated, then cast back */
        if (v && v->kind == V_TEMP && v->def && v->def->op->id == OP_CAST && v->def->in[0]->kind == V_BUFFER) {
            cast_back[k - 1] = v;
            stats[k - 1] = e->cname[v->id];
            continue;
        }
        if (v && v->kind != V_BUFFER) {
            unsupported(e, n, "in training mode the running statistics are updated in place, so they must be "
                              "buffers of the model (declared with `buffer`), not inputs or computed values");
            return true;
        }
        /* the local is const, but it points into the training state's
         * storage, which is the caller's mutable memory */
        stats[k - 1] = v ? arena_printf(e->c->arena, "(void *)(uintptr_t)%s", e->cname[v->id]) : "NULL";
    }
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "batch_norm_train", n->out->type.dtype),
               poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), in_c(e, n, 0),
               param_dtype_c(n, 1, 4), stats[0], stats[1], in_c(e, n, 3), in_c(e, n, 4),
               double_c(e, attr_number(n, "momentum", "0.1", DT_F64)), double_c(e, eps), y);
    for (int k = 0; k < 2; k++) {
        Value *v = cast_back[k];
        if (!v)
            continue;
        Value *buf = v->def->in[0];
        buf_printf(e->out, "    amp_cast_%s_%s((size_t)(%s), %s, (void *)(uintptr_t)%s); /* back into %s */\n",
                   dtype_name(v->type.dtype), dtype_name(buf->type.dtype), numel_c(e, &v->type.shape),
                   e->cname[v->id], e->cname[buf->id], buf->name);
    }
    return true;
}

static void emit_norm_layer(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    double eps = attr_number(n, "eps", "1e-05", DT_F64);
    switch (n->op->id) {
    case OP_LAYER_NORM: {
        /* normalized_shape is one int until list literals: the last dim */
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "layer_norm", t),
                   dims_product(e, s, 0, nd - 1), poly_c(e, s->dims[nd - 1]), in_c(e, n, 0), param_dtype_c(n, 2, 3),
                   in_c(e, n, 2), in_c(e, n, 3), double_c(e, eps), y);
        break;
    }
    case OP_GROUP_NORM:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "group_norm", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd),
                   i64_c(e, attr_int(n, "num_groups", 1)), in_c(e, n, 0), param_dtype_c(n, 2, 3), in_c(e, n, 2),
                   in_c(e, n, 3), double_c(e, eps), y);
        break;
    case OP_BATCH_NORM: {
        if (attr_bool(n, "training", false)) {
            if (!c->train) {
                unsupported(e, n, "training=true normalises with batch statistics and updates the running ones, "
                                  "which a model without a train section does not do; pass training=false");
                return;
            }
            /* the training step: batch statistics, running ones updated; the
             * inference forward of a model that trains is evaluation mode
             * (model.eval()): the running statistics, below */
            if (emit_batch_norm_train(e, n, y, eps))
                return;
        }
        /* [N, C, ...] or [N, C]; one sample of [C] is not PyTorch's either */
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "batch_norm", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), in_c(e, n, 0),
                   param_dtype_c(n, 1, 4), in_c(e, n, 1), in_c(e, n, 2), in_c(e, n, 3), in_c(e, n, 4),
                   double_c(e, eps), y);
        break;
    }
    default:
        ICE("not a norm: %s", n->op->name);
    }
}

/* ---- losses ------------------------------------------------------------------- */

const char *const reduction_enum[] = {"AMP_REDUCTION_NONE", "AMP_REDUCTION_MEAN", "AMP_REDUCTION_SUM"};

/* A pointwise loss's scalar parameters and weight operand (-1: none);
 * false, with an error, for a form without a kernel. */
bool loss_params(Emitter *e, Node *n, double *p, int *kweight)
{
    double p0 = 0, p1 = 0, p2 = 0;
    if (attr_int(n, "reduction_code", 0) > 2) {
        unsupported(e, n, "reduction=\"batchmean\" has no runtime kernel yet; use \"sum\" and divide by the batch");
        return false;
    }
    if (!shape_equal(in_shape(n, 0), in_shape(n, 1))) {
        unsupported(e, n, "input and target must have the same shape (broadcasting a target is deprecated in PyTorch)");
        return false;
    }
    int kw = op_param_index(n->op, "weight");
    if (kw >= 0 && n->in[kw] && !shape_equal(in_shape(n, kw), in_shape(n, 0))) {
        unsupported(e, n, "a weight of another shape than the input has no runtime kernel yet");
        return false;
    }
    int kp = op_param_index(n->op, "pos_weight");
    if (kp >= 0 && n->in[kp]) {
        unsupported(e, n, "pos_weight has no runtime kernel yet");
        return false;
    }
    switch (n->op->id) {
    case OP_SMOOTH_L1_LOSS: p0 = attr_number(n, "beta", "1.0", DT_F64); break;
    case OP_HUBER_LOSS: p0 = attr_number(n, "delta", "1.0", DT_F64); break;
    case OP_KL_DIV: p0 = attr_bool(n, "log_target", false); break;
    case OP_HINGE_EMBEDDING_LOSS: p0 = attr_number(n, "margin", "1.0", DT_F64); break;
    case OP_POISSON_NLL_LOSS:
        p0 = attr_bool(n, "log_input", true);
        p1 = attr_bool(n, "full", false);
        p2 = attr_number(n, "eps", "1e-08", DT_F64);
        break;
    default: break;
    }
    p[0] = p0;
    p[1] = p1;
    p[2] = p2;
    *kweight = kw;
    return true;
}

static void emit_pointwise_loss(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    double p[3];
    int kw;
    if (!loss_params(e, n, p, &kw))
        return;
    double p0 = p[0], p1 = p[1], p2 = p[2];
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, n->op->name, t),
               numel_c(e, in_shape(n, 0)), in_c(e, n, 0), in_c(e, n, 1), kw >= 0 ? in_c(e, n, kw) : "NULL",
               double_c(e, p0), double_c(e, p1), double_c(e, p2), reduction_enum[attr_int(n, "reduction_code", 0)], y);
}

/* [N, C, d...] -> N, C, inner; [C] (one sample) -> 1, C, 1. */
void class_split(Emitter *e, const Shape *s, const char **N, const char **C, const char **inner)
{
    if (s->ndim == 1) {
        *N = "1";
        *C = poly_c(e, s->dims[0]);
        *inner = "1";
        return;
    }
    *N = poly_c(e, s->dims[0]);
    *C = poly_c(e, s->dims[1]);
    *inner = dims_product(e, s, 2, s->ndim);
}

static void emit_class_loss(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const char *N, *C, *inner;
    class_split(e, in_shape(n, 0), &N, &C, &inner);
    int64_t ignore = attr_int(n, "ignore_index", -100);
    const char *weight = in_c(e, n, 2);
    if (n->op->id == OP_CROSS_ENTROPY) {
        double smoothing = attr_number(n, "label_smoothing", "0.0", DT_F64);
        if (in_dtype(n, 1) != DT_I64) {
            buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "cross_entropy_prob", t), N,
                       C, inner, in_c(e, n, 0), in_c(e, n, 1), weight, double_c(e, smoothing),
                       reduction_enum[attr_int(n, "reduction_code", 0)], y);
            return;
        }
        emit_checked(e, "    ", arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                                             kernel(e, "cross_entropy", t), N, C, inner, in_c(e, n, 0), in_c(e, n, 1),
                                             weight, i64_c(e, ignore), double_c(e, smoothing),
                                             reduction_enum[attr_int(n, "reduction_code", 0)], y));
        return;
    }
    /* nll_loss over [N, C, d...], and nll_loss2d */
    emit_checked(e, "    ", arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s)", kernel(e, "nll_loss_nd", t),
                                         N, C, inner, in_c(e, n, 0), in_c(e, n, 1), weight, i64_c(e, ignore),
                                         reduction_enum[attr_int(n, "reduction_code", 0)], y));
}

/* ---- convolution, pooling, upsampling ------------------------------------------ */

int spatial_dims_of(OpId id)
{
    switch (id) {
    case OP_CONV1D: case OP_CONV_TRANSPOSE1D: case OP_UPSAMPLE_NEAREST1D: case OP_UPSAMPLE_LINEAR1D:
        return 1;
    case OP_CONV3D: case OP_CONV_TRANSPOSE3D: case OP_MAX_POOL3D: case OP_AVG_POOL3D: case OP_ADAPTIVE_AVG_POOL3D:
    case OP_UPSAMPLE_NEAREST3D: case OP_UPSAMPLE_TRILINEAR3D:
        return 3;
    default:
        return 2;
    }
}

/* One int per spatial dim, as C: "{3, 3}" from one int argument. */
const char *repeat3(Emitter *e, int64_t v, int ns)
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

/* Opens a block declaring `amp_conv_desc d` for conv node n; false (and an
 * error) if the padding has no kernel. */
bool emit_conv_desc(Emitter *e, Node *n)
{
    OpId id = n->op->id;
    bool transposed = conv_is_transposed(n);
    const Shape *sx = in_shape(n, 0), *sw = in_shape(n, 1), *so = out_shape(n);
    int ns = id == OP_CONVOLUTION ? sw->ndim - 2 : spatial_dims_of(id);
    int64_t groups = attr_int(n, "groups", 1);
    int64_t stride = attr_int(n, "stride", 1), dil = attr_int(n, "dilation", 1);
    int64_t outpad = transposed ? attr_int(n, "output_padding", 0) : 0;
    int64_t pad[3] = {0, 0, 0};
    if (attr_kind(n, "padding", ATTR_NONE) == ATTR_STR) {
        if (strcmp(attr_str(n, "padding", ""), "same") == 0) {
            /* PyTorch pads total = dilation * (k - 1), the extra one on the
             * right; the kernel pads symmetrically, so odd totals need work */
            for (int i = 0; i < ns; i++) {
                int64_t k;
                if (!poly_is_const(sw->dims[sw->ndim - ns + i], &k) || (dil * (k - 1)) % 2)
                    return unsupported(e, n, "padding=\"same\" with an even effective kernel size has no runtime kernel yet");
                pad[i] = dil * (k - 1) / 2;
            }
        }
    } else {
        int64_t p = attr_int(n, "padding", 0);
        for (int i = 0; i < ns; i++)
            pad[i] = p;
    }
    open_block(e);
    buf_printf(e->out, "        static const amp_conv_desc conv = {\n");
    buf_printf(e->out, "            .nspatial = %d, .groups = %s,\n", ns, i64_c(e, groups));
    buf_printf(e->out, "            .kernel = %s, .stride = %s, .padding = %s,\n", spatial_array(e, sw, ns),
               repeat3(e, stride, ns), i64_array(e, pad, 3));
    buf_printf(e->out, "            .dilation = %s, .output_padding = %s,\n        };\n", repeat3(e, dil, ns),
               repeat3(e, outpad, ns));
    buf_printf(e->out, "        amp_conv_desc d = conv;\n");
    buf_printf(e->out, "        d.batch = %s;\n", batch_of(e, sx, ns));
    buf_printf(e->out, "        d.in_channels = %s;\n", poly_c(e, sx->dims[sx->ndim - ns - 1]));
    buf_printf(e->out, "        d.out_channels = %s;\n", poly_c(e, so->dims[so->ndim - ns - 1]));
    for (int i = 0; i < ns; i++) {
        buf_printf(e->out, "        d.in_size[%d] = %s;\n", i, poly_c(e, sx->dims[sx->ndim - ns + i]));
        buf_printf(e->out, "        d.out_size[%d] = %s;\n", i, poly_c(e, so->dims[so->ndim - ns + i]));
    }
    return true;
}

bool conv_weights_preparable(const Node *n, Value **src)
{
    DType t = n->out->type.dtype;
    OpId id = n->op->id;
    if (!(id == OP_CONV1D || id == OP_CONV2D || id == OP_CONV3D || id == OP_CONVOLUTION) ||
        conv_is_transposed((Node *)n) || !(t == DT_F32 || t == DT_BF16 || t == DT_F16) || !n->in[1])
        return false;
    Value *w = n->in[1];
    if (w->kind == V_TEMP && w->def && w->def->op->id == OP_CAST && w->def->in[0]->type.dtype == DT_F32)
        w = w->def->in[0];
    else if (w->type.dtype != t)
        return false;
    if (w->kind != V_PARAM && w->kind != V_BUFFER)
        return false;
    const Shape *sx = in_shape((Node *)n, 0), *sw = &w->type.shape;
    int ns = id == OP_CONVOLUTION ? sw->ndim - 2 : spatial_dims_of(id);
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
    int ns = n->op->id == OP_CONVOLUTION ? sw->ndim - 2 : spatial_dims_of(n->op->id);
    buf_printf(e->out, "        const amp_conv_desc d = {\n");
    buf_printf(e->out, "            .nspatial = %d, .groups = %s, .kernel = %s,\n", ns,
               i64_c(e, attr_int(n, "groups", 1)), spatial_array(e, sw, ns));
    buf_printf(e->out, "            .in_channels = %s, .out_channels = %s,\n        };\n",
               poly_c(e, sx->dims[sx->ndim - ns - 1]), poly_c(e, sw->dims[0]));
}

/* The packed weights of convolution n in the prepared block, as C ("NULL"
 * when its weights are not prepared). */
static const char *packed_weights_c(Emitter *e, const Node *n)
{
    int k = e->prep_packed ? e->prep_packed[n->out->id] : -1;
    return k < 0 ? "NULL" : arena_printf(e->c->arena, "%s_prepared_entry_(prepared, %d)", e->prefix, k);
}

static void emit_conv(Emitter *e, Node *n, const char *y)
{
    bool transposed = conv_is_transposed(n);
    if (!emit_conv_desc(e, n))
        return;
    if (!transposed && e->prep_packed && e->prep_packed[n->out->id] >= 0)
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s, NULL, %s);\n", kernel(e, "conv_ex", n->out->type.dtype),
                   in_c(e, n, 0), in_c(e, n, 1), packed_weights_c(e, n), in_c(e, n, 2), y);
    else
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s);\n",
                   kernel(e, transposed ? "conv_transpose" : "conv", n->out->type.dtype), in_c(e, n, 0),
                   in_c(e, n, 1), in_c(e, n, 2), y);
    close_block(e);
}

void emit_fused_conv(Emitter *e, Node *last, const char *y)
{
    Node *conv = last->fused[0], *bn = last->fused[1];
    Value *residual = fused_residual(last);
    if (!emit_conv_desc(e, conv))
        return;
    buf_printf(e->out, "        const amp_conv_post post = {\n");
    buf_printf(e->out, "            .bn_mean = %s, .bn_var = %s,\n", in_c(e, bn, 1), in_c(e, bn, 2));
    buf_printf(e->out, "            .bn_weight = %s, .bn_bias = %s,\n", in_c(e, bn, 3), in_c(e, bn, 4));
    buf_printf(e->out, "            .bn_dtype = %s, .bn_eps = %s,\n", param_dtype_c(bn, 1, 4),
               double_c(e, attr_number(bn, "eps", "1e-05", DT_F64)));
    buf_printf(e->out, "            .residual = %s, .relu = %d,\n", residual ? e->cname[residual->id] : "NULL",
               last->fused[3] != NULL);
    if (last->fused_raw) /* the convolution's own result too, for the gradients */
        buf_printf(e->out, "            .raw = %s,\n", e->cname[conv->out->id]);
    buf_printf(e->out, "        };\n");
    buf_printf(e->out, "        %s(&d, %s, %s, %s, %s, &post, %s);\n", kernel(e, "conv_ex", conv->out->type.dtype),
               in_c(e, conv, 0), in_c(e, conv, 1), packed_weights_c(e, conv), in_c(e, conv, 2), y);
    close_block(e);
}

static void emit_conv_tbc(Emitter *e, Node *n, const char *y)
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

/* Opens a block declaring `amp_pool_desc d` for max/avg pool node n. */
void emit_pool_desc(Emitter *e, Node *n)
{
    OpId id = n->op->id;
    int ns = spatial_dims_of(id);
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    bool is_max = id == OP_MAX_POOL2D || id == OP_MAX_POOL3D;
    int64_t k = attr_int(n, "kernel_size", 1);
    int64_t stride = attr_int(n, "stride", k), pad = attr_int(n, "padding", 0);
    int64_t dil = is_max ? attr_int(n, "dilation", 1) : 1;
    open_block(e);
    buf_printf(e->out, "        static const amp_pool_desc pool = {\n");
    buf_printf(e->out, "            .nspatial = %d, .kernel = %s, .stride = %s,\n", ns, repeat3(e, k, ns),
               repeat3(e, stride, ns));
    buf_printf(e->out, "            .padding = %s, .dilation = %s,\n", repeat3(e, pad, ns), repeat3(e, dil, ns));
    if (!is_max) {
        int64_t div = 0;
        if (attr_given(n, "divisor_override"))
            div = attr_int(n, "divisor_override", 0);
        buf_printf(e->out, "            .count_include_pad = %d, .divisor_override = %s,\n",
                   attr_bool(n, "count_include_pad", true), i64_c(e, div));
    }
    buf_puts(e->out, "        };\n        amp_pool_desc d = pool;\n");
    buf_printf(e->out, "        d.planes = %s;\n", planes_of(e, sx, ns));
    for (int i = 0; i < ns; i++) {
        buf_printf(e->out, "        d.in_size[%d] = %s;\n", i, poly_c(e, sx->dims[sx->ndim - ns + i]));
        buf_printf(e->out, "        d.out_size[%d] = %s;\n", i, poly_c(e, so->dims[so->ndim - ns + i]));
    }
}

static void emit_pool(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    OpId id = n->op->id;
    int ns = spatial_dims_of(id);
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    if (id == OP_ADAPTIVE_AVG_POOL2D || id == OP_ADAPTIVE_AVG_POOL3D) {
        open_block(e);
        buf_printf(e->out, "        const int64_t in_size[] = %s;\n", spatial_array(e, sx, ns));
        buf_printf(e->out, "        const int64_t out_size[] = %s;\n", spatial_array(e, so, ns));
        buf_printf(e->out, "        %s(%d, %s, in_size, out_size, %s, %s);\n", kernel(e, "adaptive_avg_pool", t), ns,
                   planes_of(e, sx, ns), in_c(e, n, 0), y);
        close_block(e);
        return;
    }
    bool is_max = id == OP_MAX_POOL2D || id == OP_MAX_POOL3D;
    emit_pool_desc(e, n);
    if (is_max)
        buf_printf(e->out, "        %s(&d, %s, %s, %s);\n", kernel(e, "max_pool", t), in_c(e, n, 0), y,
                   n->nmore ? e->cname[n->more_out[0]->id] : "NULL");
    else
        buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "avg_pool", t), in_c(e, n, 0), y);
    close_block(e);
}

static void emit_upsample(Emitter *e, Node *n, const char *y)
{
    OpId id = n->op->id;
    int ns = spatial_dims_of(id);
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    bool nearest = id == OP_UPSAMPLE_NEAREST1D || id == OP_UPSAMPLE_NEAREST2D || id == OP_UPSAMPLE_NEAREST3D;
    const char *mode = nearest ? "AMP_UPSAMPLE_NEAREST" : id == OP_UPSAMPLE_BICUBIC2D ? "AMP_UPSAMPLE_CUBIC"
                                                                                       : "AMP_UPSAMPLE_LINEAR";
    double scale = 0;
    if (attr_given(n, "scale_factors"))
        scale = attr_number(n, "scale_factors", "0", DT_F64);
    open_block(e);
    buf_printf(e->out, "        amp_upsample_desc d = {0};\n        d.nspatial = %d;\n        d.planes = %s;\n", ns,
               planes_of(e, sx, ns));
    buf_printf(e->out, "        d.mode = %s;\n        d.align_corners = %d;\n", mode,
               nearest ? 0 : attr_bool(n, "align_corners", false));
    for (int i = 0; i < ns; i++) {
        buf_printf(e->out, "        d.in_size[%d] = %s;\n", i, poly_c(e, sx->dims[sx->ndim - ns + i]));
        buf_printf(e->out, "        d.out_size[%d] = %s;\n", i, poly_c(e, so->dims[so->ndim - ns + i]));
        buf_printf(e->out, "        d.scale[%d] = %s;\n", i, double_c(e, scale));
    }
    buf_printf(e->out, "        %s(&d, %s, %s);\n", kernel(e, "upsample", n->out->type.dtype), in_c(e, n, 0), y);
    close_block(e);
}

/* ---- indexing --------------------------------------------------------------- */

static void emit_index(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const char *call;
    switch (n->op->id) {
    case OP_EMBEDDING: {
        const Shape *sw = in_shape(n, 1);
        call = arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s)", kernel(e, "embedding", t),
                            numel_c(e, in_shape(n, 0)), poly_c(e, sw->dims[0]), poly_c(e, sw->dims[1]), in_c(e, n, 1),
                            in_c(e, n, 0), y);
        break;
    }
    case OP_INDEX_SELECT: {
        const char *outer, *len, *inner;
        axis_split(e, in_shape(n, 0), attr_int(n, "axis", 0), &outer, &len, &inner);
        call = arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s)", kernel(e, "index_select", t), outer, len, inner,
                            numel_c(e, in_shape(n, 2)), in_c(e, n, 0), in_c(e, n, 2), y);
        break;
    }
    case OP_INDEX_COPY: {
        const char *outer, *len, *inner;
        int64_t d = attr_int(n, "axis", 0);
        axis_split(e, in_shape(n, 0), d, &outer, &len, &inner);
        buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0),
                   numel_c(e, in_shape(n, 0)), y);
        call = arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s)", kernel(e, "index_copy", t), outer, len, inner,
                            numel_c(e, in_shape(n, 2)), in_c(e, n, 2), in_c(e, n, 3), y);
        break;
    }
    case OP_GATHER:
    case OP_SCATTER_ADD: {
        const Shape *sx = in_shape(n, 0), *si = in_shape(n, 2);
        if (sx->ndim != si->ndim || sx->ndim == 0) {
            unsupported(e, n, "0-dim operands have no runtime kernel yet");
            return;
        }
        /* amp_scatter_add reads src laid out as index (it has no src
         * shape); PyTorch allows a larger src and reads its leading
         * index-shaped block, which the kernel would read at the wrong
         * offsets: refuse rather than compute something else. */
        if (n->op->id == OP_SCATTER_ADD && !shape_equal(in_shape(n, 3), si)) {
            unsupported(e, n, "a src larger than index has no runtime kernel yet");
            return;
        }
        open_block(e);
        buf_printf(e->out, "        const int64_t index_shape[] = %s;\n", shape_array(e, si));
        buf_printf(e->out, "        const int64_t x_shape[] = %s;\n", shape_array(e, sx));
        if (n->op->id == OP_GATHER)
            call = arena_printf(c->arena, "%s(%d, index_shape, %d, %s, x_shape, %s, %s)", kernel(e, "gather", t),
                                sx->ndim, (int)attr_int(n, "axis", 0), in_c(e, n, 0), in_c(e, n, 2), y);
        else {
            buf_printf(e->out, "        memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0),
                       numel_c(e, sx), y);
            call = arena_printf(c->arena, "%s(%d, index_shape, %d, %s, %s, x_shape, %s)", kernel(e, "scatter_add", t),
                                sx->ndim, (int)attr_int(n, "axis", 0), in_c(e, n, 2), in_c(e, n, 3), y);
        }
        emit_checked(e, "        ", call);
        close_block(e);
        return;
    }
    default:
        ICE("not an index op: %s", n->op->name);
    }
    emit_checked(e, "    ", call);
}

/* ---- matrix products ------------------------------------------------------------ */


void emit_gemm_call(Emitter *e, DType t, const Gemm *g, const char *y)
{
    open_block(e);
    buf_printf(e->out, "        amp_gemm_desc d = {0};\n");
    buf_printf(e->out, "        d.batch = %s;\n        d.M = %s;\n        d.N = %s;\n        d.K = %s;\n", g->batch, g->M,
               g->N, g->K);
    for (int i = 0; i < 3; i++)
        buf_printf(e->out, "        d.a_stride[%d] = %s;\n        d.b_stride[%d] = %s;\n", i, g->a[i], i, g->b[i]);
    if (g->C)
        for (int i = 0; i < 3; i++)
            buf_printf(e->out, "        d.c_stride[%d] = %s;\n", i, g->cs[i]);
    buf_printf(e->out, "        d.alpha = %s;\n        d.beta = %s;\n        d.sum_batch = %d;\n", double_c(e, g->alpha),
               double_c(e, g->beta), g->sum_batch);
    if (g->relu_y) /* fuse.c: the relu's gradient in the product's epilogue */
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s);\n", kernel(e, "gemm_relu_backward", t), g->A, g->B, g->relu_y, y);
    else
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s);\n", kernel(e, "gemm", t), g->A, g->B, g->C ? g->C : "NULL", y);
    close_block(e);
}

/* Strides of C (the added input) broadcast to [M, N] (batch: `batched`). */
static void added_strides(Emitter *e, const Shape *s, const Shape *out, const char **cs)
{
    const char *st[MAX_DIMS];
    broadcast_strides(e, s, out, st);
    int nd = out->ndim;
    cs[0] = nd == 3 ? st[0] : "0";
    cs[1] = nd >= 2 ? st[nd - 2] : "0";
    cs[2] = nd >= 1 ? st[nd - 1] : "0";
    if (nd == 1) { /* addmv: y [M], C as [M, 1] */
        cs[1] = st[0];
        cs[2] = "0";
    }
}

static void emit_mm(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype, ct = compute_dtype(t);
    OpId id = n->op->id;
    Gemm g = {.batch = "1", .alpha = 1, .beta = 0};
    bool added = id == OP_ADDMM || id == OP_BADDBMM || id == OP_ADDBMM || id == OP_ADDMV || id == OP_ADDR;
    int a = added ? 1 : 0, b = a + 1;
    const Shape *sa = in_shape(n, a), *sb = in_shape(n, b);
    if (added) {
        g.alpha = attr_number(n, "alpha", "1", ct);
        g.beta = attr_number(n, "beta", "1", ct);
        g.C = in_c(e, n, 0);
    }
    g.A = in_c(e, n, a);
    g.B = in_c(e, n, b);
    switch (id) {
    case OP_MM:
    case OP_ADDMM:
        g.M = poly_c(e, sa->dims[0]);
        g.K = poly_c(e, sa->dims[1]);
        g.N = poly_c(e, sb->dims[1]);
        g.a[0] = "0", g.a[1] = g.K, g.a[2] = "1";
        g.b[0] = "0", g.b[1] = g.N, g.b[2] = "1";
        break;
    case OP_BMM:
    case OP_BADDBMM:
    case OP_ADDBMM:
        g.batch = poly_c(e, sa->dims[0]);
        g.M = poly_c(e, sa->dims[1]);
        g.K = poly_c(e, sa->dims[2]);
        g.N = poly_c(e, sb->dims[2]);
        g.a[0] = arena_printf(c->arena, "%s * %s", g.M, g.K), g.a[1] = g.K, g.a[2] = "1";
        g.b[0] = arena_printf(c->arena, "%s * %s", g.K, g.N), g.b[1] = g.N, g.b[2] = "1";
        g.sum_batch = id == OP_ADDBMM;
        break;
    case OP_MV:
    case OP_ADDMV:
        g.M = poly_c(e, sa->dims[0]);
        g.K = poly_c(e, sa->dims[1]);
        g.N = "1";
        g.a[0] = "0", g.a[1] = g.K, g.a[2] = "1";
        g.b[0] = "0", g.b[1] = "1", g.b[2] = "0";
        break;
    case OP_ADDR:
        g.M = poly_c(e, sa->dims[0]);
        g.N = poly_c(e, sb->dims[0]);
        g.K = "1";
        g.a[0] = "0", g.a[1] = "1", g.a[2] = "0";
        g.b[0] = "0", g.b[1] = "0", g.b[2] = "1";
        break;
    case OP_DOT:
    case OP_VDOT:
        g.M = g.N = "1";
        g.K = poly_c(e, sa->dims[0]);
        g.a[0] = "0", g.a[1] = "0", g.a[2] = "1";
        g.b[0] = "0", g.b[1] = "1", g.b[2] = "0";
        break;
    default:
        ICE("not a matrix product: %s", n->op->name);
    }
    if (added) {
        Shape full = *out_shape(n);
        if (id == OP_ADDBMM) { /* C is [M, N] against the summed result */
            full.ndim = 2;
        }
        added_strides(e, in_shape(n, 0), &full, g.cs);
    }
    emit_gemm_call(e, t, &g, y);
}

/* einsum, tensordot, bilinear, chain_matmul/multi_dot, linalg_vecdot: one
 * contraction over an index space (amp_contract). */
typedef struct Contraction {
    int n_index, n_out, n_ops;
    const char *size[MAX_CONTRACT_INDEX];
    const char *stride[4][MAX_CONTRACT_INDEX];
    const char *operand[4];
} Contraction;

static int add_index(Contraction *k, const char *size, bool out)
{
    (void)out;
    int i = k->n_index++;
    k->size[i] = size;
    for (int o = 0; o < 4; o++)
        k->stride[o][i] = "0";
    return i;
}

static void emit_contract_call(Emitter *e, DType t, Contraction *k, const char *y)
{
    open_block(e);
    buf_printf(e->out, "        amp_contract_desc d = {0};\n");
    buf_printf(e->out, "        const %s *operands[%d];\n", dtype_c_type(t), k->n_ops);
    buf_printf(e->out, "        d.n_index = %d;\n        d.n_out = %d;\n        d.n_operands = %d;\n", k->n_index,
               k->n_out, k->n_ops);
    for (int i = 0; i < k->n_index; i++)
        buf_printf(e->out, "        d.size[%d] = %s;\n", i, k->size[i]);
    for (int o = 0; o < k->n_ops; o++) {
        buf_printf(e->out, "        operands[%d] = %s;\n", o, k->operand[o]);
        for (int i = 0; i < k->n_index; i++)
            if (strcmp(k->stride[o][i], "0") != 0)
                buf_printf(e->out, "        d.stride[%d][%d] = %s;\n", o, i, k->stride[o][i]);
    }
    buf_printf(e->out, "        %s(&d, operands, %s);\n", kernel(e, "contract", t), y);
    close_block(e);
}

static void emit_einsum(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    const char *s = attr_str(n, "equation", "");
    Contraction k = {0};
    int letter_index[128];
    for (int i = 0; i < 128; i++)
        letter_index[i] = -1;
    if (strchr(s, '.')) {
        unsupported(e, n, "an equation with ... has no runtime kernel yet");
        return;
    }
    const char *arrow = strstr(s, "->");
    /* operands' subscripts, in order */
    const char *subs[4];
    int nsubs[4];
    int nops = 0;
    const char *p = s;
    while (nops < 4) {
        subs[nops] = p;
        while (*p && *p != ',' && *p != '-')
            p++;
        nsubs[nops] = 0;
        for (const char *q = subs[nops]; q < p; q++)
            nsubs[nops] += *q != ' ';
        nops++;
        if (*p != ',')
            break;
        p++;
    }
    if (nops > 4 || nops + 1 > n->nin + 1) {
        unsupported(e, n, "more than four operands has no runtime kernel yet");
        return;
    }
    /* output letters: after ->, or every letter seen once, sorted */
    char outl[64];
    int nout = 0;
    if (arrow) {
        for (const char *q = arrow + 2; *q; q++)
            if (*q != ' ')
                outl[nout++] = *q;
    } else {
        int count[128] = {0};
        for (const char *q = s; *q; q++)
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
                count[(int)*q]++;
        for (int ch = 'A'; ch <= 'z'; ch++)
            if (count[ch] == 1)
                outl[nout++] = (char)ch;
    }
    k.n_ops = nops;
    /* sizes of every letter, from the operands' shapes */
    const char *letter_size[128] = {0};
    for (int o = 0; o < nops; o++) {
        const Shape *so = in_shape(n, o + 1);
        int d = 0;
        for (const char *q = subs[o]; d < so->ndim && *q && *q != ',' && *q != '-'; q++)
            if (*q != ' ')
                letter_size[(int)*q] = poly_c(e, so->dims[d++]);
    }
    for (int i = 0; i < nout; i++)
        letter_index[(int)outl[i]] = add_index(&k, letter_size[(int)outl[i]], true);
    k.n_out = nout;
    for (int o = 0; o < nops; o++)
        for (const char *q = subs[o]; *q && *q != ',' && *q != '-'; q++)
            if (*q != ' ' && letter_index[(int)*q] < 0)
                letter_index[(int)*q] = add_index(&k, letter_size[(int)*q], false);
    if (k.n_index > MAX_CONTRACT_INDEX) {
        unsupported(e, n, "more than 16 distinct indices");
        return;
    }
    for (int o = 0; o < nops; o++) {
        const Shape *so = in_shape(n, o + 1);
        const char *st[MAX_DIMS];
        contiguous_strides(e, so, st);
        int d = 0;
        for (const char *q = subs[o]; *q && *q != ',' && *q != '-'; q++) {
            if (*q == ' ')
                continue;
            int i = letter_index[(int)*q];
            /* a letter repeated in one operand walks its diagonal */
            k.stride[o][i] = strcmp(k.stride[o][i], "0") == 0 ? st[d]
                                                              : arena_printf(c->arena, "%s + %s", k.stride[o][i], st[d]);
            d++;
        }
        k.operand[o] = in_c(e, n, o + 1);
    }
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

static void emit_tensordot(Emitter *e, Node *n, const char *y)
{
    const Shape *sa = in_shape(n, 0), *sb = in_shape(n, 1);
    int64_t nd = attr_int(n, "dims", 2);
    Contraction k = {.n_ops = 2};
    const char *sta[MAX_DIMS], *stb[MAX_DIMS];
    contiguous_strides(e, sa, sta);
    contiguous_strides(e, sb, stb);
    for (int d = 0; d < sa->ndim - nd; d++) {
        int i = add_index(&k, poly_c(e, sa->dims[d]), true);
        k.stride[0][i] = sta[d];
    }
    for (int d = (int)nd; d < sb->ndim; d++) {
        int i = add_index(&k, poly_c(e, sb->dims[d]), true);
        k.stride[1][i] = stb[d];
    }
    k.n_out = k.n_index;
    for (int j = 0; j < nd; j++) {
        int i = add_index(&k, poly_c(e, sb->dims[j]), false);
        k.stride[0][i] = sta[sa->ndim - nd + j];
        k.stride[1][i] = stb[j];
    }
    k.operand[0] = in_c(e, n, 0);
    k.operand[1] = in_c(e, n, 1);
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

/* chain_matmul / linalg_multi_dot: A1 A2 ... An (n <= 4) as one contraction. */
static void emit_multi_dot(Emitter *e, Node *n, const char *y)
{
    int nops = 0;
    for (int k = 0; k < n->nin; k++)
        nops += n->in[k] != NULL;
    if (nops > 4) {
        unsupported(e, n, "more than four matrices has no runtime kernel yet");
        return;
    }
    if (nops == 1) {
        buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0),
                   numel_c(e, out_shape(n)), y);
        return;
    }
    Contraction k = {.n_ops = nops};
    /* vectors at the ends (multi_dot) are rows or columns */
    const Shape *first = in_shape(n, 0), *last = in_shape(n, nops - 1);
    int rows = first->ndim == 2 ? add_index(&k, poly_c(e, first->dims[0]), true) : -1;
    int cols = last->ndim == 2 ? add_index(&k, poly_c(e, last->dims[1]), true) : -1;
    k.n_out = k.n_index;
    int prev = rows;
    for (int o = 0; o < nops; o++) {
        const Shape *s = in_shape(n, o);
        k.operand[o] = in_c(e, n, o);
        int inner = o + 1 < nops ? add_index(&k, poly_c(e, s->dims[s->ndim - 1]), false) : cols;
        if (s->ndim == 2) {
            if (prev >= 0)
                k.stride[o][prev] = poly_c(e, s->dims[1]);
            if (inner >= 0)
                k.stride[o][inner] = "1";
        } else {
            k.stride[o][o == 0 ? inner : prev] = "1";
        }
        prev = inner;
    }
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

static void emit_bilinear(Emitter *e, Node *n, const char *y)
{
    const Shape *s1 = in_shape(n, 0), *sw = in_shape(n, 2), *so = out_shape(n);
    Contraction k = {.n_ops = 3};
    const char *batch = dims_product(e, s1, 0, s1->ndim - 1);
    const char *in1 = poly_c(e, sw->dims[1]), *in2 = poly_c(e, sw->dims[2]);
    int b = add_index(&k, batch, true), o = add_index(&k, poly_c(e, sw->dims[0]), true);
    k.n_out = 2;
    int i = add_index(&k, in1, false), j = add_index(&k, in2, false);
    k.stride[0][b] = in1, k.stride[0][i] = "1";
    k.stride[1][b] = in2, k.stride[1][j] = "1";
    k.stride[2][o] = arena_printf(e->c->arena, "%s * %s", in1, in2), k.stride[2][i] = in2, k.stride[2][j] = "1";
    k.operand[0] = in_c(e, n, 0), k.operand[1] = in_c(e, n, 1), k.operand[2] = in_c(e, n, 2);
    emit_contract_call(e, n->out->type.dtype, &k, y);
    if (n->in[3]) {
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        const char *ys[MAX_DIMS];
        contiguous_strides(e, so, ys);
        buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", c_array(e, ys, so->ndim));
        buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, in_shape(n, 3), so));
        buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s);\n",
                   kernel(e, "add_bcast", n->out->type.dtype), so->ndim, y, in_c(e, n, 3), y);
        close_block(e);
    }
}

static void emit_vecdot(Emitter *e, Node *n, const char *y)
{
    const Shape *so = out_shape(n), *sa = in_shape(n, 0), *sb = in_shape(n, 1);
    int64_t dim = attr_int(n, "dim", -1);
    Shape full = *sa; /* the broadcast operand shape: output dims plus dim */
    (void)sb;
    int nd = full.ndim;
    if (dim < 0)
        dim += nd;
    if (!shape_equal(sa, sb)) {
        unsupported(e, n, "broadcasting operands have no runtime kernel yet");
        return;
    }
    Contraction k = {.n_ops = 2};
    const char *st[MAX_DIMS];
    contiguous_strides(e, sa, st);
    for (int d = 0; d < nd; d++) {
        if (d == dim)
            continue;
        int i = add_index(&k, poly_c(e, full.dims[d]), true);
        k.stride[0][i] = k.stride[1][i] = st[d];
    }
    k.n_out = k.n_index;
    int i = add_index(&k, poly_c(e, full.dims[dim]), false);
    k.stride[0][i] = k.stride[1][i] = st[dim];
    k.operand[0] = in_c(e, n, 0), k.operand[1] = in_c(e, n, 1);
    (void)so;
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

static void emit_sdpa(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    const Shape *sq = in_shape(n, 0), *sk = in_shape(n, 1), *sv = in_shape(n, 2);
    int nq = sq->ndim;
    if (attr_number(n, "dropout_p", "0.0", DT_F64) != 0) {
        unsupported(e, n, "dropout_p must be 0: the compiled forward is inference");
        return;
    }
    const char *batch = dims_product(e, sq, 0, nq - 2);
    /* operands with all the batch dims advance by a matrix; a 2-D operand is shared */
    const char *strides[4];
    const Shape *ops[4] = {sq, sk, sv, n->in[3] ? in_shape(n, 3) : NULL};
    Shape qbatch = {0};
    for (int i = 0; i < nq - 2; i++)
        qbatch.dims[qbatch.ndim++] = sq->dims[i];
    for (int k = 0; k < 4; k++) {
        const Shape *s = ops[k];
        if (!s) {
            strides[k] = "0";
            continue;
        }
        Shape bs = {0};
        for (int i = 0; i + 2 < s->ndim; i++)
            bs.dims[bs.ndim++] = s->dims[i];
        int64_t one;
        Poly *bn = shape_numel(c, &bs);
        if (bs.ndim == 0 || (poly_is_const(bn, &one) && one == 1))
            strides[k] = "0";
        else if (poly_equal(bn, shape_numel(c, &qbatch)))
            strides[k] = dims_product(e, s, s->ndim - 2, s->ndim);
        else {
            unsupported(e, n, "partly broadcast batch dimensions have no runtime kernel yet");
            return;
        }
    }
    double scale = 0;
    bool given = attr_given(n, "scale");
    if (given)
        scale = attr_number(n, "scale", "1", DT_F64);
    bool bool_mask = n->in[3] && in_dtype(n, 3) == DT_BOOL;
    open_block(e);
    buf_printf(e->out, "        amp_sdpa_desc d = {0};\n");
    buf_printf(e->out, "        d.batch = %s;\n        d.L = %s;\n        d.S = %s;\n        d.E = %s;\n        d.Ev = %s;\n",
               batch, poly_c(e, sq->dims[nq - 2]), poly_c(e, sk->dims[sk->ndim - 2]), poly_c(e, sq->dims[nq - 1]),
               poly_c(e, sv->dims[sv->ndim - 1]));
    buf_printf(e->out, "        d.q_batch_stride = %s;\n        d.k_batch_stride = %s;\n", strides[0], strides[1]);
    buf_printf(e->out, "        d.v_batch_stride = %s;\n        d.mask_batch_stride = %s;\n", strides[2], strides[3]);
    if (given)
        buf_printf(e->out, "        d.scale = %s;\n", double_c(e, scale));
    else
        buf_puts(e->out, "        d.scale = 1.0 / sqrt((double)d.E);\n");
    buf_printf(e->out, "        d.is_causal = %d;\n", attr_bool(n, "is_causal", false));
    buf_printf(e->out, "        %s(&d, %s, %s, %s, %s, %s, %s);\n", kernel(e, "sdpa", n->out->type.dtype), in_c(e, n, 0),
               in_c(e, n, 1), in_c(e, n, 2), n->in[3] && !bool_mask ? in_c(e, n, 3) : "NULL",
               bool_mask ? in_c(e, n, 3) : "NULL", y);
    close_block(e);
}

static void emit_distance(Emitter *e, Node *n, const char *y)
{
    DType t = n->out->type.dtype;
    double p = attr_number(n, "p", "2", DT_F64);
    switch (n->op->id) {
    case OP_CDIST: {
        const Shape *s1 = in_shape(n, 0), *s2 = in_shape(n, 1);
        int nd = s1->ndim;
        /* the kernel walks both operands with one batch count: operands
         * whose batch dims broadcast would be read past their end */
        bool same_batch = s2->ndim == nd;
        for (int d = 0; same_batch && d < nd - 2; d++)
            same_batch = poly_equal(s1->dims[d], s2->dims[d]);
        if (!same_batch) {
            unsupported(e, n, "operands with different batch dims have no runtime kernel yet (expand both to "
                              "the same batch shape first)");
            return;
        }
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "cdist", t),
                   dims_product(e, s1, 0, nd - 2), poly_c(e, s1->dims[nd - 2]), poly_c(e, s2->dims[s2->ndim - 2]),
                   poly_c(e, s1->dims[nd - 1]), double_c(e, p), in_c(e, n, 0), in_c(e, n, 1), y);
        return;
    }
    case OP_PDIST: {
        const Shape *s = in_shape(n, 0);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "pdist", t), poly_c(e, s->dims[0]),
                   poly_c(e, s->dims[1]), double_c(e, p), in_c(e, n, 0), y);
        return;
    }
    case OP_DIST:
        if (!shape_equal(in_shape(n, 0), in_shape(n, 1))) {
            unsupported(e, n, "broadcasting operands have no runtime kernel yet");
            return;
        }
        buf_printf(e->out, "    %s(1, 1, 1, %s, %s, %s, %s, %s);\n", kernel(e, "cdist", t), numel_c(e, in_shape(n, 0)),
                   double_c(e, p), in_c(e, n, 0), in_c(e, n, 1), y);
        return;
    default:
        ICE("not a distance: %s", n->op->name);
    }
}

static void emit_trace(Emitter *e, Node *n, const char *y)
{
    const Shape *s = in_shape(n, 0);
    buf_printf(e->out, "    %s(%s, %s, %s, %s);\n", kernel(e, "trace", n->out->type.dtype), poly_c(e, s->dims[0]),
               poly_c(e, s->dims[1]), in_c(e, n, 0), y);
}

/* ---- linear algebra ------------------------------------------------------------- */

static const char *more(Emitter *e, Node *n, int k) { return k < n->nmore ? e->cname[n->more_out[k]->id] : NULL; }

static void emit_linalg(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    if (t != DT_F32 && t != DT_F64) {
        unsupported(e, n, "linear algebra runs in f32 or f64 only");
        return;
    }
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    const char *batch = dims_product(e, s, 0, nd - 2);
    const char *m = poly_c(e, s->dims[nd - 2]), *ncol = poly_c(e, s->dims[nd - 1]);
    int64_t rows, cols;
    if (!poly_is_const(s->dims[nd - 2], &rows) || !poly_is_const(s->dims[nd - 1], &cols)) {
        unsupported(e, n, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return;
    }
    const char *scratch = n->scratch ? e->cname[n->scratch->id] : NULL;
    const char *info = NULL, *work = "NULL";
    if (scratch && linalg_scratch_has_info(n->op->id)) {
        /* parenthesised: the status loop below indexes it as info[i], and
         * `(int32_t *)(void *)scratch[i]` would cast the i-th byte instead */
        info = arena_printf(c->arena, "((int32_t *)(void *)%s)", scratch);
        if (linalg_work_bytes(n->op->id, rows, cols, dtype_size(t)))
            work = arena_printf(c->arena, "%s + 8 * (%s)", scratch, batch);
    } else if (scratch) {
        work = scratch;
    }
    switch (n->op->id) {
    case OP_INVERSE:
    case OP_LINALG_INV_EX:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s);\n", kernel(e, "inv_ex", t), batch, m, in_c(e, n, 0), y,
                   n->op->id == OP_INVERSE ? info : more(e, n, 0), work);
        break;
    case OP_CHOLESKY:
    case OP_LINALG_CHOLESKY:
    case OP_LINALG_CHOLESKY_EX:
        buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, %s);\n", kernel(e, "cholesky_ex", t), batch, m,
                   attr_bool(n, "upper", false), in_c(e, n, 0), y,
                   n->op->id == OP_LINALG_CHOLESKY_EX ? more(e, n, 0) : info);
        break;
    case OP_CHOLESKY_INVERSE:
        buf_printf(e->out, "    %s(%s, %s, %d, %s, %s);\n", kernel(e, "cholesky_inverse", t), batch, m,
                   attr_bool(n, "upper", false), in_c(e, n, 0), y);
        break;
    case OP_CHOLESKY_SOLVE: {
        const Shape *sl = in_shape(n, 1);
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s);\n", kernel(e, "cholesky_solve", t), batch,
                   poly_c(e, sl->dims[sl->ndim - 1]), ncol, attr_bool(n, "upper", false), in_c(e, n, 0),
                   in_c(e, n, 1), y);
        break;
    }
    case OP_LINALG_LU_FACTOR:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "lu_factor", t), batch, m, ncol,
                   in_c(e, n, 0), y, more(e, n, 0), info);
        break;
    case OP_LINALG_SOLVE: {
        const Shape *sb = in_shape(n, 1);
        bool left = attr_bool(n, "left", true);
        if (sb->ndim != nd) {
            unsupported(e, n, "a vector or broadcast right-hand side has no runtime kernel yet");
            return;
        }
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s, %s, %s);\n", kernel(e, "solve", t), batch, m,
                   poly_c(e, sb->dims[sb->ndim - (left ? 1 : 2)]), left, in_c(e, n, 0), in_c(e, n, 1), y, info, work);
        break;
    }
    case OP_TRIANGULAR_SOLVE: {
        /* triangular_solve(b, A): solution, then a copy of A */
        const Shape *sa = in_shape(n, 1);
        int na = sa->ndim;
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %d, %d, %s, %s, %s);\n", kernel(e, "triangular_solve", t), batch,
                   poly_c(e, sa->dims[na - 1]), ncol, attr_bool(n, "upper", true),
                   attr_bool(n, "transpose", false), attr_bool(n, "unitriangular", false), in_c(e, n, 0),
                   in_c(e, n, 1), y);
        if (more(e, n, 0))
            buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", more(e, n, 0), in_c(e, n, 1),
                       numel_c(e, sa), more(e, n, 0));
        break;
    }
    case OP_QR:
    case OP_LINALG_QR: {
        int mode = 0;
        if (n->op->id == OP_QR)
            mode = attr_bool(n, "some", true) ? 0 : 1;
        else {
            const char *ms = attr_str(n, "mode", "reduced");
            mode = strcmp(ms, "complete") == 0 ? 1 : strcmp(ms, "r") == 0 ? 2 : 0;
        }
        /* qr's results are (Q, R); mode "r" gives an empty Q */
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s, %s);\n", kernel(e, "qr", t), batch, m, ncol, mode,
                   in_c(e, n, 0), mode == 2 ? "NULL" : y, more(e, n, 0), work);
        break;
    }
    case OP_LINALG_SVD:
        buf_printf(e->out, "    %s(%s, %s, %s, %d, 1, %s, %s, %s, %s, %s);\n", kernel(e, "svd", t), batch, m, ncol,
                   attr_bool(n, "full_matrices", true), in_c(e, n, 0), y, more(e, n, 0), more(e, n, 1), work);
        break;
    case OP_LINALG_SVDVALS:
        buf_printf(e->out, "    %s(%s, %s, %s, 0, 0, %s, NULL, %s, NULL, %s);\n", kernel(e, "svd", t), batch, m, ncol,
                   in_c(e, n, 0), y, work);
        break;
    case OP_LINALG_EIGH:
    case OP_LINALG_EIGVALSH: {
        bool upper = strcmp(attr_str(n, "UPLO", "L"), "U") == 0;
        if (n->op->id == OP_LINALG_EIGH)
            buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, %s, %s);\n", kernel(e, "eigh", t), batch, m, upper,
                       in_c(e, n, 0), y, more(e, n, 0), work);
        else
            buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, NULL, %s);\n", kernel(e, "eigh", t), batch, m, upper,
                       in_c(e, n, 0), y, work);
        break;
    }
    case OP_PINVERSE:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "pinverse", t), batch, m, ncol,
                   double_c(e, attr_number(n, "rcond", "1e-15", DT_F64)), in_c(e, n, 0), y, work);
        break;
    default:
        unsupported(e, n, "has no runtime kernel yet");
        return;
    }
    /* the ops PyTorch raises for on a singular or indefinite input return
     * a status from the forward instead */
    if ((n->op->id == OP_INVERSE || n->op->id == OP_CHOLESKY || n->op->id == OP_LINALG_CHOLESKY ||
         n->op->id == OP_LINALG_SOLVE) && info) {
        e->uses_rc = true;
        buf_printf(e->out, "    for (int64_t i = 0; i < (int64_t)(%s); i++)\n        if (%s[i] != 0)\n"
                           "            return AMP_ERR_SINGULAR;\n", batch, info);
    }
}

/* ---- prelu, renorm, cosine_similarity, cross, svd, nuclear_norm, index_put,
 * grid_sampler and the margin losses (amprt/extra.h) ------------------------------ */

/* The broadcast shape of `nops` operands (numpy rules): per dim the first
 * size that is not a constant 1. */
static Shape bcast_full(Emitter *e, const Shape *const *ops, int nops)
{
    Shape out = {0};
    for (int k = 0; k < nops; k++)
        if (ops[k]->ndim > out.ndim)
            out.ndim = ops[k]->ndim;
    for (int i = 0; i < out.ndim; i++) {
        out.dims[i] = poly_const(e->c, 1);
        for (int k = 0; k < nops; k++) {
            int j = ops[k]->ndim - out.ndim + i;
            int64_t one;
            if (j >= 0 && !(poly_is_const(ops[k]->dims[j], &one) && one == 1)) {
                out.dims[i] = ops[k]->dims[j];
                break;
            }
        }
    }
    return out;
}

/* {row stride, element stride} of operand s broadcast to `full`, a [N, D]
 * or [D] shape. */
static const char *row_strides(Emitter *e, const Shape *s, const Shape *full)
{
    const char *st[MAX_DIMS], *items[2] = {"0", "0"};
    broadcast_strides(e, s, full, st);
    if (full->ndim == 2) {
        items[0] = st[0];
        items[1] = st[1];
    } else if (full->ndim == 1) {
        items[1] = st[0];
    }
    return c_array(e, items, 2);
}

static int64_t norm_dim(int64_t d, int nd) { return d < 0 ? d + nd : d; }

static void emit_prelu(Emitter *e, Node *n, const char *y)
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

static void emit_renorm(Emitter *e, Node *n, const char *y)
{
    const Shape *s = in_shape(n, 0);
    const char *outer, *len, *inner;
    int64_t d = s->ndim ? norm_dim(attr_int(n, "dim", 0), s->ndim) : 0;
    axis_split(e, s, d, &outer, &len, &inner);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "renorm", n->out->type.dtype), outer, len,
               inner, double_c(e, attr_number(n, "p", "2", DT_F64)),
               double_c(e, attr_number(n, "maxnorm", "0", DT_F64)), in_c(e, n, 0), y);
}

/* cosine_similarity and cross: two operands broadcast, along one dim. */
static void emit_pair_dim(Emitter *e, Node *n, const char *y)
{
    const Shape *ops[2] = {in_shape(n, 0), in_shape(n, 1)};
    Shape full = bcast_full(e, ops, 2);
    int nd = full.ndim;
    int64_t dim;
    bool cross = n->op->id == OP_CROSS;
    if (attr_given(n, "dim"))
        dim = norm_dim(attr_int(n, "dim", 0), nd);
    else if (cross) {
        dim = -1;
        for (int i = 0; i < ops[0]->ndim && dim < 0; i++) {
            int64_t three;
            if (poly_is_const(ops[0]->dims[i], &three) && three == 3)
                dim = i;
        }
    } else
        dim = nd ? norm_dim(1, nd) : 0;
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &full));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, ops[0], &full));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, ops[1], &full));
    if (cross)
        buf_printf(e->out, "        %s(%d, shape, %d, %s, a_stride, %s, b_stride, %s);\n",
                   kernel(e, "cross", n->out->type.dtype), nd, (int)dim, in_c(e, n, 0), in_c(e, n, 1), y);
    else
        buf_printf(e->out, "        %s(%d, shape, %d, %s, a_stride, %s, b_stride, %s, %s);\n",
                   kernel(e, "cosine_similarity", n->out->type.dtype), nd, (int)dim, in_c(e, n, 0), in_c(e, n, 1),
                   double_c(e, attr_number(n, "eps", "1e-08", DT_F64)), y);
    close_block(e);
}

static void emit_svd_op(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    if (t != DT_F32 && t != DT_F64) {
        unsupported(e, n, "linear algebra runs in f32 or f64 only");
        return;
    }
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    int64_t rows, cols;
    if (!poly_is_const(s->dims[nd - 2], &rows) || !poly_is_const(s->dims[nd - 1], &cols) || !n->scratch) {
        unsupported(e, n, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return;
    }
    const char *ct = dtype_c_type(t), *scratch = e->cname[n->scratch->id];
    const char *batch = dims_product(e, s, 0, nd - 2);
    int64_t k = rows < cols ? rows : cols, elems = svd_scratch_elems(n, rows, cols);
    bool nuclear = is_nuclear_norm(n);
    const char *work = arena_printf(c->arena, "%s + (size_t)(%s) * %lld", scratch,
                                    n->op->id == OP_SVD || nuclear ? batch : "1",
                                    (long long)(elems * (int64_t)dtype_size(t)));
    const char *buf = arena_printf(c->arena, "(%s *)(void *)%s", ct, scratch);
    if (nuclear) {
        /* the singular values of every matrix, then one sum per matrix */
        buf_printf(e->out, "    %s(%s, %lld, %lld, 0, 0, %s, NULL, %s, NULL, %s);\n", kernel(e, "svd", t), batch,
                   (long long)rows, (long long)cols, in_c(e, n, 0), buf, work);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = {%s, %lld};\n        const uint8_t reduce[] = {0, 1};\n",
                   batch, (long long)k);
        buf_printf(e->out, "        %s(2, shape, reduce, %s, %s);\n", kernel(e, "sum", t), buf, y);
        close_block(e);
        return;
    }
    const char *S = more(e, n, 0), *V = more(e, n, 1);
    bool uv = attr_bool(n, "compute_uv", true), some = attr_bool(n, "some", true);
    if (!uv) {
        /* torch.svd(compute_uv=False): U and V zero-filled */
        buf_printf(e->out, "    memset(%s, 0, (size_t)(%s) * sizeof *%s);\n", y, numel_c(e, out_shape(n)), y);
        if (V)
            buf_printf(e->out, "    memset(%s, 0, (size_t)(%s) * sizeof *%s);\n", V,
                       numel_c(e, &n->more_out[1]->type.shape), V);
        buf_printf(e->out, "    %s(%s, %lld, %lld, 0, 0, %s, NULL, %s, NULL, %s);\n", kernel(e, "svd", t), batch,
                   (long long)rows, (long long)cols, in_c(e, n, 0), S ? S : "NULL", work);
        return;
    }
    int64_t kv = some ? k : cols;
    buf_printf(e->out, "    %s(%s, %lld, %lld, %d, 1, %s, %s, %s, %s, %s);\n", kernel(e, "svd", t), batch,
               (long long)rows, (long long)cols, !some, in_c(e, n, 0), y, S, buf, work);
    if (!V)
        return;
    /* V [batch, n, kv] is vh [batch, kv, n] transposed */
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = {%s, %lld, %lld};\n", batch, (long long)cols, (long long)kv);
    buf_printf(e->out, "        const int64_t x_stride[] = {%lld, 1, %lld};\n", (long long)(kv * cols), (long long)cols);
    buf_printf(e->out, "        const int64_t y_stride[] = {%lld, %lld, 1};\n", (long long)(kv * cols), (long long)kv);
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, 3, shape, %s, x_stride, %s, y_stride);\n", V, buf, V);
    close_block(e);
}

static void emit_index_put(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const Shape *sx = in_shape(n, 0), *si = in_shape(n, 1), *sv = in_shape(n, 2);
    bool acc = attr_bool(n, "accumulate", false);
    buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0), numel_c(e, sx), y);
    open_block(e);
    if (in_dtype(n, 1) == DT_BOOL) {
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
        buf_printf(e->out, "        const int64_t v_stride[] = %s;\n", c_array(e, items, sx->ndim));
        buf_printf(e->out, "        %s(%d, x_shape, %d, (const uint8_t *)%s, %s, v_stride, %d, %s);\n",
                   kernel(e, "index_put_mask", t), sx->ndim, si->ndim, in_c(e, n, 1), in_c(e, n, 2), acc, y);
        close_block(e);
        return;
    }
    Shape res = *si;
    for (int i = 1; i < sx->ndim; i++)
        res.dims[res.ndim++] = sx->dims[i];
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &res));
    buf_printf(e->out, "        const int64_t v_stride[] = %s;\n", bcast_array(e, sv, &res));
    emit_checked(e, "        ", arena_printf(c->arena, "%s(%d, shape, %d, %s, %s, %s, v_stride, %d, %s)",
                                             kernel(e, "index_put", t), res.ndim, si->ndim, in_c(e, n, 1),
                                             poly_c(e, sx->dims[0]), in_c(e, n, 2), acc, y));
    close_block(e);
}

static void emit_grid_sampler(Emitter *e, Node *n, const char *y)
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

static void emit_margin_loss(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const char *red = reduction_enum[attr_int(n, "reduction_code", 0)];
    bool one = n->op->id == OP_TRIPLET_MARGIN_LOSS || n->op->id == OP_MULTI_MARGIN_LOSS;
    double margin = n->op->id == OP_MULTILABEL_MARGIN_LOSS ? 1 : attr_number(n, "margin", one ? "1.0" : "0.0", DT_F64);
    switch (n->op->id) {
    case OP_MULTILABEL_MARGIN_LOSS:
    case OP_MULTI_MARGIN_LOSS: {
        const Shape *s = in_shape(n, 0);
        const char *N = s->ndim == 2 ? poly_c(e, s->dims[0]) : "1";
        const char *C = s->ndim ? poly_c(e, s->dims[s->ndim - 1]) : "1";
        const char *call_c;
        if (n->op->id == OP_MULTILABEL_MARGIN_LOSS)
            call_c = arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s)", kernel(e, "multilabel_margin_loss", t), N, C,
                                  in_c(e, n, 0), in_c(e, n, 1), red, y);
        else
            call_c = arena_printf(c->arena, "%s(%s, %s, %s, %s, %d, %s, %s, %s, %s)", kernel(e, "multi_margin_loss", t),
                                  N, C, in_c(e, n, 0), in_c(e, n, 1), (int)attr_int(n, "p", 1),
                                  double_c(e, margin), in_c(e, n, 4), red, y);
        emit_checked(e, "    ", call_c);
        return;
    }
    case OP_MARGIN_RANKING_LOSS: {
        const Shape *ops[3] = {in_shape(n, 0), in_shape(n, 1), in_shape(n, 2)};
        Shape full = bcast_full(e, ops, 3);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, &full));
        buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, ops[0], &full));
        buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, ops[1], &full));
        buf_printf(e->out, "        const int64_t t_stride[] = %s;\n", bcast_array(e, ops[2], &full));
        buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s, t_stride, %s, %s, %s);\n",
                   kernel(e, "margin_ranking_loss", t), full.ndim, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                   double_c(e, margin), red, y);
        close_block(e);
        return;
    }
    case OP_COSINE_EMBEDDING_LOSS:
    case OP_TRIPLET_MARGIN_LOSS: {
        bool triplet = n->op->id == OP_TRIPLET_MARGIN_LOSS;
        const Shape *ops[3] = {in_shape(n, 0), in_shape(n, 1), in_shape(n, 2)};
        Shape full = bcast_full(e, ops, triplet ? 3 : 2);
        if (!triplet && full.ndim == 2 && ops[2]->ndim == 1) { /* the target broadcasts the rows too */
            Shape rows = {.ndim = 1, .dims = {full.dims[0]}};
            const Shape *r2[2] = {&rows, ops[2]};
            full.dims[0] = bcast_full(e, r2, 2).dims[0];
        }
        const char *N = full.ndim == 2 ? poly_c(e, full.dims[0]) : "1";
        const char *D = full.ndim ? poly_c(e, full.dims[full.ndim - 1]) : "1";
        open_block(e);
        buf_printf(e->out, "        const int64_t s0[] = %s;\n", row_strides(e, ops[0], &full));
        buf_printf(e->out, "        const int64_t s1[] = %s;\n", row_strides(e, ops[1], &full));
        if (triplet) {
            buf_printf(e->out, "        const int64_t s2[] = %s;\n", row_strides(e, ops[2], &full));
            buf_printf(e->out, "        %s(%s, %s, %s, s0, %s, s1, %s, s2, %s, %s, %s, %d, %s, %s);\n",
                       kernel(e, "triplet_margin_loss", t), N, D, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                       double_c(e, margin), double_c(e, attr_number(n, "p", "2.0", DT_F64)),
                       double_c(e, attr_number(n, "eps", "1e-06", DT_F64)), attr_bool(n, "swap", false),
                       red, y);
        } else {
            int64_t v1;
            bool tb = ops[2]->ndim == 0 || (poly_is_const(ops[2]->dims[0], &v1) && v1 == 1);
            buf_printf(e->out, "        %s(%s, %s, %s, s0, %s, s1, %s, %s, %s, %s, %s);\n",
                       kernel(e, "cosine_embedding_loss", t), N, D, in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                       tb ? "0" : "1", double_c(e, margin), red, y);
        }
        close_block(e);
        return;
    }
    default:
        ICE("not a margin loss: %s", n->op->name);
    }
}

/* ---- recurrent cells, max_unpool, quantile (amprt/more.h) ------------------------- */

static void emit_rnn_cell(Emitter *e, Node *n, const char *y)
{
    OpId id = n->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int w = lstm ? 3 : 2; /* w_ih's argument */
    const Shape *sx = in_shape(n, 0), *sh = in_shape(n, 1);
    int kind = lstm ? AMP_RNN_LSTM : id == OP_GRU_CELL ? AMP_RNN_GRU : id == OP_RNN_TANH_CELL ? AMP_RNN_TANH
                                                                                            : AMP_RNN_RELU;
    const char *cy = lstm ? more(e, n, 0) : NULL;
    if (lstm && !cy) {
        /* the cell state is not used: it still needs a place */
        unsupported(e, n, "lstm_cell's cell state must be assigned (h, c = lstm_cell(...))");
        return;
    }
    buf_printf(e->out, "    %s(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "rnn_cell", n->out->type.dtype),
               kind, sx->ndim == 2 ? poly_c(e, sx->dims[0]) : "1", poly_c(e, sx->dims[sx->ndim - 1]),
               poly_c(e, sh->dims[sh->ndim - 1]), in_c(e, n, 0), in_c(e, n, 1), lstm ? in_c(e, n, 2) : "NULL",
               in_c(e, n, w), in_c(e, n, w + 1), in_c(e, n, w + 2), in_c(e, n, w + 3), y, cy ? cy : "NULL");
}

static void emit_max_unpool(Emitter *e, Node *n, const char *y)
{
    int ns = n->op->id == OP_MAX_UNPOOL3D ? 3 : 2;
    const Shape *sx = in_shape(n, 0), *so = out_shape(n);
    emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s)", kernel(e, "max_unpool", n->out->type.dtype),
                                         planes_of(e, sx, ns), dims_product(e, sx, sx->ndim - ns, sx->ndim),
                                         dims_product(e, so, so->ndim - ns, so->ndim), in_c(e, n, 0), in_c(e, n, 1), y));
}

/* The node's scratch bytes (op_scratch_type) as the kernel's double work array. */
static const char *double_scratch(Emitter *e, Node *n)
{
    return n->scratch ? arena_printf(e->c->arena, "((double *)(void *)%s)", e->cname[n->scratch->id]) : "NULL";
}

static int quantile_code(const char *s)
{
    return strcmp(s, "lower") == 0 ? AMP_QUANTILE_LOWER : strcmp(s, "higher") == 0 ? AMP_QUANTILE_HIGHER
           : strcmp(s, "midpoint") == 0 ? AMP_QUANTILE_MIDPOINT : strcmp(s, "nearest") == 0 ? AMP_QUANTILE_NEAREST
           : AMP_QUANTILE_LINEAR;
}

static void emit_quantile(Emitter *e, Node *n, const char *y)
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

/* ctc_loss: its lengths and targets stay i64 (index operands). */
static void emit_ctc_loss(Emitter *e, Node *n, const char *y)
{
    const Shape *sl = in_shape(n, 0), *st = in_shape(n, 1);
    bool batched = sl->ndim == 3;
    const char *tl = in_c(e, n, 3);
    emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %d, %s, %s)",
                                         kernel(e, "ctc_loss", n->out->type.dtype), poly_c(e, sl->dims[0]),
                                         batched ? poly_c(e, sl->dims[1]) : "1", poly_c(e, sl->dims[sl->ndim - 1]),
                                         poly_c(e, st->dims[st->ndim - 1]), in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2),
                                         tl, i64_c(e, attr_int(n, "blank", 0)),
                                         reduction_code(attr_str(n, "reduction", "mean")),
                                         attr_bool(n, "zero_infinity", false), double_scratch(e, n), y));
}

/* lu_solve, lstsq, matrix_exp, householder_product/orgqr, ormqr; tensorinv and
 * tensorsolve through amp_inv_ex and amp_solve (amprt/linalg.h) on the
 * operands viewed as one square matrix. */
static void emit_linalg_more(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    OpId id = n->op->id;
    if (t != DT_F32 && t != DT_F64) {
        unsupported(e, n, "linear algebra runs in f32 or f64 only");
        return;
    }
    const Shape *s0 = in_shape(n, 0), *so = out_shape(n);
    int nd = s0->ndim;
    const char *scratch = n->scratch ? e->cname[n->scratch->id] : "NULL", *dwork = double_scratch(e, n);
    bool needs_work = id == OP_LINALG_LSTSQ || id == OP_LINALG_MATRIX_EXP || id == OP_LINALG_TENSORINV ||
                      id == OP_LINALG_TENSORSOLVE;
    if (needs_work && !n->scratch) {
        unsupported(e, n, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return;
    }
    switch (id) {
    case OP_LU_SOLVE: {
        const Shape *sl = in_shape(n, 1);
        Shape bb = *s0, lb = *sl, ob = *so;
        bb.ndim -= 2, lb.ndim -= 2, ob.ndim -= 2;
        if (!shape_equal(&bb, &ob) || !shape_equal(&lb, &ob)) {
            unsupported(e, n, "a broadcast batch has no runtime kernel yet");
            return;
        }
        emit_checked(e, "    ", arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s)", kernel(e, "lu_solve", t),
                                             dims_product(e, so, 0, so->ndim - 2), poly_c(e, s0->dims[nd - 2]),
                                             poly_c(e, s0->dims[nd - 1]), in_c(e, n, 1), in_c(e, n, 2), in_c(e, n, 0), y));
        return;
    }
    case OP_LINALG_LSTSQ: {
        const Shape *sb = in_shape(n, 1);
        bool vector = sb->ndim == nd - 1;
        Shape ab = *s0, bb = *sb;
        ab.ndim -= 2, bb.ndim -= vector ? 1 : 2;
        if (!shape_equal(&ab, &bb)) {
            unsupported(e, n, "a broadcast batch has no runtime kernel yet");
            return;
        }
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "lstsq", t), dims_product(e, s0, 0, nd - 2),
                   poly_c(e, s0->dims[nd - 2]), poly_c(e, s0->dims[nd - 1]), vector ? "1" : poly_c(e, sb->dims[sb->ndim - 1]),
                   in_c(e, n, 0), in_c(e, n, 1), y, dwork);
        return;
    }
    case OP_LINALG_MATRIX_EXP:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "matrix_exp", t), dims_product(e, s0, 0, nd - 2),
                   poly_c(e, s0->dims[nd - 1]), in_c(e, n, 0), y, dwork);
        return;
    case OP_LINALG_HOUSEHOLDER_PRODUCT:
    case OP_ORGQR: {
        const Shape *st = in_shape(n, 1);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "householder_product", t),
                   dims_product(e, s0, 0, nd - 2), poly_c(e, s0->dims[nd - 2]), poly_c(e, s0->dims[nd - 1]),
                   poly_c(e, st->dims[st->ndim - 1]), in_c(e, n, 0), in_c(e, n, 1), y);
        return;
    }
    case OP_ORMQR: {
        const Shape *st = in_shape(n, 1);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %d, %d, %s, %s, %s, %s);\n", kernel(e, "ormqr", t),
                   dims_product(e, s0, 0, nd - 2), poly_c(e, s0->dims[nd - 2]), poly_c(e, s0->dims[nd - 1]),
                   poly_c(e, st->dims[st->ndim - 1]), poly_c(e, so->dims[so->ndim - 2]), poly_c(e, so->dims[so->ndim - 1]),
                   attr_bool(n, "left", true), attr_bool(n, "transpose", false), in_c(e, n, 0),
                   in_c(e, n, 1), in_c(e, n, 2), y);
        return;
    }
    case OP_LINALG_TENSORINV:
    case OP_LINALG_TENSORSOLVE: {
        /* the matrix is [p, p]: p the product of A's dims from ind (tensorinv), of X's (tensorsolve) */
        const char *p = id == OP_LINALG_TENSORINV ? dims_product(e, s0, (int)attr_int(n, "ind", 2), nd)
                                                  : numel_c(e, so);
        const char *info = arena_printf(c->arena, "((int32_t *)(void *)%s)", scratch);
        const char *work = arena_printf(c->arena, "%s + 8", scratch);
        if (id == OP_LINALG_TENSORINV)
            buf_printf(e->out, "    %s(1, %s, %s, %s, %s, %s);\n", kernel(e, "inv_ex", t), p, in_c(e, n, 0), y, info,
                       work);
        else
            buf_printf(e->out, "    %s(1, %s, 1, 1, %s, %s, %s, %s, %s);\n", kernel(e, "solve", t), p, in_c(e, n, 0),
                       in_c(e, n, 1), y, info, work);
        e->uses_rc = true;
        buf_printf(e->out, "    if (%s[0] != 0)\n        return AMP_ERR_SINGULAR;\n", info);
        return;
    }
    default:
        ICE("emit_linalg_more on %s", n->op->name);
    }
}

/* ---- the dispatch ---------------------------------------------------------------- */

bool op_returns_status(const Node *n)
{
    switch (n->op->id) {
    case OP_NLL_LOSS: case OP_NLL_LOSS2D: case OP_EMBEDDING: case OP_INDEX_SELECT: case OP_INDEX_COPY:
    case OP_GATHER: case OP_SCATTER_ADD: case OP_MULTILABEL_MARGIN_LOSS: case OP_MULTI_MARGIN_LOSS:
    case OP_INVERSE: case OP_CHOLESKY: case OP_LINALG_CHOLESKY: case OP_LINALG_SOLVE:
    case OP_MAX_UNPOOL2D: case OP_MAX_UNPOOL3D: case OP_LU_SOLVE: case OP_LINALG_TENSORINV: case OP_LINALG_TENSORSOLVE:
    case OP_CTC_LOSS:
    case OP_LINALG_EIG: case OP_LINALG_EIGVALS: /* AMP_ERR_NO_CONVERGENCE */
        return true;
    case OP_CROSS_ENTROPY:
        return n->in[1] && n->in[1]->type.dtype == DT_I64;
    case OP_INDEX_PUT:
        return n->in[1] && n->in[1]->type.dtype == DT_I64;
    default:
        return false;
    }
}

/* pow: a tensor exponent takes the binary kernel, a number the unary one */
static void emit_pow(Emitter *e, Node *n, const char *y)
{
    if (n->in[1])
        emit_binary_tensors(e, n, y);
    else
        emit_unary_param(e, n, y);
}

/* reshape, view, flatten, squeeze, unsqueeze: the same elements in the
 * same order */
static void emit_copy(Emitter *e, Node *n, const char *y)
{
    buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0), numel_c(e, out_shape(n)), y);
}

/* dropout: training mode draws a mask; evaluation mode is the identity */
static void emit_dropout(Emitter *e, Node *n, const char *y)
{
    if (!emit_dropout_draw(e, n, in_c(e, n, 0), y))
        emit_copy(e, n, y);
}

/* a GRAD node: its kernel calls are the forward op's gradient rule's */
static void emit_grad_node(Emitter *e, Node *n, const char *y)
{
    (void)y;
    emit_grad(e, n);
}

/* Each op's emitter, from the emit column of its ops.def row (NULL: no
 * runtime kernel yet). */
typedef void (*EmitRule)(Emitter *e, Node *n, const char *y);
static const EmitRule emit_rules[OP_COUNT] = {
#define EMIT(fn) fn
#define NO_KERNEL NULL
#define OP(ID, name, sig, infer, form, emit, grad, flags) [OP_##ID] = emit,
#include "ops.def"
#undef OP
#undef EMIT
#undef NO_KERNEL
};

void emit_op(Emitter *e, Node *n, const char *y)
{
    OpId id = n->op->id;
    EmitRule rule = emit_rules[id];
    if (!rule) {
        /* typed, autocast and planned, so --explain and --emit=dot show it */
        error_at(e->c, n->loc, "op %s has no runtime kernel yet, so no C can be emitted for it "
                 "(--explain and --emit=dot work)", n->op->name);
        return;
    }
    /* the data movers copy any dtype; the other kernels check theirs */
    bool data_only = rule == emit_copy || rule == emit_dropout || rule == emit_permute || rule == emit_expand ||
                     rule == emit_slice || rule == emit_cat;
    if (n->op->form == FORM_OP && id != OP_GRAD && !op_takes_complex(id) && !data_only &&
        !operands_ok(e, n, n->out->type.dtype))
        return;
    rule(e, n, y);
}
