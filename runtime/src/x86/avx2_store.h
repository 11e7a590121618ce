/* avx2_store.h: what the AVX2 kernel files beyond the GEMM share (the
 * "avx2" set: AVX2 + FMA + F16C, no AVX-512): loads that widen 8 values
 * of f32, bf16 or f16 storage to f32 exactly as the reference's amp_ld
 * reads them, the store that rounds 8 f32 lanes to the storage dtype
 * exactly as amp_st does, their forms for a tail of fewer than 8 values
 * (through a zeroed 32-byte buffer: AVX2 has no masked 16-bit loads and
 * stores; or read whole and masked where 8 values may be read), an 8 x 8
 * transpose in registers, the bit-level relu and relu_backward tests, and
 * the pooled, chunked loop the element-wise kernels run on
 * (frame/chunked.h's).
 * bf16 storage computes in f32 here: conversion by shifts, with
 * round-to-nearest-even and NaN quieting; f16 by F16C. */
#ifndef AMPRT_ISA_AVX2_STORE_H
#define AMPRT_ISA_AVX2_STORE_H

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/chunked.h"

#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

/* r[i] lane j <- r[j] lane i: an 8 x 8 block of f32 transposed in
 * registers */
AVX2_TARGET static inline void avx2_transpose8(__m256 r[8])
{
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

/* bytes per element of f32, bf16, f16, a constant where t is */
static inline size_t avx2_size_of(amp_dtype t) { return t == AMP_F32 ? 4 : 2; }

/* f32 bits of bf16 values (in the high halves of 32-bit lanes), a
 * signalling NaN quieted as amp_bf16_to_f32 does.  The magnitude compare
 * is signed, exact for magnitudes below 2^31. */
AVX2_TARGET static inline __m256 avx2_bf16_bits_to_f32(__m256i u)
{
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    return _mm256_castsi256_ps(_mm256_or_si256(u, _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000))));
}

/* 8 values of dtype t at p as f32, as amp_ld reads them, except that a
 * bf16 signalling NaN is not quieted: every kernel computes on what it
 * loads (an arithmetic operation quiets it) or stores it as bf16
 * (avx2_store8 quiets it) or compares it, so the result is the same and
 * the loads are 3 operations shorter; the casts to f32 read through
 * avx2_load8_quiet.  (vcvtph2ps quiets f16's.) */
AVX2_TARGET static inline __m256 avx2_load8(amp_dtype t, const void *p)
{
    switch (t) {
    case AMP_BF16: return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
    case AMP_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    default: return _mm256_loadu_ps((const float *)p);
    }
}

/* avx2_load8 exactly as amp_ld reads (bf16: a signalling NaN quieted). */
AVX2_TARGET static inline __m256 avx2_load8_quiet(amp_dtype t, const void *p)
{
    const __m256 v = avx2_load8(t, p);
    return t == AMP_BF16 ? avx2_bf16_bits_to_f32(_mm256_castps_si256(v)) : v;
}

/* 8 f32 lanes rounded to bf16 as amp_st does (nearest even, a NaN keeps
 * its top bits, quieted), each lane's low 16 bits. */
AVX2_TARGET static inline __m256i avx2_bf16_words_of(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), _mm256_and_si256(hi, _mm256_set1_epi32(1))),
        16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}

/* ---- 16 bf16 values as two vectors, no shuffles: the even elements (0, 2,
 * ..., 14) and the odd ones, each the f32 its bits are (a signalling NaN
 * left as avx2_load8 leaves it).  For kernels that compute element by
 * element: the two vectors are stored back interleaved as they came by
 * avx2_store16_bf16, so the order never matters, and neither the load nor
 * the store crosses lanes (the widening and packing shuffles of
 * avx2_load8 and avx2_store8 share one port, which bounded the bf16
 * loops). */
AVX2_TARGET static inline void avx2_load16_bf16(const void *p, __m256 *even, __m256 *odd)
{
    const __m256i w = _mm256_loadu_si256((const __m256i *)p);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u)));
}

/* v rounded to bf16 as avx2_bf16_words_of rounds it, in the high halves
 * (the low halves 0). */
AVX2_TARGET static inline __m256i avx2_bf16_high_of(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                 _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan)) /* a NaN keeps its top bits, quieted */
        r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), _mm256_castps_si256(nan));
    return _mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u));
}

AVX2_TARGET static inline void avx2_store16_bf16(void *p, __m256 even, __m256 odd)
{
    _mm256_storeu_si256((__m256i *)p, _mm256_or_si256(_mm256_srli_epi32(avx2_bf16_high_of(even), 16),
                                                      avx2_bf16_high_of(odd)));
}

