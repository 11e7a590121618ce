/*
 * avx2_rows.c - the avx2 set's kernels of a transformer's rows, for f32,
 * bf16 and f16 storage computing in f32: softmax along the last axis
 * (inner 1; log_softmax, a classifier's, stays the reference's, which a
 * small program then links alone), layer_norm (weight and bias in f32,
 * bf16 or f16), gelu and gelu_tanh; their gradients softmax_backward,
 * log_softmax_backward (last axis), layer_norm_backward, gelu_backward and
 * gelu_tanh_backward; and dropout; the same algorithms as
 * x86/avx512_rows.c, 8 lanes at a time.
 *
 * Bit for bit the reference (ref_softmax.inc, ref_norm.inc,
 * ref_unary.inc, ref_backward_unary.inc, ref_backward_norm.inc,
 * ref_random.c): the references add a row up in 16 lanes, folded in
 * halves (amp_mathf.h), which is two vectors here (elements 16i..16i+7
 * in the first, 16i+8..16i+15 in the second), added, then folded, and a
 * parameter's gradient over the rows in row order, a column per lane; exp
 * is amp_expf (amp_expf.h), erf and tanh amp_erff and amp_tanhf
 * (amp_mathf.h), whose double operations the 4-lane functions below
 * perform in the same order; every f32 operation is an intrinsic, so
 * nothing is contracted into FMA; dropout's Philox words are the
 * reference's integer operations, 8 blocks per vector.  Other layouts
 * (softmax over an inner axis, other parameter dtypes) go to the
 * reference.
 *
 * Rows (gelu's and dropout's elements, layer_norm_backward's blocks of
 * parameter columns) are split over the pool as avx2_run_chunked splits
 * (x86/avx2_store.h).  Installed by amp_isa_avx2_fill.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "amp_mathf.h"
#include "avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX2_TARGET
#define ROW_CACHE 4096

/* ---- exp, erf, tanh in double, 4 lanes ------------------------------------------ */

TARGET static inline __m256d reduce_ln2(__m256d x, __m256d *k)
{
    *k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(AMP_EXPF_INV_LN2)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* -k by its sign bit, as the scalar -k (0 - k would give +0 for k = +0) */
    const __m256d nk = _mm256_xor_pd(*k, _mm256_set1_pd(-0.0));
    const __m256d r = _mm256_fmadd_pd(nk, _mm256_set1_pd(AMP_EXPF_LN2_HI), x);
    return _mm256_fmadd_pd(nk, _mm256_set1_pd(AMP_EXPF_LN2_LO), r);
}

TARGET static inline __m256d series_to_c2(__m256d r)
{
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(AMP_EXPF_C11), r, _mm256_set1_pd(AMP_EXPF_C10));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C9));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C8));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C7));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C6));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C5));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C4));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C3));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(AMP_EXPF_C2));
    return _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
}

/* 2^k for integral k in [-1022, 1023], from k's bits */
TARGET static inline __m256d pow2(__m256d k)
{
    return _mm256_castsi256_pd(_mm256_slli_epi64(
        _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)), 52));
}

TARGET static inline __m256d sign_of(__m256d x) { return _mm256_and_pd(x, _mm256_set1_pd(-0.0)); }
TARGET static inline __m256d abs_of(__m256d x) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), x); }

/* amp_expf of 4 lanes (k in [-150, 129]: p 2^k is a normal double, exact) */
TARGET static __m128 exp4(__m128 xf)
{
    const __m256d x = _mm256_max_pd(_mm256_min_pd(_mm256_cvtps_pd(xf), _mm256_set1_pd(89.0)), _mm256_set1_pd(-104.0));
    __m256d k;
    const __m256d r = reduce_ln2(x, &k);
    const __m256d p = _mm256_fmadd_pd(series_to_c2(r), r, _mm256_set1_pd(1.0));
    return _mm256_cvtpd_ps(_mm256_mul_pd(p, pow2(k)));
}

/* amp_erff of 4 lanes, both branches, one kept per lane */
TARGET static __m128 erf4(__m128 xf)
{
    const __m256d x = _mm256_cvtps_pd(xf), a = abs_of(x), t = _mm256_mul_pd(x, x);
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(AMP_ERF_A9), t, _mm256_set1_pd(AMP_ERF_A8));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A7));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A6));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A5));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A4));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A3));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A2));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A1));
    p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(AMP_ERF_A0));
    const __m256d small = _mm256_mul_pd(x, p);
    const __m256d big = _mm256_cmp_pd(a, _mm256_set1_pd(1.0), _CMP_NLT_UQ);
    if (!_mm256_movemask_pd(big))
        return _mm256_cvtpd_ps(small);
    const __m256d u = _mm256_sub_pd(_mm256_min_pd(a, _mm256_set1_pd(AMP_ERF_B_TOP)), _mm256_set1_pd(AMP_ERF_B_CENTER));
    __m256d q = _mm256_setzero_pd();
    int first = 1;
