/*
 * test_elementwise.c - the kernels of amprt/elementwise.h (unary ops, unary
 * ops with parameters, maximum/atan2/pow, where, addcmul, addcdiv, fill,
 * pad, copy_strided) in every dtype, against oracles.
 *
 * Conventions are test_kernels.c's:
 *  - Inputs are generated, rounded into the storage dtype and read back, so
 *    the oracle sees exactly the kernel's inputs. The oracle is computed in
 *    long double (64-bit significand here), well below the error of an f64
 *    kernel.
 *  - Error bound: an output y of dtype T is correct if
 *        |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 *    with u_T the unit roundoff of T (2^-53 f64, 2^-24 f32, 2^-8 bf16,
 *    2^-11 f16), floor_T half T's smallest subnormal, and acc the error of
 *    the evaluation in the compute type (f64 for f64, f32 otherwise), which
 *    each op derives from its formula in units of u_acc (2^-53 or 2^-24):
 *    a libm call counts 2 ulps (4 u_acc relative), each other operation one
 *    rounding, propagated through the derivative where the formula
 *    amplifies it. An f64 kernel that computed in f32 misses by 2^29.
 *  - Every kernel runs through the public table and amp_ref_kernel_table;
 *    both must meet the bound, and when the active set is "ref" they must
 *    agree bit for bit.
 *  - Buffers are malloc'ed with exactly their element count, so that
 *    AddressSanitizer builds catch any access past an edge shape.
 * The data movement kernels (where, fill, pad, copy_strided) are exact: the
 * oracle is the definition, and their outputs are compared bit for bit.
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_REAL long double
#include "kernel_test_util.h"

static size_t bytes_of(const tensor *x)
{
    return x->n * amp_dtype_size(x->t);
}

/* Element i becomes a signalling NaN (quiet bit clear, payload 1). */
static void set_signalling_nan(tensor *x, size_t i)
{
    uint64_t b64 = 0x7ff0000000000001ull;
    uint32_t b32 = 0x7f800001u;
    uint16_t b16 = x->t == AMP_BF16 ? 0x7f81u : 0x7c01u;
    void *dst = (char *)x->data + i * amp_dtype_size(x->t);
    if (x->t == AMP_F64)
        memcpy(dst, &b64, 8);
    else if (x->t == AMP_F32)
        memcpy(dst, &b32, 4);
    else
        memcpy(dst, &b16, 2);
}

/* Largest finite value of the compute type: intermediates beyond it
 * overflow to infinity in the kernel, not in the long double oracle. */
static long double acc_max(amp_dtype t)
{
    return t == AMP_F64 ? (long double)DBL_MAX : (long double)FLT_MAX;
}

/* expect_close with the input in the message; a non-finite acc counts as
 * 0. */
static void expect_close_input(const tensor *y, size_t i, long double oracle, long double acc, const char *what,
                               long double input)
{
    long double v = get(y, i);
    if (!close_to(y->t, v, oracle, finite_or_zero(acc)))
        fail_msg("%s %s [%zu] (input %.21Lg): got %.21Lg, oracle %.21Lg, bound %.3Lg", what,
                 amp_dtype_name(y->t), i, input, v, oracle,
                 unit_roundoff(y->t) * fabsl(oracle) + acc + underflow_floor(y->t));
}

/* IEEE special values and boundaries of dtype t, then `extra` values. */
#define NSPECIAL 14

static void special_values(amp_dtype t, double *v)
{
    const double s[NSPECIAL] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.0, -1.0, 0.5, -1.5,
                                 (double)(underflow_floor(t) * 2.0L), (double)max_finite(t),
                                 -(double)max_finite(t), 3.0 };
    memcpy(v, s, sizeof s);
}

/* n values: random in [lo, hi], and when n allows, the special values
 * last. */
static tensor test_input(amp_dtype t, size_t n, double lo, double hi)
{
    double s[NSPECIAL];
    size_t n_random = n >= 2 * NSPECIAL ? n - NSPECIAL : n;
    tensor x = tensor_new(t, n);
    special_values(t, s);
    for (size_t i = 0; i < n_random; i++)
        set(&x, i, uniform(lo, hi));
    for (size_t i = n_random; i < n; i++)
        set(&x, i, s[i - n_random]);
    return x;
}

/* ---- Oracles ------------------------------------------------------------ */

/* erfinv in long double, by bisection (independent of the kernel's
 * Halley iteration): erf(x) = a for a <= 1/2, else erfc(x) = 1 - a, which
 * is exact and keeps the tail's digits. */
static long double erfinv_oracle(long double y)
{
    long double a = fabsl(y), lo = 0.0L, hi = 10.0L;
    if (isnan(y) || a > 1.0L)
        return NAN;
    if (a == 1.0L)
        return copysignl(INFINITY, y);
    if (a == 0.0L)
        return y;
    if (a < 1e-12L) /* below bisection's reach: the series, whose next term is a^5 */
        return y * 0.886226925452758013649083741671L * (1.0L + 0.261799387799149436538553615273L * a * a);
    for (int i = 0; i < 200 && lo < hi; i++) {
        long double mid = (lo + hi) / 2.0L;
        int below = a <= 0.5L ? erfl(mid) < a : erfcl(mid) > 1.0L - a;
        if (mid == lo || mid == hi)
            break;
        if (below)
            lo = mid;
        else
            hi = mid;
    }
    return copysignl((lo + hi) / 2.0L, y);
}

/* PyTorch's constants, exactly (the kernel rounds them to its type; the
 * bounds below charge that rounding). */
#define SQRT1_2 0.707106781186547524400844362104849039L
#define GELU_BETA 0.797884560802865355879892119868763737L /* sqrt(2 / pi) */
#define GELU_KAPPA 0.044715L
#define TWO_OVER_SQRT_PI 1.12837916709551257389615890312154517L
#define SELU_ALPHA 1.6732632423543772848170429916717L
#define SELU_SCALE 1.0507009873554804934193349852946L

/* ---- Unary ops ---------------------------------------------------------- */

#define UNARY_ENUMERATOR(op, X, T, CT) U_##op,
enum { AMP_UNARY_OPS(UNARY_ENUMERATOR, ~, ~, ~) N_UNARY };
#define UNARY_NAME(op, X, T, CT) #op,
static const char *const unary_name[] = { AMP_UNARY_OPS(UNARY_NAME, ~, ~, ~) };

static void run_unary(const amp_kernel_table *k, int op, amp_dtype t, size_t n, const void *x, void *y)
{
    switch (op) {
#define UNARY_CALL(name, X, T, CT)                                                                \
    case U_##name: KCALL(k, t, name, n, x, y); break;
        AMP_UNARY_OPS(UNARY_CALL, ~, ~, ~)
#undef UNARY_CALL
    default: fail_msg("no call for unary op %d", op);
    }
}