/* The low 16 bits of 8 32-bit lanes (each below 2^16), packed in order. */
AVX2_TARGET static inline __m128i avx2_pack_words(__m256i r)
{
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

/* Round 8 f32 lanes to dtype t as amp_st does and store them at p. */
AVX2_TARGET static inline void avx2_store8(amp_dtype t, void *p, __m256 v)
{
    switch (t) {
    case AMP_BF16: _mm_storeu_si128((__m128i *)p, avx2_pack_words(avx2_bf16_words_of(v))); return;
    case AMP_F16: _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); return;
    default: _mm256_storeu_ps((float *)p, v); return;
    }
}

/* v rounded to dtype t and widened back, as avx2_store8 then avx2_load8
 * give it (bf16: the rounded value is never a signalling NaN). */
AVX2_TARGET static inline __m256 avx2_round8(amp_dtype t, __m256 v)
{
    switch (t) {
    case AMP_BF16: return _mm256_castsi256_ps(_mm256_slli_epi32(avx2_bf16_words_of(v), 16));
    case AMP_F16: return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    default: return v;
    }
}

/* The first n < 8 values at p (the rest of the lanes 0), and the store of
 * the first n lanes: through a buffer, so nothing past the n is touched. */
AVX2_TARGET static inline __m256 avx2_load8_n(amp_dtype t, const void *p, size_t n)
{
    float buf[8] __attribute__((aligned(32))) = { 0 };
    memcpy(buf, p, n * avx2_size_of(t));
    return avx2_load8(t, buf);
}

AVX2_TARGET static inline void avx2_store8_n(amp_dtype t, void *p, size_t n, __m256 v)
{
    float buf[8] __attribute__((aligned(32)));
    avx2_store8(t, buf, v);
    memcpy(p, buf, n * avx2_size_of(t));
}

/* Lanes (all ones) where l < n, for l = 0..7. */
AVX2_TARGET static inline __m256 avx2_first_lanes(size_t n)
{
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

/* The first n < 8 values at p, the other lanes 0, where `avail` values
 * from p may be read: 8 whole, masked, when avail >= 8 (the buffered
 * load stalls on the store it reads back, which in a loop over rows is a
 * stall per row); else avx2_load8_n. */
AVX2_TARGET static inline __m256 avx2_load8_within(amp_dtype t, const void *p, size_t n, int64_t avail)
{
    if (avail >= 8)
        return _mm256_and_ps(avx2_load8(t, p), avx2_first_lanes(n));
    return avx2_load8_n(t, p, n);
}

AVX2_TARGET static inline __m256 avx2_isnan(__m256 v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); }

/* ---- which NaN (as x86/avx512_eltwise.c fixes it): of two NaN operands of
 * a sum or product, the left one, quieted, whatever order a compiler gives
 * the operands; the fix runs only for vectors whose result has a NaN. */
AVX2_TARGET static inline __m256 avx2_nan_of_first(__m256 a, __m256 r)
{
    const __m256 quiet = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(a), _mm256_set1_epi32(0x00400000)));
    return _mm256_blendv_ps(r, quiet, avx2_isnan(a));
}

AVX2_TARGET static inline __m256 avx2_add_first(__m256 a, __m256 b)
{
    const __m256 r = _mm256_add_ps(a, b);
    return _mm256_movemask_ps(avx2_isnan(r)) ? avx2_nan_of_first(a, r) : r;
}

/* batch_norm's ((v - mean) * rstd) [* w] [+ b], each step's NaN operand
 * on the left winning (v - mean: the subtraction does not commute): the
 * avx2 set's batch_norm and batch_norm_train per element. */
AVX2_TARGET static AMP_ALWAYS_INLINE __m256 avx2_bn8(__m256 v, __m256 mean, __m256 rstd, __m256 w, __m256 b,
                                                     int has_w, int has_b)
{
    const __m256 d = _mm256_sub_ps(v, mean);
    __m256 r = _mm256_mul_ps(d, rstd), rw, rb;
    if (has_w)
        r = _mm256_mul_ps(r, w);
    if (has_b)
        r = _mm256_add_ps(r, b);
    if (!_mm256_movemask_ps(avx2_isnan(r)))
        return r;
    r = avx2_nan_of_first(d, _mm256_mul_ps(d, rstd));
    rw = has_w ? avx2_nan_of_first(r, _mm256_mul_ps(r, w)) : r;
    rb = has_b ? avx2_nan_of_first(rw, _mm256_add_ps(rw, b)) : rw;
    return rb;
}

