/*
 * conv_winograd.c - 3 x 3 stride-1 convolutions of 2-byte storage by
 * Winograd's minimal filtering F(4 x 4, 3 x 3) (Lavin and Gray, "Fast
 * Algorithms for Convolutional Neural Networks", 2016), in f32 on the
 * set's f32 micro-kernel (the convolution's own where it multiplies in
 * f32, else the one its `winograd` field names).
 *
 * The output planes are cut into 4 x 4 tiles, numbered across the batch.
 * For every (output, input) channel pair a tile's 16 outputs take 36
 * products of transformed values instead of the direct 144:
 *
 *   V = B' d B   each input channel's 6 x 6 block d under the tile
 *   U = G g G'   each 3 x 3 kernel g, once per call, straight into A panels
 *   M = U V      per point xi of the 36: [cout x cin] by [cin x tiles], on
 *                the micro-kernel, with V written as its B panels
 *   y = A' M A   the tile's 4 x 4 outputs, plus the bias, rounded to t by
 *                the set's epi
 *
 * All in f32.  The transforms' roundings (their coefficients reach 5 and
 * 8, so the error is some tens of f32 units of the terms' magnitudes)
 * stay far below one unit of bf16 or f16, the storage this path takes;
 * f32 convolutions keep the direct sums, whose error is the f32 users
 * expect.  The results are not the direct path's bits, so conv, conv_ex
 * (with packed weights or not) and the transposed convolution that is a
 * convolution take this path for the same shapes alike (amp_conv_run
 * decides from the shape), and conv_ex stays bit for bit conv.
 *
 * Work is cut into blocks of tiles (one task each, and the output
 * channels into chunks where there are few blocks); a task transforms its
 * block's input once into per-slot scratch, then per block of up to 96
 * output channels runs the 36 products into an f32 buffer and transforms
 * them back.
 */
#include <assert.h>

#include "conv.h"

#pragma GCC visibility push(hidden)

#define TILE 4     /* outputs per tile side */
#define BLOCK 6    /* input block side: TILE + 3 - 1 */
#define POINTS 36  /* transformed points, BLOCK x BLOCK */
#define LANES_MAX 128 /* tiles per block at most */

/* Where the 3 x 3 kernels come from: the weight tensor (in wt, rounded to
 * t first as the direct path rounds it), a transposed convolution's
 * weights (flip: [cin][cout][9], taps reversed), or the direct path's
 * packed A panels (conv_ex's packed weights, read back). */
typedef struct {
    const conv_job *j; /* the direct plan (the packed panels' layout) */
    const char *w;
    amp_dtype wt;
    int flip;
    const uint32_t *pa;
} kernel_source;

typedef struct {
    const amp_gemm_kernel *k; /* kpair 1: f32 A and B panels */
    const conv_job *j;        /* the direct plan: t, shapes, post-ops, y */
    kernel_source src;
    int64_t cin, cout, in_h, in_w, out_h, out_w, pad_h, pad_w;
    int64_t th, tw, tiles; /* tiles per column and row of a plane; all */
    int64_t tb, blocks;    /* tiles per block (a multiple of nr); blocks */
    int64_t co_chunk, co_chunks, mb; /* output channels per task, per product block */
    int64_t kcu, nkb, mpanels;       /* U's k blocks and row panels */
    int64_t u_point;                 /* floats of U per point */
    float *u;
    float *work; /* per slot: V, M, the outputs and one output row */
    size_t work_floats;
} wino_job;

static int64_t winograd_taken;

int64_t amp_fast_conv_winograd_taken(void)
{
    return __atomic_load_n(&winograd_taken, __ATOMIC_RELAXED);
}

static int winograd_policy; /* amp_conv_winograd_policy */

void amp_conv_winograd_policy(int policy)
{
    __atomic_store_n(&winograd_policy, policy, __ATOMIC_RELAXED);
}

/* ---- the transforms (F(4 x 4, 3 x 3): B', G and A' of Lavin and Gray) ---- */

/* Lanes the transforms run side by side: tiles (a block's lanes come in
 * chunks of LANES, nr being a multiple of it) or a panel's rows (ROWS).
 * A constant, so that the loops vectorize. */
#define LANES 16

/* The length of each column phase of a widened input row of tw tiles:
 * tile q reads phases 0-3 at q and 0-1 at q + 1, and a chunk of LANES
 * tiles reads up to the next multiple of LANES. */
