/*
 * avx512_eltwise.c - the AVX-512 kernels of the "avx512" and
 * "avx512bf16" sets beyond the GEMM: relu, add, batch_norm (running
 * statistics), the f32 <-> bf16/f16 casts, 2-d max_pool and max_pool's
 * backward, for f32, bf16 and f16 storage, and conv_ex's fused post-ops
 * (the same batch_norm, add, relu and the clamp on a tile of a
 * convolution's output, for frame/conv.c's epilogue).  They are what a convolutional network runs
 * between its convolutions (resnet18's profile: relu, max_pool,
 * batch_norm, add).
 *
 * Each computes exactly what its reference kernel computes, element by
 * element (the same f32 operations in the same order, no contraction into
 * FMA, the same one rounding to the storage dtype), so tests compare them
 * bit for bit.  (Which NaN a sum or product of two NaNs returns, the C
 * reference leaves to its compiler; here it is fixed to the left
 * operand's: see "which NaN" below.)  Large arrays are split into chunks on
 * the thread pool; the result does not depend on the split.  The
 * contexts, per-dtype bodies, batch_norm's planes and the entries are
 * frame/eltwise_form.h's; this file holds the vector loops.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "ref/ref_window.h"
#include "frame/chunked.h"
#include "frame/eltwise_form.h"
#include "frame/pool_form.h"
#include "avx512_lanes.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

/* a + b, a NaN a winning */
TARGET static inline __m512 add_first(__m512 a, __m512 b)
{
    const __m512 r = _mm512_add_ps(a, b);
    return _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q) ? nan_of_first(a, r) : r;
}

/* ---- relu --------------------------------------------------------------------
 * v < 0 ? 0 : v on the stored bits: an element becomes +0 exactly when it
 * is negative and not -0 and not NaN (sign set, magnitude in (0, inf]);
 * every other element is copied, so NaN payloads and -0 survive as in the
 * reference (whose bf16/f16 round trip through f32 also quiets a
 * signalling NaN: so does this). */

/* relu of 16 f32 lanes on the bits: +0 where negative (sign set,
 * magnitude in (0, inf]), else the lane itself. */
TARGET static AMP_ALWAYS_INLINE __m512i relu32(__m512i v)
{
    const __m512i mag = _mm512_and_si512(v, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 neg = _mm512_test_epi32_mask(v, _mm512_set1_epi32((int)0x80000000u)) &
                          _mm512_test_epi32_mask(mag, mag) & _mm512_cmple_epu32_mask(mag, _mm512_set1_epi32(0x7f800000));
    return _mm512_maskz_mov_epi32((__mmask16)~neg, v);
}

/* The same for 32 lanes of bf16 or f16, a signalling NaN quieted (the
 * reference's round trip through f32 does that). */
TARGET static AMP_ALWAYS_INLINE __m512i relu16(__m512i v, short inf, short quiet)
{
    const __m512i mag = _mm512_and_si512(v, _mm512_set1_epi16(0x7fff));
    const __mmask32 neg = _mm512_test_epi16_mask(v, _mm512_set1_epi16((short)0x8000)) &
                          _mm512_test_epi16_mask(mag, mag) & _mm512_cmple_epu16_mask(mag, _mm512_set1_epi16(inf));
    const __mmask32 nan = _mm512_cmpgt_epu16_mask(mag, _mm512_set1_epi16(inf));
    v = _mm512_mask_mov_epi16(v, nan, _mm512_or_si512(v, _mm512_set1_epi16(quiet)));
    return _mm512_maskz_mov_epi16((__mmask32)~neg, v);
}

/* Whole vectors unmasked, then one masked tail. */
TARGET static void relu_body(const void *c_, size_t begin, size_t end)
{
    const amp_elt_unary_ctx *c = c_;
    size_t i = begin;
    if (c->t == AMP_F32) {
        const uint32_t *x = c->x;
        uint32_t *y = c->y;
        for (; i + 16 <= end; i += 16)
            _mm512_storeu_si512(y + i, relu32(_mm512_loadu_si512(x + i)));
        if (i < end) {
            const __mmask16 m = tail_mask(end - i);
            _mm512_mask_storeu_epi32(y + i, m, relu32(_mm512_maskz_loadu_epi32(m, x + i)));
        }
        return;
    }
    {
        const uint16_t *x = c->x;
        uint16_t *y = c->y;
        const short inf = c->t == AMP_BF16 ? 0x7f80 : 0x7c00, quiet = c->t == AMP_BF16 ? 0x0040 : 0x0200;
        for (; i + 32 <= end; i += 32)
            _mm512_storeu_si512(y + i, relu16(_mm512_loadu_si512(x + i), inf, quiet));
        if (i < end) {
            const __mmask32 m = (__mmask32)((1u << (end - i)) - 1);
            _mm512_mask_storeu_epi16(y + i, m, relu16(_mm512_maskz_loadu_epi16(m, x + i), inf, quiet));
        }
    }
}

/* ---- add ---------------------------------------------------------------------- */

/* Per dtype (t a constant in each call below): whole vectors, then one
 * masked tail. */
TARGET static AMP_ALWAYS_INLINE void add_loop(amp_dtype t, const amp_elt_binary_ctx *c, size_t begin, size_t end)
{
    const size_t es = size_of_storage(t);
    const char *a = c->a, *b = c->b;
    char *y = c->y;
    size_t i = begin;
    for (; i + 16 <= end; i += 16)
        store16_all(t, y + i * es, add_first(load16_all(t, a + i * es), load16_all(t, b + i * es)));
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        store16(t, y + i * es, m, add_first(load16(t, a + i * es, m), load16(t, b + i * es, m)));
    }
}

