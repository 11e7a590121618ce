/* literal.c: numeric literals, exact until they meet their dtype.
 *
 * A literal is read into a GMP rational exactly as written (0.1 is 1/10,
 * not the double nearest it), then rounded once, to nearest with ties to
 * even, into the format of the op that uses it.  Rounding twice (text ->
 * double -> float) can differ from rounding once; this never does.
 */
#include "core.h"

#include <errno.h>
#include <gmp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GMP's allocators abort on failure ("GNU MP: Cannot allocate memory"):
 * these die as every other allocator of the compiler does. */
static void *gmp_alloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        out_of_memory(n);
    return p;
}

static void *gmp_realloc(void *p, size_t old, size_t n)
{
    (void)old;
    void *q = realloc(p, n);
    if (!q)
        out_of_memory(n);
    return q;
}

static void gmp_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

void literal_init(void)
{
    mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
}

/* Beyond these decimal orders of magnitude the value is certainly inf or
 * 0 in every format we round to; checking first keeps 1e999999999 from
 * building a gigantic integer. */
enum { MAX_DECIMAL_ORDER = 400 };

/* Decimal text -> exact rational; returns the approximate decimal order
 * (exponent of the leading digit) through *order. */
static void read_decimal(const char *text, mpq_t q, long *order, bool *too_big, bool *too_small)
{
    size_t len = strlen(text);
    char *digits = malloc(len + 1);
    if (!digits)
        out_of_memory(len + 1);
    size_t nd = 0, frac = 0;
    bool in_frac = false;
    const char *p = text;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            in_frac = true;
            continue;
        }
        digits[nd++] = *p;
        frac += in_frac;
    }
    digits[nd] = '\0';
    long exp10 = 0;
    if (*p == 'e' || *p == 'E') {
        /* saturate: the order checks below only need the sign and size */
        errno = 0;
        exp10 = strtol(p + 1, NULL, 10);
        if (exp10 > 1000000000L)
            exp10 = 1000000000L;
        if (exp10 < -1000000000L)
            exp10 = -1000000000L;
    }
    size_t lead = 0;
    while (lead < nd && digits[lead] == '0')
        lead++;
    *too_big = *too_small = false;
    mpq_set_ui(q, 0, 1);
    if (lead == nd) {
        *order = 0;
        free(digits);
        return;
    }
    *order = (long)(nd - lead) - (long)frac + exp10 - 1;
    if (*order > MAX_DECIMAL_ORDER || *order < -MAX_DECIMAL_ORDER) {
        *too_big = *order > 0;
        *too_small = *order < 0;
        free(digits);
        return;
    }
    mpz_t num, pow10;
    mpz_inits(num, pow10, NULL);
    mpz_set_str(num, digits + lead, 10);
    long e = exp10 - (long)frac;
    mpz_ui_pow_ui(pow10, 10, (unsigned long)labs(e));
    if (e >= 0) {
        mpz_mul(num, num, pow10);
        mpq_set_z(q, num);
    } else {
        mpq_set_num(q, num);
        mpq_set_den(q, pow10);
        mpq_canonicalize(q);
    }
    mpz_clears(num, pow10, NULL);
    free(digits);
}

LiteralRounding literal_round(const char *text, int precision, int emin, int emax, double *out)
{
    mpq_t q;
    mpq_init(q);
    long order;
    bool too_big, too_small;
    read_decimal(text, q, &order, &too_big, &too_small);
    LiteralRounding r = LIT_EXACT;
    if (too_big) {
        *out = INFINITY;
        mpq_clear(q);
        return LIT_OVERFLOW;
    }
    if (too_small) {
        *out = 0.0;
        mpq_clear(q);
        return LIT_UNDERFLOW;
    }
    if (mpq_sgn(q) == 0) {
        *out = 0.0;
        mpq_clear(q);
        return LIT_EXACT;
    }
    /* e = floor(log2 q): start from the bit lengths, then correct by one */
    long e = (long)mpz_sizeinbase(mpq_numref(q), 2) - (long)mpz_sizeinbase(mpq_denref(q), 2);
    mpq_t pow2;
    mpq_init(pow2);
    mpq_set_ui(pow2, 1, 1);
    if (e >= 0)
        mpq_mul_2exp(pow2, pow2, (mp_bitcnt_t)e);
    else
        mpq_div_2exp(pow2, pow2, (mp_bitcnt_t)-e);
    if (mpq_cmp(q, pow2) < 0)
        e--;
    mpq_clear(pow2);

    /* the quantum (ulp exponent) at this binade, or the subnormal quantum */
    long quantum = e - (precision - 1);
    if (quantum < emin - (precision - 1))
        quantum = emin - (precision - 1);
    mpz_t scaled, rem;
    mpz_inits(scaled, rem, NULL);
    mpz_set(scaled, mpq_numref(q));
    mpz_t den;
    mpz_init_set(den, mpq_denref(q));
    if (quantum >= 0)
        mpz_mul_2exp(den, den, (mp_bitcnt_t)quantum);
    else
        mpz_mul_2exp(scaled, scaled, (mp_bitcnt_t)-quantum);
    mpz_fdiv_qr(scaled, rem, scaled, den);
    if (mpz_sgn(rem) != 0) {
        r = LIT_INEXACT;
        mpz_mul_2exp(rem, rem, 1);
        int cmp = mpz_cmp(rem, den);
        if (cmp > 0 || (cmp == 0 && mpz_odd_p(scaled)))
            mpz_add_ui(scaled, scaled, 1);
    }
    /* scaled < 2^(precision+1), so it fits a double exactly */
    double m = mpz_get_d(scaled);
    double v = ldexp(m, (int)quantum);
    mpz_clears(scaled, rem, den, NULL);
    mpq_clear(q);
    if (m == 0.0) {
        *out = 0.0;
        return LIT_UNDERFLOW;
    }
    if (v >= ldexp(1.0, emax + 1)) {
        *out = INFINITY;
        return LIT_OVERFLOW;
    }
    *out = v;
    if (v < ldexp(1.0, emin))
        return LIT_SUBNORMAL;
    return r;
}

LiteralRounding literal_to_dtype(const char *text, DType t, double *out)
{
    switch (t) {
    case DT_F64:
        return literal_round(text, 53, -1022, 1023, out);
    case DT_BF16:
        return literal_round(text, 8, -126, 127, out);
    case DT_F16:
        return literal_round(text, 11, -14, 15, out);
    default:
        return literal_round(text, 24, -126, 127, out);
    }
}

/* The bf16 or f16 encoding of v, which must be exactly representable
 * (a value literal_to_dtype rounded to that dtype): for the constants the
 * code generator writes as bit patterns. */
uint16_t half_bits(double v, DType t)
{
    float f = (float)v; /* exact: bf16 and f16 values are f32 values */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (t == DT_BF16)
        return (uint16_t)(u >> 16);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    double a = fabs(v);
    if (isinf(a))
        return (uint16_t)(sign | 0x7c00u);
    if (a == 0)
        return sign;
    int e2;
    double m = frexp(a, &e2); /* a = m 2^e2, m in [0.5, 1) */
    int exp = e2 - 1 + 15;      /* f16 biased exponent of a */
    if (exp <= 0)               /* subnormal: a / 2^-24 is an integer */
        return (uint16_t)(sign | (uint16_t)ldexp(a, 24));
    return (uint16_t)(sign | (exp << 10) | ((uint16_t)ldexp(m * 2 - 1, 10) & 0x3ffu));
}
