/*
 * ref_backward_norm.c - reference gradient kernels of amprt/backward.h for
 * layer_norm, group_norm and batch_norm (training and inference forms).
 *
 * Statistics are recomputed from x exactly as ref_norm.inc computes them
 * (two passes in ACC: the mean, then the squared deviations; rstd =
 * 1 / sqrt(var + eps); batch_norm's in the lanes of
 * ref_batch_moments.inc, as batch_norm_train takes them). With xhat =
 * (x - mean) rstd and g = dy * weight, the input gradient of a
 * normalisation over a set of n elements is
 *     dx = rstd (g - mean(g) - xhat mean(g xhat))
 * (PyTorch's formula, rearranged); dweight sums dy xhat and dbias dy over
 * everything sharing the parameter. The inference form of batch_norm uses
 * the running statistics: dx = dy w rstd. Parameters and their gradients
 * have dtype param_dtype; sums are ACC and each output is rounded once
 * (the parameter sums, which span several rows, are kept in ACC buffers on
 * the stack, BW_NORM_CHUNK parameters at a time).
 *
 * layer_norm_backward adds a row up as ref_norm.inc's layer_norm does (in
 * AMP_ROW_LANES lanes, folded: amp_mathf.h), its statistics and its sums
 * of g and g xhat alike, the operations of the avx2 and AVX-512 sets'
 * vector kernels (x86/avx2_rows.c, avx512_rows.c), which agree with it bit
 * for bit; group_norm_backward adds in element order.  Both are
 * hand-written wrappers.
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_mathf.h"

#define BW_NORM_CHUNK 256

#define REF_PART "ref_backward_norm.inc"
#include "ref_acc_twice.h"

#define NORM_BW_KERNELS(T)                                                                        \
    void amp_ref_layer_norm_backward_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x,    \
                                         amp_dtype param_dtype, const void *weight, double eps,   \
                                         const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx,              \
                                         void *dweight, void *dbias)                              \
    {                                                                                             \
        REF_BODY_##T(layer_norm_backward)(AMP_DTYPE_##T, outer, inner, x, param_dtype, weight,    \
                                          eps, dy, dx, dweight, dbias);                           \
    }                                                                                             \
    void amp_ref_group_norm_backward_##T(int64_t N, int64_t C, int64_t HxW, int64_t groups,       \
                                         const AMP_CTYPE_##T *x, amp_dtype param_dtype,           \
                                         const void *weight, double eps,                          \
                                         const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx,              \
                                         void *dweight, void *dbias)                              \
    {                                                                                             \
        REF_BODY_##T(group_norm_backward)(AMP_DTYPE_##T, N, C, HxW, groups, x, param_dtype,       \
                                          weight, eps, dy, dx, dweight, dbias);                   \
    }

NORM_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(NORM_BW_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_batch_norm_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
