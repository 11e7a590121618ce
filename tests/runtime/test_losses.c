/*
 * test_losses.c - the pointwise losses, cross_entropy (class indices and
 * class probabilities) and nll_loss_nd, every dtype, through the public and
 * the reference table, against long double oracles written from PyTorch's
 * definitions; the argument checks of the class-index losses; and fixed
 * cases whose answers were printed by PyTorch 1.13 in float64.
 * Conventions and the error bound: kernel_test_util.h. Each oracle returns
 * the evaluation error of its term in units of u_acc: roughly, every
 * rounded operation or libm call costs one or two units of the magnitude
 * it produces.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

static const int reductions[] = { AMP_REDUCTION_NONE, AMP_REDUCTION_MEAN, AMP_REDUCTION_SUM };
static const char *const reduction_name[] = { "none", "mean", "sum" };

/* ---- Pointwise losses ------------------------------------------------------ */

typedef enum {
    L_MSE,
    L_L1,
    L_SMOOTH_L1,
    L_HUBER,
    L_KL_DIV,
    L_BCE,
    L_BCE_LOGITS,
    L_SOFT_MARGIN,
    L_HINGE,
    L_POISSON
} loss_kind;

typedef struct {
    const char *what;
    loss_kind kind;
    double p0, p1, p2;
} loss_case;

static const loss_case loss_cases[] = {
    { "mse_loss", L_MSE, 0, 0, 0 },
    { "l1_loss", L_L1, 0, 0, 0 },
    { "smooth_l1_loss beta 1", L_SMOOTH_L1, 1.0, 0, 0 },
    { "smooth_l1_loss beta 0 (l1)", L_SMOOTH_L1, 0.0, 0, 0 },
    { "huber_loss delta 1.5", L_HUBER, 1.5, 0, 0 },
    { "kl_div", L_KL_DIV, 0, 0, 0 },
    { "kl_div log_target", L_KL_DIV, 1, 0, 0 },
    { "binary_cross_entropy", L_BCE, 0, 0, 0 },
    { "binary_cross_entropy_with_logits", L_BCE_LOGITS, 0, 0, 0 },
    { "soft_margin_loss", L_SOFT_MARGIN, 0, 0, 0 },
    { "hinge_embedding_loss margin 1", L_HINGE, 1.0, 0, 0 },
    { "poisson_nll_loss log_input", L_POISSON, 1, 0, 1e-8 },
    { "poisson_nll_loss log_input full", L_POISSON, 1, 1, 1e-8 },
    { "poisson_nll_loss full", L_POISSON, 0, 1, 1e-8 },
    { "poisson_nll_loss eps 0.5", L_POISSON, 0, 0, 0.5 },
};
#define NLOSS_CASES (sizeof loss_cases / sizeof loss_cases[0])

static void run_pointwise(const amp_kernel_table *k, const loss_case *c, size_t n, const tensor *x,
                          const tensor *target, const void *weight, int reduction, tensor *y)
{
    amp_dtype t = x->t;
    double p0 = c->p0, p1 = c->p1, p2 = c->p2;
    switch (c->kind) {
    case L_MSE: KCALL(k, t, mse_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data); break;
    case L_L1: KCALL(k, t, l1_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data); break;
    case L_SMOOTH_L1:
        KCALL(k, t, smooth_l1_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data);
        break;
    case L_HUBER: KCALL(k, t, huber_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data); break;
    case L_KL_DIV: KCALL(k, t, kl_div, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data); break;
    case L_BCE:
        KCALL(k, t, binary_cross_entropy, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data);
        break;
    case L_BCE_LOGITS:
        KCALL(k, t, binary_cross_entropy_with_logits, n, x->data, target->data, weight, p0, p1, p2, reduction,
              y->data);
        break;
    case L_SOFT_MARGIN:
        KCALL(k, t, soft_margin_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data);
        break;
    case L_HINGE:
        KCALL(k, t, hinge_embedding_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data);
        break;
    case L_POISSON:
        KCALL(k, t, poisson_nll_loss, n, x->data, target->data, weight, p0, p1, p2, reduction, y->data);
        break;
    }
}

/* Inputs in each loss's domain, with its edge values mixed in. */
static void loss_inputs(const loss_case *c, tensor *x, tensor *target)
{
    for (size_t i = 0; i < x->n; i++) {
        double xv = uniform(-3, 3), tv = uniform(-3, 3);
        switch (c->kind) {
        case L_MSE:
        case L_L1:
        case L_SMOOTH_L1:
        case L_HUBER: break;
        case L_KL_DIV:
            xv = uniform(-5, 0);
            tv = c->p0 != 0 ? uniform(-5, 0) : i % 5 == 0 ? 0.0 : uniform(0, 1); /* 0 log 0 = 0 */
            break;
        case L_BCE:
            xv = i % 7 == 0 ? (double)(i % 2) : uniform(0.01, 0.99); /* 0 and 1: the -100 clamp */
            tv = uniform(0, 1);
            break;
        case L_BCE_LOGITS:
            xv = uniform(-20, 20);
            tv = uniform(0, 1);
            break;
        case L_SOFT_MARGIN:
        case L_HINGE:
            xv = uniform(-5, 5);
            tv = i % 6 == 5 ? 0.5 : uniform(0, 1) < 0.5 ? -1.0 : 1.0; /* 0.5: both hinge terms */
            break;
        case L_POISSON:
            xv = c->p0 != 0 ? uniform(-2, 2) : uniform(0.1, 4);
            tv = (double)(int)uniform(0, 7); /* 0 and 1 have no Stirling term */
            break;
        }
        set(x, i, xv);
        set(target, i, tv);
    }
}

static long double max_or_nan(long double v, long double floor_)
{
    return v < floor_ ? floor_ : v;
}

