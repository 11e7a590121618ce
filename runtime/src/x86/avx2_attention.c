/*
 * avx2_attention.c - the avx2 set's vector operations for scaled
 * dot-product attention (sdpa) and its gradient (sdpa_backward), whose
 * algorithms are frame/attention_form.h's, 8 lanes at a time, for f32,
 * bf16 and f16 storage computing in f32: exp(s - max) is amp_expf in
 * double, 4 lanes at a time (amp_expf.h's series); row_scores scales 8
 * scores per vector, masked (bool mask 0, causal j > i) and padding
 * positions -inf; blocks of 2 rows (ATTN_ROWS: 8 accumulators of the 16
 * registers).  Installed by amp_isa_avx2_fill.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "avx2_expf.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* n values (n may exceed 8; n <= 0: none) of dtype t at p as f32, others 0 */
TARGET static inline __m256 load8_n(amp_dtype t, const void *p, int64_t n)
{
    if (n >= 8)
        return avx2_load8_quiet(t, p);
    if (n <= 0)
        return _mm256_setzero_ps();
    float w[8] = { 0 };
    memcpy(w, p, (size_t)n * avx2_size_of(t));
    return _mm256_and_ps(avx2_load8_quiet(t, w), avx2_first_lanes((size_t)n));
}

TARGET static inline float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

TARGET static inline float hsum8(__m256 v)
{
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_add_ss(m, _mm_shuffle_ps(m, m, 1)));
}

/* the lanes where s is not -inf: exp(s - m); +0 in the others */
TARGET static inline __m256 exp_live(__m256 s, __m256 m)
{
    return _mm256_and_ps(_mm256_cmp_ps(s, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ), avx2_exp8(_mm256_sub_ps(s, m)));
}

/* acc + p dp, +0 added where p is 0 */
TARGET static inline __m256 dsum_add(__m256 acc, __m256 p, __m256 dp)
{
    const __m256 live = _mm256_cmp_ps(p, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    return _mm256_add_ps(acc, _mm256_and_ps(live, _mm256_mul_ps(p, dp)));
}

/* p (dp - D) where p is not 0, +0 elsewhere */
TARGET static inline __m256 ds_of(__m256 p, __m256 dp, __m256 D)
{
    const __m256 live = _mm256_cmp_ps(p, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    return _mm256_and_ps(live, _mm256_mul_ps(p, _mm256_sub_ps(dp, D)));
}

TARGET static inline void store8_n(amp_dtype t, void *p, int64_t n, __m256 v)
{
    if (n >= 8)
        avx2_store8(t, p, v);
    else
        avx2_store8_n(t, p, (size_t)n, v);
}

/* ---- sdpa, sdpa_backward: frame/attention_form.h -------------------------------- */

struct amp_sdpa_ctx;
TARGET static int row_scores(const struct amp_sdpa_ctx *a, int64_t b, int64_t i, float *s);

#define AV __m256
#define AW 8
#define ATTN_ROWS 2
#define ATTN_ROWS_OF(X) X(0) X(1)
#define ATTN_TARGET TARGET
#define AV_ZERO _mm256_setzero_ps
#define AV_DUP _mm256_set1_ps
#define AV_LDA _mm256_load_ps
#define AV_STA _mm256_store_ps
#define AV_SUB _mm256_sub_ps
#define AV_FMA _mm256_fmadd_ps
#define AV_ADD _mm256_add_ps
#define AV_MUL _mm256_mul_ps
#define AV_DIV _mm256_div_ps
#define AV_MAX _mm256_max_ps
#define attn_size avx2_size_of
#define attn_load_n load8_n
#define attn_store_n store8_n
#define attn_hmax hmax8
#define attn_exp avx2_exp8
#define attn_hsum hsum8
#define attn_exp_live exp_live
#define attn_dsum_add dsum_add
#define attn_ds ds_of
#include "frame/attention_form.h"

/* ---- the scores ------------------------------------------------------------------- */

/* Lanes of the 8 positions from j that take part (all ones), for row i. */
TARGET static inline __m256 live_lanes(const amp_sdpa_ctx *a, int64_t b, int64_t i, int64_t j)
{
    const amp_sdpa_desc *d = a->d;
    const int64_t n = d->S - j;
    __m256 live = n >= 8 ? _mm256_castsi256_ps(_mm256_set1_epi32(-1)) : n > 0 ? avx2_first_lanes((size_t)n) : _mm256_setzero_ps();
    if (d->is_causal || a->bool_mask != NULL) {
        int32_t keep[8];
        for (int l = 0; l < 8; l++) {
            const int64_t jl = j + l;
            keep[l] = jl < d->S && !(d->is_causal && jl > i) &&
                              (a->bool_mask == NULL || a->bool_mask[b * d->mask_batch_stride + i * d->S + jl])
                          ? -1
                          : 0;
        }
        live = _mm256_and_ps(live, _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)keep)));
    }
    return live;
}

/* Query row i's scores in place in s[0, Sp) (which holds its dot
 * products): masked and padding positions -inf; returns 1 when one is
 * NaN. */
TARGET static int row_scores(const struct amp_sdpa_ctx *a, int64_t b, int64_t i, float *s)
{
    const amp_sdpa_desc *d = a->d;
    const __m256 scale = _mm256_set1_ps((float)d->scale);
    int nan = 0;
    for (int64_t j = 0; j < a->Sp; j += 8) {
        __m256 sc = _mm256_mul_ps(_mm256_load_ps(s + j), scale);
        if (a->mask != NULL)
            sc = _mm256_add_ps(sc, load8_n(a->t, (const char *)a->mask + (size_t)(b * d->mask_batch_stride + i * d->S + j) * avx2_size_of(a->t), d->S - j));
        const __m256 live = live_lanes(a, b, i, j);
        nan |= _mm256_movemask_ps(_mm256_and_ps(live, avx2_isnan(sc)));
        _mm256_store_ps(s + j, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), sc, live));
    }
    return nan != 0;
}

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
ATTENTION_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx2_fill_attention(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    ATTENTION_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
