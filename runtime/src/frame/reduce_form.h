/*
 * reduce_form.h - the [O, R, I] form of a reduction mask, for the kernel
 * sets' sums: after merging adjacent dims with the same flag, kept dims
 * [O], then reduced [R], then kept [I].  The sets sum such a form column by
 * column (each output element its own f32 chain, in the reference's
 * order).  A reduced innermost dim, the [R1, O, R2] form (R1 may be 1),
 * takes frame/reduce.c's amp_sum_rows_form, shared by the sets; other
 * masks go to the reference.
 */
#ifndef AMPRT_FRAME_REDUCE_FORM_H
#define AMPRT_FRAME_REDUCE_FORM_H

#include <stdint.h>

/* 1 and O, R, I when (shape, reduce) has the form; 0 otherwise. */
static inline int amp_reduce_form(int ndim, const int64_t *shape, const uint8_t *reduce, int64_t *O, int64_t *R,
                                  int64_t *I)
{
    int d = 0;
    *O = *R = *I = 1;
    for (; d < ndim && !reduce[d]; d++)
        *O *= shape[d];
    for (; d < ndim && reduce[d]; d++)
        *R *= shape[d];
    for (; d < ndim && !reduce[d]; d++)
        *I *= shape[d];
    if (d < ndim)
        return 0;
    if (*R == 1 && *I == 1) { /* nothing reduced (or ones): one long row of columns */
        *I = *O;
        *O = 1;
    }
    return ndim == 0 || !reduce[ndim - 1];
}

/* 1 and R1, O, R2 when (shape, reduce) is, after merging adjacent dims
 * with the same flag, [R1, O, R2] or [O, R2] with R2 > 1 reduced (its
 * innermost dim); 0 otherwise. */
static inline int amp_reduce_rows_form(int ndim, const int64_t *shape, const uint8_t *reduce, int64_t *R1,
                                       int64_t *O, int64_t *R2)
{
    int d = 0;
    *R1 = *O = *R2 = 1;
    for (; d < ndim && reduce[d]; d++)
        *R1 *= shape[d];
    for (; d < ndim && !reduce[d]; d++)
        *O *= shape[d];
    for (; d < ndim && reduce[d]; d++)
        *R2 *= shape[d];
    return d == ndim && ndim > 0 && reduce[ndim - 1] && *R2 > 1;
}

/* y[o] = the f32 sum of x[r1][o][r2] over r1 < R1 then r2 < R2 (the
 * reference's order and chain), rounded to t (f32, bf16 or f16) as the
 * reference rounds it (frame/reduce.c). */
void amp_sum_rows_form(amp_dtype t, int64_t R1, int64_t O, int64_t R2, const void *x, void *y);

/* Elements of the [O, R, I] form from which a set's sum splits its
 * columns over the pool (frame/chunked.h's AMP_PARALLEL_MIN), and the
 * columns of a part: a multiple of every set's widest step (128 columns),
 * about four parts a thread. */
#define AMP_SUM_PARALLEL_MIN ((int64_t)1 << 17)
static inline int64_t amp_sum_part_columns(int64_t I, int threads)
{
    const int64_t want = (I + 4 * threads - 1) / (4 * threads);
    return (want + 127) / 128 * 128;
}

/* A set's sum over T, named name (ATTR: its target attribute, or empty):
 * column_sums(dtype, R, I, c0, c1, x, y), the set's own, over columns [c0,
 * c1) of each [R, I] block of the form, in parts of columns on the pool
 * from AMP_SUM_PARALLEL_MIN elements (each column one chain wherever it
 * falls, so the bits do not depend on the split); the [R1, O, R2] form
 * through amp_sum_rows_form; any other mask goes to the reference.  Needs
 * amprt_internal.h. */
#define AMP_SUM_BY_COLUMNS(ATTR, name, T, column_sums)                                            \
    typedef struct {                                                                              \
        int64_t R, I, per, parts;                                                                 \
        const AMP_CTYPE_##T *x;                                                                   \
        AMP_CTYPE_##T *y;                                                                         \
    } name##_job;                                                                                 \
    ATTR static void name##_part(void *ctx, int64_t task, int slot)                               \
    {                                                                                             \
        const name##_job *j = ctx;                                                                \
        const int64_t o = task / j->parts, c0 = task % j->parts * j->per;                         \
        (void)slot;                                                                               \
        column_sums(AMP_DTYPE_##T, j->R, j->I, c0, c0 + j->per < j->I ? c0 + j->per : j->I,       \
                    (const char *)(j->x + o * j->R * j->I), (char *)(j->y + o * j->I));           \
    }                                                                                             \
    ATTR static void name(int ndim, const int64_t *shape, const uint8_t *reduce,                  \
                          const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                               \
    {                                                                                             \
        int64_t O, R, I;                                                                          \
        if (!amp_reduce_form(ndim, shape, reduce, &O, &R, &I)) {                                  \
            if (amp_reduce_rows_form(ndim, shape, reduce, &R, &O, &I))                            \
                amp_sum_rows_form(AMP_DTYPE_##T, R, O, I, x, y);                                  \
            else                                                                                  \
                amp_ref_sum_##T(ndim, shape, reduce, x, y);                                       \
            return;                                                                               \
        }                                                                                         \
        const int threads = amp_get_threads();                                                    \
        if (threads > 1 && O * R * I >= AMP_SUM_PARALLEL_MIN) {                                   \
            name##_job j = { R, I, amp_sum_part_columns(I, threads), 0, x, y };                   \
            j.parts = (I + j.per - 1) / j.per;                                                    \
            if (O * j.parts > 1) {                                                                \
                amp_parallel_run(threads, O * j.parts, name##_part, &j);                          \
                return;                                                                           \
            }                                                                                     \
        }                                                                                         \
        for (int64_t o = 0; o < O; o++)                                                           \
            column_sums(AMP_DTYPE_##T, R, I, 0, I, (const char *)(x + o * R * I), (char *)(y + o * I)); \
    }

#endif /* AMPRT_FRAME_REDUCE_FORM_H */
