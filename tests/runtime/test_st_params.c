/*
 * test_st_params.c - loading a model's parameters from a safetensors file
 * (amp_st_load_params, amp_st_read_params): what the emitted
 * <prefix>_load_weights and ampc --embed-weights do.
 *
 * Each error (a missing tensor, an unexpected one, another shape, a dtype
 * that does not convert, a truncated file, storage too small) gives its
 * status and a message naming the tensor, and leaves the storage and the
 * pointers as they were; several problems are all listed; a training
 * checkpoint's own tensors are skipped; floating-point tensors convert as
 * PyTorch's Tensor.copy_ does (to bf16 and f16 through f32, rounding to
 * nearest even), which the values below pin: 1 + 2^-8 + 2^-30 in f64 is
 * 1 in bf16 through f32, where rounding it directly would give 1 + 2^-7.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "amprt.h"

static char dir[256], path[300];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/amp_st_params_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

/* The model of these tests: w f32[2, 3] and b f32[3]. */
typedef struct {
    const float *w, *b;
} params;

static const amp_st_param table[2] = {
    {"w", AMP_F32, 2, {2, 3}, 0, offsetof(params, w)},
    {"b", AMP_F32, 1, {3}, 64, offsetof(params, b)},
};
enum { STORAGE = 128 };

static const float w_vals[6] = {1, 2, 3, 4, 5, 6};
static const float b_vals[3] = {-1, 0.5f, 7};

static amp_st_entry entry(const char *name, amp_dtype t, int ndim, int64_t d0, int64_t d1, const void *data)
{
    amp_st_entry e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.dtype = t;
    e.ndim = ndim;
    e.shape[0] = d0;
    e.shape[1] = d1;
    e.data = data;
    return e;
}

/* Loads `path` into a storage of 0xAB bytes with pointers set to a marker;
 * returns the status, the message in msg. */
typedef struct {
    unsigned char storage[STORAGE];
    params p;
    char msg[1024];
} load;

static const float marker = 42;

static int read_into(load *l, size_t storage_bytes)
{
    memset(l->storage, 0xAB, sizeof l->storage);
    l->p.w = l->p.b = &marker;
    return amp_st_read_params(path, table, 2, l->storage, storage_bytes, &l->p, l->msg, sizeof l->msg);
}

static void assert_untouched(const load *l)
{
    for (size_t i = 0; i < sizeof l->storage; i++)
        assert_int_equal(l->storage[i], 0xAB);
    assert_ptr_equal(l->p.w, &marker);
    assert_ptr_equal(l->p.b, &marker);
}

static void write_file(const amp_st_entry *e, int n)
{
    assert_int_equal(amp_st_write(path, e, n), AMP_OK);
}

static void loads_exactly(void **state)
{
    load l;
    amp_st_entry e[2] = {entry("b", AMP_F32, 1, 3, 0, b_vals), entry("w", AMP_F32, 2, 2, 3, w_vals)};
    (void)state;
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE), AMP_OK);
    assert_string_equal(l.msg, "");
    assert_ptr_equal(l.p.w, (const float *)(const void *)l.storage);
    assert_ptr_equal(l.p.b, (const float *)(const void *)(l.storage + 64));
    assert_memory_equal(l.p.w, w_vals, sizeof w_vals);
    assert_memory_equal(l.p.b, b_vals, sizeof b_vals);
}

/* A checkpoint's gradients, optimizer state and scalars are skipped. */
static void skips_training_state(void **state)
{
    load l;
    double lr = 0.1;
    int64_t step = 3;
    float scale = 65536;
    amp_st_entry e[7] = {
        entry("w", AMP_F32, 2, 2, 3, w_vals), entry("b", AMP_F32, 1, 3, 0, b_vals),
        entry("grad.w", AMP_F32, 2, 2, 3, w_vals), entry("optimizer.b.momentum_buffer", AMP_F32, 1, 3, 0, b_vals),
        entry("optimizer.lr", AMP_F64, 0, 0, 0, &lr), entry("optimizer.step", AMP_I64, 0, 0, 0, &step),
        entry("scaler.scale", AMP_F32, 0, 0, 0, &scale),
    };
    (void)state;
    write_file(e, 7);
    assert_int_equal(read_into(&l, STORAGE), AMP_OK);
    assert_memory_equal(l.p.w, w_vals, sizeof w_vals);
    assert_memory_equal(l.p.b, b_vals, sizeof b_vals);
}

/* ... but only a checkpoint's: the gradient of a tensor the model does
 * not have, or a slot torch.optim does not name, is unexpected. */
