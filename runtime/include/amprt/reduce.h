/*
 * amprt/reduce.h - part of amprt.h (include that, not this): reductions,
 * scans, quantiles, p-norms of slices, losses and sort (the normalisation
 * layers are in amprt/norm.h).
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
 *  var, std (x, shape, reduce and y as sum; p the correction)
 *      the sum of squared deviations from the slice's mean (two passes in
 *      the compute type) over max(0, n - p), std its square root: n <= p
 *      gives inf, or NaN for a slice with no spread, as PyTorch.
 *  argmax, argmin  along the middle axis of [outer, len, inner]: y [outer,
 *      inner] (i64) the index of the first largest (smallest) element, a
 *      NaN counting as larger (smaller) than everything, as PyTorch; len 0
 *      is the code generator's error (the reference writes 0).
 *  all, any (any dtype t: float, i64, i32, bool)  y (bool, one byte 0 or
 *      1) over the kept dims of x, shape and reduce as sum: whether every
 *      (some) element is non-zero; NaN is non-zero, -0 is zero.  all of
 *      nothing is 1, any of nothing 0.
 *  cumsum, cumprod
 *      along an axis of length dim and stride inner, for each of outer x
 *      inner positions; the running value is kept in the compute dtype.
 *  trace      y[0] = sum of x[i][i] for x [rows, cols].
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
 *
 *  quantile     x [outer, len, inner] -> y [outer, inner]: PyTorch's
 *               quantile of each slice along the middle axis, q in [0, 1]:
 *               rank = q (n - 1) in the compute type over the n sorted values
 *               (n = len; ignore_nan (nanquantile): n = the non-NaN count);
 *               interpolation AMP_QUANTILE_LINEAR (PyTorch's lerp between
 *               the values at floor(rank) and ceil(rank)), _LOWER, _HIGHER,
 *               _NEAREST (rank rounded half to even), _MIDPOINT (their
 *               mean).  A slice holding a NaN gives NaN (quantile), as does
 *               an all-NaN or empty slice.  work: len doubles, reused per
 *               slice (the sorted values, exact in double).
 *  renorm       x [outer, len, inner]: each of the len slices along the
 *               middle axis (outer x inner elements) is scaled by
 *               maxnorm / (norm + 1e-7) when its p-norm exceeds maxnorm
 *               (PyTorch's factor); p > 0, INFINITY for max |x|.
 *  cosine_similarity  over the broadcast shape[0..ndim), along `dim`:
 *               y = sum (a / max(||a||, eps)) (b / max(||b||, eps)),
 *               PyTorch's (>= 1.12) formula; y has shape without dim.
 *  margin losses  reductions are amp_reduction: NONE writes one loss per
 *             sample, MEAN their mean (0/0 = NaN when there are none, as
 *             PyTorch), SUM their sum; the sum runs in the compute type,
 *             in sample order.
 *  multilabel_margin_loss  x, target [N, C]: each sample's targets are
 *               target's entries before its first negative one; loss = sum
 *               over targets j and non-targets i of max(0, 1 - x[j] + x[i])
 *               / C.  Returns AMP_ERR_TARGET_OUT_OF_RANGE (writing nothing)
 *               for a target entry >= C before the first negative one.
 *  multi_margin_loss  x [N, C], target [N]: loss = sum over i != t of
 *               max(0, margin - x[t] + x[i])^p (times weight[t] when weight
 *               is not NULL) / C; p is 1 or 2.  Returns
 *               AMP_ERR_TARGET_OUT_OF_RANGE (writing nothing) for a target
 *               outside [0, C).
 *  cosine_embedding_loss  rows n < N of length D, x1[n, d] at x1_stride[0] n
 *               + x1_stride[1] d (likewise x2; target[n] at target_stride
 *               n): cos = sum x1 x2 / sqrt((sum x1^2 + 1e-12)(sum x2^2 +
 *               1e-12)); loss = 1 - cos where target is 1, max(0, cos -
 *               margin) where it is -1, else 0.
 *  margin_ranking_loss  over the broadcast shape: max(0, -t (a - b) + margin).
 *  triplet_margin_loss  rows as cosine_embedding_loss: d(u, v) = ||u - v +
 *               eps||_p over the row (p = INFINITY: max, p = 0: count of
 *               non-zeros); loss = max(0, margin + d(a, p) - d(a, n)), with
 *               d(a, n) replaced by min(d(a, n), d(p, n)) under swap.
 */
enum {
    AMP_QUANTILE_LINEAR = 0,
    AMP_QUANTILE_LOWER = 1,
    AMP_QUANTILE_HIGHER = 2,
    AMP_QUANTILE_MIDPOINT = 3,
    AMP_QUANTILE_NEAREST = 4
};

#define AMP_REDUCE_ROW(op, X, T, CT)                                                     \
    X(op, T, void, (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, CT *y),    \
      (ndim, shape, reduce, x, y))
#define AMP_REDUCE_OPS(R, X, T, CT)                                                      \
    R(sum, X, T, CT) R(mean, X, T, CT) R(prod, X, T, CT) R(logsumexp, X, T, CT)          \
    R(amax, X, T, CT) R(amin, X, T, CT)