/* The unreduced loss of one element and its error in units of u_acc. */
static long double loss_oracle(const loss_case *c, long double x, long double t, amp_dtype dt, double *acc)
{
    long double d = x - t, z = fabsl(d), p = c->p0, r;
    switch (c->kind) {
    case L_MSE:
        *acc = (double)(3 * d * d);
        return d * d;
    case L_L1:
        *acc = (double)z;
        return z;
    case L_SMOOTH_L1:
        if (p == 0) {
            *acc = (double)z;
            return z;
        }
        r = z < p ? 0.5L * z * z / p : z - 0.5L * p;
        *acc = (double)(4 * z * (z < p ? z / p : 1) + 2 * p + 2 * fabsl(r));
        return r;
    case L_HUBER:
        r = z < p ? 0.5L * z * z : p * (z - 0.5L * p);
        *acc = (double)(4 * z * (z < p ? z : p) + 2 * p * p + 2 * fabsl(r));
        return r;
    case L_KL_DIV:
        if (p != 0) {
            r = expl(t) * (t - x);
            *acc = (double)(4 * expl(t) * (fabsl(t) + fabsl(x)));
            return r;
        }
        r = (t == 0 ? 0 : t * logl(t)) - t * x;
        *acc = (double)(3 * fabsl(t == 0 ? 0 : t * logl(t)) + 2 * fabsl(t * x) + fabsl(r));
        return r;
    case L_BCE: {
        long double a = max_or_nan(log1pl(-x), -100), b = max_or_nan(logl(x), -100);
        r = (t - 1) * a - t * b;
        *acc = (double)(3 * fabsl((t - 1) * a) + 3 * fabsl(t * b) + fabsl(r));
        return r;
    }
    case L_BCE_LOGITS: {
        long double soft = log1pl(expl(-fabsl(x)));
        r = (1 - t) * x - ((x < 0 ? x : 0) - soft);
        *acc = (double)(2 * fabsl((1 - t) * x) + fabsl(x) + 3 * soft + 2 * fabsl(r));
        return r;
    }
    case L_SOFT_MARGIN:
        r = log1pl(expl(-x * t));
        *acc = (double)(2 + 3 * r);
        return r;
    case L_HINGE: {
        long double margin_term = max_or_nan(p - x, 0);
        r = (t != 1 ? margin_term : 0) + (t != -1 ? x : 0);
        *acc = (double)(2 * (fabsl(x) + fabsl(p - x)) + fabsl(r));
        return r;
    }
    case L_POISSON: {
        /* eps as the kernel has it: the double rounded to ACC */
        long double eps = dt == AMP_F64 ? c->p2 : (float)c->p2;
        if (c->p0 != 0) {
            r = expl(x) - t * x;
            *acc = (double)(3 * expl(x) + 2 * fabsl(t * x) + fabsl(r));
        } else {
            r = x - t * logl(x + eps);
            *acc = (double)(fabsl(x) + 3 * fabsl(t * logl(x + eps)) + 2 * fabsl(t) + fabsl(r));
        }
        if (c->p1 != 0 && !(t <= 1)) {
            long double stirling = t * logl(t) - t + 0.5L * logl(2 * 3.14159265358979323846264338327950288L * t);
            r += stirling;
            *acc += (double)(3 * (fabsl(t * logl(t)) + fabsl(t) + fabsl(logl(6.2831853L * t))) + 2 * fabsl(r));
        }
        return r;
    }
    }
    return 0;
}

static void test_pointwise_losses(void **state)
{
    static const size_t sizes[] = { 0, 1, 7, 500 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < NLOSS_CASES; ci++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int weighted = 0; weighted < 2; weighted++)
                    for (int r = 0; r < 3; r++) {
                        const loss_case *c = &loss_cases[ci];
                        amp_dtype t = dtypes[d];
                        size_t n = sizes[s], n_out = reductions[r] == AMP_REDUCTION_NONE ? n : 1;
                        tensor x = tensor_new(t, n), tg = tensor_new(t, n), w = tensor_random(t, n, 0.25, 2);
                        tensor y[NTABLES];
                        long double *oracle = malloc((n ? n : 1) * sizeof *oracle), total = 0, total_abs = 0;
                        double *acc = malloc((n ? n : 1) * sizeof *acc), acc_sum = 0;
                        char what[160];
                        assert_non_null(oracle);
                        assert_non_null(acc);
                        loss_inputs(c, &x, &tg);
                        for (size_t i = 0; i < n; i++) {
                            oracle[i] = loss_oracle(c, get(&x, i), get(&tg, i), t, &acc[i]);
                            if (weighted) {
                                acc[i] = acc[i] * get(&w, i) + (double)fabsl(oracle[i] * get(&w, i));
                                oracle[i] *= get(&w, i);
                            }
                            total += oracle[i];
                            total_abs += fabsl(oracle[i]);
                            acc_sum += acc[i];
                        }
                        snprintf(what, sizeof what, "%s%s, n %zu, reduction %s", c->what, weighted ? " weighted" : "",
                                 n, reduction_name[r]);
                        for (int e = 0; e < NTABLES; e++) {
                            y[e] = tensor_random(t, n_out, 7, 8);
                            run_pointwise(tables[e], c, n, &x, &tg, weighted ? w.data : NULL, reductions[r], &y[e]);
                            if (reductions[r] == AMP_REDUCTION_NONE)
                                for (size_t i = 0; i < n; i++)
                                    expect_close(&y[e], i, oracle[i], acc[i] * u_acc(t), what);
                            else if (reductions[r] == AMP_REDUCTION_SUM)
                                expect_close(&y[e], 0, total, (acc_sum + (double)(n * total_abs)) * u_acc(t), what);
                            else /* 0/0 = NaN for n = 0 */
                                expect_close(&y[e], 0, total / (long double)n,
                                             ((acc_sum + (double)(n * total_abs)) / (double)n +
                                              (double)finite_or_zero(fabsl(total / (long double)n))) *
                                                 u_acc(t),
                                             what);
                        }
                        expect_public_equals_ref(&y[0], &y[1]);
                        free(oracle);
                        free(acc);
                        tensor_free(&x);
                        tensor_free(&tg);
                        tensor_free(&w);
                        tensor_free(&y[0]);
                        tensor_free(&y[1]);
                    }
}

