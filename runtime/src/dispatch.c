/*
 * dispatch.c - choosing the kernel set once, and the public kernels that call
 * through it.
 *
 * Every public amp_<name> is a forwarder (so emitted code links against
 * stable names), generated from the kernel list in amprt.h, that calls
 * through a pointer of its own.  The pointer starts NULL; the first call
 * resolves it from the set AMPRT_ISA chose (once per process) to that
 * set's kernel, amp_isa_<set>_<name>, or its base set's, or the
 * reference's, and stores it.  Every thread that races to resolve it
 * stores the same value, and the set never changes afterwards, so calls
 * need no locking: a call costs one load and an indirect call.
 *
 * Each forwarder refers only to its own kernel's pointers, so a program
 * statically linked with -Wl,--gc-sections (and libamprt built with
 * -ffunction-sections -fdata-sections, as the Makefile builds it) keeps
 * only the kernels it calls, in each set.  The sets' pointers are weak
 * references here (most kernels have none in a set); what makes a static
 * link take the sets' objects out of libamprt.a at all is amp_isa_fill's
 * strong references to their fill functions, below.
 *
 * AMPRT_REF_ONLY (make REF_ONLY=1) builds without the optimized sets,
 * AMPRT_NO_AVX512 (make NO_AVX512=1) with the avx2 set alone on x86;
 * AMPRT_NO_THREADS and AMPRT_NO_STDIO (make BARE=1) without pthreads and
 * without the warnings on stderr (docs/runtime.md, "Small binaries").
 */
#include <stdlib.h>
#include <string.h>
#if !defined(AMPRT_NO_STDIO)
#include <stdio.h>
#endif
#if !defined(AMPRT_NO_THREADS)
#include <pthread.h>
#endif

#include "amprt_internal.h"

const amp_kernel_table amp_ref_kernel_table = {
    .isa = "ref",
#define AMP_REF_ENTRY(kernel, T, ret, params, args) .AMP_KNAME_##T(kernel) = AMP_KNAME_##T(amp_ref_##kernel),
    AMP_FOR_EACH_KERNEL(AMP_REF_ENTRY)
#undef AMP_REF_ENTRY
};

/* ---- The kernel sets ---------------------------------------------------------
 *
 * The reference set, then this architecture's optimized sets from worst to
 * best ("auto" takes the last one supported), each usable when the CPU
 * features it needs are all among amp_cpu_features()'s (runtime/src/<arch>/
 * cpu.c).  A set's kernels are its own amp_isa_<set>_<name> where it has
 * one, else its base set's (avx512bf16 is avx512 with a few kernels
 * replaced), else the reference's.  Another architecture adds its rows
 * here, under its own #if, with its sets' names in AMP_ISA_WEAK_ALL,
 * AMP_ISA_OWN and AMP_ISA_FILLS, and its sets' files under
 * runtime/src/<arch>/; on an architecture without rows only the reference
 * set exists.
 */
typedef struct {
    const char *name;
    unsigned needs; /* AMP_CPU_* bits */
    int base;       /* the row whose kernels it keeps where it has none; 0: ref */
} isa_set;

#define AMP_ISA_WEAK(set, name) extern AMP_HIDDEN amp_kernel_fn_##name *const amp_isa_##set##_##name __attribute__((weak));
#define AMP_ISA_ADDR(set, name) , (const void *)&amp_isa_##set##_##name

