/*
 * ref_extra.c - reference kernels of amprt/extra.h: prelu, renorm,
 * cosine_similarity, cross, index_put (indices and masks), grid_sampler and
 * the margin losses.
 *
 * Bodies are in ref_extra.inc, instantiated for ACC float (f32, bf16, f16)
 * and ACC double (f64) by ref_acc_twice.h: every value is computed in ACC
 * from the stored inputs and each output is rounded once.  The kernels
 * reading run-time indices check them all before writing anything.
 */
#include <math.h>

#include "amprt_internal.h"

/* Element offset of flat index i (row-major over shape[0..ndim)) in an
 * operand read with `stride`. */
static AMP_ALWAYS_INLINE int64_t extra_offset(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
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

static AMP_ALWAYS_INLINE int64_t extra_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

/* index_put's checks: every index in [-dim0, dim0). */
static int extra_check_index(int64_t n, const int64_t *index, int64_t dim0)
{
    for (int64_t j = 0; j < n; j++)
        if (index[j] < -dim0 || index[j] >= dim0)
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

static AMP_ALWAYS_INLINE int64_t extra_wrap(int64_t i, int64_t n)
{
    return i < 0 ? i + n : i;
}

#define REF_PART "ref_extra.inc"
#include "ref_acc_twice.h"

#define EXTRA_KERNELS(T)                                                                          \
    void amp_ref_prelu_##T(int64_t outer, int64_t channels, int64_t inner, int64_t nweight,       \
                           const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *w, AMP_CTYPE_##T *y)      \
    {                                                                                             \
        REF_BODY_##T(prelu)(AMP_DTYPE_##T, outer, channels, inner, nweight, x, w, y);             \
    }                                                                                             \
    void amp_ref_renorm_##T(int64_t outer, int64_t len, int64_t inner, double p, double maxnorm,  \
                            const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                             \
    {                                                                                             \
        REF_BODY_##T(renorm)(AMP_DTYPE_##T, outer, len, inner, p, maxnorm, x, y);                 \
    }                                                                                             \
    void amp_ref_cosine_similarity_##T(int ndim, const int64_t *shape, int dim,                   \
                                       const AMP_CTYPE_##T *a, const int64_t *a_stride,           \
                                       const AMP_CTYPE_##T *b, const int64_t *b_stride,           \
                                       double eps, AMP_CTYPE_##T *y)                              \
    {                                                                                             \
        REF_BODY_##T(cosine_similarity)(AMP_DTYPE_##T, ndim, shape, dim, a, a_stride, b,          \
                                        b_stride, eps, y);                                        \
    }                                                                                             \
    void amp_ref_cross_##T(int ndim, const int64_t *shape, int dim, const AMP_CTYPE_##T *a,       \
                           const int64_t *a_stride, const AMP_CTYPE_##T *b,                       \
                           const int64_t *b_stride, AMP_CTYPE_##T *y)                             \
    {                                                                                             \
        REF_BODY_##T(cross)(AMP_DTYPE_##T, ndim, shape, dim, a, a_stride, b, b_stride, y);        \
    }                                                                                             \
    int amp_ref_index_put_##T(int ndim, const int64_t *shape, int index_ndim,                     \
                              const int64_t *index, int64_t x_dim0, const AMP_CTYPE_##T *values,  \
                              const int64_t *v_stride, int accumulate, AMP_CTYPE_##T *y)          \
    {                                                                                             \
        return REF_BODY_##T(index_put)(AMP_DTYPE_##T, ndim, shape, index_ndim, index, x_dim0,     \
                                       values, v_stride, accumulate, y);                          \
    }                                                                                             \
    void amp_ref_index_put_mask_##T(int ndim, const int64_t *x_shape, int mask_ndim,              \
                                    const uint8_t *mask, const AMP_CTYPE_##T *values,             \
                                    const int64_t *v_stride, int accumulate, AMP_CTYPE_##T *y)    \
    {                                                                                             \
        REF_BODY_##T(index_put_mask)(AMP_DTYPE_##T, ndim, x_shape, mask_ndim, mask, values,       \
                                     v_stride, accumulate, y);                                    \
    }                                                                                             \
    void amp_ref_grid_sampler_##T(int nspatial, int64_t N, int64_t C, const int64_t *in_size,     \
                                  const int64_t *out_size, int mode, int padding,                 \
                                  int align_corners, const AMP_CTYPE_##T *x,                      \
                                  const AMP_CTYPE_##T *grid, AMP_CTYPE_##T *y)                    \
    {                                                                                             \
        REF_BODY_##T(grid_sampler)(AMP_DTYPE_##T, nspatial, N, C, in_size, out_size, mode,        \
                                   padding, align_corners, x, grid, y);                           \
    }                                                                                             \
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

EXTRA_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(EXTRA_KERNELS)
