/*
 * test_conv.c - conv, conv_transpose and conv_tbc, every dtype, through the
 * public and the reference table, against oracles in double computed from
 * the same rounded inputs; and fixed cases against PyTorch's f64 results
 * (tests/runtime/torch_spatial.py; skipped, saying so, without torch).
 *
 * The oracles are written differently from the kernels: conv gathers per
 * output with per-dim arrays, conv_transpose scatters each input element
 * through each kernel tap (the kernel gathers). Error bound as in
 * test_kernels.c: u_T |oracle| + (1 + u_T) acc + floor_T, with acc =
 * (taps + 2) u_acc sum |terms|, u_acc the compute type's unit roundoff.
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_RNG_SEED 0x2545f4914f6cdd1dull
#define KTU_F64_FLOOR 0.0L /* no f64 underflow in these tests */
#include "kernel_test_util.h"

/* A dot product of K terms plus a bias, in the compute type. */
static double dot_bound(amp_dtype t, int64_t K, double sum_abs)
{
    return (double)(K + 2) * u_acc(t) * sum_abs;
}

/* ---- Cases ---------------------------------------------------------------- */

typedef struct {
    const char *what;
    int nspatial;
    int64_t batch, in_channels, out_channels, groups;
    int64_t in[3], kernel[3], stride[3], padding[3], dilation[3], output_padding[3];
    int has_bias;
} conv_case;

