/*
 * test_fasteltwise.c - the optimized kernels between the convolutions
 * (relu, add, sub, mul, div, clamp and hardtanh, batch_norm with running
 * statistics and in training, the f32 <-> bf16/f16 casts, max_pool and its
 * backward) and of a transformer's rows (softmax,
 * layer_norm, gelu, gelu_tanh) of every kernel set this CPU
 * supports, against the reference kernels, bit for bit: the optimized kernels perform the same
 * f32 operations in the same order with the same one rounding, so any
 * difference is a bug.  Inputs mix ordinary values with the cases a
 * vector rewrite gets wrong: NaN (with payloads), +-inf, +-0, subnormals,
 * values that round up on narrowing; lengths are odd and span the vector
 * tails and the pool's chunking (1 and 2 threads give the same bits).
 * And the data movement on the pool (copy_strided, fill), byte for byte.
 * And every optimized set (the x86 and the NEON ones) overrides each
 * kernel a network runs between its products (expect_overrides).
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

#define BITEXACT_TEST_SEED 0x9e3779b97f4a7c15ull
#include "bitexact_test_util.h"

static void *random_buf(amp_dtype t, size_t n) { return special_buf(t, n, 0); }


static const amp_kernel_table *ref(void) { return &amp_ref_kernel_table; }

/* Bit for bit; where nan_any, a NaN matches any NaN: when both operands of
 * an addition are NaN, which payload the sum carries depends on the
 * operand order the compiler picked for the reference (C leaves it open),
 * so only the NaN-ness of such elements is the kernels' contract. */
static void expect_same(const void *got, const void *want, size_t bytes, const char *isa, const char *what,
                        amp_dtype t, size_t n, int nan_any)
{
    size_t es = amp_dtype_size(t);
    for (size_t i = 0; i < bytes / es; i++) {
        const char *g = (const char *)got + i * es, *w = (const char *)want + i * es;
        double gv = amp_load_as_f32(t, got, i), wv = amp_load_as_f32(t, want, i);
        if (memcmp(g, w, es) == 0 || (nan_any && isnan(gv) && isnan(wv)))
            continue;
        fail_msg("%s %s %s (n = %zu) differs at [%zu]: %.9g, reference %.9g", isa, what, amp_dtype_name(t), n, i,
                 gv, wv);
    }
}

static void run_unary_binary(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    size_t bytes = n * amp_dtype_size(t);
    void *a = random_buf(t, n), *b = random_buf(t, n), *y = malloc(bytes + 1), *w = malloc(bytes + 1);
    assert_non_null(y);
    assert_non_null(w);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, relu, n, a, y);
        KCALL(ref(), t, relu, n, a, w);
        expect_same(y, w, bytes, k->isa, "relu", t, n, 0);
        KCALL(k, t, add, n, a, b, y);
        KCALL(ref(), t, add, n, a, b, w);
        expect_same(y, w, bytes, k->isa, "add", t, n, 1);
        /* sub, mul, div: neonfp16's f16 kernels in FEAT_FP16 arithmetic
         * (the reference's elsewhere, nothing to compare) */
        if (t == AMP_F16 && k->sub_f16 != ref()->sub_f16) {
            KCALL(k, t, sub, n, a, b, y);
            KCALL(ref(), t, sub, n, a, b, w);
            expect_same(y, w, bytes, k->isa, "sub", t, n, 1);
            KCALL(k, t, mul, n, a, b, y);
            KCALL(ref(), t, mul, n, a, b, w);
            expect_same(y, w, bytes, k->isa, "mul", t, n, 1);
            KCALL(k, t, div, n, a, b, y);
            KCALL(ref(), t, div, n, a, b, w);
            expect_same(y, w, bytes, k->isa, "div", t, n, 1);
        }
    }
    free(a);
    free(b);
    free(y);
    free(w);
}

/* grad_accumulate: the set's against the reference's, and both against
 * the reference's cast to f32 followed by its add_f32 (the two calls the
 * emitted training step made before), on special values, 1 and 2 threads. */
