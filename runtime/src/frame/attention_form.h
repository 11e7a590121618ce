/*
 * attention_form.h - the x86 kernel sets' scaled dot-product attention
 * (sdpa) and its gradient (sdpa_backward), written once over a set's
 * vector operations (x86/avx2_attention.c, 8 lanes;
 * x86/avx512_attention.c, 16), with their table entries and the list of
 * the kernels they fill.
 *
 * sdpa: per batch entry (a head) k and v are widened to f32 once, k
 * transposed to [E, Sp] (rows padded to a multiple of AW columns with
 * zeros); then per block of ATTN_ROWS query rows the dot products
 * q . k_j (block_dots: each loaded vector of k serves every row of the
 * block, so k streams from cache once per block rather than once per
 * row), and per row the scores s_j = (q . k_j) * scale (+ mask) (the
 * set's row_scores, masked positions -inf, as the reference removes
 * them); exp(s_j - max), their sum the denominator; then for the block
 * y = (sum_j p_j v_j) / denominator (block_weighted, v's vectors shared
 * the same way), AW output columns per vector, rounded once to T.  A row
 * with every position masked, or a NaN score, gives NaN, as the
 * reference.
 *
 * sdpa_backward: per batch entry (a task), with p_ij the attention weights, dp_ij = dy_i .
 * v_j, D_i = sum_j p_ij dp_ij and ds_ij = p_ij (dp_ij - D_i) (masked
 * positions p = ds = 0), as ref_backward_attention.c: q, k (both as rows
 * and transposed), v (transposed) and dy widened to f32 once; per block
 * of ATTN_ROWS rows the dot products of the scores and of dp
 * (block_dots), then row by row the scores (the set's row_scores), p, D
 * and ds into two [L, Sp] matrices; then, ATTN_ROWS output rows at a time
 * (block_weighted),
 *     dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i,
 *     dv_j = sum_i p_ij dy_i.
 * Each output element is one FMA chain over its sum's index in ascending
 * order, whatever the blocking.
 * A row the forward makes NaN gets p = ds = NaN, so its dq row and every
 * dk and dv row of its entry are NaN, as the reference's.  Operands
 * shared by the batch entries (batch stride 0, whose gradients sum over
 * the entries) go to the reference.
 *
 * Products, not element-wise kernels: the dot products and the sums over
 * the keys are FMA chains in another order than the reference's, so the
 * results meet the products' bound (docs/runtime.md, "The optimized
 * matrix products"; tests/runtime/test_fastattention.c,
 * test_fastattention_backward.c) rather than its bits; they do not depend
 * on the thread count.  The batch entries are split over the pool, each
 * task with its own f32 buffers (a slot's part of one scratch buffer).
 *
 * A template, included once by each set's file after it has defined
 * (its row_scores then takes this file's amp_sdpa_ctx):
 *   AV, AW              the f32 vector type and its lanes
 *   ATTN_ROWS, ATTN_ROWS_OF(X)  rows per block, and X(0) .. X(ATTN_ROWS - 1)
 *                       (their ATTN_ROWS x 4 accumulators and the shared
 *                       vectors fit the set's registers)
 *   ATTN_TARGET         the target attribute of the set's functions
 *   AV_ZERO(), AV_DUP(float), AV_LDA(p), AV_STA(p, v) (aligned f32),
 *   AV_FMA(a, b, c) (a b + c), AV_ADD, AV_MUL, AV_DIV, AV_MAX (a, b)
 *   attn_size(t)        bytes of an element of dtype t
 *   attn_load_n(t, p, n), attn_store_n(t, p, n, v)  the first n elements
 *                       of dtype t (n may exceed AW), other lanes 0
 *   attn_hmax(v), attn_hsum(v)   the lanes' maximum and sum
 *   attn_exp(v)         amp_expf per lane (no NaN reaches it)
 *   attn_exp_live(s, m) exp(s - m) where s is not -inf, 0 elsewhere
 *   attn_dsum_add(acc, p, dp)    acc + p dp where p is not 0
 *   attn_ds(p, dp, D)   p (dp - D) where p is not 0, 0 elsewhere
 *   row_scores(a, b, i, s)  query row i's scores in place in s[0, Sp),
 *                       which holds its dot products q . k_j: times
 *                       scale, plus the mask; masked and padding
 *                       positions -inf; 1 when one is NaN (declared
 *                       before, on struct amp_sdpa_ctx; defined after)
 * and, for a set whose bf16 dot products multiply pairs of bf16 in one
 * instruction (avx512bf16's vdpbf16ps), ATTN_PAIR_DOTS with
 *   attn_pack_pairs(x, rows, E, Sp, xtp)  bf16 rows [rows, E] transposed
 *                       into pairs of their columns: xtp[u Sp + j] holds
 *                       x[j][2u] (low half) and x[j][2u + 1], 0 past E
 *                       and for j >= rows
 *   attn_pair_dots(a, astride, nrows, xtp, E, Sp, out, ostride)  block_dots
 *                       over bf16 rows a and such pairs, each pair's two
 *                       exact products added into the f32 chain
 * which give the dp_bf16 entries: sdpa's scores q . k_j and sdpa_backward's
 * scores and dp = dy . v_j from the bf16 operands as they lie (their
 * products exact in f32 either way, so the same bound), at twice the f32
 * rate; the sums weighted by p and ds stay f32 (those weights are not
 * bf16).
 * Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_ATTENTION_FORM_H
#define AMPRT_FRAME_ATTENTION_FORM_H

#include <math.h>
#include <stdint.h>

#define PARALLEL_MIN_FLOPS 200000 /* below, one thread: waking the pool costs more */

