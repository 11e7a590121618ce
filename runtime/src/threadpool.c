/*
 * threadpool.c - the runtime's persistent worker threads, and the thread
 * count API (amp_set_threads / amp_get_threads).
 *
 * Workers are created lazily, the first time a parallel run needs them, and
 * then wait on a condition variable for the next run; nothing creates a
 * thread per call.  A run hands out task numbers from a shared counter, so
 * which thread runs a task varies, but each task's result does not (the
 * GEMM's tasks own disjoint output blocks and sum in a fixed order).
 * Runs are serialized by one lock: the caller of amp_parallel_run is slot
 * 0, worker i is slot i, and a slot's static buffers (isa_gemm.c) belong to
 * whichever task runs in it.  After fork() the child starts with no workers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "amprt_internal.h"

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER; /* one run at a time */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static int n_workers;            /* created so far (slots 1..n_workers) */
static unsigned long generation; /* bumped per run */
static int run_workers;          /* workers taking part in the current run */
static int finished;             /* of them, how many are done */
static void (*run_fn)(void *, int64_t, int);
static void *run_ctx;
static int64_t run_tasks;
static int64_t next_task; /* under __atomic builtins */
static unsigned long start_generation[AMP_MAX_THREADS]; /* per slot, at creation */

static int threads_setting; /* 0: not yet read from the environment */
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int atfork_registered;

static int clamp_threads(long n)
{
    return n < 1 ? 1 : n > AMP_MAX_THREADS ? AMP_MAX_THREADS : (int)n;
}

static int default_threads(void)
{
    const char *env = getenv("AMPRT_THREADS");
    if (env != NULL && env[0] != '\0') {
        char *end;
        long n = strtol(env, &end, 10);
        if (*end == '\0' && n >= 1)
            return clamp_threads(n);
        fprintf(stderr, "amprt: warning: AMPRT_THREADS=\"%s\" is not a positive integer; ignored\n", env);
    }
    return clamp_threads(sysconf(_SC_NPROCESSORS_ONLN));
}

static void read_threads(void)
{
    int n = default_threads();
    __atomic_store_n(&threads_setting, n, __ATOMIC_RELAXED);
}

int amp_get_threads(void)
{
    pthread_once(&threads_once, read_threads);
    return __atomic_load_n(&threads_setting, __ATOMIC_RELAXED);
}

void amp_set_threads(int n)
{
    pthread_once(&threads_once, read_threads);
    __atomic_store_n(&threads_setting, n < 1 ? default_threads() : clamp_threads(n), __ATOMIC_RELAXED);
}

static void run_tasks_as(int slot)
{
    for (;;) {
        int64_t task = __atomic_fetch_add(&next_task, 1, __ATOMIC_RELAXED);
        if (task >= run_tasks)
            return;
        run_fn(run_ctx, task, slot);
    }
}

/* Spinning briefly before sleeping on a condition variable keeps the
 * hand-off between back-to-back products (a model's layers) in the
 * microseconds a futex wake-up would cost. */
#define SPIN_ITERATIONS 1000

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker(void *arg)
{
    int slot = (int)(intptr_t)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool_lock);
    seen = start_generation[slot]; /* the run that created it is still to do */
    for (;;) {
        if (generation == seen) {
            pthread_mutex_unlock(&pool_lock);
            for (int i = 0; i < SPIN_ITERATIONS && __atomic_load_n(&generation, __ATOMIC_ACQUIRE) == seen; i++)
                cpu_relax();
            pthread_mutex_lock(&pool_lock);
        }
        while (generation == seen)
            pthread_cond_wait(&work_cv, &pool_lock);
        seen = generation;
        if (slot > run_workers)
            continue; /* not needed this run */
        pthread_mutex_unlock(&pool_lock);
        run_tasks_as(slot);
        pthread_mutex_lock(&pool_lock);
        if (__atomic_add_fetch(&finished, 1, __ATOMIC_RELEASE) == run_workers)
            pthread_cond_signal(&done_cv);
    }
    return NULL;
}

/* In a forked child only the forking thread exists: forget the workers. */
static void after_fork_child(void)
{
    pthread_mutex_init(&run_lock, NULL);
    pthread_mutex_init(&pool_lock, NULL);
    pthread_cond_init(&work_cv, NULL);
    pthread_cond_init(&done_cv, NULL);
    n_workers = 0;
}

void amp_parallel_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx)
{
    int want;
    pthread_mutex_lock(&run_lock);
    want = clamp_threads(nthreads);
    if (want > ntasks)
        want = (int)(ntasks < 1 ? 1 : ntasks);
    run_fn = fn;
    run_ctx = ctx;
    run_tasks = ntasks;
    __atomic_store_n(&next_task, 0, __ATOMIC_RELAXED);
    if (want > 1) {
        pthread_mutex_lock(&pool_lock);
        if (!atfork_registered)
            atfork_registered = pthread_atfork(NULL, NULL, after_fork_child) == 0;
        while (n_workers < want - 1) {
            pthread_t tid;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            start_generation[n_workers + 1] = generation;
            if (pthread_create(&tid, &attr, worker, (void *)(intptr_t)(n_workers + 1)) != 0) {
                pthread_attr_destroy(&attr);
                break; /* run with the workers we have */
            }
            pthread_attr_destroy(&attr);
            n_workers++;
        }
        run_workers = want - 1 < n_workers ? want - 1 : n_workers;
        finished = 0;
        if (run_workers > 0) {
            __atomic_store_n(&generation, generation + 1, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&work_cv);
        }
        pthread_mutex_unlock(&pool_lock);
        run_tasks_as(0);
        for (int i = 0; i < SPIN_ITERATIONS && __atomic_load_n(&finished, __ATOMIC_ACQUIRE) < run_workers; i++)
            cpu_relax();
        pthread_mutex_lock(&pool_lock);
        while (finished < run_workers)
            pthread_cond_wait(&done_cv, &pool_lock);
        pthread_mutex_unlock(&pool_lock);
    } else {
        run_tasks_as(0);
    }
    pthread_mutex_unlock(&run_lock);
}