static void run_grad_accumulate(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    float *acc0 = random_buf(AMP_F32, n), *got = malloc(n * 4 + 1), *want = malloc(n * 4 + 1);
    float *wide = malloc(n * 4 + 1), *two = malloc(n * 4 + 1);
    void *g = random_buf(t, n);
    assert_true(got && want && wide && two);
    if (t == AMP_BF16)
        ref()->cast_bf16_f32(n, g, wide);
    else
        ref()->cast_f16_f32(n, g, wide);
    ref()->add_f32(n, acc0, wide, two);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memcpy(got, acc0, n * 4);
        memcpy(want, acc0, n * 4);
        if (t == AMP_BF16) {
            k->grad_accumulate_bf16(n, got, g);
            ref()->grad_accumulate_bf16(n, want, g);
        } else {
            k->grad_accumulate_f16(n, got, g);
            ref()->grad_accumulate_f16(n, want, g);
        }
        expect_same(got, want, n * 4, k->isa, t == AMP_BF16 ? "grad_accumulate bf16 into" : "grad_accumulate f16 into",
                    AMP_F32, n, 1);
        expect_same(want, two, n * 4, "ref", "grad_accumulate = cast + add_f32 into", AMP_F32, n, 1);
    }
    free(acc0);
    free(got);
    free(want);
    free(wide);
    free(two);
    free(g);
}

static void run_casts(const amp_kernel_table *k, size_t n)
{
    float *f = random_buf(AMP_F32, n), *f2 = malloc(n * 4 + 1), *f3 = malloc(n * 4 + 1);
    uint16_t *h = malloc(n * 2 + 1), *h2 = malloc(n * 2 + 1);
    void *bsrc = random_buf(AMP_BF16, n), *hsrc = random_buf(AMP_F16, n);
    assert_true(f2 && f3 && h && h2);
    k->cast_f32_bf16(n, f, (amp_bf16 *)h);
    ref()->cast_f32_bf16(n, f, (amp_bf16 *)h2);
    expect_same(h, h2, n * 2, k->isa, "cast f32 ->", AMP_BF16, n, 0);
    k->cast_f32_f16(n, f, (amp_f16 *)h);
    ref()->cast_f32_f16(n, f, (amp_f16 *)h2);
    expect_same(h, h2, n * 2, k->isa, "cast f32 ->", AMP_F16, n, 0);
    k->cast_bf16_f32(n, bsrc, f2);
    ref()->cast_bf16_f32(n, bsrc, f3);
    expect_same(f2, f3, n * 4, k->isa, "cast bf16 ->", AMP_F32, n, 0);
    k->cast_f16_f32(n, hsrc, f2);
    ref()->cast_f16_f32(n, hsrc, f3);
    expect_same(f2, f3, n * 4, k->isa, "cast f16 ->", AMP_F32, n, 0);
    free(f);
    free(f2);
    free(f3);
    free(h);
    free(h2);
    free(bsrc);
    free(hsrc);
}

static void run_batch_norm(const amp_kernel_table *k, amp_dtype t, amp_dtype pt, int64_t N, int64_t C, int64_t HxW,
                           int affine)
{
    size_t n = (size_t)(N * C * HxW), bytes = n * amp_dtype_size(t);
    void *x = random_buf(t, n), *y = malloc(bytes + 1), *w = malloc(bytes + 1);
    void *mean = random_buf(pt, (size_t)C), *var = malloc((size_t)C * amp_dtype_size(pt));
    void *weight = affine ? random_buf(pt, (size_t)C) : NULL, *bias = affine ? random_buf(pt, (size_t)C) : NULL;
    assert_true(y && w && var);
    for (int64_t c = 0; c < C; c++) /* a variance: >= 0, 0 too */
        amp_store_from_f32(pt, var, (size_t)c, c % 7 == 0 ? 0.0f : (float)(next() % 1000) * 0.01f);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, batch_norm, N, C, HxW, x, pt, mean, var, weight, bias, 1e-5, y);
        KCALL(ref(), t, batch_norm, N, C, HxW, x, pt, mean, var, weight, bias, 1e-5, w);
        expect_same(y, w, bytes, k->isa, "batch_norm", t, n, 1);
    }
    free(x);
    free(y);
    free(w);
    free(mean);
    free(var);
    free(weight);
    free(bias);
}

/* clamp and hardtanh (one function) against the reference on special
 * values, with ordinary bounds (ReLU6's 0..6 among them), a NaN bound on
 * either side, lo > hi, infinite and signed-zero bounds; in place too. */
