/*
 * ref_conv.c - reference convolution, transposed convolution and conv_tbc.
 *
 * Every output element is one dot product accumulated in ACC (f32 for
 * f32/bf16/f16, f64 for f64) in the order input channel, then kernel
 * position row-major, from zero; the bias is added after the sum and the
 * result is rounded to the storage dtype once. The bodies live in
 * ref_conv.inc, instantiated once per ACC below.
 *
 * 1-, 2- and 3-d convolutions share one body: the nspatial dims are placed
 * last in a 3-d geometry (ref_window.h) whose leading dims have size 1,
 * kernel 1, stride 1 and no padding, so the extra loops run once and change
 * nothing.
 * output_padding is not read: it only widens out_size, which is given.
 *
 * conv_ex's reference (at the end) is its specification: conv, then the
 * reference batch_norm, add and relu; its packed weights are w in T.
 *
 * conv_packed_bytes (a size, no body) and conv_ex (the convolution, then
 * its fused epilogue) are hand-written.
 */
#include <string.h>

#include "amprt_internal.h"
#include "ref_window.h"

/* conv: output position o reads input o*stride - padding + k*dilation for
 * kernel tap k; 0 (skip the tap) where that is in the padding. */
static AMP_ALWAYS_INLINE int input_of_output(const conv_geometry *g, const int64_t o[3], const int64_t k[3],
                                             int64_t *in_offset)
{
    int64_t offset = 0;
    for (int i = 0; i < 3; i++) {
        int64_t pos = o[i] * g->stride[i] - g->padding[i] + k[i] * g->dilation[i];
        if (pos < 0 || pos >= g->in[i])
            return 0;
        offset = offset * g->in[i] + pos;
    }
    *in_offset = offset;
    return 1;
}

/* conv_transpose: input position i scatters to i*stride - padding +
 * k*dilation, so output o gathers from i = (o + padding - k*dilation) /
 * stride when that division is exact and i is inside the input. */
static AMP_ALWAYS_INLINE int input_of_transposed_output(const conv_geometry *g, const int64_t o[3],
                                                        const int64_t k[3], int64_t *in_offset)
{
    int64_t offset = 0;
    for (int i = 0; i < 3; i++) {
        int64_t scaled = o[i] + g->padding[i] - k[i] * g->dilation[i];
        if (scaled < 0 || scaled % g->stride[i] != 0 || scaled / g->stride[i] >= g->in[i])
            return 0;
        offset = offset * g->in[i] + scaled / g->stride[i];
    }
    *in_offset = offset;
    return 1;
}

#define REF_PART "ref_conv.inc"
#include "ref_acc_twice.h"

/* conv_ex (amprt/spatial.h): the packed weights are the weight tensor
 * itself in T, and conv_ex is the composition it is specified as: conv,
 * then batch_norm, add and relu, each a reference kernel. */
static size_t packed_count(const amp_conv_desc *d)
{
    conv_geometry g = conv_geometry_of(d);
    return (size_t)(d->out_channels * (d->in_channels / d->groups) * g.kernel_plane);
}

/* Element for element: a copy when src is t, else src widened and rounded
 * to t once (f32 -> t exactly as amp_cast_f32_<t> does). */
static AMP_ALWAYS_INLINE void pack_weights(amp_dtype t, const amp_conv_desc *d, amp_dtype src, const void *w,
                                           void *packed)
{
    const size_t n = packed_count(d);
    if (src == t) {
        memcpy(packed, w, n * amp_dtype_size(t));
        return;
    }
    for (size_t i = 0; i < n; i++)
        amp_std(t, packed, (int64_t)i, amp_ldd(src, w, (int64_t)i));
}

#define CONV_EX_KERNELS(T)                                                                        \
    size_t amp_ref_conv_packed_bytes_##T(const amp_conv_desc *d)                                  \
    {                                                                                             \
        return packed_count(d) * sizeof(AMP_CTYPE_##T);                                           \
    }                                                                                             \
    void amp_ref_conv_ex_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,                      \
                             const AMP_CTYPE_##T *w, const void *packed,                          \
                             const AMP_CTYPE_##T *bias, const amp_conv_post *post,                \
                             AMP_CTYPE_##T *y)                                                    \
    {                                                                                             \
        conv_geometry g = conv_geometry_of(d);                                                    \
        size_t n;                                                                                 \
        amp_ref_conv_##T(d, x, packed != NULL ? (const AMP_CTYPE_##T *)packed : w, bias, y);      \
        if (post == NULL || d->batch <= 0 || d->out_channels <= 0 || g.out_plane <= 0)            \
            return;                                                                               \
        n = (size_t)(d->batch * d->out_channels * g.out_plane);                                   \
        if (post->raw != NULL)                                                                    \
            memcpy(post->raw, y, n * sizeof(AMP_CTYPE_##T));                                      \
        if (post->bn_mean != NULL)                                                                \
            amp_ref_batch_norm_##T(d->batch, d->out_channels, g.out_plane, y, post->bn_dtype,     \
                                   post->bn_mean, post->bn_var, post->bn_weight, post->bn_bias,  \
                                   post->bn_eps, y);                                              \
        if (post->residual != NULL)                                                               \
            amp_ref_add_##T(n, y, post->residual, y);                                             \
        if (post->relu)                                                                           \
            amp_ref_relu_##T(n, y, y);                                                            \
        if (post->clamp)                                                                          \
            amp_ref_clamp_##T(n, y, post->clamp_lo, post->clamp_hi, y);                           \
    }

CONV_EX_KERNELS(f64)
CONV_EX_KERNELS(f32)
CONV_EX_KERNELS(bf16)
CONV_EX_KERNELS(f16)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_conv REF_OWNED
#define REF_OWNS_conv_pack_weights REF_CALLS(pack_weights)
#define REF_OWNS_conv_transpose REF_OWNED
#define REF_OWNS_conv_tbc REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
