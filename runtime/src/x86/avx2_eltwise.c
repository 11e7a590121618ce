/*
 * avx2_eltwise.c - the AVX2 (+ FMA + F16C) kernels of the "avx2" set
 * between a network's products: relu, add, add_relu_backward,
 * grad_accumulate, batch_norm (running statistics), the f32 <-> bf16/f16
 * casts, 2-d max_pool and the global adaptive_avg_pool, for f32, bf16 and
 * f16 storage.  bf16 and f16 storage compute in f32: each vector of 8 is
 * widened (x86/avx2_store.h), computed and rounded once.
 *
 * Each computes exactly what its reference kernel computes, element by
 * element (the same f32 operations in the same order, no contraction into
 * FMA, the same one rounding to the storage dtype), so tests compare them
 * bit for bit (tests/runtime/test_fasteltwise.c); of two NaN operands the
 * left one wins, as in x86/avx512_eltwise.c.  Large arrays are split into
 * chunks on the thread pool; the result does not depend on the split.
 * The contexts, per-dtype bodies, batch_norm's planes and the entries are
 * frame/eltwise_form.h's; this file holds the vector loops.
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill_kernels after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "ref/ref_window.h"
#include "frame/pool_form.h"
#include "frame/eltwise_form.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* ---- relu: v < 0 ? 0 : v on the stored bits (+0 where the sign is set
 * and the magnitude is in (0, inf]; NaN payloads and -0 kept, a bf16/f16
 * signalling NaN quieted as the reference's round trip through f32 does) */

TARGET static AMP_ALWAYS_INLINE __m256i relu32(__m256i v)
{
    const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi32(0x7fffffff));
    const __m256i neg = _mm256_andnot_si256(
        _mm256_or_si256(_mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000)), _mm256_cmpeq_epi32(mag, _mm256_setzero_si256())),
        _mm256_cmpgt_epi32(_mm256_setzero_si256(), v));
    return _mm256_andnot_si256(neg, v);
}

TARGET static AMP_ALWAYS_INLINE __m256i relu16(__m256i v, short inf, short quiet)
{
    const __m256i vinf = _mm256_set1_epi16(inf);
    const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi16(0x7fff));
    const __m256i nan = _mm256_cmpgt_epi16(mag, vinf);
    const __m256i neg = _mm256_andnot_si256(_mm256_or_si256(nan, _mm256_cmpeq_epi16(mag, _mm256_setzero_si256())),
                                            _mm256_cmpgt_epi16(_mm256_setzero_si256(), v));
    v = _mm256_or_si256(v, _mm256_and_si256(nan, _mm256_set1_epi16(quiet)));
    return _mm256_andnot_si256(neg, v);
}

TARGET static void relu_body(const void *c_, size_t begin, size_t end)
{
    const amp_elt_unary_ctx *c = c_;
    size_t i = begin;
    if (c->t == AMP_F32) {
        const uint32_t *x = c->x;
        uint32_t *y = c->y;
        for (; i + 8 <= end; i += 8)
            _mm256_storeu_si256((__m256i *)(y + i), relu32(_mm256_loadu_si256((const __m256i *)(x + i))));
        if (i < end) {
            uint32_t buf[8] __attribute__((aligned(32))) = { 0 };
            memcpy(buf, x + i, (end - i) * 4);
            _mm256_store_si256((__m256i *)buf, relu32(_mm256_load_si256((const __m256i *)buf)));
            memcpy(y + i, buf, (end - i) * 4);
        }
        return;
    }
    {
        const uint16_t *x = c->x;
        uint16_t *y = c->y;
        const short inf = c->t == AMP_BF16 ? 0x7f80 : 0x7c00, quiet = c->t == AMP_BF16 ? 0x0040 : 0x0200;
        for (; i + 16 <= end; i += 16)
            _mm256_storeu_si256((__m256i *)(y + i), relu16(_mm256_loadu_si256((const __m256i *)(x + i)), inf, quiet));
        if (i < end) {
            uint16_t buf[16] __attribute__((aligned(32))) = { 0 };
            memcpy(buf, x + i, (end - i) * 2);
            _mm256_store_si256((__m256i *)buf, relu16(_mm256_load_si256((const __m256i *)buf), inf, quiet));
            memcpy(y + i, buf, (end - i) * 2);
        }
    }
}

/* ---- add, grad_accumulate (acc += (float)g) and add_relu_backward ------------- */

