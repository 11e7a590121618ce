/*
 * test_reduce.c - the reductions of amprt/reduce.h (sum, mean, prod,
 * logsumexp, amax, amin, norm), cumsum/cumprod, trace and sort, every dtype,
 * through the public and the reference table, against long double oracles.
 * Conventions and the error bound: kernel_test_util.h.
 *
 * The masked-reduction oracle works differently from the kernel on purpose:
 * it maps every element of x to its output index (a scatter), where the
 * kernel walks each output's reduced elements (a gather).
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

/* ---- Masked reductions ---------------------------------------------------- */

typedef enum { OP_SUM, OP_MEAN, OP_PROD, OP_LOGSUMEXP, OP_AMAX, OP_AMIN, OP_NORM } red_op;
static const char *const red_op_name[] = { "sum", "mean", "prod", "logsumexp", "amax", "amin", "norm" };
#define NOPS 7

static const double norm_orders[] = { 2.0, 1.0, INFINITY, -INFINITY, 0.0, 0.5, 3.0, -1.0 };
#define NORDERS 8

#define MAXDIM 4

typedef struct {
    const char *what;
    int ndim;
    int64_t shape[MAXDIM];
    uint8_t reduce[MAXDIM];
    const double *values; /* NULL: random */
} red_case;

static const double with_nan[] = { 1.0, NAN, 2.0, -3.0, 0.5, 4.0 };
static const double with_infs[] = { -INFINITY, -INFINITY, INFINITY, -INFINITY, 1.0, INFINITY, -2.0, 0.0 };
static const double huge_values[] = { 3e4, 3.1e4, -2e4, 6e4 };

static const red_case red_cases[] = {
    { "ndim 0 copies", 0, { 0 }, { 0 }, NULL },
    { "1-d, all reduced", 1, { 7 }, { 1 }, NULL },
    { "no dim reduced copies", 2, { 3, 4 }, { 0, 0 }, NULL },
    { "rows", 2, { 3, 4 }, { 0, 1 }, NULL },
    { "columns", 2, { 3, 4 }, { 1, 0 }, NULL },
    { "non-adjacent dims 0 and 2", 3, { 2, 3, 4 }, { 1, 0, 1 }, NULL },
    { "dims 1 and 3 of 4", 4, { 2, 3, 2, 3 }, { 0, 1, 0, 1 }, NULL },
    { "size-1 dims, one reduced", 3, { 2, 1, 3 }, { 0, 1, 1 }, NULL },
    { "empty reduction: identities", 2, { 3, 0 }, { 0, 1 }, NULL },
    { "no outputs", 2, { 0, 3 }, { 0, 1 }, NULL },
    { "long rows", 2, { 2, 500 }, { 0, 1 }, NULL },
    { "NaN in the first row only", 2, { 2, 3 }, { 0, 1 }, with_nan },
    { "rows of -inf, +inf and -inf, finite", 2, { 4, 2 }, { 0, 1 }, with_infs },
    { "values near f16's max: the f32 accumulator must not overflow", 1, { 4 }, { 1 }, huge_values },
};

static size_t numel(int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    return n;
}

/* The output index of element i of x. */
static size_t output_of(const red_case *c, size_t i)
{
    size_t idx[MAXDIM], out = 0;
    for (int d = c->ndim - 1; d >= 0; d--) {
        idx[d] = i % (size_t)c->shape[d];
        i /= (size_t)c->shape[d];
    }
    for (int d = 0; d < c->ndim; d++)
        if (!c->reduce[d])
            out = out * (size_t)c->shape[d] + idx[d];
    return out;
}

