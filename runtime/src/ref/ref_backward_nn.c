/*
 * ref_backward_nn.c - reference kernels of amprt/backward_nn.h: the
 * gradients of the recurrent cells, conv_tbc, index_put's values,
 * grid_sampler and ctc_loss.
 *
 * Bodies are in ref_backward_nn.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h.  The gate gradients are
 * computed once per (row, unit) into the caller's double work array, so the
 * products with the weights and the sums over the batch are plain loops
 * over stored values, each output one ACC sum rounded once.  index_put's
 * value gradients and grid_sampler's input gradient are ACC sums kept in
 * the double work array (a scattered output collects its terms in any
 * order), rounded once at the end.  ctc_loss keeps its alpha and beta
 * tables in work, as the forward keeps its two alpha rows.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_backward_nn.inc"
#include "ref_acc_twice.h"

#define BACKWARD_NN_KERNELS(T)                                                                    \
    void amp_ref_rnn_cell_backward_##T(                                                           \
        int kind, int64_t B, int64_t I, int64_t H, const AMP_CTYPE_##T *x,                        \
        const AMP_CTYPE_##T *hx, const AMP_CTYPE_##T *cx, const AMP_CTYPE_##T *w_ih,              \
        const AMP_CTYPE_##T *w_hh, const AMP_CTYPE_##T *b_ih, const AMP_CTYPE_##T *b_hh,          \
        const AMP_CTYPE_##T *dhy, const AMP_CTYPE_##T *dcy, double *work, AMP_CTYPE_##T *dx,      \
        AMP_CTYPE_##T *dhx,                                                                       \
        AMP_CTYPE_##T *dcx, AMP_CTYPE_##T *dw_ih, AMP_CTYPE_##T *dw_hh, AMP_CTYPE_##T *db_ih,     \
        AMP_CTYPE_##T *db_hh)                                                                     \
    {                                                                                             \
        REF_BODY_##T(rnn_cell_backward)(AMP_DTYPE_##T, kind, B, I, H, x, hx, cx, w_ih, w_hh,      \
                                        b_ih, b_hh, dhy, dcy, work, dx, dhx, dcx, dw_ih, dw_hh,   \
                                        db_ih,                                                    \
                                        db_hh);                                                   \
    }                                                                                             \
    void amp_ref_conv_tbc_backward_##T(int64_t time, int64_t batch, int64_t in, int64_t kernel,   \
                                       int64_t out, int64_t pad, const AMP_CTYPE_##T *x,          \
                                       const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *dy,           \
                                       AMP_CTYPE_##T *dx, AMP_CTYPE_##T *dw, AMP_CTYPE_##T *dbias) \
    {                                                                                             \
        REF_BODY_##T(conv_tbc_backward)(AMP_DTYPE_##T, time, batch, in, kernel, out, pad, x, w,   \
                                        dy, dx, dw, dbias);                                       \
    }                                                                                             \
    void amp_ref_index_put_backward_##T(int ndim, const int64_t *shape, int index_ndim,           \
                                        const int64_t *index, int64_t x_dim0,                     \
                                        const AMP_CTYPE_##T *dy, const int64_t *v_stride,         \
                                        int64_t v_numel, double *work, AMP_CTYPE_##T *dvalues)    \
    {                                                                                             \
        REF_BODY_##T(index_put_backward)(AMP_DTYPE_##T, ndim, shape, index_ndim, index, x_dim0,   \
                                         dy, v_stride, v_numel, work, dvalues);                   \
    }                                                                                             \
    void amp_ref_index_put_mask_backward_##T(int ndim, const int64_t *x_shape, int mask_ndim,     \
                                             const uint8_t *mask, const AMP_CTYPE_##T *dy,        \
                                             const int64_t *v_stride, int64_t v_numel,            \
                                             double *work, AMP_CTYPE_##T *dvalues)                \
    {                                                                                             \
        REF_BODY_##T(index_put_mask_backward)(AMP_DTYPE_##T, ndim, x_shape, mask_ndim, mask, dy,  \
                                              v_stride, v_numel, work, dvalues);                  \
    }                                                                                             \
    void amp_ref_grid_sampler_backward_##T(                                                       \
        int nspatial, int64_t N, int64_t C, const int64_t *in_size, const int64_t *out_size,      \
        int mode, int padding, int align_corners, const AMP_CTYPE_##T *x,                         \
        const AMP_CTYPE_##T *grid, const AMP_CTYPE_##T *dy, double *work, AMP_CTYPE_##T *dx,      \
        AMP_CTYPE_##T *dgrid)                                                                     \
    {                                                                                             \
        REF_BODY_##T(grid_sampler_backward)(AMP_DTYPE_##T, nspatial, N, C, in_size, out_size,     \
                                            mode, padding, align_corners, x, grid, dy, work, dx,  \
                                            dgrid);                                               \
    }                                                                                             \
    void amp_ref_ctc_loss_backward_##T(int64_t T, int64_t N, int64_t C, int64_t S,                \
                                       const AMP_CTYPE_##T *log_probs, const int64_t *targets,    \
                                       const int64_t *input_lengths,                              \
                                       const int64_t *target_lengths, int64_t blank,              \
                                       int reduction, int zero_infinity,                          \
                                       const AMP_CTYPE_##T *dy, double *work,                     \
                                       AMP_CTYPE_##T *dlog_probs)                                 \
    {                                                                                             \
        REF_BODY_##T(ctc_loss_backward)(AMP_DTYPE_##T, T, N, C, S, log_probs, targets,            \
                                        input_lengths, target_lengths, blank, reduction,          \
                                        zero_infinity, dy, work, dlog_probs);                     \
    }

BACKWARD_NN_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(BACKWARD_NN_KERNELS)
