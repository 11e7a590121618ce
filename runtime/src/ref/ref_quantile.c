/*
 * ref_quantile.c - reference quantile and nanquantile (amprt/reduce.h):
 * each slice sorted in double, then interpolated as PyTorch does.
 *
 * Bodies are in ref_quantile.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"
#include "ref_heapsort.h"

#define REF_PART "ref_quantile.inc"
#include "ref_acc_twice.h"

#define QUANTILE_KERNELS(T)                                                                       \
    void amp_ref_quantile_##T(int64_t outer, int64_t len, int64_t inner, double q,                \
                              int interpolation, int ignore_nan, const AMP_CTYPE_##T *x,          \
                              double *work, AMP_CTYPE_##T *y)                                     \
    {                                                                                             \
        REF_BODY_##T(quantile)(AMP_DTYPE_##T, outer, len, inner, q, interpolation, ignore_nan, x, \
                               work, y);                                                          \
    }

QUANTILE_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(QUANTILE_KERNELS)
