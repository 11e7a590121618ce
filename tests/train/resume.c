/*
 * resume.c - a checkpoint saved and loaded continues training bit-exactly.
 *
 * Trains the model 12 micro-batches (6 updates) from a fixed start; saves
 * a checkpoint after micro-batch 5 (mid-accumulation: a gradient is
 * pending) and again after 8; then, in a fresh state loaded from each
 * checkpoint, replays the remaining micro-batches.  Every parameter,
 * gradient, optimizer buffer and scalar must equal the uninterrupted run's
 * bit for bit; the model's dropout draws from the state's generator and
 * its batch_norm updates running statistics, so the seed, the counter and
 * the buffers must travel in the checkpoint too.  The masks matter: the
 * same seed gives the same run, another seed another one.  Also: loading a
 * file that does not match fails and leaves the state untouched; a
 * checkpoint write never leaves a temporary behind.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resume.h"

enum { B = 8, STEPS = 12 };

static uint64_t rng = 0x243f6a8885a308d3u;
static double uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 0x2545f4914f6cdd1du) >> 11) * 0x1p-53;
}

static float x[STEPS][B * 64];
static int64_t y[STEPS][B];
static amp_f16 logits[B * 10]; /* compiled for gpu: logits in f16 */
static float loss;

static int run(resume_train_state *s, int from, int to, void *arena, size_t bytes)
{
    resume_dims dims = {B};
    for (int k = from; k < to; k++) {
        resume_inputs in = {x[k], y[k]};
        resume_outputs out = {logits, &loss};
        int rc = resume_train_step(s, &in, &out, &dims, arena, bytes);
        if (rc != AMP_OK) {
            fprintf(stderr, "resume: step %d: %s\n", k, resume_strerror(rc));
            return 1;
        }
    }
    return 0;
}

/* Everything the state holds, as bytes: its storage and its scalars. */
static int same_state(const resume_train_state *a, const unsigned char *sa, const resume_train_state *b,
                      const unsigned char *sb)
{
    return memcmp(sa, sb, RESUME_STATE_BYTES) == 0 && a->lr == b->lr && a->scale == b->scale &&
           a->growth_tracker == b->growth_tracker && a->step == b->step && a->skipped_steps == b->skipped_steps &&
           a->last_step_skipped == b->last_step_skipped && a->micro_step == b->micro_step &&
           a->rng_seed == b->rng_seed && a->rng_offset == b->rng_offset;
}

static int no_temporaries(void)
{
    DIR *d = opendir(".");
    struct dirent *e;
    int ok = 1;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp"))
            ok = 0;
    if (d)
        closedir(d);
    return ok;
}

