/*
 * avx2_backward.c - the AVX2 (+ FMA + F16C) gradient and optimizer
 * kernels of the "avx2" set: relu_backward, the sgd update, 2-d
 * max_pool_backward (and max_pool_relu_backward) and the global
 * adaptive_avg_pool_backward, for f32, bf16 and f16 storage (bf16 and f16
 * computing in f32, x86/avx2_store.h).
 *
 * Each computes exactly what its reference kernel computes (the same f32
 * operations in the same order, no contraction into FMA, the same one
 * rounding to the storage dtype), so tests compare them bit for bit
 * (tests/runtime/test_fastbackward.c):
 *
 *  relu_backward   dx = x <= 0 ? 0 : dy, on the stored bits of x.
 *  sgd             the reference's formula per element, 8 at a time.
 *  max_pool_backward (2-d, dilation 1)  the forward's choice made 8
 *                  outputs at a time (each lane its best value and that
 *                  value's flat index, from the window's first element),
 *                  then the dy summed into an f32 plane in output order,
 *                  as the reference adds them; other geometries go to the
 *                  reference.
 *  adaptive_avg_pool_backward (one output per plane)  one share per plane
 *                  written over the plane.
 *
 * The drivers (contexts, scalars, tasks, geometry checks, entries) are
 * frame/pool_form.h's, sgd_form.h's and backward_form.h's; this file
 * holds the vector loops.
 * batch_norm_backward is x86/avx2_norm.c's.
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill_kernels after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/chunked.h"
#include "frame/pool_form.h"
#include "frame/sgd_form.h"
#include "frame/backward_form.h"
#include "ref/ref_window.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* ---- relu_backward -------------------------------------------------------------- */

TARGET static void relu_backward_body(const void *c_, size_t begin, size_t end)
{
    const amp_relu_bw_ctx *c = c_;
    size_t i = begin;
    if (c->t == AMP_F32) {
        const uint32_t *x = c->x, *dy = c->dy;
        uint32_t *dx = c->dx;
        for (; i + 8 <= end; i += 8)
            _mm256_storeu_si256((__m256i *)(dx + i), avx2_relu_bw32(_mm256_loadu_si256((const __m256i *)(x + i)),
                                                                    _mm256_loadu_si256((const __m256i *)(dy + i))));
        if (i < end) {
            uint32_t bx[8] __attribute__((aligned(32))) = { 0 }, bg[8] __attribute__((aligned(32))) = { 0 };
            memcpy(bx, x + i, (end - i) * 4);
            memcpy(bg, dy + i, (end - i) * 4);
            _mm256_store_si256((__m256i *)bg, avx2_relu_bw32(_mm256_load_si256((const __m256i *)bx),
                                                             _mm256_load_si256((const __m256i *)bg)));
            memcpy(dx + i, bg, (end - i) * 4);
        }
        return;
    }
    {
        const uint16_t *x = c->x, *dy = c->dy;
        uint16_t *dx = c->dx;
        const short inf = c->t == AMP_BF16 ? 0x7f80 : 0x7c00, quiet = c->t == AMP_BF16 ? 0x0040 : 0x0200;
        for (; i + 16 <= end; i += 16)
            _mm256_storeu_si256((__m256i *)(dx + i),
                                avx2_relu_bw16(_mm256_loadu_si256((const __m256i *)(x + i)),
                                               _mm256_loadu_si256((const __m256i *)(dy + i)), inf, quiet));
        if (i < end) {
            uint16_t bx[16] __attribute__((aligned(32))) = { 0 }, bg[16] __attribute__((aligned(32))) = { 0 };
            memcpy(bx, x + i, (end - i) * 2);
            memcpy(bg, dy + i, (end - i) * 2);
            _mm256_store_si256((__m256i *)bg, avx2_relu_bw16(_mm256_load_si256((const __m256i *)bx),
                                                             _mm256_load_si256((const __m256i *)bg), inf, quiet));
            memcpy(dx + i, bg, (end - i) * 2);
        }
    }
}

/* ---- sgd ---------------------------------------------------------------------------- */

#define SGD_NEG(v) _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)))
AMP_SGD_STEP(TARGET, sgd8, __m256, _mm256_add_ps, _mm256_mul_ps, _mm256_sub_ps, _mm256_set1_ps, SGD_NEG)