/* The oracle of `op` over v[0..m), and its acc in units of u_acc. */
static long double red_oracle(red_op op, double p, const long double *v, size_t m, double *acc_units)
{
    long double sum = 0, sum_abs = 0, prod = 1, r;
    long double mx = -INFINITY, mn = INFINITY;
    int any_nan = 0;
    for (size_t i = 0; i < m; i++) {
        sum += v[i];
        sum_abs += fabsl(v[i]);
        prod *= v[i];
        any_nan |= isnan(v[i]);
        if (v[i] > mx)
            mx = v[i];
        if (v[i] < mn)
            mn = v[i];
    }
    *acc_units = 0;
    switch (op) {
    case OP_SUM:
        *acc_units = (double)(m * finite_or_zero(sum_abs));
        return sum;
    case OP_MEAN:
        r = sum / (long double)m;
        *acc_units = (double)(finite_or_zero(sum_abs) + finite_or_zero(fabsl(r)));
        return r;
    case OP_PROD:
        *acc_units = (double)((m + 1) * finite_or_zero(fabsl(prod)));
        return prod;
    case OP_AMAX: return any_nan ? NAN : mx;
    case OP_AMIN: return any_nan ? NAN : mn;
    case OP_LOGSUMEXP: {
        /* PyTorch's rule: shift by the max unless it is infinite. */
        long double shift = isinf(mx) ? 0 : mx, s = 0, max_dist = 0;
        for (size_t i = 0; i < m; i++) {
            s += expl(v[i] - shift);
            if (isfinite(v[i]) && fabsl(v[i] - shift) > max_dist)
                max_dist = fabsl(v[i] - shift);
        }
        r = logl(s) + shift;
        *acc_units = (double)(max_dist + m + 4 + 2 * finite_or_zero(fabsl(logl(s))) + finite_or_zero(fabsl(r)));
        return r;
    }
    case OP_NORM: {
        long double s = 0, pl = p;
        if (p == INFINITY || p == -INFINITY) {
            r = p > 0 ? 0 : INFINITY;
            for (size_t i = 0; i < m; i++)
                if (p > 0 ? fabsl(v[i]) > r : fabsl(v[i]) < r)
                    r = fabsl(v[i]);
            return any_nan ? NAN : r;
        }
        for (size_t i = 0; i < m; i++)
            s += p == 0 ? (v[i] != 0) : powl(fabsl(v[i]), pl);
        if (p == 0)
            return s;
        r = powl(s, 1 / pl);
        if (p == 1)
            *acc_units = (double)(m * finite_or_zero(r));
        else if (p == 2)
            *acc_units = (double)((m / 2.0L + 2) * finite_or_zero(r));
        else
            *acc_units = (double)(finite_or_zero(r) *
                                  ((m + 4) / fabsl(pl) + finite_or_zero(fabsl(logl(s))) / fabsl(pl) + 3));
        return r;
    }
    }
    return 0;
}

static void run_reduce(const amp_kernel_table *k, red_op op, double p, const red_case *c, const tensor *x,
                       tensor *y)
{
    const int64_t *shape = c->ndim ? c->shape : NULL; /* ndim 0 must not look */
    const uint8_t *reduce = c->ndim ? c->reduce : NULL;
    switch (op) {
    case OP_SUM: KCALL(k, x->t, sum, c->ndim, shape, reduce, x->data, y->data); break;
    case OP_MEAN: KCALL(k, x->t, mean, c->ndim, shape, reduce, x->data, y->data); break;
    case OP_PROD: KCALL(k, x->t, prod, c->ndim, shape, reduce, x->data, y->data); break;
    case OP_LOGSUMEXP: KCALL(k, x->t, logsumexp, c->ndim, shape, reduce, x->data, y->data); break;
    case OP_AMAX: KCALL(k, x->t, amax, c->ndim, shape, reduce, x->data, y->data); break;
    case OP_AMIN: KCALL(k, x->t, amin, c->ndim, shape, reduce, x->data, y->data); break;
    case OP_NORM: KCALL(k, x->t, norm, c->ndim, shape, reduce, p, x->data, y->data); break;
    }
}

static void check_reduce_case(amp_dtype t, red_op op, double p, const red_case *c)
{
    size_t n = numel(c->ndim, c->shape), outputs = 1;
    tensor x, y[NTABLES];
    long double *v = malloc((n ? n : 1) * sizeof *v);
    char what[160];

    assert_non_null(v);
    for (int d = 0; d < c->ndim; d++)
        if (!c->reduce[d])
            outputs *= (size_t)c->shape[d];
    if (c->values != NULL)
        x = tensor_of(t, n, c->values);
    else if (op == OP_PROD) { /* magnitudes in [0.5, 2]: no overflow in 500 factors */
        x = tensor_new(t, n);
        for (size_t i = 0; i < n; i++)
            set(&x, i, uniform(0.5, 2.0) * (uniform(0, 1) < 0.5 ? -1 : 1));
    } else
        x = tensor_random(t, n, -4.0, 4.0);
    snprintf(what, sizeof what, "%s (p %g) %s", red_op_name[op], p, c->what);
    for (int e = 0; e < NTABLES; e++) {
        y[e] = tensor_random(t, outputs, 7.0, 8.0); /* garbage to overwrite */
        run_reduce(tables[e], op, p, c, &x, &y[e]);
        for (size_t o = 0; o < outputs; o++) {
            size_t m = 0;
            double acc_units;
            long double oracle;
            for (size_t i = 0; i < n; i++)
                if (output_of(c, i) == o)
                    v[m++] = get(&x, i);
            oracle = red_oracle(op, p, v, m, &acc_units);
            expect_close(&y[e], o, oracle, acc_units * u_acc(t), what);
        }
    }
    expect_public_equals_ref(&y[0], &y[1]);
    free(v);
    tensor_free(&x);
    tensor_free(&y[0]);
    tensor_free(&y[1]);
}

