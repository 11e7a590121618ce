/*
 * test_lapack.c - the linear-algebra kernels (f32 and f64), through the
 * public table and the reference table.
 *
 * The results are checked by what defines them rather than against another
 * implementation: residuals (A inv ~ I, L L^T ~ A, P L U ~ A, Q R ~ A with Q
 * orthonormal, U S Vh ~ A, A V ~ V diag(w), ...), in double from the
 * kernel's exact outputs, within tol = TOL_FACTOR * n * u_T * scale (u_T the
 * dtype's unit roundoff), which a wrong algorithm misses by orders of
 * magnitude.  Failure cases (singular, not positive definite, non-finite)
 * must give exactly the info and outputs amprt/linalg.h documents, which
 * follow torch.linalg's info values (checked against PyTorch 1.13 by hand:
 * the expected values below are what torch.linalg.*_ex printed).
 * Buffers are malloc'ed to their exact size, work included, for ASan.
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_DTYPES AMP_F64, AMP_F32 /* the kernels of amprt/linalg.h */
#include "kernel_test_util.h"

#define TOL_FACTOR 64.0

#define LCALL(k, t, op, ...)                                                                      \
    do {                                                                                          \
        if ((t) == AMP_F64)                                                                       \
            (k)->op##_f64(__VA_ARGS__);                                                           \
        else                                                                                      \
            (k)->op##_f32(__VA_ARGS__);                                                           \
    } while (0)

/* ---- Matrices ----------------------------------------------------------------- */

/* Element (i, j) of matrix b of a batch of [r, c] matrices. */
static double at(const tensor *x, int64_t b, int64_t r, int64_t c, int64_t i, int64_t j)
{
    return get(x, (size_t)((b * r + i) * c + j));
}

static void *work_new(size_t bytes)
{
    void *w = malloc(bytes ? bytes : 1);
    assert_non_null(w);
    return w;
}

static tensor random_matrices(amp_dtype t, int64_t batch, int64_t m, int64_t n)
{
    tensor x = tensor_new(t, (size_t)(batch * m * n));
    for (size_t i = 0; i < x.n; i++)
        set(&x, i, uniform(-1.0, 1.0));
    return x;
}

/* Random, with n added to the diagonal: well conditioned. */
static tensor well_conditioned(amp_dtype t, int64_t batch, int64_t n)
{
    tensor x = random_matrices(t, batch, n, n);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++)
            set(&x, (size_t)((b * n + i) * n + i), get(&x, (size_t)((b * n + i) * n + i)) + (double)n);
    return x;
}

/* B B^T + n I, symmetric positive definite, rounded to t symmetrically. */
static tensor spd(amp_dtype t, int64_t batch, int64_t n)
{
    tensor r = random_matrices(AMP_F64, batch, n, n), x = tensor_new(t, (size_t)(batch * n * n));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = i == j ? (double)n : 0.0;
                for (int64_t k = 0; k < n; k++)
                    s += at(&r, b, n, n, i, k) * at(&r, b, n, n, j, k);
                set(&x, (size_t)((b * n + i) * n + j), s);
            }
    tensor_free(&r);
    return x;
}

static tensor hilbert(amp_dtype t, int64_t n)
{
    tensor x = tensor_new(t, (size_t)(n * n));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            set(&x, (size_t)(i * n + j), 1.0 / (double)(i + j + 1));
    return x;
}

static double tol(amp_dtype t, int64_t n)
{
    return TOL_FACTOR * (double)(n + 1) * unit_roundoff(t);
}

static void expect_near(double got, double want, double bound, const char *what, int64_t b, int64_t i, int64_t j)
{
    if (!(fabs(got - want) <= bound))
        fail_msg("%s: batch %lld (%lld, %lld): got %.17g, want %.17g, bound %.3g", what, (long long)b, (long long)i,
                 (long long)j, got, want, bound);
}

static void expect_all_nan(const tensor *x, const char *what)
{
    for (size_t i = 0; i < x->n; i++)
        if (!isnan(get(x, i)))
            fail_msg("%s: element %zu is %g, not NaN", what, i, get(x, i));
}

static void expect_all_finite(const tensor *x, const char *what)
{
    for (size_t i = 0; i < x->n; i++)
        if (!isfinite(get(x, i)))
            fail_msg("%s: element %zu is %g, not finite", what, i, get(x, i));
}

/* max |A[b]| over the batch member. */
static double max_abs(const tensor *x, int64_t b, int64_t r, int64_t c)
{
    double m = 0.0;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            m = fmax(m, fabs(at(x, b, r, c, i, j)));
    return m;
}

/* Columns of x[b] ([r, c], c <= r) orthonormal: x^T x ~ I. */
static void expect_orthonormal_columns(const tensor *x, int64_t b, int64_t r, int64_t c, const char *what)
{
    for (int64_t i = 0; i < c; i++)
        for (int64_t j = 0; j < c; j++) {
            double s = 0.0;
            for (int64_t k = 0; k < r; k++)
                s += at(x, b, r, c, k, i) * at(x, b, r, c, k, j);
            expect_near(s, i == j ? 1.0 : 0.0, tol(x->t, r), what, b, i, j);
        }
}

/* ---- lu_factor -------------------------------------------------------------------- */

