/*
 * test_pool.c - max_pool, avg_pool, adaptive_avg_pool, adaptive_max_pool
 * (and its gradient) and upsample, every
 * dtype, through the public and the reference table, against oracles in
 * double from the same rounded inputs; and fixed cases against PyTorch's
 * f64 results (tests/runtime/torch_spatial.py; skipped, saying so, without
 * torch), which pin the window clipping, ceil_mode-sized outputs, the
 * divisors, the max indices and the upsampling source indices.
 *
 * The oracles enumerate each window by testing every input position for
 * membership (the kernels compute the window's bounds), and upsample's
 * oracle weights all input positions by a separable kernel function.
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_RNG_SEED 0x2545f4914f6cdd1dull
#define KTU_F64_FLOOR 0.0L /* no f64 underflow in these tests */
#include "kernel_test_util.h"

/* ---- Pooling ------------------------------------------------------------------- */

typedef struct {
    const char *what;
    int nspatial;
    int64_t planes;
    int64_t in[3], kernel[3], stride[3], padding[3], dilation[3];
    int ceil_mode, count_include_pad;
    int64_t divisor_override;
} pool_case;

static const pool_case pool_cases[] = {
    { "1-d plain", 1, 3, { 9 }, { 3 }, { 2 }, { 0 }, { 1 }, 0, 1, 0 },
    { "1-d ceil_mode: last window starts in the input, runs past", 1, 2, { 10 }, { 3 }, { 3 }, { 1 }, { 1 }, 1, 0, 0 },
    { "2-d odd, padding, dilation, ceil", 2, 2, { 7, 6 }, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 2, 1 }, 1, 1, 0 },
    { "2-d stride > kernel", 2, 1, { 8, 9 }, { 2, 2 }, { 3, 4 }, { 0, 1 }, { 1, 1 }, 0, 0, 0 },
    { "2-d kernel 1x1", 2, 2, { 3, 4 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 1, 0 },
    { "2-d divisor_override", 2, 2, { 5, 5 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1, 1, 7 },
    { "3-d", 3, 2, { 4, 5, 6 }, { 2, 3, 2 }, { 2, 2, 3 }, { 1, 1, 0 }, { 1, 2, 1 }, 1, 0, 0 },
    { "no planes", 2, 0, { 4, 4 }, { 2, 2 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, 0, 1, 0 },
};

static int64_t pool_out_size(const pool_case *c, int i, int dilated)
{
    int64_t dil = dilated ? c->dilation[i] : 1;
    int64_t span = c->in[i] + 2 * c->padding[i] - dil * (c->kernel[i] - 1) - 1;
    int64_t out = (c->ceil_mode ? (span + c->stride[i] - 1) / c->stride[i] : span / c->stride[i]) + 1;
    /* PyTorch: with ceil_mode the last window must start inside the input
     * or the left padding. */
    if (c->ceil_mode && (out - 1) * c->stride[i] >= c->in[i] + c->padding[i])
        out--;
    return out;
}

static amp_pool_desc pool_desc_of(const pool_case *c, int dilated)
{
    amp_pool_desc d;
    memset(&d, 0, sizeof d);
    d.nspatial = c->nspatial;
    d.planes = c->planes;
    for (int i = 0; i < c->nspatial; i++) {
        d.in_size[i] = c->in[i];
        d.out_size[i] = pool_out_size(c, i, dilated);
        d.kernel[i] = c->kernel[i];
        d.stride[i] = c->stride[i];
        d.padding[i] = c->padding[i];
        d.dilation[i] = dilated ? c->dilation[i] : 1;
    }
    d.count_include_pad = c->count_include_pad;
    d.divisor_override = c->divisor_override;
    return d;
}

static int64_t product(int n, const int64_t *v)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

static void unflat(int n, int64_t f, const int64_t *size, int64_t *pos)
{
    for (int i = n - 1; i >= 0; i--) {
        pos[i] = f % size[i];
        f /= size[i];
    }
}

/* Is input position ip (one dim) a tap of output o's window? */
static int in_max_window(const amp_pool_desc *d, int i, int64_t o, int64_t ip)
{
    int64_t rel = ip + d->padding[i] - o * d->stride[i];
    return rel >= 0 && rel % d->dilation[i] == 0 && rel / d->dilation[i] < d->kernel[i];
}

static void check_max_pool_case(const pool_case *c)
{
    amp_pool_desc d = pool_desc_of(c, 1);
    int ns = d.nspatial;
    int64_t in_n = product(ns, d.in_size), out_n = product(ns, d.out_size);
    for (int di = 0; di < NDTYPES; di++) {
        amp_dtype t = dtypes[di];
        tensor x = tensor_random(t, (size_t)(d.planes * in_n), -3, 3), y[NTABLES];
        int64_t *idx[NTABLES];
        /* Ties (small integers) and a NaN in some planes. */
        for (size_t i = 0; i < x.n; i += 3)
            set(&x, i, floor(get(&x, i)));
        if (x.n > 5)
            set(&x, x.n / 2, NAN);
        for (int e = 0; e < NTABLES; e++) {
            y[e] = tensor_new(t, (size_t)(d.planes * out_n));
            idx[e] = malloc((size_t)(d.planes * out_n > 0 ? d.planes * out_n : 1) * sizeof(int64_t));
            assert_non_null(idx[e]);
            KCALL(tables[e], t, max_pool, &d, x.data, y[e].data, idx[e]);
            for (int64_t p = 0; p < d.planes; p++)
                for (int64_t of = 0; of < out_n; of++) {
                    int64_t o[3], ip[3], best_at = -1;
                    double best = -INFINITY;
                    for (int64_t f = 0; f < in_n; f++) {
                        int inside = 1;
                        unflat(ns, f, d.in_size, ip);
                        for (int i = 0; i < ns; i++)
                            inside &= in_max_window(&d, i, (unflat(ns, of, d.out_size, o), o[i]), ip[i]);
                        if (!inside)
                            continue;
                        double v = get(&x, (size_t)(p * in_n + f));
                        /* Row-major scan: the first maximum wins, and a
                         * NaN beats everything (so the last NaN wins). */
                        if (best_at < 0 || v > best || isnan(v)) {
                            best = v;
                            best_at = f;
                        }
                    }
                    size_t at = (size_t)(p * out_n + of);
                    assert_true(best_at >= 0);
                    expect_close(&y[e], at, best, 0.0, c->what);
                    if (!(best == -INFINITY))
                        assert_int_equal(idx[e][at], best_at);
                }
            /* indices may be NULL. */
            tensor y2 = tensor_new(t, y[e].n);
            KCALL(tables[e], t, max_pool, &d, x.data, y2.data, NULL);
            if (y2.n)
                assert_memory_equal(y2.data, y[e].data, y2.n * amp_dtype_size(t));
            tensor_free(&y2);
        }
        expect_public_equals_ref(&y[0], &y[1]);
        tensor_free(&x);
        for (int e = 0; e < NTABLES; e++) {
            tensor_free(&y[e]);
            free(idx[e]);
        }
    }
}

static void test_max_pool(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
        check_max_pool_case(&pool_cases[i]);
}

static void check_avg_pool_case(const pool_case *c)
{
    amp_pool_desc d = pool_desc_of(c, 0);
    int ns = d.nspatial;
    int64_t in_n = product(ns, d.in_size), out_n = product(ns, d.out_size);
    for (int di = 0; di < NDTYPES; di++) {
        amp_dtype t = dtypes[di];
        tensor x = tensor_random(t, (size_t)(d.planes * in_n), -3, 3), y[NTABLES];
        for (int e = 0; e < NTABLES; e++) {
            y[e] = tensor_new(t, (size_t)(d.planes * out_n));
            KCALL(tables[e], t, avg_pool, &d, x.data, y[e].data);
            for (int64_t p = 0; p < d.planes; p++)
                for (int64_t of = 0; of < out_n; of++) {
                    int64_t o[3], ip[3], count = 0, padded = 1;
                    double sum = 0, sum_abs = 0, divisor;
                    unflat(ns, of, d.out_size, o);
                    /* count_include_pad counts the window within the padded input. */
                    for (int i = 0; i < ns; i++) {
                        int64_t lo = o[i] * d.stride[i] - d.padding[i], n_in = 0;
                        for (int64_t q = lo; q < lo + d.kernel[i]; q++)
                            n_in += q < d.in_size[i] + d.padding[i];
                        padded *= n_in;
                    }
                    for (int64_t f = 0; f < in_n; f++) {
                        int inside = 1;
                        unflat(ns, f, d.in_size, ip);
                        for (int i = 0; i < ns; i++) {
                            int64_t rel = ip[i] + d.padding[i] - o[i] * d.stride[i];
                            inside &= rel >= 0 && rel < d.kernel[i];
                        }
                        if (!inside)
                            continue;
                        double v = get(&x, (size_t)(p * in_n + f));
                        sum += v;
                        sum_abs += fabs(v);
                        count++;
                    }
                    divisor = d.divisor_override > 0 ? (double)d.divisor_override
                              : d.count_include_pad  ? (double)padded
                                                     : (double)count;
                    double oracle = count == 0 ? 0.0 : sum / divisor;
                    expect_close(&y[e], (size_t)(p * out_n + of), oracle,
                                 (double)(count + 2) * u_acc(t) * sum_abs / divisor, c->what);
                }
        }
        expect_public_equals_ref(&y[0], &y[1]);
        tensor_free(&x);
        tensor_free(&y[0]);
        tensor_free(&y[1]);
    }
}

static void test_avg_pool(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
        check_avg_pool_case(&pool_cases[i]);
}

static void test_adaptive_avg_pool(void **state)
{
    static const int64_t shapes[][7] = {
        /* nspatial, in..., out... */
        { 1, 10, 3 }, { 1, 3, 7 }, { 2, 7, 5, 3, 2 }, { 2, 4, 4, 1, 1 }, { 3, 5, 3, 4, 2, 3, 3 }, { 2, 6, 9, 4, 9 },
    };
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int di = 0; di < NDTYPES; di++) {
            int ns = (int)shapes[s][0];
            const int64_t *in = &shapes[s][1], *out = &shapes[s][1 + ns];
            int64_t planes = 3, in_n = product(ns, in), out_n = product(ns, out);
            amp_dtype t = dtypes[di];
            tensor x = tensor_random(t, (size_t)(planes * in_n), -3, 3), y[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, (size_t)(planes * out_n));
                KCALL(tables[e], t, adaptive_avg_pool, ns, planes, in, out, x.data, y[e].data);
                for (int64_t p = 0; p < planes; p++)
                    for (int64_t of = 0; of < out_n; of++) {
                        int64_t o[3], ip[3], count = 0;
                        double sum = 0, sum_abs = 0;
                        unflat(ns, of, out, o);
                        for (int64_t f = 0; f < in_n; f++) {
                            int inside = 1;
                            unflat(ns, f, in, ip);
                            /* start = floor(o in / out) <= ip < ceil((o + 1) in / out) */
                            for (int i = 0; i < ns; i++)
                                inside &= o[i] * in[i] < (ip[i] + 1) * out[i] && ip[i] * out[i] < (o[i] + 1) * in[i];
                            if (inside) {
                                double v = get(&x, (size_t)(p * in_n + f));
                                sum += v;
                                sum_abs += fabs(v);
                                count++;
                            }
                        }
                        expect_close(&y[e], (size_t)(p * out_n + of), sum / (double)count,
                                     (double)(count + 4) * u_acc(t) * sum_abs / (double)count, "adaptive_avg_pool");
                    }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&x);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- upsample ----------------------------------------------------------------- */

typedef struct {
    int nspatial, mode, align_corners;
    int64_t in[3], out[3];
    double scale[3];
} up_case;

static const up_case up_cases[] = {
    { 1, AMP_UPSAMPLE_NEAREST, 0, { 10 }, { 10 }, { 1.05 } }, /* not a copy: floor(o / 1.05) */
    { 1, AMP_UPSAMPLE_NEAREST, 0, { 3 }, { 6 }, { 2.3 } },
    { 2, AMP_UPSAMPLE_NEAREST, 0, { 3, 5 }, { 7, 8 }, { 0, 0 } },
    { 2, AMP_UPSAMPLE_NEAREST, 0, { 6, 7 }, { 4, 3 }, { 0.7, 0.5 } },
    { 3, AMP_UPSAMPLE_NEAREST, 0, { 2, 3, 4 }, { 5, 3, 6 }, { 2.5, 1.0, 1.7 } },
    { 1, AMP_UPSAMPLE_LINEAR, 0, { 5 }, { 8 }, { 1.7 } },
    { 1, AMP_UPSAMPLE_LINEAR, 1, { 5 }, { 8 }, { 0 } },
    { 1, AMP_UPSAMPLE_LINEAR, 0, { 10 }, { 10 }, { 1.05 } }, /* equal sizes copy */
    { 2, AMP_UPSAMPLE_LINEAR, 0, { 4, 5 }, { 9, 3 }, { 2.3333, 0.7 } },
    { 2, AMP_UPSAMPLE_LINEAR, 1, { 4, 5 }, { 9, 1 }, { 0, 0 } },
    { 3, AMP_UPSAMPLE_LINEAR, 0, { 2, 3, 4 }, { 3, 7, 4 }, { 1.5, 2.5, 1.0 } },
    { 3, AMP_UPSAMPLE_LINEAR, 1, { 2, 3, 4 }, { 3, 7, 5 }, { 0, 0, 0 } },
    { 2, AMP_UPSAMPLE_CUBIC, 0, { 4, 5 }, { 9, 7 }, { 2.3333, 1.5 } },
    { 2, AMP_UPSAMPLE_CUBIC, 1, { 4, 5 }, { 7, 3 }, { 0, 0 } },
    { 2, AMP_UPSAMPLE_CUBIC, 0, { 1, 6 }, { 3, 4 }, { 0, 0 } },
};

static amp_upsample_desc up_desc_of(const up_case *c, int64_t planes)
{
    amp_upsample_desc d;
    memset(&d, 0, sizeof d);
    d.nspatial = c->nspatial;
    d.planes = planes;
    d.mode = c->mode;
    d.align_corners = c->align_corners;
    for (int i = 0; i < c->nspatial; i++) {
        d.in_size[i] = c->in[i];
        d.out_size[i] = c->out[i];
        d.scale[i] = c->scale[i];
    }
    return d;
}

/* f32/bf16/f16 against the f64 kernel on the same rounded inputs (the f64
 * kernel is itself pinned to PyTorch below): up to 64 taps, weights summing
 * to 1 (bicubic's absolute weights to at most 1.6^2 per output). */
/* adaptive_max_pool: each window's first largest element (its index too),
 * against a scan of the window written here; its gradient puts each dy on
 * that element, accumulating where windows overlap. */
static void test_adaptive_max_pool(void **state)
{
    static const int64_t shapes[][5] = {
        /* nspatial, in..., out... */
        { 1, 10, 3 }, { 1, 3, 7 }, { 2, 7, 5, 3, 2 }, { 2, 4, 4, 1, 1 }, { 2, 6, 9, 4, 9 },
    };
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int di = 0; di < NDTYPES; di++) {
            int ns = (int)shapes[s][0];
            const int64_t *in = &shapes[s][1], *out = &shapes[s][1 + ns];
            int64_t planes = 3, in_n = product(ns, in), out_n = product(ns, out);
            amp_dtype t = dtypes[di];
            tensor x = tensor_random(t, (size_t)(planes * in_n), -3, 3), y[NTABLES];
            tensor dy = tensor_random(t, (size_t)(planes * out_n), -1, 1), dx[NTABLES];
            int64_t *idx = malloc((size_t)(planes * out_n) * sizeof *idx);
            assert_non_null(idx);
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, (size_t)(planes * out_n));
                dx[e] = tensor_new(t, (size_t)(planes * in_n));
                KCALL(tables[e], t, adaptive_max_pool, ns, planes, in, out, x.data, y[e].data, idx);
                KCALL(tables[e], t, adaptive_max_pool_backward, ns, planes, in, out, x.data, dy.data, dx[e].data);
                double *want_dx = calloc((size_t)(planes * in_n), sizeof *want_dx);
                assert_non_null(want_dx);
                for (int64_t p = 0; p < planes; p++)
                    for (int64_t of = 0; of < out_n; of++) {
                        int64_t o[3], ip[3], best = -1;
                        unflat(ns, of, out, o);
                        for (int64_t f = 0; f < in_n; f++) {
                            int inside = 1;
                            unflat(ns, f, in, ip);
                            for (int i = 0; i < ns; i++)
                                inside &= o[i] * in[i] < (ip[i] + 1) * out[i] && ip[i] * out[i] < (o[i] + 1) * in[i];
                            if (inside && (best < 0 || get(&x, (size_t)(p * in_n + f)) > get(&x, (size_t)(p * in_n + best))))
                                best = f;
                        }
                        expect_close(&y[e], (size_t)(p * out_n + of), get(&x, (size_t)(p * in_n + best)), 0,
                                     "adaptive_max_pool");
                        assert_int_equal(idx[p * out_n + of], best);
                        want_dx[p * in_n + best] += get(&dy, (size_t)(p * out_n + of));
                    }
                for (int64_t i = 0; i < planes * in_n; i++)
                    expect_close(&dx[e], (size_t)i, want_dx[i], 4 * u_acc(t) * (fabs(want_dx[i]) + 1),
                                 "adaptive_max_pool_backward");
                free(want_dx);
            }
            expect_public_equals_ref(&y[0], &y[1]);
            expect_public_equals_ref(&dx[0], &dx[1]);
            free(idx);
            tensor_free(&x);
            tensor_free(&dy);
            for (int e = 0; e < NTABLES; e++) {
                tensor_free(&y[e]);
                tensor_free(&dx[e]);
            }
        }
}

