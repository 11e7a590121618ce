/*
 * test_extra.c - prelu and cross (amprt/elementwise.h), renorm,
 * cosine_similarity and the margin losses (amprt/reduce.h), index_put,
 * index_put_mask and grid_sampler (amprt/spatial.h), every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts (direct per-element formulas,
 * coordinates instead of flat offsets, reflection by repeated mirroring,
 * ...); the index and target checks; and fixed cases whose
 * answers were printed by PyTorch 1.13 in float64 (the program does not
 * need torch).  Conventions and the error bound: kernel_test_util.h.  Each
 * oracle returns the evaluation error in units of u_acc: roughly every
 * rounded operation costs one or two units of the magnitude it produces,
 * a sum of n terms n units of the sum of their magnitudes.
 *
 * Divergences from PyTorch 1.13 left out on purpose (see the report that
 * came with this file): grid_sampler with a NaN grid coordinate (the kernel
 * reads nothing, 0; PyTorch gives NaN with zeros padding and a border value
 * with border padding), and the MEAN of zero samples for multi_margin_loss
 * (PyTorch 0, contract and kernel NaN) and multilabel_margin_loss (PyTorch
 * returns uninitialised memory).
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

static const int reductions[] = { AMP_REDUCTION_NONE, AMP_REDUCTION_MEAN, AMP_REDUCTION_SUM };
static const char *const reduction_name[] = { "none", "mean", "sum" };

/* ---- Helpers --------------------------------------------------------------- */

static int64_t numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

/* Elements an operand read with `stride` over `shape` needs. */
static size_t extent(int ndim, const int64_t *shape, const int64_t *stride)
{
    int64_t last = 0;
    if (numel(ndim, shape) == 0)
        return 0;
    for (int d = 0; d < ndim; d++)
        last += (shape[d] - 1) * stride[d];
    return (size_t)last + 1;
}

/* Row-major coordinates of flat index i. */
static void coords_of(int ndim, const int64_t *shape, int64_t i, int64_t *coord)
{
    for (int d = ndim - 1; d >= 0; d--) {
        coord[d] = i % shape[d];
        i /= shape[d];
    }
}

static size_t at(int ndim, const int64_t *coord, const int64_t *stride)
{
    int64_t off = 0;
    for (int d = 0; d < ndim; d++)
        off += coord[d] * stride[d];
    return (size_t)off;
}

/* y must equal `want` bit for bit (a copy, or untouched). */
static void expect_same(const tensor *y, const tensor *want, const char *what)
{
    if (memcmp(y->data, want->data, y->n * amp_dtype_size(y->t)) != 0)
        fail_msg("%s %s: output changed", what, amp_dtype_name(y->t));
}

/* The value a copy must produce exactly (NaN matches NaN). */
static void expect_exact(const tensor *y, size_t i, long double want, const char *what)
{
    long double v = get(y, i);
    if (!(v == want || (isnan(v) && isnan(want))))
        fail_msg("%s %s [%zu]: got %.17Lg, want %.17Lg", what, amp_dtype_name(y->t), i, v, want);
}

/* One loss per sample, or their mean or sum; acc[] in units of u_acc. */
static void check_losses(const tensor *y, int reduction, size_t n, const long double *loss, const long double *acc,
                         const char *what)
{
    long double total = 0, total_abs = 0, acc_sum = 0, u = u_acc(y->t);
    for (size_t i = 0; i < n; i++) {
        total += loss[i];
        total_abs += finite_or_zero(fabsl(loss[i]));
        acc_sum += acc[i];
    }
    if (reduction == AMP_REDUCTION_NONE)
        for (size_t i = 0; i < n; i++)
            expect_close(y, i, loss[i], acc[i] * u, what);
    else if (reduction == AMP_REDUCTION_SUM)
        expect_close(y, 0, total, (acc_sum + n * total_abs) * u, what);
    else /* 0/0 = NaN for n = 0 */
        expect_close(y, 0, total / (long double)n,
                     ((acc_sum + n * total_abs) / (long double)n + finite_or_zero(fabsl(total / (long double)n))) * u,
                     what);
}

/* A double parameter as the kernel sees it: rounded to the compute type. */
static long double as_acc(amp_dtype t, double v)
{
    return t == AMP_F64 ? (long double)v : (long double)(float)v;
}

static void expect_all_close(const tensor *y, const double *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        expect_close(y, i, want[i], 64 * u_acc(y->t) * (isfinite(want[i]) ? fabs(want[i]) + 4 : 0), what);
}

/* ---- prelu ------------------------------------------------------------------ */

