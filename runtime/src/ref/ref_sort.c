/*
 * ref_sort.c - reference stable sort along one axis, with indices.
 *
 * Layout as softmax: [outer, dim, inner], the axis of length dim and stride
 * inner. Order as PyTorch's sort(stable=True): ascending or descending by
 * value, NaN above +inf (so first when descending), -0 equal to +0, equal
 * values in their original order in both directions.
 *
 * Sorting moves no arithmetic, so one body serves every dtype: values are
 * compared as doubles (every f64/f32/bf16/f16 value is exact in double)
 * and copied bit for bit. Stability comes from the comparison itself, which
 * breaks ties by original index; that makes any correct sort stable, so an
 * in-place heapsort of the index output is used, needing no scratch memory
 * and taking O(dim log dim) even on adversarial input. values must not
 * overlap x.
 */
#include <math.h>

#include "amprt_internal.h"

typedef struct {
    amp_dtype t;
    const void *x;
    int64_t *indices;
    int64_t base, inner; /* element k of the axis is at base + k * inner */
    int descending;
} sort_axis;

static AMP_ALWAYS_INLINE int64_t index_at(const sort_axis *a, int64_t k)
{
    return a->indices[a->base + k * a->inner];
}

/* Whether the element now at position i belongs before the one at j. */
static AMP_ALWAYS_INLINE int goes_before(const sort_axis *a, int64_t i, int64_t j)
{
    int64_t ii = index_at(a, i), ij = index_at(a, j);
    double vi = amp_ldd(a->t, a->x, a->base + ii * a->inner), vj = amp_ldd(a->t, a->x, a->base + ij * a->inner);
    int nan_i = isnan(vi), nan_j = isnan(vj);
    if (nan_i != nan_j) /* NaN is the largest value */
        return a->descending ? nan_i : nan_j;
    if (!nan_i && vi != vj)
        return a->descending ? vi > vj : vi < vj;
    return ii < ij;
}

static AMP_ALWAYS_INLINE void swap(const sort_axis *a, int64_t i, int64_t j)
{
    int64_t *pi = &a->indices[a->base + i * a->inner], *pj = &a->indices[a->base + j * a->inner];
    int64_t keep = *pi;
    *pi = *pj;
    *pj = keep;
}

/* Restore the heap property below `root` in positions [0, end): a parent
 * never goes before its children, so position 0 holds the element that
 * goes last. */
static AMP_ALWAYS_INLINE void sift_down(const sort_axis *a, int64_t root, int64_t end)
{
    for (;;) {
        int64_t child = 2 * root + 1;
        if (child >= end)
            return;
        if (child + 1 < end && goes_before(a, child, child + 1))
            child++;
        if (!goes_before(a, root, child))
            return;
        swap(a, root, child);
        root = child;
    }
}

static AMP_ALWAYS_INLINE void sort(amp_dtype t, int64_t outer, int64_t dim, int64_t inner, int descending,
                                   const void *x, void *values, int64_t *indices)
{
    size_t size = amp_dtype_size(t);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            sort_axis a;
            a.t = t;
            a.x = x;
            a.indices = indices;
            a.base = o * dim * inner + in;
            a.inner = inner;
            a.descending = descending;
            for (int64_t k = 0; k < dim; k++)
                indices[a.base + k * inner] = k;
            for (int64_t k = dim / 2 - 1; k >= 0; k--)
                sift_down(&a, k, dim);
            for (int64_t end = dim - 1; end > 0; end--) {
                swap(&a, 0, end);
                sift_down(&a, 0, end);
            }
            for (int64_t k = 0; k < dim; k++)
                memcpy((char *)values + (size_t)(a.base + k * inner) * size,
                       (const char *)x + (size_t)(a.base + index_at(&a, k) * inner) * size, size);
        }
}

#include "ref_wrapper.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_sort REF_CALLS(sort)
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
