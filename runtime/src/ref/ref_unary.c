/*
 * ref_unary.c - reference unary elementwise kernels of amprt/elementwise.h:
 * the parameterless ops (exp ... silu) and those with two scalar
 * parameters (softplus, clamp, pow_scalar, rpow_scalar, hardtanh,
 * leaky_relu, elu, fmod_scalar, remainder_scalar).
 *
 * y[i] = f(x[i]) computed in f32 (f64 for f64) and rounded once; y may
 * alias x, since each element is read before it is written. The bodies
 * are in ref_unary.inc, compiled once in float and once in double.
 */
#include <math.h>

#include "amprt_internal.h"

/* One enumerator per op of the header's lists: UOP_exp, POP_clamp, ... */
#define UNARY_ENUMERATOR(op, X, T, CT) UOP_##op,
#define PARAM_ENUMERATOR(op, X, T, CT) POP_##op,
typedef enum { AMP_UNARY_OPS(UNARY_ENUMERATOR, ~, ~, ~) } unary_op;
typedef enum { AMP_UNARY_PARAM_OPS(PARAM_ENUMERATOR, ~, ~, ~) } param_op;

#define REF_PART "ref_unary.inc"
#include "ref_acc_twice.h"

#define UNARY_KERNEL(op, X, T, CT)                                                                \
    void amp_ref_##op##_##T(size_t n, const CT *x, CT *y)                                         \
    {                                                                                             \
        REF_BODY_##T(map_unary)(AMP_DTYPE_##T, UOP_##op, n, x, y);                                \
    }

/* The parameters are doubles holding numbers of the compute type exactly
 * (amprt/elementwise.h), so converting them to it does not round. */
#define PARAM_KERNEL(op, X, T, CT)                                                                \
    void amp_ref_##op##_##T(size_t n, const CT *x, double p0, double p1, CT *y)                   \
    {                                                                                             \
        REF_BODY_##T(map_unary_param)(AMP_DTYPE_##T, POP_##op, n, x, (AMP_ACC_##T)p0,             \
                                     (AMP_ACC_##T)p1, y);                                         \
    }

#define UNARY_KERNELS(T)                                                                          \
    AMP_UNARY_OPS(UNARY_KERNEL, ~, T, AMP_CTYPE_##T)                                              \
    AMP_UNARY_PARAM_OPS(PARAM_KERNEL, ~, T, AMP_CTYPE_##T)

UNARY_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(UNARY_KERNELS)
