/*
 * amprt/norm.h - part of amprt.h (include that, not this): the
 * normalisation layers, layer_norm, group_norm and batch_norm (inference and
 * training forms).  Their gradients are in amprt/backward.h.
 *
 * Conventions are amprt.h's (T in f64, f32, bf16, f16; f32 opmath for the
 * three narrow ones, f64 for f64; one rounding per output element; scalar
 * parameters as double).  Inputs are contiguous.
 *
 *  layer_norm over the last `inner` elements of each of `outer` rows:
 *             (x - mean) / sqrt(var + eps) * weight + bias, biased variance.
 *             weight and bias have `inner` elements of dtype param_dtype
 *             (T, or f32 under a narrower T: PyTorch's mixed type) and may
 *             be NULL.
 *  group_norm x [N, C, HxW], statistics per (n, group of C/groups channels);
 *             weight, bias per channel, as layer_norm's.
 *  batch_norm x [N, C, HxW]: inference form with running_mean/running_var
 *             (param_dtype, C each): (x - mean_c) / sqrt(var_c + eps) * w_c + b_c.
 *  batch_norm_train  the training form: batch statistics (biased variance
 *             to normalise); when running_mean/var are not NULL they are
 *             updated in place with momentum, using the unbiased variance,
 *             as PyTorch does.
 */
#ifndef AMPRT_NORM_H
#define AMPRT_NORM_H

#define AMP_NORM_OF_CTYPE(X, T, CT)                                                      \
    X(layer_norm, T, void,                                                               \
      (int64_t outer, int64_t inner, const CT *x, amp_dtype param_dtype,                 \
       const void *weight, const void *bias, double eps, CT *y),                         \
      (outer, inner, x, param_dtype, weight, bias, eps, y))                              \
    X(group_norm, T, void,                                                               \
      (int64_t N, int64_t C, int64_t HxW, int64_t groups, const CT *x,                   \
       amp_dtype param_dtype, const void *weight, const void *bias, double eps, CT *y),  \
      (N, C, HxW, groups, x, param_dtype, weight, bias, eps, y))                         \
    X(batch_norm, T, void,                                                               \
      (int64_t N, int64_t C, int64_t HxW, const CT *x, amp_dtype param_dtype,            \
       const void *running_mean, const void *running_var, const void *weight,            \
       const void *bias, double eps, CT *y),                                             \
      (N, C, HxW, x, param_dtype, running_mean, running_var, weight, bias, eps, y))      \
    X(batch_norm_train, T, void,                                                         \
      (int64_t N, int64_t C, int64_t HxW, const CT *x, amp_dtype param_dtype,            \
       void *running_mean, void *running_var, const void *weight, const void *bias,      \
       double momentum, double eps, CT *y),                                              \
      (N, C, HxW, x, param_dtype, running_mean, running_var, weight, bias, momentum, eps, y))

#endif /* AMPRT_NORM_H */