static void test_masked_reductions(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof red_cases / sizeof red_cases[0]; ci++)
            for (int op = OP_SUM; op < NOPS; op++) {
                if (op == OP_NORM)
                    for (int pi = 0; pi < NORDERS; pi++)
                        check_reduce_case(dtypes[d], OP_NORM, norm_orders[pi], &red_cases[ci]);
                else
                    check_reduce_case(dtypes[d], (red_op)op, 0.0, &red_cases[ci]);
            }
}

/* Among equal values the first stays: amax(-0, +0) is -0, amax(+0, -0) is
 * +0 (PyTorch prints the same); likewise amin. */
static void test_amax_amin_signed_zeros(void **state)
{
    static const double neg_first[] = { -0.0, 0.0 }, pos_first[] = { 0.0, -0.0 };
    const int64_t shape[1] = { 2 };
    const uint8_t reduce[1] = { 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor a = tensor_of(t, 2, neg_first), b = tensor_of(t, 2, pos_first), y = tensor_new(t, 1);
            KCALL(tables[e], t, amax, 1, shape, reduce, a.data, y.data);
            assert_true(get(&y, 0) == 0 && signbit(get(&y, 0)));
            KCALL(tables[e], t, amax, 1, shape, reduce, b.data, y.data);
            assert_true(get(&y, 0) == 0 && !signbit(get(&y, 0)));
            KCALL(tables[e], t, amin, 1, shape, reduce, a.data, y.data);
            assert_true(get(&y, 0) == 0 && signbit(get(&y, 0)));
            KCALL(tables[e], t, amin, 1, shape, reduce, b.data, y.data);
            assert_true(get(&y, 0) == 0 && !signbit(get(&y, 0)));
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&y);
        }
}

/* Results printed by PyTorch 1.13 (float32) for the same inputs:
 *   torch.logsumexp(torch.tensor([-inf, -inf]), 0)      -> -inf
 *   torch.logsumexp(torch.tensor([inf, -inf]), 0)       -> inf
 *   torch.logsumexp(torch.empty(0), 0)                  -> -inf
 *   torch.linalg.vector_norm(torch.tensor([0., -0., 3., -4.]), p) for
 *   p = 0, 1, 2, inf, -inf, 0.5, -1, 3 -> 2, 7, 5, 4, 0, 13.928203582763672,
 *   0, 4.497941493988037; with a NaN appended: p = 0 gives 3, the others NaN.
 *   torch.mean(torch.empty(0)) -> nan, prod -> 1, sum -> 0. */
static void test_reduce_matches_torch(void **state)
{
    static const double zs[] = { 0.0, -0.0, 3.0, -4.0, NAN };
    static const double torch_norm[NORDERS] = { 5.0, 7.0, 4.0, 0.0, 2.0, 13.928203582763672, 4.497941493988037,
                                                0.0 };
    static const double neg_infs[] = { -INFINITY, -INFINITY }, mixed_infs[] = { INFINITY, -INFINITY };
    const int64_t four[1] = { 4 }, five[1] = { 5 }, two[1] = { 2 }, none[1] = { 0 };
    const uint8_t all[1] = { 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor x = tensor_of(t, 5, zs), y = tensor_new(t, 1);
            tensor a = tensor_of(t, 2, neg_infs), b = tensor_of(t, 2, mixed_infs);
            for (int pi = 0; pi < NORDERS; pi++) {
                KCALL(tables[e], t, norm, 1, four, all, norm_orders[pi], x.data, y.data);
                /* torch's numbers are f32: a few f32 ulps for every dtype */
                expect_close(&y, 0, torch_norm[pi], 0x1p-22 * torch_norm[pi], "norm vs torch");
                KCALL(tables[e], t, norm, 1, five, all, norm_orders[pi], x.data, y.data);
                if (norm_orders[pi] == 0)
                    assert_true(get(&y, 0) == 3.0);
                else
                    assert_true(isnan(get(&y, 0)));
            }
            KCALL(tables[e], t, logsumexp, 1, two, all, a.data, y.data);
            assert_true(get(&y, 0) == -INFINITY);
            KCALL(tables[e], t, logsumexp, 1, two, all, b.data, y.data);
            assert_true(get(&y, 0) == INFINITY);
            KCALL(tables[e], t, logsumexp, 1, none, all, NULL, y.data);
            assert_true(get(&y, 0) == -INFINITY);
            KCALL(tables[e], t, mean, 1, none, all, NULL, y.data);
            assert_true(isnan(get(&y, 0)));
            KCALL(tables[e], t, prod, 1, none, all, NULL, y.data);
            assert_true(get(&y, 0) == 1.0);
            KCALL(tables[e], t, sum, 1, none, all, NULL, y.data);
            assert_true(get(&y, 0) == 0.0);
            tensor_free(&x);
            tensor_free(&y);
            tensor_free(&a);
            tensor_free(&b);
        }
}