/* A NaN input makes its term NaN, and so the sum and the mean. */
static void test_pointwise_nan_propagates(void **state)
{
    static const double xs[3] = { 0.5, NAN, 0.25 }, ts[3] = { 0.5, 0.5, 1.0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < NLOSS_CASES; ci++)
            for (int e = 0; e < NTABLES; e++) {
                amp_dtype t = dtypes[d];
                tensor x = tensor_of(t, 3, xs), tg = tensor_of(t, 3, ts), y = tensor_new(t, 3);
                run_pointwise(tables[e], &loss_cases[ci], 3, &x, &tg, NULL, AMP_REDUCTION_NONE, &y);
                assert_true(isnan(get(&y, 1)) && !isnan(get(&y, 0)) && !isnan(get(&y, 2)));
                run_pointwise(tables[e], &loss_cases[ci], 3, &x, &tg, NULL, AMP_REDUCTION_SUM, &y);
                assert_true(isnan(get(&y, 0)));
                run_pointwise(tables[e], &loss_cases[ci], 3, &x, &tg, NULL, AMP_REDUCTION_MEAN, &y);
                assert_true(isnan(get(&y, 0)));
                tensor_free(&x);
                tensor_free(&tg);
                tensor_free(&y);
            }
}

/* ---- Fixed pointwise cases printed by PyTorch 1.13 in float64 --------------
 *
 * Inputs are exact in every dtype. Small values of order 1: 64 u_acc
 * (|y| + 4) covers the compute error and is far below any semantic slip. */

static const double kl_x[] = { -1.0, -2.0, 0.5, -INFINITY, 1.0, 0.0 };
static const double kl_t[] = { 0.5, 0.0, 0.25, 0.0, -1.0, 0.0 };
static const double kl[] = { 0.15342640972002736, 0.0, -0.47157359027997264, NAN, NAN, 0.0 };
static const double kl_log[] = { 2.4730819060501923, 2.0, -0.32100635417193535, INFINITY, -0.7357588823428847, 0.0 };
static const double bce_x[] = { 0.0, 1.0, 0.5, 0.25, 1.0, 0.0 };
static const double bce_t[] = { 1.0, 0.0, 0.25, 0.5, 1.0, 0.0 };
static const double bce_w[] = { 2.0, 0.5, 1.0, 3.0, 1.0, 1.5 };
static const double bce[] = { 100.0, 100.0, 0.6931471805599453, 0.8369882167858358, -0.0, 0.0 };
static const double bce_w_mean[] = { 42.20068530515291 };
static const double pois_x[] = { 0.5, 1.0, 2.0, 3.0, -1.5, 0.25 };
static const double pois_abs_x[] = { 0.5, 1.0, 2.0, 3.0, 1.5, 0.25 };
static const double pois_t[] = { 0.0, 1.0, 2.0, 5.0, 1.5, 7.0 };
static const double pois_log_full[] = { 1.6487212707001282, 1.718281828459045, 4.040862583535186,
                                        9.856383974779892,  2.7029989095694313, 8.047290067807264 };
static const double pois_log[] = { 1.6487212707001282, 1.718281828459045, 3.3890560989306504,
                                   5.085536923187668,  2.47313016014843,  -0.4659745833122586 };
static const double pois_lin_full[] = { 0.5, 0.9999999900000001, 1.2655121134846454, 2.27778559158501, 1.121671077258755,
                                        18.467324898958765 };
static const double reg_x[] = { 0.0, 3.0, -1.0, 0.25, 5.0, -2.5 };
static const double reg_t[] = { 0.5, 0.0, 0.5, 0.0, 1.0, 0.0 };
static const double huber2[] = { 0.125, 4.0, 1.125, 0.03125, 6.0, 3.0 };
static const double smoothl1_2[] = { 0.0625, 2.0, 0.5625, 0.015625, 3.0, 1.5 };
static const double smoothl1_0[] = { 0.5, 3.0, 1.5, 0.25, 4.0, 2.5 };
static const double mse_sum[] = { 33.8125 };
static const double l1_mean[] = { 1.9583333333333333 };
static const double hinge_x[] = { 0.25, 2.0, 0.25, -1.0, 0.5, 3.0 };
static const double hinge_t[] = { 1.0, -1.0, -1.0, 0.5, 1.0, -1.0 };
static const double hinge[] = { 0.25, 0.0, 1.25, 1.5, 0.5, 0.0 }; /* margin 1.5 */
static const double logit_x[] = { 100.0, -100.0, 0.5, -0.75, 30.0, 0.0 };
static const double logit_t[] = { 0.0, 1.0, 0.25, 1.0, 1.0, 0.5 };
/* [4]: PyTorch 1.13 prints 9.348077867343381e-14 from log(1 + exp(-30));
 * the exact value, which the log1p form gives, is exp(-30) - exp(-60)/2. */
static const double bcel[] = { 100.0, 100.0, 0.8490769841801067, 1.1368710061148999, 9.357622968840175e-14,
                               0.6931471805599453 };
static const double sm_t[] = { -1.0, -1.0, 1.0, 1.0, -1.0, 1.0 };
static const double softmargin[] = { 100.0, 0.0, 0.4740769841801067, 1.1368710061148999, 30.000000000000092,
                                     0.6931471805599453 };
/* PyTorch's formula, log1p(exp(-x t)), overflows in float32 for x t = -100:
 * torch prints inf there for float32 and bfloat16 inputs, and so does the
 * kernel computing in f32. */
