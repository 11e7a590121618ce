/*
 * avx512_clamp.c - the AVX-512 clamp kernels of the "avx512" and
 * "avx512bf16" sets: clamp and hardtanh (the same function: PyTorch's
 * hardtanh is a clamp; ReLU6 is clamp 0..6) and their gradients
 * clamp_backward and hardtanh_backward, for f32, bf16 and f16 storage
 * (computing in f32, x86/avx512_store.h).
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
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/chunked.h"
#include "frame/clamp_form.h"
#include "avx512_lanes.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

/* 16 values of dtype t at p (mask m) as f32; masked-off lanes 0.  bf16
 * and f16 NaNs need no quieting here: every result is stored through
 * store16, which quiets them as the reference's round trip does. */
TARGET static inline __m512 load16_masked(amp_dtype t, const void *p, __mmask16 m)
{
    switch (t) {
    case AMP_BF16: return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    case AMP_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* One vector of op: x (and dy for the gradients) to the result. */
TARGET static AMP_ALWAYS_INLINE __m512 clamp16(const int op, __m512 x, __m512 dy, __m512 lo, __m512 hi)
{
    switch (op) {
    case CLAMP: return _mm512_min_ps(hi, _mm512_max_ps(lo, x));
    case CLAMP_BW:
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, hi, _CMP_LE_OQ), dy);
    default:
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLE_UQ) & _mm512_cmp_ps_mask(x, hi, _CMP_NGE_UQ), dy);
    }
}

TARGET static AMP_ALWAYS_INLINE void clamp_loop(const amp_dtype t, const int op, const amp_clamp_ctx *c, size_t begin,
                                                size_t end)
{
    const size_t es = size_of_storage(t);
    const char *x = c->x, *dy = op == CLAMP ? c->x : c->dy;
    char *y = c->y;
    const __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
    size_t i = begin;
    for (; i + 16 <= end; i += 16)
        store16_all(t, y + i * es, clamp16(op, load16_all(t, x + i * es), load16_all(t, dy + i * es), lo, hi));
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        store16(t, y + i * es, m, clamp16(op, load16_masked(t, x + i * es, m), load16_masked(t, dy + i * es, m), lo, hi));
    }
}

AMP_CLAMP_DRIVER(TARGET, amp_run_chunked)

#define ENTRIES(T) AMP_CLAMP_ENTRIES(T, clamp_run)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
AMP_CLAMP_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_clamp(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    AMP_CLAMP_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
