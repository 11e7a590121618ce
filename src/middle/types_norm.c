/* types_norm.c: the type rules of the normalisations.
 *
 * layer_norm, group_norm, batch_norm and instance_norm.  Their affine parameters and
 * running statistics may stay f32 under a bf16/f16 input, as PyTorch's
 * mixed-type kernels allow (mixed_ok); the result has the input's type.
 * local_response_norm is rewritten into the ops PyTorch's Python function
 * runs (mul, unsqueeze, pad, avg_pool2d/3d, squeeze, add, pow, div).
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

/* How many trailing dims layer_norm's normalized_shape names: one int
 * (the last dim), or a list ((4, 8): the last two). */
static int normalized_dims(Expr *call)
{
    Expr *e = named(call, "normalized_shape");
    return e->kind == E_LIST ? e->list->len : 1;
}

/* normalized_shape: the input's last dims, each known and equal. */
static bool layer_norm_shape(Ctx *c, Expr *call, const Shape *xs)
{
    int64_t v[MAX_DIMS];
    int k = int_list_param(c, call, "normalized_shape", v, MAX_DIMS);
    if (k < 0)
        return false;
    bool ok = xs->ndim >= k;
    for (int i = 0; ok && i < k; i++) {
        int64_t size;
        ok = const_dim(xs->dims[xs->ndim - k + i], &size) && size == v[i];
    }
    if (ok)
        return true;
    char *want = arena_printf(c->arena, "%lld", (long long)v[0]);
    for (int i = 1; i < k; i++)
        want = arena_printf(c->arena, "%s, %lld", want, (long long)v[i]);
    error_at(c, call->loc, "Given normalized_shape=[%s], expected input with shape [*, %s], but got input of size %s",
             want, want, shape_str(c, xs));
    return false;
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
        if (!layer_norm_shape(c, call, xs))
            return false;
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
    int k = id == OP_LAYER_NORM ? normalized_dims(call) : 1;
    for (int i = 0; i < 2; i++) {
        if (!wb[i])
            continue;
        Shape want = {0};
        for (int d = xs->ndim - k; d < xs->ndim; d++)
            want.dims[want.ndim++] = xs->dims[d];
        if (k > 1 && !shape_equal(&wb[i]->type.shape, &want)) {
            error_at(c, wb[i]->loc, "layer_norm(): %s should be of shape %s, the normalized_shape, but it is %s",
                     i ? "bias" : "weight", shape_str(c, &want), type_to_string(c, &wb[i]->type));
            return false;
        }
        if ((k == 1 && !per_channel(c, call, wb[i], channels)) || !mixed_ok(c, call, x, wb[i]))
            return false;
    }
    call->type = x->type;
    return true;
}

/* ---- local_response_norm ------------------------------------------------ */

/* A call of a binary op (mul, add, div, pow) on a and b (b a number or a
 * tensor), typed at once. */
static Expr *binary(Ctx *c, OpId id, Expr *from, Expr *a, Expr *b)
{
    const OpInfo *op = op_info(c, id);
    Expr *e = call_skeleton(c, op, from, from->name_loc, a);
    e->is_operator = id != OP_POW; /* x * 2 written as an operator; pow(x, 0.75) as a call */
    vec_push(c, e->list, b);
    e->bound[1] = b;
    return infer_call(c, e) ? e : NULL;
}

/* The number argument `name`, or its default's literal. */
static Expr *number_or(Ctx *c, Expr *call, const char *name, const char *dflt)
{
    Expr *e = named(call, name);
    if (e)
        return e;
    e = arena_alloc(c->arena, sizeof *e);
    e->kind = E_NUMBER;
    e->loc = call->name_loc;
    e->text = dflt;
    e->is_float = true;
    return e;
}

