/* train.c: trains examples/digits/mlp.amp or cnn.amp on the 8x8
 * handwritten digits with the training step ampc emits, and checks the
 * test accuracy it reaches.  run.sh builds and runs it:
 *
 *   ampc examples/digits/mlp.amp -t tpu --prefix=digits -o out/digits.c
 *   cc -std=c99 -O2 -Iruntime/include -Iout examples/digits/train.c \
 *      out/digits.c libamprt.a -lm -lpthread -o train
 *   ./train [OPTIONS] examples/digits/digits.bin trained.safetensors [EPOCHS] [MIN_ACCURACY]
 *
 * Data parallelism (docs/distributed.md): linked with a libamprt built
 * with `make MPI=1` and started by `mpirun -np W`, it is W processes
 * (its world, from amprt/collective.h); without MPI it is a world of 1 and
 * runs exactly as before.  The loader is world-aware: every process
 * shuffles the training set the same way and takes the same global batches
 * of --batch samples, and rank r of W keeps the r-th of W equal slices of
 * each (the last, partial batch drops its remainder of fewer than W
 * samples), so W processes see, per step, exactly the samples one process
 * with the whole batch sees; the emitted update averages the gradients.
 * Only rank 0 prints and writes the checkpoint (atomically, digits_save).
 *
 * Options: --batch=N the global batch (default 64); --steps=N stop after N
 * steps; --weights=FILE also writes the trained parameters alone there
 * (digits_save_weights), what deploy.c or ampc --embed-weights takes, as
 * they take the checkpoint; --checksum every rank prints a checksum of its parameters, the
 * loss scale and the skipped steps at the end (tests/mpi compares them);
 * --poison=STEP:RANK a test hook: at step STEP (from 1) rank RANK puts an
 * infinity into its first input pixel, so that step's gradients are not
 * finite on that rank only; --timing rank 0 prints the mean wall-clock
 * time of a training step (docs/distributed.md's measurements).
 *
 * Either model is compiled with the prefix `digits`, so this file calls
 * digits_train_step, digits_forward... whichever it is; the emitted header
 * (MODEL_HEADER, default "digits.h") says which parameters the model has,
 * and the table PARAMS below follows from that.  The logits are bf16 or f16
 * depending on the target and are read through amp_load_as_f32.
 *
 * Everything is deterministic: the parameters are initialised as PyTorch's
 * nn.Linear and nn.Conv2d do by default (weights and biases uniform in
 * +-1/sqrt(fan_in)), and the training set is shuffled every epoch, both
 * from fixed-seed generators, so a given build prints the same numbers on
 * every run.  train_torch.py trains the same models in PyTorch.
 *
 * Exit status: 0 success; 1 the final test accuracy is below MIN_ACCURACY
 * (default 0.95); 2 bad command line; 3 the data file is missing or bad, or
 * the checkpoint could not be written; 4 any other error.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, for --timing */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef MODEL_HEADER
#define MODEL_HEADER "digits.h"
#endif
#include MODEL_HEADER

/* The parameters, each with its PyTorch fan_in (in_features, or
 * in_channels * kernel height * kernel width), which bounds its init. */
#if defined(DIGITS_FC1_WEIGHT_DTYPE) /* mlp.amp */
#define MODEL_NAME "mlp"
#define PARAMS(X)                                \
    X(fc1_weight, DIGITS_FC1_WEIGHT_NUMEL(1), 64) \
    X(fc1_bias, DIGITS_FC1_BIAS_NUMEL(1), 64)     \
    X(fc2_weight, DIGITS_FC2_WEIGHT_NUMEL(1), 128) \
    X(fc2_bias, DIGITS_FC2_BIAS_NUMEL(1), 128)
