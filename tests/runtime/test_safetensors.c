/*
 * test_safetensors.c - the safetensors reader (amp_st_*).
 *
 * Files are written byte by byte in the tests: an 8-byte little-endian
 * header size, the JSON, the data. Every rejection rule has a case, each
 * checked for its own status code and for *out left NULL. The last test
 * reads a file written from PyTorch tensors by /usr/bin/python3 (skipped,
 * saying why, when python3 or torch is missing).
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "amprt.h"

/* ---- building files ----------------------------------------------------- */

/* 8-byte size field `n` (not necessarily the JSON's length), the JSON, then
 * data_len bytes of data. The caller frees. */
static unsigned char *build_n(uint64_t n, const char *json, size_t json_len, const void *data, size_t data_len,
                              size_t *len)
{
    unsigned char *b = malloc(8 + json_len + data_len + 1);
    assert_non_null(b);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(n >> (8 * i));
    memcpy(b + 8, json, json_len);
    if (data_len)
        memcpy(b + 8 + json_len, data, data_len);
    *len = 8 + json_len + data_len;
    return b;
}

static unsigned char *build(const char *json, const void *data, size_t data_len, size_t *len)
{
    return build_n(strlen(json), json, strlen(json), data, data_len, len);
}

/* Parses json + data_len zero bytes, expects `status`; on success returns
 * the file (caller closes), otherwise NULL. */
static amp_st_file *parse_expect(const char *json, size_t data_len, int status)
{
    static const unsigned char zeros[256];
    size_t len;
    unsigned char *b;
    amp_st_file *f = (amp_st_file *)&f; /* anything but NULL: must be reset */
    int rc;
    assert_true(data_len <= sizeof zeros);
    b = build(json, zeros, data_len, &len);
    rc = amp_st_parse(b, len, &f);
    if (rc != status)
        print_error("header %s: got %d (%s), want %d\n", json, rc, amp_strerror(rc), status);
    assert_int_equal(rc, status);
    if (status != AMP_OK) {
        assert_null(f);
        free(b);
        return NULL;
    }
    assert_non_null(f);
    amp_st_close(f);
    free(b); /* the file points into b: closed first */
    return NULL;
}

/* A valid one-tensor entry, 4 bytes of data. */
#define T1 "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"

