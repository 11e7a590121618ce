/*
 * amprt.h - the one public header of libamprt, the kernel runtime that C
 * emitted by ampc calls.
 *
 * Conventions (docs/runtime.md is the full contract):
 *  - Storage dtypes are f64, f32, bf16, f16, i64, i32 and bool; bf16 and f16
 *    are structs so they never mix with integers by accident.
 *  - Kernels exist for T in {f64, f32, bf16, f16}. Storage is T; for f32,
 *    bf16 and f16 every computation and every accumulator is f32 (PyTorch's
 *    "opmath" on CPU), for f64 it is f64; each output element is rounded
 *    to T exactly once.
 *  - Sizes and strides count elements, not bytes. Outputs are contiguous.
 *  - The kernels trust their arguments (the code generator proves shapes at
 *    compile time), except the run-time data they read: the kernels whose
 *    row has return type int return an amp_status, AMP_OK or an error (and
 *    then have written nothing).  They are the losses with class targets
 *    (nll_loss, nll_loss_nd, cross_entropy, cross_entropy_with_grad,
 *    multi_margin_loss, multilabel_margin_loss, ctc_loss), the kernels
 *    reading indices (embedding, index_select, index_copy, gather,
 *    scatter_add, index_put, max_unpool), lu_solve (its pivots) and eig
 *    (AMP_ERR_NO_CONVERGENCE).
 *  - Every public kernel amp_<op>_<T> calls through a table of function
 *    pointers chosen once per process (see amp_isa_name and AMPRT_ISA).
 *
 * The kernel signatures are listed once, as an X-macro table
 * (AMP_FOR_EACH_KERNEL), from which this header declares them and the
 * library builds its dispatch table; the table is the place to read them.
 */
#ifndef AMPRT_H
#define AMPRT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Types -------------------------------------------------------------- */

typedef struct { uint16_t bits; } amp_bf16;
typedef struct { uint16_t bits; } amp_f16;

/* AMP_C64 and AMP_C128 (last, so the real dtypes keep their values) are
 * complex64 and complex128, amp_c64 / amp_c128 of amprt/complex.h: the
 * generic element access below reads their real part and stores a real
 * number (imaginary part 0), and the checkpoint writer does not take them. */
typedef enum { AMP_F64, AMP_F32, AMP_BF16, AMP_F16, AMP_I64, AMP_I32, AMP_BOOL, AMP_C64, AMP_C128 } amp_dtype;

/* Bytes per element (bool is one byte holding 0 or 1; a complex element
 * both parts); 0 for a value that is not an amp_dtype. */
size_t amp_dtype_size(amp_dtype t);
/* "f64", "f32", "bf16", "f16", "i64", "i32", "bool", "c64", "c128";
 * "invalid" otherwise. */
const char *amp_dtype_name(amp_dtype t);

/* ---- Scalar conversions --------------------------------------------------
 *
 * Contract, shared by every conversion in the runtime (casts included):
 *  - narrowing rounds to nearest, ties to even;
 *  - overflow follows IEEE: magnitudes at or above the halfway point between
 *    the largest finite value and the next power of two become infinity,
 *    smaller ones round to the largest finite value;
 *  - subnormal inputs and outputs are kept (no flush to zero);
 *  - a NaN stays a NaN with its sign and as much payload as fits, and comes
 *    out quiet (the quiet bit is the top fraction bit, so a truncated payload
 *    can never leave an all-zero fraction, which would read as infinity);
 *  - widening is exact for every non-NaN value.
 * They are portable bit manipulation on uint32_t (memcpy for type punning),
 * so they do not depend on the FPU rounding mode, FTZ/DAZ, or _Float16.
 * They are static inline because emitted loops call them per element.
 */