static void check_plu(const tensor *a, const tensor *lu, const int32_t *pivots, int64_t batch, int64_t m, int64_t n)
{
    int64_t k = m < n ? m : n;
    for (int64_t b = 0; b < batch; b++) {
        /* L U, then undo the interchanges from the last: gives A. */
        double *plu = malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof(double));
        assert_non_null(plu);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0.0;
                for (int64_t p = 0; p <= (i < j ? i : j) && p < k; p++)
                    s += (p == i ? 1.0 : at(lu, b, m, n, i, p)) * at(lu, b, m, n, p, j);
                plu[i * n + j] = s;
            }
        for (int64_t p = k - 1; p >= 0; p--) {
            int64_t q = pivots[b * k + p] - 1;
            assert_true(q >= p && q < m);
            for (int64_t j = 0; j < n; j++) {
                double tmp = plu[p * n + j];
                plu[p * n + j] = plu[q * n + j];
                plu[q * n + j] = tmp;
            }
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                expect_near(plu[i * n + j], at(a, b, m, n, i, j), tol(a->t, k) * (1.0 + max_abs(a, b, m, n)), "P L U ~ A",
                            b, i, j);
                if (j < i && j < k) /* partial pivoting: |L| <= 1 */
                    assert_true(fabs(at(lu, b, m, n, i, j)) <= 1.0);
            }
        free(plu);
    }
}

static void test_lu_factor(void **state)
{
    static const int64_t shapes[][3] = { { 3, 4, 4 }, { 2, 5, 3 }, { 2, 3, 5 }, { 1, 1, 1 }, { 2, 0, 0 }, { 1, 7, 7 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            amp_dtype t = dtypes[d];
            int64_t batch = shapes[s][0], m = shapes[s][1], n = shapes[s][2], k = m < n ? m : n;
            tensor a = random_matrices(t, batch, m, n), lu[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                int32_t *pivots = malloc((size_t)(batch * k > 0 ? batch * k : 1) * sizeof(int32_t));
                int32_t *info = malloc((size_t)batch * sizeof(int32_t));
                assert_non_null(pivots);
                assert_non_null(info);
                lu[e] = tensor_new(t, a.n);
                LCALL(tables[e], t, lu_factor, batch, m, n, a.data, lu[e].data, pivots, info);
                for (int64_t b = 0; b < batch; b++)
                    assert_int_equal(info[b], 0);
                check_plu(&a, &lu[e], pivots, batch, m, n);
                free(pivots);
                free(info);
            }
            expect_public_equals_ref(&lu[0], &lu[1]);
            tensor_free(&a);
            tensor_free(&lu[0]);
            tensor_free(&lu[1]);
        }
}

/* torch.linalg.lu_factor_ex on singular inputs: LU, pivots and info. */
static void test_lu_factor_singular_matches_torch(void **state)
{
    static const double a1[] = { 0, 0, 1, 0, 0, 2, 1, 1, 1 };
    static const double lu1[] = { 1, 1, 1, 0, 0, 2, 0, 0, 1 };
    static const int32_t piv1[] = { 3, 2, 3 };
    static const double a2[] = { 0, 0, 0, 0, 0, 0 };
    static const int32_t piv2[] = { 1, 2 };
    static const double a3[] = { 1, 2, 3, 4, 5, 6 };
    static const double lu3[] = { 4, 5, 6, 0.25, 0.75, 1.5 };
    static const int32_t piv3[] = { 2, 2 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            int32_t pivots[3], info[1];
            tensor a = tensor_of(t, 9, a1), lu = tensor_new(t, 9);
            LCALL(tables[e], t, lu_factor, 1, 3, 3, a.data, lu.data, pivots, info);
            assert_int_equal(info[0], 2);
            assert_memory_equal(pivots, piv1, sizeof piv1);
            for (size_t i = 0; i < 9; i++)
                assert_true(get(&lu, i) == lu1[i]);
            tensor_free(&a);
            tensor_free(&lu);
            a = tensor_of(t, 6, a2);
            lu = tensor_new(t, 6);
            LCALL(tables[e], t, lu_factor, 1, 2, 3, a.data, lu.data, pivots, info);
            assert_int_equal(info[0], 1);
            assert_memory_equal(pivots, piv2, sizeof piv2);
            tensor_free(&a);
            tensor_free(&lu);
            a = tensor_of(t, 6, a3);
            lu = tensor_new(t, 6);
            LCALL(tables[e], t, lu_factor, 1, 2, 3, a.data, lu.data, pivots, info);
            assert_int_equal(info[0], 0);
            assert_memory_equal(pivots, piv3, sizeof piv3);
            for (size_t i = 0; i < 6; i++)
                assert_true(get(&lu, i) == lu3[i]);
            tensor_free(&a);
            tensor_free(&lu);
        }
}

/* ---- inv_ex -------------------------------------------------------------------- */

static void expect_inverse(const tensor *a, const tensor *inv, int64_t b, int64_t n, double bound, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t k = 0; k < n; k++)
                s += at(a, b, n, n, i, k) * at(inv, b, n, n, k, j);
            expect_near(s, i == j ? 1.0 : 0.0, bound, what, b, i, j);
        }
}

static void run_inv_ex(const amp_kernel_table *k, const tensor *a, int64_t batch, int64_t n, tensor *inv, int32_t *info)
{
    void *work = work_new(AMP_INV_EX_WORK_BYTES(n, amp_dtype_size(a->t)));
    *inv = tensor_new(a->t, (size_t)(batch * n * n));
    LCALL(k, a->t, inv_ex, batch, n, a->data, inv->data, info, work);
    free(work);
}

