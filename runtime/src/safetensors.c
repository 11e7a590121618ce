/*
 * safetensors.c - reading Hugging Face safetensors weight files.
 *
 * Layout: u64 little-endian N, N bytes of UTF-8 JSON, then the data region.
 * The JSON is parsed by a small strict parser that knows the schema, so it
 * never recurses and nests at most three deep (file object, tensor object,
 * shape/offsets array):
 *
 *   { "NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
 *     "__metadata__": {"KEY": "VALUE", ...}, ... }
 *
 * Rules enforced (the same as the reference Rust implementation, except
 * where marked "stricter"):
 *  - N > 0, N <= 100 MiB (the reference: 100 000 000), 8 + N <= length;
 *  - the header is valid UTF-8 and one JSON object, optionally surrounded
 *    by JSON whitespace (writers pad it with spaces), nothing after it;
 *  - strings: escapes \" \\ \/ \b \f \n \r \t \uXXXX (surrogate pairs
 *    combined, lone surrogates rejected), no raw control characters;
 *  - numbers: non-negative integers without sign, fraction, exponent or
 *    leading zeros, below 2^64 (shape dims below 2^63);
 *  - no duplicate key in any object (compared after unescaping);
 *  - a tensor has exactly dtype, shape and data_offsets (stricter: unknown
 *    keys are rejected, as is "__metadata__": null); __metadata__ maps
 *    strings to strings;
 *  - dtype is one amprt has (F64 F32 BF16 F16 I64 I32 BOOL);
 *  - shape has at most 8 dims; begin <= end; the product of the dims times
 *    the dtype size, computed left to right without overflowing u64, equals
 *    end - begin;
 *  - sorted by (begin, end), the tensors tile the data region exactly:
 *    each begins where the previous ended, the first at 0, the last ends at
 *    the end of the file;
 *  - (amprt's own) a "crc32c" metadata value, when present, is 8 lowercase
 *    hex digits and equals the CRC-32C (Castagnoli) of the data region:
 *    amp_st_write stores it, so a flipped bit in a checkpoint's data is
 *    found (AMP_ERR_WEIGHTS_CHECKSUM).  Files without it (PyTorch's) are
 *    read as before.
 *
 * amp_st_open reads no more than the file's header says it holds: it
 * refuses what is not a regular file (a directory, /dev/zero, a FIFO,
 * opened without blocking) with AMP_ERR_WEIGHTS_NOT_FILE, checks the size
 * field against the file's size, reads and parses the header, checks that
 * the tensors it names end exactly at the end of the file, and only then
 * reads the data, so time and memory are bounded by the file's size and a
 * bad header costs at most its own bytes.
 *
 * A runtime built with AMPRT_NO_STDIO (make BARE=1) has no files: no
 * amp_st_open, only amp_st_parse of bytes in memory (or the weights
 * ampc --embed-weights puts in the C).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fstat, O_CLOEXEC */
#endif

#include "amprt.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if !defined(AMPRT_NO_STDIO)
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#endif

#define ST_MAX_HEADER ((uint64_t)100 * 1024 * 1024)
#define ST_MAX_DIMS 8

struct amp_st_file {
    const unsigned char *data; /* the data region */
    uint64_t data_len;
    int count;
    amp_st_tensor *tensors; /* sorted by (begin, end, name) */
    char *pool;             /* decoded names, NUL-terminated */
    unsigned char *owned;   /* the file's bytes, when amp_st_open read them */
};

/* A metadata key, kept only to find duplicates. */
typedef struct {
    const char *s;
    size_t len;
} st_span;

typedef struct {
    const unsigned char *p, *end;
    int status;               /* first error, or AMP_OK */
    char *pool;               /* room for every decoded string (<= N + 1) */
    size_t pool_used;
    amp_st_tensor *tensors;   /* growing table */
    size_t ntensors, cap_tensors;
    st_span *keys;            /* metadata keys of the current object */
    size_t nkeys, cap_keys;
    int has_crc;              /* __metadata__ holds "crc32c" */
    uint32_t crc;             /* its value */
} st_parser;

