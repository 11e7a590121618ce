/*
 * amprt_internal.h - what the runtime's sources share but callers do not:
 * the reference kernels, the dispatch table, and dtype-generic element access.
 *
 * How a reference kernel is written: its body is one static function,
 * generic over the storage dtype (an amp_dtype argument) and reading and
 * writing elements through amp_ld/amp_st below, which widen to and round
 * from f32. Each amp_ref_<op>_<T> is a one-line wrapper passing a constant
 * dtype, generated from the kernel's entry in the list (ref/ref_wrapper.h),
 * so its signature is written only there. Bodies are AMP_ALWAYS_INLINE, so
 * every wrapper compiles to a loop specialized for its dtype, with the
 * dtype switch folded away.
 *
 * Tests include this header (by relative path) to call amp_ref_* directly;
 * the library exports them for that reason.
 */
#ifndef AMPRT_INTERNAL_H
#define AMPRT_INTERNAL_H

#include "amprt.h"

#if defined(__GNUC__)
#define AMP_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define AMP_ALWAYS_INLINE inline
#endif

/* amp_dtype of each dtype token used in kernel names. */
#define AMP_DTYPE_f64 AMP_F64
#define AMP_DTYPE_f32 AMP_F32
#define AMP_DTYPE_bf16 AMP_BF16
#define AMP_DTYPE_f16 AMP_F16

/* The dtypes computing in f32, for which a body written against amp_ld/
 * amp_st is instantiated: X(T).  f64 kernels compute in double instead. */
#define AMP_FOR_EACH_KERNEL_DTYPE(X) X(f32) X(bf16) X(f16)

/* The compute ("opmath") type of each kernel dtype token. */
#define AMP_ACC_f64 double
#define AMP_ACC_f32 float
#define AMP_ACC_bf16 float
#define AMP_ACC_f16 float

/*
 * Bodies generic over the compute type as well: a kernel file whose bodies
 * must serve f64 (in double) and the others (in float) writes them once in
 * a part file, runtime/src/ref/<name>.inc, which ref/ref_acc_twice.h
 * includes twice: with ACC float, LD amp_ld, ST amp_st and BODY(name)
 * name##_facc, then with double, amp_ldd, amp_std and _dacc.  The
 * wrappers (ref/ref_wrapper.h) call <kernel>_facc for f32/bf16/f16 and
 * <kernel>_dacc for f64.  Math in the part file goes through AMP_MATH(fn)
 * (expf or exp by ACC), so float code never silently computes in double.
 */
#define AMP_MATH_float(fn) fn##f
#define AMP_MATH_double(fn) fn
#define AMP_MATH_PASTE_(acc, fn) AMP_MATH_##acc(fn)
#define AMP_MATH_(acc, fn) AMP_MATH_PASTE_(acc, fn) /* expands ACC before pasting */
#define AMP_MATH(fn) AMP_MATH_(ACC, fn)

/* The reference kernels: the spec every other kernel set is checked against. */
#define AMP_DECLARE_REF_KERNEL(kernel, T, ret, params, args) ret AMP_KNAME_##T(amp_ref_##kernel) params;
AMP_FOR_EACH_KERNEL(AMP_DECLARE_REF_KERNEL)
#undef AMP_DECLARE_REF_KERNEL

/* One function pointer per public kernel, plus the name of the kernel set.
 * An ISA-specific set starts as a copy of amp_ref_kernel_table and overrides
 * only the entries it optimized. */
typedef struct amp_kernel_table {
    const char *isa;
#define AMP_KERNEL_FIELD(kernel, T, ret, params, args) ret(*AMP_KNAME_##T(kernel)) params;
    AMP_FOR_EACH_KERNEL(AMP_KERNEL_FIELD)
#undef AMP_KERNEL_FIELD
} amp_kernel_table;

extern const amp_kernel_table amp_ref_kernel_table;

/* The type of each kernel: amp_kernel_fn_<name>. */
/* AMP_WITH_NAME(M, kernel, T, ...) is M(name, ...) with the kernel's full
 * name (AMP_KNAME: renorm_f32, copy_strided) expanded first, for the
 * consumers of the kernel list that paste or quote the name. */
#define AMP_WITH_NAME(M, kernel, T, ...) AMP_WITH_NAME_(M, AMP_KNAME_##T(kernel), __VA_ARGS__)
#define AMP_WITH_NAME_(M, name, ...) M(name, __VA_ARGS__)
#define AMP_KERNEL_FN_TYPEDEF(kernel, T, ret, params, args) \
    AMP_WITH_NAME(AMP_KERNEL_FN_TYPEDEF_N, kernel, T, ret, params, args)
#define AMP_KERNEL_FN_TYPEDEF_N(name, ret, params, args) typedef ret amp_kernel_fn_##name params;
AMP_FOR_EACH_KERNEL(AMP_KERNEL_FN_TYPEDEF)
#undef AMP_KERNEL_FN_TYPEDEF

#if defined(__GNUC__)
#define AMP_HIDDEN __attribute__((visibility("hidden")))
#else
#define AMP_HIDDEN
#endif

/*
 * A kernel set's own kernel for one public kernel: the constant pointer
 * amp_isa_<set>_<name>, defined once in the set's file that implements it
 * (a set's file lists its kernels, and defines both these and its fill
 * function from that list).  dispatch.c resolves each public kernel on its
 * first call from these pointers alone, so a program linked with
 * -Wl,--gc-sections keeps only the kernels it calls (docs/runtime.md,
 * "Small binaries").  Hidden: no program or library outside libamprt sees
 * them.
 */