#define HORNER(c)                                                                                 \
    if (first) {                                                                                  \
        q = _mm256_set1_pd(c);                                                                    \
        first = 0;                                                                                \
    } else                                                                                        \
        q = _mm256_fmadd_pd(q, u, _mm256_set1_pd(c));
    AMP_ERF_B_COEFFS(HORNER)
#undef HORNER
    const __m256d large = _mm256_or_pd(_mm256_sub_pd(_mm256_set1_pd(1.0), q), sign_of(x));
    return _mm256_cvtpd_ps(_mm256_blendv_pd(small, large, big));
}

/* amp_tanhf of 4 lanes (k in [0, 58]) */
TARGET static __m128 tanh4(__m128 xf)
{
    const __m256d x = _mm256_cvtps_pd(xf);
    const __m256d z = _mm256_min_pd(_mm256_add_pd(abs_of(x), abs_of(x)), _mm256_set1_pd(AMP_TANH_TOP));
    __m256d k;
    const __m256d r = reduce_ln2(z, &k);
    const __m256d q = _mm256_mul_pd(series_to_c2(r), r);
    const __m256d s = pow2(k);
    const __m256d e = _mm256_fmadd_pd(q, s, _mm256_sub_pd(s, _mm256_set1_pd(1.0)));
    const __m256d t = _mm256_div_pd(e, _mm256_add_pd(e, _mm256_set1_pd(2.0)));
    return _mm256_cvtpd_ps(_mm256_or_pd(t, sign_of(x)));
}

/* f(x) of 8 lanes by two 4-lane halves; NaN lanes keep their NaN, as the
 * scalar functions return it */
#define EIGHT(name, f4)                                                                           \
    TARGET static inline __m256 name(__m256 x)                                                    \
    {                                                                                             \
        const __m256 e = _mm256_set_m128(f4(_mm256_extractf128_ps(x, 1)), f4(_mm256_castps256_ps128(x))); \
        return _mm256_blendv_ps(e, x, avx2_isnan(x));                                             \
    }
EIGHT(exp8, exp4)
EIGHT(erf8, erf4)
EIGHT(tanh8, tanh4)

/* ---- loads, folds ------------------------------------------------------------- */

/* up to 8 values of dtype t at p as f32 (n may exceed 8; n <= 0: none),
 * lanes past n `fill` */
TARGET static inline __m256 load8_n(amp_dtype t, const void *p, int64_t n, float fill)
{
    if (n >= 8)
        return avx2_load8(t, p);
    if (n <= 0)
        return _mm256_set1_ps(fill);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), avx2_load8_n(t, p, (size_t)n), avx2_first_lanes((size_t)n));
}

TARGET static inline void store8_n(amp_dtype t, void *p, int64_t n, __m256 v)
{
    if (n >= 8)
        avx2_store8(t, p, v);
    else if (n > 0)
        avx2_store8_n(t, p, (size_t)n, v);
}