/* Random inputs where the op is interesting (overflow and underflow of the
 * narrower types included). */
static void unary_range(int op, double *lo, double *hi)
{
    *lo = -4.0;
    *hi = 4.0;
    switch (op) {
    case U_exp: *lo = -110.0; *hi = 110.0; break;
    case U_log: case U_log10: case U_log2: case U_sqrt: case U_rsqrt: *lo = 0.0; *hi = 100.0; break;
    case U_log1p: *lo = -0.999; *hi = 50.0; break;
    case U_acos: case U_asin: case U_erfinv: *lo = -1.0; *hi = 1.0; break;
    case U_cosh: case U_sinh: *lo = -95.0; *hi = 95.0; break;
    case U_tan: *lo = -10.0; *hi = 10.0; break;
    case U_expm1: *lo = -20.0; *hi = 90.0; break;
    case U_sigmoid: case U_silu: *lo = -120.0; *hi = 120.0; break;
    case U_gelu: case U_gelu_tanh: *lo = -10.0; *hi = 10.0; break;
    case U_hardswish: case U_hardsigmoid: *lo = -8.0; *hi = 8.0; break; /* all three pieces */
    case U_selu: *lo = -20.0; *hi = 10.0; break;
    case U_mish: *lo = -20.0; *hi = 20.0; break; /* below, exp(x) is subnormal in f32 */
    case U_softsign: *lo = -50.0; *hi = 50.0; break;
    case U_logsigmoid: *lo = -40.0; *hi = 40.0; break;
    case U_sin: case U_cos: case U_atan: *lo = -10.0; *hi = 10.0; break;
    case U_erfc: *lo = -4.0; *hi = 9.0; break; /* erfc(9) is still normal in f32 */
    case U_sign: case U_floor: case U_ceil: case U_round: case U_trunc: case U_frac: *lo = -6.0; *hi = 6.0; break;
    default: break;
    }
}

/* The exact result, and into *acc the compute type's error (unit u). */
static long double unary_oracle(int op, long double x, long double u, long double amax, long double *acc)
{
    long double o, lib;
    switch (op) {
    case U_exp: o = expl(x); break;
    case U_log: o = logl(x); break;
    case U_sqrt: o = sqrtl(x); break;
    case U_rsqrt: o = 1.0L / sqrtl(x); break;
    case U_reciprocal: o = 1.0L / x; break;
    case U_sigmoid: o = 1.0L / (1.0L + expl(-x)); break;
    case U_tanh: o = tanhl(x); break;
    case U_acos: o = acosl(x); break;
    case U_asin: o = asinl(x); break;
    case U_cosh: o = coshl(x); break;
    case U_sinh: o = sinhl(x); break;
    case U_tan: o = tanl(x); break;
    case U_erfinv: o = erfinv_oracle(x); break;
    case U_expm1: o = expm1l(x); break;
    case U_log10: o = log10l(x); break;
    case U_log2: o = log2l(x); break;
    case U_log1p: o = log1pl(x); break;
    case U_abs: o = fabsl(x); break;
    case U_gelu: o = x * 0.5L * (1.0L + erfl(x * SQRT1_2)); break;
    case U_gelu_tanh: o = 0.5L * x * (1.0L + tanhl(GELU_BETA * (x + GELU_KAPPA * x * x * x))); break;
    case U_silu: o = x / (1.0L + expl(-x)); break;
    case U_hardswish: {
        /* x r / 6 in PyTorch's order: x r overflows the compute type for
         * the largest x, giving inf there, as PyTorch's kernel does */
        long double r = fminl(fmaxl(x + 3.0L, 0.0L), 6.0L);
        o = fabsl(x * r) > amax ? copysignl(INFINITY, x) : x * r / 6.0L;
        break;
    }
    case U_hardsigmoid: /* NaN stays NaN (fmaxl would drop it) */
        o = x + 3.0L < 0.0L ? 0.0L : x + 3.0L > 6.0L ? 1.0L : (x + 3.0L) / 6.0L;
        break;
    case U_selu: o = x <= 0.0L ? (expl(x) - 1.0L) * (SELU_ALPHA * SELU_SCALE) : x * SELU_SCALE; break;
    case U_mish: o = x * tanhl(log1pl(expl(x))); break;
    case U_softsign: o = x / (fabsl(x) + 1.0L); break;
    case U_logsigmoid: o = (x < 0.0L ? x : 0.0L) - log1pl(expl(-fabsl(x))); break;
    case U_sin: o = sinl(x); break;
    case U_cos: o = cosl(x); break;
    case U_atan: o = atanl(x); break;
    case U_erf: o = erfl(x); break;
    case U_erfc: o = erfcl(x); break;
    case U_sign: o = x > 0.0L ? 1.0L : x < 0.0L ? -1.0L : 0.0L; break; /* NaN gives 0, as PyTorch */
    case U_floor: o = floorl(x); break;
    case U_ceil: o = ceill(x); break;
    case U_round: o = nearbyintl(x); break;
    case U_trunc: o = truncl(x); break;
    case U_frac: o = x - truncl(x); break;
    default: fail_msg("no oracle for unary op %d", op); return 0;
    }
    lib = 4.0L * u * fabsl(o); /* one libm call, or a couple of roundings */
    switch (op) {
    case U_abs: case U_sign: case U_floor: case U_ceil: case U_round: case U_trunc: case U_frac:
        *acc = 0.0L; /* exact */
        break;
    case U_reciprocal: case U_sqrt: *acc = u * fabsl(o); break;
    case U_sigmoid: case U_silu:
        /* exp, 1 +, the division: 4 roundings relative to the result; and
         * where exp(-x) overflows the compute type the kernel returns 0,
         * off by the whole (tiny) result, as PyTorch's formula does. */
        *acc = 2.0L * lib + (expl(-x) > amax ? fabsl(o) : 0.0L);
        break;
    case U_erfinv:
        /* Halley's iteration ends within a few ulps; the residual's own
         * rounding (an ulp of erf or erfc) divided by the derivative adds
         * a few more relative to x. */
        *acc = 2.0L * lib;
        break;
    case U_gelu: {
        /* x / sqrt 2 (two roundings, constant included) moves erf by
         * erf'(z) |z| 2u; erf itself 2 ulps; 1 + erf one rounding; the two
         * products two more. */
        long double z = x * SQRT1_2, e = erfl(z);
        *acc = 2.0L * u *
               (fabsl(x) / 2.0L * (2.0L * fabsl(z) * TWO_OVER_SQRT_PI * expl(-z * z) + 4.0L * fabsl(e) + 1.0L + fabsl(e)) +
                2.0L * fabsl(o));
        break;
    }
    case U_gelu_tanh: {
        /* inner = beta (x + kappa x^3): x^3 two roundings, kappa and beta
         * rounded, three more operations, each relative to its term; tanh
         * passes the error on scaled by 1 - tanh^2; then as gelu. */
        long double inner = GELU_BETA * (x + GELU_KAPPA * x * x * x), th = tanhl(inner);
        long double inner_err = GELU_BETA * (3.0L * fabsl(x) + 6.0L * GELU_KAPPA * fabsl(x * x * x));
        *acc = 2.0L * u * (fabsl(x) / 2.0L * ((1.0L - th * th) * inner_err + 4.0L * fabsl(th) + 1.0L + fabsl(th)) +
                           2.0L * fabsl(o));
        break;
    }
    case U_hardsigmoid: *acc = u * (fabsl(x) + 3.0L) / 6.0L + u * fabsl(o); break; /* x + 3, then / 6 */
    case U_selu:
        /* x <= 0: exp's 2 ulps and the subtraction's rounding, times the
         * rounded alpha scale; x > 0: the rounded scale and the product */
        *acc = x <= 0.0L ? u * SELU_ALPHA * SELU_SCALE * (4.0L * expl(x) + fabsl(expl(x) - 1.0L)) + 3.0L * u * fabsl(o)
                         : 2.0L * u * fabsl(o);
        break;
    case U_mish: {
        /* exp's error reaches softplus damped by sigmoid; softplus's 2 ulps
         * and exp's reach tanh damped by 1 - tanh^2; tanh's 2 ulps; the
         * product */
        long double sp = log1pl(expl(x)), th = tanhl(sp);
        *acc = u * fabsl(x) * ((1.0L - th * th) * 4.0L * (1.0L + sp) + 4.0L * fabsl(th)) + u * fabsl(o);
        break;
    }
    case U_softsign: *acc = 2.0L * u * fabsl(o); break;
    case U_logsigmoid: {
        long double z = expl(-fabsl(x));
        *acc = u * (4.0L * z + 4.0L * log1pl(z)) + u * fabsl(o);
        break;
    }
    default: *acc = lib; break;
    }
    return o;
}

