/*
 * avx2_conv.c - the avx2 set's convolution parts beside its GEMM
 * micro-kernel (x86/avx2.c): conv_ex's post-ops (eval-mode batch_norm,
 * residual add, relu, clamp) on a tile's freshly stored rows, 8 lanes at a
 * time (contract in amprt_internal.h).
 *
 * The post-ops are, bit for bit, the avx2 set's separate batch_norm, add,
 * relu and clamp kernels they stand for (test_conv_ex.c holds every set to that
 * with memcmp): each step rounds to the storage dtype as a store would,
 * in the same order of operations (no contraction: -std=c99), so every
 * non-NaN result is theirs; which NaN two NaN operands give depends on
 * the operand order a compiler picked for those kernels, so the (rare)
 * vectors with a NaN result are redone by those kernels themselves.
 * Compiled for AVX2 through target attributes only; runs only after
 * dispatch.c's CPU check.
 */

#include <string.h>

#include "x86/avx2_conv.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))

/* The post's vector steps leave NaNs alone: a vector holding a NaN lane,
 * at the start or made along the way, holds one at the end (the steps
 * keep it), and post_row redoes it by the set's kernels.  So the load
 * need not quiet a signalling bf16 NaN, nor the rounding give a NaN its
 * quiet bit, as amp_ld and amp_st do: six fewer instructions a vector. */

/* 8 values of dtype t at p as f32, exactly but for NaN payloads. */
TARGET static inline __m256 load8(amp_dtype t, const void *p)
{
    switch (t) {
    case AMP_BF16: return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(p)), 16));
    case AMP_F16: return _mm256_cvtph_ps(_mm_loadu_si128(p));
    default: return _mm256_loadu_ps(p);
    }
}

/* v rounded to dtype t as amp_st rounds (round to nearest even) but for
 * NaN lanes, widened back to f32. */
TARGET static inline __m256 round8(amp_dtype t, __m256 v)
{
    switch (t) {
    case AMP_BF16: {
        const __m256i u = _mm256_castps_si256(v);
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd);
        return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_set1_epi32(0xffff), r));
    }
    case AMP_F16: return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    default: return v;
    }
}

/* v's 8 lanes stored in dtype t; v holds values of t (loaded, or
 * round8ed; relu keeps that), so the stores are exact. */
TARGET static inline void store8_exact(amp_dtype t, void *p, __m256 v)
{
    switch (t) {
    case AMP_BF16: {
        const __m256i h = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
        _mm_storeu_si128(p, _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
        return;
    }
    case AMP_F16: _mm_storeu_si128(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); return;
    default: _mm256_storeu_ps(p, v); return;
    }
}

TARGET static inline int any_nan(__m256 r) { return _mm256_movemask_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q)) != 0; }

/* One row's post-ops on 8 values v: batch_norm's ((v - mean) * rstd) [* w]
 * [+ b], the residual add, each rounded to t, then relu (false for NaN and
 * -0: both kept), then the clamp as the clamp kernel's vmaxps(lo, v) and
 * vminps(hi, .), rounded to t unless its bounds are values of t (bnv[4]
 * and [5]: lo and hi).  No NaN care here: a NaN anywhere along the way is
 * a NaN at the end (the roundings, the add, relu and the clamp keep it;
 * a NaN bound is passed over), and post_row redoes such vectors by the
 * set's kernels. */
TARGET static AMP_ALWAYS_INLINE __m256 post8(amp_dtype t, __m256 v, const __m256 *bnv, int bn, int bn_weight,
                                             int bn_bias, int relu, __m256 residual, int has_residual, int clamp)
{
    if (bn) {
        __m256 r = _mm256_mul_ps(_mm256_sub_ps(v, bnv[0]), bnv[1]);
        if (bn_weight)
            r = _mm256_mul_ps(r, bnv[2]);
        if (bn_bias)
            r = _mm256_add_ps(r, bnv[3]);
        v = round8(t, r);
    }
    if (has_residual)
        v = round8(t, _mm256_add_ps(v, residual));
    if (relu)
        v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    if (clamp != AMP_POST_CLAMP_NONE) {
        v = _mm256_min_ps(bnv[5], _mm256_max_ps(bnv[4], v));
        if (clamp == AMP_POST_CLAMP_ROUNDED)
            v = round8(t, v);
    }
    return v;
}

