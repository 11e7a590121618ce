/* types_rearrange.c: the type rules of the ops that rearrange elements
 * without computing on them: select, flip, roll, repeat and tile,
 * pixel_shuffle, pixel_unshuffle and channel_shuffle.
 *
 * Each result keeps its input's dtype (any dtype: the back end moves
 * elements as bytes, emit_rearrange.c).  Sizes the rearrangement depends
 * on must be known at compile time where PyTorch's result depends on them
 * (select's index range, roll's shift modulo the size, the shuffles'
 * channel counts); the other dims, the symbolic batch among them, pass
 * through.
 */

#include "types.h"

#include <string.h>

/* select(input, dim, index): the dim removed, index in range. */
bool infer_select(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    if (xs->ndim == 0) {
        error_at(c, call->loc, "select() cannot be applied to a 0-dim tensor.");
        return false;
    }
    int64_t dim, index, n;
    if (!normalise_dim(c, named(call, "dim"), xs->ndim, &dim) || !int_param(c, call, "index", 0, &index))
        return false;
    if (!const_dim(xs->dims[dim], &n)) {
        error_at(c, named(call, "dim")->loc, "select() along the symbolic dimension %s is not supported: whether "
                 "the index is in range depends on its value", dim_str(c, xs->dims[dim]));
        return false;
    }
    if (index < -n || index >= n) {
        error_at(c, named(call, "index")->loc, "select(): index %lld out of range for tensor of size %s at "
                 "dimension %lld", (long long)index, shape_str(c, xs), (long long)dim);
        return false;
    }
    Shape out = {0};
    for (int i = 0; i < xs->ndim; i++)
        if (i != dim)
            out.dims[out.ndim++] = xs->dims[i];
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* The dims named by `name` (int... or int[]), each normalised once. */
static int dims_list(Ctx *c, Expr *call, const char *name, int ndim, int64_t *dims, bool *ok)
{
    int64_t v[MAX_DIMS];
    Expr *where[MAX_DIMS];
    int n = int_varargs(c, call, name, v, where, ok);
    bool seen[MAX_DIMS] = {0};
    for (int i = 0; *ok && i < n; i++) {
        if (!normalise_dim(c, where[i], ndim, &dims[i])) {
            *ok = false;
            break;
        }
        if (seen[dims[i]]) {
            error_at(c, where[i]->loc, "%s(): dim %lld appears multiple times in the list of dims", call->op->name,
                     (long long)dims[i]);
            *ok = false;
            break;
        }
        seen[dims[i]] = true;
    }
    return n;
}

/* flip(input, dims...): the input's shape. */
bool infer_flip(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t dims[MAX_DIMS];
    bool ok;
    dims_list(c, call, "dims", x->type.shape.ndim, dims, &ok);
    if (!ok)
        return false;
    call->type = x->type;
    return true;
}

/* roll(input, shifts, dims=None): one shift per dim, or one shift of the
 * flattened tensor; the rolled sizes must be known. */
bool infer_roll(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    int64_t shifts[MAX_DIMS], dims[MAX_DIMS];
    Expr *where[MAX_DIMS];
    bool ok;
    int ns = int_varargs(c, call, "shifts", shifts, where, &ok);
    if (!ok)
        return false;
    int nd = named(call, "dims") ? dims_list(c, call, "dims", xs->ndim, dims, &ok) : 0;
    if (!ok)
        return false;
    if (nd == 0 && ns != 1) {
        error_at(c, call->loc, "roll(): without dims, shifts takes one number (the flattened tensor's), got %d", ns);
        return false;
    }
    if (nd && nd != ns) {
        error_at(c, call->loc, "roll(): shifts and dimensions must align. shifts: %d, dims: %d", ns, nd);
        return false;
    }
    for (int i = 0; i < (nd ? nd : xs->ndim); i++) {
        const Poly *size = xs->dims[nd ? dims[i] : i];
        int64_t v;
        if (!const_dim(size, &v)) {
            error_at(c, call->loc, "roll() over the symbolic dimension %s is not supported: where the elements go "
                     "depends on its value", dim_str(c, size));
            return false;
        }
    }
    call->type = x->type;
    return true;
}

/* repeat(input, repeats...) and tile(input, dims...): repeat takes at
 * least one count per dim (new dims in front); tile pads its counts with
 * leading ones instead. */
bool infer_repeat(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    bool tile = call->op->id == OP_TILE;
    int64_t r[MAX_DIMS];
    Expr *where[MAX_DIMS];
    bool ok;
    int n = int_varargs(c, call, tile ? "dims" : "repeats", r, where, &ok);
    if (!ok)
        return false;
    if (!tile && n < xs->ndim) {
        error_at(c, call->loc, "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                 "tensor");
        return false;
    }
    int nd = n > xs->ndim ? n : xs->ndim;
    Shape out = {0};
    for (int i = 0; i < nd; i++) {
        int ri = i - (nd - n), xi = i - (nd - xs->ndim);
        int64_t k = ri >= 0 ? r[ri] : 1;
        if (k < 0) {
            error_at(c, where[ri]->loc, "Trying to create tensor with negative dimension %lld", (long long)k);
            return false;
        }
        Poly *d = xi >= 0 ? xs->dims[xi] : poly_const(c, 1);
        if (!(d = affine(c, call, d, k, 0)))
            return false;
        out.dims[out.ndim++] = d;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* pixel_shuffle [*, C r^2, H, W] -> [*, C, H r, W r], pixel_unshuffle the
 * inverse, channel_shuffle [N, C, *] with C divisible by groups. */
bool infer_pixel_shuffle(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    OpId id = call->op->id;
    const char *pname = id == OP_PIXEL_SHUFFLE ? "upscale_factor" : id == OP_PIXEL_UNSHUFFLE ? "downscale_factor"
                                                                                             : "groups";
    int64_t r, ch;
    if (!int_param(c, call, pname, 1, &r))
        return false;
    int need = 3;
    if (xs->ndim < need) {
        error_at(c, x->loc, "%s expects input to have at least %d dimensions, but got input with %d dimension(s)",
                 call->op->name, need, xs->ndim);
        return false;
    }
    if (r <= 0) {
        error_at(c, named(call, pname)->loc, "%s expects a positive %s, but got %lld", call->op->name, pname,
                 (long long)r);
        return false;
    }
    int cd = id == OP_CHANNEL_SHUFFLE ? 1 : xs->ndim - 3;
    if (!const_dim(xs->dims[cd], &ch)) {
        error_at(c, x->loc, "%s(): the channel dimension %s must be known at compile time", call->op->name,
                 dim_str(c, xs->dims[cd]));
        return false;
    }
    Shape out = *xs;
    if (id == OP_CHANNEL_SHUFFLE || id == OP_PIXEL_SHUFFLE) {
        int64_t div = id == OP_CHANNEL_SHUFFLE ? r : r * r;
        if (ch % div) {
            error_at(c, x->loc, id == OP_CHANNEL_SHUFFLE
                                    ? "Number of channels must be divisible by groups. Got %lld channels and %lld groups."
                                    : "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                                      "square of upscale_factor, but input.size(-3)=%lld is not divisible by %lld",
                     (long long)ch, (long long)div);
            return false;
        }
        if (id == OP_PIXEL_SHUFFLE) {
            out.dims[cd] = poly_const(c, ch / div);
            if (!(out.dims[cd + 1] = affine(c, call, xs->dims[cd + 1], r, 0)) ||
                !(out.dims[cd + 2] = affine(c, call, xs->dims[cd + 2], r, 0)))
                return false;
        }
    } else {
        for (int i = 1; i <= 2; i++) {
            int64_t v;
            if (!const_dim(xs->dims[cd + i], &v) || v % r) {
                error_at(c, x->loc, "pixel_unshuffle expects %s dimension to be divisible by downscale_factor, but "
                         "input.size(%d)=%s is not divisible by %lld", i == 1 ? "height" : "width", i - 3,
                         dim_str(c, xs->dims[cd + i]), (long long)r);
                return false;
            }
            out.dims[cd + i] = poly_const(c, v / r);
        }
        out.dims[cd] = poly_const(c, ch * r * r);
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}
