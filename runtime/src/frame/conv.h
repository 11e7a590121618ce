/*
 * conv.h - what the convolution drivers share: the job a convolution is
 * planned into (conv_job), the per-slot buffers of its tasks, small
 * helpers, and the functions one algorithm's file calls in another's.
 *
 * One algorithm per file, all plain C on the GEMM micro-kernels (the
 * amp_gemm_kernel contract in amprt_internal.h):
 *
 *   conv.c                   conv and conv_ex: planning, weight packing
 *                            (A panels), the tasks, packed weights
 *   conv_pack.c              B panels from x: output runs, im2col rows,
 *                            tap tables, zero-padded row copies
 *   conv_taps.c              taps mode: stride-1 bf16 tasks packing no B
 *   conv_depthwise.c         depthwise convolutions, direct (dw_taps)
 *   conv_winograd.c          3 x 3 stride 1, 2-byte storage: Winograd
 *                            F(4 x 4, 3 x 3) on the f32 micro-kernel
 *   conv_post.c              conv_ex's post-ops on a tile's rows
 *   conv_wgrad.c             conv_backward_weight: entry points, and the
 *                            im2col GEMMs
 *   conv_wgrad_direct.c      the direct weight gradient (pack_b_trows)
 *   conv_wgrad_depthwise.c   the depthwise weight gradient, as dot products of rows
 *   conv_transpose.c         conv_transpose: stride 1 as a convolution,
 *                            else GEMM and col2im
 *   conv_transpose_phases.c  stride > 1: one convolution per output phase
 *
 * The names the files share are hidden: the shared library exports none
 * of them, and its calls to them and the buffers' addresses need no GOT
 * entry.
 */
#ifndef AMPRT_FRAME_CONV_H
#define AMPRT_FRAME_CONV_H

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h> /* im2col_copy_stride2_16 */
#elif defined(__aarch64__)
#include <arm_neon.h> /* im2col_copy_stride2_16 */
#endif

#include "amprt_internal.h"
#include "kernel_set.h"
#include "ref/ref_window.h"

#pragma GCC visibility push(hidden)

#define ALIGN64 __attribute__((aligned(64)))

/* Columns per task at most (a multiple of every kernel's nr): with
 * AMP_GEMM_KCU_MAX units of k, the im2col block, the packed B block and the
 * accumulator stay within L2. */
#define NB_MAX AMP_IM2COL_COLS_MAX

/* Per pool slot (defined in conv.c): the f32 accumulator block; a packed
 * B block; the im2col rows of one k block (kc <= kcu x kpair rows of up to
 * 4-byte elements: f32 kc <= KCU_MAX, 4 bytes; bf16 pairs kc <= 2 KCU_MAX,
 * 2 bytes); one row's bias replicated across a strip (the epilogue adds
 * bias[j]). */
extern float amp_conv_w_buf[AMP_MAX_THREADS][AMP_GEMM_MB_MAX * NB_MAX] ALIGN64;
extern uint32_t amp_conv_b_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * NB_MAX] ALIGN64;
extern unsigned char amp_conv_col_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * 4 * NB_MAX] ALIGN64;
extern unsigned char amp_conv_bias_buf[AMP_MAX_THREADS][NB_MAX * 4] ALIGN64;

/* The zero-padded input rows of a task (pack_b_rows, taps mode, the
 * direct weight gradient), channels x rows x pad_w elements of 2 bytes,
 * and a slack the packing may read past them. */
#define PAD_BUF_BYTES ((size_t)512 * 1024)
#define PAD_SLACK_ELEMS 64
extern unsigned char amp_conv_pad_buf[AMP_MAX_THREADS][PAD_BUF_BYTES + 2 * PAD_SLACK_ELEMS] ALIGN64;

/* Columns per task at most in taps mode (conv_job.taps). */
#define TAPS_NB_MAX 2048

/* Below this many flops a single thread is faster than waking the pool. */
#define PARALLEL_MIN_FLOPS (4.0 * 1024 * 1024)

/* Before a loop over a constant number of lanes with no dependence
 * between iterations, so that GCC vectorizes it at -O2 without checking
 * for overlap (conv_winograd.c, conv_wgrad_depthwise.c).  Nothing for
 * clang, whose vectorizer takes such loops by itself and whose
 * "vectorize(enable)" is an error where it cannot (-O1 under the
 * sanitizers). */
