/*
 * amprt/backward_linalg.h - part of amprt.h (include that, not this): the
 * gradient kernels of the linear algebra ops whose gradient is not a short
 * composition of forward kernels.  (The code generator writes inverse's,
 * solve's and multi_dot's gradients from gemm, solve and contract, and the
 * right-hand side's gradient of triangular_solve from triangular_solve.)
 *
 * f32 and f64 only, computing in T, as the forward linear algebra kernels
 * (amprt/linalg.h) do; `batch` contiguous row-major matrices one after the
 * other.  The formulas are PyTorch's (its derivatives of the same ops), so
 * a gradient agrees with autograd's, including where the forward reads only
 * one triangle of its input (the gradient is then the symmetric one
 * autograd gives, not one confined to that triangle).  No kernel allocates.
 *
 *  triangular_solve_backward  dA of X = op(A)^-1 B (op the transpose when
 *               `transpose`): -dB X^T (-X dB^T when transposed), where dB =
 *               op(A)^-T dY is the right-hand side's gradient, kept on A's
 *               triangle (upper or lower; without the diagonal when
 *               `unitriangular`, whose diagonal the forward never reads) and
 *               0 elsewhere.  x, db [n, nrhs]; da [n, n].
 *  cholesky_backward  dA of L = cholesky(A) (upper: U = L^T, dl is then dU):
 *               L^-T Phi L^-1 with Phi the symmetric matrix whose lower
 *               triangle is that of L^T dL halved; only dL's lower (upper)
 *               triangle counts, as the factor's other one is constant.
 *               dA is symmetric.  A zero on L's diagonal gives inf/NaN, as
 *               the triangular solves do.
 *  eigh_backward  dA of (w, V) = eigh(A), w [n] ascending, V [n, n] the
 *               eigenvectors as columns: V (diag(dw) + F o skew(V^T dV)) V^T,
 *               skew(M) = (M - M^T) / 2 and F[i][j] = 1 / (w[j] - w[i]) off
 *               the diagonal (0 on it).  dw or dv may be NULL (no gradient
 *               reaches that result).  Equal eigenvalues with dv given give
 *               inf/NaN, as PyTorch's.  work: 2 n n elements of T.
 *  svdvals_backward  dA of the singular values s [k] = svdvals(A), A [m, n],
 *               k = min(m, n): U diag(ds) Vh, from the reduced U [m, k] and
 *               Vh [k, n] of A.
 *  pinverse_backward  dA of P = pinv(A), A [m, n] of full rank, P [n, m],
 *               dP [n, m]: -P^T dP P^T + (I - A P) dP^T P P^T
 *               + P^T P dP^T (I - P A) (the pseudo-inverse's derivative
 *               where its rank does not change).  work:
 *               AMP_PINVERSE_BACKWARD_WORK_ELEMS(m, n) elements of T.
 *  qr_backward  dA of (Q, R) = qr(A), A [m, n] with m >= n, the reduced
 *               Q [m, n] and R [n, n] (R's diagonal nonzero):
 *               (dQ + Q copyltu(M)) R^-T, M = R dR^T - dQ^T Q, copyltu(M)
 *               the symmetric matrix with M's lower triangle.  dq or dr may
 *               be NULL (no gradient reaches that result).  work: n n
 *               elements of T.
 *  svd_backward  dA of (U, S, Vh) = svd(A), A [m, n], k = min(m, n), the
 *               reduced U [m, k], S [k], Vh [k, n]: U X Vh with X = diag(dS)
 *               + (skew(U^T dU) S + S skew(V^T dV)) / E, skew(M) = M - M^T,
 *               E[j][l] = S[l]^2 - S[j]^2 off the diagonal; plus
 *               (I - U U^T) dU S^-1 Vh when m > k, U S^-1 dVh (I - V Vh)
 *               when n > k.  du, ds, dvh may each be NULL (no gradient
 *               reaches that result).  Equal (or, with dU or dVh beyond k,
 *               zero) singular values give inf/NaN, as PyTorch's.  work:
 *               AMP_SVD_BACKWARD_WORK_ELEMS(m, n) elements of T.
 *  lu_factor_backward  dA of LU = lu_factor(A), A [n, n] square (lu_factor's
 *               LU and 1-based pivots): P L^-T (tril(L^T dL, -1) +
 *               triu(dU U^T)) U^-T, L the unit lower and U the upper
 *               triangle of LU, dL = tril(dLU, -1), dU = triu(dLU).  A zero
 *               on U's diagonal gives inf/NaN.  Pivots are trusted
 *               (lu_factor's own).
 *  lu_solve_backward  the gradients of X = lu_solve(B, LU, pivots), A X = B
 *               with A = P L U, B and X [n, k]: dB = A^-T dX (db may be
 *               NULL), and dLU (may be NULL) = triu(R) + tril(L^-T R U^T,
 *               -1) with R = -U^-T dX X^T.  work: 2 n n elements of T.
 *  householder_product_backward  the gradients of Y = householder_product(A,
 *               tau) (orgqr), A [m, n], tau [k], Y [m, n] the first n
 *               columns of H_0 ... H_{k-1}, H_i = I - tau_i v_i v_i^T: by
 *               reverse-mode through the reflections applied to the first n
 *               columns of I.  dA is nonzero only below the diagonal of its
 *               first k columns (the entries v_i is made of); da or dtau may
 *               be NULL.  work: AMP_HOUSEHOLDER_BACKWARD_WORK_ELEMS(m, n, k)
 *               elements of T.
 *  ormqr_backward  the gradients of ormqr (amprt/linalg.h: y [rows, cols] =
 *               op(Q) C or C op(Q), Q = H_0 ... H_{k-1} from a [mn, nk] and
 *               tau [k]), the same reverse mode through the reflections as
 *               the reflections reach C; da, dtau, dc may each be NULL.
 *               work: AMP_ORMQR_BACKWARD_WORK_ELEMS(mn, k, p) elements of T,
 *               p = cols (left) or rows.
 */
