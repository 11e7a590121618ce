/* avx512_store.h: the AVX-512 store every AVX-512 kernel file rounds
 * its f32 results with (x86/avx512.c's GEMM epilogue, x86/avx512_eltwise.c,
 * x86/avx512_backward.c), so that all round exactly as the reference's
 * amp_st does, and its AVX512-BF16 form; the element-wise kernels'
 * unmasked loads; and which NaN a sum or product keeps, with batch_norm's
 * per-element step built on it (x86/avx512_eltwise.c, avx512_norm.c). */
#ifndef AMPRT_ISA_AVX512_STORE_H
#define AMPRT_ISA_AVX512_STORE_H

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "amprt_internal.h"

#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

/* 16 lanes' low 16-bit halves stored at p (lanes of m): gathered in a
 * register by vpermw and stored as 32 bytes, masked only at a tail.  Not
 * _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(r)): compilers fold
 * that into vpmovdw to memory with a mask, which is slow on Zen (a third
 * of batch_norm_backward's time, measured). */
AVX512_TARGET static inline void store_words16(void *p, __mmask16 m, __m512i r)
{
    const __m512i even = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 28, 26, 24, 22, 20,
                                          18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m256i h = _mm512_castsi512_si256(_mm512_permutexvar_epi16(even, r));
    if (m == (__mmask16)0xffff)
        _mm256_storeu_si256((__m256i *)p, h);
    else
        _mm256_mask_storeu_epi16(p, m, h);
}

/* 16 f32 lanes rounded to bf16 as amp_st does (nearest even, NaN
 * quieted), by integers: each lane's low 16 bits. */
AVX512_TARGET static inline __m512i bf16_words_of(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                 _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    r = _mm512_srli_epi32(r, 16);
    return _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
}

/* Round 16 f32 lanes to dtype t as amp_st does (bf16: nearest even, NaN
 * quieted; f16: vcvtps2ph, nearest even) and store the lanes of m. */
AVX512_TARGET static inline void store16(amp_dtype t, void *p, __mmask16 m, __m512 v)
{
    switch (t) {
    case AMP_BF16:
        store_words16(p, m, bf16_words_of(v));
        return;
    case AMP_F16: {
        const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (m == (__mmask16)0xffff)
            _mm256_storeu_si256((__m256i *)p, h);
        else
            _mm256_mask_storeu_epi16(p, m, h);
        return;
    }
    default: _mm512_mask_storeu_ps(p, m, v); return;
    }
}

/* 16 values of dtype t (f32, bf16, f16) at p as f32, as amp_ld reads
 * them (bf16: a signalling NaN quieted; vcvtph2ps does that for f16), all
 * lanes, unmasked; and store16 of all 16 lanes, unmasked.  The element-wise
 * kernels' main loops run on these and leave masks to one tail (a
 * constant all-ones mask still costs a mask register and, stored, a slower
 * instruction). */
AVX512_TARGET static inline __m512 load16_all(amp_dtype t, const void *p)
{
    switch (t) {
    case AMP_BF16: {
        const __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                      _mm512_set1_epi32(0x7f800000));
        return _mm512_castsi512_ps(_mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000)));
    }
    case AMP_F16: return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    default: return _mm512_loadu_ps(p);
    }
}

AVX512_TARGET static inline void store16_all(amp_dtype t, void *p, __m512 v)
{
    if (t == AMP_F32)
        _mm512_storeu_ps(p, v);
    else
        store16(t, p, (__mmask16)0xffff, v);
}

#define AVX512BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))

/* Lanes of v holding a subnormal f32 (exponent 0, mantissa not 0): the
 * lanes vcvtneps2bf16 would read as zero.  Callers with several vectors
 * OR these and test once. */
AVX512_TARGET static inline __mmask16 subnormal_lanes(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    return _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)), u,
                                       _mm512_set1_epi32(0x007fffff));
}

