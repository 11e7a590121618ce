/*
 * test_backward_more.c - these gradient kernels of amprt/backward.h:
 * prelu_backward (per-channel and shared weight), prod_backward (reduce
 * masks, slices with one and with two zeros), cumprod_backward (lines with
 * zeros), quantile_backward (every interpolation, nanquantile),
 * cosine_similarity_backward (norms under eps), the margin losses'
 * backwards (every reduction; triplet's p, swap), renorm, cdist and pdist
 * (p 0, 0.5, 1, 1.5, 2, 3, inf).  Every
 * dtype through the public and the reference table, as
 * backward_test_util.h describes (f32/bf16/f16 against the f64 kernel on
 * the same rounded inputs; f64 against finite differences of the forward
 * f64 kernels, which also holds at the zeros: prod and cumprod are
 * polynomials), and fixed cases worked by hand from PyTorch's formulas
 * (the product of the others at a zero; NaN slices of quantile).
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

/* ---- prelu ----------------------------------------------------------------- */

typedef struct {
    int64_t outer, channels, inner, nweight;
} prelu_info;

static void prelu_forward(const bw_case *c, double *const *in, double *y)
{
    const prelu_info *p = c->ctx;
    amp_ref_prelu_f64(p->outer, p->channels, p->inner, p->nweight, in[0], in[1], y);
}

static void prelu_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                           void *const *grads)
{
    const prelu_info *p = c->ctx;
    KCALL(k, t, prelu_backward, p->outer, p->channels, p->inner, p->nweight, in[0], in[1], dy, grads[0], grads[1]);
}

static void test_prelu_backward(void **state)
{
    static const prelu_info shapes[] = { { 3, 4, 5, 4 }, { 3, 4, 5, 1 }, { 1, 1, 17, 1 }, { 7, 3, 1, 3 } };
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const prelu_info *p = &shapes[s];
        size_t n = (size_t)(p->outer * p->channels * p->inner);
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = p->nweight == 1 ? "prelu_backward shared weight" : "prelu_backward per channel";
        c.nprimary = c.nin = 2;
        c.size[0] = n;
        c.size[1] = (size_t)p->nweight;
        c.lo[0] = -2, c.hi[0] = 2;
        c.lo[1] = -0.5, c.hi[1] = 1;
        c.ngrad = 2;
        c.grad_of[0] = 0, c.grad_of[1] = 1;
        c.nout = n;
        c.cond = 4.0 * (double)n; /* dw: a sum over a channel's elements */
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = p;
        c.forward = prelu_forward;
        c.backward = prelu_backward;
        bw_check(&c);
    }
}

/* dx = dy where x > 0, w dy elsewhere (x == 0 included); dw = sum x dy
 * over x <= 0; NULL skips a gradient. */
static void test_prelu_fixed(void **state)
{
    static const double x[] = { -2.0, 0.0, 3.0, -1.0, 0.5, -4.0 }, w[] = { 0.25, -0.5 };
    static const double dy[] = { 1.0, 2.0, 3.0, -1.0, 0.5, 0.25 };
    static const double want_dx[] = { 0.25, 0.5, 3.0, 0.5, 0.5, -0.125 };
    static const double want_dw[] = { -2.0, 0.0 }; /* channel 0: -2 * 1 + 0 * 2; channel 1: -1 * -1 + -4 * 0.25 */
    double dx[6], dw[2];
    (void)state;
    amp_prelu_backward_f64(1, 2, 3, 2, x, w, dy, dx, dw);
    bw_expect_torch("prelu dx", dx, want_dx, 6, 0);
    bw_expect_torch("prelu dw", dw, want_dw, 2, 0);
    dw[0] = dw[1] = 7;
    amp_prelu_backward_f64(1, 2, 3, 2, x, w, dy, dx, NULL);
    bw_expect_torch("prelu dx alone", dx, want_dx, 6, 0);
    amp_prelu_backward_f64(1, 2, 3, 2, x, w, dy, NULL, dw);
    bw_expect_torch("prelu dw alone", dw, want_dw, 2, 0);
}

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

/* ---- cosine_similarity ----------------------------------------------------- */

