/*
 * test_fastattention_backward.c - sdpa_backward (dq, dk, dv of scaled
 * dot-product attention) of every kernel set this CPU supports
 * (x86/avx512_attention.c, x86/avx2_attention.c; the reference elsewhere)
 * against a double oracle, within a product's bound: its dot products and
 * sums run in another order than the reference's.  With p the attention
 * weights, dp_ij = dy_i . v_j, D_i = sum_j p_ij dp_ij and ds_ij = p_ij
 * (dp_ij - D_i), each output is a sum over n terms of products whose
 * magnitudes the oracle also sums (|ds_ij| taken as p_ij (|dy_i| . |v_j|
 * + sum_j' p_ij' |dy_i| . |v_j'|), |p_ij| as p_ij), so per output
 *     |got - oracle| <= 4 (L + S + E + Ev + 16) 2^-24 magnitude
 *                       + half an ulp of T at |oracle| + half T's subnormal step;
 * the reference meets the same bound (checked in the run of the "ref"
 * set).  Cases: a ViT's heads (197 x 197, E 64), BERT's (128, with an
 * additive mask), odd sizes around the vector widths, a boolean mask with
 * a row of every position masked (that row's dq and its entry's dk and dv
 * NaN, as the reference), causal, a NaN query, one element; keys and
 * values shared by the batch go to the reference (bit for bit); 1 and 2
 * threads give the same bits.  The operands, cases and main are
 * attention_test_util.h's.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa_under_test.h"

#include "../../runtime/src/amprt_internal.h"

#define ATTENTION_TEST_SEED 0x9e3779b97f4a7c15ull
#include "attention_test_util.h"

static void call(const amp_kernel_table *k, amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *kk,
                 const void *v, const void *mask, const uint8_t *bm, const void *dy, void *dq, void *dk, void *dv)
{
    switch (t) {
    case AMP_F32: k->sdpa_backward_f32(d, q, kk, v, mask, bm, dy, dq, dk, dv); break;
    case AMP_BF16: k->sdpa_backward_bf16(d, q, kk, v, mask, bm, dy, dq, dk, dv); break;
    default: k->sdpa_backward_f16(d, q, kk, v, mask, bm, dy, dq, dk, dv); break;
    }
}

typedef struct {
    amp_dtype t;
    const acase *c;
    const amp_sdpa_desc *d;
    const void *q, *k, *v, *mask, *dy;
    const uint8_t *bm;
} problem;

static double at(const problem *p, const void *a, int64_t i) { return amp_load_as_f32(p->t, a, (size_t)i); }

/* The oracle of one batch entry: P, dS and their magnitudes mS [L][S];
 * returns whether a row is NaN (row_nan[i]) */
static int oracle_entry(const problem *pr, int64_t b, double *P, double *dS, double *mS, int *row_nan)
{
    const acase *c = pr->c;
    const amp_sdpa_desc *d = pr->d;
    int any = 0;
    double *dp = malloc((size_t)c->S * sizeof(double)), *mdp = malloc((size_t)c->S * sizeof(double));
    assert_non_null(dp);
    assert_non_null(mdp);
    for (int64_t i = 0; i < c->L; i++) {
        double max = -INFINITY, den = 0, D = 0, mD = 0;
        int nan = 0;
        double *p = P + i * c->S;
        for (int64_t j = 0; j < c->S; j++) {
            const int64_t mi = b * d->mask_batch_stride + i * c->S + j;
            double dot = 0;
            p[j] = -INFINITY;
            if ((c->causal && j > i) || (pr->bm != NULL && !pr->bm[mi]))
                continue;
            for (int64_t e = 0; e < c->E; e++)
                dot += at(pr, pr->q, b * d->q_batch_stride + i * c->E + e) * at(pr, pr->k, b * d->k_batch_stride + j * c->E + e);
            p[j] = dot * (double)(float)d->scale + (pr->mask != NULL ? at(pr, pr->mask, mi) : 0);
            if (isnan(p[j]))
                nan = 1;
            else if (p[j] > max)
                max = p[j];
        }
        row_nan[i] = nan || max == -INFINITY;
        any |= row_nan[i];
        if (row_nan[i])
            continue;
        for (int64_t j = 0; j < c->S; j++) {
            p[j] = exp(p[j] - max);
            den += p[j];
        }
        for (int64_t j = 0; j < c->S; j++) {
            p[j] /= den;
            dp[j] = mdp[j] = 0;
            for (int64_t e = 0; e < c->Ev; e++) {
                const double g = at(pr, pr->dy, (b * c->L + i) * c->Ev + e), w = at(pr, pr->v, b * d->v_batch_stride + j * c->Ev + e);
                dp[j] += g * w;
                mdp[j] += fabs(g * w);
            }
            D += p[j] * dp[j];
            mD += p[j] * mdp[j];
        }
        for (int64_t j = 0; j < c->S; j++) {
            dS[i * c->S + j] = p[j] * (dp[j] - D);
            mS[i * c->S + j] = p[j] * (mdp[j] + mD);
        }
    }
    free(dp);
    free(mdp);
    return any;
}

