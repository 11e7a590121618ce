/* scratch.c: the scratch buffer each node's kernels need, sized from the IR.
 *
 * A node's scratch is one byte buffer (a DT_BOOL vector of its size) that
 * the memory plan places like any temporary and the emitters address by
 * the layouts written beside each rule below.  Its size is a kernel fact
 * (the runtime's AMP_*_WORK_BYTES / _ELEMS macros of <amprt.h>), kept here,
 * below the emitters, so that lowering (forward nodes) and autodiff (GRAD
 * nodes) size it without calling the back end.  op_scratch_type is the one
 * entry point; DT_NONE means no scratch.
 */
#include "middle.h"

#include <amprt.h>
#include <string.h>

static const Type no_scratch = {.dtype = DT_NONE};

/* `bytes` of scratch */
static Type scratch_bytes(Poly *bytes)
{
    return (Type){.dtype = DT_BOOL, .shape = {.ndim = 1, .dims = {bytes}}};
}

/* Bytes of double work (the kernels' `double *work`). */
static Type work_bytes(Ctx *c, Poly *doubles)
{
    return scratch_bytes(poly_mul(c, doubles, poly_const(c, 8)));
}

static Poly *numel_of(Ctx *c, const Value *v) { return shape_numel(c, &v->type.shape); }

/* The matrices' batch (all dims but the last two) as a count. */
static Poly *batch_count(Ctx *c, const Shape *s)
{
    Shape batch = {0};
    for (int i = 0; i + 2 < s->ndim; i++)
        batch.dims[batch.ndim++] = s->dims[i];
    return shape_numel(c, &batch);
}

bool fixed_matrix(const Shape *s, int64_t *m, int64_t *n)
{
    return s->ndim >= 2 && poly_is_const(s->dims[s->ndim - 2], m) && poly_is_const(s->dims[s->ndim - 1], n);
}

bool is_nuclear_norm(const Node *n)
{
    return n->op->id == OP_NUCLEAR_NORM ||
           (n->op->id == OP_LINALG_MATRIX_NORM && strcmp(attr_str(n, "ord", "fro"), "nuc") == 0);
}

/* ---- forward linear algebra --------------------------------------------------- */

/* svd's and the nuclear norm's scratch before amp_svd's work: svd's vh
 * (kv x n elements per matrix), or the nuclear norm's k singular values
 * (per matrix). */
int64_t svd_scratch_elems(const Node *n, int64_t m, int64_t cols)
{
    int64_t k = m < cols ? m : cols;
    if (is_nuclear_norm(n))
        return k;
    bool some = attr_bool(n, "some", true);
    bool uv = attr_bool(n, "compute_uv", true);
    return uv ? (some ? k : cols) * cols : 0;
}

/* Scratch memory of the linear algebra kernels: first the i32 info of
 * each matrix where the op has no info result of its own (8 bytes per
 * matrix, keeping what follows aligned for f64), then the kernel's `work`
 * (AMP_<KERNEL>_WORK_BYTES of amprt/linalg.h, for one matrix: the kernels
 * reuse it across the batch).  One byte buffer, typed bool[bytes]. */
bool linalg_scratch_has_info(OpId id)
{
    return id == OP_INVERSE || id == OP_CHOLESKY || id == OP_LINALG_CHOLESKY || id == OP_LINALG_LU_FACTOR ||
           id == OP_LINALG_SOLVE;
}

int64_t linalg_work_bytes(OpId id, int64_t m, int64_t n, int64_t esize)
{
    switch (id) {
    case OP_INVERSE: case OP_LINALG_INV_EX: return (int64_t)AMP_INV_EX_WORK_BYTES(n, esize);
    case OP_LINALG_SOLVE: return (int64_t)AMP_SOLVE_WORK_BYTES(n, esize);
    case OP_QR: case OP_LINALG_QR: return (int64_t)AMP_QR_WORK_BYTES(m, n, esize);
    case OP_LINALG_SVD: case OP_LINALG_SVDVALS: return (int64_t)AMP_SVD_WORK_BYTES(m, n, esize);
    case OP_LINALG_EIGH: case OP_LINALG_EIGVALSH: return (int64_t)AMP_EIGH_WORK_BYTES(n, esize);
    case OP_PINVERSE: return (int64_t)AMP_PINVERSE_WORK_BYTES(m, n, esize);
    default: return 0;
    }
}

