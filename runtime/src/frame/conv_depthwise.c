/*
 * conv_depthwise.c - depthwise convolutions (one input channel per group,
 * up to DW_M_MAX output channels each: mobilenet_v2's, mnasnet's and
 * efficientnet's 3 x 3 and 5 x 5 layers) and, for f32 storage, grouped
 * ones of up to DW_CIN_F32_MAX input channels per group (resnext's first
 * stages), 1-d and 2-d, computed directly on the set's dw_taps vector
 * loop (amprt_internal.h) instead of as one GEMM per group whose single
 * row fills 1 of the micro-kernel's 12.
 *
 * Tasks are (image, group, band of output rows); each copies the input
 * rows its band reads (of each of the group's channels, one after
 * another), widened to f32 and zero-padded, into its slot's
 * amp_conv_pad_buf, split by phase: with strides sh x sw, copy row i of
 * phase (vp, hp) is padded input row (oh0 + i) sh + vp, its column j the
 * padded input column j sw + hp.  Tap (kh, kw) of output (oh, ow) is then
 * element (oh - oh0 + kh dh / sh, ow + kw dw / sw) of phase (kh dh % sh,
 * kw dw % sw): every tap is one contiguous run, at a fixed offset, for
 * all the band's outputs taken as one flat row of (rows - 1) pw + out_w
 * columns (pw, the copy's row length, is out_w plus the taps' reach; the
 * pw - out_w columns past each output row are computed and dropped), so a
 * 7 x 7 plane is one run of 63 columns rather than seven of 7.  dw_taps
 * sums each column's taps into an f32 row in amp_conv_w_buf, the rows are
 * closed up, and the set's epi adds the bias and rounds to the storage
 * dtype, followed by conv_ex's post-ops (conv_post.c) while they are in L1.
 *
 * Rows longer than DW_ACC_MAX outputs are cut into column segments; where
 * even one output's copy would not fit (strides or dilations in the
 * hundreds), scalar mode sums each output in C as the reference does.
 *
 * Arithmetic: per output, products and sums rounded to f32 one by one (no
 * FMA), from 0, in the reference's order (input channel, kernel row, then
 * column); a tap in the padding adds w x 0.  The reference skips such a
 * tap instead, and
 * for a finite weight that is the same: x 0 is a zero and the running sum,
 * which starts at +0, is never -0, so adding it changes nothing.  So the
 * result is the reference's bit for bit (and does not depend on the
 * thread count or the bands) unless a weight is infinite or NaN, which
 * then gives NaN at the outputs whose window reaches the padding, as the
 * GEMM path and an im2col convolution in PyTorch do.
 *
 * Packed weights (conv_ex) are a 64-byte header and the weights rounded
 * to the storage dtype and widened to f32, [out_channels][taps].
 */
#include <assert.h>
#include <string.h>

#include "conv.h"

/* Output channels per group at most; input channels per group at most
 * for f32 storage (bf16 and f16 take one: measured on resnext's grouped
 * layers, 4 to 32 channels per group, the GEMM path was faster for them,
 * and for f32 from 16 channels on; bench/results/2026-11-28-depthwise.md). */
#define DW_M_MAX 32
#define DW_CIN_F32_MAX 8
/* Taps (input channels per group x kernel positions) at most: a 1-d
 * kernel of 1024. */
#define DW_TAPS_MAX 1024
/* f32 sums per task at most (amp_conv_w_buf): a band's flat row. */
#define DW_ACC_MAX 4096
/* A band's replicated bias (amp_conv_col_buf) holds as many. */
typedef char dw_bias_fits[sizeof amp_conv_col_buf[0] >= DW_ACC_MAX * 4 ? 1 : -1];
typedef char dw_acc_fits[sizeof amp_conv_w_buf[0] >= DW_ACC_MAX * 4 ? 1 : -1];

#define DW_MAGIC 0x64766e6f63706d61ull /* "ampconvd" */
typedef union {
    struct {
        uint64_t magic;
        const amp_gemm_kernel *k;
        int64_t t, out_channels, kernel_plane;
    } h;
    unsigned char bytes[64];
} dw_header;
typedef char dw_header_is_64_bytes[sizeof(dw_header) == 64 ? 1 : -1];

