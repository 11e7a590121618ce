/*
 * test_backward_margin_loss.c - the margin losses' backwards of
 * amprt/backward.h: margin_ranking_loss, cosine_embedding_loss,
 * triplet_margin_loss (p, swap), multi_margin_loss and
 * multilabel_margin_loss, every reduction.
 * Every dtype through the public and the reference table, as
 * backward_test_util.h describes (f32/bf16/f16 against the f64 kernel on
 * the same rounded inputs; f64 against finite differences of the forward
 * f64 kernels)), and fixed cases worked by hand from PyTorch's formulas.
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

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
        cmocka_unit_test(test_margin_ranking_backward),
        cmocka_unit_test(test_row_loss_backward),
        cmocka_unit_test(test_margin_fixed),
        cmocka_unit_test(test_class_margin_backward),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
