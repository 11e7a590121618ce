/*
 * test_fastloss.c - the optimized loss and reduction kernels of every
 * kernel set this CPU supports against the reference kernels, bit for bit:
 * cross_entropy (class targets), its backward and the two in one call
 * (cross_entropy_with_grad, x86/avx512_loss.c), and
 * sum (x86/avx512_reduce.c).  They perform the reference's f32 operations
 * in the reference's order, with libm's own expf reproduced exactly, so
 * any difference is a bug; only NaN payloads are free (the reference's
 * compiler may order the operands of a commutative addition either way).
 *
 * Inputs: odd and vector-edge sizes (rows 0..70, classes 1..100), weights
 * or none, ignore_index on some rows or all of them, every reduction,
 * NaN, +-inf, huge logits (exp's slow path), bf16/f16 storage; 1 and 2
 * threads.  And the vector exp itself against expf over a sweep of every
 * 13th float (both signs, all magnitudes).
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
#include "kernel_call.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static float special(void)
{
    static const float v[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, 95.0f, -120.0f, 3e38f, -5e-8f };
    return v[next() % (sizeof v / sizeof v[0])];
}

/* Uniform in [-8, 8], with 1 in `rare` special (0: none). */
static void *random_buf(amp_dtype t, size_t n, unsigned rare)
{
    void *p = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next();
        amp_store_from_f32(t, p, i,
                           rare && r % rare == 1 ? special() : (float)((double)(r >> 11) * 0x1p-53 * 16 - 8));
    }
    return p;
}

static const amp_kernel_table *ref(void) { return &amp_ref_kernel_table; }

static void expect_same(const void *got, const void *want, size_t n, amp_dtype t, const char *isa, const char *what,
                        int64_t N, int64_t C)
{
    size_t es = amp_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        const char *g = (const char *)got + i * es, *w = (const char *)want + i * es;
        double gv = amp_load_as_f32(t, got, i), wv = amp_load_as_f32(t, want, i);
        if (memcmp(g, w, es) == 0 || (isnan(gv) && isnan(wv)))
            continue;
        fail_msg("%s %s %s (N = %lld, C = %lld) differs at [%zu]: %.9g, reference %.9g", isa, what,
                 amp_dtype_name(t), (long long)N, (long long)C, i, gv, wv);
    }
}

static void run_cross_entropy(const amp_kernel_table *k, amp_dtype t, int64_t N, int64_t C, int ignore_mode,
                              int with_weight, unsigned rare)
{
    const size_t es = amp_dtype_size(t);
    void *x = random_buf(t, (size_t)(N * C), rare), *w = random_buf(t, (size_t)C, 0);
    int64_t *target = malloc((size_t)(N ? N : 1) * sizeof *target);
    const int64_t ignore = -100;
    void *y = malloc((size_t)(N + 1) * es), *yr = malloc((size_t)(N + 1) * es);
    void *dx = malloc((size_t)(N * C + 1) * es), *dxr = malloc((size_t)(N * C + 1) * es);
    void *dloss = random_buf(t, (size_t)(N ? N : 1), 0);
    assert_true(target && y && yr && dx && dxr);
    for (int64_t i = 0; i < C; i++) /* positive weights (a few exact zeros) */
        amp_store_from_f32(t, w, (size_t)i, i % 7 == 3 ? 0.0f : fabsf(amp_load_as_f32(t, w, (size_t)i)));
    for (int64_t n = 0; n < N; n++)
        target[n] = ignore_mode == 2 || (ignore_mode == 1 && next() % 5 == 0) ? ignore : (int64_t)(next() % (uint64_t)C);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        for (int red = 0; red < 3; red++) {
            const void *wt = with_weight ? w : NULL;
            const size_t ny = red == AMP_REDUCTION_NONE ? (size_t)N : 1;
            int rc, rcr;
            memset(y, 0x5a, (size_t)(N + 1) * es);
            memset(yr, 0x5a, (size_t)(N + 1) * es);
            rc = KCALLR(k, t, cross_entropy, N, C, 1, x, target, wt, ignore, 0.0, red, y);
            rcr = KCALLR(ref(), t, cross_entropy, N, C, 1, x, target, wt, ignore, 0.0, red, yr);
            assert_int_equal(rc, rcr);
            expect_same(y, yr, ny, t, k->isa, red == 0 ? "cross_entropy none" : red == 1 ? "cross_entropy mean"
                                                                                       : "cross_entropy sum", N, C);
            memset(dx, 0x5a, (size_t)(N * C + 1) * es);
            memset(dxr, 0x5a, (size_t)(N * C + 1) * es);
            if (t == AMP_F32) {
                k->cross_entropy_backward_f32(N, C, 1, x, target, wt, ignore, 0.0, red, dloss, dx);
                ref()->cross_entropy_backward_f32(N, C, 1, x, target, wt, ignore, 0.0, red, dloss, dxr);
            } else if (t == AMP_BF16) {
                k->cross_entropy_backward_bf16(N, C, 1, x, target, wt, ignore, 0.0, red, dloss, dx);
                ref()->cross_entropy_backward_bf16(N, C, 1, x, target, wt, ignore, 0.0, red, dloss, dxr);
            } else {
                k->cross_entropy_backward_f16(N, C, 1, x, target, wt, ignore, 0.0, red, dloss, dx);
                ref()->cross_entropy_backward_f16(N, C, 1, x, target, wt, ignore, 0.0, red, dloss, dxr);
            }
            expect_same(dx, dxr, (size_t)(N * C + 1), t, k->isa, "cross_entropy_backward", N, C);
            /* both in one call: the two results above, bit for bit */
            memset(y, 0x5a, (size_t)(N + 1) * es);
            memset(dx, 0x5a, (size_t)(N * C + 1) * es);
            rc = KCALLR(k, t, cross_entropy_with_grad, N, C, 1, x, target, wt, ignore, 0.0, red, dloss, y, dx);
            assert_int_equal(rc, rcr);
            expect_same(y, yr, rc == AMP_OK ? ny : (size_t)(N + 1), t, k->isa, "cross_entropy_with_grad y", N, C);
            expect_same(dx, dxr, (size_t)(N * C + 1), t, k->isa, "cross_entropy_with_grad dx", N, C);
        }
    }
    free(x);
    free(w);
    free(target);
    free(y);
    free(yr);
    free(dx);
    free(dxr);
    free(dloss);
}

