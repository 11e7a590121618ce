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
 * bench/torch_models.py warms PyTorch up; a call slower than SLOW_MS ends
 * the warm-up, and then only as many of the RUNS calls are timed as fit in
 * SLOW_BUDGET_MS, at least one, as PyTorch's side does too), and the
 * kernel set that ran (amp_isa_name: AMPRT_ISA's choice):
 *     ampc <infer|train> <BATCH> <median ms> <min ms> <kernel set>
 * Threads: AMPRT_THREADS, or amp_set_threads's default (the online CPUs).
 * BENCH_CLOCK=cpu times process CPU time instead of wall time.
 * Inference runs on weights prepared once (bench_prepare: cast to bf16 and
 * packed for the kernels, as at a deployed model's load); BENCH_UNPREPARED=1
 * times bench_forward instead, which converts and packs them every call.
 * Inputs are uniform in [-1, 1] (images), or token ids uniform in
 * [1, BENCH_VOCAB) where the input is i64, and class indices i mod 10 (mod
 * the class count where that is smaller), from a fixed-seed generator.  A
 * training step updates the parameters each call, as a training loop does.
 *
 * The model's input, target and output are x, y and logits (the .amp
 * examples); a model that names them otherwise (tools/torch2amp's input,
 * target and output: bench/zoo_bench.py) is built with -DBENCH_IN=tokens
 * -DBENCH_IN_UP=TOKENS -DBENCH_TARGET=target -DBENCH_TARGET_UP=TARGET, and
 * BENCH_OUT/BENCH_OUT_UP likewise (the _UP forms name the header's
 * BENCH_<NAME>_DTYPE and _NUMEL macros).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amprt.h"
#include "bench.h"

#ifndef BENCH_IN
#define BENCH_IN x
#define BENCH_IN_UP X
#endif
#if !defined(BENCH_TARGET) && defined(BENCH_Y_DTYPE)
#define BENCH_TARGET y
#define BENCH_TARGET_UP Y
#endif
#ifndef BENCH_OUT
#define BENCH_OUT logits
#define BENCH_OUT_UP LOGITS
#endif
#ifndef BENCH_VOCAB
#define BENCH_VOCAB 1000
#endif
#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define IN_DTYPE XCAT3(BENCH_, BENCH_IN_UP, _DTYPE)
#define IN_NUMEL XCAT3(BENCH_, BENCH_IN_UP, _NUMEL)
#define OUT_DTYPE XCAT3(BENCH_, BENCH_OUT_UP, _DTYPE)
#define OUT_NUMEL XCAT3(BENCH_, BENCH_OUT_UP, _NUMEL)
#define TARGET_NUMEL XCAT3(BENCH_, BENCH_TARGET_UP, _NUMEL)

#define WARMUP 2
/* Two calls of the digits step take 25 us, and its median over the next
 * 200 on two threads was 11.6 us against 10.5 us over 3000 (one thread:
 * 11.5 either way): a second CPU that was idle takes milliseconds to come
 * up to speed.  So both sides warm up for this long. */
#define WARMUP_MS 20.0
/* A call slower than this needs no second warm-up call, and its timed
 * calls stop at SLOW_BUDGET_MS (the zoo's vgg16 and BERT training steps):
 * the rule bench/torch_models.py applies to PyTorch's side. */
#define SLOW_MS 1000.0
#define SLOW_BUDGET_MS 3000.0

/* BENCH_CLOCK=cpu: every time here is the process's CPU time instead of
 * wall time (with AMPRT_THREADS=1, what a call's work costs, however
 * loaded the machine: bench/zoo_cpu_time.py). */
static double now_ms(void)
{
    static int cpu = -1;
    struct timespec ts;
    if (cpu < 0) {
        const char *c = getenv("BENCH_CLOCK");
        cpu = c != NULL && strcmp(c, "cpu") == 0;
    }
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
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

static uint32_t next_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static float uniform(void)
{
    return (float)(next_u32() >> 8) / 8388608.0f - 1.0f;
}

/* one timed call: a training step, or inference on prepared weights */
typedef struct bench_call {
    void *state; /* bench_train_state, for a training step */
    void *prepared;
    bench_params *params;
    bench_inputs *inputs;
    bench_outputs *outputs;
    bench_dims *dims;
    void *arena;
    size_t arena_bytes;
} bench_call;

static void call_once(const bench_call *c)
{
#ifdef BENCH_STATE_BYTES
    if (c->state) {
        check(bench_train_step(c->state, c->inputs, c->outputs, c->dims, c->arena, c->arena_bytes), "train_step");
        return;
    }
#endif
    check(bench_forward_prepared(c->prepared, c->params, c->inputs, c->outputs, c->dims, c->arena, c->arena_bytes),
          "forward");
}

/* Warms up, then times up to RUNS calls into times[]; returns how many
 * (fewer when a call is slower than SLOW_MS). */
static long time_calls(const bench_call *c, double *times, long runs)
{
    const double warm_start = now_ms();
    for (long r = 0; r < WARMUP || now_ms() - warm_start < WARMUP_MS; r++) {
        double t0 = now_ms();
        call_once(c);
        double ms = now_ms() - t0;
        if (ms > SLOW_MS) {
            long fit = (long)(SLOW_BUDGET_MS / ms);
            runs = fit < 1 ? 1 : fit < runs ? fit : runs;
            break;
        }
    }
    for (long r = 0; r < runs; r++) {
        double t0 = now_ms();
        call_once(c);
        times[r] = now_ms() - t0;
    }
    return runs;
}

int main(int argc, char **argv)
{
    long batch, runs;
    int train;
    bench_dims dims;
    bench_params params;
    bench_inputs inputs;
    bench_outputs outputs;
    void *weights;
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
        /* f32 images, or i64 token ids: the field's pointer type follows the dtype */
        size_t n = IN_NUMEL(dims.B);
        void *x = xmalloc(n * amp_dtype_size(IN_DTYPE));
        for (size_t i = 0; i < n; i++) {
            if (IN_DTYPE == AMP_I64)
                ((int64_t *)x)[i] = 1 + (int64_t)(next_u32() % (BENCH_VOCAB - 1));
            else
                ((float *)x)[i] = uniform();
        }
        inputs.BENCH_IN = x;
    }
#ifdef BENCH_TARGET
    {
        size_t classes = OUT_NUMEL(1) < 10 ? OUT_NUMEL(1) : 10;
        int64_t *y = xmalloc(TARGET_NUMEL(dims.B) * sizeof *y);
        for (size_t i = 0; i < TARGET_NUMEL(dims.B); i++)
            y[i] = (int64_t)(i % classes);
        inputs.BENCH_TARGET = y;
    }
#endif
    outputs.BENCH_OUT = xmalloc(OUT_NUMEL(dims.B) * amp_dtype_size(OUT_DTYPE));
#ifdef BENCH_LOSS_DTYPE
    outputs.loss = xmalloc(BENCH_LOSS_NUMEL(dims.B) * amp_dtype_size(BENCH_LOSS_DTYPE));
#endif

    times = xmalloc((size_t)runs * sizeof *times);
    bench_call call = {NULL, NULL, &params, &inputs, &outputs, &dims, NULL, 0};
    if (train) {
#ifdef BENCH_STATE_BYTES
        bench_train_state *state = xmalloc(sizeof *state);
        check(bench_train_init(state, xmalloc(BENCH_STATE_BYTES), BENCH_STATE_BYTES, &params), "train_init");
        call.state = state;
        call.arena_bytes = bench_train_arena_bytes(&dims);
#else
        fprintf(stderr, "model_bench: this model has no train section\n");
        return 2;
#endif
    } else {
        /* the weights are cast and packed once, at load time (bench_prepare),
         * as a deployed model does; BENCH_UNPREPARED=1 times bench_forward,
         * which redoes that on every call */
        const char *unprepared = getenv("BENCH_UNPREPARED");
        if (!unprepared || strcmp(unprepared, "1") != 0) {
            call.prepared = xmalloc(bench_prepared_bytes());
            check(bench_prepare(&params, call.prepared, bench_prepared_bytes()), "prepare");
        }
        call.arena_bytes = bench_arena_bytes(&dims);
    }
    call.arena = xmalloc(call.arena_bytes);
    runs = time_calls(&call, times, runs);
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    printf("ampc %s %ld %.4f %.4f %s\n", argv[2], batch, times[runs / 2], times[0], amp_isa_name());
    return 0;
}
