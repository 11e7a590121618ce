/* dot.c: --emit=dot, the planned graph for Graphviz, coloured by dtype.
 *
 * Requires: a memory-planned graph (the same one emit_c.c would print).
 * Produces: a DOT digraph in out->c_file (no header), so that
 * `ampc --emit=dot -o - m.amp | dot -Tsvg > m.svg` shows the precision map
 * of the model at a glance:
 *
 *   - every op is a box filled with the colour of the dtype it computes in
 *     (a fixed palette, the legend lists the dtypes present), labelled with
 *     the module instance it was inlined from (layer2.0.conv1), if any;
 *   - the ops of one model-level module instance (layer2.0) are drawn in a
 *     cluster of their own, those of each instance inside it in a nested
 *     one, so the picture has the model's structure;
 *   - inputs are ellipses in their declared dtype; parameters and buffers
 *     too, with the conversions of them, only with --dot-params: a real
 *     model has a hundred of them, which crowd out the ops;
 *   - every conversion is a dashed diamond "f32 -> bf16" whose tooltip is
 *     its reason; an op's tooltip is its location and its rule;
 *   - outputs are double octagons after the node that computes them.
 *
 * Deterministic: names come from value and node numbers, which follow the
 * source, never from addresses.
 */
#include "back.h"

#include <string.h>

/* One colour per dtype family, chosen to stay apart for the common forms of
 * colour blindness (blue, orange, green, purple) and grey for what autocast
 * never touches. */
static const char *dtype_colour(DType t)
{
    switch (t) {
    case DT_F32:
        return "#6baed6";
    case DT_BF16:
        return "#fd8d3c";
    case DT_F16:
        return "#74c476";
    case DT_F64:
        return "#9e9ac8";
    case DT_C64:
    case DT_C128:
        return "#f1b6da"; /* complex: pink, apart from the four real families */
    default:
        return "#d9d9d9"; /* integers and bool */
    }
}

/* A DOT string's contents: quotes and backslashes escaped, line breaks as
 * the \n escape DOT centres lines with; other control characters dropped. */
static void dot_text(Buf *o, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[3] = {'\\', (char)*p, '\0'};
            buf_puts(o, esc);
        } else if (*p == '\n') {
            buf_puts(o, "\\n");
        } else if (*p >= 0x20 && *p != 0x7f) {
            char one[2] = {(char)*p, '\0'};
            buf_puts(o, one);
        }
    }
}

static void dot_str(Buf *o, const char *s)
{
    buf_puts(o, "\"");
    dot_text(o, s);
    buf_puts(o, "\"");
}

static const char *value_id(Ctx *c, const Value *v)
{
    if (v->kind == V_TEMP && v->def)
        return arena_printf(c->arena, "n%d", v->def->id);
    return arena_printf(c->arena, "v%d", v->id);
}

static const char *type_text(Ctx *c, const Type *t) { return type_to_string(c, t); }

static void declared_node(Ctx *c, Buf *o, const Value *v)
{
    static const char *const kinds[] = {"input", "param", "buffer", "temp"};
    buf_printf(o, "  %s [shape=ellipse, fillcolor=\"%s\", label=", value_id(c, v), dtype_colour(v->type.dtype));
    dot_str(o, arena_printf(c->arena, "%s %s\n%s", kinds[v->kind], v->name, type_text(c, &v->type)));
    buf_puts(o, "];\n");
}

/* Without --dot-params, parameters and buffers are left out, and so are
 * the conversions of them (the weight casts): the op's colour says the
 * dtype it computes in. */
static bool hidden_value(Ctx *c, const Value *v)
{
    return !c->opts->dot_params && (v->kind == V_PARAM || v->kind == V_BUFFER);
}

static bool hidden_node(Ctx *c, const Node *n)
{
    return n->op->id == OP_CAST && n->in[0] && hidden_value(c, n->in[0]);
}

static void op_node(Ctx *c, Buf *o, const Node *n)
{
    int line, col;
    Loc loc = n->name_loc;
    loc_line_col(loc, &line, &col);
    const char *at = arena_printf(c->arena, "%s:%d:%d", loc.file->name, line, col);
    DType t = n->out->type.dtype;
    if (n->op->id == OP_CAST) {
        DType from = n->in[0]->type.dtype;
        buf_printf(o, "  %s [shape=diamond, style=\"filled,dashed\", fillcolor=\"%s\", label=", value_id(c, n->out),
                   dtype_colour(t));
        dot_str(o, arena_printf(c->arena, "%s\n%s -> %s", from == t ? "copy" : "cast", dtype_name(from),
                                dtype_name(t)));
        buf_puts(o, ", tooltip=");
        dot_str(o, arena_printf(c->arena, "%s: %s", at, n->why ? n->why : ""));
        buf_puts(o, "];\n");
        return;
    }
    buf_printf(o, "  %s [shape=box, style=\"filled,rounded\", fillcolor=\"%s\", label=", value_id(c, n->out),
               dtype_colour(t));
    const char *op = node_op_name(n);
    const char *name = n->out->name ? arena_printf(c->arena, "%s = %s", n->out->name, op) : op;
    if (n->instance)
        dot_str(o, arena_printf(c->arena, "%s\n%s\n%s", n->instance, op, type_text(c, &n->out->type)));
    else
        dot_str(o, arena_printf(c->arena, "%s\n%s\nline %d", name, type_text(c, &n->out->type), line));
    buf_puts(o, ", tooltip=");
    dot_str(o, arena_printf(c->arena, "%s: %s in %s: %s", at, op, dtype_name(t), n->why ? n->why : ""));
    buf_puts(o, "];\n");
}

/* The drawn nodes of one group (a model-level instance's, or those of no
 * instance), in order, each inlined instance's (but the group's own) in a
 * nested cluster when it has more than one (one node's label names its
 * instance already); *next numbers the clusters. */
