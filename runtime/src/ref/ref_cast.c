/*
 * ref_cast.c - reference casts between f64, f32, bf16 and f16.
 *
 * Every cast rounds exactly once. f32, bf16 and f16 sources widen exactly
 * to f32 and are then rounded to the destination (so bf16 <-> f16 goes
 * through the exact f32 value). f64 sources must not go through f32 on the
 * way to bf16 or f16: rounding twice can land on the wrong neighbour (a
 * value just above a bf16 tie can round down to the tie in f32, then to
 * even), so they are rounded directly from the double by narrow_f64.
 * f64 -> f32 is C's conversion, correctly rounded in the default
 * floating-point environment, which the runtime assumes throughout.
 *
 * The casts are hand-written: each has two dtypes, which the wrapper
 * generator (one dtype per entry) does not cover.
 */
#include "amprt_internal.h"

/*
 * Round a double, once, to a binary format with `frac_bits` fraction bits
 * and `exp_bits` exponent bits (bf16: 7, 8; f16: 10, 5), under the amprt.h
 * contract, and return its bits.
 *
 * The result is computed as an integer count r of quanta, where the quantum
 * is the format's unit in the last place at exponent eq, the value's
 * exponent clamped at emin (which is how subnormals come out). The encoding
 * is then simply ((eq - emin) << frac_bits) + r: for a normal value r
 * includes the implicit bit, which lands as the +1 of the biased exponent;
 * for a subnormal eq = emin and r < 2^frac_bits; and a rounding carry into
 * the next binade, or past the max finite value into infinity, falls out of
 * the addition.
 */
static uint16_t narrow_f64(double d, int frac_bits, int exp_bits)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    uint16_t sign = (uint16_t)((u >> 63) << (frac_bits + exp_bits));
    int exp_field = (int)((u >> 52) & 0x7ff);
    uint64_t frac = u & 0x000fffffffffffffull;
    uint16_t inf = (uint16_t)(((1u << exp_bits) - 1u) << frac_bits);
    int emax = (1 << (exp_bits - 1)) - 1, emin = 1 - emax;

    if (exp_field == 0x7ff) {
        if (frac == 0)
            return sign | inf;
        /* NaN: top payload bits, quiet bit forced (so never infinity). */
        return (uint16_t)(sign | inf | (1u << (frac_bits - 1)) | (frac >> (52 - frac_bits)));
    }
    /* Zero and f64 subnormals (< 2^-1022) are far below half the smallest
     * subnormal of either target. */
    if (exp_field == 0)
        return sign;

    int e = exp_field - 1023; /* |d| in [2^e, 2^(e+1)) */
    if (e > emax)
        return sign | inf;
    int eq = e < emin ? emin : e;         /* quantum is 2^(eq - frac_bits) */
    uint64_t sig = frac | (1ull << 52);   /* |d| = sig * 2^(e - 52) */
    int shift = eq - frac_bits - (e - 52); /* r = sig / 2^shift, rounded */
    /* |d| / quantum < 2^(53 - shift): below one half, so zero, once shift >= 54.
     * Otherwise shift is in [52 - frac_bits, 53] and the shifts below are
     * well defined. */
    if (shift >= 54)
        return sign;
    uint64_t r = sig >> shift;
    uint64_t rest = sig & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (rest > half || (rest == half && (r & 1)))
        r++;
    return (uint16_t)(sign | (((uint64_t)(eq - emin) << frac_bits) + r));
}

static AMP_ALWAYS_INLINE void store_from_f64(amp_dtype t, void *y, size_t i, double v)
{
    switch (t) {
    case AMP_BF16: ((amp_bf16 *)y)[i].bits = narrow_f64(v, 7, 8); return;
    case AMP_F16: ((amp_f16 *)y)[i].bits = narrow_f64(v, 10, 5); return;
    default: ((float *)y)[i] = (float)v; return; /* f32, the only other f64 target */
    }
}

static AMP_ALWAYS_INLINE void cast(amp_dtype from, amp_dtype to, size_t n, const void *x, void *y)
{
    for (size_t i = 0; i < n; i++) {
        if (from == AMP_F64)
            store_from_f64(to, y, i, ((const double *)x)[i]);
        else
            amp_st(to, y, (int64_t)i, amp_ld(from, x, (int64_t)i));
    }
}

/* The kernel-row argument X of the pair list is not needed here. */
#define DEFINE_CAST(unused, S, D)                                                                 \
    void amp_ref_cast_##S##_##D(size_t n, const AMP_CTYPE_##S *x, AMP_CTYPE_##D *y)               \
    {                                                                                             \
        cast(AMP_DTYPE_##S, AMP_DTYPE_##D, n, x, y);                                              \
    }

AMP_FOR_EACH_CAST_PAIR(DEFINE_CAST, ~)
