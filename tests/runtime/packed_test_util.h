/* packed_test_util.h: what the tests of the kernels on weights packed
 * once (test_conv_ex.c, test_linear_ex.c) share, beside fast_test_util.h:
 * calls through a kernel table by dtype (kernel_call.h); the public functions as a
 * table; a 64-byte aligned block for packed weights; f32 weights rounded
 * to a dtype by the table's own cast, which is what the packing promises
 * to match; and the test functions and main of a test whose checks are
 * one run per table. */
#ifndef AMPRT_PACKED_TEST_UTIL_H
#define AMPRT_PACKED_TEST_UTIL_H

#include "kernel_call.h"

/* The public functions as a table (the set AMPRT_ISA chose). */
static const amp_kernel_table public_table = {
    .isa = "public",
#define PUBLIC_ENTRY(kernel, T, ret, params, args) .AMP_KNAME_##T(kernel) = AMP_KNAME_##T(amp_##kernel),
    AMP_FOR_EACH_KERNEL(PUBLIC_ENTRY)
#undef PUBLIC_ENTRY
};

static void *alloc_packed(size_t bytes)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, bytes ? bytes : 64), 0);
    return p;
}

/* w (f32) rounded to t by table k's cast, as the packing promises. */
static void *cast_from_f32(const amp_kernel_table *k, amp_dtype t, const float *w32, size_t n)
{
    void *w = malloc(n * amp_dtype_size(t) + 1);
    assert_non_null(w);
    switch (t) {
    case AMP_F64: k->cast_f32_f64(n, w32, w); break;
    case AMP_F32: memcpy(w, w32, n * sizeof(float)); break;
    case AMP_BF16: k->cast_f32_bf16(n, w32, w); break;
    default: k->cast_f32_f16(n, w32, w); break;
    }
    return w;
}

/* A test whose checks are run_table(k) for a kernel table k: test_isa
 * (each set's table this run checks, isa_under_test.h), test_public (the
 * public functions) and main. */
#define PACKED_TEST_MAIN(run_table)                                                               \
    static void test_isa(void **state)                                                            \
    {                                                                                             \
        const char *isa = *state;                                                                 \
        const amp_kernel_table *k = table_under_test(isa);                                        \
        if (k == NULL)                                                                            \
            skip();                                                                               \
        assert_string_equal(k->isa, isa);                                                         \
        run_table(k);                                                                             \
    }                                                                                             \
    static void test_public(void **state)                                                         \
    {                                                                                             \
        (void)state;                                                                              \
        run_table(&public_table);                                                                 \
    }                                                                                             \
    int main(void)                                                                                \
    {                                                                                             \
        const struct CMUnitTest tests[] = {                                                       \
            ISA_UNIT_TESTS(test_isa),                                                             \
            cmocka_unit_test(test_public),                                                        \
        };                                                                                        \
        return cmocka_run_group_tests(tests, NULL, NULL);                                         \
    }

#endif