/* lanes 0-7 in a, 8-15 in b, folded as AMP_ROW_FOLD folds 16 lanes */
TARGET static inline float fold16(__m256 a, __m256 b)
{
    const __m256 h8 = _mm256_add_ps(a, b);
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

/* ---- softmax over the last axis -------------------------------------- */

typedef struct {
    amp_dtype t;
    int64_t dim;
    const void *x;
    void *y;
} softmax_args;

TARGET static void softmax_row(const softmax_args *a, const char *x, char *y)
{
    const amp_dtype t = a->t;
    const int64_t dim = a->dim;
    const size_t es = avx2_size_of(t);
    float cache[ROW_CACHE] __attribute__((aligned(32)));
    const int cached = dim <= ROW_CACHE;
    float lanes[16], max, sum;
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t d;
    for (d = 0; d < dim; d += 16) { /* max_ps(v, m): v > m ? v : m, as the reference's lanes */
        m0 = _mm256_max_ps(load8_n(t, x + d * es, dim - d, -INFINITY), m0);
        m1 = _mm256_max_ps(load8_n(t, x + (d + 8) * es, dim - d - 8, -INFINITY), m1);
    }
    _mm256_storeu_ps(lanes, m0);
    _mm256_storeu_ps(lanes + 8, m1);
    max = lanes[0];
    for (int j = 1; j < 16; j++)
        if (lanes[j] > max)
            max = lanes[j];
    const __m256 vmax = _mm256_set1_ps(max);
    for (d = 0; d < dim; d += 8) {
        const int64_t n = dim - d;
        __m256 e = exp8(_mm256_sub_ps(load8_n(t, x + d * es, n, 0.0f), vmax));
        if (cached)
            _mm256_store_ps(cache + d, e);
        if (n < 8) /* absent lanes add +0: no change */
            e = _mm256_and_ps(e, avx2_first_lanes((size_t)n));
        if (d % 16 == 0)
            s0 = _mm256_add_ps(s0, e);
        else
            s1 = _mm256_add_ps(s1, e);
    }
    sum = fold16(s0, s1);
    const __m256 vs = _mm256_set1_ps(sum);
    for (d = 0; d < dim; d += 8) {
        const __m256 e = cached ? _mm256_load_ps(cache + d) : exp8(_mm256_sub_ps(load8_n(t, x + d * es, dim - d, 0.0f), vmax));
        store8_n(t, y + d * es, dim - d, _mm256_div_ps(e, vs));
    }
}

static void softmax_rows(const void *ctx, size_t begin, size_t end)
{
    const softmax_args *a = ctx;
    const size_t row = (size_t)a->dim * avx2_size_of(a->t);
    for (size_t r = begin; r < end; r++)
        softmax_row(a, (const char *)a->x + r * row, (char *)a->y + r * row);
}

/* ---- layer_norm ---------------------------------------------------------------- */

typedef struct {
    amp_dtype t, pt;
    int64_t inner;
    const void *x, *weight, *bias;
    float eps;
    void *y;
} layer_norm_args;

TARGET static void layer_norm_row(const layer_norm_args *a, const char *x, char *y)
{
    const amp_dtype t = a->t, pt = a->pt;
    const int64_t n = a->inner;
    const size_t es = avx2_size_of(t), ps = avx2_size_of(pt);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, q0 = s0, q1 = s0;
    int64_t i;
    for (i = 0; i < n; i += 16) { /* absent lanes add +0: no change */
        s0 = _mm256_add_ps(s0, load8_n(t, x + i * es, n - i, 0.0f));
        s1 = _mm256_add_ps(s1, load8_n(t, x + (i + 8) * es, n - i - 8, 0.0f));
    }
    const float mean = fold16(s0, s1) / (float)n;
    const __m256 vm = _mm256_set1_ps(mean);
    for (i = 0; i < n; i += 16) { /* absent lanes: mean - mean = +0 */
        const __m256 d0 = _mm256_sub_ps(load8_n(t, x + i * es, n - i, mean), vm);
        const __m256 d1 = _mm256_sub_ps(load8_n(t, x + (i + 8) * es, n - i - 8, mean), vm);
        q0 = _mm256_add_ps(q0, _mm256_mul_ps(d0, d0));
        q1 = _mm256_add_ps(q1, _mm256_mul_ps(d1, d1));
    }
    const float rstd = 1 / sqrtf(fold16(q0, q1) / (float)n + a->eps);
    const __m256 vr = _mm256_set1_ps(rstd);
    for (i = 0; i < n; i += 8) {
        __m256 r = _mm256_mul_ps(_mm256_sub_ps(load8_n(t, x + i * es, n - i, 0.0f), vm), vr);
        if (a->weight != NULL)
            r = _mm256_mul_ps(r, load8_n(pt, (const char *)a->weight + i * ps, n - i, 0.0f));
        if (a->bias != NULL)
            r = _mm256_add_ps(r, load8_n(pt, (const char *)a->bias + i * ps, n - i, 0.0f));
        store8_n(t, y + i * es, n - i, r);
    }
}

static void layer_norm_rows(const void *ctx, size_t begin, size_t end)
{
    const layer_norm_args *a = ctx;
    const size_t row = (size_t)a->inner * avx2_size_of(a->t);
    for (size_t r = begin; r < end; r++)
        layer_norm_row(a, (const char *)a->x + r * row, (char *)a->y + r * row);
}

/* ---- gelu, gelu_tanh ------------------------------------------------------------ */

typedef struct {
    amp_dtype t;
    size_t n;
    const void *x;
    void *y;
} unary_args;

/* the reference's x * 0.5 * (1 + erf(x * (1/sqrt 2))) */
TARGET static inline __m256 gelu8(__m256 x)
{
    const __m256 e = erf8(_mm256_mul_ps(x, _mm256_set1_ps((float)0.70710678118654752440)));
    return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* the reference's 0.5 * x * (1 + tanh(beta * (x + kappa * (x * x * x)))) */
TARGET static inline __m256 gelu_tanh8(__m256 x)
{
    const __m256 beta = _mm256_set1_ps((float)(1.41421356237309504880 * 1.12837916709551257390 * 0.5));
    const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 inner = _mm256_mul_ps(beta, _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps((float)0.044715), cube)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), tanh8(inner)));
}

/* elements [begin, end) (tasks of avx2_run_chunked: multiples of 16 but the last) */
#define UNARY_BODY(name, f8)                                                                      \
    TARGET static void name(const void *ctx, size_t begin, size_t end)                            \
    {                                                                                             \
        const unary_args *a = ctx;                                                                \
        const size_t es = avx2_size_of(a->t);                                                     \
        for (size_t i = begin; i < end; i += 8) {                                                 \
            const int64_t n = (int64_t)(end - i);                                                 \
            store8_n(a->t, (char *)a->y + i * es, n, f8(load8_n(a->t, (const char *)a->x + i * es, n, 0.0f))); \
        }                                                                                         \
    }
