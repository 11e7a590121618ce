/*
 * test_backward_linalg.c - the gradient kernels of amprt/backward_linalg.h
 * (f32 and f64): triangular_solve_backward (lower, upper, transposed,
 * unitriangular), cholesky_backward (lower, upper), eigh_backward (values,
 * vectors, both), svdvals_backward and pinverse_backward (tall, wide,
 * square), qr_backward (tall, square; dQ, dR, both) and svd_backward
 * (tall, wide, square; dU, dVh, all three), lu_factor_backward (with row
 * swaps), lu_solve_backward (dB, dLU, each alone) and
 * householder_product_backward (dA, dtau; k = n and k < n) and
 * ormqr_backward (left/right, transposed or not; dA, dtau, dC), batched.
 *
 * Each f64 gradient is checked against central finite differences of the
 * f64 FORWARD kernel (amprt/linalg.h) of L = sum(dy * forward(A)), the
 * oracle that defines it, on well-conditioned random inputs with distinct
 * eigen/singular values.  Where the forward reads one triangle of a
 * symmetric input (cholesky, eigh), the perturbation is symmetric (A(i, j)
 * and A(j, i) together), as the gradient is autograd's symmetric one: the
 * difference quotient is then g(i, j) + g(j, i).  Eigenvectors and singular
 * vector pairs are compared with their signs fixed to the unperturbed ones'
 * (a gauge autograd's formula assumes fixed).  The f32 kernels are checked against the f64
 * ones on the same f32-rounded inputs, and every public entry point against
 * the reference kernel bitwise.  A few cases worked by hand pin the
 * formulas' conventions (1x1 Cholesky, a diagonal eigh).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "amprt.h"
#include "amprt_internal.h"

#define FD_H 1e-6

/* ---- helpers ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(double lo, double hi)
{
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return lo + (hi - lo) * (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double *dalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

static float *falloc(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

static void random_fill(double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = uniform(lo, hi);
}

/* x rounded to f32, in place, and its f32 copy. */
static float *round_f32(double *x, size_t n)
{
    float *f = falloc(n);
    for (size_t i = 0; i < n; i++) {
        f[i] = (float)x[i];
        x[i] = f[i];
    }
    return f;
}

/* batch symmetric positive definite [n, n]: M M^T / n + I, M in [-1, 1] */
static void spd_fill(double *a, int64_t batch, int64_t n)
{
    double *m = dalloc((size_t)(n * n));
    for (int64_t b = 0; b < batch; b++) {
        random_fill(m, (size_t)(n * n), -1, 1);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = i == j ? 1.0 : 0.0;
                for (int64_t k = 0; k < n; k++)
                    s += m[i * n + k] * m[j * n + k] / (double)n;
                a[(b * n + i) * n + j] = s;
            }
    }
    free(m);
}

static double max_abs(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* |got - want| <= tol (max |want| + 1) everywhere. */
static void expect_close(const char *what, const double *got, const double *want, size_t n, double tol)
{
    double scale = max_abs(want, n) + 1;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * scale)) {
            fail_msg("%s: element %zu is %.10g, want %.10g (tolerance %.3g)", what, i, got[i], want[i], tol * scale);
        }
}

static void expect_close_f32(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double *g = dalloc(n);
    for (size_t i = 0; i < n; i++)
        g[i] = got[i];
    expect_close(what, g, want, n, tol);
    free(g);
}

static void expect_same_bits(const char *what, const void *a, const void *b, size_t bytes)
{
    if (memcmp(a, b, bytes) != 0)
        fail_msg("%s: the public kernel differs from the reference", what);
}

/* ---- the forward losses L = sum(dy * forward(A)) ----------------------------- */

typedef double (*loss_fn)(const void *ctx, const double *a);

/* The central difference quotient of L along element i (and its mirror j
 * when j != i, both moved together). */
static double fd(loss_fn f, const void *ctx, double *a, size_t i, size_t j)
{
    double ai = a[i], aj = a[j];
    a[i] = ai + FD_H;
    if (j != i)
        a[j] = aj + FD_H;
    double up = f(ctx, a);
    a[i] = ai - FD_H;
    if (j != i)
        a[j] = aj - FD_H;
    double down = f(ctx, a);
    a[i] = ai, a[j] = aj;
    return (up - down) / (2 * FD_H);
}

/* Every element of a's gradient g against finite differences; symmetric:
 * batches of [n, n] symmetric matrices, perturbed in pairs. */
static void expect_fd(const char *what, loss_fn f, const void *ctx, double *a, const double *g, int64_t batch,
                      int64_t r, int64_t c, int symmetric)
{
    size_t total = (size_t)(batch * r * c);
    double *want = dalloc(total), *got = dalloc(total);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++) {
                size_t e = (size_t)((b * r + i) * c + j), m = (size_t)((b * r + j) * c + i);
                if (symmetric && j > i)
                    continue;
                want[e] = fd(f, ctx, a, e, symmetric ? m : e);
                got[e] = symmetric && i != j ? g[e] + g[m] : g[e];
            }
    expect_close(what, got, want, total, 1e-6);
    free(want);
    free(got);
}

/* ---- triangular_solve --------------------------------------------------------- */

typedef struct {
    int64_t batch, n, k;
    int upper, transpose, unit;
    const double *b, *dy;
} tri_ctx;

static double tri_loss(const void *ctx, const double *a)
{
    const tri_ctx *t = ctx;
    size_t nx = (size_t)(t->batch * t->n * t->k);
    double *x = dalloc(nx), s = 0;
    amp_triangular_solve_f64(t->batch, t->n, t->k, t->upper, t->transpose, t->unit, t->b, a, x);
    for (size_t i = 0; i < nx; i++)
        s += t->dy[i] * x[i];
    free(x);
    return s;
}

