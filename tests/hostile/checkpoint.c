/*
 * tests/hostile/checkpoint.c: a checkpoint is validated before it changes
 * anything.  tests/hostile/run.sh builds it (UBSan, -fno-sanitize-recover)
 * against tests/train/resume.amp compiled for gpu: Adam with amsgrad, a
 * dynamic loss scale (growth_interval 3), accumulate 2, dropout.
 *
 *  - every scalar out of range, written into an otherwise good checkpoint
 *    with a valid checksum (lr or scale NaN, inf, negative; scale 0; step,
 *    skipped_steps, rng_offset negative; micro_step 2^62, -1, 2; grad_live,
 *    last_step_skipped 2 or -1; growth_tracker -1 or 3), gives
 *    AMP_ERR_CHECKPOINT_VALUE and leaves the state byte for byte as it was;
 *  - a flipped bit anywhere in the data gives AMP_ERR_WEIGHTS_CHECKSUM;
 *  - a checkpoint without the checksum (as written before the writer
 *    stored one) still loads;
 *  - after kill -9 during a save, the stale temporary is reused or removed
 *    by the next save: saves never pile up temporaries.
 * Run in an empty directory; prints what failed, exits 0 when all hold.
 */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "resume.h"

static unsigned char storage[RESUME_STATE_BYTES], snapshot[RESUME_STATE_BYTES];
static int failed;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failed = 1;
    }
}

/* A copy of path with tensor `name`'s bytes replaced by value (same size). */
static void write_with(const char *path, const char *out, const char *name, const void *value)
{
    amp_st_file *f;
    amp_st_entry e[64];
    int n;
    if (amp_st_open(path, &f) != AMP_OK || (n = amp_st_count(f)) > 64) {
        check(0, "reading the good checkpoint");
        return;
    }
    for (int i = 0; i < n; i++) {
        const amp_st_tensor *t = amp_st_get(f, i);
        e[i].name = t->name;
        e[i].dtype = t->dtype;
        e[i].ndim = t->ndim;
        memcpy(e[i].shape, t->shape, sizeof e[i].shape);
        e[i].data = strcmp(t->name, name) == 0 ? value : amp_st_data(f, t);
    }
    check(amp_st_write(out, e, n) == AMP_OK, "writing a modified checkpoint");
    amp_st_close(f);
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *b = malloc(1 << 20);
    *len = fp ? fread(b, 1, 1 << 20, fp) : 0;
    if (fp)
        fclose(fp);
    return b;
}

static void write_all(const char *path, const unsigned char *b, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(b, 1, len, fp) != len || fclose(fp) != 0)
        check(0, "writing a file");
}