static const double softmargin_f32[] = { INFINITY, 0.0, 0.4740769841801067, 1.1368710061148999, 30.000000000000092,
                                         0.6931471805599453 };

static void expect_all_close(const tensor *y, const double *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        expect_close(y, i, want[i], 64 * u_acc(y->t) * (isfinite(want[i]) ? fabs(want[i]) + 4 : 0), what);
}

static void check_fixed(amp_dtype t, int e, loss_kind kind, double p0, double p1, double p2, const double *xs,
                        const double *ts, const double *ws, int reduction, const double *want, const char *what)
{
    loss_case c = { what, kind, p0, p1, p2 };
    size_t n_out = reduction == AMP_REDUCTION_NONE ? 6 : 1;
    tensor x = tensor_of(t, 6, xs), tg = tensor_of(t, 6, ts), w = tensor_of(t, 6, ws ? ws : xs), y = tensor_new(t, n_out);
    run_pointwise(tables[e], &c, 6, &x, &tg, ws ? w.data : NULL, reduction, &y);
    expect_all_close(&y, want, n_out, what);
    tensor_free(&x);
    tensor_free(&tg);
    tensor_free(&w);
    tensor_free(&y);
}

static void test_pointwise_match_torch(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            int none = AMP_REDUCTION_NONE;
            check_fixed(t, e, L_KL_DIV, 0, 0, 0, kl_x, kl_t, NULL, none, kl, "kl_div vs torch");
            check_fixed(t, e, L_KL_DIV, 1, 0, 0, kl_x, kl_t, NULL, none, kl_log, "kl_div log_target vs torch");
            check_fixed(t, e, L_BCE, 0, 0, 0, bce_x, bce_t, NULL, none, bce, "binary_cross_entropy vs torch");
            check_fixed(t, e, L_BCE, 0, 0, 0, bce_x, bce_t, bce_w, AMP_REDUCTION_MEAN, bce_w_mean,
                        "binary_cross_entropy weighted mean vs torch");
            check_fixed(t, e, L_POISSON, 1, 1, 1e-8, pois_x, pois_t, NULL, none, pois_log_full,
                        "poisson_nll_loss log full vs torch");
            check_fixed(t, e, L_POISSON, 1, 0, 1e-8, pois_x, pois_t, NULL, none, pois_log,
                        "poisson_nll_loss log vs torch");
            check_fixed(t, e, L_POISSON, 0, 1, 1e-8, pois_abs_x, pois_t, NULL, none, pois_lin_full,
                        "poisson_nll_loss full vs torch");
            check_fixed(t, e, L_HUBER, 2.0, 0, 0, reg_x, reg_t, NULL, none, huber2, "huber_loss vs torch");
            check_fixed(t, e, L_SMOOTH_L1, 2.0, 0, 0, reg_x, reg_t, NULL, none, smoothl1_2, "smooth_l1 vs torch");
            check_fixed(t, e, L_SMOOTH_L1, 0.0, 0, 0, reg_x, reg_t, NULL, none, smoothl1_0, "smooth_l1 0 vs torch");
            check_fixed(t, e, L_MSE, 0, 0, 0, reg_x, reg_t, NULL, AMP_REDUCTION_SUM, mse_sum, "mse sum vs torch");
            check_fixed(t, e, L_L1, 0, 0, 0, reg_x, reg_t, NULL, AMP_REDUCTION_MEAN, l1_mean, "l1 mean vs torch");
            check_fixed(t, e, L_HINGE, 1.5, 0, 0, hinge_x, hinge_t, NULL, none, hinge, "hinge vs torch");
            check_fixed(t, e, L_BCE_LOGITS, 0, 0, 0, logit_x, logit_t, NULL, none, bcel, "bce_with_logits vs torch");
            check_fixed(t, e, L_SOFT_MARGIN, 0, 0, 0, logit_x, sm_t, NULL, none, t == AMP_F64 ? softmargin : softmargin_f32,
                        "soft_margin vs torch");
        }
}

/* ---- cross_entropy, nll_loss_nd ------------------------------------------ */

typedef struct {
    int64_t N, C, inner;
} class_shape;

static const class_shape class_shapes[] = { { 5, 4, 1 }, { 2, 3, 4 }, { 1, 1, 1 }, { 0, 3, 2 }, { 3, 2, 0 }, { 40, 50, 3 } };
#define NCLASS_SHAPES (sizeof class_shapes / sizeof class_shapes[0])

/* Log-probabilities of position (n, i), and each one's error in u_acc
 * when computed from logits (0 when given as log-probabilities). */
static void log_probs(const tensor *x, const class_shape *s, int64_t n, int64_t i, int from_logits, long double *logp,
                      long double *err)
{
    long double m = -INFINITY, sum = 0, log_sum;
    for (int64_t c = 0; c < s->C; c++)
        m = fmaxl(m, get(x, (size_t)((n * s->C + c) * s->inner + i)));
    for (int64_t c = 0; c < s->C; c++)
        sum += expl(get(x, (size_t)((n * s->C + c) * s->inner + i)) - m);
    log_sum = logl(sum);
    for (int64_t c = 0; c < s->C; c++) {
        long double v = get(x, (size_t)((n * s->C + c) * s->inner + i));
        logp[c] = from_logits ? (v - m) - log_sum : v;
        err[c] = from_logits ? 2 * fabsl(v - m) + s->C + 4 + 2 * fabsl(log_sum) + fabsl(logp[c]) : 0;
    }
}

/* Mean of sums: (sum of loss) / (sum of w), each sum carrying (P + 1)
 * units of its magnitudes, as test_kernels.c's nll_loss oracle. */
static double mean_acc(size_t positions, long double total_abs, long double acc_sum, long double mean,
                       long double weight_sum_abs, long double weight_sum)
{
    if (!isfinite(mean))
        return 0;
    return (double)(1.01L * ((positions + 1) * (total_abs + fabsl(mean) * weight_sum_abs) + acc_sum) / fabsl(weight_sum) +
                    fabsl(mean));
}

