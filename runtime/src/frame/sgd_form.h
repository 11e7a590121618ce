/*
 * sgd_form.h - the scalars of an sgd step as the kernel sets' vector
 * loops use them: each hyperparameter rounded to f32 as the reference
 * rounds it, and the flags that choose the loop's variant.  Every set's
 * context struct names these fields alike, so one macro fills them.
 */
#ifndef AMPRT_FRAME_SGD_FORM_H
#define AMPRT_FRAME_SGD_FORM_H

/* ctx: a set's sgd context (fields lr, m, keep, wd, use_wd, use_m,
 * maximize, nesterov, first); h: the amp_sgd_hparams; step: the step. */
#define AMP_SGD_SCALARS_FILL(ctx, h, step)                                                          \
    do {                                                                                            \
        (ctx).lr = (float)(h)->lr;                                                                  \
        (ctx).m = (float)(h)->momentum;                                                             \
        (ctx).keep = (float)(1.0 - (h)->dampening);                                                 \
        (ctx).wd = (float)(h)->weight_decay;                                                        \
        (ctx).use_wd = (h)->weight_decay != 0;                                                      \
        (ctx).use_m = (h)->momentum != 0;                                                           \
        (ctx).maximize = (h)->maximize;                                                             \
        (ctx).nesterov = (h)->nesterov;                                                             \
        (ctx).first = (step) == 0;                                                                  \
    } while (0)

#endif
