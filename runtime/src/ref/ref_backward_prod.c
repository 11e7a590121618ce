/*
 * ref_backward_prod.c - reference gradients of prod and cumprod
 * (amprt/backward.h), exact where inputs hold zeros.
 *
 * Bodies are in ref_backward_prod.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 */
#include <math.h>

#include "amprt_internal.h"

/* As ref_reduce.c: the offset in x of the index'th element of the
 * sub-lattice of dims whose reduce flag equals `reduced`. */
static AMP_ALWAYS_INLINE int64_t ref_offset(int64_t index, int ndim, const int64_t *shape, const uint8_t *reduce,
                                            int reduced)
{
    int64_t offset = 0, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if ((reduce[d] != 0) == reduced) {
            offset += (index % shape[d]) * stride;
            index /= shape[d];
        }
        stride *= shape[d];
    }
    return offset;
}

static AMP_ALWAYS_INLINE int64_t ref_count(int ndim, const int64_t *shape, const uint8_t *reduce, int reduced)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++)
        if ((reduce[d] != 0) == reduced)
            count *= shape[d];
    return count;
}

#define REF_PART "ref_backward_prod.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_prod_backward REF_OWNED
#define REF_OWNS_cumprod_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