typedef struct {
    const char *name;
    int ndim, dim;
    int64_t shape[3];
    double eps;
} cos_info;

static size_t cos_numel(const cos_info *ci)
{
    size_t n = 1;
    for (int d = 0; d < ci->ndim; d++)
        n *= (size_t)ci->shape[d];
    return n;
}

static void cos_strides(const cos_info *ci, int64_t *st)
{
    int64_t inner = 1;
    for (int d = ci->ndim - 1; d >= 0; d--) {
        st[d] = inner;
        inner *= ci->shape[d];
    }
}

static void cos_forward(const bw_case *c, double *const *in, double *y)
{
    const cos_info *ci = c->ctx;
    int64_t st[3];
    cos_strides(ci, st);
    amp_ref_cosine_similarity_f64(ci->ndim, ci->shape, ci->dim, in[0], st, in[1], st, ci->eps, y);
}

static void cos_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                         void *const *grads)
{
    const cos_info *ci = c->ctx;
    int64_t st[3];
    cos_strides(ci, st);
    KCALL(k, t, cosine_similarity_backward, ci->ndim, ci->shape, ci->dim, in[0], st, in[1], st, ci->eps, dy, grads[0],
          grads[1]);
}

static void test_cosine_similarity_backward(void **state)
{
    static const cos_info cases[] = {
        { "cosine_similarity_backward dim 1", 3, 1, { 2, 4, 3 }, 1e-8 },
        { "cosine_similarity_backward last dim", 3, 2, { 2, 3, 5 }, 1e-8 },
        { "cosine_similarity_backward 1-D", 1, 0, { 7, 0, 0 }, 1e-8 },
        { "cosine_similarity_backward norms under eps", 2, 1, { 3, 4, 0 }, 0.5 },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cos_info *ci = &cases[i];
        size_t n = cos_numel(ci);
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = ci->name;
        c.nprimary = c.nin = 2;
        c.size[0] = c.size[1] = n;
        /* the last case: ||a|| below eps (the clamp's constant branch) */
        c.lo[0] = ci->eps > 0.1 ? -0.1 : -1, c.hi[0] = ci->eps > 0.1 ? 0.1 : 1;
        c.lo[1] = -1, c.hi[1] = 1;
        c.ngrad = 2;
        c.grad_of[0] = 0, c.grad_of[1] = 1;
        c.nout = n / (size_t)ci->shape[ci->dim];
        c.cond = 16.0 * (double)ci->shape[ci->dim] + 16;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = ci;
        c.forward = cos_forward;
        c.backward = cos_backward;
        bw_check(&c);
    }
}

/* ---- margin_ranking_loss --------------------------------------------------- */

static const int reductions[] = { AMP_REDUCTION_NONE, AMP_REDUCTION_MEAN, AMP_REDUCTION_SUM };

typedef struct {
    int64_t n;
    double margin;
    int reduction;
} pair_info;

static void ranking_forward(const bw_case *c, double *const *in, double *y)
{
    const pair_info *pi = c->ctx;
    static const int64_t one[] = { 1 };
    amp_ref_margin_ranking_loss_f64(1, &pi->n, in[0], one, in[1], one, in[2], one, pi->margin, pi->reduction, y);
}

static void ranking_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                             void *const *grads)
{
    const pair_info *pi = c->ctx;
    static const int64_t one[] = { 1 };
    KCALL(k, t, margin_ranking_loss_backward, 1, &pi->n, in[0], one, in[1], one, in[2], one, pi->margin, pi->reduction,
          dy, grads[0], grads[1], grads[2]);
}

static void test_margin_ranking_backward(void **state)
{
    (void)state;
    for (int r = 0; r < 3; r++) {
        pair_info pi = { 23, 0.3, reductions[r] };
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = "margin_ranking_loss_backward";
        c.nprimary = c.nin = 3;
        c.size[0] = c.size[1] = c.size[2] = 23;
        c.lo[0] = c.lo[1] = c.lo[2] = -1;
        c.hi[0] = c.hi[1] = c.hi[2] = 1;
        c.ngrad = 3;
        c.grad_of[0] = 0, c.grad_of[1] = 1, c.grad_of[2] = 2;
        c.nout = pi.reduction == AMP_REDUCTION_NONE ? 23 : 1;
        c.cond = 8;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = &pi;
        c.forward = ranking_forward;
        c.backward = ranking_backward;
        bw_check(&c);
    }
}

