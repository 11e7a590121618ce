/*
 * kernel_set.h - what a kernel set's file (x86/avx2.c; x86/avx512.c, which
 * holds both AVX-512 sets) includes to plug its micro-kernels into the
 * drivers: generic packing bodies (inlined into each file's
 * target-specific wrappers, so the compiler may vectorize them for that
 * ISA) and the table entries that route linear, matmul and gemm into the
 * blocked driver amp_fast_gemm (gemm.c), and conv (and conv_ex with its
 * weight packing), conv_transpose and conv_backward_weight into the
 * convolution drivers (conv.h), all on the same micro-kernels.  The
 * contract of packing, micro-kernels and epilogues is in amprt_internal.h.
 */
#ifndef AMPRT_FRAME_KERNEL_SET_H
#define AMPRT_FRAME_KERNEL_SET_H

#include <string.h>

#include "amprt_internal.h"

/* One f32 micro-panel: element (i, kk) of the source, at base + i * ws +
 * kk * ks (elements of dtype t), goes to dst[kk * W + i]; i >= width is 0. */
static AMP_ALWAYS_INLINE void isa_pack_f32_body(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width,
                                                int64_t k, float *dst, int W)
{
    if (ws == 1 && t == AMP_F32 && width == W) {
        const float *s = base;
        for (int64_t kk = 0; kk < k; kk++)
            memcpy(dst + kk * W, s + kk * ks, (size_t)W * sizeof(float));
        return;
    }
    for (int64_t kk = 0; kk < k; kk++) {
        float *o = dst + kk * W;
        int i = 0;
        for (; i < width; i++)
            o[i] = amp_ld(t, base, i * ws + kk * ks);
        for (; i < W; i++)
            o[i] = 0.0f;
    }
}

/* The same for bf16 pairs: unit (u, i) holds k = 2u (low half) and 2u + 1
 * (high half); an odd k's last unit has a zero high half. */
static AMP_ALWAYS_INLINE void isa_pack_bf16_body(const uint16_t *s, int64_t ws, int64_t ks, int width, int64_t k,
                                                 uint32_t *dst, int W)
{
    int64_t u, kcu = k / 2;
    if (ws == 1 && width == W) {
        for (u = 0; u < kcu; u++) {
            const uint16_t *r0 = s + 2 * u * ks, *r1 = r0 + ks;
            uint32_t *o = dst + u * W;
            for (int i = 0; i < W; i++)
                o[i] = (uint32_t)r0[i] | (uint32_t)r1[i] << 16;
        }
    } else if (ks == 1) {
        for (u = 0; u < kcu; u++) {
            uint32_t *o = dst + u * W;
            int i = 0;
            for (; i < width; i++) {
                const uint16_t *p = s + i * ws + 2 * u;
                o[i] = (uint32_t)p[0] | (uint32_t)p[1] << 16;
            }
            for (; i < W; i++)
                o[i] = 0;
        }
    } else {
        for (u = 0; u < kcu; u++) {
            uint32_t *o = dst + u * W;
            int i = 0;
            for (; i < width; i++)
                o[i] = (uint32_t)s[i * ws + 2 * u * ks] | (uint32_t)s[i * ws + (2 * u + 1) * ks] << 16;
            for (; i < W; i++)
                o[i] = 0;
        }
    }
    if (k & 1) {
        uint32_t *o = dst + kcu * W;
        int i = 0;
        for (; i < width; i++)
            o[i] = s[i * ws + (k - 1) * ks];
        for (; i < W; i++)
            o[i] = 0;
    }
}

/* pack_b_im2col's contract (amprt_internal.h) in plain C, for a kernel
 * whose packing is a plain copy: bf16 pairs (kpair 2, es 2) or f32 units
 * of f32 elements (kpair 1, es 4); W = nr.  Each run is cut at the
 * micro-panels' edges; within a piece, half h's units are 0 before lo,
 * the source elements up to hi, 0 after. */
