/*
 * kernel_test_util.h - what test_reduce.c, test_norm.c and test_losses.c
 * share: the two kernel tables, dtype-generic tensors, a fixed-seed RNG and
 * the error bound. The conventions are test_kernels.c's, extended to f64:
 *
 *  - Inputs are generated, rounded into the storage dtype and read back, so
 *    the oracle (long double, 64-bit significand on x86-64) sees exactly
 *    the kernel's inputs.
 *  - An output y of dtype T is correct if
 *        |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 *    with u_T T's unit roundoff (2^-53 f64, 2^-24 f32, 2^-8 bf16, 2^-11
 *    f16) for the one final rounding, acc the error of the evaluation in the
 *    compute type (each test derives it in units of u_acc(T): 2^-53 for f64,
 *    2^-24 for the others), and floor_T half T's smallest subnormal. A
 *    kernel that accumulates in T, or rounds an intermediate to T, misses
 *    this bound on the larger shapes.
 *  - Every kernel runs through the public table and the reference table;
 *    with the reference set active they must agree bit for bit.
 *  - Buffers are malloc'ed with exactly their element count.
 *
 * Header-only (static functions): each test program is one translation
 * unit, and the Makefile builds each tests/runtime/test_X.c on its own.
 */
#ifndef KERNEL_TEST_UTIL_H
#define KERNEL_TEST_UTIL_H

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

#include "../../runtime/src/amprt_internal.h"

static const amp_kernel_table public_table = {
    .isa = "public",
#define PUBLIC_ENTRY(name, ret, params, args) .name = amp_##name,
    AMP_FOR_EACH_KERNEL(PUBLIC_ENTRY)
#undef PUBLIC_ENTRY
};

static const amp_kernel_table *const tables[] = { &public_table, &amp_ref_kernel_table };
static const amp_dtype dtypes[] = { AMP_F64, AMP_F32, AMP_BF16, AMP_F16 };
#define NTABLES 2
#define NDTYPES 4

/* Call kernel `op` of table k for dtype t (buffers are void *). */
#define KCALL(k, t, op, ...)                                                                      \
    do {                                                                                          \
        switch (t) {                                                                              \
        case AMP_F64: (k)->op##_f64(__VA_ARGS__); break;                                          \
        case AMP_F32: (k)->op##_f32(__VA_ARGS__); break;                                          \
        case AMP_BF16: (k)->op##_bf16(__VA_ARGS__); break;                                        \
        default: (k)->op##_f16(__VA_ARGS__); break;                                               \
        }                                                                                         \
    } while (0)

#define KCALL_STATUS(status, k, t, op, ...)                                                       \
    do {                                                                                          \
        switch (t) {                                                                              \
        case AMP_F64: (status) = (k)->op##_f64(__VA_ARGS__); break;                               \
        case AMP_F32: (status) = (k)->op##_f32(__VA_ARGS__); break;                               \
        case AMP_BF16: (status) = (k)->op##_bf16(__VA_ARGS__); break;                             \
        default: (status) = (k)->op##_f16(__VA_ARGS__); break;                                    \
        }                                                                                         \
    } while (0)

/* ---- Tensors ---------------------------------------------------------- */

typedef struct {
    amp_dtype t;
    size_t n;
    void *data; /* exactly n elements (one byte when n == 0) */
} tensor;

static tensor tensor_new(amp_dtype t, size_t n)
{
    tensor x;
    x.t = t;
    x.n = n;
    x.data = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(x.data);
    return x;
}

static tensor tensor_copy(const tensor *src)
{
    tensor x = tensor_new(src->t, src->n);
    memcpy(x.data, src->data, src->n * amp_dtype_size(src->t));
    return x;
}

static void tensor_free(tensor *x)
{
    free(x->data);
    x->data = NULL;
}

static double get(const tensor *x, size_t i)
{
    assert_true(i < x->n);
    if (x->t == AMP_F64)
        return ((const double *)x->data)[i];
    return amp_load_as_f32(x->t, x->data, i);
}

static void set(tensor *x, size_t i, double v)
{
    assert_true(i < x->n);
    if (x->t == AMP_F64)
        ((double *)x->data)[i] = v;
    else
        amp_store_from_f32(x->t, x->data, i, (float)v);
}

/* xorshift64*, fixed seed: failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(double lo, double hi)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return lo + (hi - lo) * (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53;
}

static tensor tensor_random(amp_dtype t, size_t n, double lo, double hi)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, uniform(lo, hi));
    return x;
}

static tensor tensor_of(amp_dtype t, size_t n, const double *values)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, values[i]);
    return x;
}

/* ---- The error bound ---------------------------------------------------- */

static double unit_roundoff(amp_dtype t)
{
    return t == AMP_F64 ? 0x1p-53 : t == AMP_F32 ? 0x1p-24 : t == AMP_BF16 ? 0x1p-8 : 0x1p-11;
}

/* Unit roundoff of the compute type. */
static double u_acc(amp_dtype t)
{
    return t == AMP_F64 ? 0x1p-53 : 0x1p-24;
}

/* long double: f64's half subnormal, 2^-1075, is not a double. */
static long double underflow_floor(amp_dtype t)
{
    return t == AMP_F64 ? 0x1p-1075L : t == AMP_F32 ? 0x1p-150 : t == AMP_BF16 ? 0x1p-134 : 0x1p-25;
}

static double max_finite(amp_dtype t)
{
    return t == AMP_F64 ? DBL_MAX : t == AMP_F32 ? 0x1.fffffep127 : t == AMP_BF16 ? 0x1.fep127 : 65504.0;
}

/* See the file comment. Oracles beyond T's range must come out infinite. */
static int close_to(amp_dtype t, double y, long double oracle, double acc)
{
    long double u = unit_roundoff(t);
    if (isnan(oracle))
        return isnan(y);
    if (isinf(oracle) || fabsl(oracle) > max_finite(t) * (1.0L + 2.0L * u))
        return isinf(y) && (y > 0) == (oracle > 0);
    return fabsl((long double)y - oracle) <= u * fabsl(oracle) + (1.0L + u) * acc + underflow_floor(t);
}

static void expect_close(const tensor *y, size_t i, long double oracle, double acc, const char *what)
{
    double v = get(y, i);
    if (!close_to(y->t, v, oracle, acc))
        fail_msg("%s %s [%zu]: got %.17g, oracle %.17Lg, bound %.3g", what, amp_dtype_name(y->t), i, v, oracle,
                 (double)(unit_roundoff(y->t) * fabsl(oracle) + acc + underflow_floor(y->t)));
}

static int active_is_ref(void)
{
    return strcmp(amp_isa_name(), "ref") == 0;
}

/* With the reference set active the public entry points are the reference
 * kernels and must produce the same bits. */
static void expect_public_equals_ref(const tensor *pub, const tensor *ref)
{
    if (active_is_ref())
        assert_memory_equal(pub->data, ref->data, pub->n * amp_dtype_size(pub->t));
}

static long double finite_or_zero(long double v)
{
    return isfinite(v) ? v : 0.0L;
}

#endif /* KERNEL_TEST_UTIL_H */
