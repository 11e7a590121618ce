/*
 * amprt/reduce.h - part of amprt.h (include that, not this): reductions,
 * scans, normalisation, losses and sort.
 *
 * Conventions are amprt.h's (T in f64, f32, bf16, f16; f32 opmath for the
 * three narrow ones, f64 for f64; one rounding per output element; scalar
 * parameters as double).  Inputs are contiguous unless a stride is given.
 *
 *  sum, mean, prod, logsumexp, amax, amin, norm
 *      x has shape[0..ndim); reduce[d] is 1 for each dim reduced.  y holds
 *      the remaining dims in order (contiguous; keepdim is the same layout).
 *      ndim 0, or no dim reduced, copies.  mean of an empty set is NaN,
 *      sum 0, prod 1, logsumexp -inf, amax/amin of an empty set is the
 *      code generator's error (the reference gives -inf / +inf).  norm:
 *      p = 2 Euclidean, 1, INFINITY (max |x|), -INFINITY (min |x|), 0 (count
 *      of non-zeros, NaN counting), other p: (sum |x|^p)^(1/p); INFINITY /
 *      -INFINITY of an empty set is an error too (reference: 0 / +inf).
 *      NaN propagates through amax/amin (among equal values, -0 and +0
 *      included, the first one is kept, as PyTorch).  logsumexp shifts by
 *      the max unless it is infinite, as PyTorch: all -inf gives -inf.
 *  cumsum, cumprod
 *      along an axis of length dim and stride inner, for each of outer x
 *      inner positions; the running value is kept in the compute dtype.
 *  trace      y[0] = sum of x[i][i] for x [rows, cols].
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
 *  pointwise losses  amp_<loss>_<T>(n, input, target, weight, p0, p1, p2,
 *             reduction, y): y has n elements for AMP_REDUCTION_NONE, else
 *             one.  weight (n elements, may be NULL) multiplies each term.
 *             mse_loss, l1_loss; smooth_l1_loss p0 = beta; huber_loss
 *             p0 = delta; kl_div p0 = log_target (0/1); binary_cross_entropy
 *             (log clamped at -100, as PyTorch); binary_cross_entropy_with_logits
 *             (stable form); soft_margin_loss; hinge_embedding_loss p0 = margin;
 *             poisson_nll_loss p0 = log_input, p1 = full, p2 = eps.
 *  cross_entropy    logits x [N, C, inner] (inner 1 for [N, C]), class
 *             targets [N, inner] (i64), optional class weight [C];
 *             label_smoothing as PyTorch; mean divides by the summed
 *             weights of non-ignored targets.  Returns AMP_OK or, writing
 *             nothing, nll_loss's errors in its order: AMP_ERR_BAD_DIM,
 *             _BAD_REDUCTION, _NULL_ARG, _TARGET_OUT_OF_RANGE.
 *  cross_entropy_prob   the same with class-probability targets of x's shape.
 *  nll_loss_nd      nll_loss over x [N, C, inner] (nll_loss2d and
 *             higher); same contract as nll_loss.
 *  sort       along an axis (outer, dim, inner as softmax): values and i64
 *             indices; stable; NaN sorts as the largest, as PyTorch.
 *             values must not overlap x.
 */
#define AMP_REDUCE_ROW(op, X, T, CT)                                                     \
    X(op##_##T, void, (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, CT *y), \
      (ndim, shape, reduce, x, y))
#define AMP_REDUCE_OPS(R, X, T, CT)                                                      \
    R(sum, X, T, CT) R(mean, X, T, CT) R(prod, X, T, CT) R(logsumexp, X, T, CT)          \
    R(amax, X, T, CT) R(amin, X, T, CT)

#define AMP_POINTWISE_LOSS_ROW(op, X, T, CT)                                             \
    X(op##_##T, void,                                                                    \
      (size_t n, const CT *input, const CT *target, const CT *weight, double p0,         \
       double p1, double p2, int reduction, CT *y),                                      \
      (n, input, target, weight, p0, p1, p2, reduction, y))
