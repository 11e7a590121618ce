/*
 * test_margin_loss.c - the margin losses (amprt/reduce.h):
 * multilabel_margin_loss and multi_margin_loss with their target checks,
 * cosine_embedding_loss, triplet_margin_loss and margin_ranking_loss,
 * every reduction, every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts; and fixed cases whose answers were
 * printed by PyTorch 1.13 in float64 (the program does not need torch).
 * Conventions and the error bound: kernel_test_util.h and
 * oracle_test_util.h.
 *
 * A divergence from PyTorch 1.13 left out on purpose: the MEAN of zero
 * samples for multi_margin_loss (PyTorch 0, contract and kernel NaN) and
 * multilabel_margin_loss (PyTorch returns uninitialised memory).
 */
#define _POSIX_C_SOURCE 200809L

#include "oracle_test_util.h"

static const int reductions[] = { AMP_REDUCTION_NONE, AMP_REDUCTION_MEAN, AMP_REDUCTION_SUM };
static const char *const reduction_name[] = { "none", "mean", "sum" };

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

static void test_margin_losses_match_torch(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            int rc;
            tensor y = tensor_new(t, 8);
            tensor xm = tensor_of(t, 12, fx_xm), x2 = tensor_of(t, 12, fx_x2), x3 = tensor_of(t, 12, fx_x3);
            tensor tmp;
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
            (void)rc; /* the NaN cases check the values, not the status */
            tensor_free(&tmp);
            tensor_free(&y);
            tensor_free(&xm);
            tensor_free(&x2);
            tensor_free(&x3);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multilabel_margin_loss),
        cmocka_unit_test(test_multi_margin_loss),
        cmocka_unit_test(test_cosine_embedding_loss),
        cmocka_unit_test(test_triplet_margin_loss),
        cmocka_unit_test(test_margin_ranking_loss),
        cmocka_unit_test(test_margin_losses_match_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
