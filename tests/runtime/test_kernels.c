/*
 * test_kernels.c - every kernel x dtype against an oracle computed in double
 * (long double where an f64 kernel accumulates).
 *
 * Conventions:
 *  - Inputs are generated, rounded into the storage dtype, and read back, so
 *    the oracle sees exactly the kernel's inputs; it then computes the exact
 *    (double) result from them. For f64 kernels, whose results are doubles
 *    themselves, sums are accumulated in long double (64-bit significand
 *    on x86-64) so that the oracle's own error stays below the bound.
 *  - Error bound (close_to): an output y of dtype T is correct if
 *        |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 *    where u_T is T's unit roundoff (2^-53 for f64, 2^-24 for f32, 2^-8 for
 *    bf16, 2^-11 for f16) for the one final rounding to T, acc bounds the
 *    error of the evaluation in the compute type, f32 (f64 for f64; each
 *    test derives it: roughly the number of dependent operations times
 *    u_acc = 2^-24 (2^-53) times the sum of the magnitudes involved; the
 *    (1 + u_T) is the final rounding applied to that error), and floor_T is
 *    half T's smallest subnormal, for results that land among T's
 *    subnormals (for f64 the whole smallest subnormal: the oracle, a
 *    double, has rounded too). A kernel accumulating in T instead of f32,
 *    or rounding twice, misses this bound on the larger shapes; an f64
 *    kernel computing in f32 misses it everywhere.
 *  - Every kernel runs through the public table (amp_<op>_<T>, whatever
 *    AMPRT_ISA selected) and the reference table (amp_ref_<op>_<T>); both must
 *    meet the bound, and when the active set is "ref" they must agree bit
 *    for bit. CI runs this program under each forced AMPRT_ISA.
 *  - Buffers are malloc'ed with exactly their element count, so that
 *    AddressSanitizer builds catch any read or write past an edge shape.
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_RNG_SEED 0x2545f4914f6cdd1dull
#define KTU_F64_FLOOR 0x1p-1074L /* not half: see the file comment */
#include "kernel_test_util.h"

/* Values away from zero, either sign, for divisors. */
static tensor tensor_random_nonzero(amp_dtype t, size_t n)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, uniform(0.5, 4.0) * (uniform(0.0, 1.0) < 0.5 ? -1.0 : 1.0));
    return x;
}

/* ---- Same-shape binary ops -------------------------------------------------- */

typedef enum { ADD, SUB, MUL, DIV } binop;
static const char *const binop_name[] = { "add", "sub", "mul", "div" };

static double apply(binop op, double a, double b)
{
    switch (op) {
    case ADD: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    case DIV: return a / b;
    }
    return 0.0;
}

static void run_binary(const amp_kernel_table *k, binop op, size_t n, const tensor *a, const tensor *b, tensor *y)
{
    switch (op) {
    case ADD: KCALL(k, y->t, add, n, a->data, b->data, y->data); break;
    case SUB: KCALL(k, y->t, sub, n, a->data, b->data, y->data); break;
    case MUL: KCALL(k, y->t, mul, n, a->data, b->data, y->data); break;
    case DIV: KCALL(k, y->t, div, n, a->data, b->data, y->data); break;
    }
}

/* One f32 operation: acc = 2^-24 |result|. Also: y aliasing a, and b. */
static void check_binary(amp_dtype t, binop op, const tensor *a, const tensor *b)
{
    size_t n = a->n;
    tensor y[NTABLES];
    for (int e = 0; e < NTABLES; e++) {
        y[e] = tensor_new(t, n);
        run_binary(tables[e], op, n, a, b, &y[e]);
        for (size_t i = 0; i < n; i++) {
            double o = apply(op, get(a, i), get(b, i));
            expect_close(&y[e], i, o, u_acc(t) * (double)finite_or_zero(fabs(o)), binop_name[op]);
        }
    }
    expect_public_equals_ref(&y[0], &y[1]);
    for (int which = 0; which < 2; which++) {
        tensor in_place = tensor_copy(which ? b : a);
        run_binary(tables[0], op, n, which ? a : &in_place, which ? &in_place : b, &in_place);
        assert_memory_equal(in_place.data, y[0].data, n * amp_dtype_size(t));
        tensor_free(&in_place);
    }
    tensor_free(&y[0]);
    tensor_free(&y[1]);
}

