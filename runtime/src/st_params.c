/*
 * st_params.c - a model's parameters and buffers from a safetensors file
 * (amp_st_load_params): what the emitted <prefix>_load_weights (a file,
 * amp_st_read_params) and <prefix>_load_weights_bytes (bytes in memory,
 * amp_st_parse_params) and ampc's --embed-weights do with a weights file
 * or a training checkpoint.
 *
 * The rules are load_state_dict(strict=True)'s:
 *  - every entry of the caller's table must be in the file, under its
 *    name, with its shape; a floating-point tensor (f64, f32, bf16, f16)
 *    converts to a floating-point parameter's dtype as Tensor.copy_ does:
 *    to f32 by C's conversion (round to nearest even), to bf16 and f16
 *    through f32, as PyTorch converts a double to them, and to f64 exactly;
 *    any other dtype must be the parameter's own;
 *  - a tensor of the file that is no entry's is unexpected, unless it is a
 *    training checkpoint's state (what <prefix>_save writes besides the
 *    parameters): grad.NAME and optimizer.NAME.SLOT for a tensor NAME of
 *    the file (SLOT one of torch.optim's momentum_buffer, exp_avg, exp_avg_sq,
 *    max_exp_avg_sq) and the scalars optimizer.lr, optimizer.step,
 *    scaler.* and train.* that the checkpoint holds.  So a checkpoint
 *    deploys as it is, and a weights-only file (<prefix>_save_weights)
 *    loads the same.
 *
 * Everything is checked before anything is written: on an error the
 * storage and the pointers are as they were, and the message names every
 * problem, one a line, as load_state_dict's RuntimeError lists its missing
 * keys, unexpected keys and size mismatches.  Bytes of a tensor's name
 * that are not printable ASCII appear as \xHH, so the message can be
 * printed as it is.
 */
#include "amprt.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- the message: whole lines while they fit, then "... and N more" ---- */

typedef struct {
    char *s;
    size_t cap, len;
    int problems, omitted;
    int first; /* the status of the first problem */
} report;

/* One problem: its status, and its line appended when it fits (with room
 * left for the closing "... and N more" line). */
static void problem(report *r, int status, const char *text)
{
    enum { TAIL = 32 };
    size_t n = strlen(text);
    if (r->problems++ == 0)
        r->first = status;
    if (!r->s || r->cap == 0)
        return;
    size_t sep = r->len ? 1 : 0;
    if (r->omitted || r->len + sep + n + 1 + TAIL > r->cap) {
        /* the first line is always kept, cut if it must be */
        if (r->len == 0) {
            size_t keep = n < r->cap - 1 ? n : r->cap - 1;
            memcpy(r->s, text, keep);
            r->s[keep] = '\0';
            r->len = keep;
        } else {
            r->omitted++;
        }
        return;
    }
    if (sep)
        r->s[r->len++] = '\n';
    memcpy(r->s + r->len, text, n + 1);
    r->len += n;
}

static void report_end(report *r)
{
    char tail[48];
    if (!r->s || !r->omitted)
        return;
    snprintf(tail, sizeof tail, "\n... and %d more", r->omitted);
    if (r->len + strlen(tail) + 1 <= r->cap) {
        memcpy(r->s + r->len, tail, strlen(tail) + 1);
        r->len += strlen(tail);
    }
}

/* A line under construction, cut at its size (the report cuts it again). */
typedef struct {
    char s[640];
    size_t len;
} line;

static void put(line *l, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (l->len >= sizeof l->s - 1)
        return;
    va_start(ap, fmt);
    n = vsnprintf(l->s + l->len, sizeof l->s - l->len, fmt, ap);
    va_end(ap);
    l->len = n < 0 ? l->len : l->len + (size_t)n;
    if (l->len > sizeof l->s - 1)
        l->len = sizeof l->s - 1;
}

