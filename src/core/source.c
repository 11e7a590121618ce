/* source.c: the model's source files, read whole into the arena.
 *
 * A source is text: a file with a NUL byte is refused.  Every file read
 * (not standard input) is recorded in c->deps for the depfile.
 */
#include "core.h"

#include <errno.h>
#include <string.h>

SourceFile *source_from_text(Ctx *c, const char *name, const char *text, size_t len)
{
    SourceFile *f = arena_alloc(c->arena, sizeof *f);
    f->name = arena_strdup(c->arena, name);
    f->text = arena_strndup(c->arena, text, len);
    f->len = len;
    return f;
}

SourceFile *source_read(Ctx *c, const char *path)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        error_plain(c, "cannot open %s: %s", path, strerror(errno));
        c->io_error = true;
        return NULL;
    }
    Buf b;
    buf_init(&b, c->arena);
    char chunk[65536];
    size_t n;
    bool has_nul = false;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        has_nul |= memchr(chunk, '\0', n) != NULL;
        char *s = arena_strndup(c->arena, chunk, n);
        if (has_nul)
            break;
        buf_puts(&b, s);
    }
    bool failed = ferror(f);
    if (!is_stdin)
        fclose(f);
    if (failed) {
        error_plain(c, "cannot read %s: %s", path, strerror(errno));
        c->io_error = true;
        return NULL;
    }
    if (has_nul) {
        error_plain(c, "%s is not a text file (it contains a NUL byte)", path);
        return NULL;
    }
    if (!is_stdin)
        vec_push(c, c->deps, arena_strdup(c->arena, path));
    return source_from_text(c, is_stdin ? "<stdin>" : path, b.data, b.len);
}
