/* parse.c: source text -> AST, through the flex lexer and bison parser in
 * grammar/.
 *
 * Requires: a SourceFile.  Produces: c->model, the one model of the file.
 * A syntax error stops the parse (bison reports the first one; recovering
 * without statement terminators would mostly produce noise).
 */
#include "ampc.h"
#include "parser.h"
#include "lexer.h"

#include <string.h>

SourceFile *source_from_text(Ctx *c, const char *name, const char *text, size_t len)
{
    SourceFile *f = arena_alloc(c->arena, sizeof *f);
    f->name = arena_strdup(c->arena, name);
    f->text = arena_strndup(c->arena, text, len);
    f->len = len;
    return f;
}

/* Token names as bison spells them ("'('", "name", "\"model\"") turned into
 * the words of a message: "')'", "a name", "'model'". */
static const char *describe_token(Ctx *c, const char *name)
{
    size_t n = strlen(name);
    if (name[0] == '"' && n >= 2)
        return arena_printf(c->arena, "'%.*s'", (int)(n - 2), name + 1);
    if (name[0] == '\'')
        return name;
    if (strcmp(name, "end of file") == 0)
        return name;
    bool vowel = strchr("aeiou", name[0]) != NULL;
    return arena_printf(c->arena, "%s %s", vowel ? "an" : "a", name);
}

void report_syntax_error(Parser *p, Loc loc, const char *found, bool at_end,
                         const char *const *expected, int nexpected)
{
    Ctx *c = p->ctx;
    Buf msg;
    buf_init(&msg, c->arena);
    const char *text = loc_text(c, loc);
    if (strcmp(found, "invalid character") == 0)
        buf_printf(&msg, "invalid character '%s'", text);
    else if (strcmp(found, "malformed number") == 0)
        buf_printf(&msg, "malformed number '%s'", text);
    else if (strcmp(found, "unterminated string") == 0)
        buf_puts(&msg, "missing closing '\"' of string");
    else if (at_end)
        buf_puts(&msg, "unexpected end of file");
    else
        buf_printf(&msg, "unexpected '%s'", text);
    for (int i = 0; i < nexpected; i++) {
        buf_printf(&msg, "%s%s", i == 0 ? "; expected " : i == nexpected - 1 ? " or " : ", ",
                   describe_token(c, expected[i]));
    }
    error_at(c, loc, "%s", msg.data);
}

bool parse_file(Ctx *c, SourceFile *f)
{
    Parser p = {.ctx = c, .file = f, .models = vec_new(c)};
    Lexer lx = {.ctx = c, .file = f};
    yyscan_t scanner;
    if (yylex_init_extra(&lx, &scanner) != 0)
        ICE("cannot create the lexer");
    int rc = yyparse(scanner, &p);
    yylex_destroy(scanner);
    if (rc != 0 || c->nerrors)
        return false;

    Loc whole = {.file = f, .begin = 0, .end = 0};
    if (p.models->len == 0) {
        error_at(c, whole, "no model in this file; a model starts with 'model Name(dims) {'");
        return false;
    }
    if (p.models->len > 1) {
        Model *second = VEC_AT(p.models, 1);
        error_at(c, second->name->loc, "a file holds one model; '%s' is the second", second->name->text);
        return false;
    }
    c->model = VEC_AT(p.models, 0);
    return true;
}
