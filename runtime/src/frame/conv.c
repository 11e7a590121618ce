/*
 * conv.c - conv and conv_ex of the optimized kernel sets: a convolution as
 * GEMMs through the packed micro-kernels of amp_fast_gemm (contract in
 * amprt_internal.h).  Plain C: it only calls through the kernel descriptor.
 *
 * Per image n and group g the convolution is the product
 *
 *     Y[co, p] = sum over k of W[co, k] col[k, p]  (+ bias[co])
 *
 * with M = out_channels / groups rows (co), P = the output plane's positions
 * (p) as columns and K = in_channels / groups x kernel positions, k = c x
 * kernel_plane + kernel position: W is the weight tensor of the group as it
 * is stored (row-major [M][K]), and Y is the group's slice of the output as
 * it is stored ([M][P]).  col is the im2col matrix: col[k, p] is the input
 * element tap k of output p reads, or 0 in the padding.
 *
 *   1. The weights are packed into the micro-kernel's A panels for every
 *      group and k block (on the pool: tasks are (group, k block, panel)):
 *      per call into a scratch buffer (amp_fast_conv, and amp_fast_conv_ex
 *      without packed weights), or once, at model load, into the caller's
 *      buffer behind a header (amp_fast_conv_pack_weights), which
 *      amp_fast_conv_ex then reads instead of packing.
 *   2. The output is cut into tasks: (image, group, block of up to
 *      AMP_GEMM_MB_MAX rows, block of up to NB_MAX columns).  Per k block a
 *      task packs the im2col rows of its columns into B panels
 *      (conv_pack.c: straight from x, or from a zero-padded copy of the
 *      rows its columns read, whose columns may run across the images of
 *      a small plane; kernels whose packing converts write im2col rows
 *      into a per-slot buffer first) and runs the micro-kernel over its
 *      rows.  A 1 x 1, stride-1, unpadded convolution packs x itself.
 *      Where the kernel has micro_taps, stride-1 bf16 convolutions pack
 *      no B at all (taps mode, conv_taps.c).  When the rows are split
 *      into several blocks, every task's B blocks are packed once
 *      beforehand (or the whole im2col matrices built), so the row blocks
 *      do not each redo it.
 *   3. On the last k block each tile's epilogue (the bias, the one
 *      rounding to the storage dtype) runs at once, while the tile is in
 *      L1, and so do conv_ex's post-ops (conv_post.c) on the tile's row
 *      segments right after epi stores them.
 *
 * Arithmetic, compared with the reference (ref/ref_conv.inc): the same f32
 * products in the same k order, but summed per k block and the blocks'
 * partial sums added (as amp_fast_gemm does), and a tap in the padding
 * contributes w x 0 instead of being skipped (so a non-finite weight gives
 * NaN there, as an im2col convolution in PyTorch does).  Every output
 * element is summed by one task in a fixed order, so results do not depend
 * on the thread count.  The post-ops repeat the separate kernels'
 * operations, roundings included, so conv_ex equals conv followed by
 * batch_norm, add and relu bit for bit.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

float amp_conv_w_buf[AMP_MAX_THREADS][AMP_GEMM_MB_MAX * NB_MAX] ALIGN64;
uint32_t amp_conv_b_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * NB_MAX] ALIGN64;
unsigned char amp_conv_col_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * 4 * NB_MAX] ALIGN64;
unsigned char amp_conv_bias_buf[AMP_MAX_THREADS][NB_MAX * 4] ALIGN64;
unsigned char amp_conv_pad_buf[AMP_MAX_THREADS][PAD_BUF_BYTES + 2 * PAD_SLACK_ELEMS] ALIGN64;

/* One A micro-panel's weights rounded from f32 source weights to t, or
 * gathered from a transposed convolution's weights (flip), before packing
 * (up to mr rows of kc elements: kc x size <= KCU_MAX x 4 bytes, as for
 * amp_conv_col_buf). */
static unsigned char wconv_buf[AMP_MAX_THREADS][AMP_GEMM_MR_MAX * AMP_GEMM_KCU_MAX * 4] ALIGN64;

/* The shape of the problem and of its packed weights (M, K, P, the k
 * blocks, panels and units per group), from d alone. */
static void conv_plan(conv_job *j, const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d)
{
    memset(j, 0, sizeof *j);
    j->g = conv_geometry_of(d);
    j->M = d->out_channels / d->groups;
    j->K = d->in_channels / d->groups * j->g.kernel_plane;
    j->P = j->g.out_plane;
    k = amp_conv_rows_kernel(k, j->M); /* callers continue with j->k */
    j->k = k;
    j->t = t;
    j->wt = t;
    j->es = amp_dtype_size(t);
    j->d = d;
    j->kstep = (int64_t)k->kcu * k->kpair;
    j->nkb = cdiv(j->K, j->kstep);
    j->panels = cdiv(j->M, k->mr);
    j->group_units = j->K > 0 && j->M > 0 ? a_block_offset(j, j->nkb - 1) +
                                                j->panels * k->mr * cdiv(j->K - (j->nkb - 1) * j->kstep, k->kpair)
                                          : 0;
}

