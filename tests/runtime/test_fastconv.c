/*
 * test_fastconv.c - the optimized convolution and its gradients (conv,
 * conv_transpose and conv_backward_weight of every kernel set this CPU
 * supports, selected through amp_kernel_table_for, and the public
 * amp_conv_<T> under whichever set AMPRT_ISA chose) against the reference
 * kernel and an oracle in double, for f32, bf16 and f16, on 1 and 2
 * threads.
 *
 * The bound is test_fastgemm.c's: an output y of dtype T is correct if
 *     |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 * where acc = (K + 2) 2^-24 (sum over taps |x w| + |bias|) bounds any f32
 * summation order over the K = in_channels/groups x kernel taps, and u_T is
 * the one final rounding.  The reference kernel meets the same bound, so
 * the two may differ by twice it, and that is checked too.  Inputs are
 * uniform in [-1, 1] (no subnormals: vdpbf16ps flushes them), rounded into
 * T before either kernel reads them.  The shapes cover 1-, 2- and 3-d,
 * stride, padding (taps entirely in it, too), dilation, groups (depthwise
 * too), 1 x 1 convolutions with and without the direct (copy-free) path,
 * odd sizes that are no multiple of any tile, K beyond one cache block,
 * more output channels than one row block and more output positions than
 * one column block, output channels in 8-row tiles (64), and the
 * im2col-pack's edges (im2col_cases); the weight gradient's direct path
 * (asserted taken in bf16 on the avx512bf16 and avx2 sets for the cases
 * named for it, kpair 2 and 1).  Results
 * must be identical on 1 and 2 threads.
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

#define FAST_TEST_SEED 0x2545f4914f6cdd1dull
#include "fast_test_util.h"

static void public_conv(amp_dtype t, const amp_conv_desc *d, const void *x, const void *w, const void *b, void *y)
{
    switch (t) {
    case AMP_F32: amp_conv_f32(d, x, w, b, y); break;
    case AMP_BF16: amp_conv_bf16(d, x, w, b, y); break;
    default: amp_conv_f16(d, x, w, b, y); break;
    }
}

typedef struct {
    const char *what;
    int nspatial;
    int64_t batch, cin, cout, groups;
    int64_t in[3], kernel[3], stride[3], padding[3], dilation[3];
    int bias;
} ccase;

static const ccase cases[] = {
    { "3x3 pad 1", 2, 2, 5, 7, 1, { 9, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "1x1 direct", 2, 2, 16, 13, 1, { 6, 7 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0 },
    { "1x1 stride 2", 2, 3, 9, 20, 1, { 9, 8 }, { 1, 1 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, 1 },
    { "1x1 padded", 2, 1, 4, 5, 1, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 1, 2 }, { 1, 1 }, 1 },
    { "7x7 stride 2 pad 3", 2, 2, 3, 20, 1, { 23, 19 }, { 7, 7 }, { 2, 2 }, { 3, 3 }, { 1, 1 }, 0 },
    { "dilation", 2, 1, 6, 9, 1, { 13, 10 }, { 3, 2 }, { 1, 2 }, { 2, 1 }, { 2, 3 }, 1 },
    { "stride 3, uneven", 2, 2, 5, 11, 1, { 17, 14 }, { 4, 3 }, { 3, 2 }, { 1, 0 }, { 1, 1 }, 1 },
    { "taps all in padding", 2, 1, 3, 4, 1, { 2, 2 }, { 3, 3 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, 1 },
    { "groups 2", 2, 2, 8, 12, 2, { 7, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "groups 3, stride 2", 2, 1, 9, 6, 3, { 11, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0 },
    { "depthwise", 2, 2, 6, 6, 6, { 10, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "depthwise x2", 2, 1, 5, 10, 5, { 8, 8 }, { 5, 5 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, 1 },
    { "1-d", 1, 3, 7, 10, 1, { 31 }, { 5 }, { 2 }, { 2 }, { 1 }, 1 },
    { "1-d direct", 1, 2, 33, 17, 1, { 29 }, { 1 }, { 1 }, { 0 }, { 1 }, 1 },
    { "3-d", 3, 2, 3, 5, 1, { 5, 6, 7 }, { 3, 2, 3 }, { 1, 2, 1 }, { 1, 0, 1 }, { 1, 1, 2 }, 1 },
    { "K over one block", 2, 1, 70, 14, 1, { 6, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "direct, K over one block", 2, 1, 600, 13, 1, { 3, 4 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0 },
    { "many output channels", 2, 1, 4, 400, 1, { 4, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "many output positions", 2, 2, 3, 13, 1, { 23, 21 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "resnet-like, threaded", 2, 2, 32, 48, 1, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    /* 64 output channels: avx512bf16's 8-row tiles (12-row ones would pad to 72) */
    { "64 channels, 8-row tiles", 2, 2, 24, 64, 1, { 12, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
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
        d->dilation[i] = c->dilation[i];
        d->out_size[i] = (c->in[i] + 2 * c->padding[i] - c->dilation[i] * (c->kernel[i] - 1) - 1) / c->stride[i] + 1;
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

static void run_case(const amp_kernel_table *k, amp_dtype t, const ccase *c)
{
    amp_conv_desc d;
    int64_t in_plane, out_plane, kplane, cin_g, cout_g, nx, nw, ny;
    void *x, *w, *bias, *y[2], *yref, *ypub;
    const double u = unit_roundoff(t);
    fill_desc(c, &d);
    in_plane = prod(d.in_size, d.nspatial);
    out_plane = prod(d.out_size, d.nspatial);
    kplane = prod(d.kernel, d.nspatial);
    cin_g = d.in_channels / d.groups;
    cout_g = d.out_channels / d.groups;
    nx = d.batch * d.in_channels * in_plane;
    nw = d.out_channels * cin_g * kplane;
    ny = d.batch * d.out_channels * out_plane;
    x = random_buf(t, (size_t)nx);
    w = random_buf(t, (size_t)nw);
    bias = c->bias ? random_buf(t, (size_t)d.out_channels) : NULL;
    for (int th = 0; th < 2; th++) {
        y[th] = malloc((size_t)ny * amp_dtype_size(t));
        assert_non_null(y[th]);
        amp_set_threads(th + 1);
        KCALL(k, t, conv, &d, x, w, bias, y[th]);
    }
    assert_memory_equal(y[0], y[1], (size_t)ny * amp_dtype_size(t));
    yref = malloc((size_t)ny * amp_dtype_size(t));
    ypub = malloc((size_t)ny * amp_dtype_size(t));
    assert_non_null(yref);
    assert_non_null(ypub);
    KCALL(&amp_ref_kernel_table, t, conv, &d, x, w, bias, yref);
    public_conv(t, &d, x, w, bias, ypub);

    for (int64_t n = 0; n < d.batch; n++)
        for (int64_t co = 0; co < d.out_channels; co++)
            for (int64_t op = 0; op < out_plane; op++) {
                int64_t o[3] = { 0, 0, 0 }, rest = op, yi = (n * d.out_channels + co) * out_plane + op;
                double s = 0, mag = 0, bound, v, r, pv;
                for (int i = d.nspatial - 1; i >= 0; i--) {
                    o[i] = rest % d.out_size[i];
                    rest /= d.out_size[i];
                }
                for (int64_t ci = 0; ci < cin_g; ci++)
                    for (int64_t kp = 0; kp < kplane; kp++) {
                        int64_t kk[3] = { 0, 0, 0 }, krest = kp, off = 0, inside = 1;
                        double p;
                        for (int i = d.nspatial - 1; i >= 0; i--) {
                            kk[i] = krest % d.kernel[i];
                            krest /= d.kernel[i];
                        }
                        for (int i = 0; i < d.nspatial; i++) {
                            int64_t pos = o[i] * d.stride[i] - d.padding[i] + kk[i] * d.dilation[i];
                            if (pos < 0 || pos >= d.in_size[i])
                                inside = 0;
                            off = off * d.in_size[i] + pos;
                        }
                        if (!inside)
                            continue;
                        p = ld(t, x, (n * d.in_channels + co / cout_g * cin_g + ci) * in_plane + off) *
                            ld(t, w, (co * cin_g + ci) * kplane + kp);
                        s += p;
                        mag += fabs(p);
                    }
                if (bias != NULL) {
                    s += ld(t, bias, co);
                    mag += fabs(ld(t, bias, co));
                }
                bound = u * fabs(s) + (1 + u) * (double)(cin_g * kplane + 2) * 0x1p-24 * mag + underflow_floor(t);
                v = ld(t, y[0], yi);
                r = ld(t, yref, yi);
                pv = ld(t, ypub, yi);
                if (!(fabs(v - s) <= bound))
                    fail_msg("%s %s %s [%lld]: got %.9g, oracle %.9g, bound %.3g", k->isa, amp_dtype_name(t), c->what,
                             (long long)yi, v, s, bound);
                if (!(fabs(v - r) <= 2 * bound))
                    fail_msg("%s %s %s [%lld]: got %.9g, reference %.9g, bound %.3g", k->isa, amp_dtype_name(t),
                             c->what, (long long)yi, v, r, 2 * bound);
                if (!(fabs(pv - s) <= bound))
                    fail_msg("public amp_conv (%s) %s %s [%lld]: got %.9g, oracle %.9g", amp_isa_name(),
                             amp_dtype_name(t), c->what, (long long)yi, pv, s);
            }
    free(x);
    free(w);
    free(bias);
    free(y[0]);
    free(y[1]);
    free(yref);
    free(ypub);
}

/* conv_backward_weight_to_f32, the set's (on 1 and 2 threads) and the
 * reference's, stored and added into prior contents: bit for bit the dw
 * conv_backward_weight gave (low, lowref) widened, or added widened. */
static void check_to_f32(const amp_kernel_table *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *dy,
                         const void *low, const void *lowref, int64_t nw)
{
    float *got = malloc((size_t)nw * sizeof *got), *want = malloc((size_t)nw * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    for (int set = 0; set < 2; set++)
        for (int th = 1; th <= 2; th++)
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const amp_kernel_table *kt = set == 0 ? k : &amp_ref_kernel_table;
                const void *from = set == 0 ? low : lowref;
                if (set == 1 && th == 2) /* the reference runs on one thread anyway */
                    continue;
                for (int64_t i = 0; i < nw; i++) {
                    got[i] = (float)(i % 7) * 0.375f - 1.0f; /* contents to add to (or overwrite) */
                    want[i] = accumulate ? got[i] + (float)ld(t, from, i) : (float)ld(t, from, i);
                }
                amp_set_threads(th);
                if (t == AMP_BF16)
                    kt->conv_backward_weight_to_f32_bf16(d, x, dy, got, accumulate);
                else
                    kt->conv_backward_weight_to_f32_f16(d, x, dy, got, accumulate);
                for (int64_t i = 0; i < nw; i++)
                    if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
                        fail_msg("%s %s conv_backward_weight_to_f32 (accumulate %d, %d threads) [%lld]: got %.9g, "
                                 "want %.9g",
                                 kt->isa, amp_dtype_name(t), accumulate, th, (long long)i, got[i], want[i]);
            }
    free(got);
    free(want);
}

/* conv_backward_weight on the same shapes: dw[co, ci, k] = sum over n, o
 * of dy[n, co, o] x[n, group start + ci, tap k of o]; the bound's sum runs
 * over batch x out_plane products. */
/* Whether conv_backward_weight of set k must take the direct path on c:
 * the wgrad cases named for it, in bf16 on the sets with pack_b_trows
 * ("w: kpair 1" ones on the avx2 set alone). */
static int expects_wgrad_direct(const amp_kernel_table *k, amp_dtype t, const ccase *c)
{
    const int avx2 = strcmp(k->isa, "avx2") == 0, bf16set = strcmp(k->isa, "avx512bf16") == 0;
    if (t != AMP_BF16)
        return 0;
    if (strncmp(c->what, "w: kpair 1", 10) == 0)
        return avx2;
    return (avx2 || bf16set) && (strncmp(c->what, "w: direct", 9) == 0 || strncmp(c->what, "w: flat", 7) == 0);
}

static void run_backward_weight(const amp_kernel_table *k, amp_dtype t, const ccase *c)
{
    amp_conv_desc d;
    int64_t in_plane, out_plane, kplane, cin_g, cout_g, nx, ndy, nw, direct0, depthwise0;
    void *x, *dy, *dw[2], *dwref;
    const double u = unit_roundoff(t);
    fill_desc(c, &d);
    in_plane = prod(d.in_size, d.nspatial);
    out_plane = prod(d.out_size, d.nspatial);
    kplane = prod(d.kernel, d.nspatial);
    cin_g = d.in_channels / d.groups;
    cout_g = d.out_channels / d.groups;
    nx = d.batch * d.in_channels * in_plane;
    ndy = d.batch * d.out_channels * out_plane;
    nw = d.out_channels * cin_g * kplane;
    x = random_buf(t, (size_t)nx);
    dy = random_buf(t, (size_t)ndy);
    direct0 = amp_fast_conv_wgrad_direct_taken();
    depthwise0 = amp_fast_conv_wgrad_depthwise_taken();
    for (int th = 0; th < 2; th++) {
        dw[th] = malloc((size_t)nw * amp_dtype_size(t));
        assert_non_null(dw[th]);
        amp_set_threads(th + 1);
        KCALL(k, t, conv_backward_weight, &d, x, dy, dw[th]);
    }
    if (expects_wgrad_direct(k, t, c) && amp_fast_conv_wgrad_direct_taken() - direct0 != 2)
        fail_msg("%s %s %s backward_weight: the direct path not taken", k->isa, amp_dtype_name(t), c->what);
    /* every optimized set's depthwise weight gradients: frame/conv_wgrad_depthwise.c */
    if (strcmp(k->isa, "ref") != 0 && c->groups == c->cin && c->nspatial <= 2 &&
        amp_fast_conv_wgrad_depthwise_taken() - depthwise0 != 2)
        fail_msg("%s %s %s backward_weight: the depthwise path not taken", k->isa, amp_dtype_name(t), c->what);
    assert_memory_equal(dw[0], dw[1], (size_t)nw * amp_dtype_size(t));
    dwref = malloc((size_t)nw * amp_dtype_size(t));
    assert_non_null(dwref);
    KCALL(&amp_ref_kernel_table, t, conv_backward_weight, &d, x, dy, dwref);
    for (int64_t co = 0; co < d.out_channels; co++)
        for (int64_t ci = 0; ci < cin_g; ci++)
            for (int64_t kp = 0; kp < kplane; kp++) {
                int64_t kk[3] = { 0, 0, 0 }, krest = kp, wi = (co * cin_g + ci) * kplane + kp;
                double s = 0, mag = 0, bound, v, r;
                for (int i = d.nspatial - 1; i >= 0; i--) {
                    kk[i] = krest % d.kernel[i];
                    krest /= d.kernel[i];
                }
                for (int64_t n = 0; n < d.batch; n++)
                    for (int64_t op = 0; op < out_plane; op++) {
                        int64_t rest = op, off = 0, inside = 1, o[3] = { 0, 0, 0 };
                        double p;
                        for (int i = d.nspatial - 1; i >= 0; i--) {
                            o[i] = rest % d.out_size[i];
                            rest /= d.out_size[i];
                        }
                        for (int i = 0; i < d.nspatial; i++) {
                            int64_t pos = o[i] * d.stride[i] - d.padding[i] + kk[i] * d.dilation[i];
                            if (pos < 0 || pos >= d.in_size[i])
                                inside = 0;
                            off = off * d.in_size[i] + pos;
                        }
                        if (!inside)
                            continue;
                        p = ld(t, dy, (n * d.out_channels + co) * out_plane + op) *
                            ld(t, x, (n * d.in_channels + co / cout_g * cin_g + ci) * in_plane + off);
                        s += p;
                        mag += fabs(p);
                    }
                bound = u * fabs(s) + (1 + u) * (double)(d.batch * out_plane + 2) * 0x1p-24 * mag +
                        underflow_floor(t);
                v = ld(t, dw[0], wi);
                r = ld(t, dwref, wi);
                if (!(fabs(v - s) <= bound))
                    fail_msg("%s %s %s backward_weight [%lld]: got %.9g, oracle %.9g, bound %.3g", k->isa,
                             amp_dtype_name(t), c->what, (long long)wi, v, s, bound);
                if (!(fabs(v - r) <= 2 * bound))
                    fail_msg("%s %s %s backward_weight [%lld]: got %.9g, reference %.9g", k->isa, amp_dtype_name(t),
                             c->what, (long long)wi, v, r);
            }
    if (t != AMP_F32)
        check_to_f32(k, t, &d, x, dy, dw[0], dwref, nw);
    free(x);
    free(dy);
    free(dw[0]);
    free(dw[1]);
    free(dwref);
}

/* conv_transpose with the adjoint geometry of case c (the input gradient
 * of c's conv, which is how training calls it), with a bias when c has
 * one: y[n, co, o] = bias[co] + sum over ci of the group and taps k with
 * i stride - padding + k dilation = o of x[n, ci, i] w[ci, co', k]. */
static void run_transpose(const amp_kernel_table *k, amp_dtype t, const ccase *c)
{
    amp_conv_desc f, d;
    int64_t in_plane, out_plane, kplane, cin_g, cout_g, nx, nw, ny;
    void *x, *w, *bias, *y[2], *yref;
    const double u = unit_roundoff(t);
    fill_desc(c, &f);
    d = f; /* the transposed conv: channels and sizes swapped */
    d.in_channels = f.out_channels;
    d.out_channels = f.in_channels;
    for (int i = 0; i < 3; i++) {
        d.in_size[i] = f.out_size[i];
        d.out_size[i] = f.in_size[i];
    }
    in_plane = prod(d.in_size, d.nspatial);
    out_plane = prod(d.out_size, d.nspatial);
    kplane = prod(d.kernel, d.nspatial);
    cin_g = d.in_channels / d.groups;
    cout_g = d.out_channels / d.groups;
    nx = d.batch * d.in_channels * in_plane;
    nw = d.in_channels * cout_g * kplane;
    ny = d.batch * d.out_channels * out_plane;
    x = random_buf(t, (size_t)nx);
    w = random_buf(t, (size_t)nw);
    bias = c->bias ? random_buf(t, (size_t)d.out_channels) : NULL;
    for (int th = 0; th < 2; th++) {
        y[th] = malloc((size_t)ny * amp_dtype_size(t));
        assert_non_null(y[th]);
        amp_set_threads(th + 1);
        KCALL(k, t, conv_transpose, &d, x, w, bias, y[th]);
    }
    assert_memory_equal(y[0], y[1], (size_t)ny * amp_dtype_size(t));
    yref = malloc((size_t)ny * amp_dtype_size(t));
    assert_non_null(yref);
    KCALL(&amp_ref_kernel_table, t, conv_transpose, &d, x, w, bias, yref);
    for (int64_t n = 0; n < d.batch; n++)
        for (int64_t co = 0; co < d.out_channels; co++)
            for (int64_t op = 0; op < out_plane; op++) {
                int64_t o[3] = { 0, 0, 0 }, rest = op, yi = (n * d.out_channels + co) * out_plane + op;
                int64_t grp = co / cout_g;
                double s = 0, mag = 0, bound, v, r;
                for (int i = d.nspatial - 1; i >= 0; i--) {
                    o[i] = rest % d.out_size[i];
                    rest /= d.out_size[i];
                }
                for (int64_t ci = grp * cin_g; ci < (grp + 1) * cin_g; ci++)
                    for (int64_t kp = 0; kp < kplane; kp++) {
                        int64_t kk[3] = { 0, 0, 0 }, krest = kp, off = 0, inside = 1;
                        double p;
                        for (int i = d.nspatial - 1; i >= 0; i--) {
                            kk[i] = krest % d.kernel[i];
                            krest /= d.kernel[i];
                        }
                        for (int i = 0; i < d.nspatial; i++) {
                            int64_t scaled = o[i] + d.padding[i] - kk[i] * d.dilation[i];
                            if (scaled < 0 || scaled % d.stride[i] != 0 || scaled / d.stride[i] >= d.in_size[i])
                                inside = 0;
                            off = off * d.in_size[i] + (inside ? scaled / d.stride[i] : 0);
                        }
                        if (!inside)
                            continue;
                        p = ld(t, x, (n * d.in_channels + ci) * in_plane + off) *
                            ld(t, w, (ci * cout_g + co % cout_g) * kplane + kp);
                        s += p;
                        mag += fabs(p);
                    }
                if (bias != NULL) {
                    s += ld(t, bias, co);
                    mag += fabs(ld(t, bias, co));
                }
                bound = u * fabs(s) + (1 + u) * (double)(cin_g * kplane + 2) * 0x1p-24 * mag + underflow_floor(t);
                v = ld(t, y[0], yi);
                r = ld(t, yref, yi);
                if (!(fabs(v - s) <= bound))
                    fail_msg("%s %s %s transpose [%lld]: got %.9g, oracle %.9g, bound %.3g", k->isa,
                             amp_dtype_name(t), c->what, (long long)yi, v, s, bound);
                if (!(fabs(v - r) <= 2 * bound))
                    fail_msg("%s %s %s transpose [%lld]: got %.9g, reference %.9g", k->isa, amp_dtype_name(t),
                             c->what, (long long)yi, v, r);
            }
    free(x);
    free(w);
    free(bias);
    free(y[0]);
    free(y[1]);
    free(yref);
}

/* More shapes for conv_transpose alone: stride 1 (the optimized sets run
 * it as a convolution of the flipped weights, padding dilation (kernel -
 * 1) - padding) with every padding from 0 to kernel - 1, uneven kernels
 * and paddings, groups, depthwise, dilation, 1-d and 3-d, enough channels
 * for several k blocks; strides on small planes (the col2im path) and on
 * larger ones (one convolution per output phase). */
static const ccase transpose_cases[] = {
    { "t: 3x3 no padding", 2, 2, 6, 5, 1, { 8, 9 }, { 3, 3 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 1 },
    { "t: 3x3 pad 2", 2, 1, 4, 7, 1, { 5, 6 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, 0 },
    { "t: 5x3 uneven pads", 2, 2, 5, 6, 1, { 9, 10 }, { 5, 3 }, { 1, 1 }, { 1, 2 }, { 1, 1 }, 1 },
    { "t: grouped 3x3", 2, 2, 12, 8, 4, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "t: depthwise 3x3", 2, 3, 8, 8, 8, { 6, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "t: dilation 2", 2, 1, 5, 6, 1, { 12, 11 }, { 3, 3 }, { 1, 1 }, { 1, 2 }, { 2, 2 }, 1 },
    { "t: 1-d", 1, 2, 7, 9, 1, { 20 }, { 4 }, { 1 }, { 3 }, { 1 }, 1 },
    { "t: 3-d", 3, 1, 3, 4, 1, { 4, 5, 6 }, { 3, 3, 2 }, { 1, 1, 1 }, { 1, 0, 1 }, { 1, 1, 1 }, 1 },
    { "t: layer4-like, threaded", 2, 2, 64, 160, 1, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "t: stride 2 in one dim", 2, 1, 4, 6, 1, { 9, 8 }, { 3, 3 }, { 1, 2 }, { 1, 1 }, { 1, 1 }, 1 },
    /* strides > 1 on planes large enough for the phase path (one
     * convolution per output residue; smaller planes keep col2im) */
    { "t: phases 3x3 stride 2", 2, 2, 6, 5, 1, { 29, 24 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1 },
    { "t: phases 1x1 stride 2", 2, 1, 8, 12, 1, { 30, 22 }, { 1, 1 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, 1 },
    /* odd output rows: the even phase one element longer than the odd */
    { "t: phases 3x3 stride 2, odd width", 2, 2, 7, 6, 1, { 20, 27 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1 },
    { "t: phases 1x1 stride 2, odd width", 2, 1, 5, 9, 1, { 18, 25 }, { 1, 1 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, 0 },
    { "t: phases kernel < stride, groups", 2, 1, 6, 9, 3, { 34, 32 }, { 4, 2 }, { 3, 3 }, { 2, 1 }, { 1, 1 }, 1 },
    { "t: phases 1-d", 1, 2, 5, 7, 1, { 400 }, { 5 }, { 2 }, { 2 }, { 1 }, 0 },
};

/* conv_backward_weight alone on an im2col too large for one GEMM over
 * every image: the optimized sets sum it in chunks of images (in f32, one
 * rounding at the end); 7 images make the last chunk a partial one. */
static const ccase wgrad_cases[] = {
    { "w: chunked im2col", 2, 7, 16, 4, 1, { 81, 81 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    /* the depthwise weight gradient: rows longer than a chunk of lanes
     * and no multiple of it, stride 2 on odd sizes, dilation, 1-d, a
     * channel multiplier with stride 3, padding past the kernel */
    { "w: depthwise, long rows", 2, 2, 3, 3, 3, { 9, 37 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "w: depthwise, stride 2, odd", 2, 2, 7, 7, 7, { 13, 11 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0 },
    { "w: depthwise, dilated 1-d", 1, 2, 4, 4, 4, { 37 }, { 3 }, { 1 }, { 2 }, { 2 }, 0 },
    { "w: depthwise x3, stride 3", 2, 1, 4, 12, 4, { 17, 19 }, { 5, 3 }, { 3, 3 }, { 4, 2 }, { 1, 2 }, 0 },
    /* the direct weight gradient (even output rows): an image's positions
     * in several k blocks, the last partial; stride 2 with its even/odd
     * column split and wide padding; row and column blocks of dw; 1-d */
    { "w: direct, several position blocks", 2, 2, 5, 7, 1, { 30, 40 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "w: direct, stride 2, 7x7 pad 3", 2, 1, 3, 20, 1, { 47, 64 }, { 7, 7 }, { 2, 2 }, { 3, 3 }, { 1, 1 }, 0 },
    /* dw one block (few columns): the images' sum in two parts, 3 images
     * making them unequal */
    { "w: direct, one block, image parts", 2, 3, 3, 20, 1, { 30, 36 }, { 7, 7 }, { 2, 2 }, { 3, 3 }, { 1, 1 }, 0 },
    /* 5 images in parts of 2, 2 and 1 (four parts of cdiv(5, 4) would leave one empty) */
    { "w: direct, one block, 5 images", 2, 5, 3, 16, 1, { 20, 24 }, { 7, 7 }, { 2, 2 }, { 3, 3 }, { 1, 1 }, 0 },
    { "w: direct, row and column blocks", 2, 1, 40, 400, 1, { 6, 8 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "w: direct, stride 2 by rows only", 2, 2, 6, 9, 1, { 13, 19 }, { 3, 4 }, { 2, 1 }, { 1, 2 }, { 2, 1 }, 0 },
    { "w: direct, 1-d wide", 1, 2, 2, 3, 1, { 1100 }, { 3 }, { 1 }, { 1 }, { 1 }, 0 },
    { "w: direct, 1-d, kernel 2", 1, 1, 3, 5, 1, { 41 }, { 2 }, { 1 }, { 0 }, { 1 }, 0 },
    /* odd output widths (the flat copy): position blocks whose pairs
     * straddle output rows, the last block odd (675 = 512 + 163); stride 2
     * in both dimensions (row phases); 1-d at an odd width */
    { "w: flat, several position blocks", 2, 2, 5, 7, 1, { 27, 25 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "w: flat, stride 2, odd width", 2, 2, 6, 9, 1, { 15, 13 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0 },
    { "w: flat, 5x3 uneven pads", 2, 3, 4, 7, 1, { 9, 11 }, { 5, 3 }, { 1, 1 }, { 2, 0 }, { 1, 1 }, 0 },
    { "w: flat, 1-d odd", 1, 2, 3, 5, 1, { 43 }, { 3 }, { 1 }, { 1 }, { 1 }, 0 },
    /* group mode (planes of at most one k block): 7 images in groups
     * (kpair 1: 5 and 2 of 49 positions), dy packed once for two column
     * blocks */
    { "w: flat, image groups, column blocks", 2, 7, 24, 10, 1, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    /* kpair 1 (one position per unit): an odd width with vertical
     * dilation by the row copy, which kpair 2 cannot take; an odd width
     * whose positions run over several k blocks of 256 */
    { "w: kpair 1, odd width, dilation", 2, 2, 4, 6, 1, { 17, 13 }, { 3, 3 }, { 1, 1 }, { 2, 1 }, { 2, 1 }, 0 },
    { "w: kpair 1, odd width, k blocks", 2, 1, 3, 7, 1, { 25, 23 }, { 3, 5 }, { 1, 1 }, { 1, 2 }, { 1, 1 }, 0 },
};

/* An infinity in x reaches exactly the weight gradients whose taps read
 * it: at an odd output width (7 x 7, one position block of 49, its last
 * unit half zero) an infinity in the last input row, read by no tap of
 * row 0, must not leak into that tap through the block's tail, nor one in
 * row 0 into the taps of the last row. */
static void run_wgrad_inf(const amp_kernel_table *k, amp_dtype t)
{
    const ccase c = { "wgrad inf", 2, 2, 3, 5, 1, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 };
    const int64_t plane = 49, nw = 5 * 3 * 9;
    amp_conv_desc d;
    void *x, *dy, *dw, *dwref;
    fill_desc(&c, &d);
    x = random_buf(t, 2 * 3 * plane);
    dy = random_buf(t, 2 * 5 * plane);
    dw = malloc((size_t)nw * amp_dtype_size(t));
    dwref = malloc((size_t)nw * amp_dtype_size(t));
    assert_non_null(dw);
    assert_non_null(dwref);
    amp_store_from_f32(t, x, (1 * 3 + 2) * plane + 6 * 7 + 0, INFINITY); /* image 1, channel 2, (6, 0) */
    amp_store_from_f32(t, x, (0 * 3 + 0) * plane + 6 * 7 + 6, INFINITY); /* image 0, channel 0, (6, 6) */
    amp_store_from_f32(t, x, (1 * 3 + 1) * plane + 0 * 7 + 3, -INFINITY); /* image 1, channel 1, (0, 3) */
    for (int th = 1; th <= 2; th++) {
        amp_set_threads(th);
        KCALL(k, t, conv_backward_weight, &d, x, dy, dw);
        KCALL(&amp_ref_kernel_table, t, conv_backward_weight, &d, x, dy, dwref);
        for (int64_t i = 0; i < nw; i++)
            if (isfinite(ld(t, dw, i)) != isfinite(ld(t, dwref, i)))
                fail_msg("%s %s wgrad inf [%lld]: got %g, reference %g", k->isa, amp_dtype_name(t), (long long)i,
                         ld(t, dw, i), ld(t, dwref, i));
    }
    free(x);
    free(dy);
    free(dw);
    free(dwref);
}

/* A NaN in x reaches exactly the outputs whose windows read it. */
/* Forward only: the im2col-pack's cases (frame/conv_pack.c packs B straight from
 * x): k pairs straddling two channels (odd K), padding on every side,
 * rows longer than one 16-column vector (unmasked loads) at stride 1 and
 * 2, dilation with stride, 1-row planes, rows split into several
 * blocks (the B blocks packed once beforehand) with an odd last k block,
 * and more runs x kernel positions than the per-task tap table holds. */
static const ccase im2col_cases[] = {
    { "i: 1-row plane, pad 1", 2, 2, 5, 9, 1, { 1, 37 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "i: wide rows, 5x5 pad 2", 2, 1, 3, 10, 1, { 6, 45 }, { 5, 5 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, 1 },
    { "i: stride 2, wide rows", 2, 2, 5, 7, 1, { 7, 71 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0 },
    { "i: stride 2, dilation 2, wide", 2, 1, 3, 6, 1, { 9, 80 }, { 3, 3 }, { 2, 2 }, { 2, 2 }, { 2, 2 }, 1 },
    { "i: 7x7 stride 2, rows split", 2, 1, 3, 400, 1, { 9, 60 }, { 7, 7 }, { 2, 2 }, { 3, 3 }, { 1, 1 }, 1 },
    { "i: rows split, odd last k block", 2, 1, 61, 400, 1, { 5, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "i: 1-d wide, pad 3", 1, 2, 3, 5, 1, { 100 }, { 7 }, { 1 }, { 3 }, { 1 }, 1 },
    { "i: stride 3 (generic body)", 2, 1, 3, 5, 1, { 6, 70 }, { 3, 4 }, { 1, 3 }, { 1, 2 }, { 1, 1 }, 1 },
    { "i: 1-wide output rows (taps per unit)", 2, 1, 2, 5, 1, { 200, 7 }, { 7, 7 }, { 1, 1 }, { 3, 0 }, { 1, 1 }, 1 },
};

static void run_nan(const amp_kernel_table *k, amp_dtype t)
{
    const ccase c = { "nan", 2, 1, 2, 3, 1, { 6, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 };
    amp_conv_desc d;
    void *x, *w, *y;
    fill_desc(&c, &d);
    x = random_buf(t, 2 * 36);
    w = random_buf(t, 3 * 2 * 9);
    y = malloc(3 * 36 * amp_dtype_size(t));
    assert_non_null(y);
    amp_store_from_f32(t, x, 36 + 2 * 6 + 4, NAN); /* channel 1, (2, 4) */
    KCALL(k, t, conv, &d, x, w, NULL, y);
    for (int64_t co = 0; co < 3; co++)
        for (int64_t oh = 0; oh < 6; oh++)
            for (int64_t ow = 0; ow < 6; ow++) {
                int reads = oh >= 1 && oh <= 3 && ow >= 3 && ow <= 5;
                assert_int_equal(isnan(ld(t, y, (co * 6 + oh) * 6 + ow)) != 0, reads);
            }
    free(x);
    free(w);
    free(y);
}

/* Taps mode (the avx512bf16 and avx2 sets' bf16 convolutions of stride 1
 * whose columns do not run across images: no B packing, the micro-kernel
 * reading a padded copy of x at per-unit offsets; kpair 2 and 1) against the packed path it
 * replaces, which gives the same bits by construction: conv (with and
 * without bias), conv_ex (batch_norm, residual, relu and raw together, and
 * packed weights) and the stride-1 conv_transpose (run as a convolution
 * of the flipped weights), on 1 and 2 threads; every case must take taps
 * mode.  The shapes: rows straddling the 32-column tiles, 8-row tiles with
 * two k blocks, more output channels than a row block, 5 x 5 with padding
 * 2, dilation, no padding, padding wider than the kernel's reach (rows
 * longer than in_w + padding), uneven kernel and padding, groups, 1-d
 * rows longer than a task, a tall narrow plane, and channels enough that
 * the padded copy holds only a few rows (small tasks, many k blocks). */
static const ccase taps_cases[] = {
    { "taps 3x3", 2, 1, 8, 12, 1, { 9, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "taps 64 channels, 2 k blocks", 2, 1, 64, 64, 1, { 9, 10 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "taps 400 output channels", 2, 1, 4, 400, 1, { 6, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "taps 5x5 pad 2", 2, 1, 10, 7, 1, { 5, 40 }, { 5, 5 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, 1 },
    { "taps dilation 2", 2, 1, 6, 10, 1, { 13, 10 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
    { "taps no padding", 2, 1, 16, 16, 1, { 7, 9 }, { 3, 3 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0 },
    { "taps padding 3 at 3x3", 2, 1, 4, 6, 1, { 6, 5 }, { 3, 3 }, { 1, 1 }, { 3, 3 }, { 1, 1 }, 1 },
    { "taps uneven", 2, 1, 6, 9, 1, { 10, 12 }, { 3, 2 }, { 1, 1 }, { 1, 0 }, { 1, 1 }, 1 },
    { "taps groups 2", 2, 2, 8, 12, 2, { 7, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { "taps 1-d", 1, 1, 2, 5, 1, { 3000 }, { 3 }, { 1 }, { 1 }, { 1 }, 1 },
    { "taps tall plane", 2, 1, 32, 20, 1, { 200, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "taps few rows per task", 2, 1, 1000, 2, 1, { 8, 20 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
};

static void run_taps(const amp_kernel_table *k, const ccase *c, int kpair)
{
    const amp_dtype t = AMP_BF16;
    amp_conv_desc d, tr;
    int64_t in_plane, out_plane, kplane, nx, nw, ny, taken;
    void *x, *w, *bias, *res, *packed, *y[3], *raw[3];
    float *mean, *var, *gamma, *beta;
    amp_conv_post post;
    fill_desc(c, &d);
    in_plane = prod(d.in_size, d.nspatial);
    out_plane = prod(d.out_size, d.nspatial);
    kplane = prod(d.kernel, d.nspatial);
    nx = d.batch * d.in_channels * in_plane;
    nw = d.out_channels * (d.in_channels / d.groups) * kplane;
    ny = d.batch * d.out_channels * out_plane;
    x = random_buf(t, (size_t)nx);
    w = random_buf(t, (size_t)nw);
    bias = random_buf(t, (size_t)d.out_channels);
    res = random_buf(t, (size_t)ny);
    mean = malloc((size_t)d.out_channels * sizeof *mean);
    var = malloc((size_t)d.out_channels * sizeof *var);
    gamma = malloc((size_t)d.out_channels * sizeof *gamma);
    beta = malloc((size_t)d.out_channels * sizeof *beta);
    packed = malloc(k->conv_packed_bytes_bf16(&d));
    assert_true(mean != NULL && var != NULL && gamma != NULL && beta != NULL && packed != NULL);
    for (int64_t co = 0; co < d.out_channels; co++) {
        mean[co] = 0.01f * (float)(co % 7);
        var[co] = 0.5f + 0.1f * (float)(co % 5);
        gamma[co] = 1.0f - 0.05f * (float)(co % 3);
        beta[co] = 0.02f * (float)(co % 4) - 0.03f;
    }
    k->conv_pack_weights_bf16(&d, AMP_BF16, w, packed);
    memset(&post, 0, sizeof post);
    post.bn_mean = mean;
    post.bn_var = var;
    post.bn_weight = gamma;
    post.bn_bias = beta;
    post.bn_dtype = AMP_F32;
    post.bn_eps = 1e-5;
    post.residual = res;
    post.relu = 1;
    for (int i = 0; i < 3; i++) {
        y[i] = malloc((size_t)ny * 2);
        raw[i] = malloc((size_t)ny * 2);
        assert_true(y[i] != NULL && raw[i] != NULL);
    }

    /* y[0]: the packed path; y[1], y[2]: taps mode on 1 and 2 threads */
    for (int pass = 0; pass < 4; pass++) {
        for (int i = 0; i < 3; i++) {
            amp_fast_conv_allow_taps(i > 0);
            amp_set_threads(i == 2 ? 2 : 1);
            taken = amp_fast_conv_taps_taken();
            memset(y[i], 0xff, (size_t)ny * 2);
            memset(raw[i], 0xff, (size_t)ny * 2);
            post.raw = raw[i];
            switch (pass) {
            case 0: k->conv_bf16(&d, x, w, NULL, y[i]); break;
            case 1: k->conv_bf16(&d, x, w, bias, y[i]); break;
            case 2: k->conv_ex_bf16(&d, x, w, NULL, NULL, &post, y[i]); break;
            default: k->conv_ex_bf16(&d, x, NULL, packed, bias, &post, y[i]); break;
            }
            if (i > 0 && amp_fast_conv_taps_taken() == taken)
                fail_msg("%s: pass %d did not take taps mode", c->what, pass);
        }
        amp_fast_conv_allow_taps(1);
        for (int i = 1; i < 3; i++) {
            if (memcmp(y[0], y[i], (size_t)ny * 2) != 0)
                fail_msg("%s: pass %d: taps mode on %d thread(s) differs from the packed path", c->what, pass, i);
            if (pass >= 2 && memcmp(raw[0], raw[i], (size_t)ny * 2) != 0)
                fail_msg("%s: pass %d: taps mode's raw output on %d thread(s) differs", c->what, pass, i);
        }
    }

    /* the stride-1 transposed convolution of the same shape: dy of y's
     * shape in, x's shape out (a convolution's input gradient) */
    tr = d;
    tr.in_channels = d.out_channels;
    tr.out_channels = d.in_channels;
    for (int i = 0; i < 3; i++) {
        tr.in_size[i] = d.out_size[i];
        tr.out_size[i] = d.in_size[i];
    }
    /* (as a convolution, when its padding dilation (kernel - 1) - padding
     * is not negative: its K, in_channels / groups x taps, must be a
     * multiple of the kernel's pairing) */
    if (tr.in_channels / tr.groups * kplane % kpair == 0 && tr.padding[0] <= (tr.kernel[0] - 1) * tr.dilation[0] &&
        (tr.nspatial < 2 || tr.padding[1] <= (tr.kernel[1] - 1) * tr.dilation[1])) {
        for (int i = 0; i < 3; i++) {
            y[i] = realloc(y[i], (size_t)nx * 2);
            assert_non_null(y[i]);
            amp_fast_conv_allow_taps(i > 0);
            amp_set_threads(i == 2 ? 2 : 1);
            taken = amp_fast_conv_taps_taken();
            k->conv_transpose_bf16(&tr, res, w, NULL, y[i]);
            if (i > 0 && amp_fast_conv_taps_taken() == taken)
                fail_msg("%s: the transposed convolution did not take taps mode", c->what);
        }
        amp_fast_conv_allow_taps(1);
        for (int i = 1; i < 3; i++)
            if (memcmp(y[0], y[i], (size_t)nx * 2) != 0)
                fail_msg("%s: transposed, taps mode on %d thread(s) differs from the packed path", c->what, i);
    }
    amp_set_threads(0);
    for (int i = 0; i < 3; i++) {
        free(y[i]);
        free(raw[i]);
    }
    free(x);
    free(w);
    free(bias);
    free(res);
    free(mean);
    free(var);
    free(gamma);
    free(beta);
    free(packed);
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
            run_case(k, types[ti], &cases[i]);
            run_backward_weight(k, types[ti], &cases[i]);
            run_transpose(k, types[ti], &cases[i]);
        }
        for (size_t i = 0; i < sizeof transpose_cases / sizeof transpose_cases[0]; i++)
            run_transpose(k, types[ti], &transpose_cases[i]);
        for (size_t i = 0; i < sizeof wgrad_cases / sizeof wgrad_cases[0]; i++)
            run_backward_weight(k, types[ti], &wgrad_cases[i]);
        for (size_t i = 0; i < sizeof im2col_cases / sizeof im2col_cases[0]; i++)
            run_case(k, types[ti], &im2col_cases[i]);
        for (size_t i = 0; i < sizeof taps_cases / sizeof taps_cases[0]; i++) {
            run_case(k, types[ti], &taps_cases[i]);
            if (types[ti] == AMP_BF16 && (strcmp(k->isa, "avx512bf16") == 0 || strcmp(k->isa, "avx2") == 0))
                run_taps(k, &taps_cases[i], strcmp(k->isa, "avx512bf16") == 0 ? 2 : 1);
        }
        run_nan(k, types[ti]);
        run_wgrad_inf(k, types[ti]);
    }
    amp_set_threads(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
