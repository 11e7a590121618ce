/* dtype.c: element types and PyTorch's type promotion between them. */
#include "ampc.h"

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
};

DType dtype_from_name(const char *name)
{
    for (int t = DT_BOOL; t <= DT_F64; t++)
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

/* torch.promote_types for two dimensioned tensors: the higher category
 * wins; within floats the wider wins, and bf16 with f16 (neither can hold
 * the other) meet at f32. */
DType dtype_promote(DType a, DType b)
{
    if (a == b)
        return a;
    if ((a == DT_BF16 && b == DT_F16) || (a == DT_F16 && b == DT_BF16))
        return DT_F32;
    return a > b ? a : b;
}
