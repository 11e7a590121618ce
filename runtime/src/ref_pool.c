/*
 * ref_pool.c - reference max, average and adaptive average pooling over 1,
 * 2 or 3 spatial dims, with PyTorch's windows.
 *
 * Each window is reduced in ACC (f32 for f32/bf16/f16, f64 for f64) in
 * row-major order and the result rounded to the storage dtype once; the
 * bodies live in ref_pool.inc, instantiated once per ACC below. As in
 * ref_conv.c, the nspatial dims are the last of a 3-d geometry whose
 * leading dims are trivial (size 1, kernel 1, stride 1, no padding).
 *
 * Windows are clipped as PyTorch clips them. out_size may come from
 * ceil_mode, so the last window may start inside the right padding or run
 * past it; the clipping below handles both.
 */
#include <math.h>

#include "amprt_internal.h"

typedef struct {
    int64_t in[3], out[3], kernel[3], stride[3], padding[3], dilation[3];
    int64_t in_plane, out_plane;
} pool_geometry;

static AMP_ALWAYS_INLINE pool_geometry pool_geometry_of(const amp_pool_desc *d)
{
    pool_geometry g;
    int lead = 3 - d->nspatial;
    for (int i = 0; i < 3; i++) {
        int s = i - lead;
        g.in[i] = s >= 0 ? d->in_size[s] : 1;
        g.out[i] = s >= 0 ? d->out_size[s] : 1;
        g.kernel[i] = s >= 0 ? d->kernel[s] : 1;
        g.stride[i] = s >= 0 ? d->stride[s] : 1;
        g.padding[i] = s >= 0 ? d->padding[s] : 0;
        g.dilation[i] = s >= 0 ? d->dilation[s] : 1;
    }
    g.in_plane = g.in[0] * g.in[1] * g.in[2];
    g.out_plane = g.out[0] * g.out[1] * g.out[2];
    return g;
}

/* Input positions [start, end) of one dim's window (max_pool steps through
 * it by the dilation). */
typedef struct {
    int64_t start, end;
} window;

/* max_pool: the dilated window of output o, cut at the end of the input,
 * its start moved past the left padding in whole dilation steps so that it
 * stays on the dilation grid. */
static AMP_ALWAYS_INLINE window max_window(const pool_geometry *g, int i, int64_t o)
{
    window w;
    w.start = o * g->stride[i] - g->padding[i];
    w.end = w.start + (g->kernel[i] - 1) * g->dilation[i] + 1;
    if (w.end > g->in[i])
        w.end = g->in[i];
    while (w.start < 0)
        w.start += g->dilation[i];
    return w;
}

/* avg_pool: the window of output o clipped first to the padded input (its
 * length then multiplies *padded_size, the count_include_pad divisor), then
 * to the input itself. avg_pool has no dilation: d->dilation is not read. */
static AMP_ALWAYS_INLINE window avg_window(const pool_geometry *g, int i, int64_t o, int64_t *padded_size)
{
    window w;
    w.start = o * g->stride[i] - g->padding[i];
    w.end = w.start + g->kernel[i];
    if (w.end > g->in[i] + g->padding[i])
        w.end = g->in[i] + g->padding[i];
    *padded_size *= w.end - w.start;
    if (w.start < 0)
        w.start = 0;
    if (w.end > g->in[i])
        w.end = g->in[i];
    return w;
}

/* adaptive pooling: [floor(o in / out), ceil((o + 1) in / out)), computed
 * without forming o * in where it could overflow. */
static AMP_ALWAYS_INLINE window adaptive_window(int64_t o, int64_t in, int64_t out)
{
    window w;
    w.start = (o / out) * in + ((o % out) * in) / out;
    w.end = 1 + ((o + 1) * in - 1) / out;
    return w;
}

#define ACC float
#define LD amp_ld
#define ST amp_st
#define BODY(name) name##_facc
#include "ref_pool.inc"
#undef ACC
#undef LD
#undef ST
#undef BODY

#define ACC double
#define LD amp_ldd
#define ST amp_std
#define BODY(name) name##_dacc
#include "ref_pool.inc"
#undef ACC
#undef LD
#undef ST
#undef BODY

#define POOL_KERNELS(T, INST)                                                                     \
    void amp_ref_max_pool_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y,   \
                              int64_t *indices)                                                   \
    {                                                                                             \
        max_pool_##INST(AMP_DTYPE_##T, d, x, y, indices);                                         \
    }                                                                                             \
    void amp_ref_avg_pool_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)   \
    {                                                                                             \
        avg_pool_##INST(AMP_DTYPE_##T, d, x, y);                                                  \
    }                                                                                             \
    void amp_ref_adaptive_avg_pool_##T(int nspatial, int64_t planes, const int64_t *in_size,      \
                                       const int64_t *out_size, const AMP_CTYPE_##T *x,           \
                                       AMP_CTYPE_##T *y)                                          \
    {                                                                                             \
        adaptive_avg_pool_##INST(AMP_DTYPE_##T, nspatial, planes, in_size, out_size, x, y);       \
    }

POOL_KERNELS(f64, dacc)
POOL_KERNELS(f32, facc)
POOL_KERNELS(bf16, facc)
POOL_KERNELS(f16, facc)
