/*
 * amprt/more.h - part of amprt.h (include that, not this): the recurrent
 * cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell), max_unpool and
 * quantile/nanquantile.  aten's generic convolution is composed by the code
 * generator from amp_conv_* and amp_conv_transpose_* (amprt/spatial.h).
 *
 * Conventions are amprt.h's (T in f64, f32, bf16, f16; f32 opmath for the
 * three narrow ones, f64 for f64; one rounding per output element; scalar
 * parameters as double; outputs contiguous).
 *
 *  rnn_cell     kind AMP_RNN_LSTM, AMP_RNN_GRU, AMP_RNN_TANH or AMP_RNN_RELU;
 *               x [B, I], hx [B, H], w_ih [G*H, I], w_hh [G*H, H], b_ih and
 *               b_hh [G*H] or NULL (zero), G = 4, 3, 1, 1.  Each gate's
 *               pre-activation (both products and both biases) is summed in
 *               the compute type and never rounded to T:
 *                 lstm  gates i, f, g, o (rows k*H + j, in that order):
 *                       cy = sigmoid(f) cx + sigmoid(i) tanh(g),
 *                       hy = sigmoid(o) tanh(cy) (cy unrounded); cx [B, H].
 *                 gru   r = sigmoid(ih_r + hh_r), z = sigmoid(ih_z + hh_z),
 *                       n = tanh(ih_n + r hh_n) (hh_n with b_hh's part),
 *                       hy = n + z (hx - n); cx and cy unused (NULL).
 *                 tanh, relu  hy = act(ih + hh); cx and cy unused.
 *  max_unpool   x and indices [planes, in_plane]; y [planes, out_plane] is
 *               zero but y[p, indices[p, i]] = x[p, i] (for equal indices the
 *               last in order wins).  Returns AMP_ERR_TARGET_OUT_OF_RANGE,
 *               writing nothing, for an index outside [0, out_plane).
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
 *  ctc_loss     log_probs [T, N, C], targets [N, S], input_lengths and
 *               target_lengths [N]: each sample's negative log likelihood
 *               of its target (labels targets[n, 0..target_lengths[n])) over
 *               its first input_lengths[n] frames, by the forward (alpha)
 *               recursion in log space in the compute type; an impossible
 *               alignment gives +inf (0 with zero_infinity).  Reduction
 *               NONE: y [N]; SUM: the sum; MEAN: the mean over n of loss /
 *               max(target_length, 1) (PyTorch's).  work: 2 (2 S + 1)
 *               doubles.  Returns AMP_ERR_BAD_DIM for a length outside [0, T]
 *               or [0, S], AMP_ERR_TARGET_OUT_OF_RANGE for a label (within
 *               its target length) outside [0, C); nothing is written then.
 *
 * Linear algebra (AMP_MORE_LINALG_OF_CTYPE), f32 and f64 only as PyTorch's
 * LAPACK calls, computing in T; matrices row-major and contiguous, `batch`
 * of them one after the other:
 *  lu_solve     X for A X = B from linalg_lu_factor's LU [m, m] and its
 *               1-based i32 pivots [m] (row i swapped with pivots[i] - 1, in
 *               order), B and y [m, k].  Returns AMP_ERR_TARGET_OUT_OF_RANGE,
 *               writing nothing, for a pivot outside [1, m].
 *  lstsq        the least-squares solution of A X = B, A [m, n], B [m, k],
 *               y [n, k], by Householder QR: of A when m >= n (A of full
 *               column rank), else the minimum-norm solution through the QR
 *               of A^T (A of full row rank), as LAPACK's gelsy gives for
 *               full-rank A.  work: AMP_LSTSQ_WORK_ELEMS(m, n, k) doubles.
 *  matrix_exp   exp(A), A [n, n]: Taylor series of degree 18 of A / 2^s with
 *               ||A / 2^s||_1 <= 1/2, squared s times.  work:
 *               AMP_MATRIX_EXP_WORK_ELEMS(n) doubles.
 *  householder_product  the first n columns of H_0 H_1 ... H_{k-1}, with
 *               H_i = I - tau[i] v_i v_i^T, v_i = (0, ..., 0, 1, a[i+1.., i])
 *               (a [m, n], k <= n <= m, tau [k]); y [m, n].  orgqr is this.
 *  ormqr        Q = H_0 ... H_{k-1} from a [mn, nk] and tau [k] as above
 *               (mn rows); y [rows, cols] = op(Q) C (left) or C op(Q) (not
 *               left), op the transpose when `transpose`; mn is rows (left)
 *               or cols.
 */