static void test_triangular_solve_backward(void **state)
{
    (void)state;
    for (int upper = 0; upper < 2; upper++)
        for (int transpose = 0; transpose < 2; transpose++)
            for (int unit = 0; unit < 2; unit++) {
                tri_ctx t = {.batch = 2, .n = 4, .k = 3, .upper = upper, .transpose = transpose, .unit = unit};
                size_t na = (size_t)(t.batch * t.n * t.n), nb = (size_t)(t.batch * t.n * t.k);
                double *a = dalloc(na), *b = dalloc(nb), *dy = dalloc(nb), *x = dalloc(nb), *db = dalloc(nb);
                double *da = dalloc(na), *da_ref = dalloc(na);
                random_fill(a, na, -0.5, 0.5);
                for (int64_t p = 0; p < t.batch; p++) /* a dominant diagonal */
                    for (int64_t i = 0; i < t.n; i++)
                        a[(p * t.n + i) * t.n + i] += 3;
                random_fill(b, nb, -1, 1);
                random_fill(dy, nb, -1, 1);
                float *af = round_f32(a, na), *bf = round_f32(b, nb), *dyf = round_f32(dy, nb);
                t.b = b, t.dy = dy;
                amp_triangular_solve_f64(t.batch, t.n, t.k, upper, transpose, unit, b, a, x);
                /* dB = op(A)^-T dY, as the code generator computes it */
                amp_triangular_solve_f64(t.batch, t.n, t.k, upper, !transpose, unit, dy, a, db);
                amp_triangular_solve_backward_f64(t.batch, t.n, t.k, upper, transpose, unit, x, db, da);
                amp_ref_triangular_solve_backward_f64(t.batch, t.n, t.k, upper, transpose, unit, x, db, da_ref);
                expect_same_bits("triangular_solve_backward f64", da, da_ref, na * sizeof *da);
                char what[96];
                snprintf(what, sizeof what, "triangular_solve dA upper=%d transpose=%d unit=%d", upper, transpose,
                         unit);
                expect_fd(what, tri_loss, &t, a, da, t.batch, t.n, t.n, 0);
                /* f32 on the same rounded values */
                float *xf = falloc(nb), *dbf = falloc(nb), *daf = falloc(na), *daf_ref = falloc(na);
                amp_triangular_solve_f32(t.batch, t.n, t.k, upper, transpose, unit, bf, af, xf);
                amp_triangular_solve_f32(t.batch, t.n, t.k, upper, !transpose, unit, dyf, af, dbf);
                amp_triangular_solve_backward_f32(t.batch, t.n, t.k, upper, transpose, unit, xf, dbf, daf);
                amp_ref_triangular_solve_backward_f32(t.batch, t.n, t.k, upper, transpose, unit, xf, dbf, daf_ref);
                expect_same_bits("triangular_solve_backward f32", daf, daf_ref, na * sizeof *daf);
                expect_close_f32("triangular_solve_backward f32", daf, da, na, 1e-5);
                free(a), free(b), free(dy), free(x), free(db), free(da), free(da_ref);
                free(af), free(bf), free(dyf), free(xf), free(dbf), free(daf), free(daf_ref);
            }
}

/* ---- cholesky ----------------------------------------------------------------- */

typedef struct {
    int64_t batch, n;
    int upper;
    const double *dy;
} chol_ctx;

static double chol_loss(const void *ctx, const double *a)
{
    const chol_ctx *c = ctx;
    size_t nn = (size_t)(c->batch * c->n * c->n);
    double *l = dalloc(nn), s = 0;
    int32_t info[8];
    amp_cholesky_ex_f64(c->batch, c->n, c->upper, a, l, info);
    for (size_t i = 0; i < nn; i++)
        s += c->dy[i] * l[i];
    free(l);
    return s;
}

static void test_cholesky_backward(void **state)
{
    (void)state;
    for (int upper = 0; upper < 2; upper++) {
        chol_ctx c = {.batch = 3, .n = 5, .upper = upper};
        size_t nn = (size_t)(c.batch * c.n * c.n);
        double *a = dalloc(nn), *l = dalloc(nn), *dy = dalloc(nn), *da = dalloc(nn), *da_ref = dalloc(nn);
        int32_t info[3];
        spd_fill(a, c.batch, c.n);
        /* dy on both triangles: the kernel must ignore the constant one */
        random_fill(dy, nn, -1, 1);
        float *af = round_f32(a, nn), *dyf = round_f32(dy, nn);
        c.dy = dy;
        amp_cholesky_ex_f64(c.batch, c.n, upper, a, l, info);
        amp_cholesky_backward_f64(c.batch, c.n, upper, l, dy, da);
        amp_ref_cholesky_backward_f64(c.batch, c.n, upper, l, dy, da_ref);
        expect_same_bits("cholesky_backward f64", da, da_ref, nn * sizeof *da);
        for (int64_t b = 0; b < c.batch; b++) /* autograd's dA is symmetric */
            for (int64_t i = 0; i < c.n; i++)
                for (int64_t j = 0; j < i; j++)
                    assert_true(fabs(da[(b * c.n + i) * c.n + j] - da[(b * c.n + j) * c.n + i]) <= 1e-12);
        expect_fd(upper ? "cholesky_backward upper" : "cholesky_backward lower", chol_loss, &c, a, da, c.batch, c.n,
                  c.n, 1);
        float *lf = falloc(nn), *daf = falloc(nn), *daf_ref = falloc(nn);
        amp_cholesky_ex_f32(c.batch, c.n, upper, af, lf, info);
        amp_cholesky_backward_f32(c.batch, c.n, upper, lf, dyf, daf);
        amp_ref_cholesky_backward_f32(c.batch, c.n, upper, lf, dyf, daf_ref);
        expect_same_bits("cholesky_backward f32", daf, daf_ref, nn * sizeof *daf);
        expect_close_f32("cholesky_backward f32", daf, da, nn, 1e-5);
        free(a), free(l), free(dy), free(da), free(da_ref), free(af), free(dyf), free(lf), free(daf), free(daf_ref);
    }
}

/* A = [[4]]: L = 2, dL/dA = 1 / (2 sqrt(A)) = 1/4. */
static void test_cholesky_backward_fixed(void **state)
{
    const double l[] = {2.0}, dl[] = {1.0};
    double da[1];
    (void)state;
    amp_cholesky_backward_f64(1, 1, 0, l, dl, da);
    assert_true(da[0] == 0.25);
}

/* ---- eigh --------------------------------------------------------------------- */

typedef struct {
    int64_t batch, n;
    const double *dw, *dv, *v0; /* dw or dv NULL: not in the loss; v0: the signs */
} eigh_ctx;

static double eigh_loss(const void *ctx, const double *a)
{
    const eigh_ctx *c = ctx;
    int64_t n = c->n;
    double *w = dalloc((size_t)(c->batch * n)), *v = dalloc((size_t)(c->batch * n * n));
    double *work = dalloc(AMP_EIGH_WORK_BYTES(n, sizeof(double)) / sizeof(double));
    double s = 0;
    amp_eigh_f64(c->batch, n, 0, a, w, v, work);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < n; j++) {
            if (c->dw)
                s += c->dw[b * n + j] * w[b * n + j];
            if (!c->dv)
                continue;
            /* column j with the unperturbed one's sign */
            double dot = 0, sum = 0;
            for (int64_t i = 0; i < n; i++)
                dot += v[(b * n + i) * n + j] * c->v0[(b * n + i) * n + j];
            for (int64_t i = 0; i < n; i++)
                sum += c->dv[(b * n + i) * n + j] * v[(b * n + i) * n + j];
            s += dot < 0 ? -sum : sum;
        }
    free(w), free(v), free(work);
    return s;
}

