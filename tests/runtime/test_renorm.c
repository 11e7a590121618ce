/*
 * test_renorm.c - renorm (amprt/reduce.h), every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts; and fixed cases whose answers were
 * printed by PyTorch 1.13 in float64 (the program does not need torch).
 * Conventions and the error bound: kernel_test_util.h and
 * oracle_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "oracle_test_util.h"

/* ---- renorm ------------------------------------------------------------------ */

static long double pnorm_of(const long double *v, size_t n, double p)
{
    long double acc = 0;
    for (size_t i = 0; i < n; i++) {
        long double a = fabsl(v[i]);
        if (isinf(p))
            acc = a > acc ? a : acc;
        else
            acc += powl(a, p);
    }
    return isinf(p) ? acc : powl(acc, 1.0L / p);
}

static void test_renorm(void **state)
{
    static const int64_t shapes[][3] = { { 2, 3, 4 }, { 1, 5, 1 }, { 3, 4, 0 }, { 0, 2, 3 }, { 7, 6, 13 } };
    static const double ps[] = { 2, 1, 3, 0.5, INFINITY };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
                amp_dtype t = dtypes[d];
                int64_t outer = shapes[s][0], len = shapes[s][1], inner = shapes[s][2];
                size_t n = (size_t)(outer * len * inner), m = (size_t)(outer * inner);
                double p = ps[pi], maxnorm;
                tensor x = tensor_new(t, n), y[NTABLES];
                long double *norm = malloc((size_t)len * sizeof *norm), *slice = malloc((m ? m : 1) * sizeof *slice);
                long double lo = INFINITY, hi = 0;
                char what[96];
                assert_non_null(norm);
                assert_non_null(slice);
                /* slices of growing size, so that some exceed maxnorm */
                for (size_t i = 0; i < n; i++)
                    set(&x, i, uniform(-1, 1) * (1 + (double)((i / (size_t)inner) % (size_t)len)));
                for (int64_t l = 0; l < len; l++) {
                    for (int64_t o = 0; o < outer; o++)
                        for (int64_t i = 0; i < inner; i++)
                            slice[o * inner + i] = get(&x, (size_t)((o * len + l) * inner + i));
                    norm[l] = pnorm_of(slice, m, p);
                    lo = fminl(lo, norm[l]);
                    hi = fmaxl(hi, norm[l]);
                }
                /* a maxnorm of 1/64ths between the norms, away from each */
                maxnorm = len ? floor((double)((lo + hi) / 2) * 64) / 64 : 1;
                for (int64_t l = 0; l < len; l++)
                    if (fabsl(norm[l] - maxnorm) < 1e-3L * maxnorm)
                        maxnorm += 1.0 / 64;
                snprintf(what, sizeof what, "renorm [%lld, %lld, %lld] p %g maxnorm %g", (long long)outer,
                         (long long)len, (long long)inner, p, maxnorm);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_random(t, n, 7, 8);
                    KCALL(tables[e], t, renorm, outer, len, inner, p, maxnorm, x.data, y[e].data);
                    for (size_t i = 0; i < n; i++) {
                        long double nl = norm[(i / (size_t)inner) % (size_t)len];
                        long double o = get(&x, i) * (nl > maxnorm ? maxnorm / (nl + 1e-7L) : 1.0L);
                        long double units = ((long double)m + 4) * (p < 1 ? 1 / p : 1) + 3 * p + 8;
                        expect_close(&y[e], i, o, fabsl(o) * (isinf(p) ? 4 : units) * u_acc(t), what);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                free(norm);
                free(slice);
                tensor_free(&x);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* A slice whose norm equals maxnorm is left alone (the test is norm > maxnorm). */
static void test_renorm_at_maxnorm(void **state)
{
    static const double xs[] = { 3.0, 0.5, 4.0, -0.25 }; /* [2, 2]: slices [3, 4] (norm 5) and [0.5, -0.25] */
    static const double ps[] = { 2, INFINITY, 1 }, maxnorms[] = { 5, 4, 7 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int pi = 0; pi < 3; pi++)
            for (int e = 0; e < NTABLES; e++) {
                amp_dtype t = dtypes[d];
                tensor x = tensor_of(t, 4, xs), y = tensor_new(t, 4);
                KCALL(tables[e], t, renorm, 2, 2, 1, ps[pi], maxnorms[pi], x.data, y.data);
                expect_same(&y, &x, "renorm slice norm == maxnorm");
                tensor_free(&x);
                tensor_free(&y);
            }
}

/* ---- Fixed cases printed by PyTorch 1.13 in float64 ------------------------------
 *
 * Inputs are multiples of 1/8 (or 1/16), exact in every dtype.  Script:
 * torch.set_default_dtype(torch.float64), then the calls named per array. */


/* torch.renorm(r [2, 3, 2], p, 1, maxnorm) */
static const double fx_renorm_x[] = { 1.0, -2.0, 0.5, 3.0, -0.25, 0.75, 2.0, -1.0, 1.5, 0.125, -0.5, 2.5 };
static const double fx_renorm_p2[] = { 0.6324555120336764,  -1.264911024067353,  0.29468377878964974, 1.7681026727378986,
                                       -0.1873171552987952, 0.5619514658963856,  1.264911024067353,   -0.6324555120336764,
                                       0.8840513363689493,  0.07367094469741244, -0.3746343105975904, 1.873171552987952 };
static const double fx_renorm_p1[] = { 0.4999999916666668,  -0.9999999833333336, 0.292682921118382,   1.756097526710292,
                                       -0.1874999953125001, 0.5624999859375004,  0.9999999833333336,  -0.4999999916666668,
                                       0.878048763355146,   0.0731707302795955,  -0.3749999906250002, 1.874999953125001 };
static const double fx_renorm_pinf[] = { 0.7499999625000019,   -1.4999999250000038, 0.24999999166666695,
                                         1.4999999500000016,   -0.14999999400000025, 0.44999998200000074,
                                         1.4999999250000038,   -0.7499999625000019, 0.7499999750000008,
                                         0.06249999791666674,  -0.2999999880000005, 1.4999999400000026 };

static void test_renorm_matches_torch(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            tensor y = tensor_new(t, 12);
            tensor tmp;
            tmp = tensor_of(t, 12, fx_renorm_x);
            KCALL(k, t, renorm, 2, 3, 2, 2.0, 2.0, tmp.data, y.data);
            expect_all_close(&y, fx_renorm_p2, 12, "renorm p 2 vs torch");
            KCALL(k, t, renorm, 2, 3, 2, 1.0, 3.0, tmp.data, y.data);
            expect_all_close(&y, fx_renorm_p1, 12, "renorm p 1 vs torch");
            KCALL(k, t, renorm, 2, 3, 2, INFINITY, 1.5, tmp.data, y.data);
            expect_all_close(&y, fx_renorm_pinf, 12, "renorm p inf vs torch");
            tensor_free(&tmp);
            tensor_free(&y);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renorm),
        cmocka_unit_test(test_renorm_at_maxnorm),
        cmocka_unit_test(test_renorm_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
