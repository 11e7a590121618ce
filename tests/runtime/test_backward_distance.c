/*
 * test_backward_distance.c - these gradients of amprt/backward.h:
 * cosine_similarity_backward (norms under eps), renorm, cdist and pdist
 * (p 0, 0.5, 1, 1.5, 2, 3, inf).
 * Every dtype through the public and the reference table, as
 * backward_test_util.h describes (f32/bf16/f16 against the f64 kernel on
 * the same rounded inputs; f64 against finite differences of the forward
 * f64 kernels)), and fixed cases worked by hand from PyTorch's formulas.
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cosine_similarity_backward),
        cmocka_unit_test(test_distance_backward),
        cmocka_unit_test(test_distance_fixed),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
