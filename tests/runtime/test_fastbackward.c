/*
 * test_fastbackward.c - the optimized gradient and optimizer kernels
 * (relu_backward, clamp_backward, hardtanh_backward, batch_norm_backward
 * in both forms, sgd, 2-d max_pool_backward) of
 * every kernel set this CPU supports, against the reference kernels, bit
 * for bit: the optimized kernels perform the same f32 operations in the
 * same order with the same one rounding (batch_norm's dweight and dbias
 * sums too: each channel summed sequentially in the reference's order),
 * so any difference is a bug.  Inputs mix ordinary values with the cases
 * a vector rewrite gets wrong: NaN (with payloads, signalling ones too),
 * +-inf, +-0, subnormals, values that round up on narrowing; lengths are
 * odd and span the vector tails and the pool's chunking, and every case
 * runs on 1 and 2 threads (the same bits).  Paths that go to the
 * reference (f64 parameters, batch_norm's [N, C] training form) are
 * checked too.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa_under_test.h"

#include "../../runtime/src/amprt_internal.h"

#define BITEXACT_TEST_SEED 0x5851f42d4c957f2dull
#include "bitexact_test_util.h"

static void *random_buf(amp_dtype t, size_t n) { return special_buf(t, n, 1); }

static void *copy_of(const void *p, size_t bytes)
{
    void *q = malloc(bytes ? bytes : 1);
    assert_non_null(q);
    memcpy(q, p, bytes);
    return q;
}


static const amp_kernel_table *ref(void) { return &amp_ref_kernel_table; }

/* Bit for bit; where nan_any, a NaN matches any NaN: when both operands of
 * an operation are NaN, which payload the result carries depends on the
 * operand order the compiler picked for the reference (C leaves it open),
 * so only the NaN-ness of such elements is the kernels' contract. */
static void expect_same(const void *got, const void *want, size_t n, amp_dtype t, const char *isa, const char *what,
                        int nan_any)
{
    const size_t es = amp_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        const char *g = (const char *)got + i * es, *w = (const char *)want + i * es;
        double gv = amp_load_as_f32(t, got, i), wv = amp_load_as_f32(t, want, i);
        if (memcmp(g, w, es) == 0 || (nan_any && isnan(gv) && isnan(wv)))
            continue;
        fail_msg("%s %s %s (n = %zu) differs at [%zu]: %.9g, reference %.9g", isa, what, amp_dtype_name(t), n, i, gv,
                 wv);
    }
}

/* ---- relu_backward ------------------------------------------------------------ */

static void run_relu_backward(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    const size_t bytes = n * amp_dtype_size(t);
    void *x = random_buf(t, n), *y = random_buf(t, n), *dy = random_buf(t, n);
    void *dx = malloc(bytes + 1), *want = malloc(bytes + 1);
    assert_true(dx && want);
    KCALL(ref(), t, relu_backward, n, x, y, dy, want);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memset(dx, 0x5a, bytes);
        KCALL(k, t, relu_backward, n, x, y, dy, dx);
        expect_same(dx, want, n, t, k->isa, "relu_backward", 0);
        { /* in place: dx is dy */
            void *io = copy_of(dy, bytes);
            KCALL(k, t, relu_backward, n, x, y, io, io);
            expect_same(io, want, n, t, k->isa, "relu_backward in place", 0);
            free(io);
        }
        /* no x: the reference's x = 0 everywhere */
        KCALL(k, t, relu_backward, n, NULL, y, dy, dx);
        KCALL(ref(), t, relu_backward, n, NULL, y, dy, want);
        expect_same(dx, want, n, t, k->isa, "relu_backward without x", 0);
        KCALL(ref(), t, relu_backward, n, x, y, dy, want);
    }
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(want);
}

/* add_relu_backward: the reference's add then relu_backward (y as the
 * relu's input and output), bit for bit, from the set and from the
 * reference's own; special values in a, b (NaNs on either side, infs
 * summing to NaN, -0) and y (-0, NaN, negatives).  Where a and b are both
 * NaN, any NaN (add's own contract: the set's add keeps a's). */