/* Columns kk .. kk + n - 1 of a flipped weight panel (rows x kc elements
 * at buf) from one input channel's taps of those rows (src: rows x kpn
 * elements): column kk + e of row i is tap kpn - 1 - kp - e of row i. */
static void flip_taps16(unsigned char *buf, int64_t kc, int64_t kk, const char *src, int64_t rows, int64_t kpn,
                        int64_t kp, int64_t n)
{
    for (int64_t i = 0; i < rows; i++) {
        const uint16_t *r = (const uint16_t *)(const void *)src + i * kpn + (kpn - 1 - kp);
        uint16_t *o = (uint16_t *)(void *)buf + i * kc + kk;
        for (int64_t e = 0; e < n; e++)
            o[e] = r[-e];
    }
}

/* flip_taps16 of a whole 3 x 3 channel, spelt out: the compiler does
 * not unroll the nine-element loop at -O2, and its loop overhead was
 * most of the copy's time. */
static void flip_taps16_3x3(unsigned char *buf, int64_t kc, int64_t kk, const char *src, int64_t rows)
{
    for (int64_t i = 0; i < rows; i++) {
        const uint16_t *r = (const uint16_t *)(const void *)src + i * 9;
        uint16_t *o = (uint16_t *)(void *)buf + i * kc + kk;
        const uint16_t r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3], r4 = r[4], r5 = r[5], r6 = r[6], r7 = r[7],
                       r8 = r[8];
        o[0] = r8;
        o[1] = r7;
        o[2] = r6;
        o[3] = r5;
        o[4] = r4;
        o[5] = r3;
        o[6] = r2;
        o[7] = r1;
        o[8] = r0;
    }
}

static void flip_taps32(unsigned char *buf, int64_t kc, int64_t kk, const char *src, int64_t rows, int64_t kpn,
                        int64_t kp, int64_t n)
{
    for (int64_t i = 0; i < rows; i++) {
        const uint32_t *r = (const uint32_t *)(const void *)src + i * kpn + (kpn - 1 - kp);
        uint32_t *o = (uint32_t *)(void *)buf + i * kc + kk;
        for (int64_t e = 0; e < n; e++)
            o[e] = r[-e];
    }
}

static void pack_weights_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const int64_t per_group = j->nkb * j->panels;
    const int64_t grp = task / per_group, kb = task % per_group / j->panels, ip = task % j->panels;
    const int64_t k0 = kb * j->kstep, kc = min64(j->kstep, j->K - k0), kcu = cdiv(kc, k->kpair);
    const int64_t m0 = ip * k->mr, rows = min64(k->mr, j->M - m0);
    const char *a = j->w + (size_t)((grp * j->M + m0) * j->K + k0) * amp_dtype_size(j->wt);
    int64_t rs = j->K;
    if (j->flip) {
        /* row m, column ci kernel_plane + kp: w[grp in_g + ci][m][kernel_plane - 1 - kp] */
        const int64_t kpn = j->g.kernel_plane, in_g = j->K / kpn;
        unsigned char *buf = wconv_buf[slot];
        /* input channel k0 / kpn from tap k0 % kpn, then whole channels;
         * each channel's taps of the panel's rows are one run of memory
         * (rows x kpn elements), read in order */
        const char *src = j->w + (size_t)(((grp * in_g + k0 / kpn) * j->M + m0) * kpn) * j->es;
        const size_t ci_step = (size_t)(j->M * kpn) * j->es;
        int64_t kk = 0, kp = k0 % kpn;
        while (kk < kc) {
            const int64_t n = min64(kpn - kp, kc - kk);
            /* the next channels' taps: short runs far apart, which the
             * hardware prefetchers miss (the weights come from L3 or
             * memory: the forward pass used them long ago); the address
             * as an integer, as it may lie past w (a prefetch never
             * faults) */
            if (kk + n < kc)
                for (size_t off = 0; off < (size_t)(rows * kpn) * j->es; off += 64)
                    __builtin_prefetch((const char *)((uintptr_t)src + 4 * ci_step + off), 0, 3);
            if (j->es == 2 && kp == 0 && n == kpn && kpn == 9)
                flip_taps16_3x3(buf, kc, kk, src, rows);
            else if (j->es == 2)
                flip_taps16(buf, kc, kk, src, rows, kpn, kp, n);
            else
                flip_taps32(buf, kc, kk, src, rows, kpn, kp, n);
            kk += n;
            kp = 0;
            src += ci_step;
        }
        a = (const char *)buf;
        rs = kc;
    } else if (j->wt != j->t) {
        /* f32 source weights: round the panel's rows to t, element for
         * element as amp_cast_f32_<t> does, then pack those. */
        unsigned char *buf = wconv_buf[slot];
        for (int64_t i = 0; i < rows; i++)
            for (int64_t kk = 0; kk < kc; kk++)
                amp_st(j->t, buf, i * kc + kk, amp_ld(j->wt, a, i * j->K + kk));
        a = (const char *)buf;
        rs = kc;
    }
    k->pack_a(j->t, a, rs, 1, (int)rows, kc, j->pa_out + grp * j->group_units + a_block_offset(j, kb) + ip * kcu * k->mr);
}

