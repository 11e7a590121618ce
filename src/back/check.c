/* check.c: --emit=check, a model measured against its own f64 evaluation.
 *
 * Requires: a planned graph (the model as the target compiles it).
 * Produces: one C program, in out->c_file, holding
 *   - the model, as emit_c writes it (prefix P);
 *   - the same model compiled again with every floating value in f64 and
 *     autocast's decisions overridden (prefix P_ref): the reference;
 *   - a main() that fills the inputs and parameters with reproducible
 *     pseudo-random values, runs both, and reports for every output its
 *     error against the reference and the tolerance the dtypes on its path
 *     allow, exiting 1 when an output is outside it.
 *
 * The tolerance: an output's normwise relative error
 *     ||y - y_ref||_2 / ||y_ref||_2
 * must stay within the sum, over every op on its path (its ancestors in
 * the graph), of the unit roundoff of the dtype that op rounds its result
 * to (2^-8 for bf16, 2^-11 for f16, 2^-24 for f32, 2^-53 for f64), plus
 * 128 unit roundoffs of the dtype it accumulates in (f32, or f64), or one
 * per term of a reduction over more than 128.  An op whose error compounds
 * multiplies its operands' share: a product of m factors (prod, cumprod
 * and their gradients) m times, x^p |p| times.  That is the first-order
 * worst case of independent roundings, each relative to its own result;
 * it tolerates a model's real rounding while a wrong kernel (an error of
 * order one) fails it by orders of magnitude.  A count known only at run
 * time (a symbolic dim) makes the tolerance a C expression of the dims.
 * docs/check.md explains the numbers.
 */
#include "back.h"
#include "emit.h"

#include <math.h>
#include <string.h>

static double unit_roundoff(DType t)
{
    switch (t) {
    case DT_BF16: return ldexp(1, -8);
    case DT_F16: return ldexp(1, -11);
    case DT_F32: return ldexp(1, -24);
    case DT_F64: return ldexp(1, -53);
    default: return 0;
    }
}

/* How many results node n rounds: one per op a fused node (fuse.c)
 * stands for, as the separate kernels do ("conv2d + batch_norm + relu"). */
static int roundings(const Node *n)
{
    int k = 1;
    for (const char *p = node_op_name(n); (p = strstr(p, " + ")) != NULL; p += 3)
        k++;
    return k;
}

/* A tolerance: k plus, when expr is not NULL, a C expression of the
 * model's dims (a count known only at run time). */
typedef struct {
    double k;
    const char *expr;
} Tolerance;

static Tolerance tol_add(Ctx *c, Tolerance a, Tolerance b)
{
    Tolerance r = {a.k + b.k, a.expr ? a.expr : b.expr};
    if (a.expr && b.expr)
        r.expr = arena_printf(c->arena, "%s + %s", a.expr, b.expr);
    return r;
}

/* a times the count m (NULL: 1) */
static Tolerance tol_times(Ctx *c, Tolerance a, const Poly *m)
{
    int64_t v;
    if (!m)
        return a;
    if (poly_is_const(m, &v)) {
        Tolerance r = {a.k * (double)v, a.expr ? arena_printf(c->arena, "%lld * (%s)", (long long)v, a.expr) : NULL};
        return r;
    }
    const char *mc = poly_to_c(c, m, c->sym_names);
    Tolerance r = {0, arena_printf(c->arena, "(double)(%s) * (%a%s%s)", mc, a.k, a.expr ? " + " : "",
                                   a.expr ? a.expr : "")};
    return r;
}

/* The number of elements a reduction or scan combines into one result
 * (NULL for the other ops): prod and cumprod multiply that many rounded
 * factors, each carrying its relative error into the result, and a sum
 * of that many terms accumulates that many roundings. */
static const Poly *combined_count(Ctx *c, const Node *f)
{
    if (!f->in[0])
        return NULL;
    const Shape *s = &f->in[0]->type.shape;
    int64_t d = attr_int(f, "axis", -1);
    switch (f->op->id) {
    case OP_SUM: case OP_MEAN: case OP_PROD: case OP_LOGSUMEXP: case OP_VAR: case OP_STD:
    case OP_CUMSUM: case OP_CUMPROD:
        if (attr_find(f, "axes")) { /* dim=(1, 2): the listed dims' sizes */
            Poly *m = poly_const(c, 1);
            for (int i = 0; i < s->ndim; i++)
                if (attr_reduces(f, i))
                    m = poly_mul(c, m, s->dims[i]);
            return m;
        }
        if (d < 0 || d >= s->ndim)
            return shape_numel(c, s);
        return s->dims[d];
    default:
        return NULL;
    }
}

/* How many times node n multiplies its operands' relative error: a
 * product of m factors m times (prod, cumprod, and their gradients, which
 * are products of the others), x^p |p| times (for |p| > 1); once for the
 * other ops, whose first-order errors add. */
static Tolerance amplified(Ctx *c, const Node *n, Tolerance up)
{
    const Node *f = n->op->id == OP_GRAD && n->fwd ? n->fwd : n;
    OpId id = f->op->id;
    if (id == OP_PROD || id == OP_CUMPROD)
        return tol_times(c, up, combined_count(c, f));
    if (id == OP_POW && !f->in[1] && n == f) {
        double p = fabs(attr_number(f, "exponent", "1", DT_F64));
        if (p > 1) {
            up.k *= p;
            if (up.expr)
                up.expr = arena_printf(c->arena, "%a * (%s)", p, up.expr);
        }
    }
    return up;
}