static void test_binary_same_shape(void **state)
{
    static const size_t sizes[] = { 0, 1, 7, 1000 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int op = ADD; op <= DIV; op++) {
                tensor a = tensor_random(dtypes[d], sizes[s], -4.0, 4.0);
                tensor b = op == DIV ? tensor_random_nonzero(dtypes[d], sizes[s])
                                     : tensor_random(dtypes[d], sizes[s], -4.0, 4.0);
                check_binary(dtypes[d], (binop)op, &a, &b);
                tensor_free(&a);
                tensor_free(&b);
            }
}

/* IEEE special values, in every pair: infinities, NaN, signed zeros, the
 * smallest subnormal and the largest finite value of each dtype (overflow,
 * underflow, inf - inf, 0/0, x/0). */
#define NSPECIAL 10

static tensor special_values(amp_dtype t, int first_operand)
{
    const double v[NSPECIAL] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.5, underflow_floor(t) * 2.0,
                                 max_finite(t), 3.0 };
    tensor x = tensor_new(t, NSPECIAL * NSPECIAL);
    for (int i = 0; i < NSPECIAL; i++)
        for (int j = 0; j < NSPECIAL; j++)
            set(&x, (size_t)(i * NSPECIAL + j), first_operand ? v[i] : v[j]);
    return x;
}

static void test_binary_special_values(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int op = ADD; op <= DIV; op++) {
            tensor a = special_values(dtypes[d], 1), b = special_values(dtypes[d], 0);
            check_binary(dtypes[d], (binop)op, &a, &b);
            tensor_free(&a);
            tensor_free(&b);
        }
}

/* ---- Unary ops ---------------------------------------------------------- */

static void test_neg_and_relu(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = special_values(t, 1), x2 = tensor_random(t, 257, -3.0, 3.0);
        const tensor *inputs[2] = { &x, &x2 };
        for (int in = 0; in < 2; in++) {
            const tensor *a = inputs[in];
            tensor neg[NTABLES], relu[NTABLES], in_place = tensor_copy(a);
            for (int e = 0; e < NTABLES; e++) {
                neg[e] = tensor_new(t, a->n);
                relu[e] = tensor_new(t, a->n);
                KCALL(tables[e], t, neg, a->n, a->data, neg[e].data);
                KCALL(tables[e], t, relu, a->n, a->data, relu[e].data);
                for (size_t i = 0; i < a->n; i++) {
                    double v = get(a, i), r = get(&relu[e], i);
                    /* Both are exact: no bound. */
                    expect_close(&neg[e], i, -v, 0.0, "neg");
                    expect_close(&relu[e], i, v < 0 ? 0.0 : v, 0.0, "relu");
                    if (!isnan(v))
                        assert_true(!signbit(get(&neg[e], i)) == !!signbit(v));
                    /* PyTorch's clamp_min(x, 0) returns x when x < 0 is false:
                     * -0 stays -0, +0 stays +0. */
                    if (v == 0.0)
                        assert_true(!signbit(r) == !signbit(v));
                }
            }
            expect_public_equals_ref(&neg[0], &neg[1]);
            expect_public_equals_ref(&relu[0], &relu[1]);
            KCALL(tables[0], t, relu, a->n, in_place.data, in_place.data); /* y == x */
            assert_memory_equal(in_place.data, relu[0].data, a->n * amp_dtype_size(t));
            KCALL(tables[0], t, neg, a->n, in_place.data, in_place.data);
            KCALL(tables[0], t, neg, a->n, in_place.data, in_place.data);
            assert_memory_equal(in_place.data, relu[0].data, a->n * amp_dtype_size(t));
            for (int e = 0; e < NTABLES; e++) {
                tensor_free(&neg[e]);
                tensor_free(&relu[e]);
            }
            tensor_free(&in_place);
        }
        tensor_free(&x);
        tensor_free(&x2);
    }
}

/* ---- Tensor-scalar ops ------------------------------------------------- */

typedef enum { S_ADD, S_SUB, S_MUL, S_DIV, S_RSUB, S_RDIV } scalar_op;
static const char *const scalar_op_name[] = { "add_scalar", "sub_scalar", "mul_scalar",
                                              "div_scalar", "rsub_scalar", "rdiv_scalar" };

static void run_scalar(const amp_kernel_table *k, scalar_op op, const tensor *a, float s, tensor *y)
{
    switch (op) {
    case S_ADD: KCALL(k, y->t, add_scalar, a->n, a->data, s, y->data); break;
    case S_SUB: KCALL(k, y->t, sub_scalar, a->n, a->data, s, y->data); break;
    case S_MUL: KCALL(k, y->t, mul_scalar, a->n, a->data, s, y->data); break;
    case S_DIV: KCALL(k, y->t, div_scalar, a->n, a->data, s, y->data); break;
    case S_RSUB: KCALL(k, y->t, rsub_scalar, a->n, a->data, s, y->data); break;
    case S_RDIV: KCALL(k, y->t, rdiv_scalar, a->n, a->data, s, y->data); break;
    }
}

