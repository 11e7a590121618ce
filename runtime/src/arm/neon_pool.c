/*
 * neon_pool.c - the aarch64 sets' pooling kernels, forward and backward,
 * for f32, bf16 and f16 storage (bf16 and f16 computing in f32,
 * arm/neon_convert.h), bit for bit the reference (ref_pool.inc,
 * ref_backward_spatial.inc), as x86/avx2_eltwise.c's and
 * x86/avx2_backward.c's are, with 4 lanes:
 *
 *  max_pool (2-d, dilation 1, no indices)  separable: each input row
 *                  widened to f32 into a buffer padded with -inf (a -inf
 *                  tap never wins, so padding it is skipping it), each
 *                  row's maximum over each window's columns computed once
 *                  into a ring of the last kh rows, then each output row
 *                  the scan over its window's rows of those; the scan is
 *                  the reference's (best = v > best || isnan(v) ? v :
 *                  best), so the result is the last NaN in the order, else
 *                  the first largest value, found the same way row by row.
 *  max_pool_backward, max_pool_relu_backward (2-d, dilation 1)  the
 *                  forward's choice made 4 outputs at a time (each lane
 *                  its best value and that value's flat index, from the
 *                  window's first element), then the dy summed into an
 *                  f32 plane in output order, as the reference adds them.
 *  adaptive_avg_pool, and its backward (one output per plane)  a global
 *                  average pool: 4 planes at a time, one per lane, each
 *                  lane's sum the reference's own chain (from 0, in memory
 *                  order, in f32), divided by each dim's size in turn; the
 *                  gradient one share per plane written over the plane.
 *
 * Other geometries go to the reference.  Taps at stride 1 and 2 are
 * vector loads (LD1, LD2's even lanes), others lane by lane.  Both sets
 * share these.  The drivers (max_pool_backward's geometry check and run,
 * the scalar planes, the entries) are frame/pool_form.h's.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "ref/ref_window.h"
#include "frame/pool_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

#define POOL_RING_VECS 1024 /* the forward's ring of row maxima, in vectors */

static const int32_t lane_no[4] = { 0, 1, 2, 3 };

/* a lane takes x where x > best or x is NaN (the reference's test) */
static AMP_ALWAYS_INLINE uint32x4_t pool_takes(float32x4_t best, float32x4_t x)
{
    return vorrq_u32(vcgtq_f32(x, best), neon_isnan4(x));
}

/* base[k + i sw] for the 4 lanes i (lanes past the row's outputs take
 * values never stored). */
static AMP_ALWAYS_INLINE float32x4_t pool_tap(const float *base, int64_t k, int64_t sw)
{
    if (sw == 1)
        return vld1q_f32(base + k);
    if (sw == 2)
        return vld2q_f32(base + k).val[0];
    const float v[4] = { base[k], base[k + sw], base[k + 2 * sw], base[k + 3 * sw] };
    return vld1q_f32(v);
}

/* Input row r of plane x, widened to f32 at rowbuf + pw (only the row's
 * own columns: the padding around it stays as it is). */
static AMP_ALWAYS_INLINE void widen_row(amp_dtype t, const char *xr, int64_t in_w, float *dst)
{
    const size_t es = neon_size_of(t);
    int64_t q = 0;
    for (; q + 4 <= in_w; q += 4)
        vst1q_f32(dst + q, neon_load4(t, xr + (size_t)q * es));
    if (q < in_w)
        neon_store4_n(AMP_F32, dst + q, (size_t)(in_w - q), neon_load4_n(t, xr + (size_t)q * es, (size_t)(in_w - q)));
}

/* ---- max_pool ------------------------------------------------------------------- */

