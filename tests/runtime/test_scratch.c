/*
 * test_scratch.c - the optimized kernels' work buffers (scratch.c):
 * 64-byte aligned, a freed large block handed out again (so a kernel
 * called in a loop does not page-fault its buffers in every call), the
 * smallest cached block that fits chosen, and no block given to two
 * holders at once from several threads.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "amprt_internal.h"

static void test_aligned(void **state)
{
    (void)state;
    for (size_t bytes = 1; bytes < ((size_t)1 << 22); bytes = bytes * 3 + 1) {
        char *p = amp_scratch_alloc(bytes);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        memset(p, 0x5a, bytes); /* all of it usable (ASan checks the bounds) */
        amp_scratch_free(p);
    }
    amp_scratch_free(NULL);
}

static void test_reused(void **state)
{
    (void)state;
    char *big = amp_scratch_alloc((size_t)1 << 20);
    char *small = amp_scratch_alloc((size_t)256 << 10);
    assert_non_null(big);
    assert_non_null(small);
    amp_scratch_free(big);
    amp_scratch_free(small);
    /* the smallest cached block that fits: small's for a smaller request,
     * big's for one small's cannot hold */
    char *a = amp_scratch_alloc((size_t)200 << 10);
    char *b = amp_scratch_alloc((size_t)900 << 10);
    assert_ptr_equal(a, small);
    assert_ptr_equal(b, big);
    amp_scratch_free(a);
    amp_scratch_free(b);
}

enum { ROUNDS = 2000 };

static void *hold_and_check(void *arg)
{
    const unsigned char mark = (unsigned char)(uintptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        size_t bytes = ((size_t)64 << 10) + (size_t)(r % 7) * 4096;
        unsigned char *p = amp_scratch_alloc(bytes);
        if (p == NULL)
            return (void *)1;
        memset(p, mark, bytes);
        for (size_t i = 0; i < bytes; i += 4093)
            if (p[i] != mark) /* another holder wrote into it */
                return (void *)1;
        amp_scratch_free(p);
    }
    return NULL;
}

static void test_threads(void **state)
{
    pthread_t th[4];
    (void)state;
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hold_and_check, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < 4; i++) {
        void *rc;
        assert_int_equal(pthread_join(th[i], &rc), 0);
        assert_null(rc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aligned),
        cmocka_unit_test(test_reused),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