#define AMP_ISA_KERNEL(set, name, impl) AMP_HIDDEN amp_kernel_fn_##name *const amp_isa_##set##_##name = impl;
#define AMP_ISA_INSTALL(t, set, name) ((t)->name = amp_isa_##set##_##name)

/* Element i of `base` as f32 (see amp_load_as_f32, its public face). */
static AMP_ALWAYS_INLINE float amp_ld(amp_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case AMP_F64: return (float)((const double *)base)[i];
    case AMP_F32: return ((const float *)base)[i];
    case AMP_BF16: return amp_bf16_to_f32(((const amp_bf16 *)base)[i]);
    case AMP_F16: return amp_f16_to_f32(((const amp_f16 *)base)[i]);
    case AMP_I64: return (float)((const int64_t *)base)[i];
    case AMP_I32: return (float)((const int32_t *)base)[i];
    case AMP_BOOL: return ((const uint8_t *)base)[i] ? 1.0f : 0.0f;
    case AMP_C64: return ((const float *)base)[2 * i]; /* the real part */
    case AMP_C128: return (float)((const double *)base)[2 * i];
    }
    return 0.0f;
}

/* Element i of `base` as double: exact for every dtype but i64 beyond 2^53. */
static AMP_ALWAYS_INLINE double amp_ldd(amp_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case AMP_F64: return ((const double *)base)[i];
    case AMP_C128: return ((const double *)base)[2 * i];
    case AMP_I64: return (double)((const int64_t *)base)[i];
    case AMP_I32: return (double)((const int32_t *)base)[i];
    default: return (double)amp_ld(t, base, i);
    }
}

/* Store a double computed for an f64 kernel.  Only f64 storage is meant
 * (the narrower dtypes compute in float and store through amp_st, so that
 * each element is rounded once); other dtypes round via float. */
static AMP_ALWAYS_INLINE void amp_std(amp_dtype t, void *base, int64_t i, double v);

/* float -> integer with C's truncation where C defines it, and NaN -> 0 and
 * saturation where it does not (so stores are never undefined behaviour).
 * The limits are powers of two, exact in float: 2^63 and 2^31. */
static AMP_ALWAYS_INLINE int64_t amp_f32_to_i64_sat(float v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0f)
        return INT64_MAX;
    if (v < -9223372036854775808.0f)
        return INT64_MIN;
    return (int64_t)v;
}

static AMP_ALWAYS_INLINE int32_t amp_f32_to_i32_sat(float v)
{
    if (v != v)
        return 0;
    if (v >= 2147483648.0f)
        return INT32_MAX;
    if (v < -2147483648.0f)
        return INT32_MIN;
    return (int32_t)v;
}

/* Store v into element i of `base` (see amp_store_from_f32). */
static AMP_ALWAYS_INLINE void amp_st(amp_dtype t, void *base, int64_t i, float v)
{
    switch (t) {
    case AMP_F64: ((double *)base)[i] = v; return;
    case AMP_F32: ((float *)base)[i] = v; return;
    case AMP_BF16: ((amp_bf16 *)base)[i] = amp_f32_to_bf16(v); return;
    case AMP_F16: ((amp_f16 *)base)[i] = amp_f32_to_f16(v); return;
    case AMP_I64: ((int64_t *)base)[i] = amp_f32_to_i64_sat(v); return;
    case AMP_I32: ((int32_t *)base)[i] = amp_f32_to_i32_sat(v); return;
    case AMP_BOOL: ((uint8_t *)base)[i] = (uint8_t)(v != 0.0f); return;
    case AMP_C64: ((float *)base)[2 * i] = v; ((float *)base)[2 * i + 1] = 0; return;
    case AMP_C128: ((double *)base)[2 * i] = v; ((double *)base)[2 * i + 1] = 0; return;
    }
}

static AMP_ALWAYS_INLINE void amp_std(amp_dtype t, void *base, int64_t i, double v)
{
    if (t == AMP_F64)
        ((double *)base)[i] = v;
    else if (t == AMP_C128) {
        ((double *)base)[2 * i] = v;
        ((double *)base)[2 * i + 1] = 0;
    } else
        amp_st(t, base, i, (float)v);
}


/* ---- Kernel sets (dispatch.c, x86/), the drivers (frame/) and the thread
 * pool (frame/threadpool.c) ----------------------------------------------- */

/* The kernel set named `isa` ("ref", "avx2", "avx512", "avx512bf16"; on
 * aarch64 "neon", "neonfp16", "neonbf16") if this
 * CPU (and its OS) supports it, else NULL.  For tests and benchmarks, which
 * compare the sets against each other within one process; the public
 * amp_<name> entry points always use the set AMPRT_ISA chose. */
const amp_kernel_table *amp_kernel_table_for(const char *isa);
/* The reference table with set `isa`'s fill function applied, in *t: 1,
 * or 0 (t untouched) for a name without a set in this build.  For the
 * test that amp_kernel_table_for, whose tables are resolved kernel by
 * kernel as the public entry points resolve them, agrees with it. */
int amp_isa_fill(const char *isa, amp_kernel_table *t);

