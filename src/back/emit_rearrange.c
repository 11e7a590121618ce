/* emit_rearrange.c: the kernel calls of the ops that rearrange elements:
 * select, flip, roll, repeat and tile, pixel_shuffle, pixel_unshuffle and
 * channel_shuffle.
 *
 * Each is a few strided copies (amp_copy_strided, any dtype, bit for bit):
 * rearrange_plan describes them as pieces, each a shape walked once with
 * a source and a destination stride per dim and an offset into each.  A
 * piece may have more dims than a tensor (repeat views its result as
 * [r0, s0, r1, s1, ...], the shuffles split channels into factors), so
 * the arrays are strings rather than Shapes.  grad_rearrange.c runs the
 * same pieces backwards.
 *
 * Requires: a planned graph; the type rules (types_rearrange.c) have
 * checked the arguments and the sizes the rearrangement depends on.
 */
#include "emit.h"

#include <string.h>

static const char *times_c(Emitter *e, const char *a, const char *b)
{
    if (!strcmp(a, "1"))
        return b;
    if (!strcmp(b, "1"))
        return a;
    return arena_printf(e->c->arena, "(%s) * (%s)", a, b);
}

/* Contiguous strides of n sizes. */
static void strides_of(Emitter *e, const char *const *size, int n, const char **out)
{
    const char *s = "1";
    for (int i = n - 1; i >= 0; i--) {
        out[i] = s;
        s = times_c(e, s, size[i]);
    }
}

static Piece *new_piece(Emitter *e, int ndim)
{
    Piece *p = arena_alloc(e->c->arena, sizeof *p);
    p->ndim = ndim;
    p->x_off = p->y_off = "0";
    return p;
}

