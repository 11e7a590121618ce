/*
 * test_fastdepthwise.c - the direct depthwise and grouped convolution
 * (frame/conv_depthwise.c: few channels per group, on the set's dw_taps) of every kernel set this CPU supports, for f32, bf16 and f16,
 * on 1 and 2 threads: conv must take the direct path (its counter,
 * amp_fast_conv_depthwise_taken, goes up by one per call) and give the
 * reference's result bit for bit (finite operands: the same products and
 * sums in the same order; a tap in the padding adds a zero, which leaves
 * the sum as it is); so must the public amp_conv_<T> under whichever set
 * AMPRT_ISA chose.  A stride-1 depthwise conv_transpose (a convolution's
 * input gradient) runs as a convolution of the flipped weights and must
 * take the direct path too, and equal the reference conv of the flipped
 * weights bit for bit.  Grouped convolutions of up to 8 input and 32
 * output channels per group take the path too for f32 storage (each
 * output's taps summed channel by channel, as the reference does), and
 * must not for bf16 and f16; nor must a dense one (one group).  conv_ex's post-ops and packed weights on
 * the direct path are test_conv_ex.c's depthwise cases.
 *
 * The shapes: 3 x 3 at stride 1 and 2 on odd widths, 5 x 5, 1 x 1,
 * dilation with uneven kernel and padding, stride 3 without padding, a
 * channel multiplier of 2, 1-d (with stride and dilation too), windows
 * entirely in the padding, planes cut into several bands (and into more
 * for two threads: a shape over the pool's 4 Mflop), a 7 x 7 plane in
 * one flat run, rows cut into column segments (1-d 9000 long, 2-d 5000
 * wide), a dilation so wide that even one output's copy would not fit
 * (scalar mode), grouped shapes, batch > 1, with and without bias.
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

#define FAST_TEST_SEED 0x6a09e667f3bcc909ull
#include "fast_test_util.h"

typedef struct {
    const char *what;
    int nspatial;
    int64_t batch, channels, multiplier;
    int64_t cin_g; /* input channels per group (channels / cin_g groups); 1: depthwise */
    int64_t in[2], kernel[2], stride[2], padding[2], dilation[2];
    int bias;
} dcase;

