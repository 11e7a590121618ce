/*
 * test_literal.c - decimal literals rounded once, to nearest even
 * (src/literal.c).
 *
 * Expected values are written as C hex floats, which are exact.  The last
 * tests cross-check thousands of random decimal strings against glibc's
 * strtof/strtod (correctly rounded), and bf16/f16 against a reference that
 * rounds strtod's double, skipping the strings where that reference could
 * itself double-round.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ampc.h"

static const char *const class_names[] = {"EXACT", "INEXACT", "SUBNORMAL", "UNDERFLOW", "OVERFLOW"};

/* Round `text` into `t` and check both the class and the value. */
static void expect(const char *text, DType t, LiteralRounding want_class, double want)
{
    double got = -12345.0;
    LiteralRounding r = literal_to_dtype(text, t, &got);
    if (r != want_class || !(got == want || (isnan(got) && isnan(want)))) {
        print_error("literal_to_dtype(\"%.60s\", %s): got %s %a, want %s %a\n", text, dtype_name(t), class_names[r],
                    got, class_names[want_class], want);
        fail();
    }
}

/* ---- f32 -------------------------------------------------------------- */

static void f32_one_is_exact(void **state)
{
    (void)state;
    expect("1", DT_F32, LIT_EXACT, 1.0);
    expect("1.0", DT_F32, LIT_EXACT, 1.0);
    expect("0.5", DT_F32, LIT_EXACT, 0.5);
    expect("1e0", DT_F32, LIT_EXACT, 1.0);
    expect("10E-1", DT_F32, LIT_EXACT, 1.0);
    expect("007", DT_F32, LIT_EXACT, 7.0);
}

static void zero_is_exact_in_every_dtype(void **state)
{
    (void)state;
    for (DType t = DT_BF16; t <= DT_F64; t++) {
        expect("0", t, LIT_EXACT, 0.0);
        expect("0.000", t, LIT_EXACT, 0.0);
        expect("0e999999999", t, LIT_EXACT, 0.0); /* zero, however large its exponent */
    }
}

static void f32_tenth_is_rounded_once(void **state)
{
    (void)state;
    expect("0.1", DT_F32, LIT_INEXACT, 0x1.99999ap-4);
    expect("1e-1", DT_F32, LIT_INEXACT, 0x1.99999ap-4);
}

static void f32_halfway_ties_to_even(void **state)
{
    (void)state;
    expect("16777216", DT_F32, LIT_EXACT, 16777216.0);   /* 2^24: exactly representable */
    expect("16777217", DT_F32, LIT_INEXACT, 16777216.0); /* halfway: down to the even 2^24 */
    expect("16777218", DT_F32, LIT_EXACT, 16777218.0);
    expect("16777219", DT_F32, LIT_INEXACT, 16777220.0); /* halfway: up to the even one */
    expect("16777221", DT_F32, LIT_INEXACT, 16777220.0); /* halfway: down again */
}

static void f32_just_off_halfway_is_not_a_tie(void **state)
{
    /* text -> double -> float would see exactly 16777217 and tie to
     * 16777216; rounding once sees the tail. */
    (void)state;
    expect("16777217.000000000000000000001", DT_F32, LIT_INEXACT, 16777218.0); /* one hair above the tie */
    expect("16777216.999999999999999999999", DT_F32, LIT_INEXACT, 16777216.0); /* one hair below */
}

static void f32_largest_finite_and_overflow(void **state)
{
    (void)state;
    expect("340282346638528859811704183484516925440", DT_F32, LIT_EXACT, FLT_MAX); /* exactly FLT_MAX */
    expect("3.4028235e38", DT_F32, LIT_INEXACT, FLT_MAX);
    expect("340282356779733661637539395458142568447", DT_F32, LIT_INEXACT, FLT_MAX); /* one below the tie */
    expect("340282356779733661637539395458142568448", DT_F32, LIT_OVERFLOW, INFINITY); /* the tie: to even, 2^128 */
    expect("3.5e38", DT_F32, LIT_OVERFLOW, INFINITY);
}