UNARY_BODY(gelu_elements, gelu8)
UNARY_BODY(gelu_tanh_elements, gelu_tanh8)

/* ---- the gradients: softmax_backward, log_softmax_backward ---------------------- */

/* s + v in the first n lanes (all for n >= 8): a lane past the row adds
 * nothing, as the reference's lanes (adding +0 would turn a -0 sum into +0) */
TARGET static inline __m256 add8_n(__m256 s, __m256 v, int64_t n)
{
    if (n >= 8)
        return _mm256_add_ps(s, v);
    if (n <= 0)
        return s;
    return _mm256_blendv_ps(s, _mm256_add_ps(s, v), avx2_first_lanes((size_t)n));
}

typedef struct {
    amp_dtype t;
    int64_t dim;
    int take_log;
    const void *y, *dy;
    void *dx;
} softmax_bw_args;

/* ref_backward_unary.inc's softmax_backward: the row's sum of dy y (dy
 * for log_softmax) in 16 lanes (two vectors), folded; then y (dy - sum),
 * or dy - exp(y) sum */
TARGET static void softmax_bw_row(const softmax_bw_args *a, const char *y, const char *dy, char *dx)
{
    const amp_dtype t = a->t;
    const int64_t dim = a->dim;
    const size_t es = avx2_size_of(t);
    __m256 s[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    int64_t d;
    for (d = 0; d < dim; d += 8) {
        const __m256 g = load8_n(t, dy + d * es, dim - d, 0.0f);
        const __m256 v = a->take_log ? g : _mm256_mul_ps(g, load8_n(t, y + d * es, dim - d, 0.0f));
        s[(d / 8) % 2] = add8_n(s[(d / 8) % 2], v, dim - d);
    }
    const __m256 vs = _mm256_set1_ps(fold16(s[0], s[1]));
    for (d = 0; d < dim; d += 8) {
        const __m256 g = load8_n(t, dy + d * es, dim - d, 0.0f), yv = load8_n(t, y + d * es, dim - d, 0.0f);
        const __m256 r = a->take_log ? _mm256_sub_ps(g, _mm256_mul_ps(exp8(yv), vs))
                                     : _mm256_mul_ps(yv, _mm256_sub_ps(g, vs));
        store8_n(t, dx + d * es, dim - d, r);
    }
}

static void softmax_bw_rows(const void *ctx, size_t begin, size_t end)
{
    const softmax_bw_args *a = ctx;
    const size_t row = (size_t)a->dim * avx2_size_of(a->t);
    for (size_t r = begin; r < end; r++)
        softmax_bw_row(a, (const char *)a->y + r * row, (const char *)a->dy + r * row, (char *)a->dx + r * row);
}

/* ---- layer_norm_backward --------------------------------------------------------
 * Two passes, as ref_backward_norm.inc: dx row by row (the statistics,
 * the row's sums of g = dy w and g xhat, all in 16 lanes folded),
 * keeping each row's mean and rstd; then dweight and dbias, a block of
 * columns per task, each column summed over the rows in row order (a
 * column per lane). */
#define LN_COLS 256

typedef struct {
    amp_dtype t, pt;
    int64_t outer, inner;
    const void *x, *weight, *dy;
    float eps;
    void *dx, *dweight, *dbias;
    float *stats; /* mean, rstd per row */
} ln_bw_args;

TARGET static inline __m256 ln_g(const ln_bw_args *a, const char *dy, int64_t i)
{
    const __m256 g = load8_n(a->t, dy + (size_t)i * avx2_size_of(a->t), a->inner - i, 0.0f);
    if (a->weight == NULL)
        return g;
    return _mm256_mul_ps(g, load8_n(a->pt, (const char *)a->weight + (size_t)i * avx2_size_of(a->pt), a->inner - i, 0.0f));
}

TARGET static void ln_bw_row(const ln_bw_args *a, size_t row)
{
    const amp_dtype t = a->t;
    const int64_t n = a->inner;
    const size_t es = avx2_size_of(t);
    const char *x = (const char *)a->x + row * (size_t)n * es, *dy = (const char *)a->dy + row * (size_t)n * es;
    char *dx = (char *)a->dx + row * (size_t)n * es;
    __m256 s[2], q[2], sg[2], sgx[2];
    int64_t i;
    s[0] = s[1] = q[0] = q[1] = sg[0] = sg[1] = sgx[0] = sgx[1] = _mm256_setzero_ps();
    for (i = 0; i < n; i += 8)
        s[(i / 8) % 2] = add8_n(s[(i / 8) % 2], load8_n(t, x + i * es, n - i, 0.0f), n - i);
    const float mean = fold16(s[0], s[1]) / (float)n;
    const __m256 vm = _mm256_set1_ps(mean);
    for (i = 0; i < n; i += 8) {
        const __m256 d = _mm256_sub_ps(load8_n(t, x + i * es, n - i, 0.0f), vm);
        q[(i / 8) % 2] = add8_n(q[(i / 8) % 2], _mm256_mul_ps(d, d), n - i);
    }
    const float rstd = 1 / sqrtf(fold16(q[0], q[1]) / (float)n + a->eps);
    const __m256 vr = _mm256_set1_ps(rstd);
    for (i = 0; i < n; i += 8) {
        const __m256 g = ln_g(a, dy, i);
        const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load8_n(t, x + i * es, n - i, 0.0f), vm), vr);
        sg[(i / 8) % 2] = add8_n(sg[(i / 8) % 2], g, n - i);
        sgx[(i / 8) % 2] = add8_n(sgx[(i / 8) % 2], _mm256_mul_ps(g, xhat), n - i);
    }
    const __m256 mg = _mm256_set1_ps(fold16(sg[0], sg[1]) / (float)n);
    const __m256 mgx = _mm256_set1_ps(fold16(sgx[0], sgx[1]) / (float)n);
    for (i = 0; i < n; i += 8) {
        const __m256 g = ln_g(a, dy, i);
        const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load8_n(t, x + i * es, n - i, 0.0f), vm), vr);
        store8_n(t, dx + i * es, n - i, _mm256_mul_ps(vr, _mm256_sub_ps(_mm256_sub_ps(g, mg), _mm256_mul_ps(xhat, mgx))));
    }
    if (a->stats != NULL) {
        a->stats[2 * row] = mean;
        a->stats[2 * row + 1] = rstd;
    }
}

