/*
 * eltwise_form.h - what the x86 sets' element-wise files share: the
 * contexts of relu, add, grad_accumulate, add_relu_backward, the casts and
 * batch_norm (running statistics); the bodies that pick a loop per
 * storage dtype (so that the set's loads and stores compile to their one
 * case) and per batch_norm's weight and bias; the table entries over a
 * chunked runner; and the list of the kernels they fill.  A set keeps its
 * vector loops (x86/avx2_eltwise.c, x86/avx512_eltwise.c):
 *
 *   add_loop(t, c, begin, end), accumulate_loop(t, c, begin, end) and
 *   add_relu_bw_loop(t, c, begin, end) over an amp_elt_binary_ctx;
 *   cast_loop(from, to, c, begin, end) over an amp_elt_cast_ctx;
 *   bn_row(t, x, y, n, mean, rstd, w, b, has_w, has_b): batch_norm's step
 *   over a row of n, on the set's vectors (AMP_ELTWISE_BN_PLANES);
 *   relu_body, max_pool_fast(t, d, x, y, indices) and global_avg_pool
 *   (frame/pool_form.h's AMP_GLOBAL_AVG_POOL_ENTRY).
 *
 * Needs amprt_internal.h and frame/pool_form.h.
 */
#ifndef AMPRT_FRAME_ELTWISE_FORM_H
#define AMPRT_FRAME_ELTWISE_FORM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    amp_dtype t;
    const void *x;
    void *y;
} amp_elt_unary_ctx;

/* add: y = a + b; add_relu_backward: y0 the relu's output; grad_accumulate:
 * a and y the f32 accumulator, b the gradient. */
typedef struct {
    amp_dtype t;
    const void *a, *b, *y0;
    void *y;
} amp_elt_binary_ctx;

typedef struct {
    amp_dtype from, to;
    const void *x;
    void *y;
} amp_elt_cast_ctx;

typedef struct {
    amp_dtype t, pt;
    int64_t C, HxW;
    const void *x, *mean, *var, *weight, *bias;
    double eps;
    void *y;
} amp_elt_bn_ctx;

/* bn_planes(t, c, begin, end, has_w, has_b): the (n, c) planes [begin,
 * end), each channel's scalars as the reference takes them (rstd = 1 /
 * sqrt(var + eps) in f32), then the set's bn_row over the plane; V the
 * set's vector, DUP(float) its broadcast. */
#define AMP_ELTWISE_BN_PLANES(ATTR, V, DUP, bn_row)                                               \
    ATTR static AMP_ALWAYS_INLINE void bn_planes(amp_dtype t, const amp_elt_bn_ctx *c, size_t begin, size_t end, \
                                                 int has_w, int has_b)                            \
    {                                                                                             \
        const size_t es = t == AMP_F32 ? 4 : 2;                                                   \
        for (size_t plane = begin; plane < end; plane++) {                                        \
            const int64_t ch = (int64_t)plane % c->C;                                             \
            const float mean = amp_ld(c->pt, c->mean, ch);                                        \
            const float rstd = 1 / sqrtf(amp_ld(c->pt, c->var, ch) + (float)c->eps);              \
            const V vmean = DUP(mean), vrstd = DUP(rstd);                                         \
            const V vw = DUP(has_w ? amp_ld(c->pt, c->weight, ch) : 1.0f);                        \
            const V vb = DUP(has_b ? amp_ld(c->pt, c->bias, ch) : 0.0f);                          \
            bn_row(t, (const char *)c->x + plane * (size_t)c->HxW * es,                           \
                   (char *)c->y + plane * (size_t)c->HxW * es, c->HxW, vmean, vrstd, vw, vb, has_w, has_b); \
        }                                                                                         \
    }

/* The bodies over the set's loops (ATTR: its target attribute);
 * WIDEN_BF16(c, begin, end) is the set's bf16 -> f32 cast. */