typedef struct {
    const amp_gemm_kernel *k;
    amp_dtype t;
    size_t es;
    const amp_conv_desc *d;
    conv_geometry g;
    int64_t M, cin_g, kplane, taps; /* taps = cin_g kplane */
    int64_t chan;                   /* floats of one channel's copy */
    int scalar;    /* the copy does not fit: each output summed in C */
    int64_t seg;   /* output columns per task (the last segment's fewer) */
    int64_t segs;  /* per output row */
    int64_t pw;    /* a copy row's length, and the flat row's stride */
    int64_t band;  /* output rows per task (the last band may have fewer) */
    int64_t bands; /* per plane */
    int64_t rows;  /* copy rows per phase */
    int64_t off[DW_TAPS_MAX]; /* each tap's first element in the copy */
    const char *x, *bias;
    const float *w32; /* [out_channels][taps] */
    conv_job cj;      /* the post-ops' state (conv_setup_post), out and y */
} dw_job;

static int64_t taken;

int64_t amp_fast_conv_depthwise_taken(void)
{
    return __atomic_load_n(&taken, __ATOMIC_RELAXED);
}

/* The taps' reach past a task's first output row and column, in copy
 * rows and columns. */
static int64_t reach_h(const conv_geometry *g) { return (g->kernel[1] - 1) * g->dilation[1] / g->stride[1]; }
static int64_t reach_w(const conv_geometry *g) { return (g->kernel[2] - 1) * g->dilation[2] / g->stride[2]; }

/* Floats of a task's copy: rows output rows, seg output columns. */
static double dw_copy_floats(const conv_geometry *g, int64_t rows, int64_t seg)
{
    return (double)(g->stride[1] * g->stride[2]) * (double)(rows + reach_h(g)) * (double)(seg + reach_w(g));
}

/* Depends on the kernel, groups and channels alone, as
 * amp_conv_packed_bytes does (the packing's descriptor has no sizes,
 * strides or dilations): every such shape then runs here, the ones whose
 * copy would not fit (huge strides or dilations) in scalar mode. */
int amp_conv_depthwise_applies(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d)
{
    int64_t taps = 1;
    if (k->dw_taps == NULL || !fast_dtype(t) || d->groups <= 1 || d->in_channels % d->groups != 0 ||
        d->in_channels / d->groups > (t == AMP_F32 ? DW_CIN_F32_MAX : 1) || d->out_channels % d->groups != 0 ||
        d->out_channels / d->groups > DW_M_MAX || d->nspatial < 1 || d->nspatial > 2)
        return 0;
    taps = d->in_channels / d->groups;
    for (int i = 0; i < d->nspatial; i++) {
        if (d->kernel[i] < 1)
            return 0;
        taps *= d->kernel[i];
    }
    return taps <= DW_TAPS_MAX;
}

size_t amp_conv_depthwise_packed_bytes(const amp_conv_desc *d)
{
    const conv_geometry g = conv_geometry_of(d);
    return sizeof(dw_header) + (size_t)(d->out_channels * (d->in_channels / d->groups) * g.kernel_plane) * sizeof(float);
}

/* n weights of dtype src, rounded to t, as f32 (flip: each row of taps
 * reversed, transpose_by_conv's weights with one input channel per
 * group). */
static void dw_weights(amp_dtype t, amp_dtype src, const void *w, int64_t rows, int64_t taps, int flip,
                       float *w32)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < taps; i++) {
            const float v = amp_ld(src, w, r * taps + (flip ? taps - 1 - i : i));
            float *o = &w32[r * taps + i];
            if (src == t) {
                *o = v;
            } else {
                double e[2]; /* (room for any dtype amp_st knows) */
                amp_st(t, e, 0, v);
                *o = amp_ld(t, e, 0);
            }
        }
}

void amp_conv_depthwise_pack(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, amp_dtype src,
                             const void *w, void *packed)
{
    const conv_geometry g = conv_geometry_of(d);
    dw_header hd;
    memset(&hd, 0, sizeof hd);
    hd.h.magic = DW_MAGIC;
    hd.h.k = k;
    hd.h.t = t;
    hd.h.out_channels = d->out_channels;
    hd.h.kernel_plane = d->in_channels / d->groups * g.kernel_plane;
    memcpy(packed, &hd, sizeof hd);
    dw_weights(t, src, w, d->out_channels, hd.h.kernel_plane, 0, (float *)(void *)((char *)packed + sizeof hd));
}

/* n bf16 elements from src, sstride apart, widened to f32 at dst: with
 * SSE2 (every x86-64) or on aarch64 4 or 8 at a time at strides 1 and 2
 * (at stride 2 the even element of each 32-bit pair shifted up is its
 * f32), the copy being most of a task's time in plain C. */
