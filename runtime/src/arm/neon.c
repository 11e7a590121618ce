/*
 * neon.c - the aarch64 kernel sets' products and convolutions: a 6 x 16
 * f32 GEMM micro-kernel on Advanced SIMD (24 accumulators of 4 lanes,
 * FMLA by element), its packing and its epilogue for amp_fast_gemm
 * (contract in amprt_internal.h), routed into the drivers of frame/ for
 * linear, matmul, gemm and the convolutions by frame/kernel_set.h.  f32,
 * bf16 and f16 storage all pack to f32 (bf16 by a shift, f16 by FCVTL).
 *
 * Three sets: "neon" (ARMv8.0 Advanced SIMD, every aarch64 CPU);
 * "neonfp16" (FEAT_FP16), neon with the f16 element-wise kernels in
 * half-precision arithmetic (neon_fp16.c); "neonbf16" (FEAT_BF16 besides),
 * neonfp16 with the bf16 products on a BFDOT micro-kernel (within a
 * documented tolerance, below) and the bf16 epilogue's rounding done by
 * BFCVTN instead of integer operations.  The kernels between the
 * products are in neon_eltwise.c (element-wise and casts),
 * neon_backward.c (their gradients), neon_reduce.c (sums), neon_norm.c
 * (batch_norm), neon_pool.c (pooling), neon_optim.c (sgd) and
 * neon_loss.c (cross_entropy).
 */

#include "frame/kernel_set.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

#define MR 6
#define NR 16

/* Row i of the tile, its A value lane l of register a (a quad for rows 0
 * to 3, a pair for rows 4 and 5: FMLA by element takes either). */
#define ROW_Q(i, l)                                                                               \
    c##i##0 = vfmaq_laneq_f32(c##i##0, b0, a03, l);                                               \
    c##i##1 = vfmaq_laneq_f32(c##i##1, b1, a03, l);                                               \
    c##i##2 = vfmaq_laneq_f32(c##i##2, b2, a03, l);                                               \
    c##i##3 = vfmaq_laneq_f32(c##i##3, b3, a03, l);
#define ROW_D(i, l)                                                                               \
    c##i##0 = vfmaq_lane_f32(c##i##0, b0, a45, l);                                                \
    c##i##1 = vfmaq_lane_f32(c##i##1, b1, a45, l);                                                \
    c##i##2 = vfmaq_lane_f32(c##i##2, b2, a45, l);                                                \
    c##i##3 = vfmaq_lane_f32(c##i##3, b3, a45, l);

#define DECL_ROW(i) float32x4_t c##i##0 = vdupq_n_f32(0), c##i##1 = c##i##0, c##i##2 = c##i##0, c##i##3 = c##i##0;

