/*
 * conv_transpose.c - conv_transpose (a convolution's input gradient) of
 * the optimized kernel sets.
 *
 * With stride 1 it is a convolution (transpose_by_conv, below); with
 * dilation 1 and strides on planes large enough, one convolution per
 * output phase (conv_transpose_phases.c).  Otherwise, the general path:
 *
 * y[n, co, o] = bias[co] + sum over ci of the group and taps k of
 * x[n, ci, i] w[ci, co - group start, k], over the (i, k) with
 * i stride - padding + k dilation = o.  Per image and group:
 *
 *   1. col[(co', k), i] = sum over ci of w[ci, co', k] x[n, ci, i]: one
 *      GEMM (A = w read transposed, B = x as stored), left in f32; on
 *      small input planes one GEMM for several images, their x copied
 *      side by side first (B = [ci][image, i]);
 *   2. col2im, as a gather so that each output is one sum rounded once:
 *      y[n, co, o] = sum over k (in order) of col[(co', k), i(o, k)], plus
 *      the bias after the sum, as the reference adds it.  Which input i a
 *      tap k of output o reads is tabulated per spatial dim (-1: none).
 *
 * The f32 col is a scratch buffer per call: out_channels/groups x kernel
 * taps x input positions (x the images of one GEMM).
 */
#include <string.h>

#include "conv.h"

/* The col2im path's images per GEMM: together where an input plane has
 * fewer positions than COL_BATCH_PLANE, up to COL_BATCH_BYTES of col. */
#define COL_BATCH_PLANE 256
#define COL_BATCH_BYTES ((size_t)8 << 20)

typedef struct {
    const conv_job *j;
    const float *col;      /* [(co', k)][images x input positions] */
    int64_t col_rs;        /* floats per row of col */
    const int64_t *tab[3]; /* tab[i][o * kernel[i] + k]: the input index, or -1 */
    float *acc;            /* out[2] floats per pool slot */
    char *ybase;           /* y of (the first image, group) */
    size_t y_image;        /* bytes from one image's y to the next's */
    const char *bias;      /* bias of the group, or NULL */
} col2im_job;

/* Task: (image i of the GEMM's, output channel co of the group). */
static void col2im_task(void *ctx, int64_t task, int slot)
{
    const col2im_job *c = ctx;
    const conv_job *j = c->j;
    const conv_geometry *g = &j->g;
    const int64_t kplane = g->kernel_plane, in12 = g->in[1] * g->in[2];
    const int64_t image = task / j->M, co = task % j->M;
    const float *col = c->col + image * g->in_plane;
    float *acc = c->acc + slot * g->out[2];
    char *y = c->ybase + (size_t)image * c->y_image + (size_t)(co * j->P) * j->es;
    for (int64_t od = 0; od < g->out[0]; od++)
        for (int64_t oh = 0; oh < g->out[1]; oh++) {
            for (int64_t ow = 0; ow < g->out[2]; ow++)
                acc[ow] = 0.0f;
            for (int64_t kd = 0; kd < g->kernel[0]; kd++) {
                const int64_t id = c->tab[0][od * g->kernel[0] + kd];
                if (id < 0)
                    continue;
                for (int64_t kh = 0; kh < g->kernel[1]; kh++) {
                    const int64_t ih = c->tab[1][oh * g->kernel[1] + kh];
                    if (ih < 0)
                        continue;
                    for (int64_t kw = 0; kw < g->kernel[2]; kw++) {
                        const int64_t kp = (kd * g->kernel[1] + kh) * g->kernel[2] + kw;
                        const float *row = col + (size_t)((co * kplane + kp) * c->col_rs + id * in12 + ih * g->in[2]);
                        const int64_t *tw = c->tab[2] + kw, sw = g->stride[2];
                        /* the outputs tap kw reaches: from the first, every
                         * stride-th, each the next input (iw stride = ow +
                         * padding - kw dilation), up to the row's end */
                        int64_t ow = 0;
                        while (ow < g->out[2] && tw[ow * g->kernel[2]] < 0)
                            ow++;
                        if (ow < g->out[2])
                            for (int64_t iw = tw[ow * g->kernel[2]]; ow < g->out[2] && iw < g->in[2]; ow += sw, iw++)
                                acc[ow] += row[iw];
                    }
                }
            }
            {
                const int64_t o0 = (od * g->out[1] + oh) * g->out[2];
                const float b = c->bias != NULL ? amp_ld(j->t, c->bias, co) : 0.0f;
                for (int64_t ow = 0; ow < g->out[2]; ow++)
                    amp_st(j->t, y, o0 + ow, c->bias != NULL ? acc[ow] + b : acc[ow]);
            }
        }
}