static const dcase cases[] = {
    { "3x3 pad 1, odd width", 2, 2, 5, 1, 1, { 9, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "3x3 stride 2, odd width", 2, 1, 7, 1, 1, { 15, 17 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1 },
    { "5x5 stride 2 pad 2", 2, 2, 4, 1, 1, { 14, 11 }, { 5, 5 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, 0 },
    { "dilation, uneven", 2, 1, 3, 1, 1, { 12, 10 }, { 3, 2 }, { 1, 2 }, { 2, 1 }, { 2, 3 }, 1 },
    { "stride 3, no padding", 2, 1, 4, 1, 1, { 10, 11 }, { 3, 3 }, { 3, 3 }, { 0, 0 }, { 1, 1 }, 0 },
    { "multiplier 2", 2, 2, 3, 2, 1, { 8, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "1x1", 2, 1, 4, 1, 1, { 5, 6 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 1 },
    { "1-d", 1, 3, 6, 1, 1, { 41 }, { 5 }, { 1 }, { 2 }, { 1 }, 1 },
    { "1-d stride 2 dilation 2", 1, 2, 5, 1, 1, { 40 }, { 3 }, { 2 }, { 3 }, { 2 }, 0 },
    { "windows all in padding", 2, 1, 3, 1, 1, { 2, 2 }, { 3, 3 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, 1 },
    { "7x7 plane, batch 4", 2, 4, 16, 1, 1, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "several bands", 2, 1, 2, 1, 1, { 150, 90 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "mobilenet-like stride 2", 2, 1, 96, 1, 1, { 56, 56 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0 },
    /* over the 4 Mflop a convolution needs to run on the pool: two threads */
    { "threaded, bands split", 2, 1, 32, 1, 1, { 96, 96 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    /* rows longer than a task's sums: column segments */
    { "1-d, 9000 long", 1, 1, 3, 1, 1, { 9000 }, { 3 }, { 1 }, { 1 }, { 1 }, 1 },
    { "2-d, 5000 wide, stride 2", 2, 1, 2, 1, 1, { 3, 10001 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1 },
    /* grouped (f32 only): input channels per group 2 to 8, outputs 3 to 32 */
    { "groups of 4 in, 4 out", 2, 2, 16, 4, 4, { 9, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "groups of 2 in, 3 out, stride 2", 2, 1, 8, 3, 2, { 11, 12 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0 },
    { "resnext-like 32 groups of 8", 2, 1, 256, 8, 8, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "groups of 8 in, 32 out, 7 x 7 plane", 2, 1, 16, 32, 8, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "1-d groups of 3", 1, 2, 6, 2, 3, { 30 }, { 5 }, { 2 }, { 2 }, { 1 }, 1 },
    /* a copy of one output's rows would not fit: scalar mode */
    { "dilation 400 x 400, grouped", 2, 1, 4, 1, 2, { 803, 805 }, { 3, 3 }, { 400, 400 }, { 1, 0 }, { 400, 400 }, 1 },
};

static void fill_desc(const dcase *c, amp_conv_desc *d)
{
    memset(d, 0, sizeof *d);
    d->nspatial = c->nspatial;
    d->batch = c->batch;
    d->in_channels = c->channels;
    d->groups = c->channels / c->cin_g;
    d->out_channels = d->groups * c->multiplier;
    for (int i = 0; i < c->nspatial; i++) {
        d->in_size[i] = c->in[i];
        d->kernel[i] = c->kernel[i];
        d->stride[i] = c->stride[i];
        d->padding[i] = c->padding[i];
        d->dilation[i] = c->dilation[i];
        d->out_size[i] = (c->in[i] + 2 * c->padding[i] - c->dilation[i] * (c->kernel[i] - 1) - 1) / c->stride[i] + 1;
        assert_true(d->out_size[i] >= 1);
    }
}

static int64_t plane(const int64_t *v, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

static void public_conv(amp_dtype t, const amp_conv_desc *d, const void *x, const void *w, const void *b, void *y)
{
    switch (t) {
    case AMP_F32: amp_conv_f32(d, x, w, b, y); break;
    case AMP_BF16: amp_conv_bf16(d, x, w, b, y); break;
    default: amp_conv_f16(d, x, w, b, y); break;
    }
}

/* The first element where a and b (n elements of t) differ, or -1. */
static int64_t first_diff(amp_dtype t, const void *a, const void *b, int64_t n)
{
    const size_t es = amp_dtype_size(t);
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)a + (size_t)i * es, (const char *)b + (size_t)i * es, es) != 0)
            return i;
    return -1;
}

static void expect_same(const char *isa, amp_dtype t, const char *what, const char *op, const void *got,
                        const void *want, int64_t n)
{
    const int64_t i = first_diff(t, got, want, n);
    if (i >= 0)
        fail_msg("%s %s %s %s [%lld]: got %.9g, reference %.9g", isa, amp_dtype_name(t), what, op, (long long)i,
                 ld(t, got, i), ld(t, want, i));
}

static void run_conv(const amp_kernel_table *k, amp_dtype t, const dcase *c)
{
    amp_conv_desc d;
    fill_desc(c, &d);
    const int64_t nx = d.batch * d.in_channels * plane(d.in_size, d.nspatial);
    const int64_t taps = plane(d.kernel, d.nspatial), ny = d.batch * d.out_channels * plane(d.out_size, d.nspatial);
    const int64_t nw = d.out_channels * (d.in_channels / d.groups) * taps;
    void *x = random_buf(t, (size_t)nx), *w = random_buf(t, (size_t)nw);
    void *bias = c->bias ? random_buf(t, (size_t)d.out_channels) : NULL;
    void *y = malloc((size_t)ny * amp_dtype_size(t)), *yref = malloc((size_t)ny * amp_dtype_size(t));
    assert_non_null(y);
    assert_non_null(yref);
    KCALL(&amp_ref_kernel_table, t, conv, &d, x, w, bias, yref);
    for (int th = 1; th <= 2; th++) {
        const int64_t before = amp_fast_conv_depthwise_taken();
        /* grouped convolutions take it for f32 storage alone */
        const int64_t want = before + (c->cin_g == 1 || t == AMP_F32);
        amp_set_threads(th);
        memset(y, 0xa5, (size_t)ny * amp_dtype_size(t));
        KCALL(k, t, conv, &d, x, w, bias, y);
        if (amp_fast_conv_depthwise_taken() != want)
            fail_msg("%s %s %s: conv %s the direct path", k->isa, amp_dtype_name(t), c->what,
                     want > before ? "did not take" : "took");
        if (c->cin_g == 1 || t == AMP_F32)
            expect_same(k->isa, t, c->what, th == 1 ? "conv, 1 thread" : "conv, 2 threads", y, yref, ny);
    }
    memset(y, 0xa5, (size_t)ny * amp_dtype_size(t));
    public_conv(t, &d, x, w, bias, y);
    if (c->cin_g == 1 || t == AMP_F32)
        expect_same(amp_isa_name(), t, c->what, "public amp_conv", y, yref, ny);
    free(x);
    free(w);
    free(bias);
    free(y);
    free(yref);
}

/* conv_transpose at stride 1 of a depthwise shape (its padding within the
 * kernel's reach) against the reference conv of the flipped weights. */
static void run_transpose(const amp_kernel_table *k, amp_dtype t, const dcase *c)
{
    amp_conv_desc d, cd;
    fill_desc(c, &d);
    d.out_channels = d.in_channels; /* one output channel per group */
    for (int i = 0; i < d.nspatial; i++) {
        d.stride[i] = 1;
        d.padding[i] = c->padding[i] < c->dilation[i] * (c->kernel[i] - 1) ? c->padding[i] : 0;
        d.out_size[i] = d.in_size[i] - 2 * d.padding[i] + d.dilation[i] * (d.kernel[i] - 1);
    }
    cd = d;
    for (int i = 0; i < d.nspatial; i++) {
        cd.padding[i] = d.dilation[i] * (d.kernel[i] - 1) - d.padding[i];
        cd.out_size[i] = d.out_size[i];
    }
    const int64_t nx = d.batch * d.in_channels * plane(d.in_size, d.nspatial), taps = plane(d.kernel, d.nspatial);
    const int64_t ny = d.batch * d.out_channels * plane(d.out_size, d.nspatial);
    void *x = random_buf(t, (size_t)nx), *w = random_buf(t, (size_t)(d.out_channels * taps));
    void *wf = malloc((size_t)(d.out_channels * taps) * amp_dtype_size(t));
    void *bias = c->bias ? random_buf(t, (size_t)d.out_channels) : NULL;
    void *y = malloc((size_t)ny * amp_dtype_size(t)), *yref = malloc((size_t)ny * amp_dtype_size(t));
    assert_non_null(wf);
    assert_non_null(y);
    assert_non_null(yref);
    for (int64_t co = 0; co < d.out_channels; co++)
        for (int64_t i = 0; i < taps; i++)
            memcpy((char *)wf + (size_t)(co * taps + i) * amp_dtype_size(t),
                   (const char *)w + (size_t)(co * taps + taps - 1 - i) * amp_dtype_size(t), amp_dtype_size(t));
    KCALL(&amp_ref_kernel_table, t, conv, &cd, x, wf, bias, yref);
    for (int th = 1; th <= 2; th++) {
        const int64_t before = amp_fast_conv_depthwise_taken();
        amp_set_threads(th);
        KCALL(k, t, conv_transpose, &d, x, w, bias, y);
        if (amp_fast_conv_depthwise_taken() != before + 1)
            fail_msg("%s %s %s: conv_transpose did not take the direct depthwise path", k->isa, amp_dtype_name(t),
                     c->what);
        expect_same(k->isa, t, c->what, "conv_transpose", y, yref, ny);
    }
    free(x);
    free(w);
    free(wf);
    free(bias);
    free(y);
    free(yref);
}

/* A dense convolution (one group) of few channels: the GEMM path, not
 * the direct one. */
static void run_dense(const amp_kernel_table *k, amp_dtype t)
{
    amp_conv_desc d;
    const dcase c = { "dense", 2, 1, 8, 8, 8, { 9, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 };
    fill_desc(&c, &d);
    void *x = random_buf(t, 8 * 81), *w = random_buf(t, 8 * 8 * 9), *y = malloc(8 * 81 * amp_dtype_size(t));
    const int64_t before = amp_fast_conv_depthwise_taken();
    assert_non_null(y);
    assert_int_equal(d.groups, 1);
    KCALL(k, t, conv, &d, x, w, NULL, y);
    assert_int_equal(amp_fast_conv_depthwise_taken(), before);
    free(x);
    free(w);
    free(y);
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    if (k == NULL)
        skip();
    assert_string_equal(k->isa, isa);
    for (size_t ti = 0; ti < 3; ti++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            run_conv(k, types[ti], &cases[i]);
            if (cases[i].multiplier == 1 && cases[i].cin_g == 1 && cases[i].dilation[0] < 100)
                run_transpose(k, types[ti], &cases[i]);
        }
        run_dense(k, types[ti]);
    }
    amp_set_threads(0);
}

int main(void)
{
    /* the sets with dw_taps (the reference has no direct path to check) */
    const struct CMUnitTest tests[] = {
        OPTIMIZED_ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
