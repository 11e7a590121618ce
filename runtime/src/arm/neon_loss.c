/*
 * neon_loss.c - the aarch64 sets' cross_entropy (class targets), its
 * backward, and the two in one call (cross_entropy_with_grad), for f32,
 * bf16 and f16 storage: the loss of a classifier's training step.
 *
 * Bit for bit the reference (ref_losses.inc: class_loss, and
 * ref_backward_loss.inc: class_backward), as x86/avx2_loss.c is: the
 * lanes of a vector are 4 rows of the [N, C] input, so every per-row
 * chain - the max, the sum of exp(x - max) over the classes in class
 * order, each softmax and gradient - is the reference's own sequence of
 * f32 operations, same operand order, no contraction into FMA.  What
 * crosses rows (the reduction's total and weight sum) is added in scalar
 * code, in row order; log is libm's logf per row, as the reference calls
 * it; exp is amp_expf (amp_expf.h), whose double operations exp4 performs
 * 2 lanes at a time (FMLA on float64x2, FRINTN for nearbyint).
 *
 * Fast path: inner == 1 and no label smoothing (any weight, ignore_index,
 * reduction); everything else goes to the reference kernels.  Both sets
 * share these.  The driver (checks, groups of rows, the loop over them,
 * the table entries) is frame/loss_form.h's; this file holds a group's
 * vector arithmetic.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "frame/loss_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

#define FMA_F64(a, b, c) vfmaq_f64(c, a, b) /* a b + c, rounded once */

/* amp_expf of 2 lanes in double: the same operations, in the same order,
 * as the scalar definition; ldexp(p, k) as p times 2^k built from k's bits
 * (k in [-150, 129]: 2^k and the product are normal doubles, exact). */
static AMP_ALWAYS_INLINE float64x2_t exp2d(float64x2_t x)
{
    x = vmaxq_f64(vminq_f64(x, vdupq_n_f64(89.0)), vdupq_n_f64(-104.0));
    const float64x2_t k = vrndnq_f64(vmulq_f64(x, vdupq_n_f64(AMP_EXPF_INV_LN2)));
    const float64x2_t nk = vnegq_f64(k); /* -k by its sign bit, as the scalar -k */
    float64x2_t r, p;
    AMP_EXPF_SERIES(FMA_F64, vdupq_n_f64, nk, x, r, p);
    const int64x2_t e = vshlq_n_s64(vaddq_s64(vcvtq_s64_f64(k), vdupq_n_s64(1023)), 52);
    return vmulq_f64(p, vreinterpretq_f64_s64(e));
}

/* amp_expf of 4 lanes; NaN lanes keep their NaN (the clamp would turn
 * them into a number). */
static AMP_ALWAYS_INLINE float32x4_t exp4(float32x4_t x)
{
    const float32x2_t lo = vcvt_f32_f64(exp2d(vcvt_f64_f32(vget_low_f32(x))));
    const float32x4_t e = vcvt_high_f32_f64(lo, exp2d(vcvt_high_f64_f32(x)));
    return vbslq_f32(neon_isnan4(x), x, e);
}

/* ---- one group of up to 4 rows ------------------------------------------------ */

typedef struct {
    int rows;     /* lanes in use */
    int live;     /* bit l: row l not ignored */
    int32_t k[4]; /* each lane's target (0 when ignored) */
    float wk[4];  /* weight[target], or 1 (0 when ignored) */
} group;

/* Up to CACHE_C classes of a group are read once, into cols[c][lane]
 * (a transposing copy); wider rows are read per pass. */
#define CACHE_C 128

typedef struct {
    amp_dtype t;
    const void *x;
    int64_t row0, C;
    const group *g;
    float *cols; /* [C][4], or NULL */
} source;

static AMP_ALWAYS_INLINE float32x4_t col(const source *src, int64_t c)
{
    float v[4] = { 0, 0, 0, 0 };
    if (src->cols != NULL)
        return vld1q_f32(src->cols + c * 4);
    for (int l = 0; l < src->g->rows; l++)
        v[l] = amp_ld(src->t, src->x, (src->row0 + l) * src->C + c);
    return vld1q_f32(v);
}

static void fill_cols(source *src, float *cols)
{
    src->cols = NULL;
    if (src->C > CACHE_C)
        return;
    amp_class_cols_in(src->t, src->x, src->row0, src->C, src->g->rows, 4, cols);
    src->cols = cols;
}

/* The running max of every lane over the classes (v > m replaces it). */
static float32x4_t max4(const source *src)
{
    float32x4_t m = vdupq_n_f32(-INFINITY);
    for (int64_t c = 0; c < src->C; c++) {
        const float32x4_t v = col(src, c);
        m = vbslq_f32(vcgtq_f32(v, m), v, m);
    }
    return m;
}

/* A group's rows, targets and weights (frame/loss_form.h). */
static void load_group(const amp_class_args *a, int64_t row0, group *g)
{
    amp_class_load_group(a, row0, 4, &g->rows, &g->live, g->k, g->wk);
}

