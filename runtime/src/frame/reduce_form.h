/*
 * reduce_form.h - the [O, R, I] form of a reduction mask, for the kernel
 * sets' sums: after merging adjacent dims with the same flag, kept dims
 * [O], then reduced [R], then kept [I].  The sets sum such a form column by
 * column (each output element its own f32 chain, in the reference's
 * order); other masks, and a reduced innermost dim, go to the reference.
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

/* A set's sum over T, named name (ATTR: its target attribute, or empty):
 * column_sums(dtype, R, I, x, y), the set's own, over each [R, I] block of
 * the form; any other mask goes to the reference.  Needs amprt_internal.h. */
#define AMP_SUM_BY_COLUMNS(ATTR, name, T, column_sums)                                            \
    ATTR static void name(int ndim, const int64_t *shape, const uint8_t *reduce,                  \
                          const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                               \
    {                                                                                             \
        int64_t O, R, I;                                                                          \
        if (!amp_reduce_form(ndim, shape, reduce, &O, &R, &I)) {                                  \
            amp_ref_sum_##T(ndim, shape, reduce, x, y);                                           \
            return;                                                                               \
        }                                                                                         \
        for (int64_t o = 0; o < O; o++)                                                           \
            column_sums(AMP_DTYPE_##T, R, I, (const char *)(x + o * R * I), (char *)(y + o * I)); \
    }

#endif /* AMPRT_FRAME_REDUCE_FORM_H */
