/*
 * conv_wgrad.c - conv_backward_weight of the optimized kernel sets (and
 * its f32 form, conv_backward_weight_to_f32): the entry points, which take
 * the depthwise path (conv_wgrad_depthwise.c) or the direct path
 * (conv_wgrad_direct.c) where they apply, and the im2col GEMMs otherwise.
 *
 * dw[co, k] = sum over images n and output positions p of dy[n, co, p]
 * col_n[k, p]: per group one GEMM summed over the images (amp_gemm_desc's
 * sum_batch), A = the group's rows of dy ([M][P] per image, as stored),
 * B = col_n transposed (read with strides, no copy), every element of dw
 * summed in f32 over all n and p and rounded once; for planes smaller
 * than a k block and kernels of more than one tap, one GEMM with K =
 * images x positions instead (A = dy's rows copied so that each channel's
 * positions of every image follow one another, B = the im2col matrices
 * side by side in each row).  The im2col matrices of all images of a
 * group are built first (on the pool, in tasks of WGRAD_ROWS rows) in one
 * scratch buffer.  When they are large (over WGRAD_CHUNK_MIN_TOTAL bytes:
 * a network's first layers), the images go in chunks of about
 * WGRAD_CHUNK_BYTES of im2col instead, so that the GEMM packs a chunk's
 * matrices from cache rather than memory: each chunk's product left in
 * f32 (amp_fast_gemm_f32), the chunks' products added in image order, and
 * the total rounded to t once (a summation order of its own; tolerance,
 * as the GEMM's block sums).
 */
#include <string.h>

#include "conv.h"


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
            amp_conv_im2col_row16(&j->g, xc, kd, kh, kp % j->g.kernel[2], w->runs, w->nruns,
                         col + (size_t)(kg * w->row_stride) * es);
        else
            amp_conv_im2col_row32(&j->g, xc, kd, kh, kp % j->g.kernel[2], w->runs, w->nruns,
                         col + (size_t)(kg * w->row_stride) * es);
    }
}

/* n t elements at low, widened into dw32 (stored or added) by the set's
 * own cast and grad_accumulate (the public calls dispatch to it). */
void amp_conv_widen_into(amp_dtype t, size_t n, const void *low, float *dw32, int accumulate)
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
    if (amp_conv_wgrad_depthwise(k, t, d, x, dy, o, wgrad_threads(d)))
        return;
    if (amp_conv_wgrad_direct(k, t, d, x, dy, o, wgrad_threads(d)))
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
    amp_conv_widen_into(t, (size_t)(d->groups * M * K), low, o->dw32, o->accumulate);
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
    w.nruns = amp_conv_output_runs(&j.g, 0, j.P, runs);
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