/* ---- cosine_embedding_loss, triplet_margin_loss ---------------------------- */

typedef struct {
    int64_t N, D;
    double margin, p;
    int swap, reduction;
} row_info;

static void embedding_forward(const bw_case *c, double *const *in, double *y)
{
    const row_info *ri = c->ctx;
    const int64_t st[] = { ri->D, 1 };
    amp_ref_cosine_embedding_loss_f64(ri->N, ri->D, in[0], st, in[1], st, in[2], 1, ri->margin, ri->reduction, y);
}

static void embedding_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                               const void *dy, void *const *grads)
{
    const row_info *ri = c->ctx;
    const int64_t st[] = { ri->D, 1 };
    KCALL(k, t, cosine_embedding_loss_backward, ri->N, ri->D, in[0], st, in[1], st, in[2], 1, ri->margin,
          ri->reduction, dy, grads[0], grads[1]);
}

static void triplet_forward(const bw_case *c, double *const *in, double *y)
{
    const row_info *ri = c->ctx;
    const int64_t st[] = { ri->D, 1 };
    amp_ref_triplet_margin_loss_f64(ri->N, ri->D, in[0], st, in[1], st, in[2], st, ri->margin, ri->p, 1e-6, ri->swap,
                                    ri->reduction, y);
}

static void triplet_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                             const void *dy, void *const *grads)
{
    const row_info *ri = c->ctx;
    const int64_t st[] = { ri->D, 1 };
    double *work = malloc((size_t)(3 * ri->D) * sizeof *work);
    assert_non_null(work);
    KCALL(k, t, triplet_margin_loss_backward, ri->N, ri->D, in[0], st, in[1], st, in[2], st, ri->margin, ri->p, 1e-6,
          ri->swap, ri->reduction, dy, grads[0], grads[1], grads[2], work);
    free(work);
}

static void test_row_loss_backward(void **state)
{
    /* targets 1, -1 and 0 (neither branch: no gradient) */
    static const double targets[] = { 1, -1, 1, 0, -1, -1, 1, -1, 1 };
    static const struct {
        double margin, p;
        int swap;
    } triplets[] = { { 1.0, 2.0, 0 }, { 0.5, 1.0, 0 }, { 1.0, 3.0, 1 }, { 0.2, INFINITY, 0 }, { 2.0, 2.0, 1 } };
    (void)state;
    for (int r = 0; r < 3; r++) {
        row_info ri = { 9, 6, -0.2, 2, 0, reductions[r] };
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = "cosine_embedding_loss_backward";
        c.nprimary = c.nin = 3;
        c.size[0] = c.size[1] = 54;
        c.size[2] = 9;
        c.lo[0] = c.lo[1] = -1;
        c.hi[0] = c.hi[1] = 1;
        c.values[2] = targets;
        c.ngrad = 2;
        c.grad_of[0] = 0, c.grad_of[1] = 1;
        c.nout = ri.reduction == AMP_REDUCTION_NONE ? 9 : 1;
        c.cond = 64;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = &ri;
        c.forward = embedding_forward;
        c.backward = embedding_backward;
        bw_check(&c);
        for (size_t k = 0; k < sizeof triplets / sizeof triplets[0]; k++) {
            row_info tr = { 7, 5, triplets[k].margin, triplets[k].p, triplets[k].swap, reductions[r] };
            memset(&c, 0, sizeof c);
            c.what = "triplet_margin_loss_backward";
            c.nprimary = c.nin = 3;
            c.size[0] = c.size[1] = c.size[2] = 35;
            c.lo[0] = c.lo[1] = c.lo[2] = -1;
            c.hi[0] = c.hi[1] = c.hi[2] = 1;
            c.ngrad = 3;
            c.grad_of[0] = 0, c.grad_of[1] = 1, c.grad_of[2] = 2;
            c.nout = tr.reduction == AMP_REDUCTION_NONE ? 7 : 1;
            c.cond = 64;
            c.fd_h = 1e-6;
            c.fd_tol = 1e-7;
            c.ctx = &tr;
            c.forward = triplet_forward;
            c.backward = triplet_backward;
            bw_check(&c);
        }
    }
}

