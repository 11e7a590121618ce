/*
 * test_compare.c - the comparisons and the logic of bools (amprt/compare.h)
 * in every dtype, through the public functions and the reference kernels:
 * IEEE order (NaN unequal to everything, -0 equal to +0), integers past
 * 2^53 compared exactly, halves compared exactly, and broadcasting through
 * stride 0 (a number operand).
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "amprt.h"
#include "amprt_internal.h"

enum { N = 6 };

/* what each op gives for a op b, in IEEE or integer order */
static uint8_t want(int op, double a, double b)
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

static const double A[N] = {1.5, -0.0, NAN, -3, 2, 65504};
static const double Bv[N] = {1.5, 0.0, NAN, 4, -INFINITY, 65504};

static void float_dtypes_compare_in_ieee_order(void **state)
{
    (void)state;
    const int64_t shape[] = {N}, stride[] = {1};
    for (int op = AMP_CMP_EQ; op <= AMP_CMP_GE; op++) {
        double a64[N], b64[N];
        float a32[N], b32[N];
        amp_bf16 abf[N], bbf[N];
        amp_f16 ah[N], bh[N];
        for (int i = 0; i < N; i++) {
            a64[i] = A[i], b64[i] = Bv[i];
            a32[i] = (float)A[i], b32[i] = (float)Bv[i];
            abf[i] = amp_f32_to_bf16((float)A[i]), bbf[i] = amp_f32_to_bf16((float)Bv[i]);
            ah[i] = amp_f32_to_f16((float)A[i]), bh[i] = amp_f32_to_f16((float)Bv[i]);
        }
        uint8_t y[4][N], r[4][N];
        amp_compare_f64(op, 1, shape, a64, stride, b64, stride, y[0]);
        amp_compare_f32(op, 1, shape, a32, stride, b32, stride, y[1]);
        amp_compare_bf16(op, 1, shape, abf, stride, bbf, stride, y[2]);
        amp_compare_f16(op, 1, shape, ah, stride, bh, stride, y[3]);
        amp_ref_compare_f64(op, 1, shape, a64, stride, b64, stride, r[0]);
        amp_ref_compare_f32(op, 1, shape, a32, stride, b32, stride, r[1]);
        amp_ref_compare_bf16(op, 1, shape, abf, stride, bbf, stride, r[2]);
        amp_ref_compare_f16(op, 1, shape, ah, stride, bh, stride, r[3]);
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < N; i++) {
                /* bf16 rounds 65504 to 65536 on both sides: still equal */
                assert_int_equal(y[t][i], want(op, A[i], Bv[i]));
                assert_int_equal(r[t][i], y[t][i]);
            }
    }
}

static void integers_compare_exactly(void **state)
{
    (void)state;
    const int64_t shape[] = {3}, stride[] = {1};
    const int64_t a[3] = {(int64_t)1 << 53, -5, INT64_MAX}, b[3] = {((int64_t)1 << 53) + 1, -5, INT64_MAX - 1};
    uint8_t y[3];
    amp_compare_i64(AMP_CMP_LT, 1, shape, a, stride, b, stride, y);
    assert_int_equal(y[0], 1); /* a double would call them equal */
    assert_int_equal(y[1], 0);
    assert_int_equal(y[2], 0);
    amp_compare_i64(AMP_CMP_EQ, 1, shape, a, stride, b, stride, y);
    assert_int_equal(y[0], 0);
    assert_int_equal(y[1], 1);
    const int32_t c[3] = {7, -1, 0}, d[1] = {0};
    const int64_t zero[] = {0};
    amp_compare_i32(AMP_CMP_GE, 1, shape, c, stride, d, zero, y); /* a number: stride 0 */
    assert_int_equal(y[0], 1);
    assert_int_equal(y[1], 0);
    assert_int_equal(y[2], 1);
    const uint8_t p[3] = {1, 0, 1}, q[3] = {1, 1, 0};
    amp_compare_bool(AMP_CMP_NE, 1, shape, p, stride, q, stride, y);
    assert_int_equal(y[0], 0);
    assert_int_equal(y[1], 1);
    assert_int_equal(y[2], 1);
}

/* [2, 3] against [3] broadcast over the rows, and a [2, 1] column */
static void operands_broadcast_through_strides(void **state)
{
    (void)state;
    const int64_t shape[] = {2, 3}, full[] = {3, 1}, row[] = {0, 1}, col[] = {1, 0};
    const float a[6] = {0, 1, 2, 3, 4, 5}, b[3] = {1, 1, 4}, c[2] = {1, 4};
    uint8_t y[6];
    amp_compare_f32(AMP_CMP_GT, 2, shape, a, full, b, row, y);
    const uint8_t want_row[6] = {0, 0, 0, 1, 1, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_row[i]);
    amp_compare_f32(AMP_CMP_LE, 2, shape, a, full, c, col, y);
    const uint8_t want_col[6] = {1, 1, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_col[i]);
}

static void logic_of_bools(void **state)
{
    (void)state;
    const int64_t shape[] = {4}, stride[] = {1}, zero[] = {0};
    const uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1}, one[1] = {1};
    uint8_t y[4], r[4];
    amp_logic_bool(AMP_LOGIC_AND, 1, shape, a, stride, b, stride, y);
    amp_ref_logic_bool(AMP_LOGIC_AND, 1, shape, a, stride, b, stride, r);
    for (int i = 0; i < 4; i++)
        assert_true(y[i] == (a[i] && b[i]) && r[i] == y[i]);
    amp_logic_bool(AMP_LOGIC_OR, 1, shape, a, stride, one, zero, y);
    for (int i = 0; i < 4; i++)
        assert_int_equal(y[i], 1);
    amp_logic_bool(AMP_LOGIC_NOT, 1, shape, a, stride, NULL, stride, y);
    for (int i = 0; i < 4; i++)
        assert_int_equal(y[i], !a[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float_dtypes_compare_in_ieee_order),
        cmocka_unit_test(integers_compare_exactly),
        cmocka_unit_test(operands_broadcast_through_strides),
        cmocka_unit_test(logic_of_bools),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
