/*
 * ref_linalg.c - reference linear (x w^T + bias) and batched matmul.
 *
 * Each output element is one f32 dot product, accumulated in index order
 * k = 0 .. K-1 from zero and rounded to the storage dtype once. For linear
 * the bias is added after the dot product, as PyTorch's CPU addmm does
 * (c = beta * bias + dot with beta = 1), so an f32 bias and an f32 dot
 * product are summed once, not folded into the accumulation.
 * Outputs are contiguous and must not overlap the inputs.
 */
#include "amprt_internal.h"

/* sum over k of a[k * a_step] * b[k * b_step], in f32. */
static AMP_ALWAYS_INLINE float dot(amp_dtype t, int64_t K, const void *a, int64_t a_off, int64_t a_step,
                                   const void *b, int64_t b_off, int64_t b_step)
{
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k++)
        acc += amp_ld(t, a, a_off + k * a_step) * amp_ld(t, b, b_off + k * b_step);
    return acc;
}

/* y[M,N] = x[M,K] w[N,K]^T + bias[N]: both operands walk along their rows. */
static AMP_ALWAYS_INLINE void linear(amp_dtype t, int64_t M, int64_t N, int64_t K, const void *x,
                                     const void *w, const void *bias, void *y)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float acc = dot(t, K, x, m * K, 1, w, n * K, 1);
            if (bias != NULL)
                acc += amp_ld(t, bias, n);
            amp_st(t, y, m * N + n, acc);
        }
}

/* c[i][M,N] = a[i][M,K] b[i][K,N]: a walks a row, b walks a column. */
static AMP_ALWAYS_INLINE void matmul(amp_dtype t, int64_t batch, int64_t M, int64_t N, int64_t K,
                                     const void *a, int64_t a_batch_stride, const void *b,
                                     int64_t b_batch_stride, void *c)
{
    for (int64_t i = 0; i < batch; i++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                amp_st(t, c, (i * M + m) * N + n,
                       dot(t, K, a, i * a_batch_stride + m * K, 1, b, i * b_batch_stride + n, N));
}

#define LINALG_KERNELS(T)                                                                         \
    void amp_ref_linear_##T(int64_t M, int64_t N, int64_t K, const AMP_CTYPE_##T *x,              \
                            const AMP_CTYPE_##T *w, const AMP_CTYPE_##T *bias, AMP_CTYPE_##T *y)  \
    {                                                                                             \
        linear(AMP_DTYPE_##T, M, N, K, x, w, bias, y);                                            \
    }                                                                                             \
    void amp_ref_matmul_##T(int64_t batch, int64_t M, int64_t N, int64_t K,                       \
                            const AMP_CTYPE_##T *a, int64_t a_batch_stride,                       \
                            const AMP_CTYPE_##T *b, int64_t b_batch_stride, AMP_CTYPE_##T *c)     \
    {                                                                                             \
        matmul(AMP_DTYPE_##T, batch, M, N, K, a, a_batch_stride, b, b_batch_stride, c);           \
    }

AMP_FOR_EACH_KERNEL_DTYPE(LINALG_KERNELS)
