/* grad_linalg.c: the gradient rules of linear algebra.
 *
 * Requires and produces as emit_grad.c (whose helpers it uses): the calls
 * computing a GRAD node's input gradients in its forward's dtype.  Each
 * op's rule is named in the grad column of its ops.def row (declared in
 * emit.h); whether a node has a gradient and for which operands
 * (grad_rules.c), and the size of its scratch (scratch.c, which documents
 * each layout read here), are the middle end's.
 *
 * The products' rules are gemms and contractions of dy with the other
 * operands: linear, matmul/mm/bmm (gemm), the gemm family (mv, dot, vdot,
 * addmm, addmv, addr, baddbmm, addbmm: the forward's gemm transposed,
 * mm_forward_gemm), einsum, tensordot and bilinear (grad_contraction over
 * the forward's index lists, shared with linalg_vecdot), and cross
 * (cross(y, dy) for x, cross(dy, x) for y, over the broadcast shape, then
 * summed down to each operand's shape).
 *
 * The solves' and decompositions' rules are PyTorch's (its derivatives of
 * the same ops), so gradients agree with autograd's:
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

/* linear: y [M, N] = x [M, K] w^T + b. */
void grad_linear(Emitter *e, Node *b)
{
    DType t = b->fwd->out->type.dtype;
    const Shape *sx = xs_of(b, 0), *sw = xs_of(b, 1);
    const char *M = dims_product(e, sx, 0, sx->ndim - 1), *N = poly_c(e, sw->dims[0]), *K = poly_c(e, sw->dims[1]);
    const char *dy = dy_of(e, b);
    if (grad_of(e, b, 0) && attr_bool(b, "through_relu", false)) {
        /* fuse.c: dx on through the relu that made x, in the product's
         * epilogue: the node's first result is the relu input's gradient */
        Gemm g = {.batch = "1", .M = M, .N = K, .K = N, .A = dy, .B = x_of(e, b, 1), .alpha = 1, .beta = 0,
                  .relu_y = x_of(e, b, 0)};
        g.a[0] = "0", g.a[1] = N, g.a[2] = "1";
        g.b[0] = "0", g.b[1] = K, g.b[2] = "1";
        emit_gemm_call(e, t, &g, grad_of(e, b, 0));
    } else if (grad_of(e, b, 0)) { /* dx [M, K] = dy [M, N] w [N, K] */
        gemm(e, t, "1", M, K, N, dy, "0", N, "1", x_of(e, b, 1), "0", K, "1", false, grad_of(e, b, 0));
    }
    if (grad_of(e, b, 1)) /* dw [N, K] = dy^T [N, M] x [M, K] */
        gemm(e, t, "1", N, K, M, dy, "0", "1", N, x_of(e, b, 0), "0", K, "1", false, grad_of(e, b, 1));
    if (grad_of(e, b, 2)) { /* db [N] = the rows of dy summed */
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = {%s, %s};\n        const uint8_t reduce[] = {1, 0};\n", M, N);
        buf_printf(e->out, "        %s(2, shape, reduce, %s, %s);\n", kernel(e, "sum", t), dy, grad_of(e, b, 2));
        close_block(e);
    }
}

/* matmul, mm, bmm: y [batch, M, N] = a [batch?, M, K] b [batch?, K, N]
 * (addmm and the other products with an added input: grad_gemm). */
void grad_matmul(Emitter *e, Node *bn)
{
    Node *f = bn->fwd;
    DType t = f->out->type.dtype;
    int ka = 0, kb = 1;
    const Shape *sa = xs_of(bn, ka), *sb = xs_of(bn, kb);
    if (sa->ndim > 3 || sb->ndim > 3 || (sa->ndim == 3 && sb->ndim == 3 && !shape_equal(sa, sb) &&
                                         !poly_equal(sa->dims[0], sb->dims[0]))) {
        unsupported(e, f, "the gradient of a matmul with more than one batch dim or broadcast batches is not supported yet");
        return;
    }
    const char *M = sa->ndim >= 2 ? poly_c(e, sa->dims[sa->ndim - 2]) : "1";
    const char *K = poly_c(e, sa->dims[sa->ndim - 1]);
    const char *N = sb->ndim >= 2 ? poly_c(e, sb->dims[sb->ndim - 1]) : "1";
    bool abatch = sa->ndim == 3, bbatch = sb->ndim == 3;
    const char *batch = abatch ? poly_c(e, sa->dims[0]) : bbatch ? poly_c(e, sb->dims[0]) : "1";
    const char *as = abatch ? mul_c(e, M, K) : "0", *bs = bbatch ? mul_c(e, K, N) : "0";
    const char *ys = abatch || bbatch ? mul_c(e, M, N) : "0";
    const char *dy = dy_of(e, bn);
    /* da [M, K] = dy [M, N] b^T: b^T[n][k] = b[k N + n]; summed over the batch if a is shared */
    if (grad_of(e, bn, ka))
        gemm(e, t, batch, M, K, N, dy, ys, N, "1", x_of(e, bn, kb), bs, "1", N, !abatch && bbatch, grad_of(e, bn, ka));
    /* db [K, N] = a^T dy: a^T[k][m] = a[m K + k] */
    if (grad_of(e, bn, kb))
        gemm(e, t, batch, K, N, M, x_of(e, bn, ka), as, "1", K, dy, ys, N, "1", !bbatch && abatch, grad_of(e, bn, kb));
}

