/*
 * neon_depthwise.c - the neon sets' dw_taps (contract in
 * amprt_internal.h): the inner loop of frame/conv_depthwise.c's direct
 * depthwise convolution, 4 columns per vector, four vectors at a time so
 * that four chains of adds are in flight (each column's sum is a chain,
 * one add per tap).  A multiply and an add per tap, never a fused
 * multiply-add: the reference's roundings, so the convolution is the
 * reference's bit for bit.
 */
#include "amprt_internal.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#define DW_STEP(i) a##i = vaddq_f32(a##i, vmulq_f32(vld1q_f32(s + 4 * (i)), wv));

void amp_neon_dw_taps(int64_t n, int64_t taps, const float *src, const int64_t *off, const float *w, float *acc)
{
    int64_t q = 0;
    for (; q + 16 <= n; q += 16) {
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t t = 0; t < taps; t++) {
            const float *s = src + off[t] + q;
            const float32x4_t wv = vdupq_n_f32(w[t]);
            DW_STEP(0) DW_STEP(1) DW_STEP(2) DW_STEP(3)
        }
        vst1q_f32(acc + q, a0);
        vst1q_f32(acc + q + 4, a1);
        vst1q_f32(acc + q + 8, a2);
        vst1q_f32(acc + q + 12, a3);
    }
    for (; q + 4 <= n; q += 4) {
        float32x4_t a = vdupq_n_f32(0.0f);
        for (int64_t t = 0; t < taps; t++)
            a = vaddq_f32(a, vmulq_f32(vld1q_f32(src + off[t] + q), vdupq_n_f32(w[t])));
        vst1q_f32(acc + q, a);
    }
    for (; q < n; q++) { /* the last columns, one by one: the same operations */
        float a = 0.0f;
        for (int64_t t = 0; t < taps; t++) {
            const float p = src[off[t] + q] * w[t];
            a = a + p;
        }
        acc[q] = a;
    }
}

#endif /* aarch64 */
