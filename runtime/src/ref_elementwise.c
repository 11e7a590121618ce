/*
 * ref_elementwise.c - reference elementwise kernels: same-shape binary ops,
 * neg and relu, tensor-scalar ops, and broadcasting binary ops.
 *
 * Each element is widened to f32, combined in f32 (one IEEE operation), and
 * rounded to the storage dtype once. An output element is written only after
 * the inputs at the same index are read, which is what makes y == a (or b,
 * or x) safe for the same-shape and scalar kernels, and for a broadcasting
 * operand that is not itself broadcast.
 */
#include "amprt_internal.h"

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV } binop;

static AMP_ALWAYS_INLINE float apply(binop op, float a, float b)
{
    switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    }
    return 0.0f;
}

static AMP_ALWAYS_INLINE void binary(amp_dtype t, binop op, size_t n, const void *a, const void *b, void *y)
{
    for (size_t i = 0; i < n; i++)
        amp_st(t, y, (int64_t)i, apply(op, amp_ld(t, a, (int64_t)i), amp_ld(t, b, (int64_t)i)));
}

/* y = a op s, or s op a when `reversed` (rsub, rdiv). */
static AMP_ALWAYS_INLINE void with_scalar(amp_dtype t, binop op, int reversed, size_t n, const void *a,
                                          float s, void *y)
{
    for (size_t i = 0; i < n; i++) {
        float v = amp_ld(t, a, (int64_t)i);
        amp_st(t, y, (int64_t)i, reversed ? apply(op, s, v) : apply(op, v, s));
    }
}

static AMP_ALWAYS_INLINE void neg(amp_dtype t, size_t n, const void *x, void *y)
{
    for (size_t i = 0; i < n; i++)
        amp_st(t, y, (int64_t)i, -amp_ld(t, x, (int64_t)i));
}

/* PyTorch's relu is clamp_min(x, 0), whose CPU kernels compute
 * std::max(x, 0) = (x < 0 ? 0 : x) and _mm*_max_ps(0, x); both return x
 * itself when the comparison is false, so NaN stays NaN (payload kept) and
 * -0 stays -0. This expression does the same. */
static AMP_ALWAYS_INLINE void relu(amp_dtype t, size_t n, const void *x, void *y)
{
    for (size_t i = 0; i < n; i++) {
        float v = amp_ld(t, x, (int64_t)i);
        amp_st(t, y, (int64_t)i, v < 0.0f ? 0.0f : v);
    }
}

/* The output is walked as rows of the last dim; each row's start in a and b
 * is found by decomposing the row number over the outer dims. That costs a
 * few divisions per row and needs no per-dim counter array, so any ndim
 * works. ndim == 0 is a single element (a scalar). */
static AMP_ALWAYS_INLINE void bcast(amp_dtype t, binop op, int ndim, const int64_t *shape, const void *a,
                                    const int64_t *a_stride, const void *b, const int64_t *b_stride,
                                    void *y)
{
    int64_t len = ndim > 0 ? shape[ndim - 1] : 1;
    int64_t a_step = ndim > 0 ? a_stride[ndim - 1] : 0;
    int64_t b_step = ndim > 0 ? b_stride[ndim - 1] : 0;
    int64_t rows = 1;
    for (int d = 0; d < ndim - 1; d++)
        rows *= shape[d];

    for (int64_t r = 0; r < rows; r++) {
        int64_t a_off = 0, b_off = 0, rest = r;
        for (int d = ndim - 2; d >= 0; d--) {
            int64_t idx = rest % shape[d];
            rest /= shape[d];
            a_off += idx * a_stride[d];
            b_off += idx * b_stride[d];
        }
        for (int64_t j = 0; j < len; j++)
            amp_st(t, y, r * len + j,
                   apply(op, amp_ld(t, a, a_off + j * a_step), amp_ld(t, b, b_off + j * b_step)));
    }
}

#define BINARY(name, op, T)                                                                       \
    void amp_ref_##name##_##T(size_t n, const AMP_CTYPE_##T *a, const AMP_CTYPE_##T *b,          \
                              AMP_CTYPE_##T *y)                                                   \
    {                                                                                             \
        binary(AMP_DTYPE_##T, op, n, a, b, y);                                                    \
    }

#define SCALAR(name, op, reversed, T)                                                             \
    void amp_ref_##name##_scalar_##T(size_t n, const AMP_CTYPE_##T *a, float s, AMP_CTYPE_##T *y) \
    {                                                                                             \
        with_scalar(AMP_DTYPE_##T, op, reversed, n, a, s, y);                                     \
    }

#define UNARY(name, T)                                                                            \
    void amp_ref_##name##_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                 \
    {                                                                                             \
        name(AMP_DTYPE_##T, n, x, y);                                                             \
    }

#define BCAST(name, op, T)                                                                        \
    void amp_ref_##name##_bcast_##T(int ndim, const int64_t *shape, const AMP_CTYPE_##T *a,       \
                                    const int64_t *a_stride, const AMP_CTYPE_##T *b,              \
                                    const int64_t *b_stride, AMP_CTYPE_##T *y)                    \
    {                                                                                             \
        bcast(AMP_DTYPE_##T, op, ndim, shape, a, a_stride, b, b_stride, y);                       \
    }

#define ELEMENTWISE_KERNELS(T)                                                                    \
    BINARY(add, OP_ADD, T) BINARY(sub, OP_SUB, T) BINARY(mul, OP_MUL, T) BINARY(div, OP_DIV, T)   \
    UNARY(neg, T) UNARY(relu, T)                                                                  \
    SCALAR(add, OP_ADD, 0, T) SCALAR(sub, OP_SUB, 0, T)                                           \
    SCALAR(mul, OP_MUL, 0, T) SCALAR(div, OP_DIV, 0, T)                                           \
    SCALAR(rsub, OP_SUB, 1, T) SCALAR(rdiv, OP_DIV, 1, T)                                         \
    BCAST(add, OP_ADD, T) BCAST(sub, OP_SUB, T) BCAST(mul, OP_MUL, T) BCAST(div, OP_DIV, T)

AMP_FOR_EACH_KERNEL_DTYPE(ELEMENTWISE_KERNELS)
