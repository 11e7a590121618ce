/*
 * ref_lapack.c - reference linear algebra (f32 and f64): LU, inverse,
 * solves, Cholesky, QR, SVD, eigh, pinverse.  The bodies are in
 * ref_lapack.inc, instantiated once in float and once in double; each
 * amp_ref_<op>_<T> forwards to its instance.  Results on failure (singular,
 * not positive definite, non-finite) are documented in amprt/linalg.h.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "amprt_internal.h"

#define REF_PART "ref_lapack.inc"
#include "ref_acc_twice.h"

#define LAPACK_KERNELS(T, CT, S)                                                                      \
    void amp_ref_inv_ex_##T(int64_t batch, int64_t n, const CT *a, CT *inv, int32_t *info, void *work) \
    {                                                                                                 \
        inv_ex##S(batch, n, a, inv, info, work);                                                      \
    }                                                                                                 \
    void amp_ref_cholesky_ex_##T(int64_t batch, int64_t n, int upper, const CT *a, CT *l, int32_t *info) \
    {                                                                                                 \
        cholesky_ex##S(batch, n, upper, a, l, info);                                                  \
    }                                                                                                 \
    void amp_ref_cholesky_inverse_##T(int64_t batch, int64_t n, int upper, const CT *l, CT *y)        \
    {                                                                                                 \
        cholesky_inverse##S(batch, n, upper, l, y);                                                   \
    }                                                                                                 \
    void amp_ref_cholesky_solve_##T(int64_t batch, int64_t n, int64_t nrhs, int upper, const CT *b,   \
                                    const CT *l, CT *y)                                               \
    {                                                                                                 \
        cholesky_solve##S(batch, n, nrhs, upper, b, l, y);                                            \
    }                                                                                                 \
    void amp_ref_lu_factor_##T(int64_t batch, int64_t m, int64_t n, const CT *a, CT *lu,              \
                               int32_t *pivots, int32_t *info)                                        \
    {                                                                                                 \
        lu_factor##S(batch, m, n, a, lu, pivots, info);                                               \
    }                                                                                                 \
    void amp_ref_solve_##T(int64_t batch, int64_t n, int64_t nrhs, int left, const CT *a, const CT *b, \
                           CT *x, int32_t *info, void *work)                                          \
    {                                                                                                 \
        solve##S(batch, n, nrhs, left, a, b, x, info, work);                                          \
    }                                                                                                 \
    void amp_ref_triangular_solve_##T(int64_t batch, int64_t n, int64_t nrhs, int upper, int transpose, \
                                      int unitriangular, const CT *b, const CT *a, CT *x)             \
    {                                                                                                 \
        triangular_solve##S(batch, n, nrhs, upper, transpose, unitriangular, b, a, x);                \
    }                                                                                                 \
    void amp_ref_qr_##T(int64_t batch, int64_t m, int64_t n, int mode, const CT *a, CT *q, CT *r,     \
                        void *work)                                                                   \
    {                                                                                                 \
        qr##S(batch, m, n, mode, a, q, r, work);                                                      \
    }                                                                                                 \
    void amp_ref_svd_##T(int64_t batch, int64_t m, int64_t n, int full_matrices, int compute_uv,      \
                         const CT *a, CT *u, CT *s, CT *vh, void *work)                               \
    {                                                                                                 \
        svd##S(batch, m, n, full_matrices, compute_uv, a, u, s, vh, work);                            \
    }                                                                                                 \
    void amp_ref_eigh_##T(int64_t batch, int64_t n, int upper, const CT *a, CT *w, CT *v, void *work) \
    {                                                                                                 \
        eigh##S(batch, n, upper, a, w, v, work);                                                      \
    }                                                                                                 \
    void amp_ref_pinverse_##T(int64_t batch, int64_t m, int64_t n, double rcond, const CT *a, CT *y,  \
                              void *work)                                                             \
    {                                                                                                 \
        pinverse##S(batch, m, n, rcond, a, y, work);                                                  \
    }

LAPACK_KERNELS(f64, double, _dacc)
LAPACK_KERNELS(f32, float, _facc)
