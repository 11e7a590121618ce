/* emit_weights.c: the model's weights in the emitted C - loading them from
 * a safetensors file by state_dict name (<prefix>_load_weights), saving
 * them (<prefix>_save_weights), and --embed-weights's const arrays.
 *
 * Requires: the inference graph's emitter (its parameters, their C
 * names).  Produces: the declarations in the header and the definitions
 * in the source.
 *
 * Loading and saving walk one static table, <prefix>_weights_table: per
 * parameter and buffer its name, dtype, shape, its place in the storage
 * (each on its own 64-byte lines) and its member of <prefix>_params.  The
 * checks, the dtype conversion and the messages naming each bad tensor
 * are libamprt's (amp_st_read_params, runtime/src/st_params.c), which
 * --embed-weights calls too, so a file the program would refuse ampc
 * refuses with the same words, and a training checkpoint deploys as it
 * is: its gradients, optimizer state and scalars are recognised and left
 * out.
 */
#include "emit.h"

#include <amprt.h>
#include <stdlib.h>
#include <string.h>

/* Weights load by state_dict name when every parameter has a fixed shape
 * (a parameter sized by a run-time dim has no place in a fixed layout). */
bool weights_loadable(Emitter *e)
{
    Graph *g = e->g;
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        int64_t n;
        for (int d = 0; d < v->type.shape.ndim; d++)
            if (!poly_is_const(v->type.shape.dims[d], &n))
                return false;
    }
    return g->params->len > 0;
}

int64_t const_bytes_padded(Emitter *e, const Value *v)
{
    int64_t n = 0;
    poly_is_const(value_bytes(e->c, v), &n);
    return (n + 63) / 64 * 64;
}

/* <PREFIX>_WEIGHTS_BYTES: every parameter and buffer, each padded. */
static int64_t weights_bytes(Emitter *e)
{
    int64_t total = 0;
    for (int i = 0; i < e->g->params->len; i++)
        total += const_bytes_padded(e, VEC_AT(e->g->params, i));
    return total;
}

void emit_weights_decls(Emitter *e, Buf *h)
{
    if (!weights_loadable(e))
        return;
    const char *p = e->prefix;
    buf_printf(h, "/* Bytes of storage <prefix>_load_weights fills: every parameter and buffer. */\n");
    buf_printf(h, "#define %s_WEIGHTS_BYTES ((size_t)%lld)\n\n", e->PREFIX, (long long)weights_bytes(e));
    buf_puts(h, "/* Loads every parameter and buffer from a safetensors file (what PyTorch's\n"
                " * safetensors.torch.save_file(model.state_dict()) writes, what\n"
                " * <prefix>_save_weights writes, or a training checkpoint of <prefix>_save)\n"
                " * by its state_dict name into `storage`, and points `params` at them.\n"
                " * As load_state_dict(strict=True): a tensor missing from the file, one of\n"
                " * another shape, or one the model does not have is an error (a\n"
                " * checkpoint's gradients, optimizer state and scalars are not: they are\n"
                " * skipped); an f64, f32, bf16 or f16 tensor converts to the parameter's\n"
                " * dtype, rounding to nearest even.  Nothing is changed on an error.\n"
                " * The _ex form also writes, into message[0..message_bytes), a text naming\n"
                " * each bad tensor (\"tensor 'fc1.weight' is f32[128, 32] in the file, but\n"
                " * the model declares f32[128, 64]\"), one a line. */\n");
    buf_puts(h, "#if !defined(AMPRT_NO_STDIO) /* a runtime without files (make BARE=1): _load_weights_bytes */\n");
    buf_printf(h, "int %s_load_weights(const char *path, void *storage, size_t storage_bytes, %s_params *params);\n", p, p);
    buf_printf(h, "int %s_load_weights_ex(const char *path, void *storage, size_t storage_bytes, %s_params *params,\n", p, p);
    buf_printf(h, "%*s char *message, size_t message_bytes);\n", (int)strlen(p) + 20, "");
    buf_puts(h, "/* Writes the parameters and buffers `params` points at to a safetensors\n"
                " * file under their state_dict names, atomically (amp_st_write): what\n"
                " * <prefix>_load_weights, --embed-weights and PyTorch's load_state_dict\n"
                " * read.  A training program passes <prefix>_train_params's view. */\n");
    buf_printf(h, "int %s_save_weights(const %s_params *params, const char *path);\n", p, p);
    buf_puts(h, "#endif\n");
    buf_puts(h, "/* <prefix>_load_weights_ex from the `len` bytes of a safetensors file in\n"
                " * memory (amp_st_parse), in every runtime, the one without files too. */\n");
    buf_printf(h, "int %s_load_weights_bytes(const void *bytes, size_t len, void *storage, size_t storage_bytes,\n", p);
    buf_printf(h, "%*s %s_params *params, char *message, size_t message_bytes);\n\n", (int)strlen(p) + 23, "", p);
}

