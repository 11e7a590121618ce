/*
 * ref_elementwise.c - reference elementwise kernels: same-shape binary ops
 * (add, sub, mul, div, maximum, atan2, pow, minimum, fmod, remainder), neg and relu, tensor-scalar
 * ops, broadcasting binary ops, addcmul/addcdiv, lerp and glu.
 *
 * The bodies are in ref_elementwise.inc, compiled once computing in float
 * (f32, bf16, f16) and once in double (f64).
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

#define BINARY(name, op, T)                                                                       \
    void amp_ref_##name##_##T(size_t n, const AMP_CTYPE_##T *a, const AMP_CTYPE_##T *b,           \
                              AMP_CTYPE_##T *y)                                                   \
    {                                                                                             \
        REF_BODY_##T(binary)(AMP_DTYPE_##T, op, n, a, b, y);                                      \
    }

#define SCALAR(name, op, reversed, T)                                                             \
    void amp_ref_##name##_scalar_##T(size_t n, const AMP_CTYPE_##T *a, double s, AMP_CTYPE_##T *y) \
    {                                                                                             \
        REF_BODY_##T(with_scalar)(AMP_DTYPE_##T, op, reversed, n, a, s, y);                       \
    }

#define UNARY(name, T)                                                                            \
    void amp_ref_##name##_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                 \
    {                                                                                             \
        REF_BODY_##T(name)(AMP_DTYPE_##T, n, x, y);                                               \
    }

#define BCAST(name, op, T)                                                                        \
    void amp_ref_##name##_bcast_##T(int ndim, const int64_t *shape, const AMP_CTYPE_##T *a,       \
                                    const int64_t *a_stride, const AMP_CTYPE_##T *b,              \
                                    const int64_t *b_stride, AMP_CTYPE_##T *y)                    \
    {                                                                                             \
        REF_BODY_##T(bcast)(AMP_DTYPE_##T, op, ndim, shape, a, a_stride, b, b_stride, NULL, NULL, \
                           0, y);                                                                 \
    }

/* value is a double holding a number of the compute type exactly (see
 * amprt/elementwise.h), so converting it to ACC does not round. */
#define TERNARY(name, op, T)                                                                      \
    void amp_ref_##name##_##T(int ndim, const int64_t *shape, const AMP_CTYPE_##T *x,             \
                              const int64_t *x_stride, const AMP_CTYPE_##T *t1,                   \
                              const int64_t *t1_stride, const AMP_CTYPE_##T *t2,                  \
                              const int64_t *t2_stride, double value, AMP_CTYPE_##T *y)           \
    {                                                                                             \
        REF_BODY_##T(bcast)(AMP_DTYPE_##T, op, ndim, shape, x, x_stride, t1, t1_stride, t2,       \
                           t2_stride, (AMP_ACC_##T)value, y);                                     \
    }

#define BINARY_AND_BCAST(name, op, T) BINARY(name, op, T) BCAST(name, op, T)

#define ELEMENTWISE_KERNELS(T)                                                                    \
    BINARY_AND_BCAST(add, OP_ADD, T) BINARY_AND_BCAST(sub, OP_SUB, T)                             \
    BINARY_AND_BCAST(mul, OP_MUL, T) BINARY_AND_BCAST(div, OP_DIV, T)                             \
    BINARY_AND_BCAST(maximum, OP_MAXIMUM, T) BINARY_AND_BCAST(atan2, OP_ATAN2, T)                 \
    BINARY_AND_BCAST(pow, OP_POW, T) BINARY_AND_BCAST(minimum, OP_MINIMUM, T)                     \
    BINARY_AND_BCAST(fmod, OP_FMOD, T) BINARY_AND_BCAST(remainder, OP_REMAINDER, T)               \
    UNARY(neg, T) UNARY(relu, T)                                                                  \
    SCALAR(add, OP_ADD, 0, T) SCALAR(sub, OP_SUB, 0, T)                                           \
    SCALAR(mul, OP_MUL, 0, T) SCALAR(div, OP_DIV, 0, T)                                           \
    SCALAR(rsub, OP_SUB, 1, T) SCALAR(rdiv, OP_DIV, 1, T)                                         \
    TERNARY(addcmul, OP_ADDCMUL, T) TERNARY(addcdiv, OP_ADDCDIV, T) TERNARY(lerp, OP_LERP, T)         \
    void amp_ref_glu_##T(int64_t outer, int64_t len, int64_t inner, const AMP_CTYPE_##T *x,       \
                         AMP_CTYPE_##T *y)                                                        \
    {                                                                                             \
        REF_BODY_##T(glu)(AMP_DTYPE_##T, outer, len, inner, x, y);                                \
    }

ELEMENTWISE_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(ELEMENTWISE_KERNELS)
