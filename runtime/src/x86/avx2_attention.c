/*
 * avx2_attention.c - the avx2 set's scaled dot-product attention (sdpa)
 * and its gradient (sdpa_backward, below), for f32, bf16 and f16 storage
 * computing in f32: the algorithms of x86/avx512_attention.c, 8 lanes at
 * a time.
 *
 * Per batch entry (a head) k and v are widened to f32 once, k transposed
 * to [E, S] (rows padded to 8 columns with zeros); then per query row the
 * scores s_j = (q . k_j) * scale (+ mask) take 8 keys per vector, E
 * broadcast FMAs each (4 vectors at a time), masked positions become
 * -inf; exp(s_j - max) is amp_expf in double, 4 lanes at a time; y =
 * (sum_j p_j v_j) / denominator, rounded once to T.  A row with every
 * position masked, or a NaN score, gives NaN, as the reference.
 *
 * A product: the products' bound, not the reference's bits
 * (tests/runtime/test_fastattention.c); independent of the thread count.
 * The batch entries are split over the pool.  Installed by
 * amp_isa_avx2_fill.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET
#define PARALLEL_MIN_FLOPS 200000

/* amp_expf of 4 lanes in double, as amp_expf.h defines it (k in [-150,
 * 129]: 2^k from its bits, p 2^k a normal double, exact) */
TARGET static __m128 exp4(__m128 xf)
{
    const __m256d x = _mm256_max_pd(_mm256_min_pd(_mm256_cvtps_pd(xf), _mm256_set1_pd(89.0)), _mm256_set1_pd(-104.0));
    const __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(AMP_EXPF_INV_LN2)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256d nk = _mm256_xor_pd(k, _mm256_set1_pd(-0.0));
    __m256d r, p;
    AMP_EXPF_SERIES(_mm256_fmadd_pd, _mm256_set1_pd, nk, x, r, p);
    const __m256i e = _mm256_slli_epi64(
        _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)), 52);
    return _mm256_cvtpd_ps(_mm256_mul_pd(p, _mm256_castsi256_pd(e)));
}

/* no NaN reaches it here: such rows are NaN already */
TARGET static inline __m256 exp8(__m256 x)
{
    return _mm256_set_m128(exp4(_mm256_extractf128_ps(x, 1)), exp4(_mm256_castps256_ps128(x)));
}

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

typedef struct {
    amp_dtype t;
    const amp_sdpa_desc *d;
    const void *q, *k, *v, *mask;
    const uint8_t *bool_mask;
    void *y;
    float *work;
    int64_t Sp, Evp, slot_floats;
} sdpa_args;

/* Lanes of the 8 positions from j that take part (all ones), for row i. */
TARGET static inline __m256 live_lanes(const sdpa_args *a, int64_t b, int64_t i, int64_t j)
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

/* The scores of query row i into s[0, Sp): masked and padding positions
 * -inf; returns 1 when one is NaN. */
TARGET static int row_scores(const sdpa_args *a, int64_t b, int64_t i, const float *qf, const float *kt, float *s)
{
    const amp_sdpa_desc *d = a->d;
    const __m256 scale = _mm256_set1_ps((float)d->scale);
    int nan = 0;
    for (int64_t j0 = 0; j0 < a->Sp; j0 += 32) {
        const int nv = a->Sp - j0 >= 32 ? 4 : (int)((a->Sp - j0) / 8);
        __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (int64_t e = 0; e < d->E; e++) {
            const __m256 qe = _mm256_set1_ps(qf[e]);
            const float *row = kt + e * a->Sp + j0;
            for (int c = 0; c < nv; c++)
                acc[c] = _mm256_fmadd_ps(qe, _mm256_load_ps(row + 8 * c), acc[c]);
        }
        for (int c = 0; c < nv; c++) {
            const int64_t j = j0 + 8 * c;
            __m256 sc = _mm256_mul_ps(acc[c], scale);
            if (a->mask != NULL)
                sc = _mm256_add_ps(sc, load8_n(a->t, (const char *)a->mask + (size_t)(b * d->mask_batch_stride + i * d->S + j) * avx2_size_of(a->t), d->S - j));
            const __m256 live = live_lanes(a, b, i, j);
            nan |= _mm256_movemask_ps(_mm256_and_ps(live, avx2_isnan(sc)));
            _mm256_store_ps(s + j, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), sc, live));
        }
    }
    return nan != 0;
}