static void test_unary(void **state)
{
    static const size_t sizes[] = { 0, 1, 7, 301 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int op = 0; op < N_UNARY; op++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                amp_dtype t = dtypes[d];
                double lo, hi;
                tensor x, y[NTABLES], in_place;
                unary_range(op, &lo, &hi);
                x = test_input(t, sizes[s], lo, hi);
                in_place = tensor_copy(&x);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, x.n);
                    run_unary(tables[e], op, t, x.n, x.data, y[e].data);
                    for (size_t i = 0; i < x.n; i++) {
                        long double acc, in = get(&x, i);
                        long double o = unary_oracle(op, in, u_acc(t), acc_max(t), &acc);
                        expect_close_input(&y[e], i, o, acc, unary_name[op], in);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                run_unary(tables[0], op, t, x.n, in_place.data, in_place.data); /* y == x */
                assert_memory_equal(in_place.data, y[0].data, bytes_of(&x));
                run_unary(tables[1], op, t, 0, NULL, NULL); /* nothing is dereferenced */
                tensor_free(&x);
                tensor_free(&in_place);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* Signs and hand-checked values (PyTorch 1.13 on CPU gives the same). */
static void test_unary_exact_cases(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_new(t, 4), y = tensor_new(t, 4);
        set(&x, 0, -NAN);
        set(&x, 1, -0.0);
        set(&x, 2, 1.0);
        set(&x, 3, -1.0);
        KCALL(&public_table, t, abs, 4, x.data, y.data);
        for (size_t i = 0; i < 4; i++)
            assert_false(signbit(get(&y, i))); /* abs clears the sign, of NaN too */
        KCALL(&public_table, t, erfinv, 4, x.data, y.data);
        assert_true(isnan(get(&y, 0)));
        assert_true(get(&y, 1) == 0.0L && signbit(get(&y, 1)));
        assert_true(isinf(get(&y, 2)) && get(&y, 2) > 0);
        assert_true(isinf(get(&y, 3)) && get(&y, 3) < 0);
        KCALL(&public_table, t, sqrt, 4, x.data, y.data);
        assert_true(get(&y, 1) == 0.0L && signbit(get(&y, 1)));
        assert_true(isnan(get(&y, 3)));
        KCALL(&public_table, t, rsqrt, 4, x.data, y.data);
        assert_true(isinf(get(&y, 1)) && get(&y, 1) < 0); /* 1 / sqrt(-0) */
        KCALL(&public_table, t, sign, 4, x.data, y.data);
        assert_true(get(&y, 0) == 0.0L && get(&y, 1) == 0.0L && !signbit(get(&y, 1))); /* NaN and -0 give +0 */
        KCALL(&public_table, t, floor, 4, x.data, y.data);
        assert_true(get(&y, 1) == 0.0L && signbit(get(&y, 1)));
        KCALL(&public_table, t, frac, 4, x.data, y.data);
        assert_true(get(&y, 1) == 0.0L && !signbit(get(&y, 1))); /* -0 - -0 is +0 */
        set(&x, 0, -0.5);
        set(&x, 1, 0.5);
        set(&x, 2, 1.5);
        set(&x, 3, -2.5);
        KCALL(&public_table, t, round, 4, x.data, y.data); /* ties to even */
        assert_true(get(&y, 0) == 0.0L && signbit(get(&y, 0)));
        assert_true(get(&y, 1) == 0.0L && !signbit(get(&y, 1)));
        assert_true(get(&y, 2) == 2.0L && get(&y, 3) == -2.0L);
        tensor_free(&x);
        tensor_free(&y);
    }
}

/* ---- Unary ops with parameters ----------------------------------------- */

#define PARAM_ENUMERATOR(op, X, T, CT) P_##op,
enum { AMP_UNARY_PARAM_OPS(PARAM_ENUMERATOR, ~, ~, ~) N_PARAM };
#define PARAM_NAME(op, X, T, CT) #op,
static const char *const param_name[] = { AMP_UNARY_PARAM_OPS(PARAM_NAME, ~, ~, ~) };

static void run_param(const amp_kernel_table *k, int op, amp_dtype t, size_t n, const void *x, double p0,
                      double p1, void *y)
{
    switch (op) {
#define PARAM_CALL(name, X, T, CT)                                                                \
    case P_##name: KCALL(k, t, name, n, x, p0, p1, y); break;
        AMP_UNARY_PARAM_OPS(PARAM_CALL, ~, ~, ~)
#undef PARAM_CALL
    default: fail_msg("no call for op %d", op);
    }
}

typedef struct {
    int op;
    double p0, p1; /* f32 values, as the code generator passes them */
    double lo, hi;
} param_case;

static const param_case param_cases[] = {
    { P_softplus, 1.0, 20.0, -40.0, 40.0 },
    { P_softplus, 2.0, 5.0, -10.0, 10.0 },
    { P_softplus, 0.5, 20.0, -60.0, 60.0 },
    { P_clamp, -1.0, 1.0, -3.0, 3.0 },
    { P_clamp, -INFINITY, 0.5, -3.0, 3.0 },
    { P_clamp, 0.25, INFINITY, -3.0, 3.0 },
    { P_clamp, 2.0, 1.0, -3.0, 3.0 },        /* min > max: every element is max */
    { P_clamp, NAN, 1.0, -3.0, 3.0 },        /* a NaN bound is ignored, as in PyTorch */
    { P_clamp, 0.0, INFINITY, -1.0, 1.0 },
    { P_pow_scalar, 2.0, 0.0, -4.0, 4.0 },
    { P_pow_scalar, 3.0, 0.0, -4.0, 4.0 },
    { P_pow_scalar, -2.0, 0.0, -4.0, 4.0 },
    { P_pow_scalar, 0.5, 0.0, 0.0, 9.0 },
    { P_pow_scalar, -0.5, 0.0, 0.0, 9.0 },
    { P_pow_scalar, -1.0, 0.0, -4.0, 4.0 },
    { P_pow_scalar, 1.5, 0.0, 0.0, 9.0 },
    { P_pow_scalar, (double)0.3f, 0.0, -1.0, 9.0 },
    { P_pow_scalar, -7.0, 0.0, -3.0, 3.0 },
    { P_rpow_scalar, 2.0, 0.0, -30.0, 30.0 },
    { P_rpow_scalar, 0.5, 0.0, -30.0, 30.0 },
    { P_rpow_scalar, 10.0, 0.0, -8.0, 8.0 },
    { P_rpow_scalar, -2.0, 0.0, -5.0, 5.0 },
    { P_hardtanh, -1.0, 1.0, -3.0, 3.0 },    /* hardtanh's defaults */
    { P_hardtanh, 0.0, 6.0, -8.0, 8.0 },     /* relu6 */
    { P_hardtanh, 2.0, 1.0, -3.0, 3.0 },     /* min > max: max, as clamp */
    { P_leaky_relu, (double)0.01f, 0.0, -3.0, 3.0 },
    { P_leaky_relu, -0.5, 0.0, -3.0, 3.0 },  /* a negative slope */
    { P_leaky_relu, 0.0, 0.0, -3.0, 3.0 },
    { P_elu, 1.0, 1.0, -20.0, 5.0 },         /* elu */
    { P_elu, 2.0, 0.5, -20.0, 5.0 },         /* celu alpha 2 */
    { P_elu, (double)1.5f, (double)(float)(1.0 / 1.5), -20.0, 5.0 }, /* celu alpha 1.5, 1/alpha rounded */
    { P_elu, -1.0, 1.0, -20.0, 5.0 },        /* a negative alpha */
    { P_fmod_scalar, 1.5, 0.0, -10.0, 10.0 },
    { P_fmod_scalar, -0.75, 0.0, -10.0, 10.0 }, /* the divisor's sign does not matter */
    { P_remainder_scalar, 1.5, 0.0, -10.0, 10.0 },
    { P_remainder_scalar, -0.75, 0.0, -10.0, 10.0 }, /* the result takes the divisor's sign */
};

static long double param_oracle(const param_case *c, amp_dtype t, long double x, long double *acc)
{
    long double u = u_acc(t), p0 = c->p0, p1 = c->p1, o;
    *acc = 0.0L;
    switch (c->op) {
    case P_softplus: {
        /* The branch is part of PyTorch's definition and is taken on the
         * product as the kernel's type rounds it. */
        long double scaled = t == AMP_F64 ? (long double)((double)x * c->p0) : (long double)((float)x * (float)c->p0);
        long double bx = x * p0, l;
        if (scaled > p1) {
            *acc = 0.0L;
            return x;
        }
        l = log1pl(expl(bx));
        o = l / p0;
        /* rounding of beta x, moved by sigmoid <= 1; exp's 2 ulps moved by
         * e / (1 + e) <= 1; log1p's 2 ulps; the division. */
        *acc = u * (fabsl(bx) + 4.0L + 4.0L * fabsl(l)) / fabsl(p0) + 2.0L * u * fabsl(o);
        return o;
    }
    case P_clamp: case P_hardtanh:
        o = x;
        if (o < p0)
            o = p0;
        if (o > p1)
            o = p1;
        *acc = 0.0L;
        return o;
    case P_pow_scalar:
        /* PyTorch computes 0.5 and -0.5 through sqrt, which differs from
         * pow at -0 and -inf; elsewhere pow is the definition. */
        o = c->p0 == 0.5 ? sqrtl(x) : c->p0 == -0.5 ? 1.0L / sqrtl(x) : powl(x, p0);
        *acc = 4.0L * u * fabsl(o);
        return o;
    case P_rpow_scalar:
        o = powl(p0, x);
        *acc = 4.0L * u * fabsl(o);
        return o;
    case P_leaky_relu:
        o = x > 0.0L ? x : x * p0;
        *acc = u * fabsl(o); /* the product */
        return o;
    case P_elu: {
        /* x p1 rounded moves exp by e u |x p1|; exp's 2 ulps; e - 1 and
         * the product one rounding each */
        long double e = expl(x * p1);
        if (!(x <= 0.0L))
            return x;
        o = (e - 1.0L) * p0;
        *acc = fabsl(p0) * u * (e * (fabsl(x * p1) + 4.0L) + fabsl(e - 1.0L)) + u * fabsl(o);
        return o;
    }
    case P_fmod_scalar:
        *acc = 0.0L;
        return fmodl(x, p0);
    case P_remainder_scalar:
        o = fmodl(x, p0);
        if (o != 0.0L && ((p0 < 0.0L) != (o < 0.0L)))
            o += p0;
        *acc = 2.0L * u * fabsl(o);
        return o;
    default: fail_msg("no oracle for op %d", c->op); return 0;
    }
}

static void test_unary_param(void **state)
{
    static const size_t sizes[] = { 0, 1, 7, 301 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof param_cases / sizeof param_cases[0]; ci++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                const param_case *c = &param_cases[ci];
                amp_dtype t = dtypes[d];
                tensor x = test_input(t, sizes[s], c->lo, c->hi);
                tensor y[NTABLES], in_place = tensor_copy(&x);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, x.n);
                    run_param(tables[e], c->op, t, x.n, x.data, c->p0, c->p1, y[e].data);
                    for (size_t i = 0; i < x.n; i++) {
                        long double acc, in = get(&x, i), o = param_oracle(c, t, in, &acc);
                        expect_close_input(&y[e], i, o, acc, param_name[c->op], in);
                        /* exact ops keep the sign of zero */
                        if (acc == 0.0L && o == 0.0L)
                            assert_true(!signbit(get(&y[e], i)) == !signbit(o));
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                run_param(tables[0], c->op, t, x.n, in_place.data, c->p0, c->p1, in_place.data);
                assert_memory_equal(in_place.data, y[0].data, bytes_of(&x));
                tensor_free(&x);
                tensor_free(&in_place);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* Cases checked against PyTorch 1.13 by hand: clamp keeps -0 and NaN,
 * softplus switches to x above the threshold and overflows to inf below a
 * threshold past exp's range, pow(x, 0.5) is sqrt. */
static void test_unary_param_torch_cases(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_new(t, 3), y = tensor_new(t, 3);
        set(&x, 0, -0.0);
        set(&x, 1, NAN);
        set(&x, 2, -INFINITY);
        KCALL(&public_table, t, clamp, 3, x.data, 0.0, INFINITY, y.data);
        assert_true(get(&y, 0) == 0.0L && signbit(get(&y, 0)));
        assert_true(isnan(get(&y, 1)));
        assert_true(get(&y, 2) == 0.0L && !signbit(get(&y, 2)));
        KCALL(&public_table, t, pow_scalar, 3, x.data, 0.5, 0.0, y.data);
        assert_true(get(&y, 0) == 0.0L && signbit(get(&y, 0))); /* C's pow gives +0 */
        assert_true(isnan(get(&y, 2)));                         /* C's pow gives +inf */
        KCALL(&public_table, t, pow_scalar, 3, x.data, -0.5, 0.0, y.data);
        assert_true(isinf(get(&y, 0)) && get(&y, 0) < 0);
        set(&x, 0, 100.0);
        KCALL(&public_table, t, softplus, 1, x.data, 1.0, 20.0, y.data);
        assert_true(get(&y, 0) == 100.0L);
        if (t != AMP_F64) {
            KCALL(&public_table, t, softplus, 1, x.data, 1.0, 200.0, y.data);
            assert_true(isinf(get(&y, 0))); /* exp(100) overflows f32 */
        }
        tensor_free(&x);
        tensor_free(&y);
    }
}

/* ---- maximum, atan2, pow, minimum, fmod, remainder --------------------- */

#define BINARY_ENUMERATOR(op, X, T, CT) B_##op,
enum { AMP_BINARY_EXTRA_OPS(BINARY_ENUMERATOR, ~, ~, ~) N_BINARY };
#define BINARY_NAME(op, X, T, CT) #op,
static const char *const binary_name[] = { AMP_BINARY_EXTRA_OPS(BINARY_NAME, ~, ~, ~) };

static void run_binary(const amp_kernel_table *k, int op, amp_dtype t, size_t n, const void *a, const void *b,
                       void *y)
{
    switch (op) {
#define BINARY_CALL(name, X, T, CT)                                                               \
    case B_##name: KCALL(k, t, name, n, a, b, y); break;
        AMP_BINARY_EXTRA_OPS(BINARY_CALL, ~, ~, ~)
#undef BINARY_CALL
    default: fail_msg("no call for op %d", op);
    }
}

static void run_binary_bcast(const amp_kernel_table *k, int op, amp_dtype t, int ndim, const int64_t *shape,
                             const void *a, const int64_t *as, const void *b, const int64_t *bs, void *y)
{
    switch (op) {
#define BINARY_CALL(name, X, T, CT)                                                               \
    case B_##name: KCALL(k, t, name##_bcast, ndim, shape, a, as, b, bs, y); break;
        AMP_BINARY_EXTRA_OPS(BINARY_CALL, ~, ~, ~)
#undef BINARY_CALL
    default: fail_msg("no call for op %d", op);
    }
}

static long double binary_oracle(int op, long double a, long double b, long double u, long double *acc)
{
    long double o;
    switch (op) {
    case B_maximum:
        *acc = 0.0L;
        if (isnan(a) || isnan(b))
            return NAN;
        if (a == b)
            return signbit(a) ? b : a;
        return a > b ? a : b;
    case B_atan2: o = atan2l(a, b); break;
    case B_pow: o = powl(a, b); break;
    case B_minimum:
        *acc = 0.0L;
        if (isnan(a) || isnan(b))
            return NAN;
        if (a == b)
            return signbit(a) ? a : b;
        return a < b ? a : b;
    case B_fmod:
        *acc = 0.0L; /* fmod is exact */
        return fmodl(a, b);
    case B_remainder:
        /* PyTorch's formula: fmod (exact), moved by b (one rounding) */
        o = fmodl(a, b);
        if (o != 0.0L && ((b < 0.0L) != (o < 0.0L)))
            o += b;
        *acc = 2.0L * u * fabsl(o);
        return o;
    default: fail_msg("no oracle for op %d", op); return 0;
    }
    *acc = 4.0L * u * fabsl(o);
    return o;
}

static void binary_operands(int op, amp_dtype t, size_t n, tensor *a, tensor *b)
{
    *a = tensor_random(t, n, op == B_pow ? 0.0 : -4.0, 4.0);
    *b = tensor_random(t, n, op == B_pow ? -12.0 : -4.0, op == B_pow ? 12.0 : 4.0);
}

/* Every pair of special values, in a grid. */
static void special_grid(amp_dtype t, tensor *a, tensor *b)
{
    double s[NSPECIAL];
    special_values(t, s);
    *a = tensor_new(t, NSPECIAL * NSPECIAL);
    *b = tensor_new(t, NSPECIAL * NSPECIAL);
    for (size_t i = 0; i < NSPECIAL; i++)
        for (size_t j = 0; j < NSPECIAL; j++) {
            set(a, i * NSPECIAL + j, s[i]);
            set(b, i * NSPECIAL + j, s[j]);
        }
}

static void check_binary(int op, const tensor *a, const tensor *b)
{
    amp_dtype t = a->t;
    size_t n = a->n;
    tensor y[NTABLES];
    for (int e = 0; e < NTABLES; e++) {
        y[e] = tensor_new(t, n);
        run_binary(tables[e], op, t, n, a->data, b->data, y[e].data);
        for (size_t i = 0; i < n; i++) {
            long double acc, o = binary_oracle(op, get(a, i), get(b, i), u_acc(t), &acc);
            expect_close_input(&y[e], i, o, acc, binary_name[op], get(a, i));
            if ((op == B_maximum || op == B_minimum || op == B_fmod) && o == 0.0L)
                assert_true(!signbit(get(&y[e], i)) == !signbit(o)); /* +0 > -0; fmod keeps a's sign */
        }
    }
    expect_public_equals_ref(&y[0], &y[1]);
    for (int which = 0; which < 2; which++) { /* y == a, then y == b */
        tensor in_place = tensor_copy(which ? b : a);
        run_binary(tables[0], op, t, n, which ? a->data : in_place.data, which ? in_place.data : b->data,
                   in_place.data);
        assert_memory_equal(in_place.data, y[0].data, bytes_of(a));
        tensor_free(&in_place);
    }
    tensor_free(&y[0]);
    tensor_free(&y[1]);
}

static void test_binary_extra(void **state)
{
    static const size_t sizes[] = { 0, 1, 7, 500 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int op = 0; op < N_BINARY; op++) {
            tensor a, b;
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                binary_operands(op, dtypes[d], sizes[s], &a, &b);
                check_binary(op, &a, &b);
                tensor_free(&a);
                tensor_free(&b);
            }
            special_grid(dtypes[d], &a, &b);
            check_binary(op, &a, &b);
            tensor_free(&a);
            tensor_free(&b);
        }
}

/* ---- Strided operands ------------------------------------------------- */

typedef struct {
    const char *what;
    int ndim;
    int64_t shape[8];
    int64_t stride[3][8]; /* up to three operands */
    size_t len[3];        /* elements each operand spans */
} strided_case;

static const strided_case strided_cases[] = {
    { "0-d scalars", 0, { 0 }, { { 0 }, { 0 }, { 0 } }, { 1, 1, 1 } },
    { "same shape", 2, { 3, 5 }, { { 5, 1 }, { 5, 1 }, { 5, 1 } }, { 15, 15, 15 } },
    { "row, column and full", 2, { 3, 4 }, { { 0, 1 }, { 1, 0 }, { 4, 1 } }, { 4, 3, 12 } },
    { "transposed and broadcast scalar", 2, { 3, 2 }, { { 1, 3 }, { 0, 0 }, { 2, 1 } }, { 6, 1, 6 } },
    { "one element", 1, { 1 }, { { 1 }, { 0 }, { 1 } }, { 1, 1, 1 } },
    { "odd 1-d", 1, { 13 }, { { 1 }, { 1 }, { 0 } }, { 13, 13, 1 } },
    { "a zero-size dim", 3, { 2, 0, 3 }, { { 0, 3, 1 }, { 0, 3, 1 }, { 0, 0, 0 } }, { 1, 1, 1 } },
    { "8 dims", 8, { 2, 1, 2, 3, 1, 2, 2, 2 },
      { { 48, 48, 24, 8, 8, 4, 2, 1 }, { 0, 0, 6, 2, 2, 1, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 1 } }, { 96, 12, 2 } },
};

static size_t shape_count(int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    return n;
}

/* The definition: flat output index -> multi-index (last dim fastest) ->
 * the operand's offset through its strides. */
static size_t offset_of(int ndim, const int64_t *shape, const int64_t *stride, size_t flat)
{
    int64_t rest = (int64_t)flat, off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        off += (rest % shape[d]) * stride[d];
        rest /= shape[d];
    }
    return (size_t)off;
}

