/*
 * test_backward_nn.c - the gradient kernels of amprt/backward_nn.h:
 * rnn_cell_backward for lstm, gru, tanh and relu cells, with and without
 * biases, batched and B = 1; conv_tbc_backward with and without padding;
 * index_put_backward and index_put_mask_backward (rows, a negative and a
 * repeated one, broadcast values, a 2-D index or mask, an empty mask);
 * grid_sampler_backward (2-D and 3-D, linear and nearest, every padding,
 * both align_corners); ctc_loss_backward (every reduction, repeated
 * labels, an empty target, short inputs; f64 composed with log_softmax's
 * backward against finite differences of the loss of the logits, since
 * PyTorch's formula is that gradient; zero_infinity).  Every dtype through the public and the
 * reference table as backward_test_util.h describes (f32/bf16/f16 against
 * the f64 kernel on the same rounded inputs, f64 against central finite
 * differences of the forward f64 kernel amp_ref_rnn_cell_f64, so the
 * gradient is checked against the forward PyTorch's numbers pin in
 * test_recurrent.c).  The engine holds four gradients per case, so each cell is
 * checked twice: the data gradients (x, hx, cx, w_ih), then the rest.
 * conv_tbc's cases differentiate its forward kernel the same way.
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

enum { RX, RHX, RCX, RWI, RWH, RBI, RBH, RNIN };

typedef struct {
    int kind;
    int64_t B, I, H;
    int biases; /* b_ih and b_hh given (else NULL: zero) */
} rnn_info;

static int64_t rnn_gates(int kind)
{
    return kind == AMP_RNN_LSTM ? 4 : kind == AMP_RNN_GRU ? 3 : 1;
}

static void rnn_forward(const bw_case *c, double *const *in, double *y)
{
    const rnn_info *r = c->ctx;
    double *cy = malloc((size_t)(r->B * r->H) * sizeof *cy);
    assert_non_null(cy);
    amp_ref_rnn_cell_f64(r->kind, r->B, r->I, r->H, in[RX], in[RHX], r->kind == AMP_RNN_LSTM ? in[RCX] : NULL,
                         in[RWI], in[RWH], r->biases ? in[RBI] : NULL, r->biases ? in[RBH] : NULL, y,
                         r->kind == AMP_RNN_LSTM ? cy : NULL);
    free(cy);
}

static void rnn_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                         void *const *grads)
{
    const rnn_info *r = c->ctx;
    void *out[RNIN] = {0};
    for (int g = 0; g < c->ngrad; g++)
        out[c->grad_of[g]] = grads[g];
    double *work = malloc(AMP_RNN_CELL_BACKWARD_WORK_ELEMS(r->B, r->H) * sizeof *work);
    assert_non_null(work);
    int lstm = r->kind == AMP_RNN_LSTM;
    KCALL(k, t, rnn_cell_backward, r->kind, r->B, r->I, r->H, in[RX], in[RHX], lstm ? in[RCX] : NULL, in[RWI],
          in[RWH], r->biases ? in[RBI] : NULL, r->biases ? in[RBH] : NULL, dy, NULL, work, out[RX], out[RHX], out[RCX],
          out[RWI], out[RWH], out[RBI], out[RBH]);
    free(work);
}

