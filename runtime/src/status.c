/*
 * status.c - messages for the status codes of enum amp_status (amprt.h).
 *
 * The texts say what went wrong from the caller's side, so an emitted model
 * can print them as they are.
 */
#include "amprt.h"

const char *amp_strerror(int code)
{
    switch (code) {
    case AMP_OK: return "success";
    case AMP_ERR_ARENA_TOO_SMALL: return "arena too small for the model's memory plan";
    case AMP_ERR_BAD_DIM: return "invalid dimension (negative size or shape mismatch)";
    case AMP_ERR_TARGET_OUT_OF_RANGE: return "class target outside [0, C) and not ignore_index";
    case AMP_ERR_NULL_ARG: return "required pointer argument is NULL";
    case AMP_ERR_BAD_REDUCTION: return "unknown reduction code";
    }
    return "unknown amprt status code";
}
