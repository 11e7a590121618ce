/*
 * test_autocast.c - the dtype every op runs in, per target (src/autocast.c,
 * the infer_* rules of src/middle/types_*.c, the built-in policies).
 *
 * The first test is table-driven: for every row of every built-in policy
 * whose op the language has, compile a one-op model inside autocast and
 * check the dtype the op was decided to run in, and that the rule quotes
 * the row's provenance.  The inputs are chosen so each class shows:
 * lower_precision_fp rows get f32 inputs and must run in the target's low
 * dtype; fp32 and fp32_set_opt_dtype rows get low-precision inputs and
 * must run in f32; promote rows get a low-precision and an f32 operand and
 * must run in f32; banned rows must fail with PyTorch's advice.  An op the
 * language has but the table below lacks fails the test, so a new op
 * cannot skip it.
 *
 * The rest are the seed's examples and PyTorch's eligibility rules, one
 * claim per test (/work/shared/autocast-facts.md), and the command-line
 * overrides (--autocast-op, --autocast-dtype, --force-dtype).
 *
 * Models compile with emit = EMIT_NOTHING (as --explain without -o does),
 * since most of these ops have no runtime kernel yet; the decisions are
 * read from the planned graph.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ampc.h"

typedef struct Fixture {
    Options opts;
    Ctx *c;
    FILE *diag;
    char *diag_text;
    size_t diag_len;
    Output out;
} Fixture;

static int setup(void **state)
{
    Fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->diag = open_memstream(&f->diag_text, &f->diag_len);
    assert_non_null(f->diag);
    f->opts.emit = EMIT_NOTHING;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    ctx_free(f->c);
    fclose(f->diag);
    free(f->diag_text);
    free(f);
    return 0;
}

static int compile(Fixture *f, Target target, const char *text)
{
    if (f->c) {
        ctx_free(f->c);
        fclose(f->diag);
        free(f->diag_text);
        f->diag_text = NULL;
        f->diag = open_memstream(&f->diag_text, &f->diag_len);
        assert_non_null(f->diag);
    }
    f->opts.target = target;
    memset(&f->out, 0, sizeof f->out);
    f->c = ctx_new(&f->opts, f->diag);
    SourceFile *src = source_from_text(f->c, "t.amp", text, strlen(text));
    return ampc_compile(f->c, src, &f->out);
}

static const char *diags(Fixture *f)
{
    fflush(f->diag);
    return f->diag_text ? f->diag_text : "";
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle)) {
        print_error("expected to find\n  %s\nin\n%s\n", needle, haystack);
        fail();
    }
}

static void compile_ok(Fixture *f, Target target, const char *text)
{
    int rc = compile(f, target, text);
    if (rc != EXIT_OK)
        print_error("compiling\n%s\nfailed:\n%s\n", text, diags(f));
    assert_int_equal(rc, EXIT_OK);
}

/* The n-th node (0-based, schedule order) running op `name`. */
static Node *nth_node(Fixture *f, const char *name, int n)
{
    Graph *g = f->c->graph;
    assert_non_null(g);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *node = VEC_AT(g->nodes, i);
        if (strcmp(node->op->name, name) == 0 && n-- == 0)
            return node;
    }
    print_error("no node %s in the graph\n", name);
    fail();
    return NULL;
}

static DType dtype_of(Fixture *f, const char *name) { return nth_node(f, name, 0)->out->type.dtype; }

static int count_casts(Fixture *f, DType from, DType to)
{
    int n = 0;
    Graph *g = f->c->graph;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *node = VEC_AT(g->nodes, i);
        n += node->op->id == OP_CAST && node->in[0]->type.dtype == from && node->out->type.dtype == to;
    }
    return n;
}

/* ---- every row of every built-in policy --------------------------------- */

/* One call per policy key the language has.  In the model around it, F is
 * the float dtype of the inputs and G that of y (the second operand of
 * promote ops); parameters and buffers are f32 like a checkpoint's. */