#define WINO_PHASE_LEN(tw) (round_up(tw, LANES) + LANES)

/* Input channels per pass of weights_task (its buffers' size). */
#define WEIGHT_CHANNELS 32

/* ---- the weights: U in A panels ----------------------------------------- */

#define ROWS AMP_GEMM_MR_MAX /* a row panel's lanes (mr of them used) */

/* The 3 x 3 kernels of row panel pm's output channels and input channels
 * [ci0, ci0 + n), as f32: g[(ci - ci0) 9 + tap][row], rows past cout 0. */
static void panel_taps(const wino_job *wj, int64_t pm, int64_t ci0, int64_t n, float (*g)[ROWS])
{
    const kernel_source *s = &wj->src;
    const conv_job *j = wj->j;
    const int64_t mr = wj->k->mr, co0 = pm * mr, rows = min64(mr, wj->cout - co0);
    memset(g, 0, (size_t)(n * 9) * sizeof *g);
    if (s->pa != NULL) {
        /* unit kk / kpair of the panel's rows in k block kk / kstep (conv.c's
         * pack_weights_task, which packed them with the direct plan's
         * kernel): f32 for kpair 1, else t's two halves */
        const amp_gemm_kernel *pk = j->k;
        const int64_t pmr = pk->mr, kpair = pk->kpair;
        /* each row's packed row panel and row in it, once (not per tap) */
        int64_t panel_of[ROWS], row_in[ROWS];
        for (int64_t i = 0; i < rows; i++) {
            panel_of[i] = (co0 + i) / pmr;
            row_in[i] = (co0 + i) % pmr;
        }
        int64_t kk = ci0 * 9, kb = kk / j->kstep, kin = kk % j->kstep;
        int64_t block = a_block_offset(j, kb), kcu_b = cdiv(min64(j->kstep, j->K - kb * j->kstep), kpair);
        for (int64_t e = 0; e < n * 9; e++, kk++, kin++) {
            if (kin == j->kstep) {
                kb++;
                kin = 0;
                block = a_block_offset(j, kb);
                kcu_b = cdiv(min64(j->kstep, j->K - kb * j->kstep), kpair);
            }
            const int64_t unit0 = block + kin / kpair * pmr;
            if (kpair == 1)
                for (int64_t i = 0; i < rows; i++)
                    memcpy(&g[e][i], &s->pa[unit0 + panel_of[i] * kcu_b * pmr + row_in[i]], 4);
            else /* k even in the low half: the first 2 bytes (little-endian x86-64, aarch64) */
                for (int64_t i = 0; i < rows; i++)
                    g[e][i] = amp_ld(j->t, s->pa, 2 * (unit0 + panel_of[i] * kcu_b * pmr + row_in[i]) + kin % 2);
        }
    } else if (s->flip) {
        /* [cin][cout][9], the taps reversed */
        const uint16_t *w = (const uint16_t *)(const void *)s->w;
        for (int64_t c = 0; c < n; c++)
            for (int64_t i = 0; i < rows; i++)
                for (int tap = 0; tap < 9; tap++)
                    g[c * 9 + tap][i] = amp_ld(j->t, w, ((ci0 + c) * wj->cout + co0 + i) * 9 + 8 - tap);
    } else if (s->wt == j->t) {
        const uint16_t *w = (const uint16_t *)(const void *)s->w;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t e = 0; e < n * 9; e++)
                g[e][i] = amp_ld(j->t, w, ((co0 + i) * wj->cin + ci0) * 9 + e);
    } else {
        /* f32 weights: rounded to t element for element as amp_cast_f32_<t> */
        const float *w = (const float *)(const void *)s->w;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t e = 0; e < n * 9; e++) {
                const float v = w[((co0 + i) * wj->cin + ci0) * 9 + e];
                g[e][i] = j->t == AMP_BF16 ? amp_bf16_to_f32(amp_f32_to_bf16(v)) : amp_f16_to_f32(amp_f32_to_f16(v));
            }
    }
}

/* ---- the input: V in B panels ------------------------------------------- */

/* The image, tile row and first tile column of a run of tiles that lie in
 * one tile row, and the lane of its first tile. */
typedef struct {
    int64_t n, ty, tx0, len, lane;
} tile_run;

