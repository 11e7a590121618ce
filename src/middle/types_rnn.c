/* types_rnn.c: the type rules of the recurrent cells, and the recurrent
 * layers unrolled into them.
 *
 * lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell, with PyTorch's
 * checks of the input and hidden state (check_rnn_cell_forward_input and
 * _hidden), and the number of gates that sizes their weights.
 *
 * lstm, gru, rnn_tanh and rnn_relu (torch.lstm and friends, what nn.LSTM,
 * nn.GRU and nn.RNN run) are the value of an assignment of two or three
 * names, which typecheck asks rnn_layer_assign to rewrite, as it does
 * topk: per layer and direction, one cell call per time step, in the
 * statements
 *
 *     lstm_x0_3 = squeeze(narrow(x, 0, 3, 1), 0)       # the input at t = 3
 *     lstm_h1r_4, lstm_c1r_4 = lstm_cell(lstm_x1_4, lstm_h1r_5, lstm_c1r_5, w_ih, w_hh, b_ih, b_hh)
 *     lstm_out1 = cat(stack(<forward h>, dim=0), stack(<reverse h>, dim=0), dim=2)
 *
 * and the results out (the last layer's), h_n and c_n (the last state of
 * every layer and direction, stacked), so the passes after typecheck see
 * ordinary cells, narrows and stacks, with their kernels and gradients.
 * The sequence length is therefore fixed at compile time; the batch may
 * be symbolic.  Each cell carries the layer op (Expr.layer), so autocast
 * decides it by the layer's policy row, as PyTorch's autocast decides
 * the layer kernel (_cudnn_rnn on CUDA, mkldnn_rnn_layer on CPU) as a whole.
 * Stacks and cats take at most six tensors each, the most a training step
 * differentiates, so long sequences are stacked in groups.
 */

#include "types.h"

#include <string.h>

/* The gates of a cell: 4 (lstm), 3 (gru), 1 (the plain rnn cells). */
int rnn_cell_gates(OpId id) { return id == OP_LSTM_CELL ? 4 : id == OP_GRU_CELL ? 3 : 1; }

/* lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell: PyTorch's checks
 * (check_rnn_cell_forward_input/hidden) and the gates' row count. */
