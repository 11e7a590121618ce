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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_rnn_cell_backward REF_OWNED
#define REF_OWNS_conv_tbc_backward REF_OWNED
#define REF_OWNS_index_put_backward REF_OWNED
#define REF_OWNS_index_put_mask_backward REF_OWNED
#define REF_OWNS_grid_sampler_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