/* The CPU features the optimized sets need, as this architecture's
 * runtime/src/<arch>/cpu.c reports them (0 where no set exists).  Each
 * bit implies the ones before it. */
#define AMP_CPU_AVX2 1u       /* AVX, AVX2, FMA, F16C; XCR0 SSE + AVX state */
#define AMP_CPU_AVX512 2u     /* AVX-512F/BW/VL; XCR0 opmask + ZMM state */
#define AMP_CPU_AVX512BF16 4u /* AVX512_BF16 */
/* aarch64 (arm/cpu.c, from getauxval): */
#define AMP_CPU_NEON 1u      /* FP and Advanced SIMD (HWCAP_FP, HWCAP_ASIMD) */
#define AMP_CPU_NEON_FP16 2u /* FEAT_FP16 (HWCAP_FPHP, HWCAP_ASIMDHP) */
#define AMP_CPU_NEON_BF16 4u /* FEAT_BF16 (HWCAP2_BF16), reported with FEAT_FP16 only */
unsigned amp_cpu_features(void);

/* Each optimized set's kernels (its amp_isa_<set>_<name> pointers)
 * written over a copy of the reference table: what dispatch.c's per-kernel
 * resolution must agree with (tests/runtime/test_dispatch.c checks it), and
 * the references that make a static link take the sets' objects out of
 * libamprt.a (amp_isa_fill in dispatch.c). */
void amp_isa_avx2_fill(amp_kernel_table *t);
void amp_isa_avx512_fill(amp_kernel_table *t);
void amp_isa_avx512bf16_fill(amp_kernel_table *t);
/* Whether the small products that can split between two threads do
 * (avx512bf16's bf16 ones and avx2's, of 0.75 MFLOP and up;
 * frame/small_split.c): 0 (the default) as measured per shape, 1 always,
 * -1 never.  The results are the same bits either way; tests pin
 * it to run both paths. */
void amp_small_split_policy(int policy);
/* Whether frame/gemm.c packs a product's operands whole before its tasks
 * (pack_whole): 0 (the default) where the repacking saved is large, 1
 * for every one-batch product of several tasks, -1 never.  The results
 * are the same bits either way; tests pin it to run both paths. */
void amp_gemm_pack_whole_policy(int policy);
/* The AVX-512 kernels beyond the GEMM (x86/avx512_eltwise.c), for both
 * AVX-512 sets: relu, add, batch_norm, casts, max_pool. */
void amp_isa_avx512_fill_eltwise(amp_kernel_table *t);
/* x86/avx512_eltwise.c's max_pool_backward in storage dtype t, for the
 * geometries x86/avx512_backward.c's max_pool_backward does not take. */
void amp_avx512_max_pool_backward_any(amp_dtype t, const amp_pool_desc *d, const void *x, const void *dy, void *dx);
/* ... and what the avx512bf16 set replaces of them (the f32 -> bf16 cast). */
void amp_isa_avx512bf16_fill_eltwise(amp_kernel_table *t);
/* The AVX-512 gradient and optimizer kernels (x86/avx512_backward.c), for
 * both AVX-512 sets: relu_backward, sgd, max_pool_backward. */
void amp_isa_avx512_fill_backward(amp_kernel_table *t);
/* x86/avx512_norm.c: batch_norm_train and batch_norm_backward (both
 * forms); x86/avx512_clamp.c: clamp, hardtanh and their gradients
 * (bit-exact). */
void amp_isa_avx512_fill_norm(amp_kernel_table *t);
void amp_isa_avx512_fill_clamp(amp_kernel_table *t);
/* x86/avx512_reduce.c: sum over [kept, reduced, kept] masks (bit-exact). */
void amp_isa_avx512_fill_reduce(amp_kernel_table *t);
/* x86/avx512_loss.c: cross_entropy forward and backward (bit-exact). */
void amp_isa_avx512_fill_loss(amp_kernel_table *t);
/* x86/avx512_rows.c, x86/avx2_rows.c: softmax over the last axis,
 * layer_norm, gelu, gelu_tanh (bit-exact). */
void amp_isa_avx512_fill_rows(amp_kernel_table *t);
void amp_isa_avx2_fill_rows(amp_kernel_table *t);
/* x86/avx512_attention.c, x86/avx2_attention.c: sdpa (a product: the
 * products' bound). */
void amp_isa_avx512_fill_attention(amp_kernel_table *t);
void amp_isa_avx512bf16_fill_attention(amp_kernel_table *t);
void amp_isa_avx2_fill_attention(amp_kernel_table *t);
/* x86/avx512_scalar_arith.c, x86/avx2_scalar_arith.c: add, sub, mul and
 * div by a scalar, rsub and rdiv (bit-exact). */
void amp_isa_avx512_fill_scalar_arith(amp_kernel_table *t);
void amp_isa_avx2_fill_scalar_arith(amp_kernel_table *t);
/* The AVX2 kernels beyond the GEMM and the convolutions (x86/avx2_eltwise.c,
 * avx2_backward.c, avx2_norm.c, avx2_clamp.c, avx2_reduce.c, avx2_loss.c),
 * for the avx2 set: element-wise, casts, batch_norm, clamp, pooling, sums,
 * cross_entropy, their gradients and sgd, bit for bit the reference. */