static void test_inv_ex(void **state)
{
    static const int64_t shapes[][2] = { { 3, 4 }, { 2, 1 }, { 2, 0 }, { 1, 9 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            amp_dtype t = dtypes[d];
            int64_t batch = shapes[s][0], n = shapes[s][1];
            tensor a = well_conditioned(t, batch, n), inv[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                int32_t info[3] = { -7, -7, -7 };
                run_inv_ex(tables[e], &a, batch, n, &inv[e], info);
                for (int64_t b = 0; b < batch; b++) {
                    assert_int_equal(info[b], 0);
                    expect_inverse(&a, &inv[e], b, n, tol(t, n) * 4.0, "A inv ~ I");
                }
            }
            expect_public_equals_ref(&inv[0], &inv[1]);
            tensor_free(&a);
            tensor_free(&inv[0]);
            tensor_free(&inv[1]);
        }
}

/* Singular: info as getrf (torch.linalg.inv_ex gives 2 and 1 here), the
 * inverse all NaN; the regular matrix next to it in the batch is fine. */
static void test_inv_ex_singular(void **state)
{
    static const double values[] = { 1, 2, 2, 4, /* */ 0, 0, 0, 0, /* */ 2, 1, 1, 1 };
    static const double nan_values[] = { NAN, 1, 1, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor a = tensor_of(t, 12, values), inv;
            int32_t info[3];
            run_inv_ex(tables[e], &a, 3, 2, &inv, info);
            assert_int_equal(info[0], 2);
            assert_int_equal(info[1], 1);
            assert_int_equal(info[2], 0);
            for (size_t i = 0; i < 8; i++)
                assert_true(isnan(get(&inv, i)));
            expect_inverse(&a, &inv, 2, 2, tol(t, 2), "regular next to singular");
            tensor_free(&a);
            tensor_free(&inv);
            /* NaN is not a zero pivot: info 0 and NaN out, as PyTorch. */
            a = tensor_of(t, 4, nan_values);
            run_inv_ex(tables[e], &a, 1, 2, &inv, info);
            assert_int_equal(info[0], 0);
            expect_all_nan(&inv, "inv of NaN");
            tensor_free(&a);
            tensor_free(&inv);
        }
}

/* Hilbert matrices: condition ~ 1e10 (n 7) for f64 and ~ 5e5 (n 5) for
 * f32 still invert to a small residual relative to the condition; past
 * 1/u (n 12 in f64, n 9 in f32) the result is meaningless but finite. */
static void test_inv_ex_hilbert(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            int64_t n = t == AMP_F64 ? 7 : 5, huge = t == AMP_F64 ? 12 : 9;
            double cond = t == AMP_F64 ? 1e9 : 1e6;
            tensor a = hilbert(t, n), inv;
            int32_t info[1];
            run_inv_ex(tables[e], &a, 1, n, &inv, info);
            assert_int_equal(info[0], 0);
            expect_inverse(&a, &inv, 0, n, tol(t, n) * cond, "Hilbert A inv ~ I");
            tensor_free(&a);
            tensor_free(&inv);
            a = hilbert(t, huge);
            run_inv_ex(tables[e], &a, 1, huge, &inv, info);
            assert_int_equal(info[0], 0);
            expect_all_finite(&inv, "inverse of an ill-conditioned Hilbert matrix");
            tensor_free(&a);
            tensor_free(&inv);
        }
}

/* ---- solve ------------------------------------------------------------------------- */

