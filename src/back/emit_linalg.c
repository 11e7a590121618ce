/* emit_linalg.c: the kernel calls of linear algebra.
 *
 * The products: the mm family as one strided gemm (emit_gemm_call, shared
 * with the gradient rules), einsum, tensordot, multi_dot and bilinear as
 * one amp_contract (Contraction: index lists, sizes and strides); the
 * solves and decompositions (inverse, cholesky, qr, svd, eigh, lu, lstsq,
 * matrix_exp, householder_product/orgqr/ormqr, tensorinv, tensorsolve)
 * with their work space in the node's scratch.  Kernels that can find a
 * singular input return a status the forward checks.
 *
 * Requires: a planned graph whose every node's operands are in the dtype
 * its kernel takes (autocast made every conversion an explicit Cast node).
 * Each emitter here is named in the emit column of its ops' ops.def rows
 * (declared in emit_rules.h) and called by emit_op (emit_ops.c), which has
 * already checked the operands' dtypes; it writes the C statements
 * computing node n into y (and n's other results), read from the node's
 * shapes and attributes.  Arrays of sizes and strides are local constants
 * in a block of their own, so a call reads like its kernel's documentation
 * in runtime/include/amprt/.
 */
#include "emit.h"

#include <string.h>

bool linear_weights_preparable(const Node *n, Value **src)
{
    DType t = n->out->type.dtype;
    int64_t k;
    if (!(n->op->id == OP_LINEAR || n->op->id == OP_LINEAR_RELU) || !(t == DT_F32 || t == DT_BF16 || t == DT_F16))
        return false;
    Value *w = preparable_weight_source(n);
    if (!w || w->type.shape.ndim != 2 || !poly_is_const(w->type.shape.dims[0], &k) ||
        !poly_is_const(w->type.shape.dims[1], &k))
        return false;
    *src = w;
    return true;
}

/* linear, and _linear_relu (fuse.c: the product with its relu applied to
 * each tile after its one rounding, as the relu kernel would): y = x W^T +
 * b over every row of x (its leading dims flattened); on the weights
 * <prefix>_prepare packed, where it did (linear_ex). */
static void emit_linear_call(Emitter *e, Node *n, const char *y, bool relu)
{
    const Shape *xs = in_shape(n, 0), *ws = in_shape(n, 1);
    DType t = n->out->type.dtype;
    const char *dims = arena_printf(e->c->arena, "%s, %s, %s", dims_product(e, xs, 0, xs->ndim - 1),
                                    poly_c(e, ws->dims[0]), poly_c(e, ws->dims[1]));
    if (e->prep_packed && e->prep_packed[n->out->id] >= 0)
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %d, %s);\n", kernel(e, "linear_ex", t), dims, in_c(e, n, 0),
                   in_c(e, n, 1), prepared_weights_c(e, n), in_c(e, n, 2), relu, y);
    else
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, relu ? "linear_relu" : "linear", t), dims,
                   in_c(e, n, 0), in_c(e, n, 1), in_c(e, n, 2), y);
}

void emit_linear_relu(Emitter *e, Node *n, const char *y) { emit_linear_call(e, n, y, true); }

void emit_gemm_call(Emitter *e, DType t, const Gemm *g, const char *y)
{
    open_block(e);
    buf_printf(e->out, "        const amp_gemm_desc d = {\n");
    buf_printf(e->out, "            .batch = %s, .M = %s, .N = %s, .K = %s,\n", g->batch, g->M, g->N, g->K);
    buf_printf(e->out, "            .a_stride = %s, .b_stride = %s,", c_array(e, g->a, 3), c_array(e, g->b, 3));
    if (g->C)
        buf_printf(e->out, " .c_stride = %s,", c_array(e, g->cs, 3));
    buf_puts(e->out, "\n");
    buf_printf(e->out, "            .alpha = %s, .beta = %s, .sum_batch = %d,\n        };\n", double_c(e, g->alpha),
               double_c(e, g->beta), g->sum_batch);
    if (g->relu_y) /* fuse.c: the relu's gradient in the product's epilogue */
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s);\n", kernel(e, "gemm_relu_backward", t), g->A, g->B, g->relu_y, y);
    else
        buf_printf(e->out, "        %s(&d, %s, %s, %s, %s);\n", kernel(e, "gemm", t), g->A, g->B, g->C ? g->C : "NULL", y);
    close_block(e);
}