bool infer_rnn_cell(Ctx *c, Expr *call)
{
    OpId id = call->op->id;
    bool lstm = id == OP_LSTM_CELL;
    int g = rnn_cell_gates(id);
    int nt = lstm ? 5 : 4;
    for (int i = 0; i < nt; i++)
        if (!require_tensor(c, call, i))
            return false;
    Expr *x = arg(call, 0), *h = arg(call, 1), *cx = lstm ? arg(call, 2) : NULL;
    Expr *wih = arg(call, nt - 2), *whh = arg(call, nt - 1), *bih, *bhh;
    if (!tensor_arg(c, call, "b_ih", &bih) || !tensor_arg(c, call, "b_hh", &bhh) || !require_float(c, call, x))
        return false;
    Expr *all[7] = {h, cx, wih, whh, bih, bhh, NULL};
    for (int i = 0; i < 6; i++)
        if (all[i] && !same_dtype(c, call, x, all[i]))
            return false;
    const Shape *xs = &x->type.shape, *hs = &h->type.shape, *wi = &wih->type.shape, *wh = &whh->type.shape;
    if (xs->ndim != 1 && xs->ndim != 2) {
        error_at(c, x->loc, "%s: Expected input to be 1D or 2D, got %dD instead", call->op->name, xs->ndim);
        return false;
    }
    if (wi->ndim != 2 || wh->ndim != 2) {
        Expr *bad = wi->ndim != 2 ? wih : whh;
        error_at(c, bad->loc, "%s(): expected a 2-D weight [%d*hidden_size, %s_size], got %s", call->op->name, g,
                 bad == wih ? "input" : "hidden", type_to_string(c, &bad->type));
        return false;
    }
    bool batched = xs->ndim == 2;
    Poly *in = xs->dims[xs->ndim - 1], *hidden = wh->dims[1];
    if (!dims_match(in, wi->dims[1])) {
        error_at(c, x->loc, "input has inconsistent input_size: got %s expected %s", dim_str(c, in),
                 dim_str(c, wi->dims[1]));
        return false;
    }
    Expr *hid[2] = {h, cx};
    for (int k = 0; k < (lstm ? 2 : 1); k++) {
        const Shape *s = &hid[k]->type.shape;
        if (s->ndim != xs->ndim) {
            error_at(c, hid[k]->loc, "%s: Expected hidden%s to be %dD, like the input, but got %dD", call->op->name,
                     k ? "[1]" : lstm ? "[0]" : "", xs->ndim, s->ndim);
            return false;
        }
        if (batched && !dims_match(s->dims[0], xs->dims[0])) {
            error_at(c, hid[k]->loc, "Input batch size %s doesn't match hidden%d batch size %s", dim_str(c, xs->dims[0]),
                     k, dim_str(c, s->dims[0]));
            return false;
        }
        if (!dims_match(s->dims[s->ndim - 1], hidden)) {
            error_at(c, hid[k]->loc, "hidden%d has inconsistent hidden_size: got %s, expected %s", k,
                     dim_str(c, s->dims[s->ndim - 1]), dim_str(c, hidden));
            return false;
        }
    }
    Poly *rows = poly_mul(c, hidden, poly_const(c, g));
    Expr *wts[4] = {wih, whh, bih, bhh};
    for (int k = 0; k < 4; k++) {
        Expr *w = wts[k];
        if (!w)
            continue;
        const Shape *s = &w->type.shape;
        if (!rows || (k < 2 ? !dims_match(s->dims[0], rows) : s->ndim != 1 || !dims_match(s->dims[0], rows))) {
            error_at(c, w->loc, "%s(): %s should have %d*hidden_size = %s %s, but it is %s", call->op->name,
                     k == 0 ? "w_ih" : k == 1 ? "w_hh" : k == 2 ? "b_ih" : "b_hh", g, rows ? dim_str(c, rows) : "?",
                     k < 2 ? "rows" : "elements", type_to_string(c, &w->type));
            return false;
        }
    }
    call->type.dtype = x->type.dtype;
    call->type.shape = *hs;
    if (lstm)
        more_results(c, call, 1, &call->type);
    return true;
}

/* ---- whole layers: lstm, gru, rnn_tanh, rnn_relu ------------------------ */

enum {
    GROUP = 6,           /* tensors per stack or cat: what one training step differentiates */
    /* the cells one layer call unrolls into: 10,000 compile in about 3 s
     * and 330 MB (a sequence of 10,000 steps keeps every step's output
     * live until the stack), 20,000 in 13 s */
    MAX_CELLS = 10000,
};

bool is_rnn_layer(OpId id) { return id == OP_LSTM || id == OP_GRU || id == OP_RNN_TANH || id == OP_RNN_RELU; }

static OpId layer_cell(OpId id)
{
    return id == OP_LSTM ? OP_LSTM_CELL : id == OP_GRU ? OP_GRU_CELL : id == OP_RNN_TANH ? OP_RNN_TANH_CELL
                                                                                          : OP_RNN_RELU_CELL;
}

bool infer_rnn_layer(Ctx *c, Expr *call)
{
    error_at(c, call->loc, "%s() gives %s: assign them to names, as %s = %s(...)", call->op->name,
             call->op->id == OP_LSTM ? "3 tensors (output, h_n, c_n)" : "2 tensors (output, h_n)",
             call->op->id == OP_LSTM ? "out, h_n, c_n" : "out, h_n", call->op->name);
    return false;
}

/* What one layer call is unrolled from, read and checked once. */
typedef struct Layer {
    Expr *call;
    Stmt *st;
    Vec *out;            /* the statements replacing st */
    const char *name;    /* lstm, gru, ...: the prefix of the fresh names */
    int gates, layers, dirs, tdim;
    int64_t steps;
    bool biases;
    Poly *hidden;
    Expr **params;       /* PyTorch's order: per layer, per direction, w_ih w_hh [b_ih b_hh] */
    int nparams;
} Layer;

