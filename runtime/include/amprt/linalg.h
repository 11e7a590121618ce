/*
 * amprt/linalg.h - part of amprt.h (include that, not this): general
 * matrix products, tensor contractions, attention, and linear algebra.
 *
 *  gemm       for b < batch: y[b] = alpha * A_b B_b + beta * C_b, where
 *             A_b[m][k] = a[b*a_stride[0] + m*a_stride[1] + k*a_stride[2]]
 *             (likewise B with b_stride over [k][n], C with c_stride over
 *             [m][n]; a stride 0 broadcasts).  c may be NULL (no beta term;
 *             beta 0 ignores C entirely, NaN included, as PyTorch).  y is
 *             contiguous [batch][M][N]; with sum_batch, y is [M][N] and
 *             holds the sum over b (addbmm).  Covers mm, bmm, mv, dot,
 *             addmm, addmv, addr, baddbmm, addbmm, transposed operands.
 *  gemm_relu_backward   dx = relu_backward of gemm(d, a, b, NULL): each
 *             element of the rounded product, or +0 where y (laid out as
 *             dx: the output of the relu the product is the gradient of)
 *             is <= 0, bit for bit gemm then relu_backward(y, y, ., dx):
 *             a linear's input gradient through the relu before it.
 *  contract   y[o] = sum over the summed indices of the product of the
 *             operands (einsum, tensordot, bilinear).  Indices 0..n_out-1
 *             are y's dims in order (y contiguous), n_out..n_index-1 are
 *             summed; operand k's element is at sum_i stride[k][i] * idx[i]
 *             (0 where the operand lacks index i).
 *  sdpa       scaled dot-product attention per batch b < batch:
 *             softmax(q k^T * scale + mask) v, q [L, E], k [S, E], v [S, Ev],
 *             y [L, Ev]; each operand and the mask advance by their
 *             batch strides (0 shares).  mask is additive (T, [L, S]) or
 *             NULL; bool_mask ([L, S], 1 = attend) or NULL; is_causal masks
 *             j > i.  A row with every position masked gives NaN, as PyTorch.
 *  Linear algebra (f32 and f64 only, as PyTorch's LAPACK calls; computed in
 *  the storage type, as LAPACK does), each on `batch` contiguous row-major
 *  matrices; info is one i32 per matrix with LAPACK's meaning (0 = success).
 *  The kernels never allocate: those needing more room than their outputs
 *  take `work`, at least AMP_<KERNEL>_WORK_BYTES(...) bytes (below) aligned
 *  for CT, reused across the batch.  A non-finite input never hangs a
 *  kernel (the Jacobi iterations are capped at AMP_JACOBI_MAX_SWEEPS).
 *   inv_ex         inverse of [n, n] via lu_factor; info as lu_factor's.
 *                  info k > 0 (U(k,k) exactly zero: singular): inv is all
 *                  NaN (PyTorch leaves getri's inf/NaN there).  A NaN input
 *                  is not singular (info 0) and gives NaN, as PyTorch.
 *   cholesky_ex    A = L L^T (upper: U^T U) from the lower (upper) triangle
 *                  of a; the other triangle of l is 0.  info k > 0: the
 *                  leading minor of order k is not positive definite (its
 *                  pivot is <= 0 or NaN): columns 1..k-1 of L (rows of U) are
 *                  the true factor's, everything from column k on is 0
 *                  (PyTorch leaves LAPACK's partially updated trailing block).
 *   cholesky_inverse   y = A^-1 from A's factor (lower L, or upper U);
 *                  cholesky_solve  y = X for A X = B, B [n, nrhs], from A's
 *                  factor.  Neither checks the factor: a zero on its
 *                  diagonal gives IEEE inf/NaN, as the triangular solves do.
 *   lu_factor      a [m, n] = P L U, partial pivoting (getrf): lu holds U and
 *                  L's strict lower part, pivots[min(m, n)] are 1-based row
 *                  interchanges (row i swapped with pivots[i]); info k > 0:
 *                  U(k,k) is exactly zero, the factorization still completed
 *                  (as getrf).  Ties pick the first row; NaN as idamax.
 *   solve          A X = B (left, B [n, nrhs]) or X A = B (B [nrhs, n]); info
 *                  as lu_factor of A (left) or A^T (right, as PyTorch); X is
 *                  all NaN when info > 0 (PyTorch: getrs's inf/NaN).
 *   triangular_solve  X for op(A) X = B, A [n, n] triangular (only that
 *                  triangle read), op = transpose or not, B [n, nrhs]; no
 *                  check: a zero diagonal gives IEEE inf/NaN, as PyTorch.
 *   qr             Householder; mode 0 reduced (Q [m, k], R [k, n], k =
 *                  min(m, n)), 1 complete (Q [m, m], R [m, n]), 2 r only
 *                  (R [k, n], q unused, may be NULL); R's diagonal as LAPACK
 *                  gives it (not sign-fixed: -sign(alpha) * norm, and a
 *                  column already zero below the diagonal is left as is).
 *   svd            one-sided Jacobi: s [k] descending, u [m, k or m], vh
 *                  [k or n, n] (full_matrices); compute_uv 0 writes s only
 *                  (u, vh may be NULL).  U's columns for zero singular values
 *                  (and the extra ones of full_matrices) complete an
 *                  orthonormal basis.  Non-finite input: every output NaN.
 *   eigh           symmetric eigen (Jacobi), w [n] ascending, eigenvectors
 *                  as columns of v [n, n] (v may be NULL: values only); reads
 *                  the lower (or upper) triangle.  Non-finite input: every
 *                  output NaN (PyTorch returns finite-looking eigenvalues).
 *   pinverse       y [n, m] via the SVD; singular values <= rcond * max are
 *                  dropped (a zero matrix gives 0).  Non-finite input: NaN.
 *  cdist, pdist (every dtype):
 *   cdist          y[b, p, r] = ||x1[b, p] - x2[b, r]||_p, rows of length M;
 *                  p = 0 counts the nonzero differences, p = inf takes the
 *                  largest |difference| (NaN propagates), others
 *                  (sum |d|^p)^(1/p).  Computed directly (never PyTorch's
 *                  matmul shortcut for p = 2, which can lose accuracy).
 *   pdist          the upper triangle (i < j) of cdist(x, x), row-major.
 *
 *  gemm details: y = alpha * (A B) + beta * C with the product accumulated
 *  first (over every b with sum_batch: addbmm rounds once, where PyTorch
 *  rounds after each batch); alpha 0 still forms A B, so inf/NaN in A or B
 *  propagate (PyTorch's f32 BLAS path skips them, its bf16 path does not).
 *  With sum_batch C is [M][N] (c_stride[0] unused) and added once.
 *  sdpa: mask_batch_stride advances bool_mask too; scale is used as given
 *  (PyTorch's default is 1 / sqrt(E)); the causal mask is top-left aligned
 *  (PyTorch's tril(ones(L, S))).
 *
 * Solves and matrix functions, f32 and f64 only as PyTorch's LAPACK calls,
 * computing in T; matrices row-major and contiguous, `batch` of them one
 * after the other:
 *  lu_solve     X for A X = B from linalg_lu_factor's LU [m, m] and its
 *               1-based i32 pivots [m] (row i swapped with pivots[i] - 1, in
 *               order), B and y [m, k].  Returns AMP_ERR_TARGET_OUT_OF_RANGE,
 *               writing nothing, for a pivot outside [1, m].
 *  lstsq        the least-squares solution of A X = B, A [m, n], B [m, k],
 *               y [n, k], by Householder QR: of A when m >= n (A of full
 *               column rank), else the minimum-norm solution through the QR
 *               of A^T (A of full row rank), as LAPACK's gelsy gives for
 *               full-rank A.  work: AMP_LSTSQ_WORK_ELEMS(m, n, k) doubles.
 *  matrix_exp   exp(A), A [n, n]: Taylor series of degree 18 of A / 2^s with
 *               ||A / 2^s||_1 <= 1/2, squared s times.  work:
 *               AMP_MATRIX_EXP_WORK_ELEMS(n) doubles.
 *  householder_product  the first n columns of H_0 H_1 ... H_{k-1}, with
 *               H_i = I - tau[i] v_i v_i^T, v_i = (0, ..., 0, 1, a[i+1.., i])
 *               (a [m, n], k <= n <= m, tau [k]); y [m, n].  orgqr is this.
 *  ormqr        Q = H_0 ... H_{k-1} from a [mn, nk] and tau [k] as above
 *               (mn rows); y [rows, cols] = op(Q) C (left) or C op(Q) (not
 *               left), op the transpose when `transpose`; mn is rows (left)
 *               or cols.
 */