static void check_class_loss(amp_dtype t, int from_logits, const class_shape *s, int weighted, int64_t ignore_index,
                             double smoothing, int r)
{
    size_t positions = (size_t)(s->N * s->inner), n = positions * (size_t)s->C;
    size_t n_out = reductions[r] == AMP_REDUCTION_NONE ? positions : 1;
    tensor x = from_logits ? tensor_random(t, n, -4, 4) : tensor_random(t, n, -6, 0);
    tensor w = tensor_random(t, (size_t)s->C, 0.25, 2), y[NTABLES];
    int64_t *target = malloc((positions ? positions : 1) * sizeof *target);
    long double *oracle = malloc((positions ? positions : 1) * sizeof *oracle);
    long double *logp = malloc((size_t)(s->C ? s->C : 1) * sizeof *logp);
    long double *err = malloc((size_t)(s->C ? s->C : 1) * sizeof *err);
    double *acc = malloc((positions ? positions : 1) * sizeof *acc);
    long double total = 0, total_abs = 0, acc_sum = 0, weight_sum = 0, smooth = smoothing;
    char what[200];

    assert_true(target && oracle && logp && err && acc);
    for (size_t p = 0; p < positions; p++)
        target[p] = p % 4 == 3 ? ignore_index : (int64_t)uniform(0, (double)s->C) % s->C;
    for (int64_t nn = 0; nn < s->N; nn++)
        for (int64_t i = 0; i < s->inner; i++) {
            size_t p = (size_t)(nn * s->inner + i);
            int64_t k = target[p];
            long double wk, loss, a;
            if (k == ignore_index) {
                oracle[p] = 0;
                acc[p] = 0;
                continue;
            }
            log_probs(&x, s, nn, i, from_logits, logp, err);
            wk = weighted ? get(&w, (size_t)k) : 1;
            loss = -wk * logp[k];
            a = wk * (err[k] + 2 * fabsl(logp[k]));
            if (smoothing > 0) {
                long double sm = 0, sm_acc = 0;
                for (int64_t c = 0; c < s->C; c++) {
                    long double wc = weighted ? get(&w, (size_t)c) : 1;
                    sm -= wc * logp[c];
                    sm_acc += wc * (err[c] + (s->C + 2) * fabsl(logp[c]));
                }
                loss = (1 - smooth) * loss + smooth / s->C * sm;
                a = (1 - smooth) * a + smooth / s->C * sm_acc;
            }
            oracle[p] = loss;
            acc[p] = (double)(a + 3 * fabsl(loss));
            total += loss;
            total_abs += fabsl(loss);
            acc_sum += acc[p];
            weight_sum += wk;
        }
    snprintf(what, sizeof what, "%s [%lld, %lld, %lld]%s ignore %lld smoothing %g %s",
             from_logits ? "cross_entropy" : "nll_loss_nd", (long long)s->N, (long long)s->C, (long long)s->inner,
             weighted ? " weighted" : "", (long long)ignore_index, smoothing, reduction_name[r]);
    for (int e = 0; e < NTABLES; e++) {
        int status;
        y[e] = tensor_random(t, n_out, 7, 8);
        if (from_logits)
            KCALL_STATUS(status, tables[e], t, cross_entropy, s->N, s->C, s->inner, x.data, target,
                         weighted ? w.data : NULL, ignore_index, smoothing, reductions[r], y[e].data);
        else
            KCALL_STATUS(status, tables[e], t, nll_loss_nd, s->N, s->C, s->inner, x.data, target,
                         weighted ? w.data : NULL, ignore_index, reductions[r], y[e].data);
        assert_int_equal(status, AMP_OK);
        if (reductions[r] == AMP_REDUCTION_NONE)
            for (size_t p = 0; p < positions; p++)
                expect_close(&y[e], p, oracle[p], acc[p] * u_acc(t), what);
        else if (reductions[r] == AMP_REDUCTION_SUM)
            expect_close(&y[e], 0, total, (double)((positions + 1) * total_abs + acc_sum) * u_acc(t), what);
        else /* all ignored, or no positions: 0/0 = NaN */
            expect_close(&y[e], 0, total / weight_sum,
                         mean_acc(positions, total_abs, acc_sum, total / weight_sum, weight_sum, weight_sum) * u_acc(t),
                         what);
    }
    expect_public_equals_ref(&y[0], &y[1]);
    free(target);
    free(oracle);
    free(logp);
    free(err);
    free(acc);
    tensor_free(&x);
    tensor_free(&w);
    tensor_free(&y[0]);
    tensor_free(&y[1]);
}

static void test_cross_entropy_and_nll_loss_nd(void **state)
{
    static const double smoothings[] = { 0.0, 0.2 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int from_logits = 0; from_logits < 2; from_logits++)
            for (size_t si = 0; si < NCLASS_SHAPES; si++)
                for (int weighted = 0; weighted < 2; weighted++)
                    for (int ig = 0; ig < 2; ig++) /* -100, or class 0 (a valid class) */
                        for (int sm = 0; sm < (from_logits ? 2 : 1); sm++)
                            for (int r = 0; r < 3; r++)
                                check_class_loss(dtypes[d], from_logits, &class_shapes[si], weighted, ig ? 0 : -100,
                                                 smoothings[sm], r);
}

/* Every position ignored: NONE all 0, SUM 0, MEAN 0/0 = NaN (with label
 * smoothing too: PyTorch divides its smoothing term by the same empty sum). */
