/*
 * ref_recurrent.c - reference kernels of amprt/recurrent.h: the recurrent
 * cells (LSTM, GRU, RNN with tanh or relu) and the CTC loss, which checks
 * its lengths and labels before writing anything.
 *
 * Bodies are in ref_recurrent.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 *
 * ctc_loss is hand-written: it checks the lengths before the body runs.
 */
#include <math.h>

#include "amprt_internal.h"

/* ctc_loss's checks: lengths within [0, T] and [0, S], labels in [0, C). */
static int ref_check_ctc(int64_t T, int64_t N, int64_t C, int64_t S, const int64_t *targets,
                          const int64_t *input_lengths, const int64_t *target_lengths)
{
    for (int64_t n = 0; n < N; n++) {
        if (input_lengths[n] < 0 || input_lengths[n] > T || target_lengths[n] < 0 || target_lengths[n] > S)
            return AMP_ERR_BAD_DIM;
        for (int64_t s = 0; s < target_lengths[n]; s++)
            if (targets[n * S + s] < 0 || targets[n * S + s] >= C)
                return AMP_ERR_TARGET_OUT_OF_RANGE;
    }
    return AMP_OK;
}

#define REF_PART "ref_recurrent.inc"
#include "ref_acc_twice.h"

#define RECURRENT_KERNELS(T)                                                                      \
    int amp_ref_ctc_loss_##T(int64_t T, int64_t N, int64_t C, int64_t S,                          \
                             const AMP_CTYPE_##T *log_probs, const int64_t *targets,              \
                             const int64_t *input_lengths, const int64_t *target_lengths,         \
                             int64_t blank, int reduction, int zero_infinity, double *work,       \
                             AMP_CTYPE_##T *y)                                                    \
    {                                                                                             \
        int rc = ref_check_ctc(T, N, C, S, targets, input_lengths, target_lengths);         \
        if (rc == AMP_OK)                                                                         \
            REF_BODY_##T(ctc_loss)(AMP_DTYPE_##T, T, N, C, S, log_probs, targets, input_lengths,  \
                                   target_lengths, blank, reduction, zero_infinity, work, y);     \
        return rc;                                                                                \
    }

RECURRENT_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(RECURRENT_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_rnn_cell REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
