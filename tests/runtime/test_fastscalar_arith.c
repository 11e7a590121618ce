/*
 * test_fastscalar_arith.c - the optimized tensor-scalar arithmetic kernels
 * (add_scalar, sub_scalar, mul_scalar, div_scalar, rsub_scalar,
 * rdiv_scalar) of every kernel set this CPU supports, against the
 * reference, bit for bit, for f32, bf16 and f16 storage: one IEEE
 * operation per element in the reference's operand order and one
 * rounding, so any difference is a bug.  Elements mix ordinary values
 * with NaN (payloads, signalling ones), +-inf, +-0 and subnormals;
 * scalars are ordinary, 0 and -0 (0 / 0, x / -0), +-inf (inf - inf),
 * tiny and huge, and NaN (which the sets hand to the reference); lengths
 * span the vector tails and the pool's chunking (1 and 2 threads give the
 * same bits).  And every optimized set overrides each of these kernels.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa_under_test.h"

#include "../../runtime/src/amprt_internal.h"

#define BITEXACT_TEST_SEED 0x51a7c0ffee123457ull
#include "bitexact_test_util.h"

static const amp_kernel_table *ref(void) { return &amp_ref_kernel_table; }

static void expect_same(const void *got, const void *want, amp_dtype t, size_t n, const char *isa, const char *op,
                        double s)
{
    const size_t es = amp_dtype_size(t);
    if (memcmp(got, want, n * es) == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0)
            fail_msg("%s %s_%s (n = %zu, s = %.9g) differs at [%zu]: %.9g, reference %.9g", isa, op,
                     amp_dtype_name(t), n, s, i, (double)amp_load_as_f32(t, got, i),
                     (double)amp_load_as_f32(t, want, i));
}

/* The scalars: each a number of the compute type (f32), as the emitted
 * code passes them. */
static const double scalars[] = { 0.125, -3.0, 0.0, -0.0, INFINITY, -INFINITY, 0x1.5555555555555p+1 /* 8/3 */,
                                  (double)1e-30f, (double)-3e38f, NAN };

#define EACH_OP(X) X(add_scalar) X(sub_scalar) X(mul_scalar) X(div_scalar) X(rsub_scalar) X(rdiv_scalar)

static void run_sizes(const amp_kernel_table *k, amp_dtype t)
{
    static const size_t sizes[] = { 0, 1, 7, 15, 16, 17, 33, 1000, 300001 };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const size_t n = sizes[si], bytes = n * amp_dtype_size(t) + 1;
        void *a = special_buf(t, n, 1), *y = malloc(bytes), *w = malloc(bytes);
        assert_true(y && w);
        for (size_t ci = 0; ci < sizeof scalars / sizeof scalars[0]; ci++) {
            const double s = (double)(float)scalars[ci];
            /* 2 threads on the large array only (the chunking); then 1 */
            for (int th = n > 100000 ? 2 : 1; th >= 1; th--) {
                amp_set_threads(th);
#define CHECK(op)                                                                                 \
    memset(y, 0x5a, bytes);                                                                       \
    KCALL(k, t, op, n, a, s, y);                                                                  \
    KCALL(ref(), t, op, n, a, s, w);                                                              \
    expect_same(y, w, t, n, k->isa, #op, s);                                                      \
    /* in place, as the emitted code may call it */                                               \
    memcpy(y, a, n * amp_dtype_size(t));                                                          \
    KCALL(k, t, op, n, y, s, y);                                                                  \
    expect_same(y, w, t, n, k->isa, #op " in place", s);
                EACH_OP(CHECK)
#undef CHECK
            }
        }
        amp_set_threads(0);
        free(a);
        free(y);
        free(w);
    }
}

/* Every optimized set overrides every one of these kernels. */
static void expect_overrides(const amp_kernel_table *k)
{
#define OVERRIDES(op)                                                                             \
    if (k->op##_f32 == ref()->op##_f32 || k->op##_bf16 == ref()->op##_bf16 || k->op##_f16 == ref()->op##_f16) \
        fail_msg("%s does not override %s", k->isa, #op);
    EACH_OP(OVERRIDES)
#undef OVERRIDES
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    if (k == NULL)
        skip();
    expect_overrides(k);
    run_sizes(k, AMP_F32);
    run_sizes(k, AMP_BF16);
    run_sizes(k, AMP_F16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        OPTIMIZED_ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