/* Strides of C (the added input) broadcast to [M, N] (batch: `batched`). */
static void added_strides(Emitter *e, const Shape *s, const Shape *out, const char **cs)
{
    const char *st[MAX_DIMS];
    broadcast_strides(e, s, out, st);
    int nd = out->ndim;
    cs[0] = nd == 3 ? st[0] : "0";
    cs[1] = nd >= 2 ? st[nd - 2] : "0";
    cs[2] = nd >= 1 ? st[nd - 1] : "0";
    if (nd == 1) { /* addmv: y [M], C as [M, 1] */
        cs[1] = st[0];
        cs[2] = "0";
    }
}

void emit_mm(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype, ct = compute_dtype(t);
    OpId id = n->op->id;
    Gemm g = {.batch = "1", .alpha = 1, .beta = 0};
    bool added = id == OP_ADDMM || id == OP_BADDBMM || id == OP_ADDBMM || id == OP_ADDMV || id == OP_ADDR;
    int a = added ? 1 : 0, b = a + 1;
    const Shape *sa = in_shape(n, a), *sb = in_shape(n, b);
    if (added) {
        g.alpha = attr_number(n, "alpha", "1", ct);
        g.beta = attr_number(n, "beta", "1", ct);
        g.C = in_c(e, n, 0);
    }
    g.A = in_c(e, n, a);
    g.B = in_c(e, n, b);
    switch (id) {
    case OP_MM:
    case OP_ADDMM:
        g.M = poly_c(e, sa->dims[0]);
        g.K = poly_c(e, sa->dims[1]);
        g.N = poly_c(e, sb->dims[1]);
        g.a[0] = "0", g.a[1] = g.K, g.a[2] = "1";
        g.b[0] = "0", g.b[1] = g.N, g.b[2] = "1";
        break;
    case OP_BMM:
    case OP_BADDBMM:
    case OP_ADDBMM:
        g.batch = poly_c(e, sa->dims[0]);
        g.M = poly_c(e, sa->dims[1]);
        g.K = poly_c(e, sa->dims[2]);
        g.N = poly_c(e, sb->dims[2]);
        g.a[0] = arena_printf(c->arena, "%s * %s", g.M, g.K), g.a[1] = g.K, g.a[2] = "1";
        g.b[0] = arena_printf(c->arena, "%s * %s", g.K, g.N), g.b[1] = g.N, g.b[2] = "1";
        g.sum_batch = id == OP_ADDBMM;
        break;
    case OP_MV:
    case OP_ADDMV:
        g.M = poly_c(e, sa->dims[0]);
        g.K = poly_c(e, sa->dims[1]);
        g.N = "1";
        g.a[0] = "0", g.a[1] = g.K, g.a[2] = "1";
        g.b[0] = "0", g.b[1] = "1", g.b[2] = "0";
        break;
    case OP_ADDR:
        g.M = poly_c(e, sa->dims[0]);
        g.N = poly_c(e, sb->dims[0]);
        g.K = "1";
        g.a[0] = "0", g.a[1] = "1", g.a[2] = "0";
        g.b[0] = "0", g.b[1] = "0", g.b[2] = "1";
        break;
    case OP_DOT:
    case OP_VDOT:
        g.M = g.N = "1";
        g.K = poly_c(e, sa->dims[0]);
        g.a[0] = "0", g.a[1] = "0", g.a[2] = "1";
        g.b[0] = "0", g.b[1] = "1", g.b[2] = "0";
        break;
    default:
        ICE("not a matrix product: %s", n->op->name);
    }
    if (added) {
        Shape full = *out_shape(n);
        if (id == OP_ADDBMM) { /* C is [M, N] against the summed result */
            full.ndim = 2;
        }
        added_strides(e, in_shape(n, 0), &full, g.cs);
    }
    emit_gemm_call(e, t, &g, y);
}

int add_index(Contraction *k, const char *size, bool out)
{
    (void)out;
    int i = k->n_index++;
    k->size[i] = size;
    for (int o = 0; o < 4; o++)
        k->stride[o][i] = "0";
    return i;
}

void emit_contract_call(Emitter *e, DType t, Contraction *k, const char *y)
{
    open_block(e);
    buf_printf(e->out, "        const amp_contract_desc d = {\n");
    buf_printf(e->out, "            .n_index = %d, .n_out = %d, .n_operands = %d,\n", k->n_index, k->n_out, k->n_ops);
    buf_printf(e->out, "            .size = %s,\n            .stride = {", c_array(e, k->size, k->n_index));
    const char *ops[4];
    for (int o = 0; o < k->n_ops; o++) {
        buf_printf(e->out, "%s%s", o ? ", " : "", c_array(e, k->stride[o], k->n_index));
        ops[o] = k->operand[o];
    }
    buf_puts(e->out, "},\n        };\n");
    buf_printf(e->out, "        const %s *const operands[%d] = %s;\n", dtype_c_type(t), k->n_ops, c_array(e, ops, k->n_ops));
    buf_printf(e->out, "        %s(&d, operands, %s);\n", kernel(e, "contract", t), y);
    close_block(e);
}