static void f32_subnormals(void **state)
{
    (void)state;
    expect("1.1754943508222875e-38", DT_F32, LIT_INEXACT, 0x1p-126); /* rounds to the smallest normal */
    expect("1e-45", DT_F32, LIT_SUBNORMAL, 0x1p-149);
    expect("1.401298464324817e-45", DT_F32, LIT_SUBNORMAL, 0x1p-149);
    expect("7.1e-46", DT_F32, LIT_SUBNORMAL, 0x1p-149); /* above half the smallest */
    expect("7e-46", DT_F32, LIT_UNDERFLOW, 0.0);        /* below half the smallest */
    /* 2^-150 exactly: the tie goes to the even neighbour, zero */
    expect("7.00649232162408535461864791644958065640130970938257885878534141944895541342930300743319094181060791015625e-46",
           DT_F32, LIT_UNDERFLOW, 0.0);
}

/* ---- f64 -------------------------------------------------------------- */

static void f64_halfway_ties_to_even(void **state)
{
    (void)state;
    expect("9007199254740992", DT_F64, LIT_EXACT, 0x1p53);
    expect("9007199254740993", DT_F64, LIT_INEXACT, 0x1p53);              /* tie: down to even */
    expect("9007199254740995", DT_F64, LIT_INEXACT, 9007199254740996.0);  /* tie: up to even */
    expect("0.1", DT_F64, LIT_INEXACT, 0.1);
}

static void f64_limits(void **state)
{
    (void)state;
    expect("1.7976931348623157e308", DT_F64, LIT_INEXACT, DBL_MAX);
    expect("1.7976931348623159e308", DT_F64, LIT_OVERFLOW, INFINITY); /* past the tie */
    expect("4.9406564584124654e-324", DT_F64, LIT_SUBNORMAL, 0x1p-1074);
    expect("2.4703282292062328e-324", DT_F64, LIT_SUBNORMAL, 0x1p-1074); /* just above half */
    expect("2.4703282292062327e-324", DT_F64, LIT_UNDERFLOW, 0.0);       /* just below half */
    expect("2.2250738585072014e-308", DT_F64, LIT_INEXACT, DBL_MIN);
}

/* ---- bf16 ------------------------------------------------------------- */

static void bf16_rounding(void **state)
{
    (void)state;
    expect("1", DT_BF16, LIT_EXACT, 1.0);
    expect("0.1", DT_BF16, LIT_INEXACT, 0x1.9ap-4);
    expect("1.0078125", DT_BF16, LIT_EXACT, 1.0078125);     /* 1 + 2^-7, one ulp */
    expect("1.00390625", DT_BF16, LIT_INEXACT, 1.0);        /* 1 + 2^-8: tie, down to even */
    expect("1.01171875", DT_BF16, LIT_INEXACT, 1.015625);   /* 1 + 3*2^-8: tie, up to even */
    expect("1.00390625000001", DT_BF16, LIT_INEXACT, 1.0078125); /* just past the tie */
    expect("257", DT_BF16, LIT_INEXACT, 256.0);             /* 8 bits: integers stop at 256 */
    expect("4097", DT_BF16, LIT_INEXACT, 4096.0);           /* 4096 + 1 = 4096 in bf16 */
}

static void bf16_range(void **state)
{
    (void)state;
    expect("338953138925153547590470800371487866880", DT_BF16, LIT_EXACT, 0x1.fep127); /* exactly the bf16 max */
    expect("339617752923046005526922703901628039167", DT_BF16, LIT_INEXACT, 0x1.fep127); /* one below the tie */
    expect("339617752923046005526922703901628039168", DT_BF16, LIT_OVERFLOW, INFINITY);  /* the tie: to even, 2^128 */
    expect("1e-38", DT_BF16, LIT_SUBNORMAL, 0x1.b4p-127);
    expect("9.183549615799121e-41", DT_BF16, LIT_SUBNORMAL, 0x1p-133); /* smallest bf16 subnormal */
    expect("4e-41", DT_BF16, LIT_UNDERFLOW, 0.0);
}