/* Pack j->w (dtype j->wt) into j->pa_out on up to `threads` threads. */
static void pack_weights(conv_job *j, int threads)
{
    if (j->group_units > 0)
        amp_parallel_run(threads, j->d->groups * j->nkb * j->panels, pack_weights_task, j);
}


/* Asks for rows x bytes at p (rows stride apart) to be brought into the
 * cache: the residual a strip's post-ops add, an earlier layer's output
 * long gone from L1/L2, fetched while the strip's micro-kernels run (its
 * short runs, 12 rows P apart, escape the hardware prefetchers: loading
 * it was half the post-ops' time). */
static void prefetch_rows(const char *p, int64_t rows, size_t stride, size_t bytes)
{
    for (int64_t r = 0; r < rows; r++)
        for (size_t off = 0; off < bytes; off += 64)
            __builtin_prefetch(p + (size_t)r * stride + off, 0, 3);
}

/* A strip's last k block when the columns run across images (j->span):
 * columns [q0, q0 + nlen) of batch x P.  A panel inside one image gets
 * its epilogue in the registers (micro_out, when the kernel has it and
 * there is no bias); one straddling two images goes through w, and its
 * epilogue runs per image segment; then the post-ops, per segment. */
static void span_strip_out(const conv_job *j, int64_t kcu, const uint32_t *pa, const uint32_t *pb, float *w,
                           int64_t ldw, int accumulate, int64_t co0, int rows, int64_t q0, int64_t nlen, int slot)
{
    const amp_gemm_kernel *k = j->k;
    const int64_t nr = k->nr, P = j->P, cout = j->d->out_channels;
    const size_t es = j->es;
    unsigned char *brep = amp_conv_bias_buf[slot];
    const int regs = k->micro_out != NULL && j->t == AMP_BF16 && j->bias == NULL;
    for (int64_t jr = 0; jr < nlen; jr += nr) {
        const int64_t q = q0 + jr, pcols = min64(nr, nlen - jr), img = q / P;
        const uint32_t *panel = pb + jr / nr * kcu * nr;
        if (regs && (q + pcols - 1) / P == img) {
            k->micro_out(kcu, pa, panel, w + jr, ldw, accumulate,
                         j->out + (size_t)((img * cout + co0) * P + q % P) * es, P, rows, (int)pcols);
            continue;
        }
        k->micro(kcu, pa, panel, w + jr, ldw, accumulate);
        for (int64_t c = 0; c < pcols;) {
            const int64_t im = (q + c) / P, p = (q + c) % P, len = min64(P - p, pcols - c);
            for (int r = 0; r < rows; r++) {
                const void *brow = NULL;
                if (j->bias != NULL) {
                    fill_elems(brep, j->bias + (size_t)(co0 + r) * es, es, len);
                    brow = brep;
                }
                k->epi(j->t, len, w + r * ldw + jr + c, 1.0f, 0.0f, NULL, 0, brow,
                       j->out + (size_t)((im * cout + co0 + r) * P + p) * es);
            }
            c += len;
        }
    }
    if (j->post != NULL)
        for (int64_t c = 0; c < nlen;) {
            const int64_t im = (q0 + c) / P, p = (q0 + c) % P, len = min64(P - p, nlen - c);
            amp_conv_run_post(j, co0, rows, (size_t)((im * cout + co0) * P + p), len);
            c += len;
        }
}

/* The columns cols positions take in micro-panels when cut into
 * equal blocks of up to NB_MAX (the last block's panels rounded up). */
static int64_t padded_columns(int64_t cols, int64_t nr)
{
    const int64_t nb = round_up(cdiv(cols, cdiv(cols, NB_MAX)), nr), n = cdiv(cols, nb);
    return (n - 1) * nb + round_up(cols - (n - 1) * nb, nr);
}