static void test_solve(void **state)
{
    static const int64_t shapes[][3] = { { 2, 4, 3 }, { 1, 1, 1 }, { 2, 5, 1 }, { 1, 0, 2 }, { 1, 3, 0 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int left = 0; left < 2; left++) {
                amp_dtype t = dtypes[d];
                int64_t batch = shapes[s][0], n = shapes[s][1], nrhs = shapes[s][2];
                tensor a = well_conditioned(t, batch, n), bm = random_matrices(t, batch, n, nrhs), x[NTABLES];
                for (int e = 0; e < NTABLES; e++) {
                    int32_t info[2] = { -1, -1 };
                    void *work = work_new(AMP_SOLVE_WORK_BYTES(n, amp_dtype_size(t)));
                    x[e] = tensor_new(t, bm.n);
                    LCALL(tables[e], t, solve, batch, n, nrhs, left, a.data, bm.data, x[e].data, info, work);
                    free(work);
                    for (int64_t b = 0; b < batch; b++) {
                        assert_int_equal(info[b], 0);
                        /* left: A X = B with X, B [n, nrhs]; right: X A = B
                         * with X, B [nrhs, n] (the same buffer sizes). */
                        for (int64_t i = 0; i < (left ? n : nrhs); i++)
                            for (int64_t j = 0; j < (left ? nrhs : n); j++) {
                                double sum = 0.0;
                                for (int64_t k = 0; k < n; k++)
                                    sum += left ? at(&a, b, n, n, i, k) * at(&x[e], b, n, nrhs, k, j)
                                                : at(&x[e], b, nrhs, n, i, k) * at(&a, b, n, n, k, j);
                                double want = left ? at(&bm, b, n, nrhs, i, j) : at(&bm, b, nrhs, n, i, j);
                                expect_near(sum, want, tol(t, n) * 4.0, left ? "A X ~ B" : "X A ~ B", b, i, j);
                            }
                    }
                }
                expect_public_equals_ref(&x[0], &x[1]);
                tensor_free(&a);
                tensor_free(&bm);
                tensor_free(&x[0]);
                tensor_free(&x[1]);
            }
}

static void test_solve_singular(void **state)
{
    /* torch.linalg.solve_ex([[1, 2], [2, 4]], ones(2, 1)): info 2. */
    static const double values[] = { 1, 2, 2, 4 };
    /* Singular only by rows: getrf(A) meets a zero pivot, getrf(A^T) too. */
    static const double rhs[] = { 1, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++)
            for (int left = 0; left < 2; left++) {
                amp_dtype t = dtypes[d];
                tensor a = tensor_of(t, 4, values), bm = tensor_of(t, 2, rhs), x = tensor_new(t, 2);
                int32_t info[1];
                void *work = work_new(AMP_SOLVE_WORK_BYTES(2, amp_dtype_size(t)));
                LCALL(tables[e], t, solve, 1, 2, 1, left, a.data, bm.data, x.data, info, work);
                assert_int_equal(info[0], 2);
                expect_all_nan(&x, "solve with a singular A");
                free(work);
                tensor_free(&a);
                tensor_free(&bm);
                tensor_free(&x);
            }
}

/* ---- Cholesky --------------------------------------------------------------------- */

static double factor_lower(const tensor *f, int64_t b, int64_t n, int upper, int64_t i, int64_t j)
{
    return upper ? at(f, b, n, n, j, i) : at(f, b, n, n, i, j);
}

static void test_cholesky(void **state)
{
    static const int64_t shapes[][2] = { { 3, 4 }, { 1, 1 }, { 2, 0 }, { 1, 8 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int upper = 0; upper < 2; upper++) {
                amp_dtype t = dtypes[d];
                int64_t batch = shapes[s][0], n = shapes[s][1], nrhs = 3;
                tensor a = spd(t, batch, n), l[NTABLES];
                /* Garbage in the triangle not read must not matter. */
                tensor a_dirty = tensor_new(t, a.n);
                for (int64_t b = 0; b < batch; b++)
                    for (int64_t i = 0; i < n; i++)
                        for (int64_t j = 0; j < n; j++)
                            set(&a_dirty, (size_t)((b * n + i) * n + j),
                                (upper ? j >= i : j <= i) ? at(&a, b, n, n, i, j) : NAN);
                for (int e = 0; e < NTABLES; e++) {
                    int32_t info[3] = { -1, -1, -1 };
                    l[e] = tensor_new(t, a.n);
                    LCALL(tables[e], t, cholesky_ex, batch, n, upper, a_dirty.data, l[e].data, info);
                    for (int64_t b = 0; b < batch; b++) {
                        assert_int_equal(info[b], 0);
                        double scale = max_abs(&a, b, n, n);
                        for (int64_t i = 0; i < n; i++)
                            for (int64_t j = 0; j < n; j++) {
                                double sum = 0.0;
                                for (int64_t k = 0; k < n; k++)
                                    sum += factor_lower(&l[e], b, n, upper, i, k) * factor_lower(&l[e], b, n, upper, j, k) *
                                           (k <= i && k <= j);
                                expect_near(sum, at(&a, b, n, n, i, j), tol(t, n) * scale, "L L^T ~ A", b, i, j);
                                if (upper ? j < i : j > i) /* the other triangle is zero */
                                    assert_true(at(&l[e], b, n, n, i, j) == 0.0);
                            }
                    }
                    /* cholesky_inverse: A Y ~ I; cholesky_solve: A X ~ B. */
                    tensor y = tensor_new(t, a.n), bm = random_matrices(t, batch, n, nrhs), x = tensor_new(t, bm.n);
                    LCALL(tables[e], t, cholesky_inverse, batch, n, upper, l[e].data, y.data);
                    LCALL(tables[e], t, cholesky_solve, batch, n, nrhs, upper, bm.data, l[e].data, x.data);
                    for (int64_t b = 0; b < batch; b++) {
                        expect_inverse(&a, &y, b, n, tol(t, n) * 4.0, "cholesky_inverse: A Y ~ I");
                        for (int64_t i = 0; i < n; i++)
                            for (int64_t j = 0; j < n; j++)
                                expect_near(at(&y, b, n, n, i, j), at(&y, b, n, n, j, i), tol(t, n), "symmetric", b, i, j);
                        for (int64_t i = 0; i < n; i++)
                            for (int64_t j = 0; j < nrhs; j++) {
                                double sum = 0.0;
                                for (int64_t k = 0; k < n; k++)
                                    sum += at(&a, b, n, n, i, k) * at(&x, b, n, nrhs, k, j);
                                expect_near(sum, at(&bm, b, n, nrhs, i, j), tol(t, n) * 4.0, "cholesky_solve", b, i, j);
                            }
                    }
                    tensor_free(&y);
                    tensor_free(&bm);
                    tensor_free(&x);
                }
                expect_public_equals_ref(&l[0], &l[1]);
                tensor_free(&a);
                tensor_free(&a_dirty);
                tensor_free(&l[0]);
                tensor_free(&l[1]);
            }
}

/* torch.linalg.cholesky_ex gives info 2 for the first, 1 for the others;
 * L's first k-1 columns are the true factor, the rest 0 (documented). */
static void test_cholesky_not_positive_definite(void **state)
{
    static const double values[] = { 4, 2, 1, 2, -1, 0, 1, 0, 3, /* */ -1, 0, 0, 0, 1, 0, 0, 0, 1,
                                     /* */ NAN, 0, 0, 0, 1, 0, 0, 0, 1 };
    static const double l0[] = { 2, 0, 0, 1, 0, 0, 0.5, 0, 0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++)
            for (int upper = 0; upper < 2; upper++) {
                amp_dtype t = dtypes[d];
                tensor a = tensor_of(t, 27, values), l = tensor_new(t, 27);
                int32_t info[3];
                LCALL(tables[e], t, cholesky_ex, 3, 3, upper, a.data, l.data, info);
                assert_int_equal(info[0], 2);
                assert_int_equal(info[1], 1);
                assert_int_equal(info[2], 1);
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t j = 0; j < 3; j++) {
                        assert_true(factor_lower(&l, 0, 3, upper, i, j) == l0[i * 3 + j]);
                        assert_true(at(&l, 1, 3, 3, i, j) == 0.0);
                        assert_true(at(&l, 2, 3, 3, i, j) == 0.0);
                    }
                tensor_free(&a);
                tensor_free(&l);
            }
}

static void test_cholesky_hilbert(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            int64_t n = 12;
            tensor a = hilbert(t, n), l = tensor_new(t, (size_t)(n * n));
            int32_t info[1];
            LCALL(tables[e], t, cholesky_ex, 1, n, 0, a.data, l.data, info);
            expect_all_finite(&l, "Cholesky of Hilbert");
            /* Positive definite in exact arithmetic, but not in f32 at n 12:
             * then info > 0 and everything from column info on is 0. */
            assert_true(info[0] >= 0);
            if (t == AMP_F64)
                assert_int_equal(info[0], 0);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    if (info[0] > 0 && j >= info[0] - 1)
                        assert_true(at(&l, 0, n, n, i, j) == 0.0);
            tensor_free(&a);
            tensor_free(&l);
        }
}

/* ---- triangular_solve ----------------------------------------------------------- */