/* A fresh local assigned `value`, returned as a name to use. */
static Expr *bind_local(Ctx *c, Layer *ly, const char *text, Expr *value)
{
    Expr *n = local_name(c, text, ly->call->loc, &value->type);
    vec_push(c, ly->out, assign_stmt(c, n, value, ly->st->loc));
    return n;
}

/* An operand used many times: a name already, or computed once into one. */
static Expr *once(Ctx *c, Layer *ly, Expr *e, const char *what)
{
    if (e->kind == E_NAME)
        return e;
    return bind_local(c, ly, arena_printf(c->arena, "%s_%s", ly->name, what), e);
}

/* A call of op with the tensors ts (and int arguments by name), typed. */
static Expr *tensors_call(Ctx *c, Layer *ly, OpId id, Expr **ts, int n, const char *iname, int64_t iv)
{
    const OpInfo *op = op_for_call(c, op_info(c, id), n);
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->kind = E_CALL;
    e->loc = ly->call->loc;
    e->name_loc = ly->call->name_loc;
    e->callee = op->name;
    e->op = op;
    e->autocast_on = ly->call->autocast_on;
    e->autocast_low = ly->call->autocast_low;
    e->list = vec_new(c);
    e->bound = arena_alloc(c->arena, (size_t)(op->nparams + 1) * sizeof *e->bound);
    for (int k = 0; k < n; k++) {
        e->bound[k] = !ts[k] ? NULL : ts[k]->kind == E_NAME ? ref_of(c, ts[k]) : ts[k];
        if (ts[k])
            vec_push(c, e->list, e->bound[k]);
        if (ts[k] && e->bound[k]->depth + 1 > e->depth)
            e->depth = e->bound[k]->depth + 1;
    }
    if (iname) {
        int k = op_param_index(op, iname);
        e->bound[k] = int_expr(c, iv, ly->call->name_loc);
        vec_push(c, e->list, e->bound[k]);
    }
    return infer_call(c, e) ? e : NULL;
}

/* stack(ts, dim) (or cat), GROUP tensors at a time: the groups stacked,
 * then concatenated, GROUP at a time, until one is left. */
static Expr *grouped(Ctx *c, Layer *ly, OpId id, Expr **ts, int n, int dim, const char *what)
{
    Expr **parts = arena_alloc(c->arena, (size_t)n * sizeof *parts);
    int np = 0;
    for (int k = 0; k < n; k += GROUP) {
        Expr *g = tensors_call(c, ly, id, ts + k, n - k < GROUP ? n - k : GROUP, "dim", dim);
        if (!g)
            return NULL;
        if (n > GROUP) /* one of several groups: computed once, then concatenated */
            g = bind_local(c, ly, arena_printf(c->arena, "%s_%s", ly->name, what), g);
        parts[np++] = g;
    }
    if (np == 1)
        return parts[0];
    return grouped(c, ly, OP_CAT, parts, np, dim, what);
}

/* The checks PyTorch makes of the layer's operands (check_attributes,
 * check_rnn_cell sizes): the flags, the input's and hidden states' shapes,
 * the parameter count; the parameters' own shapes are checked here by
 * layer, with the input size each layer expects. */
