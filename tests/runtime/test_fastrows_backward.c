/*
 * test_fastrows_backward.c - the gradients of a transformer's rows in the
 * optimized kernel sets (x86/avx2_rows.c, x86/avx512_rows.c):
 * softmax_backward, log_softmax_backward, layer_norm_backward (dx,
 * dweight, dbias), the two gelu_backward forms and dropout (its own
 * gradient: the same draws), of every set this CPU supports, against the reference kernels, bit for bit (a NaN matching
 * any NaN: see expect_same).  The sets perform the reference's f32
 * operations in its order (a row added up in 16 lanes folded in halves,
 * amp_mathf.h; a parameter's gradient summed over the rows in row order;
 * exp, erf and tanh as amp_expf, amp_erff, amp_tanhf; Philox's integer
 * operations), so any other difference is a bug.
 *
 * Inputs mix ordinary values with large ones (exp underflows, erf and
 * tanh saturate), +-0, -inf, subnormals and special_buf's NaN payloads
 * and raw bit patterns; row lengths are odd and even, shorter and longer
 * than a vector, a ViT's 197 and BERT's 768, long enough for the pool
 * (1 and 2 threads give the same bits); every storage dtype, parameters
 * in f32, bf16 and the storage dtype, with and without weight, dweight
 * and dbias; dropout at p 0, 1 and between, odd lengths, in place.  Each
 * x86 set must override all six kernels (expect_overrides).
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

#include <cmocka.h>

#include "isa_under_test.h"

#include "../../runtime/src/amprt_internal.h"

#define BITEXACT_TEST_SEED 0x2545f4914f6cdd1dull
/* its generator and special values; not its pooling cases */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "bitexact_test_util.h"
#pragma GCC diagnostic pop

static const amp_kernel_table *ref(void) { return &amp_ref_kernel_table; }

/* Bit for bit, except that a NaN matches any NaN: of two NaN operands,
 * which one a sum or product passes on depends on the operand order the
 * compiler picked for the reference (C leaves it open). */
static void expect_same(const void *got, const void *want, amp_dtype t, size_t n, const char *isa, const char *what,
                        int64_t len)
{
    const size_t es = amp_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        const double gv = amp_load_as_f32(t, got, i), wv = amp_load_as_f32(t, want, i);
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0 || (isnan(gv) && isnan(wv)))
            continue;
        fail_msg("%s %s %s (row length %lld) differs at [%zu]: %.9g, reference %.9g", isa, what, amp_dtype_name(t),
                 (long long)len, i, gv, wv);
    }
}

/* rows of four kinds by row index: 0 ordinary values in [-scale, scale];
 * 1 in [-120, 120]; 2 with -inf, +-0 and subnormals mixed in; 3
 * special_buf's mix (NaN payloads, +-inf, raw bit patterns) */
static void *rows_buf(amp_dtype t, int64_t rows, int64_t len, float scale)
{
    void *p = special_buf(t, (size_t)(rows * len), 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < len && r % 4 != 3; i++) {
            const uint64_t u = next();
            float v = (float)((double)(u >> 11) * 0x1p-53 * 2 - 1) * (r % 4 == 1 ? 120.0f : scale);
            if (r % 4 == 2 && u % 8 == 0) {
                static const float odd[] = { -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-41f, 1e-45f, -1e-45f, 2e-38f };
                v = odd[(u >> 3) % 8];
            }
            amp_store_from_f32(t, p, (size_t)(r * len + i), v);
        }
    return p;
}

static void *out_buf(amp_dtype t, size_t n)
{
    void *p = malloc(n * amp_dtype_size(t) + 1);
    assert_non_null(p);
    memset(p, 0x5a, n * amp_dtype_size(t) + 1);
    return p;
}

/* ---- softmax_backward, log_softmax_backward -------------------------------------- */

static void run_softmax_backward(const amp_kernel_table *k, amp_dtype t, int64_t outer, int64_t dim, int64_t inner)
{
    const size_t n = (size_t)(outer * dim * inner);
    /* y as a softmax's output (in [0, 1]) and as a log_softmax's (<= 0) */
    void *y = rows_buf(t, outer * inner, dim, 1.0f), *ylog = rows_buf(t, outer * inner, dim, 12.0f);
    void *dy = rows_buf(t, outer * inner, dim, 4.0f), *got = out_buf(t, n), *want = out_buf(t, n);
    for (size_t i = 0; i < n; i++) {
        const float v = amp_load_as_f32(t, y, i), w = amp_load_as_f32(t, ylog, i);
        if (v == v && fabsf(v) <= 1.0f)
            amp_store_from_f32(t, y, i, fabsf(v));
        if (w == w && fabsf(w) <= 12.0f)
            amp_store_from_f32(t, ylog, i, -fabsf(w));
    }
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, softmax_backward, outer, dim, inner, y, dy, got);
        KCALL(ref(), t, softmax_backward, outer, dim, inner, y, dy, want);
        expect_same(got, want, t, n, k->isa, "softmax_backward", dim);
        KCALL(k, t, log_softmax_backward, outer, dim, inner, ylog, dy, got);
        KCALL(ref(), t, log_softmax_backward, outer, dim, inner, ylog, dy, want);
        expect_same(got, want, t, n, k->isa, "log_softmax_backward", dim);
    }
    /* dx over dy, as an in-place gradient */
    memcpy(got, dy, n * amp_dtype_size(t));
    KCALL(k, t, softmax_backward, outer, dim, inner, y, got, got);
    KCALL(ref(), t, softmax_backward, outer, dim, inner, y, dy, want);
    expect_same(got, want, t, n, k->isa, "softmax_backward in place", dim);
    free(y);
    free(ylog);
    free(dy);
    free(got);
    free(want);
}