#define STORE_ROW(i)                                                                              \
    if (accumulate) {                                                                             \
        c##i##0 = vaddq_f32(vld1q_f32(w + i * ldw), c##i##0);                                     \
        c##i##1 = vaddq_f32(vld1q_f32(w + i * ldw + 4), c##i##1);                                 \
        c##i##2 = vaddq_f32(vld1q_f32(w + i * ldw + 8), c##i##2);                                 \
        c##i##3 = vaddq_f32(vld1q_f32(w + i * ldw + 12), c##i##3);                                \
    }                                                                                             \
    vst1q_f32(w + i * ldw, c##i##0);                                                              \
    vst1q_f32(w + i * ldw + 4, c##i##1);                                                          \
    vst1q_f32(w + i * ldw + 8, c##i##2);                                                          \
    vst1q_f32(w + i * ldw + 12, c##i##3);

#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* Per unit: 4 loads of B (16 columns), 2 of A (6 rows), 24 FMLA: 96
 * multiply-adds in 24 instructions of the FP pipes (docs/runtime.md's
 * ARM section has the cycle counts). */
static void micro_f32(int64_t kcu, const void *pa_, const void *pb_, float *w, int64_t ldw, int accumulate)
{
    const float *pa = pa_, *pb = pb_;
    ALL_ROWS(DECL_ROW)
    for (int64_t u = 0; u < kcu; u++) {
        const float32x4_t b0 = vld1q_f32(pb), b1 = vld1q_f32(pb + 4), b2 = vld1q_f32(pb + 8), b3 = vld1q_f32(pb + 12);
        const float32x4_t a03 = vld1q_f32(pa);
        const float32x2_t a45 = vld1_f32(pa + 4);
        __builtin_prefetch(pb + 8 * NR);
        ROW_Q(0, 0) ROW_Q(1, 1) ROW_Q(2, 2) ROW_Q(3, 3) ROW_D(4, 0) ROW_D(5, 1)
        pa += MR;
        pb += NR;
    }
    ALL_ROWS(STORE_ROW)
}

static void pack_f32_panel(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width, int64_t k, float *dst,
                           int W)
{
    if (ws == 1 && width == W && W % 4 == 0 && t != AMP_F32) {
        const size_t es = amp_dtype_size(t);
        for (int64_t kk = 0; kk < k; kk++) {
            const char *row = (const char *)base + (size_t)(kk * ks) * es;
            for (int i = 0; i < W; i += 4)
                vst1q_f32(dst + kk * W + i, neon_load4(t, row + (size_t)i * es));
        }
        return;
    }
    ISA_PACK_F32_SWITCH(t, base, ws, ks, width, k, dst, W);
}

static void pack_a_f32(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k, void *dst)
{
    pack_f32_panel(t, a, rs, cs, rows, k, dst, MR);
}

static void pack_b_f32(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k, void *dst)
{
    pack_f32_panel(t, b, cs, rs, cols, k, dst, NR);
}

/* The epilogue of one row, 4 outputs at a time: alpha's product, beta C's
 * product and the sums each rounded to f32 in the contract's order (the
 * runtime builds without FP contraction, so they stay separate FMUL and
 * FADD), then one rounding to t. */
static AMP_ALWAYS_INLINE void epi_body(amp_dtype t, int64_t n, const float *w, float alpha, float beta, const void *c,
                                       int64_t c_cs, const void *bias, void *y, int bfcvt)
{
    const size_t es = amp_dtype_size(t);
    int64_t j = 0;
    if ((t == AMP_F32 || t == AMP_BF16 || t == AMP_F16) && (c == NULL || c_cs == 1))
        for (; j + 4 <= n; j += 4) {
            float32x4_t v = vld1q_f32(w + j);
            if (alpha != 1.0f)
                v = vmulq_f32(vdupq_n_f32(alpha), v);
            if (c != NULL)
                v = vaddq_f32(v, vmulq_f32(vdupq_n_f32(beta), neon_load4(t, (const char *)c + j * es)));
            if (bias != NULL)
                v = vaddq_f32(v, neon_load4(t, (const char *)bias + j * es));
            if (bfcvt)
                neon_store4_bf16cvt(t, (char *)y + j * es, v);
            else
                neon_store4(t, (char *)y + j * es, v);
        }
    amp_gemm_epi_scalar(t, j, n, w, alpha, beta, c, c_cs, bias, y);
}

static void epi(amp_dtype t, int64_t n, const float *w, float alpha, float beta, const void *c, int64_t c_cs,
                const void *bias, void *y)
{
    epi_body(t, n, w, alpha, beta, c, c_cs, bias, y, 0);
}

NEON_BF16_TARGET static void epi_bf16cvt(amp_dtype t, int64_t n, const float *w, float alpha, float beta,
                                         const void *c, int64_t c_cs, const void *bias, void *y)
{
    epi_body(t, n, w, alpha, beta, c, c_cs, bias, y, 1);
}

/* ---- FEAT_BF16: the bf16 products by BFDOT ----------------------------------
 * kpair 2 (amprt_internal.h's contract): a unit is a pair of bf16 values
 * (k even in the low half), and BFDOT by element adds to each f32 lane of
 * a B vector (4 columns) the dot product of its pair with the A row's
 * pair.  Per unit: 4 loads of B (16 columns x 2 k), 1 of 4 rows' pairs
 * and 1 of 2 rows' pairs, 24 BFDOT: 192 multiply-adds in 24 instructions,
 * twice micro_f32's per instruction.  Not bit for bit the reference:
 * BFDOT (without FEAT_EBF16's FPCR.EBF) rounds the pair's sum and then
 * its sum with the accumulator to odd, flushes subnormal inputs and
 * results to zero and returns the default NaN, so each k's rounding error
 * is below 2^-23 of the running sum where the reference's is 2^-24
 * (docs/runtime.md, "ARM"; test_fastgemm.c holds it to that bound). */
#define ROW_BQ(i, l)                                                                              \
    c##i##0 = vbfdotq_laneq_f32(c##i##0, b0, a03, l);                                             \
    c##i##1 = vbfdotq_laneq_f32(c##i##1, b1, a03, l);                                             \
    c##i##2 = vbfdotq_laneq_f32(c##i##2, b2, a03, l);                                             \
    c##i##3 = vbfdotq_laneq_f32(c##i##3, b3, a03, l);
#define ROW_BD(i, l)                                                                              \
    c##i##0 = vbfdotq_lane_f32(c##i##0, b0, a45, l);                                              \
    c##i##1 = vbfdotq_lane_f32(c##i##1, b1, a45, l);                                              \
    c##i##2 = vbfdotq_lane_f32(c##i##2, b2, a45, l);                                              \
    c##i##3 = vbfdotq_lane_f32(c##i##3, b3, a45, l);

NEON_BF16_TARGET static void micro_bfdot(int64_t kcu, const void *pa_, const void *pb_, float *w, int64_t ldw,
                                         int accumulate)
{
    const uint32_t *pa = pa_, *pb = pb_;
    ALL_ROWS(DECL_ROW)
    for (int64_t u = 0; u < kcu; u++) {
        const bfloat16x8_t b0 = vreinterpretq_bf16_u32(vld1q_u32(pb)), b1 = vreinterpretq_bf16_u32(vld1q_u32(pb + 4));
        const bfloat16x8_t b2 = vreinterpretq_bf16_u32(vld1q_u32(pb + 8)), b3 = vreinterpretq_bf16_u32(vld1q_u32(pb + 12));
        const bfloat16x8_t a03 = vreinterpretq_bf16_u32(vld1q_u32(pa));
        const bfloat16x4_t a45 = vreinterpret_bf16_u32(vld1_u32(pa + 4));
        __builtin_prefetch(pb + 8 * NR);
        ROW_BQ(0, 0) ROW_BQ(1, 1) ROW_BQ(2, 2) ROW_BQ(3, 3) ROW_BD(4, 0) ROW_BD(5, 1)
        pa += MR;
        pb += NR;
    }
    ALL_ROWS(STORE_ROW)
}

/* bf16 pairs (the kernel serves bf16 storage alone) */
static void pack_a_bf16(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k, void *dst)
{
    (void)t;
    isa_pack_bf16_body(a, rs, cs, rows, k, dst, MR);
}

static void pack_b_bf16(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k, void *dst)
{
    (void)t;
    isa_pack_bf16_body(b, cs, rs, cols, k, dst, NR);
}

static const amp_gemm_kernel kernel_f32 = {
    "neon-f32-6x16", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL,
};

/* The convolutions' descriptor: the same with conv_ex's post-ops (so that
 * a program that never convolves does not link them). */
static const amp_gemm_kernel kernel_f32_conv = {
    "neon-f32-6x16", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi, amp_neon_conv_post, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, amp_neon_dw_taps, NULL,
};

static const amp_gemm_kernel kernel_bf16cvt = {
    "neonbf16-f32-6x16", MR, NR, 1, 256, 192, 512, micro_f32, pack_a_f32, pack_b_f32, epi_bf16cvt,
    amp_neon_conv_post, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, amp_neon_dw_taps, NULL,
};

static const amp_gemm_kernel kernel_bfdot = {
    "neonbf16-bfdot-6x16", MR, NR, 2, 256, 192, 512, micro_bfdot, pack_a_bf16, pack_b_bf16, epi_bf16cvt, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

ISA_GEMM_ENTRIES(neon, f32, &kernel_f32_conv, &kernel_f32)
ISA_GEMM_ENTRIES(neon, bf16, &kernel_f32_conv, &kernel_f32)
ISA_GEMM_ENTRIES(neon, f16, &kernel_f32_conv, &kernel_f32)
ISA_LINEAR_EX_ENTRIES(neon, f32, &kernel_f32, neon_linear_f32, neon_linear_relu_f32, 0)
ISA_LINEAR_EX_ENTRIES(neon, bf16, &kernel_f32, neon_linear_bf16, neon_linear_relu_bf16, 0)
ISA_LINEAR_EX_ENTRIES(neon, f16, &kernel_f32, neon_linear_f16, neon_linear_relu_f16, 0)
/* the products by BFDOT, the convolutions on the f32 micro-kernel (bit
 * for bit the reference's sums, as in the neon set) */
ISA_GEMM_ENTRIES(neonbf16, bf16, &kernel_bf16cvt, &kernel_bfdot)
ISA_LINEAR_EX_ENTRIES(neonbf16, bf16, &kernel_bfdot, neonbf16_linear_bf16, neonbf16_linear_relu_bf16, 0)

/* This file's kernels of the sets: X(kernel, implementation). */
#define GEMM_KERNELS(X) ISA_GEMM_KERNELS(X, neon, f32) ISA_GEMM_KERNELS(X, neon, bf16) ISA_GEMM_KERNELS(X, neon, f16)
#define BF16_GEMM_KERNELS(X) ISA_GEMM_KERNELS(X, neonbf16, bf16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
GEMM_KERNELS(DEFINE)
#undef DEFINE
#define DEFINE(name, impl) AMP_ISA_KERNEL(neonbf16, name, impl)
BF16_GEMM_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    GEMM_KERNELS(INSTALL)
#undef INSTALL
    amp_isa_neon_fill_eltwise(t, 0);
    amp_isa_neon_fill_backward(t, 0);
    amp_isa_neon_fill_reduce(t);
    amp_isa_neon_fill_norm(t);
    amp_isa_neon_fill_clamp(t);
    amp_isa_neon_fill_scalar_arith(t);
    amp_isa_neon_fill_pool(t);
    amp_isa_neon_fill_optim(t);
    amp_isa_neon_fill_loss(t);
}

void amp_isa_neonfp16_fill(amp_kernel_table *t)
{
    amp_isa_neon_fill(t);
    amp_isa_neonfp16_fill_eltwise(t);
}

void amp_isa_neonbf16_fill(amp_kernel_table *t)
{
    amp_isa_neonfp16_fill(t);
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neonbf16, name);
    BF16_GEMM_KERNELS(INSTALL)
#undef INSTALL
    amp_isa_neon_fill_eltwise(t, 1);
    amp_isa_neon_fill_backward(t, 1);
}

#endif /* aarch64 */