#define AMP_ELTWISE_BODIES(ATTR, WIDEN_BF16)                                                      \
    ATTR static void add_body(const void *c_, size_t begin, size_t end)                           \
    {                                                                                             \
        const amp_elt_binary_ctx *c = c_;                                                         \
        switch (c->t) {                                                                           \
        case AMP_BF16: add_loop(AMP_BF16, c, begin, end); break;                                  \
        case AMP_F16: add_loop(AMP_F16, c, begin, end); break;                                    \
        default: add_loop(AMP_F32, c, begin, end); break;                                         \
        }                                                                                         \
    }                                                                                             \
    ATTR static void accumulate_body(const void *c_, size_t begin, size_t end)                    \
    {                                                                                             \
        const amp_elt_binary_ctx *c = c_;                                                         \
        if (c->t == AMP_BF16)                                                                     \
            accumulate_loop(AMP_BF16, c, begin, end);                                             \
        else                                                                                      \
            accumulate_loop(AMP_F16, c, begin, end);                                              \
    }                                                                                             \
    ATTR static void add_relu_bw_body(const void *c_, size_t begin, size_t end)                   \
    {                                                                                             \
        const amp_elt_binary_ctx *c = c_;                                                         \
        switch (c->t) {                                                                           \
        case AMP_BF16: add_relu_bw_loop(AMP_BF16, c, begin, end); break;                          \
        case AMP_F16: add_relu_bw_loop(AMP_F16, c, begin, end); break;                            \
        default: add_relu_bw_loop(AMP_F32, c, begin, end); break;                                 \
        }                                                                                         \
    }                                                                                             \
    ATTR static void cast_body(const void *c_, size_t begin, size_t end)                          \
    {                                                                                             \
        const amp_elt_cast_ctx *c = c_;                                                           \
        if (c->from == AMP_F32 && c->to == AMP_BF16)                                              \
            cast_loop(AMP_F32, AMP_BF16, c, begin, end);                                          \
        else if (c->from == AMP_BF16 && c->to == AMP_F32)                                         \
            WIDEN_BF16(c, begin, end);                                                            \
        else if (c->from == AMP_F32 && c->to == AMP_F16)                                          \
            cast_loop(AMP_F32, AMP_F16, c, begin, end);                                           \
        else                                                                                      \
            cast_loop(AMP_F16, AMP_F32, c, begin, end);                                           \
    }                                                                                             \
    /* [begin, end) counts (n, c) planes; batch_norm with weight and bias \
     * (a network's usual one) with both flags constant */                                       \
    ATTR static void bn_body(const void *c_, size_t begin, size_t end)                            \
    {                                                                                             \
        const amp_elt_bn_ctx *c = c_;                                                             \
        const int has_w = c->weight != NULL, has_b = c->bias != NULL;                             \
        if (has_w && has_b) {                                                                     \
            switch (c->t) {                                                                       \
            case AMP_BF16: bn_planes(AMP_BF16, c, begin, end, 1, 1); return;                      \
            case AMP_F16: bn_planes(AMP_F16, c, begin, end, 1, 1); return;                        \
            default: bn_planes(AMP_F32, c, begin, end, 1, 1); return;                             \
            }                                                                                     \
        }                                                                                         \
        switch (c->t) {                                                                           \
        case AMP_BF16: bn_planes(AMP_BF16, c, begin, end, has_w, has_b); return;                  \
        case AMP_F16: bn_planes(AMP_F16, c, begin, end, has_w, has_b); return;                    \
        default: bn_planes(AMP_F32, c, begin, end, has_w, has_b); return;                         \
        }                                                                                         \
    }

/* The table entries over RUN(n, unit, body, ctx), the set's chunked
 * runner; batch_norm with f64 parameters goes to the reference. */
