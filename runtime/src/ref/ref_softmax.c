/*
 * ref_softmax.c - reference softmax and log_softmax along one axis.
 *
 * Layout: the input is [outer, dim, inner] in row-major order; the reduced
 * axis has length dim and stride inner, and each of the outer * inner
 * positions is reduced independently.
 *
 * Numerics follow PyTorch: subtract the row max m, then
 *     softmax     y = exp(x - m) / sum exp(x - m)
 *     log_softmax y = (x - m) - log(sum exp(x - m))
 * all in f32 (in f64 for f64), with one rounding per output. exp is the
 * runtime's own amp_expf (amp_expf.h; libm's exp for f64), and the max
 * and the sum are taken in AMP_ROW_LANES lanes, then folded (amp_mathf.h):
 * the operations of the vector softmax of x86/avx512_rows.c and
 * avx2_rows.c, which agree with this bit for bit (log_softmax too, for
 * a future vector form). exp(x - m) <= 1
 * never overflows, and the sum is at least 1 (the max term) unless the row
 * has no finite maximum: a row of -inf gives -inf - -inf = NaN everywhere, as PyTorch does,
 * and a NaN or +inf makes the whole row NaN.
 *
 * exp(x - m) is recomputed in the last pass rather than stored in y, which
 * would round it to the storage dtype before the division. Every pass reads
 * x[d] before writing y[d], so y may alias x.
 *
 * The body is in ref_softmax.inc, compiled once computing in float (f32,
 * bf16, f16) and once in double (f64).
 */
#include <math.h>

#include "amprt_internal.h"
#include "amp_mathf.h"

#define REF_PART "ref_softmax.inc"
#include "ref_acc_twice.h"

/* The wrappers, from amprt.h's entries (ref_wrapper.h): one body, told
 * apart by its log flag. */
#define REF_OWNS_softmax REF_SHARES(softmax, 0)
#define REF_OWNS_log_softmax REF_SHARES(softmax, 1)
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
