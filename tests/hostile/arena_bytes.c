/* tests/hostile/arena_bytes.c: <prefix>_arena_bytes and _forward for batch
 * sizes up to INT64_MAX.  tests/hostile/run.sh builds it with
 * -fsanitize=undefined -fno-sanitize-recover against cases/arena.amp
 * (sixteen f32[B, 2] temporaries live at once: 16 slots of 8B bytes, while
 * the largest single size is 16B).  In range the function gives the plan's
 * value; past it SIZE_MAX, never a wrapped small number (at B = 2^57 the
 * slots sum to 2^64 exactly), and _forward refuses those dims with
 * AMP_ERR_BAD_DIM before touching anything.  Exits 0 when all hold. */
#include "arena.h"

#include <stdint.h>
#include <stdio.h>

int main(void)
{
    static const int64_t in_range[] = {0, 1, 1000, (int64_t)1 << 40, (int64_t)1 << 50};
    static const int64_t out_of_range[] = {(int64_t)1 << 57, (int64_t)1 << 58, (int64_t)1 << 60, (int64_t)1 << 62,
                                           INT64_MAX - 1, INT64_MAX, -1, INT64_MIN};
    int failed = 0;
    for (size_t i = 0; i < sizeof in_range / sizeof in_range[0]; i++) {
        const int64_t B = in_range[i];
        const arena_dims dims = {B};
        const size_t got = arena_arena_bytes(&dims), want = ARENA_ARENA_BYTES(B);
        if (got != want) {
            printf("B = %lld: arena_bytes %zu, expected %zu\n", (long long)B, got, want);
            failed = 1;
        }
    }
    for (size_t i = 0; i < sizeof out_of_range / sizeof out_of_range[0]; i++) {
        const int64_t B = out_of_range[i];
        const arena_dims dims = {B};
        const size_t got = arena_arena_bytes(&dims);
        if (got != SIZE_MAX) {
            printf("B = %lld: arena_bytes %zu, expected SIZE_MAX\n", (long long)B, got);
            failed = 1;
        }
        static const float w[8], x[4];
        static float y[2];
        const arena_params params = {w, w, w, w, w, w, w, w, w, w, w, w, w, w, w, w};
        const arena_inputs inputs = {x};
        arena_outputs outputs = {y};
        static unsigned char arena[64];
        /* a caller that trusts a wrapped size would pass a small arena */
        int rc = arena_forward(&params, &inputs, &outputs, &dims, arena, sizeof arena);
        if (rc != AMP_ERR_BAD_DIM) {
            printf("B = %lld: forward returns %d, expected AMP_ERR_BAD_DIM\n", (long long)B, rc);
            failed = 1;
        }
    }
    if (!failed)
        printf("arena sizes saturate: %d in range exact, %d out of range SIZE_MAX and refused\n",
               (int)(sizeof in_range / sizeof in_range[0]), (int)(sizeof out_of_range / sizeof out_of_range[0]));
    return failed;
}
