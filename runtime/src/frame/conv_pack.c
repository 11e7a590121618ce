/*
 * conv_pack.c - the B side of the convolution's GEMMs: the im2col matrix
 * of x, packed into B panels without being written out.
 *
 * A task's columns are cut at output-row ends into runs
 * (amp_conv_output_runs), so no element needs a division.  Then either:
 *  - the im2col-pack (amp_conv_pack_cols_init, amp_conv_pack_b_block):
 *    each kernel position's taps over the runs tabulated once per task
 *    (source offset and in-range span per run), then per unit of k its
 *    rows' taps and channel planes handed to the kernel's pack_b_im2col,
 *    or to isa_pack_b_im2col_body where the packing is a plain copy (bf16
 *    pairs, f32 units of f32); with the kernel's pack_b_rows (bf16; 2-d and
 *    1-d, horizontal stride 1 or 2) the task first copies the input rows
 *    its columns read, zero-padded, into amp_conv_pad_buf
 *    (amp_conv_pad_copy, the kernel's pad_rows), so the packing needs no
 *    bounds check per tap;
 *  - or, for kernels whose packing converts (bf16 and f16 on the f32
 *    micro-kernel), im2col rows (amp_conv_im2col_row16/32) written into a
 *    per-slot buffer, which stays in L2, and packed from there.
 * amp_conv_fullpack_task and amp_conv_full_im2col_task do the same for a
 * whole (image, group) beforehand, when a convolution's rows are split
 * into several blocks.
 *
 * Elements are copied, never converted, except by the kernel's own packing.
 */
#include <string.h>

#include "conv.h"

/* The task's columns [p0, p0 + n) cut at output-row ends (at most n runs);
 * returns the number of runs.  Computed once per task, so the im2col rows
 * need no division per element or per run. */
int64_t amp_conv_output_runs(const conv_geometry *g, int64_t p0, int64_t n, out_run *runs)
{
    int64_t count = 0, p = p0;
    while (p < p0 + n) {
        out_run *r = &runs[count++];
        r->ow0 = p % g->out[2];
        r->oh = p / g->out[2] % g->out[1];
        r->od = p / (g->out[1] * g->out[2]);
        r->len = min64(g->out[2] - r->ow0, p0 + n - p);
        r->col = p - p0;
        p += r->len;
    }
    return count;
}

/* Row k = (channel plane xc, kernel position (kd, kh, kw)) of col over the
 * task's runs: the input element each output position reads, or 0 in the
 * padding.  Elements of es bytes are copied, never converted; es is a
 * constant in each caller below, so the element copies inline. */
static AMP_ALWAYS_INLINE void im2col_row(size_t es, const conv_geometry *g, const char *xc, int64_t kd, int64_t kh,
                                         int64_t kw, const out_run *runs, int64_t nruns, char *dst)
{
    const int64_t s2 = g->stride[2], in2 = g->in[2];
    for (int64_t ri = 0; ri < nruns; ri++) {
        const out_run *r = &runs[ri];
        const int64_t id = r->od * g->stride[0] - g->padding[0] + kd * g->dilation[0];
        const int64_t ih = r->oh * g->stride[1] - g->padding[1] + kh * g->dilation[1];
        char *o = dst + (size_t)r->col * es;
        int64_t lo, hi, base;
        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
            memset(o, 0, (size_t)r->len * es);
            continue;
        }
        /* the input row; base may be negative (left padding), so offsets
         * are added only where they land inside it */
        const char *row = xc + (size_t)((id * g->in[1] + ih) * in2) * es;
        /* Output q of the run reads input column base + q s2: inside for q
         * in [lo, hi). */
        {
            base = r->ow0 * s2 - g->padding[2] + kw * g->dilation[2];
            if (s2 == 1) {
                lo = base >= 0 ? 0 : -base;
                hi = in2 - base;
            } else {
                lo = base >= 0 ? 0 : cdiv(-base, s2);
                hi = base >= in2 ? 0 : cdiv(in2 - base, s2);
            }
        }
        lo = min64(lo, r->len);
        hi = hi < lo ? lo : min64(hi, r->len);
        /* the padding at the run's ends is a few elements at most: zeroed
         * in place rather than by library calls (runs are short, 7 to 56
         * elements in resnet18, so per-run costs matter) */
        for (int64_t q = 0; q < lo; q++)
            memset(o + (size_t)q * es, 0, es);
        if (s2 == 1 && hi > lo)
            memcpy(o + (size_t)lo * es, row + (size_t)(base + lo) * es, (size_t)(hi - lo) * es);
        else if (s2 == 2 && es == 2) /* strided copies: the stride a constant */
            im2col_copy_stride2_16(o + (size_t)lo * es, row + (size_t)(base + 2 * lo) * es, hi - lo);
        else if (s2 != 1)
            for (int64_t q = lo; q < hi; q++)
                memcpy(o + (size_t)q * es, row + (size_t)(base + q * s2) * es, es);
        for (int64_t q = hi; q < r->len; q++)
            memset(o + (size_t)q * es, 0, es);
    }
}

