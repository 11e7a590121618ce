/*
 * amprt/recurrent.h - part of amprt.h (include that, not this): the
 * recurrent cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell) and
 * the CTC loss.  Their gradients are in amprt/backward_nn.h.
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
 */
#ifndef AMPRT_RECURRENT_H
#define AMPRT_RECURRENT_H

enum { AMP_RNN_LSTM = 0, AMP_RNN_GRU = 1, AMP_RNN_TANH = 2, AMP_RNN_RELU = 3 };

#define AMP_RECURRENT_OF_CTYPE(X, T, CT)                                                 \
    X(rnn_cell, T, void,                                                                 \
      (int kind, int64_t B, int64_t I, int64_t H, const CT *x, const CT *hx,             \
       const CT *cx, const CT *w_ih, const CT *w_hh, const CT *b_ih, const CT *b_hh,     \
       CT *hy, CT *cy),                                                                  \
      (kind, B, I, H, x, hx, cx, w_ih, w_hh, b_ih, b_hh, hy, cy))                        \
    X(ctc_loss, T, int,                                                                  \
      (int64_t T, int64_t N, int64_t C, int64_t S, const CT *log_probs,                  \
       const int64_t *targets, const int64_t *input_lengths,                             \
       const int64_t *target_lengths, int64_t blank, int reduction, int zero_infinity,   \
       double *work, CT *y),                                                             \
      (T, N, C, S, log_probs, targets, input_lengths, target_lengths, blank, reduction,  \
       zero_infinity, work, y))

#endif /* AMPRT_RECURRENT_H */
