/*
 * test_policy.c - autocast policy files (src/policy.c, policies/).
 *
 * Two halves: parse_policy on small texts, good and bad, with the error
 * text checked in full; and the three built-in policies, row by row against
 * the PyTorch lists (/work/shared/autocast-facts.md: the PyTorch/XLA seed
 * lists plus later torch_xla additions for tpu, PyTorch 2.x CUDA for gpu,
 * PyTorch 2.x CPU for cpu).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ampc.h"

typedef struct Fixture {
    Options opts;
    Ctx *c;
    FILE *out;
    char *text;
    size_t len;
    Policy pol;
    char tmp[64];
} Fixture;

static int setup(void **state)
{
    Fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->out = open_memstream(&f->text, &f->len);
    assert_non_null(f->out);
    f->c = ctx_new(&f->opts, f->out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    if (f->tmp[0])
        unlink(f->tmp);
    ctx_free(f->c);
    fclose(f->out);
    free(f->text);
    free(f);
    return 0;
}

static const char *diags(Fixture *f)
{
    fflush(f->out);
    return f->text ? f->text : "";
}

static bool parse(Fixture *f, const char *text)
{
    SourceFile *s = source_from_text(f->c, "p.policy", text, strlen(text));
    return parse_policy(f->c, s, &f->pol);
}

static void assert_row(const Policy *pol, const char *op, PolicyClass cls)
{
    const PolicyRow *r = policy_find(pol, op);
    if (!r) {
        print_error("%s policy: no row for '%s' (want %s)\n", pol->target, op, policy_class_name(cls));
        fail();
    }
    if (r->cls != cls) {
        print_error("%s policy: '%s' is %s, want %s\n", pol->target, op, policy_class_name(r->cls),
                    policy_class_name(cls));
        fail();
    }
}

static void assert_no_row(const Policy *pol, const char *op)
{
    const PolicyRow *r = policy_find(pol, op);
    if (r) {
        print_error("%s policy: '%s' should follow its inputs, but is %s\n", pol->target, op,
                    policy_class_name(r->cls));
        fail();
    }
}

/* ---- parse_policy: good texts ------------------------------------------ */

static void minimal_policy_parses(void **state)
{
    Fixture *f = *state;
    assert_true(parse(f, "target gpu\nlow f16\n"));
    assert_string_equal(diags(f), "");
    assert_string_equal(f->pol.target, "gpu");
    assert_int_equal(f->pol.low, DT_F16);
    assert_int_equal(f->pol.allowed, 1u << DT_F16); /* the low dtype is always allowed */
    assert_int_equal(f->pol.rows->len, 0);
}

static void rows_keep_class_and_source(void **state)
{
    Fixture *f = *state;
    assert_true(parse(f, "# a comment line\n"
                         "target  tpu   # trailing comment\n"
                         "low     bf16\n"
                         "allow   bf16 f16\n"
                         "\n"
                         "linear  lower_precision_fp   seed: the guide's list\n"
                         "softmax\tfp32\n"
                         "sum     fp32_set_opt_dtype   CUDA list   \n"
                         "norm    fp32_append_dtype    CUDA\n"
                         "cat     promote              widest\n"
                         "bce     banned               no\n"));
    assert_string_equal(diags(f), "");
    assert_int_equal(f->pol.allowed, (1u << DT_BF16) | (1u << DT_F16));
    assert_int_equal(f->pol.rows->len, 6);
    const PolicyRow *r = policy_find(&f->pol, "linear");
    assert_non_null(r);
    assert_int_equal(r->cls, POL_LOWER);
    assert_string_equal(r->source, "seed: the guide's list");
    r = policy_find(&f->pol, "softmax");
    assert_non_null(r);
    assert_int_equal(r->cls, POL_FP32);
    assert_string_equal(r->source, "user policy"); /* no source given */
    r = policy_find(&f->pol, "sum");
    assert_non_null(r);
    assert_string_equal(r->source, "CUDA list"); /* trailing blanks trimmed */
    assert_row(&f->pol, "sum", POL_FP32_SET_OPT_DTYPE);
    assert_row(&f->pol, "norm", POL_FP32_APPEND_DTYPE);
    assert_row(&f->pol, "cat", POL_PROMOTE);
    assert_row(&f->pol, "bce", POL_BANNED);
    assert_null(policy_find(&f->pol, "relu"));
    assert_null(policy_find(&f->pol, "line")); /* a prefix is not a match */
}

