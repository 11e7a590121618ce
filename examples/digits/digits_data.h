/* digits_data.h: what train.c and deploy.c share - the digits file
 * (digits.bin, written by make-data.py) read, checked and split into its
 * training and test samples, and the class a row of logits predicts.
 *
 * Included after the model's header (MODEL_HEADER: DIGITS_LOGITS_DTYPE),
 * with DIGITS_PROGRAM defined to the program's name for its messages.
 * Every function is static: each program has its own copy.
 */
#ifndef DIGITS_DATA_H
#define DIGITS_DATA_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIXELS = 64, CLASSES = 10 };
/* the exit statuses both programs use */
enum { EXIT_USAGE = 2, EXIT_FILE = 3, EXIT_ERROR = 4 };

/* ---- The data: digits.bin (format: make-data.py) ------------------------- */

typedef struct dataset {
    size_t n;            /* samples */
    float *x;            /* [n, 64], pixels / 16 */
    int64_t *y;          /* [n], 0..9 */
} dataset;

static uint32_t get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, DIGITS_PROGRAM ": out of memory (%zu bytes)\n", bytes);
        exit(EXIT_ERROR);
    }
    return p;
}

static void bad_data(const char *path, const char *what)
{
    if (!what)
        what = strerror(errno);
    fprintf(stderr, DIGITS_PROGRAM ": %s: %s\n", path, what);
    exit(EXIT_FILE);
}

static void fill(dataset *d, const unsigned char *rec, size_t n)
{
    d->n = n;
    d->x = xmalloc(n * PIXELS * sizeof *d->x);
    d->y = xmalloc(n * sizeof *d->y);
    for (size_t i = 0; i < n; i++, rec += PIXELS + 1) {
        for (int j = 0; j < PIXELS; j++)
            d->x[i * PIXELS + j] = (float)rec[j] / 16.0f;
        d->y[i] = rec[PIXELS];
    }
}

/* Reads the whole file, checks it, and splits it into train and test. */
static void read_digits(const char *path, dataset *train, dataset *test)
{
    enum { HEADER = 16, RECORD = PIXELS + 1 };
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, DIGITS_PROGRAM ": cannot open %s: %s\n", path, strerror(errno));
        exit(EXIT_FILE);
    }
    unsigned char header[HEADER];
    size_t got = fread(header, 1, HEADER, f);
    if (ferror(f))
        bad_data(path, NULL); /* a read error */
    if (got < 8 || memcmp(header, "DIGITS01", 8) != 0)
        bad_data(path, "not a digits file (it does not start with \"DIGITS01\")");
    if (got < HEADER)
        bad_data(path, "truncated in its header");
    size_t count = get_u32le(header + 8), n_train = get_u32le(header + 12);
    if (count == 0 || n_train == 0 || n_train >= count) {
        fprintf(stderr, DIGITS_PROGRAM ": %s: bad header: %zu samples, %zu for training "
                        "(need 0 < train < samples)\n", path, count, n_train);
        exit(EXIT_FILE);
    }
    if (count > (size_t)1 << 24)
        bad_data(path, "bad header: more than 2^24 samples");
    size_t bytes = count * RECORD;
    unsigned char *rec = xmalloc(bytes);
    got = fread(rec, 1, bytes, f);
    if (ferror(f))
        bad_data(path, NULL); /* a read error */
    if (got < bytes) {
        fprintf(stderr, DIGITS_PROGRAM ": %s: truncated: the header promises %zu samples "
                        "(%zu bytes), the file holds %zu bytes\n",
                path, count, HEADER + bytes, HEADER + got);
        exit(EXIT_FILE);
    }
    if (fgetc(f) != EOF)
        bad_data(path, "trailing bytes after the last sample");
    fclose(f);
    for (size_t i = 0; i < count; i++) {
        const unsigned char *r = rec + i * RECORD;
        for (int j = 0; j < PIXELS; j++)
            if (r[j] > 16) {
                fprintf(stderr, DIGITS_PROGRAM ": %s: sample %zu: pixel %d is %u (must be 0..16)\n",
                        path, i, j, (unsigned)r[j]);
                exit(EXIT_FILE);
            }
        if (r[PIXELS] >= CLASSES) {
            fprintf(stderr, DIGITS_PROGRAM ": %s: sample %zu: label %u (must be 0..9)\n", path, i, (unsigned)r[PIXELS]);
            exit(EXIT_FILE);
        }
    }
    fill(train, rec, n_train);
    fill(test, rec + n_train * RECORD, count - n_train);
    free(rec);
}


/* The predicted class of row i of the logits: the first maximum, as argmax. */
static int predicted(const void *logits, size_t i)
{
    int best = 0;
    float best_v = amp_load_as_f32(DIGITS_LOGITS_DTYPE, logits, i * CLASSES);
    for (int c = 1; c < CLASSES; c++) {
        float v = amp_load_as_f32(DIGITS_LOGITS_DTYPE, logits, i * CLASSES + c);
        if (v > best_v) {
            best = c;
            best_v = v;
        }
    }
    return best;
}

#endif /* DIGITS_DATA_H */
