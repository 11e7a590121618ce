/* emit_rnn.c: the kernel calls of the recurrent cells.
 *
 * lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell: one amp_rnn_cell
 * call by the cell's kind; lstm_cell's cell state is its second result.
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

void emit_rnn_cell(Emitter *e, Node *n, const char *y)
{
    OpId id = n->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int w = lstm ? 3 : 2; /* w_ih's argument */
    const Shape *sx = in_shape(n, 0), *sh = in_shape(n, 1);
    int kind = lstm ? AMP_RNN_LSTM : id == OP_GRU_CELL ? AMP_RNN_GRU : id == OP_RNN_TANH_CELL ? AMP_RNN_TANH
                                                                                            : AMP_RNN_RELU;
    const char *cy = lstm ? more_out_c(e, n, 0) : NULL;
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
