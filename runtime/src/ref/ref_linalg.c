/*
 * ref_linalg.c - reference linear (x w^T + bias), linear_relu (its relu,
 * by the relu kernel), and batched matmul.
 *
 * Each output element is one f32 dot product (f64 for f64), accumulated in
 * index order k = 0 .. K-1 from zero and rounded to the storage dtype once. For linear
 * the bias is added after the dot product, as PyTorch's CPU addmm does
 * (c = beta * bias + dot with beta = 1), so an f32 bias and an f32 dot
 * product are summed once, not folded into the accumulation.
 * Outputs are contiguous and must not overlap the inputs.
 *
 * The bodies are in ref_linalg.inc, compiled once computing in float (f32,
 * bf16, f16) and once in double (f64).
 *
 * linear_relu is hand-written: two kernels in turn; so are linear_ex
 * (linear or linear_relu on w or on packed, which is the weight matrix
 * itself in T) and its packing (a copy, or f32 rounded to T).
 */
#include <string.h>

#include "amprt_internal.h"

#define REF_PART "ref_linalg.inc"
#include "ref_acc_twice.h"

/* linear_pack_weights: a copy when src is t, else src widened and rounded
 * to t once (f32 -> t exactly as amp_cast_f32_<t> does). */
static void pack_weights(amp_dtype t, size_t n, amp_dtype src, const void *w, void *packed)
{
    if (src == t) {
        if (n > 0)
            memcpy(packed, w, n * amp_dtype_size(t));
        return;
    }
    for (size_t i = 0; i < n; i++)
        amp_std(t, packed, (int64_t)i, amp_ldd(src, w, (int64_t)i));
}

#define LINALG_KERNELS(T)                                                                         \
    void amp_ref_linear_relu_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,         \
                                 const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,               \
                                 AMP_CTYPE_##T *y)                                                \
    {                                                                                             \
        amp_ref_linear_##T(M, N, K, x, w, bias, y);                                               \
        if (M > 0 && N > 0)                                                                       \
            amp_ref_relu_##T((size_t)(M * N), y, y);                                              \
    }                                                                                                  \
    size_t amp_ref_linear_packed_bytes_##T(int64_t N, int64_t K)                                  \
    {                                                                                             \
        return N > 0 && K > 0 ? (size_t)(N * K) * sizeof(AMP_CTYPE_##T) : 0;                      \
    }                                                                                             \
    void amp_ref_linear_pack_weights_##T(int64_t N, int64_t K, amp_dtype src, const void *w,      \
                                         void *packed)                                            \
    {                                                                                             \
        pack_weights(AMP_DTYPE_##T, N > 0 && K > 0 ? (size_t)(N * K) : 0, src, w, packed);        \
    }                                                                                             \
    void amp_ref_linear_ex_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,           \
                               const AMP_CTYPE_##T *w, const void *packed,                        \
                               const AMP_CTYPE_##T *bias, int relu, AMP_CTYPE_##T *y)             \
    {                                                                                             \
        const AMP_CTYPE_##T *wt = packed != NULL ? (const AMP_CTYPE_##T *)packed : w;             \
        if (relu)                                                                                 \
            amp_ref_linear_relu_##T(M, N, K, x, wt, bias, y);                                     \
        else                                                                                      \
            amp_ref_linear_##T(M, N, K, x, wt, bias, y);                                          \
    }

LINALG_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(LINALG_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_linear REF_OWNED
#define REF_OWNS_matmul REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