static void test_cross_entropy_all_ignored(void **state)
{
    const int64_t target[4] = { -100, -100, -100, -100 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor x = tensor_random(t, 12, -2, 2), y = tensor_random(t, 4, 7, 8);
            int status;
            KCALL_STATUS(status, tables[e], t, cross_entropy, 4, 3, 1, x.data, target, NULL, -100, 0.1,
                         AMP_REDUCTION_MEAN, y.data);
            assert_int_equal(status, AMP_OK);
            assert_true(isnan(get(&y, 0)));
            KCALL_STATUS(status, tables[e], t, cross_entropy, 4, 3, 1, x.data, target, NULL, -100, 0.1,
                         AMP_REDUCTION_SUM, y.data);
            assert_true(get(&y, 0) == 0);
            KCALL_STATUS(status, tables[e], t, cross_entropy, 4, 3, 1, x.data, target, NULL, -100, 0.1,
                         AMP_REDUCTION_NONE, y.data);
            for (size_t i = 0; i < 4; i++)
                assert_true(get(&y, i) == 0);
            KCALL_STATUS(status, tables[e], t, nll_loss_nd, 4, 3, 1, x.data, target, NULL, -100, AMP_REDUCTION_MEAN,
                         y.data);
            assert_true(isnan(get(&y, 0)));
            tensor_free(&x);
            tensor_free(&y);
        }
}

/* A -inf logit of another class: plain cross_entropy stays finite (no
 * 0 * inf from a smoothing term that is not there); with smoothing the
 * loss is +inf, as in PyTorch. */
static void test_cross_entropy_neg_inf_logit(void **state)
{
    static const double xs[3] = { 1.0, -INFINITY, 0.5 };
    const int64_t target[1] = { 0 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            tensor x = tensor_of(t, 3, xs), y = tensor_new(t, 1);
            int status;
            KCALL_STATUS(status, tables[e], t, cross_entropy, 1, 3, 1, x.data, target, NULL, -100, 0.0,
                         AMP_REDUCTION_SUM, y.data);
            assert_int_equal(status, AMP_OK);
            expect_close(&y, 0, log1pl(expl(-0.5L)), 16 * u_acc(t), "cross_entropy with a -inf logit");
            KCALL_STATUS(status, tables[e], t, cross_entropy, 1, 3, 1, x.data, target, NULL, -100, 0.1,
                         AMP_REDUCTION_SUM, y.data);
            assert_true(get(&y, 0) == INFINITY);
            tensor_free(&x);
            tensor_free(&y);
        }
}

/* Errors: the status, and nothing written; checked in nll_loss's order. */
static void test_class_loss_errors(void **state)
{
    const int64_t too_big[3] = { 0, 2, 1 };  /* 2 == C */
    const int64_t negative[3] = { 0, -1, 1 }; /* -1 is not ignore_index (-100) */
    const int64_t huge[3] = { 0, INT64_MAX, 1 };
    const int64_t ok[3] = { 0, 1, -100 };
    const int64_t *bad[3] = { too_big, negative, huge };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++)
            for (int ce = 0; ce < 2; ce++) {
                amp_dtype t = dtypes[d];
                const amp_kernel_table *k = tables[e];
                tensor x = tensor_random(t, 6, -3, 0), y = tensor_random(t, 3, 7, 8), before = tensor_copy(&y);
                int status;
#define CALL(N, C, inner, xp, tgt, red, yp)                                                                    \
    do {                                                                                                       \
        if (ce)                                                                                                \
            KCALL_STATUS(status, k, t, cross_entropy, N, C, inner, xp, tgt, NULL, -100, 0.1, red, yp);         \
        else                                                                                                   \
            KCALL_STATUS(status, k, t, nll_loss_nd, N, C, inner, xp, tgt, NULL, -100, red, yp);                \
    } while (0)
                for (int r = AMP_REDUCTION_NONE; r <= AMP_REDUCTION_SUM; r++)
                    for (int b = 0; b < 3; b++) {
                        CALL(3, 2, 1, x.data, bad[b], r, y.data);
                        assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
                    }
                CALL(1, 2, 3, x.data, too_big, AMP_REDUCTION_NONE, y.data); /* [1, 2, 3]: target [1, 3] */
                assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
                CALL(-1, 2, 1, x.data, ok, AMP_REDUCTION_SUM, y.data);
                assert_int_equal(status, AMP_ERR_BAD_DIM);
                CALL(3, -2, 1, x.data, ok, AMP_REDUCTION_SUM, y.data);
                assert_int_equal(status, AMP_ERR_BAD_DIM);
                CALL(3, 2, -1, x.data, ok, AMP_REDUCTION_SUM, y.data);
                assert_int_equal(status, AMP_ERR_BAD_DIM);
                CALL(3, 2, 1, x.data, ok, 3, y.data);
                assert_int_equal(status, AMP_ERR_BAD_REDUCTION);
                CALL(3, 2, 1, NULL, ok, AMP_REDUCTION_SUM, y.data);
                assert_int_equal(status, AMP_ERR_NULL_ARG);
                CALL(3, 2, 1, x.data, NULL, AMP_REDUCTION_SUM, y.data);
                assert_int_equal(status, AMP_ERR_NULL_ARG);
                CALL(3, 2, 1, x.data, ok, AMP_REDUCTION_NONE, NULL);
                assert_int_equal(status, AMP_ERR_NULL_ARG);
                CALL(0, 2, 1, NULL, NULL, AMP_REDUCTION_SUM, NULL);
                assert_int_equal(status, AMP_ERR_NULL_ARG); /* a reduction always writes y[0] */
                assert_memory_equal(y.data, before.data, 3 * amp_dtype_size(t));
                /* No positions: nothing read; NONE writes nothing, SUM 0. */
                CALL(0, 2, 1, NULL, NULL, AMP_REDUCTION_NONE, NULL);
                assert_int_equal(status, AMP_OK);
                CALL(2, 2, 0, NULL, NULL, AMP_REDUCTION_SUM, y.data);
                assert_int_equal(status, AMP_OK);
                assert_true(get(&y, 0) == 0);
#undef CALL
                tensor_free(&x);
                tensor_free(&y);
                tensor_free(&before);
            }
}