/* The runs of tiles [t0, t0 + count), in lane order; returns their number. */
static int64_t tile_runs(const wino_job *wj, int64_t t0, int64_t count, tile_run *runs)
{
    int64_t nruns = 0, lane = 0;
    while (lane < count) {
        const int64_t tile = t0 + lane, plane = wj->th * wj->tw;
        tile_run *r = &runs[nruns++];
        r->n = tile / plane;
        r->ty = tile % plane / wj->tw;
        r->tx0 = tile % wj->tw;
        r->len = min64(wj->tw - r->tx0, count - lane);
        r->lane = lane;
        lane += r->len;
    }
    return nruns;
}

/* ---- the products and the output ---------------------------------------- */

/* The hot half, in the baseline instruction set and, on x86-64, in AVX2
 * (every kpair-1 kernel there belongs to a set that requires it). */
#define WINO(name) name##_base
#define WINO_TARGET
#include "winograd_form.h"
#undef WINO
#undef WINO_TARGET
#if defined(__x86_64__)
#define WINO(name) name##_avx2
#define WINO_TARGET __attribute__((target("avx2")))
#include "winograd_form.h"
#undef WINO
#undef WINO_TARGET
#endif

/* conv_ex's post-ops over a finished output: one task per image and row
 * panel of channels. */
static void post_task(void *ctx, int64_t task, int slot)
{
    const wino_job *wj = ctx;
    const int64_t panels = cdiv(wj->cout, AMP_GEMM_MR_MAX), n = task / panels, co = task % panels * AMP_GEMM_MR_MAX;
    (void)slot;
    amp_conv_run_post(wj->j, co, min64(AMP_GEMM_MR_MAX, wj->cout - co),
                      (size_t)((n * wj->cout + co) * wj->j->P), wj->j->P);
}

/* ---- planning ------------------------------------------------------------- */

int amp_conv_winograd_applies(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d)
{
    const int policy = __atomic_load_n(&winograd_policy, __ATOMIC_RELAXED);
    const amp_gemm_kernel *wk = k->kpair == 1 ? k : k->winograd;
    if (policy < 0 || wk == NULL || wk->kpair != 1 || wk->nr % LANES != 0 || (t != AMP_BF16 && t != AMP_F16) ||
        d->nspatial != 2 || d->groups != 1)
        return 0;
    for (int i = 0; i < 2; i++)
        if (d->kernel[i] != 3 || d->stride[i] != 1 || d->dilation[i] != 1 ||
            d->out_size[i] < 1)
            return 0;
    if (d->batch <= 0 || d->in_channels <= 0 || d->out_channels <= 0)
        return 0;
    if (policy > 0)
        return 1;
    /* Its cost against the direct sums', both in multiply-adds per
     * (output, input) channel pair: 36 per tile of every lane the panels
     * hold, the input's transform (about 40 cycles per tile and input
     * channel, at 16 multiply-adds a cycle, shared by the output
     * channels), the output's (about 30 per tile and output channel,
     * shared by the input channels) and the weights' (about 150 cycles per
     * pair: 36 points written and read back).  Measured on the avx2 set:
     * 8 x 64 x 56 x 56 1.9x faster, 8 x 256 x 14 x 14 1.7x, 8 x 512 x 7 x 7
     * and 1 x 256 x 14 x 14 slower (the weights). */
    if (d->in_channels < 16 || d->out_channels < 16)
        return 0;
    const double tiles = (double)d->batch * (double)cdiv(d->out_size[0], TILE) * (double)cdiv(d->out_size[1], TILE);
    const double lanes = (double)round_up((int64_t)tiles, wk->nr);
    const double wino = lanes * (36.0 + 640.0 / (double)d->out_channels + 480.0 / (double)d->in_channels) + 2400.0;
    /* (a kpair-2 kernel's products, bf16 pairs, run at twice the f32 rate) */
    const double direct =
        9.0 * (double)d->batch * (double)d->out_size[0] * (double)d->out_size[1] / (double)k->kpair;
    return wino < 0.8 * direct;
}

