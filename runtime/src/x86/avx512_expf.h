/* avx512_expf.h: amp_expf (amp_expf.h) on the AVX-512 sets' lanes, for
 * the kernels that take exponentials bit for bit the reference's (the
 * losses, the rows' softmax, the attention's softmax): the same double
 * operations, in the same order, as the scalar definition, 8 lanes per
 * __m512d. */
#ifndef AMPRT_ISA_AVX512_EXPF_H
#define AMPRT_ISA_AVX512_EXPF_H

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "amp_expf.h"
#include "avx512_store.h"

/* amp_expf of 8 lanes; a NaN lane comes out a number (the clamp's min and
 * max return their second operand for NaN): avx512_exp16 keeps it */
AVX512_TARGET static inline __m256 avx512_exp8(__m256 xf)
{
    const __m512d x = _mm512_max_pd(_mm512_min_pd(_mm512_cvtps_pd(xf), _mm512_set1_pd(89.0)), _mm512_set1_pd(-104.0));
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(AMP_EXPF_INV_LN2)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* -k by its sign bit, as the scalar -k (0 - k would give +0 for k = +0) */
    const __m512d nk = _mm512_castsi512_pd(
        _mm512_xor_si512(_mm512_castpd_si512(k), _mm512_set1_epi64((long long)0x8000000000000000ull)));
    __m512d r, p;
    AMP_EXPF_SERIES(_mm512_fmadd_pd, _mm512_set1_pd, nk, x, r, p);
    /* scalef: p 2^k, exact here (the result is a normal double) */
    return _mm512_cvtpd_ps(_mm512_scalef_pd(p, k));
}

/* amp_expf of 16 lanes; NaN lanes keep their NaN */
AVX512_TARGET static inline __m512 avx512_exp16(__m512 x)
{
    const __m256 lo = avx512_exp8(_mm512_castps512_ps256(x));
    const __m256 hi = avx512_exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    const __m512 e = _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
    return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

#endif
#endif
