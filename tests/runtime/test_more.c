/*
 * test_more.c - rnn_cell and ctc_loss (amprt/recurrent.h), max_unpool
 * (amprt/spatial.h) and quantile (amprt/reduce.h) in every dtype; the
 * solves and matrix functions of amprt/linalg.h in f32 and f64, through
 * the public and the reference tables, against independent
 * double oracles (kernel_test_util.h's bound), and
 * PyTorch's numbers for fixed cases (computed by torch 1.13 in float64 on
 * pattern_value inputs, embedded below).
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

/* ---- max_unpool ----------------------------------------------------------- */

static void max_unpool_scatters_and_checks(void **state)
{
    (void)state;
    const int64_t planes = 3, in_plane = 4, out_plane = 9;
    int64_t idx[12];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_random(t, 12, -2, 2);
        for (int p = 0; p < planes; p++)
            for (int i = 0; i < in_plane; i++)
                idx[p * in_plane + i] = (p * 5 + i * 2) % out_plane;
        idx[1] = idx[0]; /* a repeated index: the later value wins */
        tensor y[NTABLES];
        for (int k = 0; k < NTABLES; k++) {
            int st;
            y[k] = tensor_new(t, (size_t)(planes * out_plane));
            KCALL_STATUS(st, tables[k], t, max_unpool, planes, in_plane, out_plane, x.data, idx, y[k].data);
            assert_int_equal(st, AMP_OK);
            for (int p = 0; p < planes; p++)
                for (int64_t o = 0; o < out_plane; o++) {
                    double want = 0;
                    for (int i = 0; i < in_plane; i++)
                        if (idx[p * in_plane + i] == o)
                            want = get(&x, (size_t)(p * in_plane + i));
                    expect_close(&y[k], (size_t)(p * out_plane + o), want, 0, "max_unpool");
                }
        }
        expect_public_equals_ref(&y[0], &y[1]);
        /* an index outside [0, out_plane): a status, nothing written */
        for (int bad = 0; bad < 2; bad++) {
            idx[7] = bad ? out_plane : -1;
            for (int k = 0; k < NTABLES; k++) {
                int st;
                for (size_t i = 0; i < y[k].n; i++)
                    set(&y[k], i, 7.0);
                KCALL_STATUS(st, tables[k], t, max_unpool, planes, in_plane, out_plane, x.data, idx, y[k].data);
                assert_int_equal(st, AMP_ERR_TARGET_OUT_OF_RANGE);
                for (size_t i = 0; i < y[k].n; i++)
                    assert_true(get(&y[k], i) == 7.0);
            }
        }
        for (int k = 0; k < NTABLES; k++)
            tensor_free(&y[k]);
        tensor_free(&x);
    }
}

/* ---- quantile --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* PyTorch's quantile of v[0..n) (NaNs included), as amprt/reduce.h says. */
static double quantile_oracle(const double *v, int64_t n, double q, int interp, int ignore_nan, amp_dtype t)
{
    double s[64];
    int64_t m = 0;
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(v[i]))
            nan = 1;
        else
            s[m++] = v[i];
    }
    if ((nan && !ignore_nan) || m == 0)
        return NAN;
    qsort(s, (size_t)m, sizeof s[0], cmp_double);
    /* the rank in the compute type, as the kernel (and PyTorch) */
    double rank = t == AMP_F64 ? q * (double)(m - 1) : (double)((float)q * (float)(m - 1));
    if (interp == AMP_QUANTILE_LOWER)
        rank = floor(rank);
    else if (interp == AMP_QUANTILE_HIGHER)
        rank = ceil(rank);
    else if (interp == AMP_QUANTILE_NEAREST)
        rank = nearbyint(rank);
    int64_t lo = (int64_t)floor(rank), hi = (int64_t)ceil(rank);
    if (hi > m - 1)
        hi = m - 1;
    if (interp == AMP_QUANTILE_MIDPOINT)
        return (s[lo] + s[hi]) / 2;
    if (interp == AMP_QUANTILE_LINEAR)
        return s[lo] + (rank - (double)lo) * (s[hi] - s[lo]);
    return s[lo];
}

