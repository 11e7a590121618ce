/*
 * neon_optim.c - the aarch64 sets' sgd update for f32, bf16 and f16
 * parameters (bf16 and f16 computing in f32, arm/neon_convert.h), four
 * lanes at a time, bit for bit the reference (ref_train.inc): per element
 * d = g (negated to maximize), + wd p, the momentum buffer b = first ? d :
 * m b + keep d (stored, rounded to the buffer's dtype; d takes b before
 * that rounding, as in the reference), d = nesterov ? d + m b : b, then
 * p - lr d; each operation rounded to f32 in the reference's operand
 * order, one rounding to the storage dtype.  The common step (momentum,
 * no weight decay, plain) is specialized per first step; the others run
 * one loop that tests its flags.  Both sets share it; the step and its
 * driver are frame/sgd_form.h's, the loads, stores and loop this file's.
 */
#include "amprt_internal.h"
#include "frame/sgd_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

AMP_SGD_STEP(, sgd4, float32x4_t, vaddq_f32, vmulq_f32, vsubq_f32, vdupq_n_f32, vnegq_f32)

static AMP_ALWAYS_INLINE void sgd_loop(amp_dtype t, const amp_sgd_ctx *c, size_t begin, size_t end, int maximize,
                                       int use_wd, int use_m, int first, int nesterov)
{
    const size_t es = neon_size_of(t);
    char *p = c->p, *buf = c->buf;
    const char *g = c->g;
    size_t i = begin;
    for (; i + 4 <= end; i += 4) {
        float32x4_t b = use_m && !first ? neon_load4(t, buf + i * es) : vdupq_n_f32(0);
        const float32x4_t r =
            sgd4(c, neon_load4(t, p + i * es), neon_load4(t, g + i * es), &b, maximize, use_wd, use_m, first, nesterov);
        if (use_m)
            neon_store4(t, buf + i * es, b);
        neon_store4(t, p + i * es, r);
    }
    if (i < end) {
        const size_t k = end - i;
        float32x4_t b = use_m && !first ? neon_load4_n(t, buf + i * es, k) : vdupq_n_f32(0);
        const float32x4_t r = sgd4(c, neon_load4_n(t, p + i * es, k), neon_load4_n(t, g + i * es, k), &b, maximize,
                                   use_wd, use_m, first, nesterov);
        if (use_m)
            neon_store4_n(t, buf + i * es, k, b);
        neon_store4_n(t, p + i * es, k, r);
    }
}

#define SGD_RUN(n, body, c) body(c, 0, n) /* (sgd is not split: one call) */
AMP_SGD_DRIVER(, SGD_RUN)

AMP_FOR_EACH_KERNEL_DTYPE(AMP_SGD_ENTRY)

/* This file's kernels of the sets: X(kernel, implementation). */
#define OPTIM_KERNELS(X) X(sgd_f32, sgd_f32) X(sgd_bf16, sgd_bf16) X(sgd_f16, sgd_f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
OPTIM_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_optim(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    OPTIM_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
