/*
 * ref_data.c - reference data movement kernels of amprt/elementwise.h:
 * copy_strided, where, fill and pad.
 *
 * None of them computes: they move whole elements as bytes (memcpy of the
 * element size), so they are written once for any element size, and every
 * value, NaN payloads and signalling NaNs included, arrives bit for bit.
 * Only fill and pad's constant convert a number, `value`, to the dtype.
 *
 * Its kernels are hand-written: they move elements by size, each
 * definition is the body (or converts the fill value first).
 */
#include <string.h>

#include "amprt_internal.h"
#include "ref_strided.inc"

/* One row of copy_strided: len elements of size es, steps in elements.
 * es is a constant where this is inlined, so each memcpy is one move. */
static AMP_ALWAYS_INLINE void copy_row(size_t es, char *dst, int64_t y_step, const char *src, int64_t x_step,
                                       int64_t len)
{
    for (int64_t j = 0; j < len; j++)
        memcpy(dst + j * y_step * (int64_t)es, src + j * x_step * (int64_t)es, es);
}

/* y[y_stride . i] = x[x_stride . i] for every index i of shape.  A row
 * contiguous on both sides (a transpose of whole rows: attention's heads)
 * is one memcpy; otherwise the element sizes of the dtypes move as one
 * load and store each. */
void amp_ref_copy_strided(size_t elem_size, int ndim, const int64_t *shape, const void *x,
                          const int64_t *x_stride, void *y, const int64_t *y_stride)
{
    const char *src = x;
    char *dst = y;
    int64_t len = amp_row_length(ndim, shape), rows = amp_row_count(ndim, shape);
    int64_t x_step = amp_row_step(ndim, x_stride), y_step = amp_row_step(ndim, y_stride);

    for (int64_t r = 0; r < rows; r++) {
        char *d = dst + amp_row_offset(ndim, shape, y_stride, r) * (int64_t)elem_size;
        const char *s = src + amp_row_offset(ndim, shape, x_stride, r) * (int64_t)elem_size;
        if (x_step == 1 && y_step == 1 && len > 0) {
            memcpy(d, s, (size_t)len * elem_size);
            continue;
        }
        switch (elem_size) {
        case 1: copy_row(1, d, y_step, s, x_step, len); break;
        case 2: copy_row(2, d, y_step, s, x_step, len); break;
        case 4: copy_row(4, d, y_step, s, x_step, len); break;
        case 8: copy_row(8, d, y_step, s, x_step, len); break;
        default: copy_row(elem_size, d, y_step, s, x_step, len); break;
        }
    }
}

/* y = cond ? a : b over the contiguous output shape, operands strided. */
static void select_strided(size_t elem_size, int ndim, const int64_t *shape, const uint8_t *cond,
                           const int64_t *cond_stride, const void *a, const int64_t *a_stride, const void *b,
                           const int64_t *b_stride, void *y)
{
    const char *pa = a, *pb = b;
    char *dst = y;
    int64_t len = amp_row_length(ndim, shape), rows = amp_row_count(ndim, shape);
    int64_t c_step = amp_row_step(ndim, cond_stride);
    int64_t a_step = amp_row_step(ndim, a_stride), b_step = amp_row_step(ndim, b_stride);

    for (int64_t r = 0; r < rows; r++) {
        int64_t c_off = amp_row_offset(ndim, shape, cond_stride, r);
        int64_t a_off = amp_row_offset(ndim, shape, a_stride, r);
        int64_t b_off = amp_row_offset(ndim, shape, b_stride, r);
        for (int64_t j = 0; j < len; j++) {
            const char *chosen = cond[c_off + j * c_step] ? pa + (a_off + j * a_step) * (int64_t)elem_size
                                                          : pb + (b_off + j * b_step) * (int64_t)elem_size;
            memcpy(dst + (r * len + j) * (int64_t)elem_size, chosen, elem_size);
        }
    }
}

/* One element of dtype t holding v: f64 keeps the double; the others take
 * it as the f32 they compute in (exactly, for the values the code
 * generator passes) and round that once, as PyTorch converts a Python
 * number to bf16/f16 through float. */
