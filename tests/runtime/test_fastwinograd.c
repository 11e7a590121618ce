/*
 * test_fastwinograd.c - the optimized convolutions' Winograd path
 * (frame/conv_winograd.c: 3 x 3, stride 1, bf16 and f16 storage on the
 * set's f32 micro-kernel) of every kernel set this CPU supports, forced
 * on with amp_conv_winograd_policy, against an oracle in double.
 *
 * The bound: F(4 x 4, 3 x 3) rounds in its transforms, whose terms can
 * be larger than the direct sum's, so the f32 part of the bound runs over
 * the magnitude of its own evaluation, mag_w: the same algorithm in double
 * on |x|, |w| and the transforms' entries taken absolute, which bounds
 * every intermediate value along the way.  Then
 *     |y - oracle| <= u_T |oracle| + (1 + u_T) (cin + 40) 2^-24 mag_w + floor_T
 * (the sum over cin input channels, and at most 34 roundings along any
 * path through the transforms, each of relative error 2^-24).  The
 * transforms here are written out again from the paper's matrices, and
 * the oracle is the direct sum, so a wrong transform fails the oracle.
 *
 * Checked on each set where the path applies: conv on 1 and 2 threads
 * (the same bits) within the bound, and that it took the path; conv_ex
 * with packed weights and without, bit for bit conv; conv_ex's relu and
 * residual, bit for bit conv then the add and relu kernels; the stride-1
 * transposed convolution (flipped weights) within the bound; and that the
 * cost model (policy 0) leaves a small problem on the direct sums.
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

/* F(4 x 4, 3 x 3) (Lavin and Gray, 2016): B', G, A'. */
static const double BT[6][6] = {
    { 4, 0, -5, 0, 1, 0 },  { 0, -4, -4, 1, 1, 0 }, { 0, 4, -4, -1, 1, 0 },
    { 0, -2, -1, 2, 1, 0 }, { 0, 2, -1, -2, 1, 0 }, { 0, 4, 0, -5, 0, 1 },
};
static const double G[6][3] = {
    { 1.0 / 4, 0, 0 },
    { -1.0 / 6, -1.0 / 6, -1.0 / 6 },
    { -1.0 / 6, 1.0 / 6, -1.0 / 6 },
    { 1.0 / 24, 1.0 / 12, 1.0 / 6 },
    { 1.0 / 24, -1.0 / 12, 1.0 / 6 },
    { 0, 0, 1 },
};
static const double AT[4][6] = {
    { 1, 1, 1, 1, 1, 0 },
    { 0, 1, -1, 2, -2, 0 },
    { 0, 1, 1, 4, 4, 0 },
    { 0, 1, -1, 8, -8, 1 },
};

typedef struct {
    const char *what;
    int64_t batch, cin, cout, in_h, in_w, pad;
    int bias;
} wcase;

static const wcase cases[] = {
    /* outputs no multiple of 4, tiles across images, a part last block */
    { "odd plane, bias", 2, 5, 7, 9, 11, 1, 1 },
    { "no padding", 3, 16, 20, 10, 13, 0, 0 },
    { "padding 2", 1, 9, 13, 6, 5, 2, 1 },
    /* several blocks of tiles and of output channels, rows past mr */
    { "many tiles", 2, 24, 50, 23, 21, 1, 1 },
    /* input channels beyond one k block (256) */
    { "cin over a k block", 1, 300, 17, 6, 7, 1, 1 },
    { "one output", 1, 16, 16, 3, 3, 0, 1 },
};

static void fill_desc(const wcase *c, amp_conv_desc *d)
{
    memset(d, 0, sizeof *d);
    d->nspatial = 2;
    d->batch = c->batch;
    d->in_channels = c->cin;
    d->out_channels = c->cout;
    d->groups = 1;
    d->in_size[0] = c->in_h;
    d->in_size[1] = c->in_w;
    for (int i = 0; i < 2; i++) {
        d->kernel[i] = 3;
        d->stride[i] = 1;
        d->dilation[i] = 1;
        d->padding[i] = c->pad;
        d->out_size[i] = d->in_size[i] + 2 * c->pad - 2;
    }
}

