/*
 * rows_form.h - the x86 kernel sets' kernels of a transformer's rows,
 * written once over a set's vector operations: softmax along the last
 * axis, layer_norm, gelu and gelu_tanh; their gradients softmax_backward,
 * log_softmax_backward, layer_norm_backward, gelu_backward and
 * gelu_tanh_backward; dropout's driver; and the table entries with their
 * ways to the reference and the list of the kernels they fill.
 * x86/avx2_rows.c (8 lanes) and x86/avx512_rows.c (16) instantiate it.
 *
 * Bit for bit the reference (ref_softmax.inc, ref_norm.inc,
 * ref_unary.inc, ref_backward_unary.inc, ref_backward_norm.inc,
 * ref_random.c): the references add a row up in 16 lanes, folded in
 * halves (amp_mathf.h), which is RK = 16 / RW vectors here (elements
 * 16i + h RW .. 16i + h RW + RW - 1 in vector h), folded by the set's
 * rows_fold16; a parameter's gradient over the rows is summed in row
 * order, a column per lane; every f32 operation is one of the set's
 * intrinsics, so nothing is contracted into FMA.  softmax keeps a row's
 * exp(x - max) in a stack buffer between its sum and its outputs (rows
 * up to ROWS_CACHE; the reference computes it twice, to the same bits);
 * layer_norm_backward keeps each row's mean and rstd (a scratch buffer)
 * between its dx pass and its parameters' pass (blocks of ROWS_LN_COLS
 * columns).  dropout runs ref_random.c's Philox4x32-10 for RW blocks at
 * a time (a block per lane: its four words in four vectors, 4 RW
 * elements), the same integer operations, so the same words; element
 * 4 b + w is kept when word w of block b is >= the threshold, the four
 * compare masks' bits interleaved into element order; kept elements
 * x * scale (f32, as the reference), the others +0; the last n % (4 RW)
 * elements take their words from amp_random_u32.  Other layouts (softmax over an
 * inner axis, other parameter dtypes, block numbers past 32 bits) go to
 * the reference.
 *
 * A template, included once by each set's file after it has defined:
 *   RV, RW, RK          the f32 vector type, its lanes, 16 / RW
 *   ROWS_TARGET         the target attribute of the set's functions
 *   RV_ADD, RV_SUB, RV_MUL, RV_DIV, RV_MAX (a, b), RV_DUP(float),
 *   RV_ZERO(), RV_LDA(p), RV_STA(p, v) (aligned f32), RV_STU(p, v)
 *   rows_size(t)                     bytes of an element of dtype t
 *   rows_load(t, p), rows_store(t, p, v)   RW elements of dtype t
 *   rows_load_n(t, p, n, fill), rows_store_n(t, p, n, v)   the first n
 *                       (n may exceed RW; n <= 0: none), other lanes fill
 *   rows_add_n(s, v, n)  s + v in the first n lanes, s in the others
 *   rows_fold16(const RV s[RK])  the 16 lanes folded as AMP_ROW_FOLD
 *   rows_exp, rows_erf, rows_tanh (v)  amp_expf, amp_erff, amp_tanhf
 *                       per lane (a NaN lane keeps its NaN)
 *   rows_run(n, unit, body, ctx)  body(ctx, begin, end) over [0, n)
 *                       units of `unit` elements, on the pool when big
 *   RV_KEEP             an unsigned type of 4 RW bits (dropout's)
 *   RI, RI_DUP(uint32_t), RI_XOR(a, b), RI_IOTA(), rows_add_i32(a, b)
 *                       RW lanes of 32-bit integers, a value in each,
 *                       xor, 0 .. RW - 1, sum
 *   rows_mulhilo(a, m, hi, lo)  the high and low 32 bits of m a per lane
 *   rows_at_least(w, th)  the lanes of w >= th (unsigned) as RW bits
 *   rows_keep_mul(bits, v, s)  v s in the lanes of the low RW bits, +0
 *                       in the others
 * Needs amprt_internal.h and amp_mathf.h.
 */
#ifndef AMPRT_FRAME_ROWS_FORM_H
#define AMPRT_FRAME_ROWS_FORM_H

#include <math.h>
#include <stdint.h>

#define ROWS_CACHE 4096
#define ROWS_LN_COLS 256
/* before a loop over a row's RK vectors: unrolled, so that they stay in
 * registers (a loop kept would hold them in memory: avx2's layer_norm
 * took 1.4 times as long) */
#define ROWS_EACH_VECTOR _Pragma("GCC unroll 4")

/* ---- softmax over the last axis -------------------------------------- */

typedef struct {
    amp_dtype t;
    int64_t dim;
    const void *x;
    void *y;
} rows_softmax_args;