/* Sum of unit roundoffs over the ancestors of v (each node once), each
 * ancestor's share multiplied where an op compounds it (amplified). */
static Tolerance path_roundoff(Ctx *c, Value *v, bool *seen)
{
    Tolerance none = {0, NULL};
    Node *n = v->def;
    if (!n || seen[n->id])
        return none;
    seen[n->id] = true;
    /* the rounding to the result's dtype, and the accumulation in the
     * compute dtype (f32, or f64): 128 roundings, or one per term of a
     * longer reduction */
    DType t = n->out->type.dtype;
    int r = roundings(n);
    double u_acc = dtype_is_float(t) ? r * unit_roundoff(t == DT_F64 ? DT_F64 : DT_F32) : 0;
    Tolerance own = {r * unit_roundoff(t), NULL};
    const Poly *m = n->op->id == OP_GRAD ? NULL : combined_count(c, n);
    int64_t mv = 0;
    if (m && !poly_is_const(m, &mv)) {
        const char *mc = poly_to_c(c, m, c->sym_names);
        own.expr = arena_printf(c->arena, "((%s) > 128 ? (double)(%s) : 128.0) * %a", mc, mc, u_acc);
    } else {
        own.k += (mv > 128 ? (double)mv : 128) * u_acc;
    }
    Tolerance up = none;
    for (int k = 0; k < node_nreads(n); k++)
        if (node_read(n, k))
            up = tol_add(c, up, path_roundoff(c, node_read(n, k), seen));
    return tol_add(c, own, amplified(c, n, up));
}

/* A tolerance as C: a number, or an expression of the dims. */
static const char *tol_c(Ctx *c, Tolerance t, double scale)
{
    if (!t.expr)
        return arena_printf(c->arena, "%a", scale * t.k);
    return arena_printf(c->arena, "%a * (%a + %s)", scale, t.k, t.expr);
}

/* The range [0, bound) of an integer input's values, as C: the size of
 * what it indexes, found at its first use (0 means "all zeros"). */
static const char *index_bound(Ctx *c, Value *v)
{
    Graph *g = c->graph;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != v)
                continue;
            const Shape *s0 = n->in[0] ? &n->in[0]->type.shape : NULL;
            switch (n->op->id) {
            case OP_NLL_LOSS: case OP_NLL_LOSS2D: case OP_CROSS_ENTROPY:
                if (k == 1 && s0->ndim)
                    return poly_to_c(c, s0->dims[s0->ndim == 1 ? 0 : 1], c->sym_names);
                break;
            case OP_EMBEDDING:
                if (k == 0)
                    return poly_to_c(c, n->in[1]->type.shape.dims[0], c->sym_names);
                break;
            case OP_INDEX_SELECT: case OP_GATHER: case OP_SCATTER_ADD: case OP_INDEX_COPY:
                if (k == 2 && s0->ndim)
                    return poly_to_c(c, s0->dims[attr_int(n, "axis", 0)], c->sym_names);
                break;
            default:
                break;
            }
        }
    }
    return "0";
}

/* The source file without its #include of the model's own header, which
 * the program holds inline. */
static void append_without_own_include(Buf *o, const Buf *src)
{
    const char *s = src->data;
    while (*s) {
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s + 1) : strlen(s);
        if (!(len > 10 && strncmp(s, "#include \"", 10) == 0))
            buf_printf(o, "%.*s", (int)len, s);
        s += len;
    }
}

/* Fill a parameter: weights of fan-in k get variance 1/k (activations of a
 * deep model stay of order one), 1-D weights sit around 1 (a norm's
 * scale), biases and running means around 0, buffers (running variances)
 * in [0.5, 1.5] so they stay positive. */
static void fill_param(Ctx *c, Buf *o, Value *v, const char *ptr)
{
    const Shape *s = &v->type.shape;
    const char *n = poly_to_c(c, shape_numel(c, s), c->sym_names);
    if (!dtype_is_float(v->type.dtype)) {
        buf_printf(o, "    check_fill_index(%s, (size_t)(%s), %s, 0);\n", ptr, n, dtype_amp_enum(v->type.dtype));
        return;
    }
    const char *lo = "-0.5", *hi = "0.5";
    size_t len = strlen(v->name);
    bool weight = len >= 6 && strcmp(v->name + len - 6, "weight") == 0;
    if (v->kind == V_BUFFER) {
        lo = "0.5", hi = "1.5";
        if (len >= 12 && strcmp(v->name + len - 12, "running_mean") == 0)
            lo = "-0.5", hi = "0.5";
    } else if (s->ndim >= 2) {
        Shape rest = {0};
        for (int i = 1; i < s->ndim; i++)
            rest.dims[rest.ndim++] = s->dims[i];
        const char *fan_in = poly_to_c(c, shape_numel(c, &rest), c->sym_names);
        lo = arena_printf(c->arena, "-sqrt(3.0 / (double)(%s))", fan_in);
        hi = arena_printf(c->arena, "sqrt(3.0 / (double)(%s))", fan_in);
    } else if (weight) {
        lo = "0.5", hi = "1.5";
    }
    buf_printf(o, "    check_fill(%s, (size_t)(%s), %s, %s, %s);\n", ptr, n, dtype_amp_enum(v->type.dtype), lo, hi);
}

/* Whether the training step runs an op in training mode, whose result the
 * inference forward does not compute (dropout's mask, batch_norm's batch
 * statistics): the finite differences then evaluate the loss with the
 * training step itself.  *random: some op draws from the generator. */