/* avg_pool2d/3d(x, (size, 1[, 1]), stride=1): a window over the channels. */
static Expr *channel_pool(Ctx *c, Expr *call, Expr *x, int64_t size, int ns)
{
    const OpInfo *op = op_info(c, ns == 2 ? OP_AVG_POOL2D : OP_AVG_POOL3D);
    Expr *k = arena_alloc(c->arena, sizeof *k);
    k->kind = E_LIST;
    k->loc = call->name_loc;
    k->list = vec_push(c, vec_new(c), int_expr(c, size, call->name_loc));
    for (int i = 1; i < ns; i++)
        vec_push(c, k->list, int_expr(c, 1, call->name_loc));
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->kind = E_CALL;
    e->loc = call->loc;
    e->name_loc = call->name_loc;
    e->callee = op->name;
    e->op = op;
    e->autocast_on = call->autocast_on;
    e->autocast_low = call->autocast_low;
    e->bound = arena_alloc(c->arena, (size_t)(op->nparams + 1) * sizeof *e->bound);
    e->bound[0] = x;
    e->bound[op_param_index(op, "kernel_size")] = k;
    e->bound[op_param_index(op, "stride")] = int_expr(c, 1, call->name_loc);
    e->list = vec_push(c, vec_push(c, vec_push(c, vec_new(c), x), k), e->bound[op_param_index(op, "stride")]);
    return infer_call(c, e) ? e : NULL;
}

/* F.local_response_norm(x, size, alpha, beta, k) is PyTorch's Python
 * function, so autocast and autograd see the ops it runs, and so does
 * ampc: the call becomes them, in place.  The squares, unsqueezed at 1,
 * padded along the channels (size // 2 before, (size - 1) // 2 after),
 * averaged over `size` channels (avg_pool2d for a 3-D input, avg_pool3d
 * over [N, 1, C, H, rest flattened] otherwise), then
 * x / (avg * alpha + k) ** beta. */
bool infer_local_response_norm(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    int nd = xs->ndim;
    int64_t size;
    if (!require_float(c, call, x) || !int_param(c, call, "size", 0, &size))
        return false;
    if (nd < 3) {
        error_at(c, x->loc, "Expected 3D or higher dimensionality input (got %d dimensions)", nd);
        return false;
    }
    if (size <= 0) {
        error_at(c, named(call, "size")->loc, "local_response_norm(): size must be positive, but it is %lld",
                 (long long)size);
        return false;
    }
    int64_t rest[MAX_DIMS];
    for (int i = 1; nd > 4 && i < nd; i++) {
        if (!poly_is_const(xs->dims[i], &rest[i])) {
            error_at(c, x->loc, "local_response_norm() of a %d-D input needs its dims after the first known, but "
                     "dim %d is %s", nd, i, dim_str(c, xs->dims[i]));
            return false;
        }
    }
    Loc at = call->name_loc;
    Expr *d = binary(c, OP_MUL, call, x, x);
    d = d ? make_call(c, OP_UNSQUEEZE, call, at, d, 1, (const char *[]){"dim"}, (int64_t[]){1}) : NULL;
    if (d && nd > 4)
        d = make_call(c, OP_FLATTEN, call, at, d, 1, (const char *[]){"start_dim"}, (int64_t[]){4});
    static const char *const pads[] = {"pad", "pad", "pad", "pad", "pad", "pad"};
    int64_t pv[6] = {0, 0, 0, 0, 0, 0};
    int np = nd == 3 ? 4 : 6;
    pv[np - 2] = size / 2;
    pv[np - 1] = (size - 1) / 2;
    d = d ? make_call(c, OP_PAD, call, at, d, np, pads, pv) : NULL;
    d = d ? channel_pool(c, call, d, size, nd == 3 ? 2 : 3) : NULL;
    d = d ? make_call(c, OP_SQUEEZE, call, at, d, 1, (const char *[]){"dim"}, (int64_t[]){1}) : NULL;
    if (d && nd > 4) {
        static const char *const shape[MAX_DIMS] = {"shape", "shape", "shape", "shape", "shape", "shape",
                                                    "shape", "shape"};
        rest[0] = -1;
        d = make_call(c, OP_RESHAPE, call, at, d, nd, shape, rest);
    }
    d = d ? binary(c, OP_MUL, call, d, number_or(c, call, "alpha", "0.0001")) : NULL;
    d = d ? binary(c, OP_ADD, call, d, number_or(c, call, "k", "1.0")) : NULL;
    d = d ? binary(c, OP_POW, call, d, number_or(c, call, "beta", "0.75")) : NULL;
    Expr *r = d ? binary(c, OP_DIV, call, x, d) : NULL;
    if (!r)
        return false;
    Loc loc = call->loc;
    *call = *r;
    call->loc = loc;
    return true;
}
