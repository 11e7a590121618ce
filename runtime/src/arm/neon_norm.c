/*
 * neon_norm.c - the aarch64 sets' batch_norm in its running-statistics
 * form, forward and backward, and in training (batch_norm_train and the
 * training form of batch_norm_backward), for f32, bf16 and f16 storage
 * (bf16 and f16 computing in f32, arm/neon_convert.h), four lanes at a
 * time, bit for bit the reference (ref_norm.inc, ref_backward_norm.inc):
 *
 *  batch_norm      per channel rstd = 1 / sqrt(var + eps) in f32, per
 *                  element ((v - mean) * rstd) * weight + bias, each step
 *                  rounded to f32 in the reference's operand order (of
 *                  two NaN operands the left one, neon_nan_left4), one
 *                  rounding to the storage dtype.
 *  batch_norm_backward  per channel the reference's 16 lane sums (lane s
 *                  mod 16 of each image's row, in (n, s) order: four
 *                  4-lane vectors here) and its fixed tree, dx = (g w)
 *                  rstd in the same pass; with HxW 1, 4 channels side by
 *                  side, each its own lane 0.  f64 parameters go to the
 *                  reference; the scalars, the tree and the entry are
 *                  frame/norm_backward_form.h's.
 *  batch_norm_train, batch_norm_backward (training 1)  per channel the
 *                  sum of x, the mean, the sum of squared deviations in
 *                  the same 16 lanes (ref/ref_batch_moments.inc), then y
 *                  as batch_norm computes it, or the sums of g and g xhat
 *                  and then dx; HxW 1 goes to the reference
 *                  (frame/norm_train_form.h, norm_backward_form.h).
 *
 * Both sets share these (the bf16 stores of a value computed in f32 round
 * by integer operations; BFCVTN would give the same bits).
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/norm_backward_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

/* ---- batch_norm ------------------------------------------------------------------ */

static AMP_ALWAYS_INLINE float32x4_t bn4(float32x4_t v, float32x4_t mean, float32x4_t rstd, float32x4_t w,
                                         float32x4_t b, int has_w, int has_b)
{
    float32x4_t r = neon_mul4(neon_sub4(v, mean), rstd);
    if (has_w)
        r = neon_mul4(r, w);
    if (has_b)
        r = neon_add4(r, b);
    return r;
}

static AMP_ALWAYS_INLINE void bn_planes(amp_dtype t, int64_t N, int64_t C, int64_t HxW, const void *x, amp_dtype pt,
                                        const void *mean, const void *var, const void *weight, const void *bias,
                                        double eps, void *y, int has_w, int has_b)
{
    const size_t es = neon_size_of(t);
    for (int64_t plane = 0; plane < N * C; plane++) {
        const int64_t ch = plane % C;
        const float rstd = 1 / sqrtf(amp_ld(pt, var, ch) + (float)eps);
        const float32x4_t vm = vdupq_n_f32(amp_ld(pt, mean, ch)), vr = vdupq_n_f32(rstd);
        const float32x4_t vw = vdupq_n_f32(has_w ? amp_ld(pt, weight, ch) : 1.0f);
        const float32x4_t vb = vdupq_n_f32(has_b ? amp_ld(pt, bias, ch) : 0.0f);
        const char *xp = (const char *)x + (size_t)(plane * HxW) * es;
        char *yp = (char *)y + (size_t)(plane * HxW) * es;
        int64_t s = 0;
        for (; s + 8 <= HxW; s += 8) {
            const float32x4_t a = neon_load4(t, xp + (size_t)s * es), b = neon_load4(t, xp + (size_t)(s + 4) * es);
            neon_store4(t, yp + (size_t)s * es, bn4(a, vm, vr, vw, vb, has_w, has_b));
            neon_store4(t, yp + (size_t)(s + 4) * es, bn4(b, vm, vr, vw, vb, has_w, has_b));
        }
        for (; s + 4 <= HxW; s += 4)
            neon_store4(t, yp + (size_t)s * es, bn4(neon_load4(t, xp + (size_t)s * es), vm, vr, vw, vb, has_w, has_b));
        if (s < HxW) {
            const size_t n = (size_t)(HxW - s);
            neon_store4_n(t, yp + (size_t)s * es, n,
                          bn4(neon_load4_n(t, xp + (size_t)s * es, n), vm, vr, vw, vb, has_w, has_b));
        }
    }
}