static void widen_bf16(const uint16_t *s, int64_t sstride, int64_t n, float *dst)
{
    int64_t i = 0;
#ifdef __SSE2__
    const __m128i z = _mm_setzero_si128();
    if (sstride == 1)
        for (; i + 8 <= n; i += 8) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_unpacklo_epi16(z, v));
            _mm_storeu_si128((__m128i *)(void *)(dst + i + 4), _mm_unpackhi_epi16(z, v));
        }
    else if (sstride == 2)
        for (; i + 5 <= n; i += 4) /* reads s[2 i .. 2 i + 7], all <= s[2 (n - 1)] */
            _mm_storeu_si128((__m128i *)(void *)(dst + i),
                             _mm_slli_epi32(_mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i)), 16));
#elif defined(__aarch64__)
    if (sstride == 1)
        for (; i + 4 <= n; i += 4)
            vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(s + i), 16)));
    else if (sstride == 2)
        for (; i + 5 <= n; i += 4) /* reads s[2 i .. 2 i + 7]: LD2 of four pairs */
            vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vld2_u16(s + 2 * i).val[0], 16)));
#endif
    for (; i < n; i++) {
        const uint32_t u = (uint32_t)s[i * sstride] << 16;
        memcpy(&dst[i], &u, 4);
    }
}

/* n elements of dtype t from src, sstride apart, widened to f32 at dst. */
static void widen_run(amp_dtype t, const char *src, int64_t sstride, int64_t n, float *dst)
{
    if (t == AMP_F32) {
        const float *s = (const float *)(const void *)src;
        int64_t i = 0;
        if (sstride == 1) {
            memcpy(dst, s, (size_t)n * sizeof *dst);
            return;
        }
#ifdef __SSE2__
        if (sstride == 2)
            for (; i + 5 <= n; i += 4) /* reads s[2 i .. 2 i + 7], all <= s[2 (n - 1)] */
                _mm_storeu_ps(dst + i, _mm_shuffle_ps(_mm_loadu_ps(s + 2 * i), _mm_loadu_ps(s + 2 * i + 4),
                                                      _MM_SHUFFLE(2, 0, 2, 0)));
#elif defined(__aarch64__)
        if (sstride == 2)
            for (; i + 5 <= n; i += 4)
                vst1q_f32(dst + i, vld2q_f32(s + 2 * i).val[0]);
#endif
        for (; i < n; i++)
            dst[i] = s[i * sstride];
    } else if (t == AMP_BF16) {
        widen_bf16((const uint16_t *)(const void *)src, sstride, n, dst);
    } else {
        const amp_f16 *s = (const amp_f16 *)(const void *)src;
        for (int64_t i = 0; i < n; i++)
            dst[i] = amp_f16_to_f32(s[i * sstride]);
    }
}

/* The copy of channel xc's rows for the band from output row oh0 (the
 * layout in the header comment), at pad. */
static void dw_copy(const dw_job *j, const char *xc, int64_t oh0, int64_t ow0, float *pad)
{
    const conv_geometry *g = &j->g;
    const int64_t sh = g->stride[1], sw = g->stride[2], in_h = g->in[1], in_w = g->in[2];
    const int64_t left = g->padding[2], pw = j->pw;
    for (int64_t hp = 0; hp < sw; hp++) {
        /* columns j with 0 <= (ow0 + j) sw + hp - left < in_w (worked
         * out once per phase: the divisions were a sixth of a task) */
        const int64_t c = left - hp - ow0 * sw, j0 = c <= 0 ? 0 : min64(pw, cdiv(c, sw));
        const int64_t j1 = in_w + c <= 0 ? 0 : min64(pw, cdiv(in_w + c, sw));
        for (int64_t vp = 0; vp < sh; vp++)
            for (int64_t i = 0; i < j->rows; i++) {
                float *o = pad + ((vp * sw + hp) * j->rows + i) * pw;
                const int64_t ih = (oh0 + i) * sh + vp - g->padding[1];
                if (ih < 0 || ih >= in_h || j1 <= j0) {
                    memset(o, 0, (size_t)pw * sizeof *o);
                    continue;
                }
                memset(o, 0, (size_t)j0 * sizeof *o);
                widen_run(j->t, xc + (size_t)(ih * in_w + j0 * sw - c) * j->es, sw, j1 - j0, o + j0);
                memset(o + j1, 0, (size_t)(pw - j1) * sizeof *o);
            }
    }
}

/* Scalar mode: the sums of output row oh, columns ow0 .. ow0 + wn - 1,
 * of channel co, as the reference sums them (taps in the padding
 * skipped), into acc. */