static void unexpected_named(void **state)
{
    load l;
    amp_st_entry e[4] = {entry("w", AMP_F32, 2, 2, 3, w_vals), entry("b", AMP_F32, 1, 3, 0, b_vals),
                         entry("grad.v", AMP_F32, 1, 3, 0, b_vals), entry("optimizer.b.velocity", AMP_F32, 1, 3, 0, b_vals)};
    (void)state;
    write_file(e, 4);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_UNEXPECTED);
    assert_untouched(&l);
    assert_non_null(strstr(l.msg, "tensor 'grad.v' is not a parameter or buffer of the model"));
    assert_non_null(strstr(l.msg, "\ntensor 'optimizer.b.velocity' is not a parameter or buffer of the model"));
}

static void missing_named(void **state)
{
    load l;
    amp_st_entry e[1] = {entry("w", AMP_F32, 2, 2, 3, w_vals)};
    (void)state;
    write_file(e, 1);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_MISSING);
    assert_untouched(&l);
    assert_string_equal(l.msg, "no tensor 'b' in the file (the model's f32[3])");
}

static void shape_named(void **state)
{
    load l;
    amp_st_entry e[2] = {entry("w", AMP_F32, 2, 3, 2, w_vals), entry("b", AMP_F32, 1, 3, 0, b_vals)};
    (void)state;
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_SHAPE);
    assert_untouched(&l);
    assert_string_equal(l.msg, "tensor 'w' is f32[3, 2] in the file, but the model declares f32[2, 3]");
}

static void dtype_named(void **state)
{
    load l;
    const int64_t ints[3] = {1, 2, 3};
    amp_st_entry e[2] = {entry("w", AMP_F32, 2, 2, 3, w_vals), entry("b", AMP_I64, 1, 3, 0, ints)};
    (void)state;
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_DTYPE);
    assert_untouched(&l);
    assert_string_equal(l.msg, "tensor 'b' is i64[3] in the file, but the model declares f32[3] "
                               "(only floating-point tensors convert)");
}

/* Every problem on its own line; the status is the first one's. */
static void every_problem_listed(void **state)
{
    load l;
    amp_st_entry e[2] = {entry("w", AMP_F32, 1, 6, 0, w_vals), entry("bias", AMP_F32, 1, 3, 0, b_vals)};
    (void)state;
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_SHAPE);
    assert_untouched(&l);
    assert_string_equal(l.msg, "tensor 'w' is f32[6] in the file, but the model declares f32[2, 3]\n"
                               "no tensor 'b' in the file (the model's f32[3])\n"
                               "tensor 'bias' is not a parameter or buffer of the model (nor a training "
                               "checkpoint's state)");
}

/* f64, f16, bf16 into f32, f32 into bf16 and f64, f64 into bf16 and f16
 * through f32; the same file loaded into tables of those dtypes. */
static void converts_as_copy(void **state)
{
    const double w64[6] = {1.0 / 3, 1 + 0x1p-8 + 0x1p-30, -2.5, 1e300, 0x1p-140, 3};
    const amp_f16 b16[3] = {{0x3c00}, {0xc500}, {0x0001}}; /* 1, -5, 2^-24 */
    const amp_bf16 wb[6] = {{0x3f80}, {0x4000}, {0x4040}, {0x4080}, {0x40a0}, {0x40c0}};
    amp_st_entry e[2] = {entry("w", AMP_F64, 2, 2, 3, w64), entry("b", AMP_F16, 1, 3, 0, b16)};
    load l;
    (void)state;
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE), AMP_OK);
    for (int i = 0; i < 6; i++)
        assert_true(l.p.w[i] == (float)w64[i] || (w64[i] > 3.5e38 && l.p.w[i] == INFINITY));
    assert_true(l.p.b[0] == 1.0f && l.p.b[1] == -5.0f && l.p.b[2] == 0x1p-24f);

    /* into bf16, f16 and f64 */
    {
        static const amp_st_param low[2] = {
            {"w", AMP_BF16, 2, {2, 3}, 0, 0},
            {"b", AMP_F64, 1, {3}, 64, 0},
        };
        unsigned char storage[STORAGE];
        const amp_bf16 *w = (const amp_bf16 *)(const void *)storage;
        const double *b = (const double *)(const void *)(storage + 64);
        assert_int_equal(amp_st_read_params(path, low, 2, storage, sizeof storage, NULL, NULL, 0), AMP_OK);
        assert_int_equal(w[0].bits, amp_f32_to_bf16((float)(1.0 / 3)).bits);
        assert_int_equal(w[1].bits, 0x3f80); /* 1: through f32, not 0x3f81 */
        assert_int_equal(w[2].bits, 0xc020);
        assert_int_equal(w[3].bits, 0x7f80); /* 1e300: inf in f32, so in bf16 */
        assert_int_equal(w[4].bits, 0x0000); /* 2^-140: 0 in f32 */
        assert_true(b[0] == 1.0 && b[1] == -5.0 && b[2] == 0x1p-24);
    }
    {
        static const amp_st_param half[2] = {
            {"w", AMP_F16, 2, {2, 3}, 0, 0},
            {"b", AMP_F32, 1, {3}, 64, 0},
        };
        unsigned char storage[STORAGE];
        const amp_f16 *w = (const amp_f16 *)(const void *)storage;
        assert_int_equal(amp_st_read_params(path, half, 2, storage, sizeof storage, NULL, NULL, 0), AMP_OK);
        assert_int_equal(w[0].bits, amp_f32_to_f16((float)(1.0 / 3)).bits);
        assert_int_equal(w[1].bits, 0x3c04); /* 1 + 2^-8 */
        assert_int_equal(w[3].bits, 0x7c00);
    }
    /* bf16 into f32: exact */
    e[0] = entry("w", AMP_BF16, 2, 2, 3, wb);
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE), AMP_OK);
    for (int i = 0; i < 6; i++)
        assert_true(l.p.w[i] == (float)(i + 1));
}