#if defined(AMPRT_REF_ONLY)
static const isa_set isa_sets[] = { { "ref", 0, 0 } };
#define AMP_ISA_WEAK_ALL(name)
#define AMP_ISA_OWN(name)
#define AMP_ISA_FILLS
#elif (defined(__x86_64__) || defined(__i386__)) && defined(AMPRT_NO_AVX512)
static const isa_set isa_sets[] = { { "ref", 0, 0 }, { "avx2", AMP_CPU_AVX2, 0 } };
#define AMP_ISA_WEAK_ALL(name) AMP_ISA_WEAK(avx2, name)
#define AMP_ISA_OWN(name) AMP_ISA_ADDR(avx2, name)
#define AMP_ISA_FILLS , amp_isa_avx2_fill
#elif defined(__x86_64__) || defined(__i386__)
static const isa_set isa_sets[] = {
    { "ref", 0, 0 },
    { "avx2", AMP_CPU_AVX2, 0 },
    { "avx512", AMP_CPU_AVX512, 0 },
    { "avx512bf16", AMP_CPU_AVX512BF16, 2 },
};
#define AMP_ISA_WEAK_ALL(name) AMP_ISA_WEAK(avx2, name) AMP_ISA_WEAK(avx512, name) AMP_ISA_WEAK(avx512bf16, name)
#define AMP_ISA_OWN(name) AMP_ISA_ADDR(avx2, name) AMP_ISA_ADDR(avx512, name) AMP_ISA_ADDR(avx512bf16, name)
#define AMP_ISA_FILLS , amp_isa_avx2_fill, amp_isa_avx512_fill, amp_isa_avx512bf16_fill
#elif defined(__aarch64__)
static const isa_set isa_sets[] = {
    { "ref", 0, 0 },
    { "neon", AMP_CPU_NEON, 0 },
    { "neonfp16", AMP_CPU_NEON_FP16, 1 },
    { "neonbf16", AMP_CPU_NEON_BF16, 2 },
};
#define AMP_ISA_WEAK_ALL(name) AMP_ISA_WEAK(neon, name) AMP_ISA_WEAK(neonfp16, name) AMP_ISA_WEAK(neonbf16, name)
#define AMP_ISA_OWN(name) AMP_ISA_ADDR(neon, name) AMP_ISA_ADDR(neonfp16, name) AMP_ISA_ADDR(neonbf16, name)
#define AMP_ISA_FILLS , amp_isa_neon_fill, amp_isa_neonfp16_fill, amp_isa_neonbf16_fill
#else
static const isa_set isa_sets[] = { { "ref", 0, 0 } };
#define AMP_ISA_WEAK_ALL(name)
#define AMP_ISA_OWN(name)
#define AMP_ISA_FILLS
#endif
#define N_ISAS ((int)(sizeof isa_sets / sizeof isa_sets[0]))

#if defined(AMPRT_REF_ONLY) || !(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__))
unsigned amp_cpu_features(void) { return 0; }
#endif

static int isa_supported(int i, unsigned have)
{
    return (isa_sets[i].needs & have) == isa_sets[i].needs;
}

static int best_isa(unsigned have)
{
    int best = 0; /* ref */
    for (int i = 0; i < N_ISAS; i++)
        if (isa_supported(i, have))
            best = i;
    return best;
}

/* AMPRT_ISA: "ref" forces the reference kernels; "auto" (empty, unset)
 * the best supported set; a set's name forces it, or, when this CPU lacks
 * it, warns once and uses the best supported set; anything else warns once
 * and means "auto".  (Without stdio, the same choices without the
 * warnings.) */
static int active = -1;

static void choose_set(void)
{
    const char *want = getenv("AMPRT_ISA");
    const unsigned have = amp_cpu_features();
    int pick = -1;

    if (want == NULL || want[0] == '\0' || strcmp(want, "auto") == 0) {
        pick = best_isa(have);
    } else {
        for (int i = 0; i < N_ISAS; i++)
            if (strcmp(want, isa_sets[i].name) == 0)
                pick = i;
        if (pick < 0) {
            pick = best_isa(have);
#if !defined(AMPRT_NO_STDIO)
            char expected[256] = "auto";
            for (int i = 0; i < N_ISAS; i++) {
                strcat(expected, i + 1 < N_ISAS ? ", " : " or ");
                strcat(expected, isa_sets[i].name);
            }
            fprintf(stderr, "amprt: warning: unknown AMPRT_ISA value \"%s\" (expected %s); using auto (%s)\n",
                    want, expected, isa_sets[pick].name);
#endif
        } else if (!isa_supported(pick, have)) {
            int best = best_isa(have);
#if !defined(AMPRT_NO_STDIO)
            fprintf(stderr, "amprt: warning: AMPRT_ISA=%s is not supported by this CPU; using %s\n", want,
                    isa_sets[best].name);
#endif
            pick = best;
        }
    }
    active = pick;
}

#if defined(AMPRT_NO_THREADS)
/* One thread: the first call chooses. */
static int active_set(void)
{
    if (active < 0)
        choose_set();
    return active;
}
#define AMP_SLOT_LOAD(slot) (slot)
#define AMP_SLOT_STORE(slot, f) ((slot) = (f))
#else
static pthread_once_t active_once = PTHREAD_ONCE_INIT;
static int active_set(void)
{
    pthread_once(&active_once, choose_set);
    return active;
}
/* A kernel's pointer is written by whichever threads resolve it first,
 * all with the same value: atomic, so that no thread reads half of one. */
#define AMP_SLOT_LOAD(slot) __atomic_load_n(&(slot), __ATOMIC_ACQUIRE)
#define AMP_SLOT_STORE(slot, f) __atomic_store_n(&(slot), (f), __ATOMIC_RELEASE)
#endif

