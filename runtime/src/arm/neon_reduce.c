/*
 * neon_reduce.c - the aarch64 sets' sum (amp_sum_{f32,bf16,f16}) for the
 * masks a linear's bias gradient and most other sums use: the [O, R, I]
 * form of frame/reduce_form.h, each output element (o, i) the reference's
 * own f32 chain acc = 0; acc += x[o][r][i] for r in order; y = round(acc),
 * four columns i in the lanes of a vector, so the results equal the
 * reference bit for bit.  Other masks go to the reference.  bf16 and f16
 * storage compute in f32 (arm/neon_convert.h); both sets share these.
 */

#include "amprt_internal.h"
#include "frame/reduce_form.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

/* y[i] = sum over r < R of x[r * I + i], for c0 <= i < c1 (columns of
 * the [R, I] block x): 16 columns at a time in 4 accumulators, then 4 at
 * a time, then the tail in scalar code. */
static AMP_ALWAYS_INLINE void column_sums(amp_dtype t, int64_t R, int64_t I, int64_t c0, int64_t c1, const char *x,
                                          char *y)
{
    const size_t es = amp_dtype_size(t);
    int64_t i0 = c0;
    for (; i0 + 16 <= c1; i0 += 16) {
        float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t r = 0; r < R; r++) {
            const char *row = x + (size_t)(r * I + i0) * es;
            a0 = vaddq_f32(a0, neon_load4_quiet(t, row));
            a1 = vaddq_f32(a1, neon_load4_quiet(t, row + 4 * es));
            a2 = vaddq_f32(a2, neon_load4_quiet(t, row + 8 * es));
            a3 = vaddq_f32(a3, neon_load4_quiet(t, row + 12 * es));
        }
        neon_store4(t, y + (size_t)i0 * es, a0);
        neon_store4(t, y + (size_t)(i0 + 4) * es, a1);
        neon_store4(t, y + (size_t)(i0 + 8) * es, a2);
        neon_store4(t, y + (size_t)(i0 + 12) * es, a3);
    }
    for (; i0 + 4 <= c1; i0 += 4) {
        float32x4_t a = vdupq_n_f32(0);
        for (int64_t r = 0; r < R; r++)
            a = vaddq_f32(a, neon_load4_quiet(t, x + (size_t)(r * I + i0) * es));
        neon_store4(t, y + (size_t)i0 * es, a);
    }
    for (; i0 < c1; i0++) {
        float acc = 0;
        for (int64_t r = 0; r < R; r++)
            acc += amp_ld(t, x, r * I + i0);
        amp_st(t, y, i0, acc);
    }
}

#define SUM_KERNEL(T) AMP_SUM_BY_COLUMNS(, neon_sum_##T, T, column_sums)
AMP_FOR_EACH_KERNEL_DTYPE(SUM_KERNEL)

#define REDUCE_KERNELS(X) X(sum_f32, neon_sum_f32) X(sum_bf16, neon_sum_bf16) X(sum_f16, neon_sum_f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(neon, name, impl)
REDUCE_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_neon_fill_reduce(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, neon, name);
    REDUCE_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* aarch64 */