static bool read_layer(Ctx *c, Layer *ly)
{
    Expr *call = ly->call;
    OpId id = call->op->id;
    bool bidir = false, batch_first = false;
    int64_t layers = 1;
    double dropout = 0;
    if (!bool_param(c, call, "has_biases", true, &ly->biases) || !int_param(c, call, "num_layers", 1, &layers) ||
        !float_param(c, call, "dropout", 0, &dropout) || !bool_param(c, call, "bidirectional", false, &bidir) ||
        !bool_param(c, call, "batch_first", false, &batch_first))
        return false;
    if (layers < 1 || layers > 1024) {
        error_at(c, named(call, "num_layers")->loc, "num_layers must be between 1 and 1024, got %lld",
                 (long long)layers);
        return false;
    }
    if (dropout != 0) {
        error_at(c, named(call, "dropout")->loc, "%s(): dropout between layers is not supported (ampc unrolls the "
                 "layers for inference and training alike); stack single-layer %s calls with dropout() between "
                 "them", call->op->name, call->op->name);
        return false;
    }
    ly->layers = (int)layers;
    ly->dirs = bidir ? 2 : 1;
    ly->tdim = batch_first ? 1 : 0;
    ly->gates = rnn_cell_gates(layer_cell(id));
    Expr *x = arg(call, 0);
    if (!require_tensor(c, call, 0) || !require_float(c, call, x))
        return false;
    const Shape *xs = &x->type.shape;
    if (xs->ndim != 3) {
        error_at(c, x->loc, "%s(): input must have 3 dimensions, %s, got %s", call->op->name,
                 batch_first ? "[batch, seq_len, input_size] (batch_first)" : "[seq_len, batch, input_size]",
                 type_to_string(c, &x->type));
        return false;
    }
    if (!const_dim(xs->dims[ly->tdim], &ly->steps) || ly->steps < 1) {
        error_at(c, x->loc, "%s(): the sequence length (dim %d of the input, %s) must be a positive number known at "
                 "compile time: ampc unrolls the layer over it", call->op->name, ly->tdim,
                 dim_str(c, xs->dims[ly->tdim]));
        return false;
    }
    if (ly->steps > MAX_CELLS / (ly->layers * ly->dirs)) { /* divided: the product may overflow */
        error_at(c, call->loc, "%s() unrolls into a cell per step, layer and direction (%lld x %d x %d), more than "
                 "the %d ampc unrolls for one call", call->op->name, (long long)ly->steps, ly->layers, ly->dirs,
                 MAX_CELLS);
        return false;
    }
    Poly *batch = xs->dims[1 - ly->tdim];
    int nstates = id == OP_LSTM ? 2 : 1;
    for (int k = 0; k < nstates; k++) {
        Expr *h = arg(call, 1 + k);
        const Shape *hs = &h->type.shape;
        if (!require_tensor(c, call, 1 + k) || !same_dtype(c, call, x, h))
            return false;
        if (k == 0)
            ly->hidden = hs->ndim == 3 ? hs->dims[2] : NULL;
        int64_t n;
        if (hs->ndim != 3 || !const_dim(hs->dims[0], &n) || n != (int64_t)ly->layers * ly->dirs ||
            !dims_match(hs->dims[1], batch) || !dims_match(hs->dims[2], ly->hidden)) {
            error_at(c, h->loc, "%s(): Expected %s size [%d, %s, %s] (num_layers * num_directions, batch, "
                     "hidden_size), got %s", call->op->name, k ? "cell state" : "hidden", ly->layers * ly->dirs,
                     dim_str(c, batch), ly->hidden ? dim_str(c, ly->hidden) : "hidden_size", shape_str(c, hs));
            return false;
        }
    }
    return true;
}

