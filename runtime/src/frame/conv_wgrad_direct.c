/*
 * conv_wgrad_direct.c - conv_backward_weight without im2col matrices in
 * memory, for kernels with pack_b_trows: the avx512bf16 set's (kpair 2,
 * bf16) and the avx2 set's (kpair 1: f32 units widened from bf16; its
 * f16 storage takes the GEMMs).
 *
 * A task owns the columns [k0, k0 + nb) and rows [m0, m0 + mb) of dw and
 * sums them over every image and output position p, in k blocks of up to
 * kcu units (kpair positions each: pairs at kpair 2) within an image.  Per block it copies the input rows
 * the block's positions read, for the channels of its columns,
 * zero-padded, into amp_conv_pad_buf (at horizontal stride 2 each row
 * split into its even and odd columns, so that a tap's elements are
 * contiguous), packs B from those rows with the kernel's pack_b_trows (a
 * tap's row over an output row's positions is contiguous there), packs its
 * rows of dy as A (or, with several column blocks, takes them from dy
 * packed once beforehand for all of them), and runs the micro-kernel,
 * accumulating in amp_conv_w_buf from the first block to the last.
 *
 * Each element is one chain of the micro-kernel's products (vdpbf16ps,
 * or FMAs at kpair 1) over all images and positions in order, rounded to t once, on any thread count (nb and mb only say which
 * task computes it).  Except where the whole of dw is one block (a
 * network's first layer: few columns): a task per part of the images then
 * (up to WGRAD_IMAGE_PARTS, none empty), each part's chain left in f32 and
 * the parts added in order and rounded after them, which lets the threads
 * share the work evenly without repacking B; that depends on the shape
 * alone, so the result still does not depend on the thread count.
 *
 * Taken for 2-d and 1-d, no horizontal dilation, horizontal stride 1 or 2,
 * kernels of more than one tap (a 1 x 1 kernel's im2col is a strided copy
 * of x, for which the GEMM path is faster).  Output rows of odd width
 * (where at kpair 2 a unit, two adjacent positions, can straddle two
 * rows) go through the flat copy (wgrad_flat_copy), without vertical
 * dilation (kpair 1 takes the row copy then).
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"


/* (conv.h) */
void amp_conv_wgrad_store(const amp_gemm_kernel *k, amp_dtype t, const wgrad_out *o, int64_t at, int64_t n,
                          const float *acc)
{
    uint16_t low[NB_MAX];
    if (o->dw32 == NULL) {
        k->epi(t, n, acc, 1.0f, 0.0f, NULL, 0, NULL, (char *)o->dw + (size_t)at * amp_dtype_size(t));
        return;
    }
    for (int64_t i = 0; i < n; i += NB_MAX) {
        const int64_t m = min64(NB_MAX, n - i);
        k->epi(t, m, acc + i, 1.0f, 0.0f, NULL, 0, NULL, low);
        amp_conv_widen_into(t, (size_t)m, low, o->dw32 + at + i, o->accumulate);
    }
}

/* The parts of the images dw's sum is split into when dw is one block:
 * four, so that a thread that starts late or runs slow hands a part over
 * (resnet18's stem on two threads: 3.1-3.5 ms with two parts, 2.9-3.2
 * with four). */
#define WGRAD_IMAGE_PARTS 4

/* A per-slot packed A block: up to AMP_GEMM_MB_MAX rows x kcu units. */
static uint32_t wgrad_a_buf[AMP_MAX_THREADS][AMP_GEMM_MB_MAX * AMP_GEMM_KCU_MAX] ALIGN64;