static void ln_bw_rows(const void *ctx, size_t begin, size_t end)
{
    for (size_t r = begin; r < end; r++)
        ln_bw_row(ctx, r);
}

/* dweight, dbias of the column blocks [begin, end) of LN_COLS columns */
TARGET static void ln_bw_params(const void *ctx, size_t begin, size_t end)
{
    const ln_bw_args *a = ctx;
    const amp_dtype t = a->t, pt = a->pt;
    const size_t es = avx2_size_of(t), ps = avx2_size_of(pt);
    float dw[LN_COLS] __attribute__((aligned(32))), db[LN_COLS] __attribute__((aligned(32)));
    for (size_t blk = begin; blk < end; blk++) {
        const int64_t c0 = (int64_t)blk * LN_COLS, len = a->inner - c0 < LN_COLS ? a->inner - c0 : LN_COLS;
        for (int64_t j = 0; j < len; j += 8) {
            _mm256_store_ps(dw + j, _mm256_setzero_ps());
            _mm256_store_ps(db + j, _mm256_setzero_ps());
        }
        for (int64_t r = 0; r < a->outer; r++) {
            const char *x = (const char *)a->x + (size_t)(r * a->inner + c0) * es;
            const char *dy = (const char *)a->dy + (size_t)(r * a->inner + c0) * es;
            const __m256 vm = _mm256_set1_ps(a->stats[2 * r]), vr = _mm256_set1_ps(a->stats[2 * r + 1]);
            for (int64_t j = 0; j < len; j += 8) {
                const __m256 g = load8_n(t, dy + j * es, len - j, 0.0f);
                const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load8_n(t, x + j * es, len - j, 0.0f), vm), vr);
                _mm256_store_ps(dw + j, _mm256_add_ps(_mm256_load_ps(dw + j), _mm256_mul_ps(g, xhat)));
                _mm256_store_ps(db + j, _mm256_add_ps(_mm256_load_ps(db + j), g));
            }
        }
        for (int64_t j = 0; j < len; j += 8) {
            if (a->dweight != NULL)
                store8_n(pt, (char *)a->dweight + (size_t)(c0 + j) * ps, len - j, _mm256_load_ps(dw + j));
            if (a->dbias != NULL)
                store8_n(pt, (char *)a->dbias + (size_t)(c0 + j) * ps, len - j, _mm256_load_ps(db + j));
        }
    }
}

/* 0: done; -1: no memory for the statistics (the caller takes the reference) */
static int ln_bw_run(ln_bw_args *a)
{
    const int params = a->dweight != NULL || a->dbias != NULL;
    if (params && (a->stats = amp_scratch_alloc((size_t)a->outer * 2 * sizeof(float))) == NULL)
        return -1;
    avx2_run_chunked((size_t)a->outer, (size_t)a->inner, ln_bw_rows, a);
    if (params) {
        avx2_run_chunked((size_t)((a->inner + LN_COLS - 1) / LN_COLS), (size_t)a->outer * LN_COLS, ln_bw_params, a);
        amp_scratch_free(a->stats);
    }
    return 0;
}

/* ---- gelu_backward, gelu_tanh_backward ------------------------------------------ */

typedef struct {
    amp_dtype t;
    const void *x, *dy;
    void *dx;
} unary_bw_args;

/* the reference's dy (cdf + x pdf), cdf = 0.5 (1 + erf(x alpha)), pdf =
 * beta exp(x x -0.5) */
