/*
 * avx2_conv.h - the avx2 set's convolution parts (x86/avx2_conv.c) that
 * its kernel descriptors in x86/avx2.c name: amp_gemm_kernel's post
 * (contract in amprt_internal.h).
 */
#ifndef AMPRT_X86_AVX2_CONV_H
#define AMPRT_X86_AVX2_CONV_H

#include "amprt_internal.h"

/* conv_ex's post-ops, bit for bit the avx2 set's batch_norm, add and relu */
void amp_avx2_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                        const void *src, void *y, int64_t ld);

#endif /* AMPRT_X86_AVX2_CONV_H */
