/* emit_norm.c: the kernel calls of the normalisations.
 *
 * layer_norm, group_norm, batch_norm and instance_norm (group_norm's
 * kernel with a group per channel, or batch_norm's evaluation with
 * use_input_stats=false), whose affine parameters and
 * running statistics may be f32 under a bf16/f16 input (param_dtype_c
 * names their dtype to the kernel); batch_norm in the training step
 * computes the batch's statistics and updates the running ones.
 *
 * Requires: a planned graph whose every node's operands are in the dtype
 * its kernel takes (autocast made every conversion an explicit Cast node).
 * Each emitter here is named in the emit column of its ops' ops.def rows
 * (declared in emit_rules.h) and called by emit_op (emit_ops.c), which has
 * already checked the operands' dtypes; it writes the C statements
 * computing node n into y (and n's other results), read from the node's
 * shapes and attributes.  Arrays of sizes and strides are local constants
 * in a block of their own, so a call reads like its kernel's documentation
 * in runtime/include/amprt/.
 */
#include "emit.h"

const char *param_dtype_c(Node *n, int first, int last)
{
    for (int k = first; k <= last; k++)
        if (n->in[k])
            return dtype_amp_enum(n->in[k]->type.dtype);
    return dtype_amp_enum(n->out->type.dtype);
}

/* batch_norm(training=true) in the training step: batch statistics, and the
 * running ones (buffers the training state owns) updated in place. */
static bool emit_batch_norm_train(Emitter *e, Node *n, const char *y, double eps)
{
    if (!in_train_step(e))
        return false;
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    const char *stats[2];
    Value *cast_back[2] = {NULL, NULL};
    for (int k = 1; k <= 2; k++) {
        Value *v = n->in[k];
        /* a buffer converted for the op (the f64 reference's casts, or a
         * promotion): the converted copy is updated, then cast back */
        if (v && v->kind == V_TEMP && v->def && v->def->op->id == OP_CAST && v->def->in[0]->kind == V_BUFFER) {
            cast_back[k - 1] = v;
            stats[k - 1] = e->cname[v->id];
            continue;
        }
        if (v && v->kind != V_BUFFER) {
            unsupported(e, n, "in training mode the running statistics are updated in place, so they must be "
                              "buffers of the model (declared with `buffer`), not inputs or computed values");
            return true;
        }
        /* the local is const, but it points into the training state's
         * storage, which is the caller's mutable memory */
        stats[k - 1] = v ? arena_printf(e->c->arena, "(void *)(uintptr_t)%s", e->cname[v->id]) : "NULL";
    }
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "batch_norm_train", n->out->type.dtype),
               poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), in_c(e, n, 0),
               param_dtype_c(n, 1, 4), stats[0], stats[1], in_c(e, n, 3), in_c(e, n, 4),
               double_c(e, attr_number(n, "momentum", "0.1", DT_F64)), double_c(e, eps), y);
    for (int k = 0; k < 2; k++) {
        Value *v = cast_back[k];
        if (!v)
            continue;
        Value *buf = v->def->in[0];
        buf_printf(e->out, "    amp_cast_%s_%s((size_t)(%s), %s, (void *)(uintptr_t)%s); /* back into %s */\n",
                   dtype_name(v->type.dtype), dtype_name(buf->type.dtype), numel_c(e, &v->type.shape),
                   e->cname[v->id], e->cname[buf->id], buf->name);
    }
    return true;
}

/* How many trailing dims a layer_norm normalises: its normalized_shape's
 * entries (one int is one dim). */
int normalized_count(const Node *n)
{
    int64_t v[MAX_DIMS * 2 + 2];
    int k = attr_int_list(n, "normalized_shape", v);
    return k > 0 ? k : 1;
}

void emit_norm_layer(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    double eps = attr_number(n, "eps", "1e-05", DT_F64);
    switch (n->op->id) {
    case OP_LAYER_NORM: {
        /* rows of the normalized_shape's dims, the last k */
        int k = normalized_count(n);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "layer_norm", t),
                   dims_product(e, s, 0, nd - k), dims_product(e, s, nd - k, nd), in_c(e, n, 0), param_dtype_c(n, 2, 3),
                   in_c(e, n, 2), in_c(e, n, 3), double_c(e, eps), y);
        break;
    }
    case OP_GROUP_NORM:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "group_norm", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd),
                   i64_c(e, attr_int(n, "num_groups", 1)), in_c(e, n, 0), param_dtype_c(n, 2, 3), in_c(e, n, 2),
                   in_c(e, n, 3), double_c(e, eps), y);
        break;
    case OP_BATCH_NORM: {
        if (attr_bool(n, "training", false)) {
            if (!c->train) {
                unsupported(e, n, "training=true normalises with batch statistics and updates the running ones, "
                                  "which a model without a train section does not do; pass training=false");
                return;
            }
            /* the training step: batch statistics, running ones updated; the
             * inference forward of a model that trains is evaluation mode
             * (model.eval()): the running statistics, below */
            if (emit_batch_norm_train(e, n, y, eps))
                return;
        }
        /* [N, C, ...] or [N, C]; one sample of [C] is not PyTorch's either */
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "batch_norm", t),
                   poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), in_c(e, n, 0),
                   param_dtype_c(n, 1, 4), in_c(e, n, 1), in_c(e, n, 2), in_c(e, n, 3), in_c(e, n, 4),
                   double_c(e, eps), y);
        break;
    }
    case OP_INSTANCE_NORM:
        if (attr_bool(n, "use_input_stats", true)) /* group_norm with a group per channel */
            buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "group_norm", t),
                       poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), poly_c(e, s->dims[1]),
                       in_c(e, n, 0), param_dtype_c(n, 3, 4), in_c(e, n, 3), in_c(e, n, 4), double_c(e, eps), y);
        else /* the running statistics: batch_norm's evaluation */
            buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "batch_norm", t),
                       poly_c(e, s->dims[0]), poly_c(e, s->dims[1]), dims_product(e, s, 2, nd), in_c(e, n, 0),
                       param_dtype_c(n, 1, 4), in_c(e, n, 1), in_c(e, n, 2), in_c(e, n, 3), in_c(e, n, 4),
                       double_c(e, eps), y);
        break;
    default:
        ICE("not a norm: %s", n->op->name);
    }
}