static void element_of(amp_dtype t, double v, void *elem)
{
    if (t == AMP_F64)
        amp_std(t, elem, 0, v);
    else
        amp_st(t, elem, 0, (float)v);
}

static void fill(size_t elem_size, size_t n, const void *elem, void *y)
{
    char *dst = y;
    for (size_t i = 0; i < n; i++)
        memcpy(dst + i * elem_size, elem, elem_size);
}

/* The input index that output index i - before of a padded dim of length n
 * reads, or -1 for the constant. Reflect mirrors about the edge elements
 * (-1 reads 1, n reads n - 2), replicate repeats them; both assume the pad
 * is shorter than the dim (the code generator checks), and a negative pad
 * only ever yields indices inside the input. */
static int64_t source_index(int mode, int64_t i, int64_t n)
{
    switch (mode) {
    case AMP_PAD_REFLECT: return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
    case AMP_PAD_REPLICATE: return i < 0 ? 0 : i >= n ? n - 1 : i;
    default: return i >= 0 && i < n ? i : -1;
    }
}

/* The output is walked as rows of its last dim; a row's place in x follows
 * from its output coordinates, one dim at a time, and a row whose outer
 * coordinate falls in a constant pad is all constant. */
static void pad(size_t elem_size, int ndim, const int64_t *in_shape, const int64_t *before, const int64_t *after,
                int mode, const void *elem, const void *x, void *y)
{
    const char *src = x;
    char *dst = y;
    int64_t rows = 1, len = 1;

    if (ndim == 0) {
        memcpy(dst, src, elem_size);
        return;
    }
    for (int d = 0; d < ndim; d++) {
        int64_t out = in_shape[d] + before[d] + after[d];
        if (out <= 0)
            return;
        if (d < ndim - 1)
            rows *= out;
        else
            len = out;
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t rest = r, in_off = 0, in_stride = in_shape[ndim - 1];
        int constant_row = 0;
        for (int d = ndim - 2; d >= 0; d--) {
            int64_t out = in_shape[d] + before[d] + after[d];
            int64_t s = source_index(mode, rest % out - before[d], in_shape[d]);
            rest /= out;
            if (s < 0)
                constant_row = 1;
            in_off += s * in_stride;
            in_stride *= in_shape[d];
        }
        for (int64_t j = 0; j < len; j++) {
            int64_t s = constant_row ? -1 : source_index(mode, j - before[ndim - 1], in_shape[ndim - 1]);
            memcpy(dst + (r * len + j) * (int64_t)elem_size, s < 0 ? elem : src + (in_off + s) * (int64_t)elem_size,
                   elem_size);
        }
    }
}

#define DATA_KERNELS(T)                                                                           \
    void amp_ref_where_##T(int ndim, const int64_t *shape, const uint8_t *cond,                   \
                           const int64_t *cond_stride, const AMP_CTYPE_##T *a,                    \
                           const int64_t *a_stride, const AMP_CTYPE_##T *b,                       \
                           const int64_t *b_stride, AMP_CTYPE_##T *y)                             \
    {                                                                                             \
        select_strided(sizeof *y, ndim, shape, cond, cond_stride, a, a_stride, b, b_stride, y);   \
    }                                                                                             \
    void amp_ref_fill_##T(size_t n, double value, AMP_CTYPE_##T *y)                               \
    {                                                                                             \
        AMP_CTYPE_##T elem;                                                                       \
        element_of(AMP_DTYPE_##T, value, &elem);                                                  \
        fill(sizeof elem, n, &elem, y);                                                           \
    }                                                                                             \
    void amp_ref_pad_##T(int ndim, const int64_t *in_shape, const int64_t *before,                \
                         const int64_t *after, int mode, double value, const AMP_CTYPE_##T *x,    \
                         AMP_CTYPE_##T *y)                                                        \
    {                                                                                             \
        AMP_CTYPE_##T elem;                                                                       \
        element_of(AMP_DTYPE_##T, value, &elem);                                                  \
        pad(sizeof elem, ndim, in_shape, before, after, mode, &elem, x, y);                       \
    }

DATA_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(DATA_KERNELS)
