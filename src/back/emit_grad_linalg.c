/* emit_grad_linalg.c: gradient rules of the linear algebra ops (inverse, solves, cholesky, qr, svd, eigh, ...).
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 *
 * The rules are PyTorch's (its derivatives of the same ops), so gradients
 * agree with autograd's:
 *   chain_matmul, multi_dot  each operand's gradient is the contraction of
 *       dY with the other operands (amp_contract, as their forward);
 *   inverse, inv_ex          dA = -Y^T dY Y^T (two gemms);
 *   linalg_solve             dB = A^-T dY (a solve with A^T), dA = -dB X^T
 *       (X A = B: dB = dY A^-T, dA = -X^T dB);
 *   tensorinv, tensorsolve   those of inverse and solve, on the operands
 *       viewed as one square matrix (and vectors), as their forward;
 *   triangular_solve         dB = op(A)^-T dY (a triangular solve with the
 *       transpose flag flipped), dA = -dB X^T on A's triangle
 *       (amp_triangular_solve_backward);
 *   cholesky family          amp_cholesky_backward: L^-T Phi L^-1;
 *   cholesky_inverse         dL = -(Y (dY + dY^T) Y) L (upper: -U (...));
 *   cholesky_solve           dB = A^-1 dY (a cholesky_solve), dL = -(S) L
 *       (upper: -U S), S = dB X^T + X dB^T;
 *   eigvalsh, eigh's values  V diag(dw) V^T from a recomputed eigh;
 *   svdvals, nuclear_norm    U diag(ds) Vh from a recomputed reduced SVD;
 *   pinverse                 amp_pinverse_backward (A of full rank);
 *   linalg_lstsq             as X = pinv(A) B (A of full rank, where the
 *       two agree): dA = pinverse's gradient for dP = dX B^T, dB = P^T dX;
 *   qr, linalg_qr            through Q (A tall or square, not mode "r"):
 *       amp_qr_backward on a recomputed reduced QR;
 *   svd, linalg_svd          through U (reduced, or square): amp_svd_backward
 *       on a recomputed reduced SVD;
 *   linalg_lu_factor         square A: amp_lu_factor_backward on a
 *       recomputed LU and its pivots;
 *   lu_solve                 amp_lu_solve_backward: dB = A^-T dX, and dLU
 *       onto the factors' triangles;
 *   householder_product, orgqr, ormqr  amp_householder_product_backward,
 *       amp_ormqr_backward (reverse mode through the reflections);
 *   linalg_matrix_exp        the adjoint of the Frechet derivative: the
 *       upper right block of exp([[A^T, dY], [0, A^T]]).
 * The ops that read one triangle of a symmetric input (cholesky, eigh) get
 * autograd's symmetric gradient, not one confined to that triangle.
 * Matrices have a fixed size (the forward kernels require it); the batch may
 * be symbolic.  Only a node's inputs and first result outlive the forward
 * in the memory plan, so what else a rule needs (pivots, R, the singular
 * vectors) is recomputed into its scratch by the same forward kernel (so
 * with the forward's signs).  The gradients through the other results
 * (eigh's eigenvectors, the SVDs' S and Vh or V, qr's R) reach the
 * rules as dy_more, each NULL when none flows, as is dy when only the
 * others have one: the backward kernels take NULL as a zero gradient.
 */
#include "emit.h"

#include <amprt.h>
#include <string.h>

/* The gradient of the forward's result more_out[r], or "NULL". */
static const char *dy_more_of(Emitter *e, Node *b, int r)
{
    return b->dy_more[r] ? e->cname[b->dy_more[r]->id] : "NULL";
}

/* ---- the emitters --------------------------------------------------------------- */

/* The scratch as a T pointer, plus `offset` elements (C text). */
static const char *scratch_at(Emitter *e, Node *b, DType t, const char *offset)
{
    return arena_printf(e->c->arena, "((%s *)(void *)%s + (%s))", dtype_c_type(t), e->cname[b->scratch->id], offset);
}

static const char *batch_c(Emitter *e, const Shape *s) { return dims_product(e, s, 0, s->ndim - 2); }

/* A gemm with alpha (the negated products below), strides as C text. */
static void gemm_alpha(Emitter *e, DType t, const char *batch, const char *M, const char *N, const char *K,
                       const char *A, const char *const a[3], const char *B, const char *const bs[3], double alpha,
                       const char *y)
{
    Gemm g = {.batch = batch, .M = M, .N = N, .K = K, .A = A, .B = B, .alpha = alpha, .beta = 0};
    for (int i = 0; i < 3; i++)
        g.a[i] = a[i], g.b[i] = bs[i];
    emit_gemm_call(e, t, &g, y);
}

