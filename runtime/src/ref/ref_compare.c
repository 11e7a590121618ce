/*
 * ref_compare.c - reference kernels of amprt/compare.h: the six
 * comparisons in every dtype, and and/or/not of bools.
 *
 * Each element is compared in a type holding every value of T exactly
 * (double for f64, f32 for the half types, the integer itself otherwise),
 * so the result is the exact IEEE or integer comparison.
 *
 * Its kernels are hand-written: each definition is the kernel's body
 * (no compute type to instantiate it for).
 */
#include "amprt_internal.h"
#include "ref_strided.inc"

static int compare(int op, double a, double b)
{
    switch (op) {
    case AMP_CMP_EQ: return a == b;
    case AMP_CMP_NE: return a != b;
    case AMP_CMP_LT: return a < b;
    case AMP_CMP_LE: return a <= b;
    case AMP_CMP_GT: return a > b;
    default: return a >= b;
    }
}

/* Integers compare as integers: an i64 past 2^53 must not round. */
static int compare_int(int op, int64_t a, int64_t b)
{
    switch (op) {
    case AMP_CMP_EQ: return a == b;
    case AMP_CMP_NE: return a != b;
    case AMP_CMP_LT: return a < b;
    case AMP_CMP_LE: return a <= b;
    case AMP_CMP_GT: return a > b;
    default: return a >= b;
    }
}

#define LOAD_double(v) (v)
#define LOAD_float(v) ((double)(v))
#define LOAD_amp_bf16(v) ((double)amp_bf16_to_f32(v))
#define LOAD_amp_f16(v) ((double)amp_f16_to_f32(v))

#define WALK(CT, BODY)                                                                            \
    int64_t len = amp_row_length(ndim, shape), rows = amp_row_count(ndim, shape);                 \
    int64_t a_step = amp_row_step(ndim, a_stride), b_step = amp_row_step(ndim, b_stride);          \
    for (int64_t r = 0; r < rows; r++) {                                                          \
        const CT *ar = a + amp_row_offset(ndim, shape, a_stride, r);                              \
        const CT *br = b + amp_row_offset(ndim, shape, b_stride, r);                              \
        uint8_t *yr = y + r * len;                                                                \
        for (int64_t j = 0; j < len; j++)                                                         \
            yr[j] = (uint8_t)(BODY);                                                              \
    }

#define COMPARE_FLOAT(T, CT)                                                                      \
    void amp_ref_compare_##T(int op, int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, \
                             const CT *b, const int64_t *b_stride, uint8_t *y)                    \
    {                                                                                             \
        WALK(CT, compare(op, LOAD_##CT(ar[j * a_step]), LOAD_##CT(br[j * b_step])))               \
    }

#define COMPARE_INT(T, CT)                                                                        \
    void amp_ref_compare_##T(int op, int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride, \
                             const CT *b, const int64_t *b_stride, uint8_t *y)                    \
    {                                                                                             \
        WALK(CT, compare_int(op, (int64_t)ar[j * a_step], (int64_t)br[j * b_step]))               \
    }

COMPARE_FLOAT(f64, double)
COMPARE_FLOAT(f32, float)
COMPARE_FLOAT(bf16, amp_bf16)
COMPARE_FLOAT(f16, amp_f16)
COMPARE_INT(i64, int64_t)
COMPARE_INT(i32, int32_t)
COMPARE_INT(bool, uint8_t)

void amp_ref_logic_bool(int op, int ndim, const int64_t *shape, const uint8_t *a, const int64_t *a_stride,
                        const uint8_t *b, const int64_t *b_stride, uint8_t *y)
{
    if (op == AMP_LOGIC_NOT)
        b_stride = a_stride, b = a;
    WALK(uint8_t, op == AMP_LOGIC_AND ? (ar[j * a_step] && br[j * b_step])
                  : op == AMP_LOGIC_OR ? (ar[j * a_step] || br[j * b_step])
                                       : !ar[j * a_step])
}
