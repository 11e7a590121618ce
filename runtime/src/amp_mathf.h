/*
 * amp_mathf.h - the runtime's own erf and tanh for f32, and the order in
 * which the row kernels (softmax, layer_norm) add a row up, for kernels
 * whose reference and SIMD versions must agree bit for bit: gelu (erf
 * form) and gelu_tanh (ref_unary.inc and x86/avx512_rows.c,
 * x86/avx2_rows.c), softmax and layer_norm (ref_softmax.inc,
 * ref_norm.inc and the same files).
 *
 * As amp_expf.h's exp, each is defined by its operations alone, all exact
 * or correctly rounded IEEE double operations (mul, fma, add, div, one
 * final rounding to f32), so a vector version performing the same
 * operations per lane gets the same bits as the scalar one:
 *
 *   amp_erff(x): NaN returned as is; a = |x|;
 *     a < 1:  x * A(x^2), A a degree-9 polynomial fitted to erf(x)/x
 *             (Horner, fmas; x^2 is exact in double);
 *     a >= 1: 1 - B(min(a, 4) - 2.5) with x's sign, B a degree-22
 *             polynomial fitted to erfc on [1, 4] (erf rounds to 1 in
 *             f32 from 3.92 on, so the clamp changes no result).
 *     The vector forms compute both and keep one per lane.
 *   amp_tanhf(x): NaN returned as is; z = min(2|x|, 40) (tanh rounds to
 *     1 from 9.01 on); k = nearbyint(z / ln2), r = z - k ln2 (amp_expf's
 *     two fmas); q = expm1(r) = r * (1 + r/2! + ... + r^10/11!) (amp_expf's
 *     coefficients, Horner); e = q 2^k + (2^k - 1) (one fma: expm1(z));
 *     tanh = e / (e + 2) with x's sign.
 *
 * Accuracy: the fits are within 2e-15 (erf/x, relative, a < 1) and 8e-14
 * (erfc, absolute, 1 <= a <= 4) of the functions, tanh's chain within a
 * few 1e-16 (relative; expm1 keeps small arguments accurate), so the
 * rounding to f32 is the correct one except within that of a halfway
 * point; never more than one ulp off (tests/runtime/test_expf.c checks
 * both against libm's double functions over the float range).
 *
 * The f64 instantiations of the reference bodies (AMP_MATH(amp_erf),
 * AMP_MATH(amp_tanh)) keep libm's erf and tanh.
 */
#ifndef AMP_MATHF_H
#define AMP_MATHF_H

#include <math.h>

#include "amp_expf.h"

/* erf(x)/x on [0, 1] in t = x^2: A0 + A1 t + ... + A9 t^9 */
#define AMP_ERF_A0 0x1.20dd750429b1cp+0
#define AMP_ERF_A1 -0x1.812746b027772p-2
#define AMP_ERF_A2 0x1.ce2f2197de274p-4
#define AMP_ERF_A3 -0x1.b82ce1617132dp-6
#define AMP_ERF_A4 0x1.565ba0a82e2f7p-8
#define AMP_ERF_A5 -0x1.c02875cd4aed0p-11
#define AMP_ERF_A6 0x1.f94237f84527bp-14
#define AMP_ERF_A7 -0x1.f07405bc98d28p-17
#define AMP_ERF_A8 0x1.9aeffaccfaeebp-20
#define AMP_ERF_A9 -0x1.c1dae67dea0dep-24
/* erfc(a) on [1, 4] in u = a - 2.5: B0 + B1 u + ... + B22 u^22 */
#define AMP_ERF_B_CENTER 2.5
#define AMP_ERF_B_TOP 4.0
#define AMP_ERF_B_COEFFS(X)                                                                       \
    X(0x1.56dfa199c366ep-35) X(0x1.db2378e238d31p-33) X(-0x1.a71ffbd7e2ccap-30)                    \
    X(-0x1.23bc5d14c290ep-29) X(0x1.ab940145bc9e7p-26) X(-0x1.af36090396a08p-26)                   \
    X(-0x1.8593956c3dab9p-23) X(0x1.5fa8ea53ac0f6p-21) X(-0x1.7f5af6db51688p-23)                   \
    X(-0x1.3bfcef7f038e3p-18) X(0x1.d85c85bd0521cp-17) X(-0x1.57bcdafacc32ap-18)                   \
    X(-0x1.4a82a76fd5199p-14) X(0x1.066f4a46fe484p-12) X(-0x1.115545b183a47p-12)                   \
    X(-0x1.1c60ae8eb91b0p-11) X(0x1.6ecdc087ecc07p-9) X(-0x1.90e814ae8be86p-8)                     \
    X(0x1.1a89b9747126bp-7) X(-0x1.119da0ac9a2bep-7) X(0x1.64e3dcd478074p-8)                      \
    X(-0x1.1d8317122b5c0p-9) X(0x1.aab859b1f1d40p-12)
