/* explain.c: --explain, every op's dtype decision in words (or JSON).
 *
 * Requires: a memory-planned graph whose nodes carry what lowering copied
 * from their calls (name_loc, row, forced_from, autocast_on, a conversion's
 * operand_loc) and the list of every call (Graph.calls).  Produces: text on standard
 * output and nothing else; it changes nothing, so the C emitted with and
 * without --explain is the same.
 *
 * What it prints, in execution order (the source order of statements,
 * arguments before the op that uses them, which is also the order of the
 * emitted C): each op with its location, input dtypes, output type and the
 * rule that decided its dtype (Decision.rule: the policy class, target and
 * the row's provenance, or why the op was not eligible); each conversion
 * autocast or promotion inserted, with its reason (after cast CSE, so a
 * weight cast once for several ops is listed once); the ops whose results
 * are never used (planned away); the arena memplan laid out.
 *
 * The output is stable: locations, names, dtypes and rule texts, never an
 * address or a number that depends on allocation.  The JSON form has the
 * same content with one object per op (docs/cli.md describes its fields).
 */
#include "back.h"

#include <errno.h>
#include <string.h>

typedef struct Row {
    const char *cells[5];
} Row;

static const char *where(Ctx *c, Loc loc)
{
    int line, col;
    loc_line_col(loc, &line, &col);
    return arena_printf(c->arena, "%s:%d:%d", loc.file->name, line, col);
}

/* Where node n is (at loc, one of its locations), and the module instance
 * it was inlined from: "nn.amp:9:10 in layer2.0.conv1". */
static const char *node_where(Ctx *c, const Node *n, Loc loc)
{
    const char *at = where(c, loc);
    return n->instance ? arena_printf(c->arena, "%s in %s", at, n->instance) : at;
}

/* Where an op is: its name (or operator) token, which tells apart the ops
 * of one expression; a conversion is where its operand is. */
static Loc op_loc(const Node *n)
{
    return n->name_loc;
}

static const char *shape_text(Ctx *c, const Type *t)
{
    return shape_to_string(c, &t->shape, c->sym_names);
}

/* A short, one-line rendering of a source range: for naming a converted
 * value that has no name of its own. */
static const char *short_source(Ctx *c, Loc loc)
{
    const char *text = loc_text(c, loc);
    Buf b;
    buf_init(&b, c->arena);
    buf_puts(&b, "");
    bool space = false;
    int n = 0;
    for (const char *p = text; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            space = b.len > 0;
            continue;
        }
        if (n >= 40) {
            buf_puts(&b, "...");
            break;
        }
        if (space)
            buf_puts(&b, " ");
        space = false;
        char ch[2] = {*p, '\0'};
        buf_puts(&b, ch);
        n++;
    }
    return b.data;
}

static const char *value_label(Ctx *c, const Node *cast)
{
    const Value *v = cast->in[0];
    if (v->name)
        return v->name;
    if (cast->operand_loc.file)
        return short_source(c, cast->operand_loc);
    return short_source(c, cast->loc);
}

static bool is_live(const Graph *g, const Node *n)
{
    for (int i = 0; n && i < g->nodes->len; i++)
        if (VEC_AT(g->nodes, i) == n)
            return true;
    return false;
}

/* Calls that were decided but whose node dead-code removal took away, or
 * that were never lowered (an expression statement nothing reads), in
 * source order: the CallSites lowering recorded (Graph.calls). */
static Vec *removed_calls(Ctx *c)
{
    Vec *out = vec_new(c);
    Graph *g = c->graph;
    for (int i = 0; i < g->calls->len; i++) {
        CallSite *s = VEC_AT(g->calls, i);
        if (s->type.dtype != DT_NONE && s->rule && !is_live(g, s->node))
            vec_push(c, out, s);
    }
    return out;
}

/* ---- the arena ---------------------------------------------------------- */