static bool train_mode_ops(Graph *g, bool *random)
{
    bool any = false;
    *random = false;
    for (int i = 0; g && i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (dropout_draws(n))
            *random = any = true;
        else if (n->op->id == OP_BATCH_NORM && attr_bool(n, "training", false))
            any = true;
    }
    return any;
}

/* A training model: its gradients against the reference's, and the
 * reference's against central finite differences of its own f64 loss.
 *
 * Gradients come from <prefix>_backward with the loss scale set to 1, so
 * they are d(loss)/d(parameter) in the parameter's dtype.  The finite
 * differences are directional: for a few random sign vectors v per
 * parameter, (L(p + h v) - L(p - h v)) / 2h against <grad, v>, with h =
 * 2^-18, exact in f32 for |p| < 64, and small enough that few ReLU inputs
 * or pooling windows change side (the kinks the issue says to skip).
 *
 * With training-mode ops (train_mode_ops) the loss is the training step's:
 * the finite differences run <ref>_backward on a third state, every
 * evaluation with the same generator seed and counter (so the same dropout
 * masks as the gradients saw) and the buffers reset to their start (a
 * batch_norm's running statistics, which the step updates). */
static void emit_gradient_check(Ctx *c, Graph *model, Graph *ref, Graph *ref_train, const char *p, const char *rp,
                                Buf *o)
{
    Graph *train = c->train_graph;
    const char *P = arena_printf(c->arena, "%s", p), *RP = rp;
    char *up = arena_strdup(c->arena, p), *urp = arena_strdup(c->arena, rp);
    for (char *q = up; *q; q++)
        *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
    for (char *q = urp; *q; q++)
        *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
    (void)P, (void)RP, (void)model;
    Value *loss = NULL;
    for (int i = 0; i < ref->outputs->len; i++)
        if (VEC_AT(ref->outputs, i) == ref->loss)
            loss = VEC_AT(ref->outputs, i);
    buf_puts(o, "\n    /* ---- gradients ---- */\n    {\n");
    buf_printf(o, "        %s_train_state ms;\n        %s_train_state rs;\n", p, rp);
    buf_printf(o, "        void *ms_storage = check_alloc(%s_STATE_BYTES, AMP_BOOL), *rs_storage = check_alloc(%s_STATE_BYTES, AMP_BOOL);\n",
               up, urp);
    buf_printf(o, "        size_t tb = %s_train_arena_bytes(&dims), rtb = %s_train_arena_bytes((const %s_dims *)&dims);\n", p,
               rp, rp);
    buf_puts(o, "        void *ta = check_alloc(tb, AMP_BOOL), *rta = check_alloc(rtb, AMP_BOOL);\n");
    buf_printf(o, "        if (%s_train_init(&ms, ms_storage, %s_STATE_BYTES, &params) != AMP_OK ||\n"
                  "            %s_train_init(&rs, rs_storage, %s_STATE_BYTES, &ref_params) != AMP_OK) {\n"
                  "            fputs(\"check: train_init failed\\n\", stderr);\n            return 2;\n        }\n",
               p, up, rp, urp);
    /* the model starts at its loss scale (f16 gradients need one, as in
     * training) and backs off as GradScaler would while the scaled
     * gradients overflow; they are unscaled in the same loop.  The
     * reference needs no scale. */
    buf_puts(o, "        rs.scale = 1.0f;\n");
    bool random, train_mode = train_mode_ops(train, &random);
    /* one seed and counter for every evaluation: the same masks everywhere
     * (the model's and the reference's are a function of them alone) */
    const char *rng_reset = "";
    if (random) {
        buf_puts(o, "        ms.rng_seed = rs.rng_seed = 0x5eed;\n");
        rng_reset = "ms.rng_offset = 7; /* the counter does not advance inside the check */\n            ";
    }
    buf_puts(o, "        for (int attempt = 0;; attempt++) {\n");
    buf_printf(o, "            %src = %s_backward(&ms, &inputs, &outputs, &dims, ta, tb);\n", rng_reset, p);
    buf_printf(o, "            if (rc != AMP_OK) {\n                fprintf(stderr, \"check: %s_backward: %%s\\n\", %s_strerror(rc));\n"
                  "                return 2;\n            }\n", p, p);
    buf_puts(o, "            int32_t found_inf = 0;\n");
    for (int i = 0; i < train->params->len; i++) {
        Value *v = VEC_AT(train->params, i);
        if (v->grad)
            buf_printf(o, "            amp_unscale_%s((size_t)(%s), ms.grad.%s, 1.0 / (double)ms.scale, &found_inf);\n",
                       dtype_name(v->type.dtype), poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names), v->cname);
    }
    buf_puts(o, "            if (!found_inf || attempt == 60)\n                break;\n");
    for (int i = 0; i < train->params->len; i++) {
        Value *v = VEC_AT(train->params, i);
        if (v->grad)
            buf_printf(o, "            memset(ms.grad.%s, 0, (size_t)(%s) * sizeof *ms.grad.%s);\n", v->cname,
                       poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names), v->cname);
    }
    buf_puts(o, "            ms.scale *= 0.5f; /* the step would be skipped and the scale backed off */\n        }\n");
    if (random)
        buf_puts(o, "        rs.rng_offset = 7;\n");
    buf_printf(o, "        rc = %s_backward(&rs, &ref_inputs, &ref_outputs, (const %s_dims *)&dims, rta, rtb);\n", rp, rp);
    buf_printf(o, "        if (rc != AMP_OK) {\n            fprintf(stderr, \"check: %s_backward: %%s\\n\", %s_strerror(rc));\n"
                  "            return 2;\n        }\n", rp, rp);
    bool *seen = arena_alloc(c->arena, (size_t)(train->nodes->len + train->values->len + 1));
    for (int i = 0; i < train->params->len; i++) {
        Value *v = VEC_AT(train->params, i);
        if (!v->grad)
            continue;
        memset(seen, 0, (size_t)(train->nodes->len + train->values->len + 1));
        /* four times the first-order bound: a ReLU mask or a max-pool
         * choice made on rounded values can flip against the reference's,
         * an error of order one in that element that rounding bounds do
         * not see (docs/check.md) */
        const char *tol = tol_c(c, path_roundoff(c, v->grad, seen), 4);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "        failed |= check_output(\"d %s\", ms.grad.%s, %s, rs.grad.%s, %s, (size_t)(%s), %s);\n",
                   v->name, v->cname, dtype_amp_enum(v->type.dtype), v->cname, dtype_amp_enum(v->type.dtype), n, tol);
    }
    /* finite differences of the reference */
    buf_puts(o, "        /* directional finite differences of the f64 loss */\n");
    buf_puts(o, "        const double h = 0x1p-18;\n");
    if (train_mode) {
        buf_printf(o, "        %s_train_state fs;\n        void *fs_storage = check_alloc(%s_STATE_BYTES, AMP_BOOL);\n", rp, urp);
        buf_printf(o, "        if (%s_train_init(&fs, fs_storage, %s_STATE_BYTES, &ref_params) != AMP_OK)\n            return 2;\n",
                   rp, urp);
    }
    for (int i = 0; i < ref_train->params->len; i++) {
        Value *v = VEC_AT(ref_train->params, i);
        if (!v->grad || (v->type.dtype != DT_F32 && v->type.dtype != DT_F64))
            continue;
        const char *ct = dtype_c_type(v->type.dtype);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "        {\n            %s *w = %s%s;\n            size_t n = (size_t)(%s);\n", ct,
                   train_mode ? "fs." : "p_", v->cname, n);
        buf_printf(o, "            %s *saved = check_alloc(n, %s);\n            signed char *sign = check_alloc(n, AMP_BOOL);\n"
                      "            memcpy(saved, w, n * sizeof *w);\n", ct, dtype_amp_enum(v->type.dtype));
        buf_puts(o, "            for (int dir = 0; dir < 3; dir++) {\n"
                    "                double directional = 0, loss_plus, loss_minus;\n"
                    "                for (size_t i = 0; i < n; i++) {\n"
                    "                    sign[i] = check_uniform() < 0.5 ? -1 : 1;\n");
        buf_printf(o, "                    directional += sign[i] * (double)rs.grad.%s[i];\n", v->cname);
        buf_puts(o, "                }\n");
        for (int pass = 0; pass < 2; pass++) {
            buf_printf(o, "                for (size_t i = 0; i < n; i++)\n                    w[i] = saved[i] %s (%s)(h * sign[i]);\n",
                       pass ? "-" : "+", ct);
            if (train_mode) {
                /* the training step's loss: buffers back to their start,
                 * the masks the gradients were taken with */
                for (int j = 0; j < ref_train->params->len; j++) {
                    Value *b = VEC_AT(ref_train->params, j);
                    if (b->kind == V_BUFFER)
                        buf_printf(o, "                memcpy(fs.%s, p_%s, (size_t)(%s) * sizeof *fs.%s);\n", b->cname,
                                   b->cname, poly_to_c(c, shape_numel(c, &b->type.shape), c->sym_names), b->cname);
                }
                if (random)
                    buf_puts(o, "                fs.rng_seed = 0x5eed;\n                fs.rng_offset = 7;\n");
                buf_printf(o, "                rc = %s_backward(&fs, &ref_inputs, &ref_outputs, (const %s_dims *)&dims, rta, rtb);\n",
                           rp, rp);
            } else {
                buf_printf(o, "                rc = %s_forward(&ref_params, &ref_inputs, &ref_outputs, (const %s_dims *)&dims, ref_arena, ref_arena_bytes);\n",
                           rp, rp);
            }
            buf_printf(o, "                if (rc != AMP_OK)\n                    return 2;\n"
                          "                loss_%s = ref_outputs.%s[0];\n", pass ? "minus" : "plus", loss->cname);
        }
        buf_puts(o, "                memcpy(w, saved, n * sizeof *w);\n"
                    "                double fd = (loss_plus - loss_minus) / (2 * h);\n"
                    "                double err = fabs(fd - directional), allowed = 1e-3 * (fabs(fd) + fabs(directional)) + 1e-6;\n");
        buf_printf(o, "                int bad = !(err <= allowed);\n"
                      "                printf(\"%%-16s dir %%d  finite difference %%13.6e  backward %%13.6e  %%s\\n\", \"d %s\", dir, fd,\n"
                      "                       directional, bad ? \"FAIL\" : \"ok\");\n"
                      "                failed |= bad;\n            }\n        }\n",
                   v->name);
    }
    buf_puts(o, "    }\n");
}