ROWS_TARGET static void softmax_row(const rows_softmax_args *a, const char *x, char *y)
{
    const amp_dtype t = a->t;
    const int64_t dim = a->dim;
    const size_t es = rows_size(t);
    float cache[ROWS_CACHE] __attribute__((aligned(64)));
    const int cached = dim <= ROWS_CACHE;
    float lanes[16], max, sum;
    RV m[RK], s[RK];
    int64_t d;
    ROWS_EACH_VECTOR
    for (int h = 0; h < RK; h++) {
        m[h] = RV_DUP(-INFINITY);
        s[h] = RV_ZERO();
    }
    for (d = 0; d < dim; d += 16) /* RV_MAX(v, m): v > m ? v : m, as the reference's lanes */
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++)
            m[h] = RV_MAX(rows_load_n(t, x + (d + h * RW) * es, dim - d - h * RW, -INFINITY), m[h]);
    ROWS_EACH_VECTOR
    for (int h = 0; h < RK; h++)
        RV_STU(lanes + h * RW, m[h]);
    max = lanes[0];
    for (int j = 1; j < 16; j++)
        if (lanes[j] > max)
            max = lanes[j];
    const RV vmax = RV_DUP(max);
    for (d = 0; d < dim; d += 16)
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++) {
            const int64_t dd = d + h * RW, n = dim - dd;
            if (n > 0) {
                const RV e = rows_exp(RV_SUB(rows_load_n(t, x + dd * es, n, 0.0f), vmax));
                s[h] = rows_add_n(s[h], e, n);
                if (cached)
                    RV_STA(cache + dd, e);
            }
        }
    sum = rows_fold16(s);
    const RV vs = RV_DUP(sum);
    for (d = 0; d < dim; d += RW) {
        const RV e = cached ? RV_LDA(cache + d) : rows_exp(RV_SUB(rows_load_n(t, x + d * es, dim - d, 0.0f), vmax));
        rows_store_n(t, y + d * es, dim - d, RV_DIV(e, vs));
    }
}

static void softmax_rows(const void *ctx, size_t begin, size_t end)
{
    const rows_softmax_args *a = ctx;
    const size_t row = (size_t)a->dim * rows_size(a->t);
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
} rows_layer_norm_args;

ROWS_TARGET static void layer_norm_row(const rows_layer_norm_args *a, const char *x, char *y)
{
    const amp_dtype t = a->t, pt = a->pt;
    const int64_t n = a->inner;
    const size_t es = rows_size(t), ps = rows_size(pt);
    RV s[RK], q[RK];
    int64_t i;
    ROWS_EACH_VECTOR
    for (int h = 0; h < RK; h++)
        s[h] = q[h] = RV_ZERO();
    for (i = 0; i < n; i += 16) /* absent lanes add +0: no change */
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++)
            s[h] = RV_ADD(s[h], rows_load_n(t, x + (i + h * RW) * es, n - i - h * RW, 0.0f));
    const float mean = rows_fold16(s) / (float)n;
    const RV vm = RV_DUP(mean);
    for (i = 0; i < n; i += 16) /* absent lanes: mean - mean = +0 */
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++) {
            const RV d = RV_SUB(rows_load_n(t, x + (i + h * RW) * es, n - i - h * RW, mean), vm);
            q[h] = RV_ADD(q[h], RV_MUL(d, d));
        }
    const float rstd = 1 / sqrtf(rows_fold16(q) / (float)n + a->eps);
    const RV vr = RV_DUP(rstd);
    for (i = 0; i < n; i += RW) {
        RV r = RV_MUL(RV_SUB(rows_load_n(t, x + i * es, n - i, 0.0f), vm), vr);
        if (a->weight != NULL)
            r = RV_MUL(r, rows_load_n(pt, (const char *)a->weight + i * ps, n - i, 0.0f));
        if (a->bias != NULL)
            r = RV_ADD(r, rows_load_n(pt, (const char *)a->bias + i * ps, n - i, 0.0f));
        rows_store_n(t, y + i * es, n - i, r);
    }
}

static void layer_norm_rows(const void *ctx, size_t begin, size_t end)
{
    const rows_layer_norm_args *a = ctx;
    const size_t row = (size_t)a->inner * rows_size(a->t);
    for (size_t r = begin; r < end; r++)
        layer_norm_row(a, (const char *)a->x + r * row, (char *)a->y + r * row);
}

/* ---- gelu, gelu_tanh and their gradients ------------------------------------ */

#define ROWS_BETA ((float)(1.41421356237309504880 * 1.12837916709551257390 * 0.5))
#define ROWS_KAPPA ((float)0.044715)

