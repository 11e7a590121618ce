/*
 * test_half.c - the runtime's conversions: the scalar bf16/f16 conversions
 * in amprt.h, the cast kernels, amp_load_as_f32/amp_store_from_f32, and the
 * dtype facts.
 *
 * The oracle is an independent reference written with <math.h> instead of
 * bit manipulation, described by a format's numbers alone (precision p,
 * emin, emax):
 *  - ref_decode: a bit pattern's value, ldexp from its sign, exponent and
 *    fraction fields;
 *  - ref_round: the correctly rounded value of a double: classify with
 *    isnan/isinf, find the binade with frexp (fixed at emin in the subnormal
 *    range), scale to an integer significand in double, round with nearbyint
 *    under FE_TONEAREST, and send magnitudes at or above the halfway point
 *    past the max finite value to infinity.
 * A converter's output bits are decoded with ref_decode and compared with
 * ref_round's value (signed zeros by signbit), which is a bit-exact
 * comparison since decoding is one-to-one away from NaNs. A NaN must come out
 * as a quiet NaN with the input's sign (and, where checked, its payload's top
 * bits).
 *
 * Every bf16 and f16 pattern is widened, and every one of the 2^32 float
 * patterns is narrowed to both formats, on NTHREADS threads. Within one f32
 * binade (one exponent field) frexp's exponent and the two scale factors are
 * constant, so the sweep computes them once per binade (ref_binade) and runs
 * only the rounding step (ref_round_in_binade) per value: the same reference,
 * hoisted, which keeps the 2^32 sweep within seconds.
 */
#define _POSIX_C_SOURCE 200809L

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "amprt.h"

/* ---- The reference ------------------------------------------------------ */

/* A binary format by its numbers; the derived fields are filled by
 * fmt_init. decoded[] caches ref_decode for the 16-bit formats. */
typedef struct {
    const char *name;
    int p;         /* significand bits, implicit bit included */
    int emin, emax;
    int exp_bits;  /* for field decoding and NaN checks */
    double halfway; /* (max finite + next power of two) / 2 */
    double *decoded;
} fmt;

static double bf16_decoded[1 << 16], f16_decoded[1 << 16];
static fmt BF16 = { "bf16", 8, -126, 127, 8, 0.0, bf16_decoded };
static fmt F16 = { "f16", 11, -14, 15, 5, 0.0, f16_decoded };
static fmt F32 = { "f32", 24, -126, 127, 8, 0.0, NULL };

static int frac_bits(const fmt *f)
{
    return f->p - 1;
}

/* The value of bit pattern `bits` of format f, from its three fields. */
static double ref_decode(uint32_t bits, const fmt *f)
{
    int fb = frac_bits(f);
    uint32_t frac = bits & ((1u << fb) - 1u);
    uint32_t exp_field = (bits >> fb) & ((1u << f->exp_bits) - 1u);
    double sign = (bits >> (fb + f->exp_bits)) & 1u ? -1.0 : 1.0;
    int bias = f->emax;

    if (exp_field == (1u << f->exp_bits) - 1u)
        return frac ? copysign(NAN, sign) : sign * INFINITY;
    if (exp_field == 0)
        return sign * ldexp((double)frac, f->emin - fb);
    return sign * ldexp((double)(frac + (1u << fb)), (int)exp_field - bias - fb);
}

static void fmt_init(fmt *f)
{
    /* max finite = (2 - 2^(1-p)) 2^emax; half its ulp is 2^(emax - p). */
    f->halfway = ldexp(2.0 - ldexp(1.0, 1 - f->p), f->emax) + ldexp(1.0, f->emax - f->p);
    if (f->decoded != NULL)
        for (uint32_t b = 0; b < (1u << 16); b++)
            f->decoded[b] = ref_decode(b, f);
}

/* Scale factors of one binade: |x| * scale is the integer significand, and
 * the rounded integer times unscale the rounded value. */
typedef struct {
    double scale, unscale;
} binade;

