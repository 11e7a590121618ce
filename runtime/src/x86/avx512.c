/*
 * avx512.c - the "avx512" (AVX-512F/BW/VL + FMA + F16C) and
 * "avx512bf16" (the same plus AVX512_BF16) kernel sets: GEMM micro-kernels,
 * packing and epilogues for amp_fast_gemm (contract in amprt_internal.h).
 *
 *  f32 kernel   12 x 32 tile, 24 zmm accumulators, one FMA per k per
 *               16 columns; f32, bf16 and f16 storage all pack to f32 (bf16
 *               by a shift, f16 by vcvtph2ps), so one kernel serves them.
 *  bf16 kernel  (avx512bf16, bf16 storage only) 12 x 32 tile of vdpbf16ps:
 *               each unit is a pair of k, the pair's two exact products
 *               added to the f32 accumulator in k order.  vdpbf16ps
 *               treats bf16 subnormal inputs as zero and flushes subnormal
 *               f32 results (as PyTorch/oneDNN's bf16 GEMM on this ISA).
 *
 * The same descriptors serve conv and its gradients (the convolution drivers of frame/, through
 * ISA_GEMM_ENTRIES); the vectorized kernels between the convolutions are
 * in x86/avx512_eltwise.c, installed by amp_isa_avx512_fill too.
 *
 * Everything here is compiled for its ISA through target attributes only,
 * and runs only after dispatch.c's CPU check.
 */

#include "frame/kernel_set.h"
#include "frame/small_split.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <x86intrin.h> /* __rdtsc */

#define MR 12
#define NR 32

/* ---- f32 micro-kernel ------------------------------------------------------ */

#define F32_ROW(i)                                                                                \
    av = _mm512_set1_ps(pa[i]);                                                                   \
    c##i##a = _mm512_fmadd_ps(av, b0, c##i##a);                                                   \
    c##i##b = _mm512_fmadd_ps(av, b1, c##i##b);

#define DECL_ROW(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();

