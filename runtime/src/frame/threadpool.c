/*
 * threadpool.c - the runtime's persistent worker threads, and the thread
 * count API (amp_set_threads / amp_get_threads).
 *
 * Workers are created lazily, the first time a parallel run needs them, and
 * then wait for the next run, spinning a while (back-to-back runs, a
 * model's layers, hand over in well under a microsecond) and then asleep
 * on a condition variable; nothing creates a thread per call.
 *
 * A run is published as one 64-bit word, `state`, the run's number in its
 * high half.  Its tasks are cut into one contiguous home range per thread
 * taking part (slot s: the s-th of them), each with a claim word on a
 * cache line of its own: the run's number in the high half, the range's
 * next unclaimed task in the low half.  A thread claims tasks by a
 * compare-and-swap on a claim word, half of what is left of the range at a
 * time, so a worker that wakes late, after its run is over or while the
 * next one is under way, cannot claim a task of a run it did not see (its
 * run number no longer matches).  It empties its own range first, then
 * helps with the others'.  Why:
 *   - a model's kernels order their tasks by image (or by memory), so a
 *     thread keeps to the same images from layer to layer and reads what
 *     it wrote itself;
 *   - while each is in its own range the threads write no common line but
 *     `completed` (a resnet18 training step runs some 30,000 tasks;
 *     claiming each from one shared word moved that word and the count
 *     between the CPUs twice a task, at 100-300 ns a move when this
 *     virtual machine's two vCPUs are far apart);
 *   - the halving chunks end in single tasks, so the threads still finish
 *     together.
 * The caller runs tasks too (slot 0; worker i is slot i), and returns once
 * `completed` counts every task: it never waits for a worker that did not
 * get to claim anything (a descheduled one costs nothing: the others
 * empty its range), only for tasks in progress.
 * Which thread runs a task varies, but each task's result does not (the
 * GEMM's tasks own disjoint output blocks and sum in a fixed order).
 * Runs are serialized by one lock, so a slot's static buffers
 * (frame/gemm.c) belong to whichever task runs in it.  After fork() the
 * child starts with no workers.
 *
 * A runtime built with AMPRT_NO_THREADS (make BARE=1) has no pool: this
 * file compiles to nothing and frame/serial.c runs every task on the
 * caller.
 */
#include "amprt_internal.h"

#if !defined(AMPRT_NO_THREADS)

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER; /* one run at a time */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;  /* sleeping workers */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;

/* The words both CPUs write each on a cache line of its own, apart from
 * the run's description, which they only read while it runs. */
#define LINE_ALIGNED __attribute__((aligned(64)))
static int n_workers;        /* created so far (slots 1..n_workers) */
static uint64_t state LINE_ALIGNED;     /* run number << 32 (atomic) */
/* Per slot, the claim word of its home range of tasks: run number << 32 |
 * next task of the range (atomic), each on a line of its own. */
static struct {
    uint64_t word;
    char pad[64 - sizeof(uint64_t)];
} claim[AMP_MAX_THREADS] LINE_ALIGNED;
static int64_t completed LINE_ALIGNED;  /* tasks of the current run done (atomic) */
static int sleepers LINE_ALIGNED;       /* workers asleep or about to be (atomic) */
static uint32_t start_run[AMP_MAX_THREADS]; /* per slot: the run number before the one creating it */
/* the current run (atomic, relaxed: published by the release of `state`) */
static struct {
    void (*fn)(void *, int64_t, int);
    void *ctx;
    int64_t tasks;
    int threads; /* threads taking part (slots below) */
    int64_t range_end[AMP_MAX_THREADS]; /* slot i's home range ends here (starts at i's predecessor's end) */
} run_desc LINE_ALIGNED;
#define run_fn run_desc.fn
#define run_ctx run_desc.ctx
#define run_tasks run_desc.tasks
#define run_threads run_desc.threads

static int threads_setting; /* 0: not yet read from the environment */
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

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

/* Claim and run tasks of range r of run `run`, half of what is left of
 * it at a time, until it is empty (1) or the run is over (0). */