typedef struct {
    const amp_gemm_kernel *k;
    const amp_conv_desc *d;
    conv_geometry g;
    amp_dtype t;
    const char *x, *dy;
    const wgrad_out *out;
    int64_t M, K, P, mb, nb, m_chunks, n_chunks;
    int64_t row_len, half_w; /* elements per padded row; stride 2: per phase */
    /* Odd output widths (resnet18's 7 x 7 last stage): a pair of
     * positions can straddle two output rows, so a tap's positions are
     * copied out flat instead (wgrad_flat_copy): flat_rows rows of wout
     * elements per (channel, kernel column, row phase). */
    int flat;
    int64_t flat_rows;
    /* Flat, with a plane of at most kstep positions: group images per k
     * block, each its own cdiv(P, 2) units (its last unit half zero when P
     * is odd), so that the micro-kernel runs group x cdiv(P, 2) units per
     * call instead of one image's (resnet18's 7 x 7: 200 instead of 25);
     * 0 otherwise.  pblocks then counts the groups of the batch. */
    int64_t group;
    uint16_t *flatx; /* group mode: every (image, channel)'s flat copy */
    /* With several column blocks, dy packed as A once for all of them
     * (wgrad_pack_dy_task): (group, image, k block)'s panels of every row
     * a_block units apart, block kb's strip s at s kcu mr units into its
     * own; else NULL, and each task packs its rows. */
    uint32_t *apack;
    int64_t pblocks, a_block;
    /* images [part per_part, + per_part) are task / (tasks per part)'s;
     * with parts > 1 each part's f32 sums go to partial ([part][group
     * rows][K]), added and rounded after the tasks */
    int64_t parts, per_part;
    float *partial;
} wgrad_direct_job;

/* dy of task = (group, image, k block of positions) packed as A, every
 * row of the group, into apack. */
static void wgrad_pack_dy_task(void *ctx, int64_t task, int slot)
{
    const wgrad_direct_job *w = ctx;
    const amp_gemm_kernel *k = w->k;
    const int64_t kp = k->kpair, kstep = (int64_t)k->kcu * kp, pb = task % w->pblocks, n = task / w->pblocks % w->d->batch;
    const int64_t grp = task / (w->pblocks * w->d->batch), p0 = pb * kstep, plen = min64(kstep, w->P - p0);
    const char *dyb = w->dy + (size_t)((n * w->d->out_channels + grp * w->M) * w->P + p0) * 2;
    uint32_t *dst = w->apack + task * w->a_block;
    (void)slot;
    if (w->group > 0) { /* task = (group, image group): each image's units in turn */
        const int64_t gi = task % w->pblocks, g = task / w->pblocks, n0 = gi * w->group;
        const int64_t gn = min64(w->group, w->d->batch - n0), upi = cdiv(w->P, kp);
        for (int64_t n = n0; n < n0 + gn; n++) {
            const char *dyn = w->dy + (size_t)((n * w->d->out_channels + g * w->M) * w->P) * 2;
            for (int64_t ir = 0; ir < w->M; ir += k->mr)
                k->pack_a(w->t, dyn + (size_t)(ir * w->P) * 2, w->P, 1, (int)min64(k->mr, w->M - ir), w->P,
                          dst + ir / k->mr * gn * upi * k->mr + (n - n0) * upi * k->mr);
        }
        return;
    }
    for (int64_t ir = 0; ir < w->M; ir += k->mr)
        k->pack_a(w->t, dyb + (size_t)(ir * w->P) * 2, w->P, 1, (int)min64(k->mr, w->M - ir), plen,
                  dst + ir / k->mr * cdiv(plen, kp) * k->mr);
}

/* Output rows a block of up to kstep positions spans, and the padded input
 * rows those read (per channel). */
static int64_t wgrad_block_rows(const wgrad_direct_job *w, int64_t kstep)
{
    const int64_t out_rows = min64(w->g.out[1], (kstep - 1) / w->g.out[2] + 2);
    return (out_rows - 1) * w->g.stride[1] + (w->g.kernel[1] - 1) * w->g.dilation[1] + 1;
}

/* Channels [c0, c0 + nch) of image ximg, input rows from ih0 on (rows of
 * them), into pad (channel c's rows rows_max apart): each row_len elements, input column -padding first,
 * zero outside the input; at stride 2 the even columns, then the odd. */
