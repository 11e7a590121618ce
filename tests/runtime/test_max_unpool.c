/*
 * test_max_unpool.c - max_unpool (amprt/spatial.h) in every dtype, through
 * the public and the reference tables: the scatter to the recorded
 * positions and the index checks.
 */
#include <stdbool.h>

#include "kernel_test_util.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_unpool_scatters_and_checks),
    };
    return cmocka_run_group_tests_name("max_unpool", tests, NULL, NULL);
}
