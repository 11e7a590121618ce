/* context.c: a compilation's context: its options, its arena, its op
 * table, and the model as the passes fill it in. */
#include "core.h"

Ctx *ctx_new(const Options *opts, FILE *diag_out)
{
    literal_init();
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