/* ---- f16 -------------------------------------------------------------- */

static void f16_max_finite_and_overflow(void **state)
{
    (void)state;
    expect("65504", DT_F16, LIT_EXACT, 65504.0);            /* exactly the f16 max */
    expect("65519", DT_F16, LIT_INEXACT, 65504.0);          /* one below the tie */
    expect("65519.99999999", DT_F16, LIT_INEXACT, 65504.0); /* a hair below the tie */
    expect("65520", DT_F16, LIT_OVERFLOW, INFINITY);        /* the tie: to even, which is 2^16 = inf */
    expect("70000", DT_F16, LIT_OVERFLOW, INFINITY);
}

static void f16_subnormals(void **state)
{
    (void)state;
    expect("6.103515625e-5", DT_F16, LIT_EXACT, 0x1p-14);                      /* smallest normal */
    expect("6.0975551605224609375e-5", DT_F16, LIT_SUBNORMAL, 0x1.ff8p-15);   /* largest subnormal */
    expect("6.1032e-5", DT_F16, LIT_INEXACT, 0x1p-14);                         /* rounds up into the normals */
    expect("5.9604644775390625e-8", DT_F16, LIT_SUBNORMAL, 0x1p-24);           /* smallest subnormal, exact */
    expect("2.98023223876953125e-8", DT_F16, LIT_UNDERFLOW, 0.0);              /* half of it: tie to even, zero */
    expect("2.98023223876953125000001e-8", DT_F16, LIT_SUBNORMAL, 0x1p-24);    /* a hair above half */
    expect("8.94069671630859375e-8", DT_F16, LIT_SUBNORMAL, 0x1p-23);          /* 1.5 quanta: tie, up to even 2 */
}

static void f16_tenth(void **state)
{
    (void)state;
    expect("0.1", DT_F16, LIT_INEXACT, 0x1.998p-4);
    expect("2049", DT_F16, LIT_INEXACT, 2048.0); /* tie at 11 bits: down to even */
    expect("2051", DT_F16, LIT_INEXACT, 2052.0); /* tie: up to even */
}

/* ---- huge exponents and many digits -------------------------------------- */

static void huge_exponents_are_decided_without_big_numbers(void **state)
{
    /* 10^999999999 would be a 415 MB integer; these return at once */
    (void)state;
    for (DType t = DT_BF16; t <= DT_F64; t++) {
        expect("1e999999999", t, LIT_OVERFLOW, INFINITY);
        expect("1e-999999999", t, LIT_UNDERFLOW, 0.0);
        expect("1e99999999999999999999999999", t, LIT_OVERFLOW, INFINITY);   /* beyond long */
        expect("1e-99999999999999999999999999", t, LIT_UNDERFLOW, 0.0);
        expect("123456.789e999999999", t, LIT_OVERFLOW, INFINITY);
    }
}

static void both_sides_of_the_order_shortcut_agree(void **state)
{
    /* literal.c answers orders beyond +-400 without GMP; 400 itself is computed */
    (void)state;
    expect("1e400", DT_F64, LIT_OVERFLOW, INFINITY);  /* exactly the last computed order */
    expect("1e401", DT_F64, LIT_OVERFLOW, INFINITY);  /* one past */
    expect("1e-400", DT_F64, LIT_UNDERFLOW, 0.0);
    expect("1e-401", DT_F64, LIT_UNDERFLOW, 0.0);
    expect("9.99e-401", DT_F64, LIT_UNDERFLOW, 0.0);
}