/* ---- grad_accumulate: acc += (float)g, add_body's f32 sum of acc and the widened g */

TARGET static AMP_ALWAYS_INLINE void accumulate_loop(amp_dtype t, const amp_elt_binary_ctx *c, size_t begin,
                                                     size_t end)
{
    const char *g = c->b;
    float *acc = c->y;
    size_t i = begin;
    for (; i + 16 <= end; i += 16)
        _mm512_storeu_ps(acc + i, add_first(_mm512_loadu_ps(acc + i), load16_all(t, g + i * 2)));
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        _mm512_mask_storeu_ps(acc + i, m, add_first(_mm512_maskz_loadu_ps(m, acc + i), load16(t, g + i * 2, m)));
    }
}

/* ---- casts -------------------------------------------------------------------- */

TARGET static AMP_ALWAYS_INLINE void cast_loop(amp_dtype from, amp_dtype to, const amp_elt_cast_ctx *c, size_t begin,
                                               size_t end)
{
    const size_t fs = size_of_storage(from), ts = size_of_storage(to);
    const char *x = c->x;
    char *y = c->y;
    size_t i = begin;
    for (; i + 16 <= end; i += 16)
        store16_all(to, y + i * ts, load16_all(from, x + i * fs));
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        store16(to, y + i * ts, m, load16(from, x + i * fs, m));
    }
}

/* bf16 -> f32 as load16 reads it, 32 values at a time: a signalling NaN
 * quieted on the words (bit 6 set where the magnitude is over 0x7f80),
 * then each word made the top half of its f32 by one vpermt2w with zeros
 * (half the instructions of widening, shifting and fixing each 16). */
TARGET static void widen_bf16_loop(const amp_elt_cast_ctx *c, size_t begin, size_t end)
{
    const uint16_t *x = c->x;
    float *y = c->y;
    const __m512i zero = _mm512_setzero_si512();
    const __m512i first = _mm512_set_epi16(47, 0, 46, 0, 45, 0, 44, 0, 43, 0, 42, 0, 41, 0, 40, 0, 39, 0, 38, 0, 37,
                                           0, 36, 0, 35, 0, 34, 0, 33, 0, 32, 0);
    const __m512i second = _mm512_add_epi16(first, _mm512_set1_epi32(16 << 16));
    size_t i = begin;
    for (; i + 32 <= end; i += 32) {
        __m512i w = _mm512_loadu_si512(x + i);
        const __mmask32 nan = _mm512_cmpgt_epu16_mask(_mm512_and_si512(w, _mm512_set1_epi16(0x7fff)),
                                                      _mm512_set1_epi16(0x7f80));
        w = _mm512_mask_mov_epi16(w, nan, _mm512_or_si512(w, _mm512_set1_epi16(0x0040)));
        _mm512_storeu_si512(y + i, _mm512_permutex2var_epi16(zero, first, w));
        _mm512_storeu_si512(y + i + 16, _mm512_permutex2var_epi16(zero, second, w));
    }
    if (i < end)
        cast_loop(AMP_BF16, AMP_F32, c, i, end);
}

/* ---- batch_norm (running statistics) --------------------------------------------
 * Per channel the reference's scalars: rstd = 1 / sqrt(var + eps) in f32;
 * per element ((v - mean) * rstd) * weight + bias, each operation rounded
 * to f32, then the one rounding to t (bn16 over a plane's row: bn_row16,
 * x86/avx512_lanes.h). */

AMP_ELTWISE_BN_PLANES(TARGET, __m512, _mm512_set1_ps, bn_row16)

/* ---- max_pool, 2-d, dilation 1, no indices ----------------------------------------
 * Each input row of the window is widened to f32 into a buffer padded with
 * -inf on both sides (a -inf tap never wins the reference's comparison, so
 * padding it is the same as skipping it), then 16 outputs at a time (each
 * tap one vector load at stride 1, two and a vpermt2ps at stride 2, a
 * gather otherwise: the gathers were most of resnet18's pool) take
 * best = (v > best || isnan(v)) ? v : best over the taps in the
 * reference's order (rows, then columns): the same value, the same NaN. */