#if defined(__clang__)
#define LANE_LOOP
#else
#define LANE_LOOP _Pragma("GCC ivdep")
#endif

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t round_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

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
     * is a plain copy) rather than through im2col rows in amp_conv_col_buf. */
    int im2col_pack;
    /* With im2col_pack, whether each task first copies the input rows its
     * columns read, zero-padded, into amp_conv_pad_buf and packs from that copy
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
     * beforehand (amp_conv_fullpack_task): (image, group, column chunk)'s cdiv(K,
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
static inline int64_t a_block_offset(const conv_job *j, int64_t kb)
{
    return kb * j->k->kcu * j->panels * j->k->mr;
}

/* Input rows (of a channel) that columns spanning out_rows output rows
 * read: the padded copy's rows. */
static inline int64_t pad_rows_of(const conv_geometry *g, int64_t out_rows)
{
    return (out_rows - 1) * g->stride[1] + (g->kernel[1] - 1) * g->dilation[1] + 1;
}

static inline int fast_dtype(amp_dtype t) { return t == AMP_F32 || t == AMP_BF16 || t == AMP_F16; }

/* Element i of an array of es-byte elements, or NULL. */
static inline const void *at(const void *base, size_t es, int64_t i)
{
    return base != NULL ? (const char *)base + (size_t)i * es : NULL;
}

/* n copies of the es-byte element at e into dst (the bias of a row,
 * replicated for the epilogue): typed stores, not n calls of memcpy with
 * a size unknown at compile time, which made a biased convolution's
 * epilogue 2.5 times slower than its products. */
static inline void fill_elems(void *dst, const void *e, size_t es, int64_t n)
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

/* dst[q] = src[2 q] for q < n, of 2-byte elements (src[2 n - 2] is the
 * last one read).  With SSE2 (every x86-64), 8 at a time: the even
 * elements of 16 sign-extended in their 32-bit lanes and packed back,
 * which the signed saturation leaves exact (the resnet18 stem's weight
 * gradient copies 15 million of them per step).  On aarch64 the same 8
 * by one de-interleaving load (LD2). */
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
#elif defined(__aarch64__)
    for (; q + 9 <= n; q += 8) /* the same reads */
        vst1q_u16(o + q, vld2q_u16(x + 2 * q).val[0]);
#endif
    for (; q < n; q++)
        o[q] = x[2 * q];
}

/* A task's runs as the im2col-pack reads them: per run the input
 * position of its first output at kernel position 0 (stride and padding
 * applied; the taps add their dilated offsets). */
typedef struct {
    int64_t id, ih, iw;
} run_origin;

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

/* Where the weight gradient goes: dw in t; or, with dw32 set, f32 elements,
 * each sum rounded to t as for dw and then widened, stored or (accumulate)
 * added (amp_conv_backward_weight_to_f32_<t>). */
typedef struct {
    void *dw;
    float *dw32;
    int accumulate;
} wgrad_out;

/* ---- conv.c ---- */
/* amp_fast_conv_ex, or with flip (transpose_by_conv; packed and post
 * NULL, t a fast dtype, K > 0) w read as conv_job.flip says; returns 0,
 * having done nothing, where flipped weights find no memory to pack into. */
int amp_conv_run(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                 int flip, const void *packed, const void *bias, const amp_conv_post *post, void *y);

/* conv_ex's post-ops of j (post not NULL): j->post, post_fn, bn_first,
 * out and each channel's parameters (returned, to be freed; NULL without
 * memory). */
amp_conv_post_row *amp_conv_setup_post(conv_job *j, const amp_conv_post *post);

/* ---- conv_depthwise.c: one input channel per group, direct ---- */
/* Whether conv and conv_ex of t take the direct path with k (from the
 * shape alone, so that packing and running agree). */
int amp_conv_depthwise_applies(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d);
size_t amp_conv_depthwise_packed_bytes(const amp_conv_desc *d);
void amp_conv_depthwise_pack(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, amp_dtype src,
                             const void *w, void *packed);
