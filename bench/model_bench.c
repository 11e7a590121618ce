/*
 * model_bench.c - times one model ampc compiled with --prefix=bench:
 * inference (bench_forward) or a training step (bench_train_step), on
 * weights read from a safetensors file (the same file bench/torch_models.py
 * gives PyTorch), so both sides compute on identical parameters.
 *
 *   ampc MODEL.amp -t cpu --prefix=bench -o DIR/bench.c
 *   cc -std=c99 -O2 -Iruntime/include -IDIR bench/model_bench.c DIR/bench.c libamprt.a -lm -lpthread
 *   ./model_bench WEIGHTS infer|train BATCH RUNS
 *
 * Prints the median and the minimum of RUNS timed calls, in milliseconds,
 * after untimed ones (pool start-up, page faults, caches, and the second
 * CPU's clock: at least WARMUP calls and WARMUP_MS of them, as
 * bench/torch_models.py warms PyTorch up), and the kernel set that ran
 * (amp_isa_name: AMPRT_ISA's choice):
 *     ampc <infer|train> <BATCH> <median ms> <min ms> <kernel set>
 * Threads: AMPRT_THREADS, or amp_set_threads's default (the online CPUs).
 * Inference runs on weights prepared once (bench_prepare: cast to bf16 and
 * packed for the kernels, as at a deployed model's load); BENCH_UNPREPARED=1
 * times bench_forward instead, which converts and packs them every call.
 * Inputs are uniform in [-1, 1] (images) and class indices i mod 10, from a
 * fixed-seed generator.  A training step updates the parameters each call,
 * as a training loop does.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amprt.h"
#include "bench.h"

#define WARMUP 2
/* Two calls of the digits step take 25 us, and its median over the next
 * 200 on two threads was 11.6 us against 10.5 us over 3000 (one thread:
 * 11.5 either way): a second CPU that was idle takes milliseconds to come
 * up to speed.  So both sides warm up for this long. */
#define WARMUP_MS 20.0

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "model_bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static void check(int rc, const char *what)
{
    if (rc != AMP_OK) {
        fprintf(stderr, "model_bench: %s: %s\n", what, bench_strerror(rc));
        exit(1);
    }
}

static uint32_t rng_state = 0x2545f491u;

static float uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

int main(int argc, char **argv)
{
    long batch, runs;
    int train;
    bench_dims dims;
    bench_params params;
    bench_inputs inputs;
    bench_outputs outputs;
    void *weights, *arena;
    size_t arena_bytes;
    double *times;

    if (argc != 5 || (strcmp(argv[2], "infer") != 0 && strcmp(argv[2], "train") != 0) ||
        (batch = strtol(argv[3], NULL, 10)) < 1 || (runs = strtol(argv[4], NULL, 10)) < 1) {
        fprintf(stderr, "usage: %s WEIGHTS infer|train BATCH RUNS\n", argv[0]);
        return 2;
    }
    train = strcmp(argv[2], "train") == 0;
    memset(&dims, 0, sizeof dims);
    memset(&params, 0, sizeof params);
    memset(&inputs, 0, sizeof inputs);
    memset(&outputs, 0, sizeof outputs);
    dims.B = batch;
    weights = xmalloc(BENCH_WEIGHTS_BYTES);
    check(bench_load_weights(argv[1], weights, BENCH_WEIGHTS_BYTES, &params), argv[1]);

    {
        float *x = xmalloc(BENCH_X_NUMEL(dims.B) * sizeof *x);
        for (size_t i = 0; i < BENCH_X_NUMEL(dims.B); i++)
            x[i] = uniform();
        inputs.x = x;
    }
#ifdef BENCH_Y_DTYPE
    {
        int64_t *y = xmalloc(BENCH_Y_NUMEL(dims.B) * sizeof *y);
        for (size_t i = 0; i < BENCH_Y_NUMEL(dims.B); i++)
            y[i] = (int64_t)(i % 10);
        inputs.y = y;
    }
#endif
    outputs.logits = xmalloc(BENCH_LOGITS_NUMEL(dims.B) * amp_dtype_size(BENCH_LOGITS_DTYPE));
#ifdef BENCH_LOSS_DTYPE
    outputs.loss = xmalloc(BENCH_LOSS_NUMEL(dims.B) * amp_dtype_size(BENCH_LOSS_DTYPE));
#endif

    times = xmalloc((size_t)runs * sizeof *times);
    if (train) {
#ifdef BENCH_STATE_BYTES
        bench_train_state state;
        check(bench_train_init(&state, xmalloc(BENCH_STATE_BYTES), BENCH_STATE_BYTES, &params), "train_init");
        arena_bytes = bench_train_arena_bytes(&dims);
        arena = xmalloc(arena_bytes);
        const double warm_start = now_ms();
        for (long r = 0; r < WARMUP || now_ms() - warm_start < WARMUP_MS; r++)
            check(bench_train_step(&state, &inputs, &outputs, &dims, arena, arena_bytes), "train_step");
        for (long r = 0; r < runs; r++) {
            double t0 = now_ms();
            check(bench_train_step(&state, &inputs, &outputs, &dims, arena, arena_bytes), "train_step");
            times[r] = now_ms() - t0;
        }
#else
        fprintf(stderr, "model_bench: this model has no train section\n");
        return 2;
#endif
    } else {
        /* the weights are cast and packed once, at load time (bench_prepare),
         * as a deployed model does; BENCH_UNPREPARED=1 times bench_forward,
         * which redoes that on every call */
        const char *unprepared = getenv("BENCH_UNPREPARED");
        void *prepared = NULL;
        if (!unprepared || strcmp(unprepared, "1") != 0) {
            prepared = xmalloc(bench_prepared_bytes());
            check(bench_prepare(&params, prepared, bench_prepared_bytes()), "prepare");
        }
        arena_bytes = bench_arena_bytes(&dims);
        arena = xmalloc(arena_bytes);
        const double warm_start = now_ms();
        for (long r = 0; r < WARMUP || now_ms() - warm_start < WARMUP_MS; r++)
            check(bench_forward_prepared(prepared, &params, &inputs, &outputs, &dims, arena, arena_bytes), "forward");
        for (long r = 0; r < runs; r++) {
            double t0 = now_ms();
            check(bench_forward_prepared(prepared, &params, &inputs, &outputs, &dims, arena, arena_bytes), "forward");
            times[r] = now_ms() - t0;
        }
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    printf("ampc %s %ld %.4f %.4f %s\n", argv[2], batch, times[runs / 2], times[0], amp_isa_name());
    return 0;
}
