/* emit_shape.c: the kernel calls of the shape and indexing ops.
 *
 * Data movers that copy any dtype (reshape/view/flatten/squeeze/unsqueeze
 * as a memcpy; permute, transpose, expand, narrow and slice as one strided
 * copy; cat and stack) and indexing (embedding, gather, scatter_add,
 * index_select, index_copy, index_put), whose kernels check their indices
 * and return a status.
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

void emit_permute(Emitter *e, Node *n, const char *y)
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

void emit_expand(Emitter *e, Node *n, const char *y)
{
    const char *st[MAX_DIMS];
    broadcast_strides(e, in_shape(n, 0), out_shape(n), st);
    emit_strided_copy(e, n, y, NULL, st);
}

void emit_slice(Emitter *e, Node *n, const char *y)
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
void emit_cat(Emitter *e, Node *n, const char *y)
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

void emit_index(Emitter *e, Node *n, const char *y)
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

void emit_index_put(Emitter *e, Node *n, const char *y)
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

/* reshape, view, flatten, squeeze, unsqueeze, and a dropout that draws no
 * mask: the same elements in the same order; nothing to do where the
 * result shares its operand's slot (memplan.c) */
void emit_copy(Emitter *e, Node *n, const char *y)
{
    if (n->out->slot >= 0 && n->out->slot == n->in[0]->slot) {
        buf_printf(e->out, "    (void)%s; /* %s's buffer as it lies: nothing to copy */\n", y, in_c(e, n, 0));
        return;
    }
    buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0), numel_c(e, out_shape(n)), y);
}
