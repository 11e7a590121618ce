/* main.c: runs the model that ampc compiled from mlp.amp on a batch of
 * fixed inputs and prints the predicted classes and the loss. */
#include <stdio.h>
#include <stdlib.h>

#include "mlp.h"
#include "rng.h"

int main(void)
{
    mlp_dims dims = {.B = 4};
    mlp_params params = {
        .fc1_weight = rng_filled(MLP_FC1_WEIGHT_NUMEL(dims.B), 0.125f),
        .fc1_bias = rng_filled(MLP_FC1_BIAS_NUMEL(dims.B), 0.125f),
        .fc2_weight = rng_filled(MLP_FC2_WEIGHT_NUMEL(dims.B), 0.0884f),
        .fc2_bias = rng_filled(MLP_FC2_BIAS_NUMEL(dims.B), 0.0884f),
    };
    int64_t y[4] = {3, 1, 4, 1};
    mlp_inputs inputs = {.x = rng_filled(MLP_X_NUMEL(dims.B), 2.0f), .y = y};
    mlp_outputs outputs = {
        .logits = malloc(MLP_LOGITS_NUMEL(dims.B) * amp_dtype_size(MLP_LOGITS_DTYPE)),
        .loss = malloc(MLP_LOSS_NUMEL(dims.B) * amp_dtype_size(MLP_LOSS_DTYPE)),
    };
    size_t arena_bytes = mlp_arena_bytes(&dims);
    void *arena = malloc(arena_bytes ? arena_bytes : 1);
    if (!outputs.logits || !outputs.loss || !arena) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    int rc = mlp_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);
    if (rc != AMP_OK) {
        fprintf(stderr, "mlp_forward: %s\n", mlp_strerror(rc));
        return 1;
    }
    printf("logits in %s, loss in %s\n", amp_dtype_name(MLP_LOGITS_DTYPE), amp_dtype_name(MLP_LOSS_DTYPE));
    for (int i = 0; i < dims.B; i++) {
        int best = 0;
        for (int j = 1; j < 10; j++)
            if (amp_load_as_f32(MLP_LOGITS_DTYPE, outputs.logits, (size_t)(i * 10 + j)) >
                amp_load_as_f32(MLP_LOGITS_DTYPE, outputs.logits, (size_t)(i * 10 + best)))
                best = j;
        printf("  [%d] class %d (label %d)\n", i, best, (int)y[i]);
    }
    printf("loss %.6f\n", amp_load_as_f32(MLP_LOSS_DTYPE, outputs.loss, 0));
    return 0;
}