static int fail(st_parser *ps, int status)
{
    if (ps->status == AMP_OK)
        ps->status = status;
    return -1;
}

static void skip_ws(st_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Skips whitespace, then consumes c or fails. */
static int expect(st_parser *ps, unsigned char c)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != c)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER);
    ps->p++;
    return 0;
}

/* After whitespace: 1 and consumed if the next byte is c, else 0. */
static int accept(st_parser *ps, unsigned char c)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

/* Length of the valid UTF-8 sequence at s (s < end, *s >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s, const unsigned char *end)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

static int hex4(st_parser *ps, uint32_t *out)
{
    uint32_t v = 0;
    if (ps->end - ps->p < 4)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER);
    for (int i = 0; i < 4; i++) {
        unsigned char c = *ps->p++;
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else
            return fail(ps, AMP_ERR_WEIGHTS_HEADER);
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

/* Parses a JSON string (after whitespace), unescaped into the pool with a
 * NUL after it. The decoded text plus its NUL never takes more bytes than
 * the quoted source, so a pool of N + 1 bytes holds every string. */
static int parse_string(st_parser *ps, const char **out, size_t *out_len)
{
    char *dst;
    if (expect(ps, '"'))
        return -1;
    dst = ps->pool + ps->pool_used;
    *out = dst;
    for (;;) {
        unsigned char c;
        if (ps->p >= ps->end)
            return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* unterminated */
        c = *ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* raw control character */
        } else if (c >= 0x80) {
            size_t n = utf8_seq(ps->p, ps->end);
            if (n == 0)
                return fail(ps, AMP_ERR_WEIGHTS_HEADER);
            memcpy(dst, ps->p, n);
            dst += n;
            ps->p += n;
        } else if (c != '\\') {
            *dst++ = (char)c;
            ps->p++;
        } else {
            uint32_t cp;
            ps->p++;
            if (ps->p >= ps->end)
                return fail(ps, AMP_ERR_WEIGHTS_HEADER);
            c = *ps->p++;
            switch (c) {
            case '"': *dst++ = '"'; continue;
            case '\\': *dst++ = '\\'; continue;
            case '/': *dst++ = '/'; continue;
            case 'b': *dst++ = '\b'; continue;
            case 'f': *dst++ = '\f'; continue;
            case 'n': *dst++ = '\n'; continue;
            case 'r': *dst++ = '\r'; continue;
            case 't': *dst++ = '\t'; continue;
            case 'u': break;
            default: return fail(ps, AMP_ERR_WEIGHTS_HEADER);
            }
            if (hex4(ps, &cp))
                return -1;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* lone low surrogate */
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                /* a high surrogate: \uDC00-\uDFFF must follow */
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
                    return fail(ps, AMP_ERR_WEIGHTS_HEADER);
                ps->p += 2;
                if (hex4(ps, &lo))
                    return -1;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return fail(ps, AMP_ERR_WEIGHTS_HEADER);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            /* UTF-8 of cp: at most 4 bytes from a 6- or 12-byte escape */
            if (cp < 0x80) {
                *dst++ = (char)cp;
            } else if (cp < 0x800) {
                *dst++ = (char)(0xc0 | (cp >> 6));
                *dst++ = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                *dst++ = (char)(0xe0 | (cp >> 12));
                *dst++ = (char)(0x80 | ((cp >> 6) & 0x3f));
                *dst++ = (char)(0x80 | (cp & 0x3f));
            } else {
                *dst++ = (char)(0xf0 | (cp >> 18));
                *dst++ = (char)(0x80 | ((cp >> 12) & 0x3f));
                *dst++ = (char)(0x80 | ((cp >> 6) & 0x3f));
                *dst++ = (char)(0x80 | (cp & 0x3f));
            }
        }
    }
    *dst = '\0';
    *out_len = (size_t)(dst - *out);
    ps->pool_used += *out_len + 1;
    return 0;
}