/* The table: one row per parameter and buffer, in declaration order. */
static void emit_weights_table(Emitter *e, Buf *o)
{
    Graph *g = e->g;
    const char *p = e->prefix;
    buf_puts(o, "/* The parameters and buffers: state_dict name, dtype, shape, where the\n"
                " * elements go in the storage, and which member of the params points there. */\n");
    buf_printf(o, "static const amp_st_param %s_weights_table[%d] = {\n", p, g->params->len);
    int64_t at = 0;
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        Buf shape;
        buf_init(&shape, e->c->arena);
        for (int d = 0; d < v->type.shape.ndim; d++)
            buf_printf(&shape, "%s%s", d ? ", " : "", poly_c(e, v->type.shape.dims[d]));
        buf_printf(o, "    {\"%s\", %s, %d, {%s}, %lld, offsetof(%s_params, %s)},\n", v->name,
                   dtype_amp_enum(v->type.dtype), v->type.shape.ndim, v->type.shape.ndim ? shape.data : "0",
                   (long long)at, p, e->cname[v->id]);
        at += const_bytes_padded(e, v);
    }
    buf_puts(o, "};\n\n");
}

void emit_weights_source(Emitter *e, Buf *o)
{
    if (!weights_loadable(e))
        return;
    const char *p = e->prefix;
    int n = e->g->params->len;
    emit_weights_table(e, o);
    buf_printf(o, "int %s_load_weights_bytes(const void *bytes, size_t len, void *storage, size_t storage_bytes,\n", p);
    buf_printf(o, "%*s %s_params *params, char *message, size_t message_bytes)\n{\n", (int)strlen(p) + 23, "", p);
    buf_puts(o, "    if (!params)\n        return AMP_ERR_NULL_ARG;\n");
    buf_printf(o, "    return amp_st_parse_params(bytes, len, %s_weights_table, %d, storage, storage_bytes, params, message,\n"
                  "                               message_bytes);\n}\n\n", p, n);
    buf_puts(o, "#if !defined(AMPRT_NO_STDIO) /* files: not in a runtime built without them (make BARE=1) */\n");
    buf_printf(o, "int %s_load_weights(const char *path, void *storage, size_t storage_bytes, %s_params *params)\n{\n"
                  "    return %s_load_weights_ex(path, storage, storage_bytes, params, NULL, 0);\n}\n\n", p, p, p);
    buf_printf(o, "int %s_load_weights_ex(const char *path, void *storage, size_t storage_bytes, %s_params *params,\n", p, p);
    buf_printf(o, "%*s char *message, size_t message_bytes)\n{\n", (int)strlen(p) + 20, "");
    buf_puts(o, "    if (!params)\n        return AMP_ERR_NULL_ARG;\n");
    buf_printf(o, "    return amp_st_read_params(path, %s_weights_table, %d, storage, storage_bytes, params, message,\n"
                  "                              message_bytes);\n}\n\n", p, n);
    buf_printf(o, "int %s_save_weights(const %s_params *params, const char *path)\n{\n", p, p);
    buf_printf(o, "    amp_st_entry entries[%d];\n", n);
    buf_puts(o, "    if (!params || !path)\n        return AMP_ERR_NULL_ARG;\n");
    buf_printf(o, "    for (int i = 0; i < %d; i++) {\n        const amp_st_param *t = &%s_weights_table[i];\n", n, p);
    buf_puts(o, "        entries[i].name = t->name;\n        entries[i].dtype = t->dtype;\n"
                "        entries[i].ndim = t->ndim;\n        memcpy(entries[i].shape, t->shape, sizeof t->shape);\n"
                "        /* the member is a `const T *`, read as the `const void *` it converts to */\n"
                "        memcpy(&entries[i].data, (const unsigned char *)params + t->pointer, sizeof entries[i].data);\n"
                "    }\n");
    buf_printf(o, "    return amp_st_write(path, entries, %d);\n}\n", n);
    buf_puts(o, "#endif /* !AMPRT_NO_STDIO */\n\n");
}

/* ---- --embed-weights: the parameters as const arrays ------------------------
 *
 * The file is read by amp_st_read_params into a temporary storage laid out
 * as <prefix>_load_weights lays it out, with the same checks, conversions
 * and messages (every problem reported, each on its own error line), and
 * the storage is printed exactly: f32 and f64 as hex floats, bf16 and f16
 * as their bits. */

