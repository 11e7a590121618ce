/*
 * ref_norm.c - reference normalisation kernels: layer_norm, group_norm,
 * batch_norm (inference, running statistics) and batch_norm_train (batch
 * statistics, optional running-statistics update).
 *
 * Bodies are in ref_norm.inc, instantiated for ACC float (f32, bf16, f16)
 * and ACC double (f64) by ref_acc_twice.h.
 *
 * Numerics. Statistics are two-pass in ACC: the mean, then the sum of
 * squared deviations from it, which cannot go negative and loses nothing to
 * cancellation (PyTorch's CPU kernels use Welford or a one-pass form in the
 * same ACC; the results agree within ACC rounding). layer_norm adds each
 * row up in AMP_ROW_LANES lanes, then folds them (amp_mathf.h): the order
 * the vector layer_norm of x86/avx512_rows.c and avx2_rows.c adds in, so
 * that they agree bit for bit; batch_norm_train adds each channel up in
 * the same 16 lanes, lane s mod 16 of each image's row
 * (ref_batch_moments.inc), the order of the vector kernels'
 * batch_norm_train and batch_norm_backward. The output is
 * (x - mean) * (1 / sqrt(var + eps)) * weight + bias, rounded once.
 * weight, bias and running statistics have dtype param_dtype, read (and, for
 * the running statistics, written) through LD/ST, so a bf16 input with f32
 * parameters (PyTorch's mixed-type CPU path) keeps its parameters in f32.
 *
 * Each group of statistics is read completely before any of its outputs is
 * written, and groups do not overlap, so y may alias x.
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_mathf.h"

#define REF_PART "ref_norm.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_layer_norm REF_OWNED
#define REF_OWNS_group_norm REF_OWNED
#define REF_OWNS_batch_norm REF_OWNED
#define REF_OWNS_batch_norm_train REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
