/* parse.c: source text -> AST, through the flex lexer and bison parser in
 * grammar/.
 *
 * Requires: a SourceFile.  Produces: c->model, the one model of the file.
 * A syntax error stops the parse (bison reports the first one; recovering
 * without statement terminators would mostly produce noise).
 */
#include "front.h"
#include "parser.h"
#include "lexer.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    else if (strcmp(found, "unterminated quoted name") == 0) {
        buf_puts(&msg, "missing closing '`' of quoted name");
        nexpected = 0;
    } else if (strcmp(found, "malformed quoted name") == 0) {
        buf_printf(&msg, "quoted name %s is empty or holds a character names cannot have "
                   "(letters, digits and _.-+@$%%&=!^,;()[]<>|~' and space are allowed)", text);
        nexpected = 0;
    } else if (text[0] && strchr("<>=!", text[0]) && (text[1] == '\0' || text[1] == '=')) {
        /* a second comparison where Python would chain them */
        buf_printf(&msg, "unexpected '%s': comparisons do not chain; write (a < b) & (b < c)", text);
        nexpected = 0;
    }
    else if (at_end)
        buf_puts(&msg, "unexpected end of file");
    else
        buf_printf(&msg, "unexpected '%s'", text);
    /* A misspelt keyword reads as a name: `modle M(B)` stops at the name
     * itself, `inptu x: f32` one token later.  Suggest the keyword. */
    static const char *const keywords[] = {"model", "block", "module", "input", "param", "buffer", "output",
                                           "minimize", "autocast", "return", "for", "import", "train"};
    const int nkw = (int)(sizeof keywords / sizeof keywords[0]);
    const char *typo = NULL, *kw = NULL;
    Loc typo_loc = loc;
    if (strcmp(found, "name") == 0) {
        typo = text;
        const char *allowed[16];
        int nallowed = 0;
        for (int i = 0; i < nexpected && nallowed < 16; i++)
            for (int k = 0; k < nkw; k++)
                if (expected[i][0] == '"' && strncmp(expected[i] + 1, keywords[k], strlen(keywords[k])) == 0 &&
                    expected[i][strlen(keywords[k]) + 1] == '"')
                    allowed[nallowed++] = keywords[k];
        kw = nallowed ? closest_name(typo, allowed, nallowed) : closest_name(typo, keywords, nkw);
        if (!kw) {
            /* the name before this one may be the typo */
            uint32_t end = loc.begin;
            while (end > 0 && (loc.file->text[end - 1] == ' ' || loc.file->text[end - 1] == '\t'))
                end--;
            uint32_t start = end;
            while (start > 0 && (isalnum((unsigned char)loc.file->text[start - 1]) || loc.file->text[start - 1] == '_'))
                start--;
            uint32_t line_start = start;
            while (line_start > 0 && (loc.file->text[line_start - 1] == ' ' || loc.file->text[line_start - 1] == '\t'))
                line_start--;
            bool starts_statement = line_start == 0 || loc.file->text[line_start - 1] == '\n';
            if (start < end && starts_statement) {
                typo = arena_strndup(c->arena, loc.file->text + start, end - start);
                kw = closest_name(typo, keywords, nkw);
                typo_loc.begin = start;
                typo_loc.end = end;
            }
        }
    }
    if (kw && strcmp(kw, typo) != 0) {
        if (typo_loc.begin != loc.begin) {
            error_at(c, typo_loc, "unknown statement '%s'; did you mean '%s'?", typo, kw);
            return;
        }
        buf_printf(&msg, "; did you mean '%s'?", kw);
        nexpected = 0;
    }
    for (int i = 0; i < nexpected; i++) {
        buf_printf(&msg, "%s%s", i == 0 ? "; expected " : i == nexpected - 1 ? " or " : ", ",
                   describe_token(c, expected[i]));
    }
    error_at(c, loc, "%s", msg.data);
}

/* Parse one file into p's lists; false on a syntax error. */
static bool parse_one(Ctx *c, const SourceFile *f, Parser *p)
{
    p->file = f;
    Lexer lx = {.ctx = c, .file = f};
    yyscan_t scanner;
    if (yylex_init_extra(&lx, &scanner) != 0)
        ICE("cannot create the lexer");
    int errors = c->nerrors;
    int rc = yyparse(scanner, p);
    yylex_destroy(scanner);
    return rc == 0 && c->nerrors == errors;
}

/* Only regular files: importing a device or a fifo would hang or read
 * forever.  A candidate that exists but is not one is remembered in
 * *other, so the error can say what it found instead of "cannot find". */
static bool readable_file(const char *path, const char **other)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    if (!S_ISREG(st.st_mode)) {
        if (!*other)
            *other = path;
        return false;
    }
    return access(path, R_OK) == 0;
}

/* The file an import names: beside the importing file first, then in each
 * -I directory in order, as a C compiler searches "quoted" includes, then
 * in an installed ampc's share/ampc (the standard block library, nn.amp). */
