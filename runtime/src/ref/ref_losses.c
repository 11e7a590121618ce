/*
 * ref_losses.c - reference loss kernels: the pointwise losses (mse, l1,
 * smooth_l1, huber, kl_div, binary_cross_entropy and its logits form,
 * soft_margin, hinge_embedding, poisson_nll), cross_entropy with class
 * indices or class probabilities, and nll_loss_nd.
 *
 * Bodies are in ref_losses.inc, instantiated for ACC float (f32, bf16, f16)
 * and ACC double (f64) by ref_acc_twice.h. Each loss term is computed in
 * ACC from the stored inputs, summed in ACC in index order, and only the
 * outputs are rounded, once each. (PyTorch rounds the intermediate
 * log_softmax, smoothed targets and per-element losses of a bf16/f16 input
 * to that dtype before reducing; amprt's one-rounding contract does not.)
 *
 * cross_entropy and nll_loss_nd check their arguments like nll_loss, since
 * targets are run-time data: everything is checked before anything is
 * written.
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_expf.h"

typedef enum {
    LOSS_MSE,
    LOSS_L1,
    LOSS_SMOOTH_L1,
    LOSS_HUBER,
    LOSS_KL_DIV,
    LOSS_BCE,
    LOSS_BCE_WITH_LOGITS,
    LOSS_SOFT_MARGIN,
    LOSS_HINGE_EMBEDDING,
    LOSS_POISSON_NLL
} pointwise_loss;

/* nll_loss's checks, for a [N, C, inner] input with [N, inner] targets:
 * AMP_ERR_BAD_DIM, AMP_ERR_BAD_REDUCTION, AMP_ERR_NULL_ARG, then
 * AMP_ERR_TARGET_OUT_OF_RANGE. */
static int check_class_targets(int64_t N, int64_t C, int64_t inner, const void *x, const int64_t *target,
                               int64_t ignore_index, int reduction, const void *y)
{
    int64_t positions;
    if (N < 0 || C < 0 || inner < 0)
        return AMP_ERR_BAD_DIM;
    if (reduction != AMP_REDUCTION_NONE && reduction != AMP_REDUCTION_MEAN && reduction != AMP_REDUCTION_SUM)
        return AMP_ERR_BAD_REDUCTION;
    positions = N * inner;
    if (positions > 0 && (x == NULL || target == NULL))
        return AMP_ERR_NULL_ARG;
    if (y == NULL && (positions > 0 || reduction != AMP_REDUCTION_NONE))
        return AMP_ERR_NULL_ARG;
    for (int64_t i = 0; i < positions; i++)
        if (target[i] != ignore_index && (target[i] < 0 || target[i] >= C))
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

#define REF_PART "ref_losses.inc"
#include "ref_acc_twice.h"

#define POINTWISE_KERNEL(op, code, T)                                                             \
    void amp_ref_##op##_##T(size_t n, const AMP_CTYPE_##T *input, const AMP_CTYPE_##T *target,    \
                            const AMP_CTYPE_##T *weight, double p0, double p1, double p2,         \
                            int reduction, AMP_CTYPE_##T *y)                                      \
    {                                                                                             \
        REF_BODY_##T(pointwise)(AMP_DTYPE_##T, code, n, input, target, weight, p0, p1, p2,        \
                                reduction, y);                                                    \
    }

#define LOSS_KERNELS(T)                                                                           \
    POINTWISE_KERNEL(mse_loss, LOSS_MSE, T)                                                       \
    POINTWISE_KERNEL(l1_loss, LOSS_L1, T)                                                         \
    POINTWISE_KERNEL(smooth_l1_loss, LOSS_SMOOTH_L1, T)                                           \
    POINTWISE_KERNEL(huber_loss, LOSS_HUBER, T)                                                   \
    POINTWISE_KERNEL(kl_div, LOSS_KL_DIV, T)                                                      \
    POINTWISE_KERNEL(binary_cross_entropy, LOSS_BCE, T)                                           \
    POINTWISE_KERNEL(binary_cross_entropy_with_logits, LOSS_BCE_WITH_LOGITS, T)                   \
    POINTWISE_KERNEL(soft_margin_loss, LOSS_SOFT_MARGIN, T)                                       \
    POINTWISE_KERNEL(hinge_embedding_loss, LOSS_HINGE_EMBEDDING, T)                               \
    POINTWISE_KERNEL(poisson_nll_loss, LOSS_POISSON_NLL, T)                                       \
    int amp_ref_cross_entropy_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *x,    \
                                  const int64_t *target, const AMP_CTYPE_##T *weight,             \
                                  int64_t ignore_index, double label_smoothing, int reduction,    \
                                  AMP_CTYPE_##T *y)                                               \
    {                                                                                             \
        return REF_BODY_##T(class_loss)(AMP_DTYPE_##T, 1, N, C, inner, x, target, weight,         \
                                        ignore_index, label_smoothing, reduction, y);             \
    }                                                                                             \
    int amp_ref_nll_loss_nd_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *logp,   \
                                const int64_t *target, const AMP_CTYPE_##T *weight,               \
                                int64_t ignore_index, int reduction, AMP_CTYPE_##T *y)            \
    {                                                                                             \
        return REF_BODY_##T(class_loss)(AMP_DTYPE_##T, 0, N, C, inner, logp, target, weight,      \
                                        ignore_index, 0.0, reduction, y);                         \
    }                                                                                             \
    void amp_ref_cross_entropy_prob_##T(int64_t N, int64_t C, int64_t inner,                      \
                                        const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *target,      \
                                        const AMP_CTYPE_##T *weight, double label_smoothing,      \
                                        int reduction, AMP_CTYPE_##T *y)                          \
    {                                                                                             \
        REF_BODY_##T(cross_entropy_prob)(AMP_DTYPE_##T, N, C, inner, x, target, weight,           \
                                         label_smoothing, reduction, y);                          \
    }

LOSS_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_KERNELS)