#define STORE_ROW(i)                                                                              \
    if (accumulate) {                                                                             \
        c##i##a = _mm512_add_ps(_mm512_load_ps(w + i * ldw), c##i##a);                            \
        c##i##b = _mm512_add_ps(_mm512_load_ps(w + i * ldw + 16), c##i##b);                       \
    }                                                                                             \
    _mm512_store_ps(w + i * ldw, c##i##a);                                                        \
    _mm512_store_ps(w + i * ldw + 16, c##i##b);

#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

AVX512_TARGET static void micro_f32(int64_t kcu, const void *pa_, const void *pb_, float *w, int64_t ldw,
                                    int accumulate)
{
    const float *pa = pa_, *pb = pb_;
    ALL_ROWS(DECL_ROW)
    for (int64_t u = 0; u < kcu; u++) {
        __m512 b0 = _mm512_load_ps(pb), b1 = _mm512_load_ps(pb + 16), av;
        _mm_prefetch((const char *)(pb + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(pb + 8 * NR + 16), _MM_HINT_T0);
        ALL_ROWS(F32_ROW)
        pa += MR;
        pb += NR;
    }
    ALL_ROWS(STORE_ROW)
}

/* ---- bf16 micro-kernel (vdpbf16ps) ----------------------------------------- */

#define BF16_ROW(i)                                                                               \
    av = _mm512_set1_epi32((int)pa[i]);                                                           \
    c##i##a = _mm512_dpbf16_ps(c##i##a, (__m512bh)av, (__m512bh)b0);                              \
    c##i##b = _mm512_dpbf16_ps(c##i##b, (__m512bh)av, (__m512bh)b1);

/* The k loop of the bf16 kernels: per unit (a pair of k), B's two
 * vectors and MRV rows of A broadcast, ROWS_OF(BF16_ROW) over them. */
#define BF16_K_LOOP(ROWS_OF, MRV)                                                                 \
    for (int64_t u = 0; u < kcu; u++) {                                                           \
        __m512i b0 = _mm512_load_si512(pb), b1 = _mm512_load_si512(pb + 16), av;                  \
        _mm_prefetch((const char *)(pb + 8 * NR), _MM_HINT_T0);                                   \
        _mm_prefetch((const char *)(pb + 8 * NR + 16), _MM_HINT_T0);                              \
        ROWS_OF(BF16_ROW)                                                                         \
        pa += MRV;                                                                                \
        pb += NR;                                                                                 \
    }

/* micro (contract in amprt_internal.h) on MRV x 32 tiles: the tile's f32
 * sums into w (added to w's when accumulate). */
#define BF16_MICRO(NAME, ROWS_OF, MRV)                                                            \
    AVX512BF16_TARGET static void NAME(int64_t kcu, const void *pa_, const void *pb_, float *w,   \
                                       int64_t ldw, int accumulate)                               \
    {                                                                                             \
        const uint32_t *pa = pa_, *pb = pb_;                                                      \
        ROWS_OF(DECL_ROW)                                                                         \
        BF16_K_LOOP(ROWS_OF, MRV)                                                                 \
        ROWS_OF(STORE_ROW)                                                                        \
    }

/* micro_bf16 on a last k block, with epi's bias-free, alpha-1 epilogue
 * applied in the registers (contract of micro_out in amprt_internal.h):
 * the same sums (w's partial sums added first when accumulate), rounded
 * to bf16 by store16_bf16 and stored into rows x cols of y (row stride ldy
 * elements), so the tile never goes through w. */
#define OUT_ROW(i)                                                                                \
    if (i < rows) {                                                                               \
        if (accumulate) {                                                                         \
            c##i##a = _mm512_add_ps(_mm512_load_ps(w + i * ldw), c##i##a);                        \
            c##i##b = _mm512_add_ps(_mm512_load_ps(w + i * ldw + 16), c##i##b);                   \
        }                                                                                         \
        store16_bf16(yb + (size_t)(i * ldy) * 2, ma, c##i##a);                                    \
        if (mb)                                                                                   \
            store16_bf16(yb + (size_t)(i * ldy + 16) * 2, mb, c##i##b);                           \
    }

#define BF16_MICRO_OUT(NAME, ROWS_OF, MRV)                                                        \
    AVX512BF16_TARGET static void NAME(int64_t kcu, const void *pa_, const void *pb_, const float *w, \
                                       int64_t ldw, int accumulate, void *y, int64_t ldy, int rows, \
                                       int cols)                                                  \
    {                                                                                             \
        const uint32_t *pa = pa_, *pb = pb_;                                                      \
        char *yb = y;                                                                             \
        const __mmask16 ma = (__mmask16)(cols >= 16 ? 0xffff : (1u << cols) - 1);                \
        const __mmask16 mb = (__mmask16)(cols >= 32 ? 0xffff : cols <= 16 ? 0 : (1u << (cols - 16)) - 1); \
        ROWS_OF(DECL_ROW)                                                                         \
        BF16_K_LOOP(ROWS_OF, MRV)                                                                 \
        ROWS_OF(OUT_ROW)                                                                          \
    }

/* 12-row tiles (kernel_bf16), and 8-row ones (kernel_bf16_8: output
 * channels that 12-row tiles would pad by over a sixteenth, as resnet's
 * 64): 16 accumulators, B's loads shared by 8 rows instead of 12. */
#define ROWS8_OF(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define MR8 8

BF16_MICRO(micro_bf16, ALL_ROWS, MR)
BF16_MICRO(micro_bf16_8, ROWS8_OF, MR8)

/* The k loop of the taps kernels (micro_taps, contract in
 * amprt_internal.h): per unit, 32 elements from each half's row,
 * interleaved into the two vectors pack_b_rows would have stored (one
 * permute per 16 columns), then the same vdpbf16ps chain as micro's on
 * them. */
#define BF16_TAPS_K_LOOP(ROWS_OF, MRV)                                                            \
    const __m512i pick_lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, \
                                             39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0); \
    const __m512i pick_hi = _mm512_add_epi16(pick_lo, _mm512_set1_epi16(16));                     \
    ROWS_OF(DECL_ROW)                                                                             \
    for (int64_t u = 0; u < kcu; u++) {                                                           \
        const __m512i lo = _mm512_loadu_si512((const void *)(src + off[2 * u]));                  \
        const __m512i hi = _mm512_loadu_si512((const void *)(src + off[2 * u + 1]));              \
        const __m512i b0 = _mm512_permutex2var_epi16(lo, pick_lo, hi);                            \
        const __m512i b1 = _mm512_permutex2var_epi16(lo, pick_hi, hi);                            \
        __m512i av;                                                                               \
        ROWS_OF(BF16_ROW)                                                                         \
        pa += MRV;                                                                                \
    }

#define BF16_TAPS_MICRO(NAME, ROWS_OF, MRV)                                                       \
    AVX512BF16_TARGET static void NAME(int64_t kcu, const void *pa_, const void *src_,            \
                                       const int32_t *off, float *w, int64_t ldw, int accumulate) \
    {                                                                                             \
        const uint32_t *pa = pa_;                                                                 \
        const uint16_t *src = src_;                                                               \
        BF16_TAPS_K_LOOP(ROWS_OF, MRV)                                                            \
        ROWS_OF(STORE_ROW)                                                                        \
    }

/* micro_taps_out (contract in amprt_internal.h): micro_taps' sums
 * rounded as micro_out rounds them, each row's two halves stored into
 * the lanes of each segment. */
#define TAPS_OUT_ROW(i)                                                                           \
    if (i < rows) {                                                                               \
        __m256i ha, hb;                                                                           \
        if (accumulate) {                                                                         \
            c##i##a = _mm512_add_ps(_mm512_load_ps(w + i * ldw), c##i##a);                        \
            c##i##b = _mm512_add_ps(_mm512_load_ps(w + i * ldw + 16), c##i##b);                   \
        }                                                                                         \
        ha = round16_bf16(c##i##a);                                                               \
        hb = round16_bf16(c##i##b);                                                               \
        for (int s = 0; s < nseg; s++) {                                                          \
            /* (uintptr_t: a segment's column 0 may lie before y) */                              \
            void *at = (void *)((uintptr_t)y + (uintptr_t)((i * ldy + seg[s].at) * 2));           \
            if (seg[s].mask & 0xffffu)                                                            \
                store_bf16_lanes(at, (__mmask16)(seg[s].mask & 0xffffu), ha);                     \
            if (seg[s].mask >> 16)                                                                \
                store_bf16_lanes((char *)at + 32, (__mmask16)(seg[s].mask >> 16), hb);            \
        }                                                                                         \
    }

#define BF16_TAPS_MICRO_OUT(NAME, ROWS_OF, MRV)                                                   \
    AVX512BF16_TARGET static void NAME(int64_t kcu, const void *pa_, const void *src_,            \
                                       const int32_t *off, const float *w, int64_t ldw,           \
                                       int accumulate, void *y, int64_t ldy, int rows,            \
                                       const amp_tap_seg *seg, int nseg)                          \
    {                                                                                             \
        const uint32_t *pa = pa_;                                                                 \
        const uint16_t *src = src_;                                                               \
        BF16_TAPS_K_LOOP(ROWS_OF, MRV)                                                            \
        ROWS_OF(TAPS_OUT_ROW)                                                                     \
    }

BF16_TAPS_MICRO(micro_taps_bf16, ALL_ROWS, MR)
BF16_TAPS_MICRO(micro_taps_bf16_8, ROWS8_OF, MR8)
BF16_TAPS_MICRO_OUT(micro_taps_out_bf16, ALL_ROWS, MR)
BF16_TAPS_MICRO_OUT(micro_taps_out_bf16_8, ROWS8_OF, MR8)
BF16_MICRO_OUT(micro_out_bf16, ALL_ROWS, MR)
BF16_MICRO_OUT(micro_out_bf16_8, ROWS8_OF, MR8)

/* ---- packing ---------------------------------------------------------------- */

/* 16 values of dtype t at p (mask m) as f32. */
AVX512_TARGET static inline __m512 load16(amp_dtype t, const void *p, __mmask16 m)
{
    switch (t) {
    case AMP_BF16:
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    case AMP_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* Transposes 32-bit units: unit (u, i) at base + i * row_bytes + 4 u goes
 * to dst[u * W + i], for i < rows (a multiple of 4, at most W) and u <
 * nunits rounded down to a multiple of 4, 4 x 4 blocks at a time; returns
 * the units done.
 * Four rows at a time along their whole length: a few long read streams
 * (W rows read 16 bytes each in turn defeat the prefetchers when the
 * source is not in cache, as the weight gradient's B often is not); the
 * panel written is small and stays in L1. */
AVX512_TARGET static int64_t transpose_units(const char *base, size_t row_bytes, int64_t nunits, uint32_t *dst, int rows,
                                             int W)
{
    const int64_t units = nunits & ~(int64_t)3;
    for (int i = 0; i < rows; i += 4)
        for (int64_t u = 0; u < units; u += 4) {
            const char *p = base + (size_t)i * row_bytes + (size_t)u * 4;
            __m128 r0 = _mm_loadu_ps((const float *)p), r1 = _mm_loadu_ps((const float *)(p + row_bytes));
            __m128 r2 = _mm_loadu_ps((const float *)(p + 2 * row_bytes));
            __m128 r3 = _mm_loadu_ps((const float *)(p + 3 * row_bytes));
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps((float *)(dst + u * W + i), r0);
            _mm_storeu_ps((float *)(dst + (u + 1) * W + i), r1);
            _mm_storeu_ps((float *)(dst + (u + 2) * W + i), r2);
            _mm_storeu_ps((float *)(dst + (u + 3) * W + i), r3);
        }
    return units;
}

/* f32 panels, W = MR (A) or NR (B).  Rows along the panel's width that are
 * contiguous in memory (ws == 1, B of a row-major matrix) load 16 at a time. */
AVX512_TARGET static void pack_f32_panel(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width, int64_t k,
                                         float *dst, int W)
{
    if (ws == 1 && W % 16 == 0) {
        const size_t es = amp_dtype_size(t);
        for (int64_t kk = 0; kk < k; kk++) {
            const char *row = (const char *)base + (size_t)(kk * ks) * es;
            for (int i = 0; i < W; i += 16) {
                int left = width - i;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
                _mm512_storeu_ps(dst + kk * W + i, load16(t, row + (size_t)i * es, m));
            }
        }
        return;
    }
    if (ks == 1 && t == AMP_F32 && width == W && W % 4 == 0) {
        /* A row-major in f32: 4 x 4 transposes, then the odd k. */
        int64_t done = transpose_units(base, (size_t)ws * 4, k, (uint32_t *)dst, W, W);
        if (done < k)
            ISA_PACK_F32_SWITCH(t, (const float *)base + done, ws, ks, width, k - done, dst + done * W, W);
        return;
    }
    if (ks == 1 && t != AMP_F32 && width == W) {
        /* A row-major (or B transposed) in bf16/f16: convert 16 k of one
         * row at a time, then scatter them into the panel. */
        const size_t es = amp_dtype_size(t);
        float tmp[16] __attribute__((aligned(64)));
        int64_t kk = 0;
        for (; kk + 16 <= k; kk += 16)
            for (int i = 0; i < W; i++) {
                _mm512_store_ps(tmp, load16(t, (const char *)base + (size_t)(i * ws + kk) * es, 0xffff));
                for (int q = 0; q < 16; q++)
                    dst[(kk + q) * W + i] = tmp[q];
            }
        if (kk < k)
            ISA_PACK_F32_SWITCH(t, (const char *)base + (size_t)kk * es, ws, ks, width, k - kk, dst + kk * W, W);
        return;
    }
    ISA_PACK_F32_SWITCH(t, base, ws, ks, width, k, dst, W);
}

AVX512_TARGET static void pack_a_f32(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k, void *dst)
{
    pack_f32_panel(t, a, rs, cs, rows, k, dst, MR);
}

AVX512_TARGET static void pack_b_f32(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k, void *dst)
{
    pack_f32_panel(t, b, cs, rs, cols, k, dst, NR);
}

/* bf16 pairs.  B of a row-major matrix (ws == 1): rows k and k + 1
 * interleaved 16 columns at a time. */
AVX512BF16_TARGET static void pack_bf16_panel(const uint16_t *s, int64_t ws, int64_t ks, int width, int64_t k,
                                              uint32_t *dst, int W)
{
    if (ws == 1 && W % 16 == 0 && width == W) {
        /* full panels: each 16 columns of rows k and k + 1 interleaved by
         * one vpermt2w (zero-extending loads and a shift cost twice the
         * instructions) */
        const __m512i pick = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38,
                                              6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
        int64_t u, kcu = k / 2;
        for (u = 0; u < kcu; u++) {
            const uint16_t *r0 = s + 2 * u * ks, *r1 = r0 + ks;
            for (int i = 0; i < W; i += 16) {
                const __m512i lo = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(r0 + i)));
                const __m512i hi = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(r1 + i)));
                _mm512_storeu_si512(dst + u * W + i, _mm512_permutex2var_epi16(lo, pick, hi));
            }
        }
        if (k & 1) {
            const uint16_t *r0 = s + (k - 1) * ks;
            for (int i = 0; i < W; i += 16)
                _mm512_storeu_si512(dst + kcu * W + i,
                                    _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(r0 + i))));
        }
        return;
    }
    if (ws == 1 && width == W && W % 8 == 0) {
        /* a full 8-wide panel (small_gemm_bf16's 8-row A of a transposed
         * operand): rows k and k + 1 interleaved 8 columns at a time */
        const __m256i pick = _mm256_set_epi16(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        int64_t u, kcu = k / 2;
        for (u = 0; u < kcu; u++) {
            const uint16_t *r0 = s + 2 * u * ks, *r1 = r0 + ks;
            for (int i = 0; i < W; i += 8) {
                const __m256i lo = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r0 + i)));
                const __m256i hi = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r1 + i)));
                _mm256_storeu_si256((__m256i *)(dst + u * W + i), _mm256_permutex2var_epi16(lo, pick, hi));
            }
        }
        if (k & 1) {
            const uint16_t *r0 = s + (k - 1) * ks;
            for (int i = 0; i < W; i += 8) {
                __m128i lo = _mm_loadu_si128((const __m128i *)(r0 + i));
                _mm_storeu_si128((__m128i *)(dst + kcu * W + i), _mm_unpacklo_epi16(lo, _mm_setzero_si128()));
                _mm_storeu_si128((__m128i *)(dst + kcu * W + i + 4), _mm_unpackhi_epi16(lo, _mm_setzero_si128()));
            }
        }
        return;
    }
    if (ws == 1) {
        /* partial panels and other widths (small_gemm_bf16's 12-row A
         * panels, partial 8-row ones): 16 at a time, zeros past width,
         * storing only the panel's W lanes */
        int64_t u, kcu = k / 2;
        for (u = 0; u < kcu; u++) {
            const uint16_t *r0 = s + 2 * u * ks, *r1 = r0 + ks;
            for (int i = 0; i < W; i += 16) {
                int left = width - i;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
                __mmask16 sm = W - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (W - i)) - 1);
                __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + i));
                __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1 + i));
                _mm512_mask_storeu_epi32(dst + u * W + i, sm, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            }
        }
        if (k & 1) {
            const uint16_t *r0 = s + (k - 1) * ks;
            for (int i = 0; i < W; i += 16) {
                int left = width - i;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
                __mmask16 sm = W - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (W - i)) - 1);
                _mm512_mask_storeu_epi32(dst + kcu * W + i, sm, _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + i)));
            }
        }
        return;
    }
    if (ks == 1 && width == W && W % 4 == 0) {
        /* A row-major: a pair of k is one 32-bit unit of a row. */
        int64_t done = transpose_units((const char *)s, (size_t)ws * 2, k / 2, dst, W, W);
        if (2 * done < k)
            isa_pack_bf16_body(s + 2 * done, ws, ks, width, k - 2 * done, dst + done * W, W);
        return;
    }
    if (ks == 1 && width >= 4 && width < W && W % 4 == 0) {
        /* A partial panel of the same (small_gemm_bf16's 10-column B of a
         * linear's weights): the first width & ~3 rows by 4 x 4
         * transposes, the last few one unit at a time, zeros beyond. */
        const int w4 = width & ~3;
        const int64_t done = transpose_units((const char *)s, (size_t)ws * 2, k / 2, dst, w4, W);
        for (int64_t u = 0; u < done; u++) {
            uint32_t *o = dst + u * W;
            for (int i = w4; i < width; i++) {
                const uint16_t *q = s + (size_t)i * ws + 2 * u;
                o[i] = (uint32_t)q[0] | (uint32_t)q[1] << 16;
            }
            for (int i = width; i < W; i++)
                o[i] = 0;
        }
        if (2 * done < k)
            isa_pack_bf16_body(s + 2 * done, ws, ks, width, k - 2 * done, dst + done * W, W);
        return;
    }
    isa_pack_bf16_body(s, ws, ks, width, k, dst, W);
}