static void test_triangular_solve(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int flags = 0; flags < 8; flags++) {
            amp_dtype t = dtypes[d];
            int upper = flags & 1, transpose = (flags >> 1) & 1, unit = (flags >> 2) & 1;
            int64_t batch = 2, n = 5, nrhs = 3;
            tensor a = well_conditioned(t, batch, n), bm = random_matrices(t, batch, n, nrhs), x[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                x[e] = tensor_new(t, bm.n);
                LCALL(tables[e], t, triangular_solve, batch, n, nrhs, upper, transpose, unit, bm.data, a.data, x[e].data);
                for (int64_t b = 0; b < batch; b++)
                    for (int64_t i = 0; i < n; i++)
                        for (int64_t j = 0; j < nrhs; j++) {
                            double sum = 0.0;
                            for (int64_t k = 0; k < n; k++) {
                                int64_t r = transpose ? k : i, c = transpose ? i : k; /* op(A)(i, k) = A(r, c) */
                                double v = at(&a, b, n, n, r, c);
                                if (r == c && unit)
                                    v = 1.0;
                                else if (upper ? c < r : c > r)
                                    v = 0.0;
                                sum += v * at(&x[e], b, n, nrhs, k, j);
                            }
                            expect_near(sum, at(&bm, b, n, nrhs, i, j), tol(t, n) * 4.0, "op(A) X ~ B", b, i, j);
                        }
            }
            expect_public_equals_ref(&x[0], &x[1]);
            tensor_free(&a);
            tensor_free(&bm);
            tensor_free(&x[0]);
            tensor_free(&x[1]);
        }
}

/* A zero on the diagonal: IEEE, as torch ([[0, 0], [1, 1]] \ 1 = [inf, -inf]). */
static void test_triangular_solve_zero_diagonal(void **state)
{
    static const double values[] = { 0, 0, 1, 1 }, ones[] = { 1, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_of(t, 4, values), bm = tensor_of(t, 2, ones), x = tensor_new(t, 2);
        LCALL(&amp_ref_kernel_table, t, triangular_solve, 1, 2, 1, 0, 0, 0, bm.data, a.data, x.data);
        assert_true(isinf(get(&x, 0)) && get(&x, 0) > 0);
        assert_true(isinf(get(&x, 1)) && get(&x, 1) < 0);
        tensor_free(&a);
        tensor_free(&bm);
        tensor_free(&x);
    }
}

/* ---- QR ------------------------------------------------------------------------ */

static void run_qr(const amp_kernel_table *k, const tensor *a, int64_t batch, int64_t m, int64_t n, int mode, tensor *q,
                   tensor *r)
{
    int64_t kk = m < n ? m : n;
    void *work = work_new(AMP_QR_WORK_BYTES(m, n, amp_dtype_size(a->t)));
    *q = tensor_new(a->t, mode == 2 ? 0 : (size_t)(batch * m * (mode == 1 ? m : kk)));
    *r = tensor_new(a->t, (size_t)(batch * (mode == 1 ? m : kk) * n));
    LCALL(k, a->t, qr, batch, m, n, mode, a->data, mode == 2 ? NULL : q->data, r->data, work);
    free(work);
}

static void test_qr(void **state)
{
    static const int64_t shapes[][3] = { { 2, 5, 3 }, { 2, 3, 5 }, { 1, 4, 4 }, { 1, 1, 1 }, { 1, 0, 0 }, { 1, 3, 0 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int mode = 0; mode < 3; mode++)
                for (int e = 0; e < NTABLES; e++) {
                    amp_dtype t = dtypes[d];
                    int64_t batch = shapes[s][0], m = shapes[s][1], n = shapes[s][2], k = m < n ? m : n;
                    int64_t qc = mode == 1 ? m : k, rr = mode == 1 ? m : k;
                    tensor a = random_matrices(t, batch, m, n), q, r, q0, r0;
                    run_qr(tables[e], &a, batch, m, n, mode, &q, &r);
                    run_qr(tables[e], &a, batch, m, n, 0, &q0, &r0);
                    for (int64_t b = 0; b < batch; b++) {
                        for (int64_t i = 0; i < rr; i++)
                            for (int64_t j = 0; j < n; j++) {
                                if (j < i)
                                    assert_true(at(&r, b, rr, n, i, j) == 0.0);
                                /* mode r's R is the reduced one, bit for bit */
                                if (mode == 2)
                                    assert_true(at(&r, b, rr, n, i, j) == at(&r0, b, k, n, i, j));
                            }
                        if (mode == 2)
                            continue;
                        expect_orthonormal_columns(&q, b, m, qc, "Q^T Q ~ I");
                        for (int64_t i = 0; i < m; i++)
                            for (int64_t j = 0; j < n; j++) {
                                double sum = 0.0;
                                for (int64_t p = 0; p < qc; p++)
                                    sum += at(&q, b, m, qc, i, p) * at(&r, b, rr, n, p, j);
                                expect_near(sum, at(&a, b, m, n, i, j), tol(t, m), "Q R ~ A", b, i, j);
                            }
                    }
                    tensor_free(&a);
                    tensor_free(&q);
                    tensor_free(&r);
                    tensor_free(&q0);
                    tensor_free(&r0);
                }
}

/* LAPACK's signs, as torch.linalg.qr printed them. */
static void test_qr_signs_match_torch(void **state)
{
    /* torch: R = [[-5.9161, -7.4374], [0, 0.8281]], exactly these: */
    const double r1[] = { -sqrt(35.0), -44.0 / sqrt(35.0), 0, sqrt(24.0 / 35.0) };
    static const double a1[] = { 1, 2, 3, 4, 5, 6 };
    static const double a2[] = { -1, 2, 0, -4 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_of(t, 6, a1), q, r;
        run_qr(&amp_ref_kernel_table, &a, 1, 3, 2, 0, &q, &r);
        for (size_t i = 0; i < 4; i++)
            expect_near(get(&r, i), r1[i], tol(t, 3) * 8.0, "R as torch", 0, (int64_t)i / 2, (int64_t)i % 2);
        assert_true(get(&q, 0) < 0);
        tensor_free(&a);
        tensor_free(&q);
        tensor_free(&r);
        /* Already triangular: H = I for every column, R = A (negative
         * diagonal kept), Q = I. */
        a = tensor_of(t, 4, a2);
        run_qr(&amp_ref_kernel_table, &a, 1, 2, 2, 0, &q, &r);
        for (size_t i = 0; i < 4; i++) {
            assert_true(get(&r, i) == a2[i]);
            assert_true(get(&q, i) == (i == 0 || i == 3 ? 1.0 : 0.0));
        }
        tensor_free(&a);
        tensor_free(&q);
        tensor_free(&r);
    }
}

/* ---- SVD and pinverse -------------------------------------------------------------- */

typedef struct {
    const char *what;
    int64_t batch, m, n;
    int kind; /* 0 random, 1 rank one, 2 zero, 3 Hilbert */
} svd_case;

static const svd_case svd_cases[] = {
    { "tall", 2, 5, 3, 0 },     { "wide", 2, 3, 5, 0 },   { "square", 1, 4, 4, 0 }, { "1x1", 1, 1, 1, 0 },
    { "0x0", 1, 0, 0, 0 },      { "3x0", 1, 3, 0, 0 },    { "rank one", 1, 4, 3, 1 }, { "rank one, wide", 1, 3, 4, 1 },
    { "zero", 1, 3, 2, 2 },     { "Hilbert", 1, 8, 8, 3 },
};

static tensor svd_input(amp_dtype t, const svd_case *c)
{
    tensor a = random_matrices(t, c->batch, c->m, c->n);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++) {
                size_t at_ij = (size_t)((b * c->m + i) * c->n + j);
                if (c->kind == 1)
                    set(&a, at_ij, (double)(i + 1) * (double)(j % 2 ? -1 : 2) * 0.25);
                else if (c->kind == 2)
                    set(&a, at_ij, 0.0);
                else if (c->kind == 3)
                    set(&a, at_ij, 1.0 / (double)(i + j + 1));
            }
    return a;
}

