/* emit_distance.c: the kernel calls of the distances.
 *
 * dist, pdist and cdist (amp_distance), linalg_vecdot (one amp_contract,
 * emit_linalg.c's Contraction), and the ops over one dim of two broadcast
 * operands, cosine_similarity and cross (emit_pair_dim).
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

void emit_vecdot(Emitter *e, Node *n, const char *y)
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

void emit_distance(Emitter *e, Node *n, const char *y)
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

/* cosine_similarity and cross: two operands broadcast, along one dim. */
void emit_pair_dim(Emitter *e, Node *n, const char *y)
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
