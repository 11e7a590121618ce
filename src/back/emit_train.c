/* emit_train.c: the training step, for a model with a train section.
 *
 * Requires: the training graph (forward, the scaled-loss seed, backward;
 * autodiff.c) planned in its own arena, and c->train.  Produces, beside
 * the inference API: <prefix>_train_state (parameters, gradients,
 * optimizer and scaler state), <prefix>_train_init, _train_params,
 * _train_step, _save and _load (docs/training.md).
 *
 * The step: forward and backward (the graph), then in plain C around
 * libamprt calls: add each of this micro-batch's gradients to the state's
 * as soon as it is final and, on the micro-batch that completes a step,
 * push it to the all-reduce over the processes of a data-parallel run (so
 * the reduction overlaps the rest of the backward; the runtime buckets it);
 * at the accumulation boundary wait for that reduction, unscale them
 * in one pass that also detects inf and NaN, max-reduce found_inf over the
 * processes, clip by the global norm, run the optimizer with found_inf passed in
 * (the update is skipped element-wise: sync-free, as torch_xla's
 * optimizers), update the scaler, and mark the gradients consumed:
 * s->grad_live 0, so the next backward stores its gradients instead of
 * adding them to zeros (PyTorch's zero_grad(set_to_none=True): no pass
 * writing zeros, and none reading them back).
 */
#include "emit.h"

#include <string.h>

static bool trainable(const Value *p) { return p->kind == V_PARAM && p->grad; }

/* The optimizer's state buffers, named as torch.optim's state_dict. */
static int optimizer_slots(const TrainConfig *t, const char **names)
{
    int n = 0;
    if (t->optimizer == OPTIMIZER_SGD) {
        if (t->momentum != 0)
            names[n++] = "momentum_buffer";
    } else {
        names[n++] = "exp_avg";
        names[n++] = "exp_avg_sq";
        if (t->amsgrad)
            names[n++] = "max_exp_avg_sq";
    }
    return n;
}

static const char *numel_of(Emitter *e, const Value *v) { return numel_c(e, &v->type.shape); }


/* <PREFIX>_STATE_BYTES: each parameter and buffer, and for a trainable one
 * its gradient and optimizer slots, each padded. */
static int64_t state_bytes(Emitter *e)
{
    const char *slots[3];
    int nslots = optimizer_slots(e->c->train, slots);
    int64_t bytes = 0;
    for (int i = 0; i < e->g->params->len; i++) {
        Value *v = VEC_AT(e->g->params, i);
        bytes += const_bytes_padded(e, v) * (trainable(v) ? 2 + nslots : 1);
    }
    return bytes;
}

/* Whether the step draws random numbers (dropout in training mode): then
 * the state carries the generator's seed and counter (amprt/random.h). */
static bool draws_random(Emitter *e)
{
    for (int i = 0; i < e->g->nodes->len; i++)
        if (dropout_draws(VEC_AT(e->g->nodes, i)))
            return true;
    return false;
}

