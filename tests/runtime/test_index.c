/*
 * test_index.c - embedding, index_select, index_copy, gather and
 * scatter_add, every dtype, through the public and the reference table:
 * moves must be bit-exact, scatter_add within the bound of one f32 sum per
 * element (rounded once), out-of-range indices (either side of [0, size),
 * negative ones included, as PyTorch) must return AMP_ERR_TARGET_OUT_OF_RANGE; and gather/scatter_add
 * against PyTorch (torch_spatial.py; skipped, saying so, without torch).
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_RNG_SEED 0x2545f4914f6cdd1dull
#define KTU_F64_FLOOR 0.0L /* no f64 underflow in these tests */
#include "kernel_test_util.h"

static void expect_same_element(const tensor *y, size_t i, const tensor *x, size_t j, const char *what)
{
    size_t es = amp_dtype_size(y->t);
    if (memcmp((const char *)y->data + i * es, (const char *)x->data + j * es, es) != 0)
        fail_msg("%s %s: y[%zu] is not x[%zu]", what, amp_dtype_name(y->t), i, j);
}

static void test_index_select_and_embedding(void **state)
{
    /* outer 2, dim_size 5, inner 3; edge indices 0 and size-1, repeats. */
    static const int64_t index[] = { 0, 4, 4, 0, 2, 2 };
    static const int64_t bad_hi[] = { 0, 5 }, bad_lo[] = { -1, 1 };
    (void)state;
    for (int di = 0; di < NDTYPES; di++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[di];
            tensor x = tensor_random(t, 30, -3, 3), y = tensor_new(t, 2 * 6 * 3), emb = tensor_new(t, 6 * 3);
            int status;
            set(&x, 7, NAN);
            set(&x, 8, -0.0);
            KCALL_STATUS(status, tables[e], t, index_select, 2, 5, 3, 6, x.data, index, y.data);
            assert_int_equal(status, AMP_OK);
            for (int64_t o = 0; o < 2; o++)
                for (int64_t i = 0; i < 6; i++)
                    for (int64_t r = 0; r < 3; r++)
                        expect_same_element(&y, (size_t)((o * 6 + i) * 3 + r), &x,
                                            (size_t)((o * 5 + (index[i] + 5) % 5) * 3 + r), "index_select");
            KCALL_STATUS(status, tables[e], t, embedding, 6, 5, 3, x.data, index, emb.data);
            assert_int_equal(status, AMP_OK);
            for (int64_t i = 0; i < 6; i++)
                for (int64_t r = 0; r < 3; r++)
                    expect_same_element(&emb, (size_t)(i * 3 + r), &x, (size_t)(((index[i] + 5) % 5) * 3 + r),
                                        "embedding");
            KCALL_STATUS(status, tables[e], t, index_select, 2, 5, 3, 2, x.data, bad_hi, y.data);
            assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
            KCALL_STATUS(status, tables[e], t, embedding, 2, 5, 3, x.data, bad_lo, emb.data);
            assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
            KCALL_STATUS(status, tables[e], t, embedding, 0, 5, 3, x.data, NULL, emb.data);
            assert_int_equal(status, AMP_OK); /* no indices: nothing read */
            tensor_free(&x);
            tensor_free(&y);
            tensor_free(&emb);
        }
}

static void test_index_copy(void **state)
{
    /* Repeated index 1: the later source row wins. */
    static const int64_t index[] = { 1, 3, 1 };
    static const int64_t bad[] = { 0, 4 }, bad_negative[] = { -1, 0 };
    (void)state;
    for (int di = 0; di < NDTYPES; di++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[di];
            tensor y = tensor_random(t, 2 * 4 * 2, -3, 3), before = tensor_new(t, y.n);
            tensor src = tensor_random(t, 2 * 3 * 2, -3, 3);
            int status;
            memcpy(before.data, y.data, y.n * amp_dtype_size(t));
            KCALL_STATUS(status, tables[e], t, index_copy, 2, 4, 2, 3, index, src.data, y.data);
            assert_int_equal(status, AMP_OK);
            for (int64_t o = 0; o < 2; o++)
                for (int64_t r = 0; r < 2; r++) {
                    expect_same_element(&y, (size_t)((o * 4 + 0) * 2 + r), &before, (size_t)((o * 4 + 0) * 2 + r),
                                        "index_copy untouched row");
                    expect_same_element(&y, (size_t)((o * 4 + 1) * 2 + r), &src, (size_t)((o * 3 + 2) * 2 + r),
                                        "index_copy last wins");
                    expect_same_element(&y, (size_t)((o * 4 + 2) * 2 + r), &before, (size_t)((o * 4 + 2) * 2 + r),
                                        "index_copy untouched row");
                    expect_same_element(&y, (size_t)((o * 4 + 3) * 2 + r), &src, (size_t)((o * 3 + 1) * 2 + r),
                                        "index_copy");
                }
            KCALL_STATUS(status, tables[e], t, index_copy, 2, 4, 2, 2, bad, src.data, y.data);
            assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
            KCALL_STATUS(status, tables[e], t, index_copy, 2, 4, 2, 2, bad_negative, src.data, y.data);
            assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
            tensor_free(&y);
            tensor_free(&before);
            tensor_free(&src);
        }
}

/* gather and scatter_add over a 3-d shape, along each dim, with an index
 * smaller than x / y in the other dims (as PyTorch allows). */