static const struct {
    const char *key, *op, *call;
} calls[] = {
    {"__matmul__", "matmul", "x @ w"},
    {"matmul", "matmul", "matmul(x, w)"},
    {"mm", "mm", "mm(x, w)"},
    {"bmm", "bmm", "bmm(x3, x3)"},
    {"addmm", "addmm", "addmm(v, x, w)"},
    {"addbmm", "addbmm", "addbmm(w, x3, x3)"},
    {"baddbmm", "baddbmm", "baddbmm(x3, x3, x3)"},
    {"addmv", "addmv", "addmv(v, w, v)"},
    {"addr", "addr", "addr(w, v, v)"},
    {"linear", "linear", "linear(x, w, v)"},
    {"einsum", "einsum", "einsum(\"bi,ij->bj\", x, w)"},
    {"conv1d", "conv1d", "conv1d(seq, cw1)"},
    {"conv2d", "conv2d", "conv2d(img, cw, padding=1)"},
    {"relu", "relu", "relu(x)"},
    {"prelu", "prelu", "prelu(x, v)"},
    {"max_pool2d", "max_pool2d", "max_pool2d(img, 2)"},
    {"batch_norm", "batch_norm", "batch_norm(img, rm, rv, g3, g3)"},
    {"layer_norm", "layer_norm", "layer_norm(x, 16, g, g)"},
    {"group_norm", "group_norm", "group_norm(img, 3, g3, g3)"},
    {"softmax", "softmax", "softmax(x, dim=1)"},
    {"log_softmax", "log_softmax", "log_softmax(x, dim=1)"},
    {"exp", "exp", "exp(x)"},
    {"log", "log", "log(x)"},
    {"rsqrt", "rsqrt", "rsqrt(x)"},
    {"reciprocal", "reciprocal", "reciprocal(x)"},
    {"softplus", "softplus", "softplus(x)"},
    {"pow", "pow", "pow(x, 2)"},
    {"sum", "sum", "sum(x, dim=1)"},
    {"prod", "prod", "prod(x)"},
    {"cumsum", "cumsum", "cumsum(x, 1)"},
    {"logsumexp", "logsumexp", "logsumexp(x, 1)"},
    {"trace", "trace", "trace(sq)"},
    {"nll_loss", "nll_loss", "nll_loss(x, i)"},
    {"cross_entropy_loss", "cross_entropy", "cross_entropy(x, i)"},
    {"mse_loss", "mse_loss", "mse_loss(x, y)"},
    {"l1_loss", "l1_loss", "l1_loss(x, y)"},
    {"smooth_l1_loss", "smooth_l1_loss", "smooth_l1_loss(x, y)"},
    {"kl_div", "kl_div", "kl_div(x, y)"},
    {"binary_cross_entropy", "binary_cross_entropy", "binary_cross_entropy(x, y)"},
    {"binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits(x, y)"},
    {"cat", "cat", "cat(x, y, dim=1)"},
    {"stack", "stack", "stack(x, y)"},
    {"index_copy", "index_copy", "index_copy(x, 0, i, y)"},
    {"conv3d", "conv3d", "conv3d(vol, cw3)"},
    {"conv_transpose1d", "conv_transpose1d", "conv_transpose1d(seq, ct1)"},
    {"conv_transpose2d", "conv_transpose2d", "conv_transpose2d(img, ct2, stride=2)"},
    {"conv_transpose3d", "conv_transpose3d", "conv_transpose3d(vol, ct3)"},
    {"conv_tbc", "conv_tbc", "conv_tbc(tbc, tw, g4, 1)"},
    {"mv", "mv", "mv(sq, v)"},
    {"scaled_dot_product_attention", "scaled_dot_product_attention", "scaled_dot_product_attention(x3, x3, x3)"},
    {"acos", "acos", "acos(x)"},
    {"asin", "asin", "asin(x)"},
    {"cosh", "cosh", "cosh(x)"},
    {"sinh", "sinh", "sinh(x)"},
    {"tan", "tan", "tan(x)"},
    {"erfinv", "erfinv", "erfinv(x)"},
    {"expm1", "expm1", "expm1(x)"},
    {"log10", "log10", "log10(x)"},
    {"log2", "log2", "log2(x)"},
    {"log1p", "log1p", "log1p(x)"},
    {"cumprod", "cumprod", "cumprod(x, 1)"},
    {"cdist", "cdist", "cdist(x3, x3)"},
    {"inverse", "inverse", "inverse(sq)"},
    {"cholesky", "cholesky", "cholesky(sq)"},
    {"cholesky_inverse", "cholesky_inverse", "cholesky_inverse(sq)"},
    {"cholesky_solve", "cholesky_solve", "cholesky_solve(sq, sq)"},
    {"linalg_inv_ex", "linalg_inv_ex", "out, info = linalg_inv_ex(sq)"},
    {"qr", "qr", "out, r = qr(sq)"},
    {"svd", "svd", "out, s, vt = svd(sq)"},
    {"linalg_svd", "linalg_svd", "out, s, vt = linalg_svd(sq)"},
    {"triangular_solve", "triangular_solve", "out, a = triangular_solve(sq, sq)"},
    {"upsample_nearest1d", "upsample_nearest1d", "upsample_nearest1d(seq, scale_factors=2.0)"},
    {"upsample_nearest2d", "upsample_nearest2d", "upsample_nearest2d(img, scale_factors=2.0)"},
    {"upsample_nearest3d", "upsample_nearest3d", "upsample_nearest3d(vol, 8)"},
    {"upsample_linear1d", "upsample_linear1d", "upsample_linear1d(seq, 20)"},
    {"upsample_bilinear2d", "upsample_bilinear2d", "upsample_bilinear2d(img, 16, align_corners=true)"},
    {"upsample_bicubic2d", "upsample_bicubic2d", "upsample_bicubic2d(img, 16)"},
    {"upsample_trilinear3d", "upsample_trilinear3d", "upsample_trilinear3d(vol, scale_factors=2.0)"},
    {"reflection_pad1d", "reflection_pad1d", "reflection_pad1d(seq, 2)"},
    {"reflection_pad2d", "reflection_pad2d", "reflection_pad2d(img, 2)"},
    {"replication_pad1d", "replication_pad1d", "replication_pad1d(seq, 2)"},
    {"replication_pad2d", "replication_pad2d", "replication_pad2d(img, 2)"},
    {"replication_pad3d", "replication_pad3d", "replication_pad3d(vol, 1)"},
    {"huber_loss", "huber_loss", "huber_loss(x, y)"},
    {"poisson_nll_loss", "poisson_nll_loss", "poisson_nll_loss(x, y)"},
    {"soft_margin_loss", "soft_margin_loss", "soft_margin_loss(x, y)"},
    {"hinge_embedding_loss", "hinge_embedding_loss", "hinge_embedding_loss(x, y)"},
    {"nll_loss2d", "nll_loss2d", "nll_loss2d(img, it)"},
    {"multilabel_margin_loss", "multilabel_margin_loss", "multilabel_margin_loss(x, i2)"},
    {"multi_margin_loss", "multi_margin_loss", "multi_margin_loss(x, i)"},
    {"cosine_embedding_loss", "cosine_embedding_loss", "cosine_embedding_loss(x, y, tf)"},
    {"margin_ranking_loss", "margin_ranking_loss", "margin_ranking_loss(tf, tf, tf)"},
    {"triplet_margin_loss", "triplet_margin_loss", "triplet_margin_loss(x, y, x)"},
    {"linalg_vector_norm", "linalg_vector_norm", "linalg_vector_norm(x, dim=1)"},
    {"linalg_matrix_norm", "linalg_matrix_norm", "linalg_matrix_norm(x3)"},
    {"norm", "norm", "norm(x, 2, 1)"},
    {"frobenius_norm", "frobenius_norm", "frobenius_norm(x, 1)"},
    {"nuclear_norm", "nuclear_norm", "nuclear_norm(sq)"},
    {"renorm", "renorm", "renorm(x, 2, 0, 1.0)"},
    {"cosine_similarity", "cosine_similarity", "cosine_similarity(x, x)"},
    {"dist", "dist", "dist(x, x)"},
    {"pdist", "pdist", "pdist(sq)"},
    {"linalg_vecdot", "linalg_vecdot", "linalg_vecdot(x, x)"},
    {"chain_matmul", "chain_matmul", "chain_matmul(sq, w, sq)"},
    {"linalg_multi_dot", "linalg_multi_dot", "linalg_multi_dot(v, w, sq, v)"},
    {"max_pool3d", "max_pool3d", "max_pool3d(vol, 2)"},
    {"avg_pool3d", "avg_pool3d", "avg_pool3d(vol, 2)"},
    {"adaptive_avg_pool3d", "adaptive_avg_pool3d", "adaptive_avg_pool3d(vol, 1)"},
    {"linalg_cholesky", "linalg_cholesky", "linalg_cholesky(sq)"},
    {"linalg_cholesky_ex", "linalg_cholesky_ex", "out, info = linalg_cholesky_ex(sq)"},
    {"linalg_qr", "linalg_qr", "out, r = linalg_qr(sq)"},
    {"linalg_svdvals", "linalg_svdvals", "linalg_svdvals(x3)"},
    {"linalg_solve", "linalg_solve", "linalg_solve(sq, x3)"},
    {"linalg_eigh", "linalg_eigh", "out, vectors = linalg_eigh(sq)"},
    {"linalg_eigvalsh", "linalg_eigvalsh", "linalg_eigvalsh(x3)"},
    {"linalg_lu_factor", "linalg_lu_factor", "out, pivots = linalg_lu_factor(sq)"},
    {"pinverse", "pinverse", "pinverse(x)"},
    {"reflection_pad", "reflection_pad1d", "reflection_pad1d(seq, 2)"},
    {"replication_pad", "replication_pad2d", "replication_pad2d(img, 2)"},
    {"lstm_cell", "lstm_cell", "out, c = lstm_cell(x, x, x, wl, wl, g64, g64)"},
    {"gru_cell", "gru_cell", "gru_cell(x, x, wg, wg)"},
    {"rnn_tanh_cell", "rnn_tanh_cell", "rnn_tanh_cell(x, x, w, w, g, g)"},
    {"rnn_relu_cell", "rnn_relu_cell", "rnn_relu_cell(x, x, w, w)"},
    /* the layers: their steps are cells, decided by the layer's row */
    {"lstm", "lstm_cell", "out, h, c = lstm(x3, x[None], x[None], wl, wl, g64, g64, batch_first=true)"},
    {"gru", "gru_cell", "out, h = gru(x3, x[None], wg, wg, has_biases=false, batch_first=true)"},
    {"rnn_tanh", "rnn_tanh_cell", "out, h = rnn_tanh(x3, x[None], w, w, g, g, batch_first=true)"},
    {"rnn_relu", "rnn_relu_cell", "out, h = rnn_relu(x3, x[None], w, w, has_biases=false, batch_first=true)"},
    {"max_unpool2d", "max_unpool2d", "max_unpool2d(img, iu, 8)"},
    {"max_unpool3d", "max_unpool3d", "max_unpool3d(vol, iu3, 4, 1, 0)"},
    {"convolution", "convolution", "convolution(img, cw, padding=1)"},
    {"quantile", "quantile", "quantile(x, 0.25, 1)"},
    {"nanquantile", "nanquantile", "nanquantile(x, 0.5)"},
    {"lu_solve", "lu_solve", "lu_solve(sq, sq, piv)"},
    {"linalg_lstsq", "linalg_lstsq", "linalg_lstsq(x3, x3)"},
    {"linalg_matrix_exp", "linalg_matrix_exp", "linalg_matrix_exp(sq)"},
    {"linalg_householder_product", "linalg_householder_product", "linalg_householder_product(sq, v)"},
    {"orgqr", "orgqr", "orgqr(sq, v)"},
    {"ormqr", "ormqr", "ormqr(sq, v, sq, left=false)"},
    {"linalg_tensorinv", "linalg_tensorinv", "linalg_tensorinv(sq, ind=1)"},
    {"linalg_tensorsolve", "linalg_tensorsolve", "linalg_tensorsolve(sq, v)"},
    {"ctc_loss", "ctc_loss", "ctc_loss(x3, t16, l16, l16)"},
    /* promote: x is F, y and the other G operands f32 */
    {"addcmul", "addcmul", "addcmul(x, y, x)"},
    {"addcdiv", "addcdiv", "addcdiv(x, y, x)"},
    {"atan2", "atan2", "atan2(x, y)"},
    {"cross", "cross", "cross(p3, q3)"},
    {"dot", "dot", "dot(v, yv)"},
    {"vdot", "vdot", "vdot(v, yv)"},
    {"tensordot", "tensordot", "tensordot(sq, ysq, 1)"},
    {"bilinear", "bilinear", "bilinear(x, y, bw)"},
    {"scatter_add", "scatter_add", "scatter_add(x, 1, i2, y)"},
    {"index_put", "index_put", "index_put(x, i, y)"},
    {"grid_sampler", "grid_sampler", "grid_sampler(img, grid)"},
    /* the complex ops (src/middle/types_complex.c): real inputs, complex results */
    {"fft_fft", "fft_fft", "fft_fft(x)"},
    {"fft_ifft", "fft_ifft", "fft_ifft(x)"},
    {"fft_fft2", "fft_fft2", "fft_fft2(x)"},
    {"fft_ifft2", "fft_ifft2", "fft_ifft2(x)"},
    {"fft_fftn", "fft_fftn", "fft_fftn(x)"},
    {"fft_ifftn", "fft_ifftn", "fft_ifftn(x)"},
    {"fft_rfft", "fft_rfft", "fft_rfft(x)"},
    {"fft_irfft", "fft_irfft", "fft_irfft(x)"},
    {"fft_rfft2", "fft_rfft2", "fft_rfft2(x)"},
    {"fft_irfft2", "fft_irfft2", "fft_irfft2(x)"},
    {"fft_rfftn", "fft_rfftn", "fft_rfftn(x)"},
    {"fft_irfftn", "fft_irfftn", "fft_irfftn(x)"},
    {"fft_hfft", "fft_hfft", "fft_hfft(x)"},
    {"fft_ihfft", "fft_ihfft", "fft_ihfft(x)"},
    {"stft", "stft", "stft(x, 8, return_complex=true)"},
    {"polar", "polar", "polar(x, y)"},
    {"view_as_complex", "view_as_complex", "view_as_complex(grid)"},
    {"linalg_eig", "linalg_eig", "out, vecs = linalg_eig(sq)"},
    {"linalg_eigvals", "linalg_eigvals", "linalg_eigvals(sq)"},
};

