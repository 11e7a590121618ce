/*
 * conv_taps.c - taps mode: the tasks of a stride-1 bf16 convolution
 * (2-d or 1-d, not across images) on a kernel with micro_taps, which pack
 * no B at all.
 *
 * Each task copies its input rows zero-padded once, as rows of in_w +
 * padding elements (a row's right padding is the next row's left), and its
 * columns are positions of that padded plane, q = oh pad_w + ow, so that a
 * tile's taps (32 columns on avx512bf16, 16 on avx2) are consecutive
 * elements of the copy at a fixed offset per k (conv_job.taps_off, built
 * once per call).  The micro-kernel reads each unit's two halves there and
 * interleaves them in registers (kpair 1: its one element, widened); the
 * columns ow >= out_w are computed and dropped, and the
 * epilogue stores each tile by output-row segments (micro_taps_out's
 * masked stores, or epi per segment).  Same units in the same order as
 * the packed path: bit for bit its results.
 */
#include <string.h>

#include "conv.h"


/* A taps-mode task's micro_taps_out segments, worked out once per task
 * (every strip of rows stores its tiles by the same ones): tile i's are
 * taps_seg[slot][taps_seg_first[slot][i]] up to tile i + 1's first.  A
 * tile has one per output row it reaches, so all of them are at most a
 * task's tiles plus its rows: fewer than 2 TAPS_NB_MAX + 2. */
static amp_tap_seg taps_seg[AMP_MAX_THREADS][2 * TAPS_NB_MAX + 2];
static int taps_seg_first[AMP_MAX_THREADS][TAPS_NB_MAX + 1];

/* The output positions of taps-mode columns [q, q + cols) (cols <= 32)
 * as micro_taps_out's segments, one per output row they reach: the
 * columns ow < out_w of row oh go to position oh out_w + ow, i.e. tile
 * column c to q + c - oh (pad_w - out_w). */
static int taps_segments(const conv_job *j, int64_t q, int64_t cols, amp_tap_seg *seg)
{
    const int64_t pw = j->pad_w, ow_n = j->g.out[2];
    int nseg = 0;
    for (int64_t oh = q / pw; oh * pw < q + cols; oh++) {
        const int64_t a = (oh * pw > q ? oh * pw : q) - q, b = min64(oh * pw + ow_n, q + cols) - q;
        if (a >= b)
            continue;
        seg[nseg].mask = (uint32_t)(((b == 32 ? 0 : (uint64_t)1 << b) - ((uint64_t)1 << a)) & 0xffffffffu);
        seg[nseg].at = q - oh * (pw - ow_n);
        nseg++;
    }
    return nseg;
}

/* The post-ops of a taps-mode strip whose tiles stored rows co0 .. co0 +
 * rows - 1 of columns [q0, q0 + nlen): the output positions those
 * columns reach, one run in the output plane. */
static void taps_post(const conv_job *j, int64_t n, int64_t co0, int64_t rows, int64_t q0, int64_t nlen)
{
    const int64_t pw = j->pad_w, ow_n = j->g.out[2], qe = q0 + nlen - 1;
    const int64_t first = q0 % pw < ow_n ? q0 : (q0 / pw + 1) * pw;
    const int64_t last = qe % pw < ow_n ? qe : qe / pw * pw + ow_n - 1;
    if (first > last)
        return;
    {
        const int64_t p0 = first / pw * ow_n + first % pw, p1 = last / pw * ow_n + last % pw;
        amp_conv_run_post(j, co0, rows, (size_t)((n * j->d->out_channels + co0) * j->P + p0), p1 - p0 + 1);
    }
}

/* The epilogue and post-ops of a taps-mode strip: rows co0 .. co0 + rows
 * - 1 of task columns [q0, q0 + nlen) (padded-plane positions of image n,
 * sums in w, ldw apart), each output row's segment stored where it goes
 * in the output plane; the dropped columns ow >= out_w are skipped. */
