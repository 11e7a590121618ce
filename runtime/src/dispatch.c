/*
 * dispatch.c - choosing the kernel set once, and the public kernels that call
 * through it.
 *
 * Every public amp_<name> is a one-line forwarder to the active table (so
 * emitted code links against stable names), generated from the kernel list
 * in amprt.h. The table is filled once per process under pthread_once, from
 * AMPRT_ISA, and never changes afterwards, so calls need no locking.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amprt_internal.h"

const amp_kernel_table amp_ref_kernel_table = {
    .isa = "ref",
#define AMP_REF_ENTRY(name, ret, params, args) .name = amp_ref_##name,
    AMP_FOR_EACH_KERNEL(AMP_REF_ENTRY)
#undef AMP_REF_ENTRY
};

static amp_kernel_table active;
static pthread_once_t active_once = PTHREAD_ONCE_INIT;

/* "auto" means the best kernel set this CPU supports. The reference set is
 * the only one so far, so "auto" and "ref" both select it; an ISA-specific
 * set will add its CPU check and its overrides on the "auto" path only, so
 * that "ref" keeps forcing the reference kernels. */
static void choose_kernels(void)
{
    const char *want = getenv("AMPRT_ISA");

    active = amp_ref_kernel_table;
    if (want == NULL || want[0] == '\0' || strcmp(want, "auto") == 0 || strcmp(want, "ref") == 0)
        return;
    fprintf(stderr, "amprt: warning: unknown AMPRT_ISA value \"%s\" (expected \"auto\" or \"ref\"); using auto\n",
            want);
}

static const amp_kernel_table *kernels(void)
{
    pthread_once(&active_once, choose_kernels);
    return &active;
}

const char *amp_isa_name(void)
{
    return kernels()->isa;
}

/* A void call cannot be `return`ed in C, so the forwarder's statement
 * depends on the kernel's return type. */
#define AMP_FORWARD_void(call) call;
#define AMP_FORWARD_int(call) return call;
#define AMP_DEFINE_PUBLIC(name, ret, params, args) \
    ret amp_##name params { AMP_FORWARD_##ret(kernels()->name args) }
AMP_FOR_EACH_KERNEL(AMP_DEFINE_PUBLIC)
