/*
 * cpu.c - which of the x86 kernel sets this CPU, and its OS, can run.
 *
 * cpuid says what the CPU implements; xgetbv (XCR0) says which register
 * state the OS saves on a context switch.  A set is usable only when both
 * agree: AVX state (XCR0 bits 1, 2) for avx2, and the opmask and upper-ZMM
 * state (bits 5, 6, 7) as well for the AVX-512 sets.  dispatch.c asks once,
 * under pthread_once.
 */
#include "amprt_internal.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>

static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

unsigned amp_cpu_features(void)
{
    unsigned a, b, c, d, b7 = 0, a71 = 0, f = 0;
    uint64_t xcr0;
    int avx_os, avx512_os;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (!(c & (1u << 27))) /* OSXSAVE: xgetbv is usable */
        return 0;
    xcr0 = read_xcr0();
    avx_os = (xcr0 & 0x6) == 0x6;
    avx512_os = avx_os && (xcr0 & 0xe0) == 0xe0;
    if (__get_cpuid_max(0, NULL) >= 7) {
        unsigned c7, d7;
        __cpuid_count(7, 0, a, b7, c7, d7);
        if (a >= 1) {
            unsigned b71, c71, d71;
            __cpuid_count(7, 1, a71, b71, c71, d71);
        }
    }
    if (avx_os && (c & (1u << 28)) /* AVX */ && (c & (1u << 12)) /* FMA */ && (c & (1u << 29)) /* F16C */ &&
        (b7 & (1u << 5)) /* AVX2 */)
        f |= AMP_CPU_AVX2;
    if ((f & AMP_CPU_AVX2) && avx512_os && (b7 & (1u << 16)) /* F */ && (b7 & (1u << 30)) /* BW */ &&
        (b7 & (1u << 31)) /* VL */)
        f |= AMP_CPU_AVX512;
    if ((f & AMP_CPU_AVX512) && (a71 & (1u << 5)) /* AVX512_BF16 */)
        f |= AMP_CPU_AVX512BF16;
    return f;
}

#endif /* x86 */
