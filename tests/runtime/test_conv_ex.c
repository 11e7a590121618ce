/*
 * test_conv_ex.c - amp_conv_ex_T (amprt/spatial.h): a convolution with
 * weights packed once (conv_packed_bytes_T, conv_pack_weights_T) and the
 * eval-mode batch_norm, residual add and relu fused into its epilogue.
 *
 * Its specification is a sequence of separate kernels of the same kernel
 * set:
 *     conv_T(d, x, w_T, bias, y);
 *     batch_norm_T(batch, out_channels, out_plane, y, ...)  if bn_mean
 *     add_T(n, y, residual, y)                              if residual
 *     relu_T(n, y, y)                                       if relu
 *     clamp_T(n, y, clamp_lo, clamp_hi, y)                  if clamp
 * (w_T: w, or the packed source weights rounded to T as cast_f32_T does),
 * so every check here is memcmp against that sequence, run through the
 * same table: every kernel set this CPU supports (amp_kernel_table_for),
 * f64 (the reference everywhere), f32, bf16 and f16, and the public
 * amp_* functions under whichever set AMPRT_ISA chose.  Covered: 1 x 1
 * direct, 3 x 3 stride 1 pad 1, 3 x 3 stride 2, 7 x 7 stride 2 pad 3,
 * groups 2, depthwise (frame/conv_depthwise.c's direct path: 3 x 3 at
 * stride 1 and 2, a channel multiplier of 2 on an odd width, 5 x 5,
 * 1-d), a threaded resnet-like layer, more output channels
 * than one row block (the shared im2col path) with K over one k block;
 * batch 1 and 3; with and without bias; post NULL, all off, bn, bn + relu,
 * bn + residual + relu, bn without weight and bias, bn with weight only +
 * residual, bn with bias only, residual + relu, relu alone, bf16 and f64
 * batch_norm parameters (f64: the AVX-512 batch_norm's reference path),
 * bn + relu6, bn + residual + clamp, relu + clamp;
 * a 1-d convolution;
 * unpacked weights, weights packed from T and from f32; 1 and 2 threads;
 * NaN (bf16/f16 signalling ones too), +-inf and -0 in x, the residual and
 * the batch_norm parameters.  Also: packed_bytes depends only on groups,
 * channels and kernel, and the reference's is the weight tensor's size.
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

#define FAST_TEST_SEED 0x7c0fbd3a91e25b47ull
#include "fast_test_util.h"
#include "packed_test_util.h"

typedef struct {
    const char *what;
    int nspatial;
    int64_t batch, cin, cout, groups;
    int64_t in[3], kernel[3], stride[3], padding[3];
    int big; /* skipped for the (slow) reference-only paths */
} ccase;

