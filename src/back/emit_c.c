/* emit_c.c: the graph, as C99 a reviewer can read, calling libamprt.
 *
 * Requires: a memory-planned graph.  Produces: model.c and model.h (in
 * memory; driver.c writes them atomically).
 *
 * The output is meant for code review: deterministic (no addresses, times
 * or absolute paths), a provenance header, one comment per op naming its
 * source line and the rule that chose its dtype, a shape comment on each
 * buffer, constants printed exactly as C99 hex floats.  No malloc and no
 * mutable globals: everything the model needs lives in the caller's
 * params, inputs, outputs and arena, and every name is prefixed, so
 * several models link into one binary.
 *
 * The two files are one pair: the header ends with <PREFIX>_INTERFACE_HASH,
 * the FNV-1a hash of its text above that line, and the source stops with
 * #error unless the header it includes defines the same value, so a .c
 * beside a stale .h (a build killed between the two renames, a header
 * copied from another version) fails to compile instead of crashing.
 */
#include "emit.h"

#include <amprt.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>


static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "true", "false", "NULL", "params", "inputs", "outputs", "dims", "arena", "arena_bytes", "arena_need", "base", "rc",
    "shape", "a_stride", "b_stride", "main", "errno", "assert", "INFINITY", "NAN", "size_t", "int64_t",
    "int32_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "memcpy", "_Bool", "prepared", "post",
};

static bool name_taken(Emitter *e, const char *s)
{
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(reserved[i], s) == 0)
            return true;
    return strmap_get(e->used, s) != NULL;
}

/* "fc1.weight" -> "fc1_weight": a C identifier, unique in this function. */
const char *c_ident(Emitter *e, const char *base)
{
    char *s = arena_strdup(e->c->arena, base);
    for (char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p))
            *p = '_';
    if (isdigit((unsigned char)s[0]) || s[0] == '_')
        s = arena_printf(e->c->arena, "v%s", s);
    const char *name = s;
    /* h, h_2, h_3...: remember where the count stopped, so a thousand
     * reassignments of one name stay linear */
    intptr_t n = (intptr_t)strmap_get(e->next_suffix, s);
    if (n == 0)
        n = 2;
    while (name_taken(e, name))
        name = arena_printf(e->c->arena, "%s_%ld", s, (long)n++);
    strmap_put(e->next_suffix, s, (void *)n);
    strmap_put(e->used, name, (void *)1);
    return name;
}

