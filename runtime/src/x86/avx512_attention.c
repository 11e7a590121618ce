/*
 * avx512_attention.c - the AVX-512 sets' vector operations for scaled
 * dot-product attention (sdpa) and its gradient (sdpa_backward), whose
 * algorithms are frame/attention_form.h's, 16 lanes at a time, for f32,
 * bf16 and f16 storage computing in f32: a ViT's or a BERT's attention
 * without the scores in memory.  exp(s - max) is amp_expf in double, 8
 * lanes at a time (amp_expf.h's series); row_scores scales 16 scores per
 * vector, masked (bool mask 0, causal j > i) and padding positions
 * -inf; blocks of 4 rows (ATTN_ROWS: 16 accumulators).
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "avx512_expf.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

static inline size_t dsize(amp_dtype t) { return t == AMP_F32 ? 4 : 2; }

/* n <= 16 values of dtype t at p as f32 (amp_ld's values), others 0 */
TARGET static inline __m512 load16_n(amp_dtype t, const void *p, int64_t n)
{
    if (n >= 16)
        return load16_all(t, p);
    float w[16] = { 0 };
    memcpy(w, p, (size_t)n * dsize(t));
    return _mm512_mask_mov_ps(_mm512_setzero_ps(), (__mmask16)((1u << n) - 1), load16_all(t, w));
}

/* the lanes where s is not -inf: exp(s - m); +0 in the others */
TARGET static inline __m512 exp_live(__m512 s, __m512 m)
{
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, _mm512_set1_ps(-INFINITY), _CMP_NEQ_OQ), avx512_exp16(_mm512_sub_ps(s, m)));
}

/* acc + p dp where p is not 0 (acc unchanged elsewhere) */
TARGET static inline __m512 dsum_add(__m512 acc, __m512 p, __m512 dp)
{
    return _mm512_mask_add_ps(acc, _mm512_cmp_ps_mask(p, _mm512_setzero_ps(), _CMP_NEQ_UQ), acc, _mm512_mul_ps(p, dp));
}

/* p (dp - D) where p is not 0, +0 elsewhere */
TARGET static inline __m512 ds_of(__m512 p, __m512 dp, __m512 D)
{
    return _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(p, _mm512_setzero_ps(), _CMP_NEQ_UQ), p, _mm512_sub_ps(dp, D));
}

TARGET static inline float hmax16(__m512 v) { return _mm512_reduce_max_ps(v); }
TARGET static inline float hsum16(__m512 v) { return _mm512_reduce_add_ps(v); }

TARGET static inline void store16_n(amp_dtype t, void *p, int64_t n, __m512 v)
{
    if (n >= 16)
        store16_all(t, p, v);
    else
        store16(t, p, (__mmask16)((1u << n) - 1), v);
}

/* ---- sdpa, sdpa_backward: frame/attention_form.h -------------------------------- */

struct amp_sdpa_ctx;
TARGET static int row_scores(const struct amp_sdpa_ctx *a, int64_t b, int64_t i, float *s);

#define AV __m512
#define AW 16
#define ATTN_ROWS 4
#define ATTN_ROWS_OF(X) X(0) X(1) X(2) X(3)
#define ATTN_TARGET TARGET
#define AV_ZERO _mm512_setzero_ps
#define AV_DUP _mm512_set1_ps
#define AV_LDA _mm512_load_ps
#define AV_STA _mm512_store_ps
#define AV_SUB _mm512_sub_ps
#define AV_FMA _mm512_fmadd_ps
#define AV_ADD _mm512_add_ps
#define AV_MUL _mm512_mul_ps
#define AV_DIV _mm512_div_ps
#define AV_MAX _mm512_max_ps
#define attn_size dsize
#define attn_load_n load16_n
#define attn_store_n store16_n
#define attn_hmax hmax16
#define attn_exp avx512_exp16
#define attn_hsum hsum16
#define attn_exp_live exp_live
#define attn_dsum_add dsum_add
#define attn_ds ds_of
#include "frame/attention_form.h"

/* ---- the scores ------------------------------------------------------------------- */

/* Query row i's scores in place in s[0, Sp) (which holds its dot
 * products): masked and padding positions -inf; returns 1 when one is
 * NaN. */
TARGET static int row_scores(const struct amp_sdpa_ctx *a, int64_t b, int64_t i, float *s)
{
    const amp_sdpa_desc *d = a->d;
    const __m512 scale = _mm512_set1_ps((float)d->scale);
    __mmask16 nan = 0;
    for (int64_t j = 0; j < a->Sp; j += 16) {
        const int64_t n = d->S - j;
        __m512 sc = _mm512_mul_ps(_mm512_load_ps(s + j), scale);
        if (a->mask != NULL && n > 0)
            sc = _mm512_add_ps(sc, load16_n(a->t, (const char *)a->mask + (size_t)(b * d->mask_batch_stride + i * d->S + j) * dsize(a->t), n));
        __mmask16 live = n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1) : 0;
        if (d->is_causal)
            live &= _mm512_cmple_epi32_mask(_mm512_add_epi32(_mm512_set1_epi32((int)j), _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)),
                                            _mm512_set1_epi32((int)i));
        if (a->bool_mask != NULL)
            for (int l = 0; l < 16 && j + l < d->S; l++)
                if (!a->bool_mask[b * d->mask_batch_stride + i * d->S + j + l])
                    live &= (__mmask16)~(1u << l);
        nan |= _mm512_mask_cmp_ps_mask(live, sc, sc, _CMP_UNORD_Q);
        _mm512_store_ps(s + j, _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), live, sc));
    }
    return nan != 0;
}

/* One batch entry: k transposed and v widened into the slot's buffers, then row by row. */
#define DEFINE(name) AMP_ISA_KERNEL(avx512, name, name)
ATTENTION_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_attention(amp_kernel_table *t)
{
#define INSTALL(name) AMP_ISA_INSTALL(t, avx512, name);
    ATTENTION_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
