/*
 * conv_transpose_phases.c - conv_transpose of stride > 1 (dilation 1) as
 * one convolution per output phase, on planes of at least PHASE_MIN_PLANE
 * outputs per phase (below that conv_transpose.c's col2im path is kept).
 *
 * With dilation 1, the outputs o = s q + r of one residue r (per spatial
 * dim; a phase is one residue per dim) read only the taps k = k0 + s m,
 * k0 = (r + padding) mod s, m < L = ceil((kernel - k0) / s), at inputs
 * i = q + c - m, c = (r + padding - k0) / s: a stride-1 convolution of x
 * with the sub-kernel of those taps reversed, padding' = L - 1 - c.  So
 * each phase is one amp_fast_conv into a temporary output of its own,
 * padded symmetrically by P = max(0, padding', the right edge's need) and
 * read from offset e = P - padding' (a few edge outputs computed and
 * dropped).  The phases' sub-kernels are all gathered in one pass over w
 * (the phases partition the taps, so together they are w's size), and
 * one pass over y interleaves every phase's outputs into it, each row of
 * y written whole while it is in L1 (a pass per phase made y's lines
 * travel once per phase).  A phase with no taps (L 0: kernel < stride)
 * gets the bias alone, as the reference's empty sum.  Each output is
 * still one sum rounded once; the order differs from the reference's, as
 * for stride 1 (tolerance, not bits). */
#include <string.h>

#include "conv.h"


#define FLIP_CHANNELS 16 /* output channels per task (phase_weights_task) */


typedef struct {
    int64_t s, r, k0, L, c, P, e, nq, outc;
} phase_dim;

/* Output positions per phase below which col2im is kept. */
#define PHASE_MIN_PLANE 40

typedef struct {
    phase_dim ph[3];
    int64_t taps;           /* sub-kernel taps (0: none, or no outputs) */
    int64_t cplane;         /* its conv output's plane */
    const int64_t *tap_pos; /* [taps]: the kernel position (in w's plane) of sub-kernel tap j */
    char *wf;               /* the sub-kernel [Cout][in_g][taps] */
    char *tmp;              /* the conv output [N, Cout, cplane] */
} phase;

typedef struct {
    size_t es;
    const conv_geometry *g;
    const phase *phases;
    int64_t nphases, in_g, out_g, groups, out_channels;
    const char *w;
    const char *bias; /* NULL: none */
    amp_dtype t;
    char *y;
} phase_job;

/* Every phase's sub-kernel for output channels [task FLIP_CHANNELS, +
 * FLIP_CHANNELS): wf[co, ci', j] = w[g in_g + ci', co', k(j)], k_i(j_i) =
 * k0_i + s_i (L_i - 1 - j_i).  Per phase, channels ci' outermost: the
 * taps read are one run of memory per ci' (the chunk's channels side by
 * side), which the first phase brings into the cache for the others. */
static void phase_weights_task(void *ctx, int64_t task, int slot)
{
    const phase_job *f = ctx;
    const int64_t kplane = f->g->kernel_plane;
    const int64_t co0 = task * FLIP_CHANNELS, co_end = min64(co0 + FLIP_CHANNELS, f->groups * f->out_g);
    (void)slot;
    for (int64_t co = co0; co < co_end; co++) {
        const int64_t grp = co / f->out_g, cop = co % f->out_g;
        if (co != co0 && cop != 0)
            continue; /* each group's run of the chunk's channels is done at its first */
        const int64_t run = min64(co_end, (grp + 1) * f->out_g) - co;
        for (int64_t p = 0; p < f->nphases; p++) {
            const phase *ph = &f->phases[p];
            const int64_t taps = ph->taps;
            if (taps == 0)
                continue;
            for (int64_t ci = 0; ci < f->in_g; ci++) {
                const size_t src = (size_t)(((grp * f->in_g + ci) * f->out_g + cop) * kplane);
                const size_t dst = (size_t)((co * f->in_g + ci) * taps), dst_step = (size_t)(f->in_g * taps);
                if (f->es == 2) {
                    const uint16_t *sp = (const uint16_t *)(const void *)f->w + src;
                    uint16_t *dp = (uint16_t *)(void *)ph->wf + dst;
                    for (int64_t c = 0; c < run; c++)
                        for (int64_t j = 0; j < taps; j++)
                            dp[(size_t)c * dst_step + (size_t)j] = sp[c * kplane + ph->tap_pos[j]];
                } else {
                    const uint32_t *sp = (const uint32_t *)(const void *)f->w + src;
                    uint32_t *dp = (uint32_t *)(void *)ph->wf + dst;
                    for (int64_t c = 0; c < run; c++)
                        for (int64_t j = 0; j < taps; j++)
                            dp[(size_t)c * dst_step + (size_t)j] = sp[c * kplane + ph->tap_pos[j]];
                }
            }
        }
    }
}

