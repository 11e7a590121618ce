/*
 * test_fastgemm.c - the optimized GEMM paths (linear, matmul, gemm of every
 * kernel set this CPU supports, selected through amp_kernel_table_for)
 * against an oracle in double, for f32, bf16 and f16, on 1 and 2 threads.
 *
 * The bound is test_kernels.c's: an output y of dtype T is correct if
 *     |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 * where acc = (K' + 3) 2^-24 (|alpha| sum_k |a b| + |beta c| + |bias|) bounds
 * any f32 summation order over the K' = K (x batch, for sum_batch)
 * products (2^-23 for neonbf16's bf16 products: BFDOT rounds to odd), and
 * u_T is the one final rounding.  Inputs are uniform in
 * [-1, 1] (no subnormals: vdpbf16ps flushes them) and rounded into T before
 * the oracle reads them.  The shapes cover edge tiles (M, N, K not multiples
 * of any tile or block), K = 0 and 1, K beyond one cache block, transposed
 * and strided operands, broadcast batches, sum_batch, alpha, beta with a NaN
 * C (beta 0 must ignore it), C broadcast along rows, and a strided C.
 * Results must also be identical on 1 and 2 threads, and a small product
 * (avx512bf16's one-pass path; the avx2 set's, x86/avx2_small.c, in bf16
 * and f32) identical to the same rows of a product large enough for the
 * blocked driver.  Buffers are
 * malloc'ed with exactly their element count, for ASan.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
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

#define FAST_TEST_SEED 0x9e3779b97f4a7c15ull
#include "fast_test_util.h"

typedef struct {
    const char *what;
    int64_t batch, M, N, K;
    int a_t, b_t;         /* stored transposed */
    int a_bcast, b_bcast; /* batch stride 0 */
    int c_mode;           /* 0 none, 1 full, 2 row broadcast, 3 full stored transposed */
    double alpha, beta;
    int sum_batch, nan_c;
} gcase;

