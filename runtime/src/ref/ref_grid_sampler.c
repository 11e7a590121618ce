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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_grid_sampler REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
