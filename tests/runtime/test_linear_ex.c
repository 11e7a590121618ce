/*
 * test_linear_ex.c - amp_linear_ex_T (amprt.h): a linear with its weights
 * packed once (linear_packed_bytes_T, linear_pack_weights_T), and the
 * relu of linear_relu.
 *
 * Its specification is the unpacked kernel of the same kernel set:
 *     linear_T(M, N, K, x, w_T, bias, y)        relu == 0
 *     linear_relu_T(M, N, K, x, w_T, bias, y)   relu != 0
 * (w_T: w, or the packed source rounded to T as cast_f32_T rounds), so
 * every check is memcmp against that call through the same table: every
 * kernel set this CPU supports (amp_kernel_table_for), f64 (the
 * reference everywhere), f32, bf16 and f16, and the public amp_*
 * functions under whichever set AMPRT_ISA chose.  Covered: products
 * small enough for a set's one-pass path (which a packed call runs on
 * the weights' copy in T) and large ones on the blocked driver; weights
 * small enough to be kept in T beside their panels and not; N a multiple
 * of the micro-panels' width and not; K even, odd, and over one k block
 * (several blocks, a short last one); M over one row block; x packed
 * whole beside the packed weights (two column blocks, forced by
 * amp_gemm_pack_whole_policy); no input (K = 0) and no rows (M = 0);
 * with and without bias; weights unpacked, packed from T and from f32; 1
 * and 2 threads; NaN, +-inf and -0 in x and w.  Also:
 * the reference's packed_bytes is the weight matrix's size in T.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa_under_test.h"

#include "../../runtime/src/amprt_internal.h"

#define FAST_TEST_SEED 0x3d2e7a91c4b5f608ull
#include "fast_test_util.h"
#include "packed_test_util.h"

typedef struct {
    const char *what;
    int64_t M, N, K;
    int big;   /* skipped on the (slow) reference paths */
    int whole; /* x packed whole (amp_gemm_pack_whole_policy 1; it needs two column blocks) */
} lcase;

static const lcase cases[] = {
    { "small, one-pass path", 5, 7, 9, 0, 0 },
    { "one row", 1, 33, 64, 0, 0 },
    { "N a multiple of 32", 12, 64, 48, 0, 0 },
    { "odd K, N past a panel", 13, 37, 101, 0, 0 },
    { "K over one k block", 20, 40, 1100, 0, 0 },
    { "K = 0 (the bias alone)", 4, 9, 0, 0, 0 },
    { "M = 0", 0, 9, 16, 0, 0 },
    { "blocked, threaded", 200, 96, 384, 1, 0 },
    { "M over one row block", 400, 40, 64, 1, 0 },
    { "x packed whole, two column blocks", 40, 600, 70, 1, 1 },
};

static void check_equal(const amp_kernel_table *k, amp_dtype t, const lcase *c, const char *wmode, int relu, int bias,
                        int threads, const void *got, const void *want)
{
    const size_t es = amp_dtype_size(t), ny = (size_t)(c->M * c->N);
    if (ny == 0 || memcmp(got, want, ny * es) == 0)
        return;
    for (size_t i = 0; i < ny; i++)
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0)
            fail_msg("%s %s %s (M %lld, N %lld, K %lld): weights %s, relu %d, bias %d, %d threads: element %zu: "
                     "got %.9g, linear%s %.9g",
                     k->isa, amp_dtype_name(t), c->what, (long long)c->M, (long long)c->N, (long long)c->K, wmode,
                     relu, bias, threads, i, (double)amp_load_as_f32(t, got, i), relu ? "_relu" : "",
                     (double)amp_load_as_f32(t, want, i));
}

/* Whether (k, t) runs the reference kernels (slow): fewer cases there. */
static int reference_path(const amp_kernel_table *k, amp_dtype t)
{
    return t == AMP_F64 || strcmp(k->isa, "ref") == 0 || (k == &public_table && strcmp(amp_isa_name(), "ref") == 0);
}

