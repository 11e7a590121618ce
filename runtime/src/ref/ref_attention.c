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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_sdpa REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