/* linalg_lstsq, matrix_exp, tensorinv, tensorsolve: their kernels' work
 * (tensorinv and tensorsolve with 8 bytes of info first) */
static Type lstsq_family_scratch(Ctx *c, const Node *n)
{
    OpId id = n->op->id;
    const Shape *s = &n->in[0]->type.shape;
    DType t = n->out->type.dtype;
    const Shape *so = &n->out->type.shape;
    int64_t esize = dtype_size(t), p = 1, v;
    int from = id == OP_LINALG_TENSORINV ? (int)attr_int(n, "ind", 2) : 0;
    const Shape *sp = id == OP_LINALG_TENSORINV ? s : so; /* A's dims from ind, or X's */
    for (int i = from; i < sp->ndim; i++)
        p = p >= 0 && poly_is_const(sp->dims[i], &v) ? p * v : -1;
    if (id == OP_LINALG_TENSORINV || id == OP_LINALG_TENSORSOLVE) {
        if (p < 0)
            return no_scratch;
        size_t bytes = 8 + (id == OP_LINALG_TENSORINV ? AMP_INV_EX_WORK_BYTES(p, esize) : AMP_SOLVE_WORK_BYTES(p, esize));
        return scratch_bytes(poly_const(c, (int64_t)bytes));
    }
    int64_t m, cols, k = 1;
    if (!fixed_matrix(s, &m, &cols))
        return no_scratch;
    if (id == OP_LINALG_MATRIX_EXP)
        return scratch_bytes(poly_const(c, 8 * (int64_t)AMP_MATRIX_EXP_WORK_ELEMS(m)));
    const Shape *sb = &n->in[1]->type.shape;
    if (sb->ndim == s->ndim && !poly_is_const(sb->dims[sb->ndim - 1], &k))
        return no_scratch;
    return scratch_bytes(poly_const(c, 8 * (int64_t)AMP_LSTSQ_WORK_ELEMS(m, cols, k)));
}

/* The other linear algebra ops on matrices of a fixed size: svd's and the
 * nuclear norm's (svd_scratch_elems per matrix, then the work), or info
 * then work (linalg_scratch_has_info, linalg_work_bytes). */
static Type matrix_scratch(Ctx *c, const Node *n)
{
    OpId id = n->op->id;
    const Shape *s = n->in[0] ? &n->in[0]->type.shape : NULL;
    if (!s || s->ndim < 2)
        return no_scratch;
    int64_t rows, cols;
    bool fixed = fixed_matrix(s, &rows, &cols);
    if ((id == OP_SVD || is_nuclear_norm(n)) && fixed && dtype_is_float(n->out->type.dtype)) {
        /* svd_scratch_elems per matrix (svd: per batch entry), then the work */
        int64_t esize = dtype_size(n->out->type.dtype);
        Poly *per = poly_const(c, svd_scratch_elems(n, rows, cols) * esize);
        Poly *bytes = poly_add(c, poly_mul(c, batch_count(c, s), per),
                               poly_const(c, (int64_t)AMP_SVD_WORK_BYTES(rows, cols, esize)));
        return scratch_bytes(bytes);
    }
    int64_t work = fixed ? linalg_work_bytes(id, rows, cols, dtype_size(n->out->type.dtype)) : 0;
    bool info = linalg_scratch_has_info(id);
    if (!info && work == 0)
        return no_scratch;
    Poly *bytes = poly_const(c, work);
    if (info)
        bytes = poly_add(c, bytes, poly_mul(c, batch_count(c, s), poly_const(c, 8)));
    return scratch_bytes(bytes);
}

/* ---- the complex ops (complex.c types them) -------------------------------------- */

static Poly *sum_or_max(Ctx *c, Poly *a, Poly *b)
{
    int64_t x, y;
    if (poly_is_const(a, &x) && poly_is_const(b, &y))
        return x > y ? a : b;
    return poly_add(c, a, b); /* a bound when they cannot be compared */
}

