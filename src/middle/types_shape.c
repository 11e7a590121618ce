/* types_shape.c: the type rules of the shape and indexing ops.
 *
 * Views and copies that move elements without computing on them
 * (flatten, reshape/view, permute/transpose, squeeze/unsqueeze, expand,
 * cat/stack, narrow/slice, pad) and indexing (embedding, gather,
 * scatter_add, index_select, index_copy, index_put).  The result keeps its
 * input's dtype; shape arguments are int literals or int varargs
 * (int_varargs), checked against the input's dims as far as they are known
 * at compile time.
 */

#include "call_args.h"
#include "types.h"

#include <string.h>

/* ---- views and copies --------------------------------------------------- */

bool infer_flatten(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    int64_t start = 0, end = -1;
    Expr *s = named(call, "start_dim"), *e = named(call, "end_dim");
    if ((s && !normalise_dim(c, s, xs->ndim, &start)) || (e && !normalise_dim(c, e, xs->ndim, &end)))
        return false;
    if (!e)
        end = xs->ndim ? xs->ndim - 1 : 0;
    if (start > end) {
        error_at(c, call->loc, "flatten() has invalid args: start_dim cannot come after end_dim");
        return false;
    }
    Shape out = {0};
    if (xs->ndim == 0) {
        out.ndim = 1;
        out.dims[0] = poly_const(c, 1);
    } else {
        for (int i = 0; i < start; i++)
            out.dims[out.ndim++] = xs->dims[i];
        Shape mid = {0};
        for (int64_t i = start; i <= end; i++)
            mid.dims[mid.ndim++] = xs->dims[i];
        Poly *n = shape_numel(c, &mid);
        if (!n) {
            error_at(c, call->loc, "this dimension overflows 64-bit integers");
            return false;
        }
        out.dims[out.ndim++] = n;
        for (int i = (int)end + 1; i < xs->ndim; i++)
            out.dims[out.ndim++] = xs->dims[i];
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* p / k when k divides every coefficient, else NULL. */
static Poly *poly_div_exact(Ctx *c, const Poly *p, int64_t k)
{
    Poly *r = arena_alloc(c->arena, sizeof *r);
    r->nterms = p->nterms;
    r->terms = arena_alloc(c->arena, (size_t)(p->nterms + 1) * sizeof *r->terms);
    for (int i = 0; i < p->nterms; i++) {
        if (p->terms[i].coef % k != 0)
            return NULL;
        r->terms[i] = p->terms[i];
        r->terms[i].coef /= k;
    }
    return r;
}

bool infer_reshape(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    int64_t v[MAX_DIMS];
    Expr *where[MAX_DIMS];
    bool ok;
    int n = int_varargs(c, call, "shape", v, where, &ok);
    if (!ok)
        return false;
    int infer = -1;
    int64_t known = 1;
    Buf text;
    buf_init(&text, c->arena);
    for (int i = 0; i < n; i++) {
        buf_printf(&text, "%s%lld", i ? ", " : "", (long long)v[i]);
        if (v[i] == -1 && infer < 0) {
            infer = i;
        } else if (v[i] == -1) {
            error_at(c, where[i]->loc, "only one dimension can be inferred");
            return false;
        } else if (v[i] < 0) {
            error_at(c, where[i]->loc, "invalid shape dimension %lld", (long long)v[i]);
            return false;
        } else if (__builtin_mul_overflow(known, v[i], &known)) {
            error_at(c, where[i]->loc, "this shape overflows 64-bit integers");
            return false;
        }
    }
    Poly *numel = shape_numel(c, &x->type.shape);
    Shape out = {.ndim = n};
    for (int i = 0; i < n; i++)
        out.dims[i] = poly_const(c, v[i]);
    int64_t cn;
    bool bad;
    if (infer >= 0) {
        Poly *q = known ? poly_div_exact(c, numel, known) : NULL;
        bad = !q;
        if (known == 0) {
            error_at(c, where[infer]->loc, "cannot reshape tensor of 0 elements into shape [%s] because the "
                     "unspecified dimension size -1 can be any value and is ambiguous", text.data);
            return false;
        }
        out.dims[infer] = q;
    } else {
        bad = !(const_dim(numel, &cn) && cn == known);
    }
    if (bad) {
        error_at(c, call->loc, "shape '[%s]' is invalid for input of size %s%s", text.data, dim_str(c, numel),
                 infer < 0 && !const_dim(numel, &cn) ? " (a symbolic size needs a -1 where it goes)" : "");
        return false;
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_permute(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Shape out = *xs;
    if (call->op->id == OP_TRANSPOSE) {
        int64_t d0, d1;
        if (!normalise_dim(c, arg(call, 1), xs->ndim, &d0) || !normalise_dim(c, arg(call, 2), xs->ndim, &d1))
            return false;
        if (xs->ndim) {
            out.dims[d0] = xs->dims[d1];
            out.dims[d1] = xs->dims[d0];
        }
    } else {
        int64_t v[MAX_DIMS];
        Expr *where[MAX_DIMS];
        bool ok, seen[MAX_DIMS] = {0};
        int n = int_varargs(c, call, "dims", v, where, &ok);
        if (!ok)
            return false;
        if (n != xs->ndim) {
            error_at(c, call->loc, "permute(): number of dims don't match: the input has %d, but %d were given",
                     xs->ndim, n);
            return false;
        }
        for (int i = 0; i < n; i++) {
            int64_t d;
            if (!normalise_dim(c, where[i], xs->ndim, &d))
                return false;
            if (seen[d]) {
                error_at(c, where[i]->loc, "permute(): duplicate dims are not allowed.");
                return false;
            }
            seen[d] = true;
            out.dims[i] = xs->dims[d];
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_squeeze(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Shape out = {0};
    if (call->op->id == OP_UNSQUEEZE) {
        int64_t d;
        if (!normalise_dim(c, arg(call, 1), xs->ndim + 1, &d))
            return false;
        if (xs->ndim == MAX_DIMS) {
            error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
            return false;
        }
        for (int i = 0; i <= xs->ndim; i++)
            out.dims[out.ndim++] = i == d ? poly_const(c, 1) : xs->dims[i < d ? i : i - 1];
    } else {
        /* a symbolic dim counts as not 1: PyTorch decides at run time, ampc
         * at compile time, so a dim that may be 1 is kept */
        int64_t d = -1, one;
        Expr *de = named(call, "dim");
        if (de && !normalise_dim(c, de, xs->ndim, &d))
            return false;
        for (int i = 0; i < xs->ndim; i++) {
            bool unit = const_dim(xs->dims[i], &one) && one == 1;
            if (!(unit && (d < 0 || i == d)))
                out.dims[out.ndim++] = xs->dims[i];
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

bool infer_expand(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    Poly *v[MAX_DIMS];
    Expr *where[MAX_DIMS];
    bool ok;
    int n = size_varargs(c, call, "size", v, where, &ok);
    if (!ok)
        return false;
    Buf text;
    buf_init(&text, c->arena);
    for (int i = 0; i < n; i++)
        buf_printf(&text, "%s%s", i ? ", " : "", dim_str(c, v[i]));
    if (n < xs->ndim) {
        error_at(c, call->loc, "expand(%s, size=[%s]): the number of sizes provided (%d) must be greater or equal to "
                 "the number of dimensions in the tensor (%d)", type_to_string(c, &x->type), text.data, n, xs->ndim);
        return false;
    }
    Shape out = {.ndim = n};
    for (int i = 0; i < n; i++) {
        int j = i - (n - xs->ndim);
        int64_t have, k = 0;
        bool literal = const_dim(v[i], &k);
        if (j < 0) {
            if (literal && k < 0) {
                error_at(c, where[i]->loc, "The expanded size of the tensor (%lld) isn't allowed in a leading, "
                         "non-existing dimension %d", (long long)k, i);
                return false;
            }
            out.dims[i] = v[i];
        } else if (literal && k == -1) {
            out.dims[i] = xs->dims[j];
        } else if (literal && k < 0) {
            error_at(c, where[i]->loc, "invalid shape dimension %lld", (long long)k);
            return false;
        } else if (dims_match(xs->dims[j], v[i]) || (const_dim(xs->dims[j], &have) && have == 1)) {
            /* a dimension of the model expands a size-1 dim to the batch */
            out.dims[i] = v[i];
        } else {
            error_at(c, where[i]->loc, "The expanded size of the tensor (%s) must match the existing size (%s) at "
                     "non-singleton dimension %d.  Target sizes: [%s].  Tensor sizes: %s", dim_str(c, v[i]),
                     dim_str(c, xs->dims[j]), i, text.data, shape_str(c, xs));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* cat and stack: the tensors, then dim=; result type over all of them. */
bool infer_cat(Ctx *c, Expr *call)
{
    bool stack = call->op->id == OP_STACK;
    Expr **ts = arena_alloc(c->arena, (size_t)call->op->nparams * sizeof *ts);
    int n = 0;
    for (int i = 0; i < call->op->nparams; i++) {
        if (strcmp(call->op->params[i].name, "tensors") != 0 || !arg(call, i))
            continue;
        Expr *t = arg(call, i);
        if (!is_tensor(t)) {
            error_at(c, t->loc, "%s() takes the tensors as its positional arguments and the dimension by keyword: "
                     "%s(a, b, dim=1)", call->op->name, call->op->name);
            return false;
        }
        ts[n++] = t;
    }
    const Shape *s0 = &ts[0]->type.shape;
    int64_t dim = 0;
    Expr *de = named(call, "dim");
    if (de && !normalise_dim(c, de, s0->ndim + stack, &dim))
        return false;
    if (!stack && s0->ndim == 0) {
        error_at(c, ts[0]->loc, "zero-dimensional tensor (at position 0) cannot be concatenated");
        return false;
    }
    Type t = ts[0]->type;
    Poly *total = s0->ndim ? s0->dims[stack ? 0 : dim] : NULL;
    for (int k = 1; k < n; k++) {
        const Shape *s = &ts[k]->type.shape;
        if (stack ? !shape_equal(s, s0) : s->ndim != s0->ndim) {
            error_at(c, ts[k]->loc, stack ? "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d"
                                          : "Tensors must have same number of dimensions: got %s and %s (tensor %d)",
                     shape_str(c, s0), shape_str(c, s), k);
            return false;
        }
        for (int i = 0; !stack && i < s->ndim; i++) {
            if (i != dim && !dims_match(s->dims[i], s0->dims[i])) {
                error_at(c, ts[k]->loc, "Sizes of tensors must match except in dimension %lld. Expected size %s but got "
                         "size %s for tensor number %d in the list.", (long long)dim, dim_str(c, s0->dims[i]),
                         dim_str(c, s->dims[i]), k);
                return false;
            }
        }
        if (!stack && !(total = poly_add(c, total, s->dims[dim]))) {
            error_at(c, call->loc, "this dimension overflows 64-bit integers");
            return false;
        }
        t.dtype = promote_tensors(&t, &ts[k]->type);
    }
    Shape out = {0};
    if (stack) {
        if (s0->ndim == MAX_DIMS) {
            error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
            return false;
        }
        for (int i = 0; i <= s0->ndim; i++)
            out.dims[out.ndim++] = i == dim ? poly_const(c, n) : s0->dims[i < dim ? i : i - 1];
    } else {
        out = *s0;
        out.dims[dim] = total;
    }
    call->type.dtype = t.dtype;
    call->type.shape = out;
    return true;
}

/* torch.narrow(x, dim, start, length) and aten's slice(x, dim, start, end, step). */
bool infer_narrow(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    bool narrow = call->op->id == OP_NARROW;
    if (xs->ndim == 0) {
        error_at(c, call->loc, "%s() cannot be applied to a 0-dim tensor.", call->op->name);
        return false;
    }
    int64_t dim = 0, start = 0, n;
    Expr *de = named(call, "dim");
    if (de && !normalise_dim(c, de, xs->ndim, &dim))
        return false;
    if (!int_param(c, call, "start", 0, &start))
        return false;
    Poly *size = xs->dims[dim];
    bool known = const_dim(size, &n);
    Shape out = *xs;
    if (narrow) {
        int64_t length;
        if (!int_param(c, call, "length", 0, &length))
            return false;
        if (length < 0) {
            error_at(c, named(call, "length")->loc, "narrow(): length must be non-negative.");
            return false;
        }
        if (known && (start < -n || start > n)) {
            error_at(c, named(call, "start")->loc, "start out of range (expected to be in range of [%lld, %lld], but "
                     "got %lld)", (long long)-n, (long long)n, (long long)start);
            return false;
        }
        if (!known && start < 0) {
            error_at(c, named(call, "start")->loc, "narrow(): a negative start over the symbolic dimension %s is not "
                     "supported", dim_str(c, size));
            return false;
        }
        if (start < 0)
            start += n;
        if (known && start + length > n) {
            error_at(c, call->loc, "start (%lld) + length (%lld) exceeds dimension size (%lld).", (long long)start,
                     (long long)length, (long long)n);
            return false;
        }
        out.dims[dim] = poly_const(c, length);
    } else {
        int64_t step, end = INT64_MAX;
        Expr *ee = named(call, "end");
        if (!int_param(c, call, "step", 1, &step) || (ee && !int_arg(c, ee, &end)))
            return false;
        if (step <= 0) {
            error_at(c, named(call, "step")->loc, "slice step must be positive");
            return false;
        }
        if (known) {
            if (start < 0)
                start += n;
            if (end < 0)
                end += n;
            start = start < 0 ? 0 : start > n ? n : start;
            end = end < start ? start : end > n ? n : end;
            out.dims[dim] = poly_const(c, (end - start + step - 1) / step);
        } else if (start >= 0 && !ee && step == 1) {
            if (!(out.dims[dim] = affine(c, call, size, 1, -start)))
                return false;
        } else {
            error_at(c, call->loc, "slice() of the symbolic dimension %s is supported with start >= 0, no end and "
                     "step 1 only: otherwise its size depends on the value of %s", dim_str(c, size), dim_str(c, size));
            return false;
        }
    }
    call->dim = dim;
    call->start = start;
    call->step = narrow ? 1 : arg_int(c, call, "step", 1);
    call->type.dtype = x->type.dtype;
    call->type.shape = out;
    return true;
}

/* ---- indexing ----------------------------------------------------------- */

bool infer_embedding(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *idx = arg(call, 0), *w = arg(call, 1);
    if (idx->type.dtype != DT_I64 && idx->type.dtype != DT_I32) {
        error_at(c, idx->loc, "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                 "i64, i32; but got %s instead", type_to_string(c, &idx->type));
        return false;
    }
    if (w->type.shape.ndim != 2) {
        error_at(c, w->loc, "embedding(): 'weight' must be 2-D, but it is %s", type_to_string(c, &w->type));
        return false;
    }
    int64_t pad, rows;
    Expr *p = named(call, "padding_idx");
    if (p && int_arg(c, p, &pad) && const_dim(w->type.shape.dims[0], &rows) && (pad >= rows || pad < -rows)) {
        error_at(c, p->loc, "Padding_idx must be within num_embeddings (%lld)", (long long)rows);
        return false;
    }
    if (idx->type.shape.ndim + 1 > MAX_DIMS) {
        error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
        return false;
    }
    call->type.dtype = w->type.dtype;
    call->type.shape = idx->type.shape;
    call->type.shape.dims[call->type.shape.ndim++] = w->type.shape.dims[1];
    return true;
}

/* index[d] <= of[d] for every d (but `except`), as far as known at compile time. */
static bool index_fits(const Shape *idx, const Shape *of, int64_t except)
{
    for (int d = 0; d < idx->ndim; d++) {
        int64_t a, b;
        if (d == except || dims_match(idx->dims[d], of->dims[d]))
            continue;
        if (!(const_dim(idx->dims[d], &a) && const_dim(of->dims[d], &b) && a <= b))
            return false;
    }
    return true;
}

/* gather, scatter_add and index_select. */
bool infer_gather(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 2))
        return false;
    OpId id = call->op->id;
    Expr *x = arg(call, 0), *idx = arg(call, 2);
    const Shape *xs = &x->type.shape, *is = &idx->type.shape;
    int64_t dim;
    if (!normalise_dim(c, arg(call, 1), xs->ndim, &dim))
        return false;
    call->dim = dim;
    if (id == OP_INDEX_SELECT) {
        if (idx->type.dtype != DT_I64 && idx->type.dtype != DT_I32) {
            error_at(c, idx->loc, "index_select(): Expected dtype int32 or int64 for index");
            return false;
        }
        if (is->ndim > 1) {
            error_at(c, idx->loc, "index_select(): Index is supposed to be a vector");
            return false;
        }
        call->type = x->type;
        if (xs->ndim)
            call->type.shape.dims[dim] = is->ndim ? is->dims[0] : poly_const(c, 1);
        return true;
    }
    if (idx->type.dtype != DT_I64) {
        error_at(c, idx->loc, "%s(): Expected dtype int64 for index", id == OP_GATHER ? "gather" : "scatter");
        return false;
    }
    int nx = xs->ndim ? xs->ndim : 1, ni = is->ndim ? is->ndim : 1;
    if (ni != nx) {
        error_at(c, idx->loc, "Index tensor must have the same number of dimensions as %s tensor",
                 id == OP_GATHER ? "input" : "self");
        return false;
    }
    if (id == OP_GATHER) {
        if (xs->ndim && is->ndim && !index_fits(is, xs, dim)) {
            error_at(c, idx->loc, "Size does not match at dimension %d expected index %s to be smaller than self %s "
                     "apart from dimension %lld", 0, shape_str(c, is), shape_str(c, xs), (long long)dim);
            return false;
        }
        bool sparse;
        if (!bool_param(c, call, "sparse_grad", false, &sparse))
            return false;
        call->type.dtype = x->type.dtype;
        call->type.shape = *is;
        return true;
    }
    if (!require_tensor(c, call, 3))
        return false;
    Expr *src = arg(call, 3);
    const Shape *ss = &src->type.shape;
    if (x->type.dtype != src->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, src->loc, "scatter(): Expected self.dtype to be equal to src.dtype (self is %s, src %s)",
                 dtype_name(x->type.dtype), dtype_name(src->type.dtype));
        return false;
    }
    if ((ss->ndim ? ss->ndim : 1) != ni) {
        error_at(c, idx->loc, "Index tensor must have the same number of dimensions as src tensor");
        return false;
    }
    if (xs->ndim && is->ndim && (!index_fits(is, xs, dim) || !index_fits(is, ss, -1))) {
        error_at(c, idx->loc, "Expected index %s to be smaller than self %s apart from dimension %lld and to be "
                 "smaller size than src %s", shape_str(c, is), shape_str(c, xs), (long long)dim, shape_str(c, ss));
        return false;
    }
    call->type = x->type;
    return true;
}

bool infer_index_copy(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 2) || !require_tensor(c, call, 3))
        return false;
    Expr *x = arg(call, 0), *idx = arg(call, 2), *src = arg(call, 3);
    int64_t dim;
    if (!normalise_dim(c, arg(call, 1), x->type.shape.ndim, &dim))
        return false;
    if (idx->type.dtype != DT_I64 || idx->type.shape.ndim > 1) {
        error_at(c, idx->loc, "index_copy(): expected a 1-D i64 tensor for index, but got %s",
                 type_to_string(c, &idx->type));
        return false;
    }
    if (!same_dtype(c, call, x, src))
        return false;
    const Shape *xs = &x->type.shape, *ss = &src->type.shape;
    bool ok = ss->ndim == xs->ndim;
    for (int i = 0; ok && i < xs->ndim; i++)
        ok = i == dim ? (idx->type.shape.ndim == 0 || dims_match(ss->dims[i], idx->type.shape.dims[0]))
                      : dims_match(ss->dims[i], xs->dims[i]);
    if (!ok) {
        error_at(c, src->loc, "index_copy(): source %s does not fit input %s with %s indices along dim %lld",
                 shape_str(c, ss), shape_str(c, xs), shape_str(c, &idx->type.shape), (long long)dim);
        return false;
    }
    call->dim = dim;
    call->type = x->type;
    return true;
}

/* index_put with one index tensor; grid_sampler, whose ops.def row names
 * this rule, goes on to its own in types_spatial.c. */
bool infer_index_put(Ctx *c, Expr *call)
{
    if (!require_tensor(c, call, 0) || !require_tensor(c, call, 1))
        return false;
    Expr *x = arg(call, 0);
    const Shape *xs = &x->type.shape;
    if (call->op->id == OP_GRID_SAMPLER)
        return infer_grid_sampler(c, call);
    if (!require_tensor(c, call, 2))
        return false;
    Expr *idx = arg(call, 1), *v = arg(call, 2);
    const Shape *is = &idx->type.shape;
    bool mask = idx->type.dtype == DT_BOOL;
    if (idx->type.dtype != DT_I64 && !mask) {
        error_at(c, idx->loc, "tensors used as indices must be long, byte or bool tensors (this is %s)",
                 dtype_name(idx->type.dtype));
        return false;
    }
    if (xs->ndim == 0 || (mask && is->ndim > xs->ndim)) {
        error_at(c, idx->loc, "too many indices for tensor of dimension %d", xs->ndim);
        return false;
    }
    /* the indexed shape: the index's shape (a mask: its count of true entries) then the rest */
    Shape res = {0};
    int used = mask ? is->ndim : 1;
    if (mask) {
        for (int i = 0; i < is->ndim; i++)
            if (!dims_match(is->dims[i], xs->dims[i])) {
                error_at(c, idx->loc, "The shape of the mask %s at index %d does not match the shape of the indexed "
                         "tensor %s at index %d", shape_str(c, is), i, shape_str(c, xs), i);
                return false;
            }
    } else {
        res = *is;
    }
    for (int i = used; i < xs->ndim; i++)
        if (!push_dim(c, call, &res, xs->dims[i]))
            return false;
    /* a mask selects a number of rows known only at run time: values must
     * broadcast to any number (a leading dim of 1, or none) */
    const Shape *vs = &v->type.shape;
    Shape to = res;
    bool ok = true;
    if (mask) {
        to = (Shape){0};
        for (int i = used; i < xs->ndim; i++)
            to.dims[to.ndim++] = xs->dims[i];
        int64_t one;
        if (vs->ndim == to.ndim + 1)
            ok = const_dim(vs->dims[0], &one) && one == 1;
    }
    ok = ok && vs->ndim <= to.ndim + (mask ? 1 : 0);
    for (int i = 1; ok && i <= vs->ndim && i <= to.ndim; i++) {
        int64_t one;
        const Poly *d = vs->dims[vs->ndim - i];
        ok = (const_dim(d, &one) && one == 1) || dims_match(d, to.dims[to.ndim - i]);
    }
    if (!ok) {
        error_at(c, v->loc, "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape "
                 "%s%s", shape_str(c, vs), mask ? "[*] + " : "", shape_str(c, &to));
        return false;
    }
    if (x->type.dtype != v->type.dtype && !(call->autocast_on && !c->autocast_ran)) {
        error_at(c, v->loc, "Index put requires the source and destination dtypes match, got %s for the destination "
                 "and %s for the source.", dtype_name(x->type.dtype), dtype_name(v->type.dtype));
        return false;
    }
    bool acc;
    if (!bool_param(c, call, "accumulate", false, &acc))
        return false;
    call->type = x->type;
    return true;
}