TARGET static void sdpa_entry(const sdpa_args *a, int64_t b, float *w)
{
    const amp_sdpa_desc *d = a->d;
    const amp_dtype t = a->t;
    const size_t es = avx2_size_of(t);
    const int64_t S = d->S, E = d->E, Ev = d->Ev, Sp = a->Sp, Evp = a->Evp;
    float *kt = w, *vf = kt + E * Sp, *s = vf + S * Evp, *qf = s + Sp;
    const char *k = (const char *)a->k + (size_t)(b * d->k_batch_stride) * es;
    const char *v = (const char *)a->v + (size_t)(b * d->v_batch_stride) * es;
    for (int64_t j = 0; j < Sp; j++)
        for (int64_t e = 0; e < E; e++)
            kt[e * Sp + j] = j < S ? amp_ld(t, k, j * E + e) : 0.0f;
    for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < Evp; e += 8)
            _mm256_store_ps(vf + j * Evp + e, load8_n(t, v + (size_t)(j * Ev + e) * es, Ev - e));
    for (int64_t i = 0; i < d->L; i++) {
        const char *q = (const char *)a->q + (size_t)(b * d->q_batch_stride + i * E) * es;
        char *y = (char *)a->y + (size_t)((b * d->L + i) * Ev) * es;
        for (int64_t e = 0; e < E; e++)
            qf[e] = amp_ld(t, q, e);
        const int nan = row_scores(a, b, i, qf, kt, s);
        __m256 m = _mm256_set1_ps(-INFINITY);
        for (int64_t j = 0; j < Sp; j += 8)
            m = _mm256_max_ps(m, _mm256_load_ps(s + j));
        const float max = hmax8(m);
        if (nan || max == -INFINITY) { /* every position masked, or a NaN score */
            for (int64_t e = 0; e < Ev; e++)
                amp_st(t, y, e, NAN);
            continue;
        }
        __m256 sum = _mm256_setzero_ps();
        for (int64_t j = 0; j < Sp; j += 8) {
            const __m256 p = exp8(_mm256_sub_ps(_mm256_load_ps(s + j), _mm256_set1_ps(max)));
            sum = _mm256_add_ps(sum, p);
            _mm256_store_ps(s + j, p);
        }
        const __m256 denom = _mm256_set1_ps(hsum8(sum));
        for (int64_t e0 = 0; e0 < Ev; e0 += 32) {
            const int nv = (int)((Evp - e0) >= 32 ? 4 : (Evp - e0) / 8);
            __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
            for (int64_t j = 0; j < S; j++) {
                const __m256 p = _mm256_set1_ps(s[j]);
                const float *row = vf + j * Evp + e0;
                for (int c = 0; c < nv; c++)
                    acc[c] = _mm256_fmadd_ps(p, _mm256_load_ps(row + 8 * c), acc[c]);
            }
            for (int c = 0; c < nv; c++) {
                const int64_t e = e0 + 8 * c, n = Ev - e;
                const __m256 r = _mm256_div_ps(acc[c], denom);
                if (n >= 8)
                    avx2_store8(t, y + e * es, r);
                else
                    avx2_store8_n(t, y + e * es, (size_t)n, r);
            }
        }
    }
}

static void sdpa_task(void *ctx, int64_t task, int slot)
{
    const sdpa_args *a = ctx;
    sdpa_entry(a, task, a->work + slot * a->slot_floats);
}

