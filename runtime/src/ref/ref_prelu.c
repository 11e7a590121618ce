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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_prelu REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