/* Bytes of `work` each linear-algebra kernel needs, for CT of esize bytes. */
#define AMP_LINALG_MIN_(a, b) ((a) < (b) ? (a) : (b))
#define AMP_LINALG_MAX_(a, b) ((a) < (b) ? (b) : (a))
#define AMP_INV_EX_WORK_BYTES(n, esize) ((size_t)(n) * ((size_t)(esize) + 4u))
#define AMP_SOLVE_WORK_BYTES(n, esize) ((size_t)(n) * (size_t)(n) * (size_t)(esize) + (size_t)(n) * 4u)
#define AMP_QR_WORK_BYTES(m, n, esize) \
    (((size_t)(m) * (size_t)(n) + (size_t)AMP_LINALG_MIN_(m, n)) * (size_t)(esize))
#define AMP_SVD_WORK_BYTES(m, n, esize)                                                  \
    (((size_t)AMP_LINALG_MAX_(m, n) + (size_t)AMP_LINALG_MIN_(m, n)) *                    \
     (size_t)AMP_LINALG_MIN_(m, n) * (size_t)(esize))
#define AMP_EIGH_WORK_BYTES(n, esize) ((size_t)(n) * (size_t)(n) * (size_t)(esize))
#define AMP_PINVERSE_WORK_BYTES(m, n, esize) AMP_SVD_WORK_BYTES(m, n, esize)
/* Jacobi sweeps before svd/eigh give up and return what they have; finite
 * inputs converge in far fewer (quadratic convergence). */