AVX512BF16_TARGET static void pack_a_bf16(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k,
                                          void *dst)
{
    (void)t;
    pack_bf16_panel(a, rs, cs, rows, k, dst, MR);
}

AVX512BF16_TARGET static void pack_a_bf16_8(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k,
                                            void *dst)
{
    (void)t;
    pack_bf16_panel(a, rs, cs, rows, k, dst, MR8);
}

AVX512BF16_TARGET static void pack_b_bf16(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k,
                                          void *dst)
{
    (void)t;
    pack_bf16_panel(b, cs, rs, cols, k, dst, NR);
}

/* pack_b_im2col of the bf16 kernel (contract in amprt_internal.h): each
 * run 16 columns at a time into a row of units over the task's columns
 * (a run's last store may spill past its end: the next run, or the
 * slack, takes those lanes), then the row copied into the micro-panels.
 * Each half's 16 elements load unmasked when all are inside its source
 * row, else under the mask of those that are (masked-off lanes read
 * nothing, so the address of lane 0 may lie outside the row: it is formed
 * as an integer).  Stride 2 loads 32 elements and keeps the even ones;
 * other strides take the generic body. */
static inline uint32_t lanes_in(int64_t a, int64_t b, int scale)
{
    /* bits [a scale, b scale) of 32 with a, b clamped to [0, 16] */
    a = a < 0 ? 0 : a > 16 ? 16 : a;
    b = b < a ? a : b > 16 ? 16 : b;
    return (uint32_t)((((uint64_t)1 << ((b - a) * scale)) - 1) << (a * scale));
}

AVX512BF16_TARGET static inline __m512i im2col_half16(const amp_im2col_tap *tp, const char *plane, int64_t q,
                                                    int64_t stride)
{
    const int64_t lo = tp->lo, hi = tp->hi;
    const uintptr_t p = (uintptr_t)plane + (uintptr_t)((tp->off + (q - lo) * stride) * 2);
    if (q >= lo && (stride == 1 ? q + 16 <= hi : q + 16 < hi)) /* (stride 2 reads one element past lane 15's) */
        return stride == 1 ? _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p))
                           : _mm512_and_si512(_mm512_loadu_si512((const void *)p), _mm512_set1_epi32(0xffff));
    if (q + 16 <= lo || q >= hi)
        return _mm512_setzero_si512();
    if (stride == 1)
        return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16((__mmask16)lanes_in(lo - q, hi - q, 1), (const void *)p));
    return _mm512_maskz_loadu_epi16((__mmask32)(lanes_in(lo - q, hi - q, 2) & 0x55555555u), (const void *)p);
}

AVX512BF16_TARGET static void pack_b_im2col_bf16(amp_dtype t, int64_t stride, const int64_t *col, int64_t nruns,
                                                 const amp_im2col_tap *const tap[2], const void *const plane[2],
                                                 int64_t kcu, void *dst_)
{
    static const amp_im2col_tap none = { 0, 0, 0 };
    uint32_t row[AMP_IM2COL_COLS_MAX + 16] __attribute__((aligned(64)));
    uint32_t *dst = dst_;
    (void)t;
    if ((stride != 1 && stride != 2) || nruns <= 0 || col[nruns] > AMP_IM2COL_COLS_MAX) {
        isa_pack_b_im2col_body(2, stride, col, nruns, tap, plane, kcu, dst, NR);
        return;
    }
    for (int64_t ri = 0; ri < nruns; ri++) {
        const amp_im2col_tap *t0 = tap[0] != NULL ? &tap[0][ri] : &none, *t1 = tap[1] != NULL ? &tap[1][ri] : &none;
        const int64_t len = col[ri + 1] - col[ri];
        uint32_t *o = row + col[ri];
        for (int64_t q = 0; q < len; q += 16)
            _mm512_storeu_si512(o + q, _mm512_or_si512(im2col_half16(t0, plane[0], q, stride),
                                                       _mm512_slli_epi32(im2col_half16(t1, plane[1], q, stride), 16)));
    }
    for (int64_t c = 0; c < col[nruns]; c += NR) {
        uint32_t *d = dst + c / NR * kcu * NR;
        _mm512_storeu_si512(d, _mm512_load_si512(row + c));
        _mm512_storeu_si512(d + 16, _mm512_load_si512(row + c + 16));
    }
}