/* Special values in x and w: NaN, +-inf, -0 (the unpacked kernel says
 * what comes of them). */
static void poison(amp_dtype t, void *p, size_t n)
{
    static const float specials[] = { NAN, INFINITY, -INFINITY, -0.0f };
    for (size_t i = 0; i < 4 && i * 7 < n; i++)
        amp_store_from_f32(t, p, i * 7, specials[i]);
}

/* Every variant of case c for table k and dtype t. */
static void run_case(const amp_kernel_table *k, amp_dtype t, const lcase *c, int specials)
{
    const size_t es = amp_dtype_size(t), nw = (size_t)(c->N * c->K), ny = (size_t)(c->M * c->N);
    void *x = random_buf(t, (size_t)(c->M * c->K)), *bias = random_buf(t, (size_t)c->N);
    float *w32 = random_buf(AMP_F32, nw);
    if (specials) {
        poison(t, x, (size_t)(c->M * c->K));
        poison(AMP_F32, w32, nw);
    }
    void *w = cast_from_f32(k, t, w32, nw);
    void *want = malloc(ny * es + 1), *got = malloc(ny * es + 1);
    assert_non_null(want);
    assert_non_null(got);
    const size_t bytes = KCALLR(k, t, linear_packed_bytes, c->N, c->K);
    void *packed_t = alloc_packed(bytes), *packed_f32 = alloc_packed(bytes);
    KCALL(k, t, linear_pack_weights, c->N, c->K, t, w, packed_t);
    KCALL(k, t, linear_pack_weights, c->N, c->K, AMP_F32, w32, packed_f32);
    amp_gemm_pack_whole_policy(c->whole);
    for (int threads = 1; threads <= 2; threads++) {
        amp_set_threads(threads);
        for (int relu = 0; relu <= 1; relu++)
            for (int with_bias = 0; with_bias <= 1; with_bias++) {
                const void *b = with_bias ? bias : NULL;
                if (relu)
                    KCALL(k, t, linear_relu, c->M, c->N, c->K, x, w, b, want);
                else
                    KCALL(k, t, linear, c->M, c->N, c->K, x, w, b, want);
                static const char *modes[] = { "unpacked", "packed from T", "packed from f32" };
                for (int m = 0; m < 3; m++) {
                    const void *packed = m == 0 ? NULL : m == 1 ? packed_t : packed_f32;
                    memset(got, 0x5a, ny * es + 1);
                    KCALL(k, t, linear_ex, c->M, c->N, c->K, x, m == 0 ? w : NULL, packed, b, relu, got);
                    check_equal(k, t, c, modes[m], relu, with_bias, threads, got, want);
                    assert_int_equal(((unsigned char *)got)[ny * es], 0x5a); /* nothing past y */
                }
            }
    }
    amp_set_threads(0);
    amp_gemm_pack_whole_policy(0);
    free(x);
    free(bias);
    free(w32);
    free(w);
    free(want);
    free(got);
    free(packed_t);
    free(packed_f32);
}

static const amp_dtype all_types[] = { AMP_F64, AMP_F32, AMP_BF16, AMP_F16 };

static void run_table(const amp_kernel_table *k)
{
    for (size_t ti = 0; ti < 4; ti++) {
        const amp_dtype t = all_types[ti];
        if (k == &amp_ref_kernel_table || t == AMP_F64)
            assert_true(KCALLR(k, t, linear_packed_bytes, 37, 101) == (size_t)(37 * 101) * amp_dtype_size(t));
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (cases[i].big && reference_path(k, t) && !(t == AMP_F32 && strcmp(k->isa, "ref") == 0))
                continue;
            run_case(k, t, &cases[i], 0);
        }
        run_case(k, t, &cases[3], 1);
    }
}

PACKED_TEST_MAIN(run_table)
