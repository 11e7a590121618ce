/* emit_grad_more.c: gradient rules of the other ops: activations, reductions, distances and margin losses.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  The four
 * entry points are described in emit.h.
 */
#include "emit.h"

bool grad_rule_more(Ctx *c, const Node *n, const char **why)
{
    (void)c, (void)n, (void)why;
    return false;
}

bool grad_input_more(Ctx *c, const Node *n, int k, const char **why)
{
    (void)c, (void)n, (void)k, (void)why;
    return false;
}

bool grad_scratch_more(Ctx *c, const Node *b, Type *t)
{
    (void)c, (void)b, (void)t;
    return false;
}

bool emit_grad_more(Emitter *e, Node *b)
{
    (void)e, (void)b;
    return false;
}
