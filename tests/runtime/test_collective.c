/*
 * test_collective.c - amprt/collective.h in the library built without MPI
 * (collective_single.c, collective_common.c): one process, rank 0 of a
 * world of 1, whose all-reduce leaves every bit of every tensor as it was
 * (so the emitted update is bit-identical to one without the call), and
 * which still rejects the arguments and settings the MPI build rejects.
 * The MPI build is tested under mpirun by tests/mpi.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "amprt.h"

/* Every case starts from a fresh, unjoined world with default settings. */
static int setup(void **state)
{
    (void)state;
    unsetenv("AMPRT_ALLREDUCE_DTYPE");
    unsetenv("AMPRT_ALLREDUCE_BUCKET_BYTES");
    amp_coll_finalize();
    return amp_coll_set_allreduce_dtype(AMP_F32);
}

static int teardown(void **state)
{
    (void)state;
    amp_coll_finalize();
    unsetenv("AMPRT_ALLREDUCE_DTYPE");
    unsetenv("AMPRT_ALLREDUCE_BUCKET_BYTES");
    return amp_coll_set_allreduce_dtype(AMP_F32);
}

/* Before init too: emitted code may run in a program that never joins. */
static void test_world_of_one(void **state)
{
    (void)state;
    assert_int_equal(amp_coll_rank(), 0);
    assert_int_equal(amp_coll_world(), 1);
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK); /* a second call does nothing */
    assert_int_equal(amp_coll_rank(), 0);
    assert_int_equal(amp_coll_world(), 1);
    assert_int_equal(amp_coll_finalize(), AMP_OK);
    assert_int_equal(amp_coll_world(), 1);
}

/* Bit patterns no arithmetic would keep: NaN payloads, -0, infinities,
 * subnormals, values bf16 cannot hold.  The mean over one process must
 * leave them all, in every dtype, with either wire type. */
static void test_mean_keeps_every_bit(void **state)
{
    static const uint32_t f32_bits[] = {0x7fc01234u, 0xff800001u, 0x80000000u, 0x7f800000u,
                                        0x00000001u, 0x3f800001u, 0x3eaaaaabu, 0xc2f6e979u};
    static const uint64_t f64_bits[] = {0x7ff8000000000123u, 0x8000000000000000u, 0x0000000000000001u,
                                        0x3fd5555555555555u};
    static const uint16_t half_bits[] = {0x7e01u, 0x8000u, 0x0001u, 0x7c00u, 0x3c01u, 0xfbffu};
    enum { NF = sizeof f32_bits / sizeof f32_bits[0], ND = sizeof f64_bits / sizeof f64_bits[0],
           NH = sizeof half_bits / sizeof half_bits[0] };
    (void)state;
    for (int wire = 0; wire < 2; wire++) {
        float f[NF];
        double d[ND];
        amp_bf16 b[NH];
        amp_f16 h[NH];
        memcpy(f, f32_bits, sizeof f);
        memcpy(d, f64_bits, sizeof d);
        memcpy(b, half_bits, sizeof b);
        memcpy(h, half_bits, sizeof h);
        const amp_coll_tensor t[] = {
            {f, NF, AMP_F32}, {d, ND, AMP_F64}, {b, NH, AMP_BF16}, {h, NH, AMP_F16}, {NULL, 0, AMP_F32},
        };
        assert_int_equal(amp_coll_set_allreduce_dtype(wire ? AMP_BF16 : AMP_F32), AMP_OK);
        assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
        assert_int_equal(amp_allreduce_mean(t, 5), AMP_OK);
        assert_memory_equal(f, f32_bits, sizeof f);
        assert_memory_equal(d, f64_bits, sizeof d);
        assert_memory_equal(b, half_bits, sizeof b);
        assert_memory_equal(h, half_bits, sizeof h);
    }
}

static void test_max_keeps_the_value(void **state)
{
    (void)state;
    for (int32_t v0 = -1; v0 <= 1; v0++) {
        int32_t v = v0;
        assert_int_equal(amp_allreduce_max_i32(&v), AMP_OK);
        assert_int_equal(v, v0);
    }
    assert_int_equal(amp_allreduce_max_i32(NULL), AMP_ERR_NULL_ARG);
}