/* The harness's own functions: reproducible random fills, the buffers'
 * bookkeeping, the --dump writer and the comparison of one output. */
static void emit_harness_helpers(Graph *model, Buf *o)
{
    buf_puts(o, "\n/* ---- the check harness -------------------------------------------------- */\n\n");
    buf_puts(o, "#include <stdio.h>\n#include <stdlib.h>\n\n");
    buf_puts(o, "/* xorshift64*: the same values on every machine and run */\n"
                "static uint64_t check_state = 0x9e3779b97f4a7c15u;\n\n"
                "static double check_uniform(void)\n{\n"
                "    check_state ^= check_state >> 12;\n    check_state ^= check_state << 25;\n"
                "    check_state ^= check_state >> 27;\n"
                "    return (double)((check_state * 0x2545f4914f6cdd1du) >> 11) * 0x1p-53;\n}\n\n");
    buf_puts(o, "/* every buffer, freed together at the end (leak checkers stay quiet) */\n"
                "static void *check_allocs[4096];\nstatic int check_nallocs;\n\n"
                "static void *check_alloc(size_t n, amp_dtype t)\n{\n"
                "    void *p = malloc(n ? n * amp_dtype_size(t) : 1);\n"
                "    if (!p || check_nallocs == 4096) {\n        fputs(\"check: out of memory\\n\", stderr);\n        exit(2);\n    }\n"
                "    check_allocs[check_nallocs++] = p;\n"
                "    /* every byte 0xff (a NaN in each float dtype): whatever reads\n"
                "     * memory nothing wrote shows, not stale or zero bytes */\n"
                "    memset(p, 0xff, n ? n * amp_dtype_size(t) : 1);\n"
                "    return p;\n}\n\n"
                "static void check_free_all(void)\n{\n"
                "    while (check_nallocs > 0)\n        free(check_allocs[--check_nallocs]);\n}\n\n");
    buf_puts(o, "static void check_fill(void *p, size_t n, amp_dtype t, double lo, double hi)\n{\n"
                "    for (size_t i = 0; i < n; i++) {\n"
                "        double v = lo + (hi - lo) * check_uniform();\n"
                "        if (t == AMP_F64)\n            ((double *)p)[i] = v;\n"
                "        else\n            amp_store_from_f32(t, p, i, (float)v);\n    }\n}\n\n");
    bool has_ints = false;
    for (int i = 0; i < model->inputs->len; i++)
        has_ints |= !dtype_is_float(((Value *)VEC_AT(model->inputs, i))->type.dtype);
    for (int i = 0; i < model->params->len; i++)
        has_ints |= !dtype_is_float(((Value *)VEC_AT(model->params, i))->type.dtype);
    if (has_ints)
        buf_puts(o, "/* integers in [0, bound), bools 0 or 1 */\n"
                "static void check_fill_index(void *p, size_t n, amp_dtype t, int64_t bound)\n{\n"
                "    for (size_t i = 0; i < n; i++) {\n"
                "        int64_t v = t == AMP_BOOL ? (check_uniform() < 0.5) : bound > 0 ? (int64_t)(check_uniform() * (double)bound) : 0;\n"
                "        if (t == AMP_I64)\n            ((int64_t *)p)[i] = v;\n"
                "        else if (t == AMP_I32)\n            ((int32_t *)p)[i] = (int32_t)v;\n"
                "        else\n            ((uint8_t *)p)[i] = (uint8_t)v;\n    }\n}\n\n");
    buf_puts(o, "/* --dump FILE: every input, parameter and output, the model's and the\n"
                " * reference's, in one safetensors file (keys input.NAME, param.NAME,\n"
                " * output.NAME, reference.NAME), for comparisons outside this program. */\n"
                "typedef struct { const char *key; const void *data; amp_dtype t; int ndim; int64_t shape[8]; } check_tensor;\n\n"
                "static const char *check_st_dtype(amp_dtype t)\n{\n"
                "    static const char *const names[] = {\"F64\", \"F32\", \"BF16\", \"F16\", \"I64\", \"I32\", \"BOOL\"};\n"
                "    return names[t];\n}\n\n"
                "static int check_dump(const char *path, const check_tensor *ts, int n)\n{\n"
                "    FILE *f = fopen(path, \"wb\");\n    if (!f)\n        return -1;\n"
                "    /* the header, twice: once to measure it, once to write it */\n"
                "    long header = 0;\n"
                "    for (int pass = 0; pass < 2; pass++) {\n"
                "        FILE *out = pass ? f : NULL;\n        unsigned long long off = 0;\n        long len = 0;\n"
                "        if (pass) {\n            unsigned long long h = (unsigned long long)header;\n"
                "            for (int b = 0; b < 8; b++)\n                fputc((int)((h >> (8 * b)) & 0xff), f);\n        }\n"
                "        char buf[512];\n"
                "        for (int i = 0; i <= n; i++) {\n"
                "            int k;\n"
                "            if (i == n) {\n                k = snprintf(buf, sizeof buf, \"}\");\n            } else {\n"
                "                size_t bytes = amp_dtype_size(ts[i].t);\n"
                "                for (int d = 0; d < ts[i].ndim; d++)\n                    bytes *= (size_t)ts[i].shape[d];\n"
                "                k = snprintf(buf, sizeof buf, \"%s\\\"%s\\\":{\\\"dtype\\\":\\\"%s\\\",\\\"shape\\\":[\", i ? \",\" : \"{\", ts[i].key,\n"
                "                             check_st_dtype(ts[i].t));\n"
                "                for (int d = 0; d < ts[i].ndim; d++)\n"
                "                    k += snprintf(buf + k, sizeof buf - (size_t)k, \"%s%lld\", d ? \",\" : \"\", (long long)ts[i].shape[d]);\n"
                "                k += snprintf(buf + k, sizeof buf - (size_t)k, \"],\\\"data_offsets\\\":[%llu,%llu]}\", off, off + (unsigned long long)bytes);\n"
                "                off += bytes;\n            }\n"
                "            len += k;\n            if (out)\n                fputs(buf, out);\n        }\n"
                "        header = len;\n    }\n"
                "    for (int i = 0; i < n; i++) {\n"
                "        size_t count = 1;\n        for (int d = 0; d < ts[i].ndim; d++)\n            count *= (size_t)ts[i].shape[d];\n"
                "        if (fwrite(ts[i].data, amp_dtype_size(ts[i].t), count, f) != count) {\n            fclose(f);\n            return -1;\n        }\n    }\n"
                "    return fclose(f);\n}\n\n");
    buf_puts(o, "static double check_value(const void *p, amp_dtype t, size_t i)\n{\n"
                "    return t == AMP_F64 ? ((const double *)p)[i] : (double)amp_load_as_f32(t, p, i);\n}\n\n");
    buf_puts(o, "/* Compares one output; returns 1 when it is outside its tolerance. */\n"
                "static int check_output(const char *name, const void *y, amp_dtype t, const void *ref_data, amp_dtype rt,\n"
                "                        size_t n, double tol)\n{\n"
                "    double err2 = 0, ref2 = 0, max_abs = 0;\n    size_t nonfinite = 0;\n"
                "    for (size_t i = 0; i < n; i++) {\n"
                "        double v = check_value(y, t, i), r = check_value(ref_data, rt, i);\n"
                "        if (isnan(v) != isnan(r) || (isinf(v) && v != r)) {\n            nonfinite++;\n            continue;\n        }\n"
                "        if (isnan(r) || isinf(r))\n            continue;\n"
                "        double d = fabs(v - r);\n"
                "        err2 += d * d;\n        ref2 += r * r;\n"
                "        if (d > max_abs)\n            max_abs = d;\n    }\n"
                "    double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);\n"
                "    int bad = nonfinite > 0 || !(rel <= tol);\n"
                "    printf(\"%-16s %-5s %10zu  %12.3e %12.3e %12.3e  %s\", name, amp_dtype_name(t), n, max_abs, rel, tol,\n"
                "           bad ? \"FAIL\" : \"ok\");\n"
                "    if (nonfinite)\n        printf(\" (%zu non-finite values differ)\", nonfinite);\n"
                "    putchar('\\n');\n    return bad;\n}\n\n");
    bool has_indices = false;
    for (int i = 0; i < model->outputs->len; i++)
        has_indices |= !dtype_is_float(((Value *)VEC_AT(model->outputs, i))->type.dtype);
    if (has_indices)
        buf_puts(o, "/* Integer outputs (indices) are reported, not judged: rounding may\n"
                " * legitimately reorder near-ties. */\n"
                "static void check_indices(const char *name, const void *y, const void *ref, amp_dtype t, size_t n)\n{\n"
                "    size_t differ = 0, size = amp_dtype_size(t);\n    for (size_t i = 0; i < n; i++)\n        differ += memcmp((const char *)y + i * size, (const char *)ref + i * size, size) != 0;\n"
                "    printf(\"%-16s %-5s %10zu  %zu of them differ from the reference (reported, not judged)\\n\", name, amp_dtype_name(t), n, differ);\n}\n\n");
}

