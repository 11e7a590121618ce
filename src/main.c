/* main.c: the ampc command.  Reads the command line, runs the pipeline
 * (driver.c), and writes the outputs atomically: each file goes to a
 * temporary beside its destination and is renamed over it only when the
 * whole compilation succeeded, so a failed build never leaves a truncated
 * or stale-looking output.  An output whose bytes would not change is left
 * alone, time stamp included, so a build tool that rechecks time stamps
 * (Ninja's restat) rebuilds nothing downstream of it.  A temporary is
 * "<output>.tmp", locked while in use, so a compiler killed mid-write
 * leaves at most that one file, which the next run reuses.  Exit codes are
 * in docs/cli.md.
 */
#include "ampc.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
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
    "  --policy=FILE|NAME   use this autocast policy file, or the built-in policy\n"
    "                       NAME (cpu-torch1.13: PyTorch 1.13's CPU rules),\n"
    "                       instead of the target's (format: docs/policies.md)\n"
    "  --dump=PASS          print the IR after PASS (lower, optimize, fuse, memplan;\n"
    "                       autodiff for the training step's graph)\n"
    "  -g                   emit #line directives, so a debugger steps through\n"
    "                       the .amp source\n"
    "  -I DIR               search DIR for imported files (after the importing\n"
    "                       file's own directory); repeatable.  An installed\n"
    "                       ampc then searches PREFIX/share/ampc (nn.amp)\n"
    "  --autocast           run the whole model under autocast, as if its body\n"
    "                       were in an autocast { } block\n"
    "  --embed-weights=FILE put the parameters and buffers of a safetensors FILE\n"
    "                       into the C as const arrays (<prefix>_embedded_params)\n"
    "  --no-fuse            one kernel call per op: no convolution epilogues, no\n"
    "                       linear_relu or gemm_relu_backward, no loss computed\n"
    "                       with its gradient (fusing changes no result; this is\n"
    "                       for reading and profiling the calls one by one)\n"
    "  --f32-outputs        return bf16 and f16 outputs in f32: the model casts\n"
    "                       them (one rounding-free widening) before it returns\n"
    "\n";

/* the rest of --help: a C99 compiler need accept no string literal over 4,095 characters */
static const char usage_text_more[] =
    "Seeing and steering autocast:\n"
    "  --explain[=json]     print every op's dtype and the rule that chose it, the\n"
    "                       conversions and the arena; alone, writes no files,\n"
    "                       with -o FILE also compiles (docs/cli.md)\n"
    "  --emit=c|dot|check|main\n"
    "                       what -o gets: C (default); the graph for Graphviz,\n"
    "                       coloured by dtype (default file: FILE's stem + .dot);\n"
    "                       a program checking the model against its f64\n"
    "                       evaluation; or a program running it on files:\n"
    "                       PROG WEIGHTS IN.bin... OUT.bin... (build both with\n"
    "                       -lamprt -lm -lpthread)\n"
    "  --dot-params         --emit=dot: also draw the parameters, buffers and\n"
    "                       their casts (hidden by default)\n"
    "  --autocast-op NAME=bf16|f16|f32|promote|none\n"
    "                       override or add one policy row (repeatable)\n"
    "  --autocast-dtype=bf16|f16\n"
    "                       the low dtype, where the policy's allow line permits\n"
    "  --force-dtype=bf16|f16\n"
    "                       every f32 and f64 tensor and op in this dtype\n"
    "                       (torch_xla's XLA_USE_BF16 / XLA_USE_FP16)\n"
    "\n"
    "Dependency files for make, as gcc writes them:\n"
    "  -MD                  also write a depfile (default: the output with .d)\n"
    "  -MF FILE             write the depfile to FILE (implies -MD)\n"
    "  -MT TARGET           the rule's target (repeatable; default: the .c and .h)\n"
    "  -MP                  add a phony rule for each prerequisite\n"
    "  -M                   print the rule to standard output, write no files\n"
    "\n"
    "Diagnostics:\n"
    "  -Werror              make warnings errors\n"
    "  -w                   print no warnings\n"
    "  -Wno-CLASS           silence one class of warnings (the [-WCLASS] shown\n"
    "                       after a warning), e.g. -Wno-literal-range\n"
    "  -fdiagnostics-color[=always|never|auto]\n"
    "                       colour diagnostics (default: auto, on a terminal)\n"
    "  -h, --help           print this help and exit\n"
    "  --version            print the version and exit\n"
    "\n"
    "FILE may be '-' for standard input.\n"
    "\n"
    "Exit status: 0 success; 1 errors in the model (diagnostics on stderr);\n"
    "2 bad command line; 3 a file could not be read or written, or memory ran\n"
    "out; 4 internal compiler error (a bug in ampc).\n";

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

