/* train.c: the model's `train { }` section, read into c->train.
 *
 * Requires: an autocast AST (the policy decides the scaler's default) with
 * its minimize target.  Produces: c->train, or NULL for a model that is
 * only inferred.  The section holds settings, not code:
 *
 *     train {
 *       optimizer = sgd(lr=0.1, momentum=0.9)     # or adam(...), adamw(...)
 *       scaler = dynamic(init_scale=65536)        # or static(1024), or none
 *       accumulate = 4                            # micro-batches per update
 *       clip_grad_norm = 1.0                      # after unscaling
 *     }
 *
 * Defaults are PyTorch's (torch.optim, GradScaler).  The scaler defaults
 * to dynamic where autocast's low dtype is f16 and to none for bf16, whose
 * range is f32's (the seeds' best practice); asking for one under bf16 is
 * allowed and explained by a note.
 */
#include "middle.h"

#include <math.h>
#include <string.h>

/* A number literal, possibly negated, exactly rounded to double. */
static bool number_of(Ctx *c, Expr *e, double *out)
{
    bool neg = false;
    if (e->kind == E_CALL && e->is_operator && e->callee && strcmp(e->callee, "neg") == 0 && e->list->len == 1) {
        neg = true;
        e = VEC_AT(e->list, 0);
    }
    if (e->kind != E_NUMBER) {
        error_at(c, e->loc, "expected a number here");
        return false;
    }
    literal_to_dtype(e->text, DT_F64, out);
    if (neg)
        *out = -*out;
    return true;
}

static bool int_of(Ctx *c, Expr *e, int64_t *out)
{
    if (e->kind != E_NUMBER || e->is_float) {
        error_at(c, e->loc, "expected an integer here");
        return false;
    }
    return int_literal(c, e, out);
}

static bool bool_of(Ctx *c, Expr *e, bool *out)
{
    if (e->kind != E_BOOL) {
        error_at(c, e->loc, "expected true or false here");
        return false;
    }
    *out = e->boolean;
    return true;
}

/* One keyword argument of a settings call: its name and where to put it. */
typedef struct Setting {
    const char *name;
    char kind; /* 'd' double, 'i' int64, 'b' bool */
    void *dest;
} Setting;

/* name(kw=value, ...): every argument a keyword among `known` (a positional
 * one is the first setting, as lr for an optimizer, the scale of static). */
static bool read_call(Ctx *c, Expr *call, const Setting *known, int n)
{
    bool ok = true;
    for (int i = 0; i < call->list->len; i++) {
        Expr *a = VEC_AT(call->list, i);
        const Setting *s = NULL;
        Expr *value = a;
        if (a->kind == E_KWARG) {
            for (int k = 0; k < n && !s; k++)
                if (strcmp(known[k].name, a->text) == 0)
                    s = &known[k];
            value = a->operand;
            if (!s) {
                const char *names[16];
                for (int k = 0; k < n && k < 16; k++)
                    names[k] = known[k].name;
                const char *near = closest_name(a->text, names, n < 16 ? n : 16);
                error_at(c, a->loc, "%s() has no setting '%s'%s%s%s", call->callee, a->text, near ? "; did you mean '" : "",
                         near ? near : "", near ? "'?" : "");
                ok = false;
                continue;
            }
        } else if (i == 0 && n > 0) {
            s = &known[0];
        } else {
            error_at(c, a->loc, "%s() takes its settings by name, as %s=...", call->callee, known[0].name);
            ok = false;
            continue;
        }
        switch (s->kind) {
        case 'd': ok &= number_of(c, value, s->dest); break;
        case 'i': ok &= int_of(c, value, s->dest); break;
        default: ok &= bool_of(c, value, s->dest); break;
        }
    }
    return ok;
}

