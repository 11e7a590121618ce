/*
 * ref_backward_prelu.c - reference gradient of prelu (amprt/backward.h).
 *
 * Bodies are in ref_backward_prelu.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_backward_prelu.inc"
#include "ref_acc_twice.h"

#define BACKWARD_PRELU_KERNELS(T)                                                                 \
    void amp_ref_prelu_backward_##T(int64_t outer, int64_t channels, int64_t inner,               \
                                    int64_t nweight, const AMP_CTYPE_##T *x,                      \
                                    const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *dy,              \
                                    AMP_CTYPE_##T *dx, AMP_CTYPE_##T *dw)                         \
    {                                                                                             \
        REF_BODY_##T(prelu_backward)(AMP_DTYPE_##T, outer, channels, inner, nweight, x, w, dy,    \
                                     dx, dw);                                                     \
    }

BACKWARD_PRELU_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(BACKWARD_PRELU_KERNELS)