static void truncated_file(void **state)
{
    load l;
    amp_st_entry e[2] = {entry("w", AMP_F32, 2, 2, 3, w_vals), entry("b", AMP_F32, 1, 3, 0, b_vals)};
    FILE *f;
    long size;
    (void)state;
    write_file(e, 2);
    f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size - 4), 0);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_TRUNCATED);
    assert_untouched(&l);
    assert_string_equal(l.msg, amp_strerror(AMP_ERR_WEIGHTS_TRUNCATED));
    unlink(path);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_IO);
    assert_string_equal(l.msg, amp_strerror(AMP_ERR_IO));
}

/* Storage must hold every entry's lines: b's end, 64 + 12, rounds to 128. */
static void storage_too_small(void **state)
{
    load l;
    amp_st_entry e[2] = {entry("w", AMP_F32, 2, 2, 3, w_vals), entry("b", AMP_F32, 1, 3, 0, b_vals)};
    (void)state;
    write_file(e, 2);
    assert_int_equal(read_into(&l, STORAGE - 1), AMP_ERR_ARENA_TOO_SMALL);
    assert_untouched(&l);
    assert_int_equal(amp_st_read_params(NULL, table, 2, l.storage, STORAGE, NULL, l.msg, sizeof l.msg), AMP_ERR_NULL_ARG);
    assert_int_equal(amp_st_read_params(path, table, -1, l.storage, STORAGE, NULL, NULL, 0), AMP_ERR_BAD_DIM);
    /* the arguments are checked before any file is opened */
    assert_int_equal(amp_st_read_params("/nonexistent/w.safetensors", table, 2, NULL, STORAGE, NULL, l.msg,
                                        sizeof l.msg),
                     AMP_ERR_NULL_ARG);
    assert_string_equal(l.msg, amp_strerror(AMP_ERR_NULL_ARG));
    assert_int_equal(amp_st_read_params("/nonexistent/w.safetensors", table, 2, l.storage, 64, NULL, NULL, 0),
                     AMP_ERR_ARENA_TOO_SMALL);
}

/* A small message buffer: whole lines while they fit, always terminated;
 * names with odd bytes escaped. */
static void message_cut_and_escaped(void **state)
{
    load l;
    char small[40];
    amp_st_entry e[3] = {entry("w", AMP_F32, 2, 2, 3, w_vals), entry("b", AMP_F32, 1, 3, 0, b_vals),
                         entry("x\n'\x1b", AMP_F32, 1, 3, 0, b_vals)};
    (void)state;
    write_file(e, 3);
    assert_int_equal(read_into(&l, STORAGE), AMP_ERR_WEIGHTS_UNEXPECTED);
    assert_non_null(strstr(l.msg, "tensor 'x\\x0a\\x27\\x1b' is not"));
    memset(small, 'z', sizeof small);
    assert_int_equal(amp_st_read_params(path, table, 2, l.storage, STORAGE, NULL, small, sizeof small),
                     AMP_ERR_WEIGHTS_UNEXPECTED);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_int_equal(strncmp(small, "tensor 'x\\x0a", 13), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(loads_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(skips_training_state, setup, teardown),
        cmocka_unit_test_setup_teardown(unexpected_named, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_named, setup, teardown),
        cmocka_unit_test_setup_teardown(shape_named, setup, teardown),
        cmocka_unit_test_setup_teardown(dtype_named, setup, teardown),
        cmocka_unit_test_setup_teardown(every_problem_listed, setup, teardown),
        cmocka_unit_test_setup_teardown(converts_as_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_file, setup, teardown),
        cmocka_unit_test_setup_teardown(storage_too_small, setup, teardown),
        cmocka_unit_test_setup_teardown(message_cut_and_escaped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
