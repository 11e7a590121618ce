/*
 * norm_backward_form.h - the driver of the kernel sets'
 * batch_norm_backward: everything but the vector sums.
 *
 * In the running-statistics form (training 0), per channel the reference
 * (ref_backward_norm.inc) takes rstd = 1 / sqrt(var + eps) in f32, dx = (g w) rstd, and the sums of g and of
 * g ((x - mean) rstd) over 16 lanes (lane s mod 16 of each image's row,
 * in (n, s) order) reduced by a fixed tree; with HxW 1 a set puts LANES
 * channels side by side, each summed in its own lane (the reference's
 * lane 0: its tree adds 15 empty lanes' +0 to a sum begun at +0, which
 * changes nothing).  This form holds the context, the channels' scalars,
 * the tree and the stores of the sums, the split of the channels into
 * tasks on the pool (amp_bn_bw_run), and the table entry with its way
 * to the reference (f64 parameters, empty N or HxW).
 * x86/avx2_norm.c, x86/avx512_norm.c and arm/neon_norm.c write the
 * sums.
 *
 * The training form (training 1) recomputes each channel's batch
 * statistics as batch_norm_train does (frame/norm_train_form.h: its 16
 * lane sums of x, then of the squared deviations), takes the same two
 * sums of g and g xhat, and then dx = (w rstd) ((g - sum_dy / count) -
 * xhat (sum_dy_xhat / count)) in a third pass; x86/avx2_norm.c,
 * x86/avx512_norm.c and arm/neon_norm.c write it
 * (AMP_BN_BACKWARD_TRAINING_ENTRY), HxW 1 going to the reference.
 * Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_NORM_BACKWARD_FORM_H
#define AMPRT_FRAME_NORM_BACKWARD_FORM_H

#include <math.h>
#include <stdint.h>

#include "norm_train_form.h"

typedef struct {
    amp_dtype t, pt;
    int64_t N, C, HxW;
    const void *x, *mean, *var, *weight;
    double eps;
    const void *dy;
    void *dx, *dweight, *dbias;
    int64_t per_task; /* channels per task (amp_bn_bw_run) */
    int training;
} amp_bn_bw_ctx;

/* The reference's tree over 16 lanes (ref_backward_norm.inc's sum16):
 * a[l] += a[l + w] for w = 8, 4, 2, 1. */
static inline float amp_bn_sum16_tree(float a[16])
{
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            a[l] += a[l + w];
    return a[0];
}

/* Channel ch's weight (1 without one), mean and rstd, as the reference
 * computes them. */
static AMP_ALWAYS_INLINE void amp_bn_bw_scalars(const amp_bn_bw_ctx *c, int64_t ch, float *w, float *mean,
                                                float *rstd)
{
    *w = c->weight != NULL ? amp_ld(c->pt, c->weight, ch) : 1.0f;
    *mean = amp_ld(c->pt, c->mean, ch);
    *rstd = 1 / sqrtf(amp_ld(c->pt, c->var, ch) + (float)c->eps);
}

/* The scalars of nc channels from c0 side by side in lanes lanes (lanes
 * past nc repeat channel c0's). */
static AMP_ALWAYS_INLINE void amp_bn_bw_lane_scalars(const amp_bn_bw_ctx *c, int64_t c0, int64_t nc, int lanes,
                                                     float *w, float *mean, float *rstd)
{
    for (int64_t l = 0; l < lanes; l++)
        amp_bn_bw_scalars(c, c0 + (l < nc ? l : 0), &w[l], &mean[l], &rstd[l]);
}

/* Channels c0 .. c0 + nc - 1's sums: sum_dy_xhat into dweight, sum_dy
 * into dbias (each where asked for). */
static AMP_ALWAYS_INLINE void amp_bn_bw_store(const amp_bn_bw_ctx *c, int64_t c0, int64_t nc, const float *sum_dy,
                                              const float *sum_dy_xhat)
{
    for (int64_t l = 0; l < nc; l++) {
        if (c->dweight != NULL)
            amp_st(c->pt, c->dweight, c0 + l, sum_dy_xhat[l]);
        if (c->dbias != NULL)
            amp_st(c->pt, c->dbias, c0 + l, sum_dy[l]);
    }
}

/* Channel ch's sums from their 16 lanes (each reduced by the tree). */
static AMP_ALWAYS_INLINE void amp_bn_bw_store16(const amp_bn_bw_ctx *c, int64_t ch, float dy16[16],
                                                float dy_xhat16[16])
{
    const float sum_dy = amp_bn_sum16_tree(dy16), sum_dy_xhat = amp_bn_sum16_tree(dy_xhat16);
    amp_bn_bw_store(c, ch, 1, &sum_dy, &sum_dy_xhat);
}

/* c's channels in tasks of c->per_task on the pool, task(c, task, slot),
 * split as amp_bn_channel_tasks splits them. */
static inline void amp_bn_bw_run(amp_bn_bw_ctx *c, size_t parallel_min, void (*task)(void *ctx, int64_t task, int slot))
{
    c->per_task = amp_bn_channel_tasks(c->N, c->HxW);
    amp_bn_run_channels(c->N, c->C, c->HxW, c->per_task, parallel_min, task, c);
}

/* The training form's scalars of a channel: rstd from the 16 lane sums
 * of squared deviations, as the reference takes it. */
