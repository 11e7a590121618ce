/* types_linalg.c: the type rules of linear algebra.
 *
 * The products (linear, matmul, the mm family, dot/vdot/cross/tensordot,
 * bilinear, einsum, chain_matmul/multi_dot), and the solves and
 * decompositions (inverse, cholesky, qr, svd, eigh, lu, solve, lstsq,
 * matrix_exp, householder_product/orgqr/ormqr, tensorinv, tensorsolve).
 * Operands are [..., rows, cols] with broadcast batch dims.  The
 * decompositions take f32 or f64 only (LAPACK and cuSOLVER have no
 * f16/bf16), and their messages name the op as torch.linalg does.  Ops
 * with several results give the others in more_types.
 */

#include "types.h"

#include <string.h>

/* ---- products ----------------------------------------------------------- */

bool infer_linear(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0), *w = arg(call, 1), *bias = arg(call, 2);
    if (!require_float(c, call, x) || !same_dtype(c, call, x, w))
        return false;
    const Shape *xs = &x->type.shape, *ws = &w->type.shape;
    if (ws->ndim != 2 || xs->ndim < 1) {
        error_at(c, call->loc, "linear() takes input [..., in_features] and weight [out_features, in_features]; got %s and %s",
                 type_to_string(c, &x->type), type_to_string(c, &w->type));
        return false;
    }
    if (!dims_match(xs->dims[xs->ndim - 1], ws->dims[1])) {
        error_at(c, call->loc, "linear(): input has %s features but weight expects %s (input %s, weight %s)",
                 dim_str(c, xs->dims[xs->ndim - 1]), dim_str(c, ws->dims[1]), type_to_string(c, &x->type),
                 type_to_string(c, &w->type));
        return false;
    }
    if (bias) {
        if (!require_tensor(c, call, 2) || !same_dtype(c, call, x, bias))
            return false;
        if (bias->type.shape.ndim != 1 || !dims_match(bias->type.shape.dims[0], ws->dims[0])) {
            error_at(c, bias->loc, "linear(): bias must be [%s] to match the weight, got %s", dim_str(c, ws->dims[0]),
                     type_to_string(c, &bias->type));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = *xs;
    call->type.shape.dims[xs->ndim - 1] = ws->dims[0];
    return true;
}

/* torch.matmul: 1-D operands are promoted to matrices and the added dim
 * removed afterwards; batch dims broadcast. */
bool infer_matmul(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *a = arg(call, 0), *b = arg(call, 1);
    if (!require_float(c, call, a) || !same_dtype(c, call, a, b))
        return false;
    const Shape *as = &a->type.shape, *bs = &b->type.shape;
    if (as->ndim == 0 || bs->ndim == 0) {
        error_at(c, call->loc, "matmul() needs tensors of at least 1 dimension, got %s and %s",
                 type_to_string(c, &a->type), type_to_string(c, &b->type));
        return false;
    }
    Poly *k_a = as->dims[as->ndim - 1];
    Poly *k_b = bs->ndim == 1 ? bs->dims[0] : bs->dims[bs->ndim - 2];
    if (!dims_match(k_a, k_b)) {
        error_at(c, call->loc, "matmul(): shapes %s and %s cannot be multiplied (%s != %s)",
                 shape_to_string(c, as, c->sym_names), shape_to_string(c, bs, c->sym_names), dim_str(c, k_a),
                 dim_str(c, k_b));
        return false;
    }
    Shape batch_a = {0}, batch_b = {0}, batch;
    for (int i = 0; i + 2 < as->ndim; i++)
        batch_a.dims[batch_a.ndim++] = as->dims[i];
    for (int i = 0; i + 2 < bs->ndim; i++)
        batch_b.dims[batch_b.ndim++] = bs->dims[i];
    if (!broadcast(c, call, &batch_a, &batch_b, &batch))
        return false;
    Shape out = batch;
    if (as->ndim >= 2)
        out.dims[out.ndim++] = as->dims[as->ndim - 2];
    if (bs->ndim >= 2)
        out.dims[out.ndim++] = bs->dims[bs->ndim - 1];
    call->type.dtype = a->type.dtype;
    call->type.shape = out;
    return true;
}

static bool rank_is(Ctx *c, Expr *call, Expr *e, int ndim, const char *what)
{
    if (e->type.shape.ndim == ndim)
        return true;
    error_at(c, e->loc, "%s(): %s must be a %d-D tensor, but it is %s", call->op->name, what, ndim,
             type_to_string(c, &e->type));
    return false;
}

static bool inner_match(Ctx *c, Expr *call, const Poly *k1, const Poly *k2, Expr *a, Expr *b)
{
    if (dims_match(k1, k2))
        return true;
    error_at(c, call->loc, "%s(): shapes %s and %s cannot be multiplied (%s != %s)", call->op->name,
             shape_str(c, &a->type.shape), shape_str(c, &b->type.shape), dim_str(c, k1), dim_str(c, k2));
    return false;
}

/* mm, bmm, addmm, baddbmm, addbmm, addmv, addr.  The add* forms take
 * `input` broadcastable to the product's shape. */
bool infer_mm(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool has_input = id != OP_MM && id != OP_BMM && id != OP_MV;
    int a_i = has_input ? 1 : 0;
    for (int i = 0; i <= a_i + 1; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *in = has_input ? arg(call, 0) : NULL, *a = arg(call, a_i), *b = arg(call, a_i + 1);
    if (!not_bool(c, call, a) || !same_dtype(c, call, a, b) || (in && !same_dtype(c, call, a, in)))
        return false;
    const char *an = call->op->params[a_i].name, *bn = call->op->params[a_i + 1].name;
    const Shape *as = &a->type.shape, *bs = &b->type.shape;
    Shape out = {0};
    switch (id) {
    case OP_MM:
    case OP_ADDMM:
        if (!rank_is(c, call, a, 2, an) || !rank_is(c, call, b, 2, bn) ||
            !inner_match(c, call, as->dims[1], bs->dims[0], a, b))
            return false;
        out.ndim = 2;
        out.dims[0] = as->dims[0];
        out.dims[1] = bs->dims[1];
        break;
    case OP_BMM:
    case OP_BADDBMM:
    case OP_ADDBMM:
        if (!rank_is(c, call, a, 3, an) || !rank_is(c, call, b, 3, bn))
            return false;
        if (!dims_match(as->dims[0], bs->dims[0])) {
            error_at(c, call->loc, "%s(): %s and %s must have the same batch size, got %s and %s", call->op->name,
                     an, bn, dim_str(c, as->dims[0]), dim_str(c, bs->dims[0]));
            return false;
        }
        if (!inner_match(c, call, as->dims[2], bs->dims[1], a, b))
            return false;
        if (id != OP_ADDBMM)
            out.dims[out.ndim++] = as->dims[0];
        out.dims[out.ndim++] = as->dims[1];
        out.dims[out.ndim++] = bs->dims[2];
        break;
    case OP_MV:
    case OP_ADDMV:
        if (!rank_is(c, call, a, 2, an) || !rank_is(c, call, b, 1, bn) ||
            !inner_match(c, call, as->dims[1], bs->dims[0], a, b))
            return false;
        out.ndim = 1;
        out.dims[0] = as->dims[0];
        break;
    case OP_ADDR:
        if (!rank_is(c, call, a, 1, an) || !rank_is(c, call, b, 1, bn))
            return false;
        out.ndim = 2;
        out.dims[0] = as->dims[0];
        out.dims[1] = bs->dims[0];
        break;
    default:
        ICE("infer_mm on %s", call->op->name);
    }
    if (in && !broadcasts_to(c, call, in, &out, "input"))
        return false;
    call->type.dtype = a->type.dtype;
    call->type.shape = out;
    return true;
}

/* dot, vdot, cross, tensordot: both operands in one dtype. */
bool infer_dot(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *a = arg(call, 0), *b = arg(call, 1);
    OpId id = call->op->id;
    if (!not_bool(c, call, a) || !same_dtype(c, call, a, b))
        return false;
    const Shape *as = &a->type.shape, *bs = &b->type.shape;
    Shape out = {0};
    if (id == OP_DOT || id == OP_VDOT) {
        if (as->ndim != 1 || bs->ndim != 1) {
            error_at(c, call->loc, "1D tensors expected, but got %dD and %dD tensors", as->ndim, bs->ndim);
            return false;
        }
        if (!dims_match(as->dims[0], bs->dims[0])) {
            error_at(c, call->loc, "inconsistent tensor size, expected tensor %s and src %s to have the same number "
                     "of elements, but got %s and %s elements respectively", shape_str(c, as), shape_str(c, bs),
                     dim_str(c, as->dims[0]), dim_str(c, bs->dims[0]));
            return false;
        }
    } else if (id == OP_CROSS) {
        if (as->ndim != bs->ndim) {
            error_at(c, call->loc, "linalg.cross: inputs must have the same number of dimensions, got %d and %d",
                     as->ndim, bs->ndim);
            return false;
        }
        if (!broadcast(c, call, as, bs, &out))
            return false;
        int64_t dim = -1, three;
        Expr *de = named(call, "dim");
        if (de && !normalise_dim(c, de, out.ndim, &dim))
            return false;
        for (int i = 0; !de && i < as->ndim && dim < 0; i++)
            if (const_dim(as->dims[i], &three) && three == 3)
                dim = i;
        if (dim < 0) {
            error_at(c, call->loc, "no dimension of size 3 in input %s", shape_str(c, as));
            return false;
        }
        if (!const_dim(out.dims[dim], &three) || three != 3 || as->ndim == 0) {
            error_at(c, call->loc, "linalg.cross: inputs dimension %lld must have length 3. Got %s and %s",
                     (long long)dim, dim_str(c, as->dims[dim]), dim_str(c, bs->dims[dim]));
            return false;
        }
    } else {
        int64_t n;
        if (!int_param(c, call, "dims", 2, &n))
            return false;
        if (n < 0) {
            error_at(c, named(call, "dims")->loc, "tensordot expects dims >= 0, but got dims=%lld", (long long)n);
            return false;
        }
        if (n > as->ndim || n > bs->ndim) {
            error_at(c, call->loc, "tensordot expects dims < ndim_a or ndim_b, but got dims=%lld", (long long)n);
            return false;
        }
        for (int i = 0; i < n; i++) {
            int da = as->ndim - (int)n + i;
            if (!dims_match(as->dims[da], bs->dims[i])) {
                error_at(c, call->loc, "contracted dimensions need to match, but first has size %s in dim %d and "
                         "second has size %s in dim %d", dim_str(c, as->dims[da]), da, dim_str(c, bs->dims[i]), i);
                return false;
            }
        }
        for (int i = 0; i < as->ndim - n; i++)
            out.dims[out.ndim++] = as->dims[i];
        for (int i = (int)n; i < bs->ndim; i++)
            if (!push_dim(c, call, &out, bs->dims[i]))
                return false;
    }
    call->type.dtype = a->type.dtype;
    call->type.shape = out;
    return true;
}

/* F.bilinear: input1 [..., in1], input2 [..., in2], weight [out, in1, in2], bias [out] -> [..., out]. */
bool infer_bilinear(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x1 = arg(call, 0), *x2 = arg(call, 1), *w = arg(call, 2), *b;
    if (!tensor_arg(c, call, "bias", &b) || !require_float(c, call, x1) || !same_dtype(c, call, x1, x2) ||
        !same_dtype(c, call, x1, w) || (b && !same_dtype(c, call, x1, b)))
        return false;
    const Shape *s1 = &x1->type.shape, *s2 = &x2->type.shape, *ws = &w->type.shape;
    if (s1->ndim != s2->ndim || s1->ndim < 1) {
        error_at(c, call->loc, "bilinear(): input dimensions do not match: got %d and %d", s1->ndim, s2->ndim);
        return false;
    }
    for (int i = 0; i + 1 < s1->ndim; i++) {
        if (!dims_match(s1->dims[i], s2->dims[i])) {
            error_at(c, call->loc, "bilinear(): input batch dimensions do not match at dim %d: got %s and %s", i,
                     dim_str(c, s1->dims[i]), dim_str(c, s2->dims[i]));
            return false;
        }
    }
    if (!rank_is(c, call, w, 3, "weight"))
        return false;
    for (int k = 0; k < 2; k++) {
        const Shape *s = k ? s2 : s1;
        if (!dims_match(s->dims[s->ndim - 1], ws->dims[1 + k])) {
            error_at(c, call->loc, "bilinear(): input%d size does not match weight size: got %s but expected %s",
                     k + 1, dim_str(c, s->dims[s->ndim - 1]), dim_str(c, ws->dims[1 + k]));
            return false;
        }
    }
    if (b && (b->type.shape.ndim != 1 || !dims_match(b->type.shape.dims[0], ws->dims[0]))) {
        error_at(c, b->loc, "bilinear(): bias size does not match weight size: got %s but expected %s",
                 shape_str(c, &b->type.shape), dim_str(c, ws->dims[0]));
        return false;
    }
    call->type.dtype = x1->type.dtype;
    call->type.shape = *s1;
    call->type.shape.dims[s1->ndim - 1] = ws->dims[0];
    return true;
}

/* chain_matmul(a, b, c) and linalg_multi_dot(a, b, c): the first and last of
 * multi_dot may be vectors. */
bool infer_multi_dot(Ctx *c, Expr *call)
{
    Expr **ts = arena_alloc(c->arena, (size_t)call->op->nparams * sizeof *ts);
    int n = 0;
    for (int i = 0; i < call->op->nparams; i++) {
        if (!arg(call, i))
            continue;
        if (!require_tensor(c, call, i))
            return false;
        ts[n++] = arg(call, i);
    }
    bool multi = call->op->id == OP_LINALG_MULTI_DOT;
    if (n < (multi ? 2 : 1)) {
        error_at(c, call->loc, multi ? "multi_dot(): expected at least 2 tensors but got %d"
                                     : "chain_matmul(): Expected one or more matrices", n);
        return false;
    }
    Shape out = {0};
    Poly *k = NULL;
    for (int i = 0; i < n; i++) {
        const Shape *s = &ts[i]->type.shape;
        if (i && !same_dtype(c, call, ts[0], ts[i]))
            return false;
        bool vec_ok = multi && (i == 0 || i == n - 1);
        if (s->ndim != 2 && !(vec_ok && s->ndim == 1)) {
            error_at(c, ts[i]->loc, "%s(): tensor %d must be 2D%s but got %dD", call->op->name, i,
                     vec_ok ? " or 1D" : "", s->ndim);
            return false;
        }
        /* a 1-D first operand is a row, a 1-D last one a column, both dropped from the result */
        Poly *rows = s->ndim == 2 ? s->dims[0] : i == 0 ? NULL : s->dims[0];
        Poly *cols = s->ndim == 2 ? s->dims[1] : i == 0 ? s->dims[0] : NULL;
        if (i && !dims_match(k, rows)) {
            error_at(c, call->loc, "%s(): tensors %d and %d with shapes %s and %s cannot be multiplied", call->op->name,
                     i - 1, i, shape_str(c, &ts[i - 1]->type.shape), shape_str(c, s));
            return false;
        }
        if (i == 0 && rows)
            out.dims[out.ndim++] = rows;
        k = cols;
    }
    if (k)
        out.dims[out.ndim++] = k;
    if (!not_bool(c, call, ts[0]))
        return false;
    call->type.dtype = ts[0]->type.dtype;
    call->type.shape = out;
    return true;
}

/* einsum: subscripts are letters; every label's size agrees (or is 1 and
 * broadcasts); the implicit output is the labels seen once, in PyTorch's
 * order (A-Z before a-z).  "..." is not supported yet. */
bool infer_einsum(Ctx *c, Expr *call)
{
    Expr *eq = arg(call, 0);
    if (eq->kind != E_STRING) {
        error_at(c, eq->loc, "einsum(): the equation must be a string such as \"ij,jk->ik\"");
        return false;
    }
    Expr **ops = arena_alloc(c->arena, (size_t)call->op->nparams * sizeof *ops);
    int nops = 0;
    for (int i = 1; i < call->op->nparams; i++) {
        Expr *o = arg(call, i);
        if (!o)
            continue;
        if (!require_tensor(c, call, i))
            return false;
        if (nops && !same_dtype(c, call, ops[0], o))
            return false;
        ops[nops++] = o;
    }
    Poly *size[52] = {0};
    int count[52] = {0};
    const char *p = eq->text;
    int k = 0;
    for (;; p++) {
        const Shape *s = k < nops ? &ops[k]->type.shape : NULL;
        int n = 0;
        for (; *p && *p != ',' && *p != '-'; p++) {
            if (*p == ' ')
                continue;
            if (*p == '.') {
                error_at(c, eq->loc, "einsum(): '...' (broadcast dimensions) is not supported yet");
                return false;
            }
            int l = *p >= 'A' && *p <= 'Z' ? *p - 'A' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 26 : -1;
            if (l < 0) {
                error_at(c, eq->loc, "einsum(): invalid subscript given at index %d in the equation string, "
                         "subscripts must be in [a-zA-Z]", (int)(p - eq->text));
                return false;
            }
            if (s && n < s->ndim) {
                Poly *d = s->dims[n];
                int64_t one;
                if (!size[l] || (const_dim(size[l], &one) && one == 1))
                    size[l] = d;
                else if (!dims_match(size[l], d) && !(const_dim(d, &one) && one == 1)) {
                    error_at(c, call->loc, "einsum(): subscript %c has size %s for operand %d which does not "
                             "broadcast with previously seen size %s", *p, dim_str(c, d), k, dim_str(c, size[l]));
                    return false;
                }
            }
            count[l]++;
            n++;
        }
        if (k >= nops) {
            error_at(c, call->loc, "einsum(): fewer operands were provided than specified in the equation");
            return false;
        }
        if (n != s->ndim) {
            error_at(c, ops[k]->loc, "einsum(): the number of subscripts in the equation (%d) does not match the "
                     "number of dimensions (%d) for operand %d and no ellipsis was given", n, s->ndim, k);
            return false;
        }
        k++;
        if (*p != ',')
            break;
    }
    if (k != nops) {
        error_at(c, call->loc, "einsum(): more operands were provided than specified in the equation");
        return false;
    }
    Shape out = {0};
    if (*p == '-') {
        if (p[1] != '>') {
            error_at(c, eq->loc, "einsum(): found '-' in the equation but not followed by '>'");
            return false;
        }
        bool seen[52] = {0};
        for (p += 2; *p; p++) {
            if (*p == ' ')
                continue;
            int l = *p >= 'A' && *p <= 'Z' ? *p - 'A' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 26 : -1;
            if (l < 0 || !count[l] || seen[l]) {
                error_at(c, eq->loc, l < 0 ? "einsum(): invalid subscript '%c' in the output"
                                   : !count[l] ? "einsum(): output subscript %c does not appear in the equation for any input operand"
                                               : "einsum(): output subscript %c appears more than once in the output", *p);
                return false;
            }
            seen[l] = true;
            if (out.ndim == MAX_DIMS) {
                error_at(c, eq->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
                return false;
            }
            out.dims[out.ndim++] = size[l];
        }
    } else {
        for (int l = 0; l < 52; l++) {
            if (count[l] != 1)
                continue;
            if (out.ndim == MAX_DIMS) {
                error_at(c, eq->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
                return false;
            }
            out.dims[out.ndim++] = size[l];
        }
    }
    call->type.dtype = ops[0]->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- inverse, cholesky, qr, svd, eigh, lu_factor, solve ----------------- */

static const char *linalg_name(OpId id)
{
    switch (id) {
    case OP_INVERSE:
    case OP_LINALG_INV_EX:
        return "linalg.inv";
    case OP_QR:
        return "linalg.qr";
    case OP_SVD:
    case OP_LINALG_SVD:
        return "linalg.svd";
    case OP_CHOLESKY:
        return "cholesky";
    case OP_CHOLESKY_INVERSE:
        return "cholesky_inverse";
    case OP_CHOLESKY_SOLVE:
        return "cholesky_solve";
    case OP_LINALG_CHOLESKY:
    case OP_LINALG_CHOLESKY_EX:
        return "linalg.cholesky";
    case OP_LINALG_QR:
        return "linalg.qr";
    case OP_LINALG_SVDVALS:
        return "linalg.svdvals";
    case OP_LINALG_SOLVE:
        return "linalg.solve";
    case OP_LINALG_EIGH:
        return "linalg.eigh";
    case OP_LINALG_EIGVALSH:
        return "linalg.eigvalsh";
    case OP_LINALG_LU_FACTOR:
        return "linalg.lu_factor";
    case OP_PINVERSE:
        return "linalg.pinv";
    default:
        return "torch.triangular_solve";
    }
}

/* f32 or f64: LAPACK and cuSOLVER have no f16/bf16 (autocast may still cast them). */
static bool linalg_dtype(Ctx *c, Expr *call, Expr *x)
{
    DType t = x->type.dtype;
    if (t == DT_F32 || t == DT_F64 || (dtype_is_float(t) && call->autocast_on && !c->autocast_ran))
        return true;
    error_at(c, x->loc, dtype_is_float(t) ? "%s: Low precision dtypes not supported. Got %s"
                                          : "%s: Expected a floating point or complex tensor as input. Got %s",
             linalg_name(call->op->id), dtype_name(t));
    return false;
}

static bool matrices(Ctx *c, Expr *call, Expr *x, const char *what, bool square)
{
    const Shape *s = &x->type.shape;
    if (s->ndim < 2) {
        error_at(c, x->loc, "%s: The input tensor %s must have at least 2 dimensions.", linalg_name(call->op->id), what);
        return false;
    }
    if (square && !dims_match(s->dims[s->ndim - 2], s->dims[s->ndim - 1])) {
        error_at(c, x->loc, "%s: %s must be batches of square matrices, but they are %s by %s matrices",
                 linalg_name(call->op->id), what, dim_str(c, s->dims[s->ndim - 2]), dim_str(c, s->dims[s->ndim - 1]));
        return false;
    }
    return true;
}

/* min(m, n) when known at compile time. */
static Poly *min_dim(Ctx *c, Expr *call, Poly *m, Poly *n)
{
    int64_t a, b;
    if (dims_match(m, n))
        return m;
    if (const_dim(m, &a) && const_dim(n, &b))
        return a < b ? m : n;
    error_at(c, call->loc, "%s(): the smaller of %s and %s is not known at compile time", call->op->name,
             dim_str(c, m), dim_str(c, n));
    return NULL;
}

static Type matrix_type(DType t, const Shape *batch, Poly *rows, Poly *cols)
{
    Type r = {.dtype = t, .shape = *batch};
    if (rows)
        r.shape.dims[r.shape.ndim++] = rows;
    if (cols)
        r.shape.dims[r.shape.ndim++] = cols;
    return r;
}

/* linalg.solve: A [..., n, n], B [..., n, k], or B [n] / [..., n] a
 * vector when its batch is A's; left=false solves X A = B. */
static bool linalg_solve_type(Ctx *c, Expr *call, Expr *x)
{
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    if (!require_tensor(c, call, 1))
        return false;
    Expr *b = arg(call, 1);
    if (!matrices(c, call, x, "A", true))
        return false;
    if (x->type.dtype != b->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, call->loc, "linalg.solve: Expected A and B to have the same dtype, but found A of type %s and B "
                 "of type %s instead", dtype_name(x->type.dtype), dtype_name(b->type.dtype));
        return false;
    }
    bool left;
    if (!bool_param(c, call, "left", true, &left))
        return false;
    const Shape *bs = &b->type.shape;
    Poly *n = xs->dims[xs->ndim - 1];
    Shape ba = leading(xs, 2);
    if (!left) {
        /* X A = B: B [..., k, n], X of B's shape */
        if (bs->ndim < 2 || !dims_match(bs->dims[bs->ndim - 1], n)) {
            error_at(c, call->loc, "linalg.solve: Incompatible shapes of A and B for the equation XA = B (%s and %s)",
                     shape_str(c, xs), shape_str(c, bs));
            return false;
        }
        Shape bb = leading(bs, 2), batch;
        if (!broadcast(c, call, &ba, &bb, &batch))
            return false;
        call->type = matrix_type(t, &batch, bs->dims[bs->ndim - 2], n);
        return true;
    }
    Shape a_rows = leading(xs, 1);
    bool vector = bs->ndim == 1 || (bs->ndim == xs->ndim - 1 && shape_equal(bs, &a_rows));
    Poly *rows = vector ? bs->dims[bs->ndim - 1] : bs->ndim >= 2 ? bs->dims[bs->ndim - 2] : NULL;
    if (bs->ndim == 0 || !left || !rows || !dims_match(rows, n)) {
        error_at(c, call->loc, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (%s and %s)",
                 shape_str(c, xs), shape_str(c, bs));
        return false;
    }
    Shape bb = leading(bs, vector ? 1 : 2), batch;
    if (!broadcast(c, call, &ba, &bb, &batch))
        return false;
    call->type = matrix_type(t, &batch, n, vector ? NULL : bs->dims[bs->ndim - 1]);
    return true;
}

/* cholesky_solve and triangular_solve: input is b [..., m, k]; the
 * coefficients A [..., m, m]. */
static bool coefficient_solve_type(Ctx *c, Expr *call, Expr *x)
{
    OpId id = call->op->id;
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    if (!require_tensor(c, call, 1))
        return false;
    Expr *a = arg(call, 1);
    if (id == OP_TRIANGULAR_SOLVE) {
        Expr *both[2] = {x, a};
        for (int i = 0; i < 2; i++)
            if (both[i]->type.shape.ndim < 2) {
                error_at(c, both[i]->loc, "torch.triangular_solve: Expected %s to have at least 2 dimensions, "
                         "but it has %d dimensions instead", i ? "A" : "b", both[i]->type.shape.ndim);
                return false;
            }
    }
    if (!matrices(c, call, x, "b", false) || !matrices(c, call, a, "A", true))
        return false;
    if (x->type.dtype != a->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, call->loc, "Expected b and A to have the same dtype, but found b of type %s and A of type %s "
                 "instead.", dtype_name(x->type.dtype), dtype_name(a->type.dtype));
        return false;
    }
    const Shape *as = &a->type.shape;
    Poly *m = as->dims[as->ndim - 1];
    if (!dims_match(m, xs->dims[xs->ndim - 2])) {
        error_at(c, call->loc, "Incompatible matrix sizes for %s: each A matrix is %s by %s but each b matrix is "
                 "%s by %s", id == OP_CHOLESKY_SOLVE ? "cholesky_solve" : "triangular_solve", dim_str(c, m),
                 dim_str(c, m), dim_str(c, xs->dims[xs->ndim - 2]), dim_str(c, xs->dims[xs->ndim - 1]));
        return false;
    }
    Shape bx = leading(xs, 2), ba = leading(as, 2), batch;
    if (!broadcast(c, call, &bx, &ba, &batch))
        return false;
    call->type = matrix_type(t, &batch, m, xs->dims[xs->ndim - 1]);
    if (id == OP_TRIANGULAR_SOLVE) {
        Type coeff = matrix_type(t, &batch, m, m);
        more_results(c, call, 1, &coeff);
    }
    bool upper;
    return bool_param(c, call, "upper", id == OP_TRIANGULAR_SOLVE, &upper);
}

bool infer_linalg(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0);
    if (!linalg_dtype(c, call, x))
        return false;
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    bool square = id == OP_INVERSE || id == OP_LINALG_INV_EX || id == OP_CHOLESKY || id == OP_CHOLESKY_INVERSE ||
                  id == OP_LINALG_CHOLESKY || id == OP_LINALG_CHOLESKY_EX || id == OP_LINALG_EIGH ||
                  id == OP_LINALG_EIGVALSH;
    if (id == OP_LINALG_SOLVE)
        return linalg_solve_type(c, call, x);
    if (id == OP_CHOLESKY_SOLVE || id == OP_TRIANGULAR_SOLVE)
        return coefficient_solve_type(c, call, x);
    if (!matrices(c, call, x, "A", square))
        return false;
    Shape batch = leading(xs, 2);
    Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1];
    switch (id) {
    case OP_INVERSE:
    case OP_CHOLESKY:
    case OP_CHOLESKY_INVERSE:
    case OP_LINALG_CHOLESKY:
        call->type = x->type;
        return true;
    case OP_PINVERSE:
        call->type = matrix_type(t, &batch, n, m);
        return true;
    case OP_LINALG_CHOLESKY_EX: {
        call->type = x->type;
        Type info = {.dtype = DT_I32, .shape = batch};
        more_results(c, call, 1, &info);
        return true;
    }
    case OP_LINALG_EIGH:
    case OP_LINALG_EIGVALSH: {
        const char *uplo;
        if (!str_param(c, call, "UPLO", "L", &uplo))
            return false;
        if (strcmp(uplo, "L") != 0 && strcmp(uplo, "U") != 0) {
            error_at(c, named(call, "UPLO")->loc, "Expected UPLO argument to be 'L' or 'U', but got %s", uplo);
            return false;
        }
        call->type = matrix_type(t, &batch, n, NULL);
        if (id == OP_LINALG_EIGH) {
            Type vectors = x->type;
            more_results(c, call, 1, &vectors);
        }
        return true;
    }
    case OP_LINALG_SVDVALS: {
        Poly *k = min_dim(c, call, m, n);
        if (!k)
            return false;
        call->type = matrix_type(t, &batch, k, NULL);
        return true;
    }
    case OP_LINALG_LU_FACTOR: {
        bool pivot;
        Poly *k = min_dim(c, call, m, n);
        if (!k || !bool_param(c, call, "pivot", true, &pivot))
            return false;
        call->type = x->type;
        Type pivots = matrix_type(DT_I32, &batch, k, NULL);
        more_results(c, call, 1, &pivots);
        return true;
    }
    case OP_LINALG_QR: {
        const char *mode;
        if (!str_param(c, call, "mode", "reduced", &mode))
            return false;
        bool complete = strcmp(mode, "complete") == 0, r_only = strcmp(mode, "r") == 0;
        if (!complete && !r_only && strcmp(mode, "reduced") != 0) {
            error_at(c, named(call, "mode")->loc, "qr received unrecognized mode '%s' but expected one of 'reduced' "
                     "(default), 'r', or 'complete'", mode);
            return false;
        }
        Poly *k = complete ? m : min_dim(c, call, m, n);
        if (!k)
            return false;
        Shape empty = {.ndim = 1, .dims = {poly_const(c, 0)}};
        call->type = r_only ? (Type){.dtype = t, .shape = empty} : matrix_type(t, &batch, m, k);
        Type r = matrix_type(t, &batch, k, n);
        more_results(c, call, 1, &r);
        return true;
    }
    case OP_LINALG_INV_EX: {
        call->type = x->type;
        Type info = {.dtype = DT_I32, .shape = batch};
        more_results(c, call, 1, &info);
        return true;
    }
    case OP_QR: {
        bool some;
        if (!bool_param(c, call, "some", true, &some))
            return false;
        Poly *k = some ? min_dim(c, call, m, n) : m;
        if (!k)
            return false;
        call->type = matrix_type(t, &batch, m, k);
        Type r = matrix_type(t, &batch, k, n);
        more_results(c, call, 1, &r);
        return true;
    }
    case OP_SVD:
    case OP_LINALG_SVD: {
        bool reduced, uv = true;
        if (id == OP_SVD ? !bool_param(c, call, "some", true, &reduced) || !bool_param(c, call, "compute_uv", true, &uv)
                         : !bool_param(c, call, "full_matrices", true, &reduced))
            return false;
        if (id == OP_LINALG_SVD)
            reduced = !reduced;
        Poly *k = min_dim(c, call, m, n);
        if (!k)
            return false;
        bool full = !reduced || !uv; /* torch.svd(compute_uv=False): zero-filled [m, m] and [n, n] */
        call->type = matrix_type(t, &batch, m, full ? m : k);
        Type rest[2] = {matrix_type(t, &batch, k, NULL),
                        id == OP_SVD ? matrix_type(t, &batch, n, full ? n : k) : matrix_type(t, &batch, full ? n : k, n)};
        more_results(c, call, 2, rest);
        return true;
    }
    default:
        ICE("infer_linalg on %s", call->op->name);
    }
}

/* ---- the solves and matrix functions: lu_solve, lstsq, matrix_exp,
 * householder_product/orgqr/ormqr, tensorinv, tensorsolve --- */

static const char *linalg_solve_name(OpId id)
{
    switch (id) {
    case OP_LU_SOLVE: return "linalg.lu_solve";
    case OP_LINALG_LSTSQ: return "torch.linalg.lstsq";
    case OP_LINALG_MATRIX_EXP: return "linalg.matrix_exp";
    case OP_ORMQR: return "torch.ormqr";
    case OP_LINALG_TENSORINV: return "linalg.tensorinv";
    case OP_LINALG_TENSORSOLVE: return "linalg.tensorsolve";
    default: return "torch.linalg.householder_product";
    }
}

static bool more_dtype(Ctx *c, Expr *call, Expr *x)
{
    DType t = x->type.dtype;
    if (t == DT_F32 || t == DT_F64 || (dtype_is_float(t) && call->autocast_on && !c->autocast_ran))
        return true;
    error_at(c, x->loc, dtype_is_float(t) ? "%s: Low precision dtypes not supported. Got %s"
                                          : "%s: Expected a floating point or complex tensor as input. Got %s",
             linalg_solve_name(call->op->id), dtype_name(t));
    return false;
}

static bool more_same_dtype(Ctx *c, Expr *call, Expr *a, Expr *b, const char *an, const char *bn)
{
    if (a->type.dtype == b->type.dtype || (call->autocast_on && !c->autocast_ran))
        return true;
    error_at(c, call->loc, "%s: Expected %s and %s to have the same dtype, but found %s of type %s and %s of type %s "
             "instead", linalg_solve_name(call->op->id), an, bn, an, dtype_name(a->type.dtype), bn,
             dtype_name(b->type.dtype));
    return false;
}

static bool more_matrix(Ctx *c, Expr *call, Expr *x, const char *what, bool square)
{
    const Shape *s = &x->type.shape;
    if (s->ndim < 2) {
        error_at(c, x->loc, "%s: The input tensor %s must have at least 2 dimensions.", linalg_solve_name(call->op->id),
                 what);
        return false;
    }
    if (square && !dims_match(s->dims[s->ndim - 2], s->dims[s->ndim - 1])) {
        error_at(c, x->loc, "%s: %s must be batches of square matrices, but they are %s by %s matrices",
                 linalg_solve_name(call->op->id), what, dim_str(c, s->dims[s->ndim - 2]), dim_str(c, s->dims[s->ndim - 1]));
        return false;
    }
    return true;
}

/* The product of s's dims [from, to) when all are known; -1 otherwise. */
static int64_t const_numel(const Shape *s, int from, int to)
{
    int64_t n = 1, v;
    for (int i = from; i < to; i++) {
        if (!const_dim(s->dims[i], &v))
            return -1;
        n *= v;
    }
    return n;
}

static bool known_le(const Poly *a, const Poly *b)
{
    int64_t x, y;
    return dims_match(a, b) || (const_dim(a, &x) && const_dim(b, &y) && x <= y);
}

/* householder_product and orgqr: input [..., m, n] with n <= m and tau
 * [..., k] with k <= n, giving input's type; ormqr multiplies other by
 * that Q (left or right, transposed or not), giving other's type. */
static bool householder_type(Ctx *c, Expr *call, Expr *x, const char *name)
{
    OpId id = call->op->id;
    const Shape *xs = &x->type.shape;
    Expr *tau = arg(call, 1);
    const Shape *ts = &tau->type.shape;
    if (xs->ndim < 2 || ts->ndim < 1) {
        error_at(c, (xs->ndim < 2 ? x : tau)->loc, "%s: %s must have at least %d dimensions.", name,
                 xs->ndim < 2 ? "input" : "tau", xs->ndim < 2 ? 2 : 1);
        return false;
    }
    if (!more_same_dtype(c, call, x, tau, "input", "tau"))
        return false;
    Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1], *k = ts->dims[ts->ndim - 1];
    Shape xb = leading(xs, 2), tb = leading(ts, 1);
    if (!shape_equal(&xb, &tb)) {
        error_at(c, tau->loc, "%s: Expected batch dimensions of tau to be equal to input.shape[:-2], but got %s",
                 name, shape_str(c, &tb));
        return false;
    }
    if (id != OP_ORMQR) {
        if (!known_le(n, m)) {
            error_at(c, x->loc, "%s: input.shape[-2] must be greater than or equal to input.shape[-1]", name);
            return false;
        }
        if (!known_le(k, n)) {
            error_at(c, tau->loc, "%s: input.shape[-1] must be greater than or equal to tau.shape[-1]", name);
            return false;
        }
        call->type = x->type;
        return true;
    }
    Expr *o = arg(call, 2);
    const Shape *os = &o->type.shape;
    bool left, trans;
    if (!bool_param(c, call, "left", true, &left) || !bool_param(c, call, "transpose", false, &trans) ||
        !more_same_dtype(c, call, x, o, "input", "other"))
        return false;
    if (os->ndim != xs->ndim) {
        error_at(c, o->loc, "torch.ormqr: other.dim() must be equal to input.dim()");
        return false;
    }
    Poly *rows = os->dims[os->ndim - (left ? 2 : 1)];
    if (!dims_match(rows, m)) {
        error_at(c, o->loc, "torch.ormqr: other.shape[%d] must be equal to input.shape[-2]", left ? -2 : -1);
        return false;
    }
    if (!known_le(k, n) || !known_le(k, m)) {
        error_at(c, tau->loc, "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-%d]",
                 known_le(k, n) ? 2 : 1);
        return false;
    }
    Shape ob = leading(os, 2);
    if (!shape_equal(&ob, &xb)) {
        error_at(c, o->loc, "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but "
                 "got %s", shape_str(c, &ob));
        return false;
    }
    call->type = o->type;
    return true;
}