typedef struct {
    amp_dtype t;
    pool_geometry g;
    int64_t planes;
    const void *x;
    void *y;
} pool_ctx;

/* The update of the reference's scan: x wins when greater or NaN. */
TARGET static AMP_ALWAYS_INLINE __m512 pool_take(__m512 best, __m512 x)
{
    const __mmask16 take = _mm512_cmp_ps_mask(x, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(best, take, x);
}

/* Tap k of the 16 outputs at base (stride sw): rowbuf[base + k + i sw];
 * stride 1 and 2 as whole-vector loads (lanes past the row's outputs take
 * values never stored), others gathered. */
TARGET static AMP_ALWAYS_INLINE __m512 pool_tap(const float *base, int64_t k, int64_t sw, __mmask16 m, __m512i lane)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    if (sw == 1)
        return _mm512_loadu_ps(base + k);
    if (sw == 2)
        return _mm512_permutex2var_ps(_mm512_loadu_ps(base + k), even, _mm512_loadu_ps(base + k + 16));
    return _mm512_mask_i32gather_ps(_mm512_set1_ps(-INFINITY), m, lane, base + k, 4);
}

/* Vectors of a kernel's rows of row maxima (kh x nvec) the separable
 * pass keeps on the stack. */
#define POOL_RING_VECS 256

/* The same scan, separable: each input row's maximum over each window's
 * columns computed once (the scan over that row's taps, columns in
 * order), into a ring of the last kh rows, then each output row the scan
 * over its window's rows of those.  The rule (a greater value or a NaN
 * wins) makes the scan's result the last NaN in the order, or else the
 * first of the largest values; row by row, then over the rows, it finds
 * the same one.  Each input row is widened and scanned once instead of
 * once per window holding it. */
TARGET static void max_pool_separable(const pool_ctx *c, size_t begin, size_t end, float *rowbuf)
{
    const pool_geometry *g = &c->g;
    const size_t es = amp_dtype_size(c->t);
    const int64_t kh = g->kernel[1], kw = g->kernel[2], sh = g->stride[1], sw = g->stride[2];
    const int64_t ph = g->padding[1], pw = g->padding[2], in_h = g->in[1], in_w = g->in[2];
    const int64_t out_h = g->out[1], out_w = g->out[2], nvec = (out_w + 15) / 16;
    __m512 ring[POOL_RING_VECS];
    const __m512i lane = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)sw));
    for (size_t plane = begin; plane < end; plane++) {
        const char *xp = (const char *)c->x + plane * (size_t)(in_h * in_w) * es;
        char *yp = (char *)c->y + plane * (size_t)(out_h * out_w) * es;
        int64_t done = 0; /* input rows [0, done) have their maxima in the ring */
        for (int64_t oh = 0; oh < out_h; oh++) {
            int64_t r0 = oh * sh - ph, r1 = r0 + kh;
            if (r0 < 0)
                r0 = 0;
            if (r1 > in_h)
                r1 = in_h;
            if (done < r0)
                done = r0;
            for (; done < r1; done++) {
                const char *xr = xp + (size_t)(done * in_w) * es;
                __m512 *rm = ring + (done % kh) * nvec;
                for (int64_t q = 0; q < in_w; q += 16) {
                    const __mmask16 m = tail_mask((size_t)(in_w - q));
                    /* the input streams from memory: fetch four rows ahead
                     * (the address, past the plane at its end, as an
                     * integer; a prefetch never faults) */
                    _mm_prefetch((const char *)((uintptr_t)xr + (uintptr_t)((4 * in_w + q) * (int64_t)es)), _MM_HINT_T0);
                    _mm512_mask_storeu_ps(rowbuf + pw + q, m, load16(c->t, xr + (size_t)q * es, m));
                }
                for (int64_t v = 0; v < nvec; v++) {
                    const __mmask16 m = tail_mask((size_t)(out_w - v * 16));
                    const float *base = rowbuf + v * 16 * sw;
                    __m512 b = _mm512_set1_ps(-INFINITY);
                    for (int64_t k = 0; k < kw; k++)
                        b = pool_take(b, pool_tap(base, k, sw, m, lane));
                    rm[v] = b;
                }
            }
            for (int64_t v = 0; v < nvec; v++) {
                __m512 b = _mm512_set1_ps(-INFINITY);
                for (int64_t r = r0; r < r1; r++)
                    b = pool_take(b, ring[(r % kh) * nvec + v]);
                store16(c->t, yp + (size_t)(oh * out_w + v * 16) * es, tail_mask((size_t)(out_w - v * 16)), b);
            }
        }
    }
}