#ifndef AMPRT_BACKWARD_LINALG_H
#define AMPRT_BACKWARD_LINALG_H

#define AMP_EIGH_BACKWARD_WORK_ELEMS(n) ((size_t)2 * (size_t)(n) * (size_t)(n))
#define AMP_SVD_BACKWARD_WORK_ELEMS(m, n)                                                \
    ((size_t)AMP_LINALG_MIN_(m, n) *                                                     \
     ((size_t)3 * (size_t)AMP_LINALG_MIN_(m, n) + (size_t)(m) + (size_t)(n)))
#define AMP_HOUSEHOLDER_BACKWARD_WORK_ELEMS(m, n, k) \
    (((size_t)(k) + 1) * (size_t)(m) * (size_t)(n) + (size_t)2 * (size_t)(n))
#define AMP_ORMQR_BACKWARD_WORK_ELEMS(mn, k, p) \
    (((size_t)(k) + 1) * (size_t)(mn) * (size_t)(p) + (size_t)2 * (size_t)(p))
#define AMP_PINVERSE_BACKWARD_WORK_ELEMS(m, n) \
    ((size_t)(n) * (size_t)(n) + (size_t)3 * (size_t)(m) * (size_t)(m) + (size_t)2 * (size_t)(m) * (size_t)(n))

#define AMP_BACKWARD_LINALG_OF_CTYPE(X, T, CT)                                           \
    X(triangular_solve_backward, T, void,                                                \
      (int64_t batch, int64_t n, int64_t nrhs, int upper, int transpose, int unitriangular, \
       const CT *x, const CT *db, CT *da),                                               \
      (batch, n, nrhs, upper, transpose, unitriangular, x, db, da))                      \
    X(cholesky_backward, T, void,                                                        \
      (int64_t batch, int64_t n, int upper, const CT *l, const CT *dl, CT *da),          \
      (batch, n, upper, l, dl, da))                                                      \
    X(eigh_backward, T, void,                                                            \
      (int64_t batch, int64_t n, const CT *w, const CT *v, const CT *dw, const CT *dv,   \
       CT *da, CT *work),                                                                \
      (batch, n, w, v, dw, dv, da, work))                                                \
    X(svdvals_backward, T, void,                                                         \
      (int64_t batch, int64_t m, int64_t n, const CT *u, const CT *vh, const CT *ds,     \
       CT *da),                                                                          \
      (batch, m, n, u, vh, ds, da))                                                      \
    X(pinverse_backward, T, void,                                                        \
      (int64_t batch, int64_t m, int64_t n, const CT *a, const CT *p, const CT *dp, CT *da, \
       CT *work),                                                                        \
      (batch, m, n, a, p, dp, da, work))                                                 \
    X(qr_backward, T, void,                                                              \
      (int64_t batch, int64_t m, int64_t n, const CT *q, const CT *r, const CT *dq,      \
       const CT *dr, CT *da, CT *work),                                                  \
      (batch, m, n, q, r, dq, dr, da, work))                                             \
    X(svd_backward, T, void,                                                             \
      (int64_t batch, int64_t m, int64_t n, const CT *u, const CT *s, const CT *vh,      \
       const CT *du, const CT *ds, const CT *dvh, CT *da, CT *work),                     \
      (batch, m, n, u, s, vh, du, ds, dvh, da, work))                                    \
    X(lu_factor_backward, T, void,                                                       \
      (int64_t batch, int64_t n, const CT *lu, const int32_t *pivots, const CT *dlu, CT *da), \
      (batch, n, lu, pivots, dlu, da))                                                   \
    X(lu_solve_backward, T, void,                                                        \
      (int64_t batch, int64_t n, int64_t k, const CT *lu, const int32_t *pivots,         \
       const CT *x, const CT *dx, CT *db, CT *dlu, CT *work),                            \
      (batch, n, k, lu, pivots, x, dx, db, dlu, work))                                   \
    X(householder_product_backward, T, void,                                             \
      (int64_t batch, int64_t m, int64_t n, int64_t k, const CT *a, const CT *tau,       \
       const CT *dy, CT *da, CT *dtau, CT *work),                                        \
      (batch, m, n, k, a, tau, dy, da, dtau, work))                                      \
    X(ormqr_backward, T, void,                                                           \
      (int64_t batch, int64_t mn, int64_t nk, int64_t k, int64_t rows, int64_t cols,     \
       int left, int transpose, const CT *a, const CT *tau, const CT *c, const CT *dy,   \
       CT *da, CT *dtau, CT *dc, CT *work),                                              \
      (batch, mn, nk, k, rows, cols, left, transpose, a, tau, c, dy, da, dtau, dc, work))

#endif /* AMPRT_BACKWARD_LINALG_H */
