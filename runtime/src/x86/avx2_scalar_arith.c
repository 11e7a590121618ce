/*
 * avx2_scalar_arith.c - the AVX2 (+ FMA + F16C) tensor-scalar arithmetic
 * kernels of the "avx2" set: add_scalar, sub_scalar, mul_scalar,
 * div_scalar, rsub_scalar and rdiv_scalar (y = a op s, or s op a) for
 * f32, bf16 and f16 storage, computing in f32 (x86/avx2_store.h), 8 lanes
 * at a time.  A transformer divides its attention scores by sqrt(d) and
 * scales its activations this way.
 *
 * Bit for bit the reference (ref/ref_elementwise.inc's with_scalar;
 * tests/runtime/test_fastscalar_arith.c): each lane widens a[i] as amp_ld
 * does, computes one IEEE operation with the f32 scalar in the same
 * operand order, and rounds to the storage dtype as amp_st does.  The
 * only NaN a lane can return is its element's (quieted) or the default
 * NaN of an invalid operation (0 / 0, inf - inf), the same on the
 * reference's scalar SSE: a NaN scalar goes to the reference
 * (frame/scalar_arith_form.h).  Large arrays are split into chunks on the
 * thread pool; the result does not depend on the split.
 *
 * Compiled for AVX2 through target attributes only; installed by
 * amp_isa_avx2_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "frame/scalar_arith_form.h"
#include "frame/chunked.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET

/* One vector of op on a (widened) and the broadcast scalar s. */
TARGET static AMP_ALWAYS_INLINE __m256 arith8(const int op, __m256 a, __m256 s)
{
    switch (op) {
    case ARITH_ADD: return _mm256_add_ps(a, s);
    case ARITH_SUB: return _mm256_sub_ps(a, s);
    case ARITH_MUL: return _mm256_mul_ps(a, s);
    case ARITH_DIV: return _mm256_div_ps(a, s);
    case ARITH_RSUB: return _mm256_sub_ps(s, a);
    default: return _mm256_div_ps(s, a);
    }
}

TARGET static AMP_ALWAYS_INLINE void arith_loop(const amp_dtype t, const int op, const amp_scalar_arith_ctx *c,
                                                size_t begin, size_t end)
{
    const size_t es = avx2_size_of(t);
    const char *a = c->a;
    char *y = c->y;
    const __m256 s = _mm256_set1_ps(c->s);
    size_t i = begin;
    /* bf16: the even and odd elements as two vectors, stored back as they came */
    for (; t == AMP_BF16 && i + 16 <= end; i += 16) {
        __m256 ae, ao;
        avx2_load16_bf16(a + i * es, &ae, &ao);
        avx2_store16_bf16(y + i * es, arith8(op, ae, s), arith8(op, ao, s));
    }
    for (; i + 8 <= end; i += 8)
        avx2_store8(t, y + i * es, arith8(op, avx2_load8(t, a + i * es), s));
    if (i < end)
        avx2_store8_n(t, y + i * es, end - i, arith8(op, avx2_load8_n(t, a + i * es, end - i), s));
}

AMP_SCALAR_ARITH_CHUNKED_SET(avx2, TARGET, arith_loop)

#endif /* x86 */