int fft_dims(Ctx *c, const Node *n, int *dims, Poly **lens)
{
    const Shape *si = &n->in[0]->type.shape, *so = &n->out->type.shape;
    int64_t given[MAX_DIMS], d[MAX_DIMS];
    int count = attr_int_list(n, "fft_dims", d); /* the plan lowering made (fft_plan_dims) */
    attr_int_list(n, "fft_lens", given);
    for (int i = 0; i < count; i++)
        dims[i] = (int)d[i];
    FftKind kind = fft_kind(n->op->id);
    for (int i = 0; i < count; i++) {
        bool last = i == count - 1;
        if (given[i] > 0)
            lens[i] = poly_const(c, given[i]);
        else if (last && kind == FFT_R2C)
            lens[i] = si->dims[dims[i]];
        else
            lens[i] = so->dims[dims[i]]; /* c2c: the input's; c2r: 2 (m - 1) */
    }
    return count;
}

static Type complex_scratch(Ctx *c, const Node *n)
{
    const Shape *si = &n->in[0]->type.shape, *so = &n->out->type.shape;
    switch (n->op->id) {
    case OP_FFT_FFT: case OP_FFT_IFFT: case OP_FFT_FFT2: case OP_FFT_IFFT2: case OP_FFT_FFTN: case OP_FFT_IFFTN:
    case OP_FFT_RFFT: case OP_FFT_IRFFT: case OP_FFT_RFFT2: case OP_FFT_IRFFT2: case OP_FFT_RFFTN:
    case OP_FFT_IRFFTN: case OP_FFT_HFFT: case OP_FFT_IHFFT: {
        /* amp_fft_work_doubles: 4 M + 8 L, M bounding every stage's element
         * count and L every line's length */
        int dims[MAX_DIMS];
        Poly *lens[MAX_DIMS];
        int count = fft_dims(c, n, dims, lens);
        Poly *m = poly_const(c, 1), *l = poly_const(c, 1);
        for (int k = 0; k < si->ndim; k++) {
            Poly *b = sum_or_max(c, si->dims[k], so->dims[k]);
            for (int i = 0; i < count; i++)
                if (dims[i] == k)
                    b = sum_or_max(c, b, lens[i]);
            m = poly_mul(c, m, b);
            for (int i = 0; i < count; i++)
                if (dims[i] == k)
                    l = poly_add(c, l, b);
        }
        return work_bytes(c, poly_add(c, poly_mul(c, m, poly_const(c, 4)), poly_mul(c, l, poly_const(c, 8))));
    }
    case OP_STFT: {
        int64_t len;
        poly_is_const(si->dims[si->ndim - 1], &len);
        int64_t n_fft = attr_int(n, "n_fft", 0);
        return work_bytes(c, poly_const(c, (int64_t)AMP_STFT_WORK_DOUBLES(len, n_fft)));
    }
    case OP_LINALG_EIG: case OP_LINALG_EIGVALS: {
        Poly *k = si->dims[si->ndim - 1];
        Poly *w = poly_add(c, poly_mul(c, poly_mul(c, k, k), poly_const(c, 5)), poly_mul(c, k, poly_const(c, 8)));
        return work_bytes(c, w);
    }
    default:
        return no_scratch;
    }
}

/* ---- a forward node ------------------------------------------------------------- */

static Type forward_scratch(Ctx *c, const Node *n)
{
    OpId id = n->op->id;
    if (op_takes_complex(id))
        return complex_scratch(c, n);
    if (id == OP_LINALG_LSTSQ || id == OP_LINALG_MATRIX_EXP || id == OP_LINALG_TENSORINV ||
        id == OP_LINALG_TENSORSOLVE)
        return lstsq_family_scratch(c, n);
    const Shape *s = n->in[0] ? &n->in[0]->type.shape : NULL;
    if (id == OP_CTC_LOSS) {
        /* two rows of alphas, 2 S + 1 each */
        const Shape *st = &n->in[1]->type.shape;
        return work_bytes(c, poly_add(c, poly_mul(c, st->dims[st->ndim - 1], poly_const(c, 4)), poly_const(c, 2)));
    }
    if (id == OP_QUANTILE || id == OP_NANQUANTILE) {
        /* the sorted values of one slice, as doubles */
        Poly *len = attr_int(n, "axis", 0) < 0 || s->ndim == 0 ? shape_numel(c, s) : s->dims[attr_int(n, "axis", 0)];
        return work_bytes(c, len);
    }
    return matrix_scratch(c, n);
}

/* ---- gradients: elementwise and normalization ------------------------------------ */

