/* runner.c: --emit=main, the model's C and a main() that runs it on files.
 *
 * The program is the model (its header and source, as --emit=c writes
 * them) and a main():
 *
 *     PROG [WEIGHTS.safetensors] IN.bin... OUT.bin... [DIM=N]...
 *
 * WEIGHTS (when the model has parameters and does not embed them) is read
 * by <prefix>_load_weights, by state_dict name; each IN.bin holds one
 * input's raw little-endian elements in its declared dtype, in the order of
 * the model's `input` lines (numpy's x.tofile()); each OUT.bin gets one
 * output, in the order of the `output` line: floating outputs as f32
 * whatever dtype autocast left them in, others in their own dtype.  A
 * dimension of the model not given as DIM=N is found from the first
 * input whose size it decides (its file's size over the size at 1), so a
 * batch needs no flag.  Errors go to standard error with exit status 1;
 * a bad command line exits 2.
 */
#include "back.h"

#include <string.h>

static void emit_runner_helpers(Buf *o)
{
    buf_puts(o, "\n/* ---- the runner (ampc --emit=main) ---- */\n#include <stdio.h>\n#include <stdlib.h>\n"
                "#include <string.h>\n\n");
    /* every block is freed at exit, so a leak checker (LeakSanitizer)
     * finds the program clean */
    buf_puts(o, "static void **run_blocks;\nstatic size_t run_nblocks, run_cap;\n\n"
                "static void run_free_all(void)\n{\n    while (run_nblocks)\n        free(run_blocks[--run_nblocks]);\n"
                "    free(run_blocks);\n}\n\n");
    buf_puts(o, "static void *run_alloc(size_t n)\n{\n    void *p = malloc(n ? n : 1);\n"
                "    if (p && run_nblocks == run_cap) {\n        void **more = realloc(run_blocks, "
                "(run_cap ? 2 * run_cap : 16) * sizeof *more);\n"
                "        if (!run_blocks && more)\n            atexit(run_free_all);\n"
                "        if (more) {\n            run_blocks = more;\n            run_cap = run_cap ? 2 * run_cap : 16;\n"
                "        } else {\n            free(p);\n            p = NULL;\n        }\n    }\n"
                "    if (!p) {\n        fprintf(stderr, \"out of memory (%zu bytes)\\n\", n);\n        exit(1);\n    }\n"
                "    run_blocks[run_nblocks++] = p;\n    return p;\n}\n\n");
    buf_puts(o, "/* the size of a file in bytes, or -1 */\nstatic long long run_file_size(const char *path)\n{\n"
                "    FILE *f = fopen(path, \"rb\");\n    if (!f)\n        return -1;\n    long long n = -1;\n"
                "    if (fseek(f, 0, SEEK_END) == 0)\n        n = ftell(f);\n    fclose(f);\n    return n;\n}\n\n");
    buf_puts(o, "static void run_read(const char *path, void *p, size_t bytes)\n{\n    FILE *f = fopen(path, \"rb\");\n"
                "    if (!f || fread(p, 1, bytes, f) != bytes || fgetc(f) != EOF) {\n"
                "        fprintf(stderr, \"%s: cannot read %zu bytes (the input's size), or the file is larger\\n\", "
                "path, bytes);\n        exit(1);\n    }\n    fclose(f);\n}\n\n");
    buf_puts(o, "/* n elements of dtype t at p, floating ones as f32 */\n"
                "static void run_write(const char *path, const void *p, size_t n, amp_dtype t)\n{\n"
                "    FILE *f = fopen(path, \"wb\");\n    int ok = f != NULL;\n"
                "    if (ok && (t == AMP_F64 || t == AMP_F32 || t == AMP_BF16 || t == AMP_F16)) {\n"
                "        for (size_t i = 0; ok && i < n; i++) {\n            float y = amp_load_as_f32(t, p, i);\n"
                "            ok = fwrite(&y, sizeof y, 1, f) == 1;\n        }\n"
                "    } else if (ok) {\n        ok = fwrite(p, amp_dtype_size(t), n, f) == n;\n    }\n"
                "    if (!f || fclose(f) != 0 || !ok) {\n        fprintf(stderr, \"%s: cannot write the output\\n\", path);\n"
                "        exit(1);\n    }\n}\n\n");
}