static void reference_conv_transpose(amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                                     const void *bias, void *y)
{
    switch (t) {
    case AMP_F32: amp_ref_conv_transpose_f32(d, x, w, bias, y); break;
    case AMP_BF16: amp_ref_conv_transpose_bf16(d, x, w, bias, y); break;
    case AMP_F16: amp_ref_conv_transpose_f16(d, x, w, bias, y); break;
    default: amp_ref_conv_transpose_f64(d, x, w, bias, y); break;
    }
}

/* ---- conv_transpose of stride 1 as a convolution ------------------------------
 *
 * With stride 1 a transposed convolution is a plain one: output o reads
 * input i = o + padding - k dilation, so with the taps reversed (k' =
 * kernel - 1 - k) it is o - padding' + k' dilation for padding' =
 * dilation (kernel - 1) - padding, which must be >= 0 (output_padding
 * must be 0; the output size is then the same).  The weights
 * [in_channels, out_channels/groups, kernel...] become the convolution's
 * [out_channels, in_channels/groups, kernel...], per group with the two
 * channel dims swapped and every kernel plane reversed (reversing each
 * spatial index of a row-major plane reverses its flat index), in a
 * malloc'ed buffer; then amp_fast_conv computes y, bias included, with no
 * col matrix and no col2im pass.  Its sums run in another order than the
 * reference's (tolerance, not bits: tests/runtime/test_fastconv.c), and a
 * tap in the padding contributes w x 0, as amp_fast_conv's do. */

/* d's convolution form in *c, when d has one. */
static int transpose_as_conv(const amp_conv_desc *d, amp_conv_desc *c)
{
    if (d->nspatial < 1 || d->nspatial > 3)
        return 0;
    *c = *d;
    for (int i = 0; i < d->nspatial; i++) {
        const int64_t pad = d->dilation[i] * (d->kernel[i] - 1) - d->padding[i];
        if (d->stride[i] != 1 || d->output_padding[i] != 0 || d->dilation[i] < 1 || pad < 0 ||
            d->out_size[i] != d->in_size[i] + 2 * pad - d->dilation[i] * (d->kernel[i] - 1))
            return 0;
        c->padding[i] = pad;
        c->output_padding[i] = 0;
    }
    return 1;
}


/* y as amp_fast_conv of x and the flipped weights wf[co, ci', kplane - 1 -
 * kp] = w[g in_g + ci', co', kp] (co = g out_g + co'), which the packing
 * reads from w directly (conv_job.flip); 0 (nothing done) when d has no
 * convolution form or there is no memory for the packed weights. */
static int transpose_by_conv(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                             const void *w, const void *bias, void *y)
{
    amp_conv_desc c;
    if (!transpose_as_conv(d, &c))
        return 0;
    return amp_conv_run(k, t, &c, x, w, 1, NULL, bias, NULL, y);
}