typedef struct ArenaInfo {
    int nslots;
    bool constant;   /* every slot size is a number */
    int64_t bytes;   /* when constant: the total, each slot padded to 64 */
    const char *expr; /* the total as an expression: pad64(max(a, b)) + ... */
} ArenaInfo;

static const char *slot_text(Ctx *c, Vec *sizes)
{
    if (sizes->len == 1)
        return poly_to_c(c, VEC_AT(sizes, 0), c->sym_names);
    Buf b;
    buf_init(&b, c->arena);
    buf_puts(&b, "max(");
    for (int k = 0; k < sizes->len; k++)
        buf_printf(&b, "%s%s", k ? ", " : "", poly_to_c(c, VEC_AT(sizes, k), c->sym_names));
    buf_puts(&b, ")");
    return b.data;
}

static ArenaInfo arena_info(Ctx *c)
{
    Graph *g = c->graph;
    ArenaInfo a = {.nslots = g->nslots, .constant = true};
    Buf b;
    buf_init(&b, c->arena);
    buf_puts(&b, g->nslots ? "" : "0");
    for (int s = 0; s < g->nslots; s++) {
        Vec *sizes = VEC_AT(g->slot_sizes, s);
        int64_t biggest = 0;
        for (int k = 0; k < sizes->len; k++) {
            int64_t v;
            if (!poly_is_const(VEC_AT(sizes, k), &v))
                a.constant = false;
            else if (v > biggest)
                biggest = v;
        }
        /* a total past int64 is shown as the expression only */
        int64_t padded = biggest > INT64_MAX - 63 ? INT64_MAX : (biggest + 63) / 64 * 64;
        if (a.bytes > INT64_MAX - padded || padded == INT64_MAX)
            a.constant = false;
        else
            a.bytes += padded;
        buf_printf(&b, "%spad64(%s)", s ? " + " : "", slot_text(c, sizes));
    }
    a.expr = b.data;
    return a;
}

/* ---- text -------------------------------------------------------------- */

static void put_table(Buf *o, Vec *rows, int ncols)
{
    size_t width[5] = {0};
    for (int i = 0; i < rows->len; i++) {
        Row *r = VEC_AT(rows, i);
        for (int k = 0; k < ncols - 1; k++)
            if (strlen(r->cells[k]) > width[k])
                width[k] = strlen(r->cells[k]);
    }
    for (int i = 0; i < rows->len; i++) {
        Row *r = VEC_AT(rows, i);
        buf_puts(o, " ");
        for (int k = 0; k < ncols - 1; k++)
            buf_printf(o, " %-*s ", (int)width[k], r->cells[k]);
        buf_printf(o, " %s\n", r->cells[ncols - 1]);
    }
}

static const char *input_dtypes(Ctx *c, const Node *n, const char *sep)
{
    Buf b;
    buf_init(&b, c->arena);
    buf_puts(&b, "");
    int k = 0;
    for (int i = 0; i < node_nreads(n); i++)
        if (node_read(n, i))
            buf_printf(&b, "%s%s", k++ ? sep : "", dtype_name(node_read(n, i)->type.dtype));
    return b.data;
}

/* The ops the training step runs otherwise than the inference forward
 * above (which is evaluation mode, model.eval()): dropout draws a mask from
 * the step's generator, batch_norm(training=true) uses the batch's
 * statistics and updates the running ones. */
static void explain_training_mode(Ctx *c, Buf *o)
{
    Graph *g = c->train_graph;
    Vec *rows = vec_new(c);
    int stream = 0;
    for (int i = 0; g && i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        const char *what = NULL;
        if (dropout_draws(n))
            what = arena_printf(c->arena, "draws its mask from the step's generator (Philox4x32-10, stream %d of the "
                                          "state's rng_seed and rng_offset); the backward regenerates it", stream++);
        else if (n->op->id == OP_BATCH_NORM && attr_bool(n, "training", false))
            what = "normalises with the batch's statistics and updates the running ones in the training state";
        if (!what)
            continue;
        Row *r = arena_alloc(c->arena, sizeof *r);
        *r = (Row){{node_where(c, n, op_loc(n)), n->op->name, what}};
        vec_push(c, rows, r);
    }
    if (!rows->len)
        return;
    buf_printf(o, "\ntraining mode, in the training step only (the forward above is evaluation mode) (%d):\n",
               rows->len);
    put_table(o, rows, 3);
}