static const char *call_for(const char *key, const char **op)
{
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        if (strcmp(calls[i].key, key) == 0) {
            *op = calls[i].op;
            return calls[i].call;
        }
    }
    return NULL;
}

static char *model_for(const char *call, DType F, DType G)
{
    const char *fn = dtype_name(F), *gn = dtype_name(G);
    /* ops with several results name them all: "out, r = qr(sq)" */
    const char *paren = strchr(call, '('), *eq = strstr(call, " = ");
    bool assigns = eq && paren && eq < paren;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    fprintf(m,
            "model T(B) {\n"
            "  input x: %s[B, 16]\n"
            "  input y: %s[B, 16]\n"
            "  input sq: %s[16, 16]\n"
            "  input x3: %s[B, 16, 16]\n"
            "  input img: %s[B, 3, 8, 8]\n"
            "  input seq: %s[B, 3, 10]\n"
            "  input v: %s[16]\n"
            "  input i: i64[B]\n"
            "  param w: f32[16, 16]\n"
            "  param cw: f32[4, 3, 3, 3]\n"
            "  param cw1: f32[4, 3, 3]\n"
            "  param g: f32[16]\n"
            "  param g3: f32[3]\n"
            "  buffer rm: f32[3]\n"
            "  buffer rv: f32[3]\n"
            "  input vol: %s[B, 3, 4, 4, 4]\n"
            "  input tbc: %s[10, B, 3]\n"
            "  input p3: %s[B, 3]\n"
            "  input q3: %s[B, 3]\n"
            "  input yv: %s[16]\n"
            "  input ysq: %s[16, 16]\n"
            "  input tf: %s[B]\n"
            "  input i2: i64[B, 16]\n"
            "  input it: i64[B, 8, 8]\n"
            "  param cw3: f32[4, 3, 3, 3, 3]\n"
            "  param ct1: f32[3, 4, 3]\n"
            "  param ct2: f32[3, 4, 3, 3]\n"
            "  param ct3: f32[3, 4, 3, 3, 3]\n"
            "  param tw: f32[3, 3, 4]\n"
            "  param g4: f32[4]\n"
            "  param bw: f32[4, 16, 16]\n"
            "  input grid: %s[B, 5, 6, 2]\n"
            "  param wl: f32[64, 16]\n"
            "  param wg: f32[48, 16]\n"
            "  param g64: f32[64]\n"
            "  input iu: i64[B, 3, 8, 8]\n"
            "  input iu3: i64[B, 3, 4, 4, 4]\n"
            "  input piv: i32[16]\n"
            "  input t16: i64[16, 4]\n"
            "  input l16: i64[16]\n"
            "  autocast {\n"
            "    %s%s\n"
            "  }\n"
            "  output out\n"
            "}\n",
            fn, gn, fn, fn, fn, fn, fn, fn, fn, fn, gn, gn, gn, fn, gn, assigns ? "" : "out = ", call);
    fclose(m);
    return text;
}

