/*
 * avx512_rows.c - the AVX-512 sets' kernels of a transformer's rows, for
 * f32, bf16 and f16 storage computing in f32: softmax along the last
 * axis (inner 1; log_softmax, a classifier's, stays the reference's, which
 * a small program then links alone), layer_norm (weight and bias in f32, bf16
 * or f16), gelu and gelu_tanh; their gradients softmax_backward,
 * log_softmax_backward (last axis), layer_norm_backward (dx, dweight,
 * dbias), gelu_backward and gelu_tanh_backward; and dropout (its own
 * gradient).
 *
 * Bit for bit the reference (ref_softmax.inc, ref_norm.inc,
 * ref_unary.inc, ref_backward_unary.inc, ref_backward_norm.inc,
 * ref_random.c): the references add a row up in 16 lanes, folded in
 * halves (amp_mathf.h), which is one vector here, and a parameter's
 * gradient over the rows in row order, a column per lane; exp is amp_expf
 * (amp_expf.h), erf and tanh amp_erff and amp_tanhf (amp_mathf.h), whose
 * double operations the 8-lane functions below perform in the same order;
 * every f32 operation is an intrinsic, so nothing is contracted into FMA;
 * dropout's Philox words are the reference's integer operations, 16
 * blocks per vector.  softmax keeps a row's exp(x - max) in a stack
 * buffer between its sum and its outputs (rows up to ROW_CACHE; the
 * reference computes it twice, to the same bits); layer_norm_backward
 * keeps each row's mean and rstd (a scratch buffer) between its dx pass
 * and its parameters' pass.  Other layouts (softmax over an inner axis,
 * other parameter dtypes) go to the reference.
 *
 * Rows (gelu's and dropout's elements, layer_norm_backward's blocks of
 * parameter columns) are split over the pool in tasks of about CHUNK
 * elements once there are PARALLEL_MIN of them.
 *
 * Compiled for AVX-512 through target attributes only; installed by
 * amp_isa_avx512_fill after dispatch.c's CPU check.
 */
#include <math.h>
#include <string.h>

#include "amprt_internal.h"
#include "amp_expf.h"
#include "amp_mathf.h"
#include "avx512_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define TARGET AVX512_TARGET
#define CHUNK 65536
#define PARALLEL_MIN 131072
#define ROW_CACHE 4096

/* ---- exp, erf, tanh in double, 8 lanes ------------------------------------------ */

/* -k by its sign bit, as the scalar -k (0 - k would give +0 for k = +0) */
TARGET static inline __m512d negate(__m512d k)
{
    return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(k), _mm512_set1_epi64((long long)0x8000000000000000ull)));
}

/* amp_expf's reduction and polynomial: p with exp(x) = p 2^k; q = p - 1
 * as amp_expm1_reduced computes it when want_expm1 */
TARGET static inline __m512d reduce_ln2(__m512d x, __m512d *k)
{
    *k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(AMP_EXPF_INV_LN2)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512d nk = negate(*k);
    const __m512d r = _mm512_fmadd_pd(nk, _mm512_set1_pd(AMP_EXPF_LN2_HI), x);
    return _mm512_fmadd_pd(nk, _mm512_set1_pd(AMP_EXPF_LN2_LO), r);
}

TARGET static inline __m512d series_to_c2(__m512d r)
{
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(AMP_EXPF_C11), r, _mm512_set1_pd(AMP_EXPF_C10));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C9));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C8));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C7));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C6));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C4));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C3));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AMP_EXPF_C2));
    return _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
}

/* amp_expf of 8 lanes (NaN lanes: see exp16) */
TARGET static __m256 exp8(__m256 xf)
{
    const __m512d x = _mm512_max_pd(_mm512_min_pd(_mm512_cvtps_pd(xf), _mm512_set1_pd(89.0)), _mm512_set1_pd(-104.0));
    __m512d k;
    const __m512d r = reduce_ln2(x, &k);
    const __m512d p = _mm512_fmadd_pd(series_to_c2(r), r, _mm512_set1_pd(1.0));
    return _mm512_cvtpd_ps(_mm512_scalef_pd(p, k)); /* p 2^k: a normal double, exact */
}

/* amp_erff of 8 lanes, both branches, one kept per lane (NaN: see below) */
TARGET static __m256 erf8(__m256 xf)
{
    const __m512d x = _mm512_cvtps_pd(xf), a = _mm512_abs_pd(x), t = _mm512_mul_pd(x, x);
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(AMP_ERF_A9), t, _mm512_set1_pd(AMP_ERF_A8));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A7));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A6));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A5));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A4));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A3));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A2));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A1));
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(AMP_ERF_A0));
    const __m512d small = _mm512_mul_pd(x, p);
    const __mmask8 big = _mm512_cmp_pd_mask(a, _mm512_set1_pd(1.0), _CMP_NLT_UQ);
    if (!big)
        return _mm512_cvtpd_ps(small);
    const __m512d u = _mm512_sub_pd(_mm512_min_pd(a, _mm512_set1_pd(AMP_ERF_B_TOP)), _mm512_set1_pd(AMP_ERF_B_CENTER));
    __m512d q = _mm512_setzero_pd();
    int first = 1;