void amp_isa_avx2_fill_kernels(amp_kernel_table *t);
/* The aarch64 sets (arm/neon.c): the GEMM and convolutions on a 6 x 16
 * f32 micro-kernel; relu, add and the f32 <-> bf16/f16 casts
 * (arm/neon_eltwise.c); relu_backward, add_relu_backward and
 * grad_accumulate (arm/neon_backward.c); the column sums
 * (arm/neon_reduce.c); batch_norm, batch_norm_train and their backward
 * (arm/neon_norm.c); clamp, hardtanh and their gradients
 * (arm/neon_clamp.c);
 * max_pool, the global adaptive_avg_pool and their backwards
 * (arm/neon_pool.c); sgd (arm/neon_optim.c); cross_entropy
 * (arm/neon_loss.c); bit for bit the reference.  bfcvt: round to bf16
 * with BFCVTN (neonbf16, whose bf16 products run on BFDOT). */
void amp_isa_neon_fill(amp_kernel_table *t);
void amp_isa_neonfp16_fill(amp_kernel_table *t);
void amp_isa_neonbf16_fill(amp_kernel_table *t);
/* arm/neon_fp16.c: the f16 add, sub, mul, div and relu in FEAT_FP16
 * arithmetic (neonfp16 and neonbf16), bit for bit the reference. */
void amp_isa_neonfp16_fill_eltwise(amp_kernel_table *t);
void amp_isa_neon_fill_eltwise(amp_kernel_table *t, int bfcvt);
void amp_isa_neon_fill_backward(amp_kernel_table *t, int bfcvt);
void amp_isa_neon_fill_reduce(amp_kernel_table *t);
void amp_isa_neon_fill_norm(amp_kernel_table *t);
void amp_isa_neon_fill_clamp(amp_kernel_table *t);
void amp_isa_neon_fill_scalar_arith(amp_kernel_table *t);
void amp_isa_neon_fill_pool(amp_kernel_table *t);
void amp_isa_neon_fill_optim(amp_kernel_table *t);
void amp_isa_neon_fill_loss(amp_kernel_table *t);

/*
 * The blocked, packed GEMM (frame/gemm.c) and its micro-kernel contract.
 *
 * Packed operands are arrays of 4-byte units.  kpair = 1: a unit is one
 * f32 value of one k.  kpair = 2: a unit is two bf16 values, k even in the
 * low half and k + 1 in the high half (the operand order vdpbf16ps takes);
 * an odd K is padded with a zero k.  An A micro-panel is mr rows x kcu
 * units stored unit-major ([u][mr]); a B micro-panel is kcu units x nr
 * columns ([u][nr]); rows/columns past the matrix edge are padded with zeros.
 *
 * micro(kcu, pa, pb, w, ldw, accumulate) computes the full mr x nr tile
 *     T[i][j] = sum over u < kcu of dot(pa[u][i], pb[u][j])
 * in f32 (each unit's products added to the accumulator in k order, f32
 * rounding; vdpbf16ps additionally treats bf16 subnormal inputs as zero)
 * and writes w[i * ldw + j] = T[i][j] (accumulate = 0) or w[i * ldw + j] +
 * T[i][j] (accumulate = 1).  kcu may be 0.  pb and w are 64-byte aligned
 * (ldw a multiple of 16), pa only 4-byte aligned (mr need not be a multiple
 * of 16).  The k order within a tile is fixed, so results are deterministic.
 *
 * pack_a(t, a, rs, cs, rows, k, dst): element (i, kk) of A is at a + (i * rs
 * + kk * cs) elements of dtype t; writes one micro-panel of ceil(k / kpair)
 * units (rows <= mr, the rest zero).  pack_b(t, b, rs, cs, cols, k, dst):
 * element (kk, j) of B is at b + (kk * rs + j * cs); one micro-panel
 * (cols <= nr).
 *
 * epi(t, n, w, alpha, beta, c, c_cs, bias, y): the epilogue of one output
 * row: y[j] = round_t(alpha * w[j] + beta * c[j * c_cs] + bias[j]) for j < n,
 * where the alpha product is skipped when alpha == 1, the c term when c is
 * NULL, the bias term when bias is NULL; each product and sum rounded to f32
 * in that order (as the reference kernels do), then one rounding to t.
 *
 * post(t, rows, n, p, residual, src, y, ld) (may be NULL: frame/conv_post.c then
 * runs the reference kernels on each segment, which are that set's separate
 * kernels too): conv_ex's fused post-ops on rows row segments of n elements
 * of dtype t that epi has just stored at src (y itself, or conv_ex's raw
 * output), row r at src + r ld elements, written to y + r ld (one output
 * channel each, with p[r]'s batch_norm scalars), bit for bit as the set's
 * separate batch_norm, add and relu kernels compute them: v = src[j]
 * widened; if p->bn, v = ((v - mean) * rstd) [* weight] [+ bias], each
 * operation rounded to f32 (no FMA), then rounded to t; if residual is not
 * NULL (row r's at residual + r ld), v = round_t(v + residual[j]) (read as
 * amp_ld reads it; of two NaNs, y's, as the AVX-512 add kernel returns
 * it); if p->relu, v = v < 0 ? 0 : v (NaN and -0 kept); if p->clamp, v =
 * round_t(min(hi, max(lo, v))) with lo, hi = p->clamp_lo, clamp_hi, as
 * every set's clamp kernel computes it (if (v < lo) v = lo; if (v > hi) v
 * = hi: a NaN v kept, a NaN bound passed over; amp_conv_clamp_row runs
 * the set's own); y[j] = v.
 * (batch_norm parameters of a dtype other than f32, bf16, f16, which the
 * AVX-512 batch_norm leaves to the reference, get the reference batch_norm
 * first and p->bn = 0 here.)
 */
