/* deploy.c: the deployed side of examples/digits - a trained model's
 * inference alone, measured on the test samples of digits.bin.
 *
 * Built two ways, from the same .amp file train.c trained (compiled with
 * --prefix=digits for the same target, so digits_forward computes the very
 * logits train.c's evaluation computed):
 *
 *   weights read at run time, from train.c's checkpoint or its --weights file:
 *     ampc mlp.amp -t cpu --prefix=digits -o digits.c
 *     cc -std=c99 deploy.c digits.c -lamprt -lm -lpthread -o deploy
 *     ./deploy trained.safetensors digits.bin
 *
 *   weights compiled in (ampc --embed-weights), no file read but the data:
 *     ampc mlp.amp -t cpu --prefix=digits --embed-weights=trained.safetensors -o digits.c
 *     cc -std=c99 -DEMBEDDED deploy.c digits.c -lamprt -lm -lpthread -o deploy
 *     ./deploy digits.bin
 *
 * Prints "test accuracy A (N of M)", A as train.c prints its final test
 * accuracy.  A bad weights file is reported with each bad tensor named
 * (digits_load_weights_ex).  Exit status: 0 success; 2 bad command line;
 * 3 the data or weights file is missing or bad; 4 any other error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MODEL_HEADER
#define MODEL_HEADER "digits.h"
#endif
#include MODEL_HEADER

enum { BATCH = 64 };

#define DIGITS_PROGRAM "deploy"
#include "digits_data.h"

int main(int argc, char **argv)
{
#ifdef EMBEDDED
    if (argc != 2) {
        fprintf(stderr, "usage: %s DATA.bin  (the weights are compiled in)\n", argv[0]);
        return EXIT_USAGE;
    }
    const char *data_path = argv[1];
    const digits_params *params = digits_embedded_params();
#else
    if (argc != 3) {
        fprintf(stderr, "usage: %s WEIGHTS.safetensors DATA.bin\n", argv[0]);
        return EXIT_USAGE;
    }
    const char *data_path = argv[2];
    digits_params loaded;
    void *storage = xmalloc(DIGITS_WEIGHTS_BYTES);
    char why[2048];
    int rc = digits_load_weights_ex(argv[1], storage, DIGITS_WEIGHTS_BYTES, &loaded, why, sizeof why);
    if (rc != AMP_OK) {
        fprintf(stderr, "deploy: %s: %s\n", argv[1], why);
        return EXIT_FILE;
    }
    const digits_params *params = &loaded;
#endif
    dataset train, test;
    read_digits(data_path, &train, &test);
    digits_dims most = {.B = BATCH};
    size_t arena_bytes = digits_arena_bytes(&most);
    void *arena = xmalloc(arena_bytes);
    int64_t *y = xmalloc(BATCH * sizeof *y);
    digits_outputs out = {
        .logits = xmalloc(DIGITS_LOGITS_NUMEL(BATCH) * amp_dtype_size(DIGITS_LOGITS_DTYPE)),
        .loss = xmalloc(DIGITS_LOSS_NUMEL(BATCH) * amp_dtype_size(DIGITS_LOSS_DTYPE)),
    };
    size_t correct = 0;
    for (size_t start = 0; start < test.n; start += BATCH) {
        size_t b = test.n - start < BATCH ? test.n - start : BATCH;
        digits_dims dims = {.B = (int64_t)b};
        digits_inputs in = {.x = test.x + start * PIXELS, .y = y};
        memcpy(y, test.y + start, b * sizeof *y);
        int frc = digits_forward(params, &in, &out, &dims, arena, arena_bytes);
        if (frc != AMP_OK) {
            fprintf(stderr, "deploy: digits_forward: %s\n", digits_strerror(frc));
            return EXIT_ERROR;
        }
        for (size_t i = 0; i < b; i++)
            correct += predicted(out.logits, i) == y[i];
    }
    printf("test accuracy %.4f (%zu of %zu)\n", (double)correct / (double)test.n, correct, test.n);
    free(out.logits);
    free(out.loss);
    free(y);
    free(arena);
    free(train.x);
    free(train.y);
    free(test.x);
    free(test.y);
#ifndef EMBEDDED
    free(storage);
#endif
    return 0;
}
