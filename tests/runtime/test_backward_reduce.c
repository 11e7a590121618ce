/*
 * test_backward_reduce.c - these reduction gradients of amprt/backward.h:
 * prod_backward (reduce masks, slices with one and with two zeros),
 * cumprod_backward (lines with zeros), quantile_backward (every
 * interpolation, nanquantile).
 * Every dtype through the public and the reference table, as
 * backward_test_util.h describes (f32/bf16/f16 against the f64 kernel on
 * the same rounded inputs; f64 against finite differences of the forward
 * f64 kernels), which also holds at the zeros: prod and cumprod are
 * polynomials), and fixed cases worked by hand from PyTorch's formulas
 * (the product of the others at a zero; NaN slices of quantile).
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

/* ---- prod ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int ndim;
    int64_t shape[3];
    uint8_t reduce[3];
} reduce_info;

static size_t reduce_numel(const reduce_info *r, int reduced)
{
    size_t n = 1;
    for (int d = 0; d < r->ndim; d++)
        if (reduced < 0 || (r->reduce[d] != 0) == reduced)
            n *= (size_t)r->shape[d];
    return n;
}

static void prod_forward(const bw_case *c, double *const *in, double *y)
{
    const reduce_info *r = c->ctx;
    amp_ref_prod_f64(r->ndim, r->shape, r->reduce, in[0], y);
}

static void prod_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                          void *const *grads)
{
    const reduce_info *r = c->ctx;
    KCALL(k, t, prod_backward, r->ndim, r->shape, r->reduce, in[0], dy, grads[0]);
}

static void test_prod_backward(void **state)
{
    static const reduce_info cases[] = {
        { "prod_backward all", 3, { 2, 3, 2 }, { 1, 1, 1 } },
        { "prod_backward dim 1", 3, { 3, 4, 2 }, { 0, 1, 0 } },
        { "prod_backward dims 0, 2", 3, { 3, 2, 4 }, { 1, 0, 1 } },
        { "prod_backward dim 0", 2, { 5, 3, 0 }, { 1, 0, 0 } },
    };
    /* [3, 4]: row 0 one zero, row 1 two zeros, row 2 none (reduced along dim 1) */
    static const double zeros[] = { 1.5, 0.0, -0.75, 1.25, 0.0, 1.5, 0.0, -1.0, 0.5, -1.25, 1.5, 0.75 };
    static const reduce_info zcase = { "prod_backward zeros", 2, { 3, 4, 0 }, { 0, 1, 0 } };
    (void)state;
    for (size_t i = 0; i <= sizeof cases / sizeof cases[0]; i++) {
        const reduce_info *r = i < sizeof cases / sizeof cases[0] ? &cases[i] : &zcase;
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = r->name;
        c.nprimary = c.nin = 1;
        c.size[0] = reduce_numel(r, -1);
        c.lo[0] = 0.5, c.hi[0] = 1.5; /* products of O(1) factors, away from 0 */
        c.values[0] = r == &zcase ? zeros : NULL;
        c.ngrad = 1;
        c.nout = reduce_numel(r, 0);
        c.cond = 4.0 * (double)reduce_numel(r, 1) + 4;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = r;
        c.forward = prod_forward;
        c.backward = prod_backward;
        bw_check(&c);
    }
}

/* x = [2, 0, 3] -> [0, 6, 0]; [0, 5, 0] -> 0; [2, 4, -1] -> [-4, -2, 8] (times dy). */
static void test_prod_fixed(void **state)
{
    static const int64_t shape[] = { 3, 3 };
    static const uint8_t reduce[] = { 0, 1 };
    static const double x[] = { 2.0, 0.0, 3.0, 0.0, 5.0, 0.0, 2.0, 4.0, -1.0 };
    static const double dy[] = { 0.5, 2.0, -1.0 };
    static const double want[] = { 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 4.0, 2.0, -8.0 };
    double dx[9];
    (void)state;
    amp_prod_backward_f64(2, shape, reduce, x, dy, dx);
    bw_expect_torch("prod zeros", dx, want, 9, 0);
}