static void every_policy_row_decides_as_its_class(void **state)
{
    Fixture *f = *state;
    int checked = 0, skipped = 0;
    for (int t = 0; t < TARGET_COUNT; t++) {
        /* the policy as ampc loads it, rows and all */
        compile_ok(f, (Target)t, "model M() { input x: f32[2]\n y = relu(x)\n output y }\n");
        Policy *pol = f->c->policy;
        DType low = pol->low;
        int nrows = pol->rows->len;
        PolicyRow *rows = calloc((size_t)nrows, sizeof *rows);
        assert_non_null(rows);
        for (int r = 0; r < nrows; r++) {
            rows[r] = *(PolicyRow *)VEC_AT(pol->rows, r);
            rows[r].op = strdup(rows[r].op);
            rows[r].source = strdup(rows[r].source);
        }
        for (int r = 0; r < nrows; r++) {
            const PolicyRow *row = &rows[r];
            const char *op = NULL, *call = call_for(row->op, &op);
            bool in_language = op_lookup(f->c, row->op) || call;
            if (!call) {
                if (in_language) {
                    print_error("%s: the language has op '%s' but this table has no call for it\n",
                                target_name((Target)t), row->op);
                    fail();
                }
                skipped++;
                continue;
            }
            DType F = row->cls == POL_LOWER ? DT_F32 : low;
            DType G = row->cls == POL_PROMOTE ? DT_F32 : F;
            char *text = model_for(call, F, G);
            int rc = compile(f, (Target)t, text);
            if (row->cls == POL_BANNED) {
                assert_int_equal(rc, EXIT_INPUT_ERROR);
                assert_contains(diags(f), "binary_cross_entropy_with_logits, which is safe to autocast");
                free(text);
                checked++;
                continue;
            }
            if (rc != EXIT_OK) {
                print_error("%s, row '%s': compiling\n%s\nfailed:\n%s\n", target_name((Target)t), row->op, text,
                            diags(f));
                fail();
            }
            DType want = row->cls == POL_LOWER ? low : DT_F32;
            Node *n = nth_node(f, op, 0);
            /* a complex result runs at its parts' precision: c64 is f32 pairs */
            if (dtype_to_real(n->out->type.dtype) != want) {
                print_error("%s, row '%s' (%s): %s runs in %s, expected %s [%s]\n", target_name((Target)t), row->op,
                            policy_class_name(row->cls), op, dtype_name(n->out->type.dtype), dtype_name(want),
                            n->why);
                fail();
            }
            assert_contains(n->why, row->source);
            assert_contains(n->why, policy_class_name(row->cls));
            free(text);
            checked++;
        }
        for (int r = 0; r < nrows; r++) {
            free((char *)rows[r].op);
            free((char *)rows[r].source);
        }
        free(rows);
    }
    /* the counts are printed so a shrinking table shows in the log */
    print_message("checked %d policy rows; %d rows name ops the language does not have\n", checked, skipped);
    assert_true(checked >= 236);
    /* the issue asks the table to cover every row of every policy */
    assert_int_equal(skipped, 0);
}

