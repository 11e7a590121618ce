/*
 * test_prelu.c - prelu (amprt/elementwise.h) per channel and with one
 * shared weight, every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts; and fixed cases whose answers were
 * printed by PyTorch 1.13 in float64 (the program does not need torch).
 * Conventions and the error bound: kernel_test_util.h and
 * oracle_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "oracle_test_util.h"

/* ---- prelu ------------------------------------------------------------------ */

static void test_prelu(void **state)
{
    static const int64_t shapes[][3] = { { 2, 3, 4 }, { 1, 1, 1 }, { 0, 3, 2 }, { 3, 5, 0 }, { 4, 16, 33 }, { 1, 4, 1 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int shared = 0; shared < 2; shared++) {
                amp_dtype t = dtypes[d];
                int64_t outer = shapes[s][0], ch = shapes[s][1], inner = shapes[s][2];
                int64_t nw = shared ? 1 : ch;
                size_t n = (size_t)(outer * ch * inner);
                tensor x = tensor_random(t, n, -4, 4), w = tensor_random(t, (size_t)nw, -1, 1), y[NTABLES];
                char what[96];
                /* edge values: NaN, +-inf, signed zeros */
                static const double edge[] = { NAN, INFINITY, -INFINITY, 0.0, -0.0 };
                for (size_t i = 0; i < 5 && i < n; i++)
                    set(&x, i * 3 % n, edge[i]);
                snprintf(what, sizeof what, "prelu [%lld, %lld, %lld] %s weight", (long long)outer, (long long)ch,
                         (long long)inner, shared ? "shared" : "per-channel");
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_random(t, n, 7, 8);
                    KCALL(tables[e], t, prelu, outer, ch, inner, nw, x.data, w.data, y[e].data);
                    for (size_t i = 0; i < n; i++) {
                        long double v = get(&x, i), wc = get(&w, shared ? 0 : (i / (size_t)inner) % (size_t)ch);
                        long double o = isnan(v) ? v : v > 0 ? v : wc * v; /* PReLU(x) = max(0,x) + w min(0,x) */
                        expect_close(&y[e], i, o, finite_or_zero(fabsl(o)) * u_acc(t), what);
                        if (v == 0 && !signbit(get(&x, i)) && wc > 0)
                            assert_false(signbit(get(&y[e], i))); /* +0 stays +0: w * (+0) */
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                tensor_free(&x);
                tensor_free(&w);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* ---- Fixed cases printed by PyTorch 1.13 in float64 ------------------------------
 *
 * Inputs are multiples of 1/8 (or 1/16), exact in every dtype.  Script:
 * torch.set_default_dtype(torch.float64), then the calls named per array. */


/* F.prelu(x [2, 2, 3], w) */
static const double fx_prelu_x[] = { -2.0, -0.5, 0.0, 1.5, -1.0, 3.0, -0.25, 0.75, -4.0, 2.0, -1.5, 0.5 };
static const double fx_prelu_w2[] = { 0.25, -0.5 };
static const double fx_prelu_w1[] = { 0.125 };
static const double fx_prelu_2[] = { -0.5, -0.125, 0.0, 1.5, 0.5, 3.0, -0.0625, 0.75, -1.0, 2.0, 0.75, 0.5 };
static const double fx_prelu_1[] = { -0.25, -0.0625, 0.0, 1.5, -0.125, 3.0, -0.03125, 0.75, -0.5, 2.0, -0.1875, 0.5 };

static void test_prelu_matches_torch(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            tensor y = tensor_new(t, 12), x = tensor_of(t, 12, fx_prelu_x), w2 = tensor_of(t, 2, fx_prelu_w2);
            tensor w1 = tensor_of(t, 1, fx_prelu_w1);
            KCALL(k, t, prelu, 2, 2, 3, 2, x.data, w2.data, y.data);
            expect_all_close(&y, fx_prelu_2, 12, "prelu per channel vs torch");
            KCALL(k, t, prelu, 2, 2, 3, 1, x.data, w1.data, y.data);
            expect_all_close(&y, fx_prelu_1, 12, "prelu shared vs torch");
            tensor_free(&y);
            tensor_free(&x);
            tensor_free(&w2);
            tensor_free(&w1);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_prelu_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