/* store16(AMP_BF16, ...) for code compiled for AVX512-BF16 (the
 * avx512bf16 set's GEMM epilogues and its f32 -> bf16 cast):
 * vcvtneps2bf16 rounds as amp_st does (nearest even; a NaN keeps its top
 * bits, quieted) except that it reads subnormal inputs as zero, so a
 * vector holding one takes store16's integer rounding instead.  One
 * conversion in place of a dozen integer operations: the epilogue of a
 * small GEMM's tile (K = 64) was a fifth of its time.  round16_bf16 is
 * the rounding alone, the 16 bf16 values in a register. */
AVX512BF16_TARGET static inline __m256i round16_bf16(__m512 v)
{
    if (subnormal_lanes(v))
        return _mm512_cvtepi32_epi16(bf16_words_of(v)); /* store16's integer rounding */
    return (__m256i)_mm512_cvtneps_pbh(v);
}

/* 16 bf16 (or f16) words into the lanes m of p. */
AVX512_TARGET static inline void store_bf16_lanes(void *p, __mmask16 m, __m256i h)
{
    if (m == (__mmask16)0xffff) /* a masked store is slow on Zen even with every lane set */
        _mm256_storeu_si256((__m256i *)p, h);
    else
        _mm256_mask_storeu_epi16(p, m, h);
}

AVX512BF16_TARGET static inline void store16_bf16(void *p, __mmask16 m, __m512 v)
{
    store_bf16_lanes(p, m, round16_bf16(v));
}

/* relu_backward of 16 f32 lanes, on the bits: g where x > 0 or NaN, else
 * +0 (x <= 0: +-0, or the sign set and not NaN). */
AVX512_TARGET static inline __m512i relu_bw32(__m512i xv, __m512i g)
{
    const __m512i mag = _mm512_and_si512(xv, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 le0 = _mm512_testn_epi32_mask(mag, mag) |
                          (_mm512_test_epi32_mask(xv, _mm512_set1_epi32((int)0x80000000u)) &
                           _mm512_cmple_epu32_mask(mag, _mm512_set1_epi32(0x7f800000)));
    return _mm512_maskz_mov_epi32((__mmask16)~le0, g);
}

/* ---- which NaN -------------------------------------------------------------------
 * Of two NaN operands, x86 returns the first source's (quieted); but
 * multiplication and addition commute, and a compiler (clang does) may
 * swap _mm512_mul_ps(a, b)'s operands, so which NaN comes out of a + b or
 * a * b would depend on the compiler and on the code around it.  The
 * kernels that must agree with each other bit for bit (batch_norm
 * and add, and conv_ex's post, which repeats them) therefore fix it: a
 * NaN a gives a, quieted, whatever the order (a + b and a * b with one
 * NaN operand give that one either way).  The fix runs only for vectors
 * whose result has a NaN lane, so ordinary data pays one compare. */

/* lanes where a is NaN take a, quieted, instead of r */
AVX512_TARGET static inline __m512 nan_of_first(__m512 a, __m512 r)
{
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q),
                              _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x00400000))));
}

/* batch_norm's ((v - mean) * rstd) [* w] [+ b], each step's NaN operand
 * on the left winning (v - mean: the subtraction does not commute). */
AVX512_TARGET static inline __m512 bn16(__m512 v, __m512 mean, __m512 rstd, __m512 w, __m512 b, int has_w, int has_b)
{
    const __m512 d = _mm512_sub_ps(v, mean);
    __m512 r = _mm512_mul_ps(d, rstd), rw, rb;
    if (has_w)
        r = _mm512_mul_ps(r, w);
    if (has_b)
        r = _mm512_add_ps(r, b);
    if (!_mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q))
        return r;
    r = nan_of_first(d, _mm512_mul_ps(d, rstd));
    rw = has_w ? nan_of_first(r, _mm512_mul_ps(r, w)) : r;
    rb = has_b ? nan_of_first(rw, _mm512_add_ps(rw, b)) : rw;
    return rb;
}

/* bytes per element of those three dtypes, a constant where t is */
static inline size_t size_of_storage(amp_dtype t) { return t == AMP_F32 ? 4 : 2; }

#endif
#endif