static void quantile_matches_oracle(void **state)
{
    (void)state;
    const int64_t outer = 2, len = 9, inner = 3;
    double work[9];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_random(t, (size_t)(outer * len * inner), -3, 3);
        set(&x, 4, NAN);                        /* slice (0, 1) holds a NaN */
        for (int64_t l = 0; l < len; l++)       /* slice (1, 2) is all NaN */
            set(&x, (size_t)((len + l) * inner + 2), NAN);
        static const double qs[] = {0, 0.3, 0.5, 0.875, 1};
        for (int qi = 0; qi < 5; qi++)
            for (int interp = 0; interp < 5; interp++)
                for (int ign = 0; ign < 2; ign++) {
                    tensor y[NTABLES];
                    for (int k = 0; k < NTABLES; k++) {
                        y[k] = tensor_new(t, (size_t)(outer * inner));
                        KCALL(tables[k], t, quantile, outer, len, inner, qs[qi], interp, ign, x.data, work, y[k].data);
                        for (int64_t o = 0; o < outer; o++)
                            for (int64_t i = 0; i < inner; i++) {
                                double v[9], mx = 0;
                                for (int64_t l = 0; l < len; l++) {
                                    v[l] = get(&x, (size_t)((o * len + l) * inner + i));
                                    if (!isnan(v[l]) && fabs(v[l]) > mx)
                                        mx = fabs(v[l]);
                                }
                                double want = quantile_oracle(v, len, qs[qi], interp, ign, t);
                                expect_close(&y[k], (size_t)(o * inner + i), want, 8 * u_acc(t) * mx, "quantile");
                            }
                    }
                    expect_public_equals_ref(&y[0], &y[1]);
                    for (int k = 0; k < NTABLES; k++)
                        tensor_free(&y[k]);
                }
        tensor_free(&x);
    }
}

/* torch.quantile of pattern_value(i, 9), i < 10, at q 0, 0.3, 0.45, 0.5, 1 */
static void quantile_matches_pytorch(void **state)
{
    (void)state;
    static const double want[5][5] = {
        {-1.375, -0.70000000000000007, -0.23750000000000004, -0.125, 1.125},
        {-1.375, -0.875, -0.25, -0.25, 1.125},
        {-1.375, -0.625, 0, 0, 1.125},
        {-1.375, -0.75, -0.125, -0.125, 1.125},
        {-1.375, -0.625, -0.25, -0.25, 1.125},
    };
    static const double qs[] = {0, 0.3, 0.45, 0.5, 1};
    double work[10];
    for (int d = 0; d < NDTYPES; d++) {
        amp_dtype t = dtypes[d];
        tensor x = tensor_pattern(t, 10, 9), y = tensor_new(t, 1);
        for (int k = 0; k < NTABLES; k++)
            for (int interp = 0; interp < 5; interp++)
                for (int qi = 0; qi < 5; qi++) {
                    KCALL(tables[k], t, quantile, 1, 10, 1, qs[qi], interp, 0, x.data, work, y.data);
                    expect_close(&y, 0, want[interp][qi], 16 * u_acc(t), "torch quantile");
                }
        tensor_free(&x);
        tensor_free(&y);
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

/* ---- linear algebra (f32 and f64) -------------------------------------------- */

#define LCALL(k, t, op, ...)                                                                      \
    do {                                                                                          \
        if ((t) == AMP_F64)                                                                       \
            (k)->op##_f64(__VA_ARGS__);                                                           \
        else                                                                                      \
            (k)->op##_f32(__VA_ARGS__);                                                           \
    } while (0)

static const amp_dtype ldtypes[] = {AMP_F64, AMP_F32};

/* A bound for the linear algebra: c u_acc(t) times the size of the values. */
static double lbound(amp_dtype t, double c, double scale) { return c * u_acc(t) * scale; }

/* x [n, k] solving a [n, n] x = b in long double (Gaussian elimination,
 * partial pivoting): the oracle of lu_solve, lstsq's normal equations and
 * tensorsolve-like checks. */
static void ld_solve(int n, int k, long double *a, long double *b)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabsl(a[r * n + c]) > fabsl(a[p * n + c]))
                p = r;
        for (int j = 0; j < n; j++) {
            long double tmp = a[c * n + j];
            a[c * n + j] = a[p * n + j];
            a[p * n + j] = tmp;
        }
        for (int j = 0; j < k; j++) {
            long double tmp = b[c * k + j];
            b[c * k + j] = b[p * k + j];
            b[p * k + j] = tmp;
        }
        for (int r = c + 1; r < n; r++) {
            long double f = a[r * n + c] / a[c * n + c];
            for (int j = c; j < n; j++)
                a[r * n + j] -= f * a[c * n + j];
            for (int j = 0; j < k; j++)
                b[r * k + j] -= f * b[c * k + j];
        }
    }
    for (int j = 0; j < k; j++)
        for (int r = n - 1; r >= 0; r--) {
            long double v = b[r * k + j];
            for (int c = r + 1; c < n; c++)
                v -= a[r * n + c] * b[c * k + j];
            b[r * k + j] = v / a[r * n + r];
        }
}

