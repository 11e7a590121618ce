/* types_loss.c: the type rules of the losses.
 *
 * nll_loss, cross_entropy, the pointwise losses (mse, l1, smooth_l1,
 * huber, kl_div, binary cross-entropy, ...), the class losses
 * (nll_loss2d, multilabel and multi margin), the pair losses
 * (cosine_embedding, margin_ranking, triplet_margin) and ctc_loss.
 * reduction= is stored on the call as a code (reduction_code: "none" 0,
 * "mean" 1, "sum" 2; kl_div's "batchmean" 3); the result is 0-dim unless
 * the reduction is "none" (loss_result).
 */

#include "types.h"

#include <string.h>

/* ---- reduction= --------------------------------------------------------- */

int reduction_code(const char *s)
{
    if (strcmp(s, "none") == 0)
        return 0;
    if (strcmp(s, "mean") == 0)
        return 1;
    if (strcmp(s, "sum") == 0)
        return 2;
    return -1;
}

/* reduction=: "mean" (the default), "sum", "none"; kl_div adds "batchmean"
 * (code 3, a 0-dim result like mean). */
static bool reduction_param(Ctx *c, Expr *call, bool batchmean)
{
    const char *s;
    if (!str_param(c, call, "reduction", "mean", &s))
        return false;
    int code = batchmean && strcmp(s, "batchmean") == 0 ? 3 : reduction_code(s);
    if (code < 0) {
        error_at(c, named(call, "reduction")->loc, "%s is not a valid value for reduction: it takes \"none\", "
                 "\"mean\"%s or \"sum\"", s, batchmean ? ", \"batchmean\"" : "");
        return false;
    }
    call->reduction = code;
    return true;
}

/* The loss's result: the elementwise shape for reduction="none", else 0-dim. */
static void loss_result(Expr *call, DType t, const Shape *elementwise)
{
    call->type.dtype = t;
    call->type.shape.ndim = 0;
    if (call->reduction == 0)
        call->type.shape = *elementwise;
}

/* ---- classification ----------------------------------------------------- */

bool infer_nll_loss(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *target = arg(call, 1), *weight = arg(call, 2), *red = arg(call, 4);
    if (!require_float(c, call, x))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    if (xs->ndim != 2 && xs->ndim != 1) {
        error_at(c, x->loc, "nll_loss() takes input [N, C] or [C], got %s", type_to_string(c, &x->type));
        return false;
    }
    if (target->type.dtype != DT_I64) {
        error_at(c, target->loc, "nll_loss() takes class indices as an i64 target, got %s",
                 type_to_string(c, &target->type));
        return false;
    }
    bool batched = xs->ndim == 2;
    if (ts->ndim != (batched ? 1 : 0) || (batched && !dims_match(ts->dims[0], xs->dims[0]))) {
        error_at(c, target->loc, "nll_loss(): target must be %s to match input %s, got %s",
                 batched ? arena_printf(c->arena, "i64[%s]", dim_str(c, xs->dims[0])) : "i64[]",
                 type_to_string(c, &x->type), type_to_string(c, &target->type));
        return false;
    }
    Poly *classes = xs->dims[xs->ndim - 1];
    if (weight) {
        if (!require_tensor(c, call, 2) || !same_dtype(c, call, x, weight))
            return false;
        if (weight->type.shape.ndim != 1 || !dims_match(weight->type.shape.dims[0], classes)) {
            error_at(c, weight->loc, "nll_loss(): weight must have one entry per class, [%s], got %s",
                     dim_str(c, classes), type_to_string(c, &weight->type));
            return false;
        }
    }
    int64_t ignore = -100;
    if (arg(call, 3) && !int_arg(c, arg(call, 3), &ignore))
        return false;
    call->ignore_index = ignore;
    int code = 1;
    if (red) {
        code = red->kind == E_STRING ? reduction_code(red->text) : -1;
        if (code < 0) {
            error_at(c, red->loc, "reduction= takes \"none\", \"mean\" or \"sum\"");
            return false;
        }
    }
    call->reduction = code;
    call->type.dtype = x->type.dtype;
    call->type.shape.ndim = 0;
    if (code == 0 && batched) {
        call->type.shape.ndim = 1;
        call->type.shape.dims[0] = xs->dims[0];
    }
    return true;
}

