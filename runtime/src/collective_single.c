/*
 * collective_single.c - the collectives of amprt/collective.h for one
 * process, the library built without MPI: rank 0 of a world of 1, where
 * the mean over the processes of a gradient is the gradient itself and the
 * maximum of found_inf is found_inf.  The arguments are still checked, so
 * a program that misuses the interface fails here as it would under MPI.
 */
#include "collective_internal.h"

static int joined;

int amp_coll_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (joined)
        return AMP_OK;
    int rc = amp_coll_read_env();
    if (rc == AMP_OK)
        joined = 1;
    return rc;
}

int amp_coll_finalize(void)
{
    joined = 0;
    amp_coll_push_reset();
    return AMP_OK;
}

int amp_coll_rank(void) { return 0; }
int amp_coll_world(void) { return 1; }
const char *amp_coll_backend(void) { return "single"; }

int amp_allreduce_mean(const amp_coll_tensor *tensors, int n)
{
    int rc = amp_coll_check_tensors(tensors, n);
    if (rc == AMP_OK && amp_allreduce_open())
        return AMP_ERR_COLLECTIVE; /* as the MPI build, whose mean is a begin */
    return rc;
}

/* The push-style reduction over one process: only the bookkeeping, so a
 * misordered sequence of calls fails here as it does under MPI. */
int amp_allreduce_begin(int n_tensors) { return amp_coll_begin_check(n_tensors); }

int amp_allreduce_push(const amp_coll_tensor *t)
{
    int index;
    return amp_coll_push_check(t, &index);
}

int amp_allreduce_finish(void) { return amp_coll_finish_check(); }

int amp_allreduce_max_i32(int32_t *v)
{
    return v ? AMP_OK : AMP_ERR_NULL_ARG;
}
