/*
 * test_recurrent.c - rnn_cell and ctc_loss (amprt/recurrent.h) in every
 * dtype, through the public and the reference tables, against independent
 * double oracles (kernel_test_util.h's bound), and PyTorch's numbers for
 * fixed cases (computed by torch 1.13 in float64 on pattern_value inputs,
 * embedded below).
 */
#include <stdbool.h>

#include "kernel_test_util.h"

/* ---- rnn_cell ----------------------------------------------------------- */

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* Row r of w [rows, n] dotted with row b of v, plus bias[r]; *mag the sum of
 * the terms' magnitudes (for the error bound). */
static double dot_row(const tensor *w, int64_t r, int64_t n, const tensor *v, int64_t b, const tensor *bias, double *mag)
{
    double s = bias ? get(bias, (size_t)r) : 0;
    *mag += fabs(s);
    for (int64_t k = 0; k < n; k++) {
        double p = get(w, (size_t)(r * n + k)) * get(v, (size_t)(b * n + k));
        s += p;
        *mag += fabs(p);
    }
    return s;
}

/* hy (and cy) by the formulas of amprt/recurrent.h, with a bound on the compute
 * type's error of each (in absolute terms). */
static void rnn_oracle(int kind, int64_t B, int64_t I, int64_t H, const tensor *x, const tensor *hx, const tensor *cx,
                       const tensor *wi, const tensor *wh, const tensor *bi, const tensor *bh, double *hy, double *cy,
                       double *err, amp_dtype t)
{
    double u = u_acc(t) * 8 * (double)(I + H + 4);
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < H; j++) {
            int64_t o = b * H + j;
            double mag = 1;
            if (kind == AMP_RNN_LSTM) {
                double g[4];
                for (int k = 0; k < 4; k++)
                    g[k] = dot_row(wi, k * H + j, I, x, b, bi, &mag) + dot_row(wh, k * H + j, H, hx, b, bh, &mag);
                cy[o] = sig(g[1]) * get(cx, (size_t)o) + sig(g[0]) * tanh(g[2]);
                hy[o] = sig(g[3]) * tanh(cy[o]);
                mag += fabs(get(cx, (size_t)o));
            } else if (kind == AMP_RNN_GRU) {
                double ir = dot_row(wi, j, I, x, b, bi, &mag), hr = dot_row(wh, j, H, hx, b, bh, &mag);
                double iz = dot_row(wi, H + j, I, x, b, bi, &mag), hz = dot_row(wh, H + j, H, hx, b, bh, &mag);
                double in = dot_row(wi, 2 * H + j, I, x, b, bi, &mag), hn = dot_row(wh, 2 * H + j, H, hx, b, bh, &mag);
                double r = sig(ir + hr), z = sig(iz + hz), n = tanh(in + r * hn);
                hy[o] = n + z * (get(hx, (size_t)o) - n);
                mag += fabs(get(hx, (size_t)o));
            } else {
                double v = dot_row(wi, j, I, x, b, bi, &mag) + dot_row(wh, j, H, hx, b, bh, &mag);
                hy[o] = kind == AMP_RNN_TANH ? tanh(v) : v > 0 ? v : 0;
            }
            err[o] = u * mag;
        }
}