typedef struct amp_sdpa_ctx {
    amp_dtype t;
    const amp_sdpa_desc *d;
    const void *q, *k, *v, *mask;
    const uint8_t *bool_mask;
    void *y;
    float *work; /* per pool slot: slot_floats each */
    int64_t Sp, Evp, slot_floats;
    int pairs; /* the bf16 dot products by pairs (ATTN_PAIR_DOTS; t bf16) */
} amp_sdpa_ctx;

/* ---- blocks of rows ---------------------------------------------------------------- */

/* The blocks' accumulators as named variables, one group of four vectors
 * per row (ATTN_ROWS_OF lists the rows), so that they stay in registers:
 * an array indexed in loops over the rows went through the stack. */
#define ATTN_ACC_DECL(o) AV acc##o##_0 = AV_ZERO(), acc##o##_1 = AV_ZERO(), acc##o##_2 = AV_ZERO(), acc##o##_3 = AV_ZERO();
#define ATTN_ACC1_DECL(o) AV acc##o##_0 = AV_ZERO();
#define ATTN_FMA4(o, x)                                                                           \
    {                                                                                             \
        const AV x_ = (x);                                                                        \
        acc##o##_0 = AV_FMA(x_, b0, acc##o##_0);                                                  \
        acc##o##_1 = AV_FMA(x_, b1, acc##o##_1);                                                  \
        acc##o##_2 = AV_FMA(x_, b2, acc##o##_2);                                                  \
        acc##o##_3 = AV_FMA(x_, b3, acc##o##_3);                                                  \
    }
#define ATTN_FMA1(o, x) acc##o##_0 = AV_FMA((x), b0, acc##o##_0);

/* For o < nrows (1..ATTN_ROWS): out + o out_stride elements, [0, width),
 * = the sum over r < n, ascending, of coef[o ostride + r cstride]
 * rows[r rstride + .] (one FMA chain per element), divided by div[o]
 * when div is not NULL, else times mul; rounded once to t.  rows is
 * aligned and readable to width rounded up to AW. */