/* linalg_tensorinv: ind= splits input's dims into a front and a back of
 * equal product; the result has the back's dims, then the front's. */
static bool tensorinv_type(Ctx *c, Expr *call, Expr *x)
{
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    int64_t ind;
    if (!int_param(c, call, "ind", 2, &ind))
        return false;
    if (ind <= 0) {
        error_at(c, named(call, "ind") ? named(call, "ind")->loc : call->loc, "Expected a strictly positive "
                 "integer for 'ind', but got %lld", (long long)ind);
        return false;
    }
    if (ind > xs->ndim) {
        error_at(c, call->loc, "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                 "prod(self.shape[:ind]), but ind %lld exceeds the %d dimensions", (long long)ind, xs->ndim);
        return false;
    }
    int64_t front = const_numel(xs, 0, (int)ind), back = const_numel(xs, (int)ind, xs->ndim);
    if (front < 0 || back < 0) {
        error_at(c, x->loc, "linalg_tensorinv(): the dims of %s must be known at compile time",
                 shape_str(c, xs));
        return false;
    }
    if (front != back) {
        error_at(c, call->loc, "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                 "prod(self.shape[:ind]), but got %lld != %lld", (long long)back, (long long)front);
        return false;
    }
    Shape out = {0};
    for (int i = (int)ind; i < xs->ndim; i++)
        out.dims[out.ndim++] = xs->dims[i];
    for (int i = 0; i < ind; i++)
        out.dims[out.ndim++] = xs->dims[i];
    call->type = (Type){.dtype = t, .shape = out};
    return true;
}

bool infer_linalg_solve(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    const char *name = linalg_solve_name(id);
    int ntensors = id == OP_LU_SOLVE || id == OP_ORMQR ? 3 : id == OP_LINALG_MATRIX_EXP || id == OP_LINALG_TENSORINV ? 1 : 2;
    for (int i = 0; i < ntensors; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0);
    if (!more_dtype(c, call, x))
        return false;
    const Shape *xs = &x->type.shape;
    DType t = x->type.dtype;
    switch (id) {
    case OP_LU_SOLVE: {
        /* torch.lu_solve(b, LU, pivots): b [..., m, k], LU [..., m, m], pivots i32 [..., m] */
        Expr *lu = arg(call, 1), *piv = arg(call, 2);
        if (!more_matrix(c, call, lu, "A", true) || !more_matrix(c, call, x, "B", false))
            return false;
        if (piv->type.dtype != DT_I32) {
            error_at(c, piv->loc, "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
            return false;
        }
        if (!more_same_dtype(c, call, lu, x, "LU", "B"))
            return false;
        const Shape *ls = &lu->type.shape, *ps = &piv->type.shape;
        Poly *m = ls->dims[ls->ndim - 1];
        if (!dims_match(xs->dims[xs->ndim - 2], m)) {
            error_at(c, call->loc, "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (%sx%s and "
                     "%sx%s)", dim_str(c, m), dim_str(c, m), dim_str(c, xs->dims[xs->ndim - 2]),
                     dim_str(c, xs->dims[xs->ndim - 1]));
            return false;
        }
        Shape lb = leading(ls, 2), pb = leading(ps, 1);
        if (ps->ndim < 1 || !dims_match(ps->dims[ps->ndim - 1], m) || !shape_equal(&lb, &pb)) {
            error_at(c, piv->loc, "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                     "pivots with shape %s instead", shape_str(c, ps));
            return false;
        }
        Shape bb = leading(xs, 2), batch;
        if (!broadcast(c, call, &bb, &lb, &batch))
            return false;
        call->type = matrix_type(t, &batch, m, xs->dims[xs->ndim - 1]);
        return true;
    }
    case OP_LINALG_LSTSQ: {
        Expr *b = arg(call, 1);
        if (!more_matrix(c, call, x, "A", false) || !more_same_dtype(c, call, x, b, "A", "B"))
            return false;
        double rcond;
        if (!float_param(c, call, "rcond", 0, &rcond))
            return false;
        const Shape *bs = &b->type.shape;
        Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1];
        bool vector = bs->ndim == xs->ndim - 1;
        if (bs->ndim < 1 || !dims_match(bs->dims[bs->ndim - (vector ? 1 : 2)], m) || (!vector && bs->ndim < 2)) {
            error_at(c, call->loc, "torch.linalg.lstsq: input.size(-2) should match other.size(-%d)", vector ? 1 : 2);
            return false;
        }
        Shape ab = leading(xs, 2), bb = leading(bs, vector ? 1 : 2), batch;
        if (!broadcast(c, call, &ab, &bb, &batch))
            return false;
        call->type = matrix_type(t, &batch, n, vector ? NULL : bs->dims[bs->ndim - 1]);
        return true;
    }
    case OP_LINALG_MATRIX_EXP:
        if (!more_matrix(c, call, x, "A", true))
            return false;
        call->type = x->type;
        return true;
    case OP_LINALG_HOUSEHOLDER_PRODUCT:
    case OP_ORGQR:
    case OP_ORMQR:
        return householder_type(c, call, x, name);
    case OP_LINALG_TENSORINV:
        return tensorinv_type(c, call, x);
    case OP_LINALG_TENSORSOLVE: {
        Expr *b = arg(call, 1);
        const Shape *bs = &b->type.shape;
        if (!more_same_dtype(c, call, x, b, "A", "B"))
            return false;
        if (bs->ndim > xs->ndim) {
            error_at(c, call->loc, "linalg.tensorsolve: B has more dimensions (%d) than A (%d)", bs->ndim, xs->ndim);
            return false;
        }
        int64_t front = const_numel(xs, 0, bs->ndim), back = const_numel(xs, bs->ndim, xs->ndim);
        if (front < 0 || back < 0) {
            error_at(c, x->loc, "linalg_tensorsolve(): the dims of %s must be known at compile time", shape_str(c, xs));
            return false;
        }
        if (front != back) {
            error_at(c, call->loc, "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                     "prod(self.shape[:other.ndim]), but got %lld != %lld", (long long)back, (long long)front);
            return false;
        }
        Shape lead = {0};
        for (int i = 0; i < bs->ndim; i++)
            lead.dims[lead.ndim++] = xs->dims[i];
        if (!shape_equal(&lead, bs)) {
            error_at(c, call->loc, "linalg.tensorsolve: Incompatible shapes of A and B for the equation AX = B (%s and "
                     "%s)", shape_str(c, xs), shape_str(c, bs));
            return false;
        }
        Shape out = {0};
        for (int i = bs->ndim; i < xs->ndim; i++)
            out.dims[out.ndim++] = xs->dims[i];
        call->type = (Type){.dtype = t, .shape = out};
        return true;
    }
    default:
        ICE("infer_linalg_solve on %s", call->op->name);
    }
}
