/*
 * avx512_backward.c - the AVX-512 gradient and optimizer kernels of the
 * "avx512" and "avx512bf16" sets: relu_backward (threshold_backward), the
 * sgd update and 2-d max_pool_backward, for f32, bf16 and f16 storage
 * (batch_norm_backward is x86/avx512_norm.c's).
 * They are the parts of a convolutional network's training step between
 * the convolutions (resnet18's backward: relu_backward and
 * batch_norm_backward after every convolution, max_pool_backward at the
 * stem, sgd on every parameter).
 *
 * Each computes exactly what its reference kernel computes (the same f32
 * operations in the same order, no contraction into FMA, the same one
 * rounding to the storage dtype), so tests compare them bit for bit
 * (tests/runtime/test_fastbackward.c).  Large arrays are split into chunks
 * on the thread pool; the result does not depend on the split.
 *
 *  relu_backward   dx = x <= 0 ? 0 : dy, decided on the stored bits of x
 *                  (zero, or sign set and not NaN) and dy copied (bf16/f16:
 *                  a signalling NaN quieted, as the reference's round trip
 *                  through f32 does).
 *  sgd             the reference's formula per element, 16 at a time.
 *  max_pool_backward (2-d, dilation 1)  the forward's choice made 16
 *                  outputs at a time, the dy then summed in output order
 *                  (see its section); other geometries go to
 *                  x86/avx512_eltwise.c's (amp_avx512_max_pool_backward_any).
 *
 * The drivers (contexts, scalars, tasks, geometry checks, entries) are
 * frame/pool_form.h's, sgd_form.h's and backward_form.h's; this file
 * holds the vector loops.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill (through amp_isa_avx512_fill_backward) after
 * dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/chunked.h"
#include "frame/pool_form.h"
#include "frame/sgd_form.h"
#include "frame/backward_form.h"
#include "avx512_lanes.h"
#include "avx512_store.h"
#include "ref/ref_window.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

/* ---- relu_backward -------------------------------------------------------------- */

/* relu_bw32 (16 f32 lanes): x86/avx512_store.h. */

/* The same for 32 lanes of bf16 or f16 (inf: the dtype's infinity,
 * quiet: its quiet bit), and the reference's round trip of dy through f32
 * quieting a signalling NaN. */
TARGET static AMP_ALWAYS_INLINE __m512i relu_bw16(__m512i xv, __m512i g, short inf, short quiet)
{
    const __m512i xmag = _mm512_and_si512(xv, _mm512_set1_epi16(0x7fff));
    const __mmask32 le0 = _mm512_testn_epi16_mask(xmag, xmag) |
                          (_mm512_test_epi16_mask(xv, _mm512_set1_epi16((short)0x8000)) &
                           _mm512_cmple_epu16_mask(xmag, _mm512_set1_epi16(inf)));
    const __m512i gmag = _mm512_and_si512(g, _mm512_set1_epi16(0x7fff));
    const __mmask32 nan = _mm512_cmpgt_epu16_mask(gmag, _mm512_set1_epi16(inf));
    g = _mm512_mask_mov_epi16(g, nan, _mm512_or_si512(g, _mm512_set1_epi16(quiet)));
    return _mm512_maskz_mov_epi16((__mmask32)~le0, g);
}

/* Whole vectors with plain loads and stores, then one masked tail (a load
 * masked by the data, as this was, ran at half the speed of add's loop). */
TARGET static void relu_backward_body(const void *c_, size_t begin, size_t end)
{
    const amp_relu_bw_ctx *c = c_;
    size_t i = begin;
    if (c->t == AMP_F32) {
        const uint32_t *x = c->x, *dy = c->dy;
        uint32_t *dx = c->dx;
        for (; i + 16 <= end; i += 16)
            _mm512_storeu_si512(dx + i, relu_bw32(_mm512_loadu_si512(x + i), _mm512_loadu_si512(dy + i)));
        if (i < end) {
            const __mmask16 m = tail_mask(end - i);
            _mm512_mask_storeu_epi32(dx + i, m,
                                     relu_bw32(_mm512_maskz_loadu_epi32(m, x + i), _mm512_maskz_loadu_epi32(m, dy + i)));
        }
        return;
    }
    {
        const uint16_t *x = c->x, *dy = c->dy;
        uint16_t *dx = c->dx;
        const short inf = c->t == AMP_BF16 ? 0x7f80 : 0x7c00, quiet = c->t == AMP_BF16 ? 0x0040 : 0x0200;
        for (; i + 32 <= end; i += 32)
            _mm512_storeu_si512(dx + i, relu_bw16(_mm512_loadu_si512(x + i), _mm512_loadu_si512(dy + i), inf, quiet));
        if (i < end) {
            const __mmask32 m = (__mmask32)((1u << (end - i)) - 1);
            _mm512_mask_storeu_epi16(dx + i, m,
                                     relu_bw16(_mm512_maskz_loadu_epi16(m, x + i), _mm512_maskz_loadu_epi16(m, dy + i),
                                               inf, quiet));
        }
    }
}

/* ---- sgd ---------------------------------------------------------------------------- */