/* chain_matmul, multi_dot: operand p of the chain has the dims (c[p],
 * c[p + 1]) of an index chain c (c[0] the rows of the first operand, c[n]
 * the columns of the last, absent (-1) for multi_dot's vector ends), dY has
 * (c[0], c[n]).  Operand o's gradient contracts dY with the others over
 * every index but o's own. */
static void grad_multi_dot(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    int nops = 0;
    for (int k = 0; k < f->nin; k++)
        nops += f->in[k] != NULL;
    if (nops == 1) {
        grad_copy(e, grad_of(e, b, 0), dy_of(e, b), xs_of(b, 0));
        return;
    }
    if (nops > 4) {
        unsupported(e, f, "the gradient of a chain of more than four matrices is not supported yet");
        return;
    }
    const char *size[6];
    int chain[6], nidx = 0;
    const Shape *first = xs_of(b, 0), *last = xs_of(b, nops - 1);
    chain[0] = first->ndim == 2 ? nidx++ : -1;
    if (chain[0] >= 0)
        size[chain[0]] = poly_c(e, first->dims[0]);
    for (int p = 1; p < nops; p++) {
        const Shape *s = xs_of(b, p - 1);
        chain[p] = nidx++;
        size[chain[p]] = poly_c(e, s->dims[s->ndim - 1]);
    }
    chain[nops] = last->ndim == 2 ? nidx++ : -1;
    if (chain[nops] >= 0)
        size[chain[nops]] = poly_c(e, last->dims[1]);
    for (int o = 0; o < nops; o++) {
        const char *g = grad_of(e, b, o);
        if (!g)
            continue;
        /* operand o's indices first (the output), then the summed ones */
        int renum[6], next = 0;
        for (int i = 0; i < nidx; i++)
            renum[i] = -1;
        for (int j = o; j <= o + 1; j++)
            if (chain[j] >= 0)
                renum[chain[j]] = next++;
        int n_out = next;
        for (int i = 0; i < nidx; i++)
            if (renum[i] < 0)
                renum[i] = next++;
        open_block(e);
        buf_printf(e->out, "        amp_contract_desc d = {0};\n");
        buf_printf(e->out, "        const %s *operands[%d];\n", dtype_c_type(t), nops);
        buf_printf(e->out, "        d.n_index = %d;\n        d.n_out = %d;\n        d.n_operands = %d;\n", nidx, n_out,
                   nops);
        for (int i = 0; i < nidx; i++)
            buf_printf(e->out, "        d.size[%d] = %s;\n", renum[i], size[i]);
        /* slot 0 is dY, then every other operand; a 2-D tensor's first
         * index strides by its columns, its last by 1 */
        for (int p = -1, slot = 0; p < nops; p++) {
            if (p == o)
                continue;
            int i0 = p < 0 ? chain[0] : chain[p], i1 = p < 0 ? chain[nops] : chain[p + 1];
            buf_printf(e->out, "        operands[%d] = %s;\n", slot, p < 0 ? dy_of(e, b) : x_of(e, b, p));
            if (i0 >= 0)
                buf_printf(e->out, "        d.stride[%d][%d] = %s;\n", slot, renum[i0], i1 >= 0 ? size[i1] : "1");
            if (i1 >= 0)
                buf_printf(e->out, "        d.stride[%d][%d] = 1;\n", slot, renum[i1]);
            slot++;
        }
        buf_printf(e->out, "        %s(&d, operands, %s);\n", kernel(e, "contract", t), g);
        close_block(e);
    }
}

/* inverse, inv_ex: dA = -Y^T dY Y^T, Y = A^-1. */
static void grad_inverse(Emitter *e, Node *b)
{
    DType t = b->fwd->out->type.dtype;
    const Shape *s = ys_of(b);
    const char *n, *batch;
    if (b->fwd->op->id == OP_LINALG_TENSORINV) { /* A viewed as [p, p], p the product of its dims from ind */
        const Shape *sa = xs_of(b, 0);
        n = dims_product(e, sa, (int)attr_int(b->fwd, "ind", 2), sa->ndim);
        batch = "1";
    } else {
        n = poly_c(e, s->dims[s->ndim - 1]);
        batch = batch_c(e, s);
    }
    const char *nn = mul_c(e, n, n);
    const char *tmp = scratch_buffer(e, b, t, 0);
    /* tmp = Y^T dY: Y^T[m][k] = Y[k n + m] */
    const char *yt[3] = {nn, "1", n}, *plain[3] = {nn, n, "1"};
    gemm_alpha(e, t, batch, n, n, n, y_of(e, b), yt, dy_of(e, b), plain, 1, tmp);
    /* dA = -tmp Y^T */
    gemm_alpha(e, t, batch, n, n, n, tmp, plain, y_of(e, b), yt, -1, grad_of(e, b, 0));
}

