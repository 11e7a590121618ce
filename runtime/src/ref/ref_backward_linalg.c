/*
 * ref_backward_linalg.c - reference gradient kernels of
 * amprt/backward_linalg.h: triangular_solve's dA, cholesky, eigh and the
 * SVD (values and vectors), pinverse, qr,
 * lu_factor, lu_solve, householder_product and ormqr, f32 and f64.
 *
 * Formulas are PyTorch's autograd ones (its derivatives of the same ops).
 * Bodies are in ref_backward_linalg.inc, instantiated by ref_acc_twice.h;
 * f32 uses the float instantiation and f64 the double one, so every kernel
 * computes in T, as the forward linear algebra does (and LAPACK, which
 * PyTorch's forward and backward call, does).
 */
#include <math.h>

#include "amprt_internal.h"

#define REF_PART "ref_backward_linalg.inc"
#include "ref_acc_twice.h"

/* The wrappers generated from the kernels' entries (ref_wrapper.h), for
 * every dtype each entry lists. */
#define REF_OWNS_triangular_solve_backward REF_OWNED
#define REF_OWNS_cholesky_backward REF_OWNED
#define REF_OWNS_eigh_backward REF_OWNED
#define REF_OWNS_svdvals_backward REF_OWNED
#define REF_OWNS_pinverse_backward REF_OWNED
#define REF_OWNS_qr_backward REF_OWNED
#define REF_OWNS_svd_backward REF_OWNED
#define REF_OWNS_lu_factor_backward REF_OWNED
#define REF_OWNS_lu_solve_backward REF_OWNED
#define REF_OWNS_householder_product_backward REF_OWNED
#define REF_OWNS_ormqr_backward REF_OWNED
AMP_FOR_EACH_KERNEL(REF_WRAPPER)