TARGET static AMP_ALWAYS_INLINE void add_loop(amp_dtype t, const amp_elt_binary_ctx *c, size_t begin, size_t end)
{
    const size_t es = avx2_size_of(t);
    const char *a = c->a, *b = c->b;
    char *y = c->y;
    size_t i = begin;
    for (; t == AMP_BF16 && i + 16 <= end; i += 16) {
        __m256 ae, ao, be, bo;
        avx2_load16_bf16(a + i * es, &ae, &ao);
        avx2_load16_bf16(b + i * es, &be, &bo);
        avx2_store16_bf16(y + i * es, avx2_add_first(ae, be), avx2_add_first(ao, bo));
    }
    for (; i + 8 <= end; i += 8)
        avx2_store8(t, y + i * es, avx2_add_first(avx2_load8(t, a + i * es), avx2_load8(t, b + i * es)));
    if (i < end)
        avx2_store8_n(t, y + i * es, end - i,
                      avx2_add_first(avx2_load8_n(t, a + i * es, end - i), avx2_load8_n(t, b + i * es, end - i)));
}

/* a: the f32 accumulator (also y), b: the bf16 or f16 gradient */
TARGET static AMP_ALWAYS_INLINE void accumulate_loop(amp_dtype t, const amp_elt_binary_ctx *c, size_t begin, size_t end)
{
    const char *g = c->b;
    float *acc = c->y;
    size_t i = begin;
    for (; i + 8 <= end; i += 8)
        _mm256_storeu_ps(acc + i, avx2_add_first(_mm256_loadu_ps(acc + i), avx2_load8(t, g + i * 2)));
    if (i < end)
        avx2_store8_n(AMP_F32, acc + i, end - i,
                      avx2_add_first(avx2_load8_n(AMP_F32, acc + i, end - i), avx2_load8_n(t, g + i * 2, end - i)));
}

/* add's sum rounded to t, then relu_backward through the relu whose
 * output is y0 (avx2_relu_bw32 on y0 widened: the same lanes pass as the
 * test on y0 in t); the rounded sum is representable in t, so the store
 * is exact. */
TARGET static AMP_ALWAYS_INLINE __m256 add_relu_bw8(amp_dtype t, __m256 y0, __m256 a, __m256 b)
{
    const __m256 s = avx2_round8(t, avx2_add_first(a, b));
    return _mm256_castsi256_ps(avx2_relu_bw32(_mm256_castps_si256(y0), _mm256_castps_si256(s)));
}

TARGET static AMP_ALWAYS_INLINE void add_relu_bw_loop(amp_dtype t, const amp_elt_binary_ctx *c, size_t begin, size_t end)
{
    const size_t es = avx2_size_of(t);
    const char *y0 = c->y0, *a = c->a, *b = c->b;
    char *dx = c->y;
    size_t i = begin;
    for (; i + 8 <= end; i += 8)
        avx2_store8(t, dx + i * es,
                    add_relu_bw8(t, avx2_load8(t, y0 + i * es), avx2_load8(t, a + i * es), avx2_load8(t, b + i * es)));
    if (i < end) {
        const size_t n = end - i;
        avx2_store8_n(t, dx + i * es, n,
                      add_relu_bw8(t, avx2_load8_n(t, y0 + i * es, n), avx2_load8_n(t, a + i * es, n),
                                   avx2_load8_n(t, b + i * es, n)));
    }
}

/* ---- casts: f32 <-> bf16 by shifts (nearest even, NaN quieted), f32 <-> f16 by F16C */

TARGET static AMP_ALWAYS_INLINE void cast_loop(amp_dtype from, amp_dtype to, const amp_elt_cast_ctx *c, size_t begin,
                                               size_t end)
{
    const size_t fs = avx2_size_of(from), ts = avx2_size_of(to);
    const char *x = c->x;
    char *y = c->y;
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        const __m256 v0 = avx2_load8_quiet(from, x + i * fs), v1 = avx2_load8_quiet(from, x + (i + 8) * fs);
        if (to == AMP_BF16) /* two vectors' words packed by one vpackusdw */
            _mm256_storeu_si256((__m256i *)(y + i * ts),
                                _mm256_permute4x64_epi64(_mm256_packus_epi32(avx2_bf16_words_of(v0), avx2_bf16_words_of(v1)),
                                                         0xd8));
        else {
            avx2_store8(to, y + i * ts, v0);
            avx2_store8(to, y + (i + 8) * ts, v1);
        }
    }
    for (; i + 8 <= end; i += 8)
        avx2_store8(to, y + i * ts, avx2_load8_quiet(from, x + i * fs));
    if (i < end) {
        const __m256 v = avx2_load8_n(from, x + i * fs, end - i);
        avx2_store8_n(to, y + i * ts, end - i,
                      from == AMP_BF16 ? avx2_bf16_bits_to_f32(_mm256_castps_si256(v)) : v);
    }
}