TARGET static void max_pool_body(const void *c_, size_t begin, size_t end)
{
    const pool_ctx *c = c_;
    const pool_geometry *g = &c->g;
    const size_t es = amp_dtype_size(c->t);
    const int64_t kh = g->kernel[1], kw = g->kernel[2], sh = g->stride[1], sw = g->stride[2];
    const int64_t ph = g->padding[1], pw = g->padding[2], in_h = g->in[1], in_w = g->in[2];
    const int64_t out_h = g->out[1], out_w = g->out[2], nvec = (out_w + 15) / 16;
    /* Input column q of the row being read is at rowbuf[pw + q]; everything
     * else stays -inf.  max_pool_fast checked that the taps fit. */
    /* (+ 64: stride 1 and 2 read whole vectors, past the last output's taps) */
    float rowbuf[AMP_POOL_ROW_MAX + 64] __attribute__((aligned(64)));
    __m512 best[AMP_POOL_ROW_MAX / 16];
    const __m512i lane = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)sw));
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (int64_t q = 0; q < AMP_POOL_ROW_MAX + 64; q++)
        rowbuf[q] = -INFINITY;
    if (kh * nvec <= POOL_RING_VECS) {
        max_pool_separable(c, begin, end, rowbuf);
        return;
    }
    for (size_t plane = begin; plane < end; plane++) {
        const char *xp = (const char *)c->x + plane * (size_t)(in_h * in_w) * es;
        char *yp = (char *)c->y + plane * (size_t)(out_h * out_w) * es;
        for (int64_t oh = 0; oh < out_h; oh++) {
            /* The reference's window: rows [oh sh - ph, + kh), cut to the input. */
            int64_t r0 = oh * sh - ph, r1 = r0 + kh;
            if (r0 < 0)
                r0 = 0;
            if (r1 > in_h)
                r1 = in_h;
            for (int64_t v = 0; v < nvec; v++)
                best[v] = _mm512_set1_ps(-INFINITY);
            for (int64_t r = r0; r < r1; r++) {
                const char *xr = xp + (size_t)(r * in_w) * es;
                for (int64_t q = 0; q < in_w; q += 16) {
                    __mmask16 m = tail_mask((size_t)(in_w - q));
                    _mm512_mask_storeu_ps(rowbuf + pw + q, m, load16(c->t, xr + (size_t)q * es, m));
                }
                for (int64_t v = 0; v < nvec; v++) {
                    /* lanes past the row's last output read nothing */
                    const __mmask16 m = tail_mask((size_t)(out_w - v * 16));
                    const float *base = rowbuf + v * 16 * sw;
                    __m512 b = best[v];
                    for (int64_t k = 0; k < kw; k++) {
                        /* tap k of the 16 outputs: rowbuf[base + k + i sw]; stride 1
                         * and 2 as whole-vector loads (lanes past the row's outputs
                         * take values never stored), others gathered */
                        __m512 x;
                        if (sw == 1)
                            x = _mm512_loadu_ps(base + k);
                        else if (sw == 2)
                            x = _mm512_permutex2var_ps(_mm512_loadu_ps(base + k), even, _mm512_loadu_ps(base + k + 16));
                        else
                            x = _mm512_mask_i32gather_ps(_mm512_set1_ps(-INFINITY), m, lane, base + k, 4);
                        __mmask16 take =
                            _mm512_cmp_ps_mask(x, b, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
                        b = _mm512_mask_mov_ps(b, take, x);
                    }
                    best[v] = b;
                }
            }
            for (int64_t v = 0; v < nvec; v++)
                store16(c->t, yp + (size_t)(oh * out_w + v * 16) * es, tail_mask((size_t)(out_w - v * 16)), best[v]);
        }
    }
}

static void max_pool_fast(amp_dtype t, const amp_pool_desc *d, const void *x, void *y, int64_t *indices)
{
    pool_ctx c;
    c.g = pool_geometry_of(d);
    /* rowbuf and best[] bounds: every tap, and the input row at its
     * offset, inside the buffer (a wider pool goes to the reference) */
    if (!amp_max_pool_simple(d, indices, &c.g, 1, 0)) {
        amp_ref_max_pool_of(t, d, x, y, indices);
        return;
    }
    c.t = t;
    c.planes = d->planes;
    c.x = x;
    c.y = y;
    if (d->planes <= 0 || c.g.out_plane <= 0)
        return;
    amp_run_chunked((size_t)d->planes, (size_t)c.g.in_plane, max_pool_body, &c);
}

/* ---- max_pool_backward ---------------------------------------------------------
 * dx of max_pool: each output's dy added to the input element the forward
 * chose (strictly greater or NaN wins, scanning the window as the
 * forward does).  The reference walks every output once per 2048-element
 * chunk of the input plane; here each output's choice is found once per
 * plane and added into an f32 plane of sums, in the same output order, so
 * every sum is the reference's, bit for bit.  Planes run on the pool, each
 * slot with its own sums (malloc'ed per call). */

typedef struct {
    amp_dtype t;
    pool_geometry g;
    const void *x, *dy;
    void *dx;
    float *sums; /* in_plane floats per pool slot */
} pool_bw_ctx;

