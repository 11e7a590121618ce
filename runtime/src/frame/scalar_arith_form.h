/*
 * scalar_arith_form.h - what the kernel sets' tensor-scalar arithmetic
 * files share: the six operations (add_scalar, sub_scalar, mul_scalar,
 * div_scalar, rsub_scalar, rdiv_scalar: y = a op s, or s op a), their
 * table entries over a set's loop RUN(t, op, n, a, s, y), the list of
 * the kernels they fill, and for the sets that split the work on the
 * thread pool their call's context, range switch and whole set
 * (AMP_SCALAR_ARITH_CHUNKED_SET) (x86/avx2_scalar_arith.c, x86/avx512_scalar_arith.c,
 * arm/neon_scalar_arith.c).
 *
 * The reference computes v op s in float with s rounded to float (exact:
 * s holds a number of the compute type) and rounds the result to the
 * storage dtype; a vector set does the same per lane.  A NaN s goes to the
 * reference: where a NaN element meets it, which NaN the reference returns
 * depends on the operand order its compiler chose, and only the reference
 * itself reproduces that.  Needs amprt_internal.h and <math.h> (and
 * frame/chunked.h for AMP_SCALAR_ARITH_CHUNKED_SET).
 */
#ifndef AMPRT_FRAME_SCALAR_ARITH_FORM_H
#define AMPRT_FRAME_SCALAR_ARITH_FORM_H

enum { ARITH_ADD, ARITH_SUB, ARITH_MUL, ARITH_DIV, ARITH_RSUB, ARITH_RDIV };

/* A chunked set's call: the operation on a (storage t) and s, into y. */
typedef struct {
    amp_dtype t;
    int op; /* ARITH_* */
    const void *a;
    float s;
    void *y;
} amp_scalar_arith_ctx;

/* The body of such a set's range function over [begin, end) of c: its
 * always-inline LOOP(t, op, c, begin, end) instantiated for every
 * operation and storage dtype as constants, so each gets its own loop. */
#define AMP_SCALAR_ARITH_DTYPES(LOOP, OP, c, begin, end)                                          \
    switch ((c)->t) {                                                                             \
    case AMP_BF16: LOOP(AMP_BF16, OP, c, begin, end); return;                                     \
    case AMP_F16: LOOP(AMP_F16, OP, c, begin, end); return;                                       \
    default: LOOP(AMP_F32, OP, c, begin, end); return;                                            \
    }
#define AMP_SCALAR_ARITH_RANGE(LOOP, c, begin, end)                                               \
    switch ((c)->op) {                                                                            \
    case ARITH_ADD: AMP_SCALAR_ARITH_DTYPES(LOOP, ARITH_ADD, c, begin, end)                       \
    case ARITH_SUB: AMP_SCALAR_ARITH_DTYPES(LOOP, ARITH_SUB, c, begin, end)                       \
    case ARITH_MUL: AMP_SCALAR_ARITH_DTYPES(LOOP, ARITH_MUL, c, begin, end)                       \
    case ARITH_DIV: AMP_SCALAR_ARITH_DTYPES(LOOP, ARITH_DIV, c, begin, end)                       \
    case ARITH_RSUB: AMP_SCALAR_ARITH_DTYPES(LOOP, ARITH_RSUB, c, begin, end)                     \
    default: AMP_SCALAR_ARITH_DTYPES(LOOP, ARITH_RDIV, c, begin, end)                             \
    }