/* Fixed: margin_ranking at the kink z = 0 passes the gradient (clamp_min);
 * triplet's swap tie splits it in half. */
static void test_margin_fixed(void **state)
{
    static const int64_t n2[] = { 2 }, one[] = { 1 }, row1[] = { 1, 1 }; /* [N, D] strides, N = D = 1 */
    static const double a[] = { 0.5, 0.0 }, b[] = { 0.25, 1.0 }, t[] = { 1.0, -1.0 }, dl[] = { 2.0 };
    /* z = -(0.5 - 0.25) + 0.25 = 0: passes g = 2; z = (0 - 1) + 0.25 < 0: none */
    static const double want_da[] = { -2.0, 0.0 }, want_db[] = { 2.0, 0.0 }, want_dt[] = { -0.5, 0.0 };
    /* triplet, D = 1, eps 0, p 1, swap: a = 0, p = 1, n = 0.5, so d(a, n)
     * = d(p, n) = 0.5, a tie.  g = 2: d(a, p) (sgn(a - p) = -1) gives a -2,
     * p +2; d(a, n) gets -g / 2 (sgn(a - n) = -1): a +1, n -1; d(p, n) gets
     * -g / 2 (sgn(p - n) = 1): p -1, n +1 */
    static const double ta[] = { 0.0 }, tp[] = { 1.0 }, tn[] = { 0.5 };
    static const double want_ta[] = { -1.0 }, want_tp[] = { 1.0 }, want_tn[] = { 0.0 };
    double da[2], db[2], dt[2], ga[1], gp[1], gn[1], work[3];
    (void)state;
    amp_margin_ranking_loss_backward_f64(1, n2, a, one, b, one, t, one, 0.25, AMP_REDUCTION_SUM, dl, da, db, dt);
    bw_expect_torch("margin_ranking da", da, want_da, 2, 0);
    bw_expect_torch("margin_ranking db", db, want_db, 2, 0);
    bw_expect_torch("margin_ranking dtarget", dt, want_dt, 2, 0);
    amp_triplet_margin_loss_backward_f64(1, 1, ta, row1, tp, row1, tn, row1, 5.0, 1.0, 0.0, 1, AMP_REDUCTION_SUM, dl,
                                         ga, gp, gn, work);
    bw_expect_torch("triplet swap tie da", ga, want_ta, 1, 0);
    bw_expect_torch("triplet swap tie dp", gp, want_tp, 1, 0);
    bw_expect_torch("triplet swap tie dn", gn, want_tn, 1, 0);
}

/* ---- renorm, cdist, pdist -------------------------------------------------- */

typedef struct {
    const char *name;
    int64_t a, b, c; /* renorm: outer, len, inner; cdist: P, R, M (batch 2); pdist: N, M */
    double p, maxnorm;
} dist_info;

static void renorm_forward(const bw_case *c, double *const *in, double *y)
{
    const dist_info *di = c->ctx;
    amp_ref_renorm_f64(di->a, di->b, di->c, di->p, di->maxnorm, in[0], y);
}

static void renorm_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                            void *const *grads)
{
    const dist_info *di = c->ctx;
    KCALL(k, t, renorm_backward, di->a, di->b, di->c, di->p, di->maxnorm, in[0], dy, grads[0]);
}

static void cdist_forward(const bw_case *c, double *const *in, double *y)
{
    const dist_info *di = c->ctx;
    amp_ref_cdist_f64(2, di->a, di->b, di->c, di->p, in[0], in[1], y);
}

static void cdist_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                           void *const *grads)
{
    const dist_info *di = c->ctx;
    double *work = malloc((size_t)di->c * sizeof *work);
    assert_non_null(work);
    KCALL(k, t, cdist_backward, 2, di->a, di->b, di->c, di->p, in[0], in[1], dy, grads[0], grads[1], work);
    free(work);
}

