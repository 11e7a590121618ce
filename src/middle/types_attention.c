/* types_attention.c: the type rule of attention.
 *
 * scaled_dot_product_attention: query [..., L, E], key [..., S, E], value
 * [..., S, Ev] with broadcast batch dims, an optional mask broadcastable
 * to [..., L, S]; the result is [..., L, Ev].
 */

#include "types.h"

/* F.scaled_dot_product_attention (PyTorch 2.0): softmax(q k^T * scale + mask) v. */
bool infer_sdpa(Ctx *c, Expr *call)
{
    for (int i = 0; i < 3; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *q = arg(call, 0), *k = arg(call, 1), *v = arg(call, 2), *mask;
    if (!tensor_arg(c, call, "attn_mask", &mask) || !require_float(c, call, q))
        return false;
    if ((q->type.dtype != k->type.dtype || q->type.dtype != v->type.dtype) && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, call->loc, "Expected query, key, and value to have the same dtype, but got query.dtype: %s "
                 "key.dtype: %s and value.dtype: %s instead.", dtype_name(q->type.dtype), dtype_name(k->type.dtype),
                 dtype_name(v->type.dtype));
        return false;
    }
    const Shape *qs = &q->type.shape, *ks = &k->type.shape, *vs = &v->type.shape;
    if (qs->ndim < 2 || ks->ndim < 2 || vs->ndim < 2) {
        error_at(c, call->loc, "scaled_dot_product_attention(): query, key and value must have at least 2 "
                 "dimensions, got %s, %s and %s", shape_str(c, qs), shape_str(c, ks), shape_str(c, vs));
        return false;
    }
    Poly *L = qs->dims[qs->ndim - 2], *E = qs->dims[qs->ndim - 1], *S = ks->dims[ks->ndim - 2];
    if (!dims_match(E, ks->dims[ks->ndim - 1])) {
        error_at(c, call->loc, "scaled_dot_product_attention(): query %s and key %s must have the same embedding "
                 "size (%s != %s)", shape_str(c, qs), shape_str(c, ks), dim_str(c, E), dim_str(c, ks->dims[ks->ndim - 1]));
        return false;
    }
    if (!dims_match(S, vs->dims[vs->ndim - 2])) {
        error_at(c, call->loc, "scaled_dot_product_attention(): key %s and value %s must have the same sequence "
                 "length (%s != %s)", shape_str(c, ks), shape_str(c, vs), dim_str(c, S), dim_str(c, vs->dims[vs->ndim - 2]));
        return false;
    }
    Shape bq = leading(qs, 2), bk = leading(ks, 2), bv = leading(vs, 2), batch;
    if (!broadcast(c, call, &bq, &bk, &batch) || !broadcast(c, call, &batch, &bv, &batch))
        return false;
    Shape out = batch;
    out.dims[out.ndim++] = L;
    out.dims[out.ndim++] = vs->dims[vs->ndim - 1];
    bool causal;
    double p;
    if (!bool_param(c, call, "is_causal", false, &causal) || !float_param(c, call, "dropout_p", 0.0, &p))
        return false;
    if (p < 0 || p > 1) {
        error_at(c, named(call, "dropout_p")->loc, "dropout probability has to be between 0 and 1, but got %s",
                 loc_text(c, named(call, "dropout_p")->loc));
        return false;
    }
    if (mask) {
        if (causal) {
            error_at(c, mask->loc, "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                     "is_causal=True");
            return false;
        }
        if (mask->type.dtype != DT_BOOL && mask->type.dtype != q->type.dtype &&
            !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, mask->loc, "Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: "
                     "%s and query.dtype: %s instead.", dtype_name(mask->type.dtype), dtype_name(q->type.dtype));
            return false;
        }
        Shape scores = batch;
        scores.dims[scores.ndim++] = L;
        scores.dims[scores.ndim++] = S;
        if (!broadcasts_to(c, call, mask, &scores, "attn_mask"))
            return false;
    }
    call->type.dtype = q->type.dtype;
    call->type.shape = out;
    return true;
}