TARGET static inline __m256 gelu_bw8(__m256 x, __m256 g)
{
    const __m256 cdf = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(_mm256_set1_ps(1.0f),
                                     erf8(_mm256_mul_ps(x, _mm256_set1_ps((float)0.70710678118654752440)))));
    const __m256 pdf = _mm256_mul_ps(_mm256_set1_ps((float)(1.12837916709551257390 * 0.70710678118654752440 * 0.5)),
                                     exp8(_mm256_mul_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(-0.5f))));
    return _mm256_mul_ps(g, _mm256_add_ps(cdf, _mm256_mul_ps(x, pdf)));
}

/* the reference's dy (0.5 (1 + th) + 0.5 x (1 - th th) beta (1 + 3 kappa x x)),
 * th = tanh(beta (x + kappa x x x)) */
TARGET static inline __m256 gelu_tanh_bw8(__m256 x, __m256 g)
{
    const float beta = (float)(1.41421356237309504880 * 1.12837916709551257390 * 0.5), kappa = (float)0.044715;
    const __m256 x_sq = _mm256_mul_ps(x, x), x_cube = _mm256_mul_ps(x_sq, x);
    const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(kappa), x_cube)));
    const __m256 th = tanh8(inner), one = _mm256_set1_ps(1.0f);
    const __m256 left = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
    const __m256 left_d = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(one, th));
    const __m256 right_d = _mm256_sub_ps(one, _mm256_mul_ps(th, th));
    const __m256 inner_d = _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_add_ps(one, _mm256_mul_ps(_mm256_set1_ps(3 * kappa), x_sq)));
    return _mm256_mul_ps(g, _mm256_add_ps(left_d, _mm256_mul_ps(_mm256_mul_ps(left, right_d), inner_d)));
}

/* elements [begin, end) (tasks of avx2_run_chunked: multiples of 16 but the last) */
#define UNARY_BW_BODY(name, f8)                                                                   \
    TARGET static void name(const void *ctx, size_t begin, size_t end)                            \
    {                                                                                             \
        const unary_bw_args *a = ctx;                                                             \
        const size_t es = avx2_size_of(a->t);                                                     \
        for (size_t i = begin; i < end; i += 8) {                                                 \
            const int64_t n = (int64_t)(end - i);                                                 \
            store8_n(a->t, (char *)a->dx + i * es, n,                                             \
                     f8(load8_n(a->t, (const char *)a->x + i * es, n, 0.0f),                      \
                        load8_n(a->t, (const char *)a->dy + i * es, n, 0.0f)));                   \
        }                                                                                         \
    }
UNARY_BW_BODY(gelu_bw_elements, gelu_bw8)
UNARY_BW_BODY(gelu_tanh_bw_elements, gelu_tanh_bw8)

/* ---- dropout -----------------------------------------------------------------------
 * x86/avx512_rows.c's: ref_random.c's Philox4x32-10 for 8 blocks at a
 * time (a block per lane, 32 elements), the same integer operations, so
 * the same words; element 4 b + w kept when word w of block b is >= the
 * threshold (unsigned, by max_epu32), the four compare masks' bits
 * interleaved into element order; kept elements x * scale, the others +0.
 * The last n % 32 elements take their words from amp_random_u32. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

typedef struct {
    amp_dtype t;
    const void *x;
    void *y;
    float scale;
    uint32_t threshold;
    int none; /* p >= 1: nothing kept */
    uint64_t seed, stream, offset;
} dropout_args;

/* the high and low 32 bits of m * a per lane */
TARGET static inline void mulhilo(__m256i a, uint32_t m, __m256i *hi, __m256i *lo)
{
    const __m256i vm = _mm256_set1_epi64x((long long)m);
    const __m256i even = _mm256_mul_epu32(a, vm), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), vm);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

/* bit j of m (8 bits) to bit 4 j */
static inline uint32_t spread4(uint32_t m)
{
    m = (m | m << 12) & 0x000F000Fu;
    m = (m | m << 6) & 0x03030303u;
    return (m | m << 3) & 0x11111111u;
}

/* lanes >= the threshold, unsigned, as 8 bits */
TARGET static inline uint32_t at_least(__m256i w, __m256i th)
{
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_max_epu32(w, th), w)));
}

