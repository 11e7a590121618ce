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
 * linear_relu is hand-written: two kernels in turn.
 */
#include "amprt_internal.h"

#define REF_PART "ref_linalg.inc"
#include "ref_acc_twice.h"

#define LINALG_KERNELS(T)                                                                         \
    void amp_ref_linear_relu_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,         \
                                 const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias,               \
                                 AMP_CTYPE_##T *y)                                                \
    {                                                                                             \
        amp_ref_linear_##T(M, N, K, x, w, bias, y);                                               \
        if (M > 0 && N > 0)                                                                       \
            amp_ref_relu_##T((size_t)(M * N), y, y);                                              \
    }

LINALG_KERNELS(f64)
AMP_FOR_EACH_KERNEL_DTYPE(LINALG_KERNELS)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_linear REF_OWNED
#define REF_OWNS_matmul REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