/* the reference's x * 0.5 * (1 + erf(x * (1/sqrt 2))) */
ROWS_TARGET static inline RV gelu_v(RV x)
{
    const RV e = rows_erf(RV_MUL(x, RV_DUP((float)0.70710678118654752440)));
    return RV_MUL(RV_MUL(x, RV_DUP(0.5f)), RV_ADD(RV_DUP(1.0f), e));
}

/* the reference's 0.5 * x * (1 + tanh(beta * (x + kappa * (x * x * x)))) */
ROWS_TARGET static inline RV gelu_tanh_v(RV x)
{
    const RV cube = RV_MUL(RV_MUL(x, x), x);
    const RV inner = RV_MUL(RV_DUP(ROWS_BETA), RV_ADD(x, RV_MUL(RV_DUP(ROWS_KAPPA), cube)));
    return RV_MUL(RV_MUL(RV_DUP(0.5f), x), RV_ADD(RV_DUP(1.0f), rows_tanh(inner)));
}

/* the reference's dy (cdf + x pdf), cdf = 0.5 (1 + erf(x alpha)), pdf =
 * beta exp(x x -0.5) */
ROWS_TARGET static inline RV gelu_bw_v(RV x, RV g)
{
    const RV cdf = RV_MUL(RV_DUP(0.5f), RV_ADD(RV_DUP(1.0f), rows_erf(RV_MUL(x, RV_DUP((float)0.70710678118654752440)))));
    const RV pdf = RV_MUL(RV_DUP((float)(1.12837916709551257390 * 0.70710678118654752440 * 0.5)),
                          rows_exp(RV_MUL(RV_MUL(x, x), RV_DUP(-0.5f))));
    return RV_MUL(g, RV_ADD(cdf, RV_MUL(x, pdf)));
}

/* the reference's dy (0.5 (1 + th) + 0.5 x (1 - th th) beta (1 + 3 kappa x x)),
 * th = tanh(beta (x + kappa x x x)) */
ROWS_TARGET static inline RV gelu_tanh_bw_v(RV x, RV g)
{
    const RV x_sq = RV_MUL(x, x), x_cube = RV_MUL(x_sq, x);
    const RV inner = RV_MUL(RV_DUP(ROWS_BETA), RV_ADD(x, RV_MUL(RV_DUP(ROWS_KAPPA), x_cube)));
    const RV th = rows_tanh(inner), one = RV_DUP(1.0f);
    const RV left = RV_MUL(RV_DUP(0.5f), x);
    const RV left_d = RV_MUL(RV_DUP(0.5f), RV_ADD(one, th));
    const RV right_d = RV_SUB(one, RV_MUL(th, th));
    const RV inner_d = RV_MUL(RV_DUP(ROWS_BETA), RV_ADD(one, RV_MUL(RV_DUP(3 * ROWS_KAPPA), x_sq)));
    return RV_MUL(g, RV_ADD(left_d, RV_MUL(RV_MUL(left, right_d), inner_d)));
}

typedef struct {
    amp_dtype t;
    const void *x, *dy; /* dy: the gradients' */
    void *y;
} rows_unary_args;

/* whole vectors [begin, end) of x (and dy) into y */
#define ROWS_UNARY_BLOCKS(name, f)                                                                \
    ROWS_TARGET static void name(const void *ctx, size_t begin, size_t end)                       \
    {                                                                                             \
        const rows_unary_args *a = ctx;                                                           \
        const size_t es = rows_size(a->t);                                                        \
        for (size_t i = begin * RW; i < end * RW; i += RW)                                        \
            rows_store(a->t, (char *)a->y + i * es, f(rows_load(a->t, (const char *)a->x + i * es)));  \
    }
#define ROWS_UNARY_BW_BLOCKS(name, f)                                                             \
    ROWS_TARGET static void name(const void *ctx, size_t begin, size_t end)                       \
    {                                                                                             \
        const rows_unary_args *a = ctx;                                                           \
        const size_t es = rows_size(a->t);                                                        \
        for (size_t i = begin * RW; i < end * RW; i += RW)                                        \
            rows_store(a->t, (char *)a->y + i * es,                                               \
                       f(rows_load(a->t, (const char *)a->x + i * es), rows_load(a->t, (const char *)a->dy + i * es))); \
    }
ROWS_UNARY_BLOCKS(gelu_blocks, gelu_v)
ROWS_UNARY_BLOCKS(gelu_tanh_blocks, gelu_tanh_v)
ROWS_UNARY_BW_BLOCKS(gelu_bw_blocks, gelu_bw_v)
ROWS_UNARY_BW_BLOCKS(gelu_tanh_bw_blocks, gelu_tanh_bw_v)

/* n elements of the forward (grad 0) or the gradient (grad 1, from dy):
 * whole vectors on the pool, the tail here */