static void group_nodes(Ctx *c, Buf *o, const char *root, Vec *nodes, int *next)
{
    StrMap *by_instance = strmap_new(c->arena); /* instance -> Vec of its nodes */
    for (int i = 0; i < nodes->len; i++) {
        Node *n = VEC_AT(nodes, i);
        if (!n->instance || (root && strcmp(n->instance, root) == 0))
            continue;
        Vec *v = strmap_get(by_instance, n->instance);
        if (!v) {
            v = vec_new(c);
            strmap_put(by_instance, n->instance, v);
        }
        vec_push(c, v, n);
    }
    StrMap *done = strmap_new(c->arena);
    for (int i = 0; i < nodes->len; i++) {
        Node *n = VEC_AT(nodes, i);
        Vec *mine = n->instance ? strmap_get(by_instance, n->instance) : NULL;
        if (!mine || mine->len < 2) {
            op_node(c, o, n);
            continue;
        }
        if (strmap_get(done, n->instance))
            continue;
        strmap_put(done, n->instance, mine);
        buf_printf(o, "  subgraph cluster_%d {\n    label=", (*next)++);
        dot_str(o, n->instance);
        buf_puts(o, "; style=\"rounded\"; color=\"#bdbdbd\";\n");
        for (int k = 0; k < mine->len; k++)
            op_node(c, o, VEC_AT(mine, k));
        buf_puts(o, "  }\n");
    }
}

/* The op nodes: first those of no instance, then one dashed cluster per
 * model-level instance, in the order of their first op. */
static void op_nodes(Ctx *c, Buf *o)
{
    Graph *g = c->graph;
    Vec *top = vec_new(c), *roots = vec_new(c);
    StrMap *by_root = strmap_new(c->arena); /* root -> Vec of its nodes */
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (hidden_node(c, n))
            continue;
        if (!n->instance_root) {
            vec_push(c, top, n);
            continue;
        }
        Vec *v = strmap_get(by_root, n->instance_root);
        if (!v) {
            v = vec_new(c);
            strmap_put(by_root, n->instance_root, v);
            vec_push(c, roots, n);
        }
        vec_push(c, v, n);
    }
    int next = 0;
    group_nodes(c, o, NULL, top, &next);
    for (int r = 0; r < roots->len; r++) {
        Node *first = VEC_AT(roots, r);
        int line, col;
        loc_line_col(first->instance_loc, &line, &col);
        buf_printf(o, "  subgraph cluster_%d {\n    label=", next++);
        dot_str(o, arena_printf(c->arena, "%s (line %d)", first->instance_root, line));
        buf_puts(o, "; style=\"rounded,dashed\"; color=\"#737373\"; fontsize=12;\n");
        group_nodes(c, o, first->instance_root, strmap_get(by_root, first->instance_root), &next);
        buf_puts(o, "  }\n");
    }
}

bool emit_dot(Ctx *c, Output *out)
{
    Graph *g = c->graph;
    Buf *o = &out->c_file;
    buf_init(o, c->arena);
    buf_init(&out->h_file, c->arena);

    buf_puts(o, "digraph ");
    dot_str(o, c->graph->name);
    buf_puts(o, " {\n  graph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, label=");
    dot_str(o, arena_printf(c->arena, "%s on %s (autocast low dtype %s%s): fill = the dtype each op computes in%s",
                            c->graph->name, c->policy->target, dtype_name(c->policy->low),
                            autocast_options_text(c),
                            c->opts->dot_params ? "" : "\nparameters, buffers and their casts not drawn (--dot-params draws them)"));
    buf_puts(o, "];\n  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n"
                "  edge [fontname=\"Helvetica\", fontsize=9];\n");

    /* the legend: the dtypes this graph uses, in a fixed order */
    bool used[DT_C128 + 1] = {0};
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        if ((v->kind != V_TEMP && v->nuses) || (v->def && !v->def->dead))
            used[v->type.dtype] = true;
    }
    static const DType order[] = {DT_F32, DT_BF16, DT_F16, DT_F64, DT_C64, DT_C128, DT_I64, DT_I32, DT_BOOL};
    buf_puts(o, "  subgraph cluster_legend {\n    label=\"dtype\"; fontsize=10; style=dashed;\n");
    const char *prev = NULL;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        if (!used[order[k]])
            continue;
        const char *id = arena_printf(c->arena, "legend_%s", dtype_name(order[k]));
        buf_printf(o, "    %s [shape=box, fillcolor=\"%s\", label=\"%s\"];\n", id, dtype_colour(order[k]),
                   dtype_name(order[k]));
        if (prev)
            buf_printf(o, "    %s -> %s [style=invis];\n", prev, id);
        prev = id;
    }
    buf_puts(o, "  }\n");

    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        if (v->kind != V_TEMP && v->nuses && !hidden_value(c, v))
            declared_node(c, o, v);
    }
    op_nodes(c, o);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < node_nreads(n) && !hidden_node(c, n); k++) {
            Value *v = node_read(n, k);
            if (v && !hidden_value(c, v) && !(v->def && hidden_node(c, v->def)))
                buf_printf(o, "  %s -> %s;\n", value_id(c, v), value_id(c, n->out));
        }
    }
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        buf_printf(o, "  out%d [shape=doubleoctagon, fillcolor=\"%s\", label=", i, dtype_colour(v->type.dtype));
        dot_str(o, arena_printf(c->arena, "%s %s\n%s", v == g->loss ? "minimize" : "output", v->output_name,
                                type_text(c, &v->type)));
        buf_printf(o, "];\n  %s -> out%d;\n", value_id(c, v), i);
    }
    buf_puts(o, "}\n");
    return true;
}
