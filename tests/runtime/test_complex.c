/*
 * test_complex.c - amprt/complex.h's kernels other than the transforms:
 * eig (A v = lambda v residuals, unit norms, conjugate pairs, matrices
 * with known spectra), polar, view_as_complex/view_as_real, real, imag,
 * abs, angle (complex and real) and conj, through the public table.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "amprt.h"

static uint64_t rng = 0x13198a2e03707344ull;
static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* max |A v - lambda v| over the eigenpairs, relative to ||A||_max n */
static double worst_residual(int64_t n, const double *a, const amp_c128 *vals, const amp_c128 *vecs)
{
    double amax = 0, worst = 0;
    for (int64_t i = 0; i < n * n; i++)
        amax = fmax(amax, fabs(a[i]));
    for (int64_t k = 0; k < n; k++) {
        double norm = 0;
        for (int64_t i = 0; i < n; i++) {
            double re = 0, im = 0;
            for (int64_t j = 0; j < n; j++) {
                re += a[i * n + j] * vecs[j * n + k].re;
                im += a[i * n + j] * vecs[j * n + k].im;
            }
            const amp_c128 *v = &vecs[i * n + k], *l = &vals[k];
            re -= l->re * v->re - l->im * v->im;
            im -= l->re * v->im + l->im * v->re;
            worst = fmax(worst, hypot(re, im));
            norm += v->re * v->re + v->im * v->im;
        }
        assert_true(fabs(norm - 1) < 1e-12); /* unit 2-norm, as geev */
    }
    return worst / (amax > 0 ? amax : 1) / (double)n;
}

static void eig_residuals_of_random_matrices(void **state)
{
    (void)state;
    for (int64_t n = 1; n <= 12; n++) {
        for (int rep = 0; rep < 4; rep++) {
            double *a = malloc((size_t)(n * n) * sizeof *a), *work = malloc(AMP_EIG_WORK_DOUBLES(n) * sizeof *work);
            amp_c128 *vals = malloc((size_t)n * sizeof *vals), *vecs = malloc((size_t)(n * n) * sizeof *vecs);
            amp_c128 *vals2 = malloc((size_t)n * sizeof *vals2);
            for (int64_t i = 0; i < n * n; i++)
                a[i] = uniform();
            assert_int_equal(amp_eig_c128(1, n, a, vals, vecs, work), AMP_OK);
            double r = worst_residual(n, a, vals, vecs);
            if (r > 1e-13) {
                print_error("n=%lld: residual %g\n", (long long)n, r);
                fail();
            }
            /* complex eigenvalues come in conjugate pairs, positive imaginary part first */
            for (int64_t k = 0; k < n; k++) {
                if (vals[k].im > 0) {
                    assert_true(k + 1 < n && vals[k + 1].re == vals[k].re && vals[k + 1].im == -vals[k].im);
                    k++;
                } else {
                    assert_true(vals[k].im == 0);
                }
            }
            /* eigvals gives the same values; the trace is their sum */
            assert_int_equal(amp_eig_c128(1, n, a, vals2, NULL, work), AMP_OK);
            double tr = 0, sum = 0;
            for (int64_t k = 0; k < n; k++) {
                assert_true(vals2[k].re == vals[k].re && vals2[k].im == vals[k].im);
                tr += a[k * n + k];
                sum += vals[k].re;
            }
            assert_true(fabs(tr - sum) < 1e-12 * (double)n);
            free(a), free(work), free(vals), free(vecs), free(vals2);
        }
    }
}

static void eig_of_known_spectra(void **state)
{
    (void)state;
    double work[AMP_EIG_WORK_DOUBLES(3)];
    amp_c128 vals[3], vecs[9];
    /* a rotation by 90 degrees: +-i */
    double rot[4] = {0, -1, 1, 0};
    assert_int_equal(amp_eig_c128(1, 2, rot, vals, vecs, work), AMP_OK);
    assert_true(fabs(vals[0].re) < 1e-15 && fabs(vals[0].im - 1) < 1e-15);
    assert_true(fabs(vals[1].re) < 1e-15 && fabs(vals[1].im + 1) < 1e-15);
    /* upper triangular: its diagonal */
    double tri[9] = {2, 1, 3, 0, -1, 5, 0, 0, 4};
    assert_int_equal(amp_eig_c128(1, 3, tri, vals, vecs, work), AMP_OK);
    for (int k = 0; k < 3; k++)
        assert_true(fabs(vals[k].re - tri[k * 4]) < 1e-14 && vals[k].im == 0);
    assert_true(worst_residual(3, tri, vals, vecs) < 1e-15);
    /* symmetric: real eigenvalues 1, 3 of [[2, 1], [1, 2]] */
    double sym[4] = {2, 1, 1, 2};
    assert_int_equal(amp_eig_c128(1, 2, sym, vals, vecs, work), AMP_OK);
    double lo = fmin(vals[0].re, vals[1].re), hi = fmax(vals[0].re, vals[1].re);
    assert_true(fabs(lo - 1) < 1e-15 && fabs(hi - 3) < 1e-15 && vals[0].im == 0 && vals[1].im == 0);
    /* the zero matrix: zeros, unit vectors */
    double zero[9] = {0};
    assert_int_equal(amp_eig_c128(1, 3, zero, vals, vecs, work), AMP_OK);
    for (int k = 0; k < 3; k++)
        assert_true(vals[k].re == 0 && vals[k].im == 0);
}