#ifndef AMPRT_MORE_H
#define AMPRT_MORE_H

enum { AMP_RNN_LSTM = 0, AMP_RNN_GRU = 1, AMP_RNN_TANH = 2, AMP_RNN_RELU = 3 };
enum {
    AMP_QUANTILE_LINEAR = 0,
    AMP_QUANTILE_LOWER = 1,
    AMP_QUANTILE_HIGHER = 2,
    AMP_QUANTILE_MIDPOINT = 3,
    AMP_QUANTILE_NEAREST = 4
};

#define AMP_MORE_OF_CTYPE(X, T, CT)                                                      \
    X(rnn_cell_##T, void,                                                                \
      (int kind, int64_t B, int64_t I, int64_t H, const CT *x, const CT *hx,             \
       const CT *cx, const CT *w_ih, const CT *w_hh, const CT *b_ih, const CT *b_hh,     \
       CT *hy, CT *cy),                                                                  \
      (kind, B, I, H, x, hx, cx, w_ih, w_hh, b_ih, b_hh, hy, cy))                        \
    X(max_unpool_##T, int,                                                               \
      (int64_t planes, int64_t in_plane, int64_t out_plane, const CT *x,                 \
       const int64_t *indices, CT *y),                                                   \
      (planes, in_plane, out_plane, x, indices, y))                                      \
    X(quantile_##T, void,                                                                \
      (int64_t outer, int64_t len, int64_t inner, double q, int interpolation,           \
       int ignore_nan, const CT *x, double *work, CT *y),                                \
      (outer, len, inner, q, interpolation, ignore_nan, x, work, y))                      \
    X(ctc_loss_##T, int,                                                                 \
      (int64_t T, int64_t N, int64_t C, int64_t S, const CT *log_probs,                  \
       const int64_t *targets, const int64_t *input_lengths,                             \
       const int64_t *target_lengths, int64_t blank, int reduction, int zero_infinity,   \
       double *work, CT *y),                                                             \
      (T, N, C, S, log_probs, targets, input_lengths, target_lengths, blank, reduction,  \
       zero_infinity, work, y))

#define AMP_LSTSQ_WORK_ELEMS(m, n, k)                                                    \
    ((size_t)((m) > (n) ? (m) : (n)) * ((size_t)((m) < (n) ? (m) : (n)) + (size_t)(k)) +  \
     (size_t)((m) < (n) ? (m) : (n)))
#define AMP_MATRIX_EXP_WORK_ELEMS(n) ((size_t)4 * (size_t)(n) * (size_t)(n))

#define AMP_MORE_LINALG_OF_CTYPE(X, T, CT)                                               \
    X(lu_solve_##T, int,                                                                 \
      (int64_t batch, int64_t m, int64_t k, const CT *LU, const int32_t *pivots,         \
       const CT *b, CT *y),                                                              \
      (batch, m, k, LU, pivots, b, y))                                                   \
    X(lstsq_##T, void,                                                                   \
      (int64_t batch, int64_t m, int64_t n, int64_t k, const CT *a, const CT *b, CT *y,  \
       double *work),                                                                    \
      (batch, m, n, k, a, b, y, work))                                                   \
    X(matrix_exp_##T, void, (int64_t batch, int64_t n, const CT *a, CT *y, double *work), \
      (batch, n, a, y, work))                                                            \
    X(householder_product_##T, void,                                                     \
      (int64_t batch, int64_t m, int64_t n, int64_t k, const CT *a, const CT *tau,       \
       CT *y),                                                                           \
      (batch, m, n, k, a, tau, y))                                                       \
    X(ormqr_##T, void,                                                                   \
      (int64_t batch, int64_t mn, int64_t nk, int64_t k, int64_t rows, int64_t cols,     \
       int left, int transpose, const CT *a, const CT *tau, const CT *c, CT *y),         \
      (batch, mn, nk, k, rows, cols, left, transpose, a, tau, c, y))

#endif /* AMPRT_MORE_H */