static void run_clamp(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    static const float bounds[][2] = { { 0, 6 }, { -1.5f, 2.25f }, { 6, 0 }, { NAN, 6 }, { 0, NAN },
                                       { -INFINITY, INFINITY }, { -0.0f, 0.0f }, { 0.1f, 0.3f } };
    const size_t bytes = n * amp_dtype_size(t);
    void *x = random_buf(t, n), *y = malloc(bytes + 1), *w = malloc(bytes + 1), *io = malloc(bytes + 1);
    assert_true(y && w && io);
    /* long arrays (the pool's chunks) with ReLU6's bounds only */
    for (size_t bi = 0; bi < (n > 4096 ? 1 : sizeof bounds / sizeof bounds[0]); bi++) {
        const double lo = bounds[bi][0], hi = bounds[bi][1];
        KCALL(ref(), t, clamp, n, x, lo, hi, w);
        for (int th = 1; th <= 2; th++) {
            amp_set_threads(th);
            memset(y, 0x5a, bytes);
            KCALL(k, t, clamp, n, x, lo, hi, y);
            expect_same(y, w, bytes, k->isa, "clamp", t, n, 0);
            KCALL(k, t, hardtanh, n, x, lo, hi, y);
            expect_same(y, w, bytes, k->isa, "hardtanh", t, n, 0);
            memcpy(io, x, bytes);
            KCALL(k, t, clamp, n, io, lo, hi, io);
            expect_same(io, w, bytes, k->isa, "clamp in place", t, n, 0);
        }
    }
    free(x);
    free(y);
    free(w);
    free(io);
}

/* batch_norm_train: y and the updated running statistics against the
 * reference's.  finite: x without special values (a special one makes
 * its channel's statistics NaN or inf, which match any NaN/inf, so only
 * finite data checks the order of the sums), with channel 1 constant (a
 * zero variance) and channel 2 all -0. */
static void run_batch_norm_train(const amp_kernel_table *k, amp_dtype t, amp_dtype pt, int64_t N, int64_t C,
                                 int64_t HxW, int affine, int running, int finite)
{
    const size_t n = (size_t)(N * C * HxW), bytes = n * amp_dtype_size(t), pbytes = (size_t)C * amp_dtype_size(pt);
    void *x = random_buf(t, n), *y = malloc(bytes + 1), *w = malloc(bytes + 1);
    void *rm0 = random_buf(pt, (size_t)C), *rv0 = random_buf(pt, (size_t)C);
    void *rm = malloc(pbytes + 1), *rv = malloc(pbytes + 1), *rmw = malloc(pbytes + 1), *rvw = malloc(pbytes + 1);
    void *weight = affine ? random_buf(pt, (size_t)C) : NULL, *bias = affine ? random_buf(pt, (size_t)C) : NULL;
    char what[160];
    assert_true(y && w && rm && rv && rmw && rvw);
    for (size_t i = 0; finite && i < n; i++) {
        const int64_t ch = (int64_t)(i / (size_t)HxW) % C;
        const float v = ch == 1 ? 1.25f : ch == 2 ? -0.0f : (float)((double)(next() >> 11) * 0x1p-53 * 8 - 4);
        amp_store_from_f32(t, x, i, v);
    }
    snprintf(what, sizeof what, "batch_norm_train [%lld, %lld, %lld] params %s%s%s", (long long)N, (long long)C,
             (long long)HxW, amp_dtype_name(pt), affine ? "" : " no affine", running ? "" : " no running");
    memcpy(rmw, rm0, pbytes);
    memcpy(rvw, rv0, pbytes);
    KCALL(ref(), t, batch_norm_train, N, C, HxW, x, pt, running ? rmw : NULL, running ? rvw : NULL, weight, bias, 0.1,
          1e-5, w);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memcpy(rm, rm0, pbytes);
        memcpy(rv, rv0, pbytes);
        memset(y, 0x5a, bytes);
        KCALL(k, t, batch_norm_train, N, C, HxW, x, pt, running ? rm : NULL, running ? rv : NULL, weight, bias, 0.1,
              1e-5, y);
        expect_same(y, w, bytes, k->isa, what, t, n, 1);
        expect_same(rm, rmw, pbytes, k->isa, what, pt, (size_t)C, 1);
        expect_same(rv, rvw, pbytes, k->isa, what, pt, (size_t)C, 1);
    }
    free(x);
    free(y);
    free(w);
    free(rm0);
    free(rv0);
    free(rm);
    free(rv);
    free(rmw);
    free(rvw);
    free(weight);
    free(bias);
}

typedef struct {
    int64_t planes, h, w, k[2], s[2], p[2], dil;
    int with_indices;
} pcase;