/* The avx2 set's own batch_norm, add and relu (x86/avx2_eltwise.c). */
#define AVX2_OWN(T)                                                                               \
    extern AMP_HIDDEN amp_kernel_fn_batch_norm_##T *const amp_isa_avx2_batch_norm_##T;            \
    extern AMP_HIDDEN amp_kernel_fn_add_##T *const amp_isa_avx2_add_##T;                          \
    extern AMP_HIDDEN amp_kernel_fn_relu_##T *const amp_isa_avx2_relu_##T;
AVX2_OWN(f32)
AVX2_OWN(bf16)
AVX2_OWN(f16)
#undef AVX2_OWN

/* The post-ops of cnt (<= 8) elements of a row through the avx2 set's own
 * batch_norm, add, relu and clamp kernels: for the vectors with a NaN lane,
 * whose payload and sign are whatever those kernels make of two NaN
 * operands (they are elementwise, so a piece of a row gives what the row
 * would).  The rest of a row never differs from them. */
static void post_by_kernels(amp_dtype t, int64_t cnt, const amp_conv_post_row *p, const char *rr, const char *sr,
                            char *yr)
{
    const amp_conv_post *post = p->post;
    const size_t es = amp_dtype_size(t), ps = amp_dtype_size(post->bn_dtype);
    const int64_t co = p->channel;
    const void *mean = post->bn_mean != NULL ? (const char *)post->bn_mean + (size_t)co * ps : NULL;
    const void *var = post->bn_var != NULL ? (const char *)post->bn_var + (size_t)co * ps : NULL;
    const void *w = post->bn_weight != NULL ? (const char *)post->bn_weight + (size_t)co * ps : NULL;
    const void *b = post->bn_bias != NULL ? (const char *)post->bn_bias + (size_t)co * ps : NULL;
    float tmp[8];
    memcpy(tmp, sr, (size_t)cnt * es);
#define POST_BY_KERNELS(T, CT)                                                                    \
    do {                                                                                          \
        CT *v = (CT *)(void *)tmp;                                                                \
        if (p->bn)                                                                                \
            amp_isa_avx2_batch_norm_##T(1, 1, cnt, v, post->bn_dtype, mean, var, w, b,            \
                                        post->bn_eps, v);                                         \
        if (rr != NULL)                                                                           \
            amp_isa_avx2_add_##T((size_t)cnt, v, (const CT *)(const void *)rr, v);                \
        if (p->relu)                                                                              \
            amp_isa_avx2_relu_##T((size_t)cnt, v, v);                                             \
        if (p->clamp) /* the set's clamp is the reference's, bit for bit */                     \
            amp_ref_clamp_##T((size_t)cnt, v, post->clamp_lo, post->clamp_hi, v);                 \
    } while (0)
    switch (t) {
    case AMP_F32: POST_BY_KERNELS(f32, float); break;
    case AMP_BF16: POST_BY_KERNELS(bf16, amp_bf16); break;
    case AMP_F16: POST_BY_KERNELS(f16, amp_f16); break;
    default: break;
    }
#undef POST_BY_KERNELS
    memcpy(yr, tmp, (size_t)cnt * es);
}

/* One row: whole vectors, then the tail through 8-element copies; the
 * flags constants in the common cases (post_body below). */