/* Whether GRAD node b computes forward input k's gradient (a scratch only
 * one gradient uses is not asked for without it: it would be an unused
 * local in the C). */
static bool wants(const Node *b, int k)
{
    for (int r = 0; r <= b->nmore; r++)
        if (b->grad_input[r] == k)
            return true;
    return false;
}

/* Whether a broadcasting binary op's gradients go through full-shape
 * temporaries before being summed down to the operands' shapes. */
static bool broadcasts(const Node *f)
{
    for (int k = 0; k < f->nin && k < 3; k++)
        if (f->in[k] && !shape_equal(&f->in[k]->type.shape, &f->out->type.shape))
            return true;
    return false;
}

/* Whether an operand that gets a gradient was broadcast: mul's gradient
 * forms it over the output's shape, then sums it down (grad_arith). */
static bool wanted_broadcast(const Node *b)
{
    const Node *f = b->fwd;
    for (int k = 0; k < f->nin && k < 2; k++)
        if (f->in[k] && wants(b, k) && !shape_equal(&f->in[k]->type.shape, &f->out->type.shape))
            return true;
    return false;
}

/* Buffers of the forward output's size (emit_grad.c's scratch_buffer). */
static Type output_buffers(Ctx *c, const Node *b)
{
    const Node *f = b->fwd;
    int buffers = 0;
    switch (f->op->id) {
    case OP_MUL: case OP_DIV: case OP_WHERE:
        buffers = f->nin == 2 || f->op->id == OP_WHERE ? 1 : 0;
        if (f->op->id == OP_DIV && f->nin == 1)
            buffers = f->scalar_first ? 1 : 0; /* rdiv: -dy y / a; a / s needs none */
        if (f->op->id != OP_DIV && !broadcasts(f))
            buffers = f->op->id == OP_WHERE ? 1 : 0;
        if (f->op->id == OP_MUL && !wanted_broadcast(b))
            buffers = 0; /* a broadcast operand without a gradient needs none */
        break;
    case OP_MAXIMUM: case OP_ATAN2: case OP_POW: case OP_MINIMUM: case OP_FMOD: case OP_REMAINDER:
        buffers = f->nin >= 2 && f->in[0] && f->in[1] ? 2 : 0;
        break;
    case OP_MASKED_FILL: /* dinput over the broadcast shape, then summed down */
        buffers = shape_equal(&f->in[0]->type.shape, &f->out->type.shape) ? 0 : 1;
        break;
    case OP_ADDCMUL: case OP_ADDCDIV:
        buffers = 1; /* a tensor operand's gradient over the output shape */
        break;
    case OP_LERP:
        buffers = 3; /* each operand's gradient over the output shape */
        break;
    case OP_LAYER_NORM: case OP_GROUP_NORM: case OP_BATCH_NORM: case OP_INSTANCE_NORM:
        /* dx when the input needs no gradient: the kernels write it anyway
         * (none otherwise: an unused scratch is an unused local in the C) */
        buffers = wants(b, 0) ? 0 : 1;
        break;
    default:
        break;
    }
    if (buffers == 0)
        return no_scratch;
    Poly *numel = shape_numel(c, &f->out->type.shape);
    return scratch_bytes(poly_mul(c, numel, poly_const(c, (int64_t)buffers * dtype_size(f->out->type.dtype))));
}

/* ---- gradients: linear algebra (grad_linalg.c) ------------------------------------ */

