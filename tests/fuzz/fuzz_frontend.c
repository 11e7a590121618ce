/* fuzz_frontend.c: libFuzzer target for the whole ampc pipeline.
 *
 * The input bytes are a model source (.amp).  Each input is compiled with
 * ampc_compile, as `ampc -t TARGET` would, once per target (tpu, gpu, cpu),
 * each time in a fresh context that is freed afterwards, so LeakSanitizer
 * sees anything the compiler loses.  Diagnostics go to /dev/null, and so
 * does standard output (where --explain and --dump print).
 *
 * Command-line options: an input whose first line is
 *
 *   # ampc-fuzz: --autocast --explain=json --emit=dot -Werror ...
 *
 * (a comment to ampc) is compiled with those options, parsed as main.c
 * parses them; see parse_options below for the list.  The fuzzer mutates
 * that line like any other (the dictionary has the option names), and a
 * reproducer shows the options it needs.
 *
 * Imports: the input is compiled as IMPORT_DIR/fuzz.amp, with -I IMPORT_DIR
 * too, so `import "lib.amp"` finds the fixtures in tests/fuzz/imports/ and
 * nothing else of the file system (an absolute path still reaches it).
 *
 * What counts as a finding:
 *   - any ASan / UBSan / LSan report, or a hang (-timeout);
 *   - an internal compiler error: ICE() calls exit(EXIT_INTERNAL), which
 *     libFuzzer reports as "fuzz target exited" and saves as a crash;
 *   - a broken contract of ampc_compile (checked below, abort()):
 *       * it returns EXIT_OK, EXIT_INPUT_ERROR, or EXIT_IO when a file
 *         could not be read (c->io_error);
 *       * a failure comes with at least one error printed (a user must
 *         never get a failing exit status with no diagnostic);
 *       * EXIT_OK comes with no error, and for C output two NUL-terminated
 *         files of the length they claim.
 *   On success the IR printer (--dump) is run too.
 *
 * Built and run by tests/fuzz/run.sh; see tests/fuzz/README.md.
 */
#include "ampc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AMPC_FUZZ_IMPORT_DIR
#define AMPC_FUZZ_IMPORT_DIR "tests/fuzz/imports" /* run.sh passes an absolute path */
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void check(int ok, const char *what, Target t)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz_frontend: broken contract of ampc_compile (target %s): %s\n", target_name(t), what);
    abort();
}

static bool is_half(const char *s, DType *t)
{
    if (strcmp(s, "bf16") == 0)
        *t = DT_BF16;
    else if (strcmp(s, "f16") == 0)
        *t = DT_F16;
    else
        return false;
    return true;
}

/* The options of a "# ampc-fuzz:" first line, into o.  `line` is a private
 * copy that the option strings keep pointing into.  Words main.c would
 * reject as a usage error are ignored (never passed to the compiler). */