/* ---- cumprod --------------------------------------------------------------- */

typedef struct {
    const char *name;
    int64_t outer, len, inner;
} scan_info;

static void cumprod_forward(const bw_case *c, double *const *in, double *y)
{
    const scan_info *s = c->ctx;
    amp_ref_cumprod_f64(s->outer, s->len, s->inner, in[0], y);
}

static void cumprod_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                             const void *dy, void *const *grads)
{
    const scan_info *s = c->ctx;
    double *work = malloc((size_t)s->len * sizeof *work);
    assert_non_null(work);
    KCALL(k, t, cumprod_backward, s->outer, s->len, s->inner, in[0], dy, grads[0], work);
    free(work);
}

static void test_cumprod_backward(void **state)
{
    static const scan_info cases[] = {
        { "cumprod_backward", 2, 5, 3 }, { "cumprod_backward long", 1, 40, 2 }, { "cumprod_backward zeros", 2, 5, 1 },
    };
    /* line 0: a zero at 2; line 1: zeros at 0 and 3 */
    static const double zeros[] = { 1.5, -0.75, 0.0, 1.25, 0.5, 0.0, 1.5, -1.25, 0.0, 0.75 };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const scan_info *s = &cases[i];
        size_t n = (size_t)(s->outer * s->len * s->inner);
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = s->name;
        c.nprimary = c.nin = 1;
        c.size[0] = n;
        c.lo[0] = 0.6, c.hi[0] = 1.4;
        c.values[0] = i == 2 ? zeros : NULL;
        c.ngrad = 1;
        c.nout = n;
        /* suffix sums of len terms, then a division by x >= 0.6 */
        c.cond = 8.0 * (double)(s->len * s->len) + 8;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = s;
        c.forward = cumprod_forward;
        c.backward = cumprod_backward;
        bw_check(&c);
    }
}

/* x = [2, 0, 3, 4], dy = [1, 1, 1, 1]: cumprod = [2, 0, 0, 0];
 * dx0 = 1 (only j = 0 avoids the zero), dx1 = 2 + 2*3 + 2*3*4 = 32,
 * dx2 = dx3 = 0 (every product holds x1 = 0). */
static void test_cumprod_fixed(void **state)
{
    static const double x[] = { 2.0, 0.0, 3.0, 4.0 }, dy[] = { 1.0, 1.0, 1.0, 1.0 };
    static const double want[] = { 1.0, 32.0, 0.0, 0.0 };
    double dx[4], work[4];
    (void)state;
    amp_cumprod_backward_f64(1, 4, 1, x, dy, dx, work);
    bw_expect_torch("cumprod zero", dx, want, 4, 0);
}

/* ---- quantile -------------------------------------------------------------- */

typedef struct {
    const char *name;
    int64_t outer, len, inner;
    double q;
    int interpolation, ignore_nan;
} quantile_info;

static void quantile_forward(const bw_case *c, double *const *in, double *y)
{
    const quantile_info *s = c->ctx;
    double *work = malloc((size_t)s->len * sizeof *work);
    assert_non_null(work);
    amp_ref_quantile_f64(s->outer, s->len, s->inner, s->q, s->interpolation, s->ignore_nan, in[0], work, y);
    free(work);
}

static void quantile_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                              const void *dy, void *const *grads)
{
    const quantile_info *s = c->ctx;
    double *work = malloc((size_t)s->len * sizeof *work);
    assert_non_null(work);
    KCALL(k, t, quantile_backward, s->outer, s->len, s->inner, s->q, s->interpolation, s->ignore_nan, in[0], dy,
          grads[0], work);
    free(work);
}

