/*
 * ref_backward_margin_loss.c - reference gradients of the margin losses
 * (amprt/margin_loss.h).
 *
 * Bodies are in ref_backward_margin_loss.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

/* Offset of flat element i (row-major over shape) in an operand read
 * through `stride` (0 along a broadcast dim), as the forward kernels' ref_offset. */
static AMP_ALWAYS_INLINE int64_t ref_strided(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        offset += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return offset;
}

static AMP_ALWAYS_INLINE int64_t ref_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

#define REF_PART "ref_backward_margin_loss.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_margin_ranking_loss_backward REF_OWNED
#define REF_OWNS_cosine_embedding_loss_backward REF_OWNED
#define REF_OWNS_triplet_margin_loss_backward REF_OWNED
#define REF_OWNS_multi_margin_loss_backward REF_OWNED
#define REF_OWNS_multilabel_margin_loss_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
