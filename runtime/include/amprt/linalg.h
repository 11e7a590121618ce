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
 *  Linear algebra (f32 and f64 only, as PyTorch's LAPACK calls), each on
 *  `batch` contiguous matrices; info is one i32 per matrix with LAPACK's
 *  meaning, results on failure are documented per kernel:
 *   inv_ex         inverse of [n, n]; info k > 0: U(k,k) is exactly zero
 *                  (singular), inverse left as NaN.
 *   cholesky_ex    lower (or upper) factor; info k > 0: the leading minor
 *                  of order k is not positive definite; the factor's
 *                  remaining entries are 0.
 *   cholesky_inverse   inverse from a factor; cholesky_solve  X for A X = B
 *                  from A's factor, B [n, nrhs].
 *   lu_factor      partial pivoting, pivots 1-based i32 (LAPACK's); info as
 *                  getrf.
 *   solve          A X = B (left) or X A = B; info as getrf, X NaN when singular.
 *   triangular_solve  X for op(A) X = B, A [n, n] triangular, B [n, nrhs].
 *   qr             Householder; mode 0 reduced (Q [m, k], R [k, n], k =
 *                  min(m, n)), 1 complete (Q [m, m], R [m, n]), 2 r only
 *                  (q unused); R's diagonal as LAPACK gives it (not sign-fixed).
 *   svd            one-sided Jacobi: s descending, u [m, k or m], vh [k or n, n]
 *                  (full_matrices); compute_uv 0 writes s only.
 *   eigh           symmetric eigen (Jacobi), eigenvalues ascending, vectors
 *                  as columns of v; reads the lower (or upper) triangle.
 *   pinverse       via the SVD; singular values <= rcond * max are dropped.
 *   cdist          y[b, p, r] = ||x1[b, p] - x2[b, r]||_p, rows of length M.
 *   pdist          the upper triangle of cdist(x, x), row-major.
 */
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
    X(gemm_##T, void, (const amp_gemm_desc *d, const CT *a, const CT *b, const CT *c, CT *y), \
      (d, a, b, c, y))                                                                   \
    X(contract_##T, void, (const amp_contract_desc *d, const CT *const *operands, CT *y), \
      (d, operands, y))                                                                  \
    X(sdpa_##T, void,                                                                    \
      (const amp_sdpa_desc *d, const CT *q, const CT *k, const CT *v, const CT *mask,    \
       const uint8_t *bool_mask, CT *y),                                                 \
      (d, q, k, v, mask, bool_mask, y))                                                  \
    X(cdist_##T, void,                                                                   \
      (int64_t batch, int64_t P, int64_t R, int64_t M, double p, const CT *x1,           \
       const CT *x2, CT *y),                                                             \
      (batch, P, R, M, p, x1, x2, y))                                                    \
    X(pdist_##T, void, (int64_t N, int64_t M, double p, const CT *x, CT *y), (N, M, p, x, y))

#define AMP_LINALG_OF_CTYPE(X, T, CT)                                                    \
    X(inv_ex_##T, void, (int64_t batch, int64_t n, const CT *a, CT *inv, int32_t *info), \
      (batch, n, a, inv, info))                                                          \
    X(cholesky_ex_##T, void,                                                             \
      (int64_t batch, int64_t n, int upper, const CT *a, CT *l, int32_t *info),          \
      (batch, n, upper, a, l, info))                                                     \
    X(cholesky_inverse_##T, void, (int64_t batch, int64_t n, int upper, const CT *l, CT *y), \
      (batch, n, upper, l, y))                                                           \
    X(cholesky_solve_##T, void,                                                          \
      (int64_t batch, int64_t n, int64_t nrhs, int upper, const CT *b, const CT *l, CT *y), \
      (batch, n, nrhs, upper, b, l, y))                                                  \
    X(lu_factor_##T, void,                                                               \
      (int64_t batch, int64_t m, int64_t n, const CT *a, CT *lu, int32_t *pivots,        \
       int32_t *info),                                                                   \
      (batch, m, n, a, lu, pivots, info))                                                \
    X(solve_##T, void,                                                                   \
      (int64_t batch, int64_t n, int64_t nrhs, int left, const CT *a, const CT *b, CT *x, \
       int32_t *info),                                                                   \
      (batch, n, nrhs, left, a, b, x, info))                                             \
    X(triangular_solve_##T, void,                                                        \
      (int64_t batch, int64_t n, int64_t nrhs, int upper, int transpose, int unitriangular, \
       const CT *b, const CT *a, CT *x),                                                 \
      (batch, n, nrhs, upper, transpose, unitriangular, b, a, x))                        \
    X(qr_##T, void, (int64_t batch, int64_t m, int64_t n, int mode, const CT *a, CT *q, CT *r), \
      (batch, m, n, mode, a, q, r))                                                      \
    X(svd_##T, void,                                                                     \
      (int64_t batch, int64_t m, int64_t n, int full_matrices, int compute_uv, const CT *a, \
       CT *u, CT *s, CT *vh),                                                            \
      (batch, m, n, full_matrices, compute_uv, a, u, s, vh))                             \
    X(eigh_##T, void, (int64_t batch, int64_t n, int upper, const CT *a, CT *w, CT *v),  \
      (batch, n, upper, a, w, v))                                                        \
    X(pinverse_##T, void, (int64_t batch, int64_t m, int64_t n, double rcond, const CT *a, CT *y), \
      (batch, m, n, rcond, a, y))