/* ---- the seed's examples ------------------------------------------------- */

static const char addmm_model[] =
    "model M(B) {\n"
    "  input x: f32[B, 16]\n"
    "  param w: f32[16, 16]\n"
    "  param v: f32[16]\n"
    "  autocast {\n"
    "    a = x * 1\n"
    "    e = a.addmm(x, w)\n"    /* out-of-place method: autocast */
    "    a.addmm_(x, w)\n"       /* in-place: not */
    "    d = x * 1\n"
    "    addmm(v, x, w, out=d)\n" /* out=: not */
    "  }\n"
    "  output a, d, e\n"
    "}\n";

static void method_addmm_is_autocast(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_TPU, addmm_model);
    Node *n = nth_node(f, "addmm", 0);
    assert_int_equal(n->out->type.dtype, DT_BF16);
    assert_contains(n->why, "lower_precision_fp on tpu (seed: PyTorch/XLA AMP guide, TPU bf16 list)");
}

static void inplace_addmm_is_not_autocast(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_TPU, addmm_model);
    Node *n = nth_node(f, "addmm", 1);
    assert_int_equal(n->out->type.dtype, DT_F32);
    assert_string_equal(n->why, "not eligible: in-place variant");
}

static void out_addmm_is_not_autocast(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_TPU, addmm_model);
    Node *n = nth_node(f, "addmm", 2);
    assert_int_equal(n->out->type.dtype, DT_F32);
    assert_string_equal(n->why, "not eligible: out= given");
}

/* ---- eligibility ---------------------------------------------------------- */

static void f64_and_integer_inputs_are_never_cast(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_TPU,
               "model M(B) {\n"
               "  input d: f64[B, 16]\n"
               "  input n: i64[B, 16]\n"
               "  input m: i32[16, 16]\n"
               "  autocast {\n"
               "    a = relu(d)\n"      /* bf16 list, f64 input */
               "    b = relu(n)\n"      /* bf16 list, integer input */
               "    c = mm(m, m)\n"     /* bf16 list, integer matrices */
               "    e = log_softmax(d, 1)\n" /* fp32 list, f64 */
               "  }\n"
               "  output a, b, c, e\n"
               "}\n");
    assert_int_equal(dtype_of(f, "relu"), DT_F64);
    assert_int_equal(nth_node(f, "relu", 1)->out->type.dtype, DT_I64);
    assert_int_equal(dtype_of(f, "mm"), DT_I32);
    assert_int_equal(dtype_of(f, "log_softmax"), DT_F64);
    assert_contains(nth_node(f, "relu", 0)->why, "no argument is eligible");
    assert_int_equal(f->c->graph->nodes->len, 4); /* no casts at all */
}

/* PyTorch casts only is_floating_point() tensors, which complex ones are
 * not: fp32 rows leave c64 and c128 operands as they are, while the real
 * bf16 operand beside them is cast */
