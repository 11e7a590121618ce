/* emit_grad.c: the gradient dispatch, and the pieces of a GRAD node every
 * gradient rule uses.
 *
 * emit_grad finds the rule of a GRAD node's forward op in grad_rules[],
 * expanded from the grad column of ops.def (the rules are in
 * grad_<family>.c, one file per op family, with the middle end's family
 * names), or writes the loss's seed.  The helpers read a GRAD node
 * (grad_of, dy_of, x_of, y_of, ...), sum a broadcast gradient back to its
 * operand's shape (sum_to), and reach its scratch (scratch_buffer,
 * scratch_as).
 *
 * Requires: a planned graph whose GRAD nodes carry their forward node
 * (fwd), the gradient dy of its result (in[0]), its inputs (in[1..6]) and
 * result (in[7]), and one result per input that needs a gradient
 * (grad_input says which).  Produces: C computing those gradients in the
 * forward's dtype, from forward kernels where the gradient is one (a
 * linear's gradients are two gemms and a sum, a conv's input gradient a
 * transposed conv, a sum's an expand) and from amprt/backward.h otherwise.
 *
 * Shapes: a gradient has its input's shape; where the forward broadcast
 * an operand, its gradient is summed back over the broadcast dims
 * (sum_to), as autograd does.
 */
#include "emit.h"

#include <string.h>

/* The gradient of forward input k, or NULL when it needs none. */
const char *grad_of(Emitter *e, Node *b, int k)
{
    for (int r = 0; r <= b->nmore; r++)
        if (b->grad_input[r] == k)
            return e->cname[(r == 0 ? b->out : b->more_out[r - 1])->id];
    return NULL;
}

/* "NULL" when no gradient reaches the first result (only the ops whose
 * rules take one, autodiff.c's more_result_differentiable, get there) */
const char *dy_of(Emitter *e, Node *b) { return b->in[0] ? e->cname[b->in[0]->id] : "NULL"; }
const char *x_of(Emitter *e, Node *b, int k) { return b->fwd->in[k] ? e->cname[b->fwd->in[k]->id] : "NULL"; }
const char *y_of(Emitter *e, Node *b) { return e->cname[b->fwd->out->id]; }
const Shape *xs_of(Node *b, int k) { return &b->fwd->in[k]->type.shape; }
const Shape *ys_of(Node *b) { return &b->fwd->out->type.shape; }

void grad_copy(Emitter *e, const char *dst, const char *src, const Shape *s)
{
    buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", dst, src, numel_c(e, s), dst);
}

/* dst (shape `to`) = src (shape `from`, which `to` broadcasts to) summed
 * over the broadcast dims. */
void sum_to(Emitter *e, DType t, const char *src, const Shape *from, const char *dst, const Shape *to)
{
    if (shape_equal(from, to)) {
        if (strcmp(src, dst) != 0)
            grad_copy(e, dst, src, to);
        return;
    }
    const char *items[MAX_DIMS];
    int nd = from->ndim;
    for (int i = 0; i < nd; i++) {
        int j = to->ndim - nd + i;
        int64_t one;
        bool reduced = j < 0 || (poly_is_const(to->dims[j], &one) && one == 1 &&
                                 !(poly_is_const(from->dims[i], &one) && one == 1));
        items[i] = reduced ? "1" : "0";
    }
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, from));
    buf_printf(e->out, "        const uint8_t reduce[] = %s;\n", c_array(e, items, nd));
    buf_printf(e->out, "        %s(%d, shape, reduce, %s, %s);\n", kernel(e, "sum", t), nd, src, dst);
    close_block(e);
}

/* A buffer of the forward output's shape, in dtype t, from the scratch
 * (scratch.c's op_scratch_type reserves as many as the rule uses). */
const char *scratch_buffer(Emitter *e, Node *b, DType t, int index)
{
    return arena_printf(e->c->arena, "((%s *)(void *)%s + %d * (%s))", dtype_c_type(t), e->cname[b->scratch->id], index,
                        numel_c(e, ys_of(b)));
}

