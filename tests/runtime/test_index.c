/*
 * test_index.c - embedding, index_select, index_copy, gather and
 * scatter_add, every dtype, through the public and the reference table:
 * moves must be bit-exact, scatter_add within the bound of one f32 sum per
 * element (rounded once), out-of-range indices (either side of [0, size),
 * negative ones included, as PyTorch) must return AMP_ERR_TARGET_OUT_OF_RANGE; and gather/scatter_add
 * against PyTorch (torch_spatial.py; skipped, saying so, without torch).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../runtime/src/amprt_internal.h"

/* ---- Kernel tables and calls ------------------------------------------- */

static const amp_kernel_table public_table = {
    .isa = "public",
#define PUBLIC_ENTRY(name, ret, params, args) .name = amp_##name,
    AMP_FOR_EACH_KERNEL(PUBLIC_ENTRY)
#undef PUBLIC_ENTRY
};

static const amp_kernel_table *const tables[] = { &public_table, &amp_ref_kernel_table };
static const amp_dtype dtypes[] = { AMP_F64, AMP_F32, AMP_BF16, AMP_F16 };
#define NTABLES 2
#define NDTYPES 4

/* Call kernel `op` of table k for dtype t (void * buffers convert). */
#define KCALL(k, t, op, ...)                                                                      \
    do {                                                                                          \
        switch (t) {                                                                              \
        case AMP_F64: (k)->op##_f64(__VA_ARGS__); break;                                          \
        case AMP_F32: (k)->op##_f32(__VA_ARGS__); break;                                          \
        case AMP_BF16: (k)->op##_bf16(__VA_ARGS__); break;                                        \
        default: (k)->op##_f16(__VA_ARGS__); break;                                               \
        }                                                                                         \
    } while (0)

#define KCALL_STATUS(status, k, t, op, ...)                                                       \
    do {                                                                                          \
        switch (t) {                                                                              \
        case AMP_F64: (status) = (k)->op##_f64(__VA_ARGS__); break;                               \
        case AMP_F32: (status) = (k)->op##_f32(__VA_ARGS__); break;                               \
        case AMP_BF16: (status) = (k)->op##_bf16(__VA_ARGS__); break;                             \
        default: (status) = (k)->op##_f16(__VA_ARGS__); break;                                    \
        }                                                                                         \
    } while (0)

/* ---- Tensors --------------------------------------------------------------- */

typedef struct {
    amp_dtype t;
    size_t n;
    void *data; /* exactly n elements (one byte when n == 0) */
} tensor;

static tensor tensor_new(amp_dtype t, size_t n)
{
    tensor x;
    x.t = t;
    x.n = n;
    x.data = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(x.data);
    return x;
}

static void tensor_free(tensor *x)
{
    free(x->data);
    x->data = NULL;
}

/* f64 elements are read and written as the doubles they are; the others
 * through the public f32 accessors (exact for bf16/f16/f32). */
static double get(const tensor *x, size_t i)
{
    if (x->t == AMP_F64)
        return ((const double *)x->data)[i];
    return amp_load_as_f32(x->t, x->data, i);
}

static void set(tensor *x, size_t i, double v)
{
    if (x->t == AMP_F64)
        ((double *)x->data)[i] = v;
    else
        amp_store_from_f32(x->t, x->data, i, (float)v);
}

/* xorshift64*, fixed seed: failures reproduce. */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static double uniform(double lo, double hi)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return lo + (hi - lo) * (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53;
}

static tensor tensor_random(amp_dtype t, size_t n, double lo, double hi)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, uniform(lo, hi));
    return x;
}

/* Small multiples of 1/8, exact in every dtype, and the same formula as
 * torch_spatial.py's inputs(), so that PyTorch sees the same tensors. */
static double pattern_value(size_t i, int salt)
{
    return (double)((int)((i * 7919u + (size_t)salt * 131u) % 23u) - 11) / 8.0;
}

static tensor tensor_pattern(amp_dtype t, size_t n, int salt)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, pattern_value(i, salt));
    return x;
}

/* ---- The error bound (test_kernels.c's, with f64 added) ----------------- */

#define U_F32 0x1p-24
#define U_F64 0x1p-53

static double unit_roundoff(amp_dtype t)
{
    return t == AMP_F64 ? U_F64 : t == AMP_F32 ? U_F32 : t == AMP_BF16 ? 0x1p-8 : 0x1p-11;
}

/* The unit roundoff of the compute type: f64 for f64, f32 otherwise. */
static double acc_unit(amp_dtype t)
{
    return t == AMP_F64 ? U_F64 : U_F32;
}

static double underflow_floor(amp_dtype t)
{
    return t == AMP_F64 ? 0.0 : /* no f64 underflow in these tests */ t == AMP_F32 ? 0x1p-150 : t == AMP_BF16 ? 0x1p-134 : 0x1p-25;
}

/*  |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T; NaN matches NaN. */
static int close_to(amp_dtype t, double y, double oracle, double acc)
{
    double u = unit_roundoff(t);
    if (isnan(oracle))
        return isnan(y);
    if (isinf(oracle))
        return y == oracle;
    return fabs(y - oracle) <= u * fabs(oracle) + (1.0 + u) * acc + underflow_floor(t);
}

static void expect_close(const tensor *y, size_t i, double oracle, double acc, const char *what)
{
    double v = get(y, i);
    if (!close_to(y->t, v, oracle, acc))
        fail_msg("%s %s [%zu]: got %.17g, oracle %.17g, bound %.3g", what, amp_dtype_name(y->t), i, v, oracle,
                 unit_roundoff(y->t) * fabs(oracle) + acc + underflow_floor(y->t));
}


/* ---- PyTorch ------------------------------------------------------------------ */

/* Runs `/usr/bin/python3 torch_spatial.py args` (the script beside this
 * file) and reads the numbers it prints into out[0..max). Returns the
 * count, or -1 after print_message when python3, the script or torch is
 * missing (the caller then skips). */
static int torch_values(const char *args, double *out, int max)
{
    char dir[1024], cmd[2048];
    const char *slash = strrchr(__FILE__, '/');
    FILE *p;
    int n = 0, status;
    size_t len = slash ? (size_t)(slash - __FILE__) : 1;
    snprintf(dir, sizeof dir, "%.*s", (int)len, slash ? __FILE__ : ".");
    snprintf(cmd, sizeof cmd, "%s/torch_spatial.py", dir);
    FILE *script = fopen(cmd, "r");
    if (script == NULL || access("/usr/bin/python3", X_OK) != 0) {
        if (script)
            fclose(script);
        print_message("SKIPPED: /usr/bin/python3 or %s missing (run from the repository root); "
                      "PyTorch case \"%s\" not checked\n",
                      cmd, args);
        return -1;
    }
    fclose(script);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/torch_spatial.py %s", dir, args);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (n < max && fscanf(p, "%lf", &out[n]) == 1)
        n++;
    status = pclose(p);
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        print_message("SKIPPED: /usr/bin/python3 has no torch; PyTorch case \"%s\" not checked\n", args);
        return -1;
    }
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return n;
}

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
                    expect_close(&y, (size_t)i, oracle[i], 6.0 * acc_unit(t) * sum_abs[i], "scatter_add");
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