static void run_add_relu_backward(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    const size_t bytes = n * amp_dtype_size(t);
    void *y = random_buf(t, n), *a = random_buf(t, n), *b = random_buf(t, n);
    void *dx = malloc(bytes + 1), *sum = malloc(bytes + 1), *want = malloc(bytes + 1);
    assert_true(dx && sum && want);
    for (size_t i = 0; i < n; i += 7) {
        switch (i / 7 % 6) {
        case 0: amp_store_from_f32(t, a, i, NAN); break;
        case 1: amp_store_from_f32(t, b, i, -NAN); break;
        case 2: amp_store_from_f32(t, a, i, INFINITY), amp_store_from_f32(t, b, i, -INFINITY); break;
        case 3: amp_store_from_f32(t, a, i, -0.0f), amp_store_from_f32(t, b, i, -0.0f); break;
        case 4: amp_store_from_f32(t, y, i, -0.0f); break;
        default: amp_store_from_f32(t, y, i, NAN); break;
        }
    }
    KCALL(ref(), t, add, n, a, b, sum);
    KCALL(ref(), t, relu_backward, n, y, y, sum, want);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memset(dx, 0x5a, bytes);
        KCALL(k, t, add_relu_backward, n, y, a, b, dx);
        expect_same(dx, want, n, t, k->isa, "add_relu_backward", 1);
    }
    memset(dx, 0x5a, bytes);
    KCALL(ref(), t, add_relu_backward, n, y, a, b, dx);
    expect_same(dx, want, n, t, "ref", "add_relu_backward", 1);
    free(y);
    free(a);
    free(b);
    free(dx);
    free(sum);
    free(want);
}

/* clamp_backward and hardtanh_backward on special x and dy, bounds as
 * test_fasteltwise.c's clamp (NaN, reversed, infinite, signed zero); in
 * place (dx is dy) and without x (the reference's x = 0) too. */
