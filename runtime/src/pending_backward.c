/*
 * pending_backward.c - TEMPORARY placeholders for the kernels of amprt/backward.h
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
AMP_BACKWARD_OF_CTYPE(PENDING, f64, double)
AMP_BACKWARD_OF_CTYPE(PENDING, f32, float)
AMP_BACKWARD_OF_CTYPE(PENDING, bf16, amp_bf16)
AMP_BACKWARD_OF_CTYPE(PENDING, f16, amp_f16)