static void conv_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const amp_conv_desc *d = j->d;
    const int mr = k->mr, nr = k->nr;
    const size_t es = j->es;
    const int64_t per_image = d->groups * j->m_chunks * j->n_chunks;
    const int64_t n = task / per_image, grp = task % per_image / (j->m_chunks * j->n_chunks);
    /* row blocks innermost: the pool's home ranges then split an image by
     * its columns (positions), as the next layer reads them, and the
     * tasks sharing a column block (its B, packed once in fullpack) are
     * neighbours */
    const int64_t nc = task % (j->m_chunks * j->n_chunks) / j->m_chunks, mc = task % j->m_chunks;
    const int64_t m0 = mc * j->mb, p0 = nc * j->nb;
    const int64_t mlen = min64(j->mb, j->M - m0), nlen = min64(j->nb, j->cols - p0);
    const int64_t ldw = round_up(nlen, nr);
    const int64_t cin_g = d->in_channels / d->groups;
    const char *ximg = j->x + (size_t)((n * d->in_channels + grp * cin_g) * j->g.in_plane) * es;
    const uint32_t *pa_group = j->pa + grp * j->group_units;
    float *w = amp_conv_w_buf[slot];
    uint32_t *pb = amp_conv_b_buf[slot]; /* (or the block's in fullpack) */
    char *col = (char *)amp_conv_col_buf[slot];
    unsigned char *brep = amp_conv_bias_buf[slot];

    out_run runs[NB_MAX];
    pack_cols pc;
    int64_t nruns;
    /* bf16 without a bias: the last k block's epilogue in the registers */
    const int out_in_registers = k->micro_out != NULL && j->t == AMP_BF16 && j->bias == NULL;

    if (mlen <= 0 || nlen <= 0)
        return;
    nruns = j->direct || j->fullcol != NULL || j->fullpack != NULL || j->im2col_pack
                ? 0
                : amp_conv_output_runs(&j->g, p0, nlen, runs);
    if (j->im2col_pack && j->fullpack == NULL)
        amp_conv_pack_cols_init(j, ximg, p0, nlen, slot, &pc);
    for (int64_t kb = 0; kb < j->nkb; kb++) {
        const int64_t k0 = kb * j->kstep, kc = min64(j->kstep, j->K - k0), kcu = cdiv(kc, k->kpair);
        const int last = kb == j->nkb - 1;
        const uint32_t *pa_block = pa_group + a_block_offset(j, kb);
        const char *bsrc = NULL;
        int64_t brs = 0;
        if (j->fullpack != NULL) {
            pb = amp_conv_fullpack_chunk(j, n, grp, nc) + kb * k->kcu * ldw;
        } else if (j->fullcol != NULL) {
            bsrc = j->fullcol + (size_t)(((n * d->groups + grp) * j->K + k0) * j->P + p0) * es;
            brs = j->P;
        } else if (j->direct) {
            bsrc = ximg + (size_t)(k0 * j->g.in_plane + p0) * es;
            brs = j->g.in_plane;
        } else if (j->im2col_pack) {
            amp_conv_pack_b_block(j, ximg, kb, &pc, pb);
        } else {
            for (int64_t kk = 0; kk < kc; kk++) {
                const int64_t kg = k0 + kk, c = kg / j->g.kernel_plane, kp = kg % j->g.kernel_plane;
                const int64_t kd = kp / (j->g.kernel[1] * j->g.kernel[2]), kh = kp / j->g.kernel[2] % j->g.kernel[1];
                const int64_t kw = kp % j->g.kernel[2];
                const char *xc = ximg + (size_t)(c * j->g.in_plane) * es;
                if (es == 2)
                    amp_conv_im2col_row16(&j->g, xc, kd, kh, kw, runs, nruns, col + (size_t)(kk * nlen) * es);
                else
                    amp_conv_im2col_row32(&j->g, xc, kd, kh, kw, runs, nruns, col + (size_t)(kk * nlen) * es);
            }
            bsrc = col;
            brs = nlen;
        }
        if (bsrc != NULL)
            for (int64_t jr = 0; jr < nlen; jr += nr)
                k->pack_b(j->t, bsrc + (size_t)jr * es, brs, 1, (int)min64(nr, nlen - jr), kc,
                          pb + jr / nr * kcu * nr);
        for (int64_t ir = 0; ir < mlen; ir += mr) {
            const int64_t ip = (m0 + ir) / mr; /* m0 is a multiple of mr */
            if (last && j->post != NULL && j->post->residual != NULL && !j->span)
                prefetch_rows((const char *)j->post->residual +
                                  (size_t)((n * d->out_channels + grp * j->M + m0 + ir) * j->P + p0) * es,
                              min64(mr, mlen - ir), (size_t)j->P * es, (size_t)nlen * es);
            const int64_t rows = min64(mr, mlen - ir), cols = nlen;
            const int64_t co0 = grp * j->M + m0 + ir;
            const size_t yoff0 = (size_t)((n * d->out_channels + co0) * j->P + p0);
            if (last && j->span) {
                span_strip_out(j, kcu, pa_block + ip * kcu * mr, pb, w + ir * ldw, ldw, kb > 0, co0, (int)rows, p0,
                               nlen, slot);
                continue;
            }
            if (last && out_in_registers) {
                /* the epilogue in the micro-kernel's registers, then the
                 * post-ops on the strip's rows while they are in L1 */
                for (int64_t jr = 0; jr < nlen; jr += nr)
                    k->micro_out(kcu, pa_block + ip * kcu * mr, pb + jr / nr * kcu * nr, w + ir * ldw + jr, ldw,
                                 kb > 0, j->out + (yoff0 + (size_t)jr) * es, j->P, (int)rows, (int)min64(nr, nlen - jr));
                if (j->post != NULL)
                    amp_conv_run_post(j, co0, rows, yoff0, cols);
                continue;
            }
            for (int64_t jr = 0; jr < nlen; jr += nr)
                k->micro(kcu, pa_block + ip * kcu * mr, pb + jr / nr * kcu * nr, w + ir * ldw + jr, ldw, kb > 0);
            if (!last)
                continue;
            /* the strip's epilogue and post-ops, row by row over all the
             * task's columns, while the strip is in L1 */
            for (int64_t r = 0; r < rows; r++) {
                const int64_t co = co0 + r;
                const void *brow = NULL;
                if (j->bias != NULL) {
                    fill_elems(brep, j->bias + (size_t)co * es, es, cols);
                    brow = brep;
                }
                k->epi(j->t, cols, w + (ir + r) * ldw, 1.0f, 0.0f, NULL, 0, brow,
                       j->out + (yoff0 + (size_t)(r * j->P)) * es);
            }
            if (j->post != NULL)
                amp_conv_run_post(j, co0, rows, yoff0, cols);
        }
    }
}