/* A post row's clamp: none; bounds that t holds exactly (the clamp's
 * result, v or a bound, is then a value of t: relu6's 0 and 6, so no
 * rounding follows); other bounds (the result rounded to t, as the clamp
 * kernel's store rounds it). */
enum { AMP_POST_CLAMP_NONE, AMP_POST_CLAMP_EXACT, AMP_POST_CLAMP_ROUNDED };

typedef struct amp_conv_post_row {
    int bn, bn_weight, bn_bias, relu;  /* which steps run (weight, bias: only with bn) */
    float mean, rstd, weight, bias;    /* the channel's batch_norm scalars */
    int clamp;                         /* the clamp step, last: AMP_POST_CLAMP_* */
    float clamp_lo, clamp_hi;          /* (float)post->clamp_lo and _hi */
    const amp_conv_post *post;         /* where they come from, and */
    int64_t channel;                   /* the row's output channel */
} amp_conv_post_row;

/* The clamp step of post on n elements of dtype t at y, in place, through
 * the active set's clamp kernel (in pieces that never split over the pool,
 * since a post runs inside a pool task): for a post that has no vector
 * clamp of its own. */
void amp_conv_clamp_row(amp_dtype t, size_t n, const amp_conv_post *post, void *y);

/* Per-call work buffers of the optimized kernels (scratch.c): like
 * malloc and free, 64-byte aligned, but large blocks are kept for the
 * next call rather than unmapped (so a training step does not page-fault
 * its buffers in again every call). */
void *amp_scratch_alloc(size_t bytes);
void amp_scratch_free(void *p);

/* pack_b_im2col (optional; frame/conv_pack.c packs the im2col B panels of a
 * convolution straight from its input with it, or with the generic
 * isa_pack_b_im2col_body of frame/kernel_set.h when it is NULL): one unit row u of
 * a task's B block, i.e. unit u of every micro-panel.  The block's columns
 * are cut into nruns runs, run ri = columns [col[ri], col[ri + 1]) (each
 * within one output row, in column order from col[0] = 0 to col[nruns], a
 * multiple of nr <= AMP_IM2COL_COLS_MAX; the last panel's columns past the
 * block's own are a run of zeros).  Half h (< kpair) of the unit of run
 * column q (column col[ri] + q) is, with tp = &tap[h][ri], the element
 * plane[h] + tp->off + (q - tp->lo) * stride (elements of dtype t) for q
 * in [tp->lo, tp->hi), else 0 (tp->lo == tp->hi when the row is all
 * padding; tap[h] == NULL: every unit's half is 0, beyond an odd k).  The
 * units go where pack_b would put them: column c at dst[(c / nr) * kcu *
 * nr + c % nr] (dst = the block's first panel + u nr units), converted as
 * pack_b converts them. */
#define AMP_IM2COL_COLS_MAX 192

/* pack_b_rows (optional; faster than pack_b_im2col where frame/conv_pack.c can
 * use it): the same unit row u of a task's B block, its elements read
 * from a zero-padded copy of the input (frame/conv.h's amp_conv_pad_buf), so that no
 * tap needs a bounds check: half h of run ri's column q (column col[ri] +
 * q, q < col[ri + 1] - col[ri]) is src[h][off[ri] + q stride] (2-byte
 * elements; src[h] == NULL: 0), for nruns runs in column order from col[0]
 * = 0 to col[nruns] <= AMP_IM2COL_COLS_MAX; the columns from col[nruns] up
 * to the next multiple of nr are 0 (kpair 1: half 0 only, bf16 elements
 * widened to the f32 units; frame/conv.c uses it for bf16 storage only).
 * stride is 1 or 2.  It may read up to
 * 32 elements past a run's last one (the copy's slack: their values land
 * only in lanes a later run or the zeros overwrite).  The units go where
 * pack_b_im2col puts them. */
typedef void amp_pack_b_rows_fn(int64_t stride, const int64_t *col, const int64_t *off, int64_t nruns,
                                const void *const src[2], int64_t kcu, void *dst);

/* pack_b_trows (optional; the weight gradient's direct packing in
 * frame/conv_wgrad_direct.c): units of one B micro-panel whose columns come from rows
 * of 2-byte elements: unit u of column i (< nr) is the pair rows[i][2 u]
 * (low half), rows[i][2 u + 1] (high half), for u < units, stored at
 * dst[u nr + i] as pack_b stores a panel's units (kpair 1: the element
 * rows[i][u], bf16, widened to f32; frame/conv_wgrad_direct.c uses it for
 * bf16 storage only).  It reads no element of a row past its units and
 * writes no unit past them. */
typedef void amp_pack_b_trows_fn(const void *const *rows, int64_t units, void *dst);

/* pad_rows (optional; frame/conv_pack.c's zero-padded copies of input rows, 2-byte
 * elements): for c < cin and r < rows, row (c, r) of dst (c rows + r)
 * w elements in) is input row ih0 + r of channel c (x + c plane + ih in_w
 * elements), each element b < w being input column b - left, or 0
 * outside the input (rows outside [0, in_h) all 0).  x_end: the end of
 * the input tensor, which is not read past.  It may write up to 32
 * elements past the last row (the buffer's slack). */
