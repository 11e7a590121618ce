/*
 * backward_form.h - what the x86 sets' gradient files share: the
 * relu_backward driver over the set's loop (frame/chunked.h's split), the
 * table entries of relu_backward, max_pool_backward and
 * max_pool_relu_backward, adaptive_avg_pool_backward (frame/pool_form.h)
 * and sgd (frame/sgd_form.h), and the list of the kernels they fill.  A
 * set keeps its vector loops (x86/avx2_backward.c,
 * x86/avx512_backward.c):
 *
 *   relu_backward_body(c, begin, end) over an amp_relu_bw_ctx;
 *   max_pool_backward_task(ctx, plane, slot) over an amp_mpb_ctx of LANES
 *   outputs at a time, whose whole-vector taps read SLACK floats past the
 *   last output's (frame/pool_form.h's amp_mpb_run);
 *   sgd_fast (frame/sgd_form.h's AMP_SGD_DRIVER over its sgd_loop).
 *
 * Needs amprt_internal.h, frame/chunked.h, frame/pool_form.h and
 * frame/sgd_form.h.
 */
#ifndef AMPRT_FRAME_BACKWARD_FORM_H
#define AMPRT_FRAME_BACKWARD_FORM_H

#include <stddef.h>

typedef struct {
    amp_dtype t;
    const void *x, *dy;
    void *dx;
} amp_relu_bw_ctx;

/* sgd's and relu_backward's runner: single elements in AMP_CHUNK tasks. */
#define AMP_RUN_ELEMENTS(n, body, ctx) amp_run_chunked(n, 1, body, ctx)

/* max_pool_relu_backward's second kernel when the set's max_pool_backward
 * does not take the geometry: relu_backward in place. */
#define AMP_RELU_BW_IN_PLACE(T, n, x, dx) relu_backward_fast(AMP_DTYPE_##T, n, x, dx, dx)

/* The entries of dtype T; MPB_OTHER(T, d, x, dy, dx) runs the
 * max_pool_backward the set's does not take (frame/pool_form.h's OTHER). */
#define AMP_BACKWARD_ENTRIES_OF(MPB_OTHER, T)                                                     \
    static void relu_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,       \
                                  const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                     \
    {                                                                                             \
        if (x == NULL) /* the reference reads 0 for every x */                                   \
            amp_ref_relu_backward_##T(n, x, y, dy, dx);                                           \
        else                                                                                      \
            relu_backward_fast(AMP_DTYPE_##T, n, x, dy, dx);                                      \
    }                                                                                             \
    AMP_POOL_BACKWARD_ENTRIES(T, max_pool_backward_fast, MPB_OTHER, AMP_RELU_BW_IN_PLACE,        \
                              amp_global_avg_pool_backward)                                       \
    AMP_SGD_ENTRY(T)

/* relu_backward_fast over the set's relu_backward_body,
 * max_pool_backward_fast over its max_pool_backward_task (1 when done,
 * else the caller runs MPB_OTHER), and every entry above for each
 * dtype. */
#define AMP_BACKWARD_ENTRIES(MPB_OTHER, LANES, SLACK)                                             \
    static void relu_backward_fast(amp_dtype t, size_t n, const void *x, const void *dy, void *dx) \
    {                                                                                             \
        amp_relu_bw_ctx c = { t, x, dy, dx };                                                     \
        AMP_RUN_ELEMENTS(n, relu_backward_body, &c);                                              \
    }                                                                                             \
    static int max_pool_backward_fast(amp_dtype t, const amp_pool_desc *d, const void *x, const void *dy, \
                                      void *dx, int relu)                                         \
    {                                                                                             \
        return amp_mpb_run(t, d, x, dy, dx, relu, LANES, SLACK, AMP_PARALLEL_MIN,                 \
                           max_pool_backward_task);                                               \
    }                                                                                             \
    AMP_BACKWARD_ENTRIES_OF(MPB_OTHER, f32)                                                       \
    AMP_BACKWARD_ENTRIES_OF(MPB_OTHER, bf16)                                                      \
    AMP_BACKWARD_ENTRIES_OF(MPB_OTHER, f16)

/* The kernels AMP_BACKWARD_ENTRIES fills: X(kernel, implementation). */
#define AMP_BACKWARD_OF(X, T)                                                                     \
    X(adaptive_avg_pool_backward_##T, adaptive_avg_pool_backward_##T)                             \
    X(relu_backward_##T, relu_backward_##T)                                                       \
    X(sgd_##T, sgd_##T)                                                                           \
    X(max_pool_backward_##T, max_pool_backward_##T)                                               \
    X(max_pool_relu_backward_##T, max_pool_relu_backward_##T)
#define AMP_BACKWARD_KERNELS(X) AMP_BACKWARD_OF(X, f32) AMP_BACKWARD_OF(X, bf16) AMP_BACKWARD_OF(X, f16)

#endif /* AMPRT_FRAME_BACKWARD_FORM_H */