static void sdpa_run(amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *k, const void *v,
                     const void *mask, const uint8_t *bool_mask, void *y)
{
    const int64_t Sp = (d->S + 7) / 8 * 8, Evp = (d->Ev + 7) / 8 * 8;
    const int64_t per = d->E * Sp + d->S * Evp + Sp + d->E + 8;
    const double flops = 2.0 * (double)d->batch * (double)d->L * (double)d->S * (double)(d->E + d->Ev);
    const int threads = flops < PARALLEL_MIN_FLOPS || d->batch < 2 ? 1 : amp_get_threads();
    sdpa_args a = { t, d, q, k, v, mask, bool_mask, y, NULL, Sp, Evp, (per + 15) / 16 * 16 };
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

/* ---- sdpa_backward ------------------------------------------------------------------
 * x86/avx512_attention.c's algorithm, 8 lanes at a time: per batch entry
 * (a task) q, k (as rows and transposed), v (transposed) and dy widened
 * to f32 once; row by row the scores, p, dp = dy_i . v_j (8 keys per
 * vector), D_i = sum_j p_ij dp_ij and ds_ij = p_ij (dp_ij - D_i) into two
 * [L, Sp] matrices; then dq_i = scale sum_j ds_ij k_j, dk_j = scale sum_i
 * ds_ij q_i, dv_j = sum_i p_ij dy_i in vector accumulators.  A row the
 * forward makes NaN gets p = ds = NaN (its dq row, its entry's dk and dv
 * NaN, as the reference).  A product: within its bound
 * (tests/runtime/test_fastattention_backward.c).  Operands shared by the
 * entries (batch stride 0) go to the reference. */
typedef struct {
    sdpa_args fw; /* t, d, mask, bool_mask, Sp for row_scores; work, slot_floats */
    const void *dy;
    void *dq, *dk, *dv;
    int64_t Ep;
} sdpa_bw_args;

/* out[0, width) = mul * sum_{r < n} coef[r * cstride] * rows[r * rstride + .], rounded to t */
TARGET static void weighted_rows(amp_dtype t, const float *coef, int64_t cstride, int64_t n, const float *rows,
                                 int64_t rstride, int64_t width, float mul, char *out)
{
    const size_t es = avx2_size_of(t);
    for (int64_t e0 = 0; e0 < width; e0 += 32) {
        const int nv = (int)((width - e0 + 7) / 8 < 4 ? (width - e0 + 7) / 8 : 4);
        __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (int64_t r = 0; r < n; r++) {
            const __m256 c = _mm256_set1_ps(coef[r * cstride]);
            const float *row = rows + r * rstride + e0;
            for (int v = 0; v < nv; v++)
                acc[v] = _mm256_fmadd_ps(c, _mm256_load_ps(row + 8 * v), acc[v]);
        }
        for (int v = 0; v < nv; v++) {
            const int64_t e = e0 + 8 * v, m = width - e;
            const __m256 r = _mm256_mul_ps(acc[v], _mm256_set1_ps(mul));
            if (m >= 8)
                avx2_store8(t, out + e * es, r);
            else
                avx2_store8_n(t, out + e * es, (size_t)m, r);
        }
    }
}

/* row i's p into P[0, Sp) and ds into dS[0, Sp) (the scores first in P) */
TARGET static void backward_row(const sdpa_bw_args *a, int64_t b, int64_t i, const float *qf, const float *kt,
                                const float *vt, const float *dyf, float *P, float *dS)
{
    const amp_sdpa_desc *d = a->fw.d;
    const int64_t Sp = a->fw.Sp;
    const int nan = row_scores(&a->fw, b, i, qf, kt, P);
    __m256 m = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < Sp; j += 8)
        m = _mm256_max_ps(m, _mm256_load_ps(P + j));
    const float max = hmax8(m);
    if (nan || max == -INFINITY) { /* every position masked, or a NaN score */
        for (int64_t j = 0; j < Sp; j++)
            P[j] = dS[j] = j < d->S ? NAN : 0.0f;
        return;
    }
    __m256 sum = _mm256_setzero_ps(), dsum = _mm256_setzero_ps();
    for (int64_t j = 0; j < Sp; j += 8) {
        const __m256 sc = _mm256_load_ps(P + j);
        const __m256 live = _mm256_cmp_ps(sc, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ);
        const __m256 p = _mm256_and_ps(live, exp8(_mm256_sub_ps(sc, _mm256_set1_ps(max))));
        sum = _mm256_add_ps(sum, p);
        _mm256_store_ps(P + j, p);
    }
    const __m256 denom = _mm256_set1_ps(hsum8(sum));
    for (int64_t j0 = 0; j0 < Sp; j0 += 32) { /* dp, 32 keys at a time; then p = e / denom */
        const int nv = Sp - j0 >= 32 ? 4 : (int)((Sp - j0) / 8);
        __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (int64_t e = 0; e < d->Ev; e++) {
            const __m256 g = _mm256_set1_ps(dyf[e]);
            const float *row = vt + e * Sp + j0;
            for (int c = 0; c < nv; c++)
                acc[c] = _mm256_fmadd_ps(g, _mm256_load_ps(row + 8 * c), acc[c]);
        }
        for (int c = 0; c < nv; c++) {
            const int64_t j = j0 + 8 * c;
            const __m256 p = _mm256_div_ps(_mm256_load_ps(P + j), denom);
            const __m256 live = _mm256_cmp_ps(p, _mm256_setzero_ps(), _CMP_NEQ_UQ);
            _mm256_store_ps(P + j, p);
            _mm256_store_ps(dS + j, acc[c]);
            dsum = _mm256_add_ps(dsum, _mm256_and_ps(live, _mm256_mul_ps(p, acc[c])));
        }
    }
    const __m256 D = _mm256_set1_ps(hsum8(dsum));
    for (int64_t j = 0; j < Sp; j += 8) {
        const __m256 p = _mm256_load_ps(P + j);
        const __m256 live = _mm256_cmp_ps(p, _mm256_setzero_ps(), _CMP_NEQ_UQ);
        _mm256_store_ps(dS + j, _mm256_and_ps(live, _mm256_mul_ps(p, _mm256_sub_ps(_mm256_load_ps(dS + j), D))));
    }
}

