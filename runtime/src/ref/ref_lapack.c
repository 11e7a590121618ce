/*
 * ref_lapack.c - reference linear algebra (f32 and f64): LU, inverse,
 * solves, Cholesky, QR, SVD, eigh, pinverse.  The bodies are in
 * ref_lapack.inc, instantiated once in float and once in double; each
 * amp_ref_<op>_<T> forwards to its instance.  Results on failure (singular,
 * not positive definite, non-finite) are documented in amprt/linalg.h.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "amprt_internal.h"

#define REF_PART "ref_lapack.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_inv_ex REF_OWNED_TYPED
#define REF_OWNS_cholesky_ex REF_OWNED_TYPED
#define REF_OWNS_cholesky_inverse REF_OWNED_TYPED
#define REF_OWNS_cholesky_solve REF_OWNED_TYPED
#define REF_OWNS_lu_factor REF_OWNED_TYPED
#define REF_OWNS_solve REF_OWNED_TYPED
#define REF_OWNS_triangular_solve REF_OWNED_TYPED
#define REF_OWNS_qr REF_OWNED_TYPED
#define REF_OWNS_svd REF_OWNED_TYPED
#define REF_OWNS_eigh REF_OWNED_TYPED
#define REF_OWNS_pinverse REF_OWNED_TYPED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
