/*
 * test_norm.c - layer_norm, group_norm, batch_norm and batch_norm_train,
 * every dtype, through the public and the reference table, against long
 * double oracles; parameters in the input's dtype and, under bf16/f16, in
 * f32 (PyTorch's mixed-type path), which the kernel must not round to the
 * input's dtype. Conventions and the error bound: kernel_test_util.h.
 *
 * Error model (units of u_acc): a mean over n elements is off by at most
 * n mean|x|; the variance by (n + 3) var relative, which 1/sqrt halves; the
 * normalised value (x - mean) rstd then carries |x - mean| rstd times that,
 * plus rstd times the mean's error; weight, bias and the final rounding add
 * a few roundings of |y|.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

/* The eps the kernel computes with: the double rounded to its ACC. */
static long double acc_eps(amp_dtype t, double eps)
{
    return t == AMP_F64 ? eps : (float)eps;
}

typedef struct {
    long double mean, rstd, mean_abs, var;
    size_t count;
} moments;

/* Statistics of the elements x[start + b * stride + i], b < blocks, i < len. */
static moments moments_of(const tensor *x, size_t start, size_t blocks, size_t len, size_t stride, long double eps)
{
    moments m = { 0, 0, 0, 0, blocks * len };
    long double sum = 0, sum_abs = 0, sq = 0;
    for (size_t b = 0; b < blocks; b++)
        for (size_t i = 0; i < len; i++) {
            sum += get(x, start + b * stride + i);
            sum_abs += fabsl(get(x, start + b * stride + i));
        }
    m.mean = sum / m.count;
    m.mean_abs = sum_abs / m.count;
    for (size_t b = 0; b < blocks; b++)
        for (size_t i = 0; i < len; i++) {
            long double d = get(x, start + b * stride + i) - m.mean;
            sq += d * d;
        }
    m.var = sq / m.count;
    m.rstd = 1 / sqrtl(m.var + eps);
    return m;
}

/* Check y[i] = (x[i] - mean) rstd w + b for statistics computed over
 * `count` elements (count 0: given statistics, exact up to a few roundings). */
static void expect_normalized(const tensor *y, size_t i, long double xv, const moments *m, long double w,
                              long double b, const char *what)
{
    long double z = (xv - m->mean) * m->rstd, oracle = z * w + b;
    double acc = (double)(fabsl(w) * m->rstd * (m->count * m->mean_abs + fabsl(xv - m->mean) * (m->count / 2.0L + 6)) +
                          2 * (fabsl(b) + fabsl(oracle)));
    expect_close(y, i, oracle, acc * u_acc(y->t), what);
}

/* Parameter dtypes to try for input dtype t: t itself, and f32 under bf16
 * and f16. */
static int param_dtypes(amp_dtype t, amp_dtype *out)
{
    out[0] = t;
    if (t == AMP_BF16 || t == AMP_F16) {
        out[1] = AMP_F32;
        return 2;
    }
    return 1;
}

/* Parameters not representable in bf16/f16, so that rounding them to the
 * input's dtype is caught. */
static tensor random_params(amp_dtype pt, size_t n, double lo, double hi)
{
    tensor p = tensor_new(pt, n);
    for (size_t i = 0; i < n; i++)
        set(&p, i, uniform(lo, hi) * (1 + 0x1p-20));
    return p;
}

/* ---- layer_norm ------------------------------------------------------------- */

