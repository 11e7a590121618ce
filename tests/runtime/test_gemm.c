/*
 * test_gemm.c - gemm, contract, sdpa, cdist and pdist in every dtype, through
 * the public table and the reference table, against an oracle computed in
 * double from the exact (already rounded) inputs.
 *
 * Error bound, as test_kernels.c: an output y of dtype T passes if
 *     |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 * with u_T T's unit roundoff (the one final rounding), acc the evaluation
 * error each test derives from the compute type's unit roundoff (2^-24 for
 * f32/bf16/f16, which compute in float; 2^-53 for f64) and the magnitudes
 * involved, and floor_T half T's smallest subnormal.  A kernel computing
 * or accumulating in T, or rounding twice, misses it on the larger shapes.
 * Buffers are malloc'ed to their exact element count, for ASan.
 */
#define _POSIX_C_SOURCE 200809L

#define KTU_RNG_SEED 0x2545f4914f6cdd1dull
#define KTU_F64_FLOOR 0x1p-1074L /* f64: the whole smallest subnormal (the oracle is a double) */
#include "kernel_test_util.h"

/* ---- gemm ------------------------------------------------------------------- */

typedef enum { C_NONE, C_FULL, C_ROW, C_COL, C_SCALAR } c_layout;

typedef struct {
    const char *what;
    int64_t batch, M, N, K;
    int a_transposed, b_transposed; /* operand stored as its transpose */
    int a_shared, b_shared;         /* batch stride 0 */
    c_layout c;
    double alpha, beta;
    int sum_batch;
    int nan_in_c;
} gemm_case;

static const gemm_case gemm_cases[] = {
    { "mm", 1, 3, 4, 5, 0, 0, 0, 0, C_NONE, 1.0, 0.0, 0, 0 },
    { "bmm, transposed a", 3, 4, 5, 6, 1, 0, 0, 0, C_NONE, 1.0, 0.0, 0, 0 },
    { "bmm, transposed b, shared a", 3, 4, 5, 6, 0, 1, 1, 0, C_NONE, 1.0, 0.0, 0, 0 },
    { "baddbmm, full C", 2, 3, 4, 7, 1, 1, 0, 1, C_FULL, 0.5, -2.0, 0, 0 },
    { "addmm, bias row broadcast", 1, 5, 3, 4, 0, 0, 0, 0, C_ROW, 1.0, 1.0, 0, 0 },
    { "addmm, column broadcast", 1, 5, 3, 4, 0, 1, 0, 0, C_COL, 2.0, 0.25, 0, 0 },
    { "addmv", 1, 6, 1, 5, 0, 0, 0, 0, C_FULL, 1.0, 1.0, 0, 0 },
    { "addr (K = 1)", 1, 4, 3, 1, 0, 0, 0, 0, C_SCALAR, 1.5, 1.0, 0, 0 },
    { "dot", 1, 1, 1, 300, 0, 0, 0, 0, C_NONE, 1.0, 0.0, 0, 0 },
    { "beta 0 ignores NaN in C", 2, 3, 3, 3, 0, 0, 0, 0, C_FULL, 1.0, 0.0, 0, 1 },
    { "addbmm: sum over the batch", 4, 3, 2, 5, 0, 1, 0, 0, C_FULL, 1.0, 0.5, 1, 0 },
    { "sum_batch, batch 0: beta C", 0, 2, 2, 3, 0, 0, 0, 0, C_FULL, 1.0, 3.0, 1, 0 },
    { "K = 0: beta C", 2, 2, 3, 0, 0, 0, 0, 0, C_FULL, 1.0, 2.0, 0, 0 },
    { "batch 0", 0, 2, 2, 2, 0, 0, 0, 0, C_NONE, 1.0, 0.0, 0, 0 },
    { "long K", 1, 2, 2, 400, 1, 0, 0, 0, C_FULL, 1.0, 1.0, 0, 0 },
};

