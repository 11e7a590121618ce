/*
 * ref_margin_loss.c - reference kernels of amprt/margin_loss.h: the margin
 * losses (multilabel_margin, multi_margin, cosine_embedding, margin_ranking,
 * triplet_margin); the class-target ones check their targets first.
 *
 * Bodies are in ref_margin_loss.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

/* Element offset of flat index i (row-major over shape[0..ndim)) in an
 * operand read with `stride`. */
static AMP_ALWAYS_INLINE int64_t ref_offset(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t n = shape[d];
        if (n > 0) {
            off += (i % n) * stride[d];
            i /= n;
        }
    }
    return off;
}

static AMP_ALWAYS_INLINE int64_t ref_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

#define REF_PART "ref_margin_loss.inc"
#include "ref_acc_twice.h"

#define MARGIN_LOSS_KERNELS(T)                                                                    \
    int amp_ref_multilabel_margin_loss_##T(int64_t N, int64_t C, const AMP_CTYPE_##T *x,          \
                                           const int64_t *target, int reduction,                  \
                                           AMP_CTYPE_##T *y)                                      \
    {                                                                                             \
        return REF_BODY_##T(multilabel_margin)(AMP_DTYPE_##T, N, C, x, target, reduction, y);     \
    }                                                                                             \
    int amp_ref_multi_margin_loss_##T(int64_t N, int64_t C, const AMP_CTYPE_##T *x,               \
                                      const int64_t *target, int p, double margin,                \
                                      const AMP_CTYPE_##T *weight, int reduction,                 \
                                      AMP_CTYPE_##T *y)                                           \
    {                                                                                             \
        return REF_BODY_##T(multi_margin)(AMP_DTYPE_##T, N, C, x, target, p, margin, weight,      \
                                          reduction, y);                                          \
    }                                                                                             \
    void amp_ref_cosine_embedding_loss_##T(int64_t N, int64_t D, const AMP_CTYPE_##T *x1,         \
                                           const int64_t *x1_stride, const AMP_CTYPE_##T *x2,     \
                                           const int64_t *x2_stride,                              \
                                           const AMP_CTYPE_##T *target, int64_t target_stride,    \
                                           double margin, int reduction, AMP_CTYPE_##T *y)        \
    {                                                                                             \
        REF_BODY_##T(cosine_embedding)(AMP_DTYPE_##T, N, D, x1, x1_stride, x2, x2_stride, target, \
                                       target_stride, margin, reduction, y);                      \
    }                                                                                             \
    void amp_ref_margin_ranking_loss_##T(int ndim, const int64_t *shape, const AMP_CTYPE_##T *a,  \
                                         const int64_t *a_stride, const AMP_CTYPE_##T *b,         \
                                         const int64_t *b_stride, const AMP_CTYPE_##T *target,    \
                                         const int64_t *t_stride, double margin, int reduction,   \
                                         AMP_CTYPE_##T *y)                                        \
    {                                                                                             \
        REF_BODY_##T(margin_ranking)(AMP_DTYPE_##T, ndim, shape, a, a_stride, b, b_stride,        \
                                     target, t_stride, margin, reduction, y);                     \
    }                                                                                             \
    void amp_ref_triplet_margin_loss_##T(int64_t N, int64_t D, const AMP_CTYPE_##T *a,            \
                                         const int64_t *a_stride, const AMP_CTYPE_##T *pos,       \
                                         const int64_t *p_stride, const AMP_CTYPE_##T *neg,       \
                                         const int64_t *n_stride, double margin, double p,        \
                                         double eps, int swap, int reduction, AMP_CTYPE_##T *y)   \
    {                                                                                             \
        REF_BODY_##T(triplet_margin)(AMP_DTYPE_##T, N, D, a, a_stride, pos, p_stride, neg,        \
                                     n_stride, margin, p, eps, swap, reduction, y);               \
    }

MARGIN_LOSS_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(MARGIN_LOSS_KERNELS)
