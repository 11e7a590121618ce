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
 * are split into chunks on the thread pool (frame/chunked.h); the result
 * does not depend on the split.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/scalar_arith_form.h"
#include "frame/chunked.h"
#include "avx512_lanes.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET

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

TARGET static AMP_ALWAYS_INLINE void arith_loop(const amp_dtype t, const int op, const amp_scalar_arith_ctx *c,
                                                size_t begin, size_t end)
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
        store16(t, y + i * es, m, arith16(op, load16(t, a + i * es, m), s));
    }
}

AMP_SCALAR_ARITH_CHUNKED_SET(avx512, TARGET, arith_loop)

#endif /* x86 */