#define HORNER(c)                                                                                 \
    if (first) {                                                                                  \
        q = _mm512_set1_pd(c);                                                                    \
        first = 0;                                                                                \
    } else                                                                                        \
        q = _mm512_fmadd_pd(q, u, _mm512_set1_pd(c));
    AMP_ERF_B_COEFFS(HORNER)
#undef HORNER
    const __m512d one_minus = _mm512_sub_pd(_mm512_set1_pd(1.0), q);
    const __m512d sign = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64((long long)0x8000000000000000ull)));
    const __m512d large = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(one_minus), _mm512_castpd_si512(sign)));
    return _mm512_cvtpd_ps(_mm512_mask_mov_pd(small, big, large));
}

/* amp_tanhf of 8 lanes */
TARGET static __m256 tanh8(__m256 xf)
{
    const __m512d x = _mm512_cvtps_pd(xf);
    const __m512d z = _mm512_min_pd(_mm512_add_pd(_mm512_abs_pd(x), _mm512_abs_pd(x)), _mm512_set1_pd(AMP_TANH_TOP));
    __m512d k;
    const __m512d r = reduce_ln2(z, &k);
    const __m512d q = _mm512_mul_pd(series_to_c2(r), r);
    const __m512d s = _mm512_scalef_pd(_mm512_set1_pd(1.0), k);
    const __m512d e = _mm512_fmadd_pd(q, s, _mm512_sub_pd(s, _mm512_set1_pd(1.0)));
    const __m512d t = _mm512_div_pd(e, _mm512_add_pd(e, _mm512_set1_pd(2.0)));
    const __m512d sign = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64((long long)0x8000000000000000ull)));
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(t), _mm512_castpd_si512(sign))));
}

/* f(x) of 16 lanes by two 8-lane halves; NaN lanes keep their NaN, as the
 * scalar functions return it */
#define SIXTEEN(name, f8)                                                                         \
    TARGET static inline __m512 name(__m512 x)                                                    \
    {                                                                                             \
        const __m256 lo = f8(_mm512_castps512_ps256(x));                                          \
        const __m256 hi = f8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));   \
        const __m512 e = _mm512_castpd_ps(                                                        \
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1)); \
        return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);                  \
    }
SIXTEEN(exp16, exp8)
SIXTEEN(erf16, erf8)
SIXTEEN(tanh16, tanh8)

/* ---- loads, folds, the pool --------------------------------------------------- */

/* n <= 16 values of dtype t at p as f32, as amp_ld reads them; other lanes fill */
TARGET static inline __m512 load16_n(amp_dtype t, const void *p, int64_t n, float fill)
{
    if (n >= 16)
        return load16_all(t, p);
    const __mmask16 m = (__mmask16)((1u << n) - 1);
    if (t == AMP_F32)
        return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), m, p);
    float w[16] = { 0 }; /* 32 bytes used */
    memcpy(w, p, (size_t)n * 2);
    return _mm512_mask_mov_ps(_mm512_set1_ps(fill), m, load16_all(t, w));
}

TARGET static inline void store16_n(amp_dtype t, void *p, int64_t n, __m512 v)
{
    if (n >= 16)
        store16_all(t, p, v);
    else
        store16(t, p, (__mmask16)((1u << n) - 1), v);
}