static void digits_and_exponent_cancel(void **state)
{
    (void)state;
    /* 1 followed by 500 zeros, times 10^-500, is exactly 1 */
    char buf[600];
    buf[0] = '1';
    memset(buf + 1, '0', 500);
    strcpy(buf + 501, "e-500");
    expect(buf, DT_F32, LIT_EXACT, 1.0);
    /* 0.000...0001 (500 zeros, so 10^-501) times 10^502 is 10 */
    strcpy(buf, "0.");
    memset(buf + 2, '0', 500);
    strcpy(buf + 502, "1e502");
    expect(buf, DT_F32, LIT_EXACT, 10.0);
}

static void many_digits(void **state)
{
    (void)state;
    enum { N = 20000 };
    char *s = malloc(N + 3);
    assert_non_null(s);
    /* 0.333...3 with 20000 threes */
    strcpy(s, "0.");
    memset(s + 2, '3', N);
    s[N + 2] = '\0';
    expect(s, DT_F32, LIT_INEXACT, 0x1.555556p-2);
    expect(s, DT_F64, LIT_INEXACT, 0x1.5555555555555p-2);
    /* 0.5 followed by 20000 zeros: exact */
    memset(s + 2, '0', N);
    s[2] = '5';
    expect(s, DT_F16, LIT_EXACT, 0.5);
    /* the f32 tie 16777217 with a 1 in the 20000th decimal: not a tie */
    memcpy(s, "16777217.", 9);
    memset(s + 9, '0', N - 8);
    s[N] = '1';
    s[N + 1] = '\0';
    expect(s, DT_F32, LIT_INEXACT, 16777218.0);
    free(s);
}

static void literal_round_takes_any_format(void **state)
{
    /* a 3-bit format with normal exponents -2..2: 1, 1.25, 1.5, 1.75, ..., max 7 */
    (void)state;
    double v;
    assert_int_equal(literal_round("7", 3, -2, 2, &v), LIT_EXACT);
    assert_true(v == 7.0);
    assert_int_equal(literal_round("7.4", 3, -2, 2, &v), LIT_INEXACT);
    assert_true(v == 7.0);
    assert_int_equal(literal_round("7.5", 3, -2, 2, &v), LIT_OVERFLOW); /* the tie above the max goes to 8 */
    assert_true(v == INFINITY);
    assert_int_equal(literal_round("0.0625", 3, -2, 2, &v), LIT_SUBNORMAL); /* the smallest subnormal, 2^-4 */
    assert_true(v == 0.0625);
    assert_int_equal(literal_round("0.03125", 3, -2, 2, &v), LIT_UNDERFLOW); /* half of it: tie to zero */
    assert_true(v == 0.0);
}

/* ---- random cross-checks ------------------------------------------------ */

/* The unit tests link without -lm: the few libm helpers needed here are
 * written out for positive finite values. */
static float next_up_f32(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u++;
    memcpy(&x, &u, sizeof u);
    return x;
}

static double next_up_f64(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    u++;
    memcpy(&x, &u, sizeof u);
    return x;
}

/* xorshift64*: deterministic, so a failure is reproducible */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* A decimal literal as the lexer passes it on: digits, an optional
 * fraction, an optional exponent in [emin10, emax10]. */
static void random_decimal(char *buf, int emin10, int emax10)
{
    int ndigits = 1 + (int)(rng() % 25);
    int point = (int)(rng() % (uint64_t)(ndigits + 1));
    char *p = buf;
    for (int i = 0; i < ndigits; i++) {
        if (i == point && i > 0)
            *p++ = '.';
        *p++ = (char)('0' + rng() % 10);
    }
    if (rng() % 4)
        p += sprintf(p, "%c%d", rng() % 2 ? 'e' : 'E', emin10 + (int)(rng() % (uint64_t)(emax10 - emin10 + 1)));
    *p = '\0';
}

