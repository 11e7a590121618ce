/*
 * test_linalg.c - the solves and matrix functions of amprt/linalg.h
 * (lu_solve, lstsq, matrix_exp, householder_product and ormqr) in f32 and
 * f64, through the public and the reference tables, against independent
 * long double oracles (kernel_test_util.h's bound), and PyTorch's numbers
 * for fixed cases (computed by torch 1.13 in float64 on pattern_value
 * inputs, embedded below).
 */
#include <stdbool.h>

#include "kernel_test_util.h"

/* ---- linear algebra (f32 and f64) -------------------------------------------- */

#define LCALL(k, t, op, ...)                                                                      \
    do {                                                                                          \
        if ((t) == AMP_F64)                                                                       \
            (k)->op##_f64(__VA_ARGS__);                                                           \
        else                                                                                      \
            (k)->op##_f32(__VA_ARGS__);                                                           \
    } while (0)

static const amp_dtype ldtypes[] = {AMP_F64, AMP_F32};

/* A bound for the linear algebra: c u_acc(t) times the size of the values. */
static double lbound(amp_dtype t, double c, double scale) { return c * u_acc(t) * scale; }

/* x [n, k] solving a [n, n] x = b in long double (Gaussian elimination,
 * partial pivoting): the oracle of lu_solve, lstsq's normal equations and
 * tensorsolve-like checks. */
static void ld_solve(int n, int k, long double *a, long double *b)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabsl(a[r * n + c]) > fabsl(a[p * n + c]))
                p = r;
        for (int j = 0; j < n; j++) {
            long double tmp = a[c * n + j];
            a[c * n + j] = a[p * n + j];
            a[p * n + j] = tmp;
        }
        for (int j = 0; j < k; j++) {
            long double tmp = b[c * k + j];
            b[c * k + j] = b[p * k + j];
            b[p * k + j] = tmp;
        }
        for (int r = c + 1; r < n; r++) {
            long double f = a[r * n + c] / a[c * n + c];
            for (int j = c; j < n; j++)
                a[r * n + j] -= f * a[c * n + j];
            for (int j = 0; j < k; j++)
                b[r * k + j] -= f * b[c * k + j];
        }
    }
    for (int j = 0; j < k; j++)
        for (int r = n - 1; r >= 0; r--) {
            long double v = b[r * k + j];
            for (int c = r + 1; c < n; c++)
                v -= a[r * n + c] * b[c * k + j];
            b[r * k + j] = v / a[r * n + r];
        }
}

/* lu_solve: LU from a known P L U (unit L with small entries, dominant U),
 * the oracle solving P L U x = b in long double; pivots checked. */
