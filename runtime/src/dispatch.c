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
#define AMP_REF_ENTRY(kernel, T, ret, params, args) .AMP_KNAME_##T(kernel) = AMP_KNAME_##T(amp_ref_##kernel),
    AMP_FOR_EACH_KERNEL(AMP_REF_ENTRY)
#undef AMP_REF_ENTRY
};

static amp_kernel_table active;
static pthread_once_t active_once = PTHREAD_ONCE_INIT;

/* ---- The kernel sets ---------------------------------------------------------
 *
 * The reference set, then this architecture's optimized sets from worst to
 * best ("auto" takes the last one supported), each usable when the CPU
 * features it needs are all among amp_cpu_features()'s (runtime/src/<arch>/
 * cpu.c).  Another architecture adds its rows here, under its own #if, and
 * its sets' files under runtime/src/<arch>/; on an architecture without
 * rows only the reference set exists.
 */
typedef struct {
    const char *name;
    unsigned needs;                   /* AMP_CPU_* bits */
    void (*fill)(amp_kernel_table *); /* its overrides; NULL for ref */
} isa_set;

static const isa_set isa_sets[] = {
    { "ref", 0, NULL },
#if defined(__x86_64__) || defined(__i386__)
    { "avx2", AMP_CPU_AVX2, amp_isa_avx2_fill },
    { "avx512", AMP_CPU_AVX512, amp_isa_avx512_fill },
    { "avx512bf16", AMP_CPU_AVX512BF16, amp_isa_avx512bf16_fill },
#elif defined(__aarch64__)
    { "neon", AMP_CPU_NEON, amp_isa_neon_fill },
    { "neonbf16", AMP_CPU_NEON_BF16, amp_isa_neonbf16_fill },
#endif
};
#define N_ISAS ((int)(sizeof isa_sets / sizeof isa_sets[0]))

static int isa_supported[N_ISAS];
static amp_kernel_table isa_tables[N_ISAS];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

#if !(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__))
unsigned amp_cpu_features(void) { return 0; }
#endif

/* Every supported set, each a copy of the reference table with its
 * overrides; built once. */
static void build_tables(void)
{
    const unsigned have = amp_cpu_features();
    for (int i = 0; i < N_ISAS; i++) {
        isa_supported[i] = (isa_sets[i].needs & have) == isa_sets[i].needs;
        isa_tables[i] = amp_ref_kernel_table;
        isa_tables[i].isa = isa_sets[i].name;
        if (isa_supported[i] && isa_sets[i].fill != NULL)
            isa_sets[i].fill(&isa_tables[i]);
    }
}

const amp_kernel_table *amp_kernel_table_for(const char *isa)
{
    pthread_once(&tables_once, build_tables);
    for (int i = 0; i < N_ISAS; i++)
        if (isa != NULL && strcmp(isa, isa_sets[i].name) == 0)
            return isa_supported[i] ? &isa_tables[i] : NULL;
    return NULL;
}

static int best_isa(void)
{
    int best = 0; /* ref */
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
            if (strcmp(want, isa_sets[i].name) == 0)
                pick = i;
        if (pick < 0) {
            pick = best_isa();
            char expected[256] = "auto";
            for (int i = 0; i < N_ISAS; i++) {
                strcat(expected, i + 1 < N_ISAS ? ", " : " or ");
                strcat(expected, isa_sets[i].name);
            }
            fprintf(stderr, "amprt: warning: unknown AMPRT_ISA value \"%s\" (expected %s); using auto (%s)\n",
                    want, expected, isa_sets[pick].name);
        } else if (!isa_supported[pick]) {
            int best = best_isa();
            fprintf(stderr, "amprt: warning: AMPRT_ISA=%s is not supported by this CPU; using %s\n", want,
                    isa_sets[best].name);
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
#define AMP_DEFINE_PUBLIC(kernel, T, ret, params, args) \
    ret AMP_KNAME_##T(amp_##kernel) params { AMP_FORWARD_##ret(kernels()->AMP_KNAME_##T(kernel) args) }
AMP_FOR_EACH_KERNEL(AMP_DEFINE_PUBLIC)
