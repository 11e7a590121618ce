/*
 * pool_form.h - the drivers of the kernel sets' pooling kernels and
 * their gradients: everything but the vector work of a plane.
 *
 * max_pool (2-d, dilation 1, no indices): the x86 sets scan each input
 * row widened into a row buffer; this form holds the geometry they take
 * (amp_max_pool_simple) and the way to the reference for the rest.
 *
 * max_pool_backward (2-d, dilation 1): a set's task chooses, LANES
 * outputs of a row at a time, each output's input element as the forward
 * does, then adds the row's dy into an f32 plane of sums in output order
 * (x86/avx2_backward.c 8 lanes, x86/avx512_backward.c 16,
 * arm/neon_pool.c 4).  This form holds the geometry the tasks take
 * (amp_mpb_simple), the per-slot sums and indices and the run of the
 * planes on the pool (amp_mpb_run), and the table entries.
 *
 * adaptive_avg_pool to one position per plane (a global average pool):
 * a set sums LANES planes at a time, one per lane, each lane's sum the
 * reference's own chain (from 0, in memory order, in f32), divided by
 * each dim's size in turn; the planes left over take the same chain in
 * scalar code (amp_global_avg_pool_planes), as does the entry's way to
 * the reference for other output sizes (AMP_GLOBAL_AVG_POOL_ENTRY).
 *
 * adaptive_avg_pool_backward to one position per plane: every input
 * element of plane p gets the same share, the reference's own (dy[p]
 * divided by each dim's window size in turn, in float, then added to the
 * zero its sum starts from), rounded to the storage dtype once; so each
 * plane is one value written in_plane times (amp_global_avg_pool_backward;
 * arm/neon_pool.c writes it with its own stores).  Other output sizes go
 * to the reference (global_pool_of, ref/ref_window.h, decides).
 *
 * Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_POOL_FORM_H
#define AMPRT_FRAME_POOL_FORM_H

#include <stdint.h>
#include <string.h>

#include "ref/ref_window.h"

#define AMP_POOL_ROW_MAX 4096 /* input width + padding + kernel that a task's row buffer holds */

/* 1 when a set's max_pool of `lanes` outputs at a time takes d, whose
 * geometry is g: 2-d, no indices, dilation 1, padding under the kernel
 * (no empty window), every tap of whole vectors of outputs (and slack
 * more floats the set's whole-vector taps read past the last one) and
 * the input row at its offset inside the row buffer. */
static inline int amp_max_pool_simple(const amp_pool_desc *d, const int64_t *indices, const pool_geometry *g,
                                      int64_t lanes, int64_t slack)
{
    int simple = d->nspatial == 2 && indices == NULL;
    for (int i = 1; i < 3 && simple; i++)
        simple = g->dilation[i] == 1 && g->padding[i] < g->kernel[i];
    return simple && ((g->out[2] + lanes - 1) / lanes * lanes - 1) * g->stride[2] + g->kernel[2] + slack <= AMP_POOL_ROW_MAX &&
           g->padding[2] + g->in[2] <= AMP_POOL_ROW_MAX;
}

/* The reference's max_pool of dtype t. */
static inline void amp_ref_max_pool_of(amp_dtype t, const amp_pool_desc *d, const void *x, void *y, int64_t *indices)
{
    switch (t) {
    case AMP_F32: amp_ref_max_pool_f32(d, x, y, indices); break;
    case AMP_BF16: amp_ref_max_pool_bf16(d, x, y, indices); break;
    default: amp_ref_max_pool_f16(d, x, y, indices); break;
    }
}

typedef struct {
    amp_dtype t;
    int64_t in_h, in_w, out_h, out_w, kh, kw, sh, sw, ph, pw;
    const void *x, *dy;
    void *dx;
    float *sums;  /* in_h in_w floats per pool slot */
    int32_t *idx; /* out_w indices (rounded up to the lanes) per pool slot */
    int relu;     /* max_pool_relu_backward: dx through the relu whose output x is */
} amp_mpb_ctx;

/* 1 when a set's task of `lanes` outputs at a time handles d (and fills
 * c's geometry): every window starts inside the input (so is not empty);
 * the row buffer holds every tap of whole vectors of outputs (and slack
 * more floats: what the set's whole-vector taps read past the last one)
 * and the row at its offset; indices fit int32. */
