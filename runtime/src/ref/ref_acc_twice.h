/*
 * ref_acc_twice.h - instantiates a part file of reference kernel bodies
 * twice, as amprt_internal.h describes: once computing in float (for f32,
 * bf16 and f16) and once in double (for f64).
 *
 * Usage, in a ref_*.c file after the helpers the part file needs:
 *     #define REF_PART "ref_foo.inc"
 *     #include "ref_acc_twice.h"
 * and AMP_FOR_EACH_KERNEL(REF_WRAPPER) (ref_wrapper.h) generates the
 * wrappers, calling REF_BODY_<T>(name), which names name_facc or
 * name_dacc by the kernel's dtype token. The part file sees ACC (the
 * compute type), LD/ST (element access widening to and rounding from ACC,
 * for the data and for param_dtype arrays alike), BODY(name), and
 * amprt_internal.h's AMP_MATH(fn), the libm function for ACC (expf or exp).
 *
 * ACC_MATH(fn) is the same thing bound per instantiation, which some part
 * files use; AMP_MATH is the one to use in new ones.
 *
 * No include guard: it is meant to be included once per part file.
 */
#define ACC float
#define LD amp_ld
#define ST amp_st
#define BODY(name) name##_facc
#define ACC_MATH(fn) AMP_MATH_float(fn)
#include REF_PART
#undef ACC
#undef LD
#undef ST
#undef BODY
#undef ACC_MATH

#define ACC double
#define LD amp_ldd
#define ST amp_std
#define BODY(name) name##_dacc
#define ACC_MATH(fn) AMP_MATH_double(fn)
#include REF_PART
#undef ACC
#undef LD
#undef ST
#undef BODY
#undef ACC_MATH

#undef REF_PART

#ifndef REF_BODY_f64
#define REF_BODY_f64(name) name##_dacc
#define REF_BODY_f32(name) name##_facc
#define REF_BODY_bf16(name) name##_facc
#define REF_BODY_f16(name) name##_facc
#endif

/* The wrappers calling these bodies are generated: ref_wrapper.h. */
#include "ref_wrapper.h"