/* Scratch layouts, in elements of T unless marked; each part is aligned
 * for what it holds (T parts come first, i32 ones after them, and
 * matrix_exp's doubles after an even count of T):
 *   inverse, inv_ex, tensorinv  [Y^T dY: numel(Y)]
 *   linalg_solve, tensorsolve  [A^T: numel(A)][dB: numel(B)][info: 8 bytes per matrix][solve work bytes]
 *   triangular_solve  [dB: numel(B)] (when B needs no gradient)
 *   cholesky_inverse  [two products: 2 numel(Y)]
 *   cholesky_solve    [dB: numel(B)][S: numel(L)][S^T: numel(L)]
 *   eigh, eigvalsh    [w: batch n][V: batch n n][backward work: 2 n n][eigh work]
 *   svdvals, nuclear  [U: batch m k][S: batch k][Vh: batch k n][ds: batch k][svd work]
 *   pinverse          [backward work]
 *   linalg_lstsq      [P: numel(A)][dP: numel(A)][pinverse work][backward work]
 *   qr, linalg_qr     [Q: batch m n][R: batch n n][backward work: n n][qr work]
 *   lu_solve          [backward work: 2 n n]
 *   householder_product, orgqr, ormqr  [backward work]
 *   linalg_lu_factor  [LU: batch n n][pivots: batch n i32][info: batch i32]
 *   svd, linalg_svd   [U: batch m k][S: batch k][Vh: batch k n][svd's dV^T: batch k n, if any]
 *                     [backward work][svd work]
 *   matrix_exp        [block: batch 4 n n][its exp: batch 4 n n][matrix_exp's double work]
 * linalg_decomposition_bytes sizes those that recompute a decomposition
 * (or an exponential) of a fixed-size matrix; NULL: none. */
static Poly *linalg_decomposition_bytes(Ctx *c, const Node *b, OpId id)
{
    const Node *f = b->fwd;
    int64_t es = dtype_size(f->out->type.dtype), m, n;
    const Shape *s = &f->in[0]->type.shape;
    Poly *bytes = NULL;
    if (!fixed_matrix(s, &m, &n))
        return NULL;
    switch (id) {
    case OP_LINALG_EIGH: case OP_LINALG_EIGVALSH:
        bytes = poly_mul(c, batch_count(c, s), poly_const(c, (n + n * n) * es));
        return poly_add(c, bytes, poly_const(c, (int64_t)(AMP_EIGH_BACKWARD_WORK_ELEMS(n) * (size_t)es +
                                                          AMP_EIGH_WORK_BYTES(n, es))));
    case OP_LINALG_SVDVALS: case OP_NUCLEAR_NORM: {
        int64_t k = m < n ? m : n;
        bytes = poly_mul(c, batch_count(c, s), poly_const(c, (m * k + 2 * k + k * n) * es));
        return poly_add(c, bytes, poly_const(c, (int64_t)AMP_SVD_WORK_BYTES(m, n, es)));
    }
    case OP_PINVERSE: case OP_LINALG_LSTSQ:
        bytes = poly_const(c, (int64_t)AMP_PINVERSE_BACKWARD_WORK_ELEMS(m, n) * es);
        if (id == OP_LINALG_LSTSQ)
            bytes = poly_add(c, poly_add(c, bytes, poly_mul(c, numel_of(c, f->in[0]), poly_const(c, 2 * es))),
                             poly_const(c, (int64_t)AMP_PINVERSE_WORK_BYTES(m, n, es)));
        return bytes;
    case OP_QR: case OP_LINALG_QR:
        bytes = poly_mul(c, batch_count(c, s), poly_const(c, (m * n + n * n) * es));
        return poly_add(c, bytes, poly_const(c, n * n * es + (int64_t)AMP_QR_WORK_BYTES(m, n, es)));
    case OP_LINALG_LU_FACTOR:
        return poly_mul(c, batch_count(c, s), poly_const(c, n * n * es + 4 * n + 4));
    case OP_SVD: case OP_LINALG_SVD: {
        int64_t k = m < n ? m : n;
        /* U, S, Vh again; then torch.svd's dV transposed into a dVh */
        int64_t dvh = id == OP_SVD && b->dy_more[1] ? k * n : 0;
        bytes = poly_mul(c, batch_count(c, s), poly_const(c, (m * k + k + k * n + dvh) * es));
        return poly_add(c, bytes, poly_const(c, (int64_t)AMP_SVD_BACKWARD_WORK_ELEMS(m, n) * es +
                                                    (int64_t)AMP_SVD_WORK_BYTES(m, n, es)));
    }
    case OP_LINALG_MATRIX_EXP:
        return poly_add(c, poly_mul(c, numel_of(c, f->in[0]), poly_const(c, 8 * es)),
                        poly_const(c, 8 * (int64_t)AMP_MATRIX_EXP_WORK_ELEMS(2 * n)));
    default:
        return NULL;
    }
}

/* The scratch of a linear algebra op's gradient (id: the forward's op, or
 * OP_NUCLEAR_NORM for matrix_norm(ord="nuc")), by the layouts above. */