static void batch_norm_fast(amp_dtype t, int64_t N, int64_t C, int64_t HxW, const void *x, amp_dtype pt,
                            const void *mean, const void *var, const void *weight, const void *bias, double eps,
                            void *y)
{
    const int has_w = weight != NULL, has_b = bias != NULL;
    if (N <= 0 || C <= 0 || HxW <= 0)
        return;
#define BN(T) bn_planes(T, N, C, HxW, x, pt, mean, var, weight, bias, eps, y, has_w, has_b)
#define BN_USUAL(T) bn_planes(T, N, C, HxW, x, pt, mean, var, weight, bias, eps, y, 1, 1)
    if (has_w && has_b) {
        switch (t) {
        case AMP_BF16: BN_USUAL(AMP_BF16); return;
        case AMP_F16: BN_USUAL(AMP_F16); return;
        default: BN_USUAL(AMP_F32); return;
        }
    }
    switch (t) {
    case AMP_BF16: BN(AMP_BF16); return;
    case AMP_F16: BN(AMP_F16); return;
    default: BN(AMP_F32); return;
    }
#undef BN
#undef BN_USUAL
}

/* ---- conv_ex's post-ops ------------------------------------------------------------- */

/* One vector of a post row: the batch_norm step as batch_norm_fast computes
 * it, the residual add as the sets' add (neon_add4), relu as theirs, each
 * step's result rounded to t as the separate kernels' stores round it. */
static AMP_ALWAYS_INLINE float32x4_t post4(amp_dtype t, const amp_conv_post_row *p, const float32x4_t bn[4],
                                           float32x4_t v, const char *residual, size_t n)
{
    if (p->bn)
        v = neon_round4(t, bn4(v, bn[0], bn[1], bn[2], bn[3], p->bn_weight, p->bn_bias));
    if (residual != NULL)
        v = neon_round4(t, neon_add4(v, n == 4 ? neon_load4(t, residual) : neon_load4_n(t, residual, n)));
    if (p->relu)
        v = vbslq_f32(vcltq_f32(v, vdupq_n_f32(0)), vdupq_n_f32(0), v);
    return v;
}

static AMP_ALWAYS_INLINE void post_rows(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr,
                                        const void *residual, const void *src, void *y, int64_t ld)
{
    const size_t es = neon_size_of(t);
    for (int64_t r = 0; r < rows; r++) {
        const amp_conv_post_row *p = &pr[r];
        const float32x4_t bn[4] = { vdupq_n_f32(p->mean), vdupq_n_f32(p->rstd), vdupq_n_f32(p->weight),
                                    vdupq_n_f32(p->bias) };
        const char *sp = (const char *)src + (size_t)(r * ld) * es;
        const char *rp = residual != NULL ? (const char *)residual + (size_t)(r * ld) * es : NULL;
        char *yp = (char *)y + (size_t)(r * ld) * es;
        int64_t j = 0;
        for (; j + 4 <= n; j += 4)
            neon_store4(t, yp + (size_t)j * es,
                        post4(t, p, bn, neon_load4_quiet(t, sp + (size_t)j * es),
                              rp != NULL ? rp + (size_t)j * es : NULL, 4));
        if (j < n) {
            const size_t m = (size_t)(n - j);
            float32x4_t v = neon_load4_n(t, sp + (size_t)j * es, m);
            if (t == AMP_BF16) /* the quieting neon_load4_quiet does */
                v = neon_nan_left4(v, v);
            neon_store4_n(t, yp + (size_t)j * es, m, post4(t, p, bn, v, rp != NULL ? rp + (size_t)j * es : NULL, m));
        }
        if (p->clamp) /* the set's clamp kernel on the row, while it is in L1 */
            amp_conv_clamp_row(t, (size_t)n, p->post, yp);
    }
}

/* The NEON sets' conv_ex post (amprt_internal.h's contract), on f32, bf16
 * and f16 rows: bit for bit their batch_norm, add, relu and clamp run one
 * after another, NaNs included, since both are these vector steps (and
 * the clamp their kernel). */
void amp_neon_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr, const void *residual,
                        const void *src, void *y, int64_t ld)
{
    switch (t) {
    case AMP_BF16: post_rows(AMP_BF16, rows, n, pr, residual, src, y, ld); return;
    case AMP_F16: post_rows(AMP_F16, rows, n, pr, residual, src, y, ld); return;
    case AMP_F32: post_rows(AMP_F32, rows, n, pr, residual, src, y, ld); return;
    default: return; /* frame/conv.c runs conv_ex on f32, bf16 and f16 only */
    }
}