bool infer_cross_entropy(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *target = arg(call, 1), *w;
    if (!require_float(c, call, x) || !tensor_arg(c, call, "weight", &w) || !reduction_param(c, call, false))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    if (xs->ndim == 0) {
        error_at(c, x->loc, "cross_entropy(): the input must be [C] or [N, C, ...], not 0-dim");
        return false;
    }
    int cdim = xs->ndim == 1 ? 0 : 1;
    Shape per_sample = {0};
    for (int i = 0; i < xs->ndim; i++)
        if (i != cdim)
            per_sample.dims[per_sample.ndim++] = xs->dims[i];
    double smoothing;
    int64_t ignore;
    if (!float_param(c, call, "label_smoothing", 0.0, &smoothing) ||
        !int_param(c, call, "ignore_index", -100, &ignore))
        return false;
    call->ignore_index = ignore;
    if (smoothing < 0 || smoothing > 1) {
        error_at(c, named(call, "label_smoothing")->loc, "label_smoothing must be between 0.0 and 1.0. Got: %s",
                 loc_text(c, named(call, "label_smoothing")->loc));
        return false;
    }
    if (dtype_is_float(target->type.dtype)) {
        /* class probabilities, one per class like the input */
        if (!shape_equal(ts, xs)) {
            error_at(c, target->loc, "cross_entropy(): class-probability targets must have the input's shape %s, "
                     "got %s", shape_str(c, xs), shape_str(c, ts));
            return false;
        }
        if (named(call, "ignore_index")) {
            error_at(c, named(call, "ignore_index")->loc, "ignore_index is not supported for floating point target");
            return false;
        }
        if (!same_dtype(c, call, x, target))
            return false;
    } else if (target->type.dtype != DT_I64) {
        error_at(c, target->loc, "cross_entropy(): class indices must be i64 (expected scalar type Long), got %s",
                 type_to_string(c, &target->type));
        return false;
    } else if (!shape_equal(ts, &per_sample)) {
        error_at(c, target->loc, "cross_entropy(): class-index targets must be %s to match input %s, got %s",
                 shape_str(c, &per_sample), shape_str(c, xs), shape_str(c, ts));
        return false;
    }
    if (w && (!per_channel(c, call, w, xs->dims[cdim]) || !same_dtype(c, call, x, w)))
        return false;
    loss_result(call, x->type.dtype, &per_sample);
    return true;
}

/* nll_loss2d, multilabel_margin_loss, multi_margin_loss: class-index targets. */
bool infer_class_loss(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0), *target = arg(call, 1), *w = NULL;
    if (!require_float(c, call, x) || !reduction_param(c, call, false))
        return false;
    if (op_param_index(call->op, "weight") >= 0 && !tensor_arg(c, call, "weight", &w))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    if (target->type.dtype != DT_I64) {
        error_at(c, target->loc, "%s(): expected scalar type Long (i64) for the target, but got %s", call->op->name,
                 type_to_string(c, &target->type));
        return false;
    }
    Shape per_sample = {0};
    const Poly *classes;
    if (id == OP_NLL_LOSS2D) {
        if (xs->ndim != 4) {
            error_at(c, x->loc, "only batches of spatial inputs supported (4D tensors), but got input of dimension: %d",
                     xs->ndim);
            return false;
        }
        if (ts->ndim != 3) {
            error_at(c, target->loc, "only batches of spatial targets supported (3D tensors) but got targets of "
                     "dimension: %d", ts->ndim);
            return false;
        }
        per_sample.ndim = 3;
        per_sample.dims[0] = xs->dims[0];
        per_sample.dims[1] = xs->dims[2];
        per_sample.dims[2] = xs->dims[3];
        if (!shape_equal(ts, &per_sample)) {
            error_at(c, target->loc, "input and target batch or spatial sizes don't match: target %s, input %s",
                     shape_str(c, ts), shape_str(c, xs));
            return false;
        }
        classes = xs->dims[1];
        int64_t ignore;
        if (!int_param(c, call, "ignore_index", -100, &ignore))
            return false;
        call->ignore_index = ignore;
    } else {
        if (xs->ndim > 2) {
            error_at(c, x->loc, "%s(): Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s",
                     call->op->name, shape_str(c, xs));
            return false;
        }
        if (xs->ndim == 2)
            per_sample.dims[per_sample.ndim++] = xs->dims[0];
        classes = xs->ndim ? xs->dims[xs->ndim - 1] : poly_const(c, 1);
        bool ok = id == OP_MULTILABEL_MARGIN_LOSS ? shape_equal(ts, xs) || (xs->ndim == 0 && ts->ndim <= 1)
                                                   : shape_equal(ts, &per_sample);
        if (!ok) {
            error_at(c, target->loc, id == OP_MULTILABEL_MARGIN_LOSS ? "inconsistent target size: %s for input of size: %s"
                                                                     : "inconsistent target size, got %s for input of size %s",
                     shape_str(c, ts), shape_str(c, xs));
            return false;
        }
        if (id == OP_MULTI_MARGIN_LOSS) {
            int64_t p;
            double margin;
            if (!int_param(c, call, "p", 1, &p) || !float_param(c, call, "margin", 1.0, &margin))
                return false;
            if (p != 1 && p != 2) {
                error_at(c, named(call, "p")->loc, "only p == 1 and p == 2 supported");
                return false;
            }
        }
    }
    if (w && (!per_channel(c, call, w, classes) || !same_dtype(c, call, x, w)))
        return false;
    loss_result(call, x->type.dtype, &per_sample);
    return true;
}