static void run_max_pool(const amp_kernel_table *k, amp_dtype t, const pcase *c)
{
    amp_pool_desc d;
    size_t nx, ny;
    void *x, *y, *w;
    int64_t *iy = NULL, *iw = NULL;
    memset(&d, 0, sizeof d);
    d.nspatial = 2;
    d.planes = c->planes;
    d.in_size[0] = c->h;
    d.in_size[1] = c->w;
    for (int i = 0; i < 2; i++) {
        d.kernel[i] = c->k[i];
        d.stride[i] = c->s[i];
        d.padding[i] = c->p[i];
        d.dilation[i] = c->dil;
        d.out_size[i] = (d.in_size[i] + 2 * c->p[i] - c->dil * (c->k[i] - 1) - 1) / c->s[i] + 1;
    }
    nx = (size_t)(c->planes * c->h * c->w);
    ny = (size_t)(c->planes * d.out_size[0] * d.out_size[1]);
    x = random_buf(t, nx);
    y = malloc(ny * amp_dtype_size(t) + 1);
    w = malloc(ny * amp_dtype_size(t) + 1);
    assert_true(y && w);
    if (c->with_indices) {
        iy = malloc(ny * sizeof *iy);
        iw = malloc(ny * sizeof *iw);
        assert_true(iy && iw);
    }
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, max_pool, &d, x, y, iy);
        KCALL(ref(), t, max_pool, &d, x, w, iw);
        expect_same(y, w, ny * amp_dtype_size(t), k->isa, "max_pool", t, ny, 0);
        if (iy != NULL)
            assert_memory_equal(iy, iw, ny * sizeof *iy);
    }
    { /* the backward: dy to the chosen elements, summed in output order */
        void *dy = random_buf(t, ny), *dx = malloc(nx * amp_dtype_size(t) + 1);
        void *dxr = malloc(nx * amp_dtype_size(t) + 1);
        assert_true(dx && dxr);
        for (int th = 1; th <= 2; th++) {
            amp_set_threads(th);
            KCALL(k, t, max_pool_backward, &d, x, dy, dx);
            KCALL(ref(), t, max_pool_backward, &d, x, dy, dxr);
            expect_same(dx, dxr, nx * amp_dtype_size(t), k->isa, "max_pool_backward", t, nx, 1);
        }
        free(dy);
        free(dx);
        free(dxr);
    }
    free(x);
    free(y);
    free(w);
    free(iy);
    free(iw);
}

static const pcase pool_cases[] = {
    { 3, 9, 9, { 3, 3 }, { 2, 2 }, { 1, 1 }, 1, 0 },          /* resnet's stem pool */
    { 70, 112, 112, { 3, 3 }, { 2, 2 }, { 1, 1 }, 1, 0 },     /* its size: many tasks */
    { 4, 8, 8, { 2, 2 }, { 2, 2 }, { 0, 0 }, 1, 0 },          /* lenet's */
    { 5, 13, 37, { 3, 2 }, { 1, 3 }, { 1, 1 }, 1, 0 },        /* odd sizes, stride 3 */
    { 2, 6, 40, { 4, 5 }, { 2, 1 }, { 2, 2 }, 1, 0 },         /* stride 1 along rows */
    { 2, 11, 11, { 3, 3 }, { 2, 2 }, { 1, 1 }, 2, 0 },        /* dilation: the reference */
    { 2, 7, 7, { 3, 3 }, { 2, 2 }, { 1, 1 }, 1, 1 },          /* indices: the reference */
};

/* adaptive_avg_pool on the shapes of bitexact_test_util.h (to one
 * position per plane: the set's lanes of 16 planes, the last group's
 * scalar chain) against the reference; x with NaN, inf and -0 (a plane of
 * -0 sums to +0). */
static void run_adaptive_avg_pool(const amp_kernel_table *k, amp_dtype t, const apcase *c)
{
    const size_t es = amp_dtype_size(t);
    size_t nx, ny;
    ap_sizes(c, &nx, &ny);
    const int64_t in_plane = c->planes > 0 ? (int64_t)(nx / (size_t)c->planes) : 0;
    void *x = random_buf(t, nx + 1), *y = malloc(ny * es + 1), *want = malloc(ny * es + 1);
    assert_true(y && want);
    for (size_t i = 0; i < nx; i += 97)
        amp_store_from_f32(t, x, i, i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY);
    if (c->planes > 1) /* plane 1 all -0 */
        for (int64_t i = 0; i < in_plane; i++)
            amp_store_from_f32(t, x, (size_t)(in_plane + i), -0.0f);
    KCALL(ref(), t, adaptive_avg_pool, c->nspatial, c->planes, c->in, c->out, x, want);
    memset(y, 0x5a, ny * es);
    KCALL(k, t, adaptive_avg_pool, c->nspatial, c->planes, c->in, c->out, x, y);
    expect_same(y, want, ny * es, k->isa, "adaptive_avg_pool", t, ny, 1);
    free(x);
    free(y);
    free(want);
}