/* A bad target: the same status, nothing written. */
static void run_bad_target(const amp_kernel_table *k)
{
    float x[6 * 3] = { 0 }, y[2] = { 7.0f, 7.0f };
    int64_t target[6] = { 0, 1, 2, -100, 3, 0 };
    assert_int_equal(k->cross_entropy_f32(6, 3, 1, x, target, NULL, -100, 0.0, AMP_REDUCTION_MEAN, y),
                     AMP_ERR_TARGET_OUT_OF_RANGE);
    assert_true(y[0] == 7.0f && y[1] == 7.0f);
    assert_int_equal(k->cross_entropy_f32(6, 3, 1, x, target, NULL, -100, 0.0, 7, y), AMP_ERR_BAD_REDUCTION);
    assert_int_equal(k->cross_entropy_f32(-1, 3, 1, x, target, NULL, -100, 0.0, 0, y), AMP_ERR_BAD_DIM);
    assert_int_equal(k->cross_entropy_f32(2, 3, 1, x, target, NULL, -100, 0.0, 1, NULL), AMP_ERR_NULL_ARG);
    /* the fused call: the forward's status, neither output written */
    float dl = 1.0f, dx[6 * 3];
    for (int i = 0; i < 18; i++)
        dx[i] = 5.0f;
    assert_int_equal(k->cross_entropy_with_grad_f32(6, 3, 1, x, target, NULL, -100, 0.0, AMP_REDUCTION_MEAN, &dl, y, dx),
                     AMP_ERR_TARGET_OUT_OF_RANGE);
    assert_true(y[0] == 7.0f && y[1] == 7.0f);
    for (int i = 0; i < 18; i++)
        assert_true(dx[i] == 5.0f);
    assert_int_equal(k->cross_entropy_with_grad_f32(2, 3, 1, x, target, NULL, -100, 0.0, 1, &dl, NULL, dx),
                     AMP_ERR_NULL_ARG);
}

/* The paths the fast kernels hand to the reference: inner > 1, label
 * smoothing; the same results there too. */
static void run_reference_paths(const amp_kernel_table *k)
{
    float *x = random_buf(AMP_F32, 3 * 5 * 4, 9), y[12], yr[12], dx[60], dxr[60], dl[12];
    int64_t target[12];
    for (int i = 0; i < 12; i++) {
        target[i] = i % 5;
        dl[i] = 1.0f + (float)i;
    }
    assert_int_equal(k->cross_entropy_f32(3, 5, 4, x, target, NULL, -100, 0.0, 0, y), AMP_OK);
    ref()->cross_entropy_f32(3, 5, 4, x, target, NULL, -100, 0.0, 0, yr);
    expect_same(y, yr, 12, AMP_F32, k->isa, "cross_entropy inner 4", 3, 5);
    assert_int_equal(k->cross_entropy_f32(12, 5, 1, x, target, NULL, -100, 0.1, 0, y), AMP_OK);
    ref()->cross_entropy_f32(12, 5, 1, x, target, NULL, -100, 0.1, 0, yr);
    expect_same(y, yr, 12, AMP_F32, k->isa, "cross_entropy smoothing", 12, 5);
    k->cross_entropy_backward_f32(12, 5, 1, x, target, NULL, -100, 0.1, 0, dl, dx);
    ref()->cross_entropy_backward_f32(12, 5, 1, x, target, NULL, -100, 0.1, 0, dl, dxr);
    expect_same(dx, dxr, 60, AMP_F32, k->isa, "cross_entropy_backward smoothing", 12, 5);
    assert_int_equal(k->cross_entropy_with_grad_f32(12, 5, 1, x, target, NULL, -100, 0.1, 0, dl, y, dx), AMP_OK);
    expect_same(y, yr, 12, AMP_F32, k->isa, "cross_entropy_with_grad smoothing y", 12, 5);
    expect_same(dx, dxr, 60, AMP_F32, k->isa, "cross_entropy_with_grad smoothing dx", 12, 5);
    free(x);
}

