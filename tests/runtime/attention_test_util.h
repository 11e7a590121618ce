/* attention_test_util.h: what the tests of scaled dot-product attention
 * (test_fastattention.c, test_fastattention_backward.c) share: random
 * operands in [-scale, scale] rounded into the dtype, the cases' shape
 * and options, their descriptor (keys and values shared by the batch:
 * batch stride 0), the boolean mask (batch 0's row 1 every position
 * masked), the NaN query, and main, which runs test_isa for every set.  The including file defines
 * ATTENTION_TEST_SEED, its generator's start, and test_isa(state), the
 * test of the set named by *state. */
#ifndef AMPRT_ATTENTION_TEST_UTIL_H
#define AMPRT_ATTENTION_TEST_UTIL_H

static uint64_t rng = ATTENTION_TEST_SEED;

static double uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53 * 2 - 1;
}

typedef struct {
    int64_t batch, L, S, E, Ev;
    int kv_shared, mask, bool_mask, causal, nan_at; /* nan_at: a query element made NaN, or -1 */
} acase;

static void *filled(amp_dtype t, size_t n, double scale)
{
    void *p = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        amp_store_from_f32(t, p, i, (float)(uniform() * scale));
    return p;
}

/* c's descriptor: rows contiguous per batch entry, scale 1 / sqrt(E) */
static amp_sdpa_desc case_desc(const acase *c)
{
    const amp_sdpa_desc d = { c->batch, c->L, c->S, c->E, c->Ev, c->L * c->E, c->kv_shared ? 0 : c->S * c->E,
                              c->kv_shared ? 0 : c->S * c->Ev, c->L * c->S, 1.0 / sqrt((double)c->E), c->causal };
    return d;
}

/* c's boolean mask (NULL without one): about three positions in four
 * kept, batch 0's row 1 every position masked */
static uint8_t *case_bool_mask(const acase *c)
{
    uint8_t *bm;
    if (!c->bool_mask)
        return NULL;
    bm = malloc((size_t)(c->batch * c->L * c->S));
    assert_non_null(bm);
    for (int64_t i = 0; i < c->batch * c->L * c->S; i++)
        bm[i] = uniform() > -0.5;
    for (int64_t j = 0; j < c->S; j++)
        bm[1 * c->S + j] = 0;
    return bm;
}

/* the query q of dtype t with c's NaN, if it has one */
static void case_nan(amp_dtype t, const acase *c, void *q)
{
    if (c->nan_at >= 0)
        amp_store_from_f32(t, q, (size_t)c->nan_at, NAN);
}

static void test_isa(void **state);

int main(void)
{
    static const char *isas[] = { "ref", "avx2", "avx512", "avx512bf16", "neon", "neonfp16", "neonbf16" };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_isa, (void *)isas[0]), cmocka_unit_test_prestate(test_isa, (void *)isas[1]),
        cmocka_unit_test_prestate(test_isa, (void *)isas[2]), cmocka_unit_test_prestate(test_isa, (void *)isas[3]),
        cmocka_unit_test_prestate(test_isa, (void *)isas[4]), cmocka_unit_test_prestate(test_isa, (void *)isas[5]),
        cmocka_unit_test_prestate(test_isa, (void *)isas[6]),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
