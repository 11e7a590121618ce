/*
 * isa_avx512_loss.c - the AVX-512 cross_entropy (class targets) and its
 * backward, for f32, bf16 and f16 storage, of the "avx512" and
 * "avx512bf16" sets: the loss of a classifier's training step.
 *
 * Bit for bit the reference (ref_losses.inc: class_loss, and
 * ref_backward_loss.inc: class_backward).  The lanes of a vector are 16
 * rows (positions) of the [N, C] input, so every per-row chain - the max,
 * the sum of exp(x - max) over the classes in class order, each softmax
 * and gradient - is the reference's own sequence of f32 operations, with
 * the same operand order and no contraction into FMA (only intrinsics do
 * arithmetic here, and the explicit FMAs are those of the exp below).
 * What crosses rows (the reduction's total and weight sum) is added up
 * in scalar code, in row order, as the reference does.  log is libm's logf
 * per row, called as the reference calls it.
 *
 * exp is libm's expf (glibc 2.27 and later, sysdeps/ieee754/flt-32/e_expf.c,
 * as its FMA variant __expf_fma computes it, which is the one glibc picks
 * on every CPU with AVX-512) evaluated 8 lanes at a time in double: the
 * same table, the same constants, the same double operations and FMAs in
 * the same order, and the same final rounding to float, so the same
 * result.  Lanes outside expf's fast path (|x| >= 88, inf, NaN) call
 * expf itself.  Since the reference's exp is whatever libm this
 * process runs on, amp_isa_avx512_fill_loss first checks the vector exp
 * against expf on a spread of arguments and installs these kernels only
 * when every one agrees (else the reference kernels stay).
 *
 * Fast path: inner == 1 and no label smoothing (any weight, ignore_index,
 * reduction); everything else goes to the reference kernels.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "isa_avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#define TARGET AVX512_TARGET

/* ---- expf, 16 lanes ---------------------------------------------------------- */

/* glibc's __exp2f_data (EXP2F_TABLE_BITS 5, EXP2F_POLY_ORDER 3): tab[i] =
 * bits(2^(i/32)) - (i << 52) / 32, and the scaled constants. */
static const uint64_t exp_tab[32] __attribute__((aligned(64))) = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
#define EXP_INVLN2N 0x40471547652b82feULL /* 32 / ln 2 */
#define EXP_SHIFT 0x4338000000000000ULL   /* 0x1.8p52 */
#define EXP_C0 0x3ebc6af84b912394ULL
#define EXP_C1 0x3f2ebfce50fac4f3ULL
#define EXP_C2 0x3f962e42ff0c52d6ULL

TARGET static inline __m512d dconst(uint64_t bits) { return _mm512_castsi512_pd(_mm512_set1_epi64((long long)bits)); }

/* e_expf.c's fast path on 8 doubles xd (the float arguments, widened):
 *   kd = fma(InvLn2N, xd, SHIFT); ki = bits(kd); kd -= SHIFT;
 *   r = fma(InvLn2N, xd, -kd); s = double(T[ki % 32] + (ki << 47));
 *   z = fma(r, C0, C1); r2 = r * r; y = fma(r, C2, 1); y = fma(z, r2, y);
 *   y = y * s  (then rounded to float by the caller). */
TARGET static inline __m256 exp8(__m256 x)
{
    const __m512d xd = _mm512_cvtps_pd(x), inv = dconst(EXP_INVLN2N), shift = dconst(EXP_SHIFT);
    __m512d kd = _mm512_fmadd_pd(inv, xd, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    const __m512d r = _mm512_fmsub_pd(inv, xd, kd);
    const __m512i lo = _mm512_load_si512(exp_tab), lo2 = _mm512_load_si512(exp_tab + 8);
    const __m512i hi = _mm512_load_si512(exp_tab + 16), hi2 = _mm512_load_si512(exp_tab + 24);
    const __m512i tlo = _mm512_permutex2var_epi64(lo, ki, lo2), thi = _mm512_permutex2var_epi64(hi, ki, hi2);
    const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(upper, tlo, thi), _mm512_slli_epi64(ki, 47));
    const __m512d s = _mm512_castsi512_pd(t);
    const __m512d z = _mm512_fmadd_pd(r, dconst(EXP_C0), dconst(EXP_C1));
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(r, dconst(EXP_C2), _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    y = _mm512_mul_pd(y, s);
    return _mm512_cvtpd_ps(y);
}

/* expf of 16 lanes, each equal to libm's expf of it (see the top). */
TARGET static __m512 exp16(__m512 x)
{
    /* e_expf.c's fast path: top12(x) & 0x7ff <= top12(88.0f) - 1 */
    const __m512i top = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7ff));
    const __mmask16 special = _mm512_cmpgt_epi32_mask(top, _mm512_set1_epi32(0x42a));
    const __m256 lo = exp8(_mm512_castps512_ps256(x));
    const __m256 hi = exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    __m512 e = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
    if (special) {
        float in[16], out[16];
        _mm512_storeu_ps(in, x);
        _mm512_storeu_ps(out, e);
        for (int l = 0; l < 16; l++)
            if (special >> l & 1)
                out[l] = expf(in[l]);
        e = _mm512_loadu_ps(out);
    }
    return e;
}