/* The taps of kernel position (kd, kh, kw) over nruns runs (amp_im2col_tap:
 * the same elements im2col_row copies, offsets within a channel plane),
 * and one of zeros for the run of zeros after them. */
static void im2col_taps(const conv_geometry *g, int64_t kd, int64_t kh, int64_t kw, const run_origin *ro,
                        const int64_t *col, int64_t nruns, amp_im2col_tap *tap)
{
    const int64_t s2 = g->stride[2], in2 = g->in[2];
    const int64_t dd = kd * g->dilation[0], dh = kh * g->dilation[1], dw = kw * g->dilation[2];
    for (int64_t ri = 0; ri < nruns; ri++) {
        amp_im2col_tap *o = &tap[ri];
        const int64_t id = ro[ri].id + dd, ih = ro[ri].ih + dh, base = ro[ri].iw + dw, len = col[ri + 1] - col[ri];
        int64_t lo, hi;
        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
            o->off = o->lo = o->hi = 0;
            continue;
        }
        if (s2 == 1) {
            lo = base >= 0 ? 0 : -base;
            hi = in2 - base;
        } else {
            lo = base >= 0 ? 0 : cdiv(-base, s2);
            hi = base >= in2 ? 0 : cdiv(in2 - base, s2);
        }
        lo = min64(lo, len);
        hi = hi < lo ? lo : min64(hi, len);
        o->lo = lo;
        o->hi = hi;
        o->off = hi > lo ? (id * g->in[1] + ih) * in2 + base + lo * s2 : 0;
    }
    tap[nruns].off = tap[nruns].lo = tap[nruns].hi = 0;
}

/* The generic pack_b_im2col (a kernel without its own, packing by plain
 * copies: j->im2col_pack tells). */
static void pack_b_im2col_generic(const amp_gemm_kernel *k, int64_t stride, const int64_t *col, int64_t nruns,
                                  const amp_im2col_tap *const tap[2], const void *const plane[2], int64_t kcu,
                                  void *dst)
{
    if (k->kpair == 2)
        isa_pack_b_im2col_body(2, stride, col, nruns, tap, plane, kcu, dst, k->nr);
    else
        isa_pack_b_im2col_body(1, stride, col, nruns, tap, plane, kcu, dst, k->nr);
}

/* Every kernel position's taps of a task's runs, per slot (when they fit:
 * kernel_plane x (runs + 1) taps). */
#define TAPS_MAX 4096
static amp_im2col_tap tap_buf[AMP_MAX_THREADS][TAPS_MAX];

/* The padded copy of x's rows for runs whose first output row is oh0:
 * per channel of the group (cin of them, from ximg), rows input row oh0
 * stride - padding on, each pad_w elements from input column -padding,
 * zero outside the input; then the slack zeroed. */