/* The parameter tensors, counted and shaped by layer and direction. */
static bool read_params(Ctx *c, Layer *ly)
{
    Expr *call = ly->call;
    const OpInfo *op = call->op;
    int per = ly->biases ? 4 : 2, want = ly->layers * ly->dirs * per;
    ly->params = arena_alloc(c->arena, (size_t)op->nparams * sizeof *ly->params);
    ly->nparams = 0;
    for (int k = op->vararg_first; k < op->vararg_first + op->vararg_count; k++)
        if (arg(call, k))
            ly->params[ly->nparams++] = arg(call, k);
    if (ly->nparams != want) {
        error_at(c, call->loc, "%s() with num_layers=%d%s and has_biases=%s takes %d parameter tensors (w_ih, w_hh%s "
                 "per layer and direction, PyTorch's order), but %d were given", op->name, ly->layers,
                 ly->dirs == 2 ? ", bidirectional=true" : "", ly->biases ? "true" : "false", want,
                 ly->biases ? ", b_ih, b_hh" : "", ly->nparams);
        return false;
    }
    Expr *x = arg(call, 0);
    Poly *rows = poly_mul(c, ly->hidden, poly_const(c, ly->gates));
    static const char *const what[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int k = 0; k < want; k++) {
        Expr *w = ly->params[k];
        int l = k / (per * ly->dirs), d = k / per % ly->dirs, r = k % per;
        if (!is_tensor(w)) {
            error_at(c, w->loc, "the parameters of %s() are tensors", op->name);
            return false;
        }
        if (!same_dtype(c, call, x, w))
            return false;
        Poly *in = l == 0 ? x->type.shape.dims[2] : poly_mul(c, ly->hidden, poly_const(c, ly->dirs));
        const Shape *s = &w->type.shape;
        bool ok = r < 2 ? s->ndim == 2 && dims_match(s->dims[0], rows) && dims_match(s->dims[1], r ? ly->hidden : in)
                        : s->ndim == 1 && dims_match(s->dims[0], rows);
        if (!ok) {
            error_at(c, w->loc, "%s(): parameter %d, %s_l%d%s, should be [%s%s%s], but it is %s", op->name, k,
                     what[r], l, d ? "_reverse" : "", dim_str(c, rows), r < 2 ? ", " : "",
                     r < 2 ? dim_str(c, r ? ly->hidden : in) : "", type_to_string(c, &w->type));
            return false;
        }
    }
    return true;
}

/* One step: the cell on x and the state, with the layer's weights for
 * (layer l, direction d), assigned to fresh names; h (and c) advance. */
static bool step(Ctx *c, Layer *ly, int l, int d, int t, Expr *x, Expr **h, Expr **cs)
{
    bool lstm = ly->call->op->id == OP_LSTM;
    int per = ly->biases ? 4 : 2;
    Expr **w = ly->params + (l * ly->dirs + d) * per;
    Expr *ts[7];
    int n = 0;
    ts[n++] = x;
    ts[n++] = *h;
    if (lstm)
        ts[n++] = *cs;
    for (int k = 0; k < 4; k++)
        ts[n++] = k < per ? w[k] : NULL;
    Expr *cell = tensors_call(c, ly, layer_cell(ly->call->op->id), ts, n, NULL, 0);
    if (!cell)
        return false;
    cell->layer = ly->call->op;
    const char *dir = d ? "r" : "";
    Expr *hn = local_name(c, arena_printf(c->arena, "%s_h%d%s_%d", ly->name, l, dir, t), ly->call->loc, &cell->type);
    Stmt *st = assign_stmt(c, hn, cell, ly->st->loc);
    if (lstm) {
        Expr *cn = local_name(c, arena_printf(c->arena, "%s_c%d%s_%d", ly->name, l, dir, t), ly->call->loc,
                              &cell->more_types[0]);
        vec_push(c, st->targets, cn);
        cn->sym->value = cell;
        *cs = cn;
    }
    vec_push(c, ly->out, st);
    *h = hn;
    return true;
}

/* The initial state of (layer, direction) j: entry j of hx (or cx). */
static Expr *initial(Ctx *c, Layer *ly, Expr *states, int j, const char *what)
{
    static const char *const names[] = {"dim", "start", "length"};
    int64_t v[] = {0, j, 1};
    Expr *e = make_call(c, OP_NARROW, ly->call, ly->call->name_loc, ref_of(c, states), 3, names, v);
    e = e ? call1(c, OP_SQUEEZE, ly->call, ly->call->name_loc, e, "dim", 0) : NULL;
    return e ? bind_local(c, ly, arena_printf(c->arena, "%s_%s%d%s_init", ly->name, what, j / ly->dirs,
                                              j % ly->dirs ? "r" : ""), e) : NULL;
}

/* stmts[i] is `out, h_n[, c_n] = lstm(...)` (or gru, rnn_tanh, rnn_relu),
 * its operands typed: it becomes the unrolled layers (the file's header). */