static char *upper(Ctx *c, const char *s)
{
    char *u = arena_strdup(c->arena, s);
    for (char *p = u; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return u;
}

const char *poly_c(Emitter *e, const Poly *p) { return poly_to_c(e->c, p, e->c->sym_names); }

const char *numel_c(Emitter *e, const Shape *s) { return poly_c(e, shape_numel(e->c, s)); }

const char *type_comment(Emitter *e, const Type *t)
{
    return arena_printf(e->c->arena, "%s%s", dtype_name(t->dtype), shape_to_string(e->c, &t->shape, e->c->sym_names));
}

/* The product of dims [from, to) of a shape, as C. */
const char *dims_product(Emitter *e, const Shape *s, int from, int to)
{
    Shape sub = {0};
    for (int i = from; i < to; i++)
        sub.dims[sub.ndim++] = s->dims[i];
    return numel_c(e, &sub);
}

/* FNV-1a, 64 bits: a stable fingerprint of the inputs for the header. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A file's base name as the emitted comments show it (comment_safe: its
 * control bytes, a newline or an ESC, become \xHH). */
static const char *comment_name(Ctx *c, const char *path)
{
    return comment_safe(c, base_name(path));
}

/* ---- the header -------------------------------------------------------- */

static void emit_tensor_macros(Emitter *e, Buf *h, const char *name, const Type *t)
{
    const char *N = upper(e->c, name);
    buf_printf(h, "#define %s_%s_DTYPE %s\n", e->PREFIX, N, dtype_amp_enum(t->dtype));
    /* arguments are parenthesised and converted, so X_NUMEL(n + 1) works */
    if (e->c->nsyms)
        buf_printf(h, "#define %s_%s_NUMEL(%s) ((size_t)(%s))\n", e->PREFIX, N, e->dim_params,
                   poly_to_c(e->c, shape_numel(e->c, &t->shape), e->macro_names));
    else
        buf_printf(h, "#define %s_%s_NUMEL ((size_t)(%s))\n", e->PREFIX, N, numel_c(e, &t->shape));
}

/* Arena bytes: the sum over slots of each slot's largest buffer, each
 * padded to 64 bytes so every buffer starts cache-line aligned. */
const char *arena_expr(Emitter *e, const char *const *names)
{
    Graph *g = e->g;
    if (g->nslots == 0)
        return "0";
    Buf b;
    buf_init(&b, e->c->arena);
    for (int s = 0; s < g->nslots; s++) {
        Vec *sizes = VEC_AT(g->slot_sizes, s);
        buf_puts(&b, s ? " + " : "");
        buf_printf(&b, "%s_PAD_(", e->PREFIX);
        for (int k = 0; k < sizes->len - 1; k++)
            buf_printf(&b, "%s_MAX_(%s, ", e->PREFIX, poly_to_c(e->c, VEC_AT(sizes, k), names));
        buf_puts(&b, poly_to_c(e->c, VEC_AT(sizes, sizes->len - 1), names));
        for (int k = 0; k < sizes->len - 1; k++)
            buf_puts(&b, ")");
        buf_puts(&b, ")");
    }
    return b.data;
}

static uint64_t emit_header(Emitter *e, Buf *h, const char *provenance)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const char *P = e->PREFIX, *p = e->prefix;
    buf_puts(h, provenance);
    buf_printf(h, "#ifndef %s_H\n#define %s_H\n\n", P, P);
    buf_puts(h, "#include <stddef.h>\n#include <stdint.h>\n\n#include <amprt.h>\n\n");
    buf_puts(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");

    buf_puts(h, "/* The model's symbolic dimensions, given at run time. */\n");
    buf_printf(h, "typedef struct %s_dims {\n", p);
    if (c->nsyms == 0)
        buf_puts(h, "    int unused; /* the model has no symbolic dimensions */\n");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(h, "    int64_t %s;\n", c->sym_names[i]);
    buf_printf(h, "} %s_dims;\n\n", p);

    buf_puts(h, "/* Parameters and buffers, named after their PyTorch state_dict keys. */\n");
    buf_printf(h, "typedef struct %s_params {\n", p);
    if (g->params->len == 0)
        buf_puts(h, "    int unused; /* the model has no parameters */\n");
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        buf_printf(h, "    const %s *%s; /* %s: %s */\n", dtype_c_type(v->type.dtype), e->cname[v->id], v->name,
                   type_comment(e, &v->type));
    }
    buf_printf(h, "} %s_params;\n\n", p);

    buf_printf(h, "typedef struct %s_inputs {\n", p);
    if (g->inputs->len == 0)
        buf_puts(h, "    int unused; /* the model has no inputs */\n");
    for (int i = 0; i < g->inputs->len; i++) {
        Value *v = VEC_AT(g->inputs, i);
        buf_printf(h, "    const %s *%s; /* %s */\n", dtype_c_type(v->type.dtype), e->cname[v->id],
                   type_comment(e, &v->type));
    }
    buf_printf(h, "} %s_inputs;\n\n", p);

    buf_puts(h, "/* Outputs, in the dtype autocast left them in; the caller owns the memory. */\n");
    buf_printf(h, "typedef struct %s_outputs {\n", p);
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        buf_printf(h, "    %s *%s; /* %s%s */\n", dtype_c_type(v->type.dtype), e->cname[v->id],
                   type_comment(e, &v->type), v == g->loss ? ", the loss to minimize" : "");
    }
    buf_printf(h, "} %s_outputs;\n\n", p);

    buf_puts(h, "/* Element type and count of every parameter, input and output. */\n");
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        emit_tensor_macros(e, h, e->cname[v->id], &v->type);
    }
    for (int i = 0; i < g->inputs->len; i++) {
        Value *v = VEC_AT(g->inputs, i);
        emit_tensor_macros(e, h, e->cname[v->id], &v->type);
    }
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        emit_tensor_macros(e, h, e->cname[v->id], &v->type);
    }

    /* what the plan saves: the sum of every temporary buffer on its own */
    Poly *all = poly_const(c, 0);
    int nbuf = 0;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (n->out->slot >= 0) {
            if (all)
                all = poly_add(c, all, value_bytes(c, n->out));
            nbuf++;
        }
    }
    buf_printf(h, "\n/* The arena: %d buffer%s in %d slot%s reused by liveness (without reuse: %s bytes). */\n",
               nbuf, nbuf == 1 ? "" : "s", g->nslots, g->nslots == 1 ? "" : "s", all ? poly_c(e, all) : "?");
    buf_printf(h, "#define %s_PAD_(n) (((size_t)(n) + 63u) & ~(size_t)63u)\n", P);
    buf_printf(h, "#define %s_MAX_(a, b) ((size_t)(a) > (size_t)(b) ? (size_t)(a) : (size_t)(b))\n", P);
    if (c->nsyms)
        buf_printf(h, "#define %s_ARENA_BYTES(%s) ((size_t)(%s))\n", P, e->dim_params, arena_expr(e, e->macro_names));
    else
        buf_printf(h, "#define %s_ARENA_BYTES ((size_t)(%s))\n", P, arena_expr(e, e->c->sym_names));
    buf_printf(h, "size_t %s_arena_bytes(const %s_dims *dims);\n\n", p, p);

    buf_puts(h, "/* Runs the model on `inputs` and writes every output.  `arena` is scratch\n"
                " * memory of at least <prefix>_arena_bytes(dims) bytes, aligned as malloc's.\n"
                " * Returns AMP_OK or an error code; <prefix>_strerror turns it into text. */\n");
    buf_printf(h, "int %s_forward(const %s_params *params, const %s_inputs *inputs, %s_outputs *outputs,\n", p, p, p, p);
    buf_printf(h, "    %*s const %s_dims *dims, void *arena, size_t arena_bytes);\n", (int)strlen(p), "", p);
    buf_printf(h, "const char *%s_strerror(int code);\n\n", p);
    buf_puts(h, "/* Weights prepared once: <prefix>_prepare converts the parameters the\n"
                " * forward casts to a lower precision and packs the convolutions' weights\n"
                " * for the kernels, into `prepared` (at least <prefix>_prepared_bytes()\n"
                " * bytes, aligned as malloc's); <prefix>_forward_prepared then skips that\n"
                " * work on every call and computes exactly what <prefix>_forward does.\n"
                " * Prepare again after changing a parameter.  A block is only valid in\n"
                " * the process that prepared it (its layout follows the CPU's kernels)\n"
                " * and at the address it was prepared at (do not copy it elsewhere);\n"
                " * another model's block gives AMP_ERR_BAD_PREPARED. */\n");
    buf_printf(h, "size_t %s_prepared_bytes(void);\n", p);
    buf_printf(h, "int %s_prepare(const %s_params *params, void *prepared, size_t prepared_bytes);\n", p, p);
    buf_printf(h, "int %s_forward_prepared(const void *prepared, const %s_params *params, const %s_inputs *inputs,\n",
               p, p, p);
    buf_printf(h, "    %*s %s_outputs *outputs, const %s_dims *dims, void *arena, size_t arena_bytes);\n\n",
               (int)strlen(p), "", p, p);
    emit_weights_decls(e, h);
    if (e->train)
        emit_train_decls(e->train, e, h);
    emit_embedded_decl(e, h);
    uint64_t hash = fnv1a(0xcbf29ce484222325ull, h->data, h->len);
    buf_printf(h, "/* FNV-1a of this header's text above: the source generated with it checks it. */\n"
                  "#define %s_INTERFACE_HASH 0x%016llxu\n\n", P, (unsigned long long)hash);
    buf_puts(h, "#ifdef __cplusplus\n}\n#endif\n\n");
    buf_printf(h, "#endif /* %s_H */\n", P);
    return hash;
}

/* ---- the forward function ---------------------------------------------- */

const char *kernel(Emitter *e, const char *op, DType t)
{
    return arena_printf(e->c->arena, "amp_%s_%s", op, dtype_name(t));
}

/* A scalar operand, rounded once from its literal text to the dtype the
 * kernel computes in: f32 for f32, bf16 and f16 alike (PyTorch's opmath
 * type), f64 for f64. */
const char *scalar_c(Emitter *e, Node *n)
{
    double v;
    DType t = n->out->type.dtype;
    DType compute = t == DT_F64 ? DT_F64 : DT_F32;
    LiteralRounding r = literal_to_dtype(n->scalar.text, compute, &v);
    if (r == LIT_OVERFLOW)
        warning_class_at(e->c, n->scalar.loc, "literal-range", "%s overflows to infinity in f32, the dtype %s computes in",
                         n->scalar.text, n->op->name);
    else if (r == LIT_UNDERFLOW)
        warning_class_at(e->c, n->scalar.loc, "literal-range", "%s underflows to zero in f32, the dtype %s computes in",
                         n->scalar.text, n->op->name);
    else if (t != DT_F32 && t != DT_F64) {
        /* exact in the f32 the kernel computes in, but not in the tensor's
         * own dtype: 70000 with an f16 tensor gives inf in the result */
        double low;
        LiteralRounding lr = literal_to_dtype(n->scalar.text, t, &low);
        if (lr == LIT_OVERFLOW)
            warning_class_at(e->c, n->scalar.loc, "literal-range", "%s overflows to infinity in %s, the dtype of the tensor it meets in %s",
                             n->scalar.text, dtype_name(t), n->op->name);
        else if (lr == LIT_UNDERFLOW)
            warning_class_at(e->c, n->scalar.loc, "literal-range", "%s underflows to zero in %s, the dtype of the tensor it meets in %s",
                             n->scalar.text, dtype_name(t), n->op->name);
        else if (lr == LIT_SUBNORMAL)
            warning_class_at(e->c, n->scalar.loc, "literal-range", "%s is subnormal in %s, the dtype of the tensor it meets in %s: it keeps only %s",
                             n->scalar.text, dtype_name(t), n->op->name, "a few significant bits");
    }
    if (n->scalar.negate)
        v = -v;
    if (v != v)
        ICE("literal %s rounded to NaN", n->scalar.text);
    if (v == 1.0 / 0.0)
        return "INFINITY";
    if (v == -1.0 / 0.0)
        return "-INFINITY";
    return arena_printf(e->c->arena, "%a%s /* %s%s */", v, compute == DT_F32 ? "f" : "", n->scalar.negate ? "-" : "",
                        n->scalar.text);
}

