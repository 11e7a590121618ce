/* diag.c: diagnostics in the form compilers and editors understand.
 *
 *   mlp.amp:9:14: error: unknown op 'lineer'
 *       9 |   h = relu(lineer(x, fc1.weight))
 *         |            ^~~~~~
 *
 * Locations are byte ranges; line and column (1-based, in bytes) are found
 * only when a message is printed.  The caret marks the first byte and the
 * tildes the rest of the range on that line.  User errors are counted so a
 * pass can report several before the pipeline stops; compiler bugs go
 * through ice() instead and never look like a user's mistake.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void loc_line_col(Loc loc, int *line, int *col)
{
    int l = 1;
    uint32_t line_start = 0;
    const char *t = loc.file->text;
    for (uint32_t i = 0; i < loc.begin && i < loc.file->len; i++) {
        if (t[i] == '\n') {
            l++;
            line_start = i + 1;
        }
    }
    *line = l;
    *col = (int)(loc.begin - line_start) + 1;
}

Loc loc_merge(Loc a, Loc b)
{
    Loc r = a;
    if (b.begin < r.begin)
        r.begin = b.begin;
    if (b.end > r.end)
        r.end = b.end;
    return r;
}

char *loc_text(Ctx *c, Loc loc)
{
    return arena_strndup(c->arena, loc.file->text + loc.begin, loc.end - loc.begin);
}

static void print_source_line(FILE *out, Loc loc, int line)
{
    const char *t = loc.file->text;
    size_t len = loc.file->len;
    size_t start = loc.begin < len ? loc.begin : len;
    while (start > 0 && t[start - 1] != '\n')
        start--;
    size_t end = start;
    while (end < len && t[end] != '\n')
        end++;
    /* A trailing carriage return would move the caret line on terminals. */
    size_t shown = end;
    if (shown > start && t[shown - 1] == '\r')
        shown--;

    fprintf(out, "%5d | %.*s\n", line, (int)(shown - start), t + start);
    fprintf(out, "      | ");
    for (size_t i = start; i < loc.begin && i < shown; i++)
        fputc(t[i] == '\t' ? '\t' : ' ', out);
    fputc('^', out);
    uint32_t stop = loc.end < shown ? loc.end : (uint32_t)shown;
    for (uint32_t i = loc.begin + 1; i < stop; i++)
        fputc('~', out);
    fputc('\n', out);
}

/* Colour as gcc uses it, only on a terminal unless asked (-fdiagnostics-color). */
static bool use_color(Ctx *c)
{
    int mode = c->opts ? c->opts->color : 2;
    if (mode == 1)
        return true;
    if (mode == 2)
        return false;
    const char *term = getenv("TERM");
    return isatty(fileno(c->diag_out)) && term && strcmp(term, "dumb") != 0;
}

static void vreport(Ctx *c, Loc loc, const char *kind, const char *cls, const char *fmt, va_list ap)
{
    int line, col;
    loc_line_col(loc, &line, &col);
    bool color = use_color(c);
    const char *kind_color = strcmp(kind, "error") == 0 ? "\033[1;31m" : strcmp(kind, "warning") == 0 ? "\033[1;35m"
                                                                                                 : "\033[1;36m";
    fprintf(c->diag_out, "%s%s:%d:%d:%s %s%s:%s ", color ? "\033[1m" : "", loc.file->name, line, col,
            color ? "\033[0m" : "", color ? kind_color : "", kind, color ? "\033[0m" : "");
    vfprintf(c->diag_out, fmt, ap);
    if (cls)
        fprintf(c->diag_out, " [%s%s]", strcmp(kind, "error") == 0 ? "-Werror=" : "-W", cls);
    fputc('\n', c->diag_out);
    print_source_line(c->diag_out, loc, line);
}

/* Past this many errors the rest is noise (and time): say so once. */
enum { MAX_REPORTED_ERRORS = 100 };

void error_at(Ctx *c, Loc loc, const char *fmt, ...)
{
    c->nerrors++;
    if (c->nerrors > MAX_REPORTED_ERRORS) {
        if (c->nerrors == MAX_REPORTED_ERRORS + 1)
            fprintf(c->diag_out, "ampc: too many errors (%d); stopping the report here\n", MAX_REPORTED_ERRORS);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vreport(c, loc, "error", NULL, fmt, ap);
    va_end(ap);
}

/* -w silences warnings, -Wno-CLASS one class of them; -Werror makes them
 * errors, which fail the compilation. */
static void vwarn(Ctx *c, Loc loc, const char *cls, const char *fmt, va_list ap)
{
    const Options *o = c->opts;
    if (o && o->no_warnings)
        return;
    for (int i = 0; o && cls && i < o->ndisabled_warnings; i++)
        if (strcmp(o->disabled_warnings[i], cls) == 0)
            return;
    if (o && o->warnings_are_errors) {
        vreport(c, loc, "error", cls ? cls : "warning", fmt, ap);
        c->nerrors++;
        return;
    }
    vreport(c, loc, "warning", cls, fmt, ap);
    c->nwarnings++;
}

void warning_at(Ctx *c, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(c, loc, NULL, fmt, ap);
    va_end(ap);
}

void warning_class_at(Ctx *c, Loc loc, const char *cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(c, loc, cls, fmt, ap);
    va_end(ap);
}

void note_at(Ctx *c, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(c, loc, "note", NULL, fmt, ap);
    va_end(ap);
}

void error_plain(Ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(c->diag_out, "ampc: error: ");
    vfprintf(c->diag_out, fmt, ap);
    fputc('\n', c->diag_out);
    va_end(ap);
    c->nerrors++;
}

void ice(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ampc: internal compiler error at %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputs("\nampc: this is a bug in ampc, not in your model; please report it with the model file.\n", stderr);
    va_end(ap);
    exit(EXIT_INTERNAL);
}

/* The closest of `candidates` to `name`, if it is close enough to be a
 * typo: the "did you mean" of every diagnostic. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int d[41][41];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            /* a swap of two neighbours is one typo (modle for model) */
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    }
    return d[la][lb];
}

const char *closest_name(const char *name, const char *const *candidates, int n)
{
    const char *best = NULL;
    int best_d = (int)strlen(name) / 3 + 1;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(name, candidates[i]);
        if (d < best_d || (d == best_d && !best && d <= 2)) {
            best = candidates[i];
            best_d = d;
        }
    }
    return best;
}