typedef struct {
    int ndim;
    int64_t shape[4];
    uint8_t reduce[4];
} scase;

static const scase sum_cases[] = {
    { 2, { 64, 10 }, { 1, 0 } },          /* digits' fc2 bias gradient */
    { 2, { 64, 128 }, { 1, 0 } },         /* fc1's */
    { 2, { 33, 129 }, { 1, 0 } },         /* odd, past one 128-column block */
    { 2, { 7, 300 }, { 1, 0 } },
    { 3, { 3, 5, 17 }, { 0, 1, 0 } },     /* kept, reduced, kept */
    { 4, { 2, 3, 4, 5 }, { 1, 1, 0, 0 } },
    { 4, { 2, 3, 4, 5 }, { 0, 1, 1, 0 } },
    { 3, { 4, 6, 1 }, { 0, 1, 0 } },      /* inner 1 */
    { 2, { 9, 13 }, { 0, 1 } },           /* innermost reduced: rows (amp_sum_rows_form) */
    { 4, { 3, 20, 5, 7 }, { 1, 0, 1, 1 } },/* a conv's bias gradient: [R1, O, R2], 2 chain groups + 4 */
    { 4, { 2, 8, 13, 13 }, { 1, 0, 1, 1 } },/* one whole group of chains */
    { 4, { 1, 3, 2, 2 }, { 1, 0, 1, 1 } },/* fewer outputs than chains */
    { 3, { 4, 17, 2 }, { 0, 0, 1 } },     /* [O, R2] with two kept dims */
    { 3, { 6, 1, 9 }, { 1, 0, 1 } },      /* a kept dim of 1 */
    { 2, { 9, 13 }, { 1, 1 } },           /* everything: the reference */
    { 4, { 2, 3, 4, 5 }, { 1, 0, 1, 0 } },/* interleaved: the reference */
    { 2, { 7, 1 }, { 0, 1 } },            /* an innermost 1: the column form */
    { 2, { 5, 7 }, { 0, 0 } },            /* nothing reduced */
    { 0, { 0 }, { 0 } },                  /* a scalar */
    { 2, { 0, 7 }, { 1, 0 } },            /* an empty sum: zeros */
    { 2, { 5, 0 }, { 1, 0 } },            /* no outputs */
    /* from 128 Ki elements the columns split over the pool, in parts of a
     * multiple of 128 columns */
    { 2, { 1576, 768 }, { 1, 0 } },       /* a ViT's bias gradient: 6 parts */
    { 2, { 300, 1003 }, { 1, 0 } },       /* a last part of 107: the tails */
    { 3, { 3, 500, 131 }, { 0, 1, 0 } },  /* 3 blocks of 2 parts (128 + 3) */
    { 2, { 140000, 1 }, { 1, 0 } },       /* one column: one part */
};

static void run_sum(const amp_kernel_table *k, amp_dtype t, const scase *c)
{
    size_t n = 1, ny = 1, es = amp_dtype_size(t);
    for (int d = 0; d < c->ndim; d++) {
        n *= (size_t)c->shape[d];
        if (!c->reduce[d])
            ny *= (size_t)c->shape[d];
    }
    void *x = random_buf(t, n, 13), *y = malloc((ny + 1) * es), *yr = malloc((ny + 1) * es);
    assert_true(y && yr);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memset(y, 0x5a, (ny + 1) * es);
        memset(yr, 0x5a, (ny + 1) * es);
        KCALL(k, t, sum, c->ndim, c->shape, c->reduce, x, y);
        KCALL(ref(), t, sum, c->ndim, c->shape, c->reduce, x, yr);
        expect_same(y, yr, ny + 1, t, k->isa, "sum", (int64_t)n, (int64_t)ny);
    }
    free(x);
    free(y);
    free(yr);
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    static const int64_t rows[] = { 0, 1, 15, 16, 17, 64, 70 };
    static const int64_t classes[] = { 1, 2, 10, 17, 40, 64, 65, 100 };
    if (k == NULL)
        skip();
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
            for (size_t ci = 0; ci < sizeof classes / sizeof classes[0]; ci++) {
                run_cross_entropy(k, types[ti], rows[ri], classes[ci], (int)(ri + ci) % 3, (int)ci & 1, 0);
                run_cross_entropy(k, types[ti], rows[ri], classes[ci], 1, (int)ri & 1, 11);
            }
    run_bad_target(k);
    run_reference_paths(k);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t i = 0; i < sizeof sum_cases / sizeof sum_cases[0]; i++)
            run_sum(k, types[ti], &sum_cases[i]);
    amp_set_threads(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
