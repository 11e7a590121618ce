/*
 * avx512_scalar_arith.c - the AVX-512 tensor-scalar arithmetic kernels of
 * both AVX-512 sets: add_scalar, sub_scalar, mul_scalar, div_scalar,
 * rsub_scalar and rdiv_scalar (y = a op s, or s op a) for f32, bf16 and
 * f16 storage, computing in f32, 16 lanes at a time (masked tails).
 *
 * Bit for bit the reference (ref/ref_elementwise.inc's with_scalar;
 * tests/runtime/test_fastscalar_arith.c), as x86/avx2_scalar_arith.c says:
 * one IEEE operation per lane in the reference's operand order, the result
 * rounded to the storage dtype as amp_st rounds it (avx512_store.h); a NaN
 * scalar goes to the reference (frame/scalar_arith_form.h).  Large arrays
 * are split into chunks on the thread pool; the result does not depend on
 * the split.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/scalar_arith_form.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

/* Elements per pool task (a multiple of 16, so only the last task has a
 * tail), and the size below which one thread does it all. */
#define CHUNK ((size_t)1 << 16)
#define PARALLEL_MIN ((size_t)1 << 17)

typedef struct {
    amp_dtype t;
    int op; /* ARITH_* */
    const void *a;
    float s;
    void *y;
    size_t n;
} arith_ctx;

static __mmask16 tail_mask(size_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1); }

/* 16 values of dtype t at p (mask m) as f32; masked-off lanes 0.  A bf16
 * signalling NaN is quieted by the operation, as the reference's load
 * quiets it. */
TARGET static inline __m512 load16_masked(amp_dtype t, const void *p, __mmask16 m)
{
    switch (t) {
    case AMP_BF16: return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    case AMP_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* One vector of op on a (widened) and the broadcast scalar s. */
TARGET static AMP_ALWAYS_INLINE __m512 arith16(const int op, __m512 a, __m512 s)
{
    switch (op) {
    case ARITH_ADD: return _mm512_add_ps(a, s);
    case ARITH_SUB: return _mm512_sub_ps(a, s);
    case ARITH_MUL: return _mm512_mul_ps(a, s);
    case ARITH_DIV: return _mm512_div_ps(a, s);
    case ARITH_RSUB: return _mm512_sub_ps(s, a);
    default: return _mm512_div_ps(s, a);
    }
}

TARGET static AMP_ALWAYS_INLINE void arith_loop(const amp_dtype t, const int op, const arith_ctx *c, size_t begin,
                                                size_t end)
{
    const size_t es = size_of_storage(t);
    const char *a = c->a;
    char *y = c->y;
    const __m512 s = _mm512_set1_ps(c->s);
    size_t i = begin;
    for (; i + 16 <= end; i += 16)
        store16_all(t, y + i * es, arith16(op, load16_all(t, a + i * es), s));
    if (i < end) {
        const __mmask16 m = tail_mask(end - i);
        store16(t, y + i * es, m, arith16(op, load16_masked(t, a + i * es, m), s));
    }
}

TARGET static void arith_range(const arith_ctx *c, size_t begin, size_t end)
{
#define ARITH_CASES(OP)                                                                           \
    switch (c->t) {                                                                               \
    case AMP_BF16: arith_loop(AMP_BF16, OP, c, begin, end); return;                               \
    case AMP_F16: arith_loop(AMP_F16, OP, c, begin, end); return;                                 \
    default: arith_loop(AMP_F32, OP, c, begin, end); return;                                      \
    }
    switch (c->op) {
    case ARITH_ADD: ARITH_CASES(ARITH_ADD)
    case ARITH_SUB: ARITH_CASES(ARITH_SUB)
    case ARITH_MUL: ARITH_CASES(ARITH_MUL)
    case ARITH_DIV: ARITH_CASES(ARITH_DIV)
    case ARITH_RSUB: ARITH_CASES(ARITH_RSUB)
    default: ARITH_CASES(ARITH_RDIV)
    }
#undef ARITH_CASES
}

static void arith_task(void *ctx, int64_t task, int slot)
{
    const arith_ctx *c = ctx;
    const size_t begin = (size_t)task * CHUNK, end = begin + CHUNK < c->n ? begin + CHUNK : c->n;
    (void)slot;
    arith_range(c, begin, end);
}

static void arith_run(amp_dtype t, int op, size_t n, const void *a, float s, void *y)
{
    arith_ctx c = { t, op, a, s, y, n };
    if (n < PARALLEL_MIN || amp_get_threads() == 1)
        arith_range(&c, 0, n);
    else
        amp_parallel_run(amp_get_threads(), (int64_t)((n + CHUNK - 1) / CHUNK), arith_task, &c);
}

#define ENTRIES(T) AMP_SCALAR_ARITH_ENTRIES(T, arith_run)
AMP_FOR_EACH_KERNEL_DTYPE(ENTRIES)

#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
AMP_SCALAR_ARITH_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_scalar_arith(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    AMP_SCALAR_ARITH_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