/* ---- a valid file --------------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void test_roundtrip(void **state)
{
    /* Listed out of data order, with metadata in the middle, whitespace
     * everywhere JSON allows it, and space padding after the object (what
     * the reference writer does to align the data). */
    static const char json[] =
        " \n{ \"b\" : { \"dtype\" : \"BF16\", \"shape\" : [ 3 ], \"data_offsets\" : [ 24 , 30 ] } ,\r\n"
        "\t\"__metadata__\": {\"format\": \"pt\", \"note\": \"a \\\"quoted\\\" \\u00e9\"},\n"
        " \"w\": {\"shape\": [2, 3], \"data_offsets\": [0, 24], \"dtype\": \"F32\"},\n"
        " \"s\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [30, 38]},\n"
        " \"m\": {\"dtype\": \"BOOL\", \"shape\": [2], \"data_offsets\": [38, 40]},\n"
        " \"e\": {\"dtype\": \"F16\", \"shape\": [0, 4], \"data_offsets\": [40, 40]},\n"
        " \"i\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [40, 44]},\n"
        " \"d\": {\"dtype\": \"F64\", \"shape\": [1, 1], \"data_offsets\": [44, 52]}}     ";
    unsigned char data[52];
    float w[6];
    amp_bf16 bias[3];
    int64_t s = 0;
    uint8_t m[2];
    int32_t i32 = 0;
    double d = 0;
    size_t len;
    unsigned char *b;
    amp_st_file *f = NULL;
    const amp_st_tensor *t;
    (void)state;

    for (int i = 0; i < 6; i++) {
        float v = (float)i * 0.5f - 1.0f;
        put_le(data + 4 * i, amp_bits_of_f32(v), 4);
    }
    put_le(data + 24, 0x3fc0, 2); /* bf16 1.5 */
    put_le(data + 26, 0xc010, 2); /* bf16 -2.25 */
    put_le(data + 28, 0x7fc0, 2); /* bf16 NaN */
    put_le(data + 30, (uint64_t)-5, 8);
    data[38] = 1;
    data[39] = 0;
    put_le(data + 40, (uint64_t)(uint32_t)INT32_MIN, 4);
    put_le(data + 44, 0x4008000000000000u, 8); /* 3.0 */

    b = build(json, data, sizeof data, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_OK);
    assert_non_null(f);
    assert_int_equal(amp_st_count(f), 7);

    /* numbered in data order; the zero-size "e" sorts before "i" at 40 */
    {
        static const char *const order[] = { "w", "b", "s", "m", "e", "i", "d" };
        for (int i = 0; i < 7; i++) {
            t = amp_st_get(f, i);
            assert_non_null(t);
            assert_string_equal(t->name, order[i]);
            assert_int_equal(t->name_len, 1);
            assert_ptr_equal(amp_st_find(f, order[i]), t);
        }
    }
    assert_null(amp_st_get(f, -1));
    assert_null(amp_st_get(f, 7));
    assert_null(amp_st_find(f, "__metadata__")); /* not a tensor */
    assert_null(amp_st_find(f, "x"));
    assert_null(amp_st_find(f, ""));

    t = amp_st_find(f, "w");
    assert_int_equal(t->dtype, AMP_F32);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    assert_int_equal(t->shape[2], 0); /* unused dims are 0 */
    assert_int_equal(t->begin, 0);
    assert_int_equal(t->end, 24);
    assert_ptr_equal(amp_st_data(f, t), b + len - sizeof data);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 2, (const int64_t[]){ 2, 3 }, w), AMP_OK);
    for (int i = 0; i < 6; i++)
        assert_true(w[i] == (float)i * 0.5f - 1.0f);

    t = amp_st_find(f, "b");
    assert_int_equal(t->dtype, AMP_BF16);
    assert_ptr_equal(amp_st_data(f, t), b + len - sizeof data + 24);
    assert_int_equal(amp_st_load(f, "b", AMP_BF16, 1, (const int64_t[]){ 3 }, bias), AMP_OK);
    assert_true(amp_bf16_to_f32(bias[0]) == 1.5f);
    assert_true(amp_bf16_to_f32(bias[1]) == -2.25f);
    assert_int_equal(bias[2].bits, 0x7fc0); /* bytes copied as they are */

    t = amp_st_find(f, "s"); /* a scalar: ndim 0, one element */
    assert_int_equal(t->ndim, 0);
    assert_int_equal(amp_st_load(f, "s", AMP_I64, 0, NULL, &s), AMP_OK);
    assert_int_equal(s, -5);
    assert_int_equal(amp_st_load(f, "m", AMP_BOOL, 1, (const int64_t[]){ 2 }, m), AMP_OK);
    assert_int_equal(m[0], 1);
    assert_int_equal(m[1], 0);
    /* zero elements: dst may be NULL */
    assert_int_equal(amp_st_load(f, "e", AMP_F16, 2, (const int64_t[]){ 0, 4 }, NULL), AMP_OK);
    assert_int_equal(amp_st_load(f, "i", AMP_I32, 1, (const int64_t[]){ 1 }, &i32), AMP_OK);
    assert_int_equal(i32, INT32_MIN);
    assert_int_equal(amp_st_load(f, "d", AMP_F64, 2, (const int64_t[]){ 1, 1 }, &d), AMP_OK);
    assert_true(d == 3.0);

    amp_st_close(f);
    free(b);
}

/* "{}" is a file without tensors: no data may follow. */
static void test_empty(void **state)
{
    amp_st_file *f = NULL;
    size_t len;
    unsigned char *b = build("{}", NULL, 0, &len);
    (void)state;
    assert_int_equal(amp_st_parse(b, len, &f), AMP_OK);
    assert_int_equal(amp_st_count(f), 0);
    assert_null(amp_st_get(f, 0));
    assert_null(amp_st_find(f, "a"));
    assert_int_equal(amp_st_load(f, "a", AMP_F32, 0, NULL, NULL), AMP_ERR_WEIGHTS_MISSING);
    amp_st_close(f);
    free(b);
    parse_expect("{}", 1, AMP_ERR_WEIGHTS_OFFSETS); /* one byte nobody owns */
    parse_expect("{\"__metadata__\":{}}", 0, AMP_OK);
}

