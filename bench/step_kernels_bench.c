/*
 * step_kernels_bench.c - the digits MLP's training step (examples/digits/
 * mlp.amp at batch 64, -t cpu: bf16 autocast, 64 -> 128 -> 10) kernel by
 * kernel, each call at the step's shapes and in its order, as the emitted
 * step makes them: the median and the fastest of 3000 calls (after 200
 * untimed ones) in microseconds, and the sum of the medians.  For seeing
 * where a kernel set spends the step: the products against the casts, the
 * loss, the sums and the optimizer.
 *
 *   cc -std=c99 -O2 -Iruntime/include bench/step_kernels_bench.c build/libamprt.a -lm -lpthread -o step_kernels_bench
 *   AMPRT_THREADS=1|2 [AMPRT_ISA=avx2] ./step_kernels_bench
 *
 * The same call repeated keeps its operands in cache, so the sum is under
 * the step's own time (`model_bench ... train 64`).  Values are fixed
 * patterns, finite and normal.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "amprt.h"

#define WARM 200
#define CALLS 3000

static double times[CALLS];
static double total;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what)
{
    qsort(times, CALLS, sizeof *times, by_value);
    printf("%-32s %8.2f %8.2f\n", what, times[CALLS / 2], times[0]);
    total += times[CALLS / 2];
}

/* WARM untimed calls of STMT, then CALLS timed ones, reported as WHAT */
#define TIME(what, stmt)                                \
    do {                                                \
        for (int i_ = 0; i_ < WARM; i_++) {             \
            stmt;                                       \
        }                                               \
        for (int i_ = 0; i_ < CALLS; i_++) {            \
            const double t0_ = now_us();                \
            stmt;                                       \
            times[i_] = now_us() - t0_;                 \
        }                                               \
        report(what);                                   \
    } while (0)

static void *alloc(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (p == NULL) {
        fprintf(stderr, "step_kernels_bench: out of memory\n");
        exit(1);
    }
    return p;
}

int main(void)
{
    enum { B = 64, IN = 64, HID = 128, OUT = 10 };
    float *x = alloc(IN * B * 4), *w1 = alloc(HID * IN * 4), *b1 = alloc(HID * 4), *w2 = alloc(OUT * HID * 4);
    float *b2 = alloc(OUT * 4), *logits32 = alloc(OUT * B * 4), *dlogits32 = alloc(OUT * B * 4);
    float *grad = alloc(HID * IN * 4), *momentum = alloc(HID * IN * 4), loss = 0, seed = 1;
    amp_bf16 *xb = alloc(IN * B * 2), *w1b = alloc(HID * IN * 2), *b1b = alloc(HID * 2), *h = alloc(HID * B * 2);
    amp_bf16 *w2b = alloc(OUT * HID * 2), *b2b = alloc(OUT * 2), *logits = alloc(OUT * B * 2);
    amp_bf16 *dlogits = alloc(OUT * B * 2), *dh = alloc(HID * B * 2), *dw2 = alloc(OUT * HID * 2);
    amp_bf16 *db2 = alloc(OUT * 2), *dw1 = alloc(HID * IN * 2), *db1 = alloc(HID * 2);
    int64_t *target = alloc(B * sizeof *target);
    const amp_sgd_hparams sgd = { 0.1, 0.9, 0.0, 0.0, 0, 0 };

    for (int i = 0; i < IN * B; i++)
        x[i] = (float)((i * 37) % 17) / 17.0f;
    for (int i = 0; i < HID * IN; i++)
        w1[i] = (float)((i * 13) % 29 - 14) / 100.0f;
    for (int i = 0; i < OUT * HID; i++)
        w2[i] = (float)((i * 7) % 23 - 11) / 100.0f;
    for (int i = 0; i < HID; i++)
        b1[i] = 0.01f * (float)i;
    for (int i = 0; i < OUT; i++)
        b2[i] = 0.01f * (float)i;
    for (int i = 0; i < B; i++)
        target[i] = i % OUT;

    printf("# kernel set %s, %d thread(s); us per call: median, fastest\n", amp_isa_name(), amp_get_threads());
    TIME("cast x", amp_cast_f32_bf16(IN * B, x, xb));
    TIME("cast fc1.weight", amp_cast_f32_bf16(HID * IN, w1, w1b));
    TIME("cast fc1.bias", amp_cast_f32_bf16(HID, b1, b1b));
    TIME("linear_relu 64 x 128 x 64", amp_linear_relu_bf16(B, HID, IN, xb, w1b, b1b, h));
    TIME("cast fc2.weight", amp_cast_f32_bf16(OUT * HID, w2, w2b));
    TIME("cast fc2.bias", amp_cast_f32_bf16(OUT, b2, b2b));
    TIME("linear 64 x 10 x 128", amp_linear_bf16(B, OUT, HID, h, w2b, b2b, logits));
    TIME("cast logits", amp_cast_bf16_f32(OUT * B, logits, logits32));
    TIME("cross_entropy_with_grad 64 x 10",
         amp_cross_entropy_with_grad_f32(B, OUT, 1, logits32, target, NULL, -100, 0.0, AMP_REDUCTION_MEAN, &seed,
                                         &loss, dlogits32));
    TIME("cast dlogits", amp_cast_f32_bf16(OUT * B, dlogits32, dlogits));
    {
        const amp_gemm_desc d = { 1, B, HID, OUT, { 0, OUT, 1 }, { 0, HID, 1 }, { 0, 0, 0 }, 1.0, 0.0, 0 };
        TIME("gemm_relu_backward 64 x 128 x 10", amp_gemm_relu_backward_bf16(&d, dlogits, w2b, h, dh));
    }
    {
        const amp_gemm_desc d = { 1, OUT, HID, B, { 0, 1, OUT }, { 0, HID, 1 }, { 0, 0, 0 }, 1.0, 0.0, 0 };
        TIME("gemm dW2 10 x 128 x 64", amp_gemm_bf16(&d, dlogits, h, NULL, dw2));
    }
    {
        const int64_t shape[] = { B, OUT };
        const uint8_t reduce[] = { 1, 0 };
        TIME("sum db2 over 64 x 10", amp_sum_bf16(2, shape, reduce, dlogits, db2));
    }
    TIME("cast dW2", amp_cast_bf16_f32(OUT * HID, dw2, grad));
    {
        const amp_gemm_desc d = { 1, HID, IN, B, { 0, 1, HID }, { 0, IN, 1 }, { 0, 0, 0 }, 1.0, 0.0, 0 };
        TIME("gemm dW1 128 x 64 x 64", amp_gemm_bf16(&d, dh, xb, NULL, dw1));
    }
    {
        const int64_t shape[] = { B, HID };
        const uint8_t reduce[] = { 1, 0 };
        TIME("sum db1 over 64 x 128", amp_sum_bf16(2, shape, reduce, dh, db1));
    }
    TIME("cast dW1", amp_cast_bf16_f32(HID * IN, dw1, grad));
    TIME("sgd fc1.weight", amp_sgd_f32(HID * IN, w1, grad, momentum, &sgd, 1, 0));
    TIME("sgd fc2.weight", amp_sgd_f32(OUT * HID, w2, grad, momentum, &sgd, 1, 0));
    printf("%-32s %8.2f\n", "sum of the medians", total);
    return 0;
}
