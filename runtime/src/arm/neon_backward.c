/*
 * neon_backward.c - the aarch64 sets' gradient kernels between the
 * products: relu_backward, add_relu_backward (a residual's two gradients
 * summed and taken through the relu after it) and grad_accumulate (an
 * f32 accumulator += a bf16 or f16 micro-batch gradient), four lanes at a
 * time, bit for bit the reference: the same f32 operation per element on
 * the values amp_ld loads, rounded once as amp_st rounds
 * (arm/neon_convert.h).  relu_backward's choice passes dy itself (x <= 0
 * ? 0 : dy, false for NaN; no x is x = 0 everywhere), so only dy's storage rounding is applied, and
 * add_relu_backward rounds its sum once: the reference rounds the sum to
 * the storage dtype, then passes it or 0, and rounding is idempotent.
 * The neonbf16 set's versions round to bf16 with BFCVTN.  Tails shorter
 * than a vector take the reference's scalar code.
 */

#include <string.h>

#include "amprt_internal.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

static AMP_ALWAYS_INLINE void store4(amp_dtype t, void *p, float32x4_t v, int bfcvt)
{
    if (bfcvt)
        neon_store4_bf16cvt(t, p, v);
    else
        neon_store4(t, p, v);
}

/* x <= 0 ? 0 : g, lane by lane (a NaN x passes g, as the reference) */
static AMP_ALWAYS_INLINE float32x4_t relu_pass4(float32x4_t x, float32x4_t g)
{
    return vbslq_f32(vcleq_f32(x, vdupq_n_f32(0)), vdupq_n_f32(0), g);
}

static AMP_ALWAYS_INLINE void relu_backward_body(amp_dtype t, size_t n, const void *x, const void *dy, void *dx,
                                                 int bfcvt)
{
    const size_t es = amp_dtype_size(t);
    size_t i = 0;
    if (x == NULL) { /* the reference's x = 0 everywhere: dx = +0 */
        memset(dx, 0, n * es);
        return;
    }
    for (; i + 4 <= n; i += 4) {
        const float32x4_t vx = neon_load4(t, (const char *)x + i * es);
        const float32x4_t vg = neon_load4_quiet(t, (const char *)dy + i * es);
        store4(t, (char *)dx + i * es, relu_pass4(vx, vg), bfcvt);
    }
    for (; i < n; i++) {
        const float v = amp_ld(t, x, (int64_t)i);
        amp_st(t, dx, (int64_t)i, v <= 0 ? 0.0f : amp_ld(t, dy, (int64_t)i));
    }
}

/* dx = relu_backward(y, a + b rounded to t); dx may be a, b or y: each
 * lane is read before it is written */
static AMP_ALWAYS_INLINE void add_relu_backward_body(amp_dtype t, size_t n, const void *y, const void *a,
                                                     const void *b, void *dx, int bfcvt)
{
    const size_t es = amp_dtype_size(t);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t vy = neon_load4(t, (const char *)y + i * es);
        const float32x4_t s =
            vaddq_f32(neon_load4_quiet(t, (const char *)a + i * es), neon_load4_quiet(t, (const char *)b + i * es));
        store4(t, (char *)dx + i * es, relu_pass4(vy, s), bfcvt);
    }
    for (; i < n; i++) {
        const float v = amp_ld(t, y, (int64_t)i);
        const float s = amp_ld(t, a, (int64_t)i) + amp_ld(t, b, (int64_t)i);
        amp_st(t, dx, (int64_t)i, v <= 0 ? 0.0f : s);
    }
}

static AMP_ALWAYS_INLINE void grad_accumulate_body(amp_dtype t, size_t n, float *acc, const void *g)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(acc + i, vaddq_f32(vld1q_f32(acc + i), neon_load4_quiet(t, (const char *)g + i * 2)));
    for (; i < n; i++)
        acc[i] = acc[i] + amp_ld(t, g, (int64_t)i);
}

#define NEON_BACKWARD(T)                                                                          \
    static void relu_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,       \
                                  const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                     \
    {                                                                                             \
        (void)y;                                                                                  \
        relu_backward_body(AMP_DTYPE_##T, n, x, dy, dx, 0);                                       \
    }                                                                                             \
    static void add_relu_backward_##T(size_t n, const AMP_CTYPE_##T *y, const AMP_CTYPE_##T *a,   \
                                      const AMP_CTYPE_##T *b, AMP_CTYPE_##T *dx)                  \
    {                                                                                             \
        add_relu_backward_body(AMP_DTYPE_##T, n, y, a, b, dx, 0);                                 \
    }
NEON_BACKWARD(f32)
NEON_BACKWARD(bf16)
NEON_BACKWARD(f16)

static void grad_accumulate_bf16(size_t n, float *acc, const amp_bf16 *g) { grad_accumulate_body(AMP_BF16, n, acc, g); }
static void grad_accumulate_f16(size_t n, float *acc, const amp_f16 *g) { grad_accumulate_body(AMP_F16, n, acc, g); }

/* FEAT_BF16: the kernels that round to bf16, with BFCVTN */
NEON_BF16_TARGET static void relu_backward_bf16_cvt(size_t n, const amp_bf16 *x, const amp_bf16 *y,
                                                    const amp_bf16 *dy, amp_bf16 *dx)
{
    (void)y;
    relu_backward_body(AMP_BF16, n, x, dy, dx, 1);
}
NEON_BF16_TARGET static void add_relu_backward_bf16_cvt(size_t n, const amp_bf16 *y, const amp_bf16 *a,
                                                        const amp_bf16 *b, amp_bf16 *dx)
{
    add_relu_backward_body(AMP_BF16, n, y, a, b, dx, 1);
}

#define BACKWARD_KERNELS(X)                                                                       \
    X(relu_backward_f32, relu_backward_f32)                                                       \
    X(relu_backward_bf16, relu_backward_bf16)                                                     \
    X(relu_backward_f16, relu_backward_f16)                                                       \
    X(add_relu_backward_f32, add_relu_backward_f32)                                               \
    X(add_relu_backward_bf16, add_relu_backward_bf16)                                             \
    X(add_relu_backward_f16, add_relu_backward_f16)                                               \
    X(grad_accumulate_bf16, grad_accumulate_bf16)                                                 \
    X(grad_accumulate_f16, grad_accumulate_f16)
#define BF16_BACKWARD_KERNELS(X)                                                                  \
    X(relu_backward_bf16, relu_backward_bf16_cvt)                                                 \
    X(add_relu_backward_bf16, add_relu_backward_bf16_cvt)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
BACKWARD_KERNELS(DEFINE)
#undef DEFINE
#define DEFINE(name, impl) AMP_ISA_KERNEL(neonbf16, name, impl)
BF16_BACKWARD_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_backward(amp_kernel_table *t, int bfcvt)
{
    /* neonbf16: over the table of its base set, only what it replaces */
    if (bfcvt) {
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neonbf16, name);
        BF16_BACKWARD_KERNELS(INSTALL)
#undef INSTALL
        return;
    }
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    BACKWARD_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
