/*
 * train_driver.c - a fixed run of examples/digits/mlp.amp's training step,
 * for train_agree.py: weights from a safetensors file, the mini-batches in
 * the order a file gives, the loss of every step printed.
 *
 *   train_driver WEIGHTS.safetensors DIGITS.bin ORDER.bin STEPS BATCH
 *
 * ORDER.bin holds STEPS * BATCH little-endian i32 sample numbers (training
 * samples of DIGITS.bin, examples/digits/make-data.py's format).  Prints
 * "step loss scale skipped" per step.  Built with the model compiled as
 * --prefix=digits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

static unsigned char *read_all(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*size + 1);
    if (b && fread(b, 1, (size_t)*size, f) != (size_t)*size) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s WEIGHTS DIGITS ORDER STEPS BATCH\n", argv[0]);
        return 2;
    }
    int steps = atoi(argv[4]), batch = atoi(argv[5]);
    long dsize, osize;
    unsigned char *data = read_all(argv[2], &dsize), *order = read_all(argv[3], &osize);
    if (!data || !order || dsize < 16 || memcmp(data, "DIGITS01", 8) != 0 ||
        osize < (long)steps * batch * 4) {
        fprintf(stderr, "train_driver: bad data or order file\n");
        return 2;
    }
    static unsigned char weights[DIGITS_WEIGHTS_BYTES], storage[DIGITS_STATE_BYTES];
    digits_params params;
    digits_train_state s;
    int rc = digits_load_weights(argv[1], weights, sizeof weights, &params);
    if (rc == AMP_OK)
        rc = digits_train_init(&s, storage, sizeof storage, &params);
    if (rc != AMP_OK) {
        fprintf(stderr, "train_driver: %s\n", digits_strerror(rc));
        return 1;
    }
    digits_dims dims = {batch};
    size_t bytes = digits_train_arena_bytes(&dims);
    void *arena = malloc(bytes);
    float *x = malloc((size_t)batch * 64 * sizeof *x);
    int64_t *y = malloc((size_t)batch * sizeof *y);
    void *logits = malloc((size_t)batch * 10 * 8);
    float loss;
    if (!arena || !x || !y || !logits)
        return 1;
    const unsigned char *records = data + 16;
    for (int k = 0; k < steps; k++) {
        for (int i = 0; i < batch; i++) {
            const unsigned char *o = order + 4 * ((long)k * batch + i);
            long n = (long)o[0] | (long)o[1] << 8 | (long)o[2] << 16 | (long)o[3] << 24;
            const unsigned char *r = records + 65 * n;
            for (int p = 0; p < 64; p++)
                x[i * 64 + p] = (float)r[p] / 16.0f;
            y[i] = r[64];
        }
        digits_inputs in = {x, y};
        digits_outputs out = {logits, &loss};
        rc = digits_train_step(&s, &in, &out, &dims, arena, bytes);
        if (rc != AMP_OK) {
            fprintf(stderr, "train_driver: step %d: %s\n", k, digits_strerror(rc));
            return 1;
        }
        printf("%d %.9g %.9g %lld\n", k, (double)loss, (double)s.scale, (long long)s.skipped_steps);
    }
    return 0;
}
