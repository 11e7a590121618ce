/*
 * backward_test_util.h - the checking engine shared by the
 * test_backward_*.c programs (header-only, as kernel_test_util.h, whose
 * tensors, RNG, tables and error bound it uses).
 *
 * A case is a backward kernel with its inputs. For every dtype T and both
 * tables (public, reference) the engine:
 *  1. rounds the primary inputs to T (parameters, flagged in param[], to
 *     the case's parameter dtype) and lets prepare() derive the rest (the
 *     forward output y, computed by the forward kernel in T, as training
 *     would pass it);
 *  2. runs the backward kernel in T with a random dy;
 *  3. compares each gradient with the f64 reference backward applied to the
 *     same rounded inputs (so only the kernel's own evaluation differs):
 *        |g - ref| <= u_T |ref| + (1 + u_T) cond u_acc(T) scale + floor_T
 *     with scale the largest |ref| of that gradient (at least max |dy|);
 *  4. with the reference set active, checks public == reference bitwise.
 * Independently, for f64 the gradient is checked against central finite
 * differences of the FORWARD f64 reference kernel: for each element i of a
 * differentiable input, (L(x + h e_i) - L(x - h e_i)) / 2h with
 * L = sum(dy * forward(x)), within fd_tol (max |g| + 1).
 */
#ifndef BACKWARD_TEST_UTIL_H
#define BACKWARD_TEST_UTIL_H

#include "kernel_test_util.h"

#define BW_MAX_IN 8
#define BW_MAX_GRAD 4

typedef struct bw_case bw_case;
struct bw_case {
    const char *what;
    int nprimary, nin;          /* inputs [0, nprimary) generated, the rest from prepare */
    size_t size[BW_MAX_IN];     /* elements of each input */
    double lo[BW_MAX_IN], hi[BW_MAX_IN]; /* range of the random primary inputs */
    int param[BW_MAX_IN];       /* input is a parameter (param dtype) */
    int param_f32;              /* parameters are f32 under bf16/f16 */
    int ngrad;
    int grad_of[BW_MAX_GRAD];   /* the primary input each gradient is for */
    size_t nout;                /* elements of the forward output (and dy) */
    double cond;                /* the evaluation error allowance, in u_acc x scale */
    double fd_h, fd_tol;        /* finite differences (fd_h 0: skip) */
    const void *ctx;            /* kernel-specific arguments */
    /* y = forward(inputs) in f64 (primary inputs only are meaningful). */
    void (*forward)(const bw_case *c, double *const *in, double *y);
    /* Derive inputs [nprimary, nin) in dtype t (may be NULL). */
    void (*prepare)(const bw_case *c, amp_dtype t, void *const *in);
    /* Run the backward kernel of table k in dtype t; grads[g] has the dtype
     * of input grad_of[g]. */
    void (*backward)(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                     void *const *grads);
    /* Explicit input values (NULL: random). */
    const double *values[BW_MAX_IN];
};

static amp_dtype bw_param_dtype(const bw_case *c, amp_dtype t)
{
    return c->param_f32 && (t == AMP_BF16 || t == AMP_F16) ? AMP_F32 : t;
}

static amp_dtype bw_input_dtype(const bw_case *c, amp_dtype t, int i)
{
    return c->param[i] ? bw_param_dtype(c, t) : t;
}

/* Inputs of c in dtype t, from the f64 master values. */
static void bw_inputs(const bw_case *c, amp_dtype t, tensor *const master, tensor *in)
{
    for (int i = 0; i < c->nin; i++) {
        in[i] = tensor_new(bw_input_dtype(c, t, i), c->size[i]);
        if (i < c->nprimary)
            for (size_t e = 0; e < c->size[i]; e++)
                set(&in[i], e, get(&master[i], e));
    }
    if (c->prepare != NULL) {
        void *ptrs[BW_MAX_IN];
        for (int i = 0; i < c->nin; i++)
            ptrs[i] = in[i].data;
        c->prepare(c, t, ptrs);
    }
}

static tensor bw_to_f64(const tensor *x)
{
    tensor y = tensor_new(AMP_F64, x->n);
    for (size_t e = 0; e < x->n; e++)
        set(&y, e, get(x, e));
    return y;
}

/* Run c's backward: grads[g] allocated here. */
static void bw_run(const bw_case *c, const amp_kernel_table *k, amp_dtype t, tensor *in, const tensor *dy,
                   tensor *grads)
{
    void *ptrs[BW_MAX_IN], *gptrs[BW_MAX_GRAD];
    for (int i = 0; i < c->nin; i++)
        ptrs[i] = in[i].data;
    for (int g = 0; g < c->ngrad; g++) {
        grads[g] = tensor_new(in[c->grad_of[g]].t, c->size[c->grad_of[g]]);
        /* poison: every element must be written */
        for (size_t e = 0; e < grads[g].n; e++)
            set(&grads[g], e, NAN);
        gptrs[g] = grads[g].data;
    }
    c->backward(c, k, t, ptrs, dy->data, gptrs);
}

static double bw_loss(const bw_case *c, tensor *master, const tensor *dy, tensor *y)
{
    double *ptrs[BW_MAX_IN];
    long double sum = 0;
    for (int i = 0; i < c->nin; i++)
        ptrs[i] = master[i].data;
    c->forward(c, ptrs, y->data);
    for (size_t e = 0; e < y->n; e++)
        sum += (long double)((const double *)dy->data)[e] * ((const double *)y->data)[e];
    return (double)sum;
}

