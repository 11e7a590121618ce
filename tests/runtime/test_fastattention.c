/*
 * test_fastattention.c - scaled dot-product attention (sdpa) of every
 * kernel set this CPU supports (x86/avx512_attention.c,
 * x86/avx2_attention.c; the reference elsewhere) against a double
 * oracle, within the products' bound: an sdpa is a product, whose dot
 * products and sums over the keys may run in another order than the
 * reference's.  Per output, with u = 2^-24,
 *     |y - oracle| <= 2 (max_j d_j + (S + 6) u) sum_j p_j |v_j| / sum_j p_j
 *                     + half an ulp of T at |oracle|,
 * d_j = (E + 3) u scale sum_e |q_e k_je| + 2 u |s_j| the error of score
 * j; the reference meets the same bound (checked in the run of the
 * "ref" set).  Cases: a ViT's heads (197 x 197,
 * E 64), odd sizes around the vector widths, an additive mask, a boolean
 * mask, causal, a row with every position masked (NaN), a NaN input (its
 * row NaN), keys and values shared by the batch (stride 0); 1 and 2
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

#define ATTENTION_TEST_SEED 0x2545f4914f6cdd1dull
#include "attention_test_util.h"

static void call(const amp_kernel_table *k, amp_dtype t, const amp_sdpa_desc *d, const void *q, const void *kk,
                 const void *v, const void *mask, const uint8_t *bm, void *y)
{
    switch (t) {
    case AMP_F32: k->sdpa_f32(d, q, kk, v, mask, bm, y); break;
    case AMP_BF16: k->sdpa_bf16(d, q, kk, v, mask, bm, y); break;
    default: k->sdpa_f16(d, q, kk, v, mask, bm, y); break;
    }
}

/* 1 if y is within the bound of every output (NaN exactly where the
 * oracle's row is NaN); prints the first miss */
static int within_bound(const char *isa, amp_dtype t, const acase *c, const amp_sdpa_desc *d, const void *q,
                        const void *k, const void *v, const void *mask, const uint8_t *bm, const void *y)
{
    const double u = 0x1p-24, half_ulp = t == AMP_F32 ? 0x1p-24 : t == AMP_BF16 ? 0x1p-8 : 0x1p-11;
    double *s = malloc((size_t)c->S * sizeof(double)), *err = malloc((size_t)c->S * sizeof(double));
    assert_non_null(s);
    assert_non_null(err);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < c->L; i++) {
            double max = -INFINITY, maxerr = 0, den = 0;
            int nan = 0;
            for (int64_t j = 0; j < c->S; j++) {
                const int64_t mi = b * d->mask_batch_stride + i * c->S + j;
                double dot = 0, mag = 0;
                s[j] = -INFINITY;
                err[j] = 0;
                if ((c->causal && j > i) || (bm != NULL && !bm[mi]))
                    continue;
                for (int64_t e = 0; e < c->E; e++) {
                    const double a = amp_load_as_f32(t, q, (size_t)(b * d->q_batch_stride + i * c->E + e));
                    const double w = amp_load_as_f32(t, k, (size_t)(b * d->k_batch_stride + j * c->E + e));
                    dot += a * w;
                    mag += fabs(a * w);
                }
                s[j] = dot * (double)(float)d->scale + (mask != NULL ? amp_load_as_f32(t, mask, (size_t)mi) : 0);
                err[j] = (double)(c->E + 3) * u * (double)(float)d->scale * mag + 2 * u * fabs(s[j]);
                if (isnan(s[j]))
                    nan = 1;
                else if (s[j] > max)
                    max = s[j];
                if (err[j] > maxerr)
                    maxerr = err[j];
            }
            for (int64_t j = 0; j < c->S; j++) {
                s[j] = exp(s[j] - max); /* p_j from here on */
                den += s[j];
            }
            for (int64_t e = 0; e < c->Ev; e++) {
                const double got = amp_load_as_f32(t, y, (size_t)((b * c->L + i) * c->Ev + e));
                double num = 0, mag = 0;
                if (nan || max == -INFINITY) {
                    if (!isnan(got)) {
                        printf("   %s sdpa %s: [%ld, %ld, %ld] is %.9g, want NaN\n", isa, amp_dtype_name(t),
                               (long)b, (long)i, (long)e, got);
                        free(s);
                        free(err);
                        return 0;
                    }
                    continue;
                }
                for (int64_t j = 0; j < c->S; j++) {
                    const double p = s[j],
                                 vv = amp_load_as_f32(t, v, (size_t)(b * d->v_batch_stride + j * c->Ev + e));
                    num += p * vv;
                    mag += p * fabs(vv);
                }
                const double want = num / den, bound = 2 * (maxerr + (double)(c->S + 6) * u) * mag / den + half_ulp * fabs(want);
                if (!(fabs(got - want) <= bound)) {
                    printf("   %s sdpa %s: [%ld, %ld, %ld] is %.9g, oracle %.9g, bound %.3g\n", isa, amp_dtype_name(t),
                           (long)b, (long)i, (long)e, got, want, bound);
                    free(s);
                    free(err);
                    return 0;
                }
            }
        }
    free(s);
    free(err);
    return 1;
}