static const gcase cases[] = {
    { "1x1x1", 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "K=0", 1, 3, 5, 0, 0, 0, 0, 0, 1, 1, 0.5, 0, 0 },
    { "K=0 no C", 2, 4, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "K=1", 1, 13, 33, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "edges", 1, 13, 33, 7, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "full tile", 1, 12, 32, 64, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "odd K, two k blocks", 1, 25, 70, 513, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "mv", 1, 100, 1, 300, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "vm", 1, 1, 100, 300, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "large K", 1, 37, 65, 1100, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "wide N, many tasks", 1, 50, 600, 90, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "tall M", 1, 400, 40, 100, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "A transposed", 1, 29, 47, 130, 1, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "B transposed", 1, 29, 47, 130, 0, 1, 0, 0, 0, 1, 0, 0, 0 },
    { "both transposed, alpha", 1, 31, 17, 77, 1, 1, 0, 0, 0, -0.75, 0, 0, 0 },
    { "batched, shared A", 3, 20, 36, 45, 0, 0, 1, 0, 0, 1, 0, 0, 0 },
    { "batched, shared B, transposed", 3, 20, 36, 45, 1, 1, 0, 1, 0, 1, 0, 0, 0 },
    { "addmm", 1, 33, 40, 50, 0, 0, 0, 0, 1, 0.5, 2, 0, 0 },
    { "beta 0 ignores NaN C", 2, 19, 21, 23, 0, 0, 0, 0, 1, 1, 0, 0, 1 },
    { "NaN C with beta", 1, 19, 21, 23, 0, 0, 0, 0, 1, 1, 1, 0, 1 },
    { "C row broadcast", 2, 30, 50, 40, 0, 1, 0, 0, 2, 1.5, -1, 0, 0 },
    { "C transposed (strided)", 1, 30, 50, 40, 0, 0, 0, 0, 3, 1, 0.25, 0, 0 },
    { "addbmm", 4, 26, 35, 60, 0, 0, 0, 0, 1, 1, 1, 1, 0 },
    { "sum_batch, large", 3, 40, 70, 700, 1, 0, 0, 0, 1, 0.5, 0.5, 1, 0 },
    { "threaded", 1, 130, 200, 150, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
};

/* The bound on one step of the f32 sums: 2^-24 (round to nearest), but
 * 2^-23 for neonbf16's bf16 products, whose BFDOT rounds to odd. */
static double sum_unit(const char *isa, amp_dtype t)
{
    return t == AMP_BF16 && strcmp(isa, "neonbf16") == 0 ? 0x1p-23 : 0x1p-24;
}

static void check(amp_dtype t, const void *y, int64_t i, double oracle, double acc, const char *isa,
                  const char *what, int threads)
{
    double v = ld(t, y, i), u = unit_roundoff(t);
    if (isnan(oracle)) {
        if (!isnan(v))
            fail_msg("%s %s %s (%d threads) [%lld]: got %g, want NaN", isa, amp_dtype_name(t), what, threads,
                     (long long)i, v);
        return;
    }
    if (!(fabs(v - oracle) <= u * fabs(oracle) + (1 + u) * acc + underflow_floor(t)))
        fail_msg("%s %s %s (%d threads) [%lld]: got %.9g, oracle %.9g, bound %.3g", isa, amp_dtype_name(t), what,
                 threads, (long long)i, v, oracle, u * fabs(oracle) + acc);
}

static void run_gemm_case(const amp_kernel_table *k, amp_dtype t, const gcase *g)
{
    const int64_t B = g->batch, M = g->M, N = g->N, K = g->K;
    const int64_t a_n = (g->a_bcast ? 1 : B) * M * K, b_n = (g->b_bcast ? 1 : B) * K * N;
    const int64_t c_batches = g->sum_batch ? 1 : B, out_b = g->sum_batch ? 1 : B;
    int64_t c_n = 0;
    amp_gemm_desc d;
    void *a = random_buf(t, (size_t)a_n), *b = random_buf(t, (size_t)b_n), *c = NULL;
    void *y[2];
    memset(&d, 0, sizeof d);
    d.batch = B;
    d.M = M;
    d.N = N;
    d.K = K;
    d.a_stride[0] = g->a_bcast ? 0 : M * K;
    d.a_stride[1] = g->a_t ? 1 : K;
    d.a_stride[2] = g->a_t ? M : 1;
    d.b_stride[0] = g->b_bcast ? 0 : K * N;
    d.b_stride[1] = g->b_t ? 1 : N;
    d.b_stride[2] = g->b_t ? K : 1;
    d.alpha = g->alpha;
    d.beta = g->beta;
    d.sum_batch = g->sum_batch;
    if (g->c_mode == 1 || g->c_mode == 3) {
        c_n = c_batches * M * N;
        d.c_stride[0] = M * N;
        d.c_stride[1] = g->c_mode == 1 ? N : 1;
        d.c_stride[2] = g->c_mode == 1 ? 1 : M;
    } else if (g->c_mode == 2) {
        c_n = N;
        d.c_stride[2] = 1;
    }
    if (g->c_mode) {
        c = random_buf(t, (size_t)c_n);
        if (g->nan_c)
            for (int64_t i = 0; i < c_n; i += 3)
                amp_store_from_f32(t, c, (size_t)i, NAN);
    }
    for (int th = 0; th < 2; th++) {
        y[th] = malloc((size_t)(out_b * M * N) * amp_dtype_size(t) + 1);
        assert_non_null(y[th]);
        amp_set_threads(th + 1);
        KCALL(k, t, gemm, &d, a, b, c, y[th]);
    }
    assert_memory_equal(y[0], y[1], (size_t)(out_b * M * N) * amp_dtype_size(t));
    for (int64_t ob = 0; ob < out_b; ob++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0, mag = 0, oracle, acc;
                for (int64_t sb = 0; sb < (g->sum_batch ? B : 1); sb++) {
                    int64_t bi = g->sum_batch ? sb : ob;
                    for (int64_t kk = 0; kk < K; kk++) {
                        double p = ld(t, a, bi * d.a_stride[0] + m * d.a_stride[1] + kk * d.a_stride[2]) *
                                   ld(t, b, bi * d.b_stride[0] + kk * d.b_stride[1] + n * d.b_stride[2]);
                        s += p;
                        mag += fabs(p);
                    }
                }
                oracle = g->alpha * s;
                mag *= fabs(g->alpha);
                if (c != NULL && g->beta != 0) {
                    int64_t cb = g->sum_batch ? 0 : ob;
                    double cv = ld(t, c, cb * d.c_stride[0] + m * d.c_stride[1] + n * d.c_stride[2]);
                    oracle += g->beta * cv;
                    mag += fabs(g->beta * cv);
                }
                acc = (double)(K * (g->sum_batch ? B : 1) + 3) * sum_unit(k->isa, t) * mag;
                check(t, y[0], (ob * M + m) * N + n, oracle, acc, k->isa, g->what, 1);
            }
    free(a);
    free(b);
    free(c);
    free(y[0]);
    free(y[1]);
}

/* linear (with and without bias) and batched matmul (broadcast b). */
static void run_linear_matmul(const amp_kernel_table *k, amp_dtype t, int64_t M, int64_t N, int64_t K)
{
    void *x = random_buf(t, (size_t)(M * K)), *w = random_buf(t, (size_t)(N * K)), *bias = random_buf(t, (size_t)N);
    void *y[2];
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        for (int th = 0; th < 2; th++) {
            y[th] = malloc((size_t)(M * N) * amp_dtype_size(t) + 1);
            amp_set_threads(th + 1);
            KCALL(k, t, linear, M, N, K, x, w, with_bias ? bias : NULL, y[th]);
        }
        assert_memory_equal(y[0], y[1], (size_t)(M * N) * amp_dtype_size(t));
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0, mag = 0;
                for (int64_t kk = 0; kk < K; kk++) {
                    double p = ld(t, x, m * K + kk) * ld(t, w, n * K + kk);
                    s += p;
                    mag += fabs(p);
                }
                if (with_bias) {
                    s += ld(t, bias, n);
                    mag += fabs(ld(t, bias, n));
                }
                check(t, y[0], m * N + n, s, (double)(K + 2) * sum_unit(k->isa, t) * mag, k->isa, "linear", 1);
            }
        free(y[0]);
        free(y[1]);
    }
    /* matmul: 2 batches of a [M, K] against one shared b [K, N] */
    {
        void *a2 = random_buf(t, (size_t)(2 * M * K)), *b2 = random_buf(t, (size_t)(K * N));
        void *c2 = malloc((size_t)(2 * M * N) * amp_dtype_size(t) + 1);
        amp_set_threads(2);
        KCALL(k, t, matmul, 2, M, N, K, a2, M * K, b2, 0, c2);
        for (int64_t i = 0; i < 2; i++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double s = 0, mag = 0;
                    for (int64_t kk = 0; kk < K; kk++) {
                        double p = ld(t, a2, i * M * K + m * K + kk) * ld(t, b2, kk * N + n);
                        s += p;
                        mag += fabs(p);
                    }
                    check(t, c2, (i * M + m) * N + n, s, (double)(K + 1) * sum_unit(k->isa, t) * mag, k->isa, "matmul", 2);
                }
        free(a2);
        free(b2);
        free(c2);
    }
    free(x);
    free(w);
    free(bias);
}