/* pack_b_rows of the bf16 kernel (contract in amprt_internal.h): no
 * bounds, so each 16 columns of a run are two unmasked loads and one
 * word interleave (stride 1: the 16 elements of each half side by side;
 * stride 2: the even elements of 32), stored into a row of units over
 * the task's columns that is then copied into the micro-panels, as
 * pack_b_im2col_bf16 does.  A run's last 16 may spill past its end into
 * the next run's columns, which that run then writes, or into the zeros
 * written last. */
AVX512BF16_TARGET static inline __m512i rows_unit16(const uint16_t *a, const uint16_t *b, int64_t q, int stride)
{
    if (stride == 1) {
        /* words 2i and 2i + 1 of the result: a[q + i], b[q + i] */
        const __m512i pick = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7,
                                              38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
        const __m512i va = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(a + q)));
        const __m512i vb = b != NULL ? _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(b + q)))
                                     : _mm512_setzero_si512();
        return _mm512_permutex2var_epi16(va, pick, vb);
    }
    {
        /* the even words of a's 32 stay; b's even words move up into the odd ones */
        const __m512i va = _mm512_loadu_si512((const void *)(a + 2 * q));
        const __m512i vb = b != NULL ? _mm512_slli_epi32(_mm512_loadu_si512((const void *)(b + 2 * q)), 16)
                                     : _mm512_setzero_si512();
        return _mm512_mask_blend_epi16((__mmask32)0xaaaaaaaau, va, vb);
    }
}

AVX512BF16_TARGET static inline void pack_b_rows_body(int stride, const int64_t *col, const int64_t *off,
                                                      int64_t nruns, const void *const src[2], int64_t kcu,
                                                      uint32_t *dst)
{
    uint32_t row[AMP_IM2COL_COLS_MAX + 32] __attribute__((aligned(64)));
    const uint16_t *a = src[0], *b = src[1];
    const int64_t n = col[nruns];
    for (int64_t ri = 0; ri < nruns; ri++) {
        const uint16_t *ar = a + off[ri], *br = b != NULL ? b + off[ri] : NULL;
        const int64_t len = col[ri + 1] - col[ri];
        uint32_t *o = row + col[ri];
        for (int64_t q = 0; q < len; q += 16)
            _mm512_storeu_si512(o + q, rows_unit16(ar, br, q, stride));
    }
    /* the last panel's columns past the block's: zeros (up to 31 of them) */
    _mm512_storeu_si512(row + n, _mm512_setzero_si512());
    _mm512_storeu_si512(row + n + 16, _mm512_setzero_si512());
    for (int64_t c = 0; c < n; c += NR) {
        uint32_t *d = dst + c / NR * kcu * NR;
        _mm512_storeu_si512(d, _mm512_load_si512(row + c));
        _mm512_storeu_si512(d + 16, _mm512_load_si512(row + c + 16));
    }
}

AVX512BF16_TARGET static void pack_b_rows_bf16(int64_t stride, const int64_t *col, const int64_t *off, int64_t nruns,
                                               const void *const src[2], int64_t kcu, void *dst)
{
    if (stride == 1)
        pack_b_rows_body(1, col, off, nruns, src, kcu, dst);
    else
        pack_b_rows_body(2, col, off, nruns, src, kcu, dst);
}

/* pack_b_trows of the bf16 kernel (contract in amprt_internal.h): a
 * transpose of 32-bit units, 4 columns x 4 units at a time (one 16-byte
 * load per column, _MM_TRANSPOSE4_PS, one 16-byte store per unit), as
 * transpose_units does for rows a fixed stride apart; the units past the
 * last multiple of 4 one at a time. */
AVX512BF16_TARGET static void pack_b_trows_bf16(const void *const *rows, int64_t units, void *dst_)
{
    uint32_t *dst = dst_;
    const int64_t units4 = units & ~(int64_t)3;
    for (int i = 0; i < NR; i += 4) {
        const char *r0 = rows[i], *r1 = rows[i + 1], *r2 = rows[i + 2], *r3 = rows[i + 3];
        for (int64_t u = 0; u < units4; u += 4) {
            __m128 a = _mm_loadu_ps((const float *)(const void *)(r0 + 4 * u));
            __m128 b = _mm_loadu_ps((const float *)(const void *)(r1 + 4 * u));
            __m128 c = _mm_loadu_ps((const float *)(const void *)(r2 + 4 * u));
            __m128 e = _mm_loadu_ps((const float *)(const void *)(r3 + 4 * u));
            _MM_TRANSPOSE4_PS(a, b, c, e);
            _mm_storeu_ps((float *)(dst + u * NR + i), a);
            _mm_storeu_ps((float *)(dst + (u + 1) * NR + i), b);
            _mm_storeu_ps((float *)(dst + (u + 2) * NR + i), c);
            _mm_storeu_ps((float *)(dst + (u + 3) * NR + i), e);
        }
        for (int64_t u = units4; u < units; u++)
            for (int q = 0; q < 4; q++)
                memcpy(dst + u * NR + i + q, (const char *)rows[i + q] + 4 * u, 4);
    }
}

/* pad_rows of the 2-byte kernels (contract in amprt_internal.h): each row
 * as whole 32-element stores only, the left zeros, then the data, then
 * the right zeros, each step overwriting what the one before wrote past
 * its end (and the last row's past the row, into the slack); the data
 * loaded whole, masked only where 32 elements would run past the input
 * tensor.  (Masked stores, and loads masked in every step, measured
 * slower than the C library's calls this replaces.) */
AVX512_TARGET static void pad_rows16(void *dst_, const void *x_, int64_t plane, int64_t cin, int64_t ih0, int64_t rows,
                                     int64_t in_h, int64_t in_w, int64_t left, int64_t w, const void *x_end)
{
    uint16_t *dst = dst_;
    const uint16_t *x = x_, *end = x_end;
    const __m512i zero = _mm512_setzero_si512();
    const int64_t lo = left < w ? left : w, hi = left + in_w < w ? left + in_w : w;
    for (int64_t c = 0; c < cin; c++)
        for (int64_t r = 0; r < rows; r++) {
            uint16_t *o = dst + (c * rows + r) * w;
            const int64_t ih = ih0 + r;
            if (ih < 0 || ih >= in_h || hi <= lo) {
                for (int64_t b = 0; b < w; b += 32)
                    _mm512_storeu_si512(o + b, zero);
                continue;
            }
            const uint16_t *row = x + c * plane + ih * in_w; /* output element b: row[b - left] */
            for (int64_t b = 0; b < lo; b += 32)
                _mm512_storeu_si512(o + b, zero);
            for (int64_t b = lo; b < hi; b += 32) {
                const uint16_t *p = row + (b - left);
                const __m512i v = end - p >= 32 ? _mm512_loadu_si512(p)
                                                : _mm512_maskz_loadu_epi16((__mmask32)(((uint64_t)1 << (end - p)) - 1), p);
                _mm512_storeu_si512(o + b, v);
            }
            for (int64_t b = hi; b < w; b += 32)
                _mm512_storeu_si512(o + b, zero);
        }
}

/* ---- epilogue ---------------------------------------------------------------- */

