/*
 * ref_backward_loss.c - reference gradient kernels of amprt/backward.h for
 * the losses: nll_loss, cross_entropy (class and probability targets) and
 * the pointwise losses of amprt/reduce.h.
 *
 * Formulas are PyTorch's backward ones, in ACC (f32 for f32/bf16/f16, f64
 * for f64), each output rounded once. The targets were checked by the
 * forward, so these kernels trust them. Bodies in ref_backward_loss.inc.
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_expf.h"

#define LOSS_ENUMERATOR(op, X, T, CT) LBW_##op,
typedef enum { AMP_POINTWISE_LOSSES(LOSS_ENUMERATOR, ~, ~, ~) } loss_backward_op;

#define REF_PART "ref_backward_loss.inc"
#include "ref_acc_twice.h"

#define POINTWISE_BW_KERNEL(op, X, T, CT)                                                         \
    void amp_ref_##op##_backward_##T(size_t n, const CT *input, const CT *target,                 \
                                     const CT *weight, double p0, double p1, double p2,           \
                                     int reduction, const CT *dloss, CT *dinput)                  \
    {                                                                                             \
        REF_BODY_##T(pointwise_backward)(AMP_DTYPE_##T, LBW_##op, n, input, target, weight, p0,   \
                                         p1, p2, reduction, dloss, dinput);                       \
    }

#define LOSS_BW_KERNELS(T)                                                                        \
    AMP_POINTWISE_LOSSES(POINTWISE_BW_KERNEL, ~, T, AMP_CTYPE_##T)                                \
    void amp_ref_nll_loss_backward_##T(int64_t N, int64_t C, int64_t inner,                       \
                                       const int64_t *target, const AMP_CTYPE_##T *weight,        \
                                       int64_t ignore_index, int reduction,                       \
                                       const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dlogp)          \
    {                                                                                             \
        REF_BODY_##T(class_backward)(AMP_DTYPE_##T, 0, N, C, inner, NULL, target, weight,         \
                                     ignore_index, 0.0, reduction, dloss, dlogp);                 \
    }                                                                                             \
    void amp_ref_cross_entropy_backward_##T(int64_t N, int64_t C, int64_t inner,                  \
                                            const AMP_CTYPE_##T *x, const int64_t *target,        \
                                            const AMP_CTYPE_##T *weight, int64_t ignore_index,    \
                                            double label_smoothing, int reduction,                \
                                            const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dx)        \
    {                                                                                             \
        REF_BODY_##T(class_backward)(AMP_DTYPE_##T, 1, N, C, inner, x, target, weight,            \
                                     ignore_index, label_smoothing, reduction, dloss, dx);        \
    }                                                                                             \
    int amp_ref_cross_entropy_with_grad_##T(int64_t N, int64_t C, int64_t inner,                  \
                                            const AMP_CTYPE_##T *x, const int64_t *target,        \
                                            const AMP_CTYPE_##T *weight, int64_t ignore_index,    \
                                            double label_smoothing, int reduction,                \
                                            const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *y,         \
                                            AMP_CTYPE_##T *dx)                                    \
    {                                                                                             \
        int status = amp_ref_cross_entropy_##T(N, C, inner, x, target, weight, ignore_index,      \
                                               label_smoothing, reduction, y);                    \
        if (status == AMP_OK)                                                                     \
            amp_ref_cross_entropy_backward_##T(N, C, inner, x, target, weight, ignore_index,      \
                                               label_smoothing, reduction, dloss, dx);            \
        return status;                                                                            \
    }                                                                                             \
    void amp_ref_cross_entropy_prob_backward_##T(int64_t N, int64_t C, int64_t inner,             \
                                                 const AMP_CTYPE_##T *x,                          \
                                                 const AMP_CTYPE_##T *target,                     \
                                                 const AMP_CTYPE_##T *weight,                     \
                                                 double label_smoothing, int reduction,           \
                                                 const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dx)   \
    {                                                                                             \
        REF_BODY_##T(prob_backward)(AMP_DTYPE_##T, N, C, inner, x, target, weight,                \
                                    label_smoothing, reduction, dloss, dx);                       \
    }

LOSS_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_BW_KERNELS)
