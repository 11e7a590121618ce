/*
 * conv_wgrad_depthwise.c - conv_backward_weight of a depthwise
 * convolution (one input channel per group; 1-d or 2-d, any stride,
 * padding and dilation), directly: each output channel's taps summed over
 * every image and output position as dot products of its rows of dy with
 * the input rows under them: the input plane widened to f32 once per image
 * and channel, zero-padded and split by horizontal stride phase, so that
 * a tap's inputs along an output row are one contiguous run.  As a GEMM, a group's single output row took one of
 * the micro-kernel's 6 to 12 rows and its taps a panel of 16 or 32
 * columns: about 1 GFLOP/s on mobilenet_v2's layers
 * (bench/conv_layer_bench.c ... mobile weight).
 *
 * Each tap's sum runs in f32 over LANES partial sums (lane l takes the
 * positions ow = l mod LANES of every row, images and rows in order), added
 * in lane order at the end and rounded to t once; a task owns whole output
 * channels, so the result does not depend on the thread count.
 */
#include <string.h>

#include "conv.h"

#pragma GCC visibility push(hidden)

#define LANES 16

typedef struct {
    const amp_gemm_kernel *k;
    amp_dtype t;
    const amp_conv_desc *d;
    conv_geometry g;
    const char *x, *dy;
    const wgrad_out *out;
    int64_t mult;        /* output channels per input channel */
    int64_t taps;        /* kernel[1] x kernel[2] */
    int64_t row_lanes;   /* out_w rounded up to LANES */
    int64_t phase_len;   /* elements of each stride phase of a padded input row */
    float *work;         /* per slot: the sums, dy's row, the input plane's phases */
    size_t slot_floats;
} dw_wgrad_job;

static int64_t depthwise_taken;

int64_t amp_fast_conv_wgrad_depthwise_taken(void)
{
    return __atomic_load_n(&depthwise_taken, __ATOMIC_RELAXED);
}

/* n elements of t at src, widened into dst, zeros up to n_all. */
static void widen_row(amp_dtype t, const char *src, int64_t n, int64_t n_all, float *dst)
{
    int64_t i = 0;
    if (t == AMP_F32)
        memcpy(dst, src, (size_t)n * sizeof *dst);
    else if (t == AMP_BF16)
        for (; i < n; i++) {
            const uint32_t b = (uint32_t)((const uint16_t *)(const void *)src)[i] << 16;
            memcpy(&dst[i], &b, 4);
        }
    else
        for (; i < n; i++)
            dst[i] = amp_f16_to_f32((amp_f16){ ((const uint16_t *)(const void *)src)[i] });
    for (i = n; i < n_all; i++)
        dst[i] = 0;
}

/* Input plane xc widened into pl: row r, padded by the convolution's
 * left padding and split by horizontal stride, at pl[(r stride + s)
 * phase_len + i] = the padded row's element i stride + s (0 outside the
 * row). */
static void phase_plane(const dw_wgrad_job *j, const char *xc, float *pl)
{
    const conv_geometry *g = &j->g;
    const int64_t sw = g->stride[2], pw = g->padding[2], in_w = g->in[2];
    const size_t es = amp_dtype_size(j->t);
    float *row = pl + g->in[1] * sw * j->phase_len; /* one row widened, after the plane */
    for (int64_t r = 0; r < g->in[1]; r++) {
        widen_row(j->t, xc + (size_t)(r * in_w) * es, in_w, in_w, row);
        for (int64_t s = 0; s < sw; s++) {
            float *o = pl + (r * sw + s) * j->phase_len;
            for (int64_t i = 0; i < j->phase_len; i++) {
                const int64_t col = i * sw + s - pw;
                o[i] = col >= 0 && col < in_w ? row[col] : 0.0f;
            }
        }
    }
}

