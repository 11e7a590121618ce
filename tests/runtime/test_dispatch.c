/*
 * test_dispatch.c - choosing the kernel set from AMPRT_ISA, and status codes.
 *
 * The kernel set is chosen once per process, so each AMPRT_ISA value is
 * tried in a forked child that sets the variable, captures its own stderr,
 * calls into the runtime from several threads at once, and reports the
 * chosen name. That only works while this (parent) process has not chosen
 * yet: the tests that call the runtime directly come last, in main's order.
 * (amp_kernel_table_for, the test hook listing the supported sets, does not
 * choose: the parent may call it first.)
 */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "amprt_internal.h"

/* The best set this CPU supports: what auto must choose. */
static const char *best_isa(void)
{
    static const char *const order[] = { "avx512bf16", "avx512", "avx2", "neonbf16", "neonfp16", "neon" };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (amp_kernel_table_for(order[i]) != NULL)
            return order[i];
    return "ref";
}

/* ---- AMPRT_ISA, one child process per value ------------------------------ */

#define CHILD_THREADS 4

/* Each thread races to be first: isa name and a kernel call. */
static void *use_runtime(void *arg)
{
    float a[3] = { 1.0f, 2.0f, 3.0f }, y[3];
    (void)arg;
    amp_add_f32(3, a, a, y);
    return y[2] == 6.0f && amp_isa_name() != NULL ? arg : NULL;
}

static void child(const char *isa, int result_fd, int stderr_fd)
{
    pthread_t tid[CHILD_THREADS];
    int ok = 1;
    const char *name;

    if (isa != NULL)
        setenv("AMPRT_ISA", isa, 1);
    else
        unsetenv("AMPRT_ISA");
    dup2(stderr_fd, STDERR_FILENO);
    for (int i = 0; i < CHILD_THREADS; i++)
        ok &= pthread_create(&tid[i], NULL, use_runtime, &ok) == 0;
    for (int i = 0; i < CHILD_THREADS; i++) {
        void *r = NULL;
        ok &= pthread_join(tid[i], &r) == 0 && r == &ok;
    }
    /* Changing the variable later has no effect: the choice is made. */
    setenv("AMPRT_ISA", "also-not-an-isa", 1);
    name = amp_isa_name();
    if (!ok || write(result_fd, name, strlen(name)) < 0)
        _exit(1);
    _exit(0);
}

static size_t read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    return len;
}

/* Run a child with AMPRT_ISA = isa (NULL: unset); return its stderr text
 * in err and assert it chose `want`. */
static void expect_isa(const char *isa, const char *want, char *err, size_t err_cap)
{
    int result_pipe[2], err_pipe[2], status;
    char name[64];
    pid_t pid;

    assert_int_equal(pipe(result_pipe), 0);
    assert_int_equal(pipe(err_pipe), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(result_pipe[0]);
        close(err_pipe[0]);
        child(isa, result_pipe[1], err_pipe[1]);
    }
    close(result_pipe[1]);
    close(err_pipe[1]);
    read_all(result_pipe[0], name, sizeof name);
    read_all(err_pipe[0], err, err_cap);
    close(result_pipe[0]);
    close(err_pipe[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_string_equal(name, want);
}

static void test_isa_unset_is_auto(void **state)
{
    char err[512];
    (void)state;
    /* auto picks the best set this CPU supports. */
    expect_isa(NULL, best_isa(), err, sizeof err);
    assert_string_equal(err, "");
    expect_isa("", best_isa(), err, sizeof err);
    assert_string_equal(err, "");
    expect_isa("auto", best_isa(), err, sizeof err);
    assert_string_equal(err, "");
}

/* Each optimized set by name: itself when supported (silently), else one
 * warning line naming it and the best supported set. */
static void test_isa_forced_sets(void **state)
{
    static const char *const sets[] = { "avx2", "avx512", "avx512bf16", "neon", "neonfp16", "neonbf16" };
    char err[512];
    (void)state;
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const amp_kernel_table *t = amp_kernel_table_for(sets[i]);
        if (t != NULL) {
            assert_string_equal(t->isa, sets[i]);
            expect_isa(sets[i], sets[i], err, sizeof err);
            assert_string_equal(err, "");
        } else {
            const char *nl;
            expect_isa(sets[i], best_isa(), err, sizeof err);
            assert_non_null(strstr(err, "warning"));
            assert_non_null(strstr(err, sets[i]));
            nl = strchr(err, '\n');
            assert_non_null(nl);
            assert_string_equal(nl + 1, "");
        }
    }
    /* the table lookup: ref always, unknown names never */
    assert_non_null(amp_kernel_table_for("ref"));
    assert_null(amp_kernel_table_for("avx9000"));
}

/* Every set's table, resolved kernel by kernel from the sets'
 * amp_isa_<set>_<name> pointers as the public entry points resolve them,
 * is the reference table with the set's fill function applied: the
 * per-kernel resolution finds every kernel a set has (its own or its base
 * set's), and nothing else.  Each set replaces at least its products. */
/* Every kernel's entry in amp_kernel_table (a table of data rather than
 * code per kernel, which would take the compiler most of a minute). */
static const struct {
    const char *name;
    size_t offset;
} entries[] = {
#define ENTRY(kernel, T, ret, params, args) AMP_WITH_NAME(ENTRY_N, kernel, T, ret, params, args)
#define ENTRY_N(name, ret, params, args) { #name, offsetof(amp_kernel_table, name) },
    AMP_FOR_EACH_KERNEL(ENTRY)
#undef ENTRY
#undef ENTRY_N
};

static void test_sets_resolve_as_filled(void **state)
{
    static const char *const sets[] = { "ref", "avx2", "avx512", "avx512bf16", "neon", "neonfp16", "neonbf16" };
    int checked = 0;
    (void)state;
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const amp_kernel_table *t = amp_kernel_table_for(sets[i]);
        amp_kernel_table filled;
        int mismatches = 0;
        if (t == NULL)
            continue;
        assert_int_equal(amp_isa_fill(sets[i], &filled), 1);
        assert_string_equal(filled.isa, t->isa);
        for (size_t k = 0; k < sizeof entries / sizeof entries[0]; k++)
            if (memcmp((const char *)t + entries[k].offset, (const char *)&filled + entries[k].offset,
                       sizeof t->add_f32) != 0) {
                print_error("%s: %s is not what its fill installs\n", sets[i], entries[k].name);
                mismatches++;
            }
        assert_int_equal(mismatches, 0);
        if (i == 0)
            assert_ptr_equal(t->linear_f32, amp_ref_linear_f32);
        else
            assert_true(t->linear_f32 != amp_ref_linear_f32 && t->linear_bf16 != amp_ref_linear_bf16);
        checked++;
    }
    assert_true(checked >= 1);
    assert_int_equal(amp_isa_fill("avx9000", NULL), 0);
}

