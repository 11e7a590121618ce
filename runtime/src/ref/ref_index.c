/*
 * ref_index.c - reference index-driven kernels: embedding, index_select,
 * index_copy, gather and scatter_add.
 *
 * Indices are run-time data, so these kernels check them: an index must be
 * in [0, size), as PyTorch requires of these ops (a negative index is an
 * error there, not a count from the end). Every index is
 * checked before anything is written, so on AMP_ERR_TARGET_OUT_OF_RANGE y
 * is in fact untouched (the contract only promises "unspecified").
 *
 * All but scatter_add only move elements; they copy the stored bits
 * (memcpy of one element), so they are exact for every dtype, NaN payloads
 * and -0 included, and one body serves every dtype. scatter_add adds, in
 * ACC, so its body is in ref_index.inc, instantiated once per ACC below.
 *
 * embedding, index_select, index_copy and gather are hand-written: they
 * move elements by size, through bodies that take no dtype.
 */
#include <string.h>

#include "amprt_internal.h"

static AMP_ALWAYS_INLINE int64_t normalized(int64_t i, int64_t size)
{
    return i < 0 ? i + size : i;
}

static AMP_ALWAYS_INLINE int check_indices(int64_t n, const int64_t *index, int64_t size)
{
    for (int64_t i = 0; i < n; i++)
        if (index[i] < 0 || index[i] >= size)
            return AMP_ERR_TARGET_OUT_OF_RANGE;
    return AMP_OK;
}

static AMP_ALWAYS_INLINE int64_t element_count(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int k = 0; k < ndim; k++)
        n *= shape[k];
    return n;
}

static AMP_ALWAYS_INLINE void copy_element(size_t elem_size, void *dst, int64_t dst_at, const void *src,
                                           int64_t src_at)
{
    memcpy((char *)dst + (size_t)dst_at * elem_size, (const char *)src + (size_t)src_at * elem_size, elem_size);
}

/* y[o, i, r] = x[o, index[i], r] for x [outer, dim_size, inner]. */
static AMP_ALWAYS_INLINE int index_select(size_t elem_size, int64_t outer, int64_t dim_size, int64_t inner,
                                          int64_t n_index, const void *x, const int64_t *index, void *y)
{
    int status = check_indices(n_index, index, dim_size);
    if (status != AMP_OK)
        return status;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n_index; i++)
            for (int64_t r = 0; r < inner; r++)
                copy_element(elem_size, y, (o * n_index + i) * inner + r, x,
                             (o * dim_size + normalized(index[i], dim_size)) * inner + r);
    return AMP_OK;
}

/* y[o, index[i], r] = source[o, i, r]; with a repeated index the last
 * source row wins, as PyTorch's sequential CPU loop leaves it. */
static AMP_ALWAYS_INLINE int index_copy(size_t elem_size, int64_t outer, int64_t dim_size, int64_t inner,
                                        int64_t n_index, const int64_t *index, const void *source, void *y)
{
    int status = check_indices(n_index, index, dim_size);
    if (status != AMP_OK)
        return status;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n_index; i++)
            for (int64_t r = 0; r < inner; r++)
                copy_element(elem_size, y, (o * dim_size + normalized(index[i], dim_size)) * inner + r, source,
                             (o * n_index + i) * inner + r);
    return AMP_OK;
}

/* The offset in a tensor of shape `shape` of the element whose coordinates
 * are those of flat position `pos` in `lattice` (row-major), except along
 * `dim`, where the coordinate is `along` instead (lattice's own coordinate
 * when along < 0). Peeling one dim at a time needs no scratch arrays, so
 * ndim has no limit. */
static AMP_ALWAYS_INLINE int64_t offset_replacing(int64_t pos, int ndim, const int64_t *lattice, int dim,
                                                  int64_t along, const int64_t *shape)
{
    int64_t offset = 0, stride = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        int64_t coord = pos % lattice[k];
        pos /= lattice[k];
        offset += (k == dim && along >= 0 ? along : coord) * stride;
        stride *= shape[k];
    }
    return offset;
}

/* The offset in a tensor of shape `shape` of the start (coordinate 0 along
 * `dim`) of line number `line`, lines being numbered row-major over the
 * dims of `lattice` other than `dim`. */
static AMP_ALWAYS_INLINE int64_t offset_skipping(int64_t line, int ndim, const int64_t *lattice, int dim,
                                                 const int64_t *shape)
{
    int64_t offset = 0, stride = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        if (k != dim) {
            offset += (line % lattice[k]) * stride;
            line /= lattice[k];
        }
        stride *= shape[k];
    }
    return offset;
}

/* y[i] = x[i with dim replaced by index[i]]; y has index's shape. */
static AMP_ALWAYS_INLINE int gather(size_t elem_size, int ndim, const int64_t *index_shape, int dim, const void *x,
                                    const int64_t *x_shape, const int64_t *index, void *y)
{
    int64_t n = element_count(ndim, index_shape);
    int status = check_indices(n, index, x_shape[dim]);
    if (status != AMP_OK)
        return status;
    for (int64_t i = 0; i < n; i++)
        copy_element(elem_size, y, i, x,
                     offset_replacing(i, ndim, index_shape, dim, normalized(index[i], x_shape[dim]), x_shape));
    return AMP_OK;
}

#define SCATTER_CHUNK 256

#define REF_PART "ref_index.inc"
#include "ref_acc_twice.h"

#define INDEX_KERNELS(T, INST)                                                                    \
    int amp_ref_embedding_##T(int64_t n_index, int64_t num_embeddings, int64_t dim,               \
                              const AMP_CTYPE_##T *weight, const int64_t *index, AMP_CTYPE_##T *y) \
    {                                                                                             \
        return index_select(sizeof(AMP_CTYPE_##T), 1, num_embeddings, dim, n_index, weight, index, y); \
    }                                                                                             \
    int amp_ref_index_select_##T(int64_t outer, int64_t dim_size, int64_t inner, int64_t n_index, \
                                 const AMP_CTYPE_##T *x, const int64_t *index, AMP_CTYPE_##T *y)  \
    {                                                                                             \
        return index_select(sizeof(AMP_CTYPE_##T), outer, dim_size, inner, n_index, x, index, y); \
    }                                                                                             \
    int amp_ref_index_copy_##T(int64_t outer, int64_t dim_size, int64_t inner, int64_t n_index,   \
                               const int64_t *index, const AMP_CTYPE_##T *source,                 \
                               AMP_CTYPE_##T *y)                                                  \
    {                                                                                             \
        return index_copy(sizeof(AMP_CTYPE_##T), outer, dim_size, inner, n_index, index, source, y); \
    }                                                                                             \
    int amp_ref_gather_##T(int ndim, const int64_t *index_shape, int dim, const AMP_CTYPE_##T *x, \
                           const int64_t *x_shape, const int64_t *index, AMP_CTYPE_##T *y)        \
    {                                                                                             \
        return gather(sizeof(AMP_CTYPE_##T), ndim, index_shape, dim, x, x_shape, index, y);       \
    }

INDEX_KERNELS(f64, dacc)
INDEX_KERNELS(f32, facc)
INDEX_KERNELS(bf16, facc)
INDEX_KERNELS(f16, facc)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_scatter_add REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