/* NaN and inf in an operand propagate (alpha 0 still forms A B). */
static void run_nonfinite(const amp_kernel_table *k, amp_dtype t)
{
    const int64_t M = 14, N = 35, K = 9;
    void *a = random_buf(t, (size_t)(M * K)), *b = random_buf(t, (size_t)(K * N));
    void *y = malloc((size_t)(M * N) * amp_dtype_size(t));
    amp_gemm_desc d = { 1, M, N, K, { 0, K, 1 }, { 0, N, 1 }, { 0, 0, 0 }, 0.0, 0.0, 0 };
    amp_store_from_f32(t, a, 3 * K + 4, NAN);      /* row 3 */
    amp_store_from_f32(t, b, 2 * N + 20, INFINITY); /* column 20 */
    KCALL(k, t, gemm, &d, a, b, NULL, y);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double v = ld(t, y, m * N + n);
            if (m == 3 || n == 20)
                assert_true(isnan(v)); /* NaN * x, or 0 * (x * inf) */
            else
                assert_true(v == 0);
        }
    free(a);
    free(b);
    free(y);
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    if (k == NULL)
        skip();
    assert_string_equal(k->isa, isa);
    for (size_t ti = 0; ti < 3; ti++) {
        /* the tasks packing their own panels, then the operands packed
         * whole first (frame/gemm.c's pack_whole: every case of several
         * tasks, on 2 threads if not on 1) */
        for (int policy = -1; policy <= 1; policy += 2) {
            amp_gemm_pack_whole_policy(policy);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                run_gemm_case(k, types[ti], &cases[i]);
        }
        amp_gemm_pack_whole_policy(0);
        run_linear_matmul(k, types[ti], 21, 45, 67);
        run_linear_matmul(k, types[ti], 64, 128, 300);
        run_nonfinite(k, types[ti]);
    }
    amp_set_threads(0);
}

/* Small products (avx512bf16's small_gemm_bf16, and the avx2 set's
 * amp_avx2_small_gemm in bf16 and f32: below the parallel threshold, K in
 * one k block) must give exactly the blocked driver's
 * bits.  Each case runs twice on the same buffers: with M rows (the small
 * path) and with Mbig rows (over the threshold: the blocked driver, on 2
 * threads); every output element depends only on its own row and column,
 * so the first M rows must match bit for bit.  The shapes are a digits
 * MLP's training step (64 -> 128 -> 10, batch 64) and the tile edges:
 * 8/12/16-row tiles, N <= 16, a last panel of <= 16 columns, odd K, K at
 * the k block's limit, A read in place (row-major, even K) or packed,
 * alpha, beta with C (and a NaN in it), bias,
 * batches, sum_batch over one batch, outputs scaled into subnormals.
 * The small path runs on 1 and on 2 threads (avx512bf16 splits the
 * panels or the row tiles between two threads from 0.75 MFLOP, avx2 its
 * columns or rows from 0.125), with the same bits. */
typedef struct {
    const char *what;
    int64_t batch, M, N, K;
    int a_t, b_t, c_mode; /* c_mode: 0 none, 1 full, 2 row broadcast */
    double alpha, beta;
    int sum_batch, linear, special;
} scase;