static void complex_inputs_are_never_cast(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_CPU,
               "model M(B) {\n"
               "  input z: c64[B, 9]\n"
               "  input w: c128[B, 9]\n"
               "  input x: bf16[B, 16]\n"
               "  autocast {\n"
               "    a = fft_ifft(z)\n"  /* fp32 list, c64 input */
               "    b = fft_irfft(w)\n" /* fp32 list, c128 input: f64 result */
               "    c = fft_rfft(x)\n"  /* fp32 list, bf16 input: cast to f32 */
               "  }\n"
               "  output a, b, c\n"
               "}\n");
    assert_int_equal(nth_node(f, "fft_ifft", 0)->in[0]->type.dtype, DT_C64);
    assert_int_equal(dtype_of(f, "fft_ifft"), DT_C64);
    assert_contains(nth_node(f, "fft_ifft", 0)->why, "no argument is eligible (f64, complex");
    assert_int_equal(nth_node(f, "fft_irfft", 0)->in[0]->type.dtype, DT_C128);
    assert_int_equal(dtype_of(f, "fft_irfft"), DT_F64);
    assert_int_equal(nth_node(f, "fft_rfft", 0)->in[0]->type.dtype, DT_F32);
    assert_int_equal(dtype_of(f, "fft_rfft"), DT_C64);
    assert_int_equal(f->c->graph->nodes->len, 4); /* the one cast: x to f32 */
}

static void explicit_dtype_wins_over_the_policy(void **state)
{
    Fixture *f = *state;
    /* softmax is fp32_set_opt_dtype on gpu; dtype=bf16 is explicit */
    compile_ok(f, TARGET_GPU,
               "model M(B) {\n"
               "  input x: f32[B, 16]\n"
               "  autocast {\n"
               "    y = softmax(x, 1, dtype=bf16)\n"
               "    s = sum(x, dtype=f16)\n"
               "  }\n"
               "  output y, s\n"
               "}\n");
    assert_int_equal(dtype_of(f, "softmax"), DT_BF16);
    assert_string_equal(nth_node(f, "softmax", 0)->why, "not eligible: explicit dtype=");
    assert_int_equal(dtype_of(f, "sum"), DT_F16);
}

static void set_opt_dtype_leaves_integers_alone(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_GPU,
               "model M(B) {\n"
               "  input n: i32[B, 16]\n"
               "  input h: f16[B, 16]\n"
               "  autocast {\n"
               "    s = sum(n)\n"     /* integers: not eligible, sum gives i64 */
               "    c = cumsum(h, 1)\n" /* f16: runs as if dtype=f32 */
               "  }\n"
               "  output s, c\n"
               "}\n");
    assert_int_equal(dtype_of(f, "sum"), DT_I64);
    assert_int_equal(dtype_of(f, "cumsum"), DT_F32);
}

/* ---- promote -------------------------------------------------------------- */

static void promote_picks_the_widest_operand(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_TPU,
               "model M(B) {\n"
               "  input a: bf16[B, 4]\n"
               "  input b: f32[B, 4]\n"
               "  input d: f64[B, 4]\n"
               "  autocast {\n"
               "    y = cat(a, b, dim=1)\n" /* f32 wins */
               "    z = cat(a, a)\n"        /* bf16 stays */
               "    u = cat(a, d)\n"        /* f64 is ignored by prioritize, then plain promotion gives f64 */
               "  }\n"
               "  output y, z, u\n"
               "}\n");
    assert_int_equal(dtype_of(f, "cat"), DT_F32);
    assert_int_equal(nth_node(f, "cat", 1)->out->type.dtype, DT_BF16);
    assert_int_equal(nth_node(f, "cat", 2)->out->type.dtype, DT_F64);
}

static void promote_rejects_f16_with_bf16(void **state)
{
    Fixture *f = *state;
    int rc = compile(f, TARGET_CPU,
                     "model M(B) {\n"
                     "  input a: bf16[B, 4]\n"
                     "  input b: f16[B, 4]\n"
                     "  autocast {\n"
                     "    y = stack(a, b)\n"
                     "  }\n"
                     "  output y\n"
                     "}\n");
    assert_int_equal(rc, EXIT_INPUT_ERROR);
    assert_contains(diags(f), "stack() under autocast mixes bf16 with f16");
    assert_contains(diags(f), "Unexpected floating ScalarType in at::autocast::prioritize");
}

/* PyTorch's prioritize starts from the autocast dtype: on gpu (f16) a bf16
 * operand is an error even without an f16 one, unless an f32 came first. */
/* PyTorch's prioritize starts from the autocast dtype: with bf16 (cpu) an
 * f16 operand is an error even without a bf16 one, unless an f32 operand
 * came first.  (cat is a promote op on tpu and cpu; gpu's promote ops are
 * not in the language yet.) */
static void promote_starts_from_the_autocast_dtype(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU, "model M(B) {\n  input a: f16[B, 4]\n  input b: f32[B, 4]\n"
                                            "  autocast { y = cat(a, b) }\n  output y\n}\n"),
                     EXIT_INPUT_ERROR);
    assert_contains(diags(f), "cat() under autocast mixes the autocast dtype bf16 with f16");
    compile_ok(f, TARGET_CPU, "model M(B) {\n  input a: f16[B, 4]\n  input b: f32[B, 4]\n"
                              "  autocast { y = cat(b, a) }\n  output y\n}\n");
    assert_int_equal(dtype_of(f, "cat"), DT_F32);
    /* a region's own dtype is where it starts */
    compile_ok(f, TARGET_CPU, "model M(B) {\n  input a: f16[B, 4]\n"
                              "  autocast(dtype=f16) { y = cat(a, a) }\n  output y\n}\n");
    assert_int_equal(dtype_of(f, "cat"), DT_F16);
}

/* ---- what autocast does downstream ------------------------------------------ */