static void run_case(const amp_kernel_table *k, amp_dtype t, const acase *c)
{
    const int64_t kvb = c->kv_shared ? 1 : c->batch;
    const amp_sdpa_desc d = case_desc(c);
    const size_t ny = (size_t)(c->batch * c->L * c->Ev), bytes = ny * amp_dtype_size(t);
    void *q = filled(t, (size_t)(c->batch * c->L * c->E), 2.0), *kk = filled(t, (size_t)(kvb * c->S * c->E), 2.0);
    void *v = filled(t, (size_t)(kvb * c->S * c->Ev), 1.0);
    void *mask = c->mask ? filled(t, (size_t)(c->batch * c->L * c->S), 3.0) : NULL;
    void *y1 = malloc(bytes + 1), *y2 = malloc(bytes + 1), *yr = malloc(bytes + 1);
    assert_non_null(y1);
    assert_non_null(y2);
    assert_non_null(yr);
    uint8_t *bm = case_bool_mask(c);
    case_nan(t, c, q);
    amp_set_threads(1);
    call(k, t, &d, q, kk, v, mask, bm, y1);
    amp_set_threads(2);
    call(k, t, &d, q, kk, v, mask, bm, y2);
    amp_set_threads(0);
    assert_memory_equal(y1, y2, bytes);
    if (k == &amp_ref_kernel_table || strcmp(k->isa, "ref") == 0) { /* the bound holds the reference too */
        call(&amp_ref_kernel_table, t, &d, q, kk, v, mask, bm, yr);
        assert_true(within_bound("ref", t, c, &d, q, kk, v, mask, bm, yr));
    }
    assert_true(within_bound(k->isa, t, c, &d, q, kk, v, mask, bm, y1));
    free(q);
    free(kk);
    free(v);
    free(mask);
    free(bm);
    free(y1);
    free(y2);
    free(yr);
}

static const acase cases[] = {
    { 2, 197, 197, 64, 64, 0, 0, 0, 0, -1 }, /* a ViT's heads */
    { 2, 128, 128, 64, 64, 0, 1, 0, 0, -1 }, /* BERT's, with an additive mask */
    { 2, 5, 17, 3, 33, 0, 0, 0, 0, -1 },
    { 2, 9, 33, 16, 8, 0, 0, 1, 0, -1 },     /* a boolean mask, row 1 all masked */
    { 3, 20, 20, 7, 17, 0, 0, 0, 1, -1 },    /* causal */
    { 4, 7, 65, 9, 70, 1, 1, 0, 0, -1 },     /* keys and values shared */
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
    if (strncmp(isa, "avx", 3) == 0) /* the x86 sets' own */
        assert_true(k->sdpa_f32 != amp_ref_kernel_table.sdpa_f32 && k->sdpa_bf16 != amp_ref_kernel_table.sdpa_bf16 &&
                    k->sdpa_f16 != amp_ref_kernel_table.sdpa_f16);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            run_case(k, types[ti], &cases[ci]);
}