/* The usage line: WEIGHTS when there are weights to load, then the files. */
static const char *usage(Ctx *c, Graph *g, bool weights)
{
    Buf u;
    buf_init(&u, c->arena);
    buf_puts(&u, "usage: %s");
    if (weights)
        buf_puts(&u, " WEIGHTS.safetensors");
    for (int i = 0; i < g->inputs->len; i++)
        buf_printf(&u, " %s.bin", ((Value *)VEC_AT(g->inputs, i))->name);
    for (int i = 0; i < g->outputs->len; i++)
        buf_printf(&u, " %s.bin", ((Value *)VEC_AT(g->outputs, i))->name);
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(&u, " [%s=N]", c->sym_names[i]);
    buf_puts(&u, "\\n");
    return u.data;
}

/* main(): the command line, the dimensions (given, or found from an
 * input file's size), then read, run, write. */
static void emit_runner_main(Ctx *c, Graph *g, const char *p, bool weights, Buf *o)
{
    int nfiles = (weights ? 1 : 0) + g->inputs->len + g->outputs->len;
    buf_puts(o, "int main(int argc, char **argv)\n{\n    const char *files[64];\n    int nfiles = 0;\n");
    buf_printf(o, "    %s_dims dims;\n    memset(&dims, 0, sizeof dims);\n", p);
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "    int have_%s = 0;\n", c->sym_names[i]);
    buf_puts(o, "    for (int i = 1; i < argc; i++) {\n        char *eq = strchr(argv[i], '=');\n"
                "        if (!eq) {\n            if (nfiles < 64)\n                files[nfiles] = argv[i];\n"
                "            nfiles++;\n            continue;\n        }\n        int known = 0;\n");
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "        if (eq - argv[i] == %d && strncmp(argv[i], \"%s\", %d) == 0) {\n"
                      "            dims.%s = strtoll(eq + 1, NULL, 10);\n            have_%s = known = dims.%s > 0;\n"
                      "        }\n",
                   (int)strlen(c->sym_names[i]), c->sym_names[i], (int)strlen(c->sym_names[i]), c->sym_names[i],
                   c->sym_names[i], c->sym_names[i]);
    buf_printf(o, "        if (!known)\n            nfiles = -1000;\n    }\n    if (nfiles != %d) {\n"
                  "        fprintf(stderr, \"%s\", argv[0]);\n        return 2;\n    }\n", nfiles, usage(c, g, weights));
    int first_in = weights ? 1 : 0, first_out = first_in + g->inputs->len;
    /* a dimension not given: from the first input whose size it changes */
    for (int s = 0; s < c->nsyms; s++) {
        const char *d = c->sym_names[s];
        buf_printf(o, "    if (!have_%s) {\n", d);
        for (int i = 0; i < g->inputs->len; i++) {
            Value *v = VEC_AT(g->inputs, i);
            const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
            buf_printf(o, "        if (!have_%s) {\n            %s_dims at1 = dims, at2 = dims;\n", d, p);
            buf_printf(o, "            at1.%s = 1;\n            at2.%s = 2;\n", d, d);
            for (int k = 0; k < c->nsyms; k++)
                buf_printf(o, "            int64_t n1_%s = at1.%s, n2_%s = at2.%s;\n", c->sym_names[k], c->sym_names[k],
                           c->sym_names[k], c->sym_names[k]);
            /* the numel at 1 and at 2, from the same expression with the dims renamed */
            buf_puts(o, "            long long n1, n2;\n            {\n");
            for (int k = 0; k < c->nsyms; k++)
                buf_printf(o, "                const int64_t %s = n1_%s;\n", c->sym_names[k], c->sym_names[k]);
            buf_printf(o, "                n1 = (long long)(%s);\n            }\n            {\n", n);
            for (int k = 0; k < c->nsyms; k++)
                buf_printf(o, "                const int64_t %s = n2_%s;\n", c->sym_names[k], c->sym_names[k]);
            buf_printf(o, "                n2 = (long long)(%s);\n            }\n", n);
            buf_printf(o, "            long long bytes = run_file_size(files[%d]), es = amp_dtype_size(%s);\n",
                       first_in + i, dtype_amp_enum(v->type.dtype));
            buf_printf(o, "            if (n2 != n1 && n1 > 0 && n2 == 2 * n1 && bytes > 0 && bytes %% (n1 * es) == 0) {\n"
                          "                dims.%s = bytes / (n1 * es);\n                have_%s = 1;\n            }\n"
                          "        }\n", d, d);
        }
        buf_printf(o, "        if (!have_%s) {\n            fprintf(stderr, \"the input files do not give %s; "
                      "give %s=N\\n\");\n            return 2;\n        }\n    }\n", d, d, d);
    }
    for (int i = 0; i < c->nsyms; i++)
        buf_printf(o, "    const int64_t %s = dims.%s;\n    (void)%s;\n", c->sym_names[i], c->sym_names[i],
                   c->sym_names[i]);
    buf_printf(o, "    %s_params params;\n    %s_inputs inputs;\n    %s_outputs outputs;\n", p, p, p);
    buf_puts(o, "    memset(&params, 0, sizeof params);\n    memset(&inputs, 0, sizeof inputs);\n"
                "    memset(&outputs, 0, sizeof outputs);\n    int rc;\n");
    if (weights) {
        char *P = arena_strdup(c->arena, p);
        for (char *q = P; *q; q++)
            if (*q >= 'a' && *q <= 'z')
                *q = (char)(*q - 'a' + 'A');
        buf_printf(o, "    void *storage = run_alloc(%s_WEIGHTS_BYTES);\n", P);
        /* the loader's message names each bad tensor, one a line */
        buf_puts(o, "    static char why[4096];\n");
        buf_printf(o, "    rc = %s_load_weights_ex(files[0], storage, %s_WEIGHTS_BYTES, &params, why, sizeof why);\n", p, P);
        buf_puts(o, "    if (rc != AMP_OK) {\n        fprintf(stderr, \"%s: %s\\n\", files[0], why);\n"
                    "        return 1;\n    }\n");
    }
    for (int i = 0; i < g->inputs->len; i++) {
        Value *v = VEC_AT(g->inputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "    {\n        size_t bytes = (size_t)(%s) * %d;\n        void *in = run_alloc(bytes);\n", n,
                   dtype_size(v->type.dtype));
        buf_printf(o, "        run_read(files[%d], in, bytes);\n        inputs.%s = in;\n    }\n", first_in + i, v->cname);
    }
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "    outputs.%s = run_alloc((size_t)(%s) * %d);\n", v->cname, n, dtype_size(v->type.dtype));
    }
    buf_printf(o, "    size_t arena_bytes = %s_arena_bytes(&dims);\n    void *arena = run_alloc(arena_bytes);\n", p);
    buf_printf(o, "    rc = %s_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);\n", p);
    buf_printf(o, "    if (rc != AMP_OK) {\n        fprintf(stderr, \"%s_forward: %%s\\n\", %s_strerror(rc));\n"
                  "        return 1;\n    }\n", p, p);
    for (int i = 0; i < g->outputs->len; i++) {
        Value *v = VEC_AT(g->outputs, i);
        const char *n = poly_to_c(c, shape_numel(c, &v->type.shape), c->sym_names);
        buf_printf(o, "    run_write(files[%d], outputs.%s, (size_t)(%s), %s);\n", first_out + i, v->cname, n,
                   dtype_amp_enum(v->type.dtype));
    }
    buf_puts(o, "    return 0;\n}\n");
}