/* w's kernel (co, ci) as a 3 x 3 of doubles: the convolution's weights
 * ([cout][cin][3][3]), or the transposed convolution's ([cin][cout][3][3]),
 * flipped, which that is a convolution with. */
static void kernel_of(amp_dtype t, const void *w, int transposed, int64_t cin, int64_t cout, int64_t co, int64_t ci,
                      double g[3][3])
{
    for (int kh = 0; kh < 3; kh++)
        for (int kw = 0; kw < 3; kw++)
            g[kh][kw] = transposed ? ld(t, w, ((ci * cout + co) * 3 + 2 - kh) * 3 + 2 - kw)
                                   : ld(t, w, ((co * cin + ci) * 3 + kh) * 3 + kw);
}

/* For every output: the oracle (the direct sum in double) into s, and
 * mag_w into mag, of y = conv(x, w) + bias with d's shape (padding pad). */
static void oracle(amp_dtype t, const amp_conv_desc *d, const void *x, const void *w, int transposed,
                   const void *bias, double *s, double *mag)
{
    const int64_t cin = d->in_channels, cout = d->out_channels, ih = d->in_size[0], iw = d->in_size[1];
    const int64_t oh = d->out_size[0], ow = d->out_size[1], pad = d->padding[0];
    const int64_t th = (oh + 3) / 4, tw = (ow + 3) / 4;
    double(*au)[36] = malloc((size_t)(cout * cin) * sizeof *au);
    assert_non_null(au);
    /* |G| |g| |G'| per kernel */
    for (int64_t co = 0; co < cout; co++)
        for (int64_t ci = 0; ci < cin; ci++) {
            double g[3][3], h[6][3];
            kernel_of(t, w, transposed, cin, cout, co, ci, g);
            for (int a = 0; a < 6; a++)
                for (int c = 0; c < 3; c++) {
                    h[a][c] = 0;
                    for (int r = 0; r < 3; r++)
                        h[a][c] += fabs(G[a][r]) * fabs(g[r][c]);
                }
            for (int a = 0; a < 6; a++)
                for (int b = 0; b < 6; b++) {
                    double v = 0;
                    for (int c = 0; c < 3; c++)
                        v += h[a][c] * fabs(G[b][c]);
                    au[co * cin + ci][a * 6 + b] = v;
                }
        }
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t ty = 0; ty < th; ty++)
            for (int64_t tx = 0; tx < tw; tx++) {
                double(*av)[36] = malloc((size_t)cin * sizeof *av);
                assert_non_null(av);
                /* |B'| |d| |B| per input channel */
                for (int64_t ci = 0; ci < cin; ci++) {
                    double dd[6][6], h[6][6];
                    for (int r = 0; r < 6; r++)
                        for (int c = 0; c < 6; c++) {
                            const int64_t iy = ty * 4 - pad + r, ix = tx * 4 - pad + c;
                            dd[r][c] = iy >= 0 && iy < ih && ix >= 0 && ix < iw
                                           ? fabs(ld(t, x, ((n * cin + ci) * ih + iy) * iw + ix))
                                           : 0;
                        }
                    for (int a = 0; a < 6; a++)
                        for (int c = 0; c < 6; c++) {
                            h[a][c] = 0;
                            for (int r = 0; r < 6; r++)
                                h[a][c] += fabs(BT[a][r]) * dd[r][c];
                        }
                    for (int a = 0; a < 6; a++)
                        for (int b = 0; b < 6; b++) {
                            double v = 0;
                            for (int c = 0; c < 6; c++)
                                v += h[a][c] * fabs(BT[b][c]);
                            av[ci][a * 6 + b] = v;
                        }
                }
                for (int64_t co = 0; co < cout; co++)
                    for (int i = 0; i < 4 && ty * 4 + i < oh; i++)
                        for (int j = 0; j < 4 && tx * 4 + j < ow; j++) {
                            const int64_t oy = ty * 4 + i, ox = tx * 4 + j;
                            const int64_t yi = ((n * cout + co) * oh + oy) * ow + ox;
                            double sum = 0, m = 0;
                            for (int64_t ci = 0; ci < cin; ci++) {
                                double g[3][3];
                                kernel_of(t, w, transposed, cin, cout, co, ci, g);
                                for (int kh = 0; kh < 3; kh++)
                                    for (int kw = 0; kw < 3; kw++) {
                                        const int64_t iy = oy - pad + kh, ix = ox - pad + kw;
                                        if (iy >= 0 && iy < ih && ix >= 0 && ix < iw)
                                            sum += ld(t, x, ((n * cin + ci) * ih + iy) * iw + ix) * g[kh][kw];
                                    }
                                for (int a = 0; a < 6; a++)
                                    for (int b = 0; b < 6; b++)
                                        m += fabs(AT[i][a]) * fabs(AT[j][b]) * au[co * cin + ci][a * 6 + b] *
                                             av[ci][a * 6 + b];
                            }
                            if (bias != NULL) {
                                sum += ld(t, bias, co);
                                m += fabs(ld(t, bias, co));
                            }
                            s[yi] = sum;
                            mag[yi] = m;
                        }
                free(av);
            }
    free(au);
}