typedef void amp_pad_rows_fn(void *dst, const void *x, int64_t plane, int64_t cin, int64_t ih0, int64_t rows,
                             int64_t in_h, int64_t in_w, int64_t left, int64_t w, const void *x_end);

typedef struct amp_im2col_tap {
    int64_t off, lo, hi;
} amp_im2col_tap;

/* One segment of micro_taps_out's stores: the columns of mask (bit c:
 * column c of the tile, c < 32) at element at + c of a row. */
typedef struct {
    uint32_t mask;
    int64_t at;
} amp_tap_seg;

typedef struct amp_gemm_kernel {
    const char *name;
    int mr, nr, kpair;
    int kcu, mc, nc; /* cache blocking, in units (k), rows (m), columns (n) */
    void (*micro)(int64_t kcu, const void *pa, const void *pb, float *w, int64_t ldw, int accumulate);
    void (*pack_a)(amp_dtype t, const void *a, int64_t rs, int64_t cs, int rows, int64_t k, void *dst);
    void (*pack_b)(amp_dtype t, const void *b, int64_t rs, int64_t cs, int cols, int64_t k, void *dst);
    void (*epi)(amp_dtype t, int64_t n, const float *w, float alpha, float beta, const void *c, int64_t c_cs,
                const void *bias, void *y);
    void (*post)(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                 const void *src, void *y, int64_t ld);
    void (*pack_b_im2col)(amp_dtype t, int64_t stride, const int64_t *col, int64_t nruns,
                          const amp_im2col_tap *const tap[2], const void *const plane[2], int64_t kcu, void *dst);
    amp_pack_b_rows_fn *pack_b_rows;   /* NULL: none (2-byte storage; kpair 1: bf16) */
    amp_pack_b_trows_fn *pack_b_trows; /* NULL: none (2-byte storage; kpair 1: bf16) */
    amp_pad_rows_fn *pad_rows;         /* NULL: none (2-byte storage only) */
    /* micro_out (optional; bf16 storage): micro on a product's last k
     * block with epi's epilogue for alpha 1, no C and no bias done in the
     * registers: the tile's sums (w's added first when accumulate, as
     * micro adds them) rounded to bf16 as epi rounds them, rows x cols of
     * them (rows <= mr, cols <= nr) stored at y, ldy elements apart; w
     * is read, never written.  Bit for bit micro, then epi row by row. */
    void (*micro_out)(int64_t kcu, const void *pa, const void *pb, const float *w, int64_t ldw, int accumulate,
                      void *y, int64_t ldy, int rows, int cols);
    /* narrow (optional): the same set with fewer rows per tile (its own
     * micro, micro_out and pack_a; B's packing identical), which the
     * convolutions take for row counts the wide tile would pad much more
     * (amp_conv_rows_kernel: 64 output channels in 12-row tiles compute 72) */
    const struct amp_gemm_kernel *narrow;
    /* micro_taps (optional; bf16 storage): micro with B read
     * straight from rows of 2-byte elements instead of packed panels:
     * unit u of column c (< nr) is the pair src[off[2 u] + c] (low half),
     * src[off[2 u + 1] + c] (high half), for u < kcu (kpair 1: the
     * element src[off[u] + c] widened to f32).  A stride-1
     * convolution's units are taps of a zero-padded copy of x at fixed
     * offsets (frame/conv_taps.c's taps mode), so it needs no B packing.  Bit
     * for bit micro on the panels pack_b would make of those units. */
    void (*micro_taps)(int64_t kcu, const void *pa, const void *src, const int32_t *off, float *w, int64_t ldw,
                       int accumulate);
    /* micro_taps_out (optional, with micro_taps): micro_taps on a last k
     * block with micro_out's epilogue (the same sums rounded to bf16 as
     * epi rounds them; w read, never written), the tile's columns stored
     * by segments: for s < nseg, column c of row i (< rows) goes to
     * element i ldy + seg[s].at + c of y where bit c of seg[s].mask is
     * set (no element outside the masks is touched, so seg[s].at may
     * place column 0 before y).  Bit for bit micro_taps, then epi. */
    void (*micro_taps_out)(int64_t kcu, const void *pa, const void *src, const int32_t *off, const float *w,
                           int64_t ldw, int accumulate, void *y, int64_t ldy, int rows, const amp_tap_seg *seg,
                           int nseg);
    /* dw_taps (optional; frame/conv_depthwise.c's direct depthwise
     * convolution, which the convolutions take for one input channel per
     * group where it is set): for q < n, acc[q] = the sum over t < taps,
     * in that order and from +0, of src[off[t] + q] w[t], each product
     * and each sum rounded to f32 (no FMA: the reference's arithmetic).
     * Reads no src element past the last sum's. */
    void (*dw_taps)(int64_t n, int64_t taps, const float *src, const int64_t *off, const float *w, float *acc);
    /* winograd (optional; a kernel whose products are not in f32): the
     * set's kpair-1 kernel, on which frame/conv_winograd.c multiplies for
     * this one's 3 x 3 stride-1 convolutions (a kpair-1 kernel multiplies
     * on itself) */
    const struct amp_gemm_kernel *winograd;
} amp_gemm_kernel;

/* k, or its narrow variant where that pads M to fewer tile rows by over
 * 1/16 of M; every path that packs or reads a convolution's weights for
 * M rows per group picks its kernel by this. */