static bool supported_dtype(DType t) { return t == DT_F64 || t == DT_F32 || t == DT_BF16 || t == DT_F16; }

/* ---- weights prepared once ---------------------------------------------------
 *
 * <prefix>_prepare converts the parameters the forward casts (f32 ->
 * bf16, say) and packs the convolutions' weights into the kernels' panel
 * layout, once, into a caller's block; <prefix>_forward_prepared then
 * reads them from there instead of redoing both on every call.  The block
 * starts with a header: the model's magic, the entry count, and each
 * entry's byte offset (packed sizes depend on the kernel set chosen at run
 * time, so offsets are computed then, not here). */

/* Whether a cast's result can be kept in the prepared block: a parameter's
 * (or buffer's) conversion between float dtypes, of constant size. */
static bool cast_preparable(Ctx *c, const Node *n)
{
    Value *x = n->in[0];
    int64_t k;
    return (x->kind == V_PARAM || x->kind == V_BUFFER) && !n->out->is_output && supported_dtype(x->type.dtype) &&
           supported_dtype(n->out->type.dtype) && x->type.dtype != n->out->type.dtype &&
           poly_is_const(shape_numel(c, &n->out->type.shape), &k);
}

/* The convolution's op name, also of a fused one ("conv2d + batch_norm"). */
static const char *conv_name(Ctx *c, const Node *n)
{
    const char *p = node_op_name(n);
    return arena_strndup(c->arena, p, strcspn(p, " "));
}

Value *preparable_weight_source(const Node *n)
{
    Value *w = n->in[1];
    if (!w)
        return NULL;
    if (w->kind == V_TEMP && w->def && w->def->op->id == OP_CAST && w->def->in[0]->type.dtype == DT_F32)
        w = w->def->in[0];
    else if (w->type.dtype != n->out->type.dtype)
        return NULL;
    return w->kind == V_PARAM || w->kind == V_BUFFER ? w : NULL;
}

const char *prepared_weights_c(Emitter *e, const Node *n)
{
    int k = e->prep_packed ? e->prep_packed[n->out->id] : -1;
    return k < 0 ? "NULL" : arena_printf(e->c->arena, "%s_prepared_entry_(prepared, %d)", e->prefix, k);
}

/* Whether node n's weights are packed by <prefix>_prepare (*src: their
 * parameter). */
static bool weights_preparable(const Node *n, Value **src)
{
    return conv_weights_preparable(n, src) || linear_weights_preparable(n, src);
}

/* Which casts, convolutions and linears the prepared block holds (inference only). */
static void plan_prepared(Emitter *e)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    int nv = g->values->len;
    e->prep_cast = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *e->prep_cast);
    e->prep_packed = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *e->prep_packed);
    e->prep_node = arena_alloc(c->arena, (size_t)(g->nodes->len + 1) * sizeof *e->prep_node);
    for (int i = 0; i <= nv; i++)
        e->prep_cast[i] = e->prep_packed[i] = -1;
    e->nprep = 0;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        Value *src;
        if (weights_preparable(n, &src)) {
            /* in source order (node ids follow it): a fused convolution
             * (fuse.c) stands where its group's last op did, and keeps the
             * id of the convolution */
            int k = e->nprep++;
            for (; k > 0 && e->prep_node[k - 1]->id > n->id; k--)
                e->prep_node[k] = e->prep_node[k - 1];
            e->prep_node[k] = n;
        }
    }
    /* a weight several linears of one dtype read (tied weights) is packed
     * once: the later ones read the first one's entry */
    int *linear_entry = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *linear_entry);
    for (int i = 0; i <= nv; i++)
        linear_entry[i] = -1;
    int ncand = e->nprep;
    e->nprep = 0;
    for (int i = 0; i < ncand; i++) {
        Node *n = e->prep_node[i];
        Value *src = NULL;
        bool linear = linear_weights_preparable(n, &src);
        int k = linear ? linear_entry[src->id] : -1;
        if (k >= 0 && e->prep_node[k]->out->type.dtype == n->out->type.dtype) {
            e->prep_packed[n->out->id] = k;
            continue;
        }
        k = e->nprep++;
        e->prep_node[k] = n;
        e->prep_packed[n->out->id] = k;
        if (linear)
            linear_entry[src->id] = k;
    }
    /* per value: read other than as packed weights (one pass, so
     * planning stays linear in the graph) */
    bool *read_unpacked = arena_alloc(c->arena, (size_t)(nv + 1) * sizeof *read_unpacked);
    memset(read_unpacked, 0, (size_t)(nv + 1) * sizeof *read_unpacked);
    for (int i = 0; i < g->nodes->len; i++) {
        Node *m = VEC_AT(g->nodes, i);
        for (int k = 0; k < node_nreads(m); k++)
            if (node_read(m, k) && !(k == 1 && e->prep_packed[m->out->id] >= 0))
                read_unpacked[node_read(m, k)->id] = true;
    }
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        if (n->op->id != OP_CAST || !cast_preparable(c, n))
            continue;
        /* read only as packed weights: nothing more to keep */
        if (!read_unpacked[n->out->id]) {
            e->prep_cast[n->out->id] = -2;
            continue;
        }
        e->prep_cast[n->out->id] = e->nprep;
        e->prep_node[e->nprep++] = n;
    }
}

/* A cast of a parameter: read from the prepared block when there is one. */
/* Declares v's buffer in its slot, named by the C identifier made from
 * base, with its type (and note) in a comment; records that name as v's. */
static const char *declare_slot(Emitter *e, Value *v, const char *base, const char *note)
{
    const char *name = c_ident(e, base), *ct = dtype_c_type(v->type.dtype);
    buf_printf(e->out, "    %s *const %s = (%s *)slot%d; /* %s%s */\n", ct, name, ct, v->slot, type_comment(e, &v->type),
               note);
    e->cname[v->id] = name;
    return name;
}