static void test_binary_extra_bcast(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof strided_cases / sizeof strided_cases[0]; ci++)
            for (int op = 0; op < N_BINARY; op++) {
                const strided_case *c = &strided_cases[ci];
                amp_dtype t = dtypes[d];
                size_t n = shape_count(c->ndim, c->shape);
                tensor a, b, y[NTABLES];
                binary_operands(op, t, c->len[0], &a, &b);
                tensor_free(&b);
                b = tensor_random(t, c->len[1], op == B_pow ? -12.0 : -4.0, op == B_pow ? 12.0 : 4.0);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, n);
                    run_binary_bcast(tables[e], op, t, c->ndim, c->shape, a.data, c->stride[0], b.data,
                                     c->stride[1], y[e].data);
                    for (size_t i = 0; i < n; i++) {
                        long double x0 = get(&a, offset_of(c->ndim, c->shape, c->stride[0], i));
                        long double x1 = get(&b, offset_of(c->ndim, c->shape, c->stride[1], i));
                        long double acc, o = binary_oracle(op, x0, x1, u_acc(t), &acc);
                        expect_close_input(&y[e], i, o, acc, c->what, x0);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                tensor_free(&a);
                tensor_free(&b);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* ---- addcmul, addcdiv -------------------------------------------------- */

static void test_addcmul_addcdiv(void **state)
{
    static const double values[] = { 0.5, -2.0, (double)0.3f, 0.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof strided_cases / sizeof strided_cases[0]; ci++)
            for (size_t vi = 0; vi < sizeof values / sizeof values[0]; vi++)
                for (int divide = 0; divide < 2; divide++) {
                    const strided_case *c = &strided_cases[ci];
                    amp_dtype t = dtypes[d];
                    double value = values[vi];
                    size_t n = shape_count(c->ndim, c->shape);
                    tensor x = tensor_random(t, c->len[0], -4.0, 4.0), t1 = tensor_random(t, c->len[1], -4.0, 4.0);
                    tensor t2 = tensor_random(t, c->len[2], 0.25, 4.0), y[NTABLES];
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_new(t, n);
                        if (divide)
                            KCALL(tables[e], t, addcdiv, c->ndim, c->shape, x.data, c->stride[0], t1.data,
                                  c->stride[1], t2.data, c->stride[2], value, y[e].data);
                        else
                            KCALL(tables[e], t, addcmul, c->ndim, c->shape, x.data, c->stride[0], t1.data,
                                  c->stride[1], t2.data, c->stride[2], value, y[e].data);
                        for (size_t i = 0; i < n; i++) {
                            long double x0 = get(&x, offset_of(c->ndim, c->shape, c->stride[0], i));
                            long double v1 = get(&t1, offset_of(c->ndim, c->shape, c->stride[1], i));
                            long double v2 = get(&t2, offset_of(c->ndim, c->shape, c->stride[2], i));
                            long double term = divide ? value * v1 / v2 : value * v1 * v2, o = x0 + term;
                            /* two roundings in the term, one in the sum */
                            long double acc = u_acc(t) * (2.0L * fabsl(term) + fabsl(o));
                            expect_close_input(&y[e], i, o, acc, divide ? "addcdiv" : "addcmul", x0);
                        }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    tensor_free(&x);
                    tensor_free(&t1);
                    tensor_free(&t2);
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                }
}

/* ---- where ---------------------------------------------------------------- */

static void test_where(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof strided_cases / sizeof strided_cases[0]; ci++) {
            const strided_case *c = &strided_cases[ci];
            amp_dtype t = dtypes[d];
            size_t n = shape_count(c->ndim, c->shape), size = amp_dtype_size(t);
            /* cond uses the first operand's layout, a the second, b the third */
            uint8_t *cond = malloc(c->len[0]);
            tensor a = test_input(t, c->len[1], -4.0, 4.0), b = test_input(t, c->len[2], -4.0, 4.0);
            tensor y[NTABLES];
            assert_non_null(cond);
            for (size_t i = 0; i < c->len[0]; i++)
                cond[i] = (uint8_t)(rng_next() >> 63);
            set_signalling_nan(&b, 0); /* must arrive bit for bit, not quieted */
            for (int e = 0; e < NTABLES; e++) {
                const void *pa = a.data, *pb = b.data;
                y[e] = tensor_new(t, n);
                KCALL(tables[e], t, where, c->ndim, c->shape, cond, c->stride[0], pa, c->stride[1], pb,
                      c->stride[2], y[e].data);
                for (size_t i = 0; i < n; i++) {
                    int pick = cond[offset_of(c->ndim, c->shape, c->stride[0], i)];
                    const char *src = pick ? (const char *)pa + offset_of(c->ndim, c->shape, c->stride[1], i) * size
                                           : (const char *)pb + offset_of(c->ndim, c->shape, c->stride[2], i) * size;
                    if (memcmp((const char *)y[e].data + i * size, src, size) != 0)
                        fail_msg("where %s %s [%zu]: not the bits of %s", amp_dtype_name(t), c->what, i,
                                 pick ? "a" : "b");
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            free(cond);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- fill ------------------------------------------------------------------ */

static void test_fill(void **state)
{
    static const double values[] = { (double)0.3f, -0.0, INFINITY, NAN, 1e10, 1e-30, 65520.0 };
    static const size_t sizes[] = { 0, 1, 9 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t vi = 0; vi < sizeof values / sizeof values[0]; vi++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int e = 0; e < NTABLES; e++) {
                    amp_dtype t = dtypes[d];
                    tensor y = tensor_random(t, sizes[s], 5.0, 6.0), want = tensor_new(t, 1);
                    size_t size = amp_dtype_size(t);
                    set(&want, 0, values[vi]); /* the value rounded to T once, via f32 as PyTorch does */
                    KCALL(tables[e], t, fill, y.n, values[vi], y.data);
                    for (size_t i = 0; i < y.n; i++)
                        if (memcmp((char *)y.data + i * size, want.data, size) != 0)
                            fail_msg("fill %s %g [%zu]", amp_dtype_name(t), values[vi], i);
                    tensor_free(&y);
                    tensor_free(&want);
                }
}

/* ---- pad ------------------------------------------------------------------ */

typedef struct {
    const char *what;
    int ndim;
    int64_t in_shape[4], before[4], after[4];
    int mode;
} pad_case;

static const pad_case pad_cases[] = {
    { "constant 1-d", 1, { 5 }, { 2 }, { 3 }, AMP_PAD_CONSTANT },
    { "reflect 1-d", 1, { 5 }, { 3 }, { 2 }, AMP_PAD_REFLECT },
    { "replicate 1-d", 1, { 5 }, { 4 }, { 6 }, AMP_PAD_REPLICATE },
    { "constant crop both sides", 1, { 6 }, { -2 }, { -1 }, AMP_PAD_CONSTANT },
    { "reflect crop one side", 1, { 5 }, { -1 }, { 3 }, AMP_PAD_REFLECT },
    { "replicate crop one side", 1, { 5 }, { 2 }, { -2 }, AMP_PAD_REPLICATE },
    { "constant 2-d, last dims", 3, { 2, 3, 4 }, { 0, 1, 2 }, { 0, 2, 1 }, AMP_PAD_CONSTANT },
    { "reflect 2-d", 3, { 2, 4, 5 }, { 0, 3, 2 }, { 0, 1, 4 }, AMP_PAD_REFLECT },
    { "replicate 3-d mixed signs", 4, { 1, 3, 4, 5 }, { 0, 2, -1, 3 }, { 0, -1, 2, -2 }, AMP_PAD_REPLICATE },
    { "reflect 3-d mixed signs", 4, { 2, 3, 4, 5 }, { 0, -1, 3, 2 }, { 0, 2, -2, 4 }, AMP_PAD_REFLECT },
    { "constant on an empty dim", 2, { 2, 0 }, { 1, 2 }, { 0, 1 }, AMP_PAD_CONSTANT },
    { "cropped to nothing", 2, { 2, 3 }, { 0, -2 }, { 0, -1 }, AMP_PAD_CONSTANT },
    { "0-d copies the element", 0, { 0 }, { 0 }, { 0 }, AMP_PAD_REFLECT },
    { "no padding", 2, { 3, 3 }, { 0, 0 }, { 0, 0 }, AMP_PAD_REPLICATE },
};

/* The input index that padded index i reads, by each mode's definition:
 * reflect mirrors periodically with period 2 (n - 1), replicate clamps,
 * constant reads nothing outside (-1). */
static int64_t pad_source(int mode, int64_t i, int64_t n)
{
    if (mode == AMP_PAD_REPLICATE)
        return i < 0 ? 0 : i >= n ? n - 1 : i;
    if (mode == AMP_PAD_REFLECT) {
        int64_t period = 2 * (n - 1), m;
        if (period == 0)
            return 0;
        m = ((i % period) + period) % period;
        return m < n ? m : period - m;
    }
    return i >= 0 && i < n ? i : -1;
}

static void test_pad(void **state)
{
    const double value = -3.25;
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof pad_cases / sizeof pad_cases[0]; ci++)
            for (int e = 0; e < NTABLES; e++) {
                const pad_case *c = &pad_cases[ci];
                amp_dtype t = dtypes[d];
                int64_t out_shape[4];
                size_t size = amp_dtype_size(t), out_n = 1;
                tensor x, y, fill_elem = tensor_new(t, 1);
                for (int k = 0; k < c->ndim; k++) {
                    out_shape[k] = c->in_shape[k] + c->before[k] + c->after[k];
                    out_n *= (size_t)(out_shape[k] > 0 ? out_shape[k] : 0);
                }
                x = test_input(t, shape_count(c->ndim, c->in_shape), -9.0, 9.0);
                y = tensor_new(t, out_n);
                set(&fill_elem, 0, value);
                KCALL(tables[e], t, pad, c->ndim, c->in_shape, c->before, c->after, c->mode, value, x.data, y.data);
                for (size_t i = 0; i < out_n; i++) {
                    /* multi-index of i in the output, mapped dim by dim */
                    int64_t rest = (int64_t)i, src = 0, in_stride = 1;
                    int constant = 0;
                    for (int k = c->ndim - 1; k >= 0; k--) {
                        int64_t s = pad_source(c->mode, rest % out_shape[k] - c->before[k], c->in_shape[k]);
                        rest /= out_shape[k];
                        if (s < 0)
                            constant = 1;
                        src += s * in_stride;
                        in_stride *= c->in_shape[k];
                    }
                    if (memcmp((char *)y.data + i * size,
                               constant ? (char *)fill_elem.data : (char *)x.data + src * (int64_t)size, size) != 0)
                        fail_msg("pad %s %s [%zu]", amp_dtype_name(t), c->what, i);
                }
                tensor_free(&x);
                tensor_free(&y);
                tensor_free(&fill_elem);
            }
}

/* F.pad(torch.arange(5.), ...) as PyTorch 1.13 prints it. */
static void test_pad_torch_cases(void **state)
{
    static const struct {
        int64_t before, after;
        int mode;
        size_t n;
        double want[10];
    } cases[] = {
        { 3, 2, AMP_PAD_REFLECT, 10, { 3, 2, 1, 0, 1, 2, 3, 4, 3, 2 } },
        { -1, 3, AMP_PAD_REFLECT, 7, { 1, 2, 3, 4, 3, 2, 1 } },
        { 2, -2, AMP_PAD_REPLICATE, 5, { 0, 0, 0, 1, 2 } },
        { -2, 3, AMP_PAD_REPLICATE, 6, { 2, 3, 4, 4, 4, 4 } },
        { 1, -3, AMP_PAD_CONSTANT, 3, { 9, 0, 1 } },
    };
    const int64_t in_shape[1] = { 5 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            amp_dtype t = dtypes[d];
            tensor x = tensor_new(t, 5), y = tensor_new(t, cases[ci].n);
            for (size_t i = 0; i < 5; i++)
                set(&x, i, (double)i);
            KCALL(&public_table, t, pad, 1, in_shape, &cases[ci].before, &cases[ci].after, cases[ci].mode, 9.0,
                  x.data, y.data);
            for (size_t i = 0; i < cases[ci].n; i++)
                assert_true(get(&y, i) == cases[ci].want[i]);
            tensor_free(&x);
            tensor_free(&y);
        }
}

/* ---- copy_strided ----------------------------------------------------------- */

typedef struct {
    const char *what;
    int ndim;
    int64_t shape[4], x_stride[4], y_stride[4];
    int64_t x_first, y_first; /* offset of index 0 in x, in y (for negative strides) */
    size_t x_len, y_len;
} copy_case;

static const copy_case copy_cases[] = {
    { "0-d: one element", 0, { 0 }, { 0 }, { 0 }, 0, 0, 1, 1 },
    { "contiguous", 1, { 7 }, { 1 }, { 1 }, 0, 0, 7, 7 },
    { "transpose 3x4", 2, { 4, 3 }, { 1, 4 }, { 3, 1 }, 0, 0, 12, 12 },
    { "flip (negative stride)", 1, { 5 }, { -1 }, { 1 }, 4, 0, 5, 5 },
    { "expand a row", 2, { 3, 4 }, { 0, 1 }, { 4, 1 }, 0, 0, 4, 12 },
    { "slice every other", 2, { 2, 3 }, { 12, 2 }, { 3, 1 }, 0, 0, 18, 6 },
    { "into a cat at column 2 of [2,5]", 2, { 2, 3 }, { 3, 1 }, { 5, 1 }, 0, 2, 6, 10 },
    { "permute 3-d, written flipped", 3, { 2, 3, 2 }, { 1, 4, 2 }, { -6, 2, 1 }, 0, 6, 12, 12 },
    { "zero-size dim", 2, { 0, 3 }, { 3, 1 }, { 3, 1 }, 0, 0, 1, 1 },
    { "attention heads [2,4,3,5] -> [2,3,4,5]", 4, { 2, 3, 4, 5 }, { 60, 5, 15, 1 }, { 60, 20, 5, 1 }, 0, 0, 120, 120 },
};

static void test_copy_strided(void **state)
{
    static const size_t elem_sizes[] = { 1, 2, 3, 4, 8, 16 };
    (void)state;
    for (size_t es = 0; es < sizeof elem_sizes / sizeof elem_sizes[0]; es++)
        for (size_t ci = 0; ci < sizeof copy_cases / sizeof copy_cases[0]; ci++)
            for (int e = 0; e < NTABLES; e++) {
                const copy_case *c = &copy_cases[ci];
                size_t size = elem_sizes[es], n = shape_count(c->ndim, c->shape);
                unsigned char *x = malloc(c->x_len * size), *y = malloc(c->y_len * size);
                unsigned char *before = malloc(c->y_len * size);
                assert_non_null(x);
                assert_non_null(y);
                assert_non_null(before);
                for (size_t i = 0; i < c->x_len * size; i++)
                    x[i] = (unsigned char)rng_next();
                for (size_t i = 0; i < c->y_len * size; i++)
                    y[i] = before[i] = (unsigned char)rng_next();
                tables[e]->copy_strided(size, c->ndim, c->shape, x + c->x_first * (int64_t)size, c->x_stride,
                                        y + c->y_first * (int64_t)size, c->y_stride);
                for (size_t i = 0; i < n; i++) {
                    int64_t rest = (int64_t)i, xo = c->x_first, yo = c->y_first;
                    for (int k = c->ndim - 1; k >= 0; k--) {
                        xo += (rest % c->shape[k]) * c->x_stride[k];
                        yo += (rest % c->shape[k]) * c->y_stride[k];
                        rest /= c->shape[k];
                    }
                    if (memcmp(y + yo * (int64_t)size, x + xo * (int64_t)size, size) != 0)
                        fail_msg("copy_strided %s, element size %zu, [%zu]", c->what, size, i);
                    memcpy(before + yo * (int64_t)size, x + xo * (int64_t)size, size);
                }
                /* and nothing else in y was touched */
                assert_memory_equal(y, before, c->y_len * size);
                free(x);
                free(y);
                free(before);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_unary_exact_cases),
        cmocka_unit_test(test_unary_param),
        cmocka_unit_test(test_unary_param_torch_cases),
        cmocka_unit_test(test_binary_extra),
        cmocka_unit_test(test_binary_extra_bcast),
        cmocka_unit_test(test_addcmul_addcdiv),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_fill),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_pad_torch_cases),
        cmocka_unit_test(test_copy_strided),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
