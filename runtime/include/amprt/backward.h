/*
 * amprt/backward.h - part of amprt.h (include that, not this): the
 * gradient kernels the training step calls, one per forward op whose
 * gradient is not itself a forward kernel (the code generator builds the
 * rest from forward kernels: a linear's gradients are two gemms and a sum,
 * a conv's input gradient is a transposed conv, and so on).
 *
 * Conventions are amprt.h's: T is f64, f32, bf16 or f16; f32/bf16/f16
 * compute in f32 and f64 in f64; each output element is rounded once.  A
 * backward kernel runs in the dtype its forward op ran in (autocast's
 * choice), as PyTorch's autograd does.  Arguments named like the forward
 * kernel's mean the same; x is the forward input, y the forward output,
 * dy the gradient of the loss with respect to y, dx the gradient written
 * (every element of dx is written: no accumulation into the caller's
 * buffer, unless the kernel says so).  The forward's descriptors are
 * reused unchanged.
 *
 *  <op>_backward (unary list below)  dx = dy * f'(x), from x or y as is
 *      exact and cheap: relu (0 at x <= 0, PyTorch's threshold_backward),
 *      exp (dy*y), log (dy/x), sqrt (dy/(2y)), rsqrt (-dy*y^3/2),
 *      reciprocal (-dy*y^2), sigmoid (dy*y*(1-y)), tanh (dy*(1-y^2)),
 *      acos, asin, cosh, sinh, tan, erfinv, expm1, log10, log2, log1p,
 *      abs (sign(x), 0 at 0), gelu, gelu_tanh, silu: PyTorch's formulas;
 *      hardswish (0 below -3, dy (x/3 + 1/2) up to 3, dy above: PyTorch's
 *      hardswish_backward, -3 and 3 included in the middle piece);
 *      hardsigmoid (dy / 6 strictly between -3 and 3, else 0, NaN too; the
 *      1/6 is PyTorch's float constant 1.0f / 6.0f in every dtype, f64
 *      included); selu (scale, or alpha scale exp(x) for x <= 0); mish,
 *      softsign (autograd through x / (1 + |x|): 1 at 0), logsigmoid, sin,
 *      cos, atan, erf, erfc: PyTorch's formulas; sign, floor, ceil, round,
 *      trunc: 0 everywhere (PyTorch's zeros_like, so a NaN dy gives 0);
 *      frac: dy.
 *  add_relu_backward     relu_backward (y the relu's output, as its input
 *      and output) of add's a + b: the sum of two gradients of a relu's
 *      output going on through it, in one call, bit for bit add then
 *      relu_backward.
 *  softplus_backward (p0 beta, p1 threshold), clamp_backward (p0 min, p1
 *      max: dy where min <= x <= max, else 0, so a NaN x gets 0, as
 *      PyTorch's where((x >= min) & (x <= max), dy, 0)),
 *      pow_scalar_backward (p0 exponent: dy*p*x^(p-1), 0 where p == 0),
 *      rpow_scalar_backward (p0 base: dy*y*log(base)),
 *      hardtanh_backward (p0 min, p1 max: dy strictly between them, else
 *      0: the boundaries get 0, unlike clamp, and a NaN x gets dy, as
 *      PyTorch's scalar kernel (its vector lanes give 0 there)),
 *      leaky_relu_backward (p0 slope: x > 0 ? dy : dy p0, so NaN gets
 *      dy p0), elu_backward (p0 alpha, p1 input_scale: x <= 0 ?
 *      dy p1 p0 exp(x p1) : dy, so NaN gets dy, as PyTorch's scalar
 *      kernel), fmod_scalar_backward and remainder_scalar_backward (dy).
 *  maximum_backward, atan2_backward, pow_backward, minimum_backward,
 *      fmod_backward, remainder_backward: da and db over the
 *      broadcast output shape (the code generator sums them down to the
 *      operands' shapes); maximum and minimum split a tie equally, as
 *      PyTorch, and a NaN operand passes dy to both a and b (PyTorch's
 *      masks are all false); fmod: da = dy, db = -dy trunc(a / b);
 *      remainder: da = dy, db = -dy floor(a / b).
 *  softmax_backward      dx = y * (dy - sum(dy * y)) along the axis
 *  log_softmax_backward  dx = dy - exp(y) * sum(dy)
 *  nll_loss_backward     dlogp for nll_loss over [N, C, inner] (inner 1
 *      for [N, C]): dlogp[n, t, i] = -w[t] * dloss (/ total weight for
 *      mean), zero elsewhere and for ignored targets; dloss has one
 *      element, or N*inner for AMP_REDUCTION_NONE.  Targets were checked
 *      by the forward.
 *  cross_entropy_backward      dx for cross_entropy with class targets
 *      (softmax recomputed from x); label_smoothing as the forward.
 *  cross_entropy_prob_backward the same with probability targets.
 *  cross_entropy_with_grad     cross_entropy (class targets) into y and
 *      its cross_entropy_backward into dx in one call, bit for bit the two
 *      kernels called in turn (status and checks: the forward's; dx is
 *      written only on AMP_OK): the training step's loss and its
 *      gradient, sharing one pass over the logits.
 *  <loss>_backward (pointwise losses)  dinput for the forward's arguments,
 *      by PyTorch's backward kernels: binary_cross_entropy divides by
 *      max((1 - x) x, 1e-12); smooth_l1 (also with beta 0) and huber take
 *      the lower branch at d = x - t <= -beta (so smooth_l1 beta 0 gives -dy
 *      at d = 0, as PyTorch's CPU kernel); hinge_embedding passes the
 *      margin term where margin - x >= 0 (clamp_min's subgradient).
 *  max_pool_backward     dx: each dy added to the input element the forward
 *      chose (the first maximum in the window, NaN winning, as forward).
 *  adaptive_max_pool_backward  the same over adaptive_max_pool's windows.
 *  max_pool_relu_backward  the same for a max_pool of a relu's output x,
 *      continued through the relu: relu_backward (x as its input and
 *      output) of max_pool_backward's dx, in one call, bit for bit the two
 *      kernels in turn.
 *  avg_pool_backward, adaptive_avg_pool_backward, upsample_backward: the
 *      adjoints of the forward kernels (dx accumulates every window's share).
 *  conv_backward_weight  dw for conv (d as the forward): dw[co, ci, k] =
 *      sum over n, o of dy[n, co, o] x[n, ci, o*stride - pad + k*dil].
 *  conv_transpose_backward_weight  dw for conv_transpose.
 *  layer_norm_backward, group_norm_backward: dx, and dweight/dbias
 *      (param_dtype, NULL to skip) for the forward's arguments (statistics
 *      recomputed from x).
 *  batch_norm_backward   training 1: the batch-statistics form; training 0:
 *      the running-statistics form (dx = dy * w / sqrt(var + eps)).
 *      dweight, dbias in param_dtype, NULL to skip.
 *  embedding_backward    dweight[index[i], :] += dy[i, :] over a zeroed
 *      dweight, skipping padding_idx (< 0: none); sums each row once.
 *  index_select_backward dx[o, index[i], r] += dy[o, i, r] over a zeroed dx.
 *  pad_backward          dx for pad (each mode's adjoint).
 *  reverse_cumsum        y[i] = sum over j >= i along the axis: cumsum's
 *      gradient.
 *  logsumexp_backward, norm_backward: dx for the forward's reduction
 *      (y its output, dy of y's shape); norm as PyTorch's norm_backward
 *      (p = 0: zero; inf/-inf: dy split among the elements with |x| equal to
 *      the norm, or NaN; p = 2 and p > 1: 0 where the norm is 0).
 *  glu_backward    dx for glu (x [outer, len, inner] as the forward):
 *      s = sigmoid(b); da = dy s, db = dy a s (1 - s).
 *  lerp_backward   over the broadcast output shape, as the forward's
 *      operands (weight NULL: the number value): dx = dy (1 - w), dend =
 *      dy w, dweight = dy (end - x); any gradient pointer may be NULL (and
 *      dweight must be for a number weight).
 *  amax_backward   amax and amin (y the forward's result): g = dy / the
 *      number of elements of the slice equal to y; dx = g there and g * 0
 *      elsewhere, as PyTorch's scale_grad_by_count (a NaN y matches
 *      nothing, so its whole slice gets NaN).
 *  max_backward    max() and min() of the whole tensor: dy / the number
 *      of elements equal to y (NaN elements, when y is NaN) to each of
 *      them, +0 elsewhere, as PyTorch's evenly_distribute_backward.
 *  var_backward, std_backward  p the correction: var's dx = dy 2 (x -
 *      mean) / (n - p); std's is var's with dy / (2 y), 0 where y is 0,
 *      as PyTorch's std_backward (the mean recomputed from x).
 *  sdpa_backward         dq, dk, dv for sdpa (scores recomputed), each with
 *      its operand's layout (element b * batch_stride + row * width + col);
 *      an operand shared by every batch (stride 0) gets the sum over the
 *      batches.  A row the forward makes NaN (all masked) makes its dq row
 *      and every dk, dv row of its batch NaN, as autograd through
 *      PyTorch's math attention.  dq, dk or dv may be NULL to skip it.
 *
 * Where a formula divides by a zero input, the value PyTorch defines by the
 * product of the other factors is used.
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
 * The next four take the forward kernel's arguments and write each
 * operand's gradient over the forward's whole (broadcast) index space,
 * contiguous; the code generator sums it down to the operand's shape.  Any
 * gradient pointer may be NULL to skip it.  dloss is the gradient of the
 * loss: one element per sample (reduction NONE) or one.
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
#define AMP_UNARY_BACKWARD_OPS(U, X, T, CT)                                              \
    U(relu, X, T, CT) U(exp, X, T, CT) U(log, X, T, CT) U(sqrt, X, T, CT)                 \
    U(rsqrt, X, T, CT) U(reciprocal, X, T, CT) U(sigmoid, X, T, CT) U(tanh, X, T, CT)     \
    U(acos, X, T, CT) U(asin, X, T, CT) U(cosh, X, T, CT) U(sinh, X, T, CT)               \
    U(tan, X, T, CT) U(erfinv, X, T, CT) U(expm1, X, T, CT) U(log10, X, T, CT)            \
    U(log2, X, T, CT) U(log1p, X, T, CT) U(abs, X, T, CT) U(gelu, X, T, CT)               \
    U(gelu_tanh, X, T, CT) U(silu, X, T, CT) U(hardswish, X, T, CT)                      \
    U(hardsigmoid, X, T, CT) U(selu, X, T, CT) U(mish, X, T, CT) U(softsign, X, T, CT)   \
    U(logsigmoid, X, T, CT) U(sin, X, T, CT) U(cos, X, T, CT) U(atan, X, T, CT)          \
    U(erf, X, T, CT) U(erfc, X, T, CT) U(sign, X, T, CT) U(floor, X, T, CT)              \
    U(ceil, X, T, CT) U(round, X, T, CT) U(trunc, X, T, CT) U(frac, X, T, CT)
#define AMP_UNARY_BACKWARD_ROW(op, X, T, CT)                                             \
    X(op##_backward, T, void, (size_t n, const CT *x, const CT *y, const CT *dy, CT *dx),  \
      (n, x, y, dy, dx))

#define AMP_UNARY_PARAM_BACKWARD_OPS(U, X, T, CT)                                        \
    U(softplus, X, T, CT) U(clamp, X, T, CT) U(pow_scalar, X, T, CT) U(rpow_scalar, X, T, CT) \
    U(hardtanh, X, T, CT) U(leaky_relu, X, T, CT) U(elu, X, T, CT)                       \
    U(fmod_scalar, X, T, CT) U(remainder_scalar, X, T, CT)
#define AMP_UNARY_PARAM_BACKWARD_ROW(op, X, T, CT)                                       \
    X(op##_backward, T, void,                                                            \
      (size_t n, const CT *x, const CT *y, const CT *dy, double p0, double p1, CT *dx),  \
      (n, x, y, dy, p0, p1, dx))

#define AMP_BINARY_BACKWARD_OPS(U, X, T, CT)                                             \
    U(maximum, X, T, CT) U(atan2, X, T, CT) U(pow, X, T, CT) U(minimum, X, T, CT)        \
    U(fmod, X, T, CT) U(remainder, X, T, CT)
#define AMP_BINARY_BACKWARD_ROW(op, X, T, CT)                                            \
    X(op##_backward, T, void,                                                            \
      (int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, const CT *b, \
       const int64_t *b_stride, const CT *dy, CT *da, CT *db),                           \
      (ndim, shape, a, a_stride, b, b_stride, dy, da, db))

#define AMP_LOSS_BACKWARD_ROW(op, X, T, CT)                                              \
    X(op##_backward, T, void,                                                            \
      (size_t n, const CT *input, const CT *target, const CT *weight, double p0,         \
       double p1, double p2, int reduction, const CT *dloss, CT *dinput),                \
      (n, input, target, weight, p0, p1, p2, reduction, dloss, dinput))

#define AMP_BACKWARD_OF_CTYPE(X, T, CT)                                                  \
    AMP_UNARY_BACKWARD_OPS(AMP_UNARY_BACKWARD_ROW, X, T, CT)                             \
    AMP_UNARY_PARAM_BACKWARD_OPS(AMP_UNARY_PARAM_BACKWARD_ROW, X, T, CT)                 \
    AMP_BINARY_BACKWARD_OPS(AMP_BINARY_BACKWARD_ROW, X, T, CT)                           \
    X(softmax_backward, T, void,                                                         \
      (int64_t outer, int64_t dim, int64_t inner, const CT *y, const CT *dy, CT *dx),    \
      (outer, dim, inner, y, dy, dx))                                                    \
    X(log_softmax_backward, T, void,                                                     \
      (int64_t outer, int64_t dim, int64_t inner, const CT *y, const CT *dy, CT *dx),    \
      (outer, dim, inner, y, dy, dx))                                                    \
    X(nll_loss_backward, T, void,                                                        \
      (int64_t N, int64_t C, int64_t inner, const int64_t *target, const CT *weight,     \
       int64_t ignore_index, int reduction, const CT *dloss, CT *dlogp),                 \
      (N, C, inner, target, weight, ignore_index, reduction, dloss, dlogp))              \
    X(cross_entropy_backward, T, void,                                                   \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const int64_t *target,          \
       const CT *weight, int64_t ignore_index, double label_smoothing, int reduction,    \
       const CT *dloss, CT *dx),                                                         \
      (N, C, inner, x, target, weight, ignore_index, label_smoothing, reduction, dloss, dx)) \
    X(cross_entropy_with_grad, T, int,                                                   \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const int64_t *target,          \
       const CT *weight, int64_t ignore_index, double label_smoothing, int reduction,    \
       const CT *dloss, CT *y, CT *dx),                                                  \
      (N, C, inner, x, target, weight, ignore_index, label_smoothing, reduction, dloss, y, dx)) \
    X(cross_entropy_prob_backward, T, void,                                              \
      (int64_t N, int64_t C, int64_t inner, const CT *x, const CT *target,               \
       const CT *weight, double label_smoothing, int reduction, const CT *dloss, CT *dx), \
      (N, C, inner, x, target, weight, label_smoothing, reduction, dloss, dx))           \
    AMP_POINTWISE_LOSSES(AMP_LOSS_BACKWARD_ROW, X, T, CT)                                \
    X(max_pool_backward, T, void,                                                        \
      (const amp_pool_desc *d, const CT *x, const CT *dy, CT *dx), (d, x, dy, dx))       \
    X(max_pool_relu_backward, T, void,                                                   \
      (const amp_pool_desc *d, const CT *x, const CT *dy, CT *dx), (d, x, dy, dx))       \
    X(add_relu_backward, T, void,                                                        \
      (size_t n, const CT *y, const CT *a, const CT *b, CT *dx), (n, y, a, b, dx))       \
    X(avg_pool_backward, T, void, (const amp_pool_desc *d, const CT *dy, CT *dx), (d, dy, dx))  \
    X(adaptive_avg_pool_backward, T, void,                                               \
      (int nspatial, int64_t planes, const int64_t *in_size, const int64_t *out_size,    \
       const CT *dy, CT *dx),                                                            \
      (nspatial, planes, in_size, out_size, dy, dx))                                     \
    X(adaptive_max_pool_backward, T, void,                                               \
      (int nspatial, int64_t planes, const int64_t *in_size, const int64_t *out_size,    \
       const CT *x, const CT *dy, CT *dx),                                               \
      (nspatial, planes, in_size, out_size, x, dy, dx))                                  \
    X(upsample_backward, T, void, (const amp_upsample_desc *d, const CT *dy, CT *dx), (d, dy, dx))  \
    X(conv_backward_weight, T, void,                                                     \
      (const amp_conv_desc *d, const CT *x, const CT *dy, CT *dw), (d, x, dy, dw))       \
    X(conv_transpose_backward_weight, T, void,                                           \
      (const amp_conv_desc *d, const CT *x, const CT *dy, CT *dw), (d, x, dy, dw))       \
    X(layer_norm_backward, T, void,                                                      \
      (int64_t outer, int64_t inner, const CT *x, amp_dtype param_dtype,                 \
       const void *weight, double eps, const CT *dy, CT *dx, void *dweight, void *dbias), \
      (outer, inner, x, param_dtype, weight, eps, dy, dx, dweight, dbias))               \
    X(group_norm_backward, T, void,                                                      \
      (int64_t N, int64_t C, int64_t HxW, int64_t groups, const CT *x,                   \
       amp_dtype param_dtype, const void *weight, double eps, const CT *dy, CT *dx,      \
       void *dweight, void *dbias),                                                      \
      (N, C, HxW, groups, x, param_dtype, weight, eps, dy, dx, dweight, dbias))          \
    X(batch_norm_backward, T, void,                                                      \
      (int64_t N, int64_t C, int64_t HxW, const CT *x, amp_dtype param_dtype,            \
       const void *running_mean, const void *running_var, const void *weight,            \
       int training, double eps, const CT *dy, CT *dx, void *dweight, void *dbias),      \
      (N, C, HxW, x, param_dtype, running_mean, running_var, weight, training, eps, dy,  \
       dx, dweight, dbias))                                                              \
    X(embedding_backward, T, void,                                                       \
      (int64_t n_index, int64_t num_embeddings, int64_t dim, const int64_t *index,       \
       int64_t padding_idx, const CT *dy, CT *dweight),                                  \
      (n_index, num_embeddings, dim, index, padding_idx, dy, dweight))                   \
    X(index_select_backward, T, void,                                                    \
      (int64_t outer, int64_t dim_size, int64_t inner, int64_t n_index,                  \
       const int64_t *index, const CT *dy, CT *dx),                                      \
      (outer, dim_size, inner, n_index, index, dy, dx))                                  \
    X(pad_backward, T, void,                                                             \
      (int ndim, const int64_t *in_shape, const int64_t *before, const int64_t *after,   \
       int mode, const CT *dy, CT *dx),                                                  \
      (ndim, in_shape, before, after, mode, dy, dx))                                     \
    X(reverse_cumsum, T, void, (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y),  \
      (outer, dim, inner, x, y))                                                         \
    X(logsumexp_backward, T, void,                                                       \
      (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, const CT *y,  \
       const CT *dy, CT *dx),                                                            \
      (ndim, shape, reduce, x, y, dy, dx))                                               \
    X(norm_backward, T, void,                                                            \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x,     \
       const CT *y, const CT *dy, CT *dx),                                               \
      (ndim, shape, reduce, p, x, y, dy, dx))                                            \
    X(glu_backward, T, void,                                                             \
      (int64_t outer, int64_t len, int64_t inner, const CT *x, const CT *dy, CT *dx),    \
      (outer, len, inner, x, dy, dx))                                                    \
    X(lerp_backward, T, void,                                                            \
      (int ndim, const int64_t *shape, const CT *x, const int64_t *x_stride,             \
       const CT *end, const int64_t *end_stride, const CT *weight,                       \
       const int64_t *weight_stride, double value, const CT *dy, CT *dx, CT *dend,       \
       CT *dweight),                                                                     \
      (ndim, shape, x, x_stride, end, end_stride, weight, weight_stride, value, dy, dx,  \
       dend, dweight))                                                                   \
    X(amax_backward, T, void,                                                            \
      (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, const CT *y,  \
       const CT *dy, CT *dx),                                                            \
      (ndim, shape, reduce, x, y, dy, dx))                                               \
    X(max_backward, T, void,                                                             \
      (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, const CT *y,  \
       const CT *dy, CT *dx),                                                            \
      (ndim, shape, reduce, x, y, dy, dx))                                               \
    X(var_backward, T, void,                                                             \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x,     \
       const CT *y, const CT *dy, CT *dx),                                               \
      (ndim, shape, reduce, p, x, y, dy, dx))                                            \
    X(std_backward, T, void,                                                             \
      (int ndim, const int64_t *shape, const uint8_t *reduce, double p, const CT *x,     \
       const CT *y, const CT *dy, CT *dx),                                               \
      (ndim, shape, reduce, p, x, y, dy, dx))                                            \
    X(sdpa_backward, T, void,                                                            \
      (const amp_sdpa_desc *d, const CT *q, const CT *k, const CT *v, const CT *mask,    \
       const uint8_t *bool_mask, const CT *dy, CT *dq, CT *dk, CT *dv),                  \
      (d, q, k, v, mask, bool_mask, dy, dq, dk, dv))                                     \
    X(prelu_backward, T, void,                                                           \
      (int64_t outer, int64_t channels, int64_t inner, int64_t nweight, const CT *x,     \
       const CT *w, const CT *dy, CT *dx, CT *dw),                                       \
      (outer, channels, inner, nweight, x, w, dy, dx, dw))                               \
    X(prod_backward, T, void,                                                            \
      (int ndim, const int64_t *shape, const uint8_t *reduce, const CT *x, const CT *dy, \
       CT *dx),                                                                          \
      (ndim, shape, reduce, x, dy, dx))                                                  \
    X(cumprod_backward, T, void,                                                         \
      (int64_t outer, int64_t len, int64_t inner, const CT *x, const CT *dy, CT *dx,     \
       double *work),                                                                    \
      (outer, len, inner, x, dy, dx, work))                                              \
    X(quantile_backward, T, void,                                                        \
      (int64_t outer, int64_t len, int64_t inner, double q, int interpolation,           \
       int ignore_nan, const CT *x, const CT *dy, CT *dx, double *work),                 \
      (outer, len, inner, q, interpolation, ignore_nan, x, dy, dx, work))                \
    X(cosine_similarity_backward, T, void,                                               \
      (int ndim, const int64_t *shape, int dim, const CT *a, const int64_t *a_stride,    \
       const CT *b, const int64_t *b_stride, double eps, const CT *dy, CT *da, CT *db),  \
      (ndim, shape, dim, a, a_stride, b, b_stride, eps, dy, da, db))                     \
    X(margin_ranking_loss_backward, T, void,                                             \
      (int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, const CT *b, \
       const int64_t *b_stride, const CT *target, const int64_t *t_stride, double margin, \
       int reduction, const CT *dloss, CT *da, CT *db, CT *dtarget),                     \
      (ndim, shape, a, a_stride, b, b_stride, target, t_stride, margin, reduction, dloss, \
       da, db, dtarget))                                                                 \
    X(cosine_embedding_loss_backward, T, void,                                           \
      (int64_t N, int64_t D, const CT *x1, const int64_t *x1_stride, const CT *x2,       \
       const int64_t *x2_stride, const CT *target, int64_t target_stride, double margin, \
       int reduction, const CT *dloss, CT *dx1, CT *dx2),                                \
      (N, D, x1, x1_stride, x2, x2_stride, target, target_stride, margin, reduction,     \
       dloss, dx1, dx2))                                                                 \
    X(triplet_margin_loss_backward, T, void,                                             \
      (int64_t N, int64_t D, const CT *a, const int64_t *a_stride, const CT *pos,        \
       const int64_t *p_stride, const CT *neg, const int64_t *n_stride, double margin,   \
       double p, double eps, int swap, int reduction, const CT *dloss, CT *da, CT *dp,   \
       CT *dn, double *work),                                                            \
      (N, D, a, a_stride, pos, p_stride, neg, n_stride, margin, p, eps, swap, reduction, \
       dloss, da, dp, dn, work))                                                         \
    X(renorm_backward, T, void,                                                          \
      (int64_t outer, int64_t len, int64_t inner, double p, double maxnorm, const CT *x, \
       const CT *dy, CT *dx),                                                            \
      (outer, len, inner, p, maxnorm, x, dy, dx))                                        \
    X(cdist_backward, T, void,                                                           \
      (int64_t batch, int64_t P, int64_t R, int64_t M, double p, const CT *x1,           \
       const CT *x2, const CT *dy, CT *dx1, CT *dx2, double *work),                      \
      (batch, P, R, M, p, x1, x2, dy, dx1, dx2, work))                                   \
    X(pdist_backward, T, void,                                                           \
      (int64_t N, int64_t M, double p, const CT *x, const CT *dy, CT *dx, double *work), \
      (N, M, p, x, dy, dx, work))                                                        \
    X(multi_margin_loss_backward, T, void,                                               \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int p, double margin,   \
       const CT *weight, int reduction, const CT *dloss, CT *dx),                        \
      (N, C, x, target, p, margin, weight, reduction, dloss, dx))                        \
    X(multilabel_margin_loss_backward, T, void,                                          \
      (int64_t N, int64_t C, const CT *x, const int64_t *target, int reduction,          \
       const CT *dloss, CT *dx, double *work),                                           \
      (N, C, x, target, reduction, dloss, dx, work))