static void autocast_op_changes_unlisted_ops_downstream(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_TPU,
               "model M(B) {\n"
               "  input x: f32[B, 16]\n"
               "  param w: f32[16, 16]\n"
               "  autocast {\n"
               "    h = mm(x, w)\n"        /* bf16 list */
               "    t = tanh(h)\n"         /* unlisted: follows its bf16 input */
               "    s = t * 2.5\n"         /* a number does not widen it */
               "    u = s + x\n"           /* meets f32: promotes to f32 */
               "  }\n"
               "  output u\n"
               "}\n");
    assert_int_equal(dtype_of(f, "tanh"), DT_BF16);
    assert_contains(nth_node(f, "tanh", 0)->why, "not in any tpu list: follows its inputs");
    assert_int_equal(dtype_of(f, "mul"), DT_BF16);
    assert_int_equal(dtype_of(f, "add"), DT_F32);
}

static void relu_and_max_pool2d_differ_between_tpu_and_gpu(void **state)
{
    Fixture *f = *state;
    const char *text = "model M(B) {\n"
                       "  input x: f32[B, 3, 8, 8]\n"
                       "  autocast {\n"
                       "    y = max_pool2d(relu(x), 2)\n"
                       "  }\n"
                       "  output y\n"
                       "}\n";
    compile_ok(f, TARGET_TPU, text);
    assert_int_equal(dtype_of(f, "relu"), DT_BF16);
    assert_int_equal(dtype_of(f, "max_pool2d"), DT_BF16);
    compile_ok(f, TARGET_GPU, text);
    assert_int_equal(dtype_of(f, "relu"), DT_F32);
    assert_int_equal(dtype_of(f, "max_pool2d"), DT_F32);
    assert_contains(nth_node(f, "relu", 0)->why, "not in any gpu list");
}

static void norm_parameters_stay_f32_under_a_half_input(void **state)
{
    Fixture *f = *state;
    compile_ok(f, TARGET_GPU,
               "model M(B) {\n"
               "  input x: f32[B, 3, 8, 8]\n"
               "  param cw: f32[3, 3, 3, 3]\n"
               "  param g: f32[3]\n"
               "  buffer rm: f32[3]\n"
               "  buffer rv: f32[3]\n"
               "  autocast {\n"
               "    y = batch_norm(conv2d(x, cw, padding=1), rm, rv, g, g)\n"
               "  }\n"
               "  output y\n"
               "}\n");
    /* fuse.c runs the two as one node, batch_norm's running_mean its fourth operand */
    Node *n = nth_node(f, "_conv_epilogue", 0);
    assert_int_equal(n->out->type.dtype, DT_F16);
    assert_int_equal(n->in[3]->type.dtype, DT_F32); /* PyTorch's mixed-type kernel */
    assert_int_equal(count_casts(f, DT_F32, DT_F16), 2); /* x and cw, for conv2d */
}

/* ---- the command line's say ---------------------------------------------------- */

static const char mlp[] =
    "model Mlp(B) {\n"
    "  input x: f32[B, 64]\n"
    "  input y: i64[B]\n"
    "  param w1: f32[128, 64]\n"
    "  param w2: f32[10, 128]\n"
    "  autocast {\n"
    "    h = relu(linear(x, w1))\n"
    "    logits = linear(h, w2)\n"
    "    loss = nll_loss(log_softmax(logits, dim=1), y)\n"
    "  }\n"
    "  output logits\n"
    "  minimize loss\n"
    "}\n";

static void autocast_op_overrides_a_row(void **state)
{
    Fixture *f = *state;
    const char *ops[] = {"linear=f32", "relu=bf16", "log_softmax=none"};
    memcpy(f->opts.autocast_ops, ops, sizeof ops);
    f->opts.nautocast_ops = 3;
    compile_ok(f, TARGET_GPU, mlp);
    assert_int_equal(dtype_of(f, "linear"), DT_F32);
    assert_contains(nth_node(f, "linear", 0)->why, "fp32 on gpu (command line: --autocast-op linear=f32)");
    assert_int_equal(dtype_of(f, "relu"), DT_BF16);
    assert_contains(nth_node(f, "relu", 0)->why, "lower_precision_fp (bf16) on gpu");
    assert_int_equal(dtype_of(f, "log_softmax"), DT_F32);
    assert_contains(nth_node(f, "log_softmax", 0)->why, "taken off the gpu lists");
}

static void autocast_op_adds_a_row(void **state)
{
    Fixture *f = *state;
    const char *ops[] = {"tanh=bf16"};
    memcpy(f->opts.autocast_ops, ops, sizeof ops);
    f->opts.nautocast_ops = 1;
    compile_ok(f, TARGET_TPU, "model M(B) {\n  input x: f32[B, 4]\n  autocast { y = tanh(x) }\n  output y\n}\n");
    assert_int_equal(dtype_of(f, "tanh"), DT_BF16);
}

static void autocast_op_refuses_what_the_policy_does_not_allow(void **state)
{
    Fixture *f = *state;
    const char *ops[] = {"relu=f16"};
    memcpy(f->opts.autocast_ops, ops, sizeof ops);
    f->opts.nautocast_ops = 1;
    assert_int_equal(compile(f, TARGET_TPU, mlp), EXIT_INPUT_ERROR);
    assert_contains(diags(f), "--autocast-op relu=f16: autocast on tpu supports bf16 only");
}

static void autocast_op_refuses_unknown_ops(void **state)
{
    Fixture *f = *state;
    const char *ops[] = {"rleu=f32"};
    memcpy(f->opts.autocast_ops, ops, sizeof ops);
    f->opts.nautocast_ops = 1;
    assert_int_equal(compile(f, TARGET_TPU, mlp), EXIT_INPUT_ERROR);
    assert_contains(diags(f), "'rleu' is not an op ampc knows");
}

