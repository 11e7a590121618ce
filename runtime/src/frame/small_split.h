/*
 * small_split.h - whether a small product runs on two threads, chosen
 * from measured cycles per shape (frame/small_split.c): the statistics
 * the kernel sets' one-pass small paths share (x86/avx512.c's bf16
 * tiles, x86/avx2_small.c's f32 tiles).
 */
#ifndef AMPRT_FRAME_SMALL_SPLIT_H
#define AMPRT_FRAME_SMALL_SPLIT_H

#include <stdint.h>

/* Whether this build splits at all: a runtime without threads (make
 * BARE=1) never does, and its small paths then link none of this. */
#if defined(AMPRT_NO_THREADS)
#define AMP_SMALL_SPLIT_BUILT 0
#else
#define AMP_SMALL_SPLIT_BUILT 1
#endif

typedef struct {
    uint64_t key;       /* the shape (0: free) */
    uint32_t cycles[2]; /* moving averages: one thread, two (0: not yet measured) */
    uint32_t calls;
} amp_split_stat;

/* The statistics of the shape `key` (collisions only share a measurement). */
amp_split_stat *amp_split_stat_of(uint64_t key);

/* 1: run this call on two threads; *record: whether its cycles count. */
int amp_split_choose(amp_split_stat *st, int *record);

/* One call's cycles, on two threads (two = 1) or one. */
void amp_split_record(amp_split_stat *st, int two, uint64_t cycles);

#endif