static double scalar_oracle(scalar_op op, double a, double s)
{
    switch (op) {
    case S_ADD: return a + s;
    case S_SUB: return a - s;
    case S_MUL: return a * s;
    case S_DIV: return a / s;
    case S_RSUB: return s - a;
    case S_RDIV: return s / a;
    }
    return 0.0;
}

static void test_scalar_ops(void **state)
{
    /* 0.3 is not representable in any of the dtypes: the scalar is used
     * as the f32 it is, not rounded to T first. */
    static const float scalars[] = { 0.3f, -2.0f, 0.0f, INFINITY, NAN };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor a = tensor_random_nonzero(t, 300), special = special_values(t, 1);
        const tensor *inputs[2] = { &a, &special };
        for (int in = 0; in < 2; in++)
            for (size_t si = 0; si < sizeof scalars / sizeof scalars[0]; si++)
                for (int op = S_ADD; op <= S_RDIV; op++) {
                    const tensor *x = inputs[in];
                    tensor y[NTABLES], in_place = tensor_copy(x);
                    for (int e = 0; e < NTABLES; e++) {
                        y[e] = tensor_new(t, x->n);
                        run_scalar(tables[e], (scalar_op)op, x, scalars[si], &y[e]);
                        for (size_t i = 0; i < x->n; i++) {
                            double o = scalar_oracle((scalar_op)op, get(x, i), scalars[si]);
                            expect_close(&y[e], i, o, u_acc(t) * (double)finite_or_zero(fabs(o)), scalar_op_name[op]);
                        }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    run_scalar(tables[0], (scalar_op)op, &in_place, scalars[si], &in_place); /* y == a */
                    assert_memory_equal(in_place.data, y[0].data, x->n * amp_dtype_size(t));
                    tensor_free(&y[0]);
                    tensor_free(&y[1]);
                    tensor_free(&in_place);
                }
        tensor_free(&a);
        tensor_free(&special);
    }
}

/* ---- Broadcasting binary ops ------------------------------------------- */

typedef struct {
    const char *what;
    int ndim;
    int64_t shape[8];
    int64_t a_stride[8], b_stride[8];
    size_t a_len, b_len; /* elements the operands span */
    int a_like_y;        /* a is laid out as y (not broadcast): y may alias it */
} bcast_case;

static const bcast_case bcast_cases[] = {
    { "0-d scalars", 0, { 0 }, { 0 }, { 0 }, 1, 1, 1 },
    { "same shape, contiguous", 2, { 3, 4 }, { 4, 1 }, { 4, 1 }, 12, 12, 1 },
    { "row vector b broadcast over rows", 2, { 3, 4 }, { 4, 1 }, { 0, 1 }, 12, 4, 1 },
    { "column b [3,1] and row a [1,4]", 2, { 3, 4 }, { 0, 1 }, { 1, 0 }, 4, 3, 0 },
    { "b [1,3,1] against a [2,3,5]", 3, { 2, 3, 5 }, { 15, 5, 1 }, { 0, 1, 0 }, 30, 3, 1 },
    { "a transposed (non-contiguous)", 2, { 3, 2 }, { 1, 3 }, { 2, 1 }, 6, 6, 0 },
    { "both fully broadcast scalars", 3, { 2, 2, 3 }, { 0, 0, 0 }, { 0, 0, 0 }, 1, 1, 0 },
    { "a zero-size dim: nothing to do", 3, { 2, 0, 3 }, { 0, 3, 1 }, { 0, 3, 1 }, 1, 1, 0 },
    { "8 dims, mixed broadcasting", 8, { 2, 1, 2, 3, 1, 2, 2, 2 }, { 48, 48, 24, 8, 8, 4, 2, 1 },
      { 0, 0, 6, 2, 2, 1, 0, 0 }, 96, 12, 1 },
};

