/* grad_attention.c: the gradient rule of attention.
 *
 * scaled_dot_product_attention: one amp_sdpa_backward call writing the
 * gradients of q, k and v (all three wanted, q, k and v with the same
 * batch dims, no attn_mask), from the forward's descriptor.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

void grad_sdpa(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    if (f->in[3]) {
        unsupported(e, f, "the gradient of scaled_dot_product_attention with an attn_mask is not supported yet");
        return;
    }
    const Shape *sq = xs_of(b, 0), *sk = xs_of(b, 1), *sv = xs_of(b, 2);
    int nq = sq->ndim;
    /* the same batch dims for q, k and v (L may differ from S, Ev from E) */
    bool same_batch = sk->ndim == nq && sv->ndim == nq;
    for (int i = 0; same_batch && i < nq - 2; i++)
        same_batch = poly_equal(sq->dims[i], sk->dims[i]) && poly_equal(sq->dims[i], sv->dims[i]);
    if (!same_batch) {
        unsupported(e, f, "the gradient of attention with differently batched q, k, v is not supported yet");
        return;
    }
    open_block(e);
    const char *E = poly_c(e, sq->dims[nq - 1]);
    buf_printf(e->out, "        const amp_sdpa_desc d = {\n");
    buf_printf(e->out, "            .batch = %s, .L = %s, .S = %s, .E = %s, .Ev = %s,\n", dims_product(e, sq, 0, nq - 2),
               poly_c(e, sq->dims[nq - 2]), poly_c(e, sk->dims[nq - 2]), E, poly_c(e, sv->dims[nq - 1]));
    buf_printf(e->out, "            .q_batch_stride = %s, .k_batch_stride = %s, .v_batch_stride = %s,\n",
               dims_product(e, sq, nq - 2, nq), dims_product(e, sk, nq - 2, nq), dims_product(e, sv, nq - 2, nq));
    buf_printf(e->out, "            .scale = %s, .is_causal = %d,\n        };\n",
               attr_given(f, "scale") ? double_c(e, attr_number(f, "scale", "1", DT_F64))
                                      : arena_printf(e->c->arena, "1.0 / sqrt((double)(%s))", E),
               attr_bool(f, "is_causal", false));
    /* the kernel writes all three; those not needed go to scratch */
    const char *dq = grad_of(e, b, 0), *dk = grad_of(e, b, 1), *dv = grad_of(e, b, 2);
    if (!dq || !dk || !dv) {
        unsupported(e, f, "the gradient of attention needs all of q, k and v to need gradients");
        close_block(e);
        return;
    }
    buf_printf(e->out, "        %s(&d, %s, %s, %s, NULL, NULL, %s, %s, %s, %s);\n", kernel(e, "sdpa_backward", t),
               x_of(e, b, 0), x_of(e, b, 1), x_of(e, b, 2), dy_of(e, b), dq, dk, dv);
    close_block(e);
}
