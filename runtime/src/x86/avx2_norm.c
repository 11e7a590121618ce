/*
 * avx2_norm.c - the AVX2 (+ FMA + F16C) batch_norm kernels of the "avx2"
 * set beyond its running-statistics forward (x86/avx2_eltwise.c): the
 * training forward batch_norm_train and batch_norm_backward in both
 * forms, for f32, bf16 and f16 storage (computing in f32,
 * x86/avx2_store.h) and f32, bf16 or f16 parameters.
 *
 * Each computes exactly what its reference kernel computes (the same f32
 * operations in the same order, no contraction into FMA, the same one
 * rounding to the storage dtype), so tests compare them bit for bit
 * (tests/runtime/test_fastbackward.c, test_fasteltwise.c).  A channel's
 * sums are the reference's 16 lanes (lane s mod 16 of each image's row,
 * in (n, s) order; ref/ref_batch_moments.inc), two vectors of 8 here, a
 * row's tail adding only its own lanes, folded by the reference's tree:
 *
 *  batch_norm_train  per channel the sum of x, the mean, the sum of the
 *                  squared deviations, rstd and the running update
 *                  (frame/norm_train_form.h), then y as batch_norm
 *                  computes it (avx2_bn8): three passes over a channel,
 *                  whose rows stay in cache between them at the
 *                  benchmark's sizes.  HxW 1 goes to the reference.
 *  batch_norm_backward (training 0)  the sums of g and g xhat, dx = (g w)
 *                  rstd in the same pass; with HxW 1, 8 channels side by
 *                  side, each its own lane 0.
 *  batch_norm_backward (training 1)  the channel's batch statistics as
 *                  batch_norm_train takes them, the sums of g and g xhat,
 *                  then dx = (w rstd) ((g - sum_dy / count) - xhat
 *                  (sum_dy_xhat / count)); HxW 1 goes to the reference.
 *
 * Channels are split into tasks on the pool (amp_bn_channel_tasks); each
 * channel is one task's, so the result does not depend on the threads.
 * The drivers (channel passes over the row step, tasks, entries) are
 * frame/norm_train_form.h's and norm_backward_form.h's.
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill_kernels after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_mathf.h"
#include "frame/norm_backward_form.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* ---- a channel's 16 lane sums ----------------------------------------------------- */

/* Row `row` (elements) of x: lanes 0-7 and 8-15 of the reference's 16 in
 * lo and hi, 16 positions a step; a tail adds only its own lanes.  With
 * sq, each lane adds (v - mean)^2 (a multiply, then an add) instead of v. */
TARGET static AMP_ALWAYS_INLINE void row_lanes(const amp_dtype t, const char *xp, int64_t HxW, int sq, __m256 vm,
                                               __m256 *lo, __m256 *hi)
{
    const size_t es = avx2_size_of(t);
    int64_t q = 0;
    for (; q + 16 <= HxW; q += 16) {
        __m256 a = avx2_load8(t, xp + (size_t)q * es), b = avx2_load8(t, xp + (size_t)(q + 8) * es);
        if (sq) {
            a = _mm256_sub_ps(a, vm);
            b = _mm256_sub_ps(b, vm);
            a = _mm256_mul_ps(a, a);
            b = _mm256_mul_ps(b, b);
        }
        *lo = _mm256_add_ps(*lo, a);
        *hi = _mm256_add_ps(*hi, b);
    }
    for (int half = 0; half < 2 && q < HxW; half++, q += 8) {
        const size_t left = (size_t)(HxW - q), k = left < 8 ? left : 8;
        __m256 v = avx2_load8_n(t, xp + (size_t)q * es, k), *s = half ? hi : lo;
        if (sq) {
            v = _mm256_sub_ps(v, vm);
            v = _mm256_mul_ps(v, v);
        }
        *s = _mm256_blendv_ps(*s, _mm256_add_ps(*s, v), avx2_first_lanes(k));
    }
}

/* Channel ch of x [N, C, HxW]: its mean and the 16 lane sums of squared
 * deviations from it (ref/ref_batch_moments.inc). */