static void test_layer_norm(void **state)
{
    static const int64_t shapes[][2] = { { 3, 8 }, { 1, 1 }, { 0, 5 }, { 4, 0 }, { 2, 1000 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d], pts[2];
        int npt = param_dtypes(t, pts);
        for (int pi = 0; pi < npt; pi++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int affine = 0; affine < 3; affine++) { /* none, weight only, both */
                    int64_t outer = shapes[s][0], inner = shapes[s][1];
                    size_t n = (size_t)(outer * inner);
                    tensor x = tensor_random(t, n, -3, 5), y[NTABLES], in_place = tensor_copy(&x);
                    tensor w = random_params(pts[pi], (size_t)inner, 0.5, 2), b = random_params(pts[pi], (size_t)inner, -1, 1);
                    const void *wp = affine >= 1 ? w.data : NULL, *bp = affine >= 2 ? b.data : NULL;
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_new(t, n);
                        KCALL(tables[e], t, layer_norm, outer, inner, x.data, pts[pi], wp, bp, 1e-5, y[e].data);
                        for (int64_t r = 0; r < outer; r++) {
                            moments m = moments_of(&x, (size_t)(r * inner), 1, (size_t)inner, 0, acc_eps(t, 1e-5));
                            for (int64_t i = 0; i < inner; i++) {
                                size_t at = (size_t)(r * inner + i);
                                expect_normalized(&y[e], at, get(&x, at), &m, wp ? get(&w, (size_t)i) : 1,
                                                  bp ? get(&b, (size_t)i) : 0, "layer_norm");
                            }
                        }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    KCALL(tables[0], t, layer_norm, outer, inner, in_place.data, pts[pi], wp, bp, 1e-5, in_place.data);
                    assert_memory_equal(in_place.data, y[0].data, n * amp_dtype_size(t)); /* y == x */
                    tensor_free(&x);
                    tensor_free(&in_place);
                    tensor_free(&w);
                    tensor_free(&b);
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                }
    }
}

/* A constant row has variance 0: the output is exactly the bias, as
 * (x - mean) is 0 and rstd = 1/sqrt(eps) is finite. */
static void test_layer_norm_constant_row(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_new(t, 4), y = tensor_new(t, 4), b = tensor_random(t, 4, -1, 1);
        for (size_t i = 0; i < 4; i++)
            set(&x, i, 2.5);
        KCALL(&public_table, t, layer_norm, 1, 4, x.data, t, NULL, b.data, 1e-5, y.data);
        assert_memory_equal(y.data, b.data, 4 * amp_dtype_size(t));
        tensor_free(&x);
        tensor_free(&y);
        tensor_free(&b);
    }
}

/* ---- group_norm ------------------------------------------------------------- */

static void test_group_norm(void **state)
{
    static const int64_t shapes[][4] = { /* N, C, HxW, groups */
                                         { 2, 6, 5, 3 }, { 1, 4, 1, 4 }, { 2, 4, 3, 1 }, { 0, 4, 3, 2 },
                                         { 2, 2, 0, 1 }, { 1, 8, 200, 2 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d], pts[2];
        int npt = param_dtypes(t, pts);
        for (int pi = 0; pi < npt; pi++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int affine = 0; affine < 2; affine++) {
                    int64_t N = shapes[s][0], C = shapes[s][1], HxW = shapes[s][2], G = shapes[s][3];
                    size_t n = (size_t)(N * C * HxW), per_group = (size_t)(C / G);
                    tensor x = tensor_random(t, n, -3, 5), y[NTABLES];
                    tensor w = random_params(pts[pi], (size_t)C, 0.5, 2), b = random_params(pts[pi], (size_t)C, -1, 1);
                    const void *wp = affine ? w.data : NULL, *bp = affine ? b.data : NULL;
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_new(t, n);
                        KCALL(tables[e], t, group_norm, N, C, HxW, G, x.data, pts[pi], wp, bp, 1e-5, y[e].data);
                        for (int64_t s0 = 0; s0 < N; s0++)
                            for (int64_t g = 0; g < G && HxW > 0; g++) {
                                size_t start = (size_t)((s0 * C + g * (int64_t)per_group) * HxW);
                                moments m = moments_of(&x, start, 1, per_group * (size_t)HxW, 0, acc_eps(t, 1e-5));
                                for (size_t c = (size_t)g * per_group; c < (size_t)(g + 1) * per_group; c++)
                                    for (int64_t i = 0; i < HxW; i++) {
                                        size_t at = ((size_t)s0 * (size_t)C + c) * (size_t)HxW + (size_t)i;
                                        expect_normalized(&y[e], at, get(&x, at), &m, wp ? get(&w, c) : 1,
                                                          bp ? get(&b, c) : 0, "group_norm");
                                    }
                            }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    tensor_free(&x);
                    tensor_free(&w);
                    tensor_free(&b);
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                }
    }
}

/* ---- batch_norm ------------------------------------------------------------- */

