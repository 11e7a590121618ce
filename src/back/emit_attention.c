/* emit_attention.c: the kernel calls of attention.
 *
 * scaled_dot_product_attention: one amp_sdpa call through an
 * amp_sdpa_desc; an operand without the batch dims is shared (batch stride
 * 0), a bool attn_mask masks and another one adds.
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

void emit_sdpa(Emitter *e, Node *n, const char *y)
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
    const char *E = poly_c(e, sq->dims[nq - 1]);
    buf_printf(e->out, "        const amp_sdpa_desc d = {\n");
    buf_printf(e->out, "            .batch = %s, .L = %s, .S = %s, .E = %s, .Ev = %s,\n", batch,
               poly_c(e, sq->dims[nq - 2]), poly_c(e, sk->dims[sk->ndim - 2]), E, poly_c(e, sv->dims[sv->ndim - 1]));
    buf_printf(e->out, "            .q_batch_stride = %s, .k_batch_stride = %s,\n", strides[0], strides[1]);
    buf_printf(e->out, "            .v_batch_stride = %s, .mask_batch_stride = %s,\n", strides[2], strides[3]);
    buf_printf(e->out, "            .scale = %s, .is_causal = %d,\n        };\n",
               given ? double_c(e, scale) : arena_printf(e->c->arena, "1.0 / sqrt((double)(%s))", E),
               attr_bool(n, "is_causal", false));
    buf_printf(e->out, "        %s(&d, %s, %s, %s, %s, %s, %s);\n", kernel(e, "sdpa", n->out->type.dtype), in_c(e, n, 0),
               in_c(e, n, 1), in_c(e, n, 2), n->in[3] && !bool_mask ? in_c(e, n, 3) : "NULL",
               bool_mask ? in_c(e, n, 3) : "NULL", y);
    close_block(e);
}