/* Whether convolutions may take taps mode, and how many have taken it
 * (amp_fast_conv_allow_taps, amp_fast_conv_taps_taken). */
static int taps_allowed = 1;
static int64_t taps_taken;

void amp_fast_conv_allow_taps(int allow)
{
    taps_allowed = allow;
}

int64_t amp_fast_conv_taps_taken(void)
{
    return __atomic_load_n(&taps_taken, __ATOMIC_RELAXED);
}

/* The reference conv_ex (packed, when not NULL, in the reference's layout). */
static void reference_conv_ex(amp_dtype t, const amp_conv_desc *d, const void *x, const void *w, const void *packed,
                              const void *bias, const amp_conv_post *post, void *y)
{
    switch (t) {
    case AMP_F32: amp_ref_conv_ex_f32(d, x, w, packed, bias, post, y); break;
    case AMP_BF16: amp_ref_conv_ex_bf16(d, x, w, packed, bias, post, y); break;
    case AMP_F16: amp_ref_conv_ex_f16(d, x, w, packed, bias, post, y); break;
    default: amp_ref_conv_ex_f64(d, x, w, packed, bias, post, y); break;
    }
}

/* The packed weights' header: what they were packed for.  64 bytes, so the
 * panels after it keep the buffer's 64-byte alignment. */
#define PACKED_MAGIC 0x31766e6f63706d61ull /* "ampconv1" */
typedef union {
    struct {
        uint64_t magic;
        const amp_gemm_kernel *k;
        int64_t t, groups, M, K, group_units;
    } h;
    unsigned char bytes[64];
} packed_header;
typedef char packed_header_is_64_bytes[sizeof(packed_header) == 64 ? 1 : -1];

size_t amp_fast_conv_packed_bytes(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d)
{
    conv_job j;
    if (!fast_dtype(t))
        return amp_ref_conv_packed_bytes_f64(d); /* only f64 is not fast */
    if (amp_conv_depthwise_applies(k, t, d))
        return amp_conv_depthwise_packed_bytes(d);
    conv_plan(&j, k, t, d);
    return sizeof(packed_header) + (size_t)(d->groups * j.group_units) * sizeof(uint32_t);
}

void amp_fast_conv_pack_weights(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, amp_dtype src,
                                const void *w, void *packed)
{
    conv_job j;
    packed_header hd;
    int threads = amp_get_threads();
    if (!fast_dtype(t)) {
        amp_ref_conv_pack_weights_f64(d, src, w, packed);
        return;
    }
    if (amp_conv_depthwise_applies(k, t, d)) {
        amp_conv_depthwise_pack(k, t, d, src, w, packed);
        return;
    }
    conv_plan(&j, k, t, d);
    k = j.k;
    memset(&hd, 0, sizeof hd);
    hd.h.magic = PACKED_MAGIC;
    hd.h.k = k;
    hd.h.t = t;
    hd.h.groups = d->groups;
    hd.h.M = j.M;
    hd.h.K = j.K;
    hd.h.group_units = j.group_units;
    memcpy(packed, &hd, sizeof hd);
    j.w = w;
    j.wt = src;
    j.pa_out = (uint32_t *)((char *)packed + sizeof hd);
    if ((double)d->groups * (double)j.M * (double)j.K < PARALLEL_MIN_FLOPS / 16)
        threads = 1;
    pack_weights(&j, threads);
}

/* The post-ops of j (post not NULL): the function running them on a
 * tile's rows, and each output channel's parameters, worked out once
 * (returned, to be freed; NULL without memory: each tile then computes
 * its rows').  conv_depthwise.c's too. */
amp_conv_post_row *amp_conv_setup_post(conv_job *j, const amp_conv_post *post)
{
    const amp_gemm_kernel *k = j->k;
    amp_conv_post_row *rows_own;
    j->post = post;
    j->post_fn = k->post != NULL ? k->post : amp_conv_post_generic;
    j->bn_first = post->bn_mean != NULL && k->post != NULL && !fast_dtype(post->bn_dtype);
    if (post->raw != NULL && !j->bn_first)
        j->out = post->raw;
    /* without memory, each tile computes its rows' parameters */
    rows_own = amp_scratch_alloc((size_t)j->d->out_channels * sizeof *rows_own);
    if (rows_own != NULL)
        for (int64_t co = 0; co < j->d->out_channels; co++)
            amp_conv_post_row_of(post, j->t, j->bn_first, co, &rows_own[co]);
    j->post_rows = rows_own;
    return rows_own;
}

