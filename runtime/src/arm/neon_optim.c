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
 * one loop that tests its flags.  Both sets share it.
 */
#include "amprt_internal.h"
#include "frame/sgd_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

typedef struct {
    amp_dtype t;
    void *p, *buf;
    const void *g;
    float lr, m, keep, wd;
    int use_wd, use_m, maximize, nesterov, first;
} sgd_args;

static AMP_ALWAYS_INLINE float32x4_t sgd4(const sgd_args *c, float32x4_t pi, float32x4_t d, float32x4_t *b,
                                          int maximize, int use_wd, int use_m, int first, int nesterov)
{
    if (maximize)
        d = vnegq_f32(d);
    if (use_wd)
        d = vaddq_f32(d, vmulq_f32(vdupq_n_f32(c->wd), pi));
    if (use_m) {
        *b = first ? d : vaddq_f32(vmulq_f32(vdupq_n_f32(c->m), *b), vmulq_f32(vdupq_n_f32(c->keep), d));
        d = nesterov ? vaddq_f32(d, vmulq_f32(vdupq_n_f32(c->m), *b)) : *b;
    }
    return vsubq_f32(pi, vmulq_f32(vdupq_n_f32(c->lr), d));
}

static AMP_ALWAYS_INLINE void sgd_loop(amp_dtype t, const sgd_args *c, size_t n, int maximize, int use_wd, int use_m,
                                       int first, int nesterov)
{
    const size_t es = neon_size_of(t);
    char *p = c->p, *buf = c->buf;
    const char *g = c->g;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t b = use_m && !first ? neon_load4(t, buf + i * es) : vdupq_n_f32(0);
        const float32x4_t r =
            sgd4(c, neon_load4(t, p + i * es), neon_load4(t, g + i * es), &b, maximize, use_wd, use_m, first, nesterov);
        if (use_m)
            neon_store4(t, buf + i * es, b);
        neon_store4(t, p + i * es, r);
    }
    if (i < n) {
        const size_t k = n - i;
        float32x4_t b = use_m && !first ? neon_load4_n(t, buf + i * es, k) : vdupq_n_f32(0);
        const float32x4_t r = sgd4(c, neon_load4_n(t, p + i * es, k), neon_load4_n(t, g + i * es, k), &b, maximize,
                                   use_wd, use_m, first, nesterov);
        if (use_m)
            neon_store4_n(t, buf + i * es, k, b);
        neon_store4_n(t, p + i * es, k, r);
    }
}

static AMP_ALWAYS_INLINE void sgd_dtype(amp_dtype t, const sgd_args *c, size_t n)
{
    if (c->use_m && !c->maximize && !c->use_wd && !c->nesterov) {
        if (c->first)
            sgd_loop(t, c, n, 0, 0, 1, 1, 0);
        else
            sgd_loop(t, c, n, 0, 0, 1, 0, 0);
    } else {
        sgd_loop(t, c, n, c->maximize, c->use_wd, c->use_m, c->first, c->nesterov);
    }
}

static void sgd_fast(amp_dtype t, size_t n, void *p, const void *g, void *buf, const amp_sgd_hparams *h, int64_t step,
                     int32_t found_inf)
{
    /* the reference's scalars, rounded to f32 as it rounds them */
    sgd_args c;
    if (found_inf)
        return;
    c.t = t;
    c.p = p;
    c.buf = buf;
    c.g = g;
    AMP_SGD_SCALARS_FILL(c, h, step);
    switch (t) {
    case AMP_BF16: sgd_dtype(AMP_BF16, &c, n); break;
    case AMP_F16: sgd_dtype(AMP_F16, &c, n); break;
    default: sgd_dtype(AMP_F32, &c, n); break;
    }
}

#define ENTRY(T)                                                                                  \
    static void sgd_##T(size_t n, AMP_CTYPE_##T *p, const AMP_CTYPE_##T *g, AMP_CTYPE_##T *buf,   \
                        const amp_sgd_hparams *h, int64_t step, int32_t found_inf)                \
    {                                                                                             \
        sgd_fast(AMP_DTYPE_##T, n, p, g, buf, h, step, found_inf);                                \
    }
AMP_FOR_EACH_KERNEL_DTYPE(ENTRY)

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