/* the 16 lanes of s folded as AMP_ROW_FOLD folds them */
TARGET static inline float fold16(__m512 s)
{
    const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(s), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

static inline size_t dsize(amp_dtype t) { return t == AMP_F32 ? 4 : 2; }

typedef struct {
    void (*body)(const void *ctx, int64_t begin, int64_t end);
    const void *ctx;
    int64_t n, per_task;
} rows_job;

static void rows_task(void *ctx, int64_t task, int slot)
{
    const rows_job *j = ctx;
    int64_t begin = task * j->per_task, end = begin + j->per_task < j->n ? begin + j->per_task : j->n;
    (void)slot;
    j->body(j->ctx, begin, end);
}

/* body over [0, n) units of `unit` elements, on the pool when big enough */
static void run_rows(int64_t n, int64_t unit, void (*body)(const void *, int64_t, int64_t), const void *ctx)
{
    rows_job j = { body, ctx, n, CHUNK / (unit > 0 ? unit : 1) + 1 };
    if (n * unit < PARALLEL_MIN || amp_get_threads() == 1 || n < 2) {
        body(ctx, 0, n);
        return;
    }
    amp_parallel_run(amp_get_threads(), (n + j.per_task - 1) / j.per_task, rows_task, &j);
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
    const size_t es = dsize(t);
    float cache[ROW_CACHE] __attribute__((aligned(64)));
    const int cached = dim <= ROW_CACHE;
    float lanes[16], max, sum;
    __m512 m = _mm512_set1_ps(-INFINITY), s = _mm512_setzero_ps();
    int64_t d;
    for (d = 0; d < dim; d += 16) {
        const __m512 v = load16_n(t, x + d * es, dim - d, -INFINITY);
        m = _mm512_max_ps(v, m); /* v > m ? v : m, as the reference's lanes */
    }
    _mm512_storeu_ps(lanes, m);
    max = lanes[0];
    for (int j = 1; j < 16; j++)
        if (lanes[j] > max)
            max = lanes[j];
    const __m512 vmax = _mm512_set1_ps(max);
    for (d = 0; d < dim; d += 16) {
        const int64_t n = dim - d;
        const __m512 e = exp16(_mm512_sub_ps(load16_n(t, x + d * es, n, 0.0f), vmax));
        s = n >= 16 ? _mm512_add_ps(s, e) : _mm512_mask_add_ps(s, (__mmask16)((1u << n) - 1), s, e);
        if (cached)
            _mm512_store_ps(cache + d, e);
    }
    sum = fold16(s);
    const __m512 vs = _mm512_set1_ps(sum);
    for (d = 0; d < dim; d += 16) {
        const __m512 e = cached ? _mm512_load_ps(cache + d)
                                : exp16(_mm512_sub_ps(load16_n(t, x + d * es, dim - d, 0.0f), vmax));
        store16_n(t, y + d * es, dim - d, _mm512_div_ps(e, vs));
    }
}

static void softmax_rows(const void *ctx, int64_t begin, int64_t end)
{
    const softmax_args *a = ctx;
    const size_t row = (size_t)a->dim * dsize(a->t);
    for (int64_t r = begin; r < end; r++)
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
    const size_t es = dsize(t), ps = dsize(pt);
    __m512 s = _mm512_setzero_ps(), q = _mm512_setzero_ps();
    int64_t i;
    for (i = 0; i < n; i += 16) /* absent lanes add +0: no change */
        s = _mm512_add_ps(s, load16_n(t, x + i * es, n - i, 0.0f));
    const float mean = fold16(s) / (float)n;
    const __m512 vm = _mm512_set1_ps(mean);
    for (i = 0; i < n; i += 16) {
        const __m512 d = _mm512_sub_ps(load16_n(t, x + i * es, n - i, mean), vm);
        q = _mm512_add_ps(q, _mm512_mul_ps(d, d));
    }
    const float rstd = 1 / sqrtf(fold16(q) / (float)n + a->eps);
    const __m512 vr = _mm512_set1_ps(rstd);
    for (i = 0; i < n; i += 16) {
        __m512 r = _mm512_mul_ps(_mm512_sub_ps(load16_n(t, x + i * es, n - i, 0.0f), vm), vr);
        if (a->weight != NULL)
            r = _mm512_mul_ps(r, load16_n(pt, (const char *)a->weight + i * ps, n - i, 0.0f));
        if (a->bias != NULL)
            r = _mm512_add_ps(r, load16_n(pt, (const char *)a->bias + i * ps, n - i, 0.0f));
        store16_n(t, y + i * es, n - i, r);
    }
}

static void layer_norm_rows(const void *ctx, int64_t begin, int64_t end)
{
    const layer_norm_args *a = ctx;
    const size_t row = (size_t)a->inner * dsize(a->t);
    for (int64_t r = begin; r < end; r++)
        layer_norm_row(a, (const char *)a->x + r * row, (char *)a->y + r * row);
}

/* ---- gelu, gelu_tanh ------------------------------------------------------------ */

typedef struct {
    amp_dtype t;
    const void *x;
    void *y;
} unary_args;

/* the reference's x * 0.5 * (1 + erf(x * (1/sqrt 2))) */
TARGET static inline __m512 gelu16(__m512 x)
{
    const __m512 e = erf16(_mm512_mul_ps(x, _mm512_set1_ps((float)0.70710678118654752440)));
    return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

/* the reference's 0.5 * x * (1 + tanh(beta * (x + kappa * (x * x * x)))) */
TARGET static inline __m512 gelu_tanh16(__m512 x)
{
    const __m512 beta = _mm512_set1_ps((float)(1.41421356237309504880 * 1.12837916709551257390 * 0.5));
    const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 inner = _mm512_mul_ps(beta, _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps((float)0.044715), cube)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), tanh16(inner)));
}