static void explain_text(Ctx *c, Buf *o)
{
    Graph *g = c->graph;
    const char *opts = autocast_options_text(c);
    buf_printf(o, "%s: model %s, target %s (%s), autocast low dtype %s%s%s\n", c->main_file->name,
               c->graph->name, c->policy->target, policy_display_name(c), dtype_name(c->policy->low),
               opts[0] ? ", with" : "", opts);

    Vec *ops = vec_new(c), *casts = vec_new(c);
    Row *head = arena_alloc(c->arena, sizeof *head);
    *head = (Row){{"LOCATION", "OP", "INPUTS", "OUTPUT", "RULE"}};
    vec_push(c, ops, head);
    Row *chead = arena_alloc(c->arena, sizeof *chead);
    *chead = (Row){{"LOCATION", "VALUE", "CONVERSION", "SHAPE", "REASON"}};
    vec_push(c, casts, chead);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        Row *r = arena_alloc(c->arena, sizeof *r);
        if (n->op->id == OP_CAST) {
            DType from = n->in[0]->type.dtype, to = n->out->type.dtype;
            *r = (Row){{node_where(c, n, n->loc), value_label(c, n),
                        arena_printf(c->arena, "%s %s -> %s", from == to ? "copy" : "cast", dtype_name(from),
                                     dtype_name(to)),
                        shape_text(c, &n->out->type), n->why ? n->why : ""}};
            vec_push(c, casts, r);
        } else {
            *r = (Row){{node_where(c, n, op_loc(n)), node_op_name(n), input_dtypes(c, n, ", "),
                        type_to_string(c, &n->out->type), n->why ? n->why : ""}};
            vec_push(c, ops, r);
        }
    }
    buf_printf(o, "\nops, in execution order (%d):\n", ops->len - 1);
    put_table(o, ops, 5);
    if (casts->len > 1) {
        buf_printf(o, "\nconversions (%d):\n", casts->len - 1);
        put_table(o, casts, 5);
    } else {
        buf_puts(o, "\nconversions: none\n");
    }

    Vec *removed = removed_calls(c);
    if (removed->len) {
        buf_printf(o, "\nnot computed, since no output needs them (%d):\n", removed->len);
        Vec *rows = vec_new(c);
        for (int i = 0; i < removed->len; i++) {
            CallSite *e = VEC_AT(removed, i);
            Row *r = arena_alloc(c->arena, sizeof *r);
            *r = (Row){{where(c, e->name_loc), e->op->name, type_to_string(c, &e->type), e->rule}};
            vec_push(c, rows, r);
        }
        put_table(o, rows, 4);
    }
    explain_training_mode(c, o);

    ArenaInfo a = arena_info(c);
    if (a.nslots == 0)
        buf_puts(o, "\narena: 0 bytes (no temporaries)\n");
    else if (a.constant)
        buf_printf(o, "\narena: %lld bytes in %d slot%s, each padded to 64 bytes\n", (long long)a.bytes, a.nslots,
                   a.nslots == 1 ? "" : "s");
    else
        buf_printf(o, "\narena: %d slot%s, %s bytes\n", a.nslots, a.nslots == 1 ? "" : "s", a.expr);
}

/* ---- JSON --------------------------------------------------------------- */

/* A JSON string: quotes, backslashes and control characters escaped; bytes
 * that are not valid UTF-8 (a file name can be anything) become U+FFFD so
 * the document stays valid. */