static AMP_ALWAYS_INLINE void isa_pack_b_im2col_body(int kpair, int64_t stride, const int64_t *col, int64_t nruns,
                                                     const amp_im2col_tap *const tap[2], const void *const plane[2],
                                                     int64_t kcu, uint32_t *dst, int W)
{
    static const amp_im2col_tap none = { 0, 0, 0 };
    for (int64_t ri = 0; ri < nruns; ri++) {
        const int64_t len = col[ri + 1] - col[ri];
        const amp_im2col_tap *t0 = tap[0] != NULL ? &tap[0][ri] : &none;
        const amp_im2col_tap *t1 = kpair == 2 && tap[1] != NULL ? &tap[1][ri] : &none;
        for (int64_t q = 0; q < len;) {
            const int64_t c = col[ri] + q, n = W - c % W < len - q ? W - c % W : len - q;
            uint32_t *o = dst + c / W * kcu * W + c % W; /* o[i - q]: run column i */
            if (kpair == 1) {
                const int64_t lo = t0->lo > q ? t0->lo : q, hi = t0->hi < q + n ? t0->hi : q + n;
                const char *s0 = t0->hi > t0->lo ? (const char *)plane[0] + (size_t)t0->off * 4 : NULL;
                int64_t i = q;
                for (; i < lo && i < q + n; i++)
                    o[i - q] = 0;
                if (stride == 1 && hi > i) {
                    memcpy(o + (i - q), s0 + (size_t)(i - t0->lo) * 4, (size_t)(hi - i) * 4);
                    i = hi;
                }
                for (; i < hi; i++)
                    memcpy(o + (i - q), s0 + (size_t)((i - t0->lo) * stride) * 4, 4);
                for (; i < q + n; i++)
                    o[i - q] = 0;
            } else {
                const uint16_t *s0 = t0->hi > t0->lo ? (const uint16_t *)plane[0] + t0->off : NULL;
                const uint16_t *s1 = t1->hi > t1->lo ? (const uint16_t *)plane[1] + t1->off : NULL;
                for (int64_t i = q; i < q + n; i++) {
                    const uint32_t a = i >= t0->lo && i < t0->hi ? s0[(i - t0->lo) * stride] : 0;
                    const uint32_t b = i >= t1->lo && i < t1->hi ? s1[(i - t1->lo) * stride] : 0;
                    o[i - q] = a | b << 16;
                }
            }
            q += n;
        }
    }
}

/* The f32 packing's general case (any strides, a part panel), which the
 * sets' packers fall back to beside their vector cases: one copy, in
 * frame/gemm.c (amp_pack_f32_generic), rather than one per set and call
 * site, since a small binary links every set's packer. */
#define ISA_PACK_F32_SWITCH(t, base, ws, ks, width, k, dst, W) \
    amp_pack_f32_generic(t, base, ws, ks, width, k, dst, W)

/* The table entries of one kernel set for dtype T, through the drivers
 * with micro-kernel descriptors (expressions yielding const
 * amp_gemm_kernel *): PKERN for the products (amp_fast_gemm reads only
 * micro, pack_a, pack_b and epi), KERN, the same with the convolutions'
 * hooks, for the convolutions.  Two descriptors, so that a program that
 * multiplies but never convolves does not link the convolutions' hooks
 * (docs/runtime.md, "Small binaries"); a set without such hooks passes
 * one descriptor twice. */