#elif defined(DIGITS_CONV1_WEIGHT_DTYPE) /* cnn.amp */
#define MODEL_NAME "cnn"
#define PARAMS(X)                                         \
    X(conv1_weight, DIGITS_CONV1_WEIGHT_NUMEL(1), 1 * 3 * 3) \
    X(conv1_bias, DIGITS_CONV1_BIAS_NUMEL(1), 1 * 3 * 3)     \
    X(conv2_weight, DIGITS_CONV2_WEIGHT_NUMEL(1), 16 * 3 * 3) \
    X(conv2_bias, DIGITS_CONV2_BIAS_NUMEL(1), 16 * 3 * 3)     \
    X(fc_weight, DIGITS_FC_WEIGHT_NUMEL(1), 128)              \
    X(fc_bias, DIGITS_FC_BIAS_NUMEL(1), 128)
#else
#error "MODEL_HEADER is neither examples/digits/mlp.amp nor cnn.amp compiled with --prefix=digits"
#endif

enum { EXIT_ACCURACY = 1, BATCH = 64 /* the default global batch, and the eval batch */ };

#define DIGITS_PROGRAM "train"
#include "digits_data.h"

/* ---- Fixed-seed random numbers ------------------------------------------- */

/* splitmix64: tiny, portable, the same sequence everywhere. */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), from 24 random bits. */
static float uniform(uint64_t *state, float lo, float hi)
{
    return lo + (hi - lo) * (float)(next_u64(state) >> 40) / 16777216.0f;
}

/* Fisher-Yates; the modulo's bias (< n / 2^64) is immaterial here. */
static void shuffle(size_t *idx, size_t n, uint64_t *state)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(next_u64(state) % i), t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

/* ---- Training ------------------------------------------------------------ */

/* One scratch arena, grown to the largest any call has needed. */
static void *arena;
static size_t arena_size;

static void need_arena(size_t bytes)
{
    if (bytes > arena_size) {
        free(arena);
        arena = xmalloc(bytes);
        arena_size = bytes;
    }
}

static void check(int rc, const char *what)
{
    if (rc != AMP_OK) {
        fprintf(stderr, "train: %s: %s\n", what, digits_strerror(rc));
        exit(EXIT_ERROR);
    }
}

/* Copies samples idx[0..b) of d into the batch buffers. */
static void gather(const dataset *d, const size_t *idx, size_t b, float *x, int64_t *y)
{
    for (size_t i = 0; i < b; i++) {
        memcpy(x + i * PIXELS, d->x + idx[i] * PIXELS, PIXELS * sizeof *x);
        y[i] = d->y[idx[i]];
    }
}

/* Accuracy of the current parameters on d, through digits_forward. */
static double accuracy(const digits_train_state *s, const dataset *d, float *x, int64_t *y,
                       digits_outputs *out)
{
    digits_params params;
    digits_train_params(s, &params);
    size_t correct = 0;
    for (size_t start = 0; start < d->n; start += BATCH) {
        size_t b = d->n - start < BATCH ? d->n - start : BATCH;
        digits_dims dims = {.B = (int64_t)b};
        digits_inputs in = {.x = x, .y = y};
        memcpy(x, d->x + start * PIXELS, b * PIXELS * sizeof *x);
        memcpy(y, d->y + start, b * sizeof *y);
        need_arena(digits_arena_bytes(&dims));
        check(digits_forward(&params, &in, out, &dims, arena, arena_size), "digits_forward");
        for (size_t i = 0; i < b; i++)
            correct += predicted(out->logits, i) == y[i];
    }
    return (double)correct / (double)d->n;
}

/* One step's row of --metrics, written when the next step (or the
 * epoch's test accuracy) is known. */
typedef struct {
    int pending;
    long step, epoch;
    double loss, accuracy, scale;
    long long skipped;
} metrics_row;