static void test_gather_and_scatter_add(void **state)
{
    static const int64_t x_shape[3] = { 3, 4, 5 }, index_shape[3] = { 2, 3, 4 };
    (void)state;
    for (int dim = 0; dim < 3; dim++)
        for (int di = 0; di < NDTYPES; di++)
            for (int e = 0; e < NTABLES; e++) {
                amp_dtype t = dtypes[di];
                int64_t size = x_shape[dim], index[24];
                tensor x = tensor_random(t, 60, -3, 3), g = tensor_new(t, 24), src = tensor_random(t, 24, -3, 3);
                tensor y = tensor_random(t, 60, -3, 3), y0 = tensor_new(t, 60);
                int status;
                memcpy(y0.data, y.data, 60 * amp_dtype_size(t));
                for (int i = 0; i < 24; i++)
                    index[i] = (int64_t)floor(uniform(0, 1) * (double)size); /* [0, size) */
                index[0] = size - 1;
                index[1] = 0;
                KCALL_STATUS(status, tables[e], t, gather, 3, index_shape, dim, x.data, x_shape, index, g.data);
                assert_int_equal(status, AMP_OK);
                KCALL_STATUS(status, tables[e], t, scatter_add, 3, index_shape, dim, index, src.data, x_shape, y.data);
                assert_int_equal(status, AMP_OK);
                double oracle[60], sum_abs[60];
                for (int i = 0; i < 60; i++) {
                    oracle[i] = get(&y0, (size_t)i);
                    sum_abs[i] = fabs(oracle[i]);
                }
                for (int64_t a = 0; a < 2; a++)
                    for (int64_t b = 0; b < 3; b++)
                        for (int64_t c = 0; c < 4; c++) {
                            int64_t pos[3] = { a, b, c }, i = (a * 3 + b) * 4 + c;
                            pos[dim] = (index[i] + size) % size;
                            int64_t at = (pos[0] * 4 + pos[1]) * 5 + pos[2];
                            expect_same_element(&g, (size_t)i, &x, (size_t)at, "gather");
                            oracle[at] += get(&src, (size_t)i);
                            sum_abs[at] += fabs(get(&src, (size_t)i));
                        }
                /* One sum per element (at most 5 terms), rounded once. */
                for (int i = 0; i < 60; i++)
                    expect_close(&y, (size_t)i, oracle[i], 6.0 * u_acc(t) * sum_abs[i], "scatter_add");
                index[5] = size;
                KCALL_STATUS(status, tables[e], t, gather, 3, index_shape, dim, x.data, x_shape, index, g.data);
                assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
                index[5] = -1;
                KCALL_STATUS(status, tables[e], t, scatter_add, 3, index_shape, dim, index, src.data, x_shape, y.data);
                assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
                tensor_free(&x);
                tensor_free(&g);
                tensor_free(&src);
                tensor_free(&y);
                tensor_free(&y0);
            }
}

/* Rounding once: 150 contributions of 2^-9 to each of two bf16 elements holding 1.
 * Rounded per addition, 1 + 2^-9 would round back to 1 every time. */
static void test_scatter_add_rounds_once(void **state)
{
    static const int64_t y_shape[1] = { 2 }, index_shape[1] = { 300 };
    int64_t index[300];
    (void)state;
    for (int i = 0; i < 300; i++)
        index[i] = i % 2;
    for (int e = 0; e < NTABLES; e++) {
        tensor y = tensor_new(AMP_BF16, 2), src = tensor_new(AMP_BF16, 300);
        int status;
        set(&y, 0, 1.0);
        set(&y, 1, 1.0);
        for (size_t i = 0; i < 300; i++)
            set(&src, i, 0x1p-9);
        KCALL_STATUS(status, tables[e], AMP_BF16, scatter_add, 1, index_shape, 0, index, src.data, y_shape, y.data);
        assert_int_equal(status, AMP_OK);
        /* Each element gets 150 of them: 1 + 150 * 2^-9 = 1.29296875, which
         * rounds to bf16 1.296875 (spacing 2^-7 here). */
        assert_true(get(&y, 0) == 1.296875);
        assert_true(get(&y, 1) == 1.296875);
        tensor_free(&y);
        tensor_free(&src);
    }
}

static void test_gather_and_scatter_add_against_torch(void **state)
{
    static const int64_t shape[2] = { 3, 4 }, index_shape[2] = { 2, 3 };
    static const int64_t index[6] = { 2, 0, 1, 0, 0, 2 };
    double expected[64];
    (void)state;
    int n = torch_values("gather 0 3 4 2 3 2 0 1 0 0 2", expected, 64);
    if (n < 0)
        skip();
    assert_int_equal(n, 6);
    tensor x = tensor_pattern(AMP_F64, 12, 1), g = tensor_new(AMP_F64, 6);
    assert_int_equal(amp_gather_f64(2, index_shape, 0, x.data, shape, index, g.data), AMP_OK);
    for (size_t i = 0; i < 6; i++)
        expect_close(&g, i, expected[i], 0.0, "gather vs torch");
    n = torch_values("scatter_add 0 3 4 2 3 2 0 1 0 0 2", expected, 64);
    assert_int_equal(n, 12);
    tensor y = tensor_pattern(AMP_F64, 12, 2), src = tensor_pattern(AMP_F64, 6, 1);
    assert_int_equal(amp_scatter_add_f64(2, index_shape, 0, index, src.data, shape, y.data), AMP_OK);
    for (size_t i = 0; i < 12; i++)
        expect_close(&y, i, expected[i], 0.0, "scatter_add vs torch");
    tensor_free(&x);
    tensor_free(&g);
    tensor_free(&y);
    tensor_free(&src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_select_and_embedding),
        cmocka_unit_test(test_index_copy),
        cmocka_unit_test(test_gather_and_scatter_add),
        cmocka_unit_test(test_scatter_add_rounds_once),
        cmocka_unit_test(test_gather_and_scatter_add_against_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