static void wgrad_pad_copy(const wgrad_direct_job *w, const char *ximg, int64_t c0, int64_t nch, int64_t rows_max,
                           int64_t ih0, int64_t rows, uint16_t *pad)
{
    const conv_geometry *g = &w->g;
    const int64_t in2 = g->in[2], p2 = g->padding[2];
    for (int64_t c = 0; c < nch; c++)
        for (int64_t r = 0; r < rows; r++) {
            uint16_t *o = pad + (c * rows_max + r) * w->row_len;
            const int64_t ih = ih0 + r;
            const uint16_t *src;
            if (ih < 0 || ih >= g->in[1]) {
                memset(o, 0, (size_t)w->row_len * 2);
                continue;
            }
            src = (const uint16_t *)(const void *)ximg + ((c0 + c) * g->in[1] + ih) * in2;
            if (g->stride[2] == 1) {
                const int64_t left = min64(p2, w->row_len), right = min64(w->row_len, p2 + in2);
                memset(o, 0, (size_t)left * 2);
                if (right > left)
                    memcpy(o + left, src + (left - p2), (size_t)(right - left) * 2);
                if (right < w->row_len)
                    memset(o + (right > left ? right : left), 0, (size_t)(w->row_len - (right > left ? right : left)) * 2);
            } else {
                /* phase ph's entry e is padded column 2 e + ph, input
                 * column 2 e + ph - p2: inside for e in [lo, hi) */
                for (int ph = 0; ph < 2; ph++) {
                    uint16_t *op = o + ph * w->half_w;
                    const int64_t lo = min64(p2 > ph ? cdiv(p2 - ph, 2) : 0, w->half_w);
                    int64_t hi = in2 - 1 + p2 - ph < 0 ? 0 : (in2 - 1 + p2 - ph) / 2 + 1;
                    hi = hi < lo ? lo : min64(hi, w->half_w);
                    memset(op, 0, (size_t)lo * 2);
                    im2col_copy_stride2_16((char *)(op + lo), (const char *)(src + 2 * lo + ph - p2), hi - lo);
                    memset(op + hi, 0, (size_t)(w->half_w - hi) * 2);
                }
            }
        }
}

/* The flat copy of channels [c0, c0 + nch) of image ximg for a block whose
 * first output row is oh_a (nrows rows per phase): plane (c, kw, ph) of
 * flat_rows x wout elements, row r of it input row (oh_a + r) s1 + ph -
 * padding, element ow of that row input column ow s2 + kw - padding (0
 * outside the input).  Tap (kh, kw) of output position p then reads plane
 * (c, kw, kh mod s1) at (kh / s1) wout + p - oh_a wout: one run for the
 * block's positions, across its output rows. */
static void wgrad_flat_copy(const wgrad_direct_job *w, const char *ximg, int64_t c0, int64_t nch, int64_t oh_a,
                            int64_t nrows, uint16_t *pad)
{
    const conv_geometry *g = &w->g;
    const int64_t in_h = g->in[1], in_w = g->in[2], wout = g->out[2], kW = g->kernel[2];
    const int64_t s1 = g->stride[1], s2 = g->stride[2], p1 = g->padding[1], p2 = g->padding[2];
    const int64_t plane_len = w->flat_rows * wout;
    for (int64_t c = 0; c < nch; c++)
        for (int64_t kw = 0; kw < kW; kw++) {
            /* the output columns whose input column is inside: [lo, hi) */
            const int64_t lo = min64(kw >= p2 ? 0 : cdiv(p2 - kw, s2), wout);
            int64_t hi = in_w - 1 + p2 - kw < 0 ? 0 : min64((in_w - 1 + p2 - kw) / s2 + 1, wout);
            if (hi < lo)
                hi = lo;
            for (int64_t ph = 0; ph < s1; ph++)
                for (int64_t r = 0; r < nrows; r++) {
                    uint16_t *o = pad + ((c * kW + kw) * s1 + ph) * plane_len + r * wout;
                    const int64_t ih = (oh_a + r) * s1 + ph - p1;
                    const uint16_t *src;
                    if (ih < 0 || ih >= in_h) {
                        memset(o, 0, (size_t)wout * 2);
                        continue;
                    }
                    src = (const uint16_t *)(const void *)ximg + ((c0 + c) * in_h + ih) * in_w + (lo * s2 + kw - p2);
                    if (wout < 32) { /* a few elements: the C library's calls cost more than the copy */
                        for (int64_t q = 0; q < lo; q++)
                            o[q] = 0;
                        for (int64_t q = lo; q < hi; q++)
                            o[q] = src[(q - lo) * s2];
                        for (int64_t q = hi; q < wout; q++)
                            o[q] = 0;
                        continue;
                    }
                    memset(o, 0, (size_t)lo * 2);
                    if (s2 == 1)
                        memcpy(o + lo, src, (size_t)(hi - lo) * 2);
                    else
                        im2col_copy_stride2_16((char *)(o + lo), (const char *)src, hi - lo);
                    memset(o + hi, 0, (size_t)(wout - hi) * 2);
                }
        }
}