void amp_conv_pad_copy(const conv_job *j, const char *ximg, int64_t cin, int64_t oh0, int64_t rows, char *pad)
{
    const conv_geometry *g = &j->g;
    const size_t es = j->es;
    const int64_t w = j->pad_w, left = min64(g->padding[2], w), right = min64(w, g->padding[2] + g->in[2]);
    const int64_t ih0 = oh0 * g->stride[1] - g->padding[1];
    if (j->k->pad_rows != NULL) {
        const char *x_end = j->x + (size_t)(j->d->batch * j->d->in_channels * g->in_plane) * es;
        j->k->pad_rows(pad, ximg, g->in_plane, cin, ih0, rows, g->in[1], g->in[2], g->padding[2], w, x_end);
        memset(pad + (size_t)(cin * rows * w) * es, 0, PAD_SLACK_ELEMS * es);
        return;
    }
    for (int64_t c = 0; c < cin; c++)
        for (int64_t r = 0; r < rows; r++) {
            char *o = pad + (size_t)((c * rows + r) * w) * es;
            const int64_t ih = ih0 + r;
            if (ih < 0 || ih >= g->in[1] || right <= left) {
                memset(o, 0, (size_t)w * es);
                continue;
            }
            memset(o, 0, (size_t)left * es);
            memcpy(o + (size_t)left * es, ximg + (size_t)((c * g->in[1] + ih) * g->in[2] + left - g->padding[2]) * es,
                   (size_t)(right - left) * es);
            memset(o + (size_t)right * es, 0, (size_t)(w - right) * es);
        }
    memset(pad + (size_t)(cin * rows * w) * es, 0, PAD_SLACK_ELEMS * es);
}

void amp_conv_pack_cols_init(const conv_job *j, const char *ximg, int64_t p0, int64_t nlen, int slot, pack_cols *pc)
{
    out_run runs[NB_MAX];
    const conv_geometry *g = &j->g;
    int64_t nruns;
    pc->taps = NULL;
    pc->pad = NULL;
    if (j->padded && j->span) {
        /* the columns cut into image segments, each one's rows copied
         * into its own block of pad (span_rows rows per channel), its
         * runs' offsets pointing into that block */
        const int64_t cin = j->d->in_channels / j->d->groups, rows = j->span_rows;
        const size_t block = (size_t)(cin * rows * j->pad_w);
        char *pad = (char *)amp_conv_pad_buf[slot];
        int64_t count = 0, seg = 0;
        for (int64_t q = p0; q < p0 + nlen; seg++) {
            const int64_t img = q / j->P, p = q % j->P, len = min64(j->P - p, p0 + nlen - q);
            const int64_t got = amp_conv_output_runs(g, p, len, runs + count), oh0 = runs[count].oh;
            for (int64_t ri = count; ri < count + got; ri++) {
                runs[ri].col += q - p0;
                pc->col[ri] = runs[ri].col;
                pc->pad_off[ri] = (int64_t)(seg * block) + (runs[ri].oh - oh0) * g->stride[1] * j->pad_w +
                                  runs[ri].ow0 * g->stride[2];
            }
            amp_conv_pad_copy(j, ximg + (size_t)(img * j->d->in_channels * g->in_plane) * j->es, cin, oh0, rows,
                     pad + seg * block * j->es);
            count += got;
            q += len;
        }
        pc->col[count] = nlen;
        pc->col[count + 1] = round_up(nlen, j->k->nr);
        pc->nruns = count + 1;
        pc->pad_rows = rows;
        pc->pad = pad;
        return;
    }
    nruns = amp_conv_output_runs(&j->g, p0, nlen, runs);
    for (int64_t ri = 0; ri < nruns; ri++) {
        pc->col[ri] = runs[ri].col;
        pc->ro[ri].id = runs[ri].od * g->stride[0] - g->padding[0];
        pc->ro[ri].ih = runs[ri].oh * g->stride[1] - g->padding[1];
        pc->ro[ri].iw = runs[ri].ow0 * g->stride[2] - g->padding[2];
    }
    pc->col[nruns] = nlen;
    pc->col[nruns + 1] = round_up(nlen, j->k->nr);
    pc->nruns = nruns + 1;
    pc->taps = NULL;
    pc->pad = NULL;
    if (j->padded) {
        const int64_t oh0 = runs[0].oh;
        char *pad = (char *)amp_conv_pad_buf[slot];
        pc->pad_rows = pad_rows_of(g, runs[nruns - 1].oh - oh0 + 1);
        for (int64_t ri = 0; ri < nruns; ri++)
            pc->pad_off[ri] = (runs[ri].oh - oh0) * g->stride[1] * j->pad_w + runs[ri].ow0 * g->stride[2];
        amp_conv_pad_copy(j, ximg, j->d->in_channels / j->d->groups, oh0, pc->pad_rows, pad);
        pc->pad = pad;
        return;
    }
    if (g->kernel_plane * (nruns + 1) <= TAPS_MAX) {
        pc->taps = tap_buf[slot];
        for (int64_t kp = 0; kp < g->kernel_plane; kp++)
            im2col_taps(g, kp / (g->kernel[1] * g->kernel[2]), kp / g->kernel[2] % g->kernel[1], kp % g->kernel[2],
                        pc->ro, pc->col, nruns, pc->taps + kp * (nruns + 1));
    }
}

