/* back.h: the back end's entry points.  Each reads the planned IR
 * (middle.h) and nothing of the syntax tree.
 *
 *   emit_c     model.c + model.h                      (emit_c.c and the emit_*.c files)
 *   explain    --explain: every decision, as text or JSON (explain.c)
 *   emit_dot   --emit=dot: the graph for Graphviz      (dot.c)
 *   emit_check --emit=check: the model, its f64 reference and a harness (check.c)
 *   emit_runner --emit=main: the model and a main() running it on files (runner.c)
 */
#ifndef AMPC_BACK_H
#define AMPC_BACK_H

#include "middle.h"

typedef struct Output {
    Buf c_file, h_file;
    const char *header_name; /* what the .c #includes */
} Output;
bool emit_c(Ctx *c, Output *out);         /* emit_c.c */
const char *model_prefix(Ctx *c);         /* emit_c.c: --prefix, or the model name in lower case */
bool explain(Ctx *c);                     /* explain.c: a no-op without --explain */
bool emit_dot(Ctx *c, Output *out);       /* dot.c: the graph, into out->c_file */
/* check.c, --emit=check: the model's C (`model`, from emit_c), the C of its
 * f64 reference evaluation (`ref`, compiled by the driver in its own
 * context `rc`) and a harness comparing them, as one C program in
 * out->c_file.  The harness takes real tensors only: check_harness_supports
 * reports a model it cannot take. */
bool check_harness_supports(Ctx *c);
bool emit_check(Ctx *c, const Output *model, Ctx *rc, const Output *ref, Output *out);
/* runner.c, --emit=main: the model's C (`model`, from emit_c) and a main()
 * reading the weights and inputs from files and writing the outputs */
bool emit_runner(Ctx *c, const Output *model, Output *out);

#endif