static void pdist_forward(const bw_case *c, double *const *in, double *y)
{
    const dist_info *di = c->ctx;
    amp_ref_pdist_f64(di->a, di->b, di->p, in[0], y);
}

static void pdist_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                           void *const *grads)
{
    const dist_info *di = c->ctx;
    double *work = malloc((size_t)di->b * sizeof *work);
    assert_non_null(work);
    KCALL(k, t, pdist_backward, di->a, di->b, di->p, in[0], dy, grads[0], work);
    free(work);
}

static void test_distance_backward(void **state)
{
    static const dist_info renorms[] = {
        { "renorm_backward p 2", 2, 4, 3, 2.0, 1.5 }, /* some slices scaled, some not */
        { "renorm_backward p 1", 3, 3, 2, 1.0, 2.0 },
        { "renorm_backward p 3", 1, 5, 4, 3.0, 1.0 },
        { "renorm_backward p inf", 2, 3, 3, INFINITY, 0.5 },
    };
    static const double ps[] = { 2.0, 1.0, 0.5, 1.5, 3.0, INFINITY, 0.0 };
    (void)state;
    for (size_t i = 0; i < sizeof renorms / sizeof renorms[0]; i++) {
        const dist_info *di = &renorms[i];
        size_t n = (size_t)(di->a * di->b * di->c);
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = di->name;
        c.nprimary = c.nin = 1;
        c.size[0] = n;
        c.lo[0] = -1, c.hi[0] = 1;
        c.ngrad = 1;
        c.nout = n;
        c.cond = 16.0 * (double)(di->a * di->c) + 16;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = di;
        c.forward = renorm_forward;
        c.backward = renorm_backward;
        bw_check(&c);
    }
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        dist_info cd = { "cdist_backward", 3, 4, 5, ps[i], 0 }, pd = { "pdist_backward", 5, 4, 0, ps[i], 0 };
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = cd.name;
        c.nprimary = c.nin = 2;
        c.size[0] = 2 * 3 * 5;
        c.size[1] = 2 * 4 * 5;
        c.lo[0] = c.lo[1] = -1, c.hi[0] = c.hi[1] = 1;
        c.ngrad = 2;
        c.grad_of[0] = 0, c.grad_of[1] = 1;
        c.nout = 2 * 3 * 4;
        c.cond = 64;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-6;
        c.ctx = &cd;
        c.forward = cdist_forward;
        c.backward = cdist_backward;
        bw_check(&c);
        memset(&c, 0, sizeof c);
        c.what = pd.name;
        c.nprimary = c.nin = 1;
        c.size[0] = 5 * 4;
        c.lo[0] = -1, c.hi[0] = 1;
        c.ngrad = 1;
        c.nout = 10;
        c.cond = 64;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-6;
        c.ctx = &pd;
        c.forward = pdist_forward;
        c.backward = pdist_backward;
        bw_check(&c);
    }
}

/* Fixed: cdist's inf norm gives every tie the whole slope (PyTorch's
 * distance backward does not share it, unlike norm's), and 0 at d = 0. */
static void test_distance_fixed(void **state)
{
    static const double x1[] = { 1.0, -1.0, 0.5, 0.5 }, x2[] = { 0.0, 0.0, 0.5, 0.5 }, dy[] = { 2.0, 3.0, 5.0, 7.0 };
    /* w = x1_i - x2_j: (0, 0) w = (1, -1), d = 1, both tie: dx1_0 += 2 (1, -1);
     * (0, 1) w = (0.5, -1.5): dx1_0 += 3 (0, -1); (1, 0) w = (0.5, 0.5), a
     * tie: dx1_1 += 5 (1, 1); (1, 1) w = 0, d = 0: nothing.  dx2 the same
     * with w negated */
    static const double want1[] = { 2.0, -5.0, 5.0, 5.0 };
    static const double want2[] = { -7.0, -3.0, 0.0, 3.0 };
    double d1[4], d2[4], work[2];
    (void)state;
    amp_cdist_backward_f64(1, 2, 2, 2, INFINITY, x1, x2, dy, d1, d2, work);
    bw_expect_torch("cdist inf dx1", d1, want1, 4, 0);
    bw_expect_torch("cdist inf dx2", d2, want2, 4, 0);
}