void emit_einsum(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    const char *s = attr_str(n, "equation", "");
    Contraction k = {0};
    int letter_index[128];
    for (int i = 0; i < 128; i++)
        letter_index[i] = -1;
    if (strchr(s, '.')) {
        unsupported(e, n, "an equation with ... has no runtime kernel yet");
        return;
    }
    const char *arrow = strstr(s, "->");
    /* operands' subscripts, in order */
    const char *subs[4];
    int nsubs[4];
    int nops = 0;
    const char *p = s;
    while (nops < 4) {
        subs[nops] = p;
        while (*p && *p != ',' && *p != '-')
            p++;
        nsubs[nops] = 0;
        for (const char *q = subs[nops]; q < p; q++)
            nsubs[nops] += *q != ' ';
        nops++;
        if (*p != ',')
            break;
        p++;
    }
    if (nops > 4 || nops + 1 > n->nin + 1) {
        unsupported(e, n, "more than four operands has no runtime kernel yet");
        return;
    }
    /* output letters: after ->, or every letter seen once, sorted */
    char outl[64];
    int nout = 0;
    if (arrow) {
        for (const char *q = arrow + 2; *q; q++)
            if (*q != ' ')
                outl[nout++] = *q;
    } else {
        int count[128] = {0};
        for (const char *q = s; *q; q++)
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
                count[(int)*q]++;
        for (int ch = 'A'; ch <= 'z'; ch++)
            if (count[ch] == 1)
                outl[nout++] = (char)ch;
    }
    k.n_ops = nops;
    /* sizes of every letter, from the operands' shapes */
    const char *letter_size[128] = {0};
    for (int o = 0; o < nops; o++) {
        const Shape *so = in_shape(n, o + 1);
        int d = 0;
        for (const char *q = subs[o]; d < so->ndim && *q && *q != ',' && *q != '-'; q++)
            if (*q != ' ')
                letter_size[(int)*q] = poly_c(e, so->dims[d++]);
    }
    for (int i = 0; i < nout; i++)
        letter_index[(int)outl[i]] = add_index(&k, letter_size[(int)outl[i]], true);
    k.n_out = nout;
    for (int o = 0; o < nops; o++)
        for (const char *q = subs[o]; *q && *q != ',' && *q != '-'; q++)
            if (*q != ' ' && letter_index[(int)*q] < 0)
                letter_index[(int)*q] = add_index(&k, letter_size[(int)*q], false);
    if (k.n_index > MAX_CONTRACT_INDEX) {
        unsupported(e, n, "more than 16 distinct indices");
        return;
    }
    for (int o = 0; o < nops; o++) {
        const Shape *so = in_shape(n, o + 1);
        const char *st[MAX_DIMS];
        contiguous_strides(e, so, st);
        int d = 0;
        for (const char *q = subs[o]; *q && *q != ',' && *q != '-'; q++) {
            if (*q == ' ')
                continue;
            int i = letter_index[(int)*q];
            /* a letter repeated in one operand walks its diagonal */
            k.stride[o][i] = strcmp(k.stride[o][i], "0") == 0 ? st[d]
                                                              : arena_printf(c->arena, "%s + %s", k.stride[o][i], st[d]);
            d++;
        }
        k.operand[o] = in_c(e, n, o + 1);
    }
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

void emit_tensordot(Emitter *e, Node *n, const char *y)
{
    const Shape *sa = in_shape(n, 0), *sb = in_shape(n, 1);
    int64_t nd = attr_int(n, "dims", 2);
    Contraction k = {.n_ops = 2};
    const char *sta[MAX_DIMS], *stb[MAX_DIMS];
    contiguous_strides(e, sa, sta);
    contiguous_strides(e, sb, stb);
    for (int d = 0; d < sa->ndim - nd; d++) {
        int i = add_index(&k, poly_c(e, sa->dims[d]), true);
        k.stride[0][i] = sta[d];
    }
    for (int d = (int)nd; d < sb->ndim; d++) {
        int i = add_index(&k, poly_c(e, sb->dims[d]), true);
        k.stride[1][i] = stb[d];
    }
    k.n_out = k.n_index;
    for (int j = 0; j < nd; j++) {
        int i = add_index(&k, poly_c(e, sb->dims[j]), false);
        k.stride[0][i] = sta[sa->ndim - nd + j];
        k.stride[1][i] = stb[j];
    }
    k.operand[0] = in_c(e, n, 0);
    k.operand[1] = in_c(e, n, 1);
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

/* chain_matmul / linalg_multi_dot: A1 A2 ... An (n <= 4) as one contraction. */
void emit_multi_dot(Emitter *e, Node *n, const char *y)
{
    int nops = 0;
    for (int k = 0; k < n->nin; k++)
        nops += n->in[k] != NULL;
    if (nops > 4) {
        unsupported(e, n, "more than four matrices has no runtime kernel yet");
        return;
    }
    if (nops == 1) {
        buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0),
                   numel_c(e, out_shape(n)), y);
        return;
    }
    Contraction k = {.n_ops = nops};
    /* vectors at the ends (multi_dot) are rows or columns */
    const Shape *first = in_shape(n, 0), *last = in_shape(n, nops - 1);
    int rows = first->ndim == 2 ? add_index(&k, poly_c(e, first->dims[0]), true) : -1;
    int cols = last->ndim == 2 ? add_index(&k, poly_c(e, last->dims[1]), true) : -1;
    k.n_out = k.n_index;
    int prev = rows;
    for (int o = 0; o < nops; o++) {
        const Shape *s = in_shape(n, o);
        k.operand[o] = in_c(e, n, o);
        int inner = o + 1 < nops ? add_index(&k, poly_c(e, s->dims[s->ndim - 1]), false) : cols;
        if (s->ndim == 2) {
            if (prev >= 0)
                k.stride[o][prev] = poly_c(e, s->dims[1]);
            if (inner >= 0)
                k.stride[o][inner] = "1";
        } else {
            k.stride[o][o == 0 ? inner : prev] = "1";
        }
        prev = inner;
    }
    emit_contract_call(e, n->out->type.dtype, &k, y);
}