/* B22 first, as Horner takes them; the first X starts the chain */
#define AMP_TANH_TOP 40.0

static inline double amp_erf_small(double x)
{
    const double t = x * x;
    double p = fma(AMP_ERF_A9, t, AMP_ERF_A8);
    p = fma(p, t, AMP_ERF_A7);
    p = fma(p, t, AMP_ERF_A6);
    p = fma(p, t, AMP_ERF_A5);
    p = fma(p, t, AMP_ERF_A4);
    p = fma(p, t, AMP_ERF_A3);
    p = fma(p, t, AMP_ERF_A2);
    p = fma(p, t, AMP_ERF_A1);
    p = fma(p, t, AMP_ERF_A0);
    return x * p;
}

/* 1 - erfc(min(a, 4)) for a = |x| >= 1, unsigned */
static inline double amp_erf_large(double a)
{
    const double u = (a < AMP_ERF_B_TOP ? a : AMP_ERF_B_TOP) - AMP_ERF_B_CENTER;
    double p = 0;
    int first = 1;
#define AMP_ERF_HORNER(c)                                                                         \
    if (first) {                                                                                  \
        p = c;                                                                                    \
        first = 0;                                                                                \
    } else                                                                                        \
        p = fma(p, u, c);
    AMP_ERF_B_COEFFS(AMP_ERF_HORNER)
#undef AMP_ERF_HORNER
    return 1.0 - p;
}

static inline float amp_erff(float xf)
{
    const double x = xf, a = fabs(x);
    if (xf != xf)
        return xf;
    if (a < 1.0)
        return (float)amp_erf_small(x);
    return (float)copysign(amp_erf_large(a), x);
}

/* expm1(r) for amp_expf's reduced argument r: r (1 + r/2 + ... + r^10/11!) */
static inline double amp_expm1_reduced(double r)
{
    double p = fma(AMP_EXPF_C11, r, AMP_EXPF_C10);
    p = fma(p, r, AMP_EXPF_C9);
    p = fma(p, r, AMP_EXPF_C8);
    p = fma(p, r, AMP_EXPF_C7);
    p = fma(p, r, AMP_EXPF_C6);
    p = fma(p, r, AMP_EXPF_C5);
    p = fma(p, r, AMP_EXPF_C4);
    p = fma(p, r, AMP_EXPF_C3);
    p = fma(p, r, AMP_EXPF_C2);
    p = fma(p, r, 1.0);
    return p * r;
}

static inline float amp_tanhf(float xf)
{
    double z, k, r, s, e;
    if (xf != xf)
        return xf;
    z = 2.0 * fabs((double)xf);
    z = z < AMP_TANH_TOP ? z : AMP_TANH_TOP;
    k = nearbyint(z * AMP_EXPF_INV_LN2);
    r = fma(-k, AMP_EXPF_LN2_HI, z);
    r = fma(-k, AMP_EXPF_LN2_LO, r);
    s = amp_exp2i((int)k);
    e = fma(amp_expm1_reduced(r), s, s - 1.0);
    return (float)copysign(e / (e + 2.0), (double)xf);
}

/* The same names for the f64 instantiations: libm's. */
static inline double amp_erf(double x) { return erf(x); }
static inline double amp_tanh(double x) { return tanh(x); }

/* ---- the row kernels' order of addition ----------------------------------------
 * A row's element d goes to lane d % AMP_ROW_LANES, each lane adding in
 * row order from +0; the lanes then fold in halves, s[j] = s[j] + s[j + h]
 * for h = 8, 4, 2, 1 (AVX-512: one vector, folded by halves; AVX2: two
 * vectors, added, then folded).  A row's maximum is taken the same way:
 * m[j] = v > m[j] ? v : m[j] per lane from -inf, then the lanes in order
 * 0..15 by the same rule (so NaN is passed over and, of +0 and -0, the
 * first met wins, in this order). */
#define AMP_ROW_LANES 16
#define AMP_ROW_FOLD(s)                                                                           \
    do {                                                                                          \
        for (int h_ = AMP_ROW_LANES / 2; h_ >= 1; h_ /= 2)                                        \
            for (int j_ = 0; j_ < h_; j_++)                                                       \
                (s)[j_] = (s)[j_] + (s)[j_ + h_];                                                 \
    } while (0)

#endif