/* Whether k packs t's B units by widening them from padded rows of the
 * input (pack_b_rows of a kpair-1 kernel, bf16 storage): the im2col-pack
 * path then packs from the padded copy in one pass; where the copy does
 * not fit, a kernel without its own pack_b_im2col takes the im2col rows
 * (the plain-copy packing cannot widen). */
static int widening_rows(const amp_gemm_kernel *k, amp_dtype t)
{
    return k->kpair == 1 && t == AMP_BF16 && k->pack_b_rows != NULL;
}

/* How the tasks get their B panels, from the shape alone: whether they
 * pack from a padded copy of x (pack_b_rows), whether their columns run
 * across images (span) or take taps mode (allocating j->taps_off).
 * Returns the most columns a taps-mode task can have (0 outside it). */
static int64_t conv_choose_columns(conv_job *j, int *pad_able)
{
    const amp_gemm_kernel *k = j->k;
    const amp_conv_desc *d = j->d;
    int64_t taps_nb_max = 0;
    /* The padded packing (pack_b_rows) where the kernel has it: 2-d and
     * 1-d convolutions at its horizontal strides, when a task's rows fit
     * amp_conv_pad_buf (checked in conv_cut_tasks, once the column blocks
     * are known). */
    *pad_able = j->im2col_pack && k->pack_b_rows != NULL && j->es == 2 && (k->kpair == 2 || j->t == AMP_BF16) &&
                j->g.in[0] == 1 && j->g.out[0] == 1 &&
                j->g.kernel[0] == 1 && (j->g.stride[2] == 1 || j->g.stride[2] == 2);
    const int64_t cin_g = d->in_channels / d->groups;
    j->pad_w = (j->g.out[2] - 1) * j->g.stride[2] + (j->g.kernel[2] - 1) * j->g.dilation[2] + 1;
    j->cols = j->P;
    j->images = d->batch;
    /* Columns across images when a small plane leaves its last panel
     * mostly empty (resnet18's 7 x 7: 49 of 64 columns busy; 14 x 14: 196
     * of 256) and the images' segments of a block fit amp_conv_pad_buf. */
    if (*pad_able && d->batch > 1) {
        const int64_t per_img = padded_columns(j->P, k->nr) - j->P;
        const int64_t q = d->batch * j->P, across = padded_columns(q, k->nr) - q;
        const int64_t segs = min64(d->batch, (NB_MAX - 1) / j->P + 2);
        const int64_t rows = pad_rows_of(&j->g, min64(j->g.out[1], (NB_MAX - 1) / j->g.out[2] + 2));
        if (20 * per_img > j->P && 2 * across * j->P < per_img * q &&
            (double)segs * (double)cin_g * (double)rows * (double)j->pad_w * 2.0 <= (double)PAD_BUF_BYTES) {
            j->span = 1;
            j->span_rows = rows;
            j->cols = q;
            j->images = 1;
        }
    }
    /* Taps mode (conv_job.taps) where the kernel has micro_taps, for the
     * planes the columns do not run across images in (span pays more
     * there: resnet18's 14 x 14 and 7 x 7, which would compute and drop
     * a column in 15 and 8), when the copy's slack covers a tile's
     * overrun (amp_conv_taps_task) and amp_conv_pad_buf at least a few
     * tiles' rows. */
    if (taps_allowed && *pad_able && !j->span && k->micro_taps != NULL && j->t == AMP_BF16 &&
        j->g.stride[1] == 1 && j->g.stride[2] == 1 && j->K % k->kpair == 0 &&
        (j->g.kernel[2] - 1) * j->g.dilation[2] + 32 <= PAD_SLACK_ELEMS && j->g.padding[2] + 32 <= PAD_SLACK_ELEMS) {
        /* rows of in_w + padding: a row's right padding is the next
         * row's left (and the slack's, after the last), so at 3 x 3 one
         * column per row is computed and dropped */
        const int64_t pw = j->g.in[2] + j->g.padding[2] > j->g.out[2] ? j->g.in[2] + j->g.padding[2] : j->g.out[2];
        /* the output rows a task's copy can hold, so the columns it can
         * have: nb columns reach at most (nb + pw - 2) / pw + 1 rows */
        const int64_t rows_fit = (int64_t)(PAD_BUF_BYTES / ((size_t)cin_g * (size_t)pw * 2)) -
                                 (j->g.kernel[1] - 1) * j->g.dilation[1];
        if (rows_fit >= 2) {
            taps_nb_max = min64(TAPS_NB_MAX, (rows_fit - 1) * pw + 1) / k->nr * k->nr;
            if (taps_nb_max >= 4 * k->nr)
                j->taps_off = amp_scratch_alloc((size_t)j->K * sizeof *j->taps_off);
        }
        if (j->taps_off != NULL) {
            j->taps = 1;
            j->pad_w = pw;
            j->cols = (j->g.out[1] - 1) * pw + j->g.out[2];
        }
    }
    return taps_nb_max;
}