const char *amp_isa_name(void)
{
    return isa_sets[active_set()].name;
}

#if defined(__GNUC__)
#define AMP_NOINLINE __attribute__((noinline))
#else
#define AMP_NOINLINE
#endif

/* own[s]: set s's kernel pointer for one kernel (NULL: none, and always
 * for ref, s = 0).  The pointer set s uses, walking its bases; NULL: the
 * reference kernel.  Out of line, as the resolvers are: a forwarder's code
 * is its load and call, and the 1,222 of them compile in seconds. */
static AMP_NOINLINE const void *set_kernel(const void *const own[N_ISAS], int s)
{
    for (; s > 0 && s < N_ISAS; s = isa_sets[s].base)
        if (own[s] != NULL)
            return own[s];
    return NULL;
}

/* A void call cannot be `return`ed in C, so the forwarder's statement
 * depends on the kernel's return type. */
#define AMP_FORWARD_void(call) call;
#define AMP_FORWARD_int(call) return call;
#define AMP_FORWARD_size_t(call) return call;
#define AMP_DEFINE_PUBLIC(kernel, T, ret, params, args) AMP_WITH_NAME(AMP_DEFINE_PUBLIC_N, kernel, T, ret, params, args)
#define AMP_DEFINE_PUBLIC_N(name, ret, params, args)                                              \
    AMP_ISA_WEAK_ALL(name)                                                                        \
    static AMP_NOINLINE amp_kernel_fn_##name *resolve_##name(int s)                               \
    {                                                                                             \
        const void *const own[N_ISAS] = { NULL AMP_ISA_OWN(name) };                               \
        amp_kernel_fn_##name *const *p = (amp_kernel_fn_##name *const *)set_kernel(own, s);       \
        return p != NULL ? *p : amp_ref_##name;                                                   \
    }                                                                                             \
    static amp_kernel_fn_##name *slot_##name;                                                     \
    ret amp_##name params                                                                         \
    {                                                                                             \
        amp_kernel_fn_##name *f = AMP_SLOT_LOAD(slot_##name);                                     \
        if (f == NULL) {                                                                          \
            f = resolve_##name(active_set());                                                     \
            AMP_SLOT_STORE(slot_##name, f);                                                       \
        }                                                                                         \
        AMP_FORWARD_##ret(f args)                                                                 \
    }
AMP_FOR_EACH_KERNEL(AMP_DEFINE_PUBLIC)

/* ---- Whole tables, for tests and benchmarks ---------------------------------- */

static amp_kernel_table isa_tables[N_ISAS];

/* Every supported set's table, resolved kernel by kernel as the public
 * entry points resolve them. */
static void build_tables(void)
{
    const unsigned have = amp_cpu_features();
    for (int i = 0; i < N_ISAS; i++) {
        if (!isa_supported(i, have))
            continue;
        isa_tables[i].isa = isa_sets[i].name;
#define AMP_RESOLVE_ENTRY(kernel, T, ret, params, args) AMP_WITH_NAME(AMP_RESOLVE_ENTRY_N, kernel, T, ret, params, args)
#define AMP_RESOLVE_ENTRY_N(name, ret, params, args) isa_tables[i].name = resolve_##name(i);
        AMP_FOR_EACH_KERNEL(AMP_RESOLVE_ENTRY)
#undef AMP_RESOLVE_ENTRY
#undef AMP_RESOLVE_ENTRY_N
    }
}

static void tables_once(void)
{
#if defined(AMPRT_NO_THREADS)
    static int built;
    if (!built)
        build_tables();
    built = 1;
#else
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_tables);
#endif
}

const amp_kernel_table *amp_kernel_table_for(const char *isa)
{
    tables_once();
    for (int i = 0; i < N_ISAS; i++)
        if (isa != NULL && strcmp(isa, isa_sets[i].name) == 0)
            return isa_supported(i, amp_cpu_features()) ? &isa_tables[i] : NULL;
    return NULL;
}

int amp_isa_fill(const char *isa, amp_kernel_table *t)
{
    static void (*const fills[])(amp_kernel_table *) = { NULL AMP_ISA_FILLS };
    for (int i = 0; i < N_ISAS; i++)
        if (isa != NULL && strcmp(isa, isa_sets[i].name) == 0) {
            *t = amp_ref_kernel_table;
            t->isa = isa_sets[i].name;
            if (fills[i] != NULL)
                fills[i](t);
            return 1;
        }
    return 0;
}
