/*
 * ref_window.h - the window and tap arithmetic of the spatial reference
 * kernels, shared by the forward kernels (ref_pool.c, ref_conv.c) and their
 * gradients (ref_backward_spatial.c), so that both walk the same windows.
 *
 * The nspatial dims of a descriptor are placed last in a 3-d geometry
 * whose leading dims are trivial (size 1, kernel 1, stride 1, no padding,
 * dilation 1), so one body serves 1-, 2- and 3-d.
 *
 * Everything is static AMP_ALWAYS_INLINE: each user inlines what it needs.
 */
#ifndef AMP_REF_WINDOW_H
#define AMP_REF_WINDOW_H

#include "amprt_internal.h"

/* ---- pooling ------------------------------------------------------------ */

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

/* Elements of a pool's input (0 for a descriptor with none). */
static AMP_ALWAYS_INLINE size_t pool_input_numel(const amp_pool_desc *d)
{
    const int64_t in_plane = pool_geometry_of(d).in_plane;
    return d->planes > 0 && in_plane > 0 ? (size_t)(d->planes * in_plane) : 0;
}

/* Whether an adaptive pool's every output size is 1 (a global average
 * pool, which the AVX-512 sets run with kernels of their own, forward and
 * gradient), its plane's elements into *in_plane; 0 too for planes whose
 * offsets 16 planes apart would not fit 32 bits (the forward's lanes). */
static AMP_ALWAYS_INLINE int global_pool_of(int nspatial, int64_t planes, const int64_t *in_size,
                                            const int64_t *out_size, int64_t *in_plane)
{
    int64_t n = 1;
    if (nspatial < 1 || nspatial > 3 || planes < 0)
        return 0;
    for (int i = 0; i < nspatial; i++) {
        if (out_size[i] != 1 || in_size[i] < 1 || in_size[i] > ((int64_t)1 << 26) / n)
            return 0;
        n *= in_size[i];
    }
    *in_plane = n;
    return 1;
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

/* ---- convolution -------------------------------------------------------- */

typedef struct {
    int64_t in[3], out[3], kernel[3], stride[3], padding[3], dilation[3];
    int64_t in_plane, out_plane, kernel_plane; /* elements per channel */
} conv_geometry;

static AMP_ALWAYS_INLINE conv_geometry conv_geometry_of(const amp_conv_desc *d)
{
    conv_geometry g;
    int lead = 3 - d->nspatial;
    for (int i = 0; i < 3; i++) {
        int s = i - lead; /* index into the descriptor's arrays */
        g.in[i] = s >= 0 ? d->in_size[s] : 1;
        g.out[i] = s >= 0 ? d->out_size[s] : 1;
        g.kernel[i] = s >= 0 ? d->kernel[s] : 1;
        g.stride[i] = s >= 0 ? d->stride[s] : 1;
        g.padding[i] = s >= 0 ? d->padding[s] : 0;
        g.dilation[i] = s >= 0 ? d->dilation[s] : 1;
    }
    g.in_plane = g.in[0] * g.in[1] * g.in[2];
    g.out_plane = g.out[0] * g.out[1] * g.out[2];
    g.kernel_plane = g.kernel[0] * g.kernel[1] * g.kernel[2];
    return g;
}

/* Offset in a plane of `size` of position pos[] when every pos[i] is
 * inside, else 0 (returns whether it is). */
static AMP_ALWAYS_INLINE int position_of(const int64_t size[3], const int64_t pos[3], int64_t *offset)
{
    int64_t off = 0;
    for (int i = 0; i < 3; i++) {
        if (pos[i] < 0 || pos[i] >= size[i])
            return 0;
        off = off * size[i] + pos[i];
    }
    *offset = off;
    return 1;
}

#endif /* AMP_REF_WINDOW_H */