/* ---- cumsum, cumprod ------------------------------------------------------ */

typedef struct {
    int64_t outer, dim, inner;
} axis_case;

static const axis_case axis_cases[] = {
    { 1, 5, 1 }, { 3, 4, 2 }, { 2, 0, 3 }, { 0, 3, 2 }, { 2, 1, 3 }, { 2, 3, 0 }, { 1, 700, 1 }, { 2, 300, 3 },
};
#define NAXIS_CASES (sizeof axis_cases / sizeof axis_cases[0])

static void test_scans(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < NAXIS_CASES; ci++)
            for (int is_prod = 0; is_prod < 2; is_prod++) {
                const axis_case *c = &axis_cases[ci];
                amp_dtype t = dtypes[d];
                size_t n = (size_t)(c->outer * c->dim * c->inner);
                tensor x = tensor_new(t, n), y[NTABLES], in_place;
                for (size_t i = 0; i < n; i++)
                    set(&x, i, is_prod ? uniform(0.8, 1.25) * (uniform(0, 1) < 0.5 ? -1 : 1) : uniform(-4, 4));
                in_place = tensor_copy(&x);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, n);
                    if (is_prod)
                        KCALL(tables[e], t, cumprod, c->outer, c->dim, c->inner, x.data, y[e].data);
                    else
                        KCALL(tables[e], t, cumsum, c->outer, c->dim, c->inner, x.data, y[e].data);
                    for (int64_t o = 0; o < c->outer; o++)
                        for (int64_t in = 0; in < c->inner; in++) {
                            long double run = is_prod ? 1 : 0, run_abs = 0;
                            for (int64_t k = 0; k < c->dim; k++) {
                                size_t i = (size_t)((o * c->dim + k) * c->inner + in);
                                run = is_prod ? run * get(&x, i) : run + get(&x, i);
                                run_abs += fabsl(get(&x, i));
                                /* k + 1 dependent f32 operations */
                                expect_close(&y[e], i, run,
                                             (double)((k + 1) * u_acc(t) * (is_prod ? fabsl(run) : run_abs)),
                                             is_prod ? "cumprod" : "cumsum");
                            }
                        }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                if (is_prod) /* y == x */
                    KCALL(tables[0], t, cumprod, c->outer, c->dim, c->inner, in_place.data, in_place.data);
                else
                    KCALL(tables[0], t, cumsum, c->outer, c->dim, c->inner, in_place.data, in_place.data);
                assert_memory_equal(in_place.data, y[0].data, n * amp_dtype_size(t));
                tensor_free(&x);
                tensor_free(&in_place);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* ---- trace ---------------------------------------------------------------- */

