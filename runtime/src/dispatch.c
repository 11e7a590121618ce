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

/* ---- CPU detection ----------------------------------------------------------
 *
 * cpuid says what the CPU implements; xgetbv (XCR0) says which register
 * state the OS saves on a context switch.  A set is supported only when
 * both agree: AVX state (XCR0 bits 1, 2) for avx2, and the opmask and
 * upper-ZMM state (bits 5, 6, 7) as well for the AVX-512 sets.
 */
enum { ISA_REF, ISA_AVX2, ISA_AVX512, ISA_AVX512BF16, N_ISAS };
static const char *const isa_names[N_ISAS] = { "ref", "avx2", "avx512", "avx512bf16" };
static int isa_supported[N_ISAS];
static amp_kernel_table isa_tables[N_ISAS];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static void detect_cpu(void)
{
    unsigned a, b, c, d, b7 = 0, a71 = 0;
    uint64_t xcr0;
    int avx_os, avx512_os, avx2, avx512;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    if (!(c & (1u << 27))) /* OSXSAVE: xgetbv is usable */
        return;
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
    avx2 = avx_os && (c & (1u << 28)) /* AVX */ && (c & (1u << 12)) /* FMA */ && (c & (1u << 29)) /* F16C */ &&
           (b7 & (1u << 5)) /* AVX2 */;
    avx512 = avx2 && avx512_os && (b7 & (1u << 16)) /* F */ && (b7 & (1u << 30)) /* BW */ && (b7 & (1u << 31)) /* VL */;
    isa_supported[ISA_AVX2] = avx2;
    isa_supported[ISA_AVX512] = avx512;
    isa_supported[ISA_AVX512BF16] = avx512 && (a71 & (1u << 5)) /* AVX512_BF16 */;
}
#else
static void detect_cpu(void) {}
#endif

/* Every supported set, each a copy of the reference table with its
 * overrides; built once. */
static void build_tables(void)
{
    isa_supported[ISA_REF] = 1;
    detect_cpu();
    for (int i = 0; i < N_ISAS; i++) {
        isa_tables[i] = amp_ref_kernel_table;
        isa_tables[i].isa = isa_names[i];
    }
    if (isa_supported[ISA_AVX2])
        amp_isa_avx2_fill(&isa_tables[ISA_AVX2]);
    if (isa_supported[ISA_AVX512])
        amp_isa_avx512_fill(&isa_tables[ISA_AVX512]);
    if (isa_supported[ISA_AVX512BF16])
        amp_isa_avx512bf16_fill(&isa_tables[ISA_AVX512BF16]);
}

const amp_kernel_table *amp_kernel_table_for(const char *isa)
{
    pthread_once(&tables_once, build_tables);
    for (int i = 0; i < N_ISAS; i++)
        if (isa != NULL && strcmp(isa, isa_names[i]) == 0)
            return isa_supported[i] ? &isa_tables[i] : NULL;
    return NULL;
}

static int best_isa(void)
{
    int best = ISA_REF;
    for (int i = 0; i < N_ISAS; i++)
        if (isa_supported[i])
            best = i;
    return best;
}

/* AMPRT_ISA: "ref" forces the reference kernels; "auto" (empty, unset)
 * the best supported set; a set's name forces it, or, when this CPU lacks
 * it, warns once and uses the best supported set; anything else warns once
 * and means "auto". */
static void choose_kernels(void)
{
    const char *want = getenv("AMPRT_ISA");
    int pick = -1;

    pthread_once(&tables_once, build_tables);
    if (want == NULL || want[0] == '\0' || strcmp(want, "auto") == 0) {
        pick = best_isa();
    } else {
        for (int i = 0; i < N_ISAS; i++)
            if (strcmp(want, isa_names[i]) == 0)
                pick = i;
        if (pick < 0) {
            pick = best_isa();
            fprintf(stderr,
                    "amprt: warning: unknown AMPRT_ISA value \"%s\" (expected auto, ref, avx2, avx512 or "
                    "avx512bf16); using auto (%s)\n",
                    want, isa_names[pick]);
        } else if (!isa_supported[pick]) {
            int best = best_isa();
            fprintf(stderr, "amprt: warning: AMPRT_ISA=%s is not supported by this CPU; using %s\n", want,
                    isa_names[best]);
            pick = best;
        }
    }
    active = isa_tables[pick];
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
#define AMP_FORWARD_size_t(call) return call;
#define AMP_DEFINE_PUBLIC(name, ret, params, args) \
    ret amp_##name params { AMP_FORWARD_##ret(kernels()->name args) }
AMP_FOR_EACH_KERNEL(AMP_DEFINE_PUBLIC)
