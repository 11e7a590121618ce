/*
 * avx2.c - the "avx2" (AVX2 + FMA + F16C) kernel set: a 6 x 16 f32 GEMM
 * micro-kernel (12 ymm accumulators, as the Haswell BLAS kernels) and a
 * 4 x 16 narrow one for convolutions with few rows per group, packing
 * and epilogue for amp_fast_gemm and the convolution drivers (contract in
 * amprt_internal.h; conv_ex's post-ops are in x86/avx2_conv.c), and
 * micro_out for bf16 storage (the last k block's tile rounded and stored
 * from the registers).  f32, bf16 and f16 storage all pack to f32 (bf16 by a
 * shift, f16 by vcvtph2ps).
 * Compiled for AVX2 through target attributes only; runs only after
 * dispatch.c's CPU check.
 */

#include "frame/kernel_set.h"
#include "x86/avx2_conv.h"
#include "x86/avx2_small.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

#define MR 6
#define NR 16

#define F32_ROW(i)                                                                                \
    av = _mm256_broadcast_ss(pa + i);                                                             \
    c##i##a = _mm256_fmadd_ps(av, b0, c##i##a);                                                   \
    c##i##b = _mm256_fmadd_ps(av, b1, c##i##b);

#define DECL_ROW(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = _mm256_setzero_ps();

#define STORE_ROW(i)                                                                              \
    if (accumulate) {                                                                             \
        c##i##a = _mm256_add_ps(_mm256_load_ps(w + i * ldw), c##i##a);                            \
        c##i##b = _mm256_add_ps(_mm256_load_ps(w + i * ldw + 8), c##i##b);                        \
    }                                                                                             \
    _mm256_store_ps(w + i * ldw, c##i##a);                                                        \
    _mm256_store_ps(w + i * ldw + 8, c##i##b);

#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS4(X) X(0) X(1) X(2) X(3)
#define MR4 4

/* micro (contract in amprt_internal.h) on MRV x 16 tiles */
#define F32_MICRO(NAME, ROWS_OF, MRV)                                                             \
    AVX2_TARGET static void NAME(int64_t kcu, const void *pa_, const void *pb_, float *w, int64_t ldw,  \
                                 int accumulate)                                                  \
    {                                                                                             \
        const float *pa = pa_, *pb = pb_;                                                         \
        ROWS_OF(DECL_ROW)                                                                         \
        for (int64_t u = 0; u < kcu; u++) {                                                       \
            __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8), av;                      \
            _mm_prefetch((const char *)(pb + 8 * NR), _MM_HINT_T0);                               \
            ROWS_OF(F32_ROW)                                                                      \
            pa += MRV;                                                                            \
            pb += NR;                                                                             \
        }                                                                                         \
        ROWS_OF(STORE_ROW)                                                                        \
    }

/* 6-row tiles (kernel_f32), and 4-row ones (kernel_f32_4: the rows of a
 * grouped or depthwise convolution's groups, 1 to 32 of them, which
 * 6-row tiles would pad by up to 5 rows in 6) */
F32_MICRO(micro_f32, ALL_ROWS, MR)
F32_MICRO(micro_f32_4, ROWS4, MR4)

/* 8 values of dtype t at p as f32. */
AVX2_TARGET static inline __m256 load8(amp_dtype t, const void *p)
{
    switch (t) {
    case AMP_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(p)), 16));
    case AMP_F16: return _mm256_cvtph_ps(_mm_loadu_si128(p));
    default: return _mm256_loadu_ps(p);
    }
}

AVX2_TARGET static void pack_f32_panel(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width, int64_t k,
                                       float *dst, int W)
{
    if (ws == 1 && width == W && W % 8 == 0) {
        const size_t es = amp_dtype_size(t);
        for (int64_t kk = 0; kk < k; kk++) {
            const char *row = (const char *)base + (size_t)(kk * ks) * es;
            for (int i = 0; i < W; i += 8)
                _mm256_storeu_ps(dst + kk * W + i, load8(t, row + (size_t)i * es));
        }
        return;
    }
    if (ks == 1 && ws > 1 && (t == AMP_F32 || t == AMP_BF16)) { /* rows along k: transposed in 8 x 8 blocks */
        amp_avx2_pack_along_k(t, base, ws, width, k, dst, W);
        return;
    }
    ISA_PACK_F32_SWITCH(t, base, ws, ks, width, k, dst, W);
}

