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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_prelu_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