static void lu_solve_matches_oracle(void **state)
{
    (void)state;
    enum { M = 4, K = 3, BATCH = 2 };
    int32_t piv[BATCH * M] = {3, 2, 4, 4, 1, 3, 3, 4};
    for (int d = 0; d < 2; d++) {
        amp_dtype t = ldtypes[d];
        tensor lu = tensor_random(t, BATCH * M * M, -0.3, 0.3), b = tensor_random(t, BATCH * M * K, -1, 1);
        for (int s = 0; s < BATCH; s++)
            for (int i = 0; i < M; i++)
                set(&lu, (size_t)(s * M * M + i * M + i), 2 + i * 0.25);
        tensor y[NTABLES];
        for (int k = 0; k < NTABLES; k++) {
            int st;
            y[k] = tensor_new(t, BATCH * M * K);
            if (t == AMP_F64)
                st = tables[k]->lu_solve_f64(BATCH, M, K, lu.data, piv, b.data, y[k].data);
            else
                st = tables[k]->lu_solve_f32(BATCH, M, K, lu.data, piv, b.data, y[k].data);
            assert_int_equal(st, AMP_OK);
            for (int s = 0; s < BATCH; s++) {
                /* A = P L U, P applying the swaps in reverse to rows of L U */
                long double a[M * M], x[M * K];
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < M; j++) {
                        long double v = 0;
                        for (int l = 0; l <= (i < j ? i : j); l++)
                            v += (l == i ? 1.0L : (long double)get(&lu, (size_t)(s * M * M + i * M + l))) *
                                 get(&lu, (size_t)(s * M * M + l * M + j));
                        a[i * M + j] = v;
                    }
                for (int i = M - 1; i >= 0; i--) {
                    int p = piv[s * M + i] - 1;
                    for (int j = 0; j < M; j++) {
                        long double tmp = a[i * M + j];
                        a[i * M + j] = a[p * M + j];
                        a[p * M + j] = tmp;
                    }
                }
                for (int i = 0; i < M * K; i++)
                    x[i] = get(&b, (size_t)(s * M * K + i));
                ld_solve(M, K, a, x);
                for (int i = 0; i < M * K; i++)
                    expect_close(&y[k], (size_t)(s * M * K + i), x[i], lbound(t, 256, 1), "lu_solve");
            }
        }
        expect_public_equals_ref(&y[0], &y[1]);
        /* a pivot outside [1, m]: a status and nothing written */
        for (int bad = 0; bad < 2; bad++) {
            int32_t saved = piv[5];
            piv[5] = bad ? M + 1 : 0;
            for (int k = 0; k < NTABLES; k++) {
                int st;
                for (size_t i = 0; i < y[k].n; i++)
                    set(&y[k], i, 7.0);
                if (t == AMP_F64)
                    st = tables[k]->lu_solve_f64(BATCH, M, K, lu.data, piv, b.data, y[k].data);
                else
                    st = tables[k]->lu_solve_f32(BATCH, M, K, lu.data, piv, b.data, y[k].data);
                assert_int_equal(st, AMP_ERR_TARGET_OUT_OF_RANGE);
                for (size_t i = 0; i < y[k].n; i++)
                    assert_true(get(&y[k], i) == 7.0);
            }
            piv[5] = saved;
        }
        for (int k = 0; k < NTABLES; k++)
            tensor_free(&y[k]);
        tensor_free(&lu);
        tensor_free(&b);
    }
}

/* lstsq: tall A against the normal equations A^T A x = A^T b, wide A
 * against the minimum-norm x = A^T (A A^T)^-1 b, both in long double. */