static void run_bcast(const amp_kernel_table *k, binop op, const bcast_case *c, const tensor *a, const tensor *b,
                      tensor *y)
{
    switch (op) {
    case ADD: KCALL(k, y->t, add_bcast, c->ndim, c->shape, a->data, c->a_stride, b->data, c->b_stride, y->data); break;
    case SUB: KCALL(k, y->t, sub_bcast, c->ndim, c->shape, a->data, c->a_stride, b->data, c->b_stride, y->data); break;
    case MUL: KCALL(k, y->t, mul_bcast, c->ndim, c->shape, a->data, c->a_stride, b->data, c->b_stride, y->data); break;
    case DIV: KCALL(k, y->t, div_bcast, c->ndim, c->shape, a->data, c->a_stride, b->data, c->b_stride, y->data); break;
    }
}

/* The definition: flat output index -> multi-index (last dim fastest) ->
 * each operand's offset through its strides. */
static void bcast_offsets(const bcast_case *c, size_t flat, size_t *a_off, size_t *b_off)
{
    int64_t rest = (int64_t)flat, ao = 0, bo = 0;
    for (int d = c->ndim - 1; d >= 0; d--) {
        int64_t idx = rest % c->shape[d];
        rest /= c->shape[d];
        ao += idx * c->a_stride[d];
        bo += idx * c->b_stride[d];
    }
    *a_off = (size_t)ao;
    *b_off = (size_t)bo;
}

static void test_bcast(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof bcast_cases / sizeof bcast_cases[0]; ci++)
            for (int op = ADD; op <= DIV; op++) {
                const bcast_case *c = &bcast_cases[ci];
                amp_dtype t = dtypes[d];
                size_t n = 1;
                tensor a = tensor_random(t, c->a_len, -4.0, 4.0);
                tensor b = tensor_random_nonzero(t, c->b_len);
                tensor y[NTABLES];
                for (int k = 0; k < c->ndim; k++)
                    n *= (size_t)c->shape[k];
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, n);
                    run_bcast(tables[e], (binop)op, c, &a, &b, &y[e]);
                    for (size_t i = 0; i < n; i++) {
                        size_t ao, bo;
                        double o;
                        bcast_offsets(c, i, &ao, &bo);
                        o = apply((binop)op, get(&a, ao), get(&b, bo));
                        expect_close(&y[e], i, o, u_acc(t) * fabs(o), c->what);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                /* y may alias an operand that is not broadcast. */
                if (c->a_like_y) {
                    tensor in_place = tensor_copy(&a);
                    run_bcast(tables[0], (binop)op, c, &in_place, &b, &in_place);
                    assert_memory_equal(in_place.data, y[0].data, n * amp_dtype_size(t));
                    tensor_free(&in_place);
                }
                tensor_free(&a);
                tensor_free(&b);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* ---- linear and matmul ------------------------------------------------ */

/* A dot product of K products in f32, plus one more addition (the bias):
 * acc = (K + 2) 2^-24 sum|terms|, the classic gamma_n bound with a little
 * room for the products' own rounding. */
static double dot_bound(amp_dtype t, int64_t K, long double sum_abs)
{
    return (double)(K + 2) * u_acc(t) * (double)sum_abs;
}

typedef struct {
    int64_t M, N, K;
} mnk;

static const mnk linear_shapes[] = {
    { 1, 1, 1 }, { 3, 5, 7 }, { 4, 3, 0 }, { 0, 3, 2 }, { 2, 0, 3 }, { 1, 8, 64 }, { 16, 1, 33 }, { 5, 6, 300 },
};

static void test_linear(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t s = 0; s < sizeof linear_shapes / sizeof linear_shapes[0]; s++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                amp_dtype t = dtypes[d];
                int64_t M = linear_shapes[s].M, N = linear_shapes[s].N, K = linear_shapes[s].K;
                tensor x = tensor_random(t, (size_t)(M * K), -1.0, 1.0);
                tensor w = tensor_random(t, (size_t)(N * K), -1.0, 1.0);
                tensor bias = tensor_random(t, (size_t)N, -1.0, 1.0);
                tensor y[NTABLES];
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, (size_t)(M * N));
                    KCALL(tables[e], t, linear, M, N, K, x.data, w.data, with_bias ? bias.data : NULL, y[e].data);
                    for (int64_t m = 0; m < M; m++)
                        for (int64_t n = 0; n < N; n++) {
                            long double o = with_bias ? get(&bias, (size_t)n) : 0.0, sum_abs = fabsl(o);
                            for (int64_t k = 0; k < K; k++) {
                                long double p = (long double)get(&x, (size_t)(m * K + k)) * get(&w, (size_t)(n * K + k));
                                o += p;
                                sum_abs += fabsl(p);
                            }
                            expect_close(&y[e], (size_t)(m * N + n), (double)o, dot_bound(t, K, sum_abs), "linear");
                        }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                tensor_free(&x);
                tensor_free(&w);
                tensor_free(&bias);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* K = 0: y is exactly the bias (or zero) even where it was garbage. */
static void test_linear_k0_is_bias(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor bias = tensor_random(t, 3, -1.0, 1.0), y = tensor_random(t, 6, 5.0, 6.0);
        KCALL(&public_table, t, linear, 2, 3, 0, NULL, NULL, bias.data, y.data);
        for (size_t i = 0; i < 6; i++)
            assert_true(get(&y, i) == get(&bias, i % 3));
        KCALL(&public_table, t, linear, 2, 3, 0, NULL, NULL, NULL, y.data);
        for (size_t i = 0; i < 6; i++)
            assert_true(get(&y, i) == 0.0);
        tensor_free(&bias);
        tensor_free(&y);
    }
}