static inline const amp_gemm_kernel *amp_conv_rows_kernel(const amp_gemm_kernel *k, int64_t M)
{
    const amp_gemm_kernel *n = k->narrow;
    if (n != NULL && M > 0) {
        const int64_t wide = (M + k->mr - 1) / k->mr * k->mr, thin = (M + n->mr - 1) / n->mr * n->mr;
        if (16 * (wide - thin) > M)
            return n;
    }
    return k;
}

/* Compile-time bounds of the blocking (the per-thread buffers' sizes). */
#define AMP_GEMM_KCU_MAX 256
#define AMP_GEMM_MC_MAX 192
#define AMP_GEMM_NC_MAX 512
#define AMP_GEMM_MB_MAX 384 /* rows of the f32 accumulator block */
#define AMP_GEMM_MR_MAX 16
#define AMP_GEMM_NR_MAX 32

/* y = alpha * A B + beta * C (+ bias[n]) for the strided batched problem d
 * (amp_gemm_desc semantics); bias may be NULL (it is linear's).  Splits
 * the work over the thread pool when large enough. */
/* One f32 micro-panel in general (frame/gemm.c): element (i, kk) of the
 * source, at base + i ws + kk ks (elements of t), to dst[kk W + i]; i >=
 * width is 0.  The sets' f32 packers fall back to it. */
void amp_pack_f32_generic(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width, int64_t k, float *dst,
                          int W);
/* epi's arithmetic on elements j0 .. n - 1 of one row, scalar (frame/gemm.c):
 * the sets' epi call it for a strided C and their vector loops' tails. */
void amp_gemm_epi_scalar(amp_dtype t, int64_t j0, int64_t n, const float *w, float alpha, float beta, const void *c,
                         int64_t c_cs, const void *bias, void *y);
void amp_fast_gemm(const amp_gemm_kernel *k, amp_dtype t, const amp_gemm_desc *d, const void *a,
                   const void *b, const void *c, const void *bias, void *y);

/* The same product (no C, no bias) left in f32, unrounded to t: for
 * sums that continue after the GEMM (conv_transpose's col2im). */
void amp_fast_gemm_f32(const amp_gemm_kernel *k, amp_dtype t, const amp_gemm_desc *d, const void *a, const void *b,
                       float *y);

/* linear_ex's packed weights on the driver (frame/gemm.c): B = w^T packed
 * whole, every panel once, behind a 64-byte header that names the set's
 * function running a product on them (run, which amp_fast_linear_ex
 * serves): linear_ex calls it through the header, so that a program that
 * never packs weights does not link the packed path at all (a small
 * binary's every-set MLP).  A weight a set's one-pass small-product path
 * can take (K <= AMP_LINEAR_COPY_MAX_K, N K <= AMP_LINEAR_COPY_MAX) is
 * also kept as it is, in T, copy bytes from the block's start (0: not
 * kept), for the products the set runs faster that way. */
#define AMP_LINEAR_COPY_MAX_K 512
#define AMP_LINEAR_COPY_MAX (64 * 1024)
typedef void amp_linear_packed_fn(const void *packed, int64_t M, int64_t N, int64_t K, const void *x,
                                  const void *bias, int relu, void *y);
typedef union {
    struct {
        uint64_t magic;
        const amp_gemm_kernel *k;
        amp_linear_packed_fn *run;
        int64_t t, N, K, copy;
    } h;
    unsigned char bytes[64];
} amp_linear_packed_header;
size_t amp_fast_linear_packed_bytes(const amp_gemm_kernel *k, amp_dtype t, int64_t N, int64_t K);
void amp_fast_linear_pack_weights(const amp_gemm_kernel *k, amp_dtype t, int64_t N, int64_t K, amp_dtype src,
                                  const void *w, void *packed, amp_linear_packed_fn *run);
/* y = x w^T + bias on packed (from amp_fast_linear_pack_weights with k
 * and t); the relu, if any, is the caller's, after */
void amp_fast_linear_ex(const amp_gemm_kernel *k, amp_dtype t, int64_t M, int64_t N, int64_t K, const void *x,
                        const void *packed, const void *bias, void *y);

/* y = conv(x, w) + bias (amp_conv_desc semantics, bias may be NULL) as
 * GEMMs of the packed weights and im2col blocks of x (frame/conv.c), on the
 * micro-kernels of k; f32, bf16 and f16 (other dtypes, and an empty sum,
 * go to the reference).  Splits the work over the thread pool. */
void amp_fast_conv(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                   const void *bias, void *y);
/* conv_ex's parts (amprt/spatial.h) on the same micro-kernels: the packed
 * weights are a 64-byte header (naming k, t and the shape, so a buffer
 * packed for another kernel set or shape fails an assert) followed by the
 * A panels amp_fast_conv packs per call (groups x k blocks x panels);
 * amp_fast_conv_ex runs amp_fast_conv's tasks on them (or packs w itself
 * when packed is NULL) and applies post in each tile's epilogue, right
 * after epi stores the tile's row segments.  Other dtypes go to the
 * reference. */
/* Whether amp_fast_conv and amp_fast_conv_ex may take taps mode where it
 * applies (the default, 1): a test sets 0 to compare the packed path,
 * which gives the same bits. */
void amp_fast_conv_allow_taps(int allow);
/* How many convolutions have taken taps mode so far (so that a test can
 * check its shapes reach it). */