static const scase small_cases[] = {
    { "digits fc1", 1, 64, 128, 64, 0, 0, 0, 1, 0, 0, 1, 0 },
    { "digits fc2", 1, 64, 10, 128, 0, 0, 0, 1, 0, 0, 1, 0 },
    { "digits dX2", 1, 64, 128, 10, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "digits dW2", 1, 10, 128, 64, 1, 0, 0, 1, 0, 0, 0, 0 },
    { "digits dW1", 1, 128, 64, 64, 1, 0, 0, 1, 0, 0, 0, 0 },
    { "12-row tiles, last panel narrow", 1, 13, 45, 33, 0, 1, 0, 1, 0, 0, 0, 0 },
    { "N 16", 1, 30, 16, 31, 1, 1, 0, -0.5, 0, 0, 0, 0 },
    { "N 1, K 1", 1, 5, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "N 17, bias", 1, 9, 17, 40, 0, 0, 0, 1, 0, 0, 1, 0 },
    { "K at the block limit", 1, 7, 33, 512, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "K odd, transposed", 1, 20, 40, 511, 1, 1, 0, 1, 0, 0, 0, 0 },
    { "K past the block", 1, 7, 33, 513, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "addmm, NaN in C", 1, 24, 70, 20, 0, 0, 1, 0.5, 2, 0, 0, 1 },
    { "C row broadcast", 1, 16, 64, 24, 0, 1, 2, 1, -1, 0, 0, 0 },
    { "batched", 3, 11, 40, 30, 1, 0, 0, 1, 0, 0, 0, 0 },
    { "sum_batch of one", 1, 20, 50, 60, 0, 0, 1, 1, 1, 1, 0, 0 },
    { "NaN and inf operands", 1, 14, 35, 9, 0, 0, 0, 1, 0, 0, 0, 2 },
    /* f32 sums scaled into subnormals: the bf16 rounding of the epilogue
     * must keep them (vcvtneps2bf16 alone would give zeros) */
    { "subnormal outputs", 1, 20, 40, 30, 0, 0, 0, 0x1p-131, 0, 0, 0, 0 },
    /* A read in place (row-major, even K): a partial 16-row tile */
    { "N 10, 16-row tiles, 5 rows left", 1, 21, 10, 36, 0, 0, 0, 1, 0, 0, 1, 0 },
    /* linear_relu of NaN and +-inf products */
    { "linear, NaN and inf operands", 1, 14, 35, 10, 0, 0, 0, 1, 0, 0, 1, 2 },
    /* split on two threads: by panels (A in place; 3 panels, the last
     * narrow), by row tiles (A packed; 9 tiles of 12 rows), per batch */
    { "split by panels, last narrow", 1, 64, 80, 96, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "split by row tiles, odd count", 1, 100, 90, 64, 1, 0, 0, 1, 0, 0, 0, 0 },
    { "split, batched", 2, 64, 128, 64, 0, 1, 0, 1, 0, 0, 0, 0 },
    /* the avx2 set's small path (x86/avx2_small.c): K at one k block
     * (256) and past it (two blocks' sums added as the blocked driver adds
     * them; above, K 511 and 512 also pack A in row blocks of 12), N < 8
     * and < 16, odd rows (a partial 6-row tile), K not a multiple of 8 (the
     * transposes' partial blocks), a linear's weight of 3 rows, alpha with
     * C, lenet5's first linear layer */
    { "K 256, the avx2 k block", 1, 9, 20, 256, 1, 1, 0, 1, 0, 0, 0, 0 },
    { "K 257, past the avx2 k block", 1, 9, 20, 257, 0, 1, 0, 1, 0, 0, 0, 0 },
    { "N 5, K 13, 7 rows", 1, 7, 5, 13, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "N 12, K 19, B transposed", 1, 11, 12, 19, 0, 1, 0, 1, 0, 0, 0, 0 },
    { "linear N 3, K 7, 5 rows", 1, 5, 3, 7, 0, 0, 0, 1, 0, 0, 1, 0 },
    { "linear N 31, K 45, 13 rows", 1, 13, 31, 45, 0, 0, 0, 1, 0, 0, 1, 0 },
    { "A transposed, K 11, 25 rows, alpha, C", 1, 25, 23, 11, 1, 0, 1, -1.5, 0.5, 0, 0, 0 },
    { "linear K 400, two k blocks, 30 rows", 1, 30, 120, 400, 0, 0, 0, 1, 0, 0, 1, 0 },
};