static void check_bound(const char *isa, amp_dtype t, const char *what, const amp_conv_desc *d, const void *y,
                        const double *s, const double *mag)
{
    const double u = unit_roundoff(t);
    const int64_t ny = d->batch * d->out_channels * d->out_size[0] * d->out_size[1];
    for (int64_t i = 0; i < ny; i++) {
        const double v = ld(t, y, i);
        const double bound = u * fabs(s[i]) + (1 + u) * (double)(d->in_channels + 40) * 0x1p-24 * mag[i] +
                             underflow_floor(t);
        if (!(fabs(v - s[i]) <= bound))
            fail_msg("%s %s %s [%lld]: got %.9g, oracle %.9g, bound %.3g", isa, amp_dtype_name(t), what,
                     (long long)i, v, s[i], bound);
    }
}

static void run_case(const amp_kernel_table *k, amp_dtype t, const wcase *c)
{
    amp_conv_desc d;
    fill_desc(c, &d);
    const int64_t nx = d.batch * d.in_channels * d.in_size[0] * d.in_size[1];
    const int64_t nw = d.out_channels * d.in_channels * 9;
    const int64_t ny = d.batch * d.out_channels * d.out_size[0] * d.out_size[1];
    const size_t es = amp_dtype_size(t), ybytes = (size_t)ny * es;
    void *x = random_buf(t, (size_t)nx), *w = random_buf(t, (size_t)nw), *res = random_buf(t, (size_t)ny);
    void *bias = c->bias ? random_buf(t, (size_t)d.out_channels) : NULL;
    void *y[2], *yex = malloc(ybytes), *ypost = malloc(ybytes), *want = malloc(ybytes);
    double *s = malloc((size_t)ny * sizeof *s), *mag = malloc((size_t)ny * sizeof *mag);
    void *packed;
    size_t packed_bytes;
    int64_t taken;
    assert_non_null(yex);
    assert_non_null(ypost);
    assert_non_null(want);
    assert_non_null(s);
    assert_non_null(mag);

    amp_conv_winograd_policy(1);
    taken = amp_fast_conv_winograd_taken();
    for (int th = 0; th < 2; th++) {
        y[th] = malloc(ybytes);
        assert_non_null(y[th]);
        amp_set_threads(th + 1);
        KCALL(k, t, conv, &d, x, w, bias, y[th]);
    }
    if (amp_fast_conv_winograd_taken() != taken + 2)
        fail_msg("%s %s %s: the convolution did not take the Winograd path", k->isa, amp_dtype_name(t), c->what);
    assert_memory_equal(y[0], y[1], ybytes);
    oracle(t, &d, x, w, 0, bias, s, mag);
    check_bound(k->isa, t, c->what, &d, y[0], s, mag);

    /* conv_ex: packed weights (packed from t and from f32 source weights)
     * and not, the same bits */
    packed_bytes = t == AMP_BF16 ? k->conv_packed_bytes_bf16(&d) : k->conv_packed_bytes_f16(&d);
    assert_int_equal(posix_memalign(&packed, 64, packed_bytes), 0);
    KCALL(k, t, conv_ex, &d, x, w, NULL, bias, NULL, yex);
    if (memcmp(yex, y[0], ybytes) != 0)
        fail_msg("%s %s %s: conv_ex differs from conv", k->isa, amp_dtype_name(t), c->what);
    {
        float *w32 = malloc((size_t)nw * sizeof *w32);
        assert_non_null(w32);
        for (int64_t i = 0; i < nw; i++)
            w32[i] = (float)ld(t, w, i);
        KCALL(k, t, conv_pack_weights, &d, AMP_F32, w32, packed);
        free(w32);
    }
    memset(yex, 0, ybytes);
    KCALL(k, t, conv_ex, &d, x, w, packed, bias, NULL, yex);
    if (memcmp(yex, y[0], ybytes) != 0)
        fail_msg("%s %s %s: conv_ex with weights packed from f32 differs from conv", k->isa, amp_dtype_name(t),
                 c->what);
    KCALL(k, t, conv_pack_weights, &d, t, w, packed);
    memset(yex, 0, ybytes);
    KCALL(k, t, conv_ex, &d, x, w, packed, bias, NULL, yex);
    if (memcmp(yex, y[0], ybytes) != 0)
        fail_msg("%s %s %s: conv_ex with packed weights differs from conv", k->isa, amp_dtype_name(t), c->what);

    /* conv_ex's residual and relu: conv's values, plus the residual, rounded, then relu */
    {
        amp_conv_post post;
        memset(&post, 0, sizeof post);
        post.residual = res;
        post.relu = 1;
        KCALL(k, t, conv_ex, &d, x, w, packed, bias, &post, ypost);
        /* the public kernels under whichever set AMPRT_ISA chose: the
         * same bits as every set's (test_fasteltwise.c) */
        if (t == AMP_BF16) {
            amp_add_bf16((size_t)ny, y[0], res, want);
            amp_relu_bf16((size_t)ny, want, want);
        } else {
            amp_add_f16((size_t)ny, y[0], res, want);
            amp_relu_f16((size_t)ny, want, want);
        }
        if (memcmp(ypost, want, ybytes) != 0)
            fail_msg("%s %s %s: conv_ex's residual and relu differ from conv, add, relu", k->isa,
                     amp_dtype_name(t), c->what);
    }

    /* the transposed convolution at stride 1: weights [cin][cout][3][3],
     * padding 2 - pad as a convolution */
    if (c->pad <= 2) {
        amp_conv_desc dt = d;
        amp_conv_desc dc = d; /* the convolution it is, for the oracle */
        void *wt = random_buf(t, (size_t)nw);
        void *yt = malloc(ybytes);
        assert_non_null(yt);
        dt.padding[0] = dt.padding[1] = 2 - c->pad;
        /* transposed: out = in - 2 (2 - pad) + 2 = in + 2 pad - 2, as the convolution's */
        taken = amp_fast_conv_winograd_taken();
        KCALL(k, t, conv_transpose, &dt, x, wt, bias, yt);
        if (amp_fast_conv_winograd_taken() != taken + 1)
            fail_msg("%s %s %s: the transposed convolution did not take the Winograd path", k->isa,
                     amp_dtype_name(t), c->what);
        oracle(t, &dc, x, wt, 1, bias, s, mag);
        check_bound(k->isa, t, "transposed", &dc, yt, s, mag);
        free(wt);
        free(yt);
    }

    amp_conv_winograd_policy(0);
    amp_set_threads(0);
    free(packed);
    free(x);
    free(w);
    free(res);
    free(bias);
    free(y[0]);
    free(y[1]);
    free(yex);
    free(ypost);
    free(want);
    free(s);
    free(mag);
}