/* A^T of [batch, n, n] a into at. */
static void transpose_into(Emitter *e, const char *batch, const char *n, const char *a, const char *at)
{
    const char *nn = mul_c(e, n, n);
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = {%s, %s, %s};\n", batch, n, n);
    buf_printf(e->out, "        const int64_t x_stride[] = {%s, 1, %s};\n", nn, n);
    buf_printf(e->out, "        const int64_t y_stride[] = {%s, %s, 1};\n", nn, n);
    buf_printf(e->out, "        amp_copy_strided(sizeof *(%s), 3, shape, %s, x_stride, %s, y_stride);\n", at, a, at);
    close_block(e);
}

/* linalg_solve: A X = B (left) or X A = B. */
static void grad_solve(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sa = xs_of(b, 0), *sb = xs_of(b, 1);
    bool tensor = f->op->id == OP_LINALG_TENSORSOLVE;
    bool left = tensor || attr_bool(f, "left", true);
    int nd = sa->ndim;
    /* tensorsolve: A viewed as [p, p], p = numel(X), and B, X as [p, 1] */
    const char *n = tensor ? numel_c(e, ys_of(b)) : poly_c(e, sa->dims[nd - 1]), *batch = tensor ? "1" : batch_c(e, sa);
    const char *k = tensor ? "1" : poly_c(e, sb->dims[nd - (left ? 1 : 2)]), *nk = mul_c(e, n, k);
    const char *at = scratch_at(e, b, t, "0");
    const char *db_tmp = scratch_at(e, b, t, numel_c(e, sa));
    const char *info = arena_printf(e->c->arena, "((int32_t *)(void *)%s)",
                                    scratch_at(e, b, t, arena_printf(e->c->arena, "%s + %s", numel_c(e, sa),
                                                                     numel_c(e, sb))));
    const char *work = arena_printf(e->c->arena, "(%s + 2 * (%s))", info, batch);
    const char *db = grad_of(e, b, 1) ? grad_of(e, b, 1) : db_tmp;
    /* dB = A^-T dY (left), dY A^-T (right): the same solve with A^T; A^T is
     * singular exactly when A is, which the forward has refused */
    transpose_into(e, batch, n, x_of(e, b, 0), at);
    buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s, %s, %s);\n", kernel(e, "solve", t), batch, n, k, left, at,
               dy_of(e, b), db, info, work);
    if (!grad_of(e, b, 0))
        return;
    if (left) { /* dA [n, n] = -dB [n, k] X^T: X^T[p][j] = X[j k + p] */
        const char *a_st[3] = {nk, k, "1"}, *b_st[3] = {nk, "1", k};
        gemm_alpha(e, t, batch, n, n, k, db, a_st, y_of(e, b), b_st, -1, grad_of(e, b, 0));
    } else { /* dA [n, n] = -X^T dB, X and dB [k, n]: X^T[i][p] = X[p n + i] */
        const char *a_st[3] = {nk, "1", n}, *b_st[3] = {nk, n, "1"};
        gemm_alpha(e, t, batch, n, n, k, y_of(e, b), a_st, db, b_st, -1, grad_of(e, b, 0));
    }
}

/* triangular_solve(B, A): X = op(A)^-1 B. */
static void grad_triangular_solve(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sb = xs_of(b, 0), *sa = xs_of(b, 1);
    int nd = sa->ndim;
    const char *n = poly_c(e, sa->dims[nd - 1]), *k = poly_c(e, sb->dims[nd - 1]), *batch = batch_c(e, sa);
    int upper = attr_bool(f, "upper", true), transpose = attr_bool(f, "transpose", false);
    int unit = attr_bool(f, "unitriangular", false);
    const char *db = grad_of(e, b, 0) ? grad_of(e, b, 0) : scratch_at(e, b, t, "0");
    /* dB = op(A)^-T dY */
    buf_printf(e->out, "    %s(%s, %s, %s, %d, %d, %d, %s, %s, %s);\n", kernel(e, "triangular_solve", t), batch, n, k,
               upper, !transpose, unit, dy_of(e, b), x_of(e, b, 1), db);
    if (grad_of(e, b, 1))
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %d, %d, %s, %s, %s);\n", kernel(e, "triangular_solve_backward", t),
                   batch, n, k, upper, transpose, unit, y_of(e, b), db, grad_of(e, b, 1));
}