void emit_bilinear(Emitter *e, Node *n, const char *y)
{
    const Shape *s1 = in_shape(n, 0), *sw = in_shape(n, 2), *so = out_shape(n);
    Contraction k = {.n_ops = 3};
    const char *batch = dims_product(e, s1, 0, s1->ndim - 1);
    const char *in1 = poly_c(e, sw->dims[1]), *in2 = poly_c(e, sw->dims[2]);
    int b = add_index(&k, batch, true), o = add_index(&k, poly_c(e, sw->dims[0]), true);
    k.n_out = 2;
    int i = add_index(&k, in1, false), j = add_index(&k, in2, false);
    k.stride[0][b] = in1, k.stride[0][i] = "1";
    k.stride[1][b] = in2, k.stride[1][j] = "1";
    k.stride[2][o] = arena_printf(e->c->arena, "%s * %s", in1, in2), k.stride[2][i] = in2, k.stride[2][j] = "1";
    k.operand[0] = in_c(e, n, 0), k.operand[1] = in_c(e, n, 1), k.operand[2] = in_c(e, n, 2);
    emit_contract_call(e, n->out->type.dtype, &k, y);
    if (n->in[3]) {
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s;\n", shape_array(e, so));
        const char *ys[MAX_DIMS];
        contiguous_strides(e, so, ys);
        buf_printf(e->out, "        const int64_t a_stride[] = %s;\n", c_array(e, ys, so->ndim));
        buf_printf(e->out, "        const int64_t b_stride[] = %s;\n", bcast_array(e, in_shape(n, 3), so));
        buf_printf(e->out, "        %s(%d, shape, %s, a_stride, %s, b_stride, %s);\n",
                   kernel(e, "add_bcast", n->out->type.dtype), so->ndim, y, in_c(e, n, 3), y);
        close_block(e);
    }
}

