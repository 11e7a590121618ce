/* ir.c: the graph IR, its attribute readers, its printer (--dump=PASS)
 * and its verifier.
 *
 * The IR is a list of nodes in schedule order (straight-line code: models
 * have no control flow), each reading Values and defining one.  Values are
 * the model's inputs, parameters and buffers (caller memory) and the
 * temporaries the nodes define (arena memory, placed by memplan).  A node
 * owns its call's non-tensor arguments as attributes (Attr, filled by
 * lower.c), read through attr_int and the others below.  docs/ir.md
 * describes it all.
 */
#include "middle.h"

#include <string.h>

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
    n->in = arena_alloc(c->arena, (size_t)(op->nparams > 8 ? op->nparams : 8) * sizeof *n->in);
    n->loc = loc;
    n->name_loc = loc;
    n->forced_from = DT_NONE;
    vec_push(c, g->nodes, n);
    return n;
}

/* What --explain, --emit=dot and the emitted comments call n's op: a fused
 * op (fuse.c) by the ops it stands for, "conv2d + batch_norm + relu". */
const char *node_op_name(const Node *n)
{
    return attr_str(n, "parts", n->op->name);
}

/* ---- attributes ----------------------------------------------------------
 * Readers give the same answers typecheck's argument helpers gave on the
 * call: the default when an argument was not written, and also when it was
 * written as something the reader does not take (None for an int). */