static int run_range(uint32_t run, int r, int slot)
{
    uint64_t cur = __atomic_load_n(&claim[r].word, __ATOMIC_ACQUIRE);
    for (;;) {
        const int64_t next = (int64_t)(cur & 0xffffffffu);
        int64_t end, chunk;
        if ((uint32_t)(cur >> 32) != run)
            return 0;
        /* (the run's description, seen through the acquire of a claim
         * word that carries its number) */
        end = __atomic_load_n(&run_desc.range_end[r], __ATOMIC_RELAXED);
        if (next >= end)
            return 1;
        chunk = (end - next + 1) / 2;
        if (__atomic_compare_exchange_n(&claim[r].word, &cur, cur + (uint64_t)chunk, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            void (*fn)(void *, int64_t, int) = __atomic_load_n(&run_fn, __ATOMIC_RELAXED);
            void *ctx = __atomic_load_n(&run_ctx, __ATOMIC_RELAXED);
            for (int64_t t = next; t < next + chunk; t++)
                fn(ctx, t, slot);
            __atomic_add_fetch(&completed, chunk, __ATOMIC_RELEASE);
            cur = __atomic_load_n(&claim[r].word, __ATOMIC_ACQUIRE);
        }
    }
}

/* The tasks of run `run` that slot can get: its home range first, then
 * the others' in turn. */
static void run_tasks_as(uint32_t run, int slot)
{
    const int threads = __atomic_load_n(&run_threads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < threads; i++)
        if (!run_range(run, (slot + i) % threads, slot))
            return;
}

/* Spinning before sleeping keeps the hand-off between back-to-back runs
 * (a model's layers, a few microseconds apart) off the futex: about 100 us
 * of pause instructions on current x86 (some 25 ns each). */
#define SPIN_ITERATIONS 4000

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static uint32_t current_run(void) { return (uint32_t)(__atomic_load_n(&state, __ATOMIC_ACQUIRE) >> 32); }

static void *worker(void *arg)
{
    const int slot = (int)(intptr_t)arg;
    /* the run after start_run is the one that created it: take part */
    uint32_t seen = __atomic_load_n(&start_run[slot], __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t run;
        for (int i = 0; i < SPIN_ITERATIONS && current_run() == seen; i++)
            cpu_relax();
        if (current_run() == seen) {
            /* Asleep until a run starts.  Dekker with amp_parallel_run:
             * sleepers is raised before the run number is read again (both
             * sequentially consistent), and the caller bumps the run before
             * it reads sleepers, so one of the two sees the other; the
             * broadcast is under pool_lock, which this thread holds from
             * the check into the wait. */
            pthread_mutex_lock(&pool_lock);
            __atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
            while ((uint32_t)(__atomic_load_n(&state, __ATOMIC_SEQ_CST) >> 32) == seen)
                pthread_cond_wait(&work_cv, &pool_lock);
            __atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&pool_lock);
        }
        run = current_run();
        seen = run;
        if (slot < __atomic_load_n(&run_threads, __ATOMIC_ACQUIRE))
            run_tasks_as(run, slot);
    }
    return NULL;
}

/* In a forked child only the forking thread exists: forget the workers. */
static void after_fork_child(void)
{
    pthread_mutex_init(&run_lock, NULL);
    pthread_mutex_init(&pool_lock, NULL);
    pthread_cond_init(&work_cv, NULL);
    n_workers = 0;
    sleepers = 0;
}

/* The run, with run_lock held by the caller (released here). */
static void run_locked(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx)
{
    static int atfork_registered;
    int want;
    uint32_t run;
    run = (uint32_t)(__atomic_load_n(&state, __ATOMIC_RELAXED) >> 32);
    if (ntasks >= (int64_t)0xffffffff) { /* beyond a 32-bit task index: on this thread */
        for (int64_t t = 0; t < ntasks; t++)
            fn(ctx, t, 0);
        pthread_mutex_unlock(&run_lock);
        return;
    }
    /* Close the finished run's claim words first (every task claimed), so
     * that no late worker can claim anything while the new run is
     * written: those of its threads (older words carry older run
     * numbers, which no worker of this run matches). */
    for (int i = 0; i < __atomic_load_n(&run_threads, __ATOMIC_RELAXED); i++)
        __atomic_store_n(&claim[i].word, (uint64_t)run << 32 | 0xffffffffu, __ATOMIC_SEQ_CST);
    want = clamp_threads(nthreads);
    if (want > ntasks)
        want = (int)(ntasks < 1 ? 1 : ntasks);
    if (want > 1) {
        if (!atfork_registered)
            atfork_registered = pthread_atfork(NULL, NULL, after_fork_child) == 0;
        while (n_workers < want - 1) {
            pthread_t tid;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            __atomic_store_n(&start_run[n_workers + 1], run, __ATOMIC_RELEASE);
            if (pthread_create(&tid, &attr, worker, (void *)(intptr_t)(n_workers + 1)) != 0) {
                pthread_attr_destroy(&attr);
                break; /* run with the workers we have */
            }
            pthread_attr_destroy(&attr);
            n_workers++;
        }
        if (want > n_workers + 1)
            want = n_workers + 1;
    }
    /* Publish the run, then its number (with the next task 0): a thread
     * that sees the number sees the rest. */
    __atomic_store_n(&run_fn, fn, __ATOMIC_RELAXED);
    __atomic_store_n(&run_ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&run_tasks, ntasks, __ATOMIC_RELAXED);
    __atomic_store_n(&completed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&run_threads, want, __ATOMIC_RELEASE);
    run++;
    for (int i = 0; i < want; i++) {
        __atomic_store_n(&run_desc.range_end[i], (i + 1) * ntasks / want, __ATOMIC_RELAXED);
        __atomic_store_n(&claim[i].word, (uint64_t)run << 32 | (uint64_t)(i * ntasks / want), __ATOMIC_RELEASE);
    }
    __atomic_store_n(&state, (uint64_t)run << 32, __ATOMIC_SEQ_CST);
    if (want > 1 && __atomic_load_n(&sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&pool_lock);
        pthread_cond_broadcast(&work_cv);
        pthread_mutex_unlock(&pool_lock);
    }
    run_tasks_as(run, 0);
    /* Every task is claimed now; wait for those still running elsewhere. */
    for (unsigned i = 0; __atomic_load_n(&completed, __ATOMIC_ACQUIRE) < ntasks; i++) {
        if (i < SPIN_ITERATIONS)
            cpu_relax();
        else
            sched_yield();
    }
    pthread_mutex_unlock(&run_lock);
}

void amp_parallel_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx)
{
    pthread_mutex_lock(&run_lock);
    run_locked(nthreads, ntasks, fn, ctx);
}

int amp_parallel_try_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx)
{
    if (pthread_mutex_trylock(&run_lock) != 0)
        return 0;
    run_locked(nthreads, ntasks, fn, ctx);
    return 1;
}

#endif /* !AMPRT_NO_THREADS */