/* ---- one group of up to 16 rows --------------------------------------------- */

typedef struct {
    int rows;            /* lanes in use */
    __mmask16 live;      /* lanes of rows not ignored */
    int32_t k[16];       /* each lane's target (0 when ignored) */
    float wk[16];        /* weight[target], or 1 (0 when ignored) */
    __m512i offs;        /* lane l: l * C, the row's first element */
} group;

/* Column c of the group's rows as f32, as amp_ld reads them; lanes past
 * the rows are 0. */
TARGET static inline __m512 column(amp_dtype t, const void *x, int64_t row0, int64_t C, const group *g, int64_t c)
{
    const __mmask16 m = (__mmask16)(g->rows == 16 ? 0xffff : (1u << g->rows) - 1);
    if (t == AMP_F32)
        return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, g->offs, (const float *)x + row0 * C + c, 4);
    float v[16] = { 0 };
    for (int l = 0; l < g->rows; l++)
        v[l] = amp_ld(t, x, (row0 + l) * C + c);
    return _mm512_loadu_ps(v);
}

/* Up to CACHE_C classes of a group are read once, into cols[c][lane]
 * (a plain transposing copy through amp_ld: cheaper than a gather per
 * class and pass); wider rows are gathered per pass. */
#define CACHE_C 64

typedef struct {
    amp_dtype t;
    const void *x;
    int64_t row0, C;
    const group *g;
    float *cols; /* [C][16], or NULL */
} source;

TARGET static inline __m512 col(const source *src, int64_t c)
{
    if (src->cols != NULL)
        return _mm512_load_ps(src->cols + c * 16);
    return column(src->t, src->x, src->row0, src->C, src->g, c);
}

static void fill_cols(source *src, float *cols)
{
    const int64_t C = src->C;
    src->cols = NULL;
    if (C > CACHE_C)
        return;
    for (int l = 0; l < 16; l++)
        if (l < src->g->rows) {
            const int64_t base = (src->row0 + l) * C;
            if (src->t == AMP_F32)
                for (int64_t c = 0; c < C; c++)
                    cols[c * 16 + l] = ((const float *)src->x)[base + c];
            else
                for (int64_t c = 0; c < C; c++)
                    cols[c * 16 + l] = amp_ld(src->t, src->x, base + c);
        } else {
            for (int64_t c = 0; c < C; c++)
                cols[c * 16 + l] = 0.0f;
        }
    src->cols = cols;
}

/* The reference's log_softmax_shift for every lane: m = the running max
 * (v > m replaces it), then sum += expf(v - m) in class order, and
 * log_sum = logf(sum) per lane. */
TARGET static void shift16(const source *src, __m512 *max, __m512 *log_sum)
{
    __m512 m = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
    float s[16];
    for (int64_t c = 0; c < src->C; c++) {
        const __m512 v = col(src, c);
        m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ), v);
    }
    for (int64_t c = 0; c < src->C; c++)
        sum = _mm512_add_ps(sum, exp16(_mm512_sub_ps(col(src, c), m)));
    _mm512_storeu_ps(s, sum);
    for (int l = 0; l < 16; l++)
        s[l] = l < src->g->rows ? logf(s[l]) : 0.0f;
    *max = m;
    *log_sum = _mm512_loadu_ps(s);
}