ROWS_TARGET static void unary_run(amp_dtype t, size_t n, const void *x, const void *dy, void *y, int grad, int tanh_form)
{
    const rows_unary_args a = { t, x, dy, y };
    const size_t blocks = n / RW, es = rows_size(t), off = blocks * RW * es;
    const int64_t rest = (int64_t)(n % RW);
    if (!grad)
        rows_run(blocks, RW, tanh_form ? gelu_tanh_blocks : gelu_blocks, &a);
    else
        rows_run(blocks, RW, tanh_form ? gelu_tanh_bw_blocks : gelu_bw_blocks, &a);
    if (rest > 0) {
        const RV v = rows_load_n(t, (const char *)x + off, rest, 0.0f);
        RV r;
        if (!grad)
            r = tanh_form ? gelu_tanh_v(v) : gelu_v(v);
        else {
            const RV g = rows_load_n(t, (const char *)dy + off, rest, 0.0f);
            r = tanh_form ? gelu_tanh_bw_v(v, g) : gelu_bw_v(v, g);
        }
        rows_store_n(t, (char *)y + off, rest, r);
    }
}

/* ---- softmax_backward, log_softmax_backward ---------------------------------- */

typedef struct {
    amp_dtype t;
    int64_t dim;
    int take_log;
    const void *y, *dy;
    void *dx;
} rows_softmax_bw_args;

/* ref_backward_unary.inc's softmax_backward: the row's sum of dy y (dy
 * for log_softmax) in 16 lanes, folded (a lane past the row adds
 * nothing, as the reference's lanes: adding +0 would turn a -0 sum into
 * +0); then y (dy - sum), or dy - exp(y) sum */
ROWS_TARGET static AMP_ALWAYS_INLINE void softmax_bw_row(const amp_dtype t, const int take_log, const int64_t dim,
                                                         const char *y, const char *dy, char *dx)
{
    const size_t es = rows_size(t);
    RV s[RK];
    int64_t d;
    ROWS_EACH_VECTOR
    for (int h = 0; h < RK; h++)
        s[h] = RV_ZERO();
    for (d = 0; d < dim; d += 16)
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++) {
            const int64_t dd = d + h * RW;
            const RV g = rows_load_n(t, dy + dd * es, dim - dd, 0.0f);
            s[h] = rows_add_n(s[h], take_log ? g : RV_MUL(g, rows_load_n(t, y + dd * es, dim - dd, 0.0f)), dim - dd);
        }
    const RV vs = RV_DUP(rows_fold16(s));
    for (d = 0; d < dim; d += RW) {
        const RV g = rows_load_n(t, dy + d * es, dim - d, 0.0f), yv = rows_load_n(t, y + d * es, dim - d, 0.0f);
        const RV r = take_log ? RV_SUB(g, RV_MUL(rows_exp(yv), vs)) : RV_MUL(yv, RV_SUB(g, vs));
        rows_store_n(t, dx + d * es, dim - d, r);
    }
}

ROWS_TARGET static AMP_ALWAYS_INLINE void softmax_bw_rows_of(const amp_dtype t, const int take_log,
                                                             const rows_softmax_bw_args *a, size_t begin, size_t end)
{
    const size_t row = (size_t)a->dim * rows_size(t);
    for (size_t r = begin; r < end; r++)
        softmax_bw_row(t, take_log, a->dim, (const char *)a->y + r * row, (const char *)a->dy + r * row,
                       (char *)a->dx + r * row);
}

/* a loop of its own per dtype and form (t and take_log constants in each:
 * no switch on the dtype in the row's loads) */
ROWS_TARGET static void softmax_bw_rows(const void *ctx, size_t begin, size_t end)
{
    const rows_softmax_bw_args *a = ctx;
#define ROWS_SM_BW_OF(T)                                                                          \
    do {                                                                                          \
        if (a->take_log)                                                                          \
            softmax_bw_rows_of(T, 1, a, begin, end);                                              \
        else                                                                                      \
            softmax_bw_rows_of(T, 0, a, begin, end);                                              \
    } while (0)
    switch (a->t) {
    case AMP_BF16: ROWS_SM_BW_OF(AMP_BF16); break;
    case AMP_F16: ROWS_SM_BW_OF(AMP_F16); break;
    default: ROWS_SM_BW_OF(AMP_F32); break;
    }
#undef ROWS_SM_BW_OF
}

/* ---- layer_norm_backward --------------------------------------------------------
 * Two passes, as ref_backward_norm.inc: dx row by row (the statistics,
 * the row's sums of g = dy w and g xhat, all in 16 lanes folded),
 * keeping each row's mean and rstd; then dweight and dbias, a block of
 * columns per task, each column summed over the rows in row order (a
 * column per lane). */