static AMP_ALWAYS_INLINE void max_pool_planes(amp_dtype t, const pool_geometry *g, int64_t planes, const void *x,
                                              void *y)
{
    const size_t es = neon_size_of(t);
    const int64_t kh = g->kernel[1], kw = g->kernel[2], sh = g->stride[1], sw = g->stride[2];
    const int64_t ph = g->padding[1], pw = g->padding[2], in_h = g->in[1], in_w = g->in[2];
    const int64_t out_h = g->out[1], out_w = g->out[2], nvec = (out_w + 3) / 4;
    /* (+ 64: whole-vector taps read past the last output's) */
    float rowbuf[AMP_POOL_ROW_MAX + 64];
    float32x4_t ring[POOL_RING_VECS];
    for (int64_t q = 0; q < AMP_POOL_ROW_MAX + 64; q++)
        rowbuf[q] = -INFINITY;
    for (int64_t plane = 0; plane < planes; plane++) {
        const char *xp = (const char *)x + (size_t)(plane * in_h * in_w) * es;
        char *yp = (char *)y + (size_t)(plane * out_h * out_w) * es;
        int64_t done = 0; /* input rows [0, done) have their maxima in the ring */
        for (int64_t oh = 0; oh < out_h; oh++) {
            int64_t r0 = oh * sh - ph, r1 = r0 + kh;
            r0 = r0 < 0 ? 0 : r0;
            r1 = r1 > in_h ? in_h : r1;
            done = done < r0 ? r0 : done;
            for (; done < r1; done++) {
                float32x4_t *rm = ring + (done % kh) * nvec;
                widen_row(t, xp + (size_t)(done * in_w) * es, in_w, rowbuf + pw);
                for (int64_t v = 0; v < nvec; v++) {
                    const float *base = rowbuf + v * 4 * sw;
                    float32x4_t b = vdupq_n_f32(-INFINITY);
                    for (int64_t k = 0; k < kw; k++) {
                        const float32x4_t xv = pool_tap(base, k, sw);
                        b = vbslq_f32(pool_takes(b, xv), xv, b);
                    }
                    rm[v] = b;
                }
            }
            for (int64_t v = 0; v < nvec; v++) {
                float32x4_t b = vdupq_n_f32(-INFINITY);
                for (int64_t r = r0; r < r1; r++) {
                    const float32x4_t xv = ring[(r % kh) * nvec + v];
                    b = vbslq_f32(pool_takes(b, xv), xv, b);
                }
                if (v * 4 + 4 <= out_w)
                    neon_store4(t, yp + (size_t)(oh * out_w + v * 4) * es, b);
                else
                    neon_store4_n(t, yp + (size_t)(oh * out_w + v * 4) * es, (size_t)(out_w - v * 4), b);
            }
        }
    }
}

/* 1 when done (else the caller runs the reference). */
static int max_pool_fast(amp_dtype t, const amp_pool_desc *d, const void *x, void *y, int64_t *indices)
{
    const pool_geometry g = pool_geometry_of(d);
    int simple = d->nspatial == 2 && indices == NULL;
    for (int i = 1; i < 3 && simple; i++)
        simple = g.dilation[i] == 1 && g.padding[i] < g.kernel[i];
    /* every tap (of whole vectors of outputs) and the row at its offset
     * inside the row buffer, the ring held */
    simple = simple && ((g.out[2] + 3) / 4 * 4 - 1) * g.stride[2] + g.kernel[2] + 8 <= AMP_POOL_ROW_MAX &&
             g.padding[2] + g.in[2] <= AMP_POOL_ROW_MAX && g.kernel[1] * ((g.out[2] + 3) / 4) <= POOL_RING_VECS;
    if (!simple)
        return 0;
    if (d->planes <= 0 || g.out_plane <= 0)
        return 1;
    switch (t) {
    case AMP_BF16: max_pool_planes(AMP_BF16, &g, d->planes, x, y); break;
    case AMP_F16: max_pool_planes(AMP_F16, &g, d->planes, x, y); break;
    default: max_pool_planes(AMP_F32, &g, d->planes, x, y); break;
    }
    return 1;
}

/* ---- max_pool_backward, 2-d, dilation 1 ------------------------------------------ */

/* The window's rows of output row oh: each lane's best value (in best)
 * and its flat input index (in idx). */
static void mpb_choose_row(const amp_mpb_ctx *c, const char *x, int64_t oh, float *rowbuf, float *best, int32_t *idx)
{
    const amp_dtype t = c->t;
    const size_t es = neon_size_of(t);
    const int64_t in_w = c->in_w, sw = c->sw, pw = c->pw, kw = c->kw, nvec = (c->out_w + 3) / 4;
    const int32x4_t lane_sw = vmulq_n_s32(vld1q_s32(lane_no), (int32_t)sw);
    int64_t r0 = oh * c->sh - c->ph, r1 = r0 + c->kh;
    r0 = r0 < 0 ? 0 : r0;
    r1 = r1 > c->in_h ? c->in_h : r1;
    for (int64_t v = 0; v < nvec; v++) {
        /* the reference's start: the window's first element */
        const int32x4_t col0 = vaddq_s32(lane_sw, vdupq_n_s32((int32_t)(v * 4 * sw - pw)));
        vst1q_s32(idx + v * 4, vaddq_s32(vmaxq_s32(col0, vdupq_n_s32(0)), vdupq_n_s32((int32_t)(r0 * in_w))));
    }
    for (int64_t r = r0; r < r1; r++) {
        widen_row(t, x + (size_t)(r * in_w) * es, in_w, rowbuf + pw);
        for (int64_t v = 0; v < nvec; v++) {
            const float *base = rowbuf + v * 4 * sw;
            const int32x4_t at0 = vaddq_s32(lane_sw, vdupq_n_s32((int32_t)(r * in_w + v * 4 * sw - pw)));
            float32x4_t b = r == r0 ? vdupq_n_f32(-INFINITY) : vld1q_f32(best + v * 4);
            int32x4_t bi = vld1q_s32(idx + v * 4);
            for (int64_t k = 0; k < kw; k++) {
                const float32x4_t xv = pool_tap(base, k, sw);
                const uint32x4_t take = pool_takes(b, xv);
                b = vbslq_f32(take, xv, b);
                bi = vbslq_s32(take, vaddq_s32(at0, vdupq_n_s32((int32_t)k)), bi);
            }
            vst1q_f32(best + v * 4, b);
            vst1q_s32(idx + v * 4, bi);
        }
    }
}