static void class_names_round_trip(void **state)
{
    (void)state;
    assert_string_equal(policy_class_name(POL_LOWER), "lower_precision_fp");
    assert_string_equal(policy_class_name(POL_FP32), "fp32");
    assert_string_equal(policy_class_name(POL_FP32_SET_OPT_DTYPE), "fp32_set_opt_dtype");
    assert_string_equal(policy_class_name(POL_FP32_APPEND_DTYPE), "fp32_append_dtype");
    assert_string_equal(policy_class_name(POL_PROMOTE), "promote");
    assert_string_equal(policy_class_name(POL_BANNED), "banned");
    assert_string_equal(policy_class_name(POL_NONE), "none");
}

static void targets_by_name(void **state)
{
    (void)state;
    Target t = TARGET_COUNT;
    assert_true(target_from_name("tpu", &t));
    assert_int_equal(t, TARGET_TPU);
    assert_true(target_from_name("gpu", &t));
    assert_int_equal(t, TARGET_GPU);
    assert_true(target_from_name("cpu", &t));
    assert_int_equal(t, TARGET_CPU);
    assert_false(target_from_name("TPU", &t));
    assert_false(target_from_name("xla", &t));
    assert_false(target_from_name("", &t));
    assert_string_equal(target_name(TARGET_GPU), "gpu");
}

/* ---- parse_policy: bad texts --------------------------------------------- */

static void unknown_class_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target tpu\nlow bf16\nrelu sometimes_fp  src\n"));
    assert_string_equal(diags(f),
        "p.policy:3:1: error: policy row for 'relu' needs a class: lower_precision_fp, fp32, fp32_set_opt_dtype, "
        "fp32_append_dtype, promote or banned\n"
        "    3 | relu sometimes_fp  src\n"
        "      | ^~~~~~~~~~~~~~~~~~~~~~\n");
    assert_null(policy_find(&f->pol, "relu"));
}

static void row_without_class_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target tpu\nlow bf16\nrelu\n"));
    assert_non_null(strstr(diags(f), "p.policy:3:1: error: policy row for 'relu' needs a class: "));
    assert_int_equal(f->c->nerrors, 1);
}

static void duplicate_op_is_an_error_on_the_second_row(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target tpu\nlow bf16\nrelu fp32\nlinear fp32\nrelu lower_precision_fp\n"));
    assert_string_equal(diags(f), "p.policy:5:1: error: op 'relu' has two rows in this policy\n"
                                  "    5 | relu lower_precision_fp\n"
                                  "      | ^~~~~~~~~~~~~~~~~~~~~~~\n");
    assert_row(&f->pol, "relu", POL_FP32); /* the first row stays */
}

static void missing_target_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "low bf16\nrelu fp32\n"));
    assert_string_equal(diags(f), "p.policy:1:1: error: the policy does not say its target ('target tpu|gpu|cpu')\n"
                                  "    1 | low bf16\n"
                                  "      | ^\n");
}

static void missing_low_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target cpu\n"));
    assert_string_equal(diags(f), "p.policy:1:1: error: the policy does not say its low dtype ('low bf16|f16')\n"
                                  "    1 | target cpu\n"
                                  "      | ^\n");
}

static void empty_policy_misses_its_target_only(void **state)
{
    /* one error at a time: the missing low dtype is reported once the target is there */
    Fixture *f = *state;
    assert_false(parse(f, ""));
    assert_int_equal(f->c->nerrors, 1);
    assert_non_null(strstr(diags(f), "does not say its target"));
}

static void unknown_target_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target xla\nlow bf16\n"));
    assert_string_equal(diags(f), "p.policy:1:1: error: 'target' takes tpu, gpu or cpu\n"
                                  "    1 | target xla\n"
                                  "      | ^~~~~~~~~~\n");
}