void emit_train_decls(Emitter *e, Emitter *fwd, Buf *h)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const TrainConfig *t = c->train;
    const char *p = e->prefix, *P = e->PREFIX;
    const char *slots[3];
    int nslots = optimizer_slots(t, slots);
    (void)fwd;

    buf_puts(h, "/* ---- training (docs/training.md) ---- */\n\n");
    buf_puts(h, "/* Everything a training run carries from step to step. The pointers\n"
                " * point into the storage given to <prefix>_train_init. */\n");
    buf_printf(h, "typedef struct %s_train_state {\n", p);
    buf_puts(h, "    /* parameters and buffers, mutable, named as in the params struct */\n");
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        buf_printf(h, "    %s *%s; /* %s: %s */\n", dtype_c_type(v->type.dtype), e->member[v->id], v->name,
                   type_comment(e, &v->type));
    }
    const char *groups[4] = {"grad"};
    for (int k = 0; k < nslots; k++)
        groups[1 + k] = slots[k];
    for (int k = 0; k < 1 + nslots; k++) {
        buf_printf(h, "    struct { /* %s */\n", k == 0 ? "gradients summed over the micro-batches since the last update"
                                                       : "the optimizer's state (torch.optim's name)");
        for (int i = 0; i < g->params->len; i++) {
            Value *v = VEC_AT(g->params, i);
            if (trainable(v))
                buf_printf(h, "        %s *%s;\n", dtype_c_type(v->type.dtype), e->member[v->id]);
        }
        buf_printf(h, "    } %s;\n", groups[k]);
    }
    buf_puts(h, "    double lr;                 /* the learning rate; the caller may change it between steps */\n"
                "    float scale;               /* the loss scale (1 without a scaler) */\n"
                "    int32_t growth_tracker;    /* good updates since the scale last changed */\n"
                "    int32_t last_step_skipped; /* whether the last update was skipped (inf/NaN gradients) */\n"
                "    int64_t step;              /* optimizer updates made (skipped ones not counted) */\n"
                "    int64_t skipped_steps;     /* updates skipped for inf/NaN gradients */\n"
                "    int64_t micro_step;        /* micro-batches accumulated since the last update */\n"
                "    int32_t grad_live;         /* 1: grad holds the gradients since the last update; 0 (after\n"
                "                                * _train_init and _update): it holds none, and the next\n"
                "                                * _backward stores its gradients instead of adding them */\n");
    if (draws_random(e))
        buf_puts(h, "    /* dropout's generator (Philox4x32-10, amprt/random.h): a mask is a function of the\n"
                    "     * seed, the counter and the element, so it is reproducible and the backward\n"
                    "     * regenerates it; the caller may set the seed after _train_init */\n"
                    "    int64_t rng_seed;          /* 0 after _train_init */\n"
                    "    int64_t rng_offset;        /* micro-batches drawn so far: _backward adds one */\n");
    buf_printf(h, "} %s_train_state;\n\n", p);

    buf_printf(h, "/* Bytes of storage the state points into. */\n#define %s_STATE_BYTES ((size_t)%lld)\n", P,
               (long long)state_bytes(e));
    /* the training arena, from the training graph's plan */
    if (c->nsyms)
        buf_printf(h, "#define %s_TRAIN_ARENA_BYTES(%s) ((size_t)(%s))\n", P, e->dim_params,
                   arena_expr(e, e->macro_names));
    else
        buf_printf(h, "#define %s_TRAIN_ARENA_BYTES ((size_t)(%s))\n", P, arena_expr(e, c->sym_names));
    buf_printf(h, "size_t %s_train_arena_bytes(const %s_dims *dims);\n\n", p, p);
    buf_puts(h, "/* Lays the state out in `storage` (at least <PREFIX>_STATE_BYTES bytes,\n"
                " * aligned as malloc's), copies the parameters and buffers from `initial`,\n"
                " * zeroes gradients and optimizer state, and sets the learning rate and\n"
                " * the loss scale to the train section's values. */\n");
    buf_printf(h, "int %s_train_init(%s_train_state *s, void *storage, size_t storage_bytes, const %s_params *initial);\n", p,
               p, p);
    buf_puts(h, "/* The current parameters, for <prefix>_forward. */\n");
    buf_printf(h, "void %s_train_params(const %s_train_state *s, %s_params *params);\n", p, p, p);
    buf_puts(h, "/* The two halves of a step: forward, loss and backward, adding this\n"
                " * micro-batch's gradients (of the scaled loss) into s->grad; and the\n"
                " * update: average the gradients over the processes of a data-parallel\n"
                " * run (amprt/collective.h; nothing to do in one process), unscale with\n"
                " * the inf/NaN check, take found_inf's maximum over the processes, clip,\n"
                " * the optimizer, the scaler; then the gradients are consumed (grad_live 0). */\n");
    buf_printf(h, "int %s_backward(%s_train_state *s, const %s_inputs *inputs, %s_outputs *outputs,\n", p, p, p, p);
    buf_printf(h, "    %*s const %s_dims *dims, void *arena, size_t arena_bytes);\n", (int)strlen(p) - 3, "", p);
    buf_printf(h, "int %s_update(%s_train_state *s);\n", p, p);
    buf_puts(h, "/* One micro-batch: forward, loss, backward into the summed gradients;\n"
                " * on the last micro-batch of an update also unscale, check for inf/NaN,\n"
                " * clip, step the optimizer (skipped element-wise on inf/NaN) and update\n"
                " * the loss scale.  Writes the outputs as <prefix>_forward does. */\n");
    buf_printf(h, "int %s_train_step(%s_train_state *s, const %s_inputs *inputs, %s_outputs *outputs,\n", p, p, p, p);
    buf_printf(h, "    %*s const %s_dims *dims, void *arena, size_t arena_bytes);\n", (int)strlen(p), "", p);
    buf_puts(h, "/* A checkpoint: parameters, buffers, gradients, optimizer and scaler state,\n"
                " * as one safetensors file written atomically (temporary file, fsync,\n"
                " * rename).  _load restores a state _train_init set up, checking every\n"
                " * tensor's name, dtype and shape. */\n");
    buf_puts(h, "#if !defined(AMPRT_NO_STDIO) /* files: not in a runtime built without them (make BARE=1) */\n");
    buf_printf(h, "int %s_save(const %s_train_state *s, const char *path);\n", p, p);
    buf_printf(h, "int %s_load(%s_train_state *s, const char *path);\n#endif\n\n", p, p);
}

