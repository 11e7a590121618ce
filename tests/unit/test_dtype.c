/*
 * test_dtype.c - element types and torch.promote_types (src/dtype.c).
 *
 * The promotion table below is PyTorch's for two dimensioned tensors
 * (c10/core/ScalarType.cpp): categories bool < integer < floating, the
 * wider type within a category, and bf16 with f16 meeting at f32 since
 * neither holds the other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ampc.h"

enum { NT = DT_C128 - DT_BOOL + 1 };

/* promote[a][b], indexed from DT_BOOL */
static const DType promote[NT][NT] = {
    /*            bool     i32      i64      bf16     f16      f32      f64      c64      c128 (torch.promote_types) */
    /* bool */ {DT_BOOL, DT_I32, DT_I64, DT_BF16, DT_F16, DT_F32, DT_F64, DT_C64, DT_C128},
    /* i32  */ {DT_I32, DT_I32, DT_I64, DT_BF16, DT_F16, DT_F32, DT_F64, DT_C64, DT_C128},
    /* i64  */ {DT_I64, DT_I64, DT_I64, DT_BF16, DT_F16, DT_F32, DT_F64, DT_C64, DT_C128},
    /* bf16 */ {DT_BF16, DT_BF16, DT_BF16, DT_BF16, DT_F32, DT_F32, DT_F64, DT_C64, DT_C128},
    /* f16  */ {DT_F16, DT_F16, DT_F16, DT_F32, DT_F16, DT_F32, DT_F64, DT_C64, DT_C128},
    /* f32  */ {DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F64, DT_C64, DT_C128},
    /* f64  */ {DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_C128, DT_C128},
    /* c64  */ {DT_C64, DT_C64, DT_C64, DT_C64, DT_C64, DT_C64, DT_C128, DT_C64, DT_C128},
    /* c128 */ {DT_C128, DT_C128, DT_C128, DT_C128, DT_C128, DT_C128, DT_C128, DT_C128, DT_C128},
};

static void promote_matches_pytorch_table(void **state)
{
    (void)state;
    for (int a = 0; a < NT; a++) {
        for (int b = 0; b < NT; b++) {
            DType ta = (DType)(DT_BOOL + a), tb = (DType)(DT_BOOL + b);
            DType got = dtype_promote(ta, tb);
            if (got != promote[a][b]) {
                print_error("dtype_promote(%s, %s) = %s, want %s\n", dtype_name(ta), dtype_name(tb),
                            dtype_name(got), dtype_name(promote[a][b]));
                fail();
            }
        }
    }
}

static void promote_named_cases(void **state)
{
    (void)state;
    assert_int_equal(dtype_promote(DT_BF16, DT_F16), DT_F32); /* neither holds the other */
    assert_int_equal(dtype_promote(DT_F16, DT_BF16), DT_F32);
    assert_int_equal(dtype_promote(DT_I64, DT_BF16), DT_BF16); /* integer + bf16 stays bf16 */
    assert_int_equal(dtype_promote(DT_BOOL, DT_I32), DT_I32);
    assert_int_equal(dtype_promote(DT_F16, DT_F64), DT_F64);
    assert_int_equal(dtype_promote(DT_I32, DT_I64), DT_I64);
    assert_int_equal(dtype_promote(DT_F32, DT_C64), DT_C64);   /* complex is the higher category */
    assert_int_equal(dtype_promote(DT_F64, DT_C64), DT_C128);  /* ...and takes the wider real part */
    assert_int_equal(dtype_promote(DT_BF16, DT_C64), DT_C64);
    assert_int_equal(dtype_promote(DT_F16, DT_C64), DT_C64);
    assert_true(!dtype_is_float(DT_C64) && dtype_is_complex(DT_C128)); /* never autocast-eligible */
    assert_int_equal(dtype_to_real(DT_C128), DT_F64);
    assert_int_equal(dtype_to_complex(DT_F32), DT_C64);
}

static void promote_is_symmetric(void **state)
{
    (void)state;
    for (DType a = DT_BOOL; a <= DT_C128; a++)
        for (DType b = DT_BOOL; b <= DT_C128; b++)
            assert_int_equal(dtype_promote(a, b), dtype_promote(b, a));
}

static void names_round_trip(void **state)
{
    (void)state;
    static const char *const names[NT] = {"bool", "i32", "i64", "bf16", "f16", "f32", "f64", "c64", "c128"};
    for (int i = 0; i < NT; i++) {
        DType t = (DType)(DT_BOOL + i);
        assert_string_equal(dtype_name(t), names[i]);
        assert_int_equal(dtype_from_name(names[i]), t);
        assert_int_equal(dtype_from_name(dtype_name(t)), t);
    }
}

static void unknown_names_are_none(void **state)
{
    (void)state;
    assert_int_equal(dtype_from_name("float32"), DT_NONE); /* PyTorch's spelling is not ours */
    assert_int_equal(dtype_from_name("F32"), DT_NONE);     /* case matters */
    assert_int_equal(dtype_from_name("f3"), DT_NONE);      /* a prefix */
    assert_int_equal(dtype_from_name("f320"), DT_NONE);    /* one character too long */
    assert_int_equal(dtype_from_name(""), DT_NONE);
    assert_int_equal(dtype_from_name("none"), DT_NONE);    /* DT_NONE's own name is not a dtype */
}

static void c_types_sizes_and_enums(void **state)
{
    (void)state;
    static const struct {
        DType t;
        const char *c_type, *amp_enum;
        int size;
        DTypeCategory cat;
    } want[] = {
        {DT_BOOL, "uint8_t", "AMP_BOOL", 1, CAT_BOOL}, {DT_I32, "int32_t", "AMP_I32", 4, CAT_INT},
        {DT_I64, "int64_t", "AMP_I64", 8, CAT_INT},    {DT_BF16, "amp_bf16", "AMP_BF16", 2, CAT_FLOAT},
        {DT_F16, "amp_f16", "AMP_F16", 2, CAT_FLOAT},  {DT_F32, "float", "AMP_F32", 4, CAT_FLOAT},
        {DT_F64, "double", "AMP_F64", 8, CAT_FLOAT},
        /* interleaved (re, im) structs of amprt/complex.h */
        {DT_C64, "amp_c64", "AMP_C64", 8, CAT_COMPLEX}, {DT_C128, "amp_c128", "AMP_C128", 16, CAT_COMPLEX},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_string_equal(dtype_c_type(want[i].t), want[i].c_type);
        assert_string_equal(dtype_amp_enum(want[i].t), want[i].amp_enum);
        assert_int_equal(dtype_size(want[i].t), want[i].size);
        assert_int_equal(dtype_category(want[i].t), want[i].cat);
        assert_int_equal(dtype_is_float(want[i].t), want[i].cat == CAT_FLOAT);
    }
    assert_int_equal(dtype_size(DT_NONE), 0);
    assert_int_equal(dtype_category(DT_NONE), CAT_NONE);
    assert_false(dtype_is_float(DT_NONE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(promote_matches_pytorch_table),
        cmocka_unit_test(promote_named_cases),
        cmocka_unit_test(promote_is_symmetric),
        cmocka_unit_test(names_round_trip),
        cmocka_unit_test(unknown_names_are_none),
        cmocka_unit_test(c_types_sizes_and_enums),
    };
    return cmocka_run_group_tests_name("dtype", tests, NULL, NULL);
}
