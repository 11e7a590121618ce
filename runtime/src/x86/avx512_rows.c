/*
 * avx512_rows.c - the AVX-512 sets' vector operations for the kernels of
 * a transformer's rows (frame/rows_form.h: softmax along the last axis,
 * layer_norm, gelu and gelu_tanh; softmax_backward, log_softmax_backward,
 * layer_norm_backward, gelu_backward, gelu_tanh_backward; dropout), 16
 * lanes at a time, f32, bf16 and f16 storage computing in f32.
 *
 * Bit for bit the reference, as the form says: a row's 16 lanes are one
 * vector here; exp is amp_expf (amp_expf.h), erf and tanh amp_erff and
 * amp_tanhf (amp_mathf.h), whose double operations the 8-lane functions
 * below perform in the same order; dropout's Philox words are the
 * reference's integer operations, 16 blocks per vector.
 *
 * Rows (gelu's and dropout's vectors, layer_norm_backward's blocks of
 * parameter columns) are split over the pool in tasks of about CHUNK
 * elements once there are PARALLEL_MIN of them.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "amp_mathf.h"
#include "avx512_expf.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET
#define CHUNK 65536
#define PARALLEL_MIN 131072

/* ---- exp, erf, tanh in double, 8 lanes ------------------------------------------ */

/* -k by its sign bit, as the scalar -k (0 - k would give +0 for k = +0) */
TARGET static inline __m512d negate(__m512d k)
{
    return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(k), _mm512_set1_epi64((long long)0x8000000000000000ull)));
}

/* amp_expf's reduction and polynomial: p with exp(x) = p 2^k; q = p - 1
 * as amp_expm1_reduced computes it when want_expm1 */
TARGET static inline __m512d reduce_ln2(__m512d x, __m512d *k)
{
    *k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(AMP_EXPF_INV_LN2)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512d nk = negate(*k);
    const __m512d r = _mm512_fmadd_pd(nk, _mm512_set1_pd(AMP_EXPF_LN2_HI), x);
    return _mm512_fmadd_pd(nk, _mm512_set1_pd(AMP_EXPF_LN2_LO), r);
}

TARGET static inline __m512d series_to_c2(__m512d r)
{
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(AMP_EXPF_C11), r, _mm512_set1_pd(AMP_EXPF_C10));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C9));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C8));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C7));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C6));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C4));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C3));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C2));
    return _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
}

/* amp_erff of 8 lanes, both branches, one kept per lane (NaN: see below) */
TARGET static __m256 erf8(__m256 xf)
{
    const __m512d x = _mm512_cvtps_pd(xf), a = _mm512_abs_pd(x), t = _mm512_mul_pd(x, x);
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(AMP_ERF_A9), t, _mm512_set1_pd(AMP_ERF_A8));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A7));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A6));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A5));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A4));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A3));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A2));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A1));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A0));
    const __m512d small = _mm512_mul_pd(x, p);
    const __mmask8 big = _mm512_cmp_pd_mask(a, _mm512_set1_pd(1.0), _CMP_NLT_UQ);
    if (!big)
        return _mm512_cvtpd_ps(small);
    const __m512d u = _mm512_sub_pd(_mm512_min_pd(a, _mm512_set1_pd(AMP_ERF_B_TOP)), _mm512_set1_pd(AMP_ERF_B_CENTER));
    __m512d q = _mm512_setzero_pd();
    int first = 1;
#define HORNER(c)                                                                                 \
    if (first) {                                                                                  \
        q = _mm512_set1_pd(c);                                                                    \
        first = 0;                                                                                \
    } else                                                                                        \
        q = _mm512_fmadd_pd(q, u, _mm512_set1_pd(c));
    AMP_ERF_B_COEFFS(HORNER)
#undef HORNER
    const __m512d one_minus = _mm512_sub_pd(_mm512_set1_pd(1.0), q);
    const __m512d sign = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64((long long)0x8000000000000000ull)));
    const __m512d large = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(one_minus), _mm512_castpd_si512(sign)));
    return _mm512_cvtpd_ps(_mm512_mask_mov_pd(small, big, large));
}

/* amp_tanhf of 8 lanes */
TARGET static __m256 tanh8(__m256 xf)
{
    const __m512d x = _mm512_cvtps_pd(xf);
    const __m512d z = _mm512_min_pd(_mm512_add_pd(_mm512_abs_pd(x), _mm512_abs_pd(x)), _mm512_set1_pd(AMP_TANH_TOP));
    __m512d k;
    const __m512d r = reduce_ln2(z, &k);
    const __m512d q = _mm512_mul_pd(series_to_c2(r), r);
    const __m512d s = _mm512_scalef_pd(_mm512_set1_pd(1.0), k);
    const __m512d e = _mm512_fmadd_pd(q, s, _mm512_sub_pd(s, _mm512_set1_pd(1.0)));
    const __m512d t = _mm512_div_pd(e, _mm512_add_pd(e, _mm512_set1_pd(2.0)));
    const __m512d sign = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64((long long)0x8000000000000000ull)));
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(t), _mm512_castpd_si512(sign))));
}

/* f(x) of 16 lanes by two 8-lane halves; NaN lanes keep their NaN, as the
 * scalar functions return it */