static inline uint32_t amp_bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float amp_f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline amp_bf16 amp_f32_to_bf16(float f)
{
    uint32_t u = amp_bits_of_f32(f);
    amp_bf16 h;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        /* NaN: bf16 is the top half of f32, so keep sign and top payload. */
        h.bits = (uint16_t)((u >> 16) | 0x0040u);
    } else {
        /* Round to nearest even on the 16 dropped bits: adding 0x7fff plus
         * the kept lsb carries exactly when the dropped part is above half,
         * or is half and the kept part is odd. A carry out of the fraction
         * bumps the exponent, which also turns values at or above the
         * halfway point past the max finite into infinity. */
        h.bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    return h;
}

static inline float amp_bf16_to_f32(amp_bf16 h)
{
    uint32_t u = (uint32_t)h.bits << 16;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        u |= 0x00400000u; /* quiet a signalling NaN; payload fits entirely */
    return amp_f32_of_bits(u);
}

static inline amp_f16 amp_f32_to_f16(float f)
{
    uint32_t u = amp_bits_of_f32(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu; /* magnitude bits */
    amp_f16 h;
    if (a > 0x7f800000u) {
        /* NaN: top 10 payload bits, quiet bit forced. */
        h.bits = (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x03ffu));
    } else if (a >= 0x477ff000u) {
        /* 65520 = 65504 + 16, halfway between the max finite f16 and 2^16:
         * everything from there up (infinity included) is infinity. */
        h.bits = (uint16_t)(sign | 0x7c00u);
    } else if (a >= 0x38800000u) {
        /* Normal f16 (>= 2^-14): rebias the exponent from 127 to 15, then
         * round to nearest even on the 13 dropped fraction bits; a carry
         * ripples into the exponent, and cannot reach infinity because the
         * inputs that would are handled above. */
        uint32_t r = a - (112u << 23);
        h.bits = (uint16_t)(sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13));
    } else if (a < 0x33000000u) {
        /* Below 2^-25, half the smallest subnormal (2^-24): rounds to zero.
         * (Exactly 2^-25, a tie, goes below to the even neighbour, zero.) */
        h.bits = (uint16_t)sign;
    } else {
        /* Subnormal f16 result, in units of 2^-24: the full significand
         * (implicit bit included) shifted right by 126 - exponent, which is
         * between 14 and 24 here; round to nearest even on the dropped bits.
         * Rounding up to 0x400 yields the smallest normal, correctly encoded. */
        uint32_t m = (a & 0x007fffffu) | 0x00800000u;
        uint32_t shift = 126u - (a >> 23);
        uint32_t q = m >> shift;
        uint32_t rest = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rest > half || (rest == half && (q & 1u)))
            q++;
        h.bits = (uint16_t)(sign | q);
    }
    return h;
}

static inline float amp_f16_to_f32(amp_f16 h)
{
    uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16;
    uint32_t exp = (h.bits >> 10) & 0x1fu;
    uint32_t frac = h.bits & 0x03ffu;
    uint32_t u;
    if (exp == 0x1fu) {
        /* Infinity, or NaN with its whole payload and the quiet bit set. */
        u = sign | 0x7f800000u | (frac << 13) | (frac ? 0x00400000u : 0u);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (frac << 13);
    } else if (frac == 0) {
        u = sign;
    } else {
        /* Subnormal f16 (frac * 2^-24) is a normal f32: shift the fraction
         * up to its leading one, lowering the exponent once per shift. An
         * integer loop instead of a float multiply keeps it exact under
         * FTZ/DAZ too. */
        uint32_t e = 113u; /* f32 biased exponent of 2^-14 */
        while (!(frac & 0x0400u)) {
            frac <<= 1;
            e--;
        }
        u = sign | (e << 23) | ((frac & 0x03ffu) << 13);
    }
    return amp_f32_of_bits(u);
}

/* Element `index` of an array of dtype t, converted to f32 as C converts
 * (f64 rounds to nearest; i64/i32 round to nearest float; bool gives 0 or 1;
 * bf16/f16 widen exactly). Returns 0 for an invalid dtype. */
float amp_load_as_f32(amp_dtype t, const void *base, size_t index);
/* Store v into element `index` of an array of dtype t. Floating dtypes
 * round once, as above. Integers truncate toward zero as C does, except that
 * where C leaves the conversion undefined the runtime defines it: NaN stores
 * 0, and out-of-range values saturate to the type's min or max. bool stores
 * (v != 0), so NaN stores 1, as a C conversion to _Bool does. */