typedef struct {
    int64_t batch, M, N, K;
    int a_shared, b_shared; /* batch stride 0: one matrix for every batch */
} matmul_case;

static const matmul_case matmul_cases[] = {
    { 1, 1, 1, 1, 0, 0 }, { 3, 4, 5, 6, 0, 0 }, { 3, 4, 5, 6, 1, 0 }, { 3, 4, 5, 6, 0, 1 },
    { 2, 3, 2, 0, 0, 0 }, { 0, 3, 3, 3, 0, 0 }, { 2, 1, 7, 9, 0, 1 }, { 2, 7, 1, 9, 1, 0 },
    { 1, 2, 2, 250, 0, 0 },
};

static void test_matmul(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof matmul_cases / sizeof matmul_cases[0]; ci++) {
            const matmul_case *c = &matmul_cases[ci];
            amp_dtype t = dtypes[d];
            int64_t as = c->a_shared ? 0 : c->M * c->K, bs = c->b_shared ? 0 : c->K * c->N;
            size_t a_len = (size_t)(c->a_shared ? c->M * c->K : c->batch * c->M * c->K);
            size_t b_len = (size_t)(c->b_shared ? c->K * c->N : c->batch * c->K * c->N);
            tensor a = tensor_random(t, a_len, -1.0, 1.0), b = tensor_random(t, b_len, -1.0, 1.0);
            tensor y[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, (size_t)(c->batch * c->M * c->N));
                KCALL(tables[e], t, matmul, c->batch, c->M, c->N, c->K, a.data, as, b.data, bs, y[e].data);
                for (int64_t i = 0; i < c->batch; i++)
                    for (int64_t m = 0; m < c->M; m++)
                        for (int64_t n = 0; n < c->N; n++) {
                            long double o = 0.0, sum_abs = 0.0;
                            for (int64_t k = 0; k < c->K; k++) {
                                long double p = (long double)get(&a, (size_t)(i * as + m * c->K + k)) *
                                                get(&b, (size_t)(i * bs + k * c->N + n));
                                o += p;
                                sum_abs += fabsl(p);
                            }
                            expect_close(&y[e], (size_t)((i * c->M + m) * c->N + n), (double)o,
                                         dot_bound(t, c->K, sum_abs), "matmul");
                        }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- softmax and log_softmax ------------------------------------------- */

typedef struct {
    const char *what;
    int64_t outer, dim, inner;
    const double *values; /* NULL: random in [-4, 4] */
} softmax_case;

static const double big_values[] = { 11000.0, 10995.0, 10990.0, -11000.0, 10999.0, 0.0 };
static const double with_neg_inf[] = { -INFINITY, 0.5, -INFINITY, 2.0 };
static const double all_neg_inf[] = { -INFINITY, -INFINITY, -INFINITY, 1.0, 2.0, 3.0 };
static const double very_negative[] = { -1000.0, -1001.0, -1003.0 };

static const softmax_case softmax_cases[] = {
    { "one row", 1, 5, 1, NULL },
    { "strided axis (inner 2)", 3, 4, 2, NULL },
    { "dim 1: softmax 1, log_softmax 0", 2, 1, 3, NULL },
    { "outer 0: nothing", 0, 3, 2, NULL },
    { "dim 0: nothing", 2, 0, 2, NULL },
    { "long row", 1, 1000, 1, NULL },
    { "large values: exp would overflow without the max", 1, 6, 1, big_values },
    { "-inf entries get 0 (log: -inf)", 1, 4, 1, with_neg_inf },
    { "all -inf row is NaN, like PyTorch; the next row is fine", 2, 3, 1, all_neg_inf },
    { "very negative row: every exp(x) underflows, exp(x - max) does not", 1, 3, 1, very_negative },
};

static void check_softmax(const softmax_case *c, const tensor *x, const tensor *y, int take_log)
{
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t in = 0; in < c->inner; in++) {
            int64_t base = o * c->dim * c->inner + in;
            long double max = -INFINITY, sum = 0.0, oracle;
            double u = u_acc(y->t);
            for (int64_t d = 0; d < c->dim; d++)
                max = fmaxl(max, get(x, (size_t)(base + d * c->inner)));
            for (int64_t d = 0; d < c->dim; d++)
                sum += expl(get(x, (size_t)(base + d * c->inner)) - max);
            for (int64_t d = 0; d < c->dim; d++) {
                size_t i = (size_t)(base + d * c->inner);
                double dist = (double)(get(x, i) - max), acc;
                /* f32 error (u = 2^-24; 2^-53 for f64): x - max costs u |dist|
                 * (which exp turns into a relative error), expf about an ulp,
                 * and the sum of dim terms dim u relative (a term's own |dist|
                 * error is scaled by exp(-|dist|), so it adds at most u / e);
                 * 2 dim + 6 covers them. log_softmax adds logf's ulp of
                 * log(sum) and the final subtraction's rounding. */
                double rel = (fabs((double)finite_or_zero(dist)) + 2.0 * (double)c->dim + 6.0) * u;
                if (max == -INFINITY)
                    oracle = NAN; /* -inf - -inf */
                else if (take_log)
                    oracle = (long double)dist - logl(sum);
                else
                    oracle = expl((long double)dist) / sum;
                if (take_log)
                    acc = rel + (2.0 * fabs((double)logl(sum)) + fabs((double)finite_or_zero((double)oracle))) * u;
                else
                    acc = rel * (double)finite_or_zero((double)oracle);
                expect_close(y, i, (double)oracle, acc, take_log ? "log_softmax" : "softmax");
            }
        }
}

