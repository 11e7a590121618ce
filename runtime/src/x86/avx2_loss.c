/*
 * avx2_loss.c - the AVX2 (+ FMA + F16C) cross_entropy (class targets),
 * its backward, and the two in one call (cross_entropy_with_grad), for
 * f32, bf16 and f16 storage, of the "avx2" set: the loss of a
 * classifier's training step.
 *
 * Bit for bit the reference (ref_losses.inc: class_loss, and
 * ref_backward_loss.inc: class_backward), as x86/avx512_loss.c is: the
 * lanes of a vector are 8 rows of the [N, C] input, so every per-row
 * chain - the max, the sum of exp(x - max) over the classes in class
 * order, each softmax and gradient - is the reference's own sequence of
 * f32 operations, same operand order, no contraction into FMA.  What
 * crosses rows (the reduction's total and weight sum) is added in scalar
 * code, in row order; log is libm's logf per row, as the reference calls
 * it; exp is amp_expf (amp_expf.h), whose double operations avx2_exp8
 * (avx2_expf.h) performs 4 lanes at a time.
 *
 * Fast path: inner == 1 and no label smoothing (any weight, ignore_index,
 * reduction); everything else goes to the reference kernels.  The driver
 * (checks, groups of rows, the loop over them, the table entries) is
 * frame/loss_form.h's; this file holds a group's vector arithmetic.
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill_kernels after dispatch.c's CPU check.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "frame/loss_form.h"
#include "avx2_expf.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* ---- one group of up to 8 rows ------------------------------------------------ */

typedef struct {
    int rows;       /* lanes in use */
    int live;       /* bit l: row l not ignored */
    int32_t k[8];   /* each lane's target (0 when ignored) */
    float wk[8];    /* weight[target], or 1 (0 when ignored) */
} group;

/* Up to CACHE_C classes of a group are read once, into cols[c][lane]
 * (a transposing copy); wider rows are read per pass. */
#define CACHE_C 64

typedef struct {
    amp_dtype t;
    const void *x;
    int64_t N, row0, C;
    const group *g;
    float *cols; /* [C][8], or NULL */
} source;

TARGET static AMP_ALWAYS_INLINE __m256 col(const source *src, int64_t c)
{
    float v[8] __attribute__((aligned(32))) = { 0 };
    if (src->cols != NULL)
        return _mm256_load_ps(src->cols + c * 8);
    for (int l = 0; l < src->g->rows; l++)
        v[l] = amp_ld(src->t, src->x, (src->row0 + l) * src->C + c);
    return _mm256_load_ps(v);
}

/* A full group's rows into cols[c][lane], 8 x 8 blocks transposed in
 * registers (the values avx2_load8 widens are amp_ld's).  A row's last
 * block of fewer than 8 classes is read whole, into the next row, while
 * that stays inside x's N C values (avx2_load8_within). */
TARGET static void cols_in8(amp_dtype t, const void *x, int64_t N, int64_t row0, int64_t C, float *cols)
{
    const size_t es = avx2_size_of(t);
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
        const int64_t n = C - c0 < 8 ? C - c0 : 8;
        __m256 r[8];
        for (int l = 0; l < 8; l++) {
            const int64_t at = (row0 + l) * C + c0;
            const char *p = (const char *)x + (size_t)at * es;
            r[l] = n == 8 ? avx2_load8(t, p) : avx2_load8_within(t, p, (size_t)n, N * C - at);
        }
        avx2_transpose8(r);
        for (int64_t i = 0; i < n; i++)
            _mm256_store_ps(cols + (c0 + i) * 8, r[i]);
    }
}

/* cols[c][lane] back to a full group's rows of dx, rounded to t as amp_st
 * rounds (avx2_store8). */
TARGET static void cols_out8(amp_dtype t, void *dx, int64_t row0, int64_t C, const float *cols)
{
    const size_t es = avx2_size_of(t);
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
        const int64_t n = C - c0 < 8 ? C - c0 : 8;
        __m256 r[8];
        for (int i = 0; i < 8; i++)
            r[i] = i < n ? _mm256_load_ps(cols + (c0 + i) * 8) : _mm256_setzero_ps();
        avx2_transpose8(r);
        for (int l = 0; l < 8; l++) {
            char *p = (char *)dx + (size_t)((row0 + l) * C + c0) * es;
            if (n == 8)
                avx2_store8(t, p, r[l]);
            else
                avx2_store8_n(t, p, (size_t)n, r[l]);
        }
    }
}

static void fill_cols(source *src, float *cols)
{
    src->cols = NULL;
    if (src->C > CACHE_C)
        return;
    if (src->g->rows == 8)
        cols_in8(src->t, src->x, src->N, src->row0, src->C, cols);
    else
        amp_class_cols_in(src->t, src->x, src->row0, src->C, src->g->rows, 8, cols);
    src->cols = cols;
}

