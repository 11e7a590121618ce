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
 */
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
