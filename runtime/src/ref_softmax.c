/*
 * ref_softmax.c - reference softmax and log_softmax along one axis.
 *
 * Layout: the input is [outer, dim, inner] in row-major order; the reduced
 * axis has length dim and stride inner, and each of the outer * inner
 * positions is reduced independently.
 *
 * Numerics follow PyTorch: subtract the row max m, then
 *     softmax     y = exp(x - m) / sum exp(x - m)
 *     log_softmax y = (x - m) - log(sum exp(x - m))
 * all in f32, with one rounding per output. exp(x - m) <= 1 never overflows,
 * and the sum is at least 1 (the max term) unless the row has no finite
 * maximum: a row of -inf gives -inf - -inf = NaN everywhere, as PyTorch does,
 * and a NaN or +inf makes the whole row NaN.
 *
 * exp(x - m) is recomputed in the last pass rather than stored in y, which
 * would round it to the storage dtype before the division. Every pass reads
 * x[d] before writing y[d], so y may alias x.
 */
#include <math.h>

#include "amprt_internal.h"

static AMP_ALWAYS_INLINE void softmax(amp_dtype t, int take_log, int64_t outer, int64_t dim, int64_t inner,
                                      const void *x, void *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * dim * inner + in;
            float max = -INFINITY, sum = 0.0f;

            for (int64_t d = 0; d < dim; d++) {
                float v = amp_ld(t, x, base + d * inner);
                if (v > max)
                    max = v;
            }
            for (int64_t d = 0; d < dim; d++)
                sum += expf(amp_ld(t, x, base + d * inner) - max);
            float log_sum = take_log ? logf(sum) : 0.0f;
            for (int64_t d = 0; d < dim; d++) {
                float shifted = amp_ld(t, x, base + d * inner) - max;
                amp_st(t, y, base + d * inner, take_log ? shifted - log_sum : expf(shifted) / sum);
            }
        }
}

#define SOFTMAX_KERNELS(T)                                                                        \
    void amp_ref_softmax_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *x,   \
                             AMP_CTYPE_##T *y)                                                    \
    {                                                                                             \
        softmax(AMP_DTYPE_##T, 0, outer, dim, inner, x, y);                                       \
    }                                                                                             \
    void amp_ref_log_softmax_##T(int64_t outer, int64_t dim, int64_t inner,                       \
                                 const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                        \
    {                                                                                             \
        softmax(AMP_DTYPE_##T, 1, outer, dim, inner, x, y);                                       \
    }

AMP_FOR_EACH_KERNEL_DTYPE(SOFTMAX_KERNELS)
