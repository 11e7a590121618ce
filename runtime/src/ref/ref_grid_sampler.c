/*
 * ref_grid_sampler.c - reference grid_sampler (amprt/spatial.h): bilinear or
 * nearest sampling of 2-d and 3-d inputs at grid coordinates, with zeros,
 * border or reflection padding.
 *
 * Bodies are in ref_grid_sampler.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

static AMP_ALWAYS_INLINE int64_t ref_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

#define REF_PART "ref_grid_sampler.inc"
#include "ref_acc_twice.h"

#define GRID_SAMPLER_KERNELS(T)                                                                   \
    void amp_ref_grid_sampler_##T(int nspatial, int64_t N, int64_t C, const int64_t *in_size,     \
                                  const int64_t *out_size, int mode, int padding,                 \
                                  int align_corners, const AMP_CTYPE_##T *x,                      \
                                  const AMP_CTYPE_##T *grid, AMP_CTYPE_##T *y)                    \
    {                                                                                             \
        REF_BODY_##T(grid_sampler)(AMP_DTYPE_##T, nspatial, N, C, in_size, out_size, mode,        \
                                   padding, align_corners, x, grid, y);                           \
    }

GRID_SAMPLER_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(GRID_SAMPLER_KERNELS)