static void test_upsample(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof up_cases / sizeof up_cases[0]; ci++)
        for (int di = 1; di < NDTYPES; di++) {
            const up_case *c = &up_cases[ci];
            amp_upsample_desc d = up_desc_of(c, 2);
            amp_dtype t = dtypes[di];
            int64_t in_n = product(c->nspatial, c->in), out_n = product(c->nspatial, c->out);
            tensor x = tensor_random(t, (size_t)(2 * in_n), -3, 3), x64 = tensor_new(AMP_F64, x.n);
            tensor y64 = tensor_new(AMP_F64, (size_t)(2 * out_n)), y[NTABLES];
            for (size_t i = 0; i < x.n; i++)
                set(&x64, i, get(&x, i));
            amp_ref_upsample_f64(&d, x64.data, y64.data);
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, y64.n);
                KCALL(tables[e], t, upsample, &d, x.data, y[e].data);
                for (size_t i = 0; i < y64.n; i++)
                    expect_close(&y[e], i, get(&y64, i),
                                 c->mode == AMP_UPSAMPLE_NEAREST ? 0.0 : 80.0 * U_F32 * 3.0 * 2.6, "upsample");
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&x);
            tensor_free(&x64);
            tensor_free(&y64);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- PyTorch ------------------------------------------------------------------ */

