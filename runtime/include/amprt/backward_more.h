/*
 * amprt/backward_more.h - part of amprt.h (include that, not this): the
 * gradient kernels of prelu, prod, cumprod, quantile/nanquantile, renorm,
 * cosine_similarity, cdist, pdist and the margin losses (margin_ranking,
 * cosine_embedding, triplet_margin, multi_margin, multilabel_margin).  The
 * other ops of their group get their gradients from forward kernels: sort's
 * is a scatter through the permutation, cross's two cross products, dist's
 * a norm_backward of the difference.
 *
 * Conventions are amprt/backward.h's: T in f64, f32, bf16, f16; f32 opmath
 * for the three narrow ones, f64 for f64; one rounding per output element;
 * x is the forward input, dy the gradient of the forward result, dx (and
 * the other gradients) written whole, never accumulated into.  Formulas are
 * PyTorch's autograd ones (derivatives.yaml); where it divides by a zero
 * input, the value it defines by the product of the other factors is used.
 *
 *  prelu_backward  x [outer, channels, inner], w [nweight] (nweight 1 or
 *      channels) as the forward: dx = x > 0 ? dy : w[c] dy; dw[c] = the sum
 *      of x dy over the elements of channel c with x <= 0 (all channels
 *      for nweight 1), summed in the compute type.  dx or dw may be NULL to
 *      skip it.
 *  prod_backward   x over shape[0..ndim), dy over the kept dims (reduce[d]
 *      0), as norm_backward: dx[i] = dy times the product of the other
 *      elements of i's slice: the slice's product over x[i] when the slice
 *      has no zero; when it has one zero, that element gets the product of
 *      the others and the rest 0; with two zeros or more, all 0.
 *  cumprod_backward  along the middle axis of [outer, len, inner]:
 *      dx[k] = sum over j >= k of dy[j] prod_{i <= j, i != k} x[i]; in each
 *      line, elements before the first zero z use (sum_{j = k..z-1} dy[j]
 *      cumprod[j]) / x[k], element z the running product of the others,
 *      and elements after z get 0 (their products all hold x[z] = 0).
 *      work: len doubles (the line's running products, exact in double).
 *  quantile_backward  x [outer, len, inner], dy [outer, inner], as the
 *      forward quantile (q, interpolation, ignore_nan): each dy goes to
 *      the slice elements whose sorted ranks the forward read (the first of
 *      equal values, as a stable sort), weighted as the interpolation
 *      weighted them (linear: 1 - frac and frac; midpoint: 1/2 each; lower,
 *      higher, nearest: 1 to one); other elements get 0.  A slice whose
 *      quantile is NaN sends dy to the NaN element PyTorch's sorted view
 *      reads: its last NaN (quantile: NaN sorts last and the rank is the
 *      last one), or its first element (nanquantile of an all-NaN slice:
 *      rank 0).  work: len doubles.
 *
 * The next four take the forward kernel's arguments (amprt/extra.h) and
 * write each operand's gradient over the forward's whole (broadcast) index
 * space, contiguous; the code generator sums it down to the operand's
 * shape.  Any gradient pointer may be NULL to skip it.  dloss is the
 * gradient of the loss: one element per sample (reduction NONE) or one.
 *  cosine_similarity_backward  da, db over shape: with na, nb the norms
 *      clamped to eps and y the similarity (recomputed), da = dy (b / (na
 *      nb) - y a / na^2), the second term only where ||a|| >= eps (below
 *      it the clamp passes no gradient to the norm); db likewise.
 *  margin_ranking_loss_backward  where z = -t (a - b) + margin >= 0
 *      (clamp_min's gradient passes at 0): da = -t g, db = t g,
 *      dtarget = -(a - b) g (g the sample's dloss share); 0 elsewhere.
 *  cosine_embedding_loss_backward  dx1, dx2 [N, D]: dcos/dx1 = x2 /
 *      sqrt(m1 m2) - cos x1 / m1 (m = sum x^2 + 1e-12, as the forward),
 *      times -1 for target 1, 1 for target -1 where cos - margin >= 0,
 *      else 0.  The target only selects, so it has no gradient.
 *  triplet_margin_loss_backward  da, dp, dn [N, D] where margin + d(a, p)
 *      - d(a, n) >= 0; each distance d(u, v) = ||u - v + eps||_p passes
 *      norm_backward's slope (p 0: none; 1: sgn; 2: w / d, 0 at d = 0;
 *      inf: shared by the maximal |w|; else w |w|^(p-2) / d^(p-1)); under
 *      swap the smaller of d(a, n) and d(p, n) gets it (a tie: half each,
 *      as PyTorch's min).  work: 3 D doubles.
 *
 * And, as their forward kernels' arguments:
 *  renorm_backward  x [outer, len, inner]: for each of the len slices with
 *      r = ||slice||_p > maxnorm (scaled by f = maxnorm / (r + 1e-7)):
 *      dx = f dy - maxnorm / (r + 1e-7)^2 (sum x dy) r'(x), r' as
 *      norm_backward's (inf: shared by the maximal |x|); elsewhere dx = dy.
 *  cdist_backward   x1 [batch, P, M], x2 [batch, R, M], dy [batch, P, R]:
 *      dx1[i] = sum_j dy[i, j] s(x1_i - x2_j), dx2[j] = sum_i dy[i, j]
 *      s(x2_j - x1_i), with PyTorch's distance slope s (p 0: none; 1: sgn;
 *      p < 2: sgn(w) |w|^(p-1) / d^(p-1), 0 at d = 0 and, p < 1, at w = 0;
 *      2: w / d, 0 at d = 0; inf: sgn(w) for every w with |w| = d, not
 *      shared; else w |w|^(p-2) / d^(p-1)), d recomputed in the compute
 *      type.  dx1 or dx2 may be NULL.  work: M doubles.
 *  pdist_backward   x [N, M], dy the N (N - 1) / 2 pair distances (i < j
 *      in row order): dx[i] = sum over j != i of dy(i, j) s(x_i - x_j).
 *      work: M doubles.
 *  multi_margin_loss_backward  dx [N, C] (targets checked by the forward):
 *      for i != t with z = margin - x[t] + x[i] > 0 (strictly, as PyTorch's
 *      kernel), h = 1 (p 1) or 2 z (p 2), times weight[t] (NULL: 1): dx[i]
 *      = g h, dx[t] = -sum of them, g = the sample's dloss share / C.
 *  multilabel_margin_loss_backward  dx [N, C]: for every target j and
 *      non-target i with 1 - x[j] + x[i] > 0, dx[i] += g and dx[j] -= g.
 *      work: C doubles.
 */