AVX2_TARGET static void pack_a_f32(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k, void *dst)
{
    pack_f32_panel(t, a, rs, cs, rows, k, dst, MR);
}

AVX2_TARGET static void pack_a_f32_4(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k,
                                     void *dst)
{
    pack_f32_panel(t, a, rs, cs, rows, k, dst, MR4);
}

AVX2_TARGET static void pack_b_f32(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k, void *dst)
{
    pack_f32_panel(t, b, cs, rs, cols, k, dst, NR);
}

AVX2_TARGET static inline void store8(amp_dtype t, void *p, __m256 v)
{
    switch (t) {
    case AMP_BF16: {
        /* amp_f32_to_bf16, 8 lanes: round to nearest even, NaN quieted.
         * The magnitude compare is signed, fine for values below 2^31. */
        const __m256i u = _mm256_castps_si256(v);
        const __m256i hi = _mm256_srli_epi32(u, 16);
        __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                     _mm256_and_si256(hi, _mm256_set1_epi32(1)));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                               _mm256_set1_epi32(0x7f800000));
        r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
        r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128(p, _mm256_castsi256_si128(r));
        return;
    }
    case AMP_F16: _mm_storeu_si128(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); return;
    default: _mm256_storeu_ps(p, v); return;
    }
}

AVX2_TARGET static void epi(amp_dtype t, int64_t n, const float *w, float alpha, float beta, const void *c,
                            int64_t c_cs, const void *bias, void *y)
{
    const size_t es = amp_dtype_size(t);
    int64_t j = 0;
    if ((t == AMP_F32 || t == AMP_BF16 || t == AMP_F16) && (c == NULL || c_cs == 1))
        for (; j + 8 <= n; j += 8) {
            __m256 v = _mm256_loadu_ps(w + j); /* (w + j unaligned in span_strip_out) */
            if (alpha != 1.0f)
                v = _mm256_mul_ps(_mm256_set1_ps(alpha), v);
            if (c != NULL)
                v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(beta), load8(t, (const char *)c + j * es)));
            if (bias != NULL)
                v = _mm256_add_ps(v, load8(t, (const char *)bias + j * es));
            store8(t, (char *)y + j * es, v);
        }
    amp_gemm_epi_scalar(t, j, n, w, alpha, beta, c, c_cs, bias, y);
}

/* ---- micro_out (bf16 storage; contract in amprt_internal.h) ----------------------
 * micro's sums (w's added first, as STORE_ROW adds them), rounded to bf16
 * by store8 as epi rounds them with alpha 1 and no C or bias, stored
 * straight from the registers: no f32 tile written and read back. */