static Type linalg_grad_scratch(Ctx *c, const Node *b, OpId id)
{
    const Node *f = b->fwd;
    int64_t es = dtype_size(f->out->type.dtype), m, n;
    const Shape *s = &f->in[0]->type.shape;
    Poly *bytes = NULL;
    switch (id) {
    case OP_INVERSE: case OP_LINALG_INV_EX: case OP_LINALG_TENSORINV:
        bytes = poly_mul(c, numel_of(c, f->out), poly_const(c, es));
        break;
    case OP_LINALG_SOLVE: case OP_LINALG_TENSORSOLVE:
        if (id == OP_LINALG_TENSORSOLVE ? !poly_is_const(numel_of(c, f->out), &n) : !fixed_matrix(s, &m, &n))
            return no_scratch;
        bytes = poly_mul(c, poly_add(c, numel_of(c, f->in[0]), numel_of(c, f->in[1])), poly_const(c, es));
        bytes = poly_add(c, bytes, id == OP_LINALG_TENSORSOLVE ? poly_const(c, 8)
                                                               : poly_mul(c, batch_count(c, s), poly_const(c, 8)));
        bytes = poly_add(c, bytes, poly_const(c, (int64_t)AMP_SOLVE_WORK_BYTES(n, es)));
        break;
    case OP_TRIANGULAR_SOLVE:
        bytes = poly_mul(c, numel_of(c, f->in[0]), poly_const(c, es));
        break;
    case OP_CHOLESKY_INVERSE:
        bytes = poly_mul(c, numel_of(c, f->out), poly_const(c, 2 * es));
        break;
    case OP_CHOLESKY_SOLVE:
        bytes = poly_mul(c, poly_add(c, numel_of(c, f->in[0]), poly_mul(c, numel_of(c, f->in[1]), poly_const(c, 2))),
                         poly_const(c, es));
        break;
    case OP_LINALG_HOUSEHOLDER_PRODUCT: case OP_ORGQR: {
        const Shape *st = &f->in[1]->type.shape;
        int64_t k;
        if (!fixed_matrix(s, &m, &n) || !poly_is_const(st->dims[st->ndim - 1], &k))
            return no_scratch;
        bytes = poly_const(c, (int64_t)AMP_HOUSEHOLDER_BACKWARD_WORK_ELEMS(m, n, k) * es);
        break;
    }
    case OP_ORMQR: {
        const Shape *st = &f->in[1]->type.shape, *so = &f->out->type.shape;
        int64_t k, rows, cols;
        if (!fixed_matrix(s, &m, &n) || !poly_is_const(st->dims[st->ndim - 1], &k) || !fixed_matrix(so, &rows, &cols))
            return no_scratch;
        int64_t p = attr_bool(f, "left", true) ? cols : rows;
        bytes = poly_const(c, (int64_t)AMP_ORMQR_BACKWARD_WORK_ELEMS(m, k, p) * es);
        break;
    }
    case OP_LU_SOLVE:
        if (!fixed_matrix(&f->in[1]->type.shape, &m, &n))
            return no_scratch;
        bytes = poly_const(c, 2 * n * n * es);
        break;
    case OP_LINALG_EIGH: case OP_LINALG_EIGVALSH: case OP_LINALG_SVDVALS: case OP_NUCLEAR_NORM: case OP_PINVERSE:
    case OP_LINALG_LSTSQ: case OP_QR: case OP_LINALG_QR: case OP_LINALG_LU_FACTOR: case OP_SVD: case OP_LINALG_SVD:
    case OP_LINALG_MATRIX_EXP:
        bytes = linalg_decomposition_bytes(c, b, id);
        break;
    default: /* chain_matmul, multi_dot, the cholesky family, eigh's...: none */
        break;
    }
    return bytes ? scratch_bytes(bytes) : no_scratch;
}

/* ---- gradients: products, sort, quantiles, distances, margin losses -------------- */

/* The length of the slices a scan or quantile runs along (the whole
 * tensor for a quantile without dim). */
static Poly *axis_len(Ctx *c, const Node *f)
{
    const Shape *s = &f->in[0]->type.shape;
    int64_t d = attr_int(f, "axis", 0);
    if (s->ndim == 0)
        return poly_const(c, 1);
    return d < 0 ? shape_numel(c, s) : s->dims[d];
}