static bool read_optimizer(Ctx *c, TrainConfig *t, Expr *v)
{
    if (v->kind != E_CALL || !v->callee || v->is_operator) {
        error_at(c, v->loc, "optimizer takes sgd(...), adam(...) or adamw(...)");
        return false;
    }
    if (strcmp(v->callee, "sgd") == 0) {
        t->optimizer = OPTIMIZER_SGD;
        t->lr = NAN;
        Setting s[] = {{"lr", 'd', &t->lr}, {"momentum", 'd', &t->momentum}, {"dampening", 'd', &t->dampening},
                       {"weight_decay", 'd', &t->weight_decay}, {"nesterov", 'b', &t->nesterov},
                       {"maximize", 'b', &t->maximize}};
        if (!read_call(c, v, s, 6))
            return false;
        if (isnan(t->lr)) {
            error_at(c, v->loc, "sgd() needs a learning rate: sgd(lr=0.1) (torch.optim.SGD has no default either)");
            return false;
        }
        if (t->nesterov && (t->momentum <= 0 || t->dampening != 0)) {
            error_at(c, v->loc, "Nesterov momentum requires a momentum and zero dampening");
            return false;
        }
    } else if (strcmp(v->callee, "adam") == 0 || strcmp(v->callee, "adamw") == 0) {
        bool w = v->callee[4] == 'w';
        t->optimizer = w ? OPTIMIZER_ADAMW : OPTIMIZER_ADAM;
        t->lr = 1e-3;
        t->beta1 = 0.9;
        t->beta2 = 0.999;
        t->eps = 1e-8;
        t->weight_decay = w ? 1e-2 : 0;
        Setting s[] = {{"lr", 'd', &t->lr}, {"beta1", 'd', &t->beta1}, {"beta2", 'd', &t->beta2}, {"eps", 'd', &t->eps},
                       {"weight_decay", 'd', &t->weight_decay}, {"amsgrad", 'b', &t->amsgrad},
                       {"maximize", 'b', &t->maximize}};
        if (!read_call(c, v, s, 7))
            return false;
        if (!(t->beta1 >= 0 && t->beta1 < 1) || !(t->beta2 >= 0 && t->beta2 < 1)) {
            error_at(c, v->loc, "Invalid beta parameter: betas must be in [0, 1)");
            return false;
        }
        if (!(t->eps >= 0)) {
            error_at(c, v->loc, "Invalid epsilon value: %g", t->eps);
            return false;
        }
    } else {
        const char *names[] = {"sgd", "adam", "adamw"};
        const char *near = closest_name(v->callee, names, 3);
        error_at(c, v->name_loc, "unknown optimizer '%s'; ampc has sgd, adam and adamw%s%s%s", v->callee,
                 near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        return false;
    }
    if (!(t->lr >= 0) || !(t->momentum >= 0) || !(t->weight_decay >= 0)) {
        error_at(c, v->loc, "%s must not be negative", !(t->lr >= 0) ? "the learning rate" : !(t->momentum >= 0)
                                                                         ? "momentum" : "weight_decay");
        return false;
    }
    return true;
}

static bool read_scaler(Ctx *c, TrainConfig *t, Expr *v)
{
    t->scaler_loc = v->loc;
    if (v->kind == E_NAME && strcmp(v->text, "none") == 0) {
        t->scaler = SCALER_NONE;
        return true;
    }
    const char *name = v->kind == E_CALL && !v->is_operator ? v->callee : v->kind == E_NAME ? v->text : NULL;
    if (name && strcmp(name, "dynamic") == 0) {
        t->scaler = SCALER_DYNAMIC;
        Setting s[] = {{"init_scale", 'd', &t->init_scale}, {"growth_factor", 'd', &t->growth_factor},
                       {"backoff_factor", 'd', &t->backoff_factor}, {"growth_interval", 'i', &t->growth_interval}};
        if (v->kind == E_CALL && !read_call(c, v, s, 4))
            return false;
        if (!(t->growth_factor > 1) || !(t->backoff_factor < 1) || !(t->backoff_factor > 0) || !(t->init_scale > 0) ||
            t->growth_interval <= 0) {
            error_at(c, v->loc, "%s", !(t->growth_factor > 1) ? "The growth factor must be > 1.0."
                                      : !(t->backoff_factor < 1) || !(t->backoff_factor > 0)
                                          ? "The backoff factor must be in (0, 1)."
                                      : !(t->init_scale > 0) ? "init_scale must be positive"
                                                             : "growth_interval must be a positive integer");
            return false;
        }
        return true;
    }
    if (name && strcmp(name, "static") == 0) {
        t->scaler = SCALER_STATIC;
        Setting s[] = {{"scale", 'd', &t->init_scale}};
        if (v->kind != E_CALL || v->list->len != 1) {
            error_at(c, v->loc, "static takes the scale: static(1024)");
            return false;
        }
        if (!read_call(c, v, s, 1))
            return false;
        if (!(t->init_scale > 0) || isinf(t->init_scale)) {
            error_at(c, v->loc, "the static scale must be positive and finite");
            return false;
        }
        return true;
    }
    error_at(c, v->loc, "scaler takes dynamic, dynamic(...), static(SCALE) or none");
    return false;
}

bool read_training(Ctx *c)
{
    Stmt *section = NULL, *minimize = NULL;
    Vec *body = c->model->body;
    for (int i = 0; i < body->len; i++) {
        Stmt *st = VEC_AT(body, i);
        if (st->kind == S_MINIMIZE)
            minimize = st;
        if (st->kind != S_TRAIN)
            continue;
        if (section) {
            int line, col;
            loc_line_col(section->keyword_loc, &line, &col);
            error_at(c, st->keyword_loc, "a model has one train section; the first is at line %d", line);
            return false;
        }
        section = st;
    }
    if (!section)
        return true;
    if (!minimize) {
        error_at(c, section->keyword_loc, "a train section needs the loss: add 'minimize NAME'");
        return false;
    }
    TrainConfig *t = arena_alloc(c->arena, sizeof *t);
    memset(t, 0, sizeof *t);
    t->loc = section->keyword_loc;
    t->loss_loc = minimize->value->loc;
    t->accumulate = 1;
    t->optimizer = OPTIMIZER_NONE;
    t->init_scale = 65536.0;
    t->growth_factor = 2.0;
    t->backoff_factor = 0.5;
    t->growth_interval = 2000;
    bool ok = true, scaler_given = false;
    for (int i = 0; i < section->body->len; i++) {
        Stmt *st = VEC_AT(section->body, i);
        if (st->kind != S_ASSIGN || st->targets->len != 1) {
            error_at(c, st->loc, "a train section holds settings: optimizer = ..., scaler = ..., accumulate = N, "
                                 "clip_grad_norm = X");
            ok = false;
            continue;
        }
        Expr *key = VEC_AT(st->targets, 0);
        Expr *v = st->value;
        if (strcmp(key->text, "optimizer") == 0) {
            ok &= read_optimizer(c, t, v);
        } else if (strcmp(key->text, "scaler") == 0) {
            scaler_given = true;
            ok &= read_scaler(c, t, v);
        } else if (strcmp(key->text, "accumulate") == 0) {
            if (int_of(c, v, &t->accumulate) && t->accumulate < 1) {
                error_at(c, v->loc, "accumulate counts micro-batches per update: at least 1");
                ok = false;
            }
        } else if (strcmp(key->text, "clip_grad_norm") == 0) {
            if (number_of(c, v, &t->clip_grad_norm) && !(t->clip_grad_norm > 0)) {
                error_at(c, v->loc, "clip_grad_norm is the largest gradient norm allowed: a positive number");
                ok = false;
            }
        } else {
            static const char *const keys[] = {"optimizer", "scaler", "accumulate", "clip_grad_norm"};
            const char *near = closest_name(key->text, keys, 4);
            error_at(c, key->loc, "unknown train setting '%s'%s%s%s", key->text, near ? "; did you mean '" : "",
                     near ? near : "", near ? "'?" : "");
            ok = false;
        }
    }
    if (!ok)
        return false;
    if (t->optimizer == OPTIMIZER_NONE) {
        error_at(c, section->keyword_loc, "the train section needs an optimizer, e.g. optimizer = sgd(lr=0.1)");
        return false;
    }
    DType low = c->opts->autocast_dtype != DT_NONE ? c->opts->autocast_dtype : c->policy->low;
    if (!scaler_given)
        t->scaler = low == DT_F16 ? SCALER_DYNAMIC : SCALER_NONE;
    else if (t->scaler != SCALER_NONE && low == DT_BF16)
        note_at(c, t->scaler_loc, "loss scaling is on as asked, though autocast's low dtype here is bf16, whose "
                                  "range is f32's: bf16 gradients do not underflow the way f16 ones do");
    c->train = t;
    return true;
}