static void run_small_case(const amp_kernel_table *k, amp_dtype t, const scase *g)
{
    const size_t es = amp_dtype_size(t);
    const char *tn = t == AMP_F32 ? "f32" : "bf16";
    const int64_t B = g->batch, M = g->M, N = g->N, K = g->K;
    /* rows enough for 2 M N K B >= 8 Mflop, well over the threshold */
    const int64_t Mbig = M + (8 * 1024 * 1024 / (2 * N * K * B) + 1);
    const int64_t out_b = g->sum_batch ? 1 : B;
    void *a = random_buf(t, (size_t)(B * Mbig * K)), *b = random_buf(t, (size_t)(B * K * N));
    void *c = g->c_mode ? random_buf(t, (size_t)(out_b * Mbig * N)) : NULL, *bias = random_buf(t, (size_t)N);
    /* GUARD elements past ys's end, set to a pattern: a tile's masked
     * columns past the last row must stay unwritten */
    enum { GUARD = 32 };
    void *ys = malloc((size_t)(out_b * M * N + GUARD) * es), *yb = malloc((size_t)(out_b * Mbig * N) * es);
    amp_gemm_desc d;
    assert_true(ys && yb);
    if (g->special == 1)
        for (int64_t i = 0; i < out_b * Mbig * N; i += 7)
            amp_store_from_f32(t, c, (size_t)i, NAN);
    if (K >= 4 && g->special != 2)
        /* +-2^20 at k = 0 and 2 (two different units) of every row, times
         * 1: summed in k order they cancel before the other products come
         * in; in any other order the other products are rounded to 2^20's
         * precision (1/8), which shows in bf16.  So the test sees the
         * summation order, not only the oracle's bound. */
        for (int64_t m = 0; m < Mbig; m++)
            for (int kk = 0; kk <= 2; kk += 2) {
                const int64_t ai = g->linear ? m * K + kk : g->a_t ? kk * Mbig + m : m * K + kk;
                for (int64_t bb = 0; bb < B; bb++)
                    amp_store_from_f32(t, a, (size_t)(bb * Mbig * K + ai), kk ? -0x1p20f : 0x1p20f);
                for (int64_t n = 0; n < N; n++)
                    for (int64_t bb = 0; bb < B; bb++)
                        amp_store_from_f32(t, b,
                                           (size_t)(bb * K * N + (g->linear ? n * K + kk : g->b_t ? n * K + kk : kk * N + n)),
                                           1.0f);
            }
    if (g->special == 2) {
        amp_store_from_f32(t, a, (size_t)(3 * K + 4), NAN);
        amp_store_from_f32(t, b, (size_t)(2 * N + 20), INFINITY);
        amp_store_from_f32(t, b, (size_t)(5 * N + 7), -INFINITY);
    }
    void *ys1 = malloc((size_t)(out_b * M * N + GUARD) * es);
    assert_true(ys1 != NULL);
    memset((char *)ys + (size_t)(out_b * M * N) * es, 0x5a, GUARD * es);
    memset((char *)ys1 + (size_t)(out_b * M * N) * es, 0x5a, GUARD * es);
    for (int pass = -1; pass < 2; pass++) {
        /* pass -1: the small path on 1 thread; 0: on 2; 1: the blocked driver */
        const int64_t m = pass > 0 ? Mbig : M; /* the same buffers; the rows' strides keep Mbig */
        void *y = pass > 0 ? yb : pass == 0 ? ys : ys1;
        amp_set_threads(pass < 0 ? 1 : 2);
        if (g->linear) {
            if (t == AMP_F32)
                k->linear_f32(m, N, K, a, b, bias, y);
            else
                k->linear_bf16(m, N, K, a, b, bias, y);
            continue;
        }
        memset(&d, 0, sizeof d);
        d.batch = B;
        d.M = m;
        d.N = N;
        d.K = K;
        d.a_stride[0] = Mbig * K;
        d.a_stride[1] = g->a_t ? 1 : K;
        d.a_stride[2] = g->a_t ? Mbig : 1;
        d.b_stride[0] = K * N;
        d.b_stride[1] = g->b_t ? 1 : N;
        d.b_stride[2] = g->b_t ? K : 1;
        d.c_stride[0] = Mbig * N;
        d.c_stride[1] = g->c_mode == 1 ? N : 0;
        d.c_stride[2] = 1;
        d.alpha = g->alpha;
        d.beta = g->beta;
        d.sum_batch = g->sum_batch;
        if (t == AMP_F32)
            k->gemm_f32(&d, a, b, c, y);
        else
            k->gemm_bf16(&d, a, b, c, y);
    }
    if (memcmp(ys, ys1, (size_t)(out_b * M * N) * es) != 0)
        fail_msg("%s: small %s %s: 1 and 2 threads differ", k->isa, tn, g->what);
    for (size_t i = 0; i < GUARD * es; i++)
        if (((unsigned char *)ys)[(size_t)(out_b * M * N) * es + i] != 0x5a ||
            ((unsigned char *)ys1)[(size_t)(out_b * M * N) * es + i] != 0x5a)
            fail_msg("%s: small %s %s: written past the output's end", k->isa, tn, g->what);
    free(ys1);
    if (g->linear) {
        /* linear_relu, small (M rows: the relu in the epilogue) and blocked
         * (Mbig: the relu kernel after the product): the reference relu of
         * the products above, bit for bit */
        void *rs = malloc((size_t)(M * N + GUARD) * es), *rb = malloc((size_t)(Mbig * N) * es);
        assert_true(rs && rb);
        memset((char *)rs + (size_t)(M * N) * es, 0x5a, GUARD * es);
        amp_set_threads(2);
        if (t == AMP_F32) {
            k->linear_relu_f32(M, N, K, a, b, bias, rs);
            k->linear_relu_f32(Mbig, N, K, a, b, bias, rb);
            amp_ref_relu_f32((size_t)(M * N), ys, ys);
            amp_ref_relu_f32((size_t)(Mbig * N), yb, yb);
        } else {
            k->linear_relu_bf16(M, N, K, a, b, bias, rs);
            k->linear_relu_bf16(Mbig, N, K, a, b, bias, rb);
            amp_ref_relu_bf16((size_t)(M * N), ys, ys);
            amp_ref_relu_bf16((size_t)(Mbig * N), yb, yb);
        }
        if (memcmp(rs, ys, (size_t)(M * N) * es) != 0 || memcmp(rb, yb, (size_t)(Mbig * N) * es) != 0)
            fail_msg("%s: small %s %s: linear_relu differs from relu(linear)", k->isa, tn, g->what);
        for (size_t i = 0; i < GUARD * es; i++)
            if (((unsigned char *)rs)[(size_t)(M * N) * es + i] != 0x5a)
                fail_msg("%s: small %s %s: linear_relu wrote past the output's end", k->isa, tn, g->what);
        free(rs);
        free(rb);
    }
    if (!g->linear && !g->c_mode) {
        /* gemm_relu_backward, small (M rows) and blocked (Mbig): the
         * reference relu_backward of the products above, given a y with
         * zeros of both signs, negatives and NaN */
        void *my = random_buf(t, (size_t)(out_b * Mbig * N)), *rs = malloc((size_t)(out_b * M * N + GUARD) * es);
        void *rb = malloc((size_t)(out_b * Mbig * N) * es), *ey = malloc((size_t)(out_b * M * N) * es);
        assert_true(rs && rb && ey);
        memset((char *)rs + (size_t)(out_b * M * N) * es, 0x5a, GUARD * es);
        for (int64_t i = 0; i < out_b * Mbig * N; i += 5)
            amp_store_from_f32(t, my, (size_t)i, i % 3 ? 0.0f : i % 2 ? -0.0f : NAN);
        for (int64_t ob = 0; ob < out_b; ob++) /* y of the M-row product: the first M rows of each batch */
            memcpy((char *)ey + (size_t)(ob * M * N) * es, (char *)my + (size_t)(ob * Mbig * N) * es, (size_t)(M * N) * es);
        amp_set_threads(2);
        d.M = M;
        if (t == AMP_F32) {
            k->gemm_relu_backward_f32(&d, a, b, ey, rs);
            d.M = Mbig;
            k->gemm_relu_backward_f32(&d, a, b, my, rb);
            amp_ref_relu_backward_f32((size_t)(out_b * M * N), ey, ey, ys, ey);
            amp_ref_relu_backward_f32((size_t)(out_b * Mbig * N), my, my, yb, my);
        } else {
            k->gemm_relu_backward_bf16(&d, a, b, ey, rs);
            d.M = Mbig;
            k->gemm_relu_backward_bf16(&d, a, b, my, rb);
            amp_ref_relu_backward_bf16((size_t)(out_b * M * N), ey, ey, ys, ey);
            amp_ref_relu_backward_bf16((size_t)(out_b * Mbig * N), my, my, yb, my);
        }
        if (memcmp(rs, ey, (size_t)(out_b * M * N) * es) != 0 || memcmp(rb, my, (size_t)(out_b * Mbig * N) * es) != 0)
            fail_msg("%s: small %s %s: gemm_relu_backward differs from relu_backward(gemm)", k->isa, tn, g->what);
        for (size_t i = 0; i < GUARD * es; i++)
            if (((unsigned char *)rs)[(size_t)(out_b * M * N) * es + i] != 0x5a)
                fail_msg("%s: small %s %s: gemm_relu_backward wrote past the output's end", k->isa, tn, g->what);
        free(my);
        free(rs);
        free(rb);
        free(ey);
    }
    for (int64_t ob = 0; ob < out_b; ob++)
        if (memcmp((char *)ys + (size_t)(ob * M * N) * es, (char *)yb + (size_t)(ob * Mbig * N) * es,
                   (size_t)(M * N) * es) != 0)
            for (int64_t i = 0; i < M * N; i++) {
                uint32_t vs = 0, vb = 0;
                memcpy(&vs, (char *)ys + (size_t)(ob * M * N + i) * es, es);
                memcpy(&vb, (char *)yb + (size_t)(ob * Mbig * N + i) * es, es);
                if (vs != vb)
                    fail_msg("%s: small %s %s [%lld][%lld]: 0x%08x, blocked driver 0x%08x", k->isa, tn, g->what,
                             (long long)ob, (long long)i, (unsigned)vs, (unsigned)vb);
            }
    free(a);
    free(b);
    free(c);
    free(bias);
    free(ys);
    free(yb);
}