/* One batch entry in the slot's buffer w. */
TARGET static void sdpa_bw_entry(const sdpa_bw_args *a, int64_t b, float *w)
{
    const amp_sdpa_desc *d = a->fw.d;
    const amp_dtype t = a->fw.t;
    const size_t es = avx2_size_of(t);
    const int64_t L = d->L, S = d->S, E = d->E, Ev = d->Ev, Sp = a->fw.Sp, Evp = a->fw.Evp, Ep = a->Ep;
    float *qf = w, *kf = qf + L * Ep, *kt = kf + S * Ep, *vt = kt + E * Sp, *dyf = vt + Ev * Sp;
    float *P = dyf + L * Evp, *dS = P + L * Sp;
    const char *q = (const char *)a->fw.q + (size_t)(b * d->q_batch_stride) * es;
    const char *k = (const char *)a->fw.k + (size_t)(b * d->k_batch_stride) * es;
    const char *v = (const char *)a->fw.v + (size_t)(b * d->v_batch_stride) * es;
    const char *dy = (const char *)a->dy + (size_t)(b * L * Ev) * es;
    for (int64_t i = 0; i < L; i++)
        for (int64_t e = 0; e < Ep; e += 8)
            _mm256_store_ps(qf + i * Ep + e, load8_n(t, q + (size_t)(i * E + e) * es, E - e));
    for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < Ep; e += 8)
            _mm256_store_ps(kf + j * Ep + e, load8_n(t, k + (size_t)(j * E + e) * es, E - e));
    for (int64_t i = 0; i < L; i++)
        for (int64_t e = 0; e < Evp; e += 8)
            _mm256_store_ps(dyf + i * Evp + e, load8_n(t, dy + (size_t)(i * Ev + e) * es, Ev - e));
    for (int64_t e = 0; e < E; e++)
        for (int64_t j = 0; j < Sp; j++)
            kt[e * Sp + j] = j < S ? kf[j * Ep + e] : 0.0f;
    for (int64_t e = 0; e < Ev; e++)
        for (int64_t j = 0; j < Sp; j++)
            vt[e * Sp + j] = j < S ? amp_ld(t, v, j * Ev + e) : 0.0f;
    for (int64_t i = 0; i < L; i++)
        backward_row(a, b, i, qf + i * Ep, kt, vt, dyf + i * Evp, P + i * Sp, dS + i * Sp);
    const float scale = (float)d->scale;
    if (a->dq != NULL)
        for (int64_t i = 0; i < L; i++)
            weighted_rows(t, dS + i * Sp, 1, S, kf, Ep, E, scale,
                          (char *)a->dq + (size_t)(b * d->q_batch_stride + i * E) * es);
    if (a->dk != NULL)
        for (int64_t j = 0; j < S; j++)
            weighted_rows(t, dS + j, Sp, L, qf, Ep, E, scale,
                          (char *)a->dk + (size_t)(b * d->k_batch_stride + j * E) * es);
    if (a->dv != NULL)
        for (int64_t j = 0; j < S; j++)
            weighted_rows(t, P + j, Sp, L, dyf, Evp, Ev, 1.0f,
                          (char *)a->dv + (size_t)(b * d->v_batch_stride + j * Ev) * es);
}