AVX512_TARGET static void epi(amp_dtype t, int64_t n, const float *w, float alpha, float beta, const void *c,
                              int64_t c_cs, const void *bias, void *y)
{
    const size_t es = amp_dtype_size(t);
    if ((t != AMP_F32 && t != AMP_BF16 && t != AMP_F16) || (c != NULL && c_cs != 1)) {
        amp_gemm_epi_scalar(t, 0, n, w, alpha, beta, c, c_cs, bias, y);
        return;
    }
    if (t == AMP_BF16 && alpha == 1.0f && c == NULL && bias == NULL) {
        /* a convolution's usual epilogue (no bias): the rounding alone,
         * whole vectors unmasked */
        int64_t j = 0;
        for (; j + 16 <= n; j += 16)
            store16(AMP_BF16, (char *)y + j * 2, (__mmask16)0xffff, _mm512_loadu_ps(w + j));
        if (j < n) {
            const __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
            store16(AMP_BF16, (char *)y + j * 2, m, _mm512_maskz_loadu_ps(m, w + j));
        }
        return;
    }
    for (int64_t j = 0; j < n; j += 16) {
        int64_t left = n - j;
        __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, w + j);
        if (alpha != 1.0f)
            v = _mm512_mul_ps(_mm512_set1_ps(alpha), v);
        if (c != NULL)
            v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(beta), load16(t, (const char *)c + j * es, m)));
        if (bias != NULL)
            v = _mm512_add_ps(v, load16(t, (const char *)bias + j * es, m));
        store16(t, (char *)y + j * es, m, v);
    }
}

/* ---- small bf16 GEMMs (avx512bf16): one pass, epilogue per tile ----------------- *
 *
 * A model's small layers (a 64-row batch through a 64 -> 128 -> 10
 * perceptron, forward and backward) spend more in the blocked driver's
 * bookkeeping - the per-row epilogue calls reading W back, 12-row tiles
 * half empty, 32-column panels a third used - than in vdpbf16ps.  Below
 * the driver's parallel threshold (it runs them on one thread anyway) and
 * when K fits one k block, this path packs the same panels, runs the same
 * chain of vdpbf16ps per output element (units in k order from zero, so
 * the same f32 sum), and applies epi's arithmetic (alpha product, beta C
 * term, bias, one rounding to bf16) to each tile's sums as the tile
 * ends, while they are in L1 (the kernel stores them; the epilogue of
 * the entry's kind reads them back: one copy of each epilogue rather
 * than one per tile shape and kind, which made the tiles 250 KB, all
 * linked into any program multiplying bf16); the tile shape, picked to
 * waste the fewest rows and columns (8 or 12 rows x 32 columns, 16 x 16
 * for N <= 16), changes no result.  So the output is
 * bit for bit the blocked driver's, on any thread count.  Everything else
 * (K > 512, addbmm's summed batches, a strided C, larger products) goes
 * to amp_fast_gemm.
 *
 * From SMALL_SPLIT_FLOPS on, two threads share the product: the panels
 * (each thread packs and runs its own columns) when A is read in place,
 * else the row tiles (B packed first; each thread packs its tiles' A).
 * Measured on this 2-CPU machine (median and 90th percentile of 20000
 * calls): 64 x 128 x 64 (1 MFLOP) 2.99 -> 2.11 us and 3.56 -> 3.02 us;
 * 128 x 64 x 64 2.79 -> 1.84 us; the digits MLP's training step 12.5 ->
 * 11.4 us (median of 7 rounds, alternating).  At 0.5 MFLOP the median
 * gained 0.2 us but the 90th percentile lost as much, and at 0.26 both
 * lost: the hand-over costs about 0.3 us. */

#define SMALL_MAX_FLOPS (4.0 * 1024 * 1024) /* frame/gemm.c's PARALLEL_MIN_FLOPS */
#define SMALL_SPLIT_FLOPS (768.0 * 1024)    /* and up: on two threads */
#define SMALL_B_UNITS 8192                  /* all of packed B: 32 KB of stack */
#define SMALL_MR_MAX 16

/* What a tile's epilogue does after the rounding: nothing; relu, as the
 * relu kernel would after the product (linear_relu); or +0 where y <= 0,
 * as relu_backward would (gemm_relu_backward).  Each kind is a function
 * of its own (small_epilogue_plain, _relu, _rbw) that the public entry
 * passes down, so a program links only the kinds of the entries it calls
 * (docs/runtime.md, "Small binaries"). */
enum { EPI_PLAIN, EPI_RELU, EPI_RELU_BACKWARD };

typedef struct small_epi small_epi;
/* The epilogue of a tile's first `rows` rows, their sums at acc[i * nv + v]. */
typedef void (*small_epilogue_fn)(const small_epi *e, const __m512 *acc, int rows, int nv);

struct small_epi {
    char *y;                /* the tile's top-left output element */
    size_t y_rs;            /* bytes between output rows */
    const char *c, *bias;   /* the same element of C, and of bias (NULL: none) */
    size_t c_rs;
    float alpha, beta;
    __mmask16 m0, m1;       /* columns of the tile's first and second 16 */
    const char *mask;       /* gemm_relu_backward: the same element of y (mask_rs is y_rs) */
    small_epilogue_fn fn;   /* the kind's epilogue */
};

/* relu on 16 bf16 values' bits, as the relu kernel does it: +0 where the
 * value is negative (sign set, magnitude in (0, inf]), else the value. */
AVX512BF16_TARGET static inline __m256i relu_bf16_bits(__m256i h)
{
    const __m256i mag = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    const __mmask16 neg = _mm256_test_epi16_mask(h, _mm256_set1_epi16((short)0x8000)) &
                          _mm256_test_epi16_mask(mag, mag) &
                          _mm256_cmple_epu16_mask(mag, _mm256_set1_epi16(0x7f80));
    return _mm256_maskz_mov_epi16((__mmask16)~neg, h);
}

/* relu_bf16_bits(round16_bf16(v)) in one instruction more than the
 * rounding: without subnormal lanes, max(+0, v) before vcvtneps2bf16 is
 * the same (vmaxps returns its second operand, v, for a NaN and for -0;
 * a negative v rounds to a negative bf16, never to -0, unless it is
 * subnormal).  Vectors with subnormals round by integers, then relu. */
AVX512BF16_TARGET static inline __m256i relu_round16_bf16(__m512 v)
{
    if (subnormal_lanes(v))
        return relu_bf16_bits(round16_bf16(v));
    return (__m256i)_mm512_cvtneps_pbh(_mm512_max_ps(_mm512_setzero_ps(), v));
}

/* gemm_relu_backward's lanes to keep: relu_backward's x <= 0 ? 0 : dy, as
 * f32, keeps the lanes where y (16 bf16 at yp, those of m) is > 0 or NaN. */
AVX512BF16_TARGET static inline __mmask16 relu_backward_keep(const char *yp, __mmask16 m)
{
    const __m256i yv = m == (__mmask16)0xffff ? _mm256_loadu_si256((const __m256i *)(const void *)yp)
                                              : _mm256_maskz_loadu_epi16(m, yp);
    const __m512 yf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(yv), 16));
    return _mm512_cmp_ps_mask(yf, _mm512_setzero_ps(), _CMP_NLE_UQ);
}

/* One vector of a tile: its sum s (epi's arithmetic applied) rounded to
 * bf16 (round16_bf16 tests it for subnormal lanes), the kind's step, and
 * the store of the lanes m at y (yp: gemm_relu_backward's y there). */
AVX512BF16_TARGET static AMP_ALWAYS_INLINE void small_out(char *y, const char *yp, __mmask16 m, __m512 s, int kind)
{
    __m256i h;
    if (kind == EPI_RELU)
        h = relu_round16_bf16(s);
    else if (kind == EPI_RELU_BACKWARD)
        h = _mm256_maskz_mov_epi16(relu_backward_keep(yp, m), round16_bf16(s));
    else
        h = round16_bf16(s);
    store_bf16_lanes(y, m, h);
}

/* The epilogue of a tile with an alpha or a C term (addmm's beta C, a
 * scaled product): epi's arithmetic (alpha product, beta C term, bias,
 * one rounding to bf16) and the kind's step, row by row.  One copy for
 * every kind and width, both chosen at run time: such tiles are rare next
 * to linear's, and a copy per kind and width was 1 KB each. */
