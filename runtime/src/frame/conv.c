/*
 * isa_conv.c - convolution of the optimized kernel sets as a GEMM through
 * the same packed micro-kernels as amp_fast_gemm (contract in
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
 *      per call into a malloc'ed buffer (amp_fast_conv, and amp_fast_conv_ex
 *      without packed weights), or once, at model load, into the caller's
 *      buffer behind a header (amp_fast_conv_pack_weights), which
 *      amp_fast_conv_ex then reads instead of packing.
 *   2. The output is cut into tasks: (image, group, block of up to
 *      AMP_GEMM_MB_MAX rows, block of up to NB_MAX columns).  Per k block a
 *      task packs the im2col rows of its columns into B panels and runs
 *      the micro-kernel over its rows.  The packing goes straight from x
 *      (the im2col-pack: the task's columns cut at output-row ends into
 *      runs, each kernel position's taps over them tabulated once per
 *      task (source offset and in-range span per run), then per unit of k
 *      its rows' taps and channel planes handed to the kernel's
 *      pack_b_im2col, or to isa_pack_b_im2col_body where the packing is a
 *      plain copy: bf16 pairs, f32 units of f32).  With a kernel's
 *      pack_b_rows (the bf16 one; 2-d and 1-d, horizontal stride 1 or
 *      2), the task first copies the input rows its columns read,
 *      zero-padded, into pad_buf, so the packing needs no bounds per tap
 *      (about a third of pack_b_im2col's time on resnet18's 3 x 3
 *      layers); where a small plane would leave its last panel mostly
 *      empty, the columns then run across the images (conv_job's span).
 *      With a kernel's micro_taps (bf16; stride 1, where the columns
 *      do not run across images), nothing is packed: taps mode
 *      (conv_job.taps, taps_task) copies the task's input rows padded
 *      and the micro-kernel reads each unit's halves from the copy at
 *      per-k offsets, interleaving them in registers.
 *      Kernels whose packing converts (bf16 and
 *      f16 on the f32 micro-kernel) write the im2col rows into a per-slot
 *      buffer first (so the copy stays in L2) and pack those.  A 1 x 1,
 *      stride-1, unpadded convolution packs x itself, with no im2col.
 *      When the rows are split into several blocks, as for the small
 *      planes of a network's last layers, every task's B blocks are packed
 *      once beforehand (or, without the im2col-pack, the whole im2col
 *      matrices built), so the row blocks do not each redo it.  On the
 *      last k block each tile's
 *      epilogue (the bias, the one rounding to the storage dtype) runs at
 *      once, while the tile is in L1, and so do conv_ex's post-ops
 *      (batch_norm, residual add, relu: the kernel's post, or
 *      post_generic) on the tile's row segments right after epi stores
 *      them (into conv_ex's raw output when it has one, read from there
 *      into y).
 *
 * Arithmetic, compared with the reference (ref_conv.inc): the same f32
 * products in the same k order, but summed per k block and the blocks'
 * partial sums added (as amp_fast_gemm does), and a tap in the padding
 * contributes w x 0 instead of being skipped (so a non-finite weight gives
 * NaN there, as an im2col convolution in PyTorch does).  Every output
 * element is summed by one task in a fixed order, so results do not depend
 * on the thread count.  The post-ops are elementwise and repeat the
 * separate kernels' operations, roundings included, so conv_ex equals
 * conv followed by batch_norm, add and relu bit for bit.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h> /* im2col_copy_stride2_16 */
#endif

#include "amprt_internal.h"
#include "kernel_set.h"
#include "ref/ref_window.h"

#define ALIGN64 __attribute__((aligned(64)))

/* Columns per task at most (a multiple of every kernel's nr): with
 * AMP_GEMM_KCU_MAX units of k, the im2col block, the packed B block and the
 * accumulator stay within L2. */
#define NB_MAX AMP_IM2COL_COLS_MAX

static float w_buf[AMP_MAX_THREADS][AMP_GEMM_MB_MAX * NB_MAX] ALIGN64;
static uint32_t b_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * NB_MAX] ALIGN64;
/* im2col rows of one k block: kc <= kcu x kpair rows of up to 4-byte
 * elements (f32 kc <= KCU_MAX, 4 bytes; bf16 pairs kc <= 2 KCU_MAX, 2 bytes). */
static unsigned char col_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * 4 * NB_MAX] ALIGN64;
/* One row's bias replicated across a strip (the epilogue adds bias[j]). */
static unsigned char bias_buf[AMP_MAX_THREADS][NB_MAX * 4] ALIGN64;
/* One A micro-panel's weights rounded from f32 source weights to t, or
 * gathered from a transposed convolution's weights (flip), before packing
 * (up to mr rows of kc elements: kc x size <= KCU_MAX x 4 bytes, as for
 * col_buf). */
static unsigned char wconv_buf[AMP_MAX_THREADS][AMP_GEMM_MR_MAX * AMP_GEMM_KCU_MAX * 4] ALIGN64;

/* The zero-padded input rows of a task (pack_b_rows), channels x rows x
 * pad_w elements of 2 bytes, and a slack the packing may read past them. */
#define PAD_BUF_BYTES ((size_t)512 * 1024)
#define PAD_SLACK_ELEMS 64
static unsigned char pad_buf[AMP_MAX_THREADS][PAD_BUF_BYTES + 2 * PAD_SLACK_ELEMS] ALIGN64;

/* Columns per task at most in taps mode (conv_job.taps). */
#define TAPS_NB_MAX 2048
/* A taps-mode task's micro_taps_out segments, worked out once per task
 * (every strip of rows stores its tiles by the same ones): tile i's are
 * taps_seg[slot][taps_seg_first[slot][i]] up to tile i + 1's first.  A
 * tile has one per output row it reaches, so all of them are at most a
 * task's tiles plus its rows: fewer than 2 TAPS_NB_MAX + 2. */
static amp_tap_seg taps_seg[AMP_MAX_THREADS][2 * TAPS_NB_MAX + 2];
static int taps_seg_first[AMP_MAX_THREADS][TAPS_NB_MAX + 1];

/* Below this many flops a single thread is faster than waking the pool. */
#define PARALLEL_MIN_FLOPS (4.0 * 1024 * 1024)

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* A run of a task's columns that lies in one output row: output positions
 * (od, oh, ow0 .. ow0 + len - 1), columns [col, col + len) of the task. */
typedef struct {
    int64_t od, oh, ow0, len, col;
} out_run;