TARGET static AMP_ALWAYS_INLINE void sgd_loop(amp_dtype t, const amp_sgd_ctx *c, size_t begin, size_t end, int maximize,
                                              int use_wd, int use_m, int first, int nesterov)
{
    const size_t es = avx2_size_of(t);
    char *p = c->p, *buf = c->buf;
    const char *g = c->g;
    size_t i = begin;
    for (; t == AMP_BF16 && i + 16 <= end; i += 16) {
        __m256 pe, po, ge, go, be = _mm256_setzero_ps(), bo = be, re, ro;
        avx2_load16_bf16(p + i * es, &pe, &po);
        avx2_load16_bf16(g + i * es, &ge, &go);
        if (use_m && !first)
            avx2_load16_bf16(buf + i * es, &be, &bo);
        re = sgd8(c, pe, ge, &be, maximize, use_wd, use_m, first, nesterov);
        ro = sgd8(c, po, go, &bo, maximize, use_wd, use_m, first, nesterov);
        if (use_m)
            avx2_store16_bf16(buf + i * es, be, bo);
        avx2_store16_bf16(p + i * es, re, ro);
    }
    for (; i + 8 <= end; i += 8) {
        __m256 b = use_m && !first ? avx2_load8(t, buf + i * es) : _mm256_setzero_ps();
        const __m256 r = sgd8(c, avx2_load8(t, p + i * es), avx2_load8(t, g + i * es), &b, maximize, use_wd, use_m,
                              first, nesterov);
        if (use_m)
            avx2_store8(t, buf + i * es, b);
        avx2_store8(t, p + i * es, r);
    }
    if (i < end) {
        const size_t n = end - i;
        __m256 b = use_m && !first ? avx2_load8_n(t, buf + i * es, n) : _mm256_setzero_ps();
        const __m256 r = sgd8(c, avx2_load8_n(t, p + i * es, n), avx2_load8_n(t, g + i * es, n), &b, maximize, use_wd,
                              use_m, first, nesterov);
        if (use_m)
            avx2_store8_n(t, buf + i * es, n, b);
        avx2_store8_n(t, p + i * es, n, r);
    }
}

AMP_SGD_DRIVER(TARGET, AMP_RUN_ELEMENTS)

/* ---- max_pool_backward, 2-d, dilation 1 ------------------------------------------ */

/* rowbuf[base + k + i sw] for lanes i, as x86/avx2_eltwise.c's pool_tap. */
TARGET static AMP_ALWAYS_INLINE __m256 tap8(const float *base, int64_t k, int64_t sw, __m256i lane_sw)
{
    if (sw == 1)
        return _mm256_loadu_ps(base + k);
    if (sw == 2) {
        const __m256 a = _mm256_loadu_ps(base + k), b = _mm256_loadu_ps(base + k + 8);
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    }
    return _mm256_i32gather_ps(base + k, lane_sw, 4);
}

/* The window's rows of output row oh: each lane's best value and its flat
 * input index into idx, the row's dy as f32 into dyrow. */
TARGET static void mpb_choose_row(const amp_mpb_ctx *c, const char *x, int64_t oh, float *rowbuf, int32_t *idx)
{
    const amp_dtype t = c->t;
    const size_t es = avx2_size_of(t);
    const int64_t in_w = c->in_w, out_w = c->out_w, sw = c->sw, pw = c->pw, kw = c->kw, nvec = (out_w + 7) / 8;
    const __m256i lane_sw = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)sw));
    int64_t r0 = oh * c->sh - c->ph, r1 = r0 + c->kh;
    r0 = r0 < 0 ? 0 : r0;
    r1 = r1 > c->in_h ? c->in_h : r1;
    for (int64_t v = 0; v < nvec; v++) {
        /* the reference's start: the window's first element */
        const __m256i col0 = _mm256_add_epi32(lane_sw, _mm256_set1_epi32((int)(v * 8 * sw - pw)));
        _mm256_storeu_si256((__m256i *)(idx + v * 8), _mm256_add_epi32(_mm256_max_epi32(col0, _mm256_setzero_si256()),
                                                                       _mm256_set1_epi32((int)(r0 * in_w))));
    }
    for (int64_t r = r0; r < r1; r++) {
        const char *xr = x + (size_t)(r * in_w) * es;
        int64_t q = 0;
        for (; q + 8 <= in_w; q += 8)
            _mm256_storeu_ps(rowbuf + pw + q, avx2_load8(t, xr + (size_t)q * es));
        if (q < in_w)
            avx2_store8_n(AMP_F32, rowbuf + pw + q, (size_t)(in_w - q), avx2_load8_n(t, xr + (size_t)q * es, (size_t)(in_w - q)));
        for (int64_t v = 0; v < nvec; v++) {
            const float *base = rowbuf + v * 8 * sw;
            const __m256i at0 = _mm256_add_epi32(lane_sw, _mm256_set1_epi32((int)(r * in_w + v * 8 * sw - pw)));
            __m256 b = r == r0 ? _mm256_set1_ps(-INFINITY) : _mm256_load_ps(rowbuf + AMP_POOL_ROW_MAX + 64 + v * 8);
            __m256i bi = _mm256_loadu_si256((const __m256i *)(idx + v * 8));
            for (int64_t k = 0; k < kw; k++) {
                const __m256 xv = tap8(base, k, sw, lane_sw);
                const __m256 take = _mm256_or_ps(_mm256_cmp_ps(xv, b, _CMP_GT_OQ), avx2_isnan(xv));
                b = _mm256_blendv_ps(b, xv, take);
                bi = _mm256_blendv_epi8(bi, _mm256_add_epi32(at0, _mm256_set1_epi32((int)k)), _mm256_castps_si256(take));
            }
            _mm256_store_ps(rowbuf + AMP_POOL_ROW_MAX + 64 + v * 8, b);
            _mm256_storeu_si256((__m256i *)(idx + v * 8), bi);
        }
    }
}