/* ---- batch_norm_backward, running statistics ------------------------------------- */

/* [N, C] (HxW 1): 4 channels from c0 (nc of them) side by side, each
 * summed over n in its own lane (the reference's lane 0; its tree adds 15
 * empty lanes' +0 to a sum begun at +0, which changes nothing). */
static AMP_ALWAYS_INLINE void bn_backward_rows(const amp_bn_bw_ctx *c, int64_t c0, int64_t nc, const amp_dtype t)
{
    const size_t es = neon_size_of(t), n4 = (size_t)nc;
    float wv[4], meanv[4], rstdv[4], sdy[4], sdx[4];
    amp_bn_bw_lane_scalars(c, c0, nc, 4, wv, meanv, rstdv);
    const float32x4_t vw = vld1q_f32(wv), vm = vld1q_f32(meanv), vr = vld1q_f32(rstdv);
    float32x4_t sum_dy = vdupq_n_f32(0), sum_dy_xhat = sum_dy;
    for (int64_t n = 0; n < c->N; n++) {
        const size_t off = (size_t)(n * c->C + c0) * es;
        const float32x4_t g = nc == 4 ? neon_load4(t, (const char *)c->dy + off) : neon_load4_n(t, (const char *)c->dy + off, n4);
        const float32x4_t xv = nc == 4 ? neon_load4(t, (const char *)c->x + off) : neon_load4_n(t, (const char *)c->x + off, n4);
        const float32x4_t d = vmulq_f32(vmulq_f32(g, vw), vr);
        if (nc == 4)
            neon_store4(t, (char *)c->dx + off, d);
        else
            neon_store4_n(t, (char *)c->dx + off, n4, d);
        sum_dy = vaddq_f32(sum_dy, g);
        sum_dy_xhat = vaddq_f32(sum_dy_xhat, vmulq_f32(g, vmulq_f32(vsubq_f32(xv, vm), vr)));
    }
    vst1q_f32(sdy, sum_dy);
    vst1q_f32(sdx, sum_dy_xhat);
    amp_bn_bw_store(c, c0, nc, sdy, sdx);
}

/* One channel, HxW > 1: the reference's 16 lanes in four vectors, 16
 * positions a step; a row's tail adds only its own lanes. */
static AMP_ALWAYS_INLINE void bn_backward_channel(const amp_bn_bw_ctx *c, int64_t ch, const amp_dtype t)
{
    const size_t es = neon_size_of(t);
    const int64_t HxW = c->HxW;
    float w, mean, rstd, dy16[16], dx16[16];
    amp_bn_bw_scalars(c, ch, &w, &mean, &rstd);
    const float32x4_t vw = vdupq_n_f32(w), vr = vdupq_n_f32(rstd), vm = vdupq_n_f32(mean), zero = vdupq_n_f32(0);
    float32x4_t sdy[4] = { zero, zero, zero, zero }, sdx[4] = { zero, zero, zero, zero };
    for (int64_t n = 0; n < c->N; n++) {
        const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
        const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
        char *dxp = (char *)c->dx + row;
        int64_t q = 0;
        /* dx may be dy or x: each vector of both is read before its dx is stored */
        for (; q + 16 <= HxW; q += 16)
            for (int v = 0; v < 4; v++) {
                const size_t at = (size_t)(q + 4 * v) * es;
                const float32x4_t g = neon_load4(t, dyp + at), xv = neon_load4(t, xp + at);
                neon_store4(t, dxp + at, vmulq_f32(vmulq_f32(g, vw), vr));
                sdy[v] = vaddq_f32(sdy[v], g);
                sdx[v] = vaddq_f32(sdx[v], vmulq_f32(g, vmulq_f32(vsubq_f32(xv, vm), vr)));
            }
        for (int v = 0; v < 4 && q < HxW; v++, q += 4) {
            const size_t left = (size_t)(HxW - q), k = left < 4 ? left : 4;
            const float32x4_t g = neon_load4_n(t, dyp + (size_t)q * es, k), xv = neon_load4_n(t, xp + (size_t)q * es, k);
            static const uint32_t lane_no[4] = { 0, 1, 2, 3 };
            const uint32x4_t on = vcltq_u32(vld1q_u32(lane_no), vdupq_n_u32((uint32_t)k));
            neon_store4_n(t, dxp + (size_t)q * es, k, vmulq_f32(vmulq_f32(g, vw), vr));
            sdy[v] = vbslq_f32(on, vaddq_f32(sdy[v], g), sdy[v]);
            sdx[v] = vbslq_f32(on, vaddq_f32(sdx[v], vmulq_f32(g, vmulq_f32(vsubq_f32(xv, vm), vr))), sdx[v]);
        }
    }
    for (int v = 0; v < 4; v++) {
        vst1q_f32(dy16 + 4 * v, sdy[v]);
        vst1q_f32(dx16 + 4 * v, sdx[v]);
    }
    amp_bn_bw_store16(c, ch, dy16, dx16);
}