static void emit_prepared_cast(Emitter *e, Node *n)
{
    Ctx *c = e->c;
    Buf *o = e->out;
    Value *v = n->out, *x = n->in[0];
    DType t = v->type.dtype;
    const char *ct = dtype_c_type(t);
    const char *y = c_ident(e, x->name ? arena_printf(c->arena, "%s_%s", x->name, dtype_name(t))
                                       : arena_printf(c->arena, "t%d", v->id));
    const char *cast = arena_printf(c->arena, "amp_cast_%s_%s((size_t)(%s), %s, ", dtype_name(x->type.dtype),
                                    dtype_name(t), numel_c(e, &v->type.shape), e->cname[x->id]);
    e->cname[v->id] = y;
    int k = e->prep_cast[v->id];
    if (k >= 0) {
        buf_printf(o, "    const %s *%s = %s_prepared_entry_(prepared, %d); /* %s, cast by %s_prepare */\n", ct, y,
                   e->prefix, k, type_comment(e, &v->type), e->prefix);
        buf_printf(o, "    if (!%s) {\n        %s(%s *)slot%d);\n        %s = (const %s *)slot%d;\n    }\n", y, cast, ct,
                   v->slot, y, ct, v->slot);
        return;
    }
    buf_printf(o, "    %s *const %s = (%s *)slot%d; /* %s */\n", ct, y, ct, v->slot, type_comment(e, &v->type));
    buf_printf(o, "    if (!prepared) /* else the kernel reads the weights %s_prepare packed */\n        %s%s);\n",
               e->prefix, cast, y);
}

/* A node whose result another call stores (the training step's gradient
 * sink): its comment says where, and no call of its own is written.
 * Returns false for any other node. */
static bool emit_absorbed(Emitter *e, Node *n, const char *what)
{
    Buf *o = e->out;
    Value *v = n->out;
    if (e->grad_cast_in_sink && e->grad_cast_in_sink[v->id]) {
        /* emit_train.c: the sink below widens and adds in one call, or
         * the weight gradient's call above did */
        buf_printf(o, "\n    /* %s: %s: %s; %s */\n", comment_where(e, n), what, comment_rule(e, n->why),
                   e->grad_in_state[n->in[0]->id] ? "written into the state's gradient by the weight gradient above"
                                                  : "added into the state's gradient below");
        return true;
    }
    return false;
}

/* #line back to the .amp source (-g): the path as given, so a debugger
 * finds the file from the build's directory, as a C string: quotes,
 * backslashes and '?' (trigraphs) escaped, and bytes outside printable
 * ASCII (a newline would end the directive) in octal, which the compiler
 * turns back into the same bytes. */
static void emit_line_directive(Buf *o, int line, const char *path)
{
    buf_printf(o, "#line %d \"", line);
    for (const char *s = path; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch >= 0x7f)
            buf_printf(o, "\\%03o", ch);
        else
            buf_printf(o, "%s%c", ch == '"' || ch == '\\' || ch == '?' ? "\\" : "", ch);
    }
    buf_puts(o, "\"\n");
}

/* Casts convert between the runtime's floating dtypes, and from integers
 * and bools to them (as C converts); reports any other pair. */
static bool cast_dtypes_ok(Emitter *e, Node *n)
{
    DType from = n->in[0]->type.dtype, to = n->out->type.dtype;
    bool from_int = dtype_is_float(to) || to == DT_BOOL;
    if (!supported_dtype(from) && !from_int) {
        error_at(e->c, n->loc, "conversion on %s tensors is not supported by the runtime yet", dtype_name(from));
        return false;
    }
    if (!supported_dtype(to)) {
        error_at(e->c, n->loc, "conversion producing %s is not supported by the runtime yet", dtype_name(to));
        return false;
    }
    return true;
}

/* A cast (an autocast decision, x.float(), a parameter's conversion): the
 * runtime's conversion kernel, or a copy, or C's conversion of integers. */
void emit_cast(Emitter *e, Node *n, const char *y)
{
    Buf *o = e->out;
    Value *v = n->out;
    DType t = v->type.dtype;
    const char *x0 = e->cname[n->in[0]->id];
    if (dtype_is_complex(n->in[0]->type.dtype) || dtype_is_complex(t)) {
        /* complex values are only copied (into an output): the complex
         * ops take each operand in its own kind, real or complex */
        if (n->in[0]->type.dtype != t)
            ICE("a cast from %s to %s", dtype_name(n->in[0]->type.dtype), dtype_name(t));
        buf_printf(o, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, x0, numel_c(e, &v->type.shape), y);
    } else if (!supported_dtype(n->in[0]->type.dtype)) {
        /* integers and bools become floats as C converts them: exact
         * below 2^24 (f32) or 2^53 (f64), else to nearest */
        if (t == DT_F32 || t == DT_F64)
            buf_printf(o, "    for (size_t i = 0; i < (size_t)(%s); i++)\n        %s[i] = (%s)%s[i];\n",
                       numel_c(e, &v->type.shape), y, dtype_c_type(t), x0);
        else
            buf_printf(o, "    for (size_t i = 0; i < (size_t)(%s); i++)\n        %s[i] = amp_f32_to_%s((float)%s[i]);\n",
                       numel_c(e, &v->type.shape), y, dtype_name(t), x0);
    } else if (n->in[0]->type.dtype == t)
        buf_printf(o, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, x0, numel_c(e, &v->type.shape), y);
    else
        buf_printf(o, "    amp_cast_%s_%s((size_t)(%s), %s, %s);\n", dtype_name(n->in[0]->type.dtype), dtype_name(t),
                   numel_c(e, &v->type.shape), x0, y);
}

