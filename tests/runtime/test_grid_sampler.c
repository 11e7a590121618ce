/*
 * test_grid_sampler.c - grid_sampler (amprt/spatial.h), 4-D and 5-D, every
 * mode, padding and align_corners, every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts; and fixed cases whose answers were
 * printed by PyTorch 1.13 in float64 (the program does not need torch).
 * Conventions and the error bound: kernel_test_util.h and
 * oracle_test_util.h.
 *
 * A divergence from PyTorch 1.13 left out on purpose: a NaN grid
 * coordinate (the kernel reads nothing, 0; PyTorch gives NaN with zeros
 * padding and a border value with border padding).
 */
#define _POSIX_C_SOURCE 200809L

#include "oracle_test_util.h"

/* ---- grid_sampler ------------------------------------------------------------ */

/* Source coordinate of grid value g along a dim of `size` (PyTorch's
 * unnormalisation, then the padding mode), by mirroring until inside. */
static long double gs_source(long double g, int64_t size, int padding, int align_corners)
{
    long double c = align_corners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
    if (padding == 2) {
        long double lo = align_corners ? 0 : -0.5L, hi = align_corners ? size - 1 : size - 0.5L;
        if (hi <= lo)
            return 0;
        while (c < lo || c > hi)
            c = c < lo ? 2 * lo - c : 2 * hi - c;
    }
    if (padding >= 1)
        c = c < 0 ? 0 : c > size - 1 ? size - 1 : c;
    return c;
}

typedef struct {
    int nspatial;
    int64_t N, C, in[3], out[3];
} gs_case;

static const gs_case gs_cases[] = {
    { 2, 2, 3, { 3, 4 }, { 2, 5 } },
    { 2, 1, 2, { 1, 1 }, { 3, 2 } }, /* size-1 input: reflection's empty span */
    { 2, 1, 1, { 5, 2 }, { 4, 4 } },
    { 3, 1, 2, { 2, 3, 4 }, { 2, 2, 3 } },
    { 3, 2, 1, { 1, 2, 1 }, { 1, 3, 2 } },
    { 2, 1, 2, { 3, 4 }, { 0, 3 } },
    { 2, 0, 2, { 3, 4 }, { 2, 2 } },
};

static void test_grid_sampler(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof gs_cases / sizeof gs_cases[0]; ci++)
            for (int mode = 0; mode < 2; mode++)
                for (int padding = 0; padding < 3; padding++)
                    for (int ac = 0; ac < 2; ac++)
                        for (int dyadic = 0; dyadic < 2 - mode; dyadic++) {
                            const gs_case *c = &gs_cases[ci];
                            amp_dtype t = dtypes[d];
                            int ns = c->nspatial;
                            int64_t in_plane = numel(ns, c->in), out_plane = numel(ns, c->out);
                            size_t nx = (size_t)(c->N * c->C * in_plane), ng = (size_t)(c->N * out_plane * ns);
                            size_t ny = (size_t)(c->N * c->C * out_plane);
                            tensor x = tensor_random(t, nx, -3, 3), grid = tensor_new(t, ng), y[NTABLES];
                            char what[128];
                            /* nearest needs exact coordinates (no half-way ties moved by rounding):
                             * multiples of 1/16 in [-2.5, 2.5], exact in every dtype */
                            for (size_t i = 0; i < ng; i++)
                                set(&grid, i,
                                    mode == 1 || dyadic ? (double)((int64_t)(rng_next() % 81) - 40) / 16
                                                        : uniform(-1.6, 1.6));
                            snprintf(what, sizeof what, "grid_sampler case %zu %s padding %d align_corners %d%s", ci,
                                     mode ? "nearest" : "bilinear", padding, ac, dyadic ? " dyadic" : "");
                            for (int e = 0; e < NTABLES; e++) {
                                y[e] = tensor_random(t, ny, 7, 8);
                                KCALL(tables[e], t, grid_sampler, ns, c->N, c->C, c->in, c->out, mode, padding, ac, x.data,
                                      grid.data, y[e].data);
                                for (int64_t n = 0; n < c->N; n++)
                                    for (int64_t o = 0; o < out_plane; o++) {
                                        long double src[3], coord_err = 0;
                                        for (int k = 0; k < ns; k++) {
                                            long double g = get(&grid, (size_t)((n * out_plane + o) * ns + (ns - 1 - k)));
                                            src[k] = gs_source(g, c->in[k], padding, ac);
                                            coord_err += 16 * (c->in[k] + 2) * (fabsl(g) + 2);
                                        }
                                        for (int64_t ch = 0; ch < c->C; ch++) {
                                            long double sum = 0, abs_sum = 0, abs_x = 0;
                                            for (int corner = 0; corner < (mode ? 1 : 1 << ns); corner++) {
                                                long double w = 1;
                                                int64_t off = 0;
                                                int inside = 1;
                                                for (int k = 0; k < ns; k++) {
                                                    int64_t i;
                                                    if (mode == 1)
                                                        i = (int64_t)nearbyintl(src[k]);
                                                    else {
                                                        i = (int64_t)floorl(src[k]) + ((corner >> k) & 1);
                                                        w *= 1 - fabsl(src[k] - i); /* the tent weight */
                                                    }
                                                    inside &= i >= 0 && i < c->in[k];
                                                    off = off * c->in[k] + i;
                                                }
                                                if (!inside)
                                                    continue;
                                                long double xv = get(&x, (size_t)((n * c->C + ch) * in_plane + off));
                                                sum += w * xv;
                                                abs_sum += fabsl(w * xv);
                                                abs_x += fabsl(xv);
                                            }
                                            expect_close(&y[e], (size_t)((n * c->C + ch) * out_plane + o), sum,
                                                         (8 * abs_sum + (dyadic || mode ? 0 : 2 * coord_err * abs_x)) *
                                                             u_acc(t),
                                                         what);
                                        }
                                    }
                            }
                            expect_public_equals_ref(&y[0], &y[1]);
                            tensor_free(&x);
                            tensor_free(&grid);
                            tensor_free(&y[0]);
                            tensor_free(&y[1]);
                        }
}

