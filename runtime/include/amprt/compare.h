/*
 * amprt/compare.h - comparisons giving bool tensors, and the logic of bools
 * (included by amprt.h).
 *
 *  compare_T  y = a OP b, one byte 0 or 1, for op an amp_compare_op; a and
 *             b are read through element strides over the contiguous output
 *             `shape` (stride 0 broadcasts; a number operand is a
 *             one-element array read with stride 0, already rounded to T,
 *             as PyTorch compares a tensor with a number in the tensor's
 *             dtype).  IEEE order: a NaN is unequal to everything, itself
 *             included, so ne gives 1 and the other ops 0; -0 equals +0.
 *             The half types compare exactly, through f32.
 *  logic_bool y = a AND b, a OR b, or NOT a (b unread) on bools, for op an
 *             amp_logic_op, strided likewise.
 */
#ifndef AMPRT_COMPARE_H
#define AMPRT_COMPARE_H

typedef enum { AMP_CMP_EQ, AMP_CMP_NE, AMP_CMP_LT, AMP_CMP_LE, AMP_CMP_GT, AMP_CMP_GE } amp_compare_op;
typedef enum { AMP_LOGIC_AND, AMP_LOGIC_OR, AMP_LOGIC_NOT } amp_logic_op;

#define AMP_COMPARE_ROW(X, T, CT)                                                        \
    X(compare, T, void,                                                                  \
      (int op, int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride,     \
       const CT *b, const int64_t *b_stride, uint8_t *y),                                \
      (op, ndim, shape, a, a_stride, b, b_stride, y))

#define AMP_COMPARE_KERNELS(X)                                                           \
    AMP_COMPARE_ROW(X, f64, double)                                                      \
    AMP_COMPARE_ROW(X, f32, float)                                                       \
    AMP_COMPARE_ROW(X, bf16, amp_bf16)                                                   \
    AMP_COMPARE_ROW(X, f16, amp_f16)                                                     \
    AMP_COMPARE_ROW(X, i64, int64_t)                                                     \
    AMP_COMPARE_ROW(X, i32, int32_t)                                                     \
    AMP_COMPARE_ROW(X, bool, uint8_t)                                                    \
    X(logic, bool, void,                                                                 \
      (int op, int ndim, const int64_t *shape, const uint8_t *a, const int64_t *a_stride, \
       const uint8_t *b, const int64_t *b_stride, uint8_t *y),                           \
      (op, ndim, shape, a, a_stride, b, b_stride, y))

#endif /* AMPRT_COMPARE_H */
