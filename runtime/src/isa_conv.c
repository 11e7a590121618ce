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
 *   1. The weights are packed once per call into the micro-kernel's A
 *      panels for every group and k block (on the pool: tasks are (group,
 *      k block, panel)), in a malloc'ed buffer.
 *   2. The output is cut into tasks: (image, group, block of up to
 *      AMP_GEMM_MB_MAX rows, block of up to NB_MAX columns).  Per k block a
 *      task writes the im2col rows of its columns into a per-slot buffer
 *      (so the copy stays in L2; a 1 x 1, stride-1, unpadded convolution
 *      reads x directly, with no copy; when the rows are split into
 *      several blocks, as for the small planes of a network's last layers,
 *      the whole im2col matrices are built once beforehand instead, so the
 *      row blocks do not each rebuild them), packs them into B panels, and runs
 *      the micro-kernel over its rows; on the last k block each tile's
 *      epilogue (the bias, the one rounding to the storage dtype) runs at
 *      once, while the tile is in L1.
 *
 * Arithmetic, compared with the reference (ref_conv.inc): the same f32
 * products in the same k order, but summed per k block and the blocks'
 * partial sums added (as amp_fast_gemm does), and a tap in the padding
 * contributes w x 0 instead of being skipped (so a non-finite weight gives
 * NaN there, as an im2col convolution in PyTorch does).  Every output
 * element is summed by one task in a fixed order, so results do not depend
 * on the thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"
#include "ref_window.h"

#define ALIGN64 __attribute__((aligned(64)))

/* Columns per task at most (a multiple of every kernel's nr): with
 * AMP_GEMM_KCU_MAX units of k, the im2col block, the packed B block and the
 * accumulator stay within L2. */
#define NB_MAX 192

static float w_buf[AMP_MAX_THREADS][AMP_GEMM_MB_MAX * NB_MAX] ALIGN64;
static uint32_t b_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * NB_MAX] ALIGN64;
/* im2col rows of one k block: kc <= kcu x kpair rows of up to 4-byte
 * elements (f32 kc <= KCU_MAX, 4 bytes; bf16 pairs kc <= 2 KCU_MAX, 2 bytes). */
static unsigned char col_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * 4 * NB_MAX] ALIGN64;
/* One row's bias replicated across a tile (the epilogue adds bias[j]). */
static unsigned char bias_buf[AMP_MAX_THREADS][AMP_GEMM_NR_MAX * 4] ALIGN64;

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
    /* When the rows are split over several tasks, the whole im2col matrix
     * of every (image, group), [K][P] each, built once beforehand (so the
     * row blocks of one column block do not each rebuild it); else NULL. */
    char *fullcol;
    const out_run *all_runs;
    int64_t n_all_runs;
    int64_t M, K, P, kstep, nkb, panels;
    int64_t group_units; /* units of packed A per group */
    const char *x, *w, *bias;
    char *y;
    uint32_t *pa;
    int64_t mb, nb, m_chunks, n_chunks;
} conv_job;

/* Units before k block kb's panels in a group's packed A: every earlier
 * block is full (kcu units per row). */
static int64_t a_block_offset(const conv_job *j, int64_t kb)
{
    return kb * j->k->kcu * j->panels * j->k->mr;
}

static void pack_weights_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const int64_t per_group = j->nkb * j->panels;
    const int64_t grp = task / per_group, kb = task % per_group / j->panels, ip = task % j->panels;
    const int64_t k0 = kb * j->kstep, kc = min64(j->kstep, j->K - k0), kcu = cdiv(kc, k->kpair);
    const int64_t m0 = ip * k->mr;
    (void)slot;
    k->pack_a(j->t, j->w + (size_t)((grp * j->M + m0) * j->K + k0) * j->es, j->K, 1, (int)min64(k->mr, j->M - m0),
              kc, j->pa + grp * j->group_units + a_block_offset(j, kb) + ip * kcu * k->mr);
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
        memset(o, 0, (size_t)lo * es);
        if (s2 == 1 && hi > lo)
            memcpy(o + (size_t)lo * es, row + (size_t)(base + lo) * es, (size_t)(hi - lo) * es);
        else if (s2 != 1)
            for (int64_t q = lo; q < hi; q++)
                memcpy(o + (size_t)q * es, row + (size_t)(base + q * s2) * es, es);
        memset(o + (size_t)hi * es, 0, (size_t)(r->len - hi) * es);
    }
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

