/*
 * sgd_form.h - what the kernel sets' sgd updates share: the step's
 * context (each hyperparameter rounded to f32 as the reference rounds
 * it, and the flags that choose the loop's variant), the reference's step
 * on one vector written once over the set's vector operations, the
 * choice of the specialized loops, and the table entries.  A set keeps
 * its loads, stores and loop over the elements (x86/avx2_backward.c,
 * x86/avx512_backward.c, arm/neon_optim.c).  Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_SGD_FORM_H
#define AMPRT_FRAME_SGD_FORM_H

typedef struct {
    amp_dtype t;
    void *p, *buf;
    const void *g;
    float lr, m, keep, wd;
    int use_wd, use_m, maximize, nesterov, first;
} amp_sgd_ctx;

/* ctx: a set's sgd context (fields lr, m, keep, wd, use_wd, use_m,
 * maximize, nesterov, first); h: the amp_sgd_hparams; step: the step. */
#define AMP_SGD_SCALARS_FILL(ctx, h, step)                                                          \
    do {                                                                                            \
        (ctx).lr = (float)(h)->lr;                                                                  \
        (ctx).m = (float)(h)->momentum;                                                             \
        (ctx).keep = (float)(1.0 - (h)->dampening);                                                 \
        (ctx).wd = (float)(h)->weight_decay;                                                        \
        (ctx).use_wd = (h)->weight_decay != 0;                                                      \
        (ctx).use_m = (h)->momentum != 0;                                                           \
        (ctx).maximize = (h)->maximize;                                                             \
        (ctx).nesterov = (h)->nesterov;                                                             \
        (ctx).first = (step) == 0;                                                                  \
    } while (0)

/* ctx (an amp_sgd_ctx) for the step of dtype t over p, g and buf. */
#define AMP_SGD_CTX_FILL(ctx, t_, p_, g_, buf_, h, step)                                            \
    do {                                                                                            \
        (ctx).t = (t_);                                                                             \
        (ctx).p = (p_);                                                                             \
        (ctx).buf = (buf_);                                                                         \
        (ctx).g = (g_);                                                                             \
        AMP_SGD_SCALARS_FILL(ctx, h, step);                                                         \
    } while (0)

/* V name(c, pi, d, b, maximize, use_wd, use_m, first, nesterov): the
 * reference's step on one vector V of parameters pi and gradients d:
 * d = g (negated to maximize), + wd p, the momentum buffer b = first ? d
 * : m b + keep d, d = nesterov ? d + m b : b, p - lr d; each operation
 * rounded to f32 in the reference's operand order, each flag a constant
 * where the loops are specialized.  The set's operations: ADD(a, b),
 * MUL(a, b), SUB(a, b) (no contraction), DUP(float), NEG(v) (a sign
 * flip, as the scalar -g); ATTR its target attribute, or empty. */
#define AMP_SGD_STEP(ATTR, name, V, ADD, MUL, SUB, DUP, NEG)                                        \
    ATTR static AMP_ALWAYS_INLINE V name(const amp_sgd_ctx *c, V pi, V d, V *b, int maximize, int use_wd, \
                                         int use_m, int first, int nesterov)                        \
    {                                                                                               \
        if (maximize)                                                                               \
            d = NEG(d);                                                                             \
        if (use_wd)                                                                                 \
            d = ADD(d, MUL(DUP(c->wd), pi));                                                        \
        if (use_m) {                                                                                \
            *b = first ? d : ADD(MUL(DUP(c->m), *b), MUL(DUP(c->keep), d));                         \
            d = nesterov ? ADD(d, MUL(DUP(c->m), *b)) : *b;                                         \
        }                                                                                           \
        return SUB(pi, MUL(DUP(c->lr), d));                                                         \
    }

/* The set's sgd_fast(t, n, p, g, buf, h, step, found_inf) (nothing when
 * found_inf) over its sgd_loop(t, c, begin, end, maximize, use_wd, use_m,
 * first, nesterov): per storage dtype, so that the loads and stores
 * compile to their one case; the common steps (momentum, no weight decay,
 * plain) with constant flags, first step or not, every other combination
 * with the flags as they are.  RUN(n, body, ctx) runs body(ctx, begin,
 * end) over [0, n): the set's chunks on the pool, or one call. */
#define AMP_SGD_DRIVER(ATTR, RUN)                                                                   \
    ATTR static AMP_ALWAYS_INLINE void sgd_dtype(amp_dtype t, const amp_sgd_ctx *c, size_t begin,   \
                                                 size_t end)                                        \
    {                                                                                               \
        if (c->use_m && !c->maximize && !c->use_wd && !c->nesterov) {                               \
            if (c->first)                                                                           \
                sgd_loop(t, c, begin, end, 0, 0, 1, 1, 0);                                          \
            else                                                                                    \
                sgd_loop(t, c, begin, end, 0, 0, 1, 0, 0);                                          \
        } else {                                                                                    \
            sgd_loop(t, c, begin, end, c->maximize, c->use_wd, c->use_m, c->first, c->nesterov);    \
        }                                                                                           \
    }                                                                                               \
    ATTR static void sgd_body(const void *c_, size_t begin, size_t end)                             \
    {                                                                                               \
        const amp_sgd_ctx *c = c_;                                                                  \
        switch (c->t) {                                                                             \
        case AMP_BF16: sgd_dtype(AMP_BF16, c, begin, end); break;                                   \
        case AMP_F16: sgd_dtype(AMP_F16, c, begin, end); break;                                     \
        default: sgd_dtype(AMP_F32, c, begin, end); break;                                          \
        }                                                                                           \
    }                                                                                               \
    static void sgd_fast(amp_dtype t, size_t n, void *p, const void *g, void *buf,                  \
                         const amp_sgd_hparams *h, int64_t step, int32_t found_inf)                 \
    {                                                                                               \
        amp_sgd_ctx c;                                                                              \
        if (found_inf)                                                                              \
            return;                                                                                 \
        AMP_SGD_CTX_FILL(c, t, p, g, buf, h, step);                                                 \
        RUN(n, sgd_body, &c);                                                                       \
    }

/* The table entry sgd_##T, by the set's sgd_fast(t, n, p, g, buf, h,
 * step, found_inf). */
#define AMP_SGD_ENTRY(T)                                                                            \
    static void sgd_##T(size_t n, AMP_CTYPE_##T *p, const AMP_CTYPE_##T *g, AMP_CTYPE_##T *buf,     \
                        const amp_sgd_hparams *h, int64_t step, int32_t found_inf)                  \
    {                                                                                               \
        sgd_fast(AMP_DTYPE_##T, n, p, g, buf, h, step, found_inf);                                  \
    }

#endif
