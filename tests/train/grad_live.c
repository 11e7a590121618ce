/*
 * grad_live.c - what s->grad holds across _backward and _update
 * (docs/training.md): the update consumes the gradients (grad_live 0)
 * instead of zeroing them, and the next backward stores its own.  With
 * examples/digits/mlp.amp compiled -t cpu --prefix=digits (or, built with
 * -DDIGITS_CNN, examples/digits/cnn.amp, whose convolutions write their
 * weight gradients straight into s->grad):
 *  1. backward(b1) then backward(b2) leaves g(b1) + g(b2) (f32 adds);
 *  2. after an update, backward(b2) leaves g(b2) (what adding it to
 *     zeroed gradients leaves), not the stale gradients plus g(b2);
 *  3. an update with no backward before it steps exactly as one on
 *     zeroed gradients;
 *  4. a checkpoint saved between an update and the next backward resumes
 *     bit-identically.
 * Exits non-zero, saying which, on the first difference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

#define B 16
#ifdef DIGITS_CNN
#define NPARAM 6
#define PARAMS(p) {p conv1_weight, p conv1_bias, p conv2_weight, p conv2_bias, p fc_weight, p fc_bias}
static const size_t numel[NPARAM] = {16 * 9, 16, 32 * 16 * 9, 32, 10 * 128, 10};
#else
#define NPARAM 4
#define PARAMS(p) {p fc1_weight, p fc1_bias, p fc2_weight, p fc2_bias}
static const size_t numel[NPARAM] = {128 * 64, 128, 10 * 128, 10};
#endif
#define NUMEL_MAX (128 * 64)

static float *param_of(digits_train_state *s, int i)
{
    float *p[NPARAM] = PARAMS(s->);
    return p[i];
}

static float *grad_of(digits_train_state *s, int i)
{
    float *p[NPARAM] = PARAMS(s->grad.);
    return p[i];
}

static float x[2][B * 64];
static int64_t y[2][B];
static amp_bf16 logits[B * 10];
static float loss;
static digits_params init;
static float initial[NPARAM][NUMEL_MAX];
static unsigned char *arena;
static size_t arena_bytes;

static void fail(const char *what)
{
    printf("FAIL %s\n", what);
    exit(1);
}

static void check(int rc, const char *what)
{
    if (rc != AMP_OK) {
        printf("FAIL %s: %s\n", what, amp_strerror(rc));
        exit(1);
    }
}

static void fresh(digits_train_state *s, void **storage)
{
    *storage = malloc(DIGITS_STATE_BYTES);
    if (!*storage)
        fail("out of memory");
    check(digits_train_init(s, *storage, DIGITS_STATE_BYTES, &init), "train_init");
}

static void backward(digits_train_state *s, int batch)
{
    const digits_inputs in = {x[batch], y[batch]};
    digits_outputs out = {logits, &loss};
    const digits_dims dims = {B};
    check(digits_backward(s, &in, &out, &dims, arena, arena_bytes), "backward");
    if (s->grad_live != 1)
        fail("grad_live is 1 after a backward");
}

/* A second state with a's contents (the storage has one layout). */
static void clone(digits_train_state *dst, void **storage, const digits_train_state *a, const void *a_storage)
{
    fresh(dst, storage);
    memcpy(*storage, a_storage, DIGITS_STATE_BYTES);
    dst->lr = a->lr;
    dst->scale = a->scale;
    dst->growth_tracker = a->growth_tracker;
    dst->last_step_skipped = a->last_step_skipped;
    dst->step = a->step;
    dst->skipped_steps = a->skipped_steps;
    dst->micro_step = a->micro_step;
    dst->grad_live = a->grad_live;
}

/* Every parameter (grads 0) or gradient (grads 1) of a and b bit for bit. */
static int same(digits_train_state *a, digits_train_state *b, int grads)
{
    for (int i = 0; i < NPARAM; i++)
        if (memcmp(grads ? grad_of(a, i) : param_of(a, i), grads ? grad_of(b, i) : param_of(b, i),
                   numel[i] * sizeof(float)) != 0)
            return 0;
    return 1;
}