/* the keep bits of elements [32 g, 32 g + 32) */
TARGET static uint32_t keep_bits32(const dropout_args *a, uint64_t g)
{
    const uint64_t block = g * 8;
    __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)block), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i c1 = _mm256_set1_epi32((int)(((uint32_t)(block >> 32) & 0xFFu) | (uint32_t)(a->stream << 8)));
    __m256i c2 = _mm256_set1_epi32((int)(uint32_t)a->offset), c3 = _mm256_set1_epi32((int)(uint32_t)(a->offset >> 32));
    uint32_t k0 = (uint32_t)a->seed, k1 = (uint32_t)(a->seed >> 32);
    for (int round = 0; round < 10; round++) {
        __m256i hi0, lo0, hi1, lo1;
        mulhilo(c0, PHILOX_M0, &hi0, &lo0);
        mulhilo(c2, PHILOX_M1, &hi1, &lo1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    if (a->none)
        return 0;
    const __m256i th = _mm256_set1_epi32((int)a->threshold);
    return spread4(at_least(c0, th)) | spread4(at_least(c1, th)) << 1 | spread4(at_least(c2, th)) << 2 |
           spread4(at_least(c3, th)) << 3;
}

/* the lanes of 8 keep bits, all ones where kept */
TARGET static inline __m256 kept_lanes(uint32_t bits)
{
    const __m256i b = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), b), b));
}

TARGET static void dropout_groups(const void *ctx, size_t begin, size_t end)
{
    const dropout_args *a = ctx;
    const size_t es = avx2_size_of(a->t);
    const __m256 scale = _mm256_set1_ps(a->scale);
    for (size_t g = begin; g < end; g++) {
        const uint32_t keep = keep_bits32(a, (uint64_t)g);
        for (int q = 0; q < 4; q++) {
            const size_t i = g * 32 + (size_t)q * 8;
            const __m256 v = avx2_load8(a->t, (const char *)a->x + i * es);
            avx2_store8(a->t, (char *)a->y + i * es, _mm256_and_ps(kept_lanes(keep >> (8 * q)), _mm256_mul_ps(v, scale)));
        }
    }
}

TARGET static void dropout_run(amp_dtype t, size_t n, const void *x, double p, uint64_t seed, uint64_t stream,
                               uint64_t offset, void *y)
{
    const uint64_t threshold = !(p > 0) ? 0 : p >= 1 ? (uint64_t)1 << 32 : (uint64_t)ceil(p * 4294967296.0);
    const dropout_args a = { t, x, y, p < 1 ? (float)(1.0 / (1.0 - p)) : 0.0f, (uint32_t)threshold,
                             threshold >> 32 != 0, seed, stream, offset };
    const size_t groups = n / 32, es = avx2_size_of(t);
    avx2_run_chunked(groups, 32, dropout_groups, &a);
    for (size_t i = groups * 32; i < n; i += 8) { /* the tail, 8 at a time */
        const int64_t m = (int64_t)(n - i) < 8 ? (int64_t)(n - i) : 8;
        uint32_t keep = 0;
        for (int64_t l = 0; l < m && !a.none; l++)
            keep |= (uint32_t)(amp_random_u32(seed, stream, offset, i + (size_t)l) >= a.threshold) << l;
        const __m256 v = load8_n(t, (const char *)x + i * es, m, 0.0f);
        store8_n(t, (char *)y + i * es, m, _mm256_and_ps(kept_lanes(keep), _mm256_mul_ps(v, _mm256_set1_ps(a.scale))));
    }
}

/* ---- the entries ---------------------------------------------------------------- */

static int param_ok(amp_dtype pt) { return pt == AMP_F32 || pt == AMP_BF16 || pt == AMP_F16; }