static void grad_cholesky(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *s = xs_of(b, 0);
    buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, %s);\n", kernel(e, "cholesky_backward", f->out->type.dtype),
               batch_c(e, s), poly_c(e, s->dims[s->ndim - 1]), attr_bool(f, "upper", false), y_of(e, b),
               dy_of(e, b), grad_of(e, b, 0));
}

/* dst = src + src^T, for [batch, n, n] src, through tmp. */
static void add_transpose(Emitter *e, DType t, const char *batch, const char *n, const char *src, const char *tmp,
                          const char *dst)
{
    transpose_into(e, batch, n, src, tmp);
    buf_printf(e->out, "    %s((size_t)(%s) * (%s) * (%s), %s, %s, %s);\n", kernel(e, "add", t), batch, n, n, src, tmp,
               dst);
}

/* -S L (lower) or -U S (upper), [batch, n, n], into g. */
static void neg_times_factor(Emitter *e, DType t, const char *batch, const char *n, bool upper, const char *sym,
                             const char *l, const char *g)
{
    const char *nn = mul_c(e, n, n), *plain[3] = {nn, n, "1"};
    if (upper)
        gemm_alpha(e, t, batch, n, n, n, l, plain, sym, plain, -1, g);
    else
        gemm_alpha(e, t, batch, n, n, n, sym, plain, l, plain, -1, g);
}

/* cholesky_inverse(L): Y = (L L^T)^-1. */
static void grad_cholesky_inverse(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = ys_of(b);
    const char *n = poly_c(e, s->dims[s->ndim - 1]), *nn = mul_c(e, n, n), *batch = batch_c(e, s);
    const char *t0 = scratch_buffer(e, b, t, 0), *t1 = scratch_buffer(e, b, t, 1), *plain[3] = {nn, n, "1"};
    add_transpose(e, t, batch, n, dy_of(e, b), t0, t1); /* t1 = dY + dY^T */
    gemm_alpha(e, t, batch, n, n, n, y_of(e, b), plain, t1, plain, 1, t0);
    gemm_alpha(e, t, batch, n, n, n, t0, plain, y_of(e, b), plain, 1, t1);
    neg_times_factor(e, t, batch, n, attr_bool(f, "upper", false), t1, x_of(e, b, 0), grad_of(e, b, 0));
}

/* cholesky_solve(B, L): X = (L L^T)^-1 B, B and X [n, k]. */
static void grad_cholesky_solve(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sb = xs_of(b, 0), *sl = xs_of(b, 1);
    int nd = sl->ndim;
    bool upper = attr_bool(f, "upper", false);
    const char *n = poly_c(e, sl->dims[nd - 1]), *k = poly_c(e, sb->dims[nd - 1]), *batch = batch_c(e, sl);
    const char *nk = mul_c(e, n, k);
    const char *db = grad_of(e, b, 0) ? grad_of(e, b, 0) : scratch_at(e, b, t, "0");
    const char *c0 = scratch_at(e, b, t, numel_c(e, sb));
    const char *c1 = scratch_at(e, b, t, arena_printf(e->c->arena, "%s + %s", numel_c(e, sb), numel_c(e, sl)));
    buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s);\n", kernel(e, "cholesky_solve", t), batch, n, k, upper,
               dy_of(e, b), x_of(e, b, 1), db);
    if (!grad_of(e, b, 1))
        return;
    /* c0 = dB X^T: X^T[p][j] = X[j k + p] */
    const char *a_st[3] = {nk, k, "1"}, *b_st[3] = {nk, "1", k};
    gemm_alpha(e, t, batch, n, n, k, db, a_st, y_of(e, b), b_st, 1, c0);
    add_transpose(e, t, batch, n, c0, c1, c0);
    neg_times_factor(e, t, batch, n, upper, c0, x_of(e, b, 1), grad_of(e, b, 1));
}

/* eigvalsh, and eigh: the eigenvectors again (the forward may not have
 * kept them), then V (diag(dw) + F o skew(V^T dV)) V^T. */
