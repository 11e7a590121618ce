/*
 * scratch.c - the optimized kernels' per-call work buffers (packed
 * weights of a training step's convolutions, packed B blocks, im2col
 * matrices, f32 partial sums): kept for the next call instead of being
 * returned to malloc.
 *
 * Why: such buffers run to megabytes, and malloc serves blocks that
 * large with mmap and returns them with munmap, so every call page-faults
 * its buffers in again (a resnet18 training step re-faulted 54 MB, 14
 * thousand faults, and ran 5% slower for it).  Whether glibc does so
 * depends on its dynamic threshold, i.e. on the sizes freed before:
 * correct either way, but the speed of one kernel then depended on what
 * others had allocated.  Here up to SCRATCH_CACHED blocks of at least
 * SCRATCH_MIN_BYTES stay allocated after amp_scratch_free, and
 * amp_scratch_alloc hands out the smallest cached block large enough.
 * What stays is bounded by the largest buffers a model's kernels use at
 * once (tens of MB for resnet18's training step).  Blocks are 64-byte
 * aligned.  Thread-safe (one mutex; a call takes it twice per buffer;
 * none in a runtime built with AMPRT_NO_THREADS).
 */
#include <stdlib.h>

#include "amprt_internal.h"

#if defined(AMPRT_NO_THREADS)
#define LOCK() ((void)0)
#define UNLOCK() ((void)0)
#else
#include <pthread.h>
static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&scratch_lock)
#define UNLOCK() pthread_mutex_unlock(&scratch_lock)
#endif

#define SCRATCH_CACHED 8
#define SCRATCH_MIN_BYTES ((size_t)64 * 1024)
#define SCRATCH_HEADER 64 /* the block's capacity, keeping the data 64-byte aligned */

static void *cached[SCRATCH_CACHED]; /* blocks (their headers), NULL: empty */

static size_t capacity_of(void *block) { return *(size_t *)block; }

void *amp_scratch_alloc(size_t bytes)
{
    void *best = NULL;
    int best_i = -1;
    LOCK();
    for (int i = 0; i < SCRATCH_CACHED; i++)
        if (cached[i] != NULL && capacity_of(cached[i]) >= bytes &&
            (best == NULL || capacity_of(cached[i]) < capacity_of(best))) {
            best = cached[i];
            best_i = i;
        }
    if (best != NULL)
        cached[best_i] = NULL;
    UNLOCK();
    if (best == NULL) {
        if (bytes > (size_t)-1 - 2 * SCRATCH_HEADER || posix_memalign(&best, 64, SCRATCH_HEADER + bytes) != 0)
            return NULL;
        *(size_t *)best = bytes;
    }
    return (char *)best + SCRATCH_HEADER;
}

void amp_scratch_free(void *p)
{
    void *block, *drop;
    if (p == NULL)
        return;
    block = (char *)p - SCRATCH_HEADER;
    drop = block;
    if (capacity_of(block) >= SCRATCH_MIN_BYTES) {
        LOCK();
        /* an empty place, else in place of the smallest cached block if
         * this one is larger (the larger one serves more requests) */
        int at = -1;
        for (int i = 0; i < SCRATCH_CACHED && at < 0; i++)
            if (cached[i] == NULL)
                at = i;
        if (at < 0)
            for (int i = 0; i < SCRATCH_CACHED; i++)
                if (capacity_of(cached[i]) < capacity_of(at < 0 ? block : cached[at]))
                    at = i;
        if (at >= 0) {
            drop = cached[at];
            cached[at] = block;
        }
        UNLOCK();
    }
    free(drop);
}