/* ---- cross_entropy with class probabilities ------------------------------- */

static void check_cross_entropy_prob(amp_dtype t, const class_shape *s, int weighted, double smoothing, int r)
{
    size_t positions = (size_t)(s->N * s->inner), n = positions * (size_t)s->C;
    size_t n_out = reductions[r] == AMP_REDUCTION_NONE ? positions : 1;
    tensor x = tensor_random(t, n, -4, 4), q = tensor_random(t, n, 0, 1);
    tensor w = tensor_random(t, (size_t)s->C, 0.25, 2), y[NTABLES];
    long double *oracle = malloc((positions ? positions : 1) * sizeof *oracle);
    long double *logp = malloc((size_t)(s->C ? s->C : 1) * sizeof *logp);
    long double *err = malloc((size_t)(s->C ? s->C : 1) * sizeof *err);
    double *acc = malloc((positions ? positions : 1) * sizeof *acc);
    long double total = 0, total_abs = 0, acc_sum = 0, sm = smoothing, mean;
    char what[200];

    assert_true(oracle && logp && err && acc);
    for (int64_t nn = 0; nn < s->N; nn++)
        for (int64_t i = 0; i < s->inner; i++) {
            size_t p = (size_t)(nn * s->inner + i);
            long double loss = 0, a = 0;
            log_probs(&x, s, nn, i, 1, logp, err);
            for (int64_t c = 0; c < s->C; c++) {
                long double tc = get(&q, (size_t)((nn * s->C + c) * s->inner + i));
                long double qc = smoothing > 0 ? tc * (1 - sm) + sm / s->C : tc;
                long double wc = weighted ? get(&w, (size_t)c) : 1;
                loss -= logp[c] * qc * wc;
                a += wc * (qc * err[c] + (qc * (s->C + 4) + 2 * (tc + sm / s->C)) * fabsl(logp[c]));
            }
            oracle[p] = loss;
            acc[p] = (double)(a + fabsl(loss));
            total += loss;
            total_abs += fabsl(loss);
            acc_sum += acc[p];
        }
    mean = n == 0 ? NAN : total / positions;
    snprintf(what, sizeof what, "cross_entropy_prob [%lld, %lld, %lld]%s smoothing %g %s", (long long)s->N,
             (long long)s->C, (long long)s->inner, weighted ? " weighted" : "", smoothing, reduction_name[r]);
    for (int e = 0; e < NTABLES; e++) {
        y[e] = tensor_random(t, n_out, 7, 8);
        KCALL(tables[e], t, cross_entropy_prob, s->N, s->C, s->inner, x.data, q.data, weighted ? w.data : NULL,
              smoothing, reductions[r], y[e].data);
        if (reductions[r] == AMP_REDUCTION_NONE)
            for (size_t p = 0; p < positions; p++)
                expect_close(&y[e], p, oracle[p], acc[p] * u_acc(t), what);
        else if (reductions[r] == AMP_REDUCTION_SUM)
            expect_close(&y[e], 0, total, (double)((positions + 1) * total_abs + acc_sum) * u_acc(t), what);
        else
            expect_close(&y[e], 0, mean,
                         (double)(((positions + 1) * total_abs + acc_sum) / (positions ? positions : 1) +
                                  finite_or_zero(fabsl(mean))) *
                             u_acc(t),
                         what);
    }
    expect_public_equals_ref(&y[0], &y[1]);
    free(oracle);
    free(logp);
    free(err);
    free(acc);
    tensor_free(&x);
    tensor_free(&q);
    tensor_free(&w);
    tensor_free(&y[0]);
    tensor_free(&y[1]);
}

static void test_cross_entropy_prob(void **state)
{
    static const class_shape extra[] = { { 2, 0, 3 } }; /* C = 0: empty x, MEAN is NaN as in PyTorch */
    static const double smoothings[] = { 0.0, 0.3 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t si = 0; si <= NCLASS_SHAPES; si++)
            for (int weighted = 0; weighted < 2; weighted++)
                for (int sm = 0; sm < 2; sm++)
                    for (int r = 0; r < 3; r++)
                        check_cross_entropy_prob(dtypes[d], si < NCLASS_SHAPES ? &class_shapes[si] : &extra[0],
                                                 weighted, smoothings[sm], r);
}

/* ---- Fixed class-loss cases printed by PyTorch 1.13 in float64 ------------
 *
 * x [4, 3] (below), targets [0, 2, -100, 1], weight [0.5, 2, 1.5]. */

static const double ce_x[12] = { 0.5, -1.25, 2.0, 3.75, -0.5, 1.0, -2.0, 0.25, 1.5, -3.0, 2.5, 0.75 };
static const double ce_w[3] = { 0.5, 2.0, 1.5 };
/* cross_entropy(x, t, weight=w, label_smoothing=0.2, reduction=...) */
static const double ce_ls_w_none[] = { 1.238414655401355, 4.252085623596246, 0.0, 0.663906367261647 };
static const double ce_ls_w_mean[] = { 1.538601661564812 };
static const double ce_ls_w_sum[] = { 6.154406646259248 };
static const double ce_w_mean[] = { 1.3579097873594757 };  /* weight, no smoothing */
static const double ce_ls_mean[] = { 1.7127580472750463 }; /* smoothing 0.2, no weight */
/* targets [0, 1, 2, 1], ignore_index=1 (a valid class), smoothing 0.3, weight */
static const double ce_ignore1_ls_w_mean[] = { 1.1242026837927976 };
static const double ce_ignore1_ls_w_none[] = { 1.4244664873265243, 0.0, 0.823938880259071, 0.0 };
/* x3 = x viewed [2, 2, 3] and transposed to [2, 3, 2]; targets [[2, 0], [1, -100]] */
static const double ce_x3[] = { 0.5, 3.75, -1.25, -0.5, 2.0, 1.0, -2.0, -3.0, 0.25, 2.5, 1.5, 0.75 };
static const double ce3_ls_mean[] = { 0.7526792992672179 };                                        /* smoothing 0.1 */
static const double ce3_ls_w_none[] = { 0.5867226082680151, 0.4647499639303251, 2.9235851736787613, 0.0 }; /* + weight */
/* nll_loss(log_softmax(x3, 1), targets, weight=w) */
static const double nll3_lp[] = { -1.7326219831020326, -0.07528565245198594, -3.4826219831020326, -4.325285652451986,
                                  -0.23262198310203266, -2.825285652451986, -3.775130262247635,  -5.663699839604454,
                                  -1.5251302622476353, -0.16369983960445378, -0.27513026224763526, -1.9136998396044538 };
