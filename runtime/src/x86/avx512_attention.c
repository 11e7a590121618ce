/*
 * avx512_attention.c - the AVX-512 sets' vector operations for scaled
 * dot-product attention (sdpa) and its gradient (sdpa_backward), whose
 * algorithms are frame/attention_form.h's, 16 lanes at a time, for f32,
 * bf16 and f16 storage computing in f32: a ViT's or a BERT's attention
 * without the scores in memory.  exp(s - max) is amp_expf in double, 8
 * lanes at a time (amp_expf.h's series); row_scores scales 16 scores per
 * vector, masked (bool mask 0, causal j > i) and padding positions
 * -inf; blocks of 4 rows (ATTN_ROWS: 16 accumulators).  The avx512bf16
 * set's bf16 entries take the scores' (and the gradient's dp = dy . v)
 * dot products by pairs with vdpbf16ps (pair_dots), from the bf16
 * operands as they lie.
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

/* ---- avx512bf16's dot products by pairs (frame/attention_form.h's ATTN_PAIR_DOTS) -- */

/* The bf16 rows x [rows, E] as pairs of their columns: xtp[u Sp + j] holds
 * x[j][2u] in its low half and x[j][2u + 1] in its high half (0 past E),
 * 0 for rows j >= rows up to Sp. */
static void pack_pairs(const void *x, int64_t rows, int64_t E, int64_t Sp, uint32_t *xtp)
{
    const uint16_t *h = x;
    const int64_t E2 = (E + 1) / 2;
    for (int64_t j = 0; j < Sp; j++)
        for (int64_t u = 0; u < E2; u++) {
            uint32_t lo = 0, hi = 0;
            if (j < rows) {
                lo = h[j * E + 2 * u];
                hi = 2 * u + 1 < E ? h[j * E + 2 * u + 1] : 0;
            }
            xtp[u * Sp + j] = lo | hi << 16;
        }
}

/* The pair of a's row o at unit u (its column 2u + 1 zero past E): a
 * 32-bit word broadcast to every lane. */
AVX512BF16_TARGET static inline __m512bh pair_of(const uint16_t *row, int64_t u, int64_t E)
{
    const uint32_t w = (uint32_t)row[2 * u] | (2 * u + 1 < E ? (uint32_t)row[2 * u + 1] << 16 : 0u);
    return (__m512bh)_mm512_set1_epi32((int)w);
}

/* out[o ostride + j] = the dot product of bf16 row o of a (astride
 * elements apart, E long) with column j of the pairs xtp (pack_pairs),
 * for o < nrows (1..4) and j < Sp (a multiple of 16): vdpbf16ps adds each
 * pair's two products, exact in f32, into the lane's f32 chain, pair by
 * pair in ascending order; 64 columns a pass in 16 accumulators. */
AVX512BF16_TARGET static void pair_dots(const void *a, int64_t astride, int nrows, const uint32_t *xtp, int64_t E,
                                        int64_t Sp, float *out, int64_t ostride)
{
    const uint16_t *r0 = a, *r1 = r0 + (nrows > 1 ? astride : 0), *r2 = r0 + (nrows > 2 ? 2 * astride : 0),
                   *r3 = r0 + (nrows > 3 ? 3 * astride : 0);
    const int64_t E2 = (E + 1) / 2;
    int64_t j0 = 0;
    for (; j0 + 64 <= Sp; j0 += 64) {
        __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
               c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
        for (int64_t u = 0; u < E2; u++) {
            const uint32_t *col = xtp + u * Sp + j0;
            const __m512bh b0 = (__m512bh)_mm512_load_si512(col), b1 = (__m512bh)_mm512_load_si512(col + 16),
                           b2 = (__m512bh)_mm512_load_si512(col + 32), b3 = (__m512bh)_mm512_load_si512(col + 48);
            __m512bh p = pair_of(r0, u, E);
            c00 = _mm512_dpbf16_ps(c00, p, b0), c01 = _mm512_dpbf16_ps(c01, p, b1);
            c02 = _mm512_dpbf16_ps(c02, p, b2), c03 = _mm512_dpbf16_ps(c03, p, b3);
            p = pair_of(r1, u, E);
            c10 = _mm512_dpbf16_ps(c10, p, b0), c11 = _mm512_dpbf16_ps(c11, p, b1);
            c12 = _mm512_dpbf16_ps(c12, p, b2), c13 = _mm512_dpbf16_ps(c13, p, b3);
            p = pair_of(r2, u, E);
            c20 = _mm512_dpbf16_ps(c20, p, b0), c21 = _mm512_dpbf16_ps(c21, p, b1);
            c22 = _mm512_dpbf16_ps(c22, p, b2), c23 = _mm512_dpbf16_ps(c23, p, b3);
            p = pair_of(r3, u, E);
            c30 = _mm512_dpbf16_ps(c30, p, b0), c31 = _mm512_dpbf16_ps(c31, p, b1);
            c32 = _mm512_dpbf16_ps(c32, p, b2), c33 = _mm512_dpbf16_ps(c33, p, b3);
        }
        const __m512 rows[4][4] = { { c00, c01, c02, c03 }, { c10, c11, c12, c13 }, { c20, c21, c22, c23 },
                                    { c30, c31, c32, c33 } };
        for (int o = 0; o < nrows; o++)
            for (int v = 0; v < 4; v++)
                _mm512_store_ps(out + o * ostride + j0 + 16 * v, rows[o][v]);
    }
    for (; j0 < Sp; j0 += 16) {
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        for (int64_t u = 0; u < E2; u++) {
            const __m512bh b = (__m512bh)_mm512_load_si512(xtp + u * Sp + j0);
            c0 = _mm512_dpbf16_ps(c0, pair_of(r0, u, E), b);
            c1 = _mm512_dpbf16_ps(c1, pair_of(r1, u, E), b);
            c2 = _mm512_dpbf16_ps(c2, pair_of(r2, u, E), b);
            c3 = _mm512_dpbf16_ps(c3, pair_of(r3, u, E), b);
        }
        const __m512 rows[4] = { c0, c1, c2, c3 };
        for (int o = 0; o < nrows; o++)
            _mm512_store_ps(out + o * ostride + j0, rows[o]);
    }
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
#define ATTN_PAIR_DOTS
#define attn_pack_pairs pack_pairs
#define attn_pair_dots pair_dots
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

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
ATTENTION_KERNELS(DEFINE)
#undef DEFINE
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512bf16, name, impl)
ATTENTION_PAIR_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_attention(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    ATTENTION_KERNELS(INSTALL)
#undef INSTALL
}

void amp_isa_avx512bf16_fill_attention(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512bf16, name);
    ATTENTION_PAIR_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