/* One element vector of the reference's step (frame/sgd_form.h). */
#define SGD_NEG(v) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)))
AMP_SGD_STEP(TARGET, sgd16, __m512, _mm512_add_ps, _mm512_mul_ps, _mm512_sub_ps, _mm512_set1_ps, SGD_NEG)

TARGET static AMP_ALWAYS_INLINE void sgd_loop(amp_dtype t, const amp_sgd_ctx *c, size_t begin, size_t end, int maximize,
                                              int use_wd, int use_m, int first, int nesterov)
{
    const size_t es = size_of_storage(t);
    char *p = c->p, *buf = c->buf;
    const char *g = c->g;
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        __m512 b = use_m && !first ? load16_all(t, buf + i * es) : _mm512_setzero_ps();
        const __m512 r = sgd16(c, load16_all(t, p + i * es), load16_all(t, g + i * es), &b, maximize, use_wd, use_m,
                               first, nesterov);
        if (use_m)
            store16_all(t, buf + i * es, b);
        store16_all(t, p + i * es, r);
    }
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        __m512 b = use_m && !first ? load16(t, buf + i * es, m) : _mm512_setzero_ps();
        const __m512 r = sgd16(c, load16(t, p + i * es, m), load16(t, g + i * es, m), &b, maximize, use_wd, use_m,
                               first, nesterov);
        if (use_m)
            store16(t, buf + i * es, m, b);
        store16(t, p + i * es, m, r);
    }
}

AMP_SGD_DRIVER(TARGET, AMP_RUN_ELEMENTS)

/* ---- max_pool_backward, 2-d, dilation 1 ---------------------------------------------
 * dx of max_pool: each output's dy added to the input element the forward
 * chose (strictly greater or NaN wins, taps scanned rows then columns, as
 * the reference scans them).  The choice is made 16 outputs of a row at a
 * time, as x86/avx512_eltwise.c's max_pool does: each input row of the
 * window widened to f32 in a buffer padded with -inf (a -inf tap never
 * wins, so padding it is skipping it), every lane tracking its best value
 * and that value's flat input index, starting, as the reference does, at
 * the window's first element.  A tap of 16 outputs is a contiguous load
 * at stride 1, and at stride 2 one from the row split into its even and
 * odd elements; a gather otherwise.  Then, in output order, one scalar pass
 * adds each dy into an f32 plane of sums at its chosen index: the same
 * additions in the same order as the reference, so the same bits.  Planes
 * run on the pool, each slot with its own sums and indices (malloc'ed per
 * call).  Other geometries go to amp_avx512_max_pool_backward_any.
 * max_pool_relu_backward masks each plane's sums by relu_backward's test
 * on x (relu_bw32 on x widened: the same lanes pass) as they are stored:
 * rounding then masking, or masking then rounding, gives the same bits. */

