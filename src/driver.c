/* driver.c: the pipeline, in one function, and the compilation context.
 *
 * ampc_compile runs each pass in order and stops at the first that reports
 * errors (a pass may report several).  --dump=PASS prints the IR after a
 * graph pass.  Nothing here touches output files: main.c writes them, and
 * only when this returns EXIT_OK.
 */
#include "ampc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

Ctx *ctx_new(const Options *opts, FILE *diag_out)
{
    Arena *a = arena_new();
    Ctx *c = arena_alloc(a, sizeof *c);
    c->arena = a;
    c->opts = opts;
    c->diag_out = diag_out;
    c->deps = vec_new(c);
    ops_init(c);
    return c;
}

void ctx_free(Ctx *c)
{
    if (c)
        arena_free(c->arena);
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

typedef bool (*GraphPass)(Ctx *c);

static bool run_graph_pass(Ctx *c, const char *name, GraphPass pass)
{
    if (!pass(c))
        return false;
    if (c->opts->dump_pass && strcmp(c->opts->dump_pass, name) == 0) {
        printf("; IR after %s\n", name);
        ir_dump(c, stdout);
    }
    return true;
}

/* The output the command line asked for: C (the default), the graph for
 * Graphviz (--emit=dot), or nothing (--explain without -o). */
static bool emit(Ctx *c, Output *out)
{
    switch (c->opts->emit) {
    case EMIT_DOT:
        return emit_dot(c, out);
    case EMIT_CHECK:
        return emit_check(c, out);
    case EMIT_NOTHING:
        return true;
    default:
        return emit_c(c, out);
    }
}

/* A model with a train section gets a second graph: lowered again, then
 * differentiated, optimized and planned in its own arena, for the
 * training step; c->graph stays the inference graph. */
static bool compile_training(Ctx *c)
{
    if (!c->train)
        return true;
    Graph *inference = c->graph;
    c->graph = NULL;
    bool ok = run_graph_pass(c, "lower", lower) && run_graph_pass(c, "autodiff", autodiff) &&
              run_graph_pass(c, "optimize", optimize) && run_graph_pass(c, "fuse", fuse) &&
              run_graph_pass(c, "memplan", memplan);
    c->train_graph = c->graph;
    c->graph = inference;
    return ok;
}

int ampc_compile(Ctx *c, SourceFile *src, Output *out)
{
    c->main_file = src;
    bool ok = parse_file(c, src)
           && expand(c)
           && resolve(c)
           && typecheck(c)
           && load_policy(c)
           && autocast(c)
           && read_training(c)
           && run_graph_pass(c, "lower", lower)
           && run_graph_pass(c, "optimize", optimize)
           && run_graph_pass(c, "fuse", fuse)
           && run_graph_pass(c, "memplan", memplan)
           && compile_training(c)
           && explain(c)
           && emit(c, out);
    if (c->io_error)
        return EXIT_IO;
    return ok && c->nerrors == 0 ? EXIT_OK : EXIT_INPUT_ERROR;
}
