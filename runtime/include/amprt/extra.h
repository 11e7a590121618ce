/*
 * amprt/extra.h - part of amprt.h (include that, not this): prelu, renorm,
 * cosine_similarity, cross, index_put, grid_sampler and the margin losses
 * (multilabel_margin, multi_margin, cosine_embedding, margin_ranking,
 * triplet_margin).  nuclear_norm and svd are composed by the code generator
 * from amp_svd_* (amprt/linalg.h), amp_sum_* and amp_copy_strided.
 *
 * Conventions are amprt.h's (T in f64, f32, bf16, f16; f32 opmath for the
 * three narrow ones, f64 for f64; one rounding per output element; scalar
 * parameters as double; outputs contiguous).  "Broadcast" operands are read
 * through their own element strides over the output's index space, 0
 * meaning broadcast along that dim.  Reductions are amp_reduction: NONE
 * writes one loss per sample, MEAN their mean (0/0 = NaN when there are
 * none, as PyTorch), SUM their sum; the sum runs in the compute type, in
 * sample order.
 *
 *  prelu        x [outer, channels, inner]: y = x > 0 ? x : w[c] x, with
 *               w [channels], or w [1] (nweight 1) shared by every channel.
 *  renorm       x [outer, len, inner]: each of the len slices along the
 *               middle axis (outer x inner elements) is scaled by
 *               maxnorm / (norm + 1e-7) when its p-norm exceeds maxnorm
 *               (PyTorch's factor); p > 0, INFINITY for max |x|.
 *  cosine_similarity  over the broadcast shape[0..ndim), along `dim`:
 *               y = sum (a / max(||a||, eps)) (b / max(||b||, eps)),
 *               PyTorch's (>= 1.12) formula; y has shape without dim.
 *  cross        over the broadcast shape, shape[dim] == 3: the 3-vector
 *               cross product a x b along dim; y has the whole shape.
 *  index_put    y already holds input, x_dim0 rows of `inner` elements.
 *               The index positions are shape[0..index_ndim) (index is
 *               contiguous over them), each selecting row index[j] (negative
 *               counts from the end); shape[index_ndim..ndim) are the row's
 *               dims (their product is inner).  values are read with
 *               v_stride over shape.  accumulate: y[row] += values, a row
 *               selected several times summing all its values in the
 *               compute type (one rounding); otherwise the last write wins.
 *               Returns AMP_ERR_TARGET_OUT_OF_RANGE (writing nothing) for
 *               an index outside [-x_dim0, x_dim0).
 *  index_put_mask  the same with a bool mask over the first mask_ndim dims
 *               of x (x_shape[0..ndim)): every position whose mask is 1 gets
 *               values, read with v_stride over the trailing dims
 *               x_shape[mask_ndim..ndim) (v_stride[0..mask_ndim) unused).
 *  grid_sampler x [N, C, in_size...], grid [N, out_size..., nspatial] (x, y
 *               and z coordinates in [-1, 1], x the last dim of x), y [N, C,
 *               out_size...]; nspatial 2 or 3.  mode 0 bilinear/trilinear,
 *               1 nearest (round half to even); padding 0 zeros, 1 border,
 *               2 reflection; align_corners as PyTorch.
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
#ifndef AMPRT_EXTRA_H
#define AMPRT_EXTRA_H

#define AMP_EXTRA_OF_CTYPE(X, T, CT)                                                     \
    X(prelu_##T, void,                                                                   \
      (int64_t outer, int64_t channels, int64_t inner, int64_t nweight, const CT *x,      \
       const CT *w, CT *y),                                                              \
      (outer, channels, inner, nweight, x, w, y))                                        \
    X(renorm_##T, void,                                                                  \
      (int64_t outer, int64_t len, int64_t inner, double p, double maxnorm, const CT *x, \
       CT *y),                                                                           \
      (outer, len, inner, p, maxnorm, x, y))                                             \
    X(cosine_similarity_##T, void,                                                       \
      (int ndim, const int64_t *shape, int dim, const CT *a, const int64_t *a_stride,    \
       const CT *b, const int64_t *b_stride, double eps, CT *y),                         \
      (ndim, shape, dim, a, a_stride, b, b_stride, eps, y))                              \
    X(cross_##T, void,                                                                   \
      (int ndim, const int64_t *shape, int dim, const CT *a, const int64_t *a_stride,    \
       const CT *b, const int64_t *b_stride, CT *y),                                     \
      (ndim, shape, dim, a, a_stride, b, b_stride, y))                                   \
    X(index_put_##T, int,                                                                \
      (int ndim, const int64_t *shape, int index_ndim, const int64_t *index,             \
       int64_t x_dim0, const CT *values, const int64_t *v_stride, int accumulate, CT *y), \
      (ndim, shape, index_ndim, index, x_dim0, values, v_stride, accumulate, y))         \
    X(index_put_mask_##T, void,                                                          \
      (int ndim, const int64_t *x_shape, int mask_ndim, const uint8_t *mask,             \
       const CT *values, const int64_t *v_stride, int accumulate, CT *y),                \
      (ndim, x_shape, mask_ndim, mask, values, v_stride, accumulate, y))                 \
    X(grid_sampler_##T, void,                                                            \
      (int nspatial, int64_t N, int64_t C, const int64_t *in_size,                       \
       const int64_t *out_size, int mode, int padding, int align_corners, const CT *x,   \
       const CT *grid, CT *y),                                                           \
      (nspatial, N, C, in_size, out_size, mode, padding, align_corners, x, grid, y))     \
    X(multilabel_margin_loss_##T, int,                                                   \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int reduction, CT *y),  \
      (N, C, x, target, reduction, y))                                                   \
    X(multi_margin_loss_##T, int,                                                        \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int p, double margin,   \
       const CT *weight, int reduction, CT *y),                                          \
      (N, C, x, target, p, margin, weight, reduction, y))                                \
    X(cosine_embedding_loss_##T, void,                                                   \
      (int64_t N, int64_t D, const CT *x1, const int64_t *x1_stride, const CT *x2,       \
       const int64_t *x2_stride, const CT *target, int64_t target_stride, double margin, \
       int reduction, CT *y),                                                            \
      (N, D, x1, x1_stride, x2, x2_stride, target, target_stride, margin, reduction, y)) \
    X(margin_ranking_loss_##T, void,                                                     \
      (int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, const CT *b, \
       const int64_t *b_stride, const CT *target, const int64_t *t_stride, double margin, \
       int reduction, CT *y),                                                            \
      (ndim, shape, a, a_stride, b, b_stride, target, t_stride, margin, reduction, y))   \
    X(triplet_margin_loss_##T, void,                                                     \
      (int64_t N, int64_t D, const CT *a, const int64_t *a_stride, const CT *pos,        \
       const int64_t *p_stride, const CT *neg, const int64_t *n_stride, double margin,   \
       double p, double eps, int swap, int reduction, CT *y),                            \
      (N, D, a, a_stride, pos, p_stride, neg, n_stride, margin, p, eps, swap, reduction, y))

#endif /* AMPRT_EXTRA_H */