/* The entries of a checkpoint, as C initialising `entries[]`; returns the count. */
static int checkpoint_entries(Emitter *e, Buf *o, bool load)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const char *slots[3];
    int nslots = optimizer_slots(c->train, slots);
    int n = 0;
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        for (int k = -1; k < (trainable(v) ? 1 + nslots : 0); k++) {
            const char *key = k < 0 ? v->name
                              : k == 0 ? arena_printf(c->arena, "grad.%s", v->name)
                                       : arena_printf(c->arena, "optimizer.%s.%s", v->name, slots[k - 1]);
            const char *ptr = k < 0 ? arena_printf(c->arena, "s->%s", e->member[v->id])
                                    : arena_printf(c->arena, "s->%s.%s", k == 0 ? "grad" : slots[k - 1], e->member[v->id]);
            buf_printf(o, "    entries[%d].name = \"%s\";\n    entries[%d].dtype = %s;\n    entries[%d].ndim = %d;\n", n,
                       key, n, dtype_amp_enum(v->type.dtype), n, v->type.shape.ndim);
            for (int d = 0; d < v->type.shape.ndim; d++)
                buf_printf(o, "    entries[%d].shape[%d] = %s;\n", n, d, poly_c(e, v->type.shape.dims[d]));
            buf_printf(o, "    entries[%d].data = %s;\n", n, ptr);
            n++;
        }
    }
    static const struct { const char *key, *field, *dtype; } scalars[] = {
        {"optimizer.lr", "lr", "AMP_F64"},
        {"optimizer.step", "step", "AMP_I64"},
        {"scaler.scale", "scale", "AMP_F32"},
        {"scaler.growth_tracker", "growth_tracker", "AMP_I32"},
        {"train.last_step_skipped", "last_step_skipped", "AMP_I32"},
        {"train.skipped_steps", "skipped_steps", "AMP_I64"},
        {"train.micro_step", "micro_step", "AMP_I64"},
        {"train.grad_live", "grad_live", "AMP_I32"},
    };
    static const struct { const char *key, *field, *dtype; } rng[] = {
        {"train.rng_seed", "rng_seed", "AMP_I64"},
        {"train.rng_offset", "rng_offset", "AMP_I64"},
    };
    for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++, n++)
        buf_printf(o, "    entries[%d].name = \"%s\";\n    entries[%d].dtype = %s;\n    entries[%d].ndim = 0;\n"
                      "    entries[%d].data = %s&s->%s;\n", n, scalars[k].key, n, scalars[k].dtype, n, n,
                   load ? "(void *)" : "", scalars[k].field);
    /* the generator too, or a resumed run would draw other masks */
    for (size_t k = 0; draws_random(e) && k < sizeof rng / sizeof rng[0]; k++, n++)
        buf_printf(o, "    entries[%d].name = \"%s\";\n    entries[%d].dtype = %s;\n    entries[%d].ndim = 0;\n"
                      "    entries[%d].data = %s&s->%s;\n", n, rng[k].key, n, rng[k].dtype, n, n,
                   load ? "(void *)" : "", rng[k].field);
    return n;
}

static void emit_init(Emitter *e, Buf *o)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const TrainConfig *t = c->train;
    const char *p = e->prefix, *P = e->PREFIX;
    const char *slots[3];
    int nslots = optimizer_slots(t, slots);
    buf_printf(o, "int %s_train_init(%s_train_state *s, void *storage, size_t storage_bytes, const %s_params *initial)\n{\n",
               p, p, p);
    buf_puts(o, "    unsigned char *at = storage;\n");
    buf_puts(o, "    if (!s || !storage || !initial)\n        return AMP_ERR_NULL_ARG;\n");
    /* with only zero-size parameters, "storage_bytes < 0" would be always
     * false, which -Wtype-limits (-Wextra) rejects */
    if (state_bytes(e) > 0)
        buf_printf(o, "    if (storage_bytes < %s_STATE_BYTES)\n        return AMP_ERR_ARENA_TOO_SMALL;\n", P);
    else
        buf_puts(o, "    (void)storage_bytes; /* every parameter is empty */\n");
    buf_puts(o, "    memset(s, 0, sizeof *s);\n");
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        const char *ct = dtype_c_type(v->type.dtype), *name = e->member[v->id];
        long long pad = (long long)const_bytes_padded(e, v);
        buf_printf(o, "    if (!initial->%s)\n        return AMP_ERR_NULL_ARG;\n", name);
        buf_printf(o, "    s->%s = (%s *)(void *)at;\n    memcpy(at, initial->%s, (size_t)(%s) * sizeof(%s));\n"
                      "    at += %lld;\n", name, ct, name, numel_of(e, v), ct, pad);
        for (int k = 0; trainable(v) && k < 1 + nslots; k++) {
            buf_printf(o, "    s->%s.%s = (%s *)(void *)at;\n    memset(at, 0, %lld);\n    at += %lld;\n",
                       k == 0 ? "grad" : slots[k - 1], name, ct, pad, pad);
        }
    }
    buf_printf(o, "    s->lr = %s;\n", double_c(e, t->lr));
    buf_printf(o, "    s->scale = %s;\n", t->scaler == SCALER_NONE ? "1.0f" : arena_printf(c->arena, "%af", t->init_scale));
    buf_puts(o, "    return AMP_OK;\n}\n\n");

    buf_printf(o, "void %s_train_params(const %s_train_state *s, %s_params *params)\n{\n", p, p, p);
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        buf_printf(o, "    params->%s = s->%s;\n", e->member[v->id], e->member[v->id]);
    }
    if (g->params->len == 0)
        buf_puts(o, "    (void)s;\n    (void)params;\n");
    buf_puts(o, "}\n\n");
}

