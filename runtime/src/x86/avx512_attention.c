/*
 * avx512_attention.c - the AVX-512 sets' scaled dot-product attention
 * (sdpa) and its gradient (sdpa_backward, below), for f32, bf16 and f16
 * storage computing in f32: a ViT's or a BERT's attention without the
 * scores in memory.
 *
 * Per batch entry (a head) k and v are widened to f32 once, k transposed
 * to [E, S] (rows padded to 16 columns with zeros); then per query row
 * the scores s_j = (q . k_j) * scale (+ mask) take 16 keys per vector,
 * E broadcast FMAs each (4 vectors at a time), masked positions (bool
 * mask 0, causal j > i) become -inf, as the reference removes them;
 * exp(s_j - max) is amp_expf (exp16 of x86/avx512_rows.c's form), their
 * sum the denominator; y = (sum_j p_j v_j) / denominator, 16 output
 * columns per vector, rounded once to T.  A row with every position
 * masked, or a NaN score, gives NaN, as the reference.
 *
 * A product, not an element-wise kernel: the dot products and the sum
 * over the keys are FMA chains in another order than the reference's, so
 * the results meet the products' bound (docs/runtime.md, "The optimized
 * matrix products"; tests/runtime/test_fastattention.c) rather than its
 * bits; they do not depend on the thread count.  The batch entries are
 * split over the pool, each task with its own f32 buffers.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

/* amp_expf of 8 lanes in double, as amp_expf.h defines it */
TARGET static __m256 exp8(__m256 xf)
{
    const __m512d x = _mm512_max_pd(_mm512_min_pd(_mm512_cvtps_pd(xf), _mm512_set1_pd(89.0)), _mm512_set1_pd(-104.0));
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(AMP_EXPF_INV_LN2)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512d nk = _mm512_castsi512_pd(
        _mm512_xor_si512(_mm512_castpd_si512(k), _mm512_set1_epi64((long long)0x8000000000000000ull)));
    __m512d r, p;
    AMP_EXPF_SERIES(_mm512_fmadd_pd, _mm512_set1_pd, nk, x, r, p);
    return _mm512_cvtpd_ps(_mm512_scalef_pd(p, k));
}

/* amp_expf of 16 lanes (no NaN reaches it here: such rows are NaN already) */
TARGET static inline __m512 exp16(__m512 x)
{
    const __m256 lo = exp8(_mm512_castps512_ps256(x));
    const __m256 hi = exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

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
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, _mm512_set1_ps(-INFINITY), _CMP_NEQ_OQ), exp16(_mm512_sub_ps(s, m)));
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

/* ---- sdpa_backward: frame/attention_backward_form.h ------------------------------ */

struct amp_sdpa_ctx;
TARGET static int row_scores(const struct amp_sdpa_ctx *a, int64_t b, int64_t i, const float *qf, const float *kt,
                             float *s);

#define AV __m512
#define AW 16
#define ATTN_TARGET TARGET
#define AV_ZERO _mm512_setzero_ps
#define AV_DUP _mm512_set1_ps
#define AV_LDA _mm512_load_ps
#define AV_STA _mm512_store_ps
#define AV_FMA _mm512_fmadd_ps
#define AV_ADD _mm512_add_ps
#define AV_MUL _mm512_mul_ps
#define AV_DIV _mm512_div_ps
#define AV_MAX _mm512_max_ps
#define attn_size dsize
#define attn_load_n load16_n
#define attn_store_n store16_n
#define attn_hmax hmax16
#define attn_hsum hsum16
#define attn_exp_live exp_live
#define attn_dsum_add dsum_add
#define attn_ds ds_of
#include "frame/attention_backward_form.h"

/* ---- sdpa ------------------------------------------------------------------------- */

/* The scores of query row i into s[0, Sp): masked and padding positions
 * -inf; returns 1 when one is NaN. */
