/*
 * linear_ex_bench.c - a linear on weights packed once (amp_linear_ex_bf16
 * with amp_linear_pack_weights_bf16's block) against the unpacked
 * amp_linear_relu_bf16, which the inference forward called before, over
 * shapes from a small MLP's layers to a transformer's: the fastest of 7
 * rounds of a few hundred calls each, alternating, in microseconds per call.
 *
 *   cc -std=c99 -O2 -Iruntime/include bench/linear_ex_bench.c build/libamprt.a -lm -lpthread -o linear_ex_bench
 *   AMPRT_THREADS=1 [AMPRT_ISA=avx2] ./linear_ex_bench
 *
 * Prints one line per shape: the kernel set, M x N x K, both times and
 * their ratio (under 1: the packed weights are faster).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "amprt.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    static const int shapes[][3] = {
        { 1, 128, 64 }, { 8, 128, 64 }, { 64, 128, 64 }, { 1, 10, 128 },  { 8, 10, 128 },
        { 64, 10, 128 }, { 8, 120, 400 }, { 1, 512, 512 }, { 128, 768, 768 },
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        amp_bf16 *x = malloc(sizeof *x * (size_t)(M * K)), *w = malloc(sizeof *w * (size_t)(N * K));
        amp_bf16 *b = malloc(sizeof *b * (size_t)N), *y = malloc(sizeof *y * (size_t)(M * N));
        void *packed = NULL;
        if (!x || !w || !b || !y || posix_memalign(&packed, 64, amp_linear_packed_bytes_bf16(N, K)) != 0) {
            fprintf(stderr, "linear_ex_bench: out of memory\n");
            return 1;
        }
        for (int i = 0; i < M * K; i++)
            x[i] = amp_f32_to_bf16((float)(i % 7) * 0.1f - 0.3f);
        for (int i = 0; i < N * K; i++)
            w[i] = amp_f32_to_bf16((float)(i % 5) * 0.1f - 0.2f);
        for (int i = 0; i < N; i++)
            b[i] = amp_f32_to_bf16(0.1f);
        amp_linear_pack_weights_bf16(N, K, AMP_BF16, w, packed);
        /* about 0.1 s of products per round */
        int reps = (int)(2e8 / (2.0 * M * N * K + 2e4));
        reps = reps < 20 ? 20 : reps > 20000 ? 20000 : reps;
        double best[2] = { 1e9, 1e9 };
        for (int r = 0; r < 7; r++)
            for (int v = 0; v < 2; v++) {
                const double t0 = now();
                for (int i = 0; i < reps; i++) {
                    if (v)
                        amp_linear_ex_bf16(M, N, K, x, w, packed, b, 1, y);
                    else
                        amp_linear_relu_bf16(M, N, K, x, w, b, y);
                }
                const double t = (now() - t0) / reps;
                if (t < best[v])
                    best[v] = t;
            }
        printf("%-10s %4d x %4d x %4d  unpacked %9.2f us  packed %9.2f us  packed/unpacked %.2f\n", amp_isa_name(), M,
               N, K, best[0] * 1e6, best[1] * 1e6, best[1] / best[0]);
        free(x);
        free(w);
        free(b);
        free(y);
        free(packed);
    }
    return 0;
}