static void test_prelu(void **state)
{
    static const int64_t shapes[][3] = { { 2, 3, 4 }, { 1, 1, 1 }, { 0, 3, 2 }, { 3, 5, 0 }, { 4, 16, 33 }, { 1, 4, 1 } };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int shared = 0; shared < 2; shared++) {
                amp_dtype t = dtypes[d];
                int64_t outer = shapes[s][0], ch = shapes[s][1], inner = shapes[s][2];
                int64_t nw = shared ? 1 : ch;
                size_t n = (size_t)(outer * ch * inner);
                tensor x = tensor_random(t, n, -4, 4), w = tensor_random(t, (size_t)nw, -1, 1), y[NTABLES];
                char what[96];
                /* edge values: NaN, +-inf, signed zeros */
                static const double edge[] = { NAN, INFINITY, -INFINITY, 0.0, -0.0 };
                for (size_t i = 0; i < 5 && i < n; i++)
                    set(&x, i * 3 % n, edge[i]);
                snprintf(what, sizeof what, "prelu [%lld, %lld, %lld] %s weight", (long long)outer, (long long)ch,
                         (long long)inner, shared ? "shared" : "per-channel");
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_random(t, n, 7, 8);
                    KCALL(tables[e], t, prelu, outer, ch, inner, nw, x.data, w.data, y[e].data);
                    for (size_t i = 0; i < n; i++) {
                        long double v = get(&x, i), wc = get(&w, shared ? 0 : (i / (size_t)inner) % (size_t)ch);
                        long double o = isnan(v) ? v : v > 0 ? v : wc * v; /* PReLU(x) = max(0,x) + w min(0,x) */
                        expect_close(&y[e], i, o, finite_or_zero(fabsl(o)) * u_acc(t), what);
                        if (v == 0 && !signbit(get(&x, i)) && wc > 0)
                            assert_false(signbit(get(&y[e], i))); /* +0 stays +0: w * (+0) */
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                tensor_free(&x);
                tensor_free(&w);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* ---- renorm ------------------------------------------------------------------ */

static long double pnorm_of(const long double *v, size_t n, double p)
{
    long double acc = 0;
    for (size_t i = 0; i < n; i++) {
        long double a = fabsl(v[i]);
        if (isinf(p))
            acc = a > acc ? a : acc;
        else
            acc += powl(a, p);
    }
    return isinf(p) ? acc : powl(acc, 1.0L / p);
}

static void test_renorm(void **state)
{
    static const int64_t shapes[][3] = { { 2, 3, 4 }, { 1, 5, 1 }, { 3, 4, 0 }, { 0, 2, 3 }, { 7, 6, 13 } };
    static const double ps[] = { 2, 1, 3, 0.5, INFINITY };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
                amp_dtype t = dtypes[d];
                int64_t outer = shapes[s][0], len = shapes[s][1], inner = shapes[s][2];
                size_t n = (size_t)(outer * len * inner), m = (size_t)(outer * inner);
                double p = ps[pi], maxnorm;
                tensor x = tensor_new(t, n), y[NTABLES];
                long double *norm = malloc((size_t)len * sizeof *norm), *slice = malloc((m ? m : 1) * sizeof *slice);
                long double lo = INFINITY, hi = 0;
                char what[96];
                assert_non_null(norm);
                assert_non_null(slice);
                /* slices of growing size, so that some exceed maxnorm */
                for (size_t i = 0; i < n; i++)
                    set(&x, i, uniform(-1, 1) * (1 + (double)((i / (size_t)inner) % (size_t)len)));
                for (int64_t l = 0; l < len; l++) {
                    for (int64_t o = 0; o < outer; o++)
                        for (int64_t i = 0; i < inner; i++)
                            slice[o * inner + i] = get(&x, (size_t)((o * len + l) * inner + i));
                    norm[l] = pnorm_of(slice, m, p);
                    lo = fminl(lo, norm[l]);
                    hi = fmaxl(hi, norm[l]);
                }
                /* a maxnorm of 1/64ths between the norms, away from each */
                maxnorm = len ? floor((double)((lo + hi) / 2) * 64) / 64 : 1;
                for (int64_t l = 0; l < len; l++)
                    if (fabsl(norm[l] - maxnorm) < 1e-3L * maxnorm)
                        maxnorm += 1.0 / 64;
                snprintf(what, sizeof what, "renorm [%lld, %lld, %lld] p %g maxnorm %g", (long long)outer,
                         (long long)len, (long long)inner, p, maxnorm);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_random(t, n, 7, 8);
                    KCALL(tables[e], t, renorm, outer, len, inner, p, maxnorm, x.data, y[e].data);
                    for (size_t i = 0; i < n; i++) {
                        long double nl = norm[(i / (size_t)inner) % (size_t)len];
                        long double o = get(&x, i) * (nl > maxnorm ? maxnorm / (nl + 1e-7L) : 1.0L);
                        long double units = ((long double)m + 4) * (p < 1 ? 1 / p : 1) + 3 * p + 8;
                        expect_close(&y[e], i, o, fabsl(o) * (isinf(p) ? 4 : units) * u_acc(t), what);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                free(norm);
                free(slice);
                tensor_free(&x);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* A slice whose norm equals maxnorm is left alone (the test is norm > maxnorm). */
static void test_renorm_at_maxnorm(void **state)
{
    static const double xs[] = { 3.0, 0.5, 4.0, -0.25 }; /* [2, 2]: slices [3, 4] (norm 5) and [0.5, -0.25] */
    static const double ps[] = { 2, INFINITY, 1 }, maxnorms[] = { 5, 4, 7 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int pi = 0; pi < 3; pi++)
            for (int e = 0; e < NTABLES; e++) {
                amp_dtype t = dtypes[d];
                tensor x = tensor_of(t, 4, xs), y = tensor_new(t, 4);
                KCALL(tables[e], t, renorm, 2, 2, 1, ps[pi], maxnorms[pi], x.data, y.data);
                expect_same(&y, &x, "renorm slice norm == maxnorm");
                tensor_free(&x);
                tensor_free(&y);
            }
}

/* ---- cosine_similarity, cross --------------------------------------------------- */

typedef struct {
    int ndim;
    int64_t shape[3];
    int dim;
    int64_t a_stride[3], b_stride[3];
    double eps;
} pair_case;

static const pair_case cos_cases[] = {
    { 2, { 4, 5 }, 1, { 5, 1 }, { 5, 1 }, 1e-8 },
    { 2, { 4, 5 }, 0, { 5, 1 }, { 0, 1 }, 1e-8 },        /* b broadcast along the reduced dim */
    { 3, { 2, 3, 4 }, 1, { 12, 4, 1 }, { 0, 1, 3 }, 1e-8 }, /* b [4, 3] transposed, broadcast on dim 0 */
    { 3, { 2, 7, 3 }, 2, { 1, 2, 14 }, { 21, 3, 1 }, 1e-8 }, /* a permuted */
    { 2, { 3, 6 }, 1, { 6, 1 }, { 6, 1 }, 4.0 },         /* norms below eps: divided by eps */
    { 2, { 0, 3 }, 1, { 3, 1 }, { 3, 1 }, 1e-8 },
    { 2, { 3, 0 }, 1, { 1, 1 }, { 1, 1 }, 1e-8 },        /* empty vectors: 0 */
    { 2, { 3, 300 }, 1, { 300, 1 }, { 1, 3 }, 1e-8 },
};

static void test_cosine_similarity(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof cos_cases / sizeof cos_cases[0]; ci++) {
            const pair_case *c = &cos_cases[ci];
            amp_dtype t = dtypes[d];
            int64_t n_out = 1, len = c->shape[c->dim];
            int64_t oshape[3], coord[3];
            int on = 0;
            tensor a = tensor_random(t, extent(c->ndim, c->shape, c->a_stride), -2, 2);
            tensor b = tensor_random(t, extent(c->ndim, c->shape, c->b_stride), -2, 2), y[NTABLES];
            long double eps = as_acc(t, c->eps);
            char what[96];
            if (ci == 0)
                for (int64_t l = 0; l < len; l++) /* a's first vector is zero */
                    set(&a, (size_t)(l * c->a_stride[1]), 0.0);
            if (c->eps > 1)
                for (size_t i = 0; i < a.n; i++)
                    set(&a, i, get(&a, i) / 4);
            for (int k = 0; k < c->ndim; k++)
                if (k != c->dim)
                    n_out *= oshape[on++] = c->shape[k];
            snprintf(what, sizeof what, "cosine_similarity case %zu", ci);
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_random(t, (size_t)n_out, 7, 8);
                KCALL(tables[e], t, cosine_similarity, c->ndim, c->shape, c->dim, a.data, c->a_stride, b.data,
                      c->b_stride, c->eps, y[e].data);
                for (int64_t o = 0; o < n_out; o++) {
                    long double dot = 0, na = 0, nb = 0, absdot = 0, va, vb;
                    int64_t oc[3];
                    coords_of(on, oshape, o, oc);
                    for (int k = 0, j = 0; k < c->ndim; k++)
                        coord[k] = k == c->dim ? 0 : oc[j++];
                    for (int64_t l = 0; l < len; l++) {
                        coord[c->dim] = l;
                        va = get(&a, at(c->ndim, coord, c->a_stride));
                        vb = get(&b, at(c->ndim, coord, c->b_stride));
                        dot += va * vb;
                        absdot += fabsl(va * vb);
                        na += va * va;
                        nb += vb * vb;
                    }
                    na = fmaxl(sqrtl(na), eps);
                    nb = fmaxl(sqrtl(nb), eps);
                    expect_close(&y[e], (size_t)o, dot / (na * nb), (2 * len + 8) * absdot / (na * nb) * u_acc(t), what);
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

static const pair_case cross_cases[] = {
    { 2, { 4, 3 }, 1, { 3, 1 }, { 3, 1 }, 0 },
    { 2, { 3, 5 }, 0, { 5, 1 }, { 1, 3 }, 0 },          /* b transposed */
    { 3, { 2, 3, 4 }, 1, { 12, 4, 1 }, { 0, 1, 3 }, 0 }, /* b broadcast on dim 0 */
    { 3, { 2, 4, 3 }, 2, { 0, 0, 1 }, { 12, 3, 1 }, 0 }, /* a one vector for all */
    { 2, { 0, 3 }, 1, { 3, 1 }, { 3, 1 }, 0 },
    { 1, { 3 }, 0, { 1 }, { 1 }, 0 },
};

static void test_cross(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof cross_cases / sizeof cross_cases[0]; ci++) {
            const pair_case *c = &cross_cases[ci];
            amp_dtype t = dtypes[d];
            size_t n = (size_t)numel(c->ndim, c->shape);
            tensor a = tensor_random(t, extent(c->ndim, c->shape, c->a_stride), -3, 3);
            tensor b = tensor_random(t, extent(c->ndim, c->shape, c->b_stride), -3, 3), y[NTABLES];
            char what[64];
            if (ci == 0)
                set(&a, 4, NAN); /* (1, 1): NaN in components 0 and 2 of row 1 */
            snprintf(what, sizeof what, "cross case %zu", ci);
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_random(t, n, 7, 8);
                KCALL(tables[e], t, cross, c->ndim, c->shape, c->dim, a.data, c->a_stride, b.data, c->b_stride,
                      y[e].data);
                for (size_t i = 0; i < n; i++) {
                    int64_t coord[3];
                    long double av[3], bv[3], o, acc;
                    int comp, p1, p2;
                    coords_of(c->ndim, c->shape, (int64_t)i, coord);
                    comp = (int)coord[c->dim];
                    for (int k = 0; k < 3; k++) {
                        coord[c->dim] = k;
                        av[k] = get(&a, at(c->ndim, coord, c->a_stride));
                        bv[k] = get(&b, at(c->ndim, coord, c->b_stride));
                    }
                    /* (a x b)_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1} */
                    p1 = (comp + 1) % 3;
                    p2 = (comp + 2) % 3;
                    o = av[p1] * bv[p2] - av[p2] * bv[p1];
                    acc = 2 * (fabsl(av[p1] * bv[p2]) + fabsl(av[p2] * bv[p1]));
                    expect_close(&y[e], i, o, finite_or_zero(acc) * u_acc(t), what);
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- index_put, index_put_mask ----------------------------------------------- */

typedef struct {
    int ndim;
    int64_t shape[4];
    int index_ndim;
    int64_t x_dim0;
    int64_t v_stride[4];
} iput_case;

static const iput_case iput_cases[] = {
    { 2, { 4, 3 }, 1, 5, { 3, 1 } },
    { 3, { 2, 3, 2 }, 2, 4, { 0, 2, 1 } },     /* 2-D index, values broadcast on dim 0 */
    { 1, { 6 }, 1, 3, { 1 } },                 /* rows of one element */
    { 3, { 5, 2, 3 }, 1, 3, { 1, 0, 5 } },     /* values [3][5] transposed, broadcast on dim 1 */
    { 2, { 0, 3 }, 1, 4, { 3, 1 } },           /* no index */
    { 2, { 40, 7 }, 1, 9, { 7, 1 } },          /* many repeats */
};

static void test_index_put(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof iput_cases / sizeof iput_cases[0]; ci++)
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const iput_case *c = &iput_cases[ci];
                amp_dtype t = dtypes[d];
                int64_t n_index = numel(c->index_ndim, c->shape), inner = numel(c->ndim - c->index_ndim, c->shape + c->index_ndim);
                int64_t *index = malloc((size_t)(n_index ? n_index : 1) * sizeof *index);
                size_t ny = (size_t)(c->x_dim0 * inner);
                tensor v = tensor_random(t, extent(c->ndim, c->shape, c->v_stride), -4, 4);
                tensor y0 = tensor_random(t, ny, -4, 4), y[NTABLES];
                char what[96];
                int rc;
                assert_non_null(index);
                for (int64_t j = 0; j < n_index; j++) /* in [-x_dim0, x_dim0), repeats certain */
                    index[j] = (int64_t)(rng_next() % (uint64_t)(2 * c->x_dim0)) - c->x_dim0;
                if (n_index >= 3) {
                    index[n_index - 1] = index[0] - (index[0] < 0 ? -c->x_dim0 : c->x_dim0); /* the same row, other sign */
                    index[1] = index[0];
                }
                snprintf(what, sizeof what, "index_put case %zu%s", ci, accumulate ? " accumulate" : "");
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_copy(&y0);
                    KCALL_STATUS(rc, tables[e], t, index_put, c->ndim, c->shape, c->index_ndim, index, c->x_dim0, v.data,
                                 c->v_stride, accumulate, y[e].data);
                    assert_int_equal(rc, AMP_OK);
                    for (int64_t row = 0; row < c->x_dim0; row++)
                        for (int64_t r = 0; r < inner; r++) {
                            long double sum = get(&y0, (size_t)(row * inner + r)), abs_sum = fabsl(sum);
                            int64_t last = -1, count = 0, coord[4];
                            for (int64_t j = 0; j < n_index; j++) {
                                if ((index[j] + c->x_dim0) % c->x_dim0 != row)
                                    continue;
                                coords_of(c->ndim, c->shape, j * inner + r, coord);
                                sum += get(&v, at(c->ndim, coord, c->v_stride));
                                abs_sum += fabsl(get(&v, at(c->ndim, coord, c->v_stride)));
                                last = j;
                                count++;
                            }
                            if (accumulate)
                                expect_close(&y[e], (size_t)(row * inner + r), sum, (count + 1) * abs_sum * u_acc(t), what);
                            else if (last < 0)
                                expect_exact(&y[e], (size_t)(row * inner + r), get(&y0, (size_t)(row * inner + r)), what);
                            else {
                                coords_of(c->ndim, c->shape, last * inner + r, coord);
                                expect_exact(&y[e], (size_t)(row * inner + r), get(&v, at(c->ndim, coord, c->v_stride)),
                                             what);
                            }
                        }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                /* an index out of range, last: nothing written */
                if (n_index > 0)
                    for (int bad = 0; bad < 2; bad++) {
                        int64_t keep = index[n_index - 1];
                        index[n_index - 1] = bad ? -c->x_dim0 - 1 : c->x_dim0;
                        for (int e = 0; e < NTABLES; e++) {
                            tensor yb = tensor_copy(&y0);
                            KCALL_STATUS(rc, tables[e], t, index_put, c->ndim, c->shape, c->index_ndim, index, c->x_dim0,
                                         v.data, c->v_stride, accumulate, yb.data);
                            assert_int_equal(rc, AMP_ERR_TARGET_OUT_OF_RANGE);
                            expect_same(&yb, &y0, "index_put out of range");
                            tensor_free(&yb);
                        }
                        index[n_index - 1] = keep;
                    }
                free(index);
                tensor_free(&v);
                tensor_free(&y0);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

typedef struct {
    int ndim;
    int64_t x_shape[3];
    int mask_ndim;
    int64_t v_stride[3];
} mask_case;

static const mask_case mask_cases[] = {
    { 2, { 4, 3 }, 1, { 0, 1 } },
    { 2, { 4, 3 }, 1, { 0, 0 } },       /* one value for every element */
    { 3, { 2, 3, 2 }, 2, { 0, 0, 1 } }, /* 2-D mask */
    { 2, { 3, 2 }, 2, { 0, 0 } },       /* mask over every dim */
    { 3, { 5, 2, 3 }, 1, { 0, 1, 2 } }, /* values [3][2] transposed */
    { 2, { 0, 3 }, 1, { 0, 1 } },
};

static void test_index_put_mask(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof mask_cases / sizeof mask_cases[0]; ci++)
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const mask_case *c = &mask_cases[ci];
                amp_dtype t = dtypes[d];
                int nt = c->ndim - c->mask_ndim;
                int64_t n_mask = numel(c->mask_ndim, c->x_shape), inner = numel(nt, c->x_shape + c->mask_ndim);
                size_t ny = (size_t)(n_mask * inner);
                uint8_t *mask = malloc((size_t)(n_mask ? n_mask : 1));
                tensor v = tensor_random(t, extent(nt, c->x_shape + c->mask_ndim, c->v_stride + c->mask_ndim), -4, 4);
                tensor y0 = tensor_random(t, ny, -4, 4), y[NTABLES];
                char what[96];
                assert_non_null(mask);
                for (int64_t j = 0; j < n_mask; j++)
                    mask[j] = j == 0 ? 1 : (uint8_t)(rng_next() >> 63);
                snprintf(what, sizeof what, "index_put_mask case %zu%s", ci, accumulate ? " accumulate" : "");
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_copy(&y0);
                    KCALL(tables[e], t, index_put_mask, c->ndim, c->x_shape, c->mask_ndim, mask, v.data, c->v_stride,
                          accumulate, y[e].data);
                    for (size_t i = 0; i < ny; i++) {
                        int64_t coord[3];
                        long double old = get(&y0, i), val;
                        coords_of(nt, c->x_shape + c->mask_ndim, (int64_t)i % inner, coord);
                        val = get(&v, at(nt, coord, c->v_stride + c->mask_ndim));
                        if (!mask[i / (size_t)inner])
                            expect_exact(&y[e], i, old, what);
                        else if (accumulate)
                            expect_close(&y[e], i, old + val, (fabsl(old) + fabsl(val)) * u_acc(t), what);
                        else
                            expect_exact(&y[e], i, val, what);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                free(mask);
                tensor_free(&v);
                tensor_free(&y0);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

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

/* ---- multilabel_margin_loss, multi_margin_loss -------------------------------- */

static const int64_t class_shapes[][2] = { { 3, 4 }, { 1, 1 }, { 0, 3 }, { 5, 1 }, { 6, 9 }, { 20, 30 } };
#define NCLASS_SHAPES (sizeof class_shapes / sizeof class_shapes[0])

static void test_multilabel_margin_loss(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < NCLASS_SHAPES; s++)
            for (int r = 0; r < 3; r++) {
                amp_dtype t = dtypes[d];
                int64_t N = class_shapes[s][0], C = class_shapes[s][1];
                size_t n = (size_t)(N * C), n_out = reductions[r] == AMP_REDUCTION_NONE ? (size_t)N : 1;
                tensor x = tensor_random(t, n, -2, 2), y[NTABLES];
                int64_t *target = malloc((n ? n : 1) * sizeof *target);
                long double *loss = malloc((size_t)(N ? N : 1) * sizeof *loss), *acc = malloc((size_t)(N ? N : 1) * sizeof *acc);
                char what[96];
                int rc;
                assert_non_null(target);
                assert_non_null(loss);
                assert_non_null(acc);
                for (int64_t i = 0; i < N; i++) {
                    int64_t k = (int64_t)(rng_next() % (uint64_t)(C + 1)); /* k targets, then -1, then anything */
                    for (int64_t j = 0; j < C; j++)
                        target[i * C + j] = j < k ? (int64_t)(rng_next() % (uint64_t)C)
                                            : j == k ? -1 - (int64_t)(rng_next() % 3)
                                                     : (int64_t)(rng_next() % (uint64_t)(3 * C)) - C;
                }
                if (N > 0 && C > 2) { /* a repeated target counts twice */
                    target[0] = 0;
                    target[1] = 0;
                    target[2] = -1;
                }
                for (int64_t i = 0; i < N; i++) {
                    const int64_t *tn = target + i * C;
                    long double sum = 0, err = 0;
                    int64_t k = 0;
                    while (k < C && tn[k] >= 0)
                        k++;
                    for (int64_t c = 0; c < C; c++) {
                        int is_target = 0;
                        for (int64_t j = 0; j < k; j++)
                            is_target |= tn[j] == c;
                        if (is_target)
                            continue;
                        long double xc = get(&x, (size_t)(i * C + c));
                        for (int64_t j = 0; j < k; j++) {
                            long double xt = get(&x, (size_t)(i * C + tn[j])), z = fmaxl(0, 1 - xt + xc);
                            sum += z;
                            err += 2 * (1 + fabsl(xt) + fabsl(xc)) + (long double)(k * C) * z;
                        }
                    }
                    loss[i] = sum / C;
                    acc[i] = err / C + loss[i];
                }
                snprintf(what, sizeof what, "multilabel_margin_loss [%lld, %lld] %s", (long long)N, (long long)C,
                         reduction_name[r]);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_random(t, n_out, 7, 8);
                    KCALL_STATUS(rc, tables[e], t, multilabel_margin_loss, N, C, x.data, target, reductions[r], y[e].data);
                    assert_int_equal(rc, AMP_OK);
                    check_losses(&y[e], reductions[r], (size_t)N, loss, acc, what);
                }
                expect_public_equals_ref(&y[0], &y[1]);
                /* a target >= C after the terminator is ignored (the random rows); before it, an error */
                if (N > 0) {
                    for (int64_t j = 0; j < C; j++)
                        target[(N - 1) * C + j] = j + 1 < C ? 0 : C;
                    for (int e = 0; e < NTABLES; e++) {
                        tensor keep_y = tensor_copy(&y[e]);
                        KCALL_STATUS(rc, tables[e], t, multilabel_margin_loss, N, C, x.data, target, reductions[r],
                                     y[e].data);
                        assert_int_equal(rc, AMP_ERR_TARGET_OUT_OF_RANGE);
                        expect_same(&y[e], &keep_y, "multilabel_margin_loss target out of range");
                        tensor_free(&keep_y);
                    }
                }
                free(target);
                free(loss);
                free(acc);
                tensor_free(&x);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

static void test_multi_margin_loss(void **state)
{
    static const double margins[] = { 1.0, 0.7, 0.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < NCLASS_SHAPES; s++)
            for (int p = 1; p <= 2; p++)
                for (int weighted = 0; weighted < 2; weighted++)
                    for (int r = 0; r < 3; r++) {
                        amp_dtype t = dtypes[d];
                        int64_t N = class_shapes[s][0], C = class_shapes[s][1];
                        double margin = margins[(s + (size_t)p + (size_t)r) % 3];
                        size_t n = (size_t)(N * C), n_out = reductions[r] == AMP_REDUCTION_NONE ? (size_t)N : 1;
                        tensor x = tensor_random(t, n, -2, 2), w = tensor_random(t, (size_t)C, 0.25, 2), y[NTABLES];
                        int64_t *target = malloc((size_t)(N ? N : 1) * sizeof *target);
                        long double *loss = malloc((size_t)(N ? N : 1) * sizeof *loss);
                        long double *acc = malloc((size_t)(N ? N : 1) * sizeof *acc);
                        char what[128];
                        int rc;
                        assert_non_null(target);
                        assert_non_null(loss);
                        assert_non_null(acc);
                        for (int64_t i = 0; i < N; i++)
                            target[i] = (int64_t)(rng_next() % (uint64_t)C);
                        for (int64_t i = 0; i < N; i++) {
                            long double xt = get(&x, (size_t)(i * C + target[i])), sum = 0, err = 0;
                            long double wt = weighted ? get(&w, (size_t)target[i]) : 1;
                            for (int64_t c = 0; c < C; c++) {
                                if (c == target[i])
                                    continue;
                                long double xc = get(&x, (size_t)(i * C + c)), z = margin - xt + xc;
                                long double ez = 3 * (fabs(margin) + fabsl(xt) + fabsl(xc));
                                if (z <= 0)
                                    continue;
                                sum += (p == 1 ? z : z * z) * wt;
                                err += (p == 1 ? ez : 2 * z * ez + z * z) * wt + 2 * C * (p == 1 ? z : z * z) * wt;
                            }
                            loss[i] = sum / C;
                            acc[i] = err / C + loss[i];
                        }
                        snprintf(what, sizeof what, "multi_margin_loss [%lld, %lld] p %d margin %g%s %s", (long long)N,
                                 (long long)C, p, margin, weighted ? " weighted" : "", reduction_name[r]);
                        for (int e = 0; e < NTABLES; e++) {
                            y[e] = tensor_random(t, n_out, 7, 8);
                            KCALL_STATUS(rc, tables[e], t, multi_margin_loss, N, C, x.data, target, p, margin,
                                         weighted ? w.data : NULL, reductions[r], y[e].data);
                            assert_int_equal(rc, AMP_OK);
                            check_losses(&y[e], reductions[r], (size_t)N, loss, acc, what);
                        }
                        expect_public_equals_ref(&y[0], &y[1]);
                        if (N > 0)
                            for (int bad = 0; bad < 2; bad++) {
                                int64_t keep = target[N - 1];
                                target[N - 1] = bad ? -1 : C;
                                for (int e = 0; e < NTABLES; e++) {
                                    tensor keep_y = tensor_copy(&y[e]);
                                    KCALL_STATUS(rc, tables[e], t, multi_margin_loss, N, C, x.data, target, p, margin,
                                                 weighted ? w.data : NULL, reductions[r], y[e].data);
                                    assert_int_equal(rc, AMP_ERR_TARGET_OUT_OF_RANGE);
                                    expect_same(&y[e], &keep_y, "multi_margin_loss target out of range");
                                    tensor_free(&keep_y);
                                }
                                target[N - 1] = keep;
                            }
                        free(target);
                        free(loss);
                        free(acc);
                        tensor_free(&x);
                        tensor_free(&w);
                        tensor_free(&y[0]);
                        tensor_free(&y[1]);
                    }
}

/* ---- cosine_embedding_loss, triplet_margin_loss (rows), margin_ranking_loss ---- */

typedef struct {
    int64_t N, D;
    int64_t s1[2], s2[2], s3[2];
    int64_t ts; /* target stride */
} rows_case;

static const rows_case rows_cases[] = {
    { 4, 5, { 5, 1 }, { 5, 1 }, { 5, 1 }, 1 },
    { 3, 6, { 1, 3 }, { 0, 1 }, { 6, 1 }, 0 },   /* x1 transposed, x2 one row for all, one target */
    { 5, 1, { 1, 1 }, { 2, 1 }, { 1, 0 }, 1 },
    { 2, 0, { 0, 1 }, { 0, 1 }, { 0, 1 }, 1 },   /* empty rows */
    { 0, 3, { 3, 1 }, { 3, 1 }, { 3, 1 }, 1 },   /* no rows */
    { 7, 200, { 200, 1 }, { 1, 7 }, { 200, 1 }, 1 },
};
#define NROWS_CASES (sizeof rows_cases / sizeof rows_cases[0])

static size_t rows_extent(const rows_case *c, const int64_t *s)
{
    int64_t shape[2] = { c->N, c->D };
    return extent(2, shape, s);
}

static void test_cosine_embedding_loss(void **state)
{
    static const double margins[] = { 0.0, 0.25, -0.5 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < NROWS_CASES; ci++)
            for (size_t mi = 0; mi < 3; mi++)
                for (int r = 0; r < 3; r++) {
                    const rows_case *c = &rows_cases[ci];
                    amp_dtype t = dtypes[d];
                    size_t N = (size_t)c->N, n_out = reductions[r] == AMP_REDUCTION_NONE ? N : 1;
                    double margin = margins[mi];
                    tensor x1 = tensor_random(t, rows_extent(c, c->s1), -2, 2), x2 = tensor_random(t, rows_extent(c, c->s2), -2, 2);
                    tensor tg = tensor_new(t, N ? (size_t)((c->N - 1) * c->ts + 1) : 0), y[NTABLES];
                    long double *loss = malloc((N ? N : 1) * sizeof *loss), *acc = malloc((N ? N : 1) * sizeof *acc);
                    char what[128];
                    assert_non_null(loss);
                    assert_non_null(acc);
                    for (size_t i = 0; i < tg.n; i++) /* 1, -1 and others (loss 0) */
                        set(&tg, i, (i + mi) % 4 == 3 ? 0.5 : (i + mi) % 2 ? -1.0 : 1.0);
                    if (ci == 0)
                        for (int64_t k = 0; k < c->D; k++) /* a zero row: cos 0 */
                            set(&x1, (size_t)(c->s1[0] + k * c->s1[1]), 0.0);
                    for (size_t i = 0; i < N; i++) {
                        long double dot = 0, m1 = 0, m2 = 0, absdot = 0, cosv, tv, den;
                        for (int64_t k = 0; k < c->D; k++) {
                            long double a = get(&x1, (size_t)(i * c->s1[0] + k * c->s1[1]));
                            long double b = get(&x2, (size_t)(i * c->s2[0] + k * c->s2[1]));
                            dot += a * b;
                            absdot += fabsl(a * b);
                            m1 += a * a;
                            m2 += b * b;
                        }
                        den = sqrtl((m1 + 1e-12L) * (m2 + 1e-12L));
                        cosv = dot / den;
                        tv = get(&tg, i * (size_t)c->ts);
                        loss[i] = tv == 1 ? 1 - cosv : tv == -1 ? fmaxl(0, cosv - margin) : 0;
                        acc[i] = tv == 1 || tv == -1 ? (2 * c->D + 8) * absdot / den + 2 * fabs(margin) + 2 : 0;
                    }
                    snprintf(what, sizeof what, "cosine_embedding_loss case %zu margin %g %s", ci, margin,
                             reduction_name[r]);
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_random(t, n_out, 7, 8);
                        KCALL(tables[e], t, cosine_embedding_loss, c->N, c->D, x1.data, c->s1, x2.data, c->s2, tg.data,
                              c->ts, margin, reductions[r], y[e].data);
                        check_losses(&y[e], reductions[r], N, loss, acc, what);
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    free(loss);
                    free(acc);
                    tensor_free(&x1);
                    tensor_free(&x2);
                    tensor_free(&tg);
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                }
}

/* ||u - v + eps||_p, and its error in units of u_acc. */
static long double dist_p(const tensor *u, const int64_t *us, const tensor *v, const int64_t *vs, size_t n,
                          int64_t D, double p, long double eps, long double *err)
{
    long double acc = 0, mag = 0;
    for (int64_t k = 0; k < D; k++) {
        long double a = get(u, (size_t)(n * us[0] + k * us[1])), b = get(v, (size_t)(n * vs[0] + k * vs[1]));
        long double diff = fabsl(a - b + eps), m = fabsl(a) + fabsl(b) + fabsl(eps);
        if (isinf(p)) {
            acc = fmaxl(acc, diff);
            mag = fmaxl(mag, m);
        } else if (p == 0)
            acc += diff != 0;
        else {
            acc += powl(diff, p);
            mag += powl(m, p);
        }
    }
    if (isinf(p) || p == 0) {
        *err = 2 * mag;
        return acc;
    }
    *err = ((long double)D + 8 + 3 * p) * powl(mag, 1 / p);
    return powl(acc, 1 / p);
}

static void test_triplet_margin_loss(void **state)
{
    static const double ps[] = { 2, 1, 3, INFINITY, 0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < NROWS_CASES; ci++)
            for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
                for (int swap = 0; swap < 2; swap++)
                    for (int r = 0; r < 3; r++) {
                        const rows_case *c = &rows_cases[ci];
                        amp_dtype t = dtypes[d];
                        size_t N = (size_t)c->N, n_out = reductions[r] == AMP_REDUCTION_NONE ? N : 1;
                        double p = ps[pi], margin = swap ? 0.5 : 1.0, eps = (pi + (size_t)r) % 2 ? 1e-6 : 0.0;
                        long double ea = as_acc(t, eps);
                        tensor a = tensor_random(t, rows_extent(c, c->s1), -2, 2);
                        tensor pos = tensor_random(t, rows_extent(c, c->s2), -2, 2);
                        tensor neg = tensor_random(t, rows_extent(c, c->s3), -2, 2), y[NTABLES];
                        long double *loss = malloc((N ? N : 1) * sizeof *loss), *acc = malloc((N ? N : 1) * sizeof *acc);
                        char what[128];
                        assert_non_null(loss);
                        assert_non_null(acc);
                        if (ci == 0) /* equal elements: p = 0 counts them only with eps */
                            for (int64_t k = 0; k < c->D; k += 2)
                                set(&pos, (size_t)k, get(&a, (size_t)k));
                        for (size_t i = 0; i < N; i++) {
                            long double ep, en, es;
                            long double dp = dist_p(&a, c->s1, &pos, c->s2, i, c->D, p, ea, &ep);
                            long double dn = dist_p(&a, c->s1, &neg, c->s3, i, c->D, p, ea, &en);
                            long double ds = dist_p(&pos, c->s2, &neg, c->s3, i, c->D, p, ea, &es);
                            if (swap && ds < dn) {
                                dn = ds;
                                en = es;
                            }
                            loss[i] = fmaxl(0, margin + dp - dn);
                            acc[i] = ep + (swap ? fmaxl(en, es) : en) + 2 * (margin + dp + dn);
                        }
                        snprintf(what, sizeof what, "triplet_margin_loss case %zu p %g eps %g%s %s", ci, p, eps,
                                 swap ? " swap" : "", reduction_name[r]);
                        for (int e = 0; e < NTABLES; e++) {
                            y[e] = tensor_random(t, n_out, 7, 8);
                            KCALL(tables[e], t, triplet_margin_loss, c->N, c->D, a.data, c->s1, pos.data, c->s2, neg.data,
                                  c->s3, margin, p, eps, swap, reductions[r], y[e].data);
                            check_losses(&y[e], reductions[r], N, loss, acc, what);
                        }
                        expect_public_equals_ref(&y[0], &y[1]);
                        free(loss);
                        free(acc);
                        tensor_free(&a);
                        tensor_free(&pos);
                        tensor_free(&neg);
                        tensor_free(&y[0]);
                        tensor_free(&y[1]);
                    }
}

typedef struct {
    int ndim;
    int64_t shape[3];
    int64_t as[3], bs[3], ts[3];
} rank_case;

static const rank_case rank_cases[] = {
    { 1, { 7 }, { 1 }, { 1 }, { 1 } },
    { 2, { 3, 4 }, { 4, 1 }, { 0, 1 }, { 1, 0 } },       /* b one row, target one per column of a */
    { 3, { 2, 3, 5 }, { 1, 2, 6 }, { 15, 5, 1 }, { 0, 0, 0 } }, /* a permuted, one target */
    { 2, { 0, 4 }, { 4, 1 }, { 4, 1 }, { 4, 1 } },
    { 1, { 300 }, { 1 }, { 1 }, { 1 } },
};

static void test_margin_ranking_loss(void **state)
{
    static const double margins[] = { 0.0, 0.5, -0.25 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof rank_cases / sizeof rank_cases[0]; ci++)
            for (size_t mi = 0; mi < 3; mi++)
                for (int r = 0; r < 3; r++) {
                    const rank_case *c = &rank_cases[ci];
                    amp_dtype t = dtypes[d];
                    size_t N = (size_t)numel(c->ndim, c->shape), n_out = reductions[r] == AMP_REDUCTION_NONE ? N : 1;
                    double margin = margins[mi];
                    tensor a = tensor_random(t, extent(c->ndim, c->shape, c->as), -3, 3);
                    tensor b = tensor_random(t, extent(c->ndim, c->shape, c->bs), -3, 3);
                    tensor tg = tensor_new(t, extent(c->ndim, c->shape, c->ts)), y[NTABLES];
                    long double *loss = malloc((N ? N : 1) * sizeof *loss), *acc = malloc((N ? N : 1) * sizeof *acc);
                    char what[128];
                    assert_non_null(loss);
                    assert_non_null(acc);
                    for (size_t i = 0; i < tg.n; i++)
                        set(&tg, i, i % 5 == 4 ? 0.5 : i % 2 ? -1.0 : 1.0);
                    for (size_t i = 0; i < N; i++) {
                        int64_t coord[3];
                        long double va, vb, tv;
                        coords_of(c->ndim, c->shape, (int64_t)i, coord);
                        va = get(&a, at(c->ndim, coord, c->as));
                        vb = get(&b, at(c->ndim, coord, c->bs));
                        tv = get(&tg, at(c->ndim, coord, c->ts));
                        loss[i] = fmaxl(0, margin - tv * (va - vb));
                        acc[i] = 3 * fabsl(tv) * (fabsl(va) + fabsl(vb)) + 2 * fabs(margin);
                    }
                    if (ci == 0 && mi == 0) { /* NaN: its loss NaN (max(0, NaN) is NaN in PyTorch) */
                        set(&a, 3, NAN);
                        loss[3] = NAN;
                        acc[3] = 0;
                    }
                    snprintf(what, sizeof what, "margin_ranking_loss case %zu margin %g %s", ci, margin, reduction_name[r]);
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_random(t, n_out, 7, 8);
                        KCALL(tables[e], t, margin_ranking_loss, c->ndim, c->shape, a.data, c->as, b.data, c->bs, tg.data,
                              c->ts, margin, reductions[r], y[e].data);
                        check_losses(&y[e], reductions[r], N, loss, acc, what);
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    free(loss);
                    free(acc);
                    tensor_free(&a);
                    tensor_free(&b);
                    tensor_free(&tg);
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                }
}

/* ---- Fixed cases printed by PyTorch 1.13 in float64 ------------------------------
 *
 * Inputs are multiples of 1/8 (or 1/16), exact in every dtype.  Script:
 * torch.set_default_dtype(torch.float64), then the calls named per array. */

/* F.prelu(x [2, 2, 3], w) */
static const double fx_prelu_x[] = { -2.0, -0.5, 0.0, 1.5, -1.0, 3.0, -0.25, 0.75, -4.0, 2.0, -1.5, 0.5 };
static const double fx_prelu_w2[] = { 0.25, -0.5 };
static const double fx_prelu_w1[] = { 0.125 };
static const double fx_prelu_2[] = { -0.5, -0.125, 0.0, 1.5, 0.5, 3.0, -0.0625, 0.75, -1.0, 2.0, 0.75, 0.5 };
static const double fx_prelu_1[] = { -0.25, -0.0625, 0.0, 1.5, -0.125, 3.0, -0.03125, 0.75, -0.5, 2.0, -0.1875, 0.5 };
/* torch.renorm(r [2, 3, 2], p, 1, maxnorm) */
static const double fx_renorm_x[] = { 1.0, -2.0, 0.5, 3.0, -0.25, 0.75, 2.0, -1.0, 1.5, 0.125, -0.5, 2.5 };
static const double fx_renorm_p2[] = { 0.6324555120336764,  -1.264911024067353,  0.29468377878964974, 1.7681026727378986,
                                       -0.1873171552987952, 0.5619514658963856,  1.264911024067353,   -0.6324555120336764,
                                       0.8840513363689493,  0.07367094469741244, -0.3746343105975904, 1.873171552987952 };
static const double fx_renorm_p1[] = { 0.4999999916666668,  -0.9999999833333336, 0.292682921118382,   1.756097526710292,
                                       -0.1874999953125001, 0.5624999859375004,  0.9999999833333336,  -0.4999999916666668,
                                       0.878048763355146,   0.0731707302795955,  -0.3749999906250002, 1.874999953125001 };
static const double fx_renorm_pinf[] = { 0.7499999625000019,   -1.4999999250000038, 0.24999999166666695,
                                         1.4999999500000016,   -0.14999999400000025, 0.44999998200000074,
                                         1.4999999250000038,   -0.7499999625000019, 0.7499999750000008,
                                         0.06249999791666674,  -0.2999999880000005, 1.4999999400000026 };
/* a, b [2, 3]: F.cosine_similarity(a, b, dim), torch.linalg.cross */
static const double fx_a[] = { 1.0, -2.0, 0.5, 3.0, -0.25, 0.75 };
static const double fx_b[] = { 0.5, 1.5, -1.0, 2.0, 0.0, -0.5 };
static const double fx_cos_dim1[] = { -0.6998542122237652, 0.8794834931183673 };
static const double fx_cos_dim0[] = { 0.9970544855015815, -0.9922778767136677, -0.8682431421244592 };
static const double fx_cos_bcast[] = { -0.6998542122237652, 0.06460957383809221 }; /* b[:1] */
static const double fx_cross_dim1[] = { 1.25, 1.25, 2.5, 0.125, 3.0, 0.5 };
static const double fx_cross_dim0[] = { 1.25, 0.125, 1.25, 3.0, 2.5, 0.5 }; /* a.t(), b.t(), dim 0 */
/* x0 [4, 2].index_put_((idx,), v [3, 2], accumulate) and x0[mask] = [9, -9] */
static const double fx_x0[] = { 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0 };
static const double fx_v[] = { 0.5, -1.0, 2.0, 0.25, -3.0, 1.5 };
static const int64_t fx_idx_acc[] = { 0, -2, 0 };
static const int64_t fx_idx_noacc[] = { 3, -4, 1 };
static const double fx_iput_acc[] = { -1.5, 2.5, 3.0, 4.0, 7.0, 6.25, 7.0, 8.0 };
static const double fx_iput_noacc[] = { 2.0, 0.25, -3.0, 1.5, 5.0, 6.0, 0.5, -1.0 };
static const uint8_t fx_mask[] = { 1, 0, 1, 1 };
static const double fx_mask_v[] = { 9.0, -9.0 };
static const double fx_iput_mask[] = { 9.0, -9.0, 3.0, 4.0, 9.0, -9.0, 9.0, -9.0 };
static const double fx_iput_mask_acc[] = { 10.0, -7.0, 3.0, 4.0, 14.0, -3.0, 16.0, -1.0 };
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
/* xm [3, 4]; F.multilabel_margin_loss(xm, tm), F.multi_margin_loss(xm, tt, p, margin, weight) */
static const double fx_xm[] = { 0.5, -1.0, 2.0, 0.25, 1.5, 0.0, -0.5, 1.0, 0.125, 0.75, -2.0, 3.0 };
static const int64_t fx_tm[] = { 3, 0, -1, 1, 1, 2, 3, 1, -1, 0, 0, 0 }; /* row 1: 1 twice, no -1 */
static const double fx_mlm[3][3] = { { 1.3125, 2.375, 0.0 }, { 1.2291666666666667 }, { 3.6875 } };
static const int64_t fx_tt[] = { 1, 0, 3 };
static const double fx_mm_w[] = { 0.5, 2.0, 1.0, 0.25 };
static const double fx_mm_p1[3][3] = { { 2.1875, 0.125, 0.0 }, { 0.7708333333333334 }, { 2.3125 } }; /* margin 1 */
static const double fx_mm_p2w[3][3] = { { 11.5625, 0.0078125, 0.0 }, { 3.8567708333333335 }, { 11.5703125 } }; /* 0.75 */
/* x[0, 1] NaN: terms with NaN are dropped (z > 0 is false), PyTorch's CPU code */
static const double fx_nan_x[] = { 0.5, NAN, 2.0, 0.25 };
static const int64_t fx_nan_t0[] = { 0, -1, 0, 0 };
static const int64_t fx_nan_t1[] = { 1, -1, 0, 0 };
static const double fx_nan_loss[] = { 0.8125, 0.0 }; /* target 0, target 1; both losses */
/* F.cosine_embedding_loss(xm, x2, ct, margin 0.25) */
static const double fx_x2[] = { 1.0, 0.5, -1.0, 2.0, 1.5, 0.0, 0.5, 1.0, -0.25, 0.75, 2.0, -3.0 };
static const double fx_ct[] = { 1.0, -1.0, -1.0 };
static const double fx_cel[3][3] = { { 1.260316549382342, 0.6071428571426122, 0.0 },
                                     { 0.6224864688416515 },
                                     { 1.8674594065249543 } };
/* F.margin_ranking_loss(ma, mb, mt, margin 0.5) */
static const double fx_ma[] = { 0.5, -1.0, 2.0, 0.25, 1.5 };
static const double fx_mb[] = { 1.0, -1.5, 0.0, 0.25, 3.0 };
static const double fx_mt[] = { 1.0, -1.0, 1.0, -1.0, -1.0 };
static const double fx_mr[3][5] = { { 1.0, 1.0, 0.0, 0.5, 0.0 }, { 0.5 }, { 2.5 } };
/* F.triplet_margin_loss(xm, x2, x3, ...) */
static const double fx_x3[] = { 0.5, 1.0, -0.5, 0.0, -1.0, 2.0, 0.25, 1.0, 1.5, -2.0, 0.75, 0.5 };
static const double fx_tm_p2[3][3] = { { 1.6047758058658412, 0.0, 3.3974013072972973 }, /* margin 1, eps 1e-6 */
                                       { 1.6673923710543797 },
                                       { 5.002177113163139 } };
static const double fx_tm_p1_swap[] = { 3.7499980000000006, 0.0, 1.6250020000000003 }; /* margin 0.5, eps 1e-6 */
static const double fx_tm_p3[] = { 2.427593036304093, 0.11362415154239658, 4.631630205392279 };  /* margin 2, eps 0 */

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

/* The margin losses against PyTorch, every reduction (y holds at least 5
 * elements). */
static void margin_losses_match_torch(const amp_kernel_table *k, amp_dtype t, const tensor *xm, const tensor *x2,
                                      const tensor *x3, tensor *yp)
{
    static const int64_t row_s[2] = { 4, 1 }, shape5[1] = { 5 }, s1[1] = { 1 };
    tensor y = *yp, tmp;
    int rc;
    for (int r = 0; r < 3; r++) {
        size_t n_out = r == 0 ? 3 : 1;
        KCALL_STATUS(rc, k, t, multilabel_margin_loss, 3, 4, xm->data, fx_tm, reductions[r], y.data);
        assert_int_equal(rc, AMP_OK);
        expect_all_close(&y, fx_mlm[r], n_out, "multilabel_margin_loss vs torch");
        KCALL_STATUS(rc, k, t, multi_margin_loss, 3, 4, xm->data, fx_tt, 1, 1.0, NULL, reductions[r], y.data);
        assert_int_equal(rc, AMP_OK);
        expect_all_close(&y, fx_mm_p1[r], n_out, "multi_margin_loss p 1 vs torch");
        tmp = tensor_of(t, 4, fx_mm_w);
        KCALL_STATUS(rc, k, t, multi_margin_loss, 3, 4, xm->data, fx_tt, 2, 0.75, tmp.data, reductions[r], y.data);
        assert_int_equal(rc, AMP_OK);
        expect_all_close(&y, fx_mm_p2w[r], n_out, "multi_margin_loss p 2 weight vs torch");
        tensor_free(&tmp);
        tmp = tensor_of(t, 3, fx_ct);
        KCALL(k, t, cosine_embedding_loss, 3, 4, xm->data, row_s, x2->data, row_s, tmp.data, 1, 0.25, reductions[r],
              y.data);
        expect_all_close(&y, fx_cel[r], n_out, "cosine_embedding_loss vs torch");
        tensor_free(&tmp);
        KCALL(k, t, triplet_margin_loss, 3, 4, xm->data, row_s, x2->data, row_s, x3->data, row_s, 1.0, 2.0, 1e-6, 0,
              reductions[r], y.data);
        expect_all_close(&y, fx_tm_p2[r], n_out, "triplet_margin_loss p 2 vs torch");
        {
            tensor ma = tensor_of(t, 5, fx_ma), mb = tensor_of(t, 5, fx_mb), mt = tensor_of(t, 5, fx_mt);
            KCALL(k, t, margin_ranking_loss, 1, shape5, ma.data, s1, mb.data, s1, mt.data, s1, 0.5, reductions[r],
                  y.data);
            expect_all_close(&y, fx_mr[r], r == 0 ? 5 : 1, "margin_ranking_loss vs torch");
            tensor_free(&ma);
            tensor_free(&mb);
            tensor_free(&mt);
        }
    }
    KCALL(k, t, triplet_margin_loss, 3, 4, xm->data, row_s, x2->data, row_s, x3->data, row_s, 0.5, 1.0, 1e-6, 1,
          AMP_REDUCTION_NONE, y.data);
    expect_all_close(&y, fx_tm_p1_swap, 3, "triplet_margin_loss p 1 swap vs torch");
    KCALL(k, t, triplet_margin_loss, 3, 4, xm->data, row_s, x2->data, row_s, x3->data, row_s, 2.0, 3.0, 0.0, 0,
          AMP_REDUCTION_NONE, y.data);
    expect_all_close(&y, fx_tm_p3, 3, "triplet_margin_loss p 3 vs torch");
}

static void test_match_torch(void **state)
{
    static const int64_t shape23[2] = { 2, 3 }, s23[2] = { 3, 1 }, s23b[2] = { 0, 1 };
    static const int64_t shape32[2] = { 3, 2 }, shape2[2] = { 3, 2 };
    static const int64_t vs[2] = { 2, 1 }, mask_shape[2] = { 4, 2 }, mask_vs[2] = { 0, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            int rc;
            tensor y = tensor_new(t, 12), x = tensor_of(t, 12, fx_prelu_x), w2 = tensor_of(t, 2, fx_prelu_w2);
            tensor w1 = tensor_of(t, 1, fx_prelu_w1), a = tensor_of(t, 6, fx_a), b = tensor_of(t, 6, fx_b);
            tensor at_ = tensor_new(t, 6), bt = tensor_new(t, 6);
            tensor xm = tensor_of(t, 12, fx_xm), x2 = tensor_of(t, 12, fx_x2), x3 = tensor_of(t, 12, fx_x3);
            tensor tmp;
            KCALL(k, t, prelu, 2, 2, 3, 2, x.data, w2.data, y.data);
            expect_all_close(&y, fx_prelu_2, 12, "prelu per channel vs torch");
            KCALL(k, t, prelu, 2, 2, 3, 1, x.data, w1.data, y.data);
            expect_all_close(&y, fx_prelu_1, 12, "prelu shared vs torch");

            tmp = tensor_of(t, 12, fx_renorm_x);
            KCALL(k, t, renorm, 2, 3, 2, 2.0, 2.0, tmp.data, y.data);
            expect_all_close(&y, fx_renorm_p2, 12, "renorm p 2 vs torch");
            KCALL(k, t, renorm, 2, 3, 2, 1.0, 3.0, tmp.data, y.data);
            expect_all_close(&y, fx_renorm_p1, 12, "renorm p 1 vs torch");
            KCALL(k, t, renorm, 2, 3, 2, INFINITY, 1.5, tmp.data, y.data);
            expect_all_close(&y, fx_renorm_pinf, 12, "renorm p inf vs torch");
            tensor_free(&tmp);

            KCALL(k, t, cosine_similarity, 2, shape23, 1, a.data, s23, b.data, s23, 1e-8, y.data);
            expect_all_close(&y, fx_cos_dim1, 2, "cosine_similarity dim 1 vs torch");
            KCALL(k, t, cosine_similarity, 2, shape23, 0, a.data, s23, b.data, s23, 1e-8, y.data);
            expect_all_close(&y, fx_cos_dim0, 3, "cosine_similarity dim 0 vs torch");
            KCALL(k, t, cosine_similarity, 2, shape23, 1, a.data, s23, b.data, s23b, 1e-8, y.data);
            expect_all_close(&y, fx_cos_bcast, 2, "cosine_similarity broadcast vs torch");
            KCALL(k, t, cross, 2, shape23, 1, a.data, s23, b.data, s23, y.data);
            expect_all_close(&y, fx_cross_dim1, 6, "cross dim 1 vs torch");
            for (int i = 0; i < 6; i++) { /* contiguous transposes [3, 2] */
                set(&at_, (size_t)(i % 3 * 2 + i / 3), fx_a[i]);
                set(&bt, (size_t)(i % 3 * 2 + i / 3), fx_b[i]);
            }
            KCALL(k, t, cross, 2, shape32, 0, at_.data, vs, bt.data, vs, y.data);
            expect_all_close(&y, fx_cross_dim0, 6, "cross dim 0 vs torch");

            tmp = tensor_of(t, 6, fx_v);
            tensor_free(&y);
            y = tensor_of(t, 8, fx_x0);
            KCALL_STATUS(rc, k, t, index_put, 2, shape2, 1, fx_idx_acc, 4, tmp.data, vs, 1, y.data);
            assert_int_equal(rc, AMP_OK);
            expect_all_close(&y, fx_iput_acc, 8, "index_put accumulate vs torch");
            tensor_free(&y);
            y = tensor_of(t, 8, fx_x0);
            KCALL_STATUS(rc, k, t, index_put, 2, shape2, 1, fx_idx_noacc, 4, tmp.data, vs, 0, y.data);
            assert_int_equal(rc, AMP_OK);
            expect_all_close(&y, fx_iput_noacc, 8, "index_put vs torch");
            tensor_free(&tmp);
            tmp = tensor_of(t, 2, fx_mask_v);
            for (int acc = 0; acc < 2; acc++) {
                tensor_free(&y);
                y = tensor_of(t, 8, fx_x0);
                KCALL(k, t, index_put_mask, 2, mask_shape, 1, fx_mask, tmp.data, mask_vs, acc, y.data);
                expect_all_close(&y, acc ? fx_iput_mask_acc : fx_iput_mask, 8, "index_put_mask vs torch");
            }
            tensor_free(&tmp);
            tensor_free(&y);
            y = tensor_new(t, 8);

            grid_sampler_matches_torch(k, t, &y);

            margin_losses_match_torch(k, t, &xm, &x2, &x3, &y);

            tmp = tensor_of(t, 4, fx_nan_x);
            KCALL_STATUS(rc, k, t, multilabel_margin_loss, 1, 4, tmp.data, fx_nan_t0, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, fx_nan_loss, 1, "multilabel_margin_loss NaN vs torch");
            KCALL_STATUS(rc, k, t, multilabel_margin_loss, 1, 4, tmp.data, fx_nan_t1, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, fx_nan_loss + 1, 1, "multilabel_margin_loss NaN target vs torch");
            KCALL_STATUS(rc, k, t, multi_margin_loss, 1, 4, tmp.data, fx_nan_t0, 1, 1.0, NULL, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, fx_nan_loss, 1, "multi_margin_loss NaN vs torch");
            KCALL_STATUS(rc, k, t, multi_margin_loss, 1, 4, tmp.data, fx_nan_t1, 1, 1.0, NULL, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, fx_nan_loss + 1, 1, "multi_margin_loss NaN target vs torch");
            tensor_free(&tmp);

            tensor_free(&y);
            tensor_free(&x);
            tensor_free(&w2);
            tensor_free(&w1);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&at_);
            tensor_free(&bt);
            tensor_free(&xm);
            tensor_free(&x2);
            tensor_free(&x3);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_renorm),
        cmocka_unit_test(test_renorm_at_maxnorm),
        cmocka_unit_test(test_cosine_similarity),
        cmocka_unit_test(test_cross),
        cmocka_unit_test(test_index_put),
        cmocka_unit_test(test_index_put_mask),
        cmocka_unit_test(test_grid_sampler),
        cmocka_unit_test(test_multilabel_margin_loss),
        cmocka_unit_test(test_multi_margin_loss),
        cmocka_unit_test(test_cosine_embedding_loss),
        cmocka_unit_test(test_triplet_margin_loss),
        cmocka_unit_test(test_margin_ranking_loss),
        cmocka_unit_test(test_match_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