static const int64_t bn_shapes[][3] = { { 3, 4, 5 }, { 2, 2, 1 }, { 1, 3, 4 }, { 0, 3, 2 }, { 4, 2, 300 }, { 1, 3, 1 } };
#define NBN_SHAPES (sizeof bn_shapes / sizeof bn_shapes[0])

static void test_batch_norm_inference(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d], pts[2];
        int npt = param_dtypes(t, pts);
        for (int pi = 0; pi < npt; pi++)
            for (size_t s = 0; s < NBN_SHAPES; s++)
                for (int affine = 0; affine < 2; affine++) {
                    int64_t N = bn_shapes[s][0], C = bn_shapes[s][1], HxW = bn_shapes[s][2];
                    size_t n = (size_t)(N * C * HxW);
                    tensor x = tensor_random(t, n, -3, 5), y[NTABLES];
                    tensor rm = random_params(pts[pi], (size_t)C, -1, 1), rv = random_params(pts[pi], (size_t)C, 0.1, 3);
                    tensor w = random_params(pts[pi], (size_t)C, 0.5, 2), b = random_params(pts[pi], (size_t)C, -1, 1);
                    const void *wp = affine ? w.data : NULL, *bp = affine ? b.data : NULL;
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_new(t, n);
                        KCALL(tables[e], t, batch_norm, N, C, HxW, x.data, pts[pi], rm.data, rv.data, wp, bp, 1e-5,
                              y[e].data);
                        for (size_t at = 0; at < n; at++) {
                            size_t c = at / (size_t)HxW % (size_t)C;
                            moments m = { get(&rm, c), 1 / sqrtl(get(&rv, c) + acc_eps(t, 1e-5)), 0, 0, 0 };
                            expect_normalized(&y[e], at, get(&x, at), &m, wp ? get(&w, c) : 1, bp ? get(&b, c) : 0,
                                              "batch_norm");
                        }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    tensor_free(&x);
                    tensor_free(&rm);
                    tensor_free(&rv);
                    tensor_free(&w);
                    tensor_free(&b);
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                }
    }
}

