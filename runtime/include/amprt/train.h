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
 *                 Products are formed in double and rounded to float once,
 *                 as PyTorch's kernel does.  growth_interval <= 0 never
 *                 grows; the tracker saturates at INT32_MAX.
 *  grad_accumulate_S  acc[i] = acc[i] + (float)g[i], an f32 addition: an
 *                 f32 parameter's accumulated gradient taking a bf16/f16
 *                 micro-batch gradient, bit for bit cast_S_f32 into a
 *                 temporary and then add_f32(acc, temporary), in one pass.
 *  conv_backward_weight_to_f32_S  conv_backward_weight_S's dw (amprt/
 *                 backward.h), each element rounded to S as that kernel
 *                 rounds it, then widened into the f32 dw: stored
 *                 (accumulate 0: cast_S_f32's result) or added
 *                 (accumulate 1: grad_accumulate_S's).  Bit for bit the
 *                 two kernels in turn, without the S temporary: an f32
 *                 parameter's gradient written straight from the weight
 *                 gradient's tiles into the training state.
 *  sgd            d = maximize ? -g : g; d += wd p (if wd != 0); momentum
 *                 m != 0: buf = step == 0 ? d : m buf + (1 - dampening) d;
 *                 d = nesterov ? d + m buf : buf; p -= lr d.  `step` counts
 *                 the updates made before this one; at step 0 buf is only
 *                 written, never read.  momentum_buffer may be NULL when
 *                 m == 0.  Nothing changes where found_inf.
 *  adam           step' = step + 1; g = maximize ? -g : g; AdamW (decoupled)
 *                 p *= 1 - lr wd, Adam g += wd p (if wd != 0);
 *                 m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 *                 amsgrad: vmax = max(vmax, v) (NaN propagates); p -= lr/bc1
 *                 * m / (sqrt(v or vmax)/sqrt(bc2) + eps), bc = 1 - b^step'.
 *                 max_exp_avg_sq may be NULL without amsgrad.  Nothing
 *                 changes where found_inf.
 * maximize negates the gradient before weight decay, as torch.optim (1.13)
 * does, so the state matches PyTorch's and weight decay still shrinks p.
 * Scalar coefficients (1 - dampening, lr/bc1, sqrt(bc2), 1 - lr wd, ...)
 * are computed in double, as PyTorch computes them in Python, then rounded
 * to the compute type.  found_inf is 0 or 1 (any nonzero value counts as 1).
 * Parameters and their optimizer state share the parameter's dtype T;
 * arithmetic is in f32 (f64 for f64), each stored value rounded once: the
 * new p is computed from the unrounded new state (as PyTorch's fused
 * optimizers do), not from the state re-read after rounding.
 *
 *  amp_st_write   writes a safetensors file atomically: the temporary file
 *                 "<path>.tmp" (flock'ed: saves of one path take turns; one
 *                 a killed save left is reused), fsync, rename over `path`,
 *                 fsync of the directory; on any error the old file is
 *                 untouched and the temporary removed.  Tensors in the
 *                 given order.
 *                 Returns AMP_OK, or before touching any file:
 *                 AMP_ERR_NULL_ARG (path; tensors when n > 0; a name; data
 *                 of a non-empty tensor), AMP_ERR_BAD_DIM (n or a dim < 0),
 *                 AMP_ERR_WEIGHTS_DTYPE (not an amp_dtype),
 *                 AMP_ERR_WEIGHTS_SHAPE (ndim outside 0..8, byte count
 *                 overflows), AMP_ERR_WEIGHTS_HEADER (a duplicate name, a
 *                 name that is not UTF-8 or is "__metadata__", a header
 *                 over 100 MiB), AMP_ERR_OUT_OF_MEMORY; or AMP_ERR_IO when
 *                 a file operation fails (if only the final fsync of the
 *                 directory fails, the new file is in place but may not be
 *                 durable yet).  The header holds "__metadata__":
 *                 {"format": "pt", "crc32c": "xxxxxxxx"} (the CRC-32C of
 *                 the data region, which amp_st_parse verifies) and is
 *                 padded with spaces to a multiple of 8 bytes.  A new file gets mode 0644; an existing
 *                 file's permission bits are kept.
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
    X(unscale, T, void, (size_t n, CT *g, double inv_scale, int32_t *found_inf),         \
      (n, g, inv_scale, found_inf))                                                      \
    X(sum_squares, T, void, (size_t n, const CT *g, double *acc), (n, g, acc))           \
    X(sgd, T, void,                                                                      \
      (size_t n, CT *p, const CT *g, CT *momentum_buffer, const amp_sgd_hparams *h,      \
       int64_t step, int32_t found_inf),                                                 \
      (n, p, g, momentum_buffer, h, step, found_inf))                                    \
    X(adam, T, void,                                                                     \
      (size_t n, CT *p, const CT *g, CT *exp_avg, CT *exp_avg_sq, CT *max_exp_avg_sq,    \
       const amp_adam_hparams *h, int64_t step, int32_t found_inf),                      \
      (n, p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, h, step, found_inf))

#define AMP_TRAIN_KERNELS(X)                                                             \
    X(grad_accumulate, bf16, void, (size_t n, float *acc, const amp_bf16 *g), (n, acc, g)) \
    X(grad_accumulate, f16, void, (size_t n, float *acc, const amp_f16 *g), (n, acc, g))  \
    X(conv_backward_weight_to_f32, bf16, void,                                           \
      (const amp_conv_desc *d, const amp_bf16 *x, const amp_bf16 *dy, float *dw,         \
       int accumulate),                                                                  \
      (d, x, dy, dw, accumulate))                                                        \
    X(conv_backward_weight_to_f32, f16, void,                                            \
      (const amp_conv_desc *d, const amp_f16 *x, const amp_f16 *dy, float *dw,           \
       int accumulate),                                                                  \
      (d, x, dy, dw, accumulate))                                                        \
    X(scaler_update, none, void,                                                         \
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

#if !defined(AMPRT_NO_STDIO) /* not in a runtime without files (make BARE=1) */
int amp_st_write(const char *path, const amp_st_entry *tensors, int n);
#endif