static void bw_free_all(tensor *x, int n)
{
    for (int i = 0; i < n; i++)
        tensor_free(&x[i]);
}

static void bw_check(const bw_case *c)
{
    tensor master[BW_MAX_IN], dy64 = tensor_random(AMP_F64, c->nout, -1, 1);
    double max_dy = 0;
    for (size_t e = 0; e < dy64.n; e++)
        max_dy = fmax(max_dy, fabs(get(&dy64, e)));
    for (int i = 0; i < c->nprimary; i++)
        master[i] = c->values[i] != NULL ? tensor_of(AMP_F64, c->size[i], c->values[i])
                                         : tensor_random(AMP_F64, c->size[i], c->lo[i], c->hi[i]);

    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor in[BW_MAX_IN], in64[BW_MAX_IN], ref[BW_MAX_GRAD], got[NTABLES][BW_MAX_GRAD];
        tensor dy = tensor_new(t, c->nout), dyr;
        for (size_t e = 0; e < c->nout; e++)
            set(&dy, e, get(&dy64, e));
        dyr = bw_to_f64(&dy);
        bw_inputs(c, t, master, in);
        for (int i = 0; i < c->nin; i++)
            in64[i] = bw_to_f64(&in[i]);
        bw_run(c, &amp_ref_kernel_table, AMP_F64, in64, &dyr, ref);
        for (int k = 0; k < NTABLES; k++) {
            bw_run(c, tables[k], t, in, &dy, got[k]);
            for (int g = 0; g < c->ngrad; g++) {
                double scale = max_dy;
                for (size_t e = 0; e < ref[g].n; e++)
                    if (isfinite(get(&ref[g], e)))
                        scale = fmax(scale, fabs(get(&ref[g], e)));
                for (size_t e = 0; e < ref[g].n; e++) {
                    double v = get(&got[k][g], e), o = get(&ref[g], e);
                    /* the bound is about the output's dtype (parameters may be f32) */
                    amp_dtype gt = got[k][g].t;
                    double acc = c->cond * u_acc(t) * scale;
                    if (!close_to(gt, v, o, acc))
                        fail_msg("%s: grad %d, %s (table %s) [%zu]: got %.17g, f64 kernel %.17g, bound %.3g",
                                 c->what, g, amp_dtype_name(t), tables[k]->isa, e, v, o,
                                 unit_roundoff(gt) * fabs(o) + acc);
                }
            }
        }
        for (int g = 0; g < c->ngrad; g++)
            expect_public_equals_ref(&got[0][g], &got[1][g]);
        bw_free_all(in, c->nin);
        bw_free_all(in64, c->nin);
        bw_free_all(ref, c->ngrad);
        bw_free_all(got[0], c->ngrad);
        bw_free_all(got[1], c->ngrad);
        tensor_free(&dy);
        tensor_free(&dyr);
    }

    /* Finite differences of the f64 forward. */
    if (c->fd_h > 0) {
        tensor in[BW_MAX_IN], grads[BW_MAX_GRAD], y = tensor_new(AMP_F64, c->nout);
        bw_inputs(c, AMP_F64, master, in);
        bw_run(c, &amp_ref_kernel_table, AMP_F64, in, &dy64, grads);
        for (int g = 0; g < c->ngrad; g++) {
            tensor *x = &in[c->grad_of[g]];
            double gmax = 0;
            for (size_t e = 0; e < grads[g].n; e++)
                gmax = fmax(gmax, fabs(get(&grads[g], e)));
            for (size_t e = 0; e < x->n; e++) {
                double x0 = get(x, e), h = c->fd_h * fmax(1.0, fabs(x0)), lp, lm, fd;
                set(x, e, x0 + h);
                lp = bw_loss(c, in, &dy64, &y);
                set(x, e, x0 - h);
                lm = bw_loss(c, in, &dy64, &y);
                set(x, e, x0);
                fd = (lp - lm) / (2 * h);
                if (!(fabs(fd - get(&grads[g], e)) <= c->fd_tol * (gmax + 1)))
                    fail_msg("%s: grad %d [%zu]: f64 kernel %.17g, finite difference %.17g", c->what, g, e,
                             get(&grads[g], e), fd);
            }
        }
        bw_free_all(in, c->nin);
        bw_free_all(grads, c->ngrad);
        tensor_free(&y);
    }
    bw_free_all(master, c->nprimary);
    tensor_free(&dy64);
}

/* A fixed case: the f64 kernel's gradient g against PyTorch's numbers. */
static void bw_expect_torch(const char *what, const double *got, const double *torch, size_t n, double rel)
{
    for (size_t e = 0; e < n; e++) {
        double tol = rel * fabs(torch[e]) + 1e-15;
        if (isnan(torch[e]) ? !isnan(got[e]) : !(fabs(got[e] - torch[e]) <= tol || got[e] == torch[e]))
            fail_msg("%s [%zu]: got %.17g, torch %.17g", what, e, got[e], torch[e]);
    }
}

#endif /* BACKWARD_TEST_UTIL_H */