#define AMP_JACOBI_MAX_SWEEPS 60
typedef struct amp_gemm_desc {
    int64_t batch, M, N, K;
    int64_t a_stride[3], b_stride[3], c_stride[3];
    double alpha, beta;
    int sum_batch;
} amp_gemm_desc;

#define AMP_CONTRACT_MAX_INDEX 16
#define AMP_CONTRACT_MAX_OPERANDS 4
typedef struct amp_contract_desc {
    int n_index, n_out, n_operands;
    int64_t size[AMP_CONTRACT_MAX_INDEX];
    int64_t stride[AMP_CONTRACT_MAX_OPERANDS][AMP_CONTRACT_MAX_INDEX];
} amp_contract_desc;

typedef struct amp_sdpa_desc {
    int64_t batch, L, S, E, Ev;
    int64_t q_batch_stride, k_batch_stride, v_batch_stride, mask_batch_stride;
    double scale;
    int is_causal;
} amp_sdpa_desc;

#define AMP_MATMUL_OF_CTYPE(X, T, CT)                                                    \
    X(gemm, T, void, (const amp_gemm_desc *d, const CT *a, const CT *b, const CT *c, CT *y),  \
      (d, a, b, c, y))                                                                   \
    X(gemm_relu_backward, T, void,                                                       \
      (const amp_gemm_desc *d, const CT *a, const CT *b, const CT *y, CT *dx),           \
      (d, a, b, y, dx))                                                                  \
    X(contract, T, void, (const amp_contract_desc *d, const CT *const *operands, CT *y),  \
      (d, operands, y))                                                                  \
    X(sdpa, T, void,                                                                     \
      (const amp_sdpa_desc *d, const CT *q, const CT *k, const CT *v, const CT *mask,    \
       const uint8_t *bool_mask, CT *y),                                                 \
      (d, q, k, v, mask, bool_mask, y))                                                  \
    X(cdist, T, void,                                                                    \
      (int64_t batch, int64_t P, int64_t R, int64_t M, double p, const CT *x1,           \
       const CT *x2, CT *y),                                                             \
      (batch, P, R, M, p, x1, x2, y))                                                    \
    X(pdist, T, void, (int64_t N, int64_t M, double p, const CT *x, CT *y), (N, M, p, x, y))

#define AMP_LSTSQ_WORK_ELEMS(m, n, k)                                                    \
    ((size_t)((m) > (n) ? (m) : (n)) * ((size_t)((m) < (n) ? (m) : (n)) + (size_t)(k)) +  \
     (size_t)((m) < (n) ? (m) : (n)))