static void check_rnn(const char *what, const rnn_info *r)
{
    int64_t GH = rnn_gates(r->kind) * r->H;
    size_t size[RNIN] = {(size_t)(r->B * r->I), (size_t)(r->B * r->H), (size_t)(r->B * r->H),
                         (size_t)(GH * r->I),   (size_t)(GH * r->H),   (size_t)GH,
                         (size_t)GH};
    /* the two passes: the data and w_ih, then w_hh and the biases */
    int sets[2][4] = {{RX, RHX, RCX, RWI}, {RWH, RBI, RBH, -1}};
    for (int s = 0; s < 2; s++) {
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = what;
        c.nprimary = c.nin = RNIN;
        for (int i = 0; i < RNIN; i++) {
            c.size[i] = size[i];
            c.lo[i] = -1;
            c.hi[i] = 1;
        }
        for (int g = 0; g < 4; g++) {
            int i = sets[s][g];
            if (i < 0 || (i == RCX && r->kind != AMP_RNN_LSTM) || ((i == RBI || i == RBH) && !r->biases))
                continue;
            c.grad_of[c.ngrad++] = i;
        }
        c.nout = (size_t)(r->B * r->H);
        /* each output sums at most GH (or B) products of gate gradients,
         * themselves a few operations from a sum of I + H products */
        c.cond = 8.0 * (double)(GH + r->B + r->I + r->H) + 64;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-6;
        c.ctx = r;
        c.forward = rnn_forward;
        c.backward = rnn_backward;
        bw_check(&c);
    }
}