static void metrics_row_flush(FILE *f, metrics_row *r, const double *test_accuracy)
{
    if (!r->pending)
        return;
    fprintf(f, "%ld,%ld,%.9g,%.6f,", r->step, r->epoch, r->loss, r->accuracy);
    if (test_accuracy)
        fprintf(f, "%.6f", *test_accuracy);
    fprintf(f, ",%g,%lld\n", r->scale, r->skipped);
    r->pending = 0;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--batch=N] [--steps=N] [--checksum] [--timing] [--metrics=FILE.csv]\n"
                    "       [--weights=FILE.safetensors] [--poison=STEP:RANK] DATA.bin OUT.safetensors\n"
                    "       [EPOCHS] [MIN_ACCURACY]\n"
                    "  EPOCHS: 1..10000 (default 10); MIN_ACCURACY: 0..1 (default 0.95);\n"
                    "  --batch: the global batch, 1..4096 (default 64), split over the processes;\n"
                    "  --metrics: one CSV row per step (step, epoch, loss, accuracy, test_accuracy\n"
                    "    at each epoch's last step, loss_scale, skipped_steps); scripts/plot-training.sh\n"
                    "    draws it\n"
                    "  --weights: also the trained parameters alone (digits_save_weights), for\n"
                    "    digits_load_weights or ampc --embed-weights; OUT.safetensors, the whole\n"
                    "    checkpoint, deploys the same way\n",
            argv0);
    exit(EXIT_USAGE);
}

/* A whole number in [lo, hi] from text, or usage(). */
static long number(const char *text, long lo, long hi, const char *argv0)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < lo || v > hi)
        usage(argv0);
    return v;
}

/* FNV-1a over the bytes of every parameter: equal on two processes
 * exactly when their parameters are bit-identical (up to collisions). */
static uint32_t checksum(const digits_train_state *s)
{
    uint32_t h = 2166136261u;
#define HASH(name, numel, fan_in)                                                  \
    {                                                                              \
        const unsigned char *b = (const unsigned char *)s->name;                   \
        for (size_t i = 0; i < (numel) * sizeof *s->name; i++)                     \
            h = (h ^ b[i]) * 16777619u;                                            \
    }
    PARAMS(HASH)
#undef HASH
    return h;
}

