/*
 * loss_form.h - the row-group driver of the kernel sets' cross_entropy
 * (class targets), its backward and the two in one call: everything but
 * a group's vector arithmetic, which each set writes in its own lanes.
 *
 * A set works on groups of LANES rows of the [N, C] input, a row per
 * lane (x86/avx2_loss.c 8, x86/avx512_loss.c 16, arm/neon_loss.c 4).
 * What this form holds is scalar and the same in every set: the
 * reference's checks (ref_losses.c check_class_targets) and the
 * backward's scale (ref_backward_loss.inc), a group's targets and
 * weights, the transposing copies between rows and a group's columns,
 * the loop over groups adding the losses in row order as the reference
 * does, and the table entries with their way to the reference.  A set
 * defines
 *
 *   its group type, with fields rows (lanes in use), live (bit l: row l
 *   not ignored) and wk (weight[target], 0 when ignored), filled by
 *   load_group(a, row0, &g) through amp_class_load_group;
 *   class_group(a, row0, &g, lv, dx): the group's losses into lv (when
 *   lv != NULL) and gradients into dx (when dx != NULL);
 *
 * then instantiates AMP_CLASS_RUN, AMP_CLASS_LOSS_ENTRIES per dtype and
 * AMP_CLASS_LOSS_KERNELS.  Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_LOSS_FORM_H
#define AMPRT_FRAME_LOSS_FORM_H

#include <stdint.h>

typedef struct {
    amp_dtype t;
    int64_t N, C;
    const void *x, *weight, *dloss;
    const int64_t *target;
    int64_t ignore_index;
    int reduction;
    float scale; /* the backward's dloss / weight sum (MEAN), dloss (SUM) */
} amp_class_args;