static void test_svd(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof svd_cases / sizeof svd_cases[0]; ci++)
            for (int full = 0; full < 2; full++)
                for (int e = 0; e < NTABLES; e++) {
                    const svd_case *c = &svd_cases[ci];
                    amp_dtype t = dtypes[d];
                    int64_t batch = c->batch, m = c->m, n = c->n, k = m < n ? m : n;
                    int64_t uc = full ? m : k, vr = full ? n : k;
                    tensor a = svd_input(t, c);
                    tensor u = tensor_new(t, (size_t)(batch * m * uc)), s = tensor_new(t, (size_t)(batch * k));
                    tensor vh = tensor_new(t, (size_t)(batch * vr * n)), s_only = tensor_new(t, s.n);
                    void *work = work_new(AMP_SVD_WORK_BYTES(m, n, amp_dtype_size(t)));
                    LCALL(tables[e], t, svd, batch, m, n, full, 1, a.data, u.data, s.data, vh.data, work);
                    LCALL(tables[e], t, svd, batch, m, n, full, 0, a.data, NULL, s_only.data, NULL, work);
                    free(work);
                    assert_memory_equal(s.data, s_only.data, s.n * amp_dtype_size(t));
                    for (int64_t b = 0; b < batch; b++) {
                        double scale = max_abs(&a, b, m, n) * (double)(k + 1);
                        for (int64_t j = 0; j < k; j++) {
                            assert_true(at(&s, b, 1, k, 0, j) >= 0.0);
                            if (j > 0)
                                assert_true(at(&s, b, 1, k, 0, j) <= at(&s, b, 1, k, 0, j - 1));
                        }
                        expect_orthonormal_columns(&u, b, m, uc, "U^T U ~ I");
                        for (int64_t i = 0; i < vr; i++) /* Vh Vh^T ~ I */
                            for (int64_t j = 0; j < vr; j++) {
                                double sum = 0.0;
                                for (int64_t p = 0; p < n; p++)
                                    sum += at(&vh, b, vr, n, i, p) * at(&vh, b, vr, n, j, p);
                                expect_near(sum, i == j ? 1.0 : 0.0, tol(t, n), "Vh Vh^T ~ I", b, i, j);
                            }
                        for (int64_t i = 0; i < m; i++)
                            for (int64_t j = 0; j < n; j++) {
                                double sum = 0.0;
                                for (int64_t p = 0; p < k; p++)
                                    sum += at(&u, b, m, uc, i, p) * at(&s, b, 1, k, 0, p) * at(&vh, b, vr, n, p, j);
                                expect_near(sum, at(&a, b, m, n, i, j), tol(t, m + n) * (1.0 + scale), "U S Vh ~ A",
                                            b, i, j);
                            }
                        if (c->kind == 1) /* rank one: one nonzero singular value */
                            for (int64_t j = 1; j < k; j++)
                                assert_true(at(&s, b, 1, k, 0, j) <= tol(t, m + n) * scale);
                    }
                    tensor_free(&a);
                    tensor_free(&u);
                    tensor_free(&s);
                    tensor_free(&vh);
                    tensor_free(&s_only);
                }
}

static void test_svd_nonfinite(void **state)
{
    static const double values[] = { 1, NAN, 2, 3, 4, 5 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_of(t, 6, values), u = tensor_new(t, 9), s = tensor_new(t, 2), vh = tensor_new(t, 4), y = tensor_new(t, 6);
        void *work = work_new(AMP_SVD_WORK_BYTES(3, 2, amp_dtype_size(t)));
        LCALL(&amp_ref_kernel_table, t, svd, 1, 3, 2, 1, 1, a.data, u.data, s.data, vh.data, work);
        expect_all_nan(&u, "svd u");
        expect_all_nan(&s, "svd s");
        expect_all_nan(&vh, "svd vh");
        LCALL(&amp_ref_kernel_table, t, pinverse, 1, 3, 2, 1e-15, a.data, y.data, work);
        expect_all_nan(&y, "pinverse");
        free(work);
        tensor_free(&a);
        tensor_free(&u);
        tensor_free(&s);
        tensor_free(&vh);
        tensor_free(&y);
    }
}

