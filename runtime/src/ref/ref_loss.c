/*
 * ref_loss.c - reference negative log-likelihood loss (PyTorch's nll_loss on
 * a [N, C] input).
 *
 * Per row n with target t = target[n] and w = weight ? weight[t] : 1:
 *     loss[n] = -w * logp[n, t], or 0 when t == ignore_index.
 * Reductions: NONE writes loss[0..N); SUM writes sum(loss); MEAN writes
 * sum(loss) / sum(w) over the rows not ignored, so all rows ignored (or
 * weights summing to 0) gives 0/0 = NaN, as PyTorch does. Sums are f32
 * (f64 for f64), in row order, and the one output is rounded to the storage dtype once.
 *
 * Unlike the other kernels this one checks its arguments, because targets
 * are run-time data: every check, targets included, happens before anything
 * is written, so on error `out` is untouched.
 */
#include "amprt_internal.h"

static AMP_ALWAYS_INLINE int check_args(int64_t N, int64_t C, const void *logp, const int64_t *target,
                                        int64_t ignore_index, int reduction, const void *out)
{
    if (N < 0 || C < 0)
        return AMP_ERR_BAD_DIM;
    if (reduction != AMP_REDUCTION_NONE && reduction != AMP_REDUCTION_MEAN && reduction != AMP_REDUCTION_SUM)
        return AMP_ERR_BAD_REDUCTION;
    /* A pointer may be NULL only where nothing would be read or written
     * through it: with no rows, or (out) with no rows and no reduction. */
    if (N > 0 && (logp == NULL || target == NULL))
        return AMP_ERR_NULL_ARG;
    if (out == NULL && (N > 0 || reduction != AMP_REDUCTION_NONE))
        return AMP_ERR_NULL_ARG;
    for (int64_t n = 0; n < N; n++)
        if (target[n] != ignore_index && (target[n] < 0 || target[n] >= C))
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

#define REF_PART "ref_loss.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_nll_loss REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