void emit_node(Emitter *e, Node *n)
{
    Ctx *c = e->c;
    Buf *o = e->out;
    Value *v = n->out;
    DType t = v->type.dtype;
    int line, col;
    loc_line_col(n->loc, &line, &col);
    if (!n->op->emit_rule) {
        /* typed, autocast and planned, so --explain and --emit=dot show it */
        error_at(c, n->loc, "op %s has no runtime kernel yet, so no C can be emitted for it "
                 "(--explain and --emit=dot work)", n->op->name);
        return;
    }

    const char *what = n->op->id == OP_CAST
                           ? arena_printf(c->arena, "%s %s -> %s", n->in[0]->type.dtype == t ? "copy" : "cast",
                                          dtype_name(n->in[0]->type.dtype), dtype_name(t))
                           : n->op->id == OP_GRAD ? arena_printf(c->arena, "%s in %s", n->fwd ? "backward" : "seed", dtype_name(t))
                           : arena_printf(c->arena, "%s in %s", node_op_name(n), dtype_name(t));
    if (emit_absorbed(e, n, what))
        return;
    buf_printf(o, "\n    /* %s: %s: %s */\n", comment_where(e, n), what, comment_rule(e, n->why));
    if (c->opts->line_directives)
        emit_line_directive(o, line, n->loc.file->name);
    if (n->op->id == OP_CAST && !cast_dtypes_ok(e, n))
        return;
    if (n->op->id == OP_CAST && e->prep_cast && e->prep_cast[v->id] != -1) {
        emit_prepared_cast(e, n);
        return;
    }
    const char *y;
    if (v->is_output) {
        y = arena_printf(c->arena, "outputs->%s", e->member[v->id]);
        e->cname[v->id] = y;
    } else if (e->grad_in_state && e->grad_in_state[v->id]) {
        y = e->cname[v->id] = NULL; /* written into the state's gradient (emit_train.c) */
    } else {
        y = declare_slot(e, v, v->name ? v->name
                               : n->op->id == OP_CAST && n->in[0]->name ? arena_printf(c->arena, "%s_%s", n->in[0]->name, dtype_name(t))
                               : arena_printf(c->arena, "t%d", v->id),
                         attr_bool(n, "through_relu", false) ? ", through the relu" : "");
    }

    /* the other results, and scratch memory, live in slots too */
    for (int k = 0; k < n->nmore + 1; k++) {
        Value *r = k < n->nmore ? n->more_out[k] : n->scratch;
        if (!r)
            continue;
        if (r->is_output) {
            e->cname[r->id] = arena_printf(c->arena, "outputs->%s", e->member[r->id]);
            continue;
        }
        if (k < n->nmore && e->grad_in_state && e->grad_in_state[r->id]) {
            e->cname[r->id] = NULL; /* written into the state's gradient (emit_train.c) */
            continue;
        }
        if (k < n->nmore) {
            declare_slot(e, r, r->name ? r->name : arena_printf(c->arena, "t%d", r->id), "");
            continue;
        }
        const char *name = c_ident(e, r->name ? r->name : arena_printf(c->arena, "scratch%d", r->id));
        buf_printf(o, "    unsigned char *const %s = slot%d; /* %s bytes of the kernel's working memory */\n",
                   name, r->slot, poly_c(e, r->type.shape.dims[0]));
        e->cname[r->id] = name;
    }

    emit_op(e, n, y);
}

/* Run-time checks of the dims, before any size is computed: every dim is
 * non-negative, and every size fits comfortably in 64 bits (checked in
 * double, which cannot overflow, against 2^62). */
static void emit_dim_checks(Emitter *e, const char *fail)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    Buf *o = e->out;
    if (c->nsyms == 0)
        return;
    buf_puts(o, "    if (");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "%s%s < 0", i ? " || " : "", c->sym_names[i]);
    buf_printf(o, ")\n        %s\n", fail);

    /* sum of |terms| of every size, one coefficient per monomial (folded
     * here, saturating): an upper bound on any partial sum */
    Vec *seen = vec_new(c);
    Term *sum = arena_alloc(c->arena, sizeof *sum * 64);
    int nsum = 0, cap = 64;
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        Poly *b = value_bytes(c, v);
        bool dup = false;
        for (int k = 0; k < seen->len; k++)
            dup |= poly_equal(VEC_AT(seen, k), b);
        int64_t cst;
        if (dup || poly_is_const(b, &cst))
            continue;
        vec_push(c, seen, b);
        for (int t = 0; t < b->nterms; t++) {
            const Term *term = &b->terms[t];
            uint64_t mag = term->coef < 0 ? 0 - (uint64_t)term->coef : (uint64_t)term->coef;
            int k = 0;
            while (k < nsum && memcmp(sum[k].pow, term->pow, sizeof term->pow) != 0)
                k++;
            if (k == nsum) {
                if (nsum == cap) {
                    Term *more = arena_alloc(c->arena, sizeof *more * (size_t)cap * 2);
                    memcpy(more, sum, sizeof *sum * (size_t)cap);
                    sum = more;
                    cap *= 2;
                }
                memcpy(sum[nsum].pow, term->pow, sizeof term->pow);
                sum[nsum++].coef = 0;
            }
            uint64_t total = (uint64_t)sum[k].coef + mag;
            sum[k].coef = total < mag || total > INT64_MAX ? INT64_MAX : (int64_t)total;
        }
    }
    Buf bound;
    buf_init(&bound, c->arena);
    for (int k = 0; k < nsum; k++) {
        buf_printf(&bound, "%s%lld.0", bound.len ? " + " : "", (long long)sum[k].coef);
        for (int s = 0; s < MAX_SYMS; s++)
            for (int p = 0; p < sum[k].pow[s]; p++)
                buf_printf(&bound, "*(double)%s", c->sym_names[s]);
    }
    if (bound.len)
        buf_printf(o, "    if (%s > 0x1p62)\n        %s\n", bound.data, fail);
    /* dims like B - 1 must not go negative either */
    Vec *dims_seen = vec_new(c);
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        for (int d = 0; d < v->type.shape.ndim; d++) {
            Poly *p = v->type.shape.dims[d];
            int64_t cst;
            bool plain = p->nterms == 1 && p->terms[0].coef > 0;
            bool dup = false;
            for (int k = 0; k < dims_seen->len; k++)
                dup |= poly_equal(VEC_AT(dims_seen, k), p);
            if (plain || dup || poly_is_const(p, &cst))
                continue;
            vec_push(c, dims_seen, p);
            buf_printf(o, "    if (%s < 0)\n        %s\n", poly_c(e, p), fail);
        }
    }
}

/* <prefix>_arena_bytes (fn) for graph e->g: the arena for given dims,
 * SIZE_MAX when the dims are out of range (a dim or a size negative, a
 * size or the sum of the slots past 2^62 bytes), the dims _forward
 * refuses with AMP_ERR_BAD_DIM.  Saturating instead of wrapping: no
 * allocation of SIZE_MAX bytes succeeds, and the arithmetic stays in
 * range for any int64 dims (the checks bound every size before it is
 * computed in int64, and each partial sum before the next slot adds at
 * most 2^62 + 63). */
void emit_arena_bytes_fn(Emitter *e, Buf *o, const char *fn, const char *macro)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const char *P = e->PREFIX;
    e->out = o;
    buf_printf(o, "size_t %s(const %s_dims *dims)\n{\n", fn, e->prefix);
    if (c->nsyms == 0) {
        buf_printf(o, "    (void)dims;\n    return %s;\n}\n\n", macro);
        return;
    }
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "    const int64_t %s = dims->%s;\n", c->sym_names[i], c->sym_names[i]);
    buf_puts(o, "    size_t arena_need = 0;\n");
    emit_dim_checks(e, "return SIZE_MAX;");
    for (int s = 0; s < g->nslots; s++) {
        Vec *sizes = VEC_AT(g->slot_sizes, s);
        buf_printf(o, "    arena_need += %s_PAD_(", P);
        for (int k = 0; k < sizes->len - 1; k++)
            buf_printf(o, "%s_MAX_(%s, ", P, poly_to_c(c, VEC_AT(sizes, k), c->sym_names));
        buf_puts(o, poly_to_c(c, VEC_AT(sizes, sizes->len - 1), c->sym_names));
        for (int k = 0; k < sizes->len - 1; k++)
            buf_puts(o, ")");
        buf_puts(o, ");\n");
        if (s + 1 < g->nslots)
            buf_puts(o, "    if ((double)arena_need > 0x1p62)\n        return SIZE_MAX;\n");
    }
    if (g->nslots)
        buf_puts(o, "    return (double)arena_need > 0x1p62 ? SIZE_MAX : arena_need;\n}\n\n");
    else
        buf_puts(o, "    return arena_need;\n}\n\n");
}