static char *find_import(Ctx *c, const SourceFile *from, const char *name, const char **other)
{
    if (name[0] == '/')
        return readable_file(name, other) ? arena_strdup(c->arena, name) : NULL;
    const char *slash = strrchr(from->name, '/');
    char *here = slash ? arena_printf(c->arena, "%.*s/%s", (int)(slash - from->name), from->name, name)
                       : arena_strdup(c->arena, name);
    if (readable_file(here, other))
        return here;
    for (int i = 0; i < c->opts->ninclude_dirs; i++) {
        char *p = arena_printf(c->arena, "%s/%s", c->opts->include_dirs[i], name);
        if (readable_file(p, other))
            return p;
    }
    if (c->opts->share_dir) {
        char *p = arena_printf(c->arena, "%s/%s", c->opts->share_dir, name);
        if (readable_file(p, other))
            return p;
    }
    return NULL;
}

typedef struct ImportState {
    Vec *done;     /* real paths of files already parsed */
    Vec *stack;    /* real paths of the files being imported, outermost first */
    Vec *names;    /* the same files, as the user named them */
    Parser *lib;   /* collects the blocks of imported files */
} ImportState;

static bool in_list(Vec *v, const char *s)
{
    for (int i = 0; i < v->len; i++)
        if (strcmp(VEC_AT(v, i), s) == 0)
            return true;
    return false;
}

static void load_imports(Ctx *c, ImportState *st, const SourceFile *from, Vec *imports)
{
    for (int i = 0; i < imports->len; i++) {
        Expr *imp = VEC_AT(imports, i);
        const char *other = NULL;
        char *path = find_import(c, from, imp->text, &other);
        if (!path && other) {
            struct stat st;
            bool dir = stat(other, &st) == 0 && S_ISDIR(st.st_mode);
            error_at(c, imp->loc, "cannot import '%s': %s is %s", imp->text, other,
                     dir ? "a directory" : "not a regular file");
            continue;
        }
        if (!path) {
            error_at(c, imp->loc, "cannot find '%s' beside %s%s%s", imp->text, from->name,
                     c->opts->ninclude_dirs ? " or in the -I directories" : "",
                     c->opts->share_dir ? arena_printf(c->arena, " or in %s", c->opts->share_dir)
                     : c->opts->ninclude_dirs ? "" : " (add a directory with -I DIR)");
            continue;
        }
        char *real = realpath(path, NULL);
        if (!real) {
            error_at(c, imp->loc, "cannot open '%s': %s", path, strerror(errno));
            continue;
        }
        char *key = arena_strdup(c->arena, real);
        free(real);
        if (in_list(st->stack, key)) {
            Buf chain;
            buf_init(&chain, c->arena);
            bool on = false;
            for (int k = 0; k < st->stack->len; k++) {
                on |= strcmp(VEC_AT(st->stack, k), key) == 0;
                if (on)
                    buf_printf(&chain, "%s imports ", (char *)VEC_AT(st->names, k));
            }
            buf_puts(&chain, path);
            error_at(c, imp->loc, "import cycle: %s", chain.data);
            continue;
        }
        if (in_list(st->done, key))
            continue; /* imported twice along different paths: once is enough */
        vec_push(c, st->done, key);
        SourceFile *f = source_read(c, path);
        if (!f)
            continue;
        Parser sub = {.ctx = c, .models = vec_new(c), .blocks = st->lib->blocks, .imports = vec_new(c)};
        if (!parse_one(c, f, &sub))
            continue;
        vec_push(c, st->stack, key);
        vec_push(c, st->names, (void *)f->name);
        load_imports(c, st, f, sub.imports);
        st->stack->len--;
        st->names->len--;
    }
}

bool parse_file(Ctx *c, SourceFile *f)
{
    Parser p = {.ctx = c, .models = vec_new(c), .blocks = vec_new(c), .imports = vec_new(c)};
    if (!parse_one(c, f, &p))
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

    /* imported files contribute their blocks; their models are not compiled */
    ImportState st = {.done = vec_new(c), .stack = vec_new(c), .names = vec_new(c), .lib = &p};
    char *real = f->name[0] != '<' ? realpath(f->name, NULL) : NULL;
    if (real) {
        vec_push(c, st.done, arena_strdup(c->arena, real));
        vec_push(c, st.stack, arena_strdup(c->arena, real));
        vec_push(c, st.names, (void *)f->name);
        free(real);
    }
    load_imports(c, &st, f, p.imports);
    c->blocks = p.blocks;

    for (int i = 0; i < c->blocks->len; i++) {
        Block *b = VEC_AT(c->blocks, i);
        for (int j = 0; j < i; j++) {
            Block *old = VEC_AT(c->blocks, j);
            if (strcmp(old->name->text, b->name->text) == 0) {
                error_at(c, b->name->loc, "block '%s' is defined twice", b->name->text);
                note_at(c, old->name->loc, "the first definition is here");
            }
        }
    }
    return c->nerrors == 0;
}