TARGET static AMP_ALWAYS_INLINE float channel_moments(const amp_dtype t, const void *x, int64_t N, int64_t C,
                                                      int64_t HxW, int64_t ch, float sq16[16])
{
    const size_t es = avx2_size_of(t);
    float s16[16], mean;
    __m256 lo = _mm256_setzero_ps(), hi = lo;
    for (int64_t n = 0; n < N; n++)
        row_lanes(t, (const char *)x + (size_t)((n * C + ch) * HxW) * es, HxW, 0, lo, &lo, &hi);
    _mm256_storeu_ps(s16, lo);
    _mm256_storeu_ps(s16 + 8, hi);
    mean = amp_bn_fold16(s16) / (float)(N * HxW);
    lo = hi = _mm256_setzero_ps();
    for (int64_t n = 0; n < N; n++)
        row_lanes(t, (const char *)x + (size_t)((n * C + ch) * HxW) * es, HxW, 1, _mm256_set1_ps(mean), &lo, &hi);
    _mm256_storeu_ps(sq16, lo);
    _mm256_storeu_ps(sq16 + 8, hi);
    return mean;
}

/* ---- batch_norm_train ------------------------------------------------------------- */

AMP_BN_TRAIN_TASKS(TARGET, __m256, _mm256_set1_ps, avx2_bn_row, AVX2_PARALLEL_MIN)

/* ---- batch_norm_backward, running statistics ------------------------------------- */

/* [N, C] (HxW 1): 8 channels from c0 (nc of them) side by side, each
 * summed over n in its own lane (the reference's lane 0; its tree adds 15
 * empty lanes' +0 to a sum begun at +0, which changes nothing). */
TARGET static AMP_ALWAYS_INLINE void bn_backward_rows(const amp_bn_bw_ctx *c, int64_t c0, int64_t nc, const amp_dtype t)
{
    const size_t es = avx2_size_of(t), n8 = (size_t)nc;
    float wv[8], meanv[8], rstdv[8], sdy[8], sdx[8];
    amp_bn_bw_lane_scalars(c, c0, nc, 8, wv, meanv, rstdv);
    const __m256 vw = _mm256_loadu_ps(wv), vm = _mm256_loadu_ps(meanv), vr = _mm256_loadu_ps(rstdv);
    __m256 sum_dy = _mm256_setzero_ps(), sum_dy_xhat = _mm256_setzero_ps();
    for (int64_t n = 0; n < c->N; n++) {
        const size_t off = (size_t)(n * c->C + c0) * es;
        const __m256 g = nc == 8 ? avx2_load8(t, (const char *)c->dy + off) : avx2_load8_n(t, (const char *)c->dy + off, n8);
        const __m256 xv = nc == 8 ? avx2_load8(t, (const char *)c->x + off) : avx2_load8_n(t, (const char *)c->x + off, n8);
        const __m256 d = _mm256_mul_ps(_mm256_mul_ps(g, vw), vr);
        if (nc == 8)
            avx2_store8(t, (char *)c->dx + off, d);
        else
            avx2_store8_n(t, (char *)c->dx + off, n8, d);
        sum_dy = _mm256_add_ps(sum_dy, g);
        sum_dy_xhat = _mm256_add_ps(sum_dy_xhat, _mm256_mul_ps(g, _mm256_mul_ps(_mm256_sub_ps(xv, vm), vr)));
    }
    _mm256_storeu_ps(sdy, sum_dy);
    _mm256_storeu_ps(sdx, sum_dy_xhat);
    amp_bn_bw_store(c, c0, nc, sdy, sdx);
}

/* One channel, HxW > 1: lanes 0-7 and 8-15 of the reference's 16 in two
 * vectors, 16 positions a step; a row's tail adds only its own lanes. */
