/*
 * ref_distance.c - reference cdist and pdist (p-norm distances between
 * rows).  The bodies are in ref_distance.inc, instantiated once per
 * compute type: f32, bf16 and f16 compute in float, f64 in double.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_distance.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_cdist REF_OWNED
#define REF_OWNS_pdist REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
