/*
 * test_pipeline.c - ampc_compile end to end, in memory (src/driver.c and
 * every pass it runs).
 *
 * Each test compiles a model from a string with diagnostics going to a
 * memory stream, then checks the exit code, the messages, and what the
 * generated C calls.  A failing stage must stop the pipeline with exit
 * code 1 (3 for a file that cannot be read) and say why; a successful one
 * must pick each kernel's dtype as the target's PyTorch rules do
 * (/work/shared/autocast-facts.md).  tests/golden/ holds the full expected
 * texts; here we check the decisions that matter, one claim per test.
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

#include "ampc.h"

typedef struct Fixture {
    Options opts;
    Ctx *c;
    FILE *diag;
    char *diag_text;
    size_t diag_len;
    Output out;
    char tmpdir[64];
} Fixture;

static int setup(void **state)
{
    Fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->diag = open_memstream(&f->diag_text, &f->diag_len);
    assert_non_null(f->diag);
    f->opts.target = TARGET_TPU;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    ctx_free(f->c);
    fclose(f->diag);
    free(f->diag_text);
    if (f->tmpdir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->tmpdir);
        assert_int_equal(system(cmd), 0);
    }
    free(f);
    return 0;
}

/* Compile `text` as t.amp for `target`; a fresh context each time. */
static int compile(Fixture *f, Target target, const char *text)
{
    if (f->c) {
        ctx_free(f->c);
        fclose(f->diag);
        free(f->diag_text);
        f->diag_text = NULL;
        f->diag = open_memstream(&f->diag_text, &f->diag_len);
        assert_non_null(f->diag);
    }
    f->opts.target = target;
    memset(&f->out, 0, sizeof f->out);
    f->c = ctx_new(&f->opts, f->diag);
    SourceFile *src = source_from_text(f->c, "t.amp", text, strlen(text));
    return ampc_compile(f->c, src, &f->out);
}

static const char *diags(Fixture *f)
{
    fflush(f->diag);
    return f->diag_text ? f->diag_text : "";
}

static const char *c_text(Fixture *f)
{
    assert_non_null(f->out.c_file.data);
    return f->out.c_file.data;
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle)) {
        print_error("expected to find\n  %s\nin\n%s\n", needle, haystack);
        fail();
    }
}

static void assert_lacks(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle)) {
        print_error("did not expect to find\n  %s\nin\n%s\n", needle, haystack);
        fail();
    }
}

static int count(const char *haystack, const char *needle)
{
    int n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Lines of `text` that contain both `a` and `b`. */
static int count_lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char *copy = strndup(line, len);
        assert_non_null(copy);
        n += strstr(copy, a) && strstr(copy, b);
        free(copy);
        line += len + (nl != NULL);
    }
    return n;
}

/* Error runs must stop with exit 1, print exactly `want`, and produce no C. */
static void expect_error(Fixture *f, Target target, const char *text, const char *want)
{
    int rc = compile(f, target, text);
    assert_string_equal(diags(f), want);
    assert_int_equal(rc, EXIT_INPUT_ERROR);
    assert_true(f->c->nerrors > 0);
}

static const char mlp[] =
    "model Mlp(B) {\n"
    "  input x: f32[B, 64]\n"
    "  input y: i64[B]\n"
    "  param fc1.weight: f32[128, 64]\n"
    "  param fc1.bias:   f32[128]\n"
    "  param fc2.weight: f32[10, 128]\n"
    "  param fc2.bias:   f32[10]\n"
    "  autocast {\n"
    "    h      = relu(linear(x, fc1.weight, fc1.bias))\n"
    "    logits = linear(h, fc2.weight, fc2.bias)\n"
    "    loss   = nll_loss(log_softmax(logits, dim=1), y)\n"
    "  }\n"
    "  output logits\n"
    "  minimize loss\n"
    "}\n";

/* ---- each stage's errors stop the pipeline ---------------------------- */

static void parse_error_exits_1(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_TPU, "model M(B) {\n  input x: f32[B, 4]\n  y = relu(x\n}\n",
                 "t.amp:4:1: error: unexpected '}'; expected ')'\n"
                 "    4 | }\n"
                 "      | ^\n");
    assert_null(f->c->model);
    assert_null(f->c->graph);
}

static void empty_source_has_no_model(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_TPU, "",
                 "t.amp:1:1: error: no model in this file; a model starts with 'model Name(dims) {'\n"
                 "    1 | \n"
                 "      | ^\n");
}

static void resolve_error_exits_1(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_TPU, "model M(B) {\n  input x: f32[B, 4]\n  y = lineer(x)\n  output y\n}\n",
                 "t.amp:3:7: error: unknown op 'lineer'; did you mean 'linear'?\n"
                 "    3 |   y = lineer(x)\n"
                 "      |       ^~~~~~\n");
    assert_null(f->c->graph); /* lower never ran */
}

static void typecheck_error_exits_1(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_GPU,
                 "model M(B) {\n  input x: f32[B, 4]\n  param w: f32[8, 5]\n  y = linear(x, w)\n  output y\n}\n",
                 "t.amp:4:7: error: linear(): input has 4 features but weight expects 5 "
                 "(input f32[B, 4], weight f32[8, 5])\n"
                 "    4 |   y = linear(x, w)\n"
                 "      |       ^~~~~~~~~~~~\n");
    assert_non_null(f->c->policy); /* loaded before typecheck, which reads it (types_composite.c) */
}