/* Group mode's flat copy of x, before the tasks: task = (image, channel). */
static void wgrad_flat_task(void *ctx, int64_t task, int slot)
{
    const wgrad_direct_job *w = ctx;
    const conv_geometry *g = &w->g;
    const int64_t cin = w->d->in_channels, n = task / cin, ch = task % cin;
    (void)slot;
    wgrad_flat_copy(w, w->x + (size_t)(n * cin * g->in_plane) * 2, ch, 1, 0, w->flat_rows,
                    w->flatx + task * g->kernel[2] * g->stride[1] * w->flat_rows * g->out[2]);
}

static void wgrad_direct_task(void *ctx, int64_t task, int slot)
{
    const wgrad_direct_job *w = ctx;
    const amp_gemm_kernel *k = w->k;
    const conv_geometry *g = &w->g;
    const amp_conv_desc *d = w->d;
    const int mr = k->mr, nr = k->nr;
    const int64_t per_group = w->m_chunks * w->n_chunks, part = task / (d->groups * per_group);
    const int64_t grp = task / per_group % d->groups, mc = task % per_group / w->n_chunks, nc = task % w->n_chunks;
    const int64_t n_lo = part * w->per_part, n_hi = min64(d->batch, n_lo + w->per_part);
    const int64_t m0 = mc * w->mb, k0 = nc * w->nb;
    const int64_t mlen = min64(w->mb, w->M - m0), ncols = min64(w->nb, w->K - k0), ldw = round_up(ncols, nr);
    const int64_t cin_g = d->in_channels / d->groups, kplane = g->kernel_plane, kp = k->kpair;
    const int64_t kstep = (int64_t)k->kcu * kp;
    const int64_t c_lo = k0 / kplane, nch = (k0 + ncols - 1) / kplane - c_lo + 1;
    const int64_t wout = g->out[2], s1 = g->stride[1], rows_max = wgrad_block_rows(w, kstep);
    /* each of the task's columns (and the zero ones up to ldw): where its
     * tap's row starts in the padded copy, relative to a block's first
     * output row and column 0 (channel c's rows rows_max apart; the zero
     * row after the last channel's) */
    int64_t col_off[NB_MAX];
    float *acc = amp_conv_w_buf[slot];
    uint32_t *pb = amp_conv_b_buf[slot], *pa = wgrad_a_buf[slot];
    uint16_t *pad = (uint16_t *)(void *)amp_conv_pad_buf[slot];
    const void *tap_rows[AMP_GEMM_MR_MAX * 4];
    int first = 1;

    if (mlen <= 0 || ncols <= 0)
        return;
    const int64_t plane_len = w->flat_rows * wout, kW = g->kernel[2];
    for (int64_t i = 0; i < ldw; i++) {
        const int64_t kk = k0 + i, c = kk / kplane - c_lo, kp = kk % kplane;
        const int64_t kh = kp / kW, kw = kp % kW;
        if (w->flat)
            col_off[i] = i >= ncols ? nch * kW * s1 * plane_len
                                    : ((c * kW + kw) * s1 + kh % s1) * plane_len + kh / s1 * wout;
        else
            col_off[i] = i >= ncols ? nch * rows_max * w->row_len
                                    : (c * rows_max + kh * g->dilation[1]) * w->row_len +
                                          (g->stride[2] == 1 ? kw : (kw & 1) * w->half_w + (kw >> 1));
    }
    /* the zero row the padding columns read (group mode: at pad) */
    if (w->group > 0)
        memset(pad, 0, (size_t)kstep * 2);
    else if (w->flat)
        memset(pad + nch * kW * s1 * plane_len, 0, (size_t)kstep * 2);
    else
        memset(pad + nch * rows_max * w->row_len, 0, (size_t)(w->row_len + wout) * 2);
    for (int64_t n0 = n_lo; w->group > 0 && n0 < n_hi; n0 += w->group) {
        const int64_t gn = min64(w->group, n_hi - n0), upi = cdiv(w->P, kp), kcu = gn * upi;
        for (int64_t n = n0; n < n0 + gn; n++) {
            const uint16_t *xflat = w->flatx + (n * d->in_channels + grp * cin_g + c_lo) * kW * s1 * plane_len;
            const char *dyimg = w->dy + (size_t)((n * d->out_channels + grp * w->M + m0) * w->P) * 2;
            /* B: each column's tap, the whole image's positions in one run */
            for (int64_t jr = 0; jr < ncols; jr += nr) {
                uint32_t *panel = pb + jr / nr * kcu * nr + (n - n0) * upi * nr;
                for (int i = 0; i < nr; i++)
                    tap_rows[i] = jr + i < ncols ? xflat + col_off[jr + i] : pad;
                k->pack_b_trows(tap_rows, w->P / kp, panel);
                if (w->P % kp != 0)
                    for (int i = 0; i < nr; i++)
                        panel[w->P / 2 * nr + i] = ((const uint16_t *)tap_rows[i])[w->P - 1];
            }
            if (w->apack == NULL)
                for (int64_t ir = 0; ir < mlen; ir += mr)
                    k->pack_a(w->t, dyimg + (size_t)(ir * w->P) * 2, w->P, 1, (int)min64(mr, mlen - ir), w->P,
                              pa + ir / mr * kcu * mr + (n - n0) * upi * mr);
        }
        if (w->apack != NULL) /* (n_lo is 0: no image parts with several column blocks) */
            pa = w->apack + (grp * w->pblocks + n0 / w->group) * w->a_block + m0 / mr * kcu * mr;
        for (int64_t ir = 0; ir < mlen; ir += mr)
            for (int64_t jr = 0; jr < ncols; jr += nr)
                k->micro(kcu, pa + ir / mr * kcu * mr, pb + jr / nr * kcu * nr, acc + ir * ldw + jr, ldw, !first);
        first = 0;
    }
    for (int64_t n = n_lo; w->group == 0 && n < n_hi; n++) {
        const char *ximg = w->x + (size_t)((n * d->in_channels + grp * cin_g) * g->in_plane) * 2;
        const char *dyimg = w->dy + (size_t)((n * d->out_channels + grp * w->M + m0) * w->P) * 2;
        for (int64_t p0 = 0; p0 < w->P; p0 += kstep) {
            /* (an odd plen, flat only: the last unit's second position a 0 in A and B) */
            const int64_t plen = min64(kstep, w->P - p0), kcu = cdiv(plen, kp);
            const int64_t oh_a = p0 / wout, oh_b = (p0 + plen - 1) / wout;
            const int64_t prows = (oh_b - oh_a) * s1 + (g->kernel[1] - 1) * g->dilation[1] + 1;
            if (w->flat) {
                /* B: each column's tap is one run over the block */
                wgrad_flat_copy(w, ximg, c_lo, nch, oh_a, oh_b - oh_a + 1 + (g->kernel[1] - 1) / s1, pad);
                for (int64_t jr = 0; jr < ncols; jr += nr) {
                    uint32_t *panel = pb + jr / nr * kcu * nr;
                    for (int i = 0; i < nr; i++)
                        tap_rows[i] = pad + col_off[jr + i] + (jr + i < ncols ? p0 - oh_a * wout : 0);
                    k->pack_b_trows(tap_rows, plen / kp, panel);
                    if (plen % kp != 0)
                        for (int i = 0; i < nr; i++)
                            panel[plen / 2 * nr + i] = ((const uint16_t *)tap_rows[i])[plen - 1];
                }
            } else {
                wgrad_pad_copy(w, ximg, c_lo, nch, rows_max, oh_a * s1 - g->padding[1], prows, pad);
            }
            /* B: per output row of the block, each column's tap row over it */
            for (int64_t p = p0; !w->flat && p < p0 + plen;) {
                const int64_t oh = p / wout, ow = p % wout, len = min64(wout - ow, p0 + plen - p);
                const int64_t row_base = (oh - oh_a) * s1 * w->row_len + ow;
                for (int64_t jr = 0; jr < ncols; jr += nr) {
                    for (int i = 0; i < nr; i++)
                        tap_rows[i] = pad + col_off[jr + i] + (jr + i < ncols ? row_base : 0);
                    k->pack_b_trows(tap_rows, len / kp, pb + jr / nr * kcu * nr + (p - p0) / kp * nr);
                }
                p += len;
            }
            /* A: the task's rows of dy over the block's positions */
            if (w->apack != NULL)
                pa = w->apack + ((grp * d->batch + n) * w->pblocks + p0 / kstep) * w->a_block + m0 / mr * kcu * mr;
            else
                for (int64_t ir = 0; ir < mlen; ir += mr)
                    k->pack_a(w->t, dyimg + (size_t)(ir * w->P + p0) * 2, w->P, 1, (int)min64(mr, mlen - ir), plen,
                              pa + ir / mr * kcu * mr);
            for (int64_t ir = 0; ir < mlen; ir += mr)
                for (int64_t jr = 0; jr < ncols; jr += nr)
                    k->micro(kcu, pa + ir / mr * kcu * mr, pb + jr / nr * kcu * nr, acc + ir * ldw + jr, ldw, !first);
            first = 0;
        }
    }
    for (int64_t r = 0; r < mlen; r++) {
        const int64_t row = grp * w->M + m0 + r;
        if (w->parts > 1)
            memcpy(w->partial + (part * d->groups * w->M + row) * w->K + k0, acc + r * ldw, (size_t)ncols * sizeof *acc);
        else
            amp_conv_wgrad_store(k, w->t, w->out, row * w->K + k0, ncols, acc + r * ldw);
    }
}