/* ---- elementwise losses ------------------------------------------------- */

/* huber_loss, poisson_nll_loss, soft_margin_loss, hinge_embedding_loss. */
static bool elementwise_loss(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    Expr *x = arg(call, 0), *target = arg(call, 1);
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    Shape s;
    if (id == OP_SOFT_MARGIN_LOSS) {
        /* computed in place in a tensor like the input */
        if (!broadcasts_to(c, call, target, xs, "target"))
            return false;
        s = *xs;
    } else if (!broadcast(c, call, xs, ts, &s)) {
        return false;
    }
    if (id == OP_HUBER_LOSS && !shape_equal(xs, ts) && !c->autocast_ran)
        warning_class_at(c, target->loc, "loss-broadcast", "Using a target size (%s) that is different to the "
                         "input size (%s). This will likely lead to incorrect results due to broadcasting. "
                         "Please ensure they have the same size.", shape_str(c, ts), shape_str(c, xs));
    DType t = x->type.dtype;
    if (id == OP_POISSON_NLL_LOSS) {
        t = promote_tensors(&x->type, &target->type);
        if (!dtype_is_float(t))
            t = DT_F32;
        bool log_input, full;
        double eps;
        if (!bool_param(c, call, "log_input", true, &log_input) || !bool_param(c, call, "full", false, &full) ||
            !float_param(c, call, "eps", 1e-8, &eps))
            return false;
    } else if (!require_float(c, call, x)) {
        return false;
    }
    if (id == OP_HUBER_LOSS) {
        double delta;
        if (!float_param(c, call, "delta", 1.0, &delta))
            return false;
        if (delta <= 0) {
            error_at(c, named(call, "delta")->loc, "huber_loss does not support non-positive values for delta.");
            return false;
        }
    }
    if (id == OP_HINGE_EMBEDDING_LOSS) {
        double margin;
        if (!float_param(c, call, "margin", 1.0, &margin))
            return false;
    }
    loss_result(call, t, &s);
    return true;
}

