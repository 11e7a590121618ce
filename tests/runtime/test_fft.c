/*
 * test_fft.c - the transforms of amprt/complex.h: amp_fft_c64/c128 (every
 * kind: c2c, r2c, c2r, forward and inverse, each norm, several dims,
 * padding and trimming) and amp_stft_*, through the public table, against
 * a naive DFT in long double and against transforms known in closed form
 * (impulse, constant, cosine), Parseval's identity and round trips.
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

static uint64_t rng = 0x243f6a8885a308d3ull;
static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* y = the transform d describes, in c128 or c64, with its own work */
static void run(const amp_fft_desc *d, const void *x, void *y, int f64)
{
    double *work = malloc(amp_fft_work_doubles(d) * sizeof(double));
    assert_non_null(work);
    if (f64)
        amp_fft_c128(d, x, y, work);
    else
        amp_fft_c64(d, x, y, work);
    free(work);
}

/* A 1-D transform of one line of n points (x of length m, y of out). */
static void fft1(int kind, int inverse, int norm, int64_t m, int64_t n, int64_t out, int in_real, const void *x,
                 void *y, int f64)
{
    int dims[1] = {0};
    int64_t in_shape[1] = {m}, out_shape[1] = {out}, lens[1] = {n};
    amp_fft_desc d = {1, in_shape, out_shape, 1, dims, lens, kind, inverse, norm, in_real};
    run(&d, x, y, f64);
}

/* the naive DFT in long double: X[k] = sum_j x[j] e^(sign 2 pi i jk/n) */
static void naive(const amp_c128 *x, int64_t n, int sign, long double *re, long double *im)
{
    const long double pi2 = 6.283185307179586476925286766559005768L;
    for (int64_t k = 0; k < n; k++) {
        long double sr = 0, si = 0;
        for (int64_t j = 0; j < n; j++) {
            long double a = pi2 * (long double)((j * k) % n) / (long double)n;
            long double c = cosl(a), s = sign * sinl(a);
            sr += x[j].re * c - x[j].im * s;
            si += x[j].re * s + x[j].im * c;
        }
        re[k] = sr;
        im[k] = si;
    }
}

static void dft_matches_naive_for_every_length(void **state)
{
    (void)state;
    static const int64_t lens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 30, 31, 49, 60, 64, 97, 120,
                                   121, 127, 128, 210, 243, 250, 256, 343, 360};
    for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
        int64_t n = lens[t];
        amp_c128 *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        amp_c64 *x32 = malloc((size_t)n * sizeof *x32), *y32 = malloc((size_t)n * sizeof *y32);
        long double *re = malloc((size_t)n * sizeof *re), *im = malloc((size_t)n * sizeof *im);
        for (int inverse = 0; inverse < 2; inverse++) {
            double mag = 0;
            for (int64_t j = 0; j < n; j++) {
                /* the same numbers in both precisions: floats, exactly held by double */
                volatile float re = (float)uniform(), im = (float)uniform();
                x32[j].re = re;
                x32[j].im = im;
                x[j].re = re;
                x[j].im = im;
                mag += hypot(x[j].re, x[j].im);
            }
            naive(x, n, inverse ? 1 : -1, re, im);
            /* backward norm: the inverse divides by n */
            long double s = inverse ? 1.0L / (long double)n : 1;
            fft1(AMP_FFT_C2C, inverse, AMP_FFT_NORM_BACKWARD, n, n, n, 0, x, y, 1);
            fft1(AMP_FFT_C2C, inverse, AMP_FFT_NORM_BACKWARD, n, n, n, 0, x32, y32, 0);
            /* error bounds: double sums of n terms (log n levels, exact twiddles), and
             * c64's one rounding to float of each part */
            double tol64 = 64 * DBL_EPSILON * mag * (double)s * (1 + log2((double)n));
            for (int64_t k = 0; k < n; k++) {
                double er = (double)(re[k] * s), ei = (double)(im[k] * s);
                if (fabs(y[k].re - er) > tol64 || fabs(y[k].im - ei) > tol64) {
                    print_error("n=%lld inverse=%d k=%lld: c128 %a%+ai, want %a%+ai\n", (long long)n, inverse,
                                (long long)k, y[k].re, y[k].im, er, ei);
                    fail();
                }
                double tol32 = tol64 + FLT_EPSILON * (fabs(er) + fabs(ei) + 1e-30);
                assert_true(fabs(y32[k].re - er) <= tol32 && fabs(y32[k].im - ei) <= tol32);
                /* one rounding: c64's output is the nearest float of a double result */
                if (!(fabs((double)y32[k].re - er) <= fabs(er) * FLT_EPSILON + tol64)) {
                    print_error("n=%lld k=%lld inverse=%d: c64 %a, want %a\n", (long long)n, (long long)k, inverse,
                                (double)y32[k].re, er);
                    print_error("x %a %a, x32 %a %a, c128 %a\n", x[0].re, x[n - 1].re, (double)x32[0].re,
                                (double)x32[n - 1].re, y[k].re);
                    fail();
                }
            }
        }
        free(x), free(y), free(x32), free(y32), free(re), free(im);
    }
}