/* y's n bf16 bit patterns: odd (odd elements) and even (even ones). */
static void expect_alternating(const char *isa, const char *what, int N, int K, const amp_bf16 *y, int n,
                               uint16_t odd, uint16_t even)
{
    for (int i = 0; i < n; i++) {
        uint16_t bits;
        memcpy(&bits, &y[i], 2);
        if (bits != (i % 2 ? odd : even))
            fail_msg("%s: %s N %d K %d [%d]: 0x%04x, want 0x%04x", isa, what, N, K, i, bits, i % 2 ? odd : even);
    }
}

/* linear_relu where the product plus the bias is a tiny f32 subnormal
 * (+-2^-139): it rounds to bf16 +-0, and relu keeps -0, so the fused
 * epilogue may not take the relu before the rounding (which gives +0).
 * The product itself is exact and normal (vdpbf16ps flushes subnormal
 * sums): x = 1 + 2^-7, w = -+2^-125 (1 + 2^-7), bias = +-2^-125 (1 + 2^-6),
 * the sign alternating by column; K = 2 (a zero second term: A read in
 * place) and K = 1 (A packed).  Then linear alone with bias = +-2^-125:
 * the sums are +-(2^-131 + 2^-139), subnormal in f32, and round to the
 * bf16 subnormal +-2^-131 (0x0004), where vcvtneps2bf16 alone would give
 * +-0.  N = 16 runs avx512bf16's 16 x 16 tiles, N = 64 its 8 x 32 ones
 * (3 of 8 rows used). */