static void grad_eigh(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int64_t n = 0, m;
    fixed_matrix(s, &m, &n);
    const char *batch = batch_c(e, s), *nc = i64_c(e, n);
    const char *bn = mul_c(e, batch, nc), *bnn = mul_c(e, bn, nc);
    const char *w = scratch_at(e, b, t, "0"), *v = scratch_at(e, b, t, bn);
    const char *bwork = scratch_at(e, b, t, arena_printf(e->c->arena, "%s + %s", bn, bnn));
    const char *work = scratch_at(e, b, t, arena_printf(e->c->arena, "%s + %s + %lld", bn, bnn,
                                                         (long long)AMP_EIGH_BACKWARD_WORK_ELEMS(n)));
    bool upper = strcmp(attr_str(f, "UPLO", "L"), "U") == 0;
    buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, %s, %s);\n", kernel(e, "eigh", t), batch, nc, upper, x_of(e, b, 0),
               w, v, work);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "eigh_backward", t), batch, nc, w, v,
               dy_of(e, b), f->op->id == OP_LINALG_EIGH ? dy_more_of(e, b, 0) : "NULL", grad_of(e, b, 0), bwork);
}

/* svdvals, nuclear_norm: the reduced SVD again, then U diag(ds) Vh; the
 * nuclear norm's ds is dY for every singular value. */
static void grad_svdvals(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int64_t m = 0, n = 0;
    fixed_matrix(s, &m, &n);
    int64_t k = m < n ? m : n;
    const char *batch = batch_c(e, s);
    const char *u = scratch_at(e, b, t, "0");
    const char *sv = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k)));
    const char *vh = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k + k)));
    const char *ds = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k + k + k * n)));
    const char *work = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k + 2 * k + k * n)));
    buf_printf(e->out, "    %s(%s, %lld, %lld, 0, 1, %s, %s, %s, %s, %s);\n", kernel(e, "svd", t), batch, (long long)m,
               (long long)n, x_of(e, b, 0), u, sv, vh, work);
    if (is_nuclear_norm(f)) {
        /* every singular value of matrix i gets dY[i] */
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = {%s, %lld};\n", batch, (long long)k);
        buf_printf(e->out, "        const int64_t x_stride[] = {1, 0};\n        const int64_t y_stride[] = {%lld, 1};\n",
                   (long long)k);
        buf_printf(e->out, "        amp_copy_strided(sizeof *(%s), 2, shape, %s, x_stride, %s, y_stride);\n", ds,
                   dy_of(e, b), ds);
        close_block(e);
    } else {
        ds = dy_of(e, b);
    }
    buf_printf(e->out, "    %s(%s, %lld, %lld, %s, %s, %s, %s);\n", kernel(e, "svdvals_backward", t), batch,
               (long long)m, (long long)n, u, vh, ds, grad_of(e, b, 0));
}

static void grad_pinverse(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *s = xs_of(b, 0);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "pinverse_backward", f->out->type.dtype),
               batch_c(e, s), poly_c(e, s->dims[s->ndim - 2]), poly_c(e, s->dims[s->ndim - 1]), x_of(e, b, 0),
               y_of(e, b), dy_of(e, b), grad_of(e, b, 0), scratch_at(e, b, f->out->type.dtype, "0"));
}

/* linalg_lstsq(A, B): A [m, n], B [m, k] (or [m]), X [n, k]. */
static void grad_lstsq(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sa = xs_of(b, 0), *sb = xs_of(b, 1);
    int nd = sa->ndim;
    int64_t m = 0, n = 0;
    fixed_matrix(sa, &m, &n);
    const char *batch = batch_c(e, sa), *mc = i64_c(e, m), *nc = i64_c(e, n);
    const char *k = sb->ndim == nd - 1 ? "1" : poly_c(e, sb->dims[nd - 1]);
    const char *mn = i64_c(e, m * n), *mk = mul_c(e, mc, k), *nk = mul_c(e, nc, k);
    const char *pinv = scratch_at(e, b, t, "0"), *dp = scratch_at(e, b, t, numel_c(e, sa));
    const char *pwork = scratch_at(e, b, t, arena_printf(e->c->arena, "2 * (%s)", numel_c(e, sa)));
    const char *bwork = scratch_at(e, b, t, arena_printf(e->c->arena, "2 * (%s) + %lld", numel_c(e, sa),
                                                          (long long)(AMP_PINVERSE_WORK_BYTES(m, n, dtype_size(t)) /
                                                                      (size_t)dtype_size(t))));
    /* the same rcond pinverse defaults to: only exact zeros dropped, as the
     * full-rank A this gradient assumes has none */
    buf_printf(e->out, "    %s(%s, %s, %s, 1e-15, %s, %s, %s);\n", kernel(e, "pinverse", t), batch, mc, nc,
               x_of(e, b, 0), pinv, pwork);
    if (grad_of(e, b, 0)) {
        /* dP [n, m] = dX [n, k] B^T: B^T[p][j] = B[j k + p] */
        const char *a_st[3] = {nk, k, "1"}, *b_st[3] = {mk, "1", k};
        gemm_alpha(e, t, batch, nc, mc, k, dy_of(e, b), a_st, x_of(e, b, 1), b_st, 1, dp);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "pinverse_backward", t), batch, mc, nc,
                   x_of(e, b, 0), pinv, dp, grad_of(e, b, 0), bwork);
    }
    if (grad_of(e, b, 1)) { /* dB [m, k] = P^T dX: P^T[i][p] = P[p m + i] */
        const char *a_st[3] = {mn, "1", mc}, *b_st[3] = {nk, k, "1"};
        gemm_alpha(e, t, batch, mc, k, nc, pinv, a_st, dy_of(e, b), b_st, 1, grad_of(e, b, 1));
    }
}

