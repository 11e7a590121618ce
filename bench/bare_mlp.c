/* bare_mlp.c: examples/mlp.amp on the runtime without threads and without
 * files (make BARE=1), compiled as such a program is: with
 * -DAMPRT_NO_STDIO, so that the emitted C has no file loader, and
 * nothing of stdio here either.  bench/binary_size.sh links it without
 * --gc-sections, whole objects and all, and checks with nm that nothing
 * in it asks for stdio or files.
 *
 *   ampc examples/mlp.amp -t tpu -o mlp.c
 *   cc -std=c99 -DAMPRT_NO_STDIO -Iruntime/include -I. bench/bare_mlp.c mlp.c build/bare/libamprt.a -lm
 *
 * Exit status 0 when the forward pass ran and its loss is finite, and
 * mlp_load_weights_bytes (the loader of such a runtime: a safetensors
 * image in memory) refused a truncated image with a message and left the
 * parameters alone; 1 otherwise.
 */
#include <math.h>
#include <stdlib.h>

#include "mlp.h"

/* xorshift32, as examples/mlp_main.c fills its parameters */
static uint32_t rng_state = 0x2545f491u;

static float *filled(size_t n, float bound)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p != NULL && i < n; i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 17;
        rng_state ^= rng_state << 5;
        p[i] = -bound + 2.0f * bound * (float)(rng_state >> 8) / 16777216.0f;
    }
    return p;
}

int main(void)
{
    mlp_dims dims = {.B = 8};
    mlp_params params = {
        .fc1_weight = filled(MLP_FC1_WEIGHT_NUMEL(dims.B), 0.125f),
        .fc1_bias = filled(MLP_FC1_BIAS_NUMEL(dims.B), 0.125f),
        .fc2_weight = filled(MLP_FC2_WEIGHT_NUMEL(dims.B), 0.0884f),
        .fc2_bias = filled(MLP_FC2_BIAS_NUMEL(dims.B), 0.0884f),
    };
    const mlp_params before = params;
    float *x = filled(MLP_X_NUMEL(dims.B), 2.0f);
    int64_t y[8] = {0, 7, 4, 1, 8, 5, 2, 9};
    mlp_inputs inputs = {.x = x, .y = y};
    mlp_outputs outputs = {
        .logits = malloc(MLP_LOGITS_NUMEL(dims.B) * amp_dtype_size(MLP_LOGITS_DTYPE)),
        .loss = malloc(MLP_LOSS_NUMEL(dims.B) * amp_dtype_size(MLP_LOSS_DTYPE)),
    };
    size_t arena_bytes = mlp_arena_bytes(&dims);
    void *arena = malloc(arena_bytes ? arena_bytes : 1);
    static unsigned char storage[MLP_WEIGHTS_BYTES];
    /* a safetensors header of 64 bytes that the image does not hold */
    static const unsigned char truncated[12] = {64, 0, 0, 0, 0, 0, 0, 0, '{', '"', 'a', '"'};
    char message[128] = "";

    if (!params.fc1_weight || !params.fc1_bias || !params.fc2_weight || !params.fc2_bias || !x ||
        !outputs.logits || !outputs.loss || !arena)
        return 1;
    if (mlp_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes) != AMP_OK ||
        !isfinite(amp_load_as_f32(MLP_LOSS_DTYPE, outputs.loss, 0)))
        return 1;
    if (mlp_load_weights_bytes(truncated, sizeof truncated, storage, sizeof storage, &params, message,
                               sizeof message) == AMP_OK ||
        message[0] == '\0' || params.fc1_weight != before.fc1_weight)
        return 1;
    return 0;
}