static void test_batch_norm_train(void **state)
{
    static const double momenta[] = { 0.1, 0.7 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d], pts[2];
        int npt = param_dtypes(t, pts);
        for (int pi = 0; pi < npt; pi++)
            for (size_t s = 0; s < NBN_SHAPES; s++)
                for (int variant = 0; variant < 3; variant++) { /* affine + stats, stats only, neither */
                    int64_t N = bn_shapes[s][0], C = bn_shapes[s][1], HxW = bn_shapes[s][2];
                    size_t n = (size_t)(N * C * HxW), count = (size_t)(N * HxW);
                    double momentum = momenta[variant % 2];
                    tensor x = tensor_random(t, n, -3, 5), y[NTABLES], rm[NTABLES], rv[NTABLES];
                    tensor rm0 = random_params(pts[pi], (size_t)C, -1, 1), rv0 = random_params(pts[pi], (size_t)C, 0.1, 3);
                    tensor w = random_params(pts[pi], (size_t)C, 0.5, 2), b = random_params(pts[pi], (size_t)C, -1, 1);
                    const void *wp = variant == 0 ? w.data : NULL, *bp = variant == 0 ? b.data : NULL;
                    int stats = variant < 2;
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_new(t, n);
                        rm[e] = tensor_copy(&rm0);
                        rv[e] = tensor_copy(&rv0);
                        KCALL(tables[e], t, batch_norm_train, N, C, HxW, x.data, pts[pi], stats ? rm[e].data : NULL,
                              stats ? rv[e].data : NULL, wp, bp, momentum, 1e-5, y[e].data);
                        for (int64_t c = 0; c < C; c++) {
                            moments m;
                            long double keep = t == AMP_F64 ? 1 - momentum : (float)(1 - momentum);
                            long double take = t == AMP_F64 ? momentum : (float)momentum;
                            long double uvar, new_rm, new_rv;
                            if (count == 0) { /* nothing to normalise; statistics untouched */
                                assert_memory_equal(rm[e].data, rm0.data, (size_t)C * amp_dtype_size(pts[pi]));
                                assert_memory_equal(rv[e].data, rv0.data, (size_t)C * amp_dtype_size(pts[pi]));
                                continue;
                            }
                            m = moments_of(&x, (size_t)(c * HxW), (size_t)N, (size_t)HxW, (size_t)(C * HxW),
                                           acc_eps(t, 1e-5));
                            for (int64_t s0 = 0; s0 < N; s0++)
                                for (int64_t i = 0; i < HxW; i++) {
                                    size_t at = (size_t)((s0 * C + c) * HxW + i);
                                    expect_normalized(&y[e], at, get(&x, at), &m, wp ? get(&w, (size_t)c) : 1,
                                                      bp ? get(&b, (size_t)c) : 0, "batch_norm_train");
                                }
                            if (!stats)
                                continue;
                            /* unbiased variance: 0/0 = NaN for one element */
                            uvar = m.var * count / (long double)(count - 1);
                            new_rm = keep * get(&rm0, (size_t)c) + take * m.mean;
                            new_rv = keep * get(&rv0, (size_t)c) + take * uvar;
                            expect_close(&rm[e], (size_t)c, new_rm,
                                         (double)(u_acc(t) * (2 * fabsl(keep * get(&rm0, (size_t)c)) +
                                                              take * (count + 2) * m.mean_abs + fabsl(new_rm))),
                                         "batch_norm_train running_mean");
                            expect_close(&rv[e], (size_t)c, new_rv,
                                         (double)(u_acc(t) * (2 * fabsl(keep * get(&rv0, (size_t)c)) +
                                                              take * (count + 6) * finite_or_zero(uvar) +
                                                              finite_or_zero(fabsl(new_rv)))),
                                         "batch_norm_train running_var");
                        }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    expect_public_equals_ref(&rm[0], &rm[1]);
                    expect_public_equals_ref(&rv[0], &rv[1]);
                    for (int e = 0; e < NTABLES; e++) {
                        tensor_free(&y[e]);
                        tensor_free(&rm[e]);
                        tensor_free(&rv[e]);
                    }
                    tensor_free(&x);
                    tensor_free(&rm0);
                    tensor_free(&rv0);
                    tensor_free(&w);
                    tensor_free(&b);
                }
    }
}

/* ---- Fixed cases computed by PyTorch 1.13 in float64 ----------------------
 *
 * x = [0.5, -1.25, 2, 3.75, -0.5, 1, -2, 0.25, 1.5, -3, 2.5, 0.75] (exact in
 * every dtype), as [2, 2, 3] for batch_norm (weight [1.5, -0.75], bias
 * [0.25, -0.5], running mean [0.5, -0.25], var [2, 0.75], eps 1e-5;
 * training with momentum 0.3) and layer_norm over the last 3 (weight
 * [1.5, -0.75, 2], bias [0.25, -0.5, 1]), and as [1, 4, 3] for group_norm
 * with 2 groups (weight [1.5, -0.75, 2, 0.5], bias [0.25, -0.5, 1, 0]).
 * The float64 results are the exact answers to within 2^-50, so every dtype
 * is checked against them with its own bound. */

static const double fx[12] = { 0.5, -1.25, 2.0, 3.75, -0.5, 1.0, -2.0, 0.25, 1.5, -3.0, 2.5, 0.75 };
static const double torch_bn_train[12] = { 0.6041679131568184,  -1.255213630916478,   2.197923522362501,
                                           -1.5462276176381011, -0.06407182598412453, -0.5871856348031751,
                                           -2.052091435519319,  0.3385419782892046,   1.6666716526272733,
                                           0.8077845220476264,  -1.1102994436222255,  -0.5 };
static const double torch_bn_running_mean[2] = { 0.39999999999999997, 0.04999999999999999 };
static const double torch_bn_running_var[2] = { 2.1174999999999997, 2.1899999999999995 };
static const double torch_bn_eval[12] = { 0.25,
                                          -1.6061506602438373,
                                          1.8409862802090033,
                                          -3.9640785213579246,
                                          -0.2834950924151297,
                                          -1.5825245379243515,
                                          -2.4016438003483387,
                                          -0.01516438003483389,
                                          1.3106575201393356,
                                          1.881553983433573,
                                          -2.881553983433573,
                                          -1.3660196303394812 };
