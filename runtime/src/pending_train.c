/*
 * pending_train.c - TEMPORARY placeholders for the kernels of amprt/train.h
 * that are declared but not written yet, so that the library links while
 * they are.  Each aborts.  Delete this file when every one is real.
 */
#include <stdio.h>
#include <stdlib.h>

#include "amprt_internal.h"

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif

#define PENDING(name, ret, params, args)                                        \
    ret amp_ref_##name params                                                   \
    {                                                                           \
        fprintf(stderr, "amprt: kernel %s is not written yet\n", #name);        \
        abort();                                                                \
    }
AMP_TRAIN_OF_CTYPE(PENDING, f64, double)
AMP_TRAIN_OF_CTYPE(PENDING, f32, float)
AMP_TRAIN_OF_CTYPE(PENDING, bf16, amp_bf16)
AMP_TRAIN_OF_CTYPE(PENDING, f16, amp_f16)
AMP_TRAIN_KERNELS(PENDING)

int amp_st_write(const char *path, const amp_st_entry *tensors, int n)
{
    fprintf(stderr, "amprt: amp_st_write is not written yet (%s, %p, %d)\n", path, (const void *)tensors, n);
    abort();
}
