/* kernel_call.h: a call of a kernel through a table by dtype (f64, the
 * reference's, included), as the runtime tests make it: plain, its status
 * kept, or its value returned.  Included by kernel_test_util.h and
 * packed_test_util.h. */
#ifndef AMPRT_KERNEL_CALL_H
#define AMPRT_KERNEL_CALL_H

/* Call kernel `op` of table k for dtype t; buffers are void *, which C
 * converts to the kernel's element pointer types. */
#define KCALL(k, t, op, ...)                                                                      \
    do {                                                                                          \
        switch (t) {                                                                              \
        case AMP_F64: (k)->op##_f64(__VA_ARGS__); break;                                          \
        case AMP_F32: (k)->op##_f32(__VA_ARGS__); break;                                          \
        case AMP_BF16: (k)->op##_bf16(__VA_ARGS__); break;                                        \
        default: (k)->op##_f16(__VA_ARGS__); break;                                               \
        }                                                                                         \
    } while (0)

#define KCALL_STATUS(status, k, t, op, ...)                                                       \
    do {                                                                                          \
        switch (t) {                                                                              \
        case AMP_F64: (status) = (k)->op##_f64(__VA_ARGS__); break;                               \
        case AMP_F32: (status) = (k)->op##_f32(__VA_ARGS__); break;                               \
        case AMP_BF16: (status) = (k)->op##_bf16(__VA_ARGS__); break;                             \
        default: (status) = (k)->op##_f16(__VA_ARGS__); break;                                    \
        }                                                                                         \
    } while (0)

/* The value of kernel `op` of table k for dtype t. */
#define KCALLR(k, t, op, ...)                                                                     \
    ((t) == AMP_F64 ? (k)->op##_f64(__VA_ARGS__)                                                  \
                    : (t) == AMP_F32 ? (k)->op##_f32(__VA_ARGS__)                                 \
                                     : (t) == AMP_BF16 ? (k)->op##_bf16(__VA_ARGS__) : (k)->op##_f16(__VA_ARGS__))

#endif
