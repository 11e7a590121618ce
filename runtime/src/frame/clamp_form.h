/*
 * clamp_form.h - what the kernel sets' clamp files share: the three
 * operations a set's loop runs (clamp and hardtanh forward, clamp's and
 * hardtanh's gradients), the table entries over that loop, and the list
 * of the kernels they fill.  A gradient without x (the caller kept only
 * y) goes to the reference.  A set keeps its vector steps and its loop
 * RUN(t, op, n, x, dy, lo, hi, y) (x86/avx2_clamp.c, x86/avx512_clamp.c,
 * arm/neon_clamp.c); the x86 sets' RUN is AMP_CLAMP_DRIVER's clamp_run,
 * their loop on the pool.  Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_CLAMP_FORM_H
#define AMPRT_FRAME_CLAMP_FORM_H

enum { CLAMP, CLAMP_BW, HARDTANH_BW };

/* The x86 sets' clamp_run(t, op, n, x, dy, lo, hi, y): the set's
 * clamp_loop(t, op, c, begin, end) per op and storage dtype (so that its
 * loads and stores compile to their one case), over RUN_CHUNKED(n, unit,
 * body, ctx) (frame/chunked.h's amp_run_chunked).  ATTR: the set's target
 * attribute. */
typedef struct {
    amp_dtype t;
    int op; /* CLAMP, CLAMP_BW, HARDTANH_BW */
    const void *x, *dy;
    float lo, hi;
    void *y;
} amp_clamp_ctx;

#define AMP_CLAMP_CASES(OP)                                                                       \
    switch (c->t) {                                                                               \
    case AMP_BF16: clamp_loop(AMP_BF16, OP, c, begin, end); return;                               \
    case AMP_F16: clamp_loop(AMP_F16, OP, c, begin, end); return;                                 \
    default: clamp_loop(AMP_F32, OP, c, begin, end); return;                                      \
    }
#define AMP_CLAMP_DRIVER(ATTR, RUN_CHUNKED)                                                       \
    ATTR static void clamp_body(const void *c_, size_t begin, size_t end)                         \
    {                                                                                             \
        const amp_clamp_ctx *c = c_;                                                              \
        switch (c->op) {                                                                          \
        case CLAMP: AMP_CLAMP_CASES(CLAMP)                                                        \
        case CLAMP_BW: AMP_CLAMP_CASES(CLAMP_BW)                                                  \
        default: AMP_CLAMP_CASES(HARDTANH_BW)                                                     \
        }                                                                                         \
    }                                                                                             \
    static void clamp_run(amp_dtype t, int op, size_t n, const void *x, const void *dy, double lo, \
                          double hi, void *y)                                                     \
    {                                                                                             \
        amp_clamp_ctx c = { t, op, x, dy, (float)lo, (float)hi, y };                              \
        RUN_CHUNKED(n, 1, clamp_body, &c);                                                        \
    }

#define AMP_CLAMP_ENTRIES(T, RUN)                                                                 \
    static void clamp_##T(size_t n, const AMP_CTYPE_##T *x, double lo, double hi, AMP_CTYPE_##T *y) \
    {                                                                                             \
        RUN(AMP_DTYPE_##T, CLAMP, n, x, NULL, lo, hi, y);                                         \
    }                                                                                             \
    static void clamp_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,      \
                                   const AMP_CTYPE_##T *dy, double lo, double hi, AMP_CTYPE_##T *dx) \
    {                                                                                             \
        if (x == NULL)                                                                            \
            amp_ref_clamp_backward_##T(n, x, y, dy, lo, hi, dx);                                  \
        else                                                                                      \
            RUN(AMP_DTYPE_##T, CLAMP_BW, n, x, dy, lo, hi, dx);                                   \
    }                                                                                             \
    static void hardtanh_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,   \
                                      const AMP_CTYPE_##T *dy, double lo, double hi, AMP_CTYPE_##T *dx) \
    {                                                                                             \
        if (x == NULL)                                                                            \
            amp_ref_hardtanh_backward_##T(n, x, y, dy, lo, hi, dx);                               \
        else                                                                                      \
            RUN(AMP_DTYPE_##T, HARDTANH_BW, n, x, dy, lo, hi, dx);                                \
    }

/* The kernels AMP_CLAMP_ENTRIES fills: X(kernel, implementation). */
#define AMP_CLAMP_OF(X, T)                                                                        \
    X(clamp_##T, clamp_##T)                                                                       \
    X(hardtanh_##T, clamp_##T)                                                                    \
    X(clamp_backward_##T, clamp_backward_##T)                                                     \
    X(hardtanh_backward_##T, hardtanh_backward_##T)
#define AMP_CLAMP_KERNELS(X) AMP_CLAMP_OF(X, f32) AMP_CLAMP_OF(X, bf16) AMP_CLAMP_OF(X, f16)

#endif
