/*
 * ref_backward_loss.c - reference gradient kernels of amprt/backward.h for
 * the losses: nll_loss, cross_entropy (class and probability targets) and
 * the pointwise losses of amprt/reduce.h.
 *
 * Formulas are PyTorch's backward ones, in ACC (f32 for f32/bf16/f16, f64
 * for f64), each output rounded once. The targets were checked by the
 * forward, so these kernels trust them. Bodies in ref_backward_loss.inc.
 *
 * Hand-written wrappers, which do more than pass the entry's arguments to a
 * body: nll_loss_backward (the class body takes no input and no smoothing
 * among them) and cross_entropy_with_grad (the forward, then the backward).
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_expf.h"

#define LOSS_ENUMERATOR(op, X, T, CT) LBW_##op##_backward,
typedef enum { AMP_POINTWISE_LOSSES(LOSS_ENUMERATOR, ~, ~, ~) } loss_backward_op;

#define REF_PART "ref_backward_loss.inc"
#include "ref_acc_twice.h"

/* The pointwise losses' wrappers, from their list: every loss shares one
 * body, told apart by its enumerator (ref_wrapper.h's REF_SHARED_WRAPPER). */
#define POINTWISE_BW_X(kernel, T, ret, params, args) \
    REF_SHARED_WRAPPER(pointwise_backward, LBW_##kernel, kernel, T, ret, params, args)
#define POINTWISE_BW_KERNELS(T) AMP_POINTWISE_LOSSES(AMP_LOSS_BACKWARD_ROW, POINTWISE_BW_X, T, AMP_CTYPE_##T)
POINTWISE_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(POINTWISE_BW_KERNELS)

#define LOSS_BW_KERNELS(T)                                                                        \
    void amp_ref_nll_loss_backward_##T(int64_t N, int64_t C, int64_t inner,                       \
                                       const int64_t *target, const AMP_CTYPE_##T *weight,        \
                                       int64_t ignore_index, int reduction,                       \
                                       const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dlogp)          \
    {                                                                                             \
        REF_BODY_##T(class_backward)(AMP_DTYPE_##T, 0, N, C, inner, NULL, target, weight,         \
                                     ignore_index, 0.0, reduction, dloss, dlogp);                 \
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
    }

LOSS_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_BW_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_cross_entropy_backward REF_SHARES(class_backward, 1)
#define REF_OWNS_cross_entropy_prob_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