/* In <prefix>_load, before anything is copied: every scalar of the
 * checkpoint read into a copy of the state and checked against the range
 * a run can reach, so a file that is well formed but wrong (a NaN
 * learning rate, a zero loss scale, a micro_step past the accumulation)
 * gives AMP_ERR_CHECKPOINT_VALUE and changes nothing.  The learning rate
 * may be 0 (a schedule's end, as torch.optim allows); the tracker stays
 * below growth_interval, and at 0 without a dynamic scaler. */
static void emit_scalar_checks(Emitter *e, Buf *o)
{
    const TrainConfig *t = e->c->train;
    const char *p = e->prefix;
    static const struct { const char *key, *field, *dtype; } scalars[] = {
        {"optimizer.lr", "lr", "AMP_F64"},
        {"optimizer.step", "step", "AMP_I64"},
        {"scaler.scale", "scale", "AMP_F32"},
        {"scaler.growth_tracker", "growth_tracker", "AMP_I32"},
        {"train.last_step_skipped", "last_step_skipped", "AMP_I32"},
        {"train.skipped_steps", "skipped_steps", "AMP_I64"},
        {"train.micro_step", "micro_step", "AMP_I64"},
        {"train.grad_live", "grad_live", "AMP_I32"},
        {"train.rng_offset", "rng_offset", "AMP_I64"},
    };
    buf_printf(o, "    /* every scalar in range before anything is copied */\n    {\n        %s_train_state v = *s;\n", p);
    for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++) {
        if (strcmp(scalars[k].field, "rng_offset") == 0 && !draws_random(e))
            continue;
        buf_printf(o, "        %samp_st_load(file, \"%s\", %s, 0, NULL, &v.%s);\n", k ? "if (rc == AMP_OK)\n            rc = " : "rc = ",
                   scalars[k].key, scalars[k].dtype, scalars[k].field);
    }
    Buf cond;
    buf_init(&cond, e->c->arena);
    buf_puts(&cond, "!isfinite(v.lr) || v.lr < 0.0");
    if (t->scaler == SCALER_NONE)
        buf_puts(&cond, " || v.scale != 1.0f");
    else
        buf_puts(&cond, " || !isfinite(v.scale) || v.scale <= 0.0f");
    if (t->scaler == SCALER_DYNAMIC && t->growth_interval > 0)
        buf_printf(&cond, " ||\n            v.growth_tracker < 0 || v.growth_tracker >= %lld", (long long)t->growth_interval);
    else if (t->scaler == SCALER_DYNAMIC)
        buf_puts(&cond, " ||\n            v.growth_tracker < 0");
    else
        buf_puts(&cond, " ||\n            v.growth_tracker != 0");
    buf_printf(&cond, " || v.step < 0 || v.skipped_steps < 0 ||\n            v.micro_step < 0 || v.micro_step >= %lld",
               (long long)t->accumulate);
    buf_puts(&cond, " || (v.grad_live != 0 && v.grad_live != 1) ||\n"
                    "            (v.last_step_skipped != 0 && v.last_step_skipped != 1)");
    if (draws_random(e))
        buf_puts(&cond, " || v.rng_offset < 0");
    buf_printf(o, "        if (rc == AMP_OK && (%s))\n            rc = AMP_ERR_CHECKPOINT_VALUE;\n", cond.data);
    buf_puts(o, "        if (rc != AMP_OK) {\n            amp_st_close(file);\n            return rc;\n        }\n    }\n");
}

