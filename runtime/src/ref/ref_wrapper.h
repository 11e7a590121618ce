/*
 * ref_wrapper.h - the reference kernels amp_ref_<kernel>_<T>, generated
 * from the kernel list (amprt.h's AMP_FOR_EACH_KERNEL), so a kernel's
 * signature is written once, in its family header's row.
 *
 * Usage, in a ref_*.c file after its bodies (ref_acc_twice.h):
 *     #define REF_OWNS_renorm REF_OWNED
 *     #define REF_OWNS_cosine_similarity REF_OWNED
 *     AMP_FOR_EACH_KERNEL(REF_WRAPPER)
 * defines, for every row X(kernel, T, ret, (params), (args)) of a kernel
 * the file owns, in every dtype the list has it:
 *     ret amp_ref_<kernel>_<T>(params) { [return] BODY(kernel)(AMP_DTYPE_<T>, args); }
 * BODY being <kernel>_facc for f32/bf16/f16 and <kernel>_dacc for f64
 * (REF_BODY_<T>, ref_acc_twice.h).  So a body follows one convention: it
 * is named for its kernel and takes the kernel's dtype, then the row's
 * arguments, as they are.  The call is direct, and the AMP_ALWAYS_INLINE
 * body is compiled into each wrapper as into a hand-written one.
 *
 * Other forms of the line, for bodies outside that convention:
 *     REF_SHARES(body, s...)  body_facc(AMP_DTYPE_<T>, s..., args): kernels
 *         sharing one body, told apart by constants
 *         (#define REF_OWNS_argmax REF_SHARES(arg_extreme, 1));
 *     REF_OWNED_TYPED         <kernel>_facc(args): a body typed by its
 *         instantiation, taking no dtype (linear algebra, f32 and f64
 *         only, computes in its storage type);
 *     REF_CALLS(body)         body(AMP_DTYPE_<T>, args): one body for every
 *         dtype, with no compute type (sort compares and copies elements).
 * A name that is no kernel's generates nothing, and the table in
 * dispatch.c then misses amp_ref_<kernel>_<T> at link time; a kernel owned
 * by two files is defined twice: neither goes unnoticed.
 *
 * The ops of a per-op sub-list (amprt.h's U(...) lists) sharing one body
 * take REF_SHARED_WRAPPER instead: the file passes its own X to the
 * header's row macro, e.g. for the unary ops
 *     #define UNARY_X(kernel, T, ret, params, args) \
 *         REF_SHARED_WRAPPER(map_unary, UOP_##kernel, kernel, T, ret, params, args)
 *     #define UNARY_KERNELS(T) AMP_UNARY_OPS(AMP_UNARY_ROW, UNARY_X, T, AMP_CTYPE_##T)
 *     UNARY_KERNELS(f64) AMP_FOR_EACH_KERNEL_DTYPE(UNARY_KERNELS)
 * so an op added to the list gets its wrapper with no line here.
 */
#ifndef REF_WRAPPER_H
#define REF_WRAPPER_H

/* What REF_OWNS_<kernel> expands to: a probe (~), the form's number, and
 * the form's body and selectors.  An undefined REF_OWNS_<kernel> is one
 * token, which REF_OWNS_ turns into 0. */
#define REF_OWNED ~, 1
#define REF_SHARES(body, ...) ~, 2, body, __VA_ARGS__
#define REF_OWNED_TYPED ~, 3
#define REF_CALLS(body) ~, 4, body
#define REF_SECOND_(a, b, ...) b
#define REF_OWNS_(...) REF_SECOND_(__VA_ARGS__, 0, ~)
#define REF_PASTE_(a, b) a##b
#define REF_CAT_(a, b) REF_PASTE_(a, b) /* expands b before pasting */
#define REF_UNPAREN_(...) __VA_ARGS__

/* A void call cannot be `return`ed in C. */
#define REF_RETURN_void
#define REF_RETURN_int return
#define REF_RETURN_size_t return

#define REF_WRAPPER(kernel, T, ret, params, args) \
    REF_CAT_(REF_WRAPPER_, REF_OWNS_(REF_OWNS_##kernel))(kernel, T, ret, params, args)
#define REF_WRAPPER_0(kernel, T, ret, params, args)
#define REF_WRAPPER_1(kernel, T, ret, params, args) \
    REF_DEFINE_(kernel, T, ret, params, REF_BODY_##T(kernel)(AMP_DTYPE_##T, REF_UNPAREN_ args))
#define REF_WRAPPER_2(kernel, T, ret, params, args)                                                 \
    REF_DEFINE_(kernel, T, ret, params,                                                             \
                REF_SHARED_BODY_(T, REF_OWNS_##kernel)(AMP_DTYPE_##T, REF_SELECTORS_(REF_OWNS_##kernel), \
                                                       REF_UNPAREN_ args))
#define REF_WRAPPER_3(kernel, T, ret, params, args) \
    REF_DEFINE_(kernel, T, ret, params, REF_BODY_##T(kernel)(REF_UNPAREN_ args))
#define REF_WRAPPER_4(kernel, T, ret, params, args) \
    REF_DEFINE_(kernel, T, ret, params, REF_CALLED_(REF_OWNS_##kernel)(AMP_DTYPE_##T, REF_UNPAREN_ args))

#define REF_SHARED_WRAPPER(body, selector, kernel, T, ret, params, args) \
    REF_DEFINE_(kernel, T, ret, params, REF_BODY_##T(body)(AMP_DTYPE_##T, selector, REF_UNPAREN_ args))

/* The function: its name from the row, its one statement the call. */
#define REF_DEFINE_(kernel, T, ret, params, call) \
    ret AMP_KNAME_##T(amp_ref_##kernel) params { REF_RETURN_##ret call; }

/* The body and the selectors out of REF_SHARES(body, ...)'s expansion, the
 * body out of REF_CALLS(body)'s. */
#define REF_SHARED_BODY_(...) REF_SHARED_BODY2_(__VA_ARGS__)
#define REF_SHARED_BODY2_(T, probe, two, body, ...) REF_BODY_OF_(T, body)
#define REF_BODY_OF_(T, body) REF_BODY_##T(body)
#define REF_SELECTORS_(...) REF_SELECTORS2_(__VA_ARGS__)
#define REF_SELECTORS2_(probe, two, body, ...) __VA_ARGS__
#define REF_CALLED_(...) REF_CALLED2_(__VA_ARGS__)
#define REF_CALLED2_(probe, four, body) body

#endif /* REF_WRAPPER_H */