static void parse_options(char *line, Options *o)
{
    static const char *const op_values[] = {"bf16", "f16", "f32", "promote", "none"};
    char *save = NULL;
    for (char *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
        DType t;
        if (strcmp(w, "--autocast") == 0) {
            o->autocast_all = true;
        } else if (strcmp(w, "--explain") == 0 || strcmp(w, "--explain=text") == 0) {
            o->explain = EXPLAIN_TEXT;
        } else if (strcmp(w, "--explain=json") == 0) {
            o->explain = EXPLAIN_JSON;
        } else if (strcmp(w, "--emit=c") == 0) {
            o->emit = EMIT_C;
        } else if (strcmp(w, "--emit=dot") == 0) {
            o->emit = EMIT_DOT;
        } else if (strncmp(w, "--autocast-op=", 14) == 0) {
            const char *arg = w + 14, *eq = strchr(arg, '=');
            bool known = false;
            for (size_t i = 0; eq && i < sizeof op_values / sizeof op_values[0]; i++)
                known |= strcmp(eq + 1, op_values[i]) == 0;
            if (eq && eq != arg && known &&
                o->nautocast_ops < (int)(sizeof o->autocast_ops / sizeof o->autocast_ops[0]))
                o->autocast_ops[o->nautocast_ops++] = arg;
        } else if (strncmp(w, "--autocast-dtype=", 17) == 0 && is_half(w + 17, &t)) {
            o->autocast_dtype = t;
        } else if (strncmp(w, "--force-dtype=", 14) == 0 && is_half(w + 14, &t)) {
            o->force_dtype = t;
        } else if (strcmp(w, "-Werror") == 0) {
            o->warnings_are_errors = true;
        } else if (strcmp(w, "-w") == 0) {
            o->no_warnings = true;
        } else if (strncmp(w, "-Wno-", 5) == 0 && w[5] &&
                   o->ndisabled_warnings < (int)(sizeof o->disabled_warnings / sizeof o->disabled_warnings[0])) {
            o->disabled_warnings[o->ndisabled_warnings++] = w + 5;
        } else if (strcmp(w, "-fdiagnostics-color") == 0 || strcmp(w, "-fdiagnostics-color=always") == 0) {
            o->color = 1;
        } else if (strncmp(w, "--dump=", 7) == 0 &&
                   (!strcmp(w + 7, "lower") || !strcmp(w + 7, "optimize") || !strcmp(w + 7, "memplan"))) {
            o->dump_pass = w + 7;
        } else if (strncmp(w, "--prefix=", 9) == 0) {
            o->prefix = w + 9; /* emit_c checks it is an identifier */
        }
    }
    /* main.c: --emit=dot writes one file, no header */
    if (o->emit == EMIT_DOT)
        o->header_path = NULL;
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
        /* --explain and --dump print to standard output; libFuzzer itself
         * reports on standard error */
        if (!devnull || !freopen("/dev/null", "w", stdout)) {
            perror("fuzz_frontend: /dev/null");
            abort();
        }
    }

    static const char tag[] = "# ampc-fuzz:";
    char line[512] = "";
    if (size > sizeof tag - 1 && memcmp(data, tag, sizeof tag - 1) == 0) {
        const char *start = (const char *)data + sizeof tag - 1;
        const char *nl = memchr(start, '\n', size - (sizeof tag - 1));
        size_t n = (size_t)((nl ? nl : (const char *)data + size) - start);
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, start, n);
        line[n] = '\0';
    }

    for (int t = 0; t < TARGET_COUNT; t++) {
        /* what main() passes for `ampc -t TARGET -I DIR DIR/fuzz.amp` */
        static char *argv[] = {"ampc", "fuzz.amp", NULL};
        char words[sizeof line];
        memcpy(words, line, sizeof line);
        Options opts = {
            .input_path = AMPC_FUZZ_IMPORT_DIR "/fuzz.amp",
            .output_path = "fuzz.c",
            .header_path = "fuzz.h",
            .include_dirs = {AMPC_FUZZ_IMPORT_DIR},
            .ninclude_dirs = 1,
            .target = (Target)t,
            .argc = 2,
            .argv = argv,
        };
        parse_options(words, &opts);
        Ctx *c = ctx_new(&opts, devnull);
        SourceFile *src = source_from_text(c, opts.input_path, (const char *)data, size);
        Output out = {0};
        int rc = ampc_compile(c, src, &out);

        check(rc == EXIT_OK || rc == EXIT_INPUT_ERROR || (rc == EXIT_IO && c->io_error),
              "it returned an unexpected exit code", (Target)t);
        if (rc == EXIT_OK) {
            check(c->nerrors == 0, "EXIT_OK with errors reported", (Target)t);
            if (opts.emit == EMIT_C) {
                check(out.c_file.data && strlen(out.c_file.data) == out.c_file.len,
                      "EXIT_OK without a proper .c file", (Target)t);
                check(out.h_file.data && strlen(out.h_file.data) == out.h_file.len,
                      "EXIT_OK without a proper .h file", (Target)t);
            }
            ir_dump(c, devnull);
        } else {
            check(c->nerrors > 0, "a failure but no error was reported", (Target)t);
        }

        /* Passes before load_policy (parse, expand, resolve, typecheck) do
         * not look at the target: a model they reject fails the same way
         * for every target, so compiling it again would only slow the
         * fuzzer down. */
        bool target_independent = c->policy == NULL;
        ctx_free(c);
        if (target_independent)
            break;
    }
    return 0;
}
