/*
 * test_index_put.c - index_put and index_put_mask (amprt/spatial.h) and
 * their index checks, every dtype,
 * through the public and the reference table, against long double
 * oracles written from the contracts; and fixed cases whose answers were
 * printed by PyTorch 1.13 in float64 (the program does not need torch).
 * Conventions and the error bound: kernel_test_util.h and
 * oracle_test_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "oracle_test_util.h"

/* ---- index_put, index_put_mask ----------------------------------------------- */

typedef struct {
    int ndim;
    int64_t shape[4];
    int index_ndim;
    int64_t x_dim0;
    int64_t v_stride[4];
} iput_case;

static const iput_case iput_cases[] = {
    { 2, { 4, 3 }, 1, 5, { 3, 1 } },
    { 3, { 2, 3, 2 }, 2, 4, { 0, 2, 1 } },     /* 2-D index, values broadcast on dim 0 */
    { 1, { 6 }, 1, 3, { 1 } },                 /* rows of one element */
    { 3, { 5, 2, 3 }, 1, 3, { 1, 0, 5 } },     /* values [3][5] transposed, broadcast on dim 1 */
    { 2, { 0, 3 }, 1, 4, { 3, 1 } },           /* no index */
    { 2, { 40, 7 }, 1, 9, { 7, 1 } },          /* many repeats */
};

static void test_index_put(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof iput_cases / sizeof iput_cases[0]; ci++)
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const iput_case *c = &iput_cases[ci];
                amp_dtype t = dtypes[d];
                int64_t n_index = numel(c->index_ndim, c->shape), inner = numel(c->ndim - c->index_ndim, c->shape + c->index_ndim);
                int64_t *index = malloc((size_t)(n_index ? n_index : 1) * sizeof *index);
                size_t ny = (size_t)(c->x_dim0 * inner);
                tensor v = tensor_random(t, extent(c->ndim, c->shape, c->v_stride), -4, 4);
                tensor y0 = tensor_random(t, ny, -4, 4), y[NTABLES];
                char what[96];
                int rc;
                assert_non_null(index);
                for (int64_t j = 0; j < n_index; j++) /* in [-x_dim0, x_dim0), repeats certain */
                    index[j] = (int64_t)(rng_next() % (uint64_t)(2 * c->x_dim0)) - c->x_dim0;
                if (n_index >= 3) {
                    index[n_index - 1] = index[0] - (index[0] < 0 ? -c->x_dim0 : c->x_dim0); /* the same row, other sign */
                    index[1] = index[0];
                }
                snprintf(what, sizeof what, "index_put case %zu%s", ci, accumulate ? " accumulate" : "");
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_copy(&y0);
                    KCALL_STATUS(rc, tables[e], t, index_put, c->ndim, c->shape, c->index_ndim, index, c->x_dim0, v.data,
                                 c->v_stride, accumulate, y[e].data);
                    assert_int_equal(rc, AMP_OK);
                    for (int64_t row = 0; row < c->x_dim0; row++)
                        for (int64_t r = 0; r < inner; r++) {
                            long double sum = get(&y0, (size_t)(row * inner + r)), abs_sum = fabsl(sum);
                            int64_t last = -1, count = 0, coord[4];
                            for (int64_t j = 0; j < n_index; j++) {
                                if ((index[j] + c->x_dim0) % c->x_dim0 != row)
                                    continue;
                                coords_of(c->ndim, c->shape, j * inner + r, coord);
                                sum += get(&v, at(c->ndim, coord, c->v_stride));
                                abs_sum += fabsl(get(&v, at(c->ndim, coord, c->v_stride)));
                                last = j;
                                count++;
                            }
                            if (accumulate)
                                expect_close(&y[e], (size_t)(row * inner + r), sum, (count + 1) * abs_sum * u_acc(t), what);
                            else if (last < 0)
                                expect_exact(&y[e], (size_t)(row * inner + r), get(&y0, (size_t)(row * inner + r)), what);
                            else {
                                coords_of(c->ndim, c->shape, last * inner + r, coord);
                                expect_exact(&y[e], (size_t)(row * inner + r), get(&v, at(c->ndim, coord, c->v_stride)),
                                             what);
                            }
                        }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                /* an index out of range, last: nothing written */
                if (n_index > 0)
                    for (int bad = 0; bad < 2; bad++) {
                        int64_t keep = index[n_index - 1];
                        index[n_index - 1] = bad ? -c->x_dim0 - 1 : c->x_dim0;
                        for (int e = 0; e < NTABLES; e++) {
                            tensor yb = tensor_copy(&y0);
                            KCALL_STATUS(rc, tables[e], t, index_put, c->ndim, c->shape, c->index_ndim, index, c->x_dim0,
                                         v.data, c->v_stride, accumulate, yb.data);
                            assert_int_equal(rc, AMP_ERR_TARGET_OUT_OF_RANGE);
                            expect_same(&yb, &y0, "index_put out of range");
                            tensor_free(&yb);
                        }
                        index[n_index - 1] = keep;
                    }
                free(index);
                tensor_free(&v);
                tensor_free(&y0);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

typedef struct {
    int ndim;
    int64_t x_shape[3];
    int mask_ndim;
    int64_t v_stride[3];
} mask_case;

static const mask_case mask_cases[] = {
    { 2, { 4, 3 }, 1, { 0, 1 } },
    { 2, { 4, 3 }, 1, { 0, 0 } },       /* one value for every element */
    { 3, { 2, 3, 2 }, 2, { 0, 0, 1 } }, /* 2-D mask */
    { 2, { 3, 2 }, 2, { 0, 0 } },       /* mask over every dim */
    { 3, { 5, 2, 3 }, 1, { 0, 1, 2 } }, /* values [3][2] transposed */
    { 2, { 0, 3 }, 1, { 0, 1 } },
};

