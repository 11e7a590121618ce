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
 *
 * nll_loss_nd is hand-written: the class body takes a zero smoothing among
 * the entry's arguments.
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

#define LOSS_KERNELS(T)                                                                           \
    int amp_ref_nll_loss_nd_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *logp,   \
                                const int64_t *target, const AMP_CTYPE_##T *weight,               \
                                int64_t ignore_index, int reduction, AMP_CTYPE_##T *y)            \
    {                                                                                             \
        return REF_BODY_##T(class_loss)(AMP_DTYPE_##T, 0, N, C, inner, logp, target, weight,      \
                                        ignore_index, 0.0, reduction, y);                         \
    }

LOSS_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_mse_loss REF_SHARES(pointwise, LOSS_MSE)
#define REF_OWNS_l1_loss REF_SHARES(pointwise, LOSS_L1)
#define REF_OWNS_smooth_l1_loss REF_SHARES(pointwise, LOSS_SMOOTH_L1)
#define REF_OWNS_huber_loss REF_SHARES(pointwise, LOSS_HUBER)
#define REF_OWNS_kl_div REF_SHARES(pointwise, LOSS_KL_DIV)
#define REF_OWNS_binary_cross_entropy REF_SHARES(pointwise, LOSS_BCE)
#define REF_OWNS_binary_cross_entropy_with_logits REF_SHARES(pointwise, LOSS_BCE_WITH_LOGITS)
#define REF_OWNS_soft_margin_loss REF_SHARES(pointwise, LOSS_SOFT_MARGIN)
#define REF_OWNS_hinge_embedding_loss REF_SHARES(pointwise, LOSS_HINGE_EMBEDDING)
#define REF_OWNS_poisson_nll_loss REF_SHARES(pointwise, LOSS_POISSON_NLL)
#define REF_OWNS_cross_entropy REF_SHARES(class_loss, 1)
#define REF_OWNS_cross_entropy_prob REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