AVX512BF16_TARGET static void small_epilogue_scaled(const small_epi *e, const __m512 *acc, int rows, int nv, int kind)
{
    char *y = e->y;
    const char *yp = kind == EPI_RELU_BACKWARD ? e->mask : e->y, *c = e->c;
    const size_t y_rs = e->y_rs, c_rs = e->c_rs;
    const float alpha = e->alpha;
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(e->beta);
    for (int i = 0; i < rows; i++, acc += nv, y += y_rs, yp += y_rs) {
        for (int v = 0; v < nv; v++) {
            const __mmask16 m = v ? e->m1 : e->m0;
            __m512 s = acc[v];
            if (alpha != 1.0f)
                s = _mm512_mul_ps(va, s);
            if (c != NULL)
                s = _mm512_add_ps(s, _mm512_mul_ps(vb, load16(AMP_BF16, c + (size_t)i * c_rs + (size_t)v * 32, m)));
            if (e->bias != NULL) /* not +0: that would turn a -0 sum into +0 */
                s = _mm512_add_ps(s, load16(AMP_BF16, e->bias + (size_t)v * 32, m));
            small_out(y + v * 32, yp + v * 32, m, s, kind);
        }
    }
}

/* The epilogue of a tile with neither (linear's, gemm's of alpha 1): a
 * bias add, the rounding to bf16 and the kind's few instructions per
 * vector, NV vectors a row, row by row from the sums the kernel left in
 * memory.  The fields are read once into locals (the stores through
 * char * may alias *e). */
AVX512BF16_TARGET static AMP_ALWAYS_INLINE void small_epilogue(const small_epi *e, const __m512 *acc, int rows,
                                                               const int NV, const int kind)
{
    char *y = e->y;
    const char *yp = kind == EPI_RELU_BACKWARD ? e->mask : e->y;
    const size_t y_rs = e->y_rs;
    const __mmask16 m0 = e->m0, m1 = e->m1;
    const int add_bias = e->bias != NULL; /* not +0: that would turn a -0 sum into +0 */
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (e->alpha != 1.0f || e->c != NULL) {
        small_epilogue_scaled(e, acc, rows, NV, kind);
        return;
    }
    if (add_bias) {
        bias0 = load16(AMP_BF16, e->bias, m0);
        if (NV == 2)
            bias1 = load16(AMP_BF16, e->bias + 32, m1);
    }
    for (int i = 0; i < rows; i++, acc += NV, y += y_rs, yp += y_rs) {
        small_out(y, yp, m0, add_bias ? _mm512_add_ps(acc[0], bias0) : acc[0], kind);
        if (NV == 2)
            small_out(y + 32, yp + 32, m1, add_bias ? _mm512_add_ps(acc[1], bias1) : acc[1], kind);
    }
}

/* The kinds' epilogues, each for one and two vectors a row. */
#define SMALL_EPILOGUE_OF(SUFFIX, KIND)                                                           \
    AVX512BF16_TARGET static void small_epilogue_##SUFFIX(const small_epi *e, const __m512 *acc,  \
                                                         int rows, int nv)                        \
    {                                                                                             \
        if (nv == 2)                                                                              \
            small_epilogue(e, acc, rows, 2, KIND);                                                \
        else                                                                                      \
            small_epilogue(e, acc, rows, 1, KIND);                                                \
    }
SMALL_EPILOGUE_OF(plain, EPI_PLAIN)
SMALL_EPILOGUE_OF(relu, EPI_RELU)
SMALL_EPILOGUE_OF(rbw, EPI_RELU_BACKWARD)

/* A tile reads A through one pointer per row: unit u (the k pair 2u,
 * 2u + 1) of row i is the 32-bit word at a + i * ars + u * aus.  Packed
 * panels [u][MRV] are ars 1, aus MRV; a row-major A with an even K (and
 * an even row stride) already holds each unit as the word u of its row,
 * the word its packed panel would hold, so it is read where it is (ars
 * the row stride in words, aus 1): for 64 x 64 and 64 x 128 activations
 * the panel copy cost a quarter of their products.  Rows past `rows`
 * read row 0 instead (their sums are never stored). */
