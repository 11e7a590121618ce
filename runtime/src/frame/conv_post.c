/*
 * conv_post.c - conv_ex's post-ops (eval-mode batch_norm, residual add,
 * relu, clamp, in that order) on the row segments of a tile that its
 * epilogue has just stored, while they are in L1.
 *
 * A kernel set with a vectorized post (the AVX-512 sets, avx2, the NEON
 * sets) runs its own, the clamp step included (the x86 sets' in the same
 * pass, the NEON sets' through amp_conv_clamp_row); otherwise each row
 * segment goes through the reference kernels themselves (batch_norm of
 * one channel over n elements, add, relu, clamp): the separate kernels of
 * every set without its own (ref) are these, so the results are theirs by
 * construction, down to which NaN an operation on two NaNs returns (which
 * the compiler decides by its operand order).
 */
#include <math.h>
#include <string.h>

#include "conv.h"

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
        if (p->clamp)                                                                             \
            amp_ref_clamp_##T((size_t)n, yr, p->post->clamp_lo, p->post->clamp_hi, yr);           \
    } while (0)

void amp_conv_post_generic(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr, const void *residual,
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

/* The clamp step on n elements at y, in place, while they are in L1: the
 * best set's clamp kernel, whose results are every set's (each is bit for
 * bit the reference's, test_fasteltwise.c), so the separate clamp of
 * whichever set runs conv_ex computes the same.  In pieces of
 * CLAMP_PIECE: this runs inside a pool task, and a call that large enough
 * to split over the pool itself (AMP_PARALLEL_MIN, frame/chunked.h) would
 * wait for the pool it is part of. */
#define CLAMP_PIECE ((size_t)4096)

void amp_conv_clamp_row(amp_dtype t, size_t n, const amp_conv_post *post, void *y)
{
    const size_t es = amp_dtype_size(t);
    for (size_t i = 0; i < n; i += CLAMP_PIECE) {
        const size_t m = n - i < CLAMP_PIECE ? n - i : CLAMP_PIECE;
        void *p = (char *)y + i * es;
        switch (t) {
        case AMP_F32: amp_clamp_f32(m, p, post->clamp_lo, post->clamp_hi, p); break;
        case AMP_BF16: amp_clamp_bf16(m, p, post->clamp_lo, post->clamp_hi, p); break;
        case AMP_F16: amp_clamp_f16(m, p, post->clamp_lo, post->clamp_hi, p); break;
        case AMP_F64: amp_clamp_f64(m, p, post->clamp_lo, post->clamp_hi, p); break;
        default: break;
        }
    }
}

/* Whether f32 v comes back bit for bit from storage dtype t. */
static int held_by(amp_dtype t, float v)
{
    float back = v;
    if (t == AMP_BF16)
        back = amp_bf16_to_f32(amp_f32_to_bf16(v));
    else if (t == AMP_F16)
        back = amp_f16_to_f32(amp_f32_to_f16(v));
    return memcmp(&back, &v, sizeof v) == 0;
}

/* Channel co's post parameters for storage dtype t: batch_norm's scalars
 * as ref_norm.inc's batch_norm computes them in float (mean, rstd = 1 /
 * sqrt(var + (float)eps), weight, bias), the clamp's bounds as the clamp
 * kernels take them. */
void amp_conv_post_row_of(const amp_conv_post *post, amp_dtype t, int bn_first, int64_t co, amp_conv_post_row *p)
{
    memset(p, 0, sizeof *p);
    p->bn = post->bn_mean != NULL && !bn_first;
    p->bn_weight = p->bn && post->bn_weight != NULL;
    p->bn_bias = p->bn && post->bn_bias != NULL;
    p->relu = post->relu != 0;
    p->clamp_lo = (float)post->clamp_lo;
    p->clamp_hi = (float)post->clamp_hi;
    p->clamp = !post->clamp ? AMP_POST_CLAMP_NONE
               : held_by(t, p->clamp_lo) && held_by(t, p->clamp_hi) ? AMP_POST_CLAMP_EXACT
                                                                    : AMP_POST_CLAMP_ROUNDED;
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
void amp_conv_run_post(const conv_job *j, int64_t co, int64_t rows, size_t yoff, int64_t n)
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
            amp_conv_post_row_of(post, j->t, j->bn_first, co + r, &local[r]);
    if (j->bn_first)
        for (int64_t r = 0; r < rows; r++)
            bn_generic(j->t, n, post, co + r, y + (size_t)(r * j->P) * j->es);
    j->post_fn(j->t, rows, n, pr, post->residual != NULL ? (const char *)post->residual + yoff * j->es : NULL,
               j->out + yoff * j->es, y, j->P);
}