static AMP_ALWAYS_INLINE float amp_bn_bw_train_rstd(const amp_bn_bw_ctx *c, float sq16[16])
{
    return 1 / sqrtf(amp_bn_fold16(sq16) / (float)(c->N * c->HxW) + (float)c->eps);
}

/* The table entry batch_norm_backward_##T: the set's fast(c) on the
 * running-statistics form, the reference otherwise. */
#define AMP_BN_BACKWARD_ENTRY(T, fast)                                                                           \
    static void batch_norm_backward_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x, amp_dtype pt, \
                                        const void *rm, const void *rv, const void *w, int training, double eps, \
                                        const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx, void *dw, void *db)          \
    {                                                                                                            \
        amp_bn_bw_ctx c = { AMP_DTYPE_##T, pt, N, C, HxW, x, rm, rv, w, eps, dy, dx, dw, db, 16, 0 };            \
        if (training || (pt != AMP_F32 && pt != AMP_BF16 && pt != AMP_F16) || N <= 0 || HxW <= 0)                \
            amp_ref_batch_norm_backward_##T(N, C, HxW, x, pt, rm, rv, w, training, eps, dy, dx, dw, db);         \
        else                                                                                                     \
            fast(&c);                                                                                            \
    }

/* The table entry batch_norm_backward_##T of a set with a training form
 * too: fast(c) on the running-statistics form, fast_train(c) on the
 * training form where HxW > 1, the reference otherwise. */
#define AMP_BN_BACKWARD_TRAINING_ENTRY(T, fast, fast_train)                                                      \
    static void batch_norm_backward_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x, amp_dtype pt, \
                                        const void *rm, const void *rv, const void *w, int training, double eps, \
                                        const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx, void *dw, void *db)          \
    {                                                                                                            \
        amp_bn_bw_ctx c = { AMP_DTYPE_##T, pt, N, C, HxW, x, rm, rv, w, eps, dy, dx, dw, db, 16, training };     \
        if ((pt != AMP_F32 && pt != AMP_BF16 && pt != AMP_F16) || N <= 0 || HxW <= 0 || (training && HxW == 1)) \
            amp_ref_batch_norm_backward_##T(N, C, HxW, x, pt, rm, rv, w, training, eps, dy, dx, dw, db);         \
        else if (training)                                                                                       \
            fast_train(&c);                                                                                      \
        else                                                                                                     \
            fast(&c);                                                                                            \
    }

/* The set's batch_norm_backward_fast(c), both forms, over its
 * bn_train_backward_channel(c, ch, t) (training 1, one channel) and
 * bn_backward_running(c, task, t) (training 0, a task's channels): per
 * storage dtype, so that the set's loads and stores compile to their one
 * case.  ATTR and PARALLEL_MIN as AMP_BN_TRAIN_TASKS's. */
#define AMP_BN_BACKWARD_TASKS(ATTR, PARALLEL_MIN)                                                                \
    ATTR static AMP_ALWAYS_INLINE void bn_backward_body(const amp_bn_bw_ctx *c, int64_t task, const amp_dtype t) \
    {                                                                                                            \
        if (c->training) {                                                                                       \
            const int64_t c0 = task * c->per_task, nc = c->C - c0 < c->per_task ? c->C - c0 : c->per_task;       \
            for (int64_t l = 0; l < nc; l++)                                                                     \
                bn_train_backward_channel(c, c0 + l, t);                                                         \
            return;                                                                                              \
        }                                                                                                        \
        bn_backward_running(c, task, t);                                                                         \
    }                                                                                                            \
    ATTR static void bn_backward_task(void *ctx, int64_t task, int slot)                                         \
    {                                                                                                            \
        const amp_bn_bw_ctx *c = ctx;                                                                            \
        (void)slot;                                                                                              \
        switch (c->t) {                                                                                          \
        case AMP_BF16: bn_backward_body(c, task, AMP_BF16); break;                                               \
        case AMP_F16: bn_backward_body(c, task, AMP_F16); break;                                                 \
        default: bn_backward_body(c, task, AMP_F32); break;                                                      \
        }                                                                                                        \
    }                                                                                                            \
    static void batch_norm_backward_fast(amp_bn_bw_ctx *c)                                                       \
    {                                                                                                            \
        amp_bn_bw_run(c, PARALLEL_MIN, bn_backward_task);                                                        \
    }

/* A set's entries over AMP_BN_TRAIN_TASKS and AMP_BN_BACKWARD_TASKS, each
 * dtype's batch_norm_train and batch_norm_backward (both forms), and the
 * list of them: X(kernel, implementation). */
#define AMP_BN_TRAINING_ENTRIES(T)                                                                               \
    AMP_BN_TRAIN_ENTRY(T, batch_norm_train_fast)                                                                 \
    AMP_BN_BACKWARD_TRAINING_ENTRY(T, batch_norm_backward_fast, batch_norm_backward_fast)
#define AMP_BN_TRAINING_OF(X, T)                                                                                 \
    X(batch_norm_train_##T, batch_norm_train_##T)                                                                \
    X(batch_norm_backward_##T, batch_norm_backward_##T)
#define AMP_BN_TRAINING_KERNELS(X) AMP_BN_TRAINING_OF(X, f32) AMP_BN_TRAINING_OF(X, bf16) AMP_BN_TRAINING_OF(X, f16)

#endif /* AMPRT_FRAME_NORM_BACKWARD_FORM_H */
