/*
 * norm_train_form.h - the driver of the kernel sets' batch_norm_train
 * (batch statistics, running-statistics update): everything but the
 * vector loops.
 *
 * Per channel the reference (ref_norm.inc, ref_batch_moments.inc) adds x
 * up in 16 lanes, lane s mod 16 of each image's row in (n, s) order, folds
 * them (AMP_ROW_FOLD), divides by N HxW for the mean, takes the squared
 * deviations from it the same way, and normalises with rstd = 1 / sqrt(sq
 * / count + eps) as batch_norm does with running statistics; then the
 * running statistics move by momentum (the unbiased variance).  A set's
 * task computes a channel's 16 lane sums and its outputs; this form holds
 * the context, the scalars between the passes, the running update, the
 * split of the channels into tasks on the pool (amp_bn_channel_tasks,
 * shared with norm_backward_form.h), and the table entry with its way to
 * the reference (f64 parameters, empty N or HxW, and HxW 1, the [N, C]
 * form, which no model of the benchmark table trains).  Needs
 * amprt_internal.h.
 */
#ifndef AMPRT_FRAME_NORM_TRAIN_FORM_H
#define AMPRT_FRAME_NORM_TRAIN_FORM_H

#include <math.h>
#include <stdint.h>

#include "amp_mathf.h"

typedef struct {
    amp_dtype t, pt;
    int64_t N, C, HxW;
    const void *x;
    void *running_mean, *running_var;
    const void *weight, *bias;
    double momentum, eps;
    void *y;
    int64_t per_task; /* channels per task (amp_bn_channel_tasks) */
} amp_bn_train_ctx;

/* A channel's 16 lane sums folded as the reference folds them. */
static inline float amp_bn_fold16(float a[16])
{
    AMP_ROW_FOLD(a);
    return a[0];
}

/* Channels per task for a [N, C, HxW] batch_norm: as few as keep a task
 * at 32K elements or more, so that the threads can balance (resnet18's
 * stem, 64 channels, was 4 tasks on 2 threads), at most 16; 16 for HxW 1
 * (channels side by side). */
static inline int64_t amp_bn_channel_tasks(int64_t N, int64_t HxW)
{
    const int64_t per_channel = N * HxW;
    int64_t per_task;
    if (HxW <= 1)
        return 16;
    per_task = per_channel >= 32768 ? 1 : (32768 + per_channel - 1) / per_channel;
    return per_task > 16 ? 16 : per_task;
}

/* Run task(ctx, task, slot) over C channels in tasks of per_task on the
 * pool; one thread below parallel_min elements. */
static inline void amp_bn_run_channels(int64_t N, int64_t C, int64_t HxW, int64_t per_task, size_t parallel_min,
                                       void (*task)(void *ctx, int64_t task, int slot), void *ctx)
{
    int threads = amp_get_threads();
    if (C <= 0)
        return;
    if ((size_t)(N * C * HxW) < parallel_min)
        threads = 1;
    amp_parallel_run(threads, (C + per_task - 1) / per_task, task, ctx);
}

/* Channel ch's weight (1 without one) and bias (0 without one), f32. */
static AMP_ALWAYS_INLINE void amp_bn_train_affine(const amp_bn_train_ctx *c, int64_t ch, float *w, float *b)
{
    *w = c->weight != NULL ? amp_ld(c->pt, c->weight, ch) : 1.0f;
    *b = c->bias != NULL ? amp_ld(c->pt, c->bias, ch) : 0.0f;
}

/* The mean from the 16 lane sums of x. */
static AMP_ALWAYS_INLINE float amp_bn_train_mean(const amp_bn_train_ctx *c, float sum16[16])
{
    return amp_bn_fold16(sum16) / (float)(c->N * c->HxW);
}

/* rstd from the 16 lane sums of squared deviations, and channel ch's
 * running statistics moved as the reference moves them. */
static AMP_ALWAYS_INLINE float amp_bn_train_finish(const amp_bn_train_ctx *c, int64_t ch, float mean, float sq16[16])
{
    const int64_t count = c->N * c->HxW;
    const float sq = amp_bn_fold16(sq16), keep = (float)(1.0 - c->momentum), take = (float)c->momentum;
    if (c->running_mean != NULL)
        amp_st(c->pt, c->running_mean, ch, keep * amp_ld(c->pt, c->running_mean, ch) + take * mean);
    if (c->running_var != NULL)
        amp_st(c->pt, c->running_var, ch, keep * amp_ld(c->pt, c->running_var, ch) + take * (sq / (float)(count - 1)));
    return 1 / sqrtf(sq / (float)count + (float)c->eps);
}

