/*
 * ref_linalg_solve.c - reference kernels of the solves and matrix functions
 * of amprt/linalg.h: lu_solve, lstsq, matrix_exp, householder_product and
 * ormqr, f32 and f64.
 *
 * Bodies are in ref_linalg_solve.inc, instantiated by ref_acc_twice.h; f32
 * uses the float instantiation and f64 the double one, so every kernel
 * computes in T (PyTorch's LAPACK calls do).  lu_solve checks every pivot
 * before writing anything.
 *
 * lu_solve is hand-written: it checks the pivots before the body runs.
 */
#include <math.h>

#include "amprt_internal.h"

static int ref_check_pivots(int64_t n, int64_t m, const int32_t *pivots)
{
    for (int64_t i = 0; i < n; i++)
        if (pivots[i] < 1 || pivots[i] > m)
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

#define REF_PART "ref_linalg_solve.inc"
#include "ref_acc_twice.h"

#define LINALG_SOLVE_KERNELS(T)                                                                    \
    int amp_ref_lu_solve_##T(int64_t batch, int64_t m, int64_t k, const AMP_CTYPE_##T *LU,        \
                             const int32_t *pivots, const AMP_CTYPE_##T *b, AMP_CTYPE_##T *y)     \
    {                                                                                             \
        int rc = ref_check_pivots(batch * m, m, pivots);                                         \
        if (rc == AMP_OK)                                                                         \
            REF_BODY_##T(lu_solve)(AMP_DTYPE_##T, batch, m, k, LU, pivots, b, y);                 \
        return rc;                                                                                \
    }

LINALG_SOLVE_KERNELS(f64)
LINALG_SOLVE_KERNELS(f32)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_lstsq REF_OWNED
#define REF_OWNS_matrix_exp REF_OWNED
#define REF_OWNS_householder_product REF_OWNED
#define REF_OWNS_ormqr REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
