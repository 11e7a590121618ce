/*
 * avx512_norm.c - the AVX-512 batch_norm kernels of the "avx512" and
 * "avx512bf16" sets beyond the running-statistics forward
 * (x86/avx512_eltwise.c): the training forward batch_norm_train and
 * batch_norm_backward in both forms, for f32, bf16 and f16 storage
 * (computing in f32) and f32, bf16 or f16 parameters.
 *
 * Each computes exactly what its reference kernel computes (the same f32
 * operations in the same order, no contraction into FMA, the same one
 * rounding to the storage dtype), so tests compare them bit for bit
 * (tests/runtime/test_fastbackward.c, test_fasteltwise.c).  A channel's
 * sums are the reference's 16 lanes (lane s mod 16 of each image's row,
 * in (n, s) order; ref/ref_batch_moments.inc), one vector here, a row's
 * tail masked, folded by the reference's tree:
 *
 *  batch_norm_train  per channel the sum of x, the mean, the sum of the
 *                  squared deviations, rstd and the running update
 *                  (frame/norm_train_form.h), then y as batch_norm
 *                  computes it (bn16, x86/avx512_store.h): three passes
 *                  over a channel, whose rows stay in cache between them
 *                  at the benchmark's sizes.  HxW 1 goes to the reference.
 *  batch_norm_backward (training 0)  the sums of g and g xhat, dx = (g w)
 *                  rstd in the same pass; with HxW 1, 16 channels side by
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
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_mathf.h"
#include "frame/chunked.h"
#include "frame/norm_backward_form.h"
#include "avx512_lanes.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

/* ---- a channel's 16 lane sums ----------------------------------------------------- */

/* Row xp of HxW elements added into the 16 lanes s, a tail into its own
 * lanes only; with sq, (v - mean)^2 (a multiply, then an add) instead of v. */
TARGET static AMP_ALWAYS_INLINE __m512 row_lanes(const amp_dtype t, const char *xp, int64_t HxW, int sq, __m512 vm,
                                                 __m512 s)
{
    const size_t es = size_of_storage(t);
    int64_t q = 0;
    for (; q + 16 <= HxW; q += 16) {
        __m512 v = load16_all(t, xp + (size_t)q * es);
        if (sq) {
            v = _mm512_sub_ps(v, vm);
            v = _mm512_mul_ps(v, v);
        }
        s = _mm512_add_ps(s, v);
    }
    if (q < HxW) {
        const __mmask16 m = tail_mask((size_t)(HxW - q));
        __m512 v = load16(t, xp + (size_t)q * es, m);
        if (sq) {
            v = _mm512_sub_ps(v, vm);
            v = _mm512_mul_ps(v, v);
        }
        s = _mm512_mask_add_ps(s, m, s, v);
    }
    return s;
}

/* Channel ch of x [N, C, HxW]: its mean and the 16 lane sums of squared
 * deviations from it (ref/ref_batch_moments.inc). */
TARGET static AMP_ALWAYS_INLINE float channel_moments(const amp_dtype t, const void *x, int64_t N, int64_t C,
                                                      int64_t HxW, int64_t ch, float sq16[16])
{
    const size_t es = size_of_storage(t);
    float s16[16], mean;
    __m512 s = _mm512_setzero_ps();
    for (int64_t n = 0; n < N; n++)
        s = row_lanes(t, (const char *)x + (size_t)((n * C + ch) * HxW) * es, HxW, 0, _mm512_setzero_ps(), s);
    _mm512_storeu_ps(s16, s);
    mean = amp_bn_fold16(s16) / (float)(N * HxW);
    s = _mm512_setzero_ps();
    for (int64_t n = 0; n < N; n++)
        s = row_lanes(t, (const char *)x + (size_t)((n * C + ch) * HxW) * es, HxW, 1, _mm512_set1_ps(mean), s);
    _mm512_storeu_ps(sq16, s);
    return mean;
}

/* ---- batch_norm_train ------------------------------------------------------------- */

AMP_BN_TRAIN_TASKS(TARGET, __m512, _mm512_set1_ps, bn_row16, AMP_PARALLEL_MIN)

/* ---- batch_norm_backward, running statistics (training 0) ------------------------ */