#define ISA_GEMM_ENTRIES(PREFIX, T, KERN, PKERN)                                                  \
    static void PREFIX##_gemm_##T(const amp_gemm_desc *d, const AMP_CTYPE_##T *a,                 \
                                  const AMP_CTYPE_##T *b, const AMP_CTYPE_##T *c, AMP_CTYPE_##T *y) \
    {                                                                                             \
        amp_fast_gemm(PKERN, AMP_DTYPE_##T, d, a, b, c, NULL, y);                                 \
    }                                                                                             \
    /* the product, then the active set's relu_backward over it (the same bits) */               \
    static void PREFIX##_gemm_relu_backward_##T(const amp_gemm_desc *d, const AMP_CTYPE_##T *a,   \
                                                const AMP_CTYPE_##T *b, const AMP_CTYPE_##T *y,   \
                                                AMP_CTYPE_##T *dx)                                \
    {                                                                                             \
        const int64_t out_batches = d->sum_batch ? 1 : d->batch;                                  \
        amp_fast_gemm(PKERN, AMP_DTYPE_##T, d, a, b, NULL, NULL, dx);                             \
        if (out_batches > 0 && d->M > 0 && d->N > 0)                                              \
            amp_relu_backward_##T((size_t)(out_batches * d->M * d->N), y, y, dx, dx);             \
    }                                                                                             \
    static void PREFIX##_linear_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,      \
                                    const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,            \
                                    AMP_CTYPE_##T *y)                                             \
    {                                                                                             \
        amp_gemm_desc d = { 1, M, N, K, { 0, K, 1 }, { 0, 1, K }, { 0, 0, 0 }, 1.0, 0.0, 0 };      \
        amp_fast_gemm(PKERN, AMP_DTYPE_##T, &d, x, w, NULL, bias, y);                             \
    }                                                                                             \
    /* the product, then the active set's relu over it (the same bits) */                        \
    static void PREFIX##_linear_relu_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x, \
                                         const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,       \
                                         AMP_CTYPE_##T *y)                                        \
    {                                                                                             \
        PREFIX##_linear_##T(M, N, K, x, w, bias, y);                                              \
        if (M > 0 && N > 0)                                                                       \
            amp_relu_##T((size_t)(M * N), y, y);                                                  \
    }                                                                                             \
    static void PREFIX##_matmul_##T(int64_t batch, int64_t M, int64_t N, int64_t K,               \
                                    const AMP_CTYPE_##T *a, int64_t a_batch_stride,               \
                                    const AMP_CTYPE_##T *b, int64_t b_batch_stride,               \
                                    AMP_CTYPE_##T *c)                                             \
    {                                                                                             \
        amp_gemm_desc d = { batch, M, N, K, { a_batch_stride, K, 1 }, { b_batch_stride, N, 1 },   \
                            { 0, 0, 0 }, 1.0, 0.0, 0 };                                           \
        amp_fast_gemm(PKERN, AMP_DTYPE_##T, &d, a, b, NULL, NULL, c);                             \
    }                                                                                             \
    static void PREFIX##_conv_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,                 \
                                  const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,              \
                                  AMP_CTYPE_##T *y)                                               \
    {                                                                                             \
        amp_fast_conv(KERN, AMP_DTYPE_##T, d, x, w, bias, y);                                     \
    }                                                                                             \
    static size_t PREFIX##_conv_packed_bytes_##T(const amp_conv_desc *d)                          \
    {                                                                                             \
        return amp_fast_conv_packed_bytes(KERN, AMP_DTYPE_##T, d);                                \
    }                                                                                             \
    static void PREFIX##_conv_pack_weights_##T(const amp_conv_desc *d, amp_dtype src, const void *w, \
                                               void *packed)                                      \
    {                                                                                             \
        amp_fast_conv_pack_weights(KERN, AMP_DTYPE_##T, d, src, w, packed);                       \
    }                                                                                             \
    static void PREFIX##_conv_ex_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,              \
                                     const AMP_CTYPE_##T *w, const void *packed,                  \
                                     const AMP_CTYPE_##T *bias, const amp_conv_post *post,        \
                                     AMP_CTYPE_##T *y)                                            \
    {                                                                                             \
        amp_fast_conv_ex(KERN, AMP_DTYPE_##T, d, x, w, packed, bias, post, y);                    \
    }                                                                                             \
    static void PREFIX##_conv_backward_weight_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x, \
                                                  const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dw)     \
    {                                                                                             \
        amp_fast_conv_backward_weight(KERN, AMP_DTYPE_##T, d, x, dy, dw);                         \
    }                                                                                             \
    ISA_GEMM_TO_F32_##T(PREFIX, KERN)                                                             \
    static void PREFIX##_conv_transpose_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,       \
                                            const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,    \
                                            AMP_CTYPE_##T *y)                                     \
    {                                                                                             \
        amp_fast_conv_transpose(KERN, AMP_DTYPE_##T, d, x, w, bias, y);                           \
    }

/* linear_ex and its packing for dtype T of a set, on the driver with
 * PKERN; LINEAR and LINEAR_RELU are the set's own unpacked kernels (its
 * small products' paths in front of the driver, where it has them), which
 * an unpacked call runs.  A packed call runs the function its weights'
 * header names (linear_packed_run, put there by linear_pack_weights): the
 * driver on the panels, then the relu kernel (the same bits as the relu
 * in the unpacked kernels' epilogues); or, where the weights' copy in T is
 * kept and SMALL_FIRST(M, N, K) holds (the set's one-pass path is faster
 * there than the driver on packed panels; 0 for a set without one), the
 * unpacked kernels on that copy.  Each set's file invokes it beside its
 * ISA_GEMM_ENTRIES. */
#define ISA_LINEAR_EX_ENTRIES(PREFIX, T, PKERN, LINEAR, LINEAR_RELU, SMALL_FIRST)                 \
    static size_t PREFIX##_linear_packed_bytes_##T(int64_t N, int64_t K)                          \
    {                                                                                             \
        return amp_fast_linear_packed_bytes(PKERN, AMP_DTYPE_##T, N, K);                          \
    }                                                                                             \
    static void PREFIX##_linear_packed_run_##T(const void *packed, int64_t M, int64_t N, int64_t K, \
                                               const void *x, const void *bias, int relu, void *y) \
    {                                                                                             \
        const int64_t copy = ((const amp_linear_packed_header *)packed)->h.copy;                  \
        if (copy != 0 && (SMALL_FIRST)) {                                                         \
            (relu ? LINEAR_RELU : LINEAR)(M, N, K, x,                                             \
                                          (const AMP_CTYPE_##T *)(const void *)((const char *)packed + copy), \
                                          bias, y);                                               \
            return;                                                                               \
        }                                                                                         \
        amp_fast_linear_ex(PKERN, AMP_DTYPE_##T, M, N, K, x, packed, bias, y);                    \
        if (relu && M > 0 && N > 0)                                                               \
            amp_relu_##T((size_t)(M * N), y, y);                                                  \
    }                                                                                             \
    static void PREFIX##_linear_pack_weights_##T(int64_t N, int64_t K, amp_dtype src,             \
                                                 const void *w, void *packed)                     \
    {                                                                                             \
        amp_fast_linear_pack_weights(PKERN, AMP_DTYPE_##T, N, K, src, w, packed,                  \
                                     PREFIX##_linear_packed_run_##T);                             \
    }                                                                                             \
    static void PREFIX##_linear_ex_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,   \
                                       const AMP_CTYPE_##T *w, const void *packed,                \
                                       const AMP_CTYPE_##T *bias, int relu, AMP_CTYPE_##T *y)     \
    {                                                                                             \
        if (packed != NULL)                                                                       \
            ((const amp_linear_packed_header *)packed)->h.run(packed, M, N, K, x, bias, relu, y); \
        else                                                                                      \
            (relu ? LINEAR_RELU : LINEAR)(M, N, K, x, w, bias, y);                                \
    }

/* The kernels ISA_GEMM_ENTRIES(PREFIX, T, ...) defines, as X(kernel,
 * implementation) for a set's list (AMP_ISA_KERNEL): the products, then
 * the convolutions (and, for bf16 and f16, the weight gradient into f32). */
#define ISA_GEMM_PRODUCT_KERNELS(X, PREFIX, T)                                                    \
    X(gemm_##T, PREFIX##_gemm_##T)                                                                \
    X(gemm_relu_backward_##T, PREFIX##_gemm_relu_backward_##T)                                    \
    X(linear_##T, PREFIX##_linear_##T)                                                            \
    X(linear_relu_##T, PREFIX##_linear_relu_##T)                                                  \
    ISA_GEMM_LINEAR_EX_KERNELS(X, PREFIX, T)                                                      \
    X(matmul_##T, PREFIX##_matmul_##T)
/* linear_ex and its packing (ISA_LINEAR_EX_ENTRIES), which a set with
 * products of its own in front of the driver lists beside those */
#define ISA_GEMM_LINEAR_EX_KERNELS(X, PREFIX, T)                                                  \
    X(linear_packed_bytes_##T, PREFIX##_linear_packed_bytes_##T)                                  \
    X(linear_pack_weights_##T, PREFIX##_linear_pack_weights_##T)                                  \
    X(linear_ex_##T, PREFIX##_linear_ex_##T)
#define ISA_GEMM_CONV_KERNELS(X, PREFIX, T)                                                       \
    X(conv_##T, PREFIX##_conv_##T)                                                                \
    X(conv_packed_bytes_##T, PREFIX##_conv_packed_bytes_##T)                                      \
    X(conv_pack_weights_##T, PREFIX##_conv_pack_weights_##T)                                      \
    X(conv_ex_##T, PREFIX##_conv_ex_##T)                                                          \
    X(conv_backward_weight_##T, PREFIX##_conv_backward_weight_##T)                                \
    X(conv_transpose_##T, PREFIX##_conv_transpose_##T)                                            \
    ISA_GEMM_TO_F32_KERNEL_##T(X, PREFIX)
#define ISA_GEMM_KERNELS(X, PREFIX, T) ISA_GEMM_PRODUCT_KERNELS(X, PREFIX, T) ISA_GEMM_CONV_KERNELS(X, PREFIX, T)

/* The 2-byte dtypes' weight gradient into f32 (amprt/train.h); none for f32. */
#define ISA_GEMM_TO_F32_f32(PREFIX, KERN)
#define ISA_GEMM_TO_F32_LOW(PREFIX, KERN, T)                                                      \
    static void PREFIX##_conv_backward_weight_to_f32_##T(const amp_conv_desc *d,                  \
                                                         const AMP_CTYPE_##T *x,                  \
                                                         const AMP_CTYPE_##T *dy, float *dw,      \
                                                         int accumulate)                          \
    {                                                                                             \
        amp_fast_conv_backward_weight_to_f32(KERN, AMP_DTYPE_##T, d, x, dy, dw, accumulate);      \
    }
#define ISA_GEMM_TO_F32_bf16(PREFIX, KERN) ISA_GEMM_TO_F32_LOW(PREFIX, KERN, bf16)
#define ISA_GEMM_TO_F32_f16(PREFIX, KERN) ISA_GEMM_TO_F32_LOW(PREFIX, KERN, f16)
#define ISA_GEMM_TO_F32_KERNEL_f32(X, PREFIX)
#define ISA_GEMM_TO_F32_KERNEL_bf16(X, PREFIX) X(conv_backward_weight_to_f32_bf16, PREFIX##_conv_backward_weight_to_f32_bf16)
#define ISA_GEMM_TO_F32_KERNEL_f16(X, PREFIX) X(conv_backward_weight_to_f32_f16, PREFIX##_conv_backward_weight_to_f32_f16)

#endif /* AMPRT_FRAME_KERNEL_SET_H */
