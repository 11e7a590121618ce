/* grad_rules.c: which nodes autodiff can differentiate, and for which operands.
 *
 * An op has a gradient when its ops.def row names a gradient rule
 * (OpInfo.grad_rule); the back end's emit_grad runs that rule.  What the
 * row cannot say lives here: the conditions under which a rule refuses a
 * node (a dtype-converting prod, a batch-broadcast solve, qr's mode "r",
 * lstm_cell's computed b_hh, ...) and the operands a rule gives no
 * gradient (a loss's weight, batch_norm's running statistics, ...).  Both
 * answer with the user's error text, or NULL; autodiff.c reports it.
 *
 * The few facts the gradient emitters share with these checks (which ops
 * grad_linalg.c handles, where lstm_cell's b_hh is read from,
 * whether dropout draws a mask) are here too, so both layers ask one
 * function.
 */
#include "middle.h"

#include <string.h>

/* ---- facts the rules and their emitters share ------------------------------------ */

bool linalg_grad_op(OpId id)
{
    switch (id) {
    case OP_CHAIN_MATMUL: case OP_LINALG_MULTI_DOT: case OP_INVERSE: case OP_LINALG_INV_EX: case OP_LINALG_SOLVE:
    case OP_TRIANGULAR_SOLVE: case OP_CHOLESKY: case OP_LINALG_CHOLESKY: case OP_LINALG_CHOLESKY_EX:
    case OP_CHOLESKY_INVERSE: case OP_CHOLESKY_SOLVE: case OP_LINALG_EIGH: case OP_LINALG_EIGVALSH:
    case OP_LINALG_SVDVALS: case OP_NUCLEAR_NORM: case OP_PINVERSE: case OP_LINALG_LSTSQ: case OP_LINALG_MATRIX_EXP:
    case OP_LINALG_TENSORINV: case OP_LINALG_TENSORSOLVE: case OP_QR: case OP_LINALG_QR:
    case OP_SVD: case OP_LINALG_SVD: case OP_LINALG_LU_FACTOR: case OP_LU_SOLVE:
    case OP_LINALG_HOUSEHOLDER_PRODUCT: case OP_ORGQR: case OP_ORMQR:
        return true;
    default:
        return false;
    }
}

const Value *lstm_b_hh_source(const Node *n)
{
    const Value *v = n->nin > 6 ? n->in[6] : NULL;
    if (!v || v->kind != V_TEMP)
        return v;
    const Node *d = v->def;
    if (d && d->op->id == OP_CAST && d->in[0] && d->in[0]->kind != V_TEMP && dtype_is_float(d->in[0]->type.dtype))
        return d->in[0];
    return NULL;
}

bool lstm_b_hh_recast(const Node *n)
{
    const Value *src = lstm_b_hh_source(n);
    return src && src != n->in[6];
}

bool dropout_draws(const Node *n)
{
    return n->op->id == OP_DROPOUT && attr_bool(n, "training", true) &&
           attr_number(n, "p", "0.5", DT_F64) > 0;
}

/* ---- the conditions of the rules ------------------------------------------------- */

/* Whether two operands' batch dims (all but the last two) are the same. */
static bool same_batch(const Shape *a, const Shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i + 2 < a->ndim; i++)
        if (!poly_equal(a->dims[i], b->dims[i]))
            return false;
    return true;
}

/* qr's mode: 0 reduced, 1 complete, 2 r only (as the forward's kernel). */
static int qr_mode(const Node *n)
{
    if (n->op->id == OP_QR)
        return attr_bool(n, "some", true) ? 0 : 1;
    const char *ms = attr_str(n, "mode", "reduced");
    return strcmp(ms, "complete") == 0 ? 1 : strcmp(ms, "r") == 0 ? 2 : 0;
}

/* The solves: both operands with the same batch dims (lstsq's b may be a
 * vector). */
static const char *solve_missing(Ctx *c, const Node *n)
{
    bool vector_b = n->op->id == OP_LINALG_LSTSQ && n->in[1] &&
                    n->in[1]->type.shape.ndim == n->in[0]->type.shape.ndim - 1;
    if (n->in[1] && !vector_b && !same_batch(&n->in[0]->type.shape, &n->in[1]->type.shape))
        return arena_printf(c->arena, "%s: the gradient with a vector or batch-broadcast operand is not supported yet "
                                      "(give both operands the same batch dims)", n->op->name);
    return NULL;
}

/* qr, linalg_qr: through Q, of a tall or square matrix of a fixed size */
static const char *qr_missing(Ctx *c, const Node *n)
{
    int64_t m = 0, cols = 0;
    bool fixed = fixed_matrix(&n->in[0]->type.shape, &m, &cols);
    int mode = qr_mode(n);
    if (mode == 2)
        return "linalg_qr: the derivative of linalg.qr depends on Q, which is not computed when mode='r'; use "
               "linalg_qr(A, mode=\"reduced\") to differentiate through it";
    if (fixed && mode == 1 && m > cols)
        return arena_printf(c->arena, "%s: the QR decomposition is not differentiable when mode='complete' and "
                                      "nrows > ncols", n->op->name);
    if (!fixed || m < cols)
        return arena_printf(c->arena, "%s: the gradient of the QR of a wide matrix (more columns than rows) is "
                                      "not supported yet", n->op->name);
    return NULL;
}

