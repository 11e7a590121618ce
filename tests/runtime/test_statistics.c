/*
 * test_statistics.c - the single-result statistics of amprt/reduce.h (var,
 * std, argmax, argmin, all, any) and the gradients of amprt/backward.h for
 * amax/amin, max()/min(), var and std, every dtype, through the public and
 * the reference table: against long double oracles, finite differences of
 * the f64 forward, and PyTorch 1.13's printed numbers.  Conventions and
 * the error bound: kernel_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

/* [rows, cols] reduced along dim 1 (reduce {0, 1}) or dim 0 ({1, 0}). */
static const int64_t shape[2] = { 3, 5 };
static const uint8_t along_rows[2] = { 0, 1 }, along_cols[2] = { 1, 0 };

/* The oracle of var (take_sqrt 0) or std over one line of x. */
static long double variance_oracle(const tensor *x, size_t first, size_t step, size_t n, double correction,
                                   int take_sqrt)
{
    long double mean = 0, sq = 0, dof = (long double)n - correction;
    for (size_t i = 0; i < n; i++)
        mean += get(x, first + i * step);
    mean /= (long double)n;
    for (size_t i = 0; i < n; i++) {
        long double d = get(x, first + i * step) - mean;
        sq += d * d;
    }
    if (dof < 0)
        dof = 0;
    return take_sqrt ? sqrtl(sq / dof) : sq / dof;
}

static void test_var_std(void **state)
{
    static const double corrections[] = { 1.0, 0.0, 2.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int c = 0; c < 3; c++)
            for (int take_sqrt = 0; take_sqrt < 2; take_sqrt++)
                for (int axis = 0; axis < 2; axis++) {
                    amp_dtype t = dtypes[d];
                    tensor x = tensor_random(t, 15, -2.0, 3.0);
                    size_t lines = axis ? 3 : 5, len = axis ? 5 : 3;
                    for (int e = 0; e < NTABLES; e++) {
                        tensor y = tensor_new(t, lines);
                        if (take_sqrt)
                            KCALL(tables[e], t, std, 2, shape, axis ? along_rows : along_cols, corrections[c],
                                  x.data, y.data);
                        else
                            KCALL(tables[e], t, var, 2, shape, axis ? along_rows : along_cols, corrections[c],
                                  x.data, y.data);
                        for (size_t o = 0; o < lines; o++) {
                            long double want = variance_oracle(&x, axis ? o * 5 : o, axis ? 1 : 5, len,
                                                               corrections[c], take_sqrt);
                            /* two passes of len terms, each |x| <= 3 */
                            expect_close(&y, o, want, 64.0L * len * u_acc(t) * 9.0L, take_sqrt ? "std" : "var");
                        }
                        tensor_free(&y);
                    }
                    tensor_free(&x);
                }
}

/* PyTorch 1.13: torch.std(torch.ones(1)) is nan (0 / 0), torch.var of
 * [1., 2.] with correction=3 inf, and var of a constant row exactly 0. */
static void test_var_std_matches_torch(void **state)
{
    static const double one[] = { 1.0 }, pair[] = { 1.0, 2.0 }, flat[] = { 0.3, 0.3, 0.3, 0.3 };
    const int64_t n1[1] = { 1 }, n2[1] = { 2 }, n4[1] = { 4 };
    const uint8_t all[1] = { 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor a = tensor_of(t, 1, one), b = tensor_of(t, 2, pair), f = tensor_of(t, 4, flat);
            tensor y = tensor_new(t, 1);
            KCALL(tables[e], t, std, 1, n1, all, 1.0, a.data, y.data);
            assert_true(isnan(get(&y, 0)));
            KCALL(tables[e], t, var, 1, n2, all, 3.0, b.data, y.data);
            assert_true(isinf(get(&y, 0)) && get(&y, 0) > 0);
            KCALL(tables[e], t, var, 1, n4, all, 1.0, f.data, y.data);
            assert_true(get(&y, 0) == 0);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&f);
            tensor_free(&y);
        }
}

/* argmax/argmin: the first extreme, a NaN beating everything (PyTorch 1.13:
 * torch.argmax(torch.tensor([1., 3., 3., nan, nan])) is 3, argmin 3 too;
 * argmax of [2., 5., 5.] is 1). */
static void test_argmax_argmin(void **state)
{
    static const double ties[] = { 2.0, 5.0, 5.0, -1.0, -1.0, 0.0 }, nans[] = { 1.0, 3.0, 3.0, NAN, NAN };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor a = tensor_of(t, 6, ties), b = tensor_of(t, 5, nans);
            int64_t y[3];
            KCALL(tables[e], t, argmax, 1, 6, 1, a.data, y);
            assert_int_equal(y[0], 1);
            KCALL(tables[e], t, argmin, 1, 6, 1, a.data, y);
            assert_int_equal(y[0], 3);
            KCALL(tables[e], t, argmax, 1, 5, 1, b.data, y);
            assert_int_equal(y[0], 3);
            KCALL(tables[e], t, argmin, 1, 5, 1, b.data, y);
            assert_int_equal(y[0], 3);
            /* [[2, 5, 5], [-1, -1, 0]] as outer 1, len 2, inner 3: along the first dim */
            KCALL(tables[e], t, argmax, 1, 2, 3, a.data, y);
            assert_true(y[0] == 0 && y[1] == 0 && y[2] == 0);
            KCALL(tables[e], t, argmin, 1, 2, 3, a.data, y);
            assert_true(y[0] == 1 && y[1] == 1 && y[2] == 1);
            tensor_free(&a);
            tensor_free(&b);
        }
}

