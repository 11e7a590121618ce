/*
 * vcpu_probe.c - how far apart the machine's CPUs are right now: the time
 * two threads of one process take to pass a cache line back and forth.
 *
 *   cc -std=c99 -O2 bench/vcpu_probe.c -lpthread -o vcpu_probe
 *   ./vcpu_probe          prints the round trip in ns, e.g. "vcpu_probe 96"
 *
 * bench/torch_models.py runs it before each of ampc's rounds and prints
 * the round trips it saw beside each case.  On the shared virtual machine
 * docs/benchmarks.md describes, it reads 85-215 ns in calm spells and
 * 615-650 ns in slow ones, when what one vCPU wrote costs the other three
 * times as much to read and the runtime's two-thread kernels lose about a
 * quarter; a busy machine (the other CPU taken) reads in the thousands.
 * The round trip is the median of 9 batches of 2000.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 9
#define TRIPS 2000

/* the line passed back and forth: odd values the main thread's serve,
 * even ones the partner's reply */
static int ball __attribute__((aligned(64)));
static int stop __attribute__((aligned(64)));

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *partner(void *arg)
{
    int last = 0;
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        const int b = __atomic_load_n(&ball, __ATOMIC_ACQUIRE);
        if ((b & 1) && b != last) {
            last = b;
            __atomic_store_n(&ball, b + 1, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    pthread_t tid;
    double batch[BATCHES];
    int serve = 1;
    if (pthread_create(&tid, NULL, partner, NULL) != 0) {
        fprintf(stderr, "vcpu_probe: cannot start a thread\n");
        return 1;
    }
    for (int b = 0; b < BATCHES; b++) {
        const double t0 = now_ns();
        for (int i = 0; i < TRIPS; i++, serve += 2) {
            __atomic_store_n(&ball, serve, __ATOMIC_RELEASE);
            while (__atomic_load_n(&ball, __ATOMIC_ACQUIRE) != serve + 1)
                ;
        }
        batch[b] = (now_ns() - t0) / TRIPS;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(tid, NULL);
    qsort(batch, BATCHES, sizeof batch[0], cmp_double);
    printf("vcpu_probe %.0f\n", batch[BATCHES / 2]);
    return 0;
}