static void conv_task(void *ctx, int64_t task, int slot)
{
    const conv_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const amp_conv_desc *d = j->d;
    const int mr = k->mr, nr = k->nr;
    const size_t es = j->es;
    const int64_t per_image = d->groups * j->m_chunks * j->n_chunks;
    const int64_t n = task / per_image, grp = task % per_image / (j->m_chunks * j->n_chunks);
    const int64_t mc = task % (j->m_chunks * j->n_chunks) / j->n_chunks, nc = task % j->n_chunks;
    const int64_t m0 = mc * j->mb, p0 = nc * j->nb;
    const int64_t mlen = min64(j->mb, j->M - m0), nlen = min64(j->nb, j->P - p0);
    const int64_t ldw = round_up(nlen, nr);
    const int64_t cin_g = d->in_channels / d->groups;
    const char *ximg = j->x + (size_t)((n * d->in_channels + grp * cin_g) * j->g.in_plane) * es;
    const uint32_t *pa_group = j->pa + grp * j->group_units;
    float *w = w_buf[slot];
    uint32_t *pb = b_buf[slot];
    char *col = (char *)col_buf[slot];
    unsigned char *brep = bias_buf[slot];

    out_run runs[NB_MAX];
    int64_t nruns;

    if (mlen <= 0 || nlen <= 0)
        return;
    nruns = j->direct || j->fullcol != NULL ? 0 : output_runs(&j->g, p0, nlen, runs);
    for (int64_t kb = 0; kb < j->nkb; kb++) {
        const int64_t k0 = kb * j->kstep, kc = min64(j->kstep, j->K - k0), kcu = cdiv(kc, k->kpair);
        const int last = kb == j->nkb - 1;
        const uint32_t *pa_block = pa_group + a_block_offset(j, kb);
        const char *bsrc;
        int64_t brs;
        if (j->fullcol != NULL) {
            bsrc = j->fullcol + (size_t)(((n * d->groups + grp) * j->K + k0) * j->P + p0) * es;
            brs = j->P;
        } else if (j->direct) {
            bsrc = ximg + (size_t)(k0 * j->g.in_plane + p0) * es;
            brs = j->g.in_plane;
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
        for (int64_t jr = 0; jr < nlen; jr += nr)
            k->pack_b(j->t, bsrc + (size_t)jr * es, brs, 1, (int)min64(nr, nlen - jr), kc, pb + jr / nr * kcu * nr);
        for (int64_t jr = 0; jr < nlen; jr += nr)
            for (int64_t ir = 0; ir < mlen; ir += mr) {
                const int64_t ip = (m0 + ir) / mr; /* m0 is a multiple of mr */
                float *wt = w + ir * ldw + jr;
                k->micro(kcu, pa_block + ip * kcu * mr, pb + jr / nr * kcu * nr, wt, ldw, kb > 0);
                if (!last)
                    continue;
                for (int64_t r = ir; r < min64(ir + mr, mlen); r++) {
                    const int64_t co = grp * j->M + m0 + r, cols = min64(nr, nlen - jr);
                    const void *brow = NULL;
                    if (j->bias != NULL) {
                        for (int64_t q = 0; q < cols; q++)
                            memcpy(brep + q * es, j->bias + (size_t)co * es, es);
                        brow = brep;
                    }
                    k->epi(j->t, cols, w + r * ldw + jr, 1.0f, 0.0f, NULL, 0, brow,
                           j->y + (size_t)((n * d->out_channels + co) * j->P + p0 + jr) * es);
                }
            }
    }
}

static void reference_conv(amp_dtype t, const amp_conv_desc *d, const void *x, const void *w, const void *bias,
                           void *y)
{
    switch (t) {
    case AMP_F32: amp_ref_conv_f32(d, x, w, bias, y); break;
    case AMP_BF16: amp_ref_conv_bf16(d, x, w, bias, y); break;
    case AMP_F16: amp_ref_conv_f16(d, x, w, bias, y); break;
    default: amp_ref_conv_f64(d, x, w, bias, y); break;
    }
}

void amp_fast_conv(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                   const void *bias, void *y)
{
    conv_job j;
    int threads;
    int64_t mb_max, tasks;
    size_t pa_bytes;

    memset(&j, 0, sizeof j);
    j.g = conv_geometry_of(d);
    j.M = d->out_channels / d->groups;
    j.K = d->in_channels / d->groups * j.g.kernel_plane;
    j.P = j.g.out_plane;
    if (d->batch <= 0 || j.M <= 0 || j.P <= 0)
        return;
    /* An empty sum (no input channels or taps) has nothing to multiply:
     * the reference writes the bias alone. */
    if (j.K == 0 || (t != AMP_F32 && t != AMP_BF16 && t != AMP_F16)) {
        reference_conv(t, d, x, w, bias, y);
        return;
    }
    j.k = k;
    j.t = t;
    j.es = amp_dtype_size(t);
    j.d = d;
    j.x = x;
    j.w = w;
    j.bias = bias;
    j.y = y;
    j.direct = 1;
    for (int i = 0; i < 3; i++)
        if (j.g.kernel[i] != 1 || j.g.stride[i] != 1 || j.g.padding[i] != 0 || j.g.in[i] != j.g.out[i])
            j.direct = 0;
    j.kstep = (int64_t)k->kcu * k->kpair;
    j.nkb = cdiv(j.K, j.kstep);
    j.panels = cdiv(j.M, k->mr);
    j.group_units = a_block_offset(&j, j.nkb - 1) + j.panels * k->mr * cdiv(j.K - (j.nkb - 1) * j.kstep, k->kpair);
    pa_bytes = (size_t)(d->groups * j.group_units) * sizeof(uint32_t);
    j.pa = malloc(pa_bytes);
    if (j.pa == NULL) { /* no memory for the packed weights: the reference needs none */
        reference_conv(t, d, x, w, bias, y);
        return;
    }

    threads = amp_get_threads();
    if (2.0 * (double)d->batch * (double)d->groups * (double)j.M * (double)j.K * (double)j.P < PARALLEL_MIN_FLOPS)
        threads = 1;
    amp_parallel_run(threads, d->groups * j.nkb * j.panels, pack_weights_task, &j);

    /* Equal-sized chunks: rows in multiples of mr, columns of nr. */
    mb_max = AMP_GEMM_MB_MAX / k->mr * k->mr;
    j.m_chunks = cdiv(j.M, mb_max);
    j.mb = round_up(cdiv(j.M, j.m_chunks), k->mr);
    j.n_chunks = cdiv(j.P, NB_MAX);
    j.nb = round_up(cdiv(j.P, j.n_chunks), k->nr);
    /* Enough tasks for every thread, splitting the larger side. */
    while (threads > 1 && d->batch * d->groups * j.m_chunks * j.n_chunks < 4 * threads) {
        if (j.nb > k->nr && (j.nb >= j.mb || j.mb <= k->mr)) {
            j.n_chunks *= 2;
            j.nb = round_up(cdiv(j.P, j.n_chunks), k->nr);
            j.n_chunks = cdiv(j.P, j.nb);
        } else if (j.mb > k->mr) {
            j.m_chunks *= 2;
            j.mb = round_up(cdiv(j.M, j.m_chunks), k->mr);
            j.m_chunks = cdiv(j.M, j.mb);
        } else {
            break;
        }
    }
    tasks = d->batch * d->groups * j.m_chunks * j.n_chunks;
    /* Row blocks split: build each im2col matrix once (if memory allows;
     * else every task builds its own blocks, as without a split). */
    if (!j.direct && j.m_chunks > 1) {
        out_run *all_runs = malloc((size_t)j.P * sizeof *all_runs);
        j.fullcol = all_runs != NULL ? malloc((size_t)(d->batch * d->groups * j.K * j.P) * j.es) : NULL;
        if (j.fullcol != NULL) {
            j.all_runs = all_runs;
            j.n_all_runs = output_runs(&j.g, 0, j.P, all_runs);
            amp_parallel_run(threads, d->batch * d->groups, full_im2col_task, &j);
        }
        amp_parallel_run(threads, tasks, conv_task, &j);
        free(j.fullcol);
        free(all_runs);
    } else {
        amp_parallel_run(threads, tasks, conv_task, &j);
    }
    free(j.pa);
}

/* ---- the weight gradient ----------------------------------------------------
 *
 * dw[co, k] = sum over images n and output positions p of dy[n, co, p]
 * col_n[k, p]: per group one GEMM summed over the images (amp_gemm_desc's
 * sum_batch), A = the group's rows of dy ([M][P] per image, as stored), B =
 * col_n transposed (read with strides, no copy), every element of dw summed
 * in f32 over all n and p and rounded once.  The im2col matrices of all
 * images of a group are built first (on the pool, one task per image) in
 * one malloc'ed buffer. */

typedef struct {
    const conv_job *j;
    const char *x, *xgroup;
    char *cols;
    const out_run *runs;
    int64_t nruns;
} wgrad_job;

static void wgrad_im2col_task(void *ctx, int64_t n, int slot)
{
    const wgrad_job *w = ctx;
    const conv_job *j = w->j;
    const size_t es = j->es;
    const char *ximg = w->xgroup + (size_t)(n * j->d->in_channels * j->g.in_plane) * es;
    char *col = w->cols + (size_t)(n * j->K * j->P) * es;
    (void)slot;
    for (int64_t kg = 0; kg < j->K; kg++) {
        const int64_t c = kg / j->g.kernel_plane, kp = kg % j->g.kernel_plane;
        const int64_t kd = kp / (j->g.kernel[1] * j->g.kernel[2]), kh = kp / j->g.kernel[2] % j->g.kernel[1];
        const char *xc = ximg + (size_t)(c * j->g.in_plane) * es;
        if (es == 2)
            im2col_row16(&j->g, xc, kd, kh, kp % j->g.kernel[2], w->runs, w->nruns, col + (size_t)(kg * j->P) * es);
        else
            im2col_row32(&j->g, xc, kd, kh, kp % j->g.kernel[2], w->runs, w->nruns, col + (size_t)(kg * j->P) * es);
    }
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

void amp_fast_conv_backward_weight(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                                   const void *dy, void *dw)
{
    conv_job j;
    wgrad_job w;
    out_run *runs;
    size_t cols_bytes;
    int threads = amp_get_threads();

    memset(&j, 0, sizeof j);
    j.g = conv_geometry_of(d);
    j.M = d->out_channels / d->groups;
    j.K = d->in_channels / d->groups * j.g.kernel_plane;
    j.P = j.g.out_plane;
    if (j.M <= 0 || j.K <= 0)
        return;
    /* No products to sum (or a dtype the GEMM does not take): the
     * reference, which writes the zeros. */
    if (d->batch <= 0 || j.P <= 0 || (t != AMP_F32 && t != AMP_BF16 && t != AMP_F16)) {
        reference_conv_backward_weight(t, d, x, dy, dw);
        return;
    }
    j.t = t;
    j.es = amp_dtype_size(t);
    j.d = d;
    cols_bytes = (size_t)(d->batch * j.K * j.P) * j.es;
    w.cols = malloc(cols_bytes);
    runs = malloc((size_t)j.P * sizeof *runs);
    if (w.cols == NULL || runs == NULL) { /* the reference needs no memory */
        free(w.cols);
        free(runs);
        reference_conv_backward_weight(t, d, x, dy, dw);
        return;
    }
    w.j = &j;
    w.x = x;
    w.runs = runs;
    w.nruns = output_runs(&j.g, 0, j.P, runs);
    if ((double)cols_bytes < PARALLEL_MIN_FLOPS / 8) /* a small im2col: not worth waking the pool */
        threads = 1;
    for (int64_t grp = 0; grp < d->groups; grp++) {
        amp_gemm_desc gd;
        w.xgroup = (const char *)x + (size_t)(grp * (d->in_channels / d->groups) * j.g.in_plane) * j.es;
        amp_parallel_run(threads, d->batch, wgrad_im2col_task, &w);
        memset(&gd, 0, sizeof gd);
        gd.batch = d->batch;
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
        amp_fast_gemm(k, t, &gd, (const char *)dy + (size_t)(grp * j.M * j.P) * j.es, w.cols, NULL, NULL,
                      (char *)dw + (size_t)(grp * j.M * j.K) * j.es);
    }
    free(runs);
    free(w.cols);
}

/* ---- conv_transpose ----------------------------------------------------------
 *
 * y[n, co, o] = bias[co] + sum over ci of the group and taps k of
 * x[n, ci, i] w[ci, co - group start, k], over the (i, k) with
 * i stride - padding + k dilation = o.  Per image and group:
 *
 *   1. col[(co', k), i] = sum over ci of w[ci, co', k] x[n, ci, i]: one
 *      GEMM (A = w read transposed, B = x as stored), left in f32;
 *   2. col2im, as a gather so that each output is one sum rounded once:
 *      y[n, co, o] = sum over k (in order) of col[(co', k), i(o, k)], plus
 *      the bias after the sum, as the reference adds it.  Which input i a
 *      tap k of output o reads is tabulated per spatial dim (-1: none).
 *
 * The f32 col is malloc'ed per call: out_channels/groups x kernel taps x
 * input positions. */

typedef struct {
    const conv_job *j;
    const float *col;
    const int64_t *tab[3]; /* tab[i][o * kernel[i] + k]: the input index, or -1 */
    float *acc;            /* out[2] floats per pool slot */
    char *ybase;           /* y of (image, group) */
    const char *bias;      /* bias of the group, or NULL */
} col2im_job;

static void col2im_task(void *ctx, int64_t co, int slot)
{
    const col2im_job *c = ctx;
    const conv_job *j = c->j;
    const conv_geometry *g = &j->g;
    const int64_t kplane = g->kernel_plane, in12 = g->in[1] * g->in[2];
    float *acc = c->acc + slot * g->out[2];
    char *y = c->ybase + (size_t)(co * j->P) * j->es;
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
                        const float *row = c->col + (size_t)((co * kplane + kp) * g->in_plane + id * in12 + ih * g->in[2]);
                        const int64_t *tw = c->tab[2] + kw;
                        for (int64_t ow = 0; ow < g->out[2]; ow++) {
                            const int64_t iw = tw[ow * g->kernel[2]];
                            if (iw >= 0)
                                acc[ow] += row[iw];
                        }
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

void amp_fast_conv_transpose(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                             const void *w, const void *bias, void *y)
{
    conv_job j;
    col2im_job c;
    int64_t in_g, tab_len = 0, *tabs;
    float *col, *acc;
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
    j.t = t;
    j.es = amp_dtype_size(t);
    j.d = d;
    for (int i = 0; i < 3; i++)
        tab_len += j.g.out[i] * j.g.kernel[i];
    col = malloc((size_t)(j.M * j.g.kernel_plane * j.g.in_plane) * sizeof *col);
    tabs = malloc((size_t)tab_len * sizeof *tabs);
    acc = malloc((size_t)(AMP_MAX_THREADS * j.g.out[2]) * sizeof *acc);
    if (col == NULL || tabs == NULL || acc == NULL) { /* the reference needs no memory */
        free(col);
        free(tabs);
        free(acc);
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
    if (2.0 * (double)(j.M * j.g.kernel_plane) * (double)in_g * (double)j.g.in_plane < PARALLEL_MIN_FLOPS)
        threads = 1;
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t grp = 0; grp < d->groups; grp++) {
            amp_gemm_desc gd;
            memset(&gd, 0, sizeof gd);
            gd.batch = 1;
            gd.M = j.M * j.g.kernel_plane;
            gd.N = j.g.in_plane;
            gd.K = in_g;
            gd.a_stride[1] = 1;
            gd.a_stride[2] = gd.M;
            gd.b_stride[1] = j.g.in_plane;
            gd.b_stride[2] = 1;
            gd.alpha = 1.0;
            amp_fast_gemm_f32(k, t, &gd, (const char *)w + (size_t)(grp * in_g * gd.M) * j.es,
                              (const char *)x + (size_t)((n * d->in_channels + grp * in_g) * j.g.in_plane) * j.es,
                              col);
            c.ybase = (char *)y + (size_t)((n * d->out_channels + grp * j.M) * j.P) * j.es;
            c.bias = bias != NULL ? (const char *)bias + (size_t)(grp * j.M) * j.es : NULL;
            amp_parallel_run(threads, j.M, col2im_task, &c);
        }
    free(col);
    free(tabs);
    free(acc);
}
