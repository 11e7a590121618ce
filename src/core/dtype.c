/* dtype.c: element types and PyTorch's type promotion between them. */
#include "core.h"

#include <string.h>

static const struct {
    const char *name, *c_type, *amp_enum;
    int size;
    DTypeCategory cat;
} dtypes[] = {
    [DT_NONE] = {"none", "void", "AMP_F32", 0, CAT_NONE},
    [DT_BOOL] = {"bool", "uint8_t", "AMP_BOOL", 1, CAT_BOOL}, /* one byte, 0 or 1, as libamprt's bool */
    [DT_I32] = {"i32", "int32_t", "AMP_I32", 4, CAT_INT},
    [DT_I64] = {"i64", "int64_t", "AMP_I64", 8, CAT_INT},
    [DT_BF16] = {"bf16", "amp_bf16", "AMP_BF16", 2, CAT_FLOAT},
    [DT_F16] = {"f16", "amp_f16", "AMP_F16", 2, CAT_FLOAT},
    [DT_F32] = {"f32", "float", "AMP_F32", 4, CAT_FLOAT},
    [DT_F64] = {"f64", "double", "AMP_F64", 8, CAT_FLOAT},
    /* complex: structs of two interleaved reals (amprt/complex.h), so one
     * element is one C object and element counts stay numel.  Parameters and
     * buffers are never complex, so the weights reader never meets one. */
    [DT_C64] = {"c64", "amp_c64", "AMP_C64", 8, CAT_COMPLEX},
    [DT_C128] = {"c128", "amp_c128", "AMP_C128", 16, CAT_COMPLEX},
};

DType dtype_from_name(const char *name)
{
    for (int t = DT_BOOL; t <= DT_C128; t++)
        if (strcmp(dtypes[t].name, name) == 0)
            return (DType)t;
    return DT_NONE;
}

const char *dtype_name(DType t) { return dtypes[t].name; }
const char *dtype_c_type(DType t) { return dtypes[t].c_type; }
const char *dtype_amp_enum(DType t) { return dtypes[t].amp_enum; }
int dtype_size(DType t) { return dtypes[t].size; }
DTypeCategory dtype_category(DType t) { return dtypes[t].cat; }
bool dtype_is_float(DType t) { return dtypes[t].cat == CAT_FLOAT; }
bool dtype_is_complex(DType t) { return dtypes[t].cat == CAT_COMPLEX; }
DType dtype_to_complex(DType t) { return t == DT_F64 || t == DT_C128 ? DT_C128 : DT_C64; }
DType dtype_to_real(DType t) { return t == DT_C64 ? DT_F32 : t == DT_C128 ? DT_F64 : t; }

/* torch.promote_types for two dimensioned tensors: the higher category
 * wins; within floats the wider wins, and bf16 with f16 (neither can hold
 * the other) meet at f32. */
DType dtype_promote(DType a, DType b)
{
    if (a == b)
        return a;
    /* complex with anything: complex, as wide as the wider real part (f64
     * with c64 is c128; bf16, f16, f32 and integers with c64 stay c64) */
    if (dtype_is_complex(a) || dtype_is_complex(b)) {
        DType ra = dtype_to_real(a), rb = dtype_to_real(b);
        return dtype_to_complex(ra == DT_F64 || rb == DT_F64 ? DT_F64 : DT_F32);
    }
    if ((a == DT_BF16 && b == DT_F16) || (a == DT_F16 && b == DT_BF16))
        return DT_F32;
    return a > b ? a : b;
}
