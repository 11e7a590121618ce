/* avx512_lanes.h: the masked loads of the AVX-512 element-wise files
 * (x86/avx512_eltwise.c, avx512_backward.c, avx512_norm.c,
 * avx512_clamp.c): the mask of a vector's first lanes, 16 values of f32,
 * bf16 or f16 storage widened to f32 exactly as the reference's amp_ld
 * reads them, and batch_norm's step (bn16) over a row.  (x86/avx512.c's
 * GEMM packing has a load16 of its own that does not quiet.) */
#ifndef AMPRT_ISA_AVX512_LANES_H
#define AMPRT_ISA_AVX512_LANES_H

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "amprt_internal.h"
#include "avx512_store.h"

/* The first `left` lanes of 16 (all of them from 16 on). */
static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* 16 values of dtype t at p (mask m) as f32, as amp_ld reads them (bf16:
 * a signalling NaN quieted; vcvtph2ps does that for f16); masked-off lanes
 * are 0. */
AVX512_TARGET static inline __m512 load16(amp_dtype t, const void *p, __mmask16 m)
{
    switch (t) {
    case AMP_BF16: {
        const __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                      _mm512_set1_epi32(0x7f800000));
        return _mm512_castsi512_ps(_mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000)));
    }
    case AMP_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* y[0, n) = bn16 of x[0, n) in dtype t (a constant where inlined): whole
 * vectors unmasked, then one masked tail.  x may be y. */
AVX512_TARGET static AMP_ALWAYS_INLINE void bn_row16(amp_dtype t, const char *x, char *y, int64_t n, __m512 mean,
                                                     __m512 rstd, __m512 w, __m512 b, int has_w, int has_b)
{
    const size_t es = size_of_storage(t);
    int64_t s = 0;
    for (; s + 16 <= n; s += 16)
        store16_all(t, y + (size_t)s * es, bn16(load16_all(t, x + (size_t)s * es), mean, rstd, w, b, has_w, has_b));
    if (s < n) {
        const __mmask16 m = tail_mask((size_t)(n - s));
        store16(t, y + (size_t)s * es, m, bn16(load16(t, x + (size_t)s * es, m), mean, rstd, w, b, has_w, has_b));
    }
}

#endif /* x86 */

#endif /* AMPRT_ISA_AVX512_LANES_H */
