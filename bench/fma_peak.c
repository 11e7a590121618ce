/*
 * fma_peak.c - one core's multiply-add peak, in GFLOP/s, for each
 * instruction the kernel sets' products run on: vfmadd231ps on 8 lanes
 * (the avx2 set), on 16 lanes (the avx512 set's f32) and vdpbf16ps (the
 * avx512bf16 set's bf16 products), 24 independent chains each, so that
 * only the issue rate limits them.  A kernel's GFLOP/s over this figure
 * (bench/conv_layer_bench.c, bench/gemm_bench.c on one thread) is its
 * share of the core (bench/results/2026-11-28-zen4.md).
 *
 *   cc -std=c99 -O2 bench/fma_peak.c -o fma_peak && ./fma_peak
 *
 * Each instruction is timed three times (20 M iterations of 24); an
 * instruction this CPU lacks is reported as such.  x86-64 only.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define ITERS 20000000L
#define CHAINS 24

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The asm barrier keeps each loop's operand unknown to the compiler, so
 * the chains are computed, not folded. */
__attribute__((target("avx2,fma"))) static float fma8(long n)
{
    __m256 c[CHAINS], a = _mm256_set1_ps(1.0f), b = _mm256_set1_ps(1e-9f), s;
    for (int i = 0; i < CHAINS; i++)
        c[i] = _mm256_setzero_ps();
    for (long i = 0; i < n; i++) {
#pragma GCC unroll 24
        for (int j = 0; j < CHAINS; j++)
            c[j] = _mm256_fmadd_ps(a, b, c[j]);
        __asm__ volatile("" : "+x"(a));
    }
    s = c[0];
    for (int i = 1; i < CHAINS; i++)
        s = _mm256_add_ps(s, c[i]);
    return _mm256_cvtss_f32(s);
}

__attribute__((target("avx512f"))) static float fma16(long n)
{
    __m512 c[CHAINS], a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(1e-9f), s;
    for (int i = 0; i < CHAINS; i++)
        c[i] = _mm512_setzero_ps();
    for (long i = 0; i < n; i++) {
#pragma GCC unroll 24
        for (int j = 0; j < CHAINS; j++)
            c[j] = _mm512_fmadd_ps(a, b, c[j]);
        __asm__ volatile("" : "+v"(a));
    }
    s = c[0];
    for (int i = 1; i < CHAINS; i++)
        s = _mm512_add_ps(s, c[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float dpbf16(long n)
{
    __m512 c[CHAINS], s;
    __m512i a = _mm512_set1_epi32(0x3f803f80), b = _mm512_set1_epi32(0x30003000);
    for (int i = 0; i < CHAINS; i++)
        c[i] = _mm512_setzero_ps();
    for (long i = 0; i < n; i++) {
#pragma GCC unroll 24
        for (int j = 0; j < CHAINS; j++)
            c[j] = _mm512_dpbf16_ps(c[j], (__m512bh)a, (__m512bh)b);
        __asm__ volatile("" : "+v"(a));
    }
    s = c[0];
    for (int i = 1; i < CHAINS; i++)
        s = _mm512_add_ps(s, c[i]);
    return _mm512_reduce_add_ps(s);
}

static void time_it(const char *what, float (*fn)(long), double flops_per_instr)
{
    for (int r = 0; r < 3; r++) {
        const double t0 = now();
        const float sink = fn(ITERS);
        const double t = now() - t0;
        printf("%-28s %7.1f GFLOP/s  (%.2f G instructions/s)%s\n", what, ITERS * CHAINS * flops_per_instr / t * 1e-9,
               ITERS * CHAINS / t * 1e-9, sink != sink ? " NaN" : "");
    }
}

int main(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        time_it("vfmadd231ps ymm (8 lanes)", fma8, 16);
    else
        printf("vfmadd231ps ymm: no AVX2 + FMA here\n");
    if (__builtin_cpu_supports("avx512f"))
        time_it("vfmadd231ps zmm (16 lanes)", fma16, 32);
    else
        printf("vfmadd231ps zmm: no AVX-512 here\n");
    if (__builtin_cpu_supports("avx512bf16"))
        time_it("vdpbf16ps zmm (32 pairs)", dpbf16, 64);
    else
        printf("vdpbf16ps zmm: no AVX512_BF16 here\n");
    return 0;
}
#else
int main(void)
{
    printf("fma_peak: x86-64 only\n");
    return 0;
}
#endif
