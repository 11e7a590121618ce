/*
 * chunked.h - the element-wise kernels' split of a loop over the thread
 * pool: body(ctx, begin, end) over [0, n) units of `unit` elements, in
 * tasks of about AMP_CHUNK elements once there are AMP_PARALLEL_MIN or
 * more (waking the pool costs more than it saves below), else one call.
 * A task of single elements is exactly AMP_CHUNK of them (a multiple of
 * every set's vector width, so that only the last task has a tail).  The
 * kernels compute each element on its own, so the result does not depend
 * on the split.  Used by the x86 sets' element-wise files
 * (x86/avx2_store.h's avx2_run_chunked is this).  Needs amprt_internal.h.
 */
#ifndef AMPRT_FRAME_CHUNKED_H
#define AMPRT_FRAME_CHUNKED_H

#include <stddef.h>
#include <stdint.h>

#define AMP_CHUNK ((size_t)1 << 16)
#define AMP_PARALLEL_MIN ((size_t)1 << 17)

typedef struct {
    void (*body)(const void *ctx, size_t begin, size_t end);
    const void *ctx;
    size_t n, per_task;
} amp_chunk_job;

static inline void amp_chunk_task(void *ctx, int64_t task, int slot)
{
    const amp_chunk_job *j = ctx;
    size_t begin = (size_t)task * j->per_task, end = begin + j->per_task < j->n ? begin + j->per_task : j->n;
    (void)slot;
    j->body(j->ctx, begin, end);
}

/* (Out of line: one copy per file rather than one in every table entry;
 * one call more per kernel call is nothing next to the kernel's loop.) */
static __attribute__((unused, noinline)) void amp_run_chunked(size_t n, size_t unit,
                                                              void (*body)(const void *, size_t, size_t),
                                                              const void *ctx)
{
    amp_chunk_job j = { body, ctx, n, AMP_CHUNK / (unit ? unit : 1) + 1 };
    if (n * unit < AMP_PARALLEL_MIN || amp_get_threads() == 1) {
        body(ctx, 0, n);
        return;
    }
    if (unit == 1)
        j.per_task = AMP_CHUNK;
    amp_parallel_run(amp_get_threads(), (int64_t)((n + j.per_task - 1) / j.per_task), amp_chunk_task, &j);
}

#endif /* AMPRT_FRAME_CHUNKED_H */