/* ---- layer_norm_backward ---------------------------------------------------------
 * which: bit 0 weight, bit 1 dweight, bit 2 dbias */
static void run_layer_norm_backward(const amp_kernel_table *k, amp_dtype t, amp_dtype pt, int64_t outer,
                                    int64_t inner, int which, double eps)
{
    const size_t n = (size_t)(outer * inner), np = (size_t)inner;
    void *x = rows_buf(t, outer, inner, 8.0f), *dy = rows_buf(t, outer, inner, 4.0f);
    void *w = which & 1 ? special_buf(pt, np, 0) : NULL;
    void *got = out_buf(t, n), *want = out_buf(t, n);
    void *gdw = out_buf(pt, np), *wdw = out_buf(pt, np), *gdb = out_buf(pt, np), *wdb = out_buf(pt, np);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, layer_norm_backward, outer, inner, x, pt, w, eps, dy, got, which & 2 ? gdw : NULL,
              which & 4 ? gdb : NULL);
        KCALL(ref(), t, layer_norm_backward, outer, inner, x, pt, w, eps, dy, want, which & 2 ? wdw : NULL,
              which & 4 ? wdb : NULL);
        expect_same(got, want, t, n, k->isa, "layer_norm_backward dx", inner);
        if (pt == AMP_F64) { /* the reference's path; its f64 sums compared by value */
            if (which & 2)
                assert_memory_equal(gdw, wdw, np * 8);
            if (which & 4)
                assert_memory_equal(gdb, wdb, np * 8);
            continue;
        }
        if (which & 2)
            expect_same(gdw, wdw, pt, np, k->isa, "layer_norm_backward dweight", inner);
        if (which & 4)
            expect_same(gdb, wdb, pt, np, k->isa, "layer_norm_backward dbias", inner);
    }
    free(x);
    free(dy);
    free(w);
    free(got);
    free(want);
    free(gdw);
    free(wdw);
    free(gdb);
    free(wdb);
}

/* ---- gelu_backward, gelu_tanh_backward -------------------------------------------- */

static void run_gelu_backward(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    void *x = rows_buf(t, 4, (int64_t)(n / 4 + 1), 8.0f), *dy = special_buf(t, n, 0);
    void *got = out_buf(t, n), *want = out_buf(t, n);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, gelu_backward, n, x, NULL, dy, got);
        KCALL(ref(), t, gelu_backward, n, x, NULL, dy, want);
        expect_same(got, want, t, n, k->isa, "gelu_backward", (int64_t)n);
        KCALL(k, t, gelu_tanh_backward, n, x, NULL, dy, got);
        KCALL(ref(), t, gelu_tanh_backward, n, x, NULL, dy, want);
        expect_same(got, want, t, n, k->isa, "gelu_tanh_backward", (int64_t)n);
    }
    free(x);
    free(dy);
    free(got);
    free(want);
}

/* every f32 in [-6, 6] 2^-13 apart, dy 1 and a ramp, and around erf's
 * and tanh's branch points (as test_fasteltwise's gelu sweep): both forms
 * bit for bit everywhere */
static void run_gelu_backward_sweep(const amp_kernel_table *k)
{
    const size_t n = 98304 + 64;
    float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float));
    float *got = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    assert_non_null(x);
    assert_non_null(dy);
    assert_non_null(got);
    assert_non_null(want);
    for (size_t i = 0; i < 98304; i++) {
        x[i] = -6.0f + (float)i * 0x1p-13f;
        dy[i] = i % 2 ? 1.0f : (float)i * 0x1p-16f - 0.75f;
    }
    for (size_t i = 0; i < 64; i++) {
        static const float at[] = { 1.41421354f, 5.65685415f, 28.2842712f, 20.0f };
        x[98304 + i] = nextafterf(at[i % 4], i % 8 < 4 ? 0.0f : 100.0f) * (i % 16 < 8 ? 1.0f : -1.0f);
        dy[98304 + i] = 1.0f;
    }
    k->gelu_backward_f32(n, x, NULL, dy, got);
    ref()->gelu_backward_f32(n, x, NULL, dy, want);
    expect_same(got, want, AMP_F32, n, k->isa, "gelu_backward sweep", (int64_t)n);
    k->gelu_tanh_backward_f32(n, x, NULL, dy, got);
    ref()->gelu_tanh_backward_f32(n, x, NULL, dy, want);
    expect_same(got, want, AMP_F32, n, k->isa, "gelu_tanh_backward sweep", (int64_t)n);
    free(x);
    free(dy);
    free(got);
    free(want);
}

