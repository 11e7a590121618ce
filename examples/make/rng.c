/* rng.c: deterministic test data.  Knows nothing of the model, so editing
 * the model does not rebuild it. */
#include "rng.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t state = 0x2545f491u;

static float uniform(float lo, float hi)
{
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return lo + (hi - lo) * (float)(state >> 8) / 16777216.0f;
}

float *rng_filled(size_t n, float bound)
{
    float *p = malloc(n ? n * sizeof *p : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = uniform(-bound, bound);
    return p;
}
