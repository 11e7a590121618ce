/* grad_rearrange.c: the gradients of select, flip, roll, repeat and tile,
 * pixel_shuffle, pixel_unshuffle and channel_shuffle.
 *
 * Every one but repeat and tile moves each element to one place, so its
 * gradient runs the forward's pieces (emit_rearrange.c's rearrange_plan)
 * backwards: dy read with the destination strides, written into dx with
 * the source ones (select zeroes dx first: the other rows get none).
 * repeat and tile read each element several times: dx sums dy viewed as
 * the forward's [r0, s0, r1, s1, ...] over the r dims, with the sum kernel
 * (one rounding per element, as every reduction of the runtime).
 */
#include "emit.h"

void grad_rearrange(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const char *dx = grad_of(e, b, 0);
    Piece **pieces;
    int count = rearrange_plan(e, f, xs_of(b, 0), ys_of(b), &pieces);
    if (f->op->id == OP_REPEAT || f->op->id == OP_TILE) {
        const Piece *p = pieces[0];
        const char *reduce[2 * MAX_DIMS];
        for (int i = 0; i < p->ndim; i++)
            reduce[i] = p->repeated[i] ? "1" : "0";
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", c_array(e, p->shape, p->ndim));
        buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, reduce, p->ndim));
        buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s);\n", kernel(e, "sum", t), p->ndim, dy_of(e, b), dx);
        close_block(e);
        return;
    }
    if (f->op->id == OP_SELECT)
        zero_fill(e, t, dx, xs_of(b, 0));
    for (int i = 0; i < count; i++)
        emit_piece_copy(e, pieces[i], dx, dy_of(e, b), pieces[i]->ys, pieces[i]->y_off, dx, pieces[i]->xs,
                        pieces[i]->x_off);
}