static LiteralRounding classify(double v, double min_normal, bool nonzero_text)
{
    if (isinf(v))
        return LIT_OVERFLOW;
    if (v == 0.0)
        return nonzero_text ? LIT_UNDERFLOW : LIT_EXACT;
    if (v < min_normal)
        return LIT_SUBNORMAL;
    return LIT_INEXACT; /* or EXACT: checked separately */
}

static bool text_is_nonzero(const char *s)
{
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '1' && *s <= '9')
            return true;
    return false;
}

/* The class must agree with the value; EXACT only when the longer
 * strtold reading agrees too (a one-way check, but a sound one). */
static void check_class(const char *text, DType t, LiteralRounding r, double got, double min_normal)
{
    LiteralRounding want = classify(got, min_normal, text_is_nonzero(text));
    bool ok = r == want || (want == LIT_INEXACT && r == LIT_EXACT);
    if (r == LIT_EXACT && strtold(text, NULL) != (long double)got)
        ok = false;
    if (!ok) {
        print_error("literal_to_dtype(\"%s\", %s) = %a classed %s\n", text, dtype_name(t), got, class_names[r]);
        fail();
    }
}

static void f32_agrees_with_strtof(void **state)
{
    (void)state;
    char buf[64];
    for (int i = 0; i < 5000; i++) {
        random_decimal(buf, -50, 40);
        double got;
        LiteralRounding r = literal_to_dtype(buf, DT_F32, &got);
        double want = strtof(buf, NULL);
        if (got != want) {
            print_error("\"%s\": ampc %a, strtof %a\n", buf, got, want);
            fail();
        }
        check_class(buf, DT_F32, r, got, FLT_MIN);
    }
}

static void f64_agrees_with_strtod(void **state)
{
    (void)state;
    char buf[64];
    for (int i = 0; i < 5000; i++) {
        random_decimal(buf, -330, 310);
        double got;
        LiteralRounding r = literal_to_dtype(buf, DT_F64, &got);
        double want = strtod(buf, NULL);
        if (got != want) {
            print_error("\"%s\": ampc %a, strtod %a\n", buf, got, want);
            fail();
        }
        check_class(buf, DT_F64, r, got, DBL_MIN);
    }
}

/* Exact f32 midpoints (25 bits, so exact in a double and printable
 * exactly): strtof and ampc must both tie to even. */
static void f32_midpoints_agree_with_strtof(void **state)
{
    (void)state;
    char buf[256];
    for (int i = 0; i < 3000; i++) {
        float lo = (float)ldexp((double)(0x800000 | (rng() & 0x7fffff)), (int)(rng() % 60) - 53); /* [2^-30, 2^30) */
        double mid = ((double)lo + (double)next_up_f32(lo)) / 2;
        snprintf(buf, sizeof buf, "%.120e", mid);
        double got;
        literal_to_dtype(buf, DT_F32, &got);
        double want = strtof(buf, NULL);
        if (got != want) {
            print_error("tie \"%s\": ampc %a, strtof %a\n", buf, got, want);
            fail();
        }
        /* the tie went to the neighbour with an even significand */
        assert_int_equal(((uint32_t)ldexp(frexp(got, &(int){0}), 24)) & 1u, 0u);
    }
}

#if LDBL_MANT_DIG >= 64
/* f64 midpoints need 54 bits: x87 long double holds them exactly. */
static void f64_midpoints_agree_with_strtod(void **state)
{
    (void)state;
    char buf[256];
    for (int i = 0; i < 3000; i++) {
        double lo = ldexp((double)((1ull << 52) | (rng() & ((1ull << 52) - 1))), (int)(rng() % 60) - 82);
        long double mid = ((long double)lo + (long double)next_up_f64(lo)) / 2;
        snprintf(buf, sizeof buf, "%.120Le", mid);
        double got;
        literal_to_dtype(buf, DT_F64, &got);
        double want = strtod(buf, NULL);
        if (got != want) {
            print_error("tie \"%s\": ampc %a, strtod %a\n", buf, got, want);
            fail();
        }
    }
}
#endif