#define UNARY_BODY(name, f16)                                                                     \
    TARGET static void name(const void *ctx, int64_t begin, int64_t end)                          \
    {                                                                                             \
        const unary_args *a = ctx;                                                                \
        const size_t es = dsize(a->t);                                                            \
        for (int64_t i = begin * 16; i < end * 16; i += 16) {                                     \
            store16_all(a->t, (char *)a->y + i * es, f16(load16_all(a->t, (const char *)a->x + i * es))); \
        }                                                                                         \
    }
UNARY_BODY(gelu_blocks, gelu16)
UNARY_BODY(gelu_tanh_blocks, gelu_tanh16)

/* n elements: whole vectors on the pool, the tail here */
TARGET static void unary_run(amp_dtype t, size_t n, const void *x, void *y, int tanh_form)
{
    const unary_args a = { t, x, y };
    const int64_t blocks = (int64_t)(n / 16), rest = (int64_t)(n % 16);
    run_rows(blocks, 16, tanh_form ? gelu_tanh_blocks : gelu_blocks, &a);
    if (rest > 0) {
        const size_t es = dsize(t), off = (size_t)blocks * 16 * es;
        const __m512 v = load16_n(t, (const char *)x + off, rest, 0.0f);
        store16_n(t, (char *)y + off, rest, tanh_form ? gelu_tanh16(v) : gelu16(v));
    }
}

/* ---- the gradients: softmax_backward, log_softmax_backward ---------------------- */

/* s + v in the first n lanes (all for n >= 16): a lane past the row adds
 * nothing, as the reference's lanes (adding +0 would turn a -0 sum into +0) */
TARGET static inline __m512 add_n(__m512 s, __m512 v, int64_t n)
{
    return n >= 16 ? _mm512_add_ps(s, v) : _mm512_mask_add_ps(s, (__mmask16)((1u << n) - 1), s, v);
}

typedef struct {
    amp_dtype t;
    int64_t dim;
    int take_log;
    const void *y, *dy;
    void *dx;
} softmax_bw_args;

/* ref_backward_unary.inc's softmax_backward: the row's sum of dy y (dy
 * for log_softmax) in 16 lanes, folded; then y (dy - sum), or dy - exp(y)
 * sum */
TARGET static void softmax_bw_row(const softmax_bw_args *a, const char *y, const char *dy, char *dx)
{
    const amp_dtype t = a->t;
    const int64_t dim = a->dim;
    const size_t es = dsize(t);
    __m512 s = _mm512_setzero_ps();
    int64_t d;
    for (d = 0; d < dim; d += 16) {
        const __m512 g = load16_n(t, dy + d * es, dim - d, 0.0f);
        s = add_n(s, a->take_log ? g : _mm512_mul_ps(g, load16_n(t, y + d * es, dim - d, 0.0f)), dim - d);
    }
    const __m512 vs = _mm512_set1_ps(fold16(s));
    for (d = 0; d < dim; d += 16) {
        const __m512 g = load16_n(t, dy + d * es, dim - d, 0.0f), yv = load16_n(t, y + d * es, dim - d, 0.0f);
        const __m512 r = a->take_log ? _mm512_sub_ps(g, _mm512_mul_ps(exp16(yv), vs))
                                     : _mm512_mul_ps(yv, _mm512_sub_ps(g, vs));
        store16_n(t, dx + d * es, dim - d, r);
    }
}

static void softmax_bw_rows(const void *ctx, int64_t begin, int64_t end)
{
    const softmax_bw_args *a = ctx;
    const size_t row = (size_t)a->dim * dsize(a->t);
    for (int64_t r = begin; r < end; r++)
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

TARGET static void ln_bw_row(const ln_bw_args *a, int64_t row)
{
    const amp_dtype t = a->t, pt = a->pt;
    const int64_t n = a->inner;
    const size_t es = dsize(t), ps = dsize(pt);
    const char *x = (const char *)a->x + (size_t)(row * n) * es, *dy = (const char *)a->dy + (size_t)(row * n) * es;
    char *dx = (char *)a->dx + (size_t)(row * n) * es;
    __m512 s = _mm512_setzero_ps(), q = s, sg = s, sgx = s;
    int64_t i;
    for (i = 0; i < n; i += 16)
        s = add_n(s, load16_n(t, x + i * es, n - i, 0.0f), n - i);
    const float mean = fold16(s) / (float)n;
    const __m512 vm = _mm512_set1_ps(mean);
    for (i = 0; i < n; i += 16) {
        const __m512 d = _mm512_sub_ps(load16_n(t, x + i * es, n - i, 0.0f), vm);
        q = add_n(q, _mm512_mul_ps(d, d), n - i);
    }
    const float rstd = 1 / sqrtf(fold16(q) / (float)n + a->eps);
    const __m512 vr = _mm512_set1_ps(rstd);
#define LN_G(i)                                                                                   \
    (a->weight != NULL ? _mm512_mul_ps(load16_n(t, dy + (i) * es, n - (i), 0.0f),                 \
                                       load16_n(pt, (const char *)a->weight + (i) * ps, n - (i), 0.0f)) \
                       : load16_n(t, dy + (i) * es, n - (i), 0.0f))
    for (i = 0; i < n; i += 16) {
        const __m512 g = LN_G(i);
        const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load16_n(t, x + i * es, n - i, 0.0f), vm), vr);
        sg = add_n(sg, g, n - i);
        sgx = add_n(sgx, _mm512_mul_ps(g, xhat), n - i);
    }
    const __m512 mg = _mm512_set1_ps(fold16(sg) / (float)n), mgx = _mm512_set1_ps(fold16(sgx) / (float)n);
    for (i = 0; i < n; i += 16) {
        const __m512 g = LN_G(i);
        const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load16_n(t, x + i * es, n - i, 0.0f), vm), vr);
        store16_n(t, dx + i * es, n - i, _mm512_mul_ps(vr, _mm512_sub_ps(_mm512_sub_ps(g, mg), _mm512_mul_ps(xhat, mgx))));
    }