typedef struct {
    amp_dtype t, pt;
    int64_t outer, inner;
    const void *x, *weight, *dy;
    float eps;
    void *dx, *dweight, *dbias;
    float *stats; /* mean, rstd per row */
} rows_ln_bw_args;

/* g = dy w (dy without a weight) of columns [i, i + RW) of a row of n */
ROWS_TARGET static AMP_ALWAYS_INLINE RV ln_g(amp_dtype t, amp_dtype pt, const void *weight, const char *dy, int64_t i, int64_t n)
{
    const RV g = rows_load_n(t, dy + (size_t)i * rows_size(t), n - i, 0.0f);
    if (weight == NULL)
        return g;
    return RV_MUL(g, rows_load_n(pt, (const char *)weight + (size_t)i * rows_size(pt), n - i, 0.0f));
}

ROWS_TARGET static AMP_ALWAYS_INLINE void ln_bw_row(const amp_dtype t, const amp_dtype pt, const rows_ln_bw_args *a,
                                                    size_t row)
{
    const int64_t n = a->inner;
    const void *weight = a->weight; /* locals: the stores to dx may alias *a */
    const size_t es = rows_size(t);
    const char *x = (const char *)a->x + row * (size_t)n * es, *dy = (const char *)a->dy + row * (size_t)n * es;
    char *dx = (char *)a->dx + row * (size_t)n * es;
    RV s[RK], q[RK], sg[RK], sgx[RK];
    int64_t i;
    ROWS_EACH_VECTOR
    for (int h = 0; h < RK; h++)
        s[h] = q[h] = sg[h] = sgx[h] = RV_ZERO();
    for (i = 0; i < n; i += 16)
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++)
            s[h] = rows_add_n(s[h], rows_load_n(t, x + (i + h * RW) * es, n - i - h * RW, 0.0f), n - i - h * RW);
    const float mean = rows_fold16(s) / (float)n;
    const RV vm = RV_DUP(mean);
    for (i = 0; i < n; i += 16)
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++) {
            const int64_t ii = i + h * RW;
            const RV d = RV_SUB(rows_load_n(t, x + ii * es, n - ii, 0.0f), vm);
            q[h] = rows_add_n(q[h], RV_MUL(d, d), n - ii);
        }
    const float rstd = 1 / sqrtf(rows_fold16(q) / (float)n + a->eps);
    const RV vr = RV_DUP(rstd);
    for (i = 0; i < n; i += 16)
        ROWS_EACH_VECTOR
        for (int h = 0; h < RK; h++) {
            const int64_t ii = i + h * RW;
            const RV g = ln_g(t, pt, weight, dy, ii, n);
            const RV xhat = RV_MUL(RV_SUB(rows_load_n(t, x + ii * es, n - ii, 0.0f), vm), vr);
            sg[h] = rows_add_n(sg[h], g, n - ii);
            sgx[h] = rows_add_n(sgx[h], RV_MUL(g, xhat), n - ii);
        }
    const RV mg = RV_DUP(rows_fold16(sg) / (float)n), mgx = RV_DUP(rows_fold16(sgx) / (float)n);
    for (i = 0; i < n; i += RW) {
        const RV g = ln_g(t, pt, weight, dy, i, n);
        const RV xhat = RV_MUL(RV_SUB(rows_load_n(t, x + i * es, n - i, 0.0f), vm), vr);
        rows_store_n(t, dx + i * es, n - i, RV_MUL(vr, RV_SUB(RV_SUB(g, mg), RV_MUL(xhat, mgx))));
    }
    if (a->stats != NULL) {
        a->stats[2 * row] = mean;
        a->stats[2 * row + 1] = rstd;
    }
}

/* a loop of its own per dtype and parameter dtype (constants in each) */
ROWS_TARGET static void ln_bw_rows(const void *ctx, size_t begin, size_t end)
{
    const rows_ln_bw_args *a = ctx;
#define ROWS_LN_BW_ROWS(T, PT)                                                                    \
    for (size_t r = begin; r < end; r++)                                                          \
        ln_bw_row(T, PT, a, r)
#define ROWS_LN_BW_OF(T)                                                                          \
    switch (a->pt) {                                                                              \
    case AMP_BF16: ROWS_LN_BW_ROWS(T, AMP_BF16); break;                                           \
    case AMP_F16: ROWS_LN_BW_ROWS(T, AMP_F16); break;                                             \
    default: ROWS_LN_BW_ROWS(T, AMP_F32); break;                                                  \
    }
    switch (a->t) {
    case AMP_BF16: ROWS_LN_BW_OF(AMP_BF16) break;
    case AMP_F16: ROWS_LN_BW_OF(AMP_F16) break;
    default: ROWS_LN_BW_OF(AMP_F32) break;
    }
#undef ROWS_LN_BW_OF
#undef ROWS_LN_BW_ROWS
}

