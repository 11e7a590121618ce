/*
 * serial.c - the thread API without threads, for a runtime built with
 * AMPRT_NO_THREADS (make BARE=1): every parallel run's tasks run on the
 * calling thread, in task order, in slot 0; amp_get_threads() is 1 and
 * amp_set_threads changes nothing.  The tasks of a run never depend on
 * how many threads run them (frame/threadpool.c), so the results are the
 * threaded build's bits.  In every other build frame/threadpool.c is the
 * pool and this file compiles to nothing.
 */
#include "amprt_internal.h"

#if defined(AMPRT_NO_THREADS)

int amp_get_threads(void)
{
    return 1;
}

void amp_set_threads(int n)
{
    (void)n;
}

void amp_parallel_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx)
{
    (void)nthreads;
    for (int64_t i = 0; i < ntasks; i++)
        fn(ctx, i, 0);
}

int amp_parallel_try_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx)
{
    amp_parallel_run(nthreads, ntasks, fn, ctx);
    return 1;
}

#endif /* AMPRT_NO_THREADS */