/* A non-negative integer below 2^64 (after whitespace). */
static int parse_u64(st_parser *ps, uint64_t *out)
{
    uint64_t v = 0;
    const unsigned char *start;
    skip_ws(ps);
    start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        unsigned d = (unsigned)(*ps->p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* >= 2^64 */
        v = v * 10 + d;
        ps->p++;
    }
    if (ps->p == start)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* no digit: '-', '+', '.', ... */
    if (*start == '0' && ps->p - start > 1)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* leading zero */
    /* a fraction or exponent would be a syntax error at the caller's ',' or
     * ']' anyway; say so here */
    if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))
        return fail(ps, AMP_ERR_WEIGHTS_HEADER);
    *out = v;
    return 0;
}

static int str_eq(const char *s, size_t len, const char *lit)
{
    return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

static int dtype_of(const char *s, size_t len, amp_dtype *out)
{
    static const struct {
        const char *name;
        amp_dtype dtype;
    } table[] = {
        { "F64", AMP_F64 }, { "F32", AMP_F32 }, { "BF16", AMP_BF16 }, { "F16", AMP_F16 },
        { "I64", AMP_I64 }, { "I32", AMP_I32 }, { "BOOL", AMP_BOOL },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (str_eq(s, len, table[i].name)) {
            *out = table[i].dtype;
            return 1;
        }
    }
    return 0;
}

/* The value of a tensor entry: {"dtype": .., "shape": [..], "data_offsets": [b, e]}. */
static int parse_tensor(st_parser *ps, amp_st_tensor *t)
{
    int seen_dtype = 0, seen_shape = 0, seen_offsets = 0;
    uint64_t numel = 1, nbytes;
    if (expect(ps, '{'))
        return -1;
    if (accept(ps, '}'))
        return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* every field is required */
    do {
        const char *key;
        size_t key_len, mark = ps->pool_used;
        if (parse_string(ps, &key, &key_len) || expect(ps, ':'))
            return -1;
        ps->pool_used = mark; /* the key is not kept */
        if (str_eq(key, key_len, "dtype")) {
            const char *v;
            size_t v_len;
            if (seen_dtype++)
                return fail(ps, AMP_ERR_WEIGHTS_HEADER);
            if (parse_string(ps, &v, &v_len))
                return -1;
            ps->pool_used = mark;
            if (!dtype_of(v, v_len, &t->dtype))
                return fail(ps, AMP_ERR_WEIGHTS_DTYPE);
        } else if (str_eq(key, key_len, "shape")) {
            if (seen_shape++ || expect(ps, '['))
                return fail(ps, AMP_ERR_WEIGHTS_HEADER);
            if (!accept(ps, ']')) {
                do {
                    uint64_t d;
                    if (parse_u64(ps, &d))
                        return -1;
                    if (t->ndim == ST_MAX_DIMS || d > (uint64_t)INT64_MAX)
                        return fail(ps, AMP_ERR_WEIGHTS_SHAPE);
                    t->shape[t->ndim++] = (int64_t)d;
                } while (accept(ps, ','));
                if (expect(ps, ']'))
                    return -1;
            }
        } else if (str_eq(key, key_len, "data_offsets")) {
            if (seen_offsets++ || expect(ps, '[') || parse_u64(ps, &t->begin) || expect(ps, ',') ||
                parse_u64(ps, &t->end) || expect(ps, ']'))
                return fail(ps, AMP_ERR_WEIGHTS_HEADER);
        } else {
            return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* unknown key */
        }
    } while (accept(ps, ','));
    if (expect(ps, '}'))
        return -1;
    if (!seen_dtype || !seen_shape || !seen_offsets)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER);
    if (t->begin > t->end)
        return fail(ps, AMP_ERR_WEIGHTS_OFFSETS);
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = (uint64_t)t->shape[i];
        if (d != 0 && numel > UINT64_MAX / d)
            return fail(ps, AMP_ERR_WEIGHTS_SHAPE); /* element count overflows */
        numel *= d;
    }
    nbytes = numel * amp_dtype_size(t->dtype);
    if (nbytes / amp_dtype_size(t->dtype) != numel || nbytes != t->end - t->begin)
        return fail(ps, AMP_ERR_WEIGHTS_SHAPE);
    return 0;
}

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static int cmp_span(const void *a, const void *b)
{
    const st_span *x = a, *y = b;
    return cmp_bytes(x->s, x->len, y->s, y->len);
}

