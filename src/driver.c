/* driver.c: the pipeline, in one function, and the compilation context.
 *
 * ampc_compile runs each pass in order and stops at the first that reports
 * errors (a pass may report several).  --dump=PASS prints the IR after a
 * graph pass.  Nothing here touches output files: main.c writes them, and
 * only when this returns EXIT_OK.
 */
#include "ampc.h"

#include <stdlib.h>
#include <string.h>

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

/* --emit=check: the model's C, then the same source compiled again with
 * every floating value in f64 and autocast's decisions overridden (the
 * reference evaluation), then the harness comparing the two. */
static bool emit_check_program(Ctx *c, Output *out)
{
    Output model = {0};
    if (!check_harness_supports(c) || !emit_c(c, &model))
        return false;
    Options ropts = *c->opts;
    ropts.reference_f64 = true;
    ropts.prefix = arena_printf(c->arena, "%s_ref", model_prefix(c));
    ropts.emit = EMIT_C;
    ropts.explain = EXPLAIN_NONE;
    ropts.no_warnings = true;
    ropts.line_directives = false;
    ropts.dump_pass = NULL;
    Ctx *rc = ctx_new(&ropts, c->diag_out);
    SourceFile *rsrc = source_from_text(rc, c->main_file->name, c->main_file->text, c->main_file->len);
    Output ref = {0};
    bool ok = ampc_compile(rc, rsrc, &ref) == EXIT_OK;
    if (!ok)
        error_plain(c, "the f64 reference evaluation of the model did not compile (reported above)");
    else
        ok = emit_check(c, &model, rc, &ref, out);
    ctx_free(rc);
    return ok;
}

/* The output the command line asked for: C (the default), the graph for
 * Graphviz (--emit=dot), a checking program (--emit=check), a program
 * running the model on files (--emit=main), or nothing (--explain without
 * -o). */
static bool emit(Ctx *c, Output *out)
{
    switch (c->opts->emit) {
    case EMIT_DOT:
        return emit_dot(c, out);
    case EMIT_CHECK:
        return emit_check_program(c, out);
    case EMIT_MAIN: {
        Output model = {0};
        return emit_c(c, &model) && emit_runner(c, &model, out);
    }
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
           && load_policy(c)   /* typecheck writes the composites autocast will see as their inner ops */
           && typecheck(c)
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
