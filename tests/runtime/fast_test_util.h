/* fast_test_util.h: what the tests of the optimized kernel sets
 * (test_fastgemm.c, test_fastconv.c, ...) share: random operands in [-1, 1]
 * rounded into the dtype, element reads, each dtype's unit roundoff and
 * underflow floor, and a call through a kernel table by dtype.  The
 * including file defines FAST_TEST_SEED, its generator's start. */
#ifndef AMPRT_FAST_TEST_UTIL_H
#define AMPRT_FAST_TEST_UTIL_H

static uint64_t rng = FAST_TEST_SEED;

static float uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static void *random_buf(amp_dtype t, size_t n)
{
    void *p = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        amp_store_from_f32(t, p, i, uniform());
    return p;
}

/* (unused attributes: a test that compares bits needs none of these three) */
static __attribute__((unused)) double ld(amp_dtype t, const void *p, int64_t i)
{
    return amp_load_as_f32(t, p, (size_t)i);
}

static __attribute__((unused)) double unit_roundoff(amp_dtype t)
{
    return t == AMP_F32 ? 0x1p-24 : t == AMP_BF16 ? 0x1p-8 : 0x1p-11;
}
static __attribute__((unused)) double underflow_floor(amp_dtype t)
{
    return t == AMP_F32 ? 0x1p-150 : t == AMP_BF16 ? 0x1p-134 : 0x1p-25;
}

#include "kernel_call.h"

#endif