static void test_quantile_backward(void **state)
{
    static const quantile_info cases[] = {
        { "quantile_backward linear", 3, 7, 2, 0.7, AMP_QUANTILE_LINEAR, 0 },
        { "quantile_backward linear q 0", 2, 5, 3, 0.0, AMP_QUANTILE_LINEAR, 0 },
        { "quantile_backward linear q 1", 2, 5, 3, 1.0, AMP_QUANTILE_LINEAR, 0 },
        { "quantile_backward lower", 3, 6, 1, 0.3, AMP_QUANTILE_LOWER, 0 },
        { "quantile_backward higher", 3, 6, 1, 0.3, AMP_QUANTILE_HIGHER, 0 },
        { "quantile_backward midpoint", 1, 8, 3, 0.45, AMP_QUANTILE_MIDPOINT, 0 },
        { "quantile_backward nearest", 2, 9, 2, 0.4, AMP_QUANTILE_NEAREST, 0 },
        { "nanquantile_backward", 4, 6, 1, 0.25, AMP_QUANTILE_LINEAR, 1 },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const quantile_info *s = &cases[i];
        size_t n = (size_t)(s->outer * s->len * s->inner);
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = s->name;
        c.nprimary = c.nin = 1;
        c.size[0] = n;
        c.lo[0] = -2, c.hi[0] = 2; /* distinct in f64, so finite differences see no tie */
        c.ngrad = 1;
        c.nout = (size_t)(s->outer * s->inner);
        c.cond = 8;
        c.fd_h = 1e-7;
        c.fd_tol = 1e-6;
        c.ctx = s;
        c.forward = quantile_forward;
        c.backward = quantile_backward;
        bw_check(&c);
    }
}

/* Ties go to the first equal element in slice order (a stable sort's
 * rank); NaN slices as PyTorch's sorted view reads them. */
static void test_quantile_fixed(void **state)
{
    /* q = 0.5 of [3, 1, 1, 2]: sorted [1, 1, 2, 3], rank 1.5: half to the
     * second 1 (element 2), half to 2 (element 3) */
    static const double tie[] = { 3.0, 1.0, 1.0, 2.0 }, dy1[] = { 2.0 };
    static const double want_tie[] = { 0.0, 0.0, 1.0, 1.0 };
    /* quantile of [1, NaN, 2, NaN]: NaN, dy to the last NaN (element 3);
     * nanquantile q 0.25 of it: rank 0.25 over [1, 2] */
    static const double nan_x[] = { 1.0, NAN, 2.0, NAN };
    static const double want_nan[] = { 0.0, 0.0, 0.0, 2.0 }, want_nanq[] = { 1.5, 0.0, 0.5, 0.0 };
    /* nanquantile of an all-NaN slice: rank 0, its first element */
    static const double all_nan[] = { NAN, NAN, NAN }, want_all_nan[] = { 2.0, 0.0, 0.0 };
    static const double want_all_nan_q[] = { 0.0, 0.0, 2.0 };
    double dx[4], work[4];
    (void)state;
    amp_quantile_backward_f64(1, 4, 1, 0.5, AMP_QUANTILE_LINEAR, 0, tie, dy1, dx, work);
    bw_expect_torch("quantile tie", dx, want_tie, 4, 0);
    amp_quantile_backward_f64(1, 4, 1, 0.25, AMP_QUANTILE_LINEAR, 0, nan_x, dy1, dx, work);
    bw_expect_torch("quantile NaN", dx, want_nan, 4, 0);
    amp_quantile_backward_f64(1, 4, 1, 0.25, AMP_QUANTILE_LINEAR, 1, nan_x, dy1, dx, work);
    bw_expect_torch("nanquantile NaN", dx, want_nanq, 4, 0);
    amp_quantile_backward_f64(1, 3, 1, 0.5, AMP_QUANTILE_LINEAR, 1, all_nan, dy1, dx, work);
    bw_expect_torch("nanquantile all NaN", dx, want_all_nan, 3, 0);
    /* quantile of it: the last rank, the last NaN */
    amp_quantile_backward_f64(1, 3, 1, 0.5, AMP_QUANTILE_LINEAR, 0, all_nan, dy1, dx, work);
    bw_expect_torch("quantile all NaN", dx, want_all_nan_q, 3, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prod_backward),
        cmocka_unit_test(test_prod_fixed),
        cmocka_unit_test(test_cumprod_backward),
        cmocka_unit_test(test_cumprod_fixed),
        cmocka_unit_test(test_quantile_backward),
        cmocka_unit_test(test_quantile_fixed),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