void amp_fast_conv_transpose(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                             const void *w, const void *bias, void *y)
{
    conv_job j;
    col2im_job c;
    int64_t in_g, tab_len = 0, *tabs, per_image, images = 1;
    float *col, *acc;
    char *xb = NULL;
    int threads = amp_get_threads();

    memset(&j, 0, sizeof j);
    j.g = conv_geometry_of(d);
    in_g = d->in_channels / d->groups;
    j.M = d->out_channels / d->groups; /* output channels per group */
    j.P = j.g.out_plane;
    if (d->batch <= 0 || j.M <= 0 || j.P <= 0)
        return;
    if (in_g == 0 || j.g.in_plane == 0 || (t != AMP_F32 && t != AMP_BF16 && t != AMP_F16)) {
        reference_conv_transpose(t, d, x, w, bias, y);
        return;
    }
    if (transpose_by_conv(k, t, d, x, w, bias, y) || amp_conv_transpose_by_phases(k, t, d, x, w, bias, y))
        return;
    j.t = t;
    j.es = amp_dtype_size(t);
    j.d = d;
    for (int i = 0; i < 3; i++)
        tab_len += j.g.out[i] * j.g.kernel[i];
    /* Small input planes (a network's last layers) give a GEMM per image
     * too few columns: images go together, their inputs copied side by
     * side (xb: [in_g][images x in_plane]), up to COL_BATCH_BYTES of col. */
    per_image = j.M * j.g.kernel_plane * j.g.in_plane;
    if (j.g.in_plane < COL_BATCH_PLANE && d->batch > 1) {
        images = (int64_t)(COL_BATCH_BYTES / sizeof *col) / per_image;
        images = images < 1 ? 1 : images > d->batch ? d->batch : images;
    }
    col = amp_scratch_alloc((size_t)(per_image * images) * sizeof *col);
    if (images > 1) {
        xb = amp_scratch_alloc((size_t)(in_g * images * j.g.in_plane) * j.es);
        if (xb == NULL)
            images = 1;
    }
    tabs = amp_scratch_alloc((size_t)tab_len * sizeof *tabs);
    acc = amp_scratch_alloc((size_t)(AMP_MAX_THREADS * j.g.out[2]) * sizeof *acc);
    if (col == NULL || tabs == NULL || acc == NULL) { /* the reference needs no memory */
        amp_scratch_free(xb);
        amp_scratch_free(col);
        amp_scratch_free(tabs);
        amp_scratch_free(acc);
        reference_conv_transpose(t, d, x, w, bias, y);
        return;
    }
    {
        int64_t *at = tabs;
        for (int i = 0; i < 3; i++) {
            c.tab[i] = at;
            for (int64_t o = 0; o < j.g.out[i]; o++)
                for (int64_t kk = 0; kk < j.g.kernel[i]; kk++) {
                    const int64_t scaled = o + j.g.padding[i] - kk * j.g.dilation[i];
                    *at++ = scaled < 0 || scaled % j.g.stride[i] != 0 || scaled / j.g.stride[i] >= j.g.in[i]
                                ? -1
                                : scaled / j.g.stride[i];
                }
        }
    }
    c.j = &j;
    c.col = col;
    c.acc = acc;
    if (2.0 * (double)(j.M * j.g.kernel_plane) * (double)in_g * (double)(j.g.in_plane * images) < PARALLEL_MIN_FLOPS)
        threads = 1;
    c.y_image = (size_t)(d->out_channels * j.P) * j.es;
    for (int64_t n = 0; n < d->batch; n += images)
        for (int64_t grp = 0; grp < d->groups; grp++) {
            const int64_t count = min64(images, d->batch - n);
            const size_t plane_bytes = (size_t)j.g.in_plane * j.es;
            const char *b = (const char *)x + (size_t)((n * d->in_channels + grp * in_g) * j.g.in_plane) * j.es;
            amp_gemm_desc gd;
            if (images > 1) {
                for (int64_t ci = 0; ci < in_g; ci++)
                    for (int64_t i = 0; i < count; i++)
                        memcpy(xb + (size_t)(ci * count + i) * plane_bytes,
                               b + (size_t)(i * d->in_channels + ci) * plane_bytes, plane_bytes);
                b = xb;
            }
            memset(&gd, 0, sizeof gd);
            gd.batch = 1;
            gd.M = j.M * j.g.kernel_plane;
            gd.N = count * j.g.in_plane;
            gd.K = in_g;
            gd.a_stride[1] = 1;
            gd.a_stride[2] = gd.M;
            gd.b_stride[1] = gd.N;
            gd.b_stride[2] = 1;
            gd.alpha = 1.0;
            amp_fast_gemm_f32(k, t, &gd, (const char *)w + (size_t)(grp * in_g * gd.M) * j.es, b, col);
            c.col_rs = gd.N;
            c.ybase = (char *)y + (size_t)((n * d->out_channels + grp * j.M) * j.P) * j.es;
            c.bias = bias != NULL ? (const char *)bias + (size_t)(grp * j.M) * j.es : NULL;
            amp_parallel_run(threads, count * j.M, col2im_task, &c);
        }
    amp_scratch_free(xb);
    amp_scratch_free(col);
    amp_scratch_free(tabs);
    amp_scratch_free(acc);
}