/* The running max of every lane over the classes (v > m replaces it). */
TARGET static __m256 max8(const source *src)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    for (int64_t c = 0; c < src->C; c++) {
        const __m256 v = col(src, c);
        m = _mm256_blendv_ps(m, v, _mm256_cmp_ps(v, m, _CMP_GT_OQ));
    }
    return m;
}

/* A group's rows, targets and weights (frame/loss_form.h). */
static void load_group(const amp_class_args *a, int64_t row0, group *g)
{
    amp_class_load_group(a, row0, 8, &g->rows, &g->live, g->k, g->wk);
}

/* The group's losses into lv (lv != NULL: the reference's class_loss). */
TARGET static void group_loss(const amp_class_args *a, int64_t row0, const group *g, __m256 max, __m256 sum, float *lv)
{
    float ls[8], xk[8] = { 0 }, nw[8];
    _mm256_storeu_ps(ls, sum);
    for (int l = 0; l < 8; l++) {
        ls[l] = l < g->rows ? logf(ls[l]) : 0.0f;
        if (g->live >> l & 1)
            xk[l] = amp_ld(a->t, a->x, (row0 + l) * a->C + g->k[l]);
        nw[l] = -g->wk[l]; /* a negation (0 - w would give +0 for w = +0) */
    }
    /* loss = -w * ((x[k] - max) - log_sum) */
    _mm256_storeu_ps(lv, _mm256_mul_ps(_mm256_loadu_ps(nw), _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(xk), max),
                                                                          _mm256_loadu_ps(ls))));
}

/* The group of rows from row0 (some live): each lane's loss into lv when
 * lv != NULL, the rows' gradients into dx when dx != NULL.  Both start
 * from the same max and sum of e_c = amp_expf(x_c - max), in class order. */
TARGET static void class_group(const amp_class_args *a, int64_t row0, const group *g, float *lv, void *dx)
{
    const amp_dtype t = a->t;
    const int64_t C = a->C;
    float cols[CACHE_C * 8] __attribute__((aligned(32)));
    source src = { t, a->x, a->N, row0, C, g, NULL };
    __m256 max, sum = _mm256_setzero_ps(), s, total;
    fill_cols(&src, cols);
    max = max8(&src);
    for (int64_t c = 0; c < C; c++) {
        const __m256 e = avx2_exp8(_mm256_sub_ps(col(&src, c), max));
        sum = _mm256_add_ps(sum, e);
        if (dx != NULL && src.cols != NULL)
            _mm256_store_ps(src.cols + c * 8, e); /* x_c is not read again */
    }
    if (lv != NULL)
        group_loss(a, row0, g, max, sum, lv);
    if (dx == NULL)
        return;
    if (a->reduction == AMP_REDUCTION_NONE) {
        float sv[8] = { 0 };
        for (int l = 0; l < g->rows; l++)
            sv[l] = amp_ld(t, a->dloss, row0 + l);
        s = _mm256_loadu_ps(sv);
    } else {
        s = _mm256_set1_ps(a->scale);
    }
    /* total = ((-1) * wk) * s; g_c = total at the target, 0 elsewhere;
     * dx_c = g_c - (e_c / sum) * total; ignored rows 0 */
    total = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-1.0f), _mm256_loadu_ps(g->wk)), s);
    const __m256i kv = _mm256_loadu_si256((const __m256i *)g->k);
    const __m256 live = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(g->live), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
        _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)));
    for (int64_t c = 0; c < C; c++) {
        const __m256 e = src.cols != NULL ? _mm256_load_ps(src.cols + c * 8) : avx2_exp8(_mm256_sub_ps(col(&src, c), max));
        const __m256 softmax = _mm256_div_ps(e, sum);
        const __m256 gc = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(kv, _mm256_set1_epi32((int)c))), total);
        const __m256 d = _mm256_and_ps(live, _mm256_sub_ps(gc, _mm256_mul_ps(softmax, total)));
        if (src.cols != NULL) {
            _mm256_store_ps(src.cols + c * 8, d);
        } else {
            float dv[8];
            _mm256_storeu_ps(dv, d);
            amp_class_col_out(t, dx, row0, C, g->rows, c, dv);
        }
    }
    if (src.cols != NULL && g->rows == 8) /* the gradients, back to rows */
        cols_out8(t, dx, row0, C, cols);
    else if (src.cols != NULL)
        amp_class_cols_out(t, dx, row0, C, g->rows, 8, cols);
}

AMP_CLASS_RUN(TARGET, 8, group, load_group, class_group)

/* ---- the table entries ------------------------------------------------------------ */

#define FAST_CASE(inner, label_smoothing, C) ((inner) == 1 && !((label_smoothing) > 0))
#define LOSS_ENTRIES(T) AMP_CLASS_LOSS_ENTRIES(avx2, FAST_CASE, T)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_ENTRIES)

/* This file's kernels of the set: X(kernel, implementation). */
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
AMP_CLASS_LOSS_KERNELS(DEFINE, avx2)
#undef DEFINE

void amp_avx2_fill_loss(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    AMP_CLASS_LOSS_KERNELS(INSTALL, avx2)
#undef INSTALL
}

#endif /* x86 */
