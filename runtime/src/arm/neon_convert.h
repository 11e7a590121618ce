/*
 * neon_convert.h - four values of a storage dtype to and from f32 in one
 * NEON register, as amp_ld and amp_st convert them (amprt.h's rules), for
 * the aarch64 kernel sets' packing, epilogues and element-wise kernels.
 *
 * f16 goes through FCVTL/FCVTN (ARMv8.0 Advanced SIMD), which round to
 * nearest even under Linux's default FPCR (no flush to zero, no default
 * NaN, IEEE half precision) and quiet a NaN keeping its top payload bits:
 * bit for bit amp_f32_to_f16 and amp_f16_to_f32.  bf16 widens by a shift
 * (the NaN quieting amp_bf16_to_f32 adds is done by load4_quiet, where a
 * kernel's result can show it) and narrows by integer rounding, or by
 * BFCVTN on FEAT_BF16 (neon_store4_bf16cvt), which rounds the same way.
 */
#ifndef AMPRT_ARM_NEON_CONVERT_H
#define AMPRT_ARM_NEON_CONVERT_H

#if defined(__aarch64__)

#include <arm_neon.h>
#include <string.h>

#include "amprt_internal.h"

/* The target of the FEAT_BF16 functions (the string arm_neon.h's bf16
 * intrinsics are declared under). */
#define NEON_BF16_TARGET __attribute__((target("arch=armv8.2-a+bf16")))

/* bytes per element of f32, bf16, f16, a constant where t is */
static AMP_ALWAYS_INLINE size_t neon_size_of(amp_dtype t) { return t == AMP_F32 ? 4 : 2; }

/* 4 values of dtype t (f32, bf16 or f16) at p as f32; a bf16 NaN keeps
 * its signalling bit (packing, where only the NaN-ness matters). */
static AMP_ALWAYS_INLINE float32x4_t neon_load4(amp_dtype t, const void *p)
{
    switch (t) {
    case AMP_BF16: return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
    case AMP_F16: return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
    default: return vld1q_f32(p);
    }
}

/* The same, a NaN quieted as amp_ld quiets it (FCVTL quiets f16 itself). */
static AMP_ALWAYS_INLINE float32x4_t neon_load4_quiet(amp_dtype t, const void *p)
{
    if (t == AMP_BF16) {
        const uint32x4_t u = vshll_n_u16(vld1_u16(p), 16);
        const uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
        return vreinterpretq_f32_u32(vorrq_u32(u, vandq_u32(nan, vdupq_n_u32(0x00400000u))));
    }
    return neon_load4(t, p);
}

/* amp_f32_to_bf16 on 4 lanes: round to nearest even by adding 0x7fff
 * plus the kept lsb, or for a NaN the top half with the quiet bit set. */
static AMP_ALWAYS_INLINE uint16x4_t neon_f32_to_bf16(float32x4_t v)
{
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t hi = vshrq_n_u32(u, 16);
    const uint32x4_t r = vshrq_n_u32(vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fffu)), vandq_u32(hi, vdupq_n_u32(1))), 16);
    const uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    return vmovn_u32(vbslq_u32(nan, vorrq_u32(hi, vdupq_n_u32(0x40u)), r));
}

/* 4 f32 values stored at p as dtype t, rounded as amp_st rounds. */
static AMP_ALWAYS_INLINE void neon_store4(amp_dtype t, void *p, float32x4_t v)
{
    switch (t) {
    case AMP_BF16: vst1_u16(p, neon_f32_to_bf16(v)); return;
    case AMP_F16: vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v))); return;
    default: vst1q_f32(p, v); return;
    }
}

/* The same with BFCVTN for bf16 (FEAT_BF16 only): under the default FPCR
 * it rounds to nearest even, keeps subnormals and quiets a NaN keeping
 * its top payload bits, as amp_f32_to_bf16. */
NEON_BF16_TARGET static inline void neon_store4_bf16cvt(amp_dtype t, void *p, float32x4_t v)
{
    if (t == AMP_BF16)
        vst1_u16(p, vreinterpret_u16_bf16(vcvt_bf16_f32(v)));
    else
        neon_store4(t, p, v);
}

/* The first n < 4 values at p (the other lanes 0), and the store of the
 * first n lanes: through a buffer, so nothing past the n is touched. */
static AMP_ALWAYS_INLINE float32x4_t neon_load4_n(amp_dtype t, const void *p, size_t n)
{
    float buf[4] = { 0, 0, 0, 0 };
    memcpy(buf, p, n * neon_size_of(t));
    return neon_load4(t, buf);
}

static AMP_ALWAYS_INLINE void neon_store4_n(amp_dtype t, void *p, size_t n, float32x4_t v)
{
    float buf[4];
    neon_store4(t, buf, v);
    memcpy(p, buf, n * neon_size_of(t));
}

/* All ones in the lanes that hold a NaN. */
static AMP_ALWAYS_INLINE uint32x4_t neon_isnan4(float32x4_t v) { return vmvnq_u32(vceqq_f32(v, v)); }

/* r, an operation's result on a and another operand, where a is not NaN;
 * a quieted where it is.  Of two NaN operands IEEE 754 leaves open which
 * one comes out, and the compiler may swap a commutative operation's
 * operands (FADD and FMUL return their first one), so the kernels that
 * must agree with each other bit for bit (batch_norm, add, and conv_ex's
 * post-ops built from them) fix it to the left operand, as the reference
 * returns it when compiled in order. */
static AMP_ALWAYS_INLINE float32x4_t neon_nan_left4(float32x4_t a, float32x4_t r)
{
    const float32x4_t quiet = vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), vdupq_n_u32(0x00400000u)));
    return vbslq_f32(neon_isnan4(a), quiet, r);
}

static AMP_ALWAYS_INLINE float32x4_t neon_add4(float32x4_t a, float32x4_t b)
{
    return neon_nan_left4(a, vaddq_f32(a, b));
}

static AMP_ALWAYS_INLINE float32x4_t neon_sub4(float32x4_t a, float32x4_t b)
{
    return neon_nan_left4(a, vsubq_f32(a, b));
}

static AMP_ALWAYS_INLINE float32x4_t neon_mul4(float32x4_t a, float32x4_t b)
{
    return neon_nan_left4(a, vmulq_f32(a, b));
}

/* v rounded to dtype t and widened back: what a store of v as t and a
 * quieting load give (a NaN comes back quiet). */
static AMP_ALWAYS_INLINE float32x4_t neon_round4(amp_dtype t, float32x4_t v)
{
    switch (t) {
    case AMP_BF16: return vreinterpretq_f32_u32(vshll_n_u16(neon_f32_to_bf16(v), 16));
    case AMP_F16: return vcvt_f32_f16(vcvt_f16_f32(v));
    default: return v;
    }
}

#endif /* aarch64 */

#endif /* AMPRT_ARM_NEON_CONVERT_H */