/* One [batch, r, c] block copy between matrices of row lengths xs and ys. */
static void copy_block(Emitter *e, const char *batch, const char *r, const char *c, const char *x, const char *xb,
                       const char *xr, const char *xc, const char *y, const char *yb, const char *yr)
{
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = {%s, %s, %s};\n", batch, r, c);
    buf_printf(e->out, "        const int64_t x_stride[] = {%s, %s, %s};\n", xb, xr, xc);
    buf_printf(e->out, "        const int64_t y_stride[] = {%s, %s, 1};\n", yb, yr);
    buf_printf(e->out, "        amp_copy_strided(sizeof *(%s), 3, shape, %s, x_stride, %s, y_stride);\n", y, x, y);
    close_block(e);
}

/* matrix_exp: dA = the [0:n, n:2n] block of exp(M), M = [[A^T, dY], [0, A^T]]
 * (the adjoint of exp's Frechet derivative at A, applied to dY). */
static void grad_matrix_exp(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    Ctx *c = e->c;
    const Shape *s = xs_of(b, 0);
    int64_t n = 0, m;
    fixed_matrix(s, &m, &n);
    const char *batch = batch_c(e, s), *nc = i64_c(e, n), *n2 = i64_c(e, 2 * n), *nn = i64_c(e, n * n);
    const char *big = i64_c(e, 4 * n * n), *total = mul_c(e, batch, big);
    const char *blk = scratch_at(e, b, t, "0"), *ex = scratch_at(e, b, t, total);
    const char *work = arena_printf(c->arena, "((double *)(void *)%s)", scratch_at(e, b, t, mul_c(e, "2", total)));
    buf_printf(e->out, "    %s((size_t)(%s), 0.0, %s);\n", kernel(e, "fill", t), total, blk);
    /* A^T on the diagonal blocks: A^T[i][j] = A[j n + i] */
    copy_block(e, batch, nc, nc, x_of(e, b, 0), nn, "1", nc, blk, big, n2);
    copy_block(e, batch, nc, nc, x_of(e, b, 0), nn, "1", nc, arena_printf(c->arena, "(%s + %lld)", blk, (long long)(2 * n * n + n)),
               big, n2);
    copy_block(e, batch, nc, nc, dy_of(e, b), nn, nc, "1", arena_printf(c->arena, "(%s + %lld)", blk, (long long)n), big, n2);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "matrix_exp", t), batch, n2, blk, ex, work);
    copy_block(e, batch, nc, nc, arena_printf(c->arena, "(%s + %lld)", ex, (long long)n), big, n2, "1", grad_of(e, b, 0), nn,
               nc);
}

/* qr, linalg_qr: Q and R again (R may not have been kept), then
 * (dQ + Q copyltu(R dR^T - dQ^T Q)) R^-T.  A [m, n], m >= n (the rule). */
static void grad_qr(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int64_t m = 0, n = 0;
    fixed_matrix(s, &m, &n);
    const char *batch = batch_c(e, s);
    const char *q = scratch_at(e, b, t, "0"), *r = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * n)));
    const char *bwork = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * n + n * n)));
    const char *work = scratch_at(e, b, t, arena_printf(e->c->arena, "%s + %lld", mul_c(e, batch, i64_c(e, m * n + n * n)),
                                                         (long long)(n * n)));
    buf_printf(e->out, "    %s(%s, %lld, %lld, 0, %s, %s, %s, %s);\n", kernel(e, "qr", t), batch, (long long)m,
               (long long)n, x_of(e, b, 0), q, r, work);
    buf_printf(e->out, "    %s(%s, %lld, %lld, %s, %s, %s, %s, %s, %s);\n", kernel(e, "qr_backward", t), batch,
               (long long)m, (long long)n, q, r, dy_of(e, b), dy_more_of(e, b, 0), grad_of(e, b, 0), bwork);
}