/* The MPI build checks the same way before it communicates. */
static void test_mean_rejects_bad_arguments(void **state)
{
    float x = 1;
    amp_coll_tensor t = {&x, 1, AMP_F32};
    (void)state;
    assert_int_equal(amp_allreduce_mean(NULL, 0), AMP_OK);   /* nothing to reduce */
    assert_int_equal(amp_allreduce_mean(&t, 0), AMP_OK);
    assert_int_equal(amp_allreduce_mean(&t, -1), AMP_ERR_BAD_DIM);
    assert_int_equal(amp_allreduce_mean(NULL, 1), AMP_ERR_NULL_ARG);
    t.data = NULL;
    assert_int_equal(amp_allreduce_mean(&t, 1), AMP_ERR_NULL_ARG);
    t.n = 0; /* an empty tensor needs no data */
    assert_int_equal(amp_allreduce_mean(&t, 1), AMP_OK);
    t.data = &x;
    t.n = 1;
    t.dtype = AMP_I64; /* integers are not gradients */
    assert_int_equal(amp_allreduce_mean(&t, 1), AMP_ERR_COLLECTIVE);
    t.dtype = AMP_BOOL;
    assert_int_equal(amp_allreduce_mean(&t, 1), AMP_ERR_COLLECTIVE);
    t.dtype = (amp_dtype)99;
    assert_int_equal(amp_allreduce_mean(&t, 1), AMP_ERR_COLLECTIVE);
    assert_true(x == 1.0f);
}

/* The push-style reduction over one process leaves every bit as it was
 * (the emitted backward pushes its gradients through it) and keeps the
 * same bookkeeping as the MPI build. */
static void test_push_keeps_every_bit(void **state)
{
    static const uint32_t f32_bits[] = {0x7fc01234u, 0x80000000u, 0x00000001u, 0x3eaaaaabu};
    static const uint64_t f64_bits[] = {0x7ff8000000000123u, 0x3fd5555555555555u};
    static const uint16_t half_bits[] = {0x7e01u, 0x0001u, 0x3c01u};
    float f[4];
    double d[2];
    amp_bf16 b[3];
    amp_f16 h[3];
    (void)state;
    memcpy(f, f32_bits, sizeof f);
    memcpy(d, f64_bits, sizeof d);
    memcpy(b, half_bits, sizeof b);
    memcpy(h, half_bits, sizeof h);
    const amp_coll_tensor t[] = {{h, 3, AMP_F16}, {d, 2, AMP_F64}, {b, 3, AMP_BF16}, {f, 4, AMP_F32}, {NULL, 0, AMP_F64}};
    assert_int_equal(amp_coll_set_allreduce_dtype(AMP_BF16), AMP_OK); /* no rounding to bf16 either */
    assert_int_equal(amp_allreduce_open(), 0);
    assert_int_equal(amp_allreduce_begin(5), AMP_OK);
    assert_int_equal(amp_allreduce_open(), 1);
    for (int i = 0; i < 5; i++)
        assert_int_equal(amp_allreduce_push(&t[i]), AMP_OK);
    assert_int_equal(amp_allreduce_open(), 1); /* open until finish */
    assert_int_equal(amp_allreduce_finish(), AMP_OK);
    assert_int_equal(amp_allreduce_open(), 0);
    assert_memory_equal(f, f32_bits, sizeof f);
    assert_memory_equal(d, f64_bits, sizeof d);
    assert_memory_equal(b, half_bits, sizeof b);
    assert_memory_equal(h, half_bits, sizeof h);
}

static void test_push_rejects_misuse(void **state)
{
    float x = 1;
    amp_coll_tensor t = {&x, 1, AMP_F32};
    (void)state;
    /* nothing open */
    assert_int_equal(amp_allreduce_push(&t), AMP_ERR_COLLECTIVE);
    assert_int_equal(amp_allreduce_finish(), AMP_ERR_COLLECTIVE);
    assert_int_equal(amp_allreduce_begin(-1), AMP_ERR_BAD_DIM);
    assert_int_equal(amp_allreduce_open(), 0); /* a refused begin opens nothing */
    /* an empty reduction */
    assert_int_equal(amp_allreduce_begin(0), AMP_OK);
    assert_int_equal(amp_allreduce_push(&t), AMP_ERR_BAD_DIM);
    assert_int_equal(amp_allreduce_finish(), AMP_OK);
    /* while one is open: no second begin, no list-form mean */
    assert_int_equal(amp_allreduce_begin(2), AMP_OK);
    assert_int_equal(amp_allreduce_begin(2), AMP_ERR_COLLECTIVE);
    assert_int_equal(amp_allreduce_mean(&t, 1), AMP_ERR_COLLECTIVE);
    assert_int_equal(amp_allreduce_push(NULL), AMP_ERR_NULL_ARG);
    t.dtype = AMP_I32;
    assert_int_equal(amp_allreduce_push(&t), AMP_ERR_COLLECTIVE);
    t.dtype = AMP_F32;
    t.data = NULL;
    assert_int_equal(amp_allreduce_push(&t), AMP_ERR_NULL_ARG);
    t.data = &x;
    assert_int_equal(amp_allreduce_push(&t), AMP_OK); /* the refused ones did not count */
    assert_int_equal(amp_allreduce_push(&t), AMP_OK);
    assert_int_equal(amp_allreduce_push(&t), AMP_ERR_BAD_DIM); /* a third of two */
    assert_int_equal(amp_allreduce_finish(), AMP_OK);
    /* fewer pushed than announced: closed anyway, with an error */
    assert_int_equal(amp_allreduce_begin(3), AMP_OK);
    assert_int_equal(amp_allreduce_push(&t), AMP_OK);
    assert_int_equal(amp_allreduce_finish(), AMP_ERR_BAD_DIM);
    assert_int_equal(amp_allreduce_open(), 0);
    assert_int_equal(amp_allreduce_begin(1), AMP_OK);
    /* amp_coll_finalize closes an open reduction */
    assert_int_equal(amp_coll_finalize(), AMP_OK);
    assert_int_equal(amp_allreduce_open(), 0);
    assert_true(x == 1.0f);
}