/* ---- a transformer's rows: softmax, layer_norm, gelu, gelu_tanh ---------------
 * Rows of four kinds by row index, so that most rows stay finite (one NaN
 * or +inf makes a whole softmax row NaN): 0 ordinary values in [-8, 8];
 * 1 large ones in [-120, 120] (exp underflows, erf saturates); 2 with
 * -inf, +-0 and subnormals mixed in; 3 special_buf's mix (NaN payloads,
 * +-inf, raw bit patterns). */
static void *rows_buf(amp_dtype t, int64_t rows, int64_t len)
{
    void *p = special_buf(t, (size_t)(rows * len), 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < len && r % 4 != 3; i++) {
            const uint64_t u = next();
            float v = (float)((double)(u >> 11) * 0x1p-53 * 2 - 1) * (r % 4 == 1 ? 120.0f : 8.0f);
            if (r % 4 == 2 && u % 8 == 0) {
                static const float odd[] = { -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-41f, 1e-45f, -1e-45f, 2e-38f };
                v = odd[(u >> 3) % 8];
            }
            amp_store_from_f32(t, p, (size_t)(r * len + i), v);
        }
    return p;
}

static void run_softmax(const amp_kernel_table *k, amp_dtype t, int64_t outer, int64_t dim, int64_t inner)
{
    const size_t n = (size_t)(outer * dim * inner), bytes = n * amp_dtype_size(t);
    void *x = rows_buf(t, outer * inner, dim), *y = malloc(bytes + 1), *w = malloc(bytes + 1);
    assert_non_null(y);
    assert_non_null(w);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, softmax, outer, dim, inner, x, y);
        KCALL(ref(), t, softmax, outer, dim, inner, x, w);
        expect_same(y, w, bytes, k->isa, "softmax", t, n, 1);
    }
    /* in place, as the emitted code may call it */
    memcpy(y, x, bytes);
    KCALL(k, t, softmax, outer, dim, inner, y, y);
    KCALL(ref(), t, softmax, outer, dim, inner, x, w);
    expect_same(y, w, bytes, k->isa, "softmax in place", t, n, 1);
    free(x);
    free(y);
    free(w);
}

static void run_layer_norm(const amp_kernel_table *k, amp_dtype t, amp_dtype pt, int64_t outer, int64_t inner,
                           int affine, double eps)
{
    const size_t n = (size_t)(outer * inner), bytes = n * amp_dtype_size(t);
    void *x = rows_buf(t, outer, inner), *y = malloc(bytes + 1), *w = malloc(bytes + 1);
    void *g = affine ? random_buf(pt, (size_t)inner) : NULL, *b = affine == 2 ? random_buf(pt, (size_t)inner) : NULL;
    assert_non_null(y);
    assert_non_null(w);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, layer_norm, outer, inner, x, pt, g, b, eps, y);
        KCALL(ref(), t, layer_norm, outer, inner, x, pt, g, b, eps, w);
        expect_same(y, w, bytes, k->isa, "layer_norm", t, n, 1);
    }
    free(x);
    free(y);
    free(w);
    free(g);
    free(b);
}

static void run_gelu(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    const size_t bytes = n * amp_dtype_size(t);
    void *x = rows_buf(t, 4, (int64_t)(n / 4 + 1)), *y = malloc(bytes + 1), *w = malloc(bytes + 1);
    assert_non_null(y);
    assert_non_null(w);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, gelu, n, x, y);
        KCALL(ref(), t, gelu, n, x, w);
        expect_same(y, w, bytes, k->isa, "gelu", t, n, 1);
        KCALL(k, t, gelu_tanh, n, x, y);
        KCALL(ref(), t, gelu_tanh, n, x, w);
        expect_same(y, w, bytes, k->isa, "gelu_tanh", t, n, 1);
    }
    free(x);
    free(y);
    free(w);
}

/* every f32 in [-6, 6] one step of 2^-13 apart, and around erf's and
 * tanh's branch points (x / sqrt 2 at 1 and 4, 2x at 40, each side):
 * gelu's two forms bit for bit everywhere */