static void test_eigh_backward(void **state)
{
    (void)state;
    for (int which = 0; which < 3; which++) { /* values, vectors, both */
        eigh_ctx c = {.batch = 2, .n = 4};
        int64_t n = c.n;
        size_t nn = (size_t)(c.batch * n * n), nw = (size_t)(c.batch * n);
        double *a = dalloc(nn), *w = dalloc(nw), *v = dalloc(nn), *dw = dalloc(nw), *dv = dalloc(nn);
        double *da = dalloc(nn), *da_ref = dalloc(nn), *bw = dalloc(AMP_EIGH_BACKWARD_WORK_ELEMS(n));
        double *work = dalloc(AMP_EIGH_WORK_BYTES(n, sizeof(double)) / sizeof(double));
        spd_fill(a, c.batch, n);
        random_fill(dw, nw, -1, 1);
        random_fill(dv, nn, -1, 1);
        float *af = round_f32(a, nn), *dwf = round_f32(dw, nw), *dvf = round_f32(dv, nn);
        amp_eigh_f64(c.batch, n, 0, a, w, v, work);
        c.dw = which != 1 ? dw : NULL;
        c.dv = which != 0 ? dv : NULL;
        c.v0 = v;
        amp_eigh_backward_f64(c.batch, n, w, v, c.dw, c.dv, da, bw);
        amp_ref_eigh_backward_f64(c.batch, n, w, v, c.dw, c.dv, da_ref, bw);
        expect_same_bits("eigh_backward f64", da, da_ref, nn * sizeof *da);
        expect_fd(which == 0 ? "eigh_backward values" : which == 1 ? "eigh_backward vectors" : "eigh_backward both",
                  eigh_loss, &c, a, da, c.batch, n, n, 1);
        float *wf = falloc(nw), *vf = falloc(nn), *daf = falloc(nn), *daf_ref = falloc(nn);
        float *bwf = falloc(AMP_EIGH_BACKWARD_WORK_ELEMS(n));
        float *workf = falloc(AMP_EIGH_WORK_BYTES(n, sizeof(float)) / sizeof(float));
        amp_eigh_f32(c.batch, n, 0, af, wf, vf, workf);
        /* the f64 kernel on the f32 eigenvectors (signs may differ from v) */
        double *wd = dalloc(nw), *vd = dalloc(nn), *dad = dalloc(nn);
        for (size_t i = 0; i < nw; i++)
            wd[i] = wf[i];
        for (size_t i = 0; i < nn; i++)
            vd[i] = vf[i];
        amp_eigh_backward_f64(c.batch, n, wd, vd, c.dw, c.dv, dad, bw);
        amp_eigh_backward_f32(c.batch, n, wf, vf, c.dw ? dwf : NULL, c.dv ? dvf : NULL, daf, bwf);
        amp_ref_eigh_backward_f32(c.batch, n, wf, vf, c.dw ? dwf : NULL, c.dv ? dvf : NULL, daf_ref, bwf);
        expect_same_bits("eigh_backward f32", daf, daf_ref, nn * sizeof *daf);
        expect_close_f32("eigh_backward f32", daf, dad, nn, 1e-5);
        free(a), free(w), free(v), free(dw), free(dv), free(da), free(da_ref), free(bw), free(work);
        free(af), free(dwf), free(dvf), free(wf), free(vf), free(daf), free(daf_ref), free(bwf), free(workf);
        free(wd), free(vd), free(dad);
    }
}

/* A = diag(1, 3), V = I: dA = diag(dw), and off the diagonal
 * skew(V^T dV) / (w_j - w_i): dv = [[0, 1], [0, 0]] gives skew [[0, 1/2],
 * [-1/2, 0]], so dA(0, 1) = (1/2) / (3 - 1) and dA(1, 0) = (-1/2) / (1 - 3). */
static void test_eigh_backward_fixed(void **state)
{
    const double w[] = {1.0, 3.0}, v[] = {1, 0, 0, 1}, dw[] = {2.0, -1.0}, dv[] = {0, 1, 0, 0};
    const double want[] = {2.0, 0.25, 0.25, -1.0};
    double da[4], work[8];
    (void)state;
    amp_eigh_backward_f64(1, 2, w, v, dw, dv, da, work);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(da[i] - want[i]) <= 1e-15);
}

/* ---- svdvals ------------------------------------------------------------------ */

typedef struct {
    int64_t batch, m, n;
    const double *ds;
} svd_ctx;

static double svd_loss(const void *ctx, const double *a)
{
    const svd_ctx *c = ctx;
    int64_t k = c->m < c->n ? c->m : c->n;
    double *s = dalloc((size_t)(c->batch * k)), sum = 0;
    double *work = dalloc(AMP_SVD_WORK_BYTES(c->m, c->n, sizeof(double)) / sizeof(double));
    amp_svd_f64(c->batch, c->m, c->n, 0, 0, a, NULL, s, NULL, work);
    for (int64_t i = 0; i < c->batch * k; i++)
        sum += c->ds[i] * s[i];
    free(s), free(work);
    return sum;
}

