/*
 * ref_backward_unary.c - reference gradient kernels of amprt/backward.h for
 * the elementwise ops (the parameterless unary list, softplus, clamp,
 * pow_scalar, rpow_scalar, fmod_scalar, remainder_scalar, maximum, atan2,
 * pow, minimum, fmod, remainder), softmax, log_softmax,
 * reverse_cumsum, glu, lerp, and the reductions logsumexp, norm, amax/amin,
 * max/min of a whole tensor, var and std.
 *
 * Formulas are PyTorch's autograd ones (tools/autograd/derivatives.yaml and
 * FunctionsManual.cpp), evaluated in ACC (f32 for f32/bf16/f16, f64 for f64)
 * and rounded once per output element. Bodies in ref_backward_unary.inc,
 * instantiated twice by ref_acc_twice.h.
 *
 * gelu_backward and gelu_tanh_backward take erf, exp and tanh from
 * amp_mathf.h and amp_expf.h (amp_erff, amp_expf, amp_tanhf in f32), and
 * softmax_backward and log_softmax_backward add a row up in
 * AMP_ROW_LANES lanes folded in halves (log_softmax_backward's exp is
 * amp_expf): the operations of the avx2 and AVX-512 sets' vector kernels
 * (x86/avx2_rows.c, avx512_rows.c), which agree with these bit for bit.
 *
 * add_relu_backward is hand-written: two kernels in turn, a chunk at a time.
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_mathf.h"

#define UNARY_ENUMERATOR(op, X, T, CT) UBW_##op##_backward,
#define PARAM_ENUMERATOR(op, X, T, CT) PBW_##op##_backward,
#define BINARY_ENUMERATOR(op, X, T, CT) BBW_##op##_backward,
typedef enum { AMP_UNARY_BACKWARD_OPS(UNARY_ENUMERATOR, ~, ~, ~) } unary_backward_op;
typedef enum { AMP_UNARY_PARAM_BACKWARD_OPS(PARAM_ENUMERATOR, ~, ~, ~) } param_backward_op;
typedef enum { AMP_BINARY_BACKWARD_OPS(BINARY_ENUMERATOR, ~, ~, ~) } binary_backward_op;

/* Offset of flat output element i (row-major over shape) in an operand
 * read through `stride`. */
static AMP_ALWAYS_INLINE int64_t strided_offset(int ndim, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        offset += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return offset;
}

/* As ref_reduce.c: the offset in x of the index'th element of the
 * sub-lattice of dims whose reduce flag equals `reduced`. */
static AMP_ALWAYS_INLINE int64_t offset_in_x(int64_t index, int ndim, const int64_t *shape,
                                             const uint8_t *reduce, int reduced)
{
    int64_t offset = 0, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if ((reduce[d] != 0) == reduced) {
            offset += (index % shape[d]) * stride;
            index /= shape[d];
        }
        stride *= shape[d];
    }
    return offset;
}

static AMP_ALWAYS_INLINE int64_t count_of(int ndim, const int64_t *shape, const uint8_t *reduce, int reduced)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++)
        if ((reduce[d] != 0) == reduced)
            count *= shape[d];
    return count;
}

#define REF_PART "ref_backward_unary.inc"
#include "ref_acc_twice.h"

/* The wrappers of the per-op lists: every op of a list shares one body,
 * told apart by the op's enumerator (ref_wrapper.h's REF_SHARED_WRAPPER). */
#define UNARY_BW_X(kernel, T, ret, params, args) \
    REF_SHARED_WRAPPER(map_unary_backward, UBW_##kernel, kernel, T, ret, params, args)
#define PARAM_BW_X(kernel, T, ret, params, args) \
    REF_SHARED_WRAPPER(map_param_backward, PBW_##kernel, kernel, T, ret, params, args)
#define BINARY_BW_X(kernel, T, ret, params, args) \
    REF_SHARED_WRAPPER(binary_backward, BBW_##kernel, kernel, T, ret, params, args)
#define UNARY_BW_KERNELS(T)                                                                       \
    AMP_UNARY_BACKWARD_OPS(AMP_UNARY_BACKWARD_ROW, UNARY_BW_X, T, AMP_CTYPE_##T)                  \
    AMP_UNARY_PARAM_BACKWARD_OPS(AMP_UNARY_PARAM_BACKWARD_ROW, PARAM_BW_X, T, AMP_CTYPE_##T)      \
    AMP_BINARY_BACKWARD_OPS(AMP_BINARY_BACKWARD_ROW, BINARY_BW_X, T, AMP_CTYPE_##T)

UNARY_BW_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(UNARY_BW_KERNELS)

/* add_relu_backward: the reference's add and relu_backward in turn, a
 * chunk at a time through a buffer on the stack (no allocation; dx may
 * be a, b or y, each element read before it is written). */
#define ADD_RELU_CHUNK 1024
#define ADD_RELU_BW(T)                                                                        \
    void amp_ref_add_relu_backward_##T(size_t n, const AMP_CTYPE_##T *y, const AMP_CTYPE_##T *a, \
                                       const AMP_CTYPE_##T *b, AMP_CTYPE_##T *dx)             \
    {                                                                                         \
        AMP_CTYPE_##T sum[ADD_RELU_CHUNK];                                                    \
        for (size_t k = 0; k < n; k += ADD_RELU_CHUNK) {                                      \
            const size_t m = n - k < ADD_RELU_CHUNK ? n - k : ADD_RELU_CHUNK;                 \
            amp_ref_add_##T(m, a + k, b + k, sum);                                            \
            amp_ref_relu_backward_##T(m, y + k, y + k, sum, dx + k);                          \
        }                                                                                     \
    }
ADD_RELU_BW(f64)
ADD_RELU_BW(f32)
ADD_RELU_BW(bf16)
ADD_RELU_BW(f16)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_amax_backward REF_SHARES(extremum_backward, 0)
#define REF_OWNS_max_backward REF_SHARES(extremum_backward, 1)
#define REF_OWNS_var_backward REF_SHARES(var_backward, 0)
#define REF_OWNS_std_backward REF_SHARES(var_backward, 1)
#define REF_OWNS_softmax_backward REF_SHARES(softmax_backward, 0)
#define REF_OWNS_log_softmax_backward REF_SHARES(softmax_backward, 1)
#define REF_OWNS_glu_backward REF_OWNED
#define REF_OWNS_lerp_backward REF_OWNED
#define REF_OWNS_reverse_cumsum REF_OWNED
#define REF_OWNS_logsumexp_backward REF_OWNED
#define REF_OWNS_norm_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