/* Whether the path applies to t on k's convolutions (a set with an f32
 * micro-kernel for them); probed through the policy with a shape it
 * always takes when it applies. */
static int applies(const amp_kernel_table *k, amp_dtype t)
{
    const wcase c = { "probe", 1, 4, 4, 4, 4, 1, 0 };
    amp_conv_desc d;
    void *x, *w, *y;
    int64_t before;
    fill_desc(&c, &d);
    x = random_buf(t, 64);
    w = random_buf(t, 144);
    y = malloc(64 * amp_dtype_size(t));
    assert_non_null(y);
    amp_conv_winograd_policy(1);
    before = amp_fast_conv_winograd_taken();
    KCALL(k, t, conv, &d, x, w, NULL, y);
    amp_conv_winograd_policy(0);
    free(x);
    free(w);
    free(y);
    return amp_fast_conv_winograd_taken() > before;
}

/* The cost model keeps a small problem (batch 1, 16 x 16 channels, a 4 x 4
 * plane) on the direct sums; policy -1 keeps every shape there. */
static void run_cost_model(const amp_kernel_table *k, amp_dtype t)
{
    const wcase small = { "small", 1, 16, 16, 4, 4, 1, 0 }, large = { "large", 2, 32, 32, 30, 30, 1, 0 };
    amp_conv_desc d;
    void *x, *w, *y;
    int64_t before;
    fill_desc(&small, &d);
    x = random_buf(t, 2 * 32 * 30 * 30);
    w = random_buf(t, 32 * 32 * 9);
    y = malloc(2 * 32 * 30 * 30 * amp_dtype_size(t));
    assert_non_null(y);
    before = amp_fast_conv_winograd_taken();
    KCALL(k, t, conv, &d, x, w, NULL, y);
    if (amp_fast_conv_winograd_taken() != before)
        fail_msg("%s %s: the cost model took the Winograd path for a 1 x 16 x 4 x 4 convolution", k->isa,
                 amp_dtype_name(t));
    fill_desc(&large, &d);
    before = amp_fast_conv_winograd_taken();
    KCALL(k, t, conv, &d, x, w, NULL, y);
    /* (where the direct products are bf16 pairs, at twice the f32 rate,
     * the model wants larger planes) */
    if (amp_fast_conv_winograd_taken() != before + 1 && !(t == AMP_BF16 && strcmp(k->isa, "avx512bf16") == 0))
        fail_msg("%s %s: the cost model left a 2 x 32 x 30 x 30 convolution direct", k->isa, amp_dtype_name(t));
    amp_conv_winograd_policy(-1);
    before = amp_fast_conv_winograd_taken();
    KCALL(k, t, conv, &d, x, w, NULL, y);
    amp_conv_winograd_policy(0);
    if (amp_fast_conv_winograd_taken() != before)
        fail_msg("%s %s: policy -1 took the Winograd path", k->isa, amp_dtype_name(t));
    free(x);
    free(w);
    free(y);
}

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_BF16, AMP_F16 };
    int any = 0;
    if (k == NULL)
        skip();
    for (size_t ti = 0; ti < 2; ti++) {
        if (!applies(k, types[ti])) {
            printf("   %s %s: the Winograd path does not apply (no f32 micro-kernel for it)\n", isa,
                   amp_dtype_name(types[ti]));
            continue;
        }
        any = 1;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(k, types[ti], &cases[i]);
        run_cost_model(k, types[ti]);
    }
    /* the x86 sets have their f32 kernel: the path must reach them */
    if (strcmp(isa, "avx2") == 0 || strcmp(isa, "avx512") == 0 || strcmp(isa, "avx512bf16") == 0)
        assert_true(any);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ISA_UNIT_TESTS(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