/* relu_backward of 4 lanes: g where x > 0 or NaN, else +0 */
static AMP_ALWAYS_INLINE float32x4_t relu_pass4(float32x4_t x, float32x4_t g)
{
    return vbslq_f32(vcleq_f32(x, vdupq_n_f32(0)), vdupq_n_f32(0), g);
}

static void max_pool_backward_task(void *ctx, int64_t plane, int slot)
{
    const amp_mpb_ctx *c = ctx;
    const amp_dtype t = c->t;
    const size_t es = neon_size_of(t);
    const int64_t out_w = c->out_w, in_plane = c->in_h * c->in_w, nvec = (out_w + 3) / 4;
    const char *x = (const char *)c->x + (size_t)(plane * in_plane) * es;
    const char *dy = (const char *)c->dy + (size_t)(plane * c->out_h * out_w) * es;
    char *dx = (char *)c->dx + (size_t)(plane * in_plane) * es;
    float *sum = c->sums + (size_t)slot * (size_t)in_plane;
    int32_t *idx = c->idx + (size_t)slot * (size_t)(nvec * 4);
    /* the padded row (-inf around it), each lane's best so far, the row's dy */
    float rowbuf[AMP_POOL_ROW_MAX + 64], best[AMP_POOL_ROW_MAX], dyrow[AMP_POOL_ROW_MAX];
    for (int64_t q = 0; q < AMP_POOL_ROW_MAX + 64; q++)
        rowbuf[q] = -INFINITY;
    memset(sum, 0, (size_t)in_plane * sizeof *sum);
    for (int64_t oh = 0; oh < c->out_h; oh++) {
        mpb_choose_row(c, x, oh, rowbuf, best, idx);
        /* the row's dy as f32 first, so that the ordered pass is loads and adds only */
        widen_row(t, dy + (size_t)(oh * out_w) * es, out_w, dyrow);
        for (int64_t ow = 0; ow < out_w; ow++)
            sum[idx[ow]] += dyrow[ow];
    }
    for (int64_t i = 0; i < in_plane; i += 4) {
        const size_t n = in_plane - i < 4 ? (size_t)(in_plane - i) : 4;
        float32x4_t v = neon_load4_n(AMP_F32, sum + i, n);
        if (c->relu)
            v = relu_pass4(neon_load4_n(t, x + (size_t)i * es, n), v);
        neon_store4_n(t, dx + (size_t)i * es, n, v);
    }
}

/* 1 when done (else the caller runs the reference). */
static int max_pool_backward_fast(amp_dtype t, const amp_pool_desc *d, const void *x, const void *dy, void *dx,
                                  int relu)
{
    /* (+ 8: pool_tap's loads past the last output) */
    return amp_mpb_run(t, d, x, dy, dx, relu, 4, 8, (size_t)1 << 17, max_pool_backward_task);
}

/* ---- adaptive_avg_pool to one position per plane -------------------------------- */

/* Element i of planes p .. p + 3 (in_plane apart) as f32, one per lane. */
static AMP_ALWAYS_INLINE float32x4_t plane_lanes(amp_dtype t, const char *base, int64_t in_plane, int64_t i)
{
    if (t == AMP_F32) {
        const float *f = (const float *)(const void *)base + i;
        float32x4_t v = vdupq_n_f32(0);
        v = vld1q_lane_f32(f, v, 0);
        v = vld1q_lane_f32(f + in_plane, v, 1);
        v = vld1q_lane_f32(f + 2 * in_plane, v, 2);
        return vld1q_lane_f32(f + 3 * in_plane, v, 3);
    }
    const uint16_t *h = (const uint16_t *)(const void *)base + i;
    uint16x4_t u = vdup_n_u16(0);
    u = vld1_lane_u16(h, u, 0);
    u = vld1_lane_u16(h + in_plane, u, 1);
    u = vld1_lane_u16(h + 2 * in_plane, u, 2);
    u = vld1_lane_u16(h + 3 * in_plane, u, 3);
    return neon_load4(t, &u);
}

