/* types_rnn.c: the type rules of the recurrent cells.
 *
 * lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell, with PyTorch's
 * checks of the input and hidden state (check_rnn_cell_forward_input and
 * _hidden), and the number of gates that sizes their weights.
 */

#include "types.h"

/* The gates of a cell: 4 (lstm), 3 (gru), 1 (the plain rnn cells). */
int rnn_cell_gates(OpId id) { return id == OP_LSTM_CELL ? 4 : id == OP_GRU_CELL ? 3 : 1; }

/* lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell: PyTorch's checks
 * (check_rnn_cell_forward_input/hidden) and the gates' row count. */
bool infer_rnn_cell(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int g = rnn_cell_gates(id);
    int nt = lstm ? 5 : 4;
    for (int i = 0; i < nt; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0), *h = arg(call, 1), *cx = lstm ? arg(call, 2) : NULL;
    Expr *wih = arg(call, nt - 2), *whh = arg(call, nt - 1), *bih, *bhh;
    if (!tensor_arg(c, call, "b_ih", &bih) || !tensor_arg(c, call, "b_hh", &bhh) || !require_float(c, call, x))
        return false;
    Expr *all[7] = {h, cx, wih, whh, bih, bhh, NULL};
    for (int i = 0; i < 6; i++)
        if (all[i] && !same_dtype(c, call, x, all[i]))
            return false;
    const Shape *xs = &x->type.shape, *hs = &h->type.shape, *wi = &wih->type.shape, *wh = &whh->type.shape;
    if (xs->ndim != 1 && xs->ndim != 2) {
        error_at(c, x->loc, "%s: Expected input to be 1D or 2D, got %dD instead", call->op->name, xs->ndim);
        return false;
    }
    if (wi->ndim != 2 || wh->ndim != 2) {
        Expr *bad = wi->ndim != 2 ? wih : whh;
        error_at(c, bad->loc, "%s(): expected a 2-D weight [%d*hidden_size, %s_size], got %s", call->op->name, g,
                 bad == wih ? "input" : "hidden", type_to_string(c, &bad->type));
        return false;
    }
    bool batched = xs->ndim == 2;
    Poly *in = xs->dims[xs->ndim - 1], *hidden = wh->dims[1];
    if (!dims_match(in, wi->dims[1])) {
        error_at(c, x->loc, "input has inconsistent input_size: got %s expected %s", dim_str(c, in),
                 dim_str(c, wi->dims[1]));
        return false;
    }
    Expr *hid[2] = {h, cx};
    for (int k = 0; k < (lstm ? 2 : 1); k++) {
        const Shape *s = &hid[k]->type.shape;
        if (s->ndim != xs->ndim) {
            error_at(c, hid[k]->loc, "%s: Expected hidden%s to be %dD, like the input, but got %dD", call->op->name,
                     k ? "[1]" : lstm ? "[0]" : "", xs->ndim, s->ndim);
            return false;
        }
        if (batched && !dims_match(s->dims[0], xs->dims[0])) {
            error_at(c, hid[k]->loc, "Input batch size %s doesn't match hidden%d batch size %s", dim_str(c, xs->dims[0]),
                     k, dim_str(c, s->dims[0]));
            return false;
        }
        if (!dims_match(s->dims[s->ndim - 1], hidden)) {
            error_at(c, hid[k]->loc, "hidden%d has inconsistent hidden_size: got %s, expected %s", k,
                     dim_str(c, s->dims[s->ndim - 1]), dim_str(c, hidden));
            return false;
        }
    }
    Poly *rows = poly_mul(c, hidden, poly_const(c, g));
    Expr *wts[4] = {wih, whh, bih, bhh};
    for (int k = 0; k < 4; k++) {
        Expr *w = wts[k];
        if (!w)
            continue;
        const Shape *s = &w->type.shape;
        if (!rows || (k < 2 ? !dims_match(s->dims[0], rows) : s->ndim != 1 || !dims_match(s->dims[0], rows))) {
            error_at(c, w->loc, "%s(): %s should have %d*hidden_size = %s %s, but it is %s", call->op->name,
                     k == 0 ? "w_ih" : k == 1 ? "w_hh" : k == 2 ? "b_ih" : "b_hh", g, rows ? dim_str(c, rows) : "?",
                     k < 2 ? "rows" : "elements", type_to_string(c, &w->type));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = *hs;
    if (lstm)
        more_results(c, call, 1, &call->type);
    return true;
}