/* gcc's dependency options.  They are two-letter options behind one dash
 * (-MD, -MF FILE), which getopt would read as clusters, so they are taken
 * out of argv before getopt sees it. */
typedef struct DepOptions {
    bool print;       /* -M */
    bool write;       /* -MD or -MF */
    bool phony;       /* -MP */
    const char *file; /* -MF */
    const char *targets[64];
    int ntargets;     /* -MT */
} DepOptions;

/* gcc's diagnostic options: -Werror, -w, -Wno-CLASS, -fdiagnostics-color. */
static bool take_diag_option(const char *a, Options *o)
{
    if (strcmp(a, "-Werror") == 0) {
        o->warnings_are_errors = true;
    } else if (strcmp(a, "-w") == 0) {
        o->no_warnings = true;
    } else if (strncmp(a, "-Wno-", 5) == 0 && a[5]) {
        if (o->ndisabled_warnings < (int)(sizeof o->disabled_warnings / sizeof o->disabled_warnings[0]))
            o->disabled_warnings[o->ndisabled_warnings++] = a + 5;
    } else if (strcmp(a, "-fdiagnostics-color") == 0 || strcmp(a, "-fdiagnostics-color=always") == 0) {
        o->color = 1;
    } else if (strcmp(a, "-fdiagnostics-color=never") == 0 || strcmp(a, "-fno-diagnostics-color") == 0) {
        o->color = 2;
    } else if (strcmp(a, "-fdiagnostics-color=auto") == 0) {
        o->color = 0;
    } else if (strncmp(a, "-fdiagnostics-color=", 20) == 0) {
        usage_error("-fdiagnostics-color takes always, never or auto, not '%s'", a + 20);
    } else {
        return false;
    }
    return true;
}

static int take_dep_options(int argc, char **argv, char **rest, DepOptions *d, Options *o)
{
    int n = 0;
    rest[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (i < argc)
                rest[n++] = argv[i++];
            break;
        }
        if (take_diag_option(a, o)) {
            continue;
        } else if (strcmp(a, "-M") == 0) {
            d->print = true;
        } else if (strcmp(a, "-MD") == 0) {
            d->write = true;
        } else if (strcmp(a, "-MP") == 0) {
            d->phony = true;
        } else if (strncmp(a, "-MF", 3) == 0 || strncmp(a, "-MT", 3) == 0) {
            const char *val = a[3] ? a + 3 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                usage_error("option '%s' needs an argument", a);
            if (a[2] == 'F') {
                d->file = val;
                d->write = true;
            } else {
                if (d->ntargets == (int)(sizeof d->targets / sizeof d->targets[0]))
                    usage_error("%s", "too many -MT targets");
                d->targets[d->ntargets++] = val;
            }
        } else if (strncmp(a, "-M", 2) == 0 && a[2] != '\0' && a[1] == 'M') {
            usage_error("unknown option '%s'; the dependency options are -M, -MD, -MF, -MT and -MP", a);
        } else {
            rest[n++] = argv[i];
        }
    }
    rest[n] = NULL;
    return n;
}

/* A path as make reads it in a rule: spaces and '#' escaped, '$' doubled. */
static void put_make_word(Buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == ' ' || *s == '#' || *s == '\t')
            buf_puts(b, "\\");
        if (*s == '$')
            buf_puts(b, "$");
        char ch[2] = {*s, '\0'};
        buf_puts(b, ch);
    }
}

static void make_depfile(Ctx *c, Buf *b, const DepOptions *d, const char *c_out, const char *h_out)
{
    buf_init(b, c->arena);
    if (d->ntargets) {
        for (int i = 0; i < d->ntargets; i++) {
            buf_puts(b, i ? " " : "");
            put_make_word(b, d->targets[i]);
        }
    } else {
        put_make_word(b, c_out);
        if (h_out) {
            buf_puts(b, " ");
            put_make_word(b, h_out);
        }
    }
    buf_puts(b, ":");
    for (int i = 0; i < c->deps->len; i++) {
        buf_puts(b, " \\\n ");
        put_make_word(b, VEC_AT(c->deps, i));
    }
    buf_puts(b, "\n");
    for (int i = 0; d->phony && i < c->deps->len; i++) {
        buf_puts(b, "\n");
        put_make_word(b, VEC_AT(c->deps, i));
        buf_puts(b, ":\n");
    }
}

