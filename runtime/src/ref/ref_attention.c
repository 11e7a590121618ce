/*
 * ref_attention.c - reference scaled dot-product attention (sdpa).  The
 * body is in ref_attention.inc, instantiated once per compute type: f32,
 * bf16 and f16 compute in float, f64 in double.
 */
#include <math.h>

#include "amprt_internal.h"

/* Output columns accumulated per pass over the keys (stack space only). */
#define SDPA_CHUNK 64

#define REF_PART "ref_attention.inc"
#include "ref_acc_twice.h"

#define SDPA_KERNEL(T, ACC_SUFFIX)                                                                  \
    void amp_ref_sdpa_##T(const amp_sdpa_desc *d, const AMP_CTYPE_##T *q, const AMP_CTYPE_##T *k,   \
                          const AMP_CTYPE_##T *v, const AMP_CTYPE_##T *mask, const uint8_t *bool_mask, \
                          AMP_CTYPE_##T *y)                                                         \
    {                                                                                               \
        sdpa##ACC_SUFFIX(AMP_DTYPE_##T, d, q, k, v, mask, bool_mask, y);                            \
    }

SDPA_KERNEL(f64, _dacc)
SDPA_KERNEL(f32, _facc)
SDPA_KERNEL(bf16, _facc)
SDPA_KERNEL(f16, _facc)
