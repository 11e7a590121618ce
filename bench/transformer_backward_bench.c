/*
 * transformer_backward_bench.c - CPU time per call of the gradient
 * kernels of a transformer's training step (softmax_backward,
 * layer_norm_backward, gelu_backward, dropout, sdpa_backward) on BERT's
 * and vit_b_16's shapes at batch 8, for the reference kernels and each x86
 * set this CPU has, one thread.
 *
 *   cc -std=c99 -O2 -Iruntime/include -Iruntime/src -o tbb bench/transformer_backward_bench.c \
 *       build/libamprt.a -lm -lpthread
 *   ./tbb [ROUNDS]
 *
 * The sets alternate within each round (ref, avx2, avx512bf16 or avx512),
 * each timed over enough calls to fill about 0.2 s of CPU time (at least
 * one); prints per case and set the median and the fastest of the rounds'
 * per-call times (CLOCK_PROCESS_CPUTIME_ID), in ms, and the set's speedup
 * over the reference (medians).  The reference sdpa_backward (seconds
 * per call) is timed once, in the first round, without a warm-up call.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amprt_internal.h"

#define MAX_ROUNDS 15
#define MAX_SETS 3

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void *buf(size_t bytes, float scale, amp_dtype t)
{
    void *p = malloc(bytes);
    const size_t n = bytes / amp_dtype_size(t);
    uint64_t r = 0x9e3779b97f4a7c15ull;
    if (p == NULL) {
        fprintf(stderr, "transformer_backward_bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        r ^= r >> 12;
        r ^= r << 25;
        r ^= r >> 27;
        amp_store_from_f32(t, p, i, (float)((double)((r * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53 * 2 - 1) * scale);
    }
    return p;
}

enum { SOFTMAX_BW, LAYER_NORM_BW, GELU_BW, GELU_TANH_BW, DROPOUT, SDPA_BW };

typedef struct {
    const char *name;
    int kind;
    int64_t a, b; /* rows and row length, or elements (a) */
} bcase;

static const bcase cases[] = {
    { "BERT softmax_backward bf16 [12288, 128]", SOFTMAX_BW, 12288, 128 },
    { "BERT layer_norm_backward f32 [1024, 768]", LAYER_NORM_BW, 1024, 768 },
    { "ViT layer_norm_backward f32 [1576, 768]", LAYER_NORM_BW, 1576, 768 },
    { "BERT gelu_backward bf16 [3145728]", GELU_BW, 3145728, 0 },
    { "ViT gelu_backward bf16 [4841472]", GELU_BW, 4841472, 0 },
    { "gelu_tanh_backward bf16 [3145728]", GELU_TANH_BW, 3145728, 0 },
    { "BERT dropout bf16 p 0.1 [1572864]", DROPOUT, 1572864, 0 },
    { "ViT sdpa_backward bf16 [96, 197, 197, 64]", SDPA_BW, 96, 197 },
};

typedef struct {
    void *x, *y, *dy, *dx, *w, *dw, *db, *q, *k, *v, *dq, *dk, *dv;
    amp_sdpa_desc d;
} operands;

static void call(const amp_kernel_table *k, const bcase *c, operands *o)
{
    switch (c->kind) {
    case SOFTMAX_BW: k->softmax_backward_bf16(c->a, c->b, 1, o->y, o->dy, o->dx); break;
    case LAYER_NORM_BW:
        k->layer_norm_backward_f32(c->a, c->b, o->x, AMP_F32, o->w, 1e-5, o->dy, o->dx, o->dw, o->db);
        break;
    case GELU_BW: k->gelu_backward_bf16((size_t)c->a, o->x, NULL, o->dy, o->dx); break;
    case GELU_TANH_BW: k->gelu_tanh_backward_bf16((size_t)c->a, o->x, NULL, o->dy, o->dx); break;
    case DROPOUT: k->dropout_bf16((size_t)c->a, o->x, 0.1, 12345, 1, 678, o->dx); break;
    default: k->sdpa_backward_bf16(&o->d, o->q, o->k, o->v, NULL, NULL, o->dy, o->dq, o->dk, o->dv); break;
    }
}