static void test_svdvals_backward(void **state)
{
    static const int64_t shapes[][2] = {{5, 3}, {3, 4}, {4, 4}};
    (void)state;
    for (int sh = 0; sh < 3; sh++) {
        svd_ctx c = {.batch = 2, .m = shapes[sh][0], .n = shapes[sh][1]};
        int64_t m = c.m, n = c.n, k = m < n ? m : n;
        size_t na = (size_t)(c.batch * m * n), nu = (size_t)(c.batch * m * k), nv = (size_t)(c.batch * k * n);
        size_t ns = (size_t)(c.batch * k);
        double *a = dalloc(na), *u = dalloc(nu), *s = dalloc(ns), *vh = dalloc(nv), *ds = dalloc(ns);
        double *da = dalloc(na), *da_ref = dalloc(na);
        double *work = dalloc(AMP_SVD_WORK_BYTES(m, n, sizeof(double)) / sizeof(double));
        random_fill(a, na, -1, 1);
        random_fill(ds, ns, -1, 1);
        float *af = round_f32(a, na), *dsf = round_f32(ds, ns);
        c.ds = ds;
        amp_svd_f64(c.batch, m, n, 0, 1, a, u, s, vh, work);
        amp_svdvals_backward_f64(c.batch, m, n, u, vh, ds, da);
        amp_ref_svdvals_backward_f64(c.batch, m, n, u, vh, ds, da_ref);
        expect_same_bits("svdvals_backward f64", da, da_ref, na * sizeof *da);
        expect_fd("svdvals_backward", svd_loss, &c, a, da, c.batch, m, n, 0);
        float *uf = falloc(nu), *sf = falloc(ns), *vhf = falloc(nv), *daf = falloc(na), *daf_ref = falloc(na);
        float *workf = falloc(AMP_SVD_WORK_BYTES(m, n, sizeof(float)) / sizeof(float));
        amp_svd_f32(c.batch, m, n, 0, 1, af, uf, sf, vhf, workf);
        amp_svdvals_backward_f32(c.batch, m, n, uf, vhf, dsf, daf);
        amp_ref_svdvals_backward_f32(c.batch, m, n, uf, vhf, dsf, daf_ref);
        expect_same_bits("svdvals_backward f32", daf, daf_ref, na * sizeof *daf);
        expect_close_f32("svdvals_backward f32", daf, da, na, 1e-5);
        free(a), free(u), free(s), free(vh), free(ds), free(da), free(da_ref), free(work);
        free(af), free(dsf), free(uf), free(sf), free(vhf), free(daf), free(daf_ref), free(workf);
    }
}

/* ---- pinverse ------------------------------------------------------------------ */

static double pinv_loss(const void *ctx, const double *a)
{
    const svd_ctx *c = ctx; /* ds: dP [n, m] */
    size_t np = (size_t)(c->batch * c->m * c->n);
    double *p = dalloc(np), sum = 0;
    double *work = dalloc(AMP_PINVERSE_WORK_BYTES(c->m, c->n, sizeof(double)) / sizeof(double));
    amp_pinverse_f64(c->batch, c->m, c->n, 1e-15, a, p, work);
    for (size_t i = 0; i < np; i++)
        sum += c->ds[i] * p[i];
    free(p), free(work);
    return sum;
}

static void test_pinverse_backward(void **state)
{
    static const int64_t shapes[][2] = {{5, 3}, {3, 4}, {4, 4}};
    (void)state;
    for (int sh = 0; sh < 3; sh++) {
        svd_ctx c = {.batch = 2, .m = shapes[sh][0], .n = shapes[sh][1]};
        int64_t m = c.m, n = c.n;
        size_t na = (size_t)(c.batch * m * n), nw = AMP_PINVERSE_BACKWARD_WORK_ELEMS(m, n);
        double *a = dalloc(na), *p = dalloc(na), *dp = dalloc(na), *da = dalloc(na), *da_ref = dalloc(na);
        double *work = dalloc(AMP_PINVERSE_WORK_BYTES(m, n, sizeof(double)) / sizeof(double)), *bw = dalloc(nw);
        random_fill(a, na, -1, 1);
        for (int64_t b = 0; b < c.batch; b++) /* full rank, well conditioned */
            for (int64_t i = 0; i < (m < n ? m : n); i++)
                a[(b * m + i) * n + i] += 2;
        random_fill(dp, na, -1, 1);
        float *af = round_f32(a, na), *dpf = round_f32(dp, na);
        c.ds = dp;
        amp_pinverse_f64(c.batch, m, n, 1e-15, a, p, work);
        amp_pinverse_backward_f64(c.batch, m, n, a, p, dp, da, bw);
        amp_ref_pinverse_backward_f64(c.batch, m, n, a, p, dp, da_ref, bw);
        expect_same_bits("pinverse_backward f64", da, da_ref, na * sizeof *da);
        expect_fd("pinverse_backward", pinv_loss, &c, a, da, c.batch, m, n, 0);
        float *pf = falloc(na), *daf = falloc(na), *daf_ref = falloc(na), *bwf = falloc(nw);
        float *workf = falloc(AMP_PINVERSE_WORK_BYTES(m, n, sizeof(float)) / sizeof(float));
        amp_pinverse_f32(c.batch, m, n, 1e-15, af, pf, workf);
        amp_pinverse_backward_f32(c.batch, m, n, af, pf, dpf, daf, bwf);
        amp_ref_pinverse_backward_f32(c.batch, m, n, af, pf, dpf, daf_ref, bwf);
        expect_same_bits("pinverse_backward f32", daf, daf_ref, na * sizeof *daf);
        expect_close_f32("pinverse_backward f32", daf, da, na, 1e-5);
        free(a), free(p), free(dp), free(da), free(da_ref), free(work), free(bw);
        free(af), free(dpf), free(pf), free(daf), free(daf_ref), free(bwf), free(workf);
    }
}

/* ---- qr ------------------------------------------------------------------------ */

typedef struct {
    int64_t batch, m, n;
    const double *dq, *dr; /* either may be NULL */
} qr_ctx;

static double qr_loss(const void *ctx, const double *a)
{
    const qr_ctx *c = ctx;
    size_t nq = (size_t)(c->batch * c->m * c->n), nr = (size_t)(c->batch * c->n * c->n);
    double *q = dalloc(nq), *r = dalloc(nr), sum = 0;
    double *work = dalloc(AMP_QR_WORK_BYTES(c->m, c->n, sizeof(double)) / sizeof(double));
    amp_qr_f64(c->batch, c->m, c->n, 0, a, q, r, work);
    for (size_t i = 0; c->dq && i < nq; i++)
        sum += c->dq[i] * q[i];
    for (size_t i = 0; c->dr && i < nr; i++)
        sum += c->dr[i] * r[i];
    free(q), free(r), free(work);
    return sum;
}