#define AMP_POINTWISE_LOSSES(L, X, T, CT)                                                \
    L(mse_loss, X, T, CT) L(l1_loss, X, T, CT) L(smooth_l1_loss, X, T, CT)               \
    L(huber_loss, X, T, CT) L(kl_div, X, T, CT) L(binary_cross_entropy, X, T, CT)        \
    L(binary_cross_entropy_with_logits, X, T, CT) L(soft_margin_loss, X, T, CT)          \
    L(hinge_embedding_loss, X, T, CT) L(poisson_nll_loss, X, T, CT)

#define AMP_REDUCE_OF_CTYPE(X, T, CT)                                                    \
    AMP_REDUCE_OPS(AMP_REDUCE_ROW, X, T, CT)                                             \
    X(norm_##T, void,                                                                    \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x, CT *y), \
      (ndim, shape, reduce, p, x, y))                                                    \
    X(cumsum_##T, void, (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y), \
      (outer, dim, inner, x, y))                                                         \
    X(cumprod_##T, void, (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y), \
      (outer, dim, inner, x, y))                                                         \
    X(trace_##T, void, (int64_t rows, int64_t cols, const CT *x, CT *y), (rows, cols, x, y)) \
    X(layer_norm_##T, void,                                                              \
      (int64_t outer, int64_t inner, const CT *x, amp_dtype param_dtype,                 \
       const void *weight, const void *bias, double eps, CT *y),                         \
      (outer, inner, x, param_dtype, weight, bias, eps, y))                              \
    X(group_norm_##T, void,                                                              \
      (int64_t N, int64_t C, int64_t HxW, int64_t groups, const CT *x,                   \
       amp_dtype param_dtype, const void *weight, const void *bias, double eps, CT *y),  \
      (N, C, HxW, groups, x, param_dtype, weight, bias, eps, y))                         \
    X(batch_norm_##T, void,                                                              \
      (int64_t N, int64_t C, int64_t HxW, const CT *x, amp_dtype param_dtype,            \
       const void *running_mean, const void *running_var, const void *weight,            \
       const void *bias, double eps, CT *y),                                             \
      (N, C, HxW, x, param_dtype, running_mean, running_var, weight, bias, eps, y))      \
    X(batch_norm_train_##T, void,                                                        \
      (int64_t N, int64_t C, int64_t HxW, const CT *x, amp_dtype param_dtype,            \
       void *running_mean, void *running_var, const void *weight, const void *bias,      \
       double momentum, double eps, CT *y),                                              \
      (N, C, HxW, x, param_dtype, running_mean, running_var, weight, bias, momentum, eps, y)) \
    AMP_POINTWISE_LOSSES(AMP_POINTWISE_LOSS_ROW, X, T, CT)                               \
    X(cross_entropy_##T, int,                                                            \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const int64_t *target,          \
       const CT *weight, int64_t ignore_index, double label_smoothing, int reduction,     \
       CT *y),                                                                           \
      (N, C, inner, x, target, weight, ignore_index, label_smoothing, reduction, y))     \
    X(cross_entropy_prob_##T, void,                                                      \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const CT *target,               \
       const CT *weight, double label_smoothing, int reduction, CT *y),                  \
      (N, C, inner, x, target, weight, label_smoothing, reduction, y))                   \
    X(nll_loss_nd_##T, int,                                                              \
      (int64_t N, int64_t C, int64_t inner, const CT *logp, const int64_t *target,       \
       const CT *weight, int64_t ignore_index, int reduction, CT *y),                    \
      (N, C, inner, logp, target, weight, ignore_index, reduction, y))                   \
    X(sort_##T, void,                                                                    \
      (int64_t outer, int64_t dim, int64_t inner, int descending, const CT *x,           \
       CT *values, int64_t *indices),                                                    \
      (outer, dim, inner, descending, x, values, indices))