static void lstsq_matches_oracle(void **state)
{
    (void)state;
    static const int shapes[][3] = {{6, 3, 2}, {3, 5, 2}, {4, 4, 1}};
    double work[64];
    for (int d = 0; d < 2; d++)
        for (int sh = 0; sh < 3; sh++) {
            amp_dtype t = ldtypes[d];
            int m = shapes[sh][0], n = shapes[sh][1], K = shapes[sh][2];
            assert_true(AMP_LSTSQ_WORK_ELEMS(m, n, K) <= 64);
            tensor a = tensor_random(t, (size_t)(2 * m * n), -1, 1), b = tensor_random(t, (size_t)(2 * m * K), -1, 1);
            for (int s = 0; s < 2; s++) /* well conditioned: a dominant diagonal */
                for (int i = 0; i < (m < n ? m : n); i++)
                    set(&a, (size_t)(s * m * n + i * n + i), 3);
            tensor y[NTABLES];
            for (int k = 0; k < NTABLES; k++) {
                y[k] = tensor_new(t, (size_t)(2 * n * K));
                LCALL(tables[k], t, lstsq, 2, m, n, K, a.data, b.data, y[k].data, work);
                for (int s = 0; s < 2; s++) {
                    long double g[25], r[25];
                    int q = m >= n ? n : m;
                    /* tall: G = A^T A, r = A^T b; wide: G = A A^T, r = b, then x = A^T w */
                    for (int i = 0; i < q; i++)
                        for (int j = 0; j < q; j++) {
                            long double v = 0;
                            for (int l = 0; l < (m >= n ? m : n); l++)
                                v += m >= n ? (long double)get(&a, (size_t)(s * m * n + l * n + i)) * get(&a, (size_t)(s * m * n + l * n + j))
                                            : (long double)get(&a, (size_t)(s * m * n + i * n + l)) * get(&a, (size_t)(s * m * n + j * n + l));
                            g[i * q + j] = v;
                        }
                    for (int i = 0; i < q; i++)
                        for (int c = 0; c < K; c++) {
                            long double v = 0;
                            if (m >= n)
                                for (int l = 0; l < m; l++)
                                    v += (long double)get(&a, (size_t)(s * m * n + l * n + i)) * get(&b, (size_t)(s * m * K + l * K + c));
                            else
                                v = get(&b, (size_t)(s * m * K + i * K + c));
                            r[i * K + c] = v;
                        }
                    ld_solve(q, K, g, r);
                    for (int i = 0; i < n; i++)
                        for (int c = 0; c < K; c++) {
                            long double want = 0;
                            if (m >= n)
                                want = r[i * K + c];
                            else
                                for (int l = 0; l < m; l++)
                                    want += (long double)get(&a, (size_t)(s * m * n + l * n + i)) * r[l * K + c];
                            expect_close(&y[k], (size_t)(s * n * K + i * K + c), want, lbound(t, 512, 1), "lstsq");
                        }
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            for (int k = 0; k < NTABLES; k++)
                tensor_free(&y[k]);
            tensor_free(&a);
            tensor_free(&b);
        }
}

/* matrix_exp against the Taylor series in long double without scaling (the
 * inputs' norms stay below 4, where 80 terms converge). */
static void matrix_exp_matches_oracle(void **state)
{
    (void)state;
    enum { N = 4 };
    double work[4 * N * N];
    for (int d = 0; d < 2; d++)
        for (int sc = 0; sc < 3; sc++) {
            amp_dtype t = ldtypes[d];
            double scale = sc == 0 ? 0.05 : sc == 1 ? 0.4 : 1.0;
            tensor a = tensor_random(t, 2 * N * N, -scale, scale);
            tensor y[NTABLES];
            for (int k = 0; k < NTABLES; k++) {
                y[k] = tensor_new(t, 2 * N * N);
                LCALL(tables[k], t, matrix_exp, 2, N, a.data, y[k].data, work);
                for (int s = 0; s < 2; s++) {
                    long double term[N * N], sum[N * N], tmp[N * N];
                    for (int i = 0; i < N * N; i++)
                        term[i] = sum[i] = i % (N + 1) == 0;
                    for (int j = 1; j <= 80; j++) {
                        for (int r = 0; r < N; r++)
                            for (int c = 0; c < N; c++) {
                                long double v = 0;
                                for (int l = 0; l < N; l++)
                                    v += term[r * N + l] * get(&a, (size_t)(s * N * N + l * N + c));
                                tmp[r * N + c] = v / j;
                            }
                        for (int i = 0; i < N * N; i++) {
                            term[i] = tmp[i];
                            sum[i] += tmp[i];
                        }
                    }
                    for (int i = 0; i < N * N; i++)
                        expect_close(&y[k], (size_t)(s * N * N + i), sum[i], lbound(t, 1024, 8), "matrix_exp");
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            for (int k = 0; k < NTABLES; k++)
                tensor_free(&y[k]);
            tensor_free(&a);
        }
}

/* The explicit Q [mn, mn] = H_0 ... H_{k-1} of reflectors in a [mn, nk], in long double. */
static void ld_q(const tensor *a, size_t off, int mn, int nk, const tensor *tau, size_t toff, int k, long double *q)
{
    for (int i = 0; i < mn * mn; i++)
        q[i] = i % (mn + 1) == 0;
    for (int i = k - 1; i >= 0; i--) { /* q = H_i q */
        long double v[8], tv = get(tau, toff + (size_t)i);
        for (int r = 0; r < mn; r++)
            v[r] = r < i ? 0 : r == i ? 1 : (long double)get(a, off + (size_t)(r * nk + i));
        for (int c = 0; c < mn; c++) {
            long double s = 0;
            for (int r = 0; r < mn; r++)
                s += v[r] * q[r * mn + c];
            for (int r = 0; r < mn; r++)
                q[r * mn + c] -= tv * v[r] * s;
        }
    }
}

static void householder_and_ormqr_match_oracle(void **state)
{
    (void)state;
    enum { M = 5, N = 3, K = 2, C = 4 };
    for (int d = 0; d < 2; d++) {
        amp_dtype t = ldtypes[d];
        tensor a = tensor_random(t, 2 * M * N, -1, 1), tau = tensor_random(t, 2 * K, 0.2, 1.8);
        tensor c = tensor_random(t, 2 * M * C, -1, 1);
        long double q[M * M];
        tensor y[NTABLES];
        for (int k = 0; k < NTABLES; k++) {
            y[k] = tensor_new(t, 2 * M * N);
            LCALL(tables[k], t, householder_product, 2, M, N, K, a.data, tau.data, y[k].data);
            for (int s = 0; s < 2; s++) {
                ld_q(&a, (size_t)(s * M * N), M, N, &tau, (size_t)(s * K), K, q);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++)
                        expect_close(&y[k], (size_t)(s * M * N + i * N + j), q[i * M + j], lbound(t, 128, 4),
                                     "householder_product");
            }
        }
        expect_public_equals_ref(&y[0], &y[1]);
        for (int k = 0; k < NTABLES; k++)
            tensor_free(&y[k]);
        /* ormqr: C [M, C] on the left, [C, M] on the right (the same numbers) */
        for (int left = 0; left < 2; left++)
            for (int tr = 0; tr < 2; tr++) {
                int rows = left ? M : C, cols = left ? C : M;
                for (int k = 0; k < NTABLES; k++) {
                    y[k] = tensor_new(t, 2 * M * C);
                    LCALL(tables[k], t, ormqr, 2, M, N, K, rows, cols, left, tr, a.data, tau.data, c.data, y[k].data);
                    for (int s = 0; s < 2; s++) {
                        ld_q(&a, (size_t)(s * M * N), M, N, &tau, (size_t)(s * K), K, q);
                        for (int i = 0; i < rows; i++)
                            for (int j = 0; j < cols; j++) {
                                long double v = 0;
                                for (int l = 0; l < M; l++) {
                                    /* op(Q)[x][y] */
                                    long double qv = left ? (tr ? q[l * M + i] : q[i * M + l]) : (tr ? q[j * M + l] : q[l * M + j]);
                                    v += left ? qv * get(&c, (size_t)(s * M * C + l * cols + j))
                                              : get(&c, (size_t)(s * M * C + i * cols + l)) * qv;
                                }
                                expect_close(&y[k], (size_t)(s * M * C + i * cols + j), v, lbound(t, 256, 8), "ormqr");
                            }
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                for (int k = 0; k < NTABLES; k++)
                    tensor_free(&y[k]);
            }
        tensor_free(&a);
        tensor_free(&tau);
        tensor_free(&c);
    }
}

/* torch 1.13, float64, on pattern_value inputs (salts as named below) */
static void linalg_matches_pytorch(void **state)
{
    (void)state;
    static const double exp_want[9] = {1.2787530028968805, -3.2888520696508126, 0.35016102341940525,
                                       0.74479114299506266, 2.1687689595909427, -0.93163107398787681,
                                       0.33092315314683551, 0.96319915931604427, 0.045483678000390076};
    static const double hh_want[12] = {2.125, -0.6943359375, 0.19703292846679688, -0.5625, 1.59716796875,
                                       -0.072149276733398438, -0.84375, 0.552001953125, 0.23052120208740234,
                                       -1.125, 0.6630859375, -0.66907882690429688};
    static const double ormqr_t_want[8] = {2.73828125, -3.7265625, -1.517181396484375, 2.33221435546875,
                                           -0.37743008136749268, -1.2183644771575928, 0.38139143586158752,
                                           1.7605029940605164};
    static const double lstsq_want[6] = {-0.13095238095238118, -0.36904761904761935, -0.7857142857142857,
                                         -0.21428571428571483, -0.33333333333333348, -0.66666666666666685};
    /* linalg_lu_factor of (pattern(9, salt 6) + 3 I)[[2, 0, 1]], and lu_solve of pattern(6, salt 7) */
    static const double lu_in[9] = {2.125, 0, 0.875, -0.52941176470588236, 2.75, 1.0882352941176472,
                                    -0.6470588235294118, -0.18181818181818182, 4.1390374331550808};
    static const int32_t piv[3] = {2, 3, 3};
    static const double lus_want[6] = {-0.091569767441860433, 0.43863049095607237, -0.49709302325581395,
                                       0.10335917312661501, 0.22238372093023251, -0.065245478036175711};
    double work[64];
    for (int d = 0; d < 2; d++) {
        amp_dtype t = ldtypes[d];
        double tol = t == AMP_F64 ? 1e-13 : 2e-5;
        tensor a = tensor_pattern(t, 9, 1), r = tensor_pattern(t, 12, 2), tau = tensor_pattern(t, 3, 3);
        tensor c = tensor_pattern(t, 8, 4), b = tensor_pattern(t, 8, 5), lu = tensor_of(t, 9, lu_in);
        tensor b7 = tensor_pattern(t, 6, 7), y = tensor_new(t, 12);
        for (int k = 0; k < NTABLES; k++) {
            LCALL(tables[k], t, matrix_exp, 1, 3, a.data, y.data, work);
            for (int i = 0; i < 9; i++)
                expect_close(&y, (size_t)i, exp_want[i], tol * 4, "torch matrix_exp");
            LCALL(tables[k], t, householder_product, 1, 4, 3, 3, r.data, tau.data, y.data);
            for (int i = 0; i < 12; i++)
                expect_close(&y, (size_t)i, hh_want[i], tol, "torch householder_product");
            LCALL(tables[k], t, ormqr, 1, 4, 3, 3, 4, 2, 1, 1, r.data, tau.data, c.data, y.data);
            for (int i = 0; i < 8; i++)
                expect_close(&y, (size_t)i, ormqr_t_want[i], tol * 4, "torch ormqr");
            LCALL(tables[k], t, lstsq, 1, 4, 3, 2, r.data, b.data, y.data, work);
            for (int i = 0; i < 6; i++)
                expect_close(&y, (size_t)i, lstsq_want[i], tol * 4, "torch lstsq");
            int st = t == AMP_F64 ? tables[k]->lu_solve_f64(1, 3, 2, lu.data, piv, b7.data, y.data)
                                  : tables[k]->lu_solve_f32(1, 3, 2, lu.data, piv, b7.data, y.data);
            assert_int_equal(st, AMP_OK);
            for (int i = 0; i < 6; i++)
                expect_close(&y, (size_t)i, lus_want[i], tol * 4, "torch lu_solve");
        }
        tensor *all[] = {&a, &r, &tau, &c, &b, &lu, &b7, &y};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tensor_free(all[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lu_solve_matches_oracle),
        cmocka_unit_test(lstsq_matches_oracle),
        cmocka_unit_test(matrix_exp_matches_oracle),
        cmocka_unit_test(householder_and_ormqr_match_oracle),
        cmocka_unit_test(linalg_matches_pytorch),
    };
    return cmocka_run_group_tests_name("linalg", tests, NULL, NULL);
}