static void test_rnn_cell_backward(void **state)
{
    (void)state;
    static const char *const names[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    char what[64];
    for (int kind = 0; kind < 4; kind++) {
        rnn_info r = {kind, 3, 4, 5, 1};
        snprintf(what, sizeof what, "%s_cell B 3 I 4 H 5", names[kind]);
        check_rnn(what, &r);
        r = (rnn_info){kind, 2, 3, 2, 0};
        snprintf(what, sizeof what, "%s_cell without biases", names[kind]);
        check_rnn(what, &r);
        r = (rnn_info){kind, 1, 1, 1, 1};
        snprintf(what, sizeof what, "%s_cell B 1 I 1 H 1", names[kind]);
        check_rnn(what, &r);
    }
}

/* lstm's cell-state gradient dcy (an unrolled lstm's c_t feeds the next
 * step): with dhy NULL, every gradient of L = <dcy, cy> against central
 * differences of the f64 forward's cy; and dhy and dcy together add. */
static double lstm_cy_loss(int64_t B, int64_t I, int64_t H, double *const *in, const double *dcy)
{
    double hy[16], cy[16], L = 0;
    amp_ref_rnn_cell_f64(AMP_RNN_LSTM, B, I, H, in[0], in[1], in[2], in[3], in[4], in[5], in[6], hy, cy);
    for (int64_t o = 0; o < B * H; o++)
        L += dcy[o] * cy[o];
    return L;
}

static void test_lstm_cell_state_gradient(void **state)
{
    (void)state;
    enum { B = 2, I = 3, H = 2, GH = 4 * H };
    static double x[B * I], hx[B * H], cx[B * H], wi[GH * I], wh[GH * H], bi[GH], bh[GH], dcy[B * H], dhy[B * H];
    double *in[7] = {x, hx, cx, wi, wh, bi, bh};
    const size_t n[7] = {B * I, B * H, B * H, GH * I, GH * H, GH, GH};
    uint32_t seed = 12345;
    for (int k = 0; k < 7; k++)
        for (size_t i = 0; i < n[k]; i++) {
            seed = seed * 1664525u + 1013904223u;
            in[k][i] = (double)(seed >> 8) / (double)(1u << 24) * 2 - 1;
        }
    for (int o = 0; o < B * H; o++) {
        dcy[o] = 0.25 + 0.5 * o;
        dhy[o] = 1.0 - 0.3 * o;
    }
    double g[7][GH * I], g2[7][GH * I], work[AMP_RNN_CELL_BACKWARD_WORK_ELEMS(B, H)];
    amp_rnn_cell_backward_f64(AMP_RNN_LSTM, B, I, H, x, hx, cx, wi, wh, bi, bh, NULL, dcy, work, g[0], g[1], g[2],
                              g[3], g[4], g[5], g[6]);
    for (int k = 0; k < 7; k++)
        for (size_t i = 0; i < n[k]; i++) {
            const double h = 1e-6, keep = in[k][i];
            in[k][i] = keep + h;
            double up = lstm_cy_loss(B, I, H, in, dcy);
            in[k][i] = keep - h;
            double down = lstm_cy_loss(B, I, H, in, dcy);
            in[k][i] = keep;
            double fd = (up - down) / (2 * h);
            if (fabs(fd - g[k][i]) > 1e-7 * (1 + fabs(fd))) {
                print_error("lstm dcy: operand %d element %zu: kernel %.12g, finite differences %.12g\n", k, i,
                            g[k][i], fd);
                fail();
            }
        }
    /* linear in (dhy, dcy): both at once is the sum of each alone */
    double h_only[7][GH * I];
    amp_rnn_cell_backward_f64(AMP_RNN_LSTM, B, I, H, x, hx, cx, wi, wh, bi, bh, dhy, NULL, work, h_only[0],
                              h_only[1], h_only[2], h_only[3], h_only[4], h_only[5], h_only[6]);
    amp_rnn_cell_backward_f64(AMP_RNN_LSTM, B, I, H, x, hx, cx, wi, wh, bi, bh, dhy, dcy, work, g2[0], g2[1], g2[2],
                              g2[3], g2[4], g2[5], g2[6]);
    for (int k = 0; k < 7; k++)
        for (size_t i = 0; i < n[k]; i++)
            assert_true(fabs(g2[k][i] - (g[k][i] + h_only[k][i])) <= 1e-12 * (1 + fabs(g2[k][i])));
}

/* Only the wanted gradients are written: NULL outputs are skipped, and
 * the others are unchanged by which ones are wanted. */
static void test_rnn_cell_backward_subsets(void **state)
{
    (void)state;
    const int64_t B = 2, I = 3, H = 4, GH = 3 * H;
    tensor x = tensor_random(AMP_F32, (size_t)(B * I), -1, 1), hx = tensor_random(AMP_F32, (size_t)(B * H), -1, 1);
    tensor wi = tensor_random(AMP_F32, (size_t)(GH * I), -1, 1), wh = tensor_random(AMP_F32, (size_t)(GH * H), -1, 1);
    tensor dy = tensor_random(AMP_F32, (size_t)(B * H), -1, 1);
    tensor all_dwh = tensor_new(AMP_F32, (size_t)(GH * H)), dx = tensor_new(AMP_F32, (size_t)(B * I));
    tensor dhx = tensor_new(AMP_F32, (size_t)(B * H)), dwi = tensor_new(AMP_F32, (size_t)(GH * I));
    tensor only_dwh = tensor_new(AMP_F32, (size_t)(GH * H));
    double work[AMP_RNN_CELL_BACKWARD_WORK_ELEMS(2, 4)];
    amp_rnn_cell_backward_f32(AMP_RNN_GRU, B, I, H, x.data, hx.data, NULL, wi.data, wh.data, NULL, NULL, dy.data,
                              NULL, work, dx.data, dhx.data, NULL, dwi.data, all_dwh.data, NULL, NULL);
    amp_rnn_cell_backward_f32(AMP_RNN_GRU, B, I, H, x.data, hx.data, NULL, wi.data, wh.data, NULL, NULL, dy.data,
                              NULL, work, NULL, NULL, NULL, NULL, only_dwh.data, NULL, NULL);
    assert_memory_equal(all_dwh.data, only_dwh.data, (size_t)(GH * H) * sizeof(float));
    tensor *ts[] = {&x, &hx, &wi, &wh, &dy, &all_dwh, &dx, &dhx, &dwi, &only_dwh};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        tensor_free(ts[i]);
}

/* ---- conv_tbc ------------------------------------------------------------- */

typedef struct {
    int64_t time, batch, in, kernel, out, pad;
} tbc_info;

static void tbc_forward(const bw_case *c, double *const *in, double *y)
{
    const tbc_info *p = c->ctx;
    amp_ref_conv_tbc_f64(p->time, p->batch, p->in, p->kernel, p->out, p->pad, in[0], in[1], in[2], y);
}

static void tbc_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                         void *const *grads)
{
    const tbc_info *p = c->ctx;
    KCALL(k, t, conv_tbc_backward, p->time, p->batch, p->in, p->kernel, p->out, p->pad, in[0], in[1], dy, grads[0],
          grads[1], grads[2]);
}

