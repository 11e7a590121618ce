/*
 * test_glu.c - glu and glu_backward of amprt/elementwise.h and
 * amprt/backward.h, every dtype, through the public and the reference
 * table: along the middle axis of [outer, len, inner] (first, middle and
 * last dim) against a long double oracle of a sigmoid(b), and the gradient
 * against PyTorch's formulas; PyTorch 1.13's numbers for one case.
 * Conventions and the error bound: kernel_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

typedef struct {
    int64_t outer, len, inner;
} split;

static const split splits[] = { { 1, 4, 3 }, { 2, 6, 2 }, { 3, 2, 1 } };

static void test_glu(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int s = 0; s < 3; s++) {
            amp_dtype t = dtypes[d];
            const split *p = &splits[s];
            size_t n = (size_t)(p->outer * p->len * p->inner), half = n / 2;
            int64_t h = p->len / 2;
            tensor x = tensor_random(t, n, -4.0, 4.0), dy = tensor_random(t, half, -1.0, 1.0);
            for (int tb = 0; tb < NTABLES; tb++) {
                tensor y = tensor_new(t, half), dx = tensor_new(t, n);
                KCALL(tables[tb], t, glu, p->outer, p->len, p->inner, x.data, y.data);
                KCALL(tables[tb], t, glu_backward, p->outer, p->len, p->inner, x.data, dy.data, dx.data);
                for (int64_t o = 0; o < p->outer; o++)
                    for (int64_t k = 0; k < h; k++)
                        for (int64_t i = 0; i < p->inner; i++) {
                            size_t at = (size_t)((o * p->len + k) * p->inner + i);
                            size_t bt = (size_t)((o * p->len + h + k) * p->inner + i);
                            size_t yt = (size_t)((o * h + k) * p->inner + i);
                            long double a = get(&x, at), b = get(&x, bt), g = get(&dy, yt);
                            long double sg = 1.0L / (1.0L + expl(-b));
                            /* exp's few ulps, the sum, the quotient and the products */
                            expect_close(&y, yt, a * sg, 8.0L * u_acc(t) * fabsl(a * sg), "glu");
                            expect_close(&dx, at, g * sg, 8.0L * u_acc(t) * fabsl(g * sg), "glu da");
                            expect_close(&dx, bt, (1.0L - sg) * sg * a * g, 16.0L * u_acc(t) * fabsl(a * g),
                                         "glu db");
                        }
                tensor_free(&y);
                tensor_free(&dx);
            }
            tensor_free(&x);
            tensor_free(&dy);
        }
}

/* PyTorch 1.13 (float32): F.glu(torch.tensor([1., -2., 0.5, 3.])) is
 * [0.62245935, -1.9051483]. */
static void test_glu_matches_torch(void **state)
{
    static const double x4[] = { 1.0, -2.0, 0.5, 3.0 };
    (void)state;
    tensor x = tensor_of(AMP_F32, 4, x4), y = tensor_new(AMP_F32, 2);
    KCALL(&public_table, AMP_F32, glu, 1, 4, 1, x.data, y.data);
    assert_true(fabs((double)get(&y, 0) - 0.62245935) < 1e-7 && fabs((double)get(&y, 1) + 1.9051483) < 1e-6);
    tensor_free(&x);
    tensor_free(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glu),
        cmocka_unit_test(test_glu_matches_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