static void sdpa_bw_task(void *ctx, int64_t task, int slot)
{
    const sdpa_bw_args *a = ctx;
    sdpa_bw_entry(a, task, a->fw.work + slot * a->fw.slot_floats);
}

/* 0: done; -1: the reference's case (shared operands, no memory) */
static int sdpa_bw_run(amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *k, const void *v,
                       const void *mask, const uint8_t *bool_mask, const void *dy, void *dq, void *dk, void *dv)
{
    const int64_t Sp = (d->S + 7) / 8 * 8, Evp = (d->Ev + 7) / 8 * 8, Ep = (d->E + 7) / 8 * 8;
    const int64_t per = d->L * Ep + d->S * Ep + d->E * Sp + d->Ev * Sp + d->L * Evp + 2 * d->L * Sp;
    const double flops = 10.0 * (double)d->batch * (double)d->L * (double)d->S * (double)(d->E + d->Ev);
    const int threads = flops < PARALLEL_MIN_FLOPS || d->batch < 2 ? 1 : amp_get_threads();
    if (d->batch > 1 && (d->q_batch_stride == 0 || d->k_batch_stride == 0 || d->v_batch_stride == 0))
        return -1;
    sdpa_bw_args a = { { t, d, q, k, v, mask, bool_mask, NULL, NULL, Sp, Evp, (per + 7) / 8 * 8 }, dy, dq, dk, dv, Ep };
    a.fw.work = amp_scratch_alloc((size_t)(threads > 1 ? AMP_MAX_THREADS : 1) * (size_t)a.fw.slot_floats * sizeof(float));
    if (a.fw.work == NULL)
        return -1;
    if (threads > 1)
        amp_parallel_run(threads, d->batch, sdpa_bw_task, &a);
    else
        for (int64_t b = 0; b < d->batch; b++)
            sdpa_bw_entry(&a, b, a.fw.work);
    amp_scratch_free(a.fw.work);
    return 0;
}

#define SDPA_BACKWARD_ENTRY(T)                                                                    \
    static void avx2_sdpa_backward_##T(const amp_sdpa_desc *d, const AMP_CTYPE_##T *q,            \
                                       const AMP_CTYPE_##T *k, const AMP_CTYPE_##T *v,            \
                                       const AMP_CTYPE_##T *mask, const uint8_t *bool_mask,       \
                                       const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dq, AMP_CTYPE_##T *dk, \
                                       AMP_CTYPE_##T *dv)                                         \
    {                                                                                             \
        if (d->batch <= 0 || d->L <= 0 || d->S <= 0 || d->E <= 0 || d->Ev <= 0 ||                 \
            sdpa_bw_run(AMP_DTYPE_##T, d, q, k, v, mask, bool_mask, dy, dq, dk, dv) != 0)         \
            amp_ref_sdpa_backward_##T(d, q, k, v, mask, bool_mask, dy, dq, dk, dv);               \
    }
SDPA_BACKWARD_ENTRY(f32)
SDPA_BACKWARD_ENTRY(bf16)
SDPA_BACKWARD_ENTRY(f16)

#define SDPA_ENTRY(T)                                                                             \
    static void avx2_sdpa_##T(const amp_sdpa_desc *d, const AMP_CTYPE_##T *q, const AMP_CTYPE_##T *k, \
                              const AMP_CTYPE_##T *v, const AMP_CTYPE_##T *mask, const uint8_t *bool_mask, \
                              AMP_CTYPE_##T *y)                                                   \
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
    X(sdpa_f32, avx2_sdpa_f32) X(sdpa_bf16, avx2_sdpa_bf16) X(sdpa_f16, avx2_sdpa_f16)             \
    X(sdpa_backward_f32, avx2_sdpa_backward_f32) X(sdpa_backward_bf16, avx2_sdpa_backward_bf16)    \
    X(sdpa_backward_f16, avx2_sdpa_backward_f16)
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