/* A name as the message shows it: at most 200 bytes, quoted, escaped. */
static void put_name(line *l, const char *name, size_t len)
{
    put(l, "'");
    for (size_t i = 0; i < len && i < 200; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            put(l, "%c", c);
        else
            put(l, "\\x%02x", c);
    }
    put(l, len > 200 ? "...'" : "'");
}

static void put_type(line *l, amp_dtype t, int ndim, const int64_t *shape)
{
    put(l, "%s[", amp_dtype_name(t));
    for (int d = 0; d < ndim; d++)
        put(l, "%s%lld", d ? ", " : "", (long long)shape[d]);
    put(l, "]");
}

/* ---- which tensors a file may hold --------------------------------------- */

static int is_float(amp_dtype t)
{
    return t == AMP_F64 || t == AMP_F32 || t == AMP_BF16 || t == AMP_F16;
}

/* The entry named exactly name[0..len), or -1. */
static int entry_of(const amp_st_param *table, int n, const char *name, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return i;
    return -1;
}

/* Whether the file holds a tensor named exactly name[0..len). */
static int in_file(const amp_st_file *f, const char *name, size_t len)
{
    for (int i = 0; i < amp_st_count(f); i++) {
        const amp_st_tensor *t = amp_st_get(f, i);
        if (t->name_len == len && memcmp(t->name, name, len) == 0)
            return 1;
    }
    return 0;
}

static int has_prefix(const char *s, size_t len, const char *prefix)
{
    size_t p = strlen(prefix);
    return len >= p && memcmp(s, prefix, p) == 0;
}

/* A training checkpoint's own tensor (docs/training.md lists them): one
 * of its scalars, or the gradient or optimizer state of a tensor the file
 * holds (a tensor the model does not have is reported once, not with
 * each of its states). */
static int training_state(const amp_st_file *f, const char *name, size_t len)
{
    static const char *const scalars[] = {
        "optimizer.lr", "optimizer.step", "scaler.scale", "scaler.growth_tracker",
        "train.last_step_skipped", "train.skipped_steps", "train.micro_step", "train.grad_live",
        "train.rng_seed", "train.rng_offset",
    };
    static const char *const slots[] = {".momentum_buffer", ".exp_avg", ".exp_avg_sq", ".max_exp_avg_sq"};
    for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++)
        if (strlen(scalars[k]) == len && memcmp(scalars[k], name, len) == 0)
            return 1;
    if (has_prefix(name, len, "grad."))
        return in_file(f, name + 5, len - 5);
    if (has_prefix(name, len, "optimizer."))
        for (size_t k = 0; k < sizeof slots / sizeof slots[0]; k++) {
            size_t s = strlen(slots[k]);
            if (len > 10 + s && memcmp(name + len - s, slots[k], s) == 0 && in_file(f, name + 10, len - 10 - s))
                return 1;
        }
    return 0;
}

/* One entry against the file: AMP_OK, or a problem reported. */
static int check_entry(const amp_st_file *f, const amp_st_param *p, report *r)
{
    const amp_st_tensor *t = amp_st_find(f, p->name);
    line l = {{0}, 0};
    int status = AMP_OK, same_shape;
    if (!t) {
        put(&l, "no tensor ");
        put_name(&l, p->name, strlen(p->name));
        put(&l, " in the file (the model's ");
        put_type(&l, p->dtype, p->ndim, p->shape);
        put(&l, ")");
        problem(r, AMP_ERR_WEIGHTS_MISSING, l.s);
        return AMP_ERR_WEIGHTS_MISSING;
    }
    same_shape = t->ndim == p->ndim;
    for (int d = 0; same_shape && d < p->ndim; d++)
        same_shape = t->shape[d] == p->shape[d];
    if (t->dtype != p->dtype && !(is_float(t->dtype) && is_float(p->dtype)))
        status = AMP_ERR_WEIGHTS_DTYPE;
    else if (!same_shape)
        status = AMP_ERR_WEIGHTS_SHAPE;
    if (status == AMP_OK)
        return AMP_OK;
    put(&l, "tensor ");
    put_name(&l, t->name, t->name_len);
    put(&l, " is ");
    put_type(&l, t->dtype, t->ndim, t->shape);
    put(&l, " in the file, but the model declares ");
    put_type(&l, p->dtype, p->ndim, p->shape);
    if (status == AMP_ERR_WEIGHTS_DTYPE)
        put(&l, " (only floating-point tensors convert)");
    problem(r, status, l.s);
    return status;
}