static void test_qr_backward(void **state)
{
    static const int64_t shapes[][2] = {{5, 3}, {4, 4}};
    (void)state;
    for (int sh = 0; sh < 2; sh++)
        for (int which = 0; which < 3; which++) { /* dQ, dR, both */
            qr_ctx c = {.batch = 2, .m = shapes[sh][0], .n = shapes[sh][1]};
            int64_t m = c.m, n = c.n;
            size_t na = (size_t)(c.batch * m * n), nr = (size_t)(c.batch * n * n);
            double *a = dalloc(na), *q = dalloc(na), *r = dalloc(nr), *dq = dalloc(na), *dr = dalloc(nr);
            double *da = dalloc(na), *da_ref = dalloc(na), *bw = dalloc((size_t)(n * n));
            double *work = dalloc(AMP_QR_WORK_BYTES(m, n, sizeof(double)) / sizeof(double));
            random_fill(a, na, -1, 1);
            for (int64_t b = 0; b < c.batch; b++) /* well conditioned: R's diagonal away from 0 */
                for (int64_t i = 0; i < n; i++)
                    a[(b * m + i) * n + i] += 2;
            random_fill(dq, na, -1, 1);
            random_fill(dr, nr, -1, 1);
            float *af = round_f32(a, na), *dqf = round_f32(dq, na), *drf = round_f32(dr, nr);
            c.dq = which != 1 ? dq : NULL;
            c.dr = which != 0 ? dr : NULL;
            amp_qr_f64(c.batch, m, n, 0, a, q, r, work);
            amp_qr_backward_f64(c.batch, m, n, q, r, c.dq, c.dr, da, bw);
            amp_ref_qr_backward_f64(c.batch, m, n, q, r, c.dq, c.dr, da_ref, bw);
            expect_same_bits("qr_backward f64", da, da_ref, na * sizeof *da);
            expect_fd(which == 0 ? "qr_backward dQ" : which == 1 ? "qr_backward dR" : "qr_backward both", qr_loss, &c,
                      a, da, c.batch, m, n, 0);
            float *qf = falloc(na), *rf = falloc(nr), *daf = falloc(na), *daf_ref = falloc(na);
            float *bwf = falloc((size_t)(n * n));
            float *workf = falloc(AMP_QR_WORK_BYTES(m, n, sizeof(float)) / sizeof(float));
            amp_qr_f32(c.batch, m, n, 0, af, qf, rf, workf);
            amp_qr_backward_f32(c.batch, m, n, qf, rf, c.dq ? dqf : NULL, c.dr ? drf : NULL, daf, bwf);
            amp_ref_qr_backward_f32(c.batch, m, n, qf, rf, c.dq ? dqf : NULL, c.dr ? drf : NULL, daf_ref, bwf);
            expect_same_bits("qr_backward f32", daf, daf_ref, na * sizeof *daf);
            expect_close_f32("qr_backward f32", daf, da, na, 1e-5);
            free(a), free(q), free(r), free(dq), free(dr), free(da), free(da_ref), free(bw), free(work);
            free(af), free(dqf), free(drf), free(qf), free(rf), free(daf), free(daf_ref), free(bwf), free(workf);
        }
}

/* ---- svd (vectors) ------------------------------------------------------------- */

typedef struct {
    int64_t batch, m, n;
    const double *du, *ds, *dvh, *u0; /* u0: the unperturbed U, for the signs */
} svdv_ctx;

/* sum(dU U) + sum(dS S) + sum(dVh Vh), each singular pair (u_p, v_p) with
 * the sign making u_p . u0_p >= 0 (the pair's sign is the SVD's gauge). */
static double svdv_loss(const void *ctx, const double *a)
{
    const svdv_ctx *c = ctx;
    int64_t m = c->m, n = c->n, k = m < n ? m : n;
    double *u = dalloc((size_t)(c->batch * m * k)), *s = dalloc((size_t)(c->batch * k));
    double *vh = dalloc((size_t)(c->batch * k * n)), sum = 0;
    double *work = dalloc(AMP_SVD_WORK_BYTES(m, n, sizeof(double)) / sizeof(double));
    amp_svd_f64(c->batch, m, n, 0, 1, a, u, s, vh, work);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t p = 0; p < k; p++) {
            double dot = 0, sign;
            for (int64_t i = 0; i < m; i++)
                dot += u[(b * m + i) * k + p] * c->u0[(b * m + i) * k + p];
            sign = dot < 0 ? -1 : 1;
            for (int64_t i = 0; c->du && i < m; i++)
                sum += sign * c->du[(b * m + i) * k + p] * u[(b * m + i) * k + p];
            for (int64_t j = 0; c->dvh && j < n; j++)
                sum += sign * c->dvh[(b * k + p) * n + j] * vh[(b * k + p) * n + j];
            if (c->ds)
                sum += c->ds[b * k + p] * s[b * k + p];
        }
    free(u), free(s), free(vh), free(work);
    return sum;
}

static void test_svd_backward(void **state)
{
    static const int64_t shapes[][2] = {{5, 3}, {3, 4}, {4, 4}};
    (void)state;
    for (int sh = 0; sh < 3; sh++)
        for (int which = 0; which < 3; which++) { /* dU, dVh, all three */
            svdv_ctx c = {.batch = 2, .m = shapes[sh][0], .n = shapes[sh][1]};
            int64_t m = c.m, n = c.n, k = m < n ? m : n;
            size_t na = (size_t)(c.batch * m * n), nu = (size_t)(c.batch * m * k), nv = (size_t)(c.batch * k * n);
            size_t ns = (size_t)(c.batch * k), nw = AMP_SVD_BACKWARD_WORK_ELEMS(m, n);
            double *a = dalloc(na), *u = dalloc(nu), *s = dalloc(ns), *vh = dalloc(nv);
            double *du = dalloc(nu), *ds = dalloc(ns), *dvh = dalloc(nv), *da = dalloc(na), *da_ref = dalloc(na);
            double *bw = dalloc(nw), *work = dalloc(AMP_SVD_WORK_BYTES(m, n, sizeof(double)) / sizeof(double));
            random_fill(a, na, -1, 1);
            random_fill(du, nu, -1, 1);
            random_fill(ds, ns, -1, 1);
            random_fill(dvh, nv, -1, 1);
            float *af = round_f32(a, na), *duf = round_f32(du, nu), *dsf = round_f32(ds, ns);
            float *dvhf = round_f32(dvh, nv);
            c.du = which != 1 ? du : NULL;
            c.dvh = which != 0 ? dvh : NULL;
            c.ds = which == 2 ? ds : NULL;
            amp_svd_f64(c.batch, m, n, 0, 1, a, u, s, vh, work);
            c.u0 = u;
            amp_svd_backward_f64(c.batch, m, n, u, s, vh, c.du, c.ds, c.dvh, da, bw);
            amp_ref_svd_backward_f64(c.batch, m, n, u, s, vh, c.du, c.ds, c.dvh, da_ref, bw);
            expect_same_bits("svd_backward f64", da, da_ref, na * sizeof *da);
            expect_fd(which == 0 ? "svd_backward dU" : which == 1 ? "svd_backward dVh" : "svd_backward all", svdv_loss,
                      &c, a, da, c.batch, m, n, 0);
            /* f32 against the f64 kernel on the f32 factors (their signs
             * may differ from the f64 ones: the gradient pairs them) */
            float *uf = falloc(nu), *sf = falloc(ns), *vhf = falloc(nv), *daf = falloc(na), *daf_ref = falloc(na);
            float *bwf = falloc(nw), *workf = falloc(AMP_SVD_WORK_BYTES(m, n, sizeof(float)) / sizeof(float));
            double *ud = dalloc(nu), *sd = dalloc(ns), *vhd = dalloc(nv), *dad = dalloc(na);
            amp_svd_f32(c.batch, m, n, 0, 1, af, uf, sf, vhf, workf);
            for (size_t i = 0; i < nu; i++)
                ud[i] = uf[i];
            for (size_t i = 0; i < ns; i++)
                sd[i] = sf[i];
            for (size_t i = 0; i < nv; i++)
                vhd[i] = vhf[i];
            amp_svd_backward_f64(c.batch, m, n, ud, sd, vhd, c.du, c.ds, c.dvh, dad, bw);
            amp_svd_backward_f32(c.batch, m, n, uf, sf, vhf, c.du ? duf : NULL, c.ds ? dsf : NULL,
                                 c.dvh ? dvhf : NULL, daf, bwf);
            amp_ref_svd_backward_f32(c.batch, m, n, uf, sf, vhf, c.du ? duf : NULL, c.ds ? dsf : NULL,
                                     c.dvh ? dvhf : NULL, daf_ref, bwf);
            expect_same_bits("svd_backward f32", daf, daf_ref, na * sizeof *daf);
            expect_close_f32("svd_backward f32", daf, dad, na, 1e-4);
            free(a), free(u), free(s), free(vh), free(du), free(ds), free(dvh), free(da), free(da_ref), free(bw);
            free(work), free(af), free(duf), free(dsf), free(dvhf), free(uf), free(sf), free(vhf), free(daf);
            free(daf_ref), free(bwf), free(workf), free(ud), free(sd), free(vhd), free(dad);
        }
}

