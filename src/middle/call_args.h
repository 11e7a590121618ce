/* call_args.h: a typechecked call's non-tensor arguments, read from the
 * syntax tree (typecheck.c).  Private to the type rules (typecheck.c,
 * types_complex.c) and to lower.c, which turns them into a node's attributes:
 * after lowering, passes read those instead
 * (attr_int and the others in middle.h), so the back end never includes
 * this header.
 */
#ifndef AMPC_CALL_ARGS_H
#define AMPC_CALL_ARGS_H

#include "middle.h"

/* The argument written for parameter `name`, or NULL when defaulted. */
Expr *arg_named(Expr *call, const char *name);
/* The value written, or dflt (typecheck has validated it). */
int64_t arg_int(Ctx *c, Expr *call, const char *name, int64_t dflt);
bool arg_bool(Ctx *c, Expr *call, const char *name, bool dflt);
const char *arg_str(Ctx *c, Expr *call, const char *name, const char *dflt);
double arg_number(Ctx *c, Expr *call, const char *name, const char *dflt, DType t);
int arg_int_list(Ctx *c, Expr *call, const char *name, int64_t *out); /* int... varargs */

/* types_complex.c: an fft call's transformed dims and given lengths (-1: the
 * input's), and an stft call's frames; lower.c keeps them as attributes. */
int fft_plan_dims(Ctx *c, Expr *call, int ndim, int *dims, int64_t *lens);
bool stft_params(Ctx *c, Expr *call, int64_t *n_fft, int64_t *hop, int64_t *win, int64_t *padded, bool *onesided);

#endif
