/* emit_compare.c: the kernel calls of the comparisons (eq ne lt le gt ge)
 * and of and/or/not on bools (amprt/compare.h).
 *
 * Requires what every emitter does (emit_ops.c): a planned graph whose
 * operands are in the dtypes their kernels take; a comparison's tensor
 * operands share one dtype, the one it compares in (types_compare.c cast
 * them).  A number operand becomes a one-element array of that dtype, read
 * with stride 0, rounded once from its literal.
 */
#include "emit.h"

static const char *compare_op(OpId id)
{
    switch (id) {
    case OP_EQ: return "AMP_CMP_EQ";
    case OP_NE: return "AMP_CMP_NE";
    case OP_LT: return "AMP_CMP_LT";
    case OP_LE: return "AMP_CMP_LE";
    case OP_GT: return "AMP_CMP_GT";
    default: return "AMP_CMP_GE";
    }
}

/* The number `other` as a one-element array of dtype t named `local`. */
static const char *number_array(Emitter *e, Node *n, DType t, const char *local)
{
    const char *init;
    double v = attr_number(n, "other", "0", t == DT_F64 ? DT_F64 : dtype_is_float(t) ? DT_F32 : DT_F64);
    switch (t) {
    case DT_BF16:
    case DT_F16:
        v = attr_number(n, "other", "0", t);
        init = arena_printf(e->c->arena, "{{0x%04x}}", half_bits(v, t));
        break;
    case DT_F64:
    case DT_F32:
        init = arena_printf(e->c->arena, "{%s}", double_c(e, attr_number(n, "other", "0", t)));
        break;
    default: /* i64, i32, bool: an integer literal (typecheck made a float one compare in f32) */
        init = arena_printf(e->c->arena, "{%lld}", (long long)attr_int(n, "other", 0));
        break;
    }
    if (t == DT_BF16 || t == DT_F16) /* the bits, and the value they hold */
        buf_printf(e->out, "        static const %s %s[1] = %s; /* %.9g */\n", dtype_c_type(t), local, init, v);
    else
        buf_printf(e->out, "        static const %s %s[1] = %s;\n", dtype_c_type(t), local, init);
    return local;
}

void emit_compare(Emitter *e, Node *n, const char *y)
{
    DType t = in_dtype(n, 0);
    const Shape *so = out_shape(n);
    Shape scalar = {0};
    bool number = n->nin < 2 || !n->in[1];
    if (!number && in_dtype(n, 1) != t) {
        error_at(e->c, n->loc, "%s: operands of %s and %s reach the kernel (no runtime kernel for the mix)",
                 n->op->name, dtype_name(t), dtype_name(in_dtype(n, 1)));
        return;
    }
    open_block(e);
    const char *b = number ? number_array(e, n, t, "b_number") : in_c(e, n, 1);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, in_shape(n, 0), so));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, number ? &scalar : in_shape(n, 1), so));
    buf_printf(e->out, "        %s(%s, %d, shape, %s, a_stride, %s, b_stride, %s);\n", kernel(e, "compare", t),
               compare_op(n->op->id), so->ndim, in_c(e, n, 0), b, y);
    close_block(e);
}

void emit_logic(Emitter *e, Node *n, const char *y)
{
    const Shape *so = out_shape(n);
    bool is_not = n->op->id == OP_BITWISE_NOT;
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
    buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", bcast_array(e, in_shape(n, 0), so));
    buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, in_shape(n, is_not ? 0 : 1), so));
    buf_printf(e->out, "        amp_logic_bool(%s, %d, shape, %s, a_stride, %s, b_stride, %s);\n",
               is_not ? "AMP_LOGIC_NOT" : n->op->id == OP_BITWISE_AND ? "AMP_LOGIC_AND" : "AMP_LOGIC_OR", so->ndim,
               in_c(e, n, 0), in_c(e, n, is_not ? 0 : 1), y);
    close_block(e);
}