static void autocast_dtype_sets_the_low_dtype(void **state)
{
    Fixture *f = *state;
    f->opts.autocast_dtype = DT_F16;
    compile_ok(f, TARGET_CPU, mlp);
    assert_int_equal(dtype_of(f, "linear"), DT_F16);
    f->opts.autocast_dtype = DT_F16;
    assert_int_equal(compile(f, TARGET_TPU, mlp), EXIT_INPUT_ERROR);
    assert_contains(diags(f), "--autocast-dtype f16: autocast on tpu supports bf16 only");
}

static void force_dtype_runs_everything_in_it_and_warns(void **state)
{
    Fixture *f = *state;
    f->opts.force_dtype = DT_BF16;
    compile_ok(f, TARGET_GPU, mlp);
    Graph *g = f->c->graph;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        assert_true(n->out->type.dtype == DT_BF16 || n->out->type.dtype == DT_F16);
    }
    assert_int_equal(dtype_of(f, "log_softmax"), DT_BF16);
    assert_contains(nth_node(f, "log_softmax", 0)->why, "--force-dtype bf16 (the XLA_USE_BF16 analogue), instead of f32: fp32");
    assert_contains(diags(f), "warning: --force-dtype bf16 overrides the per-op precision of autocast");
    assert_contains(diags(f), "do not set XLA_USE_BF16 when using autocast");
    /* the declared interface keeps f32: inputs are converted on entry */
    assert_int_equal(((Value *)VEC_AT(g->inputs, 0))->type.dtype, DT_F32);
}

static void force_dtype_without_autocast_does_not_warn(void **state)
{
    Fixture *f = *state;
    f->opts.force_dtype = DT_F16;
    compile_ok(f, TARGET_TPU,
               "model M(B) {\n  input x: f64[B, 4]\n  y = softmax(x, 1, dtype=f32)\n  output y\n}\n");
    assert_int_equal(dtype_of(f, "softmax"), DT_F16);
    assert_string_equal(diags(f), "");
    assert_int_equal(count_casts(f, DT_F64, DT_F16), 1);
}

/* ---- ops without kernels ------------------------------------------------------------ */

static void op_without_kernel_is_an_error_only_for_c(void **state)
{
    Fixture *f = *state;
    /* every op has a kernel: a form of one without (partly broadcast batch dims) */
    const char *text = "model M(B) {\n  input x: f32[2, B, 4, 5]\n  input w: f32[B, 5, 6]\n  y = matmul(x, w)\n"
                       "  output y\n}\n";
    compile_ok(f, TARGET_TPU, text);
    f->opts.emit = EMIT_C;
    assert_int_equal(compile(f, TARGET_TPU, text), EXIT_INPUT_ERROR);
    assert_contains(diags(f), "t.amp:4:7: error: matmul with partially broadcast batch dimensions is not supported yet");
    f->opts.emit = EMIT_DOT;
    compile_ok(f, TARGET_TPU, text);
    assert_contains(f->out.c_file.data, "digraph");
}

/* --explain=json escapes what a file name may hold: quotes, backslashes,
 * control characters, bytes that are not UTF-8; python3's json module (if
 * there is a python3) must read the result. */
static void explain_json_escapes_odd_file_names(void **state)
{
    Fixture *f = *state;
    char path[] = "/tmp/ampc-explain.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    int saved = dup(1);
    assert_true(saved >= 0 && dup2(fd, 1) == 1);
    f->opts.explain = EXPLAIN_JSON;
    f->opts.target = TARGET_TPU;
    f->c = ctx_new(&f->opts, f->diag);
    const char *text = "model M(B) {\n  input x: f32[B, 4]\n  autocast { y = relu(x) }\n  output y\n}\n";
    SourceFile *src = source_from_text(f->c, "we\"i\\rd\tn" "\xff" "ame.amp", text, strlen(text));
    int rc = ampc_compile(f->c, src, &f->out);
    fflush(stdout);
    assert_true(dup2(saved, 1) == 1);
    close(saved);
    close(fd);
    assert_int_equal(rc, EXIT_OK);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "grep -qF '\"file\": \"we\\\"i\\\\rd\\tn\\ufffdame.amp\"' %s", path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "! command -v python3 >/dev/null || python3 -m json.tool %s >/dev/null", path);
    assert_int_equal(system(cmd), 0);
    unlink(path);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(every_policy_row_decides_as_its_class),
        T(method_addmm_is_autocast),
        T(inplace_addmm_is_not_autocast),
        T(out_addmm_is_not_autocast),
        T(f64_and_integer_inputs_are_never_cast),
        T(complex_inputs_are_never_cast),
        T(explicit_dtype_wins_over_the_policy),
        T(set_opt_dtype_leaves_integers_alone),
        T(promote_picks_the_widest_operand),
        T(promote_rejects_f16_with_bf16),
        T(promote_starts_from_the_autocast_dtype),
        T(autocast_op_changes_unlisted_ops_downstream),
        T(relu_and_max_pool2d_differ_between_tpu_and_gpu),
        T(norm_parameters_stay_f32_under_a_half_input),
        T(autocast_op_overrides_a_row),
        T(autocast_op_adds_a_row),
        T(autocast_op_refuses_what_the_policy_does_not_allow),
        T(autocast_op_refuses_unknown_ops),
        T(autocast_dtype_sets_the_low_dtype),
        T(force_dtype_runs_everything_in_it_and_warns),
        T(force_dtype_without_autocast_does_not_warn),
        T(op_without_kernel_is_an_error_only_for_c),
        T(explain_json_escapes_odd_file_names),
    };
#undef T
    return cmocka_run_group_tests_name("autocast", tests, NULL, NULL);
}