typedef struct Pending {
    const char *path;
    char *tmp;          /* NULL for a special file, written in place, or an unchanged one */
    int fd;             /* the temporary's, locked until the rename */
    bool unchanged;     /* path already holds exactly these bytes: not written */
    const Buf *data;
} Pending;

/* An existing destination that is not a regular file (/dev/null, a fifo,
 * a terminal) is written in place: renaming a file over it would replace
 * the device itself. */
static bool is_special_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

static bool write_in_place(const char *path, const Buf *data)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data->data, 1, data->len, f) == data->len;
    if (f)
        ok = fclose(f) == 0 && ok;
    if (!ok)
        fprintf(stderr, "ampc: error: cannot write %s: %s\n", path, strerror(errno));
    return ok;
}

/* Whether the regular file at path holds exactly data's bytes. */
static bool holds_bytes(const char *path, const Buf *data)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uintmax_t)st.st_size != data->len)
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char chunk[65536];
    size_t at = 0, got;
    bool same = true;
    while (same && (got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        same = at + got <= data->len && memcmp(chunk, data->data + at, got) == 0;
        at += got;
    }
    same = same && !ferror(f) && at == data->len;
    fclose(f);
    return same;
}

/* "<path>.tmp", opened for writing, locked (an exclusive flock: another
 * ampc writing the same output waits for this one's rename) and emptied.
 * Once the lock is held the name must still be this file: the run that
 * held it may have renamed it into place, and then the name is opened
 * afresh.  The descriptor, or -1 with errno set. */