static void run_rnn(amp_dtype t, int kind, int64_t B, int64_t I, int64_t H, bool bias)
{
    int64_t G = kind == AMP_RNN_LSTM ? 4 : kind == AMP_RNN_GRU ? 3 : 1;
    tensor x = tensor_random(t, (size_t)(B * I), -1, 1), hx = tensor_random(t, (size_t)(B * H), -1, 1);
    tensor cx = tensor_random(t, (size_t)(B * H), -1, 1);
    tensor wi = tensor_random(t, (size_t)(G * H * I), -0.7, 0.7), wh = tensor_random(t, (size_t)(G * H * H), -0.7, 0.7);
    tensor bi = tensor_random(t, (size_t)(G * H), -0.5, 0.5), bh = tensor_random(t, (size_t)(G * H), -0.5, 0.5);
    size_t n = (size_t)(B * H);
    double *hy = malloc(n * sizeof *hy), *cy = malloc(n * sizeof *cy), *err = malloc(n * sizeof *err);
    assert_non_null(hy);
    assert_non_null(cy);
    assert_non_null(err);
    rnn_oracle(kind, B, I, H, &x, &hx, &cx, &wi, &wh, bias ? &bi : NULL, bias ? &bh : NULL, hy, cy, err, t);
    tensor out_h[NTABLES], out_c[NTABLES];
    for (int k = 0; k < NTABLES; k++) {
        out_h[k] = tensor_new(t, n);
        out_c[k] = tensor_new(t, n);
        KCALL(tables[k], t, rnn_cell, kind, B, I, H, x.data, hx.data, kind == AMP_RNN_LSTM ? cx.data : NULL, wi.data,
              wh.data, bias ? bi.data : NULL, bias ? bh.data : NULL, out_h[k].data,
              kind == AMP_RNN_LSTM ? out_c[k].data : NULL);
        for (size_t i = 0; i < n; i++) {
            expect_close(&out_h[k], i, hy[i], err[i], "rnn_cell hy");
            if (kind == AMP_RNN_LSTM)
                expect_close(&out_c[k], i, cy[i], err[i], "rnn_cell cy");
        }
    }
    expect_public_equals_ref(&out_h[0], &out_h[1]);
    if (kind == AMP_RNN_LSTM)
        expect_public_equals_ref(&out_c[0], &out_c[1]);
    for (int k = 0; k < NTABLES; k++) {
        tensor_free(&out_h[k]);
        tensor_free(&out_c[k]);
    }
    free(hy);
    free(cy);
    free(err);
    tensor *all[] = {&x, &hx, &cx, &wi, &wh, &bi, &bh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tensor_free(all[i]);
}

static void rnn_cell_matches_oracle(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int kind = 0; kind < 4; kind++) {
            run_rnn(dtypes[d], kind, 3, 4, 5, true);
            run_rnn(dtypes[d], kind, 2, 7, 3, false);
            run_rnn(dtypes[d], kind, 1, 1, 1, true);
            run_rnn(dtypes[d], kind, 0, 3, 2, true); /* an empty batch writes nothing */
        }
}

/* torch.lstm_cell & co. on pattern inputs: B 2, I 3, H 2; x salt 1, hx 2,
 * cx 3, w_ih 4, w_hh 5, b_ih 6, b_hh 7 (see tests/runtime/torch_spatial.py's
 * inputs(): the same formula). */
static void rnn_cell_matches_pytorch(void **state)
{
    (void)state;
    static const double want[5][4] = {
        {-0.11060844546673844, -0.01093120813418118, 0.18819693623091224, -0.033537833927214225},
        {-1.1941649210981033, -0.56748137394625742, 0.41379042736059946, -1.5399441577210291},
        {-0.82358341611980546, -0.18886043523702739, -1.27164533891297, -0.48187748981721912},
        {0.99520653825974204, 0.94482943554642007, -0.7925027462672406, -0.30270972933210849},
        {3.015625, 1.78125, 0, 0},
    };
    const int64_t B = 2, I = 3, H = 2;
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        for (int kind = 0; kind < 4; kind++) {
            int64_t G = kind == AMP_RNN_LSTM ? 4 : kind == AMP_RNN_GRU ? 3 : 1;
            tensor x = tensor_pattern(t, (size_t)(B * I), 1), hx = tensor_pattern(t, (size_t)(B * H), 2);
            tensor cx = tensor_pattern(t, (size_t)(B * H), 3), wi = tensor_pattern(t, (size_t)(G * H * I), 4);
            tensor wh = tensor_pattern(t, (size_t)(G * H * H), 5), bi = tensor_pattern(t, (size_t)(G * H), 6);
            tensor bh = tensor_pattern(t, (size_t)(G * H), 7);
            tensor hy = tensor_new(t, (size_t)(B * H)), cy = tensor_new(t, (size_t)(B * H));
            for (int k = 0; k < NTABLES; k++) {
                KCALL(tables[k], t, rnn_cell, kind, B, I, H, x.data, hx.data, cx.data, wi.data, wh.data, bi.data,
                      bh.data, hy.data, kind == AMP_RNN_LSTM ? cy.data : NULL);
                const double *w = want[kind == AMP_RNN_LSTM ? 0 : kind + 1];
                for (size_t i = 0; i < 4; i++) {
                    expect_close(&hy, i, w[i], 64 * u_acc(t) * 8, "torch rnn_cell hy");
                    if (kind == AMP_RNN_LSTM)
                        expect_close(&cy, i, want[1][i], 64 * u_acc(t) * 8, "torch lstm_cell cy");
                }
            }
            tensor *all[] = {&x, &hx, &cx, &wi, &wh, &bi, &bh, &hy, &cy};
            for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                tensor_free(all[i]);
        }
    }
}