static const conv_case conv_cases[] = {
    { "1-d plain", 1, 2, 3, 4, 1, { 9 }, { 3 }, { 1 }, { 0 }, { 1 }, { 0 }, 1 },
    { "1-d stride > kernel, padding", 1, 1, 2, 3, 1, { 10 }, { 2 }, { 3 }, { 1 }, { 1 }, { 2 }, 0 },
    { "1-d depthwise (groups = channels), dilation", 1, 2, 4, 4, 4, { 11 }, { 3 }, { 1 }, { 2 }, { 3 }, { 0 }, 1 },
    { "2-d odd sizes, stride, padding, dilation, groups", 2, 2, 4, 6, 2, { 7, 6 }, { 3, 2 }, { 2, 1 }, { 1, 0 },
      { 2, 1 }, { 1, 0 }, 1 },
    { "2-d kernel larger than input, with padding", 2, 1, 2, 2, 1, { 2, 3 }, { 4, 5 }, { 1, 2 }, { 2, 2 }, { 1, 1 },
      { 0, 1 }, 1 },
    { "2-d 1x1", 2, 3, 5, 2, 1, { 4, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, { 0, 0 }, 1 },
    { "2-d depthwise multiplier 2", 2, 1, 3, 6, 3, { 5, 5 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    { "3-d", 3, 1, 2, 4, 2, { 4, 5, 3 }, { 2, 3, 2 }, { 1, 2, 1 }, { 1, 1, 0 }, { 1, 1, 2 }, { 0, 1, 0 }, 1 },
    { "empty batch", 2, 0, 2, 3, 1, { 4, 4 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, 1 },
    { "long reduction", 1, 1, 64, 2, 1, { 40 }, { 7 }, { 1 }, { 3 }, { 1 }, { 0 }, 1 },
};

static int64_t conv_out_size(const conv_case *c, int i, int transposed)
{
    if (transposed)
        return (c->in[i] - 1) * c->stride[i] - 2 * c->padding[i] + c->dilation[i] * (c->kernel[i] - 1) +
               c->output_padding[i] + 1;
    return (c->in[i] + 2 * c->padding[i] - c->dilation[i] * (c->kernel[i] - 1) - 1) / c->stride[i] + 1;
}

static amp_conv_desc desc_of(const conv_case *c, int transposed)
{
    amp_conv_desc d;
    memset(&d, 0, sizeof d);
    d.nspatial = c->nspatial;
    d.batch = c->batch;
    d.in_channels = c->in_channels;
    d.out_channels = c->out_channels;
    d.groups = c->groups;
    for (int i = 0; i < c->nspatial; i++) {
        d.in_size[i] = c->in[i];
        d.out_size[i] = conv_out_size(c, i, transposed);
        d.kernel[i] = c->kernel[i];
        d.stride[i] = c->stride[i];
        d.padding[i] = c->padding[i];
        d.dilation[i] = c->dilation[i];
        d.output_padding[i] = c->output_padding[i];
    }
    return d;
}

static int64_t product(int n, const int64_t *v)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

/* Row-major offset of coordinates pos[0..n) in a box of sizes size[0..n). */
static int64_t flat(int n, const int64_t *pos, const int64_t *size)
{
    int64_t f = 0;
    for (int i = 0; i < n; i++)
        f = f * size[i] + pos[i];
    return f;
}

/* Coordinates of flat index f in a box of sizes size[0..n). */
static void unflat(int n, int64_t f, const int64_t *size, int64_t *pos)
{
    for (int i = n - 1; i >= 0; i--) {
        pos[i] = f % size[i];
        f /= size[i];
    }
}

/* Oracle y and acc bound for conv, gathering per output. */
static void conv_oracle(const amp_conv_desc *d, const tensor *x, const tensor *w, const tensor *bias, double *y,
                        double *acc)
{
    int ns = d->nspatial;
    int64_t cin_g = d->in_channels / d->groups, cout_g = d->out_channels / d->groups;
    int64_t out_n = product(ns, d->out_size), k_n = product(ns, d->kernel), in_n = product(ns, d->in_size);
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t co = 0; co < d->out_channels; co++)
            for (int64_t of = 0; of < out_n; of++) {
                int64_t o[3], k[3], ip[3];
                double sum = 0.0, sum_abs = 0.0;
                unflat(ns, of, d->out_size, o);
                for (int64_t c = 0; c < cin_g; c++)
                    for (int64_t kf = 0; kf < k_n; kf++) {
                        int inside = 1;
                        unflat(ns, kf, d->kernel, k);
                        for (int i = 0; i < ns; i++) {
                            ip[i] = o[i] * d->stride[i] - d->padding[i] + k[i] * d->dilation[i];
                            inside &= ip[i] >= 0 && ip[i] < d->in_size[i];
                        }
                        if (!inside)
                            continue;
                        double term = get(x, (size_t)((n * d->in_channels + (co / cout_g) * cin_g + c) * in_n +
                                                      flat(ns, ip, d->in_size))) *
                                      get(w, (size_t)((co * cin_g + c) * k_n + kf));
                        sum += term;
                        sum_abs += fabs(term);
                    }
                if (bias != NULL) {
                    sum += get(bias, (size_t)co);
                    sum_abs += fabs(get(bias, (size_t)co));
                }
                y[(n * d->out_channels + co) * out_n + of] = sum;
                acc[(n * d->out_channels + co) * out_n + of] = sum_abs;
            }
}

/* Oracle for conv_transpose: each input element scattered through each
 * kernel tap to i*stride - padding + k*dilation. */
static void conv_transpose_oracle(const amp_conv_desc *d, const tensor *x, const tensor *w, const tensor *bias,
                                  double *y, double *acc)
{
    int ns = d->nspatial;
    int64_t cin_g = d->in_channels / d->groups, cout_g = d->out_channels / d->groups;
    int64_t out_n = product(ns, d->out_size), k_n = product(ns, d->kernel), in_n = product(ns, d->in_size);
    int64_t total = d->batch * d->out_channels * out_n;
    for (int64_t j = 0; j < total; j++) {
        double b = bias != NULL ? get(bias, (size_t)(j / out_n % d->out_channels)) : 0.0;
        y[j] = b;
        acc[j] = fabs(b);
    }
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t ci = 0; ci < d->in_channels; ci++)
            for (int64_t inf = 0; inf < in_n; inf++)
                for (int64_t c = 0; c < cout_g; c++)
                    for (int64_t kf = 0; kf < k_n; kf++) {
                        int64_t ip[3], k[3], o[3];
                        int inside = 1;
                        unflat(ns, inf, d->in_size, ip);
                        unflat(ns, kf, d->kernel, k);
                        for (int i = 0; i < ns; i++) {
                            o[i] = ip[i] * d->stride[i] - d->padding[i] + k[i] * d->dilation[i];
                            inside &= o[i] >= 0 && o[i] < d->out_size[i];
                        }
                        if (!inside)
                            continue;
                        int64_t co = (ci / cin_g) * cout_g + c;
                        int64_t at = (n * d->out_channels + co) * out_n + flat(ns, o, d->out_size);
                        double term = get(x, (size_t)((n * d->in_channels + ci) * in_n + inf)) *
                                      get(w, (size_t)((ci * cout_g + c) * k_n + kf));
                        y[at] += term;
                        acc[at] += fabs(term);
                    }
}

static void check_conv_case(const conv_case *c, int transposed)
{
    amp_conv_desc d = desc_of(c, transposed);
    int ns = c->nspatial;
    int64_t in_n = product(ns, d.in_size), out_n = product(ns, d.out_size), k_n = product(ns, d.kernel);
    size_t x_n = (size_t)(d.batch * d.in_channels * in_n);
    size_t w_n = (size_t)(transposed ? d.in_channels * (d.out_channels / d.groups) * k_n
                                     : d.out_channels * (d.in_channels / d.groups) * k_n);
    size_t y_n = (size_t)(d.batch * d.out_channels * out_n);
    int64_t taps = (transposed ? d.in_channels : d.in_channels / d.groups) * k_n;
    for (int di = 0; di < NDTYPES; di++) {
        amp_dtype t = dtypes[di];
        tensor x = tensor_random(t, x_n, -2.0, 2.0), w = tensor_random(t, w_n, -1.0, 1.0);
        tensor bias = tensor_random(t, (size_t)d.out_channels, -1.0, 1.0), y[NTABLES];
        const tensor *b = c->has_bias ? &bias : NULL;
        double *oracle = malloc((y_n ? y_n : 1) * sizeof *oracle), *sum_abs = malloc((y_n ? y_n : 1) * sizeof *sum_abs);
        assert_non_null(oracle);
        assert_non_null(sum_abs);
        if (transposed)
            conv_transpose_oracle(&d, &x, &w, b, oracle, sum_abs);
        else
            conv_oracle(&d, &x, &w, b, oracle, sum_abs);
        for (int e = 0; e < NTABLES; e++) {
            y[e] = tensor_random(t, y_n, 50.0, 60.0); /* garbage the kernel must overwrite */
            if (transposed)
                KCALL(tables[e], t, conv_transpose, &d, x.data, w.data, b ? b->data : NULL, y[e].data);
            else
                KCALL(tables[e], t, conv, &d, x.data, w.data, b ? b->data : NULL, y[e].data);
            for (size_t i = 0; i < y_n; i++)
                expect_close(&y[e], i, oracle[i], dot_bound(t, taps, sum_abs[i]), c->what);
        }
        expect_public_equals_ref(&y[0], &y[1]);
        free(oracle);
        free(sum_abs);
        tensor_free(&x);
        tensor_free(&w);
        tensor_free(&bias);
        tensor_free(&y[0]);
        tensor_free(&y[1]);
    }
}

static void test_conv(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
        check_conv_case(&conv_cases[i], 0);
}

static void test_conv_transpose(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
        check_conv_case(&conv_cases[i], 1);
}

/* Accumulating in the storage dtype would fail this: 448 terms of
 * 1 + 2^-7 (exact in bf16), whose running bf16 sum loses the 2^-7s once
 * it passes 128. */
static void test_conv_accumulates_in_f32(void **state)
{
    amp_conv_desc d;
    (void)state;
    memset(&d, 0, sizeof d);
    d.nspatial = 1;
    d.batch = 1;
    d.in_channels = 64;
    d.out_channels = 1;
    d.groups = 1;
    d.in_size[0] = 7;
    d.out_size[0] = 1;
    d.kernel[0] = 7;
    d.stride[0] = d.dilation[0] = 1;
    for (int e = 0; e < NTABLES; e++) {
        tensor x = tensor_new(AMP_BF16, 448), w = tensor_new(AMP_BF16, 448), y = tensor_new(AMP_BF16, 1);
        for (size_t i = 0; i < 448; i++) {
            set(&x, i, 1.0 + 0x1p-7);
            set(&w, i, 1.0);
        }
        KCALL(tables[e], AMP_BF16, conv, &d, x.data, w.data, NULL, y.data);
        /* 448 (1 + 2^-7) = 451.5, which rounds to bf16 452. */
        assert_true(get(&y, 0) == 452.0);
        tensor_free(&x);
        tensor_free(&w);
        tensor_free(&y);
    }
}

static void test_conv_tbc(void **state)
{
    static const int64_t shapes[][6] = {
        /* time, batch, in, kernel, out, pad */
        { 7, 2, 3, 3, 4, 1 }, { 5, 1, 2, 1, 3, 0 }, { 2, 2, 2, 4, 2, 2 }, { 4, 0, 2, 2, 2, 1 }, { 9, 1, 16, 5, 1, 0 },
    };
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int di = 0; di < NDTYPES; di++) {
            const int64_t *sh = shapes[s];
            int64_t T = sh[0], B = sh[1], I = sh[2], K = sh[3], O = sh[4], P = sh[5], OT = T + 2 * P - K + 1;
            amp_dtype t = dtypes[di];
            tensor x = tensor_random(t, (size_t)(T * B * I), -2, 2), w = tensor_random(t, (size_t)(K * I * O), -1, 1);
            tensor bias = tensor_random(t, (size_t)O, -1, 1), y[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, (size_t)(OT * B * O));
                KCALL(tables[e], t, conv_tbc, T, B, I, K, O, P, x.data, w.data, bias.data, y[e].data);
                for (int64_t ot = 0; ot < OT; ot++)
                    for (int64_t b = 0; b < B; b++)
                        for (int64_t o = 0; o < O; o++) {
                            double sum = get(&bias, (size_t)o), sum_abs = fabs(sum);
                            for (int64_t k = 0; k < K; k++)
                                for (int64_t i = 0; i < I; i++) {
                                    int64_t it = ot + k - P;
                                    double term;
                                    if (it < 0 || it >= T)
                                        continue;
                                    term = get(&x, (size_t)((it * B + b) * I + i)) *
                                           get(&w, (size_t)((k * I + i) * O + o));
                                    sum += term;
                                    sum_abs += fabs(term);
                                }
                            expect_close(&y[e], (size_t)((ot * B + b) * O + o), sum, dot_bound(t, K * I, sum_abs),
                                         "conv_tbc");
                        }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&x);
            tensor_free(&w);
            tensor_free(&bias);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- PyTorch ------------------------------------------------------------------ */

/* The f64 kernel on pattern inputs against torch's f64 result. */
static void check_conv_against_torch(const conv_case *c, int transposed)
{
    amp_conv_desc d = desc_of(c, transposed);
    char args[512];
    int len, ns = c->nspatial;
    int64_t in_n = product(ns, d.in_size), out_n = product(ns, d.out_size), k_n = product(ns, d.kernel);
    size_t y_n = (size_t)(d.batch * d.out_channels * out_n);
    double expected[4096];
    len = snprintf(args, sizeof args, "%s %d %lld %lld %lld %lld", transposed ? "conv_transpose" : "conv", ns,
                   (long long)d.batch, (long long)d.in_channels, (long long)d.out_channels, (long long)d.groups);
    for (int i = 0; i < ns; i++)
        len += snprintf(args + len, sizeof args - (size_t)len, " %lld %lld %lld %lld %lld %lld", (long long)d.in_size[i],
                        (long long)d.kernel[i], (long long)d.stride[i], (long long)d.padding[i],
                        (long long)d.dilation[i], (long long)d.output_padding[i]);
    int n = torch_values(args, expected, 4096);
    if (n < 0)
        skip();
    assert_int_equal(n, (int)y_n);
    tensor x = tensor_pattern(AMP_F64, (size_t)(d.batch * d.in_channels * in_n), 1);
    tensor w = tensor_pattern(AMP_F64, (size_t)(d.in_channels * d.out_channels / d.groups * k_n), 2);
    tensor bias = tensor_pattern(AMP_F64, (size_t)d.out_channels, 3), y = tensor_new(AMP_F64, y_n);
    if (transposed)
        amp_conv_transpose_f64(&d, x.data, w.data, bias.data, y.data);
    else
        amp_conv_f64(&d, x.data, w.data, bias.data, y.data);
    /* Pattern values are multiples of 1/8 and products of 1/64: every sum
     * here is exact in double, in any order. */
    for (size_t i = 0; i < y_n; i++)
        expect_close(&y, i, expected[i], 0.0, args);
    tensor_free(&x);
    tensor_free(&w);
    tensor_free(&bias);
    tensor_free(&y);
}

static void test_conv_against_torch(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
        if (conv_cases[i].batch > 0) {
            check_conv_against_torch(&conv_cases[i], 0);
            check_conv_against_torch(&conv_cases[i], 1);
        }
}

static void test_conv_tbc_against_torch(void **state)
{
    double expected[64];
    int n = torch_values("conv_tbc 6 2 3 3 2 1", expected, 64);
    (void)state;
    if (n < 0)
        skip();
    assert_int_equal(n, 6 * 2 * 2);
    tensor x = tensor_pattern(AMP_F64, 36, 1), w = tensor_pattern(AMP_F64, 18, 2), b = tensor_pattern(AMP_F64, 2, 3);
    tensor y = tensor_new(AMP_F64, 24);
    amp_conv_tbc_f64(6, 2, 3, 3, 2, 1, x.data, w.data, b.data, y.data);
    for (size_t i = 0; i < 24; i++)
        expect_close(&y, i, expected[i], 0.0, "conv_tbc vs torch");
    tensor_free(&x);
    tensor_free(&w);
    tensor_free(&b);
    tensor_free(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_conv_accumulates_in_f32),
        cmocka_unit_test(test_conv_tbc),
        cmocka_unit_test(test_conv_against_torch),
        cmocka_unit_test(test_conv_tbc_against_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
