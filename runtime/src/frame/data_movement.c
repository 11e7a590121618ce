/*
 * data_movement.c - copy_strided and fill on the thread pool, for the
 * kernel sets (frame/eltwise_form.h lists them with the element-wise
 * kernels): the permutes, transposes, slices, narrows, cats and stacks of
 * a transformer's or a training step's data, and the zeroed gradients of
 * narrow and pad, are megabytes that one thread would move while the
 * other waits.
 *
 * Each part is moved by the reference kernel itself (ref/ref_data.c), and
 * the parts never overlap, so every byte lands as the reference would put
 * it, whatever the split; below half a megabyte (fill: frame/chunked.h's
 * AMP_PARALLEL_MIN elements) the reference runs alone (waking the pool
 * costs more than it saves).
 */
#include "amprt_internal.h"
#include "frame/chunked.h"

#pragma GCC visibility push(hidden)

/* Parts per thread: enough for one slow part not to hold the others up. */
#define PARTS_PER_THREAD 4
/* Bytes below which one thread copies: the element-wise kernels' 128 K
 * f32 elements (frame/chunked.h). */
#define COPY_PARALLEL_MIN_BYTES (4 * AMP_PARALLEL_MIN)
/* Dims a cut copy holds (a part's own shape is on the stack); more go to
 * the reference whole. */
#define COPY_DIMS_MAX 16

/* copy_strided cut along one dim: part p copies the indices [p per,
 * (p + 1) per) of dim `dim` (all of every other dim), its own shape and
 * pointers into x and y. */
typedef struct {
    size_t es;
    int ndim, dim;
    const int64_t *shape, *x_stride, *y_stride;
    const char *x;
    char *y;
    int64_t per;
} copy_job;

static void copy_part(void *ctx, int64_t part, int slot)
{
    const copy_job *j = ctx;
    int64_t shape[COPY_DIMS_MAX];
    const int64_t begin = part * j->per, len = j->shape[j->dim] - begin < j->per ? j->shape[j->dim] - begin : j->per;
    (void)slot;
    for (int d = 0; d < j->ndim; d++)
        shape[d] = j->shape[d];
    shape[j->dim] = len;
    amp_ref_copy_strided(j->es, j->ndim, shape, j->x + begin * j->x_stride[j->dim] * (int64_t)j->es, j->x_stride,
                         j->y + begin * j->y_stride[j->dim] * (int64_t)j->es, j->y_stride);
}

void amp_pooled_copy_strided(size_t elem_size, int ndim, const int64_t *shape, const void *x,
                             const int64_t *x_stride, void *y, const int64_t *y_stride)
{
    const int threads = amp_get_threads();
    const int64_t parts_wanted = (int64_t)threads * PARTS_PER_THREAD;
    size_t bytes = elem_size;
    for (int d = 0; d < ndim; d++)
        bytes *= shape[d] > 0 ? (size_t)shape[d] : 0;
    if (threads == 1 || ndim < 1 || ndim > COPY_DIMS_MAX || bytes < COPY_PARALLEL_MIN_BYTES) {
        amp_ref_copy_strided(elem_size, ndim, shape, x, x_stride, y, y_stride);
        return;
    }
    /* the outermost dim long enough to give every thread parts, else the
     * longest: the parts then stay whole runs of the inner dims */
    int dim = -1, longest = 0;
    for (int d = 0; d < ndim; d++) {
        if (dim < 0 && shape[d] >= parts_wanted)
            dim = d;
        if (shape[d] > shape[longest])
            longest = d;
    }
    if (dim < 0)
        dim = longest;
    const int64_t parts = shape[dim] < parts_wanted ? shape[dim] : parts_wanted;
    copy_job j = { elem_size, ndim, dim, shape, x_stride, y_stride, x, y, (shape[dim] + parts - 1) / parts };
    amp_parallel_run(threads, (shape[dim] + j.per - 1) / j.per, copy_part, &j);
}

/* fill: ranges of the output, each the reference's fill of its own. */
typedef struct {
    double value;
    void *y;
} fill_job;

#define POOLED_FILL(T)                                                                            \
    static void fill_range_##T(const void *ctx, size_t begin, size_t end)                         \
    {                                                                                             \
        const fill_job *j = ctx;                                                                  \
        amp_ref_fill_##T(end - begin, j->value, (AMP_CTYPE_##T *)j->y + begin);                   \
    }                                                                                             \
    void amp_pooled_fill_##T(size_t n, double value, AMP_CTYPE_##T *y)                            \
    {                                                                                             \
        const fill_job j = { value, y };                                                          \
        amp_run_chunked(n, 1, fill_range_##T, &j);                                        \
    }
AMP_FOR_EACH_KERNEL_DTYPE(POOLED_FILL)

#pragma GCC visibility pop
