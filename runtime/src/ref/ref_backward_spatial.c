/*
 * ref_backward_spatial.c - reference gradient kernels of amprt/backward.h
 * for the spatial and index ops: max_pool, avg_pool, adaptive_avg_pool,
 * adaptive_max_pool,
 * upsample (the adjoints of the forward kernels), the conv and
 * conv_transpose weight gradients, embedding, index_select and pad.
 *
 * Every dx element is one ACC sum (f32 for f32/bf16/f16, f64 for f64)
 * rounded once. The adjoints that scatter (pooling, upsample) do so into an
 * ACC buffer on the stack covering BW_CHUNK elements of the input plane at
 * a time, revisiting the outputs once per chunk (no allocation); the index
 * ops gather each distinct index's rows; pad gathers per element. The
 * window and tap arithmetic is the forward's: the pooling and convolution
 * geometry comes from ref_window.h, shared with ref_pool.c and ref_conv.c,
 * and upsample's taps from ref_upsample.inc itself (included by
 * ref_backward_spatial.inc).
 *
 * Hand-written wrappers, which do more than pass the entry's arguments to a
 * body: the average and adaptive pooling gradients (no x, or a descriptor
 * built from the sizes), max_pool_relu_backward (two kernels in turn),
 * conv_backward_weight and its _to_f32 form (a mode after the arguments),
 * embedding_backward and index_select_backward (shapes recast).
 */
#include <math.h>

#include "amprt_internal.h"
#include "ref_window.h"

#define BW_CHUNK 2048

/* ---- pad -------------------------------------------------------------- */

/* The output positions along one padded dim (length n, pads before/after)
 * that read input index i: at most three ranges. */
typedef struct {
    int count;
    int64_t lo[3], hi[3]; /* inclusive */
} pad_ranges;

static pad_ranges pad_sources(int mode, int64_t i, int64_t n, int64_t before, int64_t after)
{
    pad_ranges r;
    int64_t out = n + before + after;
    r.count = 0;
    if (mode == AMP_PAD_REPLICATE) {
        int64_t lo = i == 0 ? 0 : i + before, hi = i == n - 1 ? out - 1 : i + before;
        if (lo < 0)
            lo = 0;
        if (hi > out - 1)
            hi = out - 1;
        if (lo <= hi) {
            r.lo[0] = lo;
            r.hi[0] = hi;
            r.count = 1;
        }
        return r;
    }
    {
        int64_t candidates[3];
        int nc = 0;
        candidates[nc++] = i + before;
        if (mode == AMP_PAD_REFLECT) {
            if (i != 0)
                candidates[nc++] = before - i;
            if (i != n - 1)
                candidates[nc++] = before + 2 * (n - 1) - i;
        }
        for (int c = 0; c < nc; c++)
            if (candidates[c] >= 0 && candidates[c] < out) {
                r.lo[r.count] = r.hi[r.count] = candidates[c];
                r.count++;
            }
    }
    return r;
}

#define REF_PART "ref_backward_spatial.inc"
#include "ref_acc_twice.h"

#define SPATIAL_BW_KERNELS(T)                                                                     \
    void amp_ref_max_pool_relu_backward_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x,       \
                                            const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)           \
    {                                                                                             \
        amp_ref_max_pool_backward_##T(d, x, dy, dx);                                              \
        /* element by element: in place */                                                        \
        amp_ref_relu_backward_##T(pool_input_numel(d), x, x, dx, dx);                             \
    }                                                                                             \
    void amp_ref_avg_pool_backward_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *dy,           \
                                       AMP_CTYPE_##T *dx)                                         \
    {                                                                                             \
        REF_BODY_##T(pool_backward)(AMP_DTYPE_##T, 1, d, NULL, dy, dx);                           \
    }                                                                                             \
    void amp_ref_adaptive_avg_pool_backward_##T(int nspatial, int64_t planes,                     \
                                                const int64_t *in_size, const int64_t *out_size,  \
                                                const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)       \
    {                                                                                             \
        amp_pool_desc d;                                                                          \
        memset(&d, 0, sizeof d);                                                                  \
        d.nspatial = nspatial;                                                                    \
        d.planes = planes;                                                                        \
        for (int i = 0; i < nspatial; i++) {                                                      \
            d.in_size[i] = in_size[i];                                                            \
            d.out_size[i] = out_size[i];                                                          \
        }                                                                                         \
        REF_BODY_##T(pool_backward)(AMP_DTYPE_##T, 2, &d, NULL, dy, dx);                          \
    }                                                                                             \
    void amp_ref_adaptive_max_pool_backward_##T(int nspatial, int64_t planes,                     \
                                                const int64_t *in_size, const int64_t *out_size,  \
                                                const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *dy,  \
                                                AMP_CTYPE_##T *dx)                                \
    {                                                                                             \
        amp_pool_desc d;                                                                          \
        memset(&d, 0, sizeof d);                                                                  \
        d.nspatial = nspatial;                                                                    \
        d.planes = planes;                                                                        \
        for (int i = 0; i < nspatial; i++) {                                                      \
            d.in_size[i] = in_size[i];                                                            \
            d.out_size[i] = out_size[i];                                                          \
        }                                                                                         \
        REF_BODY_##T(pool_backward)(AMP_DTYPE_##T, 3, &d, x, dy, dx);                             \
    }                                                                                             \
    void amp_ref_conv_backward_weight_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,         \
                                          const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dw)             \
    {                                                                                             \
        REF_BODY_##T(conv_backward_weight)(AMP_DTYPE_##T, d, x, dy, dw, 0);                       \
    }                                                                                             \
    void amp_ref_embedding_backward_##T(int64_t n_index, int64_t num_embeddings, int64_t dim,     \
                                        const int64_t *index, int64_t padding_idx,                \
                                        const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dweight)          \
    {                                                                                             \
        REF_BODY_##T(index_backward)(AMP_DTYPE_##T, 1, num_embeddings, dim, n_index, index,       \
                                     padding_idx, dy, dweight);                                   \
    }                                                                                             \
    void amp_ref_index_select_backward_##T(int64_t outer, int64_t dim_size, int64_t inner,        \
                                           int64_t n_index, const int64_t *index,                 \
                                           const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)            \
    {                                                                                             \
        REF_BODY_##T(index_backward)(AMP_DTYPE_##T, outer, dim_size, inner, n_index, index, -1,   \
                                     dy, dx);                                                     \
    }

SPATIAL_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(SPATIAL_BW_KERNELS)

/* conv_backward_weight_to_f32 (amprt/train.h): the sums as
 * conv_backward_weight_S rounds them, widened into the f32 dw. */
#define CONV_BW_TO_F32(T)                                                                         \
    void amp_ref_conv_backward_weight_to_f32_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,  \
                                                 const AMP_CTYPE_##T *dy, float *dw, int accumulate) \
    {                                                                                             \
        REF_BODY_##T(conv_backward_weight)(AMP_DTYPE_##T, d, x, dy, dw, accumulate ? 2 : 1);       \
    }
CONV_BW_TO_F32(bf16)
CONV_BW_TO_F32(f16)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_max_pool_backward REF_SHARES(pool_backward, 0)
#define REF_OWNS_upsample_backward REF_OWNED
#define REF_OWNS_conv_transpose_backward_weight REF_OWNED
#define REF_OWNS_pad_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