/* main's start: the dims from the command line, the same inputs and
 * parameters for both evaluations, both forwards run. */
static void emit_harness_setup(Ctx *c, Graph *model, Graph *ref, const char *p, const char *rp, Buf *o)
{
    buf_puts(o, "int main(int argc, char **argv)\n{\n");
    buf_printf(o, "    %s_dims dims;\n    memset(&dims, 0, sizeof dims);\n", p);
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "    dims.%s = 2;\n", c->sym_names[i]);
    buf_puts(o, "    const char *dump = NULL;\n");
    buf_puts(o, "    for (int i = 1; i < argc; i++) {\n        char *eq = strchr(argv[i], '=');\n        int known = 0;\n"
                "        if (strncmp(argv[i], \"--dump=\", 7) == 0) {\n            dump = argv[i] + 7;\n            continue;\n        }\n");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "        if (eq && strncmp(argv[i], \"%s\", (size_t)(eq - argv[i])) == 0 && eq - argv[i] == %d) {\n"
                      "            dims.%s = strtoll(eq + 1, NULL, 10);\n            known = 1;\n        }\n",
                   c->sym_names[i], (int)strlen(c->sym_names[i]), c->sym_names[i]);
    buf_puts(o, "        if (!known) {\n            fprintf(stderr, \"usage: %s [--dump=FILE]");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, " [%s=N]", c->sym_names[i]);
    buf_puts(o, "\\n\", argv[0]);\n            return 2;\n        }\n    }\n");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "    const int64_t %s = dims.%s;\n    (void)%s;\n", c->sym_names[i], c->sym_names[i], c->sym_names[i]);
    buf_printf(o, "    %s_params params;\n    %s_inputs inputs;\n    %s_outputs outputs;\n", p, p, p);
    buf_printf(o, "    %s_params ref_params;\n    %s_inputs ref_inputs;\n    %s_outputs ref_outputs;\n", rp, rp, rp);
    buf_puts(o, "    memset(&params, 0, sizeof params);\n    memset(&inputs, 0, sizeof inputs);\n"
                "    memset(&ref_params, 0, sizeof ref_params);\n    memset(&ref_inputs, 0, sizeof ref_inputs);\n");

    buf_puts(o, "\n    /* the same inputs and parameters for both */\n");
    for (int i = 0; i < model->inputs->len; i++) {
        Value *v = VEC_AT(model->inputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        const char *ptr = arena_printf(c->arena, "in_%s", v->cname);
        buf_printf(o, "    %s *%s = check_alloc((size_t)(%s), %s);\n", dtype_c_type(v->type.dtype), ptr, n,
                   dtype_amp_enum(v->type.dtype));
        if (dtype_is_float(v->type.dtype))
            buf_printf(o, "    check_fill(%s, (size_t)(%s), %s, -1.0, 1.0);\n", ptr, n, dtype_amp_enum(v->type.dtype));
        else
            buf_printf(o, "    check_fill_index(%s, (size_t)(%s), %s, (int64_t)(%s));\n", ptr, n,
                       dtype_amp_enum(v->type.dtype), index_bound(c, v));
        buf_printf(o, "    inputs.%s = ref_inputs.%s = %s;\n", v->cname, v->cname, ptr);
    }
    for (int i = 0; i < model->params->len; i++) {
        Value *v = VEC_AT(model->params, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        const char *ptr = arena_printf(c->arena, "p_%s", v->cname);
        buf_printf(o, "    %s *%s = check_alloc((size_t)(%s), %s);\n", dtype_c_type(v->type.dtype), ptr, n,
                   dtype_amp_enum(v->type.dtype));
        fill_param(c, o, v, ptr);
        buf_printf(o, "    params.%s = ref_params.%s = %s;\n", v->cname, v->cname, ptr);
    }

    buf_puts(o, "\n    /* outputs: the model's in its dtypes, the reference's in f64 */\n");
    for (int i = 0; i < model->outputs->len; i++) {
        Value *v = VEC_AT(model->outputs, i);
        Value *r = VEC_AT(ref->outputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "    outputs.%s = check_alloc((size_t)(%s), %s);\n", v->cname, n, dtype_amp_enum(v->type.dtype));
        buf_printf(o, "    ref_outputs.%s = check_alloc((size_t)(%s), %s);\n", r->cname, n, dtype_amp_enum(r->type.dtype));
    }

    buf_printf(o, "\n    size_t arena_bytes = %s_arena_bytes(&dims);\n", p);
    buf_printf(o, "    size_t ref_arena_bytes = %s_arena_bytes((const %s_dims *)&dims);\n", rp, rp);
    buf_puts(o, "    void *arena = check_alloc(arena_bytes, AMP_BOOL), *ref_arena = check_alloc(ref_arena_bytes, AMP_BOOL);\n");
    buf_printf(o, "    int rc = %s_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);\n", p);
    buf_printf(o, "    if (rc != AMP_OK) {\n        fprintf(stderr, \"check: %s_forward: %%s\\n\", %s_strerror(rc));\n"
                  "        return 2;\n    }\n", p, p);
    buf_printf(o, "    rc = %s_forward(&ref_params, &ref_inputs, &ref_outputs, (const %s_dims *)&dims, ref_arena, ref_arena_bytes);\n",
               rp, rp);
    buf_printf(o, "    if (rc != AMP_OK) {\n        fprintf(stderr, \"check: %s_forward: %%s\\n\", %s_strerror(rc));\n"
                  "        return 2;\n    }\n", rp, rp);
}

/* Each output against the reference's, within its tolerance: integer
 * outputs reported, not judged. */
static void emit_harness_compare(Ctx *c, Graph *model, Graph *ref, Buf *o)
{
    buf_printf(o, "\n    printf(\"%%-16s %%-5s %%10s  %%12s %%12s %%12s\\n\", \"output\", \"dtype\", \"elements\", "
                  "\"max |err|\", \"rel. error\", \"tolerance\");\n");
    buf_puts(o, "    int failed = 0;\n");
    /* node ids are below the number of values (each node makes one) */
    bool *seen = arena_alloc(c->arena, (size_t)(model->values->len + 1));
    for (int i = 0; i < model->outputs->len; i++) {
        Value *v = VEC_AT(model->outputs, i);
        Value *r = VEC_AT(ref->outputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        if (!dtype_is_float(v->type.dtype)) {
            buf_printf(o, "    check_indices(\"%s\", outputs.%s, ref_outputs.%s, %s, (size_t)(%s));\n", v->output_name,
                       v->cname, r->cname, dtype_amp_enum(v->type.dtype), n);
            continue;
        }
        memset(seen, 0, (size_t)(model->values->len + 1));
        const char *tol = tol_c(c, path_roundoff(c, v, seen), 1);
        buf_printf(o, "    failed |= check_output(\"%s\", outputs.%s, %s, ref_outputs.%s, AMP_F64, (size_t)(%s), %s);\n",
                   v->output_name, v->cname, dtype_amp_enum(v->type.dtype), r->cname, n, tol);
    }
}

/* The weights prepared once (<prefix>_prepare) must change no bit of any
 * output: run again from a prepared block and compare. */
static void emit_harness_prepared(Ctx *c, Graph *model, const char *p, Buf *o)
{
    buf_puts(o, "\n    /* <prefix>_forward_prepared: bit for bit what <prefix>_forward gives */\n");
    buf_printf(o, "    void *prepared = check_alloc(%s_prepared_bytes(), AMP_BOOL);\n", p);
    buf_printf(o, "    rc = %s_prepare(&params, prepared, %s_prepared_bytes());\n", p, p);
    buf_printf(o, "    if (rc != AMP_OK) {\n        fprintf(stderr, \"check: %s_prepare: %%s\\n\", %s_strerror(rc));\n"
                  "        return 2;\n    }\n", p, p);
    buf_printf(o, "    %s_outputs prep_outputs;\n    memset(&prep_outputs, 0, sizeof prep_outputs);\n", p);
    for (int i = 0; i < model->outputs->len; i++) {
        Value *v = VEC_AT(model->outputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "    prep_outputs.%s = check_alloc((size_t)(%s), %s);\n", v->cname, n, dtype_amp_enum(v->type.dtype));
    }
    buf_printf(o, "    rc = %s_forward_prepared(prepared, &params, &inputs, &prep_outputs, &dims, arena, arena_bytes);\n", p);
    buf_printf(o, "    if (rc != AMP_OK) {\n        fprintf(stderr, \"check: %s_forward_prepared: %%s\\n\", %s_strerror(rc));\n"
                  "        return 2;\n    }\n", p, p);
    buf_puts(o, "    int prepared_differs = 0;\n");
    for (int i = 0; i < model->outputs->len; i++) {
        Value *v = VEC_AT(model->outputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "    prepared_differs |= memcmp(outputs.%s, prep_outputs.%s, (size_t)(%s) * amp_dtype_size(%s)) != 0;\n",
                   v->cname, v->cname, n, dtype_amp_enum(v->type.dtype));
    }
    buf_puts(o, "    if (prepared_differs) {\n"
                "        puts(\"check: the prepared forward's outputs differ from the forward's\");\n"
                "        failed = 1;\n    }\n");
}

/* --dump=FILE: every tensor with its shape, evaluated with the run's dims. */
static void emit_harness_dump(Ctx *c, Graph *model, Graph *ref, Buf *o)
{
    int ntensors = model->inputs->len + model->params->len + 2 * model->outputs->len;
    buf_printf(o, "    if (dump) {\n        check_tensor ts[%d];\n        int n = 0;\n", ntensors ? ntensors : 1);
    for (int pass = 0; pass < 4; pass++) {
        Vec *vals = pass == 0 ? model->inputs : pass == 1 ? model->params : pass == 2 ? model->outputs : ref->outputs;
        static const char *const kinds[] = {"input", "param", "output", "reference"};
        for (int i = 0; i < vals->len; i++) {
            Value *v = VEC_AT(vals, i);
            const char *holder = pass == 0 ? "inputs" : pass == 1 ? "params" : pass == 2 ? "outputs" : "ref_outputs";
            buf_printf(o, "        ts[n].key = \"%s.%s\";\n        ts[n].data = %s.%s;\n        ts[n].t = %s;\n"
                          "        ts[n].ndim = %d;\n", kinds[pass], pass >= 2 ? v->output_name : v->name, holder, v->cname,
                       dtype_amp_enum(v->type.dtype), v->type.shape.ndim);
            for (int d = 0; d < v->type.shape.ndim; d++)
                buf_printf(o, "        ts[n].shape[%d] = %s;\n", d, poly_to_c(c, v->type.shape.dims[d], c->sym_names));
            buf_puts(o, "        n++;\n");
        }
    }
    buf_puts(o, "        if (check_dump(dump, ts, n) != 0) {\n            fprintf(stderr, \"check: cannot write %s\\n\", dump);\n"
                "            return 2;\n        }\n    }\n");
}

static void emit_harness(Ctx *c, Graph *model, Graph *ref, Graph *ref_train, const char *p, const char *rp, Buf *o)
{
    emit_harness_helpers(model, o);
    emit_harness_setup(c, model, ref, p, rp, o);
    emit_harness_compare(c, model, ref, o);
    emit_harness_prepared(c, model, p, o);
    emit_harness_dump(c, model, ref, o);
    if (c->train)
        emit_gradient_check(c, model, ref, ref_train, p, rp, o);
    buf_puts(o, "    puts(failed ? \"check: FAILED\" : \"check: every output within its tolerance\");\n");
    buf_puts(o, "    check_free_all();\n    return failed;\n}\n");
}

/* The harness fills, compares and dumps real tensors only. */
bool check_harness_supports(Ctx *c)
{
    for (int i = 0; i < c->graph->values->len; i++) {
        Value *v = VEC_AT(c->graph->values, i);
        if (dtype_is_complex(v->type.dtype)) {
            error_plain(c, "--emit=check: the check harness has no complex tensors yet (%s is %s); compile the "
                        "model to C instead", v->name ? v->name : "a value", type_to_string(c, &v->type));
            return false;
        }
    }
    return true;
}

bool emit_check(Ctx *c, const Output *model, Ctx *rc, const Output *ref, Output *out)
{
    Graph *rg = rc->graph;
    if (rg->outputs->len != c->graph->outputs->len)
        ICE("the reference has %d outputs, the model %d", rg->outputs->len, c->graph->outputs->len);

    buf_init(&out->c_file, c->arena);
    buf_init(&out->h_file, c->arena);
    Buf *o = &out->c_file;
    buf_puts(o, "/* A self-checking program (ampc --emit=check): the model, its f64\n"
                " * reference evaluation, and a main() comparing the two on reproducible\n"
                " * pseudo-random inputs and parameters.  Build with -lamprt -lm -lpthread;\n"
                " * run with NAME=VALUE to set a dimension (each defaults to 2). */\n\n");
    buf_puts(o, model->h_file.data);
    append_without_own_include(o, &model->c_file);
    buf_puts(o, "\n");
    buf_puts(o, ref->h_file.data);
    append_without_own_include(o, &ref->c_file);
    emit_harness(c, c->graph, rg, rc->train_graph, model_prefix(c), rc->opts->prefix, o);
    return c->nerrors == 0;
}
