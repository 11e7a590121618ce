/*
 * avx2_conv_pack.c - the avx2 set's packing of f32 micro-panels whose
 * source runs along k (a panel's rows are contiguous in k, ws elements
 * apart): the convolutions' A panels of row-major weights ([M][K], every
 * step of training packs them anew) and the weight gradient's B panels
 * (the im2col rows, [K][P], read as P x K), which x86/avx2.c's
 * pack_f32_panel hands here, and the small products' B panels of a
 * linear's weights (x86/avx2_small.c's pack_2d).  8 x 8 blocks are loaded along k (bf16
 * widened by a shift, as that packing's contiguous path widens them),
 * transposed in registers and stored as 8 units of 8 panel lanes; the
 * scalar loop it replaced (one amp_ld per element) was 13% of a resnet18
 * training step on this set.  Also pack_b_trows at kpair 1: the direct
 * weight gradient's B (frame/conv_wgrad_direct.c), each panel column a
 * row of bf16 (one tap's input elements over output positions), widened
 * and transposed the same way.  The same f32 values in the same places
 * (a signalling NaN is left for the FMA to quiet, as amp_ld would have):
 * the products are bit for bit the scalar packing's.
 * Compiled for AVX2 through target attributes only; runs only after
 * dispatch.c's CPU check.
 */

#include <string.h>

#include "x86/avx2_conv.h"
#include "x86/avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))

/* 8 elements of dtype t (f32 or bf16) at p as f32 */
TARGET static inline __m256 load8_f32(amp_dtype t, const char *p)
{
    if (t == AMP_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)p)), 16));
    return _mm256_loadu_ps((const float *)(const void *)p);
}

TARGET static AMP_ALWAYS_INLINE void pack_along_k_body(amp_dtype t, const void *base, int64_t ws, int width,
                                                       int64_t k, float *dst, int W)
{
    const size_t es = t == AMP_BF16 ? 2 : 4, rs = (size_t)ws * es;
    const int64_t k8 = k & ~(int64_t)7;
    for (int i0 = 0; i0 < W; i0 += 8) {
        const int lanes = W - i0 < 8 ? W - i0 : 8;
        const int real = width - i0 < 0 ? 0 : width - i0 < 8 ? width - i0 : 8; /* rows past width: zeros */
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const char *p = (const char *)base + (size_t)i0 * rs;
        for (int64_t kk = 0; kk < k8; kk += 8, p += 8 * es) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = i < real ? load8_f32(t, p + (size_t)i * rs) : _mm256_setzero_ps();
            avx2_transpose8(r);
            for (int e = 0; e < 8; e++) {
                if (lanes == 8)
                    _mm256_storeu_ps(dst + (kk + e) * W + i0, r[e]);
                else
                    _mm256_maskstore_ps(dst + (kk + e) * W + i0, mask, r[e]);
            }
        }
        for (int64_t kk = k8; kk < k; kk++)
            for (int i = i0; i < i0 + lanes; i++)
                dst[kk * W + i] = i < width ? amp_ld(t, base, i * ws + kk) : 0.0f;
    }
}

/* A panel of W (a multiple of 8, or 6 or 4) lanes: element (i, kk), at
 * base + i ws + kk (elements of t, f32 or bf16), to dst[kk W + i]; lanes
 * i >= width are 0. */
TARGET void amp_avx2_pack_along_k(amp_dtype t, const void *base, int64_t ws, int width, int64_t k, float *dst, int W)
{
    if (t == AMP_BF16)
        pack_along_k_body(AMP_BF16, base, ws, width, k, dst, W);
    else
        pack_along_k_body(AMP_F32, base, ws, width, k, dst, W);
}

/* pack_b_trows (contract in amprt_internal.h), kpair 1: unit u of column
 * i (< 16) is rows[i][u] (bf16) widened to f32, at dst[u 16 + i].  Each
 * half of the panel's columns goes as 8 x 8 blocks, 8 units of 8 rows
 * loaded, transposed and stored as 8 units of 8 lanes; the units past the
 * last multiple of 8 through a zeroed copy of their elements, so that no
 * row is read past its units (the rows may end at the end of their
 * buffer) and no unit past them is written (the next output row's units
 * follow in the panel). */
TARGET void amp_avx2_pack_b_trows_bf16(const void *const *rows, int64_t units, void *dst_)
{
    float *dst = dst_;
    const int64_t units8 = units & ~(int64_t)7, rest = units - units8;
    for (int i0 = 0; i0 < 16; i0 += 8) {
        __m256 r[8];
        for (int64_t u = 0; u < units8; u += 8) {
            for (int i = 0; i < 8; i++)
                r[i] = load8_f32(AMP_BF16, (const char *)rows[i0 + i] + 2 * u);
            avx2_transpose8(r);
            for (int e = 0; e < 8; e++)
                _mm256_storeu_ps(dst + (u + e) * 16 + i0, r[e]);
        }
        if (rest == 0)
            continue;
        for (int i = 0; i < 8; i++) {
            uint16_t tail[8] = { 0 };
            memcpy(tail, (const uint16_t *)rows[i0 + i] + units8, (size_t)rest * 2);
            r[i] = load8_f32(AMP_BF16, (const char *)tail);
        }
        avx2_transpose8(r);
        for (int e = 0; e < rest; e++)
            _mm256_storeu_ps(dst + (units8 + e) * 16 + i0, r[e]);
    }
}

#endif /* x86 */