ATTN_TARGET static void block_weighted(amp_dtype t, const float *coef, int64_t cstride, int64_t ostride, int nrows,
                                       int64_t n, const float *rows, int64_t rstride, int64_t width, float mul,
                                       const float *div, char *out, int64_t out_stride)
{
    const size_t es = attn_size(t);
#define COEF_PTR(o) const float *cr##o = coef + (o < nrows ? o : 0) * ostride;
#define WEIGH4(o) ATTN_FMA4(o, AV_DUP(cr##o[r * cstride]))
#define WEIGH1(o) ATTN_FMA1(o, AV_DUP(cr##o[r * cstride]))
#define OUT_ONE(o, c, v)                                                                          \
    attn_store_n(t, out + (size_t)(o * out_stride + e0 + (c) * AW) * es, width - e0 - (c) * AW,     \
                 div ? AV_DIV((v), AV_DUP(div[o])) : AV_MUL((v), AV_DUP(mul)));
#define OUT4(o)                                                                                   \
    if (o < nrows) {                                                                              \
        OUT_ONE(o, 0, acc##o##_0)                                                                 \
        OUT_ONE(o, 1, acc##o##_1)                                                                 \
        OUT_ONE(o, 2, acc##o##_2)                                                                 \
        if (width - e0 > 3 * AW)                                                                  \
            OUT_ONE(o, 3, acc##o##_3)                                                             \
    }
#define OUT1(o)                                                                                   \
    if (o < nrows)                                                                                \
        OUT_ONE(o, 0, acc##o##_0)
    ATTN_ROWS_OF(COEF_PTR)
    int64_t e0 = 0;
    /* four vectors a pass while more than three remain (the fourth may be
     * partial: rows are readable to a multiple of AW), the rest one by one */
    for (; width - e0 > 3 * AW; e0 += 4 * AW) {
        ATTN_ROWS_OF(ATTN_ACC_DECL)
        for (int64_t r = 0; r < n; r++) {
            const float *row = rows + r * rstride + e0;
            const AV b0 = AV_LDA(row), b1 = AV_LDA(row + AW), b2 = AV_LDA(row + 2 * AW), b3 = AV_LDA(row + 3 * AW);
            ATTN_ROWS_OF(WEIGH4)
        }
        ATTN_ROWS_OF(OUT4)
    }
    for (; e0 < width; e0 += AW) {
        ATTN_ROWS_OF(ATTN_ACC1_DECL)
        for (int64_t r = 0; r < n; r++) {
            const AV b0 = AV_LDA(rows + r * rstride + e0);
            ATTN_ROWS_OF(WEIGH1)
        }
        ATTN_ROWS_OF(OUT1)
    }
#undef COEF_PTR
#undef WEIGH4
#undef WEIGH1
#undef OUT_ONE
#undef OUT4
#undef OUT1
}

/* out[o ostride + j] = sum over e < E, ascending, of a[o astride + e]
 * bt[e Sp + j] (one FMA chain each), for o < nrows (1..ATTN_ROWS) and
 * j < Sp (a multiple of AW): block_weighted's sums left in f32 (times 1,
 * which changes no bit). */
ATTN_TARGET static void block_dots(const float *a, int64_t astride, int nrows, const float *bt, int64_t E, int64_t Sp,
                                   float *out, int64_t ostride)
{
    block_weighted(AMP_F32, a, 1, astride, nrows, E, bt, Sp, Sp, 1.0f, NULL, (char *)out, ostride);
}

/* ---- sdpa ------------------------------------------------------------------------- */

/* One batch entry: k transposed and v widened into the slot's buffer w,
 * then ATTN_ROWS rows at a time. */
ATTN_TARGET static void sdpa_entry(const amp_sdpa_ctx *a, int64_t b, float *w)
{
    const amp_sdpa_desc *d = a->d;
    const amp_dtype t = a->t;
    const size_t es = attn_size(t);
    const int64_t S = d->S, E = d->E, Ev = d->Ev, Sp = a->Sp, Evp = a->Evp;
    float *kt = w, *vf = kt + E * Sp, *s = vf + S * Evp, *qf = s + ATTN_ROWS * Sp;
    const char *k = (const char *)a->k + (size_t)(b * d->k_batch_stride) * es;
    const char *v = (const char *)a->v + (size_t)(b * d->v_batch_stride) * es;
#if defined(ATTN_PAIR_DOTS)
    if (a->pairs)
        attn_pack_pairs(k, S, E, Sp, (uint32_t *)(void *)kt);
    else
#endif
        for (int64_t j = 0; j < Sp; j++)
            for (int64_t e = 0; e < E; e++)
                kt[e * Sp + j] = j < S ? amp_ld(t, k, j * E + e) : 0.0f;
    for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < Evp; e += AW)
            AV_STA(vf + j * Evp + e, attn_load_n(t, v + (size_t)(j * Ev + e) * es, Ev - e));
    for (int64_t i0 = 0; i0 < d->L; i0 += ATTN_ROWS) {
        const int nrows = d->L - i0 < ATTN_ROWS ? (int)(d->L - i0) : ATTN_ROWS;
        const char *q = (const char *)a->q + (size_t)(b * d->q_batch_stride + i0 * E) * es;
        char *y = (char *)a->y + (size_t)((b * d->L + i0) * Ev) * es;
        float denom[ATTN_ROWS];
        int bad[ATTN_ROWS];
#if defined(ATTN_PAIR_DOTS)
        if (a->pairs)
            attn_pair_dots(q, E, nrows, (const uint32_t *)(const void *)kt, E, Sp, s, Sp);
        else
#endif
        {
            for (int64_t e = 0; e < nrows * E; e++)
                qf[e] = amp_ld(t, q, e);
            block_dots(qf, E, nrows, kt, E, Sp, s, Sp);
        }
        for (int o = 0; o < nrows; o++) {
            float *so = s + o * Sp;
            const int nan = row_scores(a, b, i0 + o, so);
            AV m = AV_DUP(-INFINITY);
            for (int64_t j = 0; j < Sp; j += AW)
                m = AV_MAX(m, AV_LDA(so + j));
            const float max = attn_hmax(m);
            bad[o] = nan || max == -INFINITY; /* every position masked, or a NaN score */
            denom[o] = 1.0f;
            if (bad[o])
                continue;
            AV sum = AV_ZERO();
            for (int64_t j = 0; j < Sp; j += AW) {
                const AV p = attn_exp(AV_SUB(AV_LDA(so + j), AV_DUP(max)));
                sum = AV_ADD(sum, p);
                AV_STA(so + j, p);
            }
            denom[o] = attn_hsum(sum);
        }
        block_weighted(t, s, 1, Sp, nrows, S, vf, Evp, Ev, 1.0f, denom, y, Ev);
        for (int o = 0; o < nrows; o++)
            if (bad[o])
                for (int64_t e = 0; e < Ev; e++)
                    amp_st(t, y + (size_t)(o * Ev) * es, e, NAN);
    }
}

static void sdpa_task(void *ctx, int64_t task, int slot)
{
    const amp_sdpa_ctx *a = ctx;
    sdpa_entry(a, task, a->work + slot * a->slot_floats);
}

static void sdpa_run(amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *k, const void *v,
                     const void *mask, const uint8_t *bool_mask, void *y, int pairs)
{
    const int64_t Sp = (d->S + AW - 1) / AW * AW, Evp = (d->Ev + AW - 1) / AW * AW;
    const int64_t per = d->E * Sp + d->S * Evp + ATTN_ROWS * (Sp + d->E) + AW;
    const double flops = 2.0 * (double)d->batch * (double)d->L * (double)d->S * (double)(d->E + d->Ev);
    const int threads = flops < PARALLEL_MIN_FLOPS || d->batch < 2 ? 1 : amp_get_threads();
    amp_sdpa_ctx a = { t, d, q, k, v, mask, bool_mask, y, NULL, Sp, Evp, (per + 15) / 16 * 16, pairs };
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

/* sdpa for T, named name; pairs: the dot products by pairs (bf16) */
#define SDPA_ENTRY(T, name, pairs)                                                                \
    static void name(const amp_sdpa_desc *d, const AMP_CTYPE_##T *q, const AMP_CTYPE_##T *k,      \
                     const AMP_CTYPE_##T *v, const AMP_CTYPE_##T *mask, const uint8_t *bool_mask, \
                     AMP_CTYPE_##T *y)                                                            \
    {                                                                                             \
        if (d->batch <= 0 || d->L <= 0 || d->Ev <= 0)                                             \
            return;                                                                               \
        if (d->S <= 0 || d->E <= 0) {                                                             \
            amp_ref_sdpa_##T(d, q, k, v, mask, bool_mask, y);                                     \
            return;                                                                               \
        }                                                                                         \
        sdpa_run(AMP_DTYPE_##T, d, q, k, v, mask, bool_mask, y, pairs);                           \
    }
SDPA_ENTRY(f32, sdpa_f32, 0)
SDPA_ENTRY(bf16, sdpa_bf16, 0)
SDPA_ENTRY(f16, sdpa_f16, 0)

/* ---- sdpa_backward ---------------------------------------------------------------- */

typedef struct {
    amp_sdpa_ctx fw; /* t, d, mask, bool_mask, Sp for row_scores; work, slot_floats */
    const void *dy;
    void *dq, *dk, *dv;
    int64_t Ep;
} sdpa_bw_args;

/* Rows i0 .. i0 + nrows - 1: p into their rows of P and ds into dS. */
ATTN_TARGET static void backward_rows(const sdpa_bw_args *a, int64_t b, int64_t i0, int nrows, const float *qf,
                                      const float *kt, const float *vt, const float *dyf, float *P, float *dS)
{
    const amp_sdpa_desc *d = a->fw.d;
    const int64_t Sp = a->fw.Sp;
#if defined(ATTN_PAIR_DOTS)
    if (a->fw.pairs) { /* from the bf16 rows as they lie, against pairs of k's and v's columns */
        const size_t es = attn_size(a->fw.t);
        const char *q = (const char *)a->fw.q + (size_t)(b * d->q_batch_stride + i0 * d->E) * es;
        const char *dy = (const char *)a->dy + (size_t)((b * d->L + i0) * d->Ev) * es;
        attn_pair_dots(q, d->E, nrows, (const uint32_t *)(const void *)kt, d->E, Sp, P + i0 * Sp, Sp);
        attn_pair_dots(dy, d->Ev, nrows, (const uint32_t *)(const void *)vt, d->Ev, Sp, dS + i0 * Sp, Sp);
    } else
#endif
    {
        block_dots(qf + i0 * a->Ep, a->Ep, nrows, kt, d->E, Sp, P + i0 * Sp, Sp);          /* q . k_j */
        block_dots(dyf + i0 * a->fw.Evp, a->fw.Evp, nrows, vt, d->Ev, Sp, dS + i0 * Sp, Sp); /* dp = dy . v_j */
    }
    for (int o = 0; o < nrows; o++) {
        const int64_t i = i0 + o;
        float *Pi = P + i * Sp, *dSi = dS + i * Sp;
        const int nan = row_scores(&a->fw, b, i, Pi);
        AV m = AV_DUP(-INFINITY);
        for (int64_t j = 0; j < Sp; j += AW)
            m = AV_MAX(m, AV_LDA(Pi + j));
        const float max = attn_hmax(m);
        if (nan || max == -INFINITY) { /* every position masked, or a NaN score */
            for (int64_t j = 0; j < Sp; j++)
                Pi[j] = dSi[j] = j < d->S ? NAN : 0.0f;
            continue;
        }
        AV sum = AV_ZERO(), dsum = AV_ZERO();
        for (int64_t j = 0; j < Sp; j += AW) {
            const AV p = attn_exp_live(AV_LDA(Pi + j), AV_DUP(max));
            sum = AV_ADD(sum, p);
            AV_STA(Pi + j, p);
        }
        const AV denom = AV_DUP(attn_hsum(sum));
        for (int64_t j = 0; j < Sp; j += AW) { /* p = e / denom; D's sum of p dp */
            const AV p = AV_DIV(AV_LDA(Pi + j), denom);
            AV_STA(Pi + j, p);
            dsum = attn_dsum_add(dsum, p, AV_LDA(dSi + j));
        }
        const AV D = AV_DUP(attn_hsum(dsum));
        for (int64_t j = 0; j < Sp; j += AW)
            AV_STA(dSi + j, attn_ds(AV_LDA(Pi + j), AV_LDA(dSi + j), D));
    }
}

/* One batch entry in the slot's buffer w. */
ATTN_TARGET static void sdpa_bw_entry(const sdpa_bw_args *a, int64_t b, float *w)
{
    const amp_sdpa_desc *d = a->fw.d;
    const amp_dtype t = a->fw.t;
    const size_t es = attn_size(t);
    const int64_t L = d->L, S = d->S, E = d->E, Ev = d->Ev, Sp = a->fw.Sp, Evp = a->fw.Evp, Ep = a->Ep;
    float *qf = w, *kf = qf + L * Ep, *kt = kf + S * Ep, *vt = kt + E * Sp, *dyf = vt + Ev * Sp;
    float *P = dyf + L * Evp, *dS = P + L * Sp;
    const char *q = (const char *)a->fw.q + (size_t)(b * d->q_batch_stride) * es;
    const char *k = (const char *)a->fw.k + (size_t)(b * d->k_batch_stride) * es;
    const char *v = (const char *)a->fw.v + (size_t)(b * d->v_batch_stride) * es;
    const char *dy = (const char *)a->dy + (size_t)(b * L * Ev) * es;
    for (int64_t i = 0; i < L; i++)
        for (int64_t e = 0; e < Ep; e += AW)
            AV_STA(qf + i * Ep + e, attn_load_n(t, q + (size_t)(i * E + e) * es, E - e));
    for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < Ep; e += AW)
            AV_STA(kf + j * Ep + e, attn_load_n(t, k + (size_t)(j * E + e) * es, E - e));
    for (int64_t i = 0; i < L; i++)
        for (int64_t e = 0; e < Evp; e += AW)
            AV_STA(dyf + i * Evp + e, attn_load_n(t, dy + (size_t)(i * Ev + e) * es, Ev - e));
#if defined(ATTN_PAIR_DOTS)
    if (a->fw.pairs) {
        attn_pack_pairs(k, S, E, Sp, (uint32_t *)(void *)kt);
        attn_pack_pairs(v, S, Ev, Sp, (uint32_t *)(void *)vt);
    } else
#endif
    {
        for (int64_t e = 0; e < E; e++)
            for (int64_t j = 0; j < Sp; j++)
                kt[e * Sp + j] = j < S ? kf[j * Ep + e] : 0.0f;
        for (int64_t e = 0; e < Ev; e++)
            for (int64_t j = 0; j < Sp; j++)
                vt[e * Sp + j] = j < S ? amp_ld(t, v, j * Ev + e) : 0.0f;
    }
    for (int64_t i0 = 0; i0 < L; i0 += ATTN_ROWS)
        backward_rows(a, b, i0, L - i0 < ATTN_ROWS ? (int)(L - i0) : ATTN_ROWS, qf, kt, vt, dyf, P, dS);
    const float scale = (float)d->scale;
    for (int64_t i0 = 0; a->dq != NULL && i0 < L; i0 += ATTN_ROWS)
        block_weighted(t, dS + i0 * Sp, 1, Sp, L - i0 < ATTN_ROWS ? (int)(L - i0) : ATTN_ROWS, S, kf, Ep, E, scale,
                       NULL, (char *)a->dq + (size_t)(b * d->q_batch_stride + i0 * E) * es, E);
    for (int64_t j0 = 0; a->dk != NULL && j0 < S; j0 += ATTN_ROWS)
        block_weighted(t, dS + j0, Sp, 1, S - j0 < ATTN_ROWS ? (int)(S - j0) : ATTN_ROWS, L, qf, Ep, E, scale, NULL,
                       (char *)a->dk + (size_t)(b * d->k_batch_stride + j0 * E) * es, E);
    for (int64_t j0 = 0; a->dv != NULL && j0 < S; j0 += ATTN_ROWS)
        block_weighted(t, P + j0, Sp, 1, S - j0 < ATTN_ROWS ? (int)(S - j0) : ATTN_ROWS, L, dyf, Evp, Ev, 1.0f, NULL,
                       (char *)a->dv + (size_t)(b * d->v_batch_stride + j0 * Ev) * es, Ev);
}

static void sdpa_bw_task(void *ctx, int64_t task, int slot)
{
    const sdpa_bw_args *a = ctx;
    sdpa_bw_entry(a, task, a->fw.work + slot * a->fw.slot_floats);
}

/* 0: done; -1: the reference's case (shared operands, no memory) */
static int sdpa_bw_run(amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *k, const void *v,
                       const void *mask, const uint8_t *bool_mask, const void *dy, void *dq, void *dk, void *dv,
                       int pairs)
{
    const int64_t Sp = (d->S + AW - 1) / AW * AW, Evp = (d->Ev + AW - 1) / AW * AW, Ep = (d->E + AW - 1) / AW * AW;
    const int64_t per = d->L * Ep + d->S * Ep + d->E * Sp + d->Ev * Sp + d->L * Evp + 2 * d->L * Sp;
    const double flops = 10.0 * (double)d->batch * (double)d->L * (double)d->S * (double)(d->E + d->Ev);
    const int threads = flops < PARALLEL_MIN_FLOPS || d->batch < 2 ? 1 : amp_get_threads();
    if (d->batch > 1 && (d->q_batch_stride == 0 || d->k_batch_stride == 0 || d->v_batch_stride == 0))
        return -1;
    sdpa_bw_args a = { { t, d, q, k, v, mask, bool_mask, NULL, NULL, Sp, Evp, (per + AW - 1) / AW * AW, pairs },
                       dy, dq, dk, dv, Ep };
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

/* sdpa_backward for T, named name; pairs as SDPA_ENTRY's */
#define SDPA_BACKWARD_ENTRY(T, name, pairs)                                                       \
    static void name(const amp_sdpa_desc *d, const AMP_CTYPE_##T *q, const AMP_CTYPE_##T *k,      \
                     const AMP_CTYPE_##T *v, const AMP_CTYPE_##T *mask, const uint8_t *bool_mask, \
                     const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dq, AMP_CTYPE_##T *dk, AMP_CTYPE_##T *dv) \
    {                                                                                             \
        if (d->batch <= 0 || d->L <= 0 || d->S <= 0 || d->E <= 0 || d->Ev <= 0 ||                 \
            sdpa_bw_run(AMP_DTYPE_##T, d, q, k, v, mask, bool_mask, dy, dq, dk, dv, pairs) != 0)  \
            amp_ref_sdpa_backward_##T(d, q, k, v, mask, bool_mask, dy, dq, dk, dv);               \
    }
SDPA_BACKWARD_ENTRY(f32, sdpa_backward_f32, 0)
SDPA_BACKWARD_ENTRY(bf16, sdpa_backward_bf16, 0)
SDPA_BACKWARD_ENTRY(f16, sdpa_backward_f16, 0)

/* The kernels of attention: X(kernel, implementation). */
#define ATTENTION_KERNELS(X)                                                                      \
    X(sdpa_f32, sdpa_f32) X(sdpa_bf16, sdpa_bf16) X(sdpa_f16, sdpa_f16)                           \
    X(sdpa_backward_f32, sdpa_backward_f32) X(sdpa_backward_bf16, sdpa_backward_bf16)             \
    X(sdpa_backward_f16, sdpa_backward_f16)

#if defined(ATTN_PAIR_DOTS)
/* bf16 with the dot products by pairs: the entries of the set that has
 * them, and its kernels: X(kernel, implementation) */
SDPA_ENTRY(bf16, sdpa_dp_bf16, 1)
SDPA_BACKWARD_ENTRY(bf16, sdpa_backward_dp_bf16, 1)
#define ATTENTION_PAIR_KERNELS(X) X(sdpa_bf16, sdpa_dp_bf16) X(sdpa_backward_bf16, sdpa_backward_dp_bf16)
#endif

#endif /* AMPRT_FRAME_ATTENTION_FORM_H */