static const double torch_ln[12] = { 0.34411810397962617, 0.44118103979626055, 3.3843253008171934,
                                     2.2387544294609136,  0.31680985495716096, 0.5264870406045443,
                                     -1.7352471818531074, -0.6726301897263571, 3.1866490698671908,
                                     -1.7658488618211448, -1.2899948242272055, 1.581145617822312 };
static const double torch_gn[12] = { -0.1317392368676673, -1.7350440317118698, 1.242522015855935,
                                     -1.7979134053500687, 0.14895670267503436, -0.5381739236867666,
                                     -1.0830197512615358, 1.2603774689076919,  2.5622648134461516,
                                     -0.7811324067230759, 0.6509436722692299,  0.19528310168076896 };

/* Small shapes, values of order 1: 64 u_acc (|y| + 4) is ample for the
 * compute error yet far below any semantic slip (biased vs unbiased
 * variance, momentum the wrong way round, a missed parameter). */
static void expect_all_close(const tensor *y, const double *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        expect_close(y, i, want[i], 64 * u_acc(y->t) * (fabs(want[i]) + 4), what);
}

static void test_norms_match_torch(void **state)
{
    static const double w2[2] = { 1.5, -0.75 }, b2[2] = { 0.25, -0.5 }, rm2[2] = { 0.5, -0.25 }, rv2[2] = { 2.0, 0.75 };
    static const double w3[3] = { 1.5, -0.75, 2.0 }, b3[3] = { 0.25, -0.5, 1.0 };
    static const double w4[4] = { 1.5, -0.75, 2.0, 0.5 }, b4[4] = { 0.25, -0.5, 1.0, 0.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d], pts[2];
        int npt = param_dtypes(t, pts);
        for (int pi = 0; pi < npt; pi++)
            for (int e = 0; e < NTABLES; e++) {
                amp_dtype pt = pts[pi];
                tensor x = tensor_of(t, 12, fx), y = tensor_new(t, 12);
                tensor w = tensor_of(pt, 2, w2), b = tensor_of(pt, 2, b2), rm = tensor_of(pt, 2, rm2), rv = tensor_of(pt, 2, rv2);
                tensor wl = tensor_of(pt, 3, w3), bl = tensor_of(pt, 3, b3), wg = tensor_of(pt, 4, w4), bg = tensor_of(pt, 4, b4);
                KCALL(tables[e], t, batch_norm, 2, 2, 3, x.data, pt, rm.data, rv.data, w.data, b.data, 1e-5, y.data);
                expect_all_close(&y, torch_bn_eval, 12, "batch_norm vs torch");
                KCALL(tables[e], t, batch_norm_train, 2, 2, 3, x.data, pt, rm.data, rv.data, w.data, b.data, 0.3, 1e-5,
                      y.data);
                expect_all_close(&y, torch_bn_train, 12, "batch_norm_train vs torch");
                expect_all_close(&rm, torch_bn_running_mean, 2, "running_mean vs torch");
                expect_all_close(&rv, torch_bn_running_var, 2, "running_var vs torch");
                KCALL(tables[e], t, layer_norm, 4, 3, x.data, pt, wl.data, bl.data, 1e-5, y.data);
                expect_all_close(&y, torch_ln, 12, "layer_norm vs torch");
                KCALL(tables[e], t, group_norm, 1, 4, 3, 2, x.data, pt, wg.data, bg.data, 1e-5, y.data);
                expect_all_close(&y, torch_gn, 12, "group_norm vs torch");
                tensor_free(&x);
                tensor_free(&y);
                tensor_free(&w);
                tensor_free(&b);
                tensor_free(&rm);
                tensor_free(&rv);
                tensor_free(&wl);
                tensor_free(&bl);
                tensor_free(&wg);
                tensor_free(&bg);
            }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_norm),
        cmocka_unit_test(test_layer_norm_constant_row),
        cmocka_unit_test(test_group_norm),
        cmocka_unit_test(test_batch_norm_inference),
        cmocka_unit_test(test_batch_norm_train),
        cmocka_unit_test(test_norms_match_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
