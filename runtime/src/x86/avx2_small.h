/*
 * avx2_small.h - the avx2 set's one-pass path for small products
 * (x86/avx2_small.c), which x86/avx2.c's product entries try before the
 * blocked driver.
 */
#ifndef AMPRT_ISA_AVX2_SMALL_H
#define AMPRT_ISA_AVX2_SMALL_H

#include "amprt_internal.h"

/* What the epilogue does after the rounding to the output dtype: nothing;
 * relu, as the relu kernel would after the product (linear_relu); or +0
 * where mask <= 0, as relu_backward would (gemm_relu_backward). */
enum { AVX2_SMALL_PLAIN, AVX2_SMALL_RELU, AVX2_SMALL_RELU_BACKWARD };

/* y = alpha A B + beta C + bias, then `kind`, bit for bit as amp_fast_gemm
 * with the avx2 set's f32 micro-kernel (and the set's relu or
 * relu_backward after it) computes it, when the product is small (under
 * 4 MFLOP, K <= 512, f32 or bf16 storage, no summed batches, C with unit
 * column stride); returns 0, doing nothing, otherwise.  mask: the relu's output
 * for AVX2_SMALL_RELU_BACKWARD, laid out as y. */
int amp_avx2_small_gemm(amp_dtype t, const amp_gemm_desc *d, const void *a, const void *b, const void *c,
                        const void *bias, int kind, const void *mask, void *y);

/* The flops under which a product is small (frame/gemm.c's PARALLEL_MIN_FLOPS) */
#define AMP_AVX2_SMALL_MAX_FLOPS (4.0 * 1024 * 1024)

#endif