static int cmp_name(const void *a, const void *b)
{
    const amp_st_tensor *x = a, *y = b;
    return cmp_bytes(x->name, x->name_len, y->name, y->name_len);
}

static int cmp_offsets(const void *a, const void *b)
{
    const amp_st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return cmp_name(a, b);
}

/* The "crc32c" metadata value: exactly 8 lowercase hex digits. */
static int parse_crc(st_parser *ps, const char *v, size_t len)
{
    uint32_t crc = 0;
    if (len != 8)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER);
    for (size_t i = 0; i < 8; i++) {
        char c = v[i];
        if (c >= '0' && c <= '9')
            crc = crc << 4 | (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            crc = crc << 4 | (uint32_t)(c - 'a' + 10);
        else
            return fail(ps, AMP_ERR_WEIGHTS_HEADER);
    }
    ps->has_crc = 1;
    ps->crc = crc;
    return 0;
}

/* The value of "__metadata__": an object of strings (keys kept until the
 * duplicate check, values dropped). */
static int parse_metadata(st_parser *ps)
{
    if (expect(ps, '{'))
        return -1;
    ps->nkeys = 0;
    if (!accept(ps, '}')) {
        do {
            const char *k, *v;
            size_t k_len, v_len, mark;
            if (parse_string(ps, &k, &k_len) || expect(ps, ':'))
                return -1;
            mark = ps->pool_used;
            if (parse_string(ps, &v, &v_len))
                return -1;
            if (str_eq(k, k_len, "crc32c") && parse_crc(ps, v, v_len))
                return -1;
            ps->pool_used = mark;
            if (ps->nkeys == ps->cap_keys) {
                size_t cap = ps->cap_keys ? 2 * ps->cap_keys : 16;
                st_span *k2 = realloc(ps->keys, cap * sizeof *k2);
                if (!k2)
                    return fail(ps, AMP_ERR_OUT_OF_MEMORY);
                ps->keys = k2;
                ps->cap_keys = cap;
            }
            ps->keys[ps->nkeys].s = k;
            ps->keys[ps->nkeys].len = k_len;
            ps->nkeys++;
        } while (accept(ps, ','));
        if (expect(ps, '}'))
            return -1;
    }
    if (ps->nkeys > 1) {
        qsort(ps->keys, ps->nkeys, sizeof *ps->keys, cmp_span);
        for (size_t i = 1; i < ps->nkeys; i++)
            if (cmp_span(&ps->keys[i - 1], &ps->keys[i]) == 0)
                return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* duplicate key */
    }
    return 0;
}

