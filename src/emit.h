/* emit.h: what the C code generator's two files share.
 *
 * emit_c.c writes the files (header, entry points, weights loader, the
 * forward function's frame); emit_ops.c writes one kernel call per node. */
#ifndef AMPC_EMIT_H
#define AMPC_EMIT_H

#include "ampc.h"

typedef struct Emitter {
    Ctx *c;
    Buf *out;
    const char *prefix; /* mlp */
    const char *PREFIX; /* MLP */
    StrMap *used;       /* C names taken in the function being emitted */
    StrMap *next_suffix;/* base name -> the next _N to try for it */
    const char **cname; /* per value id: its C expression */
    const char *dim_params; /* "B, T" for macros, "" with no dims */
    const char *macro_names[MAX_SYMS]; /* "(B)": dims as macro arguments */
    bool uses_rc;       /* some kernel returns a status the forward checks */
} Emitter;

/* emit_c.c */
const char *c_ident(Emitter *e, const char *base);
const char *poly_c(Emitter *e, const Poly *p);
const char *numel_c(Emitter *e, const Shape *s);
const char *type_comment(Emitter *e, const Type *t);
const char *dims_product(Emitter *e, const Shape *s, int from, int to);
const char *base_name(const char *path);
const char *kernel(Emitter *e, const char *op, DType t);
const char *scalar_c(Emitter *e, Node *n);

/* emit_ops.c: the call(s) computing node n into y (its output's C name).
 * Reports (and emits nothing) for an op or dtype without a kernel. */
void emit_op(Emitter *e, Node *n, const char *y);
/* Whether the forward needs `int rc` for node n's kernel status. */
bool op_returns_status(const Node *n);

#endif