/* select: x's contiguous strides without dim, from element index * stride. */
static int plan_select(Emitter *e, Node *f, const Shape *sx, const Shape *so, Piece **out)
{
    const char *xs[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    int64_t d = attr_int(f, "dim", 0), n;
    d = d < 0 ? d + sx->ndim : d;
    poly_is_const(sx->dims[d], &n);
    int64_t index = attr_int(f, "index", 0);
    index = index < 0 ? index + n : index;
    Piece *p = new_piece(e, so->ndim);
    for (int i = 0, k = 0; i < sx->ndim; i++)
        if (i != d) {
            p->shape[k] = poly_c(e, so->dims[k]);
            p->xs[k++] = xs[i];
        }
    strides_of(e, p->shape, p->ndim, p->ys);
    p->x_off = times_c(e, i64_c(e, index), xs[d]);
    out[0] = p;
    return 1;
}

/* flip: the flipped dims walked from their last element backwards. */
static int plan_flip(Emitter *e, Node *f, const Shape *sx, Piece **out)
{
    const char *xs[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    int64_t dims[MAX_DIMS * 2];
    int nd = attr_int_list(f, "dims", dims);
    Piece *p = new_piece(e, sx->ndim);
    for (int i = 0; i < sx->ndim; i++) {
        p->shape[i] = poly_c(e, sx->dims[i]);
        p->xs[i] = xs[i];
    }
    for (int k = 0; k < nd; k++) {
        int d = (int)(dims[k] < 0 ? dims[k] + sx->ndim : dims[k]);
        if (sx->ndim == 0)
            continue;
        p->x_off = arena_printf(e->c->arena, "%s + (%s - 1) * (%s)", p->x_off, p->shape[d], xs[d]);
        p->xs[d] = arena_printf(e->c->arena, "-(%s)", xs[d]);
    }
    strides_of(e, p->shape, p->ndim, p->ys);
    out[0] = p;
    return 1;
}

/* roll: y[(j + shift) mod n] = x[j] along each rolled dim: two ranges a
 * dim, so one piece per choice of range in every rolled dim.  Without
 * dims, the flattened tensor rolls. */
static int plan_roll(Emitter *e, Node *f, const Shape *sx, Piece **out)
{
    int64_t shifts[MAX_DIMS * 2], dims[MAX_DIMS * 2], size[MAX_DIMS];
    attr_int_list(f, "shifts", shifts);
    int nd = attr_int_list(f, "dims", dims);
    bool nd_given = nd > 0;
    int ndim = nd ? sx->ndim : 1;
    const char *cs[MAX_DIMS];
    if (nd) {
        contiguous_strides(e, sx, cs);
        for (int i = 0; i < ndim; i++)
            if (!poly_is_const(sx->dims[i], &size[i]))
                size[i] = -1; /* not rolled: the type rule checked */
    } else {
        size[0] = 1;
        for (int i = 0; i < sx->ndim; i++) {
            int64_t v;
            poly_is_const(sx->dims[i], &v);
            size[0] *= v;
        }
        cs[0] = "1";
        nd = 1;
        dims[0] = 0;
    }
    int count = 0;
    for (int mask = 0; mask < 1 << nd; mask++) {
        Piece *p = new_piece(e, ndim);
        int64_t len[MAX_DIMS];
        bool rolled[MAX_DIMS] = {0};
        for (int k = 0; k < nd; k++) {
            int d = (int)(dims[k] < 0 ? dims[k] + sx->ndim : dims[k]);
            int64_t n = size[d], s = n ? ((shifts[k] % n) + n) % n : 0;
            bool tail = mask >> k & 1; /* x's last s elements, to y's front */
            len[d] = tail ? s : n - s;
            rolled[d] = true;
            p->x_off = tail ? arena_printf(e->c->arena, "%s + %s * (%s)", p->x_off, i64_c(e, n - s), cs[d]) : p->x_off;
            p->y_off = tail ? p->y_off : arena_printf(e->c->arena, "%s + %s * (%s)", p->y_off, i64_c(e, s), cs[d]);
        }
        bool empty = false;
        for (int i = 0; i < ndim; i++) {
            p->shape[i] = !rolled[i] ? (nd_given ? poly_c(e, sx->dims[i]) : i64_c(e, size[0])) : i64_c(e, len[i]);
            p->xs[i] = p->ys[i] = cs[i];
            empty |= rolled[i] && len[i] == 0;
        }
        if (!empty)
            out[count++] = p;
    }
    return count;
}

/* repeat and tile: y viewed as [r0, s0, r1, s1, ...] reads x with stride 0
 * along every r (a count of 1 keeps the dim alone). */
static int plan_repeat(Emitter *e, Node *f, const Shape *sx, Piece **out)
{
    int64_t r[MAX_DIMS * 2];
    int n = attr_int_list(f, f->op->id == OP_TILE ? "dims" : "repeats", r);
    int nd = n > sx->ndim ? n : sx->ndim;
    const char *xs[MAX_DIMS];
    contiguous_strides(e, sx, xs);
    Piece *p = new_piece(e, 0);
    for (int i = 0; i < nd; i++) {
        int ri = i - (nd - n), xi = i - (nd - sx->ndim);
        int64_t k = ri >= 0 ? r[ri] : 1;
        if (k != 1) {
            p->repeated[p->ndim] = true;
            p->shape[p->ndim] = i64_c(e, k);
            p->xs[p->ndim++] = "0";
        }
        p->shape[p->ndim] = xi >= 0 ? poly_c(e, sx->dims[xi]) : "1";
        p->xs[p->ndim++] = xi >= 0 ? xs[xi] : "0";
    }
    strides_of(e, p->shape, p->ndim, p->ys);
    out[0] = p;
    return 1;
}

/* The shuffles: y's dims as factors, each read with x's stride for it. */
static int plan_shuffle(Emitter *e, Node *f, const Shape *sx, Piece **out)
{
    OpId id = f->op->id;
    Piece *p;
    if (id == OP_CHANNEL_SHUFFLE) {
        int64_t g = attr_int(f, "groups", 1), ch;
        poly_is_const(sx->dims[1], &ch);
        const char *rest = dims_product(e, sx, 2, sx->ndim), *cg = i64_c(e, ch / g);
        p = new_piece(e, 4);
        const char *shape[] = {poly_c(e, sx->dims[0]), cg, i64_c(e, g), rest};
        const char *xs[] = {times_c(e, i64_c(e, ch), rest), rest, times_c(e, cg, rest), "1"};
        memcpy(p->shape, shape, sizeof shape);
        memcpy(p->xs, xs, sizeof xs);
    } else {
        bool up = id == OP_PIXEL_SHUFFLE;
        int64_t r = attr_int(f, up ? "upscale_factor" : "downscale_factor", 1), ch;
        int nd = sx->ndim;
        poly_is_const(sx->dims[nd - 3], &ch);
        const char *b = dims_product(e, sx, 0, nd - 3), *rc = i64_c(e, r);
        const char *h = poly_c(e, sx->dims[nd - 2]), *w = poly_c(e, sx->dims[nd - 1]);
        p = new_piece(e, 6);
        if (up) { /* x [b, C, r, r, H, W] read as y [b, C, H, r, W, r] */
            const char *hw = times_c(e, h, w);
            const char *shape[] = {b, i64_c(e, ch / (r * r)), h, rc, w, rc};
            const char *xs[] = {times_c(e, i64_c(e, ch), hw), times_c(e, i64_c(e, r * r), hw), w, times_c(e, rc, hw), "1",
                                hw};
            memcpy(p->shape, shape, sizeof shape);
            memcpy(p->xs, xs, sizeof xs);
        } else { /* x [b, C, H/r, r, W/r, r] read as y [b, C, r, r, H/r, W/r] */
            int64_t hv, wv;
            poly_is_const(sx->dims[nd - 2], &hv);
            poly_is_const(sx->dims[nd - 1], &wv);
            const char *shape[] = {b, i64_c(e, ch), rc, rc, i64_c(e, hv / r), i64_c(e, wv / r)};
            const char *xs[] = {i64_c(e, ch * hv * wv), i64_c(e, hv * wv), i64_c(e, wv), "1", i64_c(e, r * wv),
                                rc};
            memcpy(p->shape, shape, sizeof shape);
            memcpy(p->xs, xs, sizeof xs);
        }
    }
    strides_of(e, p->shape, p->ndim, p->ys);
    out[0] = p;
    return 1;
}

int rearrange_plan(Emitter *e, Node *f, const Shape *sx, const Shape *so, Piece ***pieces)
{
    Piece **out = arena_alloc(e->c->arena, (size_t)(1 << MAX_DIMS) * sizeof *out);
    *pieces = out;
    switch (f->op->id) {
    case OP_SELECT:
        return plan_select(e, f, sx, so, out);
    case OP_FLIP:
        return plan_flip(e, f, sx, out);
    case OP_ROLL:
        return plan_roll(e, f, sx, out);
    case OP_REPEAT:
    case OP_TILE:
        return plan_repeat(e, f, sx, out);
    default:
        return plan_shuffle(e, f, sx, out);
    }
}

void emit_piece_copy(Emitter *e, const Piece *p, const char *elem, const char *src, const char *const *src_stride,
                     const char *src_off, const char *dst, const char *const *dst_stride, const char *dst_off)
{
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = %s;\n", c_array(e, p->shape, p->ndim));
    buf_printf(e->out, "        const int64_t src_stride[] = %s;\n", c_array(e, src_stride, p->ndim));
    buf_printf(e->out, "        const int64_t dst_stride[] = %s;\n", c_array(e, dst_stride, p->ndim));
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, %d, shape, %s + (%s), src_stride, %s + (%s), dst_stride);\n",
               elem, p->ndim, src, src_off, dst, dst_off);
    close_block(e);
}

void emit_rearrange(Emitter *e, Node *n, const char *y)
{
    Piece **pieces;
    int count = rearrange_plan(e, n, in_shape(n, 0), out_shape(n), &pieces);
    for (int i = 0; i < count; i++)
        emit_piece_copy(e, pieces[i], y, in_c(e, n, 0), pieces[i]->xs, pieces[i]->x_off, y, pieces[i]->ys,
                        pieces[i]->y_off);
}
