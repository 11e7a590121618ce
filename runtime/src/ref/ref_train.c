/*
 * ref_train.c - reference kernels of the training step (amprt/train.h):
 * unscaling gradients and checking them for inf/NaN, the squared norm for
 * clipping, the loss-scale update, and the sync-free SGD and Adam/AdamW.
 *
 * Bodies are in ref_train.inc, instantiated for ACC float (f32, bf16, f16)
 * and ACC double (f64) by ref_acc_twice.h.  Each optimizer reads an
 * element's parameter, gradient and state once, computes the whole update
 * in ACC, and rounds each new value once when it stores it; the new
 * parameter uses the unrounded new state.  PyTorch's single-tensor
 * optimizers instead run one tensor op at a time, rounding every
 * intermediate to the parameter's dtype: in f32 and f64 the two agree to
 * a few units in the last place, in bf16/f16 amprt is the more accurate.
 *
 * found_inf is a scalar, so "keep the old value where found_inf" is one
 * early return: nothing is written, and nothing needs to be read.
 *
 * sum_squares, grad_accumulate (an f32 accumulator) and scaler_update
 * (dtype-free) are hand-written: each definition is the body.
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_train.inc"
#include "ref_acc_twice.h"

#define TRAIN_KERNELS(T)                                                                          \
    void amp_ref_sum_squares_##T(size_t n, const AMP_CTYPE_##T *g, double *acc)                   \
    {                                                                                             \
        /* Every dtype widens exactly to double; one sum, in index order. */                      \
        double s = *acc;                                                                          \
        for (size_t i = 0; i < n; i++) {                                                          \
            double v = amp_ldd(AMP_DTYPE_##T, g, (int64_t)i);                                     \
            s += v * v;                                                                           \
        }                                                                                         \
        *acc = s;                                                                                 \
    }

TRAIN_KERNELS(f64)
TRAIN_KERNELS(f32)
TRAIN_KERNELS(bf16)
TRAIN_KERNELS(f16)

/* The widening is exact; the sum is amp_ref_add_f32's a + b in f32. */
#define GRAD_ACCUMULATE(S)                                                                        \
    void amp_ref_grad_accumulate_##S(size_t n, float *acc, const AMP_CTYPE_##S *g)                \
    {                                                                                             \
        for (size_t i = 0; i < n; i++)                                                            \
            acc[i] = acc[i] + amp_ld(AMP_DTYPE_##S, g, (int64_t)i);                               \
    }
GRAD_ACCUMULATE(bf16)
GRAD_ACCUMULATE(f16)

/* x rounded to float; beyond float's range (from the halfway point between
 * FLT_MAX and 2^128 up) infinity, as IEEE rounds, without the conversion
 * C leaves undefined. */
static float round_to_float(double x)
{
    if (fabs(x) >= 0x1.ffffffp127)
        return x > 0 ? (float)INFINITY : -(float)INFINITY;
    return (float)x;
}

/* GradScaler.update, as PyTorch's _amp_update_scale_ kernel: float scale
 * times a double factor is formed in double and rounded to float once.
 * PyTorch grows when the tracker reaches growth_interval exactly (==);
 * here at or past it, so lowering the interval between calls cannot stop
 * growth for good. */
void amp_ref_scaler_update(float *scale, int32_t *growth_tracker, int32_t found_inf, double growth_factor,
                           double backoff_factor, int64_t growth_interval)
{
    if (found_inf) {
        *scale = round_to_float((double)*scale * backoff_factor);
        *growth_tracker = 0;
        return;
    }
    /* Counted in 64 bits: the tracker saturates instead of overflowing
     * when growth_interval <= 0 (never grow) keeps it counting. */
    {
        int64_t successful = (int64_t)*growth_tracker + 1;
        if (growth_interval > 0 && successful >= growth_interval) {
            float grown = round_to_float((double)*scale * growth_factor);
            if (isfinite(grown)) /* never grow past float's range to inf */
                *scale = grown;
            *growth_tracker = 0;
        } else {
            *growth_tracker = successful > INT32_MAX ? INT32_MAX : (int32_t)successful;
        }
    }
}

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_unscale REF_OWNED
#define REF_OWNS_sgd REF_OWNED
#define REF_OWNS_adam REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