static void taps_strip_out(const conv_job *j, const float *w, int64_t ldw, int64_t n, int64_t co0, int64_t rows,
                           int64_t q0, int64_t nlen, int slot)
{
    const amp_gemm_kernel *k = j->k;
    const int64_t pw = j->pad_w, ow_n = j->g.out[2], P = j->P, cout = j->d->out_channels;
    const size_t es = j->es;
    unsigned char *brep = amp_conv_bias_buf[slot];
    for (int64_t oh = q0 / pw; oh * pw < q0 + nlen; oh++) {
        const int64_t qs = oh * pw > q0 ? oh * pw : q0, qe = min64(oh * pw + ow_n, q0 + nlen);
        for (int64_t q = qs; q < qe; q += NB_MAX) { /* (amp_conv_bias_buf holds NB_MAX elements) */
            const int64_t len = min64(NB_MAX, qe - q), p = oh * ow_n + (q - oh * pw);
            for (int64_t r = 0; r < rows; r++) {
                const void *brow = NULL;
                if (j->bias != NULL) {
                    fill_elems(brep, j->bias + (size_t)(co0 + r) * es, es, len);
                    brow = brep;
                }
                k->epi(j->t, len, w + r * ldw + (q - q0), 1.0f, 0.0f, NULL, 0, brow,
                       j->out + (size_t)((n * cout + co0 + r) * P + p) * es);
            }
        }
    }
    if (j->post != NULL)
        taps_post(j, n, co0, rows, q0, nlen);
}

/* conv_task in taps mode: the task's padded rows copied once, then per k
 * block and strip of rows the micro-kernel straight on them. */
void amp_conv_taps_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const amp_conv_desc *d = j->d;
    const int mr = k->mr, nr = k->nr;
    const int64_t per_image = d->groups * j->m_chunks * j->n_chunks;
    const int64_t n = task / per_image, grp = task % per_image / (j->m_chunks * j->n_chunks);
    const int64_t nc = task % (j->m_chunks * j->n_chunks) / j->m_chunks, mc = task % j->m_chunks;
    const int64_t m0 = mc * j->mb, q0 = nc * j->nb;
    const int64_t mlen = min64(j->mb, j->M - m0), nlen = min64(j->nb, j->cols - q0);
    const int64_t ldw = round_up(nlen, nr), cin_g = d->in_channels / d->groups, oh0 = q0 / j->pad_w;
    const char *ximg = j->x + (size_t)((n * d->in_channels + grp * cin_g) * j->g.in_plane) * j->es;
    const uint32_t *pa_group = j->pa + grp * j->group_units;
    char *pad = (char *)amp_conv_pad_buf[slot];
    /* column q0 in the copy, whose first row is output row oh0's first */
    const char *src0 = pad + (size_t)(q0 - oh0 * j->pad_w) * j->es;
    float *w = amp_conv_w_buf[slot];
    /* bf16 without a bias: the last k block's epilogue in the registers */
    const int out_in_registers = k->micro_taps_out != NULL && j->t == AMP_BF16 && j->bias == NULL;

    if (mlen <= 0 || nlen <= 0)
        return;
    amp_conv_pad_copy(j, ximg, cin_g, oh0, j->taps_rows, pad);
    if (out_in_registers) {
        int *first = taps_seg_first[slot], count = 0;
        for (int64_t jr = 0; jr < nlen; jr += nr) {
            first[jr / nr] = count;
            count += taps_segments(j, q0 + jr, min64(nr, nlen - jr), taps_seg[slot] + count);
        }
        first[cdiv(nlen, nr)] = count;
    }
    for (int64_t kb = 0; kb < j->nkb; kb++) {
        const int64_t k0 = kb * j->kstep, kcu = min64(j->kstep, j->K - k0) / k->kpair;
        const uint32_t *pa_block = pa_group + a_block_offset(j, kb);
        const int last = kb == j->nkb - 1;
        for (int64_t ir = 0; ir < mlen; ir += mr) {
            const int64_t ip = (m0 + ir) / mr, co0 = grp * j->M + m0 + ir, rows = min64(mr, mlen - ir);
            if (last && out_in_registers) {
                char *ystrip = j->out + (size_t)((n * d->out_channels + co0) * j->P) * j->es;
                for (int64_t jr = 0; jr < nlen; jr += nr) {
                    const int *first = taps_seg_first[slot] + jr / nr;
                    k->micro_taps_out(kcu, pa_block + ip * kcu * mr, src0 + (size_t)jr * j->es, j->taps_off + k0,
                                      w + ir * ldw + jr, ldw, kb > 0, ystrip, j->P, (int)rows,
                                      taps_seg[slot] + first[0], first[1] - first[0]);
                }
                if (j->post != NULL)
                    taps_post(j, n, co0, rows, q0, nlen);
                continue;
            }
            for (int64_t jr = 0; jr < nlen; jr += nr)
                k->micro_taps(kcu, pa_block + ip * kcu * mr, src0 + (size_t)jr * j->es, j->taps_off + k0,
                              w + ir * ldw + jr, ldw, kb > 0);
            if (last)
                taps_strip_out(j, w + ir * ldw, ldw, n, co0, rows, q0, nlen, slot);
        }
    }
}