/* Channels [per_task task, + per_task).  Each channel's sums as the
 * reference takes them: 16 lanes, lane s mod 16 of each image's row, in
 * (n, s) order (a row's vectors straight from memory, its tail masked),
 * then the reference's tree; dx = (g w) rstd in the same pass. */
TARGET static AMP_ALWAYS_INLINE void bn_backward_running(const amp_bn_bw_ctx *c, int64_t task, const amp_dtype t)
{
    const size_t es = amp_dtype_size(t);
    const int64_t c0 = task * c->per_task, nc = c->C - c0 < c->per_task ? c->C - c0 : c->per_task, HxW = c->HxW;
    if (HxW == 1) {
        /* [N, C]: the 16 channels of an image side by side, each summed
         * over n in its own lane (the reference's lane 0; its tree adds
         * the 15 empty lanes' +0 to a sum that began at +0, which changes
         * nothing) */
        const __mmask16 m = tail_mask((size_t)nc);
        float wv[16], meanv[16], rstdv[16], sdy[16], sdx[16];
        amp_bn_bw_lane_scalars(c, c0, nc, 16, wv, meanv, rstdv);
        const __m512 vw = _mm512_loadu_ps(wv), vm = _mm512_loadu_ps(meanv), vr = _mm512_loadu_ps(rstdv);
        __m512 sum_dy = _mm512_setzero_ps(), sum_dy_xhat = _mm512_setzero_ps();
        for (int64_t n = 0; n < c->N; n++) {
            const size_t off = (size_t)(n * c->C + c0) * es;
            const __m512 g = load16(t, (const char *)c->dy + off, m), xv = load16(t, (const char *)c->x + off, m);
            store16(t, (char *)c->dx + off, m, _mm512_mul_ps(_mm512_mul_ps(g, vw), vr));
            sum_dy = _mm512_add_ps(sum_dy, g);
            sum_dy_xhat = _mm512_add_ps(sum_dy_xhat, _mm512_mul_ps(g, _mm512_mul_ps(_mm512_sub_ps(xv, vm), vr)));
        }
        _mm512_storeu_ps(sdy, sum_dy);
        _mm512_storeu_ps(sdx, sum_dy_xhat);
        amp_bn_bw_store(c, c0, nc, sdy, sdx);
        return;
    }
    for (int64_t l = 0; l < nc; l++) {
        const int64_t ch = c0 + l;
        float w, mean, rstd, dy16[16], dx16[16];
        amp_bn_bw_scalars(c, ch, &w, &mean, &rstd);
        const __m512 vw = _mm512_set1_ps(w), vr = _mm512_set1_ps(rstd), vm = _mm512_set1_ps(mean);
        __m512 sum_dy = _mm512_setzero_ps(), sum_dy_xhat = _mm512_setzero_ps();
        for (int64_t n = 0; n < c->N; n++) {
            const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
            const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
            char *dxp = (char *)c->dx + row;
            int64_t q = 0;
            /* dx may be dy or x: each vector of both is read before its dx is stored */
            for (; q + 16 <= HxW; q += 16) {
                const __m512 g = load16_all(t, dyp + (size_t)q * es), xv = load16_all(t, xp + (size_t)q * es);
                store16_all(t, dxp + (size_t)q * es, _mm512_mul_ps(_mm512_mul_ps(g, vw), vr));
                sum_dy = _mm512_add_ps(sum_dy, g);
                sum_dy_xhat = _mm512_add_ps(sum_dy_xhat, _mm512_mul_ps(g, _mm512_mul_ps(_mm512_sub_ps(xv, vm), vr)));
            }
            if (q < HxW) {
                const __mmask16 m = tail_mask((size_t)(HxW - q));
                const __m512 g = load16(t, dyp + (size_t)q * es, m), xv = load16(t, xp + (size_t)q * es, m);
                store16(t, dxp + (size_t)q * es, m, _mm512_mul_ps(_mm512_mul_ps(g, vw), vr));
                sum_dy = _mm512_mask_add_ps(sum_dy, m, sum_dy, g);
                sum_dy_xhat = _mm512_mask_add_ps(sum_dy_xhat, m, sum_dy_xhat,
                                                 _mm512_mul_ps(g, _mm512_mul_ps(_mm512_sub_ps(xv, vm), vr)));
            }
        }
        _mm512_storeu_ps(dy16, sum_dy);
        _mm512_storeu_ps(dx16, sum_dy_xhat);
        amp_bn_bw_store16(c, ch, dy16, dx16);
    }
}

