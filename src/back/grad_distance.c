/* grad_distance.c: the gradient rules of the distances.
 *
 * The rules, PyTorch's (derivatives.yaml):
 *   linalg_vecdot  two contractions (grad_linalg.c's grad_contraction)
 *   dist       norm_backward of the difference (x - y for x, y - x for y)
 *   cosine_similarity  amp_cosine_similarity_backward over the broadcast
 *              shape, summed down to each operand's shape
 *   pdist, cdist  their amp_*_backward kernels
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

void grad_vecdot(Emitter *e, Node *b)
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

/* cosine_similarity: the dim as emit_distance.c's emit_pair_dim chooses it. */
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