static AMP_ALWAYS_INLINE void bn_backward_all(const amp_bn_bw_ctx *c, const amp_dtype t)
{
    if (c->HxW == 1) {
        for (int64_t c0 = 0; c0 < c->C; c0 += 4)
            bn_backward_rows(c, c0, c->C - c0 < 4 ? c->C - c0 : 4, t);
        return;
    }
    for (int64_t ch = 0; ch < c->C; ch++)
        bn_backward_channel(c, ch, t);
}

static void batch_norm_backward_fast(const amp_bn_bw_ctx *c)
{
    if (c->C <= 0)
        return;
    switch (c->t) {
    case AMP_BF16: bn_backward_all(c, AMP_BF16); break;
    case AMP_F16: bn_backward_all(c, AMP_F16); break;
    default: bn_backward_all(c, AMP_F32); break;
    }
}

/* ---- batch statistics: batch_norm_train and batch_norm_backward's training form --- */

/* Lanes (all ones) l < k of 4. */
static AMP_ALWAYS_INLINE uint32x4_t first_lanes4(size_t k)
{
    static const uint32_t lane_no[4] = { 0, 1, 2, 3 };
    return vcltq_u32(vld1q_u32(lane_no), vdupq_n_u32((uint32_t)k));
}

/* Row xp of HxW elements added into the reference's 16 lanes (four
 * vectors s), 16 positions a step, a tail into its own lanes only; with
 * sq, (v - mean)^2 (a multiply, then an add) instead of v. */
static AMP_ALWAYS_INLINE void row_lanes(const amp_dtype t, const char *xp, int64_t HxW, int sq, float32x4_t vm,
                                        float32x4_t s[4])
{
    const size_t es = neon_size_of(t);
    int64_t q = 0;
    for (; q + 16 <= HxW; q += 16)
        for (int v = 0; v < 4; v++) {
            float32x4_t a = neon_load4(t, xp + (size_t)(q + 4 * v) * es);
            if (sq) {
                a = vsubq_f32(a, vm);
                a = vmulq_f32(a, a);
            }
            s[v] = vaddq_f32(s[v], a);
        }
    for (int v = 0; v < 4 && q < HxW; v++, q += 4) {
        const size_t left = (size_t)(HxW - q), k = left < 4 ? left : 4;
        float32x4_t a = neon_load4_n(t, xp + (size_t)q * es, k);
        if (sq) {
            a = vsubq_f32(a, vm);
            a = vmulq_f32(a, a);
        }
        s[v] = vbslq_f32(first_lanes4(k), vaddq_f32(s[v], a), s[v]);
    }
}

/* Channel ch of x [N, C, HxW]: its mean and the 16 lane sums of squared
 * deviations from it (ref/ref_batch_moments.inc). */
static AMP_ALWAYS_INLINE float channel_moments(const amp_dtype t, const void *x, int64_t N, int64_t C, int64_t HxW,
                                               int64_t ch, float sq16[16])
{
    const size_t es = neon_size_of(t);
    const float32x4_t zero = vdupq_n_f32(0);
    float32x4_t s[4] = { zero, zero, zero, zero };
    float s16[16], mean;
    for (int64_t n = 0; n < N; n++)
        row_lanes(t, (const char *)x + (size_t)((n * C + ch) * HxW) * es, HxW, 0, zero, s);
    for (int v = 0; v < 4; v++) {
        vst1q_f32(s16 + 4 * v, s[v]);
        s[v] = zero;
    }
    mean = amp_bn_fold16(s16) / (float)(N * HxW);
    for (int64_t n = 0; n < N; n++)
        row_lanes(t, (const char *)x + (size_t)((n * C + ch) * HxW) * es, HxW, 1, vdupq_n_f32(mean), s);
    for (int v = 0; v < 4; v++)
        vst1q_f32(sq16 + 4 * v, s[v]);
    return mean;
}