static void run_gelu_sweep(const amp_kernel_table *k)
{
    const size_t n = 98304 + 64;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *w = malloc(n * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(w);
    for (size_t i = 0; i < 98304; i++)
        x[i] = -6.0f + (float)i * 0x1p-13f;
    for (size_t i = 0; i < 64; i++) {
        static const float at[] = { 1.41421354f, 5.65685415f, 28.2842712f, 20.0f };
        x[98304 + i] = nextafterf(at[i % 4], i % 8 < 4 ? 0.0f : 100.0f) * (i % 16 < 8 ? 1.0f : -1.0f);
    }
    k->gelu_f32(n, x, y);
    amp_ref_kernel_table.gelu_f32(n, x, w);
    expect_same(y, w, n * sizeof(float), k->isa, "gelu sweep", AMP_F32, n, 0);
    k->gelu_tanh_f32(n, x, y);
    amp_ref_kernel_table.gelu_tanh_f32(n, x, w);
    expect_same(y, w, n * sizeof(float), k->isa, "gelu_tanh sweep", AMP_F32, n, 0);
    free(x);
    free(y);
    free(w);
}

static void run_rows_kernels(const amp_kernel_table *k)
{
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    static const int64_t dims[] = { 1, 7, 15, 16, 17, 33, 197, 768, 1000, 4111 };
    static const size_t lengths[] = { 0, 1, 15, 16, 17, 33, 1000, 300001 };
    run_gelu_sweep(k);
    for (size_t ti = 0; ti < 3; ti++) {
        const amp_dtype t = types[ti];
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            run_softmax(k, t, 9, dims[di], 1);
            run_layer_norm(k, t, AMP_F32, 9, dims[di], 2, 1e-5);
        }
        run_softmax(k, t, 2, 5, 3);         /* inner axis: the reference's */
        run_softmax(k, t, 197 * 4, 197, 1); /* pooled: a ViT's attention rows */
        run_layer_norm(k, t, AMP_F32, 197, 768, 2, 1e-6); /* pooled */
        run_layer_norm(k, t, t, 5, 100, 1, 1e-12);
        run_layer_norm(k, t, AMP_BF16, 6, 77, 2, 1e-5);
        run_layer_norm(k, t, AMP_F32, 4, 50, 0, 1e-5);
        run_layer_norm(k, t, AMP_F64, 3, 40, 2, 1e-5); /* f64 parameters: the reference's path */
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            run_gelu(k, t, lengths[li]);
    }
    amp_set_threads(0);
}

/* The x86 sets' own row kernels (x86/avx512_rows.c, x86/avx2_rows.c). */
static void expect_rows_overrides(const amp_kernel_table *k)
{
    const amp_kernel_table *r = ref();
#define CHECK_T(T)                                                                                \
    assert_true(k->softmax_##T != r->softmax_##T &&                                             \
                k->layer_norm_##T != r->layer_norm_##T && k->gelu_##T != r->gelu_##T &&          \
                k->gelu_tanh_##T != r->gelu_tanh_##T);
    CHECK_T(f32)
    CHECK_T(bf16)
    CHECK_T(f16)
#undef CHECK_T
}

/* copy_strided against the reference's, bit for bit, and not a byte past
 * y: the pooled copy cuts along one dim (the outermost long enough, else
 * the longest), so the cases cut outer and inner dims, reversed and
 * broadcast strides, each element size, under and over the half megabyte
 * from which it splits, and more dims than it cuts (the reference's). */
static void run_copy_strided(const amp_kernel_table *k)
{
    static const struct {
        size_t es;
        int ndim;
        int64_t shape[4], x_stride[4], y_stride[4];
        int64_t x_offset; /* x's first element read, from the buffer's start */
    } cases[] = {
        { 2, 4, { 4, 12, 100, 64 }, { 76800, 64, 768, 1 }, { 76800, 6400, 64, 1 }, 0 }, /* heads split */
        { 4, 3, { 1, 3, 200000 }, { 600000, 200000, -1 }, { 600000, 200000, 1 }, 199999 }, /* rows reversed */
        { 4, 2, { 300, 1000 }, { 0, 1 }, { 1000, 1 }, 0 },                               /* broadcast rows */
        { 8, 2, { 700, 150 }, { 1, 700 }, { 150, 1 }, 0 },                                /* a transpose */
        { 1, 2, { 3, 700001 }, { 700001, 1 }, { 700001, 1 }, 0 },                         /* bytes, 3 rows */
        { 2, 2, { 17, 33 }, { 1, 17 }, { 33, 1 }, 0 },                                   /* small: one call */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = 1, span = 1;
        for (int d = 0; d < cases[c].ndim; d++) {
            n *= (size_t)cases[c].shape[d];
            span += (size_t)((cases[c].shape[d] - 1) * (cases[c].x_stride[d] < 0 ? -cases[c].x_stride[d]
                                                                                   : cases[c].x_stride[d]));
        }
        const size_t es = cases[c].es;
        unsigned char *x = malloc(span * es), *y = malloc(n * es + 64), *w = malloc(n * es + 64);
        assert_true(x != NULL && y != NULL && w != NULL);
        for (size_t i = 0; i < span * es; i++)
            x[i] = (unsigned char)(i * 2654435761u >> 13);
        for (int th = 1; th <= 2; th++) {
            amp_set_threads(th);
            memset(y, 0xa5, n * es + 64);
            memset(w, 0xa5, n * es + 64);
            k->copy_strided(es, cases[c].ndim, cases[c].shape, x + cases[c].x_offset * (int64_t)es, cases[c].x_stride,
                            y, cases[c].y_stride);
            ref()->copy_strided(es, cases[c].ndim, cases[c].shape, x + cases[c].x_offset * (int64_t)es,
                                cases[c].x_stride, w, cases[c].y_stride);
            if (memcmp(y, w, n * es + 64) != 0)
                fail_msg("%s copy_strided case %zu (%d threads) differs from the reference", k->isa, c, th);
        }
        free(x);
        free(y);
        free(w);
    }
    /* 17 dims, more than a cut copy holds: the reference's, whole */
    int64_t shape[17], stride[17];
    for (int d = 0; d < 17; d++)
        shape[d] = 1, stride[d] = 1;
    shape[16] = 300000;
    float *x = malloc(300000 * sizeof *x), *y = malloc(300000 * sizeof *y);
    assert_true(x != NULL && y != NULL);
    for (int i = 0; i < 300000; i++)
        x[i] = (float)i;
    amp_set_threads(2);
    k->copy_strided(sizeof *x, 17, shape, x, stride, y, stride);
    assert_memory_equal(x, y, 300000 * sizeof *x);
    free(x);
    free(y);
}

/* fill against the reference's, bit for bit, on and off the pool. */
static void run_fill(const amp_kernel_table *k, amp_dtype t)
{
    static const size_t lengths[] = { 0, 1, 17, 131071, 131072, 300001 };
    static const double values[] = { 0.0, -1.5, 3.14159265358979, 1e-40 };
    const size_t es = amp_dtype_size(t);
    void *y = malloc(300001 * es + 8), *w = malloc(300001 * es + 8);
    assert_true(y != NULL && w != NULL);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            for (size_t vi = 0; vi < sizeof values / sizeof values[0]; vi++) {
                memset(y, 0x5a, 300001 * es + 8);
                memset(w, 0x5a, 300001 * es + 8);
                KCALL(k, t, fill, lengths[li], values[vi], y);
                KCALL(ref(), t, fill, lengths[li], values[vi], w);
                if (memcmp(y, w, 300001 * es + 8) != 0)
                    fail_msg("%s fill %s n = %zu value %g (%d threads) differs from the reference", k->isa,
                             amp_dtype_name(t), lengths[li], values[vi], th);
            }
    }
    free(y);
    free(w);
}

