/*
 * amprt_internal.h - what the runtime's sources share but callers do not:
 * the reference kernels, the dispatch table, and dtype-generic element access.
 *
 * How a reference kernel is written: its body is one static function,
 * generic over the storage dtype (an amp_dtype argument) and reading and
 * writing elements through amp_ld/amp_st below, which widen to and round
 * from f32. Each amp_ref_<op>_<T> is a one-line wrapper passing a constant
 * dtype. Bodies are AMP_ALWAYS_INLINE, so every wrapper compiles to a loop
 * specialized for its dtype, with the dtype switch folded away.
 *
 * Tests include this header (by relative path) to call amp_ref_* directly;
 * the library exports them for that reason.
 */
#ifndef AMPRT_INTERNAL_H
#define AMPRT_INTERNAL_H

#include "amprt.h"

#if defined(__GNUC__)
#define AMP_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define AMP_ALWAYS_INLINE inline
#endif

/* amp_dtype of each dtype token used in kernel names. */
#define AMP_DTYPE_f64 AMP_F64
#define AMP_DTYPE_f32 AMP_F32
#define AMP_DTYPE_bf16 AMP_BF16
#define AMP_DTYPE_f16 AMP_F16

/* The dtypes computing in f32, for which a body written against amp_ld/
 * amp_st is instantiated: X(T).  f64 kernels compute in double instead. */
#define AMP_FOR_EACH_KERNEL_DTYPE(X) X(f32) X(bf16) X(f16)

/* The compute ("opmath") type of each kernel dtype token. */
#define AMP_ACC_f64 double
#define AMP_ACC_f32 float
#define AMP_ACC_bf16 float
#define AMP_ACC_f16 float

/*
 * Bodies generic over the compute type as well: a kernel file whose bodies
 * must serve f64 (in double) and the others (in float) writes them once in
 * a part file, runtime/src/<name>.inc, and includes it twice:
 *
 *     #define ACC float
 *     #define LD amp_ld
 *     #define ST amp_st
 *     #define BODY(name) name##_facc
 *     #include "ref_foo.inc"
 *     (#undef the four, then again with double, amp_ldd, amp_std, _dacc)
 *
 * and the wrappers call BODY(...)_facc for f32/bf16/f16 and _dacc for f64.
 * Math in the part file goes through AMP_MATH(fn) (expf or exp by ACC), so
 * float code never silently computes in double.
 */
#define AMP_MATH_float(fn) fn##f
#define AMP_MATH_double(fn) fn
#define AMP_MATH_PASTE_(acc, fn) AMP_MATH_##acc(fn)
#define AMP_MATH_(acc, fn) AMP_MATH_PASTE_(acc, fn) /* expands ACC before pasting */
#define AMP_MATH(fn) AMP_MATH_(ACC, fn)

/* The reference kernels: the spec every other kernel set is checked against. */
#define AMP_DECLARE_REF_KERNEL(name, ret, params, args) ret amp_ref_##name params;
AMP_FOR_EACH_KERNEL(AMP_DECLARE_REF_KERNEL)
#undef AMP_DECLARE_REF_KERNEL

/* One function pointer per public kernel, plus the name of the kernel set.
 * An ISA-specific set starts as a copy of amp_ref_kernel_table and overrides
 * only the entries it optimized. */
typedef struct amp_kernel_table {
    const char *isa;
#define AMP_KERNEL_FIELD(name, ret, params, args) ret(*name) params;
    AMP_FOR_EACH_KERNEL(AMP_KERNEL_FIELD)
#undef AMP_KERNEL_FIELD
} amp_kernel_table;

extern const amp_kernel_table amp_ref_kernel_table;

/* Element i of `base` as f32 (see amp_load_as_f32, its public face). */
static AMP_ALWAYS_INLINE float amp_ld(amp_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case AMP_F64: return (float)((const double *)base)[i];
    case AMP_F32: return ((const float *)base)[i];
    case AMP_BF16: return amp_bf16_to_f32(((const amp_bf16 *)base)[i]);
    case AMP_F16: return amp_f16_to_f32(((const amp_f16 *)base)[i]);
    case AMP_I64: return (float)((const int64_t *)base)[i];
    case AMP_I32: return (float)((const int32_t *)base)[i];
    case AMP_BOOL: return ((const uint8_t *)base)[i] ? 1.0f : 0.0f;
    }
    return 0.0f;
}

/* Element i of `base` as double: exact for every dtype but i64 beyond 2^53. */
static AMP_ALWAYS_INLINE double amp_ldd(amp_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case AMP_F64: return ((const double *)base)[i];
    case AMP_I64: return (double)((const int64_t *)base)[i];
    case AMP_I32: return (double)((const int32_t *)base)[i];
    default: return (double)amp_ld(t, base, i);
    }
}

/* Store a double computed for an f64 kernel.  Only f64 storage is meant
 * (the narrower dtypes compute in float and store through amp_st, so that
 * each element is rounded once); other dtypes round via float. */
static AMP_ALWAYS_INLINE void amp_std(amp_dtype t, void *base, int64_t i, double v);

/* float -> integer with C's truncation where C defines it, and NaN -> 0 and
 * saturation where it does not (so stores are never undefined behaviour).
 * The limits are powers of two, exact in float: 2^63 and 2^31. */
static AMP_ALWAYS_INLINE int64_t amp_f32_to_i64_sat(float v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0f)
        return INT64_MAX;
    if (v < -9223372036854775808.0f)
        return INT64_MIN;
    return (int64_t)v;
}

static AMP_ALWAYS_INLINE int32_t amp_f32_to_i32_sat(float v)
{
    if (v != v)
        return 0;
    if (v >= 2147483648.0f)
        return INT32_MAX;
    if (v < -2147483648.0f)
        return INT32_MIN;
    return (int32_t)v;
}

/* Store v into element i of `base` (see amp_store_from_f32). */
static AMP_ALWAYS_INLINE void amp_st(amp_dtype t, void *base, int64_t i, float v)
{
    switch (t) {
    case AMP_F64: ((double *)base)[i] = v; return;
    case AMP_F32: ((float *)base)[i] = v; return;
    case AMP_BF16: ((amp_bf16 *)base)[i] = amp_f32_to_bf16(v); return;
    case AMP_F16: ((amp_f16 *)base)[i] = amp_f32_to_f16(v); return;
    case AMP_I64: ((int64_t *)base)[i] = amp_f32_to_i64_sat(v); return;
    case AMP_I32: ((int32_t *)base)[i] = amp_f32_to_i32_sat(v); return;
    case AMP_BOOL: ((uint8_t *)base)[i] = (uint8_t)(v != 0.0f); return;
    }
}

static AMP_ALWAYS_INLINE void amp_std(amp_dtype t, void *base, int64_t i, double v)
{
    if (t == AMP_F64)
        ((double *)base)[i] = v;
    else
        amp_st(t, base, i, (float)v);
}

#endif /* AMPRT_INTERNAL_H */