/* all/any of every dtype: NaN is true, -0 false; all of nothing is true. */
static void test_all_any(void **state)
{
    static const double fvals[] = { 1.0, -0.0, NAN, 2.0, 0.5, -3.0 };
    const int64_t s23[2] = { 2, 3 }, empty[1] = { 0 };
    const uint8_t rows[2] = { 0, 1 }, cols[2] = { 1, 0 }, all1[1] = { 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_of(t, 6, fvals);
        uint8_t y[3];
        amp_all(t, 2, s23, rows, x.data, y);
        assert_true(y[0] == 0 && y[1] == 1);
        amp_any(t, 2, s23, cols, x.data, y);
        assert_true(y[0] == 1 && y[1] == 1 && y[2] == 1);
        amp_all(t, 2, s23, cols, x.data, y);
        assert_true(y[0] == 1 && y[1] == 0 && y[2] == 1);
        amp_all(t, 1, empty, all1, x.data, y);
        assert_true(y[0] == 1);
        amp_any(t, 1, empty, all1, x.data, y);
        assert_true(y[0] == 0);
        tensor_free(&x);
    }
    {
        const int64_t i64v[3] = { 0, INT64_MIN, 0 };
        const uint8_t bools[3] = { 0, 0, 1 };
        const int64_t s3[1] = { 3 };
        uint8_t y[1];
        amp_any(AMP_I64, 1, s3, all1, i64v, y);
        assert_true(y[0] == 1);
        amp_all(AMP_BOOL, 1, s3, all1, bools, y);
        assert_true(y[0] == 0);
        amp_any(AMP_BOOL, 1, s3, all1, bools, y);
        assert_true(y[0] == 1);
    }
}

/* The f64 forward of op at x, summed against weights w (a scalar loss). */
typedef enum { F_AMAX, F_VAR, F_STD } fwd_kind;

static double loss_of(fwd_kind k, const uint8_t *reduce, double correction, const double *x, const double *w,
                      size_t lines)
{
    double y[5], s = 0;
    if (k == F_AMAX)
        amp_ref_amax_f64(2, shape, reduce, x, y);
    else if (k == F_VAR)
        amp_ref_var_f64(2, shape, reduce, correction, x, y);
    else
        amp_ref_std_f64(2, shape, reduce, correction, x, y);
    for (size_t o = 0; o < lines; o++)
        s += w[o] * y[o];
    return s;
}

/* amax_backward, var_backward, std_backward in f64 against central
 * differences of the f64 forward, and the narrow dtypes against f64. */
