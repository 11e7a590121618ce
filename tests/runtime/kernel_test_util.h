/*
 * kernel_test_util.h - the scaffolding every kernel test program shares
 * (test_kernels.c, test_elementwise.c, test_conv.c, test_pool.c,
 * test_index.c, test_gemm.c, test_lapack.c, test_reduce.c, test_norm.c,
 * test_losses.c, test_train.c and, through backward_test_util.h, the
 * test_backward_*.c programs): the two kernel tables and the KCALL macros,
 * dtype-generic tensors, a fixed-seed RNG, pattern inputs and PyTorch's
 * numbers from torch_spatial.py, and the error bound.
 *
 *  - Inputs are generated, rounded into the storage dtype and read back, so
 *    the oracle sees exactly the kernel's inputs.
 *  - An output y of dtype T is correct if
 *        |y - oracle| <= u_T |oracle| + (1 + u_T) acc + floor_T
 *    with u_T T's unit roundoff (2^-53 f64, 2^-24 f32, 2^-8 bf16, 2^-11
 *    f16) for the one final rounding, acc the error of the evaluation in the
 *    compute type (each test derives it in units of u_acc(T): 2^-53 for f64,
 *    2^-24 for the others), and floor_T half T's smallest subnormal (for
 *    f64, KTU_F64_FLOOR). Oracles beyond T's range must come out infinite.
 *    The bound is evaluated in long double. A kernel that accumulates in T,
 *    or rounds an intermediate to T, misses this bound on the larger shapes.
 *  - Every kernel runs through the public table and the reference table;
 *    with the reference set active they must agree bit for bit.
 *  - Buffers are malloc'ed with exactly their element count.
 *
 * A program may define, before including this header:
 *    KTU_RNG_SEED   the xorshift64* seed (default 0x9e3779b97f4a7c15);
 *    KTU_F64_FLOOR  floor_T for f64, a long double (default 2^-1075);
 *    KTU_DTYPES     the dtypes[] list (default f64, f32, bf16, f16);
 *    KTU_REAL       the type get(), unit_roundoff(), u_acc() and
 *                   max_finite() return (default double; long double makes
 *                   oracle arithmetic on get() values long double).
 *
 * Header-only (static functions, unused ones allowed): each test program is
 * one translation unit, and the Makefile builds each tests/runtime/test_X.c
 * on its own.
 */
#ifndef KERNEL_TEST_UTIL_H
#define KERNEL_TEST_UTIL_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fdopen, fork */
#endif

#include <float.h>
#include <math.h>
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

#include "../../runtime/src/amprt_internal.h"

#ifndef KTU_RNG_SEED
#define KTU_RNG_SEED 0x9e3779b97f4a7c15ull
#endif
#ifndef KTU_F64_FLOOR
#define KTU_F64_FLOOR 0x1p-1075L
#endif
#ifndef KTU_DTYPES
#define KTU_DTYPES AMP_F64, AMP_F32, AMP_BF16, AMP_F16
#endif
#ifndef KTU_REAL
#define KTU_REAL double
#endif

/* Not every program uses every helper. */
#define KTU_UNUSED __attribute__((unused))

/* ---- Kernel tables and calls ------------------------------------------- */

static const amp_kernel_table public_table KTU_UNUSED = {
    .isa = "public",
#define PUBLIC_ENTRY(kernel, T, ret, params, args) .AMP_KNAME_##T(kernel) = AMP_KNAME_##T(amp_##kernel),
    AMP_FOR_EACH_KERNEL(PUBLIC_ENTRY)
#undef PUBLIC_ENTRY
};

static const amp_kernel_table *const tables[] KTU_UNUSED = { &public_table, &amp_ref_kernel_table };
static const amp_dtype dtypes[] KTU_UNUSED = { KTU_DTYPES };
#define NTABLES 2
#define NDTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

#include "kernel_call.h"

/* ---- Tensors ---------------------------------------------------------- */

typedef struct {
    amp_dtype t;
    size_t n;
    void *data; /* exactly n elements (one byte when n == 0) */
} tensor;

static KTU_UNUSED tensor tensor_new(amp_dtype t, size_t n)
{
    tensor x;
    x.t = t;
    x.n = n;
    x.data = malloc(n ? n * amp_dtype_size(t) : 1);
    assert_non_null(x.data);
    return x;
}