#define SIXTEEN(name, f8)                                                                         \
    TARGET static inline __m512 name(__m512 x)                                                    \
    {                                                                                             \
        const __m256 lo = f8(_mm512_castps512_ps256(x));                                          \
        const __m256 hi = f8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));   \
        const __m512 e = _mm512_castpd_ps(                                                        \
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1)); \
        return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);                  \
    }
SIXTEEN(erf16, erf8)
SIXTEEN(tanh16, tanh8)

/* ---- loads, folds, the pool --------------------------------------------------- */

/* n <= 16 values of dtype t at p as f32, as amp_ld reads them; other lanes fill */
TARGET static inline __m512 load16_n(amp_dtype t, const void *p, int64_t n, float fill)
{
    if (n >= 16)
        return load16_all(t, p);
    const __mmask16 m = (__mmask16)((1u << n) - 1);
    if (t == AMP_F32)
        return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), m, p);
    float w[16] = { 0 }; /* 32 bytes used */
    memcpy(w, p, (size_t)n * 2);
    return _mm512_mask_mov_ps(_mm512_set1_ps(fill), m, load16_all(t, w));
}

TARGET static inline void store16_n(amp_dtype t, void *p, int64_t n, __m512 v)
{
    if (n >= 16)
        store16_all(t, p, v);
    else
        store16(t, p, (__mmask16)((1u << n) - 1), v);
}

/* the 16 lanes of s[0] folded as AMP_ROW_FOLD folds them */
TARGET static inline float fold16(const __m512 s[1])
{
    const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(s[0]), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s[0]), 1)));
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

static inline size_t dsize(amp_dtype t) { return t == AMP_F32 ? 4 : 2; }

typedef struct {
    void (*body)(const void *ctx, size_t begin, size_t end);
    const void *ctx;
    size_t n, per_task;
} rows_job;

static void rows_task(void *ctx, int64_t task, int slot)
{
    const rows_job *j = ctx;
    const size_t begin = (size_t)task * j->per_task, end = begin + j->per_task < j->n ? begin + j->per_task : j->n;
    (void)slot;
    j->body(j->ctx, begin, end);
}

/* body over [0, n) units of `unit` elements, on the pool when big enough */
static void run_rows(size_t n, size_t unit, void (*body)(const void *, size_t, size_t), const void *ctx)
{
    rows_job j = { body, ctx, n, CHUNK / (unit > 0 ? unit : 1) + 1 };
    if (n * unit < PARALLEL_MIN || amp_get_threads() == 1 || n < 2) {
        body(ctx, 0, n);
        return;
    }
    amp_parallel_run(amp_get_threads(), (int64_t)((n + j.per_task - 1) / j.per_task), rows_task, &j);
}

/* s + v in the first n lanes (all for n >= 16): a lane past the row adds
 * nothing, as the reference's lanes (adding +0 would turn a -0 sum into +0) */
TARGET static inline __m512 add_n(__m512 s, __m512 v, int64_t n)
{
    return n >= 16 ? _mm512_add_ps(s, v) : _mm512_mask_add_ps(s, (__mmask16)((1u << n) - 1), s, v);
}

/* ---- dropout's integer steps (frame/rows_form.h's Philox, 16 blocks per vector) -- */

/* the high and low 32 bits of m * a per lane */
TARGET static inline void mulhilo(__m512i a, uint32_t m, __m512i *hi, __m512i *lo)
{
    const __m512i vm = _mm512_set1_epi64((long long)m);
    const __m512i even = _mm512_mul_epu32(a, vm), odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), vm);
    *lo = _mm512_mask_blend_epi32((__mmask16)0xAAAA, even, _mm512_slli_epi64(odd, 32));
    *hi = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 32), odd);
}

/* v s in the lanes of the low 16 bits, +0 in the others */
TARGET static inline __m512 keep_mul(uint64_t bits, __m512 v, __m512 s)
{
    return _mm512_maskz_mul_ps((__mmask16)bits, v, s);
}

/* ---- the form ----------------------------------------------------------------- */

#define RV __m512
#define RW 16
#define RK 1
#define ROWS_TARGET TARGET
#define RV_ADD _mm512_add_ps
#define RV_SUB _mm512_sub_ps
#define RV_MUL _mm512_mul_ps
#define RV_DIV _mm512_div_ps
#define RV_MAX _mm512_max_ps
#define RV_DUP _mm512_set1_ps
#define RV_ZERO _mm512_setzero_ps
#define RV_LDA _mm512_load_ps
#define RV_STA _mm512_store_ps
#define RV_STU _mm512_storeu_ps
#define RV_KEEP uint64_t
#define RI __m512i
#define RI_DUP(x) _mm512_set1_epi32((int)(x))
#define RI_XOR _mm512_xor_si512
#define RI_IOTA() _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define rows_add_i32 _mm512_add_epi32
#define rows_mulhilo mulhilo
#define rows_at_least _mm512_cmpge_epu32_mask
#define rows_size dsize
#define rows_load load16_all
#define rows_store store16_all
#define rows_load_n load16_n
#define rows_store_n store16_n
#define rows_add_n add_n
#define rows_fold16 fold16
#define rows_exp avx512_exp16
#define rows_erf erf16
#define rows_tanh tanh16
#define rows_run run_rows
#define rows_keep_mul keep_mul
#include "frame/rows_form.h"

#define DEFINE(name) AMP_ISA_KERNEL(avx512, name, name)
ROWS_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_rows(amp_kernel_table *t)
{
#define INSTALL(name) AMP_ISA_INSTALL(t, avx512, name);
    ROWS_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
