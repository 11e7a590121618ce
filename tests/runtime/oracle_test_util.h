/*
 * oracle_test_util.h - what the long double oracle tests of single ops
 * share (test_prelu.c, test_renorm.c, test_vector_products.c,
 * test_index_put.c, test_grid_sampler.c, test_margin_loss.c), on top of
 * kernel_test_util.h: strided operands' element counts, extents and
 * coordinates; exact and loose comparisons (with PyTorch's numbers); the
 * check of a loss under each reduction; a double parameter rounded to the
 * compute type.  Each oracle returns the evaluation error in units of
 * u_acc: roughly every rounded operation costs one or two units of the
 * magnitude it produces, a sum of n terms n units of the sum of their
 * magnitudes.
 */
#ifndef ORACLE_TEST_UTIL_H
#define ORACLE_TEST_UTIL_H

#include "kernel_test_util.h"

static KTU_UNUSED int64_t numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

/* Elements an operand read with `stride` over `shape` needs. */
static KTU_UNUSED size_t extent(int ndim, const int64_t *shape, const int64_t *stride)
{
    int64_t last = 0;
    if (numel(ndim, shape) == 0)
        return 0;
    for (int d = 0; d < ndim; d++)
        last += (shape[d] - 1) * stride[d];
    return (size_t)last + 1;
}

/* Row-major coordinates of flat index i. */
static KTU_UNUSED void coords_of(int ndim, const int64_t *shape, int64_t i, int64_t *coord)
{
    for (int d = ndim - 1; d >= 0; d--) {
        coord[d] = i % shape[d];
        i /= shape[d];
    }
}

static KTU_UNUSED size_t at(int ndim, const int64_t *coord, const int64_t *stride)
{
    int64_t off = 0;
    for (int d = 0; d < ndim; d++)
        off += coord[d] * stride[d];
    return (size_t)off;
}

/* y must equal `want` bit for bit (a copy, or untouched). */
static KTU_UNUSED void expect_same(const tensor *y, const tensor *want, const char *what)
{
    if (memcmp(y->data, want->data, y->n * amp_dtype_size(y->t)) != 0)
        fail_msg("%s %s: output changed", what, amp_dtype_name(y->t));
}

/* The value a copy must produce exactly (NaN matches NaN). */
static KTU_UNUSED void expect_exact(const tensor *y, size_t i, long double want, const char *what)
{
    long double v = get(y, i);
    if (!(v == want || (isnan(v) && isnan(want))))
        fail_msg("%s %s [%zu]: got %.17Lg, want %.17Lg", what, amp_dtype_name(y->t), i, v, want);
}

/* One loss per sample, or their mean or sum; acc[] in units of u_acc. */
static KTU_UNUSED void check_losses(const tensor *y, int reduction, size_t n, const long double *loss, const long double *acc,
                         const char *what)
{
    long double total = 0, total_abs = 0, acc_sum = 0, u = u_acc(y->t);
    for (size_t i = 0; i < n; i++) {
        total += loss[i];
        total_abs += finite_or_zero(fabsl(loss[i]));
        acc_sum += acc[i];
    }
    if (reduction == AMP_REDUCTION_NONE)
        for (size_t i = 0; i < n; i++)
            expect_close(y, i, loss[i], acc[i] * u, what);
    else if (reduction == AMP_REDUCTION_SUM)
        expect_close(y, 0, total, (acc_sum + n * total_abs) * u, what);
    else /* 0/0 = NaN for n = 0 */
        expect_close(y, 0, total / (long double)n,
                     ((acc_sum + n * total_abs) / (long double)n + finite_or_zero(fabsl(total / (long double)n))) * u,
                     what);
}

/* A double parameter as the kernel sees it: rounded to the compute type. */
static KTU_UNUSED long double as_acc(amp_dtype t, double v)
{
    return t == AMP_F64 ? (long double)v : (long double)(float)v;
}

static KTU_UNUSED void expect_all_close(const tensor *y, const double *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        expect_close(y, i, want[i], 64 * u_acc(y->t) * (isfinite(want[i]) ? fabs(want[i]) + 4 : 0), what);
}


#endif