/* y[0, n) = avx2_bn8 of x[0, n) in dtype t (a constant where inlined):
 * bf16 16 at a time as its even and odd elements, then vectors of 8,
 * then the tail.  x may be y. */
AVX2_TARGET static AMP_ALWAYS_INLINE void avx2_bn_row(amp_dtype t, const char *x, char *y, int64_t n, __m256 mean,
                                                      __m256 rstd, __m256 w, __m256 b, int has_w, int has_b)
{
    const size_t es = avx2_size_of(t);
    int64_t s = 0;
    for (; t == AMP_BF16 && s + 16 <= n; s += 16) {
        __m256 e, o;
        avx2_load16_bf16(x + (size_t)s * es, &e, &o);
        avx2_store16_bf16(y + (size_t)s * es, avx2_bn8(e, mean, rstd, w, b, has_w, has_b),
                          avx2_bn8(o, mean, rstd, w, b, has_w, has_b));
    }
    for (; s + 8 <= n; s += 8)
        avx2_store8(t, y + (size_t)s * es, avx2_bn8(avx2_load8(t, x + (size_t)s * es), mean, rstd, w, b, has_w, has_b));
    if (s < n) {
        const size_t k = (size_t)(n - s);
        avx2_store8_n(t, y + (size_t)s * es, k,
                      avx2_bn8(avx2_load8_n(t, x + (size_t)s * es, k), mean, rstd, w, b, has_w, has_b));
    }
}

/* relu_backward of 8 f32 lanes, on the bits: g where x > 0 or NaN, else
 * +0 (x <= 0: +-0, or the sign set and not NaN). */
AVX2_TARGET static inline __m256i avx2_relu_bw32(__m256i xv, __m256i g)
{
    const __m256i mag = _mm256_and_si256(xv, _mm256_set1_epi32(0x7fffffff));
    const __m256i zero = _mm256_cmpeq_epi32(mag, _mm256_setzero_si256());
    const __m256i neg = _mm256_andnot_si256(_mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000)),
                                            _mm256_cmpgt_epi32(_mm256_setzero_si256(), xv));
    return _mm256_andnot_si256(_mm256_or_si256(zero, neg), g);
}

/* The same for 16 lanes of bf16 or f16 (inf: the dtype's infinity, quiet:
 * its quiet bit), g's signalling NaNs quieted as the reference's round
 * trip through f32 quiets them. */
AVX2_TARGET static inline __m256i avx2_relu_bw16(__m256i xv, __m256i g, short inf, short quiet)
{
    const __m256i vinf = _mm256_set1_epi16(inf), m7 = _mm256_set1_epi16(0x7fff);
    const __m256i xmag = _mm256_and_si256(xv, m7);
    const __m256i zero = _mm256_cmpeq_epi16(xmag, _mm256_setzero_si256());
    const __m256i neg = _mm256_andnot_si256(_mm256_cmpgt_epi16(xmag, vinf), _mm256_cmpgt_epi16(_mm256_setzero_si256(), xv));
    const __m256i gnan = _mm256_cmpgt_epi16(_mm256_and_si256(g, m7), vinf);
    g = _mm256_or_si256(g, _mm256_and_si256(gnan, _mm256_set1_epi16(quiet)));
    return _mm256_andnot_si256(_mm256_or_si256(zero, neg), g);
}

/* ---- chunked, pooled loops: frame/chunked.h's, under this set's names. */

#define AVX2_PARALLEL_MIN AMP_PARALLEL_MIN
#define avx2_run_chunked amp_run_chunked

/* The AVX2 kernels beyond the GEMM, by file: element-wise, casts, norms,
 * pooling (avx2_eltwise.c), gradients and optimizers (avx2_backward.c),
 * sums (avx2_reduce.c), losses (avx2_loss.c); amp_isa_avx2_fill_kernels
 * (amprt_internal.h) installs them all. */
void amp_avx2_fill_eltwise(amp_kernel_table *t);
void amp_avx2_fill_backward(amp_kernel_table *t);
void amp_avx2_fill_norm(amp_kernel_table *t);  /* x86/avx2_norm.c */
void amp_avx2_fill_clamp(amp_kernel_table *t); /* x86/avx2_clamp.c */
void amp_avx2_fill_reduce(amp_kernel_table *t);
void amp_avx2_fill_loss(amp_kernel_table *t);

#endif
#endif