static void embed_element(Buf *o, DType t, const unsigned char *p)
{
    switch (t) {
    case DT_F64: {
        double v;
        memcpy(&v, p, 8);
        if (v != v)
            buf_puts(o, "NAN");
        else if (v == 1.0 / 0.0 || v == -1.0 / 0.0)
            buf_puts(o, v > 0 ? "INFINITY" : "-INFINITY");
        else
            buf_printf(o, "%a", v);
        break;
    }
    case DT_F32: {
        float v;
        memcpy(&v, p, 4);
        if (v != v)
            buf_puts(o, "NAN");
        else if (v == 1.0f / 0.0f || v == -1.0f / 0.0f)
            buf_puts(o, v > 0 ? "INFINITY" : "-INFINITY");
        else
            buf_printf(o, "%af", (double)v);
        break;
    }
    case DT_BF16:
    case DT_F16: {
        uint16_t b;
        memcpy(&b, p, 2);
        buf_printf(o, "{0x%04x}", b);
        break;
    }
    case DT_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        if (v == INT64_MIN)
            buf_puts(o, "INT64_MIN");
        else
            buf_printf(o, "%lld", (long long)v);
        break;
    }
    case DT_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        buf_printf(o, "%ld", (long)v);
        break;
    }
    default:
        buf_printf(o, "%u", p[0]);
        break;
    }
}

static amp_dtype amp_dtype_of(DType t)
{
    switch (t) {
    case DT_F64: return AMP_F64;
    case DT_F32: return AMP_F32;
    case DT_BF16: return AMP_BF16;
    case DT_F16: return AMP_F16;
    case DT_I64: return AMP_I64;
    case DT_I32: return AMP_I32;
    default: return AMP_BOOL;
    }
}

void emit_embedded_decl(Emitter *e, Buf *h)
{
    const char *path = e->c->opts->embed_weights;
    if (path)
        buf_printf(h, "/* The parameters and buffers embedded from %s (--embed-weights). */\n"
                      "const %s_params *%s_embedded_params(void);\n\n", comment_safe(e->c, base_name(path)), e->prefix,
                   e->prefix);
}

/* Reads the file into `storage` (weights_bytes(e) of them) as the emitted
 * loader would; false, with every problem reported, when it cannot. */
static bool embed_read(Emitter *e, unsigned char *storage)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const char *path = c->opts->embed_weights;
    amp_st_param *table = arena_alloc(c->arena, (size_t)g->params->len * sizeof *table);
    memset(table, 0, (size_t)g->params->len * sizeof *table);
    int64_t at = 0;
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        table[i].name = v->name;
        table[i].dtype = amp_dtype_of(v->type.dtype);
        table[i].ndim = v->type.shape.ndim;
        for (int d = 0; d < v->type.shape.ndim; d++)
            poly_is_const(v->type.shape.dims[d], &table[i].shape[d]);
        table[i].offset = (size_t)at;
        at += const_bytes_padded(e, v);
    }
    size_t cap = 1 << 16;
    char *message = arena_alloc(c->arena, cap);
    int rc = amp_st_read_params(path, table, g->params->len, storage, (size_t)at, NULL, message, cap);
    if (rc == AMP_OK)
        return true;
    for (char *line = message; *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        error_plain(c, "--embed-weights %s: %s", path, line);
        line = eol ? eol + 1 : line + strlen(line);
    }
    return false;
}

bool emit_embedded_weights(Emitter *e, Buf *o)
{
    Ctx *c = e->c;
    Graph *g = e->g;
    const char *path = c->opts->embed_weights;
    if (!weights_loadable(e)) {
        error_plain(c, "--embed-weights: model '%s' has %s", c->graph->name,
                    g->params->len ? "a parameter sized by a run-time dimension" : "no parameters to embed");
        return false;
    }
    int64_t total = weights_bytes(e);
    unsigned char *storage = malloc(total ? (size_t)total : 1);
    if (!storage) {
        error_plain(c, "--embed-weights %s: out of memory (%lld bytes)", path, (long long)total);
        return false;
    }
    if (!embed_read(e, storage)) {
        free(storage);
        return false;
    }
    buf_printf(o, "/* The parameters and buffers of %s, embedded by --embed-weights. */\n",
               comment_safe(c, base_name(path)));
    const unsigned char *data = storage;
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        size_t size = (size_t)dtype_size(v->type.dtype);
        int64_t bytes = 0;
        poly_is_const(value_bytes(c, v), &bytes);
        size_t n = (size_t)bytes / size;
        buf_printf(o, "static const %s %s_embedded_%s[%zu] = { /* %s: %s */\n   ", dtype_c_type(v->type.dtype), e->prefix,
                   e->cname[v->id], n ? n : 1, v->name, type_comment(e, &v->type));
        for (size_t k = 0; k < n; k++) {
            buf_puts(o, " ");
            embed_element(o, v->type.dtype, data + k * size);
            buf_puts(o, k + 1 < n ? (k % 8 == 7 ? ",\n   " : ",") : "");
        }
        if (n == 0)
            buf_puts(o, " 0");
        buf_puts(o, "\n};\n");
        data += const_bytes_padded(e, v);
    }
    buf_printf(o, "\nconst %s_params *%s_embedded_params(void)\n{\n    static const %s_params params = {\n", e->prefix,
               e->prefix, e->prefix);
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        buf_printf(o, "        %s_embedded_%s,\n", e->prefix, e->cname[v->id]);
    }
    buf_puts(o, "    };\n    return &params;\n}\n\n");
    free(storage);
    return true;
}
