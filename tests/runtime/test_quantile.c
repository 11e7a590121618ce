/*
 * test_quantile.c - quantile (amprt/reduce.h) in every dtype, through the
 * public and the reference tables, against an independent double oracle
 * (kernel_test_util.h's bound), and PyTorch's numbers for fixed cases
 * (computed by torch 1.13 in float64 on pattern_value inputs, embedded
 * below).
 */
#include <stdbool.h>

#include "kernel_test_util.h"

/* ---- quantile --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* PyTorch's quantile of v[0..n) (NaNs included), as amprt/reduce.h says. */
static double quantile_oracle(const double *v, int64_t n, double q, int interp, int ignore_nan, amp_dtype t)
{
    double s[64];
    int64_t m = 0;
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(v[i]))
            nan = 1;
        else
            s[m++] = v[i];
    }
    if ((nan && !ignore_nan) || m == 0)
        return NAN;
    qsort(s, (size_t)m, sizeof s[0], cmp_double);
    /* the rank in the compute type, as the kernel (and PyTorch) */
    double rank = t == AMP_F64 ? q * (double)(m - 1) : (double)((float)q * (float)(m - 1));
    if (interp == AMP_QUANTILE_LOWER)
        rank = floor(rank);
    else if (interp == AMP_QUANTILE_HIGHER)
        rank = ceil(rank);
    else if (interp == AMP_QUANTILE_NEAREST)
        rank = nearbyint(rank);
    int64_t lo = (int64_t)floor(rank), hi = (int64_t)ceil(rank);
    if (hi > m - 1)
        hi = m - 1;
    if (interp == AMP_QUANTILE_MIDPOINT)
        return (s[lo] + s[hi]) / 2;
    if (interp == AMP_QUANTILE_LINEAR)
        return s[lo] + (rank - (double)lo) * (s[hi] - s[lo]);
    return s[lo];
}

static void quantile_matches_oracle(void **state)
{
    (void)state;
    const int64_t outer = 2, len = 9, inner = 3;
    double work[9];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_random(t, (size_t)(outer * len * inner), -3, 3);
        set(&x, 4, NAN);                        /* slice (0, 1) holds a NaN */
        for (int64_t l = 0; l < len; l++)       /* slice (1, 2) is all NaN */
            set(&x, (size_t)((len + l) * inner + 2), NAN);
        static const double qs[] = {0, 0.3, 0.5, 0.875, 1};
        for (int qi = 0; qi < 5; qi++)
            for (int interp = 0; interp < 5; interp++)
                for (int ign = 0; ign < 2; ign++) {
                    tensor y[NTABLES];
                    for (int k = 0; k < NTABLES; k++) {
                        y[k] = tensor_new(t, (size_t)(outer * inner));
                        KCALL(tables[k], t, quantile, outer, len, inner, qs[qi], interp, ign, x.data, work, y[k].data);
                        for (int64_t o = 0; o < outer; o++)
                            for (int64_t i = 0; i < inner; i++) {
                                double v[9], mx = 0;
                                for (int64_t l = 0; l < len; l++) {
                                    v[l] = get(&x, (size_t)((o * len + l) * inner + i));
                                    if (!isnan(v[l]) && fabs(v[l]) > mx)
                                        mx = fabs(v[l]);
                                }
                                double want = quantile_oracle(v, len, qs[qi], interp, ign, t);
                                expect_close(&y[k], (size_t)(o * inner + i), want, 8 * u_acc(t) * mx, "quantile");
                            }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    for (int k = 0; k < NTABLES; k++)
                        tensor_free(&y[k]);
                }
        tensor_free(&x);
    }
}

/* torch.quantile of pattern_value(i, 9), i < 10, at q 0, 0.3, 0.45, 0.5, 1 */
static void quantile_matches_pytorch(void **state)
{
    (void)state;
    static const double want[5][5] = {
        {-1.375, -0.70000000000000007, -0.23750000000000004, -0.125, 1.125},
        {-1.375, -0.875, -0.25, -0.25, 1.125},
        {-1.375, -0.625, 0, 0, 1.125},
        {-1.375, -0.75, -0.125, -0.125, 1.125},
        {-1.375, -0.625, -0.25, -0.25, 1.125},
    };
    static const double qs[] = {0, 0.3, 0.45, 0.5, 1};
    double work[10];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_pattern(t, 10, 9), y = tensor_new(t, 1);
        for (int k = 0; k < NTABLES; k++)
            for (int interp = 0; interp < 5; interp++)
                for (int qi = 0; qi < 5; qi++) {
                    KCALL(tables[k], t, quantile, 1, 10, 1, qs[qi], interp, 0, x.data, work, y.data);
                    expect_close(&y, 0, want[interp][qi], 16 * u_acc(t), "torch quantile");
                }
        tensor_free(&x);
        tensor_free(&y);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantile_matches_oracle),
        cmocka_unit_test(quantile_matches_pytorch),
    };
    return cmocka_run_group_tests_name("quantile", tests, NULL, NULL);
}
