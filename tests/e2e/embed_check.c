/*
 * embed_check.c - the mlp compiled with --embed-weights FILE holds exactly
 * the weights <prefix>_load_weights reads from FILE: every parameter
 * bit-identical, and the forward pass gives bit-identical outputs.
 * Run in the directory holding mlp-weights.safetensors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"

int main(void)
{
    static unsigned char storage[MLP_WEIGHTS_BYTES];
    mlp_params loaded;
    int rc = mlp_load_weights("mlp-weights.safetensors", storage, sizeof storage, &loaded);
    if (rc != AMP_OK) {
        fprintf(stderr, "embed_check: load: %s\n", mlp_strerror(rc));
        return 1;
    }
    const mlp_params *embedded = mlp_embedded_params();
    int bad = 0;
    bad |= memcmp(loaded.fc1_weight, embedded->fc1_weight, MLP_FC1_WEIGHT_NUMEL(1) * sizeof(float)) != 0;
    bad |= memcmp(loaded.fc1_bias, embedded->fc1_bias, MLP_FC1_BIAS_NUMEL(1) * sizeof(float)) != 0;
    bad |= memcmp(loaded.fc2_weight, embedded->fc2_weight, MLP_FC2_WEIGHT_NUMEL(1) * sizeof(float)) != 0;
    bad |= memcmp(loaded.fc2_bias, embedded->fc2_bias, MLP_FC2_BIAS_NUMEL(1) * sizeof(float)) != 0;
    if (bad) {
        fputs("embed_check: embedded parameters differ from the file's\n", stderr);
        return 1;
    }

    enum { B = 3 };
    static float x[B * 64];
    static int64_t y[B];
    for (int i = 0; i < B * 64; i++)
        x[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < B; i++)
        y[i] = i % 10;
    mlp_dims dims = {B};
    mlp_inputs in = {x, y};
    static amp_bf16 logits_a[B * 10], logits_b[B * 10];
    float loss_a, loss_b;
    mlp_outputs out_a = {logits_a, &loss_a}, out_b = {logits_b, &loss_b};
    size_t bytes = mlp_arena_bytes(&dims);
    void *arena = malloc(bytes);
    if (!arena || mlp_forward(&loaded, &in, &out_a, &dims, arena, bytes) != AMP_OK ||
        mlp_forward(embedded, &in, &out_b, &dims, arena, bytes) != AMP_OK) {
        fputs("embed_check: forward failed\n", stderr);
        return 1;
    }
    free(arena);
    if (memcmp(logits_a, logits_b, sizeof logits_a) != 0 || memcmp(&loss_a, &loss_b, sizeof loss_a) != 0) {
        fputs("embed_check: outputs differ\n", stderr);
        return 1;
    }
    printf("embedded weights identical to the file's; outputs bit-identical (loss %g)\n", (double)loss_a);
    return 0;
}
