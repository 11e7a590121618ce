/*
 * neon_clamp.c - the aarch64 sets' clamp kernels: clamp and hardtanh (the
 * same function: PyTorch's hardtanh is a clamp; ReLU6 is clamp 0..6) and
 * their gradients clamp_backward and hardtanh_backward, for f32, bf16 and
 * f16 storage (computing in f32, arm/neon_convert.h), four lanes at a
 * time, bit for bit the reference (ref/ref_unary.inc,
 * ref_backward_unary.inc):
 *
 *  clamp           the reference's "if (x < lo) x = lo; if (x > hi) x =
 *                  hi" as two compares and selects (not FMAX/FMIN, which
 *                  return NaN for a NaN bound): a NaN x stays x, a NaN
 *                  bound is passed over, lo > hi gives hi, and of -0 and
 *                  +0 x is kept.
 *  clamp_backward  dx = lo <= x <= hi ? dy : +0 (NaN x gives 0).
 *  hardtanh_backward  dx = x <= lo || x >= hi ? +0 : dy (NaN x gives dy).
 *
 * Without x (the reference reads 0) the backwards go to the reference.
 * bf16 results round by integer operations (BFCVTN would give the same
 * bits: a clamp's result is x, dy or a bound).
 */
#include <string.h>

#include "amprt_internal.h"
#include "frame/clamp_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

/* One vector of op: x (and dy for the gradients) to the result. */
static AMP_ALWAYS_INLINE float32x4_t clamp4(const int op, float32x4_t x, float32x4_t dy, float32x4_t lo,
                                            float32x4_t hi)
{
    switch (op) {
    case CLAMP:
        x = vbslq_f32(vcltq_f32(x, lo), lo, x);
        return vbslq_f32(vcgtq_f32(x, hi), hi, x);
    case CLAMP_BW:
        return vreinterpretq_f32_u32(
            vandq_u32(vandq_u32(vcgeq_f32(x, lo), vcleq_f32(x, hi)), vreinterpretq_u32_f32(dy)));
    default:
        return vreinterpretq_f32_u32(
            vbicq_u32(vreinterpretq_u32_f32(dy), vorrq_u32(vcleq_f32(x, lo), vcgeq_f32(x, hi))));
    }
}

static AMP_ALWAYS_INLINE void clamp_loop(const amp_dtype t, const int op, size_t n, const void *x_, const void *dy_,
                                         double lo_, double hi_, void *y_)
{
    const size_t es = neon_size_of(t);
    const char *x = x_, *dy = op == CLAMP ? x_ : dy_;
    char *y = y_;
    const float32x4_t lo = vdupq_n_f32((float)lo_), hi = vdupq_n_f32((float)hi_);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        neon_store4(t, y + i * es, clamp4(op, neon_load4(t, x + i * es), neon_load4(t, dy + i * es), lo, hi));
    if (i < n)
        neon_store4_n(t, y + i * es, n - i,
                      clamp4(op, neon_load4_n(t, x + i * es, n - i), neon_load4_n(t, dy + i * es, n - i), lo, hi));
}

#define ENTRIES(T) AMP_CLAMP_ENTRIES(T, clamp_loop)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
AMP_CLAMP_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_clamp(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    AMP_CLAMP_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