void emit_linalg(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    if (t != DT_F32 && t != DT_F64) {
        unsupported(e, n, "linear algebra runs in f32 or f64 only");
        return;
    }
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    const char *batch = dims_product(e, s, 0, nd - 2);
    const char *m = poly_c(e, s->dims[nd - 2]), *ncol = poly_c(e, s->dims[nd - 1]);
    int64_t rows, cols;
    if (!poly_is_const(s->dims[nd - 2], &rows) || !poly_is_const(s->dims[nd - 1], &cols)) {
        unsupported(e, n, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return;
    }
    const char *scratch = n->scratch ? e->cname[n->scratch->id] : NULL;
    const char *info = NULL, *work = "NULL";
    if (scratch && linalg_scratch_has_info(n->op->id)) {
        /* parenthesised: the status loop below indexes it as info[i], and
         * `(int32_t *)(void *)scratch[i]` would cast the i-th byte instead */
        info = arena_printf(c->arena, "((int32_t *)(void *)%s)", scratch);
        if (linalg_work_bytes(n->op->id, rows, cols, dtype_size(t)))
            work = arena_printf(c->arena, "%s + 8 * (%s)", scratch, batch);
    } else if (scratch) {
        work = scratch;
    }
    switch (n->op->id) {
    case OP_INVERSE:
    case OP_LINALG_INV_EX:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s);\n", kernel(e, "inv_ex", t), batch, m, in_c(e, n, 0), y,
                   n->op->id == OP_INVERSE ? info : more_out_c(e, n, 0), work);
        break;
    case OP_CHOLESKY:
    case OP_LINALG_CHOLESKY:
    case OP_LINALG_CHOLESKY_EX:
        buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, %s);\n", kernel(e, "cholesky_ex", t), batch, m,
                   attr_bool(n, "upper", false), in_c(e, n, 0), y,
                   n->op->id == OP_LINALG_CHOLESKY_EX ? more_out_c(e, n, 0) : info);
        break;
    case OP_CHOLESKY_INVERSE:
        buf_printf(e->out, "    %s(%s, %s, %d, %s, %s);\n", kernel(e, "cholesky_inverse", t), batch, m,
                   attr_bool(n, "upper", false), in_c(e, n, 0), y);
        break;
    case OP_CHOLESKY_SOLVE: {
        const Shape *sl = in_shape(n, 1);
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s);\n", kernel(e, "cholesky_solve", t), batch,
                   poly_c(e, sl->dims[sl->ndim - 1]), ncol, attr_bool(n, "upper", false), in_c(e, n, 0),
                   in_c(e, n, 1), y);
        break;
    }
    case OP_LINALG_LU_FACTOR:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "lu_factor", t), batch, m, ncol,
                   in_c(e, n, 0), y, more_out_c(e, n, 0), info);
        break;
    case OP_LINALG_SOLVE: {
        const Shape *sb = in_shape(n, 1);
        bool left = attr_bool(n, "left", true);
        if (sb->ndim != nd) {
            unsupported(e, n, "a vector or broadcast right-hand side has no runtime kernel yet");
            return;
        }
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s, %s, %s);\n", kernel(e, "solve", t), batch, m,
                   poly_c(e, sb->dims[sb->ndim - (left ? 1 : 2)]), left, in_c(e, n, 0), in_c(e, n, 1), y, info, work);
        break;
    }
    case OP_TRIANGULAR_SOLVE: {
        /* triangular_solve(b, A): solution, then a copy of A */
        const Shape *sa = in_shape(n, 1);
        int na = sa->ndim;
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %d, %d, %s, %s, %s);\n", kernel(e, "triangular_solve", t), batch,
                   poly_c(e, sa->dims[na - 1]), ncol, attr_bool(n, "upper", true),
                   attr_bool(n, "transpose", false), attr_bool(n, "unitriangular", false), in_c(e, n, 0),
                   in_c(e, n, 1), y);
        if (more_out_c(e, n, 0))
            buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", more_out_c(e, n, 0), in_c(e, n, 1),
                       numel_c(e, sa), more_out_c(e, n, 0));
        break;
    }
    case OP_QR:
    case OP_LINALG_QR: {
        int mode = 0;
        if (n->op->id == OP_QR)
            mode = attr_bool(n, "some", true) ? 0 : 1;
        else {
            const char *ms = attr_str(n, "mode", "reduced");
            mode = strcmp(ms, "complete") == 0 ? 1 : strcmp(ms, "r") == 0 ? 2 : 0;
        }
        /* qr's results are (Q, R); mode "r" gives an empty Q */
        buf_printf(e->out, "    %s(%s, %s, %s, %d, %s, %s, %s, %s);\n", kernel(e, "qr", t), batch, m, ncol, mode,
                   in_c(e, n, 0), mode == 2 ? "NULL" : y, more_out_c(e, n, 0), work);
        break;
    }
    case OP_LINALG_SVD:
        buf_printf(e->out, "    %s(%s, %s, %s, %d, 1, %s, %s, %s, %s, %s);\n", kernel(e, "svd", t), batch, m, ncol,
                   attr_bool(n, "full_matrices", true), in_c(e, n, 0), y, more_out_c(e, n, 0), more_out_c(e, n, 1), work);
        break;
    case OP_LINALG_SVDVALS:
        buf_printf(e->out, "    %s(%s, %s, %s, 0, 0, %s, NULL, %s, NULL, %s);\n", kernel(e, "svd", t), batch, m, ncol,
                   in_c(e, n, 0), y, work);
        break;
    case OP_LINALG_EIGH:
    case OP_LINALG_EIGVALSH: {
        bool upper = strcmp(attr_str(n, "UPLO", "L"), "U") == 0;
        if (n->op->id == OP_LINALG_EIGH)
            buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, %s, %s);\n", kernel(e, "eigh", t), batch, m, upper,
                       in_c(e, n, 0), y, more_out_c(e, n, 0), work);
        else
            buf_printf(e->out, "    %s(%s, %s, %d, %s, %s, NULL, %s);\n", kernel(e, "eigh", t), batch, m, upper,
                       in_c(e, n, 0), y, work);
        break;
    }
    case OP_PINVERSE:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "pinverse", t), batch, m, ncol,
                   double_c(e, attr_number(n, "rcond", "1e-15", DT_F64)), in_c(e, n, 0), y, work);
        break;
    default:
        unsupported(e, n, "has no runtime kernel yet");
        return;
    }
    /* the ops PyTorch raises for on a singular or indefinite input return
     * a status from the forward instead */
    if ((n->op->id == OP_INVERSE || n->op->id == OP_CHOLESKY || n->op->id == OP_LINALG_CHOLESKY ||
         n->op->id == OP_LINALG_SOLVE) && info) {
        e->uses_rc = true;
        buf_printf(e->out, "    for (int64_t i = 0; i < (int64_t)(%s); i++)\n        if (%s[i] != 0)\n"
                           "            return AMP_ERR_SINGULAR;\n", batch, info);
    }
}

