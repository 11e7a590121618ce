/*
 * ref_gemm.c - reference gemm (strided, batched, alpha/beta, addbmm's
 * sum over the batch) and contract (einsum over an index space).
 * The bodies are in ref_gemm.inc, instantiated here once per compute type.
 *
 * gemm_relu_backward (two kernels in turn) and contract (its operand
 * array converted to the body's const void *const *) are hand-written.
 */
#include "amprt_internal.h"

#define REF_PART "ref_gemm.inc"
#include "ref_acc_twice.h"

#define GEMM_KERNELS(T, ACC_SUFFIX)                                                               \
    void amp_ref_gemm_relu_backward_##T(const amp_gemm_desc *d, const AMP_CTYPE_##T *a,           \
                                        const AMP_CTYPE_##T *b, const AMP_CTYPE_##T *y,           \
                                        AMP_CTYPE_##T *dx)                                        \
    {                                                                                             \
        const int64_t out_batches = d->sum_batch ? 1 : d->batch;                                  \
        gemm##ACC_SUFFIX(AMP_DTYPE_##T, d, a, b, NULL, dx);                                       \
        if (out_batches > 0 && d->M > 0 && d->N > 0)                                              \
            amp_ref_relu_backward_##T((size_t)(out_batches * d->M * d->N), y, y, dx, dx);         \
    }                                                                                             \
    void amp_ref_contract_##T(const amp_contract_desc *d, const AMP_CTYPE_##T *const *operands,   \
                              AMP_CTYPE_##T *y)                                                   \
    {                                                                                             \
        contract##ACC_SUFFIX(AMP_DTYPE_##T, d, (const void *const *)operands, y);                 \
    }

GEMM_KERNELS(f64, _dacc)
GEMM_KERNELS(f32, _facc)
GEMM_KERNELS(bf16, _facc)
GEMM_KERNELS(f16, _facc)

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_gemm REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