/* ---- dropout (its own gradient: the same kernel on dy) ---------------------------- */

static void run_dropout(const amp_kernel_table *k, amp_dtype t, size_t n, double p, uint64_t seed, uint64_t stream,
                        uint64_t offset)
{
    void *x = special_buf(t, n, 0), *got = out_buf(t, n), *want = out_buf(t, n);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, dropout, n, x, p, seed, stream, offset, got);
        KCALL(ref(), t, dropout, n, x, p, seed, stream, offset, want);
        expect_same(got, want, t, n, k->isa, "dropout", (int64_t)n);
    }
    memcpy(got, x, n * amp_dtype_size(t)); /* in place */
    KCALL(k, t, dropout, n, got, p, seed, stream, offset, got);
    expect_same(got, want, t, n, k->isa, "dropout in place", (int64_t)n);
    free(x);
    free(got);
    free(want);
}

static void run_dropouts(const amp_kernel_table *k, amp_dtype t)
{
    static const size_t lengths[] = { 0, 1, 15, 17, 63, 64, 65, 1000, 300001 };
    static const double ps[] = { 0.1, 0.5, 0.0, 1.0, 0.999, 1e-9 };
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
            run_dropout(k, t, lengths[li], ps[pi], 0x0123456789abcdefull + li, pi * 77, (uint64_t)li << 40 | pi);
}

/* The x86 sets' own kernels: a set that left one to the reference would
 * pass the comparisons while running it slowly. */
static void expect_overrides(const amp_kernel_table *k)
{
    const amp_kernel_table *r = ref();
#define CHECK_T(T)                                                                                \
    assert_true(k->softmax_backward_##T != r->softmax_backward_##T &&                             \
                k->log_softmax_backward_##T != r->log_softmax_backward_##T &&                     \
                k->layer_norm_backward_##T != r->layer_norm_backward_##T &&                       \
                k->gelu_backward_##T != r->gelu_backward_##T &&                                   \
                k->gelu_tanh_backward_##T != r->gelu_tanh_backward_##T && k->dropout_##T != r->dropout_##T);
    CHECK_T(f32)
    CHECK_T(bf16)
    CHECK_T(f16)
#undef CHECK_T
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    static const int64_t dims[] = { 1, 7, 15, 16, 17, 33, 128, 197, 768, 1000, 4111 };
    static const size_t lengths[] = { 0, 1, 15, 16, 17, 33, 1000, 300001 };
    if (k == NULL)
        skip();
    if (strncmp(isa, "avx", 3) == 0)
        expect_overrides(k);
    if (k->gelu_backward_f32 == ref()->gelu_backward_f32) { /* the reference's own: nothing to compare */
        printf("   %s: the reference's kernels, nothing to compare\n", isa);
        return;
    }
    run_gelu_backward_sweep(k);
    for (size_t ti = 0; ti < 3; ti++) {
        const amp_dtype t = types[ti];
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            run_softmax_backward(k, t, 9, dims[di], 1);
            run_layer_norm_backward(k, t, AMP_F32, 9, dims[di], 7, 1e-5);
        }
        run_softmax_backward(k, t, 2, 5, 3);         /* inner axis: the reference's */
        run_softmax_backward(k, t, 197 * 4, 197, 1); /* pooled: a ViT's attention rows */
        run_layer_norm_backward(k, t, AMP_F32, 197, 768, 7, 1e-6); /* pooled, both passes */
        run_layer_norm_backward(k, t, t, 300, 100, 6, 1e-12);      /* no weight */
        run_layer_norm_backward(k, t, AMP_BF16, 6, 77, 3, 1e-5);   /* no dbias */
        run_layer_norm_backward(k, t, AMP_F16, 5, 300, 5, 1e-5);   /* no dweight */
        run_layer_norm_backward(k, t, AMP_F32, 4, 50, 1, 1e-5);    /* dx alone */
        run_layer_norm_backward(k, t, AMP_F64, 3, 40, 7, 1e-5);    /* f64 parameters: the reference's path */
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            run_gelu_backward(k, t, lengths[li]);
        run_dropouts(k, t);
    }
    amp_set_threads(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