typedef struct conv_job {
    const amp_gemm_kernel *k;
    amp_dtype t;
    size_t es;
    const amp_conv_desc *d;
    conv_geometry g;
    int direct; /* 1 x 1, stride 1, no padding: col is x itself */
    /* Else, whether the tasks pack their B panels straight from x (the
     * kernel's pack_b_im2col, or isa_pack_b_im2col_body where the packing
     * is a plain copy) rather than through im2col rows in col_buf. */
    int im2col_pack;
    /* With im2col_pack, whether each task first copies the input rows its
     * columns read, zero-padded, into pad_buf and packs from that copy
     * with the kernel's pack_b_rows (no bounds checks per tap); pad_w is
     * the copy's row length: the padded input columns the output's reach. */
    int padded;
    int64_t pad_w;
    /* With padded, whether the tasks' columns run across images: the
     * columns are then batch x P, all images' positions in order (so the
     * last panel of a small plane, resnet18's 7 x 7 and 14 x 14, is not
     * mostly empty), cols is that count (else P) and images 1 (else the
     * batch: the images the tasks are cut per); span_rows: the padded
     * rows every image segment of a task gets. */
    int span;
    int64_t cols, images, span_rows;
    /* When the rows are split over several tasks, the whole im2col matrix
     * of every (image, group), [K][P] each, built once beforehand (so the
     * row blocks of one column block do not each rebuild it); else NULL. */
    char *fullcol;
    /* With im2col_pack, instead: every task's B blocks packed once
     * beforehand (fullpack_task): (image, group, column chunk)'s cdiv(K,
     * kpair) x nb units apart, k block kb at kb x kcu x ldw units into
     * its chunk's; else NULL. */
    uint32_t *fullpack;
    const out_run *all_runs;
    int64_t n_all_runs;
    int64_t M, K, P, kstep, nkb, panels;
    int64_t group_units; /* units of packed A per group */
    const char *x, *w, *bias;
    amp_dtype wt; /* w's dtype (packing: t, or f32 rounded to t first) */
    char *y;
    /* where the tiles store the convolution's own result: y, or conv_ex's
     * raw output (post->raw), from which the post-ops then write y */
    char *out;
    const uint32_t *pa; /* the packed weights the tasks read */
    uint32_t *pa_out;   /* where pack_weights_task writes them */
    int64_t mb, nb, m_chunks, n_chunks;
    /* conv_ex's post-ops (NULL: none), the function running them on a
     * tile's rows, each output channel's parameters (NULL: each tile
     * computes its rows'), and whether the batch_norm step goes to the
     * reference kernel first (a vectorized post with parameters of a dtype
     * the set's batch_norm leaves to the reference). */
    const amp_conv_post *post;
    void (*post_fn)(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                    const void *src, void *y, int64_t ld);
    const amp_conv_post_row *post_rows;
    int bn_first;
    /* w holds conv_transpose weights [groups in_g][M][kernel_plane], packed
     * as this convolution's [groups M][in_g kernel_plane] with the taps
     * reversed (transpose_by_conv's flipped kernel, never stored) */
    int flip;
    /* Taps mode (the kernel's micro_taps; stride 1, 2-d or 1-d, not span):
     * no B packing at all.  The columns are then positions of the padded
     * plane, q = oh pad_w + ow for ow < pad_w (cols = (out_h - 1) pad_w +
     * out_w per image; ow >= out_w computed and dropped), so that 32
     * columns' taps are 32 consecutive elements of the task's padded copy
     * of x (taps_rows rows per channel): unit u's halves read it at
     * taps_off[2 u] and taps_off[2 u + 1] (k = channel x kernel plane +
     * (kh, kw): its channel's rows plus kh dilation pad_w + kw dilation)
     * from the tile's first column.  Same units, same order: bit for bit
     * the packed path. */
    int taps;
    int64_t taps_rows;
    int32_t *taps_off;
} conv_job;

/* Units before k block kb's panels in a group's packed A: every earlier
 * block is full (kcu units per row). */
static int64_t a_block_offset(const conv_job *j, int64_t kb)
{
    return kb * j->k->kcu * j->panels * j->k->mr;
}

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

/* The task's columns [p0, p0 + n) cut at output-row ends (at most n runs);
 * returns the number of runs.  Computed once per task, so the im2col rows
 * need no division per element or per run. */
static int64_t output_runs(const conv_geometry *g, int64_t p0, int64_t n, out_run *runs)
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

/* dst[q] = src[2 q] for q < n, of 2-byte elements (src[2 n - 2] is the
 * last one read).  With SSE2 (every x86-64), 8 at a time: the even
 * elements of 16 sign-extended in their 32-bit lanes and packed back,
 * which the signed saturation leaves exact (the resnet18 stem's weight
 * gradient copies 15 million of them per step). */
static AMP_ALWAYS_INLINE void im2col_copy_stride2_16(char *dst, const char *src, int64_t n)
{
    uint16_t *o = (uint16_t *)(void *)dst;
    const uint16_t *x = (const uint16_t *)(const void *)src;
    int64_t q = 0;
#ifdef __SSE2__
    for (; q + 9 <= n; q += 8) { /* reads x[2 q .. 2 q + 15], all < 2 n - 2 */
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(x + 2 * q));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(x + 2 * q + 8));
        a = _mm_srai_epi32(_mm_slli_epi32(a, 16), 16);
        b = _mm_srai_epi32(_mm_slli_epi32(b, 16), 16);
        _mm_storeu_si128((__m128i *)(void *)(o + q), _mm_packs_epi32(a, b));
    }
#endif
    for (; q < n; q++)
        o[q] = x[2 * q];
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

/* A task's runs as the im2col-pack reads them: per run the input
 * position of its first output at kernel position 0 (stride and padding
 * applied; the taps add their dilated offsets). */
typedef struct {
    int64_t id, ih, iw;
} run_origin;

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

/* The im2col-pack state of a task's columns [p0, p0 + nlen): its runs
 * (and a run of zeros up to ldw), their origins, and the taps of every
 * kernel position (in tap_buf; else NULL, and each unit computes its
 * rows' taps into scratch). */
typedef struct {
    int64_t nruns; /* runs, with the zero run (possibly empty) */
    int64_t col[NB_MAX + 2];
    run_origin ro[NB_MAX];
    amp_im2col_tap *taps;
    amp_im2col_tap scratch[2][NB_MAX + 1];
    /* j->padded: the padded copy of the rows the runs read (channel c's
     * row r at pad + (c rows + r) pad_w elements), and each run's first
     * element in a channel's rows at kernel position 0 */
    const char *pad;
    int64_t pad_rows;
    int64_t pad_off[NB_MAX];
} pack_cols;

/* Input rows (of a channel) that columns spanning out_rows output rows
 * read: the padded copy's rows. */
static int64_t pad_rows_of(const conv_geometry *g, int64_t out_rows)
{
    return (out_rows - 1) * g->stride[1] + (g->kernel[1] - 1) * g->dilation[1] + 1;
}

/* The padded copy of x's rows for runs whose first output row is oh0:
 * per channel of the group (cin of them, from ximg), rows input row oh0
 * stride - padding on, each pad_w elements from input column -padding,
 * zero outside the input; then the slack zeroed. */
static void pad_copy(const conv_job *j, const char *ximg, int64_t cin, int64_t oh0, int64_t rows, char *pad)
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

static void pack_cols_init(const conv_job *j, const char *ximg, int64_t p0, int64_t nlen, int slot, pack_cols *pc)
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
        char *pad = (char *)pad_buf[slot];
        int64_t count = 0, seg = 0;
        for (int64_t q = p0; q < p0 + nlen; seg++) {
            const int64_t img = q / j->P, p = q % j->P, len = min64(j->P - p, p0 + nlen - q);
            const int64_t got = output_runs(g, p, len, runs + count), oh0 = runs[count].oh;
            for (int64_t ri = count; ri < count + got; ri++) {
                runs[ri].col += q - p0;
                pc->col[ri] = runs[ri].col;
                pc->pad_off[ri] = (int64_t)(seg * block) + (runs[ri].oh - oh0) * g->stride[1] * j->pad_w +
                                  runs[ri].ow0 * g->stride[2];
            }
            pad_copy(j, ximg + (size_t)(img * j->d->in_channels * g->in_plane) * j->es, cin, oh0, rows,
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
    nruns = output_runs(&j->g, p0, nlen, runs);
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
        char *pad = (char *)pad_buf[slot];
        pc->pad_rows = pad_rows_of(g, runs[nruns - 1].oh - oh0 + 1);
        for (int64_t ri = 0; ri < nruns; ri++)
            pc->pad_off[ri] = (runs[ri].oh - oh0) * g->stride[1] * j->pad_w + runs[ri].ow0 * g->stride[2];
        pad_copy(j, ximg, j->d->in_channels / j->d->groups, oh0, pc->pad_rows, pad);
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
static void pack_b_block(const conv_job *j, const char *ximg, int64_t kb, pack_cols *pc, uint32_t *pb)
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
            for (int h = 0; h < 2 && u * 2 + h < kc; h++) {
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
static uint32_t *fullpack_chunk(const conv_job *j, int64_t n, int64_t grp, int64_t nc)
{
    return j->fullpack + (size_t)(((n * j->d->groups + grp) * j->n_chunks + nc) * cdiv(j->K, j->k->kpair) * j->nb);
}

/* Every k block of task = (image, group, column chunk)'s columns into
 * fullpack. */
static void fullpack_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const int64_t n = task / (j->d->groups * j->n_chunks), grp = task / j->n_chunks % j->d->groups;
    const int64_t nc = task % j->n_chunks, p0 = nc * j->nb, nlen = min64(j->nb, j->cols - p0);
    const char *ximg = j->x + (size_t)((n * j->d->in_channels + grp * (j->d->in_channels / j->d->groups)) *
                                       j->g.in_plane) * j->es;
    uint32_t *chunk = fullpack_chunk(j, n, grp, nc);
    pack_cols pc;
    if (nlen <= 0)
        return;
    pack_cols_init(j, ximg, p0, nlen, slot, &pc);
    for (int64_t kb = 0; kb < j->nkb; kb++)
        pack_b_block(j, ximg, kb, &pc, chunk + kb * j->k->kcu * round_up(nlen, j->k->nr));
}

static void im2col_row16(const conv_geometry *g, const char *xc, int64_t kd, int64_t kh, int64_t kw,
                         const out_run *runs, int64_t nruns, char *dst)
{
    im2col_row(2, g, xc, kd, kh, kw, runs, nruns, dst);
}

static void im2col_row32(const conv_geometry *g, const char *xc, int64_t kd, int64_t kh, int64_t kw,
                         const out_run *runs, int64_t nruns, char *dst)
{
    im2col_row(4, g, xc, kd, kh, kw, runs, nruns, dst);
}

/* The im2col matrix of (image, group) task = n groups + g into fullcol. */
static void full_im2col_task(void *ctx, int64_t task, int slot)
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
            im2col_row16(&j->g, xc, kd, kh, kp % j->g.kernel[2], j->all_runs, j->n_all_runs,
                         col + (size_t)(kg * j->P) * es);
        else
            im2col_row32(&j->g, xc, kd, kh, kp % j->g.kernel[2], j->all_runs, j->n_all_runs,
                         col + (size_t)(kg * j->P) * es);
    }
}