static void test_isa_ref_forces_reference(void **state)
{
    char err[512];
    (void)state;
    expect_isa("ref", "ref", err, sizeof err);
    assert_string_equal(err, "");
}

static void test_isa_unknown_warns_once_and_uses_auto(void **state)
{
    char err[512];
    const char *nl;
    (void)state;
    expect_isa("avx9000", best_isa(), err, sizeof err);
    /* One line, naming the bad value, though CHILD_THREADS threads raced. */
    assert_non_null(strstr(err, "warning"));
    assert_non_null(strstr(err, "\"avx9000\""));
    nl = strchr(err, '\n');
    assert_non_null(nl);
    assert_string_equal(nl + 1, "");
}

/* ---- In this process (must come after the forks) -------------------- */

static void test_isa_ref_in_process(void **state)
{
    (void)state;
    /* main set AMPRT_ISA=ref before the runtime's first call. */
    assert_string_equal(amp_isa_name(), "ref");
    setenv("AMPRT_ISA", "auto", 1);
    assert_string_equal(amp_isa_name(), "ref");
}

/* ---- Status codes ---------------------------------------------------------- */

static void test_strerror_every_code(void **state)
{
    static const int codes[] = { AMP_OK, AMP_ERR_ARENA_TOO_SMALL, AMP_ERR_BAD_DIM, AMP_ERR_TARGET_OUT_OF_RANGE,
                                 AMP_ERR_NULL_ARG, AMP_ERR_BAD_REDUCTION, AMP_ERR_WEIGHTS_TRUNCATED,
                                 AMP_ERR_WEIGHTS_HEADER, AMP_ERR_WEIGHTS_OFFSETS, AMP_ERR_WEIGHTS_SHAPE,
                                 AMP_ERR_WEIGHTS_DTYPE, AMP_ERR_WEIGHTS_MISSING, AMP_ERR_IO,
                                 AMP_ERR_OUT_OF_MEMORY, AMP_ERR_WEIGHTS_UNEXPECTED, AMP_ERR_SINGULAR,
                                 AMP_ERR_COLLECTIVE, AMP_ERR_NO_CONVERGENCE, AMP_ERR_BAD_PREPARED,
                                 AMP_ERR_WEIGHTS_NOT_FILE, AMP_ERR_WEIGHTS_CHECKSUM, AMP_ERR_CHECKPOINT_VALUE };
    static const int unknown[] = { -1, AMP_ERR_CHECKPOINT_VALUE + 1, 1000, INT_MIN, INT_MAX };
    const size_t ncodes = sizeof codes / sizeof codes[0];
    const char *generic = amp_strerror(-1);
    (void)state;

    assert_int_equal(AMP_OK, 0);
    assert_non_null(generic);
    assert_string_equal(generic, "unknown amprt status code");
    for (size_t i = 0; i < ncodes; i++) {
        const char *msg = amp_strerror(codes[i]);
        assert_non_null(msg);
        assert_true(strlen(msg) > 0);
        assert_string_not_equal(msg, generic);
        for (size_t j = 0; j < i; j++) /* each code says something different */
            assert_string_not_equal(msg, amp_strerror(codes[j]));
    }
    assert_string_equal(amp_strerror(AMP_OK), "success");
    assert_non_null(strstr(amp_strerror(AMP_ERR_TARGET_OUT_OF_RANGE), "target"));
    assert_non_null(strstr(amp_strerror(AMP_ERR_ARENA_TOO_SMALL), "arena"));
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        assert_string_equal(amp_strerror(unknown[i]), generic);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_unset_is_auto),
        cmocka_unit_test(test_sets_resolve_as_filled),
        cmocka_unit_test(test_isa_ref_forces_reference),
        cmocka_unit_test(test_isa_forced_sets),
        cmocka_unit_test(test_isa_unknown_warns_once_and_uses_auto),
        cmocka_unit_test(test_isa_ref_in_process),
        cmocka_unit_test(test_strerror_every_code),
    };
    setenv("AMPRT_ISA", "ref", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
