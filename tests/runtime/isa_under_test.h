/*
 * isa_under_test.h - which kernel sets a per-set runtime test checks.
 *
 * The tests that take each set's table through amp_kernel_table_for
 * (test_fast*.c, test_conv_ex.c, test_linear_ex.c) check every set this CPU supports when
 * AMPRT_ISA is unset or "auto": that is make test-runtime's plain run.
 * tests/runtime/run-isas.sh then runs them once per forced set, for the
 * public amp_* functions that dispatch to it; there each checks its
 * per-set cases for the forced set alone, rather than every set again
 * once per forced set.
 */
#ifndef ISA_UNDER_TEST_H
#define ISA_UNDER_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/src/amprt_internal.h"

/* The table of kernel set isa, or NULL (the caller skips) when the CPU
 * lacks it or AMPRT_ISA forces another set. */
static const amp_kernel_table *table_under_test(const char *isa)
{
    const char *forced = getenv("AMPRT_ISA");
    const amp_kernel_table *k = amp_kernel_table_for(isa);
    if (k == NULL) {
        printf("   %s: not supported by this CPU, skipped\n", isa);
        return NULL;
    }
    if (forced != NULL && forced[0] != '\0' && strcmp(forced, "auto") != 0 && strcmp(forced, isa) != 0) {
        printf("   %s: checked in the run without AMPRT_ISA; this run (AMPRT_ISA=%s) checks that set\n", isa,
               forced);
        return NULL;
    }
    return k;
}

/* The cmocka entries of a test run once per kernel set, each entry's
 * state the set's name (which table_under_test(*state) takes): every
 * set, or the optimized ones; a set this CPU lacks skips.  The includer
 * includes <cmocka.h> first. */
#define ISA_UNIT_TEST_(fn, isa) cmocka_unit_test_prestate(fn, (void *)(isa))
#define OPTIMIZED_ISA_UNIT_TESTS(fn)                                                              \
    ISA_UNIT_TEST_(fn, "avx2"), ISA_UNIT_TEST_(fn, "avx512"), ISA_UNIT_TEST_(fn, "avx512bf16"),   \
        ISA_UNIT_TEST_(fn, "neon"), ISA_UNIT_TEST_(fn, "neonfp16"), ISA_UNIT_TEST_(fn, "neonbf16")
#define ISA_UNIT_TESTS(fn) ISA_UNIT_TEST_(fn, "ref"), OPTIMIZED_ISA_UNIT_TESTS(fn)

#endif