static void test_softmax(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof softmax_cases / sizeof softmax_cases[0]; ci++)
            for (int take_log = 0; take_log < 2; take_log++) {
                const softmax_case *c = &softmax_cases[ci];
                amp_dtype t = dtypes[d];
                size_t n = (size_t)(c->outer * c->dim * c->inner);
                tensor x = tensor_random(t, n, -4.0, 4.0), y[NTABLES], in_place;
                if (c->values != NULL)
                    for (size_t i = 0; i < n; i++)
                        set(&x, i, c->values[i]);
                in_place = tensor_copy(&x);
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, n);
                    if (take_log)
                        KCALL(tables[e], t, log_softmax, c->outer, c->dim, c->inner, x.data, y[e].data);
                    else
                        KCALL(tables[e], t, softmax, c->outer, c->dim, c->inner, x.data, y[e].data);
                    check_softmax(c, &x, &y[e], take_log);
                }
                expect_public_equals_ref(&y[0], &y[1]);
                if (take_log) /* y == x */
                    KCALL(tables[0], t, log_softmax, c->outer, c->dim, c->inner, in_place.data, in_place.data);
                else
                    KCALL(tables[0], t, softmax, c->outer, c->dim, c->inner, in_place.data, in_place.data);
                assert_memory_equal(in_place.data, y[0].data, n * amp_dtype_size(t));
                tensor_free(&x);
                tensor_free(&in_place);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* Softmax rows sum to 1 and are all finite for large inputs (the case a
 * naive exp would overflow). */
static void test_softmax_large_values_sum_to_one(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_new(t, 6), y = tensor_new(t, 6);
        double sum = 0.0;
        for (size_t i = 0; i < 6; i++)
            set(&x, i, big_values[i]);
        KCALL(&public_table, t, softmax, 1, 6, 1, x.data, y.data);
        for (size_t i = 0; i < 6; i++) {
            assert_true(isfinite(get(&y, i)));
            sum += get(&y, i);
        }
        assert_true(fabs(sum - 1.0) <= 6.0 * unit_roundoff(t));
        tensor_free(&x);
        tensor_free(&y);
    }
}

/* ---- nll_loss ------------------------------------------------------------ */

#define NLL_N 6
#define NLL_C 4

typedef struct {
    const char *what;
    int64_t target[NLL_N];
    int64_t ignore_index;
    int weighted;
} nll_case;