static void test_gemm(void **state)
{
    (void)state;
    for (int dt = 0; dt < NDTYPES; dt++)
        for (size_t ci = 0; ci < sizeof gemm_cases / sizeof gemm_cases[0]; ci++) {
            const gemm_case *g = &gemm_cases[ci];
            amp_dtype t = dtypes[dt];
            amp_gemm_desc d;
            memset(&d, 0, sizeof d);
            d.batch = g->batch;
            d.M = g->M;
            d.N = g->N;
            d.K = g->K;
            d.alpha = g->alpha;
            d.beta = g->beta;
            d.sum_batch = g->sum_batch;
            int64_t a_batches = g->a_shared ? 1 : g->batch, b_batches = g->b_shared ? 1 : g->batch;
            /* A_b[m][k]: row-major [M][K], or stored as [K][M]. */
            d.a_stride[0] = g->a_shared ? 0 : g->M * g->K;
            d.a_stride[1] = g->a_transposed ? 1 : g->K;
            d.a_stride[2] = g->a_transposed ? g->M : 1;
            d.b_stride[0] = g->b_shared ? 0 : g->K * g->N;
            d.b_stride[1] = g->b_transposed ? 1 : g->N;
            d.b_stride[2] = g->b_transposed ? g->K : 1;
            size_t c_len = 0;
            int64_t c_batches = g->sum_batch ? 1 : g->batch;
            switch (g->c) {
            case C_NONE: break;
            case C_FULL:
                c_len = (size_t)(c_batches * g->M * g->N);
                d.c_stride[0] = g->sum_batch ? 0 : g->M * g->N;
                d.c_stride[1] = g->N;
                d.c_stride[2] = 1;
                break;
            case C_ROW: c_len = (size_t)g->N; d.c_stride[2] = 1; break;
            case C_COL: c_len = (size_t)g->M; d.c_stride[1] = 1; break;
            case C_SCALAR: c_len = 1; break;
            }
            tensor a = tensor_random(t, (size_t)(a_batches * g->M * g->K), -1.0, 1.0);
            tensor b = tensor_random(t, (size_t)(b_batches * g->K * g->N), -1.0, 1.0);
            tensor c = tensor_random(t, c_len, -2.0, 2.0);
            if (g->nan_in_c)
                for (size_t i = 0; i < c_len; i++)
                    set(&c, i, i % 2 ? NAN : INFINITY);
            size_t y_len = (size_t)((g->sum_batch ? 1 : g->batch) * g->M * g->N);
            tensor y[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, y_len);
                KCALL(tables[e], t, gemm, &d, a.data, b.data, g->c == C_NONE ? NULL : c.data, y[e].data);
                for (int64_t ob = 0; ob < (g->sum_batch ? 1 : g->batch); ob++)
                    for (int64_t m = 0; m < g->M; m++)
                        for (int64_t n = 0; n < g->N; n++) {
                            double dot = 0.0, sum_abs = 0.0, terms = 0.0;
                            for (int64_t sb = 0; sb < (g->sum_batch ? g->batch : 1); sb++) {
                                int64_t bi = g->sum_batch ? sb : ob;
                                for (int64_t k = 0; k < g->K; k++) {
                                    double p = get(&a, (size_t)(bi * d.a_stride[0] + m * d.a_stride[1] +
                                                                k * d.a_stride[2])) *
                                               get(&b, (size_t)(bi * d.b_stride[0] + k * d.b_stride[1] +
                                                                n * d.b_stride[2]));
                                    dot += p;
                                    sum_abs += fabs(p);
                                    terms += 1.0;
                                }
                            }
                            double o = g->alpha * dot, mag = fabs(g->alpha) * sum_abs;
                            if (g->c != C_NONE && g->beta != 0.0) {
                                double cv = get(&c, (size_t)((g->sum_batch ? 0 : ob) * d.c_stride[0] +
                                                             m * d.c_stride[1] + n * d.c_stride[2]));
                                o += g->beta * cv;
                                mag += fabs(g->beta * cv);
                            }
                            double acc = (terms + 3.0) * u_acc(t) * mag;
                            expect_close(&y[e], (size_t)((ob * g->M + m) * g->N + n), o, acc, g->what);
                        }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&c);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* The accumulation is in float for bf16: 256 ones plus 1 is 257 in float,
 * but 256 in bf16 (a bf16 accumulator would stick at 256). */
static void test_gemm_accumulates_in_f32(void **state)
{
    (void)state;
    amp_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.batch = 1;
    d.M = d.N = 1;
    d.K = 258;
    d.a_stride[2] = d.b_stride[1] = 1;
    d.alpha = 1.0;
    tensor a = tensor_new(AMP_BF16, 258), b = tensor_new(AMP_BF16, 258), y = tensor_new(AMP_BF16, 1);
    for (size_t i = 0; i < 258; i++) {
        set(&a, i, 1.0);
        set(&b, i, i < 2 ? 0.5 : 1.0); /* 0.5 + 0.5 + 256 ones = 257: rounds to 256 once */
    }
    for (int e = 0; e < NTABLES; e++) {
        KCALL(tables[e], AMP_BF16, gemm, &d, a.data, b.data, NULL, y.data);
        assert_true(get(&y, 0) == 256.0);
    }
    /* With sum_batch over two batches of 129 terms the same holds. */
    d.K = 129;
    d.batch = 2;
    d.sum_batch = 1;
    d.a_stride[0] = d.b_stride[0] = 129;
    for (size_t i = 0; i < 258; i++)
        set(&b, i, i % 129 == 0 ? 1.5 : 1.0); /* 2 * 129 + 1 = 259 -> bf16 260 */
    for (int e = 0; e < NTABLES; e++) {
        KCALL(tables[e], AMP_BF16, gemm, &d, a.data, b.data, NULL, y.data);
        assert_true(get(&y, 0) == 260.0);
    }
    tensor_free(&a);
    tensor_free(&b);
    tensor_free(&y);
}

/* ---- contract --------------------------------------------------------------- */

typedef struct {
    const char *what;
    amp_contract_desc d;
    size_t len[AMP_CONTRACT_MAX_OPERANDS];
} contract_case;

static double contract_oracle(const amp_contract_desc *d, const tensor *ops, int64_t out_index, double *sum_abs)
{
    int64_t idx[AMP_CONTRACT_MAX_INDEX];
    int64_t rest = out_index;
    for (int i = d->n_out - 1; i >= 0; i--) {
        idx[i] = rest % d->size[i];
        rest /= d->size[i];
    }
    int64_t n_sum = 1;
    for (int i = d->n_out; i < d->n_index; i++)
        n_sum *= d->size[i];
    double total = 0.0;
    *sum_abs = 0.0;
    for (int64_t s = 0; s < n_sum; s++) {
        rest = s;
        for (int i = d->n_index - 1; i >= d->n_out; i--) {
            idx[i] = rest % d->size[i];
            rest /= d->size[i];
        }
        double p = 1.0;
        for (int k = 0; k < d->n_operands; k++) {
            int64_t off = 0;
            for (int i = 0; i < d->n_index; i++)
                off += d->stride[k][i] * idx[i];
            p *= get(&ops[k], (size_t)off);
        }
        total += p;
        *sum_abs += fabs(p);
    }
    return total;
}

static void test_contract(void **state)
{
    /* Index order: outputs first, then summed. */
    static const contract_case cases[] = {
        /* bilinear: y[b,o] = sum_ij x1[b,i] W[o,i,j] x2[b,j] */
        { "bilinear", { 4, 2, 3, { 3, 4, 5, 6 }, { { 5, 0, 1, 0 }, { 0, 30, 6, 1 }, { 6, 0, 0, 1 } } },
          { 15, 120, 18 } },
        /* y[n,m] = sum_k a[m,k] b[k,n]: a transposed output */
        { "mm into a transposed output", { 3, 2, 2, { 4, 3, 5 }, { { 0, 5, 1 }, { 1, 0, 4 } } }, { 15, 20 } },
        /* trace: y[] = sum_i a[i,i] */
        { "trace", { 1, 0, 1, { 5 }, { { 6 } } }, { 25 } },
        /* outer product, nothing summed: y[i,j] = a[i] b[j] */
        { "outer", { 2, 2, 2, { 3, 4 }, { { 1, 0 }, { 0, 1 } } }, { 3, 4 } },
        /* an empty sum gives zeros */
        { "empty sum", { 2, 1, 2, { 3, 0 }, { { 0, 1 }, { 0, 1 } } }, { 1, 1 } },
        /* broadcast: y[i,j] = sum_k a[k] (a does not depend on i, j) */
        { "broadcast operand", { 3, 2, 1, { 2, 3, 200 }, { { 0, 0, 1 } } }, { 200 } },
    };
    (void)state;
    for (int dt = 0; dt < NDTYPES; dt++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            const contract_case *c = &cases[ci];
            amp_dtype t = dtypes[dt];
            tensor ops[AMP_CONTRACT_MAX_OPERANDS];
            const void *ptrs[AMP_CONTRACT_MAX_OPERANDS];
            for (int k = 0; k < c->d.n_operands; k++) {
                ops[k] = tensor_random(t, c->len[k], -1.5, 1.5);
                ptrs[k] = ops[k].data;
            }
            int64_t n_out = 1;
            for (int i = 0; i < c->d.n_out; i++)
                n_out *= c->d.size[i];
            int64_t n_sum = 1;
            for (int i = c->d.n_out; i < c->d.n_index; i++)
                n_sum *= c->d.size[i];
            tensor y[NTABLES];
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, (size_t)n_out);
                KCALL(tables[e], t, contract, &c->d, (void *)ptrs, y[e].data);
                for (int64_t o = 0; o < n_out; o++) {
                    double sum_abs, oracle = contract_oracle(&c->d, ops, o, &sum_abs);
                    double acc = ((double)n_sum + (double)c->d.n_operands + 1.0) * u_acc(t) * sum_abs;
                    expect_close(&y[e], (size_t)o, oracle, acc, c->what);
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            for (int k = 0; k < c->d.n_operands; k++)
                tensor_free(&ops[k]);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- sdpa ------------------------------------------------------------------- */

typedef struct {
    const char *what;
    int64_t batch, L, S, E, Ev;
    int kv_shared;     /* k and v batch stride 0 */
    int additive_mask; /* [L, S] per batch, some -inf */
    int bool_mask;     /* [L, S] shared by the batch */
    int is_causal;
    int masked_row;    /* the bool mask masks all of row 1 */
} sdpa_case;

static const sdpa_case sdpa_cases[] = {
    { "plain", 2, 3, 4, 5, 6, 0, 0, 0, 0, 0 },
    { "Ev > one chunk (64)", 1, 2, 5, 3, 70, 0, 0, 0, 0, 0 },
    { "additive mask, shared k/v", 3, 4, 3, 2, 3, 1, 1, 0, 0, 0 },
    { "bool mask with a fully masked row -> NaN", 2, 3, 4, 3, 2, 0, 0, 1, 0, 1 },
    { "causal, L < S", 2, 3, 5, 4, 3, 0, 0, 0, 1, 0 },
    { "causal + bool + additive", 1, 4, 4, 3, 5, 0, 1, 1, 1, 0 },
    { "S = 0: every row masked", 1, 2, 0, 3, 2, 0, 0, 0, 0, 0 },
    { "long S", 1, 1, 300, 4, 2, 0, 0, 0, 0, 0 },
};

static void test_sdpa(void **state)
{
    (void)state;
    for (int dt = 0; dt < NDTYPES; dt++)
        for (size_t ci = 0; ci < sizeof sdpa_cases / sizeof sdpa_cases[0]; ci++) {
            const sdpa_case *c = &sdpa_cases[ci];
            amp_dtype t = dtypes[dt];
            amp_sdpa_desc d;
            memset(&d, 0, sizeof d);
            d.batch = c->batch;
            d.L = c->L;
            d.S = c->S;
            d.E = c->E;
            d.Ev = c->Ev;
            d.q_batch_stride = c->L * c->E;
            d.k_batch_stride = c->kv_shared ? 0 : c->S * c->E;
            d.v_batch_stride = c->kv_shared ? 0 : c->S * c->Ev;
            d.scale = 1.0 / sqrt((double)c->E);
            d.is_causal = c->is_causal;
            int64_t kv_batches = c->kv_shared ? 1 : c->batch;
            /* The additive mask advances by batch, the bool mask is shared:
             * one mask_batch_stride serves both, so with both present it is
             * per batch and the bool mask gets a batch dimension too. */
            int64_t mask_batches = c->additive_mask ? c->batch : 1;
            d.mask_batch_stride = c->additive_mask ? c->L * c->S : 0;
            tensor q = tensor_random(t, (size_t)(c->batch * c->L * c->E), -2.0, 2.0);
            tensor k = tensor_random(t, (size_t)(kv_batches * c->S * c->E), -2.0, 2.0);
            tensor v = tensor_random(t, (size_t)(kv_batches * c->S * c->Ev), -1.0, 1.0);
            tensor mask = tensor_random(t, c->additive_mask ? (size_t)(mask_batches * c->L * c->S) : 0, -1.0, 1.0);
            size_t bool_len = c->bool_mask ? (size_t)(mask_batches * c->L * c->S) : 0;
            uint8_t *bool_mask = malloc(bool_len ? bool_len : 1);
            assert_non_null(bool_mask);
            for (size_t i = 0; i < mask.n; i++)
                if (i % 5 == 2)
                    set(&mask, i, -INFINITY);
            for (size_t i = 0; i < bool_len; i++) {
                int64_t row = (int64_t)(i / (size_t)c->S) % c->L;
                bool_mask[i] = (uint8_t)(c->masked_row && row == 1 ? 0 : i % 3 != 1);
            }
            size_t y_len = (size_t)(c->batch * c->L * c->Ev);
            tensor y[NTABLES];
            double u = u_acc(t);
            for (int e = 0; e < NTABLES; e++) {
                y[e] = tensor_new(t, y_len);
                KCALL(tables[e], t, sdpa, &d, q.data, k.data, v.data, c->additive_mask ? mask.data : NULL,
                      c->bool_mask ? bool_mask : NULL, y[e].data);
                for (int64_t b = 0; b < c->batch; b++) {
                    int64_t kvb = c->kv_shared ? 0 : b;
                    for (int64_t i = 0; i < c->L; i++) {
                        double s[300], max = -INFINITY, sum = 0.0, score_err = 0.0;
                        int live[300];
                        for (int64_t j = 0; j < c->S; j++) {
                            int64_t mi = b * d.mask_batch_stride + i * c->S + j;
                            double dot = 0.0, dot_abs = 0.0;
                            for (int64_t x = 0; x < c->E; x++) {
                                double p = get(&q, (size_t)((b * c->L + i) * c->E + x)) *
                                           get(&k, (size_t)((kvb * c->S + j) * c->E + x));
                                dot += p;
                                dot_abs += fabs(p);
                            }
                            s[j] = dot * (double)(float)d.scale;
                            if (t == AMP_F64)
                                s[j] = dot * d.scale;
                            live[j] = !(c->is_causal && j > i) && !(c->bool_mask && !bool_mask[mi]);
                            if (c->additive_mask)
                                s[j] += get(&mask, (size_t)mi);
                            if (live[j] && s[j] > max)
                                max = s[j];
                            double err = ((double)c->E + 3.0) * u * (dot_abs * d.scale +
                                         (c->additive_mask && isfinite(s[j]) ? fabs(get(&mask, (size_t)mi)) : 0));
                            if (live[j] && isfinite(s[j]) && err > score_err)
                                score_err = err;
                        }
                        for (int64_t j = 0; j < c->S; j++)
                            if (live[j])
                                sum += exp(s[j] - max);
                        for (int64_t x = 0; x < c->Ev; x++) {
                            double o = 0.0, mag = 0.0;
                            for (int64_t j = 0; j < c->S; j++)
                                if (live[j]) {
                                    double p = exp(s[j] - max) / sum * get(&v, (size_t)((kvb * c->S + j) * c->Ev + x));
                                    o += p;
                                    mag += fabs(p);
                                }
                            if (max == -INFINITY)
                                o = NAN;
                            /* A score error e changes each weight by a factor
                             * up to exp(2e); plus exp, the sums and the divide. */
                            double acc = mag * (4.0 * score_err + (2.0 * (double)c->S + 10.0) * u);
                            expect_close(&y[e], (size_t)((b * c->L + i) * c->Ev + x), o, acc, c->what);
                        }
                    }
                }
            }
            if (c->masked_row)
                assert_true(isnan(get(&y[0], (size_t)(1 * c->Ev))));
            expect_public_equals_ref(&y[0], &y[1]);
            tensor_free(&q);
            tensor_free(&k);
            tensor_free(&v);
            tensor_free(&mask);
            free(bool_mask);
            tensor_free(&y[0]);
            tensor_free(&y[1]);
        }
}

/* ---- cdist and pdist ----------------------------------------------------------- */

static double p_distance_oracle(double p, int64_t M, const tensor *x, int64_t xa, const tensor *z, int64_t za,
                                double *sum_abs)
{
    double acc = 0.0;
    *sum_abs = 0.0;
    for (int64_t i = 0; i < M; i++) {
        double diff = fabs(get(x, (size_t)(xa + i)) - get(z, (size_t)(za + i)));
        *sum_abs += diff;
        if (p == 0.0)
            acc += diff != 0.0;
        else if (isinf(p))
            acc = fmax(acc, diff);
        else
            acc += pow(diff, p);
    }
    if (p == 0.0 || isinf(p))
        return acc;
    return pow(acc, 1.0 / p);
}

static const double norms_p[] = { 0.0, 1.0, 2.0, INFINITY, 0.5, 3.0 };

/* p = 0 and inf are exact; the others lose M + a few roundings in the sum,
 * magnified by 1/p (the root) and by p (each power) for the pow cases. */
static double distance_bound(amp_dtype t, double p, int64_t M, double oracle)
{
    if (p == 0.0 || isinf(p))
        return 0.0;
    double amplify = p == 1.0 || p == 2.0 ? 1.0 : p + 1.0 / p;
    return ((double)M + 6.0) * amplify * u_acc(t) * oracle * 4.0;
}

static void test_cdist(void **state)
{
    static const int64_t shapes[][4] = { { 2, 3, 4, 5 }, { 1, 1, 1, 1 }, { 1, 2, 3, 0 }, { 0, 2, 2, 2 }, { 1, 2, 2, 200 } };
    (void)state;
    for (int dt = 0; dt < NDTYPES; dt++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t pi = 0; pi < sizeof norms_p / sizeof norms_p[0]; pi++) {
                amp_dtype t = dtypes[dt];
                int64_t B = shapes[si][0], P = shapes[si][1], R = shapes[si][2], M = shapes[si][3];
                double p = norms_p[pi];
                tensor x1 = tensor_random(t, (size_t)(B * P * M), -2.0, 2.0);
                tensor x2 = tensor_random(t, (size_t)(B * R * M), -2.0, 2.0);
                if (x1.n > 0 && x2.n > 0)
                    set(&x1, 0, get(&x2, 0)); /* an equal coordinate: p = 0 must not count it */
                tensor y[NTABLES];
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, (size_t)(B * P * R));
                    KCALL(tables[e], t, cdist, B, P, R, M, p, x1.data, x2.data, y[e].data);
                    for (int64_t b = 0; b < B; b++)
                        for (int64_t i = 0; i < P; i++)
                            for (int64_t r = 0; r < R; r++) {
                                double sum_abs;
                                double o = p_distance_oracle(p, M, &x1, (b * P + i) * M, &x2, (b * R + r) * M, &sum_abs);
                                expect_close(&y[e], (size_t)((b * P + i) * R + r), o, distance_bound(t, p, M, o), "cdist");
                            }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                tensor_free(&x1);
                tensor_free(&x2);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

static void test_pdist(void **state)
{
    static const int64_t shapes[][2] = { { 5, 3 }, { 1, 4 }, { 0, 2 }, { 2, 0 }, { 4, 100 } };
    (void)state;
    for (int dt = 0; dt < NDTYPES; dt++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t pi = 0; pi < sizeof norms_p / sizeof norms_p[0]; pi++) {
                amp_dtype t = dtypes[dt];
                int64_t N = shapes[si][0], M = shapes[si][1];
                double p = norms_p[pi];
                tensor x = tensor_random(t, (size_t)(N * M), -2.0, 2.0);
                size_t pairs = (size_t)(N * (N > 0 ? N - 1 : 0) / 2);
                tensor y[NTABLES];
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, pairs);
                    KCALL(tables[e], t, pdist, N, M, p, x.data, y[e].data);
                    size_t o = 0;
                    for (int64_t i = 0; i < N; i++)
                        for (int64_t j = i + 1; j < N; j++, o++) {
                            double sum_abs, want = p_distance_oracle(p, M, &x, i * M, &x, j * M, &sum_abs);
                            expect_close(&y[e], o, want, distance_bound(t, p, M, want), "pdist");
                        }
                    assert_int_equal(o, pairs);
                }
                expect_public_equals_ref(&y[0], &y[1]);
                tensor_free(&x);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_accumulates_in_f32),
        cmocka_unit_test(test_contract),
        cmocka_unit_test(test_sdpa),
        cmocka_unit_test(test_cdist),
        cmocka_unit_test(test_pdist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