#define AMP_SCALAR_ARITH_ENTRY(T, RUN, name, OP)                                                  \
    static void name##_##T(size_t n, const AMP_CTYPE_##T *a, double s, AMP_CTYPE_##T *y)          \
    {                                                                                             \
        if (isnan(s))                                                                             \
            amp_ref_##name##_##T(n, a, s, y);                                                     \
        else                                                                                      \
            RUN(AMP_DTYPE_##T, OP, n, a, (float)s, y);                                            \
    }

#define AMP_SCALAR_ARITH_ENTRIES(T, RUN)                                                          \
    AMP_SCALAR_ARITH_ENTRY(T, RUN, add_scalar, ARITH_ADD)                                         \
    AMP_SCALAR_ARITH_ENTRY(T, RUN, sub_scalar, ARITH_SUB)                                         \
    AMP_SCALAR_ARITH_ENTRY(T, RUN, mul_scalar, ARITH_MUL)                                         \
    AMP_SCALAR_ARITH_ENTRY(T, RUN, div_scalar, ARITH_DIV)                                         \
    AMP_SCALAR_ARITH_ENTRY(T, RUN, rsub_scalar, ARITH_RSUB)                                       \
    AMP_SCALAR_ARITH_ENTRY(T, RUN, rdiv_scalar, ARITH_RDIV)

/* The kernels AMP_SCALAR_ARITH_ENTRIES fills: X(kernel, implementation). */
#define AMP_SCALAR_ARITH_OF(X, T)                                                                 \
    X(add_scalar_##T, add_scalar_##T)                                                             \
    X(sub_scalar_##T, sub_scalar_##T)                                                             \
    X(mul_scalar_##T, mul_scalar_##T)                                                             \
    X(div_scalar_##T, div_scalar_##T)                                                             \
    X(rsub_scalar_##T, rsub_scalar_##T)                                                           \
    X(rdiv_scalar_##T, rdiv_scalar_##T)
#define AMP_SCALAR_ARITH_KERNELS(X)                                                               \
    AMP_SCALAR_ARITH_OF(X, f32) AMP_SCALAR_ARITH_OF(X, bf16) AMP_SCALAR_ARITH_OF(X, f16)

/* Everything of a set that splits the work on the pool (frame/chunked.h)
 * but its vector loop LOOP(t, op, c, begin, end) (always inline, t and
 * op constants): the range function (with the set's TARGET attribute),
 * the call that chunks it, the table entries and kernels, and
 * amp_isa_<isa>_fill_scalar_arith, which installs them. */
#define AMP_SCALAR_ARITH_CHUNKED_SET(isa, TARGET, LOOP)                                           \
    TARGET static void isa##_arith_range(const void *c_, size_t begin, size_t end)                \
    {                                                                                             \
        const amp_scalar_arith_ctx *c = c_;                                                       \
        AMP_SCALAR_ARITH_RANGE(LOOP, c, begin, end)                                               \
    }                                                                                             \
    static void isa##_arith_run(amp_dtype t, int op, size_t n, const void *a, float s, void *y)   \
    {                                                                                             \
        amp_scalar_arith_ctx c = { t, op, a, s, y };                                              \
        amp_run_chunked(n, 1, isa##_arith_range, &c);                                             \
    }                                                                                             \
    AMP_SCALAR_ARITH_ENTRIES(f32, isa##_arith_run)                                                \
    AMP_SCALAR_ARITH_ENTRIES(bf16, isa##_arith_run)                                               \
    AMP_SCALAR_ARITH_ENTRIES(f16, isa##_arith_run)                                                \
    AMP_SCALAR_ARITH_KERNELS(AMP_SCALAR_ARITH_DEFINE_##isa)                                       \
    void amp_isa_##isa##_fill_scalar_arith(amp_kernel_table *t)                                   \
    {                                                                                             \
        AMP_SCALAR_ARITH_KERNELS(AMP_SCALAR_ARITH_INSTALL_##isa)                                  \
    }
#define AMP_SCALAR_ARITH_DEFINE_avx2(name, impl) AMP_ISA_KERNEL(avx2, name, impl)
#define AMP_SCALAR_ARITH_DEFINE_avx512(name, impl) AMP_ISA_KERNEL(avx512, name, impl)
#define AMP_SCALAR_ARITH_INSTALL_avx2(name, impl) AMP_ISA_INSTALL(t, avx2, name);
#define AMP_SCALAR_ARITH_INSTALL_avx512(name, impl) AMP_ISA_INSTALL(t, avx512, name);

#endif