/* ---- the size field ------------------------------------------------------- */

static void test_truncated_size(void **state)
{
    static const unsigned char bytes[8] = { 2, 0, 0, 0, 0, 0, 0, 0 };
    amp_st_file *f = (amp_st_file *)&f;
    (void)state;
    /* 0..7 bytes: the size field itself is cut */
    for (size_t n = 0; n < 8; n++) {
        f = (amp_st_file *)&f;
        assert_int_equal(amp_st_parse(bytes, n, &f), AMP_ERR_WEIGHTS_TRUNCATED);
        assert_null(f);
    }
    /* 8 bytes: size 2, but no header follows */
    assert_int_equal(amp_st_parse(bytes, 8, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    assert_null(f);
    assert_int_equal(amp_st_parse(NULL, 0, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    assert_int_equal(amp_st_parse(NULL, 8, &f), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_parse(bytes, 8, NULL), AMP_ERR_NULL_ARG);
}

static void test_header_size(void **state)
{
    static const char json[] = "{}";
    amp_st_file *f = (amp_st_file *)&f;
    size_t len;
    unsigned char *b;
    (void)state;

    /* size 0: an empty header is not a JSON object */
    b = build_n(0, json, 2, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_HEADER);
    assert_null(f);
    free(b);
    /* one byte past the end of the file */
    b = build_n(3, json, 2, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    free(b);
    /* far past the end, but within the 100 MiB limit */
    b = build_n(100u << 20, json, 2, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    free(b);
    /* over the limit (100 MiB + 1), and 2^64 - 1 (where 8 + N wraps) */
    b = build_n((100u << 20) + 1, json, 2, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_HEADER);
    free(b);
    b = build_n(UINT64_MAX, json, 2, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_HEADER);
    free(b);
    /* a NUL inside the header, after the object: trailing garbage */
    b = build_n(3, "{}", 3, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_HEADER);
    free(b);
    /* size 1: the header "{" with "}" then counted as data */
    b = build_n(1, json, 2, NULL, 0, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_HEADER);
    assert_null(f);
    free(b);
}

/* ---- the JSON --------------------------------------------------------------- */

static void test_bad_json(void **state)
{
    /* Each is malformed JSON, or JSON outside the schema; data is 4 bytes,
     * which T1 alone would make a valid file. */
    static const char *const cases[] = {
        " ",                    /* whitespace only */
        "[]",                   /* not an object */
        "\"a\"",                /* not an object */
        "{",                    /* unterminated object */
        "{" T1,                 /* unterminated after a member */
        "{" T1 "}x",            /* trailing garbage */
        "{" T1 "}{}",           /* two values */
        "{" T1 ",}",            /* trailing comma */
        "{," T1 "}",            /* leading comma */
        "{" T1 " " T1 "}",      /* missing comma (and a duplicate) */
        "{\"a\" {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* missing colon */
        "{'a':{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",   /* single quotes */
        "{a:{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",     /* bare key */
        "{\"a:{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",   /* unterminated key */
        "{\"a\":1}",            /* a tensor that is not an object */
        "{\"a\":null}",         /* literals are not in the format */
        "{\"a\":{}}",           /* no fields */
        "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}",                   /* missing dtype */
        "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}",               /* missing shape */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}",                        /* missing offsets */
        "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* dup field */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", /* unknown field */
        "{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}",      /* dtype not a string */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}",   /* shape not an array */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}}", /* nested deeper */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}",  /* trailing comma */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}",     /* one offset */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", /* three offsets */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", /* object not closed */
        /* numbers */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[+1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}",  /* leading zero */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", /* fraction */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", /* exponent */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}}", /* 2^64 */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,0x4]}}",
        /* strings */
        "{\"a\\x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",     /* bad escape */
        "{\"a\\u00g0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* bad hex */
        "{\"a\\u00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",   /* short \\u */
        "{\"\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",  /* lone high surrogate */
        "{\"\\udc00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",  /* lone low surrogate */
        "{\"\\ud800\\u0041\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* high + non-low */
        "{\"\\ud800\\n\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"a\tb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",     /* raw control char */
        "{\"a\nb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        /* UTF-8 */
        "{\"\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",         /* never valid */
        "{\"\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",         /* lone continuation */
        "{\"\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",     /* overlong '/' */
        "{\"\xe0\x80\xaf\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* overlong, 3 bytes */
        "{\"\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* encoded surrogate */
        "{\"\xf4\x90\x80\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* > U+10FFFF */
        "{\"\xe2\x82\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",     /* cut sequence */
        "\xef\xbb\xbf{" T1 "}",  /* a byte-order mark */
        /* __metadata__ */
        "{\"__metadata__\":{\"k\":1}," T1 "}",            /* value not a string */
        "{\"__metadata__\":{\"k\":{}}," T1 "}",
        "{\"__metadata__\":null," T1 "}",
        "{\"__metadata__\":[]," T1 "}",
        "{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}," T1 "}", /* duplicate key */
        "{\"__metadata__\":{\"k\":\"v\",\"\\u006b\":\"w\"}," T1 "}", /* equal once unescaped */
        "{\"__metadata__\":{},\"__metadata__\":{}," T1 "}", /* twice */
        "{\"__metadata__\":{\"k\"}," T1 "}",
        /* duplicate tensor names, also only once unescaped */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        parse_expect(cases[i], 4, AMP_ERR_WEIGHTS_HEADER);
    /* the valid file they are all variations of */
    parse_expect("{" T1 "}", 4, AMP_OK);
}

static void test_strings(void **state)
{
    /* \u escapes, a surrogate pair and raw UTF-8 decode to the same bytes;
     * an escaped NUL is kept, with name_len telling it apart. */
    static const char json[] =
        "{\"\\u00e9\\ud83d\\ude00/\\/\\\"\\\\\\b\\f\\n\\r\\t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
        "\"\xc3\xa9\xf0\x9f\x98\x80x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
        "\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
        "\"\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    amp_st_file *f = NULL;
    const amp_st_tensor *t;
    size_t len;
    unsigned char *b = build(json, NULL, 0, &len);
    (void)state;
    assert_int_equal(amp_st_parse(b, len, &f), AMP_OK);
    assert_int_equal(amp_st_count(f), 4);
    t = amp_st_find(f, "\xc3\xa9\xf0\x9f\x98\x80//\"\\\b\f\n\r\t");
    assert_non_null(t);
    assert_int_equal(t->name_len, 15);
    assert_non_null(amp_st_find(f, "\xc3\xa9\xf0\x9f\x98\x80x"));
    assert_non_null(amp_st_find(f, "")); /* the empty name is a name */
    assert_null(amp_st_find(f, "a")); /* "a\0b" is not "a" */
    for (int i = 0; i < 4; i++) {
        t = amp_st_get(f, i);
        if (t->name_len == 3) {
            assert_memory_equal(t->name, "a\0b", 4); /* NUL-terminated too */
            break;
        }
        assert_true(i < 3);
    }
    amp_st_close(f);
    free(b);
}

/* ---- dtypes, shapes, offsets ------------------------------------------------- */

static void test_dtypes(void **state)
{
    /* formats that exist but amprt has no storage for, and wrong spellings */
    static const char *const bad[] = { "U8", "I8", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2",
                                       "f32", "F32 ", "", "FLOAT32" };
    char json[256];
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"%s\",\"shape\":[1],\"data_offsets\":[0,4]}}", bad[i]);
        parse_expect(json, 4, AMP_ERR_WEIGHTS_DTYPE);
    }
    /* escaped, it is the same string */
    parse_expect("{\"a\":{\"dtype\":\"\\u0046\\u0033\\u0032\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, AMP_OK);
}