/* Whether the direct path may run, and how many weight gradients have
 * taken it (amp_fast_conv_allow_wgrad_direct,
 * amp_fast_conv_wgrad_direct_taken). */
static int wgrad_direct_allowed = 1;
static int64_t wgrad_direct_taken;

void amp_fast_conv_allow_wgrad_direct(int allow)
{
    wgrad_direct_allowed = allow;
}

int64_t amp_fast_conv_wgrad_direct_taken(void)
{
    return __atomic_load_n(&wgrad_direct_taken, __ATOMIC_RELAXED);
}

/* dw by wgrad_direct_task when the kernel, dtype and shape allow it;
 * returns 0 (nothing done) otherwise. */
int amp_conv_wgrad_direct(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *dy,
                        const wgrad_out *out, int threads)
{
    wgrad_direct_job w;
    int64_t tasks, mb_max;
    memset(&w, 0, sizeof w);
    w.g = conv_geometry_of(d);
    if (!wgrad_direct_allowed || k->pack_b_trows == NULL || (k->kpair != 2 && k->kpair != 1) ||
        amp_dtype_size(t) != 2 || (k->kpair == 1 && t != AMP_BF16) || w.g.in[0] != 1 || w.g.out[0] != 1 ||
        w.g.kernel[0] != 1 || w.g.dilation[2] != 1 || (w.g.stride[2] != 1 && w.g.stride[2] != 2) ||
        (k->kpair == 2 && w.g.out[2] % 2 != 0 && w.g.dilation[1] != 1) || w.g.kernel_plane == 1 ||
        k->nr > 4 * AMP_GEMM_MR_MAX)
        return 0;
    /* (kpair 1 needs the flat copy for none of its units, one position
     * each, but takes it at odd widths too, for group mode's longer runs
     * of the micro-kernel, where vertical dilation allows it) */
    w.flat = w.g.out[2] % 2 != 0 && (k->kpair == 2 || w.g.dilation[1] == 1);
    w.k = k;
    w.d = d;
    w.t = t;
    w.x = x;
    w.dy = dy;
    w.out = out;
    w.M = d->out_channels / d->groups;
    w.K = d->in_channels / d->groups * w.g.kernel_plane;
    w.P = w.g.out_plane;
    w.row_len = (w.g.out[2] - 1) * w.g.stride[2] + w.g.kernel[2];
    if (w.g.stride[2] == 2) {
        w.half_w = (w.row_len + 1) / 2;
        w.row_len = 2 * w.half_w;
    }
    mb_max = AMP_GEMM_MB_MAX / k->mr * k->mr;
    w.m_chunks = cdiv(w.M, mb_max);
    w.mb = round_up(cdiv(w.M, w.m_chunks), k->mr);
    w.n_chunks = cdiv(w.K, NB_MAX);
    w.nb = round_up(cdiv(w.K, w.n_chunks), k->nr);
    w.parts = d->groups * w.m_chunks * w.n_chunks == 1 ? min64(WGRAD_IMAGE_PARTS, d->batch) : 1;
    w.per_part = cdiv(d->batch, w.parts);
    w.parts = cdiv(d->batch, w.per_part); /* none empty (5 images: 2, 2, 1) */
    /* enough tasks for the threads: narrower column blocks (each repacks
     * its rows of dy, so not narrower than needed) */
    while (threads > 1 && w.parts * d->groups * w.m_chunks * w.n_chunks < 2 * threads && w.nb > k->nr) {
        w.nb = round_up(cdiv(w.nb, 2), k->nr);
        w.n_chunks = cdiv(w.K, w.nb);
    }
    /* the widest block's channels, rows and the zero row must fit amp_conv_pad_buf */
    {
        const int64_t nch = (w.nb + w.g.kernel_plane - 1) / w.g.kernel_plane + 1, kstep = (int64_t)k->kcu * k->kpair;
        double bytes = ((double)nch * (double)wgrad_block_rows(&w, kstep) + 1) * (double)w.row_len * 2 +
                       (double)w.g.out[2] * 2;
        if (w.flat) {
            w.flat_rows = min64(w.g.out[1], (kstep - 1) / w.g.out[2] + 2) + (w.g.kernel[1] - 1) / w.g.stride[1];
            w.group = w.P <= kstep ? k->kcu / cdiv(w.P, k->kpair) : 0;
            /* (group mode copies into flatx: pad holds the zero row alone) */
            bytes = ((w.group > 0 ? 0.0
                                  : (double)nch * (double)w.g.kernel[2] * (double)w.g.stride[1] *
                                        (double)w.flat_rows * (double)w.g.out[2]) +
                     (double)kstep) * 2;
        }
        if (bytes > (double)PAD_BUF_BYTES)
            return 0;
    }
    tasks = w.parts * d->groups * w.m_chunks * w.n_chunks;
    if (w.group > 0) {
        w.flatx = amp_scratch_alloc((size_t)(d->batch * d->in_channels * w.g.kernel[2] * w.g.stride[1] * w.flat_rows *
                                             w.g.out[2]) * sizeof *w.flatx);
        if (w.flatx == NULL)
            return 0;
        amp_parallel_run(threads, d->batch * d->in_channels, wgrad_flat_task, &w);
    }
    if (w.parts > 1) {
        w.partial = amp_scratch_alloc((size_t)(w.parts * d->groups * w.M * w.K) * sizeof *w.partial);
        if (w.partial == NULL) {
            amp_scratch_free(w.flatx);
            return 0;
        }
    }
    if (w.n_chunks > 1) { /* (if memory allows) */
        /* per (group, image, block of positions), or per (group, image group) */
        const int64_t blocks = w.group > 0 ? 1 : d->batch;
        w.pblocks = w.group > 0 ? cdiv(d->batch, w.group) : cdiv(w.P, (int64_t)k->kcu * k->kpair);
        w.a_block = round_up(w.M, k->mr) * (w.group > 0 ? w.group * cdiv(w.P, k->kpair) : k->kcu);
        w.apack = amp_scratch_alloc((size_t)(d->groups * blocks * w.pblocks * w.a_block) * sizeof *w.apack);
        if (w.apack != NULL)
            amp_parallel_run(threads, d->groups * blocks * w.pblocks, wgrad_pack_dy_task, &w);
    }
    amp_parallel_run(threads, tasks, wgrad_direct_task, &w);
    __atomic_fetch_add(&wgrad_direct_taken, 1, __ATOMIC_RELAXED);
    if (w.parts > 1) { /* the parts' sums in order, rounded once */
        const int64_t total = d->groups * w.M * w.K;
        float *sum = w.partial;
        for (int64_t part = 1; part < w.parts; part++)
            for (int64_t i = 0; i < total; i++)
                sum[i] += w.partial[part * total + i];
        amp_conv_wgrad_store(k, t, out, 0, total, sum);
    }
    amp_scratch_free(w.partial);
    amp_scratch_free(w.apack);
    amp_scratch_free(w.flatx);
    return 1;
}