/* ---- batch_norm (running statistics): per channel rstd = 1 / sqrt(var +
 * eps) in f32, per element ((v - mean) * rstd) * weight + bias, each
 * operation rounded to f32, each step's NaN operand on the left winning
 * (avx2_bn8 over a plane's row: avx2_bn_row, x86/avx2_store.h). */

AMP_ELTWISE_BN_PLANES(TARGET, __m256, _mm256_set1_ps, avx2_bn_row)

/* ---- max_pool, 2-d, dilation 1, no indices, separable --------------------------
 * As x86/avx512_eltwise.c's max_pool_separable, 8 outputs a vector: each
 * input row widened to f32 into a buffer padded with -inf (a -inf tap
 * never wins, so padding it is skipping it), each row's maximum over each
 * window's columns computed once into a ring of the last kh rows, then
 * each output row the scan over its window's rows of those; the scan is
 * the reference's (best = v > best || isnan(v) ? v : best), which makes
 * the result the last NaN in the order, else the first largest value,
 * found the same way row by row.  Pools whose ring would not fit, or
 * whose rows the buffer does not hold, go to the reference. */

#define POOL_RING_VECS 512

typedef struct {
    amp_dtype t;
    pool_geometry g;
    const void *x;
    void *y;
} pool_ctx;

TARGET static AMP_ALWAYS_INLINE __m256 pool_take(__m256 best, __m256 x)
{
    return _mm256_blendv_ps(best, x, _mm256_or_ps(_mm256_cmp_ps(x, best, _CMP_GT_OQ), avx2_isnan(x)));
}

/* rowbuf[base + k + i sw] for the 8 lanes i: loads at stride 1 and 2
 * (lanes past the row's outputs take values never stored), a gather else. */
TARGET static AMP_ALWAYS_INLINE __m256 pool_tap(const float *base, int64_t k, int64_t sw, __m256i lane)
{
    if (sw == 1)
        return _mm256_loadu_ps(base + k);
    if (sw == 2) {
        const __m256 a = _mm256_loadu_ps(base + k), b = _mm256_loadu_ps(base + k + 8);
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    }
    return _mm256_i32gather_ps(base + k, lane, 4);
}

TARGET static void max_pool_body(const void *c_, size_t begin, size_t end)
{
    const pool_ctx *c = c_;
    const pool_geometry *g = &c->g;
    const amp_dtype t = c->t;
    const size_t es = avx2_size_of(t);
    const int64_t kh = g->kernel[1], kw = g->kernel[2], sh = g->stride[1], sw = g->stride[2];
    const int64_t ph = g->padding[1], pw = g->padding[2], in_h = g->in[1], in_w = g->in[2];
    const int64_t out_h = g->out[1], out_w = g->out[2], nvec = (out_w + 7) / 8;
    /* (+ 64: whole-vector taps read past the last output's) */
    float rowbuf[AMP_POOL_ROW_MAX + 64] __attribute__((aligned(32)));
    __m256 ring[POOL_RING_VECS];
    const __m256i lane = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)sw));
    for (int64_t q = 0; q < AMP_POOL_ROW_MAX + 64; q++)
        rowbuf[q] = -INFINITY;
    for (size_t plane = begin; plane < end; plane++) {
        const char *xp = (const char *)c->x + plane * (size_t)(in_h * in_w) * es;
        char *yp = (char *)c->y + plane * (size_t)(out_h * out_w) * es;
        int64_t done = 0; /* input rows [0, done) have their maxima in the ring */
        for (int64_t oh = 0; oh < out_h; oh++) {
            int64_t r0 = oh * sh - ph, r1 = r0 + kh;
            r0 = r0 < 0 ? 0 : r0;
            r1 = r1 > in_h ? in_h : r1;
            done = done < r0 ? r0 : done;
            for (; done < r1; done++) {
                const char *xr = xp + (size_t)(done * in_w) * es;
                __m256 *rm = ring + (done % kh) * nvec;
                int64_t q = 0;
                for (; q + 8 <= in_w; q += 8)
                    _mm256_storeu_ps(rowbuf + pw + q, avx2_load8(t, xr + (size_t)q * es));
                if (q < in_w) /* only the row's own columns: the padding stays -inf */
                    avx2_store8_n(AMP_F32, rowbuf + pw + q, (size_t)(in_w - q), avx2_load8_n(t, xr + (size_t)q * es, (size_t)(in_w - q)));
                for (int64_t v = 0; v < nvec; v++) {
                    const float *base = rowbuf + v * 8 * sw;
                    __m256 b = _mm256_set1_ps(-INFINITY);
                    for (int64_t k = 0; k < kw; k++)
                        b = pool_take(b, pool_tap(base, k, sw, lane));
                    rm[v] = b;
                }
            }
            for (int64_t v = 0; v < nvec; v++) {
                __m256 b = _mm256_set1_ps(-INFINITY);
                for (int64_t r = r0; r < r1; r++)
                    b = pool_take(b, ring[(r % kh) * nvec + v]);
                if (v * 8 + 8 <= out_w)
                    avx2_store8(t, yp + (size_t)(oh * out_w + v * 8) * es, b);
                else
                    avx2_store8_n(t, yp + (size_t)(oh * out_w + v * 8) * es, (size_t)(out_w - v * 8), b);
            }
        }
    }
}

