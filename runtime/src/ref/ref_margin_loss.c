/*
 * ref_margin_loss.c - reference kernels of amprt/margin_loss.h: the margin
 * losses (multilabel_margin, multi_margin, cosine_embedding, margin_ranking,
 * triplet_margin); the class-target ones check their targets first.
 *
 * Bodies are in ref_margin_loss.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

/* Element offset of flat index i (row-major over shape[0..ndim)) in an
 * operand read with `stride`. */
static AMP_ALWAYS_INLINE int64_t ref_offset(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t n = shape[d];
        if (n > 0) {
            off += (i % n) * stride[d];
            i /= n;
        }
    }
    return off;
}

static AMP_ALWAYS_INLINE int64_t ref_numel(int from, int to, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= shape[d];
    return n;
}

#define REF_PART "ref_margin_loss.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_multilabel_margin_loss REF_OWNED
#define REF_OWNS_multi_margin_loss REF_OWNED
#define REF_OWNS_cosine_embedding_loss REF_OWNED
#define REF_OWNS_margin_ranking_loss REF_OWNED
#define REF_OWNS_triplet_margin_loss REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
