/*
 * test_backward_prelu.c - prelu_backward of amprt/backward.h (per-channel
 * and shared weight).
 * Every dtype through the public and the reference table, as
 * backward_test_util.h describes (f32/bf16/f16 against the f64 kernel on
 * the same rounded inputs; f64 against finite differences of the forward
 * f64 kernels), and fixed cases worked by hand from PyTorch's
 * formulas.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prelu_backward),
        cmocka_unit_test(test_prelu_fixed),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
