/*
 * test_expf.c - the runtime's own exp (runtime/src/amp_expf.h), which the
 * classifier losses' reference and AVX-512 kernels share bit for bit
 * (test_fastloss checks that agreement through the kernels), and its erf
 * and tanh (runtime/src/amp_mathf.h), which gelu's reference and vector
 * kernels share (test_fasteltwise).  Here: their accuracy against long
 * double expl, erfl and tanhl, rounded once to f32 (erf and tanh: one ulp
 * at most, the correctly rounded value but for a few inputs, odd, the
 * special values).  exp's:
 *   - never more than one ulp away, anywhere in the float range;
 *   - the correctly rounded value except in a tiny fraction of inputs;
 *   - the special values exactly (NaN, infinities, zeros, the overflow
 *     and underflow edges).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../runtime/src/amp_expf.h"
#include "../../runtime/src/amp_mathf.h"

static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* Distance in ulps between two finite or infinite floats of one sign
 * (exp is positive), by their ordered bit patterns. */
static uint32_t ulp_distance(float a, float b)
{
    uint32_t x = to_bits(a), y = to_bits(b);
    return x > y ? x - y : y - x;
}

/* Every input whose bits are a multiple of `step` plus `phase` between
 * lo and hi (bit patterns of one sign): the worst ulp distance and how
 * many differ from the once-rounded long double value. */
static void sweep(uint32_t lo, uint32_t hi, uint32_t step, uint32_t *worst, uint64_t *differ, uint64_t *count)
{
    for (uint64_t b = lo; b <= hi; b += step) {
        float x = from_bits((uint32_t)b);
        float want = (float)expl((long double)x);
        float got = amp_expf(x);
        uint32_t d = ulp_distance(got, want);
        if (d > *worst) {
            *worst = d;
            if (d > 1)
                print_error("x = %a: amp_expf %a, expl %a\n", (double)x, (double)got, (double)want);
        }
        *differ += d != 0;
        (*count)++;
    }
}

static void within_one_ulp_over_the_float_range(void **state)
{
    (void)state;
    uint32_t worst = 0;
    uint64_t differ = 0, count = 0;
    /* positive x up to 89 (0x42b20000), negative down to -104 (0xc2d00000):
     * every 61st pattern (a prime stride walks every mantissa residue),
     * then every pattern of [-1, 1] around 0 at a finer stride */
    sweep(0x00000000u, 0x42b20000u, 61, &worst, &differ, &count);
    sweep(0x80000000u, 0xc2d00000u, 61, &worst, &differ, &count);
    sweep(0x3c000000u, 0x3f800000u, 7, &worst, &differ, &count);
    sweep(0xbc000000u, 0xbf800000u, 7, &worst, &differ, &count);
    printf("amp_expf: %llu inputs, %llu not the correctly rounded value, worst %u ulp\n", (unsigned long long)count,
           (unsigned long long)differ, worst);
    assert_true(count > 50000000u);
    assert_true(worst <= 1);
    /* the double evaluation leaves ~1e-14 relative error: a wrong rounding
     * needs e^x within that of a halfway point, about 1 input in 10^6 */
    assert_true(differ * 100000u < count);
}

static void special_values(void **state)
{
    (void)state;
    assert_true(isnan(amp_expf(NAN)));
    assert_true(amp_expf(INFINITY) == INFINITY);
    assert_true(amp_expf(-INFINITY) == 0.0f && !signbit(amp_expf(-INFINITY)));
    assert_true(amp_expf(0.0f) == 1.0f);
    assert_true(amp_expf(-0.0f) == 1.0f);
    assert_true(amp_expf(1.0f) == (float)expl(1.0L));
    /* the largest x with a finite expf, and the next float up */
    assert_true(amp_expf(0x1.62e42ep+6f) == (float)expl(0x1.62e42ep+6L) && isfinite(amp_expf(0x1.62e42ep+6f)));
    assert_true(amp_expf(0x1.62e430p+6f) == INFINITY);
    assert_true(amp_expf(1000.0f) == INFINITY);
    /* subnormal results, and the edge where they round to zero */
    assert_true(amp_expf(-100.0f) == (float)expl(-100.0L) && amp_expf(-100.0f) > 0.0f);
    assert_true(amp_expf(-103.0f) == (float)expl(-103.0L));
    assert_true(amp_expf(-104.0f) == 0.0f);
    assert_true(amp_expf(-1000.0f) == 0.0f);
}

/* erf or tanh (which: 0, 1) of every step-th positive pattern up to hi,
 * against the once-rounded long double function; each also at -x (odd) */
static void sweep_odd(int which, uint32_t hi, uint32_t step, uint32_t *worst, uint64_t *differ, uint64_t *count)
{
    for (uint64_t b = 0; b <= hi; b += step) {
        const float x = from_bits((uint32_t)b);
        const float want = which ? (float)tanhl((long double)x) : (float)erfl((long double)x);
        const float got = which ? amp_tanhf(x) : amp_erff(x);
        const uint32_t d = ulp_distance(got, want);
        assert_true(to_bits(which ? amp_tanhf(-x) : amp_erff(-x)) == (to_bits(got) ^ 0x80000000u));
        if (d > *worst) {
            *worst = d;
            if (d > 1)
                print_error("x = %a: %s %a, long double %a\n", (double)x, which ? "amp_tanhf" : "amp_erff", (double)got,
                            (double)want);
        }
        *differ += d != 0;
        (*count)++;
    }
}

static void erf_tanh_within_one_ulp(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        uint32_t worst = 0;
        uint64_t differ = 0, count = 0;
        /* erf: up to 4.5 (0x40900000), where it is 1 in f32 long since;
         * tanh: up to 10 (0x41200000); then [0.5, 4] finer */
        sweep_odd(which, which ? 0x41200000u : 0x40900000u, 251, &worst, &differ, &count);
        for (uint64_t b = 0x3f000000u; b <= 0x40800000u; b += 29) {
            const float x = from_bits((uint32_t)b);
            const float want = which ? (float)tanhl((long double)x) : (float)erfl((long double)x);
            const uint32_t d = ulp_distance(which ? amp_tanhf(x) : amp_erff(x), want);
            worst = d > worst ? d : worst;
            differ += d != 0;
            count++;
        }
        printf("%s: %llu inputs, %llu not the correctly rounded value, worst %u ulp\n", which ? "amp_tanhf" : "amp_erff",
               (unsigned long long)count, (unsigned long long)differ, worst);
        assert_true(worst <= 1);
        assert_true(differ * 100000u < count);
    }
    assert_true(isnan(amp_erff(NAN)) && isnan(amp_tanhf(NAN)));
    assert_true(amp_erff(INFINITY) == 1.0f && amp_erff(-INFINITY) == -1.0f);
    assert_true(amp_tanhf(INFINITY) == 1.0f && amp_tanhf(-INFINITY) == -1.0f);
    assert_true(to_bits(amp_erff(-0.0f)) == 0x80000000u && to_bits(amp_tanhf(-0.0f)) == 0x80000000u);
    {
        const float tiny = 1e-40f; /* subnormal: erf is 2/sqrt(pi) x, tanh x */
        assert_true(amp_erff(tiny) == (float)erfl((long double)tiny) && amp_tanhf(tiny) == tiny);
    }
    assert_true(amp_erff(3.9f) < 1.0f && amp_erff(4.0f) == 1.0f && amp_tanhf(9.0f) < 1.0f && amp_tanhf(9.1f) == 1.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(special_values),
        cmocka_unit_test(within_one_ulp_over_the_float_range),
        cmocka_unit_test(erf_tanh_within_one_ulp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