static int open_temporary(const char *tmp)
{
    for (int tries = 0; tries < 1000; tries++) {
        struct stat held, named;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return -1;
        int rc;
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        /* a file system without locks: go on unlocked, as a lone writer */
        if (rc != 0 && (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS))
            rc = 0;
        if (rc == 0 && fstat(fd, &held) == 0 && lstat(tmp, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino && S_ISREG(held.st_mode)) {
            if (ftruncate(fd, 0) == 0)
                return fd;
            rc = -1;
        }
        int saved = errno;
        close(fd);
        if (rc != 0) {
            errno = saved;
            return -1;
        }
    }
    errno = EBUSY;
    return -1;
}

/* Write data to the temporary beside path, unless path is a device
 * (written in place later) or already holds data (left alone). */
static bool write_temp(Ctx *c, const char *path, const Buf *data, Pending *p)
{
    p->path = path;
    p->data = data;
    p->tmp = NULL;
    p->fd = -1;
    p->unchanged = false;
    if (is_special_file(path))
        return true;
    if (holds_bytes(path, data)) {
        p->unchanged = true;
        return true;
    }
    p->tmp = arena_printf(c->arena, "%s.tmp", path);
    int fd = open_temporary(p->tmp);
    if (fd < 0) {
        fprintf(stderr, "ampc: error: cannot create %s: %s\n", p->tmp, strerror(errno));
        p->tmp = NULL;
        return false;
    }
    /* the temporary is made 0600; outputs get the mode any new file gets
     * under the umask, as a compiler's outputs do */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    /* through a duplicate, so that fclose keeps the lock on fd */
    int copy = dup(fd);
    FILE *f = copy >= 0 ? fdopen(copy, "wb") : NULL;
    bool ok = f && fwrite(data->data, 1, data->len, f) == data->len;
    ok = f && fflush(f) == 0 && ok;
    ok = f && fsync(fileno(f)) == 0 && ok;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (copy >= 0)
        close(copy);
    if (!ok) {
        fprintf(stderr, "ampc: error: cannot write %s: %s\n", path, strerror(errno));
        unlink(p->tmp);
        close(fd);
        p->tmp = NULL;
        return false;
    }
    p->fd = fd;
    return true;
}

/* Two names for one file: the same inode when both exist; for an output
 * not created yet, the same directory entry (its directory's real path and
 * its last component), so -o a.c --header ./a.c is caught too. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb)
        return false;
    const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
    const char *na = ba ? ba + 1 : a, *nb = bb ? bb + 1 : b;
    if (strcmp(na, nb) != 0)
        return false;
    char da[PATH_MAX], db[PATH_MAX];
    snprintf(da, sizeof da, "%.*s", ba ? (int)(ba - a + 1) : 1, ba ? a : ".");
    snprintf(db, sizeof db, "%.*s", bb ? (int)(bb - b + 1) : 1, bb ? b : ".");
    char *ra = realpath(da, NULL), *rb = realpath(db, NULL);
    bool same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}

/* An output that is also an input (the model, an import, the policy, the
 * weights) or another output would be lost when the outputs are renamed
 * into place: refuse it before anything is written.  Devices (-o
 * /dev/null) are written in place and may be named more than once. */
static bool outputs_are_distinct(const Ctx *c, const char *const *outs, const char *const *what, int nouts)
{
    for (int i = 0; i < nouts; i++) {
        if (!outs[i] || is_special_file(outs[i]))
            continue;
        for (int k = 0; k < c->deps->len; k++) {
            const char *in = VEC_AT(c->deps, k);
            if (same_file(outs[i], in)) {
                fprintf(stderr, "ampc: error: the %s %s is the input %s; refusing to overwrite it\n", what[i],
                        outs[i], in);
                return false;
            }
        }
        const char *w = c->opts->embed_weights;
        if (w && same_file(outs[i], w)) {
            fprintf(stderr, "ampc: error: the %s %s is the weights file %s; refusing to overwrite it\n", what[i],
                    outs[i], w);
            return false;
        }
        for (int j = 0; j < i; j++) {
            if (outs[j] && same_file(outs[i], outs[j])) {
                fprintf(stderr, "ampc: error: the %s and the %s are the same file, %s\n", what[j], what[i],
                        outs[i]);
                return false;
            }
        }
    }
    return true;
}

/* ---- the autocast options (--explain, --emit, --autocast-op,
 * --autocast-dtype, --force-dtype): parsed here, checked against the
 * policy by autocast.c, printed by explain.c and dot.c. */
enum { OPT_EXPLAIN = 512, OPT_EMIT, OPT_AUTOCAST_OP, OPT_AUTOCAST_DTYPE, OPT_FORCE_DTYPE };
#define AUTOCAST_LONG_OPTS                                                                                  \
    {"explain", optional_argument, NULL, OPT_EXPLAIN}, {"emit", required_argument, NULL, OPT_EMIT},          \
        {"autocast-op", required_argument, NULL, OPT_AUTOCAST_OP},                                          \
        {"autocast-dtype", required_argument, NULL, OPT_AUTOCAST_DTYPE},                                    \
        {"force-dtype", required_argument, NULL, OPT_FORCE_DTYPE},

static DType half_dtype(const char *option, const char *arg)
{
    DType t = dtype_from_name(arg);
    if (t != DT_BF16 && t != DT_F16)
        usage_error(option, arg);
    return t;
}

static void autocast_option(int ch, const char *arg, Options *o)
{
    switch (ch) {
    case OPT_EXPLAIN:
        if (!arg || strcmp(arg, "text") == 0)
            o->explain = EXPLAIN_TEXT;
        else if (strcmp(arg, "json") == 0)
            o->explain = EXPLAIN_JSON;
        else
            usage_error("--explain takes no value or =json, not '%s'", arg);
        break;
    case OPT_EMIT:
        if (strcmp(arg, "c") == 0)
            o->emit = EMIT_C;
        else if (strcmp(arg, "dot") == 0)
            o->emit = EMIT_DOT;
        else if (strcmp(arg, "check") == 0)
            o->emit = EMIT_CHECK;
        else if (strcmp(arg, "main") == 0)
            o->emit = EMIT_MAIN;
        else
            usage_error("--emit takes c, dot, check or main, not '%s'", arg);
        break;
    case OPT_AUTOCAST_OP: {
        const char *eq = strchr(arg, '=');
        static const char *const values[] = {"bf16", "f16", "f32", "promote", "none"};
        bool known = false;
        for (size_t i = 0; eq && i < sizeof values / sizeof values[0]; i++)
            known |= strcmp(eq + 1, values[i]) == 0;
        if (!eq || eq == arg || !known)
            usage_error("--autocast-op takes NAME=bf16|f16|f32|promote|none, not '%s'", arg);
        if (o->nautocast_ops == (int)(sizeof o->autocast_ops / sizeof o->autocast_ops[0]))
            usage_error("%s", "too many --autocast-op options");
        o->autocast_ops[o->nautocast_ops++] = arg;
        break;
    }
    case OPT_AUTOCAST_DTYPE:
        o->autocast_dtype = half_dtype("--autocast-dtype takes bf16 or f16, not '%s'", arg);
        break;
    case OPT_FORCE_DTYPE:
        o->force_dtype = half_dtype("--force-dtype takes bf16 or f16, not '%s'", arg);
        break;
    }
}

/* What the output options mean together.  --explain prints to standard
 * output; alone it compiles no files (like -M), with -o it also writes
 * them, so it cannot share standard output with -o - or -M. */
static void check_autocast_options(Options *o, const DepOptions *dep)
{
    bool to_stdout = o->output_path && strcmp(o->output_path, "-") == 0;
    if (o->explain != EXPLAIN_NONE) {
        if (to_stdout)
            usage_error("%s", "--explain prints to standard output, so it cannot be combined with -o -");
        if (dep->print)
            usage_error("%s", "--explain and -M both print to standard output; use -MD to write the depfile");
        if (!o->output_path) {
            if (dep->write || o->header_path)
                usage_error("%s", "--explain without -o writes no files; give -o FILE to write them too");
            if (o->emit == EMIT_DOT || o->emit == EMIT_CHECK || o->emit == EMIT_MAIN)
                usage_error("--explain with --emit=%s needs -o FILE",
                            o->emit == EMIT_DOT ? "dot" : o->emit == EMIT_CHECK ? "check" : "main");
            o->emit = EMIT_NOTHING;
        }
    }
    if (o->emit == EMIT_DOT && o->header_path)
        usage_error("%s", "--emit=dot writes one file, the graph; --header does not apply");
    if (o->dot_params && o->emit != EMIT_DOT)
        usage_error("%s", "--dot-params applies to --emit=dot only");
    if ((o->emit == EMIT_CHECK || o->emit == EMIT_MAIN) && o->header_path)
        usage_error("--emit=%s writes one self-contained program; --header does not apply",
                    o->emit == EMIT_CHECK ? "check" : "main");
}

/* The command line's options into opts, and its one input file; exits
 * (EXIT_OK or EXIT_USAGE) on --help, --version and every usage error. */
static void parse_command_line(int argc, char **argv, Options *opts)
{
    enum { OPT_HEADER = 256, OPT_PREFIX, OPT_POLICY, OPT_DUMP, OPT_VERSION, OPT_AUTOCAST, OPT_EMBED_WEIGHTS,
           OPT_NO_FUSE, OPT_F32_OUTPUTS, OPT_DOT_PARAMS };
    static const struct option long_opts[] = {
        {"target", required_argument, NULL, 't'},   {"output", required_argument, NULL, 'o'},
        {"header", required_argument, NULL, OPT_HEADER}, {"prefix", required_argument, NULL, OPT_PREFIX},
        {"policy", required_argument, NULL, OPT_POLICY}, {"dump", required_argument, NULL, OPT_DUMP},
        {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, OPT_VERSION},
        {"autocast", no_argument, NULL, OPT_AUTOCAST}, {"include", required_argument, NULL, 'I'},
        {"embed-weights", required_argument, NULL, OPT_EMBED_WEIGHTS},
        {"no-fuse", no_argument, NULL, OPT_NO_FUSE},
        {"f32-outputs", no_argument, NULL, OPT_F32_OUTPUTS},
        {"dot-params", no_argument, NULL, OPT_DOT_PARAMS},
        AUTOCAST_LONG_OPTS
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":t:o:hI:g", long_opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            if (!target_from_name(optarg, &opts->target))
                usage_error("unknown target '%s'; expected tpu, gpu or cpu", optarg);
            break;
        case 'o':
            opts->output_path = optarg;
            break;
        case OPT_HEADER:
            opts->header_path = optarg;
            break;
        case OPT_PREFIX:
            opts->prefix = optarg;
            break;
        case 'g':
            opts->line_directives = true;
            break;
        case 'I':
            if (opts->ninclude_dirs == (int)(sizeof opts->include_dirs / sizeof opts->include_dirs[0]))
                usage_error("%s", "too many -I directories");
            opts->include_dirs[opts->ninclude_dirs++] = optarg;
            break;
        case OPT_AUTOCAST:
            opts->autocast_all = true;
            break;
        case OPT_EMBED_WEIGHTS:
            opts->embed_weights = optarg;
            break;
        case OPT_NO_FUSE:
            opts->no_fuse = true;
            break;
        case OPT_F32_OUTPUTS:
            opts->f32_outputs = true;
            break;
        case OPT_DOT_PARAMS:
            opts->dot_params = true;
            break;
        case OPT_POLICY:
            opts->policy_path = optarg;
            break;
        case OPT_DUMP:
            if (strcmp(optarg, "lower") && strcmp(optarg, "autodiff") && strcmp(optarg, "optimize") &&
                strcmp(optarg, "fuse") && strcmp(optarg, "memplan"))
                usage_error("--dump takes lower, autodiff, optimize, fuse or memplan, not '%s'", optarg);
            opts->dump_pass = optarg;
            break;
        case OPT_EXPLAIN:
        case OPT_EMIT:
        case OPT_AUTOCAST_OP:
        case OPT_AUTOCAST_DTYPE:
        case OPT_FORCE_DTYPE:
            autocast_option(ch, optarg, opts);
            break;
        case 'h':
            fputs(usage_text, stdout);
            fputs(usage_text_more, stdout);
            exit(EXIT_OK);
        case OPT_VERSION:
            printf("ampc %s\n", AMPC_VERSION);
            exit(EXIT_OK);
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
    opts->input_path = argv[optind];
}

/* Standard output written in full: fflush and the stream's error flag
 * (an earlier failed write), reported once with errno's reason. */
static bool stdout_flushed(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return true;
    fprintf(stderr, "ampc: error: cannot write to standard output: %s\n",
            errno ? strerror(errno) : "write error");
    return false;
}

/* Each output into a temporary beside its final name, then every one
 * renamed into place, so that a failure leaves the old files whole. */
static bool write_outputs(Ctx *c, const Output *out, const Buf *depfile, const DepOptions *dep, bool to_stdout,
                          bool write_header)
{
    const Options *o = c->opts;
    Pending files[3] = {0};
    int nfiles = 0;
    bool ok = true;
    if (to_stdout) {
        ok = fwrite(out->c_file.data, 1, out->c_file.len, stdout) == out->c_file.len && fflush(stdout) == 0;
        if (!ok)
            fprintf(stderr, "ampc: error: cannot write to standard output: %s\n", strerror(errno));
    } else {
        ok = write_temp(c, o->output_path, &out->c_file, &files[nfiles]);
        nfiles += ok;
    }
    if (ok && write_header) {
        ok = write_temp(c, o->header_path, &out->h_file, &files[nfiles]);
        nfiles += ok;
    }
    if (ok && dep->write) {
        const char *path = dep->file ? dep->file : to_stdout ? NULL : replace_ext(c, o->output_path, ".d");
        if (!path) {
            fputs("ampc: error: -MD with -o - needs -MF FILE to name the depfile\n", stderr);
            ok = false;
        } else {
            ok = write_temp(c, path, depfile, &files[nfiles]);
            nfiles += ok;
        }
    }
    for (int i = 0; i < nfiles; i++) {
        if (files[i].unchanged)
            continue;
        if (!files[i].tmp) {
            ok = ok && write_in_place(files[i].path, files[i].data);
            continue;
        }
        if (ok && rename(files[i].tmp, files[i].path) != 0) {
            fprintf(stderr, "ampc: error: cannot write %s: %s\n", files[i].path, strerror(errno));
            ok = false;
        }
        if (!ok)
            unlink(files[i].tmp); /* still ours: the lock is held until close */
        close(files[i].fd);
    }
    return ok;
}

/* An installed ampc's library directory: share/ampc beside its bin/ (the
 * prefix it runs from, so a staged or moved tree works as installed), or
 * NULL when there is none, as in a build tree. */
static const char *installed_share_dir(void)
{
    static char dir[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = 0; /* the bin directory */
    slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = 0; /* the prefix */
    snprintf(dir, sizeof dir, "%s/share/ampc", exe);
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? dir : NULL;
}

int main(int argc, char **argv)
{
    Options opts = {.target = TARGET_CPU, .argc = argc, .argv = argv};
    DepOptions dep = {0};
    /* static: still reachable at exit on every path, so leak checkers stay quiet */
    static char **args;
    args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        out_of_memory(((size_t)argc + 1) * sizeof *args);
    argc = take_dep_options(argc, argv, args, &dep, &opts);
    argv = args;
    parse_command_line(argc, argv, &opts);
    check_autocast_options(&opts, &dep);
    opts.share_dir = installed_share_dir();

    Ctx *c = ctx_new(&opts, stderr);
    bool to_stdout = opts.output_path && strcmp(opts.output_path, "-") == 0;
    if (!opts.output_path) {
        if (strcmp(opts.input_path, "-") == 0 && opts.emit != EMIT_NOTHING)
            usage_error("%s", "reading from standard input needs -o FILE or -o -");
        opts.output_path = default_output(c, opts.input_path, opts.emit == EMIT_DOT    ? ".dot"
                                                              : opts.emit == EMIT_MAIN ? "_main.c"
                                                                                       : ".c");
    }
    if (to_stdout && opts.dump_pass)
        usage_error("%s", "--dump prints the IR on standard output, so it cannot share it with -o -");
    if (to_stdout && (dep.write || dep.print) && dep.ntargets == 0)
        usage_error("%s", "a depfile for -o - needs -MT TARGET to name the rule's target");
    bool write_header = opts.emit == EMIT_C && (!to_stdout || opts.header_path);
    if (opts.emit == EMIT_CHECK && !opts.output_path)
        opts.output_path = default_output(c, opts.input_path, "_check.c");
    /* -o /dev/null: no header is derived from a device's name */
    bool special_out = !to_stdout && is_special_file(opts.output_path);
    if (special_out && !opts.header_path)
        write_header = false;
    if (!opts.header_path && !to_stdout && !special_out)
        opts.header_path = replace_ext(c, opts.output_path, ".h");

    /* the .c includes the header by its base name in #include "...", which
     * has no escapes: a quote or a control byte there cannot be written */
    if (write_header && opts.emit == EMIT_C) {
        const char *slash = strrchr(opts.header_path, '/');
        for (const char *s = slash ? slash + 1 : opts.header_path; *s; s++)
            if (*s == '"' || (unsigned char)*s < 0x20 || *s == 0x7f)
                usage_error("the header's name '%s' cannot stand in #include \"...\" (a quote or a control "
                            "character); choose another with --header", opts.header_path);
    }
    SourceFile *src = source_read(c, opts.input_path);
    if (!src) {
        int rc = c->io_error ? EXIT_IO : EXIT_INPUT_ERROR;
        ctx_free(c);
        free(args);
        return rc;
    }
    Output out = {0};
    int rc = ampc_compile(c, src, &out);
    /* --dump and --explain print on standard output as they go: a full disk
     * or a closed pipe there is a failed run (exit 3), reported, and no
     * output file is replaced */
    if (rc == EXIT_OK && (opts.dump_pass || opts.explain != EXPLAIN_NONE) && !stdout_flushed())
        rc = EXIT_IO;
    if (rc != EXIT_OK || opts.emit == EMIT_NOTHING) {
        ctx_free(c);
        free(args);
        return rc;
    }

    Buf depfile;
    make_depfile(c, &depfile, &dep, to_stdout ? "-" : opts.output_path, write_header ? opts.header_path : NULL);
    if (dep.print) {
        /* -M: the rule is the only output */
        bool printed = fwrite(depfile.data, 1, depfile.len, stdout) == depfile.len && stdout_flushed();
        ctx_free(c);
        free(args);
        return printed ? EXIT_OK : EXIT_IO;
    }

    const char *outs[3] = {to_stdout ? NULL : opts.output_path, write_header ? opts.header_path : NULL,
                           dep.write ? (dep.file ? dep.file : to_stdout ? NULL : replace_ext(c, opts.output_path, ".d"))
                                     : NULL};
    static const char *const what[3] = {"output", "header", "depfile"};
    if (!outputs_are_distinct(c, outs, what, 3)) {
        ctx_free(c);
        free(args);
        return EXIT_USAGE;
    }
    bool ok = write_outputs(c, &out, &depfile, &dep, to_stdout, write_header);
    ctx_free(c);
    free(args);
    return ok ? EXIT_OK : EXIT_IO;
}