TARGET static void max_pool_backward_task(void *ctx, int64_t plane, int slot)
{
    const amp_mpb_ctx *c = ctx;
    const amp_dtype t = c->t;
    const size_t es = amp_dtype_size(t);
    const int64_t in_w = c->in_w, out_w = c->out_w, sw = c->sw, pw = c->pw, kw = c->kw;
    const int64_t in_plane = c->in_h * in_w, nvec = (out_w + 15) / 16;
    const char *x = (const char *)c->x + (size_t)(plane * in_plane) * es;
    const char *dy = (const char *)c->dy + (size_t)(plane * c->out_h * out_w) * es;
    char *dx = (char *)c->dx + (size_t)(plane * in_plane) * es;
    float *sum = c->sums + (size_t)slot * (size_t)in_plane;
    int32_t *idx = c->idx + (size_t)slot * (size_t)(nvec * 16);
    float rowbuf[AMP_POOL_ROW_MAX] __attribute__((aligned(64)));
    float dyrow[AMP_POOL_ROW_MAX] __attribute__((aligned(64))); /* out_w <= AMP_POOL_ROW_MAX (see amp_mpb_simple) */
    __m512 best[AMP_POOL_ROW_MAX / 16];
    __m512i bidx[AMP_POOL_ROW_MAX / 16];
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i lane_sw = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw));
    for (int64_t q = 0; q < AMP_POOL_ROW_MAX; q++)
        rowbuf[q] = -INFINITY;
    memset(sum, 0, (size_t)in_plane * sizeof *sum);
    /* Stride 2: the row buffer split into its even and odd elements
     * (evod[0], evod[1]), so that a tap of 16 outputs is one contiguous
     * load instead of a gather; when the split row fits. */
    const int64_t split = sw == 2 ? (nvec * 16 + (kw + 1) / 2 + 15) / 16 * 16 : 0;
    const int use_split = sw == 2 && 2 * split <= AMP_POOL_ROW_MAX;
    float evod[2][AMP_POOL_ROW_MAX / 2] __attribute__((aligned(64)));
    const __m512i even_i = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd_i = _mm512_add_epi32(even_i, _mm512_set1_epi32(1));
    for (int64_t oh = 0; oh < c->out_h; oh++) {
        int64_t r0 = oh * c->sh - c->ph, r1 = r0 + c->kh;
        if (r0 < 0)
            r0 = 0;
        if (r1 > c->in_h)
            r1 = c->in_h;
        for (int64_t v = 0; v < nvec; v++) {
            /* the reference's start: the window's first element */
            const __m512i col0 = _mm512_add_epi32(lane_sw, _mm512_set1_epi32((int)(v * 16 * sw - pw)));
            best[v] = _mm512_set1_ps(-INFINITY);
            bidx[v] = _mm512_add_epi32(_mm512_max_epi32(col0, _mm512_setzero_si512()),
                                       _mm512_set1_epi32((int)(r0 * in_w)));
        }
        for (int64_t r = r0; r < r1; r++) {
            const char *xr = x + (size_t)(r * in_w) * es;
            for (int64_t q = 0; q < in_w; q += 16) {
                const __mmask16 qm = tail_mask((size_t)(in_w - q));
                /* x streams in from memory (the forward wrote it long
                 * before): fetch four rows ahead (the address as an
                 * integer, past the plane at its end; a prefetch never
                 * faults) */
                _mm_prefetch((const char *)((uintptr_t)xr + (uintptr_t)((4 * in_w + q) * (int64_t)es)), _MM_HINT_T0);
                _mm512_mask_storeu_ps(rowbuf + pw + q, qm, load16(t, xr + (size_t)q * es, qm));
            }
            for (int64_t q = 0; use_split && q < split; q += 16) {
                const __m512 a = _mm512_load_ps(rowbuf + 2 * q), b = _mm512_load_ps(rowbuf + 2 * q + 16);
                _mm512_store_ps(evod[0] + q, _mm512_permutex2var_ps(a, even_i, b));
                _mm512_store_ps(evod[1] + q, _mm512_permutex2var_ps(a, odd_i, b));
            }
            for (int64_t v = 0; v < nvec; v++) {
                /* lanes past the row's last output read nothing */
                const __mmask16 m = tail_mask((size_t)(out_w - v * 16));
                const float *base = rowbuf + v * 16 * sw;
                /* flat index of tap 0 of each lane's window in row r */
                const __m512i at0 = _mm512_add_epi32(lane_sw, _mm512_set1_epi32((int)(r * in_w + v * 16 * sw - pw)));
                __m512 b = best[v];
                __m512i bi = bidx[v];
                for (int64_t k = 0; k < kw; k++) {
                    /* tap k of lane i: rowbuf[v 16 sw + i sw + k] (-inf where m is clear) */
                    const __m512 xv =
                        sw == 1     ? _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, base + k)
                        : use_split ? _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, evod[k & 1] + v * 16 + k / 2)
                                    : _mm512_mask_i32gather_ps(_mm512_set1_ps(-INFINITY), m, lane_sw, base + k, 4);
                    const __mmask16 take =
                        _mm512_cmp_ps_mask(xv, b, _CMP_GT_OQ) | _mm512_cmp_ps_mask(xv, xv, _CMP_UNORD_Q);
                    b = _mm512_mask_mov_ps(b, take, xv);
                    bi = _mm512_mask_mov_epi32(bi, take, _mm512_add_epi32(at0, _mm512_set1_epi32((int)k)));
                }
                best[v] = b;
                bidx[v] = bi;
            }
        }
        for (int64_t v = 0; v < nvec; v++) {
            /* the row's dy as f32 beside its indices, so the ordered pass
             * below is loads and adds only (amp_ld per element was most of
             * the kernel's time) */
            const __mmask16 m = tail_mask((size_t)(out_w - v * 16));
            _mm512_storeu_si512(idx + v * 16, bidx[v]);
            _mm512_store_ps(dyrow + v * 16, load16(t, dy + (size_t)(oh * out_w + v * 16) * es, m));
        }
        for (int64_t ow = 0; ow < out_w; ow++)
            sum[idx[ow]] += dyrow[ow];
    }
    for (int64_t i = 0; i < in_plane; i += 16) {
        const __mmask16 m = tail_mask((size_t)(in_plane - i));
        __m512 v = _mm512_maskz_loadu_ps(m, sum + i);
        if (c->relu)
            v = _mm512_castsi512_ps(relu_bw32(_mm512_castps_si512(load16(t, x + (size_t)i * es, m)),
                                              _mm512_castps_si512(v)));
        store16(t, dx + (size_t)i * es, m, v);
    }
}

/* ---- table entries ------------------------------------------------------------------ */

/* (adaptive_avg_pool_backward to one position per plane: a global average
 * pool's gradient, a classifier's head: resnet18's 8 x 512 planes of 7 x
 * 7, 0.3 ms through the reference's window loops.) */
#define MPB_ANY(T, d, x, dy, dx) amp_avx512_max_pool_backward_any(AMP_DTYPE_##T, d, x, dy, dx)
/* max_pool_backward: 16 outputs a vector, the taps masked loads (no
 * slack past the last output); other geometries to x86/avx512_eltwise.c's */
AMP_BACKWARD_ENTRIES(MPB_ANY, 16, 0)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
AMP_BACKWARD_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_backward(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    AMP_BACKWARD_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
