/* main.c: the ampc command.  Reads the command line, runs the pipeline
 * (driver.c), and writes the outputs atomically: each file goes to a
 * temporary beside its destination and is renamed over it only when the
 * whole compilation succeeded, so a failed build never leaves a truncated
 * or stale-looking output.  Exit codes are in docs/cli.md.
 */
#include "ampc.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: ampc [options] FILE.amp\n"
    "\n"
    "Compile a model to C99 that calls the libamprt runtime, with every op in\n"
    "the precision the target's autocast rules give it.\n"
    "\n"
    "  -t, --target=TARGET  tpu  bf16, the PyTorch/XLA TPU rules\n"
    "                       gpu  f16, the PyTorch CUDA rules\n"
    "                       cpu  bf16, the PyTorch CPU rules (default)\n"
    "  -o FILE              write the C source to FILE (default: FILE's stem + .c);\n"
    "                       '-' writes it to standard output\n"
    "  --header=FILE        write the header to FILE (default: beside the output,\n"
    "                       with .h; none for -o - unless given)\n"
    "  --prefix=NAME        prefix of every emitted name (default: the model's\n"
    "                       name in lower case)\n"
    "  --policy=FILE        use this autocast policy instead of the target's\n"
    "                       built-in one (format: docs/policies.md)\n"
    "  --dump=PASS          print the IR after PASS (lower, optimize, memplan)\n"
    "  -h, --help           print this help and exit\n"
    "  --version            print the version and exit\n"
    "\n"
    "FILE may be '-' for standard input.\n"
    "\n"
    "Exit status: 0 success; 1 errors in the model (diagnostics on stderr);\n"
    "2 bad command line; 3 a file could not be read or written; 4 internal\n"
    "compiler error (a bug in ampc).\n";

static _Noreturn void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "ampc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'ampc --help' for more information.\n");
    exit(EXIT_USAGE);
}

/* "dir/mlp.amp" -> "mlp" + ext, in the current directory, like cc -c. */
static char *default_output(Ctx *c, const char *input, const char *ext)
{
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    return arena_printf(c->arena, "%.*s%s", (int)n, base, ext);
}

static char *replace_ext(Ctx *c, const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    size_t n = dot && (!slash || dot > slash + 1) ? (size_t)(dot - path) : strlen(path);
    return arena_printf(c->arena, "%.*s%s", (int)n, path, ext);
}

typedef struct Pending {
    const char *path;
    char *tmp;
} Pending;

/* Write data to a new temporary file beside path. */
static bool write_temp(Ctx *c, const char *path, const Buf *data, Pending *p)
{
    p->path = path;
    p->tmp = arena_printf(c->arena, "%s.tmpXXXXXX", path);
    int fd = mkstemp(p->tmp);
    if (fd < 0) {
        fprintf(stderr, "ampc: error: cannot create %s: %s\n", p->tmp, strerror(errno));
        p->tmp = NULL;
        return false;
    }
    FILE *f = fdopen(fd, "wb");
    bool ok = f && fwrite(data->data, 1, data->len, f) == data->len;
    ok = f && fflush(f) == 0 && ok;
    ok = f && fsync(fileno(f)) == 0 && ok;
    if (f)
        ok = fclose(f) == 0 && ok;
    else
        close(fd);
    if (!ok) {
        fprintf(stderr, "ampc: error: cannot write %s: %s\n", path, strerror(errno));
        unlink(p->tmp);
        p->tmp = NULL;
    }
    return ok;
}

int main(int argc, char **argv)
{
    Options opts = {.target = TARGET_CPU, .argc = argc, .argv = argv};
    enum { OPT_HEADER = 256, OPT_PREFIX, OPT_POLICY, OPT_DUMP, OPT_VERSION };
    static const struct option long_opts[] = {
        {"target", required_argument, NULL, 't'},   {"output", required_argument, NULL, 'o'},
        {"header", required_argument, NULL, OPT_HEADER}, {"prefix", required_argument, NULL, OPT_PREFIX},
        {"policy", required_argument, NULL, OPT_POLICY}, {"dump", required_argument, NULL, OPT_DUMP},
        {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":t:o:h", long_opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            if (!target_from_name(optarg, &opts.target))
                usage_error("unknown target '%s'; expected tpu, gpu or cpu", optarg);
            break;
        case 'o':
            opts.output_path = optarg;
            break;
        case OPT_HEADER:
            opts.header_path = optarg;
            break;
        case OPT_PREFIX:
            opts.prefix = optarg;
            break;
        case OPT_POLICY:
            opts.policy_path = optarg;
            break;
        case OPT_DUMP:
            if (strcmp(optarg, "lower") && strcmp(optarg, "optimize") && strcmp(optarg, "memplan"))
                usage_error("--dump takes lower, optimize or memplan, not '%s'", optarg);
            opts.dump_pass = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return EXIT_OK;
        case OPT_VERSION:
            printf("ampc %s\n", AMPC_VERSION);
            return EXIT_OK;
        case ':':
            usage_error("option '%s' needs an argument", argv[optind - 1]);
        default:
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind == argc)
        usage_error("%s", "no input file");
    if (argc - optind > 1)
        usage_error("one input file at a time; got also '%s'", argv[optind + 1]);
    opts.input_path = argv[optind];

    Ctx *c = ctx_new(&opts, stderr);
    bool to_stdout = opts.output_path && strcmp(opts.output_path, "-") == 0;
    if (!opts.output_path) {
        if (strcmp(opts.input_path, "-") == 0)
            usage_error("%s", "reading from standard input needs -o FILE or -o -");
        opts.output_path = default_output(c, opts.input_path, ".c");
    }
    bool write_header = !to_stdout || opts.header_path;
    if (!opts.header_path && !to_stdout)
        opts.header_path = replace_ext(c, opts.output_path, ".h");

    SourceFile *src = source_read(c, opts.input_path);
    if (!src) {
        ctx_free(c);
        return EXIT_IO;
    }
    Output out = {0};
    int rc = ampc_compile(c, src, &out);
    if (rc != EXIT_OK) {
        ctx_free(c);
        return rc;
    }

    Pending files[2] = {0};
    int nfiles = 0;
    bool ok = true;
    if (to_stdout) {
        ok = fwrite(out.c_file.data, 1, out.c_file.len, stdout) == out.c_file.len && fflush(stdout) == 0;
        if (!ok)
            fprintf(stderr, "ampc: error: cannot write to standard output: %s\n", strerror(errno));
    } else {
        ok = write_temp(c, opts.output_path, &out.c_file, &files[nfiles]);
        nfiles += ok;
    }
    if (ok && write_header) {
        ok = write_temp(c, opts.header_path, &out.h_file, &files[nfiles]);
        nfiles += ok;
    }
    for (int i = 0; i < nfiles; i++) {
        if (ok && rename(files[i].tmp, files[i].path) != 0) {
            fprintf(stderr, "ampc: error: cannot write %s: %s\n", files[i].path, strerror(errno));
            ok = false;
        }
        if (!ok)
            unlink(files[i].tmp);
    }
    ctx_free(c);
    return ok ? EXIT_OK : EXIT_IO;
}