/* The tasks: j's rows and columns cut into equal-sized chunks (rows in
 * multiples of mr, columns of nr; in taps mode as many columns as
 * amp_conv_w_buf holds for the rows, up to taps_nb_max), enough of them
 * for every thread; and whether the tasks pack from a padded copy.
 * Returns the number of tasks. */
static int64_t conv_cut_tasks(conv_job *j, int threads, int64_t taps_nb_max, int pad_able)
{
    const amp_gemm_kernel *k = j->k;
    const amp_conv_desc *d = j->d;
    const int64_t mb_max = AMP_GEMM_MB_MAX / k->mr * k->mr;
    int64_t nb_max;
    j->m_chunks = cdiv(j->M, mb_max);
    j->mb = round_up(cdiv(j->M, j->m_chunks), k->mr);
    nb_max = j->taps ? min64(taps_nb_max, AMP_GEMM_MB_MAX * NB_MAX / j->mb / k->nr * k->nr) : NB_MAX;
    j->n_chunks = cdiv(j->cols, nb_max);
    j->nb = round_up(cdiv(j->cols, j->n_chunks), k->nr);
    /* Enough tasks for every thread, splitting the larger side. */
    while (threads > 1 && j->images * d->groups * j->m_chunks * j->n_chunks < 4 * threads) {
        if (j->nb > k->nr && (j->nb >= j->mb || j->mb <= k->mr)) {
            j->n_chunks *= 2;
            j->nb = round_up(cdiv(j->cols, j->n_chunks), k->nr);
            j->n_chunks = cdiv(j->cols, j->nb);
        } else if (j->mb > k->mr) {
            j->m_chunks *= 2;
            j->mb = round_up(cdiv(j->M, j->m_chunks), k->mr);
            j->m_chunks = cdiv(j->M, j->mb);
        } else {
            break;
        }
    }
    if (j->span) {
        j->padded = 1; /* (its size checked in conv_choose_columns, for the widest block) */
    } else if (pad_able && !j->taps) {
        const int64_t out_rows = min64(j->g.out[1], (j->nb - 1) / j->g.out[2] + 2);
        j->padded = (double)(d->in_channels / d->groups) * (double)pad_rows_of(&j->g, out_rows) *
                        (double)j->pad_w * (double)j->es <=
                    (double)PAD_BUF_BYTES;
    }
    /* widening rows that do not fit their copy: the im2col rows instead */
    if (!j->padded && !j->taps && widening_rows(k, j->t) && k->pack_b_im2col == NULL)
        j->im2col_pack = 0;
    return j->images * d->groups * j->m_chunks * j->n_chunks;
}

/* Runs j's tasks: in taps mode after its table of offsets; with the row
 * blocks split, after packing every B block (or building every im2col
 * matrix) once, where memory allows. */
static void conv_run_tasks(conv_job *j, int threads, int64_t tasks)
{
    const amp_gemm_kernel *k = j->k;
    const amp_conv_desc *d = j->d;
    if (j->taps) {
        /* rows per channel: those of the output rows nb columns can
         * reach, and the kernel's reach below them */
        j->taps_rows =
            min64(j->g.out[1], (j->nb + j->pad_w - 2) / j->pad_w + 1) + (j->g.kernel[1] - 1) * j->g.dilation[1];
        for (int64_t kk = 0; kk < j->K; kk++) {
            const int64_t c = kk / j->g.kernel_plane, kp = kk % j->g.kernel_plane;
            j->taps_off[kk] = (int32_t)((c * j->taps_rows + kp / j->g.kernel[2] * j->g.dilation[1]) * j->pad_w +
                                        kp % j->g.kernel[2] * j->g.dilation[2]);
        }
        amp_parallel_run(threads, tasks, amp_conv_taps_task, j);
        __atomic_fetch_add(&taps_taken, 1, __ATOMIC_RELAXED);
    } else if (!j->direct && j->m_chunks > 1 && j->im2col_pack) {
        /* Row blocks split: build each im2col matrix once (if memory
         * allows; else every task builds its own blocks, as without a
         * split). */
        /* 64-byte aligned, as the micro-kernel reads B panels */
        char *raw = amp_scratch_alloc((size_t)(j->images * d->groups * j->n_chunks * cdiv(j->K, k->kpair) * j->nb) *
                                          sizeof *j->fullpack +
                                      64);
        if (raw != NULL) {
            j->fullpack = (uint32_t *)(void *)(raw + (64 - (uintptr_t)raw % 64) % 64);
            amp_parallel_run(threads, j->images * d->groups * j->n_chunks, amp_conv_fullpack_task, j);
        }
        amp_parallel_run(threads, tasks, conv_task, j);
        amp_scratch_free(raw);
    } else if (!j->direct && j->m_chunks > 1) {
        out_run *all_runs = amp_scratch_alloc((size_t)j->P * sizeof *all_runs);
        j->fullcol =
            all_runs != NULL ? amp_scratch_alloc((size_t)(d->batch * d->groups * j->K * j->P) * j->es) : NULL;
        if (j->fullcol != NULL) {
            j->all_runs = all_runs;
            j->n_all_runs = amp_conv_output_runs(&j->g, 0, j->P, all_runs);
            amp_parallel_run(threads, d->batch * d->groups, amp_conv_full_im2col_task, j);
        }
        amp_parallel_run(threads, tasks, conv_task, j);
        amp_scratch_free(j->fullcol);
        amp_scratch_free(all_runs);
    } else {
        amp_parallel_run(threads, tasks, conv_task, j);
    }
}

