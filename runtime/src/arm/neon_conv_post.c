/*
 * neon_conv_post.c - the aarch64 sets' conv_ex post-ops (eval-mode
 * batch_norm, residual add, relu) on a tile's freshly stored rows, 4
 * lanes at a time (amp_gemm_kernel's post, contract in amprt_internal.h).
 *
 * Bit for bit the sets' separate batch_norm, add and relu kernels
 * (arm/neon_norm.c, neon_eltwise.c), which test_conv_ex.c holds every set
 * to with memcmp: each step the same f32 operations in the same operand
 * order, rounded to the storage dtype as a store would round it, so every
 * non-NaN result is theirs; the (rare) vectors with a NaN result are
 * redone by those kernels themselves, as the x86 posts do, since which
 * NaN comes out of a chain of steps is theirs to decide.  A row's tail
 * of fewer than 4 elements is a vector through a copy.
 */
#include <string.h>

#include "amprt_internal.h"
#include "frame/conv.h"

#if defined(__aarch64__)

#include "arm/neon_convert.h"

/* v rounded to dtype t as amp_st rounds, widened back to f32 */
static AMP_ALWAYS_INLINE float32x4_t round4(amp_dtype t, float32x4_t v)
{
    switch (t) {
    case AMP_BF16: return vreinterpretq_f32_u32(vshll_n_u16(neon_f32_to_bf16(v), 16));
    case AMP_F16: return vcvt_f32_f16(vcvt_f16_f32(v));
    default: return v;
    }
}

/* The neon set's own batch_norm, add and relu (arm/neon_norm.c,
 * neon_eltwise.c; neonbf16's and neonfp16's give the same bits). */
#define NEON_OWN(T)                                                                               \
    extern AMP_HIDDEN amp_kernel_fn_batch_norm_##T *const amp_isa_neon_batch_norm_##T;            \
    extern AMP_HIDDEN amp_kernel_fn_add_##T *const amp_isa_neon_add_##T;                          \
    extern AMP_HIDDEN amp_kernel_fn_relu_##T *const amp_isa_neon_relu_##T;
AMP_FOR_EACH_KERNEL_DTYPE(NEON_OWN)
#undef NEON_OWN

/* The post-ops of cnt (<= 4) elements of a row through those kernels
 * themselves: for the vectors with a NaN lane, whose payload is whatever
 * those kernels make of it (they are element-wise, so a piece of a row
 * gives what the row would). */
static void post_by_kernels(amp_dtype t, int64_t cnt, const amp_conv_post_row *p, const char *rr, const char *sr,
                            char *yr)
{
    const amp_conv_post *post = p->post;
    const size_t es = neon_size_of(t), ps = amp_dtype_size(post->bn_dtype);
    const int64_t co = p->channel;
    const void *mean = post->bn_mean != NULL ? (const char *)post->bn_mean + (size_t)co * ps : NULL;
    const void *var = post->bn_var != NULL ? (const char *)post->bn_var + (size_t)co * ps : NULL;
    const void *w = post->bn_weight != NULL ? (const char *)post->bn_weight + (size_t)co * ps : NULL;
    const void *b = post->bn_bias != NULL ? (const char *)post->bn_bias + (size_t)co * ps : NULL;
    float tmp[4];
    memcpy(tmp, sr, (size_t)cnt * es);
#define POST_BY_KERNELS(T, CT)                                                                    \
    do {                                                                                          \
        CT *v = (CT *)(void *)tmp;                                                                \
        if (p->bn)                                                                                \
            amp_isa_neon_batch_norm_##T(1, 1, cnt, v, post->bn_dtype, mean, var, w, b, post->bn_eps, v); \
        if (rr != NULL)                                                                           \
            amp_isa_neon_add_##T((size_t)cnt, v, (const CT *)(const void *)rr, v);               \
        if (p->relu)                                                                              \
            amp_isa_neon_relu_##T((size_t)cnt, v, v);                                             \
    } while (0)
    switch (t) {
    case AMP_F32: POST_BY_KERNELS(f32, float); break;
    case AMP_BF16: POST_BY_KERNELS(bf16, amp_bf16); break;
    default: POST_BY_KERNELS(f16, amp_f16); break;
    }
#undef POST_BY_KERNELS
    memcpy(yr, tmp, (size_t)cnt * es);
}