/* ---- conv_ex's post-ops ---------------------------------------------------------
 * Without a vectorized post in the kernel, each row segment goes through
 * the reference kernels themselves (batch_norm of one channel over n
 * elements, add, relu): the separate kernels of every set without its own
 * (avx2 and ref) are these, so the results are theirs by construction,
 * down to which NaN an operation on two NaNs returns (which the compiler
 * decides by its operand order). */

static int fast_dtype(amp_dtype t) { return t == AMP_F32 || t == AMP_BF16 || t == AMP_F16; }

/* Element i of an array of es-byte elements, or NULL. */
static const void *at(const void *base, size_t es, int64_t i)
{
    return base != NULL ? (const char *)base + (size_t)i * es : NULL;
}

/* The reference batch_norm of channel co on n elements at y. */
#define REF_BN(T)                                                                                 \
    amp_ref_batch_norm_##T(1, 1, n, y, post->bn_dtype, at(post->bn_mean, ps, co), at(post->bn_var, ps, co), \
                           at(post->bn_weight, ps, co), at(post->bn_bias, ps, co), post->bn_eps, y)

static void bn_generic(amp_dtype t, int64_t n, const amp_conv_post *post, int64_t co, void *y)
{
    const size_t ps = amp_dtype_size(post->bn_dtype);
    switch (t) {
    case AMP_F32: REF_BN(f32); break;
    case AMP_BF16: REF_BN(bf16); break;
    case AMP_F16: REF_BN(f16); break;
    case AMP_F64: REF_BN(f64); break;
    default: break;
    }
}