static void dw_scalar_row(const dw_job *j, const char *xc, int64_t co, int64_t oh, int64_t ow0, int64_t wn,
                          float *acc)
{
    const conv_geometry *g = &j->g;
    for (int64_t q = 0; q < wn; q++) {
        float a = 0.0f;
        for (int64_t c = 0; c < j->cin_g; c++) {
            const float *w = j->w32 + co * j->taps + c * j->kplane;
            for (int64_t kh = 0; kh < g->kernel[1]; kh++) {
                const int64_t ih = oh * g->stride[1] - g->padding[1] + kh * g->dilation[1];
                if (ih < 0 || ih >= g->in[1])
                    continue;
                for (int64_t kw = 0; kw < g->kernel[2]; kw++) {
                    const int64_t iw = (ow0 + q) * g->stride[2] - g->padding[2] + kw * g->dilation[2];
                    if (iw < 0 || iw >= g->in[2])
                        continue;
                    {
                        const float p = amp_ld(j->t, xc, (c * g->in[1] + ih) * g->in[2] + iw) *
                                        w[kh * g->kernel[2] + kw];
                        a = a + p;
                    }
                }
            }
        }
        acc[q] = a;
    }
}

static void dw_task(void *ctx, int64_t task, int slot)
{
    const dw_job *j = ctx;
    const amp_conv_desc *d = j->d;
    const int64_t per_group = j->bands * j->segs, per_image = d->groups * per_group;
    const int64_t n = task / per_image, grp = task % per_image / per_group;
    const int64_t b = task % per_group / j->segs, sg = task % j->segs;
    const int64_t out_w = j->g.out[2], oh0 = b * j->band, rows = min64(j->band, j->g.out[1] - oh0);
    const int64_t ow0 = sg * j->seg, wn = min64(j->seg, out_w - ow0);
    const int64_t flat = (rows - 1) * j->pw + wn, P = j->g.out_plane;
    const char *xc = j->x + (size_t)((n * d->in_channels + grp * j->cin_g) * j->g.in_plane) * j->es;
    float *pad = (float *)(void *)amp_conv_pad_buf[slot];
    float *acc = amp_conv_w_buf[slot];
    unsigned char *brep = amp_conv_col_buf[slot];
    if (rows <= 0 || wn <= 0)
        return;
    if (!j->scalar)
        for (int64_t c = 0; c < j->cin_g; c++)
            dw_copy(j, xc + (size_t)(c * j->g.in_plane) * j->es, oh0, ow0, pad + c * j->chan);
    for (int64_t m = 0; m < j->M; m++) {
        const int64_t co = grp * j->M + m;
        const size_t yoff = (size_t)((n * d->out_channels + co) * P + oh0 * out_w + ow0);
        const void *brow = NULL;
        if (j->scalar)
            dw_scalar_row(j, xc, co, oh0, ow0, wn, acc); /* (rows is 1) */
        else
            j->k->dw_taps(flat, j->taps, pad, j->off, j->w32 + co * j->taps, acc);
        if (j->bias != NULL) {
            fill_elems(brep, j->bias + (size_t)co * j->es, j->es, rows * wn);
            brow = brep;
        }
        if (wn == out_w) {
            /* whole rows: closed up (each moves left), then one epilogue
             * and the post-ops over the band */
            if (j->pw != out_w)
                for (int64_t r = 1; r < rows; r++)
                    memmove(acc + r * out_w, acc + r * j->pw, (size_t)out_w * sizeof *acc);
            j->k->epi(j->t, rows * out_w, acc, 1.0f, 0.0f, NULL, 0, brow, j->cj.out + yoff * j->es);
            if (j->cj.post != NULL)
                amp_conv_run_post(&j->cj, co, 1, yoff, rows * out_w);
            continue;
        }
        for (int64_t r = 0; r < rows; r++) {
            const size_t yr = yoff + (size_t)(r * out_w);
            j->k->epi(j->t, wn, acc + r * j->pw, 1.0f, 0.0f, NULL, 0, brow, j->cj.out + yr * j->es);
            if (j->cj.post != NULL)
                amp_conv_run_post(&j->cj, co, 1, yr, wn);
        }
    }
}

/* The tasks: column segments as wide as the buffers allow (the whole row,
 * mostly), bands of rows as tall as they allow, then bands split until
 * every thread has tasks; scalar mode where not even one output's copy
 * fits. */