/* amp_fast_conv_ex, or with flip (transpose_by_conv; packed and post
 * NULL, t a fast dtype, K > 0) w read as conv_job.flip says; returns 0,
 * having done nothing, where flipped weights find no memory to pack into. */
int amp_conv_run(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                 int flip, const void *packed, const void *bias, const amp_conv_post *post, void *y)
{
    conv_job j;
    int threads, pad_able;
    int64_t taps_nb_max;
    uint32_t *pa_own = NULL;
    amp_conv_post_row *rows_own = NULL;

    if (!fast_dtype(t)) { /* f64: packed is the reference's layout */
        reference_conv_ex(t, d, x, w, packed, bias, post, y);
        return 1;
    }
    if (amp_conv_depthwise_applies(k, t, d) && amp_conv_depthwise_run(k, t, d, x, w, flip, packed, bias, post, y))
        return 1;
    conv_plan(&j, k, t, d);
    k = j.k;
    j.flip = flip;
    if (packed != NULL) {
        const packed_header *hd = packed;
        (void)hd;
        assert(hd->h.magic == PACKED_MAGIC && "conv_ex: packed is not from conv_pack_weights");
        assert(hd->h.k == k && hd->h.t == t && "conv_ex: weights packed under another kernel set or dtype");
        assert(hd->h.groups == d->groups && hd->h.M == j.M && hd->h.K == j.K && hd->h.group_units == j.group_units &&
               "conv_ex: weights packed for another shape");
    }
    if (amp_conv_post_empty(post))
        post = NULL;
    if (d->batch <= 0 || j.M <= 0 || j.P <= 0)
        return 1;
    /* An empty sum (no input channels or taps) has nothing to multiply:
     * the reference writes the bias alone (reading no weights). */
    if (j.K == 0) {
        reference_conv_ex(t, d, x, packed != NULL ? NULL : w, NULL, bias, post, y);
        return 1;
    }
    j.x = x;
    j.bias = bias;
    j.y = y;
    j.out = y;
    j.direct = 1;
    for (int i = 0; i < 3; i++)
        if (j.g.kernel[i] != 1 || j.g.stride[i] != 1 || j.g.padding[i] != 0 || j.g.in[i] != j.g.out[i])
            j.direct = 0;
    /* Winograd for the 3 x 3 stride-1 shapes it pays on (conv_winograd.c),
     * from the packed weights or w alike */
    if (packed != NULL)
        j.pa = (const uint32_t *)((const char *)packed + sizeof(packed_header));
    if (amp_conv_winograd_applies(k, t, d) && amp_conv_winograd_run(&j, w, flip, packed, post))
        return 1;
    j.im2col_pack = !j.direct && (k->pack_b_im2col != NULL || (k->kpair == 2 && t == AMP_BF16) ||
                                  (k->kpair == 1 && t == AMP_F32) || widening_rows(k, t));

    threads = amp_get_threads();
    if (2.0 * (double)d->batch * (double)d->groups * (double)j.M * (double)j.K * (double)j.P < PARALLEL_MIN_FLOPS)
        threads = 1;
    if (packed != NULL) {
        j.pa = (const uint32_t *)((const char *)packed + sizeof(packed_header));
    } else {
        pa_own = amp_scratch_alloc((size_t)(d->groups * j.group_units) * sizeof(uint32_t));
        if (pa_own == NULL) { /* no memory for the packed weights: the reference needs none */
            if (flip)
                return 0;
            reference_conv_ex(t, d, x, w, NULL, bias, post, y);
            return 1;
        }
        j.w = w;
        j.pa_out = pa_own;
        pack_weights(&j, threads);
        j.pa = pa_own;
    }
    if (post != NULL)
        rows_own = amp_conv_setup_post(&j, post);
    taps_nb_max = conv_choose_columns(&j, &pad_able);
    conv_run_tasks(&j, threads, conv_cut_tasks(&j, threads, taps_nb_max, pad_able));
    amp_scratch_free(j.taps_off);
    amp_scratch_free(rows_own);
    amp_scratch_free(pa_own);
    return 1;
}

void amp_fast_conv_ex(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                      const void *packed, const void *bias, const amp_conv_post *post, void *y)
{
    (void)amp_conv_run(k, t, d, x, w, 0, packed, bias, post, y);
}

void amp_fast_conv(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                   const void *bias, void *y)
{
    amp_fast_conv_ex(k, t, d, x, w, NULL, bias, NULL, y);
}