static void impulse_constant_and_cosine(void **state)
{
    (void)state;
    enum { N = 12 };
    amp_c128 x[N], y[N];
    /* an impulse at 0 transforms to all ones */
    memset(x, 0, sizeof x);
    x[0].re = 1;
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, N, N, N, 0, x, y, 1);
    for (int k = 0; k < N; k++) {
        assert_true(y[k].re == 1 && y[k].im == 0);
    }
    /* a constant to N at bin 0 and zeros elsewhere */
    for (int j = 0; j < N; j++)
        x[j].re = 2, x[j].im = 0;
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, N, N, N, 0, x, y, 1);
    assert_true(fabs(y[0].re - 2 * N) < 1e-13);
    for (int k = 1; k < N; k++)
        assert_true(hypot(y[k].re, y[k].im) < 1e-13);
    /* cos(2 pi 3 j / N): N/2 at bins 3 and N - 3 */
    double r[N];
    amp_c128 h[N / 2 + 1];
    for (int j = 0; j < N; j++)
        r[j] = cos(6.283185307179586 * 3 * j / N);
    fft1(AMP_FFT_R2C, 0, AMP_FFT_NORM_BACKWARD, N, N, N / 2 + 1, 1, r, h, 1);
    for (int k = 0; k <= N / 2; k++) {
        double want = k == 3 ? N / 2.0 : 0;
        assert_true(fabs(h[k].re - want) < 1e-13 && fabs(h[k].im) < 1e-13);
    }
}

static void parseval_and_the_norms(void **state)
{
    (void)state;
    enum { N = 45 };
    amp_c128 x[N], y[N], z[N];
    double ex = 0;
    for (int j = 0; j < N; j++) {
        x[j].re = uniform(), x[j].im = uniform();
        ex += x[j].re * x[j].re + x[j].im * x[j].im;
    }
    double ey = 0;
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, N, N, N, 0, x, y, 1);
    for (int k = 0; k < N; k++)
        ey += y[k].re * y[k].re + y[k].im * y[k].im;
    assert_true(fabs(ey / N - ex) < 1e-12 * ex);
    /* ortho is unitary; forward divides the forward transform by N */
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_ORTHO, N, N, N, 0, x, z, 1);
    for (int k = 0; k < N; k++)
        assert_true(fabs(z[k].re - y[k].re / sqrt(N)) < 1e-13 && fabs(z[k].im - y[k].im / sqrt(N)) < 1e-13);
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_FORWARD, N, N, N, 0, x, z, 1);
    for (int k = 0; k < N; k++)
        assert_true(fabs(z[k].re - y[k].re / N) < 1e-14 && fabs(z[k].im - y[k].im / N) < 1e-14);
}

