/*
 * ref_backward_more.c - reference gradient kernels of amprt/backward_more.h:
 * prelu, prod, cumprod, quantile, renorm, cosine_similarity, cdist, pdist and
 * the margin losses (margin_ranking, cosine_embedding, triplet_margin,
 * multi_margin, multilabel_margin).  The index losses trust their targets:
 * the forward checked them.
 *
 * Formulas are PyTorch's autograd ones (derivatives.yaml), evaluated in ACC
 * (f32 for f32/bf16/f16, f64 for f64) from the stored inputs and rounded
 * once per output element.  Products are recomputed from x in ACC rather
 * than read back from the forward's rounded result, so a narrow dtype's
 * gradient carries one rounding, not two.  Bodies in ref_backward_more.inc,
 * instantiated twice by ref_acc_twice.h.
 */
#include <math.h>

#include "amprt_internal.h"

/* As ref_reduce.c: the offset in x of the index'th element of the
 * sub-lattice of dims whose reduce flag equals `reduced`. */
static AMP_ALWAYS_INLINE int64_t bwm_offset(int64_t index, int ndim, const int64_t *shape, const uint8_t *reduce,
                                            int reduced)
{
    int64_t offset = 0, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if ((reduce[d] != 0) == reduced) {
            offset += (index % shape[d]) * stride;
            index /= shape[d];
        }
        stride *= shape[d];
    }
    return offset;
}

static AMP_ALWAYS_INLINE int64_t bwm_count(int ndim, const int64_t *shape, const uint8_t *reduce, int reduced)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++)
        if ((reduce[d] != 0) == reduced)
            count *= shape[d];
    return count;
}

/* Offset of flat element i (row-major over shape) in an operand read
 * through `stride` (0 along a broadcast dim), as ref_extra.c's. */
static AMP_ALWAYS_INLINE int64_t bwm_strided(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        offset += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return offset;
}

static AMP_ALWAYS_INLINE int64_t bwm_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

/* Ascending heapsort of n doubles without NaN (as ref_more.c's, for the
 * quantile's order statistics: the same values, so the same ranks). */
static void bwm_sort(double *a, int64_t n)
{
    for (int64_t start = n / 2 - 1, end = n;;) {
        int64_t root;
        if (start >= 0) {
            root = start--;
        } else {
            if (--end <= 0)
                break;
            double t = a[0];
            a[0] = a[end];
            a[end] = t;
            root = 0;
        }
        for (;;) {
            int64_t child = 2 * root + 1;
            if (child >= end)
                break;
            if (child + 1 < end && a[child + 1] > a[child])
                child++;
            if (!(a[child] > a[root]))
                break;
            double t = a[root];
            a[root] = a[child];
            a[child] = t;
            root = child;
        }
    }
}

#define REF_PART "ref_backward_more.inc"
#include "ref_acc_twice.h"

#define MORE_BW_KERNELS(T)                                                                        \
    void amp_ref_prelu_backward_##T(int64_t outer, int64_t channels, int64_t inner,               \
                                    int64_t nweight, const AMP_CTYPE_##T *x,                      \
                                    const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *dy,              \
                                    AMP_CTYPE_##T *dx, AMP_CTYPE_##T *dw)                         \
    {                                                                                             \
        REF_BODY_##T(prelu_backward)(AMP_DTYPE_##T, outer, channels, inner, nweight, x, w, dy,    \
                                     dx, dw);                                                     \
    }                                                                                             \
    void amp_ref_prod_backward_##T(int ndim, const int64_t *shape, const uint8_t *reduce,         \
                                   const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *dy,               \
                                   AMP_CTYPE_##T *dx)                                             \
    {                                                                                             \
        REF_BODY_##T(prod_backward)(AMP_DTYPE_##T, ndim, shape, reduce, x, dy, dx);               \
    }                                                                                             \
    void amp_ref_cumprod_backward_##T(int64_t outer, int64_t len, int64_t inner,                  \
                                      const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *dy,            \
                                      AMP_CTYPE_##T *dx, double *work)                            \
    {                                                                                             \
        REF_BODY_##T(cumprod_backward)(AMP_DTYPE_##T, outer, len, inner, x, dy, dx, work);        \
    }                                                                                             \
    void amp_ref_quantile_backward_##T(int64_t outer, int64_t len, int64_t inner, double q,       \
                                       int interpolation, int ignore_nan,                         \
                                       const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *dy,           \
                                       AMP_CTYPE_##T *dx, double *work)                           \
    {                                                                                             \
        REF_BODY_##T(quantile_backward)(AMP_DTYPE_##T, outer, len, inner, q, interpolation,       \
                                        ignore_nan, x, dy, dx, work);                             \
    }                                                                                             \
    void amp_ref_cosine_similarity_backward_##T(int ndim, const int64_t *shape, int dim,          \
                                                const AMP_CTYPE_##T *a, const int64_t *a_stride,  \
                                                const AMP_CTYPE_##T *b, const int64_t *b_stride,  \
                                                double eps, const AMP_CTYPE_##T *dy,              \
                                                AMP_CTYPE_##T *da, AMP_CTYPE_##T *db)             \
    {                                                                                             \
        REF_BODY_##T(cosine_similarity_backward)(AMP_DTYPE_##T, ndim, shape, dim, a, a_stride, b, \
                                                 b_stride, eps, dy, da, db);                      \
    }                                                                                             \
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
    void amp_ref_renorm_backward_##T(int64_t outer, int64_t len, int64_t inner, double p,         \
                                     double maxnorm, const AMP_CTYPE_##T *x,                      \
                                     const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                  \
    {                                                                                             \
        REF_BODY_##T(renorm_backward)(AMP_DTYPE_##T, outer, len, inner, p, maxnorm, x, dy, dx);   \
    }                                                                                             \
    void amp_ref_cdist_backward_##T(int64_t batch, int64_t P, int64_t R, int64_t M, double p,     \
                                    const AMP_CTYPE_##T *x1, const AMP_CTYPE_##T *x2,             \
                                    const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx1,                  \
                                    AMP_CTYPE_##T *dx2, double *work)                             \
    {                                                                                             \
        REF_BODY_##T(cdist_backward)(AMP_DTYPE_##T, batch, P, R, M, p, x1, x2, dy, dx1, dx2,      \
                                     work);                                                       \
    }                                                                                             \
    void amp_ref_pdist_backward_##T(int64_t N, int64_t M, double p, const AMP_CTYPE_##T *x,       \
                                    const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx, double *work)     \
    {                                                                                             \
        REF_BODY_##T(pdist_backward)(AMP_DTYPE_##T, N, M, p, x, dy, dx, work);                    \
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

MORE_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(MORE_BW_KERNELS)