static void test_shapes(void **state)
{
    (void)state;
    /* 2 F32 are 8 bytes, not 4 */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, AMP_ERR_WEIGHTS_SHAPE);
    /* a scalar is one element, not zero */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]}}", 0, AMP_ERR_WEIGHTS_SHAPE);
    /* 2^40 x 2^40 elements: the count overflows u64 */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,0]}}", 0,
                 AMP_ERR_WEIGHTS_SHAPE);
    /* ... even with a zero dim after it (the product is taken left to right,
     * as the reference does) */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776,0],\"data_offsets\":[0,0]}}", 0,
                 AMP_ERR_WEIGHTS_SHAPE);
    /* but a zero first makes every product 0 */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,1099511627776,1099511627776],\"data_offsets\":[0,0]}}", 0,
                 AMP_OK);
    /* 2^62 F32 elements fit u64, their 2^64 bytes do not */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0,
                 AMP_ERR_WEIGHTS_SHAPE);
    /* a dim of 2^63 does not fit int64_t shape[] */
    parse_expect("{\"a\":{\"dtype\":\"BOOL\",\"shape\":[9223372036854775808,0],\"data_offsets\":[0,0]}}", 0,
                 AMP_ERR_WEIGHTS_SHAPE);
    /* 8 dims is the limit, 9 is over */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, AMP_OK);
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
                 AMP_ERR_WEIGHTS_SHAPE);
}