/* ---- lu_factor ----------------------------------------------------------------- */

typedef struct {
    int64_t batch, n;
    const double *dlu;
} lu_ctx;

static double lu_loss(const void *ctx, const double *a)
{
    const lu_ctx *c = ctx;
    size_t nn = (size_t)(c->batch * c->n * c->n);
    double *lu = dalloc(nn), sum = 0;
    int32_t piv[32], info[4];
    amp_lu_factor_f64(c->batch, c->n, c->n, a, lu, piv, info);
    for (size_t i = 0; i < nn; i++)
        sum += c->dlu[i] * lu[i];
    free(lu);
    return sum;
}

static void test_lu_factor_backward(void **state)
{
    (void)state;
    lu_ctx c = {.batch = 3, .n = 5};
    int64_t n = c.n;
    size_t nn = (size_t)(c.batch * n * n);
    double *a = dalloc(nn), *lu = dalloc(nn), *dlu = dalloc(nn), *da = dalloc(nn), *da_ref = dalloc(nn);
    int32_t piv[15], info[3], pivf[15];
    /* random: partial pivoting swaps rows (the permutation is part of the test) */
    random_fill(a, nn, -1, 1);
    random_fill(dlu, nn, -1, 1);
    float *af = round_f32(a, nn), *dluf = round_f32(dlu, nn);
    c.dlu = dlu;
    amp_lu_factor_f64(c.batch, n, n, a, lu, piv, info);
    int swaps = 0;
    for (int i = 0; i < 15; i++)
        swaps += piv[i] != i % 5 + 1;
    assert_true(swaps > 0);
    amp_lu_factor_backward_f64(c.batch, n, lu, piv, dlu, da);
    amp_ref_lu_factor_backward_f64(c.batch, n, lu, piv, dlu, da_ref);
    expect_same_bits("lu_factor_backward f64", da, da_ref, nn * sizeof *da);
    expect_fd("lu_factor_backward", lu_loss, &c, a, da, c.batch, n, n, 0);
    float *luf = falloc(nn), *daf = falloc(nn), *daf_ref = falloc(nn);
    amp_lu_factor_f32(c.batch, n, n, af, luf, pivf, info);
    assert_memory_equal(piv, pivf, sizeof piv);
    amp_lu_factor_backward_f32(c.batch, n, luf, pivf, dluf, daf);
    amp_ref_lu_factor_backward_f32(c.batch, n, luf, pivf, dluf, daf_ref);
    expect_same_bits("lu_factor_backward f32", daf, daf_ref, nn * sizeof *daf);
    expect_close_f32("lu_factor_backward f32", daf, da, nn, 1e-4);
    free(a), free(lu), free(dlu), free(da), free(da_ref), free(af), free(dluf), free(luf), free(daf), free(daf_ref);
}

/* ---- lu_solve ------------------------------------------------------------------ */

typedef struct {
    int64_t batch, n, k;
    const int32_t *piv;
    const double *lu, *b, *dx; /* the fixed operand: lu when b varies, b when lu varies */
    int vary_lu;
} lus_ctx;

static double lus_loss(const void *ctx, const double *v)
{
    const lus_ctx *c = ctx;
    size_t nx = (size_t)(c->batch * c->n * c->k);
    double *x = dalloc(nx), sum = 0;
    assert_int_equal(amp_lu_solve_f64(c->batch, c->n, c->k, c->vary_lu ? v : c->lu, c->piv, c->vary_lu ? c->b : v, x),
                     AMP_OK);
    for (size_t i = 0; i < nx; i++)
        sum += c->dx[i] * x[i];
    free(x);
    return sum;
}