/* ---- the conversion ------------------------------------------------------ */

/* Element i of a little-endian array of `size`-byte elements, as bits. */
static uint64_t bits_at(const unsigned char *p, size_t size, size_t i)
{
    uint64_t v = 0;
    for (size_t b = size; b-- > 0;)
        v = v << 8 | p[i * size + b];
    return v;
}

static double f64_of(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static float f32_of(uint64_t bits)
{
    uint32_t u = (uint32_t)bits;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* n elements of floating-point dtype `from` (file bytes) into `to`. */
static void convert(const unsigned char *src, amp_dtype from, void *dst, amp_dtype to, size_t n)
{
    size_t size = amp_dtype_size(from);
    for (size_t i = 0; i < n; i++) {
        uint64_t b = bits_at(src, size, i);
        double d = 0;
        float v = 0;
        switch (from) {
        case AMP_F64: d = f64_of(b); v = (float)d; break;
        case AMP_F32: v = f32_of(b); d = v; break;
        case AMP_BF16: v = amp_bf16_to_f32((amp_bf16){(uint16_t)b}); d = v; break;
        default: v = amp_f16_to_f32((amp_f16){(uint16_t)b}); d = v; break;
        }
        switch (to) {
        case AMP_F64: ((double *)dst)[i] = d; break;
        case AMP_F32: ((float *)dst)[i] = v; break;
        case AMP_BF16: ((amp_bf16 *)dst)[i] = amp_f32_to_bf16(v); break;
        default: ((amp_f16 *)dst)[i] = amp_f32_to_f16(v); break;
        }
    }
}

/* ---- the load ------------------------------------------------------------ */

/* The table itself: names, ndims and dtypes valid, and every entry inside
 * storage_bytes, its end rounded up to the 64-byte line (the layout of the
 * emitted code, each entry on its own cache lines).  AMP_OK or a status. */
static int table_ok(const amp_st_param *table, int n, size_t storage_bytes)
{
    for (int i = 0; i < n; i++) {
        const amp_st_param *p = &table[i];
        size_t bytes;
        if (!p->name || p->ndim < 0 || p->ndim > 8 || (unsigned)p->dtype > AMP_C128)
            return AMP_ERR_BAD_DIM;
        bytes = amp_dtype_size(p->dtype);
        for (int d = 0; d < p->ndim; d++) {
            if (p->shape[d] < 0)
                return AMP_ERR_BAD_DIM;
            if (p->shape[d] > 0 && bytes > SIZE_MAX / (uint64_t)p->shape[d])
                return AMP_ERR_ARENA_TOO_SMALL;
            bytes *= (size_t)p->shape[d];
        }
        if (p->offset > storage_bytes || bytes > storage_bytes - p->offset ||
            (p->offset + bytes + 63) / 64 * 64 > storage_bytes)
            return AMP_ERR_ARENA_TOO_SMALL;
    }
    return AMP_OK;
}

/* The arguments but the file: AMP_OK or a status. */
static int arguments_ok(const amp_st_param *table, int n, const void *storage, size_t storage_bytes)
{
    if (n > 0 && (!table || !storage))
        return AMP_ERR_NULL_ARG;
    if (n < 0)
        return AMP_ERR_BAD_DIM;
    return table_ok(table, n, storage_bytes);
}

/* The status's own text as the message, when nothing more is known. */
static int failed(int status, char *message, size_t message_bytes)
{
    if (message && message_bytes)
        snprintf(message, message_bytes, "%s", amp_strerror(status));
    return status;
}

int amp_st_load_params(const amp_st_file *f, const amp_st_param *table, int n, void *storage, size_t storage_bytes,
                       void *pointers, char *message, size_t message_bytes)
{
    report r = {message, message_bytes, 0, 0, 0, AMP_OK};
    int rc;
    if (message && message_bytes)
        message[0] = '\0';
    rc = !f ? AMP_ERR_NULL_ARG : arguments_ok(table, n, storage, storage_bytes);
    if (rc != AMP_OK)
        return failed(rc, message, message_bytes);
    for (int i = 0; i < n; i++)
        check_entry(f, &table[i], &r);
    for (int k = 0; k < amp_st_count(f); k++) {
        const amp_st_tensor *t = amp_st_get(f, k);
        line l = {{0}, 0};
        if (entry_of(table, n, t->name, t->name_len) >= 0 || training_state(f, t->name, t->name_len))
            continue;
        put(&l, "tensor ");
        put_name(&l, t->name, t->name_len);
        put(&l, " is not a parameter or buffer of the model (nor a training checkpoint's state)");
        problem(&r, AMP_ERR_WEIGHTS_UNEXPECTED, l.s);
    }
    report_end(&r);
    if (r.problems)
        return r.first;
    for (int i = 0; i < n; i++) {
        const amp_st_param *p = &table[i];
        const amp_st_tensor *t = amp_st_find(f, p->name);
        unsigned char *dst = (unsigned char *)storage + p->offset;
        size_t numel = (size_t)(t->end - t->begin) / amp_dtype_size(t->dtype);
        if (t->dtype == p->dtype) {
            rc = amp_st_load(f, p->name, p->dtype, p->ndim, p->shape, dst);
            if (rc != AMP_OK)
                return failed(rc, message, message_bytes); /* not reached: checked above */
        } else {
            convert(amp_st_data(f, t), t->dtype, dst, p->dtype, numel);
        }
        if (pointers) {
            /* the caller's member is a `const T *`: object pointers share
             * one representation on every platform amprt runs on */
            const void *at = dst;
            memcpy((unsigned char *)pointers + p->pointer, &at, sizeof at);
        }
    }
    return AMP_OK;
}

int amp_st_parse_params(const void *bytes, size_t len, const amp_st_param *table, int n, void *storage,
                        size_t storage_bytes, void *pointers, char *message, size_t message_bytes)
{
    amp_st_file *f;
    int rc = !bytes ? AMP_ERR_NULL_ARG : arguments_ok(table, n, storage, storage_bytes);
    if (rc != AMP_OK)
        return failed(rc, message, message_bytes);
    rc = amp_st_parse(bytes, len, &f);
    if (rc != AMP_OK)
        return failed(rc, message, message_bytes);
    rc = amp_st_load_params(f, table, n, storage, storage_bytes, pointers, message, message_bytes);
    amp_st_close(f);
    return rc;
}

/* A runtime without files (AMPRT_NO_STDIO, make BARE=1) has no amp_st_open
 * to read one with. */
#if !defined(AMPRT_NO_STDIO)
int amp_st_read_params(const char *path, const amp_st_param *table, int n, void *storage, size_t storage_bytes,
                       void *pointers, char *message, size_t message_bytes)
{
    amp_st_file *f;
    int rc;
    /* the arguments first: a bad call reads no file */
    rc = !path ? AMP_ERR_NULL_ARG : arguments_ok(table, n, storage, storage_bytes);
    if (rc != AMP_OK)
        return failed(rc, message, message_bytes);
    rc = amp_st_open(path, &f);
    if (rc != AMP_OK)
        return failed(rc, message, message_bytes);
    rc = amp_st_load_params(f, table, n, storage, storage_bytes, pointers, message, message_bytes);
    amp_st_close(f);
    return rc;
}
#endif /* !AMPRT_NO_STDIO */
