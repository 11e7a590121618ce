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
 *
 * Everything taken from the input (file names, names and strings in
 * messages, the source line) is printed with control bytes as \xHH, so a
 * file cannot drive the terminal; the caret still lands under its byte.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void loc_line_col(Loc loc, int *line, int *col)
{
    const SourceFile *f = loc.file;
    uint32_t at = loc.begin < f->len ? loc.begin : (uint32_t)f->len;
    uint32_t lo = 0, hi = f->nlines; /* the last line starting at or before at */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (f->line_starts[mid] <= at)
            lo = mid;
        else
            hi = mid;
    }
    *line = (int)lo + 1;
    *col = (int)(loc.begin - f->line_starts[lo]) + 1;
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

/* Bytes a terminal would act on rather than show: C0 controls, DEL, and
 * the C1 controls in UTF-8 (U+0080..U+009F, some terminals read U+009B as
 * CSI).  A hostile file must not send escape sequences through our
 * messages, so these are shown as \xHH.  Returns the bytes the sequence
 * at s takes (0: print as is). */
static size_t control_len(const char *s, size_t n, bool keep_tab)
{
    unsigned char b = (unsigned char)s[0];
    if (b == '\t' && keep_tab)
        return 0;
    if (b < 0x20 || b == 0x7f)
        return 1;
    if (b == 0xc2 && n > 1 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f)
        return 2;
    return 0;
}

/* s[0..n) with control bytes escaped; returns the columns it took. */
static size_t put_escaped(FILE *out, const char *s, size_t n, bool keep_tab)
{
    size_t cols = 0;
    for (size_t i = 0; i < n;) {
        size_t k = control_len(s + i, n - i, keep_tab);
        if (!k) {
            fputc(s[i++], out);
            cols++;
            continue;
        }
        for (size_t j = 0; j < k; j++, i++) {
            fprintf(out, "\\x%02x", (unsigned char)s[i]);
            cols += 4;
        }
    }
    return cols;
}

static void put_escaped_str(FILE *out, const char *s)
{
    put_escaped(out, s, strlen(s), true);
}

/* A message formatted, then printed with its control bytes escaped: names
 * and strings in it may come from the source. */
static void vput_message(FILE *out, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        put_escaped(out, small, (size_t)n, true);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        put_escaped(out, small, sizeof small - 1, true);
        return;
    }
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    put_escaped(out, big, (size_t)n, true);
    free(big);
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

    fprintf(out, "%5d | ", line);
    put_escaped(out, t + start, shown - start, true);
    fprintf(out, "\n      | ");
    /* the caret under the byte, counting an escaped byte as its 4 columns */
    for (size_t i = start; i < loc.begin && i < shown;) {
        size_t k = control_len(t + i, shown - i, true);
        if (k && i + k > loc.begin)
            break;
        for (size_t j = 0; j < (k ? 4 * k : 1); j++)
            fputc(t[i] == '\t' ? '\t' : ' ', out);
        i += k ? k : 1;
    }
    fputc('^', out);
    uint32_t stop = loc.end < shown ? loc.end : (uint32_t)shown;
    size_t width = 0;
    for (size_t i = loc.begin; i < stop;) {
        size_t k = control_len(t + i, stop - i, true);
        width += k ? 4 * k : 1;
        i += k ? k : 1;
    }
    for (size_t i = 1; i < width; i++)
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
    fputs(color ? "\033[1m" : "", c->diag_out);
    put_escaped_str(c->diag_out, loc.file->name);
    fprintf(c->diag_out, ":%d:%d:%s %s%s:%s ", line, col, color ? "\033[0m" : "", color ? kind_color : "", kind,
            color ? "\033[0m" : "");
    vput_message(c->diag_out, fmt, ap);
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
    vput_message(c->diag_out, fmt, ap);
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