/* The header: one object of tensors and at most one __metadata__. */
static int parse_header(st_parser *ps)
{
    int seen_metadata = 0;
    if (expect(ps, '{'))
        return -1;
    if (!accept(ps, '}')) {
        do {
            const char *name;
            size_t name_len, mark = ps->pool_used;
            amp_st_tensor *t;
            if (parse_string(ps, &name, &name_len) || expect(ps, ':'))
                return -1;
            if (str_eq(name, name_len, "__metadata__")) {
                ps->pool_used = mark;
                if (seen_metadata++)
                    return fail(ps, AMP_ERR_WEIGHTS_HEADER);
                if (parse_metadata(ps))
                    return -1;
                ps->pool_used = mark; /* metadata keys are dropped too */
                continue;
            }
            if (ps->ntensors == ps->cap_tensors) {
                size_t cap = ps->cap_tensors ? 2 * ps->cap_tensors : 16;
                amp_st_tensor *t2;
                if (cap > INT_MAX)
                    return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* count must fit an int */
                t2 = realloc(ps->tensors, cap * sizeof *t2);
                if (!t2)
                    return fail(ps, AMP_ERR_OUT_OF_MEMORY);
                ps->tensors = t2;
                ps->cap_tensors = cap;
            }
            t = &ps->tensors[ps->ntensors++];
            memset(t, 0, sizeof *t);
            t->name = name;
            t->name_len = name_len;
            if (parse_tensor(ps, t))
                return -1;
        } while (accept(ps, ','));
        if (expect(ps, '}'))
            return -1;
    }
    skip_ws(ps);
    if (ps->p != ps->end)
        return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* trailing garbage */
    if (ps->ntensors > 1) {
        qsort(ps->tensors, ps->ntensors, sizeof *ps->tensors, cmp_name);
        for (size_t i = 1; i < ps->ntensors; i++)
            if (cmp_name(&ps->tensors[i - 1], &ps->tensors[i]) == 0)
                return fail(ps, AMP_ERR_WEIGHTS_HEADER); /* duplicate name */
    }
    return 0;
}

uint32_t amp_st_crc32c(uint32_t crc, const void *bytes, size_t len)
{
    /* reflected Castagnoli polynomial 0x82f63b78, four bits at a time */
    static const uint32_t nibble[16] = {
        0x00000000u, 0x105ec76fu, 0x20bd8edeu, 0x30e349b1u, 0x417b1dbcu, 0x5125dad3u, 0x61c69362u, 0x7198540du,
        0x82f63b78u, 0x92a8fc17u, 0xa24bb5a6u, 0xb21572c9u, 0xc38d26c4u, 0xd3d3e1abu, 0xe330a81au, 0xf36e6f75u,
    };
    const unsigned char *p = bytes;
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ nibble[crc & 15];
        crc = (crc >> 4) ^ nibble[crc & 15];
    }
    return ~crc;
}

/* The size field of b[0..8), checked against ST_MAX_HEADER and the
 * len bytes there are: AMP_OK and *n, or an error status. */
static int header_size(const unsigned char *b, uint64_t len, uint64_t *n)
{
    uint64_t v = 0;
    if (len < 8)
        return AMP_ERR_WEIGHTS_TRUNCATED;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    if (v == 0 || v > ST_MAX_HEADER)
        return AMP_ERR_WEIGHTS_HEADER;
    if (v > len - 8)
        return AMP_ERR_WEIGHTS_TRUNCATED;
    *n = v;
    return AMP_OK;
}

/* Parses the header of b (8 + n bytes of it are there) and checks that the
 * tensors tile a data region from 0; *data_len: where the last one ends.
 * On success the parser holds the tensors and the pool, which the caller
 * takes or frees; on an error both are freed. */
static int parse_layout(const unsigned char *b, uint64_t n, st_parser *ps, uint64_t *data_len)
{
    uint64_t pos = 0;
    memset(ps, 0, sizeof *ps);
    ps->p = b + 8;
    ps->end = b + 8 + n;
    ps->status = AMP_OK;
    ps->pool = malloc((size_t)n + 1);
    if (!ps->pool)
        return AMP_ERR_OUT_OF_MEMORY;
    parse_header(ps);
    free(ps->keys);
    if (ps->status == AMP_OK && ps->ntensors > 0) {
        qsort(ps->tensors, ps->ntensors, sizeof *ps->tensors, cmp_offsets);
        /* each tensor starts where the previous one ended */
        for (size_t i = 0; i < ps->ntensors && ps->status == AMP_OK; i++) {
            if (ps->tensors[i].begin != pos)
                fail(ps, AMP_ERR_WEIGHTS_OFFSETS); /* an overlap or a gap */
            pos = ps->tensors[i].end;
        }
    }
    if (ps->status != AMP_OK) {
        free(ps->tensors);
        free(ps->pool);
        return ps->status;
    }
    *data_len = pos;
    return AMP_OK;
}