/* Every optimized set overrides each of these kernels (the ones a
 * network runs between its products): a set that left one to the
 * reference would pass the comparisons above while running it slowly. */
static void expect_overrides(const amp_kernel_table *k)
{
    const amp_kernel_table *r = ref();
    int missing = 0;
#define CHECK(name)                                                                               \
    if (k->name == r->name) {                                                                     \
        printf("   %s: %s is the reference's\n", k->isa, #name);                                 \
        missing++;                                                                                \
    }
#define CHECK_T(T)                                                                                \
    CHECK(relu_##T) CHECK(add_##T) CHECK(add_relu_backward_##T) CHECK(batch_norm_##T)            \
    CHECK(max_pool_##T) CHECK(adaptive_avg_pool_##T) CHECK(relu_backward_##T)                    \
    CHECK(batch_norm_backward_##T) CHECK(sgd_##T) CHECK(max_pool_backward_##T)                   \
    CHECK(max_pool_relu_backward_##T) CHECK(adaptive_avg_pool_backward_##T) CHECK(sum_##T)       \
    CHECK(cross_entropy_##T) CHECK(cross_entropy_backward_##T) CHECK(cross_entropy_with_grad_##T)  \
    CHECK(clamp_##T) CHECK(hardtanh_##T) CHECK(clamp_backward_##T) CHECK(hardtanh_backward_##T)  \
    CHECK(batch_norm_train_##T)
    CHECK_T(f32)
    CHECK_T(bf16)
    CHECK_T(f16)
    CHECK(grad_accumulate_bf16)
    CHECK(grad_accumulate_f16)
    CHECK(cast_f32_bf16)
    CHECK(cast_bf16_f32)
    CHECK(cast_f32_f16)
    CHECK(cast_f16_f32)
    CHECK(copy_strided)
    CHECK(fill_f32)
    CHECK(fill_bf16)
    CHECK(fill_f16)
#undef CHECK_T
#undef CHECK
    assert_int_equal(missing, 0);
}

/* batch_norm_train and clamp, where the set has its own (every optimized
 * set: expect_overrides; the reference's against itself is nothing). */
static void run_train_norm_kernels(const amp_kernel_table *k, amp_dtype t, const size_t *lengths, size_t nlengths)
{
    if (k->batch_norm_train_f32 == ref()->batch_norm_train_f32)
        return;
    run_batch_norm_train(k, t, AMP_F32, 2, 5, 49, 1, 1, 0);
    run_batch_norm_train(k, t, AMP_F32, 2, 5, 49, 1, 1, 1);
    run_batch_norm_train(k, t, AMP_F32, 3, 7, 13, 1, 1, 1);     /* rows shorter than 16: tails only */
    run_batch_norm_train(k, t, AMP_F32, 2, 6, 300, 1, 1, 1);    /* a 12 tail: both halves of 16 */
    run_batch_norm_train(k, t, AMP_F32, 8, 6, 3136, 1, 1, 1);   /* pooled, 2 channels a task */
    run_batch_norm_train(k, t, AMP_F32, 16, 40, 250, 1, 1, 1);  /* pooled, 9 channels a task */
    run_batch_norm_train(k, t, AMP_F32, 1, 9, 2, 0, 0, 1);      /* no affine, no running statistics */
    run_batch_norm_train(k, t, AMP_BF16, 2, 5, 33, 1, 1, 1);    /* parameters in bf16 */
    run_batch_norm_train(k, t, AMP_F16, 2, 5, 33, 1, 1, 1);     /* and in f16 */
    run_batch_norm_train(k, t, AMP_F64, 2, 3, 20, 1, 1, 1);     /* f64 parameters: the reference's path */
    run_batch_norm_train(k, t, AMP_F32, 6, 19, 1, 1, 1, 1);     /* [N, C]: the reference's path */
    run_batch_norm_train(k, t, AMP_F32, 0, 3, 20, 1, 1, 1);     /* no images: nothing moves */
    for (size_t li = 0; li < nlengths; li++)
        run_clamp(k, t, lengths[li]);
}

/* The FEAT_FP16 sets' own f16 element-wise kernels (arm/neon_fp16.c). */
static void expect_fp16_overrides(const amp_kernel_table *k)
{
    const amp_kernel_table *n = amp_kernel_table_for("neon");
    assert_non_null(n);
    assert_true(k->add_f16 != n->add_f16 && k->relu_f16 != n->relu_f16);
    assert_true(k->sub_f16 != amp_ref_kernel_table.sub_f16 && k->mul_f16 != amp_ref_kernel_table.mul_f16 &&
                k->div_f16 != amp_ref_kernel_table.div_f16);
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    static const size_t lengths[] = { 0, 1, 15, 16, 17, 33, 1000, 300001 };
    if (k == NULL)
        skip();
    /* every optimized set overrides every such kernel */
    if (strcmp(isa, "ref") != 0)
        expect_overrides(k);
    if (strcmp(isa, "neonfp16") == 0 || strcmp(isa, "neonbf16") == 0)
        expect_fp16_overrides(k);
    for (size_t ti = 0; ti < 3; ti++) {
        amp_dtype t = types[ti];
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            run_unary_binary(k, t, lengths[li]);
        run_batch_norm(k, t, AMP_F32, 2, 5, 49, 1);
        run_batch_norm(k, t, AMP_F32, 3, 64, 3136, 1); /* pooled */
        run_batch_norm(k, t, t, 1, 7, 17, 0);
        run_batch_norm(k, t, AMP_F64, 1, 3, 20, 1); /* f64 parameters: the reference's path */
        run_train_norm_kernels(k, t, lengths, sizeof lengths / sizeof lengths[0]);
        for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
            run_max_pool(k, t, &pool_cases[i]);
        for (size_t i = 0; i < sizeof ap_cases / sizeof ap_cases[0]; i++)
            run_adaptive_avg_pool(k, t, &ap_cases[i]);
    }
    if (strncmp(isa, "avx", 3) == 0)
        expect_rows_overrides(k);
    if (k->softmax_f32 != ref()->softmax_f32) /* else the reference's own: nothing to compare */
        run_rows_kernels(k);
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        run_casts(k, lengths[li]);
        run_grad_accumulate(k, AMP_BF16, lengths[li]);
        run_grad_accumulate(k, AMP_F16, lengths[li]);
    }
    run_copy_strided(k);
    for (size_t ti = 0; ti < 3; ti++)
        run_fill(k, types[ti]);
    amp_set_threads(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
