/*
 * collective_internal.h - what the two builds of amprt/collective.h share
 * (collective_common.c): the settings from the environment and the
 * checking of amp_allreduce_mean's arguments, so that both reject the same
 * calls and a bad setting fails the same way with or without MPI.
 */
#ifndef AMPRT_COLLECTIVE_INTERNAL_H
#define AMPRT_COLLECTIVE_INTERNAL_H

#include "amprt.h"

/* The default bucket size: large enough that a small model's gradients
 * take one reduction, small enough that packing a bucket overlaps the
 * previous one's transfer on a large model. */
#define AMP_COLL_DEFAULT_BUCKET_BYTES ((size_t)4 << 20)
#define AMP_COLL_MIN_BUCKET_BYTES ((size_t)64)

/* Reads AMPRT_ALLREDUCE_DTYPE and AMPRT_ALLREDUCE_BUCKET_BYTES into the
 * settings; AMP_ERR_COLLECTIVE, with a message on stderr, for a value they
 * do not take (the settings are then left as they were). */
int amp_coll_read_env(void);
/* The bucket size in bytes. */
size_t amp_coll_bucket_bytes(void);
/* AMP_OK, or the error amp_allreduce_mean returns for these arguments. */
int amp_coll_check_tensors(const amp_coll_tensor *tensors, int n);

/* The bookkeeping of amp_allreduce_begin/push/finish both builds share, so
 * that both accept and reject the same sequences of calls.
 *  amp_coll_begin_check   AMP_OK and opens a reduction of n tensors, or
 *                         AMP_ERR_BAD_DIM (n < 0) / AMP_ERR_COLLECTIVE (one
 *                         is already open), opening nothing.
 *  amp_coll_push_check    AMP_OK, the tensor's index in the open reduction
 *                         (0..n-1) in *index, and counts it; or AMP_ERR_
 *                         COLLECTIVE (none open), AMP_ERR_NULL_ARG,
 *                         amp_coll_check_tensors' errors, AMP_ERR_BAD_DIM
 *                         (all n already pushed); a refused tensor is not
 *                         counted.
 *  amp_coll_finish_check  closes the open reduction: AMP_OK, AMP_ERR_BAD_DIM
 *                         (fewer than n were pushed; it is closed anyway),
 *                         or AMP_ERR_COLLECTIVE (none was open).
 *  amp_coll_push_reset    closes it without a check (amp_coll_finalize). */
int amp_coll_begin_check(int n);
int amp_coll_push_check(const amp_coll_tensor *t, int *index);
int amp_coll_finish_check(void);
void amp_coll_push_reset(void);

#endif