static void policy_for_another_target_exits_1(void **state)
{
    Fixture *f = *state;
    char path[] = "/tmp/ampc-pipeline-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *pol = "target gpu\nlow f16\n";
    assert_int_equal(write(fd, pol, strlen(pol)), (ssize_t)strlen(pol));
    close(fd);
    f->opts.policy_path = path;
    int rc = compile(f, TARGET_TPU, "model M(B) {\n  input x: f32[B]\n  y = relu(x)\n  output y\n}\n");
    unlink(path);
    assert_int_equal(rc, EXIT_INPUT_ERROR);
    char *want = NULL;
    assert_true(asprintf(&want, "ampc: error: the policy %s is for target 'gpu', but the target is 'tpu'\n", path) > 0);
    assert_string_equal(diags(f), want);
    free(want);
}

static void missing_policy_file_exits_3(void **state)
{
    Fixture *f = *state;
    f->opts.policy_path = "/nonexistent/ampc.policy";
    int rc = compile(f, TARGET_TPU, "model M(B) {\n  input x: f32[B]\n  y = relu(x)\n  output y\n}\n");
    assert_int_equal(rc, EXIT_IO); /* a file that cannot be read is not the model's fault */
    assert_string_equal(diags(f), "ampc: error: cannot open /nonexistent/ampc.policy: No such file or directory\n");
}

static void autocast_error_exits_1(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_TPU,
                 "model M(B) {\n  input x: f32[B, 4]\n  autocast(dtype=f16) { y = relu(x) }\n  output y\n}\n",
                 "t.amp:3:18: error: autocast on tpu supports dtype=bf16 only\n"
                 "    3 |   autocast(dtype=f16) { y = relu(x) }\n"
                 "      |                  ^~~\n");
    assert_null(f->c->graph);
}

static void f16_region_is_allowed_on_cpu(void **state)
{
    /* the CPU policy allows f16 as well as bf16 */
    Fixture *f = *state;
    int rc = compile(f, TARGET_CPU,
                     "model M(B) {\n  input x: f32[B, 4]\n  param w: f32[3, 4]\n"
                     "  autocast(dtype=f16) { y = linear(x, w) }\n  output y\n}\n");
    assert_string_equal(diags(f), "");
    assert_int_equal(rc, EXIT_OK);
    assert_contains(c_text(f), "amp_linear_ex_f16(");
}

static void lower_error_exits_1(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_TPU, "model M(B) {\n  input x: f32[B, 4]\n  y = relu(x)\n}\n",
                 "t.amp:1:7: error: model 'M' has no output; add 'output NAME' or 'minimize NAME'\n"
                 "    1 | model M(B) {\n"
                 "      |       ^\n");
}

static void emit_error_exits_1(void **state)
{
    Fixture *f = *state;
    expect_error(f, TARGET_TPU, "model M(B) {\n  input x: i64[B, 4]\n  y = relu(x)\n  output y\n}\n",
                 "t.amp:3:7: error: relu producing i64 has no runtime kernel (the runtime computes in f64, f32, bf16 and f16)\n"
                 "    3 |   y = relu(x)\n"
                 "      |       ^~~~~~~\n");
    assert_non_null(f->c->graph); /* it got as far as the emitter */
}

static void bad_prefix_exits_1(void **state)
{
    Fixture *f = *state;
    f->opts.prefix = "9lives";
    int rc = compile(f, TARGET_TPU, "model M(B) {\n  input x: f32[B]\n  y = relu(x)\n  output y\n}\n");
    assert_int_equal(rc, EXIT_INPUT_ERROR);
    assert_string_equal(diags(f), "ampc: error: --prefix '9lives' is not a C identifier\n");
}

static void several_errors_of_one_pass_are_all_reported(void **state)
{
    Fixture *f = *state;
    int rc = compile(f, TARGET_TPU,
                     "model M(B) {\n  input x: f32[B, 4]\n  a = relu(xx)\n  b = lineer(x)\n  c = softmax(x)\n"
                     "  output a\n}\n");
    assert_int_equal(rc, EXIT_INPUT_ERROR);
    assert_int_equal(f->c->nerrors, 3);
    const char *d = diags(f);
    assert_contains(d, "t.amp:3:12: error: 'xx' is not defined; did you mean 'x'?\n");
    assert_contains(d, "t.amp:4:7: error: unknown op 'lineer'; did you mean 'linear'?\n");
    assert_contains(d, "t.amp:5:7: error: softmax() is missing its argument 'dim'");
}

static void warnings_do_not_fail_the_build(void **state)
{
    Fixture *f = *state;
    int rc = compile(f, TARGET_TPU, "model M(B) {\n  input x: f32[B, 4]\n  y = x * 1e39\n  output y\n}\n");
    assert_int_equal(rc, EXIT_OK);
    assert_int_equal(f->c->nwarnings, 1);
    assert_string_equal(diags(f), "t.amp:3:11: warning: 1e39 overflows to infinity in f32, the dtype mul computes in [-Wliteral-range]\n"
                                  "    3 |   y = x * 1e39\n"
                                  "      |           ^~~~\n");
    assert_contains(c_text(f), "amp_mul_scalar_f32((size_t)(4*B), x, INFINITY, outputs->y);");
}

/* ---- kernels chosen per target ------------------------------------------- */

