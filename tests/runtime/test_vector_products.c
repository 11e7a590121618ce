/*
 * test_vector_products.c - cosine_similarity (amprt/reduce.h) and cross
 * (amprt/elementwise.h), the normalised dot and the cross product of
 * vectors along a dim, every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts; and fixed cases whose answers were
 * printed by PyTorch 1.13 in float64 (the program does not need torch).
 * Conventions and the error bound: kernel_test_util.h and
 * oracle_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "oracle_test_util.h"

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

/* ---- Fixed cases printed by PyTorch 1.13 in float64 ------------------------------
 *
 * Inputs are multiples of 1/8 (or 1/16), exact in every dtype.  Script:
 * torch.set_default_dtype(torch.float64), then the calls named per array. */


/* a, b [2, 3]: F.cosine_similarity(a, b, dim), torch.linalg.cross */
static const double fx_a[] = { 1.0, -2.0, 0.5, 3.0, -0.25, 0.75 };
static const double fx_b[] = { 0.5, 1.5, -1.0, 2.0, 0.0, -0.5 };
static const double fx_cos_dim1[] = { -0.6998542122237652, 0.8794834931183673 };
static const double fx_cos_dim0[] = { 0.9970544855015815, -0.9922778767136677, -0.8682431421244592 };
static const double fx_cos_bcast[] = { -0.6998542122237652, 0.06460957383809221 }; /* b[:1] */
static const double fx_cross_dim1[] = { 1.25, 1.25, 2.5, 0.125, 3.0, 0.5 };
static const double fx_cross_dim0[] = { 1.25, 0.125, 1.25, 3.0, 2.5, 0.5 }; /* a.t(), b.t(), dim 0 */

static void test_vector_products_match_torch(void **state)
{
    static const int64_t shape23[2] = { 2, 3 }, s23[2] = { 3, 1 }, s23b[2] = { 0, 1 };
    static const int64_t shape32[2] = { 3, 2 };
    static const int64_t vs[2] = { 2, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            tensor y = tensor_new(t, 12), a = tensor_of(t, 6, fx_a), b = tensor_of(t, 6, fx_b);
            tensor at_ = tensor_new(t, 6), bt = tensor_new(t, 6);
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
            tensor_free(&y);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&at_);
            tensor_free(&bt);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cosine_similarity),
        cmocka_unit_test(test_cross),
        cmocka_unit_test(test_vector_products_match_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