/* lu_solve: LU from a known P L U (unit L with small entries, dominant U),
 * the oracle solving P L U x = b in long double; pivots checked. */
static void lu_solve_matches_oracle(void **state)
{
    (void)state;
    enum { M = 4, K = 3, BATCH = 2 };
    int32_t piv[BATCH * M] = {3, 2, 4, 4, 1, 3, 3, 4};
    for (int d = 0; d < 2; d++) {
        amp_dtype t = ldtypes[d];
        tensor lu = tensor_random(t, BATCH * M * M, -0.3, 0.3), b = tensor_random(t, BATCH * M * K, -1, 1);
        for (int s = 0; s < BATCH; s++)
            for (int i = 0; i < M; i++)
                set(&lu, (size_t)(s * M * M + i * M + i), 2 + i * 0.25);
        tensor y[NTABLES];
        for (int k = 0; k < NTABLES; k++) {
            int st;
            y[k] = tensor_new(t, BATCH * M * K);
            if (t == AMP_F64)
                st = tables[k]->lu_solve_f64(BATCH, M, K, lu.data, piv, b.data, y[k].data);
            else
                st = tables[k]->lu_solve_f32(BATCH, M, K, lu.data, piv, b.data, y[k].data);
            assert_int_equal(st, AMP_OK);
            for (int s = 0; s < BATCH; s++) {
                /* A = P L U, P applying the swaps in reverse to rows of L U */
                long double a[M * M], x[M * K];
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < M; j++) {
                        long double v = 0;
                        for (int l = 0; l <= (i < j ? i : j); l++)
                            v += (l == i ? 1.0L : (long double)get(&lu, (size_t)(s * M * M + i * M + l))) *
                                 get(&lu, (size_t)(s * M * M + l * M + j));
                        a[i * M + j] = v;
                    }
                for (int i = M - 1; i >= 0; i--) {
                    int p = piv[s * M + i] - 1;
                    for (int j = 0; j < M; j++) {
                        long double tmp = a[i * M + j];
                        a[i * M + j] = a[p * M + j];
                        a[p * M + j] = tmp;
                    }
                }
                for (int i = 0; i < M * K; i++)
                    x[i] = get(&b, (size_t)(s * M * K + i));
                ld_solve(M, K, a, x);
                for (int i = 0; i < M * K; i++)
                    expect_close(&y[k], (size_t)(s * M * K + i), x[i], lbound(t, 256, 1), "lu_solve");
            }
        }
        expect_public_equals_ref(&y[0], &y[1]);
        /* a pivot outside [1, m]: a status and nothing written */
        for (int bad = 0; bad < 2; bad++) {
            int32_t saved = piv[5];
            piv[5] = bad ? M + 1 : 0;
            for (int k = 0; k < NTABLES; k++) {
                int st;
                for (size_t i = 0; i < y[k].n; i++)
                    set(&y[k], i, 7.0);
                if (t == AMP_F64)
                    st = tables[k]->lu_solve_f64(BATCH, M, K, lu.data, piv, b.data, y[k].data);
                else
                    st = tables[k]->lu_solve_f32(BATCH, M, K, lu.data, piv, b.data, y[k].data);
                assert_int_equal(st, AMP_ERR_TARGET_OUT_OF_RANGE);
                for (size_t i = 0; i < y[k].n; i++)
                    assert_true(get(&y[k], i) == 7.0);
            }
            piv[5] = saved;
        }
        for (int k = 0; k < NTABLES; k++)
            tensor_free(&y[k]);
        tensor_free(&lu);
        tensor_free(&b);
    }
}

/* lstsq: tall A against the normal equations A^T A x = A^T b, wide A
 * against the minimum-norm x = A^T (A A^T)^-1 b, both in long double. */