static const nll_case nll_cases[] = {
    { "plain", { 0, 3, 1, 2, 2, 0 }, -100, 0 },
    { "weighted", { 0, 3, 1, 2, 2, 0 }, -100, 1 },
    { "ignore_index -100 skips rows", { 0, -100, 1, 2, -100, 3 }, -100, 1 },
    { "ignore_index may be a valid class", { 0, 1, 1, 2, 3, 1 }, 1, 1 },
    { "all rows ignored: mean is NaN", { -100, -100, -100, -100, -100, -100 }, -100, 1 },
};

/* Oracle for one case and reduction; returns the expected output count. */
static size_t nll_oracle(const nll_case *c, int reduction, const tensor *logp, const tensor *w, double *oracle,
                         double *acc)
{
    long double total = 0.0, wsum = 0.0, total_abs = 0.0, wsum_abs = 0.0;
    double u = u_acc(logp->t);
    for (size_t n = 0; n < NLL_N; n++) {
        int64_t t = c->target[n];
        double wt, loss;
        if (t == c->ignore_index) {
            oracle[n] = 0.0;
            acc[n] = 0.0;
            continue;
        }
        wt = c->weighted ? get(w, (size_t)t) : 1.0;
        loss = -wt * get(logp, n * NLL_C + (size_t)t);
        oracle[n] = loss;
        acc[n] = u * fabs(loss); /* the f32 product */
        total += loss;
        wsum += wt;
        total_abs += fabs(loss);
        wsum_abs += fabs(wt);
    }
    if (reduction == AMP_REDUCTION_NONE)
        return NLL_N;
    if (reduction == AMP_REDUCTION_SUM) {
        oracle[0] = (double)total;
        acc[0] = (NLL_N + 1) * u * (double)total_abs;
    } else {
        /* f32 numerator and denominator each carry an (N + 1) 2^-24
         * relative-to-magnitude error; the quotient adds their effects. */
        oracle[0] = (double)(total / wsum);
        acc[0] = isfinite(oracle[0])
                     ? 1.01 * (NLL_N + 1) * u * (double)((total_abs + fabsl(oracle[0]) * wsum_abs) / fabsl(wsum)) +
                           u * fabs(oracle[0])
                     : 0.0;
    }
    return 1;
}

static void test_nll_loss(void **state)
{
    static const int reductions[] = { AMP_REDUCTION_NONE, AMP_REDUCTION_MEAN, AMP_REDUCTION_SUM };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof nll_cases / sizeof nll_cases[0]; ci++)
            for (int r = 0; r < 3; r++) {
                const nll_case *c = &nll_cases[ci];
                amp_dtype t = dtypes[d];
                tensor logp = tensor_random(t, NLL_N * NLL_C, -5.0, 0.0);
                tensor w = tensor_random(t, NLL_C, 0.25, 2.0);
                tensor out[NTABLES];
                double oracle[NLL_N], acc[NLL_N];
                size_t n_out = nll_oracle(c, reductions[r], &logp, &w, oracle, acc);
                for (int e = 0; e < NTABLES; e++) {
                    int status;
                    out[e] = tensor_random(t, n_out, 7.0, 8.0); /* garbage the kernel must overwrite */
                    KCALL_STATUS(status, tables[e], t, nll_loss, NLL_N, NLL_C, logp.data, c->target,
                                 c->weighted ? w.data : NULL, c->ignore_index, reductions[r], out[e].data);
                    assert_int_equal(status, AMP_OK);
                    for (size_t i = 0; i < n_out; i++)
                        expect_close(&out[e], i, oracle[i], acc[i], c->what);
                }
                expect_public_equals_ref(&out[0], &out[1]);
                tensor_free(&logp);
                tensor_free(&w);
                tensor_free(&out[0]);
                tensor_free(&out[1]);
            }
}

/* All rows ignored (or none): mean is 0/0 = NaN, sum is 0, none all zeros. */
static void test_nll_loss_all_ignored(void **state)
{
    const int64_t target[3] = { -1, -1, -1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor logp = tensor_random(t, 6, -3.0, 0.0), out = tensor_random(t, 3, 7.0, 8.0);
        KCALL(&public_table, t, nll_loss, 0, 2, NULL, NULL, NULL, -1, AMP_REDUCTION_MEAN, out.data);
        assert_true(isnan(get(&out, 0))); /* no rows at all: 0/0 too */
        KCALL(&public_table, t, nll_loss, 3, 2, logp.data, target, NULL, -1, AMP_REDUCTION_MEAN, out.data);
        assert_true(isnan(get(&out, 0)));
        KCALL(&public_table, t, nll_loss, 3, 2, logp.data, target, NULL, -1, AMP_REDUCTION_SUM, out.data);
        assert_true(get(&out, 0) == 0.0);
        KCALL(&public_table, t, nll_loss, 3, 2, logp.data, target, NULL, -1, AMP_REDUCTION_NONE, out.data);
        for (size_t i = 0; i < 3; i++)
            assert_true(get(&out, i) == 0.0);
        tensor_free(&logp);
        tensor_free(&out);
    }
}