/* svd, linalg_svd: the reduced SVD again (the full matrices are the
 * reduced ones: the rule takes them of square matrices only), then
 * amp_svd_backward with dU, dS and dVh: linalg_svd's third result's
 * gradient, or torch.svd's dV [n, k] transposed into the scratch. */
static void grad_svd(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    int64_t m = 0, n = 0;
    fixed_matrix(s, &m, &n);
    int64_t k = m < n ? m : n;
    const char *batch = batch_c(e, s);
    const char *u = scratch_at(e, b, t, "0"), *sv = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k)));
    const char *vh = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k + k)));
    const char *dvh = dy_more_of(e, b, 1);
    bool transpose_dv = f->op->id == OP_SVD && b->dy_more[1];
    const char *end = mul_c(e, batch, i64_c(e, m * k + k + k * n + (transpose_dv ? k * n : 0)));
    if (transpose_dv) {
        /* dVh[j][l] = dV[l][j] */
        dvh = scratch_at(e, b, t, mul_c(e, batch, i64_c(e, m * k + k + k * n)));
        copy_block(e, batch, i64_c(e, k), i64_c(e, n), dy_more_of(e, b, 1), i64_c(e, n * k), "1", i64_c(e, k), dvh,
                   i64_c(e, k * n), i64_c(e, n));
    }
    const char *bwork = scratch_at(e, b, t, end);
    const char *work = scratch_at(e, b, t, arena_printf(e->c->arena, "%s + %lld", end,
                                                         (long long)AMP_SVD_BACKWARD_WORK_ELEMS(m, n)));
    buf_printf(e->out, "    %s(%s, %lld, %lld, 0, 1, %s, %s, %s, %s, %s);\n", kernel(e, "svd", t), batch, (long long)m,
               (long long)n, x_of(e, b, 0), u, sv, vh, work);
    buf_printf(e->out, "    %s(%s, %lld, %lld, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "svd_backward", t),
               batch, (long long)m, (long long)n, u, sv, vh, dy_of(e, b), dy_more_of(e, b, 0), dvh, grad_of(e, b, 0),
               bwork);
}

/* linalg_lu_factor: the pivots again (the forward's are not kept for the
 * backward: the memory plan keeps a node's inputs and first result only),
 * with an LU identical to the forward's. */
static void grad_lu_factor(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0);
    const char *batch = batch_c(e, s), *n = poly_c(e, s->dims[s->ndim - 1]);
    const char *lu = scratch_at(e, b, t, "0");
    const char *piv = arena_printf(e->c->arena, "((int32_t *)(void *)%s)", scratch_at(e, b, t, numel_c(e, s)));
    const char *info = arena_printf(e->c->arena, "(%s + (%s) * (%s))", piv, batch, n);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "lu_factor", t), batch, n, n, x_of(e, b, 0), lu,
               piv, info);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s);\n", kernel(e, "lu_factor_backward", t), batch, n, lu, piv,
               dy_of(e, b), grad_of(e, b, 0));
}

/* lu_solve(B, LU, pivots): B and X [n, k]. */
static void grad_lu_solve(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *sb = xs_of(b, 0), *sl = xs_of(b, 1);
    const char *db = grad_of(e, b, 0), *dlu = grad_of(e, b, 1);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "lu_solve_backward", t),
               batch_c(e, sl), poly_c(e, sl->dims[sl->ndim - 1]), poly_c(e, sb->dims[sb->ndim - 1]), x_of(e, b, 1),
               x_of(e, b, 2), y_of(e, b), dy_of(e, b), db ? db : "NULL", dlu ? dlu : "NULL",
               scratch_at(e, b, t, "0"));
}

static void grad_householder_product(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0), *st = xs_of(b, 1);
    const char *da = grad_of(e, b, 0), *dtau = grad_of(e, b, 1);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
               kernel(e, "householder_product_backward", t), batch_c(e, s), poly_c(e, s->dims[s->ndim - 2]),
               poly_c(e, s->dims[s->ndim - 1]), poly_c(e, st->dims[st->ndim - 1]), x_of(e, b, 0), x_of(e, b, 1),
               dy_of(e, b), da ? da : "NULL", dtau ? dtau : "NULL", scratch_at(e, b, t, "0"));
}

