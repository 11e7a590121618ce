/*
 * amprt/backward_nn.h - part of amprt.h (include that, not this): the
 * gradient kernels of the recurrent cells, conv_tbc, index_put,
 * grid_sampler and ctc_loss: the ops whose gradient rules (src/back/grad_rnn.c,
 * grad_spatial.c, grad_shape.c, grad_loss.c) call a kernel of their own rather
 * than composing forward kernels.
 *
 * Conventions are amprt.h's and amprt/backward.h's: T is f64, f32, bf16 or
 * f16; f32/bf16/f16 compute in f32 and f64 in f64; each output element is
 * rounded to T once; a NULL output is not wanted and not written.
 *
 *  rnn_cell_backward  the gradients of amp_rnn_cell (arguments as its:
 *      kind, B, I, H, x, hx, cx, w_ih, w_hh, b_ih, b_hh, NULL biases being
 *      zero) for dhy, the gradient of hy [B, H], and (lstm) dcy, the
 *      gradient of the cell state cy [B, H]; a NULL one is zero (an
 *      unrolled lstm's last step has no dcy, a step whose hy nothing uses
 *      no dhy).  Writes dx [B, I], dhx [B, H], dcx [B, H]
 *      (lstm only), dw_ih [G*H, I], dw_hh [G*H, H], db_ih and db_hh [G*H].
 *      The gates are recomputed from the inputs exactly as the forward
 *      computes them (pre-activations in the compute type, never rounded),
 *      and their gradients are kept in `work`, in double, so every output
 *      is one sum in the compute type of unrounded terms:
 *        dx = dgi w_ih, dhx = dgh w_hh (+ dhy z for gru), dw_ih = dgi^T x,
 *        dw_hh = dgh^T hx, db_ih = sum_b dgi, db_hh = sum_b dgh,
 *      dgi and dgh the gradients of the input and hidden products' gate
 *      pre-activations (equal but for gru's n gate, whose hidden part is
 *      scaled by r).  relu passes dhy where its pre-activation is > 0 or
 *      NaN (PyTorch's threshold_backward on the result).  work:
 *      AMP_RNN_CELL_BACKWARD_WORK_ELEMS(B, H) doubles.
 *  conv_tbc_backward  the gradients of amp_conv_tbc (arguments as its:
 *      x [time, batch, in], w [kernel, in, out], pad; out_time = time +
 *      2 pad - kernel + 1) for dy [out_time, batch, out]:
 *        dx[it, b, i] = sum over k, o of dy[it + pad - k, b, o] w[k, i, o],
 *        dw[k, i, o] = sum over ot, b of x[ot - pad + k, b, i] dy[ot, b, o],
 *        dbias[o] = sum over ot, b of dy[ot, b, o],
 *      terms outside [0, out_time) or [0, time) left out (the zero
 *      padding).  dx [time, batch, in], dw, dbias [out].
 *  index_put_backward  dvalues for amp_index_put (arguments as its: the
 *      index positions shape[0..index_ndim), each row `inner` elements,
 *      values read with v_stride over shape) from dy [x_dim0, inner]: every
 *      position's dy[row] added to the values element it read, so a
 *      broadcast value sums all its positions (PyTorch's grad.index(...)
 *      summed to the values' shape; a repeated row gives each of its
 *      positions that row's dy, with or without accumulate).  dvalues has
 *      v_numel elements; work: v_numel doubles (ACC sums).
 *  index_put_mask_backward  the same for amp_index_put_mask: every
 *      position whose mask is 1.
 *      (dinput is composed by the code generator: dy, with the written
 *      positions zeroed by amp_index_put of zeros unless accumulate.)
 *  grid_sampler_backward  the gradients of amp_grid_sampler (arguments as
 *      its) for dy [N, C, out_size...]: dx [N, C, in_size...], each dy
 *      times its corner's weight added to the corner it read (ACC sums in
 *      `work`, N*C*prod(in_size) doubles, rounded once); dgrid [N,
 *      out_size..., nspatial]: the derivative of the interpolation along
 *      each coordinate, summed over the channels, times d(source index) /
 *      d(grid), which is the unnormalising scale (size - 1)/2 or size/2,
 *      times 0 where border or reflection padding clipped the coordinate
 *      and -1 where reflection mirrored it (PyTorch's
 *      *_set_grad helpers).  Nearest mode: dx gathers dy back to the
 *      rounded positions and dgrid is 0, as PyTorch.  Either output may be
 *      NULL (work is unused without dx).
 *  ctc_loss_backward  dlog_probs [T, N, C] for amp_ctc_loss (arguments as
 *      its; the forward has checked the lengths and labels) and dy (one
 *      element, or N for AMP_REDUCTION_NONE): PyTorch's CPU formula,
 *        dlog_probs[t, n, c] = (exp(lp) - exp(lcab + nll - lp)) g_n
 *      for t < input_lengths[n], 0 after, with alpha and beta the forward
 *      and backward log-space recursions (each including lp at its frame),
 *      lcab the log-sum over the positions s labelled c of alpha[t][s] +
 *      beta[t][s], nll the sample's loss, g_n its share of dy (dy[n];
 *      dy[0]; dy[0] / (N max(target_length, 1)) for the mean).  The
 *      exp(lp) term makes it the gradient with respect to the logits of
 *      a log_softmax feeding ctc_loss, PyTorch's convention: composed with
 *      log_softmax's backward it is the exact gradient.  A sample whose loss
 *      is infinite gets 0 with zero_infinity (else NaN, as PyTorch).  work:
 *      AMP_CTC_LOSS_BACKWARD_WORK_ELEMS(T, S, C) doubles.
 */