/* o[2 e] = lo[e] for e < nlo, o[2 e + 1] = hi[e] for e < nhi (nlo - nhi
 * is 0 or 1), of 2-byte elements.  The pairs go as 32-bit stores, eight
 * at a time (a loop the compiler turns into vector code at -O2), the last
 * eight overlapping the ones before them where the row has more; a row of
 * fewer than eight pairs (7 x 7 planes' phases) one pair at a time. */
static void interleave2_16(uint16_t *o, const uint16_t *lo, const uint16_t *hi, int64_t nlo, int64_t nhi)
{
    uint32_t pair[8];
    if (nhi >= 8) {
        for (int64_t e = 0;; e += 8) {
            if (e + 8 > nhi)
                e = nhi - 8;
            for (int i = 0; i < 8; i++)
                pair[i] = (uint32_t)lo[e + i] | (uint32_t)hi[e + i] << 16;
            memcpy(o + 2 * e, pair, sizeof pair);
            if (e + 8 == nhi)
                break;
        }
    } else {
        for (int64_t e = 0; e < nhi; e++) {
            pair[0] = (uint32_t)lo[e] | (uint32_t)hi[e] << 16;
            memcpy(o + 2 * e, pair, 4);
        }
    }
    if (nlo > nhi)
        o[2 * nhi] = lo[nhi];
}

/* Plane (n, co) = task of y from every phase's outputs (or the bias alone
 * where a phase has no taps), row by row. */
/* A row of fill elements, for the 2-byte interleave's phases with no taps. */
#define FILL_ROW_MAX 2048
static uint16_t fill_row[AMP_MAX_THREADS][FILL_ROW_MAX];

static void phase_scatter_task(void *ctx, int64_t task, int slot)
{
    const phase_job *f = ctx;
    const conv_geometry *g = f->g;
    const size_t es = f->es;
    const int64_t co = task % f->out_channels;
    const int64_t s0 = g->stride[0], s1 = g->stride[1], s2 = g->stride[2];
    const int pairs = es == 2 && s2 == 2 && (g->out[2] + 1) / 2 <= FILL_ROW_MAX;
    char *yp = f->y + (size_t)(task * g->out_plane) * es;
    uint32_t fill_bits = 0; /* the empty sum plus the bias, rounded to t: the element's bytes */
    {
        const float fill = f->bias != NULL ? 0.0f + amp_ld(f->t, f->bias, co) : 0.0f;
        unsigned char one[8]; /* amp_st's widest element */
        amp_st(f->t, one, 0, fill);
        if (es == 2) {
            uint16_t h;
            memcpy(&h, one, 2);
            fill_bits = h;
        } else {
            memcpy(&fill_bits, one, 4);
        }
    }
    if (pairs)
        for (int64_t e = 0; e < (g->out[2] + 1) / 2; e++)
            fill_row[slot][e] = (uint16_t)fill_bits;
    /* output row (od, oh) = (s0 qd + rd, s1 qh + rh), the quotients and
     * residues counted along instead of divided out per row */
    for (int64_t od = 0, qd = 0, rd = 0; od < g->out[0]; od++, rd = rd + 1 == s0 ? 0 : rd + 1, qd += rd == 0)
        for (int64_t oh = 0, qh = 0, rh = 0; oh < g->out[1]; oh++, rh = rh + 1 == s1 ? 0 : rh + 1, qh += rh == 0) {
            const int64_t row_phase = (rd * s1 + rh) * s2;
            char *o = yp + (size_t)((od * g->out[1] + oh) * g->out[2]) * es;
            const char *src[2] = { NULL, NULL };
            int64_t nq[2] = { 0, 0 };
            for (int64_t r2 = 0; r2 < s2; r2++) {
                const phase *ph = &f->phases[row_phase + r2];
                const phase_dim *p = ph->ph;
                const char *trow = NULL;
                if (ph->taps > 0)
                    trow = ph->tmp + (size_t)(task * ph->cplane +
                                              ((qd + p[0].e) * p[1].outc + qh + p[1].e) * p[2].outc + p[2].e) *
                                         es;
                if (pairs) {
                    src[r2] = trow != NULL ? trow : (const char *)fill_row[slot];
                    nq[r2] = p[2].nq;
                    continue;
                }
                for (int64_t e = 0; e < p[2].nq; e++) {
                    char *oe = o + (size_t)(s2 * e + r2) * es;
                    if (es == 2) {
                        const uint16_t v = trow != NULL ? ((const uint16_t *)(const void *)trow)[e] : (uint16_t)fill_bits;
                        memcpy(oe, &v, 2);
                    } else {
                        const uint32_t v = trow != NULL ? ((const uint32_t *)(const void *)trow)[e] : fill_bits;
                        memcpy(oe, &v, 4);
                    }
                }
            }
            if (pairs)
                interleave2_16((uint16_t *)(void *)o, (const uint16_t *)(const void *)src[0],
                               (const uint16_t *)(const void *)src[1], nq[0], nq[1]);
        }
}