static void test_offsets(void **state)
{
    (void)state;
    /* overlapping: b starts inside a */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                 12, AMP_ERR_WEIGHTS_OFFSETS);
    /* the same bytes twice */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                 4, AMP_ERR_WEIGHTS_OFFSETS);
    /* a gap between two tensors */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                 12, AMP_ERR_WEIGHTS_OFFSETS);
    /* a gap at the start */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, AMP_ERR_WEIGHTS_OFFSETS);
    /* bytes after the last tensor */
    parse_expect("{" T1 "}", 5, AMP_ERR_WEIGHTS_OFFSETS);
    /* begin > end */
    parse_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, AMP_ERR_WEIGHTS_OFFSETS);
    /* past the end of the file: 4 bytes claimed, 3 there, or none */
    parse_expect("{" T1 "}", 3, AMP_ERR_WEIGHTS_TRUNCATED);
    parse_expect("{" T1 "}", 0, AMP_ERR_WEIGHTS_TRUNCATED);
    /* far past it, where begin + size would overflow a careless check */
    parse_expect("{\"a\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[18446744073709551614,18446744073709551615]}}",
                 0, AMP_ERR_WEIGHTS_OFFSETS);
    parse_expect("{" T1 ",\"b\":{\"dtype\":\"BOOL\",\"shape\":[9223372036854775807],"
                 "\"data_offsets\":[4,9223372036854775811]}}",
                 4, AMP_ERR_WEIGHTS_TRUNCATED);
    /* zero-size tensors anywhere in the tiling are fine */
    parse_expect("{\"z0\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}," T1 ","
                 "\"z1\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
                 "\"z2\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
                 4, AMP_OK);
    /* ... but not past the end */
    parse_expect("{" T1 ",\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[5,5]}}", 4,
                 AMP_ERR_WEIGHTS_OFFSETS);
}

/* ---- amp_st_load --------------------------------------------------------------- */