int amp_st_parse(const void *bytes, size_t len, amp_st_file **out)
{
    const unsigned char *b = bytes;
    uint64_t n = 0, pos = 0, data_len;
    st_parser ps;
    amp_st_file *f;
    int status;

    if (!out)
        return AMP_ERR_NULL_ARG;
    *out = NULL;
    if (!bytes && len > 0)
        return AMP_ERR_NULL_ARG;
    status = header_size(b, len, &n);
    if (status != AMP_OK)
        return status;
    status = parse_layout(b, n, &ps, &pos);
    if (status != AMP_OK)
        return status;
    data_len = (uint64_t)(len - 8) - n;
    if (pos > data_len)
        status = AMP_ERR_WEIGHTS_TRUNCATED; /* data past the end of the file */
    else if (pos != data_len)
        status = AMP_ERR_WEIGHTS_OFFSETS; /* bytes after the last tensor */
    else if (ps.has_crc && amp_st_crc32c(0, b + 8 + n, (size_t)pos) != ps.crc)
        status = AMP_ERR_WEIGHTS_CHECKSUM;
    f = status == AMP_OK ? malloc(sizeof *f) : NULL;
    if (status == AMP_OK && !f)
        status = AMP_ERR_OUT_OF_MEMORY;
    if (status != AMP_OK) {
        free(ps.tensors);
        free(ps.pool);
        return status;
    }
    f->data = b + 8 + n;
    f->data_len = pos;
    f->count = (int)ps.ntensors;
    f->tensors = ps.tensors;
    f->pool = ps.pool;
    f->owned = NULL;
    *out = f;
    return AMP_OK;
}

#if !defined(AMPRT_NO_STDIO)
/* Reads exactly len bytes at the file's position: AMP_OK, or
 * AMP_ERR_WEIGHTS_TRUNCATED when the file ends first (it shrank since
 * fstat), AMP_ERR_IO on a read error. */
static int read_exactly(int fd, unsigned char *dst, uint64_t len)
{
    while (len > 0) {
        size_t chunk = len < ((size_t)1 << 30) ? (size_t)len : (size_t)1 << 30;
        ssize_t got = read(fd, dst, chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return AMP_ERR_IO;
        if (got == 0)
            return AMP_ERR_WEIGHTS_TRUNCATED;
        dst += got;
        len -= (uint64_t)got;
    }
    return AMP_OK;
}

/* The file's bytes, read in the order amp_st_open's comment gives. */
static int read_weights(int fd, unsigned char **out, size_t *out_len)
{
    struct stat st;
    unsigned char head[8], *buf, *nbuf;
    uint64_t size, n, data_len;
    st_parser ps;
    int status;

    if (fstat(fd, &st) != 0)
        return AMP_ERR_IO;
    if (!S_ISREG(st.st_mode))
        return AMP_ERR_WEIGHTS_NOT_FILE;
    size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (size < 8)
        return AMP_ERR_WEIGHTS_TRUNCATED;
    status = read_exactly(fd, head, 8);
    if (status == AMP_OK)
        status = header_size(head, size, &n);
    if (status != AMP_OK)
        return status;
    buf = malloc((size_t)(8 + n));
    if (!buf)
        return AMP_ERR_OUT_OF_MEMORY;
    memcpy(buf, head, 8);
    status = read_exactly(fd, buf + 8, n);
    if (status == AMP_OK)
        status = parse_layout(buf, n, &ps, &data_len);
    if (status == AMP_OK) {
        free(ps.tensors);
        free(ps.pool);
        if (data_len > size - 8 - n)
            status = AMP_ERR_WEIGHTS_TRUNCATED; /* the file ends before the data does */
        else if (data_len < size - 8 - n)
            status = AMP_ERR_WEIGHTS_OFFSETS; /* bytes after the last tensor: not read */
        else if (size > SIZE_MAX)
            status = AMP_ERR_OUT_OF_MEMORY;
    }
    if (status == AMP_OK) {
        nbuf = realloc(buf, (size_t)size);
        if (!nbuf)
            status = AMP_ERR_OUT_OF_MEMORY;
        else
            buf = nbuf;
    }
    if (status == AMP_OK)
        status = read_exactly(fd, buf + 8 + n, data_len);
    if (status != AMP_OK) {
        free(buf);
        return status;
    }
    *out = buf;
    *out_len = (size_t)size;
    return AMP_OK;
}

int amp_st_open(const char *path, amp_st_file **out)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    int fd, status;

    if (!out)
        return AMP_ERR_NULL_ARG;
    *out = NULL;
    if (!path)
        return AMP_ERR_NULL_ARG;
    /* O_NONBLOCK: opening a FIFO without a writer returns at once (and is
     * then refused) instead of waiting for one; regular files ignore it */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return AMP_ERR_IO;
    status = read_weights(fd, &buf, &len);
    if (close(fd) != 0 && status == AMP_OK)
        status = AMP_ERR_IO;
    if (status == AMP_OK)
        status = amp_st_parse(buf, len, out);
    if (status != AMP_OK) {
        free(buf);
        return status;
    }
    (*out)->owned = buf;
    return AMP_OK;
}
#endif /* !AMPRT_NO_STDIO */

