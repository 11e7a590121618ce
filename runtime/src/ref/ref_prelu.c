/*
 * ref_prelu.c - reference prelu (amprt/elementwise.h): x, or x times the
 * channel's slope where x is negative.
 *
 * Bodies are in ref_prelu.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_prelu.inc"
#include "ref_acc_twice.h"

#define PRELU_KERNELS(T)                                                                          \
    void amp_ref_prelu_##T(int64_t outer, int64_t channels, int64_t inner, int64_t nweight,       \
                           const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *w, AMP_CTYPE_##T *y)      \
    {                                                                                             \
        REF_BODY_##T(prelu)(AMP_DTYPE_##T, outer, channels, inner, nweight, x, w, y);             \
    }

PRELU_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(PRELU_KERNELS)