static void test_pool_against_torch(void **state)
{
    double expected[4096];
    (void)state;
    for (size_t ci = 0; ci < sizeof pool_cases / sizeof pool_cases[0]; ci++)
        for (int is_max = 0; is_max < 2; is_max++) {
            const pool_case *c = &pool_cases[ci];
            amp_pool_desc d = pool_desc_of(c, is_max);
            char args[512];
            int len, n;
            if (c->planes == 0 || (!is_max && c->nspatial == 1 && c->divisor_override))
                continue;
            len = snprintf(args, sizeof args, "%s %d %lld %d %d %lld", is_max ? "max_pool" : "avg_pool", c->nspatial,
                           (long long)c->planes, c->ceil_mode, c->count_include_pad, (long long)c->divisor_override);
            for (int i = 0; i < c->nspatial; i++)
                len += snprintf(args + len, sizeof args - (size_t)len, " %lld %lld %lld %lld %lld", (long long)c->in[i],
                                (long long)c->kernel[i], (long long)c->stride[i], (long long)c->padding[i],
                                (long long)d.dilation[i]);
            n = torch_values(args, expected, 4096);
            if (n < 0)
                skip();
            int64_t out_n = c->planes * product(c->nspatial, d.out_size);
            assert_int_equal(n, (int)(is_max ? 2 * out_n : out_n));
            tensor x = tensor_pattern(AMP_F64, (size_t)(c->planes * product(c->nspatial, c->in)), 1);
            tensor y = tensor_new(AMP_F64, (size_t)out_n);
            int64_t *idx = malloc((size_t)out_n * sizeof *idx + 1);
            assert_non_null(idx);
            if (is_max)
                amp_max_pool_f64(&d, x.data, y.data, idx);
            else
                amp_avg_pool_f64(&d, x.data, y.data);
            for (int64_t i = 0; i < out_n; i++) {
                expect_close(&y, (size_t)i, expected[i], 8.0 * U_F64, args);
                if (is_max && idx[i] != (int64_t)expected[out_n + i])
                    fail_msg("%s: index [%lld] %lld, torch %lld", args, (long long)i, (long long)idx[i],
                             (long long)expected[out_n + i]);
            }
            free(idx);
            tensor_free(&x);
            tensor_free(&y);
        }
}

