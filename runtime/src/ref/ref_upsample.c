/*
 * ref_upsample.c - reference upsampling (PyTorch's interpolate without
 * antialias): nearest, linear/bilinear/trilinear and bicubic, over 1, 2 or
 * 3 spatial dims.
 *
 * The source coordinates follow PyTorch's CPU kernels step by step (the
 * ratio from the user's scale factor or the sizes, the half-pixel or
 * align_corners mapping, floorf, the caps at the last input), because a
 * different but mathematically equal formula can pick a different nearest
 * neighbour. Weights and sums are in ACC (f32 for f32/bf16/f16, f64 for
 * f64) and each output is rounded once; PyTorch stores the interpolation
 * weights in the storage dtype, so for bf16/f16 it can be an ulp or so
 * further from the exact value than this kernel.
 *
 * The body lives in ref_upsample.inc, instantiated once per ACC below; as
 * in ref_conv.c, the nspatial dims are the last of a 3-d geometry whose
 * leading dims are trivial (size 1, one tap of weight 1).
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_upsample.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_upsample REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