#undef LN_G
    if (a->stats != NULL) {
        a->stats[2 * row] = mean;
        a->stats[2 * row + 1] = rstd;
    }
}

static void ln_bw_rows(const void *ctx, int64_t begin, int64_t end)
{
    for (int64_t r = begin; r < end; r++)
        ln_bw_row(ctx, r);
}

/* dweight, dbias of the column blocks [begin, end) of LN_COLS columns */
TARGET static void ln_bw_params(const void *ctx, int64_t begin, int64_t end)
{
    const ln_bw_args *a = ctx;
    const amp_dtype t = a->t, pt = a->pt;
    const size_t es = dsize(t), ps = dsize(pt);
    float dw[LN_COLS] __attribute__((aligned(64))), db[LN_COLS] __attribute__((aligned(64)));
    for (int64_t blk = begin; blk < end; blk++) {
        const int64_t c0 = blk * LN_COLS, len = a->inner - c0 < LN_COLS ? a->inner - c0 : LN_COLS;
        for (int64_t j = 0; j < len; j += 16) {
            _mm512_store_ps(dw + j, _mm512_setzero_ps());
            _mm512_store_ps(db + j, _mm512_setzero_ps());
        }
        for (int64_t r = 0; r < a->outer; r++) {
            const char *x = (const char *)a->x + (size_t)(r * a->inner + c0) * es;
            const char *dy = (const char *)a->dy + (size_t)(r * a->inner + c0) * es;
            const __m512 vm = _mm512_set1_ps(a->stats[2 * r]), vr = _mm512_set1_ps(a->stats[2 * r + 1]);
            for (int64_t j = 0; j < len; j += 16) {
                const __m512 g = load16_n(t, dy + j * es, len - j, 0.0f);
                const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load16_n(t, x + j * es, len - j, 0.0f), vm), vr);
                _mm512_store_ps(dw + j, _mm512_add_ps(_mm512_load_ps(dw + j), _mm512_mul_ps(g, xhat)));
                _mm512_store_ps(db + j, _mm512_add_ps(_mm512_load_ps(db + j), g));
            }
        }
        for (int64_t j = 0; j < len; j += 16) {
            if (a->dweight != NULL)
                store16_n(pt, (char *)a->dweight + (size_t)(c0 + j) * ps, len - j, _mm512_load_ps(dw + j));
            if (a->dbias != NULL)
                store16_n(pt, (char *)a->dbias + (size_t)(c0 + j) * ps, len - j, _mm512_load_ps(db + j));
        }
    }
}

/* 0: done; -1: no memory for the statistics (the caller takes the reference) */
static int ln_bw_run(ln_bw_args *a)
{
    const int params = a->dweight != NULL || a->dbias != NULL;
    if (params && (a->stats = amp_scratch_alloc((size_t)a->outer * 2 * sizeof(float))) == NULL)
        return -1;
    run_rows(a->outer, a->inner, ln_bw_rows, a);
    if (params) {
        run_rows((a->inner + LN_COLS - 1) / LN_COLS, a->outer * LN_COLS, ln_bw_params, a);
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
TARGET static inline __m512 gelu_bw16(__m512 x, __m512 g)
{
    const __m512 cdf = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(_mm512_set1_ps(1.0f),
                                     erf16(_mm512_mul_ps(x, _mm512_set1_ps((float)0.70710678118654752440)))));
    const __m512 pdf = _mm512_mul_ps(_mm512_set1_ps((float)(1.12837916709551257390 * 0.70710678118654752440 * 0.5)),
                                     exp16(_mm512_mul_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(-0.5f))));
    return _mm512_mul_ps(g, _mm512_add_ps(cdf, _mm512_mul_ps(x, pdf)));
}

