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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_quantile REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