static void emit_checkpoint(Emitter *e, Buf *o)
{
    Ctx *c = e->c;
    const char *p = e->prefix;
    Buf entries;
    buf_init(&entries, c->arena);
    int n = checkpoint_entries(e, &entries, false);
    buf_puts(o, "#if !defined(AMPRT_NO_STDIO) /* files: not in a runtime built without them (make BARE=1) */\n");
    buf_printf(o, "int %s_save(const %s_train_state *s, const char *path)\n{\n", p, p);
    buf_printf(o, "    amp_st_entry entries[%d];\n", n);
    buf_puts(o, "    if (!s || !path)\n        return AMP_ERR_NULL_ARG;\n    memset(entries, 0, sizeof entries);\n");
    buf_puts(o, entries.data);
    buf_printf(o, "    return amp_st_write(path, entries, %d);\n}\n\n", n);

    Buf lentries;
    buf_init(&lentries, c->arena);
    checkpoint_entries(e, &lentries, true);
    buf_printf(o, "int %s_load(%s_train_state *s, const char *path)\n{\n", p, p);
    buf_printf(o, "    amp_st_entry entries[%d];\n    amp_st_file *file;\n    int rc;\n", n);
    buf_puts(o, "    if (!s || !path)\n        return AMP_ERR_NULL_ARG;\n    memset(entries, 0, sizeof entries);\n");
    buf_puts(o, lentries.data);
    buf_puts(o, "    rc = amp_st_open(path, &file);\n    if (rc != AMP_OK)\n        return rc;\n");
    buf_printf(o, "    if (amp_st_count(file) != %d) {\n        amp_st_close(file);\n"
                  "        return AMP_ERR_WEIGHTS_UNEXPECTED;\n    }\n", n);
    buf_printf(o, "    /* every tensor checked before any is copied: a bad file changes nothing */\n"
                  "    for (int i = 0; i < %d; i++) {\n"
                  "        const amp_st_tensor *t = amp_st_find(file, entries[i].name);\n"
                  "        int same = t && t->dtype == entries[i].dtype && t->ndim == entries[i].ndim;\n"
                  "        for (int d = 0; same && d < t->ndim; d++)\n"
                  "            same = t->shape[d] == entries[i].shape[d];\n"
                  "        if (!same) {\n            amp_st_close(file);\n"
                  "            return !t ? AMP_ERR_WEIGHTS_MISSING : t->dtype != entries[i].dtype ? AMP_ERR_WEIGHTS_DTYPE\n"
                  "                                                                                : AMP_ERR_WEIGHTS_SHAPE;\n"
                  "        }\n    }\n", n);
    emit_scalar_checks(e, o);
    buf_printf(o, "    for (int i = 0; i < %d && rc == AMP_OK; i++)\n"
                  "        rc = amp_st_load(file, entries[i].name, entries[i].dtype, entries[i].ndim, entries[i].shape,\n"
                  "                         (void *)(uintptr_t)entries[i].data);\n", n);
    buf_puts(o, "    amp_st_close(file);\n    return rc;\n}\n#endif /* !AMPRT_NO_STDIO */\n\n");
}

/* What the backward does with each trainable parameter's gradient, as
 * soon as the node computing it has run (emit_body's after_node hook):
 * adds it into s->grad (stores it there when s->grad_live says s->grad
 * holds nothing yet), and on the micro-batch that completes the step
 * pushes s->grad to the all-reduce, so that the late layers' gradients
 * (the backward visits them first) travel while the earlier layers'
 * backward computes.  done[i]: params[i]'s gradient is handled. */
typedef struct GradSink {
    const TrainConfig *t;
    int ntrainable;
    bool begun; /* the amp_allreduce_begin is emitted */
    bool *done;
} GradSink;

static void emit_grad_sink(Emitter *e, GradSink *k, int i)
{
    Buf *o = e->out;
    Value *v = VEC_AT(e->g->params, i);
    const char *name = e->member[v->id];
    /* _train_step counts micro_step after the backward: the last micro-batch
     * of an accumulation sees accumulate - 1 */
    const char *when = k->t->accumulate == 1
                           ? ""
                           : arena_printf(e->c->arena, "    if (s->micro_step == %lld)\n",
                                          (long long)k->t->accumulate - 1);
    k->done[i] = true;
    if (e->grad_cast_in_sink[v->grad->id] && e->grad_in_state[v->grad->def->in[0]->id]) {
        buf_printf(o, "    /* %s's gradient is final (its call above wrote it into the state's): on to the all-reduce */\n",
                   v->name);
    } else if (e->grad_cast_in_sink[v->grad->id]) {
        buf_printf(o, "    /* %s's gradient is final: into the state's, and on to the all-reduce */\n", v->name);
        const Value *low = v->grad->def->in[0];
        const char *lt = dtype_name(low->type.dtype);
        buf_printf(o, "    if (s->grad_live)\n        amp_grad_accumulate_%s((size_t)(%s), s->grad.%s, %s);\n"
                      "    else\n        amp_cast_%s_f32((size_t)(%s), %s, s->grad.%s);\n",
                   lt, numel_of(e, v), name, e->cname[low->id], lt, numel_of(e, v), e->cname[low->id], name);
    } else {
        buf_printf(o, "    /* %s's gradient is final: into the state's, and on to the all-reduce */\n", v->name);
        buf_printf(o, "    if (s->grad_live)\n        %s((size_t)(%s), s->grad.%s, %s, s->grad.%s);\n"
                      "    else\n        memcpy(s->grad.%s, %s, (size_t)(%s) * sizeof *s->grad.%s);\n",
                   kernel(e, "add", v->type.dtype), numel_of(e, v), name, e->cname[v->grad->id], name, name,
                   e->cname[v->grad->id], numel_of(e, v), name);
    }
    buf_printf(o, "%s    {\n        const amp_coll_tensor grad = {s->grad.%s, (size_t)(%s), %s};\n", when, name,
               numel_of(e, v), dtype_amp_enum(v->type.dtype));
    if (k->begun)
        buf_puts(o, "        const int rc = amp_allreduce_push(&grad);\n");
    else /* the first gradient to be final opens the reduction */
        buf_printf(o, "        int rc = amp_allreduce_begin(%d);\n        if (rc == AMP_OK)\n"
                      "            rc = amp_allreduce_push(&grad);\n", k->ntrainable);
    k->begun = true;
    buf_puts(o, "        if (rc != AMP_OK)\n            return rc;\n    }\n");
}