static void max_pool_backward_task(void *ctx, int64_t plane, int slot)
{
    const pool_bw_ctx *c = ctx;
    const pool_geometry *g = &c->g;
    const size_t es = amp_dtype_size(c->t);
    const char *x = (const char *)c->x + (size_t)(plane * g->in_plane) * es;
    const char *dy = (const char *)c->dy + (size_t)(plane * g->out_plane) * es;
    float *sum = c->sums + slot * g->in_plane;
    int64_t op = 0;
    for (int64_t i = 0; i < g->in_plane; i++)
        sum[i] = 0.0f;
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1++)
            for (int64_t o2 = 0; o2 < g->out[2]; o2++, op++) {
                const window w0 = max_window(g, 0, o0), w1 = max_window(g, 1, o1), w2 = max_window(g, 2, o2);
                float best = -INFINITY;
                int64_t best_index = (w0.start * g->in[1] + w1.start) * g->in[2] + w2.start;
                for (int64_t a = w0.start; a < w0.end; a += g->dilation[0])
                    for (int64_t b = w1.start; b < w1.end; b += g->dilation[1])
                        for (int64_t e = w2.start; e < w2.end; e += g->dilation[2]) {
                            const int64_t index = (a * g->in[1] + b) * g->in[2] + e;
                            const float v = amp_ld(c->t, x, index);
                            if (v > best || isnan(v)) {
                                best = v;
                                best_index = index;
                            }
                        }
                if (best_index >= 0 && best_index < g->in_plane)
                    sum[best_index] += amp_ld(c->t, dy, op);
            }
    for (int64_t i = 0; i < g->in_plane; i++)
        amp_st(c->t, (char *)c->dx + (size_t)(plane * g->in_plane) * es, i, sum[i]);
}

void amp_avx512_max_pool_backward_any(amp_dtype t, const amp_pool_desc *d, const void *x, const void *dy, void *dx)
{
    pool_bw_ctx c;
    int threads = amp_get_threads();
    c.t = t;
    c.g = pool_geometry_of(d);
    c.x = x;
    c.dy = dy;
    c.dx = dx;
    if (d->planes <= 0 || c.g.in_plane <= 0)
        return;
    c.sums = amp_scratch_alloc((size_t)(AMP_MAX_THREADS * c.g.in_plane) * sizeof(float));
    if (c.sums == NULL) { /* the reference needs no memory */
        switch (t) {
        case AMP_F32: amp_ref_max_pool_backward_f32(d, x, dy, dx); break;
        case AMP_BF16: amp_ref_max_pool_backward_bf16(d, x, dy, dx); break;
        default: amp_ref_max_pool_backward_f16(d, x, dy, dx); break;
        }
        return;
    }
    if ((size_t)(d->planes * c.g.in_plane) < AMP_PARALLEL_MIN)
        threads = 1;
    amp_parallel_run(threads, d->planes, max_pool_backward_task, &c);
    amp_scratch_free(c.sums);
}

/* ---- conv_ex's fused post-ops ------------------------------------------------------
 * A tile's output row segments (amprt_internal.h's post contract):
 * batch_norm as bn_body above (bn16), add as add_body (add_first), relu as
 * the reference's v < 0 ? 0 : v, clamp as x86/avx512_clamp.c's,
 * each step's result rounded to t in the register (round16: the value a
 * store16 and a load16 give) before the next step reads it. */

/* v rounded to dtype t and widened back to f32, as store16 then load16. */
TARGET static inline __m512 round16(amp_dtype t, __m512 v)
{
    switch (t) {
    case AMP_BF16: {
        /* store16's rounding, the 16 kept bits put back on top; a NaN keeps
         * its top payload with the quiet bit set, as amp_f32_to_bf16 does */
        const __m512i u = _mm512_castps_si512(v);
        const __m512i hi = _mm512_srli_epi32(u, 16);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                                       _mm512_and_si512(hi, _mm512_set1_epi32(1))),
                                      16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                      _mm512_set1_epi32(0x7f800000));
        r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
        return _mm512_castsi512_ps(_mm512_slli_epi32(r, 16));
    }
    case AMP_F16: return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    default: return v;
    }
}

/* round16(AMP_BF16, v) for code compiled with AVX512-BF16: vcvtneps2bf16
 * (round16_bf16, with its integer fallback for subnormal lanes) widened
 * back, three instructions in place of round16's dozen. */
AVX512BF16_TARGET static inline __m512 round16_bf16_native(__m512 v)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(round16_bf16(v)), 16));
}

/* The post's fast pass, for the vectors without a NaN lane: its steps
 * leave NaNs alone (a NaN lane at the start, or made along the way, is a
 * NaN at the end: the steps keep it), and a vector that ends with one is
 * done again by the careful pass (post16 with careful set), whose steps
 * pick the NaN each separate kernel returns.  So the fast pass's loads
 * need not quiet a signalling bf16 NaN, nor its roundings handle NaNs,
 * nor batch_norm and add test for them. */

