/*
 * avx2_conv_rows.c - the avx2 set's convolution kernels that read B from
 * zero-padded rows of a bf16 input (frame/conv_pack.c's copies) instead of
 * im2col rows: pack_b_rows, which packs a B unit row straight from them
 * (one pass, bf16 widened to the f32 units of the 6 x 16 micro-kernel;
 * strides 1 and 2), and micro_taps / micro_taps_out, which for a stride-1
 * convolution read them in the micro-kernel's loop and pack no B at all
 * (frame/conv_taps.c's taps mode).  Contracts (kpair 1) in
 * amprt_internal.h.
 *
 * micro_taps loads a unit's 16 columns as one 32-byte load and widens them
 * by interleaving with zeros within each 128-bit lane (a bf16 in the high
 * half of a 32-bit lane is its f32): the two vectors hold columns 0-3, 8-11
 * and 4-7, 12-15, and the accumulators keep that order until the tile is
 * stored, when two lane permutes restore it.  No shift competes with the
 * FMAs for their ports.  Every sum is the packed micro-kernel's (x86/avx2.c):
 * the same f32 units, FMAs in the same k order, w's partial sums added
 * last, and micro_taps_out rounds as its store8 does.
 * Compiled for AVX2 through target attributes only; runs only after
 * dispatch.c's CPU check.
 */

#include <string.h>

#include "x86/avx2_conv.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))

#define NR 16

/* ---- pack_b_rows --------------------------------------------------------------- */

/* 8 bf16 at p, p + stride, ... (stride 1 or 2) as f32.  Stride 2 reads 16
 * elements: each 32-bit lane's low half shifted up is its f32. */
TARGET static inline __m256 widen8(const uint16_t *p, int64_t stride)
{
    if (stride == 1)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)p)), 16));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256((const void *)p), 16));
}

/* the first n (0..7) lanes' mask for maskstore */
TARGET static inline __m256i first_lanes(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* columns [c, e) of a unit row (panel c / NR's lanes) set to 0 */
static void zero_columns(float *dst, int64_t kcu, int64_t c, int64_t e)
{
    for (; c < e; c++)
        dst[c / NR * kcu * NR + c % NR] = 0.0f;
}

TARGET static AMP_ALWAYS_INLINE void pack_rows_body(int64_t stride, const int64_t *col, const int64_t *off,
                                                    int64_t nruns, const uint16_t *s, int64_t kcu, float *dst)
{
    for (int64_t ri = 0; ri < nruns; ri++) {
        const int64_t len = col[ri + 1] - col[ri];
        const uint16_t *run = s + off[ri];
        for (int64_t q = 0; q < len;) {
            const int64_t c = col[ri] + q, n = NR - c % NR < len - q ? NR - c % NR : len - q;
            float *o = dst + c / NR * kcu * NR + c % NR;
            const uint16_t *p = run + q * stride;
            int64_t i = 0;
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(o + i, widen8(p + i * stride, stride));
            if (i < n) /* (reads up to 16 elements past: the copy's slack) */
                _mm256_maskstore_ps(o + i, first_lanes(n - i), widen8(p + i * stride, stride));
            q += n;
        }
    }
}

/* pack_b_rows (contract in amprt_internal.h), kpair 1: unit u of run ri's
 * column q is src[0][off[ri] + q stride] widened to f32 (src[1] unused). */
TARGET void amp_avx2_pack_b_rows_bf16(int64_t stride, const int64_t *col, const int64_t *off, int64_t nruns,
                                      const void *const src[2], int64_t kcu, void *dst_)
{
    float *dst = dst_;
    const int64_t end = col[nruns], padded_end = (end + NR - 1) / NR * NR;
    if (src[0] == NULL) {
        zero_columns(dst, kcu, 0, padded_end);
        return;
    }
    if (stride == 1)
        pack_rows_body(1, col, off, nruns, src[0], kcu, dst);
    else
        pack_rows_body(2, col, off, nruns, src[0], kcu, dst);
    zero_columns(dst, kcu, end, padded_end);
}

/* ---- micro_taps ---------------------------------------------------------------- */

#define DECL_ROW(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = _mm256_setzero_ps();

#define TAPS_ROW(i)                                                                               \
    av = _mm256_broadcast_ss(pa + i);                                                             \
    c##i##a = _mm256_fmadd_ps(av, b0, c##i##a);                                                   \
    c##i##b = _mm256_fmadd_ps(av, b1, c##i##b);

/* The k loop: per unit, the 16 columns at src + off[u], widened to
 * columns 0-3, 8-11 (b0) and 4-7, 12-15 (b1). */
#define TAPS_K_LOOP(ROWS_OF, MRV)                                                                 \
    const __m256i zero = _mm256_setzero_si256();                                                  \
    ROWS_OF(DECL_ROW)                                                                             \
    for (int64_t u = 0; u < kcu; u++) {                                                           \
        const __m256i x = _mm256_loadu_si256((const void *)(src + off[u]));                       \
        const __m256 b0 = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x));                    \
        const __m256 b1 = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x));                    \
        __m256 av;                                                                                \
        ROWS_OF(TAPS_ROW)                                                                         \
        pa += MRV;                                                                                \
    }