/* The broadcast shape of a forward's first nops operands (as emit_ops.c's
 * bcast_full), with cosine_embedding_loss's rule that a 1-D target also
 * broadcasts the rows. */
Shape grad_full_shape(Ctx *c, const Node *f, int nops)
{
    Shape out = {0};
    for (int k = 0; k < nops; k++)
        if (f->in[k]->type.shape.ndim > out.ndim)
            out.ndim = f->in[k]->type.shape.ndim;
    for (int i = 0; i < out.ndim; i++) {
        out.dims[i] = poly_const(c, 1);
        for (int k = 0; k < nops; k++) {
            const Shape *s = &f->in[k]->type.shape;
            int j = s->ndim - out.ndim + i;
            int64_t one;
            if (j >= 0 && !(poly_is_const(s->dims[j], &one) && one == 1)) {
                out.dims[i] = s->dims[j];
                break;
            }
        }
    }
    const Shape *ts = f->op->id == OP_COSINE_EMBEDDING_LOSS ? &f->in[2]->type.shape : NULL;
    int64_t one;
    if (ts && out.ndim == 2 && ts->ndim == 1 && poly_is_const(out.dims[0], &one) && one == 1)
        out.dims[0] = ts->dims[0];
    return out;
}

int grad_full_operands(const Node *f, Poly **work, Ctx *c)
{
    *work = NULL;
    switch (f->op->id) {
    case OP_COSINE_SIMILARITY: case OP_COSINE_EMBEDDING_LOSS:
        return 2;
    case OP_MARGIN_RANKING_LOSS:
        return 3;
    case OP_TRIPLET_MARGIN_LOSS: {
        Shape full = grad_full_shape(c, f, 3);
        *work = poly_mul(c, full.ndim ? full.dims[full.ndim - 1] : poly_const(c, 1), poly_const(c, 3 * 8));
        return 3;
    }
    default:
        return 0;
    }
}

static Type reduction_grad_scratch(Ctx *c, const Node *b)
{
    const Node *f = b->fwd;
    DType dt = f->out->type.dtype;
    switch (f->op->id) {
    case OP_MULTILABEL_MARGIN_LOSS: case OP_CDIST: case OP_PDIST: {
        /* one row's (sample's) gradient sums, as doubles */
        const Shape *s = &f->in[0]->type.shape;
        return work_bytes(c, s->ndim ? s->dims[s->ndim - 1] : poly_const(c, 1));
    }
    case OP_CUMPROD: case OP_QUANTILE: case OP_NANQUANTILE:
        /* one line's running products / sorted values, as doubles */
        return work_bytes(c, axis_len(c, f));
    case OP_SORT:
        /* the recomputed indices (i64), then the values (dtype) */
        return scratch_bytes(poly_mul(c, shape_numel(c, &f->in[0]->type.shape), poly_const(c, 8 + dtype_size(dt))));
    case OP_DIST:
        /* the difference of the operands */
        return scratch_bytes(poly_mul(c, shape_numel(c, &f->in[0]->type.shape), poly_const(c, dtype_size(dt))));
    case OP_CROSS: {
        /* one operand's gradient over the output shape, where one broadcasts */
        bool bcast = !shape_equal(&f->in[0]->type.shape, &f->out->type.shape) ||
                     !shape_equal(&f->in[1]->type.shape, &f->out->type.shape);
        return bcast ? scratch_bytes(poly_mul(c, shape_numel(c, &f->out->type.shape), poly_const(c, dtype_size(dt))))
                     : no_scratch;
    }
    case OP_COSINE_SIMILARITY: case OP_MARGIN_RANKING_LOSS: case OP_COSINE_EMBEDDING_LOSS:
    case OP_TRIPLET_MARGIN_LOSS: {
        /* the work doubles, then one full-shape gradient per operand */
        Poly *work;
        int k = grad_full_operands(f, &work, c);
        OpId id = f->op->id;
        Shape full = grad_full_shape(c, f, id == OP_COSINE_SIMILARITY || id == OP_COSINE_EMBEDDING_LOSS ? 2 : 3);
        Poly *bytes = poly_mul(c, shape_numel(c, &full), poly_const(c, (int64_t)k * dtype_size(dt)));
        return scratch_bytes(work ? poly_add(c, work, bytes) : bytes);
    }
    default: /* prelu, prod, renorm, multi_margin_loss: none */
        return no_scratch;
    }
}