static inline int amp_mpb_simple(const amp_pool_desc *d, amp_mpb_ctx *c, int64_t lanes, int64_t slack)
{
    int64_t out_w_vecs;
    if (d->nspatial != 2 || d->dilation[0] != 1 || d->dilation[1] != 1)
        return 0;
    c->in_h = d->in_size[0];
    c->in_w = d->in_size[1];
    c->out_h = d->out_size[0];
    c->out_w = d->out_size[1];
    c->kh = d->kernel[0];
    c->kw = d->kernel[1];
    c->sh = d->stride[0];
    c->sw = d->stride[1];
    c->ph = d->padding[0];
    c->pw = d->padding[1];
    if (c->in_h < 1 || c->in_w < 1 || c->out_h < 1 || c->out_w < 1 || c->kh < 1 || c->kw < 1 || c->sh < 1 ||
        c->sw < 1 || c->ph < 0 || c->pw < 0 || c->ph >= c->kh || c->pw >= c->kw)
        return 0;
    if ((c->out_h - 1) * c->sh - c->ph >= c->in_h || (c->out_w - 1) * c->sw - c->pw >= c->in_w)
        return 0;
    /* (then out_w_vecs <= AMP_POOL_ROW_MAX too: a task's row of dy fits) */
    out_w_vecs = (c->out_w + lanes - 1) / lanes * lanes;
    if ((out_w_vecs - 1) * c->sw + c->kw + slack > AMP_POOL_ROW_MAX || c->pw + c->in_w > AMP_POOL_ROW_MAX)
        return 0;
    if (c->in_h * c->in_w + (out_w_vecs + 1) * c->sw + c->kw >= (int64_t)1 << 31)
        return 0;
    return 1;
}

/* max_pool_backward (relu: max_pool_relu_backward) of d's planes by the
 * set's task, one plane a task, each pool slot with its own sums and
 * indices; one thread below parallel_min input elements.  1 when done,
 * 0 when the caller is to run another kernel (a geometry the task does
 * not take, or no scratch memory). */
static inline int amp_mpb_run(amp_dtype t, const amp_pool_desc *d, const void *x, const void *dy, void *dx, int relu,
                              int64_t lanes, int64_t slack, size_t parallel_min,
                              void (*task)(void *ctx, int64_t plane, int slot))
{
    amp_mpb_ctx c;
    int threads = amp_get_threads();
    int64_t in_plane;
    if (!amp_mpb_simple(d, &c, lanes, slack))
        return 0;
    if (d->planes <= 0)
        return 1;
    c.t = t;
    c.x = x;
    c.dy = dy;
    c.dx = dx;
    c.relu = relu;
    in_plane = c.in_h * c.in_w;
    c.sums = amp_scratch_alloc((size_t)(AMP_MAX_THREADS * in_plane) * sizeof(float));
    c.idx = amp_scratch_alloc((size_t)(AMP_MAX_THREADS * ((c.out_w + lanes - 1) / lanes * lanes)) * sizeof(int32_t));
    if (c.sums == NULL || c.idx == NULL) {
        amp_scratch_free(c.sums);
        amp_scratch_free(c.idx);
        return 0;
    }
    if ((size_t)(d->planes * in_plane) < parallel_min)
        threads = 1;
    amp_parallel_run(threads, d->planes, task, &c);
    amp_scratch_free(c.sums);
    amp_scratch_free(c.idx);
    return 1;
}

/* The global average of planes p0 .. planes - 1, each the reference's
 * chain in scalar code. */
static inline void amp_global_avg_pool_planes(amp_dtype t, int nspatial, int64_t p0, int64_t planes,
                                              const int64_t *in_size, int64_t in_plane, const void *x, void *y)
{
    for (int64_t p = p0; p < planes; p++) {
        float sum = 0;
        for (int64_t i = 0; i < in_plane; i++)
            sum += amp_ld(t, x, p * in_plane + i);
        for (int d = 0; d < nspatial; d++)
            sum /= (float)in_size[d];
        amp_st(t, y, p, sum);
    }
}

/* The table entry adaptive_avg_pool_##T: global(t, nspatial, planes,
 * in_size, in_plane, x, y) where the output is one position per plane,
 * the reference otherwise. */
