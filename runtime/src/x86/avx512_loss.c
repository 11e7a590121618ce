/*
 * avx512_loss.c - the AVX-512 cross_entropy (class targets), its
 * backward, and the two in one call (cross_entropy_with_grad, one pass
 * over each group of rows for both), for f32, bf16 and f16 storage, of
 * the "avx512" and "avx512bf16" sets: the loss of a classifier's training
 * step.
 *
 * Bit for bit the reference (ref_losses.inc: class_loss, and
 * ref_backward_loss.inc: class_backward).  The lanes of a vector are 16
 * rows (positions) of the [N, C] input, so every per-row chain - the max,
 * the sum of exp(x - max) over the classes in class order, each softmax
 * and gradient - is the reference's own sequence of f32 operations, with
 * the same operand order and no contraction into FMA (only intrinsics do
 * arithmetic here; exp is amp_expf, as below).
 * What crosses rows (the reduction's total and weight sum) is added up
 * in scalar code, in row order, as the reference does.  log is libm's logf
 * per row, called as the reference calls it.
 *
 * exp is the runtime's own amp_expf (amp_expf.h), which the reference
 * calls per element: a chain of double operations that avx512_exp16
 * (avx512_expf.h) performs on 8 lanes at a time, so the vectors only
 * reorder which row is worked on when, never what a row computes.
 *
 * Fast path: inner == 1 and no label smoothing (any weight, ignore_index,
 * reduction); everything else goes to the reference kernels.  The driver
 * (checks, groups of rows, the loop over them, the table entries) is
 * frame/loss_form.h's; this file holds a group's vector arithmetic.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "frame/loss_form.h"
#include "avx512_expf.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

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

/* A 16 x 16 block of f32 transposed in registers (r[i] lane j <-> r[j]
 * lane i): pairs of rows, then of 2, 4 and 8 rows interleaved. */
TARGET static void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* r[4g + j], 128-bit lane L: rows 4g..4g+3 of column 4L + j */
    for (int h = 0; h < 16; h += 8)
        for (int j = 0; j < 4; j++) {
            t[h + j] = _mm512_shuffle_f32x4(r[h + j], r[h + 4 + j], 0x88);
            t[h + 4 + j] = _mm512_shuffle_f32x4(r[h + j], r[h + 4 + j], 0xdd);
        }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
        r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
    }
}

TARGET static void fill_cols(source *src, float *cols)
{
    const int64_t C = src->C;
    src->cols = NULL;
    if (C > CACHE_C)
        return;
    if (src->t == AMP_F32 && C <= 16) {
        /* each row one masked load, then one transpose */
        const __mmask16 m = (__mmask16)((1u << C) - 1);
        __m512 r[16];
        for (int l = 0; l < 16; l++)
            r[l] = l < src->g->rows ? _mm512_maskz_loadu_ps(m, (const float *)src->x + (src->row0 + l) * C)
                                    : _mm512_setzero_ps();
        transpose16(r);
        for (int64_t c = 0; c < C; c++)
            _mm512_store_ps(cols + c * 16, r[c]);
        src->cols = cols;
        return;
    }
    amp_class_cols_in(src->t, src->x, src->row0, C, src->g->rows, 16, cols);
    src->cols = cols;
}

/* The cached columns (gradients by then) back to the group's rows. */
TARGET static void store_cols(const source *src, void *dx)
{
    const int64_t C = src->C;
    const float *cols = src->cols;
    if (src->t == AMP_F32 && C <= 16) {
        const __mmask16 m = (__mmask16)((1u << C) - 1);
        __m512 r[16];
        for (int c = 0; c < 16; c++)
            r[c] = c < C ? _mm512_load_ps(cols + c * 16) : _mm512_setzero_ps();
        transpose16(r);
        for (int l = 0; l < src->g->rows; l++)
            _mm512_mask_storeu_ps((float *)dx + (src->row0 + l) * C, m, r[l]);
        return;
    }
    amp_class_cols_out(src->t, dx, src->row0, C, src->g->rows, 16, cols);
}

/* The running max of every lane over the classes (v > m replaces it). */
TARGET static __m512 max16(const source *src)
{
    __m512 m = _mm512_set1_ps(-INFINITY);
    for (int64_t c = 0; c < src->C; c++) {
        const __m512 v = col(src, c);
        m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ), v);
    }
    return m;
}

/* A group's rows, targets and weights (frame/loss_form.h), and each
 * lane's row offset for the gathers. */
static void load_group(const amp_class_args *a, int64_t row0, group *g)
{
    int32_t offs[16];
    int live;
    amp_class_load_group(a, row0, 16, &g->rows, &live, g->k, g->wk);
    g->live = (__mmask16)live;
    for (int l = 0; l < 16; l++)
        offs[l] = (int32_t)(l < g->rows ? l * a->C : 0);
    memcpy(&g->offs, offs, sizeof offs);
}

/* Gathers of one row's C classes use 32-bit offsets l * C + c. */
#define FAST_MAX_C ((int64_t)1 << 26)

/* ---- one group: its losses and its gradient -------------------------------------- */

/* The group of rows from row0 (some live): each lane's loss into lv when
 * lv != NULL (the reference's class_loss), the rows' gradients into dx
 * when dx != NULL (its class_backward).  Both start from the same max and
 * sum of e_c = amp_expf(x_c - max), in class order. */
