/*
 * neon_eltwise.c - the aarch64 sets' element-wise kernels: relu and add
 * for f32, bf16 and f16, and the casts between f32 and bf16 or f16, four
 * lanes at a time, bit for bit the reference: the same f32 operation per
 * element on the values amp_ld loads (NaNs quieted), rounded once as
 * amp_st rounds (arm/neon_convert.h); of two NaNs, add returns the left
 * one (neon_add4), as batch_norm and conv_ex's post-ops do.  The neonbf16
 * set's versions round to bf16 with BFCVTN.  Tails shorter than a vector
 * take the reference's scalar code, but add's, one vector through copies.
 */

#include "amprt_internal.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

/* relu as the reference: x < 0 ? 0 : x (false for NaN and -0, which stay) */
static AMP_ALWAYS_INLINE float32x4_t relu4(float32x4_t x)
{
    return vbslq_f32(vcltq_f32(x, vdupq_n_f32(0)), vdupq_n_f32(0), x);
}

static AMP_ALWAYS_INLINE void store4(amp_dtype t, void *p, float32x4_t v, int bfcvt)
{
    if (bfcvt)
        neon_store4_bf16cvt(t, p, v);
    else
        neon_store4(t, p, v);
}

static AMP_ALWAYS_INLINE void relu_body(amp_dtype t, size_t n, const void *x, void *y, int bfcvt)
{
    const size_t es = amp_dtype_size(t);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        store4(t, (char *)y + i * es, relu4(neon_load4_quiet(t, (const char *)x + i * es)), bfcvt);
    for (; i < n; i++) {
        const float v = amp_ld(t, x, (int64_t)i);
        amp_st(t, y, (int64_t)i, v < 0 ? 0.0f : v);
    }
}

static AMP_ALWAYS_INLINE void add_body(amp_dtype t, size_t n, const void *a, const void *b, void *y, int bfcvt)
{
    const size_t es = amp_dtype_size(t);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t va = neon_load4_quiet(t, (const char *)a + i * es);
        const float32x4_t vb = neon_load4_quiet(t, (const char *)b + i * es);
        store4(t, (char *)y + i * es, neon_add4(va, vb), bfcvt);
    }
    if (i < n) /* the tail as one vector: every element by the same operations */
        neon_store4_n(t, (char *)y + i * es, n - i,
                      neon_add4(neon_load4_n(t, (const char *)a + i * es, n - i),
                                neon_load4_n(t, (const char *)b + i * es, n - i)));
}

/* y (dtype d) = x (dtype s) converted, one of them f32 */
static AMP_ALWAYS_INLINE void cast_body(amp_dtype s, amp_dtype d, size_t n, const void *x, void *y, int bfcvt)
{
    const size_t ses = amp_dtype_size(s), des = amp_dtype_size(d);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        store4(d, (char *)y + i * des, neon_load4_quiet(s, (const char *)x + i * ses), bfcvt);
    for (; i < n; i++)
        amp_st(d, y, (int64_t)i, amp_ld(s, x, (int64_t)i));
}

#define NEON_ELTWISE(T)                                                                           \
    static void relu_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                      \
    {                                                                                             \
        relu_body(AMP_DTYPE_##T, n, x, y, 0);                                                     \
    }                                                                                             \
    static void add_##T(size_t n, const AMP_CTYPE_##T *a, const AMP_CTYPE_##T *b, AMP_CTYPE_##T *y) \
    {                                                                                             \
        add_body(AMP_DTYPE_##T, n, a, b, y, 0);                                                   \
    }
NEON_ELTWISE(f32)
NEON_ELTWISE(bf16)
NEON_ELTWISE(f16)

static void cast_f32_bf16(size_t n, const float *x, amp_bf16 *y) { cast_body(AMP_F32, AMP_BF16, n, x, y, 0); }
static void cast_bf16_f32(size_t n, const amp_bf16 *x, float *y) { cast_body(AMP_BF16, AMP_F32, n, x, y, 0); }
static void cast_f32_f16(size_t n, const float *x, amp_f16 *y) { cast_body(AMP_F32, AMP_F16, n, x, y, 0); }
static void cast_f16_f32(size_t n, const amp_f16 *x, float *y) { cast_body(AMP_F16, AMP_F32, n, x, y, 0); }

/* FEAT_BF16: the kernels that round to bf16, with BFCVTN */
NEON_BF16_TARGET static void relu_bf16_cvt(size_t n, const amp_bf16 *x, amp_bf16 *y)
{
    relu_body(AMP_BF16, n, x, y, 1);
}
NEON_BF16_TARGET static void add_bf16_cvt(size_t n, const amp_bf16 *a, const amp_bf16 *b, amp_bf16 *y)
{
    add_body(AMP_BF16, n, a, b, y, 1);
}
NEON_BF16_TARGET static void cast_f32_bf16_cvt(size_t n, const float *x, amp_bf16 *y)
{
    cast_body(AMP_F32, AMP_BF16, n, x, y, 1);
}

/* This file's kernels of the sets, and the data movement on the pool
 * every set shares (frame/data_movement.c): X(kernel, implementation);
 * neonbf16 rounds to bf16 with BFCVTN. */
#define ELTWISE_KERNELS(X)                                                                        \
    X(relu_f32, relu_f32)                                                                         \
    X(add_f32, add_f32)                                                                           \
    X(relu_f16, relu_f16)                                                                         \
    X(add_f16, add_f16)                                                                           \
    X(cast_bf16_f32, cast_bf16_f32)                                                               \
    X(cast_f32_f16, cast_f32_f16)                                                                 \
    X(cast_f16_f32, cast_f16_f32)                                                                 \
    X(relu_bf16, relu_bf16)                                                                       \
    X(add_bf16, add_bf16)                                                                         \
    X(cast_f32_bf16, cast_f32_bf16)                                                               \
    X(copy_strided, amp_pooled_copy_strided)                                                      \
    X(fill_f32, amp_pooled_fill_f32)                                                              \
    X(fill_bf16, amp_pooled_fill_bf16)                                                            \
    X(fill_f16, amp_pooled_fill_f16)
#define BF16_ELTWISE_KERNELS(X)                                                                   \
    X(relu_bf16, relu_bf16_cvt)                                                                   \
    X(add_bf16, add_bf16_cvt)                                                                     \
    X(cast_f32_bf16, cast_f32_bf16_cvt)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
ELTWISE_KERNELS(DEFINE)
#undef DEFINE
#define DEFINE(name, impl) AMP_ISA_KERNEL(neonbf16, name, impl)
BF16_ELTWISE_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_eltwise(amp_kernel_table *t, int bfcvt)
{
    /* neonbf16: over the table of its base set, only what it replaces */
    if (bfcvt) {
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neonbf16, name);
        BF16_ELTWISE_KERNELS(INSTALL)
#undef INSTALL
        return;
    }
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    ELTWISE_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