#define AMP_ELTWISE_ENTRIES_OF(RUN, T)                                                            \
    static void relu_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                       \
    {                                                                                             \
        amp_elt_unary_ctx c = { AMP_DTYPE_##T, x, y };                                            \
        RUN(n, 1, relu_body, &c);                                                                 \
    }                                                                                             \
    static void add_##T(size_t n, const AMP_CTYPE_##T *a, const AMP_CTYPE_##T *b, AMP_CTYPE_##T *y) \
    {                                                                                             \
        amp_elt_binary_ctx c = { AMP_DTYPE_##T, a, b, NULL, y };                                  \
        RUN(n, 1, add_body, &c);                                                                  \
    }                                                                                             \
    static void add_relu_backward_##T(size_t n, const AMP_CTYPE_##T *y, const AMP_CTYPE_##T *a,   \
                                      const AMP_CTYPE_##T *b, AMP_CTYPE_##T *dx)                  \
    {                                                                                             \
        amp_elt_binary_ctx c = { AMP_DTYPE_##T, a, b, y, dx };                                    \
        RUN(n, 1, add_relu_bw_body, &c);                                                          \
    }                                                                                             \
    static void batch_norm_##T(int64_t N, int64_t C, int64_t HxW, const AMP_CTYPE_##T *x,         \
                               amp_dtype pt, const void *rm, const void *rv, const void *w,       \
                               const void *b, double eps, AMP_CTYPE_##T *y)                       \
    {                                                                                             \
        amp_elt_bn_ctx c = { AMP_DTYPE_##T, pt, C, HxW, x, rm, rv, w, b, eps, y };                \
        if (pt != AMP_F32 && pt != AMP_BF16 && pt != AMP_F16)                                     \
            amp_ref_batch_norm_##T(N, C, HxW, x, pt, rm, rv, w, b, eps, y);                        \
        else if (N > 0 && C > 0 && HxW > 0)                                                       \
            RUN((size_t)(N * C), (size_t)HxW, bn_body, &c);                                       \
    }                                                                                             \
    static void max_pool_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y,     \
                             int64_t *indices)                                                    \
    {                                                                                             \
        max_pool_fast(AMP_DTYPE_##T, d, x, y, indices);                                           \
    }                                                                                             \
    AMP_GLOBAL_AVG_POOL_ENTRY(T, global_avg_pool)

#define AMP_ELTWISE_ACCUMULATE_ENTRY(RUN, T)                                                      \
    static void grad_accumulate_##T(size_t n, float *acc, const AMP_CTYPE_##T *g)                  \
    {                                                                                             \
        amp_elt_binary_ctx c = { AMP_DTYPE_##T, acc, g, NULL, acc };                              \
        RUN(n, 1, accumulate_body, &c);                                                           \
    }

#define AMP_ELTWISE_CAST_ENTRY(RUN, S, D)                                                         \
    static void cast_##S##_##D(size_t n, const AMP_CTYPE_##S *x, AMP_CTYPE_##D *y)                 \
    {                                                                                             \
        amp_elt_cast_ctx c = { AMP_DTYPE_##S, AMP_DTYPE_##D, x, y };                              \
        RUN(n, 1, cast_body, &c);                                                                 \
    }

/* Every entry above, for each dtype. */
#define AMP_ELTWISE_ENTRIES(RUN)                                                                  \
    AMP_ELTWISE_ENTRIES_OF(RUN, f32)                                                              \
    AMP_ELTWISE_ENTRIES_OF(RUN, bf16)                                                             \
    AMP_ELTWISE_ENTRIES_OF(RUN, f16)                                                              \
    AMP_ELTWISE_ACCUMULATE_ENTRY(RUN, bf16)                                                       \
    AMP_ELTWISE_ACCUMULATE_ENTRY(RUN, f16)                                                        \
    AMP_ELTWISE_CAST_ENTRY(RUN, f32, bf16)                                                        \
    AMP_ELTWISE_CAST_ENTRY(RUN, bf16, f32)                                                        \
    AMP_ELTWISE_CAST_ENTRY(RUN, f32, f16)                                                         \
    AMP_ELTWISE_CAST_ENTRY(RUN, f16, f32)

/* The kernels AMP_ELTWISE_ENTRIES fills, and the data movement on the
 * pool every set shares (frame/data_movement.c): X(kernel, implementation). */
#define AMP_ELTWISE_OF(X, T)                                                                      \
    X(relu_##T, relu_##T)                                                                         \
    X(add_##T, add_##T)                                                                           \
    X(add_relu_backward_##T, add_relu_backward_##T)                                               \
    X(batch_norm_##T, batch_norm_##T)                                                             \
    X(max_pool_##T, max_pool_##T)                                                                 \
    X(adaptive_avg_pool_##T, adaptive_avg_pool_##T)
#define AMP_ELTWISE_KERNELS(X)                                                                    \
    AMP_ELTWISE_OF(X, f32)                                                                        \
    AMP_ELTWISE_OF(X, bf16)                                                                       \
    AMP_ELTWISE_OF(X, f16)                                                                        \
    X(grad_accumulate_bf16, grad_accumulate_bf16)                                                 \
    X(grad_accumulate_f16, grad_accumulate_f16)                                                   \
    X(cast_f32_bf16, cast_f32_bf16)                                                               \
    X(cast_bf16_f32, cast_bf16_f32)                                                               \
    X(cast_f32_f16, cast_f32_f16)                                                                 \
    X(cast_f16_f32, cast_f16_f32)                                                                 \
    X(copy_strided, amp_pooled_copy_strided)                                                      \
    X(fill_f32, amp_pooled_fill_f32)                                                              \
    X(fill_bf16, amp_pooled_fill_bf16)                                                            \
    X(fill_f16, amp_pooled_fill_f16)

#endif /* AMPRT_FRAME_ELTWISE_FORM_H */