static void mlp_on_tpu_runs_linear_in_bf16_and_log_softmax_in_f32(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU, mlp), EXIT_OK);
    assert_string_equal(diags(f), "");
    const char *c = c_text(f);
    /* on the weights <prefix>_prepare packed, or on the casts without them */
    assert_int_equal(count(c, "amp_linear_ex_bf16("), 2);
    /* relu is on the TPU bf16 list; fuse.c runs it with its linear */
    assert_int_equal(count_lines_with(c, "amp_linear_ex_bf16(", "fc1_bias_bf16, 1, "), 1);
    assert_int_equal(count(c, "amp_log_softmax_f32("), 1);   /* TPU fp32 list */
    assert_int_equal(count(c, "amp_nll_loss_f32("), 1);
    assert_int_equal(count(c, "amp_cast_bf16_f32("), 1);     /* logits up to f32 for log_softmax */
    assert_lacks(c, "amp_linear_f32(");
    assert_lacks(c, "amp_log_softmax_bf16(");
    assert_contains(f->out.h_file.data, "amp_bf16 *logits; /* bf16[B, 10] */"); /* logits stay bf16, as in PyTorch */
    assert_contains(f->out.h_file.data, "float *loss; /* f32[], the loss to minimize */");
}

static void mlp_on_gpu_runs_linear_in_f16_and_log_softmax_in_f32(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_GPU, mlp), EXIT_OK);
    assert_string_equal(diags(f), "");
    const char *c = c_text(f);
    assert_int_equal(count(c, "amp_linear_ex_f16("), 2);
    /* relu not listed on CUDA: follows its f16 input */
    assert_int_equal(count_lines_with(c, "amp_linear_ex_f16(", "fc1_bias_f16, 1, "), 1);
    assert_contains(c, "linear + relu in f16: "); /* fuse.c: one node, the linear's decision */
    assert_int_equal(count(c, "amp_log_softmax_f32("), 1); /* fp32_set_opt_dtype */
    assert_contains(c, "log_softmax in f32: fp32_set_opt_dtype on gpu");
    assert_int_equal(count(c, "amp_nll_loss_f32("), 1);
    assert_lacks(c, "bf16");
}

static void mlp_on_cpu_runs_log_softmax_in_its_bf16_input(void **state)
{
    /* log_softmax is in no PyTorch 2.x CPU list: it follows its bf16
     * input; nll_loss (fp32 list) then casts its result up */
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU, mlp), EXIT_OK);
    assert_string_equal(diags(f), "");
    const char *c = c_text(f);
    assert_int_equal(count(c, "amp_linear_ex_bf16("), 2);
    assert_int_equal(count_lines_with(c, "amp_linear_ex_bf16(", "fc1_bias_bf16, 1, "), 1);
    assert_int_equal(count(c, "amp_log_softmax_bf16("), 1);
    assert_contains(c, "log_softmax in bf16: not in any cpu list: follows its inputs");
    assert_lacks(c, "amp_log_softmax_f32(");
    assert_contains(c, "cast bf16 -> f32: for nll_loss: fp32 on cpu");
    assert_int_equal(count(c, "amp_nll_loss_f32("), 1);
    assert_lacks(c, "_f16(");   /* no f16 kernel or cast */
    assert_lacks(c, "amp_f16"); /* and no f16 buffer */
}

static void no_autocast_means_no_casts(void **state)
{
    Fixture *f = *state;
    for (Target t = TARGET_TPU; t < TARGET_COUNT; t++) {
        assert_int_equal(compile(f, t,
                                 "model M(B) {\n  input x: f32[B, 4]\n  param w: f32[3, 4]\n"
                                 "  y = softmax(linear(x, w), dim=-1)\n  output y\n}\n"),
                         EXIT_OK);
        const char *c = c_text(f);
        assert_lacks(c, "amp_cast_");
        assert_int_equal(count(c, "amp_linear_ex_f32("), 1);
        assert_int_equal(count(c, "amp_softmax_f32(B, 3, 1, "), 1); /* dim=-1 of [B, 3] */
        assert_int_equal(count(c, "autocast is off here: follows its inputs"), 2);
    }
}

static void disabled_region_inside_autocast_follows_inputs(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_GPU,
                             "model M(B) {\n  input x: f32[B, 4]\n  param w: f32[4, 4]\n"
                             "  autocast {\n    h = linear(x, w)\n"
                             "    autocast(enabled=false) {\n      g = relu(h)\n      k = linear(x, w)\n    }\n"
                             "  }\n  output g, k\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    /* relu's input is already f16 (relu runs with it: fuse.c) */
    assert_int_equal(count_lines_with(c, "amp_linear_ex_f16(", ", 1, outputs->g);"), 1);
    assert_int_equal(count_lines_with(c, "amp_linear_ex_f32(", ", 0, outputs->k);"), 1); /* autocast off: f32 in, f32 out */
    assert_int_equal(count_lines_with(c, "linear in f32", "autocast is off here"), 1);
}

static void explicit_dtype_is_not_autocast(void **state)
{
    /* softmax(x, dtype=f16) on gpu: not eligible; its input is converted
     * to the dtype asked for */
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_GPU,
                             "model M(B) {\n  input x: f32[B, 4]\n  autocast { y = softmax(x, 1, dtype=f16) }\n"
                             "  output y\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    assert_contains(c, "cast f32 -> f16: for softmax: explicit dtype=f16");
    assert_contains(c, "softmax in f16: not eligible: explicit dtype=");
    assert_int_equal(count(c, "amp_softmax_f16("), 1);
}

/* fuse.c's linear -> relu: only when the relu is the product's one reader;
 * --no-fuse keeps the two calls. */