static void check_tbc(const char *what, const tbc_info *p)
{
    bw_case c;
    memset(&c, 0, sizeof c);
    c.what = what;
    c.nprimary = c.nin = 3; /* x, w, bias */
    c.size[0] = (size_t)(p->time * p->batch * p->in);
    c.size[1] = (size_t)(p->kernel * p->in * p->out);
    c.size[2] = (size_t)p->out;
    for (int i = 0; i < 3; i++) {
        c.lo[i] = -1;
        c.hi[i] = 1;
    }
    c.ngrad = 3;
    c.grad_of[0] = 0, c.grad_of[1] = 1, c.grad_of[2] = 2;
    int64_t out_time = p->time + 2 * p->pad - p->kernel + 1;
    c.nout = (size_t)(out_time * p->batch * p->out);
    c.cond = 4.0 * (double)(out_time * p->batch + p->kernel * p->out) + 32;
    c.fd_h = 1e-3; /* y is linear in each input: central differences are exact up to rounding */
    c.fd_tol = 1e-9;
    c.ctx = p;
    c.forward = tbc_forward;
    c.backward = tbc_backward;
    bw_check(&c);
}

static void test_conv_tbc_backward(void **state)
{
    (void)state;
    tbc_info p = {7, 3, 4, 3, 5, 0};
    check_tbc("conv_tbc pad 0", &p);
    p = (tbc_info){5, 2, 3, 2, 4, 1};
    check_tbc("conv_tbc pad 1", &p);
    p = (tbc_info){3, 2, 2, 4, 3, 2}; /* the kernel longer than the input: padding on both sides used */
    check_tbc("conv_tbc pad 2, kernel > time", &p);
    p = (tbc_info){1, 1, 1, 1, 1, 0};
    check_tbc("conv_tbc all ones", &p);
}

/* ---- index_put's values ----------------------------------------------------- */

typedef struct {
    int mask_mode;           /* 0: i64 rows (index), 1: bool mask */
    int ndim;                /* index form: shape's rank; mask form: x's */
    int64_t shape[4];        /* index form: [index dims..., row dims...]; mask form: x's shape */
    int index_ndim;          /* index dims, or mask dims */
    const int64_t *index;
    const uint8_t *mask;
    int64_t x_dim0, x_numel;
    int64_t v_stride[4], v_numel;
    int accumulate;
} ip_info;

static void ip_forward(const bw_case *c, double *const *in, double *y)
{
    const ip_info *p = c->ctx;
    memcpy(y, in[1], (size_t)p->x_numel * sizeof *y);
    if (p->mask_mode)
        amp_ref_index_put_mask_f64(p->ndim, p->shape, p->index_ndim, p->mask, in[0], p->v_stride, p->accumulate, y);
    else
        assert_int_equal(amp_ref_index_put_f64(p->ndim, p->shape, p->index_ndim, p->index, p->x_dim0, in[0],
                                               p->v_stride, p->accumulate, y),
                         AMP_OK);
}

static void ip_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                        void *const *grads)
{
    const ip_info *p = c->ctx;
    (void)in;
    double *work = malloc((size_t)p->v_numel * sizeof *work);
    assert_non_null(work);
    if (p->mask_mode)
        KCALL(k, t, index_put_mask_backward, p->ndim, p->shape, p->index_ndim, p->mask, dy, p->v_stride, p->v_numel,
              work, grads[0]);
    else
        KCALL(k, t, index_put_backward, p->ndim, p->shape, p->index_ndim, p->index, p->x_dim0, dy, p->v_stride,
              p->v_numel, work, grads[0]);
    free(work);
}

