/*
 * ref_backward_linalg.c - reference gradient kernels of
 * amprt/backward_linalg.h: triangular_solve's dA, cholesky, eigh and the
 * SVD (values and vectors), pinverse, qr,
 * lu_factor, lu_solve, householder_product and ormqr, f32 and f64.
 *
 * Formulas are PyTorch's autograd ones (its derivatives of the same ops).
 * Bodies are in ref_backward_linalg.inc, instantiated by ref_acc_twice.h;
 * f32 uses the float instantiation and f64 the double one, so every kernel
 * computes in T, as the forward linear algebra does (and LAPACK, which
 * PyTorch's forward and backward call, does).
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_backward_linalg.inc"
#include "ref_acc_twice.h"

#define BACKWARD_LINALG_KERNELS(T)                                                                \
    void amp_ref_triangular_solve_backward_##T(int64_t batch, int64_t n, int64_t nrhs, int upper,  \
                                               int transpose, int unitriangular,                  \
                                               const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *db,   \
                                               AMP_CTYPE_##T *da)                                 \
    {                                                                                             \
        REF_BODY_##T(triangular_solve_backward)(AMP_DTYPE_##T, batch, n, nrhs, upper, transpose,  \
                                                unitriangular, x, db, da);                        \
    }                                                                                             \
    void amp_ref_cholesky_backward_##T(int64_t batch, int64_t n, int upper, const AMP_CTYPE_##T *l, \
                                       const AMP_CTYPE_##T *dl, AMP_CTYPE_##T *da)                \
    {                                                                                             \
        REF_BODY_##T(cholesky_backward)(AMP_DTYPE_##T, batch, n, upper, l, dl, da);               \
    }                                                                                             \
    void amp_ref_eigh_backward_##T(int64_t batch, int64_t n, const AMP_CTYPE_##T *w,              \
                                   const AMP_CTYPE_##T *v, const AMP_CTYPE_##T *dw,               \
                                   const AMP_CTYPE_##T *dv, AMP_CTYPE_##T *da, AMP_CTYPE_##T *work) \
    {                                                                                             \
        REF_BODY_##T(eigh_backward)(AMP_DTYPE_##T, batch, n, w, v, dw, dv, da, work);             \
    }                                                                                             \
    void amp_ref_svdvals_backward_##T(int64_t batch, int64_t m, int64_t n, const AMP_CTYPE_##T *u, \
                                      const AMP_CTYPE_##T *vh, const AMP_CTYPE_##T *ds,           \
                                      AMP_CTYPE_##T *da)                                          \
    {                                                                                             \
        REF_BODY_##T(svdvals_backward)(AMP_DTYPE_##T, batch, m, n, u, vh, ds, da);                \
    }                                                                                             \
    void amp_ref_pinverse_backward_##T(int64_t batch, int64_t m, int64_t n, const AMP_CTYPE_##T *a, \
                                       const AMP_CTYPE_##T *p, const AMP_CTYPE_##T *dp,           \
                                       AMP_CTYPE_##T *da, AMP_CTYPE_##T *work)                    \
    {                                                                                             \
        REF_BODY_##T(pinverse_backward)(AMP_DTYPE_##T, batch, m, n, a, p, dp, da, work);          \
    }                                                                                             \
    void amp_ref_qr_backward_##T(int64_t batch, int64_t m, int64_t n, const AMP_CTYPE_##T *q,     \
                                 const AMP_CTYPE_##T *r, const AMP_CTYPE_##T *dq,                 \
                                 const AMP_CTYPE_##T *dr, AMP_CTYPE_##T *da, AMP_CTYPE_##T *work) \
    {                                                                                             \
        REF_BODY_##T(qr_backward)(AMP_DTYPE_##T, batch, m, n, q, r, dq, dr, da, work);            \
    }                                                                                             \
    void amp_ref_svd_backward_##T(int64_t batch, int64_t m, int64_t n, const AMP_CTYPE_##T *u,    \
                                  const AMP_CTYPE_##T *s, const AMP_CTYPE_##T *vh,                \
                                  const AMP_CTYPE_##T *du, const AMP_CTYPE_##T *ds,               \
                                  const AMP_CTYPE_##T *dvh, AMP_CTYPE_##T *da, AMP_CTYPE_##T *work) \
    {                                                                                             \
        REF_BODY_##T(svd_backward)(AMP_DTYPE_##T, batch, m, n, u, s, vh, du, ds, dvh, da, work);  \
    }                                                                                             \
    void amp_ref_lu_factor_backward_##T(int64_t batch, int64_t n, const AMP_CTYPE_##T *lu,        \
                                        const int32_t *pivots, const AMP_CTYPE_##T *dlu,          \
                                        AMP_CTYPE_##T *da)                                        \
    {                                                                                             \
        REF_BODY_##T(lu_factor_backward)(AMP_DTYPE_##T, batch, n, lu, pivots, dlu, da);           \
    }                                                                                             \
    void amp_ref_lu_solve_backward_##T(int64_t batch, int64_t n, int64_t k, const AMP_CTYPE_##T *lu, \
                                       const int32_t *pivots, const AMP_CTYPE_##T *x,             \
                                       const AMP_CTYPE_##T *dx, AMP_CTYPE_##T *db,                \
                                       AMP_CTYPE_##T *dlu, AMP_CTYPE_##T *work)                   \
    {                                                                                             \
        REF_BODY_##T(lu_solve_backward)(AMP_DTYPE_##T, batch, n, k, lu, pivots, x, dx, db, dlu,   \
                                        work);                                                    \
    }                                                                                             \
    void amp_ref_householder_product_backward_##T(int64_t batch, int64_t m, int64_t n, int64_t k, \
                                                  const AMP_CTYPE_##T *a, const AMP_CTYPE_##T *tau, \
                                                  const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *da,     \
                                                  AMP_CTYPE_##T *dtau, AMP_CTYPE_##T *work)       \
    {                                                                                             \
        REF_BODY_##T(householder_product_backward)(AMP_DTYPE_##T, batch, m, n, k, a, tau, dy, da, \
                                                   dtau, work);                                   \
    }                                                                                             \
    void amp_ref_ormqr_backward_##T(int64_t batch, int64_t mn, int64_t nk, int64_t k, int64_t rows, \
                                    int64_t cols, int left, int transpose, const AMP_CTYPE_##T *a, \
                                    const AMP_CTYPE_##T *tau, const AMP_CTYPE_##T *c,             \
                                    const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *da, AMP_CTYPE_##T *dtau, \
                                    AMP_CTYPE_##T *dc, AMP_CTYPE_##T *work)                       \
    {                                                                                             \
        REF_BODY_##T(ormqr_backward)(AMP_DTYPE_##T, batch, mn, nk, k, rows, cols, left, transpose, a, \
                                     tau, c, dy, da, dtau, dc, work);                             \
    }

BACKWARD_LINALG_KERNELS(f64)
BACKWARD_LINALG_KERNELS(f32)