static void test_load_errors(void **state)
{
    static const char json[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
    unsigned char data[24] = { 0 };
    float dst[6] = { 7, 7, 7, 7, 7, 7 };
    amp_st_file *f = NULL;
    size_t len;
    unsigned char *b = build(json, data, sizeof data, &len);
    (void)state;
    assert_int_equal(amp_st_parse(b, len, &f), AMP_OK);
    assert_int_equal(amp_st_load(f, "v", AMP_F32, 2, (const int64_t[]){ 2, 3 }, dst), AMP_ERR_WEIGHTS_MISSING);
    assert_int_equal(amp_st_load(f, "W", AMP_F32, 2, (const int64_t[]){ 2, 3 }, dst), AMP_ERR_WEIGHTS_MISSING);
    assert_int_equal(amp_st_load(f, "w", AMP_F16, 2, (const int64_t[]){ 2, 3 }, dst), AMP_ERR_WEIGHTS_DTYPE);
    assert_int_equal(amp_st_load(f, "w", AMP_I32, 2, (const int64_t[]){ 2, 3 }, dst), AMP_ERR_WEIGHTS_DTYPE);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 2, (const int64_t[]){ 3, 2 }, dst), AMP_ERR_WEIGHTS_SHAPE);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 1, (const int64_t[]){ 6 }, dst), AMP_ERR_WEIGHTS_SHAPE);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 3, (const int64_t[]){ 2, 3, 1 }, dst), AMP_ERR_WEIGHTS_SHAPE);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, -1, NULL, dst), AMP_ERR_WEIGHTS_SHAPE);
    /* name first, then dtype, then shape */
    assert_int_equal(amp_st_load(f, "v", AMP_F16, 1, (const int64_t[]){ 6 }, dst), AMP_ERR_WEIGHTS_MISSING);
    assert_int_equal(amp_st_load(f, "w", AMP_F16, 1, (const int64_t[]){ 6 }, dst), AMP_ERR_WEIGHTS_DTYPE);
    for (int i = 0; i < 6; i++)
        assert_true(dst[i] == 7.0f); /* nothing written on error */
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 2, NULL, dst), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 2, (const int64_t[]){ 2, 3 }, NULL), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_load(NULL, "w", AMP_F32, 2, (const int64_t[]){ 2, 3 }, dst), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_load(f, NULL, AMP_F32, 2, (const int64_t[]){ 2, 3 }, dst), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_load(f, "w", AMP_F32, 2, (const int64_t[]){ 2, 3 }, dst), AMP_OK);
    assert_true(dst[0] == 0.0f);
    /* NULL-tolerant accessors */
    assert_int_equal(amp_st_count(NULL), 0);
    assert_null(amp_st_get(NULL, 0));
    assert_null(amp_st_find(NULL, "w"));
    assert_null(amp_st_find(f, NULL));
    assert_null(amp_st_data(NULL, amp_st_get(f, 0)));
    assert_null(amp_st_data(f, NULL));
    amp_st_close(f);
    amp_st_close(NULL);
    free(b);
}

/* ---- amp_st_open ------------------------------------------------------------------ */

/* A fresh temporary path (the file is created empty). */
static void temp_path(char *buf, size_t size)
{
    const char *dir = getenv("TMPDIR");
    int fd;
    snprintf(buf, size, "%s/test_safetensors.XXXXXX", dir && *dir ? dir : "/tmp");
    fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

static void write_file(const char *path, const void *bytes, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static void test_open(void **state)
{
    static const char json[] = "{\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ";
    static const unsigned char data[8] = { 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff };
    char path[4096];
    int32_t x[2];
    amp_st_file *f = (amp_st_file *)&f;
    size_t len;
    unsigned char *b = build(json, data, sizeof data, &len);
    (void)state;

    temp_path(path, sizeof path);
    write_file(path, b, len);
    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    free(b); /* the file keeps its own copy */
    assert_int_equal(amp_st_count(f), 1);
    assert_int_equal(amp_st_load(f, "x", AMP_I32, 1, (const int64_t[]){ 2 }, x), AMP_OK);
    assert_int_equal(x[0], 1);
    assert_int_equal(x[1], -2);
    amp_st_close(f);

    /* the same file cut short: a parse error comes through */
    b = build(json, data, sizeof data - 1, &len);
    write_file(path, b, len);
    free(b);
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    assert_null(f);
    write_file(path, "", 0); /* empty */
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    assert_int_equal(unlink(path), 0);

    /* a missing file: an I/O error */
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_IO);
    assert_null(f);
}

/* What is not a regular file is refused unread: a directory, /dev/zero
 * (endless zeros), /dev/urandom (endless noise), a FIFO nobody writes to
 * (a blocking open would wait forever). */
static void test_open_not_a_file(void **state)
{
    char path[4096];
    amp_st_file *f = (amp_st_file *)&f;
    (void)state;
    assert_int_equal(amp_st_open("/", &f), AMP_ERR_WEIGHTS_NOT_FILE);
    assert_null(f);
    assert_int_equal(amp_st_open("/dev/zero", &f), AMP_ERR_WEIGHTS_NOT_FILE);
    assert_int_equal(amp_st_open("/dev/urandom", &f), AMP_ERR_WEIGHTS_NOT_FILE);
    temp_path(path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10); /* a regression blocks in open: fail the test instead of hanging */
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_NOT_FILE);
    alarm(0);
    assert_null(f);
    assert_int_equal(unlink(path), 0);
}

/* Only the bytes the header names are read: a valid header followed by
 * 16 GiB (a sparse file) is refused from its size before any data is
 * read, and a size field larger than the file fails before the header. */