/* Phase number `phase`'s per-dim geometry in ph[3] (the last dim's
 * residue varying fastest); *taps is its sub-kernel's size.  Returns 0
 * when the phase has no outputs. */
static int phase_dims(const conv_geometry *g, int64_t phase, phase_dim *ph, int64_t *taps)
{
    int empty = 0;
    *taps = 1;
    for (int i = 2; i >= 0; i--) {
        phase_dim *p = &ph[i];
        const int64_t K = g->kernel[i], pad = g->padding[i], I = g->in[i], O = g->out[i];
        int64_t padc;
        p->s = g->stride[i];
        p->r = phase % p->s;
        phase /= p->s;
        p->nq = p->r < O ? (O - p->r + p->s - 1) / p->s : 0;
        p->k0 = (p->r + pad) % p->s;
        p->L = p->k0 < K ? (K - 1 - p->k0) / p->s + 1 : 0;
        p->c = (p->r + pad - p->k0) / p->s;
        padc = p->L - 1 - p->c;
        p->P = 0;
        if (padc > p->P)
            p->P = padc;
        if (p->nq - 1 - padc - I + p->L > p->P)
            p->P = p->nq - 1 - padc - I + p->L;
        p->e = p->P - padc;
        p->outc = I + 2 * p->P - p->L + 1;
        empty |= p->nq == 0;
        *taps *= p->L;
    }
    return !empty;
}

/* y by phases; 0 (nothing done) when d is not for it (a dilation, no
 * stride above 1) or memory runs out. */
