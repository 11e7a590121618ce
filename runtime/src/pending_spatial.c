/*
 * pending_spatial.c - TEMPORARY placeholders for the spatial kernels of
 * amprt/spatial.h that are declared but not written yet, so that the library
 * links while they are.  Each aborts.  Delete a row's placeholder (or this
 * whole file) as its real reference kernel lands; no release ships it.
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
AMP_SPATIAL_OF_CTYPE(PENDING, f64, double)
AMP_SPATIAL_OF_CTYPE(PENDING, f32, float)
AMP_SPATIAL_OF_CTYPE(PENDING, bf16, amp_bf16)
AMP_SPATIAL_OF_CTYPE(PENDING, f16, amp_f16)
