/*
 * avx2_conv.h - the avx2 set's convolution parts (x86/avx2_conv.c) that
 * its kernel descriptor in x86/avx2.c names: amp_gemm_kernel's post and
 * pack_b_im2col (contracts in amprt_internal.h).
 */
#ifndef AMPRT_X86_AVX2_CONV_H
#define AMPRT_X86_AVX2_CONV_H

#include "amprt_internal.h"

/* conv_ex's post-ops, bit for bit the avx2 set's batch_norm, add and relu */
void amp_avx2_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                        const void *src, void *y, int64_t ld);
/* the f32 kernel's B panels (nr 16) from x in f32, bf16 or f16 */
void amp_avx2_pack_b_im2col(amp_dtype t, int64_t stride, const int64_t *col, int64_t nruns,
                            const amp_im2col_tap *const tap[2], const void *const plane[2], int64_t kcu, void *dst);

#endif /* AMPRT_X86_AVX2_CONV_H */