static int count_temporaries(void)
{
    DIR *d = opendir(".");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp") != NULL;
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    static float zeros[4096];
    resume_params init = {zeros, zeros, zeros, zeros, zeros, zeros};
    resume_train_state s, before;
    char what[200];
    check(resume_train_init(&s, storage, sizeof storage, &init) == AMP_OK, "train_init");
    s.step = 7;
    s.micro_step = 1;
    s.grad_live = 1;
    s.growth_tracker = 2;
    s.rng_seed = 42;
    s.rng_offset = 3;
    check(resume_save(&s, "good.safetensors") == AMP_OK, "saving");
    check(resume_load(&s, "good.safetensors") == AMP_OK, "loading the good checkpoint");
    memcpy(snapshot, storage, sizeof storage);
    before = s;

    static const struct {
        const char *name;
        double f64;
        float f32;
        int64_t i64;
        int32_t i32;
    } bad[] = {
        {"optimizer.lr", NAN, 0, 0, 0},         {"optimizer.lr", INFINITY, 0, 0, 0},
        {"optimizer.lr", -0.5, 0, 0, 0},        {"scaler.scale", 0, NAN, 0, 0},
        {"scaler.scale", 0, 0.0f, 0, 0},        {"scaler.scale", 0, -2.0f, 0, 0},
        {"scaler.scale", 0, INFINITY, 0, 0},    {"optimizer.step", 0, 0, -5, 0},
        {"train.skipped_steps", 0, 0, -1, 0},   {"train.micro_step", 0, 0, (int64_t)1 << 62, 0},
        {"train.micro_step", 0, 0, -1, 0},      {"train.micro_step", 0, 0, 2, 0},
        {"train.rng_offset", 0, 0, -1, 0},      {"train.grad_live", 0, 0, 0, 2},
        {"train.grad_live", 0, 0, 0, -1},       {"train.last_step_skipped", 0, 0, 0, 2},
        {"scaler.growth_tracker", 0, 0, 0, -1}, {"scaler.growth_tracker", 0, 0, 0, 3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* each scalar in its checkpoint dtype: lr f64, scale f32, the
         * counters i64, the flags and the tracker i32 */
        const char *name = bad[i].name;
        const void *value = strcmp(name, "optimizer.lr") == 0   ? (const void *)&bad[i].f64
                            : strcmp(name, "scaler.scale") == 0 ? (const void *)&bad[i].f32
                            : strcmp(name, "optimizer.step") == 0 || strcmp(name, "train.skipped_steps") == 0 ||
                                      strcmp(name, "train.micro_step") == 0 || strcmp(name, "train.rng_offset") == 0
                                ? (const void *)&bad[i].i64
                                : (const void *)&bad[i].i32;
        int rc;
        write_with("good.safetensors", "bad.safetensors", bad[i].name, value);
        rc = resume_load(&s, "bad.safetensors");
        snprintf(what, sizeof what, "%s = %g/%g/%lld/%d: load gives AMP_ERR_CHECKPOINT_VALUE (got %d: %s)", bad[i].name,
                 bad[i].f64, (double)bad[i].f32, (long long)bad[i].i64, bad[i].i32, rc, resume_strerror(rc));
        check(rc == AMP_ERR_CHECKPOINT_VALUE, what);
        snprintf(what, sizeof what, "%s out of range: the state is unchanged", bad[i].name);
        check(memcmp(storage, snapshot, sizeof storage) == 0 && memcmp(&s, &before, sizeof s) == 0, what);
    }

    /* a flipped bit in the data region: every 797th bit */
    size_t len;
    unsigned char *b = read_all("good.safetensors", &len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | b[i];
    int flips = 0, caught = 0;
    for (size_t bit = 8 * (8 + (size_t)n); bit < 8 * len; bit += 797) {
        b[bit / 8] ^= (unsigned char)(1u << bit % 8);
        write_all("flipped.safetensors", b, len);
        b[bit / 8] ^= (unsigned char)(1u << bit % 8);
        flips++;
        caught += resume_load(&s, "flipped.safetensors") == AMP_ERR_WEIGHTS_CHECKSUM;
    }
    snprintf(what, sizeof what, "a flipped data bit gives AMP_ERR_WEIGHTS_CHECKSUM (%d of %d)", caught, flips);
    check(flips > 100 && caught == flips, what);
    check(memcmp(storage, snapshot, sizeof storage) == 0 && memcmp(&s, &before, sizeof s) == 0,
          "a corrupt checkpoint leaves the state unchanged");

    /* without the checksum (the key blanked out): loads, as older checkpoints do */
    char *key = memmem(b + 8, (size_t)n, ",\"crc32c\":\"", 11);
    check(key != NULL, "the writer stores a crc32c");
    if (key) {
        memset(key, ' ', 20);
        write_all("old.safetensors", b, len);
        check(resume_load(&s, "old.safetensors") == AMP_OK, "a checkpoint without a checksum loads");
        check(memcmp(storage, snapshot, sizeof storage) == 0 && s.step == before.step, "and gives the same state");
    }
    free(b);

    /* kill -9 in the middle of saves: the temporaries do not pile up */
    for (int k = 0; k < 6; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                resume_save(&s, "killed.safetensors");
        }
        usleep(2000 + 1500 * k);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    snprintf(what, sizeof what, "after 6 killed saves at most one temporary is left (%d)", count_temporaries());
    check(count_temporaries() <= 1, what);
    check(resume_save(&s, "killed.safetensors") == AMP_OK, "a save after the kills");
    snprintf(what, sizeof what, "the next save leaves no temporary (%d)", count_temporaries());
    check(count_temporaries() == 0, what);
    check(resume_load(&s, "killed.safetensors") == AMP_OK, "and its checkpoint loads");

    if (!failed)
        printf("checkpoints: %d bad scalars refused, %d bit flips caught, old format loads, killed saves clean up\n",
               (int)(sizeof bad / sizeof bad[0]), flips);
    return failed;
}