static void json_str(Buf *o, const char *s)
{
    buf_puts(o, "\"");
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char ch = *p;
        if (ch == '"' || ch == '\\') {
            buf_printf(o, "\\%c", ch);
            p++;
        } else if (ch == '\n') {
            buf_puts(o, "\\n");
            p++;
        } else if (ch == '\t') {
            buf_puts(o, "\\t");
            p++;
        } else if (ch < 0x20 || ch == 0x7f) {
            buf_printf(o, "\\u%04x", ch);
            p++;
        } else if (ch < 0x80) {
            char one[2] = {(char)ch, '\0'};
            buf_puts(o, one);
            p++;
        } else {
            int n = ch >= 0xf0 && ch <= 0xf4 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc2 && ch <= 0xdf ? 2 : 0;
            bool ok = n > 0;
            for (int k = 1; ok && k < n; k++)
                ok = (p[k] & 0xc0) == 0x80;
            /* no overlong forms, surrogates or code points past U+10FFFF */
            if (ok && n == 3)
                ok = !(ch == 0xe0 && p[1] < 0xa0) && !(ch == 0xed && p[1] >= 0xa0);
            if (ok && n == 4)
                ok = !(ch == 0xf0 && p[1] < 0x90) && !(ch == 0xf4 && p[1] >= 0x90);
            if (ok) {
                buf_printf(o, "%.*s", n, (const char *)p);
                p += n;
            } else {
                buf_puts(o, "\\ufffd");
                p++;
            }
        }
    }
    buf_puts(o, "\"");
}

/* , "instance": the module instance n was inlined from, or null */
static void json_instance(Buf *o, const Node *n)
{
    buf_puts(o, ", \"instance\": ");
    if (n->instance)
        json_str(o, n->instance);
    else
        buf_puts(o, "null");
}

static void json_loc(Ctx *c, Buf *o, Loc loc)
{
    int line, col;
    loc_line_col(loc, &line, &col);
    buf_puts(o, "\"file\": ");
    json_str(o, loc.file->name);
    buf_printf(o, ", \"line\": %d, \"col\": %d", line, col);
    (void)c;
}

static void json_dtype_or_null(Buf *o, DType t)
{
    if (t == DT_NONE)
        buf_puts(o, "null");
    else
        json_str(o, dtype_name(t));
}