bool infer_pointwise_loss(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    OpId id = call->op->id;
    if (id == OP_HUBER_LOSS || id == OP_POISSON_NLL_LOSS || id == OP_SOFT_MARGIN_LOSS || id == OP_HINGE_EMBEDDING_LOSS)
        return reduction_param(c, call, false) && elementwise_loss(c, call);
    Expr *x = arg(call, 0), *target = arg(call, 1);
    if (!reduction_param(c, call, id == OP_KL_DIV))
        return false;
    const Shape *xs = &x->type.shape, *ts = &target->type.shape;
    bool bce = id == OP_BINARY_CROSS_ENTROPY || id == OP_BINARY_CROSS_ENTROPY_WITH_LOGITS;
    Shape s;
    if (bce) {
        if (!shape_equal(xs, ts)) {
            error_at(c, target->loc, id == OP_BINARY_CROSS_ENTROPY
                     ? "Using a target size (%s) that is different to the input size (%s) is deprecated. Please ensure they have the same size."
                     : "Target size (%s) must be the same as input size (%s)", shape_str(c, ts), shape_str(c, xs));
            return false;
        }
        s = *xs;
    } else {
        if (!broadcast(c, call, xs, ts, &s))
            return false;
        /* once: autocast runs this rule again on the same shapes */
        if (!shape_equal(xs, ts) && id != OP_KL_DIV && !c->autocast_ran)
            warning_class_at(c, target->loc, "loss-broadcast", "Using a target size (%s) that is different to the "
                             "input size (%s). This will likely lead to incorrect results due to broadcasting. "
                             "Please ensure they have the same size.", shape_str(c, ts), shape_str(c, xs));
    }
    DType t = promote_tensors(&x->type, &target->type);
    if (id == OP_BINARY_CROSS_ENTROPY_WITH_LOGITS) {
        /* (1 - target).mul_(input)...: computed in place in the target's dtype */
        if (!require_float(c, call, x) || !require_float(c, call, target))
            return false;
        t = target->type.dtype;
    }
    if (t == DT_BOOL) {
        error_at(c, call->loc, "%s(): subtraction of bool tensors is not defined", call->op->name);
        return false;
    }
    if (!dtype_is_float(t) && id != OP_L1_LOSS) {
        error_at(c, call->loc, "%s() needs floating-point tensors, but the input is %s and the target %s",
                 call->op->name, dtype_name(x->type.dtype), dtype_name(target->type.dtype));
        return false;
    }
    if (id == OP_BINARY_CROSS_ENTROPY && !same_dtype(c, call, x, target))
        return false;
    if (id == OP_SMOOTH_L1_LOSS) {
        double beta;
        if (!float_param(c, call, "beta", 1.0, &beta))
            return false;
        if (beta < 0) {
            error_at(c, named(call, "beta")->loc, "smooth_l1_loss does not support negative values for beta.");
            return false;
        }
    }
    if (id == OP_KL_DIV) {
        bool log_target;
        if (!bool_param(c, call, "log_target", false, &log_target))
            return false;
    }
    if (bce) {
        const char *extra[2] = {"weight", id == OP_BINARY_CROSS_ENTROPY_WITH_LOGITS ? "pos_weight" : NULL};
        for (int i = 0; i < 2 && extra[i]; i++) {
            Expr *w;
            if (!tensor_arg(c, call, extra[i], &w))
                return false;
            if (w && !broadcasts_to(c, call, w, xs, extra[i]))
                return false;
        }
    }
    loss_result(call, t, &s);
    return true;
}

/* ---- pair losses -------------------------------------------------------- */

/* cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss. */
bool infer_pair_loss(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    OpId id = call->op->id;
    Expr *a = arg(call, 0), *b = arg(call, 1), *t = arg(call, 2);
    const Shape *as = &a->type.shape, *bs = &b->type.shape, *ts = &t->type.shape;
    if (!reduction_param(c, call, false))
        return false;
    double margin;
    if (!float_param(c, call, "margin", id == OP_TRIPLET_MARGIN_LOSS ? 1.0 : 0.0, &margin))
        return false;
    Type ab = a->type;
    ab.dtype = promote_tensors(&a->type, &b->type);
    if (bs->ndim)
        ab.shape = *bs;
    DType dt = ab.dtype;
    Shape s;
    if (id == OP_COSINE_EMBEDDING_LOSS) {
        if (ts->ndim > 1) {
            error_at(c, t->loc, "1D target tensor expected, multi-target not supported");
            return false;
        }
        if (as->ndim != ts->ndim + 1 || bs->ndim != ts->ndim + 1) {
            error_at(c, call->loc, "%dD target tensor expects %dD input tensors, but found inputs with sizes %s and %s.",
                     ts->ndim, ts->ndim + 1, shape_str(c, as), shape_str(c, bs));
            return false;
        }
        Shape ra = leading(as, 1), rb = leading(bs, 1);
        if (!broadcast(c, call, as, bs, &s) || !broadcast(c, call, &ra, &rb, &s) || !broadcast(c, call, &s, ts, &s))
            return false;
    } else {
        if (as->ndim != bs->ndim || as->ndim != ts->ndim) {
            if (id == OP_MARGIN_RANKING_LOSS)
                error_at(c, call->loc, "margin_ranking_loss : All input tensors should have same dimension but got "
                         "sizes: input1: %s, input2: %s, target: %s ", shape_str(c, as), shape_str(c, bs), shape_str(c, ts));
            else
                error_at(c, call->loc, "All inputs should have same dimension but got %dD, %dD and %dD inputs.",
                         as->ndim, bs->ndim, ts->ndim);
            return false;
        }
        if (a->type.dtype == DT_BOOL || b->type.dtype == DT_BOOL) {
            error_at(c, call->loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                     "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
            return false;
        }
        if (!broadcast(c, call, as, bs, &s) || !broadcast(c, call, &s, ts, &s))
            return false;
        dt = promote_tensors(&ab, &t->type);
        if (id == OP_TRIPLET_MARGIN_LOSS) {
            if (as->ndim != 1 && as->ndim != 2) {
                error_at(c, call->loc, "triplet_margin_loss(): expected 1D or 2D inputs, got %dD", as->ndim);
                return false;
            }
            double p, eps;
            bool swap;
            if (!float_param(c, call, "p", 2.0, &p) || !float_param(c, call, "eps", 1e-6, &eps) ||
                !bool_param(c, call, "swap", false, &swap))
                return false;
            if (!dtype_is_float(dt)) {
                error_at(c, call->loc, "triplet_margin_loss() needs floating-point tensors, got %s, %s and %s",
                         dtype_name(a->type.dtype), dtype_name(b->type.dtype), dtype_name(t->type.dtype));
                return false;
            }
            s = leading(&s, 1);
        } else if (t->type.dtype == DT_BOOL) {
            error_at(c, t->loc, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                     "invert a mask, use the `~` or `logical_not()` operator instead.");
            return false;
        }
    }
    if (!dtype_is_float(dt))
        dt = DT_F32; /* the float margin or epsilon */
    loss_result(call, dt, &s);
    return true;
}

/* ---- ctc_loss ----------------------------------------------------------- */

bool infer_ctc_loss(Ctx *c, Expr *call)
{
    for (int i = 0; i < 4; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *lp = arg(call, 0), *tg = arg(call, 1), *il = arg(call, 2), *tl = arg(call, 3);
    DType t = lp->type.dtype;
    if (t != DT_F32 && t != DT_F64 && !(dtype_is_float(t) && call->autocast_on && !c->autocast_ran)) {
        error_at(c, lp->loc, "\"ctc_loss_cpu\" not implemented for '%s': log_probs must be f32 or f64",
                 dtype_name(t));
        return false;
    }
    Expr *ints[3] = {tg, il, tl};
    static const char *const what[3] = {"targets", "input_lengths", "target_lengths"};
    for (int i = 0; i < 3; i++)
        if (ints[i]->type.dtype != DT_I64) {
            error_at(c, ints[i]->loc, "ctc_loss(): %s must be an i64 tensor, but it is %s", what[i],
                     type_to_string(c, &ints[i]->type));
            return false;
        }
    const Shape *ls = &lp->type.shape, *ts = &tg->type.shape;
    if (ls->ndim != 2 && ls->ndim != 3) {
        error_at(c, lp->loc, "ctc_loss(): log_probs must be [T, N, C] or [T, C], but it is %s",
                 type_to_string(c, &lp->type));
        return false;
    }
    bool batched = ls->ndim == 3;
    if (ts->ndim != (batched ? 2 : 1) || (batched && !dims_match(ts->dims[0], ls->dims[1]))) {
        error_at(c, tg->loc, batched ? "Expected tensor to have size %s at dimension 0, but got size %s for argument "
                                       "#2 'targets' (while checking arguments for ctc_loss_cpu)"
                                     : "ctc_loss(): unbatched log_probs [T, C] take targets [S], but got %s%s",
                 batched ? dim_str(c, ls->dims[1]) : "", batched ? (ts->ndim ? dim_str(c, ts->dims[0]) : "?")
                                                              : shape_str(c, ts));
        return false;
    }
    for (int i = 1; i < 3; i++) {
        const Shape *s = &ints[i]->type.shape;
        int64_t one;
        bool ok = batched ? s->ndim == 1 && dims_match(s->dims[0], ls->dims[1])
                          : s->ndim == 0 || (s->ndim == 1 && const_dim(s->dims[0], &one) && one == 1);
        if (!ok) {
            error_at(c, ints[i]->loc, "%s must be of size batch_size", what[i]);
            return false;
        }
    }
    int64_t blank, C;
    if (!int_param(c, call, "blank", 0, &blank) || !reduction_param(c, call, false))
        return false;
    bool zi;
    if (!bool_param(c, call, "zero_infinity", false, &zi))
        return false;
    if (const_dim(ls->dims[ls->ndim - 1], &C) && (blank < 0 || blank >= C)) {
        error_at(c, named(call, "blank")->loc, "blank must be in label range");
        return false;
    }
    Shape none = {0};
    if (batched)
        none.dims[none.ndim++] = ls->dims[1];
    loss_result(call, t, &none);
    return true;
}