void emit_svd_op(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    if (t != DT_F32 && t != DT_F64) {
        unsupported(e, n, "linear algebra runs in f32 or f64 only");
        return;
    }
    const Shape *s = in_shape(n, 0);
    int nd = s->ndim;
    int64_t rows, cols;
    if (!poly_is_const(s->dims[nd - 2], &rows) || !poly_is_const(s->dims[nd - 1], &cols) || !n->scratch) {
        unsupported(e, n, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return;
    }
    const char *ct = dtype_c_type(t), *scratch = e->cname[n->scratch->id];
    const char *batch = dims_product(e, s, 0, nd - 2);
    int64_t k = rows < cols ? rows : cols, elems = svd_scratch_elems(n, rows, cols);
    bool nuclear = is_nuclear_norm(n);
    const char *work = arena_printf(c->arena, "%s + (size_t)(%s) * %lld", scratch,
                                    n->op->id == OP_SVD || nuclear ? batch : "1",
                                    (long long)(elems * (int64_t)dtype_size(t)));
    const char *buf = arena_printf(c->arena, "(%s *)(void *)%s", ct, scratch);
    if (nuclear) {
        /* the singular values of every matrix, then one sum per matrix */
        buf_printf(e->out, "    %s(%s, %lld, %lld, 0, 0, %s, NULL, %s, NULL, %s);\n", kernel(e, "svd", t), batch,
                   (long long)rows, (long long)cols, in_c(e, n, 0), buf, work);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = {%s, %lld};\n        const uint8_t reduce[] = {0, 1};\n",
                   batch, (long long)k);
        buf_printf(e->out, "        %s(2, shape, reduce, %s, %s);\n", kernel(e, "sum", t), buf, y);
        close_block(e);
        return;
    }
    const char *S = more_out_c(e, n, 0), *V = more_out_c(e, n, 1);
    bool uv = attr_bool(n, "compute_uv", true), some = attr_bool(n, "some", true);
    if (!uv) {
        /* torch.svd(compute_uv=False): U and V zero-filled */
        buf_printf(e->out, "    memset(%s, 0, (size_t)(%s) * sizeof *%s);\n", y, numel_c(e, out_shape(n)), y);
        if (V)
            buf_printf(e->out, "    memset(%s, 0, (size_t)(%s) * sizeof *%s);\n", V,
                       numel_c(e, &n->more_out[1]->type.shape), V);
        buf_printf(e->out, "    %s(%s, %lld, %lld, 0, 0, %s, NULL, %s, NULL, %s);\n", kernel(e, "svd", t), batch,
                   (long long)rows, (long long)cols, in_c(e, n, 0), S ? S : "NULL", work);
        return;
    }
    int64_t kv = some ? k : cols;
    buf_printf(e->out, "    %s(%s, %lld, %lld, %d, 1, %s, %s, %s, %s, %s);\n", kernel(e, "svd", t), batch,
               (long long)rows, (long long)cols, !some, in_c(e, n, 0), y, S, buf, work);
    if (!V)
        return;
    /* V [batch, n, kv] is vh [batch, kv, n] transposed */
    open_block(e);
    buf_printf(e->out, "        const int64_t shape[] = {%s, %lld, %lld};\n", batch, (long long)cols, (long long)kv);
    buf_printf(e->out, "        const int64_t x_stride[] = {%lld, 1, %lld};\n", (long long)(kv * cols), (long long)cols);
    buf_printf(e->out, "        const int64_t y_stride[] = {%lld, %lld, 1};\n", (long long)(kv * cols), (long long)kv);
    buf_printf(e->out, "        amp_copy_strided(sizeof *%s, 3, shape, %s, x_stride, %s, y_stride);\n", V, buf, V);
    close_block(e);
}