/* A group's rows (up to 16 from row0), targets and weights; ignored rows
 * and lanes past the rows get target 0 and weight 0 and stay out of
 * `live`.  (The forward checked the targets; the backward trusts them, as
 * the reference does.) */
static void load_group(amp_dtype t, int64_t row0, int64_t N, int64_t C, const int64_t *target, const void *weight,
                       int64_t ignore_index, group *g)
{
    int32_t offs[16];
    g->rows = (int)(N - row0 < 16 ? N - row0 : 16);
    g->live = 0;
    for (int l = 0; l < 16; l++) {
        int64_t k = l < g->rows ? target[row0 + l] : ignore_index;
        offs[l] = (int32_t)(l < g->rows ? l * C : 0);
        if (l >= g->rows || k == ignore_index) {
            g->k[l] = 0;
            g->wk[l] = 0.0f;
            continue;
        }
        g->live |= (__mmask16)(1u << l);
        g->k[l] = (int32_t)k;
        g->wk[l] = weight != NULL ? amp_ld(t, weight, k) : 1.0f;
    }
    memcpy(&g->offs, offs, sizeof offs);
}

/* The reference's checks (ref_losses.c check_class_targets), same order. */
static int check_targets(int64_t N, int64_t C, int64_t inner, const void *x, const int64_t *target,
                         int64_t ignore_index, int reduction, const void *y)
{
    int64_t positions;
    if (N < 0 || C < 0 || inner < 0)
        return AMP_ERR_BAD_DIM;
    if (reduction != AMP_REDUCTION_NONE && reduction != AMP_REDUCTION_MEAN && reduction != AMP_REDUCTION_SUM)
        return AMP_ERR_BAD_REDUCTION;
    positions = N * inner;
    if (positions > 0 && (x == NULL || target == NULL))
        return AMP_ERR_NULL_ARG;
    if (y == NULL && (positions > 0 || reduction != AMP_REDUCTION_NONE))
        return AMP_ERR_NULL_ARG;
    for (int64_t i = 0; i < positions; i++)
        if (target[i] != ignore_index && (target[i] < 0 || target[i] >= C))
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

/* Gathers of one row's C classes use 32-bit offsets l * C + c. */
#define FAST_MAX_C ((int64_t)1 << 26)

/* ---- forward ------------------------------------------------------------------ */

TARGET static int class_loss(amp_dtype t, int64_t N, int64_t C, const void *x, const int64_t *target,
                             const void *weight, int64_t ignore_index, int reduction, void *y)
{
    float total = 0, weight_sum = 0;
    int status = check_targets(N, C, 1, x, target, ignore_index, reduction, y);
    if (status != AMP_OK)
        return status;
    for (int64_t row0 = 0; row0 < N; row0 += 16) {
        group g;
        __m512 max, log_sum, xk, loss;
        float lv[16];
        load_group(t, row0, N, C, target, weight, ignore_index, &g);
        if (g.live) {
            float cols[CACHE_C * 16] __attribute__((aligned(64)));
            source src = { t, x, row0, C, &g, NULL };
            fill_cols(&src, cols);
            shift16(&src, &max, &log_sum);
            /* loss = -w * ((x[k] - max) - log_sum) */
            if (t == AMP_F32) {
                __m512i idx = _mm512_add_epi32(g.offs, _mm512_loadu_si512(g.k));
                xk = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), g.live, idx, (const float *)x + row0 * C, 4);
            } else {
                float v[16] = { 0 };
                for (int l = 0; l < g.rows; l++)
                    if (g.live >> l & 1)
                        v[l] = amp_ld(t, x, (row0 + l) * C + g.k[l]);
                xk = _mm512_loadu_ps(v);
            }
            /* -w is a negation: flip the sign bit (0 - w would give +0 for w = +0) */
            loss = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_loadu_ps(g.wk)),
                                                                      _mm512_set1_epi32((int)0x80000000u))),
                                 _mm512_sub_ps(_mm512_sub_ps(xk, max), log_sum));
            _mm512_storeu_ps(lv, loss);
        }
        for (int l = 0; l < g.rows; l++) {
            if (!(g.live >> l & 1)) {
                if (reduction == AMP_REDUCTION_NONE)
                    amp_st(t, y, row0 + l, 0.0f);
                continue;
            }
            if (reduction == AMP_REDUCTION_NONE)
                amp_st(t, y, row0 + l, lv[l]);
            total += lv[l];
            weight_sum += g.wk[l];
        }
    }
    if (reduction == AMP_REDUCTION_MEAN)
        amp_st(t, y, 0, total / weight_sum);
    else if (reduction == AMP_REDUCTION_SUM)
        amp_st(t, y, 0, total);
    return AMP_OK;
}