static void linear_relu_fuses_only_a_sole_reader(void **state)
{
    Fixture *f = *state;
    const char *model = "model M(B) {\n  input x: f32[B, 4]\n  param w: f32[4, 4]\n"
                        "  h = linear(x, w)\n  g = relu(h)\n  k = relu(linear(x, w))\n"
                        "  output g, h, k\n}\n";
    assert_int_equal(compile(f, TARGET_TPU, model), EXIT_OK);
    const char *c = c_text(f);
    /* (linear_ex: on the weights <prefix>_prepare packed, relu its flag) */
    assert_int_equal(count_lines_with(c, "amp_linear_ex_f32(", ", 0, outputs->h);"), 1); /* h is an output too */
    assert_int_equal(count(c, "amp_relu_f32("), 1);
    assert_int_equal(count_lines_with(c, "amp_linear_ex_f32(", ", 1, outputs->k);"), 1); /* k's linear has no other reader */
    assert_int_equal(count(c, ": linear + relu in f32: "), 1);
    f->opts.no_fuse = true;
    assert_int_equal(compile(f, TARGET_TPU, model), EXIT_OK);
    c = c_text(f);
    assert_int_equal(count_lines_with(c, "amp_linear_ex_f32(", ", 0, "), 2);
    assert_int_equal(count(c, "amp_relu_f32("), 2);
    assert_lacks(c, ", 1, outputs->");
}

/* ---- the weight cache ------------------------------------------------------ */

static void parameter_used_twice_is_cast_once(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model Tied(B) {\n  input x: f32[B, 8]\n  param w: f32[8, 8]\n"
                             "  autocast {\n    h = relu(linear(x, w))\n    o = linear(h, w)\n  }\n"
                             "  output o\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    assert_int_equal(count_lines_with(c, "amp_cast_f32_bf16(", ", w, w_bf16);"), 1);
    /* both linears (the first with its relu: fuse.c) read the one cast,
     * or the one packing of it <prefix>_prepare made */
    assert_int_equal(count_lines_with(c, "amp_linear_ex_bf16(", "w_bf16, tied_prepared_entry_(prepared, 0), NULL, 0"), 1);
    assert_int_equal(count_lines_with(c, "amp_linear_ex_bf16(", "w_bf16, tied_prepared_entry_(prepared, 0), NULL, 1"), 1);
    assert_contains(c, "cast once and reused (weight cache)");
    /* x for the first linear, w in the forward (without a prepared block) */
    assert_int_equal(count(c, "amp_cast_f32_bf16("), 2);
    assert_int_equal(count(c, "amp_linear_pack_weights_bf16(8, 8, AMP_F32, params->w, base + at);"), 1);
}

static void same_parameter_in_two_dtypes_is_cast_twice(void **state)
{
    /* one bf16 copy for linear, f32 is the parameter itself: nothing to share */
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU,
                             "model M(B) {\n  input x: f32[B, 8]\n  param w: f32[8, 8]\n"
                             "  autocast(dtype=bf16) { a = linear(x, w) }\n"
                             "  autocast(dtype=f16) { b = linear(x, w) }\n  output a, b\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    assert_int_equal(count_lines_with(c, "amp_cast_f32_bf16(", ", w, "), 1);
    assert_int_equal(count_lines_with(c, "amp_cast_f32_f16(", ", w, "), 1);
    assert_lacks(c, "weight cache");
}

/* ---- output properties ------------------------------------------------------- */

static void output_is_deterministic(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_GPU, mlp), EXIT_OK);
    char *c1 = strdup(c_text(f)), *h1 = strdup(f->out.h_file.data);
    assert_int_equal(compile(f, TARGET_GPU, mlp), EXIT_OK);
    assert_string_equal(c_text(f), c1);
    assert_string_equal(f->out.h_file.data, h1);
    free(c1);
    free(h1);
}

static void provenance_names_target_and_policy(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU, mlp), EXIT_OK);
    assert_contains(c_text(f), " *   target: cpu, autocast low dtype bf16, built-in cpu policy\n");
    assert_contains(c_text(f), " *   command: ampc t.amp -t cpu\n");
    assert_contains(f->out.h_file.data, "#ifndef MLP_H\n");
}

/* Write the generated files to a temporary directory and compile the .c
 * with the flags the design promises the output passes.  Skipped when
 * there is no runtime header (not run from the repository root) or no cc. */
static int cc_generated(Fixture *f, char *log, size_t log_cap)
{
    if (access("runtime/include/amprt.h", R_OK) != 0 || system("cc --version >/dev/null 2>&1") != 0)
        skip();
    if (!f->tmpdir[0]) {
        strcpy(f->tmpdir, "/tmp/ampc-pipeline-XXXXXX");
        assert_non_null(mkdtemp(f->tmpdir));
    }
    char path[128];
    FILE *out;
    snprintf(path, sizeof path, "%s/model.c", f->tmpdir);
    assert_non_null(out = fopen(path, "w"));
    fputs(f->out.c_file.data, out);
    fclose(out);
    /* the include line names the header */
    const char *inc = strstr(f->out.c_file.data, "#include \"");
    assert_non_null(inc);
    char hname[64];
    assert_int_equal(sscanf(inc, "#include \"%63[^\"]\"", hname), 1);
    snprintf(path, sizeof path, "%s/%s", f->tmpdir, hname);
    assert_non_null(out = fopen(path, "w"));
    fputs(f->out.h_file.data, out);
    fclose(out);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -Wall -Wextra -pedantic -Werror -Iruntime/include -c -o %s/model.o %s/model.c >%s/log 2>&1",
             f->tmpdir, f->tmpdir, f->tmpdir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/log", f->tmpdir);
    log[0] = '\0';
    if ((out = fopen(path, "r"))) {
        size_t n = fread(log, 1, log_cap - 1, out);
        log[n] = '\0';
        fclose(out);
    }
    return rc;
}

