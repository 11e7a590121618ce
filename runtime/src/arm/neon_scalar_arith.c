/*
 * neon_scalar_arith.c - the aarch64 sets' tensor-scalar arithmetic
 * kernels: add_scalar, sub_scalar, mul_scalar, div_scalar, rsub_scalar
 * and rdiv_scalar (y = a op s, or s op a) for f32, bf16 and f16 storage,
 * computing in f32 (arm/neon_convert.h), four lanes at a time, bit for
 * bit the reference (ref/ref_elementwise.inc's with_scalar): one IEEE
 * operation per lane in the reference's operand order (FADD, FSUB, FMUL,
 * FDIV propagate a NaN operand and give the default NaN for an invalid
 * operation as the reference's scalar instructions do), rounded to the
 * storage dtype as amp_st rounds.  A NaN scalar goes to the reference
 * (frame/scalar_arith_form.h).
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/scalar_arith_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

/* One vector of op on a (widened) and the broadcast scalar s. */
static AMP_ALWAYS_INLINE float32x4_t arith4(const int op, float32x4_t a, float32x4_t s)
{
    switch (op) {
    case ARITH_ADD: return vaddq_f32(a, s);
    case ARITH_SUB: return vsubq_f32(a, s);
    case ARITH_MUL: return vmulq_f32(a, s);
    case ARITH_DIV: return vdivq_f32(a, s);
    case ARITH_RSUB: return vsubq_f32(s, a);
    default: return vdivq_f32(s, a);
    }
}

static AMP_ALWAYS_INLINE void arith_loop(const amp_dtype t, const int op, size_t n, const void *a_, float s_,
                                         void *y_)
{
    const size_t es = neon_size_of(t);
    const char *a = a_;
    char *y = y_;
    const float32x4_t s = vdupq_n_f32(s_);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        neon_store4(t, y + i * es, arith4(op, neon_load4(t, a + i * es), s));
    if (i < n)
        neon_store4_n(t, y + i * es, n - i, arith4(op, neon_load4_n(t, a + i * es, n - i), s));
}

#define ENTRIES(T) AMP_SCALAR_ARITH_ENTRIES(T, arith_loop)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
AMP_SCALAR_ARITH_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_scalar_arith(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    AMP_SCALAR_ARITH_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
