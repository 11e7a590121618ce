/*
 * small_split.c - whether a splittable small product runs on two threads.
 *
 * On CPUs of their own, two threads run the digits MLP's 1 MFLOP products
 * in 0.6 of one thread's time.  On a shared virtual machine, in spells of
 * seconds, they take up to twice one thread's time instead: the split
 * call's caller spent 12,000-14,000 cycles in its own half of a product
 * that takes 7,400 on one thread (the two vCPUs then apparently far
 * apart, every line the other one wrote a slow miss), and the digits
 * training step went from 10.3 us to 21-26 us while on one thread it kept
 * to 11.3.  So each splittable shape keeps a moving average of its calls'
 * cycles each way (the caller counts them: the time-stamp counter on
 * x86), runs the cheaper way, and now and then tries the other.  Two
 * threads stay the choice until they measure a fifth slower than one: the
 * split calls' own times wander by that much in calm spells.  A sample
 * counts at most 1.5 times the average it updates (one interrupted call
 * moves it by 1/16); a doubling shows within a dozen calls.  Either way
 * the bits are the same.  The statistics are shared by the program's
 * threads through relaxed atomics: a lost update costs only a sample.
 * amp_small_split_policy pins the choice (tests).
 */
#include "amprt_internal.h"
#include "small_split.h"

#define SPLIT_SLOTS 16
#define SPLIT_PROBE_ONE 64 /* calls per try of one thread, while two are the choice */
#define SPLIT_PROBE_TWO 8  /* calls per try of two threads, while one is the choice */

static amp_split_stat split_stats[SPLIT_SLOTS];
static int split_policy; /* 0: measured; 1: always split; -1: never */

void amp_small_split_policy(int policy) { __atomic_store_n(&split_policy, policy, __ATOMIC_RELAXED); }

amp_split_stat *amp_split_stat_of(uint64_t key)
{
    amp_split_stat *st = &split_stats[(key * 0x9e3779b97f4a7c15ull) >> 60];
    if (__atomic_load_n(&st->key, __ATOMIC_RELAXED) != key) {
        /* another shape had the slot: start over for this one */
        __atomic_store_n(&st->cycles[0], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&st->cycles[1], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&st->calls, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&st->key, key, __ATOMIC_RELAXED);
    }
    return st;
}

/* *record is 0 for the very first call of a shape: it may create the
 * pool's worker, or wake it.  Two threads are tried every
 * SPLIT_PROBE_TWO calls while one is the choice: often enough that the
 * pool's worker, spinning 100 us after each run, is still awake for the
 * next try, so that a try measures the split and not a wake-up; one
 * thread every SPLIT_PROBE_ONE calls (its time hardly changes with the
 * machine's state). */
int amp_split_choose(amp_split_stat *st, int *record)
{
    const int policy = __atomic_load_n(&split_policy, __ATOMIC_RELAXED);
    const uint32_t n = __atomic_fetch_add(&st->calls, 1, __ATOMIC_RELAXED);
    const uint32_t one = __atomic_load_n(&st->cycles[0], __ATOMIC_RELAXED);
    const uint32_t two = __atomic_load_n(&st->cycles[1], __ATOMIC_RELAXED);
    *record = policy == 0 && n > 0;
    if (policy != 0)
        return policy > 0;
    if (two == 0)
        return 1;
    if (one == 0)
        return 0;
    if ((uint64_t)two * 5 < (uint64_t)one * 6)
        return n % SPLIT_PROBE_ONE != SPLIT_PROBE_ONE - 1;
    return n % SPLIT_PROBE_TWO == SPLIT_PROBE_TWO - 1;
}

void amp_split_record(amp_split_stat *st, int two, uint64_t cycles)
{
    const uint32_t avg = __atomic_load_n(&st->cycles[two], __ATOMIC_RELAXED);
    uint64_t sample = cycles < 1 ? 1 : cycles > 0x7fffffffu ? 0x7fffffffu : cycles;
    if (avg != 0 && sample > avg + avg / 2)
        sample = avg + avg / 2;
    __atomic_store_n(&st->cycles[two], avg == 0 ? (uint32_t)sample : (uint32_t)(avg - avg / 8 + sample / 8),
                     __ATOMIC_RELAXED);
}