#define ROWS_ENTRIES(T)                                                                           \
    static void avx2_softmax_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *x, \
                                 AMP_CTYPE_##T *y)                                                \
    {                                                                                             \
        const softmax_args a = { AMP_DTYPE_##T, dim, x, y };                                   \
        if (inner != 1 || dim <= 0 || outer <= 0) {                                               \
            amp_ref_softmax_##T(outer, dim, inner, x, y);                                         \
            return;                                                                               \
        }                                                                                         \
        avx2_run_chunked((size_t)outer, (size_t)dim, softmax_rows, &a);                           \
    }                                                                                             \
    static void avx2_layer_norm_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x, amp_dtype pt, \
                                    const void *weight, const void *bias, double eps, AMP_CTYPE_##T *y) \
    {                                                                                             \
        const layer_norm_args a = { AMP_DTYPE_##T, pt, inner, x, weight, bias, (float)eps, y };   \
        if (inner <= 0 || outer <= 0 || ((weight != NULL || bias != NULL) && !param_ok(pt))) {    \
            amp_ref_layer_norm_##T(outer, inner, x, pt, weight, bias, eps, y);                    \
            return;                                                                               \
        }                                                                                         \
        avx2_run_chunked((size_t)outer, (size_t)inner, layer_norm_rows, &a);                      \
    }                                                                                             \
    static void avx2_gelu_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                 \
    {                                                                                             \
        const unary_args a = { AMP_DTYPE_##T, n, x, y };                                          \
        avx2_run_chunked(n, 1, gelu_elements, &a);                                                \
    }                                                                                             \
    static void avx2_gelu_tanh_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)            \
    {                                                                                             \
        const unary_args a = { AMP_DTYPE_##T, n, x, y };                                          \
        avx2_run_chunked(n, 1, gelu_tanh_elements, &a);                                           \
    }
#define BACKWARD_ENTRIES(T)                                                                       \
    static void avx2_dropout_##T(size_t n, const AMP_CTYPE_##T *x, double p, uint64_t seed,       \
                                 uint64_t stream, uint64_t offset, AMP_CTYPE_##T *y)              \
    {                                                                                             \
        if (n / 4 + 8 >= ((size_t)1 << 32)) /* block numbers past 32 bits: the reference's */    \
            amp_ref_dropout_##T(n, x, p, seed, stream, offset, y);                                \
        else                                                                                      \
            dropout_run(AMP_DTYPE_##T, n, x, p, seed, stream, offset, y);                         \
    }                                                                                             \
    static void avx2_softmax_bw_##T(int take_log, int64_t outer, int64_t dim, int64_t inner,      \
                                    const AMP_CTYPE_##T *y, const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx) \
    {                                                                                             \
        const softmax_bw_args a = { AMP_DTYPE_##T, dim, take_log, y, dy, dx };                    \
        if (inner != 1 || dim <= 0 || outer <= 0) {                                               \
            if (take_log)                                                                         \
                amp_ref_log_softmax_backward_##T(outer, dim, inner, y, dy, dx);                   \
            else                                                                                  \
                amp_ref_softmax_backward_##T(outer, dim, inner, y, dy, dx);                       \
            return;                                                                               \
        }                                                                                         \
        avx2_run_chunked((size_t)outer, (size_t)dim, softmax_bw_rows, &a);                        \
    }                                                                                             \
    static void avx2_softmax_backward_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *y, \
                                          const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)             \
    {                                                                                             \
        avx2_softmax_bw_##T(0, outer, dim, inner, y, dy, dx);                                     \
    }                                                                                             \
    static void avx2_log_softmax_backward_##T(int64_t outer, int64_t dim, int64_t inner,          \
                                              const AMP_CTYPE_##T *y, const AMP_CTYPE_##T *dy,    \
                                              AMP_CTYPE_##T *dx)                                  \
    {                                                                                             \
        avx2_softmax_bw_##T(1, outer, dim, inner, y, dy, dx);                                     \
    }                                                                                             \
    static void avx2_layer_norm_backward_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x, \
                                             amp_dtype pt, const void *weight, double eps,        \
                                             const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx,          \
                                             void *dweight, void *dbias)                          \
    {                                                                                             \
        ln_bw_args a = { AMP_DTYPE_##T, pt, outer, inner, x, weight, dy, (float)eps, dx, dweight, dbias, NULL }; \
        if (inner <= 0 || outer <= 0 ||                                                           \
            ((weight != NULL || dweight != NULL || dbias != NULL) && !param_ok(pt)) || ln_bw_run(&a) != 0) \
            amp_ref_layer_norm_backward_##T(outer, inner, x, pt, weight, eps, dy, dx, dweight, dbias); \
    }                                                                                             \
    static void avx2_gelu_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,  \
                                       const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                \
    {                                                                                             \
        const unary_bw_args a = { AMP_DTYPE_##T, x, dy, dx };                                     \
        (void)y;                                                                                  \
        avx2_run_chunked(n, 1, gelu_bw_elements, &a);                                             \
    }                                                                                             \
    static void avx2_gelu_tanh_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y, \
                                            const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)           \
    {                                                                                             \
        const unary_bw_args a = { AMP_DTYPE_##T, x, dy, dx };                                     \
        (void)y;                                                                                  \
        avx2_run_chunked(n, 1, gelu_tanh_bw_elements, &a);                                        \
    }

ROWS_ENTRIES(f32)
ROWS_ENTRIES(bf16)
ROWS_ENTRIES(f16)
BACKWARD_ENTRIES(f32)
BACKWARD_ENTRIES(bf16)
BACKWARD_ENTRIES(f16)

/* This file's kernels of the set: X(kernel, implementation). */
#define ROWS_OF(X, T)                                                                             \
    X(softmax_##T, avx2_softmax_##T)                                                              \
    X(layer_norm_##T, avx2_layer_norm_##T)                                                        \
    X(gelu_##T, avx2_gelu_##T)                                                                    \
    X(gelu_tanh_##T, avx2_gelu_tanh_##T)                                                          \
    X(softmax_backward_##T, avx2_softmax_backward_##T)                                            \
    X(log_softmax_backward_##T, avx2_log_softmax_backward_##T)                                    \
    X(layer_norm_backward_##T, avx2_layer_norm_backward_##T)                                      \
    X(gelu_backward_##T, avx2_gelu_backward_##T)                                                  \
    X(gelu_tanh_backward_##T, avx2_gelu_tanh_backward_##T)                                        \
    X(dropout_##T, avx2_dropout_##T)
#define ROWS_KERNELS(X) ROWS_OF(X, f32) ROWS_OF(X, bf16) ROWS_OF(X, f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
ROWS_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx2_fill_rows(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx2, name);
    ROWS_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