static void assert_compiles(Fixture *f)
{
    char log[4096];
    if (cc_generated(f, log, sizeof log) != 0) {
        print_error("generated C does not compile warning-free:\n%s\n", log);
        fail();
    }
}

static void emitted_mlp_compiles_warning_free_on_every_target(void **state)
{
    Fixture *f = *state;
    for (Target t = TARGET_TPU; t < TARGET_COUNT; t++) {
        assert_int_equal(compile(f, t, mlp), EXIT_OK);
        assert_compiles(f);
    }
}

static void emitted_matmul_and_broadcast_compile_warning_free(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_GPU,
                             "model M(B, T) {\n  input q: f32[B, T, 16]\n  input k: f32[16, T]\n  input v: f32[16]\n"
                             "  input b: f32[T]\n  autocast {\n    s = q @ k\n    u = q @ v\n  }\n"
                             "  p = softmax(s + b, dim=-1)\n  r = 2 - u * 0.5\n  output p, r\n}\n"),
                     EXIT_OK);
    assert_compiles(f);
}

/* ---- regressions: bugs found while writing these tests, now fixed ---- */

/* typecheck applies linear's same-dtype rule to the types before autocast,
 * so a call that autocast would make consistent is rejected, with a hint
 * to "use autocast" inside an autocast block.  PyTorch casts both to the
 * low dtype and runs it. */
static void typecheck_accepts_mixed_dtypes_that_autocast_unifies(void **state)
{
    Fixture *f = *state;
    int rc = compile(f, TARGET_TPU,
                     "model M(B) {\n  input x: f32[B, 4]\n  param w: f16[8, 4]\n"
                     "  autocast { y = linear(x, w) }\n  output y\n}\n");
    assert_string_equal(diags(f), "");
    assert_int_equal(rc, EXIT_OK);
    assert_contains(c_text(f), "amp_linear_bf16(");
}

/* Symbolic dims are emitted as C variables and struct members without
 * being checked against C keywords or the emitter's own names. */
/* A dim becomes a C variable and macro parameter, so a C keyword or a
 * name the emitted code uses itself is refused with a clear error. */
static void dim_named_like_a_c_keyword_is_refused(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model M(float, arena) {\n  input x: f32[float, arena]\n  y = relu(x)\n  output y\n}\n"),
                     EXIT_INPUT_ERROR);
}

/* emit_c reserves the names slot0..slot15 (MAX_SYMS of them), but a plan
 * can have more slots than that. */
static void tensor_named_slot16_does_not_clash_with_arena_slots(void **state)
{
    Fixture *f = *state;
    Arena *a = arena_new();
    Buf src;
    buf_init(&src, a);
    buf_puts(&src, "model M(B) {\n  input x: f32[B, 4]\n");
    for (int i = 1; i <= 18; i++)
        buf_printf(&src, "  slot%d = x * %d\n", i, i);
    buf_puts(&src, "  s = slot1");
    for (int i = 2; i <= 18; i++)
        buf_printf(&src, " + slot%d", i);
    buf_puts(&src, "\n  output s\n}\n");
    assert_int_equal(compile(f, TARGET_TPU, src.data), EXIT_OK);
    assert_true(f->c->graph->nslots > 16);
    assert_lacks(c_text(f), "float *const slot16 =");
    assert_compiles(f);
    arena_free(a);
}

/* The graph's value named `name` (a source name), or fail. */
static const Value *value_named(Fixture *f, const char *name)
{
    const Graph *g = f->c->graph;
    for (int i = 0; i < g->values->len; i++) {
        const Value *v = VEC_AT(g->values, i);
        if (v->name && strcmp(v->name, name) == 0)
            return v;
    }
    print_error("no value named %s\n", name);
    fail();
    return NULL;
}

/* A view of a temporary (flatten, reshape, squeeze, unsqueeze, view)
 * takes its operand's slot and copies nothing; the slot stays taken while
 * the view is read, after its operand's last read: z, made once h is dead
 * but while v is still read, gets a slot of its own. */
static void view_of_a_temporary_shares_its_buffer(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model M(B) {\n  input x: f32[B, 2, 4]\n  h = relu(x)\n  v = flatten(h, 1)\n"
                             "  w = reshape(v, -1, 4, 2)\n  z = sigmoid(x)\n  y = w + reshape(z, -1, 4, 2)\n"
                             "  output y\n}\n"),
                     EXIT_OK);
    const Value *h = value_named(f, "h"), *v = value_named(f, "v"), *w = value_named(f, "w"), *z = value_named(f, "z");
    assert_true(h->slot >= 0);
    assert_int_equal(v->slot, h->slot);
    assert_int_equal(w->slot, h->slot);
    assert_int_not_equal(z->slot, h->slot);
    assert_contains(c_text(f), "(void)v; /* h's buffer as it lies: nothing to copy */");
    assert_lacks(c_text(f), "memcpy(v,");
    assert_lacks(c_text(f), "memcpy(w,");
    assert_compiles(f);
}