/* 16 values of dtype t at p as f32, exactly but for NaN payloads. */
TARGET static inline __m512 load16_raw(amp_dtype t, const void *p)
{
    if (t == AMP_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
    return load16_all(t, p);
}

/* round16 but for NaN lanes. */
TARGET static inline __m512 round16_finite(amp_dtype t, __m512 v)
{
    if (t != AMP_BF16)
        return round16(t, v);
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd);
    return _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32(0xffff), r));
}

/* bn16 but for NaN lanes: the same operations in the same order. */
TARGET static AMP_ALWAYS_INLINE __m512 bn16_finite(__m512 v, __m512 mean, __m512 rstd, __m512 w, __m512 b, int has_w,
                                                   int has_b)
{
    __m512 r = _mm512_mul_ps(_mm512_sub_ps(v, mean), rstd);
    if (has_w)
        r = _mm512_mul_ps(r, w);
    if (has_b)
        r = _mm512_add_ps(r, b);
    return r;
}

/* A step's rounding in either pass */
#define POST_ROUND16(t, v, native, careful)                                                        \
    ((native) && (t) == AMP_BF16 ? round16_bf16_native(v) : (careful) ? round16(t, v) : round16_finite(t, v))

/* One row's post-ops on 16 values v (careful: loaded as load16 reads
 * them, NaNs as the separate kernels make them; else the fast pass
 * above); the clamp as the clamp kernel's vmaxps(lo, v) and vminps(hi,
 * .) (a NaN v kept, a NaN bound passed over), rounded to t unless its
 * bounds are values of t. */
TARGET static AMP_ALWAYS_INLINE __m512 post16(amp_dtype t, __m512 v, __m512 vmean, __m512 vrstd, __m512 vw,
                                              __m512 vb, int bn, int bn_weight, int bn_bias, int relu,
                                              __m512 residual, int has_residual, int native, int clamp,
                                              __m512 vlo, __m512 vhi, int careful)
{
    if (bn)
        v = POST_ROUND16(t,
                         careful ? bn16(v, vmean, vrstd, vw, vb, bn_weight, bn_bias)
                                 : bn16_finite(v, vmean, vrstd, vw, vb, bn_weight, bn_bias),
                         native, careful);
    if (has_residual)
        v = POST_ROUND16(t, careful ? add_first(v, residual) : _mm512_add_ps(v, residual), native, careful);
    if (relu) /* false for NaN and -0: both kept */
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_setzero_ps());
    if (clamp != AMP_POST_CLAMP_NONE) {
        v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, v));
        if (clamp == AMP_POST_CLAMP_ROUNDED)
            v = POST_ROUND16(t, v, native, careful);
    }
    return v;
}

/* v's 16 lanes stored; in bf16 v is a bf16 value (loaded, or round16ed;
 * relu keeps that), so its top half is it. */
TARGET static AMP_ALWAYS_INLINE void post_store(amp_dtype t, char *p, __mmask16 m, __m512 v)
{
    if (t == AMP_BF16)
        store_words16(p, m, _mm512_srli_epi32(_mm512_castps_si512(v), 16));
    else
        store16(t, p, m, v);
}

/* One row: whole vectors unmasked (the fast pass, then the careful one
 * for a vector with a NaN lane), then the tail (careful); the flags
 * constants in the common cases (conv_post_row below). */
TARGET static AMP_ALWAYS_INLINE void conv_post_row(amp_dtype t, int64_t n, const amp_conv_post_row *p, const char *rr,
                                                   const char *sr, char *yr, int bn, int bn_weight, int bn_bias,
                                                   int relu, int has_residual, int native, int clamp)
{
    const size_t es = size_of_storage(t);
    const __m512 vmean = _mm512_set1_ps(p->mean), vrstd = _mm512_set1_ps(p->rstd);
    const __m512 vw = _mm512_set1_ps(p->weight), vb = _mm512_set1_ps(p->bias);
    const __m512 vlo = _mm512_set1_ps(p->clamp_lo), vhi = _mm512_set1_ps(p->clamp_hi);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const char *sj = sr + (size_t)j * es, *rj = has_residual ? rr + (size_t)j * es : NULL;
        __m512 v = post16(t, load16_raw(t, sj), vmean, vrstd, vw, vb, bn, bn_weight, bn_bias, relu,
                          has_residual ? load16_raw(t, rj) : _mm512_setzero_ps(), has_residual, native, clamp, vlo,
                          vhi, 0);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q))
            v = post16(t, load16_all(t, sj), vmean, vrstd, vw, vb, bn, bn_weight, bn_bias, relu,
                       has_residual ? load16_all(t, rj) : _mm512_setzero_ps(), has_residual, native, clamp, vlo, vhi,
                       1);
        post_store(t, yr + (size_t)j * es, (__mmask16)0xffff, v);
    }
    if (j < n) {
        const __mmask16 m = tail_mask((size_t)(n - j));
        const __m512 r = has_residual ? load16(t, rr + (size_t)j * es, m) : _mm512_setzero_ps();
        post_store(t, yr + (size_t)j * es, m,
                   post16(t, load16(t, sr + (size_t)j * es, m), vmean, vrstd, vw, vb, bn, bn_weight, bn_bias, relu, r,
                          has_residual, native, clamp, vlo, vhi, 1));
    }
}