/* dweight, dbias of the column blocks [begin, end) of ROWS_LN_COLS columns */
ROWS_TARGET static void ln_bw_params(const void *ctx, size_t begin, size_t end)
{
    const rows_ln_bw_args *a = ctx;
    const amp_dtype t = a->t, pt = a->pt;
    const size_t es = rows_size(t), ps = rows_size(pt);
    float dw[ROWS_LN_COLS] __attribute__((aligned(64))), db[ROWS_LN_COLS] __attribute__((aligned(64)));
    for (size_t blk = begin; blk < end; blk++) {
        const int64_t c0 = (int64_t)blk * ROWS_LN_COLS, len = a->inner - c0 < ROWS_LN_COLS ? a->inner - c0 : ROWS_LN_COLS;
        for (int64_t j = 0; j < len; j += RW) {
            RV_STA(dw + j, RV_ZERO());
            RV_STA(db + j, RV_ZERO());
        }
        for (int64_t r = 0; r < a->outer; r++) {
            const char *x = (const char *)a->x + (size_t)(r * a->inner + c0) * es;
            const char *dy = (const char *)a->dy + (size_t)(r * a->inner + c0) * es;
            const RV vm = RV_DUP(a->stats[2 * r]), vr = RV_DUP(a->stats[2 * r + 1]);
            for (int64_t j = 0; j < len; j += RW) {
                const RV g = rows_load_n(t, dy + j * es, len - j, 0.0f);
                const RV xhat = RV_MUL(RV_SUB(rows_load_n(t, x + j * es, len - j, 0.0f), vm), vr);
                RV_STA(dw + j, RV_ADD(RV_LDA(dw + j), RV_MUL(g, xhat)));
                RV_STA(db + j, RV_ADD(RV_LDA(db + j), g));
            }
        }
        for (int64_t j = 0; j < len; j += RW) {
            if (a->dweight != NULL)
                rows_store_n(pt, (char *)a->dweight + (size_t)(c0 + j) * ps, len - j, RV_LDA(dw + j));
            if (a->dbias != NULL)
                rows_store_n(pt, (char *)a->dbias + (size_t)(c0 + j) * ps, len - j, RV_LDA(db + j));
        }
    }
}

/* 0: done; -1: no memory for the statistics (the caller takes the reference) */
static int ln_bw_run(rows_ln_bw_args *a)
{
    const int params = a->dweight != NULL || a->dbias != NULL;
    if (params && (a->stats = amp_scratch_alloc((size_t)a->outer * 2 * sizeof(float))) == NULL)
        return -1;
    rows_run((size_t)a->outer, (size_t)a->inner, ln_bw_rows, a);
    if (params) {
        rows_run((size_t)((a->inner + ROWS_LN_COLS - 1) / ROWS_LN_COLS), (size_t)a->outer * ROWS_LN_COLS, ln_bw_params, a);
        amp_scratch_free(a->stats);
    }
    return 0;
}

/* ---- dropout ----------------------------------------------------------------- */

struct rows_dropout_args {
    amp_dtype t;
    const void *x;
    void *y;
    float scale;
    uint32_t threshold;
    int none; /* p >= 1: nothing kept */
    uint64_t seed, stream, offset;
};

#define ROWS_PHILOX_M0 0xD2511F53u
#define ROWS_PHILOX_M1 0xCD9E8D57u
#define ROWS_PHILOX_W0 0x9E3779B9u
#define ROWS_PHILOX_W1 0xBB67AE85u

/* bit j of m (RW bits) to bit 4 j, in RV_KEEP's width (the first step
 * only for 16 bits) */
static inline RV_KEEP rows_spread4(RV_KEEP m)
{
    if (RW > 8)
        m = (RV_KEEP)((m | m << 24) & 0x000000FF000000FFull);
    m = (RV_KEEP)((m | m << 12) & 0x000F000F000F000Full);
    m = (RV_KEEP)((m | m << 6) & 0x0303030303030303ull);
    return (RV_KEEP)((m | m << 3) & 0x1111111111111111ull);
}