/* The gradients the sink takes straight from a bf16/f16 value: an f32
 * parameter's gradient computed in the low dtype and only widened, by a
 * cast nothing else reads.  amp_grad_accumulate_<S> adds the low-dtype
 * value into s->grad in one pass, bit for bit what the cast and
 * amp_add_f32 gave (the widening is exact), without the f32 temporary.
 * Where that value is a convolution's weight gradient read by the cast
 * alone, state_member and in_state say so: the convolution's call writes
 * it into s->grad itself (emit.h, grad_in_state). */
static const bool *grad_casts_in_sink(Emitter *e, const char **state_member, bool *in_state)
{
    Graph *g = e->g;
    int nv = g->values->len;
    bool *in_sink = arena_alloc(e->c->arena, (size_t)(nv + 1) * sizeof *in_sink);
    int *nreads = arena_alloc(e->c->arena, (size_t)(nv + 1) * sizeof *nreads);
    memset(in_sink, 0, (size_t)(nv + 1) * sizeof *in_sink);
    memset(nreads, 0, (size_t)(nv + 1) * sizeof *nreads);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < node_nreads(n); k++)
            if (node_read(n, k))
                nreads[node_read(n, k)->id]++;
    }
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        if (!trainable(v) || v->grad->kind != V_TEMP || v->grad->is_output || nreads[v->grad->id] != 0)
            continue;
        Node *n = v->grad->def;
        DType low = n && n->op->id == OP_CAST ? n->in[0]->type.dtype : DT_F32;
        if (v->type.dtype == DT_F32 && v->grad->type.dtype == DT_F32 && (low == DT_BF16 || low == DT_F16)) {
            const Value *lv = n->in[0];
            in_sink[v->grad->id] = true;
            if (lv->kind == V_TEMP && !lv->is_output && nreads[lv->id] == 1 && conv_weight_grad_to_f32(lv)) {
                state_member[lv->id] = arena_printf(e->c->arena, "s->grad.%s", e->member[v->id]);
                in_state[lv->id] = true;
            }
        }
    }
    return in_sink;
}

static void grads_after_node(Emitter *e, Node *n)
{
    GradSink *k = e->after_node_data;
    for (int i = 0; i < e->g->params->len; i++) {
        Value *v = VEC_AT(e->g->params, i);
        if (trainable(v) && !k->done[i] && v->grad->kind == V_TEMP && v->grad->def == n)
            emit_grad_sink(e, k, i);
    }
}

/* <prefix>_backward: the forward and backward of one micro-batch, each
 * parameter's gradient added into the state as soon as it is final */
static void emit_backward(Emitter *e, Buf *o)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const TrainConfig *t = c->train;
    const char *p = e->prefix, *P = e->PREFIX;
    buf_printf(o, "int %s_backward(%s_train_state *s, const %s_inputs *inputs, %s_outputs *outputs,\n", p, p, p, p);
    buf_printf(o, "    %*s const %s_dims *dims, void *arena, size_t arena_bytes)\n{\n", (int)strlen(p) - 3, "", p);
    buf_puts(o, "    if (!s || !inputs || !outputs || !dims || (!arena && arena_bytes))\n        return AMP_ERR_NULL_ARG;\n");
    buf_printf(o, "    /* the seed of the backward pass: GradScaler's scale(loss), over the %lld micro-batch%s */\n",
               (long long)t->accumulate, t->accumulate == 1 ? "" : "es");
    buf_printf(o, "    const double grad_seed = (double)s->scale / %lld.0;\n", (long long)t->accumulate);
    GradSink sink = {.t = t, .done = arena_alloc(c->arena, (size_t)(g->params->len + 1) * sizeof *sink.done)};
    for (int i = 0; i < g->params->len; i++) {
        sink.ntrainable += trainable(VEC_AT(g->params, i));
        sink.done[i] = false;
    }
    if (sink.ntrainable > 0)
        /* A backward that returned an error after its first push, or one no
         * _update followed, left its reduction open: finishing it here keeps
         * the sums right (the mean of the gradients reduced so far, the same
         * on every process, plus the next ones' mean is the mean of all). */
        buf_puts(o, "    /* a reduction an earlier backward left open (amprt/collective.h) */\n"
                    "    if (amp_allreduce_open())\n        (void)amp_allreduce_finish();\n");
    e->after_node = grads_after_node;
    e->after_node_data = &sink;
    {
        int nv = g->values->len + 1;
        const char **member = arena_alloc(c->arena, (size_t)nv * sizeof *member);
        bool *in_state = arena_alloc(c->arena, (size_t)nv * sizeof *in_state);
        for (int i = 0; i < nv; i++) {
            member[i] = NULL;
            in_state[i] = false;
        }
        e->grad_cast_in_sink = grad_casts_in_sink(e, member, in_state);
        e->grad_state_member = member;
        e->grad_in_state = in_state;
    }
    emit_body(e, o, "s->", c->nsyms ? arena_printf(c->arena, "%s_train_arena_bytes(dims)", p)
                                    : arena_printf(c->arena, "%s_TRAIN_ARENA_BYTES", P));
    e->after_node = NULL;
    e->after_node_data = NULL;
    if (draws_random(e))
        buf_puts(o, "    s->rng_offset++; /* the next micro-batch draws new masks */\n");

    /* gradients no node computes (none yet, but nothing forbids them) */
    for (int i = 0; i < g->params->len; i++)
        if (trainable(VEC_AT(g->params, i)) && !sink.done[i])
            emit_grad_sink(e, &sink, i);
    e->grad_cast_in_sink = NULL;
    e->grad_state_member = NULL;
    e->grad_in_state = NULL;
    if (sink.ntrainable > 0)
        buf_puts(o, "    s->grad_live = 1;\n");
    buf_puts(o, "    return AMP_OK;\n}\n\n");
}