static void test_linear_relu_tiny(void **state)
{
    (void)state;
    static const char *isas[] = { "ref", "avx2", "avx512", "avx512bf16", "neon", "neonfp16", "neonbf16" };
    enum { M = 3, NMAX = 64 };
    amp_bf16 x[M * 2], w[NMAX * 2], bias[NMAX], y[M * NMAX];
    for (int N = 16; N <= NMAX; N += NMAX - 16)
        for (int K = 1; K <= 2; K++) {
            for (int m = 0; m < M; m++) {
                amp_store_from_f32(AMP_BF16, x, (size_t)(m * K), 1 + 0x1p-7f);
                if (K == 2)
                    amp_store_from_f32(AMP_BF16, x, (size_t)(m * K + 1), 0.0f);
            }
            for (int n = 0; n < N; n++) {
                const float sign = n % 2 ? 1.0f : -1.0f;
                amp_store_from_f32(AMP_BF16, w, (size_t)(n * K), sign * 0x1p-125f * (1 + 0x1p-7f));
                if (K == 2)
                    amp_store_from_f32(AMP_BF16, w, (size_t)(n * K + 1), 0.0f);
                amp_store_from_f32(AMP_BF16, bias, (size_t)n, -sign * 0x1p-125f * (1 + 0x1p-6f));
            }
            for (int relu = 1; relu >= 0; relu--) {
                if (!relu) /* the bias for linear alone */
                    for (int n = 0; n < N; n++)
                        amp_store_from_f32(AMP_BF16, bias, (size_t)n, (n % 2 ? -1.0f : 1.0f) * 0x1p-125f);
                for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
                    const amp_kernel_table *k = amp_kernel_table_for(isas[s]);
                    if (k == NULL)
                        continue;
                    (relu ? k->linear_relu_bf16 : k->linear_bf16)(M, N, K, x, w, bias, y);
                    expect_alternating(isas[s], relu ? "linear_relu" : "linear", N, K, y, M * N,
                                       relu ? 0x0000 : 0x0004, relu ? 0x8000 : 0x8004);
                }
            }
        }
}

static void test_small_vs_blocked(void **state)
{
    (void)state;
    for (int s = 0; s < 3; s++) {
        static const char *isas[] = { "avx512bf16", "avx512", "avx2" };
        const amp_kernel_table *k = amp_kernel_table_for(isas[s]);
        if (k == NULL) {
            printf("   %s: not supported by this CPU, skipped\n", isas[s]);
            continue;
        }
        /* two threads always split the products that may split */
        amp_small_split_policy(1);
        for (size_t i = 0; i < sizeof small_cases / sizeof small_cases[0]; i++) {
            run_small_case(k, AMP_BF16, &small_cases[i]);
            /* the avx2 set's small path takes f32 storage too */
            if (s == 2)
                run_small_case(k, AMP_F32, &small_cases[i]);
        }
        amp_small_split_policy(0);
    }
    amp_set_threads(0);
}

/* The sets whose small path splits a product between two threads. */
static const char *const split_isas[] = { "avx512bf16", "avx2" };

/* The measured choice (frame/small_split.c): a splittable product, 300
 * calls on two threads, one thread or two as measured call by call (both
 * are tried, and the choice may change midway); every result the
 * one-thread bits. */