int main(void)
{
    static float w1[32 * 64], b1[32], w2[10 * 32], b2[10], rmean[32], rvar[32];
    for (int i = 0; i < 32 * 64; i++)
        w1[i] = (float)((uniform() * 2 - 1) / 8);
    for (int i = 0; i < 32; i++)
        b1[i] = (float)((uniform() * 2 - 1) / 8);
    for (int i = 0; i < 10 * 32; i++)
        w2[i] = (float)((uniform() * 2 - 1) / 6);
    for (int i = 0; i < 10; i++)
        b2[i] = (float)((uniform() * 2 - 1) / 6);
    for (int i = 0; i < 32; i++)
        rvar[i] = 1; /* BatchNorm's initial running statistics: mean 0, variance 1 */
    for (int k = 0; k < STEPS; k++)
        for (int i = 0; i < B * 64; i++)
            x[k][i] = (float)uniform();
    for (int k = 0; k < STEPS; k++)
        for (int i = 0; i < B; i++)
            y[k][i] = (int64_t)(uniform() * 10);
    resume_params init = {.fc1_weight = w1, .fc1_bias = b1, .fc2_weight = w2, .fc2_bias = b2,
                          .bn_running_mean = rmean, .bn_running_var = rvar};
    resume_dims dims = {B};
    size_t bytes = resume_train_arena_bytes(&dims);
    void *arena = malloc(bytes);
    static unsigned char store_a[RESUME_STATE_BYTES], store_b[RESUME_STATE_BYTES], store_c[RESUME_STATE_BYTES];
    resume_train_state a, b, c;
    if (!arena || resume_train_init(&a, store_a, sizeof store_a, &init) != AMP_OK)
        return 1;
    a.rng_seed = 0x243f6a88; /* the caller's seed */

    /* the uninterrupted run, saving twice on the way */
    if (run(&a, 0, 5, arena, bytes) || resume_save(&a, "at5.safetensors") != AMP_OK)
        return 1;
    if (run(&a, 5, 8, arena, bytes) || resume_save(&a, "at8.safetensors") != AMP_OK)
        return 1;
    if (run(&a, 8, STEPS, arena, bytes))
        return 1;
    int failed = 0;
    if (a.step == 0 || a.scale == 1024.0f) {
        fprintf(stderr, "resume: the run did not exercise the optimizer and the scaler (step %lld, scale %g)\n",
                (long long)a.step, (double)a.scale);
        failed = 1;
    }

    for (int at = 5; at <= 8; at += 3) {
        char path[32];
        snprintf(path, sizeof path, "at%d.safetensors", at);
        if (resume_train_init(&b, store_b, sizeof store_b, &init) != AMP_OK || resume_load(&b, path) != AMP_OK)
            return 1;
        if (b.rng_seed != a.rng_seed || b.rng_offset != at) {
            fprintf(stderr, "resume: the checkpoint at %d holds seed %lld, counter %lld\n", at, (long long)b.rng_seed,
                    (long long)b.rng_offset);
            failed = 1;
        }
        if (run(&b, at, STEPS, arena, bytes))
            return 1;
        if (!same_state(&a, store_a, &b, store_b)) {
            fprintf(stderr, "resume: resumed from micro-batch %d, the state differs from the uninterrupted run's\n", at);
            failed = 1;
        } else {
            printf("resumed from micro-batch %d: bit-identical after %d more (step %lld, scale %g, skipped %lld)\n", at,
                   STEPS - at, (long long)b.step, (double)b.scale, (long long)b.skipped_steps);
        }
    }

    /* the masks are the seed's: the same seed replays the run, another
     * seed gives other parameters */
    for (int seed = 0; seed < 2; seed++) {
        if (resume_train_init(&c, store_c, sizeof store_c, &init) != AMP_OK)
            return 1;
        c.rng_seed = seed ? a.rng_seed + 1 : a.rng_seed;
        if (run(&c, 0, STEPS, arena, bytes))
            return 1;
        /* the storage alone: the parameters, buffers and optimizer state */
        int same = seed ? memcmp(store_a, store_c, RESUME_STATE_BYTES) == 0 : same_state(&a, store_a, &c, store_c);
        if (same != !seed) {
            fprintf(stderr, "resume: a run with %s seed %s the first run\n", seed ? "another" : "the same",
                    seed ? "equals" : "differs from");
            failed = 1;
        }
    }
    if (a.rng_offset != STEPS) {
        fprintf(stderr, "resume: the counter is %lld after %d micro-batches\n", (long long)a.rng_offset, (int)STEPS);
        failed = 1;
    }

    /* a file from another point leaves... a truncated file changes nothing */
    FILE *f = fopen("at8.safetensors", "rb");
    FILE *g = fopen("truncated.safetensors", "wb");
    if (!f || !g)
        return 1;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fwrite(buf, 1, n / 2, g);
    fclose(f);
    fclose(g);
    if (resume_train_init(&c, store_c, sizeof store_c, &init) != AMP_OK)
        return 1;
    memcpy(store_b, store_c, sizeof store_c);
    int rc = resume_load(&c, "truncated.safetensors");
    if (rc == AMP_OK || memcmp(store_b, store_c, sizeof store_c) != 0 || c.step != 0) {
        fprintf(stderr, "resume: a truncated checkpoint was accepted or changed the state\n");
        failed = 1;
    } else {
        printf("a truncated checkpoint is refused (%s); the state is untouched\n", resume_strerror(rc));
    }
    if (!no_temporaries()) {
        fprintf(stderr, "resume: a temporary file was left behind\n");
        failed = 1;
    }
    free(arena);
    return failed;
}
