/*
 * avx2_rows.c - the avx2 set's vector operations for the kernels of a
 * transformer's rows (frame/rows_form.h: softmax along the last axis,
 * layer_norm, gelu and gelu_tanh; softmax_backward, log_softmax_backward,
 * layer_norm_backward, gelu_backward, gelu_tanh_backward; dropout), 8
 * lanes at a time, f32, bf16 and f16 storage computing in f32.
 *
 * Bit for bit the reference, as the form says: a row's 16 lanes are two
 * vectors here (elements 16i..16i+7 in the first, 16i+8..16i+15 in the
 * second), added, then folded; exp is amp_expf (amp_expf.h), erf and
 * tanh amp_erff and amp_tanhf (amp_mathf.h), whose double operations the
 * 4-lane functions below perform in the same order; dropout's Philox
 * words are the reference's integer operations, 8 blocks per vector.
 *
 * Rows (gelu's and dropout's vectors, layer_norm_backward's blocks of
 * parameter columns) are split over the pool as avx2_run_chunked splits
 * (x86/avx2_store.h).  Installed by amp_isa_avx2_fill.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "amp_mathf.h"
#include "avx2_expf.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* ---- exp, erf, tanh in double, 4 lanes ------------------------------------------ */

TARGET static inline __m256d reduce_ln2(__m256d x, __m256d *k)
{
    *k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(AMP_EXPF_INV_LN2)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* -k by its sign bit, as the scalar -k (0 - k would give +0 for k = +0) */
    const __m256d nk = _mm256_xor_pd(*k, _mm256_set1_pd(-0.0));
    const __m256d r = _mm256_fmadd_pd(nk, _mm256_set1_pd(AMP_EXPF_LN2_HI), x);
    return _mm256_fmadd_pd(nk, _mm256_set1_pd(AMP_EXPF_LN2_LO), r);
}

TARGET static inline __m256d series_to_c2(__m256d r)
{
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(AMP_EXPF_C11), r, _mm256_set1_pd(AMP_EXPF_C10));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C9));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C8));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C7));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C6));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C5));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C4));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C3));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C2));
    return _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
}

/* 2^k for integral k in [-1022, 1023], from k's bits */
TARGET static inline __m256d pow2(__m256d k)
{
    return _mm256_castsi256_pd(_mm256_slli_epi64(
        _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)), 52));
}

TARGET static inline __m256d sign_of(__m256d x) { return _mm256_and_pd(x, _mm256_set1_pd(-0.0)); }
TARGET static inline __m256d abs_of(__m256d x) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), x); }

/* amp_erff of 4 lanes, both branches, one kept per lane */
TARGET static __m128 erf4(__m128 xf)
{
    const __m256d x = _mm256_cvtps_pd(xf), a = abs_of(x), t = _mm256_mul_pd(x, x);
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(AMP_ERF_A9), t, _mm256_set1_pd(AMP_ERF_A8));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A7));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A6));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A5));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A4));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A3));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A2));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A1));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A0));
    const __m256d small = _mm256_mul_pd(x, p);
    const __m256d big = _mm256_cmp_pd(a, _mm256_set1_pd(1.0), _CMP_NLT_UQ);
    if (!_mm256_movemask_pd(big))
        return _mm256_cvtpd_ps(small);
    const __m256d u = _mm256_sub_pd(_mm256_min_pd(a, _mm256_set1_pd(AMP_ERF_B_TOP)), _mm256_set1_pd(AMP_ERF_B_CENTER));
    __m256d q = _mm256_setzero_pd();
    int first = 1;
#define HORNER(c)                                                                                 \
    if (first) {                                                                                  \
        q = _mm256_set1_pd(c);                                                                    \
        first = 0;                                                                                \
    } else                                                                                        \
        q = _mm256_fmadd_pd(q, u, _mm256_set1_pd(c));
    AMP_ERF_B_COEFFS(HORNER)
#undef HORNER
    const __m256d large = _mm256_or_pd(_mm256_sub_pd(_mm256_set1_pd(1.0), q), sign_of(x));
    return _mm256_cvtpd_ps(_mm256_blendv_pd(small, large, big));
}

/* amp_tanhf of 4 lanes (k in [0, 58]) */
TARGET static __m128 tanh4(__m128 xf)
{
    const __m256d x = _mm256_cvtps_pd(xf);
    const __m256d z = _mm256_min_pd(_mm256_add_pd(abs_of(x), abs_of(x)), _mm256_set1_pd(AMP_TANH_TOP));
    __m256d k;
    const __m256d r = reduce_ln2(z, &k);
    const __m256d q = _mm256_mul_pd(series_to_c2(r), r);
    const __m256d s = pow2(k);
    const __m256d e = _mm256_fmadd_pd(q, s, _mm256_sub_pd(s, _mm256_set1_pd(1.0)));
    const __m256d t = _mm256_div_pd(e, _mm256_add_pd(e, _mm256_set1_pd(2.0)));
    return _mm256_cvtpd_ps(_mm256_or_pd(t, sign_of(x)));
}

