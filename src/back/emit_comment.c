/* emit_comment.c: what the emitted C tells its reader in comments.
 *
 * Each op's comment says where the op comes from: its source line and, for
 * an op inlined from a block, the module instance and the model's line that
 * declares it ("nn.amp:9 in layer2.0.conv1 (resnet18.amp:40)"), since the
 * block's line alone is the same for every instance.  It names the rule
 * that chose its dtype; the policy
 * sources those rules cite are listed once, in the provenance header
 * ("rules from: ..."), and left out of each comment.  Text that comes from
 * the user (a policy file's sources) is made safe to sit inside a comment.
 */
#include "emit.h"

#include <string.h>

/* The policy sources the rules of graph g name (a node's policy row's
 * source), each once, appended to e's list. */
void collect_rule_sources(Emitter *e, const Graph *g)
{
    for (int i = 0; g && i < g->nodes->len; i++) {
        const Node *n = VEC_AT(g->nodes, i);
        if (!n->row || !n->row->source)
            continue;
        bool seen = false;
        for (int k = 0; k < e->nrule_sources && !seen; k++)
            seen = strcmp(e->rule_sources[k], n->row->source) == 0;
        if (seen)
            continue;
        const char **more = arena_alloc(e->c->arena, sizeof *more * (size_t)(e->nrule_sources + 1));
        if (e->nrule_sources)
            memcpy(more, e->rule_sources, sizeof *more * (size_t)e->nrule_sources);
        more[e->nrule_sources++] = n->row->source;
        e->rule_sources = more;
    }
}

/* Text from the user (a policy file's sources, file names) as the inside of a C
 * comment: "*" "/" would end it, "/" "*" draws a warning, and control
 * bytes would reach the reader's terminal, so the pairs are split and the
 * bytes shown as \xHH. */
const char *comment_safe(Ctx *c, const char *text)
{
    Buf b;
    buf_init(&b, c->arena);
    for (const char *s = text; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch == '*' && s[1] == '/') || (ch == '/' && s[1] == '*'))
            buf_printf(&b, "%c ", ch);
        else if (ch < 0x20 || ch == 0x7f)
            buf_printf(&b, "\\x%02x", ch);
        else
            buf_append(&b, s, 1);
    }
    return b.data;
}

/* Where node n comes from, for its comment: "file:line", then
 * " in INSTANCE (file:line)" when a block was inlined to make it.  File
 * names and instance paths are the user's text, so comment_safe. */
const char *comment_where(Emitter *e, const Node *n)
{
    Ctx *c = e->c;
    int line, col;
    loc_line_col(n->loc, &line, &col);
    const char *where = arena_printf(c->arena, "%s:%d", comment_safe(c, base_name(n->loc.file->name)), line);
    if (!n->instance)
        return where;
    if (!n->instance_loc.file)
        return arena_printf(c->arena, "%s in %s", where, comment_safe(c, n->instance));
    loc_line_col(n->instance_loc, &line, &col);
    return arena_printf(c->arena, "%s in %s (%s:%d)", where, comment_safe(c, n->instance),
                        comment_safe(c, base_name(n->instance_loc.file->name)), line);
}

static const char *rule_without_sources(Emitter *e, const char *why);

/* An op's rule for its comment: the decision without the policy source in
 * parentheses, which the file's header names once ("lower_precision_fp on
 * cpu", not "... (PyTorch CPU autocast: lower_precision_fp list)" on every
 * op). */
const char *comment_rule(Emitter *e, const char *why)
{
    if (!why)
        return "";
    return comment_safe(e->c, rule_without_sources(e, why));
}

static const char *rule_without_sources(Emitter *e, const char *why)
{
    for (int k = 0; k < e->nrule_sources; k++) {
        const char *src = e->rule_sources[k];
        size_t len = strlen(src);
        for (const char *at = strstr(why, src); at; at = strstr(at + 1, src)) {
            if (at - why >= 2 && at[-1] == '(' && at[-2] == ' ' && at[len] == ')') {
                const char *rest = rule_without_sources(e, at + len + 1);
                return arena_printf(e->c->arena, "%.*s%s", (int)(at - 2 - why), why, rest);
            }
        }
    }
    return why;
}

