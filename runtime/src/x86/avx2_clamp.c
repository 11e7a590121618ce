/*
 * avx2_clamp.c - the AVX2 (+ FMA + F16C) clamp kernels of the "avx2" set:
 * clamp and hardtanh (the same function: PyTorch's hardtanh is a clamp;
 * ReLU6 is clamp 0..6) and their gradients clamp_backward and
 * hardtanh_backward, for f32, bf16 and f16 storage (computing in f32,
 * x86/avx2_store.h).
 *
 * Bit for bit the reference (ref/ref_unary.inc, ref_backward_unary.inc;
 * tests/runtime/test_fasteltwise.c, test_fastbackward.c):
 *
 *  clamp           y = min(hi, max(lo, x)) with vmaxps(lo, x) and
 *                  vminps(hi, x): each returns its second operand unless
 *                  the comparison (lo > x, hi < x) holds, which is the
 *                  reference's "if (x < lo) x = lo; if (x > hi) x = hi"
 *                  exactly: a NaN x stays x (its payload too), a NaN bound
 *                  is passed over, lo > hi gives hi, and of -0 and +0 x
 *                  is kept.
 *  clamp_backward  dx = lo <= x <= hi ? dy : +0 (ordered compares: NaN x
 *                  gives 0).
 *  hardtanh_backward  dx = x <= lo || x >= hi ? +0 : dy (NaN x gives dy).
 *
 * Without x (x NULL: the reference reads 0) the backwards go to the
 * reference.  Large arrays are split into chunks on the thread pool; the
 * result does not depend on the split.  The driver, entries and kernel
 * list are frame/clamp_form.h's; this file holds the vector steps.
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill_kernels after dispatch.c's CPU check.
 */
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/clamp_form.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* One vector of op: x (and dy for the gradients) to the result. */
TARGET static AMP_ALWAYS_INLINE __m256 clamp8(const int op, __m256 x, __m256 dy, __m256 lo, __m256 hi)
{
    switch (op) {
    case CLAMP: return _mm256_min_ps(hi, _mm256_max_ps(lo, x));
    case CLAMP_BW: return _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), _mm256_cmp_ps(x, hi, _CMP_LE_OQ)), dy);
    default:
        return _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_NLE_UQ), _mm256_cmp_ps(x, hi, _CMP_NGE_UQ)), dy);
    }
}

TARGET static AMP_ALWAYS_INLINE void clamp_loop(const amp_dtype t, const int op, const amp_clamp_ctx *c, size_t begin,
                                                size_t end)
{
    const size_t es = avx2_size_of(t);
    const char *x = c->x, *dy = op == CLAMP ? c->x : c->dy;
    char *y = c->y;
    const __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
    size_t i = begin;
    /* bf16: the even and odd elements as two vectors, stored back as they came */
    for (; t == AMP_BF16 && i + 16 <= end; i += 16) {
        __m256 xe, xo, ge, go;
        avx2_load16_bf16(x + i * es, &xe, &xo);
        avx2_load16_bf16(dy + i * es, &ge, &go);
        avx2_store16_bf16(y + i * es, clamp8(op, xe, ge, lo, hi), clamp8(op, xo, go, lo, hi));
    }
    for (; i + 8 <= end; i += 8)
        avx2_store8(t, y + i * es, clamp8(op, avx2_load8(t, x + i * es), avx2_load8(t, dy + i * es), lo, hi));
    if (i < end)
        avx2_store8_n(t, y + i * es, end - i,
                      clamp8(op, avx2_load8_n(t, x + i * es, end - i), avx2_load8_n(t, dy + i * es, end - i), lo, hi));
}

AMP_CLAMP_DRIVER(TARGET, avx2_run_chunked)

#define ENTRIES(T) AMP_CLAMP_ENTRIES(T, clamp_run)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
AMP_CLAMP_KERNELS(DEFINE)
#undef DEFINE

void amp_avx2_fill_clamp(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    AMP_CLAMP_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