/* The group's losses into lv: loss = -w * ((x[k] - max) - log_sum). */
static void group_loss(const amp_class_args *a, int64_t row0, const group *g, float32x4_t max, float32x4_t sum, float *lv)
{
    float ls[4], xk[4] = { 0, 0, 0, 0 }, nw[4];
    vst1q_f32(ls, sum);
    for (int l = 0; l < 4; l++) {
        ls[l] = l < g->rows ? logf(ls[l]) : 0.0f;
        if (g->live >> l & 1)
            xk[l] = amp_ld(a->t, a->x, (row0 + l) * a->C + g->k[l]);
        nw[l] = -g->wk[l]; /* a negation (0 - w would give +0 for w = +0) */
    }
    vst1q_f32(lv, vmulq_f32(vld1q_f32(nw), vsubq_f32(vsubq_f32(vld1q_f32(xk), max), vld1q_f32(ls))));
}

/* The group of rows from row0 (some live): each lane's loss into lv when
 * lv != NULL, the rows' gradients into dx when dx != NULL.  Both start
 * from the same max and sum of e_c = amp_expf(x_c - max), in class order. */
static void class_group(const amp_class_args *a, int64_t row0, const group *g, float *lv, void *dx)
{
    static const int32_t lane_bit[4] = { 1, 2, 4, 8 };
    const amp_dtype t = a->t;
    const int64_t C = a->C;
    float cols[CACHE_C * 4];
    source src = { t, a->x, row0, C, g, NULL };
    float32x4_t max, sum = vdupq_n_f32(0), s, total;
    fill_cols(&src, cols);
    max = max4(&src);
    for (int64_t c = 0; c < C; c++) {
        const float32x4_t e = exp4(vsubq_f32(col(&src, c), max));
        sum = vaddq_f32(sum, e);
        if (dx != NULL && src.cols != NULL)
            vst1q_f32(src.cols + c * 4, e); /* x_c is not read again */
    }
    if (lv != NULL)
        group_loss(a, row0, g, max, sum, lv);
    if (dx == NULL)
        return;
    if (a->reduction == AMP_REDUCTION_NONE) {
        float sv[4] = { 0, 0, 0, 0 };
        for (int l = 0; l < g->rows; l++)
            sv[l] = amp_ld(t, a->dloss, row0 + l);
        s = vld1q_f32(sv);
    } else {
        s = vdupq_n_f32(a->scale);
    }
    /* total = ((-1) * wk) * s; g_c = total at the target, 0 elsewhere;
     * dx_c = g_c - (e_c / sum) * total; ignored rows 0 */
    total = vmulq_f32(vmulq_f32(vdupq_n_f32(-1.0f), vld1q_f32(g->wk)), s);
    const int32x4_t kv = vld1q_s32(g->k), bits = vld1q_s32(lane_bit);
    const uint32x4_t live = vceqq_s32(vandq_s32(vdupq_n_s32(g->live), bits), bits);
    for (int64_t c = 0; c < C; c++) {
        const float32x4_t e = src.cols != NULL ? vld1q_f32(src.cols + c * 4) : exp4(vsubq_f32(col(&src, c), max));
        const float32x4_t softmax = vdivq_f32(e, sum);
        const uint32x4_t at_target = vceqq_s32(kv, vdupq_n_s32((int32_t)c));
        const uint32x4_t gc = vandq_u32(at_target, vreinterpretq_u32_f32(total));
        const float32x4_t d = vreinterpretq_f32_u32(
            vandq_u32(live, vreinterpretq_u32_f32(vsubq_f32(vreinterpretq_f32_u32(gc), vmulq_f32(softmax, total)))));
        if (src.cols != NULL) {
            vst1q_f32(src.cols + c * 4, d);
        } else {
            float dv[4];
            vst1q_f32(dv, d);
            amp_class_col_out(t, dx, row0, C, g->rows, c, dv);
        }
    }
    if (src.cols != NULL) /* the gradients, back to rows */
        amp_class_cols_out(t, dx, row0, C, g->rows, 4, cols);
}

AMP_CLASS_RUN(, 4, group, load_group, class_group)

/* ---- the table entries ------------------------------------------------------------ */

#define FAST_CASE(inner, label_smoothing, C) ((inner) == 1 && !((label_smoothing) > 0))
#define LOSS_ENTRIES(T) AMP_CLASS_LOSS_ENTRIES(neon, FAST_CASE, T)
AMP_FOR_EACH_KERNEL_DTYPE(LOSS_ENTRIES)

/* This file's kernels of the sets: X(kernel, implementation). */
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
AMP_CLASS_LOSS_KERNELS(DEFINE, neon)
#undef DEFINE

void amp_isa_neon_fill_loss(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    AMP_CLASS_LOSS_KERNELS(INSTALL, neon)
#undef INSTALL
}

#endif /* aarch64 */
