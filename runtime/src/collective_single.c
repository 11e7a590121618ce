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
    return AMP_OK;
}

int amp_coll_rank(void) { return 0; }
int amp_coll_world(void) { return 1; }
const char *amp_coll_backend(void) { return "single"; }

int amp_allreduce_mean(const amp_coll_tensor *tensors, int n)
{
    return amp_coll_check_tensors(tensors, n);
}

int amp_allreduce_max_i32(int32_t *v)
{
    return v ? AMP_OK : AMP_ERR_NULL_ARG;
}