int amp_st_count(const amp_st_file *f)
{
    return f ? f->count : 0;
}

const amp_st_tensor *amp_st_get(const amp_st_file *f, int i)
{
    if (!f || i < 0 || i >= f->count)
        return NULL;
    return &f->tensors[i];
}

const amp_st_tensor *amp_st_find(const amp_st_file *f, const char *name)
{
    size_t len;
    if (!f || !name)
        return NULL;
    len = strlen(name);
    for (int i = 0; i < f->count; i++)
        if (f->tensors[i].name_len == len && memcmp(f->tensors[i].name, name, len) == 0)
            return &f->tensors[i];
    return NULL;
}

const void *amp_st_data(const amp_st_file *f, const amp_st_tensor *t)
{
    if (!f || !t)
        return NULL;
    return f->data + (size_t)t->begin;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

int amp_st_load(const amp_st_file *f, const char *name, amp_dtype dtype, int ndim,
                const int64_t *shape, void *dst)
{
    const amp_st_tensor *t;
    size_t nbytes, esize;
    if (!f || !name)
        return AMP_ERR_NULL_ARG;
    t = amp_st_find(f, name);
    if (!t)
        return AMP_ERR_WEIGHTS_MISSING;
    if (t->dtype != dtype)
        return AMP_ERR_WEIGHTS_DTYPE;
    if (ndim != t->ndim)
        return AMP_ERR_WEIGHTS_SHAPE;
    if (ndim > 0 && !shape)
        return AMP_ERR_NULL_ARG;
    for (int i = 0; i < ndim; i++)
        if (shape[i] != t->shape[i])
            return AMP_ERR_WEIGHTS_SHAPE;
    nbytes = (size_t)(t->end - t->begin);
    if (nbytes == 0)
        return AMP_OK;
    if (!dst)
        return AMP_ERR_NULL_ARG;
    memcpy(dst, f->data + (size_t)t->begin, nbytes);
    esize = amp_dtype_size(dtype);
    if (esize > 1 && !host_is_little_endian()) {
        unsigned char *p = dst;
        for (size_t off = 0; off < nbytes; off += esize)
            for (size_t i = 0; i < esize / 2; i++) {
                unsigned char tmp = p[off + i];
                p[off + i] = p[off + esize - 1 - i];
                p[off + esize - 1 - i] = tmp;
            }
    }
    return AMP_OK;
}

void amp_st_close(amp_st_file *f)
{
    if (!f)
        return;
    free(f->tensors);
    free(f->pool);
    free(f->owned);
    free(f);
}
