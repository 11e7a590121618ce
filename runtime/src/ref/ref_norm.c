/*
 * ref_norm.c - reference normalisation kernels: layer_norm, group_norm,
 * batch_norm (inference, running statistics) and batch_norm_train (batch
 * statistics, optional running-statistics update).
 *
 * Bodies are in ref_norm.inc, instantiated for ACC float (f32, bf16, f16)
 * and ACC double (f64) by ref_acc_twice.h.
 *
 * Numerics. Statistics are two-pass in ACC: the mean, then the sum of
 * squared deviations from it, which cannot go negative and loses nothing to
 * cancellation (PyTorch's CPU kernels use Welford or a one-pass form in the
 * same ACC; the results agree within ACC rounding). The output is
 * (x - mean) * (1 / sqrt(var + eps)) * weight + bias, rounded once.
 * weight, bias and running statistics have dtype param_dtype, read (and, for
 * the running statistics, written) through LD/ST, so a bf16 input with f32
 * parameters (PyTorch's mixed-type CPU path) keeps its parameters in f32.
 *
 * Each group of statistics is read completely before any of its outputs is
 * written, and groups do not overlap, so y may alias x.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_norm.inc"
#include "ref_acc_twice.h"

#define NORM_KERNELS(T)                                                                           \
    void amp_ref_layer_norm_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x,             \
                                amp_dtype param_dtype, const void *weight, const void *bias,      \
                                double eps, AMP_CTYPE_##T *y)                                     \
    {                                                                                             \
        REF_BODY_##T(layer_norm)(AMP_DTYPE_##T, outer, inner, x, param_dtype, weight, bias, eps,  \
                                 y);                                                              \
    }                                                                                             \
    void amp_ref_group_norm_##T(int64_t N, int64_t C, int64_t HxW, int64_t groups,                \
                                const AMP_CTYPE_##T *x, amp_dtype param_dtype, const void *weight, \
                                const void *bias, double eps, AMP_CTYPE_##T *y)                   \
    {                                                                                             \
        REF_BODY_##T(group_norm)(AMP_DTYPE_##T, N, C, HxW, groups, x, param_dtype, weight, bias,  \
                                 eps, y);                                                         \
    }                                                                                             \
    void amp_ref_batch_norm_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x,        \
                                amp_dtype param_dtype, const void *running_mean,                  \
                                const void *running_var, const void *weight, const void *bias,    \
                                double eps, AMP_CTYPE_##T *y)                                     \
    {                                                                                             \
        REF_BODY_##T(batch_norm)(AMP_DTYPE_##T, N, C, HxW, x, param_dtype, running_mean,          \
                                 running_var, weight, bias, eps, y);                              \
    }                                                                                             \
    void amp_ref_batch_norm_train_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x,  \
                                      amp_dtype param_dtype, void *running_mean,                  \
                                      void *running_var, const void *weight, const void *bias,    \
                                      double momentum, double eps, AMP_CTYPE_##T *y)              \
    {                                                                                             \
        REF_BODY_##T(batch_norm_train)(AMP_DTYPE_##T, N, C, HxW, x, param_dtype, running_mean,    \
                                       running_var, weight, bias, momentum, eps, y);              \
    }

NORM_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(NORM_KERNELS)
