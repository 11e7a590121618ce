/*
 * ref_backward_quantile.c - reference gradient of quantile and nanquantile
 * (amprt/backward.h): dy to the one or two sorted positions the quantile
 * interpolated.
 *
 * Bodies are in ref_backward_quantile.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"
#include "ref_heapsort.h"

#define REF_PART "ref_backward_quantile.inc"
#include "ref_acc_twice.h"

#define BACKWARD_QUANTILE_KERNELS(T)                                                              \
    void amp_ref_quantile_backward_##T(int64_t outer, int64_t len, int64_t inner, double q,       \
                                       int interpolation, int ignore_nan,                         \
                                       const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *dy,           \
                                       AMP_CTYPE_##T *dx, double *work)                           \
    {                                                                                             \
        REF_BODY_##T(quantile_backward)(AMP_DTYPE_##T, outer, len, inner, q, interpolation,       \
                                        ignore_nan, x, dy, dx, work);                             \
    }

BACKWARD_QUANTILE_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(BACKWARD_QUANTILE_KERNELS)