/* The arena slot an f32 buffer `name` is declared in, in C text c. */
static int slot_of(const char *c, const char *name)
{
    char decl[64];
    snprintf(decl, sizeof decl, "float *const %s = (float *)slot", name);
    const char *p = strstr(c, decl);
    if (!p) {
        print_error("no declaration of %s\n", name);
        fail();
    }
    return atoi(p + strlen(decl));
}

/* A dropout that draws no mask is a view too: in the inference forward it
 * shares h's buffer; in the training step it draws, into a buffer of its
 * own. */
static void dropout_outside_the_training_step_shares_its_buffer(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model M(B) {\n  input x: f32[B, 8]\n  input y: i64[B]\n  param w: f32[4, 8]\n"
                             "  h = relu(linear(x, w))\n  d = dropout(h, p=0.5)\n  z = d * 2.0\n"
                             "  loss = cross_entropy(z, y)\n  output z\n  minimize loss\n"
                             "  train {\n    optimizer = sgd(lr=0.1)\n  }\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f), *train = strstr(c, "int m_backward(");
    assert_non_null(train);
    const char *forward_alias = strstr(c, "(void)d; /* h's buffer as it lies: nothing to copy */");
    assert_non_null(forward_alias);
    assert_true(forward_alias < train);
    assert_lacks(train, "(void)d;");
    assert_contains(train, ", h_2, 0x1p-1 /* 0.5 */, (uint64_t)s->rng_seed, 0, (uint64_t)s->rng_offset, d);");
    assert_int_not_equal(slot_of(train, "h_2"), slot_of(train, "d"));
    assert_compiles(f);
}

/* A view's gradient is dy in the operand's shape: in the training step
 * flatten's gradient shares the buffer of the linear's input gradient
 * (dy) and copies nothing. */
static void gradient_of_a_view_shares_its_buffer(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU,
                             "model M(B) {\n  input x: f32[B, 2, 4]\n  input y: i64[B]\n  param s: f32[2, 4]\n"
                             "  param w: f32[3, 8]\n  h = x * s\n  v = flatten(h, 1)\n  z = linear(v, w)\n"
                             "  loss = cross_entropy(z, y)\n  output z\n  minimize loss\n"
                             "  train {\n    optimizer = sgd(lr=0.1)\n  }\n}\n"),
                     EXIT_OK);
    const char *train = strstr(c_text(f), "int m_backward(");
    assert_non_null(train);
    const char *grad = strstr(train, "gradient of flatten");
    assert_non_null(grad);
    const char *next = strstr(grad, "\n\n");
    assert_non_null(next);
    char block[512];
    snprintf(block, sizeof block, "%.*s", (int)(next - grad), grad);
    assert_contains(block, "'s buffer as it lies: nothing to copy */");
    assert_lacks(block, "memcpy(");
    assert_compiles(f);
}

/* A view of an input, or one that is an output, is a copy: an input's
 * buffer is the caller's, read-only; an output is written to the caller's
 * buffer. */
static void view_of_an_input_or_into_an_output_copies(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model M(B) {\n  input x: f32[B, 2, 4]\n  v = flatten(x, 1)\n  h = relu(v)\n"
                             "  y = reshape(h, -1, 4, 2)\n  output y\n}\n"),
                     EXIT_OK);
    assert_true(value_named(f, "v")->slot >= 0);
    assert_contains(c_text(f), "memcpy(v, x,");
    assert_contains(c_text(f), "memcpy(outputs->y, h,");
    assert_lacks(c_text(f), "nothing to copy");
    assert_compiles(f);
}

/* A model without temporaries has a zero arena: `arena_bytes < 0` on a
 * size_t trips gcc's -Wtype-limits (-Wextra). */
static void model_without_temporaries_compiles_warning_free(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU, "model Id() {\n  input x: f32[4]\n  output x\n}\n"), EXIT_OK);
    assert_compiles(f);
}

/* <prefix>_arena_bytes declares every dim, used or not: -Wunused-variable
 * when no buffer size depends on a dim. */
static void arena_independent_of_dims_compiles_warning_free(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model M(B) {\n  input x: f32[B, 4]\n  input c: f32[10]\n  y = relu(x)\n"
                             "  z = relu(relu(c))\n  output y, z\n}\n"),
                     EXIT_OK);
    assert_compiles(f);
}

/* A long chain a + a + ... + a is parsed iteratively but resolved
 * recursively: 100000 terms overflow the stack (SIGSEGV).  Run in a child. */