static void run_clamp_backward(const amp_kernel_table *k, amp_dtype t, size_t n)
{
    static const float bounds[][2] = { { 0, 6 }, { -1.5f, 2.25f }, { 6, 0 }, { NAN, 6 }, { 0, NAN },
                                       { -INFINITY, INFINITY }, { -0.0f, 0.0f } };
    const size_t bytes = n * amp_dtype_size(t);
    void *x = random_buf(t, n), *dy = random_buf(t, n), *dx = malloc(bytes + 1), *want = malloc(bytes + 1);
    assert_true(dx && want);
    for (size_t i = 0; i < n; i += 5) /* x on the bounds */
        amp_store_from_f32(t, x, i, i % 2 ? 6.0f : 0.0f);
    /* long arrays (the pool's chunks) with ReLU6's bounds only */
    for (size_t bi = 0; bi < (n > 4096 ? 1 : sizeof bounds / sizeof bounds[0]); bi++) {
        const double lo = bounds[bi][0], hi = bounds[bi][1];
        for (int th = 1; th <= 2; th++) {
            amp_set_threads(th);
#define CHECK_BW(op)                                                                              \
    do {                                                                                          \
        void *io = copy_of(dy, bytes);                                                            \
        KCALL(ref(), t, op, n, x, NULL, dy, lo, hi, want);                                        \
        memset(dx, 0x5a, bytes);                                                                  \
        KCALL(k, t, op, n, x, NULL, dy, lo, hi, dx);                                              \
        expect_same(dx, want, n, t, k->isa, #op, 0);                                              \
        KCALL(k, t, op, n, x, NULL, io, lo, hi, io);                                              \
        expect_same(io, want, n, t, k->isa, #op " in place", 0);                                  \
        KCALL(ref(), t, op, n, NULL, NULL, dy, lo, hi, want);                                     \
        KCALL(k, t, op, n, NULL, NULL, dy, lo, hi, dx);                                           \
        expect_same(dx, want, n, t, k->isa, #op " without x", 0);                                 \
        free(io);                                                                                 \
    } while (0)
            CHECK_BW(clamp_backward);
            CHECK_BW(hardtanh_backward);
#undef CHECK_BW
        }
    }
    free(x);
    free(dy);
    free(dx);
    free(want);
}

/* ---- batch_norm_backward ---------------------------------------------------------- */

typedef struct {
    int64_t N, C, HxW;
    amp_dtype pt;
    int affine, grads, training;
    /* x and dy without special values: with one in 16 special, every
     * channel's sums of a long row are NaN or inf (which match any
     * NaN/inf), so only finite data checks their order; 2: finite, and
     * channel 1's dy all -0 (its sums +0, as they start from +0) */
    int finite;
} bncase;

static const bncase bn_cases[] = {
    { 2, 5, 49, AMP_F32, 1, 1, 0, 0 },     /* resnet's last planes, one partial channel block */
    { 3, 64, 3136, AMP_F32, 1, 1, 0, 0 },  /* its first: several blocks on the pool */
    { 8, 33, 7, AMP_F32, 1, 1, 0, 0 },     /* a one-channel block at the end */
    { 2, 20, 300, AMP_F32, 1, 1, 0, 0 },   /* rows longer than the kernel's span of 256, a 44 tail */
    { 2, 20, 300, AMP_F32, 1, 1, 0, 1 },   /* finite data: dweight and dbias checked too */
    { 3, 64, 3136, AMP_F32, 1, 1, 0, 1 },
    /* tasks of 3 channels (12000 elements each), the last of 1; of 1
     * channel (40000 elements: the stem's size) */
    { 4, 10, 3000, AMP_F32, 1, 1, 0, 1 },
    { 2, 5, 20000, AMP_F32, 1, 1, 0, 1 },
    { 8, 33, 7, AMP_F32, 1, 1, 0, 1 },
    { 5, 19, 1, AMP_F32, 1, 1, 0, 1 },
    { 1, 7, 17, AMP_F32, 0, 1, 0, 0 },     /* no weight */
    { 5, 19, 1, AMP_F32, 1, 1, 0, 0 },     /* HxW 1: [N, C] */
    { 3, 17, 2, AMP_F32, 1, 1, 0, 0 },     /* HxW 2 */
    { 2, 16, 9, AMP_F32, 1, 0, 0, 0 },     /* no dweight, dbias */
    { 2, 21, 10, AMP_BF16, 1, 1, 0, 0 },   /* parameters in bf16 */
    { 2, 6, 11, AMP_F16, 1, 1, 0, 0 },     /* and in f16 */
    { 1, 3, 20, AMP_F64, 1, 1, 0, 0 },     /* f64 parameters: the reference's path */
    /* training (batch statistics) */
    { 2, 5, 13, AMP_F32, 1, 1, 1, 0 },     /* special values: NaN-ness */
    { 2, 5, 13, AMP_F32, 1, 1, 1, 1 },     /* rows shorter than 16: tails only */
    { 2, 20, 300, AMP_F32, 1, 1, 1, 1 },   /* a 12 tail: both halves of 16 */
    { 8, 6, 3136, AMP_F32, 1, 1, 1, 1 },   /* pooled, 2 channels a task */
    { 16, 40, 250, AMP_F32, 1, 1, 1, 1 },  /* pooled, 9 channels a task */
    { 1, 7, 17, AMP_F32, 0, 1, 1, 1 },     /* no weight */
    { 2, 16, 9, AMP_F32, 1, 0, 1, 1 },     /* no dweight, dbias */
    { 2, 21, 10, AMP_BF16, 1, 1, 1, 1 },   /* parameters in bf16 */
    { 2, 6, 11, AMP_F16, 1, 1, 1, 1 },     /* and in f16 */
    { 1, 3, 20, AMP_F64, 1, 1, 1, 1 },     /* f64 parameters: the reference's path */
    { 5, 19, 1, AMP_F32, 1, 1, 1, 1 },     /* [N, C]: the reference's path */
    { 3, 5, 20, AMP_F32, 1, 1, 1, 2 },     /* a channel of -0 gradients */
    { 0, 5, 13, AMP_F32, 1, 1, 0, 0 },     /* no images: zero sums */
    { 3, 5, 20, AMP_F32, 1, 1, 0, 2 },     /* a channel of -0 gradients */
    { 6, 5, 1, AMP_F32, 1, 1, 0, 2 },      /* the same in [N, C] */
};

static void run_batch_norm_backward(const amp_kernel_table *k, amp_dtype t, const bncase *c)
{
    const size_t n = (size_t)(c->N * c->C * c->HxW), bytes = n * amp_dtype_size(t);
    const size_t C = (size_t)c->C, pbytes = C * amp_dtype_size(c->pt);
    void *x = random_buf(t, n), *dy = random_buf(t, n), *dx = malloc(bytes + 1), *want = malloc(bytes + 1);
    void *mean = random_buf(c->pt, C), *var = malloc(pbytes + 1);
    void *weight = c->affine ? random_buf(c->pt, C) : NULL;
    void *dw = malloc(pbytes + 1), *db = malloc(pbytes + 1), *dw_want = malloc(pbytes + 1), *db_want = malloc(pbytes + 1);
    char what[256];
    assert_true(dx && want && var && dw && db && dw_want && db_want);
    for (size_t i = 0; c->finite && i < n; i++) {
        amp_store_from_f32(t, x, i, (float)((double)(next() >> 11) * 0x1p-53 * 8 - 4));
        amp_store_from_f32(t, dy, i, (float)((double)(next() >> 11) * 0x1p-53 * 8 - 4));
    }
    for (int64_t im = 0; c->finite == 2 && im < c->N; im++)
        for (int64_t s = 0; s < c->HxW; s++)
            amp_store_from_f32(t, dy, (size_t)((im * c->C + 1) * c->HxW + s), -0.0f);
    for (size_t ch = 0; ch < C; ch++) /* a variance: >= 0, 0 too, and once NaN */
        amp_store_from_f32(c->pt, var, ch, ch % 7 == 0 ? 0.0f : ch == 5 ? NAN : (float)(next() % 1000) * 0.01f);
    snprintf(what, sizeof what, "batch_norm_backward [%lld, %lld, %lld] params %s%s", (long long)c->N,
             (long long)c->C, (long long)c->HxW, amp_dtype_name(c->pt), c->training ? " training" : "");
    KCALL(ref(), t, batch_norm_backward, c->N, c->C, c->HxW, x, c->pt, mean, var, weight, c->training, 1e-5, dy, want,
          c->grads ? dw_want : NULL, c->grads ? db_want : NULL);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memset(dx, 0x5a, bytes);
        memset(dw, 0x5a, pbytes);
        memset(db, 0x5a, pbytes);
        KCALL(k, t, batch_norm_backward, c->N, c->C, c->HxW, x, c->pt, mean, var, weight, c->training, 1e-5, dy, dx,
              c->grads ? dw : NULL, c->grads ? db : NULL);
        expect_same(dx, want, n, t, k->isa, what, 1);
        if (c->grads) {
            expect_same(dw, dw_want, C, c->pt, k->isa, what, 1);
            expect_same(db, db_want, C, c->pt, k->isa, what, 1);
        }
        { /* in place: dx is dy */
            void *io = copy_of(dy, bytes);
            KCALL(k, t, batch_norm_backward, c->N, c->C, c->HxW, x, c->pt, mean, var, weight, c->training, 1e-5, io, io,
                  c->grads ? dw : NULL, c->grads ? db : NULL);
            expect_same(io, want, n, t, k->isa, what, 1);
            if (c->grads) {
                expect_same(dw, dw_want, C, c->pt, k->isa, what, 1);
                expect_same(db, db_want, C, c->pt, k->isa, what, 1);
            }
            free(io);
        }
    }
    free(x);
    free(dy);
    free(dx);
    free(want);
    free(mean);
    free(var);
    free(weight);
    free(dw);
    free(db);
    free(dw_want);
    free(db_want);
}

/* ---- sgd ---------------------------------------------------------------------------- */

static const amp_sgd_hparams sgd_cases[] = {
    { 0.01, 0.9, 0.0, 0.0, 0, 0 },   /* the resnet bench's */
    { 0.1, 0.0, 0.0, 0.0, 0, 0 },    /* plain */
    { 0.05, 0.9, 0.1, 1e-4, 0, 0 },  /* dampening, weight decay */
    { 0.05, 0.8, 0.0, 5e-4, 1, 0 },  /* nesterov */
    { 0.03, 0.7, 0.2, 1e-3, 1, 1 },  /* and maximize */
    { 0.2, 0.0, 0.0, 1e-2, 0, 1 },   /* maximize, decay, no momentum */
};

static void run_sgd(const amp_kernel_table *k, amp_dtype t, const amp_sgd_hparams *h, size_t n)
{
    const size_t bytes = n * amp_dtype_size(t);
    void *p0 = random_buf(t, n), *g = random_buf(t, n), *b0 = random_buf(t, n);
    static const int64_t steps[] = { 0, 3 };
    char what[256];
    for (size_t si = 0; si < 2; si++)
        for (int32_t found_inf = 0; found_inf <= 1; found_inf++) {
            void *pw = copy_of(p0, bytes), *bw = copy_of(b0, bytes);
            snprintf(what, sizeof what, "sgd (lr %g m %g damp %g wd %g nesterov %d maximize %d) step %lld inf %d",
                     h->lr, h->momentum, h->dampening, h->weight_decay, h->nesterov, h->maximize,
                     (long long)steps[si], (int)found_inf);
            KCALL(ref(), t, sgd, n, pw, g, h->momentum != 0 ? bw : NULL, h, steps[si], found_inf);
            for (int th = 1; th <= 2; th++) {
                void *p = copy_of(p0, bytes), *b = copy_of(b0, bytes);
                amp_set_threads(th);
                KCALL(k, t, sgd, n, p, g, h->momentum != 0 ? b : NULL, h, steps[si], found_inf);
                expect_same(p, pw, n, t, k->isa, what, 1);
                expect_same(b, bw, n, t, k->isa, what, 1);
                free(p);
                free(b);
            }
            free(pw);
            free(bw);
        }
    free(p0);
    free(g);
    free(b0);
}

/* ---- max_pool_backward ------------------------------------------------------------ */

typedef struct {
    int nspatial;
    int64_t planes, in[3], k[3], s[3], p[3], dil;
    int all_neg_inf; /* plane 0 all -inf: every window keeps its first element */
} pcase;

static const pcase pool_cases[] = {
    { 2, 3, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, 1, 1 },        /* resnet's stem pool */
    { 2, 64, { 112, 112 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, 1, 0 },   /* its size: many tasks */
    { 2, 4, { 8, 8 }, { 2, 2 }, { 2, 2 }, { 0, 0 }, 1, 0 },        /* lenet's */
    { 2, 5, { 13, 37 }, { 3, 2 }, { 1, 3 }, { 1, 1 }, 1, 1 },      /* odd sizes, stride 3 */
    { 2, 2, { 6, 40 }, { 4, 5 }, { 2, 1 }, { 2, 2 }, 1, 0 },       /* stride 1: overlapping sums */
    { 2, 3, { 5, 5 }, { 5, 5 }, { 1, 1 }, { 2, 2 }, 1, 1 },        /* windows as big as the plane */
    { 2, 2, { 3, 70 }, { 3, 3 }, { 1, 1 }, { 0, 0 }, 1, 0 },       /* rows over several vectors */
    { 2, 3, { 10, 45 }, { 3, 3 }, { 2, 2 }, { 0, 1 }, 1, 0 },      /* stride 2, odd padding parity */
    { 2, 2, { 17, 53 }, { 5, 6 }, { 3, 4 }, { 2, 3 }, 1, 0 },      /* stride 4: the pull's residues */
    { 2, 2, { 9, 40 }, { 2, 2 }, { 1, 17 }, { 0, 1 }, 1, 0 },      /* stride 17: the previous kernel */
    { 2, 2, { 11, 11 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, 2, 0 },      /* dilation: the previous kernel */
    { 1, 3, { 29 }, { 3 }, { 2 }, { 1 }, 1, 0 },                   /* 1-d: the previous kernel */
    { 3, 2, { 4, 5, 6 }, { 2, 2, 2 }, { 2, 2, 2 }, { 0, 1, 1 }, 1, 0 }, /* 3-d: the previous kernel */
};

static void run_max_pool_backward(const amp_kernel_table *k, amp_dtype t, const pcase *c)
{
    amp_pool_desc d;
    size_t nx = (size_t)c->planes, ny = (size_t)c->planes, in_plane = 1;
    void *x, *dy, *dx, *want;
    char what[96];
    memset(&d, 0, sizeof d);
    d.nspatial = c->nspatial;
    d.planes = c->planes;
    for (int i = 0; i < c->nspatial; i++) {
        d.in_size[i] = c->in[i];
        d.kernel[i] = c->k[i];
        d.stride[i] = c->s[i];
        d.padding[i] = c->p[i];
        d.dilation[i] = c->dil;
        d.out_size[i] = (c->in[i] + 2 * c->p[i] - c->dil * (c->k[i] - 1) - 1) / c->s[i] + 1;
        nx *= (size_t)c->in[i];
        ny *= (size_t)d.out_size[i];
        in_plane *= (size_t)c->in[i];
    }
    x = random_buf(t, nx);
    dy = random_buf(t, ny);
    dx = malloc(nx * amp_dtype_size(t) + 1);
    want = malloc(nx * amp_dtype_size(t) + 1);
    assert_true(dx && want);
    if (c->all_neg_inf)
        for (size_t i = 0; i < in_plane; i++)
            amp_store_from_f32(t, x, i, -INFINITY);
    snprintf(what, sizeof what, "max_pool_backward %d-d [%lld x %lld]", c->nspatial, (long long)c->planes,
             (long long)in_plane);
    KCALL(ref(), t, max_pool_backward, &d, x, dy, want);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memset(dx, 0x5a, nx * amp_dtype_size(t));
        KCALL(k, t, max_pool_backward, &d, x, dy, dx);
        expect_same(dx, want, nx, t, k->isa, what, 1);
    }
    /* max_pool_relu_backward: the reference's two kernels in turn (x as
     * the relu's output: its negative elements are masked as relu_backward
     * masks them), from the set and from the reference */
    KCALL(ref(), t, relu_backward, nx, x, x, want, want);
    snprintf(what, sizeof what, "max_pool_relu_backward %d-d [%lld x %lld]", c->nspatial, (long long)c->planes,
             (long long)in_plane);
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        memset(dx, 0x5a, nx * amp_dtype_size(t));
        KCALL(k, t, max_pool_relu_backward, &d, x, dy, dx);
        expect_same(dx, want, nx, t, k->isa, what, 1);
    }
    memset(dx, 0x5a, nx * amp_dtype_size(t));
    KCALL(ref(), t, max_pool_relu_backward, &d, x, dy, dx);
    expect_same(dx, want, nx, t, "ref", what, 1);
    free(x);
    free(dy);
    free(dx);
    free(want);
}

/* ---- adaptive_avg_pool_backward ------------------------------------------------------------ */

/* The shapes of bitexact_test_util.h against the reference; dy with NaN,
 * inf, -0 (0 + -0 is +0) and values whose share rounds. */
static void run_adaptive_avg_pool_backward(const amp_kernel_table *k, amp_dtype t, const apcase *c)
{
    size_t nx, ny;
    ap_sizes(c, &nx, &ny);
    void *dy = random_buf(t, ny + 1), *dx = malloc(nx * amp_dtype_size(t) + 1), *want = malloc(nx * amp_dtype_size(t) + 1);
    assert_true(dx && want);
    for (size_t i = 0; i < ny; i += 5)
        amp_store_from_f32(t, dy, i, i % 4 == 0 ? NAN : i % 4 == 1 ? -INFINITY : i % 4 == 2 ? -0.0f : 3.0f);
    KCALL(ref(), t, adaptive_avg_pool_backward, c->nspatial, c->planes, c->in, c->out, dy, want);
    memset(dx, 0x5a, nx * amp_dtype_size(t));
    KCALL(k, t, adaptive_avg_pool_backward, c->nspatial, c->planes, c->in, c->out, dy, dx);
    expect_same(dx, want, nx, t, k->isa, "adaptive_avg_pool_backward", 0);
    free(dy);
    free(dx);
    free(want);
}

/* ---- driver ------------------------------------------------------------------------------ */

static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
static const size_t lengths[] = { 0, 1, 15, 16, 17, 31, 32, 33, 1000, 65537, 300001 };

static const amp_kernel_table *table_or_skip(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    if (k == NULL)
        skip();
    assert_string_equal(k->isa, isa);
    return k;
}

static void test_relu_backward(void **state)
{
    const amp_kernel_table *k = table_or_skip(state);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            run_relu_backward(k, types[ti], lengths[li]), run_add_relu_backward(k, types[ti], lengths[li]);
    amp_set_threads(0);
}

static void test_clamp_backward(void **state)
{
    const amp_kernel_table *k = table_or_skip(state);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            run_clamp_backward(k, types[ti], lengths[li]);
    if (strcmp(k->isa, "ref") != 0) /* every optimized set's own (x86/avx2_clamp.c, ..., arm/neon_clamp.c) */
        assert_true(k->clamp_backward_bf16 != ref()->clamp_backward_bf16 &&
                    k->hardtanh_backward_f32 != ref()->hardtanh_backward_f32);
    amp_set_threads(0);
}

static void test_batch_norm_backward(void **state)
{
    const amp_kernel_table *k = table_or_skip(state);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t i = 0; i < sizeof bn_cases / sizeof bn_cases[0]; i++)
            run_batch_norm_backward(k, types[ti], &bn_cases[i]);
    amp_set_threads(0);
}

static void test_sgd(void **state)
{
    const amp_kernel_table *k = table_or_skip(state);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t c = 0; c < sizeof sgd_cases / sizeof sgd_cases[0]; c++)
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
                run_sgd(k, types[ti], &sgd_cases[c], lengths[li]);
    amp_set_threads(0);
}

static void test_adaptive_avg_pool_backward(void **state)
{
    const amp_kernel_table *k = table_or_skip(state);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t i = 0; i < sizeof ap_cases / sizeof ap_cases[0]; i++)
            run_adaptive_avg_pool_backward(k, types[ti], &ap_cases[i]);
}

static void test_max_pool_backward(void **state)
{
    const amp_kernel_table *k = table_or_skip(state);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
            run_max_pool_backward(k, types[ti], &pool_cases[i]);
    amp_set_threads(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ISA_UNIT_TESTS(test_relu_backward),
        ISA_UNIT_TESTS(test_clamp_backward),
        ISA_UNIT_TESTS(test_batch_norm_backward),
        ISA_UNIT_TESTS(test_sgd),
        ISA_UNIT_TESTS(test_max_pool_backward),
        ISA_UNIT_TESTS(test_adaptive_avg_pool_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