TARGET static int row_scores(const struct amp_sdpa_ctx *a, int64_t b, int64_t i, const float *qf, const float *kt, float *s)
{
    const amp_sdpa_desc *d = a->d;
    const __m512 scale = _mm512_set1_ps((float)d->scale);
    __mmask16 nan = 0;
    for (int64_t j0 = 0; j0 < a->Sp; j0 += 64) {
        const int nv = a->Sp - j0 >= 64 ? 4 : (int)((a->Sp - j0) / 16);
        __m512 acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
        for (int64_t e = 0; e < d->E; e++) {
            const __m512 qe = _mm512_set1_ps(qf[e]);
            const float *row = kt + e * a->Sp + j0;
            for (int c = 0; c < nv; c++)
                acc[c] = _mm512_fmadd_ps(qe, _mm512_load_ps(row + 16 * c), acc[c]);
        }
        for (int c = 0; c < nv; c++) {
            const int64_t j = j0 + 16 * c, n = d->S - j;
            __m512 sc = _mm512_mul_ps(acc[c], scale);
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
    }
    return nan != 0;
}

/* One batch entry: k transposed and v widened into the slot's buffers, then row by row. */
TARGET static void sdpa_entry(const amp_sdpa_ctx *a, int64_t b, float *w)
{
    const amp_sdpa_desc *d = a->d;
    const amp_dtype t = a->t;
    const size_t es = dsize(t);
    const int64_t S = d->S, E = d->E, Ev = d->Ev, Sp = a->Sp, Evp = a->Evp;
    float *kt = w, *vf = kt + E * Sp, *s = vf + S * Evp, *qf = s + Sp;
    const char *k = (const char *)a->k + (size_t)(b * d->k_batch_stride) * es;
    const char *v = (const char *)a->v + (size_t)(b * d->v_batch_stride) * es;
    for (int64_t j = 0; j < Sp; j++)
        for (int64_t e = 0; e < E; e++)
            kt[e * Sp + j] = j < S ? amp_ld(t, k, j * E + e) : 0.0f;
    for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < Evp; e += 16)
            _mm512_store_ps(vf + j * Evp + e, load16_n(t, v + (size_t)(j * Ev + e) * es, Ev - e));
    for (int64_t i = 0; i < d->L; i++) {
        const char *q = (const char *)a->q + (size_t)(b * d->q_batch_stride + i * E) * es;
        char *y = (char *)a->y + (size_t)((b * d->L + i) * Ev) * es;
        for (int64_t e = 0; e < E; e++)
            qf[e] = amp_ld(t, q, e);
        const int nan = row_scores(a, b, i, qf, kt, s);
        __m512 m = _mm512_set1_ps(-INFINITY);
        for (int64_t j = 0; j < Sp; j += 16)
            m = _mm512_max_ps(m, _mm512_load_ps(s + j));
        const float max = _mm512_reduce_max_ps(m);
        if (nan || max == -INFINITY) { /* every position masked, or a NaN score */
            for (int64_t e = 0; e < Ev; e++)
                amp_st(t, y, e, NAN);
            continue;
        }
        __m512 sum = _mm512_setzero_ps();
        for (int64_t j = 0; j < Sp; j += 16) {
            const __m512 p = exp16(_mm512_sub_ps(_mm512_load_ps(s + j), _mm512_set1_ps(max)));
            sum = _mm512_add_ps(sum, p);
            _mm512_store_ps(s + j, p);
        }
        const __m512 denom = _mm512_set1_ps(_mm512_reduce_add_ps(sum));
        for (int64_t e0 = 0; e0 < Ev; e0 += 64) {
            const int nv = (int)((Evp - e0) >= 64 ? 4 : (Evp - e0) / 16);
            __m512 acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
            for (int64_t j = 0; j < S; j++) {
                const __m512 p = _mm512_set1_ps(s[j]);
                const float *row = vf + j * Evp + e0;
                for (int c = 0; c < nv; c++)
                    acc[c] = _mm512_fmadd_ps(p, _mm512_load_ps(row + 16 * c), acc[c]);
            }
            for (int c = 0; c < nv; c++) {
                const int64_t e = e0 + 16 * c, n = Ev - e;
                const __m512 r = _mm512_div_ps(acc[c], denom);
                store16_n(t, y + e * es, n, r);
            }
        }
    }
}

static void sdpa_task(void *ctx, int64_t task, int slot)
{
    const amp_sdpa_ctx *a = ctx;
    sdpa_entry(a, task, a->work + slot * a->slot_floats);
}

static void sdpa_run(amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *k, const void *v,
                     const void *mask, const uint8_t *bool_mask, void *y)
{
    const int64_t Sp = (d->S + 15) / 16 * 16, Evp = (d->Ev + 15) / 16 * 16;
    const int64_t per = d->E * Sp + d->S * Evp + Sp + d->E + 16;
    const double flops = 2.0 * (double)d->batch * (double)d->L * (double)d->S * (double)(d->E + d->Ev);
    const int threads = flops < PARALLEL_MIN_FLOPS || d->batch < 2 ? 1 : amp_get_threads();
    amp_sdpa_ctx a = { t, d, q, k, v, mask, bool_mask, y, NULL, Sp, Evp, (per + 15) / 16 * 16 };
    a.work = amp_scratch_alloc((size_t)(threads > 1 ? AMP_MAX_THREADS : 1) * (size_t)a.slot_floats * sizeof(float));
    if (a.work == NULL) { /* no memory for the buffers: the reference, which needs none */
        switch (t) {
        case AMP_F32: amp_ref_sdpa_f32(d, q, k, v, mask, bool_mask, y); break;
        case AMP_BF16: amp_ref_sdpa_bf16(d, q, k, v, mask, bool_mask, y); break;
        default: amp_ref_sdpa_f16(d, q, k, v, mask, bool_mask, y); break;
        }
        return;
    }
    if (threads > 1)
        amp_parallel_run(threads, d->batch, sdpa_task, &a);
    else
        for (int64_t b = 0; b < d->batch; b++)
            sdpa_entry(&a, b, a.work);
    amp_scratch_free(a.work);
}

#define SDPA_ENTRY(T)                                                                             \
    static void avx512_sdpa_##T(const amp_sdpa_desc *d, const AMP_CTYPE_##T *q, const AMP_CTYPE_##T *k, \
                                const AMP_CTYPE_##T *v, const AMP_CTYPE_##T *mask, const uint8_t *bool_mask, \
                                AMP_CTYPE_##T *y)                                                 \
    {                                                                                             \
        if (d->batch <= 0 || d->L <= 0 || d->Ev <= 0)                                             \
            return;                                                                               \
        if (d->S <= 0 || d->E <= 0) {                                                             \
            amp_ref_sdpa_##T(d, q, k, v, mask, bool_mask, y);                                     \
            return;                                                                               \
        }                                                                                         \
        sdpa_run(AMP_DTYPE_##T, d, q, k, v, mask, bool_mask, y);                                  \
    }
SDPA_ENTRY(f32)
SDPA_ENTRY(bf16)
SDPA_ENTRY(f16)

#define ATTENTION_KERNELS(X)                                                                      \
    X(sdpa_f32, avx512_sdpa_f32) X(sdpa_bf16, avx512_sdpa_bf16) X(sdpa_f16, avx512_sdpa_f16)     \
    X(sdpa_backward_f32, sdpa_backward_f32) X(sdpa_backward_bf16, sdpa_backward_bf16)            \
    X(sdpa_backward_f16, sdpa_backward_f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
ATTENTION_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_attention(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    ATTENTION_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