static void test_lu_solve_backward(void **state)
{
    (void)state;
    lus_ctx c = {.batch = 2, .n = 4, .k = 3};
    int64_t n = c.n, k = c.k;
    size_t nn = (size_t)(c.batch * n * n), nb = (size_t)(c.batch * n * k);
    double *a = dalloc(nn), *lu = dalloc(nn), *b = dalloc(nb), *x = dalloc(nb), *dx = dalloc(nb);
    double *db = dalloc(nb), *dlu = dalloc(nn), *db_ref = dalloc(nb), *dlu_ref = dalloc(nn), *work = dalloc(2 * 16);
    int32_t piv[8], info[2];
    random_fill(a, nn, -1, 1);
    for (int64_t p = 0; p < c.batch; p++) /* well conditioned, pivoting still swaps */
        for (int64_t i = 0; i < n; i++)
            a[(p * n + i) * n + (i + 1) % n] += 3;
    random_fill(b, nb, -1, 1);
    random_fill(dx, nb, -1, 1);
    amp_lu_factor_f64(c.batch, n, n, a, lu, piv, info);
    float *luf = round_f32(lu, nn), *bf = round_f32(b, nb), *dxf = round_f32(dx, nb);
    assert_int_equal(amp_lu_solve_f64(c.batch, n, k, lu, piv, b, x), AMP_OK);
    c.piv = piv, c.lu = lu, c.b = b, c.dx = dx;
    amp_lu_solve_backward_f64(c.batch, n, k, lu, piv, x, dx, db, dlu, work);
    amp_ref_lu_solve_backward_f64(c.batch, n, k, lu, piv, x, dx, db_ref, dlu_ref, work);
    expect_same_bits("lu_solve_backward f64 dB", db, db_ref, nb * sizeof *db);
    expect_same_bits("lu_solve_backward f64 dLU", dlu, dlu_ref, nn * sizeof *dlu);
    c.vary_lu = 0;
    expect_fd("lu_solve_backward dB", lus_loss, &c, b, db, c.batch, n, k, 0);
    c.vary_lu = 1;
    expect_fd("lu_solve_backward dLU", lus_loss, &c, lu, dlu, c.batch, n, n, 0);
    /* either gradient alone gives the same values */
    memset(db_ref, 0, nb * sizeof *db_ref);
    amp_lu_solve_backward_f64(c.batch, n, k, lu, piv, x, dx, db_ref, NULL, work);
    expect_same_bits("lu_solve_backward dB alone", db, db_ref, nb * sizeof *db);
    amp_lu_solve_backward_f64(c.batch, n, k, lu, piv, x, dx, NULL, dlu_ref, work);
    expect_same_bits("lu_solve_backward dLU alone", dlu, dlu_ref, nn * sizeof *dlu);
    float *xf = falloc(nb), *dbf = falloc(nb), *dluf = falloc(nn), *dbf_ref = falloc(nb), *dluf_ref = falloc(nn);
    float *workf = falloc(2 * 16);
    double *xd = dalloc(nb), *dbd = dalloc(nb), *dlud = dalloc(nn);
    assert_int_equal(amp_lu_solve_f32(c.batch, n, k, luf, piv, bf, xf), AMP_OK);
    for (size_t i = 0; i < nb; i++)
        xd[i] = xf[i];
    amp_lu_solve_backward_f64(c.batch, n, k, lu, piv, xd, dx, dbd, dlud, work);
    amp_lu_solve_backward_f32(c.batch, n, k, luf, piv, xf, dxf, dbf, dluf, workf);
    amp_ref_lu_solve_backward_f32(c.batch, n, k, luf, piv, xf, dxf, dbf_ref, dluf_ref, workf);
    expect_same_bits("lu_solve_backward f32 dB", dbf, dbf_ref, nb * sizeof *dbf);
    expect_same_bits("lu_solve_backward f32 dLU", dluf, dluf_ref, nn * sizeof *dluf);
    expect_close_f32("lu_solve_backward f32 dB", dbf, dbd, nb, 1e-5);
    expect_close_f32("lu_solve_backward f32 dLU", dluf, dlud, nn, 1e-5);
    free(a), free(lu), free(b), free(x), free(dx), free(db), free(dlu), free(db_ref), free(dlu_ref), free(work);
    free(luf), free(bf), free(dxf), free(xf), free(dbf), free(dluf), free(dbf_ref), free(dluf_ref), free(workf);
    free(xd), free(dbd), free(dlud);
}

/* ---- householder_product -------------------------------------------------------- */

typedef struct {
    int64_t batch, m, n, k;
    const double *a, *tau, *dy;
    int vary_tau;
} hp_ctx;

static double hp_loss(const void *ctx, const double *v)
{
    const hp_ctx *c = ctx;
    size_t ny = (size_t)(c->batch * c->m * c->n);
    double *y = dalloc(ny), sum = 0;
    amp_householder_product_f64(c->batch, c->m, c->n, c->k, c->vary_tau ? c->a : v, c->vary_tau ? v : c->tau, y);
    for (size_t i = 0; i < ny; i++)
        sum += c->dy[i] * y[i];
    free(y);
    return sum;
}

static void test_householder_product_backward(void **state)
{
    static const int64_t shapes[][3] = {{5, 3, 3}, {4, 4, 2}, {6, 2, 1}};
    (void)state;
    for (int sh = 0; sh < 3; sh++) {
        hp_ctx c = {.batch = 2, .m = shapes[sh][0], .n = shapes[sh][1], .k = shapes[sh][2]};
        int64_t m = c.m, n = c.n, k = c.k;
        size_t na = (size_t)(c.batch * m * n), nt = (size_t)(c.batch * k), nw = AMP_HOUSEHOLDER_BACKWARD_WORK_ELEMS(m, n, k);
        double *a = dalloc(na), *tau = dalloc(nt), *dy = dalloc(na), *da = dalloc(na), *dtau = dalloc(nt);
        double *da_ref = dalloc(na), *dtau_ref = dalloc(nt), *work = dalloc(nw);
        random_fill(a, na, -1, 1);
        random_fill(tau, nt, 0.5, 1.5);
        random_fill(dy, na, -1, 1);
        float *af = round_f32(a, na), *tf = round_f32(tau, nt), *dyf = round_f32(dy, na);
        c.a = a, c.tau = tau, c.dy = dy;
        amp_householder_product_backward_f64(c.batch, m, n, k, a, tau, dy, da, dtau, work);
        amp_ref_householder_product_backward_f64(c.batch, m, n, k, a, tau, dy, da_ref, dtau_ref, work);
        expect_same_bits("householder_product_backward f64 dA", da, da_ref, na * sizeof *da);
        expect_same_bits("householder_product_backward f64 dtau", dtau, dtau_ref, nt * sizeof *dtau);
        c.vary_tau = 0;
        expect_fd("householder_product_backward dA", hp_loss, &c, a, da, c.batch, m, n, 0);
        c.vary_tau = 1;
        expect_fd("householder_product_backward dtau", hp_loss, &c, tau, dtau, c.batch, k, 1, 0);
        float *daf = falloc(na), *dtf = falloc(nt), *daf_ref = falloc(na), *dtf_ref = falloc(nt), *workf = falloc(nw);
        amp_householder_product_backward_f32(c.batch, m, n, k, af, tf, dyf, daf, dtf, workf);
        amp_ref_householder_product_backward_f32(c.batch, m, n, k, af, tf, dyf, daf_ref, dtf_ref, workf);
        expect_same_bits("householder_product_backward f32 dA", daf, daf_ref, na * sizeof *daf);
        expect_same_bits("householder_product_backward f32 dtau", dtf, dtf_ref, nt * sizeof *dtf);
        expect_close_f32("householder_product_backward f32 dA", daf, da, na, 1e-5);
        expect_close_f32("householder_product_backward f32 dtau", dtf, dtau, nt, 1e-5);
        free(a), free(tau), free(dy), free(da), free(dtau), free(da_ref), free(dtau_ref), free(work);
        free(af), free(tf), free(dyf), free(daf), free(dtf), free(daf_ref), free(dtf_ref), free(workf);
    }
}