static void test_backward_finite_differences(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++)
        for (int axis = 0; axis < 2; axis++) {
            const uint8_t *reduce = axis ? along_rows : along_cols;
            size_t lines = axis ? 3 : 5;
            double x[15], w[5], y[5], dx[15], correction = k == F_STD ? 0.0 : 1.0;
            for (int i = 0; i < 15; i++)
                x[i] = uniform(-2.0, 2.0);
            for (size_t o = 0; o < lines; o++)
                w[o] = uniform(0.5, 1.5);
            if (k == F_AMAX) {
                amp_ref_amax_f64(2, shape, reduce, x, y);
                amp_amax_backward_f64(2, shape, reduce, x, y, w, dx);
            } else if (k == F_VAR) {
                amp_ref_var_f64(2, shape, reduce, correction, x, y);
                amp_var_backward_f64(2, shape, reduce, correction, x, y, w, dx);
            } else {
                amp_ref_std_f64(2, shape, reduce, correction, x, y);
                amp_std_backward_f64(2, shape, reduce, correction, x, y, w, dx);
            }
            for (int i = 0; i < 15; i++) {
                const double h = 0x1p-20;
                double xp[15], xm[15];
                memcpy(xp, x, sizeof x);
                memcpy(xm, x, sizeof x);
                xp[i] += h;
                xm[i] -= h;
                double fd = (loss_of((fwd_kind)k, reduce, correction, xp, w, lines) -
                             loss_of((fwd_kind)k, reduce, correction, xm, w, lines)) / (2 * h);
                if (fabs(fd - dx[i]) > 1e-6 * (1 + fabs(fd)))
                    fail_msg("backward %d axis %d [%d]: %.17g vs finite differences %.17g", k, axis, i, dx[i], fd);
            }
            for (int d = 1; d < NDTYPES; d++) {
                amp_dtype t = dtypes[d];
                tensor tx = tensor_of(t, 15, x), tw = tensor_of(t, lines, w), ty = tensor_new(t, lines);
                tensor tdx = tensor_new(t, 15);
                double x64[15], w64[5], y64[5], dx64[15];
                for (int i = 0; i < 15; i++)
                    x64[i] = (double)get(&tx, (size_t)i);
                for (size_t o = 0; o < lines; o++)
                    w64[o] = (double)get(&tw, o);
                if (k == F_AMAX) {
                    amp_ref_amax_f64(2, shape, reduce, x64, y64);
                    KCALL(&public_table, t, amax, 2, shape, reduce, tx.data, ty.data);
                    amp_amax_backward_f64(2, shape, reduce, x64, y64, w64, dx64);
                    KCALL(&public_table, t, amax_backward, 2, shape, reduce, tx.data, ty.data, tw.data, tdx.data);
                } else if (k == F_VAR) {
                    amp_ref_var_f64(2, shape, reduce, correction, x64, y64);
                    KCALL(&public_table, t, var, 2, shape, reduce, correction, tx.data, ty.data);
                    amp_var_backward_f64(2, shape, reduce, correction, x64, y64, w64, dx64);
                    KCALL(&public_table, t, var_backward, 2, shape, reduce, correction, tx.data, ty.data, tw.data,
                          tdx.data);
                } else {
                    amp_ref_std_f64(2, shape, reduce, correction, x64, y64);
                    KCALL(&public_table, t, std, 2, shape, reduce, correction, tx.data, ty.data);
                    amp_std_backward_f64(2, shape, reduce, correction, x64, y64, w64, dx64);
                    KCALL(&public_table, t, std_backward, 2, shape, reduce, correction, tx.data, ty.data, tw.data,
                          tdx.data);
                }
                /* y was rounded to t: std's dy / (2 y) carries that rounding */
                for (int i = 0; i < 15; i++)
                    expect_close(&tdx, (size_t)i, dx64[i], 64.0L * unit_roundoff(t) * (1.0L + fabsl(dx64[i])),
                                 "statistics backward vs f64");
                tensor_free(&tx);
                tensor_free(&tw);
                tensor_free(&ty);
                tensor_free(&tdx);
            }
        }
}

/* Ties and NaN, as PyTorch 1.13 computes them (float32):
 *   x = [1, 3, 3, 2]: amax(x) backward with dy 1 -> [0, 0.5, 0.5, 0], and
 *   max(x) backward the same;
 *   x = [1, nan, 2]: amax backward -> [nan, nan, nan] (dy / 0 * mask),
 *   max() backward -> [0, 1, 0] (evenly_distribute_backward). */
static void test_extremum_backward_matches_torch(void **state)
{
    static const double ties[] = { 1.0, 3.0, 3.0, 2.0 }, nan_x[] = { 1.0, NAN, 2.0 }, one[] = { 1.0 };
    const int64_t n4[1] = { 4 }, n3[1] = { 3 };
    const uint8_t all[1] = { 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor a = tensor_of(t, 4, ties), b = tensor_of(t, 3, nan_x), dy = tensor_of(t, 1, one);
            tensor y = tensor_new(t, 1), dx = tensor_new(t, 4);
            KCALL(tables[e], t, amax, 1, n4, all, a.data, y.data);
            KCALL(tables[e], t, amax_backward, 1, n4, all, a.data, y.data, dy.data, dx.data);
            assert_true(get(&dx, 0) == 0 && get(&dx, 1) == 0.5 && get(&dx, 2) == 0.5 && get(&dx, 3) == 0);
            KCALL(tables[e], t, max_backward, 1, n4, all, a.data, y.data, dy.data, dx.data);
            assert_true(get(&dx, 0) == 0 && get(&dx, 1) == 0.5 && get(&dx, 2) == 0.5 && get(&dx, 3) == 0);
            KCALL(tables[e], t, amax, 1, n3, all, b.data, y.data);
            assert_true(isnan(get(&y, 0)));
            KCALL(tables[e], t, amax_backward, 1, n3, all, b.data, y.data, dy.data, dx.data);
            assert_true(isnan(get(&dx, 0)) && isnan(get(&dx, 1)) && isnan(get(&dx, 2)));
            KCALL(tables[e], t, max_backward, 1, n3, all, b.data, y.data, dy.data, dx.data);
            assert_true(get(&dx, 0) == 0 && get(&dx, 1) == 1 && get(&dx, 2) == 0);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&dy);
            tensor_free(&y);
            tensor_free(&dx);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_var_std),
        cmocka_unit_test(test_var_std_matches_torch),
        cmocka_unit_test(test_argmax_argmin),
        cmocka_unit_test(test_all_any),
        cmocka_unit_test(test_backward_finite_differences),
        cmocka_unit_test(test_extremum_backward_matches_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