/* The forward gemm of a matrix-product node (as emit_linalg.c's emit_mm):
 * y[b][m][n] = alpha sum_k A[b][m][k] B[b][k][n] + beta C. */
static void mm_forward_gemm(Emitter *e, Node *f, Gemm *g)
{
    OpId id = f->op->id;
    DType ct = compute_dtype(f->out->type.dtype);
    bool added = id == OP_ADDMM || id == OP_BADDBMM || id == OP_ADDBMM || id == OP_ADDMV || id == OP_ADDR;
    int a = added ? 1 : 0, b = a + 1;
    const Shape *sa = &f->in[a]->type.shape, *sb = &f->in[b]->type.shape;
    *g = (Gemm){.batch = "1", .alpha = 1, .beta = 0};
    if (added) {
        g->alpha = attr_number(f, "alpha", "1", ct);
        g->beta = attr_number(f, "beta", "1", ct);
    }
    switch (id) {
    case OP_ADDMM:
        g->M = poly_c(e, sa->dims[0]), g->K = poly_c(e, sa->dims[1]), g->N = poly_c(e, sb->dims[1]);
        g->a[0] = "0", g->a[1] = g->K, g->a[2] = "1";
        g->b[0] = "0", g->b[1] = g->N, g->b[2] = "1";
        break;
    case OP_BADDBMM: case OP_ADDBMM:
        g->batch = poly_c(e, sa->dims[0]);
        g->M = poly_c(e, sa->dims[1]), g->K = poly_c(e, sa->dims[2]), g->N = poly_c(e, sb->dims[2]);
        g->a[0] = mul_c(e, g->M, g->K), g->a[1] = g->K, g->a[2] = "1";
        g->b[0] = mul_c(e, g->K, g->N), g->b[1] = g->N, g->b[2] = "1";
        g->sum_batch = id == OP_ADDBMM;
        break;
    case OP_MV: case OP_ADDMV:
        g->M = poly_c(e, sa->dims[0]), g->K = poly_c(e, sa->dims[1]), g->N = "1";
        g->a[0] = "0", g->a[1] = g->K, g->a[2] = "1";
        g->b[0] = "0", g->b[1] = "1", g->b[2] = "0";
        break;
    case OP_ADDR:
        g->M = poly_c(e, sa->dims[0]), g->N = poly_c(e, sb->dims[0]), g->K = "1";
        g->a[0] = "0", g->a[1] = "1", g->a[2] = "0";
        g->b[0] = "0", g->b[1] = "0", g->b[2] = "1";
        break;
    default: /* dot, vdot */
        g->M = g->N = "1";
        g->K = poly_c(e, sa->dims[0]);
        g->a[0] = "0", g->a[1] = "0", g->a[2] = "1";
        g->b[0] = "0", g->b[1] = "1", g->b[2] = "0";
        break;
    }
}

/* dA [b][m][k] = alpha dy B^T, dB [b][k][n] = alpha A^T dy (each written
 * contiguous, which is its operand's layout; summed over the batch where
 * the operand is shared), d(input) = beta sum_to(dy). */