int main(int argc, char **argv)
{
    /* Joins the world of processes mpirun started (one without MPI); MPI
     * may take its own arguments out of argv. */
    if (amp_coll_init(&argc, &argv) != AMP_OK) {
        fprintf(stderr, "train: cannot start the collectives (see above)\n");
        return EXIT_ERROR;
    }
    const int rank = amp_coll_rank(), world = amp_coll_world();
    const char *argv0 = argv[0];
    long batch = BATCH, max_steps = -1, poison_step = -1, poison_rank = -1;
    int want_checksum = 0, want_timing = 0;
    const char *metrics_path = NULL, *weights_path = NULL;
    while (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
        const char *a = argv[1];
        if (strncmp(a, "--batch=", 8) == 0)
            batch = number(a + 8, 1, 4096, argv0);
        else if (strncmp(a, "--steps=", 8) == 0)
            max_steps = number(a + 8, 1, 1000000000, argv0);
        else if (strcmp(a, "--checksum") == 0)
            want_checksum = 1;
        else if (strcmp(a, "--timing") == 0)
            want_timing = 1;
        else if (strncmp(a, "--metrics=", 10) == 0 && a[10])
            metrics_path = a + 10;
        else if (strncmp(a, "--weights=", 10) == 0 && a[10])
            weights_path = a + 10;
        else if (strncmp(a, "--poison=", 9) == 0) {
            char step_text[32];
            const char *colon = strchr(a + 9, ':');
            size_t len = colon ? (size_t)(colon - (a + 9)) : 0;
            if (!colon || len == 0 || len >= sizeof step_text)
                usage(argv0);
            memcpy(step_text, a + 9, len);
            step_text[len] = '\0';
            poison_step = number(step_text, 1, 1000000000, argv0);
            poison_rank = number(colon + 1, 0, 1000000, argv0);
        } else
            usage(argv0);
        argv++;
        argc--;
    }
    if (argc < 3 || argc > 5)
        usage(argv0);
    const char *data_path = argv[1], *out_path = argv[2];
    long epochs = 10;
    double min_accuracy = 0.95;
    char *end;
    if (argc > 3)
        epochs = number(argv[3], 1, 10000, argv0);
    if (argc > 4) {
        errno = 0;
        min_accuracy = strtod(argv[4], &end);
        if (errno || *end || end == argv[4] || !(min_accuracy >= 0 && min_accuracy <= 1))
            usage(argv0);
    }
    if (batch < world) {
        fprintf(stderr, "train: --batch=%ld is smaller than the %d processes: some would get no samples\n", batch,
                world);
        return EXIT_USAGE;
    }
    /* Each process's slice of a global batch: the processes' slices are
     * equal, so the mean of their mean gradients is the batch's. */
    const long shard = batch / world;

    dataset train, test;
    read_digits(data_path, &train, &test);

    /* Initial parameters, as PyTorch's default init, from a fixed seed. */
    uint64_t init_rng = 20240601;
    digits_params initial = {0};
#define INIT(name, numel, fan_in)                                         \
    {                                                                     \
        float *p = xmalloc((numel) * sizeof *p);                          \
        float bound = (float)(1.0 / sqrt((double)(fan_in)));              \
        for (size_t i = 0; i < (numel); i++)                              \
            p[i] = uniform(&init_rng, -bound, bound);                     \
        initial.name = p;                                                 \
    }
    PARAMS(INIT)
#undef INIT

    digits_train_state state;
    void *storage = xmalloc(DIGITS_STATE_BYTES);
    check(digits_train_init(&state, storage, DIGITS_STATE_BYTES, &initial), "digits_train_init");
#define FREE(name, numel, fan_in) free((void *)initial.name);
    PARAMS(FREE)
#undef FREE

    const size_t buf_rows = (size_t)(shard > BATCH ? shard : BATCH); /* a slice, or an eval batch */
    float *x = xmalloc(DIGITS_X_NUMEL(buf_rows) * sizeof *x);
    int64_t *y = xmalloc(DIGITS_Y_NUMEL(buf_rows) * sizeof *y);
    digits_outputs out = {
        .logits = xmalloc(DIGITS_LOGITS_NUMEL(buf_rows) * amp_dtype_size(DIGITS_LOGITS_DTYPE)),
        .loss = xmalloc(DIGITS_LOSS_NUMEL(buf_rows) * amp_dtype_size(DIGITS_LOSS_DTYPE)),
    };
    size_t *order = xmalloc(train.n * sizeof *order);
    for (size_t i = 0; i < train.n; i++)
        order[i] = i;
    uint64_t shuffle_rng = 7;

    if (rank == 0) {
        printf("%s: %zu training and %zu test samples, batch %ld", MODEL_NAME, train.n, test.n, batch);
        if (world > 1)
            printf(" (%ld on each of %d processes)", shard, world);
        printf(", %ld epochs, logits in %s, kernels: %s\n", epochs, amp_dtype_name(DIGITS_LOGITS_DTYPE),
               amp_isa_name());
        printf("epoch  mean loss  train acc  test acc  loss scale  skipped steps\n");
    }
    /* the metrics: rank 0's batch slice each step (its loss before the
     * update, its accuracy), the scaler's state after it */
    FILE *metrics = NULL;
    if (metrics_path && rank == 0) {
        metrics = fopen(metrics_path, "w");
        if (!metrics) {
            fprintf(stderr, "train: cannot write %s: %s\n", metrics_path, strerror(errno));
            return EXIT_ERROR;
        }
        fputs("step,epoch,loss,accuracy,test_accuracy,loss_scale,skipped_steps\n", metrics);
    }
    metrics_row row = {0};
    double test_acc = 0, step_seconds = 0;
    long steps = 0;
    for (long epoch = 1; epoch <= epochs && steps != max_steps; epoch++) {
        shuffle(order, train.n, &shuffle_rng);
        /* this process's loss sum and correct count, then the world's */
        double totals[2] = {0, 0};
        size_t seen = 0; /* samples trained on by all the processes */
        for (size_t start = 0; start < train.n && steps != max_steps; start += (size_t)batch) {
            size_t b = train.n - start < (size_t)batch ? train.n - start : (size_t)batch; /* last: partial */
            size_t mine = b / (size_t)world; /* the remainder b % world is dropped */
            if (mine == 0)
                break;
            digits_dims dims = {.B = (int64_t)mine};
            digits_inputs in = {.x = x, .y = y};
            gather(&train, order + start + (size_t)rank * mine, mine, x, y);
            steps++;
            if (steps == poison_step && rank == poison_rank)
                x[0] = INFINITY;
            need_arena(digits_train_arena_bytes(&dims));
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            check(digits_train_step(&state, &in, &out, &dims, arena, arena_size),
                  "digits_train_step");
            clock_gettime(CLOCK_MONOTONIC, &t1);
            step_seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            /* The loss and logits of this batch, before the update. */
            double loss = (double)amp_load_as_f32(DIGITS_LOSS_DTYPE, out.loss, 0);
            size_t correct = 0;
            for (size_t i = 0; i < mine; i++)
                correct += predicted(out.logits, i) == y[i];
            totals[0] += loss * (double)mine;
            totals[1] += (double)correct;
            seen += mine * (size_t)world;
            if (metrics) { /* the row waits: the epoch's last gets its test accuracy */
                metrics_row_flush(metrics, &row, NULL);
                row = (metrics_row){1, steps, epoch, loss, (double)correct / (double)mine, (double)state.scale,
                                    (long long)state.skipped_steps};
            }
        }
        /* the sums over the processes: their mean times the world */
        amp_coll_tensor t = {totals, 2, AMP_F64};
        check(amp_allreduce_mean(&t, 1), "amp_allreduce_mean");
        test_acc = accuracy(&state, &test, x, y, &out);
        if (metrics)
            metrics_row_flush(metrics, &row, &test_acc);
        if (rank == 0) {
            printf("%5ld  %9.4f  %9.4f  %8.4f  %10g  %13lld\n", epoch, totals[0] * world / (double)seen,
                   totals[1] * world / (double)seen, test_acc, (double)state.scale,
                   (long long)state.skipped_steps);
            fflush(stdout);
        }
    }
    if (want_timing && rank == 0 && steps > 0)
        printf("mean step time %.3f ms over %ld steps (batch %ld on each of %d processes)\n",
               1e3 * step_seconds / (double)steps, steps, shard, world);
    if (want_checksum) {
        /* every rank, one line each: the test compares them */
        printf("rank %d of %d: %ld steps, parameter checksum %08x, loss scale %g, skipped steps %lld\n", rank,
               world, steps, (unsigned)checksum(&state), (double)state.scale, (long long)state.skipped_steps);
        fflush(stdout);
    }

    if (metrics && (ferror(metrics) | fclose(metrics))) {
        fprintf(stderr, "train: cannot write %s: %s\n", metrics_path, strerror(errno));
        return EXIT_FILE;
    }
    int status = 0;
    /* one writer: every process holds the same state */
    int rc = rank == 0 ? digits_save(&state, out_path) : AMP_OK;
    digits_params trained;
    digits_train_params(&state, &trained);
    int wrc = rank == 0 && weights_path ? digits_save_weights(&trained, weights_path) : AMP_OK;
    if (rank != 0) {
        status = test_acc < min_accuracy ? EXIT_ACCURACY : 0;
    } else if (rc != AMP_OK || wrc != AMP_OK) {
        fprintf(stderr, "train: cannot write %s: %s\n", rc != AMP_OK ? out_path : weights_path,
                digits_strerror(rc != AMP_OK ? rc : wrc));
        status = EXIT_FILE;
    } else {
        printf("saved %s\n", out_path);
        if (weights_path)
            printf("saved the weights alone in %s\n", weights_path);
        if (metrics)
            printf("metrics in %s\n", metrics_path);
        fflush(stdout);
        if (test_acc < min_accuracy) {
            fprintf(stderr, "train: final test accuracy %.4f is below %.4f\n", test_acc,
                    min_accuracy);
            status = EXIT_ACCURACY;
        } else {
            printf("final test accuracy %.4f >= %.4f\n", test_acc, min_accuracy);
        }
    }
    free(order);
    free(out.logits);
    free(out.loss);
    free(x);
    free(y);
    free(arena);
    free(storage);
    free(train.x);
    free(train.y);
    free(test.x);
    free(test.y);
    amp_coll_finalize();
    return status;
}
