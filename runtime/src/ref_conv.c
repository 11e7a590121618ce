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
 * last in a 3-d geometry whose leading dims have size 1, kernel 1, stride 1
 * and no padding, so the extra loops run once and change nothing.
 * output_padding is not read: it only widens out_size, which is given.
 */
#include "amprt_internal.h"

typedef struct {
    int64_t in[3], out[3], kernel[3], stride[3], padding[3], dilation[3];
    int64_t in_plane, out_plane, kernel_plane; /* elements per channel */
} conv_geometry;

static AMP_ALWAYS_INLINE conv_geometry geometry_of(const amp_conv_desc *d)
{
    conv_geometry g;
    int lead = 3 - d->nspatial;
    for (int i = 0; i < 3; i++) {
        int s = i - lead; /* index into the descriptor's arrays */
        g.in[i] = s >= 0 ? d->in_size[s] : 1;
        g.out[i] = s >= 0 ? d->out_size[s] : 1;
        g.kernel[i] = s >= 0 ? d->kernel[s] : 1;
        g.stride[i] = s >= 0 ? d->stride[s] : 1;
        g.padding[i] = s >= 0 ? d->padding[s] : 0;
        g.dilation[i] = s >= 0 ? d->dilation[s] : 1;
    }
    g.in_plane = g.in[0] * g.in[1] * g.in[2];
    g.out_plane = g.out[0] * g.out[1] * g.out[2];
    g.kernel_plane = g.kernel[0] * g.kernel[1] * g.kernel[2];
    return g;
}

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

#define ACC float
#define LD amp_ld
#define ST amp_st
#define BODY(name) name##_facc
#include "ref_conv.inc"
#undef ACC
#undef LD
#undef ST
#undef BODY

#define ACC double
#define LD amp_ldd
#define ST amp_std
#define BODY(name) name##_dacc
#include "ref_conv.inc"
#undef ACC
#undef LD
#undef ST
#undef BODY

#define CONV_KERNELS(T, INST)                                                                     \
    void amp_ref_conv_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *w, \
                          const AMP_CTYPE_##T *bias, AMP_CTYPE_##T *y)                            \
    {                                                                                             \
        conv_##INST(AMP_DTYPE_##T, d, x, w, bias, y);                                             \
    }                                                                                             \
    void amp_ref_conv_transpose_##T(const amp_conv_desc *d, const AMP_CTYPE_##T *x,               \
                                    const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,            \
                                    AMP_CTYPE_##T *y)                                             \
    {                                                                                             \
        conv_transpose_##INST(AMP_DTYPE_##T, d, x, w, bias, y);                                   \
    }                                                                                             \
    void amp_ref_conv_tbc_##T(int64_t time, int64_t batch, int64_t in, int64_t kernel,            \
                              int64_t out, int64_t pad, const AMP_CTYPE_##T *x,                   \
                              const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,                  \
                              AMP_CTYPE_##T *y)                                                   \
    {                                                                                             \
        conv_tbc_##INST(AMP_DTYPE_##T, time, batch, in, kernel, out, pad, x, w, bias, y);         \
    }

CONV_KERNELS(f64, dacc)
CONV_KERNELS(f32, facc)
CONV_KERNELS(bf16, facc)
CONV_KERNELS(f16, facc)