static void check_ip(const char *what, const ip_info *p)
{
    bw_case c;
    memset(&c, 0, sizeof c);
    c.what = what;
    c.nprimary = c.nin = 2; /* values (differentiated), x */
    c.size[0] = (size_t)p->v_numel;
    c.size[1] = (size_t)p->x_numel;
    c.lo[0] = c.lo[1] = -1;
    c.hi[0] = c.hi[1] = 1;
    c.ngrad = 1;
    c.nout = (size_t)p->x_numel;
    c.cond = 4.0 * (double)p->x_numel + 16; /* a broadcast value sums up to every position */
    c.fd_h = 1e-3;                          /* y is linear in values */
    c.fd_tol = 1e-9;
    c.ctx = p;
    c.forward = ip_forward;
    c.backward = ip_backward;
    bw_check(&c);
}

static void test_index_put_backward(void **state)
{
    (void)state;
    /* x [4, 3]; distinct rows (one negative), values per position */
    static const int64_t rows[3] = {2, -4, 3};
    ip_info p = {0, 2, {3, 3}, 1, rows, NULL, 4, 12, {3, 1}, 9, 0};
    check_ip("index_put rows", &p);
    /* values [3] broadcast over the rows */
    p = (ip_info){0, 2, {3, 3}, 1, rows, NULL, 4, 12, {0, 1}, 3, 0};
    check_ip("index_put broadcast values", &p);
    /* accumulate with a repeated row (-1 and 3 are the same row) */
    static const int64_t rep[5] = {1, 3, 1, -1, 0};
    p = (ip_info){0, 2, {5, 3}, 1, rep, NULL, 4, 12, {3, 1}, 15, 1};
    check_ip("index_put accumulate repeated rows", &p);
    p = (ip_info){0, 2, {5, 3}, 1, rep, NULL, 4, 12, {1, 0}, 5, 1};
    check_ip("index_put accumulate, values broadcast along the row", &p);
    /* a 2-D index into x [5, 2] */
    static const int64_t idx2[4] = {4, 0, 2, 1};
    p = (ip_info){0, 3, {2, 2, 2}, 2, idx2, NULL, 5, 10, {4, 2, 1}, 8, 0};
    check_ip("index_put 2-D index", &p);
}

static void test_index_put_mask_backward(void **state)
{
    (void)state;
    static const uint8_t m1[4] = {1, 0, 1, 1};
    /* x [4, 3], mask over dim 0, values [3] */
    ip_info p = {1, 2, {4, 3}, 1, NULL, m1, 0, 12, {0, 1}, 3, 0};
    check_ip("index_put mask rows", &p);
    p.accumulate = 1;
    check_ip("index_put mask rows accumulate", &p);
    /* x [2, 3, 2], mask over the first two dims, one value broadcast */
    static const uint8_t m2[6] = {0, 1, 1, 0, 1, 1};
    p = (ip_info){1, 3, {2, 3, 2}, 2, NULL, m2, 0, 12, {0, 0, 0}, 1, 0};
    check_ip("index_put 2-D mask, one value", &p);
    static const uint8_t none[4] = {0, 0, 0, 0};
    p = (ip_info){1, 2, {4, 3}, 1, NULL, none, 0, 12, {0, 1}, 3, 1};
    check_ip("index_put empty mask: zero gradient", &p);
}

/* ---- grid_sampler ----------------------------------------------------------- */

typedef struct {
    int ns, mode, padding, align;
    int64_t N, C, in_size[3], out_size[3];
} gs_info;

static int64_t gs_prod(int ns, const int64_t *s)
{
    int64_t n = 1;
    for (int d = 0; d < ns; d++)
        n *= s[d];
    return n;
}

static void gs_forward(const bw_case *c, double *const *in, double *y)
{
    const gs_info *p = c->ctx;
    amp_ref_grid_sampler_f64(p->ns, p->N, p->C, p->in_size, p->out_size, p->mode, p->padding, p->align, in[0], in[1],
                             y);
}

static void gs_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                        void *const *grads)
{
    const gs_info *p = c->ctx;
    double *work = malloc((size_t)(p->N * p->C * gs_prod(p->ns, p->in_size)) * sizeof *work);
    assert_non_null(work);
    KCALL(k, t, grid_sampler_backward, p->ns, p->N, p->C, p->in_size, p->out_size, p->mode, p->padding, p->align,
          in[0], in[1], dy, work, grads[0], grads[1]);
    free(work);
}

