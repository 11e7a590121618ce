/*
 * ref_random.c - the counter-based generator of amprt/random.h
 * (Philox4x32-10) and the dropout reference kernels.
 *
 * The generator has one implementation: its output is defined bit for bit
 * by the algorithm, so there is nothing for an ISA-specific set to do but
 * compute the same words.  Dropout's body, in ref_random.inc, is
 * instantiated by ref_acc_twice.h (f32, bf16 and f16 compute in float, f64
 * in double); its mask is the same for every dtype, since it depends only
 * on (seed, stream, offset, element index).
 */
#include <math.h>

#include "amprt_internal.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* the golden ratio's fraction */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

void amp_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        /* the key schedule: a Weyl sequence (its last bump is never used) */
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The counter of block `block` of a stream (the layout amprt/random.h
 * documents). */
static void random_block(uint64_t seed, uint64_t stream, uint64_t offset, uint64_t block, uint32_t out[4])
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t counter[4] = {(uint32_t)block, (uint32_t)((block >> 32) & 0xFFu) | (uint32_t)(stream << 8),
                                 (uint32_t)offset, (uint32_t)(offset >> 32)};
    amp_philox4x32_10(counter, key, out);
}

uint32_t amp_random_u32(uint64_t seed, uint64_t stream, uint64_t offset, uint64_t i)
{
    uint32_t r[4];
    random_block(seed, stream, offset, i / 4, r);
    return r[i % 4];
}

/* The smallest word that keeps its element: ceil(p 2^32), 2^32 for p = 1
 * (nothing kept); p * 2^32 is exact in double. */
static uint64_t keep_threshold(double p)
{
    if (!(p > 0))
        return 0;
    if (p >= 1)
        return (uint64_t)1 << 32;
    return (uint64_t)ceil(p * 4294967296.0);
}

void amp_dropout_mask(size_t n, double p, uint64_t seed, uint64_t stream, uint64_t offset, uint8_t *mask)
{
    uint64_t threshold = keep_threshold(p);
    uint32_t r[4];
    for (size_t i = 0; i < n; i++) {
        if (i % 4 == 0)
            random_block(seed, stream, offset, (uint64_t)i / 4, r);
        mask[i] = (uint64_t)r[i % 4] >= threshold;
    }
}

#define REF_PART "ref_random.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_dropout REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