/* row i's sums in column order (lo: 0-7, hi: 8-15), w's added when
 * accumulate */
#define ORDER_ROW(i)                                                                              \
    const __m256 lo##i = _mm256_permute2f128_ps(c##i##a, c##i##b, 0x20);                          \
    const __m256 hi##i = _mm256_permute2f128_ps(c##i##a, c##i##b, 0x31);                          \
    const __m256 s##i##a = accumulate ? _mm256_add_ps(_mm256_load_ps(w + i * ldw), lo##i) : lo##i; \
    const __m256 s##i##b = accumulate ? _mm256_add_ps(_mm256_load_ps(w + i * ldw + 8), hi##i) : hi##i;

#define STORE_ROW(i)                                                                              \
    {                                                                                             \
        ORDER_ROW(i)                                                                              \
        _mm256_store_ps(w + i * ldw, s##i##a);                                                    \
        _mm256_store_ps(w + i * ldw + 8, s##i##b);                                                \
    }

/* 8 sums rounded to bf16 as x86/avx2.c's store8 rounds them (nearest
 * even, NaN quieted) */
TARGET static inline __m128i round8_bf16(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                 _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

/* row i rounded, each segment's columns (contiguous bits of its mask)
 * copied to element i ldy + at + c of y */
#define TAPS_OUT_ROW(i)                                                                           \
    if (i < rows) {                                                                               \
        ORDER_ROW(i)                                                                              \
        uint16_t tmp[NR];                                                                         \
        _mm_storeu_si128((void *)tmp, round8_bf16(s##i##a));                                      \
        _mm_storeu_si128((void *)(tmp + 8), round8_bf16(s##i##b));                                \
        for (int s = 0; s < nseg; s++) {                                                          \
            const int a = __builtin_ctz(seg[s].mask), n = __builtin_popcount(seg[s].mask);       \
            /* (uintptr_t: a segment's column 0 may lie before y) */                              \
            memcpy((void *)((uintptr_t)y + (uintptr_t)((i * ldy + seg[s].at + a) * 2)), tmp + a,  \
                   (size_t)n * 2);                                                                \
        }                                                                                         \
    }

#define TAPS_MICRO(NAME, ROWS_OF, MRV)                                                            \
    TARGET void NAME(int64_t kcu, const void *pa_, const void *src_, const int32_t *off, float *w, int64_t ldw, \
                     int accumulate)                                                              \
    {                                                                                             \
        const float *pa = pa_;                                                                    \
        const uint16_t *src = src_;                                                               \
        TAPS_K_LOOP(ROWS_OF, MRV)                                                                 \
        ROWS_OF(STORE_ROW)                                                                        \
    }

#define TAPS_MICRO_OUT(NAME, ROWS_OF, MRV)                                                        \
    TARGET void NAME(int64_t kcu, const void *pa_, const void *src_, const int32_t *off, const float *w, \
                     int64_t ldw, int accumulate, void *y, int64_t ldy, int rows, const amp_tap_seg *seg, \
                     int nseg)                                                                    \
    {                                                                                             \
        const float *pa = pa_;                                                                    \
        const uint16_t *src = src_;                                                               \
        TAPS_K_LOOP(ROWS_OF, MRV)                                                                 \
        ROWS_OF(TAPS_OUT_ROW)                                                                     \
    }

#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS4(X) X(0) X(1) X(2) X(3)

TAPS_MICRO(amp_avx2_micro_taps_f32, ROWS6, 6)
TAPS_MICRO(amp_avx2_micro_taps_f32_4, ROWS4, 4)
TAPS_MICRO_OUT(amp_avx2_micro_taps_out_f32, ROWS6, 6)
TAPS_MICRO_OUT(amp_avx2_micro_taps_out_f32_4, ROWS4, 4)

#endif /* x86 */