static void dw_cut(dw_job *j, int threads)
{
    const conv_geometry *g = &j->g;
    const int64_t out_h = g->out[1], out_w = g->out[2];
    const double fit = (double)(PAD_BUF_BYTES / sizeof(float));
    int64_t max = 1;
    j->scalar = (double)j->cin_g * dw_copy_floats(g, 1, 1) > fit;
    j->seg = min64(out_w, DW_ACC_MAX);
    while (!j->scalar && j->seg > 1 && (double)j->cin_g * dw_copy_floats(g, 1, j->seg) > fit)
        j->seg = (j->seg + 1) / 2;
    j->segs = cdiv(out_w, j->seg);
    j->seg = cdiv(out_w, j->segs);
    j->pw = j->seg + reach_w(g);
    if (!j->scalar && j->segs == 1) {
        max = min64(out_h, (DW_ACC_MAX - out_w) / j->pw + 1);
        while (max > 1 && (double)j->cin_g * dw_copy_floats(g, max, j->seg) > fit)
            max--;
    }
    j->bands = cdiv(out_h, max);
    while (threads > 1 && j->bands < out_h && j->d->batch * j->d->groups * j->bands * j->segs < 4 * threads)
        j->bands = min64(out_h, 2 * j->bands);
    j->band = cdiv(out_h, j->bands);
    j->bands = cdiv(out_h, j->band);
    j->rows = j->band + reach_h(g);
    j->chan = g->stride[1] * g->stride[2] * j->rows * j->pw;
}

int amp_conv_depthwise_run(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                           const void *w, int flip, const void *packed, const void *bias, const amp_conv_post *post,
                           void *y)
{
    dw_job j;
    float *w_own = NULL;
    amp_conv_post_row *rows_own = NULL;
    int threads = amp_get_threads();
    memset(&j, 0, sizeof j);
    j.g = conv_geometry_of(d);
    if (d->batch <= 0 || d->out_channels <= 0 || j.g.out_plane <= 0)
        return 1;
    j.k = k;
    j.t = t;
    j.es = amp_dtype_size(t);
    j.d = d;
    j.M = d->out_channels / d->groups;
    j.cin_g = d->in_channels / d->groups;
    j.kplane = j.g.kernel_plane;
    j.taps = j.cin_g * j.kplane;
    if (flip && j.cin_g != 1) /* (transpose_by_conv's weights then mix channels: the GEMM path's) */
        return 0;
    j.x = x;
    j.bias = bias;
    if (packed != NULL) {
        const dw_header *hd = packed;
        (void)hd;
        assert(hd->h.magic == DW_MAGIC && "conv_ex: packed is not from conv_pack_weights");
        assert(hd->h.k == k && hd->h.t == t && "conv_ex: weights packed under another kernel set or dtype");
        assert(hd->h.out_channels == d->out_channels && hd->h.kernel_plane == j.taps &&
               "conv_ex: weights packed for another shape");
        j.w32 = (const float *)(const void *)((const char *)packed + sizeof(dw_header));
    } else {
        w_own = amp_scratch_alloc((size_t)(d->out_channels * j.taps) * sizeof *w_own);
        if (w_own == NULL)
            return 0;
        dw_weights(t, t, w, d->out_channels, j.taps, flip, w_own);
        j.w32 = w_own;
    }
    if (amp_conv_post_empty(post))
        post = NULL;
    j.cj.k = k;
    j.cj.t = t;
    j.cj.es = j.es;
    j.cj.d = d;
    j.cj.P = j.g.out_plane;
    j.cj.y = y;
    j.cj.out = y;
    if (post != NULL)
        rows_own = amp_conv_setup_post(&j.cj, post);
    if (2.0 * (double)d->batch * (double)d->out_channels * (double)j.g.out_plane * (double)j.taps <
        PARALLEL_MIN_FLOPS)
        threads = 1;
    dw_cut(&j, threads);
    for (int64_t i = 0; i < j.taps; i++) {
        const int64_t ci = i / j.kplane, kh = i % j.kplane / j.g.kernel[2], kw = i % j.g.kernel[2];
        const int64_t a = kh * j.g.dilation[1], c = kw * j.g.dilation[2];
        const int64_t sh = j.g.stride[1], sw = j.g.stride[2];
        j.off[i] = ci * j.chan + ((a % sh * sw + c % sw) * j.rows + a / sh) * j.pw + c / sw;
    }
    amp_parallel_run(threads, d->batch * d->groups * j.bands * j.segs, dw_task, &j);
    __atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
    amp_scratch_free(rows_own);
    amp_scratch_free(w_own);
    return 1;
}