/* return AMP_ERR_NULL_ARG if any of the pointer expressions ptrs[0..n) is
 * NULL: a short list as one condition, a long one (a network's weights) as
 * a table and a loop, wrapped to lines a reviewer can read. */
static void emit_null_checks(Buf *o, const char *const *ptrs, int n)
{
    size_t one_line = 8; /* "    if (" */
    for (int i = 0; i < n; i++)
        one_line += strlen(ptrs[i]) + 5; /* "!p || " */
    if (n == 0)
        return;
    if (one_line <= 100) {
        buf_puts(o, "    if (");
        for (int i = 0; i < n; i++)
            buf_printf(o, "%s!%s", i ? " || " : "", ptrs[i]);
        buf_puts(o, ")\n        return AMP_ERR_NULL_ARG;\n");
        return;
    }
    buf_puts(o, "    {\n        const void *const required[] = {");
    size_t col = 100; /* at the limit: the first entry starts a line */
    for (int i = 0; i < n; i++) {
        size_t len = strlen(ptrs[i]) + 2;
        if (col + len > 100) {
            buf_puts(o, "\n           ");
            col = 11;
        }
        buf_printf(o, " %s%s", ptrs[i], i + 1 < n ? "," : "");
        col += len;
    }
    buf_puts(o, "\n        };\n        for (size_t i = 0; i < sizeof required / sizeof *required; i++)\n"
                "            if (!required[i])\n                return AMP_ERR_NULL_ARG;\n    }\n");
}

/* <prefix>_prepared_bytes, <prefix>_prepare and the entries' accessor. */
static void emit_prepare(Emitter *e, Buf *o)
{
    Ctx *c = e->c;
    const char *p = e->prefix, *P = e->PREFIX;
    buf_printf(o, "#define %s_PREPARED_MAGIC 0x%016llxull\n\n", P, (unsigned long long)e->prep_magic);
    if (e->nprep)
        buf_printf(o, "/* Entry k of a prepared block (its offset is in the header), or NULL\n"
                  " * without a block. */\n"
                  "static const void *%s_prepared_entry_(const void *prepared, int k)\n{\n"
                  "    return prepared ? (const unsigned char *)prepared + ((const uint64_t *)prepared)[2 + k] : NULL;\n"
                  "}\n\n", p);
    Buf sizes, fill;
    buf_init(&sizes, c->arena);
    buf_init(&fill, c->arena);
    Buf *saved = e->out;
    for (int k = 0; k < e->nprep; k++) {
        Node *n = e->prep_node[k];
        DType t = n->out->type.dtype;
        if (n->op->id == OP_CAST) {
            Value *x = n->in[0];
            const char *bytes = arena_printf(c->arena, "%s_PAD_((size_t)(%s) * sizeof(%s))", P,
                                             numel_c(e, &n->out->type.shape), dtype_c_type(t));
            buf_printf(&sizes, "    bytes += %s; /* %s as %s */\n", bytes, x->name, dtype_name(t));
            buf_printf(&fill, "    head[%d] = at; /* %s as %s */\n", 2 + k, x->name, dtype_name(t));
            buf_printf(&fill, "    amp_cast_%s_%s((size_t)(%s), params->%s, (%s *)(base + at));\n    at += %s;\n",
                       dtype_name(x->type.dtype), dtype_name(t), numel_c(e, &n->out->type.shape), e->member[x->id],
                       dtype_c_type(t), bytes);
            continue;
        }
        Value *w = NULL;
        if (linear_weights_preparable(n, &w)) {
            const Shape *ws = &n->in[1]->type.shape;
            const char *nk = arena_printf(c->arena, "%s, %s", poly_c(e, ws->dims[0]), poly_c(e, ws->dims[1]));
            buf_printf(&sizes, "    bytes += %s_PAD_(amp_linear_packed_bytes_%s(%s)); /* %s, packed for %s */\n", P,
                       dtype_name(t), nk, w->name, node_op_name(n));
            buf_printf(&fill, "    head[%d] = at; /* %s, packed for %s */\n", 2 + k, w->name, node_op_name(n));
            buf_printf(&fill, "    amp_linear_pack_weights_%s(%s, %s, params->%s, base + at);\n", dtype_name(t), nk,
                       dtype_amp_enum(w->type.dtype), e->member[w->id]);
            buf_printf(&fill, "    at += %s_PAD_(amp_linear_packed_bytes_%s(%s));\n", P, dtype_name(t), nk);
            continue;
        }
        conv_weights_preparable(n, &w);
        e->out = &sizes;
        buf_printf(&sizes, "    { /* %s, packed for %s */\n", w->name, conv_name(c, n));
        emit_conv_weight_desc(e, n);
        buf_printf(&sizes, "        bytes += %s_PAD_(amp_conv_packed_bytes_%s(&d));\n    }\n", P, dtype_name(t));
        e->out = &fill;
        buf_printf(&fill, "    { /* %s, packed for %s */\n", w->name, conv_name(c, n));
        emit_conv_weight_desc(e, n);
        buf_printf(&fill, "        head[%d] = at;\n", 2 + k);
        buf_printf(&fill, "        amp_conv_pack_weights_%s(&d, %s, params->%s, base + at);\n", dtype_name(t),
                   dtype_amp_enum(w->type.dtype), e->member[w->id]);
        buf_printf(&fill, "        at += %s_PAD_(amp_conv_packed_bytes_%s(&d));\n    }\n", P, dtype_name(t));
    }
    e->out = saved;
    buf_printf(o, "size_t %s_prepared_bytes(void)\n{\n", p);
    /* 64 bytes more: the entries start on a cache line (the packed
     * panels' alignment) wherever malloc put the block */
    buf_printf(o, "    size_t bytes = %s_PAD_(sizeof(uint64_t) * %d)%s;\n%s    return bytes;\n}\n\n", P, 2 + e->nprep,
               e->nprep ? " + 64" : "", sizes.data ? sizes.data : "");
    buf_printf(o, "int %s_prepare(const %s_params *params, void *prepared, size_t prepared_bytes)\n{\n", p, p);
    buf_puts(o, "    if (!params || !prepared)\n        return AMP_ERR_NULL_ARG;\n");
    const char **prep_ptrs = arena_alloc(c->arena, sizeof *prep_ptrs * (size_t)(e->nprep + 1));
    for (int k = 0; k < e->nprep; k++) {
        Node *n = e->prep_node[k];
        Value *w = n->in[0];
        if (n->op->id != OP_CAST)
            weights_preparable(n, &w);
        prep_ptrs[k] = arena_printf(c->arena, "params->%s", e->member[w->id]);
    }
    emit_null_checks(o, prep_ptrs, e->nprep);
    buf_printf(o, "    if (prepared_bytes < %s_prepared_bytes())\n        return AMP_ERR_ARENA_TOO_SMALL;\n", p);
    buf_printf(o, "    uint64_t *const head = prepared;\n");
    if (e->nprep)
        buf_printf(o, "    unsigned char *const base = prepared;\n"
                      "    size_t at = %s_PAD_((uintptr_t)base + sizeof(uint64_t) * %d) - (uintptr_t)base;\n", P,
                   2 + e->nprep);
    buf_printf(o, "%s    head[0] = %s_PREPARED_MAGIC;\n    head[1] = %d;\n    return AMP_OK;\n}\n\n",
               fill.data ? fill.data : "", P, e->nprep);
}