#ifndef AMPRT_BACKWARD_NN_H
#define AMPRT_BACKWARD_NN_H

/* 4 gates (lstm's, the most) for dgi and dgh, and one [B, H] for gru's
 * direct dhx term */
#define AMP_RNN_CELL_BACKWARD_WORK_ELEMS(B, H) ((size_t)(B) * (size_t)(H) * 9u)
/* alpha and beta for every frame and extended-label position, and one
 * log-sum per class */
#define AMP_CTC_LOSS_BACKWARD_WORK_ELEMS(T, S, C) \
    ((size_t)2 * (size_t)(T) * (2 * (size_t)(S) + 1) + (size_t)(C))

#define AMP_BACKWARD_NN_OF_CTYPE(X, T, CT)                                               \
    X(rnn_cell_backward, T, void,                                                        \
      (int kind, int64_t B, int64_t I, int64_t H, const CT *x, const CT *hx,             \
       const CT *cx, const CT *w_ih, const CT *w_hh, const CT *b_ih, const CT *b_hh,     \
       const CT *dhy, const CT *dcy, double *work, CT *dx, CT *dhx, CT *dcx, CT *dw_ih,  \
       CT *dw_hh, CT *db_ih, CT *db_hh),                                                 \
      (kind, B, I, H, x, hx, cx, w_ih, w_hh, b_ih, b_hh, dhy, dcy, work, dx, dhx, dcx,   \
       dw_ih, dw_hh, db_ih, db_hh))                                                             \
    X(conv_tbc_backward, T, void,                                                        \
      (int64_t time, int64_t batch, int64_t in, int64_t kernel, int64_t out, int64_t pad, \
       const CT *x, const CT *w, const CT *dy, CT *dx, CT *dw, CT *dbias),               \
      (time, batch, in, kernel, out, pad, x, w, dy, dx, dw, dbias))                     \
    X(index_put_backward, T, void,                                                       \
      (int ndim, const int64_t *shape, int index_ndim, const int64_t *index,             \
       int64_t x_dim0, const CT *dy, const int64_t *v_stride, int64_t v_numel,           \
       double *work, CT *dvalues),                                                       \
      (ndim, shape, index_ndim, index, x_dim0, dy, v_stride, v_numel, work, dvalues))    \
    X(index_put_mask_backward, T, void,                                                  \
      (int ndim, const int64_t *x_shape, int mask_ndim, const uint8_t *mask,             \
       const CT *dy, const int64_t *v_stride, int64_t v_numel, double *work,             \
       CT *dvalues),                                                                     \
      (ndim, x_shape, mask_ndim, mask, dy, v_stride, v_numel, work, dvalues))             \
    X(grid_sampler_backward, T, void,                                                    \
      (int nspatial, int64_t N, int64_t C, const int64_t *in_size,                       \
       const int64_t *out_size, int mode, int padding, int align_corners, const CT *x,   \
       const CT *grid, const CT *dy, double *work, CT *dx, CT *dgrid),                   \
      (nspatial, N, C, in_size, out_size, mode, padding, align_corners, x, grid, dy,     \
       work, dx, dgrid))                                                                 \
    X(ctc_loss_backward, T, void,                                                        \
      (int64_t T, int64_t N, int64_t C, int64_t S, const CT *log_probs,                  \
       const int64_t *targets, const int64_t *input_lengths,                             \
       const int64_t *target_lengths, int64_t blank, int reduction, int zero_infinity,   \
       const CT *dy, double *work, CT *dlog_probs),                                      \
      (T, N, C, S, log_probs, targets, input_lengths, target_lengths, blank, reduction,  \
       zero_infinity, dy, work, dlog_probs))

#endif /* AMPRT_BACKWARD_NN_H */