/* svd, linalg_svd: with the singular vectors, the full ones of a square
 * matrix only */
static const char *svd_missing(Ctx *c, const Node *n)
{
    OpId id = n->op->id;
    const Shape *sa = &n->in[0]->type.shape;
    bool square = sa->ndim >= 2 && poly_equal(sa->dims[sa->ndim - 2], sa->dims[sa->ndim - 1]);
    bool full = id == OP_SVD ? !attr_bool(n, "some", true) : attr_bool(n, "full_matrices", true);
    if (id == OP_SVD && !attr_bool(n, "compute_uv", true))
        return "svd: setting compute_uv to false in torch.svd doesn't compute singular vectors, and hence the "
               "backward cannot be computed";
    if (full && !square)
        return arena_printf(c->arena, "%s: the full matrices of the SVD of a non-square matrix have no gradient "
                                      "(the extra singular vectors are not unique); use %s", n->op->name,
                            id == OP_SVD ? "some=true" : "full_matrices=false");
    return NULL;
}

const char *grad_rule_missing(Ctx *c, const Node *n)
{
    if (!n->op->grad_rule)
        return arena_printf(c->arena, "op %s has no gradient yet, so this model cannot be trained "
                                      "(its inference compiles without the train section)", n->op->name);
    switch (n->op->id) {
    case OP_PROD: case OP_CUMPROD:
        /* the backward kernels read x in the result's dtype: a node whose
         * operand has another (prod(x, dtype=...)) is refused, not misread */
        if (n->in[0] && n->in[0]->type.dtype != n->out->type.dtype)
            return arena_printf(c->arena, "%s: the gradient of a dtype-converting %s is not supported yet",
                                n->op->name, n->op->name);
        return NULL;
    case OP_LINALG_SOLVE: case OP_TRIANGULAR_SOLVE: case OP_CHOLESKY_SOLVE: case OP_LINALG_LSTSQ: case OP_LU_SOLVE:
        return solve_missing(c, n);
    case OP_QR: case OP_LINALG_QR:
        return qr_missing(c, n);
    case OP_SVD: case OP_LINALG_SVD:
        return svd_missing(c, n);
    case OP_LINALG_LU_FACTOR: {
        const Shape *sa = &n->in[0]->type.shape;
        if (!attr_bool(n, "pivot", true))
            return "linalg_lu_factor: the gradient without pivoting is not supported yet";
        if (sa->ndim < 2 || !poly_equal(sa->dims[sa->ndim - 2], sa->dims[sa->ndim - 1]))
            return "linalg_lu_factor: the gradient of the LU of a non-square matrix is not supported yet";
        return NULL;
    }
    case OP_LSTM_CELL:
        if (n->nin > 6 && n->in[6] && !lstm_b_hh_source(n))
            return arena_printf(c->arena, "%s: the gradient with a computed b_hh is not supported yet; pass b_hh as "
                                          "a parameter, input or buffer, or fold it into b_ih", n->op->name);
        return NULL;
    default:
        return NULL;
    }
}

/* ---- the operands of the rules --------------------------------------------------- */

/* Whether a pointwise loss is a function of input - target, so that the
 * target's gradient is the input's negated. */
static bool loss_of_difference(OpId id)
{
    return id == OP_MSE_LOSS || id == OP_L1_LOSS || id == OP_SMOOTH_L1_LOSS || id == OP_HUBER_LOSS;
}

/* Every floating operand of the ops not named here has a gradient
 * (cosine_embedding_loss's target a zero one: it only selects a branch;
 * the recurrent cells' input, state, weights and biases alike). */
const char *grad_input_missing(Ctx *c, const Node *n, int k)
{
    OpId id = n->op->id;
    const char *what = NULL;
    switch (id) {
    case OP_NLL_LOSS: case OP_NLL_LOSS2D: case OP_CROSS_ENTROPY:
    case OP_MULTI_MARGIN_LOSS: case OP_MULTILABEL_MARGIN_LOSS:
        /* targets are index operands (autodiff.c never asks); the weight
         * is not differentiable in PyTorch either */
        if (k != 0)
            what = "its weight";
        break;
    case OP_MSE_LOSS: case OP_L1_LOSS: case OP_SMOOTH_L1_LOSS: case OP_HUBER_LOSS: case OP_KL_DIV:
    case OP_BINARY_CROSS_ENTROPY: case OP_BINARY_CROSS_ENTROPY_WITH_LOGITS: case OP_SOFT_MARGIN_LOSS:
    case OP_HINGE_EMBEDDING_LOSS: case OP_POISSON_NLL_LOSS:
        if (k == 1 && !loss_of_difference(id))
            what = "its target";
        else if (k >= 2)
            what = "its weight";
        break;
    case OP_LAYER_NORM: case OP_GROUP_NORM:
        if (k == 1)
            what = "operand 2";
        break;
    case OP_BATCH_NORM: case OP_INSTANCE_NORM:
        if (k == 1 || k == 2)
            what = "its running statistics";
        break;
    case OP_SCALED_DOT_PRODUCT_ATTENTION:
        if (k == 3)
            what = "its attn_mask";
        break;
    default:
        break;
    }
    if (!what)
        return NULL;
    return arena_printf(c->arena, "%s: the gradient with respect to %s is not supported (detach it: make it an "
                                  "input or a buffer, not something computed from a parameter)", n->op->name, what);
}
