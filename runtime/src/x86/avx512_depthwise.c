/*
 * avx512_depthwise.c - the AVX-512 sets' dw_taps (contract in
 * amprt_internal.h): the inner loop of frame/conv_depthwise.c's direct
 * depthwise convolution, 16 columns per vector, four vectors at a time so
 * that four chains of adds are in flight (each column's sum is a chain,
 * one add per tap).  A multiply and an add per tap, never an FMA: the
 * reference's roundings, so the convolution is the reference's bit for
 * bit.  Compiled for AVX-512 through target attributes only; runs only
 * after dispatch.c's CPU check.
 */
#include "amprt_internal.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

#define DW_STEP(i)                                                                                \
    a##i = _mm512_add_ps(a##i, _mm512_mul_ps(_mm512_loadu_ps(s + 16 * (i)), wv));

AVX512_TARGET void amp_avx512_dw_taps(int64_t n, int64_t taps, const float *src, const int64_t *off,
                                      const float *w, float *acc)
{
    int64_t q = 0;
    for (; q + 64 <= n; q += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t t = 0; t < taps; t++) {
            const float *s = src + off[t] + q;
            const __m512 wv = _mm512_set1_ps(w[t]);
            DW_STEP(0) DW_STEP(1) DW_STEP(2) DW_STEP(3)
        }
        _mm512_storeu_ps(acc + q, a0);
        _mm512_storeu_ps(acc + q + 16, a1);
        _mm512_storeu_ps(acc + q + 32, a2);
        _mm512_storeu_ps(acc + q + 48, a3);
    }
    if (q + 32 <= n) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        for (int64_t t = 0; t < taps; t++) {
            const float *s = src + off[t] + q;
            const __m512 wv = _mm512_set1_ps(w[t]);
            DW_STEP(0) DW_STEP(1)
        }
        _mm512_storeu_ps(acc + q, a0);
        _mm512_storeu_ps(acc + q + 16, a1);
        q += 32;
    }
    for (; q < n; q += 16) {
        /* lanes past n neither loaded nor stored */
        const __mmask16 m = n - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - q)) - 1);
        __m512 a = _mm512_setzero_ps();
        for (int64_t t = 0; t < taps; t++)
            a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, src + off[t] + q), _mm512_set1_ps(w[t])));
        _mm512_mask_storeu_ps(acc + q, m, a);
    }
}

#endif /* x86 */