#define OUT_ROW(i)                                                                                \
    if (i < rows) {                                                                               \
        if (accumulate) {                                                                         \
            c##i##a = _mm256_add_ps(_mm256_load_ps(w + i * ldw), c##i##a);                        \
            c##i##b = _mm256_add_ps(_mm256_load_ps(w + i * ldw + 8), c##i##b);                    \
        }                                                                                         \
        if (cols == NR) {                                                                         \
            store8(AMP_BF16, yb + (size_t)(i * ldy), c##i##a);                                    \
            store8(AMP_BF16, yb + (size_t)(i * ldy) + 8, c##i##b);                                \
        } else {                                                                                  \
            uint16_t tmp[NR];                                                                     \
            store8(AMP_BF16, tmp, c##i##a);                                                       \
            store8(AMP_BF16, tmp + 8, c##i##b);                                                   \
            memcpy(yb + (size_t)(i * ldy), tmp, (size_t)cols * sizeof(uint16_t));                \
        }                                                                                         \
    }

#define F32_MICRO_OUT(NAME, ROWS_OF, MRV)                                                         \
    AVX2_TARGET static void NAME(int64_t kcu, const void *pa_, const void *pb_, const float *w, int64_t ldw, \
                                 int accumulate, void *y, int64_t ldy, int rows, int cols)        \
    {                                                                                             \
        const float *pa = pa_, *pb = pb_;                                                         \
        uint16_t *yb = y;                                                                         \
        ROWS_OF(DECL_ROW)                                                                         \
        for (int64_t u = 0; u < kcu; u++) {                                                       \
            __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8), av;                      \
            _mm_prefetch((const char *)(pb + 8 * NR), _MM_HINT_T0);                               \
            ROWS_OF(F32_ROW)                                                                      \
            pa += MRV;                                                                            \
            pb += NR;                                                                             \
        }                                                                                         \
        ROWS_OF(OUT_ROW)                                                                          \
    }

F32_MICRO_OUT(micro_out_f32, ALL_ROWS, MR)
F32_MICRO_OUT(micro_out_f32_4, ROWS4, MR4)

static const amp_gemm_kernel kernel_f32_4 = {
    "avx2-f32-4x16", MR4, NR, 1, 256, 192, 512, micro_f32_4, pack_a_f32_4, pack_b_f32, epi, amp_avx2_conv_post,
    NULL, amp_avx2_pack_b_rows_bf16, amp_avx2_pack_b_trows_bf16, NULL, micro_out_f32_4, NULL, amp_avx2_micro_taps_f32_4,
    amp_avx2_micro_taps_out_f32_4, amp_avx2_dw_taps, NULL,
};
static const amp_gemm_kernel kernel_f32 = {
    "avx2-f32-6x16", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi, amp_avx2_conv_post,
    NULL, amp_avx2_pack_b_rows_bf16, amp_avx2_pack_b_trows_bf16, NULL, micro_out_f32, &kernel_f32_4, amp_avx2_micro_taps_f32,
    amp_avx2_micro_taps_out_f32, amp_avx2_dw_taps, NULL,
};

/* the products' descriptor: kernel_f32 without the convolutions' hooks */
static const amp_gemm_kernel kernel_f32_products = {
    "avx2-f32-6x16", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

ISA_GEMM_ENTRIES(avx2, f32, &kernel_f32, &kernel_f32_products)
ISA_GEMM_ENTRIES(avx2, bf16, &kernel_f32, &kernel_f32_products)
ISA_GEMM_ENTRIES(avx2, f16, &kernel_f32, &kernel_f32_products)

/* The f32 and bf16 products: x86/avx2_small.c's one-pass path when the
 * product is small, else the blocked driver (the same bits either way). */
#define AVX2_SMALL_ENTRIES(T)                                                                     \
    static void avx2s_gemm_##T(const amp_gemm_desc *d, const AMP_CTYPE_##T *a, const AMP_CTYPE_##T *b, \
                               const AMP_CTYPE_##T *c, AMP_CTYPE_##T *y)                          \
    {                                                                                             \
        if (!amp_avx2_small_gemm(AMP_DTYPE_##T, d, a, b, c, NULL, AVX2_SMALL_PLAIN, NULL, y))     \
            avx2_gemm_##T(d, a, b, c, y);                                                         \
    }                                                                                             \
    static void avx2s_gemm_relu_backward_##T(const amp_gemm_desc *d, const AMP_CTYPE_##T *a,      \
                                             const AMP_CTYPE_##T *b, const AMP_CTYPE_##T *y,      \
                                             AMP_CTYPE_##T *dx)                                   \
    {                                                                                             \
        if (!amp_avx2_small_gemm(AMP_DTYPE_##T, d, a, b, NULL, NULL, AVX2_SMALL_RELU_BACKWARD, y, dx)) \
            avx2_gemm_relu_backward_##T(d, a, b, y, dx);                                          \
    }                                                                                             \
    static int avx2s_small_linear_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,    \
                                      const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias, int kind, \
                                      AMP_CTYPE_##T *y)                                           \
    {                                                                                             \
        amp_gemm_desc d = { 1, M, N, K, { 0, K, 1 }, { 0, 1, K }, { 0, 0, 0 }, 1.0, 0.0, 0 };      \
        return amp_avx2_small_gemm(AMP_DTYPE_##T, &d, x, w, NULL, bias, kind, NULL, y);           \
    }                                                                                             \
    static void avx2s_linear_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,         \
                                 const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias, AMP_CTYPE_##T *y) \
    {                                                                                             \
        if (!avx2s_small_linear_##T(M, N, K, x, w, bias, AVX2_SMALL_PLAIN, y))                    \
            avx2_linear_##T(M, N, K, x, w, bias, y);                                              \
    }                                                                                             \
    static void avx2s_linear_relu_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,    \
                                      const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias, AMP_CTYPE_##T *y) \
    {                                                                                             \
        if (!avx2s_small_linear_##T(M, N, K, x, w, bias, AVX2_SMALL_RELU, y))                     \
            avx2_linear_relu_##T(M, N, K, x, w, bias, y);                                         \
    }                                                                                             \
    static void avx2s_matmul_##T(int64_t batch, int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *a, \
                                 int64_t a_batch_stride, const AMP_CTYPE_##T *b, int64_t b_batch_stride, \
                                 AMP_CTYPE_##T *c)                                                \
    {                                                                                             \
        amp_gemm_desc d = { batch, M, N, K, { a_batch_stride, K, 1 }, { b_batch_stride, N, 1 },   \
                            { 0, 0, 0 }, 1.0, 0.0, 0 };                                           \
        if (!amp_avx2_small_gemm(AMP_DTYPE_##T, &d, a, b, NULL, NULL, AVX2_SMALL_PLAIN, NULL, c)) \
            avx2_matmul_##T(batch, M, N, K, a, a_batch_stride, b, b_batch_stride, c);             \
    }
#define AVX2_SMALL_KERNELS(X, T)                                                                  \
    X(gemm_##T, avx2s_gemm_##T)                                                                   \
    X(gemm_relu_backward_##T, avx2s_gemm_relu_backward_##T)                                       \
    X(linear_##T, avx2s_linear_##T)                                                               \
    X(linear_relu_##T, avx2s_linear_relu_##T)                                                     \
    ISA_GEMM_LINEAR_EX_KERNELS(X, avx2, T)                                                        \
    X(matmul_##T, avx2s_matmul_##T)
AVX2_SMALL_ENTRIES(f32)
AVX2_SMALL_ENTRIES(bf16)
/* packed weights: the one-pass path where it widens B less often than it
 * saves on A's packing and the epilogues (16 rows and more, or a narrow
 * product: 64 x 10 x 128 bf16 4.4 us on it, 12.9 on the driver; 8 x 128
 * x 64 2.9 us on the driver, 4.5 on it) */
#define AVX2_SMALL_FIRST (((M) >= 16 || (N) <= 16) && 2.0 * (double)(M) * (double)(N) * (double)(K) < AMP_AVX2_SMALL_MAX_FLOPS)
ISA_LINEAR_EX_ENTRIES(avx2, f32, &kernel_f32_products, avx2s_linear_f32, avx2s_linear_relu_f32, AVX2_SMALL_FIRST)
ISA_LINEAR_EX_ENTRIES(avx2, bf16, &kernel_f32_products, avx2s_linear_bf16, avx2s_linear_relu_bf16, AVX2_SMALL_FIRST)
ISA_LINEAR_EX_ENTRIES(avx2, f16, &kernel_f32_products, avx2_linear_f16, avx2_linear_relu_f16, 0)

/* This file's kernels of the set: X(kernel, implementation). */
#define GEMM_KERNELS(X)                                                                           \
    AVX2_SMALL_KERNELS(X, f32) ISA_GEMM_CONV_KERNELS(X, avx2, f32) AVX2_SMALL_KERNELS(X, bf16)    \
    ISA_GEMM_CONV_KERNELS(X, avx2, bf16) ISA_GEMM_KERNELS(X, avx2, f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
GEMM_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx2_fill(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    GEMM_KERNELS(INSTALL)
#undef INSTALL
    amp_isa_avx2_fill_kernels(t);
    amp_isa_avx2_fill_rows(t);
    amp_isa_avx2_fill_attention(t);
    amp_isa_avx2_fill_scalar_arith(t);
}

#endif /* x86 */