/* The reference's checks (ref_losses.c check_class_targets), same order. */
static inline int amp_class_check_targets(int64_t N, int64_t C, int64_t inner, const void *x, const int64_t *target,
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

/* The backward's scale, as the reference computes it (before any row). */
static inline float amp_class_scale(const amp_class_args *a)
{
    if (a->reduction == AMP_REDUCTION_MEAN) {
        float weight_sum = 0;
        for (int64_t p = 0; p < a->N; p++)
            if (a->target[p] != a->ignore_index)
                weight_sum += a->weight != NULL ? amp_ld(a->t, a->weight, a->target[p]) : 1;
        return amp_ld(a->t, a->dloss, 0) / weight_sum;
    }
    if (a->reduction == AMP_REDUCTION_SUM)
        return amp_ld(a->t, a->dloss, 0);
    return 0;
}

/* The group of up to lanes rows from row0: its rows, the bits of its live
 * rows, each lane's target k and weight wk; ignored rows and lanes past
 * the rows get target 0 and weight 0 and stay out of live.  (The forward
 * checked the targets; the backward trusts them, as the reference does.) */
static AMP_ALWAYS_INLINE void amp_class_load_group(const amp_class_args *a, int64_t row0, int lanes, int *rows,
                                                   int *live, int32_t *k, float *wk)
{
    *rows = (int)(a->N - row0 < lanes ? a->N - row0 : lanes);
    *live = 0;
    for (int l = 0; l < lanes; l++) {
        const int64_t kl = l < *rows ? a->target[row0 + l] : a->ignore_index;
        if (l >= *rows || kl == a->ignore_index) {
            k[l] = 0;
            wk[l] = 0.0f;
            continue;
        }
        *live |= 1 << l;
        k[l] = (int32_t)kl;
        wk[l] = a->weight != NULL ? amp_ld(a->t, a->weight, kl) : 1.0f;
    }
}

/* Rows row0 .. row0 + rows - 1 of x ([., C] of t) into cols[c][lane], a
 * transposing copy as amp_ld reads them; lanes past the rows are 0. */
static AMP_ALWAYS_INLINE void amp_class_cols_in(amp_dtype t, const void *x, int64_t row0, int64_t C, int rows,
                                                int lanes, float *cols)
{
    for (int l = 0; l < lanes; l++) {
        const int64_t base = (row0 + l) * C;
        if (l >= rows)
            for (int64_t c = 0; c < C; c++)
                cols[c * lanes + l] = 0.0f;
        else if (t == AMP_F32)
            for (int64_t c = 0; c < C; c++)
                cols[c * lanes + l] = ((const float *)x)[base + c];
        else
            for (int64_t c = 0; c < C; c++)
                cols[c * lanes + l] = amp_ld(t, x, base + c);
    }
}

/* cols[c][lane] (a group's gradients) back to the rows of dx, as amp_st
 * stores them. */
static AMP_ALWAYS_INLINE void amp_class_cols_out(amp_dtype t, void *dx, int64_t row0, int64_t C, int rows, int lanes,
                                                 const float *cols)
{
    for (int l = 0; l < rows; l++) {
        const int64_t base = (row0 + l) * C;
        if (t == AMP_F32)
            for (int64_t c = 0; c < C; c++)
                ((float *)dx)[base + c] = cols[c * lanes + l];
        else
            for (int64_t c = 0; c < C; c++)
                amp_st(t, dx, base + c, cols[c * lanes + l]);
    }
}

/* Lane values v (a vector stored to memory) of the group's rows into
 * column c of dx, one amp_st each. */
static AMP_ALWAYS_INLINE void amp_class_col_out(amp_dtype t, void *dx, int64_t row0, int64_t C, int rows, int64_t c,
                                                const float *v)
{
    for (int l = 0; l < rows; l++)
        amp_st(t, dx, (row0 + l) * C + c, v[l]);
}

/* class_run(a, want_loss, y, dx): the loss (want_loss: into y, the
 * targets checked first), its gradient (dx != NULL), or both; the groups
 * of LANES rows in turn, the live rows' losses and weights added in row
 * order (ATTR: the set's target attribute, or empty). */
#define AMP_CLASS_RUN(ATTR, LANES, group_t, load_group, class_group)                                            \
    ATTR static int class_run(amp_class_args *a, int want_loss, void *y, void *dx)                              \
    {                                                                                                           \
        float total = 0, weight_sum = 0;                                                                        \
        if (want_loss) {                                                                                        \
            int status = amp_class_check_targets(a->N, a->C, 1, a->x, a->target, a->ignore_index, a->reduction, \
                                                 y);                                                            \
            if (status != AMP_OK)                                                                               \
                return status;                                                                                  \
        }                                                                                                       \
        if (dx != NULL)                                                                                         \
            a->scale = amp_class_scale(a);                                                                      \
        for (int64_t row0 = 0; row0 < a->N; row0 += LANES) {                                                    \
            group_t g;                                                                                          \
            float lv[LANES];                                                                                    \
            load_group(a, row0, &g);                                                                            \
            if (g.live)                                                                                         \
                class_group(a, row0, &g, want_loss ? lv : NULL, dx);                                            \
            else if (dx != NULL)                                                                                \
                for (int64_t e = row0 * a->C; e < (row0 + g.rows) * a->C; e++)                                  \
                    amp_st(a->t, dx, e, 0.0f);                                                                  \
            if (!want_loss)                                                                                     \
                continue;                                                                                       \
            for (int l = 0; l < g.rows; l++) {                                                                  \
                if (!(g.live >> l & 1)) {                                                                       \
                    if (a->reduction == AMP_REDUCTION_NONE)                                                     \
                        amp_st(a->t, y, row0 + l, 0.0f);                                                        \
                    continue;                                                                                   \
                }                                                                                               \
                if (a->reduction == AMP_REDUCTION_NONE)                                                         \
                    amp_st(a->t, y, row0 + l, lv[l]);                                                           \
                total += lv[l];                                                                                 \
                weight_sum += g.wk[l];                                                                          \
            }                                                                                                   \
        }                                                                                                       \
        if (want_loss && a->reduction == AMP_REDUCTION_MEAN)                                                    \
            amp_st(a->t, y, 0, total / weight_sum);                                                             \
        else if (want_loss && a->reduction == AMP_REDUCTION_SUM)                                                \
            amp_st(a->t, y, 0, total);                                                                          \
        return AMP_OK;                                                                                          \
    }

/* The three table entries of dtype T, set##_cross_entropy_##T and its
 * _backward_ and _with_grad_ forms: class_run where FAST(inner,
 * label_smoothing, C) holds, the reference otherwise. */
#define AMP_CLASS_LOSS_ENTRIES(set, FAST, T)                                                                      \
    static int set##_cross_entropy_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *x,               \
                                       const int64_t *target, const AMP_CTYPE_##T *weight, int64_t ignore_index, \
                                       double label_smoothing, int reduction, AMP_CTYPE_##T *y)                   \
    {                                                                                                             \
        amp_class_args a = { AMP_DTYPE_##T, N, C, x, weight, NULL, target, ignore_index, reduction, 0 };          \
        if (!FAST(inner, label_smoothing, C))                                                                     \
            return amp_ref_cross_entropy_##T(N, C, inner, x, target, weight, ignore_index, label_smoothing,       \
                                             reduction, y);                                                       \
        return class_run(&a, 1, y, NULL);                                                                         \
    }                                                                                                             \
    static void set##_cross_entropy_backward_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *x,     \
                                                 const int64_t *target, const AMP_CTYPE_##T *weight,              \
                                                 int64_t ignore_index, double label_smoothing, int reduction,     \
                                                 const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *dx)                   \
    {                                                                                                             \
        amp_class_args a = { AMP_DTYPE_##T, N, C, x, weight, dloss, target, ignore_index, reduction, 0 };         \
        if (!FAST(inner, label_smoothing, C) || N < 0 || C < 0)                                                   \
            amp_ref_cross_entropy_backward_##T(N, C, inner, x, target, weight, ignore_index, label_smoothing,     \
                                               reduction, dloss, dx);                                             \
        else                                                                                                      \
            (void)class_run(&a, 0, NULL, dx);                                                                     \
    }                                                                                                             \
    static int set##_cross_entropy_with_grad_##T(int64_t N, int64_t C, int64_t inner, const AMP_CTYPE_##T *x,     \
                                                 const int64_t *target, const AMP_CTYPE_##T *weight,              \
                                                 int64_t ignore_index, double label_smoothing, int reduction,     \
                                                 const AMP_CTYPE_##T *dloss, AMP_CTYPE_##T *y, AMP_CTYPE_##T *dx) \
    {                                                                                                             \
        amp_class_args a = { AMP_DTYPE_##T, N, C, x, weight, dloss, target, ignore_index, reduction, 0 };         \
        if (!FAST(inner, label_smoothing, C))                                                                     \
            return amp_ref_cross_entropy_with_grad_##T(N, C, inner, x, target, weight, ignore_index,              \
                                                       label_smoothing, reduction, dloss, y, dx);                 \
        return class_run(&a, 1, y, dx);                                                                           \
    }

/* The entries' kernels: X(kernel, implementation), for each dtype. */
#define AMP_CLASS_LOSS_OF(X, set, T)                                                                              \
    X(cross_entropy_##T, set##_cross_entropy_##T)                                                                 \
    X(cross_entropy_backward_##T, set##_cross_entropy_backward_##T)                                               \
    X(cross_entropy_with_grad_##T, set##_cross_entropy_with_grad_##T)
#define AMP_CLASS_LOSS_KERNELS(X, set)                                                                            \
    AMP_CLASS_LOSS_OF(X, set, f32) AMP_CLASS_LOSS_OF(X, set, bf16) AMP_CLASS_LOSS_OF(X, set, f16)

#endif /* AMPRT_FRAME_LOSS_FORM_H */