/* Row by row; a network's usual rows (batch_norm with weight and bias,
 * relu, with or without the residual) get loops of their own. */
TARGET static AMP_ALWAYS_INLINE void conv_post_body(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr,
                                                    const void *residual, const void *src, void *y, int64_t ld,
                                                    int native)
{
    const size_t es = size_of_storage(t);
    for (int64_t r = 0; r < rows; r++) {
        const amp_conv_post_row *p = &pr[r];
        char *yr = (char *)y + (size_t)(r * ld) * es;
        const char *sr = (const char *)src + (size_t)(r * ld) * es;
        const char *rr = residual != NULL ? (const char *)residual + (size_t)(r * ld) * es : NULL;
        const int usual = p->bn && p->bn_weight && p->bn_bias, clamp = p->clamp;
        if (usual && p->relu && rr == NULL && clamp == AMP_POST_CLAMP_NONE)
            conv_post_row(t, n, p, rr, sr, yr, 1, 1, 1, 1, 0, native, AMP_POST_CLAMP_NONE);
        else if (usual && p->relu && clamp == AMP_POST_CLAMP_NONE)
            conv_post_row(t, n, p, rr, sr, yr, 1, 1, 1, 1, 1, native, AMP_POST_CLAMP_NONE);
        else if (usual && !p->relu && rr == NULL && clamp == AMP_POST_CLAMP_NONE)
            conv_post_row(t, n, p, rr, sr, yr, 1, 1, 1, 0, 0, native, AMP_POST_CLAMP_NONE);
        else if (usual && !p->relu && rr == NULL && clamp == AMP_POST_CLAMP_EXACT) /* ReLU6 after batch_norm */
            conv_post_row(t, n, p, rr, sr, yr, 1, 1, 1, 0, 0, native, AMP_POST_CLAMP_EXACT);
        else
            conv_post_row(t, n, p, rr, sr, yr, p->bn, p->bn_weight, p->bn_bias, p->relu, rr != NULL, native,
                          clamp);
    }
}

TARGET void amp_avx512_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p,
                                 const void *residual, const void *src, void *y, int64_t ld)
{
    switch (t) {
    case AMP_F32: conv_post_body(AMP_F32, rows, n, p, residual, src, y, ld, 0); break;
    case AMP_BF16: conv_post_body(AMP_BF16, rows, n, p, residual, src, y, ld, 0); break;
    case AMP_F16: conv_post_body(AMP_F16, rows, n, p, residual, src, y, ld, 0); break;
    default: break; /* frame/conv.c runs conv_ex on f32, bf16 and f16 only */
    }
}

/* The avx512bf16 set's: bf16 rows rounded by vcvtneps2bf16 (the same
 * bits, one instruction in place of round16's integer sequence). */
AVX512BF16_TARGET void amp_avx512bf16_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p,
                                                const void *residual, const void *src, void *y, int64_t ld)
{
    if (t == AMP_BF16)
        conv_post_body(AMP_BF16, rows, n, p, residual, src, y, ld, 1);
    else
        amp_avx512_conv_post(t, rows, n, p, residual, src, y, ld);
}

/* ---- add_relu_backward: add's a + b (add_first, rounded to t as its
 * store rounds, round16), then relu_backward through the relu whose output
 * y is (relu_bw32 on y widened: the same lanes pass as relu_backward's
 * test on y in t); the rounded sum is representable in t, so the store
 * is exact.  A sum of two gradients of a relu's output: one pass instead
 * of add's and relu_backward's, with no buffer between them. */

TARGET static AMP_ALWAYS_INLINE void add_relu_bw_loop(amp_dtype t, const amp_elt_binary_ctx *c, size_t begin,
                                                      size_t end)
{
    const size_t es = size_of_storage(t);
    const char *y = c->y0, *a = c->a, *b = c->b;
    char *dx = c->y;
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        const __m512 s = round16(t, add_first(load16_all(t, a + i * es), load16_all(t, b + i * es)));
        store16_all(t, dx + i * es,
                    _mm512_castsi512_ps(relu_bw32(_mm512_castps_si512(load16_all(t, y + i * es)), _mm512_castps_si512(s))));
    }
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        const __m512 s = round16(t, add_first(load16(t, a + i * es, m), load16(t, b + i * es, m)));
        store16(t, dx + i * es, m,
                _mm512_castsi512_ps(relu_bw32(_mm512_castps_si512(load16(t, y + i * es, m)), _mm512_castps_si512(s))));
    }
}