void grad_gemm(Emitter *e, Node *bn)
{
    Node *f = bn->fwd;
    DType t = f->out->type.dtype;
    OpId id = f->op->id;
    bool added = id == OP_ADDMM || id == OP_BADDBMM || id == OP_ADDBMM || id == OP_ADDMV || id == OP_ADDR;
    int ka = added ? 1 : 0, kb = ka + 1;
    Gemm fg;
    mm_forward_gemm(e, f, &fg);
    bool batched = strcmp(fg.batch, "1") != 0;
    const char *dys[3] = {batched && !fg.sum_batch ? mul_c(e, fg.M, fg.N) : "0", fg.N, "1"};
    const char *dy = dy_of(e, bn);
    if (grad_of(e, bn, ka)) {
        Gemm g = {.batch = fg.batch, .M = fg.M, .N = fg.K, .K = fg.N, .A = dy, .B = x_of(e, bn, kb), .alpha = fg.alpha};
        g.a[0] = dys[0], g.a[1] = dys[1], g.a[2] = dys[2];
        g.b[0] = fg.b[0], g.b[1] = fg.b[2], g.b[2] = fg.b[1];
        g.sum_batch = batched && strcmp(fg.a[0], "0") == 0;
        emit_gemm_call(e, t, &g, grad_of(e, bn, ka));
    }
    if (grad_of(e, bn, kb)) {
        Gemm g = {.batch = fg.batch, .M = fg.K, .N = fg.N, .K = fg.M, .A = x_of(e, bn, ka), .B = dy, .alpha = fg.alpha};
        g.a[0] = fg.a[0], g.a[1] = fg.a[2], g.a[2] = fg.a[1];
        g.b[0] = dys[0], g.b[1] = dys[1], g.b[2] = dys[2];
        g.sum_batch = batched && strcmp(fg.b[0], "0") == 0;
        emit_gemm_call(e, t, &g, grad_of(e, bn, kb));
    }
    if (added && grad_of(e, bn, 0)) {
        const char *g0 = grad_of(e, bn, 0);
        if (fg.beta == 0) {
            zero_fill(e, t, g0, xs_of(bn, 0));
        } else {
            sum_to(e, t, dy, ys_of(bn), g0, xs_of(bn, 0));
            if (fg.beta != 1)
                buf_printf(e->out, "    %s((size_t)(%s), %s, %s, %s);\n", kernel(e, "mul_scalar", t),
                           numel_c(e, xs_of(bn, 0)), g0, double_c(e, fg.beta), g0);
        }
    }
}

int contract_index(GradContract *k, const char *size)
{
    if (k->n_index >= GRAD_CONTRACT_MAX)
        return -1;
    k->size[k->n_index] = size;
    return k->n_index++;
}

void contract_dim(GradContract *k, int o, int index, const char *size)
{
    k->idx[o][k->nd[o]] = index;
    k->dsize[o][k->nd[o]++] = size;
}

/* Operand o's stride along each index, as C text ("0" where it lacks it). */
static void contract_strides(Emitter *e, const GradContract *k, int o, const char **st)
{
    for (int i = 0; i < k->n_index; i++)
        st[i] = "0";
    const char *inner = "1";
    for (int d = k->nd[o] - 1; d >= 0; d--) {
        int i = k->idx[o][d];
        st[i] = strcmp(st[i], "0") == 0 ? inner : arena_printf(e->c->arena, "%s + %s", st[i], inner);
        inner = mul_c(e, inner, k->dsize[o][d]);
    }
}

/* The gradient of each operand needing one: the contraction of dy with the
 * other operands whose output indices are that operand's dims. */
void grad_contraction(Emitter *e, Node *b, GradContract *k)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    if (k->n_index < 0 || k->n_index > GRAD_CONTRACT_MAX) {
        unsupported(e, f, "the gradient of a contraction over more than 16 indices is not supported yet");
        return;
    }
    const char *ys[GRAD_CONTRACT_MAX];
    const char *inner = "1";
    for (int i = k->n_out - 1; i >= 0; i--) {
        ys[i] = inner;
        inner = mul_c(e, inner, k->size[i]);
    }
    for (int o = 0; o < k->n_ops; o++) {
        const char *g = grad_of(e, b, k->input[o]);
        if (!g)
            continue;
        /* the output: operand o's dims, each a distinct index of its full size */
        int newi[GRAD_CONTRACT_MAX];
        for (int i = 0; i < k->n_index; i++)
            newi[i] = -1;
        int n = 0;
        for (int d = 0; d < k->nd[o]; d++) {
            int i = k->idx[o][d];
            if (newi[i] >= 0) {
                unsupported(e, f, "the gradient of an operand with a repeated index (a diagonal) is not supported yet");
                return;
            }
            if (strcmp(k->dsize[o][d], k->size[i]) != 0) {
                unsupported(e, f, "the gradient of an operand broadcast along an index is not supported yet");
                return;
            }
            newi[i] = n++;
        }
        int n_out = n;
        for (int i = 0; i < k->n_index; i++)
            if (newi[i] < 0)
                newi[i] = n++;
        /* operand 0: dy; then the others */
        Contraction kk = {.n_index = k->n_index, .n_out = n_out, .n_ops = k->n_ops};
        for (int i = 0; i < k->n_index; i++) {
            kk.size[newi[i]] = k->size[i];
            for (int s = 0; s < 4; s++)
                kk.stride[s][i] = "0";
        }
        kk.operand[0] = dy_of(e, b);
        for (int i = 0; i < k->n_out; i++)
            kk.stride[0][newi[i]] = ys[i];
        for (int p = 0, slot = 1; p < k->n_ops; p++) {
            if (p == o)
                continue;
            const char *st[GRAD_CONTRACT_MAX];
            contract_strides(e, k, p, st);
            kk.operand[slot] = x_of(e, b, k->input[p]);
            for (int i = 0; i < k->n_index; i++)
                kk.stride[slot][newi[i]] = st[i];
            slot++;
        }
        emit_contract_call(e, t, &kk, g);
    }
}