#ifndef AMPRT_BACKWARD_MORE_H
#define AMPRT_BACKWARD_MORE_H

#define AMP_BACKWARD_MORE_OF_CTYPE(X, T, CT)                                             \
    X(prelu_backward_##T, void,                                                          \
      (int64_t outer, int64_t channels, int64_t inner, int64_t nweight, const CT *x,      \
       const CT *w, const CT *dy, CT *dx, CT *dw),                                       \
      (outer, channels, inner, nweight, x, w, dy, dx, dw))                               \
    X(prod_backward_##T, void,                                                           \
      (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, const CT *dy, \
       CT *dx),                                                                          \
      (ndim, shape, reduce, x, dy, dx))                                                  \
    X(cumprod_backward_##T, void,                                                        \
      (int64_t outer, int64_t len, int64_t inner, const CT *x, const CT *dy, CT *dx,     \
       double *work),                                                                    \
      (outer, len, inner, x, dy, dx, work))                                              \
    X(quantile_backward_##T, void,                                                       \
      (int64_t outer, int64_t len, int64_t inner, double q, int interpolation,           \
       int ignore_nan, const CT *x, const CT *dy, CT *dx, double *work),                 \
      (outer, len, inner, q, interpolation, ignore_nan, x, dy, dx, work))                \
    X(cosine_similarity_backward_##T, void,                                              \
      (int ndim, const int64_t *shape, int dim, const CT *a, const int64_t *a_stride,    \
       const CT *b, const int64_t *b_stride, double eps, const CT *dy, CT *da, CT *db),  \
      (ndim, shape, dim, a, a_stride, b, b_stride, eps, dy, da, db))                     \
    X(margin_ranking_loss_backward_##T, void,                                            \
      (int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, const CT *b, \
       const int64_t *b_stride, const CT *target, const int64_t *t_stride, double margin, \
       int reduction, const CT *dloss, CT *da, CT *db, CT *dtarget),                     \
      (ndim, shape, a, a_stride, b, b_stride, target, t_stride, margin, reduction, dloss, \
       da, db, dtarget))                                                                 \
    X(cosine_embedding_loss_backward_##T, void,                                          \
      (int64_t N, int64_t D, const CT *x1, const int64_t *x1_stride, const CT *x2,       \
       const int64_t *x2_stride, const CT *target, int64_t target_stride, double margin, \
       int reduction, const CT *dloss, CT *dx1, CT *dx2),                                \
      (N, D, x1, x1_stride, x2, x2_stride, target, target_stride, margin, reduction,     \
       dloss, dx1, dx2))                                                                 \
    X(triplet_margin_loss_backward_##T, void,                                            \
      (int64_t N, int64_t D, const CT *a, const int64_t *a_stride, const CT *pos,        \
       const int64_t *p_stride, const CT *neg, const int64_t *n_stride, double margin,   \
       double p, double eps, int swap, int reduction, const CT *dloss, CT *da, CT *dp,   \
       CT *dn, double *work),                                                            \
      (N, D, a, a_stride, pos, p_stride, neg, n_stride, margin, p, eps, swap, reduction, \
       dloss, da, dp, dn, work))                                                         \
    X(renorm_backward_##T, void,                                                         \
      (int64_t outer, int64_t len, int64_t inner, double p, double maxnorm, const CT *x, \
       const CT *dy, CT *dx),                                                            \
      (outer, len, inner, p, maxnorm, x, dy, dx))                                        \
    X(cdist_backward_##T, void,                                                          \
      (int64_t batch, int64_t P, int64_t R, int64_t M, double p, const CT *x1,           \
       const CT *x2, const CT *dy, CT *dx1, CT *dx2, double *work),                      \
      (batch, P, R, M, p, x1, x2, dy, dx1, dx2, work))                                   \
    X(pdist_backward_##T, void,                                                          \
      (int64_t N, int64_t M, double p, const CT *x, const CT *dy, CT *dx, double *work), \
      (N, M, p, x, dy, dx, work))                                                        \
    X(multi_margin_loss_backward_##T, void,                                              \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int p, double margin,   \
       const CT *weight, int reduction, const CT *dloss, CT *dx),                        \
      (N, C, x, target, p, margin, weight, reduction, dloss, dx))                        \
    X(multilabel_margin_loss_backward_##T, void,                                         \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int reduction,          \
       const CT *dloss, CT *dx, double *work),                                           \
      (N, C, x, target, reduction, dloss, dx, work))

#endif /* AMPRT_BACKWARD_MORE_H */
