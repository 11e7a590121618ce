/*
 * isa_avx512.c - the "avx512" (AVX-512F/BW/VL + FMA + F16C) and
 * "avx512bf16" (the same plus AVX512_BF16) kernel sets: GEMM micro-kernels,
 * packing and epilogues for amp_fast_gemm (contract in amprt_internal.h).
 *
 *  f32 kernel   12 x 32 tile, 24 zmm accumulators, one FMA per k per
 *               16 columns; f32, bf16 and f16 storage all pack to f32 (bf16
 *               by a shift, f16 by vcvtph2ps), so one kernel serves them.
 *  bf16 kernel  (avx512bf16, bf16 storage only) 12 x 32 tile of vdpbf16ps:
 *               each unit is a pair of k, the pair's two exact products
 *               added to the f32 accumulator in k order.  vdpbf16ps
 *               treats bf16 subnormal inputs as zero and flushes subnormal
 *               f32 results (as PyTorch/oneDNN's bf16 GEMM on this ISA).
 *
 * The same descriptors serve conv and its gradients (isa_conv.c, through
 * ISA_GEMM_ENTRIES); the vectorized kernels between the convolutions are
 * in isa_avx512_eltwise.c, installed by amp_isa_avx512_fill too.
 *
 * Everything here is compiled for its ISA through target attributes only,
 * and runs only after dispatch.c's CPU check.
 */
#include <immintrin.h>

#include "isa_gemm.h"
#include "isa_avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#define AVX512BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))

#define MR 12
#define NR 32

/* ---- f32 micro-kernel ------------------------------------------------------ */

#define F32_ROW(i)                                                                                \
    av = _mm512_set1_ps(pa[i]);                                                                   \
    c##i##a = _mm512_fmadd_ps(av, b0, c##i##a);                                                   \
    c##i##b = _mm512_fmadd_ps(av, b1, c##i##b);

#define DECL_ROW(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();