static void lstsq_matches_oracle(void **state)
{
    (void)state;
    static const int shapes[][3] = {{6, 3, 2}, {3, 5, 2}, {4, 4, 1}};
    double work[64];
    for (int d = 0; d < 2; d++)
        for (int sh = 0; sh < 3; sh++) {
            amp_dtype t = ldtypes[d];
            int m = shapes[sh][0], n = shapes[sh][1], K = shapes[sh][2];
            assert_true(AMP_LSTSQ_WORK_ELEMS(m, n, K) <= 64);
            tensor a = tensor_random(t, (size_t)(2 * m * n), -1, 1), b = tensor_random(t, (size_t)(2 * m * K), -1, 1);
            for (int s = 0; s < 2; s++) /* well conditioned: a dominant diagonal */
                for (int i = 0; i < (m < n ? m : n); i++)
                    set(&a, (size_t)(s * m * n + i * n + i), 3);
            tensor y[NTABLES];
            for (int k = 0; k < NTABLES; k++) {
                y[k] = tensor_new(t, (size_t)(2 * n * K));
                LCALL(tables[k], t, lstsq, 2, m, n, K, a.data, b.data, y[k].data, work);
                for (int s = 0; s < 2; s++) {
                    long double g[25], r[25];
                    int q = m >= n ? n : m;
                    /* tall: G = A^T A, r = A^T b; wide: G = A A^T, r = b, then x = A^T w */
                    for (int i = 0; i < q; i++)
                        for (int j = 0; j < q; j++) {
                            long double v = 0;
                            for (int l = 0; l < (m >= n ? m : n); l++)
                                v += m >= n ? (long double)get(&a, (size_t)(s * m * n + l * n + i)) * get(&a, (size_t)(s * m * n + l * n + j))
                                            : (long double)get(&a, (size_t)(s * m * n + i * n + l)) * get(&a, (size_t)(s * m * n + j * n + l));
                            g[i * q + j] = v;
                        }
                    for (int i = 0; i < q; i++)
                        for (int c = 0; c < K; c++) {
                            long double v = 0;
                            if (m >= n)
                                for (int l = 0; l < m; l++)
                                    v += (long double)get(&a, (size_t)(s * m * n + l * n + i)) * get(&b, (size_t)(s * m * K + l * K + c));
                            else
                                v = get(&b, (size_t)(s * m * K + i * K + c));
                            r[i * K + c] = v;
                        }
                    ld_solve(q, K, g, r);
                    for (int i = 0; i < n; i++)
                        for (int c = 0; c < K; c++) {
                            long double want = 0;
                            if (m >= n)
                                want = r[i * K + c];
                            else
                                for (int l = 0; l < m; l++)
                                    want += (long double)get(&a, (size_t)(s * m * n + l * n + i)) * r[l * K + c];
                            expect_close(&y[k], (size_t)(s * n * K + i * K + c), want, lbound(t, 512, 1), "lstsq");
                        }
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            for (int k = 0; k < NTABLES; k++)
                tensor_free(&y[k]);
            tensor_free(&a);
            tensor_free(&b);
        }
}

/* matrix_exp against the Taylor series in long double without scaling (the
 * inputs' norms stay below 4, where 80 terms converge). */
static void matrix_exp_matches_oracle(void **state)
{
    (void)state;
    enum { N = 4 };
    double work[4 * N * N];
    for (int d = 0; d < 2; d++)
        for (int sc = 0; sc < 3; sc++) {
            amp_dtype t = ldtypes[d];
            double scale = sc == 0 ? 0.05 : sc == 1 ? 0.4 : 1.0;
            tensor a = tensor_random(t, 2 * N * N, -scale, scale);
            tensor y[NTABLES];
            for (int k = 0; k < NTABLES; k++) {
                y[k] = tensor_new(t, 2 * N * N);
                LCALL(tables[k], t, matrix_exp, 2, N, a.data, y[k].data, work);
                for (int s = 0; s < 2; s++) {
                    long double term[N * N], sum[N * N], tmp[N * N];
                    for (int i = 0; i < N * N; i++)
                        term[i] = sum[i] = i % (N + 1) == 0;
                    for (int j = 1; j <= 80; j++) {
                        for (int r = 0; r < N; r++)
                            for (int c = 0; c < N; c++) {
                                long double v = 0;
                                for (int l = 0; l < N; l++)
                                    v += term[r * N + l] * get(&a, (size_t)(s * N * N + l * N + c));
                                tmp[r * N + c] = v / j;
                            }
                        for (int i = 0; i < N * N; i++) {
                            term[i] = tmp[i];
                            sum[i] += tmp[i];
                        }
                    }
                    for (int i = 0; i < N * N; i++)
                        expect_close(&y[k], (size_t)(s * N * N + i), sum[i], lbound(t, 1024, 8), "matrix_exp");
                }
            }
            expect_public_equals_ref(&y[0], &y[1]);
            for (int k = 0; k < NTABLES; k++)
                tensor_free(&y[k]);
            tensor_free(&a);
        }
}

/* The explicit Q [mn, mn] = H_0 ... H_{k-1} of reflectors in a [mn, nk], in long double. */
static void ld_q(const tensor *a, size_t off, int mn, int nk, const tensor *tau, size_t toff, int k, long double *q)
{
    for (int i = 0; i < mn * mn; i++)
        q[i] = i % (mn + 1) == 0;
    for (int i = k - 1; i >= 0; i--) { /* q = H_i q */
        long double v[8], tv = get(tau, toff + (size_t)i);
        for (int r = 0; r < mn; r++)
            v[r] = r < i ? 0 : r == i ? 1 : (long double)get(a, off + (size_t)(r * nk + i));
        for (int c = 0; c < mn; c++) {
            long double s = 0;
            for (int r = 0; r < mn; r++)
                s += v[r] * q[r * mn + c];
            for (int r = 0; r < mn; r++)
                q[r * mn + c] -= tv * v[r] * s;
        }
    }
}

static void householder_and_ormqr_match_oracle(void **state)
{
    (void)state;
    enum { M = 5, N = 3, K = 2, C = 4 };
    for (int d = 0; d < 2; d++) {
        amp_dtype t = ldtypes[d];
        tensor a = tensor_random(t, 2 * M * N, -1, 1), tau = tensor_random(t, 2 * K, 0.2, 1.8);
        tensor c = tensor_random(t, 2 * M * C, -1, 1);
        long double q[M * M];
        tensor y[NTABLES];
        for (int k = 0; k < NTABLES; k++) {
            y[k] = tensor_new(t, 2 * M * N);
            LCALL(tables[k], t, householder_product, 2, M, N, K, a.data, tau.data, y[k].data);
            for (int s = 0; s < 2; s++) {
                ld_q(&a, (size_t)(s * M * N), M, N, &tau, (size_t)(s * K), K, q);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++)
                        expect_close(&y[k], (size_t)(s * M * N + i * N + j), q[i * M + j], lbound(t, 128, 4),
                                     "householder_product");
            }
        }
        expect_public_equals_ref(&y[0], &y[1]);
        for (int k = 0; k < NTABLES; k++)
            tensor_free(&y[k]);
        /* ormqr: C [M, C] on the left, [C, M] on the right (the same numbers) */
        for (int left = 0; left < 2; left++)
            for (int tr = 0; tr < 2; tr++) {
                int rows = left ? M : C, cols = left ? C : M;
                for (int k = 0; k < NTABLES; k++) {
                    y[k] = tensor_new(t, 2 * M * C);
                    LCALL(tables[k], t, ormqr, 2, M, N, K, rows, cols, left, tr, a.data, tau.data, c.data, y[k].data);
                    for (int s = 0; s < 2; s++) {
                        ld_q(&a, (size_t)(s * M * N), M, N, &tau, (size_t)(s * K), K, q);
                        for (int i = 0; i < rows; i++)
                            for (int j = 0; j < cols; j++) {
                                long double v = 0;
                                for (int l = 0; l < M; l++) {
                                    /* op(Q)[x][y] */
                                    long double qv = left ? (tr ? q[l * M + i] : q[i * M + l]) : (tr ? q[j * M + l] : q[l * M + j]);
                                    v += left ? qv * get(&c, (size_t)(s * M * C + l * cols + j))
                                              : get(&c, (size_t)(s * M * C + i * cols + l)) * qv;
                                }
                                expect_close(&y[k], (size_t)(s * M * C + i * cols + j), v, lbound(t, 256, 8), "ormqr");
                            }
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                for (int k = 0; k < NTABLES; k++)
                    tensor_free(&y[k]);
            }
        tensor_free(&a);
        tensor_free(&tau);
        tensor_free(&c);
    }
}

/* torch 1.13, float64, on pattern_value inputs (salts as named below) */
static void linalg_matches_pytorch(void **state)
{
    (void)state;
    static const double exp_want[9] = {1.2787530028968805, -3.2888520696508126, 0.35016102341940525,
                                       0.74479114299506266, 2.1687689595909427, -0.93163107398787681,
                                       0.33092315314683551, 0.96319915931604427, 0.045483678000390076};
    static const double hh_want[12] = {2.125, -0.6943359375, 0.19703292846679688, -0.5625, 1.59716796875,
                                       -0.072149276733398438, -0.84375, 0.552001953125, 0.23052120208740234,
                                       -1.125, 0.6630859375, -0.66907882690429688};
    static const double ormqr_t_want[8] = {2.73828125, -3.7265625, -1.517181396484375, 2.33221435546875,
                                           -0.37743008136749268, -1.2183644771575928, 0.38139143586158752,
                                           1.7605029940605164};
    static const double lstsq_want[6] = {-0.13095238095238118, -0.36904761904761935, -0.7857142857142857,
                                         -0.21428571428571483, -0.33333333333333348, -0.66666666666666685};
    /* linalg_lu_factor of (pattern(9, salt 6) + 3 I)[[2, 0, 1]], and lu_solve of pattern(6, salt 7) */
    static const double lu_in[9] = {2.125, 0, 0.875, -0.52941176470588236, 2.75, 1.0882352941176472,
                                    -0.6470588235294118, -0.18181818181818182, 4.1390374331550808};
    static const int32_t piv[3] = {2, 3, 3};
    static const double lus_want[6] = {-0.091569767441860433, 0.43863049095607237, -0.49709302325581395,
                                       0.10335917312661501, 0.22238372093023251, -0.065245478036175711};
    double work[64];
    for (int d = 0; d < 2; d++) {
        amp_dtype t = ldtypes[d];
        double tol = t == AMP_F64 ? 1e-13 : 2e-5;
        tensor a = tensor_pattern(t, 9, 1), r = tensor_pattern(t, 12, 2), tau = tensor_pattern(t, 3, 3);
        tensor c = tensor_pattern(t, 8, 4), b = tensor_pattern(t, 8, 5), lu = tensor_of(t, 9, lu_in);
        tensor b7 = tensor_pattern(t, 6, 7), y = tensor_new(t, 12);
        for (int k = 0; k < NTABLES; k++) {
            LCALL(tables[k], t, matrix_exp, 1, 3, a.data, y.data, work);
            for (int i = 0; i < 9; i++)
                expect_close(&y, (size_t)i, exp_want[i], tol * 4, "torch matrix_exp");
            LCALL(tables[k], t, householder_product, 1, 4, 3, 3, r.data, tau.data, y.data);
            for (int i = 0; i < 12; i++)
                expect_close(&y, (size_t)i, hh_want[i], tol, "torch householder_product");
            LCALL(tables[k], t, ormqr, 1, 4, 3, 3, 4, 2, 1, 1, r.data, tau.data, c.data, y.data);
            for (int i = 0; i < 8; i++)
                expect_close(&y, (size_t)i, ormqr_t_want[i], tol * 4, "torch ormqr");
            LCALL(tables[k], t, lstsq, 1, 4, 3, 2, r.data, b.data, y.data, work);
            for (int i = 0; i < 6; i++)
                expect_close(&y, (size_t)i, lstsq_want[i], tol * 4, "torch lstsq");
            int st = t == AMP_F64 ? tables[k]->lu_solve_f64(1, 3, 2, lu.data, piv, b7.data, y.data)
                                  : tables[k]->lu_solve_f32(1, 3, 2, lu.data, piv, b7.data, y.data);
            assert_int_equal(st, AMP_OK);
            for (int i = 0; i < 6; i++)
                expect_close(&y, (size_t)i, lus_want[i], tol * 4, "torch lu_solve");
        }
        tensor *all[] = {&a, &r, &tau, &c, &b, &lu, &b7, &y};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tensor_free(all[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_cell_matches_oracle),
        cmocka_unit_test(rnn_cell_matches_pytorch),
        cmocka_unit_test(max_unpool_scatters_and_checks),
        cmocka_unit_test(quantile_matches_oracle),
        cmocka_unit_test(quantile_matches_pytorch),
        cmocka_unit_test(ctc_loss_matches_oracle),
        cmocka_unit_test(ctc_loss_matches_pytorch),
        cmocka_unit_test(lu_solve_matches_oracle),
        cmocka_unit_test(lstsq_matches_oracle),
        cmocka_unit_test(matrix_exp_matches_oracle),
        cmocka_unit_test(householder_and_ormqr_match_oracle),
        cmocka_unit_test(linalg_matches_pytorch),
    };
    return cmocka_run_group_tests_name("more", tests, NULL, NULL);
}