/* The solves and matrix functions (the runtime's ref_linalg_solve.c, as
 * tests/ops/linalg_solve.amp): lu_solve, lstsq, matrix_exp,
 * householder_product/orgqr, ormqr; tensorinv and tensorsolve through
 * amp_inv_ex and amp_solve (amprt/linalg.h) on the operands viewed as one
 * square matrix. */
void emit_linalg_solve(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    DType t = n->out->type.dtype;
    OpId id = n->op->id;
    if (t != DT_F32 && t != DT_F64) {
        unsupported(e, n, "linear algebra runs in f32 or f64 only");
        return;
    }
    const Shape *s0 = in_shape(n, 0), *so = out_shape(n);
    int nd = s0->ndim;
    const char *scratch = n->scratch ? e->cname[n->scratch->id] : "NULL", *dwork = double_scratch(e, n);
    bool needs_work = id == OP_LINALG_LSTSQ || id == OP_LINALG_MATRIX_EXP || id == OP_LINALG_TENSORINV ||
                      id == OP_LINALG_TENSORSOLVE;
    if (needs_work && !n->scratch) {
        unsupported(e, n, "matrices of a run-time size have no static memory plan yet (the batch may vary)");
        return;
    }
    switch (id) {
    case OP_LU_SOLVE: {
        const Shape *sl = in_shape(n, 1);
        Shape bb = *s0, lb = *sl, ob = *so;
        bb.ndim -= 2, lb.ndim -= 2, ob.ndim -= 2;
        if (!shape_equal(&bb, &ob) || !shape_equal(&lb, &ob)) {
            unsupported(e, n, "a broadcast batch has no runtime kernel yet");
            return;
        }
        emit_checked(e, "    ", arena_printf(c->arena, "%s(%s, %s, %s, %s, %s, %s, %s)", kernel(e, "lu_solve", t),
                                             dims_product(e, so, 0, so->ndim - 2), poly_c(e, s0->dims[nd - 2]),
                                             poly_c(e, s0->dims[nd - 1]), in_c(e, n, 1), in_c(e, n, 2), in_c(e, n, 0), y));
        return;
    }
    case OP_LINALG_LSTSQ: {
        const Shape *sb = in_shape(n, 1);
        bool vector = sb->ndim == nd - 1;
        Shape ab = *s0, bb = *sb;
        ab.ndim -= 2, bb.ndim -= vector ? 1 : 2;
        if (!shape_equal(&ab, &bb)) {
            unsupported(e, n, "a broadcast batch has no runtime kernel yet");
            return;
        }
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "lstsq", t), dims_product(e, s0, 0, nd - 2),
                   poly_c(e, s0->dims[nd - 2]), poly_c(e, s0->dims[nd - 1]), vector ? "1" : poly_c(e, sb->dims[sb->ndim - 1]),
                   in_c(e, n, 0), in_c(e, n, 1), y, dwork);
        return;
    }
    case OP_LINALG_MATRIX_EXP:
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s);\n", kernel(e, "matrix_exp", t), dims_product(e, s0, 0, nd - 2),
                   poly_c(e, s0->dims[nd - 1]), in_c(e, n, 0), y, dwork);
        return;
    case OP_LINALG_HOUSEHOLDER_PRODUCT:
    case OP_ORGQR: {
        const Shape *st = in_shape(n, 1);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "householder_product", t),
                   dims_product(e, s0, 0, nd - 2), poly_c(e, s0->dims[nd - 2]), poly_c(e, s0->dims[nd - 1]),
                   poly_c(e, st->dims[st->ndim - 1]), in_c(e, n, 0), in_c(e, n, 1), y);
        return;
    }
    case OP_ORMQR: {
        const Shape *st = in_shape(n, 1);
        buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %d, %d, %s, %s, %s, %s);\n", kernel(e, "ormqr", t),
                   dims_product(e, s0, 0, nd - 2), poly_c(e, s0->dims[nd - 2]), poly_c(e, s0->dims[nd - 1]),
                   poly_c(e, st->dims[st->ndim - 1]), poly_c(e, so->dims[so->ndim - 2]), poly_c(e, so->dims[so->ndim - 1]),
                   attr_bool(n, "left", true), attr_bool(n, "transpose", false), in_c(e, n, 0),
                   in_c(e, n, 1), in_c(e, n, 2), y);
        return;
    }
    case OP_LINALG_TENSORINV:
    case OP_LINALG_TENSORSOLVE: {
        /* the matrix is [p, p]: p the product of A's dims from ind (tensorinv), of X's (tensorsolve) */
        const char *p = id == OP_LINALG_TENSORINV ? dims_product(e, s0, (int)attr_int(n, "ind", 2), nd)
                                                  : numel_c(e, so);
        const char *info = arena_printf(c->arena, "((int32_t *)(void *)%s)", scratch);
        const char *work = arena_printf(c->arena, "%s + 8", scratch);
        if (id == OP_LINALG_TENSORINV)
            buf_printf(e->out, "    %s(1, %s, %s, %s, %s, %s);\n", kernel(e, "inv_ex", t), p, in_c(e, n, 0), y, info,
                       work);
        else
            buf_printf(e->out, "    %s(1, %s, 1, 1, %s, %s, %s, %s, %s);\n", kernel(e, "solve", t), p, in_c(e, n, 0),
                       in_c(e, n, 1), y, info, work);
        e->uses_rc = true;
        buf_printf(e->out, "    if (%s[0] != 0)\n        return AMP_ERR_SINGULAR;\n", info);
        return;
    }
    default:
        ICE("emit_linalg_solve on %s", n->op->name);
    }
}