void amp_store_from_f32(amp_dtype t, void *base, size_t index, float v);

/* ---- Status codes -------------------------------------------------------- */

enum amp_status {
    AMP_OK = 0,
    AMP_ERR_ARENA_TOO_SMALL,     /* emitted model entry points: caller's arena < plan */
    AMP_ERR_BAD_DIM,             /* a size argument is negative (or, in emitted code,
                                    a run-time dim does not match the model) */
    AMP_ERR_TARGET_OUT_OF_RANGE, /* a class index outside [0, C), not ignore_index */
    AMP_ERR_NULL_ARG,            /* a required pointer is NULL */
    AMP_ERR_BAD_REDUCTION,       /* a reduction code outside amp_reduction */
    AMP_ERR_WEIGHTS_TRUNCATED,   /* safetensors: the file ends before its size
                                    field, its header or its tensor data does */
    AMP_ERR_WEIGHTS_HEADER,      /* safetensors: header not the JSON the format
                                    allows (syntax, UTF-8, schema, size 0 or
                                    > 100 MiB, a duplicate key) */
    AMP_ERR_WEIGHTS_OFFSETS,     /* safetensors: data_offsets overlap, leave a
                                    gap, or do not cover the data exactly */
    AMP_ERR_WEIGHTS_SHAPE,       /* safetensors: shape > 8 dims, element count
                                    overflows or disagrees with the offsets;
                                    amp_st_load: shape differs from the file */
    AMP_ERR_WEIGHTS_DTYPE,       /* safetensors: a dtype amprt does not have;
                                    amp_st_load: dtype differs from the file */
    AMP_ERR_WEIGHTS_MISSING,     /* amp_st_load: no tensor of that name */
    AMP_ERR_IO,                  /* a file could not be opened or read */
    AMP_ERR_OUT_OF_MEMORY,       /* malloc failed */
    AMP_ERR_WEIGHTS_UNEXPECTED,  /* a weights file holds a tensor the model does not have */
    AMP_ERR_SINGULAR,            /* emitted model entry points: inverse, cholesky or solve
                                    met a singular or not positive-definite matrix
                                    (where PyTorch raises; the _ex ops return info) */
    AMP_ERR_COLLECTIVE,          /* amprt/collective.h: MPI did not start, a setting
                                    it does not take, or a dtype it cannot reduce */
    AMP_ERR_NO_CONVERGENCE,      /* amprt/complex.h: eig's QR iteration did not converge
                                    (where PyTorch's linalg.eig raises) */
    AMP_ERR_BAD_PREPARED,        /* emitted <prefix>_forward_prepared: the block was not
                                    written by this model's <prefix>_prepare */
    AMP_ERR_WEIGHTS_NOT_FILE,    /* amp_st_open: the path is not a regular file (a
                                    directory, a device, a FIFO); nothing was read */
    AMP_ERR_WEIGHTS_CHECKSUM,    /* safetensors: the data does not match the CRC-32C the
                                    header's "crc32c" metadata gives (the file is corrupt) */
    AMP_ERR_CHECKPOINT_VALUE     /* emitted <prefix>_load: a scalar of the checkpoint is out
                                    of range (a learning rate or loss scale not finite,
                                    a negative step, ...); the state is unchanged */
};

/* Never NULL: a static message, or a generic one for an unknown code. */
const char *amp_strerror(int code);

/* ---- Dispatch -------------------------------------------------------------
 *
 * The kernel set is chosen once per process, on the first kernel call or
 * amp_isa_name(), from the environment variable AMPRT_ISA: "ref" forces the
 * reference kernels; "auto", empty or unset picks the best set this CPU
 * supports; any other value prints one warning to stderr and means "auto".
 */
const char *amp_isa_name(void);