static const double nll3_w_mean[] = { 0.8592090813435781 };
/* probabilities p [4, 3] */
static const double ce_p[12] = { 0.25, 0.5, 0.25, 1.0, 0.0, 0.0, 0.125, 0.375, 0.5, 0.0, 0.75, 0.25 };
static const double ceprob_ls_w_mean[] = { 1.8161299894736052 };
static const double ceprob_ls_w_none[] = { 3.574512241882981, 0.8918571016346573, 1.6256142310755803, 1.1725363833012015 };
static const double ceprob_sum[] = { 4.090487737406107 };

static void test_class_losses_match_torch(void **state)
{
    const int64_t t4[4] = { 0, 2, -100, 1 }, t4b[4] = { 0, 1, 2, 1 }, t3[4] = { 2, 0, 1, -100 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            tensor x = tensor_of(t, 12, ce_x), x3 = tensor_of(t, 12, ce_x3), w = tensor_of(t, 3, ce_w);
            tensor p = tensor_of(t, 12, ce_p), lp = tensor_of(t, 12, nll3_lp), y = tensor_new(t, 4);
            int status;
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4, w.data, -100, 0.2, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, ce_ls_w_none, 4, "cross_entropy smoothing weight none vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4, w.data, -100, 0.2, AMP_REDUCTION_MEAN, y.data);
            expect_all_close(&y, ce_ls_w_mean, 1, "cross_entropy smoothing weight mean vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4, w.data, -100, 0.2, AMP_REDUCTION_SUM, y.data);
            expect_all_close(&y, ce_ls_w_sum, 1, "cross_entropy smoothing weight sum vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4, w.data, -100, 0.0, AMP_REDUCTION_MEAN, y.data);
            expect_all_close(&y, ce_w_mean, 1, "cross_entropy weight mean vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4, NULL, -100, 0.2, AMP_REDUCTION_MEAN, y.data);
            expect_all_close(&y, ce_ls_mean, 1, "cross_entropy smoothing mean vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4b, w.data, 1, 0.3, AMP_REDUCTION_MEAN, y.data);
            expect_all_close(&y, ce_ignore1_ls_w_mean, 1, "cross_entropy ignore_index 1 mean vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 4, 3, 1, x.data, t4b, w.data, 1, 0.3, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, ce_ignore1_ls_w_none, 4, "cross_entropy ignore_index 1 none vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 2, 3, 2, x3.data, t3, NULL, -100, 0.1, AMP_REDUCTION_MEAN, y.data);
            expect_all_close(&y, ce3_ls_mean, 1, "cross_entropy [2, 3, 2] mean vs torch");
            KCALL_STATUS(status, k, t, cross_entropy, 2, 3, 2, x3.data, t3, w.data, -100, 0.1, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, ce3_ls_w_none, 4, "cross_entropy [2, 3, 2] weight none vs torch");
            assert_int_equal(status, AMP_OK);
            /* log-probabilities are not exact in the narrow dtypes: allow for
             * their rounding (a few u_T of values up to 6) */
            KCALL_STATUS(status, k, t, nll_loss_nd, 2, 3, 2, lp.data, t3, w.data, -100, AMP_REDUCTION_MEAN, y.data);
            assert_int_equal(status, AMP_OK);
            expect_close(&y, 0, nll3_w_mean[0], 12 * unit_roundoff(t) + 64 * u_acc(t), "nll_loss_nd weight mean vs torch");
            KCALL(k, t, cross_entropy_prob, 4, 3, 1, x.data, p.data, w.data, 0.2, AMP_REDUCTION_MEAN, y.data);
            expect_all_close(&y, ceprob_ls_w_mean, 1, "cross_entropy_prob mean vs torch");
            KCALL(k, t, cross_entropy_prob, 4, 3, 1, x.data, p.data, w.data, 0.2, AMP_REDUCTION_NONE, y.data);
            expect_all_close(&y, ceprob_ls_w_none, 4, "cross_entropy_prob none vs torch");
            KCALL(k, t, cross_entropy_prob, 4, 3, 1, x.data, p.data, NULL, 0.0, AMP_REDUCTION_SUM, y.data);
            expect_all_close(&y, ceprob_sum, 1, "cross_entropy_prob sum vs torch");
            tensor_free(&x);
            tensor_free(&x3);
            tensor_free(&w);
            tensor_free(&p);
            tensor_free(&lp);
            tensor_free(&y);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pointwise_losses),
        cmocka_unit_test(test_pointwise_nan_propagates),
        cmocka_unit_test(test_pointwise_match_torch),
        cmocka_unit_test(test_cross_entropy_and_nll_loss_nd),
        cmocka_unit_test(test_cross_entropy_all_ignored),
        cmocka_unit_test(test_cross_entropy_neg_inf_logit),
        cmocka_unit_test(test_class_loss_errors),
        cmocka_unit_test(test_cross_entropy_prob),
        cmocka_unit_test(test_class_losses_match_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
