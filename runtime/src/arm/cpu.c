/*
 * cpu.c - which of the aarch64 kernel sets this CPU can run.
 *
 * The kernel reports the CPU's features in the auxiliary vector
 * (getauxval: AT_HWCAP, AT_HWCAP2), which also says the OS saves the
 * registers they use, so no instruction is probed: FP and Advanced SIMD
 * for neon (every ARMv8-A Linux system has them, but a kernel may hide
 * them), FEAT_FP16 (half-precision arithmetic, scalar and vector) for
 * neonfp16, FEAT_BF16 (BFCVT, BFDOT) besides for neonbf16.  dispatch.c asks once, under
 * pthread_once.
 */
#include "amprt_internal.h"

#if defined(__aarch64__)

#include <sys/auxv.h>

/* The bits of Linux's uapi asm/hwcap.h, in case the C library's headers
 * predate them. */
#ifndef HWCAP_FP
#define HWCAP_FP (1ul << 0)
#endif
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1ul << 1)
#endif
#ifndef HWCAP_FPHP
#define HWCAP_FPHP (1ul << 9)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1ul << 10)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1ul << 14)
#endif

unsigned amp_cpu_features(void)
{
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    unsigned f = 0;
    if ((hw & HWCAP_FP) && (hw & HWCAP_ASIMD))
        f |= AMP_CPU_NEON;
    if ((f & AMP_CPU_NEON) && (hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP))
        f |= AMP_CPU_NEON_FP16;
    /* neonbf16 builds on neonfp16 (every FEAT_BF16 core shipped has
     * FEAT_FP16 too; one without it runs neon) */
    if ((f & AMP_CPU_NEON_FP16) && (hw2 & HWCAP2_BF16))
        f |= AMP_CPU_NEON_BF16;
    return f;
}

#endif /* aarch64 */
