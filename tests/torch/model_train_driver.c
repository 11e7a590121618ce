/*
 * model_train_driver.c - a fixed training run of a model torch2amp exported
 * with --train, for train_agree.py: initial weights from a safetensors file,
 * each step's input and target read in turn from two files, the loss of
 * every step printed, and the trained state saved as a checkpoint.
 *
 *   model_train_driver WEIGHTS X.bin T.bin STEPS BATCH X_BYTES T_BYTES Y_BYTES CKPT
 *
 * X.bin holds STEPS inputs of X_BYTES each (the batch, in the input's
 * dtype), T.bin STEPS targets of T_BYTES each; Y_BYTES is room for one
 * step's output.  Prints "step loss" per step; CKPT gets <prefix>_save's
 * checkpoint (parameters, buffers, optimizer state under their state_dict
 * names).  Built with the model compiled as --prefix=m into m.c and m.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "m.h"

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
    if (argc != 10) {
        fprintf(stderr, "usage: %s WEIGHTS X.bin T.bin STEPS BATCH X_BYTES T_BYTES Y_BYTES CKPT\n", argv[0]);
        return 2;
    }
    long steps = atol(argv[4]), batch = atol(argv[5]);
    long xb = atol(argv[6]), tb = atol(argv[7]), yb = atol(argv[8]);
    long xsize, tsize;
    unsigned char *xs = read_all(argv[2], &xsize), *ts = read_all(argv[3], &tsize);
    if (!xs || !ts || steps <= 0 || batch <= 0 || xsize != steps * xb || tsize != steps * tb || yb <= 0) {
        fprintf(stderr, "model_train_driver: bad input or target file\n");
        return 2;
    }
    void *weights = malloc(M_WEIGHTS_BYTES), *storage = malloc(M_STATE_BYTES);
    m_params params;
    m_train_state s;
    int rc = weights && storage ? m_load_weights(argv[1], weights, M_WEIGHTS_BYTES, &params) : AMP_ERR_OUT_OF_MEMORY;
    if (rc == AMP_OK)
        rc = m_train_init(&s, storage, M_STATE_BYTES, &params);
    if (rc != AMP_OK) {
        fprintf(stderr, "model_train_driver: %s\n", m_strerror(rc));
        return 1;
    }
    m_dims dims = {batch};
    size_t bytes = m_train_arena_bytes(&dims);
    void *arena = malloc(bytes), *y = malloc((size_t)yb);
    float loss;
    if (!arena || !y)
        return 1;
    for (long k = 0; k < steps; k++) {
        m_inputs in = {(const void *)(xs + k * xb), (const void *)(ts + k * tb)};
        m_outputs out = {y, &loss};
        rc = m_train_step(&s, &in, &out, &dims, arena, bytes);
        if (rc != AMP_OK) {
            fprintf(stderr, "model_train_driver: step %ld: %s\n", k, m_strerror(rc));
            return 1;
        }
        printf("%ld %.9g\n", k, (double)loss);
    }
    rc = m_save(&s, argv[9]);
    if (rc != AMP_OK) {
        fprintf(stderr, "model_train_driver: %s: %s\n", argv[9], m_strerror(rc));
        return 1;
    }
    return 0;
}