/* Round a double to `prec` bits with normal exponents emin..emax, ties to
 * even.  *tie says the double sat exactly on a midpoint, where rounding the
 * double (itself already rounded) may differ from rounding the decimal. */
static double ref_round(double x, int prec, int emin, int emax, bool *tie)
{
    *tie = false;
    if (x == 0.0)
        return 0.0;
    int e;
    frexp(x, &e); /* x in [2^(e-1), 2^e) */
    int q = e - 1 - (prec - 1);
    if (q < emin - (prec - 1))
        q = emin - (prec - 1);
    double scaled = ldexp(x, -q); /* exact, and below 2^(prec+1) */
    double whole = (double)(int64_t)scaled, frac = scaled - whole;
    *tie = frac == 0.5;
    if (frac > 0.5 || (frac == 0.5 && (int64_t)whole % 2))
        whole += 1;
    double r = ldexp(whole, q);
    return r >= ldexp(1.0, emax + 1) ? INFINITY : r;
}

static void half_types_agree_with_reference(DType t, int prec, int emin, int emax, int emin10, int emax10)
{
    char buf[64];
    int checked = 0;
    for (int i = 0; i < 5000; i++) {
        random_decimal(buf, emin10, emax10);
        double d = strtod(buf, NULL);
        bool tie;
        double want = ref_round(d, prec, emin, emax, &tie);
        if (tie)
            continue;
        double got;
        LiteralRounding r = literal_to_dtype(buf, t, &got);
        if (got != want) {
            print_error("\"%s\" in %s: ampc %a, reference %a\n", buf, dtype_name(t), got, want);
            fail();
        }
        check_class(buf, t, r, got, ldexp(1.0, emin));
        checked++;
    }
    assert_true(checked > 4500);
}

static void bf16_agrees_with_reference(void **state)
{
    (void)state;
    half_types_agree_with_reference(DT_BF16, 8, -126, 127, -45, 40);
}

static void f16_agrees_with_reference(void **state)
{
    (void)state;
    half_types_agree_with_reference(DT_F16, 11, -14, 15, -10, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_one_is_exact),
        cmocka_unit_test(zero_is_exact_in_every_dtype),
        cmocka_unit_test(f32_tenth_is_rounded_once),
        cmocka_unit_test(f32_halfway_ties_to_even),
        cmocka_unit_test(f32_just_off_halfway_is_not_a_tie),
        cmocka_unit_test(f32_largest_finite_and_overflow),
        cmocka_unit_test(f32_subnormals),
        cmocka_unit_test(f64_halfway_ties_to_even),
        cmocka_unit_test(f64_limits),
        cmocka_unit_test(bf16_rounding),
        cmocka_unit_test(bf16_range),
        cmocka_unit_test(f16_max_finite_and_overflow),
        cmocka_unit_test(f16_subnormals),
        cmocka_unit_test(f16_tenth),
        cmocka_unit_test(huge_exponents_are_decided_without_big_numbers),
        cmocka_unit_test(both_sides_of_the_order_shortcut_agree),
        cmocka_unit_test(digits_and_exponent_cancel),
        cmocka_unit_test(many_digits),
        cmocka_unit_test(literal_round_takes_any_format),
        cmocka_unit_test(f32_agrees_with_strtof),
        cmocka_unit_test(f64_agrees_with_strtod),
        cmocka_unit_test(f32_midpoints_agree_with_strtof),
#if LDBL_MANT_DIG >= 64
        cmocka_unit_test(f64_midpoints_agree_with_strtod),
#endif
        cmocka_unit_test(bf16_agrees_with_reference),
        cmocka_unit_test(f16_agrees_with_reference),
    };
    return cmocka_run_group_tests_name("literal", tests, NULL, NULL);
}