/* Threads for the large matrix products (linear, matmul, gemm on the
 * optimized kernel sets): a pool of persistent workers, created on first
 * use.  The default is AMPRT_THREADS if set (a positive integer), else the
 * number of online CPUs; amp_set_threads(n) changes it for later calls
 * (n < 1 restores the default); both clamp to [1, 16].  Results do not
 * depend on the thread count.  Concurrent calls from several user threads
 * are safe; their threaded products run one at a time. */
void amp_set_threads(int n);
int amp_get_threads(void);

/* ---- Kernels ------------------------------------------------------------- */

typedef enum {
    AMP_REDUCTION_NONE = 0,
    AMP_REDUCTION_MEAN = 1,
    AMP_REDUCTION_SUM = 2
} amp_reduction;

/* C element type of each dtype token used in the kernel names. */
#define AMP_CTYPE_f64 double
#define AMP_CTYPE_f32 float
#define AMP_CTYPE_bf16 amp_bf16
#define AMP_CTYPE_f16 amp_f16

/*
 * Every kernel, one row each: X(kernel, T, return type, parameters,
 * arguments), T the dtype token (f64 f32 bf16 f16, c64 c128 i64 i32 bool, or
 * none for the dtype-free kernels).  The kernel's name is <kernel>_<T>
 * (<kernel> for none): AMP_KNAME_##T(kernel) builds it.  The public function
 * is amp_<name>, the reference one amp_ref_<name>.
 * Semantics (docs/runtime.md has the details):
 *
 *  add/sub/mul/div   y[i] = a[i] op b[i]; y may alias a or b.
 *  neg, relu         y[i] = -x[i], clamp_min(x[i], 0) (NaN -> NaN,
 *                    -0 -> -0, as PyTorch); y may alias x.
 *  *_scalar          y[i] = a[i] op s; rsub: s - a[i]; rdiv: s / a[i].
 *  *_bcast           y (contiguous, `shape`, 0 <= ndim) = a op b, where a and
 *                    b are read through their own element strides, 0 meaning
 *                    broadcast along that dim.
 *  linear            y[M,N] = x[M,K] w[N,K]^T + bias[N]; bias may be NULL.
 *  linear_relu       relu(linear(...)), bit for bit the two kernels in turn
 *                    (the relu of the rounded product): an MLP layer.
 *  linear_packed_bytes  bytes linear_pack_weights writes for an N x K weight
 *                    under the active kernel set.  The reference set's
 *                    layout is w itself in T; an optimized set's is its
 *                    GEMM micro-kernel's B panels behind a 64-byte header
 *                    (and, for a weight its small products' path can
 *                    take, w in T after them), valid only in the process
 *                    (and kernel set) that packed it.
 *  linear_pack_weights  packs w ([N, K], dtype src: T itself, or f32,
 *                    rounded to T element for element exactly as
 *                    amp_cast_f32_T rounds) into packed
 *                    (linear_packed_bytes bytes, 64-byte aligned), once,
 *                    so that inference does not repack a layer's weights
 *                    on every call.
 *  linear_ex         bit for bit linear (relu == 0) or linear_relu (relu
 *                    != 0) on any thread count.  packed != NULL: the
 *                    weights are packed's (from linear_pack_weights_T with
 *                    the same N and K; w_T is the packed source rounded to
 *                    T) and w is ignored (may be NULL); packed == NULL: w
 *                    as linear takes it.
 *  matmul            c[i][M,N] = a[i][M,K] b[i][K,N] for i < batch, with
 *                    a[i] = a + i * a_batch_stride (likewise b; 0 broadcasts).
 *  softmax,          along an axis of length dim and stride inner, for each
 *  log_softmax       of outer x inner positions; y may alias x.
 *  nll_loss          returns AMP_OK or an error, and on error writes nothing.
 *  cast_S_D          y[i] = x[i] converted from S to D, rounded once.
 */
