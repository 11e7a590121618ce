/*
 * test_st_write.c - the safetensors writer (amp_st_write).
 *
 * Round trips go through the reader (amp_st_open, amp_st_load) and check
 * the bytes PyTorch's format expects: an 8-byte little-endian header size
 * that is a multiple of 8, JSON padded with spaces, data in the given
 * order.  Atomicity: after every failure (an invalid argument, a path that
 * is a directory, a file-size limit hit mid-write, a read-only directory
 * when not root) the old file is byte-for-byte intact and the directory
 * holds no temporary.  The last test has /usr/bin/python3 and torch read a
 * written file (skipped, saying why, without them).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "amprt.h"

/* A fresh directory per test, removed (with its files) afterwards. */
static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/amp_st_write_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    (void)state;
    chmod(dir, 0700);
    if (d) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (rmdir(path) != 0)
                unlink(path);
        }
        closedir(d);
    }
    return rmdir(dir);
}

static int count_entries(const char *where)
{
    DIR *d = opendir(where);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long n;
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The format PyTorch's readers expect, checked on the bytes. */
static void check_layout(const char *path)
{
    size_t len;
    unsigned char *b = read_all(path, &len);
    uint64_t n;
    assert_true(len >= 8);
    n = le64(b);
    assert_true(n > 0 && n % 8 == 0 && 8 + n <= len);
    assert_int_equal(b[8], '{');
    {
        uint64_t end = 8 + n;
        while (end > 8 && b[end - 1] == ' ')
            end--;
        assert_int_equal(b[end - 1], '}'); /* only spaces after the object */
        assert_true(8 + n - end < 8);
    }
    free(b);
}

/* ---- round trips ---------------------------------------------------------------- */

static void test_roundtrip_every_dtype(void **state)
{
    double f64[3] = { 1.5, -2.25, 1e300 };
    float f32[6] = { 0.5f, -1.0f, 3.0f, 1e-30f, -0.0f, 7.0f };
    amp_bf16 bf16[2] = { { 0x3fc0 }, { 0xc010 } };
    amp_f16 f16[4] = { { 0x3c00 }, { 0x7c00 }, { 0x0001 }, { 0xfbff } };
    int64_t i64[2] = { -1, (int64_t)1 << 40 };
    int32_t i32 = -7;
    uint8_t b8[3] = { 1, 0, 1 };
    int64_t shape8[8] = { 1, 1, 2, 1, 1, 1, 1, 1 };
    amp_st_entry e[] = {
        { "z.f64", AMP_F64, 1, { 3 }, f64 },
        { "a.f32", AMP_F32, 2, { 2, 3 }, f32 },
        { "bias", AMP_BF16, 1, { 2 }, bf16 },
        { "h", AMP_F16, 2, { 2, 2 }, f16 },
        { "idx", AMP_I64, 8, { 0 }, i64 },
        { "scalar", AMP_I32, 0, { 0 }, &i32 },
        { "mask", AMP_BOOL, 1, { 3 }, b8 },
        { "empty", AMP_F32, 2, { 0, 5 }, NULL },
    };
    char path[512];
    amp_st_file *f = NULL;
    double d3[3];
    float f6[6];
    amp_bf16 h2[2];
    amp_f16 h4[4];
    int64_t l2[2];
    int32_t n1;
    uint8_t m3[3];
    (void)state;
    memcpy(e[4].shape, shape8, sizeof shape8);
    e[4].shape[2] = 2;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    assert_int_equal(amp_st_write(path, e, 8), AMP_OK);
    check_layout(path);
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    assert_int_equal(amp_st_count(f), 8);
    /* the reader numbers tensors by data offset: the order given */
    for (int i = 0; i < 8; i++)
        assert_string_equal(amp_st_get(f, i)->name, e[i].name);
    assert_int_equal(amp_st_load(f, "z.f64", AMP_F64, 1, (const int64_t[]){ 3 }, d3), AMP_OK);
    assert_memory_equal(d3, f64, sizeof f64);
    assert_int_equal(amp_st_load(f, "a.f32", AMP_F32, 2, (const int64_t[]){ 2, 3 }, f6), AMP_OK);
    assert_memory_equal(f6, f32, sizeof f32);
    assert_int_equal(amp_st_load(f, "bias", AMP_BF16, 1, (const int64_t[]){ 2 }, h2), AMP_OK);
    assert_memory_equal(h2, bf16, sizeof bf16);
    assert_int_equal(amp_st_load(f, "h", AMP_F16, 2, (const int64_t[]){ 2, 2 }, h4), AMP_OK);
    assert_memory_equal(h4, f16, sizeof f16);
    assert_int_equal(amp_st_load(f, "idx", AMP_I64, 8, e[4].shape, l2), AMP_OK);
    assert_memory_equal(l2, i64, sizeof i64);
    assert_int_equal(amp_st_load(f, "scalar", AMP_I32, 0, NULL, &n1), AMP_OK);
    assert_int_equal(n1, -7);
    assert_int_equal(amp_st_load(f, "mask", AMP_BOOL, 1, (const int64_t[]){ 3 }, m3), AMP_OK);
    assert_memory_equal(m3, b8, sizeof b8);
    assert_int_equal(amp_st_load(f, "empty", AMP_F32, 2, (const int64_t[]){ 0, 5 }, NULL), AMP_OK);
    amp_st_close(f);

    /* overwrite with fewer tensors; then with none */
    assert_int_equal(amp_st_write(path, e + 2, 1), AMP_OK);
    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    assert_int_equal(amp_st_count(f), 1);
    amp_st_close(f);
    assert_int_equal(amp_st_write(path, NULL, 0), AMP_OK);
    check_layout(path);
    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    assert_int_equal(amp_st_count(f), 0);
    amp_st_close(f);
    assert_int_equal(count_entries(dir), 1);
}

/* Names that need JSON escapes, and UTF-8 kept as is. */
static void test_escaped_names(void **state)
{
    static const char *const names[] = {
        "quote\"d", "back\\slash", "tab\there", "new\nline", "cr\r", "\b\f", "ctl\x01\x1f", "sl/ash",
        "caf\xc3\xa9", "\xf0\x9f\x98\x80", "", " ",
    };
    enum { N = sizeof names / sizeof names[0] };
    amp_st_entry e[N];
    float v[N];
    char path[512];
    amp_st_file *f = NULL;
    (void)state;
    for (int i = 0; i < N; i++) {
        v[i] = (float)i;
        memset(&e[i], 0, sizeof e[i]);
        e[i].name = names[i];
        e[i].dtype = AMP_F32;
        e[i].ndim = 1;
        e[i].shape[0] = 1;
        e[i].data = &v[i];
    }
    snprintf(path, sizeof path, "%s/names.safetensors", dir);
    assert_int_equal(amp_st_write(path, e, N), AMP_OK);
    check_layout(path);
    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    assert_int_equal(amp_st_count(f), N);
    for (int i = 0; i < N; i++) {
        float x = -1;
        assert_int_equal(amp_st_load(f, names[i], AMP_F32, 1, (const int64_t[]){ 1 }, &x), AMP_OK);
        assert_true(x == (float)i);
    }
    amp_st_close(f);
}

/* ---- failures leave the old file ------------------------------------------------- */

static const float old_data[2] = { 1.0f, 2.0f };

static void write_old(const char *path, unsigned char **bytes, size_t *len)
{
    amp_st_entry e = { "old", AMP_F32, 1, { 2 }, old_data };
    assert_int_equal(amp_st_write(path, &e, 1), AMP_OK);
    *bytes = read_all(path, len);
}

static void expect_untouched(const char *path, const unsigned char *bytes, size_t len, int entries)
{
    size_t now_len;
    unsigned char *now = read_all(path, &now_len);
    assert_int_equal(now_len, len);
    assert_memory_equal(now, bytes, len);
    free(now);
    assert_int_equal(count_entries(dir), entries); /* no temporary left */
}

static void test_invalid_arguments(void **state)
{
    char path[512];
    unsigned char *old;
    size_t len;
    float x[2] = { 0, 0 };
    amp_st_entry good = { "g", AMP_F32, 1, { 2 }, x }, e[2];
    (void)state;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    write_old(path, &old, &len);

#define EXPECT_WRITE(status, ents, n)                                                             \
    do {                                                                                          \
        assert_int_equal(amp_st_write(path, ents, n), status);                                    \
        expect_untouched(path, old, len, 1);                                                      \
    } while (0)

    assert_int_equal(amp_st_write(NULL, &good, 1), AMP_ERR_NULL_ARG);
    EXPECT_WRITE(AMP_ERR_NULL_ARG, NULL, 1);
    EXPECT_WRITE(AMP_ERR_BAD_DIM, &good, -1);
    e[0] = good;
    e[0].name = NULL;
    EXPECT_WRITE(AMP_ERR_NULL_ARG, e, 1);
    e[0] = good;
    e[0].data = NULL;
    EXPECT_WRITE(AMP_ERR_NULL_ARG, e, 1);
    e[0] = good;
    e[0].ndim = 9;
    EXPECT_WRITE(AMP_ERR_WEIGHTS_SHAPE, e, 1);
    e[0].ndim = -1;
    EXPECT_WRITE(AMP_ERR_WEIGHTS_SHAPE, e, 1);
    e[0] = good;
    e[0].shape[0] = -2;
    EXPECT_WRITE(AMP_ERR_BAD_DIM, e, 1);
    e[0] = good;
    e[0].ndim = 3;
    e[0].shape[0] = e[0].shape[1] = e[0].shape[2] = (int64_t)1 << 40; /* 2^120 elements */
    EXPECT_WRITE(AMP_ERR_WEIGHTS_SHAPE, e, 1);
    e[0] = good;
    e[0].dtype = (amp_dtype)42;
    EXPECT_WRITE(AMP_ERR_WEIGHTS_DTYPE, e, 1);
    e[0] = good;
    e[1] = good; /* duplicate name */
    EXPECT_WRITE(AMP_ERR_WEIGHTS_HEADER, e, 2);
    e[1].name = "__metadata__";
    EXPECT_WRITE(AMP_ERR_WEIGHTS_HEADER, e, 2);
    e[1].name = "bad\xc3(utf8";
    EXPECT_WRITE(AMP_ERR_WEIGHTS_HEADER, e, 2);
    e[1].name = "\xed\xa0\x80"; /* a UTF-16 surrogate */
    EXPECT_WRITE(AMP_ERR_WEIGHTS_HEADER, e, 2);
    e[1].name = "h";
    e[1].ndim = 0; /* valid: the file is replaced */
    assert_int_equal(amp_st_write(path, e, 2), AMP_OK);
    assert_int_equal(count_entries(dir), 1);
#undef EXPECT_WRITE
    free(old);
}

/* rename onto a directory fails after the temporary was written. */
static void test_path_is_directory(void **state)
{
    char path[512];
    float x = 1;
    amp_st_entry e = { "x", AMP_F32, 0, { 0 }, &x };
    (void)state;
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(amp_st_write(path, &e, 1), AMP_ERR_IO);
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(count_entries(path), 0);
    snprintf(path, sizeof path, "%s/missing/w.safetensors", dir);
    assert_int_equal(amp_st_write(path, &e, 1), AMP_ERR_IO);
    assert_int_equal(count_entries(dir), 1);
}

/* A write failing part way (RLIMIT_FSIZE: EFBIG), as a full disk would. */
static void test_write_fails_midway(void **state)
{
    char path[512];
    unsigned char *old;
    size_t len;
    static float big[4096];
    amp_st_entry e = { "big", AMP_F32, 1, { 4096 }, big };
    struct rlimit saved, small;
    void (*prev)(int);
    int rc;
    (void)state;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    write_old(path, &old, &len);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    small = saved;
    small.rlim_cur = 1000;
    prev = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    rc = amp_st_write(path, &e, 1);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(rc, AMP_ERR_IO);
    expect_untouched(path, old, len, 1);
    free(old);
}

static void test_read_only_directory(void **state)
{
    char path[512], probe[512];
    unsigned char *old;
    size_t len;
    float x = 1;
    amp_st_entry e = { "x", AMP_F32, 0, { 0 }, &x };
    FILE *fp;
    (void)state;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    snprintf(probe, sizeof probe, "%s/probe", dir);
    write_old(path, &old, &len);
    assert_int_equal(chmod(dir, 0500), 0);
    fp = fopen(probe, "w");
    if (fp) { /* root ignores the mode */
        fclose(fp);
        unlink(probe);
        chmod(dir, 0700);
        free(old);
        print_message("SKIPPED: a read-only directory is writable here (root?)\n");
        skip();
    }
    assert_int_equal(amp_st_write(path, &e, 1), AMP_ERR_IO);
    chmod(dir, 0700);
    expect_untouched(path, old, len, 1);
    free(old);
}

/* Permissions: an existing file's are kept. */
static void test_mode_kept(void **state)
{
    char path[512];
    unsigned char *old;
    size_t len;
    struct stat st;
    (void)state;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    write_old(path, &old, &len);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(chmod(path, 0640), 0);
    free(old);
    write_old(path, &old, &len);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    free(old);
}

/* The CRC-32C the writer stores finds a flipped bit anywhere in the data. */
static void test_checksum_finds_a_flipped_bit(void **state)
{
    float w[6] = { 0.5f, -1.0f, 3.0f, 1e-30f, -0.0f, 7.0f };
    int64_t step = 12;
    amp_st_entry e[] = { { "w", AMP_F32, 2, { 2, 3 }, w }, { "step", AMP_I64, 0, { 0 }, &step } };
    char path[512];
    size_t len;
    unsigned char *b;
    amp_st_file *f;
    (void)state;
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    assert_int_equal(amp_st_write(path, e, 2), AMP_OK);
    assert_int_equal(amp_st_open(path, &f), AMP_OK);
    amp_st_close(f);
    b = read_all(path, &len);
    for (size_t bit = 0; bit < 8 * 32; bit += 7) { /* the 32 data bytes */
        FILE *fp;
        b[len - 32 + bit / 8] ^= (unsigned char)(1u << bit % 8);
        fp = fopen(path, "wb");
        assert_non_null(fp);
        assert_int_equal(fwrite(b, 1, len, fp), len);
        assert_int_equal(fclose(fp), 0);
        f = (amp_st_file *)&f;
        assert_int_equal(amp_st_open(path, &f), AMP_ERR_WEIGHTS_CHECKSUM);
        assert_null(f);
        b[len - 32 + bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    free(b);
}

/* ---- PyTorch reads it ------------------------------------------------------------- */

/* Reads the file as safetensors' Python side does (the package is not
 * needed): header size, JSON, torch.frombuffer per tensor; checks values
 * and names. Exit 77: torch is missing. */
static const char torch_script[] =
    "import sys, json, struct\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    sys.exit(77)\n"
    "b = open(sys.argv[1], 'rb').read()\n"
    "n = struct.unpack('<Q', b[:8])[0]\n"
    "assert n % 8 == 0\n"
    "h = json.loads(b[8:8 + n].decode('utf-8'))\n"
    "m = h.pop('__metadata__')\n"
    "assert sorted(m) == ['crc32c', 'format'] and m['format'] == 'pt', m\n"
    "data = b[8 + n:]\n"
    "c = 0xffffffff\n"
    "for x in data:\n"
    "    c ^= x\n"
    "    for _ in range(8):\n"
    "        c = (c >> 1) ^ (0x82f63b78 if c & 1 else 0)\n"
    "assert m['crc32c'] == '%08x' % (c ^ 0xffffffff), m\n"
    "dt = {'F64': torch.float64, 'F32': torch.float32, 'BF16': torch.bfloat16, 'F16': torch.float16,\n"
    "      'I64': torch.int64, 'I32': torch.int32, 'BOOL': torch.bool}\n"
    "ts = {}\n"
    "for name, e in h.items():\n"
    "    lo, hi = e['data_offsets']\n"
    "    t = torch.frombuffer(bytearray(data[lo:hi]), dtype=dt[e['dtype']]) if hi > lo else torch.zeros(0)\n"
    "    ts[name] = t.reshape(e['shape'])\n"
    "assert torch.equal(ts['w'], torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1)\n"
    "assert torch.equal(ts['b'], torch.tensor([1.5, -2.25], dtype=torch.bfloat16))\n"
    "assert torch.equal(ts['h'], torch.tensor([[0.25, -8.0]], dtype=torch.float16))\n"
    "assert torch.equal(ts['q\"\\\\\\n\\u00e9'], torch.tensor(3, dtype=torch.int64))\n"
    "assert ts['d'].dtype == torch.float64 and ts['d'].tolist() == [1e300]\n"
    "assert ts['m'].tolist() == [True, False]\n"
    "assert ts['e'].shape == (0, 2)\n"
    "print('ok')\n";

static void test_torch_reads_it(void **state)
{
    char path[512], script[512], cmd[1200];
    float w[6];
    amp_bf16 b[2] = { { 0x3fc0 }, { 0xc010 } };
    amp_f16 h[2] = { { 0x3400 }, { 0xc800 } };
    int64_t q = 3;
    double d = 1e300;
    uint8_t m[2] = { 1, 0 };
    amp_st_entry e[] = {
        { "w", AMP_F32, 2, { 2, 3 }, w },
        { "b", AMP_BF16, 1, { 2 }, b },
        { "h", AMP_F16, 2, { 1, 2 }, h },
        { "q\"\\\n\xc3\xa9", AMP_I64, 0, { 0 }, &q },
        { "d", AMP_F64, 1, { 1 }, &d },
        { "m", AMP_BOOL, 1, { 2 }, m },
        { "e", AMP_F32, 2, { 0, 2 }, NULL },
    };
    FILE *fp;
    int rc;
    (void)state;
    for (int i = 0; i < 6; i++)
        w[i] = (float)i * 0.5f - 1.0f;
    if (access("/usr/bin/python3", X_OK) != 0) {
        print_message("SKIPPED: /usr/bin/python3 not found; PyTorch does not read the file\n");
        skip();
    }
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    snprintf(script, sizeof script, "%s/read.py", dir);
    assert_int_equal(amp_st_write(path, e, 7), AMP_OK);
    fp = fopen(script, "w");
    assert_non_null(fp);
    fputs(torch_script, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", script, path);
    rc = system(cmd);
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        print_message("SKIPPED: /usr/bin/python3 has no torch; PyTorch does not read the file\n");
        skip();
    }
    assert_true(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_every_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escaped_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_is_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_fails_midway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checksum_finds_a_flipped_bit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torch_reads_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
