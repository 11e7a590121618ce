/*
 * test_lerp.c - lerp and lerp_backward of amprt/elementwise.h and
 * amprt/backward.h, every dtype, through the public and the reference
 * table: a tensor weight and a number weight on both sides of 1/2 against
 * a long double oracle of PyTorch's two forms, broadcast operands, the
 * exact ends (weight 0 gives x, weight 1 gives end), and the gradients
 * against their formulas.  Conventions and the error bound:
 * kernel_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

/* [3, 4]: x full, end a row [4] broadcast, weight a column [3, 1]. */
static const int64_t shape[2] = { 3, 4 };
static const int64_t x_stride[2] = { 4, 1 }, end_stride[2] = { 0, 1 }, w_stride[2] = { 1, 0 };

static long double lerp_oracle(long double x, long double e, long double w)
{
    return fabsl(w) < 0.5L ? x + w * (e - x) : e - (e - x) * (1.0L - w);
}

static void test_lerp(void **state)
{
    static const double numbers[] = { 0.25, 0.75, -0.5, 1.5, 0.0, 1.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int k = -1; k < 6; k++) { /* -1: the tensor weight */
            amp_dtype t = dtypes[d];
            tensor x = tensor_random(t, 12, -2.0, 2.0), e = tensor_random(t, 4, -2.0, 2.0);
            tensor w = tensor_random(t, 3, -0.5, 1.5);
            double value = k < 0 ? 0.0 : numbers[k];
            for (int tb = 0; tb < NTABLES; tb++) {
                tensor y = tensor_new(t, 12);
                KCALL(tables[tb], t, lerp, 2, shape, x.data, x_stride, e.data, end_stride, k < 0 ? w.data : NULL,
                      w_stride, value, y.data);
                for (size_t i = 0; i < 12; i++) {
                    long double xv = get(&x, i), ev = get(&e, i % 4), wv = k < 0 ? get(&w, i / 4) : value;
                    long double o = lerp_oracle(xv, ev, wv);
                    /* e - x, the product and the sum: three roundings of terms up to 4 |w| + 4 */
                    expect_close(&y, i, o, 3.0L * u_acc(t) * (4.0L + 4.0L * fabsl(wv) + fabsl(o)), "lerp");
                    if (k == 4)
                        assert_true(get(&y, i) == xv); /* weight 0: x exactly */
                    if (k == 5)
                        assert_true(get(&y, i) == ev); /* weight 1: end exactly */
                }
                tensor_free(&y);
            }
            tensor_free(&x);
            tensor_free(&e);
            tensor_free(&w);
        }
}

static void test_lerp_backward(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int tensor_weight = 0; tensor_weight < 2; tensor_weight++) {
            amp_dtype t = dtypes[d];
            tensor x = tensor_random(t, 12, -2.0, 2.0), e = tensor_random(t, 4, -2.0, 2.0);
            tensor w = tensor_random(t, 3, -0.5, 1.5), dy = tensor_random(t, 12, -1.0, 1.0);
            double value = 0.375;
            for (int tb = 0; tb < NTABLES; tb++) {
                tensor dx = tensor_new(t, 12), de = tensor_new(t, 12), dw = tensor_new(t, 12);
                KCALL(tables[tb], t, lerp_backward, 2, shape, x.data, x_stride, e.data, end_stride,
                      tensor_weight ? w.data : NULL, w_stride, value, dy.data, dx.data, de.data,
                      tensor_weight ? dw.data : NULL);
                for (size_t i = 0; i < 12; i++) {
                    long double g = get(&dy, i), wv = tensor_weight ? get(&w, i / 4) : value;
                    long double xv = get(&x, i), ev = get(&e, i % 4);
                    expect_close(&dx, i, g * (1.0L - wv), 2.0L * u_acc(t) * fabsl(g) * (1.0L + fabsl(wv)), "dx");
                    expect_close(&de, i, g * wv, u_acc(t) * fabsl(g * wv), "dend");
                    if (tensor_weight)
                        expect_close(&dw, i, g * (ev - xv), 2.0L * u_acc(t) * fabsl(g) * (fabsl(ev) + fabsl(xv)),
                                     "dweight");
                }
                tensor_free(&dx);
                tensor_free(&de);
                tensor_free(&dw);
            }
            tensor_free(&x);
            tensor_free(&e);
            tensor_free(&w);
            tensor_free(&dy);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lerp),
        cmocka_unit_test(test_lerp_backward),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