static void very_long_expression_does_not_crash(void **state)
{
    Fixture *f = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        enum { TERMS = 100000 };
        char *src = malloc(64 + 4 * TERMS);
        if (!src)
            _exit(2);
        char *p = src + sprintf(src, "model M(B) {\n  input x: f32[B]\n  y = x");
        for (int i = 0; i < TERMS; i++)
            p += sprintf(p, " + x");
        strcpy(p, "\n  output y\n}\n");
        int rc = compile(f, TARGET_TPU, src);
        _exit(rc == EXIT_OK || rc == EXIT_INPUT_ERROR ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* infer_softmax blames the input when dtype= is not a float type. */
static void softmax_with_integer_dtype_blames_the_dtype(void **state)
{
    Fixture *f = *state;
    int rc = compile(f, TARGET_TPU, "model M(B) {\n  input x: f32[B, 4]\n  y = softmax(x, 1, dtype=i32)\n  output y\n}\n");
    assert_int_equal(rc, EXIT_INPUT_ERROR);
    assert_lacks(diags(f), "needs a floating-point tensor, but this is f32[B, 4]");
    assert_contains(diags(f), "i32");
}

/* ---- fuse.c and the prepared weights ---------------------------------------- */

static const char resblock[] =
    "model Res(B) {\n  input x: f32[B, 4, 6, 6]\n  param w1: f32[4, 4, 3, 3]\n  param w2: f32[4, 4, 1, 1]\n"
    "  param g: f32[4]\n  param b: f32[4]\n  buffer m: f32[4]\n  buffer v: f32[4]\n"
    "  autocast {\n    r = conv2d(x, w2)\n"
    "    h = relu(batch_norm(conv2d(x, w1, padding=1), m, v, g, b) + r)\n    o = r * 2\n  }\n"
    "  output h\n  output o\n}\n";

static void conv_batch_norm_add_relu_is_one_call(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU, resblock), EXIT_OK);
    const char *c = c_text(f);
    /* r is read by the add and by o: its convolution stays alone */
    assert_int_equal(count(c, "amp_conv_ex_bf16(&d, x_bf16, w2_bf16, res_prepared_entry_(prepared, 0), NULL, NULL, r);"), 1);
    assert_int_equal(count(c, "amp_conv_ex_bf16(&d, x_bf16, w1_bf16, res_prepared_entry_(prepared, 1), NULL, &post, outputs->h);"), 1);
    assert_contains(c, ".bn_mean = m, .bn_var = v,");
    assert_contains(c, ".bn_weight = g, .bn_bias = b,");
    assert_contains(c, ".residual = r, .relu = 1,");
    assert_lacks(c, "amp_batch_norm_bf16(");
    assert_lacks(c, "amp_relu_bf16(");
    assert_lacks(c, "amp_add_bf16(");
    assert_int_equal(count(c, ": conv2d + batch_norm + add + relu in bf16: "), 1);
    assert_compiles(f);
}

static void add_of_two_batch_norms_joins_one_group(void **state)
{
    /* resnet's downsampling block: both operands of the add are a fused
     * conv + batch_norm; the add and relu join exactly one of the groups */
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU,
                             "model D(B) {\n  input x: f32[B, 4, 6, 6]\n  param w1: f32[4, 4, 3, 3]\n"
                             "  param w2: f32[4, 4, 1, 1]\n  buffer m: f32[4]\n  buffer v: f32[4]\n"
                             "  autocast {\n    a = batch_norm(conv2d(x, w1, padding=1), m, v)\n"
                             "    i = batch_norm(conv2d(x, w2), m, v)\n    h = relu(a + i)\n  }\n  output h\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    assert_int_equal(count(c, "&post"), 2);
    assert_int_equal(count(c, ".relu = 1,"), 1);
    assert_int_equal(count(c, ".residual = NULL, .relu = 0,"), 1);
    assert_int_equal(count(c, ": conv2d + batch_norm + add + relu in bf16: "), 1);
    assert_int_equal(count(c, ": conv2d + batch_norm in bf16: "), 1);
    assert_compiles(f);
}

static void no_fuse_keeps_one_call_per_op(void **state)
{
    Fixture *f = *state;
    f->opts.no_fuse = true;
    assert_int_equal(compile(f, TARGET_CPU, resblock), EXIT_OK);
    const char *c = c_text(f);
    assert_lacks(c, "&post");
    assert_lacks(c, "fused into");
    assert_int_equal(count(c, "amp_batch_norm_bf16("), 1);
    assert_int_equal(count(c, "amp_add_bf16("), 1);
    assert_int_equal(count(c, "amp_relu_bf16("), 1);
}

static void batch_norm_in_f32_is_not_fused(void **state)
{
    /* on tpu batch_norm is on the fp32 list: a cast separates it from the
     * bf16 convolution, and the two dtypes cannot share one call */
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU, resblock), EXIT_OK);
    const char *c = c_text(f);
    assert_lacks(c, "&post");
    assert_int_equal(count(c, "amp_batch_norm_f32("), 1);
}