/* amp_conv_run's contract (flip: w holds transpose_by_conv's weights);
 * returns 0, having done nothing, where w (packed NULL) finds no memory
 * to be widened into. */
int amp_conv_depthwise_run(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                           const void *w, int flip, const void *packed, const void *bias, const amp_conv_post *post,
                           void *y);

/* ---- conv_winograd.c: 3 x 3 stride 1 by F(4 x 4, 3 x 3), 2-byte storage ---- */
/* Whether conv and conv_ex of t take it with k (the direct plan's kernel),
 * from the shape alone; amp_conv_winograd_policy pins it. */
int amp_conv_winograd_applies(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d);
/* amp_conv_run's work for j (planned, x, bias, y and out set; j->pa the
 * packed panels when packed is not NULL, else w the weights, flip as
 * amp_conv_run's); returns 0, having done nothing, without memory. */
int amp_conv_winograd_run(conv_job *j, const void *w, int flip, const void *packed, const amp_conv_post *post);

/* ---- conv_pack.c: B panels from x ---- */
int64_t amp_conv_output_runs(const conv_geometry *g, int64_t p0, int64_t n, out_run *runs);
void amp_conv_pad_copy(const conv_job *j, const char *ximg, int64_t cin, int64_t oh0, int64_t rows, char *pad);
void amp_conv_pack_cols_init(const conv_job *j, const char *ximg, int64_t p0, int64_t nlen, int slot,
                             pack_cols *pc);
void amp_conv_pack_b_block(const conv_job *j, const char *ximg, int64_t kb, pack_cols *pc, uint32_t *pb);
uint32_t *amp_conv_fullpack_chunk(const conv_job *j, int64_t n, int64_t grp, int64_t nc);
void amp_conv_fullpack_task(void *ctx, int64_t task, int slot);
void amp_conv_im2col_row16(const conv_geometry *g, const char *xc, int64_t kd, int64_t kh, int64_t kw,
                           const out_run *runs, int64_t nruns, char *dst);
void amp_conv_im2col_row32(const conv_geometry *g, const char *xc, int64_t kd, int64_t kh, int64_t kw,
                           const out_run *runs, int64_t nruns, char *dst);
void amp_conv_full_im2col_task(void *ctx, int64_t task, int slot);

/* ---- conv_post.c: conv_ex's post-ops ---- */
void amp_conv_post_generic(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr,
                           const void *residual, const void *src, void *y, int64_t ld);
void amp_conv_post_row_of(const amp_conv_post *post, amp_dtype t, int bn_first, int64_t co, amp_conv_post_row *p);
void amp_conv_run_post(const conv_job *j, int64_t co, int64_t rows, size_t yoff, int64_t n);

/* Whether post asks for nothing (NULL, or every step off): conv_ex is then conv. */
static inline int amp_conv_post_empty(const amp_conv_post *post)
{
    return post == NULL || (post->bn_mean == NULL && post->residual == NULL && !post->relu && !post->clamp &&
                            post->raw == NULL);
}

/* ---- conv_taps.c: taps mode ---- */
void amp_conv_taps_task(void *ctx, int64_t task, int slot);

/* ---- conv_wgrad.c, conv_wgrad_direct.c, conv_wgrad_depthwise.c: the weight gradient ---- */
void amp_conv_widen_into(amp_dtype t, size_t n, const void *low, float *dw32, int accumulate);
/* n sums at acc, rounded to t by k's epilogue, into o at element at (t is
 * 2 bytes wide where o->dw32 is set). */
void amp_conv_wgrad_store(const amp_gemm_kernel *k, amp_dtype t, const wgrad_out *o, int64_t at, int64_t n,
                          const float *acc);
/* The depthwise weight gradient, directly (conv_wgrad_depthwise.c); returns
 * 0, having done nothing, for another shape or without memory. */
int amp_conv_wgrad_depthwise(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                             const void *dy, const wgrad_out *out, int threads);
int amp_conv_wgrad_direct(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                          const void *dy, const wgrad_out *out, int threads);

/* ---- conv_transpose_phases.c ---- */
int amp_conv_transpose_by_phases(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                                 const void *w, const void *bias, void *y);

#pragma GCC visibility pop

#endif /* AMPRT_FRAME_CONV_H */
