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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_quantile_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
