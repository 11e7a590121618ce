/* tests/torch/driver.c: runs one model that tools/torch2amp exported and
 * ampc compiled with --prefix=model, on an input read from a file.
 *
 *   ampc model.amp -t cpu --prefix=model -o model.c
 *   cc -std=c99 -O2 -Iruntime/include -I. -DIN=x -DIN_UP=X -DOUT=fc -DOUT_UP=FC \
 *      tests/torch/driver.c model.c libamprt.a -lm -lpthread -o driver
 *   ./driver WEIGHTS.safetensors INPUT.bin BATCH OUTPUT.bin
 *
 * IN/OUT name the model's input and output (their field names in
 * model_inputs and model_outputs), IN_UP/OUT_UP the same in upper case (the
 * header's MODEL_<NAME>_DTYPE and _NUMEL macros).  INPUT.bin holds the
 * input's raw little-endian elements in its declared dtype; OUTPUT.bin gets
 * the output converted to f32, whatever dtype autocast left it in.
 * Weights are loaded by state_dict name with model_load_weights, which checks
 * every name, dtype and shape.
 */
#include <stdio.h>
#include <stdlib.h>

#include "model.h"

#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define IN_DTYPE XCAT3(MODEL_, IN_UP, _DTYPE)
#define IN_NUMEL XCAT3(MODEL_, IN_UP, _NUMEL)
#define OUT_DTYPE XCAT3(MODEL_, OUT_UP, _DTYPE)
#define OUT_NUMEL XCAT3(MODEL_, OUT_UP, _NUMEL)

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s WEIGHTS.safetensors INPUT.bin BATCH OUTPUT.bin\n", argv[0]);
        return 2;
    }
    model_dims dims = {.B = strtol(argv[3], NULL, 10)};
    if (dims.B < 1) {
        fprintf(stderr, "bad batch %s\n", argv[3]);
        return 2;
    }

    model_params params;
    void *storage = malloc(MODEL_WEIGHTS_BYTES ? MODEL_WEIGHTS_BYTES : 1);
    if (!storage) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    int rc = model_load_weights(argv[1], storage, MODEL_WEIGHTS_BYTES, &params);
    if (rc != AMP_OK) {
        fprintf(stderr, "model_load_weights(%s): %s\n", argv[1], model_strerror(rc));
        return 1;
    }

    size_t in_bytes = IN_NUMEL(dims.B) * amp_dtype_size(IN_DTYPE);
    void *in = malloc(in_bytes ? in_bytes : 1);
    FILE *f = fopen(argv[2], "rb");
    if (!in || !f || fread(in, 1, in_bytes, f) != in_bytes) {
        fprintf(stderr, "cannot read %zu bytes of input from %s\n", in_bytes, argv[2]);
        return 1;
    }
    fclose(f);

    size_t n_out = OUT_NUMEL(dims.B);
    void *out = malloc(n_out * amp_dtype_size(OUT_DTYPE) + 1);
    float *out32 = malloc(n_out * sizeof *out32 + 1);
    size_t arena_bytes = model_arena_bytes(&dims);
    void *arena = malloc(arena_bytes ? arena_bytes : 1);
    if (!out || !out32 || !arena) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    model_inputs inputs = {.IN = in};
    model_outputs outputs = {.OUT = out};
    rc = model_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);
    if (rc != AMP_OK) {
        fprintf(stderr, "model_forward: %s\n", model_strerror(rc));
        return 1;
    }
    for (size_t i = 0; i < n_out; i++)
        out32[i] = amp_load_as_f32(OUT_DTYPE, out, i);
    f = fopen(argv[4], "wb");
    if (!f || fwrite(out32, sizeof *out32, n_out, f) != n_out || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[4]);
        return 1;
    }
    return 0;
}