int main(void)
{
    digits_train_state s1, s2, s12, s;
    void *m1, *m2, *m12, *m;
    uint32_t r = 12345;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < B * 64; i++) {
            r = r * 1103515245u + 12345u;
            x[k][i] = (float)(r >> 16 & 0xffff) / 65536.0f;
        }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < B; i++)
            y[k][i] = (i * 7 + k * 3) % 10;
    for (int i = 0; i < NPARAM; i++)
        for (size_t e = 0; e < numel[i]; e++)
            initial[i][e] = (float)((int)(e * (37 + 16 * (size_t)i) % 101) - 50) / 400.0f;
    {
        const float **p[NPARAM] = PARAMS(&init.);
        for (int i = 0; i < NPARAM; i++)
            *p[i] = initial[i];
    }
    {
        const digits_dims dims = {B};
        arena_bytes = digits_train_arena_bytes(&dims);
        arena = malloc(arena_bytes);
        if (!arena)
            fail("out of memory");
    }

    /* 1. two backwards add: g(b1) + g(b2) */
    fresh(&s1, &m1);
    fresh(&s2, &m2);
    fresh(&s12, &m12);
    if (s1.grad_live != 0)
        fail("grad_live is 0 after _train_init");
    backward(&s1, 0);
    backward(&s2, 1);
    backward(&s12, 0);
    backward(&s12, 1);
    for (int i = 0; i < NPARAM; i++)
        for (size_t e = 0; e < numel[i]; e++)
            if (grad_of(&s12, i)[e] != grad_of(&s1, i)[e] + grad_of(&s2, i)[e])
                fail("two backwards leave the sum of their gradients");

    /* 2. after an update the next backward stores: s1 updated, then b2,
     * against a copy whose gradients were zeroed and are added to */
    check(digits_update(&s1), "update");
    if (s1.grad_live != 0)
        fail("grad_live is 0 after an update");
    clone(&s, &m, &s1, m1);
    s.grad_live = 1;
    for (int i = 0; i < NPARAM; i++)
        memset(grad_of(&s, i), 0, numel[i] * sizeof(float));
    backward(&s1, 1);
    backward(&s, 1);
    for (int i = 0; i < NPARAM; i++)
        for (size_t e = 0; e < numel[i]; e++)
            if (grad_of(&s1, i)[e] != grad_of(&s, i)[e]) /* == : a stored -0 is added to +0 as +0 */
                fail("the backward after an update leaves its own gradients alone");
    free(m);

    /* 3. an update with no backward = one on zeroed gradients */
    check(digits_update(&s1), "update");
    clone(&s, &m, &s1, m1);
    s.grad_live = 1;
    for (int i = 0; i < NPARAM; i++)
        memset(grad_of(&s, i), 0, numel[i] * sizeof(float));
    check(digits_update(&s1), "update with no backward");
    check(digits_update(&s), "update on zeroed gradients");
    if (!same(&s1, &s, 0))
        fail("an update with no backward steps as one on zero gradients");

    /* 4. a checkpoint between an update and the next backward */
    check(digits_save(&s1, "grad_live.safetensors"), "save");
    s.grad_live = 1; /* as in the middle of an accumulation: the load must say 0 */
    check(digits_load(&s, "grad_live.safetensors"), "load");
    if (s.grad_live != 0)
        fail("the checkpoint keeps grad_live");
    backward(&s1, 0);
    backward(&s, 0);
    check(digits_update(&s1), "update");
    check(digits_update(&s), "update");
    if (!same(&s1, &s, 0) || !same(&s1, &s, 1))
        fail("a checkpoint saved after an update resumes bit-identically");
    remove("grad_live.safetensors");

    printf("grad_live: two backwards add, the first after an update stores, an update alone steps on zeros, "
           "a checkpoint after an update resumes bit-identically\n");
    free(m1);
    free(m2);
    free(m12);
    free(m);
    free(arena);
    return 0;
}