/* One row's post-ops on 4 values v (rv: the residual's, when has_residual). */
static AMP_ALWAYS_INLINE float32x4_t post4(amp_dtype t, float32x4_t v, const float32x4_t bnv[4], int bn,
                                           int bn_weight, int bn_bias, int relu, float32x4_t rv, int has_residual)
{
    if (bn) { /* ((v - mean) * rstd) [* w] [+ b], as neon_norm.c's bn4 */
        v = vmulq_f32(vsubq_f32(v, bnv[0]), bnv[1]);
        if (bn_weight)
            v = vmulq_f32(v, bnv[2]);
        if (bn_bias)
            v = vaddq_f32(v, bnv[3]);
        v = round4(t, v);
    }
    if (has_residual) /* the add kernel's operand order: the convolution's, then the residual */
        v = round4(t, vaddq_f32(v, rv));
    if (relu) /* false for NaN and -0: both kept */
        v = vbslq_f32(vcltq_f32(v, vdupq_n_f32(0)), vdupq_n_f32(0), v);
    return v;
}

/* One row: whole vectors, then the tail through 4-element copies (the
 * separate kernels' tails are vector operations too, which matters for
 * which of two NaNs comes out). */
static AMP_ALWAYS_INLINE void post_row(amp_dtype t, int64_t n, const amp_conv_post_row *p, const char *rr,
                                       const char *sr, char *yr, int bn, int bn_weight, int bn_bias, int relu)
{
    const size_t es = neon_size_of(t);
    const float32x4_t bnv[4] = { vdupq_n_f32(p->mean), vdupq_n_f32(p->rstd), vdupq_n_f32(p->weight),
                                 vdupq_n_f32(p->bias) };
    const int has_residual = rr != NULL;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const float32x4_t rv = has_residual ? neon_load4_quiet(t, rr + (size_t)j * es) : vdupq_n_f32(0);
        const float32x4_t v = post4(t, neon_load4_quiet(t, sr + (size_t)j * es), bnv, bn, bn_weight, bn_bias, relu,
                                    rv, has_residual);
        if (vmaxvq_u32(neon_isnan4(v)) != 0)
            post_by_kernels(t, 4, p, has_residual ? rr + (size_t)j * es : NULL, sr + (size_t)j * es,
                            yr + (size_t)j * es);
        else
            neon_store4(t, yr + (size_t)j * es, v); /* exact: v holds a value of t */
    }
    if (j < n) {
        float sbuf[4] = { 0, 0, 0, 0 }, rbuf[4] = { 0, 0, 0, 0 }, ybuf[4];
        const size_t bytes = (size_t)(n - j) * es;
        memcpy(sbuf, sr + (size_t)j * es, bytes);
        if (has_residual)
            memcpy(rbuf, rr + (size_t)j * es, bytes);
        const float32x4_t v = post4(t, neon_load4_quiet(t, sbuf), bnv, bn, bn_weight, bn_bias, relu,
                                    neon_load4_quiet(t, rbuf), has_residual);
        if (vmaxvq_u32(neon_isnan4(v)) != 0) {
            post_by_kernels(t, n - j, p, has_residual ? rr + (size_t)j * es : NULL, sr + (size_t)j * es,
                            yr + (size_t)j * es);
        } else {
            neon_store4(t, ybuf, v);
            memcpy(yr + (size_t)j * es, ybuf, bytes);
        }
    }
}

static AMP_ALWAYS_INLINE void post_body(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *pr,
                                        const void *residual, const void *src, void *y, int64_t ld)
{
    const size_t es = neon_size_of(t);
    for (int64_t r = 0; r < rows; r++) {
        const amp_conv_post_row *p = &pr[r];
        char *yr = (char *)y + (size_t)(r * ld) * es;
        const char *sr = (const char *)src + (size_t)(r * ld) * es;
        const char *rr = residual != NULL ? (const char *)residual + (size_t)(r * ld) * es : NULL;
        if (p->bn && p->bn_weight && p->bn_bias && p->relu) /* the usual conv + bn + relu */
            post_row(t, n, p, rr, sr, yr, 1, 1, 1, 1);
        else
            post_row(t, n, p, rr, sr, yr, p->bn, p->bn_weight, p->bn_bias, p->relu);
    }
}

void amp_neon_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                        const void *src, void *y, int64_t ld)
{
    switch (t) {
    case AMP_F32: post_body(AMP_F32, rows, n, p, residual, src, y, ld); break;
    case AMP_BF16: post_body(AMP_BF16, rows, n, p, residual, src, y, ld); break;
    case AMP_F16: post_body(AMP_F16, rows, n, p, residual, src, y, ld); break;
    default: amp_conv_post_generic(t, rows, n, p, residual, src, y, ld); break;
    }
}

#endif /* aarch64 */