static void test_trace(void **state)
{
    static const int64_t sizes[][2] = { { 3, 3 }, { 2, 5 }, { 5, 2 }, { 0, 4 }, { 1, 1 }, { 400, 400 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            amp_dtype t = dtypes[d];
            int64_t rows = sizes[s][0], cols = sizes[s][1], diag = rows < cols ? rows : cols;
            tensor x = tensor_random(t, (size_t)(rows * cols), -4, 4), y[NTABLES];
            long double sum = 0, sum_abs = 0;
            for (int64_t i = 0; i < diag; i++) {
                sum += get(&x, (size_t)(i * cols + i));
                sum_abs += fabsl(get(&x, (size_t)(i * cols + i)));
            }
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_random(t, 1, 7, 8);
                KCALL(tables[e], t, trace, rows, cols, x.data, y[e].data);
                expect_close(&y[e], 0, sum, (double)(diag * u_acc(t) * sum_abs), "trace");
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&x);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- sort ----------------------------------------------------------------- */

/* Whether a sorts strictly before b by value (NaN largest). */
static int value_before(double a, double b, int descending)
{
    if (isnan(a) || isnan(b))
        return descending ? isnan(a) && !isnan(b) : isnan(b) && !isnan(a);
    return descending ? a > b : a < b;
}

static void check_sorted(const axis_case *c, int descending, const tensor *x, const tensor *values,
                         const int64_t *indices)
{
    size_t size = amp_dtype_size(x->t);
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t in = 0; in < c->inner; in++) {
            char *seen = calloc((size_t)(c->dim ? c->dim : 1), 1);
            assert_non_null(seen);
            for (int64_t k = 0; k < c->dim; k++) {
                size_t at = (size_t)((o * c->dim + k) * c->inner + in);
                int64_t src = indices[at];
                assert_true(src >= 0 && src < c->dim && !seen[src]); /* a permutation */
                seen[src] = 1;
                /* the value is x's element, bit for bit */
                assert_memory_equal((const char *)values->data + at * size,
                                    (const char *)x->data + (size_t)((o * c->dim + src) * c->inner + in) * size,
                                    size);
                if (k > 0) {
                    size_t prev = at - (size_t)c->inner;
                    double a = get(values, prev), b = get(values, at);
                    /* ordered, and equal values (NaNs among themselves,
                     * -0 and +0 too) in their original order */
                    assert_false(value_before(b, a, descending));
                    if (!value_before(a, b, descending))
                        assert_true(indices[prev] < src);
                }
            }
            free(seen);
        }
}

static void test_sort(void **state)
{
    static const double pool[] = { -0.0, 0.0, 1.0, -1.0, 2.5, NAN, INFINITY, -INFINITY, 3.0, 1.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < NAXIS_CASES; ci++)
            for (int descending = 0; descending < 2; descending++)
                for (int with_ties = 0; with_ties < 2; with_ties++) {
                    const axis_case *c = &axis_cases[ci];
                    amp_dtype t = dtypes[d];
                    size_t n = (size_t)(c->outer * c->dim * c->inner);
                    tensor x = tensor_new(t, n), values[NTABLES];
                    int64_t *indices[NTABLES];
                    for (size_t i = 0; i < n; i++)
                        set(&x, i, with_ties ? pool[(size_t)uniform(0, 10) % 10] : uniform(-100, 100));
                    for (int e = 0; e < NTABLES; e++) {
                        values[e] = tensor_new(t, n);
                        indices[e] = malloc((n ? n : 1) * sizeof(int64_t));
                        assert_non_null(indices[e]);
                        KCALL(tables[e], t, sort, c->outer, c->dim, c->inner, descending, x.data, values[e].data,
                              indices[e]);
                        check_sorted(c, descending, &x, &values[e], indices[e]);
                    }
                    expect_public_equals_ref(&values[0], &values[1]);
                    if (active_is_ref())
                        assert_memory_equal(indices[0], indices[1], n * sizeof(int64_t));
                    for (int e = 0; e < NTABLES; e++) {
                        tensor_free(&values[e]);
                        free(indices[e]);
                    }
                    tensor_free(&x);
                }
}

/* torch.sort(v, stable=True[, descending=True]) in PyTorch 1.13 for
 * v = [3, nan, 1, 3, -0., 0., nan, -inf, inf, 1]. */
static void test_sort_matches_torch(void **state)
{
    static const double v[10] = { 3, NAN, 1, 3, -0.0, 0.0, NAN, -INFINITY, INFINITY, 1 };
    static const int64_t ascending[10] = { 7, 4, 5, 2, 9, 0, 3, 8, 1, 6 };
    static const int64_t descending[10] = { 1, 6, 8, 0, 3, 2, 9, 4, 5, 7 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor x = tensor_of(t, 10, v), values = tensor_new(t, 10);
            int64_t indices[10];
            KCALL(tables[e], t, sort, 1, 10, 1, 0, x.data, values.data, indices);
            assert_memory_equal(indices, ascending, sizeof indices);
            KCALL(tables[e], t, sort, 1, 10, 1, 1, x.data, values.data, indices);
            assert_memory_equal(indices, descending, sizeof indices);
            assert_true(signbit(get(&values, 7)) && !signbit(get(&values, 8))); /* -0 then +0, as torch */
            tensor_free(&x);
            tensor_free(&values);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_masked_reductions),
        cmocka_unit_test(test_amax_amin_signed_zeros),
        cmocka_unit_test(test_reduce_matches_torch),
        cmocka_unit_test(test_scans),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_sort_matches_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