/* the keep bits of elements [4 RW g, 4 RW g + 4 RW) */
ROWS_TARGET static RV_KEEP dropout_keep_bits(const struct rows_dropout_args *a, uint64_t g)
{
    const uint64_t block = g * RW;
    RI c0 = rows_add_i32(RI_DUP((uint32_t)block), RI_IOTA());
    RI c1 = RI_DUP(((uint32_t)(block >> 32) & 0xFFu) | (uint32_t)(a->stream << 8));
    RI c2 = RI_DUP((uint32_t)a->offset), c3 = RI_DUP((uint32_t)(a->offset >> 32));
    uint32_t k0 = (uint32_t)a->seed, k1 = (uint32_t)(a->seed >> 32);
    for (int round = 0; round < 10; round++) {
        RI hi0, lo0, hi1, lo1;
        rows_mulhilo(c0, ROWS_PHILOX_M0, &hi0, &lo0);
        rows_mulhilo(c2, ROWS_PHILOX_M1, &hi1, &lo1);
        c0 = RI_XOR(RI_XOR(hi1, c1), RI_DUP(k0));
        c2 = RI_XOR(RI_XOR(hi0, c3), RI_DUP(k1));
        c1 = lo1;
        c3 = lo0;
        k0 += ROWS_PHILOX_W0;
        k1 += ROWS_PHILOX_W1;
    }
    if (a->none)
        return 0;
    const RI th = RI_DUP(a->threshold);
    return rows_spread4(rows_at_least(c0, th)) | rows_spread4(rows_at_least(c1, th)) << 1 |
           rows_spread4(rows_at_least(c2, th)) << 2 | rows_spread4(rows_at_least(c3, th)) << 3;
}

ROWS_TARGET static void dropout_groups(const void *ctx, size_t begin, size_t end)
{
    const struct rows_dropout_args *a = ctx;
    const size_t es = rows_size(a->t);
    const RV scale = RV_DUP(a->scale);
    for (size_t g = begin; g < end; g++) {
        const RV_KEEP keep = dropout_keep_bits(a, (uint64_t)g);
        for (int q = 0; q < 4; q++) {
            const size_t i = g * 4 * RW + (size_t)q * RW;
            const RV v = rows_load(a->t, (const char *)a->x + i * es);
            rows_store(a->t, (char *)a->y + i * es, rows_keep_mul((RV_KEEP)(keep >> (RW * q)), v, scale));
        }
    }
}

ROWS_TARGET static void dropout_run(amp_dtype t, size_t n, const void *x, double p, uint64_t seed, uint64_t stream,
                                    uint64_t offset, void *y)
{
    const uint64_t threshold = !(p > 0) ? 0 : p >= 1 ? (uint64_t)1 << 32 : (uint64_t)ceil(p * 4294967296.0);
    const struct rows_dropout_args a = { t, x, y, p < 1 ? (float)(1.0 / (1.0 - p)) : 0.0f, (uint32_t)threshold,
                                         threshold >> 32 != 0, seed, stream, offset };
    const size_t groups = n / (4 * RW), es = rows_size(t);
    rows_run(groups, 4 * RW, dropout_groups, &a);
    for (size_t i = groups * 4 * RW; i < n; i += RW) { /* the tail, RW at a time */
        const int64_t m = (int64_t)(n - i) < RW ? (int64_t)(n - i) : RW;
        uint32_t keep = 0;
        for (int64_t l = 0; l < m && !a.none; l++)
            keep |= (uint32_t)(amp_random_u32(seed, stream, offset, i + (size_t)l) >= a.threshold) << l;
        const RV v = rows_load_n(t, (const char *)x + i * es, m, 0.0f);
        rows_store_n(t, (char *)y + i * es, m, rows_keep_mul((RV_KEEP)keep, v, RV_DUP(a.scale)));
    }
}

/* ---- the entries ---------------------------------------------------------------- */

static int param_ok(amp_dtype pt) { return pt == AMP_F32 || pt == AMP_BF16 || pt == AMP_F16; }