const Attr *attr_find(const Node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

bool attr_given(const Node *n, const char *name)
{
    const Attr *a = attr_find(n, name);
    return a && a->kind != ATTR_NONE;
}

AttrKind attr_kind(const Node *n, const char *name, AttrKind absent)
{
    const Attr *a = attr_find(n, name);
    return a ? a->kind : absent;
}

/* An int vararg read as one int is its first entry, as a call's first
 * parameter of that name is. */
int64_t attr_int(const Node *n, const char *name, int64_t dflt)
{
    const Attr *a = attr_find(n, name);
    if (a && a->kind == ATTR_INT)
        return a->i;
    if (a && a->kind == ATTR_INT_LIST && a->nlist > 0)
        return a->list[0];
    return dflt;
}

bool attr_bool(const Node *n, const char *name, bool dflt)
{
    const Attr *a = attr_find(n, name);
    return a && a->kind == ATTR_BOOL ? a->i != 0 : dflt;
}

const char *attr_str(const Node *n, const char *name, const char *dflt)
{
    const Attr *a = attr_find(n, name);
    return a && a->kind == ATTR_STR ? a->text : dflt;
}

/* The literal is rounded once, exactly, to t (literal_to_dtype), then the
 * sign applied: -0.1 is the negation of 0.1 rounded, as PyTorch parses it.
 * A default's text may carry its own sign ("-100"). */
double attr_number(const Node *n, const char *name, const char *dflt, DType t)
{
    const Attr *a = attr_find(n, name);
    const char *text = dflt;
    bool neg = false;
    if (a) {
        ASSERT(a->kind == ATTR_INT || a->kind == ATTR_NUMBER);
        text = a->text;
        neg = a->negate;
    }
    if (text[0] == '-') {
        neg = !neg;
        text++;
    }
    double v;
    literal_to_dtype(text, t, &v);
    return neg ? -v : v;
}

void attr_ints(const Node *n, const char *name, const int64_t *dflt, int count, int64_t *out)
{
    const Attr *a = attr_find(n, name);
    for (int i = 0; i < count; i++) {
        if (a && a->kind == ATTR_INT_LIST && a->nlist == count)
            out[i] = a->list[i];
        else if (a && (a->kind == ATTR_INT || (a->kind == ATTR_INT_LIST && a->nlist > 0)))
            out[i] = a->kind == ATTR_INT ? a->i : a->list[0];
        else
            out[i] = dflt[i];
    }
}

/* Whether a reduction node reduces dim i of its input: the listed dims
 * (the derived "axes", for dim=(1, 2)), else its one "axis", where -1
 * means every dim. */
bool attr_reduces(const Node *n, int i)
{
    const Attr *a = attr_find(n, "axes");
    if (a && a->kind == ATTR_INT_LIST) {
        for (int k = 0; k < a->nlist; k++)
            if (a->list[k] == i)
                return true;
        return false;
    }
    int64_t d = attr_int(n, "axis", 0);
    return d < 0 || d == i;
}

int attr_int_list(const Node *n, const char *name, int64_t *out)
{
    const Attr *a = attr_find(n, name);
    if (!a || a->kind != ATTR_INT_LIST) {
        if (a && a->kind == ATTR_INT) {
            out[0] = a->i;
            return 1;
        }
        return 0;
    }
    for (int i = 0; i < a->nlist; i++)
        out[i] = a->list[i];
    return a->nlist;
}

static void print_attr(FILE *out, const Attr *a)
{
    fprintf(out, " %s=", a->name);
    switch (a->kind) {
    case ATTR_NONE: fputs("None", out); break;
    case ATTR_INT:
    case ATTR_NUMBER: fprintf(out, "%s%s", a->negate ? "-" : "", a->text); break;
    case ATTR_BOOL: fputs(a->i ? "true" : "false", out); break;
    case ATTR_STR: fprintf(out, "\"%s\"", a->text); break;
    case ATTR_DTYPE: fputs(dtype_name(a->dtype), out); break;
    case ATTR_INT_LIST:
        fputc('[', out);
        for (int i = 0; i < a->nlist; i++)
            fprintf(out, "%s%lld", i ? ", " : "", (long long)a->list[i]);
        fputc(']', out);
        break;
    }
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
        fputc(')', out);
        for (int k = 0; k < n->nattrs; k++)
            print_attr(out, &n->attrs[k]);
        fprintf(out, "  # %d:%d", line, col);
        if (n->out->slot >= 0)
            fprintf(out, " slot %d", n->out->slot);
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

/* Each argument attribute names a parameter of the op (a number may stand
 * for a Tensor|Scalar one: pow's exponent), once; a derived fact's name is
 * no parameter's, so readers cannot confuse the two. */
static void verify_attrs(const char *after_pass, const Node *node)
{
    for (int k = 0; k < node->nattrs; k++) {
        const Attr *a = &node->attrs[k];
        int p = op_param_index(node->op, a->name);
        if (a->derived ? p >= 0 : p < 0)
            ICE("after %s: node %d (%s) has attribute %s, %s", after_pass, node->id, node->op->name, a->name,
                a->derived ? "a parameter's name on a derived fact" : "which names no parameter");
        if (attr_find(node, a->name) != a)
            ICE("after %s: node %d (%s) has attribute %s twice", after_pass, node->id, node->op->name, a->name);
    }
}

/* Each node reads only values defined before it; each temp has one definer;
 * each kernel's operands are in its compute dtype; attributes name the
 * op's parameters (verify_attrs). */
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
            /* a bool result (a comparison) computes in its operands' own
             * dtype, and an op with an index result (argmax) in its input's */
            if (in && node->op->id != OP_CAST && computes != DT_BOOL && !(rule->op->flags & OPF_INDEX_RESULT) &&
                dtype_to_real(in->type.dtype) != dtype_to_real(computes) &&
                (dtype_is_float(in->type.dtype) || dtype_is_complex(in->type.dtype)) &&
                !((rule->op->flags & OPF_MIXED_PARAMS) && rk > 0 && k < 7 && in->type.dtype == DT_F32))
                ICE("after %s: node %d (%s) reads %s operand %%%d but computes in %s", after_pass, node->id,
                    node->op->name, dtype_name(in->type.dtype), in->id, dtype_name(computes));
        }
        for (int k = node->nin; k < node_nreads(node); k++)
            if (node_read(node, k) && !defined[node_read(node, k)->id])
                ICE("after %s: node %d (%s) reads %%%d before it is defined", after_pass, node->id, node->op->name,
                    node_read(node, k)->id);
        verify_attrs(after_pass, node);
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