/* ---- ctc_loss --------------------------------------------------------------- */

/* -log p(target | x) by the forward recursion on probabilities (not logs),
 * in long double: an independent oracle; +inf when no alignment exists. */
static long double ctc_oracle(const tensor *lp, int64_t N, int64_t C, int64_t n, const int64_t *tg, int64_t L,
                              int64_t Tn, int64_t blank)
{
    long double a[16] = {0}, b[16];
    int64_t Ln = 2 * L + 1;
    if (Tn == 0)
        return L == 0 ? 0 : INFINITY;
    a[0] = expl((long double)get(lp, (size_t)(n * C + blank)));
    if (L > 0)
        a[1] = expl((long double)get(lp, (size_t)(n * C + tg[0])));
    for (int64_t f = 1; f < Tn; f++) {
        for (int64_t s = 0; s < Ln; s++) {
            int64_t label = s % 2 ? tg[s / 2] : blank;
            long double v = a[s] + (s >= 1 ? a[s - 1] : 0);
            if (s >= 2 && s % 2 && label != tg[s / 2 - 1])
                v += a[s - 2];
            b[s] = v * expl((long double)get(lp, (size_t)((f * N + n) * C + label)));
        }
        for (int64_t s = 0; s < Ln; s++)
            a[s] = b[s];
    }
    long double p = a[Ln - 1] + (L > 0 ? a[Ln - 2] : 0);
    return p == 0 ? INFINITY : -logl(p);
}

static void ctc_loss_matches_oracle(void **state)
{
    (void)state;
    enum { T = 6, N = 4, C = 5, S = 3 };
    /* sample 1 repeats a label; sample 2 cannot be aligned (3 labels with a repeat in 3 frames) */
    static const int64_t targets[N * S] = {1, 2, 3, 4, 4, 1, 2, 2, 3, 3, 0, 0};
    static const int64_t il[N] = {6, 5, 3, 4}, tl[N] = {3, 3, 3, 0};
    double work[2 * (2 * S + 1)];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor lp = tensor_new(t, T * N * C);
        for (int64_t i = 0; i < T * N; i++) { /* log-softmax rows of random logits, rounded to T */
            double z[C], m = 0, sum = 0;
            for (int c = 0; c < C; c++) {
                z[c] = uniform(-2, 2);
                sum += exp(z[c]);
            }
            m = log(sum);
            for (int c = 0; c < C; c++)
                set(&lp, (size_t)(i * C + c), z[c] - m);
        }
        for (int red = 0; red < 3; red++)
            for (int zi = 0; zi < 2; zi++) {
                tensor y[NTABLES];
                for (int k = 0; k < NTABLES; k++) {
                    int st;
                    y[k] = tensor_new(t, red == AMP_REDUCTION_NONE ? N : 1);
                    KCALL_STATUS(st, tables[k], t, ctc_loss, T, N, C, S, lp.data, targets, il, tl, 4, red, zi, work,
                                 y[k].data);
                    assert_int_equal(st, AMP_OK);
                    long double total = 0, loss[N];
                    int inf = 0;
                    for (int n = 0; n < N; n++) {
                        loss[n] = ctc_oracle(&lp, N, C, n, targets + n * S, tl[n], il[n], 4);
                        if (zi && isinf(loss[n]))
                            loss[n] = 0;
                        inf |= isinf(loss[n]);
                        total += red == AMP_REDUCTION_MEAN ? loss[n] / (tl[n] > 1 ? tl[n] : 1) : loss[n];
                    }
                    double bound = 64 * (double)u_acc(t) * 40;
                    if (red == AMP_REDUCTION_NONE)
                        for (int n = 0; n < N; n++)
                            expect_close(&y[k], (size_t)n, loss[n], bound, "ctc_loss");
                    else
                        expect_close(&y[k], 0, inf ? (long double)INFINITY : red == AMP_REDUCTION_MEAN ? total / N : total,
                                     bound, "ctc_loss");
                }
                expect_public_equals_ref(&y[0], &y[1]);
                for (int k = 0; k < NTABLES; k++)
                    tensor_free(&y[k]);
            }
        /* bad lengths and labels: a status, nothing written */
        int64_t bad_il[N] = {7, 5, 3, 4}, bad_tl[N] = {3, 4, 3, 0}, bad_tg[N * S];
        memcpy(bad_tg, targets, sizeof bad_tg);
        bad_tg[4] = C;
        for (int k = 0; k < NTABLES; k++) {
            int st;
            tensor y = tensor_new(t, N);
            for (int which = 0; which < 3; which++) {
                for (int n = 0; n < N; n++)
                    set(&y, (size_t)n, 7.0);
                KCALL_STATUS(st, tables[k], t, ctc_loss, T, N, C, S, lp.data, which == 2 ? bad_tg : targets,
                             which == 0 ? bad_il : il, which == 1 ? bad_tl : tl, 4, AMP_REDUCTION_NONE, 0, work, y.data);
                assert_int_equal(st, which == 2 ? AMP_ERR_TARGET_OUT_OF_RANGE : AMP_ERR_BAD_DIM);
                for (int n = 0; n < N; n++)
                    assert_true(get(&y, (size_t)n) == 7.0);
            }
            tensor_free(&y);
        }
        tensor_free(&lp);
    }
}