/* ---- ormqr ------------------------------------------------------------------------ */

typedef struct {
    int64_t batch, mn, nk, k, rows, cols;
    int left, transpose, vary; /* vary: 0 a, 1 tau, 2 c */
    const double *a, *tau, *c, *dy;
} oq_ctx;

static double oq_loss(const void *ctx, const double *v)
{
    const oq_ctx *o = ctx;
    size_t ny = (size_t)(o->batch * o->rows * o->cols);
    double *y = dalloc(ny), sum = 0;
    amp_ormqr_f64(o->batch, o->mn, o->nk, o->k, o->rows, o->cols, o->left, o->transpose, o->vary == 0 ? v : o->a,
                  o->vary == 1 ? v : o->tau, o->vary == 2 ? v : o->c, y);
    for (size_t i = 0; i < ny; i++)
        sum += o->dy[i] * y[i];
    free(y);
    return sum;
}

static void test_ormqr_backward(void **state)
{
    (void)state;
    for (int left = 0; left < 2; left++)
        for (int transpose = 0; transpose < 2; transpose++) {
            oq_ctx o = {.batch = 2, .mn = 5, .nk = 3, .k = 3, .left = left, .transpose = transpose};
            o.rows = left ? 5 : 2, o.cols = left ? 2 : 5;
            int64_t p = left ? o.cols : o.rows;
            size_t na = (size_t)(o.batch * o.mn * o.nk), nt = (size_t)(o.batch * o.k);
            size_t nc = (size_t)(o.batch * o.rows * o.cols), nw = AMP_ORMQR_BACKWARD_WORK_ELEMS(o.mn, o.k, p);
            double *a = dalloc(na), *tau = dalloc(nt), *c = dalloc(nc), *dy = dalloc(nc), *work = dalloc(nw);
            double *da = dalloc(na), *dtau = dalloc(nt), *dc = dalloc(nc);
            double *da_ref = dalloc(na), *dtau_ref = dalloc(nt), *dc_ref = dalloc(nc);
            random_fill(a, na, -1, 1);
            random_fill(tau, nt, 0.5, 1.5);
            random_fill(c, nc, -1, 1);
            random_fill(dy, nc, -1, 1);
            float *af = round_f32(a, na), *tf = round_f32(tau, nt), *cf = round_f32(c, nc), *dyf = round_f32(dy, nc);
            o.a = a, o.tau = tau, o.c = c, o.dy = dy;
            amp_ormqr_backward_f64(o.batch, o.mn, o.nk, o.k, o.rows, o.cols, left, transpose, a, tau, c, dy, da, dtau,
                                   dc, work);
            amp_ref_ormqr_backward_f64(o.batch, o.mn, o.nk, o.k, o.rows, o.cols, left, transpose, a, tau, c, dy, da_ref,
                                       dtau_ref, dc_ref, work);
            expect_same_bits("ormqr_backward f64 dA", da, da_ref, na * sizeof *da);
            expect_same_bits("ormqr_backward f64 dtau", dtau, dtau_ref, nt * sizeof *dtau);
            expect_same_bits("ormqr_backward f64 dC", dc, dc_ref, nc * sizeof *dc);
            char what[64];
            snprintf(what, sizeof what, "ormqr_backward dA left=%d transpose=%d", left, transpose);
            o.vary = 0;
            expect_fd(what, oq_loss, &o, a, da, o.batch, o.mn, o.nk, 0);
            o.vary = 1;
            expect_fd("ormqr_backward dtau", oq_loss, &o, tau, dtau, o.batch, o.k, 1, 0);
            o.vary = 2;
            expect_fd("ormqr_backward dC", oq_loss, &o, c, dc, o.batch, o.rows, o.cols, 0);
            float *daf = falloc(na), *dtf = falloc(nt), *dcf = falloc(nc), *workf = falloc(nw);
            amp_ormqr_backward_f32(o.batch, o.mn, o.nk, o.k, o.rows, o.cols, left, transpose, af, tf, cf, dyf, daf, dtf,
                                   dcf, workf);
            expect_close_f32("ormqr_backward f32 dA", daf, da, na, 1e-5);
            expect_close_f32("ormqr_backward f32 dtau", dtf, dtau, nt, 1e-5);
            expect_close_f32("ormqr_backward f32 dC", dcf, dc, nc, 1e-5);
            amp_ref_ormqr_backward_f32(o.batch, o.mn, o.nk, o.k, o.rows, o.cols, left, transpose, af, tf, cf, dyf, NULL,
                                       NULL, dcf, workf);
            expect_close_f32("ormqr_backward f32 dC alone", dcf, dc, nc, 1e-5);
            free(a), free(tau), free(c), free(dy), free(work), free(da), free(dtau), free(dc), free(da_ref);
            free(dtau_ref), free(dc_ref), free(af), free(tf), free(cf), free(dyf), free(daf), free(dtf), free(dcf);
            free(workf);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_triangular_solve_backward),
        cmocka_unit_test(test_cholesky_backward),
        cmocka_unit_test(test_cholesky_backward_fixed),
        cmocka_unit_test(test_eigh_backward),
        cmocka_unit_test(test_eigh_backward_fixed),
        cmocka_unit_test(test_svdvals_backward),
        cmocka_unit_test(test_pinverse_backward),
        cmocka_unit_test(test_qr_backward),
        cmocka_unit_test(test_svd_backward),
        cmocka_unit_test(test_lu_factor_backward),
        cmocka_unit_test(test_lu_solve_backward),
        cmocka_unit_test(test_householder_product_backward),
        cmocka_unit_test(test_ormqr_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
