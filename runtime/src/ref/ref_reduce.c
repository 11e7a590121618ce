/*
 * ref_reduce.c - reference reductions over a per-dim mask (sum, mean, prod,
 * logsumexp, amax, amin, norm, var, std, and all/any of any dtype), argmax
 * and argmin along an axis, scans (cumsum, cumprod) and trace.
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
 *
 * all and any are hand-written: dtype-free, their definitions are the body.
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

/* all (want_all 1) and any of any dtype: an element is true when it is
 * not zero (amp_ldd is exact for that test in every dtype; NaN is true). */
static void truth_reduce(int want_all, amp_dtype t, int ndim, const int64_t *shape, const uint8_t *reduce,
                         const void *x, uint8_t *y)
{
    int64_t kept = count_of(ndim, shape, reduce, 0), reduced = count_of(ndim, shape, reduce, 1);
    for (int64_t o = 0; o < kept; o++) {
        int64_t base = offset_in_x(o, ndim, shape, reduce, 0);
        uint8_t acc = (uint8_t)want_all;
        for (int64_t r = 0; r < reduced && acc == want_all; r++)
            acc = (uint8_t)(amp_ldd(t, x, base + offset_in_x(r, ndim, shape, reduce, 1)) != 0);
        y[o] = acc;
    }
}

void amp_ref_all(amp_dtype t, int ndim, const int64_t *shape, const uint8_t *reduce, const void *x, uint8_t *y)
{
    truth_reduce(1, t, ndim, shape, reduce, x, y);
}

void amp_ref_any(amp_dtype t, int ndim, const int64_t *shape, const uint8_t *reduce, const void *x, uint8_t *y)
{
    truth_reduce(0, t, ndim, shape, reduce, x, y);
}

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_sum REF_SHARES(masked_reduce, RED_SUM)
#define REF_OWNS_mean REF_SHARES(masked_reduce, RED_MEAN)
#define REF_OWNS_prod REF_SHARES(masked_reduce, RED_PROD)
#define REF_OWNS_logsumexp REF_SHARES(masked_reduce, RED_LOGSUMEXP)
#define REF_OWNS_amax REF_SHARES(masked_reduce, RED_AMAX)
#define REF_OWNS_amin REF_SHARES(masked_reduce, RED_AMIN)
#define REF_OWNS_var REF_SHARES(variance, 0)
#define REF_OWNS_std REF_SHARES(variance, 1)
#define REF_OWNS_argmax REF_SHARES(arg_extreme, 1)
#define REF_OWNS_argmin REF_SHARES(arg_extreme, 0)
#define REF_OWNS_cumsum REF_SHARES(scan, 0)
#define REF_OWNS_cumprod REF_SHARES(scan, 1)
#define REF_OWNS_norm REF_OWNED
#define REF_OWNS_trace REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