static void emit_source(Emitter *e, Buf *o, const char *provenance, uint64_t interface_hash)
{
    Ctx *c = e->c;
    const char *p = e->prefix, *P = e->PREFIX;
    e->out = o;
    buf_puts(o, provenance);
    const char *header = c->opts->header_path ? base_name(c->opts->header_path) : arena_printf(c->arena, "%s.h", p);
    buf_printf(o, "#include \"%s\"\n\n", header);
    buf_printf(o, "#if !defined(%s_INTERFACE_HASH) || %s_INTERFACE_HASH != 0x%016llxu\n"
                  "#error \"the header included is not the one generated with this file: compile a .c and .h of one ampc run\"\n"
                  "#endif\n\n", P, P, (unsigned long long)interface_hash);
    buf_puts(o, "#include <math.h>\n#include <string.h>\n\n");

    emit_arena_bytes_fn(e, o, arena_printf(c->arena, "%s_arena_bytes", p), arena_printf(c->arena, "%s_ARENA_BYTES", P));

    buf_printf(o, "const char *%s_strerror(int code)\n{\n    return amp_strerror(code);\n}\n\n", p);
    emit_weights_source(e, o);
    if (c->opts->embed_weights && !emit_embedded_weights(e, o))
        return;

    emit_prepare(e, o);
    buf_printf(o, "int %s_forward_prepared(const void *prepared, const %s_params *params, const %s_inputs *inputs,\n",
               p, p, p);
    buf_printf(o, "    %*s %s_outputs *outputs, const %s_dims *dims, void *arena, size_t arena_bytes)\n{\n",
               (int)strlen(p), "", p, p);
    buf_puts(o, "    if (!params || !inputs || !outputs || !dims || (!arena && arena_bytes))\n"
                "        return AMP_ERR_NULL_ARG;\n");
    buf_printf(o, "    if (prepared && (((const uint64_t *)prepared)[0] != %s_PREPARED_MAGIC ||\n"
                  "                     ((const uint64_t *)prepared)[1] != %d))\n"
                  "        return AMP_ERR_BAD_PREPARED;\n", P, e->nprep);
    emit_body(e, o, "params->", c->nsyms ? arena_printf(c->arena, "%s_arena_bytes(dims)", p) : arena_printf(c->arena, "%s_ARENA_BYTES", P));
    buf_puts(o, "    return AMP_OK;\n}\n\n");
    buf_printf(o, "int %s_forward(const %s_params *params, const %s_inputs *inputs, %s_outputs *outputs,\n", p, p, p, p);
    buf_printf(o, "    %*s const %s_dims *dims, void *arena, size_t arena_bytes)\n{\n", (int)strlen(p), "", p);
    buf_printf(o, "    return %s_forward_prepared(NULL, params, inputs, outputs, dims, arena, arena_bytes);\n}\n", p);
}

/* The body of an entry point running graph e->g: dims, checks, the names
 * of caller memory (parameters read through `params`, "params->" or
 * "s->"), the arena's slots, then every node. */
void emit_body(Emitter *e, Buf *o, const char *params, const char *arena_bytes_fn)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const char *P = e->PREFIX;
    e->out = o;
    bool uses_rc = false;
    for (int i = 0; i < g->nodes->len; i++) {
        Node *n = VEC_AT(g->nodes, i);
        uses_rc |= op_returns_status(n);
    }
    if (uses_rc)
        buf_puts(o, "    int rc;\n");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "    const int64_t %s = dims->%s;\n", c->sym_names[i], c->sym_names[i]);
    emit_dim_checks(e, "return AMP_ERR_BAD_DIM;");
    if (g->nslots && c->nsyms)
        /* the dims are in range, so only a sum of slots past 2^62 saturates */
        buf_printf(o, "    const size_t arena_need = %s;\n    if (arena_need == SIZE_MAX)\n        return AMP_ERR_BAD_DIM;\n"
                      "    if (arena_bytes < arena_need)\n        return AMP_ERR_ARENA_TOO_SMALL;\n", arena_bytes_fn);
    else if (g->nslots)
        buf_printf(o, "    if (arena_bytes < %s)\n        return AMP_ERR_ARENA_TOO_SMALL;\n", arena_bytes_fn);
    else
        buf_puts(o, "    (void)arena; /* the model needs no scratch memory */\n");

    /* caller memory: check every pointer once, then name it */
    for (int i = 0; i < g->inputs->len; i++) {
        Value *v = VEC_AT(g->inputs, i);
        if (v->nuses)
            buf_printf(o, "    const %s *const %s = inputs->%s; /* %s */\n", dtype_c_type(v->type.dtype), e->cname[v->id],
                       e->member[v->id], type_comment(e, &v->type));
    }
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        if (v->nuses)
            buf_printf(o, "    const %s *const %s = %s%s; /* %s: %s */\n", dtype_c_type(v->type.dtype),
                       e->cname[v->id], params, e->member[v->id], v->name, type_comment(e, &v->type));
    }
    const char **ptrs = arena_alloc(c->arena, sizeof *ptrs * (size_t)(g->values->len + 1));
    int nptrs = 0;
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        if ((v->kind != V_TEMP && v->nuses) || v->is_output)
            ptrs[nptrs++] = v->is_output ? arena_printf(c->arena, "outputs->%s", e->member[v->id]) : e->cname[v->id];
    }
    emit_null_checks(o, ptrs, nptrs);

    /* the arena's slots, each padded to a cache line */
    for (int s = 0; s < g->nslots; s++) {
        if (s == 0) {
            buf_puts(o, "    unsigned char *const slot0 = arena;\n");
            continue;
        }
        Vec *sizes = VEC_AT(g->slot_sizes, s - 1);
        Buf size;
        buf_init(&size, c->arena);
        for (int k = 0; k < sizes->len - 1; k++)
            buf_printf(&size, "%s_MAX_(%s, ", P, poly_c(e, VEC_AT(sizes, k)));
        buf_puts(&size, poly_c(e, VEC_AT(sizes, sizes->len - 1)));
        for (int k = 0; k < sizes->len - 1; k++)
            buf_puts(&size, ")");
        buf_printf(o, "    unsigned char *const slot%d = slot%d + %s_PAD_(%s);\n", s, s - 1, P, size.data);
    }

    for (int i = 0; i < g->nodes->len; i++) {
        emit_node(e, VEC_AT(g->nodes, i));
        if (e->after_node)
            e->after_node(e, VEC_AT(g->nodes, i));
    }
}

