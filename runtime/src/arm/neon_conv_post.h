/*
 * neon_conv_post.h - the aarch64 sets' conv_ex post-ops
 * (arm/neon_conv_post.c), which their kernel descriptors in arm/neon.c
 * name: amp_gemm_kernel's post (contract in amprt_internal.h).
 */
#ifndef AMPRT_ARM_NEON_CONV_POST_H
#define AMPRT_ARM_NEON_CONV_POST_H

#include "amprt_internal.h"

/* conv_ex's post-ops, bit for bit the sets' batch_norm, add and relu */
void amp_neon_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                        const void *src, void *y, int64_t ld);

#endif /* AMPRT_ARM_NEON_CONV_POST_H */
