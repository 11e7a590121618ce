/*
 * test_random.c - the counter-based generator (Philox4x32-10) and dropout.
 *
 * The generator against the known-answer vectors of its specification
 * (Salmon et al., SC'11): the three Philox4x32-10 cases published with the
 * algorithm (counter and key all zeros, all ones, and the digits of pi),
 * which tests/runtime/philox_kat.py recomputes from the round function.
 * Then the properties the code generator relies on: the element/stream/
 * offset layout of amp_random_u32; masks whose keep rate is 1 - p within
 * five binomial standard deviations; different streams, offsets and seeds
 * giving independent masks (agreement near p^2 + (1-p)^2); and the dropout
 * kernel in every dtype, through the public and the reference table,
 * against x / (1 - p) where the mask keeps and 0 where it drops, in place
 * as well, with p = 0 the identity and p = 1 all zeros.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel_test_util.h"

static void test_known_answers(void **state)
{
    static const struct {
        uint32_t counter[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    (void)state;
    for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
        uint32_t out[4];
        amp_philox4x32_10(kat[k].counter, kat[k].key, out);
        for (int j = 0; j < 4; j++)
            if (out[j] != kat[k].out[j])
                fail_msg("philox4x32-10 vector %zu word %d: got %08x, expected %08x", k, j, (unsigned)out[j],
                         (unsigned)kat[k].out[j]);
    }
}

/* amp_random_u32 is block i/4 of the documented counter, word i%4. */
static void test_layout(void **state)
{
    static const uint64_t seeds[] = {0, 0x0123456789abcdefull};
    static const uint64_t is[] = {0, 1, 3, 4, 7, 1000003, (uint64_t)1 << 33, ((uint64_t)1 << 41) + 5};
    (void)state;
    for (size_t s = 0; s < 2; s++)
        for (size_t k = 0; k < sizeof is / sizeof is[0]; k++) {
            uint64_t seed = seeds[s], stream = 5 + s, offset = 0x100000007ull * (k + 1), i = is[k], block = i / 4;
            uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
            uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32) | (uint32_t)(stream << 8), (uint32_t)offset,
                               (uint32_t)(offset >> 32)};
            uint32_t out[4];
            amp_philox4x32_10(ctr, key, out);
            assert_int_equal(amp_random_u32(seed, stream, offset, i), out[i % 4]);
        }
}

static size_t kept(const uint8_t *m, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(m[i] == 0 || m[i] == 1);
        k += m[i];
    }
    return k;
}

static void test_keep_rate(void **state)
{
    static const double ps[] = {0.0, 0.1, 0.25, 0.5, 0.9, 0.999, 1.0};
    enum { N = 1 << 16 };
    uint8_t *m = malloc(N);
    (void)state;
    assert_non_null(m);
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
        for (uint64_t offset = 0; offset < 3; offset++) {
            double p = ps[k], expect = N * (1 - p), sd = sqrt(N * p * (1 - p));
            amp_dropout_mask(N, p, 42, 1, offset, m);
            double got = (double)kept(m, N);
            if (p == 0 || p == 1)
                assert_true(got == expect); /* exactly: every element kept, or none */
            else if (fabs(got - expect) > 5 * sd)
                fail_msg("p=%g offset %llu: %g kept of %d, expected %g +- %g", p, (unsigned long long)offset, got,
                         (int)N, expect, 5 * sd);
            /* no long runs: each quarter of the tensor keeps its share too */
            for (int q = 0; p > 0 && p < 1 && q < 4; q++) {
                double gq = (double)kept(m + q * (N / 4), N / 4), eq = expect / 4, sq = sd / 2;
                assert_true(fabs(gq - eq) <= 5 * sq);
            }
        }
    free(m);
}

/* Two masks of p = 0.5 from draws that differ in one coordinate agree on
 * about half their elements; the same coordinates give the same mask. */
static void test_independent_streams(void **state)
{
    enum { N = 1 << 14 };
    uint8_t *a = malloc(N), *b = malloc(N);
    const uint64_t coords[][3] = {{7, 0, 0}, {8, 0, 0}, {7, 1, 0}, {7, 0, 1}, {7, 0, (uint64_t)1 << 32},
                                  {(uint64_t)1 << 32 | 7, 0, 0}};
    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    amp_dropout_mask(N, 0.5, coords[0][0], coords[0][1], coords[0][2], a);
    amp_dropout_mask(N, 0.5, coords[0][0], coords[0][1], coords[0][2], b);
    assert_memory_equal(a, b, N);
    for (size_t k = 1; k < sizeof coords / sizeof coords[0]; k++) {
        amp_dropout_mask(N, 0.5, coords[k][0], coords[k][1], coords[k][2], b);
        size_t same = 0;
        for (size_t i = 0; i < N; i++)
            same += a[i] == b[i];
        double sd = sqrt(N * 0.25);
        if (fabs((double)same - N / 2.0) > 5 * sd)
            fail_msg("coordinates %zu: %zu of %d elements agree with the base mask", k, same, (int)N);
    }
    free(a);
    free(b);
}

static void test_dropout_kernel(void **state)
{
    static const double ps[] = {0.0, 0.2, 0.5, 0.75, 1.0};
    static const size_t sizes[] = {0, 1, 3, 4, 5, 257};
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                amp_dtype t = dtypes[d];
                size_t n = sizes[s];
                double p = ps[k];
                uint64_t seed = 0x5eed + k, stream = s, offset = 3 * k + 1;
                tensor x = tensor_random(t, n, -4, 4), y[NTABLES];
                uint8_t *m = malloc(n ? n : 1);
                assert_non_null(m);
                amp_dropout_mask(n, p, seed, stream, offset, m);
                long double scale = p < 1 ? 1.0L / (1.0L - p) : 0;
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_new(t, n);
                    KCALL(tables[e], t, dropout, n, x.data, p, seed, stream, offset, y[e].data);
                    for (size_t i = 0; i < n; i++) {
                        long double oracle = m[i] ? get(&x, i) * scale : 0;
                        if (p == 0)
                            assert_true(get(&y[e], i) == get(&x, i)); /* the identity, bit for bit */
                        else if (!m[i])
                            assert_true(get(&y[e], i) == 0);
                        else /* the scale rounded to the compute type, the product, the store */
                            expect_close(&y[e], i, oracle, 2 * u_acc(t) * fabsl(oracle), "dropout");
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                /* in place: the same values */
                tensor z = tensor_copy(&x);
                KCALL(tables[0], t, dropout, n, z.data, p, seed, stream, offset, z.data);
                assert_memory_equal(z.data, y[0].data, n * amp_dtype_size(t));
                /* the gradient is the same call on dy: on ones it is the mask
                 * times the scale, exactly the elements amp_dropout_mask keeps */
                for (size_t i = 0; i < n; i++)
                    set(&z, i, 1.0);
                KCALL(tables[1], t, dropout, n, z.data, p, seed, stream, offset, z.data);
                for (size_t i = 0; i < n; i++)
                    if ((get(&z, i) != 0) != m[i])
                        fail_msg("dropout %s p=%g [%zu]: the kernel %s, the mask says %d", amp_dtype_name(t), p, i,
                                 get(&z, i) != 0 ? "keeps" : "drops", m[i]);
                tensor_free(&z);
                for (int e = 0; e < NTABLES; e++)
                    tensor_free(&y[e]);
                tensor_free(&x);
                free(m);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_keep_rate),
        cmocka_unit_test(test_independent_streams),
        cmocka_unit_test(test_dropout_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