void grad_einsum(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const char *s = attr_str(f, "equation", "");
    if (strchr(s, '.')) {
        unsupported(e, f, "the gradient of an equation with ... is not supported yet");
        return;
    }
    GradContract k = {0};
    const char *arrow = strstr(s, "->");
    const char *subs[4];
    int nops = 0;
    for (const char *p = s; nops < 4;) {
        subs[nops++] = p;
        while (*p && *p != ',' && *p != '-')
            p++;
        if (*p != ',')
            break;
        p++;
    }
    char outl[64];
    int nout = 0;
    if (arrow) {
        for (const char *q = arrow + 2; *q && nout < 64; q++)
            if (*q != ' ')
                outl[nout++] = *q;
    } else {
        int count[128] = {0};
        for (const char *q = s; *q; q++)
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
                count[(int)*q]++;
        for (int ch = 'A'; ch <= 'z' && nout < 64; ch++)
            if (count[ch] == 1)
                outl[nout++] = (char)ch;
    }
    const char *letter_size[128] = {0};
    int letter_index[128];
    for (int i = 0; i < 128; i++)
        letter_index[i] = -1;
    for (int o = 0; o < nops; o++) {
        const Shape *so = xs_of(b, o + 1);
        int d = 0;
        for (const char *q = subs[o]; d < so->ndim && *q && *q != ',' && *q != '-'; q++)
            if (*q != ' ')
                letter_size[(int)*q & 127] = poly_c(e, so->dims[d++]);
    }
    for (int i = 0; i < nout; i++)
        letter_index[(int)outl[i] & 127] = contract_index(&k, letter_size[(int)outl[i] & 127]);
    k.n_out = k.n_index;
    k.n_ops = nops;
    for (int o = 0; o < nops; o++) {
        const Shape *so = xs_of(b, o + 1);
        k.input[o] = o + 1;
        int d = 0;
        for (const char *q = subs[o]; *q && *q != ',' && *q != '-'; q++) {
            if (*q == ' ')
                continue;
            int c = (int)*q & 127;
            if (letter_index[c] < 0)
                letter_index[c] = contract_index(&k, letter_size[c]);
            if (letter_index[c] < 0 || d >= so->ndim) {
                k.n_index = -1;
                break;
            }
            contract_dim(&k, o, letter_index[c], poly_c(e, so->dims[d++]));
        }
    }
    grad_contraction(e, b, &k);
}

void grad_tensordot(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    const Shape *sa = xs_of(b, 0), *sb = xs_of(b, 1);
    int nd = (int)attr_int(f, "dims", 2);
    GradContract k = {.n_ops = 2, .input = {0, 1}};
    int ia[MAX_DIMS], ib[MAX_DIMS];
    for (int d = 0; d < sa->ndim - nd; d++)
        ia[d] = contract_index(&k, poly_c(e, sa->dims[d]));
    for (int d = nd; d < sb->ndim; d++)
        ib[d] = contract_index(&k, poly_c(e, sb->dims[d]));
    k.n_out = k.n_index;
    for (int j = 0; j < nd; j++)
        ia[sa->ndim - nd + j] = ib[j] = contract_index(&k, poly_c(e, sb->dims[j]));
    for (int d = 0; d < sa->ndim; d++)
        contract_dim(&k, 0, ia[d], poly_c(e, sa->dims[d]));
    for (int d = 0; d < sb->ndim; d++)
        contract_dim(&k, 1, ib[d], poly_c(e, sb->dims[d]));
    grad_contraction(e, b, &k);
}

