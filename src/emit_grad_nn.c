/* emit_grad_nn.c: gradient rules of the convolutions outside conv1d-3d, indexing writes, sampling, unpooling, recurrent cells and CTC.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  The four
 * entry points are described in emit.h.
 */
#include "emit.h"

bool grad_rule_nn(Ctx *c, const Node *n, const char **why)
{
    (void)c, (void)n, (void)why;
    return false;
}

bool grad_input_nn(Ctx *c, const Node *n, int k, const char **why)
{
    (void)c, (void)n, (void)k, (void)why;
    return false;
}

bool grad_scratch_nn(Ctx *c, const Node *b, Type *t)
{
    (void)c, (void)b, (void)t;
    return false;
}

bool emit_grad_nn(Emitter *e, Node *b)
{
    (void)e, (void)b;
    return false;
}