static void eig_c64_and_batches(void **state)
{
    (void)state;
    enum { N = 5, B = 3 };
    float a[B * N * N];
    double ad[N * N], work[AMP_EIG_WORK_DOUBLES(N)];
    amp_c64 vals[B * N], vecs[B * N * N];
    amp_c128 v128[N], e128[N * N];
    for (int i = 0; i < B * N * N; i++)
        a[i] = (float)uniform();
    assert_int_equal(amp_eig_c64(B, N, a, vals, vecs, work), AMP_OK);
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < N * N; i++)
            ad[i] = a[b * N * N + i];
        assert_int_equal(amp_eig_c128(1, N, ad, v128, e128, work), AMP_OK);
        /* c64 is the c128 result rounded once */
        for (int k = 0; k < N; k++)
            assert_true(vals[b * N + k].re == (float)v128[k].re && vals[b * N + k].im == (float)v128[k].im);
        for (int i = 0; i < N * N; i++)
            assert_true(vecs[b * N * N + i].re == (float)e128[i].re);
    }
}

static void elementwise_parts(void **state)
{
    (void)state;
    amp_c64 z[4] = {{3, 4}, {-1, 0}, {0, -2}, {-0.0f, 0}};
    float r[4], w[8];
    amp_abs_c64(4, z, r);
    assert_true(r[0] == 5 && r[1] == 1 && r[2] == 2 && r[3] == 0);
    amp_angle_c64(4, z, r);
    assert_true(fabsf(r[0] - 0.9272952f) < 1e-6f && fabsf(r[1] - 3.14159265f) < 1e-6f && fabsf(r[2] + 1.5707963f) < 1e-6f);
    amp_real_c64(4, z, r);
    assert_true(r[0] == 3 && r[2] == 0);
    amp_imag_c64(4, z, r);
    assert_true(r[0] == 4 && r[2] == -2);
    amp_c64 c[4];
    amp_conj_c64(4, z, c);
    assert_true(c[0].re == 3 && c[0].im == -4 && c[2].im == 2);
    amp_view_as_real_c64(4, z, w);
    assert_true(w[0] == 3 && w[1] == 4 && w[5] == -2);
    amp_view_as_complex_c64(4, w, c);
    assert_true(memcmp(c, z, sizeof z) == 0);
    /* abs does not overflow for large parts */
    amp_c128 big = {1e300, 1e300};
    double a;
    amp_abs_c128(1, &big, &a);
    assert_true(fabs(a - 1.4142135623730951e300) < 1e286);
    /* the angle of real tensors: 0, pi for negatives and -0, NaN kept */
    double x[4] = {2, -3, -0.0, NAN}, y[4];
    amp_angle_f64(4, x, y);
    assert_true(y[0] == 0 && y[1] == 3.14159265358979323846 && y[2] == 3.14159265358979323846 && isnan(y[3]));
}

static void polar_broadcasts(void **state)
{
    (void)state;
    double r[2] = {1, 2}, t[3] = {0, 1.5707963267948966, 3.141592653589793};
    amp_c128 y[6];
    int64_t shape[2] = {2, 3}, rs[2] = {1, 0}, ts[2] = {0, 1};
    amp_polar_c128(2, shape, r, rs, t, ts, y);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            assert_true(fabs(y[i * 3 + j].re - r[i] * cos(t[j])) < 1e-15);
            assert_true(fabs(y[i * 3 + j].im - r[i] * sin(t[j])) < 1e-15);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eig_residuals_of_random_matrices),
        cmocka_unit_test(eig_of_known_spectra),
        cmocka_unit_test(eig_c64_and_batches),
        cmocka_unit_test(elementwise_parts),
        cmocka_unit_test(polar_broadcasts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
