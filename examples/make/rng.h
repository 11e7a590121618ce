/* rng.h: deterministic test data, the same on every machine. */
#ifndef RNG_H
#define RNG_H

#include <stddef.h>

/* A new array of n floats, uniform in [-bound, bound), from a fixed-seed
 * xorshift32 generator; exits the program if out of memory. */
float *rng_filled(size_t n, float bound);

#endif