int amp_conv_winograd_run(conv_job *j, const void *w, int flip, const void *packed, const amp_conv_post *post)
{
    const amp_conv_desc *d = j->d;
    /* the f32 kernel of the direct plan's (U is packed here, not by conv.c) */
    const amp_gemm_kernel *k = j->k->kpair == 1 ? j->k : j->k->winograd;
    wino_job wj;
    int threads = amp_get_threads();
    amp_conv_post_row *rows_own = NULL;

    memset(&wj, 0, sizeof wj);
    wj.k = k;
    wj.j = j;
    wj.src.j = j;
    wj.src.w = w;
    wj.src.wt = j->wt;
    wj.src.flip = flip;
    wj.src.pa = packed != NULL ? j->pa : NULL;
    wj.cin = d->in_channels;
    wj.cout = d->out_channels;
    wj.in_h = d->in_size[0];
    wj.in_w = d->in_size[1];
    wj.out_h = d->out_size[0];
    wj.out_w = d->out_size[1];
    wj.pad_h = d->padding[0];
    wj.pad_w = d->padding[1];
    wj.th = cdiv(wj.out_h, TILE);
    wj.tw = cdiv(wj.out_w, TILE);
    wj.tiles = d->batch * wj.th * wj.tw;
    /* 64 tiles a block (2 to 4 panels), fewer for a smaller problem */
    wj.tb = min64(round_up(64, k->nr), round_up(wj.tiles, k->nr));
    if (wj.tb > LANES_MAX)
        wj.tb = LANES_MAX / k->nr * k->nr;
    wj.blocks = cdiv(wj.tiles, wj.tb);
    /* output channels per product block: as few blocks as keep each
     * within 96 rows, of equal size (each block reads the whole V) */
    wj.mb = round_up(cdiv(wj.cout, cdiv(wj.cout, 96)), k->mr);
    wj.co_chunks = 1;
    while (threads > 1 && wj.blocks * wj.co_chunks < 2 * threads && wj.co_chunks * wj.mb < wj.cout)
        wj.co_chunks *= 2;
    wj.co_chunk = round_up(cdiv(wj.cout, wj.co_chunks), k->mr);
    wj.co_chunks = cdiv(wj.cout, wj.co_chunk);
    if (wj.co_chunk < wj.mb)
        wj.mb = wj.co_chunk;
    wj.kcu = k->kcu;
    wj.nkb = cdiv(wj.cin, wj.kcu);
    wj.mpanels = cdiv(wj.cout, k->mr);
    wj.u_point = wj.cin * wj.mpanels * k->mr;
    {
        const size_t tb = (size_t)wj.tb;
        const size_t in_scratch = TILE * (size_t)WINO_PHASE_LEN(wj.tw) + POINTS * (tb + LANES);
        const size_t out_scratch = (TILE * BLOCK + TILE * TILE + TILE) * tb;
        size_t floats = (size_t)POINTS * (size_t)wj.cin * tb + (size_t)POINTS * (size_t)wj.mb * tb +
                        (size_t)round_up((int64_t)(in_scratch > out_scratch ? in_scratch : out_scratch), 16);
        /* V, M, the larger scratch, each a multiple of 16 floats (64
         * bytes); at least weights_task's buffer */
        const size_t weight_floats = (size_t)POINTS * WEIGHT_CHANNELS * ROWS;
        wj.work_floats = floats > weight_floats ? floats : weight_floats;
    }
    if (wj.blocks * wj.co_chunks < 2)
        threads = 1;
    wj.u = amp_scratch_alloc((size_t)POINTS * (size_t)wj.u_point * sizeof(float));
    wj.work = wj.u != NULL ? amp_scratch_alloc((size_t)threads * wj.work_floats * sizeof(float)) : NULL;
    if (wj.work == NULL) {
        amp_scratch_free(wj.u);
        return 0; /* the direct path then */
    }
    if (post != NULL)
        rows_own = amp_conv_setup_post(j, post);
    void (*weights_fn)(void *, int64_t, int) = weights_task_base, (*block_fn)(void *, int64_t, int) = block_task_base;
#if defined(__x86_64__)
    if (amp_cpu_features() & AMP_CPU_AVX2) {
        weights_fn = weights_task_avx2;
        block_fn = block_task_avx2;
    }
#endif
    amp_parallel_run(threads > (int)wj.mpanels ? (int)wj.mpanels : threads, wj.mpanels, weights_fn, &wj);
    amp_parallel_run(threads, wj.blocks * wj.co_chunks, block_fn, &wj);
    if (post != NULL)
        amp_parallel_run(threads, d->batch * cdiv(wj.cout, AMP_GEMM_MR_MAX), post_task, &wj);
    __atomic_fetch_add(&winograd_taken, 1, __ATOMIC_RELAXED);
    amp_scratch_free(rows_own);
    amp_scratch_free(wj.work);
    amp_scratch_free(wj.u);
    return 1;
}

#pragma GCC visibility pop