static void test_index_put_mask(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (size_t ci = 0; ci < sizeof mask_cases / sizeof mask_cases[0]; ci++)
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const mask_case *c = &mask_cases[ci];
                amp_dtype t = dtypes[d];
                int nt = c->ndim - c->mask_ndim;
                int64_t n_mask = numel(c->mask_ndim, c->x_shape), inner = numel(nt, c->x_shape + c->mask_ndim);
                size_t ny = (size_t)(n_mask * inner);
                uint8_t *mask = malloc((size_t)(n_mask ? n_mask : 1));
                tensor v = tensor_random(t, extent(nt, c->x_shape + c->mask_ndim, c->v_stride + c->mask_ndim), -4, 4);
                tensor y0 = tensor_random(t, ny, -4, 4), y[NTABLES];
                char what[96];
                assert_non_null(mask);
                for (int64_t j = 0; j < n_mask; j++)
                    mask[j] = j == 0 ? 1 : (uint8_t)(rng_next() >> 63);
                snprintf(what, sizeof what, "index_put_mask case %zu%s", ci, accumulate ? " accumulate" : "");
                for (int e = 0; e < NTABLES; e++) {
                    y[e] = tensor_copy(&y0);
                    KCALL(tables[e], t, index_put_mask, c->ndim, c->x_shape, c->mask_ndim, mask, v.data, c->v_stride,
                          accumulate, y[e].data);
                    for (size_t i = 0; i < ny; i++) {
                        int64_t coord[3];
                        long double old = get(&y0, i), val;
                        coords_of(nt, c->x_shape + c->mask_ndim, (int64_t)i % inner, coord);
                        val = get(&v, at(nt, coord, c->v_stride + c->mask_ndim));
                        if (!mask[i / (size_t)inner])
                            expect_exact(&y[e], i, old, what);
                        else if (accumulate)
                            expect_close(&y[e], i, old + val, (fabsl(old) + fabsl(val)) * u_acc(t), what);
                        else
                            expect_exact(&y[e], i, val, what);
                    }
                }
                expect_public_equals_ref(&y[0], &y[1]);
                free(mask);
                tensor_free(&v);
                tensor_free(&y0);
                tensor_free(&y[0]);
                tensor_free(&y[1]);
            }
}

/* ---- Fixed cases printed by PyTorch 1.13 in float64 ------------------------------
 *
 * Inputs are multiples of 1/8 (or 1/16), exact in every dtype.  Script:
 * torch.set_default_dtype(torch.float64), then the calls named per array. */


/* x0 [4, 2].index_put_((idx,), v [3, 2], accumulate) and x0[mask] = [9, -9] */
static const double fx_x0[] = { 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0 };
static const double fx_v[] = { 0.5, -1.0, 2.0, 0.25, -3.0, 1.5 };
static const int64_t fx_idx_acc[] = { 0, -2, 0 };
static const int64_t fx_idx_noacc[] = { 3, -4, 1 };
static const double fx_iput_acc[] = { -1.5, 2.5, 3.0, 4.0, 7.0, 6.25, 7.0, 8.0 };
static const double fx_iput_noacc[] = { 2.0, 0.25, -3.0, 1.5, 5.0, 6.0, 0.5, -1.0 };
static const uint8_t fx_mask[] = { 1, 0, 1, 1 };
static const double fx_mask_v[] = { 9.0, -9.0 };
static const double fx_iput_mask[] = { 9.0, -9.0, 3.0, 4.0, 9.0, -9.0, 9.0, -9.0 };
static const double fx_iput_mask_acc[] = { 10.0, -7.0, 3.0, 4.0, 14.0, -3.0, 16.0, -1.0 };

static void test_index_put_matches_torch(void **state)
{
    static const int64_t shape2[2] = { 3, 2 };
    static const int64_t vs[2] = { 2, 1 }, mask_shape[2] = { 4, 2 }, mask_vs[2] = { 0, 1 };
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int e = 0; e < NTABLES; e++) {
            amp_dtype t = dtypes[d];
            const amp_kernel_table *k = tables[e];
            int rc;
            tensor y = tensor_new(t, 12);
            tensor tmp;
            tmp = tensor_of(t, 6, fx_v);
            tensor_free(&y);
            y = tensor_of(t, 8, fx_x0);
            KCALL_STATUS(rc, k, t, index_put, 2, shape2, 1, fx_idx_acc, 4, tmp.data, vs, 1, y.data);
            assert_int_equal(rc, AMP_OK);
            expect_all_close(&y, fx_iput_acc, 8, "index_put accumulate vs torch");
            tensor_free(&y);
            y = tensor_of(t, 8, fx_x0);
            KCALL_STATUS(rc, k, t, index_put, 2, shape2, 1, fx_idx_noacc, 4, tmp.data, vs, 0, y.data);
            assert_int_equal(rc, AMP_OK);
            expect_all_close(&y, fx_iput_noacc, 8, "index_put vs torch");
            tensor_free(&tmp);
            tmp = tensor_of(t, 2, fx_mask_v);
            for (int acc = 0; acc < 2; acc++) {
                tensor_free(&y);
                y = tensor_of(t, 8, fx_x0);
                KCALL(k, t, index_put_mask, 2, mask_shape, 1, fx_mask, tmp.data, mask_vs, acc, y.data);
                expect_all_close(&y, acc ? fx_iput_mask_acc : fx_iput_mask, 8, "index_put_mask vs torch");
            }
            tensor_free(&tmp);
            tensor_free(&y);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_put),
        cmocka_unit_test(test_index_put_mask),
        cmocka_unit_test(test_index_put_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
