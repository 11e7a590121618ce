/* fuzz_frontend.c: libFuzzer target for the whole ampc pipeline.
 *
 * The input bytes are a model source (.amp).  Each input is compiled with
 * ampc_compile, as `ampc -t TARGET` would, once per target (tpu, gpu, cpu),
 * each time in a fresh context that is freed afterwards, so LeakSanitizer
 * sees anything the compiler loses.  Diagnostics go to /dev/null.
 *
 * What counts as a finding:
 *   - any ASan / UBSan / LSan report, or a hang (-timeout);
 *   - an internal compiler error: ICE() calls exit(EXIT_INTERNAL), which
 *     libFuzzer reports as "fuzz target exited" and saves as a crash;
 *   - a broken contract of ampc_compile (checked below, abort()):
 *       * it returns only EXIT_OK or EXIT_INPUT_ERROR here (no file is read,
 *         so EXIT_IO would be a bug);
 *       * EXIT_INPUT_ERROR comes with at least one error printed (a user
 *         must never get exit status 1 with no diagnostic);
 *       * EXIT_OK comes with no error and two NUL-terminated output files.
 *   On success the IR printer (--dump) is run too, into /dev/null.
 *
 * Built and run by tests/fuzz/run.sh; see tests/fuzz/README.md.
 */
#include "ampc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void check(int ok, const char *what, Target t)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz_frontend: broken contract of ampc_compile (target %s): %s\n", target_name(t), what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* source_read rejects a file with a NUL byte before the compiler sees
     * it, so such text never reaches ampc_compile. */
    if (memchr(data, '\0', size))
        return 0;
    /* Locations are 32-bit byte offsets; the fuzzer never gets near that. */
    if (size > UINT32_MAX / 2)
        return 0;
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        if (!devnull) {
            perror("fuzz_frontend: /dev/null");
            abort();
        }
    }

    for (int t = 0; t < TARGET_COUNT; t++) {
        /* what main() passes for `ampc -t TARGET fuzz.amp` */
        static char *argv[] = {"ampc", "fuzz.amp", NULL};
        Options opts = {
            .input_path = "fuzz.amp",
            .output_path = "fuzz.c",
            .header_path = "fuzz.h",
            .target = (Target)t,
            .argc = 2,
            .argv = argv,
        };
        Ctx *c = ctx_new(&opts, devnull);
        SourceFile *src = source_from_text(c, "fuzz.amp", (const char *)data, size);
        Output out = {0};
        int rc = ampc_compile(c, src, &out);

        check(rc == EXIT_OK || rc == EXIT_INPUT_ERROR, "it returned neither EXIT_OK nor EXIT_INPUT_ERROR", (Target)t);
        if (rc == EXIT_OK) {
            check(c->nerrors == 0, "EXIT_OK with errors reported", (Target)t);
            check(out.c_file.data && strlen(out.c_file.data) == out.c_file.len, "EXIT_OK without a proper .c file",
                  (Target)t);
            check(out.h_file.data && strlen(out.h_file.data) == out.h_file.len, "EXIT_OK without a proper .h file",
                  (Target)t);
            ir_dump(c, devnull);
        } else {
            check(c->nerrors > 0, "EXIT_INPUT_ERROR but no error was reported", (Target)t);
        }

        /* Passes before load_policy (parse, resolve, typecheck) do not look
         * at the target: a model they reject fails the same way for every
         * target, so compiling it again would only slow the fuzzer down. */
        bool target_independent = c->policy == NULL;
        ctx_free(c);
        if (target_independent)
            break;
    }
    return 0;
}