#define POST_GENERIC_ROW(T)                                                                       \
    do {                                                                                          \
        if (p->bn)                                                                                \
            bn_generic(AMP_DTYPE_##T, n, p->post, p->channel, yr);                                \
        if (rr != NULL)                                                                           \
            amp_ref_add_##T((size_t)n, yr, rr, yr);                                               \
        if (p->relu)                                                                              \
            amp_ref_relu_##T((size_t)n, yr, yr);                                                  \
    } while (0)

static void post_generic(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr, const void *residual,
                         const void *src, void *y, int64_t ld)
{
    const size_t es = amp_dtype_size(t);
    for (int64_t r = 0; r < rows; r++) {
        const amp_conv_post_row *p = &pr[r];
        void *yr = (char *)y + (size_t)(r * ld) * es;
        const void *rr = residual != NULL ? (const char *)residual + (size_t)(r * ld) * es : NULL;
        if (src != y) /* the steps below run in place */
            memcpy(yr, (const char *)src + (size_t)(r * ld) * es, (size_t)n * es);
        switch (t) {
        case AMP_F32: POST_GENERIC_ROW(f32); break;
        case AMP_BF16: POST_GENERIC_ROW(bf16); break;
        case AMP_F16: POST_GENERIC_ROW(f16); break;
        case AMP_F64: POST_GENERIC_ROW(f64); break;
        default: break;
        }
    }
}

/* Channel co's post parameters: batch_norm's scalars as ref_norm.inc's
 * batch_norm computes them in float (mean, rstd = 1 / sqrt(var +
 * (float)eps), weight, bias). */
static void post_row_of(const amp_conv_post *post, int bn_first, int64_t co, amp_conv_post_row *p)
{
    memset(p, 0, sizeof *p);
    p->bn = post->bn_mean != NULL && !bn_first;
    p->bn_weight = p->bn && post->bn_weight != NULL;
    p->bn_bias = p->bn && post->bn_bias != NULL;
    p->relu = post->relu != 0;
    p->post = post;
    p->channel = co;
    if (post->bn_mean != NULL) {
        const amp_dtype pt = post->bn_dtype;
        const float var = amp_ld(pt, post->bn_var, co);
        p->mean = amp_ld(pt, post->bn_mean, co);
        p->rstd = 1 / sqrtf(var + (float)post->bn_eps);
        p->weight = post->bn_weight != NULL ? amp_ld(pt, post->bn_weight, co) : 1.0f;
        p->bias = post->bn_bias != NULL ? amp_ld(pt, post->bn_bias, co) : 0.0f;
    }
}

/* The post-ops of a tile's rows: channels co .. co + rows - 1, n elements
 * each from offset yoff (rows P apart) of j->out, right after their
 * epilogue stored them there, into y.  With a raw output the tiles stored
 * into it, and the post-ops read it while it is in L1 (a copy of y into
 * raw was 1% of a resnet18 training step); where the batch_norm step goes
 * to the reference first, in place on y, raw is a copy of y. */
static void run_post(const conv_job *j, int64_t co, int64_t rows, size_t yoff, int64_t n)
{
    const amp_conv_post *post = j->post;
    amp_conv_post_row local[AMP_GEMM_MR_MAX];
    const amp_conv_post_row *pr = j->post_rows != NULL ? j->post_rows + co : local;
    char *y = j->y + yoff * j->es;
    if (post->raw != NULL && j->out == j->y)
        for (int64_t r = 0; r < rows; r++)
            memcpy((char *)post->raw + (yoff + (size_t)(r * j->P)) * j->es, y + (size_t)(r * j->P) * j->es,
                   (size_t)n * j->es);
    if (j->post_rows == NULL)
        for (int64_t r = 0; r < rows; r++)
            post_row_of(post, j->bn_first, co + r, &local[r]);
    if (j->bn_first)
        for (int64_t r = 0; r < rows; r++)
            bn_generic(j->t, n, post, co + r, y + (size_t)(r * j->P) * j->es);
    j->post_fn(j->t, rows, n, pr, post->residual != NULL ? (const char *)post->residual + yoff * j->es : NULL,
               j->out + yoff * j->es, y, j->P);
}

/* Asks for rows x bytes at p (rows stride apart) to be brought into the
 * cache: the residual a strip's post-ops add, an earlier layer's output
 * long gone from L1/L2, fetched while the strip's micro-kernels run (its
 * short runs, 12 rows P apart, escape the hardware prefetchers: loading
 * it was half the post-ops' time). */
/* n copies of the es-byte element at e into dst (the bias of a row,
 * replicated for the epilogue): typed stores, not n calls of memcpy with
 * a size unknown at compile time, which made a biased convolution's
 * epilogue 2.5 times slower than its products. */
static void fill_elems(void *dst, const void *e, size_t es, int64_t n)
{
    if (es == 2) {
        uint16_t v, *o = dst;
        memcpy(&v, e, 2);
        for (int64_t q = 0; q < n; q++)
            o[q] = v;
    } else if (es == 4) {
        uint32_t v, *o = dst;
        memcpy(&v, e, 4);
        for (int64_t q = 0; q < n; q++)
            o[q] = v;
    } else {
        for (int64_t q = 0; q < n; q++)
            memcpy((char *)dst + (size_t)q * es, e, es);
    }
}

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
    unsigned char *brep = bias_buf[slot];
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
            run_post(j, co0, rows, (size_t)((im * cout + co0) * P + p), len);
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
    float *w = w_buf[slot];
    uint32_t *pb = b_buf[slot]; /* (or the block's in fullpack) */
    char *col = (char *)col_buf[slot];
    unsigned char *brep = bias_buf[slot];

    out_run runs[NB_MAX];
    pack_cols pc;
    int64_t nruns;
    /* bf16 without a bias: the last k block's epilogue in the registers */
    const int out_in_registers = k->micro_out != NULL && j->t == AMP_BF16 && j->bias == NULL;

    if (mlen <= 0 || nlen <= 0)
        return;
    nruns = j->direct || j->fullcol != NULL || j->fullpack != NULL || j->im2col_pack
                ? 0
                : output_runs(&j->g, p0, nlen, runs);
    if (j->im2col_pack && j->fullpack == NULL)
        pack_cols_init(j, ximg, p0, nlen, slot, &pc);
    for (int64_t kb = 0; kb < j->nkb; kb++) {
        const int64_t k0 = kb * j->kstep, kc = min64(j->kstep, j->K - k0), kcu = cdiv(kc, k->kpair);
        const int last = kb == j->nkb - 1;
        const uint32_t *pa_block = pa_group + a_block_offset(j, kb);
        const char *bsrc = NULL;
        int64_t brs = 0;
        if (j->fullpack != NULL) {
            pb = fullpack_chunk(j, n, grp, nc) + kb * k->kcu * ldw;
        } else if (j->fullcol != NULL) {
            bsrc = j->fullcol + (size_t)(((n * d->groups + grp) * j->K + k0) * j->P + p0) * es;
            brs = j->P;
        } else if (j->direct) {
            bsrc = ximg + (size_t)(k0 * j->g.in_plane + p0) * es;
            brs = j->g.in_plane;
        } else if (j->im2col_pack) {
            pack_b_block(j, ximg, kb, &pc, pb);
        } else {
            for (int64_t kk = 0; kk < kc; kk++) {
                const int64_t kg = k0 + kk, c = kg / j->g.kernel_plane, kp = kg % j->g.kernel_plane;
                const int64_t kd = kp / (j->g.kernel[1] * j->g.kernel[2]), kh = kp / j->g.kernel[2] % j->g.kernel[1];
                const int64_t kw = kp % j->g.kernel[2];
                const char *xc = ximg + (size_t)(c * j->g.in_plane) * es;
                if (es == 2)
                    im2col_row16(&j->g, xc, kd, kh, kw, runs, nruns, col + (size_t)(kk * nlen) * es);
                else
                    im2col_row32(&j->g, xc, kd, kh, kw, runs, nruns, col + (size_t)(kk * nlen) * es);
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
                    run_post(j, co0, rows, yoff0, cols);
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
                run_post(j, co0, rows, yoff0, cols);
        }
    }
}

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
        run_post(j, co0, rows, (size_t)((n * j->d->out_channels + co0) * j->P + p0), p1 - p0 + 1);
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
    unsigned char *brep = bias_buf[slot];
    for (int64_t oh = q0 / pw; oh * pw < q0 + nlen; oh++) {
        const int64_t qs = oh * pw > q0 ? oh * pw : q0, qe = min64(oh * pw + ow_n, q0 + nlen);
        for (int64_t q = qs; q < qe; q += NB_MAX) { /* (bias_buf holds NB_MAX elements) */
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
static void taps_task(void *ctx, int64_t task, int slot)
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
    char *pad = (char *)pad_buf[slot];
    /* column q0 in the copy, whose first row is output row oh0's first */
    const char *src0 = pad + (size_t)(q0 - oh0 * j->pad_w) * j->es;
    float *w = w_buf[slot];
    /* bf16 without a bias: the last k block's epilogue in the registers */
    const int out_in_registers = k->micro_taps_out != NULL && j->t == AMP_BF16 && j->bias == NULL;

    if (mlen <= 0 || nlen <= 0)
        return;
    pad_copy(j, ximg, cin_g, oh0, j->taps_rows, pad);
    if (out_in_registers) {
        int *first = taps_seg_first[slot], count = 0;
        for (int64_t jr = 0; jr < nlen; jr += nr) {
            first[jr / nr] = count;
            count += taps_segments(j, q0 + jr, min64(nr, nlen - jr), taps_seg[slot] + count);
        }
        first[cdiv(nlen, nr)] = count;
    }
    for (int64_t kb = 0; kb < j->nkb; kb++) {
        const int64_t k0 = kb * j->kstep, kcu = min64(j->kstep, j->K - k0) / 2;
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

/* amp_fast_conv_ex, or with flip (transpose_by_conv; packed and post
 * NULL, t a fast dtype, K > 0) w read as conv_job.flip says; returns 0,
 * having done nothing, where flipped weights find no memory to pack into. */
static int conv_run(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                    int flip, const void *packed, const void *bias, const amp_conv_post *post, void *y)
{
    conv_job j;
    int threads;
    int64_t mb_max, nb_max, taps_nb_max, tasks;
    uint32_t *pa_own = NULL;
    amp_conv_post_row *rows_own = NULL;

    if (!fast_dtype(t)) { /* f64: packed is the reference's layout */
        reference_conv_ex(t, d, x, w, packed, bias, post, y);
        return 1;
    }
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
    if (post != NULL && post->bn_mean == NULL && post->residual == NULL && !post->relu && post->raw == NULL)
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
    j.im2col_pack = !j.direct && (k->pack_b_im2col != NULL || (k->kpair == 2 && t == AMP_BF16) ||
                                  (k->kpair == 1 && t == AMP_F32));

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
    if (post != NULL) {
        j.post = post;
        j.post_fn = k->post != NULL ? k->post : post_generic;
        j.bn_first = post->bn_mean != NULL && k->post != NULL && !fast_dtype(post->bn_dtype);
        if (post->raw != NULL && !j.bn_first)
            j.out = post->raw;
        /* without memory, each tile computes its rows' parameters */
        rows_own = amp_scratch_alloc((size_t)d->out_channels * sizeof *rows_own);
        if (rows_own != NULL)
            for (int64_t co = 0; co < d->out_channels; co++)
                post_row_of(post, j.bn_first, co, &rows_own[co]);
        j.post_rows = rows_own;
    }

    /* The padded packing (pack_b_rows) where the kernel has it: 2-d and
     * 1-d convolutions at its horizontal strides, when a task's rows fit
     * pad_buf (checked below, once the column blocks are known). */
    const int pad_able = j.im2col_pack && k->pack_b_rows != NULL && j.es == 2 && j.g.in[0] == 1 &&
                         j.g.out[0] == 1 && j.g.kernel[0] == 1 && (j.g.stride[2] == 1 || j.g.stride[2] == 2);
    const int64_t cin_g = d->in_channels / d->groups;
    j.pad_w = (j.g.out[2] - 1) * j.g.stride[2] + (j.g.kernel[2] - 1) * j.g.dilation[2] + 1;
    j.cols = j.P;
    j.images = d->batch;
    /* Columns across images when a small plane leaves its last panel
     * mostly empty (resnet18's 7 x 7: 49 of 64 columns busy; 14 x 14: 196
     * of 256) and the images' segments of a block fit pad_buf. */
    if (pad_able && d->batch > 1) {
        const int64_t per_img = padded_columns(j.P, k->nr) - j.P;
        const int64_t q = d->batch * j.P, across = padded_columns(q, k->nr) - q;
        const int64_t segs = min64(d->batch, (NB_MAX - 1) / j.P + 2);
        const int64_t rows = pad_rows_of(&j.g, min64(j.g.out[1], (NB_MAX - 1) / j.g.out[2] + 2));
        if (20 * per_img > j.P && 2 * across * j.P < per_img * q &&
            (double)segs * (double)cin_g * (double)rows * (double)j.pad_w * 2.0 <= (double)PAD_BUF_BYTES) {
            j.span = 1;
            j.span_rows = rows;
            j.cols = q;
            j.images = 1;
        }
    }
    /* Taps mode (conv_job.taps) where the kernel has micro_taps, for the
     * planes the columns do not run across images in (span pays more
     * there: resnet18's 14 x 14 and 7 x 7, which would compute and drop
     * a column in 15 and 8), when the copy's slack covers a tile's
     * overrun (taps_task) and pad_buf at least a few tiles' rows. */
    taps_nb_max = 0;
    if (taps_allowed && pad_able && !j.span && k->micro_taps != NULL && t == AMP_BF16 && j.g.stride[1] == 1 &&
        j.g.stride[2] == 1 && j.K % 2 == 0 && (j.g.kernel[2] - 1) * j.g.dilation[2] + 32 <= PAD_SLACK_ELEMS &&
        j.g.padding[2] + 32 <= PAD_SLACK_ELEMS) {
        /* rows of in_w + padding: a row's right padding is the next
         * row's left (and the slack's, after the last), so at 3 x 3 one
         * column per row is computed and dropped */
        const int64_t pw = j.g.in[2] + j.g.padding[2] > j.g.out[2] ? j.g.in[2] + j.g.padding[2] : j.g.out[2];
        /* the output rows a task's copy can hold, so the columns it can
         * have: nb columns reach at most (nb + pw - 2) / pw + 1 rows */
        const int64_t rows_fit = (int64_t)(PAD_BUF_BYTES / ((size_t)cin_g * (size_t)pw * 2)) -
                                 (j.g.kernel[1] - 1) * j.g.dilation[1];
        if (rows_fit >= 2) {
            taps_nb_max = min64(TAPS_NB_MAX, (rows_fit - 1) * pw + 1) / k->nr * k->nr;
            if (taps_nb_max >= 4 * k->nr)
                j.taps_off = amp_scratch_alloc((size_t)j.K * sizeof *j.taps_off);
        }
        if (j.taps_off != NULL) {
            j.taps = 1;
            j.pad_w = pw;
            j.cols = (j.g.out[1] - 1) * pw + j.g.out[2];
        }
    }
    /* Equal-sized chunks: rows in multiples of mr, columns of nr (in taps
     * mode as many as w_buf holds for the rows, up to TAPS_NB_MAX). */
    mb_max = AMP_GEMM_MB_MAX / k->mr * k->mr;
    j.m_chunks = cdiv(j.M, mb_max);
    j.mb = round_up(cdiv(j.M, j.m_chunks), k->mr);
    nb_max = j.taps ? min64(taps_nb_max, AMP_GEMM_MB_MAX * NB_MAX / j.mb / k->nr * k->nr) : NB_MAX;
    j.n_chunks = cdiv(j.cols, nb_max);
    j.nb = round_up(cdiv(j.cols, j.n_chunks), k->nr);
    /* Enough tasks for every thread, splitting the larger side. */
    while (threads > 1 && j.images * d->groups * j.m_chunks * j.n_chunks < 4 * threads) {
        if (j.nb > k->nr && (j.nb >= j.mb || j.mb <= k->mr)) {
            j.n_chunks *= 2;
            j.nb = round_up(cdiv(j.cols, j.n_chunks), k->nr);
            j.n_chunks = cdiv(j.cols, j.nb);
        } else if (j.mb > k->mr) {
            j.m_chunks *= 2;
            j.mb = round_up(cdiv(j.M, j.m_chunks), k->mr);
            j.m_chunks = cdiv(j.M, j.mb);
        } else {
            break;
        }
    }
    tasks = j.images * d->groups * j.m_chunks * j.n_chunks;
    if (j.span) {
        j.padded = 1; /* (its size checked above, for the widest block) */
    } else if (pad_able && !j.taps) {
        const int64_t out_rows = min64(j.g.out[1], (j.nb - 1) / j.g.out[2] + 2);
        j.padded = (double)cin_g * (double)pad_rows_of(&j.g, out_rows) * (double)j.pad_w * (double)j.es <=
                   (double)PAD_BUF_BYTES;
    }
    if (j.taps) {
        /* rows per channel: those of the output rows nb columns can
         * reach, and the kernel's reach below them */
        j.taps_rows = min64(j.g.out[1], (j.nb + j.pad_w - 2) / j.pad_w + 1) + (j.g.kernel[1] - 1) * j.g.dilation[1];
        for (int64_t kk = 0; kk < j.K; kk++) {
            const int64_t c = kk / j.g.kernel_plane, kp = kk % j.g.kernel_plane;
            j.taps_off[kk] = (int32_t)((c * j.taps_rows + kp / j.g.kernel[2] * j.g.dilation[1]) * j.pad_w +
                                       kp % j.g.kernel[2] * j.g.dilation[2]);
        }
        amp_parallel_run(threads, tasks, taps_task, &j);
        __atomic_fetch_add(&taps_taken, 1, __ATOMIC_RELAXED);
    } else if (!j.direct && j.m_chunks > 1 && j.im2col_pack) {
        /* Row blocks split: build each im2col matrix once (if memory
         * allows; else every task builds its own blocks, as without a
         * split). */
        /* 64-byte aligned, as the micro-kernel reads B panels */
        char *raw = amp_scratch_alloc((size_t)(j.images * d->groups * j.n_chunks * cdiv(j.K, k->kpair) * j.nb) *
                                      sizeof *j.fullpack + 64);
        if (raw != NULL) {
            j.fullpack = (uint32_t *)(void *)(raw + (64 - (uintptr_t)raw % 64) % 64);
            amp_parallel_run(threads, j.images * d->groups * j.n_chunks, fullpack_task, &j);
        }
        amp_parallel_run(threads, tasks, conv_task, &j);
        amp_scratch_free(raw);
    } else if (!j.direct && j.m_chunks > 1) {
        out_run *all_runs = amp_scratch_alloc((size_t)j.P * sizeof *all_runs);
        j.fullcol = all_runs != NULL ? amp_scratch_alloc((size_t)(d->batch * d->groups * j.K * j.P) * j.es) : NULL;
        if (j.fullcol != NULL) {
            j.all_runs = all_runs;
            j.n_all_runs = output_runs(&j.g, 0, j.P, all_runs);
            amp_parallel_run(threads, d->batch * d->groups, full_im2col_task, &j);
        }
        amp_parallel_run(threads, tasks, conv_task, &j);
        amp_scratch_free(j.fullcol);
        amp_scratch_free(all_runs);
    } else {
        amp_parallel_run(threads, tasks, conv_task, &j);
    }
    amp_scratch_free(j.taps_off);
    amp_scratch_free(rows_own);
    amp_scratch_free(pa_own);
    return 1;
}

void amp_fast_conv_ex(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                      const void *packed, const void *bias, const amp_conv_post *post, void *y)
{
    (void)conv_run(k, t, d, x, w, 0, packed, bias, post, y);
}

void amp_fast_conv(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                   const void *bias, void *y)
{
    amp_fast_conv_ex(k, t, d, x, w, NULL, bias, NULL, y);
}

/* ---- the weight gradient ----------------------------------------------------
 *
 * dw[co, k] = sum over images n and output positions p of dy[n, co, p]
 * col_n[k, p]: per group one GEMM summed over the images (amp_gemm_desc's
 * sum_batch), A = the group's rows of dy ([M][P] per image, as stored), B =
 * col_n transposed (read with strides, no copy), every element of dw summed
 * in f32 over all n and p and rounded once; for planes smaller than a k
 * block and kernels of more than one tap, one GEMM with K = images x
 * positions instead (A = dy's rows
 * copied so that each channel's positions of every image follow one
 * another, B = the im2col matrices side by side in each row).  The
 * im2col matrices of all images of a group are built first (on the pool,
 * in tasks of WGRAD_ROWS rows) in one malloc'ed buffer.  When they are
 * large (over
 * WGRAD_CHUNK_MIN_TOTAL bytes: a network's first layers), the images go
 * in chunks of about WGRAD_CHUNK_BYTES of im2col instead, so that the
 * GEMM packs a chunk's matrices from cache rather than memory: each
 * chunk's product left in f32 (amp_fast_gemm_f32), the chunks' products
 * added in image order, and the total rounded to t once (a summation
 * order of its own; tolerance, as the GEMM's block sums). */

typedef struct {
    const conv_job *j;
    const char *x, *xgroup;
    char *cols;
    const out_run *runs;
    int64_t nruns;
    int64_t n0; /* the chunk's first image (wgrad_im2col_rows_task) */
    /* elements from image n's matrix to n + 1's, and from row k to k + 1:
     * one matrix after another (K P, P), or the images side by side in
     * each row (P, images x P) */
    int64_t img_stride, row_stride;
} wgrad_job;

/* Rows [part WGRAD_ROWS, + WGRAD_ROWS) of image n0 + task / parts's im2col
 * matrix into cols (the chunk's images one after another). */
#define WGRAD_ROWS 64
#define WGRAD_CHUNK_BYTES ((size_t)4 << 20)
/* Total im2col bytes up to which one GEMM over every image stays faster
 * (measured on resnet18's layers: chunks won at 14 and 29 MB, lost at 7). */
#define WGRAD_CHUNK_MIN_TOTAL ((size_t)10 << 20)
static void wgrad_im2col_rows_task(void *ctx, int64_t task, int slot)
{
    const wgrad_job *w = ctx;
    const conv_job *j = w->j;
    const size_t es = j->es;
    const int64_t parts = cdiv(j->K, WGRAD_ROWS), n = task / parts, part = task % parts;
    const char *ximg = w->xgroup + (size_t)((w->n0 + n) * j->d->in_channels * j->g.in_plane) * es;
    char *col = w->cols + (size_t)(n * w->img_stride) * es;
    (void)slot;
    for (int64_t kg = part * WGRAD_ROWS; kg < min64((part + 1) * WGRAD_ROWS, j->K); kg++) {
        const int64_t c = kg / j->g.kernel_plane, kp = kg % j->g.kernel_plane;
        const int64_t kd = kp / (j->g.kernel[1] * j->g.kernel[2]), kh = kp / j->g.kernel[2] % j->g.kernel[1];
        const char *xc = ximg + (size_t)(c * j->g.in_plane) * es;
        if (es == 2)
            im2col_row16(&j->g, xc, kd, kh, kp % j->g.kernel[2], w->runs, w->nruns,
                         col + (size_t)(kg * w->row_stride) * es);
        else
            im2col_row32(&j->g, xc, kd, kh, kp % j->g.kernel[2], w->runs, w->nruns,
                         col + (size_t)(kg * w->row_stride) * es);
    }
}

/* ---- the weight gradient, direct (kernels with pack_b_trows) -----------------
 *
 * The same product without the im2col matrices in memory: a task owns the
 * columns [k0, k0 + nb) and rows [m0, m0 + mb) of dw and sums them over
 * every image and output position p, in k blocks of up to kcu units (p
 * pairs) within an image.  Per block it copies the input rows the block's
 * positions read, for the channels of its columns, zero-padded, into
 * pad_buf (at horizontal stride 2 each row split into its even and odd
 * columns, so that a tap's elements are contiguous), packs B from those
 * rows with the kernel's pack_b_trows (a tap's row over an output row's
 * positions is contiguous there), packs its rows of dy as A (or, with
 * several column blocks, takes them from dy packed once beforehand for
 * all of them), and runs the micro-kernel, accumulating in w_buf from the
 * first block to the last.
 * Each element is one chain of vdpbf16ps over all images and positions in
 * order, rounded to t once, on any thread count (nb and mb only say which
 * task computes it).  Except where the whole of dw is one block (a
 * network's first layer: few columns): a task per part of the images
 * then (up to WGRAD_IMAGE_PARTS, none empty), each part's chain left in
 * f32 and the parts added in order and rounded after them, which lets the
 * threads share the work evenly without repacking B; that depends on the
 * shape alone, so the result still does not depend on the thread count.
 * 2-d and 1-d, no horizontal dilation, horizontal stride 1 or 2, kernels
 * of more than one tap (a 1 x 1 kernel's im2col is a strided copy of x:
 * the GEMM path measured faster).  Output rows of odd width (where a
 * unit, two adjacent positions, can straddle two rows) go through the
 * flat copy (wgrad_flat_copy), without vertical dilation. */

/* Where the weight gradient goes: dw in t; or, with dw32 set, f32 elements,
 * each sum rounded to t as for dw and then widened, stored or (accumulate)
 * added (amp_conv_backward_weight_to_f32_<t>). */
typedef struct {
    void *dw;
    float *dw32;
    int accumulate;
} wgrad_out;

/* n t elements at low, widened into dw32 (stored or added) by the set's
 * own cast and grad_accumulate (the public calls dispatch to it). */
static void widen_into(amp_dtype t, size_t n, const void *low, float *dw32, int accumulate)
{
    if (t == AMP_BF16) {
        if (accumulate)
            amp_grad_accumulate_bf16(n, dw32, low);
        else
            amp_cast_bf16_f32(n, low, dw32);
    } else {
        if (accumulate)
            amp_grad_accumulate_f16(n, dw32, low);
        else
            amp_cast_f16_f32(n, low, dw32);
    }
}

/* n sums at acc, rounded to t by the kernel's epilogue, into o at element
 * at (t is 2 bytes wide where o->dw32 is set). */
static void wgrad_store(const amp_gemm_kernel *k, amp_dtype t, const wgrad_out *o, int64_t at, int64_t n,
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
        widen_into(t, (size_t)m, low, o->dw32 + at + i, o->accumulate);
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
    const int64_t kstep = (int64_t)k->kcu * 2, pb = task % w->pblocks, n = task / w->pblocks % w->d->batch;
    const int64_t grp = task / (w->pblocks * w->d->batch), p0 = pb * kstep, plen = min64(kstep, w->P - p0);
    const char *dyb = w->dy + (size_t)((n * w->d->out_channels + grp * w->M) * w->P + p0) * 2;
    uint32_t *dst = w->apack + task * w->a_block;
    (void)slot;
    if (w->group > 0) { /* task = (group, image group): each image's units in turn */
        const int64_t gi = task % w->pblocks, g = task / w->pblocks, n0 = gi * w->group;
        const int64_t gn = min64(w->group, w->d->batch - n0), upi = cdiv(w->P, 2);
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
                  dst + ir / k->mr * cdiv(plen, 2) * k->mr);
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
    const int64_t cin_g = d->in_channels / d->groups, kplane = g->kernel_plane, kstep = (int64_t)k->kcu * 2;
    const int64_t c_lo = k0 / kplane, nch = (k0 + ncols - 1) / kplane - c_lo + 1;
    const int64_t wout = g->out[2], s1 = g->stride[1], rows_max = wgrad_block_rows(w, kstep);
    /* each of the task's columns (and the zero ones up to ldw): where its
     * tap's row starts in the padded copy, relative to a block's first
     * output row and column 0 (channel c's rows rows_max apart; the zero
     * row after the last channel's) */
    int64_t col_off[NB_MAX];
    float *acc = w_buf[slot];
    uint32_t *pb = b_buf[slot], *pa = wgrad_a_buf[slot];
    uint16_t *pad = (uint16_t *)(void *)pad_buf[slot];
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
        const int64_t gn = min64(w->group, n_hi - n0), upi = cdiv(w->P, 2), kcu = gn * upi;
        for (int64_t n = n0; n < n0 + gn; n++) {
            const uint16_t *xflat = w->flatx + (n * d->in_channels + grp * cin_g + c_lo) * kW * s1 * plane_len;
            const char *dyimg = w->dy + (size_t)((n * d->out_channels + grp * w->M + m0) * w->P) * 2;
            /* B: each column's tap, the whole image's positions in one run */
            for (int64_t jr = 0; jr < ncols; jr += nr) {
                uint32_t *panel = pb + jr / nr * kcu * nr + (n - n0) * upi * nr;
                for (int i = 0; i < nr; i++)
                    tap_rows[i] = jr + i < ncols ? xflat + col_off[jr + i] : pad;
                k->pack_b_trows(tap_rows, w->P / 2, panel);
                if (w->P & 1)
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
            const int64_t plen = min64(kstep, w->P - p0), kcu = cdiv(plen, 2);
            const int64_t oh_a = p0 / wout, oh_b = (p0 + plen - 1) / wout;
            const int64_t prows = (oh_b - oh_a) * s1 + (g->kernel[1] - 1) * g->dilation[1] + 1;
            if (w->flat) {
                /* B: each column's tap is one run over the block */
                wgrad_flat_copy(w, ximg, c_lo, nch, oh_a, oh_b - oh_a + 1 + (g->kernel[1] - 1) / s1, pad);
                for (int64_t jr = 0; jr < ncols; jr += nr) {
                    uint32_t *panel = pb + jr / nr * kcu * nr;
                    for (int i = 0; i < nr; i++)
                        tap_rows[i] = pad + col_off[jr + i] + (jr + i < ncols ? p0 - oh_a * wout : 0);
                    k->pack_b_trows(tap_rows, plen / 2, panel);
                    if (plen & 1)
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
                    k->pack_b_trows(tap_rows, len / 2, pb + jr / nr * kcu * nr + (p - p0) / 2 * nr);
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
            wgrad_store(k, w->t, w->out, row * w->K + k0, ncols, acc + r * ldw);
    }
}

/* dw by wgrad_direct_task when the kernel, dtype and shape allow it;
 * returns 0 (nothing done) otherwise. */
static int wgrad_direct(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *dy,
                        const wgrad_out *out, int threads)
{
    wgrad_direct_job w;
    int64_t tasks, mb_max;
    memset(&w, 0, sizeof w);
    w.g = conv_geometry_of(d);
    if (k->pack_b_trows == NULL || k->kpair != 2 || amp_dtype_size(t) != 2 || w.g.in[0] != 1 || w.g.out[0] != 1 ||
        w.g.kernel[0] != 1 || w.g.dilation[2] != 1 || (w.g.stride[2] != 1 && w.g.stride[2] != 2) ||
        (w.g.out[2] % 2 != 0 && w.g.dilation[1] != 1) || w.g.kernel_plane == 1 || k->nr > 4 * AMP_GEMM_MR_MAX)
        return 0;
    w.flat = w.g.out[2] % 2 != 0;
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
    /* the widest block's channels, rows and the zero row must fit pad_buf */
    {
        const int64_t nch = (w.nb + w.g.kernel_plane - 1) / w.g.kernel_plane + 1, kstep = (int64_t)k->kcu * 2;
        double bytes = ((double)nch * (double)wgrad_block_rows(&w, kstep) + 1) * (double)w.row_len * 2 +
                       (double)w.g.out[2] * 2;
        if (w.flat) {
            w.flat_rows = min64(w.g.out[1], (kstep - 1) / w.g.out[2] + 2) + (w.g.kernel[1] - 1) / w.g.stride[1];
            w.group = w.P <= kstep ? k->kcu / cdiv(w.P, 2) : 0;
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
        w.pblocks = w.group > 0 ? cdiv(d->batch, w.group) : cdiv(w.P, (int64_t)k->kcu * 2);
        w.a_block = round_up(w.M, k->mr) * (w.group > 0 ? w.group * cdiv(w.P, 2) : k->kcu);
        w.apack = amp_scratch_alloc((size_t)(d->groups * blocks * w.pblocks * w.a_block) * sizeof *w.apack);
        if (w.apack != NULL)
            amp_parallel_run(threads, d->groups * blocks * w.pblocks, wgrad_pack_dy_task, &w);
    }
    amp_parallel_run(threads, tasks, wgrad_direct_task, &w);
    if (w.parts > 1) { /* the parts' sums in order, rounded once */
        const int64_t total = d->groups * w.M * w.K;
        float *sum = w.partial;
        for (int64_t part = 1; part < w.parts; part++)
            for (int64_t i = 0; i < total; i++)
                sum[i] += w.partial[part * total + i];
        wgrad_store(k, t, out, 0, total, sum);
    }
    amp_scratch_free(w.partial);
    amp_scratch_free(w.apack);
    amp_scratch_free(w.flatx);
    return 1;
}

static void reference_conv_backward_weight(amp_dtype t, const amp_conv_desc *d, const void *x, const void *dy,
                                           void *dw)
{
    switch (t) {
    case AMP_F32: amp_ref_conv_backward_weight_f32(d, x, dy, dw); break;
    case AMP_BF16: amp_ref_conv_backward_weight_bf16(d, x, dy, dw); break;
    case AMP_F16: amp_ref_conv_backward_weight_f16(d, x, dy, dw); break;
    default: amp_ref_conv_backward_weight_f64(d, x, dy, dw); break;
    }
}

/* The threads the direct weight gradient of d runs on: one below
 * PARALLEL_MIN_FLOPS. */
static int wgrad_threads(const amp_conv_desc *d)
{
    const conv_geometry g = conv_geometry_of(d);
    const double flops = 2.0 * (double)d->batch * (double)d->out_channels * (double)(d->in_channels / d->groups) *
                         (double)g.kernel_plane * (double)g.out_plane;
    return flops < PARALLEL_MIN_FLOPS ? 1 : amp_get_threads();
}

/* The reference into o (no memory needed): dw in t, or widened into f32. */
static void reference_wgrad(amp_dtype t, const amp_conv_desc *d, const void *x, const void *dy, const wgrad_out *o)
{
    if (o->dw32 == NULL)
        reference_conv_backward_weight(t, d, x, dy, o->dw);
    else if (t == AMP_BF16)
        amp_ref_conv_backward_weight_to_f32_bf16(d, x, dy, o->dw32, o->accumulate);
    else
        amp_ref_conv_backward_weight_to_f32_f16(d, x, dy, o->dw32, o->accumulate);
}

static void wgrad_by_gemm(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                          const void *dy, void *dw);

/* dw into o: straight from the tiles where the direct path takes d; else
 * by the im2col GEMMs, in t (into scratch memory first, then widened, for
 * an f32 o). */
static void conv_backward_weight_into(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                                      const void *dy, const wgrad_out *o)
{
    const conv_geometry g = conv_geometry_of(d);
    const int64_t M = d->out_channels / d->groups, K = d->in_channels / d->groups * g.kernel_plane;
    void *low;
    if (M <= 0 || K <= 0)
        return;
    k = amp_conv_rows_kernel(k, M);
    /* No products to sum (or a dtype the GEMM does not take): the
     * reference, which writes the zeros. */
    if (d->batch <= 0 || g.out_plane <= 0 || (t != AMP_F32 && t != AMP_BF16 && t != AMP_F16)) {
        reference_wgrad(t, d, x, dy, o);
        return;
    }
    if (wgrad_direct(k, t, d, x, dy, o, wgrad_threads(d)))
        return;
    if (o->dw32 == NULL) {
        wgrad_by_gemm(k, t, d, x, dy, o->dw);
        return;
    }
    low = amp_scratch_alloc((size_t)(d->groups * M * K) * amp_dtype_size(t));
    if (low == NULL) {
        reference_wgrad(t, d, x, dy, o);
        return;
    }
    wgrad_by_gemm(k, t, d, x, dy, low);
    widen_into(t, (size_t)(d->groups * M * K), low, o->dw32, o->accumulate);
    amp_scratch_free(low);
}

void amp_fast_conv_backward_weight_to_f32(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d,
                                          const void *x, const void *dy, float *dw, int accumulate)
{
    const wgrad_out out = { NULL, dw, accumulate };
    conv_backward_weight_into(k, t, d, x, dy, &out);
}

void amp_fast_conv_backward_weight(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                                   const void *dy, void *dw)
{
    const wgrad_out out = { dw, NULL, 0 };
    conv_backward_weight_into(k, t, d, x, dy, &out);
}

/* dw in t by the im2col matrices and GEMMs (d has products to sum; k the
 * rows kernel of its M). */
static void wgrad_by_gemm(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                          const void *dy, void *dw)
{
    conv_job j;
    wgrad_job w;
    out_run *runs;
    size_t cols_bytes;
    int64_t chunk;
    float *acc = NULL, *part = NULL;
    char *dy_side;
    int threads = amp_get_threads();

    memset(&j, 0, sizeof j);
    memset(&w, 0, sizeof w);
    j.g = conv_geometry_of(d);
    j.M = d->out_channels / d->groups;
    j.K = d->in_channels / d->groups * j.g.kernel_plane;
    j.P = j.g.out_plane;
    j.t = t;
    j.es = amp_dtype_size(t);
    j.d = d;
    /* Images per im2col chunk: all of them when their matrices are small;
     * else as many as fit WGRAD_CHUNK_BYTES (at least one), each chunk's
     * product summed in f32 and the chunks' sums added in image order,
     * rounded to t once at the end, so that a chunk's matrix is still in
     * cache when the GEMM packs it. */
    chunk = (int64_t)(WGRAD_CHUNK_BYTES / ((size_t)(j.K * j.P) * j.es));
    if (chunk < 1)
        chunk = 1;
    if (chunk >= d->batch || (size_t)(d->batch * j.K * j.P) * j.es <= WGRAD_CHUNK_MIN_TOTAL)
        chunk = d->batch;
    cols_bytes = (size_t)(chunk * j.K * j.P) * j.es;
    w.cols = amp_scratch_alloc(cols_bytes);
    runs = amp_scratch_alloc((size_t)j.P * sizeof *runs);
    if (chunk < d->batch) {
        acc = amp_scratch_alloc((size_t)(j.M * j.K) * 2 * sizeof *acc);
        part = acc != NULL ? acc + j.M * j.K : NULL;
    }
    if (w.cols == NULL || runs == NULL || (chunk < d->batch && acc == NULL)) { /* the reference needs no memory */
        amp_scratch_free(w.cols);
        amp_scratch_free(runs);
        amp_scratch_free(acc);
        reference_conv_backward_weight(t, d, x, dy, dw);
        return;
    }
    w.j = &j;
    w.x = x;
    w.runs = runs;
    w.nruns = output_runs(&j.g, 0, j.P, runs);
    /* a small im2col is not worth waking the pool (at 512 KB, the level
     * before, resnet18's 1 x 1 stride-2 weight gradients built 200-400 KB
     * matrices on one thread: 2 threads now 0.23 -> 0.18 ms at 14 x 14) */
    if ((double)cols_bytes < PARALLEL_MIN_FLOPS / 32)
        threads = 1;
    /* One product over every image of planes smaller than a k block (a
     * 7 x 7 plane's 49 positions made every micro-kernel call a short
     * one): the images' im2col matrices side by side in each row, and
     * dy's rows of a group's channels copied so that each channel's
     * positions of every image follow one another, make it one GEMM with
     * K = batch x P, whose k blocks run over the images (resnet18's
     * layer4 3 x 3: 2.76 -> 2.66 ms; at 28 x 28, and for 1 x 1 kernels,
     * whose B is no larger than dy, the copy cost more than it saved).
     * Otherwise one matrix per image, summed by the GEMM over the images
     * (sum_batch). */
    dy_side = chunk == d->batch && j.P < (int64_t)k->kcu * k->kpair && j.g.kernel_plane > 1
                  ? amp_scratch_alloc((size_t)(j.M * d->batch * j.P) * j.es)
                  : NULL;
    w.img_stride = dy_side != NULL ? j.P : j.K * j.P;
    w.row_stride = dy_side != NULL ? d->batch * j.P : j.P;
    for (int64_t grp = 0; grp < d->groups; grp++) {
        amp_gemm_desc gd;
        char *dwg = (char *)dw + (size_t)(grp * j.M * j.K) * j.es;
        w.xgroup = (const char *)x + (size_t)(grp * (d->in_channels / d->groups) * j.g.in_plane) * j.es;
        memset(&gd, 0, sizeof gd);
        if (dy_side != NULL) {
            for (int64_t m = 0; m < j.M; m++)
                for (int64_t n = 0; n < d->batch; n++)
                    memcpy(dy_side + (size_t)((m * d->batch + n) * j.P) * j.es,
                           (const char *)dy + (size_t)(((n * d->out_channels) + grp * j.M + m) * j.P) * j.es,
                           (size_t)j.P * j.es);
            w.n0 = 0;
            amp_parallel_run(threads, d->batch * cdiv(j.K, WGRAD_ROWS), wgrad_im2col_rows_task, &w);
            gd.batch = 1;
            gd.M = j.M;
            gd.N = j.K;
            gd.K = d->batch * j.P;
            gd.a_stride[1] = d->batch * j.P;
            gd.a_stride[2] = 1;
            gd.b_stride[1] = 1;
            gd.b_stride[2] = d->batch * j.P;
            gd.alpha = 1.0;
            gd.beta = 0.0;
            amp_fast_gemm(k, t, &gd, dy_side, w.cols, NULL, NULL, dwg);
            continue;
        }
        gd.M = j.M;
        gd.N = j.K;
        gd.K = j.P;
        gd.a_stride[0] = d->out_channels * j.P;
        gd.a_stride[1] = j.P;
        gd.a_stride[2] = 1;
        gd.b_stride[0] = j.K * j.P;
        gd.b_stride[1] = 1;
        gd.b_stride[2] = j.P;
        gd.alpha = 1.0;
        gd.beta = 0.0;
        gd.sum_batch = 1;
        for (int64_t n0 = 0; n0 < d->batch; n0 += chunk) {
            const int64_t nc = min64(chunk, d->batch - n0);
            const char *dyc = (const char *)dy + (size_t)((n0 * d->out_channels + grp * j.M) * j.P) * j.es;
            w.n0 = n0;
            amp_parallel_run(threads, nc * cdiv(j.K, WGRAD_ROWS), wgrad_im2col_rows_task, &w);
            gd.batch = nc;
            if (chunk == d->batch) { /* one product, rounded to t by the GEMM */
                amp_fast_gemm(k, t, &gd, dyc, w.cols, NULL, NULL, dwg);
                break;
            }
            amp_fast_gemm_f32(k, t, &gd, dyc, w.cols, n0 == 0 ? acc : part);
            if (n0 > 0)
                for (int64_t i = 0; i < j.M * j.K; i++)
                    acc[i] += part[i];
        }
        if (chunk < d->batch)
            for (int64_t i = 0; i < j.M * j.K; i++)
                amp_st(t, dwg, i, acc[i]);
    }
    amp_scratch_free(dy_side);
    amp_scratch_free(acc);
    amp_scratch_free(runs);
    amp_scratch_free(w.cols);
}

/* ---- conv_transpose ----------------------------------------------------------
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
 * taps x input positions (x the images of one GEMM).  This is the general path; stride 1, and dilation 1
 * with strides on larger planes, run as convolutions instead (the two
 * sections below). */

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

#define FLIP_CHANNELS 16 /* output channels per task (phase_weights_task) */

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
    return conv_run(k, t, &c, x, w, 1, NULL, bias, NULL, y);
}

/* ---- conv_transpose of stride > 1 as one convolution per output phase ----------
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
static int transpose_by_phases(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
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
    if (transpose_by_conv(k, t, d, x, w, bias, y) || transpose_by_phases(k, t, d, x, w, bias, y))
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