static void training_step_keeps_what_the_backward_reads(void **state)
{
    /* the backward reads the convolution's result (batch_norm's gradient)
     * and the relu's: the training step's conv -> batch_norm call keeps the
     * convolution's result too (post.raw; the add is f32 here: x is), the
     * inference forward fuses all four */
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_CPU,
                             "model T(B) {\n  input x: f32[B, 2, 4, 4]\n  input y: i64[B]\n  param w: f32[2, 2, 3, 3]\n"
                             "  param g: f32[2]\n  param b: f32[2]\n  buffer m: f32[2]\n  buffer v: f32[2]\n"
                             "  autocast {\n    h = relu(batch_norm(conv2d(x, w, padding=1), m, v, g, b) + x)\n"
                             "    loss = cross_entropy(flatten(h, 1), y)\n  }\n"
                             "  output h\n  minimize loss\n  train {\n    optimizer = sgd(lr=0.1)\n  }\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    const char *train = strstr(c, "int t_backward(");
    assert_non_null(train);
    assert_int_equal(count(train, "&post"), 1);
    assert_lacks(train, "amp_conv_bf16(");
    assert_lacks(train, "amp_batch_norm_bf16(");
    assert_int_equal(count(train, ".raw = t"), 1);
    assert_int_equal(count(c, "&post"), 2);
}

static void prepared_forward_reads_the_casts_once(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_TPU,
                             "model Tied(B) {\n  input x: f32[B, 8]\n  param w: f32[8, 8]\n"
                             "  autocast {\n    h = relu(matmul(x, w))\n    o = matmul(h, w)\n  }\n"
                             "  output o\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    const char *h = f->out.h_file.data;
    assert_contains(h, "size_t tied_prepared_bytes(void);");
    assert_contains(h, "int tied_prepare(const tied_params *params, void *prepared, size_t prepared_bytes);");
    assert_contains(h, "int tied_forward_prepared(const void *prepared, const tied_params *params,");
    /* prepare casts w once; the forward reads it from the block, or casts it itself without one */
    assert_int_equal(count(c, "amp_cast_f32_bf16((size_t)(64), params->w, (amp_bf16 *)(base + at));"), 1);
    assert_contains(c, "const amp_bf16 *w_bf16 = tied_prepared_entry_(prepared, 0);");
    assert_contains(c, "if (!w_bf16) {");
    assert_contains(c, "return tied_forward_prepared(NULL, params, inputs, outputs, dims, arena, arena_bytes);");
    assert_contains(c, "return AMP_ERR_BAD_PREPARED;");
    assert_compiles(f);
}

/* A linear's weights are packed by <prefix>_prepare (linear_ex): once
 * for two linears of one dtype reading them, once more for one of
 * another dtype; the forward casts them only without a prepared block. */
static void prepared_forward_packs_linear_weights_once(void **state)
{
    Fixture *f = *state;
    assert_int_equal(compile(f, TARGET_GPU,
                             "model P(B) {\n  input x: f32[B, 8]\n  param w: f32[8, 8]\n  param b: f32[8]\n"
                             "  autocast {\n    h = relu(linear(x, w, b))\n    o = linear(h, w)\n"
                             "    autocast(enabled=false) { k = linear(x, w) }\n  }\n"
                             "  output o, k\n}\n"),
                     EXIT_OK);
    const char *c = c_text(f);
    assert_int_equal(count(c, "amp_linear_pack_weights_f16(8, 8, AMP_F32, params->w, base + at);"), 1);
    assert_int_equal(count(c, "amp_linear_pack_weights_f32(8, 8, AMP_F32, params->w, base + at);"), 1);
    assert_int_equal(count(c, "amp_linear_pack_weights_"), 2);
    assert_contains(c, "if (!prepared) /* else the kernel reads the weights p_prepare packed */\n"
                       "        amp_cast_f32_f16((size_t)(64), w, w_f16);");
    assert_contains(c, "amp_linear_ex_f16(B, 8, 8, x_f16, w_f16, p_prepared_entry_(prepared, 0), b_f16, 1, h);");
    assert_contains(c, "amp_linear_ex_f16(B, 8, 8, h, w_f16, p_prepared_entry_(prepared, 0), NULL, 0, outputs->o);");
    assert_contains(c, "amp_linear_ex_f32(B, 8, 8, x, w, p_prepared_entry_(prepared, 1), NULL, 0, outputs->k);");
    assert_compiles(f);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(parse_error_exits_1),
        T(empty_source_has_no_model),
        T(resolve_error_exits_1),
        T(typecheck_error_exits_1),
        T(policy_for_another_target_exits_1),
        T(missing_policy_file_exits_3),
        T(autocast_error_exits_1),
        T(f16_region_is_allowed_on_cpu),
        T(lower_error_exits_1),
        T(emit_error_exits_1),
        T(bad_prefix_exits_1),
        T(several_errors_of_one_pass_are_all_reported),
        T(warnings_do_not_fail_the_build),
        T(mlp_on_tpu_runs_linear_in_bf16_and_log_softmax_in_f32),
        T(mlp_on_gpu_runs_linear_in_f16_and_log_softmax_in_f32),
        T(mlp_on_cpu_runs_log_softmax_in_its_bf16_input),
        T(no_autocast_means_no_casts),
        T(disabled_region_inside_autocast_follows_inputs),
        T(explicit_dtype_is_not_autocast),
        T(linear_relu_fuses_only_a_sole_reader),
        T(parameter_used_twice_is_cast_once),
        T(same_parameter_in_two_dtypes_is_cast_twice),
        T(output_is_deterministic),
        T(provenance_names_target_and_policy),
        T(emitted_mlp_compiles_warning_free_on_every_target),
        T(emitted_matmul_and_broadcast_compile_warning_free),
        T(typecheck_accepts_mixed_dtypes_that_autocast_unifies),
        T(dim_named_like_a_c_keyword_is_refused),
        T(tensor_named_slot16_does_not_clash_with_arena_slots),
        T(view_of_a_temporary_shares_its_buffer),
        T(view_of_an_input_or_into_an_output_copies),
        T(dropout_outside_the_training_step_shares_its_buffer),
        T(gradient_of_a_view_shares_its_buffer),
        T(model_without_temporaries_compiles_warning_free),
        T(arena_independent_of_dims_compiles_warning_free),
        T(very_long_expression_does_not_crash),
        T(softmax_with_integer_dtype_blames_the_dtype),
        T(conv_batch_norm_add_relu_is_one_call),
        T(add_of_two_batch_norms_joins_one_group),
        T(no_fuse_keeps_one_call_per_op),
        T(batch_norm_in_f32_is_not_fused),
        T(training_step_keeps_what_the_backward_reads),
        T(prepared_forward_reads_the_casts_once),
        T(prepared_forward_packs_linear_weights_once),
    };
#undef T
    return cmocka_run_group_tests_name("pipeline", tests, NULL, NULL);
}
