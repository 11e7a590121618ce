/*
 * test_construct.c - the constructors (full, arange, linspace, eye,
 * one_hot) and tri of amprt/elementwise.h, through the public and the
 * reference tables, in every dtype they take: against values worked out
 * here (exact: each is one rounding of a double, or PyTorch's linspace
 * steps in the narrow type) and PyTorch's own numbers for linspace in f16.
 */
#include <stdbool.h>
#include <string.h>

#include "kernel_test_util.h"

static const amp_dtype all_dtypes[] = { AMP_F64, AMP_F32, AMP_BF16, AMP_F16, AMP_I64, AMP_I32, AMP_BOOL };
#define NALL (int)(sizeof all_dtypes / sizeof all_dtypes[0])

/* Element i of y (dtype t) as a double. */
static double elem(amp_dtype t, const void *y, size_t i)
{
    switch (t) {
    case AMP_F64: return ((const double *)y)[i];
    case AMP_F32: return ((const float *)y)[i];
    case AMP_BF16: return amp_bf16_to_f32(((const amp_bf16 *)y)[i]);
    case AMP_F16: return amp_f16_to_f32(((const amp_f16 *)y)[i]);
    case AMP_I64: return (double)((const int64_t *)y)[i];
    case AMP_I32: return ((const int32_t *)y)[i];
    case AMP_BOOL: return ((const uint8_t *)y)[i];
    default: fail_msg("no such dtype"); return 0;
    }
}

/* v as dtype t holds it: truncated for integers, rounded for floats. */
static double as_dtype(amp_dtype t, double v)
{
    switch (t) {
    case AMP_F64: return v;
    case AMP_F32: return (float)v;
    case AMP_BF16: return amp_bf16_to_f32(amp_f32_to_bf16((float)v));
    case AMP_F16: return amp_f16_to_f32(amp_f32_to_f16((float)v));
    case AMP_I64: case AMP_I32: return (double)(int64_t)v;
    case AMP_BOOL: return v != 0;
    default: return 0;
    }
}

static void test_full_arange_eye(void **state)
{
    (void)state;
    double buf[64];
    for (int d = 0; d < NALL; d++)
        for (int k = 0; k < NTABLES; k++) {
            amp_dtype t = all_dtypes[d];
            tables[k]->full(t, 7, -2.75, buf);
            for (size_t i = 0; i < 7; i++)
                assert_true(elem(t, buf, i) == as_dtype(t, -2.75));
            tables[k]->arange(t, 9, 1.5, -0.375, buf);
            for (size_t i = 0; i < 9; i++)
                assert_true(elem(t, buf, i) == as_dtype(t, 1.5 - 0.375 * (double)i));
            tables[k]->eye(t, 3, 5, buf);
            for (size_t i = 0; i < 15; i++)
                assert_true(elem(t, buf, i) == (i / 5 == i % 5));
        }
}

static void test_linspace(void **state)
{
    (void)state;
    double buf[64];
    for (int d = 0; d < NALL; d++)
        for (int k = 0; k < NTABLES; k++) {
            amp_dtype t = all_dtypes[d];
            /* both ends exact, the middle symmetric */
            tables[k]->linspace(t, 11, -1, 4, buf);
            assert_true(elem(t, buf, 0) == as_dtype(t, -1));
            assert_true(elem(t, buf, 10) == as_dtype(t, 4));
            if (t == AMP_F64 || t == AMP_F32)
                for (size_t i = 0; i < 11; i++)
                    assert_true(fabs(elem(t, buf, i) - (-1 + 0.5 * (double)i)) <= 1e-6);
            tables[k]->linspace(t, 1, 3, 9, buf);
            assert_true(elem(t, buf, 0) == as_dtype(t, 3));
        }
    /* torch.linspace(0, 1, 7, dtype=torch.float16), PyTorch 1.13 CPU */
    static const double want[7] = { 0.0, 0.1666259765625, 0.333251953125, 0.5, 0.6669921875, 0.83349609375, 1.0 };
    for (int k = 0; k < NTABLES; k++) {
        tables[k]->linspace(AMP_F16, 7, 0, 1, buf);
        for (size_t i = 0; i < 7; i++)
            if (elem(AMP_F16, buf, i) != want[i])
                fail_msg("linspace f16 [%zu]: %.17g, PyTorch %.17g", i, elem(AMP_F16, buf, i), want[i]);
    }
}

static void test_one_hot(void **state)
{
    (void)state;
    const int64_t idx[4] = { 2, 0, 4, 2 };
    int64_t y[20];
    for (int k = 0; k < NTABLES; k++) {
        assert_int_equal(tables[k]->one_hot(4, 5, idx, y), AMP_OK);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++)
                assert_int_equal(y[i * 5 + j], idx[i] == j);
        const int64_t bad[2][2] = { { 1, 5 }, { -1, 0 } };
        for (int b = 0; b < 2; b++) {
            for (int i = 0; i < 20; i++)
                y[i] = 7;
            assert_int_equal(tables[k]->one_hot(2, 5, bad[b], y), AMP_ERR_TARGET_OUT_OF_RANGE);
            for (int i = 0; i < 20; i++)
                assert_int_equal(y[i], 7);
        }
    }
}

static void test_tri(void **state)
{
    (void)state;
    static const size_t sizes[] = { 1, 2, 4, 8 };
    enum { B = 2, R = 3, C = 4 };
    unsigned char x[B * R * C * 8], y[B * R * C * 8];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int upper = 0; upper < 2; upper++)
            for (int64_t diag = -3; diag <= 4; diag++)
                for (int k = 0; k < NTABLES; k++) {
                    size_t es = sizes[s];
                    for (size_t i = 0; i < sizeof x; i++)
                        x[i] = (unsigned char)(rng_next() | 1);
                    tables[k]->tri(es, B, R, C, diag, upper, x, y);
                    for (int b = 0; b < B; b++)
                        for (int i = 0; i < R; i++)
                            for (int j = 0; j < C; j++) {
                                size_t at = (size_t)((b * R + i) * C + j) * es;
                                bool keep = upper ? j - i >= diag : j - i <= diag;
                                for (size_t q = 0; q < es; q++)
                                    if (y[at + q] != (keep ? x[at + q] : 0))
                                        fail_msg("tri upper=%d diagonal=%lld size %zu at (%d, %d, %d)", upper,
                                                 (long long)diag, es, b, i, j);
                            }
                    /* in place */
                    memcpy(y, x, sizeof x);
                    tables[k]->tri(es, B, R, C, diag, upper, y, y);
                    for (size_t i = 0; i < (size_t)(B * R * C) * es; i++) {
                        size_t e = i / es;
                        int j = (int)(e % C), r = (int)(e / C % R);
                        bool keep = upper ? j - r >= diag : j - r <= diag;
                        assert_true(y[i] == (keep ? x[i] : 0));
                    }
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_arange_eye),
        cmocka_unit_test(test_linspace),
        cmocka_unit_test(test_one_hot),
        cmocka_unit_test(test_tri),
    };
    return cmocka_run_group_tests_name("construct", tests, NULL, NULL);
}