AVX512BF16_TARGET static inline uint32_t word_at(const uint32_t *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof w); /* a bf16 row need only be 2-byte aligned */
    return w;
}
#define S_DECL2(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();
#define S_DECL1(i) __m512 c##i##a = _mm512_setzero_ps();
#define S_ROW(i) const uint32_t *a##i = a + (size_t)(i < rows ? i : 0) * ars;
#define S_STEP2(i)                                                                                \
    av = _mm512_set1_epi32((int)word_at(a##i + off));                                             \
    c##i##a = _mm512_dpbf16_ps(c##i##a, (__m512bh)av, (__m512bh)b0);                              \
    c##i##b = _mm512_dpbf16_ps(c##i##b, (__m512bh)av, (__m512bh)b1);
#define S_STEP1(i)                                                                                \
    av = _mm512_set1_epi32((int)word_at(a##i + off));                                             \
    c##i##a = _mm512_dpbf16_ps(c##i##a, (__m512bh)av, (__m512bh)b0);
#define S_SAVE2(i)                                                                                \
    acc[2 * i] = c##i##a;                                                                         \
    acc[2 * i + 1] = c##i##b;
#define S_SAVE1(i) acc[i] = c##i##a;

#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROWS12(X) ROWS8(X) X(8) X(9) X(10) X(11)
#define ROWS16(X) ROWS12(X) X(12) X(13) X(14) X(15)

/* An MRV x 16 NV tile: the chain of vdpbf16ps per output element over
 * B panel [u][16 NV], its sums then handed to e's epilogue in memory
 * (one epilogue per kind for every shape, rather than each shape's copy
 * of each kind's: the tiles were 250 KB that way, and every program
 * multiplying bf16 linked them all). */
#define SMALL_KERNEL(MRV, NV)                                                                     \
    AVX512BF16_TARGET static void small_##MRV##x##NV(int64_t kcu, const uint32_t *a, size_t ars,   \
                                                     size_t aus, const uint32_t *pb,              \
                                                     const small_epi *e, int rows)                \
    {                                                                                             \
        __m512 acc[MRV * NV];                                                                     \
        size_t off = 0;                                                                           \
        ROWS##MRV(S_DECL##NV)                                                                     \
        ROWS##MRV(S_ROW)                                                                          \
        for (int64_t u = 0; u < kcu; u++, off += aus) {                                           \
            __m512i b0 = _mm512_load_si512(pb), av;                                               \
            __m512i b1 = NV == 2 ? _mm512_load_si512(pb + 16) : b0;                               \
            (void)b1;                                                                             \
            ROWS##MRV(S_STEP##NV)                                                                 \
            pb += 16 * NV;                                                                        \
        }                                                                                         \
        ROWS##MRV(S_SAVE##NV)                                                                     \
        e->fn(e, acc, rows, NV);                                                                  \
    }
SMALL_KERNEL(12, 2)
SMALL_KERNEL(8, 2)
SMALL_KERNEL(12, 1)
SMALL_KERNEL(8, 1)
SMALL_KERNEL(16, 1)

typedef void (*small_fn)(int64_t, const uint32_t *, size_t, size_t, const uint32_t *, const small_epi *, int);

/* One small product's state, shared by the tasks of a split one. */
typedef struct {
    const amp_gemm_desc *d;
    const uint16_t *abase, *c, *bias, *mask;
    uint16_t *y;
    uint32_t *pb; /* packed B (small_pack_b writes it) */
    int64_t ob, kcu, npanels, mr, ntiles;
    int add_c;
    small_fn wide, last; /* the tile of every panel but the last, and of the last */
    small_epilogue_fn fn;
    int direct;          /* A read in place (else packed per row tile) */
    int narrow;
    const uint16_t *bbase; /* batch ob's B */
} small_job;

/* Panels [p0, p1) of batch j->ob's B packed into j->pb. */
AVX512BF16_TARGET static void small_pack_b(const small_job *j, int64_t p0, int64_t p1)
{
    const amp_gemm_desc *d = j->d;
    for (int64_t p = p0; p < p1; p++) {
        const int64_t j0 = p * 32, cols = d->N - j0 < 32 ? d->N - j0 : 32;
        const int W = p == j->npanels - 1 && j->last != j->wide ? 16 : j->narrow ? 16 : 32;
        pack_bf16_panel(j->bbase + j0 * d->b_stride[2], d->b_stride[2], d->b_stride[1], (int)cols, d->K,
                        j->pb + p * j->kcu * 32, W);
    }
}

/* Row tiles [t0, t1) of output batch j->ob over panels [p0, p1): each
 * tile's A panel packed (unless A is read in place), then its tiles
 * across those panels. */
AVX512BF16_TARGET static void small_tiles(const small_job *j, int64_t t0, int64_t t1, int64_t p0, int64_t p1)
{
    uint32_t pa[SMALL_MR_MAX * AMP_GEMM_KCU_MAX] __attribute__((aligned(64)));
    const amp_gemm_desc *d = j->d;
    const int64_t cb = d->sum_batch ? 0 : j->ob;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t i0 = t * j->mr;
        const int rows = (int)(d->M - i0 < j->mr ? d->M - i0 : j->mr);
        const uint16_t *arow = j->abase + i0 * d->a_stride[1];
        const uint32_t *a = pa;
        size_t ars = 1, aus = (size_t)j->mr;
        if (j->direct) {
            a = (const uint32_t *)(const void *)arow;
            ars = (size_t)d->a_stride[1] / 2;
            aus = 1;
        } else {
            pack_bf16_panel(arow, d->a_stride[1], d->a_stride[2], rows, d->K, pa, (int)j->mr);
        }
        for (int64_t p = p0; p < p1; p++) {
            const int64_t j0 = p * 32, cols = d->N - j0 < 32 ? d->N - j0 : 32;
            small_epi e;
            e.y = (char *)(j->y + (j->ob * d->M + i0) * d->N + j0);
            e.y_rs = (size_t)d->N * 2;
            e.c = j->add_c ? (const char *)(j->c + cb * d->c_stride[0] + i0 * d->c_stride[1] + j0) : NULL;
            e.c_rs = (size_t)d->c_stride[1] * 2;
            e.bias = j->bias != NULL ? (const char *)(j->bias + j0) : NULL;
            e.alpha = (float)d->alpha;
            e.beta = (float)d->beta;
            e.m0 = (__mmask16)(cols >= 16 ? 0xffff : (1u << cols) - 1);
            e.m1 = (__mmask16)(cols >= 32 ? 0xffff : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
            e.mask = j->mask != NULL ? (const char *)(j->mask + (j->ob * d->M + i0) * d->N + j0) : NULL;
            e.fn = j->fn;
            (p == j->npanels - 1 ? j->last : j->wide)(j->kcu, a, ars, aus, j->pb + p * j->kcu * 32, &e, rows);
        }
    }
}

/* Half `task` of a split product (SMALL_SPLIT_FLOPS): its panels, packed
 * here, when A is read in place; else its row tiles (B packed). */
AVX512BF16_TARGET static void small_half_task(void *ctx, int64_t task, int slot)
{
    const small_job *j = ctx;
    (void)slot;
    if (j->direct && j->npanels >= 2) {
        const int64_t half = (j->npanels + 1) / 2, p0 = task ? half : 0, p1 = task ? j->npanels : half;
        small_pack_b(j, p0, p1);
        small_tiles(j, 0, j->ntiles, p0, p1);
    } else {
        const int64_t half = (j->ntiles + 1) / 2;
        small_tiles(j, task ? half : 0, task ? j->ntiles : half, 0, j->npanels);
    }
}

/* y = alpha A B + beta C + bias as amp_fast_gemm with kernel_bf16 computes
 * it, when the problem is small (see above); returns 0, doing nothing,
 * otherwise.  Below SMALL_SPLIT_FLOPS on the calling thread: there the
 * hand-over to a second core costs about what it saves; from there on
 * two threads when that has measured cheaper (frame/small_split.c). */
AVX512BF16_TARGET static int small_gemm_bf16(const amp_gemm_desc *d, const uint16_t *a, const uint16_t *b,
                                             const uint16_t *c, const uint16_t *bias, small_epilogue_fn fn,
                                             const uint16_t *mask, uint16_t *y)
{
    uint32_t pb[SMALL_B_UNITS] __attribute__((aligned(64)));
    const int64_t out_batches = d->sum_batch ? 1 : d->batch;
    const int add_c = c != NULL && d->beta != 0.0;
    const double flops = 2.0 * (double)d->M * (double)d->N * (double)d->K * (double)d->batch;
    small_job j;
    int narrow;

    if (d->M <= 0 || d->N <= 0 || out_batches <= 0 || d->K <= 0 || d->K > 2 * AMP_GEMM_KCU_MAX ||
        (d->sum_batch && d->batch != 1) || (add_c && d->c_stride[2] != 1))
        return 0;
    if (flops >= SMALL_MAX_FLOPS)
        return 0;
    j.kcu = (d->K + 1) / 2;
    j.npanels = (d->N + 31) / 32;
    if (j.kcu * j.npanels * 32 > SMALL_B_UNITS)
        return 0;
    j.d = d;
    j.c = c;
    j.bias = bias;
    j.y = y;
    j.pb = pb;
    j.add_c = add_c;
    j.mask = mask;
    /* the tile: 16 x 16 for one narrow panel; else 8 or 12 rows (fewest
     * padded rows, 12 on a tie), 16 columns for a last panel of <= 16 */
    narrow = d->N <= 16;
    j.narrow = narrow;
    {
        /* the shapes: 16x1, 8x2, 12x2, 8x1, 12x1 */
        static const small_fn shapes[5] = { small_16x1, small_8x2, small_12x2, small_8x1, small_12x1 };
        int wide, last;
        if (narrow) {
            j.mr = 16;
            wide = last = 0;
        } else {
            j.mr = (d->M + 7) / 8 * 8 < (d->M + 11) / 12 * 12 ? 8 : 12;
            wide = j.mr == 8 ? 1 : 2;
            last = d->N - (j.npanels - 1) * 32 <= 16 ? wide + 2 : wide;
        }
        j.wide = shapes[wide];
        j.last = shapes[last];
    }
    j.fn = fn;
    j.direct = d->a_stride[2] == 1 && d->K % 2 == 0 && d->a_stride[1] % 2 == 0;
    j.ntiles = (d->M + j.mr - 1) / j.mr;
    /* two threads: enough work for each, and two halves to give them */
    const int splittable = AMP_SMALL_SPLIT_BUILT && flops / (double)out_batches >= SMALL_SPLIT_FLOPS &&
                           amp_get_threads() > 1 &&
                           ((j.direct && j.npanels >= 2) || j.ntiles >= 2);
    amp_split_stat *st = NULL;
    int split = 0, record = 0;
    uint64_t t0 = 0;
    if (splittable) {
        /* the shape (collisions only share a measurement) */
        st = amp_split_stat_of((uint64_t)d->M | (uint64_t)d->N << 20 | (uint64_t)d->K << 40 |
                           (uint64_t)j.direct << 62 | (uint64_t)(out_batches > 1) << 63);
        split = amp_split_choose(st, &record);
        t0 = __rdtsc();
    }
    for (int64_t ob = 0; ob < out_batches; ob++) {
        const int64_t bi = d->sum_batch ? 0 : ob;
        j.bbase = b + bi * d->b_stride[0];
        j.ob = ob;
        j.abase = a + bi * d->a_stride[0];
        if (split) {
            if (!j.direct || j.npanels < 2)
                small_pack_b(&j, 0, j.npanels);
            /* the pool busy with another of the program's threads: both
             * halves here rather than wait for it */
            if (!amp_parallel_try_run(2, 2, small_half_task, &j)) {
                small_half_task(&j, 0, 0);
                small_half_task(&j, 1, 0);
            }
            continue;
        }
        small_pack_b(&j, 0, j.npanels);
        small_tiles(&j, 0, j.ntiles, 0, j.npanels);
    }
    if (record)
        amp_split_record(st, split, __rdtsc() - t0);
    return 1;
}

/* ---- the sets ------------------------------------------------------------------- */

static const amp_gemm_kernel kernel_f32 = {
    "avx512-f32-12x32", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi, amp_avx512_conv_post,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, amp_avx512_dw_taps, NULL,
};
static const amp_gemm_kernel kernel_bf16_8 = {
    "avx512bf16-8x32", MR8, NR, 2, 256, 192, 512, micro_bf16_8, pack_a_bf16_8, pack_b_bf16, epi,
    amp_avx512bf16_conv_post, pack_b_im2col_bf16, pack_b_rows_bf16, pack_b_trows_bf16, pad_rows16, micro_out_bf16_8,
    NULL, micro_taps_bf16_8, micro_taps_out_bf16_8, amp_avx512_dw_taps, &kernel_f32,
};
static const amp_gemm_kernel kernel_bf16 = {
    "avx512bf16-12x32", MR, NR, 2, 256, 192, 512, micro_bf16, pack_a_bf16, pack_b_bf16, epi, amp_avx512bf16_conv_post,
    pack_b_im2col_bf16, pack_b_rows_bf16, pack_b_trows_bf16, pad_rows16, micro_out_bf16, &kernel_bf16_8,
    micro_taps_bf16, micro_taps_out_bf16, amp_avx512_dw_taps, &kernel_f32,
};

/* the products' descriptors: the above without the convolutions' hooks */
static const amp_gemm_kernel kernel_f32_products = {
    "avx512-f32-12x32", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
static const amp_gemm_kernel kernel_bf16_products = {
    "avx512bf16-12x32", MR, NR, 2, 256, 192, 512, micro_bf16, pack_a_bf16, pack_b_bf16, epi, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

ISA_GEMM_ENTRIES(avx512, f32, &kernel_f32, &kernel_f32_products)
ISA_GEMM_ENTRIES(avx512, bf16, &kernel_f32, &kernel_f32_products)
ISA_GEMM_ENTRIES(avx512, f16, &kernel_f32, &kernel_f32_products)
ISA_GEMM_ENTRIES(avx512bf16, bf16, &kernel_bf16, &kernel_bf16_products)

/* The avx512bf16 set's bf16 gemm, linear and matmul: small_gemm_bf16 when
 * it applies, else the blocked driver (the same result either way). */
static void avx512bf16s_gemm_bf16(const amp_gemm_desc *d, const amp_bf16 *a, const amp_bf16 *b, const amp_bf16 *c,
                                  amp_bf16 *y)
{
    if (!small_gemm_bf16(d, (const uint16_t *)a, (const uint16_t *)b, (const uint16_t *)c, NULL,
                         small_epilogue_plain, NULL, (uint16_t *)y))
        avx512bf16_gemm_bf16(d, a, b, c, y);
}

/* y = x w^T + bias through small_gemm_bf16 with the epilogue fn: 0
 * when the product is not small (nothing done). */
static int small_linear_bf16(int64_t M, int64_t N, int64_t K, const amp_bf16 *x, const amp_bf16 *w,
                             const amp_bf16 *bias, small_epilogue_fn fn, amp_bf16 *y)
{
    amp_gemm_desc d = { 1, M, N, K, { 0, K, 1 }, { 0, 1, K }, { 0, 0, 0 }, 1.0, 0.0, 0 };
    return small_gemm_bf16(&d, (const uint16_t *)x, (const uint16_t *)w, NULL, (const uint16_t *)bias, fn, NULL,
                           (uint16_t *)y);
}

static void avx512bf16s_linear_bf16(int64_t M, int64_t N, int64_t K, const amp_bf16 *x, const amp_bf16 *w,
                                    const amp_bf16 *bias, amp_bf16 *y)
{
    if (!small_linear_bf16(M, N, K, x, w, bias, small_epilogue_plain, y))
        avx512bf16_linear_bf16(M, N, K, x, w, bias, y);
}

/* gemm_relu_backward: the mask in the small path's epilogue, else after
 * the blocked product (the same bits either way). */
static void avx512bf16s_gemm_relu_backward_bf16(const amp_gemm_desc *d, const amp_bf16 *a, const amp_bf16 *b,
                                                const amp_bf16 *y, amp_bf16 *dx)
{
    if (!small_gemm_bf16(d, (const uint16_t *)a, (const uint16_t *)b, NULL, NULL, small_epilogue_rbw,
                         (const uint16_t *)y, (uint16_t *)dx))
        avx512bf16_gemm_relu_backward_bf16(d, a, b, y, dx);
}

/* linear_relu: the relu in the small path's epilogue, else after the
 * blocked product (the same bits either way). */
static void avx512bf16s_linear_relu_bf16(int64_t M, int64_t N, int64_t K, const amp_bf16 *x, const amp_bf16 *w,
                                         const amp_bf16 *bias, amp_bf16 *y)
{
    if (!small_linear_bf16(M, N, K, x, w, bias, small_epilogue_relu, y))
        avx512bf16_linear_relu_bf16(M, N, K, x, w, bias, y);
}

static void avx512bf16s_matmul_bf16(int64_t batch, int64_t M, int64_t N, int64_t K, const amp_bf16 *a,
                                    int64_t a_batch_stride, const amp_bf16 *b, int64_t b_batch_stride, amp_bf16 *c)
{
    amp_gemm_desc d = { batch, M, N, K, { a_batch_stride, K, 1 }, { b_batch_stride, N, 1 }, { 0, 0, 0 }, 1.0, 0.0, 0 };
    if (!small_gemm_bf16(&d, (const uint16_t *)a, (const uint16_t *)b, NULL, NULL, small_epilogue_plain, NULL,
                         (uint16_t *)c))
        avx512bf16_matmul_bf16(batch, M, N, K, a, a_batch_stride, b, b_batch_stride, c);
}

ISA_LINEAR_EX_ENTRIES(avx512, f32, &kernel_f32_products, avx512_linear_f32, avx512_linear_relu_f32, 0)
ISA_LINEAR_EX_ENTRIES(avx512, bf16, &kernel_f32_products, avx512_linear_bf16, avx512_linear_relu_bf16, 0)
ISA_LINEAR_EX_ENTRIES(avx512, f16, &kernel_f32_products, avx512_linear_f16, avx512_linear_relu_f16, 0)
/* packed weights: the small path where B is small enough that packing it
 * per call costs less than the driver's bookkeeping (64 x 10 x 128 1.7 us
 * on it, 3.9 on the driver; 8 x 120 x 400 6.4 us on the driver, 9.9 on it) */
ISA_LINEAR_EX_ENTRIES(avx512bf16, bf16, &kernel_bf16_products, avx512bf16s_linear_bf16, avx512bf16s_linear_relu_bf16,
                      (N) * (K) <= 16384 && 2.0 * (double)(M) * (double)(N) * (double)(K) < SMALL_MAX_FLOPS)

/* This file's kernels of the sets: X(kernel, implementation); avx512bf16's
 * products are its small-product paths in front of its GEMM. */
#define GEMM_KERNELS(X)                                                                           \
    ISA_GEMM_KERNELS(X, avx512, f32) ISA_GEMM_KERNELS(X, avx512, bf16) ISA_GEMM_KERNELS(X, avx512, f16)
#define BF16_GEMM_KERNELS(X)                                                                      \
    ISA_GEMM_CONV_KERNELS(X, avx512bf16, bf16)                                                    \
    X(gemm_bf16, avx512bf16s_gemm_bf16)                                                           \
    X(linear_bf16, avx512bf16s_linear_bf16)                                                       \
    X(linear_relu_bf16, avx512bf16s_linear_relu_bf16)                                             \
    ISA_GEMM_LINEAR_EX_KERNELS(X, avx512bf16, bf16)                                               \
    X(gemm_relu_backward_bf16, avx512bf16s_gemm_relu_backward_bf16)                               \
    X(matmul_bf16, avx512bf16s_matmul_bf16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
GEMM_KERNELS(DEFINE)
#undef DEFINE
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512bf16, name, impl)
BF16_GEMM_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    GEMM_KERNELS(INSTALL)
#undef INSTALL
    amp_isa_avx512_fill_eltwise(t);
    amp_isa_avx512_fill_backward(t);
    amp_isa_avx512_fill_norm(t);
    amp_isa_avx512_fill_clamp(t);
    amp_isa_avx512_fill_reduce(t);
    amp_isa_avx512_fill_loss(t);
    amp_isa_avx512_fill_rows(t);
    amp_isa_avx512_fill_attention(t);
    amp_isa_avx512_fill_scalar_arith(t);
}

void amp_isa_avx512bf16_fill(amp_kernel_table *t)
{
    amp_isa_avx512_fill(t);
    amp_isa_avx512bf16_fill_eltwise(t);
    amp_isa_avx512bf16_fill_attention(t);
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512bf16, name);
    BF16_GEMM_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