/* ---- Fixed cases printed by PyTorch 1.13 in float64 ------------------------------
 *
 * Inputs are multiples of 1/8 (or 1/16), exact in every dtype.  Script:
 * torch.set_default_dtype(torch.float64), then the calls named per array. */


/* F.grid_sample(gx [1, 1, 3, 4], g [1, 2, 3, 2]), [mode][padding][align_corners] */
static const double fx_gx[] = { 1, -2, 0.5, 3, -1, 2.5, 4, -0.5, 1.5, 0, 2, -3 };
static const double fx_g[] = { -1.0, -1.0, 0.25, -0.5, 1.25, 0.375, -1.5, 1.125, 0.0, 0.0, 2.75, -1.625 };
static const double fx_gs4[2][3][2][6] = {
    { { { 0.25, 1.375, 0.0, 0.0, 3.25, 0.0 }, { 1.0, 2.0, -0.8984375, 0.328125, 3.25, 0.0 } },
      { { 1.0, 1.375, -1.90625, 1.5, 3.25, 3.0 }, { 1.0, 2.0, -1.4375, 1.5, 3.25, 3.0 } },
      { { 1.0, 1.375, -1.90625, 0.75, 3.25, 0.125 }, { 1.0, 2.0, 0.3203125, 0.53125, 3.25, 0.1484375 } } },
    { { { 1.0, 0.5, 0.0, 0.0, 4.0, 0.0 }, { 1.0, 0.5, -0.5, 0.0, 4.0, 0.0 } },
      { { 1.0, 0.5, -3.0, 1.5, 4.0, 3.0 }, { 1.0, 0.5, -0.5, 1.5, 4.0, 3.0 } },
      { { 1.0, 0.5, -3.0, 1.5, 4.0, 1.0 }, { 1.0, 0.5, -0.5, 0.0, 4.0, -1.0 } } },
};
/* gx5 [1, 2, 2, 3, 4] = pattern_value(i, 0), g5 [1, 1, 2, 2, 3]; nearest samples g5n, which has no
 * half-way coordinate: PyTorch 1.13's 5-D nearest rounds ties away from zero (std::round; a source
 * coordinate 0.5 picks index 1), its 4-D nearest and the contract to even (fx_tie below). */