/* the reference's dy (0.5 (1 + th) + 0.5 x (1 - th th) beta (1 + 3 kappa x x)),
 * th = tanh(beta (x + kappa x x x)) */
TARGET static inline __m512 gelu_tanh_bw16(__m512 x, __m512 g)
{
    const float beta = (float)(1.41421356237309504880 * 1.12837916709551257390 * 0.5), kappa = (float)0.044715;
    const __m512 x_sq = _mm512_mul_ps(x, x), x_cube = _mm512_mul_ps(x_sq, x);
    const __m512 inner = _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(kappa), x_cube)));
    const __m512 th = tanh16(inner), one = _mm512_set1_ps(1.0f);
    const __m512 left = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
    const __m512 left_d = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(one, th));
    const __m512 right_d = _mm512_sub_ps(one, _mm512_mul_ps(th, th));
    const __m512 inner_d = _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_add_ps(one, _mm512_mul_ps(_mm512_set1_ps(3 * kappa), x_sq)));
    return _mm512_mul_ps(g, _mm512_add_ps(left_d, _mm512_mul_ps(_mm512_mul_ps(left, right_d), inner_d)));
}

#define UNARY_BW_BODY(name, f16)                                                                  \
    TARGET static void name(const void *ctx, int64_t begin, int64_t end)                          \
    {                                                                                             \
        const unary_bw_args *a = ctx;                                                             \
        const size_t es = dsize(a->t);                                                            \
        for (int64_t i = begin * 16; i < end * 16; i += 16)                                       \
            store16_all(a->t, (char *)a->dx + i * es,                                             \
                        f16(load16_all(a->t, (const char *)a->x + i * es), load16_all(a->t, (const char *)a->dy + i * es))); \
    }
UNARY_BW_BODY(gelu_bw_blocks, gelu_bw16)
UNARY_BW_BODY(gelu_tanh_bw_blocks, gelu_tanh_bw16)

TARGET static void unary_bw_run(amp_dtype t, size_t n, const void *x, const void *dy, void *dx, int tanh_form)
{
    const unary_bw_args a = { t, x, dy, dx };
    const int64_t blocks = (int64_t)(n / 16), rest = (int64_t)(n % 16);
    run_rows(blocks, 16, tanh_form ? gelu_tanh_bw_blocks : gelu_bw_blocks, &a);
    if (rest > 0) {
        const size_t es = dsize(t), off = (size_t)blocks * 16 * es;
        const __m512 v = load16_n(t, (const char *)x + off, rest, 0.0f), g = load16_n(t, (const char *)dy + off, rest, 0.0f);
        store16_n(t, (char *)dx + off, rest, tanh_form ? gelu_tanh_bw16(v, g) : gelu_bw16(v, g));
    }
}

/* ---- dropout -----------------------------------------------------------------------
 * ref_random.c's Philox4x32-10 for 16 blocks at a time (a block per lane:
 * its four words in four vectors, 64 elements), the same integer
 * operations, so the same words; element 4 b + w is kept when word w of
 * block b is >= the threshold, the four compare masks' bits interleaved
 * into element order; kept elements x * scale (f32, as the reference),
 * the others +0.  The last n % 64 elements take their words from
 * amp_random_u32. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

typedef struct {
    amp_dtype t;
    size_t n;
    const void *x;
    void *y;
    float scale;
    uint32_t threshold;
    int none; /* p >= 1: nothing kept */
    uint64_t seed, stream, offset;
} dropout_args;

/* the high and low 32 bits of m * a per lane */
TARGET static inline void mulhilo(__m512i a, uint32_t m, __m512i *hi, __m512i *lo)
{
    const __m512i vm = _mm512_set1_epi64((long long)m);
    const __m512i even = _mm512_mul_epu32(a, vm), odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), vm);
    *lo = _mm512_mask_blend_epi32((__mmask16)0xAAAA, even, _mm512_slli_epi64(odd, 32));
    *hi = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 32), odd);
}

/* bit j of m to bit 4 j */
static inline uint64_t spread4(uint64_t m)
{
    m = (m | m << 24) & 0x000000FF000000FFull;
    m = (m | m << 12) & 0x000F000F000F000Full;
    m = (m | m << 6) & 0x0303030303030303ull;
    return (m | m << 3) & 0x1111111111111111ull;
}