static void dw_wgrad_task(void *ctx, int64_t co, int slot)
{
    const dw_wgrad_job *j = ctx;
    const conv_geometry *g = &j->g;
    const amp_conv_desc *d = j->d;
    const size_t es = amp_dtype_size(j->t);
    const int64_t c = co / j->mult, kh_n = g->kernel[1], kw_n = g->kernel[2];
    const int64_t out_h = g->out[1], out_w = g->out[2], R = j->row_lanes;
    float *acc = j->work + (size_t)slot * j->slot_floats; /* [taps][LANES] */
    float *dyr = acc + j->taps * LANES;                   /* [R] */
    float *pl = dyr + R;                                  /* the input plane's phases */
    float sums[AMP_IM2COL_COLS_MAX];
    memset(acc, 0, (size_t)(j->taps * LANES) * sizeof *acc);
    for (int64_t n = 0; n < d->batch; n++) {
        const char *xc = j->x + (size_t)((n * d->in_channels + c) * g->in_plane) * es;
        const char *dyc = j->dy + (size_t)((n * d->out_channels + co) * g->out_plane) * es;
        phase_plane(j, xc, pl);
        for (int64_t oh = 0; oh < out_h; oh++) {
            widen_row(j->t, dyc + (size_t)(oh * out_w) * es, out_w, R, dyr);
            for (int64_t kh = 0; kh < kh_n; kh++) {
                const int64_t ih = oh * g->stride[1] - g->padding[1] + kh * g->dilation[1];
                if (ih < 0 || ih >= g->in[1])
                    continue;
                for (int64_t kw = 0; kw < kw_n; kw++) {
                    const int64_t off = kw * g->dilation[2];
                    const float *xs =
                        pl + (ih * g->stride[2] + off % g->stride[2]) * j->phase_len + off / g->stride[2];
                    float *a = acc + (kh * kw_n + kw) * LANES;
                    for (int64_t l0 = 0; l0 < R; l0 += LANES) {
                        LANE_LOOP
                        for (int l = 0; l < LANES; l++)
                            a[l] += dyr[l0 + l] * xs[l0 + l];
                    }
                }
            }
        }
    }
    for (int64_t tap = 0; tap < j->taps; tap++) {
        float s = 0;
        for (int l = 0; l < LANES; l++)
            s += acc[tap * LANES + l];
        sums[tap] = s;
    }
    amp_conv_wgrad_store(j->k, j->t, j->out, co * j->taps, j->taps, sums);
}

int amp_conv_wgrad_depthwise(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                             const void *dy, const wgrad_out *out, int threads)
{
    dw_wgrad_job j;
    memset(&j, 0, sizeof j);
    j.g = conv_geometry_of(d);
    if (d->groups != d->in_channels || d->groups <= 0 || d->out_channels % d->groups != 0 || j.g.in[0] != 1 ||
        j.g.out[0] != 1 || j.g.kernel[0] != 1 || j.g.kernel_plane > AMP_IM2COL_COLS_MAX ||
        (t != AMP_F32 && t != AMP_BF16 && t != AMP_F16))
        return 0;
    j.k = k;
    j.t = t;
    j.d = d;
    j.x = x;
    j.dy = dy;
    j.out = out;
    j.mult = d->out_channels / d->groups;
    j.taps = j.g.kernel_plane;
    j.row_lanes = round_up(j.g.out[2], LANES);
    /* tap kw reads phase elements up to (row_lanes - 1) + (KW - 1) dw / sw */
    j.phase_len = j.row_lanes + (j.g.kernel[2] - 1) * j.g.dilation[2] / j.g.stride[2] + 1;
    /* the sums, dy's row, the plane's phases and one widened input row */
    j.slot_floats = (size_t)round_up(j.taps * LANES + j.row_lanes + j.g.in[1] * j.g.stride[2] * j.phase_len +
                                         j.g.in[2],
                                     16);
    if (threads > d->out_channels)
        threads = (int)d->out_channels;
    j.work = amp_scratch_alloc((size_t)threads * j.slot_floats * sizeof(float));
    if (j.work == NULL)
        return 0;
    amp_parallel_run(threads, d->out_channels, dw_wgrad_task, &j);
    __atomic_fetch_add(&depthwise_taken, 1, __ATOMIC_RELAXED);
    amp_scratch_free(j.work);
    return 1;
}

#pragma GCC visibility pop
