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
      (outer, len, inner, q, interpolation, ignore_nan, x, work, y))

#endif /* AMPRT_MORE_H */
