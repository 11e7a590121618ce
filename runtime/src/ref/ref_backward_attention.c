/*
 * ref_backward_attention.c - reference sdpa_backward (amprt/backward.h):
 * dq, dk, dv of scaled dot-product attention.
 *
 * With p_ij the attention weights (softmax of the scores), dp_ij = dy_i .
 * v_j, D_i = sum_j p_ij dp_ij and ds_ij = p_ij (dp_ij - D_i):
 *     dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i,
 *     dv_j = sum_i p_ij dy_i,
 * masked positions having p = ds = 0. Nothing is allocated: the scores are
 * recomputed with the forward's own code (ref_attention.inc's sdpa_score
 * and sdpa_masked), the row statistics (max, denominator, D) once per row
 * for dq and once per row and block of SDPA_BW_ROWS key rows for dk and dv,
 * whose accumulators live on the stack. A row the forward makes NaN (every
 * position masked, or a NaN score) makes its dq row and every dk, dv row of
 * its batch NaN, as autograd through PyTorch's math attention does.
 *
 * Each gradient has its operand's layout (element b * batch_stride + row *
 * width + column); an operand shared by every batch (batch stride 0)
 * receives the sum over the batches, rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

#define SDPA_CHUNK 64 /* for ref_attention.inc */
#define SDPA_BW_ROWS 32
#define SDPA_BW_COLS 64

#define REF_PART "ref_backward_attention.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_sdpa_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