static KTU_UNUSED tensor tensor_copy(const tensor *src)
{
    tensor x = tensor_new(src->t, src->n);
    memcpy(x.data, src->data, src->n * amp_dtype_size(src->t));
    return x;
}

static KTU_UNUSED void tensor_free(tensor *x)
{
    free(x->data);
    x->data = NULL;
}

/* Element i, exactly: f64 elements are read and written as the doubles they
 * are, the others through the public f32 accessors (exact for
 * bf16/f16/f32). */
static KTU_UNUSED KTU_REAL get(const tensor *x, size_t i)
{
    assert_true(i < x->n);
    if (x->t == AMP_F64)
        return ((const double *)x->data)[i];
    return amp_load_as_f32(x->t, x->data, i);
}

static KTU_UNUSED void set(tensor *x, size_t i, double v)
{
    assert_true(i < x->n);
    if (x->t == AMP_F64)
        ((double *)x->data)[i] = v;
    else
        amp_store_from_f32(x->t, x->data, i, (float)v);
}

/* xorshift64*, fixed seed: failures reproduce. */
static uint64_t rng_state = KTU_RNG_SEED;

static KTU_UNUSED uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static KTU_UNUSED double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next() >> 11) * 0x1p-53;
}

static KTU_UNUSED tensor tensor_random(amp_dtype t, size_t n, double lo, double hi)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, uniform(lo, hi));
    return x;
}

static KTU_UNUSED tensor tensor_of(amp_dtype t, size_t n, const double *values)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, values[i]);
    return x;
}

/* Small multiples of 1/8, exact in every dtype, and the same formula as
 * torch_spatial.py's inputs(), so that PyTorch sees the same tensors. */
static KTU_UNUSED double pattern_value(size_t i, int salt)
{
    return (double)((int)((i * 7919u + (size_t)salt * 131u) % 23u) - 11) / 8.0;
}

static KTU_UNUSED tensor tensor_pattern(amp_dtype t, size_t n, int salt)
{
    tensor x = tensor_new(t, n);
    for (size_t i = 0; i < n; i++)
        set(&x, i, pattern_value(i, salt));
    return x;
}

/* ---- PyTorch ------------------------------------------------------------ */

/* PyTorch's values for a case come from `/usr/bin/python3 torch_spatial.py
 * --serve` (the script beside this file), started once per test program
 * and kept running: importing torch takes a second or two, and a program
 * asks for dozens of cases.  The server reads one case per line and
 * answers with its values, then "end". */
static struct {
    int state; /* 0: not started, 1: running, -1: unavailable (skip) */
    FILE *to, *from;
} ktu_torch;

/* Starts the server; 0, or -1 after print_message when python3, the
 * script or torch is missing. */