TARGET static AMP_ALWAYS_INLINE void post_row(amp_dtype t, int64_t n, const amp_conv_post_row *p, const char *rr,
                                              const char *sr, char *yr, int bn, int bn_weight, int bn_bias, int relu,
                                              int has_residual, int clamp)
{
    const size_t es = t == AMP_F32 ? 4 : 2;
    const __m256 bnv[6] = { _mm256_set1_ps(p->mean),      _mm256_set1_ps(p->rstd),
                            _mm256_set1_ps(p->weight),    _mm256_set1_ps(p->bias),
                            _mm256_set1_ps(p->clamp_lo), _mm256_set1_ps(p->clamp_hi) };
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 r = has_residual ? load8(t, rr + (size_t)j * es) : _mm256_setzero_ps();
        const __m256 v =
            post8(t, load8(t, sr + (size_t)j * es), bnv, bn, bn_weight, bn_bias, relu, r, has_residual, clamp);
        if (any_nan(v))
            post_by_kernels(t, 8, p, has_residual ? rr + (size_t)j * es : NULL, sr + (size_t)j * es,
                            yr + (size_t)j * es);
        else
            store8_exact(t, yr + (size_t)j * es, v);
    }
    if (j < n) {
        float sbuf[8] = { 0 }, rbuf[8] = { 0 }, ybuf[8];
        const size_t bytes = (size_t)(n - j) * es;
        memcpy(sbuf, sr + (size_t)j * es, bytes);
        if (has_residual)
            memcpy(rbuf, rr + (size_t)j * es, bytes);
        const __m256 v =
            post8(t, load8(t, sbuf), bnv, bn, bn_weight, bn_bias, relu, load8(t, rbuf), has_residual, clamp);
        if (any_nan(v)) {
            post_by_kernels(t, n - j, p, has_residual ? rr + (size_t)j * es : NULL, sr + (size_t)j * es,
                            yr + (size_t)j * es);
        } else {
            store8_exact(t, ybuf, v);
            memcpy(yr + (size_t)j * es, ybuf, bytes);
        }
    }
}

TARGET static AMP_ALWAYS_INLINE void post_body(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr,
                                               const void *residual, const void *src, void *y, int64_t ld)
{
    const size_t es = t == AMP_F32 ? 4 : 2;
    for (int64_t r = 0; r < rows; r++) {
        const amp_conv_post_row *p = &pr[r];
        char *yr = (char *)y + (size_t)(r * ld) * es;
        const char *sr = (const char *)src + (size_t)(r * ld) * es;
        const char *rr = residual != NULL ? (const char *)residual + (size_t)(r * ld) * es : NULL;
        const int usual = p->bn && p->bn_weight && p->bn_bias, clamp = p->clamp;
        if (usual && p->relu && rr == NULL && clamp == AMP_POST_CLAMP_NONE)
            post_row(t, n, p, rr, sr, yr, 1, 1, 1, 1, 0, AMP_POST_CLAMP_NONE);
        else if (usual && p->relu && clamp == AMP_POST_CLAMP_NONE)
            post_row(t, n, p, rr, sr, yr, 1, 1, 1, 1, 1, AMP_POST_CLAMP_NONE);
        else if (usual && !p->relu && rr == NULL && clamp == AMP_POST_CLAMP_NONE)
            post_row(t, n, p, rr, sr, yr, 1, 1, 1, 0, 0, AMP_POST_CLAMP_NONE);
        else if (usual && !p->relu && rr == NULL && clamp == AMP_POST_CLAMP_EXACT) /* ReLU6 after batch_norm */
            post_row(t, n, p, rr, sr, yr, 1, 1, 1, 0, 0, AMP_POST_CLAMP_EXACT);
        else
            post_row(t, n, p, rr, sr, yr, p->bn, p->bn_weight, p->bn_bias, p->relu, rr != NULL, clamp);
    }
}

TARGET void amp_avx2_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                               const void *src, void *y, int64_t ld)
{
    switch (t) {
    case AMP_F32: post_body(AMP_F32, rows, n, p, residual, src, y, ld); break;
    case AMP_BF16: post_body(AMP_BF16, rows, n, p, residual, src, y, ld); break;
    case AMP_F16: post_body(AMP_F16, rows, n, p, residual, src, y, ld); break;
    default: break; /* frame/conv.c runs conv_ex on f32, bf16 and f16 only */
    }
}

#endif /* x86 */
