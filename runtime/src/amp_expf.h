/*
 * amp_expf.h - the runtime's own exp for f32, for kernels whose reference
 * and SIMD versions must agree bit for bit (the classifier losses:
 * cross_entropy's log-sum-exp and softmax gradient).
 *
 * libm's expf is a different function on every libc (and not correctly
 * rounded everywhere), so a vector kernel could only match it by calling
 * it per lane - 11% of a small MLP's training step.  This one is defined
 * by its operations alone, all exact or correctly rounded IEEE double
 * operations (mul, fma, round-to-nearest-even, a power-of-two scaling,
 * one final rounding to f32), so a vector version performing the same
 * operations per lane (x86/avx512_loss.c: exp16) gets the same bits:
 *
 *   x clamped to [-104, 89] (below, exp rounds to +0 in f32; above, to
 *   +inf; the clamp changes no result), NaN returned as is;
 *   k = nearbyint(x * (1/ln2));  r = x - k ln2 (two fmas: ln2 in two parts)
 *   p = sum_{i=0..11} r^i / i!  (Horner, fmas, |r| <= 0.3466)
 *   result = (float)(p * 2^k)  (2^k built from k's bits: k is within
 *   [-150, 128], where 2^k is a normal double and the product exact, so
 *   this is ldexp's result without its libm call)
 *
 * Accuracy: the truncated series and the double roundings leave p * 2^k
 * within about 1e-14 (relative) of e^x, so the one rounding to f32 is
 * the correct one except where e^x lies within that of a halfway point
 * between two floats (rare); never more than one ulp off
 * (tests/runtime/test_expf.c checks both over the float range).
 */
#ifndef AMP_EXPF_H
#define AMP_EXPF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* 1/ln2, ln2 = AMP_EXPF_LN2_HI + AMP_EXPF_LN2_LO (hi: ln2 rounded to double) */
#define AMP_EXPF_INV_LN2 0x1.71547652b82fep+0
#define AMP_EXPF_LN2_HI 0x1.62e42fefa39efp-1
#define AMP_EXPF_LN2_LO 0x1.abc9e3b39803fp-56
/* 1/i!, i = 11 down to 2 (then 1 and 1) */
#define AMP_EXPF_C11 (1.0 / 39916800.0)
#define AMP_EXPF_C10 (1.0 / 3628800.0)
#define AMP_EXPF_C9 (1.0 / 362880.0)
#define AMP_EXPF_C8 (1.0 / 40320.0)
#define AMP_EXPF_C7 (1.0 / 5040.0)
#define AMP_EXPF_C6 (1.0 / 720.0)
#define AMP_EXPF_C5 (1.0 / 120.0)
#define AMP_EXPF_C4 (1.0 / 24.0)
#define AMP_EXPF_C3 (1.0 / 6.0)
#define AMP_EXPF_C2 0.5

/* r = x - k ln2 and p = the series of r, written once for amp_expf and
 * the vector versions (x86/avx2_loss.c, x86/avx512_loss.c,
 * arm/neon_loss.c), so that every lane performs amp_expf's operations in
 * its order: FMA(a, b, c) is a b + c rounded once, DUP(constant) the
 * constant as the operands' type, nk is -k and x the clamped input. */
#define AMP_EXPF_SERIES(FMA, DUP, nk, x, r, p)                   \
    do {                                                         \
        r = FMA(nk, DUP(AMP_EXPF_LN2_HI), x);                    \
        r = FMA(nk, DUP(AMP_EXPF_LN2_LO), r);                    \
        p = FMA(DUP(AMP_EXPF_C11), r, DUP(AMP_EXPF_C10));        \
        p = FMA(p, r, DUP(AMP_EXPF_C9));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C8));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C7));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C6));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C5));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C4));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C3));                         \
        p = FMA(p, r, DUP(AMP_EXPF_C2));                         \
        p = FMA(p, r, DUP(1.0));                                 \
        p = FMA(p, r, DUP(1.0));                                 \
    } while (0)

#define AMP_EXPF_SCALAR(c) (c)

/* 2^k for an integer k in [-1022, 1023]: the double with exponent field
 * k + 1023 and a zero fraction. */
static inline double amp_exp2i(int k)
{
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static inline float amp_expf(float xf)
{
    double x, k, r, p;
    if (xf != xf)
        return xf;
    x = xf > 89.0f ? 89.0 : xf < -104.0f ? -104.0 : (double)xf;
    k = nearbyint(x * AMP_EXPF_INV_LN2);
    AMP_EXPF_SERIES(fma, AMP_EXPF_SCALAR, -k, x, r, p);
    return (float)(p * amp_exp2i((int)k));
}

/* The same name for the f64 instantiation of the .inc bodies
 * (AMP_MATH(amp_exp)): libm's exp, as before. */
static inline double amp_exp(double x) { return exp(x); }

#endif