void emit_linear(Emitter *e, Node *n, const char *y) { emit_linear_call(e, n, y, false); }

/* matmul: batched over the output's leading dims, each operand either
 * spanning the whole batch or shared by it (a stride of 0). */
void emit_matmul(Emitter *e, Node *n, const char *y)
{
    const Shape *sa = &n->in[0]->type.shape, *sb = &n->in[1]->type.shape, *so = &n->out->type.shape;
    int out_batch_dims = so->ndim - (sa->ndim >= 2) - (sb->ndim >= 2);
    const char *M = sa->ndim >= 2 ? poly_c(e, sa->dims[sa->ndim - 2]) : "1";
    const char *K = poly_c(e, sa->dims[sa->ndim - 1]);
    const char *N = sb->ndim >= 2 ? poly_c(e, sb->dims[sb->ndim - 1]) : "1";
    const char *batch = dims_product(e, so, 0, out_batch_dims);
    /* An operand either spans the whole output batch or is shared by it. */
    const char *strides[2];
    const Shape *ins[2] = {sa, sb};
    for (int k = 0; k < 2; k++) {
        const Shape *s = ins[k];
        Shape bs = {0};
        for (int i = 0; i + 2 < s->ndim; i++)
            bs.dims[bs.ndim++] = s->dims[i];
        Shape ob = {0};
        for (int i = 0; i < out_batch_dims; i++)
            ob.dims[ob.ndim++] = so->dims[i];
        int64_t one;
        Poly *bn = shape_numel(e->c, &bs);
        if (bs.ndim == 0 || (poly_is_const(bn, &one) && one == 1))
            strides[k] = "0";
        else if (poly_equal(bn, shape_numel(e->c, &ob)))
            strides[k] = k == 0 ? arena_printf(e->c->arena, "%s*%s", M, K) : arena_printf(e->c->arena, "%s*%s", K, N);
        else {
            error_at(e->c, n->loc, "matmul with partially broadcast batch dimensions is not supported yet");
            return;
        }
    }
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %s, %s, %s);\n", kernel(e, "matmul", n->out->type.dtype), batch, M,
               N, K, e->cname[n->in[0]->id], strides[0], e->cname[n->in[1]->id], strides[1], y);
}
