/*
 * ref_backward_margin_loss.c - reference gradients of the margin losses
 * (amprt/margin_loss.h).
 *
 * Bodies are in ref_backward_margin_loss.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

/* Offset of flat element i (row-major over shape) in an operand read
 * through `stride` (0 along a broadcast dim), as the forward kernels' ref_offset. */
static AMP_ALWAYS_INLINE int64_t ref_strided(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        offset += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return offset;
}

static AMP_ALWAYS_INLINE int64_t ref_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

#define REF_PART "ref_backward_margin_loss.inc"
#include "ref_acc_twice.h"

#define BACKWARD_MARGIN_LOSS_KERNELS(T)                                                           \
    void amp_ref_margin_ranking_loss_backward_##T(                                                \
        int ndim, const int64_t *shape, const AMP_CTYPE_##T *a, const int64_t *a_stride,          \
        const AMP_CTYPE_##T *b, const int64_t *b_stride, const AMP_CTYPE_##T *target,             \
        const int64_t *t_stride, double margin, int reduction, const AMP_CTYPE_##T *dloss,        \
        AMP_CTYPE_##T *da, AMP_CTYPE_##T *db, AMP_CTYPE_##T *dtarget)                             \
    {                                                                                             \
        REF_BODY_##T(margin_ranking_backward)(AMP_DTYPE_##T, ndim, shape, a, a_stride, b,         \
                                              b_stride, target, t_stride, margin, reduction,      \
                                              dloss, da, db, dtarget);                            \
    }                                                                                             \
    void amp_ref_cosine_embedding_loss_backward_##T(                                              \
        int64_t N, int64_t D, const AMP_CTYPE_##T *x1, const int64_t *x1_stride,                  \
        const AMP_CTYPE_##T *x2, const int64_t *x2_stride, const AMP_CTYPE_##T *target,           \
        int64_t target_stride, double margin, int reduction, const AMP_CTYPE_##T *dloss,          \
        AMP_CTYPE_##T *dx1, AMP_CTYPE_##T *dx2)                                                   \
    {                                                                                             \
        REF_BODY_##T(cosine_embedding_backward)(AMP_DTYPE_##T, N, D, x1, x1_stride, x2,           \
                                                x2_stride, target, target_stride, margin,         \
                                                reduction, dloss, dx1, dx2);                      \
    }                                                                                             \
    void amp_ref_triplet_margin_loss_backward_##T(                                                \
        int64_t N, int64_t D, const AMP_CTYPE_##T *a, const int64_t *a_stride,                    \
        const AMP_CTYPE_##T *pos, const int64_t *p_stride, const AMP_CTYPE_##T *neg,              \
        const int64_t *n_stride, double margin, double p, double eps, int swap, int reduction,    \
        const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *da, AMP_CTYPE_##T *dp, AMP_CTYPE_##T *dn,      \
        double *work)                                                                             \
    {                                                                                             \
        REF_BODY_##T(triplet_backward)(AMP_DTYPE_##T, N, D, a, a_stride, pos, p_stride, neg,      \
                                       n_stride, margin, p, eps, swap, reduction, dloss, da, dp,  \
                                       dn, work);                                                 \
    }                                                                                             \
    void amp_ref_multi_margin_loss_backward_##T(int64_t N, int64_t C, const AMP_CTYPE_##T *x,     \
                                                const int64_t *target, int p, double margin,      \
                                                const AMP_CTYPE_##T *weight, int reduction,       \
                                                const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dx)    \
    {                                                                                             \
        REF_BODY_##T(multi_margin_backward)(AMP_DTYPE_##T, N, C, x, target, p, margin, weight,    \
                                            reduction, dloss, dx);                                \
    }                                                                                             \
    void amp_ref_multilabel_margin_loss_backward_##T(int64_t N, int64_t C,                        \
                                                     const AMP_CTYPE_##T *x,                      \
                                                     const int64_t *target, int reduction,        \
                                                     const AMP_CTYPE_##T *dloss,                  \
                                                     AMP_CTYPE_##T *dx, double *work)             \
    {                                                                                             \
        REF_BODY_##T(multilabel_margin_backward)(AMP_DTYPE_##T, N, C, x, target, reduction,       \
                                                 dloss, dx, work);                                \
    }

BACKWARD_MARGIN_LOSS_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(BACKWARD_MARGIN_LOSS_KERNELS)
