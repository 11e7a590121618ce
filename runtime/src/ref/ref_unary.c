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
#include "amp_mathf.h"

/* One enumerator per op of the header's lists: UOP_exp, POP_clamp, ... */
#define UNARY_ENUMERATOR(op, X, T, CT) UOP_##op,
#define PARAM_ENUMERATOR(op, X, T, CT) POP_##op,
typedef enum { AMP_UNARY_OPS(UNARY_ENUMERATOR, ~, ~, ~) } unary_op;
typedef enum { AMP_UNARY_PARAM_OPS(PARAM_ENUMERATOR, ~, ~, ~) } param_op;

#define REF_PART "ref_unary.inc"
#include "ref_acc_twice.h"

/* The wrappers of the per-op lists: every op of a list shares one body,
 * told apart by the op's enumerator (ref_wrapper.h's REF_SHARED_WRAPPER).
 * The parameters are doubles holding numbers of the compute type exactly
 * (amprt/elementwise.h), so their conversion to it in the call does not
 * round. */
#define UNARY_X(kernel, T, ret, params, args) \
    REF_SHARED_WRAPPER(map_unary, UOP_##kernel, kernel, T, ret, params, args)
#define PARAM_X(kernel, T, ret, params, args) \
    REF_SHARED_WRAPPER(map_unary_param, POP_##kernel, kernel, T, ret, params, args)
#define UNARY_KERNELS(T)                                                                          \
    AMP_UNARY_OPS(AMP_UNARY_ROW, UNARY_X, T, AMP_CTYPE_##T)                                       \
    AMP_UNARY_PARAM_OPS(AMP_UNARY_PARAM_ROW, PARAM_X, T, AMP_CTYPE_##T)

UNARY_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(UNARY_KERNELS)