static void test_open_reads_what_the_header_names(void **state)
{
    static const char json[] = "{\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ";
    static const unsigned char data[8] = { 1, 0, 0, 0, 2, 0, 0, 0 };
    char path[4096];
    amp_st_file *f = (amp_st_file *)&f;
    size_t len;
    unsigned char *b = build(json, data, sizeof data, &len);
    FILE *fp;
    (void)state;

    temp_path(path, sizeof path);
    write_file(path, b, len);
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseeko(fp, ((off_t)16 << 30) - 1, SEEK_SET), 0);
    assert_int_equal(fputc(0, fp), 0);
    assert_int_equal(fclose(fp), 0);
    alarm(10); /* reading 16 GiB of holes would take longer, or run out of memory */
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_OFFSETS);
    alarm(0);
    assert_null(f);

    /* the size field says 100 MiB, the file has 80 bytes */
    b[0] = 0, b[1] = 0, b[2] = 0x40, b[3] = 0x06;
    write_file(path, b, len);
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_TRUNCATED);
    /* a size field past the limit */
    b[3] = 0x07;
    write_file(path, b, len);
    assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_HEADER);
    assert_int_equal(unlink(path), 0);
    free(b);
}

/* CRC-32C: the standard check value, and the "crc32c" metadata verified
 * when present (a flipped data bit is found), refused when malformed. */
