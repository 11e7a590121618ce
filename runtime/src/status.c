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
    case AMP_ERR_WEIGHTS_TRUNCATED: return "weights file truncated (ends inside its header or tensor data)";
    case AMP_ERR_WEIGHTS_HEADER: return "weights file header is not valid safetensors JSON";
    case AMP_ERR_WEIGHTS_OFFSETS: return "weights file tensor data offsets overlap, leave gaps or do not cover the data";
    case AMP_ERR_WEIGHTS_SHAPE: return "weights tensor shape invalid or not the one expected";
    case AMP_ERR_WEIGHTS_DTYPE: return "weights tensor dtype unsupported or not the one expected";
    case AMP_ERR_WEIGHTS_MISSING: return "weights tensor not found in the file";
    case AMP_ERR_IO: return "I/O error reading a file";
    case AMP_ERR_OUT_OF_MEMORY: return "out of memory";
    case AMP_ERR_WEIGHTS_UNEXPECTED: return "the weights file holds a tensor the model does not have";
    case AMP_ERR_SINGULAR: return "a matrix is singular or not positive definite";
    case AMP_ERR_COLLECTIVE: return "a collective operation (MPI) could not start or was given what it cannot reduce";
    case AMP_ERR_NO_CONVERGENCE: return "an iterative algorithm (eig's QR iteration) did not converge";
    case AMP_ERR_BAD_PREPARED: return "the prepared weights were not written by this model's prepare function";
    case AMP_ERR_WEIGHTS_NOT_FILE: return "the weights path is not a regular file (a directory, device or pipe)";
    case AMP_ERR_WEIGHTS_CHECKSUM: return "weights file data does not match its CRC-32C checksum (the file is corrupt)";
    case AMP_ERR_CHECKPOINT_VALUE: return "a checkpoint scalar (learning rate, loss scale, step, ...) is out of range";
    }
    return "unknown amprt status code";
}