/* the keep bits of elements [64 g, 64 g + 64) */
TARGET static uint64_t keep_bits64(const dropout_args *a, uint64_t g)
{
    const uint64_t block = g * 16;
    __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)block),
                                  _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
    __m512i c1 = _mm512_set1_epi32((int)(((uint32_t)(block >> 32) & 0xFFu) | (uint32_t)(a->stream << 8)));
    __m512i c2 = _mm512_set1_epi32((int)(uint32_t)a->offset), c3 = _mm512_set1_epi32((int)(uint32_t)(a->offset >> 32));
    uint32_t k0 = (uint32_t)a->seed, k1 = (uint32_t)(a->seed >> 32);
    for (int round = 0; round < 10; round++) {
        __m512i hi0, lo0, hi1, lo1;
        mulhilo(c0, PHILOX_M0, &hi0, &lo0);
        mulhilo(c2, PHILOX_M1, &hi1, &lo1);
        c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32((int)k0));
        c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    if (a->none)
        return 0;
    const __m512i th = _mm512_set1_epi32((int)a->threshold);
    return spread4(_mm512_cmpge_epu32_mask(c0, th)) | spread4(_mm512_cmpge_epu32_mask(c1, th)) << 1 |
           spread4(_mm512_cmpge_epu32_mask(c2, th)) << 2 | spread4(_mm512_cmpge_epu32_mask(c3, th)) << 3;
}

TARGET static void dropout_groups(const void *ctx, int64_t begin, int64_t end)
{
    const dropout_args *a = ctx;
    const size_t es = dsize(a->t);
    const __m512 scale = _mm512_set1_ps(a->scale);
    for (int64_t g = begin; g < end; g++) {
        const uint64_t keep = keep_bits64(a, (uint64_t)g);
        for (int q = 0; q < 4; q++) {
            const size_t i = (size_t)g * 64 + (size_t)q * 16;
            const __m512 v = load16_all(a->t, (const char *)a->x + i * es);
            store16_all(a->t, (char *)a->y + i * es, _mm512_maskz_mul_ps((__mmask16)(keep >> (16 * q)), v, scale));
        }
    }
}

TARGET static void dropout_run(amp_dtype t, size_t n, const void *x, double p, uint64_t seed, uint64_t stream,
                               uint64_t offset, void *y)
{
    const uint64_t threshold = !(p > 0) ? 0 : p >= 1 ? (uint64_t)1 << 32 : (uint64_t)ceil(p * 4294967296.0);
    const dropout_args a = { t, n, x, y, p < 1 ? (float)(1.0 / (1.0 - p)) : 0.0f, (uint32_t)threshold,
                             threshold >> 32 != 0, seed, stream, offset };
    const int64_t groups = (int64_t)(n / 64);
    const size_t es = dsize(t), done = (size_t)groups * 64;
    run_rows(groups, 64, dropout_groups, &a);
    for (size_t i = done; i < n; i += 16) { /* the tail, 16 at a time */
        const int64_t m = (int64_t)(n - i) < 16 ? (int64_t)(n - i) : 16;
        uint32_t keep = 0;
        for (int64_t l = 0; l < m && !a.none; l++)
            keep |= (uint32_t)(amp_random_u32(seed, stream, offset, i + (size_t)l) >= a.threshold) << l;
        const __m512 v = load16_n(t, (const char *)x + i * es, m, 0.0f);
        store16_n(t, (char *)y + i * es, m, _mm512_maskz_mul_ps((__mmask16)keep, v, _mm512_set1_ps(a.scale)));
    }
}

/* ---- the entries ---------------------------------------------------------------- */

static int param_ok(amp_dtype pt) { return pt == AMP_F32 || pt == AMP_BF16 || pt == AMP_F16; }

