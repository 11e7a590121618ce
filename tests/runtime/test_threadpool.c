/*
 * test_threadpool.c - the runtime's pool (frame/threadpool.c): every task of a
 * run runs exactly once, on a slot below the run's thread count, whatever
 * the number of tasks and threads and however the threads claim them
 * (home ranges, then the others'); back-to-back runs of different sizes never mix; a busy
 * pool makes amp_parallel_try_run decline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "amprt_internal.h"

typedef struct {
    int64_t ntasks;
    int threads;
    int run_id;
    int *runs;        /* per task: how many times it ran */
    int *run_of;      /* per task: the run_id it last ran under */
    int bad_slot;     /* a slot at or past threads was seen */
    int slow_every;   /* every slow_every-th task sleeps a little (0: none) */
} job;

static void count_task(void *ctx, int64_t task, int slot)
{
    job *j = ctx;
    if (task < 0 || task >= j->ntasks) {
        __atomic_store_n(&j->bad_slot, 2, __ATOMIC_RELAXED);
        return;
    }
    if (slot < 0 || slot >= j->threads)
        __atomic_store_n(&j->bad_slot, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&j->runs[task], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&j->run_of[task], j->run_id, __ATOMIC_RELAXED);
    if (j->slow_every > 0 && task % j->slow_every == 0) {
        const struct timespec ts = { 0, 20000 }; /* 20 us: tasks of uneven length */
        nanosleep(&ts, NULL);
    }
}

static void run_and_check(int threads, int64_t ntasks, int slow_every, int run_id)
{
    job j;
    memset(&j, 0, sizeof j);
    j.ntasks = ntasks;
    j.threads = threads;
    j.run_id = run_id;
    j.slow_every = slow_every;
    j.runs = calloc((size_t)ntasks + 1, sizeof *j.runs);
    j.run_of = calloc((size_t)ntasks + 1, sizeof *j.run_of);
    assert_non_null(j.runs);
    assert_non_null(j.run_of);
    amp_parallel_run(threads, ntasks, count_task, &j);
    assert_int_equal(j.bad_slot, 0);
    for (int64_t t = 0; t < ntasks; t++) {
        if (j.runs[t] != 1)
            fail_msg("%d threads, %lld tasks: task %lld ran %d times", threads, (long long)ntasks, (long long)t,
                     j.runs[t]);
        assert_int_equal(j.run_of[t], run_id);
    }
    free(j.runs);
    free(j.run_of);
}

static void test_every_task_once(void **state)
{
    static const int64_t sizes[] = { 1, 2, 3, 5, 7, 16, 33, 100, 257, 4097, 100000 };
    (void)state;
    for (int threads = 1; threads <= 4; threads++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            run_and_check(threads, sizes[i], 0, (int)i + 1);
}

/* Uneven tasks (some sleep), so that the threads' chunks interleave. */
static void test_uneven_tasks(void **state)
{
    (void)state;
    for (int threads = 2; threads <= 3; threads++) {
        run_and_check(threads, 64, 3, 1);
        run_and_check(threads, 1000, 97, 2);
    }
}

/* Many short runs back to back, each a different size: a worker late for
 * one run must not claim (or count) tasks of the next. */
static void test_back_to_back_runs(void **state)
{
    (void)state;
    for (int r = 0; r < 3000; r++)
        run_and_check(2, 1 + (r * 37) % 61, 0, r + 1);
}

static void inner_try(void *ctx, int64_t task, int slot)
{
    int *declined = ctx;
    (void)slot;
    if (task == 0) /* the pool is running this run: a nested try declines */
        *declined = !amp_parallel_try_run(2, 4, count_task, NULL);
}

static void test_try_run_declines_when_busy(void **state)
{
    int declined = 0;
    (void)state;
    amp_parallel_run(2, 1, inner_try, &declined);
    assert_int_equal(declined, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_task_once),
        cmocka_unit_test(test_uneven_tasks),
        cmocka_unit_test(test_back_to_back_runs),
        cmocka_unit_test(test_try_run_declines_when_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