static void grad_ormqr(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *s = xs_of(b, 0), *st = xs_of(b, 1), *so = ys_of(b);
    int nd = s->ndim;
    const char *da = grad_of(e, b, 0), *dtau = grad_of(e, b, 1), *dc = grad_of(e, b, 2);
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %d, %d, %s, %s, %s, %s, %s, %s, %s, %s);\n",
               kernel(e, "ormqr_backward", t), batch_c(e, s), poly_c(e, s->dims[nd - 2]), poly_c(e, s->dims[nd - 1]),
               poly_c(e, st->dims[st->ndim - 1]), poly_c(e, so->dims[so->ndim - 2]), poly_c(e, so->dims[so->ndim - 1]),
               attr_bool(f, "left", true), attr_bool(f, "transpose", false), x_of(e, b, 0),
               x_of(e, b, 1), x_of(e, b, 2), dy_of(e, b), da ? da : "NULL", dtau ? dtau : "NULL", dc ? dc : "NULL",
               scratch_at(e, b, t, "0"));
}

bool emit_grad_linalg(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    OpId id = is_nuclear_norm(f) ? OP_NUCLEAR_NORM : f->op->id; /* matrix_norm(ord="nuc") too */
    if (!linalg_grad_op(id))
        return false;
    DType t = f->out->type.dtype;
    if (id != OP_CHAIN_MATMUL && id != OP_LINALG_MULTI_DOT && t != DT_F32 && t != DT_F64) {
        unsupported(e, f, "linear algebra runs in f32 or f64 only");
        return true;
    }
    int64_t m, n;
    bool tensor = id == OP_LINALG_TENSORINV || id == OP_LINALG_TENSORSOLVE;
    if (tensor && !b->scratch) {
        unsupported(e, f, "tensors of a run-time size have no static memory plan yet");
        return true;
    }
    if (id != OP_CHAIN_MATMUL && id != OP_LINALG_MULTI_DOT && !tensor && !fixed_matrix(xs_of(b, id == OP_TRIANGULAR_SOLVE || id == OP_CHOLESKY_SOLVE || id == OP_LU_SOLVE), &m, &n)) {
        unsupported(e, f, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return true;
    }
    switch (id) {
    case OP_CHAIN_MATMUL: case OP_LINALG_MULTI_DOT:
        grad_multi_dot(e, b);
        break;
    case OP_INVERSE: case OP_LINALG_INV_EX: case OP_LINALG_TENSORINV:
        grad_inverse(e, b);
        break;
    case OP_LINALG_SOLVE: case OP_LINALG_TENSORSOLVE:
        grad_solve(e, b);
        break;
    case OP_TRIANGULAR_SOLVE:
        grad_triangular_solve(e, b);
        break;
    case OP_CHOLESKY: case OP_LINALG_CHOLESKY: case OP_LINALG_CHOLESKY_EX:
        grad_cholesky(e, b);
        break;
    case OP_CHOLESKY_INVERSE:
        grad_cholesky_inverse(e, b);
        break;
    case OP_CHOLESKY_SOLVE:
        grad_cholesky_solve(e, b);
        break;
    case OP_LINALG_EIGH: case OP_LINALG_EIGVALSH:
        grad_eigh(e, b);
        break;
    case OP_LINALG_SVDVALS: case OP_NUCLEAR_NORM:
        grad_svdvals(e, b);
        break;
    case OP_PINVERSE:
        grad_pinverse(e, b);
        break;
    case OP_LINALG_LSTSQ:
        grad_lstsq(e, b);
        break;
    case OP_LINALG_MATRIX_EXP:
        grad_matrix_exp(e, b);
        break;
    case OP_QR: case OP_LINALG_QR:
        grad_qr(e, b);
        break;
    case OP_SVD: case OP_LINALG_SVD:
        grad_svd(e, b);
        break;
    case OP_LINALG_LU_FACTOR:
        grad_lu_factor(e, b);
        break;
    case OP_LU_SOLVE:
        grad_lu_solve(e, b);
        break;
    case OP_LINALG_HOUSEHOLDER_PRODUCT: case OP_ORGQR:
        grad_householder_product(e, b);
        break;
    case OP_ORMQR:
        grad_ormqr(e, b);
        break;
    default:
        return false;
    }
    return true;
}

/* The rule of every linear algebra op (the grad column's grad_linalg). */
void grad_linalg(Emitter *e, Node *b)
{
    if (!emit_grad_linalg(e, b))
        unsupported(e, b->fwd, "has no gradient yet");
}
