/* mlp_main.c: runs the compiled examples/mlp.amp on fixed inputs and prints
 * its outputs.  Works unchanged for every target: the generated header
 * says each tensor's dtype (MLP_LOGITS_DTYPE...), and amp_load_as_f32
 * reads any of them.
 *
 *   ampc examples/mlp.amp -t tpu -o mlp.c
 *   cc -std=c99 -Iruntime/include -I. examples/mlp_main.c mlp.c libamprt.a -lm -lpthread
 *   ./a.out [BATCH]
 *
 * Parameters are filled like PyTorch's nn.Linear default init
 * (uniform in +-1/sqrt(fan_in)) from a fixed-seed generator, so every run
 * and every machine prints the same numbers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mlp.h"

/* xorshift32: tiny, portable, and the same sequence everywhere. */
static uint32_t rng_state = 0x2545f491u;

static float uniform(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static float *filled(size_t n, float bound)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = uniform(-bound, bound);
    return p;
}

int main(int argc, char **argv)
{
    long batch = argc > 1 ? strtol(argv[1], NULL, 10) : 4;
    if (batch < 1 || batch > 1 << 20) {
        fprintf(stderr, "usage: %s [BATCH]  (1 <= BATCH <= 1048576)\n", argv[0]);
        return 2;
    }
    mlp_dims dims = {.B = batch};

    mlp_params params = {
        .fc1_weight = filled(MLP_FC1_WEIGHT_NUMEL(dims.B), 0.125f), /* 1/sqrt(64) */
        .fc1_bias = filled(MLP_FC1_BIAS_NUMEL(dims.B), 0.125f),
        .fc2_weight = filled(MLP_FC2_WEIGHT_NUMEL(dims.B), 0.0884f), /* 1/sqrt(128) */
        .fc2_bias = filled(MLP_FC2_BIAS_NUMEL(dims.B), 0.0884f),
    };
    float *x = filled(MLP_X_NUMEL(dims.B), 2.0f);
    int64_t *y = malloc(MLP_Y_NUMEL(dims.B) * sizeof *y);
    for (long i = 0; i < batch; i++)
        y[i] = (int64_t)(i * 7 % 10);
    mlp_inputs inputs = {.x = x, .y = y};

    mlp_outputs outputs = {
        .logits = malloc(MLP_LOGITS_NUMEL(dims.B) * amp_dtype_size(MLP_LOGITS_DTYPE)),
        .loss = malloc(MLP_LOSS_NUMEL(dims.B) * amp_dtype_size(MLP_LOSS_DTYPE)),
    };
    size_t arena_bytes = mlp_arena_bytes(&dims);
    void *arena = malloc(arena_bytes ? arena_bytes : 1);
    if (!y || !outputs.logits || !outputs.loss || !arena) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    int rc = mlp_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);
    if (rc != AMP_OK) {
        fprintf(stderr, "mlp_forward: %s\n", mlp_strerror(rc));
        return 1;
    }

    printf("batch %ld, arena %zu bytes, kernels: %s\n", batch, arena_bytes, amp_isa_name());
    printf("logits (%s):\n", amp_dtype_name(MLP_LOGITS_DTYPE));
    for (long i = 0; i < batch; i++) {
        printf("  [%ld]", i);
        for (int j = 0; j < 10; j++)
            printf(" %8.4f", amp_load_as_f32(MLP_LOGITS_DTYPE, outputs.logits, (size_t)(i * 10 + j)));
        printf("   label %lld\n", (long long)y[i]);
    }
    printf("loss (%s): %.6f\n", amp_dtype_name(MLP_LOSS_DTYPE), amp_load_as_f32(MLP_LOSS_DTYPE, outputs.loss, 0));
    return 0;
}
