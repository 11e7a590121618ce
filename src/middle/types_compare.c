/* types_compare.c: the type rules of the comparisons (eq, ne, lt, le, gt,
 * ge: the operators == != < <= > >=) and of and/or/not on bools (& | ~).
 *
 * A comparison broadcasts its operands and gives a bool tensor.  It
 * compares in the dtype PyTorch's result_type gives them (a number only
 * raises the category: an f16 tensor against 0.5 compares in f16, an i64
 * tensor against 0.5 in f32), and the rule wraps a tensor operand of
 * another dtype in an explicit cast to it, so the kernel sees one dtype
 * and autocast's promotion (which follows the result, bool) has nothing
 * to add.  A number first, `0 < x`, is the mirrored comparison `x > 0`.
 */
#include "types.h"

#include <string.h>

static OpId mirrored(OpId id)
{
    switch (id) {
    case OP_LT: return OP_GT;
    case OP_GT: return OP_LT;
    case OP_LE: return OP_GE;
    case OP_GE: return OP_LE;
    default: return id; /* eq, ne */
    }
}

static void cast_to(Ctx *c, Expr *call, int i, DType t)
{
    Expr *a = arg(call, i);
    if (!is_tensor(a) || a->type.dtype == t)
        return;
    call->bound[i] = new_cast(c, a, t, arena_printf(c->arena, "type promotion: %s compares in %s", call->op->name,
                                                    dtype_name(t)));
}

bool infer_compare(Ctx *c, Expr *call)
{
    Expr *a = arg(call, 0), *b = arg(call, 1);
    if (!is_tensor(a) && is_tensor(b)) {
        call->bound[0] = b;
        call->bound[1] = a;
        call->op = op_info(c, mirrored(call->op->id));
        a = arg(call, 0);
        b = arg(call, 1);
    }
    if (!require_tensor(c, call, 0))
        return false;
    DType t;
    Shape s = a->type.shape;
    if (is_tensor(b)) {
        if (!broadcast(c, call, &a->type.shape, &b->type.shape, &s))
            return false;
        t = promote_tensors(&a->type, &b->type);
    } else if (is_number(b)) {
        Expr *lit = b->kind == E_NUMBER ? b : VEC_AT(b->list, 0);
        t = promote_with_scalar(a->type.dtype, lit->is_float);
        if (a->type.dtype == DT_BOOL && !lit->is_float)
            t = DT_I64;
    } else {
        error_at(c, b->loc, "%s() compares a tensor with a tensor or a number", call->op->name);
        return false;
    }
    cast_to(c, call, 0, t);
    cast_to(c, call, 1, t);
    call->type.dtype = DT_BOOL;
    call->type.shape = s;
    return true;
}

/* &, |, ~: ampc has them on bools only (the logic of masks); PyTorch's
 * bitwise ops of integer tensors have no kernel here. */
bool infer_logic(Ctx *c, Expr *call)
{
    int n = call->op->id == OP_BITWISE_NOT ? 1 : 2;
    Shape s = {0};
    for (int i = 0; i < n; i++) {
        if (!require_tensor(c, call, i))
            return false;
        Expr *a = arg(call, i);
        if (a->type.dtype != DT_BOOL) {
            error_at(c, a->loc, "%s() is supported on bool tensors only, but this is %s; compare first, as "
                     "(x > 0) & (y < 1)", call->op->name, type_to_string(c, &a->type));
            return false;
        }
        if (i == 0)
            s = a->type.shape;
        else if (!broadcast(c, call, &s, &a->type.shape, &s))
            return false;
    }
    call->type.dtype = DT_BOOL;
    call->type.shape = s;
    return true;
}