static void explain_json(Ctx *c, Buf *o)
{
    Graph *g = c->graph;
    buf_puts(o, "{\n  \"file\": ");
    json_str(o, c->main_file->name);
    buf_puts(o, ",\n  \"model\": ");
    json_str(o, c->graph->name);
    buf_puts(o, ",\n  \"target\": ");
    json_str(o, c->policy->target);
    buf_puts(o, ",\n  \"policy\": ");
    json_str(o, policy_display_name(c));
    buf_puts(o, ",\n  \"low_dtype\": ");
    json_str(o, dtype_name(c->policy->low));
    buf_puts(o, ",\n  \"force_dtype\": ");
    json_dtype_or_null(o, c->opts->force_dtype);
    buf_puts(o, ",\n  \"options\": ");
    const char *opts = autocast_options_text(c);
    json_str(o, opts[0] == ' ' ? opts + 1 : opts);

    buf_puts(o, ",\n  \"ops\": [");
    int nops = 0;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (n->op->id == OP_CAST)
            continue;
        const PolicyRow *row = n->row;
        buf_puts(o, nops++ ? ",\n    {" : "\n    {");
        json_loc(c, o, op_loc(n));
        json_instance(o, n);
        buf_puts(o, ", \"op\": ");
        json_str(o, node_op_name(n));
        buf_puts(o, ", \"inputs\": [");
        int k = 0;
        for (int j = 0; j < node_nreads(n); j++) {
            if (!node_read(n, j))
                continue;
            buf_puts(o, k++ ? ", " : "");
            json_str(o, dtype_name(node_read(n, j)->type.dtype));
        }
        buf_puts(o, "], \"output\": ");
        json_str(o, dtype_name(n->out->type.dtype));
        buf_puts(o, ", \"shape\": ");
        json_str(o, shape_text(c, &n->out->type));
        buf_printf(o, ", \"autocast\": %s", n->autocast_on ? "true" : "false");
        buf_puts(o, ", \"class\": ");
        if (row)
            json_str(o, policy_class_name(row->cls));
        else
            buf_puts(o, "null");
        buf_puts(o, ", \"source\": ");
        if (row)
            json_str(o, row->source);
        else
            buf_puts(o, "null");
        buf_puts(o, ", \"forced_from\": ");
        json_dtype_or_null(o, n->forced_from);
        buf_puts(o, ", \"rule\": ");
        json_str(o, n->why ? n->why : "");
        buf_puts(o, "}");
    }
    buf_puts(o, nops ? "\n  ]" : "]");

    buf_puts(o, ",\n  \"conversions\": [");
    int ncasts = 0;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (n->op->id != OP_CAST)
            continue;
        buf_puts(o, ncasts++ ? ",\n    {" : "\n    {");
        json_loc(c, o, n->loc);
        json_instance(o, n);
        buf_puts(o, ", \"value\": ");
        json_str(o, value_label(c, n));
        buf_puts(o, ", \"from\": ");
        json_str(o, dtype_name(n->in[0]->type.dtype));
        buf_puts(o, ", \"to\": ");
        json_str(o, dtype_name(n->out->type.dtype));
        buf_puts(o, ", \"shape\": ");
        json_str(o, shape_text(c, &n->out->type));
        buf_printf(o, ", \"uses\": %d, \"reason\": ", n->out->nuses);
        json_str(o, n->why ? n->why : "");
        buf_puts(o, "}");
    }
    buf_puts(o, ncasts ? "\n  ]" : "]");

    Vec *removed = removed_calls(c);
    buf_puts(o, ",\n  \"not_computed\": [");
    for (int i = 0; i < removed->len; i++) {
        CallSite *e = VEC_AT(removed, i);
        buf_puts(o, i ? ",\n    {" : "\n    {");
        json_loc(c, o, e->name_loc);
        buf_puts(o, ", \"op\": ");
        json_str(o, e->op->name);
        buf_puts(o, ", \"output\": ");
        json_str(o, dtype_name(e->type.dtype));
        buf_puts(o, ", \"rule\": ");
        json_str(o, e->rule);
        buf_puts(o, "}");
    }
    buf_puts(o, removed->len ? "\n  ]" : "]");

    ArenaInfo a = arena_info(c);
    buf_printf(o, ",\n  \"arena\": {\"slots\": %d, \"bytes\": ", a.nslots);
    if (a.constant)
        buf_printf(o, "%lld", (long long)a.bytes);
    else
        buf_puts(o, "null");
    buf_puts(o, ", \"expression\": ");
    json_str(o, a.expr);
    buf_puts(o, ", \"slot_sizes\": [");
    for (int s = 0; s < g->nslots; s++) {
        Vec *sizes = VEC_AT(g->slot_sizes, s);
        buf_puts(o, s ? ", [" : "[");
        for (int k = 0; k < sizes->len; k++) {
            buf_puts(o, k ? ", " : "");
            json_str(o, poly_to_c(c, VEC_AT(sizes, k), c->sym_names));
        }
        buf_puts(o, "]");
    }
    buf_puts(o, "]}\n}\n");
}

bool explain(Ctx *c)
{
    if (c->opts->explain == EXPLAIN_NONE)
        return true;
    Buf o;
    buf_init(&o, c->arena);
    if (c->opts->explain == EXPLAIN_JSON)
        explain_json(c, &o);
    else
        explain_text(c, &o);
    if (fwrite(o.data, 1, o.len, stdout) != o.len || fflush(stdout) != 0) {
        fprintf(stderr, "ampc: error: cannot write to standard output: %s\n", strerror(errno));
        c->io_error = true;
        return false;
    }
    return true;
}