bool rnn_layer_assign(Ctx *c, Vec *stmts, int i)
{
    Stmt *st = VEC_AT(stmts, i);
    Expr *call = st->value;
    Layer ly = {.call = call, .st = st, .out = vec_new(c), .name = call->op->name};
    bool lstm = call->op->id == OP_LSTM;
    if (!read_layer(c, &ly) || !read_params(c, &ly))
        return false;
    if (st->targets->len != (lstm ? 3 : 2)) {
        error_at(c, st->loc, "%s() gives %d tensors (output, h_n%s), but %d name%s assigned", call->op->name,
                 lstm ? 3 : 2, lstm ? ", c_n" : "", st->targets->len, st->targets->len == 1 ? " is" : "s are");
        return false;
    }
    int T = (int)ly.steps, D = ly.dirs, nfinal = ly.layers * D;
    Expr *seq = once(c, &ly, arg(call, 0), "input"), *hx = once(c, &ly, arg(call, 1), "hx");
    Expr *cx = lstm ? once(c, &ly, arg(call, 2), "cx") : NULL;
    for (int k = 0; k < ly.nparams; k++)
        ly.params[k] = once(c, &ly, ly.params[k], arena_printf(c->arena, "param%d", k));
    Expr **hn = arena_alloc(c->arena, (size_t)nfinal * sizeof *hn), **cn = arena_alloc(c->arena, (size_t)nfinal * sizeof *cn);
    Expr **xs = arena_alloc(c->arena, (size_t)T * sizeof *xs);
    Expr **ys = arena_alloc(c->arena, (size_t)(D * T) * sizeof *ys); /* [direction][t] */
    for (int t = 0; t < T; t++) {
        Expr *e = make_call(c, OP_NARROW, call, call->name_loc, ref_of(c, seq), 3,
                            (const char *const[]){"dim", "start", "length"}, (const int64_t[]){ly.tdim, t, 1});
        e = e ? call1(c, OP_SQUEEZE, call, call->name_loc, e, "dim", ly.tdim) : NULL;
        if (!e)
            return false;
        xs[t] = bind_local(c, &ly, arena_printf(c->arena, "%s_x0_%d", ly.name, t), e);
    }
    for (int l = 0; l < ly.layers; l++) {
        if (l > 0) /* the layer's input: the previous layer's h, both directions side by side */
            for (int t = 0; t < T; t++) {
                Expr *pair[2] = {ys[t], D == 2 ? ys[T + t] : NULL};
                xs[t] = D == 1 ? ys[t] : tensors_call(c, &ly, OP_CAT, pair, 2, "dim", 1);
                if (!xs[t])
                    return false;
                if (D == 2)
                    xs[t] = bind_local(c, &ly, arena_printf(c->arena, "%s_x%d_%d", ly.name, l, t), xs[t]);
            }
        Expr **ynext = arena_alloc(c->arena, (size_t)(D * T) * sizeof *ynext);
        for (int d = 0; d < D; d++) {
            int j = l * D + d;
            Expr *h = initial(c, &ly, hx, j, "h"), *cs = lstm ? initial(c, &ly, cx, j, "c") : NULL;
            if (!h || (lstm && !cs))
                return false;
            for (int s = 0; s < T; s++) {
                int t = d ? T - 1 - s : s;
                if (!step(c, &ly, l, d, t, xs[t], &h, &cs))
                    return false;
                ynext[d * T + t] = h;
            }
            hn[j] = h;
            cn[j] = cs;
        }
        ys = ynext;
    }
    Expr *out[2];
    for (int d = 0; d < D; d++)
        if (!(out[d] = grouped(c, &ly, OP_STACK, ys + d * T, T, ly.tdim, d ? "out_r" : "out")))
            return false;
    Expr *results[3] = {D == 2 ? tensors_call(c, &ly, OP_CAT, out, 2, "dim", 2) : out[0],
                        grouped(c, &ly, OP_STACK, hn, nfinal, 0, "h_n"),
                        lstm ? grouped(c, &ly, OP_STACK, cn, nfinal, 0, "c_n") : NULL};
    for (int r = 0; r < (lstm ? 3 : 2); r++) {
        if (!results[r])
            return false;
        vec_push(c, ly.out, assign_stmt(c, VEC_AT(st->targets, r), results[r], st->loc));
    }
    splice(c, stmts, i, ly.out);
    return true;
}
