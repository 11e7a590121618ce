/*
 * avx2_conv.h - the avx2 set's convolution parts (x86/avx2_conv.c) that
 * its kernel descriptors in x86/avx2.c name: amp_gemm_kernel's post, and
 * (x86/avx2_conv_rows.c) pack_b_rows, micro_taps and micro_taps_out for
 * bf16 storage (contracts in amprt_internal.h), and the packing of panels
 * from rows along k (x86/avx2_conv_pack.c) that x86/avx2.c's packing calls,
 * with pack_b_trows (the direct weight gradient's B, bf16 storage).
 */
#ifndef AMPRT_X86_AVX2_CONV_H
#define AMPRT_X86_AVX2_CONV_H

#include "amprt_internal.h"

/* conv_ex's post-ops, bit for bit the avx2 set's batch_norm, add and relu */
void amp_avx2_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                        const void *src, void *y, int64_t ld);

/* B units (f32) packed from zero-padded rows of bf16 input */
AMP_HIDDEN void amp_avx2_pack_b_rows_bf16(int64_t stride, const int64_t *col, const int64_t *off, int64_t nruns,
                                          const void *const src[2], int64_t kcu, void *dst);
/* the 6 x 16 and 4 x 16 micro-kernels reading B from such rows (taps mode) */
AMP_HIDDEN void amp_avx2_micro_taps_f32(int64_t kcu, const void *pa, const void *src, const int32_t *off, float *w,
                                        int64_t ldw, int accumulate);
AMP_HIDDEN void amp_avx2_micro_taps_f32_4(int64_t kcu, const void *pa, const void *src, const int32_t *off,
                                          float *w, int64_t ldw, int accumulate);
AMP_HIDDEN void amp_avx2_micro_taps_out_f32(int64_t kcu, const void *pa, const void *src, const int32_t *off,
                                            const float *w, int64_t ldw, int accumulate, void *y, int64_t ldy,
                                            int rows, const amp_tap_seg *seg, int nseg);
AMP_HIDDEN void amp_avx2_micro_taps_out_f32_4(int64_t kcu, const void *pa, const void *src, const int32_t *off,
                                              const float *w, int64_t ldw, int accumulate, void *y, int64_t ldy,
                                              int rows, const amp_tap_seg *seg, int nseg);

/* pack_b_trows at kpair 1 (x86/avx2_conv_pack.c): the direct weight
 * gradient's B units, bf16 rows widened to f32 */
AMP_HIDDEN void amp_avx2_pack_b_trows_bf16(const void *const *rows, int64_t units, void *dst);

/* An f32 micro-panel of W lanes from rows along k (x86/avx2_conv_pack.c):
 * element (i, kk) at base + i ws + kk (f32 or bf16) to dst[kk W + i],
 * lanes i >= width 0 */
AMP_HIDDEN void amp_avx2_pack_along_k(amp_dtype t, const void *base, int64_t ws, int width, int64_t k, float *dst,
                                      int W);

#endif /* AMPRT_X86_AVX2_CONV_H */
