/*
 * avx2_depthwise.c - the avx2 set's dw_taps (contract in amprt_internal.h):
 * the inner loop of frame/conv_depthwise.c's direct depthwise
 * convolution, 8 columns per vector, four vectors at a time so that four
 * chains of adds are in flight (each column's sum is a chain, one add per
 * tap).  A multiply and an add per tap, never an FMA: the reference's
 * roundings, so the convolution is the reference's bit for bit.
 * Compiled for AVX2 through target attributes only; runs only after
 * dispatch.c's CPU check.
 */
#include "amprt_internal.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

#define DW_STEP(i)                                                                                \
    a##i = _mm256_add_ps(a##i, _mm256_mul_ps(_mm256_loadu_ps(s + 8 * (i)), wv));

AVX2_TARGET void amp_avx2_dw_taps(int64_t n, int64_t taps, const float *src, const int64_t *off, const float *w,
                                  float *acc)
{
    int64_t q = 0;
    for (; q + 32 <= n; q += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t t = 0; t < taps; t++) {
            const float *s = src + off[t] + q;
            const __m256 wv = _mm256_broadcast_ss(w + t);
            DW_STEP(0) DW_STEP(1) DW_STEP(2) DW_STEP(3)
        }
        _mm256_storeu_ps(acc + q, a0);
        _mm256_storeu_ps(acc + q + 8, a1);
        _mm256_storeu_ps(acc + q + 16, a2);
        _mm256_storeu_ps(acc + q + 24, a3);
    }
    for (; q < n; q += 8) {
        /* the last columns: lanes past n neither loaded nor stored */
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - q < 8 ? n - q : 8)),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 a = _mm256_setzero_ps();
        for (int64_t t = 0; t < taps; t++)
            a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_maskload_ps(src + off[t] + q, mask), _mm256_broadcast_ss(w + t)));
        _mm256_maskstore_ps(acc + q, mask, a);
    }
}

#endif /* x86 */