static const double fx_g5[] = { -1.0, -1.0, -1.0, 0.25, -0.5, 0.75, 1.25, 0.375, -0.125, -1.5, 1.125, 0.5 };
static const double fx_g5n[] = { -0.875, -0.9375, -0.8125, 0.25, -0.375, 0.75, 1.25, 0.375, -0.125, -1.625, 1.125, 0.5625 };
/* F.grid_sample(tie_x [1, 1, 1, 4], [-0.5, 0], nearest): source 0.5 rounds to 0 */
static const double fx_tie_x[] = { 1.0, 2.0, 3.0, 4.0 };
static const double fx_tie_g[] = { -0.5, 0.0 };
static const double fx_tie[] = { 1.0 };
static const double fx_gs5[2][3][2][8] = {
    { { { -0.171875, -0.3515625, 0.0, 0.0, -0.0625, 0.3046875, 0.0, 0.0 },
        { -1.375, -0.1396484375, -0.2606201171875, -0.19140625, -0.5, 0.4208984375, -0.205078125, 0.0 } },
      { { -1.375, -0.46875, -0.5517578125, -1.125, -0.5, 0.40625, -0.1484375, -0.25 },
        { -1.375, -0.1396484375, -0.4169921875, -0.875, -0.5, 0.4208984375, -0.328125, 0.0 } },
      { { -1.375, -0.46875, -0.5517578125, -0.6875, -0.5, 0.40625, -0.1484375, 0.1875 },
        { -1.375, -0.1396484375, -0.189208984375, -0.2294921875, -0.5, 0.4208984375, -0.3614501953125,
          0.1064453125 } } },
    { { { -1.375, -0.625, 0.0, 0.0, -0.5, 0.25, 0.0, 0.0 }, { -1.375, 0.0, -1.0, 0.0, -0.5, 0.875, -0.125, 0.0 } },
      { { -1.375, -0.625, -0.375, -1.125, -0.5, 0.25, 0.5, -0.25 },
        { -1.375, 0.0, -1.0, -1.125, -0.5, 0.875, -0.125, -0.25 } },
      { { -1.375, -0.625, -0.375, -0.25, -0.5, 0.25, 0.5, 0.625 },
        { -1.375, 0.0, -1.0, -0.25, -0.5, 0.875, -0.125, 0.625 } } },
};

/* grid_sampler against PyTorch: 4-D and 5-D, every mode, padding and
 * align_corners, and a nearest tie (y holds at least 8 elements). */
static void grid_sampler_matches_torch(const amp_kernel_table *k, amp_dtype t, tensor *yp)
{
    static const int64_t in4[2] = { 3, 4 }, out4[2] = { 2, 3 }, in5[3] = { 2, 3, 4 }, out5[3] = { 1, 2, 2 };
    tensor y = *yp;
    tensor gx = tensor_of(t, 12, fx_gx), g = tensor_of(t, 12, fx_g), gx5 = tensor_pattern(t, 48, 0);
    tensor g5 = tensor_of(t, 12, fx_g5), g5n = tensor_of(t, 12, fx_g5n);
    tensor tx = tensor_of(t, 4, fx_tie_x), tg = tensor_of(t, 2, fx_tie_g);
    static const int64_t tin[2] = { 1, 4 }, tout[2] = { 1, 1 };
    KCALL(k, t, grid_sampler, 2, 1, 1, tin, tout, 1, 0, 0, tx.data, tg.data, y.data);
    expect_all_close(&y, fx_tie, 1, "grid_sampler nearest tie vs torch");
    for (int mode = 0; mode < 2; mode++)
        for (int padding = 0; padding < 3; padding++)
            for (int ac = 0; ac < 2; ac++) {
                KCALL(k, t, grid_sampler, 2, 1, 1, in4, out4, mode, padding, ac, gx.data, g.data, y.data);
                expect_all_close(&y, fx_gs4[mode][padding][ac], 6, "grid_sampler 4-D vs torch");
                KCALL(k, t, grid_sampler, 3, 1, 2, in5, out5, mode, padding, ac, gx5.data,
                      mode ? g5n.data : g5.data, y.data);
                expect_all_close(&y, fx_gs5[mode][padding][ac], 8, "grid_sampler 5-D vs torch");
            }
    tensor_free(&gx);
    tensor_free(&g);
    tensor_free(&gx5);
    tensor_free(&g5);
    tensor_free(&g5n);
    tensor_free(&tx);
    tensor_free(&tg);
}

static void test_grid_sampler_matches_torch(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            tensor y = tensor_new(t, 8);
            grid_sampler_matches_torch(k, t, &y);
            tensor_free(&y);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_sampler),
        cmocka_unit_test(test_grid_sampler_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
