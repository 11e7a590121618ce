/*
 * avx2_reduce.c - the AVX2 sum (amp_sum_{f32,bf16,f16}) of the "avx2"
 * set, for the masks a linear's bias gradient and most other sums use:
 * after merging adjacent dims with the same flag, kept dims [O], then
 * reduced [R], then kept [I].  Each output element (o, i) is
 *     acc = 0; for r in 0..R-1: acc += x[o][r][i];  y = round(acc)
 * exactly the reference's f32 sum in its order, 8 columns i at a time in
 * the lanes of a vector: every lane is one output element's own chain, so
 * the results equal the reference bit for bit.  Other masks (a reduced
 * innermost dim, whose sum runs along contiguous memory) go to the
 * reference.  bf16 and f16 storage compute in f32 (x86/avx2_store.h).
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill_kernels after dispatch.c's CPU check.
 */

#include "amprt_internal.h"
#include "avx2_store.h"
#include "frame/reduce_form.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

/* y[i] = sum over r < R of x[r * I + i], for c0 <= i < c1 (columns of
 * the [R, I] block x): 64 columns at a time in 8 accumulators, then 8 at
 * a time, then the tail. */
AVX2_TARGET static AMP_ALWAYS_INLINE void column_sums(amp_dtype t, int64_t R, int64_t I, int64_t c0, int64_t c1,
                                                      const char *x, char *y)
{
    const size_t es = avx2_size_of(t);
    int64_t i0 = c0;
    for (; i0 + 64 <= c1; i0 += 64) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int64_t r = 0; r < R; r++) {
            const char *row = x + (size_t)(r * I + i0) * es;
            a0 = _mm256_add_ps(a0, avx2_load8(t, row));
            a1 = _mm256_add_ps(a1, avx2_load8(t, row + 8 * es));
            a2 = _mm256_add_ps(a2, avx2_load8(t, row + 16 * es));
            a3 = _mm256_add_ps(a3, avx2_load8(t, row + 24 * es));
            a4 = _mm256_add_ps(a4, avx2_load8(t, row + 32 * es));
            a5 = _mm256_add_ps(a5, avx2_load8(t, row + 40 * es));
            a6 = _mm256_add_ps(a6, avx2_load8(t, row + 48 * es));
            a7 = _mm256_add_ps(a7, avx2_load8(t, row + 56 * es));
        }
        avx2_store8(t, y + (size_t)i0 * es, a0);
        avx2_store8(t, y + (size_t)(i0 + 8) * es, a1);
        avx2_store8(t, y + (size_t)(i0 + 16) * es, a2);
        avx2_store8(t, y + (size_t)(i0 + 24) * es, a3);
        avx2_store8(t, y + (size_t)(i0 + 32) * es, a4);
        avx2_store8(t, y + (size_t)(i0 + 40) * es, a5);
        avx2_store8(t, y + (size_t)(i0 + 48) * es, a6);
        avx2_store8(t, y + (size_t)(i0 + 56) * es, a7);
    }
    for (; i0 + 8 <= c1; i0 += 8) {
        __m256 a = _mm256_setzero_ps();
        for (int64_t r = 0; r < R; r++)
            a = _mm256_add_ps(a, avx2_load8(t, x + (size_t)(r * I + i0) * es));
        avx2_store8(t, y + (size_t)i0 * es, a);
    }
    if (i0 < c1) {
        /* the last n columns: each row's values read whole where they
         * stay inside the block's R I values (avx2_load8_within) */
        const size_t n = (size_t)(c1 - i0);
        __m256 a = _mm256_setzero_ps();
        for (int64_t r = 0; r < R; r++)
            a = _mm256_add_ps(a, avx2_load8_within(t, x + (size_t)(r * I + i0) * es, n, R * I - (r * I + i0)));
        avx2_store8_n(t, y + (size_t)i0 * es, n, a);
    }
}

#define SUM_KERNEL(T) AMP_SUM_BY_COLUMNS(AVX2_TARGET, avx2_sum_##T, T, column_sums)
AMP_FOR_EACH_KERNEL_DTYPE(SUM_KERNEL)

/* This file's kernels of the set: X(kernel, implementation). */
#define SUM_KERNELS(X) X(sum_f32, avx2_sum_f32) X(sum_bf16, avx2_sum_bf16) X(sum_f16, avx2_sum_f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
SUM_KERNELS(DEFINE)
#undef DEFINE

void amp_avx2_fill_reduce(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    SUM_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
