/*
 * amprt/train.h - part of amprt.h (include that, not this): loss scaling
 * and the optimizers of the emitted training step, and writing checkpoints.
 *
 * Sync-free, as torch_xla's syncfree optimizers: found_inf (0 or 1) is
 * passed into every kernel, which keeps the old values element by element
 * when it is set, so the step needs no branch on device data.  Formulas
 * (autocast-facts.md, PyTorch's torch.optim):
 *
 *  unscale        g *= (float)inv_scale (inv_scale is 1/scale computed in
 *                 double); *found_inf = 1 if any element of g was not
 *                 finite (PyTorch's _amp_foreach_non_finite_check_and_unscale_);
 *                 *found_inf is only ever set, never cleared.
 *  sum_squares    *acc += sum of g[i]^2, accumulated in double: the global
 *                 norm for clipping is sqrt of the sum over every gradient.
 *  scaler_update  found_inf: scale *= backoff_factor, tracker = 0; else
 *                 tracker += 1, and at growth_interval: scale *= growth_factor
 *                 if the product is finite, tracker = 0 (GradScaler.update).
 *  sgd            d = g (+ wd p); momentum m: buf = step == 0 ? d :
 *                 m buf + (1 - dampening) d; d = nesterov ? d + m buf : buf;
 *                 p -= lr d (maximize: +=).  `step` counts the updates made
 *                 before this one.  Nothing changes where found_inf.
 *  adam           step' = step + 1; AdamW (decoupled) p *= 1 - lr wd, Adam
 *                 g += wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 *                 amsgrad: vmax = max(vmax, v); p -= lr/bc1 * m /
 *                 (sqrt(v or vmax)/sqrt(bc2) + eps), bc = 1 - b^step'.
 *                 Nothing changes where found_inf.
 * Parameters and their optimizer state share the parameter's dtype T;
 * arithmetic is in f32 (f64 for f64), each stored value rounded once.
 *
 *  amp_st_write   writes a safetensors file atomically: a temporary file in
 *                 the same directory, fsync, rename over `path`, fsync of
 *                 the directory; on any error the old file is untouched and
 *                 the temporary removed.  Tensors in the given order.
 */
typedef struct amp_sgd_hparams {
    double lr, momentum, dampening, weight_decay;
    int nesterov, maximize;
} amp_sgd_hparams;

typedef struct amp_adam_hparams {
    double lr, beta1, beta2, eps, weight_decay;
    int amsgrad, maximize, decoupled; /* decoupled: AdamW */
} amp_adam_hparams;

#define AMP_TRAIN_OF_CTYPE(X, T, CT)                                                     \
    X(unscale_##T, void, (size_t n, CT *g, double inv_scale, int32_t *found_inf),        \
      (n, g, inv_scale, found_inf))                                                      \
    X(sum_squares_##T, void, (size_t n, const CT *g, double *acc), (n, g, acc))          \
    X(sgd_##T, void,                                                                     \
      (size_t n, CT *p, const CT *g, CT *momentum_buffer, const amp_sgd_hparams *h,      \
       int64_t step, int32_t found_inf),                                                 \
      (n, p, g, momentum_buffer, h, step, found_inf))                                    \
    X(adam_##T, void,                                                                    \
      (size_t n, CT *p, const CT *g, CT *exp_avg, CT *exp_avg_sq, CT *max_exp_avg_sq,    \
       const amp_adam_hparams *h, int64_t step, int32_t found_inf),                      \
      (n, p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, h, step, found_inf))

#define AMP_TRAIN_KERNELS(X)                                                             \
    X(scaler_update, void,                                                               \
      (float *scale, int32_t *growth_tracker, int32_t found_inf, double growth_factor,   \
       double backoff_factor, int64_t growth_interval),                                  \
      (scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval))

/* One tensor of a file amp_st_write writes. */
typedef struct amp_st_entry {
    const char *name;
    amp_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data; /* native byte order (the runtime assumes little-endian hosts) */
} amp_st_entry;

int amp_st_write(const char *path, const amp_st_entry *tensors, int n);
