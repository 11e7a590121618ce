/*
 * ref_reduce.c - reference reductions over a per-dim mask (sum, mean, prod,
 * logsumexp, amax, amin, norm), scans (cumsum, cumprod) and trace.
 *
 * The bodies are written once, in ref_reduce.inc, and instantiated twice
 * by ref_acc_twice.h: with ACC float for f32/bf16/f16 (PyTorch's opmath on
 * CPU) and with ACC double for f64. Every accumulator is ACC and each output element is
 * rounded to the storage dtype once.
 *
 * Masked reductions: x is contiguous with shape[0..ndim). The output walks
 * the kept dims in order, the inner loop the reduced dims in order; both
 * turn a flat counter into an offset into x by peeling one dim at a time
 * (offset_in_x), which costs a few divisions per element but needs no
 * per-dim scratch arrays, so ndim has no limit and ndim 0 is one element.
 * Sums are sequential in that order.
 */
#include <math.h>

#include "amprt_internal.h"

typedef enum { RED_SUM, RED_MEAN, RED_PROD, RED_LOGSUMEXP, RED_AMAX, RED_AMIN } reduce_op;

/* The offset in x of the index'th element of the sub-lattice formed by the
 * dims whose reduce flag equals `reduced` (row-major over those dims), with
 * the other dims at 0. */
static AMP_ALWAYS_INLINE int64_t offset_in_x(int64_t index, int ndim, const int64_t *shape,
                                             const uint8_t *reduce, int reduced)
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

/* Elements in the kept (reduced = 0) or reduced (1) dims. */
static AMP_ALWAYS_INLINE int64_t count_of(int ndim, const int64_t *shape, const uint8_t *reduce, int reduced)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++)
        if ((reduce[d] != 0) == reduced)
            count *= shape[d];
    return count;
}

#define REF_PART "ref_reduce.inc"
#include "ref_acc_twice.h"

#define MASKED_KERNEL(op, code, T)                                                                \
    void amp_ref_##op##_##T(int ndim, const int64_t *shape, const uint8_t *reduce,                \
                            const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                             \
    {                                                                                             \
        REF_BODY_##T(masked_reduce)(AMP_DTYPE_##T, code, ndim, shape, reduce, x, y);              \
    }

#define REDUCE_KERNELS(T)                                                                         \
    MASKED_KERNEL(sum, RED_SUM, T)                                                                \
    MASKED_KERNEL(mean, RED_MEAN, T)                                                              \
    MASKED_KERNEL(prod, RED_PROD, T)                                                              \
    MASKED_KERNEL(logsumexp, RED_LOGSUMEXP, T)                                                    \
    MASKED_KERNEL(amax, RED_AMAX, T)                                                              \
    MASKED_KERNEL(amin, RED_AMIN, T)                                                              \
    void amp_ref_norm_##T(int ndim, const int64_t *shape, const uint8_t *reduce, double p,        \
                          const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                               \
    {                                                                                             \
        REF_BODY_##T(norm)(AMP_DTYPE_##T, ndim, shape, reduce, p, x, y);                          \
    }                                                                                             \
    void amp_ref_cumsum_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *x,    \
                            AMP_CTYPE_##T *y)                                                     \
    {                                                                                             \
        REF_BODY_##T(scan)(AMP_DTYPE_##T, 0, outer, dim, inner, x, y);                            \
    }                                                                                             \
    void amp_ref_cumprod_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *x,   \
                             AMP_CTYPE_##T *y)                                                    \
    {                                                                                             \
        REF_BODY_##T(scan)(AMP_DTYPE_##T, 1, outer, dim, inner, x, y);                            \
    }                                                                                             \
    void amp_ref_trace_##T(int64_t rows, int64_t cols, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y) \
    {                                                                                             \
        REF_BODY_##T(trace)(AMP_DTYPE_##T, rows, cols, x, y);                                     \
    }

REDUCE_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(REDUCE_KERNELS)
