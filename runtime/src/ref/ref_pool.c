/*
 * ref_pool.c - reference max, average and adaptive average and max pooling over 1,
 * 2 or 3 spatial dims, with PyTorch's windows.
 *
 * Each window is reduced in ACC (f32 for f32/bf16/f16, f64 for f64) in
 * row-major order and the result rounded to the storage dtype once; the
 * bodies live in ref_pool.inc, instantiated once per ACC below. As in
 * ref_conv.c, the nspatial dims are the last of a 3-d geometry whose
 * leading dims are trivial (size 1, kernel 1, stride 1, no padding).
 *
 * Windows are clipped as PyTorch clips them (ref_window.h, shared with the
 * gradients in ref_backward_spatial.c). out_size may come from ceil_mode,
 * so the last window may start inside the right padding or run past it;
 * the clipping handles both.
 */
#include <math.h>

#include "amprt_internal.h"
#include "ref_window.h"

#define REF_PART "ref_pool.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_max_pool REF_OWNED
#define REF_OWNS_avg_pool REF_OWNED
#define REF_OWNS_adaptive_avg_pool REF_OWNED
#define REF_OWNS_adaptive_max_pool REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