/* ---- gradients: recurrent cells, indexing writes, sampling, CTC ------------------- */

static Type nn_grad_scratch(Ctx *c, const Node *b)
{
    const Node *f = b->fwd;
    switch (f->op->id) {
    case OP_LSTM_CELL: case OP_GRU_CELL: case OP_RNN_TANH_CELL: case OP_RNN_RELU_CELL: {
        /* AMP_RNN_CELL_BACKWARD_WORK_ELEMS(B, H) doubles: hy's elements
         * times 9; then b_hh cast again, when it must be */
        Type t = work_bytes(c, poly_mul(c, shape_numel(c, &f->out->type.shape), poly_const(c, 9)));
        if (f->op->id == OP_LSTM_CELL && lstm_b_hh_recast(f))
            t.shape.dims[0] = poly_add(c, t.shape.dims[0],
                                       poly_mul(c, shape_numel(c, &f->in[6]->type.shape),
                                                poly_const(c, dtype_size(f->out->type.dtype))));
        return t;
    }
    case OP_INDEX_PUT:
        /* the values' gradient sums (amp_index_put_backward's work) */
        return wants(b, 2) ? work_bytes(c, shape_numel(c, &f->in[2]->type.shape)) : no_scratch;
    case OP_CTC_LOSS: {
        /* AMP_CTC_LOSS_BACKWARD_WORK_ELEMS(T, S, C) */
        const Shape *sl = &f->in[0]->type.shape, *st = &f->in[1]->type.shape;
        Poly *w = poly_add(c, poly_mul(c, st->dims[st->ndim - 1], poly_const(c, 2)), poly_const(c, 1));
        Poly *n = poly_add(c, poly_mul(c, poly_mul(c, sl->dims[0], w), poly_const(c, 2)), sl->dims[sl->ndim - 1]);
        return work_bytes(c, n);
    }
    case OP_GRID_SAMPLER:
        /* dx's sums (amp_grid_sampler_backward's work) */
        return wants(b, 0) ? work_bytes(c, shape_numel(c, &f->in[0]->type.shape)) : no_scratch;
    case OP_INDEX_COPY: {
        /* zeros of the source's shape, copied over dx's indexed rows */
        int64_t es = dtype_size(f->out->type.dtype);
        return wants(b, 0) ? scratch_bytes(poly_mul(c, shape_numel(c, &f->in[3]->type.shape), poly_const(c, es)))
                           : no_scratch;
    }
    default:
        return no_scratch;
    }
}

/* ---- a GRAD node, and the entry point --------------------------------------------- */

/* The scratch GRAD node b's kernels need (autodiff.c makes it; emit_grad
 * and the family files address it). */
static Type grad_scratch_type(Ctx *c, const Node *b)
{
    const Node *f = b->fwd;
    if (!f)
        return no_scratch;
    if (is_nuclear_norm(f)) /* matrix_norm(ord="nuc") too */
        return linalg_grad_scratch(c, b, OP_NUCLEAR_NORM);
    if (linalg_grad_op(f->op->id))
        return linalg_grad_scratch(c, b, f->op->id);
    switch (f->op->id) {
    case OP_CUMPROD: case OP_QUANTILE: case OP_NANQUANTILE: case OP_SORT: case OP_DIST: case OP_CROSS:
    case OP_MULTILABEL_MARGIN_LOSS: case OP_CDIST: case OP_PDIST: case OP_COSINE_SIMILARITY:
    case OP_MARGIN_RANKING_LOSS: case OP_COSINE_EMBEDDING_LOSS: case OP_TRIPLET_MARGIN_LOSS:
        return reduction_grad_scratch(c, b);
    case OP_LSTM_CELL: case OP_GRU_CELL: case OP_RNN_TANH_CELL: case OP_RNN_RELU_CELL: case OP_INDEX_PUT:
    case OP_CTC_LOSS: case OP_GRID_SAMPLER: case OP_INDEX_COPY:
        return nn_grad_scratch(c, b);
    default:
        return output_buffers(c, b);
    }
}

Type op_scratch_type(Ctx *c, const Node *n)
{
    return n->op->id == OP_GRAD ? grad_scratch_type(c, n) : forward_scratch(c, n);
}