TARGET static AMP_ALWAYS_INLINE void bn_backward_channel(const amp_bn_bw_ctx *c, int64_t ch, const amp_dtype t)
{
    const size_t es = avx2_size_of(t);
    const int64_t HxW = c->HxW;
    float w, mean, rstd, dy16[16], dx16[16];
    amp_bn_bw_scalars(c, ch, &w, &mean, &rstd);
    const __m256 vw = _mm256_set1_ps(w), vr = _mm256_set1_ps(rstd), vm = _mm256_set1_ps(mean);
    __m256 dy_lo = _mm256_setzero_ps(), dy_hi = dy_lo, dx_lo = dy_lo, dx_hi = dy_lo;
    for (int64_t n = 0; n < c->N; n++) {
        const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
        const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
        char *dxp = (char *)c->dx + row;
        int64_t q = 0;
        /* dx may be dy or x: each vector of both is read before its dx is stored */
        for (; q + 16 <= HxW; q += 16) {
            const __m256 g0 = avx2_load8(t, dyp + (size_t)q * es), x0 = avx2_load8(t, xp + (size_t)q * es);
            const __m256 g1 = avx2_load8(t, dyp + (size_t)(q + 8) * es), x1 = avx2_load8(t, xp + (size_t)(q + 8) * es);
            avx2_store8(t, dxp + (size_t)q * es, _mm256_mul_ps(_mm256_mul_ps(g0, vw), vr));
            avx2_store8(t, dxp + (size_t)(q + 8) * es, _mm256_mul_ps(_mm256_mul_ps(g1, vw), vr));
            dy_lo = _mm256_add_ps(dy_lo, g0);
            dy_hi = _mm256_add_ps(dy_hi, g1);
            dx_lo = _mm256_add_ps(dx_lo, _mm256_mul_ps(g0, _mm256_mul_ps(_mm256_sub_ps(x0, vm), vr)));
            dx_hi = _mm256_add_ps(dx_hi, _mm256_mul_ps(g1, _mm256_mul_ps(_mm256_sub_ps(x1, vm), vr)));
        }
        for (int half = 0; half < 2 && q < HxW; half++, q += 8) {
            const size_t left = (size_t)(HxW - q), k = left < 8 ? left : 8;
            const __m256 g = avx2_load8_n(t, dyp + (size_t)q * es, k), xv = avx2_load8_n(t, xp + (size_t)q * es, k);
            const __m256 on = avx2_first_lanes(k);
            __m256 *sdy = half ? &dy_hi : &dy_lo, *sdx = half ? &dx_hi : &dx_lo;
            avx2_store8_n(t, dxp + (size_t)q * es, k, _mm256_mul_ps(_mm256_mul_ps(g, vw), vr));
            *sdy = _mm256_blendv_ps(*sdy, _mm256_add_ps(*sdy, g), on);
            *sdx = _mm256_blendv_ps(*sdx, _mm256_add_ps(*sdx, _mm256_mul_ps(g, _mm256_mul_ps(_mm256_sub_ps(xv, vm), vr))),
                                    on);
        }
    }
    _mm256_storeu_ps(dy16, dy_lo);
    _mm256_storeu_ps(dy16 + 8, dy_hi);
    _mm256_storeu_ps(dx16, dx_lo);
    _mm256_storeu_ps(dx16 + 8, dx_hi);
    amp_bn_bw_store16(c, ch, dy16, dx16);
}

/* ---- batch_norm_backward, batch statistics (training 1) --------------------------- */

/* g (xv - mean) rstd, the reference's g * ((x - mean) * rstd). */
#define GXHAT(g, xv) _mm256_mul_ps(g, _mm256_mul_ps(_mm256_sub_ps(xv, vm), vr))