static AMP_ALWAYS_INLINE void global_avg_pool(amp_dtype t, int nspatial, int64_t planes, const int64_t *in_size,
                                              int64_t in_plane, const void *x, void *y)
{
    const size_t es = neon_size_of(t);
    int64_t p = 0;
    for (; p + 4 <= planes; p += 4) {
        const char *base = (const char *)x + (size_t)(p * in_plane) * es;
        float32x4_t acc = vdupq_n_f32(0);
        for (int64_t i = 0; i < in_plane; i++)
            acc = vaddq_f32(acc, plane_lanes(t, base, in_plane, i));
        for (int d = 0; d < nspatial; d++)
            acc = vdivq_f32(acc, vdupq_n_f32((float)in_size[d]));
        neon_store4(t, (char *)y + (size_t)p * es, acc);
    }
    amp_global_avg_pool_planes(t, nspatial, p, planes, in_size, in_plane, x, y);
}

/* Every input element of plane p gets the same share
 * (frame/pool_form.h's amp_global_avg_pool_backward), stored
 * 8 halves or 4 floats at a time. */
static void global_avg_pool_backward(amp_dtype t, int nspatial, int64_t planes, const int64_t *in_size,
                                     int64_t in_plane, const void *dy, void *dx)
{
    const size_t es = neon_size_of(t);
    for (int64_t p = 0; p < planes; p++) {
        float share = amp_ld(t, dy, p);
        for (int i = 0; i < nspatial; i++)
            share /= (float)in_size[i];
        if (es == 2) {
            uint16_t *o = (uint16_t *)dx + (size_t)(p * in_plane), h;
            amp_st(t, &h, 0, 0.0f + share);
            const uint16x8_t v = vdupq_n_u16(h);
            int64_t i = 0;
            for (; i + 8 <= in_plane; i += 8)
                vst1q_u16(o + i, v);
            for (; i < in_plane; i++)
                o[i] = h;
        } else {
            float *o = (float *)dx + (size_t)(p * in_plane);
            const float32x4_t v = vdupq_n_f32(0.0f + share);
            int64_t i = 0;
            for (; i + 4 <= in_plane; i += 4)
                vst1q_f32(o + i, v);
            for (; i < in_plane; i++)
                o[i] = 0.0f + share;
        }
    }
}

/* ---- table entries ------------------------------------------------------------------ */

/* The neon set's own relu_backward (arm/neon_backward.c). */
#define NEON_OWN(T) extern AMP_HIDDEN amp_kernel_fn_relu_backward_##T *const amp_isa_neon_relu_backward_##T;
AMP_FOR_EACH_KERNEL_DTYPE(NEON_OWN)
#undef NEON_OWN

#define ENTRIES(T)                                                                                \
    static void max_pool_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y,     \
                             int64_t *indices)                                                    \
    {                                                                                             \
        if (!max_pool_fast(AMP_DTYPE_##T, d, x, y, indices))                                      \
            amp_ref_max_pool_##T(d, x, y, indices);                                               \
    }                                                                                             \
    AMP_GLOBAL_AVG_POOL_ENTRY(T, global_avg_pool)                                                                                             \
    AMP_POOL_BACKWARD_ENTRIES(T, max_pool_backward_fast, AMP_MPB_REF, RELU_BW, global_avg_pool_backward)
#define RELU_BW(T, n, x, dx) amp_isa_neon_relu_backward_##T(n, x, x, dx, dx)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

/* This file's kernels of the sets: X(kernel, implementation). */
#define POOL_OF(X, T)                                                                             \
    X(max_pool_##T, max_pool_##T)                                                                 \
    X(max_pool_backward_##T, max_pool_backward_##T)                                               \
    X(max_pool_relu_backward_##T, max_pool_relu_backward_##T)                                     \
    X(adaptive_avg_pool_##T, adaptive_avg_pool_##T)                                               \
    X(adaptive_avg_pool_backward_##T, adaptive_avg_pool_backward_##T)
#define POOL_KERNELS(X) POOL_OF(X, f32) POOL_OF(X, bf16) POOL_OF(X, f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
POOL_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_pool(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    POOL_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
