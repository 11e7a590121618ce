/* emit_ops.c: the op dispatch of the C emitter, and the small pieces of C
 * every family's emitter uses.
 *
 * emit_op finds a node's emitter in emit_rules[], expanded from the emit
 * column of ops.def (the emitters are in emit_<family>.c, one file per op
 * family, with the middle end's family names; emit_cast is in emit_c.c),
 * checks the operands' dtypes
 * against the kernels' and calls it.  The helpers here read a node's
 * operands (in_c, in_shape, ...), write C literals and arrays (double_c,
 * shape_array, broadcast_strides, ...) and open the blocks and status
 * checks the emitters' calls sit in.
 *
 * Requires: a planned graph whose every node's operands are in the dtype
 * its kernel takes (autocast and lower.c made every conversion an explicit
 * Cast node).  Produces: for node n, the C statements computing n's
 * results into y (and into n's other results, for ops with several), read
 * back from the op's proven shapes and its attributes.
 */
#include "emit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *in_c(Emitter *e, Node *n, int k) { return n->in[k] ? e->cname[n->in[k]->id] : "NULL"; }
const Shape *in_shape(Node *n, int k) { return &n->in[k]->type.shape; }
DType in_dtype(Node *n, int k) { return n->in[k]->type.dtype; }
const Shape *out_shape(Node *n) { return &n->out->type.shape; }

/* The dtype a kernel for storage t computes in: PyTorch's opmath. */
DType compute_dtype(DType t) { return t == DT_F64 ? DT_F64 : DT_F32; }

/* A double, exactly, as C a reader can check: an integer below 2^53 as a
 * decimal ("1.0"), any other value as a hex float (exact, whatever the
 * C library's decimal conversion) with the shortest decimal that reads back
 * as the same double beside it, in a comment: 0x1.4f8b588e368f1p-17 and
 * 1e-05. */
const char *double_c(Emitter *e, double v)
{
    if (isinf(v))
        return v > 0 ? "INFINITY" : "-INFINITY";
    if (isnan(v))
        return "NAN";
    if (v == floor(v) && fabs(v) < 0x1p53)
        return arena_printf(e->c->arena, "%.1f", v);
    char dec[40];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(dec, sizeof dec, "%.*g", digits, v);
        if (strtod(dec, NULL) == v)
            break;
    }
    return arena_printf(e->c->arena, "%a /* %s */", v, dec);
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

void open_block(Emitter *e) { buf_puts(e->out, "    {\n"); }
void close_block(Emitter *e) { buf_puts(e->out, "    }\n"); }

/* `rc = call; if (rc != AMP_OK) return rc;` for kernels that check data. */
void emit_checked(Emitter *e, const char *indent, const char *call)
{
    buf_printf(e->out, "%src = %s;\n%sif (rc != AMP_OK)\n%s    return rc;\n", indent, call, indent, indent);
}

bool unsupported(Emitter *e, Node *n, const char *why)
{
    error_at(e->c, n->loc, "%s: %s", node_op_name(n), why);
    return false;
}

bool is_kernel_float(DType t) { return t == DT_F64 || t == DT_F32 || t == DT_BF16 || t == DT_F16; }

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
        bool bool_mask = n->op->id == OP_WHERE || n->op->id == OP_INDEX_PUT || n->op->id == OP_MASKED_FILL;
        if (index && (d == DT_I64 || (bool_mask && d == DT_BOOL)))
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

/* Whether e writes the training step (<prefix>_backward), where dropout
 * and batch_norm run in training mode; the inference forward is
 * evaluation mode (docs/training.md). */
bool in_train_step(Emitter *e) { return e->c->train_graph && e->g == e->c->train_graph; }

/* The C name of node n's result more_out[k], NULL when it has none. */
const char *more_out_c(Emitter *e, Node *n, int k) { return k < n->nmore ? e->cname[n->more_out[k]->id] : NULL; }

/* The broadcast shape of `nops` operands (numpy rules): per dim the first
 * size that is not a constant 1. */
Shape bcast_full(Emitter *e, const Shape *const *ops, int nops)
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

int64_t norm_dim(int64_t d, int nd) { return d < 0 ? d + nd : d; }

/* The node's scratch bytes (op_scratch_type) as the kernel's double work array. */
const char *double_scratch(Emitter *e, Node *n)
{
    return n->scratch ? arena_printf(e->c->arena, "((double *)(void *)%s)", e->cname[n->scratch->id]) : "NULL";
}

/* Whether the node's kernel returns an amp_status (index operands out of
 * range, a singular matrix, no convergence), which the caller checks: the
 * OPF_STATUS column, or OPF_STATUS_IF_INDEX where only index operands (class
 * targets, integer indices) make it report one. */
bool op_returns_status(const Node *n)
{
    unsigned f = n->op->flags;
    return (f & OPF_STATUS) || ((f & OPF_STATUS_IF_INDEX) && n->nin > 1 && n->in[1] && n->in[1]->type.dtype == DT_I64);
}

/* a GRAD node: its kernel calls are the forward op's gradient rule's */
void emit_grad_node(Emitter *e, Node *n, const char *y)
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
#define OP(ID, name, sig, infer, emit, grad, flags) [OP_##ID] = emit,
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
    bool data_only = rule == emit_cast || rule == emit_copy || rule == emit_dropout || rule == emit_permute || rule == emit_expand ||
                     rule == emit_slice || rule == emit_cat || rule == emit_rearrange || rule == emit_construct ||
                     rule == emit_tri;
    /* comparisons write bools from operands of any dtype, of one dtype each (their type rule cast them) */
    data_only |= rule == emit_compare || rule == emit_logic;
    /* argmax/argmin (i64) and all/any (bool) check their input's dtype:
     * argmax's kernels are the float ones, all/any read any dtype */
    bool index_result = (n->op->flags & OPF_INDEX_RESULT) != 0;
    if (index_result) {
        if (id == OP_ALL || id == OP_ANY || operands_ok(e, n, in_dtype(n, 0)))
            rule(e, n, y);
        return;
    }
    if (id != OP_GRAD && !op_takes_complex(id) && !data_only &&
        !operands_ok(e, n, n->out->type.dtype))
        return;
    rule(e, n, y);
}