/* got against want within the bound; NaN where want_nan */
static int check(const problem *pr, const char *isa, const char *what, double got, double want, double mag,
                 int want_nan, int64_t b, int64_t r, int64_t e)
{
    const acase *c = pr->c;
    const double u = 0x1p-24, half_ulp = pr->t == AMP_F32 ? 0x1p-24 : pr->t == AMP_BF16 ? 0x1p-8 : 0x1p-11;
    const double floor = pr->t == AMP_F32 ? 0x1p-150 : pr->t == AMP_BF16 ? 0x1p-134 : 0x1p-25; /* half the subnormal step */
    const double bound = 4.0 * (double)(c->L + c->S + c->E + c->Ev + 16) * u * mag + half_ulp * fabs(want) + floor;
    if (want_nan ? isnan(got) : fabs(got - want) <= bound)
        return 1;
    printf("   %s sdpa_backward %s %s: [%ld, %ld, %ld] is %.9g, oracle %.9g%s, bound %.3g\n", isa, amp_dtype_name(pr->t),
           what, (long)b, (long)r, (long)e, got, want, want_nan ? " (NaN)" : "", bound);
    return 0;
}

static int within_bound(const problem *pr, const char *isa, const void *dq, const void *dk, const void *dv)
{
    const acase *c = pr->c;
    const amp_sdpa_desc *d = pr->d;
    const double sc = (double)(float)d->scale;
    const size_t ls = (size_t)(c->L * c->S);
    double *P = malloc(ls * sizeof(double)), *dS = malloc(ls * sizeof(double)), *mS = malloc(ls * sizeof(double));
    int *row_nan = malloc((size_t)c->L * sizeof(int)), ok = 1;
    assert_non_null(P);
    assert_non_null(dS);
    assert_non_null(mS);
    assert_non_null(row_nan);
    for (int64_t b = 0; b < c->batch && ok; b++) {
        const int bad = oracle_entry(pr, b, P, dS, mS, row_nan);
        for (int64_t i = 0; i < c->L && ok; i++) /* dq */
            for (int64_t e = 0; e < c->E && ok; e++) {
                double want = 0, mag = 0;
                for (int64_t j = 0; j < c->S && !row_nan[i]; j++) {
                    const double kv = at(pr, pr->k, b * d->k_batch_stride + j * c->E + e);
                    want += dS[i * c->S + j] * kv;
                    mag += mS[i * c->S + j] * fabs(kv);
                }
                ok = check(pr, isa, "dq", at(pr, dq, b * d->q_batch_stride + i * c->E + e), want * sc, mag * sc,
                           row_nan[i], b, i, e);
            }
        for (int64_t j = 0; j < c->S && ok; j++) { /* dk, dv */
            for (int64_t e = 0; e < c->E && ok; e++) {
                double want = 0, mag = 0;
                for (int64_t i = 0; i < c->L && !bad; i++) {
                    const double qv = at(pr, pr->q, b * d->q_batch_stride + i * c->E + e);
                    want += dS[i * c->S + j] * qv;
                    mag += mS[i * c->S + j] * fabs(qv);
                }
                ok = check(pr, isa, "dk", at(pr, dk, b * d->k_batch_stride + j * c->E + e), want * sc, mag * sc, bad,
                           b, j, e);
            }
            for (int64_t e = 0; e < c->Ev && ok; e++) {
                double want = 0, mag = 0;
                for (int64_t i = 0; i < c->L && !bad; i++) {
                    const double g = at(pr, pr->dy, (b * c->L + i) * c->Ev + e);
                    want += P[i * c->S + j] * g;
                    mag += P[i * c->S + j] * fabs(g);
                }
                ok = check(pr, isa, "dv", at(pr, dv, b * d->v_batch_stride + j * c->Ev + e), want, mag, bad, b, j, e);
            }
        }
    }
    free(P);
    free(dS);
    free(mS);
    free(row_nan);
    return ok;
}