static void round_trips(void **state)
{
    (void)state;
    for (int64_t n = 1; n <= 21; n++) {
        double r[32], back[32];
        amp_c128 h[32], c[32], cc[32];
        for (int j = 0; j < n; j++)
            r[j] = uniform(), c[j].re = uniform(), c[j].im = uniform();
        /* ifft(fft(x)) = x */
        fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, n, n, n, 0, c, h, 1);
        fft1(AMP_FFT_C2C, 1, AMP_FFT_NORM_BACKWARD, n, n, n, 0, h, cc, 1);
        for (int j = 0; j < n; j++)
            assert_true(fabs(cc[j].re - c[j].re) < 1e-14 && fabs(cc[j].im - c[j].im) < 1e-14);
        /* irfft(rfft(x), n) = x, odd and even n */
        fft1(AMP_FFT_R2C, 0, AMP_FFT_NORM_BACKWARD, n, n, n / 2 + 1, 1, r, h, 1);
        fft1(AMP_FFT_C2R, 1, AMP_FFT_NORM_BACKWARD, n / 2 + 1, n, n, 0, h, back, 1);
        for (int j = 0; j < n; j++)
            assert_true(fabs(back[j] - r[j]) < 1e-14);
        /* hfft(ihfft(x), n) = x */
        fft1(AMP_FFT_R2C, 1, AMP_FFT_NORM_BACKWARD, n, n, n / 2 + 1, 1, r, h, 1);
        fft1(AMP_FFT_C2R, 0, AMP_FFT_NORM_BACKWARD, n / 2 + 1, n, n, 0, h, back, 1);
        for (int j = 0; j < n; j++)
            assert_true(fabs(back[j] - r[j]) < 1e-14);
        /* ihfft is the conjugate of rfft over n */
        amp_c128 f[32];
        fft1(AMP_FFT_R2C, 0, AMP_FFT_NORM_BACKWARD, n, n, n / 2 + 1, 1, r, f, 1);
        for (int k = 0; k <= n / 2; k++)
            assert_true(fabs(h[k].re - f[k].re / n) < 1e-15 && fabs(h[k].im + f[k].im / n) < 1e-15);
    }
}

/* c2r ignores the imaginary parts of bin 0 and (even n) bin n/2, as pocketfft */
static void c2r_ignores_the_imaginary_dc_and_nyquist(void **state)
{
    (void)state;
    amp_c128 h[5] = {{1, 7}, {0.5, 0.25}, {0, 0}, {-1, 2}, {3, -9}};
    double a[8], b[8];
    fft1(AMP_FFT_C2R, 1, AMP_FFT_NORM_BACKWARD, 5, 8, 8, 0, h, a, 1);
    h[0].im = 0;
    h[4].im = 0;
    fft1(AMP_FFT_C2R, 1, AMP_FFT_NORM_BACKWARD, 5, 8, 8, 0, h, b, 1);
    for (int j = 0; j < 8; j++)
        assert_true(a[j] == b[j]);
}

/* n pads with zeros or trims the input */
static void n_pads_and_trims(void **state)
{
    (void)state;
    double r[6] = {1, 2, 3, 4, 5, 6};
    amp_c128 y[10], z[10];
    amp_c128 xc[10];
    fft1(AMP_FFT_R2C, 0, AMP_FFT_NORM_BACKWARD, 6, 10, 6, 1, r, y, 1);
    for (int j = 0; j < 10; j++)
        xc[j].re = j < 6 ? r[j] : 0, xc[j].im = 0;
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, 10, 10, 10, 0, xc, z, 1);
    for (int k = 0; k < 6; k++)
        assert_true(fabs(y[k].re - z[k].re) < 1e-13 && fabs(y[k].im - z[k].im) < 1e-13);
    fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, 6, 4, 4, 1, r, y, 1); /* trims to 1, 2, 3, 4 */
    assert_true(y[0].re == 10 && y[2].re == -2);
}