int amp_conv_transpose_by_phases(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                               const void *w, const void *bias, void *y)
{
    const conv_geometry g = conv_geometry_of(d);
    const int lead = 3 - d->nspatial;
    phase_job f;
    phase *phases;
    int64_t nphases = 1, strided = 0, wlen = 0, tlen = 0;
    char *wf, *tmp;
    int64_t *tap_pos;
    int threads = amp_get_threads();
    if (d->nspatial < 1 || d->nspatial > 3)
        return 0;
    for (int i = 0; i < 3; i++) {
        if (g.dilation[i] != 1 || g.stride[i] < 1 || g.padding[i] < 0)
            return 0;
        strided |= g.stride[i] > 1;
        nphases *= g.stride[i];
    }
    /* Tiny planes give each phase's GEMM too few columns to beat one
     * col2im GEMM over all taps.  Measured on resnet18's shapes, batch 8,
     * phases against col2im: 14 x 14 outputs (49 per phase) 1x1 0.53 /
     * 0.95 ms and 3x3 2.52 / 2.71 ms; 28 x 28 and up, phases by far. */
    if (!strided || g.out_plane / nphases < PHASE_MIN_PLANE)
        return 0;
    phases = amp_scratch_alloc((size_t)nphases * sizeof *phases);
    tap_pos = amp_scratch_alloc((size_t)g.kernel_plane * sizeof *tap_pos);
    if (phases == NULL || tap_pos == NULL) {
        amp_scratch_free(phases);
        amp_scratch_free(tap_pos);
        return 0;
    }
    for (int64_t p = 0; p < nphases; p++) { /* geometry, taps and the buffers' sizes */
        phase *ph = &phases[p];
        if (!phase_dims(&g, p, ph->ph, &ph->taps))
            ph->taps = 0;
        ph->cplane = ph->ph[0].outc * ph->ph[1].outc * ph->ph[2].outc;
        wlen += d->out_channels * (d->in_channels / d->groups) * ph->taps;
        if (ph->taps > 0)
            tlen += d->batch * d->out_channels * ph->cplane;
    }
    memset(&f, 0, sizeof f);
    f.es = amp_dtype_size(t);
    f.g = &g;
    f.phases = phases;
    f.nphases = nphases;
    f.groups = d->groups;
    f.in_g = d->in_channels / d->groups;
    f.out_g = d->out_channels / d->groups;
    f.w = w;
    f.t = t;
    f.y = y;
    f.bias = bias;
    f.out_channels = d->out_channels;
    wf = amp_scratch_alloc(wlen ? (size_t)wlen * f.es : 1);
    tmp = amp_scratch_alloc(tlen ? (size_t)tlen * f.es : 1);
    if (wf == NULL || tmp == NULL) {
        amp_scratch_free(wf);
        amp_scratch_free(tmp);
        amp_scratch_free(phases);
        amp_scratch_free(tap_pos);
        return 0;
    }
    {
        int64_t woff = 0, toff = 0, tapoff = 0;
        for (int64_t p = 0; p < nphases; p++) {
            phase *ph = &phases[p];
            const phase_dim *q = ph->ph;
            int64_t j = 0;
            ph->wf = wf + (size_t)woff * f.es;
            ph->tmp = tmp + (size_t)toff * f.es;
            ph->tap_pos = tap_pos + tapoff;
            if (ph->taps == 0)
                continue;
            /* tap j = (a, b, e): kernel position k_i = k0_i + s_i (L_i - 1 - j_i) */
            for (int64_t a = 0; a < q[0].L; a++)
                for (int64_t b = 0; b < q[1].L; b++)
                    for (int64_t e = 0; e < q[2].L; e++, j++)
                        tap_pos[tapoff + j] = ((q[0].k0 + q[0].s * (q[0].L - 1 - a)) * g.kernel[1] + q[1].k0 +
                                               q[1].s * (q[1].L - 1 - b)) *
                                                  g.kernel[2] +
                                              q[2].k0 + q[2].s * (q[2].L - 1 - e);
            woff += d->out_channels * f.in_g * ph->taps;
            toff += d->batch * d->out_channels * ph->cplane;
            tapoff += ph->taps;
        }
    }
    /* The gather and the scatter move the sub-kernels, the phases'
     * outputs and y: on one thread only when all of that is small (y
     * counted too: resnet18's 1 x 1 stride-2 input gradients, 460 KB of
     * sub-kernels and outputs but 800 KB of y, ran both on one thread) */
    if ((double)(tlen + wlen + d->batch * d->out_channels * g.out_plane) * (double)f.es < PARALLEL_MIN_FLOPS / 8)
        threads = 1;
    amp_parallel_run(threads, cdiv(d->out_channels, FLIP_CHANNELS), phase_weights_task, &f);
    for (int64_t p = 0; p < nphases; p++) {
        const phase *ph = &phases[p];
        amp_conv_desc c = *d;
        if (ph->taps == 0)
            continue;
        for (int i = 0; i < d->nspatial; i++) {
            const phase_dim *q = &ph->ph[lead + i];
            c.stride[i] = 1;
            c.kernel[i] = q->L;
            c.padding[i] = q->P;
            c.output_padding[i] = 0;
            c.out_size[i] = q->outc;
        }
        amp_fast_conv(k, t, &c, x, ph->wf, bias, ph->tmp);
    }
    amp_parallel_run(threads, d->batch * d->out_channels, phase_scatter_task, &f);
    amp_scratch_free(wf);
    amp_scratch_free(tmp);
    amp_scratch_free(phases);
    amp_scratch_free(tap_pos);
    return 1;
}
