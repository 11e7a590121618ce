/*
 * ref_distance.c - reference cdist and pdist (p-norm distances between
 * rows).  The bodies are in ref_distance.inc, instantiated once per
 * compute type: f32, bf16 and f16 compute in float, f64 in double.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_distance.inc"
#include "ref_acc_twice.h"

#define DISTANCE_KERNELS(T, ACC_SUFFIX)                                                             \
    void amp_ref_cdist_##T(int64_t batch, int64_t P, int64_t R, int64_t M, double p,                \
                           const AMP_CTYPE_##T *x1, const AMP_CTYPE_##T *x2, AMP_CTYPE_##T *y)      \
    {                                                                                               \
        cdist##ACC_SUFFIX(AMP_DTYPE_##T, batch, P, R, M, p, x1, x2, y);                             \
    }                                                                                               \
    void amp_ref_pdist_##T(int64_t N, int64_t M, double p, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y) \
    {                                                                                               \
        pdist##ACC_SUFFIX(AMP_DTYPE_##T, N, M, p, x, y);                                            \
    }

DISTANCE_KERNELS(f64, _dacc)
DISTANCE_KERNELS(f32, _facc)
DISTANCE_KERNELS(bf16, _facc)
DISTANCE_KERNELS(f16, _facc)
