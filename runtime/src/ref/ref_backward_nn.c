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

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_rnn_cell_backward REF_OWNED
#define REF_OWNS_conv_tbc_backward REF_OWNED
#define REF_OWNS_index_put_backward REF_OWNED
#define REF_OWNS_index_put_mask_backward REF_OWNED
#define REF_OWNS_grid_sampler_backward REF_OWNED
#define REF_OWNS_ctc_loss_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
