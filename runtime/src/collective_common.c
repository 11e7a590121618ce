/*
 * collective_common.c - the settings and argument checks both builds of
 * the collectives share (collective_internal.h).  Compiled into every
 * libamprt, with collective_single.c or collective_mpi.c beside it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective_internal.h"

/* A bad setting is reported on stderr, except in a runtime without stdio
 * (AMPRT_NO_STDIO), where the status alone says it. */
#if defined(AMPRT_NO_STDIO)
#define REPORT(...) ((void)0)
#else
#define REPORT(...) fprintf(stderr, __VA_ARGS__)
#endif

/* Process-wide settings: the collectives are called from one thread. */
static amp_dtype reduce_dtype = AMP_F32;
static size_t bucket_bytes = AMP_COLL_DEFAULT_BUCKET_BYTES;

int amp_coll_read_env(void)
{
    const char *d = getenv("AMPRT_ALLREDUCE_DTYPE");
    const char *b = getenv("AMPRT_ALLREDUCE_BUCKET_BYTES");
    amp_dtype want = reduce_dtype;
    size_t bytes = bucket_bytes;
    if (d && d[0]) {
        if (strcmp(d, "f32") == 0)
            want = AMP_F32;
        else if (strcmp(d, "bf16") == 0)
            want = AMP_BF16;
        else {
            REPORT("amprt: AMPRT_ALLREDUCE_DTYPE is \"%s\"; expected f32 or bf16\n", d);
            return AMP_ERR_COLLECTIVE;
        }
    }
    if (b && b[0]) {
        char *end;
        unsigned long long v;
        errno = 0;
        v = strtoull(b, &end, 10);
        if (errno || *end || b[0] == '-' || v < AMP_COLL_MIN_BUCKET_BYTES || v > (size_t)1 << 30) {
            REPORT("amprt: AMPRT_ALLREDUCE_BUCKET_BYTES is \"%s\"; expected a number of bytes from %zu to 2^30\n", b,
                   (size_t)AMP_COLL_MIN_BUCKET_BYTES);
            return AMP_ERR_COLLECTIVE;
        }
        bytes = (size_t)v;
    }
    reduce_dtype = want;
    bucket_bytes = bytes;
    return AMP_OK;
}

size_t amp_coll_bucket_bytes(void) { return bucket_bytes; }

int amp_coll_set_allreduce_dtype(amp_dtype dtype)
{
    if (dtype != AMP_F32 && dtype != AMP_BF16)
        return AMP_ERR_COLLECTIVE;
    reduce_dtype = dtype;
    return AMP_OK;
}

amp_dtype amp_coll_allreduce_dtype(void) { return reduce_dtype; }

int amp_coll_check_tensors(const amp_coll_tensor *tensors, int n)
{
    if (n < 0)
        return AMP_ERR_BAD_DIM;
    if (n > 0 && !tensors)
        return AMP_ERR_NULL_ARG;
    for (int i = 0; i < n; i++) {
        amp_dtype t = tensors[i].dtype;
        if (t != AMP_F64 && t != AMP_F32 && t != AMP_BF16 && t != AMP_F16)
            return AMP_ERR_COLLECTIVE;
        if (tensors[i].n > 0 && !tensors[i].data)
            return AMP_ERR_NULL_ARG;
    }
    return AMP_OK;
}

/* The open push-style reduction: called from one thread, like the rest. */
static int push_open;
static int push_expected, push_count;

int amp_coll_begin_check(int n)
{
    if (n < 0)
        return AMP_ERR_BAD_DIM;
    if (push_open)
        return AMP_ERR_COLLECTIVE;
    push_open = 1;
    push_expected = n;
    push_count = 0;
    return AMP_OK;
}

int amp_coll_push_check(const amp_coll_tensor *t, int *index)
{
    if (!push_open)
        return AMP_ERR_COLLECTIVE;
    if (!t)
        return AMP_ERR_NULL_ARG;
    int rc = amp_coll_check_tensors(t, 1);
    if (rc != AMP_OK)
        return rc;
    if (push_count == push_expected)
        return AMP_ERR_BAD_DIM;
    *index = push_count++;
    return AMP_OK;
}

int amp_coll_finish_check(void)
{
    if (!push_open)
        return AMP_ERR_COLLECTIVE;
    push_open = 0;
    return push_count == push_expected ? AMP_OK : AMP_ERR_BAD_DIM;
}

void amp_coll_push_reset(void) { push_open = 0; }

int amp_allreduce_open(void) { return push_open; }