static void target_without_a_name_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target\nlow bf16\n"));
    assert_non_null(strstr(diags(f), "p.policy:1:1: error: 'target' takes tpu, gpu or cpu\n"));
}

static void low_must_be_a_half_type(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target tpu\nlow f32\n"));
    assert_string_equal(diags(f), "p.policy:2:1: error: 'low' takes bf16 or f16, not 'f32'\n"
                                  "    2 | low f32\n"
                                  "      | ^~~~~~~\n");
}

static void low_without_a_dtype_is_an_error(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target tpu\nlow\n"));
    assert_string_equal(diags(f), "p.policy:2:1: error: 'low' needs a dtype (bf16 or f16)\n"
                                  "    2 | low\n"
                                  "      | ^~~\n");
}

static void allow_must_be_half_types(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target gpu\nlow f16\nallow f16 float16\n"));
    assert_string_equal(diags(f), "p.policy:3:1: error: 'allow' takes bf16 or f16, not 'float16'\n"
                                  "    3 | allow f16 float16\n"
                                  "      | ^~~~~~~~~~~~~~~~~\n");
}

static void several_errors_are_all_reported(void **state)
{
    Fixture *f = *state;
    assert_false(parse(f, "target tpu\nlow f64\nrelu maybe\nrelu fp32\nrelu fp32\n"));
    assert_int_equal(f->c->nerrors, 3);
    const char *d = diags(f);
    assert_non_null(strstr(d, "p.policy:2:1: error: 'low' takes bf16 or f16, not 'f64'"));
    assert_non_null(strstr(d, "p.policy:3:1: error: policy row for 'relu' needs a class"));
    assert_non_null(strstr(d, "p.policy:5:1: error: op 'relu' has two rows in this policy"));
}

/* A policy saved with CRLF line endings: next_word splits on ' ' and '\t'
 * only, so "tpu\r" is not a target and "bf16\r" not a dtype ("'low' takes
 * bf16 or f16, not 'bf16'", with the \r invisible). */
static void crlf_policy_parses(void **state)
{
    Fixture *f = *state;
    assert_true(parse(f, "target tpu\r\nlow bf16\r\nrelu fp32\r\nlinear lower_precision_fp  seed\r\n"));
    assert_string_equal(diags(f), "");
    assert_row(&f->pol, "relu", POL_FP32);
    assert_string_equal(policy_find(&f->pol, "linear")->source, "seed");
}

/* ---- load_policy ---------------------------------------------------------- */

static void write_policy_file(Fixture *f, const char *text)
{
    strcpy(f->tmp, "/tmp/ampc-test-XXXXXX.policy");
    int fd = mkstemps(f->tmp, 7);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    f->opts.policy_path = f->tmp;
}

static void user_policy_file_is_loaded(void **state)
{
    Fixture *f = *state;
    write_policy_file(f, "target gpu\nlow f16\nrelu lower_precision_fp mine\n");
    f->opts.target = TARGET_GPU;
    assert_true(load_policy(f->c));
    assert_string_equal(diags(f), "");
    assert_row(f->c->policy, "relu", POL_LOWER);
    assert_string_equal(policy_find(f->c->policy, "relu")->source, "mine");
    assert_null(policy_find(f->c->policy, "linear")); /* replaces the built-in one, does not extend it */
}

static void user_policy_for_another_target_is_an_error(void **state)
{
    Fixture *f = *state;
    write_policy_file(f, "target gpu\nlow f16\n");
    f->opts.target = TARGET_TPU;
    assert_false(load_policy(f->c));
    char *want = NULL;
    assert_true(asprintf(&want, "ampc: error: the policy %s is for target 'gpu', but the target is 'tpu'\n", f->tmp) > 0);
    assert_string_equal(diags(f), want);
    free(want);
    assert_null(f->c->policy);
}

