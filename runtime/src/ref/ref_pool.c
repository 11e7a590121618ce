/*
 * ref_pool.c - reference max, average and adaptive average and max pooling over 1,
 * 2 or 3 spatial dims, with PyTorch's windows.
 *
 * Each window is reduced in ACC (f32 for f32/bf16/f16, f64 for f64) in
 * row-major order and the result rounded to the storage dtype once; the
 * bodies live in ref_pool.inc, instantiated once per ACC below. As in
 * ref_conv.c, the nspatial dims are the last of a 3-d geometry whose
 * leading dims are trivial (size 1, kernel 1, stride 1, no padding).
 *
 * Windows are clipped as PyTorch clips them (ref_window.h, shared with the
 * gradients in ref_backward_spatial.c). out_size may come from ceil_mode,
 * so the last window may start inside the right padding or run past it;
 * the clipping handles both.
 */
#include <math.h>

#include "amprt_internal.h"
#include "ref_window.h"

#define REF_PART "ref_pool.inc"
#include "ref_acc_twice.h"

#define POOL_KERNELS(T, INST)                                                                     \
    void amp_ref_max_pool_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y,   \
                              int64_t *indices)                                                   \
    {                                                                                             \
        max_pool_##INST(AMP_DTYPE_##T, d, x, y, indices);                                         \
    }                                                                                             \
    void amp_ref_avg_pool_##T(const amp_pool_desc *d, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)   \
    {                                                                                             \
        avg_pool_##INST(AMP_DTYPE_##T, d, x, y);                                                  \
    }                                                                                             \
    void amp_ref_adaptive_avg_pool_##T(int nspatial, int64_t planes, const int64_t *in_size,      \
                                       const int64_t *out_size, const AMP_CTYPE_##T *x,           \
                                       AMP_CTYPE_##T *y)                                          \
    {                                                                                             \
        adaptive_avg_pool_##INST(AMP_DTYPE_##T, nspatial, planes, in_size, out_size, x, y);       \
    }                                                                                             \
    void amp_ref_adaptive_max_pool_##T(int nspatial, int64_t planes, const int64_t *in_size,      \
                                       const int64_t *out_size, const AMP_CTYPE_##T *x,           \
                                       AMP_CTYPE_##T *y, int64_t *indices)                        \
    {                                                                                             \
        adaptive_max_pool_##INST(AMP_DTYPE_##T, nspatial, planes, in_size, out_size, x, y,        \
                                 indices);                                                        \
    }

POOL_KERNELS(f64, dacc)
POOL_KERNELS(f32, facc)
POOL_KERNELS(bf16, facc)
POOL_KERNELS(f16, facc)