static void test_grid_sampler_backward(void **state)
{
    (void)state;
    static const char *const pads[] = {"zeros", "border", "reflection"};
    char what[96];
    for (int ns = 2; ns <= 3; ns++)
        for (int mode = 0; mode < 2; mode++)
            for (int padding = 0; padding < 3; padding++)
                for (int align = 0; align < 2; align++) {
                    gs_info p = {ns, mode, padding, align, 2, 3, {4, 5, 3}, {3, 2, 2}};
                    bw_case c;
                    memset(&c, 0, sizeof c);
                    snprintf(what, sizeof what, "grid_sampler %dd %s %s align_corners %d", ns,
                             mode ? "nearest" : "linear", pads[padding], align);
                    c.what = what;
                    c.nprimary = c.nin = 2; /* x, grid */
                    c.size[0] = (size_t)(p.N * p.C * gs_prod(ns, p.in_size));
                    c.size[1] = (size_t)(p.N * gs_prod(ns, p.out_size) * ns);
                    c.lo[0] = -1, c.hi[0] = 1;
                    /* past [-1, 1]: padding's clipping and mirroring (twice as far for reflection) */
                    c.lo[1] = padding == 2 ? -2.6 : -1.3, c.hi[1] = -c.lo[1];
                    c.ngrad = 2;
                    c.grad_of[0] = 0, c.grad_of[1] = 1;
                    c.nout = (size_t)(p.N * p.C * gs_prod(ns, p.out_size));
                    c.cond = 16.0 * (double)(p.C * 8) + 64;
                    /* random coordinates sit away from the integer positions where the
                     * weights kink, at a distance far above h */
                    c.fd_h = 1e-7;
                    c.fd_tol = 1e-6;
                    c.ctx = &p;
                    c.forward = gs_forward;
                    c.backward = gs_backward;
                    bw_check(&c);
                }
}

/* ---- ctc_loss -------------------------------------------------------------- */

/* T 6, N 3, C 4 (blank 0), S 3: full, shorter and empty targets, a
 * repeated label, an input shorter than T. */
enum { CT_T = 6, CT_N = 3, CT_C = 4, CT_S = 3 };
static const int64_t ct_targets[CT_N * CT_S] = {1, 2, 3, 2, 2, 0, 3, 1, 1};
static const int64_t ct_in_len[CT_N] = {6, 5, 6};
static const int64_t ct_tgt_len[CT_N] = {3, 2, 0};

typedef struct {
    int reduction, zero_infinity;
    const int64_t *in_len, *tgt_len;
} ctc_info;

static void ctc_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                         void *const *grads)
{
    const ctc_info *p = c->ctx;
    double work[AMP_CTC_LOSS_BACKWARD_WORK_ELEMS(CT_T, CT_S, CT_C)];
    KCALL(k, t, ctc_loss_backward, CT_T, CT_N, CT_C, CT_S, in[0], ct_targets, p->in_len, p->tgt_len, 0, p->reduction,
          p->zero_infinity, dy, work, grads[0]);
}

/* The loss of log_softmax(x) over the classes, in f64 (x [T, N, C]). */
static double ctc_of_logits(const ctc_info *p, const double *x, const double *dy, double *lp)
{
    for (int64_t r = 0; r < CT_T * CT_N; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < CT_C; c++)
            m = fmax(m, x[r * CT_C + c]);
        for (int c = 0; c < CT_C; c++)
            s += exp(x[r * CT_C + c] - m);
        for (int c = 0; c < CT_C; c++)
            lp[r * CT_C + c] = x[r * CT_C + c] - m - log(s);
    }
    double y[CT_N], work[2 * (2 * CT_S + 1)], l = 0;
    assert_int_equal(amp_ref_ctc_loss_f64(CT_T, CT_N, CT_C, CT_S, lp, ct_targets, p->in_len, p->tgt_len, 0,
                                          p->reduction, p->zero_infinity, work, y),
                     AMP_OK);
    for (int n = 0; n < (p->reduction == AMP_REDUCTION_NONE ? CT_N : 1); n++)
        l += dy[n] * y[n];
    return l;
}

