/*
 * ref_max_unpool.c - reference max_unpool (amprt/spatial.h), which checks every
 * index before writing anything.
 *
 * Bodies are in ref_max_unpool.inc, instantiated for ACC float (f32, bf16,
 * f16) and ACC double (f64) by ref_acc_twice.h: every value is computed
 * in ACC from the stored inputs and each output is rounded once.
 *
 * max_unpool is hand-written: it checks the indices before the body runs.
 */
#include <math.h>

#include "amprt_internal.h"

static int ref_check_indices(int64_t planes, int64_t in_plane, int64_t out_plane, const int64_t *indices)
{
    for (int64_t i = 0; i < planes * in_plane; i++)
        if (indices[i] < 0 || indices[i] >= out_plane)
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

#define REF_PART "ref_max_unpool.inc"
#include "ref_acc_twice.h"

#define MAX_UNPOOL_KERNELS(T)                                                                     \
    int amp_ref_max_unpool_##T(int64_t planes, int64_t in_plane, int64_t out_plane,               \
                               const AMP_CTYPE_##T *x, const int64_t *indices, AMP_CTYPE_##T *y)  \
    {                                                                                             \
        int rc = ref_check_indices(planes, in_plane, out_plane, indices);                  \
        if (rc == AMP_OK)                                                                         \
            REF_BODY_##T(max_unpool)(AMP_DTYPE_##T, planes, in_plane, out_plane, x, indices, y);  \
        return rc;                                                                                \
    }

MAX_UNPOOL_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(MAX_UNPOOL_KERNELS)