#define STORE_ROW(i)                                                                              \
    if (accumulate) {                                                                             \
        c##i##a = _mm512_add_ps(_mm512_load_ps(w + i * ldw), c##i##a);                            \
        c##i##b = _mm512_add_ps(_mm512_load_ps(w + i * ldw + 16), c##i##b);                       \
    }                                                                                             \
    _mm512_store_ps(w + i * ldw, c##i##a);                                                        \
    _mm512_store_ps(w + i * ldw + 16, c##i##b);

#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

AVX512_TARGET static void micro_f32(int64_t kcu, const void *pa_, const void *pb_, float *w, int64_t ldw,
                                    int accumulate)
{
    const float *pa = pa_, *pb = pb_;
    ALL_ROWS(DECL_ROW)
    for (int64_t u = 0; u < kcu; u++) {
        __m512 b0 = _mm512_load_ps(pb), b1 = _mm512_load_ps(pb + 16), av;
        _mm_prefetch((const char *)(pb + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(pb + 8 * NR + 16), _MM_HINT_T0);
        ALL_ROWS(F32_ROW)
        pa += MR;
        pb += NR;
    }
    ALL_ROWS(STORE_ROW)
}

/* ---- bf16 micro-kernel (vdpbf16ps) ----------------------------------------- */

#define BF16_ROW(i)                                                                               \
    av = _mm512_set1_epi32((int)pa[i]);                                                           \
    c##i##a = _mm512_dpbf16_ps(c##i##a, (__m512bh)av, (__m512bh)b0);                              \
    c##i##b = _mm512_dpbf16_ps(c##i##b, (__m512bh)av, (__m512bh)b1);

AVX512BF16_TARGET static void micro_bf16(int64_t kcu, const void *pa_, const void *pb_, float *w, int64_t ldw,
                                         int accumulate)
{
    const uint32_t *pa = pa_, *pb = pb_;
    ALL_ROWS(DECL_ROW)
    for (int64_t u = 0; u < kcu; u++) {
        __m512i b0 = _mm512_load_si512(pb), b1 = _mm512_load_si512(pb + 16), av;
        _mm_prefetch((const char *)(pb + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(pb + 8 * NR + 16), _MM_HINT_T0);
        ALL_ROWS(BF16_ROW)
        pa += MR;
        pb += NR;
    }
    ALL_ROWS(STORE_ROW)
}

/* ---- packing ---------------------------------------------------------------- */

/* 16 values of dtype t at p (mask m) as f32. */
AVX512_TARGET static inline __m512 load16(amp_dtype t, const void *p, __mmask16 m)
{
    switch (t) {
    case AMP_BF16:
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    case AMP_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* Transposes 32-bit units: unit (u, i) at base + i * row_bytes + 4 u goes
 * to dst[u * W + i], for i < W (a multiple of 4) and u < nunits rounded
 * down to a multiple of 4, 4 x 4 blocks at a time; returns the units done. */
AVX512_TARGET static int64_t transpose_units(const char *base, size_t row_bytes, int64_t nunits, uint32_t *dst, int W)
{
    int64_t u;
    for (u = 0; u + 4 <= nunits; u += 4)
        for (int i = 0; i < W; i += 4) {
            const char *p = base + (size_t)i * row_bytes + (size_t)u * 4;
            __m128 r0 = _mm_loadu_ps((const float *)p), r1 = _mm_loadu_ps((const float *)(p + row_bytes));
            __m128 r2 = _mm_loadu_ps((const float *)(p + 2 * row_bytes));
            __m128 r3 = _mm_loadu_ps((const float *)(p + 3 * row_bytes));
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps((float *)(dst + u * W + i), r0);
            _mm_storeu_ps((float *)(dst + (u + 1) * W + i), r1);
            _mm_storeu_ps((float *)(dst + (u + 2) * W + i), r2);
            _mm_storeu_ps((float *)(dst + (u + 3) * W + i), r3);
        }
    return u;
}

/* f32 panels, W = MR (A) or NR (B).  Rows along the panel's width that are
 * contiguous in memory (ws == 1, B of a row-major matrix) load 16 at a time. */
AVX512_TARGET static void pack_f32_panel(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width, int64_t k,
                                         float *dst, int W)
{
    if (ws == 1 && W % 16 == 0) {
        const size_t es = amp_dtype_size(t);
        for (int64_t kk = 0; kk < k; kk++) {
            const char *row = (const char *)base + (size_t)(kk * ks) * es;
            for (int i = 0; i < W; i += 16) {
                int left = width - i;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
                _mm512_storeu_ps(dst + kk * W + i, load16(t, row + (size_t)i * es, m));
            }
        }
        return;
    }
    if (ks == 1 && t == AMP_F32 && width == W && W % 4 == 0) {
        /* A row-major in f32: 4 x 4 transposes, then the odd k. */
        int64_t done = transpose_units(base, (size_t)ws * 4, k, (uint32_t *)dst, W);
        if (done < k)
            ISA_PACK_F32_SWITCH(t, (const float *)base + done, ws, ks, width, k - done, dst + done * W, W);
        return;
    }
    if (ks == 1 && t != AMP_F32 && width == W) {
        /* A row-major (or B transposed) in bf16/f16: convert 16 k of one
         * row at a time, then scatter them into the panel. */
        const size_t es = amp_dtype_size(t);
        float tmp[16] __attribute__((aligned(64)));
        int64_t kk = 0;
        for (; kk + 16 <= k; kk += 16)
            for (int i = 0; i < W; i++) {
                _mm512_store_ps(tmp, load16(t, (const char *)base + (size_t)(i * ws + kk) * es, 0xffff));
                for (int q = 0; q < 16; q++)
                    dst[(kk + q) * W + i] = tmp[q];
            }
        if (kk < k)
            ISA_PACK_F32_SWITCH(t, (const char *)base + (size_t)kk * es, ws, ks, width, k - kk, dst + kk * W, W);
        return;
    }
    ISA_PACK_F32_SWITCH(t, base, ws, ks, width, k, dst, W);
}

AVX512_TARGET static void pack_a_f32(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k, void *dst)
{
    pack_f32_panel(t, a, rs, cs, rows, k, dst, MR);
}

AVX512_TARGET static void pack_b_f32(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k, void *dst)
{
    pack_f32_panel(t, b, cs, rs, cols, k, dst, NR);
}

/* bf16 pairs.  B of a row-major matrix (ws == 1): rows k and k + 1
 * interleaved 16 columns at a time. */
AVX512BF16_TARGET static void pack_bf16_panel(const uint16_t *s, int64_t ws, int64_t ks, int width, int64_t k,
                                              uint32_t *dst, int W)
{
    if (ws == 1 && W % 16 == 0) {
        int64_t u, kcu = k / 2;
        for (u = 0; u < kcu; u++) {
            const uint16_t *r0 = s + 2 * u * ks, *r1 = r0 + ks;
            for (int i = 0; i < W; i += 16) {
                int left = width - i;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
                __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + i));
                __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1 + i));
                _mm512_storeu_si512(dst + u * W + i, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            }
        }
        if (k & 1) {
            const uint16_t *r0 = s + (k - 1) * ks;
            for (int i = 0; i < W; i += 16) {
                int left = width - i;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
                _mm512_storeu_si512(dst + kcu * W + i, _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + i)));
            }
        }
        return;
    }
    if (ks == 1 && width == W && W % 4 == 0) {
        /* A row-major: a pair of k is one 32-bit unit of a row. */
        int64_t done = transpose_units((const char *)s, (size_t)ws * 2, k / 2, dst, W);
        if (2 * done < k)
            isa_pack_bf16_body(s + 2 * done, ws, ks, width, k - 2 * done, dst + done * W, W);
        return;
    }
    isa_pack_bf16_body(s, ws, ks, width, k, dst, W);
}

AVX512BF16_TARGET static void pack_a_bf16(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k,
                                          void *dst)
{
    (void)t;
    pack_bf16_panel(a, rs, cs, rows, k, dst, MR);
}

AVX512BF16_TARGET static void pack_b_bf16(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k,
                                          void *dst)
{
    (void)t;
    pack_bf16_panel(b, cs, rs, cols, k, dst, NR);
}

/* ---- epilogue ---------------------------------------------------------------- */


AVX512_TARGET static void epi(amp_dtype t, int64_t n, const float *w, float alpha, float beta, const void *c,
                              int64_t c_cs, const void *bias, void *y)
{
    const size_t es = amp_dtype_size(t);
    if ((t != AMP_F32 && t != AMP_BF16 && t != AMP_F16) || (c != NULL && c_cs != 1)) {
        isa_epi_scalar(t, 0, n, w, alpha, beta, c, c_cs, bias, y);
        return;
    }
    for (int64_t j = 0; j < n; j += 16) {
        int64_t left = n - j;
        __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, w + j);
        if (alpha != 1.0f)
            v = _mm512_mul_ps(_mm512_set1_ps(alpha), v);
        if (c != NULL)
            v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(beta), load16(t, (const char *)c + j * es, m)));
        if (bias != NULL)
            v = _mm512_add_ps(v, load16(t, (const char *)bias + j * es, m));
        store16(t, (char *)y + j * es, m, v);
    }
}

