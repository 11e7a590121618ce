/* ir.c: the graph IR, its printer (--dump=PASS) and its verifier.
 *
 * The IR is a list of nodes in schedule order (straight-line code: models
 * have no control flow), each reading Values and defining one.  Values are
 * the model's inputs, parameters and buffers (caller memory) and the
 * temporaries the nodes define (arena memory, placed by memplan).
 */
#include "middle.h"

Value *ir_new_value(Ctx *c, ValueKind kind, Type type, const char *name)
{
    Graph *g = c->graph;
    Value *v = arena_alloc(c->arena, sizeof *v);
    v->id = g->values->len;
    v->kind = kind;
    v->type = type;
    v->name = name;
    v->slot = -1;
    vec_push(c, g->values, v);
    return v;
}

Node *ir_new_node(Ctx *c, const OpInfo *op, Loc loc)
{
    Graph *g = c->graph;
    Node *n = arena_alloc(c->arena, sizeof *n);
    n->id = g->nodes->len;
    n->op = op;
    n->loc = loc;
    vec_push(c, g->nodes, n);
    return n;
}

static void print_value(Ctx *c, FILE *out, const Value *v)
{
    if (v->name)
        fprintf(out, "%%%d(%s)", v->id, v->name);
    else
        fprintf(out, "%%%d", v->id);
    (void)c;
}

void ir_dump(Ctx *c, FILE *out)
{
    Graph *g = c->graph;
    static const char *const kinds[] = {"input", "param", "buffer", "temp"};
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        if (v->kind == V_TEMP)
            continue;
        fprintf(out, "%s ", kinds[v->kind]);
        print_value(c, out, v);
        fprintf(out, ": %s\n", type_to_string(c, &v->type));
    }
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        int line, col;
        loc_line_col(n->loc, &line, &col);
        fputs("  ", out);
        print_value(c, out, n->out);
        fprintf(out, ": %s = %s(", type_to_string(c, &n->out->type), n->op->name);
        bool first = true;
        for (int k = 0; k < n->nin; k++) {
            if (!n->in[k])
                continue;
            fputs(first ? "" : ", ", out);
            print_value(c, out, n->in[k]);
            first = false;
        }
        for (int k = n->nin; k < node_nreads(n); k++) /* a GRAD node's gradients of later results */
            if (node_read(n, k)) {
                fprintf(out, "%sd_result%d=", first ? "" : ", ", k - n->nin + 2);
                print_value(c, out, node_read(n, k));
                first = false;
            }
        if (n->scalar.text)
            fprintf(out, "%s%s%s", first ? "" : ", ", n->scalar.negate ? "-" : "", n->scalar.text);
        if (n->op->form == FORM_SOFTMAX)
            fprintf(out, ", dim=%lld", (long long)n->dim);
        if (n->op->form == FORM_NLL_LOSS)
            fprintf(out, ", ignore_index=%lld, reduction=%d", (long long)n->ignore_index, n->reduction);
        fprintf(out, ")  # %d:%d", line, col);
        if (n->out->slot >= 0)
            fprintf(out, " slot %d", n->out->slot);
        if (n->absorbed_by)
            fprintf(out, " fused into %%%d", n->absorbed_by->out->id);
        if (n->why)
            fprintf(out, "  [%s]", n->why);
        fputc('\n', out);
    }
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        fprintf(out, "output %s = ", v->output_name);
        print_value(c, out, v);
        fputc('\n', out);
    }
}

/* Each node reads only values defined before it; each temp has one definer;
 * each kernel's operands are in its compute dtype. */
bool ir_verify(Ctx *c, const char *after_pass)
{
    Graph *g = c->graph;
    int n = g->values->len;
    bool *defined = arena_alloc(c->arena, (size_t)n + 1);
    for (int i = 0; i < n; i++) {
        Value *v = VEC_AT(g->values, i);
        defined[i] = v->kind != V_TEMP;
    }
    for (int i = 0; i < g->nodes->len; i++) {
        Node *node = VEC_AT(g->nodes, i);
        /* a GRAD node computes in its forward's dtype and reads the
         * forward's inputs one slot later (in[1 + k]); its first result may
         * be an f32 weight's gradient of a mixed-params norm */
        const Node *rule = node->op->id == OP_GRAD && node->fwd ? node->fwd : node;
        DType computes = rule->out->type.dtype;
        for (int k = 0; k < node->nin; k++) {
            Value *in = node->in[k];
            int rk = rule == node ? k : k - 1; /* the forward's operand slot, -1 for dy */
            if (in && !defined[in->id])
                ICE("after %s: node %d (%s) reads %%%d before it is defined", after_pass, node->id,
                    node->op->name, in->id);
            /* complex ops compare precisions: an f32 operand of a c64 fft is right */
            if (in && node->op->form != FORM_CAST && dtype_to_real(in->type.dtype) != dtype_to_real(computes) &&
                (dtype_is_float(in->type.dtype) || dtype_is_complex(in->type.dtype)) &&
                !(rule->op->form == FORM_NLL_LOSS && rk == 1) &&
                !((rule->op->flags & OPF_MIXED_PARAMS) && rk > 0 && rk < 6 && in->type.dtype == DT_F32))
                ICE("after %s: node %d (%s) reads %s operand %%%d but computes in %s", after_pass, node->id,
                    node->op->name, dtype_name(in->type.dtype), in->id, dtype_name(computes));
        }
        for (int k = node->nin; k < node_nreads(node); k++)
            if (node_read(node, k) && !defined[node_read(node, k)->id])
                ICE("after %s: node %d (%s) reads %%%d before it is defined", after_pass, node->id, node->op->name,
                    node_read(node, k)->id);
        if (defined[node->out->id])
            ICE("after %s: %%%d is defined twice", after_pass, node->out->id);
        defined[node->out->id] = true;
        for (int k = 0; k < node->nmore; k++)
            defined[node->more_out[k]->id] = true;
        if (node->out->def != node)
            ICE("after %s: %%%d does not point back at its definer", after_pass, node->out->id);
    }
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        if (!defined[v->id])
            ICE("after %s: output %s is never computed", after_pass, v->output_name);
    }
    return true;
}