#define AMP_GLOBAL_AVG_POOL_ENTRY(T, global)                                                                      \
    static void adaptive_avg_pool_##T(int nspatial, int64_t planes, const int64_t *in_size,                       \
                                      const int64_t *out_size, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)          \
    {                                                                                                             \
        int64_t in_plane;                                                                                         \
        if (global_pool_of(nspatial, planes, in_size, out_size, &in_plane))                                       \
            global(AMP_DTYPE_##T, nspatial, planes, in_size, in_plane, x, y);                                     \
        else                                                                                                      \
            amp_ref_adaptive_avg_pool_##T(nspatial, planes, in_size, out_size, x, y);                             \
    }

/* Each plane's share written over the plane, as the header says. */
static inline void amp_global_avg_pool_backward(amp_dtype t, int nspatial, int64_t planes, const int64_t *in_size,
                                                int64_t in_plane, const void *dy, void *dx)
{
    const size_t es = amp_dtype_size(t);
    for (int64_t p = 0; p < planes; p++) {
        /* (the reference's divisions by the padded dims' 1 change nothing
         * but a signalling NaN's quiet bit, which 0 + share sets too) */
        float share = amp_ld(t, dy, p);
        unsigned char v[4];
        for (int i = 0; i < nspatial; i++)
            share /= (float)in_size[i];
        amp_st(t, v, 0, 0.0f + share);
        if (es == 2) {
            uint16_t h, *o = (uint16_t *)dx + (size_t)(p * in_plane);
            memcpy(&h, v, 2);
            for (int64_t i = 0; i < in_plane; i++)
                o[i] = h;
        } else {
            uint32_t w, *o = (uint32_t *)dx + (size_t)(p * in_plane);
            memcpy(&w, v, 4);
            for (int64_t i = 0; i < in_plane; i++)
                o[i] = w;
        }
    }
}

/* The table entries of dtype T: max_pool_backward_##T and
 * max_pool_relu_backward_##T by mpb_fast(t, d, x, dy, dx, relu) (1 when
 * done), else by OTHER(T, d, x, dy, dx) (the relu form then the relu's
 * gradient in place, RELU_BW(T, n, x, dx)); adaptive_avg_pool_backward_##T
 * by global(t, nspatial, planes, in_size, in_plane, dy, dx) where the
 * output is one position per plane, the reference otherwise. */
#define AMP_POOL_BACKWARD_ENTRIES(T, mpb_fast, OTHER, RELU_BW, global)                                           \
    static void max_pool_backward_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *dy,    \
                                      AMP_CTYPE_##T *dx)                                                          \
    {                                                                                                             \
        if (!mpb_fast(AMP_DTYPE_##T, d, x, dy, dx, 0))                                                            \
            OTHER(T, d, x, dy, dx);                                                                               \
    }                                                                                                             \
    static void max_pool_relu_backward_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x,                        \
                                           const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                            \
    {                                                                                                             \
        if (mpb_fast(AMP_DTYPE_##T, d, x, dy, dx, 1))                                                             \
            return;                                                                                               \
        /* the two kernels in turn, the relu's in place */                                                        \
        OTHER(T, d, x, dy, dx);                                                                                   \
        RELU_BW(T, pool_input_numel(d), x, dx);                                                                   \
    }                                                                                                             \
    static void adaptive_avg_pool_backward_##T(int nspatial, int64_t planes, const int64_t *in_size,              \
                                               const int64_t *out_size, const AMP_CTYPE_##T *dy,                  \
                                               AMP_CTYPE_##T *dx)                                                 \
    {                                                                                                             \
        int64_t in_plane;                                                                                         \
        if (global_pool_of(nspatial, planes, in_size, out_size, &in_plane))                                       \
            global(AMP_DTYPE_##T, nspatial, planes, in_size, in_plane, dy, dx);                                   \
        else                                                                                                      \
            amp_ref_adaptive_avg_pool_backward_##T(nspatial, planes, in_size, out_size, dy, dx);                  \
    }

/* The reference's max_pool_backward, as OTHER. */
#define AMP_MPB_REF(T, d, x, dy, dx) amp_ref_max_pool_backward_##T(d, x, dy, dx)

#endif /* AMPRT_FRAME_POOL_FORM_H */