/* Every dtype against the f64 kernel (the engine, finite differences off:
 * the formula is a gradient only through log_softmax, checked below). */
static void check_ctc(const char *what, const ctc_info *p)
{
    bw_case c;
    memset(&c, 0, sizeof c);
    c.what = what;
    c.nprimary = c.nin = 1;
    c.size[0] = CT_T * CT_N * CT_C;
    c.lo[0] = -3, c.hi[0] = -0.5; /* log-probabilities */
    c.ngrad = 1;
    c.nout = p->reduction == AMP_REDUCTION_NONE ? CT_N : 1;
    c.cond = 64.0 * CT_T * (2 * CT_S + 1) + 64;
    c.ctx = p;
    c.backward = ctc_backward;
    bw_check(&c);
}

/* f64: the kernel's gradient composed with log_softmax's backward against
 * central finite differences of ctc_loss(log_softmax(x)). */
static void check_ctc_fd(const char *what, const ctc_info *p)
{
    enum { NX = CT_T * CT_N * CT_C };
    tensor xt = tensor_random(AMP_F64, NX, -2, 2), dyt = tensor_random(AMP_F64, CT_N, -1, 1);
    double *x = xt.data, *dy = dyt.data, lp[NX], g[NX], work[AMP_CTC_LOSS_BACKWARD_WORK_ELEMS(CT_T, CT_S, CT_C)];
    ctc_of_logits(p, x, dy, lp);
    amp_ctc_loss_backward_f64(CT_T, CT_N, CT_C, CT_S, lp, ct_targets, p->in_len, p->tgt_len, 0, p->reduction,
                              p->zero_infinity, dy, work, g);
    for (int64_t r = 0; r < CT_T * CT_N; r++) {
        double sum = 0;
        for (int c = 0; c < CT_C; c++)
            sum += g[r * CT_C + c];
        for (int64_t i = 0; i < CT_C; i++) {
            int64_t e = r * CT_C + i;
            double dx = g[e] - exp(lp[e]) * sum, x0 = x[e], h = 1e-6, tmp[NX];
            x[e] = x0 + h;
            double lpl = ctc_of_logits(p, x, dy, tmp);
            x[e] = x0 - h;
            double lmi = ctc_of_logits(p, x, dy, tmp);
            x[e] = x0;
            double fd = (lpl - lmi) / (2 * h);
            if (!(fabs(fd - dx) <= 1e-6 * (1 + fabs(fd))))
                fail_msg("%s [%lld]: kernel through log_softmax %.17g, finite difference %.17g", what, (long long)e, dx,
                         fd);
        }
    }
    tensor_free(&xt);
    tensor_free(&dyt);
}

static void test_ctc_loss_backward(void **state)
{
    (void)state;
    static const char *const names[] = {"none", "mean", "sum"};
    char what[64];
    for (int r = 0; r < 3; r++) {
        ctc_info p = {r, 0, ct_in_len, ct_tgt_len};
        snprintf(what, sizeof what, "ctc_loss reduction %s", names[r]);
        check_ctc(what, &p);
        check_ctc_fd(what, &p);
    }
}

/* An impossible alignment (input length 1, target length 3): with
 * zero_infinity its sample's gradient is 0 (the others unchanged), without
 * it NaN, as PyTorch; frames past an input's length get 0. */
