/*
 * amprt/elementwise.h - part of amprt.h (include that, not this): the
 * elementwise kernels beyond add/sub/mul/div/neg/relu, the dtype-free data
 * movement kernels, and padding.
 *
 * Conventions are amprt.h's: T is f64, f32, bf16 or f16; f32, bf16 and f16
 * compute in f32 and f64 in f64; each output element is rounded once.
 * Scalar parameters are double: the code generator passes the literal
 * rounded to the dtype the kernel computes in, which double holds exactly.
 *
 * cross reads its operands through their own element strides over the
 * output's index space (0: broadcast along that dim).
 *  prelu        x [outer, channels, inner]: y = x > 0 ? x : w[c] x, with
 *               w [channels], or w [1] (nweight 1) shared by every channel.
 *  cross        over the broadcast shape, shape[dim] == 3: the 3-vector
 *               cross product a x b along dim; y has the whole shape.
 */

/* Unary ops without parameters, y[i] = f(x[i]); y may alias x.  U(name):
 * (the list takes X, T, CT along so it can expand to kernel rows)
 *   exp log sqrt rsqrt reciprocal sigmoid tanh acos asin cosh sinh tan
 *   erfinv expm1 log10 log2 log1p abs   as C's libm / PyTorch define them
 *   gelu       x/2 (1 + erf(x / sqrt 2))            (approximate='none')
 *   gelu_tanh  x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   silu       x sigmoid(x)
 *   hardswish  x min(max(x + 3, 0), 6) / 6
 *   hardsigmoid  min(max(x + 3, 0), 6) / 6                (NaN stays NaN)
 *   selu       scale x for x > 0, else (exp(x) - 1) (alpha scale), with
 *              alpha 1.6732632423543772848170429916717 and scale
 *              1.0507009873554804934193349852946 (PyTorch's constants);
 *              (exp(x) - 1, not expm1: -0 gives +0, as PyTorch's kernel)
 *   mish       x tanh(log1p(exp(x)))                     (-inf gives NaN)
 *   softsign   x / (1 + |x|)                             (+-inf give NaN)
 *   logsigmoid min(x, 0) - log1p(exp(-|x|))
 *   sin cos atan erf erfc                         as C's libm
 *   sign       1, -1, or 0 for +-0 and NaN (PyTorch's (0 < x) - (x < 0))
 *   floor ceil trunc  as C's
 *   round      to nearest, ties to even (nearbyint): round(-0.5) is -0
 *   frac       x - trunc(x): keeps x's sign, +0 for +-0, NaN for +-inf
 */
#define AMP_UNARY_OPS(U, X, T, CT)                                                       \
    U(exp, X, T, CT) U(log, X, T, CT) U(sqrt, X, T, CT) U(rsqrt, X, T, CT)               \
    U(reciprocal, X, T, CT) U(sigmoid, X, T, CT) U(tanh, X, T, CT) U(acos, X, T, CT)     \
    U(asin, X, T, CT) U(cosh, X, T, CT) U(sinh, X, T, CT) U(tan, X, T, CT)               \
    U(erfinv, X, T, CT) U(expm1, X, T, CT) U(log10, X, T, CT) U(log2, X, T, CT)          \
    U(log1p, X, T, CT) U(abs, X, T, CT) U(gelu, X, T, CT) U(gelu_tanh, X, T, CT)         \
    U(silu, X, T, CT) U(hardswish, X, T, CT) U(hardsigmoid, X, T, CT) U(selu, X, T, CT)   \
    U(mish, X, T, CT) U(softsign, X, T, CT) U(logsigmoid, X, T, CT) U(sin, X, T, CT)     \
    U(cos, X, T, CT) U(atan, X, T, CT) U(erf, X, T, CT) U(erfc, X, T, CT) U(sign, X, T, CT) \
    U(floor, X, T, CT) U(ceil, X, T, CT) U(round, X, T, CT) U(trunc, X, T, CT)           \
    U(frac, X, T, CT)

/* Unary ops with two scalar parameters p0, p1; y may alias x:
 *   softplus     p0 = beta, p1 = threshold: x when beta x > threshold,
 *                else log1p(exp(beta x)) / beta (PyTorch's formula)
 *   clamp        p0 = min, p1 = max (-INFINITY / INFINITY when absent):
 *                min(max(x, p0), p1); NaN in x stays NaN, a NaN bound is
 *                ignored, min > max gives max, and x is kept on ties
 *                (clamp(-0, 0, ...) is -0), as PyTorch's CPU kernel
 *   pow_scalar   x ^ p0 (p1 unused): C's pow, except that as in PyTorch
 *                p0 = 2, 3, -2 multiply (x*x, x*x*x, 1/(x*x)) and p0 = 0.5,
 *                -0.5, -1 are sqrt(x), 1/sqrt(x), 1/x (so (-0)^0.5 = -0
 *                and (-inf)^0.5 = NaN)
 *   rpow_scalar  p0 ^ x (p1 unused)
 *   hardtanh     p0 = min_val, p1 = max_val: clamp's values (PyTorch's
 *                hardtanh is clamp); relu6 is hardtanh(x, 0, 6).  Only the
 *                gradients differ (amprt/backward.h).
 *   leaky_relu   p0 = negative_slope: x > 0 ? x : x p0 (NaN stays NaN,
 *                -0 gives -0 for a positive slope)
 *   elu          p0 = alpha, p1 = input_scale: x > 0 (or NaN) ? x :
 *                (exp(x p1) - 1) p0, PyTorch's elu with scale 1; elu is
 *                input_scale 1, celu(x, alpha) is input_scale 1 / alpha
 *                (that quotient rounded from double, as PyTorch's)
 *   fmod_scalar       fmod(x, p0), as the binary fmod below (p1 unused)
 *   remainder_scalar  remainder(x, p0), as the binary remainder below
 */
