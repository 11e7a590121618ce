/* types_norm.c: the type rules of the normalisations.
 *
 * layer_norm, group_norm, batch_norm and instance_norm.  Their affine parameters and
 * running statistics may stay f32 under a bf16/f16 input, as PyTorch's
 * mixed-type kernels allow (mixed_ok); the result has the input's type.
 */

#include "types.h"

/* A parameter of a normalisation or a weight that may stay f32 under a
 * bf16/f16 input (PyTorch's mixed-type kernels), or match it. */
static bool mixed_ok(Ctx *c, Expr *call, Expr *x, Expr *p)
{
    DType a = x->type.dtype, b = p->type.dtype;
    if (a == b || (b == DT_F32 && (a == DT_BF16 || a == DT_F16)))
        return true;
    if (call->autocast_on && !c->autocast_ran)
        return true;
    error_at(c, p->loc, "%s(): expected %s to be %s%s, like the input, but it is %s", call->op->name,
             p->kind == E_NAME ? p->text : "this parameter", dtype_name(a),
             a == DT_BF16 || a == DT_F16 ? " or f32" : "", dtype_name(b));
    return false;
}

/* instance_norm: the input's statistics per sample and channel (more
 * than one element each, as PyTorch checks), or the running ones with
 * use_input_stats=false; running statistics that use_input_stats=true
 * would update in place are refused, as batch_norm(training=true)
 * without a train section is. */
static bool instance_norm_stats(Ctx *c, Expr *call, Expr *x, const Poly *channels)
{
    bool use_input;
    double momentum, eps;
    if (!bool_param(c, call, "use_input_stats", true, &use_input) ||
        !float_param(c, call, "momentum", 0.1, &momentum) || !float_param(c, call, "eps", 1e-5, &eps))
        return false;
    const Shape *xs = &x->type.shape;
    if (xs->ndim < 3) {
        error_at(c, x->loc, "instance_norm(): expected an input of 3 to 5 dimensions (N, C, spatial...), but got %s",
                 shape_str(c, xs));
        return false;
    }
    int64_t n = 1, v;
    for (int i = 2; i < xs->ndim; i++)
        n = const_dim(xs->dims[i], &v) ? n * v : -1;
    if (use_input && n == 1) {
        error_at(c, x->loc, "Expected more than 1 spatial element when training, got input size %s", shape_str(c, xs));
        return false;
    }
    const char *stats[2] = {"running_mean", "running_var"};
    for (int i = 0; i < 2; i++) {
        Expr *s;
        if (!tensor_arg(c, call, stats[i], &s))
            return false;
        if (!s && !use_input) {
            error_at(c, call->loc, "Expected running_mean and running_var to be defined when use_input_stats is false");
            return false;
        }
        if (s && use_input) {
            error_at(c, s->loc, "instance_norm(): with use_input_stats=true the running statistics are updated in "
                     "place, which a compiled forward does not do; leave them out, or pass use_input_stats=false "
                     "to normalise with them");
            return false;
        }
        if (s && (!per_channel(c, call, s, channels) || !mixed_ok(c, call, x, s)))
            return false;
    }
    return true;
}

bool infer_norm(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0), *w, *b;
    if (!require_float(c, call, x) || !tensor_arg(c, call, "weight", &w) || !tensor_arg(c, call, "bias", &b))
        return false;
    const Shape *xs = &x->type.shape;
    OpId id = call->op->id;
    const Poly *channels;
    if (id == OP_LAYER_NORM) {
        int64_t n, last;
        if (!int_arg(c, named(call, "normalized_shape"), &n))
            return false;
        if (xs->ndim < 1 || !const_dim(xs->dims[xs->ndim - 1], &last) || last != n) {
            error_at(c, call->loc, "Given normalized_shape=[%lld], expected input with shape [*, %lld], but got "
                     "input of size %s", (long long)n, (long long)n, shape_str(c, xs));
            return false;
        }
        channels = xs->dims[xs->ndim - 1];
    } else {
        if (xs->ndim < 2) {
            error_at(c, x->loc, "%s(): expected at least 2 dimensions for input tensor (N, C, ...) but received %d",
                     call->op->name, xs->ndim);
            return false;
        }
        channels = xs->dims[1];
    }
    if (id == OP_GROUP_NORM) {
        int64_t g, ch;
        if (!int_arg(c, named(call, "num_groups"), &g))
            return false;
        if (g <= 0 || (const_dim(channels, &ch) && ch % g != 0)) {
            error_at(c, named(call, "num_groups")->loc, "Expected number of channels in input to be divisible by "
                     "num_groups, but got input of shape %s and num_groups=%lld", shape_str(c, xs), (long long)g);
            return false;
        }
    }
    if (id == OP_INSTANCE_NORM && !instance_norm_stats(c, call, x, channels))
        return false;
    if (id == OP_BATCH_NORM) {
        bool training;
        double momentum, eps;
        if (!bool_param(c, call, "training", false, &training) || !float_param(c, call, "momentum", 0.1, &momentum) ||
            !float_param(c, call, "eps", 1e-5, &eps))
            return false;
        const char *stats[2] = {"running_mean", "running_var"};
        for (int i = 0; i < 2; i++) {
            Expr *s;
            if (!tensor_arg(c, call, stats[i], &s))
                return false;
            if (!s && !training) {
                error_at(c, call->loc, "batch_norm(): %s must be defined in evaluation mode (training=false)",
                         stats[i]);
                return false;
            }
            if (s && (!per_channel(c, call, s, channels) || !mixed_ok(c, call, x, s)))
                return false;
        }
    }
    Expr *wb[2] = {w, b};
    for (int i = 0; i < 2; i++)
        if (wb[i] && (!per_channel(c, call, wb[i], channels) || !mixed_ok(c, call, x, wb[i])))
            return false;
    call->type = x->type;
    return true;
}