TARGET static void max_pool_backward_task(void *ctx, int64_t plane, int slot)
{
    const amp_mpb_ctx *c = ctx;
    const amp_dtype t = c->t;
    const size_t es = avx2_size_of(t);
    const int64_t out_w = c->out_w, in_plane = c->in_h * c->in_w, nvec = (out_w + 7) / 8;
    const char *x = (const char *)c->x + (size_t)(plane * in_plane) * es;
    const char *dy = (const char *)c->dy + (size_t)(plane * c->out_h * out_w) * es;
    char *dx = (char *)c->dx + (size_t)(plane * in_plane) * es;
    float *sum = c->sums + (size_t)slot * (size_t)in_plane;
    int32_t *idx = c->idx + (size_t)slot * (size_t)(nvec * 8);
    /* the padded row (-inf around it), then each lane's best so far */
    float rowbuf[2 * AMP_POOL_ROW_MAX + 64] __attribute__((aligned(32)));
    float dyrow[AMP_POOL_ROW_MAX]; /* out_w <= AMP_POOL_ROW_MAX (amp_mpb_simple) */
    for (int64_t q = 0; q < AMP_POOL_ROW_MAX + 64; q++)
        rowbuf[q] = -INFINITY;
    memset(sum, 0, (size_t)in_plane * sizeof *sum);
    for (int64_t oh = 0; oh < c->out_h; oh++) {
        const char *dyr = dy + (size_t)(oh * out_w) * es;
        int64_t q = 0;
        mpb_choose_row(c, x, oh, rowbuf, idx);
        /* the row's dy as f32 first, so that the ordered pass is loads
         * and adds only */
        for (; q + 8 <= out_w; q += 8)
            _mm256_storeu_ps(dyrow + q, avx2_load8(t, dyr + (size_t)q * es));
        if (q < out_w)
            avx2_store8_n(AMP_F32, dyrow + q, (size_t)(out_w - q), avx2_load8_n(t, dyr + (size_t)q * es, (size_t)(out_w - q)));
        for (int64_t ow = 0; ow < out_w; ow++)
            sum[idx[ow]] += dyrow[ow];
    }
    /* whole vectors, then the tail through the buffered forms (which stall
     * on the store they read back: not for every vector) */
    int64_t i = 0;
    for (; i + 8 <= in_plane; i += 8) {
        __m256 v = _mm256_loadu_ps(sum + i);
        if (c->relu)
            v = _mm256_castsi256_ps(
                avx2_relu_bw32(_mm256_castps_si256(avx2_load8(t, x + (size_t)i * es)), _mm256_castps_si256(v)));
        avx2_store8(t, dx + (size_t)i * es, v);
    }
    if (i < in_plane) {
        const size_t n = (size_t)(in_plane - i);
        __m256 v = avx2_load8_n(AMP_F32, sum + i, n);
        if (c->relu)
            v = _mm256_castsi256_ps(avx2_relu_bw32(_mm256_castps_si256(avx2_load8_n(t, x + (size_t)i * es, n)),
                                                   _mm256_castps_si256(v)));
        avx2_store8_n(t, dx + (size_t)i * es, n, v);
    }
}

/* ---- table entries ------------------------------------------------------------------ */

/* max_pool_backward: 8 outputs a vector, tap8 reading 8 floats past the
 * last output's */
AMP_BACKWARD_ENTRIES(AMP_MPB_REF, 8, 8)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
AMP_BACKWARD_KERNELS(DEFINE)
#undef DEFINE

void amp_avx2_fill_backward(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    AMP_BACKWARD_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