/* Errors: the status, and nothing written. */
static void test_nll_loss_errors(void **state)
{
    const int64_t too_big[3] = { 0, 2, 1 };   /* 2 == C: one past the end */
    const int64_t negative[3] = { 0, -1, 1 }; /* -1 is not ignore_index (-100) here */
    const int64_t ok[3] = { 0, 1, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            tensor logp = tensor_random(t, 6, -3.0, 0.0), out = tensor_random(t, 3, 7.0, 8.0);
            tensor before = tensor_copy(&out);
            int status;
            for (int r = AMP_REDUCTION_NONE; r <= AMP_REDUCTION_SUM; r++) {
                KCALL_STATUS(status, k, t, nll_loss, 3, 2, logp.data, too_big, NULL, -100, r, out.data);
                assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
                KCALL_STATUS(status, k, t, nll_loss, 3, 2, logp.data, negative, NULL, -100, r, out.data);
                assert_int_equal(status, AMP_ERR_TARGET_OUT_OF_RANGE);
            }
            KCALL_STATUS(status, k, t, nll_loss, -1, 2, logp.data, ok, NULL, -100, AMP_REDUCTION_SUM, out.data);
            assert_int_equal(status, AMP_ERR_BAD_DIM);
            KCALL_STATUS(status, k, t, nll_loss, 3, -2, logp.data, ok, NULL, -100, AMP_REDUCTION_SUM, out.data);
            assert_int_equal(status, AMP_ERR_BAD_DIM);
            KCALL_STATUS(status, k, t, nll_loss, 3, 2, logp.data, ok, NULL, -100, 3, out.data);
            assert_int_equal(status, AMP_ERR_BAD_REDUCTION);
            KCALL_STATUS(status, k, t, nll_loss, 3, 2, NULL, ok, NULL, -100, AMP_REDUCTION_SUM, out.data);
            assert_int_equal(status, AMP_ERR_NULL_ARG);
            KCALL_STATUS(status, k, t, nll_loss, 1, 2, NULL, ok, NULL, -100, AMP_REDUCTION_SUM, out.data);
            assert_int_equal(status, AMP_ERR_NULL_ARG); /* one row is enough to need logp */
            KCALL_STATUS(status, k, t, nll_loss, 3, 2, logp.data, NULL, NULL, -100, AMP_REDUCTION_SUM, out.data);
            assert_int_equal(status, AMP_ERR_NULL_ARG);
            KCALL_STATUS(status, k, t, nll_loss, 3, 2, logp.data, ok, NULL, -100, AMP_REDUCTION_NONE, NULL);
            assert_int_equal(status, AMP_ERR_NULL_ARG);
            KCALL_STATUS(status, k, t, nll_loss, 0, 2, NULL, NULL, NULL, -100, AMP_REDUCTION_SUM, NULL);
            assert_int_equal(status, AMP_ERR_NULL_ARG); /* a reduction always writes out[0] */
            assert_memory_equal(out.data, before.data, 3 * amp_dtype_size(t));

            /* No rows: nothing to read; NONE writes nothing, SUM writes 0. */
            KCALL_STATUS(status, k, t, nll_loss, 0, 2, NULL, NULL, NULL, -100, AMP_REDUCTION_NONE, NULL);
            assert_int_equal(status, AMP_OK);
            KCALL_STATUS(status, k, t, nll_loss, 0, 2, NULL, NULL, NULL, -100, AMP_REDUCTION_SUM, out.data);
            assert_int_equal(status, AMP_OK);
            assert_true(get(&out, 0) == 0.0);
            tensor_free(&logp);
            tensor_free(&out);
            tensor_free(&before);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_same_shape),
        cmocka_unit_test(test_binary_special_values),
        cmocka_unit_test(test_neg_and_relu),
        cmocka_unit_test(test_scalar_ops),
        cmocka_unit_test(test_bcast),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_k0_is_bias),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_large_values_sum_to_one),
        cmocka_unit_test(test_nll_loss),
        cmocka_unit_test(test_nll_loss_all_ignored),
        cmocka_unit_test(test_nll_loss_errors),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