/* ---- the sets ------------------------------------------------------------------- */

static const amp_gemm_kernel kernel_f32 = {
    "avx512-f32-12x32", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi,
};
static const amp_gemm_kernel kernel_bf16 = {
    "avx512bf16-12x32", MR, NR, 2, 256, 192, 512, micro_bf16, pack_a_bf16, pack_b_bf16, epi,
};

ISA_GEMM_ENTRIES(avx512, f32, &kernel_f32)
ISA_GEMM_ENTRIES(avx512, bf16, &kernel_f32)
ISA_GEMM_ENTRIES(avx512, f16, &kernel_f32)
ISA_GEMM_ENTRIES(avx512bf16, bf16, &kernel_bf16)

void amp_isa_avx512_fill(amp_kernel_table *t)
{
    ISA_GEMM_FILL(t, avx512, f32);
    ISA_GEMM_FILL(t, avx512, bf16);
    ISA_GEMM_FILL(t, avx512, f16);
    amp_isa_avx512_fill_eltwise(t);
}

void amp_isa_avx512bf16_fill(amp_kernel_table *t)
{
    amp_isa_avx512_fill(t);
    ISA_GEMM_FILL(t, avx512bf16, bf16);
}

#else /* not x86: dispatch.c never selects these sets */

void amp_isa_avx512_fill(amp_kernel_table *t) { (void)t; }
void amp_isa_avx512bf16_fill(amp_kernel_table *t) { (void)t; }

#endif