#define AMP_MATRIX_EXP_WORK_ELEMS(n) ((size_t)4 * (size_t)(n) * (size_t)(n))

#define AMP_LINALG_OF_CTYPE(X, T, CT)                                                    \
    X(inv_ex, T, void,                                                                   \
      (int64_t batch, int64_t n, const CT *a, CT *inv, int32_t *info, void *work),       \
      (batch, n, a, inv, info, work))                                                    \
    X(cholesky_ex, T, void,                                                              \
      (int64_t batch, int64_t n, int upper, const CT *a, CT *l, int32_t *info),          \
      (batch, n, upper, a, l, info))                                                     \
    X(cholesky_inverse, T, void, (int64_t batch, int64_t n, int upper, const CT *l, CT *y),  \
      (batch, n, upper, l, y))                                                           \
    X(cholesky_solve, T, void,                                                           \
      (int64_t batch, int64_t n, int64_t nrhs, int upper, const CT *b, const CT *l, CT *y), \
      (batch, n, nrhs, upper, b, l, y))                                                  \
    X(lu_factor, T, void,                                                                \
      (int64_t batch, int64_t m, int64_t n, const CT *a, CT *lu, int32_t *pivots,        \
       int32_t *info),                                                                   \
      (batch, m, n, a, lu, pivots, info))                                                \
    X(solve, T, void,                                                                    \
      (int64_t batch, int64_t n, int64_t nrhs, int left, const CT *a, const CT *b, CT *x, \
       int32_t *info, void *work),                                                       \
      (batch, n, nrhs, left, a, b, x, info, work))                                       \
    X(triangular_solve, T, void,                                                         \
      (int64_t batch, int64_t n, int64_t nrhs, int upper, int transpose, int unitriangular, \
       const CT *b, const CT *a, CT *x),                                                 \
      (batch, n, nrhs, upper, transpose, unitriangular, b, a, x))                        \
    X(qr, T, void,                                                                       \
      (int64_t batch, int64_t m, int64_t n, int mode, const CT *a, CT *q, CT *r, void *work), \
      (batch, m, n, mode, a, q, r, work))                                                \
    X(svd, T, void,                                                                      \
      (int64_t batch, int64_t m, int64_t n, int full_matrices, int compute_uv, const CT *a, \
       CT *u, CT *s, CT *vh, void *work),                                                \
      (batch, m, n, full_matrices, compute_uv, a, u, s, vh, work))                       \
    X(eigh, T, void,                                                                     \
      (int64_t batch, int64_t n, int upper, const CT *a, CT *w, CT *v, void *work),      \
      (batch, n, upper, a, w, v, work))                                                  \
    X(pinverse, T, void,                                                                 \
      (int64_t batch, int64_t m, int64_t n, double rcond, const CT *a, CT *y, void *work), \
      (batch, m, n, rcond, a, y, work))                                                  \
    X(lu_solve, T, int,                                                                  \
      (int64_t batch, int64_t m, int64_t k, const CT *LU, const int32_t *pivots,         \
       const CT *b, CT *y),                                                              \
      (batch, m, k, LU, pivots, b, y))                                                   \
    X(lstsq, T, void,                                                                    \
      (int64_t batch, int64_t m, int64_t n, int64_t k, const CT *a, const CT *b, CT *y,  \
       double *work),                                                                    \
      (batch, m, n, k, a, b, y, work))                                                   \
    X(matrix_exp, T, void, (int64_t batch, int64_t n, const CT *a, CT *y, double *work),  \
      (batch, n, a, y, work))                                                            \
    X(householder_product, T, void,                                                      \
      (int64_t batch, int64_t m, int64_t n, int64_t k, const CT *a, const CT *tau,       \
       CT *y),                                                                           \
      (batch, m, n, k, a, tau, y))                                                       \
    X(ormqr, T, void,                                                                    \
      (int64_t batch, int64_t mn, int64_t nk, int64_t k, int64_t rows, int64_t cols,     \
       int left, int transpose, const CT *a, const CT *tau, const CT *c, CT *y),         \
      (batch, mn, nk, k, rows, cols, left, transpose, a, tau, c, y))
