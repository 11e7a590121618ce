/* ampc.h: the compiler as one call.
 *
 * The pipeline (driver.c, ampc_compile) runs the front end (front.h), the
 * middle end (middle.h) and the back end (back.h) in order; core.h holds
 * what they share.  main.c is the command line around it.
 */
#ifndef AMPC_H
#define AMPC_H

#include "back.h"

/* driver.c: the whole pipeline.  Returns an EXIT_* code; on EXIT_OK, `out`
 * holds the generated files (not yet written anywhere). */
int ampc_compile(Ctx *c, SourceFile *src, Output *out);

#endif