#define AMP_POINTWISE_LOSS_ROW(op, X, T, CT)                                             \
    X(op, T, void,                                                                       \
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
    X(norm, T, void,                                                                     \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x, CT *y), \
      (ndim, shape, reduce, p, x, y))                                                    \
    X(var, T, void,                                                                      \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x, CT *y), \
      (ndim, shape, reduce, p, x, y))                                                    \
    X(std, T, void,                                                                      \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x, CT *y), \
      (ndim, shape, reduce, p, x, y))                                                    \
    X(argmax, T, void, (int64_t outer, int64_t len, int64_t inner, const CT *x, int64_t *y),  \
      (outer, len, inner, x, y))                                                         \
    X(argmin, T, void, (int64_t outer, int64_t len, int64_t inner, const CT *x, int64_t *y),  \
      (outer, len, inner, x, y))                                                         \
    X(cumsum, T, void, (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y),  \
      (outer, dim, inner, x, y))                                                         \
    X(cumprod, T, void, (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y),  \
      (outer, dim, inner, x, y))                                                         \
    X(trace, T, void, (int64_t rows, int64_t cols, const CT *x, CT *y), (rows, cols, x, y))  \
    AMP_POINTWISE_LOSSES(AMP_POINTWISE_LOSS_ROW, X, T, CT)                               \
    X(cross_entropy, T, int,                                                             \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const int64_t *target,          \
       const CT *weight, int64_t ignore_index, double label_smoothing, int reduction,    \
       CT *y),                                                                           \
      (N, C, inner, x, target, weight, ignore_index, label_smoothing, reduction, y))     \
    X(cross_entropy_prob, T, void,                                                       \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const CT *target,               \
       const CT *weight, double label_smoothing, int reduction, CT *y),                  \
      (N, C, inner, x, target, weight, label_smoothing, reduction, y))                   \
    X(nll_loss_nd, T, int,                                                               \
      (int64_t N, int64_t C, int64_t inner, const CT *logp, const int64_t *target,       \
       const CT *weight, int64_t ignore_index, int reduction, CT *y),                    \
      (N, C, inner, logp, target, weight, ignore_index, reduction, y))                   \
    X(sort, T, void,                                                                     \
      (int64_t outer, int64_t dim, int64_t inner, int descending, const CT *x,           \
       CT *values, int64_t *indices),                                                    \
      (outer, dim, inner, descending, x, values, indices))                               \
    X(quantile, T, void,                                                                 \
      (int64_t outer, int64_t len, int64_t inner, double q, int interpolation,           \
       int ignore_nan, const CT *x, double *work, CT *y),                                \
      (outer, len, inner, q, interpolation, ignore_nan, x, work, y))                     \
    X(renorm, T, void,                                                                   \
      (int64_t outer, int64_t len, int64_t inner, double p, double maxnorm, const CT *x, \
       CT *y),                                                                           \
      (outer, len, inner, p, maxnorm, x, y))                                             \
    X(cosine_similarity, T, void,                                                        \
      (int ndim, const int64_t *shape, int dim, const CT *a, const int64_t *a_stride,    \
       const CT *b, const int64_t *b_stride, double eps, CT *y),                         \
      (ndim, shape, dim, a, a_stride, b, b_stride, eps, y))                              \
    X(multilabel_margin_loss, T, int,                                                    \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int reduction, CT *y),  \
      (N, C, x, target, reduction, y))                                                   \
    X(multi_margin_loss, T, int,                                                         \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int p, double margin,   \
       const CT *weight, int reduction, CT *y),                                          \
      (N, C, x, target, p, margin, weight, reduction, y))                                \
    X(cosine_embedding_loss, T, void,                                                    \
      (int64_t N, int64_t D, const CT *x1, const int64_t *x1_stride, const CT *x2,       \
       const int64_t *x2_stride, const CT *target, int64_t target_stride, double margin, \
       int reduction, CT *y),                                                            \
      (N, D, x1, x1_stride, x2, x2_stride, target, target_stride, margin, reduction, y)) \
    X(margin_ranking_loss, T, void,                                                      \
      (int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, const CT *b, \
       const int64_t *b_stride, const CT *target, const int64_t *t_stride, double margin, \
       int reduction, CT *y),                                                            \
      (ndim, shape, a, a_stride, b, b_stride, target, t_stride, margin, reduction, y))   \
    X(triplet_margin_loss, T, void,                                                      \
      (int64_t N, int64_t D, const CT *a, const int64_t *a_stride, const CT *pos,        \
       const int64_t *p_stride, const CT *neg, const int64_t *n_stride, double margin,   \
       double p, double eps, int swap, int reduction, CT *y),                            \
      (N, D, a, a_stride, pos, p_stride, neg, n_stride, margin, p, eps, swap, reduction, y))

/* all and any, for every dtype (amp_dtype t): see the list above. */
#define AMP_REDUCE_ANY_DTYPE_KERNELS(X)                                                  \
    X(all, none, void,                                                                   \
      (amp_dtype t, int ndim, const int64_t *shape, const uint8_t *reduce, const void *x, \
       uint8_t *y),                                                                      \
      (t, ndim, shape, reduce, x, y))                                                    \
    X(any, none, void,                                                                   \
      (amp_dtype t, int ndim, const int64_t *shape, const uint8_t *reduce, const void *x, \
       uint8_t *y),                                                                      \
      (t, ndim, shape, reduce, x, y))