/* ---- backward ----------------------------------------------------------------- */

TARGET static void class_backward(amp_dtype t, int64_t N, int64_t C, const void *x, const int64_t *target,
                                  const void *weight, int64_t ignore_index, int reduction, const void *dloss,
                                  void *dx)
{
    float scale = 0;
    if (reduction == AMP_REDUCTION_MEAN) {
        float weight_sum = 0;
        for (int64_t p = 0; p < N; p++)
            if (target[p] != ignore_index)
                weight_sum += weight != NULL ? amp_ld(t, weight, target[p]) : 1;
        scale = amp_ld(t, dloss, 0) / weight_sum;
    } else if (reduction == AMP_REDUCTION_SUM) {
        scale = amp_ld(t, dloss, 0);
    }
    for (int64_t row0 = 0; row0 < N; row0 += 16) {
        group g;
        __m512 max, log_sum, s, total, zero = _mm512_setzero_ps();
        __m512i kv;
        float cols[CACHE_C * 16] __attribute__((aligned(64)));
        source src = { t, x, row0, C, &g, NULL };
        load_group(t, row0, N, C, target, weight, ignore_index, &g);
        if (!g.live) {
            for (int64_t e = row0 * C; e < (row0 + g.rows) * C; e++)
                amp_st(t, dx, e, 0.0f);
            continue;
        }
        if (reduction == AMP_REDUCTION_NONE) {
            float sv[16] = { 0 };
            for (int l = 0; l < g.rows; l++)
                sv[l] = amp_ld(t, dloss, row0 + l);
            s = _mm512_loadu_ps(sv);
        } else {
            s = _mm512_set1_ps(scale);
        }
        fill_cols(&src, cols);
        shift16(&src, &max, &log_sum);
        /* total = -(1 - 0) * wk * s = ((-1) * wk) * s; g_c = total at the
         * target, 0 elsewhere; dx_c = g_c - softmax_c * total. */
        total = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-1.0f), _mm512_loadu_ps(g.wk)), s);
        kv = _mm512_loadu_si512(g.k);
        for (int64_t c = 0; c < C; c++) {
            const __m512 softmax = exp16(_mm512_sub_ps(_mm512_sub_ps(col(&src, c), max), log_sum));
            const __m512 gc = _mm512_mask_mov_ps(zero, _mm512_cmpeq_epi32_mask(kv, _mm512_set1_epi32((int)c)), total);
            /* ignored rows: 0 */
            const __m512 d = _mm512_maskz_mov_ps(g.live, _mm512_sub_ps(gc, _mm512_mul_ps(softmax, total)));
            if (src.cols != NULL) {
                _mm512_store_ps(src.cols + c * 16, d); /* column c is read for the last time */
            } else if (t == AMP_F32) {
                _mm512_mask_i32scatter_ps((float *)dx + row0 * C + c,
                                          (__mmask16)(g.rows == 16 ? 0xffff : (1u << g.rows) - 1), g.offs, d, 4);
            } else {
                float dv[16];
                _mm512_storeu_ps(dv, d);
                for (int l = 0; l < g.rows; l++)
                    amp_st(t, dx, (row0 + l) * C + c, dv[l]);
            }
        }
        if (src.cols != NULL) /* the gradients, back to rows */
            for (int l = 0; l < g.rows; l++) {
                const int64_t base = (row0 + l) * C;
                if (t == AMP_F32)
                    for (int64_t c = 0; c < C; c++)
                        ((float *)dx)[base + c] = src.cols[c * 16 + l];
                else
                    for (int64_t c = 0; c < C; c++)
                        amp_st(t, dx, base + c, src.cols[c * 16 + l]);
            }
    }
}

/* ---- the table entries ------------------------------------------------------------ */