/* f(x) of 8 lanes by two 4-lane halves; NaN lanes keep their NaN, as the
 * scalar functions return it */
#define EIGHT(name, f4)                                                                           \
    TARGET static inline __m256 name(__m256 x)                                                    \
    {                                                                                             \
        const __m256 e = _mm256_set_m128(f4(_mm256_extractf128_ps(x, 1)), f4(_mm256_castps256_ps128(x))); \
        return _mm256_blendv_ps(e, x, avx2_isnan(x));                                             \
    }
EIGHT(erf8, erf4)
EIGHT(tanh8, tanh4)

/* ---- loads, folds ------------------------------------------------------------- */

/* up to 8 values of dtype t at p as f32 (n may exceed 8; n <= 0: none),
 * lanes past n `fill` */
TARGET static inline __m256 load8_n(amp_dtype t, const void *p, int64_t n, float fill)
{
    if (n >= 8)
        return avx2_load8(t, p);
    if (n <= 0)
        return _mm256_set1_ps(fill);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), avx2_load8_n(t, p, (size_t)n), avx2_first_lanes((size_t)n));
}

TARGET static inline void store8_n(amp_dtype t, void *p, int64_t n, __m256 v)
{
    if (n >= 8)
        avx2_store8(t, p, v);
    else if (n > 0)
        avx2_store8_n(t, p, (size_t)n, v);
}

/* lanes 0-7 in s[0], 8-15 in s[1], folded as AMP_ROW_FOLD folds 16 lanes */
TARGET static inline float fold16(const __m256 s[2])
{
    const __m256 h8 = _mm256_add_ps(s[0], s[1]);
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

/* s + v in the first n lanes (all for n >= 8): a lane past the row adds
 * nothing, as the reference's lanes (adding +0 would turn a -0 sum into +0) */
TARGET static inline __m256 add8_n(__m256 s, __m256 v, int64_t n)
{
    if (n >= 8)
        return _mm256_add_ps(s, v);
    if (n <= 0)
        return s;
    return _mm256_blendv_ps(s, _mm256_add_ps(s, v), avx2_first_lanes((size_t)n));
}

/* ---- dropout's integer steps (frame/rows_form.h's Philox, 8 blocks per vector) ---- */

/* the high and low 32 bits of m * a per lane */
TARGET static inline void mulhilo(__m256i a, uint32_t m, __m256i *hi, __m256i *lo)
{
    const __m256i vm = _mm256_set1_epi64x((long long)m);
    const __m256i even = _mm256_mul_epu32(a, vm), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), vm);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

/* lanes >= the threshold, unsigned, as 8 bits */
TARGET static inline uint32_t at_least(__m256i w, __m256i th)
{
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_max_epu32(w, th), w)));
}

/* the lanes of 8 keep bits, all ones where kept */
TARGET static inline __m256 kept_lanes(uint32_t bits)
{
    const __m256i b = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), b), b));
}

/* v s in the lanes of the low 8 bits, +0 in the others */
TARGET static inline __m256 keep_mul(uint32_t bits, __m256 v, __m256 s)
{
    return _mm256_and_ps(kept_lanes(bits), _mm256_mul_ps(v, s));
}

/* ---- the form ----------------------------------------------------------------- */

#define RV __m256
#define RW 8
#define RK 2
#define ROWS_TARGET TARGET
#define RV_ADD _mm256_add_ps
#define RV_SUB _mm256_sub_ps
#define RV_MUL _mm256_mul_ps
#define RV_DIV _mm256_div_ps
#define RV_MAX _mm256_max_ps
#define RV_DUP _mm256_set1_ps
#define RV_ZERO _mm256_setzero_ps
#define RV_LDA _mm256_load_ps
#define RV_STA _mm256_store_ps
#define RV_STU _mm256_storeu_ps
#define RV_KEEP uint32_t
#define RI __m256i
#define RI_DUP(x) _mm256_set1_epi32((int)(x))
#define RI_XOR _mm256_xor_si256
#define RI_IOTA() _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
#define rows_add_i32 _mm256_add_epi32
#define rows_mulhilo mulhilo
#define rows_at_least at_least
#define rows_size avx2_size_of
#define rows_load avx2_load8
#define rows_store avx2_store8
#define rows_load_n load8_n
#define rows_store_n store8_n
#define rows_add_n add8_n
#define rows_fold16 fold16
#define rows_exp avx2_exp8
#define rows_erf erf8
#define rows_tanh tanh8
#define rows_run avx2_run_chunked
#define rows_keep_mul keep_mul
#include "frame/rows_form.h"

#define DEFINE(name) AMP_ISA_KERNEL(avx2, name, name)
ROWS_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx2_fill_rows(amp_kernel_table *t)
{
#define INSTALL(name) AMP_ISA_INSTALL(t, avx2, name);
    ROWS_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