static void test_wire_dtype_setting(void **state)
{
    (void)state;
    assert_int_equal(amp_coll_allreduce_dtype(), AMP_F32); /* the default */
    assert_int_equal(amp_coll_set_allreduce_dtype(AMP_BF16), AMP_OK);
    assert_int_equal(amp_coll_allreduce_dtype(), AMP_BF16);
    assert_int_equal(amp_coll_set_allreduce_dtype(AMP_F16), AMP_ERR_COLLECTIVE);
    assert_int_equal(amp_coll_set_allreduce_dtype(AMP_F64), AMP_ERR_COLLECTIVE);
    assert_int_equal(amp_coll_allreduce_dtype(), AMP_BF16); /* a refused value changes nothing */
    assert_int_equal(amp_coll_set_allreduce_dtype(AMP_F32), AMP_OK);
    assert_int_equal(amp_coll_allreduce_dtype(), AMP_F32);
}

static void test_environment(void **state)
{
    (void)state;
    setenv("AMPRT_ALLREDUCE_DTYPE", "bf16", 1);
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
    assert_int_equal(amp_coll_allreduce_dtype(), AMP_BF16);
    amp_coll_finalize();
    setenv("AMPRT_ALLREDUCE_DTYPE", "f32", 1);
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
    assert_int_equal(amp_coll_allreduce_dtype(), AMP_F32);
    amp_coll_finalize();
    setenv("AMPRT_ALLREDUCE_DTYPE", "", 1); /* empty: the default */
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
    amp_coll_finalize();
}

static void test_environment_rejected(void **state)
{
    static const char *dtypes[] = {"f16", "BF16", "bf16 ", "float"};
    /* 63 is one byte under the smallest bucket; 2^30 + 1 one over the largest */
    static const char *buckets[] = {"63", "-64", "64k", "abc", "1073741825", "99999999999999999999999"};
    (void)state;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        setenv("AMPRT_ALLREDUCE_DTYPE", dtypes[i], 1);
        assert_int_equal(amp_coll_init(NULL, NULL), AMP_ERR_COLLECTIVE);
        assert_int_equal(amp_coll_allreduce_dtype(), AMP_F32); /* left as it was */
    }
    unsetenv("AMPRT_ALLREDUCE_DTYPE");
    for (size_t i = 0; i < sizeof buckets / sizeof buckets[0]; i++) {
        setenv("AMPRT_ALLREDUCE_BUCKET_BYTES", buckets[i], 1);
        assert_int_equal(amp_coll_init(NULL, NULL), AMP_ERR_COLLECTIVE);
    }
    setenv("AMPRT_ALLREDUCE_BUCKET_BYTES", "64", 1); /* exactly the smallest */
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
    amp_coll_finalize();
    setenv("AMPRT_ALLREDUCE_BUCKET_BYTES", "1073741824", 1); /* exactly the largest */
    assert_int_equal(amp_coll_init(NULL, NULL), AMP_OK);
}

static void test_strerror(void **state)
{
    (void)state;
    assert_string_not_equal(amp_strerror(AMP_ERR_COLLECTIVE), amp_strerror(-1));
}

int main(void)
{
    /* `make MPI=1` links the other backend, whose world cannot be left and
     * joined again; tests/mpi tests it under mpirun. */
    if (strcmp(amp_coll_backend(), "single") != 0) {
        printf("SKIP test_collective: this libamprt is the %s build (tests/mpi tests it)\n", amp_coll_backend());
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_world_of_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mean_keeps_every_bit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_keeps_the_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mean_rejects_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_keeps_every_bit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_rejects_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wire_dtype_setting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strerror, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