#define AMP_KERNELS_OF_TYPE(X, T) AMP_KERNELS_OF_CTYPE(X, T, AMP_CTYPE_##T)
#define AMP_KERNELS_OF_CTYPE(X, T, CT)                                                   \
    X(add, T, void, (size_t n, const CT *a, const CT *b, CT *y), (n, a, b, y))           \
    X(sub, T, void, (size_t n, const CT *a, const CT *b, CT *y), (n, a, b, y))           \
    X(mul, T, void, (size_t n, const CT *a, const CT *b, CT *y), (n, a, b, y))           \
    X(div, T, void, (size_t n, const CT *a, const CT *b, CT *y), (n, a, b, y))           \
    X(neg, T, void, (size_t n, const CT *x, CT *y), (n, x, y))                           \
    X(relu, T, void, (size_t n, const CT *x, CT *y), (n, x, y))                          \
    X(add_scalar, T, void, (size_t n, const CT *a, double s, CT *y), (n, a, s, y))        \
    X(sub_scalar, T, void, (size_t n, const CT *a, double s, CT *y), (n, a, s, y))        \
    X(mul_scalar, T, void, (size_t n, const CT *a, double s, CT *y), (n, a, s, y))        \
    X(div_scalar, T, void, (size_t n, const CT *a, double s, CT *y), (n, a, s, y))        \
    X(rsub_scalar, T, void, (size_t n, const CT *a, double s, CT *y), (n, a, s, y))       \
    X(rdiv_scalar, T, void, (size_t n, const CT *a, double s, CT *y), (n, a, s, y))       \
    AMP_BCAST_ROW(X, add, T, CT)                                                         \
    AMP_BCAST_ROW(X, sub, T, CT)                                                         \
    AMP_BCAST_ROW(X, mul, T, CT)                                                         \
    AMP_BCAST_ROW(X, div, T, CT)                                                         \
    X(linear, T, void,                                                                   \
      (int64_t M, int64_t N, int64_t K, const CT *x, const CT *w, const CT *bias, CT *y), \
      (M, N, K, x, w, bias, y))                                                          \
    X(linear_relu, T, void,                                                              \
      (int64_t M, int64_t N, int64_t K, const CT *x, const CT *w, const CT *bias, CT *y), \
      (M, N, K, x, w, bias, y))                                                          \
    X(linear_packed_bytes, T, size_t, (int64_t N, int64_t K), (N, K))                     \
    X(linear_pack_weights, T, void,                                                      \
      (int64_t N, int64_t K, amp_dtype src, const void *w, void *packed),                \
      (N, K, src, w, packed))                                                            \
    X(linear_ex, T, void,                                                                \
      (int64_t M, int64_t N, int64_t K, const CT *x, const CT *w, const void *packed,    \
       const CT *bias, int relu, CT *y),                                                 \
      (M, N, K, x, w, packed, bias, relu, y))                                            \
    X(matmul, T, void,                                                                   \
      (int64_t batch, int64_t M, int64_t N, int64_t K, const CT *a,                      \
       int64_t a_batch_stride, const CT *b, int64_t b_batch_stride, CT *c),              \
      (batch, M, N, K, a, a_batch_stride, b, b_batch_stride, c))                         \
    X(softmax, T, void,                                                                  \
      (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y),                   \
      (outer, dim, inner, x, y))                                                         \
    X(log_softmax, T, void,                                                              \
      (int64_t outer, int64_t dim, int64_t inner, const CT *x, CT *y),                   \
      (outer, dim, inner, x, y))                                                         \
    X(nll_loss, T, int,                                                                  \
      (int64_t N, int64_t C, const CT *logp, const int64_t *target, const CT *weight,   \
       int64_t ignore_index, int reduction, CT *out),                                    \
      (N, C, logp, target, weight, ignore_index, reduction, out))

#define AMP_BCAST_ROW(X, op, T, CT)                                                      \
    X(op##_bcast, T, void,                                                               \
      (int ndim, const int64_t *shape, const CT *a, const int64_t *a_stride,             \
       const CT *b, const int64_t *b_stride, CT *y),                                     \
      (ndim, shape, a, a_stride, b, b_stride, y))