static const ccase cases[] = {
    { "1x1 direct", 2, 3, 16, 24, 1, { 7, 9 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, 0 },
    { "3x3 stride 1 pad 1", 2, 1, 8, 12, 1, { 10, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 0 },
    { "3x3 stride 1 pad 1, batch 3", 2, 3, 5, 7, 1, { 9, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 0 },
    { "3x3 stride 2", 2, 3, 6, 10, 1, { 13, 12 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, 0 },
    { "3x3 stride 2 no pad", 2, 1, 4, 5, 1, { 9, 10 }, { 3, 3 }, { 2, 2 }, { 0, 0 }, 0 },
    { "7x7 stride 2 pad 3", 2, 1, 3, 16, 1, { 23, 21 }, { 7, 7 }, { 2, 2 }, { 3, 3 }, 0 },
    { "groups 2", 2, 3, 8, 12, 2, { 9, 8 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 0 },
    { "depthwise", 2, 1, 12, 12, 12, { 11, 10 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 0 },
    { "depthwise, batch 3", 2, 3, 6, 6, 6, { 8, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, 0 },
    { "depthwise x2, stride 2, odd width", 2, 2, 5, 10, 5, { 9, 13 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, 0 },
    { "depthwise 5x5", 2, 1, 8, 8, 8, { 12, 11 }, { 5, 5 }, { 1, 1 }, { 2, 2 }, 0 },
    { "1-d depthwise", 1, 2, 6, 6, 6, { 37 }, { 3 }, { 1 }, { 1 }, 0 },
    { "1-d", 1, 3, 5, 9, 1, { 29 }, { 5 }, { 2 }, { 2 }, 0 },
    { "resnet-like, threaded", 2, 2, 32, 48, 1, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 1 },
    { "row blocks split, K over a block", 2, 1, 40, 400, 1, { 5, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 1 },
};

static void fill_desc(const ccase *c, amp_conv_desc *d)
{
    memset(d, 0, sizeof *d);
    d->nspatial = c->nspatial;
    d->batch = c->batch;
    d->in_channels = c->cin;
    d->out_channels = c->cout;
    d->groups = c->groups;
    for (int i = 0; i < c->nspatial; i++) {
        d->in_size[i] = c->in[i];
        d->kernel[i] = c->kernel[i];
        d->stride[i] = c->stride[i];
        d->padding[i] = c->padding[i];
        d->dilation[i] = 1;
        d->out_size[i] = (c->in[i] + 2 * c->padding[i] - (c->kernel[i] - 1) - 1) / c->stride[i] + 1;
        assert_true(d->out_size[i] >= 1);
    }
}

static int64_t prod(const int64_t *v, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

typedef struct {
    int64_t nx, nw, ny, out_plane;
} sizes;

static sizes sizes_of(const amp_conv_desc *d)
{
    sizes s;
    s.out_plane = prod(d->out_size, d->nspatial);
    s.nx = d->batch * d->in_channels * prod(d->in_size, d->nspatial);
    s.nw = d->out_channels * (d->in_channels / d->groups) * prod(d->kernel, d->nspatial);
    s.ny = d->batch * d->out_channels * s.out_plane;
    return s;
}

/* Batch_norm parameters over C channels, in dtype pt: mean in [-1, 1],
 * var in [0.05, 1.05], weight in [-1, 1], bias in [-1, 1]. */
typedef struct {
    void *mean, *var, *weight, *bias;
} bn_params;

static bn_params random_bn(amp_dtype pt, int64_t C)
{
    bn_params b;
    b.mean = random_buf(pt, (size_t)C);
    b.var = random_buf(pt, (size_t)C);
    b.weight = random_buf(pt, (size_t)C);
    b.bias = random_buf(pt, (size_t)C);
    for (int64_t c = 0; c < C; c++)
        amp_store_from_f32(pt, b.var, (size_t)c, fabsf(amp_load_as_f32(pt, b.var, (size_t)c)) + 0.05f);
    return b;
}

static void free_bn(bn_params *b)
{
    free(b->mean);
    free(b->var);
    free(b->weight);
    free(b->bias);
}

/* The post-op subsets tried. */
enum { BN = 1, BN_W = 2, BN_B = 4, RES = 8, RELU = 16, BN_BF16 = 32, NONE_STRUCT = 64, BN_F64 = 128, RELU6 = 256,
       CLAMP = 512 };
static const int variants[] = {
    0,                            /* post NULL */
    NONE_STRUCT,                  /* a post with nothing on */
    BN | BN_W | BN_B,             /* bn only */
    BN | BN_W | BN_B | RELU,      /* bn + relu */
    BN | BN_W | BN_B | RES | RELU, /* bn + residual + relu (resnet's block end) */
    BN | RELU,                    /* bn without weight and bias */
    BN | BN_W | RES,              /* bn with weight only, + residual */
    BN | BN_B,                    /* bn with bias only */
    RES | RELU,                   /* no bn */
    RELU,                         /* relu alone */
    BN | BN_W | BN_B | BN_BF16 | RELU, /* bf16 batch_norm parameters */
    BN | BN_W | BN_B | BN_F64 | RES,   /* f64 ones (the reference's batch_norm) */
    BN | BN_W | BN_B | RELU6,          /* bn + relu6 (mobilenet's block) */
    BN | BN_W | BN_B | RES | CLAMP,    /* bn + residual + a clamp that cuts both sides */
    RELU | CLAMP,                      /* relu, then clamp (hardtanh) */
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

/* Batch_norm parameters in f32, bf16 and f64 (the f64 ones hold the f32
 * ones' values). */
typedef struct {
    bn_params f32, bf16, f64;
} bn_set;

static bn_set random_bn_set(int64_t C)
{
    bn_set b;
    b.f32 = random_bn(AMP_F32, C);
    b.bf16 = random_bn(AMP_BF16, C);
    b.f64 = random_bn(AMP_F64, C);
    return b;
}

/* f64 parameters equal to the f32 ones (after those were edited). */
static void sync_f64(bn_set *b, int64_t C)
{
    for (int64_t c = 0; c < C; c++) {
        ((double *)b->f64.mean)[c] = ((float *)b->f32.mean)[c];
        ((double *)b->f64.var)[c] = ((float *)b->f32.var)[c];
        ((double *)b->f64.weight)[c] = ((float *)b->f32.weight)[c];
        ((double *)b->f64.bias)[c] = ((float *)b->f32.bias)[c];
    }
}

static void free_bn_set(bn_set *b)
{
    free_bn(&b->f32);
    free_bn(&b->bf16);
    free_bn(&b->f64);
}

static amp_conv_post make_post(int v, const bn_set *bs, const void *residual)
{
    amp_conv_post p;
    const bn_params *b = v & BN_BF16 ? &bs->bf16 : v & BN_F64 ? &bs->f64 : &bs->f32;
    memset(&p, 0, sizeof p);
    p.bn_dtype = v & BN_BF16 ? AMP_BF16 : v & BN_F64 ? AMP_F64 : AMP_F32;
    p.bn_eps = 1e-5;
    if (v & BN) {
        p.bn_mean = b->mean;
        p.bn_var = b->var;
        p.bn_weight = v & BN_W ? b->weight : NULL;
        p.bn_bias = v & BN_B ? b->bias : NULL;
    }
    p.residual = v & RES ? residual : NULL;
    p.relu = (v & RELU) != 0;
    p.clamp = (v & (RELU6 | CLAMP)) != 0;
    p.clamp_lo = v & RELU6 ? 0.0 : -0.375; /* operands are in [-1, 1]: both bounds cut */
    p.clamp_hi = v & RELU6 ? 6.0 : 0.3;
    return p;
}

/* The specification: conv, then the separate kernels, all of table k. */
static void expected(const amp_kernel_table *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *wt,
                     const void *bias, const amp_conv_post *p, void *y)
{
    const sizes s = sizes_of(d);
    KCALL(k, t, conv, d, x, wt, bias, y);
    if (p == NULL)
        return;
    if (p->bn_mean != NULL)
        KCALL(k, t, batch_norm, d->batch, d->out_channels, s.out_plane, y, p->bn_dtype, p->bn_mean, p->bn_var,
               p->bn_weight, p->bn_bias, p->bn_eps, y);
    if (p->residual != NULL)
        KCALL(k, t, add, (size_t)s.ny, y, p->residual, y);
    if (p->relu)
        KCALL(k, t, relu, (size_t)s.ny, y, y);
    if (p->clamp)
        KCALL(k, t, clamp, (size_t)s.ny, y, p->clamp_lo, p->clamp_hi, y);
}

static void check_equal(const amp_kernel_table *k, amp_dtype t, const char *what, int variant, const char *wmode,
                        int bias, int threads, const void *got, const void *want, int64_t ny)
{
    const size_t es = amp_dtype_size(t);
    if (memcmp(got, want, (size_t)ny * es) == 0)
        return;
    for (int64_t i = 0; i < ny; i++)
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0)
            fail_msg("%s %s %s: post variant 0x%x, weights %s, bias %d, %d threads: element %lld: got %.9g, "
                     "separate kernels %.9g",
                     k->isa, amp_dtype_name(t), what, variant, wmode, bias, threads, (long long)i,
                     (double)amp_load_as_f32(t, got, (size_t)i), (double)amp_load_as_f32(t, want, (size_t)i));
}

/* Whether (k, t) runs the reference kernels, whose conv_ex is the
 * composition itself (and whose conv is slow): fewer variants there. */
static int reference_path(const amp_kernel_table *k, amp_dtype t)
{
    return t == AMP_F64 || strcmp(k->isa, "ref") == 0 || (k == &public_table && strcmp(amp_isa_name(), "ref") == 0);
}

/* Every variant of case c for table k and dtype t (a few on the
 * reference path). */
static void run_case(const amp_kernel_table *k, amp_dtype t, const ccase *c)
{
    const int slow = reference_path(k, t);
    amp_conv_desc d;
    sizes s;
    const size_t es = amp_dtype_size(t);
    void *x, *w, *wfrom32, *bias, *residual, *y, *want, *packed_t, *packed_32;
    float *w32;
    bn_set bs;
    size_t pbytes;

    fill_desc(c, &d);
    s = sizes_of(&d);
    x = random_buf(t, (size_t)s.nx);
    w = random_buf(t, (size_t)s.nw);
    w32 = random_buf(AMP_F32, (size_t)s.nw); /* mostly between the bf16/f16 values */
    wfrom32 = cast_from_f32(k, t, w32, (size_t)s.nw);
    bias = random_buf(t, (size_t)d.out_channels);
    residual = random_buf(t, (size_t)s.ny);
    bs = random_bn_set(d.out_channels);
    y = malloc((size_t)s.ny * es);
    want = malloc((size_t)s.ny * es);
    assert_non_null(y);
    assert_non_null(want);

    pbytes = KCALLR(k, t, conv_packed_bytes, &d);
    packed_t = alloc_packed(pbytes);
    packed_32 = alloc_packed(pbytes);
    amp_set_threads(2);
    KCALL(k, t, conv_pack_weights, &d, t, w, packed_t);
    KCALL(k, t, conv_pack_weights, &d, AMP_F32, w32, packed_32);

    for (int wm = 0; wm < 3; wm++) {
        /* 0: w unpacked; 1: packed from T; 2: packed from f32 */
        static const char *const wnames[] = { "unpacked", "packed from T", "packed from f32" };
        const void *wt = wm == 2 ? wfrom32 : w;
        const void *pk = wm == 0 ? NULL : wm == 1 ? packed_t : packed_32;
        for (int vi = 0; vi < NVARIANTS; vi++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const int v = variants[vi];
                amp_conv_post p = make_post(v, &bs, residual);
                const amp_conv_post *pp = v == 0 ? NULL : &p;
                const void *bb = with_bias ? bias : NULL;
                /* without bias: only a few variants (the bias is in epi) */
                if (!with_bias && v != 0 && v != (BN | BN_W | BN_B | RES | RELU) && v != (BN | RELU))
                    continue;
                if (slow && v != 0 && v != (BN | BN_W | BN_B | RES | RELU) && v != (BN | RELU) &&
                    v != (BN | BN_W | BN_B | BN_BF16 | RELU))
                    continue;
                amp_set_threads(1);
                expected(k, t, &d, x, wt, bb, pp, want);
                for (int th = 2; th >= 1; th--) {
                    /* 1 thread: the full variants only (enough to see the split changes nothing) */
                    if (th == 1 && ((v != (BN | BN_W | BN_B | RES | RELU) && v != 0) || slow))
                        continue;
                    amp_set_threads(th);
                    memset(y, 0xa5, (size_t)s.ny * es);
                    KCALL(k, t, conv_ex, &d, x, wm == 0 ? w : NULL, pk, bb, pp, y);
                    check_equal(k, t, c->what, v, wnames[wm], with_bias, th, y, want, s.ny);
                }
                if (v == 0 || v == (BN | BN_W | BN_B | RES | RELU) || v == (BN | RELU)) {
                    /* post->raw: the convolution's own result too (a
                     * training step's batch_norm gradient reads it); with
                     * no post-op (v 0) the post carries raw alone */
                    amp_conv_post pr = p;
                    void *raw = malloc((size_t)s.ny * es), *want_raw = malloc((size_t)s.ny * es);
                    assert_true(raw && want_raw);
                    if (v == 0)
                        memset(&pr, 0, sizeof pr);
                    pr.raw = raw;
                    expected(k, t, &d, x, wt, bb, NULL, want_raw);
                    amp_set_threads(2);
                    memset(y, 0xa5, (size_t)s.ny * es);
                    memset(raw, 0x5a, (size_t)s.ny * es);
                    KCALL(k, t, conv_ex, &d, x, wm == 0 ? w : NULL, pk, bb, &pr, y);
                    check_equal(k, t, c->what, v, wnames[wm], with_bias, 2, y, want, s.ny);
                    check_equal(k, t, "post->raw", v, wnames[wm], with_bias, 2, raw, want_raw, s.ny);
                    free(raw);
                    free(want_raw);
                }
            }
    }
    amp_set_threads(0);
    free(x);
    free(w);
    free(w32);
    free(wfrom32);
    free(bias);
    free(residual);
    free_bn_set(&bs);
    free(y);
    free(want);
    free(packed_t);
    free(packed_32);
}

/* NaN, +-inf, -0 through every step: x holds them (so some conv outputs
 * are NaN or inf), the residual holds them (bf16/f16: raw bit patterns,
 * signalling NaNs with payloads too), batch_norm has a -0 weight (so
 * outputs -0 that relu must keep), an inf weight, var 0. */
static void run_special(const amp_kernel_table *k, amp_dtype t)
{
    static const ccase c = { "special values", 2, 2, 3, 6, 1, { 7, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, 0 };
    static const float sp[] = { NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, 3.4e38f };
    /* signalling NaNs (+-), a quiet one with a payload, a subnormal, -0, -inf */
    static const uint16_t raw_bf16[] = { 0x7f81, 0xffa0, 0x7fc1, 0x0001, 0x8000, 0xff80 };
    static const uint16_t raw_f16[] = { 0x7c01, 0xfd00, 0x7e01, 0x0001, 0x8000, 0xfc00 };
    static const int vs[] = { BN | BN_W | BN_B | RES | RELU, BN | BN_W | RELU, BN | BN_W | RES | RELU, RES | RELU,
                              RES, RELU, BN | BN_W, BN | BN_W | BN_F64 | RES | RELU, BN | BN_W | BN_F64,
                              BN | BN_W | RELU6, BN | BN_W | RES | CLAMP };
    amp_conv_desc d;
    sizes s;
    const size_t es = amp_dtype_size(t);
    void *x, *w, *residual, *y, *want, *packed;
    bn_set bs;
    fill_desc(&c, &d);
    s = sizes_of(&d);
    x = random_buf(t, (size_t)s.nx);
    w = random_buf(t, (size_t)s.nw);
    residual = random_buf(t, (size_t)s.ny);
    for (int64_t i = 0; i < s.nx; i += 17)
        amp_store_from_f32(t, x, (size_t)i, sp[(i / 17) % 8]);
    for (int64_t i = 0; i < s.ny; i += 5) {
        if (es == 2 && i % 3 == 0) /* a raw pattern: NaN payloads, signalling ones, subnormals */
            ((uint16_t *)residual)[i] = t == AMP_BF16 ? raw_bf16[(i / 15) % 6] : raw_f16[(i / 15) % 6];
        else
            amp_store_from_f32(t, residual, (size_t)i, sp[(i / 5) % 8]);
    }
    /* exact zeros from the conv: channel 5's weights all 0, bias NULL, so
     * -0 and +0 come out of bn and meet -0 residuals */
    for (int64_t i = 5 * (s.nw / 6); i < s.nw; i++)
        amp_store_from_f32(t, w, (size_t)i, 0.0f);
    bs = random_bn_set(d.out_channels);
    ((float *)bs.f32.weight)[0] = -0.0f;
    ((float *)bs.f32.weight)[1] = INFINITY;
    ((float *)bs.f32.var)[2] = 0.0f;
    ((float *)bs.f32.mean)[3] = NAN;
    ((float *)bs.f32.weight)[4] = -NAN;
    ((float *)bs.f32.weight)[5] = -1.0f;
    sync_f64(&bs, d.out_channels);
    y = malloc((size_t)s.ny * es);
    want = malloc((size_t)s.ny * es);
    packed = alloc_packed(KCALLR(k, t, conv_packed_bytes, &d));
    assert_non_null(y);
    assert_non_null(want);
    KCALL(k, t, conv_pack_weights, &d, t, w, packed);
    for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++)
        for (int pk = 0; pk < 2; pk++) {
            amp_conv_post p = make_post(vs[vi], &bs, residual);
            expected(k, t, &d, x, w, NULL, &p, want);
            memset(y, 0x5a, (size_t)s.ny * es);
            KCALL(k, t, conv_ex, &d, x, w, pk ? packed : NULL, NULL, &p, y);
            check_equal(k, t, c.what, vs[vi], pk ? "packed" : "unpacked", 0, amp_get_threads(), y, want, s.ny);
        }
    free(x);
    free(w);
    free(residual);
    free_bn_set(&bs);
    free(y);
    free(want);
    free(packed);
}

/* packed_bytes depends on groups, channels and kernel only; the
 * reference's is the weight tensor's size in T. */
static void run_packed_bytes(const amp_kernel_table *k, amp_dtype t)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        amp_conv_desc d, e;
        size_t a, b;
        fill_desc(&cases[i], &d);
        e = d;
        e.batch = d.batch + 5;
        for (int j = 0; j < d.nspatial; j++) {
            e.in_size[j] = d.in_size[j] + 3;
            e.padding[j] = d.padding[j] + 1;
            e.stride[j] = 1;
            e.out_size[j] = e.in_size[j] + 2 * e.padding[j] - e.kernel[j] + 1;
        }
        a = KCALLR(k, t, conv_packed_bytes, &d);
        b = KCALLR(k, t, conv_packed_bytes, &e);
        assert_true(a == b);
        if (k == &amp_ref_kernel_table || t == AMP_F64)
            assert_true(a == (size_t)sizes_of(&d).nw * amp_dtype_size(t));
    }
}

static const amp_dtype all_types[] = { AMP_F64, AMP_F32, AMP_BF16, AMP_F16 };

static void run_table(const amp_kernel_table *k)
{
    for (size_t ti = 0; ti < 4; ti++) {
        const amp_dtype t = all_types[ti];
        run_packed_bytes(k, t);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            /* the reference paths (ref set; f64 everywhere) are slow and
             * the same code in every set: big cases once, on the ref set */
            if (cases[i].big && t == AMP_F64)
                continue;
            if (cases[i].big && reference_path(k, t) && t != AMP_F32)
                continue;
            run_case(k, t, &cases[i]);
        }
        run_special(k, t);
    }
}

PACKED_TEST_MAIN(run_table)