static void grad_seed(Emitter *e, Node *b)
{
    DType t = b->out->type.dtype;
    const char *y = e->cname[b->out->id];
    switch (t) {
    case DT_F64: buf_printf(e->out, "    %s[0] = grad_seed;\n", y); break;
    case DT_F32: buf_printf(e->out, "    %s[0] = (float)grad_seed;\n", y); break;
    default: buf_printf(e->out, "    %s[0] = amp_f32_to_%s((float)grad_seed);\n", y, dtype_name(t)); break;
    }
}

/* A gemm call from C text: y = op(A) op(B), strides in elements. */
void gemm(Emitter *e, DType t, const char *batch, const char *M, const char *N, const char *K, const char *A,
                 const char *a0, const char *a1, const char *a2, const char *B, const char *b0, const char *b1,
                 const char *b2, bool sum_batch, const char *y)
{
    Gemm g = {.batch = batch, .M = M, .N = N, .K = K, .A = A, .B = B, .alpha = 1, .beta = 0, .sum_batch = sum_batch};
    g.a[0] = a0, g.a[1] = a1, g.a[2] = a2;
    g.b[0] = b0, g.b[1] = b1, g.b[2] = b2;
    emit_gemm_call(e, t, &g, y);
}

const char *mul_c(Emitter *e, const char *a, const char *b)
{
    return arena_printf(e->c->arena, "(%s) * (%s)", a, b);
}

void zero_fill(Emitter *e, DType t, const char *dst, const Shape *s)
{
    buf_printf(e->out, "    %s((size_t)(%s), 0.0, %s);\n", kernel(e, "fill", t), numel_c(e, s), dst);
}

const char *scratch_as(Emitter *e, Node *b, const char *ctype, const char *byte_offset)
{
    return arena_printf(e->c->arena, "((%s *)(void *)((unsigned char *)%s + (%s)))", ctype, e->cname[b->scratch->id],
                        byte_offset);
}

/* Where operand k's gradient over the full shape goes: straight into its
 * gradient when it has the full shape, else full-shape buffer k of the
 * scratch (after `work`); NULL when it needs none. */
const char *full_grad(Emitter *e, Node *b, int k, const Shape *full, const char *work)
{
    const char *g = grad_of(e, b, k);
    if (!g || shape_equal(xs_of(b, k), full))
        return g;
    DType t = b->fwd->out->type.dtype;
    return scratch_as(e, b, dtype_c_type(t),
                      arena_printf(e->c->arena, "%s + (size_t)%d * (%s) * sizeof(%s)", work, k, numel_c(e, full),
                                   dtype_c_type(t)));
}

/* Each operand's gradient from its full-shape one. */
void full_grads_down(Emitter *e, Node *b, int nops, const Shape *full, const char *work)
{
    for (int k = 0; k < nops; k++) {
        const char *g = grad_of(e, b, k);
        if (g && !shape_equal(xs_of(b, k), full))
            sum_to(e, b->fwd->out->type.dtype, full_grad(e, b, k, full, work), full, g, xs_of(b, k));
    }
}

const char *or_null(const char *s)
{
    return s ? s : "NULL";
}

/* Each op's gradient rule, from the grad column of its ops.def row. */
typedef void (*GradRule)(Emitter *e, Node *b);
static const GradRule grad_rules[OP_COUNT] = {
#define GRAD(fn) fn
#define NO_GRAD NULL
#define OP(ID, name, sig, infer, emit, grad, flags) [OP_##ID] = grad,
#include "ops.def"
#undef OP
#undef GRAD
#undef NO_GRAD
};

void emit_grad(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    if (!f) {
        grad_seed(e, b);
        return;
    }
    GradRule rule = grad_rules[f->op->id];
    if (!rule) {
        unsupported(e, f, "has no gradient yet");
        return;
    }
    rule(e, b);
}