#define ROWS_ENTRIES(T)                                                                           \
    static void softmax_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y) \
    {                                                                                             \
        const rows_softmax_args a = { AMP_DTYPE_##T, dim, x, y };                                 \
        if (inner != 1 || dim <= 0 || outer <= 0) {                                               \
            amp_ref_softmax_##T(outer, dim, inner, x, y);                                         \
            return;                                                                               \
        }                                                                                         \
        rows_run((size_t)outer, (size_t)dim, softmax_rows, &a);                                   \
    }                                                                                             \
    static void layer_norm_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x, amp_dtype pt, \
                               const void *weight, const void *bias, double eps, AMP_CTYPE_##T *y) \
    {                                                                                             \
        const rows_layer_norm_args a = { AMP_DTYPE_##T, pt, inner, x, weight, bias, (float)eps, y }; \
        if (inner <= 0 || outer <= 0 || ((weight != NULL || bias != NULL) && !param_ok(pt))) {    \
            amp_ref_layer_norm_##T(outer, inner, x, pt, weight, bias, eps, y);                    \
            return;                                                                               \
        }                                                                                         \
        rows_run((size_t)outer, (size_t)inner, layer_norm_rows, &a);                              \
    }                                                                                             \
    static void gelu_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                      \
    {                                                                                             \
        unary_run(AMP_DTYPE_##T, n, x, NULL, y, 0, 0);                                               \
    }                                                                                             \
    static void gelu_tanh_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                 \
    {                                                                                             \
        unary_run(AMP_DTYPE_##T, n, x, NULL, y, 0, 1);                                               \
    }
#define ROWS_BACKWARD_ENTRIES(T)                                                                  \
    static void dropout_##T(size_t n, const AMP_CTYPE_##T *x, double p, uint64_t seed, uint64_t stream, \
                            uint64_t offset, AMP_CTYPE_##T *y)                                    \
    {                                                                                             \
        if (n / 4 + RW >= ((size_t)1 << 32)) /* block numbers past 32 bits: the reference's */   \
            amp_ref_dropout_##T(n, x, p, seed, stream, offset, y);                                \
        else                                                                                      \
            dropout_run(AMP_DTYPE_##T, n, x, p, seed, stream, offset, y);                         \
    }                                                                                             \
    static void softmax_bw_##T(int take_log, int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *y, \
                               const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                        \
    {                                                                                             \
        const rows_softmax_bw_args a = { AMP_DTYPE_##T, dim, take_log, y, dy, dx };               \
        if (inner != 1 || dim <= 0 || outer <= 0) {                                               \
            if (take_log)                                                                         \
                amp_ref_log_softmax_backward_##T(outer, dim, inner, y, dy, dx);                   \
            else                                                                                  \
                amp_ref_softmax_backward_##T(outer, dim, inner, y, dy, dx);                       \
            return;                                                                               \
        }                                                                                         \
        rows_run((size_t)outer, (size_t)dim, softmax_bw_rows, &a);                                \
    }                                                                                             \
    static void softmax_backward_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *y, \
                                     const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                  \
    {                                                                                             \
        softmax_bw_##T(0, outer, dim, inner, y, dy, dx);                                          \
    }                                                                                             \
    static void log_softmax_backward_##T(int64_t outer, int64_t dim, int64_t inner, const AMP_CTYPE_##T *y, \
                                         const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)              \
    {                                                                                             \
        softmax_bw_##T(1, outer, dim, inner, y, dy, dx);                                          \
    }                                                                                             \
    static void layer_norm_backward_##T(int64_t outer, int64_t inner, const AMP_CTYPE_##T *x, amp_dtype pt, \
                                        const void *weight, double eps, const AMP_CTYPE_##T *dy,  \
                                        AMP_CTYPE_##T *dx, void *dweight, void *dbias)            \
    {                                                                                             \
        rows_ln_bw_args a = { AMP_DTYPE_##T, pt, outer, inner, x, weight, dy, (float)eps, dx, dweight, dbias, NULL }; \
        if (inner <= 0 || outer <= 0 ||                                                           \
            ((weight != NULL || dweight != NULL || dbias != NULL) && !param_ok(pt)) || ln_bw_run(&a) != 0) \
            amp_ref_layer_norm_backward_##T(outer, inner, x, pt, weight, eps, dy, dx, dweight, dbias); \
    }                                                                                             \
    static void gelu_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,       \
                                  const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                     \
    {                                                                                             \
        (void)y;                                                                                  \
        unary_run(AMP_DTYPE_##T, n, x, dy, dx, 1, 0);                                                \
    }                                                                                             \
    static void gelu_tanh_backward_##T(size_t n, const AMP_CTYPE_##T *x, const AMP_CTYPE_##T *y,  \
                                       const AMP_CTYPE_##T *dy, AMP_CTYPE_##T *dx)                \
    {                                                                                             \
        (void)y;                                                                                  \
        unary_run(AMP_DTYPE_##T, n, x, dy, dx, 1, 1);                                                \
    }

ROWS_ENTRIES(f32)
ROWS_ENTRIES(bf16)
ROWS_ENTRIES(f16)
ROWS_BACKWARD_ENTRIES(f32)
ROWS_BACKWARD_ENTRIES(bf16)
ROWS_BACKWARD_ENTRIES(f16)

/* The kernels of the rows: X(kernel). */
#define ROWS_OF(X, T)                                                                             \
    X(softmax_##T) X(layer_norm_##T) X(gelu_##T) X(gelu_tanh_##T) X(softmax_backward_##T)          \
    X(log_softmax_backward_##T) X(layer_norm_backward_##T) X(gelu_backward_##T)                   \
    X(gelu_tanh_backward_##T) X(dropout_##T)
#define ROWS_KERNELS(X) ROWS_OF(X, f32) ROWS_OF(X, bf16) ROWS_OF(X, f16)

#endif /* AMPRT_FRAME_ROWS_FORM_H */
