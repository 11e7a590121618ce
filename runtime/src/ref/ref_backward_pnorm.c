/*
 * ref_backward_pnorm.c - reference gradients of the p-norm kernels: renorm,
 * cosine_similarity, cdist and pdist (amprt/backward.h).
 *
 * Bodies are in ref_backward_pnorm.inc, instantiated for ACC float (f32, bf16,
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

#define REF_PART "ref_backward_pnorm.inc"
#include "ref_acc_twice.h"

#define BACKWARD_PNORM_KERNELS(T)                                                                 \
    void amp_ref_cosine_similarity_backward_##T(int ndim, const int64_t *shape, int dim,          \
                                                const AMP_CTYPE_##T *a, const int64_t *a_stride,  \
                                                const AMP_CTYPE_##T *b, const int64_t *b_stride,  \
                                                double eps, const AMP_CTYPE_##T *dy,              \
                                                AMP_CTYPE_##T *da, AMP_CTYPE_##T *db)             \
    {                                                                                             \
        REF_BODY_##T(cosine_similarity_backward)(AMP_DTYPE_##T, ndim, shape, dim, a, a_stride, b, \
                                                 b_stride, eps, dy, da, db);                      \
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
    }

BACKWARD_PNORM_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(BACKWARD_PNORM_KERNELS)