#define LOSS_ENTRIES(T)                                                                               \
    static int avx512_cross_entropy_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *x,     \
                                        const int64_t *target, const AMP_CTYPE_##T *weight,              \
                                        int64_t ignore_index, double label_smoothing, int reduction,     \
                                        AMP_CTYPE_##T *y)                                                \
    {                                                                                                    \
        if (inner != 1 || label_smoothing > 0 || C > FAST_MAX_C)                                         \
            return amp_ref_cross_entropy_##T(N, C, inner, x, target, weight, ignore_index,               \
                                             label_smoothing, reduction, y);                             \
        return class_loss(AMP_DTYPE_##T, N, C, x, target, weight, ignore_index, reduction, y);           \
    }                                                                                                    \
    static void avx512_cross_entropy_backward_##T(int64_t N, int64_t C, int64_t inner,                   \
                                                  const AMP_CTYPE_##T *x, const int64_t *target,         \
                                                  const AMP_CTYPE_##T *weight, int64_t ignore_index,     \
                                                  double label_smoothing, int reduction,                 \
                                                  const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dx)         \
    {                                                                                                    \
        if (inner != 1 || label_smoothing > 0 || C > FAST_MAX_C || N < 0 || C < 0)                       \
            amp_ref_cross_entropy_backward_##T(N, C, inner, x, target, weight, ignore_index,             \
                                               label_smoothing, reduction, dloss, dx);                   \
        else                                                                                             \
            class_backward(AMP_DTYPE_##T, N, C, x, target, weight, ignore_index, reduction, dloss, dx);  \
    }

AMP_FOR_EACH_KERNEL_DTYPE(LOSS_ENTRIES)

/* The vector exp against this process's expf: 16 K arguments spread over
 * every binade from 2^-79 to 2^7 (the fast path and beyond), and its edges;
 * about 0.1 ms, once. */
TARGET static int exp_agrees(void)
{
    static const float edges[] = { 0.0f, -0.0f, 1.0f, -1.0f, 0x1.62e42ep6f, -0x1.9fe368p6f, -0x1.9d1d9ep6f,
                                   0x1.5ffffep6f, -0x1.5ffffep6f, 1e-30f, -1e-30f, 0x1p-149f, 87.9f, -87.9f };
    float in[16], out[16];
    uint32_t state = 0x9e3779b9u;
    for (int i = 0; i < 1024 + 1; i++) {
        for (int l = 0; l < 16; l++) {
            if (i == 1024) {
                in[l] = edges[l % (sizeof edges / sizeof edges[0])];
                continue;
            }
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            /* any float of magnitude below 2^7 (the fast path and beyond) */
            uint32_t bits = (state & 0x807fffffu) | ((0x30u + (state >> 23) % 0x56u) << 23);
            memcpy(&in[l], &bits, sizeof bits);
        }
        _mm512_storeu_ps(out, exp16(_mm512_loadu_ps(in)));
        for (int l = 0; l < 16; l++) {
            float want = expf(in[l]);
            if (memcmp(&want, &out[l], sizeof want) != 0)
                return 0;
        }
    }
    return 1;
}

void amp_isa_avx512_fill_loss(amp_kernel_table *t)
{
    /* once per process (dispatch.c fills the tables under pthread_once;
     * both AVX-512 sets come here) */
    static int agrees = -1;
    if (agrees < 0)
        agrees = exp_agrees();
    if (!agrees)
        return; /* not glibc's expf: keep the reference loss kernels */
#define LOSS_FILL(T)                                                                              \
    t->cross_entropy_##T = avx512_cross_entropy_##T;                                              \
    t->cross_entropy_backward_##T = avx512_cross_entropy_backward_##T;
    AMP_FOR_EACH_KERNEL_DTYPE(LOSS_FILL)
#undef LOSS_FILL
}

/* For tests: the vector exp (16 lanes), so test_fastloss can compare it
 * with expf over whole ranges of floats. */
TARGET void amp_avx512_exp16(const float *in, float *out)
{
    _mm512_storeu_ps(out, exp16(_mm512_loadu_ps(in)));
}

#else

void amp_isa_avx512_fill_loss(amp_kernel_table *t) { (void)t; }
void amp_avx512_exp16(const float *in, float *out) { for (int l = 0; l < 16; l++) out[l] = expf(in[l]); }

#endif
