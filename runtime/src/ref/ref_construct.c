/*
 * ref_construct.c - reference kernels of amprt/elementwise.h that make
 * tensors from numbers (full, arange, linspace, eye, one_hot) and the
 * triangular copy of triu and tril.
 *
 * They take the dtype as an argument, like the data movers: one kernel for
 * every dtype, the integer and bool ones included (PyTorch's constructors
 * make any dtype).  A number reaches an integer dtype truncated toward
 * zero, a floating one rounded once (to nearest even) from the double it
 * was computed in, except where PyTorch computes in the narrow type itself
 * (linspace, below).
 *
 * Its kernels are hand-written: dtype-free, each definition is the body.
 */
#include <stdbool.h>
#include <string.h>

#include "amprt_internal.h"

/* Element i of y (dtype t) holding v. */
static void store(amp_dtype t, void *y, int64_t i, double v)
{
    switch (t) {
    case AMP_I64: ((int64_t *)y)[i] = (int64_t)v; return;
    case AMP_I32: ((int32_t *)y)[i] = (int32_t)v; return;
    case AMP_BOOL: ((uint8_t *)y)[i] = v != 0; return;
    default: amp_std(t, y, i, v); return;
    }
}

/* v rounded to dtype t and back: PyTorch's arithmetic in bf16 and f16
 * rounds every operation's result. */
static double narrow(amp_dtype t, double v)
{
    if (t != AMP_BF16 && t != AMP_F16)
        return t == AMP_F32 ? (double)(float)v : v;
    uint16_t h;
    amp_st(t, &h, 0, (float)v);
    return amp_ld(t, &h, 0);
}

void amp_ref_full(amp_dtype t, size_t n, double value, void *y)
{
    for (size_t i = 0; i < n; i++)
        store(t, y, (int64_t)i, value);
}

void amp_ref_arange(amp_dtype t, size_t n, double start, double step, void *y)
{
    for (size_t i = 0; i < n; i++)
        store(t, y, (int64_t)i, start + step * (double)i);
}

/* PyTorch's CPU kernel: the first half counts up from start, the second
 * down from end, so both ends are exact; the step and each value are
 * computed in the result's type (double for the integer ones). */
void amp_ref_linspace(amp_dtype t, size_t n, double start, double end, void *y)
{
    bool integral = t == AMP_I64 || t == AMP_I32 || t == AMP_BOOL;
    if (n == 1) {
        store(t, y, 0, start);
        return;
    }
    double s = integral ? start : narrow(t, start), e = integral ? end : narrow(t, end);
    double step = (e - s) / (double)(n - 1);
    if (!integral)
        step = narrow(t, narrow(t, e - s) / (double)(n - 1));
    size_t half = n / 2;
    for (size_t i = 0; i < n; i++) {
        double v = i < half ? s + step * (double)i : e - step * (double)(n - i - 1);
        if (!integral)
            v = i < half ? narrow(t, s + narrow(t, step * (double)i))
                         : narrow(t, e - narrow(t, step * (double)(n - i - 1)));
        store(t, y, (int64_t)i, v);
    }
}

void amp_ref_eye(amp_dtype t, int64_t n, int64_t m, void *y)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++)
            store(t, y, i * m + j, i == j);
}

int amp_ref_one_hot(int64_t n, int64_t classes, const int64_t *index, int64_t *y)
{
    for (int64_t i = 0; i < n; i++)
        if (index[i] < 0 || index[i] >= classes)
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    memset(y, 0, (size_t)(n * classes) * sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i * classes + index[i]] = 1;
    return AMP_OK;
}

/* triu keeps column - row >= diagonal, tril column - row <= diagonal; the
 * rest is zero, whose bytes are zero in every dtype. */
void amp_ref_tri(size_t elem_size, int64_t batch, int64_t rows, int64_t cols, int64_t diagonal, int upper,
                 const void *x, void *y)
{
    const char *src = x;
    char *dst = y;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int64_t k = (b * rows + i) * cols + j;
                bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
                if (keep)
                    memcpy(dst + k * (int64_t)elem_size, src + k * (int64_t)elem_size, elem_size);
                else
                    memset(dst + k * (int64_t)elem_size, 0, elem_size);
            }
}
