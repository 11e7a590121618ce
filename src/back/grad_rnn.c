/* grad_rnn.c: the gradient rules of the recurrent cells.
 *
 * One amp_rnn_cell_backward call (amprt/backward_nn.h) writes every
 * wanted gradient, recomputing the gates from the forward's inputs; its
 * double work array is the GRAD node's scratch.  The cell state's result
 * of lstm_cell gets no gradient (autodiff.c refuses one).
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

void grad_rnn_cell(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    OpId id = f->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int w = lstm ? 3 : 2; /* w_ih's operand */
    const Shape *sx = xs_of(b, 0), *sh = xs_of(b, 1);
    int kind = lstm ? AMP_RNN_LSTM : id == OP_GRU_CELL ? AMP_RNN_GRU : id == OP_RNN_TANH_CELL ? AMP_RNN_TANH
                                                                                            : AMP_RNN_RELU;
    const char *B = sx->ndim == 2 ? poly_c(e, sx->dims[0]) : "1", *H = poly_c(e, sh->dims[sh->ndim - 1]);
    const char *b_hh = x_of(e, b, w + 3);
    if (lstm && lstm_b_hh_recast(f)) {
        /* after the work doubles */
        const Value *src = lstm_b_hh_source(f);
        DType t = f->out->type.dtype;
        b_hh = arena_printf(e->c->arena, "((%s *)(void *)((double *)(void *)%s + AMP_RNN_CELL_BACKWARD_WORK_ELEMS(%s, %s)))",
                            dtype_c_type(t), e->cname[b->scratch->id], B, H);
        buf_printf(e->out, "    amp_cast_%s_%s((size_t)(%s), %s, %s); /* b_hh, as the forward's cast */\n",
                   dtype_name(src->type.dtype), dtype_name(t), numel_c(e, &src->type.shape), e->cname[src->id], b_hh);
    }
    buf_printf(e->out,
               "    %s(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, (double *)(void *)%s, %s, %s, %s, %s, "
               "%s, %s, %s);\n",
               kernel(e, "rnn_cell_backward", f->out->type.dtype), kind, B, poly_c(e, sx->dims[sx->ndim - 1]), H,
               x_of(e, b, 0), x_of(e, b, 1), lstm ? x_of(e, b, 2) : "NULL",
               x_of(e, b, w), x_of(e, b, w + 1), x_of(e, b, w + 2), b_hh, dy_of(e, b),
               lstm && b->dy_more[0] ? e->cname[b->dy_more[0]->id] : "NULL", e->cname[b->scratch->id], or_null(grad_of(e, b, 0)), or_null(grad_of(e, b, 1)),
               lstm ? or_null(grad_of(e, b, 2)) : "NULL", or_null(grad_of(e, b, w)), or_null(grad_of(e, b, w + 1)),
               or_null(grad_of(e, b, w + 2)), or_null(grad_of(e, b, w + 3)));
}