static void missing_policy_file_is_an_io_error(void **state)
{
    Fixture *f = *state;
    f->opts.policy_path = "/nonexistent/dir/x.policy";
    assert_false(load_policy(f->c));
    assert_true(f->c->io_error);
    assert_string_equal(diags(f), "ampc: error: cannot open /nonexistent/dir/x.policy: No such file or directory\n");
}

static void errors_in_a_policy_file_name_the_file(void **state)
{
    Fixture *f = *state;
    write_policy_file(f, "target tpu\nlow bf16\nrelu fp33\n");
    f->opts.target = TARGET_TPU;
    assert_false(load_policy(f->c));
    char *want = NULL;
    assert_true(asprintf(&want, "%s:3:1: error: policy row for 'relu' needs a class", f->tmp) > 0);
    assert_non_null(strstr(diags(f), want));
    free(want);
}

/* ---- the built-in policies --------------------------------------------------- */

static const Policy *builtin(Fixture *f, Target t)
{
    f->opts.target = t;
    assert_true(load_policy(f->c));
    assert_string_equal(diags(f), "");
    assert_non_null(f->c->policy);
    assert_string_equal(f->c->policy->target, target_name(t));
    return f->c->policy;
}

/* Every op in `ops` has class `cls`; returns how many. */
static int assert_rows(const Policy *pol, const char *const *ops, PolicyClass cls)
{
    int n = 0;
    for (; ops[n]; n++)
        assert_row(pol, ops[n], cls);
    return n;
}

static int count_class(const Policy *pol, PolicyClass cls)
{
    int n = 0;
    for (int i = 0; i < pol->rows->len; i++)
        n += ((PolicyRow *)VEC_AT(pol->rows, i))->cls == cls;
    return n;
}

static void tpu_policy_named_rows(void **state)
{
    Fixture *f = *state;
    const Policy *p = builtin(f, TARGET_TPU);
    assert_int_equal(p->low, DT_BF16);
    assert_int_equal(p->allowed, 1u << DT_BF16); /* TPU autocast is bf16 only */
    assert_row(p, "linear", POL_LOWER);
    assert_row(p, "relu", POL_LOWER);
    assert_row(p, "max_pool2d", POL_LOWER);
    assert_row(p, "log_softmax", POL_FP32);
    assert_row(p, "nll_loss", POL_FP32);
    assert_row(p, "softmax", POL_FP32);
    /* softmax came later than the seed lists, and its row says so */
    const char *src = policy_find(p, "softmax")->source;
    assert_non_null(strstr(src, "torch_xla"));
    assert_non_null(strstr(src, "later"));
    assert_non_null(strstr(policy_find(p, "log_softmax")->source, "seed"));
    assert_null(strstr(policy_find(p, "log_softmax")->source, "later"));
}