static void test_ctc_loss_backward_infinite(void **state)
{
    (void)state;
    static const int64_t in_len[CT_N] = {1, 5, 6};
    enum { NX = CT_T * CT_N * CT_C };
    tensor xt = tensor_random(AMP_F64, NX, -3, -0.5);
    const double dy[CT_N] = {1, 1, 1};
    double g[NX], work[AMP_CTC_LOSS_BACKWARD_WORK_ELEMS(CT_T, CT_S, CT_C)];
    for (int zi = 0; zi < 2; zi++) {
        amp_ctc_loss_backward_f64(CT_T, CT_N, CT_C, CT_S, xt.data, ct_targets, in_len, ct_tgt_len, 0,
                                  AMP_REDUCTION_NONE, zi, dy, work, g);
        for (int64_t f = 0; f < CT_T; f++)
            for (int n = 0; n < CT_N; n++)
                for (int c = 0; c < CT_C; c++) {
                    double v = g[(f * CT_N + n) * CT_C + c];
                    if (f >= in_len[n] || (n == 0 && zi))
                        assert_true(v == 0);
                    else if (n == 0)
                        assert_true(isnan(v));
                    else
                        assert_true(isfinite(v));
                }
    }
    tensor_free(&xt);
}

/* PyTorch's gru_cell as its documentation writes it, b_hh's n part inside
 * r (...), differentiated by hand for B = I = H = 1 and dy = 1: the f64
 * kernel's gradients against these closed forms. */
static void test_gru_cell_closed_form(void **state)
{
    (void)state;
    const double x = 0.7, h = -0.4, wi[3] = {0.3, -0.8, 0.5}, wh[3] = {-0.6, 0.2, 0.9};
    const double bi[3] = {0.1, -0.2, 0.3}, bh[3] = {0.25, 0.15, -0.35}, dy = 1;
    double r = 1 / (1 + exp(-(wi[0] * x + bi[0] + wh[0] * h + bh[0])));
    double z = 1 / (1 + exp(-(wi[1] * x + bi[1] + wh[1] * h + bh[1])));
    double hn = wh[2] * h + bh[2], n = tanh(wi[2] * x + bi[2] + r * hn);
    double dnp = dy * (1 - z) * (1 - n * n), dzp = dy * (h - n) * z * (1 - z), drp = dnp * hn * r * (1 - r);
    const double want_dx = drp * wi[0] + dzp * wi[1] + dnp * wi[2];
    const double want_dh = dy * z + drp * wh[0] + dzp * wh[1] + dnp * r * wh[2];
    const double want_dwi[3] = {drp * x, dzp * x, dnp * x}, want_dwh[3] = {drp * h, dzp * h, dnp * r * h};
    const double want_dbi[3] = {drp, dzp, dnp}, want_dbh[3] = {drp, dzp, dnp * r};
    double dx, dh, dwi[3], dwh[3], dbi[3], dbh[3], work[AMP_RNN_CELL_BACKWARD_WORK_ELEMS(1, 1)];
    amp_rnn_cell_backward_f64(AMP_RNN_GRU, 1, 1, 1, &x, &h, NULL, wi, wh, bi, bh, &dy, NULL, work, &dx, &dh, NULL, dwi,
                              dwh, dbi, dbh);
    bw_expect_torch("gru dx", &dx, &want_dx, 1, 1e-14);
    bw_expect_torch("gru dhx", &dh, &want_dh, 1, 1e-14);
    bw_expect_torch("gru dw_ih", dwi, want_dwi, 3, 1e-14);
    bw_expect_torch("gru dw_hh", dwh, want_dwh, 3, 1e-14);
    bw_expect_torch("gru db_ih", dbi, want_dbi, 3, 1e-14);
    bw_expect_torch("gru db_hh", dbh, want_dbh, 3, 1e-14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rnn_cell_backward),
        cmocka_unit_test(test_rnn_cell_backward_subsets),
        cmocka_unit_test(test_lstm_cell_state_gradient),
        cmocka_unit_test(test_gru_cell_closed_form),
        cmocka_unit_test(test_conv_tbc_backward),
        cmocka_unit_test(test_index_put_backward),
        cmocka_unit_test(test_index_put_mask_backward),
        cmocka_unit_test(test_grid_sampler_backward),
        cmocka_unit_test(test_ctc_loss_backward),
        cmocka_unit_test(test_ctc_loss_backward_infinite),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