/* bilinear: y[b, o] = sum_ij x1[b, i] x2[b, j] w[o, i, j] + bias[o] */
void grad_bilinear(Emitter *e, Node *b)
{
    const Shape *s1 = xs_of(b, 0), *sw = xs_of(b, 2);
    GradContract k = {.n_ops = 3, .input = {0, 1, 2}};
    int bi = contract_index(&k, dims_product(e, s1, 0, s1->ndim - 1));
    int oi = contract_index(&k, poly_c(e, sw->dims[0]));
    k.n_out = 2;
    int ii = contract_index(&k, poly_c(e, sw->dims[1])), ji = contract_index(&k, poly_c(e, sw->dims[2]));
    contract_dim(&k, 0, bi, k.size[bi]), contract_dim(&k, 0, ii, k.size[ii]);
    contract_dim(&k, 1, bi, k.size[bi]), contract_dim(&k, 1, ji, k.size[ji]);
    contract_dim(&k, 2, oi, k.size[oi]), contract_dim(&k, 2, ii, k.size[ii]), contract_dim(&k, 2, ji, k.size[ji]);
    grad_contraction(e, b, &k);
    if (grad_of(e, b, 3))
        sum_to(e, b->fwd->out->type.dtype, dy_of(e, b), ys_of(b), grad_of(e, b, 3), xs_of(b, 3));
}

/* cross: the dim as emit_distance.c's emit_pair_dim chooses it. */
void grad_cross(Emitter *e, Node *b)
{
    Node *f = b->fwd;
    DType t = f->out->type.dtype;
    const Shape *so = ys_of(b), *sa = xs_of(b, 0);
    int nd = so->ndim;
    int64_t dim = -1;
    if (attr_given(f, "dim")) {
        dim = attr_int(f, "dim", 0);
        if (dim < 0)
            dim += nd;
    } else {
        for (int i = 0; i < sa->ndim && dim < 0; i++) {
            int64_t three;
            if (poly_is_const(sa->dims[i], &three) && three == 3)
                dim = i;
        }
    }
    const char *ys[MAX_DIMS];
    contiguous_strides(e, so, ys);
    for (int k = 0; k < 2; k++) {
        const char *g = grad_of(e, b, k);
        if (!g)
            continue;
        const Shape *sk = xs_of(b, k);
        const char *full = shape_equal(sk, so) ? g : scratch_as(e, b, dtype_c_type(t), "0");
        /* d/dx (x cross y) . dy = y cross dy; d/dy = dy cross x */
        const char *a = k == 0 ? x_of(e, b, 1) : dy_of(e, b), *c = k == 0 ? dy_of(e, b) : x_of(e, b, 0);
        const char *as = k == 0 ? bcast_array(e, xs_of(b, 1), so) : c_array(e, ys, nd);
        const char *cs = k == 0 ? c_array(e, ys, nd) : bcast_array(e, xs_of(b, 0), so);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", as);
        buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", cs);
        buf_printf(e->out, "        %s(%d, shape, %d, %s, a_stride, %s, b_stride, %s);\n", kernel(e, "cross", t), nd,
                   (int)dim, a, c, full);
        close_block(e);
        sum_to(e, t, full, so, g, sk);
    }
}

/* The gradient of the forward's result more_out[r], or "NULL". */
static const char *dy_more_of(Emitter *e, Node *b, int r)
{
    return b->dy_more[r] ? e->cname[b->dy_more[r]->id] : "NULL";
}

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
        Contraction kk = {.n_index = nidx, .n_out = n_out, .n_ops = nops};
        for (int i = 0; i < nidx; i++) {
            kk.size[renum[i]] = size[i];
            for (int s = 0; s < 4; s++)
                kk.stride[s][i] = "0";
        }
        /* slot 0 is dY, then every other operand; a 2-D tensor's first
         * index strides by its columns, its last by 1 */
        for (int p = -1, slot = 0; p < nops; p++) {
            if (p == o)
                continue;
            int i0 = p < 0 ? chain[0] : chain[p], i1 = p < 0 ? chain[nops] : chain[p + 1];
            kk.operand[slot] = p < 0 ? dy_of(e, b) : x_of(e, b, p);
            if (i0 >= 0)
                kk.stride[slot][renum[i0]] = i1 >= 0 ? size[i1] : "1";
            if (i1 >= 0)
                kk.stride[slot][renum[i1]] = "1";
            slot++;
        }
        emit_contract_call(e, t, &kk, g);
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

static bool emit_grad_linalg(Emitter *e, Node *b)
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