static void tpu_policy_is_exactly_the_xla_lists(void **state)
{
    static const char *const seed_bf16[] = {
        "__matmul__", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "conv1d", "conv2d", "conv3d",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "linear", "matmul", "mm", "relu", "prelu",
        "max_pool2d", NULL};
    static const char *const later_bf16[] = {"einsum", "conv_tbc", NULL};
    static const char *const seed_fp32[] = {
        "batch_norm", "log_softmax", "binary_cross_entropy", "binary_cross_entropy_with_logits", "prod", "cdist",
        "trace", "cholesky", "inverse", "reflection_pad", "replication_pad", "mse_loss", "cosine_embedding_loss",
        "nll_loss", "multilabel_margin_loss", "qr", "svd", "triangular_solve", "linalg_svd", "linalg_inv_ex", NULL};
    static const char *const later_fp32[] = {
        "softmax", "cross_entropy_loss", "pow", "cholesky_inverse", "cholesky_solve", "hinge_embedding_loss",
        "smooth_l1_loss", "l1_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "ctc_loss", "kl_div", NULL};
    static const char *const widest[] = {"stack", "cat", "index_copy", NULL};
    Fixture *f = *state;
    const Policy *p = builtin(f, TARGET_TPU);
    int bf16 = assert_rows(p, seed_bf16, POL_LOWER) + assert_rows(p, later_bf16, POL_LOWER);
    int fp32 = assert_rows(p, seed_fp32, POL_FP32) + assert_rows(p, later_fp32, POL_FP32);
    int prom = assert_rows(p, widest, POL_PROMOTE);
    for (int i = 0; later_bf16[i]; i++)
        assert_non_null(strstr(policy_find(p, later_bf16[i])->source, "torch_xla"));
    for (int i = 0; later_fp32[i]; i++)
        assert_non_null(strstr(policy_find(p, later_fp32[i])->source, "torch_xla"));
    for (int i = 0; seed_fp32[i]; i++)
        assert_non_null(strstr(policy_find(p, seed_fp32[i])->source, "seed"));
    /* and nothing else: XLA has no set_opt_dtype, append_dtype or banned lists */
    assert_int_equal(count_class(p, POL_LOWER), bf16);
    assert_int_equal(count_class(p, POL_FP32), fp32);
    assert_int_equal(count_class(p, POL_PROMOTE), prom);
    assert_int_equal(p->rows->len, bf16 + fp32 + prom);
}

static void gpu_policy_named_rows(void **state)
{
    Fixture *f = *state;
    const Policy *p = builtin(f, TARGET_GPU);
    assert_int_equal(p->low, DT_F16);
    assert_int_equal(p->allowed, (1u << DT_F16) | (1u << DT_BF16));
    assert_no_row(p, "relu");       /* follows its input on CUDA, unlike on TPU */
    assert_no_row(p, "max_pool2d");
    assert_row(p, "log_softmax", POL_FP32_SET_OPT_DTYPE);
    assert_row(p, "softmax", POL_FP32_SET_OPT_DTYPE);
    assert_row(p, "binary_cross_entropy", POL_BANNED);
    assert_row(p, "linear", POL_LOWER);
    assert_row(p, "nll_loss", POL_FP32);
}

static void gpu_policy_is_exactly_the_cuda_lists(void **state)
{
    static const char *const lower[] = {
        "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
        "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linear", "addbmm",
        "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
        "rnn_relu_cell", "scaled_dot_product_attention",
        /* the layer ops: _cudnn_rnn, which they run, is autocast to fp16 (AutocastRNN.cpp) */
        "lstm", "gru", "rnn_tanh", "rnn_relu", NULL};
    static const char *const fp32[] = {
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
        "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "frobenius_norm", "nuclear_norm",
        "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
        "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
        "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
        "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_linear1d",
        "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d", NULL};
    static const char *const set_opt[] = {"prod", "softmax", "log_softmax", "cumprod", "cumsum",
                                          "linalg_vector_norm", "linalg_matrix_norm", "sum", NULL};
    static const char *const append[] = {"norm", NULL};
    static const char *const promote[] = {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot",
                                          "grid_sampler", "index_put", "tensordot", "scatter_add", NULL};
    static const char *const banned[] = {"binary_cross_entropy", NULL};
    Fixture *f = *state;
    const Policy *p = builtin(f, TARGET_GPU);
    int n = 0, k;
    k = assert_rows(p, lower, POL_LOWER);
    assert_int_equal(count_class(p, POL_LOWER), k);
    n += k;
    k = assert_rows(p, fp32, POL_FP32);
    assert_int_equal(count_class(p, POL_FP32), k);
    n += k;
    k = assert_rows(p, set_opt, POL_FP32_SET_OPT_DTYPE);
    assert_int_equal(count_class(p, POL_FP32_SET_OPT_DTYPE), k);
    n += k;
    k = assert_rows(p, append, POL_FP32_APPEND_DTYPE);
    assert_int_equal(count_class(p, POL_FP32_APPEND_DTYPE), k);
    n += k;
    k = assert_rows(p, promote, POL_PROMOTE);
    assert_int_equal(count_class(p, POL_PROMOTE), k);
    n += k;
    k = assert_rows(p, banned, POL_BANNED);
    assert_int_equal(count_class(p, POL_BANNED), k);
    n += k;
    assert_int_equal(p->rows->len, n);
}

static void cpu_policy_named_rows(void **state)
{
    Fixture *f = *state;
    const Policy *p = builtin(f, TARGET_CPU);
    assert_int_equal(p->low, DT_BF16);
    assert_int_equal(p->allowed, (1u << DT_BF16) | (1u << DT_F16));
    assert_row(p, "linear", POL_LOWER);
    assert_row(p, "nll_loss", POL_FP32);
    assert_no_row(p, "log_softmax"); /* not in the PyTorch 2.x CPU lists */
    assert_no_row(p, "softmax");
    assert_no_row(p, "relu");
    assert_row(p, "binary_cross_entropy", POL_FP32); /* banned on CUDA only */
}

static void cpu_policy_matches_the_pytorch2_lists(void **state)
{
    static const char *const lower[] = {
        "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear",
        "matmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
        "scaled_dot_product_attention",
        /* mkldnn_rnn_layer, which lstm runs on CPU, is on the list; gru and rnn_* run their cells */
        "lstm", NULL};
    static const char *const fp32[] = {
        "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile", "nanquantile", "stft",
        "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse",
        "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d", "max_unpool2d", "max_unpool3d",
        "adaptive_avg_pool3d", "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
        "replication_pad3d", "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss",
        "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss",
        "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "ctc_loss",
        "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits", "qr", "svd", "triangular_solve",
        "linalg_svd", "linalg_inv_ex", "linalg_solve", "linalg_cholesky", "linalg_eigh", NULL};
    static const char *const promote[] = {"stack", "cat", "index_copy", NULL};
    Fixture *f = *state;
    const Policy *p = builtin(f, TARGET_CPU);
    int lo = assert_rows(p, lower, POL_LOWER);
    assert_int_equal(count_class(p, POL_LOWER), lo);
    assert_rows(p, fp32, POL_FP32);
    int pr = assert_rows(p, promote, POL_PROMOTE);
    assert_int_equal(count_class(p, POL_PROMOTE), pr);
    /* the facts name "the fft ops and the linalg decompositions" without
     * listing them all: any other fp32 row must be one of those */
    for (int i = 0; i < p->rows->len; i++) {
        const PolicyRow *r = VEC_AT(p->rows, i);
        bool listed = false;
        for (int k = 0; fp32[k]; k++)
            listed |= strcmp(fp32[k], r->op) == 0;
        if (r->cls == POL_FP32 && !listed && strncmp(r->op, "fft_", 4) != 0 && strncmp(r->op, "linalg_", 7) != 0) {
            print_error("cpu policy: unexpected fp32 row '%s'\n", r->op);
            fail();
        }
    }
    /* CPU has no set_opt_dtype, append_dtype or banned lists */
    assert_int_equal(count_class(p, POL_FP32_SET_OPT_DTYPE), 0);
    assert_int_equal(count_class(p, POL_FP32_APPEND_DTYPE), 0);
    assert_int_equal(count_class(p, POL_BANNED), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(minimal_policy_parses),
        T(rows_keep_class_and_source),
        T(class_names_round_trip),
        T(targets_by_name),
        T(unknown_class_is_an_error),
        T(row_without_class_is_an_error),
        T(duplicate_op_is_an_error_on_the_second_row),
        T(missing_target_is_an_error),
        T(missing_low_is_an_error),
        T(empty_policy_misses_its_target_only),
        T(unknown_target_is_an_error),
        T(target_without_a_name_is_an_error),
        T(low_must_be_a_half_type),
        T(low_without_a_dtype_is_an_error),
        T(allow_must_be_half_types),
        T(several_errors_are_all_reported),
        T(crlf_policy_parses),
        T(user_policy_file_is_loaded),
        T(user_policy_for_another_target_is_an_error),
        T(missing_policy_file_is_an_io_error),
        T(errors_in_a_policy_file_name_the_file),
        T(tpu_policy_named_rows),
        T(tpu_policy_is_exactly_the_xla_lists),
        T(gpu_policy_named_rows),
        T(gpu_policy_is_exactly_the_cuda_lists),
        T(cpu_policy_named_rows),
        T(cpu_policy_matches_the_pytorch2_lists),
    };
#undef T
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
