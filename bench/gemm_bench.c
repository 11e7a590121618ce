/*
 * gemm_bench.c - GFLOP/s of the runtime's GEMM (amp_matmul_<T>, square
 * N x N x N, through the public dispatch, so AMPRT_ISA selects the set) for
 * bf16, f16 and f32 on 1 and 2 threads.  Each figure is the median of
 * RUNS timed calls after one warm-up call.  Output, one line per case:
 *     ampc <dtype> <N> <threads> <GFLOP/s>
 * Usage: gemm_bench [sizes...]   (default 256 512 1024)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amprt.h"

#define RUNS 9

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(amp_dtype t, int64_t n, const void *a, const void *b, void *c)
{
    switch (t) {
    case AMP_BF16: amp_matmul_bf16(1, n, n, n, a, 0, b, 0, c); break;
    case AMP_F16: amp_matmul_f16(1, n, n, n, a, 0, b, 0, c); break;
    default: amp_matmul_f32(1, n, n, n, a, 0, b, 0, c); break;
    }
}

int main(int argc, char **argv)
{
    static const amp_dtype types[] = { AMP_BF16, AMP_F16, AMP_F32 };
    int64_t sizes[16] = { 256, 512, 1024 };
    int nsizes = 3;
    if (argc > 1) {
        nsizes = 0;
        for (int i = 1; i < argc && nsizes < 16; i++)
            sizes[nsizes++] = atoll(argv[i]);
    }
    printf("# isa %s\n", amp_isa_name());
    for (int s = 0; s < nsizes; s++) {
        int64_t n = sizes[s];
        size_t count = (size_t)(n * n);
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            amp_dtype t = types[ti];
            size_t es = amp_dtype_size(t);
            char *a = malloc(count * es), *b = malloc(count * es), *c = malloc(count * es);
            if (!a || !b || !c)
                return 1;
            srand(1);
            for (size_t i = 0; i < count; i++) {
                amp_store_from_f32(t, a, i, (float)rand() / (float)RAND_MAX - 0.5f);
                amp_store_from_f32(t, b, i, (float)rand() / (float)RAND_MAX - 0.5f);
            }
            for (int threads = 1; threads <= 2; threads++) {
                double times[RUNS];
                amp_set_threads(threads);
                run(t, n, a, b, c); /* warm-up: pool, caches, page faults */
                for (int r = 0; r < RUNS; r++) {
                    /* small sizes: time a batch of calls so the clock resolves */
                    int reps = n <= 256 ? 20 : n <= 512 ? 4 : 1;
                    double t0 = now();
                    for (int q = 0; q < reps; q++)
                        run(t, n, a, b, c);
                    times[r] = (now() - t0) / reps;
                }
                qsort(times, RUNS, sizeof times[0], cmp_double);
                printf("ampc %s %lld %d %.1f\n", amp_dtype_name(t), (long long)n, threads,
                       2.0 * (double)n * (double)n * (double)n / times[RUNS / 2] * 1e-9);
                fflush(stdout);
            }
            free(a);
            free(b);
            free(c);
        }
    }
    return 0;
}