#define ROWS_ENTRIES(T)                                                                           \
    static void avx512_softmax_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *x, \
                                   AMP_CTYPE_##T *y)                                              \
    {                                                                                             \
        const softmax_args a = { AMP_DTYPE_##T, dim, x, y };                                   \
        if (inner != 1 || dim <= 0 || outer <= 0) {                                               \
            amp_ref_softmax_##T(outer, dim, inner, x, y);                                         \
            return;                                                                               \
        }                                                                                         \
        run_rows(outer, dim, softmax_rows, &a);                                                   \
    }                                                                                             \
    static void avx512_layer_norm_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x,       \
                                      amp_dtype pt, const void *weight, const void *bias,         \
                                      double eps, AMP_CTYPE_##T *y)                               \
    {                                                                                             \
        const layer_norm_args a = { AMP_DTYPE_##T, pt, inner, x, weight, bias, (float)eps, y };   \
        if (inner <= 0 || outer <= 0 || ((weight != NULL || bias != NULL) && !param_ok(pt))) {    \
            amp_ref_layer_norm_##T(outer, inner, x, pt, weight, bias, eps, y);                    \
            return;                                                                               \
        }                                                                                         \
        run_rows(outer, inner, layer_norm_rows, &a);                                              \
    }                                                                                             \
    static void avx512_gelu_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)               \
    {                                                                                             \
        unary_run(AMP_DTYPE_##T, n, x, y, 0);                                                     \
    }                                                                                             \
    static void avx512_gelu_tanh_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)          \
    {                                                                                             \
        unary_run(AMP_DTYPE_##T, n, x, y, 1);                                                     \
    }
#define BACKWARD_ENTRIES(T)                                                                       \
    static void avx512_dropout_##T(size_t n, const AMP_CTYPE_##T *x, double p, uint64_t seed,     \
                                   uint64_t stream, uint64_t offset, AMP_CTYPE_##T *y)            \
    {                                                                                             \
        if (n / 4 + 16 >= ((size_t)1 << 32)) /* block numbers past 32 bits: the reference's */   \
            amp_ref_dropout_##T(n, x, p, seed, stream, offset, y);                                \
        else                                                                                      \
            dropout_run(AMP_DTYPE_##T, n, x, p, seed, stream, offset, y);                         \
    }                                                                                             \
    static void avx512_softmax_bw_##T(int take_log, int64_t outer, int64_t dim, int64_t inner,    \
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
        run_rows(outer, dim, softmax_bw_rows, &a);                                                \
    }                                                                                             \
    static void avx512_softmax_backward_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *y, \
                                            const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)           \
    {                                                                                             \
        avx512_softmax_bw_##T(0, outer, dim, inner, y, dy, dx);                                   \
    }                                                                                             \
    static void avx512_log_softmax_backward_##T(int64_t outer, int64_t dim, int64_t inner,        \
                                                const AMP_CTYPE_##T *y, const AMP_CTYPE_##T *dy,  \
                                                AMP_CTYPE_##T *dx)                                \
    {                                                                                             \
        avx512_softmax_bw_##T(1, outer, dim, inner, y, dy, dx);                                   \
    }                                                                                             \
    static void avx512_layer_norm_backward_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x, \
                                               amp_dtype pt, const void *weight, double eps,      \
                                               const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx,        \
                                               void *dweight, void *dbias)                        \
    {                                                                                             \
        ln_bw_args a = { AMP_DTYPE_##T, pt, outer, inner, x, weight, dy, (float)eps, dx, dweight, dbias, NULL }; \
        if (inner <= 0 || outer <= 0 ||                                                           \
            ((weight != NULL || dweight != NULL || dbias != NULL) && !param_ok(pt)) || ln_bw_run(&a) != 0) \
            amp_ref_layer_norm_backward_##T(outer, inner, x, pt, weight, eps, dy, dx, dweight, dbias); \
    }                                                                                             \
    static void avx512_gelu_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y, \
                                         const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)              \
    {                                                                                             \
        (void)y;                                                                                  \
        unary_bw_run(AMP_DTYPE_##T, n, x, dy, dx, 0);                                             \
    }                                                                                             \
    static void avx512_gelu_tanh_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y, \
                                              const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)         \
    {                                                                                             \
        (void)y;                                                                                  \
        unary_bw_run(AMP_DTYPE_##T, n, x, dy, dx, 1);                                             \
    }

ROWS_ENTRIES(f32)
ROWS_ENTRIES(bf16)
ROWS_ENTRIES(f16)
BACKWARD_ENTRIES(f32)
BACKWARD_ENTRIES(bf16)
BACKWARD_ENTRIES(f16)

/* This file's kernels of the AVX-512 sets: X(kernel, implementation). */
#define ROWS_OF(X, T)                                                                             \
    X(softmax_##T, avx512_softmax_##T)                                                            \
    X(layer_norm_##T, avx512_layer_norm_##T)                                                      \
    X(gelu_##T, avx512_gelu_##T)                                                                  \
    X(gelu_tanh_##T, avx512_gelu_tanh_##T)                                                        \
    X(softmax_backward_##T, avx512_softmax_backward_##T)                                          \
    X(log_softmax_backward_##T, avx512_log_softmax_backward_##T)                                  \
    X(layer_norm_backward_##T, avx512_layer_norm_backward_##T)                                    \
    X(gelu_backward_##T, avx512_gelu_backward_##T)                                                \
    X(gelu_tanh_backward_##T, avx512_gelu_tanh_backward_##T)                                      \
    X(dropout_##T, avx512_dropout_##T)
#define ROWS_KERNELS(X) ROWS_OF(X, f32) ROWS_OF(X, bf16) ROWS_OF(X, f16)
#define DEFINE(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
ROWS_KERNELS(DEFINE)
#undef DEFINE

void amp_isa_avx512_fill_rows(amp_kernel_table *t)
{
#define INSTALL(name, impl) AMP_ISA_INSTALL(t, avx512, name);
    ROWS_KERNELS(INSTALL)
#undef INSTALL
}

#endif /* x86 */
