/*
 * ref_elementwise.c - reference elementwise kernels: same-shape binary ops
 * (add, sub, mul, div, maximum, atan2, pow, minimum, fmod, remainder), neg and relu, tensor-scalar
 * ops, broadcasting binary ops, addcmul/addcdiv, lerp and glu.
 *
 * The bodies are in ref_elementwise.inc, compiled once computing in float
 * (f32, bf16, f16) and once in double (f64).
 *
 * The *_bcast kernels are hand-written: they call the ternary body without
 * its third operand.
 */
#include <math.h>

#include "amprt_internal.h"
#include "ref_strided.inc"

typedef enum {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MAXIMUM,
    OP_ATAN2,
    OP_POW,
    OP_MINIMUM,
    OP_FMOD,
    OP_REMAINDER,
    OP_ADDCMUL,
    OP_ADDCDIV,
    OP_LERP
} elementwise_op;

#define REF_PART "ref_elementwise.inc"
#include "ref_acc_twice.h"

/* The binary broadcasts: the ternary body without its third operand, so
 * they stay hand-written (their arguments are not the entry's). */
#define BCAST(name, op, T)                                                                        \
    void amp_ref_##name##_bcast_##T(int ndim, const int64_t *shape, const AMP_CTYPE_##T *a,       \
                                    const int64_t *a_stride, const AMP_CTYPE_##T *b,              \
                                    const int64_t *b_stride, AMP_CTYPE_##T *y)                    \
    {                                                                                             \
        REF_BODY_##T(bcast)(AMP_DTYPE_##T, op, ndim, shape, a, a_stride, b, b_stride, NULL, NULL, \
                           0, y);                                                                 \
    }

#define BCAST_KERNELS(T)                                                                          \
    BCAST(add, OP_ADD, T) BCAST(sub, OP_SUB, T) BCAST(mul, OP_MUL, T) BCAST(div, OP_DIV, T)       \
    BCAST(maximum, OP_MAXIMUM, T) BCAST(atan2, OP_ATAN2, T) BCAST(pow, OP_POW, T)                 \
    BCAST(minimum, OP_MINIMUM, T) BCAST(fmod, OP_FMOD, T) BCAST(remainder, OP_REMAINDER, T)

BCAST_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(BCAST_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_add REF_SHARES(binary, OP_ADD)
#define REF_OWNS_sub REF_SHARES(binary, OP_SUB)
#define REF_OWNS_mul REF_SHARES(binary, OP_MUL)
#define REF_OWNS_div REF_SHARES(binary, OP_DIV)
#define REF_OWNS_maximum REF_SHARES(binary, OP_MAXIMUM)
#define REF_OWNS_atan2 REF_SHARES(binary, OP_ATAN2)
#define REF_OWNS_pow REF_SHARES(binary, OP_POW)
#define REF_OWNS_minimum REF_SHARES(binary, OP_MINIMUM)
#define REF_OWNS_fmod REF_SHARES(binary, OP_FMOD)
#define REF_OWNS_remainder REF_SHARES(binary, OP_REMAINDER)
#define REF_OWNS_neg REF_OWNED
#define REF_OWNS_relu REF_OWNED
#define REF_OWNS_add_scalar REF_SHARES(with_scalar, OP_ADD, 0)
#define REF_OWNS_sub_scalar REF_SHARES(with_scalar, OP_SUB, 0)
#define REF_OWNS_mul_scalar REF_SHARES(with_scalar, OP_MUL, 0)
#define REF_OWNS_div_scalar REF_SHARES(with_scalar, OP_DIV, 0)
#define REF_OWNS_rsub_scalar REF_SHARES(with_scalar, OP_SUB, 1)
#define REF_OWNS_rdiv_scalar REF_SHARES(with_scalar, OP_DIV, 1)
/* value is a double holding a number of the compute type exactly (see
 * amprt/elementwise.h), so its conversion to ACC in the call does not round. */
#define REF_OWNS_addcmul REF_SHARES(bcast, OP_ADDCMUL)
#define REF_OWNS_addcdiv REF_SHARES(bcast, OP_ADDCDIV)
#define REF_OWNS_lerp REF_SHARES(bcast, OP_LERP)
#define REF_OWNS_glu REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