TARGET static void class_group(const amp_class_args *a, int64_t row0, const group *g, float *lv, void *dx)
{
    const amp_dtype t = a->t;
    const int64_t C = a->C;
    const __m512 zero = _mm512_setzero_ps();
    float cols[CACHE_C * 16] __attribute__((aligned(64)));
    source src = { t, a->x, row0, C, g, NULL };
    __m512 max, sum = zero;
    fill_cols(&src, cols);
    max = max16(&src);
    for (int64_t c = 0; c < C; c++) {
        const __m512 e = avx512_exp16(_mm512_sub_ps(col(&src, c), max));
        sum = _mm512_add_ps(sum, e);
        if (dx != NULL && src.cols != NULL)
            _mm512_store_ps(src.cols + c * 16, e); /* x_c is not read again */
    }
    if (lv != NULL) {
        /* loss = -w * ((x[k] - max) - log_sum), log_sum = logf(sum) per row */
        float ls[16];
        __m512 xk;
        _mm512_storeu_ps(ls, sum);
        for (int l = 0; l < 16; l++)
            ls[l] = l < g->rows ? logf(ls[l]) : 0.0f;
        if (t == AMP_F32) {
            __m512i idx = _mm512_add_epi32(g->offs, _mm512_loadu_si512(g->k));
            xk = _mm512_mask_i32gather_ps(zero, g->live, idx, (const float *)a->x + row0 * C, 4);
        } else {
            float v[16] = { 0 };
            for (int l = 0; l < g->rows; l++)
                if (g->live >> l & 1)
                    v[l] = amp_ld(t, a->x, (row0 + l) * C + g->k[l]);
            xk = _mm512_loadu_ps(v);
        }
        /* -w is a negation: flip the sign bit (0 - w would give +0 for w = +0) */
        _mm512_storeu_ps(lv, _mm512_mul_ps(_mm512_castsi512_ps(_mm512_xor_si512(
                                               _mm512_castps_si512(_mm512_loadu_ps(g->wk)),
                                               _mm512_set1_epi32((int)0x80000000u))),
                                           _mm512_sub_ps(_mm512_sub_ps(xk, max), _mm512_loadu_ps(ls))));
    }
    if (dx == NULL)
        return;
    __m512 s, total;
    if (a->reduction == AMP_REDUCTION_NONE) {
        float sv[16] = { 0 };
        for (int l = 0; l < g->rows; l++)
            sv[l] = amp_ld(t, a->dloss, row0 + l);
        s = _mm512_loadu_ps(sv);
    } else {
        s = _mm512_set1_ps(a->scale);
    }
    /* total = -(1 - 0) * wk * s = ((-1) * wk) * s; g_c = total at the
     * target, 0 elsewhere; dx_c = g_c - (e_c / sum) * total. */
    total = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-1.0f), _mm512_loadu_ps(g->wk)), s);
    const __m512i kv = _mm512_loadu_si512(g->k);
    for (int64_t c = 0; c < C; c++) {
        const __m512 e = src.cols != NULL ? _mm512_load_ps(src.cols + c * 16) : avx512_exp16(_mm512_sub_ps(col(&src, c), max));
        const __m512 softmax = _mm512_div_ps(e, sum);
        const __m512 gc = _mm512_mask_mov_ps(zero, _mm512_cmpeq_epi32_mask(kv, _mm512_set1_epi32((int)c)), total);
        /* ignored rows: 0 */
        const __m512 d = _mm512_maskz_mov_ps(g->live, _mm512_sub_ps(gc, _mm512_mul_ps(softmax, total)));
        if (src.cols != NULL) {
            _mm512_store_ps(src.cols + c * 16, d);
        } else if (t == AMP_F32) {
            _mm512_mask_i32scatter_ps((float *)dx + row0 * C + c,
                                      (__mmask16)(g->rows == 16 ? 0xffff : (1u << g->rows) - 1), g->offs, d, 4);
        } else {
            float dv[16];
            _mm512_storeu_ps(dv, d);
            amp_class_col_out(t, dx, row0, C, g->rows, c, dv);
        }
    }
    if (src.cols != NULL) /* the gradients, back to rows */
        store_cols(&src, dx);
}

/* ---- the loss (want_loss: into y), its gradient (dx != NULL), or both ---------- */

AMP_CLASS_RUN(TARGET, 16, group, load_group, class_group)

/* ---- the table entries ------------------------------------------------------------ */

/* The fast path: inner 1, no label smoothing, C within 32-bit offsets. */
#define FAST_CASE(inner, label_smoothing, C) ((inner) == 1 && !((label_smoothing) > 0) && (C) <= FAST_MAX_C)

#define LOSS_ENTRIES(T) AMP_CLASS_LOSS_ENTRIES(avx512, FAST_CASE, T)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_ENTRIES)

/* This file's kernels of the AVX-512 sets: X(kernel, implementation). */
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
AMP_CLASS_LOSS_KERNELS(DEFINE, avx512)
#undef DEFINE

void amp_isa_avx512_fill_loss(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    AMP_CLASS_LOSS_KERNELS(INSTALL, avx512)
#undef INSTALL
}

#endif /* x86 */