/* k block kb of the columns pc of image ximg's group (x's first channel
 * of it) packed into B panels at pb, straight from x: per unit its rows'
 * taps and channel planes, to the kernel's pack_b_im2col. */
void amp_conv_pack_b_block(const conv_job *j, const char *ximg, int64_t kb, pack_cols *pc, uint32_t *pb)
{
    const amp_gemm_kernel *k = j->k;
    const conv_geometry *g = &j->g;
    const int kpair = k->kpair;
    const int64_t k0 = kb * j->kstep, kc = min64(j->kstep, j->K - k0), kcu = cdiv(kc, kpair);
    const int64_t nall = pc->nruns;
    /* row k0's (channel, kernel position), then counted on */
    int64_t c = k0 / g->kernel_plane, kp = k0 % g->kernel_plane;
    if (pc->pad != NULL) {
        /* from the padded copy: each half's rows at its channel and
         * kernel position (kernel[0] is 1 here) */
        for (int64_t u = 0; u < kcu; u++) {
            const void *src[2] = { NULL, NULL };
            for (int h = 0; h < kpair && u * kpair + h < kc; h++) {
                const int64_t kh = kp / g->kernel[2], kw = kp % g->kernel[2];
                src[h] = pc->pad + (size_t)((c * pc->pad_rows + kh * g->dilation[1]) * j->pad_w +
                                            kw * g->dilation[2]) * j->es;
                if (++kp == g->kernel_plane) {
                    kp = 0;
                    c++;
                }
            }
            k->pack_b_rows(g->stride[2], pc->col, pc->pad_off, nall - 1, src, kcu, pb + u * k->nr);
        }
        return;
    }
    for (int64_t u = 0; u < kcu; u++) {
        const amp_im2col_tap *tap[2] = { NULL, NULL };
        const void *plane[2] = { NULL, NULL };
        for (int h = 0; h < kpair && u * kpair + h < kc; h++) { /* (an odd k's last unit: a zero high half) */
            plane[h] = ximg + (size_t)(c * g->in_plane) * j->es;
            if (pc->taps != NULL) {
                tap[h] = pc->taps + kp * nall;
            } else {
                im2col_taps(g, kp / (g->kernel[1] * g->kernel[2]), kp / g->kernel[2] % g->kernel[1], kp % g->kernel[2],
                            pc->ro, pc->col, nall - 1, pc->scratch[h]);
                tap[h] = pc->scratch[h];
            }
            if (++kp == g->kernel_plane) {
                kp = 0;
                c++;
            }
        }
        if (k->pack_b_im2col != NULL)
            k->pack_b_im2col(j->t, g->stride[2], pc->col, nall, tap, plane, kcu, pb + u * k->nr);
        else
            pack_b_im2col_generic(k, g->stride[2], pc->col, nall, tap, plane, kcu, pb + u * k->nr);
    }
}