/* The table entry batch_norm_train_##T: the set's fast(c) where HxW > 1,
 * the reference otherwise. */
#define AMP_BN_TRAIN_ENTRY(T, fast)                                                                              \
    static void batch_norm_train_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x, amp_dtype pt,   \
                                     void *rm, void *rv, const void *w, const void *b, double momentum,         \
                                     double eps, AMP_CTYPE_##T *y)                                              \
    {                                                                                                            \
        amp_bn_train_ctx c = { AMP_DTYPE_##T, pt, N, C, HxW, x, rm, rv, w, b, momentum, eps, y, 1 };             \
        if ((pt != AMP_F32 && pt != AMP_BF16 && pt != AMP_F16) || N <= 0 || HxW <= 1 || C <= 0)                 \
            amp_ref_batch_norm_train_##T(N, C, HxW, x, pt, rm, rv, w, b, momentum, eps, y);                      \
        else                                                                                                     \
            fast(&c);                                                                                            \
    }

/* The set's batch_norm_train_fast(c): per channel its mean and 16 lane
 * sums of squared deviations by the set's channel_moments(t, x, N, C,
 * HxW, ch, sq16), rstd and the running update, then y by the set's
 * bn_row(t, x, y, n, mean, rstd, w, b, has_w, has_b) on vectors V
 * (DUP(float) the broadcast) row by row; a task's channels, per storage
 * dtype (so that the set's loads and stores compile to their one case),
 * with weight and bias (a network's usual batch_norm) the flags constant.
 * ATTR: the set's target attribute; PARALLEL_MIN: the size below which
 * one thread runs it all. */
#define AMP_BN_TRAIN_TASKS(ATTR, V, DUP, bn_row, PARALLEL_MIN)                                                   \
    ATTR static AMP_ALWAYS_INLINE void bn_train_channel(const amp_bn_train_ctx *c, int64_t ch, const amp_dtype t, \
                                                        int has_w, int has_b)                                    \
    {                                                                                                            \
        const size_t es = t == AMP_F32 ? 4 : 2;                                                                  \
        const int64_t HxW = c->HxW;                                                                              \
        float sq16[16], w, b;                                                                                    \
        const float mean = channel_moments(t, c->x, c->N, c->C, HxW, ch, sq16);                                  \
        const float rstd = amp_bn_train_finish(c, ch, mean, sq16);                                               \
        amp_bn_train_affine(c, ch, &w, &b);                                                                      \
        const V vm = DUP(mean), vr = DUP(rstd), vw = DUP(w), vb = DUP(b);                                        \
        for (int64_t n = 0; n < c->N; n++) {                                                                     \
            const size_t row = (size_t)((n * c->C + ch) * HxW) * es;                                             \
            bn_row(t, (const char *)c->x + row, (char *)c->y + row, HxW, vm, vr, vw, vb, has_w, has_b);          \
        }                                                                                                        \
    }                                                                                                            \
    ATTR static AMP_ALWAYS_INLINE void bn_train_body(const amp_bn_train_ctx *c, int64_t task, const amp_dtype t) \
    {                                                                                                            \
        const int64_t c0 = task * c->per_task, c1 = c0 + c->per_task < c->C ? c0 + c->per_task : c->C;           \
        const int has_w = c->weight != NULL, has_b = c->bias != NULL;                                            \
        for (int64_t ch = c0; ch < c1; ch++) {                                                                   \
            if (has_w && has_b)                                                                                  \
                bn_train_channel(c, ch, t, 1, 1);                                                                \
            else                                                                                                 \
                bn_train_channel(c, ch, t, has_w, has_b);                                                        \
        }                                                                                                        \
    }                                                                                                            \
    ATTR static void bn_train_task(void *ctx, int64_t task, int slot)                                            \
    {                                                                                                            \
        const amp_bn_train_ctx *c = ctx;                                                                         \
        (void)slot;                                                                                              \
        switch (c->t) {                                                                                          \
        case AMP_BF16: bn_train_body(c, task, AMP_BF16); break;                                                  \
        case AMP_F16: bn_train_body(c, task, AMP_F16); break;                                                    \
        default: bn_train_body(c, task, AMP_F32); break;                                                         \
        }                                                                                                        \
    }                                                                                                            \
    static void batch_norm_train_fast(amp_bn_train_ctx *c)                                                       \
    {                                                                                                            \
        c->per_task = amp_bn_channel_tasks(c->N, c->HxW);                                                        \
        amp_bn_run_channels(c->N, c->C, c->HxW, c->per_task, PARALLEL_MIN, bn_train_task, c);                    \
    }

#endif /* AMPRT_FRAME_NORM_TRAIN_FORM_H */