/* ---- adaptive_avg_pool to one position per plane -------------------------------
 * A global average pool (a classifier's head; resnet18's 8 x 512 planes of
 * 7 x 7 took 0.2 ms in the reference's per-plane chains): 16 planes at a
 * time, one per lane, each lane's sum the reference's own chain (from 0,
 * the plane's elements in memory order, in f32), then divided by each
 * dim's size in turn and rounded once.  Lane l gathers element i of plane
 * l; a 2-byte element is the low half of a 32-bit gather, which reads two
 * bytes past it, so the last group (which holds the tensor's last element)
 * runs the same chain in scalar code. */
TARGET static void global_avg_pool(amp_dtype t, int nspatial, int64_t planes, const int64_t *in_size, int64_t in_plane,
                                   const void *x, void *y)
{
    const size_t es = size_of_storage(t);
    const __m512i lane = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)in_plane));
    int64_t p = 0;
    for (; p + 16 < planes; p += 16) {
        const char *base = (const char *)x + (size_t)(p * in_plane) * es;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < in_plane; i++) {
            const __m512i at = _mm512_add_epi32(lane, _mm512_set1_epi32((int)i));
            __m512 v;
            if (t == AMP_F32) {
                v = _mm512_i32gather_ps(at, base, 4);
            } else {
                const __m512i w = _mm512_i32gather_epi32(at, base, 2);
                v = t == AMP_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(w, 16))
                                  : _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w));
            }
            acc = _mm512_add_ps(acc, v);
        }
        for (int d = 0; d < nspatial; d++)
            acc = _mm512_div_ps(acc, _mm512_set1_ps((float)in_size[d]));
        store16(t, (char *)y + (size_t)p * es, (__mmask16)0xffff, acc);
    }
    amp_global_avg_pool_planes(t, nspatial, p, planes, in_size, in_plane, x, y);
}

/* ---- table entries ------------------------------------------------------------ */

AMP_ELTWISE_BODIES(TARGET, widen_bf16_loop)
AMP_ELTWISE_ENTRIES(amp_run_chunked)

/* The avx512bf16 set's f32 -> bf16 cast: store16_bf16's vcvtneps2bf16
 * (the same bits; a training step casts every weight each step). */
AVX512BF16_TARGET static void cast_f32_bf16_native_body(const void *c_, size_t begin, size_t end)
{
    const amp_elt_cast_ctx *c = c_;
    const float *x = c->x;
    uint16_t *y = c->y;
    size_t i = begin;
    /* 64 at a time with one subnormal test (a test and branch per 16
     * values cost about as much as the conversion) */
    for (; i + 64 <= end; i += 64) {
        const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
        const __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
        if (subnormal_lanes(v0) | subnormal_lanes(v1) | subnormal_lanes(v2) | subnormal_lanes(v3)) {
            store16_bf16(y + i, (__mmask16)0xffff, v0);
            store16_bf16(y + i + 16, (__mmask16)0xffff, v1);
            store16_bf16(y + i + 32, (__mmask16)0xffff, v2);
            store16_bf16(y + i + 48, (__mmask16)0xffff, v3);
            continue;
        }
        _mm256_storeu_si256((__m256i *)(y + i), (__m256i)_mm512_cvtneps_pbh(v0));
        _mm256_storeu_si256((__m256i *)(y + i + 16), (__m256i)_mm512_cvtneps_pbh(v1));
        _mm256_storeu_si256((__m256i *)(y + i + 32), (__m256i)_mm512_cvtneps_pbh(v2));
        _mm256_storeu_si256((__m256i *)(y + i + 48), (__m256i)_mm512_cvtneps_pbh(v3));
    }
    for (; i + 16 <= end; i += 16)
        store16_bf16(y + i, (__mmask16)0xffff, _mm512_loadu_ps(x + i));
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        store16_bf16(y + i, m, _mm512_maskz_loadu_ps(m, x + i));
    }
}

static void cast_f32_bf16_native(size_t n, const float *x, amp_bf16 *y)
{
    amp_elt_cast_ctx c = { AMP_F32, AMP_BF16, x, y };
    amp_run_chunked(n, 1, cast_f32_bf16_native_body, &c);
}

/* This file's kernels of the AVX-512 sets: X(kernel, implementation).
 * (max_pool_backward is x86/avx512_backward.c's, which calls
 * amp_avx512_max_pool_backward_any for the geometries it does not take.) */
#define BF16_ELTWISE_KERNELS(X) X(cast_f32_bf16, cast_f32_bf16_native)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
AMP_ELTWISE_KERNELS(DEFINE)
#undef DEFINE
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512bf16, name, impl)
BF16_ELTWISE_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512bf16_fill_eltwise(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512bf16, name);
    BF16_ELTWISE_KERNELS(INSTALL)
#undef INSTALL
}

void amp_isa_avx512_fill_eltwise(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    AMP_ELTWISE_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