/* ---- multi_margin_loss, multilabel_margin_loss ----------------------------- */

typedef struct {
    const char *name;
    int64_t N, C;
    const int64_t *target;
    int p, weighted, reduction;
    double margin;
} class_margin_info;

static void class_margin_forward(const bw_case *c, double *const *in, double *y)
{
    const class_margin_info *ci = c->ctx;
    if (ci->p == 0)
        assert_int_equal(amp_ref_multilabel_margin_loss_f64(ci->N, ci->C, in[0], ci->target, ci->reduction, y), 0);
    else
        assert_int_equal(amp_ref_multi_margin_loss_f64(ci->N, ci->C, in[0], ci->target, ci->p, ci->margin,
                                                       ci->weighted ? in[1] : NULL, ci->reduction, y),
                         0);
}

static void class_margin_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                                  const void *dy, void *const *grads)
{
    const class_margin_info *ci = c->ctx;
    if (ci->p == 0) {
        double *work = malloc((size_t)ci->C * sizeof *work);
        assert_non_null(work);
        KCALL(k, t, multilabel_margin_loss_backward, ci->N, ci->C, in[0], ci->target, ci->reduction, dy, grads[0],
              work);
        free(work);
    } else {
        KCALL(k, t, multi_margin_loss_backward, ci->N, ci->C, in[0], ci->target, ci->p, ci->margin,
              ci->weighted ? in[1] : NULL, ci->reduction, dy, grads[0]);
    }
}

static void test_class_margin_backward(void **state)
{
    static const int64_t targets[] = { 2, 0, 4, 1, 3, 3, 0 };
    /* multilabel: each row's targets before its first -1 (row 3: none; row 4: all but one) */
    static const int64_t labels[] = { 1, 3, -1, 0, 0, 2, 4, -1, 1, 0, 4, 2, -1, 0, 0,
                                      -1, 2, 3, 1, 0, 3, 1, 2, 0, -1, 4, -1, 3, 2, 1 };
    (void)state;
    for (int r = 0; r < 3; r++)
        for (int v = 0; v < 4; v++) {
            /* v 0: p 1; 1: p 2 with weight; 2: p 1 with weight, margin 0.3; 3: multilabel */
            class_margin_info ci = { v == 3 ? "multilabel_margin_loss_backward" : "multi_margin_loss_backward",
                                     v == 3 ? 6 : 7, 5, v == 3 ? labels : targets, v == 3 ? 0 : v == 1 ? 2 : 1,
                                     v == 1 || v == 2, reductions[r], v == 2 ? 0.3 : 1.0 };
            bw_case c;
            memset(&c, 0, sizeof c);
            c.what = ci.name;
            c.nprimary = c.nin = ci.weighted ? 2 : 1;
            c.size[0] = (size_t)(ci.N * ci.C);
            c.size[1] = (size_t)ci.C;
            c.lo[0] = -1, c.hi[0] = 1;
            c.lo[1] = 0.25, c.hi[1] = 2;
            c.ngrad = 1;
            c.nout = ci.reduction == AMP_REDUCTION_NONE ? (size_t)ci.N : 1;
            c.cond = 32;
            c.fd_h = 1e-6;
            c.fd_tol = 1e-7;
            c.ctx = &ci;
            c.forward = class_margin_forward;
            c.backward = class_margin_backward;
            bw_check(&c);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prelu_backward),    cmocka_unit_test(test_prelu_fixed),
        cmocka_unit_test(test_prod_backward),     cmocka_unit_test(test_prod_fixed),
        cmocka_unit_test(test_cumprod_backward),  cmocka_unit_test(test_cumprod_fixed),
        cmocka_unit_test(test_quantile_backward), cmocka_unit_test(test_quantile_fixed),
        cmocka_unit_test(test_cosine_similarity_backward), cmocka_unit_test(test_margin_ranking_backward),
        cmocka_unit_test(test_row_loss_backward), cmocka_unit_test(test_margin_fixed),
        cmocka_unit_test(test_distance_backward), cmocka_unit_test(test_distance_fixed),
        cmocka_unit_test(test_class_margin_backward),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