/* batch_norm_train: per channel the statistics, the running update
 * (frame/norm_train_form.h), then y as batch_norm computes it (bn4). */
static AMP_ALWAYS_INLINE void bn_train_all(const amp_bn_train_ctx *c, const amp_dtype t, int has_w, int has_b)
{
    const size_t es = neon_size_of(t);
    const int64_t HxW = c->HxW;
    for (int64_t ch = 0; ch < c->C; ch++) {
        float sq16[16], w, b;
        const float mean = channel_moments(t, c->x, c->N, c->C, HxW, ch, sq16);
        const float rstd = amp_bn_train_finish(c, ch, mean, sq16);
        amp_bn_train_affine(c, ch, &w, &b);
        const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd), vw = vdupq_n_f32(w), vb = vdupq_n_f32(b);
        for (int64_t n = 0; n < c->N; n++) {
            const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
            const char *xp = (const char *)c->x + row;
            char *yp = (char *)c->y + row;
            int64_t s = 0;
            for (; s + 4 <= HxW; s += 4)
                neon_store4(t, yp + (size_t)s * es, bn4(neon_load4(t, xp + (size_t)s * es), vm, vr, vw, vb, has_w, has_b));
            if (s < HxW) {
                const size_t k = (size_t)(HxW - s);
                neon_store4_n(t, yp + (size_t)s * es, k,
                              bn4(neon_load4_n(t, xp + (size_t)s * es, k), vm, vr, vw, vb, has_w, has_b));
            }
        }
    }
}

static void batch_norm_train_fast(amp_bn_train_ctx *c)
{
    const int has_w = c->weight != NULL, has_b = c->bias != NULL;
    if (has_w && has_b) {
        switch (c->t) {
        case AMP_BF16: bn_train_all(c, AMP_BF16, 1, 1); return;
        case AMP_F16: bn_train_all(c, AMP_F16, 1, 1); return;
        default: bn_train_all(c, AMP_F32, 1, 1); return;
        }
    }
    switch (c->t) {
    case AMP_BF16: bn_train_all(c, AMP_BF16, has_w, has_b); return;
    case AMP_F16: bn_train_all(c, AMP_F16, has_w, has_b); return;
    default: bn_train_all(c, AMP_F32, has_w, has_b); return;
    }
}

/* batch_norm_backward, training 1: the statistics, the sums of g and g
 * xhat in the 16 lanes, then dx = (w rstd) ((g - sum_dy / count) - xhat
 * (sum_dy_xhat / count)). */