static void max_pool_fast(amp_dtype t, const amp_pool_desc *d, const void *x, void *y, int64_t *indices)
{
    pool_ctx c;
    c.g = pool_geometry_of(d);
    /* (+ 8: whole-vector taps read past the last output's; the ring held) */
    if (!amp_max_pool_simple(d, indices, &c.g, 8, 8) || c.g.kernel[1] * ((c.g.out[2] + 7) / 8) > POOL_RING_VECS) {
        amp_ref_max_pool_of(t, d, x, y, indices);
        return;
    }
    c.t = t;
    c.x = x;
    c.y = y;
    if (d->planes <= 0 || c.g.out_plane <= 0)
        return;
    avx2_run_chunked((size_t)d->planes, (size_t)c.g.in_plane, max_pool_body, &c);
}

/* ---- adaptive_avg_pool to one position per plane ---------------------------
 * A global average pool: 8 planes at a time, one per lane, each lane's sum
 * the reference's own chain (from 0, the plane's elements in memory order,
 * in f32), then divided by each dim's size in turn and rounded once.  Lane
 * l gathers element i of plane l; a 2-byte element is the low half of a
 * 32-bit gather, which reads two bytes past it, so the last group (which
 * holds the tensor's last element) runs the same chain in scalar code. */
TARGET static void global_avg_pool(amp_dtype t, int nspatial, int64_t planes, const int64_t *in_size, int64_t in_plane,
                                   const void *x, void *y)
{
    const size_t es = avx2_size_of(t);
    const __m256i lane = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)in_plane));
    int64_t p = 0;
    for (; p + 8 < planes && in_plane * 8 < ((int64_t)1 << 30); p += 8) {
        const char *base = (const char *)x + (size_t)(p * in_plane) * es;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = 0; i < in_plane; i++) {
            const __m256i at = _mm256_add_epi32(lane, _mm256_set1_epi32((int)i));
            __m256 v;
            if (t == AMP_F32)
                v = _mm256_i32gather_ps((const float *)base, at, 4);
            else {
                const __m256i w = _mm256_i32gather_epi32((const int *)base, at, 2);
                v = t == AMP_BF16 ? avx2_bf16_bits_to_f32(_mm256_slli_epi32(w, 16))
                                  : _mm256_cvtph_ps(avx2_pack_words(_mm256_and_si256(w, _mm256_set1_epi32(0xffff))));
            }
            acc = _mm256_add_ps(acc, v);
        }
        for (int d = 0; d < nspatial; d++)
            acc = _mm256_div_ps(acc, _mm256_set1_ps((float)in_size[d]));
        avx2_store8(t, (char *)y + (size_t)p * es, acc);
    }
    amp_global_avg_pool_planes(t, nspatial, p, planes, in_size, in_plane, x, y);
}

/* ---- table entries ------------------------------------------------------------ */

/* the bf16 -> f32 cast: cast_loop's (frame/eltwise_form.h's cast_body) */
#define WIDEN_BF16(c, begin, end) cast_loop(AMP_BF16, AMP_F32, c, begin, end)
AMP_ELTWISE_BODIES(TARGET, WIDEN_BF16)
AMP_ELTWISE_ENTRIES(avx2_run_chunked)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
AMP_ELTWISE_KERNELS(DEFINE)
#undef DEFINE

void amp_avx2_fill_eltwise(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    AMP_ELTWISE_KERNELS(INSTALL)
#undef INSTALL
}

/* Every AVX2 kernel beyond the GEMM and the convolutions, for
 * amp_isa_avx2_fill (x86/avx2.c). */
void amp_isa_avx2_fill_kernels(amp_kernel_table *t)
{
    amp_avx2_fill_eltwise(t);
    amp_avx2_fill_backward(t);
    amp_avx2_fill_norm(t);
    amp_avx2_fill_clamp(t);
    amp_avx2_fill_reduce(t);
    amp_avx2_fill_loss(t);
}

#endif /* x86 */