int64_t amp_fast_conv_taps_taken(void);
/* Whether conv_backward_weight may take the direct path
 * (frame/conv_wgrad_direct.c) where it applies (the default, 1), and how
 * many weight gradients have taken it: a test sets 0 to compare the
 * im2col GEMMs, and checks that its shapes reach the direct path. */
void amp_fast_conv_allow_wgrad_direct(int allow);
int64_t amp_fast_conv_wgrad_direct_taken(void);
/* Whether the 3 x 3 stride-1 convolutions of 2-byte storage take Winograd
 * F(4 x 4, 3 x 3) on the set's f32 kernel (frame/conv_winograd.c): 0 (the
 * default) where its cost model says it pays, 1 wherever the shape
 * allows, -1 never (the direct sums).  Tests pin it to run both; and how
 * many convolutions have taken it. */
void amp_conv_winograd_policy(int policy);
int64_t amp_fast_conv_winograd_taken(void);
/* How many weight gradients have taken the depthwise path
 * (frame/conv_wgrad_depthwise.c). */
int64_t amp_fast_conv_wgrad_depthwise_taken(void);
/* How many convolutions have taken the direct depthwise path
 * (frame/conv_depthwise.c) so far. */
int64_t amp_fast_conv_depthwise_taken(void);
size_t amp_fast_conv_packed_bytes(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d);
void amp_fast_conv_pack_weights(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, amp_dtype src,
                                const void *w, void *packed);
void amp_fast_conv_ex(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x, const void *w,
                      const void *packed, const void *bias, const amp_conv_post *post, void *y);
/* The AVX-512 post (x86/avx512_eltwise.c, with the batch_norm, add and
 * relu kernels it must match) for the AVX-512 descriptors. */
void amp_avx512_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                          const void *src, void *y, int64_t ld);
void amp_avx512bf16_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                              const void *src, void *y, int64_t ld);
/* The NEON sets' post (arm/neon_norm.c, with the batch_norm it must
 * match; add's vector step is arm/neon_convert.h's neon_add4). */
void amp_neon_conv_post(amp_dtype t, int64_t rows, int64_t n, const amp_conv_post_row *p, const void *residual,
                        const void *src, void *y, int64_t ld);
/* The sets' dw_taps (x86/avx2_depthwise.c, x86/avx512_depthwise.c,
 * arm/neon_depthwise.c). */
void amp_avx2_dw_taps(int64_t n, int64_t taps, const float *src, const int64_t *off, const float *w, float *acc);
void amp_avx512_dw_taps(int64_t n, int64_t taps, const float *src, const int64_t *off, const float *w, float *acc);
void amp_neon_dw_taps(int64_t n, int64_t taps, const float *src, const int64_t *off, const float *w, float *acc);
/* conv_backward_weight the same way: per group one GEMM of dy and the
 * im2col matrices, summed over the images (frame/conv_wgrad.c). */
void amp_fast_conv_backward_weight(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                                   const void *dy, void *dw);
/* The same, into f32 (amp_conv_backward_weight_to_f32_<t>, t bf16 or f16). */
void amp_fast_conv_backward_weight_to_f32(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d,
                                          const void *x, const void *dy, float *dw, int accumulate);
/* conv_transpose (a conv's input gradient) as a GEMM of the weights and x
 * into an f32 col, then a col2im gather rounding each output once. */
void amp_fast_conv_transpose(const amp_gemm_kernel *k, amp_dtype t, const amp_conv_desc *d, const void *x,
                             const void *w, const void *bias, void *y);

/* The thread pool: run fn(ctx, task, slot) for every task < ntasks on up
 * to nthreads threads (the caller is one of them, slot 0; slots are <
 * AMP_MAX_THREADS and distinct among concurrently running tasks).  Calls
 * are serialized by a lock, so a slot's static buffers belong to the task
 * running in it.  Workers are created on first use and persist.
 * Without threads (AMPRT_NO_THREADS, make BARE=1: frame/serial.c) every
 * task runs in slot 0, so the drivers' per-slot static buffers need one
 * slot, not sixteen. */
#if defined(AMPRT_NO_THREADS)
#define AMP_MAX_THREADS 1
#else
#define AMP_MAX_THREADS 16
#endif
void amp_parallel_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx);
/* amp_parallel_run when no other run holds the pool (returns 1), else
 * nothing (returns 0): for work small enough that waiting for the pool
 * (another thread of the caller's program running a model) would cost
 * more than doing it on the calling thread. */
int amp_parallel_try_run(int nthreads, int64_t ntasks, void (*fn)(void *ctx, int64_t task, int slot), void *ctx);

/* copy_strided and fill_<T> on the pool, for the kernel sets (frame/
 * data_movement.c): the reference kernels' bytes, split over the threads
 * from half a megabyte. */
void amp_pooled_copy_strided(size_t elem_size, int ndim, const int64_t *shape, const void *x,
                             const int64_t *x_stride, void *y, const int64_t *y_stride);
#define AMP_DECLARE_POOLED_FILL(T) void amp_pooled_fill_##T(size_t n, double value, AMP_CTYPE_##T *y);
AMP_FOR_EACH_KERNEL_DTYPE(AMP_DECLARE_POOLED_FILL)
#undef AMP_DECLARE_POOLED_FILL

#endif /* AMPRT_INTERNAL_H */