/* The first of (image n, group grp, column chunk nc)'s units in fullpack. */
uint32_t *amp_conv_fullpack_chunk(const conv_job *j, int64_t n, int64_t grp, int64_t nc)
{
    return j->fullpack + (size_t)(((n * j->d->groups + grp) * j->n_chunks + nc) * cdiv(j->K, j->k->kpair) * j->nb);
}

/* Every k block of task = (image, group, column chunk)'s columns into
 * fullpack. */
void amp_conv_fullpack_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const int64_t n = task / (j->d->groups * j->n_chunks), grp = task / j->n_chunks % j->d->groups;
    const int64_t nc = task % j->n_chunks, p0 = nc * j->nb, nlen = min64(j->nb, j->cols - p0);
    const char *ximg = j->x + (size_t)((n * j->d->in_channels + grp * (j->d->in_channels / j->d->groups)) *
                                       j->g.in_plane) * j->es;
    uint32_t *chunk = amp_conv_fullpack_chunk(j, n, grp, nc);
    pack_cols pc;
    if (nlen <= 0)
        return;
    amp_conv_pack_cols_init(j, ximg, p0, nlen, slot, &pc);
    for (int64_t kb = 0; kb < j->nkb; kb++)
        amp_conv_pack_b_block(j, ximg, kb, &pc, chunk + kb * j->k->kcu * round_up(nlen, j->k->nr));
}

void amp_conv_im2col_row16(const conv_geometry *g, const char *xc, int64_t kd, int64_t kh, int64_t kw,
                         const out_run *runs, int64_t nruns, char *dst)
{
    im2col_row(2, g, xc, kd, kh, kw, runs, nruns, dst);
}

void amp_conv_im2col_row32(const conv_geometry *g, const char *xc, int64_t kd, int64_t kh, int64_t kw,
                         const out_run *runs, int64_t nruns, char *dst)
{
    im2col_row(4, g, xc, kd, kh, kw, runs, nruns, dst);
}

/* The im2col matrix of (image, group) task = n groups + g into fullcol. */
void amp_conv_full_im2col_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const size_t es = j->es;
    const int64_t n = task / j->d->groups, grp = task % j->d->groups, cin_g = j->d->in_channels / j->d->groups;
    const char *ximg = j->x + (size_t)((n * j->d->in_channels + grp * cin_g) * j->g.in_plane) * es;
    char *col = j->fullcol + (size_t)(task * j->K * j->P) * es;
    (void)slot;
    for (int64_t kg = 0; kg < j->K; kg++) {
        const int64_t c = kg / j->g.kernel_plane, kp = kg % j->g.kernel_plane;
        const int64_t kd = kp / (j->g.kernel[1] * j->g.kernel[2]), kh = kp / j->g.kernel[2] % j->g.kernel[1];
        const char *xc = ximg + (size_t)(c * j->g.in_plane) * es;
        if (es == 2)
            amp_conv_im2col_row16(&j->g, xc, kd, kh, kp % j->g.kernel[2], j->all_runs, j->n_all_runs,
                         col + (size_t)(kg * j->P) * es);
        else
            amp_conv_im2col_row32(&j->g, xc, kd, kh, kp % j->g.kernel[2], j->all_runs, j->n_all_runs,
                         col + (size_t)(kg * j->P) * es);
    }
}