static void setup(const bcase *c, operands *o)
{
    const size_t n = (size_t)(c->kind == SOFTMAX_BW || c->kind == LAYER_NORM_BW ? c->a * c->b : c->a);
    const amp_dtype t = c->kind == LAYER_NORM_BW ? AMP_F32 : AMP_BF16;
    const size_t es = amp_dtype_size(t);
    memset(o, 0, sizeof *o);
    if (c->kind == SDPA_BW) {
        const size_t m = (size_t)(c->a * c->b * 64) * 2;
        o->d = (amp_sdpa_desc){ c->a, c->b, c->b, 64, 64, c->b * 64, c->b * 64, c->b * 64, 0, 0.125, 0 };
        o->q = buf(m, 2, AMP_BF16);
        o->k = buf(m, 2, AMP_BF16);
        o->v = buf(m, 1, AMP_BF16);
        o->dy = buf(m, 1, AMP_BF16);
        o->dq = malloc(m);
        o->dk = malloc(m);
        o->dv = malloc(m);
        return;
    }
    o->x = buf(n * es, 4, t);
    o->y = buf(n * es, 1, t);
    o->dy = buf(n * es, 1, t);
    o->dx = malloc(n * es);
    if (c->kind == LAYER_NORM_BW) {
        o->w = buf((size_t)c->b * 4, 1, AMP_F32);
        o->dw = malloc((size_t)c->b * 4);
        o->db = malloc((size_t)c->b * 4);
    }
}

static void release(operands *o)
{
    void *all[] = { o->x, o->y, o->dy, o->dx, o->w, o->dw, o->db, o->q, o->k, o->v, o->dq, o->dk, o->dv };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const char *names[] = { "ref", "avx2", amp_kernel_table_for("avx512bf16") ? "avx512bf16" : "avx512" };
    const amp_kernel_table *sets[MAX_SETS];
    int nsets = 0;
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: %s [ROUNDS, 1..%d]\n", argv[0], MAX_ROUNDS);
        return 2;
    }
    for (int s = 0; s < MAX_SETS; s++)
        if ((sets[nsets] = amp_kernel_table_for(names[s])) != NULL)
            names[nsets++] = names[s];
    amp_set_threads(1);
    printf("case | set | median ms | fastest ms | ref / set (medians)\n");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bcase *c = &cases[ci];
        double t[MAX_SETS][MAX_ROUNDS], med[MAX_SETS];
        int n[MAX_SETS] = { 0 };
        operands o;
        setup(c, &o);
        for (int r = 0; r < rounds; r++)
            for (int s = 0; s < nsets; s++) {
                double t0, el;
                int calls = 0;
                if (c->kind == SDPA_BW && s == 0 && r > 0) /* the reference's: once */
                    continue;
                if (!(c->kind == SDPA_BW && s == 0))
                    call(sets[s], c, &o); /* warm: page faults, the scratch buffers */
                t0 = cpu_ms();
                do {
                    call(sets[s], c, &o);
                    calls++;
                    el = cpu_ms() - t0;
                } while (el < 200 && !(c->kind == SDPA_BW && s == 0));
                t[s][n[s]++] = el / calls;
            }
        for (int s = 0; s < nsets; s++) {
            qsort(t[s], (size_t)n[s], sizeof(double), cmp);
            med[s] = n[s] % 2 ? t[s][n[s] / 2] : (t[s][n[s] / 2 - 1] + t[s][n[s] / 2]) / 2;
            printf("%s | %s | %.3f | %.3f | %.2f\n", c->name, names[s], med[s], t[s][0], med[0] / med[s]);
        }
        fflush(stdout);
        release(&o);
    }
    return 0;
}