static binade ref_binade(double magnitude, const fmt *f)
{
    int e;
    binade b;
    frexp(magnitude, &e); /* magnitude in [2^(e-1), 2^e) */
    e -= 1;
    if (e < f->emin)
        e = f->emin; /* subnormal range: the quantum stops shrinking at emin */
    b.scale = ldexp(1.0, f->p - 1 - e);
    b.unscale = ldexp(1.0, e - f->p + 1);
    return b;
}

/* Round a finite positive magnitude whose binade is b. */
static inline double ref_round_in_binade(double magnitude, const fmt *f, const binade *b)
{
    if (magnitude >= f->halfway)
        return INFINITY;
    return nearbyint(magnitude * b->scale) * b->unscale;
}

static double ref_round(double x, const fmt *f)
{
    binade b;
    if (isnan(x))
        return x;
    if (isinf(x) || x == 0.0)
        return x;
    b = ref_binade(fabs(x), f);
    return copysign(ref_round_in_binade(fabs(x), f, &b), x);
}

/* ---- Comparing converter output with the reference ---------------------- */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_from(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A quiet NaN of format f (all-ones exponent, top fraction bit set). */
static int is_quiet_nan(uint32_t bits, const fmt *f)
{
    int fb = frac_bits(f);
    uint32_t exp_mask = ((1u << f->exp_bits) - 1u) << fb;
    return (bits & exp_mask) == exp_mask && (bits & (1u << (fb - 1)));
}

/* signbit's nonzero value differs between float and double: normalize. */
static int same_sign(double a, double b)
{
    return !signbit(a) == !signbit(b);
}

static int sign_of(uint32_t bits, const fmt *f)
{
    return (int)((bits >> (f->p - 1 + f->exp_bits)) & 1u);
}

/* Does 16-bit output `got` of format f match the reference value `want`?
 * Non-NaN: same value and same sign. NaN: quiet, same sign. */
static inline int matches(const fmt *f, uint16_t got, double want)
{
    double g = f->decoded[got];
    if (g == want) /* the common case first: the sweep runs this 2^34 times */
        return want != 0.0 || same_sign(g, want);
    return isnan(want) && is_quiet_nan(got, f) && sign_of(got, f) == (signbit(want) != 0);
}

/* An f32 NaN's top payload bits must survive narrowing to f, quiet bit set. */
static int keeps_payload(const fmt *f, uint16_t got, uint32_t in)
{
    int fb = frac_bits(f);
    uint32_t in_top = (in & 0x007fffffu) >> (23 - fb);
    return (got & ((1u << fb) - 1u)) == (in_top | (1u << (fb - 1)));
}

/* ---- Widening: all 2^16 patterns ---------------------------------------- */

static void check_widening(const fmt *f, float (*widen)(uint16_t))
{
    int fb = frac_bits(f);
    unsigned bad = 0;
    for (uint32_t b = 0; b < (1u << 16); b++) {
        float got = widen((uint16_t)b);
        double want = ref_decode(b, f);
        uint32_t gb = f32_bits(got);
        int ok;
        if (isnan(want))
            /* Quiet, same sign, and the whole payload kept (it fits). */
            ok = is_quiet_nan(gb, &F32) && (gb >> 31) == (uint32_t)sign_of(b, f) &&
                 ((gb & 0x007fffffu) >> (23 - fb)) == ((b & ((1u << fb) - 1u)) | (1u << (fb - 1)));
        else
            ok = (double)got == want && same_sign(got, want);
        if (!ok && bad++ < 8)
            print_error("%s 0x%04x widened to f32 0x%08x, want %a\n", f->name, (unsigned)b, (unsigned)gb,
                        want);
    }
    assert_int_equal(bad, 0);
}

static float widen_bf16(uint16_t b)
{
    amp_bf16 h;
    h.bits = b;
    return amp_bf16_to_f32(h);
}

static float widen_f16(uint16_t b)
{
    amp_f16 h;
    h.bits = b;
    return amp_f16_to_f32(h);
}

static void test_bf16_to_f32_all_patterns(void **state)
{
    (void)state;
    check_widening(&BF16, widen_bf16);
}

static void test_f16_to_f32_all_patterns(void **state)
{
    (void)state;
    check_widening(&F16, widen_f16);
}

/* ---- Narrowing: all 2^32 float patterns --------------------------------- */

#define NTHREADS 4
#define MAX_REPORTED 8

typedef struct {
    uint32_t input;
    const fmt *f;
    uint16_t got;
    double want;
} mismatch;

typedef struct {
    uint32_t first_exp_field; /* this worker does exponent fields first, first + NTHREADS, ... */
    unsigned long mismatches;
    int reported;
    mismatch report[MAX_REPORTED];
} sweep_job;

static void record(sweep_job *job, const fmt *f, uint32_t in, uint16_t got, double want)
{
    if (job->reported < MAX_REPORTED) {
        mismatch m = { in, f, got, want };
        job->report[job->reported++] = m;
    }
    job->mismatches++;
}

static inline void check_one(sweep_job *job, const fmt *f, uint32_t in, uint16_t got, double want)
{
    if (!matches(f, got, want) || (isnan(want) && !keeps_payload(f, got, in)))
        record(job, f, in, got, want);
}

/* Both signs of one magnitude, both formats, against the reference values
 * of the positive magnitude (rounding to nearest is symmetric). */
static inline void check_pair(sweep_job *job, uint32_t mag, double want_bf16, double want_f16)
{
    uint32_t neg = mag | 0x80000000u;
    float xp = f32_from(mag), xn = f32_from(neg);
    check_one(job, &BF16, mag, amp_f32_to_bf16(xp).bits, want_bf16);
    check_one(job, &BF16, neg, amp_f32_to_bf16(xn).bits, -want_bf16);
    check_one(job, &F16, mag, amp_f32_to_f16(xp).bits, want_f16);
    check_one(job, &F16, neg, amp_f32_to_f16(xn).bits, -want_f16);
}

static void *sweep(void *arg)
{
    sweep_job *job = arg;
    fesetround(FE_TONEAREST); /* nearbyint's rounding; each thread has its own mode */
    for (uint32_t e = job->first_exp_field; e < 256; e += NTHREADS) {
        uint32_t first = e << 23;
        if (e == 0 || e == 255) {
            /* Zeros, f32 subnormals, infinities and NaNs: the whole reference. */
            for (uint32_t m = 0; m < (1u << 23); m++) {
                double x = f32_from(first | m);
                check_pair(job, first | m, ref_round(x, &BF16), ref_round(x, &F16));
            }
        } else {
            binade bb = ref_binade(f32_from(first), &BF16), bh = ref_binade(f32_from(first), &F16);
            for (uint32_t m = 0; m < (1u << 23); m++) {
                double x = f32_from(first | m);
                check_pair(job, first | m, ref_round_in_binade(x, &BF16, &bb), ref_round_in_binade(x, &F16, &bh));
            }
        }
    }
    return NULL;
}

static void test_f32_to_bf16_and_f16_all_patterns(void **state)
{
    pthread_t tid[NTHREADS];
    sweep_job jobs[NTHREADS];
    unsigned long total = 0;
    struct timespec t0, t1;
    (void)state;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < NTHREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].first_exp_field = (uint32_t)i;
        assert_int_equal(pthread_create(&tid[i], NULL, sweep, &jobs[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(tid[i], NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    for (int i = 0; i < NTHREADS; i++) {
        for (int k = 0; k < jobs[i].reported; k++) {
            const mismatch *m = &jobs[i].report[k];
            print_error("f32 0x%08x (%a) -> %s 0x%04x (%a), want %a\n", (unsigned)m->input,
                        (double)f32_from(m->input), m->f->name, (unsigned)m->got, m->f->decoded[m->got],
                        m->want);
        }
        total += jobs[i].mismatches;
    }
    print_message("2^32 f32 patterns x {bf16, f16} checked in %.1f s on %d threads\n",
                  (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, NTHREADS);
    assert_int_equal(total, 0);
}

/* ---- Hand-picked boundaries (expected bits written out) ----------------- */

typedef struct {
    uint32_t in;
    uint16_t want;
    const char *why;
} boundary;

static const boundary bf16_cases[] = {
    { 0x00000000u, 0x0000u, "+0" },
    { 0x80000000u, 0x8000u, "-0 keeps its sign" },
    { 0x3f800000u, 0x3f80u, "1.0 exact" },
    { 0x3f808000u, 0x3f80u, "1 + 2^-8: tie rounds to even (down)" },
    { 0x3f818000u, 0x3f82u, "1 + 3*2^-8: tie rounds to even (up)" },
    { 0x3f808001u, 0x3f81u, "just above a tie rounds up" },
    { 0x3f807fffu, 0x3f80u, "just below a tie rounds down" },
    { 0x7f7f0000u, 0x7f7fu, "max finite bf16, exact" },
    { 0x7f7f7fffu, 0x7f7fu, "just below halfway between max finite and inf: max finite" },
    { 0x7f7f8000u, 0x7f80u, "halfway between max finite and inf: rounds to inf" },
    { 0x7f7fffffu, 0x7f80u, "FLT_MAX is above halfway: inf" },
    { 0xff7f8000u, 0xff80u, "negative halfway: -inf" },
    { 0x7f800000u, 0x7f80u, "inf stays inf" },
    { 0x00010000u, 0x0001u, "smallest bf16 subnormal, exact" },
    { 0x00008000u, 0x0000u, "half the smallest subnormal: tie to even, zero" },
    { 0x00008001u, 0x0001u, "just above half the smallest subnormal" },
    { 0x00018000u, 0x0002u, "1.5 smallest subnormals: tie to even (up)" },
    { 0x00000001u, 0x0000u, "smallest f32 subnormal underflows to zero" },
    { 0x007f8000u, 0x0080u, "largest bf16 subnormal + half: rounds into the smallest normal" },
    { 0x7f800001u, 0x7fc0u, "signalling NaN becomes quiet, not inf (truncation would give 0x7f80)" },
    { 0xff800001u, 0xffc0u, "negative signalling NaN keeps its sign" },
    { 0x7fc12345u, 0x7fc1u, "quiet NaN keeps the top payload bits" },
    { 0x7fffffffu, 0x7fffu, "all-ones payload" },
};

static const boundary f16_cases[] = {
    { 0x80000000u, 0x8000u, "-0 keeps its sign" },
    { 0x3f801000u, 0x3c00u, "1 + 2^-11: tie rounds to even (down)" },
    { 0x3f803000u, 0x3c02u, "1 + 3*2^-11: tie rounds to even (up)" },
    { 0x477fe000u, 0x7bffu, "65504, max finite f16, exact" },
    { 0x477fefffu, 0x7bffu, "just below 65520, halfway between max finite and inf: max finite" },
    { 0x477ff000u, 0x7c00u, "65520, halfway between max finite and inf: rounds to inf" },
    { 0x47800000u, 0x7c00u, "65536 overflows" },
    { 0x7f7fffffu, 0x7c00u, "FLT_MAX overflows" },
    { 0xc77ff000u, 0xfc00u, "-65520: -inf" },
    { 0x33800000u, 0x0001u, "2^-24, smallest f16 subnormal, exact" },
    { 0x33000000u, 0x0000u, "2^-25, half the smallest subnormal: tie to even, zero" },
    { 0x33000001u, 0x0001u, "just above 2^-25 rounds up" },
    { 0x33c00000u, 0x0002u, "1.5 * 2^-24: tie to even (up)" },
    { 0x387fc000u, 0x03ffu, "largest subnormal, exact" },
    { 0x387fe000u, 0x0400u, "largest subnormal + half: tie rounds up to the smallest normal" },
    { 0x38800000u, 0x0400u, "2^-14, smallest normal" },
    { 0x38801000u, 0x0400u, "smallest normal + half ulp: tie to even (down)" },
    { 0x00000001u, 0x0000u, "smallest f32 subnormal underflows to zero" },
    { 0x7f800000u, 0x7c00u, "inf stays inf" },
    { 0x7f800001u, 0x7e00u, "signalling NaN becomes quiet, not inf" },
    { 0xff800001u, 0xfe00u, "negative signalling NaN keeps its sign" },
    { 0x7fc12345u, 0x7e09u, "quiet NaN keeps the top 10 payload bits" },
};

static void check_boundaries(const boundary *cases, size_t n, uint16_t (*narrow)(float), const char *name)
{
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t got = narrow(f32_from(cases[i].in));
        if (got != cases[i].want) {
            print_error("%s(0x%08x): got 0x%04x, want 0x%04x (%s)\n", name, (unsigned)cases[i].in,
                        (unsigned)got, (unsigned)cases[i].want, cases[i].why);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

static uint16_t narrow_bf16(float x)
{
    return amp_f32_to_bf16(x).bits;
}

static uint16_t narrow_f16(float x)
{
    return amp_f32_to_f16(x).bits;
}

static void test_f32_to_bf16_boundaries(void **state)
{
    (void)state;
    check_boundaries(bf16_cases, sizeof bf16_cases / sizeof bf16_cases[0], narrow_bf16, "amp_f32_to_bf16");
}

static void test_f32_to_f16_boundaries(void **state)
{
    (void)state;
    check_boundaries(f16_cases, sizeof f16_cases / sizeof f16_cases[0], narrow_f16, "amp_f32_to_f16");
}

/* The two directions compose: every finite bf16/f16 survives a round trip. */
static void test_round_trip_is_identity(void **state)
{
    (void)state;
    for (uint32_t b = 0; b < (1u << 16); b++) {
        if (!isnan(ref_decode(b, &BF16)))
            assert_int_equal(narrow_bf16(widen_bf16((uint16_t)b)), b);
        if (!isnan(ref_decode(b, &F16)))
            assert_int_equal(narrow_f16(widen_f16((uint16_t)b)), b);
    }
}

/* ---- Cast kernels -------------------------------------------------------- */

/* xorshift64*: a fixed-seed generator, so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* Doubles for the f64 casts: raw random patterns (any exponent, NaNs
 * included), and values whose exponent lies in [-160, 160), where f32, bf16
 * and f16 round, overflow and underflow. */
#define NCAST 4096

static void random_doubles(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng();
        if (i % 2)
            memcpy(&x[i], &r, sizeof x[i]);
        else
            x[i] = ldexp((double)(r >> 11) * 0x1p-53 + 1.0, (int)(r % 320) - 160) * ((r >> 10) & 1 ? -1 : 1);
    }
}

/* f64 -> bf16 and f16 must round once. Each trap sits just above a tie of
 * the narrow format by less than half an f32 ulp, so going through f32 first
 * would land on the tie and round to even, down; the right answer is up. */
static void test_cast_f64_to_half_rounds_once(void **state)
{
    static const double bf16_traps[] = { 1.0 + 0x1p-8 + 0x1p-40, 0x1p-133 * (2.5 + 0x1p-30) };
    static const uint16_t bf16_want[] = { 0x3f81u, 0x0003u };
    static const double f16_traps[] = { 1.0 + 0x1p-11 + 0x1p-40, 0x1p-24 * (0.5 + 0x1p-30) };
    static const uint16_t f16_want[] = { 0x3c01u, 0x0001u };
    amp_bf16 b[2];
    amp_f16 h[2];
    (void)state;

    amp_cast_f64_bf16(2, bf16_traps, b);
    amp_cast_f64_f16(2, f16_traps, h);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(b[i].bits, bf16_want[i]);
        assert_int_equal(h[i].bits, f16_want[i]);
    }
}

static void test_cast_f64_boundaries(void **state)
{
    /* The f32 route through NaN would also lose the payload's top bits. */
    double in[] = { 65520.0, 65519.99, 0x1p-25, NAN, -INFINITY, -0.0, 0x1p-1074, 1e300 };
    amp_f16 h[8];
    uint64_t nan_bits = 0x7ff4000000000001ull; /* signalling, payload 0x8... */
    double snan;
    amp_bf16 b;
    (void)state;

    amp_cast_f64_f16(8, in, h);
    assert_int_equal(h[0].bits, 0x7c00u); /* halfway between max finite and inf: inf */
    assert_int_equal(h[1].bits, 0x7bffu); /* below halfway: max finite */
    assert_int_equal(h[2].bits, 0x0000u); /* half the smallest subnormal: tie to even */
    assert_true(is_quiet_nan(h[3].bits, &F16));
    assert_int_equal(h[4].bits, 0xfc00u);
    assert_int_equal(h[5].bits, 0x8000u);
    assert_int_equal(h[6].bits, 0x0000u); /* smallest f64 subnormal underflows */
    assert_int_equal(h[7].bits, 0x7c00u);

    memcpy(&snan, &nan_bits, sizeof snan);
    amp_cast_f64_bf16(1, &snan, &b);
    assert_int_equal(b.bits, 0x7fe0u); /* signalling NaN quieted, payload top bit kept */
}

static void test_cast_f64_random(void **state)
{
    double x[NCAST];
    amp_bf16 b[NCAST];
    amp_f16 h[NCAST];
    float f[NCAST];
    unsigned bad = 0;
    (void)state;

    for (int round = 0; round < 64; round++) {
        random_doubles(x, NCAST);
        amp_cast_f64_bf16(NCAST, x, b);
        amp_cast_f64_f16(NCAST, x, h);
        amp_cast_f64_f32(NCAST, x, f);
        for (size_t i = 0; i < NCAST; i++) {
            double wf = ref_round(x[i], &F32);
            int f_ok = isnan(wf) ? is_quiet_nan(f32_bits(f[i]), &F32) && same_sign(f[i], wf)
                                 : (double)f[i] == wf && same_sign(f[i], wf);
            if (!matches(&BF16, b[i].bits, ref_round(x[i], &BF16)) ||
                !matches(&F16, h[i].bits, ref_round(x[i], &F16)) || !f_ok) {
                if (bad++ < 8)
                    print_error("f64 %a -> bf16 0x%04x f16 0x%04x f32 %a\n", x[i], (unsigned)b[i].bits,
                                (unsigned)h[i].bits, (double)f[i]);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* bf16 <-> f16 through the exact f32 value, and the widening casts, for
 * every source pattern. */
static void test_cast_from_half_all_patterns(void **state)
{
    static amp_bf16 bsrc[1 << 16], bdst[1 << 16];
    static amp_f16 hsrc[1 << 16], hdst[1 << 16];
    static float bf[1 << 16], hf[1 << 16];
    static double bd[1 << 16], hd[1 << 16];
    unsigned bad = 0;
    (void)state;

    for (uint32_t i = 0; i < (1u << 16); i++) {
        bsrc[i].bits = (uint16_t)i;
        hsrc[i].bits = (uint16_t)i;
    }
    amp_cast_bf16_f16(1u << 16, bsrc, hdst);
    amp_cast_f16_bf16(1u << 16, hsrc, bdst);
    amp_cast_bf16_f32(1u << 16, bsrc, bf);
    amp_cast_f16_f32(1u << 16, hsrc, hf);
    amp_cast_bf16_f64(1u << 16, bsrc, bd);
    amp_cast_f16_f64(1u << 16, hsrc, hd);
    for (uint32_t i = 0; i < (1u << 16); i++) {
        double vb = ref_decode(i, &BF16), vh = ref_decode(i, &F16);
        int ok = matches(&F16, hdst[i].bits, ref_round(vb, &F16)) && matches(&BF16, bdst[i].bits, ref_round(vh, &BF16));
        if (isnan(vb))
            ok = ok && isnan(bf[i]) && isnan(bd[i]) && same_sign(bf[i], vb) && same_sign(bd[i], vb);
        else
            ok = ok && (double)bf[i] == vb && bd[i] == vb && same_sign(bf[i], vb) && same_sign(bd[i], vb);
        if (isnan(vh))
            ok = ok && isnan(hf[i]) && isnan(hd[i]);
        else
            ok = ok && (double)hf[i] == vh && hd[i] == vh && same_sign(hf[i], vh) && same_sign(hd[i], vh);
        if (!ok && bad++ < 8)
            print_error("pattern 0x%04x: bf16->f16 0x%04x, f16->bf16 0x%04x\n", (unsigned)i, (unsigned)hdst[i].bits,
                        (unsigned)bdst[i].bits);
    }
    assert_int_equal(bad, 0);
}

/* f32 -> bf16/f16 casts agree with the scalar conversions (verified above on
 * every pattern), and f32 -> f64 is exact, on random patterns. */
static void test_cast_from_f32_random(void **state)
{
    float x[NCAST], back[NCAST];
    amp_bf16 b[NCAST], b2[NCAST];
    amp_f16 h[NCAST];
    double d[NCAST];
    (void)state;

    for (int round = 0; round < 64; round++) {
        for (size_t i = 0; i < NCAST; i++)
            x[i] = f32_from((uint32_t)rng());
        amp_cast_f32_bf16(NCAST, x, b);
        amp_cast_f32_f16(NCAST, x, h);
        amp_cast_f32_f64(NCAST, x, d);
        for (size_t i = 0; i < NCAST; i++) {
            assert_int_equal(b[i].bits, amp_f32_to_bf16(x[i]).bits);
            assert_int_equal(h[i].bits, amp_f32_to_f16(x[i]).bits);
            if (isnan(x[i]))
                assert_true(isnan(d[i]));
            else
                assert_true(d[i] == (double)x[i] && same_sign(d[i], x[i]));
        }
    }
    /* f64 -> f32 gives back the f32 values just widened, so narrowing them
     * again gives the same bf16. */
    amp_cast_f64_f32(NCAST, d, back);
    amp_cast_f32_bf16(NCAST, back, b2);
    for (size_t i = 0; i < NCAST; i++)
        if (!isnan(x[i]))
            assert_int_equal(b2[i].bits, b[i].bits);
}

/* ---- Generic element access and dtype facts ----------------------------- */

static void test_store_from_f32(void **state)
{
    double d[1];
    float f[1];
    amp_bf16 b[1];
    amp_f16 h[1];
    int64_t i64[6];
    int32_t i32[4];
    uint8_t u8[4];
    const float i64_in[6] = { -3.7f, 3.7f, 1e30f, -1e30f, NAN, -9223372036854775808.0f };
    const int64_t i64_want[6] = { -3, 3, INT64_MAX, INT64_MIN, 0, INT64_MIN };
    (void)state;

    amp_store_from_f32(AMP_F64, d, 0, 0x1.fffffep-1f);
    assert_true(d[0] == 0x1.fffffep-1); /* exact */
    amp_store_from_f32(AMP_F32, f, 0, -2.5f);
    assert_true(f[0] == -2.5f);
    amp_store_from_f32(AMP_BF16, b, 0, 1.0f + 0x1p-8f);
    assert_int_equal(b[0].bits, 0x3f80u); /* tie to even */
    amp_store_from_f32(AMP_F16, h, 0, 65520.0f);
    assert_int_equal(h[0].bits, 0x7c00u); /* halfway: inf */

    /* C truncates toward zero; NaN and out-of-range values, undefined in C,
     * store 0 and saturate. -2^63 is exactly representable: in range. */
    for (size_t i = 0; i < 6; i++) {
        amp_store_from_f32(AMP_I64, i64, i, i64_in[i]);
        assert_true(i64[i] == i64_want[i]);
    }
    amp_store_from_f32(AMP_I32, i32, 0, 3e9f);
    amp_store_from_f32(AMP_I32, i32, 1, -3e9f);
    amp_store_from_f32(AMP_I32, i32, 2, NAN);
    amp_store_from_f32(AMP_I32, i32, 3, -2147483648.0f);
    assert_int_equal(i32[0], INT32_MAX);
    assert_int_equal(i32[1], INT32_MIN);
    assert_int_equal(i32[2], 0);
    assert_int_equal(i32[3], INT32_MIN);

    /* bool is v != 0, as a C conversion to _Bool. */
    amp_store_from_f32(AMP_BOOL, u8, 0, 0.0f);
    amp_store_from_f32(AMP_BOOL, u8, 1, -0.0f);
    amp_store_from_f32(AMP_BOOL, u8, 2, 0.25f);
    amp_store_from_f32(AMP_BOOL, u8, 3, NAN);
    assert_int_equal(u8[0], 0);
    assert_int_equal(u8[1], 0);
    assert_int_equal(u8[2], 1);
    assert_int_equal(u8[3], 1);

    /* An invalid dtype stores nothing. */
    u8[0] = 7;
    amp_store_from_f32((amp_dtype)99, u8, 0, 1.0f);
    assert_int_equal(u8[0], 7);
}

static void test_load_as_f32(void **state)
{
    const double d[2] = { 1.0 + 0x1p-30, 1e300 };
    const float f[1] = { -0.0f };
    amp_bf16 b[1];
    amp_f16 h[1];
    const int64_t i64[2] = { ((int64_t)1 << 62) + 1, -7 };
    const int32_t i32[1] = { 16777217 };
    const uint8_t u8[2] = { 0, 1 };
    (void)state;

    b[0].bits = 0x0001u;
    h[0].bits = 0x0001u;
    assert_true(amp_load_as_f32(AMP_F64, d, 0) == 1.0f); /* rounds to nearest */
    assert_true(isinf(amp_load_as_f32(AMP_F64, d, 1)));
    assert_true(amp_load_as_f32(AMP_F32, f, 0) == 0.0f && signbit(amp_load_as_f32(AMP_F32, f, 0)));
    assert_true(amp_load_as_f32(AMP_BF16, b, 0) == 0x1p-133f); /* subnormal kept */
    assert_true(amp_load_as_f32(AMP_F16, h, 0) == 0x1p-24f);
    assert_true(amp_load_as_f32(AMP_I64, i64, 0) == 0x1p62f);
    assert_true(amp_load_as_f32(AMP_I64, i64, 1) == -7.0f);
    assert_true(amp_load_as_f32(AMP_I32, i32, 0) == 16777216.0f); /* tie to even */
    assert_true(amp_load_as_f32(AMP_BOOL, u8, 0) == 0.0f);
    assert_true(amp_load_as_f32(AMP_BOOL, u8, 1) == 1.0f);
    assert_true(amp_load_as_f32((amp_dtype)99, u8, 1) == 0.0f);
}

static void test_dtype_size_and_name(void **state)
{
    static const struct {
        amp_dtype t;
        size_t size;
        const char *name;
    } want[] = {
        { AMP_F64, 8, "f64" }, { AMP_F32, 4, "f32" }, { AMP_BF16, 2, "bf16" }, { AMP_F16, 2, "f16" },
        { AMP_I64, 8, "i64" }, { AMP_I32, 4, "i32" }, { AMP_BOOL, 1, "bool" },
        { AMP_C64, 8, "c64" }, { AMP_C128, 16, "c128" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(amp_dtype_size(want[i].t), want[i].size);
        assert_string_equal(amp_dtype_name(want[i].t), want[i].name);
    }
    assert_int_equal(amp_dtype_size((amp_dtype)99), 0);
    assert_string_equal(amp_dtype_name((amp_dtype)99), "invalid");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_to_f32_all_patterns),
        cmocka_unit_test(test_f16_to_f32_all_patterns),
        cmocka_unit_test(test_f32_to_bf16_boundaries),
        cmocka_unit_test(test_f32_to_f16_boundaries),
        cmocka_unit_test(test_round_trip_is_identity),
        cmocka_unit_test(test_f32_to_bf16_and_f16_all_patterns),
        cmocka_unit_test(test_cast_f64_to_half_rounds_once),
        cmocka_unit_test(test_cast_f64_boundaries),
        cmocka_unit_test(test_cast_f64_random),
        cmocka_unit_test(test_cast_from_half_all_patterns),
        cmocka_unit_test(test_cast_from_f32_random),
        cmocka_unit_test(test_store_from_f32),
        cmocka_unit_test(test_load_as_f32),
        cmocka_unit_test(test_dtype_size_and_name),
    };
    fmt_init(&BF16);
    fmt_init(&F16);
    fmt_init(&F32);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
