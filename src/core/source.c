/* source.c: the model's source files, read whole into the arena.
 *
 * A source is text: a NUL byte is an error in the model (exit 1) at its
 * line and column, not a failure to read; so is passing MAX_SOURCE_BYTES,
 * where reading stops.  Every file read
 * (not standard input) is recorded in c->deps for the depfile.
 */
#include "core.h"

#include <errno.h>
#include <string.h>

/* All sources of one compilation together (the model, its imports, the
 * policy).  Real models are a few kilobytes; the front end takes ~130
 * bytes of memory per source byte, so this keeps a hostile input near
 * half a gigabyte, and within the 200,000-statement limit it is ample
 * (20 bytes a statement). */
enum { MAX_SOURCE_BYTES = 4 << 20 };

SourceFile *source_from_text(Ctx *c, const char *name, const char *text, size_t len)
{
    SourceFile *f = arena_alloc(c->arena, sizeof *f);
    f->name = arena_strdup(c->arena, name);
    f->text = arena_strndup(c->arena, text, len);
    f->len = len;
    uint32_t nlines = 1;
    for (size_t i = 0; i < len; i++)
        nlines += text[i] == '\n';
    uint32_t *starts = arena_alloc(c->arena, (size_t)nlines * sizeof *starts);
    starts[0] = 0;
    for (uint32_t i = 0, l = 1; i < len; i++)
        if (text[i] == '\n')
            starts[l++] = i + 1;
    f->line_starts = starts;
    f->nlines = nlines;
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
    const char *nul = NULL;
    bool too_big = false;
    while (!nul && !too_big && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        buf_append(&b, chunk, n);
        nul = memchr(b.data + b.len - n, '\0', n);
        too_big = c->source_bytes + b.len > MAX_SOURCE_BYTES;
    }
    bool failed = ferror(f);
    if (!is_stdin)
        fclose(f);
    if (failed) {
        error_plain(c, "cannot read %s: %s", path, strerror(errno));
        c->io_error = true;
        return NULL;
    }
    const char *name = is_stdin ? "<stdin>" : path;
    if (nul) {
        /* an input error at a place in the file, not an I/O failure: the
         * excerpt is the text read so far, which holds the NUL's line */
        SourceFile *sf = source_from_text(c, name, b.data, b.len);
        uint32_t at = (uint32_t)(nul - b.data);
        error_at(c, (Loc){.file = sf, .begin = at, .end = at + 1},
                 "a NUL byte: %s is not a text file", name);
        return NULL;
    }
    if (too_big) {
        /* read no further: an endless stream (yes | ampc -) stops here too */
        SourceFile *sf = source_from_text(c, name, b.data, b.len);
        uint32_t at = (uint32_t)(MAX_SOURCE_BYTES - c->source_bytes);
        error_at(c, (Loc){.file = sf, .begin = at, .end = at},
                 "the model's sources pass %d MiB here; a model this large would pass the limit of "
                 "200,000 statements long after exhausting memory", MAX_SOURCE_BYTES >> 20);
        return NULL;
    }
    c->source_bytes += b.len;
    if (!is_stdin)
        vec_push(c, c->deps, arena_strdup(c->arena, path));
    return source_from_text(c, name, b.data, b.len);
}