/* pinv: A pinv(A) A ~ A and pinv(A) A pinv(A) ~ pinv(A) (Moore-Penrose),
 * full rank or not; a zero matrix gives zeros; rcond drops small values. */
static void test_pinverse(void **state)
{
    static const double diag_values[] = { 1, 0, 0, 1e-4 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof svd_cases / sizeof svd_cases[0]; ci++)
            for (int e = 0; e < NTABLES; e++) {
                const svd_case *c = &svd_cases[ci];
                amp_dtype t = dtypes[d];
                if (c->kind == 3)
                    continue; /* Penrose's identities lose cond(A) digits */
                int64_t batch = c->batch, m = c->m, n = c->n;
                tensor a = svd_input(t, c), y = tensor_new(t, (size_t)(batch * n * m));
                void *work = work_new(AMP_PINVERSE_WORK_BYTES(m, n, amp_dtype_size(t)));
                LCALL(tables[e], t, pinverse, batch, m, n, 1e-5, a.data, y.data, work);
                free(work);
                for (int64_t b = 0; b < batch; b++) {
                    double scale = max_abs(&a, b, m, n) + 1.0;
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < n; j++) {
                            double sum = 0.0;
                            for (int64_t p = 0; p < n; p++)
                                for (int64_t q = 0; q < m; q++)
                                    sum += at(&a, b, m, n, i, p) * at(&y, b, n, m, p, q) * at(&a, b, m, n, q, j);
                            expect_near(sum, at(&a, b, m, n, i, j), tol(t, m + n) * scale * 8.0, "A pinv A ~ A", b, i, j);
                        }
                    if (c->kind == 2)
                        for (size_t i = 0; i < y.n; i++)
                            assert_true(get(&y, i) == 0.0);
                }
                tensor_free(&a);
                tensor_free(&y);
            }
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_of(t, 4, diag_values), y = tensor_new(t, 4);
        void *work = work_new(AMP_PINVERSE_WORK_BYTES(2, 2, amp_dtype_size(t)));
        LCALL(&amp_ref_kernel_table, t, pinverse, 1, 2, 2, 1e-3, a.data, y.data, work);
        expect_near(get(&y, 0), 1.0, tol(t, 2), "kept", 0, 0, 0);
        assert_true(get(&y, 3) == 0.0); /* 1e-4 <= 1e-3 * 1: dropped */
        LCALL(&amp_ref_kernel_table, t, pinverse, 1, 2, 2, 1e-5, a.data, y.data, work);
        expect_near(get(&y, 3), 1e4, tol(t, 2) * 1e4, "kept", 0, 1, 1);
        /* Exactly at the cutoff is dropped, as torch.pinverse(diag(1, 0.5),
         * rcond=0.5) gives diag(1, 0); just above it is kept. */
        set(&a, 3, 0.5);
        LCALL(&amp_ref_kernel_table, t, pinverse, 1, 2, 2, 0.5, a.data, y.data, work);
        assert_true(get(&y, 3) == 0.0);
        LCALL(&amp_ref_kernel_table, t, pinverse, 1, 2, 2, 0.4999, a.data, y.data, work);
        expect_near(get(&y, 3), 2.0, tol(t, 2) * 2.0, "kept", 0, 1, 1);
        free(work);
        tensor_free(&a);
        tensor_free(&y);
    }
}

/* ---- eigh ---------------------------------------------------------------------------- */

