/*
 * kernel_bench.c - times the runtime's kernels between the products
 * (element-wise, casts, batch_norm, pooling, sums, cross_entropy, their
 * gradients, sgd) of one kernel set against the reference set, for each
 * storage dtype f32, bf16 and f16, on one thread: which storage wins per
 * op on that set (bf16 and f16 compute in f32 on AVX2, so they trade the
 * conversions against half the memory traffic).
 *
 *   cc -std=c99 -O2 -Iruntime/include -Iruntime/src bench/kernel_bench.c libamprt.a -lm -lpthread
 *   ./kernel_bench [SET [RUNS [THREADS]]]   (SET: avx2 by default; RUNS: 15; THREADS: 1)
 *
 * Prints per op and dtype the fastest of RUNS timed calls (after two
 * untimed ones; on a shared machine the minimum is the figure other load
 * disturbs least) in microseconds of wall time on THREADS threads, for SET and for the reference (3
 * calls), and per op the bf16/f32 and f16/f32 time ratios on SET (below
 * 1: the 2-byte storage wins).  The
 * shapes are resnet18's and the digits MLP's (make bench-kernels).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amprt_internal.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n values of dtype t, uniform in [-1, 1] (fixed seed) */
static void *random_buf(amp_dtype t, size_t n)
{
    static uint32_t s = 0x9e3779b9u;
    void *p = malloc(n * amp_dtype_size(t) + 64);
    if (p == NULL) {
        fprintf(stderr, "kernel_bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        amp_store_from_f32(t, p, (int64_t)i, (float)(s >> 8) / 8388608.0f - 1.0f);
    }
    return p;
}

/* The arguments every case draws from (sized for the largest). */
typedef struct {
    amp_dtype t;
    const amp_kernel_table *k;
    void *a, *b, *c, *y, *f32, *mean, *var, *w, *bias;
    int64_t *target;
} args;

#define CALL(k, t, op, ...)                                                                       \
    do {                                                                                          \
        if ((t) == AMP_F32)                                                                       \
            (k)->op##_f32(__VA_ARGS__);                                                           \
        else if ((t) == AMP_BF16)                                                                 \
            (k)->op##_bf16(__VA_ARGS__);                                                          \
        else                                                                                      \
            (k)->op##_f16(__VA_ARGS__);                                                           \
    } while (0)

enum { RELU, ADD, RELU_BW, ADD_RELU_BW, BN, BN_BW, BN_TRAIN, BN_TRAIN_BW, CLAMP, CLAMP_BW, SGD, SUM, MAX_POOL, MAX_POOL_BW, GAP, CE, CAST_TO, CAST_FROM, ACC, NCASES };
static const char *const case_name[NCASES] = {
    "relu [8,64,56,56]", "add [8,64,56,56]", "relu_backward [8,64,56,56]", "add_relu_backward [8,64,56,56]",
    "batch_norm [8,64,56,56]", "batch_norm_backward [8,64,56,56]", "batch_norm_train [8,64,56,56]",
    "batch_norm_backward training", "clamp 0..6 (ReLU6) [8,64,56,56]", "clamp_backward 0..6", "sgd momentum (1M params)",
    "sum [64,128] over rows", "max_pool 3x3/2 [2,64,112,112]", "max_pool_backward 3x3/2", "adaptive_avg_pool [8,512,7,7]->1",
    "cross_entropy_with_grad [64,10]", "cast f32 -> T (1M)", "cast T -> f32 (1M)", "grad_accumulate T into f32 (1M)",
};

#define ACT ((size_t)8 * 64 * 56 * 56) /* = 2 * 64 * 112 * 112, max_pool's input */

static void run_case(int which, const args *g)
{
    const amp_kernel_table *k = g->k;
    const amp_dtype t = g->t;
    amp_pool_desc pd = { 2, 2 * 64, { 112, 112 }, { 56, 56 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0, 0 };
    static const amp_sgd_hparams h = { 0.01, 0.9, 0.0, 0.0, 0, 0 };
    static const int64_t sum_shape[2] = { 64, 128 }, gap_in[2] = { 7, 7 }, gap_out[2] = { 1, 1 };
    static const uint8_t sum_reduce[2] = { 1, 0 };
    float loss[4];
    switch (which) {
    case RELU: CALL(k, t, relu, ACT, g->a, g->y); break;
    case ADD: CALL(k, t, add, ACT, g->a, g->b, g->y); break;
    case RELU_BW: CALL(k, t, relu_backward, ACT, g->a, NULL, g->b, g->y); break;
    case ADD_RELU_BW: CALL(k, t, add_relu_backward, ACT, g->a, g->b, g->c, g->y); break;
    case BN: CALL(k, t, batch_norm, 8, 64, 56 * 56, g->a, AMP_F32, g->mean, g->var, g->w, g->bias, 1e-5, g->y); break;
    case BN_BW:
        CALL(k, t, batch_norm_backward, 8, 64, 56 * 56, g->a, AMP_F32, g->mean, g->var, g->w, 0, 1e-5, g->b, g->y,
             g->c, (char *)g->c + 1024);
        break;
    case BN_TRAIN:
        CALL(k, t, batch_norm_train, 8, 64, 56 * 56, g->a, AMP_F32, g->mean, g->var, g->w, g->bias, 0.1, 1e-5, g->y);
        break;
    case BN_TRAIN_BW:
        CALL(k, t, batch_norm_backward, 8, 64, 56 * 56, g->a, AMP_F32, NULL, NULL, g->w, 1, 1e-5, g->b, g->y, g->c,
             (char *)g->c + 1024);
        break;
    case CLAMP: CALL(k, t, clamp, ACT, g->a, 0.0, 6.0, g->y); break;
    case CLAMP_BW: CALL(k, t, clamp_backward, ACT, g->a, NULL, g->b, 0.0, 6.0, g->y); break;
    case SGD: CALL(k, t, sgd, (size_t)1 << 20, g->y, g->a, g->c, &h, 3, 0); break;
    case SUM: CALL(k, t, sum, 2, sum_shape, sum_reduce, g->a, g->y); break;
    case MAX_POOL: CALL(k, t, max_pool, &pd, g->a, g->y, NULL); break;
    case MAX_POOL_BW: CALL(k, t, max_pool_backward, &pd, g->a, g->b, g->y); break;
    case GAP: CALL(k, t, adaptive_avg_pool, 2, 8 * 512, gap_in, gap_out, g->a, g->y); break;
    case CE:
        if (t == AMP_F32)
            (void)k->cross_entropy_with_grad_f32(64, 10, 1, g->a, g->target, NULL, -100, 0, AMP_REDUCTION_MEAN,
                                                 (const float *)g->b, (float *)loss, g->y);
        else if (t == AMP_BF16)
            (void)k->cross_entropy_with_grad_bf16(64, 10, 1, g->a, g->target, NULL, -100, 0, AMP_REDUCTION_MEAN,
                                                  g->b, (amp_bf16 *)loss, g->y);
        else
            (void)k->cross_entropy_with_grad_f16(64, 10, 1, g->a, g->target, NULL, -100, 0, AMP_REDUCTION_MEAN,
                                                 g->b, (amp_f16 *)loss, g->y);
        break;
    case CAST_TO:
        if (t == AMP_BF16)
            k->cast_f32_bf16((size_t)1 << 20, g->f32, g->y);
        else if (t == AMP_F16)
            k->cast_f32_f16((size_t)1 << 20, g->f32, g->y);
        break;
    case CAST_FROM:
        if (t == AMP_BF16)
            k->cast_bf16_f32((size_t)1 << 20, g->a, g->y);
        else if (t == AMP_F16)
            k->cast_f16_f32((size_t)1 << 20, g->a, g->y);
        break;
    case ACC:
        if (t == AMP_BF16)
            k->grad_accumulate_bf16((size_t)1 << 20, g->y, g->a);
        else if (t == AMP_F16)
            k->grad_accumulate_f16((size_t)1 << 20, g->y, g->a);
        break;
    }
}

/* the fastest of runs calls, in microseconds */
static double time_case(int which, const args *g, int runs)
{
    double *tv = malloc((size_t)runs * sizeof *tv), best;
    run_case(which, g);
    run_case(which, g);
    for (int r = 0; r < runs; r++) {
        const double t0 = now_us();
        run_case(which, g);
        tv[r] = now_us() - t0;
    }
    qsort(tv, (size_t)runs, sizeof *tv, cmp_double);
    best = tv[0];
    free(tv);
    return best;
}

int main(int argc, char **argv)
{
    const char *set = argc > 1 ? argv[1] : "avx2";
    const int runs = argc > 2 ? atoi(argv[2]) : 15, threads = argc > 3 ? atoi(argv[3]) : 1;
    const amp_kernel_table *fast = amp_kernel_table_for(set);
    static const amp_dtype types[3] = { AMP_F32, AMP_BF16, AMP_F16 };
    args g[3];
    if (fast == NULL || runs < 1) {
        fprintf(stderr, "kernel_bench: kernel set \"%s\" is not supported by this CPU (or RUNS < 1)\n", set);
        return 1;
    }
    amp_set_threads(threads);
    for (int i = 0; i < 3; i++) {
        g[i].t = types[i];
        g[i].a = random_buf(types[i], ACT);
        g[i].b = random_buf(types[i], ACT);
        g[i].c = random_buf(types[i], ACT);
        g[i].y = random_buf(AMP_F32, ACT); /* room for an f32 result of a cast too */
        g[i].f32 = random_buf(AMP_F32, (size_t)1 << 20);
        g[i].mean = random_buf(AMP_F32, 64);
        g[i].var = random_buf(AMP_F32, 64);
        g[i].w = random_buf(AMP_F32, 64);
        g[i].bias = random_buf(AMP_F32, 64);
        for (int c = 0; c < 64; c++)
            ((float *)g[i].var)[c] = fabsf(((float *)g[i].var)[c]) + 0.5f;
        g[i].target = malloc(64 * sizeof(int64_t));
        for (int r = 0; r < 64; r++)
            g[i].target[r] = r % 10;
    }
    printf("kernel set %s against ref, %d thread(s), fastest of %d calls, microseconds\n", fast->isa, threads, runs);
    printf("%-36s %10s %10s %10s %10s %10s %10s %9s %9s\n", "op", "f32", "bf16", "f16", "ref f32", "ref bf16",
           "ref f16", "bf16/f32", "f16/f32");
    for (int which = 0; which < NCASES; which++) {
        double us[2][3];
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < 3; i++) {
                g[i].k = s == 0 ? fast : &amp_ref_kernel_table;
                us[s][i] = (which >= CAST_TO && i == 0) ? NAN : time_case(which, &g[i], s == 0 ? runs : 3);
            }
        printf("%-36s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %9.2f %9.2f\n", case_name[which], us[0][0], us[0][1],
               us[0][2], us[1][0], us[1][1], us[1][2], us[0][1] / us[0][0], us[0][2] / us[0][0]);
    }
    for (int i = 0; i < 3; i++) {
        free(g[i].a), free(g[i].b), free(g[i].c), free(g[i].y), free(g[i].f32);
        free(g[i].mean), free(g[i].var), free(g[i].w), free(g[i].bias), free(g[i].target);
    }
    return 0;
}
