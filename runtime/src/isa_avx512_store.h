/* isa_avx512_store.h: the AVX-512 store every AVX-512 kernel file rounds
 * its f32 results with (isa_avx512.c's GEMM epilogue, isa_avx512_eltwise.c),
 * so that both round exactly as the reference's amp_st does. */
#ifndef AMPRT_ISA_AVX512_STORE_H
#define AMPRT_ISA_AVX512_STORE_H

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "amprt_internal.h"

#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

/* Round 16 f32 lanes to dtype t as amp_st does (bf16: nearest even, NaN
 * quieted; f16: vcvtps2ph, nearest even) and store the lanes of m. */
AVX512_TARGET static inline void store16(amp_dtype t, void *p, __mmask16 m, __m512 v)
{
    switch (t) {
    case AMP_BF16: {
        const __m512i u = _mm512_castps_si512(v);
        const __m512i hi = _mm512_srli_epi32(u, 16);
        __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                     _mm512_and_si512(hi, _mm512_set1_epi32(1)));
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                      _mm512_set1_epi32(0x7f800000));
        r = _mm512_srli_epi32(r, 16);
        r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
        _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(r));
        return;
    }
    case AMP_F16:
        _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        return;
    default: _mm512_mask_storeu_ps(p, m, v); return;
    }
}

#endif
#endif