#define AMP_UNARY_PARAM_OPS(U, X, T, CT)                                                 \
    U(softplus, X, T, CT) U(clamp, X, T, CT) U(pow_scalar, X, T, CT) U(rpow_scalar, X, T, CT) \
    U(hardtanh, X, T, CT) U(leaky_relu, X, T, CT) U(elu, X, T, CT)                       \
    U(fmod_scalar, X, T, CT) U(remainder_scalar, X, T, CT)

/* Binary ops besides add/sub/mul/div, each with a same-shape form
 * amp_<op>_<T>(n, a, b, y) and a broadcasting one amp_<op>_bcast_<T> (the
 * AMP_BCAST_ROW signature of amprt.h):
 *   maximum  NaN if either is NaN, else the larger (+0 > -0)
 *   atan2    atan2(a, b)
 *   pow      pow(a, b)
 *   minimum  NaN if either is NaN, else the smaller (-0 < +0)
 *   fmod     C's fmod(a, b): the remainder of a / b truncated, with a's sign
 *   remainder  fmod(a, b), plus b when that is not 0 and its sign differs
 *            from b's (Python's %, PyTorch's formula: b's sign)
 */
#define AMP_BINARY_EXTRA_OPS(B, X, T, CT)                                                \
    B(maximum, X, T, CT) B(atan2, X, T, CT) B(pow, X, T, CT) B(minimum, X, T, CT)        \
    B(fmod, X, T, CT) B(remainder, X, T, CT)

#define AMP_UNARY_ROW(op, X, T, CT) X(op, T, void, (size_t n, const CT *x, CT *y), (n, x, y))
#define AMP_UNARY_PARAM_ROW(op, X, T, CT)                                                \
    X(op, T, void, (size_t n, const CT *x, double p0, double p1, CT *y), (n, x, p0, p1, y))
#define AMP_BINARY_EXTRA_ROW(op, X, T, CT)                                               \
    X(op, T, void, (size_t n, const CT *a, const CT *b, CT *y), (n, a, b, y))            \
    AMP_BCAST_ROW(X, op, T, CT)

/*
 *  where          y = cond ? a : b, all three read through element strides
 *                 (0 broadcasts) over the contiguous output `shape`;
 *                 cond is bool (one byte, 0 or 1).
 *  addcmul        y = x + value * t1 * t2, broadcast likewise
 *  addcdiv        y = x + value * t1 / t2
 *  lerp           y = x + w (end - x) for |w| < 1/2, else end - (end - x)
 *                 (1 - w) (PyTorch's two forms), broadcast as addcmul;
 *                 w is weight read through weight_stride, or the number
 *                 `value` when weight is NULL.
 *  glu            x [outer, len, inner] (len even) -> y [outer, len/2,
 *                 inner]: a / (1 + exp(-b)) with a the first half of the
 *                 middle axis and b the second (PyTorch's formula).
 *  fill           y[i] = value rounded to T
 *  pad            y = x padded by before[d] / after[d] elements on each
 *                 side of every dim d < ndim (0 for dims not padded;
 *                 negative crops, as F.pad allows); y's shape is
 *                 in_shape[d] + before[d] + after[d].  mode is an
 *                 amp_pad_mode; value is used by AMP_PAD_CONSTANT only.
 *                 Reflect needs before/after < in_shape[d], replicate
 *                 in_shape[d] > 0: the code generator checks both.
 */