/* F.ctc_loss (torch 1.13, float64) of log_softmax(pattern(40, salt 1) as
 * [5, 2, 4], dim 2), targets {{1, 2}, {3, 3}}, input_lengths {5, 4},
 * target_lengths {2, 2}, blank 0 */
static void ctc_loss_matches_pytorch(void **state)
{
    (void)state;
    static const double lp_in[40] = {
        -0.80593488637927158, -2.8059348863792715, -1.9309348863792715, -1.0559348863792715, -0.80593488637927158,
        -2.8059348863792715, -1.9309348863792715, -1.0559348863792715, -2.2957899334063452, -1.4207899334063452,
        -0.5457899334063453, -2.5457899334063452, -2.2957899334063452, -1.4207899334063452, -0.5457899334063453,
        -2.5457899334063452, -1.5045947172533705, -0.62959471725337046, -2.6295947172533705, -1.7545947172533705,
        -0.80593488637927158, -2.8059348863792715, -1.9309348863792715, -1.0559348863792715, -3.1336687314431431,
        -2.2586687314431431, -1.3836687314431431, -0.50866873144314295, -2.2957899334063452, -1.4207899334063452,
        -0.5457899334063453, -2.5457899334063452, -1.5045947172533705, -0.62959471725337046, -2.6295947172533705,
        -1.7545947172533705, -1.5045947172533705, -0.62959471725337046, -2.6295947172533705, -1.7545947172533705};
    static const int64_t tg[4] = {1, 2, 3, 3}, il[2] = {5, 4}, tl[2] = {2, 2};
    static const double want_none[2] = {4.5224517766199321, 5.1866531267540132};
    static const double want_sum = 9.7091049033739445, want_mean = 2.4272762258434861;
    double work[10];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        /* the inputs rounded to T move the loss by about 10 u_T */
        double tol = t == AMP_F64 ? 1e-13 : 32 * (double)unit_roundoff(t) * 10;
        tensor lp = tensor_of(t, 40, lp_in), y = tensor_new(t, 2);
        for (int k = 0; k < NTABLES; k++) {
            int st;
            KCALL_STATUS(st, tables[k], t, ctc_loss, 5, 2, 4, 2, lp.data, tg, il, tl, 0, AMP_REDUCTION_NONE, 0, work, y.data);
            assert_int_equal(st, AMP_OK);
            expect_close(&y, 0, want_none[0], tol, "torch ctc_loss");
            expect_close(&y, 1, want_none[1], tol, "torch ctc_loss");
            KCALL_STATUS(st, tables[k], t, ctc_loss, 5, 2, 4, 2, lp.data, tg, il, tl, 0, AMP_REDUCTION_SUM, 0, work, y.data);
            expect_close(&y, 0, want_sum, tol * 2, "torch ctc_loss sum");
            KCALL_STATUS(st, tables[k], t, ctc_loss, 5, 2, 4, 2, lp.data, tg, il, tl, 0, AMP_REDUCTION_MEAN, 0, work, y.data);
            expect_close(&y, 0, want_mean, tol, "torch ctc_loss mean");
        }
        tensor_free(&lp);
        tensor_free(&y);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_cell_matches_oracle),
        cmocka_unit_test(rnn_cell_matches_pytorch),
        cmocka_unit_test(ctc_loss_matches_oracle),
        cmocka_unit_test(ctc_loss_matches_pytorch),
    };
    return cmocka_run_group_tests_name("recurrent", tests, NULL, NULL);
}
