/*
 * test_autocast_doc.c - docs/autocast.md's tables match src/core/ops.def and
 * the policy files (scripts/gen-autocast-doc.sh).
 *
 * The tables in the document are generated; this fails when someone edits
 * a policy or adds an op without regenerating them, and checks that the
 * check itself notices a stale document.  Run from the repository root, as
 * `make test-unit` does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static int run(const char *cmd)
{
    int status = system(cmd);
    assert_true(status != -1 && WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void doc_matches_the_policies_and_the_op_table(void **state)
{
    (void)state;
    if (run("sh scripts/gen-autocast-doc.sh --check") != 0) {
        print_error("docs/autocast.md is stale: run `sh scripts/gen-autocast-doc.sh` and review the diff\n");
        fail();
    }
}

/* A generated row changed by hand (a class edited in the doc, not in the
 * policy) is caught: exactly wrong by one word. */
static void stale_doc_is_caught(void **state)
{
    (void)state;
    char dir[] = "/tmp/ampc-doc.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "sed 's/^| `relu` | lower_precision_fp |/| `relu` | fp32 |/' docs/autocast.md > %s/autocast.md && "
             "! cmp -s docs/autocast.md %s/autocast.md",
             dir, dir);
    assert_int_equal(run(cmd), 0); /* the edit applied */
    snprintf(cmd, sizeof cmd, "sh scripts/gen-autocast-doc.sh --check %s/autocast.md 2>/dev/null", dir);
    assert_int_equal(run(cmd), 1);
    snprintf(cmd, sizeof cmd, "sh scripts/gen-autocast-doc.sh %s/autocast.md && cmp -s docs/autocast.md %s/autocast.md",
             dir, dir);
    assert_int_equal(run(cmd), 0); /* regenerating restores it */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(run(cmd), 0);
}

/* Every target's table is there, with the rows of its policy file. */
static void every_target_has_its_table(void **state)
{
    (void)state;
    assert_int_equal(run("grep -qx '## tpu' docs/autocast.md && grep -qx '## gpu' docs/autocast.md && "
                         "grep -qx '## cpu' docs/autocast.md"), 0);
    assert_int_equal(run("grep -q '^| `binary_cross_entropy` | banned |' docs/autocast.md"), 0);
    assert_int_equal(run("grep -q '^| `__matmul__` | lower_precision_fp | matmul (`@`) |' docs/autocast.md"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(doc_matches_the_policies_and_the_op_table),
        cmocka_unit_test(stale_doc_is_caught),
        cmocka_unit_test(every_target_has_its_table),
    };
    return cmocka_run_group_tests_name("autocast_doc", tests, NULL, NULL);
}
