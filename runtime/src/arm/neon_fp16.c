/*
 * neon_fp16.c - the neonfp16 set's f16 element-wise kernels in FEAT_FP16
 * arithmetic: add, sub, mul and div by FADD, FSUB, FMUL and FDIV on 8 f16
 * lanes, relu by FCMLT and BSL, where the neon set widens 4 lanes to f32.
 *
 * Bit for bit the reference (which widens to f32, computes, and rounds
 * once to f16): for +, -, * and / the f32 result rounded to f16 equals
 * the f16 operation's own rounding (f32's 24 bits are at least 2 x 11 + 2,
 * so the double rounding is innocuous), under Linux's default FPCR (round
 * to nearest even, FZ16 clear: f16 subnormals kept).  A NaN keeps its
 * payload through the f32 round trip; the operands' signalling NaNs are
 * quieted first, as the reference's widening loads quiet them, and of two
 * NaN operands the left one comes out (selected, since the compiler may
 * swap a commutative operation's operands), as the neon set's add
 * (neon_add4) and conv_ex's post-ops return it: the same bits, NaNs
 * included.  relu
 * quiets a signalling NaN as the reference's round trip does.  Tails
 * shorter than a vector are a vector through copies (one operand order
 * for every element).  neonbf16
 * builds on this set and keeps these.
 */
#include <string.h>

#include "amprt_internal.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

#define FP16_TARGET __attribute__((target("arch=armv8.2-a+fp16")))

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV };

FP16_TARGET static AMP_ALWAYS_INLINE float16x8_t op8(int op, float16x8_t a, float16x8_t b)
{
    /* a is quiet (load8_quiet); where it is NaN the result is a, whichever
     * operand order the compiler gives a commutative FADD or FMUL */
    const uint16x8_t a_nan = vmvnq_u16(vceqq_f16(a, a));
    float16x8_t r;
    switch (op) {
    case OP_ADD: r = vaddq_f16(a, b); break;
    case OP_SUB: r = vsubq_f16(a, b); break;
    case OP_MUL: r = vmulq_f16(a, b); break;
    default: r = vdivq_f16(a, b); break;
    }
    return vbslq_f16(a_nan, a, r);
}

/* 8 f16 values at p, a signalling NaN quieted (as the reference's
 * widening loads quiet it) */
FP16_TARGET static AMP_ALWAYS_INLINE float16x8_t load8_quiet(const amp_f16 *p)
{
    const uint16x8_t u = vld1q_u16((const uint16_t *)p);
    const float16x8_t x = vreinterpretq_f16_u16(u);
    const uint16x8_t nan = vmvnq_u16(vceqq_f16(x, x));
    return vreinterpretq_f16_u16(vorrq_u16(u, vandq_u16(nan, vdupq_n_u16(0x0200))));
}

FP16_TARGET static AMP_ALWAYS_INLINE void binary_body(int op, size_t n, const amp_f16 *a, const amp_f16 *b, amp_f16 *y)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const float16x8_t a0 = load8_quiet(a + i);
        const float16x8_t a1 = load8_quiet(a + i + 8);
        const float16x8_t b0 = load8_quiet(b + i);
        const float16x8_t b1 = load8_quiet(b + i + 8);
        vst1q_u16((uint16_t *)(y + i), vreinterpretq_u16_f16(op8(op, a0, b0)));
        vst1q_u16((uint16_t *)(y + i + 8), vreinterpretq_u16_f16(op8(op, a1, b1)));
    }
    for (; i + 8 <= n; i += 8) {
        const float16x8_t a0 = load8_quiet(a + i);
        const float16x8_t b0 = load8_quiet(b + i);
        vst1q_u16((uint16_t *)(y + i), vreinterpretq_u16_f16(op8(op, a0, b0)));
    }
    if (i < n) { /* the tail as a vector through copies (the lanes past it compute on zeros) */
        amp_f16 ab[8] = { 0 }, bb[8] = { 0 }, yb[8];
        memcpy(ab, a + i, (n - i) * 2);
        memcpy(bb, b + i, (n - i) * 2);
        vst1q_u16((uint16_t *)yb, vreinterpretq_u16_f16(op8(op, load8_quiet(ab), load8_quiet(bb))));
        memcpy(y + i, yb, (n - i) * 2);
    }
}

/* x < 0 ? 0 : x (false for NaN and -0, which stay), a signalling NaN quieted */
FP16_TARGET static AMP_ALWAYS_INLINE uint16x8_t relu8(uint16x8_t u)
{
    const float16x8_t x = vreinterpretq_f16_u16(u);
    const uint16x8_t neg = vcltq_f16(x, vreinterpretq_f16_u16(vdupq_n_u16(0)));
    const uint16x8_t nan = vmvnq_u16(vceqq_f16(x, x));
    return vorrq_u16(vbicq_u16(u, neg), vandq_u16(nan, vdupq_n_u16(0x0200)));
}

FP16_TARGET static void relu_f16(size_t n, const amp_f16 *x, amp_f16 *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        vst1q_u16((uint16_t *)(y + i), relu8(vld1q_u16((const uint16_t *)(x + i))));
    if (i < n) {
        uint16_t xb[8] = { 0 }, yb[8];
        memcpy(xb, x + i, (n - i) * 2);
        vst1q_u16(yb, relu8(vld1q_u16(xb)));
        memcpy(y + i, yb, (n - i) * 2);
    }
}

FP16_TARGET static void add_f16(size_t n, const amp_f16 *a, const amp_f16 *b, amp_f16 *y)
{
    binary_body(OP_ADD, n, a, b, y);
}
FP16_TARGET static void sub_f16(size_t n, const amp_f16 *a, const amp_f16 *b, amp_f16 *y)
{
    binary_body(OP_SUB, n, a, b, y);
}
FP16_TARGET static void mul_f16(size_t n, const amp_f16 *a, const amp_f16 *b, amp_f16 *y)
{
    binary_body(OP_MUL, n, a, b, y);
}
FP16_TARGET static void div_f16(size_t n, const amp_f16 *a, const amp_f16 *b, amp_f16 *y)
{
    binary_body(OP_DIV, n, a, b, y);
}

/* This file's kernels of the set: X(kernel, implementation). */
#define FP16_KERNELS(X) X(add_f16, add_f16) X(sub_f16, sub_f16) X(mul_f16, mul_f16) X(div_f16, div_f16) X(relu_f16, relu_f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neonfp16, name, impl)
FP16_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neonfp16_fill_eltwise(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neonfp16, name);
    FP16_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