static void test_adaptive_and_upsample_against_torch(void **state)
{
    double expected[4096];
    (void)state;
    {
        static const int64_t in[2] = { 7, 5 }, out[2] = { 3, 4 };
        int n = torch_values("adaptive_avg_pool 2 2 7 5 3 4", expected, 4096);
        if (n < 0)
            skip();
        assert_int_equal(n, 24);
        tensor x = tensor_pattern(AMP_F64, 70, 1), y = tensor_new(AMP_F64, 24);
        amp_adaptive_avg_pool_f64(2, 2, in, out, x.data, y.data);
        for (size_t i = 0; i < 24; i++)
            expect_close(&y, i, expected[i], 8.0 * U_F64, "adaptive vs torch");
        tensor_free(&x);
        tensor_free(&y);
    }
    for (size_t ci = 0; ci < sizeof up_cases / sizeof up_cases[0]; ci++) {
        const up_case *c = &up_cases[ci];
        amp_upsample_desc d = up_desc_of(c, 2);
        char args[512];
        int len = snprintf(args, sizeof args, "upsample %d 2 %d %d", c->nspatial, c->mode, c->align_corners), n;
        for (int i = 0; i < c->nspatial; i++)
            len += snprintf(args + len, sizeof args - (size_t)len, " %lld %lld %.17g", (long long)c->in[i],
                            (long long)c->out[i], c->scale[i]);
        n = torch_values(args, expected, 4096);
        if (n < 0)
            skip();
        int64_t out_n = 2 * product(c->nspatial, c->out);
        assert_int_equal(n, (int)out_n);
        tensor x = tensor_pattern(AMP_F64, (size_t)(2 * product(c->nspatial, c->in)), 1);
        tensor y = tensor_new(AMP_F64, (size_t)out_n);
        amp_upsample_f64(&d, x.data, y.data);
        /* Nearest must be the very element; interpolation within rounding. */
        for (int64_t i = 0; i < out_n; i++)
            expect_close(&y, (size_t)i, expected[i], c->mode == AMP_UPSAMPLE_NEAREST ? 0.0 : 64.0 * U_F64, args);
        tensor_free(&x);
        tensor_free(&y);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_pool),
        cmocka_unit_test(test_avg_pool),
        cmocka_unit_test(test_adaptive_avg_pool),
        cmocka_unit_test(test_adaptive_max_pool),
        cmocka_unit_test(test_upsample),
        cmocka_unit_test(test_pool_against_torch),
        cmocka_unit_test(test_adaptive_and_upsample_against_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