#define AMP_CAST_ROW(X, S, D)                                                            \
    X(cast_##S, D, void, (size_t n, const AMP_CTYPE_##S *x, AMP_CTYPE_##D *y), (n, x, y))

/* An entry's name from its kernel and dtype token: AMP_KNAME_##T(amp_##kernel)
 * is its public function.  Consumers paste T (## leaves it unexpanded);
 * __Bool serves rows that pass T on after <stdbool.h> made bool a macro. */
#define AMP_KNAME_none(k) k
#define AMP_KNAME_f64(k) k##_f64
#define AMP_KNAME_f32(k) k##_f32
#define AMP_KNAME_bf16(k) k##_bf16
#define AMP_KNAME_f16(k) k##_f16
#define AMP_KNAME_c64(k) k##_c64
#define AMP_KNAME_c128(k) k##_c128
#define AMP_KNAME_i64(k) k##_i64
#define AMP_KNAME_i32(k) k##_i32
#define AMP_KNAME_bool(k) k##_bool
#define AMP_KNAME__Bool(k) k##_bool

/* Every ordered pair of distinct float dtypes: Y(X, S, D), X passed along. */
#define AMP_FOR_EACH_CAST_PAIR(Y, X)                                                     \
    Y(X, f64, f32) Y(X, f64, bf16) Y(X, f64, f16)                                        \
    Y(X, f32, f64) Y(X, f32, bf16) Y(X, f32, f16)                                        \
    Y(X, bf16, f64) Y(X, bf16, f32) Y(X, bf16, f16)                                      \
    Y(X, f16, f64) Y(X, f16, f32) Y(X, f16, bf16)

#define AMP_FOR_EACH_CAST(X) AMP_FOR_EACH_CAST_PAIR(AMP_CAST_ROW, X)

/* The kernel families, one part header each (their comments are the
 * contract): elementwise and data movement; reductions, scans, quantiles
 * and losses; the normalisation layers; convolution, pooling, indexing
 * and sampling; matrix products and linear algebra; the recurrent cells
 * and CTC; random numbers; the gradients (general, of the nn layers, of
 * linear algebra); the training step's optimizers and loss scaling; data
 * parallelism; complex tensors. */
#include "amprt/elementwise.h"
#include "amprt/reduce.h"
#include "amprt/norm.h"
#include "amprt/spatial.h"
#include "amprt/linalg.h"
#include "amprt/recurrent.h"
#include "amprt/random.h"
#include "amprt/backward.h"
#include "amprt/backward_nn.h"
#include "amprt/backward_linalg.h"
#include "amprt/train.h"
#include "amprt/collective.h"
#include "amprt/complex.h"
#include "amprt/compare.h"

/* Every typed family, for one dtype. */
#define AMP_ALL_OF_TYPE(X, T)                                                            \
    AMP_KERNELS_OF_TYPE(X, T)                                                            \
    AMP_ELEMENTWISE_OF_CTYPE(X, T, AMP_CTYPE_##T)                                        \
    AMP_REDUCE_OF_CTYPE(X, T, AMP_CTYPE_##T)                                             \
    AMP_SPATIAL_OF_CTYPE(X, T, AMP_CTYPE_##T)                                            \
    AMP_MATMUL_OF_CTYPE(X, T, AMP_CTYPE_##T)                                             \
    AMP_BACKWARD_OF_CTYPE(X, T, AMP_CTYPE_##T)                                           \
    AMP_TRAIN_OF_CTYPE(X, T, AMP_CTYPE_##T)                                              \
    AMP_NORM_OF_CTYPE(X, T, AMP_CTYPE_##T)                                               \
    AMP_RECURRENT_OF_CTYPE(X, T, AMP_CTYPE_##T)                                          \
    AMP_BACKWARD_NN_OF_CTYPE(X, T, AMP_CTYPE_##T)                                        \
    AMP_RANDOM_OF_CTYPE(X, T, AMP_CTYPE_##T)

/* f32, bf16 and f16 compute in f32; f64 (the reference evaluation, and the
 * ops PyTorch runs in f64) in f64.  Linear algebra is f32 and f64 only. */
#define AMP_FOR_EACH_KERNEL(X)                                                           \
    AMP_ALL_OF_TYPE(X, f64)                                                              \
    AMP_ALL_OF_TYPE(X, f32)                                                              \
    AMP_ALL_OF_TYPE(X, bf16)                                                             \
    AMP_ALL_OF_TYPE(X, f16)                                                              \
    AMP_LINALG_OF_CTYPE(X, f64, double)                                                  \
    AMP_LINALG_OF_CTYPE(X, f32, float)                                                   \
    AMP_BACKWARD_LINALG_OF_CTYPE(X, f64, double)                                         \
    AMP_BACKWARD_LINALG_OF_CTYPE(X, f32, float)                                          \
    AMP_DATA_KERNELS(X)                                                                  \
    AMP_REDUCE_ANY_DTYPE_KERNELS(X)                                                      \
    AMP_TRAIN_KERNELS(X)                                                                 \
    AMP_COMPLEX_KERNELS(X)                                                               \
    AMP_COMPARE_KERNELS(X)                                                               \
    AMP_FOR_EACH_CAST(X)

#define AMP_DECLARE_KERNEL(kernel, T, ret, params, args) ret AMP_KNAME_##T(amp_##kernel) params;
AMP_FOR_EACH_KERNEL(AMP_DECLARE_KERNEL)
#undef AMP_DECLARE_KERNEL

/* ---- Weights: safetensors files -------------------------------------------
 *
 * A reader for Hugging Face safetensors files (what safetensors.torch.
 * save_file writes): an 8-byte little-endian header size N, N bytes of JSON
 * naming each tensor's dtype, shape and data_offsets, then the data.
 * amp_st_parse validates the whole file up front (docs/runtime.md lists the
 * rules); after AMP_OK every tensor's bytes are inside the file and have
 * exactly the size its dtype and shape say.
 *
 * Allocation: amp_st_parse and amp_st_open allocate with malloc (the table,
 * the decoded names and, for amp_st_open, the file's bytes); amp_st_close
 * frees it all. amp_st_parse does not copy `bytes`: they must outlive the
 * amp_st_file. Nothing else allocates.
 */
typedef struct amp_st_tensor {
    const char *name; /* NUL-terminated; may hold a NUL, so see name_len */
    size_t name_len;
    amp_dtype dtype;
    int ndim;         /* 0..8 */
    int64_t shape[8]; /* shape[i] for i < ndim; the rest 0 */
    uint64_t begin, end; /* byte range within the data region */
} amp_st_tensor;

typedef struct amp_st_file amp_st_file;

/* AMP_OK and *out set, or an error status and *out = NULL. */
int amp_st_parse(const void *bytes, size_t len, amp_st_file **out);
/* Reads a regular file and parses it as amp_st_parse does, reading only
 * the bytes its header names: AMP_ERR_WEIGHTS_NOT_FILE for a directory,
 * device or FIFO (never read, never waited on), AMP_ERR_IO if it cannot
 * be opened or read, the header checked before any tensor data is read. */
#if !defined(AMPRT_NO_STDIO) /* not in a runtime without files (make BARE=1) */
int amp_st_open(const char *path, amp_st_file **out);
#endif
/* CRC-32C (Castagnoli, as iSCSI and ext4) of len bytes, continuing from
 * crc (0 to start): the "crc32c" metadata amp_st_write stores, as 8
 * lowercase hex digits, and amp_st_parse verifies when present. */
uint32_t amp_st_crc32c(uint32_t crc, const void *bytes, size_t len);
/* Tensors are numbered 0..count-1 in order of their data (begin). */
int amp_st_count(const amp_st_file *f);
const amp_st_tensor *amp_st_get(const amp_st_file *f, int i);           /* NULL if out of range */
const amp_st_tensor *amp_st_find(const amp_st_file *f, const char *name); /* NULL if absent */
/* The tensor's raw little-endian bytes in the file (not necessarily
 * aligned for its dtype); t must come from f. */
const void *amp_st_data(const amp_st_file *f, const amp_st_tensor *t);
/* Copies tensor `name` into dst (native byte order) if its dtype is `dtype`
 * and its shape is exactly shape[0..ndim): AMP_ERR_WEIGHTS_MISSING,
 * _DTYPE or _SHAPE otherwise, checked in that order, with dst untouched. */
int amp_st_load(const amp_st_file *f, const char *name, amp_dtype dtype, int ndim,
                const int64_t *shape, void *dst);
void amp_st_close(amp_st_file *f); /* NULL is fine */

/* One parameter or buffer of a model, for amp_st_load_params. */
typedef struct amp_st_param {
    const char *name;  /* its state_dict key */
    amp_dtype dtype;   /* the model's: a floating-point tensor of the file converts to it */
    int ndim;          /* 0..8 */
    int64_t shape[8];
    size_t offset;     /* where its elements go: bytes from the start of storage */
    size_t pointer;    /* where their address goes: bytes from the start of the
                          caller's struct of `const T *` (offsetof) */
} amp_st_param;

/* Loads table[0..n) from f as load_state_dict(strict=True) does:
 * every entry present with its shape, nothing else in the file but a
 * training checkpoint's own state (grad.NAME, optimizer.NAME.SLOT of a
 * tensor NAME of the file,
 * optimizer.lr, optimizer.step, scaler.*, train.*), which is ignored; an
 * f64, f32, bf16 or f16 tensor converts to a floating-point entry's dtype
 * as Tensor.copy_ does (round to nearest even; to bf16 and f16 through
 * f32), any other dtype must match.  Then each entry's elements go to
 * storage + offset (native byte order) and, when `pointers` is not NULL,
 * their address to pointers + pointer.  Everything is checked first:
 * AMP_ERR_WEIGHTS_MISSING, _DTYPE, _SHAPE or _UNEXPECTED (the first
 * problem's; entries in table order, then the file's extra tensors) leave
 * storage and pointers untouched.  Also AMP_ERR_NULL_ARG (f; table or
 * storage when n > 0), AMP_ERR_BAD_DIM (n < 0; an entry without a name,
 * with an ndim outside 0..8, a negative dim or no amp_dtype) and
 * AMP_ERR_ARENA_TOO_SMALL (an entry's end, rounded up to 64 bytes, past
 * storage_bytes).  When message is not NULL it gets, NUL-terminated and cut
 * to message_bytes, "" on success and otherwise every problem, one a line,
 * each naming its tensor: "no tensor 'fc1.weight' in the file (the model's
 * f32[128, 64])", "tensor 'fc1.weight' is f32[128, 32] in the file, but
 * the model declares f32[128, 64]", "tensor 'x' is not a parameter or
 * buffer of the model ..."; or amp_strerror's text for an error of no
 * tensor. */
int amp_st_load_params(const amp_st_file *f, const amp_st_param *table, int n, void *storage, size_t storage_bytes,
                       void *pointers, char *message, size_t message_bytes);
/* amp_st_parse(bytes, len), amp_st_load_params, amp_st_close: the emitted
 * <prefix>_load_weights_bytes.  Bytes amp_st_parse refuses give its
 * status, with amp_strerror's text as the message. */
int amp_st_parse_params(const void *bytes, size_t len, const amp_st_param *table, int n, void *storage,
                        size_t storage_bytes, void *pointers, char *message, size_t message_bytes);
#if !defined(AMPRT_NO_STDIO)
/* amp_st_open(path), amp_st_load_params, amp_st_close: the emitted
 * <prefix>_load_weights.  A file amp_st_open refuses gives its status,
 * with amp_strerror's text as the message.  (Not in a runtime without
 * files, make BARE=1: a program compiled with -DAMPRT_NO_STDIO, as one
 * linked with it is, sees neither.) */
int amp_st_read_params(const char *path, const amp_st_param *table, int n, void *storage, size_t storage_bytes,
                       void *pointers, char *message, size_t message_bytes);
#endif

#ifdef __cplusplus
}
#endif

#endif /* AMPRT_H */
