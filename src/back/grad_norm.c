/* grad_norm.c: the gradient rules of the normalisations.
 *
 * layer_norm, group_norm, batch_norm and instance_norm (as its forward,
 * group_norm's or batch_norm's evaluation): one backward kernel each for the
 * input's and the affine parameters' gradients, the parameters' dtype
 * (f32 under a bf16/f16 input, or the input's) named by param_dtype_of.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit_rules.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 */
#include "emit.h"

static const char *param_dtype_of(Node *f, int first, int last)
{
    for (int k = first; k <= last; k++)
        if (f->in[k])
            return dtype_amp_enum(f->in[k]->type.dtype);
    return dtype_amp_enum(f->out->type.dtype);
}

void grad_norm(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int nd = s->ndim;
    double eps = attr_number(f, "eps", "1e-05", DT_F64);
    const char *dx = grad_of(e, b, 0) ? grad_of(e, b, 0) : scratch_buffer(e, b, t, 0);
    bool stats_first = f->op->id == OP_BATCH_NORM || f->op->id == OP_INSTANCE_NORM;
    const char *g = grad_of(e, b, stats_first ? 3 : 2);
    const char *gb = grad_of(e, b, stats_first ? 4 : 3);
    switch (f->op->id) {
    case OP_INSTANCE_NORM:
        if (!attr_bool(f, "use_input_stats", true))
            goto batch_norm;
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "group_norm_backward", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), poly_c(e, s->dims[1]),
                   x_of(e, b, 0), param_dtype_of(f, 3, 4), x_of(e, b, 3), double_c(e, eps), dy_of(e, b), dx,
                   g ? g : "NULL", gb ? gb : "NULL");
        break;
    case OP_LAYER_NORM:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "layer_norm_backward", t),
                   dims_product(e, s, 0, nd - normalized_count(f)), dims_product(e, s, nd - normalized_count(f), nd),
                   x_of(e, b, 0), param_dtype_of(f, 2, 3),
                   x_of(e, b, 2), double_c(e, eps), dy_of(e, b), dx, g ? g : "NULL", gb ? gb : "NULL");
        break;
    case OP_GROUP_NORM:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "group_norm_backward", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd),
                   i64_c(e, attr_int(f, "num_groups", 1)), x_of(e, b, 0), param_dtype_of(f, 2, 3),
                   x_of(e, b, 2), double_c(e, eps), dy_of(e, b), dx, g ? g : "NULL", gb ? gb : "NULL");
        break;
    default: /* batch_norm */
    batch_norm:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %d, %s, %s, %s, %s, %s);\n",
                   kernel(e, "batch_norm_backward", t), poly_c(e, s->dims[0]), poly_c(e, s->dims[1]),
                   dims_product(e, s, 2, nd), x_of(e, b, 0), param_dtype_of(f, 1, 4), x_of(e, b, 1), x_of(e, b, 2),
                   x_of(e, b, 3), attr_bool(f, "training", false), double_c(e, eps), dy_of(e, b), dx,
                   g ? g : "NULL", gb ? gb : "NULL");
        break;
    }
}
