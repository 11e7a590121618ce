/* emit_construct.c: the kernel calls of the constructors: zeros, ones,
 * full and their *_like forms, arange, linspace, eye and one_hot.
 *
 * Their kernels take the dtype as an argument (amprt/elementwise.h), so
 * every dtype is one call; the numbers are the double values of the
 * literals written (arange's and linspace's ends, full's fill_value),
 * which the kernels round once into the dtype.
 *
 * Requires: a planned graph; the type rules (types_construct.c) have
 * checked the arguments and worked out the result's shape and dtype.
 */
#include "emit.h"

#include <string.h>

static double number_attr(Node *n, const char *name, const char *dflt)
{
    if (attr_kind(n, name, ATTR_NONE) == ATTR_BOOL)
        return attr_bool(n, name, false);
    return attr_number(n, name, dflt, DT_F64);
}

void emit_construct(Emitter *e, Node *n, const char *y)
{
    const Shape *so = out_shape(n);
    const char *t = dtype_amp_enum(n->out->type.dtype);
    const char *numel = numel_c(e, so);
    switch (n->op->id) {
    case OP_ZEROS: case OP_ZEROS_LIKE: case OP_ONES: case OP_ONES_LIKE: case OP_FULL: case OP_FULL_LIKE: {
        bool zeros = n->op->id == OP_ZEROS || n->op->id == OP_ZEROS_LIKE;
        bool ones = n->op->id == OP_ONES || n->op->id == OP_ONES_LIKE;
        double v = zeros ? 0 : ones ? 1 : number_attr(n, "fill_value", "0");
        buf_printf(e->out, "    amp_full(%s, (size_t)(%s), %s, %s);\n", t, numel, double_c(e, v), y);
        break;
    }
    case OP_ARANGE: {
        bool two = attr_given(n, "end");
        double start = two ? number_attr(n, "start", "0") : 0;
        buf_printf(e->out, "    amp_arange(%s, (size_t)(%s), %s, %s, %s);\n", t, numel, double_c(e, start),
                   double_c(e, number_attr(n, "step", "1")), y);
        break;
    }
    case OP_LINSPACE:
        buf_printf(e->out, "    amp_linspace(%s, (size_t)(%s), %s, %s, %s);\n", t, numel,
                   double_c(e, number_attr(n, "start", "0")), double_c(e, number_attr(n, "end", "0")), y);
        break;
    case OP_EYE:
        buf_printf(e->out, "    amp_eye(%s, %s, %s, %s);\n", t, poly_c(e, so->dims[0]), poly_c(e, so->dims[1]), y);
        break;
    case OP_ONE_HOT:
        emit_checked(e, "    ", arena_printf(e->c->arena, "amp_one_hot(%s, %s, %s, %s)", numel_c(e, in_shape(n, 0)),
                                             poly_c(e, so->dims[so->ndim - 1]), in_c(e, n, 0), y));
        break;
    default:
        ICE("not a constructor: %s", n->op->name);
    }
}