static AMP_ALWAYS_INLINE void bn_train_backward_channel(const amp_bn_bw_ctx *c, int64_t ch, const amp_dtype t)
{
    const size_t es = neon_size_of(t);
    const int64_t N = c->N, HxW = c->HxW;
    float sq16[16], dy16[16], dx16[16], sum_dy, sum_dy_xhat;
    const float mean = channel_moments(t, c->x, N, c->C, HxW, ch, sq16), rstd = amp_bn_bw_train_rstd(c, sq16);
    const float w = c->weight != NULL ? amp_ld(c->pt, c->weight, ch) : 1.0f, count = (float)(N * HxW);
    const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd), zero = vdupq_n_f32(0);
    float32x4_t sdy[4] = { zero, zero, zero, zero }, sdx[4] = { zero, zero, zero, zero };
    for (int64_t n = 0; n < N; n++) {
        const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
        const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
        int64_t q = 0;
        for (; q + 16 <= HxW; q += 16)
            for (int v = 0; v < 4; v++) {
                const size_t at = (size_t)(q + 4 * v) * es;
                const float32x4_t g = neon_load4(t, dyp + at), xv = neon_load4(t, xp + at);
                sdy[v] = vaddq_f32(sdy[v], g);
                sdx[v] = vaddq_f32(sdx[v], vmulq_f32(g, vmulq_f32(vsubq_f32(xv, vm), vr)));
            }
        for (int v = 0; v < 4 && q < HxW; v++, q += 4) {
            const size_t left = (size_t)(HxW - q), k = left < 4 ? left : 4;
            const float32x4_t g = neon_load4_n(t, dyp + (size_t)q * es, k), xv = neon_load4_n(t, xp + (size_t)q * es, k);
            const uint32x4_t on = first_lanes4(k);
            sdy[v] = vbslq_f32(on, vaddq_f32(sdy[v], g), sdy[v]);
            sdx[v] = vbslq_f32(on, vaddq_f32(sdx[v], vmulq_f32(g, vmulq_f32(vsubq_f32(xv, vm), vr))), sdx[v]);
        }
    }
    for (int v = 0; v < 4; v++) {
        vst1q_f32(dy16 + 4 * v, sdy[v]);
        vst1q_f32(dx16 + 4 * v, sdx[v]);
    }
    sum_dy = amp_bn_fold16(dy16);
    sum_dy_xhat = amp_bn_fold16(dx16);
    {
        const float32x4_t va = vdupq_n_f32(sum_dy / count), vb = vdupq_n_f32(sum_dy_xhat / count);
        const float32x4_t vwr = vdupq_n_f32(w * rstd);
#define BN_TRAIN_DX(g, xv) vmulq_f32(vwr, vsubq_f32(vsubq_f32(g, va), vmulq_f32(vmulq_f32(vsubq_f32(xv, vm), vr), vb)))
        for (int64_t n = 0; n < N; n++) {
            const size_t row = (size_t)((n * c->C + ch) * HxW) * es;
            const char *dyp = (const char *)c->dy + row, *xp = (const char *)c->x + row;
            char *dxp = (char *)c->dx + row;
            int64_t q = 0;
            /* dx may be dy or x: each vector of both is read before its dx is stored */
            for (; q + 4 <= HxW; q += 4)
                neon_store4(t, dxp + (size_t)q * es,
                            BN_TRAIN_DX(neon_load4(t, dyp + (size_t)q * es), neon_load4(t, xp + (size_t)q * es)));
            if (q < HxW) {
                const size_t k = (size_t)(HxW - q);
                neon_store4_n(t, dxp + (size_t)q * es, k,
                              BN_TRAIN_DX(neon_load4_n(t, dyp + (size_t)q * es, k), neon_load4_n(t, xp + (size_t)q * es, k)));
            }
        }
#undef BN_TRAIN_DX
    }
    amp_bn_bw_store(c, ch, 1, &sum_dy, &sum_dy_xhat);
}

static AMP_ALWAYS_INLINE void bn_train_backward_all(const amp_bn_bw_ctx *c, const amp_dtype t)
{
    for (int64_t ch = 0; ch < c->C; ch++)
        bn_train_backward_channel(c, ch, t);
}

static void batch_norm_backward_train(const amp_bn_bw_ctx *c)
{
    switch (c->t) {
    case AMP_BF16: bn_train_backward_all(c, AMP_BF16); break;
    case AMP_F16: bn_train_backward_all(c, AMP_F16); break;
    default: bn_train_backward_all(c, AMP_F32); break;
    }
}

/* ---- table entries ------------------------------------------------------------------ */

#define PARAM_DTYPE_OK(pt) ((pt) == AMP_F32 || (pt) == AMP_BF16 || (pt) == AMP_F16)

#define ENTRIES(T)                                                                                \
    static void batch_norm_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x,         \
                               amp_dtype pt, const void *rm, const void *rv, const void *w,       \
                               const void *b, double eps, AMP_CTYPE_##T *y)                       \
    {                                                                                             \
        if (!PARAM_DTYPE_OK(pt))                                                                  \
            amp_ref_batch_norm_##T(N, C, HxW, x, pt, rm, rv, w, b, eps, y);                        \
        else                                                                                      \
            batch_norm_fast(AMP_DTYPE_##T, N, C, HxW, x, pt, rm, rv, w, b, eps, y);               \
    }                                                                                             \
    AMP_BN_TRAIN_ENTRY(T, batch_norm_train_fast)                                                  \
    AMP_BN_BACKWARD_TRAINING_ENTRY(T, batch_norm_backward_fast, batch_norm_backward_train)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

/* This file's kernels of the sets: X(kernel, implementation). */
#define NORM_OF(X, T)                                                                             \
    X(batch_norm_##T, batch_norm_##T)                                                             \
    X(batch_norm_train_##T, batch_norm_train_##T)                                                 \
    X(batch_norm_backward_##T, batch_norm_backward_##T)
#define NORM_KERNELS(X) NORM_OF(X, f32) NORM_OF(X, bf16) NORM_OF(X, f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
NORM_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_norm(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    NORM_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
