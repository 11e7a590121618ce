/* avx2_expf.h: amp_expf (amp_expf.h) on the avx2 set's lanes, for the
 * kernels that take exponentials bit for bit the reference's (the losses,
 * the rows' softmax, the attention's softmax): the same double operations, in the same order,
 * as the scalar definition, 4 lanes per __m256d.  ldexp(p, k) is p times
 * 2^k built from k's bits (k in [-150, 129] after the clamp: 2^k and the
 * product are normal doubles, so exact). */
#ifndef AMPRT_ISA_AVX2_EXPF_H
#define AMPRT_ISA_AVX2_EXPF_H

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "amp_expf.h"
#include "avx2_store.h"

/* amp_expf of 4 lanes; a NaN lane comes out a number (the clamp's min and
 * max return their second operand for NaN): avx2_exp8 keeps it */
AVX2_TARGET static AMP_ALWAYS_INLINE __m128 avx2_exp4(__m128 xf)
{
    const __m256d x = _mm256_max_pd(_mm256_min_pd(_mm256_cvtps_pd(xf), _mm256_set1_pd(89.0)), _mm256_set1_pd(-104.0));
    const __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(AMP_EXPF_INV_LN2)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* -k by its sign bit, as the scalar -k (0 - k would give +0 for k = +0) */
    const __m256d nk = _mm256_xor_pd(k, _mm256_set1_pd(-0.0));
    __m256d r, p;
    AMP_EXPF_SERIES(_mm256_fmadd_pd, _mm256_set1_pd, nk, x, r, p);
    const __m256i e = _mm256_slli_epi64(
        _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)), 52);
    return _mm256_cvtpd_ps(_mm256_mul_pd(p, _mm256_castsi256_pd(e)));
}

/* amp_expf of 8 lanes; NaN lanes keep their NaN */
AVX2_TARGET static AMP_ALWAYS_INLINE __m256 avx2_exp8(__m256 x)
{
    const __m256 e = _mm256_set_m128(avx2_exp4(_mm256_extractf128_ps(x, 1)), avx2_exp4(_mm256_castps256_ps128(x)));
    return _mm256_blendv_ps(e, x, avx2_isnan(x));
}

#endif
#endif
