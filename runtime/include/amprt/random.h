/*
 * amprt/random.h - part of amprt.h (include that, not this): the counter-based
 * random generator and the kernels drawing from it (dropout).
 *
 * The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11): a keyed bijection of a
 * 128-bit counter, so the n-th random word is a pure function of (key,
 * counter) with no state to carry.  Ten rounds of
 *     (c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))
 * with M0 = 0xD2511F53, M1 = 0xCD9E8D57 and the key bumped by the Weyl
 * constants (0x9E3779B9, 0xBB67AE85) between rounds.  A mask drawn from it
 * is reproducible, the same whatever the thread count or the order elements
 * are computed in, and a backward pass can regenerate it instead of storing
 * it.  tests/runtime/test_random.c checks the published known-answer
 * vectors.
 *
 * A draw for element i of a tensor (amp_random_u32):
 *     key     = seed (k0 = low 32 bits, k1 = high 32 bits)
 *     counter = (block low 32 bits, block bits 32..39 | stream << 8,
 *                offset low 32 bits, offset high 32 bits),  block = i / 4
 * and the word is output i % 4 of that block.  `seed` is the run's seed,
 * `offset` the micro-batch counter a training step advances, `stream`
 * tells apart the random ops of one step (the code generator numbers them;
 * 24 bits), and the element index leaves room for 2^42 elements.
 *
 * Dropout (PyTorch's semantics): element i is kept when its word r has
 * r >= ceil(p 2^32) (probability 1 - p, to within 2^-32), so p = 0 keeps
 * every element and p = 1 none.
 *
 *  dropout       y = keep_i ? x * (1 / (1 - p)) : 0, the scale computed in
 *                double and rounded to the compute type, one rounding per
 *                output; p = 1 gives zeros.  Its gradient is the same
 *                kernel applied to dy with the same (seed, stream, offset):
 *                dx = dy * mask / (1 - p).  x and y may be the same array.
 *  amp_dropout_mask  the mask itself (1 kept, 0 dropped), for callers and
 *                tests; the same draws as dropout's.
 *  amp_philox4x32_10  one block of the generator.
 */
#ifndef AMPRT_RANDOM_H
#define AMPRT_RANDOM_H

void amp_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);
/* Word i of the stream (seed, stream, offset): as the block layout above. */
uint32_t amp_random_u32(uint64_t seed, uint64_t stream, uint64_t offset, uint64_t i);
void amp_dropout_mask(size_t n, double p, uint64_t seed, uint64_t stream, uint64_t offset, uint8_t *mask);

#define AMP_RANDOM_OF_CTYPE(X, T, CT)                                                    \
    X(dropout, T, void,                                                                  \
      (size_t n, const CT *x, double p, uint64_t seed, uint64_t stream, uint64_t offset, \
       CT *y),                                                                           \
      (n, x, p, seed, stream, offset, y))

#endif /* AMPRT_RANDOM_H */