TARGET static AMP_ALWAYS_INLINE void bn_train_backward_channel(const amp_bn_bw_ctx *c, int64_t ch, const amp_dtype t)
{
    const size_t es = avx2_size_of(t);
    const int64_t N = c->N, HxW = c->HxW;
    float sq16[16], dy16[16], dx16[16], sum_dy, sum_dy_xhat;
    const float mean = channel_moments(t, c->x, N, c->C, HxW, ch, sq16), rstd = amp_bn_bw_train_rstd(c, sq16);
    const float w = c->weight != NULL ? amp_ld(c->pt, c->weight, ch) : 1.0f, count = (float)(N * HxW);
    const __m256 vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rstd);
    __m256 dy_lo = _mm256_setzero_ps(), dy_hi = dy_lo, dx_lo = dy_lo, dx_hi = dy_lo;
    for (int64_t n = 0; n < N; n++) {
        const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
        const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
        int64_t q = 0;
        for (; q + 16 <= HxW; q += 16) {
            const __m256 g0 = avx2_load8(t, dyp + (size_t)q * es), x0 = avx2_load8(t, xp + (size_t)q * es);
            const __m256 g1 = avx2_load8(t, dyp + (size_t)(q + 8) * es), x1 = avx2_load8(t, xp + (size_t)(q + 8) * es);
            dy_lo = _mm256_add_ps(dy_lo, g0);
            dy_hi = _mm256_add_ps(dy_hi, g1);
            dx_lo = _mm256_add_ps(dx_lo, GXHAT(g0, x0));
            dx_hi = _mm256_add_ps(dx_hi, GXHAT(g1, x1));
        }
        for (int half = 0; half < 2 && q < HxW; half++, q += 8) {
            const size_t left = (size_t)(HxW - q), k = left < 8 ? left : 8;
            const __m256 g = avx2_load8_n(t, dyp + (size_t)q * es, k), xv = avx2_load8_n(t, xp + (size_t)q * es, k);
            const __m256 on = avx2_first_lanes(k);
            __m256 *sdy = half ? &dy_hi : &dy_lo, *sdx = half ? &dx_hi : &dx_lo;
            *sdy = _mm256_blendv_ps(*sdy, _mm256_add_ps(*sdy, g), on);
            *sdx = _mm256_blendv_ps(*sdx, _mm256_add_ps(*sdx, GXHAT(g, xv)), on);
        }
    }
    _mm256_storeu_ps(dy16, dy_lo);
    _mm256_storeu_ps(dy16 + 8, dy_hi);
    _mm256_storeu_ps(dx16, dx_lo);
    _mm256_storeu_ps(dx16 + 8, dx_hi);
    sum_dy = amp_bn_fold16(dy16);
    sum_dy_xhat = amp_bn_fold16(dx16);
    {
        const __m256 va = _mm256_set1_ps(sum_dy / count), vb = _mm256_set1_ps(sum_dy_xhat / count);
        const __m256 vwr = _mm256_set1_ps(w * rstd);
#define BN_TRAIN_DX(g, xv) \
    _mm256_mul_ps(vwr, _mm256_sub_ps(_mm256_sub_ps(g, va), _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(xv, vm), vr), vb)))
        for (int64_t n = 0; n < N; n++) {
            const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
            const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
            char *dxp = (char *)c->dx + row;
            int64_t q = 0;
            /* dx may be dy or x: each vector of both is read before its dx is stored */
            for (; t == AMP_BF16 && q + 16 <= HxW; q += 16) {
                __m256 ge, go, xe, xo;
                avx2_load16_bf16(dyp + (size_t)q * es, &ge, &go);
                avx2_load16_bf16(xp + (size_t)q * es, &xe, &xo);
                avx2_store16_bf16(dxp + (size_t)q * es, BN_TRAIN_DX(ge, xe), BN_TRAIN_DX(go, xo));
            }
            for (; q + 8 <= HxW; q += 8)
                avx2_store8(t, dxp + (size_t)q * es,
                            BN_TRAIN_DX(avx2_load8(t, dyp + (size_t)q * es), avx2_load8(t, xp + (size_t)q * es)));
            if (q < HxW) {
                const size_t k = (size_t)(HxW - q);
                avx2_store8_n(t, dxp + (size_t)q * es, k,
                              BN_TRAIN_DX(avx2_load8_n(t, dyp + (size_t)q * es, k), avx2_load8_n(t, xp + (size_t)q * es, k)));
            }
        }
#undef BN_TRAIN_DX
    }
    amp_bn_bw_store(c, ch, 1, &sum_dy, &sum_dy_xhat);
}
#undef GXHAT

/* Training 0: a task's channels, side by side with HxW 1. */
TARGET static AMP_ALWAYS_INLINE void bn_backward_running(const amp_bn_bw_ctx *c, int64_t task, const amp_dtype t)
{
    const int64_t c0 = task * c->per_task, nc = c->C - c0 < c->per_task ? c->C - c0 : c->per_task;
    if (c->HxW == 1) {
        for (int64_t l = 0; l < nc; l += 8)
            bn_backward_rows(c, c0 + l, nc - l < 8 ? nc - l : 8, t);
        return;
    }
    for (int64_t l = 0; l < nc; l++)
        bn_backward_channel(c, c0 + l, t);
}

/* ---- both forms: tasks and entries -------------------------------------------------- */

AMP_BN_BACKWARD_TASKS(TARGET, AVX2_PARALLEL_MIN)
AMP_FOR_EACH_KERNEL_DTYPE(AMP_BN_TRAINING_ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
AMP_BN_TRAINING_KERNELS(DEFINE)
#undef DEFINE

void amp_avx2_fill_norm(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    AMP_BN_TRAINING_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