/* <prefix>_update: reduce, unscale, clip, step the optimizer, update the
 * scale: sync-free, every value keeping its old one where found_inf */
static void emit_update(Emitter *e, Buf *o)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const TrainConfig *t = c->train;
    const char *p = e->prefix;
    const char *slots[3];
    int nslots = optimizer_slots(t, slots);
    buf_printf(o, "int %s_update(%s_train_state *s)\n{\n", p, p);
    buf_puts(o, "    if (!s)\n        return AMP_ERR_NULL_ARG;\n");
    buf_puts(o, "    int32_t found_inf = 0;\n");
    int ntrainable = 0;
    for (int i = 0; i < g->params->len; i++)
        ntrainable += trainable(VEC_AT(g->params, i));
    if (ntrainable > 0) {
        /* an update with no backward since the last one steps on zero
         * gradients, as it did when the update zeroed them */
        buf_puts(o, "    /* no backward since the last update: the gradients are zero */\n"
                    "    if (!s->grad_live) {\n");
        for (int i = 0; i < g->params->len; i++) {
            Value *v = VEC_AT(g->params, i);
            if (trainable(v))
                buf_printf(o, "        memset(s->grad.%s, 0, (size_t)(%s) * sizeof *s->grad.%s);\n", e->member[v->id],
                           numel_of(e, v), e->member[v->id]);
        }
        buf_puts(o, "    }\n");
        /* Every gradient in one list, so the runtime can pack them into a
         * few large buckets; the same calls with or without MPI. */
        buf_puts(o, "    /* data parallelism: each gradient becomes its mean over the processes\n"
                    "     * (amprt/collective.h: bucketed all-reduces; nothing in one process) */\n    {\n");
        buf_printf(o, "        const amp_coll_tensor grads[%d] = {\n", ntrainable);
        for (int i = 0; i < g->params->len; i++) {
            Value *v = VEC_AT(g->params, i);
            if (trainable(v))
                buf_printf(o, "            {s->grad.%s, (size_t)(%s), %s},\n", e->member[v->id], numel_of(e, v),
                           dtype_amp_enum(v->type.dtype));
        }
        /* the backward pushed them on the micro-batch that completed the
         * step; a caller's own _backward/_update (micro_step untouched)
         * did not when it accumulates, and then they go in one call here */
        buf_printf(o, "        };\n        /* the backward pushed them when it completed the step: wait for those */\n"
                      "        const int rc = amp_allreduce_open() ? amp_allreduce_finish() : amp_allreduce_mean(grads, %d);\n"
                      "        if (rc != AMP_OK)\n            return rc;\n    }\n", ntrainable);
    }
    if (t->scaler != SCALER_NONE) {
        buf_puts(o, "    /* unscale, detecting inf and NaN in the same pass */\n");
        for (int i = 0; i < g->params->len; i++) {
            Value *v = VEC_AT(g->params, i);
            if (trainable(v))
                buf_printf(o, "    %s((size_t)(%s), s->grad.%s, 1.0 / (double)s->scale, &found_inf);\n",
                           kernel(e, "unscale", v->type.dtype), numel_of(e, v), e->member[v->id]);
        }
        /* The averaged gradients already carry an inf from any process;
         * the max-reduce makes the skip decision itself common, whatever
         * the reduction did, so every process keeps the same scale. */
        buf_puts(o, "    /* skip the step on every process if any found an inf or NaN */\n"
                    "    {\n        const int rc = amp_allreduce_max_i32(&found_inf);\n"
                    "        if (rc != AMP_OK)\n            return rc;\n    }\n");
    }
    if (t->clip_grad_norm > 0) {
        buf_printf(o, "    /* clip_grad_norm_(max_norm=%g): the global L2 norm, after unscaling */\n    {\n"
                      "        double norm2 = 0;\n", t->clip_grad_norm);
        for (int i = 0; i < g->params->len; i++) {
            Value *v = VEC_AT(g->params, i);
            if (trainable(v))
                buf_printf(o, "        %s((size_t)(%s), s->grad.%s, &norm2);\n", kernel(e, "sum_squares", v->type.dtype),
                           numel_of(e, v), e->member[v->id]);
        }
        buf_printf(o, "        const double clip = %s / (sqrt(norm2) + 1e-6);\n        if (clip < 1.0) {\n",
                   double_c(e, t->clip_grad_norm));
        for (int i = 0; i < g->params->len; i++) {
            Value *v = VEC_AT(g->params, i);
            if (trainable(v))
                buf_printf(o, "            %s((size_t)(%s), s->grad.%s, clip, s->grad.%s);\n",
                           kernel(e, "mul_scalar", v->type.dtype), numel_of(e, v), e->member[v->id], e->member[v->id]);
        }
        buf_puts(o, "        }\n    }\n");
    }

    buf_puts(o, "    /* the optimizer: where found_inf, every value keeps its old one */\n    {\n");
    if (t->optimizer == OPTIMIZER_SGD)
        buf_printf(o, "        const amp_sgd_hparams h = {s->lr, %s, %s, %s, %d, %d};\n", double_c(e, t->momentum),
                   double_c(e, t->dampening), double_c(e, t->weight_decay), t->nesterov, t->maximize);
    else
        buf_printf(o, "        const amp_adam_hparams h = {s->lr, %s, %s, %s, %s, %d, %d, %d};\n", double_c(e, t->beta1),
                   double_c(e, t->beta2), double_c(e, t->eps), double_c(e, t->weight_decay), t->amsgrad, t->maximize,
                   t->optimizer == OPTIMIZER_ADAMW);
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        if (!trainable(v))
            continue;
        const char *name = e->member[v->id];
        if (t->optimizer == OPTIMIZER_SGD)
            buf_printf(o, "        %s((size_t)(%s), s->%s, s->grad.%s, %s, &h, s->step, found_inf);\n",
                       kernel(e, "sgd", v->type.dtype), numel_of(e, v), name, name,
                       nslots ? arena_printf(c->arena, "s->momentum_buffer.%s", name) : "NULL");
        else
            buf_printf(o, "        %s((size_t)(%s), s->%s, s->grad.%s, s->exp_avg.%s, s->exp_avg_sq.%s, %s, &h, s->step, "
                          "found_inf);\n",
                       kernel(e, "adam", v->type.dtype), numel_of(e, v), name, name, name, name,
                       t->amsgrad ? arena_printf(c->arena, "s->max_exp_avg_sq.%s", name) : "NULL");
    }
    buf_puts(o, "    }\n");
    buf_puts(o, "    s->step += !found_inf;\n    s->skipped_steps += found_inf;\n    s->last_step_skipped = found_inf;\n");
    if (t->scaler == SCALER_DYNAMIC)
        buf_printf(o, "    amp_scaler_update(&s->scale, &s->growth_tracker, found_inf, %s, %s, %lld);\n",
                   double_c(e, t->growth_factor), double_c(e, t->backoff_factor), (long long)t->growth_interval);
    /* zero_grad(set_to_none=True): the next backward stores */
    buf_puts(o, "    /* zero_grad: the gradients are consumed; the next backward stores its own */\n"
                "    s->grad_live = 0;\n");
    buf_puts(o, "    return AMP_OK;\n}\n\n");
}