static void test_small_split_measured(void **state)
{
    void *x = random_buf(AMP_BF16, 64 * 64), *w = random_buf(AMP_BF16, 128 * 64), *bias = random_buf(AMP_BF16, 128);
    void *want = malloc(64 * 128 * 2), *got = malloc(64 * 128 * 2);
    (void)state;
    assert_true(want && got);
    for (size_t s = 0; s < sizeof split_isas / sizeof split_isas[0]; s++) {
        const amp_kernel_table *k = amp_kernel_table_for(split_isas[s]);
        if (k == NULL) {
            printf("   %s: not supported by this CPU, skipped\n", split_isas[s]);
            continue;
        }
        amp_set_threads(1);
        k->linear_relu_bf16(64, 128, 64, x, w, bias, want);
        amp_set_threads(2);
        for (int r = 0; r < 300; r++) {
            memset(got, 0x5a, 64 * 128 * 2);
            k->linear_relu_bf16(64, 128, 64, x, w, bias, got);
            if (memcmp(got, want, 64 * 128 * 2) != 0)
                fail_msg("%s: 64 x 128 x 64 linear_relu, call %d of the measured choice, differs", split_isas[s], r);
        }
        amp_set_threads(0);
    }
    free(x);
    free(w);
    free(bias);
    free(want);
    free(got);
}

/* A small product large enough to split (two threads) while another
 * thread of the program keeps the pool busy with blocked products: the
 * split runs both halves on its own thread when the pool is taken, and
 * every result is the same bits. */
typedef struct {
    const amp_kernel_table *k;
    const void *a, *b;
    void *y;
    int rounds, done; /* done: set (atomically) when the rounds are over */
} busy_ctx;

static void *keep_pool_busy(void *arg)
{
    busy_ctx *c = arg;
    amp_gemm_desc d = { 1, 256, 256, 256, { 0, 256, 1 }, { 0, 256, 1 }, { 0, 0, 0 }, 1.0, 0.0, 0 };
    for (int r = 0; r < c->rounds; r++)
        c->k->gemm_bf16(&d, c->a, c->b, NULL, c->y);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void small_beside_busy_pool(const amp_kernel_table *k)
{
    void *x = random_buf(AMP_BF16, 64 * 64), *w = random_buf(AMP_BF16, 128 * 64), *bias = random_buf(AMP_BF16, 128);
    void *want = malloc(64 * 128 * 2), *got = malloc(64 * 128 * 2);
    void *ba = random_buf(AMP_BF16, 256 * 256), *bb = random_buf(AMP_BF16, 256 * 256), *by = malloc(256 * 256 * 2);
    busy_ctx c = { k, ba, bb, by, 40, 0 };
    pthread_t other;
    assert_true(want && got && by);
    k->linear_bf16(64, 128, 64, x, w, bias, want);
    assert_int_equal(pthread_create(&other, NULL, keep_pool_busy, &c), 0);
    /* until the other thread is done (its products hold the pool most of
     * the time, so most splits here find it taken) */
    for (int r = 0; r < 100 || !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); r++) {
        memset(got, 0x5a, 64 * 128 * 2);
        k->linear_bf16(64, 128, 64, x, w, bias, got);
        if (memcmp(got, want, 64 * 128 * 2) != 0)
            fail_msg("%s: 64 x 128 x 64 linear beside a busy pool differs (round %d)", k->isa, r);
    }
    pthread_join(other, NULL);
    free(x);
    free(w);
    free(bias);
    free(want);
    free(got);
    free(ba);
    free(bb);
    free(by);
}

static void test_small_with_pool_busy(void **state)
{
    (void)state;
    amp_set_threads(2);
    amp_small_split_policy(1); /* every call tries the pool */
    for (size_t s = 0; s < sizeof split_isas / sizeof split_isas[0]; s++) {
        const amp_kernel_table *k = amp_kernel_table_for(split_isas[s]);
        if (k == NULL)
            printf("   %s: not supported by this CPU, skipped\n", split_isas[s]);
        else
            small_beside_busy_pool(k);
    }
    amp_small_split_policy(0);
    amp_set_threads(0);
}

static void test_threads_api(void **state)
{
    (void)state;
    amp_set_threads(3);
    assert_int_equal(amp_get_threads(), 3);
    amp_set_threads(1000);
    assert_int_equal(amp_get_threads(), AMP_MAX_THREADS);
    amp_set_threads(0); /* the default: AMPRT_THREADS or the online CPUs */
    assert_true(amp_get_threads() >= 1);
}

static void test_lookup(void **state)
{
    (void)state;
    assert_non_null(amp_kernel_table_for("ref"));
    assert_ptr_equal(amp_kernel_table_for("ref")->gemm_f32, amp_ref_gemm_f32);
    assert_null(amp_kernel_table_for("avx9000"));
    assert_null(amp_kernel_table_for(NULL));
    /* the active set is one of the supported ones */
    assert_non_null(amp_kernel_table_for(amp_isa_name()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_api),
        cmocka_unit_test(test_lookup),
        ISA_UNIT_TESTS(test_isa),
        cmocka_unit_test(test_small_vs_blocked),
        cmocka_unit_test(test_small_with_pool_busy),
        cmocka_unit_test(test_small_split_measured),
        cmocka_unit_test(test_linear_relu_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
