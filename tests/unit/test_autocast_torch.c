/*
 * test_autocast_torch.c - the typing rules of src/middle/types_*.c against the
 * installed PyTorch (tests/unit/typing_vs_torch.py), and the built-in
 * cpu-torch1.13 policy against PyTorch 1.13's CPU autocast
 * (tests/unit/autocast_vs_torch.py).
 *
 * The script compiles a few hundred one-op models with the ampc binary
 * beside this test's directory (BUILD/ampc for BUILD/tests/test_...) and
 * compares each result dtype and shape, or error, with what torch gives.
 * It needs a python3 that imports torch (Debian's python3-torch); without
 * one the test says so and is skipped, as the golden runner skips
 * Graphviz checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char ampc_path[4096], lib_path[4096];

/* Run tests/unit/SCRIPT with the first python3 that has torch; skip when
 * none has (or the script says 77). */
static void run_script(const char *script)
{
    /* make test-unit does not build the command (make test does): a
     * missing one, or one older than the library this test was linked
     * with, would test other rules than these */
    struct stat cmd_st, lib_st;
    if (access(ampc_path, X_OK) != 0 || stat(ampc_path, &cmd_st) != 0 ||
        (stat(lib_path, &lib_st) == 0 && cmd_st.st_mtime < lib_st.st_mtime)) {
        print_message("%s: SKIP: %s is missing or older than %s; build it first\n", script, ampc_path,
                      lib_path);
        skip();
    }
    char cmd[8192];
    /* the first python3 that has torch: the PATH one, else Debian's */
    snprintf(cmd, sizeof cmd,
             "for py in python3 /usr/bin/python3; do "
             "  if $py -c 'import torch' >/dev/null 2>&1; then exec $py tests/unit/%s '%s'; fi; "
             "done; echo '%s: SKIP: no python3 with torch (apt-get install python3-torch)'; exit 77",
             script, ampc_path, script);
    int status = system(cmd);
    assert_true(status != -1 && WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void typing_agrees_with_pytorch(void **state)
{
    (void)state;
    run_script("typing_vs_torch.py");
}

static void cpu_torch113_policy_agrees_with_pytorch(void **state)
{
    (void)state;
    run_script("autocast_vs_torch.py");
}

int main(int argc, char **argv)
{
    (void)argc;
    /* BUILD/tests/test_autocast_torch -> BUILD/ampc */
    const char *slash = strrchr(argv[0], '/');
    int dir = slash ? (int)(slash - argv[0]) : 1;
    snprintf(ampc_path, sizeof ampc_path, "%.*s/../ampc", dir, slash ? argv[0] : ".");
    snprintf(lib_path, sizeof lib_path, "%.*s/../libampc.a", dir, slash ? argv[0] : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(typing_agrees_with_pytorch),
        cmocka_unit_test(cpu_torch113_policy_agrees_with_pytorch),
    };
    return cmocka_run_group_tests_name("autocast_torch", tests, NULL, NULL);
}