static void run_case(const amp_kernel_table *k, amp_dtype t, const acase *c)
{
    const int64_t kvb = c->kv_shared ? 1 : c->batch;
    const amp_sdpa_desc d = case_desc(c);
    const size_t nq = (size_t)(c->batch * c->L * c->E), nk = (size_t)(kvb * c->S * c->E), nv = (size_t)(kvb * c->S * c->Ev);
    const size_t es = amp_dtype_size(t);
    void *q = filled(t, nq, 2.0), *kk = filled(t, nk, 2.0), *v = filled(t, nv, 1.0);
    void *dy = filled(t, (size_t)(c->batch * c->L * c->Ev), 1.0);
    void *mask = c->mask ? filled(t, (size_t)(c->batch * c->L * c->S), 3.0) : NULL;
    void *g[2][3];
    for (int r = 0; r < 2; r++) {
        g[r][0] = malloc(nq * es + 1);
        g[r][1] = malloc(nk * es + 1);
        g[r][2] = malloc(nv * es + 1);
        for (int w = 0; w < 3; w++)
            assert_non_null(g[r][w]);
    }
    uint8_t *bm = case_bool_mask(c);
    case_nan(t, c, q);
    amp_set_threads(1);
    call(k, t, &d, q, kk, v, mask, bm, dy, g[0][0], g[0][1], g[0][2]);
    amp_set_threads(2);
    call(k, t, &d, q, kk, v, mask, bm, dy, g[1][0], g[1][1], g[1][2]);
    amp_set_threads(0);
    assert_memory_equal(g[0][0], g[1][0], nq * es);
    assert_memory_equal(g[0][1], g[1][1], nk * es);
    assert_memory_equal(g[0][2], g[1][2], nv * es);
    if (c->kv_shared) { /* the reference's case: its bits */
        call(&amp_ref_kernel_table, t, &d, q, kk, v, mask, bm, dy, g[1][0], g[1][1], g[1][2]);
        assert_memory_equal(g[0][0], g[1][0], nq * es);
        assert_memory_equal(g[0][1], g[1][1], nk * es);
        assert_memory_equal(g[0][2], g[1][2], nv * es);
    } else {
        const problem pr = { t, c, &d, q, kk, v, mask, dy, bm };
        assert_true(within_bound(&pr, k->isa, g[0][0], g[0][1], g[0][2]));
    }
    for (int r = 0; r < 2; r++)
        for (int w = 0; w < 3; w++)
            free(g[r][w]);
    free(q);
    free(kk);
    free(v);
    free(dy);
    free(mask);
    free(bm);
}

static const acase cases[] = {
    { 2, 197, 197, 64, 64, 0, 0, 0, 0, -1 }, /* a ViT's heads */
    { 2, 128, 128, 64, 64, 0, 1, 0, 0, -1 }, /* BERT's, with an additive mask */
    { 2, 5, 17, 3, 33, 0, 0, 0, 0, -1 },
    { 2, 9, 33, 16, 8, 0, 0, 1, 0, -1 },     /* a boolean mask, row 1 all masked */
    { 3, 20, 20, 7, 17, 0, 0, 0, 1, -1 },    /* causal */
    { 3, 7, 65, 9, 70, 1, 1, 0, 0, -1 },     /* keys and values shared: the reference */
    { 2, 6, 15, 8, 16, 0, 0, 0, 0, 10 },     /* a NaN in row 1's query */
    { 1, 1, 1, 1, 1, 0, 0, 0, 0, -1 },
};

static void test_isa(void **state)
{
    const char *isa = *state;
    const amp_kernel_table *k = table_under_test(isa);
    static const amp_dtype types[] = { AMP_F32, AMP_BF16, AMP_F16 };
    if (k == NULL)
        skip();
    if (strncmp(isa, "avx", 3) == 0) /* the x86 sets' own kernel */
        assert_true(k->sdpa_backward_f32 != amp_ref_kernel_table.sdpa_backward_f32 &&
                    k->sdpa_backward_bf16 != amp_ref_kernel_table.sdpa_backward_bf16 &&
                    k->sdpa_backward_f16 != amp_ref_kernel_table.sdpa_backward_f16);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            /* the reference's own run: its slow ViT-sized case once, in f32 */
            if (strcmp(k->isa, "ref") == 0 && ci == 0 && ti > 0)
                continue;
            run_case(k, types[ti], &cases[ci]);
        }
}
