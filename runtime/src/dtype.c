/*
 * dtype.c - facts about storage dtypes, and the generic element access that
 * drivers use when the dtype is only known at run time.
 *
 * The conversions themselves live in amp_ld/amp_st (amprt_internal.h), the
 * same code the reference kernels use, so a driver and a kernel can never
 * disagree on how an element is read or rounded.
 */
#include "amprt_internal.h"

size_t amp_dtype_size(amp_dtype t)
{
    switch (t) {
    case AMP_F64: return sizeof(double);
    case AMP_F32: return sizeof(float);
    case AMP_BF16: return sizeof(amp_bf16);
    case AMP_F16: return sizeof(amp_f16);
    case AMP_I64: return sizeof(int64_t);
    case AMP_I32: return sizeof(int32_t);
    case AMP_BOOL: return sizeof(uint8_t);
    case AMP_C64: return 2 * sizeof(float);
    case AMP_C128: return 2 * sizeof(double);
    }
    return 0;
}

const char *amp_dtype_name(amp_dtype t)
{
    switch (t) {
    case AMP_F64: return "f64";
    case AMP_F32: return "f32";
    case AMP_BF16: return "bf16";
    case AMP_F16: return "f16";
    case AMP_I64: return "i64";
    case AMP_I32: return "i32";
    case AMP_BOOL: return "bool";
    case AMP_C64: return "c64";
    case AMP_C128: return "c128";
    }
    return "invalid";
}

float amp_load_as_f32(amp_dtype t, const void *base, size_t index)
{
    return amp_ld(t, base, (int64_t)index);
}

void amp_store_from_f32(amp_dtype t, void *base, size_t index, float v)
{
    amp_st(t, base, (int64_t)index, v);
}