static KTU_UNUSED int torch_server_start(void)
{
    char dir[1024], script[2048], first[64];
    const char *slash = strrchr(__FILE__, '/');
    size_t len = slash ? (size_t)(slash - __FILE__) : 1;
    int to[2], from[2];
    pid_t pid;
    snprintf(dir, sizeof dir, "%.*s", (int)len, slash ? __FILE__ : ".");
    snprintf(script, sizeof script, "%s/torch_spatial.py", dir);
    if (access(script, R_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
        print_message("SKIPPED: /usr/bin/python3 or %s missing (run from the repository root); "
                      "PyTorch cases not checked\n",
                      script);
        return -1;
    }
    if (pipe(to) != 0 || pipe(from) != 0)
        fail_msg("pipe: cannot start %s", script);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        fail_msg("fork: cannot start %s", script);
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execl("/usr/bin/python3", "python3", script, "--serve", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    ktu_torch.to = fdopen(to[1], "w");
    ktu_torch.from = fdopen(from[0], "r");
    assert_non_null(ktu_torch.to);
    assert_non_null(ktu_torch.from);
    /* A probe case: the server answers it, or exits (77: no torch). */
    fputs("conv 1 1 1 1 1 1 1 1 0 1 0\n", ktu_torch.to);
    fflush(ktu_torch.to);
    while (fscanf(ktu_torch.from, "%63s", first) == 1)
        if (strcmp(first, "end") == 0)
            return 0;
    {
        int status = 0;
        waitpid(pid, &status, 0);
        fclose(ktu_torch.to);
        fclose(ktu_torch.from);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
            print_message("SKIPPED: /usr/bin/python3 has no torch; PyTorch cases not checked\n");
            return -1;
        }
        fail_msg("%s --serve exited before answering (status %d)", script, status);
    }
    return -1;
}

/* PyTorch's f64 values for the case `args` (torch_spatial.py's OP INT...)
 * into out[0..max). Returns the count, or -1 after print_message when
 * python3, the script or torch is missing (the caller then skips). */
static KTU_UNUSED int torch_values(const char *args, double *out, int max)
{
    char word[256];
    int n = 0;
    if (ktu_torch.state == 0)
        ktu_torch.state = torch_server_start() == 0 ? 1 : -1;
    if (ktu_torch.state < 0)
        return -1;
    fprintf(ktu_torch.to, "%s\n", args);
    fflush(ktu_torch.to);
    while (fscanf(ktu_torch.from, "%255s", word) == 1) {
        if (strcmp(word, "end") == 0)
            return n;
        if (strcmp(word, "error") == 0) {
            char why[1024] = "";
            if (fgets(why, sizeof why, ktu_torch.from) == NULL)
                why[0] = '\0';
            fail_msg("PyTorch case \"%s\" failed:%s", args, why);
        }
        if (n < max)
            out[n++] = strtod(word, NULL);
    }
    fail_msg("PyTorch server ended during case \"%s\"", args);
    return -1;
}

/* ---- The error bound ---------------------------------------------------- */

#define U_F32 0x1p-24
#define U_F64 0x1p-53

static KTU_UNUSED KTU_REAL unit_roundoff(amp_dtype t)
{
    return t == AMP_F64 ? U_F64 : t == AMP_F32 ? U_F32 : t == AMP_BF16 ? 0x1p-8 : 0x1p-11;
}

/* Unit roundoff of the compute type: f64 for f64, f32 otherwise. */
static KTU_UNUSED KTU_REAL u_acc(amp_dtype t)
{
    return t == AMP_F64 ? U_F64 : U_F32;
}

/* long double: f64's half subnormal, 2^-1075, is not a double. */
static KTU_UNUSED long double underflow_floor(amp_dtype t)
{
    return t == AMP_F64 ? KTU_F64_FLOOR : t == AMP_F32 ? 0x1p-150L : t == AMP_BF16 ? 0x1p-134L : 0x1p-25L;
}

static KTU_UNUSED KTU_REAL max_finite(amp_dtype t)
{
    return t == AMP_F64 ? DBL_MAX : t == AMP_F32 ? 0x1.fffffep127 : t == AMP_BF16 ? 0x1.fep127 : 65504.0;
}

static KTU_UNUSED long double finite_or_zero(long double v)
{
    return isfinite(v) ? v : 0.0L;
}

/* See the file comment. */
static KTU_UNUSED int close_to(amp_dtype t, long double y, long double oracle, long double acc)
{
    long double u = unit_roundoff(t);
    if (isnan(oracle))
        return isnan(y);
    if (isinf(oracle) || fabsl(oracle) > max_finite(t) * (1.0L + 2.0L * u))
        return isinf(y) && (y > 0) == (oracle > 0);
    /* at or past half an ulp beyond the largest finite value (allowing for
     * acc), infinity is the correct rounding: 2^16 is inf in f16 */
    if (isinf(y) && (y > 0) == (oracle > 0) && fabsl(oracle) + (1.0L + u) * acc >= max_finite(t) * (1.0L + u / 2))
        return 1;
    return fabsl(y - oracle) <= u * fabsl(oracle) + (1.0L + u) * acc + underflow_floor(t);
}

static KTU_UNUSED void expect_close(const tensor *y, size_t i, long double oracle, long double acc, const char *what)
{
    double v = get(y, i);
    if (!close_to(y->t, v, oracle, acc))
        fail_msg("%s %s [%zu]: got %.17g, oracle %.17Lg, bound %.3g", what, amp_dtype_name(y->t), i, v, oracle,
                 (double)(unit_roundoff(y->t) * fabsl(oracle) + acc + underflow_floor(y->t)));
}

static KTU_UNUSED int active_is_ref(void)
{
    return strcmp(amp_isa_name(), "ref") == 0;
}

/* With the reference set active the public entry points are the reference
 * kernels and must produce the same bits. */
static KTU_UNUSED void expect_public_equals_ref(const tensor *pub, const tensor *ref)
{
    if (active_is_ref())
        assert_memory_equal(pub->data, ref->data, pub->n * amp_dtype_size(pub->t));
}

#endif /* KERNEL_TEST_UTIL_H */