static void test_checksum(void **state)
{
    static const unsigned char data[8] = { 1, 0, 0, 0, 2, 0, 0, 0 };
    char json[256];
    amp_st_file *f = (amp_st_file *)&f;
    size_t len;
    unsigned char *b;
    uint32_t crc;
    (void)state;

    assert_int_equal(amp_st_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(amp_st_crc32c(amp_st_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
    crc = amp_st_crc32c(0, data, sizeof data);
    snprintf(json, sizeof json,
             "{\"__metadata__\":{\"crc32c\":\"%08x\"},\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
             (unsigned)crc);
    b = build(json, data, sizeof data, &len);
    assert_int_equal(amp_st_parse(b, len, &f), AMP_OK);
    amp_st_close(f);
    b[len - 1] ^= 0x10; /* one bit of the data */
    assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_CHECKSUM);
    assert_null(f);
    free(b);

    /* not 8 lowercase hex digits: a header error */
    static const char *const bad[] = { "ABCDEF01", "1234567", "123456789", "0x123456", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(json, sizeof json,
                 "{\"__metadata__\":{\"crc32c\":\"%s\"},\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                 bad[i]);
        b = build(json, data, sizeof data, &len);
        assert_int_equal(amp_st_parse(b, len, &f), AMP_ERR_WEIGHTS_HEADER);
        free(b);
    }
}

static void test_open_null_args(void **state)
{
    amp_st_file *f = (amp_st_file *)&f;
    char path[] = "/nonexistent/x.safetensors";
    (void)state;
    assert_int_equal(amp_st_open(NULL, &f), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_open(path, NULL), AMP_ERR_NULL_ARG);
}

/* ---- a file from PyTorch ------------------------------------------------------------ */

/* Writes safetensors by hand (the safetensors package is not needed): the
 * layout safetensors.torch.save_file produces, header padded with spaces to
 * a multiple of 8, tensors in name order; json.dumps escapes the non-ASCII
 * name as \u00f6. Exit 77: torch is missing. */
static const char torch_script[] =
    "import sys, json, struct\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    sys.exit(77)\n"
    "ts = {\n"
    "    'linear.weight': torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1,\n"
    "    'linear.bias': torch.tensor([1.5, -2.25], dtype=torch.bfloat16),\n"
    "    'emb': (torch.arange(4, dtype=torch.float16) / 4).reshape(2, 2),\n"
    "    'idx': torch.tensor([-1, 2**40], dtype=torch.int64),\n"
    "    'mask': torch.tensor([True, False, True]),\n"
    "    'bl\\u00f6ck.d': torch.tensor([[3.0]], dtype=torch.float64),\n"
    "    'n': torch.tensor(-7, dtype=torch.int32),\n"
    "    'empty': torch.zeros(0, 3),\n"
    "}\n"
    "header, blobs, off = {'__metadata__': {'format': 'pt'}}, [], 0\n"
    "for name in sorted(ts):\n"
    "    t = ts[name].contiguous()\n"
    "    if t.dtype in (torch.bfloat16, torch.float16):\n"
    "        t = t.view(torch.int16)\n"
    "    a = t.numpy()\n"
    "    raw = a.astype(a.dtype.newbyteorder('<')).tobytes()\n"
    "    dt = {torch.float32: 'F32', torch.bfloat16: 'BF16', torch.float16: 'F16', torch.int64: 'I64',\n"
    "          torch.bool: 'BOOL', torch.float64: 'F64', torch.int32: 'I32'}[ts[name].dtype]\n"
    "    header[name] = {'dtype': dt, 'shape': list(ts[name].shape), 'data_offsets': [off, off + len(raw)]}\n"
    "    blobs.append(raw)\n"
    "    off += len(raw)\n"
    "h = json.dumps(header).encode()\n"
    "h += b' ' * (-len(h) % 8)\n"
    "with open(sys.argv[1], 'wb') as f:\n"
    "    f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))\n";

static void test_torch_file(void **state)
{
    char script[4096], path[4096], cmd[9000];
    amp_st_file *f = NULL;
    float w[6];
    amp_bf16 bias[2];
    amp_f16 emb[4];
    int64_t idx[2];
    uint8_t mask[3];
    double d;
    int32_t n;
    int rc;
    (void)state;

    if (access("/usr/bin/python3", X_OK) != 0) {
        print_message("SKIPPED: /usr/bin/python3 not found; the PyTorch file is not tested\n");
        skip();
    }
    temp_path(script, sizeof script);
    temp_path(path, sizeof path);
    write_file(script, torch_script, sizeof torch_script - 1);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", script, path);
    rc = system(cmd);
    unlink(script);
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        unlink(path);
        print_message("SKIPPED: /usr/bin/python3 has no torch; the PyTorch file is not tested\n");
        skip();
    }
    assert_true(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0);

    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    unlink(path);
    assert_int_equal(amp_st_count(f), 8);
    assert_int_equal(amp_st_load(f, "linear.weight", AMP_F32, 2, (const int64_t[]){ 2, 3 }, w), AMP_OK);
    for (int i = 0; i < 6; i++)
        assert_true(w[i] == (float)i * 0.5f - 1.0f);
    assert_int_equal(amp_st_load(f, "linear.bias", AMP_BF16, 1, (const int64_t[]){ 2 }, bias), AMP_OK);
    assert_int_equal(bias[0].bits, 0x3fc0);
    assert_int_equal(bias[1].bits, 0xc010);
    assert_int_equal(amp_st_load(f, "emb", AMP_F16, 2, (const int64_t[]){ 2, 2 }, emb), AMP_OK);
    for (int i = 0; i < 4; i++)
        assert_true(amp_f16_to_f32(emb[i]) == (float)i / 4.0f);
    assert_int_equal(amp_st_load(f, "idx", AMP_I64, 1, (const int64_t[]){ 2 }, idx), AMP_OK);
    assert_int_equal(idx[0], -1);
    assert_int_equal(idx[1], (int64_t)1 << 40);
    assert_int_equal(amp_st_load(f, "mask", AMP_BOOL, 1, (const int64_t[]){ 3 }, mask), AMP_OK);
    assert_int_equal(mask[0], 1);
    assert_int_equal(mask[1], 0);
    assert_int_equal(mask[2], 1);
    assert_int_equal(amp_st_load(f, "bl\xc3\xb6" "ck.d", AMP_F64, 2, (const int64_t[]){ 1, 1 }, &d), AMP_OK);
    assert_true(d == 3.0);
    assert_int_equal(amp_st_load(f, "n", AMP_I32, 0, NULL, &n), AMP_OK);
    assert_int_equal(n, -7);
    assert_int_equal(amp_st_load(f, "empty", AMP_F32, 2, (const int64_t[]){ 0, 3 }, NULL), AMP_OK);
    amp_st_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_truncated_size),
        cmocka_unit_test(test_header_size),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_open_not_a_file),
        cmocka_unit_test(test_open_reads_what_the_header_names),
        cmocka_unit_test(test_checksum),
        cmocka_unit_test(test_open_null_args),
        cmocka_unit_test(test_torch_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