/* ---- batch_norm_backward, batch statistics (training 1) --------------------------- */

/* g (xv - mean) rstd, the reference's g * ((x - mean) * rstd). */
#define GXHAT(g, xv) _mm512_mul_ps(g, _mm512_mul_ps(_mm512_sub_ps(xv, vm), vr))
/* (w rstd) ((g - sum_dy / count) - xhat (sum_dy_xhat / count)) */
#define BN_TRAIN_DX(g, xv) \
    _mm512_mul_ps(vwr, _mm512_sub_ps(_mm512_sub_ps(g, va), _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(xv, vm), vr), vb)))

TARGET static AMP_ALWAYS_INLINE void bn_train_backward_channel(const amp_bn_bw_ctx *c, int64_t ch, const amp_dtype t)
{
    const size_t es = size_of_storage(t);
    const int64_t N = c->N, HxW = c->HxW;
    float sq16[16], dy16[16], dx16[16], sum_dy, sum_dy_xhat;
    const float mean = channel_moments(t, c->x, N, c->C, HxW, ch, sq16), rstd = amp_bn_bw_train_rstd(c, sq16);
    const float w = c->weight != NULL ? amp_ld(c->pt, c->weight, ch) : 1.0f, count = (float)(N * HxW);
    const __m512 vm = _mm512_set1_ps(mean), vr = _mm512_set1_ps(rstd);
    __m512 sdy = _mm512_setzero_ps(), sdx = sdy;
    for (int64_t n = 0; n < N; n++) {
        const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
        const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
        int64_t q = 0;
        for (; q + 16 <= HxW; q += 16) {
            const __m512 g = load16_all(t, dyp + (size_t)q * es), xv = load16_all(t, xp + (size_t)q * es);
            sdy = _mm512_add_ps(sdy, g);
            sdx = _mm512_add_ps(sdx, GXHAT(g, xv));
        }
        if (q < HxW) {
            const __mmask16 m = tail_mask((size_t)(HxW - q));
            const __m512 g = load16(t, dyp + (size_t)q * es, m), xv = load16(t, xp + (size_t)q * es, m);
            sdy = _mm512_mask_add_ps(sdy, m, sdy, g);
            sdx = _mm512_mask_add_ps(sdx, m, sdx, GXHAT(g, xv));
        }
    }
    _mm512_storeu_ps(dy16, sdy);
    _mm512_storeu_ps(dx16, sdx);
    sum_dy = amp_bn_fold16(dy16);
    sum_dy_xhat = amp_bn_fold16(dx16);
    {
        const __m512 va = _mm512_set1_ps(sum_dy / count), vb = _mm512_set1_ps(sum_dy_xhat / count);
        const __m512 vwr = _mm512_set1_ps(w * rstd);
        for (int64_t n = 0; n < N; n++) {
            const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
            const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
            char *dxp = (char *)c->dx + row;
            int64_t q = 0;
            /* dx may be dy or x: each vector of both is read before its dx is stored */
            for (; q + 16 <= HxW; q += 16)
                store16_all(t, dxp + (size_t)q * es,
                            BN_TRAIN_DX(load16_all(t, dyp + (size_t)q * es), load16_all(t, xp + (size_t)q * es)));
            if (q < HxW) {
                const __mmask16 m = tail_mask((size_t)(HxW - q));
                store16(t, dxp + (size_t)q * es, m,
                        BN_TRAIN_DX(load16(t, dyp + (size_t)q * es, m), load16(t, xp + (size_t)q * es, m)));
            }
        }
    }
    amp_bn_bw_store(c, ch, 1, &sum_dy, &sum_dy_xhat);
}
#undef GXHAT
#undef BN_TRAIN_DX

/* ---- both forms: tasks and entries -------------------------------------------------- */

AMP_BN_BACKWARD_TASKS(TARGET, AMP_PARALLEL_MIN)
AMP_FOR_EACH_KERNEL_DTYPE(AMP_BN_TRAINING_ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
AMP_BN_TRAINING_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_norm(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    AMP_BN_TRAINING_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