/* a 2-D transform is the 1-D one along each dim, in turn */
static void two_dims_are_successive_lines(void **state)
{
    (void)state;
    enum { R = 3, C = 5 };
    amp_c128 x[R * C], y[R * C], t[R * C], line[5], out[5];
    for (int i = 0; i < R * C; i++)
        x[i].re = uniform(), x[i].im = uniform();
    int dims[2] = {0, 1};
    int64_t shape[2] = {R, C}, lens[2] = {R, C};
    amp_fft_desc d = {2, shape, shape, 2, dims, lens, AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, 0};
    run(&d, x, y, 1);
    for (int i = 0; i < R; i++) {
        fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, C, C, C, 0, x + i * C, out, 1);
        memcpy(t + i * C, out, sizeof out);
    }
    for (int j = 0; j < C; j++) {
        for (int i = 0; i < R; i++)
            line[i] = t[i * C + j];
        fft1(AMP_FFT_C2C, 0, AMP_FFT_NORM_BACKWARD, R, R, R, 0, line, out, 1);
        for (int i = 0; i < R; i++)
            assert_true(fabs(out[i].re - y[i * C + j].re) < 1e-13 && fabs(out[i].im - y[i * C + j].im) < 1e-13);
    }
    /* rfftn over both, then irfftn back */
    double r[R * 6], back[R * 6];
    amp_c128 h[R * 4];
    for (int i = 0; i < R * 6; i++)
        r[i] = uniform();
    int64_t rs[2] = {R, 6}, hs[2] = {R, 4}, rl[2] = {R, 6};
    amp_fft_desc f = {2, rs, hs, 2, dims, rl, AMP_FFT_R2C, 0, AMP_FFT_NORM_ORTHO, 1};
    amp_fft_desc g = {2, hs, rs, 2, dims, rl, AMP_FFT_C2R, 1, AMP_FFT_NORM_ORTHO, 0};
    run(&f, r, h, 1);
    run(&g, h, back, 1);
    for (int i = 0; i < R * 6; i++)
        assert_true(fabs(back[i] - r[i]) < 1e-14);
}

/* stft against frames taken and transformed by hand: reflect padding, a window */
static void stft_matches_its_definition(void **state)
{
    (void)state;
    enum { L = 20, NF = 8, HOP = 3, WL = 6 };
    double x[L], w[WL], work[L + 10 * NF];
    for (int i = 0; i < L; i++)
        x[i] = uniform();
    for (int i = 0; i < WL; i++)
        w[i] = 0.5 + 0.1 * i;
    int frames = 1 + (L + NF - NF) / HOP, freqs = NF / 2 + 1;
    amp_c128 *y = malloc((size_t)(freqs * frames) * sizeof *y);
    amp_stft_c128(1, L, NF, HOP, WL, w, 1, AMP_PAD_REFLECT, 1, 1, x, y, work);
    for (int t = 0; t < frames; t++) {
        amp_c128 frame[NF];
        long double re[NF], im[NF];
        for (int j = 0; j < NF; j++) {
            int i = t * HOP + j - NF / 2;
            i = i < 0 ? -i : i >= L ? 2 * (L - 1) - i : i;
            int wj = j - (NF - WL) / 2;
            frame[j].re = x[i] * (wj >= 0 && wj < WL ? w[wj] : 0);
            frame[j].im = 0;
        }
        naive(frame, NF, -1, re, im);
        for (int f = 0; f < freqs; f++) {
            const amp_c128 *v = &y[f * frames + t];
            assert_true(fabs(v->re - (double)re[f] / sqrt(NF)) < 1e-14);
            assert_true(fabs(v->im - (double)im[f] / sqrt(NF)) < 1e-14);
        }
    }
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dft_matches_naive_for_every_length),
        cmocka_unit_test(impulse_constant_and_cosine),
        cmocka_unit_test(parseval_and_the_norms),
        cmocka_unit_test(round_trips),
        cmocka_unit_test(c2r_ignores_the_imaginary_dc_and_nyquist),
        cmocka_unit_test(n_pads_and_trims),
        cmocka_unit_test(two_dims_are_successive_lines),
        cmocka_unit_test(stft_matches_its_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
