/*
 * ref_more.c - reference kernels of amprt/more.h: the recurrent cells,
 * max_unpool and quantile.
 *
 * Bodies are in ref_more.inc, instantiated for ACC float (f32, bf16, f16)
 * and ACC double (f64) by ref_acc_twice.h: every value is computed in ACC
 * from the stored inputs and each output is rounded once.  max_unpool
 * checks every index before writing anything.
 */
#include <math.h>

#include "amprt_internal.h"

/* Ascending heapsort of n doubles without NaN (quantile's work array). */
static void more_sort(double *a, int64_t n)
{
    for (int64_t start = n / 2 - 1, end = n;; ) {
        int64_t root;
        if (start >= 0) {
            root = start--;
        } else {
            if (--end <= 0)
                break;
            double t = a[0];
            a[0] = a[end];
            a[end] = t;
            root = 0;
        }
        for (;;) {
            int64_t child = 2 * root + 1;
            if (child >= end)
                break;
            if (child + 1 < end && a[child + 1] > a[child])
                child++;
            if (!(a[child] > a[root]))
                break;
            double t = a[root];
            a[root] = a[child];
            a[child] = t;
            root = child;
        }
    }
}

static int more_check_indices(int64_t planes, int64_t in_plane, int64_t out_plane, const int64_t *indices)
{
    for (int64_t i = 0; i < planes * in_plane; i++)
        if (indices[i] < 0 || indices[i] >= out_plane)
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

/* ctc_loss's checks: lengths within [0, T] and [0, S], labels in [0, C). */
static int more_check_ctc(int64_t T, int64_t N, int64_t C, int64_t S, const int64_t *targets,
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

#define REF_PART "ref_more.inc"
#include "ref_acc_twice.h"

#define MORE_KERNELS(T)                                                                           \
    void amp_ref_rnn_cell_##T(int kind, int64_t B, int64_t I, int64_t H, const AMP_CTYPE_##T *x,  \
                              const AMP_CTYPE_##T *hx, const AMP_CTYPE_##T *cx,                   \
                              const AMP_CTYPE_##T *w_ih, const AMP_CTYPE_##T *w_hh,               \
                              const AMP_CTYPE_##T *b_ih, const AMP_CTYPE_##T *b_hh,               \
                              AMP_CTYPE_##T *hy, AMP_CTYPE_##T *cy)                               \
    {                                                                                             \
        REF_BODY_##T(rnn_cell)(AMP_DTYPE_##T, kind, B, I, H, x, hx, cx, w_ih, w_hh, b_ih, b_hh,   \
                               hy, cy);                                                           \
    }                                                                                             \
    int amp_ref_max_unpool_##T(int64_t planes, int64_t in_plane, int64_t out_plane,               \
                               const AMP_CTYPE_##T *x, const int64_t *indices, AMP_CTYPE_##T *y)  \
    {                                                                                             \
        int rc = more_check_indices(planes, in_plane, out_plane, indices);                        \
        if (rc == AMP_OK)                                                                         \
            REF_BODY_##T(max_unpool)(AMP_DTYPE_##T, planes, in_plane, out_plane, x, indices, y);  \
        return rc;                                                                                \
    }                                                                                             \
    void amp_ref_quantile_##T(int64_t outer, int64_t len, int64_t inner, double q,                \
                              int interpolation, int ignore_nan, const AMP_CTYPE_##T *x,          \
                              double *work, AMP_CTYPE_##T *y)                                     \
    {                                                                                             \
        REF_BODY_##T(quantile)(AMP_DTYPE_##T, outer, len, inner, q, interpolation, ignore_nan, x, \
                               work, y);                                                          \
    }                                                                                             \
    int amp_ref_ctc_loss_##T(int64_t T, int64_t N, int64_t C, int64_t S,                          \
                             const AMP_CTYPE_##T *log_probs, const int64_t *targets,              \
                             const int64_t *input_lengths, const int64_t *target_lengths,         \
                             int64_t blank, int reduction, int zero_infinity, double *work,       \
                             AMP_CTYPE_##T *y)                                                    \
    {                                                                                             \
        int rc = more_check_ctc(T, N, C, S, targets, input_lengths, target_lengths);              \
        if (rc == AMP_OK)                                                                         \
            REF_BODY_##T(ctc_loss)(AMP_DTYPE_##T, T, N, C, S, log_probs, targets, input_lengths,  \
                                   target_lengths, blank, reduction, zero_infinity, work, y);     \
        return rc;                                                                                \
    }

MORE_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(MORE_KERNELS)