#define AMP_ELEMENTWISE_OF_CTYPE(X, T, CT)                                               \
    AMP_ELEMENTWISE_UNARY_(X, T, CT)                                                     \
    X(where, T, void,                                                                    \
      (int ndim, const int64_t *shape, const uint8_t *cond, const int64_t *cond_stride,  \
       const CT *a, const int64_t *a_stride, const CT *b, const int64_t *b_stride, CT *y), \
      (ndim, shape, cond, cond_stride, a, a_stride, b, b_stride, y))                     \
    X(addcmul, T, void,                                                                  \
      (int ndim, const int64_t *shape, const CT *x, const int64_t *x_stride,             \
       const CT *t1, const int64_t *t1_stride, const CT *t2, const int64_t *t2_stride,   \
       double value, CT *y),                                                             \
      (ndim, shape, x, x_stride, t1, t1_stride, t2, t2_stride, value, y))                \
    X(addcdiv, T, void,                                                                  \
      (int ndim, const int64_t *shape, const CT *x, const int64_t *x_stride,             \
       const CT *t1, const int64_t *t1_stride, const CT *t2, const int64_t *t2_stride,   \
       double value, CT *y),                                                             \
      (ndim, shape, x, x_stride, t1, t1_stride, t2, t2_stride, value, y))                \
    X(lerp, T, void,                                                                     \
      (int ndim, const int64_t *shape, const CT *x, const int64_t *x_stride,             \
       const CT *end, const int64_t *end_stride, const CT *weight,                       \
       const int64_t *weight_stride, double value, CT *y),                               \
      (ndim, shape, x, x_stride, end, end_stride, weight, weight_stride, value, y))      \
    X(glu, T, void, (int64_t outer, int64_t len, int64_t inner, const CT *x, CT *y),     \
      (outer, len, inner, x, y))                                                         \
    X(fill, T, void, (size_t n, double value, CT *y), (n, value, y))                     \
    X(pad, T, void,                                                                      \
      (int ndim, const int64_t *in_shape, const int64_t *before, const int64_t *after,   \
       int mode, double value, const CT *x, CT *y),                                      \
      (ndim, in_shape, before, after, mode, value, x, y))                                \
    X(prelu, T, void,                                                                    \
      (int64_t outer, int64_t channels, int64_t inner, int64_t nweight, const CT *x,     \
       const CT *w, CT *y),                                                              \
      (outer, channels, inner, nweight, x, w, y))                                        \
    X(cross, T, void,                                                                    \
      (int ndim, const int64_t *shape, int dim, const CT *a, const int64_t *a_stride,    \
       const CT *b, const int64_t *b_stride, CT *y),                                     \
      (ndim, shape, dim, a, a_stride, b, b_stride, y))

typedef enum { AMP_PAD_CONSTANT = 0, AMP_PAD_REFLECT = 1, AMP_PAD_REPLICATE = 2 } amp_pad_mode;

/* The per-op lists, expanded for one dtype. */
#define AMP_ELEMENTWISE_UNARY_(X, T, CT)                                                 \
    AMP_UNARY_OPS(AMP_UNARY_ROW, X, T, CT)                                               \
    AMP_UNARY_PARAM_OPS(AMP_UNARY_PARAM_ROW, X, T, CT)                                   \
    AMP_BINARY_EXTRA_OPS(AMP_BINARY_EXTRA_ROW, X, T, CT)

/*
 * Dtype-free data movement (any element size):
 *  copy_strided   y[y_stride . i] = x[x_stride . i] for every index i of
 *                 `shape` (strides in elements, any sign, 0 broadcasts x);
 *                 ndim 0 copies one element.  x and y must not overlap.
 *                 Covers permute, transpose, expand, slice, narrow, and
 *                 each input of cat and stack.
 *  tri            y = x (batch matrices of rows x cols) with the elements
 *                 where column - row < diagonal (upper: triu) or
 *                 > diagonal (tril) zeroed.  x and y may be the same.
 *
 * Constructors, for any dtype t (integer and bool too): a number reaches an
 * integer dtype truncated, a floating one rounded once from double.
 *  full           y[i] = value
 *  arange         y[i] = start + i * step, computed in double
 *  linspace       n values from start to end as PyTorch's CPU kernel: the
 *                 step (end - start) / (n - 1), the first n / 2 values
 *                 start + i * step, the rest end - (n - 1 - i) * step, each
 *                 operation rounded to t for bf16 and f16 (double for the
 *                 integer dtypes); n == 1 gives start.
 *  eye            y [n, m]: 1 where row == column, else 0
 *  one_hot        y i64 [n, classes]: 1 at index[i] in row i, else 0.
 *                 Returns AMP_ERR_TARGET_OUT_OF_RANGE, writing nothing,
 *                 for an index outside [0, classes).
 */
#define AMP_DATA_KERNELS(X)                                                              \
    X(copy_strided, none, void,                                                          \
      (size_t elem_size, int ndim, const int64_t *shape, const void *x,                  \
       const int64_t *x_stride, void *y, const int64_t *y_stride),                       \
      (elem_size, ndim, shape, x, x_stride, y, y_stride))                                \
    X(tri, none, void,                                                                   \
      (size_t elem_size, int64_t batch, int64_t rows, int64_t cols, int64_t diagonal,    \
       int upper, const void *x, void *y),                                               \
      (elem_size, batch, rows, cols, diagonal, upper, x, y))                             \
    X(full, none, void, (amp_dtype t, size_t n, double value, void *y), (t, n, value, y)) \
    X(arange, none, void, (amp_dtype t, size_t n, double start, double step, void *y),   \
      (t, n, start, step, y))                                                            \
    X(linspace, none, void, (amp_dtype t, size_t n, double start, double end, void *y),  \
      (t, n, start, end, y))                                                             \
    X(eye, none, void, (amp_dtype t, int64_t n, int64_t m, void *y), (t, n, m, y))       \
    X(one_hot, none, int, (int64_t n, int64_t classes, const int64_t *index, int64_t *y), \
      (n, classes, index, y))