static bool valid_prefix(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* --prefix, or the model's name in lower case. */
const char *model_prefix(Ctx *c)
{
    if (c->opts->prefix)
        return c->opts->prefix;
    char *p = arena_strdup(c->arena, c->graph->name);
    for (char *q = p; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return p;
}

/* An emitter for graph g: the prefix, the dims' names, and the C names of
 * the values the caller sees (struct members and locals alike). */
static bool init_emitter(Ctx *c, Emitter *e, Graph *g, bool training)
{
    *e = (Emitter){.c = c, .g = g, .used = strmap_new(c->arena), .next_suffix = strmap_new(c->arena)};
    e->prefix = model_prefix(c);
    e->PREFIX = upper(c, e->prefix);
    Buf dp;
    buf_init(&dp, c->arena);
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(&dp, "%s%s", i ? ", " : "", c->sym_names[i]);
    e->dim_params = dp.data;
    for (int i = 0; i < c->nsyms; i++) {
        if (name_taken(e, c->sym_names[i])) {
            error_at(c, g->dim_locs[i], "dimension name '%s' is reserved in the emitted C; choose another name",
                     c->sym_names[i]);
            return false;
        }
        strmap_put(e->used, c->sym_names[i], (void *)1);
        e->macro_names[i] = arena_printf(c->arena, "(int64_t)(%s)", c->sym_names[i]);
    }
    for (int i = 0; i < g->nslots; i++)
        strmap_put(e->used, arena_printf(c->arena, "slot%d", i), (void *)1);
    e->cname = arena_alloc(c->arena, (size_t)(g->values->len + 1) * sizeof *e->cname);
    e->member = arena_alloc(c->arena, (size_t)(g->values->len + 1) * sizeof *e->member);
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        if (v->kind != V_TEMP)
            e->cname[v->id] = c_ident(e, v->name);
    }
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        e->cname[v->id] = c_ident(e, v->output_name);
    }
    for (int i = 0; i < g->values->len; i++) {
        Value *v = VEC_AT(g->values, i);
        e->member[v->id] = e->cname[v->id];
        v->cname = e->cname[v->id];
    }
    if (training) {
        /* the training step's own locals: a caller's tensor of that name
         * keeps its struct member but gets another local name */
        static const char *const train_locals[] = {"s", "grad_seed", "found_inf", "h", "norm2", "clip"};
        StrMap *is_local = strmap_new(c->arena);
        for (size_t i = 0; i < sizeof train_locals / sizeof train_locals[0]; i++)
            strmap_put(is_local, train_locals[i], (void *)1);
        for (int i = 0; i < g->values->len; i++) {
            Value *v = VEC_AT(g->values, i);
            if (e->cname[v->id] && strmap_get(is_local, e->cname[v->id]))
                e->cname[v->id] = c_ident(e, e->cname[v->id]);
        }
        for (size_t i = 0; i < sizeof train_locals / sizeof train_locals[0]; i++)
            strmap_put(e->used, train_locals[i], (void *)1);
    }
    return true;
}

bool emit_c(Ctx *c, Output *out)
{
    Emitter e, te;
    if (c->opts->prefix && !valid_prefix(c->opts->prefix)) {
        error_plain(c, "--prefix '%s' is not a C identifier", c->opts->prefix);
        return false;
    }
    /* libamprt's names are amp_* and its macros AMP_*: a model prefixed
     * amp would define amp_strerror over the runtime's (it then calls
     * itself), and AMP_ macros from the upper-case prefix could clash too */
    const char *p = model_prefix(c);
    if (strncasecmp(p, "amp", 3) == 0 && (p[3] == '\0' || p[3] == '_')) {
        if (c->opts->prefix)
            error_plain(c, "--prefix '%s' collides with the runtime's amp_ names; choose another", p);
        else
            error_at(c, c->graph->name_loc,
                     "the prefix '%s' from the model's name collides with the runtime's amp_ names; "
                     "rename the model or give --prefix", p);
        return false;
    }
    if (!init_emitter(c, &e, c->graph, false))
        return false;
    e.train = NULL;
    if (c->train_graph) {
        if (!init_emitter(c, &te, c->train_graph, true))
            return false;
        e.train = &te;
    }

    collect_rule_sources(&e, c->graph);
    collect_rule_sources(&e, c->train_graph);
    te.rule_sources = e.rule_sources;
    te.nrule_sources = e.nrule_sources;
    Buf sources;
    buf_init(&sources, c->arena);
    for (int k = 0; k < e.nrule_sources; k++)
        buf_printf(&sources, " *   %s %s\n", k ? "           " : "rules from:", comment_safe(c, e.rule_sources[k]));

    /* provenance: stable across runs, machines and directories */
    uint64_t h = fnv1a(0xcbf29ce484222325ull, c->main_file->text, c->main_file->len);
    const char *policy = c->policy->builtin ? policy_display_name(c) : comment_name(c, c->opts->policy_path);
    char *prov = arena_printf(c->arena,
        "/* Generated by ampc %s; do not edit.\n"
        " *   model:  %s (%s, fnv1a64 %016llx)\n"
        " *   target: %s, autocast low dtype %s, %s\n"
        " *   command: ampc %s -t %s%s%s%s\n"
        "%s"
        " */\n",
        AMPC_VERSION, comment_name(c, c->main_file->name), c->graph->name, (unsigned long long)h, c->policy->target,
        dtype_name(c->policy->low), policy, comment_name(c, c->main_file->name), c->policy->target,
        c->opts->prefix ? " --prefix " : "", c->opts->prefix ? c->opts->prefix : "", autocast_options_text(c),
        sources.data);

    plan_prepared(&e);
    e.prep_magic = fnv1a(h, prov, strlen(prov));
    buf_init(&out->c_file, c->arena);
    buf_init(&out->h_file, c->arena);
    uint64_t interface_hash = emit_header(&e, &out->h_file, prov);
    emit_source(&e, &out->c_file, prov, interface_hash);
    if (e.train)
        emit_train_source(e.train, &e, &out->c_file);
    return c->nerrors == 0;
}