bool emit_runner(Ctx *c, const Output *model, Output *out)
{
    Graph *g = c->graph;
    const char *p = model_prefix(c);
    bool weights = g->params->len > 0;
    if (c->opts->embed_weights) {
        error_plain(c, "--emit=main reads the weights from a file; it does not take --embed-weights");
        return false;
    }
    for (int i = 0; i < g->params->len; i++) {
        Value *v = VEC_AT(g->params, i);
        int64_t n;
        for (int d = 0; d < v->type.shape.ndim; d++)
            if (!poly_is_const(v->type.shape.dims[d], &n)) {
                error_plain(c, "--emit=main: %s is sized by a run-time dimension, so the weights file cannot hold it",
                            v->name);
                return false;
            }
    }
    buf_init(&out->c_file, c->arena);
    buf_init(&out->h_file, c->arena);
    Buf *o = &out->c_file;
    buf_puts(o, "/* A program running the model on files (ampc --emit=main); build with\n"
                " * -lamprt -lm -lpthread.  Usage: PROG [WEIGHTS.safetensors] IN.bin... OUT.bin... [DIM=N]...\n"
                " * (docs/cli.md). */\n\n");
    buf_puts(o, model->h_file.data);
    const char *s = model->c_file.data;
    while (*s) {             /* the source without its #include of the header above */
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s + 1) : strlen(s);
        if (!(len > 10 && strncmp(s, "#include \"", 10) == 0))
            buf_printf(o, "%.*s", (int)len, s);
        s += len;
    }
    emit_runner_helpers(o);
    emit_runner_main(c, g, p, weights, o);
    return c->nerrors == 0;
}