/* The training step's entry points: its arena size, the backward of a
 * micro-batch, the update, and the two in one call. */
static void emit_step(Emitter *e, Buf *o)
{
    const TrainConfig *t = e->c->train;
    const char *p = e->prefix;
    emit_arena_bytes_fn(e, o, arena_printf(e->c->arena, "%s_train_arena_bytes", e->prefix),
                        arena_printf(e->c->arena, "%s_TRAIN_ARENA_BYTES", e->PREFIX));
    emit_backward(e, o);
    emit_update(e, o);
    buf_printf(o, "int %s_train_step(%s_train_state *s, const %s_inputs *inputs, %s_outputs *outputs,\n", p, p, p, p);
    buf_printf(o, "    %*s const %s_dims *dims, void *arena, size_t arena_bytes)\n{\n", (int)strlen(p), "", p);
    buf_printf(o, "    int rc = %s_backward(s, inputs, outputs, dims, arena, arena_bytes);\n", p);
    buf_puts(o, "    if (rc != AMP_OK)\n        return rc;\n");
    if (t->accumulate > 1)
        buf_printf(o, "    if (++s->micro_step < %lld)\n        return AMP_OK; /* more micro-batches to come */\n"
                      "    s->micro_step = 0;\n", (long long)t->accumulate);
    buf_printf(o, "    return %s_update(s);\n}\n\n", p);
}

void emit_train_source(Emitter *e, Emitter *fwd, Buf *o)
{
    (void)fwd;
    buf_puts(o, "\n/* ---- training (docs/training.md) ---- */\n\n");
    emit_init(e, o);
    emit_checkpoint(e, o);
    emit_step(e, o);
}