static void test_eigh(void **state)
{
    static const int64_t shapes[][2] = { { 2, 5 }, { 1, 1 }, { 1, 0 }, { 1, 10 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int upper = 0; upper < 2; upper++)
                for (int hilb = 0; hilb < 2; hilb++)
                    for (int e = 0; e < NTABLES; e++) {
                        amp_dtype t = dtypes[d];
                        int64_t batch = shapes[s][0], n = shapes[s][1];
                        tensor sym = random_matrices(t, batch, n, n);
                        for (int64_t b = 0; b < batch; b++)
                            for (int64_t i = 0; i < n; i++)
                                for (int64_t j = 0; j < n; j++)
                                    if (hilb)
                                        set(&sym, (size_t)((b * n + i) * n + j), 1.0 / (double)(i + j + 1));
                                    else if (j > i)
                                        set(&sym, (size_t)((b * n + i) * n + j), at(&sym, b, n, n, j, i));
                        /* The triangle not read holds NaN. */
                        tensor a = tensor_new(t, sym.n);
                        for (int64_t b = 0; b < batch; b++)
                            for (int64_t i = 0; i < n; i++)
                                for (int64_t j = 0; j < n; j++)
                                    set(&a, (size_t)((b * n + i) * n + j),
                                        (upper ? j >= i : j <= i) ? at(&sym, b, n, n, i, j) : NAN);
                        tensor w = tensor_new(t, (size_t)(batch * n)), v = tensor_new(t, sym.n), w_only = tensor_new(t, w.n);
                        void *work = work_new(AMP_EIGH_WORK_BYTES(n, amp_dtype_size(t)));
                        LCALL(tables[e], t, eigh, batch, n, upper, a.data, w.data, v.data, work);
                        LCALL(tables[e], t, eigh, batch, n, upper, a.data, w_only.data, NULL, work);
                        free(work);
                        for (int64_t b = 0; b < batch; b++) {
                            double scale = max_abs(&sym, b, n, n) * (double)(n + 1);
                            for (int64_t j = 0; j < n; j++) {
                                if (j > 0)
                                    assert_true(at(&w, b, 1, n, 0, j - 1) <= at(&w, b, 1, n, 0, j));
                                /* without vectors: the same values to rounding */
                                expect_near(at(&w_only, b, 1, n, 0, j), at(&w, b, 1, n, 0, j), tol(t, n) * scale,
                                            "eigvalsh", b, 0, j);
                            }
                            expect_orthonormal_columns(&v, b, n, n, "V^T V ~ I");
                            for (int64_t i = 0; i < n; i++)
                                for (int64_t j = 0; j < n; j++) {
                                    double av = 0.0;
                                    for (int64_t p = 0; p < n; p++)
                                        av += at(&sym, b, n, n, i, p) * at(&v, b, n, n, p, j);
                                    expect_near(av, at(&v, b, n, n, i, j) * at(&w, b, 1, n, 0, j), tol(t, n) * scale,
                                                "A V ~ V diag(w)", b, i, j);
                                }
                        }
                        tensor_free(&sym);
                        tensor_free(&a);
                        tensor_free(&w);
                        tensor_free(&v);
                        tensor_free(&w_only);
                    }
}

static void test_eigh_nonfinite(void **state)
{
    static const double values[] = { NAN, 1, 1, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_of(t, 4, values), w = tensor_new(t, 2), v = tensor_new(t, 4);
        void *work = work_new(AMP_EIGH_WORK_BYTES(2, amp_dtype_size(t)));
        LCALL(&amp_ref_kernel_table, t, eigh, 1, 2, 0, a.data, w.data, v.data, work);
        expect_all_nan(&w, "eigh w");
        expect_all_nan(&v, "eigh v");
        free(work);
        tensor_free(&a);
        tensor_free(&w);
        tensor_free(&v);
    }
}

/* Entries whose squares overflow (or underflow) the dtype still give the
 * right answer: the Jacobi kernels scale first.  [[c, c], [c, c]] has
 * eigenvalues 0 and 2c and singular values 2c and 0. */
static void test_jacobi_extreme_magnitudes(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int tiny = 0; tiny < 2; tiny++) {
            amp_dtype t = dtypes[d];
            double c = t == AMP_F64 ? (tiny ? 1e-300 : 1e300) : (tiny ? 1e-35 : 1e35);
            const double values[] = { c, c, c, c };
            tensor a = tensor_of(t, 4, values), w = tensor_new(t, 2), v = tensor_new(t, 4), u = tensor_new(t, 4),
                s = tensor_new(t, 2), vh = tensor_new(t, 4), y = tensor_new(t, 4);
            void *work = work_new(AMP_SVD_WORK_BYTES(2, 2, amp_dtype_size(t)));
            LCALL(&amp_ref_kernel_table, t, eigh, 1, 2, 0, a.data, w.data, v.data, work);
            expect_near(get(&w, 0), 0.0, tol(t, 2) * c, "eigh, small eigenvalue", 0, 0, 0);
            expect_near(get(&w, 1), 2.0 * c, tol(t, 2) * c, "eigh, large eigenvalue", 0, 0, 1);
            LCALL(&amp_ref_kernel_table, t, svd, 1, 2, 2, 0, 1, a.data, u.data, s.data, vh.data, work);
            expect_near(get(&s, 0), 2.0 * c, tol(t, 2) * c, "svd, large value", 0, 0, 0);
            expect_near(get(&s, 1), 0.0, tol(t, 2) * c, "svd, small value", 0, 0, 1);
            expect_all_finite(&u, "svd u");
            expect_all_finite(&vh, "svd vh");
            LCALL(&amp_ref_kernel_table, t, pinverse, 1, 2, 2, 1e-5, a.data, y.data, work);
            for (size_t i = 0; i < 4; i++) /* pinv = A / (4 c^2) = 1 / (4c) everywhere */
                expect_near(get(&y, i), 0.25 / c, tol(t, 2) / c, "pinverse", 0, (int64_t)i / 2, (int64_t)i % 2);
            free(work);
            tensor_free(&a);
            tensor_free(&w);
            tensor_free(&v);
            tensor_free(&u);
            tensor_free(&s);
            tensor_free(&vh);
            tensor_free(&y);
        }
}

/* torch.linalg.svd([[3, 0], [0, -4]]).S = [4, 3]. */
static void test_svd_matches_torch(void **state)
{
    static const double values[] = { 3, 0, 0, -4 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_of(t, 4, values), s = tensor_new(t, 2);
        void *work = work_new(AMP_SVD_WORK_BYTES(2, 2, amp_dtype_size(t)));
        LCALL(&amp_ref_kernel_table, t, svd, 1, 2, 2, 0, 0, a.data, NULL, s.data, NULL, work);
        assert_true(get(&s, 0) == 4.0 && get(&s, 1) == 3.0);
        free(work);
        tensor_free(&a);
        tensor_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lu_factor),
        cmocka_unit_test(test_lu_factor_singular_matches_torch),
        cmocka_unit_test(test_inv_ex),
        cmocka_unit_test(test_inv_ex_singular),
        cmocka_unit_test(test_inv_ex_hilbert),
        cmocka_unit_test(test_solve),
        cmocka_unit_test(test_solve_singular),
        cmocka_unit_test(test_cholesky),
        cmocka_unit_test(test_cholesky_not_positive_definite),
        cmocka_unit_test(test_cholesky_hilbert),
        cmocka_unit_test(test_triangular_solve),
        cmocka_unit_test(test_triangular_solve_zero_diagonal),
        cmocka_unit_test(test_qr),
        cmocka_unit_test(test_qr_signs_match_torch),
        cmocka_unit_test(test_svd),
        cmocka_unit_test(test_svd_nonfinite),
        cmocka_unit_test(test_pinverse),
        cmocka_unit_test(test_eigh),
        cmocka_unit_test(test_eigh_nonfinite),
        cmocka_unit_test(test_jacobi_extreme_magnitudes),
        cmocka_unit_test(test_svd_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
