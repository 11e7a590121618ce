/* bitexact_test_util.h: what the bit-for-bit tests of the optimized kernel
 * sets (test_fasteltwise.c, test_fastbackward.c) share: a generator, the
 * special values a vector rewrite gets wrong, buffers mixing them with
 * ordinary values, and a call through a kernel table by dtype.  The
 * including file defines BITEXACT_TEST_SEED, its generator's start. */
#ifndef AMPRT_BITEXACT_TEST_UTIL_H
#define AMPRT_BITEXACT_TEST_UTIL_H

static uint64_t rng = BITEXACT_TEST_SEED;

static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static float special(void)
{
    static const float v[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f, 3.4e38f, -5e-8f };
    return v[next() % (sizeof v / sizeof v[0])];
}

/* Mostly uniform in [-4, 4] (1 in 16 special), stored in t; 1 in 32 a raw
 * bit pattern (NaN payloads, signalling NaNs, subnormals) for bf16 and
 * f16, and for f32 too when raw_f32.  f64 (parameters) gets values only. */
static void *special_buf(amp_dtype t, size_t n, int raw_f32)
{
    void *p = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next();
        if (raw_f32 && t == AMP_F32 && r % 32 == 0)
            ((uint32_t *)p)[i] = (uint32_t)(r >> 13);
        else if ((t == AMP_BF16 || t == AMP_F16) && r % 32 == 0)
            ((uint16_t *)p)[i] = (uint16_t)(r >> 20);
        else
            amp_store_from_f32(t, p, i, r % 16 == 1 ? special() : (float)((double)(r >> 11) * 0x1p-53 * 8 - 4));
    }
    return p;
}

/* adaptive_avg_pool's shapes, for the forward and the gradient: to one
 * position per plane (a global average pool, which the AVX-512 sets run
 * themselves: planes a multiple of 16 and not, fewer than 16, none; 1-d to
 * 3-d) and to others (the reference). */
typedef struct {
    int nspatial;
    int64_t planes, in[3], out[3];
} apcase;

static const apcase ap_cases[] = {
    { 2, 4096, { 7, 7 }, { 1, 1 } }, /* resnet18's head */
    { 2, 37, { 3, 5 }, { 1, 1 } },
    { 1, 33, { 10 }, { 1 } },
    { 1, 16, { 100 }, { 1 } },
    { 3, 40, { 2, 3, 4 }, { 1, 1, 1 } },
    { 2, 9, { 1, 1 }, { 1, 1 } },
    { 2, 0, { 4, 4 }, { 1, 1 } },
    { 2, 20, { 7, 7 }, { 3, 2 } }, /* not global: the reference */
};

/* The case's input and output elements. */
static inline void ap_sizes(const apcase *c, size_t *nx, size_t *ny)
{
    int64_t in_plane = 1, out_plane = 1;
    for (int i = 0; i < c->nspatial; i++)
        in_plane *= c->in[i], out_plane *= c->out[i];
    *nx = (size_t)(c->planes * in_plane);
    *ny = (size_t)(c->planes * out_plane);
}

#include "kernel_call.h"

#endif
