/*
 * avx512_reduce.c - the AVX-512 sum (amp_sum_{f32,bf16,f16}) of the
 * "avx512" and "avx512bf16" sets, for the masks a linear's bias gradient
 * and most other sums use: after merging adjacent dims with the same flag,
 * kept dims [O], then reduced [R], then kept [I] (any of them may be
 * absent, I >= 1 when present).  Each output element (o, i) is
 *     acc = 0; for r in 0..R-1: acc += x[o][r][i];  y = round(acc)
 * exactly the reference's f32 sum in the reference's order (its inner loop
 * walks the reduced dims row-major, i.e. r ascending), only 16 columns i at
 * a time in the lanes of a vector: every lane is one output element's own
 * sequential chain, so the results equal the reference bit for bit.
 * Other masks (a reduced innermost dim: the sum runs along contiguous
 * memory and a vector would reorder it) go to the reference.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */

#include "amprt_internal.h"
#include "avx512_store.h"
#include "frame/reduce_form.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

/* 16 values of dtype t as amp_ld reads them (bf16: a signalling NaN
 * quieted; vcvtph2ps quiets f16's); masked-off lanes are 0. */
AVX512_TARGET static inline __m512 ld16(amp_dtype t, const void *p, __mmask16 m)
{
    switch (t) {
    case AMP_BF16: {
        __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
        return _mm512_castsi512_ps(_mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000)));
    }
    case AMP_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* y[i] = sum over r < R of x[r * I + i], for c0 <= i < c1 (columns of
 * the [R, I] block x; R >= 0): 128 columns at a time in 8 accumulators
 * (registers), then the rest 16 at a time. */
AVX512_TARGET static void column_sums(amp_dtype t, int64_t R, int64_t I, int64_t c0, int64_t c1, const char *x,
                                      char *y)
{
    const size_t es = amp_dtype_size(t);
    int64_t i0 = c0;
    for (; i0 + 128 <= c1; i0 += 128) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int64_t r = 0; r < R; r++) {
            const char *row = x + (size_t)(r * I + i0) * es;
            a0 = _mm512_add_ps(a0, ld16(t, row, 0xffff));
            a1 = _mm512_add_ps(a1, ld16(t, row + 16 * es, 0xffff));
            a2 = _mm512_add_ps(a2, ld16(t, row + 32 * es, 0xffff));
            a3 = _mm512_add_ps(a3, ld16(t, row + 48 * es, 0xffff));
            a4 = _mm512_add_ps(a4, ld16(t, row + 64 * es, 0xffff));
            a5 = _mm512_add_ps(a5, ld16(t, row + 80 * es, 0xffff));
            a6 = _mm512_add_ps(a6, ld16(t, row + 96 * es, 0xffff));
            a7 = _mm512_add_ps(a7, ld16(t, row + 112 * es, 0xffff));
        }
        store16(t, y + (size_t)i0 * es, 0xffff, a0);
        store16(t, y + (size_t)(i0 + 16) * es, 0xffff, a1);
        store16(t, y + (size_t)(i0 + 32) * es, 0xffff, a2);
        store16(t, y + (size_t)(i0 + 48) * es, 0xffff, a3);
        store16(t, y + (size_t)(i0 + 64) * es, 0xffff, a4);
        store16(t, y + (size_t)(i0 + 80) * es, 0xffff, a5);
        store16(t, y + (size_t)(i0 + 96) * es, 0xffff, a6);
        store16(t, y + (size_t)(i0 + 112) * es, 0xffff, a7);
    }
    for (; i0 < c1; i0 += 16) {
        const __mmask16 m = (__mmask16)(c1 - i0 >= 16 ? 0xffff : (1u << (c1 - i0)) - 1);
        __m512 a = _mm512_setzero_ps();
        for (int64_t r = 0; r < R; r++)
            a = _mm512_add_ps(a, ld16(t, x + (size_t)(r * I + i0) * es, m));
        store16(t, y + (size_t)i0 * es, m, a);
    }
}

#define SUM_KERNEL(T) AMP_SUM_BY_COLUMNS(AVX512_TARGET, avx512_sum_##T, T, column_sums)
AMP_FOR_EACH_KERNEL_DTYPE(SUM_KERNEL)

/* This file's kernels of the set: X(kernel, implementation). */
#define SUM_KERNELS(X) X(sum_f32, avx512_sum_f32) X(sum_bf16, avx512_sum_bf16) X(sum_f16, avx512_sum_f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
SUM_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_reduce(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    SUM_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
